/* SPDX-License-Identifier: MIT */
/*
 * api.realloc: realloc(NULL, n) acts as malloc; content is preserved when growing and
 * shrinking across every size-class boundary from 1 B to 4 MiB; a realloc that stays within
 * the block's usable size returns the same pointer; large blocks grow and shrink; aligned
 * blocks can be reallocated; reallocarray multiplies; a large block that cannot grow in
 * place moves with its content, its pages moved rather than copied (so its old pages are
 * no longer resident).
 */
#include "tt.h"

#include <malloc.h>
#include <sys/mman.h>

/*
 * The sizes to step through: every size up to 1 KiB, then the boundaries of four classes
 * per doubling (each boundary -1, 0, +1), up to 4 MiB. Whatever the real class table, every
 * class change in that range is crossed.
 */
static size_t step_sizes(size_t *out, size_t cap) {
  size_t n = 0;
  for (size_t s = 1; s <= 1024 && n < cap; s++) out[n++] = s;
  for (size_t base = 1024; base < ((size_t)4 << 20); base *= 2) {
    for (size_t q = 0; q < 4; q++) {
      size_t boundary = base + q * (base / 4);
      for (int d = -1; d <= 1 && n < cap; d++) out[n++] = boundary + (size_t)d;
    }
  }
  if (n < cap) out[n++] = (size_t)4 << 20;
  return n;
}

/* Grow one block step by step from 1 B to 4 MiB, then shrink it back, checking content. */
static void test_preserve_across_classes(void) {
  enum { CAP = 2048 };
  static size_t sizes[CAP];
  size_t count = step_sizes(sizes, CAP);

  const uint64_t id = 1;
  unsigned char *p = realloc(NULL, sizes[0]); /* realloc(NULL, n) acts as malloc(n) */
  TT_CHECK(p != NULL);
  uint64_t seed = tt_pattern_seed(p, id);
  tt_fill(p, sizes[0], seed);
  for (size_t i = 1; i < count; i++) {
    unsigned char *q = realloc(p, sizes[i]);
    TT_CHECKF(q != NULL, "realloc(%p, %zu) failed", (void *)p, sizes[i]);
    /* The bytes that survived must hold the old pattern; then rewrite the whole block. */
    TT_VERIFY(q, sizes[i - 1], seed, "grown block"); /* all old bytes survive */
    TT_CHECK(malloc_usable_size(q) >= sizes[i]);
    p = q;
    seed = tt_pattern_seed(p, id + i);
    tt_fill(p, sizes[i], seed);
  }
  for (size_t i = count - 1; i-- > 0;) {
    unsigned char *q = realloc(p, sizes[i]);
    TT_CHECKF(q != NULL, "realloc(%p, %zu) failed", (void *)p, sizes[i]);
    TT_VERIFY_PREFIX(q, sizes[i + 1], sizes[i], seed, "shrunk block");
    TT_CHECK(malloc_usable_size(q) >= sizes[i]);
    p = q;
    seed = tt_pattern_seed(p, 5000 + i);
    tt_fill(p, sizes[i], seed);
  }
  free(p);

  /* The same with a neighbour allocated after every step, so in-place growth is not always
   * possible and blocks move. */
  static void *neighbours[CAP];
  p = malloc(1);
  seed = tt_pattern_seed(p, 77);
  tt_fill(p, 1, seed);
  for (size_t i = 1; i < count; i++) {
    unsigned char *q = realloc(p, sizes[i]);
    TT_CHECK(q != NULL);
    TT_VERIFY(q, sizes[i - 1], seed, "grown block with neighbours");
    p = q;
    seed = tt_pattern_seed(p, 77 + i);
    tt_fill(p, sizes[i], seed);
    neighbours[i] = malloc(sizes[i] / 2 + 1);
    TT_CHECK(neighbours[i] != NULL);
  }
  for (size_t i = 1; i < count; i++) free(neighbours[i]);
  free(p);
}

/* Jumps between random sizes in both directions: every pair of classes, not just neighbours. */
static void test_random_jumps(void) {
  tt_rng rng;
  tt_rng_seed(&rng, 12345);
  unsigned char *p = malloc(10);
  size_t size = 10;
  uint64_t seed = tt_pattern_seed(p, 0);
  tt_fill(p, size, seed);
  for (int i = 1; i < 20000; i++) {
    size_t next = tt_rng_log_uniform(&rng, 1, (size_t)4 << 20);
    unsigned char *q = realloc(p, next);
    TT_CHECK(q != NULL);
    TT_VERIFY_PREFIX(q, size, size < next ? size : next, seed, "realloc jump");
    p = q;
    size = next;
    seed = tt_pattern_seed(p, (uint64_t)i);
    tt_fill(p, size, seed);
  }
  free(p);
}

