/* SPDX-License-Identifier: MIT */
/* Large blocks reused at once (malloc-large-like).
 *
 * A program that keeps `live` blocks of `min`..`max` bytes (default 5-25 MiB) and, step
 * after step, frees one of them at random and allocates a new one of random size in its
 * place: the freed extent is wanted again immediately. With `touch=1` (the default) every
 * page of a new block is written, as a program filling a buffer would; `touch=0` only
 * allocates, which shows whether the allocator itself touches the pages.
 *
 * An allocator that keeps freed extents mapped and hands them out again pays nothing per
 * step; one that returns them to the kernel (munmap, or madvise(MADV_DONTNEED)) pays a
 * system call and then a minor page fault per page written.
 *
 *   largereuse steps=500 live=20 min=5M max=25M touch=1 limit=60
 */
#include "common.h"

#define MAX_LIVE 256

int main(int argc, char **argv) {
  long long steps = arg_long(argc, argv, "steps", 500);
  int live = (int)arg_long(argc, argv, "live", 20);
  long long min = arg_long(argc, argv, "min", 5LL << 20);
  long long max = arg_long(argc, argv, "max", 25LL << 20);
  int touch = (int)arg_long(argc, argv, "touch", 1);
  double limit = arg_double(argc, argv, "limit", 60);
  if (live < 1 || live > MAX_LIVE || min < 1 || max < min) {
    fprintf(stderr, "largereuse: need 1 <= live <= %d and 1 <= min <= max\n", MAX_LIVE);
    return 2;
  }
  long page = sysconf(_SC_PAGESIZE);
  bench_rng rng;
  rng_seed(&rng, 5);
  static unsigned char *slot[MAX_LIVE];
  static size_t slot_size[MAX_LIVE];
  uint64_t checksum = 0;
  long long done = 0, bytes = 0;
  int timeout = 0;
  double t0 = bench_now();
  for (; done < steps; done++) {
    if (bench_now() - t0 > limit) {
      timeout = 1;
      break;
    }
    int i = (int)(rng_next(&rng) % (uint64_t)live);
    if (slot[i] && touch) checksum += slot[i][slot_size[i] - 1];
    free(slot[i]);
    size_t size = (size_t)rng_range(&rng, (uint64_t)min, (uint64_t)max);
    unsigned char *p = bench_check(malloc(size), size);
    if (touch) {
      for (size_t off = 0; off < size; off += (size_t)page) p[off] = (unsigned char)(off >> 12);
      p[size - 1] = (unsigned char)done;
    }
    bench_escape(p);
    slot[i] = p;
    slot_size[i] = size;
    bytes += (long long)size;
  }
  for (int i = 0; i < live; i++) free(slot[i]);
  double dt = bench_now() - t0;
  printf("largereuse: %lld blocks, %.1f GiB in %.3f s%s\n", done, (double)bytes / (1 << 30), dt,
         timeout ? " TIMED OUT" : "");
  bench_result("ops_per_s=%.0f seconds=%.4f checksum=%llu timeout=%d", (double)done / dt, dt,
               (unsigned long long)checksum, timeout);
  return 0;
}
