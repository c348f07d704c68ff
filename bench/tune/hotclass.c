/* SPDX-License-Identifier: MIT */
/*
 * Rule "cache-bin fills and flushes": one thread works on a batch of BATCH 1 KiB
 * blocks at a time (allocate them all, free them all). The batch (1500 blocks, 1.5 MiB)
 * is bigger than a thread-cache bin grows by itself (1 MiB of blocks: 1024 of this
 * class), so every round refills and flushes the bin through the arena, half a bin (512
 * blocks) at a time; the default 16 KiB slabs of the class hold 16 regions, so each fill
 * and flush goes through 32 slabs.
 *
 *   hotclass [rounds=40000] [batch=1500]
 * Has the problem with the default options.
 */
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv) {
  unsigned rounds = argc > 1 ? (unsigned)atoi(argv[1]) : 40000;
  unsigned batch = argc > 2 ? (unsigned)atoi(argv[2]) : 1500;
  if (rounds == 0 || batch == 0 || batch > 4096) {
    fprintf(stderr, "hotclass: usage: hotclass [rounds] [batch 1-4096]\n");
    return 2;
  }
  void *blocks[4096];
  unsigned long sum = 0;
  for (unsigned r = 0; r < rounds; r++) {
    for (unsigned i = 0; i < batch; i++) {
      blocks[i] = malloc(1000);
      if (blocks[i] == NULL) abort();
      ((volatile char *)blocks[i])[0] = (char)r;
    }
    for (unsigned i = 0; i < batch; i++) {
      sum += ((volatile char *)blocks[i])[0];
      free(blocks[i]);
    }
  }
  return sum == 1 ? 1 : 0;
}