/* Within the usable size the block must not move (same class; same pages for large). */
static void test_same_pointer_within_usable(void) {
  static const size_t sizes[] = {1,    8,     16,    17,     24,     100,     500,
                                 1000, 3000,  10000, 14336,  20000,  100000,  300000,
                                 1u << 20, 3u << 20, 5u << 20, 17u << 20};
  for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
    unsigned char *p = malloc(sizes[i]);
    TT_CHECK(p != NULL);
    size_t usable = malloc_usable_size(p);
    memset(p, 0x11, usable);
    /* Grow to the full usable size, then shrink a little within the same class. */
    size_t targets[] = {usable, sizes[i], usable - usable / 8, usable};
    for (size_t t = 0; t < sizeof targets / sizeof targets[0]; t++) {
      if (targets[t] == 0 || targets[t] > usable) continue;
      /* A shrink that would cross into a smaller class may legitimately move: only test
       * sizes above 7/8 of the usable size, which stay in the same class (four classes per
       * doubling make adjacent classes at least 1/8 apart). */
      if (targets[t] * 8 <= usable * 7 && targets[t] != sizes[i]) continue;
      uintptr_t before = (uintptr_t)p; /* compared as a number: p is dead after realloc */
      unsigned char *q = realloc(p, targets[t]);
      TT_CHECKF((uintptr_t)q == before, "realloc(%#lx [malloc(%zu), usable %zu], %zu) moved to %p",
                (unsigned long)before, sizes[i], usable, targets[t], (void *)q);
      p = q;
      for (size_t b = 0; b < targets[t]; b++)
        TT_CHECKF(q[b] == 0x11, "content lost at %zu after same-size realloc", b);
    }
    free(p);
  }
}

/* Large blocks: grow and shrink several MiB, content checked each time. */
static void test_large(void) {
  size_t size = (size_t)1 << 20;
  unsigned char *p = malloc(size);
  TT_CHECK(p != NULL);
  uint64_t seed = tt_pattern_seed(p, 9);
  tt_fill(p, size, seed);
  static const size_t steps[] = {2u << 20,  2u << 20,  3u << 20, 64u << 20, 20u << 20,
                                 (20u << 20) + 1, 100000, 1u << 26, 4096 * 3, 5u << 20};
  for (size_t i = 0; i < sizeof steps / sizeof steps[0]; i++) {
    unsigned char *q = realloc(p, steps[i]);
    TT_CHECK(q != NULL);
    TT_VERIFY_PREFIX(q, size, size < steps[i] ? size : steps[i], seed, "large realloc");
    p = q;
    size = steps[i];
    seed = tt_pattern_seed(p, 10 + i);
    tt_fill(p, size, seed);
  }
  free(p);
}

/* Resident pages of [p, p + size), by mincore. */
static size_t resident_pages(const void *p, size_t size) {
  static unsigned char vec[4096];
  TT_CHECK(size / 4096 <= sizeof vec && mincore((void *)p, size, vec) == 0);
  size_t n = 0;
  for (size_t i = 0; i < size / 4096; i++) n += vec[i] & 1;
  return n;
}

/* Two adjacent large blocks: the lower one cannot grow in place, so realloc moves it, in
 * a process whose free memory is still fresh (run first): the kernel moves its pages
 * (its old addresses then hold no resident page), its content comes along, the live
 * block above it is untouched, and every byte of the new block is usable. */
