/* SPDX-License-Identifier: MIT */
/*
 * prof_cache: malloc's thread-cache path with prof:true: the ordinary cache bins, popped
 * in their usual LIFO order, each counting down its blocks to its next sampled one.
 *
 * The sampler draws sample points at random over the allocated bytes (a Poisson process,
 * prof_sample.h): a block is sampled when a point falls in its bytes. For the blocks of
 * one class, of s bytes each, that is a draw per block with probability
 * 1 - exp(-s / period), independent of every other block: so each cache bin counts down
 * a number of blocks drawn for its class (prof_bin_arm: the draw of bytes jemalloc and
 * tcmalloc count down, divided by the class size), and the block that reaches zero is
 * sampled. The streams of all classes together, and the byte countdown of the blocks
 * that do not come from a bin (large ones, a thread without a cache), are the same
 * Poisson process over all bytes, and each sample is weighted as before.
 *
 * The count lives in the bin's nmalloc_raw, which malloc's fast path increments anyway:
 * biased (tcache_t.nmalloc_bias) so that it reaches 0 at the sampled block, it costs the
 * profiling entry one branch on the flags of that increment. malloc's default entry
 * cannot have the branch (with prof:false it must cost nothing), so with prof:true
 * malloc and calloc have a second entry whose fast path is prof_cache_pop (alloc.c),
 * and after boot the callers' PLT slots are pointed at it (got_patch.h). A caller still
 * on the default entry (not rewritten) is counted all the same: boot points the default
 * entry's size -> bin table at bins[0], which never caches, so every malloc there
 * misses its fast path, and the slow path starts here too. free's fast path is
 * unchanged, so a block freed is the next one malloc hands out for its class, as with
 * prof:false.
 *
 * (A design before this one kept the fast path and popped a second set of bins that
 * stopped at each class's next sample point: fewer instructions, but a freed block came
 * back only after the next slow path, and python3 ran 17-27% slower in user time for
 * the same instruction count; the one after it counted the thread's bytes down at every
 * malloc: three instructions more than the default entry, where this is one;
 * docs/profiling.md has the measurements.)
 */
#ifndef TESSERA_PROF_CACHE_H
#define TESSERA_PROF_CACHE_H

#include "hardened_key.h"
#include "thread.h"
#include "types.h"

/* prof_cache_lookup[(size + 15) >> 4], for any size up to LOOKUP_MAX: the byte offset in
 * a tcache_t of the size's bin (the default entry's table, which prof:true empties). */
extern INTERNAL uint16_t prof_cache_lookup[(LOOKUP_MAX >> 4) + 1];

/* Fills prof_cache_lookup (at boot, with prof:true). */
void prof_cache_boot(void);
/* Readies a new cache (prof:true): each bin's count held at its due point, unarmed, so
 * that the bin's first allocation through the profiling entry reaches the general path,
 * which draws the bin's countdown then (a thread pays for the draws of the classes it
 * uses, not of all of them). */
void prof_cache_arm(tcache_t *tc);
/* Whether the next block bin c of tc hands out is its sampled one (or the bin has not
 * drawn its countdown yet). */
static inline bool prof_bin_due(const tcache_t *tc, unsigned c) {
  return tc->bins[c + 1].nmalloc_raw == UINT64_MAX;
}
static inline bool prof_bin_armed(const tcache_t *tc, unsigned c) { return (tc->prof_armed_bins >> c) & 1; }
/* Draws bin c's countdown: after its due allocation (sampled or not), or first. */
void prof_bin_rearm(tcache_t *tc, unsigned c);

/* A block for size bytes from the calling thread's cache, counted; NULL when the size is
 * not cached, the bin is empty (or there is no cache yet), or this allocation is the
 * bin's sampled one: then the caller's general path decides. */
static inline void *prof_cache_pop(size_t size) {
  if (unlikely(size > LOOKUP_MAX)) return NULL;
  cache_bin_t *b = (cache_bin_t *)((char *)tls_thread.tcache + prof_cache_lookup[(size + 15) >> 4]);
  void **head = b->head;
  if (unlikely((uint16_t)(uintptr_t)head == b->low_empty)) return NULL;
  /* Counted in place, the flags of the increment deciding (compilers load, add, store
   * and test instead). The sampled block is left to the general path, the count held
   * one short of it (prof_bin_due). */
  bool reached;
#if defined(__x86_64__)
  __asm__("addq $1, %[n]" : [n] "+m"(b->nmalloc_raw), "=@ccz"(reached));
#else
  reached = ++b->nmalloc_raw == 0;
#endif
  if (unlikely(reached)) {
    b->nmalloc_raw = UINT64_MAX;
    return NULL;
  }
  b->head = head + 1;
  void *p = *head;
  ((block_word_t *)p)[1] = 0; /* the freed-block key, as malloc's fast path clears it */
  return p;
}

#endif
