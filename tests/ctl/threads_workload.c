/* SPDX-License-Identifier: MIT */
/*
 * ctl.threads: named threads allocate known counts and exit; check_threads.py reads the
 * exit statistics (stats_prefix file) and checks the threads section, nthreads_peak,
 * pid/cmdline/time. Also checks arena_exclusive: a thread named "hot" gets an arena of
 * its own (argument "exclusive").
 */
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tessera.h"
#include "tt.h"

#define PER_THREAD 50000

static pthread_barrier_t all_started, all_bound, refreshed;

static void *work(void *arg) {
  pthread_setname_np(pthread_self(), (const char *)arg);
  pthread_barrier_wait(&all_started);
  void *volatile first = malloc(32); /* binds the thread to an arena */
  free(first);
  pthread_barrier_wait(&all_bound); /* all bound at once: main refreshes the statistics */
  pthread_barrier_wait(&refreshed);
  for (int i = 0; i < PER_THREAD; i++) {
    void *volatile p = malloc(48);
    free(p);
  }
  unsigned arena;
  size_t len = sizeof(arena);
  TT_CHECK(tessera_ctl("thread.arena", &arena, &len, NULL, 0) == 0);
  return (void *)(uintptr_t)arena;
}

int main(int argc, char **argv) {
  bool exclusive = argc > 1 && strcmp(argv[1], "exclusive") == 0;
  const char *names[4] = {"hot", "pool", "pool", "q\"uote"};
  pthread_t t[4];
  pthread_barrier_init(&all_started, NULL, 4);
  pthread_barrier_init(&all_bound, NULL, 5);
  pthread_barrier_init(&refreshed, NULL, 5);
  for (int i = 0; i < 4; i++) TT_CHECK(pthread_create(&t[i], NULL, work, (void *)names[i]) == 0);
  pthread_barrier_wait(&all_bound);
  uint64_t epoch = 1;
  TT_CHECK(tessera_ctl("epoch", NULL, NULL, &epoch, sizeof(epoch)) == 0); /* samples the bound threads */
  pthread_barrier_wait(&refreshed);
  uintptr_t arena[4];
  for (int i = 0; i < 4; i++) {
    void *r;
    pthread_join(t[i], &r);
    arena[i] = (uintptr_t)r;
  }
  unsigned automatic;
  size_t len = sizeof(automatic);
  TT_CHECK(tessera_ctl("opt.narenas", &automatic, &len, NULL, 0) == 0);
  if (exclusive) { /* "hot" names itself before its first malloc */
    TT_CHECKF(arena[0] >= automatic, "hot ran in arena %u, not an exclusive one", (unsigned)arena[0]);
    for (int i = 1; i < 4; i++) TT_CHECKF(arena[i] < automatic, "thread %d in arena %u", i, (unsigned)arena[i]);
  }
  unsigned peak;
  len = sizeof(peak);
  TT_CHECK(tessera_ctl("arenas.nthreads_peak", &peak, &len, NULL, 0) == 0);
  TT_CHECKF(peak >= 5, "nthreads_peak %u, expected 5 (main + 4 at once)", peak);
  printf("ctl.threads workload: done\n");
  return 0;
}
