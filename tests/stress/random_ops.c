/* SPDX-License-Identifier: MIT */
/*
 * stress.random: a seeded, deterministic random sequence of malloc, calloc, realloc,
 * aligned allocations (aligned_alloc, posix_memalign, memalign) and free over sizes from
 * 1 B to 64 MiB, log-uniform and biased toward small sizes. The slot table is the model:
 * every live block is filled with a pattern derived from its address and an id, and the
 * block is checked against the model before it is freed or reallocated (after realloc the
 * surviving prefix must still hold the OLD pattern; it is then rewritten).
 *
 * usage: random_ops [operations [seed [max_live_mib]]]
 */
#include "tt.h"

#include <inttypes.h>
#include <malloc.h>
#include <time.h>

enum { SLOTS = 8192 };

typedef struct slot {
  unsigned char *p;
  size_t size;      /* bytes requested (the pattern covers exactly these) */
  size_t alignment; /* alignment requested, 16 for the plain functions */
  uint64_t seed;    /* pattern seed, from the address and id at fill time */
} slot;

static slot slots[SLOTS];
static size_t live_bytes, max_live_bytes;
static uint64_t next_id = 1;
static uint64_t counts[8];
enum { OP_MALLOC, OP_CALLOC, OP_ALIGNED, OP_REALLOC_NULL, OP_REALLOC, OP_FREE };

/* 90% up to 1 KiB, 9% up to 128 KiB, 0.9% up to 1 MiB, 0.1% up to 64 MiB. */
static size_t random_size(tt_rng *rng) {
  uint64_t r = tt_rng_below(rng, 1000);
  if (r < 900) return tt_rng_log_uniform(rng, 1, 1024);
  if (r < 990) return tt_rng_log_uniform(rng, 1025, 128 << 10);
  if (r < 999) return tt_rng_log_uniform(rng, (128 << 10) + 1, 1 << 20);
  return tt_rng_log_uniform(rng, (1 << 20) + 1, (size_t)64 << 20);
}

static void check_new_block(const slot *s, const char *what) {
  TT_CHECKF(s->p != NULL, "%s(%zu) returned NULL", what, s->size);
  TT_CHECKF(tt_is_aligned(s->p, s->alignment > 16 ? s->alignment : 16),
            "%s(%zu, align %zu) = %p misaligned", what, s->size, s->alignment, (void *)s->p);
  TT_CHECKF(malloc_usable_size(s->p) >= s->size, "%s(%zu): usable size %zu", what, s->size,
            malloc_usable_size(s->p));
}

static void fill_slot(slot *s) {
  s->seed = tt_pattern_seed(s->p, next_id++);
  tt_fill(s->p, s->size, s->seed);
}

static void allocate(tt_rng *rng, slot *s) {
  s->size = random_size(rng);
  s->alignment = 16;
  if (live_bytes + s->size > max_live_bytes) s->size = 1 + s->size % 4096;
  uint64_t kind = tt_rng_below(rng, 100);
  if (kind < 55) {
    counts[OP_MALLOC]++;
    s->p = malloc(s->size);
    check_new_block(s, "malloc");
  } else if (kind < 75) {
    counts[OP_CALLOC]++;
    size_t count = s->size % 3 == 0 ? s->size / 3 : s->size;
    size_t elem = s->size % 3 == 0 ? 3 : 1;
    s->p = calloc(count, elem);
    check_new_block(s, "calloc");
    /* Zeroed: check the same regions the pattern will cover (all of a small block). */
    unsigned char *zero_probe = s->p;
    size_t limit = s->size <= TT_FULL_LIMIT ? s->size : TT_EDGE;
    for (size_t i = 0; i < limit; i++)
      TT_CHECKF(zero_probe[i] == 0, "calloc(%zu) byte %zu = %#x", s->size, i, zero_probe[i]);
    TT_CHECK(zero_probe[s->size - 1] == 0);
  } else if (kind < 95) {
    counts[OP_ALIGNED]++;
    s->alignment = (size_t)1 << tt_rng_below(rng, 13); /* 1 B .. 4 KiB, rarely more */
    if (tt_rng_below(rng, 50) == 0) s->alignment = (size_t)1 << (13 + tt_rng_below(rng, 9));
    switch (tt_rng_below(rng, 3)) {
    case 0:
      s->p = aligned_alloc(s->alignment, s->size);
      check_new_block(s, "aligned_alloc");
      break;
    case 1: {
      if (s->alignment < sizeof(void *)) s->alignment = sizeof(void *);
      void *p = NULL;
      int rc = posix_memalign(&p, s->alignment, s->size);
      TT_CHECKF(rc == 0, "posix_memalign(%zu, %zu) = %d", s->alignment, s->size, rc);
      s->p = p;
      check_new_block(s, "posix_memalign");
      break;
    }
    default:
      s->p = memalign(s->alignment, s->size);
      check_new_block(s, "memalign");
      break;
    }
  } else {
    counts[OP_REALLOC_NULL]++;
    s->p = realloc(NULL, s->size);
    check_new_block(s, "realloc(NULL)");
  }
  live_bytes += s->size;
  fill_slot(s);
}

