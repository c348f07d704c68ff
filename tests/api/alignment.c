/* SPDX-License-Identifier: MIT */
/*
 * api.alignment: every power-of-two alignment from 1 B to 64 MiB through posix_memalign,
 * aligned_alloc and memalign, with sizes 0, 1, small and large; valloc and pvalloc page
 * alignment; the 16-byte minimum alignment of plain malloc/calloc/realloc; bad alignments.
 */
#include "tt.h"

#include <malloc.h>

enum { MAX_ALIGN_SHIFT = 26 }; /* 64 MiB */

static const size_t sizes[] = {0, 1, 8, 24, 100, 4096, 5000, 70000, 1u << 20, (3u << 20) + 5};

/* Writes the first and last byte (the block must be usable), checks usable size, frees. */
static void check_block(void *p, size_t alignment, size_t size, const char *fn) {
  TT_CHECKF(p != NULL, "%s(align %zu, size %zu) returned NULL", fn, alignment, size);
  TT_CHECKF(tt_is_aligned(p, alignment), "%s(align %zu, size %zu) = %p is misaligned", fn,
            alignment, size, p);
  TT_CHECKF(tt_is_aligned(p, 16), "%s(align %zu, size %zu) = %p not 16-byte aligned", fn,
            alignment, size, p);
  size_t usable = malloc_usable_size(p);
  TT_CHECKF(usable >= size, "%s(align %zu, size %zu): usable size %zu too small", fn, alignment,
            size, usable);
  if (size > 0) {
    memset(p, 0x5A, size < 4096 ? size : 4096);
    ((volatile unsigned char *)p)[size - 1] = 0xA5;
  }
  free(p);
}

static void test_posix_memalign(void) {
  for (int shift = 0; shift <= MAX_ALIGN_SHIFT; shift++) {
    size_t alignment = (size_t)1 << shift;
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
      void *p = (void *)0x1;
      int rc = posix_memalign(&p, tt_opaque(alignment), tt_opaque(sizes[i]));
      if (alignment < sizeof(void *)) {
        /* POSIX: the alignment must be a power-of-two multiple of sizeof(void *). */
        TT_CHECKF(rc == EINVAL, "posix_memalign(align %zu) = %d, want EINVAL", alignment, rc);
        TT_CHECKF(p == (void *)0x1, "posix_memalign changed *memptr on failure");
        continue;
      }
      TT_CHECKF(rc == 0, "posix_memalign(align %zu, size %zu) = %d", alignment, sizes[i], rc);
      check_block(p, alignment, sizes[i], "posix_memalign");
    }
  }
}

static void test_aligned_alloc(void) {
  for (int shift = 0; shift <= MAX_ALIGN_SHIFT; shift++) {
    size_t alignment = (size_t)1 << shift;
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
      void *p = aligned_alloc(tt_opaque(alignment), tt_opaque(sizes[i]));
      check_block(p, alignment, sizes[i], "aligned_alloc");
    }
  }
}

static void test_memalign(void) {
  for (int shift = 0; shift <= MAX_ALIGN_SHIFT; shift++) {
    size_t alignment = (size_t)1 << shift;
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
      void *p = memalign(tt_opaque(alignment), tt_opaque(sizes[i]));
      check_block(p, alignment, sizes[i], "memalign");
    }
  }
}

static void test_page_aligned(void) {
  size_t page = (size_t)sysconf(_SC_PAGESIZE);
  for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
    check_block(valloc(tt_opaque(sizes[i])), page, sizes[i], "valloc");
    void *p = pvalloc(tt_opaque(sizes[i]));
    /* pvalloc rounds the size up to a whole number of pages (glibc: 0 stays 0). */
    size_t rounded = (sizes[i] + page - 1) / page * page;
    TT_CHECKF(p != NULL && malloc_usable_size(p) >= rounded,
              "pvalloc(%zu): usable size %zu below the page-rounded %zu", sizes[i],
              p ? malloc_usable_size(p) : 0, rounded);
    check_block(p, page, rounded, "pvalloc");
  }
}

