/* SPDX-License-Identifier: MIT */
/* Threads allocating and freeing random sizes with random lifetimes (mstress-like).
 *
 * In each of `rounds` rounds, `threads` threads start, run `steps` steps each and end.
 * A thread keeps up to `live` blocks; each step picks one of its slots at random and
 * either frees what is there (half the time) or swaps it into a shared transfer table of
 * `transfer` entries, taking out whatever block another thread (possibly one of an
 * earlier, now finished round) left there; then it allocates a new block into the slot.
 * Sizes are mostly small, sometimes medium, rarely large (see block_size). When a thread
 * ends it frees its slots; blocks in the transfer table outlive it.
 *
 * The peak RSS says how much the allocator holds for memory freed by threads other than
 * the one that allocated it, and for threads that come and go.
 *
 *   mstress threads=4 rounds=10 steps=200k live=2000 transfer=1000 limit=60
 */
#include <pthread.h>
#include <stdatomic.h>

#include "common.h"

static long long steps, live, transfer_len;
static _Atomic(unsigned char *) *transfer;
static double deadline;
static atomic_int timed_out;

/* 1 in 1000 blocks is 16 KiB-1 MiB, 1 in 20 is 256 B-16 KiB, the rest 8-256 B. */
static size_t block_size(bench_rng *r) {
  uint64_t x = rng_next(r) % 1000;
  if (x == 0) return (size_t)rng_log_range(r, 16 << 10, 1 << 20);
  if (x < 50) return (size_t)rng_log_range(r, 256, 16 << 10);
  return (size_t)rng_log_range(r, 8, 256);
}

/* A new block; its first byte and the bytes of its first cache lines are written. */
static unsigned char *new_block(bench_rng *r) {
  size_t size = block_size(r);
  unsigned char *p = bench_check(malloc(size), size);
  memset(p, (int)(size & 0xff), size < 256 ? size : 256);
  return p;
}

static void *worker(void *arg) {
  bench_rng rng;
  rng_seed(&rng, (uint64_t)(size_t)arg);
  unsigned char **slot = bench_check(calloc((size_t)live, sizeof *slot), 1);
  for (long long s = 0; s < steps; s++) {
    if ((s & 1023) == 0 && bench_now() > deadline) {
      atomic_store(&timed_out, 1);
      break;
    }
    uint64_t r = rng_next(&rng);
    long long i = (long long)(r % (uint64_t)live);
    if (slot[i]) {
      if ((r >> 40) & 1) free(slot[i]);
      else {
        long long t = (long long)((r >> 41) % (uint64_t)transfer_len);
        unsigned char *taken = atomic_exchange(&transfer[t], slot[i]);
        free(taken); /* a block of another thread, possibly of a finished one */
      }
    }
    slot[i] = new_block(&rng);
  }
  for (long long i = 0; i < live; i++) free(slot[i]);
  free(slot);
  return NULL;
}

int main(int argc, char **argv) {
  int threads = (int)arg_long(argc, argv, "threads", 4);
  int rounds = (int)arg_long(argc, argv, "rounds", 10);
  steps = arg_long(argc, argv, "steps", 200000);
  live = arg_long(argc, argv, "live", 2000);
  transfer_len = arg_long(argc, argv, "transfer", 1000);
  deadline = bench_now() + arg_double(argc, argv, "limit", 60);
  if (threads < 1 || threads > 256 || rounds < 1 || live < 1 || transfer_len < 1) {
    fprintf(stderr, "mstress: need 1 <= threads <= 256 and rounds, live, transfer >= 1\n");
    return 2;
  }
  transfer = bench_check(calloc((size_t)transfer_len, sizeof *transfer), 1);
  pthread_t tid[256];
  long long peak_rss = 0;
  double t0 = bench_now();
  for (int round = 0; round < rounds && !atomic_load(&timed_out); round++) {
    for (int i = 0; i < threads; i++)
      pthread_create(&tid[i], NULL, worker, (void *)(size_t)(round * 1000 + i + 1));
    for (int i = 0; i < threads; i++) pthread_join(tid[i], NULL);
    long long rss = bench_rss();
    peak_rss = rss > peak_rss ? rss : peak_rss;
  }
  for (long long t = 0; t < transfer_len; t++) free(atomic_load(&transfer[t]));
  free((void *)transfer);
  double dt = bench_now() - t0;
  int to = atomic_load(&timed_out);
  printf("mstress: %d threads x %d rounds in %.3f s, RSS between rounds up to %.1f MiB%s\n",
         threads, rounds, dt, (double)peak_rss / (1 << 20), to ? " TIMED OUT" : "");
  bench_result("ops_per_s=%.0f seconds=%.4f round_rss_mib=%.1f timeout=%d",
               (double)steps * threads * rounds / dt, dt, (double)peak_rss / (1 << 20), to);
  return 0;
}
