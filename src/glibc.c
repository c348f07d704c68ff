/* SPDX-License-Identifier: MIT */
/*
 * glibc's own extensions: the reporting functions (mallinfo, mallinfo2, malloc_stats,
 * malloc_info), answered from tessera's counters, mallopt, and malloc_trim.
 */
#include <malloc.h>
#include <stdio.h>
#include <string.h>

#include "tessera.h"

#include "arena.h"
#include "init.h"
#include "purge.h"
#include "tcache.h"
#include "thread.h"

TESSERA_EXPORT struct mallinfo2 mallinfo2(void) {
  struct mallinfo2 m;
  memset(&m, 0, sizeof(m));
  tessera_counters k;
  tessera_get_counters(&k);
  m.arena = k.mapped;                    /* bytes obtained from the OS */
  m.ordblks = 0;
  m.hblkhd = 0;
  m.uordblks = k.allocated;              /* bytes in use by the program */
  m.fordblks = k.mapped > k.allocated ? k.mapped - k.allocated : 0; /* free, incl. retained */
  m.keepcost = k.dirty;                  /* what malloc_trim could release now */
  return m;
}

static int clamp_int(size_t v) { return v > 0x7fffffff ? 0x7fffffff : (int)v; }

TESSERA_EXPORT struct mallinfo mallinfo(void) {
  struct mallinfo2 m2 = mallinfo2();
  struct mallinfo m;
  memset(&m, 0, sizeof(m));
  m.arena = clamp_int(m2.arena);
  m.uordblks = clamp_int(m2.uordblks);
  m.fordblks = clamp_int(m2.fordblks);
  m.keepcost = clamp_int(m2.keepcost);
  return m;
}

/* mallopt's parameters tune glibc's own allocator; tessera accepts them and keeps its
 * own settings (its options come from TESSERA_CONF). 1 means success, as in glibc. */
TESSERA_EXPORT int mallopt(int param, int value) {
  (void)param;
  (void)value;
  return 1;
}

TESSERA_EXPORT void malloc_stats(void) { tessera_stats_print(NULL, NULL, NULL); }

TESSERA_EXPORT int malloc_info(int options, FILE *stream) {
  if (options != 0) return -1; /* glibc: EINVAL */
  tessera_counters k;
  tessera_get_counters(&k);
  fprintf(stream,
          "<malloc version=\"tessera-%s\">\n"
          "<total type=\"allocated\" size=\"%zu\"/>\n<total type=\"active\" size=\"%zu\"/>\n"
          "<total type=\"dirty\" size=\"%zu\"/>\n<total type=\"retained\" size=\"%zu\"/>\n"
          "<system type=\"current\" size=\"%zu\"/>\n<system type=\"max\" size=\"%zu\"/>\n"
          "</malloc>\n",
          TESSERA_VERSION_STRING, k.allocated, k.active, k.dirty, k.retained, k.mapped, k.mapped);
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
