/* SPDX-License-Identifier: MIT */
/* Page runs handed back together (os_release_ranges): every run given reads as zero
 * afterwards, every page between them keeps its data, and the runs go in one system call
 * per 64 where the kernel takes process_madvise on the process itself, else one a run
 * (the call count says which, and must be one of the two). Lazily freed runs (MADV_FREE)
 * keep or lose their data as the kernel likes, but the pages between them are kept. */
#include <string.h>
#include <sys/mman.h>

#include "os.h"
#include "types.h"
#include "unit.h"

#define RUNS 150 /* more than one call's worth */

static unsigned char *fill_map(size_t pages) {
  unsigned char *m = mmap(NULL, pages * PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  CHECK(m != MAP_FAILED, "mmap");
  for (size_t p = 0; p < pages; p++) memset(m + p * PAGE, (int)(p % 251) + 1, PAGE);
  return m;
}

/* Runs of 1-3 pages with a kept page after each. */
static unsigned make_runs(unsigned char *m, os_range_t *r, size_t *pages) {
  size_t at = 0;
  for (unsigned i = 0; i < RUNS; i++) {
    size_t n = 1 + i % 3;
    r[i].addr = m + at * PAGE;
    r[i].size = n * PAGE;
    at += n + 1;
  }
  *pages = at;
  return RUNS;
}

static bool in_run(const os_range_t *r, const unsigned char *p) {
  for (unsigned i = 0; i < RUNS; i++)
    if (p >= (const unsigned char *)r[i].addr && p < (const unsigned char *)r[i].addr + r[i].size) return true;
  return false;
}

static void check(bool lazy) {
  os_range_t r[RUNS];
  size_t pages;
  unsigned char *probe = fill_map(1);
  make_runs(probe, r, &pages); /* the layout only */
  munmap(probe, PAGE);
  unsigned char *m = fill_map(pages);
  make_runs(m, r, &pages);
  unsigned calls = os_release_ranges(r, RUNS, lazy);
  CHECK(calls == (RUNS + 63) / 64 || calls == RUNS, "%u calls for %u runs", calls, RUNS);
  for (size_t p = 0; p < pages; p++) {
    unsigned char *q = m + p * PAGE;
    if (!in_run(r, q)) CHECK(q[0] == (unsigned char)(p % 251 + 1) && q[PAGE - 1] == q[0], "page %zu between runs kept", p);
    else if (!lazy) CHECK(q[0] == 0 && q[PAGE - 1] == 0, "page %zu of a run reads as zero", p);
  }
  printf("os_release: %s, %u runs in %u calls\n", lazy ? "lazily freed" : "released", RUNS, calls);
  munmap(m, pages * PAGE);
}

int main(void) {
  check(false);
  check(true);
  os_range_t none[1];
  CHECK(os_release_ranges(none, 0, false) == 0, "no runs, no call");
  return 0;
}
