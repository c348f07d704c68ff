/* SPDX-License-Identifier: MIT */
/*
 * prof_sample: which allocations are sampled, and what is remembered about them.
 *
 * Sampling is by bytes: each thread counts down a random number of bytes drawn from an
 * exponential distribution with mean 2^lg_prof_sample; the allocation that crosses zero
 * is sampled. A block of size s is then sampled with probability p(s) = 1 - e^(-s/mean)
 * (a Poisson process over the allocated bytes), so counting it as 1/p(s) objects and
 * s/p(s) bytes gives unbiased estimates (docs/profiling.md).
 *
 * A sampled block's record lives here, out of band, in one of PROF_SHARDS hash tables by
 * pointer, each with its own lock and its own record filter, chosen by the allocator
 * (the arena of the block's extent): threads of different arenas, which sample at once,
 * write no common line. The allocator marks sampled blocks so
 * that free only calls prof_record_free for them. Stacks are interned (deduplicated by
 * hash, found without a lock) and never freed; their live and cumulative counters are
 * kept per shard and added up by the snapshots. All memory comes from base_alloc, and
 * both tables have a bound (beyond it a sample is dropped and counted).
 */
#ifndef TESSERA_PROF_SAMPLE_H
#define TESSERA_PROF_SAMPLE_H

#include "prof_unwind.h"
#include "types.h"

/* Per-thread state: 32 bytes the allocator keeps in its thread data, zero-initialized. */
typedef struct prof_thread {
  /* The allocator subtracts each usable size; at or below zero it calls
   * prof_sample_alloc. Starts at 0: the first allocation draws the first interval
   * (prof_sample_first_due). */
  int64_t bytes_until_sample;
  uint64_t interval; /* the last interval drawn (0: none yet) */
  uint64_t prng;
  bool busy; /* inside the profiler: nested allocations are never sampled */
  /* Set by an allocator entry around its sampled allocation (PROF_SAMPLE_FROM_HERE):
   * the capture starts from these registers (prof_unwind_capture_from) instead of
   * unwinding the allocator's own frames. NULL: a full capture. */
  prof_regs_t *unwind_start;
} prof_thread_t;

/* How the allocator marks a sampled block so that its free reaches the profiler; key is
 * the one the block was recorded with (prof_record_alloc_marked). */
typedef struct prof_mark {
  bool (*mark)(uintptr_t ptr, uintptr_t key);
  void (*forget)(uintptr_t ptr, uintptr_t key);
} prof_mark_t;

typedef struct prof_config {
  unsigned lg_sample;   /* mean sample interval 2^lg_sample bytes (0..40) */
  unsigned max_depth;   /* frames kept per stack (1..PROF_DEPTH_MAX) */
  unsigned max_stacks;  /* distinct stacks kept */
  unsigned max_records; /* sampled blocks live at once */
} prof_config_t;

#define PROF_CONFIG_DEFAULT {19, 64, 1u << 16, 1u << 20}

typedef struct prof_counts {
  uint64_t live_objects, live_bytes;   /* sampled blocks now live, raw */
  uint64_t alloc_objects, alloc_bytes; /* sampled blocks ever, raw */
  double live_est_objects, live_est_bytes;   /* unbiased estimates */
  double alloc_est_objects, alloc_est_bytes;
} prof_counts_t;

/* The record tables: a power of two. */
#define PROF_SHARDS 16

struct shard_counts;
/* Laid out for the look-up (base memory is aligned to 64): the hash, the depth and the
 * first frames share the third cache line; the counters' pointer of one shard is read
 * from the first two. */
typedef struct prof_stack {
  /* Its counters in each shard that has recorded it (NULL: none yet), written once under
   * that shard's lock. */
  struct shard_counts *per_shard[PROF_SHARDS];
  struct prof_stack *next_in_order; /* every stack, newest first (for snapshots) */
  unsigned index; /* 0 for the first stack interned, 1 for the next, ... */
  unsigned depth;
  uint64_t hash;
  uintptr_t pcs[]; /* innermost first */
} prof_stack_t;

extern _Atomic bool prof_active_now; /* prof.active */

/* At a sample point: whether to take the sample (prof.active, and not inside the
 * profiler already). */
static inline bool prof_sample_wanted(const prof_thread_t *t) {
  return atomic_load_explicit(&prof_active_now, memory_order_relaxed) && !t->busy;
}

/* Sets the parameters and readies the tables (idempotent; before the first sample). */
void prof_sample_init(const prof_config_t *config);
/* The current mean interval in bytes. */
uint64_t prof_sample_period(void);

/* Draws the next interval for t (also seeds t's generator on first use). */
uint64_t prof_bytes_until_sample(prof_thread_t *t);
/* For a stream of blocks of usize bytes each (a cache bin's): how many blocks up to and
 * including the next sampled one, drawn with t's generator. The same process as the
 * byte countdown's, counted in blocks. */
uint64_t prof_blocks_until_sample(prof_thread_t *t, size_t usize);
/* The same, given 1.0 / usize (no division). */
uint64_t prof_blocks_until_sample_inv(prof_thread_t *t, double inv_usize);

