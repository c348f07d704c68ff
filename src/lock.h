/*
 * The light lock: a futex mutex after Drepper's "Futexes Are Tricky" (mutex 2), with a
 * bounded adaptive spin before sleeping. Uncontended lock and unlock are one atomic each.
 * Each lock counts acquisitions, contended acquisitions and wait time for stats.
 */
#ifndef TESSERA_LOCK_H
#define TESSERA_LOCK_H

#include "types.h"

/* A per-thread address that identifies the calling thread (for lock ownership). */
uintptr_t thread_marker(void);

void lock_init(lock_t *l);
void lock_slow(lock_t *l);

static inline void lock_acquire(lock_t *l) {
  uint32_t expected = 0;
  if (unlikely(!atomic_compare_exchange_strong_explicit(&l->state, &expected, 1,
                                                        memory_order_acquire,
                                                        memory_order_relaxed))) {
    lock_slow(l);
  }
  l->owner = thread_marker();
  l->n_acquired++;
}

static inline bool lock_try(lock_t *l) {
  uint32_t expected = 0;
  if (!atomic_compare_exchange_strong_explicit(&l->state, &expected, 1, memory_order_acquire,
                                               memory_order_relaxed))
    return false;
  l->owner = thread_marker();
  l->n_acquired++;
  return true;
}

void lock_wake(lock_t *l);

static inline void lock_release(lock_t *l) {
  l->owner = 0;
  if (unlikely(atomic_exchange_explicit(&l->state, 0, memory_order_release) == 2)) lock_wake(l);
}

/* True when the calling thread holds l (used by fork from a signal handler). */
static inline bool lock_held_by_me(const lock_t *l) {
  return atomic_load_explicit(&l->state, memory_order_relaxed) != 0 && l->owner == thread_marker();
}

/* fork: the prepare handler takes every lock so the child sees consistent state. A
 * lock the forking thread already holds (fork from a signal handler that interrupted
 * malloc) is left alone: the interrupted code still owns it and releases it later. */
static inline void lock_fork_prepare(lock_t *l) {
  if (lock_held_by_me(l)) l->fork_skipped = true;
  else lock_acquire(l);
}
static inline void lock_fork_release(lock_t *l) {
  if (l->fork_skipped) l->fork_skipped = false;
  else lock_release(l);
}

#endif
