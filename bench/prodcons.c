/* SPDX-License-Identifier: MIT */
/* Workload 3: producer/consumer (xmalloc-like).
 *
 * One thread allocates, another frees: every block crosses threads, so each free is a
 * remote free. The producer fills batches of `batch` blocks of random small sizes and
 * passes each batch through a bounded single-producer/single-consumer ring; the consumer
 * reads one byte of every block (so it really touches it) and frees it.
 *
 *   prodcons blocks=20m batch=64 min=16 max=512 limit=60
 */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>

#include "common.h"

#define RING 256 /* batches in flight: enough to decouple the threads, small enough to stay hot */

static void **ring[RING];
static atomic_llong head, tail; /* head: next to fill (producer), tail: next to drain */
static long long total_blocks, batch_size, min_size, max_size;
static double deadline;
static atomic_int stop;
static uint64_t consumer_sum;

static void *producer(void *arg) {
  (void)arg;
  bench_rng rng;
  rng_seed(&rng, 42);
  long long batches = total_blocks / batch_size;
  for (long long b = 0; b < batches; b++) {
    if ((b & 255) == 0 && bench_now() > deadline) break;
    void **blocks = bench_check(malloc((size_t)batch_size * sizeof *blocks), 1);
    for (long long i = 0; i < batch_size; i++) {
      size_t size = (size_t)rng_log_range(&rng, (uint64_t)min_size, (uint64_t)max_size);
      unsigned char *p = bench_check(malloc(size), size);
      p[0] = (unsigned char)i;
      blocks[i] = p;
    }
    /* Wait for room; yield rather than spin hard, there are only two cores. */
    while (atomic_load_explicit(&head, memory_order_relaxed) -
               atomic_load_explicit(&tail, memory_order_acquire) >= RING)
      sched_yield();
    long long h = atomic_load_explicit(&head, memory_order_relaxed);
    ring[h % RING] = blocks;
    atomic_store_explicit(&head, h + 1, memory_order_release);
  }
  atomic_store(&stop, 1);
  return NULL;
}

static void *consumer(void *arg) {
  (void)arg;
  for (;;) {
    long long t = atomic_load_explicit(&tail, memory_order_relaxed);
    if (t == atomic_load_explicit(&head, memory_order_acquire)) {
      if (atomic_load(&stop) && t == atomic_load(&head)) break;
      sched_yield();
      continue;
    }
    void **blocks = ring[t % RING];
    for (long long i = 0; i < batch_size; i++) {
      consumer_sum += *(unsigned char *)blocks[i];
      free(blocks[i]);
    }
    free(blocks);
    atomic_store_explicit(&tail, t + 1, memory_order_release);
  }
  return NULL;
}

int main(int argc, char **argv) {
  total_blocks = arg_long(argc, argv, "blocks", 20000000);
  batch_size = arg_long(argc, argv, "batch", 64);
  min_size = arg_long(argc, argv, "min", 16);
  max_size = arg_long(argc, argv, "max", 512);
  double limit = arg_double(argc, argv, "limit", 60);
  double t0 = bench_now();
  deadline = t0 + limit;
  pthread_t p, c;
  pthread_create(&c, NULL, consumer, NULL);
  pthread_create(&p, NULL, producer, NULL);
  pthread_join(p, NULL);
  pthread_join(c, NULL);
  double dt = bench_now() - t0;
  long long done = atomic_load(&tail) * batch_size;
  int timeout = done < total_blocks / batch_size * batch_size;
  printf("prodcons: %lld blocks in %.3f s: %.2f M blocks/s (checksum %llu)%s\n", done, dt,
         (double)done / dt / 1e6, (unsigned long long)consumer_sum, timeout ? " TIMED OUT" : "");
  bench_result("ops_per_s=%.0f seconds=%.4f checksum=%llu timeout=%d", (double)done / dt, dt,
               (unsigned long long)consumer_sum, timeout);
  return 0;
}
