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
 * Classes 0 .. NSMALL-1 (16 B .. 14 KiB) are small and live in slabs; classes beyond
 * are large. Large requests up to the thread cache limit are rounded to their class (so
 * a cached block fits every request of its class); above it, to whole pages.
 */
#ifndef TESSERA_SIZE_CLASS_H
#define TESSERA_SIZE_CLASS_H

#include "types.h"

/* Per-class facts, computed once at startup (size_class_init). */
typedef struct class_info {
  uint32_t size;        /* region size */
  uint32_t slab_pages;  /* small: pages per slab */
  uint32_t nregs;       /* small: regions per slab */
  /* Divisibility test for offsets below 2^32 (Lemire, "Faster remainder by direct
   * computation", 2019): offset % size == 0  <=>  offset * magic < magic (mod 2^64),
   * with magic = 2^64 / size rounded up. free uses it to check that a pointer starts
   * a region. For large cached classes magic = 1: only offset 0 passes. */
  uint64_t magic;
} class_info_t;

extern INTERNAL class_info_t class_infos[NCACHED_MAX];
/* class_of_lookup[(size + 15) >> 4]: the class of any size up to LOOKUP_MAX. */
extern INTERNAL uint8_t class_of_lookup[(LOOKUP_MAX >> 4) + 1];

/* Derives the table; applies the slab_sizes option (options.h) to the small classes'
 * slabs. Called once the options are read, before anything is allocated. */
void size_class_init(void);
/* The class index of any size >= 1 (the smallest class whose size is >= size). */
unsigned size_to_class_compute(size_t size);
/* The size of class index c (any index, small or large). */
size_t class_to_size(unsigned c);

static inline unsigned size_to_class(size_t size) {
  return likely(size <= LOOKUP_MAX) ? class_of_lookup[(size + 15) >> 4]
                                    : size_to_class_compute(size);
}

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
