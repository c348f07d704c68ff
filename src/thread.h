/* SPDX-License-Identifier: MIT */
/*
 * Per-thread state: everything tessera keeps for a thread, in one initial-exec
 * thread-local struct (one TLS access pattern, one place to look).
 *
 * A thread starts with tcache pointing at tcache_empty, a cache whose bins all have
 * capacity 0: the fast paths need no "initialised?" test, the first malloc and free
 * simply fall into the slow path, which creates the real cache (tcache.c).
 */
#ifndef TESSERA_THREAD_H
#define TESSERA_THREAD_H

#include "prof_sample.h"
#include "types.h"

/* What a thread's cache is doing (thread_state_t.cache_state). */
enum {
  THREAD_NEW = 0,   /* no cache yet: the next slow path creates one */
  THREAD_CREATING,  /* creating it: allocations meanwhile bypass the cache */
  THREAD_ACTIVE,    /* has a cache */
  THREAD_EXITED,    /* its exit hook ran: no cache any more */
  THREAD_CACHE_OFF, /* the program turned the cache off (thread.tcache.enabled) */
};

typedef struct thread_state {
  tcache_t *tcache;    /* first: malloc's fast path loads it */
  arena_t *arena;      /* the arena it allocates from; NULL until first needed */
  /* Bytes allocated and freed: blocks taken outside the cache bins at once, the bins'
   * own blocks when the thread's cache publishes them (at its slow paths, tcache.c).
   * thread.allocatedp / deallocatedp point here: up to date within what each bin
   * handed out or took back since its last slow path or the last read of
   * thread.allocated or thread.allocatedp (both publish every bin); thread.allocated is
   * exact. */
  uint64_t allocated;
  uint64_t deallocated;
  uint32_t lock_id;    /* the id lock words store (lock.c: id << 1); 0 until first lock */
  uint32_t locks_held; /* allocator locks this thread holds now (lock.h) */
  uint8_t cache_state; /* THREAD_NEW ... */
  bool arena_pinned;   /* the program bound it to its arena (thread.arena): never moves */
  /* Slow paths only, after everything the fast paths read. */
  uint8_t uncached_frees; /* frees before the thread had a cache (free.c) */
  uint64_t lock_wait_ns; /* time this thread waited on allocator locks (lock.c adds) */
  arena_t *exclusive_arena; /* the arena arena_exclusive gave it, or NULL */
  uint8_t name_checks;      /* arena_exclusive: name checks after the arena choice */
  bool realloc_copying;     /* realloc's new block and its free of the old one: they skip
                               the cache of large blocks (large_cache.h) */
  struct thread_record *stats_record; /* its record on the registry, or NULL (thread_stats.c) */
  prof_thread_t prof; /* prof:true: the heap profiler's byte countdown (prof_hooks.c) */
} thread_state_t;

extern __thread thread_state_t tls_thread __attribute__((tls_model("initial-exec")));
extern tcache_t tcache_empty;

/* An address that identifies the calling thread while it lives. */
static inline uintptr_t thread_marker(void) { return (uintptr_t)&tls_thread; }

#endif
