/* SPDX-License-Identifier: MIT */
/*
 * tt.h: the small shared toolkit of tessera's API, stress and misuse tests.
 *
 * Header only (every function static inline) so each test is one source file plus this.
 * It gives:
 *   - TT_CHECK / TT_CHECKF: assert that prints file:line and exits with status 1
 *     (never abort(): misuse tests reserve SIGABRT for the allocator's own aborts);
 *   - tt_require_tessera(): fails the test unless the malloc family really is tessera's,
 *     whether the test is linked against libtessera or started with LD_PRELOAD;
 *   - tt_opaque(): hides a size from the optimiser (no folding of malloc(SIZE_MAX),
 *     no -Walloc-size-larger-than errors);
 *   - a seeded xoshiro256** generator;
 *   - address-and-id derived fill patterns for blocks, verified before free/realloc;
 *   - tt_watchdog(): runs the rest of the test in a child and fails it on a timeout, so a
 *     deadlock is reported as a failure instead of hanging the suite.
 */
#ifndef TT_H
#define TT_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include <dlfcn.h>
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

/* ---------------------------------------------------------------- failing a test */

__attribute__((noreturn, format(printf, 3, 4))) static inline void
tt_fail_at(const char *file, int line, const char *fmt, ...) {
  char buf[1024];
  va_list ap;
  va_start(ap, fmt);
  int n = snprintf(buf, sizeof buf, "FAIL %s:%d: ", file, line);
  if (n < 0) n = 0;
  vsnprintf(buf + n, sizeof buf - (size_t)n, fmt, ap);
  va_end(ap);
  /* write(2), not stdio: the failure may be detected in a forked child or a thread. */
  size_t len = strlen(buf);
  if (len + 1 < sizeof buf) buf[len++] = '\n';
  ssize_t ignored = write(2, buf, len);
  (void)ignored;
  _exit(1);
}

