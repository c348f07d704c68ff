/* SPDX-License-Identifier: MIT */
/*
 * api.errno: impossible requests return NULL (or an error code) with errno ENOMEM from every
 * function of the family, blocks bigger than RAM and swap together included (unless the
 * system grants any mapping), failed reallocations leave the old block intact, and free()
 * never touches errno.
 */
#include "tt.h"

#include <fcntl.h>
#include <stdbool.h>
#include <malloc.h>
#include <stddef.h>
#include <sys/sysinfo.h>

#define PTRDIFF_OVER ((size_t)PTRDIFF_MAX + 1)

/* Sizes no allocator can satisfy. */
static const size_t impossible[] = {SIZE_MAX,          SIZE_MAX - 1,
                                    SIZE_MAX - 4095,   SIZE_MAX - 65536,
                                    PTRDIFF_OVER,      PTRDIFF_OVER + 4096,
                                    (size_t)PTRDIFF_MAX};

#define N_IMPOSSIBLE (sizeof impossible / sizeof impossible[0])

#define EXPECT_ENOMEM(call, what, size)                                                    \
  do {                                                                                     \
    errno = 0;                                                                             \
    void *r_ = (call);                                                                     \
    int e_ = errno;                                                                        \
    TT_CHECKF(r_ == NULL, "%s(%#zx) returned %p, want NULL", (what), (size_t)(size), r_);  \
    TT_CHECKF(e_ == ENOMEM, "%s(%#zx): errno %d (%s), want ENOMEM", (what), (size_t)(size), \
              e_, strerror(e_));                                                            \
  } while (0)

static void test_plain_functions(void) {
  size_t page = (size_t)sysconf(_SC_PAGESIZE);
  for (size_t i = 0; i < N_IMPOSSIBLE; i++) {
    size_t n = tt_opaque(impossible[i]);
    EXPECT_ENOMEM(malloc(n), "malloc", n);
    EXPECT_ENOMEM(calloc(1, n), "calloc(1, n)", n);
    EXPECT_ENOMEM(calloc(n, 1), "calloc(n, 1)", n);
    EXPECT_ENOMEM(realloc(NULL, n), "realloc(NULL, n)", n);
    EXPECT_ENOMEM(reallocarray(NULL, 1, n), "reallocarray(NULL, 1, n)", n);
    EXPECT_ENOMEM(aligned_alloc(16, n), "aligned_alloc(16, n)", n);
    EXPECT_ENOMEM(aligned_alloc(4096, n), "aligned_alloc(4096, n)", n);
    EXPECT_ENOMEM(aligned_alloc(1 << 20, n), "aligned_alloc(1 MiB, n)", n);
    EXPECT_ENOMEM(memalign(16, n), "memalign(16, n)", n);
    EXPECT_ENOMEM(memalign(64, n), "memalign(64, n)", n);
    EXPECT_ENOMEM(memalign(1 << 20, n), "memalign(1 MiB, n)", n);
    EXPECT_ENOMEM(valloc(n), "valloc", n);
    EXPECT_ENOMEM(pvalloc(n), "pvalloc", n);

    static const size_t aligns[] = {8, 16, 64, 4096, 1 << 21};
    for (size_t a = 0; a < sizeof aligns / sizeof aligns[0]; a++) {
      void *p = (void *)0x1;
      int rc = posix_memalign(&p, aligns[a], n);
      TT_CHECKF(rc == ENOMEM, "posix_memalign(align %zu, %#zx) = %d, want ENOMEM", aligns[a], n,
                rc);
      TT_CHECKF(p == (void *)0x1, "posix_memalign changed *memptr on failure");
    }
  }
  /* pvalloc rounds up to whole pages: each of these wraps to 0 when rounded. */
  for (size_t k = 1; k < page; k *= 2) {
    size_t n = tt_opaque(SIZE_MAX - k + 1);
    EXPECT_ENOMEM(pvalloc(n), "pvalloc(wrapping)", n);
    EXPECT_ENOMEM(valloc(n), "valloc(near SIZE_MAX)", n);
  }
}

static void test_multiplication_overflow(void) {
  static const size_t pairs[][2] = {
      {SIZE_MAX, 2},          {2, SIZE_MAX},          {(SIZE_MAX >> 1) + 1, 2},
      {(size_t)1 << 32, (size_t)1 << 32},             {65537, (SIZE_MAX / 65536)},
      {PTRDIFF_OVER / 16, 16}, {3, SIZE_MAX / 3 + 1}, {SIZE_MAX, SIZE_MAX},
  };
  for (size_t i = 0; i < sizeof pairs / sizeof pairs[0]; i++) {
    size_t a = tt_opaque(pairs[i][0]), b = tt_opaque(pairs[i][1]);
    EXPECT_ENOMEM(calloc(a, b), "calloc(overflowing)", a);
    EXPECT_ENOMEM(reallocarray(NULL, a, b), "reallocarray(NULL, overflowing)", a);

    unsigned char *p = malloc(100);
    TT_CHECK(p != NULL);
    memset(p, 0x3C, 100);
    EXPECT_ENOMEM(reallocarray(p, a, b), "reallocarray(p, overflowing)", a);
    for (size_t k = 0; k < 100; k++) TT_CHECKF(p[k] == 0x3C, "reallocarray failure clobbered p");
    free(p);
  }
}

