/* SPDX-License-Identifier: MIT */
/*
 * Rule "memory kept in mostly-empty slabs" (--goal memory): phase one allocates
 * PHASE_MIB of 64-byte blocks and frees all but a random 1%; those survivors stay live
 * to the end. Phase two then allocates PHASE_MIB of 320-byte blocks. With big slabs
 * nearly every 64-byte slab keeps a survivor, so its pages stay in use and phase two
 * needs new memory; with small slabs most 64-byte slabs empty out and their pages serve
 * phase two.
 *
 *   fragment [phase_mib=128] [keep_permille=10]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static unsigned long long rng = 0x9E3779B97F4A7C15ull;
static unsigned next_random(void) {
  rng ^= rng << 13;
  rng ^= rng >> 7;
  rng ^= rng << 17;
  return (unsigned)(rng >> 32);
}

int main(int argc, char **argv) {
  size_t phase_mib = argc > 1 ? strtoul(argv[1], NULL, 10) : 128;
  unsigned keep = argc > 2 ? (unsigned)atoi(argv[2]) : 10;
  if (phase_mib == 0 || phase_mib > 4096 || keep > 1000) {
    fprintf(stderr, "fragment: usage: fragment [phase_mib 1-4096] [keep_permille 0-1000]\n");
    return 2;
  }
  size_t n1 = (phase_mib << 20) / 64, n2 = (phase_mib << 20) / 320;
  char **small = malloc(n1 * sizeof(char *));
  char **second = malloc(n2 * sizeof(char *));
  if (small == NULL || second == NULL) abort();
  for (size_t i = 0; i < n1; i++) {
    if ((small[i] = malloc(64)) == NULL) abort();
    memset(small[i], 1, 64);
  }
  for (size_t i = 0; i < n1; i++) {
    if (next_random() % 1000 >= keep) {
      free(small[i]);
      small[i] = NULL;
    }
  }
  for (size_t i = 0; i < n2; i++) {
    if ((second[i] = malloc(320)) == NULL) abort();
    memset(second[i], 2, 320);
  }
  /* Survivors and phase two stay live until exit: the statistics see them. */
  unsigned long sum = 0;
  for (size_t i = 0; i < n1; i += 4096) sum += small[i] != NULL;
  return sum == (unsigned long)-1 ? 1 : 0;
}
