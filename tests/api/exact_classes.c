/* SPDX-License-Identifier: MIT */
/*
 * api.exact_classes.<case>: the size classes tessera makes at run time for one exact size
 * that dominates a static class (src/exact_class.h), one process per case:
 *
 *   vote         mostly 1032-byte requests make class 1040; requests of random sizes in
 *                another class, or a dominant size wasting too little, make none
 *   sized_free   free_sized accepts, across the creation, blocks of the static class
 *                and of the exact one for every size of their range
 *   aligned      aligned requests in an exact class's range are aligned (4368: not a
 *                multiple of 32, 64, ...), and their usable sizes agree with the blocks
 *   realloc      realloc within and across an exact class keeps the contents
 *   off          exact_classes:false (set by the test's environment) makes none
 *   threads      threads allocate, check and free (sized) sizes of the range while the
 *                class is made
 */
#include "tt.h"

#include <pthread.h>
#include <malloc.h>

/* tessera_ctl, found at run time (the test runs linked and preloaded). */
static int ctl(const char *name, void *oldp, size_t *oldlenp) {
  int (*f)(const char *, void *, size_t *, void *, size_t) =
      (int (*)(const char *, void *, size_t *, void *, size_t))dlsym(RTLD_DEFAULT, "tessera_ctl");
  TT_CHECK(f != NULL);
  return f(name, oldp, oldlenp, NULL, 0);
}
#define LG_ALIGN(a) ((int)__builtin_ctzll((unsigned long long)(a))) /* mallocx's flags */

static unsigned nbins(void) {
  unsigned n = 0;
  size_t len = sizeof(n);
  TT_CHECK(ctl("arenas.nbins", &n, &len) == 0);
  return n;
}

static size_t bin_size(unsigned j) {
  char name[64];
  size_t size = 0, len = sizeof(size);
  snprintf(name, sizeof(name), "arenas.bin.%u.size", j);
  TT_CHECK(ctl(name, &size, &len) == 0);
  return size;
}

#define NSTATIC 44 /* the static classes (arenas.nbins without exact classes) */

/* Whether an exact class of size bytes exists. */
static int has_exact_class(size_t size) {
  for (unsigned j = NSTATIC; j < nbins(); j++)
    if (bin_size(j) == size) return 1;
  return 0;
}

/* n blocks of size bytes each, kept (so that the cache refills over and over). */
static void **allocate_many(size_t n, size_t size) {
  void **v = malloc(n * sizeof(void *));
  TT_CHECK(v != NULL);
  for (size_t i = 0; i < n; i++) {
    v[i] = malloc(size);
    TT_CHECK(v[i] != NULL);
    memset(v[i], (int)i, size);
  }
  return v;
}

static void free_many(void **v, size_t n) {
  for (size_t i = 0; i < n; i++) free(v[i]);
  free(v);
}

static void case_vote(void) {
  TT_CHECKF(nbins() == NSTATIC, "no exact class at start: %u bins", nbins());
  void *first = malloc(1032);
  TT_CHECK(malloc_usable_size(first) == 1152);
  free(first);
  /* Random sizes over class 1280's range (1153 .. 1280): no size dominates. */
  tt_rng r;
  tt_rng_seed(&r, 42);
  void **v = malloc(4000 * sizeof(void *));
  TT_CHECK(v != NULL);
  for (int i = 0; i < 4000; i++) v[i] = malloc(1153 + tt_rng_below(&r, 128));
  TT_CHECKF(nbins() == NSTATIC, "random sizes made a class: %u bins", nbins());
  for (int i = 0; i < 4000; i++) free(v[i]);
  /* One size that wastes 2% of its class (1264 in 1280): not worth a class. */
  free_many(allocate_many(4000, 1264), 4000);
  TT_CHECKF(nbins() == NSTATIC, "a 2%% waste made a class: %u bins", nbins());
  /* 1032 bytes in four requests of five, the rest random in the class: class 1040. */
  for (int i = 0; i < 4000; i++) v[i] = malloc(tt_rng_below(&r, 5) ? 1032 : 1025 + tt_rng_below(&r, 128));
  TT_CHECKF(has_exact_class(1040), "no class 1040 after 4000 requests mostly of 1032 bytes (%u bins)", nbins());
  TT_CHECK(bin_size(NSTATIC) == 1040 && nbins() == NSTATIC + 1);
  for (int i = 0; i < 4000; i++) free(v[i]);
  free(v);
  /* Every size of the range gets it, the ones above still get the static class. */
  for (size_t s = 1025; s <= 1152; s++) {
    void *p = malloc(s);
    size_t u = malloc_usable_size(p);
    TT_CHECKF(u == (s <= 1040 ? 1040 : 1152), "malloc(%zu): usable %zu", s, u);
    free(p);
  }
  void *p = malloc(1024);
  TT_CHECK(malloc_usable_size(p) == 1024);
  free(p);
  /* The jemalloc-compatible view: arenas.bin.44 is the new class, with its slab. */
  uint32_t nregs = 0;
  size_t len = sizeof(nregs);
  TT_CHECK(ctl("arenas.bin.44.nregs", &nregs, &len) == 0 && nregs >= 1);
  TT_CHECK(ctl("arenas.bin.45.size", NULL, NULL) == ENOENT);
}

