/* SPDX-License-Identifier: MIT */
#include "calloc_clear.h"

#include <string.h>

#include "config.h"
#include "hardened_bytes.h"
#include "os.h"

/*
 * Writing zeros: a used block's pages that may hold old data. Free pages count as
 * resident, but a freed block's pages that the program never wrote are not: clearing
 * them by writing would fault them all in (a program that callocs 64 MiB, writes a page
 * and frees it, in a loop: 16k page faults and 64 MiB resident a call). So the kernel
 * says which pages are resident (mincore), and those are written with zeros. (Reading
 * each page first, to leave alone the ones that are zero already, cost the suite's
 * `sparse` a fifth of its time, 0.48 -> 0.59 s, to save 1 MiB of its 34.5 MiB peak.)
 *
 * A page the program only read counts as resident too: it maps the kernel's shared zero
 * page, and writing it would copy that page (a program that callocs a 64 MiB table,
 * reads all of it, sets an entry and frees it, in a loop: 15k page faults and 60 MiB
 * more resident a call). In a block of CLEAR_CLASSIFY_MIN or more, in each run of
 * CLEAR_CLASSIFY_PAGES resident pages or more (a table read through), the pages this
 * process alone maps, the ones it wrote, are written with zeros, and the others, the
 * zero page or pages shared with a forked child, are given back (MADV_DONTNEED): they
 * then read as zero without a copy. Asking the kernel's page table costs three system
 * calls a block: not for smaller blocks, whose resident pages are mostly ones the
 * program or the previous clear wrote (`sparse steps=100k`, tables of 1 KiB - 1 MiB:
 * 1.09 -> 1.25 s when every block asked).
 *
 * A page that is not resident reads as zero, unless it is out in swap, which mincore
 * does not tell apart. On a system without swap the others are left alone; with swap
 * they are given back (MADV_DONTNEED), after which they read as zero when first touched,
 * whatever happened to them before, one call a run of them. Without swap none is made:
 * a block whose previous owner wrote a few scattered pages (an array of which a few
 * entries were set) has many short runs of them, and `sparse steps=20k` made 68,539
 * madvise calls, one a run (497 now, all decay's).
 */
#define CLEAR_CHECK_MIN ((size_t)256 << 10)
#define CLEAR_CHUNK_PAGES OS_PAGEMAP_CHUNK
#define CLEAR_CLASSIFY_MIN ((size_t)2 << 20)
#define CLEAR_CLASSIFY_PAGES 64

/* The page table of the calling process, opened once per clear (-2: not yet, -1: not
 * to be asked). */
typedef struct clear_ctx {
  int pagemap_fd;
  int swap; /* -1: not asked yet */
} clear_ctx_t;

/* Zeroes n resident pages at p: the written ones with zeros, the others given back. */
static void clear_resident(clear_ctx_t *ctx, char *p, size_t n) {
  unsigned char excl[CLEAR_CHUNK_PAGES];
  if (n >= CLEAR_CLASSIFY_PAGES && ctx->pagemap_fd == -2) ctx->pagemap_fd = os_pagemap_open();
  if (n < CLEAR_CLASSIFY_PAGES || !os_pages_exclusive(ctx->pagemap_fd, p, n, excl)) {
    memset(p, 0, n * PAGE);
    return;
  }
  for (size_t i = 0; i < n;) {
    size_t j = i + 1;
    while (j < n && excl[j] == excl[i]) j++;
    char *run = p + i * PAGE;
    size_t bytes = (j - i) * PAGE;
    if (excl[i] || !os_release_pages(run, bytes)) memset(run, 0, bytes);
    i = j;
  }
}

