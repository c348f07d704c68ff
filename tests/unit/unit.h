/* SPDX-License-Identifier: MIT */
/* A tiny assertion layer for the unit tests: CHECK prints where and what, then exits 1. */
#ifndef TESSERA_UNIT_H
#define TESSERA_UNIT_H

#include <stdio.h>
#include <stdlib.h>

static unsigned long unit_checks;

#define CHECK(cond, ...)                                                   \
  do {                                                                     \
    unit_checks++;                                                         \
    if (!(cond)) {                                                         \
      fprintf(stderr, "%s:%d: CHECK(%s) failed: ", __FILE__, __LINE__, #cond); \
      fprintf(stderr, __VA_ARGS__);                                        \
      fprintf(stderr, "\n");                                               \
      exit(1);                                                             \
    }                                                                      \
  } while (0)

#define UNIT_DONE(name)                                                    \
  do {                                                                     \
    printf("%s: %lu checks passed\n", name, unit_checks);                  \
    return 0;                                                              \
  } while (0)

/* xorshift64*: deterministic pseudo-random numbers for property tests. */
static unsigned long long unit_rng_state = 0x9E3779B97F4A7C15ull;
static inline unsigned long long unit_rand(void) {
  unit_rng_state ^= unit_rng_state >> 12;
  unit_rng_state ^= unit_rng_state << 25;
  unit_rng_state ^= unit_rng_state >> 27;
  return unit_rng_state * 2685821657736338717ull;
}

#endif
