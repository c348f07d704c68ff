/* SPDX-License-Identifier: MIT */
#include "size_class.h"

#include "config.h"
#include "options.h"

class_info_t class_infos[NCACHED_MAX];
_Static_assert(NCACHED_MAX <= 255 && NSMALL + NLARGE_CLASSES < 256, "a class id fits a byte (class_of_lookup, extent_t.class_id)");
uint8_t class_of_lookup[(LOOKUP_MAX >> 4) + 1];
_Atomic unsigned size_class_nexact;

/* The regular classes alone, four per doubling: index r -> size and back. */
static size_t regular_class_to_size(unsigned r) {
  if (r < 4) return (size_t)QUANTUM * (r + 1);
  unsigned group = (r - 4) / 4 + 6; /* classes 4..7 lie in (64, 128] */
  unsigned mod = (r - 4) % 4;
  return ((size_t)1 << group) + (size_t)(mod + 1) * ((size_t)1 << (group - 2));
}

static unsigned regular_size_to_class(size_t size) {
  if (size <= 64) return size == 0 ? 0 : (unsigned)((size + 15) / 16 - 1);
  unsigned lg = 63u - (unsigned)__builtin_clzll((unsigned long long)(size - 1));
  unsigned mod = (unsigned)(((size - 1) >> (lg - 2)) & 3);
  return 4 + (lg - 6) * 4 + mod;
}

/* Header class h (0 .. NHEADER_CLASSES-1): 2^k + 2^k/8 with 2^k = 1 KiB << h. */
#define HEADER_LG_FIRST 10
static size_t header_class_size(unsigned h) {
  size_t pow2 = (size_t)1 << (HEADER_LG_FIRST + h);
  return pow2 + pow2 / 8;
}

/* Header class h's index among all classes: right after the regular class 2^k, with
 * the h header classes below it before it. */
static unsigned header_class_index(unsigned h) {
  return regular_size_to_class((size_t)1 << (HEADER_LG_FIRST + h)) + h + 1;
}

static size_t static_class_to_size(unsigned c) {
  for (unsigned h = NHEADER_CLASSES; h-- > 0;) {
    unsigned at = header_class_index(h);
    if (c == at) return header_class_size(h);
    if (c > at) return regular_class_to_size(c - (h + 1));
  }
  return regular_class_to_size(c);
}

size_t class_to_size(unsigned c) {
  if (c < NSTATIC_SMALL) return static_class_to_size(c);
  if (c < NSMALL) return class_infos[c].size;
  return static_class_to_size(c - NEXACT_CLASSES);
}

unsigned size_to_class_compute(size_t size) {
  /* The classes below size: the regular ones, plus the header ones. */
  unsigned c = regular_size_to_class(size);
  for (unsigned h = 0; h < NHEADER_CLASSES && header_class_size(h) < size; h++) c++;
  return c < NSTATIC_SMALL ? c : c + NEXACT_CLASSES;
}

/*
 * Slab size: the number of pages p whose p*PAGE divides into regions with the least
 * waste, preferring fewer pages when the waste is within 1/128 of the best. At least
 * 4 pages (16 KiB), so that refills and flushes need a new slab rarely (one-page slabs
 * for 128-1024 B make jemalloc's fills and flushes frequent for those classes); at most
 * SLAB_MAX_PAGES, and never more than SLAB_MAX_REGIONS regions.
 */
static void choose_slab(class_info_t *ci) {
  size_t size = ci->size;
  unsigned best_pages = 0;
  double best_waste = 2.0;
  for (unsigned p = 1; p <= SLAB_MAX_PAGES; p++) {
    size_t bytes = p * PAGE;
    size_t nregs = bytes / size;
    if (nregs == 0 || nregs > SLAB_MAX_REGIONS) continue;
    if (bytes < 4 * PAGE || (size >= 4 * PAGE && nregs < 4)) continue;
    double waste = (double)(bytes - nregs * size) / (double)bytes;
    if (waste + 1.0 / 128 < best_waste) { best_waste = waste; best_pages = p; }
  }
  ci->slab_pages = best_pages;
  ci->nregs = (uint32_t)(best_pages * PAGE / size);
}

/* A slab of `pages` pages for class ci, clamped to what a slab can be: room for one
 * region at least, SLAB_MAX_PAGES and SLAB_MAX_REGIONS at most. */
