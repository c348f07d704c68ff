/* SPDX-License-Identifier: MIT */
/*
 * limits_test <mode>: the OOM callback (tessera_set_oom_callback), the soft limit (option
 * limit) and the memory reserve (option reserve). Each mode runs with the option its
 * test sets in TESSERA_CONF (tests/limits/CMakeLists.txt).
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

int main(int argc, char **argv) {
  TT_CHECKF(argc == 2, "usage: limits_test callback_retry|limit_enomem|limit_purges_first|reserve");
  if (strcmp(argv[1], "callback_retry") == 0) callback_retry();
  else if (strcmp(argv[1], "limit_enomem") == 0) limit_enomem();
  else if (strcmp(argv[1], "limit_purges_first") == 0) limit_purges_first();
  else if (strcmp(argv[1], "reserve") == 0) reserve();
  else TT_CHECKF(0, "unknown mode %s", argv[1]);
  printf("limits %s: ok (%d callback calls)\n", argv[1], ncalls);
  return 0;
}
