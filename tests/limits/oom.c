/* SPDX-License-Identifier: MIT */
/*
 * limits_test <mode>: the OOM callback (tessera_set_oom_callback), the soft limit (option
 * limit) and the memory reserve (option reserve), what a refused mapping leaves behind and
 * what purging a huge untouched block costs.
 * Each mode runs with the option its test sets in TESSERA_CONF (tests/limits/CMakeLists.txt).
 */
#include "tt.h"

#include <errno.h>
#include <sys/resource.h>

#include "tessera.h"

#define MiB ((size_t)1 << 20)
enum { NCACHE = 48, NMAX = 4096 };

static void *cache[NCACHE]; /* a cache the program can drop when memory runs out */
/* volatile: the compiler assumes malloc touches no global of the program */
static volatile int ncalls, last_reason;
static volatile size_t last_request;
static volatile int inside_ok = -1; /* whether the callback's first allocation succeeded (reserve mode) */

static void drop_cache(void *arg, size_t request, int reason) {
  TT_CHECK(arg == (void *)cache);
  ncalls++;
  last_request = request;
  last_reason = reason;
  for (int i = 0; i < NCACHE; i++) {
    free(cache[i]);
    cache[i] = NULL;
  }
}

static void count_only(void *arg, size_t request, int reason) {
  (void)arg;
  ncalls++;
  last_request = request;
  last_reason = reason;
}

/* limit:64m: a 48 MiB cache is held; a 32 MiB block passes the limit, the callback drops
 * the cache and the retry succeeds. */
static void callback_retry(void) {
  tessera_set_oom_callback(drop_cache, cache);
  for (int i = 0; i < NCACHE; i++) TT_CHECK((cache[i] = malloc(MiB)) != NULL);
  void *p = malloc(32 * MiB);
  TT_CHECKF(p != NULL, "the retry after the callback failed");
  TT_CHECKF(ncalls == 1, "callback called %d times", ncalls);
  TT_CHECK(last_reason == TESSERA_OOM_LIMIT && last_request >= 32 * MiB);
  memset(p, 1, 32 * MiB);
  free(p);
}

/* limit:32m: 1 MiB blocks until NULL: ENOMEM, between 16 and 32 MiB, after the callback. */
static size_t fill(void **blocks, size_t size) {
  size_t n = 0;
  errno = 0;
  while (n < NMAX && (blocks[n] = malloc(size)) != NULL) n++;
  return n;
}

static void limit_enomem(void) {
  static void *blocks[NMAX];
  tessera_set_oom_callback(count_only, NULL);
  size_t n = fill(blocks, MiB);
  TT_CHECKF(n < NMAX && errno == ENOMEM, "got %zu blocks, errno %d", n, errno);
  TT_CHECKF(n >= 16 && n <= 32, "got %zu MiB under a 32 MiB limit", n);
  TT_CHECKF(ncalls >= 1 && last_reason == TESSERA_OOM_LIMIT, "%d calls, reason %d", ncalls, last_reason);
  int before = ncalls;
  void *big = malloc(100 * MiB);
  TT_CHECKF(big == NULL && errno == ENOMEM && ncalls > before, "%p errno %d calls %d -> %d", big, errno, before, ncalls);
  for (size_t i = 0; i < n; i++) free(blocks[i]);
  TT_CHECK((blocks[0] = malloc(8 * MiB)) != NULL); /* freed memory makes room again */
  free(blocks[0]);
}

/* limit:32m: at the limit, every other 1 MiB block freed leaves holes no 8 MiB block
 * fits in; the soft limit purges them (unmaps) first and the 8 MiB block fits, with no
 * callback. */
static void limit_purges_first(void) {
  static void *blocks[NMAX];
  tessera_set_oom_callback(count_only, NULL);
  size_t n = fill(blocks, MiB);
  TT_CHECK(n >= 16 && ncalls >= 1);
  int before = ncalls;
  for (size_t i = 0; i < n; i += 2) free(blocks[i]);
  void *p = malloc(8 * MiB);
  TT_CHECKF(p != NULL, "the freed holes were not given back under the limit");
  TT_CHECKF(ncalls == before, "callback called although purging made room");
  free(p);
  for (size_t i = 1; i < n; i += 2) free(blocks[i]);
}

