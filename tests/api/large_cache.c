/* SPDX-License-Identifier: MIT */
/*
 * The threads' caches of large blocks (src/large_cache.h), one case per process:
 *   reuse    a freed 100 kB block serves the next request of its class, as the same
 *            block; calloc clears a cached block; sized frees take the request's size
 *   fit      with none of its class cached, a request takes the smallest cached block of
 *            up to twice its size (calloc clears all of it), never a bigger one
 *   fit_realloc  such a block resized by realloc frees with its new size
 *   bounded  a thread holds at most 1 MiB of them, the rest reach their arena at once
 *   exit     a thread's cached blocks go back to their arena when it exits
 *   gc       a class nothing is taken from gives its blocks back while others are used
 *   aligned  a request aligned beyond a page takes a cached block at such an address,
 *            never one that is not
 *   cycling  a block next to free memory goes to its arena, but once a request of its
 *            class found none cached, the next one freed waits in the cache
 *   realloc  a block realloc moves takes no cached block (it belongs where its arena
 *            places it, with room to grow)
 *   off      tcache_large_max:0 (the driver sets it): no block waits, sizes whole pages
 */
#include "tt_ctl.h"

#include <pthread.h>
#include <stdint.h>
#include <malloc.h>

/* free_sized, found at run time (the test runs linked and preloaded). */
static void sized_free(void *p, size_t size) {
  static void (*fs)(void *, size_t);
  if (fs == NULL) fs = (void (*)(void *, size_t))dlsym(RTLD_DEFAULT, "free_sized");
  TT_CHECK(fs != NULL);
  fs(p, size);
}

#define KIB ((size_t)1 << 10)

/* Blocks of usable size u that the arenas count as allocated (cached ones included). */
static size_t arena_blocks(size_t u) {
  tt_stats_refresh();
  return tt_ctl_size("stats.arenas.4096.lextents.%u.curlextents", tt_lextent_of(u));
}

static void test_reuse(void) {
  unsigned char *p = malloc(100000);
  TT_CHECK(p != NULL);
  size_t u = malloc_usable_size(p);
  TT_CHECKF(u == 112 * KIB, "100000 bytes: usable %zu, want the 112 KiB class", u);
  memset(p, 0xAA, u);
  free(p);
  unsigned char *q = malloc(110000); /* the same class */
  TT_CHECKF(q == p, "the freed block serves the next request of its class: %p, then %p", (void *)p, (void *)q);
  free(q);
  unsigned char *z = calloc(1, 100000);
  TT_CHECK(z == p);
  for (size_t i = 0; i < 100000; i++) TT_CHECKF(z[i] == 0, "calloc of a cached block: byte %zu is %#x", i, z[i]);
  sized_free(z, 100000);
  void *r = malloc(100000);
  TT_CHECK(r == p);
  free(r);
}

/* One of n blocks of `size` bytes allocated in a row, freed into the thread's cache (a
 * block next to free memory goes to its arena instead: the others stay live around it).
 * The rest stay allocated in blocks[]. */
static void *cached_block(void **blocks, int n, size_t size) {
  for (int i = 0; i < n; i++) blocks[i] = malloc(size);
  for (int i = 1; i < n - 1; i++) {
    size_t before = arena_blocks(size);
    free(blocks[i]);
    if (arena_blocks(size) == before) {
      void *cached = blocks[i];
      blocks[i] = NULL;
      return cached;
    }
    blocks[i] = malloc(size); /* it went to the arena: allocate it again, try the next */
  }
  TT_CHECKF(0, "no block of %zu bytes stayed in the thread's cache", size);
  return NULL;
}

