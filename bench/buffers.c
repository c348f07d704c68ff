/* SPDX-License-Identifier: MIT */
/* Threads cycling medium buffers (I/O, compression and message buffers of a server).
 *
 * Each of `threads` threads keeps `live` buffers of random sizes between `min` and `max`
 * bytes (log-uniform) and replaces one at random on every step, writing a byte on each
 * page of the new buffer (it is used, so its pages are resident). Sizes of 4-256 KiB
 * reach above most allocators' small classes, so this measures how they serve and
 * recycle large blocks per thread: through an arena lock each time, or from a thread's
 * own cache. touch=0 writes only the first and last byte of each buffer (the allocator's
 * own cost, without the page writes). uniform=1 draws the sizes uniformly instead, so
 * that most fall in the biggest classes (messages of any length up to a bound).
 *
 *   buffers threads=4 ops=2m live=16 min=4096 max=262144 touch=1 uniform=0 limit=60
 */
#include "workers.h"

static long long ops_per_thread, live, min_size, max_size, touch_pages, uniform_sizes;
static double deadline;

/* A new buffer: one byte written on each of its pages (touch=1), or on its first. */
static unsigned char *new_buffer(bench_rng *rng, size_t *size_out) {
  size_t size = (size_t)(uniform_sizes ? rng_range(rng, (uint64_t)min_size, (uint64_t)max_size)
                                       : rng_log_range(rng, (uint64_t)min_size, (uint64_t)max_size));
  unsigned char *p = bench_check(malloc(size), size);
  for (size_t i = 0; i < size; i += touch_pages ? 4096 : size) p[i] = (unsigned char)i;
  p[size - 1] = 1;
  *size_out = size;
  return p;
}

static void *buffer_thread(void *arg) {
  bench_worker *w = arg;
  bench_rng rng;
  rng_seed(&rng, (uint64_t)w->id * 104729 + 3);
  unsigned char **bufs = bench_check(calloc((size_t)live, sizeof *bufs), 1);
  size_t *sizes = bench_check(calloc((size_t)live, sizeof *sizes), 1);
  for (long long i = 0; i < live; i++) bufs[i] = new_buffer(&rng, &sizes[i]);
  for (long long step = 0; step < ops_per_thread; step++) {
    if ((step & 1023) == 0 && bench_now() > deadline) {
      w->timed_out = 1;
      break;
    }
    long long k = (long long)(rng_next(&rng) % (uint64_t)live);
    w->checksum += bufs[k][sizes[k] - 1];
    free(bufs[k]);
    bufs[k] = new_buffer(&rng, &sizes[k]);
  }
  for (long long i = 0; i < live; i++) free(bufs[i]);
  free(bufs);
  free(sizes);
  return NULL;
}

int main(int argc, char **argv) {
  int threads = (int)arg_long(argc, argv, "threads", 4);
  long long ops = arg_long(argc, argv, "ops", 2000000);
  live = arg_long(argc, argv, "live", 16);
  min_size = arg_long(argc, argv, "min", 4096);
  max_size = arg_long(argc, argv, "max", 262144);
  touch_pages = arg_long(argc, argv, "touch", 1);
  uniform_sizes = arg_long(argc, argv, "uniform", 0);
  double limit = arg_double(argc, argv, "limit", 60);
  if (threads < 1 || live < 1 || min_size < 1 || max_size < min_size) {
    fprintf(stderr, "buffers: bad arguments\n");
    return 2;
  }
  ops_per_thread = ops / threads;
  double t0 = bench_now();
  deadline = t0 + limit;
  int timeout;
  uint64_t checksum = bench_run_workers(threads, buffer_thread, &timeout);
  double dt = bench_now() - t0;
  double done = (double)ops_per_thread * threads;
  printf("buffers: %d threads, %.0f steps in %.3f s: %.2f M steps/s (checksum %llu)%s\n", threads, done, dt,
         done / dt / 1e6, (unsigned long long)checksum, timeout ? " TIMED OUT" : "");
  bench_result("ops_per_s=%.0f seconds=%.4f checksum=%llu timeout=%d", done / dt, dt, (unsigned long long)checksum,
               timeout);
  return 0;
}
