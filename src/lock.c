#include "lock.h"

#include <errno.h>
#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

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

static __thread char thread_marker_byte;

uintptr_t thread_marker(void) { return (uintptr_t)&thread_marker_byte; }

void lock_init(lock_t *l) {
  atomic_store_explicit(&l->state, 0, memory_order_relaxed);
  l->owner = 0;
  l->n_acquired = l->n_contended = l->wait_ns_total = l->wait_ns_max = 0;
}

static void futex_wait(_Atomic uint32_t *addr, uint32_t val) {
  int saved = errno;
  syscall(SYS_futex, addr, FUTEX_WAIT_PRIVATE, val, NULL, NULL, 0);
  errno = saved;
}

void lock_wake(lock_t *l) {
  int saved = errno;
  syscall(SYS_futex, &l->state, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
  errno = saved;
}

void lock_slow(lock_t *l) {
  uint64_t start = os_now_ns();
  uint32_t expected;
  for (int i = 0; i < LOCK_SPIN_LIMIT; i++) {
    if (atomic_load_explicit(&l->state, memory_order_relaxed) == 0) {
      expected = 0;
      if (atomic_compare_exchange_weak_explicit(&l->state, &expected, 1, memory_order_acquire,
                                                memory_order_relaxed))
        goto acquired;
    }
    cpu_relax();
  }
  /* Sleep: mark the lock as "held with waiters" so the holder's unlock wakes us. */
  while (atomic_exchange_explicit(&l->state, 2, memory_order_acquire) != 0)
    futex_wait(&l->state, 2);
acquired:;
  uint64_t waited = os_now_ns() - start;
  /* We hold the lock now, so the counters are ours to update. */
  l->n_contended++;
  l->wait_ns_total += waited;
  if (waited > l->wait_ns_max) l->wait_ns_max = waited;
}
