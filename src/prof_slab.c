/* SPDX-License-Identifier: MIT */
/* prof_slab: see prof_slab.h. */
#include "prof_slab.h"

#include "bin.h"
#include "bitmap.h"
#include "free_map.h"
#include "lock.h"
#include "pairing_heap.h"
#include "prof_meta.h"
#include "purge.h"
#include "stash.h"

/* An arena's sample slabs of one class, under the class's bin lock. */
typedef struct sample_slabs {
  extent_t *current;     /* the slab sampled blocks are taken from; may be NULL */
  extent_heap_t nonfull; /* the others with free regions, lowest address first */
} sample_slabs_t;

/* Per arena, NSMALL of them, made at the arena's first sample. */
static sample_slabs_t *_Atomic slabs_of_arena[MAX_ARENAS];

static sample_slabs_t *slabs_of(arena_t *a, unsigned c) {
  sample_slabs_t *s = atomic_load_explicit(&slabs_of_arena[a->index], memory_order_acquire);
  if (likely(s != NULL)) return &s[c];
  sample_slabs_t *made = prof_meta_alloc(NSMALL * sizeof(sample_slabs_t)); /* zeroed */
  if (made == NULL) return NULL;
  if (!atomic_compare_exchange_strong(&slabs_of_arena[a->index], &s, made)) prof_meta_free(made, NSMALL * sizeof(sample_slabs_t));
  else s = made;
  return &s[c];
}

/* The bytes of the slab's free regions count as the profiler's padding. */
static size_t free_bytes(const extent_t *slab) { return (size_t)slab->nfree * class_infos[slab->class_id].size; }

/* A new sample slab: an ordinary one, every page sent to free's slow path. Bin lock held. */
static extent_t *sample_slab_new(arena_t *a, bin_t *bin, unsigned c) {
  extent_t *slab = bin_slab_new(a, c);
  if (slab == NULL) return NULL;
  __atomic_store_n(&slab->sampled, 1, __ATOMIC_RELAXED);
  for (size_t k = 0; k < slab->npages; k++) free_map_divert_page(slab->addr + k * PAGE);
  bin->nslabs++;
  bin->curslabs++;
  prof_meta_slab_padding_add((ptrdiff_t)free_bytes(slab));
  return slab;
}

/* An empty sample slab, not the current one, back to the arena's stash as an ordinary
 * empty slab: its pages' free-map entries name its class again (a stashed slab keeps its
 * entries, stash.c). Bin lock held. */
static void sample_slab_release(arena_t *a, bin_t *bin, extent_t *slab) {
  prof_meta_slab_padding_add(-(ptrdiff_t)free_bytes(slab));
  __atomic_store_n(&slab->sampled, 0, __ATOMIC_RELAXED);
  free_map_restore_pages(slab->addr, slab->npages, slab->class_id + 1u);
  bin->curslabs--;
  lock_acquire(&a->extent_lock);
  stash_put(a, slab);
  purge_tick_defer(a);
}

COLD_TEXT void *prof_slab_alloc(arena_t *a, unsigned c) {
  tessera_assert(prof_slab_class(c));
  sample_slabs_t *s = slabs_of(a, c);
  if (s == NULL) return NULL;
  bin_t *bin = &a->bins[c];
  size_t size = class_infos[c].size;
  void *p = NULL;
  bin_lock(a, bin);
  extent_t *slab = s->current;
  if (slab == NULL || slab->nfree == 0) {
    slab = heap_remove_first(&s->nonfull);
    if (slab == NULL) slab = sample_slab_new(a, bin, c);
    if (slab != NULL) s->current = slab;
  }
  if (slab != NULL) {
    bitmap_take_lowest(slab->bitmap, &slab->first_word, slab->addr, size, &p, 1);
    slab->nfree--;
    bin->nmalloc++;
    bin->curregs++;
    bin->nrequests++;
    prof_meta_slab_padding_add(-(ptrdiff_t)size);
  }
  lock_release(&bin->lock);
  purge_run_deferred(); /* what a decay slice took out meanwhile */
  return p;
}

COLD_TEXT void prof_slab_free(extent_t *slab, void *p) {
  arena_t *a = slab->arena;
  unsigned c = slab->class_id;
  bin_t *bin = &a->bins[c];
  sample_slabs_t *s = &atomic_load_explicit(&slabs_of_arena[a->index], memory_order_acquire)[c];
  bin_lock(a, bin);
  slab_region_mark_free(slab, class_infos[c].magic, (uintptr_t)p);
  slab->nfree++;
  bin->ndalloc++;
  bin->curregs--;
  prof_meta_slab_padding_add((ptrdiff_t)class_infos[c].size);
  if (slab != s->current) {
    if (slab->nfree == slab->nregs) {
      if (slab->nregs > 1) heap_remove(&s->nonfull, slab); /* a slab of one region was never there */
      sample_slab_release(a, bin, slab);
    } else if (slab->nfree == 1) {
      heap_insert(&s->nonfull, slab); /* it was full: it has room again */
    }
  }
  lock_release(&bin->lock);
  purge_run_deferred(); /* what a decay slice took out meanwhile */
}
