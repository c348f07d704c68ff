/* SPDX-License-Identifier: MIT */
/* Bitmaps against a plain bool-array model, under random operations. */
#include <stdbool.h>
#include <string.h>

#include "bitmap.h"
#include "unit.h"

int main(void) {
  for (unsigned nbits = 1; nbits <= SLAB_MAX_REGIONS; nbits = nbits < 130 ? nbits + 1 : nbits * 2 + 3) {
    if (nbits > SLAB_MAX_REGIONS) break;
    uint64_t words[BITMAP_MAX_WORDS];
    bool model[SLAB_MAX_REGIONS];
    unsigned nwords = bitmap_nwords(nbits);
    bitmap_init_full(words, nbits);
    for (unsigned i = 0; i < nbits; i++) model[i] = true;
    for (unsigned i = nbits; i < nwords * 64; i++) CHECK(!bitmap_get(words, i), "bit %u past the end is clear", i);
    uint32_t hint = 0;
    void *got[SLAB_MAX_REGIONS];
    /* Regions of 48 bytes from base: taking everything yields base, base + 48, ... in
     * order, lowest address first. */
    const uintptr_t base = 0x7f0000010000, size = 48;
    bitmap_take_lowest(words, &hint, base, size, got, nbits);
    for (unsigned i = 0; i < nbits; i++) {
      CHECK(got[i] == (void *)(base + i * size), "take %u got %p (nbits %u)", i, got[i], nbits);
      model[i] = false;
    }
    for (unsigned i = 0; i < nwords; i++) CHECK(words[i] == 0, "empty bitmap");
    hint = 0;
    unsigned nset = 0;
    for (int step = 0; step < 20000; step++) {
      unsigned i = (unsigned)(unit_rand() % nbits);
      if (unit_rand() % 2) {
        if (!model[i]) { bitmap_set(words, i); model[i] = true; nset++; if (i / 64 < hint) hint = i / 64; }
      } else if (nset > 0) {
        unsigned n = 1 + (unsigned)(unit_rand() % (nset < 8 ? nset : 8));
        bitmap_take_lowest(words, &hint, base, size, got, n);
        for (unsigned t = 0, k = 0; t < n; t++, k++) {
          while (!model[k]) k++;
          CHECK(got[t] == (void *)(base + k * size), "take_lowest #%u: %p, model says region %u", t, got[t], k);
          model[k] = false;
        }
        nset -= n;
        for (unsigned k = 0; k < hint * 64 && k < nbits; k++) CHECK(!model[k], "hint %u skips set bit %u", hint, k);
      }
      CHECK(bitmap_get(words, i) == model[i], "bit %u", i);
    }
  }
  UNIT_DONE("bitmap");
}
