/* SPDX-License-Identifier: MIT */
/*
 * stress.fork_threads: the main thread forks repeatedly while worker threads allocate and
 * free as fast as they can. Each child must be able to malloc, calloc, realloc and free
 * (also from a new thread of its own) and exit 0. A child that hangs (a lock held by a
 * thread that does not exist in the child) is killed by its alarm and fails the test; the
 * whole test runs under a watchdog.
 *
 * It forks first while it has one thread (tessera registers fork's handlers only when a
 * second thread takes a lock), then starts the workers and forks again: the handlers
 * must be in place from the first worker on. The watchdog runs all of it in a child of
 * a single-threaded parent, so the handlers are registered in a child too.
 *
 * usage: fork_threads [forks [threads]]
 */
#include "tt.h"

#include <malloc.h>
#include <pthread.h>
#include <stdatomic.h>

static atomic_int stop;
static atomic_long worker_ops;

static void *worker(void *arg) {
  tt_rng rng;
  tt_rng_seed(&rng, (uint64_t)(uintptr_t)arg);
  enum { LIVE = 64 };
  unsigned char *live[LIVE] = {0};
  size_t sizes[LIVE] = {0};
  while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
    size_t i = (size_t)tt_rng_below(&rng, LIVE);
    if (live[i] != NULL) {
      TT_VERIFY(live[i], sizes[i], tt_pattern_seed(live[i], i), "worker block");
      free(live[i]);
    }
    sizes[i] = tt_rng_below(&rng, 50) == 0 ? tt_rng_log_uniform(&rng, 16384, 2 << 20)
                                           : tt_rng_log_uniform(&rng, 1, 4096);
    live[i] = malloc(sizes[i]);
    TT_CHECK(live[i] != NULL);
    tt_fill(live[i], sizes[i], tt_pattern_seed(live[i], i));
    atomic_fetch_add_explicit(&worker_ops, 1, memory_order_relaxed);
  }
  for (size_t i = 0; i < LIVE; i++) free(live[i]);
  return NULL;
}

/* What a child does: real allocator work, on the main thread and on a new thread. */
static void *child_work(void *arg) {
  uint64_t salt = (uint64_t)(uintptr_t)arg;
  enum { N = 100 };
  unsigned char *blocks[N];
  size_t sizes[N];
  for (size_t i = 0; i < N; i++) {
    sizes[i] = 1 + (i * 97 + salt) % (i % 10 == 0 ? 100000 : 3000);
    blocks[i] = (i % 3 == 0) ? calloc(1, sizes[i]) : malloc(sizes[i]);
    if (blocks[i] == NULL) _exit(3);
    tt_fill(blocks[i], sizes[i], tt_pattern_seed(blocks[i], i));
  }
  for (size_t i = 0; i < N; i++) {
    if (tt_verify(blocks[i], sizes[i], tt_pattern_seed(blocks[i], i)) != (size_t)-1) _exit(4);
    unsigned char *q = realloc(blocks[i], sizes[i] * 2);
    if (q == NULL) _exit(5);
    free(q);
  }
  return NULL;
}

/* Forks once and checks that the child did its work and exited 0. */
static void fork_and_check(int i) {
  pid_t pid = fork();
  TT_CHECKF(pid >= 0, "fork %d: %s", i, strerror(errno));
  if (pid == 0) {
    alarm(20); /* a deadlocked child dies by SIGALRM and fails the check below */
    child_work((void *)(uintptr_t)i);
    pthread_t t;
    if (pthread_create(&t, NULL, child_work, (void *)(uintptr_t)(i + 1)) != 0) _exit(6);
    pthread_join(t, NULL);
    _exit(0);
  }
  int status;
  TT_CHECK(waitpid(pid, &status, 0) == pid);
  TT_CHECKF(WIFEXITED(status) && WEXITSTATUS(status) == 0,
            "child %d of fork %d: %s %d (exit codes: 3/5 allocation failed, 4 corruption; "
            "signal 14 = SIGALRM: it hung)",
            pid, i, WIFEXITED(status) ? "exit status" : "killed by signal",
            WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
}

int main(int argc, char **argv) {
  int forks = (int)tt_arg_long(argc, argv, 1, 300);
  int nthreads = (int)tt_arg_long(argc, argv, 2, 4);
  tt_require_tessera();
  tt_watchdog(120, "stress.fork_threads");

  pthread_t threads[256];
  TT_CHECK(nthreads > 0 && nthreads <= 256);
  child_work((void *)(uintptr_t)7); /* some blocks of the main thread's own */
  for (int i = 0; i < 10; i++) fork_and_check(-1 - i); /* one thread: no handlers yet */
  for (int t = 0; t < nthreads; t++)
    TT_CHECK(pthread_create(&threads[t], NULL, worker, (void *)(uintptr_t)(t + 1)) == 0);

  for (int i = 0; i < forks; i++) {
    /* Let the workers get going again between forks. */
    long target = atomic_load(&worker_ops) + 200;
    while (atomic_load(&worker_ops) < target) sched_yield();

    fork_and_check(i);
  }
  atomic_store(&stop, 1);
  for (int t = 0; t < nthreads; t++) pthread_join(threads[t], NULL);
  printf("stress.fork_threads: ok: %d forks, %d threads, %ld worker operations\n", forks,
         nthreads, atomic_load(&worker_ops));
  return 0;
}
