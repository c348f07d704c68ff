/* SPDX-License-Identifier: MIT */
/*
 * Rule "pages purged and faulted back": a bursty program. Each burst allocates
 * BURST_MIB of BLOCK_KIB blocks, writes them, frees them, then the program pauses for
 * PAUSE_MS (waiting for the next request). When the decay time is shorter than the
 * pause, the first allocation of the next burst releases the previous burst's pages to
 * the kernel and the burst faults them all back in.
 *
 *   decayburst [bursts=40] [burst_mib=64] [pause_ms=60] [block_kib=1024]
 * Run with TESSERA_CONF=dirty_decay_ms:20 to build the problem.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>


int main(int argc, char **argv) {
  unsigned bursts = argc > 1 ? (unsigned)atoi(argv[1]) : 40;
  unsigned burst_mib = argc > 2 ? (unsigned)atoi(argv[2]) : 64;
  unsigned pause_ms = argc > 3 ? (unsigned)atoi(argv[3]) : 60;
  unsigned block_kib = argc > 4 ? (unsigned)atoi(argv[4]) : 1024;
  if (bursts == 0 || burst_mib == 0 || burst_mib > 4096 || pause_ms > 10000 || block_kib == 0 ||
      block_kib > burst_mib * 1024u) {
    fprintf(stderr, "decayburst: usage: decayburst [bursts] [burst_mib 1-4096] [pause_ms 0-10000] [block_kib]\n");
    return 2;
  }
  const size_t BLOCK = (size_t)block_kib << 10;
  unsigned n = (unsigned)(burst_mib * ((size_t)1 << 20) / BLOCK);
  char **blocks = malloc(sizeof(char *) * n);
  if (blocks == NULL) abort();
  struct timespec pause = {pause_ms / 1000, (long)(pause_ms % 1000) * 1000000L};
  for (unsigned b = 0; b < bursts; b++) {
    for (unsigned i = 0; i < n; i++) {
      blocks[i] = malloc(BLOCK);
      if (blocks[i] == NULL) abort();
      memset(blocks[i], (int)(b + i), BLOCK);
    }
    for (unsigned i = 0; i < n; i++) free(blocks[i]);
    nanosleep(&pause, NULL);
  }
  free(blocks);
  return 0;
}
