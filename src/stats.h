/* SPDX-License-Identifier: MIT */
/*
 * Statistics: snapshots of every counter, merged on read from the arenas' bins and
 * extent sets and from the live thread caches. The control interface keeps one
 * (stats_ctl_snapshot, refreshed by writing `epoch`, as jemalloc does); the printers
 * another (stats_print_snapshot). Each snapshot has a lock of its own, first in the lock
 * order (src/README.md): numbers are gathered under the allocator's locks into the
 * snapshot, and read or printed afterwards with only the snapshot's lock held.
 *
 * The caller has booted the allocator (init.h).
 */
#ifndef TESSERA_STATS_H
#define TESSERA_STATS_H

#include "tessera.h"
#include "thread_stats.h"
#include "types.h"

typedef struct stats_lock {
  uint64_t num_ops;         /* acquisitions */
  uint64_t num_wait;        /* acquisitions that found the lock held */
  uint64_t total_wait_time; /* ns */
  uint64_t max_wait_time;   /* ns */
} stats_lock_t;

typedef struct bin_stats {
  uint64_t nmalloc, ndalloc, nrequests, nfills, nflushes, nslabs;
  uint64_t nlent; /* regions lent to smaller classes (bin.h), also counted in nmalloc */
  size_t curregs, curslabs;
  stats_lock_t lock;
} bin_stats_t;

typedef struct lextent_stats {
  uint64_t nmalloc, ndalloc;
  size_t curlextents;
} lextent_stats_t;

typedef struct arena_stats {
  bool initialized;       /* the arena existed at the refresh (the merged record: true) */
  uint64_t uptime_ns;     /* since the arena was made (merged: arena 0's, since boot) */
  /* Metadata, as jemalloc splits it: base (the base allocator, the page map and the free
   * map) and internal (the thread caches). Shared by every arena, so each arena's own
   * record counts in its base, and the rest in arena 0's, the one the allocator boots
   * with. resident: active + dirty pages, plus the base allocator's and the caches' part. */
  size_t base, internal, resident;
  unsigned nthreads;      /* threads bound */
  unsigned ntcaches;      /* live thread caches attached */
  size_t tcache_bytes;    /* bytes of blocks sitting in those caches */
  size_t pactive, pdirty, pmuzzy, pretained, mapped; /* pages, except mapped (bytes) */
  size_t small_allocated, large_allocated; /* bytes handed out (tcache blocks included) */
  uint64_t small_nmalloc, small_ndalloc, small_nrequests;
  uint64_t large_nmalloc, large_ndalloc;
  uint64_t npurge, nmadvise, purged, lazy_freed; /* purge passes, madvise calls, pages */
  uint64_t reused_muzzy, reused_released; /* pages taken back into use after a purge */
  uint64_t gathered; /* resident free pages moved under new large blocks */
  stats_lock_t extent_lock;
  bin_stats_t bins[NSMALL];
  lextent_stats_t lextents[NLARGE_CLASSES]; /* per large size class */
} arena_stats_t;

typedef struct stats_snapshot {
  /* its lock: stats_snapshot_lock */
  uint64_t epoch;       /* refreshes so far */
  unsigned narenas;     /* arenas_count() at the refresh */
  unsigned nautomatic;  /* automatic arenas (the rest were made by arenas.create) */
  tessera_counters totals;
  arena_stats_t merged; /* every arena added up */
  arena_stats_t *arenas[MAX_ARENAS]; /* NULL: the arena did not exist (reads as zero) */
  stats_lock_t base_lock;
  unsigned ntcaches;
  size_t tcache_bytes;
  uint64_t tcache_blocks[NCACHED_MAX]; /* blocks cached per class, over every thread */
  unsigned tcache_capacity_max[NCACHED_MAX]; /* the largest bin of each class (blocks) a live cache has */
  unsigned ncpus;         /* CPUs the process may run on, at the refresh */
  unsigned nthreads_peak; /* most threads bound at once (arenas.nthreads_peak) */
  thread_table_t threads; /* by thread name: exited threads, plus the live ones */
} stats_snapshot_t;


extern stats_snapshot_t stats_ctl_snapshot;
extern stats_snapshot_t stats_print_snapshot;

/* Refreshes s; the caller holds its lock (stats_snapshot_lock). May allocate (the per-arena records): no
 * allocator lock may be held. */
void stats_refresh(stats_snapshot_t *s);
void stats_snapshot_lock(stats_snapshot_t *s);
void stats_snapshot_unlock(stats_snapshot_t *s);
/* Arena i's numbers in s: zeros when it does not exist; the merged numbers for i ==
 * ARENAS_ALL. */
const arena_stats_t *stats_arena(const stats_snapshot_t *s, size_t i);

/* fork: the snapshot locks, first in the lock order. */
void stats_fork_prepare(void);
void stats_fork_release(void);

#endif
