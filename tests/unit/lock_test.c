/* SPDX-License-Identifier: MIT */
/* The futex lock: mutual exclusion under heavy contention (a non-atomic counter must
 * come out exact), contention is counted, and trylock fails while the lock is held. */
#include <pthread.h>

#include "lock.h"
#include "unit.h"

#define THREADS 8
#define ROUNDS 200000

static lock_t l;
static unsigned long counter;

static void *worker(void *arg) {
  (void)arg;
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
  pthread_t t[THREADS];
  for (int i = 0; i < THREADS; i++) pthread_create(&t[i], NULL, worker, NULL);
  for (int i = 0; i < THREADS; i++) pthread_join(t[i], NULL);
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
