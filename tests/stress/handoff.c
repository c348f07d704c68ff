/* SPDX-License-Identifier: MIT */
/*
 * stress.handoff_N: N threads allocate blocks, fill them with a pattern and hand each one to
 * a random thread (often another one) through that thread's queue; the receiver checks the
 * content and frees it. Exercises cross-thread free (remote free) at every size class, with
 * 2 threads (little contention) and 64 threads (much more threads than cores).
 *
 * usage: handoff [threads [blocks_per_thread [seed]]]
 */
#include "tt.h"

#include <inttypes.h>
#include <malloc.h>
#include <pthread.h>
#include <stdatomic.h>

/* Lives at the start of every handed-off block; the pattern covers the rest. */
typedef struct block {
  struct block *next;
  size_t size;
  uint64_t seed;
  uint64_t owner; /* the allocating thread, for messages */
} block;

typedef struct queue {
  pthread_mutex_t lock;
  block *head;
} queue;

static int nthreads;
static long blocks_per_thread;
static uint64_t base_seed;
static queue *queues;
static atomic_long blocks_freed;
static atomic_long cross_thread_frees;

static void push(queue *q, block *b) {
  pthread_mutex_lock(&q->lock);
  b->next = q->head;
  q->head = b;
  pthread_mutex_unlock(&q->lock);
}

static block *take_all(queue *q) {
  pthread_mutex_lock(&q->lock);
  block *all = q->head;
  q->head = NULL;
  pthread_mutex_unlock(&q->lock);
  return all;
}

static void check_and_free(block *b, uint64_t self) {
  unsigned char *payload = (unsigned char *)(b + 1);
  TT_VERIFY(payload, b->size - sizeof(block), b->seed, "handed-off block");
  if (b->owner != self) atomic_fetch_add(&cross_thread_frees, 1);
  free(b);
  atomic_fetch_add(&blocks_freed, 1);
}

static long drain(uint64_t self) {
  long n = 0;
  for (block *b = take_all(&queues[self]); b != NULL; n++) {
    block *next = b->next;
    check_and_free(b, self);
    b = next;
  }
  return n;
}

static void *worker(void *arg) {
  uint64_t self = (uint64_t)(uintptr_t)arg;
  tt_rng rng;
  tt_rng_seed(&rng, base_seed * 1000003u + self);
  for (long i = 0; i < blocks_per_thread; i++) {
    size_t size;
    uint64_t r = tt_rng_below(&rng, 1000);
    if (r < 950) size = tt_rng_log_uniform(&rng, sizeof(block), 2048);
    else if (r < 998) size = tt_rng_log_uniform(&rng, 2049, 256 << 10);
    else size = tt_rng_log_uniform(&rng, (256 << 10) + 1, 4 << 20);
    block *b = (tt_rng_below(&rng, 8) == 0) ? aligned_alloc(64, size) : malloc(size);
    TT_CHECKF(b != NULL, "thread %" PRIu64 ": allocation of %zu failed", self, size);
    TT_CHECK(tt_is_aligned(b, 16) && malloc_usable_size(b) >= size);
    b->size = size;
    b->owner = self;
    b->seed = tt_pattern_seed(b, self << 40 | (uint64_t)i);
    tt_fill(b + 1, size - sizeof(block), b->seed);
    push(&queues[tt_rng_below(&rng, (uint64_t)nthreads)], b);
    if ((i & 15) == 0) drain(self);
  }
  /* Keep freeing what others send until every block of every thread is freed. */
  const long total = (long)nthreads * blocks_per_thread;
  while (atomic_load(&blocks_freed) < total) {
    if (drain(self) == 0) sched_yield();
  }
  return NULL;
}

int main(int argc, char **argv) {
  nthreads = (int)tt_arg_long(argc, argv, 1, 2);
  blocks_per_thread = tt_arg_long(argc, argv, 2, 200000);
  base_seed = (uint64_t)tt_arg_long(argc, argv, 3, 7);
  printf("stress.handoff: %d threads, %ld blocks each, seed %" PRIu64 "\n", nthreads,
         blocks_per_thread, base_seed);
  fflush(stdout);
  tt_require_tessera();
  tt_watchdog(300, "stress.handoff");

  queues = calloc((size_t)nthreads, sizeof(queue));
  pthread_t *threads = calloc((size_t)nthreads, sizeof(pthread_t));
  TT_CHECK(queues != NULL && threads != NULL);
  for (int t = 0; t < nthreads; t++) pthread_mutex_init(&queues[t].lock, NULL);
  for (int t = 0; t < nthreads; t++) {
    int rc = pthread_create(&threads[t], NULL, worker, (void *)(uintptr_t)t);
    TT_CHECKF(rc == 0, "pthread_create: %s", strerror(rc));
  }
  for (int t = 0; t < nthreads; t++) pthread_join(threads[t], NULL);
  for (int t = 0; t < nthreads; t++) TT_CHECK(queues[t].head == NULL);
  long total = (long)nthreads * blocks_per_thread;
  TT_CHECKF(atomic_load(&blocks_freed) == total, "freed %ld of %ld blocks",
            atomic_load(&blocks_freed), total);
  if (nthreads > 1)
    TT_CHECKF(atomic_load(&cross_thread_frees) > total / (2 * nthreads),
              "too few cross-thread frees (%ld): the test did not test remote frees",
              atomic_load(&cross_thread_frees));
  printf("stress.handoff: ok: %ld blocks, %ld freed by another thread\n", total,
         atomic_load(&cross_thread_frees));
  free(queues);
  free(threads);
  return 0;
}
