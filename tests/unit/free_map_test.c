/* SPDX-License-Identifier: MIT */
/* The free map: for every cached class, each page of a slab (and the first page of a
 * cached large block) reads back its bin and gives every pointer its exact offset in
 * the block; the region-start test on that offset agrees with %; clearing restores 0;
 * and a block outside the home window turns the map off, after which every lookup
 * reads an empty entry. */
#include <stdlib.h>
#include <sys/mman.h>

#include "free_map.h"
#include "options.h"
#include "size_class.h"
#include "unit.h"

int main(void) {
  /* The layers below the front end, booted by hand (as init.c does): no malloc of ours
   * is linked in, so the test also runs under AddressSanitizer. */
  options_init();
  size_class_init();
  free_map_boot();
  CHECK(free_map_enabled(), "the map is on after start-up");
  size_t span = (size_t)SLAB_MAX_PAGES * PAGE * 2;
  char *mem = mmap(NULL, span, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  CHECK(mem != MAP_FAILED, "mmap");
  /* A page-aligned place in this mapping: in the home window (mmap memory is near the heap). */
  uintptr_t base = ((uintptr_t)mem + PAGE_MASK) & ~(uintptr_t)PAGE_MASK;
  size_class_publish_exact(size_class_fill_exact(4368, size_to_class(4368))); /* an exact class's slot too */
  for (unsigned c = 0; c < NCACHED_MAX; c++) {
    const class_info_t *ci = &class_infos[c];
    if (ci->size == 0) continue; /* an exact class's slot not made */
    bool slab = c < NSMALL;
    size_t npages = slab ? ci->slab_pages : (ci->size + PAGE - 1) / PAGE;
    CHECK(npages <= SLAB_MAX_PAGES, "class %u: %zu pages", c, npages);
    uintptr_t addr = base + (unit_rand() % SLAB_MAX_PAGES) * PAGE; /* vary the page phase */
    free_map_set_block(addr, npages, slab, c + 1);
    for (size_t k = 0; k < npages; k++) {
      uintptr_t page = addr + k * PAGE;
      const free_map_entry_t *e = free_map_lookup(page);
      if (!slab && k > 0) {
        CHECK(e->cache_bin_offset == 0, "class %u: a large block maps its first page only", c);
        continue;
      }
      CHECK(e->cache_bin_offset == (c + 1) * sizeof(cache_bin_t), "class %u page %zu: bin %u", c, k, e->cache_bin_offset);
      for (uint32_t o = 0; o < PAGE; o += 16) {
        uint32_t offset = free_map_block_offset(e, page + o);
        CHECK(offset == k * PAGE + o, "class %u page %zu +%u: offset %u", c, k, o, offset);
        bool start = slab ? offset % ci->size == 0 : offset == 0;
        CHECK(magic_divides(ci->magic, offset) == start, "class %u offset %u: region start test", c, offset);
      }
    }
    CHECK(free_map_lookup(addr + npages * PAGE)->cache_bin_offset == 0, "class %u: the next page is not marked", c);
    free_map_set_block(addr, npages, slab, 0);
    for (size_t k = 0; k < npages; k++) {
      const free_map_entry_t *e = free_map_lookup(addr + k * PAGE);
      CHECK(e->cache_bin_offset == 0 && e->to_offset == 0, "class %u page %zu: cleared", c, k);
    }
  }
  /* The same page 16 TiB away would alias: entering a block there turns the map off. */
  uintptr_t far = base ^ ((uintptr_t)1 << (FREE_MAP_LG_PAGES + LG_PAGE));
  free_map_set_block(base, 1, true, 1);
  CHECK(free_map_lookup(base)->cache_bin_offset == sizeof(cache_bin_t), "marked");
  free_map_set_block(far, 1, true, 2);
  CHECK(!free_map_enabled(), "a block outside the home window turns the map off");
  CHECK(free_map_lookup(base)->cache_bin_offset == 0 && free_map_lookup(far)->cache_bin_offset == 0, "with the map off, nothing is found");
  munmap(mem, span);
  UNIT_DONE("free_map");
}
