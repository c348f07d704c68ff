/*
 * free and its checked relatives (free_sized, malloc_usable_size). free's fast path
 * reads the page's free-map entry (one load), checks that the pointer starts a region
 * and is not the block just freed, and pushes it onto the thread cache; everything else
 * is in the noinline slow path, which finds the block through the page map and aborts
 * on a pointer tessera never handed out.
 */
#include <malloc.h>
#include <stdlib.h>
#include <string.h>

#include "tessera.h"

#include "arena.h"
#include "background.h"
#include "config.h"
#include "fatal.h"
#include "free_map.h"
#include "frontend.h"
#include "init.h"
#include "options.h"
#include "pagemap.h"
#include "size_class.h"
#include "tcache.h"
#include "thread.h"

#define JUNK_FREE 0x5a

extent_t *free_lookup_block(const void *p, const char *func, unsigned *class_out) {
  uintptr_t a = (uintptr_t)p;
  pm_entry_t e = pagemap_get(a);
  extent_t *ext = pm_extent(e);
  unsigned code = pm_code(e);
  if (code == 0) {
    /* The first page of a free extent: most likely a large block freed before. */
    if (ext != NULL && ext->addr == a) fatal_pointer(func, "double free", p);
    fatal_pointer(func, "invalid pointer", p);
  }
  if (code - 1 < NCACHED_MAX) {
    unsigned c = code - 1;
    if (!class_offset_is_region_start(c, pm_offset(e, a))) fatal_pointer(func, "invalid pointer", p);
    *class_out = c;
    return ext;
  }
  if (ext->state != EXTENT_LARGE || ext->addr != a) fatal_pointer(func, "invalid pointer", p);
  *class_out = CODE_LARGE;
  return ext;
}

void free_to_arena(extent_t *e, unsigned c, void *p) {
  tessera_assert(c < NSMALL ? e->state == EXTENT_SLAB : (e->state == EXTENT_LARGE && e->addr == (uintptr_t)p));
  if (unlikely(opt_junk)) memset(p, JUNK_FREE, c < NSMALL ? class_infos[c].size : e->npages * PAGE);
  if (c < NSMALL) {
    tls_thread.direct_deallocated += class_infos[c].size;
    arena_free_small(e, p);
  } else {
    tls_thread.direct_deallocated += e->npages * PAGE;
    arena_free_large(e->arena, e);
  }
}

NOINLINE static void free_slow(void *p) {
  if (p == NULL) return;
  unsigned c;
  extent_t *e = free_lookup_block(p, "free()", &c);
  /* Every region of the slab free, p's too: freed before (the slab may sit in its arena's
   * stash, off the free map, which is how such a free gets here). */
  if (c < NSMALL && e->nfree == e->nregs) fatal_pointer("free()", "double free", p);
  tcache_t *tc = tls_thread.tcache;
  if (tc == &tcache_empty && tls_thread.cache_state == THREAD_NEW) {
    /* A thread that frees before it allocates (a consumer) still gets a cache, so its
     * frees go back to their arenas in batches. But this first block, another thread's
     * (typically the argument its creator handed it), goes straight home: cached, it
     * would be the thread's first malloc of that size, and two threads given
     * neighbouring blocks would then write one cache line ("passive" false sharing,
     * Hoard's cache-scratch). */
    if (tcache_get() != NULL) {
      free_to_arena(e, c, p);
      return;
    }
  }
  if (c < NCACHED_MAX && tcache_bin(tc, c)->capacity > 0) {
    /* Here when the bin was full, when p was on top of it already, or when the free
     * map is off (free_map.h). */
    if (*tcache_bin(tc, c)->head == p) fatal_pointer("free()", "double free", p);
    tcache_free_slow(tc, c, p);
    return;
  }
  free_to_arena(e, c, p);
  if (atomic_load_explicit(&boot_constructed, memory_order_relaxed)) background_start_if_wanted();
}

TESSERA_EXPORT void free(void *p) {
  uintptr_t a = (uintptr_t)p;
  const free_map_entry_t *e = free_map_lookup(a);
  /* Bin offset 0 (no cached block on this page) is bins[0], which never caches. */
  cache_bin_t *b = (cache_bin_t *)((char *)tls_thread.tcache + e->cache_bin_offset);
  void **head = b->head;
  /* p must start a region, the bin must have room, and p must not be the block we were
   * just given back (*head is the NULL sentinel when the bin is empty). */
  if (likely(magic_divides(b->region_magic, free_map_block_offset(e, a)) &&
             (uint16_t)(uintptr_t)head != b->low_full && *head != p)) {
    b->head = head - 1;
    head[-1] = p;
    return;
  }
  free_slow(p);
}

void tessera_free_internal(void *p) { free(p); }

size_t tessera_usable_size_internal(const void *p, const char *func) {
  if (p == NULL) return 0;
  unsigned c;
  extent_t *e = free_lookup_block(p, func, &c);
  return c == CODE_LARGE ? e->npages * PAGE : class_infos[c].size;
}

void tessera_free_sized_internal(void *p, size_t size, const char *func) {
  if (p == NULL) return;
  /* The claimed size must fit the block (hardened_malloc checks the same). */
  if (unlikely(size > tessera_usable_size_internal(p, func))) fatal_pointer(func, "size larger than the block", p);
  free(p);
}

TESSERA_EXPORT size_t malloc_usable_size(void *p) { return tessera_usable_size_internal(p, "malloc_usable_size()"); }

TESSERA_EXPORT void free_sized(void *p, size_t size) { tessera_free_sized_internal(p, size, "free_sized()"); }

TESSERA_EXPORT void free_aligned_sized(void *p, size_t align, size_t size) {
  (void)align;
  tessera_free_sized_internal(p, size, "free_aligned_sized()");
}
