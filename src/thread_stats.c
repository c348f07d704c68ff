/* SPDX-License-Identifier: MIT */
#include "thread_stats.h"

#include <string.h>

#include "lock.h"
#include "os.h"
#include "tcache.h"

/*
 * The registry holds records, not the threads' own state: a record lives in memory of
 * the registry's own (chunks mapped once, never given back), and holds only values and
 * the thread's cache, never a pointer into a thread's stack. A thread whose exit hooks
 * never run leaves its record behind rather than a pointer into a stack that libc may
 * unmap or hand to the next thread: one whose first allocator call comes after libc ran
 * its thread-specific destructors (a free of another thread's block in its exit path)
 * arms hooks that libc will not run, and its record and cache stay until the next
 * thread on its stack inherits those hook values (thread_stats_register,
 * thread_exiting and tcache.c take them over). With the registry linking the threads'
 * own state, such a thread's neighbours later wrote into its freed stack: threads that
 * come and go (the larson-like workload) crashed about one run in five.
 */
#define RECORDS_PER_CHUNK 1024

static lock_t registry_lock FORK_LOCK;
static thread_record_t *registry;  /* live records (under registry_lock) */
static thread_record_t *free_records; /* records to reuse (under registry_lock) */
/* Records never used yet, handed out in order: a chunk's pages are touched only as
 * threads come (a program with one thread touches one page, not the chunk's 14). */
static thread_record_t *fresh_records, *fresh_end;
SPARSE_ARRAY thread_table_t exited_threads; /* exited threads by name (under registry_lock) */
static bool observer_ready;

static void thread_exiting(void *arg);

bool thread_stats_boot(void) {
  lock_init(&registry_lock);
  observer_ready = os_thread_exit_observer_init(thread_exiting);
  return true; /* without the observer there is no threads section, nothing worse */
}

/* A free record (lock held), or NULL when no memory could be had. */
static thread_record_t *record_take(void) {
  thread_record_t *r = free_records;
  if (r != NULL) {
    free_records = r->next;
    memset(r, 0, sizeof(*r));
    return r;
  }
  if (fresh_records == fresh_end) {
    thread_record_t *chunk = os_map(RECORDS_PER_CHUNK * sizeof(thread_record_t));
    if (chunk == NULL) return NULL;
    fresh_records = chunk;
    fresh_end = chunk + RECORDS_PER_CHUNK;
  }
  return fresh_records++; /* fresh mapped memory reads as zero */
}

static void unlink_locked(thread_record_t *r) {
  if (r->prev != NULL) r->prev->next = r->next;
  else registry = r->next;
  if (r->next != NULL) r->next->prev = r->prev;
  r->live = false;
  r->next = free_records;
  r->prev = NULL;
  free_records = r;
}

/* Counts r's thread as exited (lock held) under name, and frees r. */
static void retire_locked(thread_record_t *r, const char name[THREAD_NAME_LEN], int arena) {
  thread_counts_t c;
  memset(&c, 0, sizeof(c));
  memcpy(c.name, name, THREAD_NAME_LEN);
  c.nthreads = c.nexited = 1;
  c.lock_wait_ns = r->lock_wait_ns;
  c.arena = arena;
  if (r->cache != NULL) thread_counts_of_cache(r->cache, &c);
  thread_table_add(&exited_threads, &c);
  unlink_locked(r);
}

/* This, thread_table_add and thread_exiting run at every thread's exit: with the code
 * every program runs, not the cold code (structure.footprint's threads mode). */
NOINLINE void thread_counts_of_cache(const tcache_t *tc, thread_counts_t *c) {
  for (unsigned k = 0; k < NCACHED_MAX; k++) {
    const cache_bin_t *b = &tc->bins[k + 1];
    c->nrequests += cache_bin_nmalloc(tc, b);
    c->nfilled += b->nfilled;
    c->nflushed += b->nflushed;
  }
}

NOINLINE void thread_table_add(thread_table_t *t, const thread_counts_t *c) {
  const char *name = c->name;
  unsigned i;
  for (i = 0; i < t->n; i++)
    if (strcmp(t->names[i].name, name) == 0) break;
  if (i == t->n) {
    if (t->n == THREAD_NAMES_MAX) { /* full: the last entry becomes "(other)" */
      i = THREAD_NAMES_MAX - 1;
      memcpy(t->names[i].name, THREAD_STATS_OTHER, sizeof(THREAD_STATS_OTHER));
    } else {
      memset(&t->names[i], 0, sizeof(t->names[i]));
      memcpy(t->names[i].name, name, THREAD_NAME_LEN);
      t->names[i].name[THREAD_NAME_LEN - 1] = '\0';
      t->names[i].arena = c->arena;
      t->n++;
    }
  }
  thread_counts_t *to = &t->names[i];
  to->nthreads += c->nthreads;
  to->nexited += c->nexited;
  to->nrequests += c->nrequests;
  to->nfilled += c->nfilled;
  to->nflushed += c->nflushed;
  to->lock_wait_ns += c->lock_wait_ns;
  if (to->arena != c->arena) to->arena = -1;
}