/* A failed realloc leaves the old block allocated, intact and usable. */
static void test_realloc_failure_keeps_block(void) {
  static const size_t old_sizes[] = {1, 24, 1000, 20000, 300000, 5u << 20};
  for (size_t s = 0; s < sizeof old_sizes / sizeof old_sizes[0]; s++) {
    for (size_t i = 0; i < N_IMPOSSIBLE; i++) {
      size_t old = old_sizes[s];
      unsigned char *p = malloc(old);
      TT_CHECK(p != NULL);
      uint64_t seed = tt_pattern_seed(p, s);
      tt_fill(p, old, seed);
      size_t n = tt_opaque(impossible[i]);
      EXPECT_ENOMEM(realloc(p, n), "realloc(p, huge)", n);
      TT_VERIFY(p, old, seed, "block after failed realloc");
      TT_CHECKF(malloc_usable_size(p) >= old, "usable size shrank after failed realloc");
      /* Still a live, resizable block. */
      unsigned char *q = realloc(p, old + 1);
      TT_CHECK(q != NULL);
      TT_VERIFY(q, old, seed, "block grown after failed realloc");
      free(q);
    }
  }
}

/* free() (and free_sized when present) never modify errno, whatever they free. */
static void test_free_keeps_errno(void) {
  static const size_t sizes[] = {0, 1, 16, 100, 3000, 16384, 100000, 1u << 20, 40u << 20};
  for (int pass = 0; pass < 3; pass++) {
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
      void *p = malloc(sizes[i]);
      TT_CHECK(p != NULL);
      errno = 4242;
      free(p);
      TT_CHECKF(errno == 4242, "free of a %zu-byte block changed errno to %d", sizes[i], errno);
    }
    errno = 4243;
    free(NULL);
    TT_CHECKF(errno == 4243, "free(NULL) changed errno to %d", errno);
    /* Free many blocks at once, which may give memory back to the OS (munmap, madvise). */
    enum { N = 2000 };
    static void *many[N];
    for (int i = 0; i < N; i++) many[i] = malloc((size_t)(i % 50) * 300 + 1);
    errno = 4244;
    for (int i = 0; i < N; i++) free(many[i]);
    TT_CHECKF(errno == 4244, "freeing 2000 blocks changed errno to %d", errno);
  }
}

/* Whether the system grants mappings of any size (vm.overcommit_memory 1). */
static bool overcommit_always(void) {
  int fd = open("/proc/sys/vm/overcommit_memory", O_RDONLY);
  char c = 0;
  bool always = fd >= 0 && read(fd, &c, 1) == 1 && c == '1';
  if (fd >= 0) close(fd);
  return always;
}

/* Blocks bigger than RAM and swap together: NULL and ENOMEM, as under glibc (whose
 * mappings the kernel's overcommit heuristic refuses), not a block the program is
 * killed for writing. */
static void test_beyond_memory(void) {
  struct sysinfo si;
  TT_CHECK(sysinfo(&si) == 0);
  size_t memory = ((size_t)si.totalram + (size_t)si.totalswap) * (si.mem_unit ? si.mem_unit : 1);
  if (overcommit_always()) {
    printf("api.errno: vm.overcommit_memory is 1, blocks beyond memory not checked\n");
    return;
  }
  const size_t sizes[] = {memory + ((size_t)1 << 30), 2 * memory, (size_t)1 << 44};
  for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
    if (sizes[i] <= memory) continue; /* 16 TiB on a machine with more */
    size_t n = tt_opaque(sizes[i]);
    EXPECT_ENOMEM(malloc(n), "malloc(beyond memory)", n);
    EXPECT_ENOMEM(calloc(n / 4096, 4096), "calloc(beyond memory)", n);
    EXPECT_ENOMEM(aligned_alloc(1 << 21, n), "aligned_alloc(2 MiB, beyond memory)", n);
    void *p = (void *)0x1;
    TT_CHECKF(posix_memalign(&p, 4096, n) == ENOMEM && p == (void *)0x1, "posix_memalign(beyond memory)");
    unsigned char *q = malloc(300000);
    TT_CHECK(q != NULL);
    uint64_t seed = tt_pattern_seed(q, i);
    tt_fill(q, 300000, seed);
    EXPECT_ENOMEM(realloc(q, n), "realloc(p, beyond memory)", n);
    TT_VERIFY(q, 300000, seed, "block after a realloc beyond memory");
    free(q);
  }
}

int main(void) {
  tt_require_tessera();
  test_beyond_memory();
  test_plain_functions();
  test_multiplication_overflow();
  test_realloc_failure_keeps_block();
  test_free_keeps_errno();
  printf("api.errno: ok\n");
  return 0;
}