/* The sized free of a C23 libc may be missing: found at run time. */
static void free_sized_call(void *p, size_t size) {
  void (*f)(void *, size_t) = (void (*)(void *, size_t))dlsym(RTLD_DEFAULT, "free_sized");
  TT_CHECK(f != NULL);
  f(p, size);
}

static void case_sized_free(void) {
  /* Blocks of class 1152 allocated before the class 1040 exists. */
  void *before[64];
  for (int i = 0; i < 64; i++) before[i] = malloc(1025 + (size_t)i);
  TT_CHECK(malloc_usable_size(before[0]) == 1152);
  free_many(allocate_many(4000, 1032), 4000);
  TT_CHECK(has_exact_class(1040));
  /* Freed with their own size, which now maps to class 1040: accepted. */
  for (int i = 0; i < 64; i++) free_sized_call(before[i], 1025 + (size_t)i);
  /* Blocks of the exact class, freed with any size of its range. */
  for (size_t s = 1025; s <= 1040; s++) {
    void *p = malloc(1032);
    TT_CHECK(malloc_usable_size(p) == 1040);
    free_sized_call(p, s);
  }
  /* And blocks of the static class above it, with sizes up to 1152. */
  for (size_t s = 1041; s <= 1152; s++) free_sized_call(malloc(s), s);
  /* A wrong size still aborts: misuse.free_sized_exact_class_other_size. */
}

static void check_aligned(size_t align, size_t size) {
  void *p = NULL;
  TT_CHECK(posix_memalign(&p, align, size) == 0);
  TT_CHECKF(tt_is_aligned(p, align), "posix_memalign(%zu, %zu) = %p", align, size, p);
  size_t u = malloc_usable_size(p);
  TT_CHECKF(u >= size, "posix_memalign(%zu, %zu): usable %zu", align, size, u);
  memset(p, 0x5a, u);
  void (*f)(void *, size_t, size_t) = (void (*)(void *, size_t, size_t))dlsym(RTLD_DEFAULT, "free_aligned_sized");
  TT_CHECK(f != NULL);
  f(p, align, size);
  void *q = aligned_alloc(align, size);
  TT_CHECKF(q != NULL && tt_is_aligned(q, align), "aligned_alloc(%zu, %zu) = %p", align, size, q);
  f(q, align, size);
  void *m = memalign(align, size);
  TT_CHECKF(m != NULL && tt_is_aligned(m, align), "memalign(%zu, %zu) = %p", align, size, m);
  free(m);
}

static void case_aligned(void) {
  free_many(allocate_many(3000, 4368), 3000);
  TT_CHECKF(has_exact_class(4368), "no class 4368 (%u bins)", nbins());
  void *p4300 = malloc(4300);
  TT_CHECK(malloc_usable_size(p4300) == 4368);
  free(p4300);
  for (size_t align = 16; align <= 4096; align *= 2)
    for (size_t size = 4097; size <= 4368; size += 15) check_aligned(align, size);
  /* jemalloc's nallocx agrees with the blocks mallocx hands out (when the library
   * exports jemalloc's API). */
  void *(*mallocx_fn)(size_t, int) = (void *(*)(size_t, int))dlsym(RTLD_DEFAULT, "mallocx");
  size_t (*nallocx_fn)(size_t, int) = (size_t(*)(size_t, int))dlsym(RTLD_DEFAULT, "nallocx");
  if (mallocx_fn == NULL || nallocx_fn == NULL) return;
  for (size_t align = 32; align <= 4096; align *= 2) {
    void *p = mallocx_fn(4352, LG_ALIGN(align));
    TT_CHECKF(p != NULL && tt_is_aligned(p, align), "mallocx(4352, align %zu) = %p", align, p);
    TT_CHECK(nallocx_fn(4352, LG_ALIGN(align)) == malloc_usable_size(p));
    free(p);
  }
  TT_CHECK(nallocx_fn(4352, 0) == 4368);
}

