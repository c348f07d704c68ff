/* SPDX-License-Identifier: MIT */
/* Workload 7: large and huge blocks, 16 KiB to 256 MiB.
 *
 * A working set of `slots` blocks; each step frees one at random and allocates a new one
 * of log-uniform size in [16 KiB, 4 MiB], or, one step in `hugeevery`, in
 * [4 MiB, `max`]. Every page of a new block is written, as a program filling a buffer
 * would, so an allocator that unmaps on free and maps again on malloc pays a page fault
 * per page (the page-fault-bound case of DESIGN.md); one that keeps hot extents mapped
 * does not.
 *
 *   large steps=20000 slots=8 hugeevery=64 max=256M limit=60
 */
#include "common.h"

int main(int argc, char **argv) {
  long long steps = arg_long(argc, argv, "steps", 20000);
  int nslots = (int)arg_long(argc, argv, "slots", 8);
  long long huge_every = arg_long(argc, argv, "hugeevery", 64);
  long long max = arg_long(argc, argv, "max", 256LL << 20);
  double limit = arg_double(argc, argv, "limit", 60);
  long page = sysconf(_SC_PAGESIZE);
  bench_rng rng;
  rng_seed(&rng, 7);
  unsigned char *slot[64] = {0};
  size_t slot_size[64] = {0};
  if (nslots < 1 || nslots > 64) return 2;
  double t0 = bench_now();
  uint64_t checksum = 0;
  long long bytes = 0, done = 0;
  int timeout = 0;

  for (; done < steps; done++) {
    if ((done & 15) == 0 && bench_now() - t0 > limit) {
      timeout = 1;
      break;
    }
    int i = (int)(rng_next(&rng) % (uint64_t)nslots);
    if (slot[i]) checksum += slot[i][slot_size[i] - 1];
    free(slot[i]);
    size_t size = (size_t)(done % huge_every == huge_every - 1
                               ? rng_log_range(&rng, 4 << 20, (uint64_t)max)
                               : rng_log_range(&rng, 16 << 10, 4 << 20));
    unsigned char *p = bench_check(malloc(size), size);
    for (size_t off = 0; off < size; off += (size_t)page) p[off] = (unsigned char)off;
    p[size - 1] = (unsigned char)done;
    slot[i] = p;
    slot_size[i] = size;
    bytes += (long long)size;
  }
  for (int i = 0; i < nslots; i++) free(slot[i]);
  double dt = bench_now() - t0;
  printf("large: %lld blocks, %.1f GiB written in %.3f s (checksum %llu)%s\n", done,
         (double)bytes / (1 << 30), dt, (unsigned long long)checksum, timeout ? " TIMED OUT" : "");
  bench_result("ops_per_s=%.0f seconds=%.4f checksum=%llu timeout=%d", (double)done / dt, dt,
               (unsigned long long)checksum, timeout);
  return 0;
}
