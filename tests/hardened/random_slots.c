/* SPDX-License-Identifier: MIT */
/*
 * hardened.random_slots: hardened mode hands out a slab's blocks in an order the program
 * cannot tell (src/hardened.h: random slots). 512 blocks of one size class in a row:
 * in the default mode each follows the one before it in its slab (the next region up or
 * down) nearly always; in hardened mode, shuffled in groups of a few, far less often.
 */
#include "tt.h"

#include <stddef.h>

#define BLOCKS 512
#define SIZE 40 /* a class of 48 B in both modes (hardened mode adds 5 bytes) */

int main(void) {
  static char *block[BLOCKS];
  for (int i = 0; i < BLOCKS; i++) block[i] = malloc(SIZE);
  int neighbours = 0;
  for (int i = 1; i < BLOCKS; i++) {
    ptrdiff_t step = block[i] - block[i - 1];
    if (step == 48 || step == -48) neighbours++;
  }
  printf("%d of %d blocks next to the one before\n", neighbours, BLOCKS - 1);
  TT_CHECKF(neighbours < (BLOCKS - 1) * 3 / 4, "%d of %d blocks next to the one before: not shuffled", neighbours,
            BLOCKS - 1);
  for (int i = 0; i < BLOCKS; i++) free(block[i]);
  return 0;
}
