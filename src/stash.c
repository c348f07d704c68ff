/* SPDX-License-Identifier: MIT */
#include "stash.h"

#include "config.h"
#include "extent.h"
#include "free_map.h"
#include "lock.h"
#include "pairing_heap.h"

void stash_put(arena_t *a, extent_t *slab) {
  lock_assert_held(&a->extent_lock);
  tessera_assert(slab->state == EXTENT_SLAB && slab->nfree == slab->nregs);
  /* Its free-map entries stay: it leaves the stash as a slab of its class (stash_take,
   * stash_borrow), or as free pages (extent_free_stashed_slab), which clears them. A
   * free of one of its blocks meanwhile (a double free: all of them are free) meets the
   * key every freed block holds, as in a slab in use, and the slow path names it.
   * Clearing them here and writing them back at the next take cost a program that frees
   * batches of blocks up to 8 KiB a tenth of its allocator's instructions. */
  slab->lent = 0; /* no region is out, lent or not */
  heap_insert(&a->stash[slab->class_id], slab);
  extent_list_append(&a->stash_lru, slab);
  a->stash_pages += slab->npages;
  a->active_pages -= slab->npages;
  a->dirty_decay.added += slab->npages;
}

static void stash_unlink(arena_t *a, extent_t *slab) {
  heap_remove(&a->stash[slab->class_id], slab);
  extent_list_remove(&a->stash_lru, slab);
  tessera_assert(a->stash_pages >= slab->npages);
  a->stash_pages -= slab->npages;
}

extent_t *stash_take(arena_t *a, unsigned c) {
  lock_assert_held(&a->extent_lock);
  extent_t *slab = a->stash[c].root; /* the lowest address */
  if (slab == NULL) return NULL;
  tessera_assert(slab->class_id == c && slab->nfree == slab->nregs);
  stash_unlink(a, slab);
  a->active_pages += slab->npages;
  slab->first_word = 0;
  tessera_assert(free_map_lookup(slab->addr)->cache_bin_offset == (c + 1) * sizeof(cache_bin_t) ||
                 !free_map_enabled());
  return slab;
}

/*
 * Stashed pages reclaim may turn into dirty pages for one request, as a multiple of
 * the request: bounded, so that one request cannot empty a large stash for nothing
 * (freed slabs coalesce with their free neighbours, so a few usually make room for a
 * slab). A large block needs many slabs' pages in one run, and the alternative, new
 * pages, costs it a page fault a page: sqlite3 (demo/run) freeing its page cache (64 KiB
 * slabs) and then growing a sorter's buffer to 2 MiB by realloc found no room within 4
 * times the request, and peaked 0.4 MiB higher (94.2 vs 93.8 MiB, glibc 93.1).
 */
#define STASH_RECLAIM_FACTOR 4
#define STASH_RECLAIM_FACTOR_LARGE 64

static void stash_reclaim(arena_t *a, unsigned c, size_t npages) {
  lock_assert_held(&a->extent_lock);
  size_t given = 0, bound = (c == STASH_LARGE ? STASH_RECLAIM_FACTOR_LARGE : STASH_RECLAIM_FACTOR) * npages;
  while (a->stash_lru.head != NULL && given < bound &&
         !extent_dirty_fits(a, npages)) {
    extent_t *slab = a->stash_lru.head;
    given += slab->npages;
    stash_unlink(a, slab);
    extent_free_stashed_slab(a, slab);
  }
}

static extent_t *stash_borrow(arena_t *a, unsigned c, size_t npages) {
  unsigned n = extent_sharing_count();
  for (unsigned i = 0; i < n; i++) {
    arena_t *b = extent_sharing_arena(i);
    if (b == a || __atomic_load_n(&b->stash_pages, __ATOMIC_RELAXED) == 0 || !lock_try(&b->extent_lock)) continue;
    extent_t *slab = c < NSMALL ? stash_take(b, c) : NULL;
    if (slab != NULL) extent_move_active(a, b, slab);
    else stash_reclaim(b, c, npages);
    lock_release(&b->extent_lock);
    if (slab != NULL) return slab;
  }
  return NULL;
}

/* Whether another arena has stashed slabs (a racy look, as stash_borrow's own). */
static bool others_have_stash(const arena_t *a) {
  unsigned n = extent_sharing_count();
  for (unsigned i = 0; i < n; i++) {
    arena_t *b = extent_sharing_arena(i);
    if (b != a && __atomic_load_n(&b->stash_pages, __ATOMIC_RELAXED) != 0) return true;
  }
  return false;
}

extent_t *stash_make_room(arena_t *a, unsigned c, size_t npages) {
  lock_assert_held(&a->extent_lock);
  bool own = a->stash_pages > 0;
  /* No stash anywhere: the search of the dirty set would decide nothing. */
  if (!own && !others_have_stash(a)) return NULL;
  /* The common case once a program runs: its free pages hold the request already (one
   * search, not one before and one after the reclaim). */
  if (extent_dirty_fits(a, npages)) return NULL;
  if (own) stash_reclaim(a, c, npages);
  if (!others_have_stash(a)) return NULL;
  return extent_dirty_fits(a, npages) ? NULL : stash_borrow(a, c, npages);
}

void stash_drain_oldest(arena_t *a, size_t npages) {
  lock_assert_held(&a->extent_lock);
  size_t given = 0;
  while (a->stash_lru.head != NULL && given < npages) {
    extent_t *slab = a->stash_lru.head;
    given += slab->npages;
    stash_unlink(a, slab);
    extent_free_stashed_slab(a, slab);
  }
}

void stash_drain(arena_t *a) {
  stash_drain_oldest(a, SIZE_MAX);
  tessera_assert(a->stash_pages == 0);
}