/* reserve:16m: RLIMIT_AS lowered; when the OS refuses, the reserve is released and the
 * callback itself can allocate 8 MiB. */
static void reserve_cb(void *arg, size_t request, int reason) {
  count_only(arg, request, reason);
  void *inside = malloc(8 * MiB);
  if (inside_ok < 0) inside_ok = inside != NULL;
  if (inside != NULL) memset(inside, 1, 8 * MiB);
  free(inside);
}

static void reserve(void) {
  static void *blocks[NMAX];
  free(malloc(100));
  struct rlimit rl = {200 * MiB, 200 * MiB};
  TT_CHECK(setrlimit(RLIMIT_AS, &rl) == 0);
  tessera_set_oom_callback(reserve_cb, NULL);
  size_t n = fill(blocks, MiB);
  TT_CHECK(n < NMAX && ncalls >= 1 && last_reason == TESSERA_OOM_OS);
  TT_CHECKF(inside_ok == 1, "the callback could not allocate: the reserve was not released");
  for (size_t i = 0; i < n; i++) free(blocks[i]);
}

/* The bytes tessera has mapped from the OS for extents and metadata (stats.mapped). */
static size_t mapped_bytes(void) {
  uint64_t epoch = 1;
  size_t mapped = 0, len = sizeof mapped;
  TT_CHECK(tessera_ctl("epoch", NULL, NULL, &epoch, sizeof epoch) == 0);
  TT_CHECK(tessera_ctl("stats.mapped", &mapped, &len, NULL, 0) == 0);
  return mapped;
}

/* No option: a request the OS refuses (a mapping of 2^62 bytes) leaves the arena's next
 * mapping size where it was: the next growth maps a few MiB, not the refused size (an
 * arena that remembered the refused size as its next one mapped tens of TiB of address
 * space for the following 8 MiB blocks). */
static void refused_mapping(void) {
  static void *blocks[64];
  free(malloc(100));
  errno = 0;
  void *huge = malloc(tt_opaque((size_t)1 << 62));
  TT_CHECKF(huge == NULL && errno == ENOMEM, "malloc(2^62) = %p, errno %d", huge, errno);
  size_t before = mapped_bytes();
  for (int i = 0; i < 64; i++) TT_CHECK((blocks[i] = malloc(8 * MiB)) != NULL);
  size_t grew = mapped_bytes() - before;
  TT_CHECKF(grew <= 4 * 64 * 8 * MiB, "64 blocks of 8 MiB mapped %zu MiB more", grew / MiB);
  for (int i = 0; i < 64; i++) free(blocks[i]);
}

/* No option: a block of 64 GiB (address space the OS grants without reserving it, when
 * it does) freed untouched and purged: the purge's steps write page-map bounds, which
 * must not touch a page-map page every 8 MiB of it (32 MiB of them for this block). */
static void purge_huge(void) {
  size_t size = (size_t)64 << 30;
  char *p = malloc(tt_opaque(size));
  if (p == NULL) {
    printf("limits purge_huge: skipped (the OS refused a 64 GiB mapping)\n");
    exit(0);
  }
  p[0] = 1;
  p[size - 1] = 1;
  long before = tt_peak_rss_kib();
  free(p);
  TT_CHECK(tessera_ctl("arena.4096.purge", NULL, NULL, NULL, 0) == 0);
  long grew = tt_peak_rss_kib() - before;
  TT_CHECKF(grew < 4096, "freeing and purging 64 GiB of untouched pages grew the peak RSS by %ld KiB", grew);
}

int main(int argc, char **argv) {
  TT_CHECKF(argc == 2, "usage: limits_test callback_retry|limit_enomem|limit_purges_first|reserve|refused_mapping|purge_huge");
  if (strcmp(argv[1], "callback_retry") == 0) callback_retry();
  else if (strcmp(argv[1], "limit_enomem") == 0) limit_enomem();
  else if (strcmp(argv[1], "limit_purges_first") == 0) limit_purges_first();
  else if (strcmp(argv[1], "reserve") == 0) reserve();
  else if (strcmp(argv[1], "refused_mapping") == 0) refused_mapping();
  else if (strcmp(argv[1], "purge_huge") == 0) purge_huge();
  else TT_CHECKF(0, "unknown mode %s", argv[1]);
  printf("limits %s: ok (%d callback calls)\n", argv[1], ncalls);
  return 0;
}
