/* SPDX-License-Identifier: MIT */
/* Long runs of one size through a ring of pointers (the shape of MicroQuill's sh6bench).
 *
 * Each thread owns a ring of `ring` pointers (divided among the threads) and fills it
 * in order with runs of one size: sizes from a base that grows by half (1, 2, 4, 7, ...
 * up to `max`), each base halved down to 1, a size below 100 bytes 250 times in a row,
 * below 1000 50 times, larger ones 10 times. When the ring is full, all but a fifth of it
 * is freed, the part below the kept fifth in allocation order and the part above it in
 * reverse; the kept fifth (a different one each cycle) lives on until the next cycle.
 * Far more blocks of one size are freed at once than any per-thread cache holds, in
 * address order, and the next runs want other sizes: this measures an allocator's path
 * between its caches and its slabs (or pages), and how soon a freed size's memory serves
 * the next ones.
 *
 *   ring rounds=300 ring=100000 max=1000 threads=1 limit=60
 */
#include <pthread.h>

#include "common.h"

static long long rounds;
static long ring_len;
static size_t max_size;
static double deadline;

typedef struct {
  void **slots;
  long n, pos;        /* the next slot to fill */
  long keep_lo, keep_hi; /* the fifth kept from the last cycle: [keep_lo, keep_hi) */
  unsigned long long checksum, blocks;
} ring_t;

/* The ring is full: free all but a new fifth, bottom in order, top in reverse. */
static void ring_cycle(ring_t *r) {
  long lo = r->keep_hi >= r->n ? 0 : r->keep_hi;
  long hi = lo + r->n / 5 > r->n ? r->n : lo + r->n / 5;
  for (long i = 0; i < lo; i++) free(r->slots[i]);
  for (long i = r->n - 1; i >= hi; i--) free(r->slots[i]);
  r->keep_lo = lo;
  r->keep_hi = hi;
  r->pos = lo == 0 ? hi : 0;
}

static void ring_put(ring_t *r, size_t size) {
  unsigned char *p = bench_check(malloc(size), size);
  p[0] = (unsigned char)size;
  p[size - 1] = (unsigned char)r->pos;
  r->checksum += p[0];
  r->blocks++;
  r->slots[r->pos++] = p;
  if (r->pos == r->keep_lo) r->pos = r->keep_hi; /* skip the kept fifth */
  if (r->pos >= r->n) ring_cycle(r);
}

static int run_size(ring_t *r, size_t size) {
  int times = size < 100 ? 250 : size < 1000 ? 50 : 10;
  for (int t = 0; t < times; t++) ring_put(r, size);
  return bench_now() > deadline;
}

static void *worker(void *arg) {
  ring_t *r = arg;
  r->slots = bench_check(calloc((size_t)r->n, sizeof *r->slots), (size_t)r->n * sizeof *r->slots);
  r->keep_lo = r->keep_hi = r->n; /* nothing kept yet */
  int timed_out = 0;
  for (long long k = 0; k < rounds && !timed_out; k++)
    for (size_t base = 1; base < max_size && !timed_out; base = base * 3 / 2 + 1)
      for (size_t size = base; size > 0 && !timed_out; size /= 2) timed_out = run_size(r, size);
  for (long i = 0; i < r->n; i++) /* what the last cycle left: below pos, and the kept fifth */
    if (i < r->pos || (i >= r->keep_lo && i < r->keep_hi)) free(r->slots[i]);
  free(r->slots);
  r->blocks |= (unsigned long long)timed_out << 63;
  return NULL;
}

int main(int argc, char **argv) {
  rounds = arg_long(argc, argv, "rounds", 300);
  ring_len = (long)arg_long(argc, argv, "ring", 100000);
  max_size = (size_t)arg_long(argc, argv, "max", 1000);
  int threads = (int)arg_long(argc, argv, "threads", 1);
  deadline = bench_now() + arg_double(argc, argv, "limit", 60);
  if (rounds < 1 || threads < 1 || threads > 64 || ring_len / threads < 10 || max_size < 2) {
    fprintf(stderr, "ring: bad rounds=, ring= (10 per thread at least), max= or threads= (1..64)\n");
    return 2;
  }
  ring_t rings[64];
  pthread_t tid[64];
  double t0 = bench_now();
  for (int i = 0; i < threads; i++) {
    rings[i] = (ring_t){.n = ring_len / threads};
    pthread_create(&tid[i], NULL, worker, &rings[i]);
  }
  unsigned long long checksum = 0, blocks = 0;
  int timed_out = 0;
  for (int i = 0; i < threads; i++) {
    pthread_join(tid[i], NULL);
    checksum += rings[i].checksum;
    timed_out |= (int)(rings[i].blocks >> 63);
    blocks += rings[i].blocks & ~(1ULL << 63);
  }
  double dt = bench_now() - t0;
  printf("ring: %d thread(s), %.1f M blocks in %.3f s%s\n", threads, (double)blocks / 1e6, dt,
         timed_out ? " TIMED OUT" : "");
  bench_result("ops_per_s=%.0f seconds=%.4f checksum=%llu timeout=%d", (double)blocks / dt, dt, checksum,
               timed_out);
  return 0;
}
