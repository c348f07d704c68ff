/* SPDX-License-Identifier: MIT */
/*
 * ctl.jemalloc_api: a program written against jemalloc's API (its declarations and
 * MALLOCX_* encoding as <jemalloc/jemalloc.h> gives them, repeated here because that
 * header is not installed) runs unchanged on tessera.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <sys/types.h>

#include "tt.h"

/* ---- as in <jemalloc/jemalloc.h> ---- */
#define MALLOCX_LG_ALIGN(la) ((int)(la))
#define MALLOCX_ALIGN(a) ((int)(ffs((int)(a)) - 1))
#define MALLOCX_ZERO ((int)0x40)
#define MALLOCX_TCACHE(tc) ((int)(((tc) + 2) << 8))
#define MALLOCX_TCACHE_NONE MALLOCX_TCACHE(-1)
#define MALLOCX_ARENA(a) ((int)(((unsigned)(a) + 1) << 20))
#define MALLCTL_ARENAS_ALL 4096
void *mallocx(size_t size, int flags);
void *rallocx(void *ptr, size_t size, int flags);
size_t xallocx(void *ptr, size_t size, size_t extra, int flags);
size_t sallocx(const void *ptr, int flags);
void dallocx(void *ptr, int flags);
void sdallocx(void *ptr, size_t size, int flags);
size_t nallocx(size_t size, int flags);
int mallctl(const char *name, void *oldp, size_t *oldlenp, void *newp, size_t newlen);
int mallctlnametomib(const char *name, size_t *mibp, size_t *miblenp);
int mallctlbymib(const size_t *mib, size_t miblen, void *oldp, size_t *oldlenp, void *newp, size_t newlen);
void malloc_stats_print(void (*write_cb)(void *, const char *), void *cbopaque, const char *opts);
/* ---- */

static bool all_zero(const unsigned char *p, size_t n) {
  for (size_t i = 0; i < n; i++)
    if (p[i] != 0) return false;
  return true;
}

static void count_cb(void *opaque, const char *text) { *(size_t *)opaque += strlen(text); }

static void arenas_and_flags(void) {
  unsigned arena, bound;
  size_t len = sizeof(arena);
  TT_CHECK(mallctl("arenas.create", &arena, &len, NULL, 0) == 0);
  unsigned char *p = mallocx(5000, MALLOCX_ARENA(arena) | MALLOCX_ZERO);
  TT_CHECK(p != NULL && sallocx(p, 0) >= 5000 && all_zero(p, sallocx(p, 0)));
  TT_CHECK(sallocx(p, 0) == nallocx(5000, MALLOCX_ARENA(arena)));
  memset(p, 7, 5000);
  p = rallocx(p, 100000, MALLOCX_ARENA(arena) | MALLOCX_ZERO);
  TT_CHECK(p != NULL && p[0] == 7 && p[4999] == 7 && sallocx(p, 0) >= 100000);
  TT_CHECK(all_zero(p + 8192, 100000 - 8192)); /* beyond the old usable size: zeroed */
  TT_CHECK(xallocx(p, 1000, 0, 0) >= 100000);     /* already big enough: in place */
  dallocx(p, 0);
  void *q = mallocx(3000, MALLOCX_ALIGN(4096) | MALLOCX_TCACHE_NONE);
  TT_CHECK(q != NULL && ((uintptr_t)q & 4095) == 0);
  sdallocx(q, 3000, MALLOCX_ALIGN(4096) | MALLOCX_TCACHE_NONE); /* jemalloc: the same flags */
  q = mallocx(100, MALLOCX_LG_ALIGN(6));
  TT_CHECK(q != NULL && ((uintptr_t)q & 63) == 0 && nallocx(100, MALLOCX_LG_ALIGN(6)) == sallocx(q, 0));
  q = rallocx(q, 10, 0);
  TT_CHECK(q != NULL);
  sdallocx(q, 10, 0);
  len = sizeof(bound);
  TT_CHECK(mallctl("thread.arena", NULL, NULL, &arena, sizeof(arena)) == 0);
  TT_CHECK(mallctl("thread.arena", &bound, &len, NULL, 0) == 0 && bound == arena);
}

static void mallctl_basics(void) {
  const char *version;
  size_t len = sizeof(version);
  TT_CHECK(mallctl("version", &version, &len, NULL, 0) == 0 && version[0] != '\0');
  void *held = mallocx(50000, 0); /* so stats.allocated is not 0 */
  uint64_t epoch = 1;
  len = sizeof(epoch);
  TT_CHECK(mallctl("epoch", &epoch, &len, &epoch, len) == 0 && epoch >= 1);
  size_t allocated, mib[4], miblen = 4;
  len = sizeof(allocated);
  TT_CHECK(mallctlnametomib("stats.allocated", mib, &miblen) == 0 && miblen == 2);
  TT_CHECK(mallctlbymib(mib, miblen, &allocated, &len, NULL, 0) == 0 && allocated >= 50000);
  dallocx(held, 0);
  TT_CHECK(mallctl("arena." "4096" ".purge", NULL, NULL, NULL, 0) == 0);
  TT_CHECK(mallctl("thread.tcache.flush", NULL, NULL, NULL, 0) == 0);
  uint64_t a, d;
  len = sizeof(a);
  TT_CHECK(mallctl("thread.allocated", &a, &len, NULL, 0) == 0 && a > 0);
  TT_CHECK(mallctl("thread.deallocated", &d, &len, NULL, 0) == 0 && d > 0);
  bool tcache;
  len = sizeof(tcache);
  TT_CHECK(mallctl("opt.tcache", &tcache, &len, NULL, 0) == 0);
  TT_CHECK(mallctl("no.such.thing", NULL, NULL, NULL, 0) == ENOENT);
  size_t printed = 0;
  malloc_stats_print(count_cb, &printed, "J");
  TT_CHECK(printed > 100);
}

