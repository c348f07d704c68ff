/* SPDX-License-Identifier: MIT */
/*
 * stress.api_mix: threads call every allocation entry point in a random mix and trade
 * blocks through a shared table, so that every way of allocating meets every way of
 * freeing, resizing and asking a block's size, often from another thread: malloc, calloc,
 * posix_memalign, aligned_alloc, memalign, mallocx (alignment, MALLOCX_ZERO); realloc,
 * rallocx, xallocx; free, free_sized, free_aligned_sized, sdallocx, dallocx; and
 * malloc_usable_size on every block it checks. Sizes from 1 B to 32 MiB, biased toward
 * small. Each block holds a pattern at its head and its tail, checked before every resize
 * and free; calloc'd and MALLOCX_ZERO blocks are checked to be zero first. A fork in the
 * middle checks that the child can allocate and read a live block.
 *
 * The jemalloc-style functions are looked up at run time (the plain executable runs on
 * any malloc): without them, those operations fall back to the standard ones.
 *
 * usage: api_mix [threads [steps_per_thread [rounds [seed]]]]
 */
#include "tt.h"

#include <malloc.h>
#include <pthread.h>
#include <stdatomic.h>
#include <sys/wait.h>

enum { TABLE = 2048, LOCAL = 64, HEAD = 48, TAIL = 32 };
#define MALLOCX_ZERO_FLAG 0x40

typedef void *mallocx_fn(size_t, int);
typedef void *rallocx_fn(void *, size_t, int);
typedef size_t xallocx_fn(void *, size_t, size_t, int);
typedef void sdallocx_fn(void *, size_t, int);
typedef void dallocx_fn(void *, int);
typedef void free_sized_fn(void *, size_t);
typedef void free_aligned_sized_fn(void *, size_t, size_t);
static mallocx_fn *mallocx_p;
static rallocx_fn *rallocx_p;
static xallocx_fn *xallocx_p;
static sdallocx_fn *sdallocx_p;
static dallocx_fn *dallocx_p;
static free_sized_fn *free_sized_p;
static free_aligned_sized_fn *free_aligned_sized_p;

/* How a block was made, which decides how it may be freed with its size. */
typedef enum { MADE_PLAIN, MADE_MALLOCX_ALIGNED, MADE_ALIGNED_ALLOC, MADE_OTHER } made_t;

typedef struct blk {
  unsigned char *p;
  size_t size;   /* bytes the pattern covers: the last size asked for */
  int lg_align;  /* mallocx's alignment flag (MADE_MALLOCX_ALIGNED), log2 for aligned_alloc */
  made_t made;
  uint8_t tag;
} blk;

static _Atomic(blk *) table[TABLE];
static long steps_per_thread;
static uint64_t base_seed;

static size_t random_size(tt_rng *r) {
  uint64_t x = tt_rng_below(r, 1000);
  if (x < 850) return tt_rng_log_uniform(r, 1, 1024);
  if (x < 985) return tt_rng_log_uniform(r, 1025, 128 << 10);
  if (x < 999) return tt_rng_log_uniform(r, (128 << 10) + 1, 2 << 20);
  return tt_rng_log_uniform(r, (2 << 20) + 1, 32 << 20);
}

static void fill(blk *b) {
  size_t head = b->size < HEAD ? b->size : HEAD;
  memset(b->p, b->tag, head);
  if (b->size >= HEAD + TAIL) memset(b->p + b->size - TAIL, b->tag ^ 0x5a, TAIL);
}

static void check(const blk *b, const char *when) {
  size_t head = b->size < HEAD ? b->size : HEAD;
  for (size_t i = 0; i < head; i++)
    TT_CHECKF(b->p[i] == b->tag, "%s: block %p of %zu bytes, byte %zu is %#x, want %#x", when, (void *)b->p, b->size,
              i, b->p[i], b->tag);
  if (b->size >= HEAD + TAIL)
    for (size_t i = b->size - TAIL; i < b->size; i++)
      TT_CHECKF(b->p[i] == (uint8_t)(b->tag ^ 0x5a), "%s: block %p of %zu bytes, tail byte %zu overwritten", when,
                (void *)b->p, b->size, i);
  TT_CHECKF(malloc_usable_size(b->p) >= b->size, "%s: malloc_usable_size %zu < %zu", when, malloc_usable_size(b->p),
            b->size);
}

static void check_zero(const unsigned char *p, size_t size, const char *what) {
  for (size_t i = 0; i < size; i += 4093) TT_CHECKF(p[i] == 0, "%s of %zu bytes: byte %zu is %#x", what, size, i, p[i]);
  TT_CHECKF(p[size - 1] == 0, "%s of %zu bytes: last byte not zero", what, size);
}

