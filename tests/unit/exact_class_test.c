/* SPDX-License-Identifier: MIT */
/* Exact classes (exact_class.h): the vote over a window of refills, what wins it and what
 * does not, the class made (its facts, the size tables redirected over its range only),
 * the slots running out, and the sized-free rule across static and exact classes. */
#include <stddef.h>

#include "exact_class.h"
#include "options.h"
#include "size_class.h"
#include "tcache.h"
#include "unit.h"

static tcache_t votes; /* only its exact_votes are used */

/* n refills of class c's bin: the first `hits` for size, the rest for other sizes of
 * the class (other), in that order. */
static void refills(unsigned c, unsigned n, unsigned hits, size_t size, size_t other) {
  for (unsigned i = 0; i < n; i++) exact_class_count_refill(&votes, c, i < hits ? size : other);
}

static bool maps_to(size_t size, unsigned c) {
  size_t i = (size + 15) >> 4;
  return class_of_lookup[i] == c && tcache_bin_offset_of_size[i] == offsetof(tcache_t, bins[c + 1]);
}

int main(void) {
  options_init(); /* the layers below the front end, booted by hand (as init.c does) */
  size_class_init();
  CHECK(tcache_boot(), "tcache_boot");
  unsigned c1152 = size_to_class(1152), c1024 = size_to_class(1024), c4608 = size_to_class(4608);

  /* A window of 32 refills with 23 for one size: no class. */
  refills(c1152, 32, 23, 1032, 1100);
  CHECK(exact_class_count() == 0 && maps_to(1032, c1152), "23 of 32 made no class");
  /* 31 of 32 so far: nothing until the window ends. */
  refills(c1152, 31, 31, 1032, 0);
  CHECK(exact_class_count() == 0, "no class before the window's end");
  refills(c1152, 1, 1, 1032, 0);
  CHECK(exact_class_count() == 1, "32 of 32 made a class");
  unsigned e = NSTATIC_SMALL;
  CHECK(class_infos[e].size == 1040 && class_infos[e].parent == c1152 && class_made(e) && !class_made(e + 1),
        "class 1040 in the first slot, of static class 1152");
  CHECK(class_infos[e].nregs * class_infos[e].size <= class_infos[e].slab_pages * PAGE &&
        class_offset_is_region_start(e, 1040 * 3) && !class_offset_is_region_start(e, 1040 * 3 + 16),
        "its slab and region test");
  for (size_t s = 1; s <= 1200; s++) {
    unsigned want = s <= 1024 || s > 1152 ? size_to_class_compute(s) : s <= 1040 ? e : c1152;
    CHECK(maps_to(s, want), "size %zu maps to class %u", s, want);
  }
  CHECK(size_to_static_class(1032) == c1152 && size_to_static_class(1100) == c1152, "static classes kept");
  CHECK(size_to_class_compute(1032) == c1152, "the formula is the static classes'");
  /* The size votes count no more: 1032 now maps to the exact class. */
  refills(c1152, 64, 64, 1100, 0); /* a window won by a size wasting 4.5% of 1152: none */
  CHECK(exact_class_count() == 1, "1104 in 1152 wastes too little");
  refills(size_to_class(1280), 32, 32, 1264, 0);
  CHECK(exact_class_count() == 1, "1264 in 1280 wastes too little");
  refills(size_to_class(112), 64, 64, 100, 0);
  CHECK(exact_class_count() == 1, "no class at 128 B or below");
  /* The header class 4608 and its SQLite page size. */
  refills(c4608, 32, 30, 4368, 4500);
  CHECK(exact_class_count() == 2 && class_infos[e + 1].size == 4368 && maps_to(4368, e + 1) &&
        maps_to(4352, e + 1) && maps_to(4369, c4608) && maps_to(4096, size_to_class_compute(4096)),
        "class 4368");
  /* The same size again, or a size of another class: refused. */
  CHECK(!exact_class_create(1040, c1152) && !exact_class_create(1040, c1024), "1040 exists");
  /* The slots run out at NEXACT_CLASSES. */
  size_t sizes[] = {2064, 3088, 5136, 6160, 8208, 10256, 12304};
  unsigned made = 2;
  for (unsigned k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
    bool ok = exact_class_create(sizes[k], size_to_class(sizes[k]));
    CHECK(ok == (made < NEXACT_CLASSES), "class %zu: made %d with %u made", sizes[k], ok, made);
    made += ok;
  }
  CHECK(exact_class_count() == NEXACT_CLASSES, "every slot made");
  /* Sized frees: a block's usable size against the usable size of the size given now. */
  CHECK(exact_class_sized_free_fits(c1152, 1152, 1040, 1040), "a 1152 block freed with a size of class 1040");
  CHECK(!exact_class_sized_free_fits(e, 1040, 1152, 1152), "a 1040 block freed with a size above it");
  CHECK(!exact_class_sized_free_fits(c1024, 1024, 1040, 1040), "a 1024 block freed with a size of class 1040");
  CHECK(exact_class_sized_free_fits(c4608, 4608, 4368, 4608), "a 4608 block freed with a size of class 4368");
  CHECK(!exact_class_sized_free_fits(c4608, 4608, 1040, 1040), "a 4608 block freed with 1040 bytes");
  UNIT_DONE("exact_class");
}
