/* SPDX-License-Identifier: MIT */
/* A database page cache (sqlite-like): blocks of one page plus a small header.
 *
 * SQLite's default page cache allocates every cached page as one block of the page size
 * (4 KiB) plus its bookkeeping (`hdr` bytes: the page header and the b-tree's per-page
 * data), so most of a database's memory is blocks a little over 4 KiB. This program
 * first fills a cache of `pages` such blocks (every byte written, as pages read from disk
 * are), then runs `ops` steps of a query mix: each step evicts a random page and loads
 * another in its place (free + malloc of the same size), and allocates and frees a few
 * small records (`small` per step, 16-200 B) the way a statement's cursors do.
 *
 * The peak RSS against the bytes asked for (pages * (4096 + hdr)) is the allocator's
 * overhead on this size: an allocator whose nearest size class is far above 4096 + hdr
 * wastes the difference on every page.
 *
 *   pagecache pages=20000 hdr=200 ops=200k small=4 limit=60
 */
#include "common.h"

int main(int argc, char **argv) {
  long long pages = arg_long(argc, argv, "pages", 20000);
  long long hdr = arg_long(argc, argv, "hdr", 200);
  long long ops = arg_long(argc, argv, "ops", 200000);
  int small = (int)arg_long(argc, argv, "small", 4);
  double limit = arg_double(argc, argv, "limit", 60);
  if (pages < 1 || hdr < 0 || small < 0 || small > 64) {
    fprintf(stderr, "pagecache: need pages >= 1, hdr >= 0, 0 <= small <= 64\n");
    return 2;
  }
  size_t page_bytes = 4096 + (size_t)hdr;
  bench_rng rng;
  rng_seed(&rng, 4096);
  unsigned char **cache = bench_check(calloc((size_t)pages, sizeof *cache), 1);
  double t0 = bench_now();
  for (long long i = 0; i < pages; i++) {
    cache[i] = bench_check(malloc(page_bytes), page_bytes);
    memset(cache[i], (int)i, page_bytes);
  }
  long long filled_rss = bench_rss();
  uint64_t checksum = 0;
  int timeout = 0;
  long long done = 0;
  for (; done < ops; done++) {
    if ((done & 1023) == 0 && bench_now() - t0 > limit) {
      timeout = 1;
      break;
    }
    long long i = (long long)(rng_next(&rng) % (uint64_t)pages);
    checksum += cache[i][page_bytes - 1];
    free(cache[i]);
    cache[i] = bench_check(malloc(page_bytes), page_bytes);
    memset(cache[i], (int)done, page_bytes);
    void *rec[64];
    for (int k = 0; k < small; k++) {
      size_t sz = (size_t)rng_range(&rng, 16, 200);
      rec[k] = bench_check(malloc(sz), sz);
      memset(rec[k], k, sz);
    }
    for (int k = 0; k < small; k++) free(rec[k]);
  }
  double dt = bench_now() - t0;
  double asked_mib = (double)pages * (double)page_bytes / (1 << 20);
  printf("pagecache: %lld pages of %zu B (%.1f MiB asked), RSS when filled %.1f MiB, %lld "
         "steps in %.3f s%s\n", pages, page_bytes, asked_mib, (double)filled_rss / (1 << 20),
         done, dt, timeout ? " TIMED OUT" : "");
  for (long long i = 0; i < pages; i++) free(cache[i]);
  free(cache);
  bench_result("ops_per_s=%.0f seconds=%.4f asked_mib=%.1f filled_rss_mib=%.1f checksum=%llu "
               "timeout=%d", (double)done / dt, dt, asked_mib, (double)filled_rss / (1 << 20),
               (unsigned long long)checksum, timeout);
  return 0;
}
