/* SPDX-License-Identifier: MIT */
/*
 * stress.thread_churn: 1000+ short-lived threads, created and destroyed in overlapping
 * waves, each allocating and freeing a few hundred blocks; every thread also leaves some
 * blocks behind that the main thread checks and frees after the thread has exited (thread
 * caches and per-thread state must be torn down without losing or corrupting them).
 *
 * usage: thread_churn [threads [concurrent]]
 */
#include "tt.h"

#include <malloc.h>
#include <pthread.h>

typedef struct leftover {
  unsigned char *p;
  size_t size;
  uint64_t seed;
} leftover;

enum { LEFT_PER_THREAD = 8, OPS_PER_THREAD = 300 };

typedef struct job {
  uint64_t id;
  leftover left[LEFT_PER_THREAD];
} job;

static void *churn(void *arg) {
  job *j = arg;
  tt_rng rng;
  tt_rng_seed(&rng, j->id);
  enum { LIVE = 32 };
  unsigned char *live[LIVE] = {0};
  size_t sizes[LIVE] = {0};
  for (int op = 0; op < OPS_PER_THREAD; op++) {
    size_t i = (size_t)tt_rng_below(&rng, LIVE);
    if (live[i] != NULL) {
      TT_VERIFY(live[i], sizes[i], tt_pattern_seed(live[i], j->id), "thread block");
      free(live[i]);
    }
    sizes[i] = tt_rng_below(&rng, 64) == 0 ? tt_rng_log_uniform(&rng, 16385, 1 << 20)
                                           : tt_rng_log_uniform(&rng, 1, 16384);
    live[i] = malloc(sizes[i]);
    TT_CHECK(live[i] != NULL);
    tt_fill(live[i], sizes[i], tt_pattern_seed(live[i], j->id));
  }
  for (size_t i = 0; i < LIVE; i++) {
    if (live[i] == NULL) { /* a slot the random walk never touched */
      sizes[i] = 1 + i;
      live[i] = malloc(sizes[i]);
      TT_CHECK(live[i] != NULL);
      tt_fill(live[i], sizes[i], tt_pattern_seed(live[i], j->id));
    }
    if (i < LEFT_PER_THREAD) {
      /* Left behind: freed by the main thread after this thread exits. */
      j->left[i] = (leftover){live[i], sizes[i], tt_pattern_seed(live[i], j->id)};
    } else {
      free(live[i]);
    }
  }
  return NULL;
}

int main(int argc, char **argv) {
  int total = (int)tt_arg_long(argc, argv, 1, 1200);
  int concurrent = (int)tt_arg_long(argc, argv, 2, 16);
  tt_require_tessera();
  tt_watchdog(300, "stress.thread_churn");

  job *jobs = calloc((size_t)total, sizeof(job));
  pthread_t *threads = calloc((size_t)total, sizeof(pthread_t));
  TT_CHECK(jobs != NULL && threads != NULL);
  long leftovers_freed = 0;
  /* A sliding window: thread k is joined when thread k + concurrent is created. */
  for (int k = 0; k < total + concurrent; k++) {
    if (k >= concurrent) {
      int old = k - concurrent;
      TT_CHECK(pthread_join(threads[old], NULL) == 0);
      for (int i = 0; i < LEFT_PER_THREAD; i++) {
        leftover *l = &jobs[old].left[i];
        TT_CHECK(l->p != NULL);
        TT_VERIFY(l->p, l->size, l->seed, "block of an exited thread");
        free(l->p);
        leftovers_freed++;
      }
    }
    if (k < total) {
      jobs[k].id = (uint64_t)k + 1;
      int rc = pthread_create(&threads[k], NULL, churn, &jobs[k]);
      TT_CHECKF(rc == 0, "pthread_create #%d: %s", k, strerror(rc));
    }
  }
  free(jobs);
  free(threads);
  printf("stress.thread_churn: ok: %d threads (%d at a time), %ld blocks freed after their "
         "thread exited\n",
         total, concurrent, leftovers_freed);
  return 0;
}
