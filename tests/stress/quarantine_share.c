/* SPDX-License-Identifier: MIT */
/*
 * hardened.stress.quarantine_share: in hardened mode (run with TESSERA_CONF=hardened:true)
 * the threads' quarantine rings share hardened_quarantine (4 MiB by default): a quarter
 * of it each while at most 4 threads have one, an equal part beyond (never less than a
 * 64th), so that many threads do not hold many times the option in freed blocks.
 * THREADS threads each free 3 MiB of 1 KiB blocks (each zeroed at its free: its pages
 * resident), all alive: the process's peak RSS must grow by about the option's bytes
 * and the threads' caches, not THREADS times a quarter of the option.
 *
 * usage: quarantine_share
 */
#include "tt.h"

#include <pthread.h>
#include <stdbool.h>
#include <sys/resource.h>

#define THREADS 32
#define BLOCK 1024
#define FREES 3000

static pthread_barrier_t started, freed, measured;

static void *worker(void *arg) {
  (void)arg;
  for (int i = 0; i < 100; i++) free(malloc(BLOCK)); /* this thread's cache and ring */
  pthread_barrier_wait(&started); /* every ring exists: the share is final */
  for (int i = 0; i < FREES; i++) {
    char *p = malloc(BLOCK);
    TT_CHECK(p != NULL);
    p[0] = 1;
    free(p);
  }
  pthread_barrier_wait(&freed);
  pthread_barrier_wait(&measured);
  return NULL;
}

int main(void) {
  tt_require_tessera();
  free(malloc(BLOCK)); /* this thread's ring too */
  pthread_t t[THREADS];
  TT_CHECK(pthread_barrier_init(&started, NULL, THREADS + 1) == 0);
  TT_CHECK(pthread_barrier_init(&freed, NULL, THREADS + 1) == 0);
  TT_CHECK(pthread_barrier_init(&measured, NULL, THREADS + 1) == 0);
  for (int i = 0; i < THREADS; i++) TT_CHECK(pthread_create(&t[i], NULL, worker, NULL) == 0);
  pthread_barrier_wait(&started);
  long before = tt_peak_rss_kib();
  pthread_barrier_wait(&freed);
  long held = tt_peak_rss_kib() - before;
  pthread_barrier_wait(&measured);
  for (int i = 0; i < THREADS; i++) TT_CHECK(pthread_join(t[i], NULL) == 0);
  printf("hardened.stress.quarantine_share: %d threads: peak RSS up by %ld KiB\n", THREADS, held);
  /* 4 MiB shared, and each thread's cache; a quarter of it each would be 32 MiB. */
  TT_CHECKF(held < 16 * 1024, "%d threads: peak RSS up by %ld KiB", THREADS, held);
  return 0;
}
