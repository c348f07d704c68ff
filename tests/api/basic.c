/* SPDX-License-Identifier: MIT */
/*
 * api.basic: zero and NULL cases, calloc zeroing (also of reused memory),
 * malloc_usable_size >= request, free_sized/free_aligned_sized, mallinfo2 plausibility,
 * malloc_trim/mallopt/malloc_stats/malloc_info answers, tessera_get_counters.
 */
#include "tt.h"

#include <malloc.h>
#include <stdbool.h>

/* C23 functions that glibc 2.36 does not declare (and may not define: looked up at run
 * time so the same source also builds as a plain binary run under LD_PRELOAD). */
typedef void free_sized_fn(void *, size_t);
typedef void free_aligned_sized_fn(void *, size_t, size_t);

static void test_zero_and_null(void) {
  /* malloc(0) returns distinct, freeable, non-NULL pointers. */
  enum { N = 1000 };
  static void *zeros[N];
  for (int i = 0; i < N; i++) {
    zeros[i] = malloc(tt_opaque(0));
    TT_CHECKF(zeros[i] != NULL, "malloc(0) returned NULL");
    TT_CHECK(tt_is_aligned(zeros[i], 16));
    for (int j = 0; j < i; j += 1 + i / 64)
      TT_CHECKF(zeros[j] != zeros[i], "malloc(0) returned %p twice", zeros[i]);
  }
  for (int i = 0; i < N; i++) free(zeros[i]);

  void *p = calloc(0, 0);
  TT_CHECKF(p != NULL, "calloc(0, 0) returned NULL");
  free(p);
  p = calloc(0, 100);
  TT_CHECK(p != NULL);
  free(p);
  p = calloc(100, 0);
  TT_CHECK(p != NULL);
  free(p);
  p = realloc(NULL, 0);
  TT_CHECKF(p != NULL, "realloc(NULL, 0) returned NULL");
  free(p);
  p = reallocarray(NULL, 0, 10);
  TT_CHECK(p != NULL);
  free(p);

  free(NULL);
  TT_CHECKF(malloc_usable_size(NULL) == 0, "malloc_usable_size(NULL) != 0");

  /* realloc(p, 0): glibc frees p and returns NULL; returning a fresh minimal block is also
   * allowed. Either way the result must be freeable. */
  p = malloc(100);
  void *q = realloc(p, 0);
  free(q);
}

static void test_calloc_zeroes(void) {
  static const size_t sizes[] = {1, 16, 17, 100, 512, 1000, 4096, 10000, 14336, 16385, 65536,
                                 200000, 1u << 20, (2u << 20) + 100, 9u << 20};
  for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
    size_t n = sizes[i];
    /* Dirty memory of this size, free it, then calloc the same size many times: the reused
     * blocks must come back zeroed. Keep a few alive each round so different blocks get
     * reused too. */
    for (int round = 0; round < (n > 100000 ? 8 : 64); round++) {
      void *keep[4];
      for (int k = 0; k < 4; k++) {
        keep[k] = malloc(n);
        TT_CHECK(keep[k] != NULL);
        memset(keep[k], 0xAA, malloc_usable_size(keep[k]));
      }
      for (int k = 0; k < 4; k++) free(keep[k]);
      for (int k = 0; k < 4; k++) {
        unsigned char *c = calloc(1, n);
        TT_CHECK(c != NULL);
        for (size_t b = 0; b < n; b++)
          TT_CHECKF(c[b] == 0, "calloc(1, %zu) (round %d) byte %zu is %#x, not zero", n, round,
                    b, c[b]);
        memset(c, 0xAA, n);
        keep[k] = c;
      }
      for (int k = 0; k < 4; k++) free(keep[k]);
    }
    /* calloc(count, size) with the same product. */
    unsigned char *c = calloc(n, 1);
    TT_CHECK(c != NULL);
    for (size_t b = 0; b < n; b++) TT_CHECK(c[b] == 0);
    free(c);
  }
  /* Element-count form with a larger element. */
  uint64_t *arr = calloc(12345, sizeof(uint64_t));
  TT_CHECK(arr != NULL);
  for (size_t i = 0; i < 12345; i++) TT_CHECK(arr[i] == 0);
  free(arr);
}

