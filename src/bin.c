/* SPDX-License-Identifier: MIT */
#include "bin.h"

#include "bitmap.h"
#include "config.h"
#include "extent.h"
#include "hardened.h"
#include "lock.h"
#include "options.h"
#include "pagemap.h"
#include "pairing_heap.h"
#include "purge.h"
#include "size_class.h"
#include "stash.h"

/* Debug build: a slab's free count matches its bitmap, and its hint is right. */
static void check_slab(const extent_t *slab) {
  if (!config_debug) return;
  tessera_assert(slab->state == EXTENT_SLAB && slab->nregs == class_infos[slab->class_id].nregs);
  tessera_assert(slab->nfree <= slab->nregs);
  tessera_assert(bitmap_count(slab->bitmap, slab->nregs) == slab->nfree);
  for (unsigned w = 0; w < slab->first_word; w++) tessera_assert(slab->bitmap[w] == 0);
}

extent_t *bin_slab_new(arena_t *a, unsigned c) {
  const class_info_t *ci = &class_infos[c];
  bool zeroed;
  lock_acquire(&a->extent_lock);
  extent_t *slab = stash_take(a, c);
  if (slab != NULL) { /* whole and empty, ready to use */
    lock_release(&a->extent_lock);
    return slab;
  }
  slab = stash_make_room(a, c, ci->slab_pages);
  if (slab != NULL) { /* another arena's, whole and empty */
    lock_release(&a->extent_lock);
    return slab;
  }
  slab = extent_alloc(a, ci->slab_pages, 1, EXTENT_SLAB, c + 1, false, &zeroed);
  purge_tick(a);
  lock_release(&a->extent_lock);
  if (slab == NULL) return NULL;
  slab->class_id = (uint8_t)c;
  slab->nregs = ci->nregs;
  slab->nfree = ci->nregs;
  slab->first_word = 0;
  bitmap_init_full(slab->bitmap, ci->nregs);
  check_slab(slab);
  return slab;
}

/* The slab to allocate from next, or NULL if the OS refuses memory. */
static extent_t *next_slab(arena_t *a, bin_t *bin, unsigned c) {
  lock_assert_held(&bin->lock);
  extent_t *slab = heap_remove_first(&bin->nonfull);
  if (slab == NULL && bin->spare != NULL) {
    slab = bin->spare;
    bin->spare = NULL;
  }
  if (slab == NULL) {
    slab = bin_slab_new(a, c);
    if (slab == NULL) return NULL;
    bin->nslabs++;
    bin->curslabs++;
  }
  return slab;
}

/* Hardened mode: take regions from a random place on, in a random order. Out of line:
 * its index array would make every thread's first refill touch another page of stack. */
static COLD_TEXT void take_random_regions(extent_t *slab, size_t size, void **out, unsigned take) {
  uint32_t idx[SLAB_MAX_REGIONS];
  hardened_take_regions(slab->bitmap, slab->nregs, idx, take);
  for (unsigned i = 0; i < take; i++) out[i] = (void *)(slab->addr + (size_t)idx[i] * size);
}

/* Takes up to n regions; requests is what to add to the bin's request count. */
static unsigned take_regions(arena_t *a, unsigned c, void **out, unsigned n, unsigned requests) {
  bin_t *bin = &a->bins[c];
  size_t size = class_infos[c].size;
  unsigned got = 0;
  lock_acquire(&bin->lock);
  while (got < n) {
    extent_t *slab = bin->current;
    if (slab == NULL || slab->nfree == 0) {
      slab = bin->current = next_slab(a, bin, c);
      if (slab == NULL) break;
    }
    unsigned take = n - got < slab->nfree ? n - got : slab->nfree;
    if (unlikely(opt_hardened)) {
      take_random_regions(slab, size, out + got, take);
    } else {
      bitmap_take_lowest(slab->bitmap, &slab->first_word, slab->addr, size, out + got, take); /* lowest addresses first */
    }
    got += take;
    slab->nfree -= take;
    check_slab(slab);
  }
  tessera_assert(got <= n);
  bin->nmalloc += got;
  bin->curregs += got;
  bin->nrequests += requests;
  if (requests == 0) bin->nfills++;
  lock_release(&bin->lock);
  return got;
}

unsigned bin_fill(arena_t *a, unsigned c, void **out, unsigned n) { return take_regions(a, c, out, n, 0); }

void *bin_alloc_one(arena_t *a, unsigned c) {
  /* No thread cache counts this request, so the bin does. */
  void *p;
  return take_regions(a, c, &p, 1, 1) == 1 ? p : NULL;
}

