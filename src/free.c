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
#include "bin.h"
#include "calloc_clear.h"
#include "config.h"
#include "fatal.h"
#include "free_map.h"
#include "frontend.h"
#include "got_patch.h"
#include "hardened.h"
#include "hardened_bytes.h"
#include "hardened_key.h"
#include "hardened_ring.h"
#include "init.h"
#include "large_cache.h"
#include "options.h"
#include "pagemap.h"
#include "prof_hooks.h"
#include "exact_class.h"
#include "prof_slab.h"
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

/*
 * Whether address a lies in a free extent: the page map names an extent on its first
 * and last pages only (and on every page of a slab), so this walks back page by page to
 * the first entry that names an extent covering a (interior pages read as zero). For a
 * diagnosis only (the program is about to be stopped): read without the extent lock
 * (records are never unmapped), and bounded, after which a is taken as never handed out.
 */
#define FREED_LOOKBACK_PAGES 65536
static bool address_in_free_extent(uintptr_t a) {
  uintptr_t page = a & ~(uintptr_t)PAGE_MASK;
  for (unsigned k = 0; k < FREED_LOOKBACK_PAGES && page >= PAGE; k++, page -= PAGE) {
    const extent_t *x = pm_extent(pagemap_get(page));
    if (x == NULL) continue;
    unsigned state = __atomic_load_n(&x->state, __ATOMIC_RELAXED);
    uintptr_t start = __atomic_load_n(&x->addr, __ATOMIC_RELAXED);
    size_t npages = __atomic_load_n(&x->npages, __ATOMIC_RELAXED);
    if (state == 0 || a < start || (a - start) / PAGE >= npages) continue; /* stale */
    return state == EXTENT_DIRTY || state == EXTENT_MUZZY || state == EXTENT_RETAINED;
  }
  return false;
}

/* The bytes block p of class c (CODE_LARGE: of extent e) takes, a guard page included. */
static size_t block_size_of(const extent_t *e, unsigned c) { return c == CODE_LARGE ? e->npages * PAGE : class_infos[c].size; }

size_t free_hardened_region(const extent_t *e, unsigned c) { return hardened_region(block_size_of(e, c), c == CODE_LARGE); }

/* hardened:true: the size the program asked for; aborts when it wrote past it. */
COLD_TEXT static size_t hardened_size(const void *p, const extent_t *e, unsigned c, const char *func) {
  return hardened_checked_size(p, free_hardened_region(e, c), func);
}

/* Whether extent ext (from the page map's entry of address a, code CODE_LARGE) is a large
 * block that starts at a: else a is not one (a later page of it, or a stale entry). */
static inline bool large_block_at(const extent_t *ext, uintptr_t a) {
  return __atomic_load_n(&ext->state, __ATOMIC_RELAXED) == EXTENT_LARGE && ext->addr == a;
}

extent_t *free_lookup_block(const void *p, const char *func, unsigned *class_out, bool freeing) {
  uintptr_t a = (uintptr_t)p;
  const char *freed = freeing ? "double free" : "use after free";
  pm_entry_t e = pagemap_get(a);
  extent_t *ext = pm_extent(e);
  unsigned code = pm_code(e);
  if (code == 0) {
    /* Inside a free extent: most likely a block freed before (a large block, or one of a
     * slab given back), its memory since merged with its free neighbours. */
    if (address_in_free_extent(a)) fatal_pointer(func, freed, p);
    fatal_pointer(func, "invalid pointer", p);
  }
  if (code - 1 < NCACHED_MAX) {
    unsigned c = code - 1;
    if (!class_offset_is_region_start(c, pm_offset(e, a))) fatal_pointer(func, "invalid pointer", p);
    if (block_has_freed_key(p)) fatal_pointer(func, freed, p);
    /* Free in its slab without the key: never handed out (or the key was overwritten
     * after a free, or its page purged: a use after free either way). */
    if (c < NSMALL && region_free_in_slab(ext, a)) fatal_pointer(func, "invalid pointer", p);
    if (unlikely(opt_hardened)) hardened_size(p, ext, c, func);
    *class_out = c;
    return ext;
  }
  if (!large_block_at(ext, a)) fatal_pointer(func, "invalid pointer", p);
  if (__atomic_load_n(&ext->thread_cached, __ATOMIC_RELAXED)) fatal_pointer(func, freed, p); /* in a thread's cache */
  if (unlikely(opt_hardened)) {
    if (block_has_freed_key(p)) fatal_pointer(func, freed, p); /* in the quarantine */
    hardened_size(p, ext, CODE_LARGE, func);
  }
  *class_out = CODE_LARGE;
  return ext;
}

