/* SPDX-License-Identifier: MIT */
/*
 * rlimit_as <limit MiB> <min MiB> <threads>: a program that lowers its own address-space limit
 * (RLIMIT_AS) after start-up, as sandboxes do, then allocates until malloc returns NULL
 * (1 MiB chunks, then 64 KiB chunks), checks that it got at least <min MiB>, frees it
 * all, and starts 4 threads (1 MiB stacks) that each allocate and free 16 MiB in 64 KiB blocks: every
 * thread must start and every allocation succeed. Prints the MiB it got (run it without
 * LD_PRELOAD of tessera, linked plain, to see glibc's figure).
 */
#include "tt.h"

#include <pthread.h>
#include <sys/resource.h>

enum { NTHREADS = 4, MAX_BLOCKS = 1 << 16 };
static void *blocks[MAX_BLOCKS];

static void *thread_main(void *arg) {
  (void)arg;
  void *mine[256];
  for (int i = 0; i < 256; i++) {
    mine[i] = malloc(64 << 10);
    if (mine[i] == NULL) return (void *)1;
    memset(mine[i], i, 64 << 10);
  }
  for (int i = 0; i < 256; i++) free(mine[i]);
  return NULL;
}

/* Allocates chunk-byte blocks until NULL; returns how many it got. */
static size_t fill(size_t chunk, size_t first) {
  size_t n = first;
  while (n < MAX_BLOCKS) {
    void *p = malloc(chunk);
    if (p == NULL) break;
    memset(p, 1, 64); /* touch it (the rest may stay untouched: address space is the limit) */
    blocks[n++] = p;
  }
  return n;
}

int main(int argc, char **argv) {
  TT_CHECKF(argc == 4, "usage: rlimit_as <limit MiB> <min MiB> <threads (at most 4)>");
  int nthreads = atoi(argv[3]);
  TT_CHECK(nthreads >= 0 && nthreads <= NTHREADS);
  size_t limit = strtoull(argv[1], NULL, 10) << 20, min = strtoull(argv[2], NULL, 10) << 20;
  free(malloc(100)); /* the allocator is up before the limit comes down */
  struct rlimit rl = {limit, limit};
  TT_CHECK(setrlimit(RLIMIT_AS, &rl) == 0);
  size_t big = fill(1 << 20, 0);
  size_t all = fill(64 << 10, big);
  size_t got = big * (1 << 20) + (all - big) * (64 << 10);
  printf("rlimit_as: %zu MiB allocated under a %zu MiB limit (%zu x 1 MiB, %zu x 64 KiB)\n", got >> 20,
         limit >> 20, big, all - big);
  fflush(stdout);
  TT_CHECKF(got >= min, "got %zu MiB, want at least %zu", got >> 20, min >> 20);
  for (size_t i = 0; i < all; i++) free(blocks[i]);
  /* 1 MiB stacks: tessera keeps the address space of freed memory mapped (its pages
   * released), so a program at its limit has little room for 8 MiB default stacks. */
  pthread_attr_t attr;
  TT_CHECK(pthread_attr_init(&attr) == 0 && pthread_attr_setstacksize(&attr, 1 << 20) == 0);
  pthread_t t[NTHREADS];
  for (int i = 0; i < nthreads; i++)
    TT_CHECKF(pthread_create(&t[i], &attr, thread_main, NULL) == 0, "thread %d did not start", i);
  for (int i = 0; i < nthreads; i++) {
    void *r;
    TT_CHECK(pthread_join(t[i], &r) == 0);
    TT_CHECKF(r == NULL, "thread %d: malloc returned NULL", i);
  }
  printf("rlimit_as: %d threads started and allocated\n", nthreads);
  return 0;
}
