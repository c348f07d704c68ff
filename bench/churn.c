/* SPDX-License-Identifier: MIT */
/* Workloads 2 and 8b: server churn (larson-like).
 *
 * Each of `threads` threads keeps a working set of `slots` blocks of random size and
 * replaces one at random on every step, the way a server's request handlers churn through
 * buffers. One step in `share` (default 1 in 8) hands the new block to another thread
 * instead: it is swapped into a shared exchange table, and whatever block it displaces
 * (usually allocated by some other thread) becomes this thread's to free later. That makes
 * a steady stream of remote frees, the case larson was written to expose.
 *
 * The total number of steps is fixed (`ops`), split across threads, so runs at 1, 2, 8
 * and 64 threads do the same work and their times compare directly.
 *
 *   churn threads=8 ops=20m slots=1000 min=16 max=1024 share=8 limit=60
 */
#include <pthread.h>
#include <stdatomic.h>

#include "common.h"

#define EXCHANGE 4096 /* entries of the shared hand-off table (a power of two) */

static _Atomic(void *) exchange_table[EXCHANGE];
static long long ops_per_thread, slots_per_thread, min_size, max_size, share_every;
static double deadline;
static atomic_int timed_out;

typedef struct {
  int id;
  uint64_t checksum;
} worker;

/* A new block: random size, first and last bytes written (a server touches its buffers). */
static void *new_block(bench_rng *rng) {
  size_t size = (size_t)rng_log_range(rng, (uint64_t)min_size, (uint64_t)max_size);
  unsigned char *p = bench_check(malloc(size), size);
  p[0] = (unsigned char)size;
  p[size - 1] = 1;
  return p;
}

static void *churn_thread(void *arg) {
  worker *w = arg;
  bench_rng rng;
  rng_seed(&rng, (uint64_t)w->id * 7919 + 1);
  void **slots = bench_check(calloc((size_t)slots_per_thread, sizeof *slots), 1);
  for (long long i = 0; i < slots_per_thread; i++) slots[i] = new_block(&rng);

  for (long long step = 0; step < ops_per_thread; step++) {
    if ((step & 4095) == 0 && bench_now() > deadline) {
      atomic_store(&timed_out, 1);
      break;
    }
    uint64_t r = rng_next(&rng);
    long long victim = (long long)(r % (uint64_t)slots_per_thread);
    w->checksum += *(unsigned char *)slots[victim];
    free(slots[victim]);
    slots[victim] = new_block(&rng);
    if (share_every && (r >> 40) % (uint64_t)share_every == 0) {
      /* Hand our newest block to the table; take over the one it displaces. */
      void *mine = slots[victim];
      void *theirs = atomic_exchange(&exchange_table[(r >> 20) & (EXCHANGE - 1)], mine);
      slots[victim] = theirs ? theirs : new_block(&rng);
    }
  }
  for (long long i = 0; i < slots_per_thread; i++) free(slots[i]);
  free(slots);
  return NULL;
}

int main(int argc, char **argv) {
  int threads = (int)arg_long(argc, argv, "threads", 2);
  long long ops = arg_long(argc, argv, "ops", 20000000);
  slots_per_thread = arg_long(argc, argv, "slots", 1000);
  min_size = arg_long(argc, argv, "min", 16);
  max_size = arg_long(argc, argv, "max", 1024);
  share_every = arg_long(argc, argv, "share", 8);
  double limit = arg_double(argc, argv, "limit", 60);
  ops_per_thread = ops / threads;
  if (threads < 1 || slots_per_thread < 1 || min_size < 1 || max_size < min_size) {
    fprintf(stderr, "churn: bad arguments\n");
    return 2;
  }

  pthread_t *tids = calloc((size_t)threads, sizeof *tids);
  worker *workers = calloc((size_t)threads, sizeof *workers);
  double t0 = bench_now();
  deadline = t0 + limit;
  for (int i = 0; i < threads; i++) {
    workers[i].id = i;
    if (pthread_create(&tids[i], NULL, churn_thread, &workers[i]) != 0) {
      fprintf(stderr, "churn: pthread_create failed\n");
      return 2;
    }
  }
  uint64_t checksum = 0;
  for (int i = 0; i < threads; i++) {
    pthread_join(tids[i], NULL);
    checksum += workers[i].checksum;
  }
  for (int i = 0; i < EXCHANGE; i++) free(atomic_load(&exchange_table[i]));
  double dt = bench_now() - t0;
  double rate = (double)(ops_per_thread * threads) / dt;
  printf("churn: %d threads, %lld steps in %.3f s: %.2f M steps/s (checksum %llu)%s\n",
         threads, ops_per_thread * threads, dt, rate / 1e6, (unsigned long long)checksum,
         atomic_load(&timed_out) ? " TIMED OUT" : "");
  bench_result("ops_per_s=%.0f seconds=%.4f checksum=%llu timeout=%d", rate, dt,
               (unsigned long long)checksum, atomic_load(&timed_out));
  free(tids);
  free(workers);
  return 0;
}
