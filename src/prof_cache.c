/* SPDX-License-Identifier: MIT */
/* prof_cache: see prof_cache.h. */
#include "prof_cache.h"

#include <stddef.h>

#include "size_class.h"
#include "prof_sample.h"
#include "tcache.h"

uint16_t prof_cache_lookup[(LOOKUP_MAX >> 4) + 1];
/* 1.0 / each cached class's size: a bin's draw multiplies instead of dividing. */
static double inv_class_size[NCACHED_MAX];

void prof_cache_boot(void) {
  for (unsigned c = 0; c < NCACHED_MAX; c++) inv_class_size[c] = 1.0 / (double)class_infos[c].size;
  for (size_t i = 0; i <= LOOKUP_MAX >> 4; i++) {
    unsigned c = class_of_lookup[i];
    _Static_assert(offsetof(tcache_t, bins) + (NCACHED_MAX + 1) * sizeof(cache_bin_t) <= (1u << 16), "a bin's offset fits the entry's 16 bits");
    prof_cache_lookup[i] = (uint16_t)(offsetof(tcache_t, bins) + (c + 1) * sizeof(cache_bin_t));
  }
}

/* Sets bin c's count to reach 0 at its next sampled block, a new draw away, keeping the
 * bin's true count (cache_bin_nmalloc). */
static void arm_bin(tcache_t *tc, unsigned c) {
  cache_bin_t *b = tcache_bin(tc, c);
  uint64_t count = cache_bin_nmalloc(tc, b);
  uint64_t blocks = prof_blocks_until_sample_inv(&tls_thread.prof, inv_class_size[c]);
  b->nmalloc_raw = 0 - blocks; /* blocks increments from 0 */
  tc->nmalloc_bias[c + 1] = b->nmalloc_raw - count;
}

void prof_cache_arm(tcache_t *tc) {
  for (unsigned c = 0; c < NCACHED_MAX; c++) {
    cache_bin_t *b = tcache_bin(tc, c);
    uint64_t count = cache_bin_nmalloc(tc, b);
    b->nmalloc_raw = UINT64_MAX; /* due: the next allocation through the entry draws */
    tc->nmalloc_bias[c + 1] = b->nmalloc_raw - count;
  }
  tc->prof_armed_bins = 0;
}

void prof_bin_rearm(tcache_t *tc, unsigned c) {
  arm_bin(tc, c);
  tc->prof_armed_bins |= (uint64_t)1 << c;
}
