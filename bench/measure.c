/* SPDX-License-Identifier: MIT */
/* measure: run a command, report its wall time and peak RSS.
 *
 *   measure OUTFILE TIMEOUT_S command [args...]
 *
 * Writes "wall_s=... maxrss_kib=... status=..." to OUTFILE once the command exits; the
 * command's own output goes to this program's stdout and stderr.
 *
 * Why not measure from bench/run (Python) directly: the peak RSS that wait4 reports is a
 * high-water mark that survives exec, so a child forked from a 20 MiB Python process
 * reports at least 20 MiB. Forked from this tiny program, the floor is well under the RSS
 * of any benchmark. The command runs in its own process group, killed whole on timeout.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static volatile sig_atomic_t child_pid, timed_out;

static void on_alarm(int sig) {
  (void)sig;
  timed_out = 1;
  if (child_pid > 0) kill(-child_pid, SIGKILL);
}

static void on_term(int sig) {
  /* Pass a termination request on to the command (bench/run stops a server this way). */
  if (child_pid > 0) kill(child_pid, sig);
}

int main(int argc, char **argv) {
  if (argc < 4) {
    fprintf(stderr, "usage: measure OUTFILE TIMEOUT_S command [args...]\n");
    return 2;
  }
  const char *outfile = argv[1];
  unsigned timeout = (unsigned)atoi(argv[2]);
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  pid_t pid = fork();
  if (pid < 0) {
    perror("measure: fork");
    return 2;
  }
  if (pid == 0) {
    setpgid(0, 0);
    execvp(argv[3], argv + 3);
    perror("measure: exec");
    _exit(127);
  }
  setpgid(pid, pid); /* also here: no race with the signal handlers */
  child_pid = pid;
  signal(SIGALRM, on_alarm);
  signal(SIGTERM, on_term);
  signal(SIGINT, on_term);
  if (timeout) alarm(timeout);

  int status = 0;
  struct rusage ru;
  while (wait4(pid, &status, 0, &ru) < 0) {
    if (errno != EINTR) {
      perror("measure: wait4");
      return 2;
    }
  }
  clock_gettime(CLOCK_MONOTONIC, &t1);
  alarm(0);
  double wall = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) * 1e-9;
  FILE *f = fopen(outfile, "w");
  if (!f) {
    perror("measure: output file");
    return 2;
  }
  int code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  fprintf(f, "wall_s=%.6f maxrss_kib=%ld exit=%d timeout=%d minflt=%ld majflt=%ld\n", wall,
          ru.ru_maxrss, code, (int)timed_out, ru.ru_minflt, ru.ru_majflt);
  fclose(f);
  return code;
}
