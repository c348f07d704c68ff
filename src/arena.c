#include "arena.h"

#include <errno.h>
#include <string.h>

#include "base.h"
#include "bin.h"
#include "extent.h"
#include "fastmap.h"
#include "internal.h"
#include "background.h"
#include "control.h"
#include "decay.h"
#include "lock.h"
#include "options.h"
#include "os.h"
#include "pagemap.h"
#include "pairing_heap.h"
#include "size_class.h"

arena_t *arenas[MAX_ARENAS];
_Atomic unsigned narenas_created;
unsigned narenas_limit = 1;
static lock_t arenas_lock;
static _Atomic unsigned arenas_in_use; /* narenas_limit, plus arenas made by arena_create */

unsigned arenas_count(void) { return atomic_load_explicit(&arenas_in_use, memory_order_acquire); }
static _Atomic unsigned next_arena_rr;

int arena_thp_mode;
/* Decay times new arenas start with: the options, changed by arenas.*_decay_ms. */
static _Atomic ssize_t default_dirty_decay_ms, default_muzzy_decay_ms;

/* Decay work done inside one malloc or free is bounded by time, so no call stalls long
 * (the background thread, or later calls, continue where it stopped). */
#define DECAY_BUDGET_NS ((uint64_t)500 * 1000)
/* Free pages kept beyond the recent peak of live pages (64 MiB). */
#define DIRTY_SLACK_PAGES ((size_t)16384)

void arena_init(arena_t *a, unsigned index) {
  memset(a, 0, sizeof(*a));
  a->index = index;
  lock_init(&a->extent_lock);
  ssize_t dirty_ms = atomic_load(&default_dirty_decay_ms), muzzy_ms = atomic_load(&default_muzzy_decay_ms);
  atomic_store(&a->dirty_decay_ms, dirty_ms);
  atomic_store(&a->muzzy_decay_ms, muzzy_ms);
  uint64_t now = os_now_ns();
  decay_init(&a->dirty_decay, dirty_ms, now);
  decay_init(&a->muzzy_decay, muzzy_ms, now);
  for (unsigned c = 0; c < NSMALL; c++) bin_init(&a->bins[c]);
}

bool arenas_init(unsigned narenas) {
  lock_init(&arenas_lock);
  atomic_store(&default_dirty_decay_ms, opt_dirty_decay_ms);
  atomic_store(&default_muzzy_decay_ms, opt_muzzy_decay_ms);
  arena_select_least_loaded = strcmp(opt_arena_select, "least_loaded") == 0;
  if (strcmp(opt_thp, "always") == 0) arena_thp_mode = 1;
  else if (strcmp(opt_thp, "never") == 0) arena_thp_mode = 2;
  else if (strcmp(opt_thp, "default") != 0)
    os_write_stderr("tessera: thp: unknown mode (expected default, always or never; using default)\n");
  if (narenas < 1) narenas = 1;
  if (narenas > MAX_ARENAS) narenas = MAX_ARENAS;
  narenas_limit = narenas;
  atomic_store(&arenas_in_use, narenas);
  return arena_get(0) != NULL;
}

arena_t *arena_get(unsigned i) {
  if (i >= narenas_limit) return NULL;
  arena_t *a = __atomic_load_n(&arenas[i], __ATOMIC_ACQUIRE);
  if (likely(a != NULL)) return a;
  lock_acquire(&arenas_lock);
  a = arenas[i];
  if (a == NULL) {
    a = base_alloc(sizeof(arena_t));
    if (a != NULL) {
      arena_init(a, i);
      __atomic_store_n(&arenas[i], a, __ATOMIC_RELEASE);
      atomic_fetch_add(&narenas_created, 1);
    }
  }
  lock_release(&arenas_lock);
  return a;
}

arena_t *arena_create(void) {
  arena_t *a = NULL;
  lock_acquire(&arenas_lock);
  unsigned i = atomic_load(&arenas_in_use);
  if (i < MAX_ARENAS) {
    a = base_alloc(sizeof(arena_t));
    if (a != NULL) {
      arena_init(a, i);
      __atomic_store_n(&arenas[i], a, __ATOMIC_RELEASE);
      atomic_fetch_add(&narenas_created, 1);
      atomic_store_explicit(&arenas_in_use, i + 1, memory_order_release);
    }
  }
  lock_release(&arenas_lock);
  return a;
}

