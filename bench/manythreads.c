/* SPDX-License-Identifier: MIT */
/* Workload 8a: many short-lived threads.
 *
 * `threads` threads in all, started in waves of `wave` at a time (a thread pool that is
 * torn down and rebuilt, or a thread per connection). Each allocates `blocks` blocks of
 * random small and medium size, frees most of them, and hands the last `keep` to the main
 * thread, which frees them after the thread has exited (blocks whose owner thread is
 * gone). The cost measured is the allocator's thread setup and teardown, and what memory
 * it strands in the caches of dead threads (peak RSS).
 *
 *   manythreads threads=1000 wave=50 blocks=2000 keep=16 limit=60
 */
#include <pthread.h>

#include "common.h"

static long long blocks_per_thread, keep;

typedef struct {
  int id;
  void **kept; /* handed to the main thread */
} worker;

static void *short_thread(void *arg) {
  worker *w = arg;
  bench_rng rng;
  rng_seed(&rng, (uint64_t)w->id + 100);
  void **live = bench_check(malloc((size_t)blocks_per_thread * sizeof *live), 1);
  for (long long i = 0; i < blocks_per_thread; i++) {
    size_t size = (size_t)rng_log_range(&rng, 16, (i & 31) == 0 ? 32768 : 512);
    live[i] = bench_check(malloc(size), size);
    memset(live[i], (int)i, size < 32 ? size : 32);
  }
  /* Free in a shuffled order, as a request's objects die, except the last `keep`. */
  for (long long i = 0; i < blocks_per_thread - keep; i++) {
    long long j = i + (long long)(rng_next(&rng) % (uint64_t)(blocks_per_thread - keep - i));
    void *t = live[i];
    live[i] = live[j];
    live[j] = t;
    free(live[i]);
  }
  w->kept = bench_check(malloc((size_t)keep * sizeof(void *) + 1), 1);
  memcpy(w->kept, live + blocks_per_thread - keep, (size_t)keep * sizeof(void *));
  free(live);
  return NULL;
}

int main(int argc, char **argv) {
  long long threads = arg_long(argc, argv, "threads", 1000);
  long long wave = arg_long(argc, argv, "wave", 50);
  blocks_per_thread = arg_long(argc, argv, "blocks", 2000);
  keep = arg_long(argc, argv, "keep", 16);
  double limit = arg_double(argc, argv, "limit", 60);
  if (wave < 1 || wave > 1024 || keep > blocks_per_thread) return 2;
  pthread_t tids[1024];
  worker workers[1024];
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setstacksize(&attr, 256 << 10);
  double t0 = bench_now();
  long long started = 0;
  int timeout = 0;
  while (started < threads) {
    if (bench_now() - t0 > limit) {
      timeout = 1;
      break;
    }
    long long n = threads - started < wave ? threads - started : wave;
    for (long long i = 0; i < n; i++) {
      workers[i].id = (int)(started + i);
      if (pthread_create(&tids[i], &attr, short_thread, &workers[i]) != 0) {
        fprintf(stderr, "manythreads: pthread_create failed\n");
        return 2;
      }
    }
    for (long long i = 0; i < n; i++) {
      pthread_join(tids[i], NULL);
      for (long long k = 0; k < keep; k++) free(workers[i].kept[k]);
      free(workers[i].kept);
    }
    started += n;
  }
  double dt = bench_now() - t0;
  long long rss = bench_rss();
  printf("manythreads: %lld threads in %.3f s (%.1f us per thread), rss at end %.1f MiB%s\n",
         started, dt, dt * 1e6 / (double)started, (double)rss / 1048576.0,
         timeout ? " TIMED OUT" : "");
  bench_result("seconds=%.4f threads=%lld end_rss_mib=%.2f timeout=%d", dt, started,
               (double)rss / 1048576.0, timeout);
  return 0;
}