/* The fast-path test, for the allocator to inline. */
static inline bool prof_sample_due(prof_thread_t *t, size_t usize) {
  t->bytes_until_sample -= (int64_t)usize;
  return unlikely(t->bytes_until_sample <= 0);
}

/* Slow path after prof_sample_due: captures the stack (leaving out prof_sample_alloc and
 * the skip frames above it), records ptr as sampled and draws the next interval.
 * Returns true if ptr is now sampled (the allocator then marks the block so its free
 * calls prof_record_free). Call with no allocator lock held. */
bool prof_sample_alloc(prof_thread_t *t, void *ptr, size_t usize, unsigned skip);
/* prof_sample_due, without the bias of the zero start: on a thread's first allocation
 * the first interval is drawn and the block is due only if that interval ends in it. */
static inline bool prof_sample_first_due(prof_thread_t *t, size_t usize) {
  if (!prof_sample_due(t, usize)) return false;
  if (t->interval != 0) return true;
  prof_bytes_until_sample(t);
  return prof_sample_due(t, usize);
}

/* prof_sample_alloc, without drawing the next interval (the caller decided the sample
 * and drew it), leaving out the allocator's own frames: every frame up to and
 * including the outermost one, among the innermost PROF_TRIM_FRAMES, whose PC lies in
 * [lo, hi) (the allocator's entry points). Without such a frame nothing is left out. */
#define PROF_TRIM_FRAMES 12
bool prof_sample_alloc_outside(prof_thread_t *t, void *ptr, uintptr_t key, unsigned shard, size_t usize, uintptr_t lo,
                               uintptr_t hi, const prof_mark_t *mark);

/* prof.reset: forgets every sampled block and zeroes every stack's counters, then sets
 * the mean interval to 2^lg_sample. */
void prof_sample_reset(unsigned lg_sample);
/* The current lg of the mean interval. */
unsigned prof_sample_lg(void);

/* The shard of a record the allocator keys by its own value (prof_record_alloc's, by
 * the pointer): a hash of it. */
unsigned prof_shard_of(uintptr_t key);
/* A hint, before a sample's stack is captured: the lines of shard `shard` its record of
 * a block of usize bytes will write (the capture's few hundred instructions hide their
 * misses). */
void prof_record_prefetch(unsigned shard, size_t usize);

/* Records ptr (of usable size usize) with an already captured stack (its shard by ptr). */
bool prof_record_alloc(void *ptr, size_t usize, const uintptr_t *pcs, unsigned depth);
/* The same for a block the allocator marks in place (mark may be NULL), in shard `shard`
 * (< PROF_SHARDS; the same key and shard must be given to free it; marks made under one
 * shard's lock are serialized: blocks whose marks share state must share a key and a
 * shard): mark->mark runs under
 * the shard's lock once the record is in (false: the block cannot be marked, the record
 * is dropped), mark->forget under that lock when the record goes (free, realloc,
 * prof.reset). */
bool prof_record_alloc_marked(void *ptr, uintptr_t key, unsigned shard, size_t usize, const uintptr_t *pcs,
                              unsigned depth, const prof_mark_t *mark);
/* Forgets a sampled block recorded under key in shard (free, or the old block of a
 * realloc). Returns false if ptr was not sampled. Most frees of blocks that were not
 * sampled (the neighbours of a sampled block on its marked page) leave at the shard's
 * record filter, without the lock: a filter of the shard's live records' counts by
 * hashed address, read without a lock (one per shard, allocated with the shard's first
 * record, so that threads of different arenas write no common line of it). */
bool prof_record_free_keyed(void *ptr, uintptr_t key, unsigned shard);
/* prof_record_free_keyed for a block recorded by prof_record_alloc (key ptr). */
bool prof_record_free(void *ptr);


/* The unbiasing weight of one sampled block: 1 / (1 - e^(-usize / period)). */
double prof_sample_weight(size_t usize, uint64_t period);

/* A consistent copy of every stack's counters, for the writers. */
typedef struct prof_snapshot_entry {
  const prof_stack_t *stack; /* stacks are never freed: the pointer stays valid */
  prof_counts_t counts;
} prof_snapshot_entry_t;

typedef struct prof_snapshot {
  prof_snapshot_entry_t *entries;
  unsigned count;
  size_t alloc_size;
  uint64_t period;
  prof_counts_t total;
  uint64_t dropped; /* samples lost to the table bounds */
} prof_snapshot_t;

/* Fills s (memory from base_alloc); false if that memory cannot be had. */
bool prof_snapshot_take(prof_snapshot_t *s);
void prof_snapshot_release(prof_snapshot_t *s);
/* Sorts entries by estimated live bytes, largest first (heap sort: no allocation). */
void prof_snapshot_sort_live(prof_snapshot_t *s);
/* Sorts entries by estimated bytes allocated since the start, largest first. */
void prof_snapshot_sort_allocated(prof_snapshot_t *s);

/* fork: every table lock (the stacks', each shard's), taken in prepare, released in
 * parent and child. */
void prof_sample_fork_prepare(void);
void prof_sample_fork_parent(void);
void prof_sample_fork_child(void);

#endif