/* prof:true: block p of class c of sample slab e (prof_slab.h), back to its slab after
 * the profiler forgot it: never to a cache, from which an ordinary malloc would take it. */
COLD_TEXT static void free_sampled_in_slab(extent_t *e, unsigned c, void *p) {
  prof_block_free(p, e);
  if (unlikely(opt_junk)) memset(p, JUNK_FREE, class_infos[c].size);
  block_set_freed_key(p); /* a later free of p is a double free */
  tls_thread.deallocated += class_infos[c].size;
  prof_slab_free(e, p);
}

static void free_block_now(extent_t *e, unsigned c, void *p) {
  tessera_assert(c < NSMALL ? e->state == EXTENT_SLAB : (e->state == EXTENT_LARGE && e->addr == (uintptr_t)p));
  /* Before the block can be handed out again (and sampled again): prof_hooks.h. */
  if (unlikely(__atomic_load_n(&e->sampled, __ATOMIC_RELAXED))) {
    if (prof_slab_holds(e)) {
      free_sampled_in_slab(e, c, p);
      return;
    }
    prof_block_free(p, e);
    /* A large block's extent is its own: forgotten by the profiler, it is an ordinary
     * block again, which the thread's cache of large blocks may keep. */
    if (c == CODE_LARGE) __atomic_store_n(&e->sampled, 0, __ATOMIC_RELAXED);
  }
  if (unlikely(opt_junk)) memset(p, JUNK_FREE, c < NSMALL ? class_infos[c].size : e->npages * PAGE);
  if (c < NCACHED_MAX) block_set_freed_key(p); /* a later free of p is a double free */
  if (c < NSMALL) {
    tls_thread.deallocated += class_infos[c].size;
    arena_free_small(e, p);
  } else {
    tls_thread.deallocated += e->npages * PAGE;
    if (unlikely(e->calloc_measure)) calloc_clear_freed(e);
    tcache_t *tc = tls_thread.tcache;
    if (tc == &tcache_empty || !large_cache_put(tc, e)) arena_free_large(e->arena, e);
  }
}

/* hardened:true: a block leaving a quarantine (or the kept guarded blocks, hardened.h)
 * is checked (a large one's first page) and freed to its arena. */
COLD_TEXT static void free_unquarantined(void *p) {
  pm_entry_t pe = pagemap_get((uintptr_t)p);
  unsigned code = pm_code(pe), c = code - 1 < NCACHED_MAX ? code - 1 : CODE_LARGE;
  extent_t *e = pm_extent(pe);
  block_clear_freed_key(p);
  hardened_unscrub(p, free_hardened_region(e, c), c == CODE_LARGE);
  free_block_now(e, c, p);
}

/* hardened:true: a block leaving a quarantine (q as hardened_scrub tagged it); a guarded
 * one is kept for a malloc of its size if it can be (hardened.h), as it is. */
