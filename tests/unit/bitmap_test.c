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
    /* Taking everything yields 0, 1, 2, ... in order: lowest address first. */
    for (unsigned i = 0; i < nbits; i++) {
      int b = bitmap_take_first(words, nwords, &hint);
      CHECK(b == (int)i, "take %u got %d (nbits %u)", i, b, nbits);
      model[i] = false;
    }
    CHECK(bitmap_take_first(words, nwords, &hint) == -1, "empty bitmap");
    hint = 0;
    for (int step = 0; step < 20000; step++) {
      unsigned i = (unsigned)(unit_rand() % nbits);
      if (unit_rand() % 2) {
        if (!model[i]) { bitmap_set(words, i); model[i] = true; if (i / 64 < hint) hint = i / 64; }
      } else {
        int b = bitmap_take_first(words, nwords, &hint);
        int expect = -1;
        for (unsigned k = 0; k < nbits; k++) if (model[k]) { expect = (int)k; break; }
        CHECK(b == expect, "take_first %d, model says %d", b, expect);
        if (b >= 0) model[b] = false;
      }
      CHECK(bitmap_get(words, i) == model[i], "bit %u", i);
    }
  }
  UNIT_DONE("bitmap");
}