static void case_realloc(void) {
  unsigned char *old = malloc(1032); /* class 1152 */
  for (int i = 0; i < 1032; i++) old[i] = (unsigned char)i;
  free_many(allocate_many(4000, 1032), 4000);
  TT_CHECK(has_exact_class(1040));
  unsigned char *p = realloc(old, 1030); /* moves to class 1040, or stays: its bytes kept */
  TT_CHECK(p != NULL && malloc_usable_size(p) >= 1030);
  for (int i = 0; i < 1030; i++) TT_CHECKF(p[i] == (unsigned char)i, "byte %d", i);
  unsigned char *q = realloc(p, 1036); /* within class 1040: in place */
  TT_CHECK(q == p || malloc_usable_size(p) != 1040);
  q = realloc(q, 1100); /* beyond it: class 1152 */
  TT_CHECK(q != NULL && malloc_usable_size(q) == 1152);
  for (int i = 0; i < 1030; i++) TT_CHECKF(q[i] == (unsigned char)i, "byte %d after growing", i);
  free(q);
}

static void case_off(void) {
  free_many(allocate_many(4000, 1032), 4000);
  TT_CHECKF(nbins() == NSTATIC, "exact_classes:false made a class: %u bins", nbins());
  void *p = malloc(1032);
  TT_CHECK(malloc_usable_size(p) == 1152);
  free(p);
}

/* threads: each allocates sizes of class 1152's range (mostly 1032: the class gets
 * made meanwhile by whichever thread's vote wins), fills, checks and frees them with
 * free_sized, keeping a window of live blocks so that both classes' blocks cross. */
#define NTHREADS 4
#define WINDOW 512
static void *worker(void *arg) {
  tt_rng r;
  tt_rng_seed(&r, (uint64_t)(uintptr_t)arg);
  void *live[WINDOW] = {0};
  size_t sizes[WINDOW] = {0};
  for (int i = 0; i < 60000; i++) {
    unsigned k = (unsigned)tt_rng_below(&r, WINDOW);
    if (live[k] != NULL) {
      TT_VERIFY(live[k], sizes[k], (uint64_t)(uintptr_t)live[k], "a block of the range");
      free_sized_call(live[k], sizes[k]);
    }
    sizes[k] = tt_rng_below(&r, 4) ? 1032 : 1025 + tt_rng_below(&r, 128);
    live[k] = malloc(sizes[k]);
    TT_CHECK(live[k] != NULL && malloc_usable_size(live[k]) >= sizes[k]);
    tt_fill(live[k], sizes[k], (uint64_t)(uintptr_t)live[k]);
  }
  for (unsigned k = 0; k < WINDOW; k++) {
    if (live[k] == NULL) continue;
    TT_VERIFY(live[k], sizes[k], (uint64_t)(uintptr_t)live[k], "a block of the range at the end");
    free_sized_call(live[k], sizes[k]);
  }
  return NULL;
}

/* A thread that frees blocks of the class without having allocated any (a consumer). */
static void *consumer(void *arg) {
  void **v = arg;
  for (int i = 0; i < 2000; i++) {
    TT_VERIFY(v[i], 1032, (uint64_t)i, "a block handed to the consumer");
    free_sized_call(v[i], 1032);
  }
  return NULL;
}

static void case_threads(void) {
  tt_watchdog(120, "exact_classes threads");
  pthread_t t[NTHREADS];
  for (uintptr_t i = 0; i < NTHREADS; i++) TT_CHECK(pthread_create(&t[i], NULL, worker, (void *)(i + 1)) == 0);
  for (int i = 0; i < NTHREADS; i++) TT_CHECK(pthread_join(t[i], NULL) == 0);
  TT_CHECKF(has_exact_class(1040), "no class 1040 (%u bins)", nbins());
  void **v = malloc(2000 * sizeof(void *));
  TT_CHECK(v != NULL);
  for (int i = 0; i < 2000; i++) {
    v[i] = malloc(1032);
    TT_CHECK(v[i] != NULL && malloc_usable_size(v[i]) == 1040);
    tt_fill(v[i], 1032, (uint64_t)i);
  }
  pthread_t c;
  TT_CHECK(pthread_create(&c, NULL, consumer, v) == 0 && pthread_join(c, NULL) == 0);
  free(v);
}

int main(int argc, char **argv) {
  tt_require_tessera();
  const char *c = argc > 1 ? argv[1] : "";
  if (strcmp(c, "vote") == 0) case_vote();
  else if (strcmp(c, "sized_free") == 0) case_sized_free();
  else if (strcmp(c, "aligned") == 0) case_aligned();
  else if (strcmp(c, "realloc") == 0) case_realloc();
  else if (strcmp(c, "off") == 0) case_off();
  else if (strcmp(c, "threads") == 0) case_threads();
  else TT_FAIL("unknown case '%s'", c);
  printf("exact_classes.%s: ok\n", c);
  return 0;
}
