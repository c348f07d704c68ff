/* SPDX-License-Identifier: MIT */
/*
 * Empty slabs of a class the program stopped using leave their bin for the arena's
 * stash (where other classes' new slabs and decay find them), one case per process:
 *   exit   a thread that used a class exits: that class's bins hold no slab
 *   flush  thread.tcache.flush: the same, for the calling thread
 *   phase  batches of one size, then batches of another: the first size's grown cache
 *          bin is given back and its empty slabs with it, while the program runs
 */
#include "tt_ctl.h"

#include <pthread.h>
#include <stdint.h>

/* Slabs the bins of this class hold, over every arena. */
static size_t bin_slabs(size_t size) {
  tt_stats_refresh();
  return tt_ctl_size("stats.arenas.4096.bins.%u.curslabs", tt_bin_of(size));
}

enum { BATCH = 1000, ROUNDS = 20 };

/* Rounds of BATCH blocks of `size` bytes, each allocated, written and freed newest first. */
static void batches(size_t size) {
  static void *blocks[BATCH];
  for (int r = 0; r < ROUNDS; r++) {
    for (int i = 0; i < BATCH; i++) {
      blocks[i] = malloc(size);
      TT_CHECK(blocks[i] != NULL);
      memset(blocks[i], r, size);
    }
    for (int i = BATCH - 1; i >= 0; i--) free(blocks[i]);
  }
}

static void *batches_of_768(void *arg) {
  (void)arg;
  batches(768);
  return NULL;
}

static void test_exit(void) {
  pthread_t t;
  TT_CHECK(pthread_create(&t, NULL, batches_of_768, NULL) == 0);
  TT_CHECK(pthread_join(t, NULL) == 0);
  size_t left = bin_slabs(768);
  TT_CHECKF(left == 0, "the only thread that used 768-byte blocks exited: its bins still hold %zu slabs", left);
}

static void test_flush(void) {
  batches(768);
  TT_CHECK(tt_ctl("thread.tcache.flush", NULL, NULL, NULL, 0) == 0);
  size_t left = bin_slabs(768);
  TT_CHECKF(left == 0, "every 768-byte block freed and the cache flushed: the bins still hold %zu slabs", left);
}

static void test_phase(void) {
  batches(768);
  TT_CHECK(bin_slabs(768) > 0); /* the cache holds a batch: its slabs are in use */
  batches(1280);
  size_t left = bin_slabs(768);
  TT_CHECKF(left == 0, "after batches of 1280 bytes, the 768-byte class's bins still hold %zu slabs", left);
}

int main(int argc, char **argv) {
  TT_CHECK(argc == 2);
  if (strcmp(argv[1], "exit") == 0) test_exit();
  else if (strcmp(argv[1], "flush") == 0) test_flush();
  else if (strcmp(argv[1], "phase") == 0) test_phase();
  else TT_CHECKF(0, "unknown case %s", argv[1]);
  return 0;
}
