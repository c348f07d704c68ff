/* SPDX-License-Identifier: MIT */
/* Many allocating threads, many freeing threads (xmalloc-test-like).
 *
 * `threads` producer threads allocate blocks of random small size in batches of `batch`
 * and push each full batch onto one shared stack; as many consumer threads pop batches
 * and free every block in them. No block is freed by the thread that allocated it, and
 * which consumer frees a producer's block is arbitrary: every free is remote, from
 * several threads to several threads. The stack holds at most `inflight` batches (a
 * producer waits when it is full), so the live heap stays bounded and the peak RSS says
 * how much the allocator keeps around for memory freed far from where it came from.
 *
 *   xmalloc threads=2 blocks=20m batch=100 inflight=64 min=16 max=256 limit=60
 */
#include <pthread.h>

#include "common.h"

typedef struct batch {
  struct batch *next;
  void *blocks[];
} batch;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t not_full = PTHREAD_COND_INITIALIZER, not_empty = PTHREAD_COND_INITIALIZER;
static batch *stack;
static long long pending, inflight, batch_len, batches_per_producer, min_size, max_size;
static int producers_left;
static double deadline;
static int timed_out;
static uint64_t consumed_sum;

static void push(batch *b) {
  pthread_mutex_lock(&lock);
  while (pending >= inflight) pthread_cond_wait(&not_full, &lock);
  b->next = stack;
  stack = b;
  pending++;
  pthread_cond_signal(&not_empty);
  pthread_mutex_unlock(&lock);
}

/* Returns NULL once every producer is done and the stack is empty. */
static batch *pop(void) {
  pthread_mutex_lock(&lock);
  while (!stack && producers_left > 0) pthread_cond_wait(&not_empty, &lock);
  batch *b = stack;
  if (b) {
    stack = b->next;
    pending--;
    pthread_cond_signal(&not_full);
  }
  pthread_mutex_unlock(&lock);
  return b;
}

static void *producer(void *arg) {
  bench_rng rng;
  rng_seed(&rng, (uint64_t)(size_t)arg);
  for (long long i = 0; i < batches_per_producer; i++) {
    if ((i & 63) == 0 && bench_now() > deadline) {
      __atomic_store_n(&timed_out, 1, __ATOMIC_RELAXED);
      break;
    }
    size_t bytes = sizeof(batch) + (size_t)batch_len * sizeof(void *);
    batch *b = bench_check(malloc(bytes), bytes);
    for (long long j = 0; j < batch_len; j++) {
      size_t size = (size_t)rng_log_range(&rng, (uint64_t)min_size, (uint64_t)max_size);
      unsigned char *p = bench_check(malloc(size), size);
      p[0] = (unsigned char)j;
      b->blocks[j] = p;
    }
    push(b);
  }
  pthread_mutex_lock(&lock);
  producers_left--;
  pthread_cond_broadcast(&not_empty);
  pthread_mutex_unlock(&lock);
  return NULL;
}

static void *consumer(void *arg) {
  (void)arg;
  uint64_t sum = 0;
  for (batch *b; (b = pop()) != NULL;) {
    for (long long j = 0; j < batch_len; j++) {
      sum += *(unsigned char *)b->blocks[j];
      free(b->blocks[j]);
    }
    free(b);
  }
  __atomic_fetch_add(&consumed_sum, sum, __ATOMIC_RELAXED);
  return NULL;
}

int main(int argc, char **argv) {
  int threads = (int)arg_long(argc, argv, "threads", 2);
  long long blocks = arg_long(argc, argv, "blocks", 20000000);
  batch_len = arg_long(argc, argv, "batch", 100);
  inflight = arg_long(argc, argv, "inflight", 64);
  min_size = arg_long(argc, argv, "min", 16);
  max_size = arg_long(argc, argv, "max", 256);
  deadline = bench_now() + arg_double(argc, argv, "limit", 60);
  if (threads < 1 || threads > 128 || batch_len < 1 || inflight < 1 || min_size < 1 ||
      max_size < min_size) {
    fprintf(stderr, "xmalloc: need 1 <= threads <= 128, batch, inflight >= 1, 1 <= min <= max\n");
    return 2;
  }
  batches_per_producer = blocks / (batch_len * threads);
  producers_left = threads;
  pthread_t prod[128], cons[128];
  double t0 = bench_now();
  for (int i = 0; i < threads; i++) {
    pthread_create(&prod[i], NULL, producer, (void *)(size_t)(i + 1));
    pthread_create(&cons[i], NULL, consumer, NULL);
  }
  for (int i = 0; i < threads; i++) pthread_join(prod[i], NULL);
  for (int i = 0; i < threads; i++) pthread_join(cons[i], NULL);
  double dt = bench_now() - t0;
  long long done = batches_per_producer * batch_len * threads;
  printf("xmalloc: %d+%d threads, %lld blocks in %.3f s%s\n", threads, threads, done, dt,
         timed_out ? " TIMED OUT" : "");
  bench_result("ops_per_s=%.0f seconds=%.4f checksum=%llu timeout=%d", (double)done / dt, dt,
               (unsigned long long)consumed_sum, timed_out);
  return 0;
}