#define TT_FAIL(...) tt_fail_at(__FILE__, __LINE__, __VA_ARGS__)
#define TT_CHECK(cond)                                                     \
  do {                                                                     \
    if (!(cond)) TT_FAIL("check failed: %s", #cond);                       \
  } while (0)
#define TT_CHECKF(cond, ...)                                               \
  do {                                                                     \
    if (!(cond)) TT_FAIL(__VA_ARGS__);                                     \
  } while (0)

/* ---------------------------------------------------------------- are we on tessera? */

/*
 * Fails the test unless tessera provides malloc. Works in both ways a test runs:
 * linked against libtessera.so, or a plain binary started with LD_PRELOAD. The proof is
 * functional: tessera_version() is found, and an 8 MiB malloc() shows up in tessera's own
 * counters (tessera_get_counters), so the malloc this program calls is tessera's.
 * TT_ALLOW_GLIBC=1 in the environment turns the failure into a note; it exists only to
 * debug the tests themselves against glibc and must never be set by ctest.
 */
typedef struct tt_counters { /* the layout of tessera_counters in include/tessera.h */
  size_t allocated, active, metadata, resident, mapped, retained, dirty;
} tt_counters;

static inline void tt_require_tessera(void) {
  typedef const char *version_fn(void);
  typedef void counters_fn(tt_counters *);
  version_fn *version = (version_fn *)dlsym(RTLD_DEFAULT, "tessera_version");
  counters_fn *counters = (counters_fn *)dlsym(RTLD_DEFAULT, "tessera_get_counters");
  const char *why = "tessera_version or tessera_get_counters not found";
  if (version != NULL && counters != NULL) {
    const size_t probe = (size_t)8 << 20;
    tt_counters before, after;
    counters(&before);
    void *volatile p = malloc(probe);
    counters(&after);
    free(p);
    if (p != NULL && after.allocated >= before.allocated + probe) {
      const char *v = version();
      TT_CHECKF(v != NULL && v[0] != '\0', "tessera_version() returned an empty string");
      fprintf(stderr, "running on tessera %s\n", v);
      return;
    }
    why = "malloc(8 MiB) did not show up in tessera_get_counters(): malloc is not tessera's";
  }
  const char *allow = getenv("TT_ALLOW_GLIBC");
  if (allow != NULL && strcmp(allow, "1") == 0) {
    fprintf(stderr, "NOTE: not running on tessera (TT_ALLOW_GLIBC=1): testing the system malloc\n");
    return;
  }
  TT_FAIL("%s (link against libtessera or run with LD_PRELOAD)", why);
}

/* True when the test checks tessera (false only under TT_ALLOW_GLIBC=1 on glibc). */
static inline int tt_on_tessera(void) {
  return dlsym(RTLD_DEFAULT, "tessera_version") != NULL;
}

/* ---------------------------------------------------------------- small helpers */

/* A size the compiler cannot see through. */
static inline size_t tt_opaque(size_t x) {
  volatile size_t v = x;
  return v;
}

static inline int tt_is_aligned(const void *p, size_t alignment) {
  return ((uintptr_t)p & (alignment - 1)) == 0;
}

static inline long tt_arg_long(int argc, char **argv, int index, long fallback) {
  if (argc <= index) return fallback;
  char *end = NULL;
  long v = strtol(argv[index], &end, 0);
  TT_CHECKF(end != argv[index] && *end == '\0', "bad numeric argument '%s'", argv[index]);
  return v;
}

/* ---------------------------------------------------------------- random numbers */

/* xoshiro256**, seeded through splitmix64: fast, deterministic, good enough for tests. */
typedef struct tt_rng {
  uint64_t s[4];
} tt_rng;

static inline uint64_t tt_splitmix64(uint64_t *x) {
  uint64_t z = (*x += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

static inline void tt_rng_seed(tt_rng *r, uint64_t seed) {
  for (int i = 0; i < 4; i++) r->s[i] = tt_splitmix64(&seed);
}

static inline uint64_t tt_rng_next(tt_rng *r) {
  uint64_t *s = r->s;
  uint64_t result = ((s[1] * 5) << 7 | (s[1] * 5) >> 57) * 9;
  uint64_t t = s[1] << 17;
  s[2] ^= s[0];
  s[3] ^= s[1];
  s[1] ^= s[2];
  s[0] ^= s[3];
  s[2] ^= t;
  s[3] = (s[3] << 45) | (s[3] >> 19);
  return result;
}

/* Uniform in [0, n), n > 0 (the modulo bias is irrelevant here). */
static inline uint64_t tt_rng_below(tt_rng *r, uint64_t n) { return tt_rng_next(r) % n; }

/* Log-uniform in [lo, hi]: each power-of-two range gets the same share of the draws. */
static inline size_t tt_rng_log_uniform(tt_rng *r, size_t lo, size_t hi) {
  int lo_bit = 63 - __builtin_clzll((unsigned long long)lo);
  int hi_bit = 63 - __builtin_clzll((unsigned long long)hi);
  int bit = lo_bit + (int)tt_rng_below(r, (uint64_t)(hi_bit - lo_bit + 1));
  size_t base = (size_t)1 << bit;
  size_t v = base + (size_t)tt_rng_below(r, base); /* [2^bit, 2^(bit+1)) */
  if (v < lo) v = lo;
  if (v > hi) v = hi;
  return v;
}

/* ---------------------------------------------------------------- fill patterns */

/*
 * A block's pattern is a function of a 64-bit seed (derived from the block's address and
 * an id the test assigns) and of the offset. Blocks up to TT_FULL_LIMIT bytes are filled
 * completely. Larger blocks get their first and last TT_EDGE bytes plus TT_PROBE bytes
 * every TT_STRIDE bytes, so multi-MiB blocks cost microseconds instead of milliseconds
 * while every page group and both ends are still checked.
 */
enum { TT_FULL_LIMIT = 16384, TT_EDGE = 4096, TT_STRIDE = 16384, TT_PROBE = 64 };

static inline uint64_t tt_pattern_seed(const void *addr, uint64_t id) {
  uint64_t x = (uint64_t)(uintptr_t)addr ^ (id * 0xD6E8FEB86659FD93ull);
  return tt_splitmix64(&x);
}

static inline uint64_t tt_pattern_word(uint64_t seed, size_t word_index) {
  uint64_t z = seed + (uint64_t)word_index * 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 29)) * 0xBF58476D1CE4E5B9ull;
  return z ^ (z >> 32);
}

/*
 * Calls fn for each pattern region [begin, end) of a block filled as n bytes, clipped to the
 * first `limit` bytes (begin % 8 == 0). The clipping lets a test check the surviving prefix
 * of a block that realloc shrank or moved: the regions are those of the original fill.
 */
typedef int tt_region_fn(unsigned char *p, size_t begin, size_t end, uint64_t seed, void *arg);

static inline int tt_clip_region(unsigned char *p, size_t begin, size_t end, size_t limit,
                                 uint64_t seed, tt_region_fn *fn, void *arg) {
  if (end > limit) end = limit;
  return begin < end ? fn(p, begin, end, seed, arg) : 0;
}

static inline int tt_for_regions(unsigned char *p, size_t n, size_t limit, uint64_t seed,
                                 tt_region_fn *fn, void *arg) {
  if (n <= TT_FULL_LIMIT) return tt_clip_region(p, 0, n, limit, seed, fn, arg);
  int r = tt_clip_region(p, 0, TT_EDGE, limit, seed, fn, arg);
  for (size_t off = TT_STRIDE; r == 0 && off + TT_PROBE <= n - TT_EDGE; off += TT_STRIDE)
    r = tt_clip_region(p, off, off + TT_PROBE, limit, seed, fn, arg);
  if (r) return r;
  size_t tail = (n - TT_EDGE) & ~(size_t)7;
  return tt_clip_region(p, tail, n, limit, seed, fn, arg);
}

static inline int tt_fill_region(unsigned char *p, size_t begin, size_t end, uint64_t seed,
                                 void *arg) {
  (void)arg;
  for (size_t i = begin; i < end; i += 8) {
    uint64_t w = tt_pattern_word(seed, i / 8);
    size_t k = end - i < 8 ? end - i : 8;
    memcpy(p + i, &w, k);
  }
  return 0;
}

static inline int tt_check_region(unsigned char *p, size_t begin, size_t end, uint64_t seed,
                                  void *arg) {
  size_t *bad_offset = (size_t *)arg;
  for (size_t i = begin; i < end; i += 8) {
    uint64_t w = tt_pattern_word(seed, i / 8);
    size_t k = end - i < 8 ? end - i : 8;
    if (memcmp(p + i, &w, k) != 0) {
      for (size_t j = 0; j < k; j++)
        if (p[i + j] != ((unsigned char *)&w)[j]) {
          *bad_offset = i + j;
          break;
        }
      return 1;
    }
  }
  return 0;
}

static inline void tt_fill(void *p, size_t n, uint64_t seed) {
  tt_for_regions((unsigned char *)p, n, n, seed, tt_fill_region, NULL);
}

/*
 * Checks the first `limit` bytes of a block that was filled with tt_fill(p, filled, seed)
 * (the data may since have moved, by realloc). Returns (size_t)-1 if intact, else the first
 * bad offset.
 */
static inline size_t tt_verify_prefix(const void *p, size_t filled, size_t limit,
                                      uint64_t seed) {
  size_t bad = (size_t)-1;
  tt_for_regions((unsigned char *)(uintptr_t)p, filled, limit, seed, tt_check_region, &bad);
  return bad;
}

static inline size_t tt_verify(const void *p, size_t n, uint64_t seed) {
  return tt_verify_prefix(p, n, n, seed);
}

#define TT_VERIFY(p, n, seed, what) TT_VERIFY_PREFIX(p, n, n, seed, what)
/* After realloc: the block was filled as `filled` bytes, `limit` of them survive. */
#define TT_VERIFY_PREFIX(p, filled, limit, seed, what)                                   \
  do {                                                                                   \
    size_t tt_bad_ = tt_verify_prefix((p), (filled), (limit), (seed));                   \
    TT_CHECKF(tt_bad_ == (size_t)-1, "%s: block %p of %zu bytes corrupted at offset %zu", \
              (what), (void *)(p), (size_t)(limit), tt_bad_);                                \
  } while (0)

/* ---------------------------------------------------------------- watchdog */

static volatile sig_atomic_t tt_watchdog_fired;
static inline void tt_watchdog_alarm(int sig) {
  (void)sig;
  tt_watchdog_fired = 1;
}

/*
 * Runs the rest of the test in a child process; the parent waits at most `seconds`.
 * On timeout the child is killed and the test fails with "TIMEOUT (deadlock?)".
 * Returns in the child only; the parent exits with the child's verdict.
 */
static inline void tt_watchdog(unsigned seconds, const char *what) {
  fflush(NULL);
  pid_t child = fork();
  TT_CHECKF(child >= 0, "fork: %s", strerror(errno));
  if (child == 0) return;

  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = tt_watchdog_alarm; /* no SA_RESTART: waitpid must return EINTR */
  sigaction(SIGALRM, &sa, NULL);
  alarm(seconds);
  int status = 0;
  for (;;) {
    pid_t r = waitpid(child, &status, 0);
    if (r == child) break;
    if (r < 0 && errno == EINTR && tt_watchdog_fired) {
      kill(child, SIGKILL);
      waitpid(child, &status, 0);
      fprintf(stderr, "FAIL %s: TIMEOUT after %u s (deadlock?)\n", what, seconds);
      _exit(1);
    }
    TT_CHECKF(r >= 0 || errno == EINTR, "waitpid: %s", strerror(errno));
  }
  if (WIFEXITED(status)) _exit(WEXITSTATUS(status));
  fprintf(stderr, "FAIL %s: test process killed by signal %d (%s)\n", what, WTERMSIG(status),
          strsignal(WTERMSIG(status)));
  _exit(1);
}

/* The process's peak resident memory, in KiB. */
static inline long tt_peak_rss_kib(void) {
  struct rusage u;
  TT_CHECK(getrusage(RUSAGE_SELF, &u) == 0);
  return u.ru_maxrss;
}

#endif /* TT_H */
