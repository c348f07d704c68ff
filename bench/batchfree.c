/* SPDX-License-Identifier: MIT */
/* Big batches of one size (glibc's bench-malloc-simple shape).
 *
 * For each size in `sizes` and each batch length in `counts`: allocate `count` blocks of
 * that one size, free them all (in allocation order, as a program tearing down a list
 * does), and repeat until `n` blocks of that (size, count) were done. A batch of 1000+
 * blocks of one size overflows any small per-thread cache, so this measures how the
 * allocator refills the cache from its shared structures and flushes it back.
 *
 * With `threads=T`, T threads run the same loop at once on their own blocks (and with
 * threads=1 a second, idle thread exists first, with `idle=1`, so that an allocator that
 * skips locking while a process is single-threaded cannot).
 *
 *   batchfree sizes=16,64,256,1024 counts=25,100,400,1600 n=4m threads=1 idle=0 limit=60
 */
#include <pthread.h>

#include "common.h"

#define MAX_LIST 16

static size_t sizes[MAX_LIST], counts[MAX_LIST];
static int nsizes, ncounts;
static long long per_combo;
static double deadline;

static int parse_list(const char *s, size_t *out) {
  int n = 0;
  while (*s && n < MAX_LIST) {
    char *end;
    out[n++] = (size_t)strtoull(s, &end, 10);
    if (end == s) return -1;
    s = *end == ',' ? end + 1 : end;
  }
  return n;
}

/* One (size, count) combination; returns 1 when the time limit was hit. */
static int run_batches(size_t size, size_t count, void **slots) {
  for (long long done = 0; done < per_combo; done += (long long)count) {
    if (bench_now() > deadline) return 1;
    for (size_t j = 0; j < count; j++) {
      slots[j] = bench_check(malloc(size), size);
      *(char *)slots[j] = (char)j;
    }
    for (size_t j = 0; j < count; j++) free(slots[j]);
  }
  return 0;
}

static void *worker(void *arg) {
  size_t most = 0;
  for (int c = 0; c < ncounts; c++) most = counts[c] > most ? counts[c] : most;
  void **slots = bench_check(malloc(most * sizeof *slots), most * sizeof *slots);
  long timed_out = 0;
  for (int s = 0; s < nsizes && !timed_out; s++)
    for (int c = 0; c < ncounts && !timed_out; c++) timed_out = run_batches(sizes[s], counts[c], slots);
  free(slots);
  *(long *)arg = timed_out;
  return NULL;
}

static void *idle_thread(void *arg) { return arg; }

int main(int argc, char **argv) {
  nsizes = parse_list(arg_str(argc, argv, "sizes", "16,64,256,1024"), sizes);
  ncounts = parse_list(arg_str(argc, argv, "counts", "25,100,400,1600"), counts);
  long long n = arg_long(argc, argv, "n", 4000000);
  int threads = (int)arg_long(argc, argv, "threads", 1);
  int idle = (int)arg_long(argc, argv, "idle", 0);
  deadline = bench_now() + arg_double(argc, argv, "limit", 60);
  if (nsizes < 1 || ncounts < 1 || threads < 1 || threads > 256) {
    fprintf(stderr, "batchfree: bad sizes=, counts= or threads= (1..256)\n");
    return 2;
  }
  per_combo = n / (nsizes * ncounts);
  if (idle) { /* the process is multi-threaded from here on */
    pthread_t t;
    pthread_create(&t, NULL, idle_thread, NULL);
    pthread_join(t, NULL);
  }
  pthread_t tid[256];
  long timed_out[256] = {0};
  double t0 = bench_now();
  for (int i = 0; i < threads; i++) pthread_create(&tid[i], NULL, worker, &timed_out[i]);
  long any = 0;
  for (int i = 0; i < threads; i++) {
    pthread_join(tid[i], NULL);
    any |= timed_out[i];
  }
  double dt = bench_now() - t0;
  double pairs = (double)per_combo * nsizes * ncounts * threads;
  printf("batchfree: %d thread(s), %.1f M malloc/free pairs in %.3f s%s\n", threads, pairs / 1e6,
         dt, any ? " TIMED OUT" : "");
  bench_result("ops_per_s=%.0f seconds=%.4f timeout=%ld", pairs / dt, dt, any);
  return 0;
}
