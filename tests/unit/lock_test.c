/* SPDX-License-Identifier: MIT */
/* The futex lock: mutual exclusion under heavy contention (a non-atomic counter must
 * come out exact), contention is counted, and trylock fails while the lock is held.
 * Every thread gets its own lock id; fork's handlers are registered with libc only once
 * the process has a second thread (at that thread's first lock, or at the next outermost
 * lock of a thread once libc says a second thread was started), so a fork before that
 * runs none and one after runs them. */
#include <pthread.h>
#include <sys/wait.h>
#include <unistd.h>

#include "lock.h"
#include "unit.h"

#define THREADS 8
#define ROUNDS 200000

static lock_t l;
static unsigned long counter;
static uint32_t worker_ids[THREADS];
static int prepared, released_in_parent;

static void on_prepare(void) { prepared++; }
static void on_parent(void) { released_in_parent++; }
static void on_child(void) {}

/* Forks a child that exits at once; returns how many times the prepare handler ran. */
static int fork_and_count(void) {
  int before = prepared;
  pid_t pid = fork();
  if (pid == 0) _exit(0);
  CHECK(pid > 0, "fork");
  int status;
  CHECK(waitpid(pid, &status, 0) == pid && WIFEXITED(status), "child exit");
  return prepared - before;
}

static void *take_no_lock(void *arg) { return arg; }

static void *worker(void *arg) {
  worker_ids[(uintptr_t)arg] = lock_my_id();
  for (int i = 0; i < ROUNDS; i++) {
    lock_acquire(&l);
    unsigned long v = counter;
    if (i % 1000 == 0) sched_yield(); /* hold it across a reschedule now and then */
    counter = v + 1;
    lock_release(&l);
  }
  return NULL;
}

int main(void) {
  lock_init(&l);
  lock_fork_handlers(on_prepare, on_parent, on_child);
  lock_t first;
  lock_init(&first);
  lock_acquire(&first); /* the first id */
  lock_release(&first);
  CHECK(lock_my_id() == 2, "the first thread's id is 1 (stored shifted): %u", lock_my_id());
  CHECK(fork_and_count() == 0, "one thread: fork runs no handler of ours");
  /* A second thread that never takes a lock (it could fork while this one holds one):
   * this thread's next outermost lock registers the handlers. */
  pthread_t quiet;
  pthread_create(&quiet, NULL, take_no_lock, NULL);
  pthread_join(quiet, NULL);
  CHECK(fork_and_count() == 0, "nothing registered them yet");
  lock_acquire(&first);
  lock_release(&first);
  CHECK(fork_and_count() == 1, "a lock taken after a second thread started: fork runs the handlers");
  pthread_t t[THREADS];
  for (int i = 0; i < THREADS; i++) pthread_create(&t[i], NULL, worker, (void *)(uintptr_t)i);
  for (int i = 0; i < THREADS; i++) pthread_join(t[i], NULL);
  for (int i = 0; i < THREADS; i++) {
    CHECK(worker_ids[i] != 0 && worker_ids[i] % 2 == 0, "worker %d id %u", i, worker_ids[i]);
    for (int j = 0; j < i; j++) CHECK(worker_ids[i] != worker_ids[j], "workers %d and %d share id %u", i, j, worker_ids[i]);
  }
  CHECK(fork_and_count() == 1 && released_in_parent == 2, "and every fork after");
  CHECK(counter == (unsigned long)THREADS * ROUNDS, "counter %lu", counter);
  CHECK(l.n_acquired == (uint64_t)THREADS * ROUNDS, "acquisitions counted: %llu", (unsigned long long)l.n_acquired);
  CHECK(l.n_contended > 0, "contention seen");
  CHECK(l.wait_ns_max <= l.wait_ns_total, "max wait <= total wait");
  lock_acquire(&l);
  CHECK(lock_held_by_me(&l), "held by me");
  CHECK(!lock_try(&l), "trylock fails while held");
  lock_release(&l);
  CHECK(lock_try(&l), "trylock succeeds when free");
  lock_release(&l);
  printf("lock: %llu acquisitions, %llu contended, max wait %.3f ms\n", (unsigned long long)l.n_acquired,
         (unsigned long long)l.n_contended, (double)l.wait_ns_max / 1e6);
  UNIT_DONE("lock");
}
