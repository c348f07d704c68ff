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

/* Lock ids are a count, not kernel thread ids: a fork child's only thread keeps its
 * id, and a kernel id may come back to a new thread of the child once the parent's
 * thread is gone (a daemon's parent exits), while the count carries on from the
 * parent's. 2^31 ids fit the word beside the waiters bit; the count would wrap only
 * after two billion threads. */
static _Atomic uint32_t lock_ids_given;

static void (*fork_prepare_fn)(void), (*fork_parent_fn)(void), (*fork_child_fn)(void);
enum { FORK_HANDLERS_DEFERRED, FORK_HANDLERS_REGISTERING, FORK_HANDLERS_REGISTERED };
static _Atomic int fork_handlers_state;
static _Atomic uintptr_t fork_handlers_registrar; /* thread_marker() of the thread registering */

uint32_t lock_id_slow(void) {
  uint32_t n = (atomic_fetch_add_explicit(&lock_ids_given, 1, memory_order_relaxed) + 1) & 0x7fffffffu;
  tls_thread.lock_id = (n != 0 ? n : 1) << 1;
  return tls_thread.lock_id;
}

_Atomic bool lock_fork_handlers_pending;

/* glibc's flag, cleared for good when the process starts a second thread (weak: other
 * libcs may not have it, and then the handlers are registered at once). */
extern char __libc_single_threaded __attribute__((weak));

void lock_fork_handlers(void (*prepare)(void), void (*parent)(void), void (*child)(void)) {
  fork_prepare_fn = prepare;
  fork_parent_fn = parent;
  fork_child_fn = child;
  atomic_store_explicit(&lock_fork_handlers_pending, true, memory_order_relaxed);
}

/* A thread about to take its outermost lock, while the handlers are not registered.
 * Once libc says the process has started a second thread, the handlers go in first:
 * that thread may fork while this one holds the lock (also one that never allocated),
 * and this may be that second thread's own first lock. Registering may allocate, and
 * the caller may be in the middle of moving blocks between its cache and an arena:
 * meanwhile its allocations bypass its cache, as a new thread's do while its cache is
 * made. In the first window of the text, not with the cold code: every program that
 * starts a thread runs it (structure.footprint's threads mode). */
NOINLINE static void arm_bypassing_cache(void) {
  tcache_t *cache = tls_thread.tcache;
  uint8_t state = tls_thread.cache_state;
  tls_thread.tcache = &tcache_empty;
  tls_thread.cache_state = THREAD_CREATING;
  lock_fork_handlers_arm();
  tls_thread.tcache = cache;
  tls_thread.cache_state = state;
}

/* Not cold: a program with one thread comes here at each outermost lock. */
void lock_fork_handlers_arm_if_threaded(void) {
  if (&__libc_single_threaded != NULL && __libc_single_threaded) return;
  arm_bypassing_cache();
}

/* A program with one thread never runs it (lock.h), but every program that starts a
 * thread does, so it stays with the code every program runs. */
NOINLINE void lock_fork_handlers_arm(void) {
  if (likely(atomic_load_explicit(&fork_handlers_state, memory_order_acquire) == FORK_HANDLERS_REGISTERED)) return;
  tessera_assert(fork_prepare_fn != NULL); /* every caller comes after boot handed them over */
  int expected = FORK_HANDLERS_DEFERRED;
  if (atomic_compare_exchange_strong(&fork_handlers_state, &expected, FORK_HANDLERS_REGISTERING)) {
    atomic_store_explicit(&fork_handlers_registrar, thread_marker(), memory_order_relaxed);
    os_at_fork(fork_prepare_fn, fork_parent_fn, fork_child_fn);
    atomic_store_explicit(&fork_handlers_state, FORK_HANDLERS_REGISTERED, memory_order_release);
    atomic_store_explicit(&lock_fork_handlers_pending, false, memory_order_relaxed);
    return;
  }
  /* Registering allocated, and the allocation came back here (to start the background
   * thread, say): go on. */
  if (atomic_load_explicit(&fork_handlers_registrar, memory_order_relaxed) == thread_marker()) return;
  /* Another thread registers them: a lock taken before it is done could be held at a
   * fork that runs no handler. The threads that come here hold none (lock_acquire's
   * test, or a caller that takes none). */
  while (atomic_load_explicit(&fork_handlers_state, memory_order_acquire) != FORK_HANDLERS_REGISTERED) os_yield();
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
