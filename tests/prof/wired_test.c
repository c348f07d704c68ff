/* SPDX-License-Identifier: MIT */
/*
 * The heap profiler wired into malloc (prof:true), against libtessera.so:
 *   wired_test DIR            hot() keeps 64 MiB, cold() 8 MiB, churn() allocates and
 *                             frees 32 MiB; writes DIR/prof.<pid>.0.u.{heap,pb.gz} with
 *                             prof.dump, then frees cold's blocks: at exit only hot()'s
 *                             and leak()'s blocks are live (the leak report's subject).
 *   wired_test DIR stress     threads allocating, a fork whose child allocates and
 *                             dumps, and a 1 kHz SIGPROF timer, all while sampling.
 *   wired_test DIR peak       the timeline's subject: 48 MiB up, held, freed, then idle.
 * Options: malloc_conf below plus TESSERA_CONF from the test script.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "tessera.h"

#define NOINLINE __attribute__((noinline))
#define BLOCK 1000 /* usable 1024 */

void hot(void);
void cold(void);
void churn(void);
void leak(void);

static void *hot_blocks[65536], *cold_blocks[8192], *leaked[1024];

NOINLINE void hot(void) {
  for (int i = 0; i < 65536; i++) {
    hot_blocks[i] = malloc(BLOCK);
    memset(hot_blocks[i], 1, 64);
  }
  __asm__ volatile("" ::: "memory");
}

NOINLINE void cold(void) {
  for (int i = 0; i < 8192; i++) cold_blocks[i] = calloc(1, BLOCK);
  __asm__ volatile("" ::: "memory");
}

NOINLINE void churn(void) {
  for (int i = 0; i < 65536; i++) {
    void *p = malloc(500);
    void *q = realloc(p, 480);
    free(q);
  }
  __asm__ volatile("" ::: "memory");
}

NOINLINE void leak(void) {
  for (int i = 0; i < 1024; i++) leaked[i] = malloc(4000);
  __asm__ volatile("" ::: "memory");
}

static int dump_to_prefix(void) { return tessera_ctl("prof.dump", NULL, NULL, NULL, 0); }

static void *worker(void *arg) {
  unsigned seed = (unsigned)(uintptr_t)arg;
  void *keep[256] = {0};
  for (int i = 0; i < 200000; i++) {
    unsigned k = (seed = seed * 1103515245u + 12345u) >> 8;
    free(keep[k % 256]);
    keep[k % 256] = malloc(16 + k % 3000);
  }
  for (int i = 0; i < 256; i++) free(keep[i]);
  return NULL;
}

static volatile sig_atomic_t ticks;
static void on_tick(int sig) { (void)sig; ticks++; }

static int stress(void) {
  struct sigaction sa;
  memset(&sa, 0, sizeof(sa));
  sa.sa_handler = on_tick;
  sa.sa_flags = SA_RESTART;
  sigaction(SIGPROF, &sa, NULL);
  struct itimerval it = {{0, 1000}, {0, 1000}};
  setitimer(ITIMER_PROF, &it, NULL);
  pthread_t t[3];
  for (int i = 0; i < 3; i++) pthread_create(&t[i], NULL, worker, (void *)(uintptr_t)(i + 1));
  for (int round = 0; round < 3; round++) {
    pid_t pid = fork();
    if (pid == 0) {
      hot();
      _exit(dump_to_prefix() == 0 ? 0 : 3);
    }
    int status = 0;
    if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
      fprintf(stderr, "child %d failed (status %d)\n", round, status);
      return 1;
    }
  }
  for (int i = 0; i < 3; i++) pthread_join(t[i], NULL);
  struct itimerval off = {{0, 0}, {0, 0}};
  setitimer(ITIMER_PROF, &off, NULL);
  if (dump_to_prefix() != 0) return 1;
  printf("stress: %d SIGPROF ticks, 3 forks, 3 threads: ok\n", (int)ticks);
  return 0;
}

static void sleep_ms(long ms) {
  struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
  nanosleep(&ts, NULL);
}

static int peak(void) {
  static void *blocks[48 * 16];
  sleep_ms(300);
  for (int i = 0; i < 48 * 16; i++) memset(blocks[i] = malloc(65536), 1, 65536);
  sleep_ms(500);
  for (int i = 0; i < 48 * 16; i++) free(blocks[i]);
  sleep_ms(500);
  return 0;
}

int main(int argc, char **argv) {
  if (argc < 2) return 2;
  if (argc > 2 && strcmp(argv[2], "stress") == 0) return stress();
  if (argc > 2 && strcmp(argv[2], "peak") == 0) return peak();
  bool prof = false;
  size_t len = sizeof(prof);
  if (tessera_ctl("opt.prof", &prof, &len, NULL, 0) != 0 || !prof) {
    fprintf(stderr, "run with prof:true\n");
    return 2;
  }
  hot();
  cold();
  churn();
  leak();
  if (dump_to_prefix() != 0) {
    fprintf(stderr, "prof.dump failed\n");
    return 1;
  }
  for (int i = 0; i < 8192; i++) free(cold_blocks[i]);
  return 0;
}