static void test_large_moves(void) {
  const size_t size = (size_t)1 << 20, bigger = (size_t)16 << 20;
  unsigned char *a = malloc(size), *b = malloc(size);
  TT_CHECK(a != NULL && b != NULL);
  unsigned char *low = a < b ? a : b, *high = a < b ? b : a;
  TT_CHECKF(high == low + size, "adjacent large blocks expected (%p, %p)", (void *)low, (void *)high);
  uint64_t seed_low = tt_pattern_seed(low, 21), seed_high = tt_pattern_seed(high, 22);
  tt_fill(low, size, seed_low);
  tt_fill(high, size, seed_high);
  unsigned char *q = realloc(low, bigger);
  TT_CHECK(q != NULL && q != low);
  TT_VERIFY(q, size, seed_low, "moved block");
  TT_VERIFY(high, size, seed_high, "the block next to the moved one");
  TT_CHECKF(resident_pages(low, size) == 0, "the old block's pages were moved, not copied (%zu still resident)",
            resident_pages(low, size));
  memset(q + size, 0x5a, bigger - size);
  TT_CHECK(q[bigger - 1] == 0x5a && malloc_usable_size(q) >= bigger);
  unsigned char *r = realloc(q, 2 * bigger); /* and again, from wherever it is now */
  TT_CHECK(r != NULL);
  TT_VERIFY(r, size, seed_low, "moved twice");
  TT_CHECK(r[bigger - 1] == 0x5a);
  free(r);
  free(high);
}

/* A block that the program split into several of the kernel's mappings (madvise on one of
 * its pages): the kernel moves it in one go (recent kernels) or refuses, and realloc then
 * copies it; either way its content and its neighbour are intact. */
static void test_large_move_split(void) {
  const size_t size = (size_t)1 << 20;
  unsigned char *a = NULL, *b = NULL, *stray[32];
  int nstray = 0;
  for (; nstray < 32; nstray += 2) { /* two adjacent blocks, once free memory's pieces are used up */
    a = malloc(size), b = malloc(size);
    TT_CHECK(a != NULL && b != NULL);
    if (a + size == b || b + size == a) break;
    stray[nstray] = a, stray[nstray + 1] = b;
  }
  unsigned char *low = a < b ? a : b, *high = a < b ? b : a;
  TT_CHECKF(high == low + size, "adjacent large blocks expected (%p, %p)", (void *)low, (void *)high);
  uint64_t seed_low = tt_pattern_seed(low, 31), seed_high = tt_pattern_seed(high, 32);
  tt_fill(low, size, seed_low);
  tt_fill(high, size, seed_high);
  TT_CHECK(madvise(low + size / 2, 4096, MADV_DONTFORK) == 0);
  unsigned char *q = realloc(low, (size_t)16 << 20);
  TT_CHECK(q != NULL && q != low);
  TT_VERIFY(q, size, seed_low, "block of several mappings moved or copied");
  TT_VERIFY(high, size, seed_high, "the block next to it");
  memset(q, 0x33, (size_t)16 << 20);
  free(q);
  free(high);
  for (int i = 0; i < nstray; i++) free(stray[i]);
}

/* Blocks from the aligned functions are ordinary blocks for realloc and free. */
static void test_aligned_then_realloc(void) {
  for (int shift = 4; shift <= 22; shift += 2) {
    size_t alignment = (size_t)1 << shift;
    unsigned char *p = aligned_alloc(alignment, 1000);
    TT_CHECK(p != NULL && tt_is_aligned(p, alignment));
    uint64_t seed = tt_pattern_seed(p, (uint64_t)shift);
    tt_fill(p, 1000, seed);
    unsigned char *q = realloc(p, 100000);
    TT_CHECK(q != NULL);
    TT_VERIFY(q, 1000, seed, "realloc of aligned block");
    q = realloc(q, 10);
    TT_CHECK(q != NULL);
    TT_VERIFY_PREFIX(q, 1000, 10, seed, "shrink of aligned block");
    free(q);
  }
}

static void test_reallocarray(void) {
  uint32_t *a = reallocarray(NULL, 10, sizeof(uint32_t));
  TT_CHECK(a != NULL);
  for (uint32_t i = 0; i < 10; i++) a[i] = i * 3;
  a = reallocarray(a, 100000, sizeof(uint32_t));
  TT_CHECK(a != NULL && malloc_usable_size(a) >= 400000);
  for (uint32_t i = 0; i < 10; i++) TT_CHECK(a[i] == i * 3);
  a[99999] = 7;
  a = reallocarray(a, 5, sizeof(uint32_t));
  TT_CHECK(a != NULL);
  for (uint32_t i = 0; i < 5; i++) TT_CHECK(a[i] == i * 3);
  free(a);
}

int main(void) {
  tt_require_tessera();
  test_large_moves(); /* first: its new block must come from fresh memory */
  test_large_move_split();
  test_preserve_across_classes();
  test_random_jumps();
  test_same_pointer_within_usable();
  test_large();
  test_aligned_then_realloc();
  test_reallocarray();
  printf("api.realloc: ok\n");
  return 0;
}
