/* SPDX-License-Identifier: MIT */
/*
 * Size classes: four per doubling. A size is seen as a group (its highest bit) and a
 * mod (the next two bits): 16, 32, 48, 64 | 80, 96, 112, 128 | 160, 192, 224, 256 | ...
 *
 * Plus one "header" class in each doubling from 1 KiB to 8 KiB: 2^k + 2^k/8 (1152, 2304,
 * 4608, 9216). Programs often ask for a power of two plus a small header: a database
 * page of 4 KiB with its bookkeeping (SQLite's page cache asks for 4096 + 272 bytes), an
 * I/O buffer with a length word. The regular class above 2^k is 2^k + 2^k/4, so such a
 * block would waste up to a fifth of itself, on every page of a page cache; the header
 * class halves that worst case. Each tiles a slab of 9 pages exactly.
 * Classes 0 .. NSTATIC_SMALL-1 (16 B .. 32 KiB) are the static small classes, the same
 * in every process. Ids NSTATIC_SMALL .. NSMALL-1 are slots for "exact" classes, made at
 * run time when one exact size dominates the requests of a static class and wastes a
 * good part of it (exact_class.h): such a class takes the sizes between the class below
 * and itself from the static class (its "static parent"); an unused slot has size 0 and
 * no size maps to it. Small classes live in slabs; ids from NSMALL on are the large
 * classes (NSMALL + j: the j-th static class above 32 KiB). Large requests up to the
 * thread cache limit are rounded to their class (so a cached block fits every request
 * of its class); above it, to whole pages.
 *
 * So a class id is not ordered by size among the small ones; size_to_class_compute
 * and class_to_size of a size above 32 KiB know only the static classes, the lookup
 * tables (class_of_lookup, the thread cache's and the profiler's) the current ones.
 */
#ifndef TESSERA_SIZE_CLASS_H
#define TESSERA_SIZE_CLASS_H

#include "types.h"

/* Per-class facts, computed once at startup (size_class_init). */
typedef struct class_info {
  uint32_t size;        /* region size */
  uint32_t slab_pages;  /* small: pages per slab */
  uint32_t nregs;       /* small: regions per slab */
  uint32_t parent;      /* small: the static class whose sizes it serves (itself if static) */
  /* Divisibility test for offsets below 2^32 (Lemire, "Faster remainder by direct
   * computation", 2019): offset % size == 0  <=>  offset * magic < magic (mod 2^64),
   * with magic = 2^64 / size rounded up. free uses it to check that a pointer starts
   * a region. For large cached classes magic = 1: only offset 0 passes. */
  uint64_t magic;
} class_info_t;

extern INTERNAL class_info_t class_infos[NCACHED_MAX];
/* class_of_lookup[(size + 15) >> 4]: the class of any size up to LOOKUP_MAX. */
extern INTERNAL uint8_t class_of_lookup[(LOOKUP_MAX >> 4) + 1];

/* The fewest pages any slab has (size_class_init): a free run of fewer pages serves no
 * request (large blocks are 10 pages or more) until a neighbour's free extends it. */
extern INTERNAL size_t size_class_min_slab_pages;

/* How many exact classes exist (ids NSTATIC_SMALL on, filled in order; release-stored
 * after the class's facts). */
extern INTERNAL _Atomic unsigned size_class_nexact;
/* Whether class c exists: a static class, or an exact class's slot already filled. */
static inline bool class_made(unsigned c) {
  return c < NSTATIC_SMALL || c - NSTATIC_SMALL < atomic_load_explicit(&size_class_nexact, memory_order_acquire);
}

/* The static class size of a size above SMALL_MAX (large classes are four per doubling:
 * 2^k + i * 2^(k-2), i = 1..4), without the table or the general formula: realloc asks
 * for it at every step of a string growing a byte at a time. */
static inline size_t large_class_round(size_t size) {
  unsigned lg = 63u - (unsigned)__builtin_clzll((unsigned long long)(size - 1)); /* 2^lg < size <= 2^(lg+1) */
  size_t step = (size_t)1 << (lg - 2);
  return (size + step - 1) & ~(step - 1);
}

/* Derives the table; applies the slab_sizes option (options.h) to the small classes'
 * slabs. Called once the options are read, before anything is allocated. */
void size_class_init(void);
/* The static class index of any size >= 1 (the smallest static class whose size is >=
 * size; large ones from NSMALL on). */
unsigned size_to_class_compute(size_t size);
/* Fills the next exact class's slot for regions of size bytes, whose static parent is
 * parent; returns its id (exact_class.c, under its lock; a slot must be free). */
unsigned size_class_fill_exact(size_t size, unsigned parent);
/* Counts exact class c (the one just filled) made: class_made(c) is true from here. */
void size_class_publish_exact(unsigned c);
/* The size of class index c (any index, small or large; 0 for an unused exact slot). */
size_t class_to_size(unsigned c);

/* The current class of any size >= 1 (an exact class's where one took the size). */
static inline unsigned size_to_class(size_t size) {
  return likely(size <= LOOKUP_MAX) ? class_of_lookup[(size + 15) >> 4]
                                    : size_to_class_compute(size);
}

/* The static class of size (<= LOOKUP_MAX) as every process has it: what sized frees
 * compare, and the class of an aligned request (exact classes' sizes need not be
 * multiples of the alignment). */
static inline unsigned size_to_static_class(size_t size) { return class_infos[size_to_class(size)].parent; }

/* True when offset (from the start of a slab or cached large block) starts a region. */
static inline bool magic_divides(uint64_t magic, uint32_t offset) {
  return (uint64_t)offset * magic < magic;
}
static inline bool class_offset_is_region_start(unsigned c, uint32_t offset) {
  return magic_divides(class_infos[c].magic, offset);
}

/* offset / size for any offset below 2^32, given the class's magic (Lemire's fastdiv:
 * the high half of magic * offset), without a division instruction. */
static inline uint32_t magic_quotient(uint64_t magic, uint32_t offset) {
  return (uint32_t)(((unsigned __int128)magic * offset) >> 64);
}

#endif