/* Minor page faults of the process so far. */
static long page_faults(void) {
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  return ru.ru_minflt;
}

/* A big calloc after a big free: the block reads as zero however its pages were used
 * before (some written, most never touched), and pages that were given back to the OS
 * are not cleared again by writing them: a program that callocs a 64 MiB table, uses a
 * page of it and frees it, in a loop, must not fault in 64 MiB a call. */
static void test_calloc_big_reuse(void) {
  const size_t big = (size_t)64 << 20, page = 4096;
  unsigned char *m = malloc(big);
  TT_CHECK(m != NULL);
  memset(m, 0xAA, (size_t)4 << 20); /* the first 4 MiB written, the rest never touched */
  m[big - 1] = 0xAA;
  free(m);
  unsigned char *c = calloc(1, big);
  TT_CHECK(c != NULL);
  for (size_t b = 0; b < ((size_t)4 << 20); b++) TT_CHECKF(c[b] == 0, "calloc(1, 64 MiB) byte %zu is %#x", b, c[b]);
  for (size_t b = 0; b < big; b += page) TT_CHECKF(c[b] == 0 && c[b + page - 1] == 0, "calloc(1, 64 MiB) page at %zu not zero", b);
  free(c);

  const char *conf = getenv("TESSERA_CONF");
  bool hardened = conf != NULL && strstr(conf, "hardened:true") != NULL; /* clears its blocks itself */
  long before = page_faults();
  for (int round = 0; round < 8; round++) {
    unsigned char *t = calloc(1, big);
    TT_CHECK(t != NULL);
    TT_CHECK(t[big / 2] == 0 && t[(size_t)round * page] == 0);
    t[(size_t)round * page] = 1;
    free(t);
  }
  long faults = page_faults() - before;
  if (!hardened)
    TT_CHECKF(faults < 8 * 1024, "8 rounds of calloc(64 MiB), one page written, free: %ld page faults "
              "(the pages were cleared by writing them)", faults);
}

/* calloc of freed blocks whose previous owners wrote scattered pages (a sparse array of
 * which a few entries were set): resident and never-written pages alternate in short
 * runs, which calloc clears in a few calls, not one a run; every byte must read zero. */
static void test_calloc_scattered_reuse(void) {
  const size_t page = 4096;
  for (size_t kib = 260; kib <= 2048; kib = kib * 3 / 2) {
    size_t n = kib << 10;
    for (size_t stride = 1; stride <= 7; stride += 3) { /* every page, every 4th, every 7th */
      unsigned char *m = malloc(n);
      TT_CHECK(m != NULL);
      for (size_t b = 0; b < n; b += stride * page) m[b + (b / page) % page] = 0x5A;
      m[n - 1] = 0x5A;
      free(m);
      unsigned char *c = calloc(n, 1);
      TT_CHECK(c != NULL);
      size_t nonzero = 0;
      for (size_t b = 0; b < n; b++) nonzero += c[b] != 0;
      TT_CHECKF(nonzero == 0, "calloc(%zu, 1) after scattered writes every %zu pages: %zu bytes not zero",
                n, stride, nonzero);
      free(c);
    }
  }
}

static void test_usable_size(void) {
  for (size_t n = 0; n <= 70000; n++) {
    unsigned char *p = malloc(n);
    TT_CHECKF(p != NULL, "malloc(%zu) failed", n);
    size_t u = malloc_usable_size(p);
    TT_CHECKF(u >= n, "malloc_usable_size(malloc(%zu)) = %zu", n, u);
    /* All usable bytes are really usable. */
    if (u > 0) {
      p[0] = 1;
      p[u - 1] = 2;
    }
    free(p);
  }
  tt_rng rng;
  tt_rng_seed(&rng, 70000);
  for (int i = 0; i < 400; i++) {
    size_t n = tt_rng_log_uniform(&rng, 70000, (size_t)64 << 20);
    unsigned char *p = malloc(n);
    TT_CHECKF(p != NULL, "malloc(%zu) failed", n);
    size_t u = malloc_usable_size(p);
    TT_CHECKF(u >= n, "malloc_usable_size(malloc(%zu)) = %zu", n, u);
    p[u - 1] = 1;
    free(p);
  }
  for (int shift = 17; shift <= 26; shift++) {
    for (int d = -1; d <= 1; d++) {
      size_t n = ((size_t)1 << shift) + (size_t)d;
      void *p = malloc(n);
      TT_CHECKF(p != NULL && malloc_usable_size(p) >= n, "usable size of malloc(%zu)", n);
      free(p);
    }
  }
}

