/* SPDX-License-Identifier: MIT */
/*
 * The profiler's knobs wired into malloc (prof:true), against libtessera.so; the shell
 * script (check_knobs.sh) sets the options and reads the files:
 *   knobs_test DIR gdump     grows to 16 MiB (prof_gdump dumps at each new peak), frees
 *                            it, then allocates 8 MiB four times (below the peak: no
 *                            dump); prints "peak_dumps=A after=B" (files *.m.heap)
 *   knobs_test DIR interval  allocates and frees 16 MiB (lg_prof_interval dumps)
 *   knobs_test DIR reset     hot() keeps 8 MiB, dump; prof.reset (mallctl) with a new
 *                            lg_sample; cold() keeps 4 MiB, dump
 *   knobs_test DIR arena     hot_arena() keeps 16 MiB from mallocx(MALLOCX_ARENA(a))
 *   knobs_test DIR lifo      malloc, free, malloc of one size, for sizes 16 B-1 KiB,
 *                            a dump, then 1.5-32 KiB: prints "lifo_misses=N
 *                            large_misses=M", the times the second malloc did not get
 *                            the block just freed (prof:true must reuse blocks in the
 *                            order prof:false does, but for the sampled ones up to 1 KiB)
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tessera.h"

#define NOINLINE __attribute__((noinline))
#define MIB (1u << 20)

void grow(unsigned n);
void hot(void);
void cold(void);
void hot_arena(unsigned arena);

static void *blocks[65536];

static unsigned count_files(const char *dir, const char *suffix) {
  DIR *d = opendir(dir);
  unsigned n = 0;
  for (struct dirent *e; d != NULL && (e = readdir(d)) != NULL;) {
    size_t len = strlen(e->d_name), s = strlen(suffix);
    if (len > s && strcmp(e->d_name + len - s, suffix) == 0) n++;
  }
  if (d != NULL) closedir(d);
  return n;
}

NOINLINE void grow(unsigned n) {
  for (unsigned i = 0; i < n; i++) blocks[i] = malloc(1000);
  __asm__ volatile("" ::: "memory");
}

static void release(unsigned n) {
  for (unsigned i = 0; i < n; i++) free(blocks[i]);
}

static int gdump(const char *dir) {
  grow(16384); /* 16 MiB in 1 KiB blocks */
  unsigned at_peak = count_files(dir, ".m.heap");
  release(16384);
  for (int round = 0; round < 4; round++) {
    grow(8192);
    release(8192);
  }
  printf("peak_dumps=%u after=%u\n", at_peak, count_files(dir, ".m.heap"));
  return 0;
}

static int interval(const char *dir) {
  for (int round = 0; round < 16; round++) {
    grow(1024); /* 1 MiB */
    release(1024);
  }
  printf("interval_dumps=%u\n", count_files(dir, ".i.heap"));
  return 0;
}

NOINLINE void hot(void) { grow(8192); }

NOINLINE void cold(void) {
  for (unsigned i = 0; i < 4096; i++) blocks[8192 + i] = malloc(1000);
  __asm__ volatile("" ::: "memory");
}

static int dump(void) { return tessera_ctl("prof.dump", NULL, NULL, NULL, 0); }

static int reset(void) {
  hot();
  if (dump() != 0) return 1;
  size_t lg = 15, got = 0, len = sizeof(got);
  if (mallctl("prof.reset", NULL, NULL, &lg, sizeof(lg)) != 0) return 1;
  if (tessera_ctl("prof.lg_sample", &got, &len, NULL, 0) != 0 || got != 15) {
    fprintf(stderr, "prof.lg_sample after prof.reset: %zu, not 15\n", got);
    return 1;
  }
  cold();
  return dump();
}

NOINLINE void hot_arena(unsigned arena) {
  for (unsigned i = 0; i < 16384; i++) blocks[i] = mallocx(1000, MALLOCX_ARENA(arena));
  __asm__ volatile("" ::: "memory");
}

static int arena(void) {
  unsigned a = 0;
  size_t len = sizeof(a);
  if (mallctl("arenas.create", &a, &len, NULL, 0) != 0) return 1;
  hot_arena(a);
  return 0;
}

/* malloc, free, malloc of one size, 2000 times for each size from..to (step 16 below
 * 1 KiB, else 512): the times the second malloc did not get the block just freed. */
static unsigned lifo_misses(size_t from, size_t to) {
  unsigned misses = 0;
  for (size_t size = from; size <= to; size += size < 1024 ? 16 : 512) {
    for (unsigned i = 0; i < 2000; i++) {
      void *p = malloc(size);
      free(p);
      void *q = malloc(size);
      if (q != p) misses++;
      free(q);
    }
  }
  return misses;
}

/* With prof:true a freed block must be the next one malloc hands out for its size, as
 * with prof:false (the thread cache's LIFO order), but for the sampled blocks of the
 * classes up to 1 KiB, which come from and go back to slabs of their own (each such
 * sample is one miss: a sampled p is not in the cache to be taken again, a sampled q is
 * not the p just freed). Sizes up to 1 KiB, then a dump (prof.dump, when prof is on:
 * its sampled allocations bound the misses), then larger sizes (sampled in place: no
 * miss). */
static int lifo(void) {
  unsigned small = lifo_misses(16, 1024);
  (void)dump();
  unsigned large = lifo_misses(1536, 32768);
  printf("lifo_misses=%u large_misses=%u\n", small, large);
  return 0;
}

int main(int argc, char **argv) {
  if (argc < 3) return 2;
  if (strcmp(argv[2], "gdump") == 0) return gdump(argv[1]);
  if (strcmp(argv[2], "interval") == 0) return interval(argv[1]);
  if (strcmp(argv[2], "reset") == 0) return reset();
  if (strcmp(argv[2], "arena") == 0) return arena();
  if (strcmp(argv[2], "lifo") == 0) return lifo();
  return 2;
}
