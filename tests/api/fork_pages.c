/* SPDX-License-Identifier: MIT */
/*
 * api.fork_pages: fork copies few of the parent's pages. Every page the allocator writes
 * in the parent right after fork (its fork handler releasing what it took) is copied,
 * since the child shares it (copy on write): a program that forks often (a shell, make)
 * pays for each. A small program that used a few dozen size classes forks 100 times; the
 * parent's minor page faults a fork must stay few (5 with tessera, 2-3 with glibc's malloc;
 * 13 when fork's handler took every bin lock, 19 when it also took the profiler's locks
 * without prof:true).
 */
#include "tt.h"

#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define FORKS 100
#define MAX_FAULTS_PER_FORK 9

static long minor_faults(void) {
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  return ru.ru_minflt;
}

/* Forks a child that reports its own page faults so far (those of fork's return path and
 * the allocator's child handler: the pages written before the child runs its first line)
 * and exits; returns them. */
static long fork_and_wait(void) {
  int fds[2];
  TT_CHECK(pipe(fds) == 0);
  pid_t pid = fork();
  TT_CHECK(pid >= 0);
  if (pid == 0) {
    long faults = minor_faults();
    _exit(write(fds[1], &faults, sizeof faults) == sizeof faults ? 0 : 1);
  }
  long child_faults = 0;
  TT_CHECK(read(fds[0], &child_faults, sizeof child_faults) == sizeof child_faults);
  close(fds[0]);
  close(fds[1]);
  int status = 0;
  TT_CHECK(waitpid(pid, &status, 0) == pid);
  TT_CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  return child_faults;
}

int main(void) {
  enum { BLOCKS = 64 };
  void *blocks[BLOCKS];
  for (int i = 0; i < BLOCKS; i++) { /* small classes from 16 B to 16 KiB, and a large block */
    size_t size = i == BLOCKS - 1 ? (size_t)1 << 20 : (size_t)16 << (i % 11);
    blocks[i] = malloc(size);
    TT_CHECK(blocks[i] != NULL);
    memset(blocks[i], i, size);
  }
  for (int i = 0; i < 5; i++) fork_and_wait(); /* the paths fork takes, faulted in once */
  long before = minor_faults();
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  long child_faults = 0;
  for (int i = 0; i < FORKS; i++) child_faults += fork_and_wait();
  clock_gettime(CLOCK_MONOTONIC, &t1);
  double per_fork = (double)(minor_faults() - before) / FORKS;
  double us = ((double)(t1.tv_sec - t0.tv_sec) * 1e9 + (double)(t1.tv_nsec - t0.tv_nsec)) / 1e3 / FORKS;
  TT_CHECKF(per_fork <= MAX_FAULTS_PER_FORK, "%.1f minor page faults in the parent a fork (at most %d)",
            per_fork, MAX_FAULTS_PER_FORK);
  for (int i = 0; i < BLOCKS; i++) free(blocks[i]);
  /* The time is reported, not checked: fork and wait for a child that exits at once. */
  printf("api.fork_pages: ok (page faults a fork: %.1f in the parent, %.1f in the child before its "
         "first line; %.0f us a fork and wait)\n", per_fork, (double)child_faults / FORKS, us);
  return 0;
}
