/* SPDX-License-Identifier: MIT */
/* Workload 6: growth by realloc.
 *
 * Two growth patterns real programs are full of:
 * - vectors: `vectors` arrays grow by push-back, doubling their capacity with realloc
 *   until each reaches a random final length (log-uniform, up to `maxvec` bytes), then
 *   are freed and restarted; several grow at once so their reallocs interleave;
 * - strings: string builders that append a few bytes at a time and call realloc on every
 *   append with the exact new length (the naive pattern that in-place growth serves).
 *
 *   growth rounds=3000 vectors=16 maxvec=8M strings=2000 maxstr=64K limit=60
 */
#include "common.h"

typedef struct {
  unsigned char *data;
  size_t len, cap, target;
} vec;

int main(int argc, char **argv) {
  long long rounds = arg_long(argc, argv, "rounds", 3000);
  int nvec = (int)arg_long(argc, argv, "vectors", 16);
  long long maxvec = arg_long(argc, argv, "maxvec", 8 << 20);
  long long nstr = arg_long(argc, argv, "strings", 2000);
  long long maxstr = arg_long(argc, argv, "maxstr", 64 << 10);
  double limit = arg_double(argc, argv, "limit", 60);
  bench_rng rng;
  rng_seed(&rng, 6);
  double t0 = bench_now();
  uint64_t checksum = 0;
  long long reallocs = 0, finished = 0;
  int timeout = 0;

  /* Vectors: each round, every vector pushes a chunk of 256 bytes; a full one restarts. */
  vec *v = bench_check(calloc((size_t)nvec, sizeof *v), 1);
  for (long long r = 0; r < rounds * 64 && !timeout; r++) {
    if ((r & 1023) == 0 && bench_now() - t0 > limit) timeout = 1;
    for (int i = 0; i < nvec; i++) {
      vec *x = &v[i];
      if (!x->target) x->target = (size_t)rng_log_range(&rng, 1024, (uint64_t)maxvec);
      if (x->len + 256 > x->cap) {
        x->cap = x->cap ? x->cap * 2 : 64;
        while (x->cap < x->len + 256) x->cap *= 2;
        x->data = bench_check(realloc(x->data, x->cap), x->cap);
        reallocs++;
      }
      memset(x->data + x->len, (int)(x->len >> 8), 256);
      x->len += 256;
      if (x->len >= x->target) {
        checksum += x->data[x->len / 2];
        free(x->data);
        memset(x, 0, sizeof *x);
        finished++;
      }
    }
  }
  for (int i = 0; i < nvec; i++) free(v[i].data);
  free(v);
  double t_vec = bench_now() - t0;

  /* Strings: grow 8 at once by 1..32 bytes per realloc to a random final length. */
  enum { LIVE = 8 };
  char *s[LIVE] = {0};
  size_t len[LIVE] = {0}, target[LIVE] = {0};
  for (long long done = 0; done < nstr && !timeout;) {
    for (int i = 0; i < LIVE && done < nstr; i++) {
      if (!target[i]) target[i] = (size_t)rng_log_range(&rng, 64, (uint64_t)maxstr);
      size_t add = (size_t)rng_range(&rng, 1, 32);
      s[i] = bench_check(realloc(s[i], len[i] + add + 1), len[i] + add + 1);
      memset(s[i] + len[i], 'a' + (int)(add % 26), add);
      len[i] += add;
      s[i][len[i]] = 0;
      reallocs++;
      if (len[i] >= target[i]) {
        checksum += (unsigned char)s[i][len[i] / 3];
        free(s[i]);
        s[i] = NULL;
        len[i] = target[i] = 0;
        done++;
        if ((done & 63) == 0 && bench_now() - t0 > limit) timeout = 1;
      }
    }
  }
  for (int i = 0; i < LIVE; i++) free(s[i]);
  double dt = bench_now() - t0;
  printf("growth: %lld vectors in %.3f s, strings in %.3f s, %lld reallocs (checksum %llu)%s\n",
         finished, t_vec, dt - t_vec, reallocs, (unsigned long long)checksum,
         timeout ? " TIMED OUT" : "");
  bench_result("seconds=%.4f vector_s=%.4f string_s=%.4f reallocs=%lld checksum=%llu timeout=%d",
               dt, t_vec, dt - t_vec, reallocs, (unsigned long long)checksum, timeout);
  return 0;
}
