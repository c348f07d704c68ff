/* SPDX-License-Identifier: MIT */
/*
 * api.mallocx_limits: jemalloc's allocation API at its edges, as jemalloc's own
 * integration tests check it. Above the largest size class (arenas.lextent.<last>.size)
 * nallocx is 0 and mallocx and rallocx NULL, the block given to rallocx untouched; every
 * MALLOCX_ZERO block is zero to its usable size, whether it comes through the thread
 * cache, an explicit arena or no cache, also when junk:true fills new blocks (run with
 * TESSERA_CONF=junk:true too).
 */
#include "tt.h"

#include <strings.h>

#include "tessera.h"

static size_t largest_class(void) {
  unsigned n;
  size_t len = sizeof(n);
  TT_CHECK(mallctl("arenas.nlextents", &n, &len, NULL, 0) == 0 && n > 0);
  size_t mib[4], miblen = 4;
  TT_CHECK(mallctlnametomib("arenas.lextent.0.size", mib, &miblen) == 0 && miblen == 4);
  mib[2] = n - 1;
  size_t size;
  len = sizeof(size);
  TT_CHECK(mallctlbymib(mib, miblen, &size, &len, NULL, 0) == 0);
  return size;
}

static void test_limits(void) {
  size_t largest = largest_class();
  TT_CHECKF(nallocx(largest, 0) >= largest, "nallocx(largest %#zx) = %#zx", largest, nallocx(largest, 0));
  static const int flag_sets[] = {0, MALLOCX_ZERO, MALLOCX_TCACHE_NONE, MALLOCX_ARENA(0), MALLOCX_LG_ALIGN(12)};
  const size_t too_big[] = {largest + 1, largest + 4096, largest * 2, (size_t)PTRDIFF_MAX + 1, SIZE_MAX};
  for (size_t f = 0; f < sizeof flag_sets / sizeof flag_sets[0]; f++) {
    for (size_t i = 0; i < sizeof too_big / sizeof too_big[0]; i++) {
      size_t n = tt_opaque(too_big[i]);
      int flags = flag_sets[f];
      TT_CHECKF(nallocx(n, flags) == 0, "nallocx(%#zx, %#x) = %#zx", n, flags, nallocx(n, flags));
      void *p = mallocx(n, flags);
      TT_CHECKF(p == NULL, "mallocx(%#zx, %#x) = %p", n, flags, p);
      unsigned char *q = mallocx(100, 0);
      TT_CHECK(q != NULL);
      memset(q, 0x6b, 100);
      void *r = rallocx(q, n, flags);
      TT_CHECKF(r == NULL, "rallocx(%#zx, %#x) = %p", n, flags, r);
      for (size_t k = 0; k < 100; k++) TT_CHECKF(q[k] == 0x6b, "rallocx failure changed byte %zu", k);
      dallocx(q, 0);
    }
  }
}

static void check_zero(const unsigned char *p, size_t n, const char *what, size_t size, int flags) {
  TT_CHECKF(p != NULL, "%s(%zu, %#x) = NULL", what, size, flags);
  size_t usable = sallocx(p, 0);
  TT_CHECKF(usable >= n, "%s(%zu, %#x): usable %zu", what, size, flags, usable);
  for (size_t k = 0; k < usable; k++)
    TT_CHECKF(p[k] == 0, "%s(%zu, %#x): byte %zu of %zu is %#x", what, size, flags, k, usable, p[k]);
}

static void test_zero(void) {
  unsigned arena;
  size_t len = sizeof(arena);
  TT_CHECK(mallctl("arenas.create", &arena, &len, NULL, 0) == 0);
  const int flag_sets[] = {MALLOCX_ZERO,
                           MALLOCX_ZERO | MALLOCX_TCACHE_NONE,
                           MALLOCX_ZERO | MALLOCX_ARENA(0),
                           MALLOCX_ZERO | MALLOCX_ARENA(arena),
                           MALLOCX_ZERO | MALLOCX_ARENA(arena) | MALLOCX_TCACHE_NONE,
                           MALLOCX_ZERO | MALLOCX_LG_ALIGN(6) | MALLOCX_ARENA(0),
                           MALLOCX_ZERO | MALLOCX_LG_ALIGN(13) | MALLOCX_TCACHE_NONE};
  static const size_t sizes[] = {1, 16, 100, 1000, 4096, 20000, 40000, 300000, 3u << 20};
  for (int round = 0; round < 3; round++) {
    for (size_t f = 0; f < sizeof flag_sets / sizeof flag_sets[0]; f++) {
      for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        size_t n = tt_opaque(sizes[i]);
        int flags = flag_sets[f];
        unsigned char *p = mallocx(n, flags);
        check_zero(p, n, "mallocx", n, flags);
        memset(p, 0xee, sallocx(p, 0)); /* the next round reuses dirty blocks */
        unsigned char *q = mallocx(1, flags);
        check_zero(q, 1, "mallocx", 1, flags);
        size_t old = sallocx(q, 0);
        memset(q, 0x11, old);
        q = rallocx(q, n + 5000, flags);
        TT_CHECK(q != NULL && q[0] == 0x11 && q[old - 1] == 0x11);
        for (size_t k = old; k < sallocx(q, 0); k++)
          TT_CHECKF(q[k] == 0, "rallocx(%zu, %#x): byte %zu is %#x", n + 5000, flags, k, q[k]);
        dallocx(p, flags & MALLOCX_TCACHE_NONE);
        dallocx(q, flags & MALLOCX_TCACHE_NONE);
      }
    }
  }
}

int main(int argc, char **argv) {
  tt_require_tessera();
  const char *which = argc > 1 ? argv[1] : "all";
  if (strcmp(which, "zero") != 0) test_limits();
  if (strcmp(which, "limits") != 0) test_zero();
  printf("api.mallocx_limits %s: ok\n", which);
  return 0;
}
