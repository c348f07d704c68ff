/* SPDX-License-Identifier: MIT */
/*
 * Bins: an arena's slabs of one small class. Regions are handed out from the current
 * slab; when it is full the next comes from the non-full slabs, lowest address first
 * (reusing low addresses first keeps the heap compact: the empty slabs left high up can
 * be returned), then the one spare empty slab, then a slab from the arena's stash of
 * empty slabs of the class (stash.c), then a new slab.
 */
#ifndef TESSERA_BIN_H
#define TESSERA_BIN_H

#include "types.h"

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
/* Returns to arena a's bin of class c, under one acquisition of its lock, every block of
 * items[0 .. n) whose slab belongs to a; the others are moved to the front of items and
 * counted in the result. */
unsigned bin_flush(arena_t *a, unsigned c, void **items, unsigned n);

#endif
