/* SPDX-License-Identifier: MIT */
/*
 * realloc of a sampled large block (src/realloc.c: resize_sampled_in_place), in a
 * program linked with the static library and run with prof:true at a short interval
 * (lg_prof_sample:12, set by the test), at which nearly every large block is sampled.
 *
 * A block grows by doubling from 64 KiB to 16 MiB with nothing allocated in between, so
 * that its neighbour pages are free: at least one growth stays in place (a sampled
 * block used to be copied every time), its bytes are kept, and after each realloc the
 * profiler holds exactly one live sample for the block, of its new size, if its extent
 * is marked sampled, and none otherwise; the free forgets it.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pagemap.h"
#include "prof_sample.h"
#include "unit.h"

static prof_counts_t live(void) {
  prof_snapshot_t s;
  CHECK(prof_snapshot_take(&s), "a snapshot of the profiler's tables");
  prof_counts_t c = s.total;
  prof_snapshot_release(&s);
  return c;
}

int main(void) {
  free(malloc(1)); /* boots the allocator (and the profiler) */
  CHECK(prof_sample_lg() == 12, "run with TESSERA_CONF=prof:true,lg_prof_sample:12 (got %u)", prof_sample_lg());
  prof_counts_t before = live();
  size_t size = 64 << 10;
  unsigned char *p = malloc(size);
  CHECK(p != NULL, "malloc");
  memset(p, 0x5a, size);
  unsigned in_place = 0, sampled_after = 0;
  for (; size < (16u << 20); size *= 2) {
    unsigned char *q = realloc(p, size * 2);
    CHECK(q != NULL, "realloc to %zu", size * 2);
    for (size_t i = 0; i < size; i += 4093) CHECK(q[i] == 0x5a, "byte %zu kept", i);
    memset(q + size, 0x5a, size);
    in_place += q == p;
    p = q;
    bool sampled = pm_extent(pagemap_get((uintptr_t)p))->sampled != 0;
    sampled_after += sampled;
    prof_counts_t now = live();
    CHECK(now.live_objects - before.live_objects == (sampled ? 1u : 0u), "%zu bytes: %s, %llu live samples more",
          size * 2, sampled ? "sampled" : "not sampled", (unsigned long long)(now.live_objects - before.live_objects));
    if (sampled) CHECK(now.live_bytes - before.live_bytes == size * 2, "the sample's size is the new one");
  }
  CHECK(in_place > 0, "no growth of a sampled block stayed in place");
  CHECK(sampled_after > 0, "no resized block was sampled");
  free(p);
  CHECK(live().live_objects == before.live_objects, "the sample forgotten at its free");
  printf("prof.sampled_realloc: %u of 8 growths in place, %u sampled\n", in_place, sampled_after);
  UNIT_DONE("prof.sampled_realloc");
}