static bool read_bool(const char *name) {
  bool v = false;
  size_t len = sizeof(v);
  TT_CHECKF(mallctl(name, &v, &len, NULL, 0) == 0, "%s", name);
  return v;
}

/* Names programs tuned for jemalloc use: config.*, background_thread, arena.<i>.dss,
 * opt.percpu_arena, explicit caches. */
static void jemalloc_habits(void) {
  TT_CHECK(read_bool("config.stats") && read_bool("config.prof") && read_bool("config.fill"));
  TT_CHECK(!read_bool("config.prof_libgcc") && !read_bool("config.prof_libunwind"));
  (void)read_bool("config.debug");
  /* thread.allocatedp: a live counter, current at the cache's slow paths; a large block
   * (outside the cache) shows at once, and it never runs ahead of thread.allocated. */
  uint64_t *ap = NULL, *dp = NULL;
  size_t plen = sizeof(ap);
  TT_CHECK(mallctl("thread.allocatedp", &ap, &plen, NULL, 0) == 0 && ap != NULL);
  TT_CHECK(mallctl("thread.deallocatedp", &dp, &plen, NULL, 0) == 0 && dp != NULL);
  uint64_t before = *ap, dbefore = *dp;
  void *big = malloc(1 << 20);
  TT_CHECK(big != NULL && *ap >= before + (1 << 20));
  free(big);
  TT_CHECK(*dp >= dbefore + (1 << 20));
  uint64_t exact = 0;
  size_t elen = sizeof(exact);
  TT_CHECK(mallctl("thread.allocated", &exact, &elen, NULL, 0) == 0 && *ap <= exact);
  /* Right after a read, the pointed-at counters equal thread.allocated and
   * thread.deallocated (jemalloc's own test of them), with blocks cached meanwhile. */
  void *small[8];
  for (int i = 0; i < 8; i++) TT_CHECK((small[i] = malloc(48)) != NULL);
  for (int i = 0; i < 4; i++) free(small[i]);
  uint64_t dexact = 0;
  TT_CHECK(mallctl("thread.allocated", &exact, &elen, NULL, 0) == 0);
  TT_CHECK(mallctl("thread.deallocated", &dexact, &elen, NULL, 0) == 0);
  TT_CHECKF(*ap == exact && *dp == dexact, "allocatedp %llu / %llu, deallocatedp %llu / %llu",
            (unsigned long long)*ap, (unsigned long long)exact, (unsigned long long)*dp, (unsigned long long)dexact);
  for (int i = 4; i < 8; i++) free(small[i]);
  uint64_t *ap2 = NULL;
  TT_CHECK(mallctl("thread.allocatedp", &ap2, &plen, NULL, 0) == 0 && ap2 == ap);
  TT_CHECK(mallctl("thread.deallocated", &dexact, &elen, NULL, 0) == 0 && *dp == dexact);
  const char *s = NULL;
  size_t len = sizeof(s);
  TT_CHECK(mallctl("opt.percpu_arena", &s, &len, NULL, 0) == 0 && strcmp(s, "disabled") == 0);
  TT_CHECK(mallctl("arena.0.dss", &s, &len, NULL, 0) == 0 && strcmp(s, "disabled") == 0);
  const char *dss = "disabled";
  TT_CHECK(mallctl("arena.0.dss", NULL, NULL, &dss, sizeof(dss)) == 0);
  dss = "primary";
  TT_CHECK(mallctl("arena.0.dss", NULL, NULL, &dss, sizeof(dss)) == EFAULT);
  /* background_thread: starts, reads back, stops */
  bool on = true, off = false;
  TT_CHECK(mallctl("background_thread", NULL, NULL, &on, sizeof(on)) == 0);
  TT_CHECK(read_bool("background_thread"));
  TT_CHECK(mallctl("background_thread", NULL, NULL, &off, sizeof(off)) == 0);
  TT_CHECK(!read_bool("background_thread"));
  TT_CHECK(mallctl("background_thread", NULL, NULL, &on, sizeof(on)) == 0 && read_bool("background_thread"));
  TT_CHECK(mallctl("background_thread", NULL, NULL, &off, sizeof(off)) == 0);
  /* explicit caches: an identifier MALLOCX_TCACHE accepts; flush, destroy, then unknown */
  unsigned tc, tc2;
  len = sizeof(tc);
  TT_CHECK(mallctl("tcache.create", &tc, &len, NULL, 0) == 0);
  TT_CHECK(mallctl("tcache.create", &tc2, &len, NULL, 0) == 0 && tc2 != tc);
  void *p = mallocx(100, MALLOCX_TCACHE(tc));
  TT_CHECK(p != NULL && sallocx(p, 0) >= 100);
  dallocx(p, MALLOCX_TCACHE(tc));
  TT_CHECK(mallctl("tcache.flush", NULL, NULL, &tc, sizeof(tc)) == 0);
  TT_CHECK(mallctl("tcache.destroy", NULL, NULL, &tc, sizeof(tc)) == 0);
  TT_CHECK(mallctl("tcache.flush", NULL, NULL, &tc, sizeof(tc)) == EFAULT);
  TT_CHECK(mallctl("tcache.destroy", NULL, NULL, &tc2, sizeof(tc2)) == 0);
  unsigned peak;
  len = sizeof(peak);
  TT_CHECK(mallctl("arenas.nthreads_peak", &peak, &len, NULL, 0) == 0 && peak >= 1);
}

int main(void) {
  jemalloc_habits();
  arenas_and_flags();
  mallctl_basics();
  printf("ctl.jemalloc_api: passed\n");
  return 0;
}
