/* SPDX-License-Identifier: MIT */
/*
 * The memory-return measurement: how much memory comes back, and when.
 *
 * Builds about 1.2 GiB of mixed blocks (by count 90% small, 16 B-4 KiB; 10% large,
 * 16-272 KiB; sizes log-uniform, every byte written), frees 90% of them, then idles for
 * `idle` seconds sampling RSS (/proc/self/statm) every 100 ms. Shapes:
 *   shape=last       the survivors are the last tenth allocated (everything else can go back)
 *   shape=scattered  the survivors are a random tenth (fragmentation limits what can go back)
 * activity=1 makes one malloc(64)/free pair just before each sample (an idle server's
 * timer), for allocators that return memory on their next call, and records the longest
 * single malloc call.
 *
 * Prints "t_ms rss_mib" lines, then a summary line:
 *   SUMMARY live_mib=... peak_mib=... after_free_mib=... end_mib=... max_malloc_us=...
 *
 *   decay_rss shape=last idle=12 activity=0
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static double rss_mib(void) {
  FILE *f = fopen("/proc/self/statm", "r");
  unsigned long size = 0, resident = 0;
  if (f == NULL || fscanf(f, "%lu %lu", &size, &resident) != 2) exit(2);
  fclose(f);
  return (double)resident * (double)sysconf(_SC_PAGESIZE) / (1024.0 * 1024.0);
}

static uint64_t rng = 0x2545F4914F6CDD1Dull;
static uint64_t next_rand(void) {
  rng ^= rng >> 12;
  rng ^= rng << 25;
  rng ^= rng >> 27;
  return rng * 2685821657736338717ull;
}

/* Log-uniform in [lo, hi]. */
static size_t log_uniform(size_t lo, size_t hi) {
  double u = (double)(next_rand() >> 11) / 9007199254740992.0;
  double v = (double)lo * __builtin_pow((double)hi / (double)lo, u);
  return (size_t)v;
}

static const char *arg(int argc, char **argv, const char *key, const char *def) {
  size_t n = strlen(key);
  for (int i = 1; i < argc; i++)
    if (strncmp(argv[i], key, n) == 0 && argv[i][n] == '=') return argv[i] + n + 1;
  return def;
}

int main(int argc, char **argv) {
  const char *shape = arg(argc, argv, "shape", "last");
  double idle = atof(arg(argc, argv, "idle", "12"));
  int activity = atoi(arg(argc, argv, "activity", "0"));
  size_t target = (size_t)atof(arg(argc, argv, "mib", "1228")) << 20;
  size_t cap = 1 << 20, n = 0, total = 0;
  void **blocks = malloc(cap * sizeof(void *));
  size_t *sizes = malloc(cap * sizeof(size_t));
  while (total < target) {
    if (n == cap) {
      cap *= 2;
      blocks = realloc(blocks, cap * sizeof(void *));
      sizes = realloc(sizes, cap * sizeof(size_t));
    }
    size_t size = next_rand() % 10 == 0 ? log_uniform(16 << 10, 272 << 10) : log_uniform(16, 4096);
    blocks[n] = malloc(size);
    if (blocks[n] == NULL) return 3;
    memset(blocks[n], (int)n, size);
    sizes[n] = size;
    total += size;
    n++;
  }
  double peak = rss_mib();
  size_t live = 0;
  int scattered = strcmp(shape, "scattered") == 0;
  for (size_t i = 0; i < n; i++) {
    int keep = scattered ? next_rand() % 10 == 0 : i >= n - n / 10;
    if (keep) live += sizes[i];
    else {
      free(blocks[i]);
      blocks[i] = NULL;
    }
  }
  double after_free = rss_mib(), end = after_free, max_malloc = 0;
  double start = now_s();
  printf("0 %.1f\n", after_free);
  for (int k = 1; k <= (int)(idle * 10); k++) {
    double wake = start + k * 0.1;
    double t;
    while ((t = now_s()) < wake) {
      struct timespec ts = {0, (long)((wake - t) * 1e9)};
      nanosleep(&ts, NULL);
    }
    if (activity) {
      double t0 = now_s();
      void *p = malloc(64);
      double dt = now_s() - t0;
      if (dt > max_malloc) max_malloc = dt;
      free(p);
    }
    end = rss_mib();
    printf("%d %.1f\n", k * 100, end);
  }
  unsigned long check = 0;
  for (size_t i = 0; i < n; i++)
    if (blocks[i] != NULL) check += ((unsigned char *)blocks[i])[sizes[i] - 1];
  printf("SUMMARY live_mib=%.1f peak_mib=%.1f after_free_mib=%.1f end_mib=%.1f max_malloc_us=%.1f check=%lu\n",
         (double)live / 1048576.0, peak, after_free, end, max_malloc * 1e6, check);
  return 0;
}