static void set_slab_pages(class_info_t *ci, size_t pages) {
  size_t min = (ci->size + PAGE - 1) / PAGE;
  size_t max = (size_t)SLAB_MAX_REGIONS * ci->size / PAGE;
  if (max > SLAB_MAX_PAGES) max = SLAB_MAX_PAGES;
  if (pages > max) pages = max;
  if (pages < min) pages = min;
  ci->slab_pages = (uint32_t)pages;
  ci->nregs = (uint32_t)(pages * PAGE / ci->size);
}

/* slab_sizes for class ci: each range in order, later ones winning. */
static void apply_slab_ranges(class_info_t *ci) {
  for (unsigned k = 0; k < opt_slab_nranges; k++) {
    const slab_range_t *r = &opt_slab_ranges[k];
    if (ci->size >= r->lo && ci->size <= r->hi) set_slab_pages(ci, r->pages);
  }
}

/* Debug build: each class holds its sizes, each slab its regions. */
static void check_slab(const class_info_t *ci) {
  tessera_assert(ci->nregs >= 1 && ci->nregs <= SLAB_MAX_REGIONS && ci->slab_pages <= SLAB_MAX_PAGES &&
                 (size_t)ci->nregs * ci->size <= (size_t)ci->slab_pages * PAGE);
}

static void check_table(void) {
  for (unsigned c = 0; c < NSTATIC_SMALL; c++) {
    const class_info_t *ci = &class_infos[c];
    tessera_assert(ci->size % QUANTUM == 0 && (c == 0 || ci->size > class_infos[c - 1].size));
    tessera_assert(size_to_class_compute(ci->size) == c);
    tessera_assert(size_to_class_compute(ci->size + 1) == (c + 1 < NSTATIC_SMALL ? c + 1 : NSMALL));
    tessera_assert(ci->parent == c);
    check_slab(ci);
  }
  for (unsigned c = NSTATIC_SMALL; c < NSMALL; c++) tessera_assert(class_infos[c].size == 0);
}

/* The fewest pages of a slab, exact classes included: what choose_slab ever picks, or
 * less where slab_sizes asks for it (an exact class's size may fall in any range). */
static size_t min_slab_pages(void) {
  size_t min = 4;
  for (unsigned c = 0; c < NSTATIC_SMALL; c++)
    if (class_infos[c].slab_pages < min) min = class_infos[c].slab_pages;
  for (unsigned k = 0; k < opt_slab_nranges; k++)
    if (opt_slab_ranges[k].pages < min) min = opt_slab_ranges[k].pages;
  return min < 1 ? 1 : min;
}

size_t size_class_min_slab_pages;

void size_class_init(void) {
  for (unsigned c = 0; c < NSTATIC_SMALL; c++) {
    class_info_t *ci = &class_infos[c];
    ci->size = (uint32_t)class_to_size(c);
    ci->parent = c;
    choose_slab(ci);
    ci->magic = UINT64_MAX / ci->size + 1;
  }
  for (size_t i = 0; i <= (LOOKUP_MAX >> 4); i++) {
    size_t size = i << 4;
    class_of_lookup[i] = (uint8_t)size_to_class_compute(size == 0 ? 1 : size);
  }
  for (unsigned c = 0; c < NSTATIC_SMALL; c++) apply_slab_ranges(&class_infos[c]);
  size_class_min_slab_pages = min_slab_pages();
  if (config_debug) check_table();
}

/* This, size_class_publish_exact and the thread cache's two for a new class stay with the
 * code every program runs rather than the cold code: a program whose most used size
 * falls between two classes has one made within its first thousands of allocations
 * (the xmalloc-like workload did, and kept a third text window resident for it). */
NOINLINE unsigned size_class_fill_exact(size_t size, unsigned parent) {
  unsigned c = NSTATIC_SMALL + atomic_load_explicit(&size_class_nexact, memory_order_relaxed);
  tessera_assert(c < NSMALL && class_infos[c].size == 0 && size % QUANTUM == 0);
  class_info_t *ci = &class_infos[c];
  ci->size = (uint32_t)size;
  ci->parent = parent;
  choose_slab(ci);
  apply_slab_ranges(ci);
  ci->magic = UINT64_MAX / ci->size + 1;
  if (config_debug) check_slab(ci);
  return c;
}

NOINLINE void size_class_publish_exact(unsigned c) {
  tessera_assert(c == NSTATIC_SMALL + atomic_load_explicit(&size_class_nexact, memory_order_relaxed));
  atomic_store_explicit(&size_class_nexact, c - NSTATIC_SMALL + 1, memory_order_release); /* the facts first */
}