static void test_sized_free(void) {
  free_sized_fn *fs = (free_sized_fn *)dlsym(RTLD_DEFAULT, "free_sized");
  free_aligned_sized_fn *fas =
      (free_aligned_sized_fn *)dlsym(RTLD_DEFAULT, "free_aligned_sized");
  if (!tt_on_tessera() && (fs == NULL || fas == NULL)) {
    fprintf(stderr, "NOTE: free_sized/free_aligned_sized missing (system malloc), skipped\n");
    return;
  }
  TT_CHECKF(fs != NULL, "free_sized is not exported");
  TT_CHECKF(fas != NULL, "free_aligned_sized is not exported");
  static const size_t sizes[] = {1, 15, 16, 100, 1000, 4000, 14000, 20000, 100000, 3u << 20};
  for (int round = 0; round < 50; round++) {
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
      void *p = malloc(sizes[i]);
      TT_CHECK(p != NULL);
      memset(p, 1, sizes[i]);
      fs(p, sizes[i]);
      fs(NULL, 0);
      size_t alignment = (size_t)16 << (i % 9); /* 16 .. 4096 */
      void *q = aligned_alloc(alignment, sizes[i]);
      TT_CHECK(q != NULL && tt_is_aligned(q, alignment));
      memset(q, 2, sizes[i]);
      fas(q, alignment, sizes[i]);
      fas(NULL, alignment, 0);
    }
  }
  /* Memory freed with free_sized is reused normally. */
  void *a = malloc(64);
  fs(a, 64);
  void *b = malloc(64);
  TT_CHECK(b != NULL);
  free(b);
}

static size_t in_use(struct mallinfo2 mi) { return mi.uordblks + mi.hblkhd; }

static void test_mallinfo2(void) {
  const size_t ten_mib = (size_t)10 << 20;
  /* One 10 MiB block. */
  struct mallinfo2 before = mallinfo2();
  unsigned char *big = malloc(ten_mib);
  TT_CHECK(big != NULL);
  memset(big, 1, ten_mib);
  struct mallinfo2 during = mallinfo2();
  TT_CHECKF(during.uordblks >= before.uordblks + ten_mib ||
                during.hblkhd >= before.hblkhd + ten_mib,
            "mallinfo2 after malloc(10 MiB): uordblks %zu -> %zu, hblkhd %zu -> %zu",
            before.uordblks, during.uordblks, before.hblkhd, during.hblkhd);
  TT_CHECKF(during.arena >= during.uordblks || during.hblkhd > 0,
            "mallinfo2: arena %zu smaller than uordblks %zu", during.arena, during.uordblks);
  free(big);
  struct mallinfo2 after = mallinfo2();
  TT_CHECKF(in_use(after) + ten_mib / 2 < in_use(during),
            "mallinfo2 in-use bytes did not drop after free: %zu -> %zu", in_use(during),
            in_use(after));

  /* 10 MiB in 1 KiB blocks. */
  enum { N = 10240 };
  static void *blocks[N];
  before = mallinfo2();
  for (int i = 0; i < N; i++) {
    blocks[i] = malloc(1024);
    TT_CHECK(blocks[i] != NULL);
    memset(blocks[i], 3, 1024);
  }
  during = mallinfo2();
  /* Small blocks may come from a thread cache whose blocks already counted as in use (glibc
   * counts its tcache the same way): allow 1 MiB of slack. */
  TT_CHECKF(in_use(during) + ((size_t)1 << 20) >= in_use(before) + ten_mib,
            "mallinfo2 after 10240 x malloc(1 KiB): in-use %zu -> %zu", in_use(before),
            in_use(during));
  for (int i = 0; i < N; i++) free(blocks[i]);
  after = mallinfo2();
  TT_CHECKF(in_use(after) + ten_mib / 2 < in_use(during),
            "mallinfo2 in-use bytes did not drop after freeing small blocks: %zu -> %zu",
            in_use(during), in_use(after));
}

