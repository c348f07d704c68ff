/* SPDX-License-Identifier: MIT */
/*
 * Rule "cache-bin fills and flushes": one thread works on a batch of BATCH 1 KiB
 * blocks at a time (allocate them all, free them all). With small slabs for the 1 KiB
 * class its thread-cache bin holds fewer blocks than the batch, so every batch refills
 * and flushes the bin through the arena.
 *
 *   hotclass [rounds=600000] [batch=48]
 * Run with TESSERA_CONF=slab_sizes:1024-1024:1 to build the problem.
 */
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv) {
  unsigned rounds = argc > 1 ? (unsigned)atoi(argv[1]) : 600000;
  unsigned batch = argc > 2 ? (unsigned)atoi(argv[2]) : 48;
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