/* Every block is 16-byte aligned, whatever its size or how it was obtained. */
static void test_min_alignment(void) {
  enum { N = 4096 };
  static void *blocks[N];
  for (size_t n = 0; n < N; n++) {
    size_t size = n % 300; /* many of them tiny: 0..299 */
    blocks[n] = (n & 1) ? malloc(tt_opaque(size)) : calloc(1, tt_opaque(size));
    TT_CHECKF(blocks[n] != NULL, "allocation of %zu bytes failed", size);
    TT_CHECKF(tt_is_aligned(blocks[n], 16), "%s(%zu) = %p is not 16-byte aligned",
              (n & 1) ? "malloc" : "calloc", size, blocks[n]);
  }
  for (size_t n = 0; n < N; n++) {
    void *q = realloc(blocks[n], tt_opaque((n * 7) % 200 + 1));
    TT_CHECKF(q != NULL && tt_is_aligned(q, 16), "realloc result %p not 16-byte aligned", q);
    free(q);
  }
  for (size_t size = 1; size <= 8; size++) {
    void *p = malloc(tt_opaque(size));
    TT_CHECKF(p != NULL && tt_is_aligned(p, 16), "malloc(%zu) = %p is not 16-byte aligned",
              size, p);
    free(p);
  }
}

/* Alignments that are not powers of two (or not multiples of sizeof(void *)). */
static void test_bad_alignment(void) {
  static const size_t bad[] = {0, 3, 24, 48, 100, 4097, ((size_t)1 << 20) + 8};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    void *p = (void *)0x1;
    int rc = posix_memalign(&p, tt_opaque(bad[i]), 64);
    TT_CHECKF(rc == EINVAL, "posix_memalign(align %zu) = %d, want EINVAL", bad[i], rc);
    TT_CHECKF(p == (void *)0x1, "posix_memalign(align %zu) changed *memptr on failure", bad[i]);

    /* The glibc manual: aligned_alloc fails with EINVAL if the alignment is not a power of
     * two. */
    errno = 0;
    p = aligned_alloc(tt_opaque(bad[i]), 64);
    TT_CHECKF(p == NULL && errno == EINVAL, "aligned_alloc(align %zu) = %p errno %d, want EINVAL",
              bad[i], p, errno);
    free(p);

    /* memalign: glibc rounds a non-power-of-two boundary up to the next power of two. Accept
     * that, or a clean EINVAL; never a block aligned to less than the next power of two. */
    errno = 0;
    p = memalign(tt_opaque(bad[i]), 64);
    if (p == NULL) {
      TT_CHECKF(errno == EINVAL, "memalign(align %zu) = NULL with errno %d", bad[i], errno);
    } else {
      size_t next = 1;
      while (next < bad[i]) next <<= 1;
      TT_CHECKF(tt_is_aligned(p, next), "memalign(align %zu) = %p not aligned to %zu", bad[i],
                p, next);
      free(p);
    }
  }
  /* An alignment larger than half the address space cannot be satisfied. */
  size_t huge_align = (SIZE_MAX >> 1) + 1;
  void *p = (void *)0x1;
  int rc = posix_memalign(&p, tt_opaque(huge_align), 1);
  TT_CHECKF(rc == ENOMEM || rc == EINVAL, "posix_memalign(align 2^63) = %d", rc);
  errno = 0;
  p = memalign(tt_opaque(huge_align), 1);
  TT_CHECKF(p == NULL && (errno == ENOMEM || errno == EINVAL), "memalign(2^63) = %p errno %d",
            p, errno);
  errno = 0;
  p = aligned_alloc(tt_opaque(huge_align), 1);
  TT_CHECKF(p == NULL && (errno == ENOMEM || errno == EINVAL),
            "aligned_alloc(2^63) = %p errno %d", p, errno);
}

/* Many live aligned blocks at once: they must not overlap. */
static void test_aligned_no_overlap(void) {
  enum { N = 512 };
  static unsigned char *blocks[N];
  static size_t lens[N];
  for (size_t i = 0; i < N; i++) {
    size_t alignment = (size_t)1 << (i % 16); /* up to 32 KiB */
    lens[i] = 1 + (i * 37) % 3000;
    blocks[i] = memalign(alignment, lens[i]);
    TT_CHECK(blocks[i] != NULL && tt_is_aligned(blocks[i], alignment));
    tt_fill(blocks[i], lens[i], tt_pattern_seed(blocks[i], i));
  }
  for (size_t i = 0; i < N; i++) {
    TT_VERIFY(blocks[i], lens[i], tt_pattern_seed(blocks[i], i), "aligned block");
    free(blocks[i]);
  }
}

int main(void) {
  tt_require_tessera();
  test_posix_memalign();
  test_aligned_alloc();
  test_memalign();
  test_page_aligned();
  test_min_alignment();
  test_bad_alignment();
  test_aligned_no_overlap();
  printf("api.alignment: ok\n");
  return 0;
}