/* Clears n pages at p given their residency vec (bit 0 of each byte). */
static void clear_chunk(clear_ctx_t *ctx, char *p, size_t n, const unsigned char *vec) {
  size_t i = 0;
  while (i < n) { /* runs of pages alike */
    size_t j = i + 1;
    while (j < n && (vec[j] & 1) == (vec[i] & 1)) j++;
    char *run = p + i * PAGE;
    size_t bytes = (j - i) * PAGE;
    if (vec[i] & 1) {
      clear_resident(ctx, run, j - i);
    } else {
      if (ctx->swap < 0) ctx->swap = os_swap_configured(); /* asked once, when a page is not resident */
      if (ctx->swap && !os_release_pages(run, bytes)) hardened_zero_written_pages(run, bytes);
    }
    i = j;
  }
}

static void clear_written(void *addr, size_t bytes) {
  if (bytes < CLEAR_CHECK_MIN) {
    memset(addr, 0, bytes);
    return;
  }
  unsigned char vec[CLEAR_CHUNK_PAGES];
  clear_ctx_t ctx = {.pagemap_fd = bytes >= CLEAR_CLASSIFY_MIN ? -2 : -1, .swap = -1};
  for (char *p = addr, *end = p + bytes; p < end;) {
    size_t n = (size_t)(end - p) / PAGE < CLEAR_CHUNK_PAGES ? (size_t)(end - p) / PAGE : CLEAR_CHUNK_PAGES;
    if (n == 0) { /* less than a page left (a block's size is whole pages: never) */
      memset(p, 0, (size_t)(end - p));
      break;
    }
    if (!os_pages_resident(p, n * PAGE, vec)) memset(vec, 1, n); /* unknown: write them */
    clear_chunk(&ctx, p, n, vec);
    p += n * PAGE;
  }
  if (ctx.pagemap_fd >= 0) os_close(ctx.pagemap_fd);
}


/*
 * Writing zeros or giving the pages back. Writing keeps every page the block's earlier
 * owners wrote resident, whether or not the new owner will use it; giving them back
 * (MADV_DONTNEED, jemalloc's way) costs a system call and then a page fault, kernel
 * zeroing included, for each page the program touches. Which is cheaper depends on how
 * much of its zeroed tables a program uses. Measured on blocks of 64 KiB - 1 MiB, 16
 * kept, writing zeros against giving back:
 *   - every page touched: 0.52 s against 7.0 s (5.5 M page faults; jemalloc 6.7 s);
 *   - a quarter of the pages: 0.51 s against 1.36 s;
 *   - `sparse` (tables of 1 KiB - 1 MiB, 8 entries set): 1.08 s and 33.7 MiB peak RSS
 *     against 1.04 s and 6.6 MiB (jemalloc 1.14 s, 6.6 MiB).
 * A fault costs about as much as writing 6-10 pages, so giving back pays in time too
 * when the program touches less than about a sixth of the pages, and always in memory.
 * (A page read before it is written, a hash table's slot checked and then set, takes
 * two faults: the read maps the zero page, the write copies it. With a tenth as the
 * bound `sparse` ran 1.19 s with 9.6 MiB at its peak, against 1.37 s and 7.2 MiB with a
 * sixth (tcmalloc 1.07 s and 54.6 MiB, jemalloc ~6.3 MiB, medians of 5): 13% of its time
 * for a third more memory, above the leanest peer's by half; the sixth stays.)
 *
 * So the program's callocs choose. The freed blocks whose pages were given back tell
 * how many of them the program touched (mincore at free: a page only read maps the zero
 * page and counts, as it cost a fault too), summed over the pages of the last blocks
 * measured (a window of about CLEAR_WINDOW_PAGES); while the touched share is below
 * 1 / CLEAR_RELEASE_SHARE, the pages go back, and one freed block in CLEAR_MEASURE_EVERY
 * is measured (one mincore call). Otherwise zeros are written, but one calloc in
 * CLEAR_PROBE_EVERY gives back a probe, CLEAR_PROBE_PAGES of the block's pages, and its
 * free measures them: a program whose use of its tables changes is seen to, for at most
 * 16 page faults a probe (whole blocks as probes cost a program touching every page 6%
 * of its time; with these, 0.62 s against 0.61 s before the choice existed, medians of
 * 7 interleaved runs; 1 MiB tables filled, then used sparsely: given back after about
 * 3,000 sparse ones). Until a few blocks' worth of pages are measured, every calloc probes.
 * Blocks below CLEAR_RELEASE_MIN are always written: a system call and a fault cost
 * more than writing 15 pages.
 *
 * The counts are the program's, not a thread's or an arena's, one pair per size of block
 * (a power of two of pages: CLEAR_BUCKETS of them from CLEAR_RELEASE_MIN): the pages
 * measured and the pages touched among them, in the two halves of one variable. A
 * program's tables often hold about as many entries whatever their size, so the
 * touched share falls as tables grow, and one share for all sizes, which the big
 * tables' pages dominate, gave the small ones back too: `sparse` (tables of 1 KiB -
 * 1 MiB, 8 entries set) touched 9% of the pages measured, under a sixth, but a third of
 * those of its 64-128 KiB tables, whose page faults (two a page: a read maps the zero
 * page, the write then copies it) cost several times writing them whole.
 */
