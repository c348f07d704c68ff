/* SPDX-License-Identifier: MIT */
/* Workload 5: long-running fragmentation (browser-like).
 *
 * A long run of `phases` phases; each phase is a different "page" with its own mix of
 * sizes (DOM nodes, strings, images, script objects) and every object has a lifetime drawn
 * from a heavy-tailed distribution: most die within a few hundred allocations, some live
 * for a phase or two, a few for most of the run. That leaves long-lived objects scattered
 * among the holes of short-lived ones, the pattern that fragments a heap.
 *
 * Lifetimes are managed with a timing wheel: an object due to die at tick t is pushed on
 * the list of bucket t % WHEEL, threaded through the object itself (next pointer and size
 * in its first 16 bytes), so the harness adds no memory of its own.
 *
 * At the end of every phase the program samples RSS and the live bytes it holds; it
 * reports the mean and the maximum of RSS / live, and RSS / peak live.
 *
 *   frag phases=60 allocs=200k limit=120
 */
#include "common.h"

#define WHEEL (1u << 20) /* longest lifetime in ticks (allocations) */

typedef struct object {
  struct object *next;
  size_t size;
} object;

static object *wheel[WHEEL];
static long long live_bytes;

typedef struct {
  const char *name;
  uint64_t min, max; /* log-uniform size range of the bulk of this phase's objects */
  uint64_t big_min, big_max; /* 1 object in 64 comes from here */
} phase_kind;

static const phase_kind kinds[] = {
    {"dom", 16, 256, 1024, 16384},
    {"text", 24, 2048, 4096, 65536},
    {"images", 64, 1024, 16384, 1 << 20},
    {"script", 16, 128, 256, 8192},
};

static void release(object *o) {
  while (o) {
    object *next = o->next;
    live_bytes -= (long long)o->size;
    free(o);
    o = next;
  }
}

/* Lifetime in ticks: 80% short (< 512), 17% medium (< 64k, a phase or so), 3% long. */
static uint64_t lifetime(bench_rng *rng) {
  uint64_t r = rng_next(rng) % 100;
  if (r < 80) return rng_log_range(rng, 1, 512);
  if (r < 97) return rng_log_range(rng, 512, 65536);
  return rng_range(rng, 65536, WHEEL - 1);
}

int main(int argc, char **argv) {
  long long phases = arg_long(argc, argv, "phases", 60);
  long long allocs = arg_long(argc, argv, "allocs", 200000);
  double limit = arg_double(argc, argv, "limit", 120);
  bench_rng rng;
  rng_seed(&rng, 5);
  double t0 = bench_now();
  uint64_t tick = 0;
  double ratio_sum = 0, ratio_max = 0;
  long long peak_live = 0, peak_rss = 0, samples = 0;
  int timeout = 0;

  for (long long ph = 0; ph < phases && !timeout; ph++) {
    const phase_kind *k = &kinds[(ph * 7 + ph / 4) % 4]; /* an irregular order of pages */
    for (long long i = 0; i < allocs; i++, tick++) {
      release(wheel[tick % WHEEL]);
      wheel[tick % WHEEL] = NULL;
      size_t size = (size_t)((i & 63) == 0 ? rng_log_range(&rng, k->big_min, k->big_max)
                                            : rng_log_range(&rng, k->min, k->max));
      if (size < sizeof(object)) size = sizeof(object);
      object *o = bench_check(malloc(size), size);
      /* Fill it all: a program writes what it allocates, and only written pages are resident. */
      memset((char *)o + sizeof *o, 0x5a, size - sizeof *o);
      o->size = size;
      uint64_t due = (tick + lifetime(&rng)) % WHEEL;
      o->next = wheel[due];
      wheel[due] = o;
      live_bytes += (long long)size;
      if (live_bytes > peak_live) peak_live = live_bytes;
    }
    long long rss = bench_rss();
    double ratio = (double)rss / (double)live_bytes;
    ratio_sum += ratio;
    samples++;
    if (ratio > ratio_max) ratio_max = ratio;
    if (rss > peak_rss) peak_rss = rss;
    printf("phase %3lld %-7s live %8.1f MiB rss %8.1f MiB rss/live %.2f\n", ph, k->name,
           (double)live_bytes / 1048576.0, (double)rss / 1048576.0, ratio);
    if (bench_now() - t0 > limit) timeout = 1;
  }
  double dt = bench_now() - t0;
  double mean_ratio = ratio_sum / (double)samples;
  for (uint64_t b = 0; b < WHEEL; b++) release(wheel[b]);
  printf("frag: %lld phases in %.3f s, mean rss/live %.3f, max %.3f, peak rss/peak live %.3f%s\n",
         samples, dt, mean_ratio, ratio_max, (double)peak_rss / (double)peak_live,
         timeout ? " TIMED OUT" : "");
  bench_result("seconds=%.4f rss_live_mean=%.4f rss_live_max=%.4f peak_rss_over_peak_live=%.4f "
               "peak_live_mib=%.2f timeout=%d",
               dt, mean_ratio, ratio_max, (double)peak_rss / (double)peak_live,
               (double)peak_live / 1048576.0, timeout);
  return 0;
}
