/* SPDX-License-Identifier: MIT */
/* A small arithmetic program (cfrac-like): many short-lived bignums.
 *
 * Numbers are heap blocks of 32-bit limbs, and every operation returns a new block, the
 * way a bignum library without in-place operations works: a result is allocated, its
 * operands are freed when no longer needed. The program computes `rounds` times the
 * Fibonacci numbers up to F(`fib`) and the factorial `fact`!, keeps a few recent results
 * alive in a small table (so lifetimes vary), and checks the decimal digit sums. Blocks
 * are 16 B to a few KiB; the whole program lives in a few MiB, like cfrac or espresso: its
 * peak RSS is mostly the allocator's start-up and per-size-class footprint.
 *
 *   bignum rounds=40 fib=3000 fact=600 keep=16
 */
#include "common.h"

typedef struct {
  int n;              /* limbs in use */
  uint32_t limb[];    /* least significant first */
} big;

static big *big_new(int limbs) {
  size_t bytes = sizeof(big) + (size_t)limbs * sizeof(uint32_t);
  big *b = bench_check(malloc(bytes), bytes);
  b->n = limbs;
  return b;
}

static big *big_small(uint32_t v) {
  big *b = big_new(1);
  b->limb[0] = v;
  return b;
}

static big *big_add(const big *a, const big *b) {
  if (a->n < b->n) return big_add(b, a);
  big *r = big_new(a->n + 1);
  uint64_t carry = 0;
  for (int i = 0; i < a->n; i++) {
    carry += (uint64_t)a->limb[i] + (i < b->n ? b->limb[i] : 0);
    r->limb[i] = (uint32_t)carry;
    carry >>= 32;
  }
  r->limb[a->n] = (uint32_t)carry;
  if (!carry) r->n--;
  return r;
}

static big *big_mul_small(const big *a, uint32_t m) {
  big *r = big_new(a->n + 1);
  uint64_t carry = 0;
  for (int i = 0; i < a->n; i++) {
    carry += (uint64_t)a->limb[i] * m;
    r->limb[i] = (uint32_t)carry;
    carry >>= 32;
  }
  r->limb[a->n] = (uint32_t)carry;
  if (!carry) r->n--;
  return r;
}

/* Sum of the decimal digits, by repeated division by 10^9 into fresh blocks. */
static uint64_t digit_sum(const big *a) {
  big *cur = big_new(a->n);
  memcpy(cur->limb, a->limb, (size_t)a->n * sizeof(uint32_t));
  uint64_t sum = 0;
  while (cur->n > 0) {
    big *q = big_new(cur->n);
    uint64_t rem = 0;
    for (int i = cur->n - 1; i >= 0; i--) {
      uint64_t v = (rem << 32) | cur->limb[i];
      q->limb[i] = (uint32_t)(v / 1000000000u);
      rem = v % 1000000000u;
    }
    while (q->n > 0 && q->limb[q->n - 1] == 0) q->n--;
    for (; rem; rem /= 10) sum += rem % 10;
    free(cur);
    cur = q;
  }
  free(cur);
  return sum;
}

int main(int argc, char **argv) {
  int rounds = (int)arg_long(argc, argv, "rounds", 40);
  int fib = (int)arg_long(argc, argv, "fib", 3000);
  int fact = (int)arg_long(argc, argv, "fact", 600);
  int keep = (int)arg_long(argc, argv, "keep", 16);
  if (rounds < 1 || fib < 2 || fact < 1 || keep < 1 || keep > 1024) {
    fprintf(stderr, "bignum: need rounds >= 1, fib >= 2, fact >= 1, 1 <= keep <= 1024\n");
    return 2;
  }
  big **kept = bench_check(calloc((size_t)keep, sizeof *kept), 1);
  uint64_t check = 0;
  double t0 = bench_now();
  for (int r = 0; r < rounds; r++) {
    big *a = big_small(0), *b = big_small(1);
    for (int i = 2; i <= fib; i++) {
      big *c = big_add(a, b);
      int slot = i % keep; /* a few results live longer than the next step */
      free(kept[slot]);
      kept[slot] = a;
      a = b;
      b = c;
    }
    check += digit_sum(b);
    free(a);
    free(b);
    big *f = big_small(1);
    for (int i = 2; i <= fact; i++) {
      big *g = big_mul_small(f, (uint32_t)i);
      free(f);
      f = g;
    }
    check += digit_sum(f);
    free(f);
  }
  for (int i = 0; i < keep; i++) free(kept[i]);
  free(kept);
  double dt = bench_now() - t0;
  printf("bignum: %d rounds in %.3f s, digit sums %llu\n", rounds, dt, (unsigned long long)check);
  bench_result("seconds=%.4f checksum=%llu", dt, (unsigned long long)check);
  return 0;
}
