/* SPDX-License-Identifier: MIT */
/*
 * stress.fork_stdio: fork while other threads are inside malloc AND inside stdio (which
 * allocates: fopen, fprintf into fresh buffers, open_memstream, snprintf into malloc'd
 * strings). The child mallocs, printfs and exits normally (exit() flushes every stream).
 * jemalloc and tcmalloc deadlock here; glibc and mimalloc do not. A deadlock fails the test
 * through the child's alarm and the watchdog instead of hanging it.
 *
 * usage: fork_stdio [forks [threads]]
 */
#include "tt.h"

#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>

static atomic_int stop;
static atomic_long worker_rounds;

static void *stdio_worker(void *arg) {
  long id = (long)(uintptr_t)arg;
  while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
    FILE *f = fopen("/dev/null", "w");
    TT_CHECK(f != NULL);
    for (int i = 0; i < 20; i++) fprintf(f, "worker %ld line %d %s\n", id, i, "payload");
    fclose(f);

    char *text = NULL;
    size_t len = 0;
    FILE *mem = open_memstream(&text, &len);
    TT_CHECK(mem != NULL);
    for (int i = 0; i < 50; i++) fprintf(mem, "%d:%ld;", i, id);
    fclose(mem);
    TT_CHECK(len > 0 && text[0] == '0');
    free(text);

    char *s = malloc(256);
    TT_CHECK(s != NULL);
    snprintf(s, 256, "%ld-%s-%f", id, "x", 3.25);
    TT_CHECK(strncmp(s, "", 1) != 0);
    free(s);
    atomic_fetch_add_explicit(&worker_rounds, 1, memory_order_relaxed);
  }
  return NULL;
}

static void *malloc_worker(void *arg) {
  tt_rng rng;
  tt_rng_seed(&rng, (uint64_t)(uintptr_t)arg);
  void *live[32] = {0};
  while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
    size_t i = (size_t)tt_rng_below(&rng, 32);
    free(live[i]);
    live[i] = malloc(tt_rng_log_uniform(&rng, 1, 65536));
    TT_CHECK(live[i] != NULL);
    atomic_fetch_add_explicit(&worker_rounds, 1, memory_order_relaxed);
  }
  for (int i = 0; i < 32; i++) free(live[i]);
  return NULL;
}

int main(int argc, char **argv) {
  int forks = (int)tt_arg_long(argc, argv, 1, 300);
  int nthreads = (int)tt_arg_long(argc, argv, 2, 4);
  tt_require_tessera();
  tt_watchdog(120, "stress.fork_stdio");

  /* Children printf to stdout; send it to /dev/null so the test log stays readable (the
   * printf still formats, buffers and writes). Results go to stderr. */
  int null_fd = open("/dev/null", O_WRONLY);
  TT_CHECK(null_fd >= 0 && dup2(null_fd, 1) == 1);
  close(null_fd);

  pthread_t threads[64];
  TT_CHECK(nthreads >= 2 && nthreads <= 64);
  for (int t = 0; t < nthreads; t++)
    TT_CHECK(pthread_create(&threads[t], NULL, (t % 2) ? malloc_worker : stdio_worker,
                            (void *)(uintptr_t)(t + 1)) == 0);

  for (int i = 0; i < forks; i++) {
    long target = atomic_load(&worker_rounds) + 20;
    while (atomic_load(&worker_rounds) < target) sched_yield();
    pid_t pid = fork();
    TT_CHECKF(pid >= 0, "fork: %s", strerror(errno));
    if (pid == 0) {
      alarm(20);
      char *p = malloc(1000);
      if (p == NULL) _exit(3);
      snprintf(p, 1000, "child %d", i);
      printf("%s says hello %d\n", p, getpid());
      FILE *f = fopen("/dev/null", "w");
      if (f == NULL) _exit(4);
      fprintf(f, "%s\n", p);
      fclose(f);
      free(p);
      exit(0); /* flushes stdout: takes the stdio locks the workers were using */
    }
    int status;
    TT_CHECK(waitpid(pid, &status, 0) == pid);
    TT_CHECKF(WIFEXITED(status) && WEXITSTATUS(status) == 0,
              "child of fork %d: %s %d (signal 14 = SIGALRM: the child deadlocked)", i,
              WIFEXITED(status) ? "exit status" : "killed by signal",
              WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
  }
  atomic_store(&stop, 1);
  for (int t = 0; t < nthreads; t++) pthread_join(threads[t], NULL);
  fprintf(stderr, "stress.fork_stdio: ok: %d forks while %d threads ran %ld rounds\n", forks,
          nthreads, atomic_load(&worker_rounds));
  return 0;
}