COLD_TEXT static void free_from_quarantine(void *q) {
  void *p = hardened_untag(q);
  pm_entry_t pe = pagemap_get((uintptr_t)p);
  if (pm_code(pe) - 1 < NCACHED_MAX) {
    free_unquarantined(p);
    return;
  }
  extent_t *e = pm_extent(pe);
  void *evicted;
  bool kept = hardened_keep_guarded(q, (uint32_t)e->npages, &evicted);
  if (kept) tls_thread.deallocated += e->npages * PAGE;
  if (evicted != NULL) { /* counted as freed when it was kept */
    evicted = hardened_resident_done(evicted);
    tls_thread.deallocated -= pm_extent(pagemap_get((uintptr_t)evicted))->npages * PAGE;
    free_unquarantined(evicted);
  }
  if (!kept) free_unquarantined(hardened_resident_done(q));
}

/* hardened:true: a freed block is zeroed (a large one's pages made inaccessible, and
 * given back unless kept in memory, no system calls for smaller ones) and keyed (freeing
 * it again is a double free) before it waits in a quarantine. Returns the pointer the
 * quarantine carries (hardened_scrub). */
COLD_TEXT static void *free_hardened_retire(extent_t *e, unsigned c, void *p) {
  void *q = hardened_scrub(p, free_hardened_region(e, c), c == CODE_LARGE);
  block_set_freed_key(p);
  return q;
}

/* hardened:true, a thread without a cache: the shared quarantine. */
static void free_hardened(extent_t *e, unsigned c, void *p) {
  void *q = free_hardened_retire(e, c, p);
  size_t block = block_size_of(e, c);
  void *out[HARDENED_EVICT_MAX + 1];
  size_t region = free_hardened_region(e, c);
  size_t resident = hardened_freed_zeroed(region, c == CODE_LARGE) ? region : PAGE;
  unsigned n = hardened_quarantine(q, block, resident, out);
  for (unsigned i = 0; i < n; i++) free_from_quarantine(out[i]);
}

/* A block leaving the thread's quarantine: into the thread's cache when its bin caches
 * (as free's fast path would push it), else to its arena. */
static void free_held(tcache_t *tc, hardened_held_t h) {
  cache_bin_t *b = h.c < NCACHED_MAX ? tcache_bin(tc, h.c) : NULL;
  if (b == NULL || b->capacity == 0) free_from_quarantine(h.p);
  else if (likely(b->head != b->slots)) *--b->head = h.p;
  else tcache_free_slow(tc, h.c, h.p);
}

/* hardened:true, a thread with a cache: the thread's own quarantine (no lock); the
 * blocks that leave it go to the cache, from which malloc's slow path hands them out
 * again, checking that they are still zero. */
COLD_TEXT static void free_hardened_cached(tcache_t *tc, extent_t *e, unsigned c, void *p) {
  void *q = free_hardened_retire(e, c, p);
  hardened_held_t out[HARDENED_EVICT_MAX + 1];
  unsigned n = hardened_thread_quarantine((hardened_held_t){q, c, c == CODE_LARGE ? (uint32_t)e->npages : 0}, out);
  for (unsigned i = 0; i < n; i++) free_held(tc, out[i]);
}

void free_to_arena(extent_t *e, unsigned c, void *p) {
  if (unlikely(opt_hardened)) free_hardened(e, c, p);
  else free_block_now(e, c, p);
}

/* prof:true: block p (checked) onto bin b as free's fast path pushes it, if b has room. */
static inline bool free_push_if_room(cache_bin_t *b, void *p) {
  void **head = b->head;
  if ((uint16_t)(uintptr_t)head == b->low_full) return false;
  block_set_freed_key(p);
  b->head = head - 1;
  head[-1] = p;
  return true;
}

/* Frees a thread makes before it has a cache, each straight to its block's arena,
 * before its next one makes it a cache. Its exit path is where a thread that never
 * allocated frees others' blocks (glibc frees dead threads' TLS vectors there), after
 * the thread library ran its exit hooks: a cache made then would never be destroyed
 * (thread_stats.c). A consumer thread frees far more. */
#define FREES_BEFORE_CACHE 16

/* Large block p (extent e, checked by free_lookup_block) into the calling thread's cache
 * of large blocks, if it has one and takes the block (large_cache_put refuses what it
 * must not keep: hardened mode's, junk's and zero's blocks, sampled ones). Ahead of the
 * rest of free_checked and of free_block_now's layers: a program cycling such blocks
 * frees one at every step. */
