/* SPDX-License-Identifier: MIT */
/* Zeroed tables used sparsely (hash tables, bitmaps, sparse arrays).
 *
 * Programs calloc tables far bigger than what they then fill: a hash table sized for the
 * worst case, a bitmap over an id space, a sparse matrix row. Each step here callocs a
 * table of a random size (log-uniform, `min`..`max` bytes), reads and sets `touch` of its
 * 8-byte entries at random, and keeps it in one of `keep` slots, freeing the table that
 * was there. The allocator must hand out zeroed memory: an allocator that keeps freed
 * blocks mapped must clear what their previous owners wrote, and one that clears a
 * reused block by writing it whole pays for pages nobody will touch, in time and in
 * resident memory; one that hands out fresh pages pays page faults instead.
 *
 *   sparse steps=100k min=1K max=1M touch=8 keep=64 limit=60
 */
#include "common.h"

#define MAX_KEEP 1024

int main(int argc, char **argv) {
  long long steps = arg_long(argc, argv, "steps", 100000);
  long long min = arg_long(argc, argv, "min", 1 << 10);
  long long max = arg_long(argc, argv, "max", 1 << 20);
  int touch = (int)arg_long(argc, argv, "touch", 8);
  int keep = (int)arg_long(argc, argv, "keep", 64);
  double limit = arg_double(argc, argv, "limit", 60);
  if (min < 8 || max < min || touch < 0 || keep < 1 || keep > MAX_KEEP) {
    fprintf(stderr, "sparse: need 8 <= min <= max, touch >= 0, 1 <= keep <= %d\n", MAX_KEEP);
    return 2;
  }
  bench_rng rng;
  rng_seed(&rng, 77);
  static uint64_t *slot[MAX_KEEP];
  uint64_t checksum = 0;
  long long done = 0;
  int timeout = 0;
  double t0 = bench_now();
  for (; done < steps; done++) {
    if ((done & 1023) == 0 && bench_now() - t0 > limit) {
      timeout = 1;
      break;
    }
    size_t entries = (size_t)rng_log_range(&rng, (uint64_t)min, (uint64_t)max) / 8;
    uint64_t *t = bench_check(calloc(entries, 8), entries * 8);
    for (int k = 0; k < touch; k++) {
      size_t j = (size_t)(rng_next(&rng) % entries);
      checksum += t[j]; /* zero unless this step set it already */
      t[j] = (uint64_t)done + 1;
    }
    int s = (int)(rng_next(&rng) % (uint64_t)keep);
    free(slot[s]);
    slot[s] = t;
  }
  double dt = bench_now() - t0;
  for (int s = 0; s < keep; s++) free(slot[s]);
  printf("sparse: %lld tables of %lld B - %lld B, %d entries set in each, %d kept, in %.3f s%s\n", done,
         min, max, touch, keep, dt, timeout ? " TIMED OUT" : "");
  bench_result("ops_per_s=%.0f seconds=%.4f checksum=%llu timeout=%d", (double)done / dt, dt,
               (unsigned long long)checksum, timeout);
  return 0;
}
