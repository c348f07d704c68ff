/* SPDX-License-Identifier: MIT */
/* Shared helpers for the tessera benchmark programs.
 *
 * Every program here links nothing but libc (and pthreads): the allocator under test is
 * injected with LD_PRELOAD by bench/run, so one binary measures glibc, jemalloc, tcmalloc,
 * mimalloc and tessera alike.
 *
 * Conventions of every program:
 * - arguments are `key=value` pairs (see arg_long), so bench/run can pass them uniformly;
 * - the program prints human-readable lines, and one machine-readable line
 *       RESULT key=value key=value ...
 *   that bench/run parses (ops/s, checksums, RSS samples);
 * - a run never exceeds its time limit (`limit=` seconds): it stops early and says
 *   `timeout=1` on the RESULT line rather than hang the suite.
 */
#ifndef TESSERA_BENCH_COMMON_H
#define TESSERA_BENCH_COMMON_H

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define BENCH_UNUSED __attribute__((unused))

/* Seconds on the monotonic clock. */
static BENCH_UNUSED double bench_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* `key=value` argument lookup; the default when the key is absent. Suffixes k, m, g
 * multiply by 10^3, 10^6, 10^9 (counts), K, M, G by 2^10, 2^20, 2^30 (bytes). */
static BENCH_UNUSED long long arg_long(int argc, char **argv, const char *key,
                                       long long fallback) {
  size_t n = strlen(key);
  for (int i = 1; i < argc; i++) {
    if (strncmp(argv[i], key, n) == 0 && argv[i][n] == '=') {
      char *end = NULL;
      double v = strtod(argv[i] + n + 1, &end);
      switch (end ? *end : 0) {
        case 'k': v *= 1e3; break;
        case 'm': v *= 1e6; break;
        case 'g': v *= 1e9; break;
        case 'K': v *= 1024.0; break;
        case 'M': v *= 1024.0 * 1024.0; break;
        case 'G': v *= 1024.0 * 1024.0 * 1024.0; break;
        default: break;
      }
      return (long long)v;
    }
  }
  return fallback;
}

static BENCH_UNUSED double arg_double(int argc, char **argv, const char *key,
                                      double fallback) {
  size_t n = strlen(key);
  for (int i = 1; i < argc; i++)
    if (strncmp(argv[i], key, n) == 0 && argv[i][n] == '=') return atof(argv[i] + n + 1);
  return fallback;
}

static BENCH_UNUSED const char *arg_str(int argc, char **argv, const char *key,
                                        const char *fallback) {
  size_t n = strlen(key);
  for (int i = 1; i < argc; i++)
    if (strncmp(argv[i], key, n) == 0 && argv[i][n] == '=') return argv[i] + n + 1;
  return fallback;
}

/* A small, fast, per-thread random generator (xorshift64*); never returns the same
 * sequence for two seeds, never needs locking. */
typedef struct {
  uint64_t s;
} bench_rng;

static BENCH_UNUSED void rng_seed(bench_rng *r, uint64_t seed) {
  /* splitmix64 scrambles small seeds into a well-mixed, non-zero state */
  uint64_t z = seed + 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  r->s = (z ^ (z >> 31)) | 1;
}

static BENCH_UNUSED uint64_t rng_next(bench_rng *r) {
  uint64_t x = r->s;
  x ^= x >> 12;
  x ^= x << 25;
  x ^= x >> 27;
  r->s = x;
  return x * 0x2545F4914F6CDD1Dull;
}

/* Uniform in [lo, hi]. */
static BENCH_UNUSED uint64_t rng_range(bench_rng *r, uint64_t lo, uint64_t hi) {
  return lo + rng_next(r) % (hi - lo + 1);
}

/* Log-uniform in [lo, hi]: as many sizes per doubling at every scale, the shape real
 * programs' size distributions roughly follow. */
static BENCH_UNUSED uint64_t rng_log_range(bench_rng *r, uint64_t lo, uint64_t hi) {
  int lo_bits = 63 - __builtin_clzll(lo), hi_bits = 63 - __builtin_clzll(hi);
  int b = lo_bits + (int)(rng_next(r) % (uint64_t)(hi_bits - lo_bits + 1));
  uint64_t base = 1ull << b;
  uint64_t v = base + rng_next(r) % base;
  return v < lo ? lo : v > hi ? hi : v;
}

/* Keep the compiler from eliding a malloc/free pair or the stores into a block: the
 * pointer "escapes" into an empty asm statement that may read all memory. */
static BENCH_UNUSED inline void bench_escape(void *p) { __asm__ volatile("" : : "r"(p) : "memory"); }

/* Resident set size of this process now, in bytes (from /proc/self/statm). */
static BENCH_UNUSED long long bench_rss(void) {
  FILE *f = fopen("/proc/self/statm", "r");
  long long pages_total = 0, pages_resident = 0;
  if (!f) return -1;
  if (fscanf(f, "%lld %lld", &pages_total, &pages_resident) != 2) pages_resident = -1;
  fclose(f);
  return pages_resident * sysconf(_SC_PAGESIZE);
}

/* Resident set size of this process now, in bytes, counted page by page: smaps_rollup
 * walks the page tables. statm's figure (bench_rss) and the peak getrusage reports come
 * from counters the kernel keeps per CPU and sums lazily, which can be off by 32 pages a
 * counter and CPU: steps of 100 KiB and more in a program of 1.5 MiB. Costs a walk of
 * the page tables: for small programs, once. -1 if unreadable. */
static BENCH_UNUSED long long bench_rss_exact(void) {
  FILE *f = fopen("/proc/self/smaps_rollup", "r");
  if (!f) return -1;
  char line[256];
  long long kib = -1;
  while (fgets(line, sizeof line, f))
    if (sscanf(line, "Rss: %lld kB", &kib) == 1) break;
  fclose(f);
  return kib < 0 ? -1 : kib * 1024;
}

/* Abort with a message when an allocation fails: a benchmark cannot go on without it. */
static BENCH_UNUSED void *bench_check(void *p, size_t size) {
  if (!p && size) {
    fprintf(stderr, "allocation of %zu bytes failed\n", size);
    exit(2);
  }
  return p;
}

/* Prints the RESULT line; the format is "key=value key=value". */
static BENCH_UNUSED void bench_result(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fputs("RESULT ", stdout);
  vprintf(fmt, ap);
  fputc('\n', stdout);
  va_end(ap);
  fflush(stdout);
}

#endif
