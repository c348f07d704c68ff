/* SPDX-License-Identifier: MIT */
/*
 * glibc's own extensions: the reporting functions (mallinfo, mallinfo2, malloc_stats,
 * malloc_info), answered from tessera's counters, mallopt, and malloc_trim.
 */
#include <errno.h>
#include <malloc.h>
#include <stdio.h>
#include <string.h>

#include "tessera.h"

#include "arena.h"
#include "init.h"
#include "purge.h"
#include "tcache.h"
#include "thread.h"

/* The bytes tessera holds from the OS: mapped address space whose pages were not given
 * back (retained pages are released, and a failed huge request may leave a large
 * mapping of them). glibc's arena and system sizes count only memory it holds too. */
static size_t held_from_os(const tessera_counters *k) { return k->mapped > k->retained ? k->mapped - k->retained : 0; }

TESSERA_EXPORT struct mallinfo2 mallinfo2(void) {
  struct mallinfo2 m;
  memset(&m, 0, sizeof(m));
  tessera_counters k;
  tessera_get_counters(&k);
  m.arena = held_from_os(&k);
  if (m.arena < k.allocated) m.arena = k.allocated;
  m.ordblks = 0;
  m.hblkhd = 0;
  m.uordblks = k.allocated;              /* bytes in use by the program */
  m.fordblks = m.arena - m.uordblks;     /* held but not in use: glibc's arena = uord + ford */
  m.keepcost = k.dirty;                  /* what malloc_trim could release now */
  return m;
}

static int clamp_int(size_t v) { return v > 0x7fffffff ? 0x7fffffff : (int)v; }

/* The int fields saturate; arena = uordblks + fordblks still holds. */
TESSERA_EXPORT struct mallinfo mallinfo(void) {
  struct mallinfo2 m2 = mallinfo2();
  struct mallinfo m;
  memset(&m, 0, sizeof(m));
  m.arena = clamp_int(m2.arena);
  m.uordblks = clamp_int(m2.uordblks);
  m.fordblks = m.arena - m.uordblks;
  m.keepcost = clamp_int(m2.keepcost);
  return m;
}

/* mallopt's parameters tune glibc's own allocator; tessera accepts them and keeps its
 * own settings (its options come from TESSERA_CONF). 1 means success, as in glibc,
 * which refuses (0) only an M_MXFAST value outside 0 .. 80 * sizeof(size_t) / 4. */
TESSERA_EXPORT int mallopt(int param, int value) {
  if (param == M_MXFAST && (value < 0 || (size_t)value > 80 * sizeof(size_t) / 4)) return 0;
  return 1;
}

TESSERA_EXPORT void malloc_stats(void) { tessera_stats_print(NULL, NULL, NULL); }

/* malloc_info(3): -1 with errno EINVAL for options other than 0. The document has
 * glibc's outer elements: system sizes are the memory held from the OS, the address
 * space (aspace) all that is mapped, retained pages included. */
TESSERA_EXPORT int malloc_info(int options, FILE *stream) {
  if (options != 0) {
    errno = EINVAL;
    return -1;
  }
  tessera_counters k;
  tessera_get_counters(&k);
  fprintf(stream,
          "<malloc version=\"tessera-%s\">\n"
          "<total type=\"allocated\" size=\"%zu\"/>\n<total type=\"active\" size=\"%zu\"/>\n"
          "<total type=\"dirty\" size=\"%zu\"/>\n<total type=\"retained\" size=\"%zu\"/>\n"
          "<system type=\"current\" size=\"%zu\"/>\n<aspace type=\"total\" size=\"%zu\"/>\n"
          "</malloc>\n",
          TESSERA_VERSION_STRING, k.allocated, k.active, k.dirty, k.retained, held_from_os(&k), k.mapped);
  return 0;
}

TESSERA_EXPORT int malloc_trim(size_t pad) {
  (void)pad;
  if (!boot_done()) return 0;
  tcache_flush_thread();
  size_t released = 0;
  for (unsigned i = 0; i < arenas_count(); i++)
    if (arenas[i] != NULL) released += purge_arena(arenas[i], true);
  return released > 0;
}