/* A record that stands for registration in progress: arming the observer may allocate
 * and come back to thread_stats_register (and so may taking the registry's lock, which
 * can register the fork handlers). */
static thread_record_t registering;

static bool registered(const thread_state_t *t) {
  return t->stats_record != NULL && t->stats_record != &registering;
}

void thread_stats_register(void) {
  thread_state_t *me = &tls_thread;
  if (!observer_ready || me->stats_record != NULL) return;
  me->stats_record = &registering;
  /* The observer's value this thread's stack inherited from a thread whose hooks never
   * ran (above): that thread's exit, counted now under the name it registered with. */
  thread_record_t *inherited = os_thread_exit_observer_current();
  lock_acquire(&registry_lock);
  if (inherited != NULL && inherited->live) retire_locked(inherited, inherited->name, -1);
  thread_record_t *r = record_take();
  if (r != NULL) {
    r->tid = os_thread_id();
    os_thread_name(r->name);
    r->live = true;
    r->next = registry;
    if (registry != NULL) registry->prev = r;
    registry = r;
  }
  lock_release(&registry_lock);
  me->stats_record = r;
  if (r != NULL) os_thread_exit_observer_arm(r);
}

void thread_stats_cache_set(const tcache_t *tc) {
  thread_state_t *me = &tls_thread;
  if (!registered(me)) return;
  lock_acquire(&registry_lock);
  me->stats_record->cache = tc;
  lock_release(&registry_lock);
}

void thread_stats_publish_wait(void) {
  thread_state_t *me = &tls_thread;
  if (registered(me)) __atomic_store_n(&me->stats_record->lock_wait_ns, me->lock_wait_ns, __ATOMIC_RELAXED);
}

/* The observer: runs on the exiting thread, before its cache is destroyed. Its argument
 * is the record it was armed with: the thread's own, or, for a thread that never
 * registered, one its stack inherited from a thread whose hooks never ran. */
NOINLINE static void thread_exiting(void *arg) {
  thread_record_t *r = arg;
  thread_state_t *me = &tls_thread;
  char name[THREAD_NAME_LEN];
  os_thread_name(name);
  /* arena_exclusive: the arena waits for the next thread of a matching name */
  if (me->exclusive_arena != NULL) atomic_store(&me->exclusive_arena->exclusive_owner, 0);
  lock_acquire(&registry_lock);
  if (r == me->stats_record) {
    r->lock_wait_ns = me->lock_wait_ns;
    retire_locked(r, name, me->arena != NULL ? (int)me->arena->index : -1);
    me->stats_record = NULL;
  } else if (r->live) {
    retire_locked(r, r->name, -1);
  }
  lock_release(&registry_lock);
}

void thread_stats_lock(void) { lock_acquire(&registry_lock); }
void thread_stats_unlock(void) { lock_release(&registry_lock); }

const thread_record_t *thread_stats_owner(const tcache_t *tc) {
  lock_assert_held(&registry_lock);
  for (const thread_record_t *r = registry; r != NULL; r = r->next)
    if (r->cache == tc) return r;
  return NULL;
}

void thread_stats_exited(thread_table_t *out) {
  lock_assert_held(&registry_lock);
  *out = exited_threads;
}

COLD_TEXT void thread_stats_fork_prepare(void) { lock_fork_prepare(&registry_lock); }
COLD_TEXT void thread_stats_fork_release(void) { lock_fork_release(&registry_lock); }

/* The other threads' records are left out of the registry, not freed: in the child no
 * record is freed but by its own threads, and the pages they sit on stay shared. */
COLD_TEXT void thread_stats_fork_child(void) {
  thread_state_t *me = &tls_thread;
  thread_record_t *only = registered(me) ? me->stats_record : NULL;
  if (registry != only) registry = only; /* only what changes: each page written is copied */
  if (only != NULL) {
    only->next = only->prev = NULL;
    only->tid = os_thread_id();
  }
}
