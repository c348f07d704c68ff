/* SPDX-License-Identifier: MIT */
/*
 * api.glibc_reports: glibc's reporting extensions answer as glibc documents them, also
 * after a request no system can satisfy (which may leave a large mapping of released
 * pages behind): mallinfo2's arena is the memory held from the OS, arena = uordblks +
 * fordblks in mallinfo2 and in mallinfo (whose int fields saturate), uordblks grows by
 * what is allocated; malloc_info(options != 0) fails with EINVAL and its XML names
 * sizes held, not address space; mallopt refuses an M_MXFAST outside its range.
 */
#include "tt.h"

#include <malloc.h>

#define GIB ((size_t)1 << 30)

static void check_mallinfo(const char *when) {
  struct mallinfo2 m2 = mallinfo2();
  TT_CHECKF(m2.arena == m2.uordblks + m2.fordblks, "%s: mallinfo2 arena %zu != uordblks %zu + fordblks %zu", when,
            m2.arena, m2.uordblks, m2.fordblks);
  /* This program holds a few MiB: no 64 GiB from the OS, whatever it mapped. */
  TT_CHECKF(m2.arena < 64 * GIB, "%s: mallinfo2 arena %zu bytes", when, m2.arena);
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
  struct mallinfo m = mallinfo();
#pragma GCC diagnostic pop
  TT_CHECKF(m.arena == m.uordblks + m.fordblks, "%s: mallinfo arena %d != uordblks %d + fordblks %d", when, m.arena,
            m.uordblks, m.fordblks);
  TT_CHECKF(m.arena >= 0 && m.uordblks >= 0 && m.fordblks >= 0 && m.keepcost >= 0, "%s: negative mallinfo field", when);
}

static void test_mallinfo(void) {
  check_mallinfo("at start");
  struct mallinfo2 before = mallinfo2();
  enum { N = 19 };
  void *blocks[N];
  size_t total = 0;
  for (int i = 0; i < N; i++) {
    blocks[i] = malloc(tt_opaque(160 * (size_t)(i + 1)));
    TT_CHECK(blocks[i] != NULL);
    total += 160 * (size_t)(i + 1);
  }
  struct mallinfo2 after = mallinfo2();
  TT_CHECKF(after.uordblks >= before.uordblks + total, "uordblks %zu -> %zu for %zu bytes", before.uordblks,
            after.uordblks, total);
  check_mallinfo("after small blocks");
  for (int i = 0; i < N; i++) free(blocks[i]);

  /* Requests beyond any address space fail; the reports stay those of this program. */
  static const size_t impossible[] = {(size_t)1 << 62, (size_t)1 << 60, (size_t)1 << 50};
  for (size_t i = 0; i < sizeof impossible / sizeof impossible[0]; i++) {
    errno = 0;
    void *p = malloc(tt_opaque(impossible[i]));
    TT_CHECKF(p == NULL && errno == ENOMEM, "malloc(%#zx) = %p, errno %d", impossible[i], p, errno);
    /* Enough afterwards that the arena must map more memory. */
    enum { M = 16 };
    void *held[M];
    for (int k = 0; k < M; k++) {
      held[k] = malloc(tt_opaque((size_t)1 << 20));
      TT_CHECK(held[k] != NULL);
      memset(held[k], 1, (size_t)1 << 20);
    }
    check_mallinfo("after an impossible request");
    for (int k = 0; k < M; k++) free(held[k]);
  }
}

static void test_malloc_info(void) {
  char *text = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&text, &len);
  TT_CHECK(f != NULL);
  errno = 0;
  int r = malloc_info(1, f);
  TT_CHECKF(r == -1 && errno == EINVAL, "malloc_info(1, f) = %d, errno %d: want -1 and EINVAL", r, errno);
  r = malloc_info(0, f);
  fclose(f);
  TT_CHECKF(r == 0 && text != NULL && strncmp(text, "<malloc version=", 16) == 0 && strstr(text, "</malloc>\n") != NULL,
            "malloc_info(0, f) = %d: %s", r, text ? text : "(nothing)");
  const char *current = strstr(text, "<system type=\"current\" size=\"");
  TT_CHECKF(current != NULL, "malloc_info: no system current size in %s", text);
  size_t held = strtoull(current + strlen("<system type=\"current\" size=\""), NULL, 10);
  TT_CHECKF(held > 0 && held < 64 * GIB, "malloc_info: system current %zu bytes", held);
  free(text);
}

static void test_mallopt(void) {
  TT_CHECK(mallopt(M_MXFAST, 0) == 1);
  TT_CHECK(mallopt(M_MXFAST, 64) == 1);
  TT_CHECKF(mallopt(M_MXFAST, 1000) == 0, "mallopt(M_MXFAST, 1000) accepted");
  TT_CHECKF(mallopt(M_MXFAST, -1) == 0, "mallopt(M_MXFAST, -1) accepted");
  TT_CHECK(mallopt(M_TRIM_THRESHOLD, -1) == 1);
  TT_CHECK(mallopt(M_MMAP_THRESHOLD, 64 * 1024) == 1);
  TT_CHECK(mallopt(M_CHECK_ACTION, 1) == 1);
  TT_CHECK(mallopt(M_PERTURB, 0) == 1);
  TT_CHECK(mallopt(M_ARENA_MAX, 1) == 1);
}

int main(void) {
  tt_require_tessera();
  test_mallinfo();
  test_malloc_info();
  test_mallopt();
  printf("api.glibc_reports: ok\n");
  return 0;
}
