/* SPDX-License-Identifier: MIT */
/* Workload 1: the fast path.
 *
 * Tight malloc/free loops in two patterns:
 *   pair  - malloc immediately followed by free;
 *   batch - 1000 mallocs, then the 1000 frees, newest first (LIFO);
 * either with sizes cycling 16..256 B (the callgrind figure), or at one fixed size per
 * size class (the timing table).
 *
 *   fastpath mode=time n=20m            time both patterns for several size classes
 *   fastpath mode=pair|batch n=N        exactly N malloc/free pairs, sizes cycling 16..256
 *   fastpath mode=pair|batch n=N base=1 the same loop with malloc/free replaced by a
 *                                       static buffer: the bookkeeping to subtract
 *   fastpath mode=pair|batch n=N size=S every block of S bytes: one size class
 *   fastpath mode=usable n=N            pairs with malloc_usable_size between malloc and
 *                                       free (programs that count their memory)
 * bench/run counts instructions of mode=pair|batch at two N with callgrind, subtracts the
 * base loop, and divides by the difference in N: instructions per malloc+free pair.
 */
#include <malloc.h>

#include "common.h"

#define BATCH 1000

/* Sizes 16, 32, ..., 256 visited in a scrambled but fixed order so that consecutive
 * calls hit different size classes, like a real program, not one hot bin. */
static size_t cycle_sizes[16] = {16,  144, 48, 208, 80,  240, 32, 176,
                                       112, 64,  192, 128, 256, 96,  224, 160};

static char fake_heap[512]; /* stands in for malloc in the baseline loop */

static void run_pair(long long n, int base) {
  for (long long i = 0; i < n; i++) {
    size_t size = cycle_sizes[i & 15];
    void *p = base ? (void *)(fake_heap + size) : malloc(size);
    bench_escape(p);
    if (!base) free(p);
  }
}

static void run_usable(long long n, int base) {
  for (long long i = 0; i < n; i++) {
    size_t size = cycle_sizes[i & 15];
    void *p = base ? (void *)(fake_heap + size) : malloc(size);
    bench_escape(p);
    if (!base) {
      bench_escape((void *)(uintptr_t)malloc_usable_size(p));
      free(p);
    }
  }
}

static void run_batch(long long n, int base) {
  static void *slots[BATCH];
  for (long long done = 0; done < n; done += BATCH) {
    for (int j = 0; j < BATCH; j++) {
      size_t size = cycle_sizes[j & 15];
      slots[j] = base ? (void *)(fake_heap + size) : malloc(size);
      bench_escape(slots[j]);
    }
    for (int j = BATCH - 1; j >= 0; j--)
      if (!base) free(slots[j]);
      else bench_escape(slots[j]);
  }
}

/* Pairs at one fixed size; returns nanoseconds per pair. */
static double time_fixed(size_t size, long long n, int batch) {
  static void *slots[BATCH];
  double t0 = bench_now();
  if (!batch) {
    for (long long i = 0; i < n; i++) {
      void *p = malloc(size);
      bench_escape(p);
      free(p);
    }
  } else {
    for (long long done = 0; done < n; done += BATCH) {
      for (int j = 0; j < BATCH; j++) {
        slots[j] = malloc(size);
        bench_escape(slots[j]);
      }
      for (int j = BATCH - 1; j >= 0; j--) free(slots[j]);
    }
  }
  return (bench_now() - t0) * 1e9 / (double)n;
}

int main(int argc, char **argv) {
  const char *mode = arg_str(argc, argv, "mode", "time");
  long long n = arg_long(argc, argv, "n", 20000000);
  int base = (int)arg_long(argc, argv, "base", 0);
  long long fixed = arg_long(argc, argv, "size", 0);
  if (fixed > 0) /* one size class: the same loop, every entry of the cycle the same */
    for (int i = 0; i < 16; i++) cycle_sizes[i] = (size_t)fixed;

  if (strcmp(mode, "pair") == 0 || strcmp(mode, "batch") == 0 || strcmp(mode, "usable") == 0) {
    /* Rounded to whole batches so both patterns do exactly n pairs. */
    n = (n + BATCH - 1) / BATCH * BATCH;
    double t0 = bench_now();
    if (mode[0] == 'p') run_pair(n, base);
    else if (mode[0] == 'u') run_usable(n, base);
    else run_batch(n, base);
    double dt = bench_now() - t0;
    printf("%s: %lld pairs%s in %.3f s\n", mode, n, base ? " (baseline loop)" : "", dt);
    bench_result("pairs=%lld seconds=%.6f", n, dt);
    return 0;
  }

  /* Timing mode: both patterns at each size class; total work split evenly. */
  static const size_t sizes[] = {16, 32, 64, 128, 256, 512, 1024};
  const int nsizes = (int)(sizeof sizes / sizeof sizes[0]);
  long long per = n / (2 * nsizes);
  double total_ns = 0;
  char line[1024];
  int off = 0;
  run_pair(100000, 0); /* warm the caches and the allocator's thread state */
  for (int i = 0; i < nsizes; i++) {
    double pair_ns = time_fixed(sizes[i], per, 0);
    double batch_ns = time_fixed(sizes[i], per, 1);
    total_ns += (pair_ns + batch_ns) * (double)per;
    printf("size %5zu: pair %6.2f ns, batch %6.2f ns\n", sizes[i], pair_ns, batch_ns);
    off += snprintf(line + off, sizeof line - (size_t)off, " pair_ns_%zu=%.2f batch_ns_%zu=%.2f",
                    sizes[i], pair_ns, sizes[i], batch_ns);
  }
  double ops = (double)(2 * nsizes * per) / (total_ns * 1e-9);
  printf("%.1f M pairs/s overall\n", ops / 1e6);
  bench_result("ops_per_s=%.0f%s", ops, line);
  return 0;
}
