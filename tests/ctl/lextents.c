/* SPDX-License-Identifier: MIT */
/* Per-large-size statistics: blocks of known large sizes show up in the counters of
 * their size class (stats.arenas.<i>.lextents.<j>.*, arenas.lextent.<j>.size), and
 * leave the current count when freed. */
#include <stdint.h>
#include <stdio.h>
#include <malloc.h>
#include <stdlib.h>

#include "tessera.h"
#include "tt.h"

static void refresh(void) {
  uint64_t e = 1;
  TT_CHECK(tessera_ctl("epoch", NULL, NULL, &e, sizeof(e)) == 0);
}

static size_t read_size(const char *fmt, unsigned j) {
  char name[96];
  snprintf(name, sizeof(name), fmt, j);
  size_t v = 0, len = sizeof(v);
  TT_CHECKF(tessera_ctl(name, &v, &len, NULL, 0) == 0, "read %s", name);
  return v;
}

/* The class whose range holds usable size u: the first with size >= u. */
static unsigned class_of(size_t u) {
  unsigned n = 0;
  size_t len = sizeof(n);
  TT_CHECK(tessera_ctl("arenas.nlextents", &n, &len, NULL, 0) == 0);
  for (unsigned j = 0; j < n; j++)
    if (read_size("arenas.lextent.%u.size", j) >= u) return j;
  return n - 1;
}

int main(void) {
  tt_require_tessera();
  void *p[5];
  for (int i = 0; i < 5; i++) p[i] = malloc(100000);
  void *big = malloc((size_t)3 << 20);
  unsigned j100k = class_of(malloc_usable_size(p[0])), j3m = class_of(malloc_usable_size(big));
  TT_CHECK(j100k != j3m);
  refresh();
  size_t cur100k = read_size("stats.arenas.4096.lextents.%u.curlextents", j100k);
  size_t cur3m = read_size("stats.arenas.4096.lextents.%u.curlextents", j3m);
  TT_CHECKF(cur100k >= 5 && cur3m >= 1, "current: %zu and %zu", cur100k, cur3m);
  for (int i = 0; i < 5; i++) free(p[i]);
  free(big);
  /* Freed 100 kB blocks may wait in the thread's cache of large blocks, still counted
   * by their arena (as jemalloc's are): flushed, they are freed there. */
  TT_CHECK(tessera_ctl("thread.tcache.flush", NULL, NULL, NULL, 0) == 0);
  refresh();
  TT_CHECKF(read_size("stats.arenas.4096.lextents.%u.curlextents", j100k) == cur100k - 5, "freed 100 kB blocks");
  TT_CHECKF(read_size("stats.arenas.4096.lextents.%u.curlextents", j3m) == cur3m - 1, "freed 3 MiB block");
  size_t nmalloc = read_size("stats.arenas.4096.lextents.%u.nmalloc", j100k);
  size_t ndalloc = read_size("stats.arenas.4096.lextents.%u.ndalloc", j100k);
  TT_CHECKF(nmalloc >= 5 && ndalloc >= 5 && nmalloc - ndalloc == cur100k - 5, "nmalloc %zu ndalloc %zu", nmalloc, ndalloc);
  printf("lextents: ok\n");
  return 0;
}
