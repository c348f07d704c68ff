/* SPDX-License-Identifier: MIT */
/* Per-large-size statistics: blocks of known large sizes show up in the counters of
 * their size class (stats.arenas.<i>.lextents.<j>.*, arenas.lextent.<j>.size), and
 * leave the current count when freed. */
#include <stdint.h>
#include <stdio.h>
#include <malloc.h>
#include <stdlib.h>

#include "tt_ctl.h"

int main(void) {
  tt_require_tessera();
  void *p[5];
  for (int i = 0; i < 5; i++) p[i] = malloc(100000);
  void *big = malloc((size_t)3 << 20);
  unsigned j100k = tt_lextent_of(malloc_usable_size(p[0])), j3m = tt_lextent_of(malloc_usable_size(big));
  TT_CHECK(j100k != j3m);
  tt_stats_refresh();
  size_t cur100k = tt_ctl_size("stats.arenas.4096.lextents.%u.curlextents", j100k);
  size_t cur3m = tt_ctl_size("stats.arenas.4096.lextents.%u.curlextents", j3m);
  TT_CHECKF(cur100k >= 5 && cur3m >= 1, "current: %zu and %zu", cur100k, cur3m);
  for (int i = 0; i < 5; i++) free(p[i]);
  free(big);
  /* Freed 100 kB blocks may wait in the thread's cache of large blocks, still counted
   * by their arena (as jemalloc's are): flushed, they are freed there. */
  TT_CHECK(tt_ctl("thread.tcache.flush", NULL, NULL, NULL, 0) == 0);
  tt_stats_refresh();
  TT_CHECKF(tt_ctl_size("stats.arenas.4096.lextents.%u.curlextents", j100k) == cur100k - 5, "freed 100 kB blocks");
  TT_CHECKF(tt_ctl_size("stats.arenas.4096.lextents.%u.curlextents", j3m) == cur3m - 1, "freed 3 MiB block");
  size_t nmalloc = tt_ctl_size("stats.arenas.4096.lextents.%u.nmalloc", j100k);
  size_t ndalloc = tt_ctl_size("stats.arenas.4096.lextents.%u.ndalloc", j100k);
  TT_CHECKF(nmalloc >= 5 && ndalloc >= 5 && nmalloc - ndalloc == cur100k - 5, "nmalloc %zu ndalloc %zu", nmalloc, ndalloc);
  printf("lextents: ok\n");
  return 0;
}
