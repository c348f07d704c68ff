/* SPDX-License-Identifier: MIT */
/* The page map: what is set is read back, what is not set reads 0, entries pack and
 * unpack, and neighbouring pages and far-apart leaves do not interfere. */
#include <sys/mman.h>

#include "pagemap.h"
#include "unit.h"

#define NPROBE 4096

int main(void) {
  static uintptr_t addrs[NPROBE];
  static pm_entry_t vals[NPROBE];
  /* Addresses spread over the whole 47-bit user space, page aligned, distinct. */
  for (int i = 0; i < NPROBE; i++) {
    uintptr_t a;
    bool dup;
    do {
      /* [2^40, 2^46): away from where the loader and mmap put anything (the test runs
       * on the real page map, which the allocator itself uses). */
      a = (uintptr_t)((1ull << 40) + unit_rand() % ((1ull << 46) - (1ull << 40))) & ~(uintptr_t)PAGE_MASK;
      dup = a == 0;
      for (int k = 0; k < i; k++) dup |= addrs[k] == a;
    } while (dup);
    addrs[i] = a;
    extent_t *fake = (extent_t *)(uintptr_t)((unit_rand() % (1ull << 40)) << 6);
    unsigned code = (unsigned)(unit_rand() % 256);
    unsigned idx = (unsigned)(unit_rand() % 300);
    vals[i] = pm_make(fake, code, idx);
    CHECK(pm_extent(vals[i]) == fake, "extent round trip");
    CHECK(pm_code(vals[i]) == code, "code round trip");
    CHECK(pm_page_index(vals[i]) == (idx > 255 ? 255 : idx), "index saturates");
    CHECK(pm_offset(vals[i], a + 123) == ((idx > 255 ? 255u : idx) << LG_PAGE) + 123, "offset");
    CHECK(pagemap_get(a) == 0, "unset page reads 0");
    CHECK(pagemap_set(a, vals[i]), "set");
  }
  for (int i = 0; i < NPROBE; i++) {
    CHECK(pagemap_get(addrs[i]) == vals[i], "read back %d", i);
    CHECK(pagemap_get(addrs[i] + PAGE - 1) == vals[i], "any byte of the page");
    bool neighbour_set = false;
    for (int k = 0; k < NPROBE; k++) neighbour_set |= addrs[k] == addrs[i] + PAGE;
    if (!neighbour_set) CHECK(pagemap_get(addrs[i] + PAGE) == 0, "next page untouched");
  }
  for (int i = 0; i < NPROBE; i += 2) pagemap_set(addrs[i], 0);
  for (int i = 0; i < NPROBE; i++) CHECK(pagemap_get(addrs[i]) == (i % 2 ? vals[i] : 0), "cleared %d", i);
  for (int i = 0; i < NPROBE; i++) pagemap_set(addrs[i], 0);
  CHECK(pagemap_reserve((uintptr_t)1 << 40, (size_t)1 << 32), "reserve a 4 GiB range");
  CHECK(pagemap_mapped_bytes() > 0, "leaves are counted");
  UNIT_DONE("pagemap");
}
