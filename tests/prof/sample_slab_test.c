/* SPDX-License-Identifier: MIT */
/*
 * The sample slabs (src/prof_slab.h), in a program linked with the static library
 * (its internal headers read directly) and run with prof:true at a short interval
 * (lg_prof_sample:12, set by the test: ~1 sample per 4 KiB allocated).
 *
 * For blocks of the classes that have sample slabs, allocated in a batch: every block
 * whose page's free-map entry names no bin (so that free takes its slow path) is in a
 * sample slab, and every block in a sample slab is on such a page: no ordinary block
 * shares a page with a sampled one, so the frees of a sample's neighbours keep free's
 * fast path. The profiler's live sampled blocks grow by exactly the number of blocks in
 * sample slabs (each is a recorded sample), and drop back when they are freed; the
 * samples' padding (the sample slabs' free regions) stays under one slab per class.
 * A class above PROF_SLAB_MAX_SIZE keeps its samples in place: its blocks are never in
 * a sample slab.
 */
#include <stdio.h>
#include <stdlib.h>

#include "free_map.h"
#include "pagemap.h"
#include "prof_meta.h"
#include "prof_sample.h"
#include "prof_slab.h"
#include "size_class.h"
#include "unit.h"

#define BLOCKS 20000

static void *blocks[BLOCKS];

static uint64_t live_samples(void) {
  prof_snapshot_t s;
  CHECK(prof_snapshot_take(&s), "a snapshot of the profiler's tables");
  uint64_t n = s.total.live_objects;
  prof_snapshot_release(&s);
  return n;
}

static bool diverted(const void *p) { return free_map_lookup((uintptr_t)p)->cache_bin_offset == 0; }

static bool in_sample_slab(const void *p) { return prof_slab_holds(pm_extent(pagemap_get((uintptr_t)p))); }

/* A batch of size-byte blocks, checked, then freed. Returns how many were sampled. */
static unsigned batch(size_t size, unsigned classes_so_far) {
  uint64_t before = live_samples();
  for (unsigned i = 0; i < BLOCKS; i++) blocks[i] = malloc(size);
  unsigned sampled = 0;
  for (unsigned i = 0; i < BLOCKS; i++) {
    void *p = blocks[i];
    CHECK(p != NULL, "malloc(%zu)", size);
    bool s = in_sample_slab(p);
    CHECK(diverted(p) == s, "block %p of %zu bytes: %s a sample slab, but its page %s sent to free's slow path", p,
          size, s ? "in" : "not in", diverted(p) ? "is" : "is not");
    sampled += s;
  }
  uint64_t after = live_samples();
  CHECK(after - before == sampled, "%zu bytes: %u blocks in sample slabs, %llu more live samples", size, sampled,
        (unsigned long long)(after - before));
  /* The current sample slab of each class used so far (at most 7 pages each), at most. */
  CHECK(prof_meta_sampled_padding() <= (size_t)classes_so_far * 7 * PAGE, "padding %zu for %u classes",
        prof_meta_sampled_padding(), classes_so_far);
  for (unsigned i = 0; i < BLOCKS; i++) free(blocks[i]);
  CHECK(live_samples() == before, "%zu bytes: the samples forgotten at their free", size);
  return sampled;
}

int main(void) {
  free(malloc(1)); /* boots the allocator (and the profiler) */
  CHECK(free_map_enabled(), "the free map is on");
  CHECK(prof_sample_lg() == 12, "run with TESSERA_CONF=prof:true,lg_prof_sample:12 (got %u)", prof_sample_lg());
  static const size_t sizes[] = {16, 48, 100, 256, 640, 1024};
  for (unsigned k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
    CHECK(prof_slab_class(size_to_class(sizes[k])), "%zu bytes: a class with sample slabs", sizes[k]);
    /* ~BLOCKS * size / 4096 samples: at least 78 for 16 bytes */
    unsigned n = batch(sizes[k], k + 1);
    CHECK(n >= 20, "%zu bytes: %u blocks sampled", sizes[k], n);
    printf("%zu bytes: %u of %u blocks sampled, each in a sample slab, alone on its pages\n", sizes[k], n, BLOCKS);
  }
  /* Above the sample slabs' classes: sampled in place, never in one. */
  CHECK(!prof_slab_class(size_to_class(2048)), "2 KiB: sampled in place");
  for (unsigned i = 0; i < BLOCKS / 4; i++) {
    blocks[i] = malloc(2048);
    CHECK(!in_sample_slab(blocks[i]), "a 2 KiB block in a sample slab");
  }
  for (unsigned i = 0; i < BLOCKS / 4; i++) free(blocks[i]);
  UNIT_DONE("prof.sample_slab");
}