bool arena_select_least_loaded;

static arena_t *least_loaded(void) {
  arena_t *best = NULL;
  for (unsigned i = 0; i < narenas_limit; i++) {
    arena_t *a = arena_get(i);
    if (a != NULL && (best == NULL || atomic_load(&a->nthreads) < atomic_load(&best->nthreads))) best = a;
  }
  return best;
}

arena_t *arena_for_cpu(void) {
  arena_t *a = arena_get(os_current_cpu() % narenas_limit);
  return a != NULL ? a : arena_get(0);
}

arena_t *arena_choose_for_new_thread(void) {
  if (arena_select_least_loaded) {
    arena_t *a = least_loaded();
    return a != NULL ? a : arena_get(0);
  }
  /* Round-robin until every arena has had a thread, then the CPU we run on (seed 000). */
  unsigned n = atomic_fetch_add_explicit(&next_arena_rr, 1, memory_order_relaxed);
  if (n < narenas_limit) {
    arena_t *a = arena_get(n);
    if (a != NULL) return a;
  }
  return arena_for_cpu();
}

size_t large_usable_size(size_t size) {
  if (size <= TCACHE_MAX_LIMIT) return class_to_size(size_to_class(size));
  if (size > (size_t)PTRDIFF_MAX - PAGE) return 0;
  return (size + PAGE_MASK) & ~PAGE_MASK;
}

unsigned large_code(size_t usable) {
  return usable <= TCACHE_MAX_LIMIT ? size_to_class(usable) + 1 : CODE_LARGE;
}

unsigned large_class_index(size_t usable) {
  unsigned j = size_to_class_compute(usable) - NSMALL;
  return j < NLARGE_CLASSES ? j : NLARGE_CLASSES - 1;
}

void *arena_malloc_large(arena_t *a, size_t size, size_t align, bool zero) {
  size_t usable = large_usable_size(size);
  if (usable == 0) return NULL;
  bool zeroed;
  lock_acquire(&a->extent_lock);
  extent_t *e = extent_alloc(a, usable / PAGE, align / PAGE, EXTENT_LARGE, large_code(usable), &zeroed);
  if (e != NULL) {
    a->large_allocated += usable;
    a->nmalloc_large++;
    unsigned j = large_class_index(usable);
    a->lextent_nmalloc[j]++;
    a->lextent_cur[j]++;
  }
  arena_decay_tick(a);
  lock_release(&a->extent_lock);
  if (e == NULL) return NULL;
  if (zero && !zeroed) memset((void *)e->addr, 0, usable);
  return (void *)e->addr;
}

/*
 * The slab stash: a bin that has an empty slab beyond its spare hands it here instead of
 * back to the extent sets. The slab stays whole (page-map entries, class, bitmap with
 * every region free), so the next slab of its class costs a heap pop and its free-map
 * entries rather than an extent split and a rewrite of every page's entries: a program
 * that fills and empties many slabs in turn (a batch that overflows its thread cache) no
 * longer churns them. Stashed pages count as dirty for decay and stats: when decay wants
 * free pages gone, the stash goes first, oldest slab first, into the dirty set.
 */
void arena_stash_slab(arena_t *a, extent_t *slab) {
  /* Off the free map while stashed: a free of one of its blocks (a double free, all of
   * them being free) then takes the slow path, which sees the empty slab and aborts. */
  fastmap_clear_block(slab->addr, slab->npages, true);
  heap_insert(&a->stash[slab->bin], slab);
  extent_list_append(&a->stash_lru, slab);
  a->stash_pages += slab->npages;
  a->active_pages -= slab->npages;
  a->dirty_decay.added += slab->npages;
}

static void stash_unlink(arena_t *a, extent_t *slab) {
  heap_remove(&a->stash[slab->bin], slab);
  extent_list_remove(&a->stash_lru, slab);
  a->stash_pages -= slab->npages;
}

extent_t *arena_unstash_slab(arena_t *a, unsigned c) {
  extent_t *slab = a->stash[c].root; /* the lowest address */
  if (slab == NULL) return NULL;
  stash_unlink(a, slab);
  a->active_pages += slab->npages;
  slab->first_word = 0;
  fastmap_set_block(slab->addr, slab->npages, true, c + 1);
  return slab;
}

