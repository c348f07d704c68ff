/* SPDX-License-Identifier: MIT */
#include "lock.h"

#include "os.h"

/* Spinning pays off only while the holder runs on another CPU and holds the lock
 * for a short time; allocator critical sections are a few hundred instructions. */
#define LOCK_SPIN_LIMIT 100

static inline void cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  __asm__ volatile("yield");
#endif
}

uint32_t lock_id_slow(void) {
  /* Kernel thread ids are positive and below 2^30 (pid_max is at most 4M), so the id
   * shifted left by one fits the word with room for the waiters bit. */
  tls_thread.lock_id = os_thread_id() << 1;
  return tls_thread.lock_id;
}

void lock_init(lock_t *l) {
  atomic_store_explicit(&l->state, 0, memory_order_relaxed);
  l->fork_skipped = false;
  l->n_acquired = l->n_contended = l->wait_ns_total = l->wait_ns_max = 0;
}

void lock_wake(lock_t *l) { os_futex_wake_one(&l->state); }

void lock_slow(lock_t *l, uint32_t me) {
  uint64_t start = os_now_ns();
  uint32_t expected;
  for (int i = 0; i < LOCK_SPIN_LIMIT; i++) {
    if (atomic_load_explicit(&l->state, memory_order_relaxed) == 0) {
      expected = 0;
      if (atomic_compare_exchange_weak_explicit(&l->state, &expected, me, memory_order_acquire,
                                                memory_order_relaxed))
        goto acquired;
    }
    cpu_relax();
  }
  /* Sleep: mark the lock "held, with waiters" so the holder's release wakes us. A lock
   * we take after sleeping keeps the waiters bit: others may still sleep on it. */
  for (;;) {
    uint32_t c = atomic_load_explicit(&l->state, memory_order_relaxed);
    if (c == 0) {
      expected = 0;
      if (atomic_compare_exchange_weak_explicit(&l->state, &expected, me | LOCK_WAITERS,
                                                memory_order_acquire, memory_order_relaxed))
        break;
      continue;
    }
    if (!(c & LOCK_WAITERS) &&
        !atomic_compare_exchange_weak_explicit(&l->state, &c, c | LOCK_WAITERS, memory_order_relaxed,
                                               memory_order_relaxed))
      continue;
    os_futex_wait(&l->state, c | LOCK_WAITERS);
  }
acquired:;
  tessera_assert((atomic_load_explicit(&l->state, memory_order_relaxed) & ~LOCK_WAITERS) == me);
  uint64_t waited = os_now_ns() - start;
  /* We hold the lock now, so the counters are ours to update. */
  l->n_contended++;
  l->wait_ns_total += waited;
  tls_thread.lock_wait_ns += waited; /* per thread, for the stats' threads section */
  if (waited > l->wait_ns_max) l->wait_ns_max = waited;
}
