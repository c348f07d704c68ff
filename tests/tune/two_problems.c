/* SPDX-License-Identifier: MIT */
/*
 * Two problems for tessera tune's per-finding measurement, in a few milliseconds: each
 * round allocates a batch of 1500 blocks of 1000 bytes (beyond what a thread-cache bin
 * grows to, in 16-region slabs: the bins rule) and frees it, then allocates and frees a
 * 24 KiB buffer 50 times (above tcache_max:16384: the tcache_max rule).
 *
 *   two_problems [rounds=300]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BATCH 1500

int main(int argc, char **argv) {
  long rounds = argc > 1 ? strtol(argv[1], NULL, 10) : 300;
  if (rounds <= 0 || rounds > 10000000) {
    fprintf(stderr, "two_problems: usage: two_problems [rounds 1-10000000]\n");
    return 2;
  }
  static void *blocks[BATCH];
  unsigned long sum = 0;
  for (long r = 0; r < rounds; r++) {
    for (unsigned i = 0; i < BATCH; i++) {
      blocks[i] = malloc(1000);
      if (blocks[i] == NULL) abort();
      *(volatile char *)blocks[i] = (char)i;
    }
    for (unsigned i = 0; i < BATCH; i++) free(blocks[i]);
    for (unsigned i = 0; i < 50; i++) {
      unsigned char *p = malloc(24576);
      if (p == NULL) abort();
      memset(p, (int)i, 64);
      sum += p[i % 64];
      free(p);
    }
  }
  return sum == 1 ? 1 : 0;
}