/* tessera's own counters (looked up at run time: also works under LD_PRELOAD). */
typedef void get_counters_fn(tt_counters *);

static void test_counters(void) {
  get_counters_fn *get = (get_counters_fn *)dlsym(RTLD_DEFAULT, "tessera_get_counters");
  if (!tt_on_tessera()) return;
  TT_CHECKF(get != NULL, "tessera_get_counters is not exported");
  const size_t ten_mib = (size_t)10 << 20;
  tt_counters before, during, after;
  get(&before);
  void *p = malloc(ten_mib);
  TT_CHECK(p != NULL);
  memset(p, 7, ten_mib);
  get(&during);
  free(p);
  get(&after);
  TT_CHECKF(during.allocated >= before.allocated + ten_mib,
            "counters.allocated %zu -> %zu after malloc(10 MiB)", before.allocated,
            during.allocated);
  TT_CHECKF(during.mapped >= during.active && during.active >= during.allocated,
            "counters: want mapped %zu >= active %zu >= allocated %zu", during.mapped,
            during.active, during.allocated);
  TT_CHECKF(during.metadata > 0, "counters.metadata is 0");
  TT_CHECKF(after.allocated + ten_mib <= during.allocated,
            "counters.allocated %zu -> %zu after free(10 MiB)", during.allocated,
            after.allocated);
}

static void test_misc_entry_points(void) {
  for (int i = 0; i < 3; i++) {
    void *junk[100];
    for (int k = 0; k < 100; k++) junk[k] = malloc((size_t)k * 1000 + 1);
    for (int k = 0; k < 100; k++) free(junk[k]);
    int r = malloc_trim(0);
    TT_CHECKF(r == 0 || r == 1, "malloc_trim(0) = %d", r);
    r = malloc_trim(1 << 20);
    TT_CHECKF(r == 0 || r == 1, "malloc_trim(1 MiB) = %d", r);
  }
  /* mallopt returns 1 on success, 0 on error; an unknown parameter must not crash. */
  int r = mallopt(M_ARENA_MAX, 8);
  TT_CHECKF(r == 0 || r == 1, "mallopt(M_ARENA_MAX) = %d", r);
  r = mallopt(-12345, 1);
  TT_CHECKF(r == 0 || r == 1, "mallopt(unknown) = %d", r);

  char *buf = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&buf, &len);
  TT_CHECK(f != NULL);
  r = malloc_info(0, f);
  fclose(f);
  TT_CHECKF(r == 0, "malloc_info(0, f) = %d", r);
  TT_CHECKF(len > 0 && buf != NULL && strchr(buf, '<') != NULL,
            "malloc_info wrote no XML (%zu bytes)", len);
  free(buf);
  f = open_memstream(&buf, &len);
  r = malloc_info(1, f); /* options must be 0: glibc returns EINVAL, its man page says -1 */
  fclose(f);
  TT_CHECKF(r != 0, "malloc_info(1, f) = 0, want an error for nonzero options");
  free(buf);

  /* malloc_stats writes to stderr; keep the test log readable by muting it briefly. */
  fflush(stderr);
  int saved = dup(2);
  FILE *null = fopen("/dev/null", "w");
  TT_CHECK(saved >= 0 && null != NULL);
  dup2(fileno(null), 2);
  malloc_stats();
  fflush(stderr);
  dup2(saved, 2);
  close(saved);
  fclose(null);
}

int main(void) {
  tt_require_tessera();
  test_zero_and_null();
  test_calloc_zeroes();
  test_calloc_big_reuse();
  test_calloc_scattered_reuse();
  test_usable_size();
  test_sized_free();
  test_mallinfo2();
  test_counters();
  test_misc_entry_points();
  printf("api.basic: ok\n");
  return 0;
}
