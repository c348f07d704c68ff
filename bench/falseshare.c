/* SPDX-License-Identifier: MIT */
/* Workload 4: false sharing (cache-scratch-like).
 *
 * The main thread allocates one small object per worker, back to back, so they are likely
 * to share cache lines, and hands one to each worker. Each worker frees the object it was
 * given (a remote free), then `rounds` times allocates an object of the same size, writes
 * it `writes` times and frees it. An allocator that hands the freed neighbour straight
 * back to the worker makes the threads fight over one cache line ("passive" false
 * sharing); one that serves each thread from its own memory does not.
 *
 *   falseshare threads=2 rounds=20k writes=2000 size=8 limit=60
 */
#include <pthread.h>

#include "common.h"

static long long rounds, writes, obj_size;
static double deadline;

typedef struct {
  char *given; /* the object allocated by the main thread */
  int timed_out;
} worker;

static void *scratch_thread(void *arg) {
  worker *w = arg;
  free(w->given);
  for (long long r = 0; r < rounds; r++) {
    if ((r & 63) == 0 && bench_now() > deadline) {
      w->timed_out = 1;
      break;
    }
    volatile char *obj = bench_check(malloc((size_t)obj_size), (size_t)obj_size);
    for (long long i = 0; i < writes; i++) {
      obj[i % obj_size] = (char)(obj[i % obj_size] + 1); /* read-modify-write: the line bounces */
    }
    free((void *)obj);
  }
  return NULL;
}

int main(int argc, char **argv) {
  int threads = (int)arg_long(argc, argv, "threads", 2);
  rounds = arg_long(argc, argv, "rounds", 20000);
  writes = arg_long(argc, argv, "writes", 2000);
  obj_size = arg_long(argc, argv, "size", 8);
  double limit = arg_double(argc, argv, "limit", 60);
  pthread_t tids[256];
  worker workers[256];
  if (threads < 1 || threads > 256 || obj_size < 1) return 2;

  double t0 = bench_now();
  deadline = t0 + limit;
  for (int i = 0; i < threads; i++) {
    workers[i].given = bench_check(malloc((size_t)obj_size), (size_t)obj_size);
    workers[i].timed_out = 0;
  }
  for (int i = 0; i < threads; i++) pthread_create(&tids[i], NULL, scratch_thread, &workers[i]);
  int timeout = 0;
  for (int i = 0; i < threads; i++) {
    pthread_join(tids[i], NULL);
    timeout |= workers[i].timed_out;
  }
  double dt = bench_now() - t0;
  double total = (double)rounds * (double)writes * threads;
  printf("falseshare: %d threads x %lld rounds x %lld writes in %.3f s (%.2f ns/write)%s\n",
         threads, rounds, writes, dt, dt * 1e9 / total * threads, timeout ? " TIMED OUT" : "");
  bench_result("writes_per_s=%.0f seconds=%.4f timeout=%d", total / dt, dt, timeout);
  return 0;
}
