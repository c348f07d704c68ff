/* SPDX-License-Identifier: MIT */
/*
 * Rule "threads per arena": THREADS busy threads that each allocate a batch of blocks
 * bigger than their thread cache holds, then free it, ROUNDS times. Every batch refills
 * and flushes the cache, so each thread takes its arena's bin locks often; with
 * narenas:1 all of them queue on the same locks. The batch (6000 blocks, about 3000 of
 * each class) is bigger than a cache bin grows by itself (2048 blocks, docs/design.md):
 * a smaller one stops reaching the arena after a few rounds.
 *
 *   contention [threads=8] [rounds=1500] [batch=6000] [size=64]
 * Run with TESSERA_CONF=narenas:1 to build the problem.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static unsigned rounds = 1500, batch = 6000;
static size_t size0 = 64;

static void *worker(void *arg) {
  unsigned seed = (unsigned)(size_t)arg * 2654435761u + 1;
  void **blocks = malloc(sizeof(void *) * batch);
  if (blocks == NULL) abort();
  for (unsigned r = 0; r < rounds; r++) {
    for (unsigned i = 0; i < batch; i++) {
      seed = seed * 1103515245u + 12345u;
      size_t size = size0 << ((seed >> 16) & 1); /* SIZE or twice SIZE: two classes */
      blocks[i] = malloc(size);
      if (blocks[i] == NULL) abort();
      *(volatile char *)blocks[i] = (char)i;
    }
    for (unsigned i = 0; i < batch; i++) free(blocks[i]);
  }
  free(blocks);
  return NULL;
}

int main(int argc, char **argv) {
  unsigned threads = argc > 1 ? (unsigned)atoi(argv[1]) : 8;
  if (argc > 2) rounds = (unsigned)atoi(argv[2]);
  if (argc > 3) batch = (unsigned)atoi(argv[3]);
  if (argc > 4) size0 = (size_t)atoi(argv[4]);
  if (threads == 0 || threads > 256 || rounds == 0 || batch == 0 || size0 == 0 || size0 > 4096) {
    fprintf(stderr, "contention: usage: contention [threads 1-256] [rounds] [batch] [size 1-4096]\n");
    return 2;
  }
  pthread_t tid[256];
  for (unsigned t = 0; t < threads; t++) {
    if (pthread_create(&tid[t], NULL, worker, (void *)(size_t)t) != 0) abort();
    char name[16];
    snprintf(name, sizeof(name), "worker-%u", t);
    pthread_setname_np(tid[t], name);
  }
  for (unsigned t = 0; t < threads; t++) pthread_join(tid[t], NULL);
  return 0;
}