#define CLEAR_RELEASE_MIN ((size_t)64 << 10)
#define LG_RELEASE_MIN_PAGES 4u /* CLEAR_RELEASE_MIN is 2^4 pages */
#define CLEAR_RELEASE_SHARE 6u /* pages go back while touched * 6 < measured */
#define CLEAR_WINDOW_PAGES ((uint64_t)4096)
#define CLEAR_LEARNING_PAGES ((uint64_t)512) /* measured below this: every calloc probes */
#define CLEAR_MEASURE_EVERY 8u
#define CLEAR_PROBE_EVERY 128u
#define CLEAR_PROBE_PAGES ((size_t)16)
#define CLEAR_MEASURE_MAX_PAGES ((size_t)16384) /* of a longer block, its first 64 MiB */
_Static_assert(CLEAR_RELEASE_MIN / PAGE >= CLEAR_PROBE_PAGES, "a probe fits in every block given back");
_Static_assert(CLEAR_RELEASE_MIN >> LG_PAGE == (size_t)1 << LG_RELEASE_MIN_PAGES, "LG_RELEASE_MIN_PAGES");

/* e->calloc_measure */
enum { MEASURE_NONE, MEASURE_BLOCK, MEASURE_PROBE };

/* Pages measured (high half) and touched among them (low half). At start none touched,
 * with the weight of one big block: pages go back from the first calloc of each size (a
 * program that wrote zeros first would have made resident what the first tables'
 * earlier owners wrote, its peak), and the first blocks measured decide. */
#define COUNTS(measured, touched) ((uint64_t)(measured) << 32 | (uint64_t)(touched))
#define CLEAR_BUCKETS 11u /* 16, 32, ... 16384 pages and more */
static _Atomic uint64_t clear_counts[CLEAR_BUCKETS];
static _Atomic uint32_t clear_calls;

/* The counts of blocks of npages (CLEAR_RELEASE_MIN or more). */
static _Atomic uint64_t *counts_of(size_t npages) {
  unsigned lg = 63u - (unsigned)__builtin_clzll((unsigned long long)npages);
  unsigned b = lg - LG_RELEASE_MIN_PAGES;
  return &clear_counts[b < CLEAR_BUCKETS ? b : CLEAR_BUCKETS - 1u];
}

/* A bucket nothing measured yet starts with the weight of one big block, none touched. */
static uint64_t counts_load(_Atomic uint64_t *c) {
  uint64_t v = atomic_load_explicit(c, memory_order_relaxed);
  return v != 0 ? v : COUNTS(256, 0);
}

/* How a used block of npages is zeroed: given back whole (and measured or not), written
 * with a probe given back, or written. */
static unsigned clear_choice(size_t npages, bool *release) {
  uint32_t n = atomic_fetch_add_explicit(&clear_calls, 1, memory_order_relaxed);
  uint64_t counts = counts_load(counts_of(npages));
  uint64_t measured = counts >> 32, touched = counts & UINT32_MAX;
  *release = touched * CLEAR_RELEASE_SHARE < measured;
  if (*release) return n % CLEAR_MEASURE_EVERY == 0 ? MEASURE_BLOCK : MEASURE_NONE;
  if (measured < CLEAR_LEARNING_PAGES || n % CLEAR_PROBE_EVERY == 0) return MEASURE_PROBE;
  return MEASURE_NONE;
}