static void stash_slab(arena_t *a, bin_t *bin, extent_t *slab) {
  bin->curslabs--;
  lock_acquire(&a->extent_lock);
  stash_put(a, slab);
  purge_tick(a);
  lock_release(&a->extent_lock);
}

/* An empty slab: keep it as the spare, or give it to the arena's slab stash. */
static void slab_empty(arena_t *a, bin_t *bin, extent_t *slab) {
  if (bin->spare == NULL) {
    bin->spare = slab;
    return;
  }
  /* Keep the lower of the two as the spare: lowest addresses are reused first. */
  if (slab->addr < bin->spare->addr) {
    extent_t *t = bin->spare;
    bin->spare = slab;
    slab = t;
  }
  stash_slab(a, bin, slab);
}

/* Marks region p of slab free (the bin's counters are the caller's). magic is the slab
 * class's (class_info_t.magic), passed in so that a loop over one class keeps it in a
 * register. Returns false when the slab emptied and left the bin: its record may then
 * be gone. */
static inline bool free_region(arena_t *a, bin_t *bin, uint64_t magic, extent_t *slab, void *p) {
  lock_assert_held(&bin->lock);
  tessera_assert(slab->arena == a && &a->bins[slab->class_id] == bin);
  slab_region_mark_free(slab, magic, (uintptr_t)p);
  slab->nfree++;
  check_slab(slab);
  if (slab == bin->current) return true;
  if (slab->nfree == slab->nregs) {
    if (slab->nregs > 1) heap_remove(&bin->nonfull, slab);
    slab_empty(a, bin, slab);
    return false;
  }
  if (slab->nfree == 1) heap_insert(&bin->nonfull, slab); /* it was full: it has room again */
  return true;
}

void bin_free_locked(arena_t *a, bin_t *bin, extent_t *slab, void *p) {
  tessera_assert(bin->curregs > 0);
  free_region(a, bin, class_infos[slab->class_id].magic, slab, p);
  bin->ndalloc++;
  bin->curregs--;
}

/* The end of a run of blocks freed into slab (a cache's neighbours often share a
 * slab): count of them were freed, and the slab had before free regions. Its free count
 * and its place in its bin change once per run, not once per block. The slab may empty
 * and leave the bin: its record may then be gone. */
static inline __attribute__((always_inline)) void slab_run_freed(arena_t *a, bin_t *bin, extent_t *slab, unsigned before, unsigned count) {
  slab->nfree = before + count;
  check_slab(slab);
  if (slab == bin->current) return;
  if (slab->nfree == slab->nregs) {
    if (before > 0 && slab->nregs > 1) heap_remove(&bin->nonfull, slab);
    slab_empty(a, bin, slab);
  } else if (before == 0) {
    heap_insert(&bin->nonfull, slab); /* it was full: it has room again */
  }
}

void bin_release_empty(arena_t *a, unsigned c) {
  bin_t *bin = &a->bins[c];
  lock_acquire(&bin->lock);
  extent_t *current = bin->current;
  if (current != NULL && current->nfree == current->nregs) {
    bin->current = NULL;
    stash_slab(a, bin, current);
  }
  if (bin->spare != NULL) {
    extent_t *spare = bin->spare;
    bin->spare = NULL;
    stash_slab(a, bin, spare);
  }
  lock_release(&bin->lock);
}

unsigned bin_flush(arena_t *a, unsigned c, void **items, unsigned n) {
  bin_t *bin = &a->bins[c];
  unsigned kept = 0;
  lock_acquire(&bin->lock);
  uint64_t magic = class_infos[c].magic;
  extent_t *slab = NULL;
  uintptr_t slab_start = 0, slab_bytes = 0;
  unsigned before = 0, count = 0; /* the current run: slab's free count before it, blocks in it */
  for (unsigned i = 0; i < n; i++) {
    uintptr_t p = (uintptr_t)items[i];
    if (p - slab_start >= slab_bytes) {
      if (count > 0) slab_run_freed(a, bin, slab, before, count);
      count = 0;
      slab = pm_extent(pagemap_get(p));
      slab_start = slab->addr;
      slab_bytes = slab->npages * PAGE;
      before = slab->nfree;
    }
    if (slab->arena != a) { /* another arena's */
      items[kept++] = items[i];
      continue;
    }
    tessera_assert(&a->bins[slab->class_id] == bin);
    slab_region_mark_free(slab, magic, p);
    count++;
  }
  if (count > 0) slab_run_freed(a, bin, slab, before, count);
  tessera_assert(bin->curregs >= n - kept);
  bin->ndalloc += n - kept;
  bin->curregs -= n - kept;
  bin->nflushes++;
  lock_release(&bin->lock);
  return kept;
}
