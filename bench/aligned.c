/* SPDX-License-Identifier: MIT */
/* Aligned allocations of many alignments (SIMD buffers, page-aligned I/O buffers, blocks
 * aligned to their size for address arithmetic).
 *
 * Each step allocates one block with posix_memalign (a quarter of them with
 * aligned_alloc) at an alignment drawn from 32 B, 64 B, 4 KiB and 64 KiB (in that order
 * of frequency: 4, 3, 2, 1), of a log-uniform size of `min`..`max` bytes, writes its
 * first and last cache lines, checks the alignment, and keeps it in one of `live` slots,
 * freeing the block that was there. Blocks aligned beyond a page leave aligned free
 * runs between live blocks that the next requests must be able to use.
 *
 *   aligned steps=2m min=16 max=64K live=1000 limit=60
 */
#include "common.h"

#define MAX_LIVE 65536

static size_t draw_alignment(bench_rng *r) {
  uint64_t x = rng_next(r) % 10;
  if (x < 4) return 32;
  if (x < 7) return 64;
  if (x < 9) return 4096;
  return 65536;
}

int main(int argc, char **argv) {
  long long steps = arg_long(argc, argv, "steps", 2000000);
  long long min = arg_long(argc, argv, "min", 16);
  long long max = arg_long(argc, argv, "max", 64 << 10);
  int live = (int)arg_long(argc, argv, "live", 1000);
  double limit = arg_double(argc, argv, "limit", 60);
  if (min < 1 || max < min || live < 1 || live > MAX_LIVE) {
    fprintf(stderr, "aligned: need 1 <= min <= max and 1 <= live <= %d\n", MAX_LIVE);
    return 2;
  }
  bench_rng rng;
  rng_seed(&rng, 31);
  static unsigned char *slot[MAX_LIVE];
  uint64_t checksum = 0;
  long long done = 0;
  int timeout = 0;
  double t0 = bench_now();
  for (; done < steps; done++) {
    if ((done & 1023) == 0 && bench_now() - t0 > limit) {
      timeout = 1;
      break;
    }
    size_t align = draw_alignment(&rng);
    size_t size = (size_t)rng_log_range(&rng, (uint64_t)min, (uint64_t)max);
    unsigned char *p = NULL;
    if (rng_next(&rng) % 4 == 0) {
      size_t rounded = (size + align - 1) & ~(align - 1); /* aligned_alloc wants a multiple */
      p = aligned_alloc(align, rounded);
    } else if (posix_memalign((void **)&p, align, size) != 0) {
      p = NULL;
    }
    bench_check(p, size);
    if ((uintptr_t)p % align != 0) {
      fprintf(stderr, "aligned: %p is not aligned to %zu\n", (void *)p, align);
      return 1;
    }
    memset(p, (int)(done & 0xff), size < 64 ? size : 64);
    memset(p + size - (size < 64 ? size : 64), 1, size < 64 ? size : 64);
    int s = (int)(rng_next(&rng) % (uint64_t)live);
    if (slot[s]) checksum += slot[s][0];
    free(slot[s]);
    slot[s] = p;
  }
  double dt = bench_now() - t0;
  for (int s = 0; s < live; s++) free(slot[s]);
  printf("aligned: %lld blocks of %lld B - %lld B at 32 B - 64 KiB alignments, %d live, in %.3f s%s\n", done, min, max,
         live, dt, timeout ? " TIMED OUT" : "");
  bench_result("ops_per_s=%.0f seconds=%.4f checksum=%llu timeout=%d", (double)done / dt, dt,
               (unsigned long long)checksum, timeout);
  return 0;
}
