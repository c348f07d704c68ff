/*
 * Slab bitmaps: bit i set <=> region i is free. Scanning from the lowest word hands out
 * the lowest-address free region first.
 */
#ifndef TESSERA_BITMAP_H
#define TESSERA_BITMAP_H

#include "types.h"

static inline unsigned bitmap_nwords(unsigned nbits) { return (nbits + 63) / 64; }

/* All nbits bits set (all regions free); bits past nbits stay clear. */
static inline void bitmap_init_full(uint64_t *words, unsigned nbits) {
  unsigned n = bitmap_nwords(nbits);
  for (unsigned i = 0; i < n; i++) words[i] = ~(uint64_t)0;
  if (nbits % 64) words[n - 1] = ((uint64_t)1 << (nbits % 64)) - 1;
}

static inline bool bitmap_get(const uint64_t *words, unsigned bit) {
  return (words[bit / 64] >> (bit % 64)) & 1;
}
static inline void bitmap_set(uint64_t *words, unsigned bit) {
  words[bit / 64] |= (uint64_t)1 << (bit % 64);
}
static inline void bitmap_clear(uint64_t *words, unsigned bit) {
  words[bit / 64] &= ~((uint64_t)1 << (bit % 64));
}

/* Index of the lowest set bit at or after word *hint, or -1 if none; updates *hint to
 * the word where it was found (words below it are known to be empty). */
static inline int bitmap_take_first(uint64_t *words, unsigned nwords, uint32_t *hint) {
  for (unsigned w = *hint; w < nwords; w++) {
    if (words[w]) {
      unsigned b = (unsigned)__builtin_ctzll(words[w]);
      words[w] &= words[w] - 1;
      *hint = w;
      return (int)(w * 64 + b);
    }
  }
  *hint = nwords;
  return -1;
}

#endif
