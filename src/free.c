/* SPDX-License-Identifier: MIT */
/*
 * free and its checked relatives (free_sized, malloc_usable_size). free's fast path
 * reads the page's free-map entry (one load), checks that the pointer starts a region
 * and does not hold the freed-block key (hardened_key.h: freed before, not handed out
 * since), writes the key and pushes the block onto the thread cache; everything else is
 * in the noinline slow path, which finds the block through the page map and aborts on a
 * pointer that is not a live block.
 *
 * Diagnoses: a pointer tessera never handed out (or not the start of a block) is an
 * "invalid pointer"; a block freed before is a "double free" when the call would free
 * it (free, realloc, sized frees, delete) and a "use after free" when it only reads it
 * (malloc_usable_size, sallocx, xallocx).
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
#include "hardened_key.h"
#include "init.h"
#include "options.h"
#include "pagemap.h"
#include "prof_hooks.h"
#include "size_class.h"
#include "tcache.h"
#include "thread.h"

#define JUNK_FREE 0x5a

/* Whether region p of slab is free in its slab's bitmap. Read without the bin's lock:
 * p's own bit changes only when p itself is handed out or freed, which the caller
 * (holding what it claims is a live block) does not race with. */
static bool region_free_in_slab(const extent_t *slab, uintptr_t p) {
  uint32_t idx = magic_quotient(class_infos[slab->class_id].magic, (uint32_t)(p - slab->addr));
  uint64_t word = __atomic_load_n(&slab->bitmap[idx / 64], __ATOMIC_RELAXED);
  return (word >> (idx % 64)) & 1;
}

/* Whether free extent ext covers page a (a racy read: records are never unmapped). */
static bool extent_holds_freed_start(const extent_t *ext, uintptr_t a) {
  unsigned state = __atomic_load_n(&ext->state, __ATOMIC_RELAXED);
  uintptr_t start = __atomic_load_n(&ext->addr, __ATOMIC_RELAXED);
  size_t npages = __atomic_load_n(&ext->npages, __ATOMIC_RELAXED);
  bool free_state = state == EXTENT_DIRTY || state == EXTENT_MUZZY || state == EXTENT_RETAINED;
  return free_state && a >= start && (a - start) / PAGE < npages;
}

extent_t *free_lookup_block(const void *p, const char *func, unsigned *class_out, bool freeing) {
  uintptr_t a = (uintptr_t)p;
  const char *freed = freeing ? "double free" : "use after free";
  pm_entry_t e = pagemap_get(a);
  extent_t *ext = pm_extent(e);
  unsigned code = pm_code(e);
  if (code == 0) {
    /* The first page of a free extent, or a page inside one that names it (where a block
     * started before it merged with its free neighbours: extent.c): most likely a large
     * block freed before. Read without the extent lock: a diagnosis only. */
    if (ext != NULL && (a & PAGE_MASK) == 0 && extent_holds_freed_start(ext, a)) fatal_pointer(func, freed, p);
    fatal_pointer(func, "invalid pointer", p);
  }
  if (code - 1 < NCACHED_MAX) {
    unsigned c = code - 1;
    if (!class_offset_is_region_start(c, pm_offset(e, a))) fatal_pointer(func, "invalid pointer", p);
    if (block_has_freed_key(p)) fatal_pointer(func, freed, p);
    /* Free in its slab without the key: never handed out (or the key was overwritten
     * after a free, or its page purged: a use after free either way). */
    if (c < NSMALL && region_free_in_slab(ext, a)) fatal_pointer(func, "invalid pointer", p);
    *class_out = c;
    return ext;
  }
  if (ext->state != EXTENT_LARGE || ext->addr != a) fatal_pointer(func, "invalid pointer", p);
  *class_out = CODE_LARGE;
  return ext;
}

void free_to_arena(extent_t *e, unsigned c, void *p) {
  tessera_assert(c < NSMALL ? e->state == EXTENT_SLAB : (e->state == EXTENT_LARGE && e->addr == (uintptr_t)p));
  /* Before the block can be handed out again (and sampled again): prof_hooks.h. */
  if (unlikely(__atomic_load_n(&e->sampled, __ATOMIC_RELAXED))) prof_block_free(p);
  if (unlikely(opt_junk)) memset(p, JUNK_FREE, c < NSMALL ? class_infos[c].size : e->npages * PAGE);
  if (c < NCACHED_MAX) block_set_freed_key(p); /* a later free of p is a double free */
  if (c < NSMALL) {
    tls_thread.deallocated += class_infos[c].size;
    arena_free_small(e, p);
  } else {
    tls_thread.deallocated += e->npages * PAGE;
    arena_free_large(e->arena, e);
  }
}