static inline bool free_large_to_cache(void *p, extent_t *e) {
  tcache_t *tc = tls_thread.tcache;
  if (tc == &tcache_empty || e->calloc_measure || !large_cache_put(tc, e)) return false;
  tessera_assert(e->addr == (uintptr_t)p);
  tls_thread.deallocated += e->npages * PAGE;
  return true;
}

/* Frees block p of class c, found and checked by free_lookup_block: into the calling
 * thread's cache where its bin caches, else straight to its arena. */
static void free_checked(void *p, extent_t *e, unsigned c) {
  tcache_t *tc = tls_thread.tcache;
  if (tc == &tcache_empty && tls_thread.cache_state == THREAD_NEW) {
    /* A thread that frees before it allocates (a consumer) still gets a cache, so its
     * frees go back to their arenas in batches. But the block that makes it, another
     * thread's, goes straight home: cached, it would be the thread's first malloc of
     * that size, and two threads given neighbouring blocks (typically the arguments
     * their creator handed them) would then write one cache line ("passive" false
     * sharing, Hoard's cache-scratch). */
    if (tls_thread.uncached_frees < FREES_BEFORE_CACHE) {
      tls_thread.uncached_frees++;
      free_to_arena(e, c, p);
      return;
    }
    if (tcache_get() != NULL) {
      free_to_arena(e, c, p);
      return;
    }
  }
  /* Hardened mode: every free is here (tcache.c: its bins never take a block on free's
   * fast path). */
  if (unlikely(opt_hardened) && tc != &tcache_empty) {
    free_hardened_cached(tc, e, c, p);
    return;
  }
  /* An exact class this thread has no bin for yet (it frees others' blocks of it). */
  if (unlikely(c - NSTATIC_SMALL < NEXACT_CLASSES) && tc != &tcache_empty) tcache_bin_setup_exact(tc, c);
  if (c < NCACHED_MAX && tcache_bin(tc, c)->capacity > 0) {
    /* Here when the bin was full, when the free map is off (free_map.h), or when the
     * profiler sent the block's extent here (prof_hooks.h). */
    if (unlikely(__atomic_load_n(&e->sampled, __ATOMIC_RELAXED))) {
      if (prof_slab_holds(e)) {
        free_sampled_in_slab(e, c, p);
        return;
      }
      prof_block_free(p, e);
      /* Sent here by the profiler's mark, not by a full bin (most often): onto the bin as
       * the fast path would push it. */
      if (free_push_if_room(tcache_bin(tc, c), p)) return;
    }
    block_set_freed_key(p);
    tcache_free_slow(tc, c, p);
    return;
  }
  free_to_arena(e, c, p);
  if (atomic_load_explicit(&boot_constructed, memory_order_relaxed)) background_start_if_wanted();
}

/* hardened:true: block p of cached class c into the thread's quarantine, when not at
 * most one block of a cached class leaves (out of line: its array is a large frame). */
COLD_TEXT static void quarantine_many(tcache_t *tc, void *p, unsigned c) {
  hardened_held_t out[HARDENED_EVICT_MAX + 1];
  unsigned n = hardened_thread_quarantine((hardened_held_t){p, c, 0}, out);
  for (unsigned i = 0; i < n; i++) free_held(tc, out[i]);
}

/* What every free of a block found by free_lookup_block does (free, the sized frees): a
 * large block straight into the thread's cache when it takes it, else free_checked. */
static inline void free_found(void *p, extent_t *e, unsigned c) {
  if (c == CODE_LARGE && free_large_to_cache(p, e)) return;
  free_checked(p, e, c);
}

NOINLINE static void free_general(void *p) {
  if (p == NULL) return;
  unsigned c;
  extent_t *e = free_lookup_block(p, "free()", &c, true);
  free_found(p, e, c);
}

