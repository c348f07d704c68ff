/* SPDX-License-Identifier: MIT */
/*
 * stress.exit_remote_free: producer threads allocate blocks of every size class, publish
 * them and exit; only then do consumer threads (not the main thread) verify and free them,
 * while allocating themselves. The memory of a dead thread's caches and slabs must stay
 * valid and be reclaimable by whoever frees it. Repeated in several rounds so freed memory
 * of dead threads is reused by new ones.
 *
 * usage: exit_remote_free [rounds [producers [blocks_per_producer]]]
 */
#include "tt.h"

#include <malloc.h>
#include <pthread.h>
#include <stdatomic.h>

typedef struct entry {
  unsigned char *p;
  size_t size;
  uint64_t seed;
} entry;

static entry *entries;
static int producers, per_producer;
static atomic_long next_to_free;

static void *produce(void *arg) {
  int id = (int)(uintptr_t)arg;
  tt_rng rng;
  tt_rng_seed(&rng, (uint64_t)id * 31 + 5);
  for (int i = 0; i < per_producer; i++) {
    entry *e = &entries[id * per_producer + i];
    e->size = tt_rng_below(&rng, 100) == 0 ? tt_rng_log_uniform(&rng, 16385, 2 << 20)
                                           : tt_rng_log_uniform(&rng, 1, 16384);
    e->p = (i % 5 == 0) ? calloc(1, e->size) : malloc(e->size);
    TT_CHECK(e->p != NULL);
    e->seed = tt_pattern_seed(e->p, (uint64_t)id << 32 | (uint64_t)i);
    tt_fill(e->p, e->size, e->seed);
  }
  return NULL; /* exits with all its blocks still allocated */
}

static void *consume(void *arg) {
  (void)arg;
  const long total = (long)producers * per_producer;
  void *mine[16] = {0};
  for (;;) {
    long k = atomic_fetch_add(&next_to_free, 1);
    if (k >= total) break;
    entry *e = &entries[k];
    TT_VERIFY(e->p, e->size, e->seed, "block of an exited producer");
    /* realloc some instead of freeing them directly: realloc of a dead thread's block. */
    if (k % 7 == 0) {
      unsigned char *q = realloc(e->p, e->size + 100);
      TT_CHECK(q != NULL);
      TT_VERIFY(q, e->size, e->seed, "block of an exited producer after realloc");
      e->p = q;
    }
    free(e->p);
    e->p = NULL;
    /* The consumer allocates too, reusing what it just freed. */
    free(mine[k % 16]);
    mine[k % 16] = malloc((size_t)(k % 4000) + 1);
    TT_CHECK(mine[k % 16] != NULL);
  }
  for (int i = 0; i < 16; i++) free(mine[i]);
  return NULL;
}

int main(int argc, char **argv) {
  int rounds = (int)tt_arg_long(argc, argv, 1, 8);
  producers = (int)tt_arg_long(argc, argv, 2, 8);
  per_producer = (int)tt_arg_long(argc, argv, 3, 3000);
  tt_require_tessera();
  tt_watchdog(300, "stress.exit_remote_free");

  entries = calloc((size_t)producers * (size_t)per_producer, sizeof(entry));
  pthread_t *threads = calloc((size_t)producers, sizeof(pthread_t));
  TT_CHECK(entries != NULL && threads != NULL);
  for (int r = 0; r < rounds; r++) {
    for (int t = 0; t < producers; t++)
      TT_CHECK(pthread_create(&threads[t], NULL, produce, (void *)(uintptr_t)t) == 0);
    for (int t = 0; t < producers; t++) TT_CHECK(pthread_join(threads[t], NULL) == 0);
    /* All producers are gone now. */
    atomic_store(&next_to_free, 0);
    enum { CONSUMERS = 3 };
    pthread_t consumers[CONSUMERS];
    for (int t = 0; t < CONSUMERS; t++)
      TT_CHECK(pthread_create(&consumers[t], NULL, consume, NULL) == 0);
    for (int t = 0; t < CONSUMERS; t++) TT_CHECK(pthread_join(consumers[t], NULL) == 0);
    for (long k = 0; k < (long)producers * per_producer; k++) TT_CHECK(entries[k].p == NULL);
  }
  free(entries);
  free(threads);
  printf("stress.exit_remote_free: ok: %d rounds of %d producers x %d blocks\n", rounds,
         producers, per_producer);
  return 0;
}
