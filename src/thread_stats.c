/* SPDX-License-Identifier: MIT */
#include "thread_stats.h"

#include <string.h>

#include "lock.h"
#include "os.h"
#include "tcache.h"

static lock_t registry_lock FORK_LOCK;
static thread_state_t *registry;   /* live registered threads (under registry_lock) */
SPARSE_ARRAY thread_table_t exited_threads; /* exited threads by name (under registry_lock) */
static bool observer_ready;

static void thread_exiting(void *arg);

bool thread_stats_boot(void) {
  lock_init(&registry_lock);
  observer_ready = os_thread_exit_observer_init(thread_exiting);
  return true; /* without the observer there is no threads section, nothing worse */
}

void thread_stats_register(void) {
  thread_state_t *me = &tls_thread;
  if (!observer_ready || me->stats_registered) return;
  me->stats_registered = true; /* first: arming may allocate and come back here */
  me->tid = os_thread_id();
  lock_acquire(&registry_lock);
  me->stats_prev = NULL;
  me->stats_next = registry;
  if (registry != NULL) registry->stats_prev = me;
  registry = me;
  lock_release(&registry_lock);
  os_thread_exit_observer_arm(me);
}

static void unlink_locked(thread_state_t *t) {
  if (t->stats_prev != NULL) t->stats_prev->stats_next = t->stats_next;
  else registry = t->stats_next;
  if (t->stats_next != NULL) t->stats_next->stats_prev = t->stats_prev;
  t->stats_next = t->stats_prev = NULL;
}

COLD_TEXT void thread_counts_of_cache(const tcache_t *tc, thread_counts_t *c) {
  for (unsigned k = 0; k < NCACHED_MAX; k++) {
    const cache_bin_t *b = &tc->bins[k + 1];
    c->nrequests += cache_bin_nmalloc(tc, b);
    c->nfilled += b->nfilled;
    c->nflushed += b->nflushed;
  }
}

COLD_TEXT void thread_table_add(thread_table_t *t, const thread_counts_t *c) {
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

/* The observer: runs on the exiting thread, before its cache is destroyed. */
COLD_TEXT static void thread_exiting(void *arg) {
  thread_state_t *me = arg;
  thread_counts_t c;
  memset(&c, 0, sizeof(c));
  os_thread_name(c.name);
  c.nthreads = c.nexited = 1;
  c.lock_wait_ns = me->lock_wait_ns;
  c.arena = me->arena != NULL ? (int)me->arena->index : -1;
  if (me->tcache != &tcache_empty) thread_counts_of_cache(me->tcache, &c);
  /* arena_exclusive: the arena waits for the next thread of a matching name */
  if (me->exclusive_arena != NULL) atomic_store(&me->exclusive_arena->exclusive_owner, 0);
  lock_acquire(&registry_lock);
  if (me->stats_registered) unlink_locked(me);
  me->stats_registered = false;
  thread_table_add(&exited_threads, &c);
  lock_release(&registry_lock);
}

void thread_stats_lock(void) { lock_acquire(&registry_lock); }
void thread_stats_unlock(void) { lock_release(&registry_lock); }

const thread_state_t *thread_stats_owner(const tcache_t *tc) {
  lock_assert_held(&registry_lock);
  for (const thread_state_t *t = registry; t != NULL; t = t->stats_next)
    if (t->tcache == tc) return t;
  return NULL;
}

void thread_stats_exited(thread_table_t *out) {
  lock_assert_held(&registry_lock);
  *out = exited_threads;
}

COLD_TEXT void thread_stats_fork_prepare(void) { lock_fork_prepare(&registry_lock); }
COLD_TEXT void thread_stats_fork_release(void) { lock_fork_release(&registry_lock); }

COLD_TEXT void thread_stats_fork_child(void) {
  thread_state_t *me = &tls_thread;
  thread_state_t *only = me->stats_registered ? me : NULL;
  if (registry != only) registry = only; /* only what changes: each page written is copied */
  if (only != NULL) {
    me->stats_next = me->stats_prev = NULL;
    me->tid = os_thread_id();
  }
}