/* hardened:true, free's common case once block p (class c, free-map entry fe) is
 * checked: zeroed, keyed, into the thread's quarantine ring, and the block that leaves
 * the ring onto its cache bin. Inline for blocks up to HARDENED_ZERO_INLINE_MAX, out of
 * line (free_hardened_retire_large) above, so that the common path makes no call. */
static inline __attribute__((always_inline)) void free_hardened_retire_cached(tcache_t *tc, const free_map_entry_t *fe,
                                                                               void *p, unsigned c, size_t size) {
  hardened_zero(p, size);
  ((block_word_t *)p)[1] = (uintptr_t)fe; /* the freed-block key */
  hardened_held_t left;
  int one = hardened_thread_quarantine_one(p, c, size, &left);
  if (likely(one == 0)) return;
  if (unlikely(one < 0)) {
    quarantine_many(tc, p, c);
    return;
  }
  /* Onto its cache bin, as free's fast path would push it (a bin that never caches is
   * full: its head and marks are 0). */
  cache_bin_t *b = tcache_bin(tc, left.c);
  void **head = b->head;
  if (likely((uint16_t)(uintptr_t)head != b->low_full)) *(b->head = head - 1) = left.p;
  else free_held(tc, left);
}

COLD_TEXT static void free_hardened_retire_large(tcache_t *tc, const free_map_entry_t *fe, void *p, unsigned c) {
  free_hardened_retire_cached(tc, fe, p, c, class_infos[c].size);
}

/* hardened:true: free's common case, a live block of a cached class freed by a thread
 * with a cache: the checks of free_lookup_block and free_checked, with the free map's
 * entry read once. Every other case (the general path then names the misuse, if it is
 * one) to free_general. Also hardened mode's entry: the callers' PLT slots of free point
 * here once the library is up (free_hardened_entry_patch). */
COLD_TEXT void free_hardened_path(void *p) {
  tcache_t *tc = tls_thread.tcache;
  uintptr_t a = (uintptr_t)p;
  const free_map_entry_t *fe = free_map_lookup(a);
  unsigned code = fe->cache_bin_offset / (unsigned)sizeof(cache_bin_t);
  if (unlikely(tc == &tcache_empty || code == 0)) {
    free_general(p);
    return;
  }
  unsigned c = code - 1;
  const class_info_t *ci = &class_infos[c];
  if (unlikely(!magic_divides(ci->magic, free_map_block_offset(fe, a)) || ((block_word_t *)p)[1] == (uintptr_t)fe)) {
    free_general(p);
    return;
  }
  /* Intact canaries: the block was handed out (a slot never handed out, free in its
   * slab, fails them), without a look at the slab's bitmap. Else the general path names
   * the misuse: an invalid pointer, or an overflow. */
  size_t n, size = ci->size;
  if (unlikely(!hardened_trailer_intact(p, size, &n))) free_general(p);
  else if (size > HARDENED_ZERO_INLINE_MAX) free_hardened_retire_large(tc, fe, p, c);
  else free_hardened_retire_cached(tc, fe, p, c, size);
}

static void free_hardened_entry_patch(void);

/* free's common case beyond the fast path, in the default mode: a live large block (a
 * program cycling blocks of 40-256 KiB frees one at every step, which the thread's cache
 * of large blocks takes). The checks free_lookup_block makes of a large block, for the
 * case that passes them all, with the page map read once, then what free_general does
 * with it; false for anything else (free_general then looks again, and names any
 * misuse): 167 -> 142 instructions a free (callgrind, `buffers threads=1 live=1
 * min=32769 max=262144 touch=0 uniform=1`). */
NOINLINE static bool free_large_block(void *p) {
  uintptr_t a = (uintptr_t)p;
  if ((a & PAGE_MASK) != 0) return false;
  pm_entry_t pe = pagemap_get(a);
  extent_t *e = pm_extent(pe);
  if (pm_code(pe) != CODE_LARGE || !large_block_at(e, a) || __atomic_load_n(&e->thread_cached, __ATOMIC_RELAXED))
    return false;
  free_found(p, e, CODE_LARGE);
  return true;
}

