/* SPDX-License-Identifier: MIT */
/*
 * The healthy program: one thread, a small working set of mixed small blocks that fits
 * its thread cache, no large blocks, no bursts. The advisor must find nothing to change.
 *
 *   healthy [rounds=200000]
 */
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv) {
  unsigned rounds = argc > 1 ? (unsigned)atoi(argv[1]) : 200000;
  if (rounds == 0) {
    fprintf(stderr, "healthy: usage: healthy [rounds >= 1]\n");
    return 2;
  }
  void *blocks[8];
  unsigned long sum = 0;
  for (unsigned r = 0; r < rounds; r++) {
    for (unsigned i = 0; i < 8; i++) {
      blocks[i] = malloc(16 + 16 * i);
      if (blocks[i] == NULL) abort();
      ((volatile char *)blocks[i])[0] = (char)i;
    }
    for (unsigned i = 0; i < 8; i++) {
      sum += ((volatile char *)blocks[i])[0];
      free(blocks[i]);
    }
  }
  return sum == 1 ? 1 : 0;
}
