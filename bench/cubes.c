/* SPDX-License-Identifier: MIT */
/* A small logic-minimisation program (espresso-like): covers of cubes.
 *
 * A cube is a bit vector of `words` 64-bit words, a cover a growable array of cubes. Each
 * of `rounds` rounds builds two random covers of `cubes` cubes, computes their pairwise
 * intersections into a new cover (a new cube block for every non-empty one), removes the
 * cubes contained in another, and frees the inputs. The blocks are a few sizes, allocated
 * and freed in large numbers with mixed lifetimes, and arrays grow by realloc: the
 * pattern of espresso, in a program of a few MiB.
 *
 *   cubes rounds=60 cubes=300 words=4
 */
#include <stdbool.h>

#include "common.h"

typedef struct {
  uint64_t **cube;
  int n, cap;
} cover;

static int nwords;

static void cover_add(cover *c, uint64_t *cube) {
  if (c->n == c->cap) {
    c->cap = c->cap ? c->cap * 2 : 8;
    c->cube = bench_check(realloc(c->cube, (size_t)c->cap * sizeof *c->cube), 1);
  }
  c->cube[c->n++] = cube;
}

static void cover_free(cover *c) {
  for (int i = 0; i < c->n; i++) free(c->cube[i]);
  free(c->cube);
  *c = (cover){0};
}

static uint64_t *cube_new(void) {
  size_t bytes = (size_t)nwords * sizeof(uint64_t);
  return bench_check(malloc(bytes), bytes);
}

static cover random_cover(bench_rng *r, int n) {
  cover c = {0};
  for (int i = 0; i < n; i++) {
    uint64_t *q = cube_new();
    for (int w = 0; w < nwords; w++) q[w] = rng_next(r) | rng_next(r) | rng_next(r);
    cover_add(&c, q);
  }
  return c;
}

static bool contains(const uint64_t *a, const uint64_t *b) {
  for (int w = 0; w < nwords; w++)
    if ((a[w] & b[w]) != b[w]) return false;
  return true;
}

/* Cubes not contained in an earlier kept cube, as a new cover; frees the others. */
static cover remove_contained(cover *c) {
  cover out = {0};
  for (int i = 0; i < c->n; i++) {
    bool dup = false;
    for (int j = 0; j < out.n && !dup; j++) dup = contains(out.cube[j], c->cube[i]);
    if (dup) free(c->cube[i]);
    else cover_add(&out, c->cube[i]);
  }
  free(c->cube);
  *c = (cover){0};
  return out;
}

int main(int argc, char **argv) {
  int rounds = (int)arg_long(argc, argv, "rounds", 60);
  int ncubes = (int)arg_long(argc, argv, "cubes", 300);
  nwords = (int)arg_long(argc, argv, "words", 4);
  if (rounds < 1 || ncubes < 1 || nwords < 1 || nwords > 64) {
    fprintf(stderr, "cubes: need rounds, cubes >= 1 and 1 <= words <= 64\n");
    return 2;
  }
  bench_rng rng;
  rng_seed(&rng, 1985);
  uint64_t check = 0;
  double t0 = bench_now();
  for (int r = 0; r < rounds; r++) {
    cover a = random_cover(&rng, ncubes), b = random_cover(&rng, ncubes), x = {0};
    for (int i = 0; i < a.n; i++)
      for (int j = 0; j < b.n; j++) {
        uint64_t *q = cube_new();
        uint64_t any = 0;
        for (int w = 0; w < nwords; w++) any |= q[w] = a.cube[i][w] & b.cube[j][w];
        if (any && (rng_next(&rng) & 7) == 0) cover_add(&x, q);
        else free(q);
      }
    cover kept = remove_contained(&x);
    check += (uint64_t)kept.n;
    cover_free(&kept);
    cover_free(&a);
    cover_free(&b);
  }
  double dt = bench_now() - t0;
  printf("cubes: %d rounds in %.3f s, %llu cubes kept\n", rounds, dt, (unsigned long long)check);
  bench_result("seconds=%.4f checksum=%llu", dt, (unsigned long long)check);
  return 0;
}
