/* SPDX-License-Identifier: MIT */
/*
 * prof_cache: the thread cache's fast path kept with prof:true, stopped exactly where
 * the next sample falls.
 *
 * The sampler counts every allocated byte down to the next sample point; malloc's fast
 * path has no counter, so with prof:true it pops a second set of bins instead
 * (tcache_t.prof_bins, one per cached class, reached through malloc's size -> bin table)
 * while free keeps pushing onto the ordinary bins (the free map points there). Only
 * malloc moves a prof bin's head, so the blocks a prof bin hands out between two slow
 * paths are exactly the pops between its head and its stop (low_empty, set short of the
 * stack's end): the "allowance". Every allowance is charged to the thread's countdown
 * when it is granted (prof_thread_t.bytes_until_sample counts the bytes to the sample
 * point less every outstanding allowance), so the fast path can never pass the sample
 * point: the allocation that crosses it always meets a slow path, where the allowances
 * are taken back (prof_cache_reclaim: the bytes not handed out are refunded, the blocks
 * stay parked in their bins) and the crossing is decided on the exact count.
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

/* Blocks a prof bin holds at most. */
#define PROF_CACHE_SLOTS 128

/* The prof bin of class c. */
static inline cache_bin_t *prof_cache_bin(tcache_t *tc, unsigned c) { return &tc->prof_bins[c + 1]; }

/* Stack slots a thread cache must reserve for its prof bins (0 with prof:false). */
size_t prof_cache_slots(void);
/* Places the prof bins' empty stacks from slot on (for the classes tc caches); returns
 * the slot after them. */
void **prof_cache_place(tcache_t *tc, void **slot);
/* Takes back every outstanding allowance of tc (the calling thread's cache) and returns
 * the bytes refunded; blocks stay parked in their prof bins. */
int64_t prof_cache_reclaim(tcache_t *tc);
/* The same for half of every allowance (the bins keep popping, to their nearer stops). */
int64_t prof_cache_reclaim_half(tcache_t *tc);
/* A parked block of class c (its freed-block key cleared), or NULL. */
void *prof_cache_take(tcache_t *tc, unsigned c);
/* After an allocation of class c at a slow path: refills c's prof bin from its ordinary
 * bin and grants it half of t's remaining countdown (charged to t). */
void prof_cache_arm(tcache_t *tc, unsigned c, prof_thread_t *t);
/* Returns every block in tc's prof bins to its arena (before a flush or the cache's end;
 * tc is the calling thread's cache). */
void prof_cache_flush(tcache_t *tc);

#endif
