/* SPDX-License-Identifier: MIT */
/*
 * prof_cache: the thread cache's fast path kept with prof:true, stopped exactly where
 * the next sample falls.
 *
 * The sampler draws sample points at random over the allocated bytes (a Poisson process,
 * prof_sample.h); malloc's fast path has no byte counter, so with prof:true it pops a
 * second set of bins instead (tcache_t.prof_bins, one per cached class, reached through
 * malloc's size -> bin table) while free keeps pushing onto the ordinary bins (the free
 * map points there). Only malloc moves a prof bin's head, so the blocks a prof bin hands
 * out between two slow paths are exactly the pops between its head and its stop
 * (low_empty, set short of the stack's end): the "allowance".
 *
 * Each cached class counts its own sample points, in blocks: a Poisson process over all
 * bytes, restricted to the bytes of one class, is a Poisson process of the same rate, so
 * the number of class-c blocks up to and including the next sampled one is geometric
 * (drawn by prof_blocks_until_sample) and every block is still sampled with probability
 * 1 - e^(-size/mean), independently of every other. The prof bin keeps that count
 * (blocks_left, below) and its allowance is always less than it: the pop that reaches
 * the sampled block always meets malloc's slow path, which settles the pops (they are
 * read off the prof bin's own nmalloc) and decides on the exact count. No allowance is
 * ever taken back, and no bin waits for another. Every allocation outside the prof bins
 * counts down the thread's byte countdown instead (prof_alloc_due), a stream of its own.
 *
 * A prof bin is filled from its ordinary bin (the newest blocks, moved, no lock), so a
 * malloc/free pair loop reuses a stack's worth of blocks instead of one, and the
 * ordinary bin's counters see each block once: moved blocks count as not yet filled
 * (nfilled - n) until they are popped (nmalloc + 1, nfilled + 1) or flushed.
 */
#ifndef TESSERA_PROF_CACHE_H
#define TESSERA_PROF_CACHE_H

#include "prof_sample.h"
#include "types.h"

/* Blocks a prof bin holds at most; and (PROF_CACHE_BYTES) at most 16 KiB of blocks,
 * but PROF_CACHE_MIN blocks whatever their size. */
#define PROF_CACHE_SLOTS 128
#define PROF_CACHE_BYTES ((size_t)16 << 10)
#define PROF_CACHE_MIN 4

/* The prof bin of class c. */
static inline cache_bin_t *prof_cache_bin(tcache_t *tc, unsigned c) { return &tc->prof_bins[c + 1]; }
/* Blocks malloc's fast path popped from c's prof bin since its last slow path (counted
 * in the ordinary bin's nmalloc only at the next one). */
static inline uint64_t prof_cache_unsettled(const tcache_t *tc, unsigned c) {
  const cache_bin_t *m = &tc->prof_bins[c + 1];
  return m->nmalloc - m->gc_nmalloc;
}

/* At boot with prof:true: the per-class limits. */
void prof_cache_boot(void);
/* malloc's slow path with prof:true, the common case, for a request of size bytes: the
 * prof bin of its class is settled and re-armed and a block handed out, when this
 * allocation is not its class's sampled one and a block is at hand (parked, or on the
 * ordinary bin). NULL: the full path decides (prof_cache_due, prof_cache_take, ...). */
void *prof_cache_next(size_t size);
/* Stack slots a thread cache must reserve for its prof bins (0 with prof:false). */
size_t prof_cache_slots(void);
/* Places the prof bins' empty stacks from slot on (for the classes tc caches); returns
 * the slot after them. */
void **prof_cache_place(tcache_t *tc, void **slot);
/* At malloc's slow path, for an allocation of class c (whose prof bin caches): settles
 * the fast path's pops and counts this allocation; true when it is the sampled one
 * (with prof.active off or inside the profiler, the sample point passes unsampled). */
bool prof_cache_due(tcache_t *tc, unsigned c, prof_thread_t *t);
/* A parked block of class c (its freed-block key cleared), or NULL: then the caller
 * allocates from the ordinary bin, which may have been emptied (its few blocks parked)
 * so that it refills with a batch. */
void *prof_cache_take(tcache_t *tc, unsigned c);
/* After an unsampled allocation of class c at a slow path: refills c's prof bin from its
 * ordinary bin and lets the fast path pop up to the block before the next sampled one. */
void prof_cache_arm(tcache_t *tc, unsigned c);
/* Returns every block in tc's prof bins to its arena (before a flush or the cache's end;
 * tc is the calling thread's cache). */
void prof_cache_flush(tcache_t *tc);

#endif