static void test_fit(void) {
  enum { N = 6 };
  void *live64[N], *live96[N];
  unsigned char *big = cached_block(live64, N, 64 * KIB);
  memset(big, 0xAA, 64 * KIB);
  TT_CHECK(malloc(64 * KIB) == big);
  free(big);
  void *bigger = cached_block(live96, N, 96 * KIB);
  unsigned char *p = malloc(40000); /* the 40 KiB class: none cached */
  TT_CHECKF(p == big, "40000 bytes with blocks of 64 and 96 KiB cached: %p, want the 64 KiB one %p", (void *)p,
            (void *)big);
  TT_CHECKF(malloc_usable_size(p) == 64 * KIB, "usable %zu, want the cached block's 64 KiB", malloc_usable_size(p));
  free(p);
  unsigned char *z = calloc(1, 36 * KIB);
  TT_CHECK(z == big);
  for (size_t i = 0; i < 64 * KIB; i++) TT_CHECKF(z[i] == 0, "calloc of a bigger cached block: byte %zu is %#x", i, z[i]);
  void *q = malloc(40000); /* 96 KiB is more than twice 40 KiB: from the arena */
  TT_CHECKF(q != bigger && malloc_usable_size(q) == 40 * KIB, "a 40 KiB request took a block of %zu bytes",
            malloc_usable_size(q));
  free(q);
  free(z);
  TT_CHECK(malloc(96 * KIB) == bigger);
  free(bigger);
  for (int i = 0; i < N; i++) {
    free(live64[i]);
    free(live96[i]);
  }
}

/* A block serving a smaller request and then resized by realloc has the new size's
 * class: a sized free with the new size passes. */
static void test_fit_realloc(void) {
  enum { N = 6 };
  void *live[N];
  void *big = cached_block(live, N, 64 * KIB);
  void *p = malloc(40000);
  TT_CHECKF(p == big && malloc_usable_size(p) == 64 * KIB, "40000 bytes: usable %zu, want the cached 64 KiB block",
            malloc_usable_size(p));
  void *q = realloc(p, 45000); /* the 48 KiB class */
  TT_CHECK(q != NULL);
  TT_CHECKF(malloc_usable_size(q) == 48 * KIB, "realloc to 45000 bytes: usable %zu", malloc_usable_size(q));
  sized_free(q, 45000);
  for (int i = 0; i < N; i++) free(live[i]);
}

static void test_bounded(void) {
  enum { N = 40 };
  void *blocks[N];
  size_t before = arena_blocks(256 * KIB);
  for (int i = 0; i < N; i++) blocks[i] = malloc(256 * KIB);
  TT_CHECK(arena_blocks(256 * KIB) == before + N);
  for (int i = 0; i < N; i++) free(blocks[i]);
  size_t left = arena_blocks(256 * KIB) - before;
  TT_CHECKF(left <= 4, "40 blocks of 256 KiB freed: %zu still wait in the thread's cache", left);
  for (int i = 0; i < N; i++) blocks[i] = malloc(40 * KIB);
  for (int i = 0; i < N; i++) free(blocks[i]);
  tt_stats_refresh();
  size_t cached = tt_ctl_size("stats.arenas.%u.tcache_bytes", 4096);
  TT_CHECKF(cached <= 2 * 1024 * KIB, "thread caches hold %zu bytes", cached);
}

static void *alloc_and_free_in_thread(void *arg) {
  (void)arg;
  void *blocks[10];
  for (int i = 0; i < 10; i++) blocks[i] = malloc(64 * KIB);
  for (int i = 0; i < 10; i++) free(blocks[i]);
  return NULL;
}

static void test_exit(void) {
  size_t before = arena_blocks(64 * KIB);
  pthread_t t;
  TT_CHECK(pthread_create(&t, NULL, alloc_and_free_in_thread, NULL) == 0);
  TT_CHECK(pthread_join(t, NULL) == 0);
  TT_CHECKF(arena_blocks(64 * KIB) == before, "an exited thread's cached blocks: %zu still allocated",
            arena_blocks(64 * KIB) - before);
}

