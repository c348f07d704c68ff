/* SPDX-License-Identifier: MIT */
/*
 * tt_ctl.h: reading tessera's statistics from a test, through tessera_ctl found at run
 * time (so that a test runs both linked against libtessera and started with LD_PRELOAD):
 *   - tt_ctl(): tessera_ctl itself;
 *   - tt_stats_refresh(): a new statistics snapshot (the "epoch" name);
 *   - tt_ctl_size(): a size_t name with one %u in it, e.g. "arenas.lextent.%u.size";
 *   - tt_bin_of(): the small class (bin) whose blocks have exactly a size;
 *   - tt_lextent_of(): the large class that counts blocks of a usable size.
 */
#ifndef TT_CTL_H
#define TT_CTL_H

#include "tt.h"

static inline int tt_ctl(const char *name, void *old, size_t *oldlen, void *new_value, size_t newlen) {
  static int (*ctl)(const char *, void *, size_t *, void *, size_t);
  if (ctl == NULL) ctl = (int (*)(const char *, void *, size_t *, void *, size_t))dlsym(RTLD_DEFAULT, "tessera_ctl");
  TT_CHECKF(ctl != NULL, "tessera_ctl not found: not running on tessera");
  return ctl(name, old, oldlen, new_value, newlen);
}

static inline void tt_stats_refresh(void) {
  uint64_t e = 1;
  TT_CHECK(tt_ctl("epoch", NULL, NULL, &e, sizeof(e)) == 0);
}

static inline size_t tt_ctl_size(const char *fmt, unsigned j) {
  char name[96];
  snprintf(name, sizeof(name), fmt, j);
  size_t v = 0, len = sizeof(v);
  TT_CHECKF(tt_ctl(name, &v, &len, NULL, 0) == 0, "read %s", name);
  return v;
}

/* The small class (bin index) whose blocks have exactly size bytes; fails the test if none. */
static inline unsigned tt_bin_of(size_t size) {
  unsigned n = 0;
  size_t len = sizeof(n);
  TT_CHECK(tt_ctl("arenas.nbins", &n, &len, NULL, 0) == 0);
  for (unsigned j = 0; j < n; j++)
    if (tt_ctl_size("arenas.bin.%u.size", j) == size) return j;
  TT_CHECKF(0, "no small class of %zu bytes", size);
  return 0;
}

/* The large class whose range holds usable size u: the first with size >= u. */
static inline unsigned tt_lextent_of(size_t u) {
  unsigned n = 0;
  size_t len = sizeof(n);
  TT_CHECK(tt_ctl("arenas.nlextents", &n, &len, NULL, 0) == 0);
  for (unsigned j = 0; j < n; j++)
    if (tt_ctl_size("arenas.lextent.%u.size", j) >= u) return j;
  return n - 1;
}

#endif