static blk *make(tt_rng *r) {
  blk *b = malloc(sizeof *b);
  TT_CHECK(b != NULL);
  b->size = random_size(r);
  b->tag = (uint8_t)tt_rng_next(r);
  b->lg_align = 0;
  b->made = MADE_PLAIN;
  switch (tt_rng_below(r, 8)) {
  case 0:
    b->p = calloc(1, b->size);
    if (b->p != NULL) check_zero(b->p, b->size, "calloc");
    break;
  case 1: {
    size_t align = (size_t)1 << (3 + tt_rng_below(r, 10)); /* 8 B .. 4 KiB */
    void *p = NULL;
    TT_CHECK(posix_memalign(&p, align, b->size) == 0);
    TT_CHECKF(tt_is_aligned(p, align), "posix_memalign(%zu): %p", align, p);
    b->p = p;
    b->made = MADE_OTHER;
    break;
  }
  case 2:
    b->lg_align = 6;
    b->size = (b->size + 63) & ~(size_t)63; /* aligned_alloc wants a multiple of the alignment */
    b->p = aligned_alloc(64, b->size);
    if (b->p != NULL) TT_CHECK(tt_is_aligned(b->p, 64));
    b->made = MADE_ALIGNED_ALLOC;
    break;
  case 3:
    b->p = memalign(256, b->size);
    if (b->p != NULL) TT_CHECK(tt_is_aligned(b->p, 256));
    b->made = MADE_OTHER;
    break;
  case 4:
    if (mallocx_p != NULL) {
      int lg = 1 + (int)tt_rng_below(r, 13); /* 2 B .. 8 KiB */
      b->p = mallocx_p(b->size, lg);
      if (b->p != NULL) TT_CHECKF(tt_is_aligned(b->p, (size_t)1 << lg), "mallocx(align %d): %p", lg, (void *)b->p);
      b->lg_align = lg;
      b->made = MADE_MALLOCX_ALIGNED;
      break;
    }
    /* fall through */
  case 5:
    if (mallocx_p != NULL) {
      b->p = mallocx_p(b->size, MALLOCX_ZERO_FLAG);
      if (b->p != NULL) check_zero(b->p, b->size, "mallocx(MALLOCX_ZERO)");
      break;
    }
    /* fall through */
  default:
    b->p = malloc(b->size);
  }
  TT_CHECKF(b->p != NULL, "allocation of %zu bytes failed", b->size);
  fill(b);
  return b;
}

static void release(blk *b, tt_rng *r) {
  check(b, "before free");
  uint64_t how = tt_rng_below(r, 5);
  if (how == 1 && b->made == MADE_PLAIN && free_sized_p != NULL) free_sized_p(b->p, b->size);
  else if (how == 1 && b->made == MADE_ALIGNED_ALLOC && free_aligned_sized_p != NULL)
    free_aligned_sized_p(b->p, (size_t)1 << b->lg_align, b->size);
  else if (how == 2 && b->made == MADE_PLAIN && sdallocx_p != NULL) sdallocx_p(b->p, b->size, 0);
  else if (how == 2 && b->made == MADE_MALLOCX_ALIGNED && sdallocx_p != NULL) sdallocx_p(b->p, b->size, b->lg_align);
  else if (how == 3 && dallocx_p != NULL) dallocx_p(b->p, 0);
  else free(b->p);
  free(b);
}

/* A new size for b: realloc, rallocx (keeping its alignment) or xallocx (in place, or not
 * at all); the common prefix must survive. */
static void resize(blk *b, tt_rng *r) {
  check(b, "before resize");
  size_t size = random_size(r), keep = size < b->size ? size : b->size;
  unsigned char head[HEAD];
  size_t head_n = keep < HEAD ? keep : HEAD;
  memcpy(head, b->p, head_n);
  uint64_t how = tt_rng_below(r, 3);
  if (how == 2 && xallocx_p != NULL) {
    size_t got = xallocx_p(b->p, size, 0, b->made == MADE_MALLOCX_ALIGNED ? b->lg_align : 0);
    if (got < size) return; /* not resized: nothing changed */
    b->made = MADE_OTHER;     /* its usable size is got, not a class of size */
  } else if (how >= 1 && rallocx_p != NULL) {
    unsigned char *q = rallocx_p(b->p, size, b->made == MADE_MALLOCX_ALIGNED ? b->lg_align : 0);
    TT_CHECKF(q != NULL, "rallocx to %zu bytes failed", size);
    if (b->made == MADE_MALLOCX_ALIGNED) TT_CHECK(tt_is_aligned(q, (size_t)1 << b->lg_align));
    else b->made = b->made == MADE_PLAIN ? MADE_PLAIN : MADE_OTHER;
    b->p = q;
  } else {
    unsigned char *q = realloc(b->p, size);
    TT_CHECKF(q != NULL, "realloc to %zu bytes failed", size);
    b->p = q;
    b->made = MADE_PLAIN;
    b->lg_align = 0;
  }
  TT_CHECKF(memcmp(b->p, head, head_n) == 0, "resize %zu -> %zu lost the block's first bytes", b->size, size);
  b->size = size;
  fill(b);
}