static void test_gc(void) {
  void *blocks[8];
  size_t before = arena_blocks(40 * KIB);
  for (int i = 0; i < 8; i++) blocks[i] = malloc(40 * KIB);
  for (int i = 0; i < 8; i++) free(blocks[i]);
  TT_CHECKF(arena_blocks(40 * KIB) > before, "the 40 KiB blocks should wait in the cache first");
  for (int i = 0; i < 5000; i++) free(malloc(64 * KIB)); /* another class, busy */
  TT_CHECKF(arena_blocks(40 * KIB) == before, "an idle class's blocks: %zu still cached",
            arena_blocks(40 * KIB) - before);
}

/* A cached block of 40 KiB at a 64 KiB-aligned address serves the next 64 KiB-aligned
 * request of its class (from aligned_alloc and posix_memalign alike); a cached block at
 * an address not so aligned does not. */
static void test_aligned(void) {
  enum { N = 8 };
  void *live[N];
  size_t before = arena_blocks(40 * KIB);
  for (int i = 0; i < N; i++) TT_CHECK((live[i] = aligned_alloc(64 * KIB, 40000)) != NULL);
  void *freed = NULL;
  for (int i = 1; i < N - 1 && freed == NULL; i++) {
    free(live[i]);
    if (arena_blocks(40 * KIB) == before + N) freed = live[i]; /* it waits in the cache */
    else TT_CHECK((live[i] = aligned_alloc(64 * KIB, 40000)) != NULL);
  }
  TT_CHECKF(freed != NULL, "no 64 KiB-aligned block of 40 KiB stayed in the thread's cache");
  void *p = NULL;
  TT_CHECK(posix_memalign(&p, 64 * KIB, 30000) == 0);
  TT_CHECKF(p == freed, "a 64 KiB-aligned request: %p, want the cached aligned block %p", p, freed);
  TT_CHECKF(arena_blocks(40 * KIB) == before + N, "the aligned request went to the arena");
  free(p);
  /* Now a cached block that is not 64 KiB-aligned, and no aligned one. */
  void *plain[N];
  void *unaligned = NULL;
  for (int i = 0; i < N; i++) plain[i] = malloc(40000);
  for (int i = 1; i < N - 1 && unaligned == NULL; i++) {
    if ((uintptr_t)plain[i] % (64 * KIB) == 0) continue;
    size_t count = arena_blocks(40 * KIB);
    free(plain[i]);
    if (arena_blocks(40 * KIB) == count) unaligned = plain[i];
    else plain[i] = malloc(40000);
    if (unaligned != NULL) plain[i] = NULL;
  }
  TT_CHECKF(unaligned != NULL, "no unaligned block of 40 KiB stayed in the thread's cache");
  void *q = aligned_alloc(64 * KIB, 40 * KIB); /* the aligned one cached above first */
  void *r = aligned_alloc(64 * KIB, 40 * KIB);
  TT_CHECK(q != NULL && r != NULL);
  TT_CHECKF((uintptr_t)q % (64 * KIB) == 0 && (uintptr_t)r % (64 * KIB) == 0, "%p, %p: not 64 KiB-aligned", q, r);
  TT_CHECKF(q != unaligned && r != unaligned, "an aligned request took the unaligned cached block %p", unaligned);
  TT_CHECK(malloc(40000) == unaligned); /* still cached, for requests without alignment */
  free(unaligned);
  free(q);
  free(r);
  for (int i = 0; i < N; i++) {
    free(live[i] == freed ? NULL : live[i]);
    free(plain[i]);
  }
}

/* A block carved from free memory sits next to what is left of it, and freed, it goes
 * back to merge with it while its class has blocks cached. But a program freeing and
 * asking for one class again and again would then send every block of it through its
 * arena: once a request of the class found none cached, the next block of it freed
 * stays even next to free memory. */
