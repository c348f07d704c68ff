/*
 * Size classes: four per doubling. A size is seen as a group (its highest bit) and a
 * mod (the next two bits): 16, 32, 48, 64 | 80, 96, 112, 128 | 160, 192, 224, 256 | ...
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
  /* Divisibility test: offset % size == 0  <=>  rotr32(offset * inverse, shift) <= limit
   * (Granlund-Montgomery), used to check that a freed pointer starts a region. */
  uint32_t inverse;
  uint32_t limit;
  uint32_t shift;
} class_info_t;

extern class_info_t class_infos[NCACHED_MAX];
/* class_of_lookup[(size + 15) >> 4]: the class of any size up to LOOKUP_MAX. */
extern uint8_t class_of_lookup[(LOOKUP_MAX >> 4) + 1];

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
static inline bool class_offset_is_region_start(unsigned c, uint32_t offset) {
  const class_info_t *ci = &class_infos[c];
  uint32_t x = offset * ci->inverse;
  x = (x >> ci->shift) | (x << ((32 - ci->shift) & 31));
  return x <= ci->limit;
}

/* Region index of an offset known to start a region. */
static inline uint32_t class_region_index(unsigned c, uint32_t offset) {
  return offset / class_infos[c].size;
}

#endif
