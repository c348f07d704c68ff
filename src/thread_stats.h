/* SPDX-License-Identifier: MIT */
/*
 * Per-thread statistics by thread name (the JSON statistics' `threads` section): the
 * requests, fills and flushes each thread's cache counted, summed over the threads that
 * share a name, exited threads included.
 *
 * Nothing here touches the fast paths. A thread gets a record on a registry when it
 * first chooses an arena (arena.c); at its exit an observer (an exit hook of its own,
 * set up before the thread caches' hook so that it runs first) adds what its cache
 * counted to the table of exited threads under the thread's current name and frees the
 * record. The printers add the live threads' caches (stats.c), named by the kernel
 * (/proc/self/task/<tid>/comm), to that table.
 */
#ifndef TESSERA_THREAD_STATS_H
#define TESSERA_THREAD_STATS_H

#include "thread.h"
#include "types.h"

#define THREAD_NAME_LEN 16 /* the kernel's limit, NUL included */
#define THREAD_NAMES_MAX 64 /* distinct names kept; the rest are summed under "(other)" */
#define THREAD_STATS_OTHER "(other)"

typedef struct thread_counts {
  char name[THREAD_NAME_LEN];
  uint64_t nthreads;  /* threads counted under the name, live and exited */
  uint64_t nexited;   /* of which exited */
  uint64_t nrequests; /* allocations served through their caches */
  uint64_t nfilled;   /* blocks moved into their caches from arenas */
  uint64_t nflushed;  /* blocks moved out of their caches to arenas */
  uint64_t lock_wait_ns; /* time waited on allocator locks (0 unless lock.c counts it) */
  int arena;          /* the arena of the last thread counted; -1 if they differed */
} thread_counts_t;

/* A registered thread, in the registry's own memory (thread_stats.c says why not in the
 * thread's). */
typedef struct thread_record {
  uint32_t tid;
  bool live;                 /* on the registry (else on the free list) */
  char name[THREAD_NAME_LEN]; /* at registration: the name if its exit hook never runs */
  uint64_t lock_wait_ns;     /* the thread's lock_wait_ns as it last published it */
  const tcache_t *cache;     /* its cache, or NULL */
  struct thread_record *next, *prev;
} thread_record_t;

typedef struct thread_table {
  unsigned n;
  thread_counts_t names[THREAD_NAMES_MAX];
} thread_table_t;

/* Sets up the exit observer; call before tcache_boot (its hook must run first). */
bool thread_stats_boot(void);
/* Puts the calling thread on the registry (once; arena choice calls it). */
void thread_stats_register(void);
/* The calling thread's cache is now tc (NULL: it has none any more). */
void thread_stats_cache_set(const tcache_t *tc);
/* Copies the calling thread's lock waiting time to its record (its cache's GC looks). */
void thread_stats_publish_wait(void);

/* The registry's lock: in the lock order after the snapshot locks and before the
 * thread-cache registry. While held, registered threads cannot leave. */
void thread_stats_lock(void);
void thread_stats_unlock(void);
/* With the lock held: the record of the registered thread whose cache is tc, or NULL. */
const thread_record_t *thread_stats_owner(const tcache_t *tc);
/* With the lock held: copies the exited threads' table into out. */
void thread_stats_exited(thread_table_t *out);

/* Adds counts c (name, arena and counters) into table t, by name. */
void thread_table_add(thread_table_t *t, const thread_counts_t *c);
/* The counts of one cache (name and arena not set). */
void thread_counts_of_cache(const tcache_t *tc, thread_counts_t *c);

void thread_stats_fork_prepare(void);
void thread_stats_fork_release(void);
/* In the child, lock held: only the calling thread is left. */
void thread_stats_fork_child(void);

#endif
