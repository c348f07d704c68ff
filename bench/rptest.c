/* SPDX-License-Identifier: MIT */
/* Many threads, random sizes, a share of blocks freed by another thread (rptest-like).
 *
 * Each of `threads` threads runs `loops` loops. In a loop it allocates `batch` blocks of
 * log-uniform size in [`min`, `max`] and writes their first bytes; it frees the blocks it
 * allocated `delay` loops ago (so every block lives for a while, in a random order), and
 * one block in `cross` goes instead to the next thread's inbox, to be freed there. It
 * then frees whatever its own inbox holds. Remote frees are a steady fraction of all frees,
 * from every thread to every thread; the live heap is about threads * batch * delay blocks.
 *
 *   rptest threads=8 loops=400 batch=2000 delay=4 cross=4 min=16 max=16K limit=60
 */
#include <pthread.h>

#include "common.h"

typedef struct {
  pthread_mutex_t lock;
  void **blocks;
  long long count, cap;
} inbox;

static int nthreads;
static long long loops, batch, delay, cross_every, min_size, max_size;
static inbox *inboxes;
static double deadline;
static int timed_out;

static void inbox_put(inbox *in, void *p) {
  pthread_mutex_lock(&in->lock);
  if (in->count == in->cap) {
    long long cap = in->cap ? in->cap * 2 : 1024;
    in->blocks = bench_check(realloc(in->blocks, (size_t)cap * sizeof(void *)), 1);
    in->cap = cap;
  }
  in->blocks[in->count++] = p;
  pthread_mutex_unlock(&in->lock);
}

/* Frees everything in the inbox (a hand-full at a time, outside the lock). */
static void inbox_drain(inbox *in) {
  void *local[256];
  for (;;) {
    pthread_mutex_lock(&in->lock);
    long long n = in->count < 256 ? in->count : 256;
    in->count -= n;
    memcpy(local, in->blocks + in->count, (size_t)n * sizeof(void *));
    pthread_mutex_unlock(&in->lock);
    if (n == 0) return;
    for (long long i = 0; i < n; i++) free(local[i]);
  }
}

static void *worker(void *arg) {
  int id = (int)(size_t)arg;
  bench_rng rng;
  rng_seed(&rng, 77 + (uint64_t)id);
  inbox *next = &inboxes[(id + 1) % nthreads];
  void **ring = bench_check(calloc((size_t)(batch * delay), sizeof(void *)), 1);
  for (long long l = 0; l < loops; l++) {
    if (bench_now() > deadline) {
      __atomic_store_n(&timed_out, 1, __ATOMIC_RELAXED);
      break;
    }
    void **row = ring + (l % delay) * batch; /* the blocks of `delay` loops ago */
    for (long long j = 0; j < batch; j++) {
      long long k = (long long)(rng_next(&rng) % (uint64_t)batch); /* a random order */
      void *old = row[k];
      row[k] = row[j];
      row[j] = old;
    }
    for (long long j = 0; j < batch; j++) {
      if (row[j] && rng_next(&rng) % (uint64_t)cross_every == 0) inbox_put(next, row[j]);
      else free(row[j]);
      size_t size = (size_t)rng_log_range(&rng, (uint64_t)min_size, (uint64_t)max_size);
      unsigned char *p = bench_check(malloc(size), size);
      memset(p, (int)j, size < 64 ? size : 64);
      row[j] = p;
    }
    inbox_drain(&inboxes[id]);
  }
  for (long long j = 0; j < batch * delay; j++) free(ring[j]);
  free(ring);
  return NULL;
}

int main(int argc, char **argv) {
  nthreads = (int)arg_long(argc, argv, "threads", 8);
  loops = arg_long(argc, argv, "loops", 400);
  batch = arg_long(argc, argv, "batch", 2000);
  delay = arg_long(argc, argv, "delay", 4);
  cross_every = arg_long(argc, argv, "cross", 4);
  min_size = arg_long(argc, argv, "min", 16);
  max_size = arg_long(argc, argv, "max", 16 << 10);
  deadline = bench_now() + arg_double(argc, argv, "limit", 60);
  if (nthreads < 1 || nthreads > 256 || loops < 1 || batch < 1 || delay < 1 || cross_every < 1 ||
      min_size < 1 || max_size < min_size) {
    fprintf(stderr, "rptest: need 1 <= threads <= 256, loops, batch, delay, cross >= 1, "
                    "1 <= min <= max\n");
    return 2;
  }
  inboxes = bench_check(calloc((size_t)nthreads, sizeof *inboxes), 1);
  for (int i = 0; i < nthreads; i++) pthread_mutex_init(&inboxes[i].lock, NULL);
  pthread_t tid[256];
  double t0 = bench_now();
  for (int i = 0; i < nthreads; i++) pthread_create(&tid[i], NULL, worker, (void *)(size_t)i);
  for (int i = 0; i < nthreads; i++) pthread_join(tid[i], NULL);
  for (int i = 0; i < nthreads; i++) {
    inbox_drain(&inboxes[i]);
    free(inboxes[i].blocks);
  }
  free(inboxes);
  double dt = bench_now() - t0;
  double ops = (double)nthreads * (double)loops * (double)batch;
  printf("rptest: %d threads, %.1f M blocks in %.3f s%s\n", nthreads, ops / 1e6, dt,
         timed_out ? " TIMED OUT" : "");
  bench_result("ops_per_s=%.0f seconds=%.4f timeout=%d", ops / dt, dt, timed_out);
  return 0;
}
