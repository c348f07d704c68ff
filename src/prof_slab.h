/* SPDX-License-Identifier: MIT */
/*
 * prof_slab: with prof:true, the slabs kept for the sampled blocks of the small classes
 * up to PROF_SLAB_MAX_SIZE bytes ("sample slabs"), so that no ordinary block shares a
 * page with a sampled one.
 *
 * Why: free's fast path finds a block's cache bin through the free map (free_map.h).
 * The profiler must see the free of every sampled block, so a sampled block's page
 * cannot name a bin there. Had the sampled block stayed in an ordinary slab, its page
 * would have been sent to free's slow path with every live neighbour on it (up to 256
 * blocks of 16 B on a page), each paying free's general path. In a sample slab every
 * block is a sampled one, and its pages are sent to the slow path for as long as the
 * slab is one. Measured (docs/profiling.md): the neighbours were a small part of what
 * prof:true costs the batch pattern (the samples themselves are most of it); sample
 * slabs took 1.045 -> 1.038 off batch-1's instructions over prof:false, and cost the
 * page of each sampled class's slab (+100-400 KiB in small programs).
 *
 * Each arena keeps, per class, the slab it takes sampled blocks from and its other
 * sample slabs that have free regions (lowest address first), under the class's bin
 * lock, whose counters they share (stats see the blocks as the bin's). A sample slab
 * is an ordinary slab of the class (bin_slab_new) whose extent has `sampled` set and
 * whose pages' free-map entries name no bin. When its last block is freed it goes back
 * to the arena's stash as an ordinary empty slab, unless it is the one samples are
 * taken from: so an arena keeps at most one empty sample slab per class (4-7 pages),
 * and the others hold at least one live sampled block each.
 *
 * Larger cached classes (a few blocks a page) keep their sampled blocks in place, their
 * first page sent to the slow path (prof_hooks.c).
 */
#ifndef TESSERA_PROF_SLAB_H
#define TESSERA_PROF_SLAB_H

#include "size_class.h"
#include "types.h"

#define PROF_SLAB_MAX_SIZE 1024

/* Whether a sampled block of cached class c comes from a sample slab. */
static inline bool prof_slab_class(unsigned c) { return c < NSMALL && class_infos[c].size <= PROF_SLAB_MAX_SIZE; }

/* Whether extent e, which holds a block being freed, is a sample slab. */
static inline bool prof_slab_holds(const extent_t *e) {
  return __atomic_load_n(&e->sampled, __ATOMIC_RELAXED) != 0 && e->state == EXTENT_SLAB && prof_slab_class(e->class_id);
}

/* A region of class c (prof_slab_class) from arena a's sample slabs, counted by the
 * bin as a request; NULL when the OS refuses memory. The freed-block key is not
 * cleared (the caller's alloc_counted does it). */
void *prof_slab_alloc(arena_t *a, unsigned c);
/* Returns region p of sample slab e (checked by free's lookup, forgotten by the
 * profiler). Aborts if it is free already ("invalid pointer"). */
void prof_slab_free(extent_t *e, void *p);

#endif
