/* SPDX-License-Identifier: MIT */
/*
 * Bins: an arena's slabs of one small class. Regions are handed out from the current
 * slab; when it is full the next comes from the non-full slabs, lowest address first
 * (reusing low addresses first keeps the heap compact: the empty slabs left high up can
 * be returned), then the one spare empty slab, then regions lent by a larger sparse
 * class (below, bin_may_lend), then a slab from the arena's stash of empty slabs of the
 * class (stash.c), then a new slab.
 */
#ifndef TESSERA_BIN_H
#define TESSERA_BIN_H

#include "config.h"
#include "fatal.h"
#include "lock.h"
#include "options.h"
#include "size_class.h"
#include "types.h"

/* Whether a class of lender_size bytes may lend its free regions to a class of
 * class_size bytes that needs a new slab (bin.c, "Lending"): larger, at most
 * LEND_MAX_RATIO times (the lent block wastes at most what the hole it fills wasted
 * already), and aligned at least as well: every region of a class is aligned to its
 * size's largest power of two (up to a page), which aligned_alloc relies on. Hardened
 * mode, whose sized frees must name the block's own class, does not lend, nor does
 * lending:false. */
#define LEND_MAX_RATIO 4
static inline size_t region_alignment(size_t size) {
  size_t low = size & -size;
  return low < PAGE ? low : PAGE;
}
static inline bool bin_lending_on(void) { return opt_lending && !opt_hardened; }

static inline bool bin_may_lend(size_t lender_size, size_t class_size) {
  return bin_lending_on() && lender_size > class_size && lender_size <= LEND_MAX_RATIO * class_size &&
         region_alignment(lender_size) >= region_alignment(class_size);
}

/* Takes bin's lock (bin of arena a). While fork's handlers hold a's gate (arena.c), a
 * lock just taken is given back until the gate opens: the handlers wait for the bins'
 * locks to be free instead of taking every one, which the parent would write again
 * after fork (each page of them copied: copy on write). No bin lock is ever taken with
 * another allocator lock held but the stats snapshot's, which the handlers take before
 * they close the gate, so a thread that waits here holds nothing they wait for. */
void bin_lock_wait_fork(arena_t *a, bin_t *bin);
static inline void bin_lock(arena_t *a, bin_t *bin) {
  lock_acquire(&bin->lock);
  if (unlikely(atomic_load(&a->fork_gate))) bin_lock_wait_fork(a, bin);
}

/* Takes up to n regions of class c from arena a into out[], lowest address first.
 * Returns how many it got (0 only when the OS refused memory). Locks the bin. */
unsigned bin_fill(arena_t *a, unsigned c, void **out, unsigned n);
/* A slab of class c for arena a, every region free (its stash's lowest, else new);
 * NULL when the OS refuses memory. The caller holds the bin's lock or owns the slab
 * otherwise (the heap profiler's sample slabs: prof_slab.h). */
extent_t *bin_slab_new(arena_t *a, unsigned c);
/* One region for a caller without a thread cache (counted as a request). */
void *bin_alloc_one(arena_t *a, unsigned c);
/* Returns region p of slab to its bin; the caller holds the bin's lock and has checked
 * that p starts a region. Aborts if the region is free already ("invalid pointer"). */
void bin_free_locked(arena_t *a, bin_t *bin, extent_t *slab, void *p);
/* Marks the region of slab at offset bytes from its start (_at), or region p, free in the
 * slab's bitmap, magic being its class's
 * (class_info_t.magic: a loop over one class keeps it in a register); the slab's free
 * count and its place among its bin's slabs are the caller's. A region found free
 * already aborts ("invalid pointer"): a double free is caught before, at the second
 * free, by the freed-block key (hardened_key.h), so such a block was never handed out
 * (or its key was overwritten after its free). */
static inline void slab_region_mark_free_at(extent_t *slab, uint64_t magic, uint32_t offset) {
  uint32_t idx = magic_quotient(magic, offset);
  tessera_assert(idx < slab->nregs && (uintptr_t)idx * class_infos[slab->class_id].size == offset);
  uint64_t bit = (uint64_t)1 << (idx % 64), word = slab->bitmap[idx / 64];
  if (unlikely(word & bit)) fatal_pointer("free()", "invalid pointer", (void *)(slab->addr + offset));
  slab->bitmap[idx / 64] = word | bit;
  if (idx / 64 < slab->first_word) slab->first_word = idx / 64;
}
static inline void slab_region_mark_free(extent_t *slab, uint64_t magic, uintptr_t p) {
  slab_region_mark_free_at(slab, magic, (uint32_t)(p - slab->addr));
}
/* Returns to arena a's bin of class c, under one acquisition of its lock, every block of
 * items[0 .. n) whose slab belongs to a and is of class c; the others (another arena's,
 * or lent by another class) are moved to the front of items and counted in the result. */
unsigned bin_flush(arena_t *a, unsigned c, void **items, unsigned n);
/* Gives arena a's bin of class c's empty slabs (its current one if empty, its spare)
 * to the arena's stash, where every class's new slabs and decay find them: for a class
 * the program stopped using. */
void bin_release_empty(arena_t *a, unsigned c);

#endif
