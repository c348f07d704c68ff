/* SPDX-License-Identifier: MIT */
/*
 * The light lock: a futex mutex after Drepper's "Futexes Are Tricky" (mutex 2), with a
 * bounded adaptive spin before sleeping. Uncontended lock and unlock are one atomic each.
 * Each lock counts acquisitions, contended acquisitions and wait time for stats.
 *
 * The lock word holds its owner: (owner's lock id << 1) | waiters-bit, 0 when free.
 * Taking the lock and recording who holds it is therefore one atomic step, so a signal
 * handler on the same thread (fork from a handler that interrupted malloc) always knows
 * whether the interrupted code holds the lock; with a separate owner field there would
 * be a window between the two stores.
 */
#ifndef TESSERA_LOCK_H
#define TESSERA_LOCK_H

#include "config.h"
#include "thread.h"
#include "types.h"

#define LOCK_WAITERS 1u

/* For a global lock that fork's handlers take: the linker puts all of them together
 * (src/layout.ld), so that the parent, which writes each again right after fork, copies
 * one page of them (copy on write) rather than one page each. */
#define FORK_LOCK __attribute__((section(".bss.tessera_fork_locks")))

/* The calling thread's id as the lock word stores it (never 0). Ids are handed out in
 * order, 1 first, and a thread keeps its id for life (in a fork child too: the child's
 * new threads get ids its parent never handed out). */
uint32_t lock_id_slow(void);
static inline uint32_t lock_my_id(void) {
  uint32_t id = tls_thread.lock_id;
  return likely(id != 0) ? id : lock_id_slow();
}

/* fork's handlers (prepare takes every lock, parent and child release them): they are
 * needed only once the process has a second thread, which may fork while another holds
 * a lock. So they are registered when a thread takes its outermost lock while libc says
 * the process has started a second thread, or at once by lock_fork_handlers_arm. Until
 * then a fork copies no page for them, and a program that never has a second thread
 * never maps the libc code that registers them. */
void lock_fork_handlers(void (*prepare)(void), void (*parent)(void), void (*child)(void));
/* Registers the handlers now if they are not yet (at most once; a thread that comes
 * here while another registers them waits for it). */
void lock_fork_handlers_arm(void);
/* Until the handlers are registered: the test of a thread's outermost lock (lock.c). */
extern _Atomic bool lock_fork_handlers_pending;
void lock_fork_handlers_arm_if_threaded(void);
static inline void lock_fork_check(void) {
  if (unlikely(atomic_load_explicit(&lock_fork_handlers_pending, memory_order_relaxed)) && tls_thread.locks_held == 0)
    lock_fork_handlers_arm_if_threaded();
}

/* Unlocked, counters zero: the all-zero state, so zeroed metadata holds ready locks. */
void lock_init(lock_t *l);
void lock_slow(lock_t *l, uint32_t me);

static inline void lock_acquire(lock_t *l) {
  lock_fork_check();
  uint32_t me = lock_my_id();
  /* Debug build: taking a lock this thread already holds would deadlock. */
  tessera_assert((atomic_load_explicit(&l->state, memory_order_relaxed) & ~LOCK_WAITERS) != me);
  uint32_t expected = 0;
  if (unlikely(!atomic_compare_exchange_strong_explicit(&l->state, &expected, me, memory_order_acquire,
                                                        memory_order_relaxed)))
    lock_slow(l, me);
  l->n_acquired++;
  tls_thread.locks_held++;
}

static inline bool lock_try(lock_t *l) {
  lock_fork_check();
  uint32_t expected = 0;
  if (!atomic_compare_exchange_strong_explicit(&l->state, &expected, lock_my_id(), memory_order_acquire,
                                               memory_order_relaxed))
    return false;
  l->n_acquired++;
  tls_thread.locks_held++;
  return true;
}

void lock_wake(lock_t *l);

static inline void lock_release(lock_t *l) {
  tls_thread.locks_held--;
  if (unlikely(atomic_exchange_explicit(&l->state, 0, memory_order_release) & LOCK_WAITERS)) lock_wake(l);
}

/* True when the calling thread holds l (used by fork from a signal handler). */
static inline bool lock_held_by_me(const lock_t *l) {
  return (atomic_load_explicit(&l->state, memory_order_relaxed) & ~LOCK_WAITERS) == lock_my_id();
}

/* Debug build: the caller must hold l. */
#define lock_assert_held(l) tessera_assert(lock_held_by_me(l))
/* Debug build: the caller must not hold l (it is about to take it, or calls out). */
#define lock_assert_not_held(l) tessera_assert(!lock_held_by_me(l))

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
