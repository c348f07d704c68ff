/* SPDX-License-Identifier: MIT */
/* Multi-threaded workloads' threads: each runs the workload's function on its own
 * bench_worker (its index in; its checksum and whether it ran out of time out). */
#ifndef TESSERA_BENCH_WORKERS_H
#define TESSERA_BENCH_WORKERS_H

#include <pthread.h>

#include "common.h"

typedef struct {
  int id;
  int timed_out;
  uint64_t checksum;
} bench_worker;

/* Runs fn on n threads, ids 0 .. n-1, and waits for them all; returns the sum of their
 * checksums, *timed_out set when any of them ran out of time. */
static BENCH_UNUSED uint64_t bench_run_workers(int n, void *(*fn)(void *), int *timed_out) {
  pthread_t *tids = bench_check(calloc((size_t)n, sizeof *tids), 1);
  bench_worker *ws = bench_check(calloc((size_t)n, sizeof *ws), 1);
  for (int i = 0; i < n; i++) {
    ws[i].id = i;
    pthread_create(&tids[i], NULL, fn, &ws[i]);
  }
  uint64_t sum = 0;
  *timed_out = 0;
  for (int i = 0; i < n; i++) {
    pthread_join(tids[i], NULL);
    sum += ws[i].checksum;
    *timed_out |= ws[i].timed_out;
  }
  free(tids);
  free(ws);
  return sum;
}

#endif
