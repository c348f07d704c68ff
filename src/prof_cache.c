/* SPDX-License-Identifier: MIT */
/* prof_cache: see prof_cache.h. */
#include "prof_cache.h"

#include <stddef.h>

#include "size_class.h"

prof_cache_entry_t prof_cache_lookup[(LOOKUP_MAX >> 4) + 1];

void prof_cache_boot(void) {
  for (size_t i = 0; i <= LOOKUP_MAX >> 4; i++) {
    unsigned c = class_of_lookup[i];
    _Static_assert(LOOKUP_MAX < (1u << 16), "a class size fits the entry's 16 bits");
    _Static_assert(offsetof(tcache_t, bins) + (NCACHED_MAX + 1) * sizeof(cache_bin_t) <= (1u << 16), "a bin's offset fits the entry's 16 bits");
    prof_cache_lookup[i].bin_offset = (uint16_t)(offsetof(tcache_t, bins) + (c + 1) * sizeof(cache_bin_t));
    prof_cache_lookup[i].class_size = (uint16_t)class_infos[c].size;
  }
}
