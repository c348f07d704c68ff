/* SPDX-License-Identifier: MIT */
/*
 * Thread caches: per thread, one stack of free blocks (a cache bin) per cached class.
 * The fast paths (alloc.c, free.c) touch only the calling thread's cache; its slow
 * paths fill a bin from the arena and flush half of a full one back, and an incremental
 * GC returns what idle bins hold. A thread starts with tcache_empty (thread.h), so the
 * fast paths need no "initialised?" test.
 */
#ifndef TESSERA_TCACHE_H
#define TESSERA_TCACHE_H

#include "hardened_key.h"
#include "thread.h"
#include "types.h"

/* The bin of class c (bins are indexed by page-map code, c + 1). */
static inline cache_bin_t *tcache_bin(tcache_t *tc, unsigned c) { return &tc->bins[c + 1]; }

/* tcache_bin_offset_of_size[(size + 15) >> 4]: the byte offset in a tcache_t of the bin
 * of any size up to LOOKUP_MAX (malloc's fast path: one load instead of class + 1, << 6). */
extern INTERNAL uint16_t tcache_bin_offset_of_size[(LOOKUP_MAX >> 4) + 1];

/* malloc's fast path: a block of size's class popped from the calling thread's cache,
 * or NULL (a size beyond LOOKUP_MAX, an empty bin: the caller's slow path). No call and
 * no saved register, so that an entry can inline it and tail-call its slow path. */
static inline __attribute__((always_inline)) void *tcache_pop_size(size_t size) {
  if (unlikely(size > LOOKUP_MAX)) return NULL;
  cache_bin_t *b = (cache_bin_t *)((char *)tls_thread.tcache + tcache_bin_offset_of_size[(size + 15) >> 4]);
  void **head = b->head;
  if (unlikely((uint16_t)(uintptr_t)head == b->low_empty)) return NULL;
  b->head = head + 1;
  b->nmalloc_raw++; /* with prof:true this path is never taken (prof_cache.h) */
  void *p = *head;
  ((block_word_t *)p)[1] = 0; /* the freed-block key (hardened_key.h) */
  return p;
}

static inline unsigned cache_bin_count(const cache_bin_t *b) {
  return (unsigned)(b->slots + b->capacity - b->head);
}
/* Blocks this thread took from bin b of cache tc. */
static inline uint64_t cache_bin_nmalloc(const tcache_t *tc, const cache_bin_t *b) {
  return b->nmalloc_raw - tc->nmalloc_bias[b - tc->bins];
}
/* Frees this thread made into the bin: every block the bin handed out or sent back to
 * the arena came in by a fill or a free. */
static inline uint64_t cache_bin_ndalloc(const tcache_t *tc, const cache_bin_t *b) {
  return cache_bin_nmalloc(tc, b) + cache_bin_count(b) + b->nflushed - b->nfilled;
}
/* Counts a block a slow path took from bin b. With prof:true the count may reach the
 * bin's sample point here, away from the profiling entry: it is then held one short of
 * it (the bias takes the difference), so the next allocation through the entry is the
 * sampled one. */
static inline void cache_bin_count_malloc(tcache_t *tc, cache_bin_t *b) {
  if (unlikely(++b->nmalloc_raw == 0)) {
    b->nmalloc_raw = UINT64_MAX;
    tc->nmalloc_bias[b - tc->bins]--;
  }
}

bool tcache_boot(void);
/* Bytes mapped for the live thread caches (counted as metadata). */
size_t tcache_mapped_bytes(void);
/* The calling thread's cache, created if possible; NULL when the thread cannot have
 * one (tcache disabled, the thread is exiting, or we are inside cache creation). */
tcache_t *tcache_get(void);
/* The arena the calling thread allocates from (chosen on first use). */
arena_t *thread_arena(void);
/* The arena for an allocation by a thread whose cache is tc (NULL: none). */
static inline arena_t *current_arena(tcache_t *tc) { return tc != NULL ? tc->arena : thread_arena(); }
/* The same for a large block from the arena's extents: the thread may first move to
 * another arena when its own is busy with another thread (the arena balance). */
arena_t *tcache_large_arena(tcache_t *tc);
/* thread.arena: binds the calling thread to arena a for good (it never moves again). */
void thread_bind_arena(arena_t *a);

/* Exact class c is being made (exact_class.c, before any size maps to it): its bins'
 * capacities, within the room every cache reserved for its slot (the first class that
 * may have exact classes gets that much: the bigger classes as much or less). */
void tcache_exact_class_made(unsigned c);
/* Sets up tc's bin for exact class c (exact_class.h) if it has none yet and the class
 * exists: until then the bin never caches. */
void tcache_bin_setup_exact(tcache_t *tc, unsigned c);

/* Slow paths of the fast paths in malloc.c. */
void *tcache_alloc_refill(tcache_t *tc, unsigned c);
/* Pushes p onto bin c (which caches), first flushing the oldest half if it is full. */
void tcache_free_slow(tcache_t *tc, unsigned c, void *p);
/* Returns every cached block of tc to its arena. */
void tcache_flush_all(tcache_t *tc);
/* thread.tcache.flush: the calling thread's cache, if it has one. */
void tcache_flush_thread(void);
/* thread.tcache.enabled: whether the calling thread uses a cache; turning it off
 * returns every cached block first. */
bool tcache_thread_enabled(void);
void tcache_thread_enable(bool enable);
/* thread.allocated / thread.deallocated: bytes (usable sizes) the calling thread has
 * allocated and freed since it started; the counters thread.allocatedp points at are
 * brought up to date with them. */
void tcache_thread_counters(uint64_t *allocated, uint64_t *deallocated);

void tcache_fork_prepare(void);
void tcache_fork_parent(void);
void tcache_fork_child(void);

/* Calls f for each live thread cache, with the registry locked. */
void tcache_for_each(void (*f)(const tcache_t *, void *), void *arg);

#endif
