/* SPDX-License-Identifier: MIT */
/*
 * hardened.large_resident: hardened mode keeps the pages of freed blocks above 36 KiB in
 * memory (zeroed, inaccessible) while it holds them, within a bound: 4 times
 * hardened_quarantine (src/hardened.c; run with hardened_quarantine:1m, so 4 MiB).
 * Blocks of 40 KiB to 1 MiB of various sizes, every page written, are allocated and freed
 * one after the other (64 MiB in all): the thread's ring and the kept guarded blocks
 * hold many of them (16 MiB of address space and 64 blocks), so that without the bound
 * the process's peak RSS would grow by some 30 MiB; with it, by the bound and the
 * blocks' reuse from their arena, far less. Then a block freed last is still
 * inaccessible past its first page, and a write there ends the child with SIGSEGV.
 *
 * usage: large_resident
 */
#include "tt.h"

#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>

int main(void) {
  tt_require_tessera();
  free(malloc(64)); /* this thread's cache and ring */
  long before = tt_peak_rss_kib();
  size_t total = 0;
  for (unsigned i = 0; total < ((size_t)64 << 20); i++) {
    size_t n = ((size_t)40 << 10) + (size_t)(i * 7919u % 61) * ((size_t)16 << 10); /* 40 KiB to 1 MiB */
    char *p = malloc(n);
    TT_CHECK(p != NULL);
    memset(p, 0x5a, n);
    free(p);
    total += n;
  }
  long grown = tt_peak_rss_kib() - before;
  printf("peak RSS grew by %ld KiB over %zu MiB of blocks freed\n", grown, total >> 20);
  TT_CHECKF(grown < 14 * 1024, "peak RSS grew by %ld KiB: more than the bound of freed large blocks kept in memory", grown);

  char *p = malloc(200000);
  TT_CHECK(p != NULL);
  memset(p, 1, 200000);
  free(p);
  pid_t child = fork();
  TT_CHECK(child >= 0);
  if (child == 0) {
    p[100000] = 1; /* a freed block's third page */
    _exit(0);
  }
  int status;
  TT_CHECK(waitpid(child, &status, 0) == child);
  TT_CHECKF(WIFSIGNALED(status) && WTERMSIG(status) == SIGSEGV, "a write into a freed block's inner page was not stopped");
  return 0;
}
