/* SPDX-License-Identifier: MIT */
/* Size classes: every size up to 1 MiB maps to the smallest class (or page run) that
 * fits; the table has four classes per doubling plus the header classes (2^k + 2^k/8
 * from 1 KiB to 8 KiB); slabs tile with little waste; the
 * region-start test agrees with plain division for every offset in every slab. */
#include <stdint.h>

#include "arena.h"
#include "options.h"
#include "size_class.h"
#include "unit.h"

int main(void) {
  size_class_init();
  CHECK(class_to_size(NSTATIC_SMALL - 1) == SMALL_MAX, "last small class is %zu", class_to_size(NSTATIC_SMALL - 1));
  CHECK(class_to_size(NSTATIC_SMALL - 1) == TCACHE_MAX_LIMIT, "last cached class");
  for (unsigned c = NSTATIC_SMALL; c < NSMALL; c++) CHECK(class_to_size(c) == 0, "exact slot %u unused", c);
  for (unsigned c = 1; c < NSTATIC_SMALL; c++) {
    CHECK(class_to_size(c) > class_to_size(c - 1), "classes increase at %u", c);
    CHECK(class_to_size(c) % QUANTUM == 0, "class %u is a multiple of 16", c);
  }
  /* Four regular classes per doubling from 64 up, and one header class in each doubling
   * from 1 KiB to 8 KiB: every class is either of them. */
  unsigned headers = 0;
  for (unsigned c = 3; c < NSTATIC_SMALL; c++) {
    size_t size = class_to_size(c);
    unsigned lg = 63u - (unsigned)__builtin_clzll((unsigned long long)(size - 1));
    size_t step = (size_t)1 << (lg - 2);
    bool regular = size % step == 0;
    bool header = lg >= 10 && lg <= 13 && size == ((size_t)1 << lg) + ((size_t)1 << lg) / 8;
    CHECK(regular != header, "class %u (%zu B) is regular or a header class", c, size);
    headers += header;
  }
  CHECK(headers == NHEADER_CLASSES, "%u header classes", headers);
  CHECK(size_to_class(4096 + 272) == size_to_class(4608) && class_to_size(size_to_class(4368)) == 4608,
        "a 4 KiB page plus its header fits the 4608-byte class");
  /* Beyond the cached classes the formula goes on: class NCACHED_MAX + 4 is twice
   * class NCACHED_MAX (large classes' counters use it). */
  CHECK(class_to_size(NCACHED_MAX + 4) == 2 * class_to_size(NCACHED_MAX), "large classes");
  CHECK(size_to_class_compute(class_to_size(NCACHED_MAX + 7)) == NCACHED_MAX + 7, "large class round trip");
  CHECK(size_to_class(0) == 0 && size_to_class(1) == 0 && size_to_class(16) == 0, "tiny sizes");
  for (size_t s = 1; s <= TCACHE_MAX_LIMIT; s++) {
    unsigned c = size_to_class(s);
    CHECK(class_to_size(c) >= s, "size %zu fits class %u", s, c);
    CHECK(c == 0 || class_to_size(c - 1) < s, "size %zu: class %u is the smallest", s, c);
    CHECK(c == size_to_class_compute(s), "table and formula agree at %zu", s);
  }
  /* Large sizes: to their class up to the thread caches' limit for large blocks (a
   * cached block serves every request of its class), to whole pages above it. */
  for (size_t s = TCACHE_MAX_LIMIT + 1; s <= ((size_t)1 << 20); s++) {
    size_t u = large_usable_size(s);
    if (s <= opt_tcache_large_max)
      CHECK(u == class_to_size(size_to_class_compute(s)) && u % PAGE == 0, "large size %zu -> %zu, its class", s, u);
    else
      CHECK(u >= s && u - s < PAGE && u % PAGE == 0, "large size %zu -> %zu", s, u);
  }
  CHECK(large_usable_size(LARGE_CACHE_MAX) == LARGE_CACHE_MAX && large_usable_size(SMALL_MAX + 1) == 40960,
        "the cached large classes");
  CHECK(large_usable_size(SIZE_MAX) == 0, "impossible size has no usable size");
  /* An exact class (exact_class.h) in the first slot: its slab as well shaped, its region
   * tests exact, its static parent kept, and the formula still the static classes'. */
  CHECK(size_class_fill_exact(1040, size_to_class(1040)) == NSTATIC_SMALL, "first exact slot");
  size_class_publish_exact(NSTATIC_SMALL);
  CHECK(class_to_size(NSTATIC_SMALL) == 1040 && class_infos[NSTATIC_SMALL].parent == size_to_class(1152),
        "exact class 1040 for class 1152");
  CHECK(size_to_class_compute(1040) == size_to_class(1152), "the formula knows the static classes only");
  for (unsigned c = 0; c <= NSTATIC_SMALL; c++) {
    const class_info_t *ci = &class_infos[c];
    size_t slab = (size_t)ci->slab_pages * PAGE;
    CHECK(ci->slab_pages >= 1 && ci->slab_pages <= SLAB_MAX_PAGES, "class %u slab pages", c);
    CHECK(ci->nregs >= 1 && ci->nregs <= SLAB_MAX_REGIONS, "class %u regions", c);
    CHECK((size_t)ci->nregs * ci->size <= slab, "class %u regions fit", c);
    double waste = (double)(slab - (size_t)ci->nregs * ci->size) / (double)slab;
    CHECK(waste < 0.02, "class %u (%u B) wastes %.3f of its slab", c, ci->size, waste);
    for (uint32_t off = 0; off < slab; off++)
      CHECK(class_offset_is_region_start(c, off) == (off % ci->size == 0), "class %u offset %u", c, off);
  }
  for (unsigned c = NSMALL; c < NCACHED_MAX; c++)
    for (uint32_t off = 0; off < (1u << 20); off += 16)
      CHECK(class_offset_is_region_start(c, off) == (off == 0), "large class %u offset %u", c, off);
  /* The region index by multiplication agrees with division, within slabs and beyond. */
  for (unsigned c = 0; c <= NSTATIC_SMALL; c++) {
    uint32_t size = class_infos[c].size;
    for (uint32_t off = 0; off <= class_infos[c].slab_pages * PAGE; off++)
      CHECK(magic_quotient(class_infos[c].magic, off) == off / size, "class %u offset %u", c, off);
    for (int i = 0; i < 10000; i++) {
      uint32_t off = (uint32_t)unit_rand();
      CHECK(magic_quotient(class_infos[c].magic, off) == off / size, "class %u offset %u", c, off);
    }
  }
  UNIT_DONE("size_class");
}