static void *cycle_in_thread(void *arg) {
  (void)arg;
  char *big = malloc(8 << 20); /* above the cache's sizes: to the arena, freed */
  TT_CHECK(big != NULL);
  memset(big, 1, 8 << 20); /* resident free memory once freed */
  free(big);
  size_t before = arena_blocks(224 * KIB);
  void *a = malloc(200 * KIB), *b = malloc(200 * KIB); /* carved from it, in a row */
  TT_CHECK(a != NULL && b != NULL);
  TT_CHECK(arena_blocks(224 * KIB) == before + 2);
  free(a); /* b above it: cached */
  TT_CHECKF(arena_blocks(224 * KIB) == before + 2, "a block between live ones should wait in the cache");
  free(b); /* the free memory above it, and a block of its class cached: to the arena */
  TT_CHECKF(arena_blocks(224 * KIB) == before + 1, "a block next to free memory should go back to its arena");
  for (int i = 0; i < 1000; i++) {
    void *r = malloc(200 * KIB);
    TT_CHECKF(r == a, "step %d: %p, want the cached block %p", i, r, a);
    free(r); /* next to free memory now, but its class is in use: cached */
    TT_CHECKF(arena_blocks(224 * KIB) == before + 1, "step %d: the cycling class's block went to its arena", i);
  }
  return NULL;
}

static void test_cycling(void) {
  /* The free memory next to the blocks must stay resident while the test runs: with a
   * decay of a few milliseconds it is released (not free resident memory any more) at
   * any point, and the rule under test does not apply. */
  ssize_t decay_ms = 0;
  size_t len = sizeof decay_ms;
  TT_CHECK(tt_ctl("opt.dirty_decay_ms", &decay_ms, &len, NULL, 0) == 0);
  if (decay_ms >= 0 && decay_ms < 1000) {
    printf("cycling: skipped (dirty_decay_ms:%zd releases the free memory it needs)\n", decay_ms);
    return;
  }
  pthread_t t; /* a new thread: a cache with nothing in it yet */
  TT_CHECK(pthread_create(&t, NULL, cycle_in_thread, NULL) == 0);
  TT_CHECK(pthread_join(t, NULL) == 0);
}

static void test_realloc(void) {
  enum { N = 6 };
  void *live[N];
  void *p = malloc(40000), *above = malloc(40000); /* p cannot grow in place */
  TT_CHECK(p != NULL && above != NULL);
  void *cached = cached_block(live, N, 96 * KIB);
  void *q = realloc(p, 90000); /* the 96 KiB class: moves */
  TT_CHECK(q != NULL);
  TT_CHECKF(q != cached, "realloc's new block %p is the cached one", q);
  TT_CHECKF(malloc(90000) == cached, "the cached block should still wait for a malloc");
  free(cached);
  free(q);
  free(above);
  for (int i = 0; i < N; i++) free(live[i]);
}

static void test_off(void) {
  void *p = malloc(33000);
  TT_CHECK(p != NULL);
  TT_CHECKF(malloc_usable_size(p) == 36 * KIB, "tcache_large_max:0: 33000 bytes take %zu", malloc_usable_size(p));
  size_t before = arena_blocks(36 * KIB);
  free(p);
  TT_CHECKF(arena_blocks(36 * KIB) == before - 1, "tcache_large_max:0: a freed block waits nowhere");
}

int main(int argc, char **argv) {
  tt_require_tessera();
  TT_CHECKF(argc == 2, "usage: large_cache reuse|fit|fit_realloc|bounded|exit|gc|aligned|cycling|realloc|off");
  if (strcmp(argv[1], "reuse") == 0) test_reuse();
  else if (strcmp(argv[1], "fit") == 0) test_fit();
  else if (strcmp(argv[1], "fit_realloc") == 0) test_fit_realloc();
  else if (strcmp(argv[1], "bounded") == 0) test_bounded();
  else if (strcmp(argv[1], "exit") == 0) test_exit();
  else if (strcmp(argv[1], "gc") == 0) test_gc();
  else if (strcmp(argv[1], "aligned") == 0) test_aligned();
  else if (strcmp(argv[1], "cycling") == 0) test_cycling();
  else if (strcmp(argv[1], "realloc") == 0) test_realloc();
  else if (strcmp(argv[1], "off") == 0) test_off();
  else TT_CHECKF(0, "unknown case %s", argv[1]);
  printf("large_cache %s: ok\n", argv[1]);
  return 0;
}
