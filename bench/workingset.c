/* SPDX-License-Identifier: MIT */
/* A per-thread working set of random sizes (glibc's bench-malloc-thread shape).
 *
 * Each of `threads` threads keeps `slots` blocks; every step frees one slot picked at
 * random and allocates a new block of random size, small sizes far more often than big
 * ones (log-uniform in [`min`, `max`]). Threads never touch each other's blocks: this is
 * the thread-cache fast path under a realistic size mix, with the cache refilled and
 * flushed whenever one size runs out or piles up.
 *
 *   workingset threads=1 steps=10m slots=2000 min=8 max=32K limit=60
 */
#include "workers.h"

static long long steps_per_thread, nslots, min_size, max_size;
static double deadline;

static void *run(void *arg) {
  bench_worker *w = arg;
  bench_rng rng;
  rng_seed(&rng, 100 + (uint64_t)w->id);
  unsigned char **slot = bench_check(calloc((size_t)nslots, sizeof *slot), 1);
  for (long long s = 0; s < steps_per_thread; s++) {
    if ((s & 4095) == 0 && bench_now() > deadline) {
      w->timed_out = 1;
      break;
    }
    long long i = (long long)(rng_next(&rng) % (uint64_t)nslots);
    if (slot[i]) w->checksum += slot[i][0];
    free(slot[i]);
    size_t size = (size_t)rng_log_range(&rng, (uint64_t)min_size, (uint64_t)max_size);
    slot[i] = bench_check(malloc(size), size);
    slot[i][0] = (unsigned char)s;
  }
  for (long long i = 0; i < nslots; i++) free(slot[i]);
  free(slot);
  return NULL;
}

int main(int argc, char **argv) {
  int threads = (int)arg_long(argc, argv, "threads", 1);
  long long steps = arg_long(argc, argv, "steps", 10000000);
  nslots = arg_long(argc, argv, "slots", 2000);
  min_size = arg_long(argc, argv, "min", 8);
  max_size = arg_long(argc, argv, "max", 32 << 10);
  deadline = bench_now() + arg_double(argc, argv, "limit", 60);
  if (threads < 1 || threads > 256 || nslots < 1 || min_size < 1 || max_size < min_size) {
    fprintf(stderr, "workingset: need 1 <= threads <= 256, slots >= 1, 1 <= min <= max\n");
    return 2;
  }
  steps_per_thread = steps / threads;
  double t0 = bench_now();
  int timed_out;
  uint64_t sum = bench_run_workers(threads, run, &timed_out);
  double dt = bench_now() - t0;
  printf("workingset: %d thread(s), %lld steps in %.3f s%s\n", threads, steps_per_thread * threads,
         dt, timed_out ? " TIMED OUT" : "");
  bench_result("ops_per_s=%.0f seconds=%.4f checksum=%llu timeout=%d",
               (double)(steps_per_thread * threads) / dt, dt, (unsigned long long)sum, timed_out);
  return 0;
}