static void verify_slot(const slot *s, const char *what) {
  TT_VERIFY(s->p, s->size, s->seed, what);
}

static void release(slot *s) {
  counts[OP_FREE]++;
  verify_slot(s, "before free");
  free(s->p);
  live_bytes -= s->size;
  s->p = NULL;
}

static void resize(tt_rng *rng, slot *s) {
  counts[OP_REALLOC]++;
  verify_slot(s, "before realloc");
  size_t new_size;
  switch (tt_rng_below(rng, 4)) {
  case 0: new_size = s->size + 1 + tt_rng_below(rng, 64); break; /* grow a little */
  case 1: new_size = s->size / 2 + 1; break;                     /* shrink */
  default: new_size = random_size(rng); break;                   /* anywhere */
  }
  if (live_bytes - s->size + new_size > max_live_bytes) new_size = 1 + s->size / 4;
  unsigned char *q = realloc(s->p, new_size);
  TT_CHECKF(q != NULL, "realloc(%zu -> %zu) failed", s->size, new_size);
  size_t kept = s->size < new_size ? s->size : new_size;
  TT_VERIFY_PREFIX(q, s->size, kept, s->seed, "after realloc (old pattern)");
  live_bytes = live_bytes - s->size + new_size;
  s->p = q;
  s->size = new_size;
  s->alignment = 16; /* realloc only promises the default alignment */
  check_new_block(s, "realloc");
  fill_slot(s);
}

int main(int argc, char **argv) {
  long operations = tt_arg_long(argc, argv, 1, 1000000);
  uint64_t seed = (uint64_t)tt_arg_long(argc, argv, 2, 20260101);
  max_live_bytes = (size_t)tt_arg_long(argc, argv, 3, 512) << 20;
  printf("stress.random: %ld operations, seed %" PRIu64 ", at most %zu MiB live\n", operations,
         seed, max_live_bytes >> 20);
  fflush(stdout);
  tt_require_tessera();

  tt_rng rng;
  tt_rng_seed(&rng, seed);
  clock_t start = clock();
  for (long op = 0; op < operations; op++) {
    /* Phases: the live set alternately fills up and drains, so both allocation from fresh
     * memory and reuse of freed memory are exercised at every size. */
    uint64_t free_bias = ((op / 200000) % 2 == 0) ? 40 : 60;
    slot *s = &slots[tt_rng_below(&rng, SLOTS)];
    if (s->p == NULL) {
      allocate(&rng, s);
    } else if (tt_rng_below(&rng, 100) < free_bias) {
      release(s);
    } else if (tt_rng_below(&rng, 100) < 50) {
      resize(&rng, s);
    } else {
      verify_slot(s, "spot check"); /* read without changing */
    }
  }
  size_t still_live = 0;
  for (size_t i = 0; i < SLOTS; i++)
    if (slots[i].p != NULL) {
      still_live++;
      release(&slots[i]);
    }
  TT_CHECK(live_bytes == 0);
  printf("stress.random: ok: malloc %" PRIu64 ", calloc %" PRIu64 ", aligned %" PRIu64
         ", realloc(NULL) %" PRIu64 ", realloc %" PRIu64 ", free %" PRIu64
         " (%zu freed at the end), %.1f s CPU\n",
         counts[OP_MALLOC], counts[OP_CALLOC], counts[OP_ALIGNED], counts[OP_REALLOC_NULL],
         counts[OP_REALLOC], counts[OP_FREE], still_live,
         (double)(clock() - start) / CLOCKS_PER_SEC);
  return 0;
}