/* Hardened mode sends every call of the default entry here (hardened.h): a test and a
 * jump to its path; the first such call after the library's constructor points the
 * callers' PLT slots of free at that path (free_hardened_entry_patch). */
NOINLINE static void free_slow(void *p) {
  if (unlikely(opt_hardened)) {
    free_hardened_entry_patch();
    free_hardened_path(p);
  } else if (!free_large_block(p)) {
    free_general(p);
  }
}

/* free: the default entry. */
static void free_default(void *p) {
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

TESSERA_EXPORT void free(void *p) __attribute__((alias("free_default")));

void tessera_free_internal(void *p) { free_default(p); }

/* hardened:true, once, on the first call of free's default entry after the library's
 * constructor ran (libc is ready): the callers' PLT slots of free pointed at
 * free_hardened_path (got_patch.h), which then starts with hardened mode's own first
 * test instead of the default fast path's miss and the slow path's dispatch. A caller
 * not rewritten (a function pointer, a library loaded later) keeps the default entry,
 * which reaches the same path through free_slow. hardened is set at boot only. */
static _Atomic bool free_hardened_entry_patched;

COLD_TEXT static void free_hardened_entry_patch_now(void) {
  if (!atomic_load_explicit(&boot_constructed, memory_order_acquire)) return;
  if (atomic_exchange(&free_hardened_entry_patched, true)) return;
  got_patch("free", (void *)free_default, (void *)free_hardened_path);
}

static void free_hardened_entry_patch(void) {
  if (unlikely(!atomic_load_explicit(&free_hardened_entry_patched, memory_order_relaxed))) free_hardened_entry_patch_now();
}

size_t tessera_usable_size_internal(const void *p, const char *func) {
  if (p == NULL) return 0;
  unsigned c;
  extent_t *e = free_lookup_block(p, func, &c, false);
  if (unlikely(opt_hardened)) return hardened_size(p, e, c, func);
  return block_size_of(e, c);
}

size_t free_usable_of_malloc(size_t size) {
  if (unlikely(opt_hardened)) return alloc_hardened_block_size(size, QUANTUM);
  return size <= LOOKUP_MAX ? class_infos[size_to_class(size)].size : large_usable_size(size);
}

/* Whether block p (of extent e, class c, actual bytes) may have been lent by its class
 * to the class of one of the claimed usable sizes (bin.h, "Lending"): its slab has lent
 * regions since it was last empty, and its class may lend to that one. A sized free of
 * it with that size is then right. */
static bool lent_block_fits(const extent_t *e, unsigned c, size_t actual, size_t usable, size_t usable_alt) {
  return c < NSMALL && e->lent && (bin_may_lend(actual, usable) || bin_may_lend(actual, usable_alt));
}

/* Whether large block e was taken from a thread's cache of large blocks for a request
 * of one of the claimed usable sizes (large_cache.h). */
static bool large_block_fits(const extent_t *e, unsigned c, size_t usable, size_t usable_alt) {
  return c >= NSMALL && (large_cache_served(e, usable) || large_cache_served(e, usable_alt));
}

/* Whether a sized free of p may take free's fast path: the free map names a cached
 * class of one of the claimed usable sizes, p starts a region, and holds no key. */
static bool sized_free_is_plain(const void *p, size_t usable, size_t usable_alt) {
  uint32_t offset;
  const class_info_t *ci = block_live_cached_class(p, &offset);
  return ci != NULL && (ci->size == usable || ci->size == usable_alt);
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
  size_t actual = block_size_of(e, c);
  /* A sampled block has an extent of its own, larger than its class (prof_hooks.h). */
  if (unlikely(actual != usable && actual != usable_alt && !e->sampled &&
               !exact_class_sized_free_fits(c, actual, usable, usable_alt) &&
               !lent_block_fits(e, c, actual, usable, usable_alt) && !large_block_fits(e, c, usable, usable_alt)))
    fatal_pointer(func, "size of another size class", p);
  if (use_tcache) free_found(p, e, c);
  else free_to_arena(e, c, p);
}

/* hardened:true, the sized operator deletes' entry (cxx.c): the size's class checked
 * against the free map's, then free's hardened path; anything else through the general
 * sized free, which names the misuse. */
COLD_TEXT void free_sized_hardened(void *p, size_t size, const char *func) {
  if (likely(size <= LOOKUP_MAX - HARDENED_EXTRA)) {
    const free_map_entry_t *fe = free_map_lookup((uintptr_t)p);
    unsigned code = fe->cache_bin_offset / (unsigned)sizeof(cache_bin_t);
    if (likely(code != 0 && code - 1 == size_to_class(size + HARDENED_EXTRA))) {
      free_hardened_path(p);
      return;
    }
  }
  tessera_free_sized_internal(p, size, func);
}

/* Sized frees (free_sized, sized operator delete): free's fast path with one more test,
 * that the page's free-map entry names the bin of the class the size maps to, which is
 * the size check itself (a cached class's bin offset is its code << 6). C++ containers
 * free everything this way, so it must cost what free costs, not a lookup of the block
 * and then free's own. Every other case (another class: the misuse, or a block that is
 * not a plain cached one: sampled, hardened, NULL, a full bin) through
 * tessera_free_checked_size, which names it. */
NOINLINE static void free_sized_slow(void *p, size_t size, const char *func) {
  size_t usable = free_usable_of_malloc(size);
  tessera_free_checked_size(p, usable, usable, true, func);
}

void tessera_free_sized_internal(void *p, size_t size, const char *func) {
  uintptr_t a = (uintptr_t)p;
  if (likely(size <= LOOKUP_MAX)) {
    const free_map_entry_t *e = free_map_lookup(a);
    uint32_t bin_offset = e->cache_bin_offset;
    cache_bin_t *b = (cache_bin_t *)((char *)tls_thread.tcache + bin_offset);
    void **head = b->head;
    uintptr_t key = (uintptr_t)e;
    if (likely(bin_offset == ((uint32_t)size_to_class(size) + 1) * (uint32_t)sizeof(cache_bin_t) &&
               magic_divides(b->region_magic, free_map_block_offset(e, a)) &&
               (uint16_t)(uintptr_t)head != b->low_full && ((block_word_t *)p)[1] != key)) {
      ((block_word_t *)p)[1] = key;
      b->head = head - 1;
      head[-1] = p;
      return;
    }
  }
  free_sized_slow(p, size, func); /* a tail call: the fast path saves no register */
}

NOINLINE static size_t usable_size_slow(void *p) { return tessera_usable_size_internal(p, "malloc_usable_size()"); }

/* malloc_usable_size: the checks of free's fast path (the free map names a cached class,
 * p starts a region and holds no freed-block key) and the slab's bitmap (a region never
 * handed out is free there), without the rest of the block lookup. Programs that count
 * their memory call it on every malloc and free (Redis's zmalloc does). Everything else,
 * misuse included, through the general lookup, which names it. */
TESSERA_EXPORT size_t malloc_usable_size(void *p) {
  uint32_t offset;
  const class_info_t *ci = unlikely(opt_hardened) ? NULL : block_live_cached_class(p, &offset);
  if (likely(ci != NULL)) {
    const extent_t *slab = pm_extent(pagemap_get((uintptr_t)p));
    uint32_t idx = magic_quotient(ci->magic, offset);
    uint64_t word = __atomic_load_n(&slab->bitmap[idx / 64], __ATOMIC_RELAXED);
    if (likely(!((word >> (idx % 64)) & 1))) return ci->size;
  }
  return usable_size_slow(p);
}

TESSERA_EXPORT void free_sized(void *p, size_t size) { tessera_free_sized_internal(p, size, "free_sized()"); }