/* Turns every stashed slab into dirty pages, oldest first. */
static void stash_drain(arena_t *a) {
  while (a->stash_lru.head != NULL) {
    extent_t *slab = a->stash_lru.head;
    stash_unlink(a, slab);
    extent_free_stashed_slab(a, slab);
  }
}

size_t arena_decay_locked(arena_t *a, uint64_t now, uint64_t deadline) {
  ssize_t dirty_ms = atomic_load_explicit(&a->dirty_decay_ms, memory_order_relaxed);
  ssize_t muzzy_ms = atomic_load_explicit(&a->muzzy_decay_ms, memory_order_relaxed);
  /* With muzzy_decay_ms 0 the muzzy stage is skipped: dirty pages are released. */
  unsigned next = muzzy_ms != 0 ? EXTENT_MUZZY : EXTENT_RETAINED;
  size_t moved = 0;
  size_t epoch_before = a->dirty_decay.epoch_start_ns;
  decay_advance(&a->dirty_decay, dirty_ms, now, a->dirty.npages + a->stash_pages);
  size_t keep = decay_limit(&a->dirty_decay);
  /* Whatever the curve allows, active + dirty stays within the recent peak of active
   * pages plus DIRTY_SLACK_PAGES: a program that frees faster than decay_ms (growing
   * buffers) cannot pile up free pages far beyond what it recently needed, while a block
   * freed and soon needed again (the seed's multi-MiB churn) stays resident. The peak
   * follows active down linearly over the decay time. */
  if (a->active_pages > a->active_peak_pages) a->active_peak_pages = a->active_pages;
  if (dirty_ms > 0 && a->dirty_decay.epoch_start_ns != epoch_before) {
    uint64_t epochs = (a->dirty_decay.epoch_start_ns - epoch_before) / ((uint64_t)dirty_ms * 1000000u / DECAY_NEPOCHS + 1);
    size_t excess = a->active_peak_pages - a->active_pages;
    a->active_peak_pages -= epochs >= DECAY_NEPOCHS ? excess : (size_t)(excess * epochs / DECAY_NEPOCHS);
  }
  size_t cap = a->active_peak_pages - a->active_pages + DIRTY_SLACK_PAGES;
  if (dirty_ms >= 0 && keep > cap) keep = cap;
  if (a->dirty.npages + a->stash_pages > keep) stash_drain(a);
  if (a->dirty.npages > keep) moved += extent_move_oldest(a, EXTENT_DIRTY, next, keep, deadline);
  decay_advance(&a->muzzy_decay, muzzy_ms, now, a->muzzy.npages);
  keep = decay_limit(&a->muzzy_decay);
  if (a->muzzy.npages > keep) moved += extent_move_oldest(a, EXTENT_MUZZY, EXTENT_RETAINED, keep, deadline);
  return moved;
}

void arena_decay_tick(arena_t *a) {
  uint64_t now = os_now_ns();
  arena_decay_locked(a, now, now + DECAY_BUDGET_NS);
  /* Lots of unused memory: a thread that returns it even while the program is idle. */
  if (unlikely(opt_background_thread_auto != 0 &&
               (a->dirty.npages + a->stash_pages + a->muzzy.npages) * PAGE >= opt_background_thread_auto &&
               atomic_load_explicit(&background_state, memory_order_relaxed) == BG_NONE))
    atomic_store_explicit(&background_requested, true, memory_order_relaxed);
}

void arena_free_large(arena_t *a, extent_t *e) {
  lock_acquire(&a->extent_lock);
  a->large_allocated -= e->npages * PAGE;
  a->ndalloc_large++;
  unsigned j = large_class_index(e->npages * PAGE);
  a->lextent_ndalloc[j]++;
  a->lextent_cur[j]--;
  extent_free(a, e);
  arena_decay_tick(a);
  lock_release(&a->extent_lock);
}

