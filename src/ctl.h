/*
 * The control interface (ctl.c: tessera_ctl and the name tree of docs/ctl.md) and the
 * statistics snapshots it reads (stats.c).
 *
 * A snapshot holds every counter of every arena, merged on read from the arenas' bins
 * and extent sets and from the live thread caches. ctl.c keeps one, refreshed by
 * writing `epoch` (as jemalloc does); the printers take their own. Each snapshot has a
 * lock of its own, taken before any allocator lock (lock order: snapshot lock ->
 * arenas_lock -> bin locks -> extent lock -> base lock); it is held by fork's prepare
 * handler too, so a child never inherits it held.
 */
#ifndef TESSERA_CTL_H
#define TESSERA_CTL_H

#include "tessera.h"
#include "types.h"

typedef struct stats_lock {
  uint64_t num_ops;         /* acquisitions */
  uint64_t num_wait;        /* acquisitions that found the lock held */
  uint64_t total_wait_time; /* ns */
  uint64_t max_wait_time;   /* ns */
} stats_lock_t;

typedef struct bin_stats {
  uint64_t nmalloc, ndalloc, nrequests, nfills, nflushes, nslabs;
  size_t curregs, curslabs;
  stats_lock_t lock;
} bin_stats_t;

typedef struct lextent_stats {
  uint64_t nmalloc, ndalloc;
  size_t curlextents;
} lextent_stats_t;

typedef struct arena_stats {
  unsigned nthreads;      /* threads bound */
  unsigned ntcaches;      /* live thread caches attached */
  size_t tcache_bytes;    /* bytes of blocks sitting in those caches */
  size_t pactive, pdirty, pmuzzy, pretained, mapped; /* pages, except mapped (bytes) */
  size_t small_allocated, large_allocated; /* bytes handed out (tcache blocks included) */
  uint64_t small_nmalloc, small_ndalloc, small_nrequests;
  uint64_t large_nmalloc, large_ndalloc;
  uint64_t npurge, nmadvise, purged, lazy_freed; /* purge passes, madvise calls, pages */
  stats_lock_t extent_lock;
  bin_stats_t bins[NSMALL];
  lextent_stats_t lextents[NLARGE_CLASSES]; /* per large size class */
} arena_stats_t;

typedef struct stats_snapshot {
  lock_t lock;
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
} stats_snapshot_t;

/* stats.c. Refreshes s; the caller holds s->lock. */
void stats_refresh(stats_snapshot_t *s);
/* Takes and releases a snapshot's lock (registering the fork handlers on first use). */
void stats_snapshot_lock(stats_snapshot_t *s);
void stats_snapshot_unlock(stats_snapshot_t *s);
/* Arena i's numbers in s: zeros when it does not exist; the merged numbers for i ==
 * CTL_ARENAS_ALL. */
#define CTL_ARENAS_ALL 4096u
const arena_stats_t *stats_arena(const stats_snapshot_t *s, size_t i);

/* ctl.c */
typedef enum ctl_type {
  CTL_VOID, /* an action: no value to read or write */
  CTL_BOOL,
  CTL_UNSIGNED,
  CTL_U32,
  CTL_SIZE,
  CTL_SSIZE,
  CTL_U64,
  CTL_STRING, /* const char * */
} ctl_type_t;

/* Calls f for every name in the tree, indices written <i> (arenas) and <j> (bins),
 * with its type and whether it can be written. For the docs test. */
void ctl_for_each_name(void (*f)(const char *name, ctl_type_t type, bool writable, void *arg), void *arg);
const char *ctl_type_name(ctl_type_t type);

#endif