/* Frees block p of class c, found and checked by free_lookup_block: into the calling
 * thread's cache where its bin caches, else straight to its arena. */
static void free_checked(void *p, extent_t *e, unsigned c) {
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
    /* Here when the bin was full, when the free map is off (free_map.h), or when the
     * profiler sent the block's extent here (prof_hooks.h). */
    if (unlikely(__atomic_load_n(&e->sampled, __ATOMIC_RELAXED))) prof_block_free(p);
    block_set_freed_key(p);
    tcache_free_slow(tc, c, p);
    return;
  }
  free_to_arena(e, c, p);
  if (atomic_load_explicit(&boot_constructed, memory_order_relaxed)) background_start_if_wanted();
}

NOINLINE static void free_slow(void *p) {
  if (p == NULL) return;
  unsigned c;
  extent_t *e = free_lookup_block(p, "free()", &c, true);
  free_checked(p, e, c);
}

TESSERA_EXPORT void free(void *p) {
  uintptr_t a = (uintptr_t)p;
  const free_map_entry_t *e = free_map_lookup(a);
  /* Bin offset 0 (no cached block on this page) is bins[0], which never caches. */
  cache_bin_t *b = (cache_bin_t *)((char *)tls_thread.tcache + e->cache_bin_offset);
  void **head = b->head;
  uintptr_t key = (uintptr_t)e; /* the freed-block key (hardened_key.h) */
  /* p must start a region, the bin must have room, and p must not hold the key (freed
   * before: the slow path names the double free). */
  if (likely(magic_divides(b->region_magic, free_map_block_offset(e, a)) &&
             (uint16_t)(uintptr_t)head != b->low_full && ((block_word_t *)p)[1] != key)) {
    ((block_word_t *)p)[1] = key;
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
  extent_t *e = free_lookup_block(p, func, &c, false);
  return c == CODE_LARGE ? e->npages * PAGE : class_infos[c].size;
}

size_t free_usable_of_malloc(size_t size) {
  return size <= LOOKUP_MAX ? class_infos[size_to_class(size)].size : large_usable_size(size);
}

/* Whether a sized free of p may take free's fast path: the free map names a cached
 * class of one of the claimed usable sizes, p starts a region, and holds no key. */
static bool sized_free_is_plain(const void *p, size_t usable, size_t usable_alt) {
  const free_map_entry_t *fe = free_map_lookup((uintptr_t)p);
  unsigned code = fe->cache_bin_offset / (unsigned)sizeof(cache_bin_t);
  if (code == 0) return false;
  const class_info_t *ci = &class_infos[code - 1];
  return (ci->size == usable || ci->size == usable_alt) &&
         magic_divides(ci->magic, free_map_block_offset(fe, (uintptr_t)p)) && !block_has_freed_key(p);
}

void tessera_free_checked_size(void *p, size_t usable, size_t usable_alt, bool use_tcache, const char *func) {
  if (p == NULL) return;
  if (likely(use_tcache && sized_free_is_plain(p, usable, usable_alt))) {
    free(p);
    return;
  }
  unsigned c;
  extent_t *e = free_lookup_block(p, func, &c, true);
  /* The size must be one of the block's size class (hardened_malloc's rule): a
   * different class means the program frees another object than it thinks. */
  size_t actual = c == CODE_LARGE ? e->npages * PAGE : class_infos[c].size;
  /* A sampled block has an extent of its own, larger than its class (prof_hooks.h). */
  if (unlikely(actual != usable && actual != usable_alt && !e->sampled)) fatal_pointer(func, "size of another size class", p);
  if (use_tcache) free_checked(p, e, c);
  else free_to_arena(e, c, p);
}

void tessera_free_sized_internal(void *p, size_t size, const char *func) {
  size_t usable = free_usable_of_malloc(size);
  tessera_free_checked_size(p, usable, usable, true, func);
}

TESSERA_EXPORT size_t malloc_usable_size(void *p) { return tessera_usable_size_internal(p, "malloc_usable_size()"); }

TESSERA_EXPORT void free_sized(void *p, size_t size) { tessera_free_sized_internal(p, size, "free_sized()"); }