bool arena_resize_large_in_place(arena_t *a, extent_t *e, size_t new_usable) {
  size_t old_pages = e->npages, new_pages = new_usable / PAGE;
  if (new_pages == old_pages) return true;
  bool ok;
  lock_acquire(&a->extent_lock);
  if (new_pages > old_pages) ok = extent_grow_in_place(a, e, new_pages, large_code(new_usable));
  else ok = extent_shrink_in_place(a, e, new_pages, large_code(new_usable));
  if (ok) {
    a->large_allocated = a->large_allocated - old_pages * PAGE + new_pages * PAGE;
    a->lextent_cur[large_class_index(old_pages * PAGE)]--;
    a->lextent_cur[large_class_index(new_pages * PAGE)]++;
  }
  lock_release(&a->extent_lock);
  return ok;
}

void arena_free_small(extent_t *slab, void *p) {
  arena_t *a = slab->arena;
  bin_t *bin = &a->bins[slab->bin];
  lock_acquire(&bin->lock);
  bin_free_locked(a, bin, slab, p);
  lock_release(&bin->lock);
}

size_t arena_purge(arena_t *a, bool all) {
  lock_acquire(&a->extent_lock);
  if (all) stash_drain(a);
  size_t released = all ? extent_purge(a, 0) : arena_decay_locked(a, os_now_ns(), 0);
  lock_release(&a->extent_lock);
  return released;
}

/* ---- control hooks ---- */

static int for_arenas(unsigned index, size_t (*f)(arena_t *, bool), bool all) {
  if (index == CONTROL_ALL_ARENAS) {
    for (unsigned i = 0; i < arenas_count(); i++)
      if (arenas[i] != NULL) f(arenas[i], all);
    return 0;
  }
  arena_t *a = control_arena(index);
  if (a == NULL) return EINVAL;
  f(a, all);
  return 0;
}

int control_arena_purge(unsigned index) { return for_arenas(index, arena_purge, true); }
int control_arena_decay(unsigned index) { return for_arenas(index, arena_purge, false); }

int control_default_decay_ms(bool muzzy, ssize_t *old_ms, const ssize_t *new_ms) {
  if (new_ms != NULL && *new_ms < -1) return EINVAL;
  _Atomic ssize_t *field = muzzy ? &default_muzzy_decay_ms : &default_dirty_decay_ms;
  if (!malloc_initialized()) tessera_free_internal(tessera_malloc_internal(1));
  if (old_ms != NULL) *old_ms = atomic_load(field);
  if (new_ms != NULL) atomic_store(field, *new_ms);
  return 0;
}

int control_arena_decay_ms(unsigned index, bool muzzy, ssize_t *old_ms, const ssize_t *new_ms) {
  arena_t *a = control_arena(index);
  if (a == NULL || (new_ms != NULL && *new_ms < -1)) return EINVAL;
  _Atomic ssize_t *field = muzzy ? &a->muzzy_decay_ms : &a->dirty_decay_ms;
  if (old_ms != NULL) *old_ms = atomic_load(field);
  if (new_ms != NULL) atomic_store(field, *new_ms);
  return 0;
}

/* fork: every lock, in the documented order (types.h). */
void arenas_fork_prepare(void) {
  lock_fork_prepare(&arenas_lock);
  unsigned n = arenas_count();
  for (unsigned i = 0; i < n; i++)
    if (arenas[i] != NULL)
      for (unsigned c = 0; c < NSMALL; c++) lock_fork_prepare(&arenas[i]->bins[c].lock);
  for (unsigned i = 0; i < n; i++)
    if (arenas[i] != NULL) lock_fork_prepare(&arenas[i]->extent_lock);
}

static void arenas_fork_release(void) {
  unsigned n = arenas_count();
  for (unsigned i = 0; i < n; i++)
    if (arenas[i] != NULL) lock_fork_release(&arenas[i]->extent_lock);
  for (unsigned i = 0; i < n; i++)
    if (arenas[i] != NULL)
      for (unsigned c = 0; c < NSMALL; c++) lock_fork_release(&arenas[i]->bins[c].lock);
  lock_fork_release(&arenas_lock);
}

void arenas_fork_parent(void) { arenas_fork_release(); }
void arenas_fork_child(void) {
  arenas_fork_release();
  for (unsigned i = 0; i < arenas_count(); i++)
    if (arenas[i] != NULL) atomic_store(&arenas[i]->nthreads, 0);
}