static void *worker(void *arg) {
  tt_rng r;
  tt_rng_seed(&r, base_seed + (uint64_t)(uintptr_t)arg * 7919);
  blk *local[LOCAL] = {0};
  for (long step = 0; step < steps_per_thread; step++) {
    uint64_t x = tt_rng_below(&r, 100);
    unsigned i = (unsigned)tt_rng_below(&r, LOCAL);
    if (x < 40) { /* replace one of the thread's own */
      if (local[i] != NULL) release(local[i], &r);
      local[i] = make(&r);
    } else if (x < 55) {
      if (local[i] != NULL) resize(local[i], &r);
    } else if (x < 90) { /* trade through the table: the displaced block is another thread's */
      blk *old = atomic_exchange(&table[tt_rng_below(&r, TABLE)], make(&r));
      if (old != NULL) release(old, &r);
    } else { /* take one out, resize it here, put it back elsewhere */
      blk *old = atomic_exchange(&table[tt_rng_below(&r, TABLE)], NULL);
      if (old != NULL) {
        resize(old, &r);
        blk *displaced = atomic_exchange(&table[tt_rng_below(&r, TABLE)], old);
        if (displaced != NULL) release(displaced, &r);
      }
    }
  }
  for (unsigned i = 0; i < LOCAL; i++)
    if (local[i] != NULL) release(local[i], &r);
  return NULL;
}

/* A child forked while the table is full: it allocates, frees and reads a live block. */
static void fork_check(void) {
  pid_t pid = fork();
  TT_CHECK(pid >= 0);
  if (pid == 0) {
    for (int i = 0; i < 1000; i++) free(malloc((size_t)i * 37 + 1));
    for (unsigned i = 0; i < TABLE; i++) {
      blk *b = atomic_load(&table[i]);
      if (b != NULL) check(b, "in a forked child");
    }
    _exit(0);
  }
  int status = 0;
  TT_CHECK(waitpid(pid, &status, 0) == pid);
  TT_CHECKF(WIFEXITED(status) && WEXITSTATUS(status) == 0, "the forked child failed (status %#x)", status);
}

static void look_up_extensions(void) {
  mallocx_p = (mallocx_fn *)dlsym(RTLD_DEFAULT, "mallocx");
  rallocx_p = (rallocx_fn *)dlsym(RTLD_DEFAULT, "rallocx");
  xallocx_p = (xallocx_fn *)dlsym(RTLD_DEFAULT, "xallocx");
  sdallocx_p = (sdallocx_fn *)dlsym(RTLD_DEFAULT, "sdallocx");
  dallocx_p = (dallocx_fn *)dlsym(RTLD_DEFAULT, "dallocx");
  free_sized_p = (free_sized_fn *)dlsym(RTLD_DEFAULT, "free_sized");
  free_aligned_sized_p = (free_aligned_sized_fn *)dlsym(RTLD_DEFAULT, "free_aligned_sized");
}

int main(int argc, char **argv) {
  int threads = (int)tt_arg_long(argc, argv, 1, 4);
  steps_per_thread = tt_arg_long(argc, argv, 2, 100000);
  int rounds = (int)tt_arg_long(argc, argv, 3, 3);
  base_seed = (uint64_t)tt_arg_long(argc, argv, 4, 20261124);
  TT_CHECK(threads >= 1 && threads <= 64 && steps_per_thread >= 1 && rounds >= 1);
  tt_require_tessera();
  look_up_extensions();
  for (int round = 0; round < rounds; round++) {
    pthread_t tid[64];
    for (int t = 0; t < threads; t++)
      TT_CHECK(pthread_create(&tid[t], NULL, worker, (void *)(uintptr_t)(round * 64 + t + 1)) == 0);
    for (int t = 0; t < threads; t++) TT_CHECK(pthread_join(tid[t], NULL) == 0);
    if (round == 0) fork_check();
    if (round == 1) malloc_trim(0);
  }
  tt_rng r;
  tt_rng_seed(&r, base_seed);
  for (unsigned i = 0; i < TABLE; i++) {
    blk *b = atomic_exchange(&table[i], NULL);
    if (b != NULL) release(b, &r);
  }
  printf("api_mix: %d threads x %ld steps x %d rounds: ok\n", threads, steps_per_thread, rounds);
  return 0;
}
