/* SPDX-License-Identifier: MIT */
/*
 * stress.fork_signal: a SIGALRM handler (driven by setitimer) calls fork() while the main
 * loop is busy in malloc, realloc and free, so most forks interrupt the allocator with its
 * locks held. The child _exit(0)s at once; the parent waitpid()s in the handler. Neither
 * may hang: fork's atfork handlers in the allocator must not wait for a lock that the
 * interrupted code of the same thread holds. A hang is caught by the watchdog.
 *
 * usage: fork_signal [forks]
 */
#include "tt.h"

#include <sys/time.h>

static volatile sig_atomic_t forks_done;
static volatile sig_atomic_t fork_failures;
static volatile sig_atomic_t child_failures;

static void on_alarm(int sig) {
  (void)sig;
  int saved_errno = errno;
  pid_t pid = fork();
  if (pid == 0) _exit(0);
  if (pid < 0) {
    fork_failures++;
  } else {
    int status;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) child_failures++;
    forks_done++;
  }
  errno = saved_errno;
}

int main(int argc, char **argv) {
  int forks = (int)tt_arg_long(argc, argv, 1, 300);
  tt_require_tessera();
  tt_watchdog(120, "stress.fork_signal");

  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_alarm;
  sa.sa_flags = SA_RESTART;
  sigemptyset(&sa.sa_mask);
  TT_CHECK(sigaction(SIGALRM, &sa, NULL) == 0);
  struct itimerval timer = {{0, 5000}, {0, 5000}}; /* every 5 ms */
  TT_CHECK(setitimer(ITIMER_REAL, &timer, NULL) == 0);

  /* The loop spends nearly all its time inside the allocator, so most signals land there:
   * each block only carries its index in its first word, checked before it is freed. */
  tt_rng rng;
  tt_rng_seed(&rng, 99);
  enum { LIVE = 256 };
  uint64_t *live[LIVE] = {0};
  long ops = 0;
  while (forks_done < forks) {
    size_t i = (size_t)tt_rng_below(&rng, LIVE);
    if (live[i] != NULL) {
      TT_CHECKF(live[i][0] == i, "block %zu lost its content", i);
      if (tt_rng_below(&rng, 4) == 0) {
        uint64_t *q = realloc(live[i], tt_rng_log_uniform(&rng, 8, 200000));
        TT_CHECK(q != NULL && q[0] == i);
        live[i] = q;
        continue;
      }
      free(live[i]);
    }
    size_t n = tt_rng_below(&rng, 100) == 0 ? tt_rng_log_uniform(&rng, 16384, 4 << 20)
                                            : tt_rng_log_uniform(&rng, 8, 2048);
    live[i] = malloc(n);
    TT_CHECK(live[i] != NULL);
    live[i][0] = i;
    ops++;
  }
  struct itimerval off = {{0, 0}, {0, 0}};
  setitimer(ITIMER_REAL, &off, NULL);
  for (size_t i = 0; i < LIVE; i++) free(live[i]);
  TT_CHECKF(fork_failures == 0, "%d forks failed", (int)fork_failures);
  TT_CHECKF(child_failures == 0, "%d children did not exit 0", (int)child_failures);
  printf("stress.fork_signal: ok: %d forks from a signal handler during %ld allocations\n",
         (int)forks_done, ops);
  return 0;
}