/* The first page of a block's probe: spread over the block by its address (the same at
 * its free), not always its start, which a program may fill first. */
static size_t probe_first_page(const extent_t *e) {
  uint64_t h = (uint64_t)(e->addr / PAGE) * 0x9e3779b97f4a7c15ull;
  return (size_t)((h >> 32) % (e->npages - CLEAR_PROBE_PAGES + 1));
}

void calloc_clear(extent_t *e, void *addr, size_t bytes) {
  if (bytes == 0) return;
  if (bytes < CLEAR_RELEASE_MIN) {
    clear_written(addr, bytes);
    return;
  }
  bool release;
  unsigned measure = clear_choice(e->npages, &release);
  if (release && os_release_pages(addr, bytes)) {
    e->calloc_measure = (uint8_t)measure;
    return;
  }
  /* A probe only where the whole block is cleared (its free finds it again). */
  char *probe = (char *)e->addr + probe_first_page(e) * PAGE, *end = (char *)addr + bytes;
  size_t probe_bytes = CLEAR_PROBE_PAGES * PAGE;
  if (measure != MEASURE_PROBE || addr != (void *)e->addr || bytes != e->npages * PAGE ||
      !os_release_pages(probe, probe_bytes)) {
    clear_written(addr, bytes);
    return;
  }
  e->calloc_measure = MEASURE_PROBE;
  if (probe > (char *)addr) clear_written(addr, (size_t)(probe - (char *)addr));
  if (end > probe + probe_bytes) clear_written(probe + probe_bytes, (size_t)(end - (probe + probe_bytes)));
}

/* Resident pages among the n at p. */
static size_t resident_pages(char *p, size_t n) {
  unsigned char vec[OS_PAGEMAP_CHUNK];
  size_t count = 0;
  for (size_t i = 0; i < n; i += OS_PAGEMAP_CHUNK) {
    size_t k = n - i < OS_PAGEMAP_CHUNK ? n - i : OS_PAGEMAP_CHUNK;
    if (!os_pages_resident(p + i * PAGE, k * PAGE, vec)) {
      count += k; /* unknown: as if all used */
      continue;
    }
    for (size_t j = 0; j < k; j++) count += vec[j] & 1u;
  }
  return count;
}

static void add_counts(_Atomic uint64_t *counts, uint64_t measured, uint64_t touched) {
  uint64_t old = counts_load(counts), next;
  do {
    uint64_t m = (old >> 32) + measured, t = (old & UINT32_MAX) + touched;
    while (m > CLEAR_WINDOW_PAGES) { /* the older half of the window goes */
      m /= 2;
      t /= 2;
    }
    next = COUNTS(m, t);
  } while (!atomic_compare_exchange_weak_explicit(counts, &old, next, memory_order_relaxed, memory_order_relaxed));
}

void calloc_clear_freed(extent_t *e) {
  bool probe = e->calloc_measure == MEASURE_PROBE;
  e->calloc_measure = MEASURE_NONE;
  size_t npages = e->npages < CLEAR_MEASURE_MAX_PAGES ? e->npages : CLEAR_MEASURE_MAX_PAGES;
  _Atomic uint64_t *counts = counts_of(e->npages);
  if (!probe) {
    add_counts(counts, npages, resident_pages((char *)e->addr, npages));
    return;
  }
  /* A probe stands for its block: counted with the block's weight, so that a program
   * whose tables turned sparse is seen within a few probes. */
  size_t touched = resident_pages((char *)e->addr + probe_first_page(e) * PAGE, CLEAR_PROBE_PAGES);
  add_counts(counts, npages, touched * npages / CLEAR_PROBE_PAGES);
}
