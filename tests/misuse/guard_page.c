/* SPDX-License-Identifier: MIT */
/*
 * misuse.hardened.guard_page: in hardened mode (run with TESSERA_CONF=hardened:true) a
 * block above 32 KiB is followed by an inaccessible guard page: a program writing on past its
 * block's end is stopped by SIGSEGV at the first byte past the block's region, before
 * it reaches the memory after it (within a page and 5 bytes of the request's end) (the canary bytes catch shorter overflows at free,
 * misuse.hardened.overflow_*). The child writes byte by byte past a block of each size;
 * the parent asserts that it died by SIGSEGV within a page of the block's end. Then a
 * write into the second page of a freed block above 36 KiB: SIGSEGV too (its pages but
 * the first are inaccessible while it waits in the quarantine; blocks of 9 pages, for
 * requests up to 36 KiB - 5, are zeroed instead and checked when reused:
 * misuse.hardened.write_after_free_32k). Both again after enough
 * frees of blocks of the same size that the block has left the quarantine and waits,
 * guard page in place, for a malloc of its size (hardened.h: guarded blocks kept), and
 * for a block handed out again from there (it must read as zero).
 *
 * usage: guard_page
 */
#include "tt.h"

#include <stdbool.h>
#include <sys/resource.h>

static void *launder(void *p) {
  void *volatile v = p;
  return v;
}

/* Enough blocks for the first freed to leave the thread's quarantine (256 such blocks at
 * most, its bytes resident: a page each) and be kept (64 at most), not pushed out of there. */
#define CHURN_KEPT 270

/* Allocates n blocks of size bytes, writes them whole, then frees them: the first ones
 * are then kept (and must come back zero). */
static void churn(size_t size, size_t n) {
  void **blocks = malloc(n * sizeof(void *));
  if (blocks == NULL) _exit(3);
  for (size_t i = 0; i < n; i++) {
    if ((blocks[i] = malloc(size)) == NULL) _exit(3);
    memset(blocks[i], 0x5a, size);
  }
  for (size_t i = 0; i < n; i++) free(blocks[i]);
  free(blocks);
}

/* fork(); in the child (0 returned), no core file when it dies as expected, and an alarm
 * in case it hangs. */
static pid_t fork_quiet_child(void) {
  pid_t pid = fork();
  TT_CHECK(pid >= 0);
  if (pid == 0) {
    struct rlimit no_core = {0, 0};
    setrlimit(RLIMIT_CORE, &no_core);
    alarm(20);
  }
  return pid;
}

/* Forks a child that writes past a block of size bytes; returns how far past the end it
 * got (from a pipe it reports its progress through), or -1 if it did not die by SIGSEGV. */
static long overflow_distance(size_t size, size_t churned) {
  int fds[2];
  TT_CHECK(pipe(fds) == 0);
  pid_t pid = fork_quiet_child();
  if (pid == 0) {
    close(fds[0]);
    churn(size, churned);
    volatile char *p = launder(malloc(size));
    if (p == NULL) _exit(3);
    for (size_t i = 0; i < size; i++) {
      if (p[i] != 0) _exit(4); /* every block is handed out zeroed */
      p[i] = 1;
    }
    for (long past = 0; past < 3 * 4096; past++) {
      if (past % 64 == 0 && write(fds[1], &past, sizeof past) != (ssize_t)sizeof past) _exit(2);
      p[size + (size_t)past] = 1;
    }
    _exit(0); /* not stopped */
  }
  close(fds[1]);
  long last = -1, v;
  while (read(fds[0], &v, sizeof v) == (ssize_t)sizeof v) last = v;
  close(fds[0]);
  int status;
  TT_CHECK(waitpid(pid, &status, 0) == pid);
  if (!WIFSIGNALED(status) || WTERMSIG(status) != SIGSEGV) return -1;
  return last;
}

/* Forks a child that frees a block of size bytes and then writes into its second page;
 * returns whether the child died by SIGSEGV (the freed block's pages but the first are
 * inaccessible while it waits in the quarantine). */
static bool write_after_free_stopped(size_t size, size_t others) {
  pid_t pid = fork_quiet_child();
  if (pid == 0) {
    char *p = malloc(size);
    if (p == NULL) _exit(3);
    memset(p, 1, size);
    volatile char *copy = launder(p);
    free(p);
    churn(size, others);
    copy[4096 + 10] = 1;
    _exit(0); /* not stopped */
  }
  int status;
  TT_CHECK(waitpid(pid, &status, 0) == pid);
  return WIFSIGNALED(status) && WTERMSIG(status) == SIGSEGV;
}

int main(void) {
  tt_require_tessera();
  /* Blocks above 32 KiB have guard pages (smaller ones: canaries only). */
  const size_t sizes[] = {32768, 40000, 65536 - 5, 100000, (size_t)1 << 20, ((size_t)4 << 20) + 123};
  for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
    long got = overflow_distance(sizes[i], 0);
    TT_CHECKF(got >= 0, "a write past a block of %zu bytes was not stopped by SIGSEGV", sizes[i]);
    /* The slack between the request and the guard page is less than a page and the
     * trailer; the progress is reported every 64 bytes. */
    TT_CHECKF(got < 4096 + 64, "a write past a block of %zu bytes went %ld bytes on", sizes[i], got);
    printf("misuse.hardened.guard_page: %zu B: SIGSEGV less than %ld bytes past the end\n", sizes[i], got + 64);
  }
  /* Above 32 KiB (smaller freed blocks are zeroed instead, and checked when reused). */
  const size_t freed_sizes[] = {40000, 100000, (size_t)1 << 20, (size_t)16 << 20};
  for (size_t i = 0; i < sizeof freed_sizes / sizeof freed_sizes[0]; i++) {
    TT_CHECKF(write_after_free_stopped(freed_sizes[i], 0),
              "a write into a freed block of %zu bytes was not stopped by SIGSEGV", freed_sizes[i]);
    printf("misuse.hardened.guard_page: a write after free into a block of %zu B: SIGSEGV\n", freed_sizes[i]);
  }
  /* Blocks kept after the quarantine, and handed out again from there. */
  const size_t kept_sizes[] = {32768, 40000, 100000};
  for (size_t i = 0; i < sizeof kept_sizes / sizeof kept_sizes[0]; i++) {
    /* (32 KiB: zeroed, not made inaccessible, when freed.) */
    if (kept_sizes[i] > 32768)
      TT_CHECKF(write_after_free_stopped(kept_sizes[i], CHURN_KEPT),
              "a write into a kept freed block of %zu bytes was not stopped by SIGSEGV", kept_sizes[i]);
    long got = overflow_distance(kept_sizes[i], CHURN_KEPT);
    TT_CHECKF(got >= 0, "a block of %zu bytes handed out again was not all zero, or a write past it not stopped by SIGSEGV", kept_sizes[i]);
    TT_CHECKF(got < 4096 + 64, "a write past a block of %zu bytes handed out again went %ld bytes on", kept_sizes[i], got);
    printf("misuse.hardened.guard_page: kept blocks of %zu B: SIGSEGV\n", kept_sizes[i]);
  }
  return 0;
}
