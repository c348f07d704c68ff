/* SPDX-License-Identifier: MIT */
/* Workload 9: peak, then idle (memory returned over time).
 *
 * Builds a heap of `mib` MiB from blocks of 64 B to 64 KiB (log-uniform), frees the
 * oldest 90% of them, then sits idle for `idle` seconds without calling the allocator
 * and samples RSS at fixed points. An allocator that returns memory only when it is
 * called again keeps it all; one with time-based decay (a background thread, or glibc's
 * trim on free) gives it back. The interesting figure is RSS at the end of the idle
 * period (`rss_end_mib`), not the time.
 *
 * `trickle=1` instead makes one small malloc/free every 10 ms during the idle period, as
 * an idle server's timers would, for allocators that purge on their next call.
 *
 *   peakidle mib=1024 keep=10 idle=5 trickle=0
 */
#include "common.h"

int main(int argc, char **argv) {
  long long mib = arg_long(argc, argv, "mib", 1024);
  long long keep_pct = arg_long(argc, argv, "keep", 10);
  double idle = arg_double(argc, argv, "idle", 5);
  int trickle = (int)arg_long(argc, argv, "trickle", 0);
  bench_rng rng;
  rng_seed(&rng, 9);
  long long target = mib << 20, total = 0, n = 0, cap = 1 << 16;
  void **blocks = bench_check(malloc((size_t)cap * sizeof *blocks), 1);
  double t0 = bench_now();
  while (total < target) {
    if (n == cap) {
      cap *= 2;
      blocks = bench_check(realloc(blocks, (size_t)cap * sizeof *blocks), 1);
    }
    size_t size = (size_t)rng_log_range(&rng, 64, 65536);
    blocks[n] = bench_check(malloc(size), size);
    memset(blocks[n], (int)n, size);
    total += (long long)size;
    n++;
  }
  long long rss_peak = bench_rss();
  long long nfree = n * (100 - keep_pct) / 100;
  for (long long i = 0; i < nfree; i++) free(blocks[i]);
  double t_free = bench_now();
  long long rss_freed = bench_rss();
  printf("peakidle: %lld blocks, %.1f MiB live, rss %.1f MiB; freed %lld%%: rss %.1f MiB\n", n,
         (double)total / 1048576.0, (double)rss_peak / 1048576.0, 100 - keep_pct,
         (double)rss_freed / 1048576.0);

  /* Sample points in seconds after the frees; the last one is the end of the idle time. */
  static const double points[] = {0.1, 0.5, 1, 2, 5, 10, 20, 60};
  char samples[512];
  int off = 0;
  long long rss = rss_freed;
  for (size_t i = 0; i < sizeof points / sizeof points[0] && points[i] <= idle + 1e-9; i++) {
    while (bench_now() - t_free < points[i]) {
      if (trickle) {
        void *p = malloc(64);
        bench_escape(p);
        free(p);
      }
      usleep(10000);
    }
    rss = bench_rss();
    printf("  after %5.1f s idle: rss %.1f MiB\n", points[i], (double)rss / 1048576.0);
    off += snprintf(samples + off, sizeof samples - (size_t)off, " rss_%gs_mib=%.2f", points[i],
                    (double)rss / 1048576.0);
  }
  bench_result("seconds=%.4f rss_peak_mib=%.2f rss_freed_mib=%.2f rss_end_mib=%.2f%s",
               t_free - t0, (double)rss_peak / 1048576.0, (double)rss_freed / 1048576.0,
               (double)rss / 1048576.0, samples);
  for (long long i = nfree; i < n; i++) free(blocks[i]);
  free(blocks);
  return 0;
}
