/* SPDX-License-Identifier: MIT */
#include "arena.h"

#include <string.h>

#include "tessera.h"

#include "base.h"
#include "bin.h"
#include "calloc_clear.h"
#include "config.h"
#include "decay.h"
#include "extent.h"
#include "fatal.h"
#include "free_map.h"
#include "hardened.h"
#include "lock.h"
#include "oom.h"
#include "options.h"
#include "os.h"
#include "pagemap.h"
#include "purge.h"
#include "size_class.h"
#include "stash.h"
#include "thread.h"
#include "thread_stats.h"

arena_t *arenas[MAX_ARENAS];
_Atomic unsigned narenas_created;
unsigned narenas_limit = 1;
static lock_t arenas_lock FORK_LOCK;
static _Atomic unsigned arenas_in_use; /* narenas_limit, plus arenas made by arena_create */

unsigned arenas_count(void) { return atomic_load_explicit(&arenas_in_use, memory_order_acquire); }


bool arena_index_of(const void *p, unsigned *index) {
  pm_entry_t pe = pagemap_get((uintptr_t)p);
  const extent_t *e = pm_extent(pe);
  if (pm_code(pe) == 0 || e == NULL) return false; /* no block starts or ends on this page */
  unsigned state = __atomic_load_n(&e->state, __ATOMIC_RELAXED);
  if (state != EXTENT_SLAB && state != EXTENT_LARGE) return false;
  if ((uintptr_t)p < e->addr || (uintptr_t)p - e->addr >= e->npages * PAGE) return false; /* the map keeps 48 bits */
  const arena_t *a = __atomic_load_n(&e->arena, __ATOMIC_RELAXED);
  if (a == NULL) return false;
  *index = a->index;
  return true;
}

static _Atomic unsigned next_arena_rr;

_Atomic ssize_t arena_default_dirty_decay_ms, arena_default_muzzy_decay_ms;

/* a comes all zero from base_alloc, and zero is the initial state of its locks, bins,
 * extent sets and counters: only what starts non-zero is written, so that the pages of
 * a new arena's 17 KiB that its threads never use (bins of unused classes, the decay
 * backlogs) stay untouched, not resident. */
void arena_init(arena_t *a, unsigned index) {
  a->index = index;
  ssize_t dirty_ms = atomic_load(&arena_default_dirty_decay_ms), muzzy_ms = atomic_load(&arena_default_muzzy_decay_ms);
  atomic_store(&a->dirty_decay_ms, dirty_ms);
  atomic_store(&a->muzzy_decay_ms, muzzy_ms);
  uint64_t now = os_now_ns();
  a->refault_window_start_ns = now;
  a->refaults_costly = true; /* until a window of the program's own says otherwise */
  decay_start(&a->dirty_decay, dirty_ms, now);
  decay_start(&a->muzzy_decay, muzzy_ms, now);
  extent_share_arena(a);
}

bool arenas_init(unsigned narenas) {
  lock_init(&arenas_lock);
  thread_stats_boot(); /* before the thread caches' exit hook: its observer runs first */
  atomic_store(&arena_default_dirty_decay_ms, opt_dirty_decay_ms);
  atomic_store(&arena_default_muzzy_decay_ms, opt_muzzy_decay_ms);
  if (narenas < 1) narenas = 1;
  if (narenas > MAX_ARENAS) narenas = MAX_ARENAS;
  narenas_limit = narenas;
  atomic_store(&arenas_in_use, narenas);
  oom_reserve_fill();
  return arena_get(0) != NULL;
}

arena_t *arena_get(unsigned i) {
  if (i >= narenas_limit) return NULL;
  arena_t *a = __atomic_load_n(&arenas[i], __ATOMIC_ACQUIRE);
  tessera_assert(a == NULL || a->index == i);
  if (likely(a != NULL)) return a;
  lock_acquire(&arenas_lock);
  a = arenas[i];
  if (a == NULL) {
    a = base_alloc(sizeof(arena_t));
    if (a != NULL) {
      arena_init(a, i);
      a->created_ns = os_now_ns();
      __atomic_store_n(&arenas[i], a, __ATOMIC_RELEASE);
      atomic_fetch_add(&narenas_created, 1);
    }
  }
  lock_release(&arenas_lock);
  return a;
}

arena_t *arena_lookup(unsigned i) {
  if (i >= arenas_count()) return NULL;
  return i < narenas_limit ? arena_get(i) : __atomic_load_n(&arenas[i], __ATOMIC_ACQUIRE);
}

arena_t *arena_create(void) {
  arena_t *a = NULL;
  lock_acquire(&arenas_lock);
  unsigned i = atomic_load(&arenas_in_use);
  if (i < MAX_ARENAS) {
    a = base_alloc(sizeof(arena_t));
    if (a != NULL) {
      arena_init(a, i);
      a->created_ns = os_now_ns();
      __atomic_store_n(&arenas[i], a, __ATOMIC_RELEASE);
      atomic_fetch_add(&narenas_created, 1);
      atomic_store_explicit(&arenas_in_use, i + 1, memory_order_release);
    }
  }
  lock_release(&arenas_lock);
  return a;
}

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

static _Atomic unsigned nthreads_peak;

unsigned arenas_nthreads_peak(void) { return atomic_load_explicit(&nthreads_peak, memory_order_relaxed); }

void arenas_note_nthreads(unsigned n) {
  unsigned peak = atomic_load_explicit(&nthreads_peak, memory_order_relaxed);
  while (n > peak && !atomic_compare_exchange_weak_explicit(&nthreads_peak, &peak, n, memory_order_relaxed,
                                                            memory_order_relaxed)) {
  }
}

/* The threads bound now, plus the one choosing: two threads choosing at the same moment
 * may both count the same total (the stats refresh samples the total again). */
static void note_new_thread(void) {
  unsigned n = 1, count = arenas_count();
  for (unsigned i = 0; i < count; i++) {
    arena_t *a = __atomic_load_n(&arenas[i], __ATOMIC_ACQUIRE);
    if (a != NULL) n += atomic_load_explicit(&a->nthreads, memory_order_relaxed);
  }
  arenas_note_nthreads(n);
}

/* Whether name is one of arena_exclusive's |-separated names. */
static bool name_is_exclusive(const char *name) {
  size_t len = strlen(name);
  for (const char *p = opt_arena_exclusive; *p != '\0';) {
    const char *bar = strchr(p, '|');
    size_t n = bar != NULL ? (size_t)(bar - p) : strlen(p);
    if (n == len && len > 0 && memcmp(p, name, len) == 0) return true;
    if (bar == NULL) break;
    p = bar + 1;
  }
  return false;
}

/* An exclusive arena for the calling thread: a free one left by an exited thread of a
 * matching name, else a new one; NULL when MAX_ARENAS are in use. */
static arena_t *claim_exclusive_arena(void) {
  uintptr_t me = thread_marker();
  unsigned count = arenas_count();
  for (unsigned i = narenas_limit; i < count; i++) {
    arena_t *a = __atomic_load_n(&arenas[i], __ATOMIC_ACQUIRE);
    uintptr_t free_owner = 0;
    if (a != NULL && a->exclusive &&
        atomic_compare_exchange_strong(&a->exclusive_owner, &free_owner, me))
      return a;
  }
  arena_t *a = arena_create();
  if (a == NULL) return NULL;
  a->exclusive = true;
  atomic_store(&a->exclusive_owner, me);
  return a;
}

arena_t *arena_exclusive_check(void) {
  if (opt_arena_exclusive[0] == '\0' || tls_thread.exclusive_arena != NULL) return NULL;
  if (tls_thread.arena != NULL && (tls_thread.arena_pinned || tls_thread.name_checks >= ARENA_NAME_CHECKS))
    return NULL;
  if (tls_thread.arena != NULL) tls_thread.name_checks++;
  char name[16];
  os_thread_name(name);
  if (!name_is_exclusive(name)) return NULL;
  arena_t *a = claim_exclusive_arena();
  if (a == NULL) return NULL;
  tls_thread.exclusive_arena = a;
  tls_thread.arena_pinned = true; /* the CPU balance must not move it away */
  return a;
}

arena_t *arena_choose_for_new_thread(void) {
  thread_stats_register();
  note_new_thread();
  arena_t *x = arena_exclusive_check();
  if (x != NULL) return x;
  if (opt_arena_select == ARENA_SELECT_LEAST_LOADED) {
    arena_t *a = least_loaded();
    return a != NULL ? a : arena_get(0);
  }
  /* Round-robin until every arena has had a thread, then the CPU we run on: with one
   * arena per CPU, threads that run at the same time mostly use different arenas. */
  unsigned n = atomic_fetch_add_explicit(&next_arena_rr, 1, memory_order_relaxed);
  if (n < narenas_limit) {
    arena_t *a = arena_get(n);
    if (a != NULL) return a;
  }
  return arena_for_cpu();
}

size_t large_usable_size(size_t size) {
  if (size <= TCACHE_MAX_LIMIT) return class_to_size(size_to_class(size));
  /* To the class up to the large cache's limit: a cached block serves every request of
   * its class (large_cache.h). Not in hardened mode, which caches none and puts its guard
   * page right after the pages the request needs. */
  if (size <= opt_tcache_large_max && !opt_hardened) return large_class_round(size);
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

bool arena_handle_oom(size_t request) {
  /* The OS refused: the free map's address-space reservation goes first. */
  size_t unmapped = oom_reason(request) == TESSERA_OOM_OS && free_map_release();
  unsigned n = arenas_count();
  for (unsigned i = 0; i < n; i++) {
    arena_t *a = __atomic_load_n(&arenas[i], __ATOMIC_ACQUIRE);
    if (a != NULL) unmapped += purge_trim(a);
  }
  bool notified = oom_notify(request);
  return unmapped > 0 || notified;
}

/*
 * A block bigger than RAM and swap together is refused (NULL, ENOMEM), as under glibc:
 * its mappings reserve no memory (MAP_NORESERVE), so the kernel would grant it, and the
 * program, which asked for what the machine cannot hold (a size computed wrong, a probe
 * of how much it may take), would be killed when it wrote it rather than told now.
 * Not where the system grants every mapping (vm.overcommit_memory 1). Asked only for
 * blocks of a GiB or more.
 */
#define HUGE_REQUEST_MIN ((size_t)1 << 30)
static bool request_possible(size_t usable) {
  return usable < HUGE_REQUEST_MIN || usable <= os_single_request_bound();
}

/* A large extent; see extent_alloc_gathering for gather_at, want_zero, *zeroed and
 * *gathered. NULL for a request beyond memory (request_possible). */
static extent_t *large_extent(arena_t *a, size_t usable, size_t align, size_t gather_at, bool want_zero, bool *zeroed,
                              size_t *gathered) {
  if (!request_possible(usable)) return NULL;
  lock_acquire(&a->extent_lock);
  stash_make_room(a, STASH_LARGE, usable / PAGE);
  extent_t *e = extent_alloc_gathering(a, usable / PAGE, align / PAGE, large_code(usable), gather_at, want_zero, zeroed,
                                       gathered);
  if (e != NULL) {
    a->large_allocated += usable;
    a->nmalloc_large++;
    unsigned j = large_class_index(usable);
    a->lextent_nmalloc[j]++;
    a->lextent_cur[j]++;
  }
  purge_tick_unlock(a);
  return e;
}

static void arena_free_large_unguarded(arena_t *a, extent_t *e, bool moved);

void *arena_malloc_large(arena_t *a, size_t size, size_t align, bool zero) {
  tessera_assert(align >= PAGE && (align & (align - 1)) == 0);
  lock_assert_not_held(&a->extent_lock);
  size_t usable = large_usable_size(size);
  if (usable == 0) return NULL;
  /* Hardened mode: one page more above 32 KiB, the guard page after the block. */
  bool guarded = hardened_has_guard(usable);
  if (unlikely(guarded)) usable += PAGE;
  bool zeroed;
  size_t gathered;
  extent_t *e = large_extent(a, usable, align, 0, zero, &zeroed, &gathered);
  if (unlikely(e == NULL) && request_possible(usable) && arena_handle_oom(usable))
    e = large_extent(a, usable, align, 0, zero, &zeroed, &gathered);
  if (e == NULL) return NULL;
  /* Only the pages that hold old data: the others read as zero (calloc of a big block
   * must not touch pages the program may never use). */
  if (zero) calloc_clear(e, (void *)e->addr, zeroed ? gathered * PAGE : usable);
  if (unlikely(guarded) && !hardened_guard((void *)(e->addr + usable - PAGE))) {
    arena_free_large_unguarded(a, e, false); /* the kernel refused (too many mappings): out of memory */
    return NULL;
  }
  return (void *)e->addr;
}

/* moved: e's pages were moved away (arena_realloc_large_moving). */
static void arena_free_large_unguarded(arena_t *a, extent_t *e, bool moved) {
  tessera_assert(e->arena == a && e->state == EXTENT_LARGE);
  lock_acquire(&a->extent_lock);
  tessera_assert(a->large_allocated >= e->npages * PAGE);
  a->large_allocated -= e->npages * PAGE;
  a->ndalloc_large++;
  unsigned j = large_class_index(e->npages * PAGE);
  a->lextent_ndalloc[j]++;
  a->lextent_cur[j]--;
  if (moved) extent_free_moved(a, e);
  else extent_free(a, e);
  purge_tick_unlock(a);
}

void arena_free_large(arena_t *a, extent_t *e) {
  if (unlikely(hardened_has_guard(e->npages * PAGE - PAGE))) hardened_unguard((void *)(e->addr + e->npages * PAGE - PAGE));
  arena_free_large_unguarded(a, e, false);
}

/* Off for good once the kernel turns out not to move pages (before Linux 5.7; valgrind). */
static _Atomic bool move_unsupported;

/*
 * Whether realloc moves block e's pages to `to` rather than copying them. Onto pages
 * that are not resident (fresh or released), always. Onto free pages that are, a move
 * throws them away (the kernel unmaps the destination), to be faulted in again by
 * whatever takes the old block's pages next, while a copy faults nothing if both sides
 * are in memory. But free pages are not all in memory (a block the program wrote 64 KiB
 * of leaves the rest of its pages free and untouched), and a copy faults in every such
 * page it writes, and every page of the old block it reads that the program never wrote
 * (where the kernel maps no zero page for reads). So where at most half the pages of
 * either side are in memory (mincore), the pages move.
 */
#define MOVE_RESIDENT_SHARE_MAX 2 /* moved when at most 1/2 of a side's pages are resident */
COLD_TEXT static bool mostly_not_resident(uintptr_t addr, size_t npages) {
  size_t resident = os_count_resident((void *)addr, npages);
  return resident != SIZE_MAX && resident * MOVE_RESIDENT_SHARE_MAX <= npages;
}

COLD_TEXT static bool move_pays(const extent_t *e, uintptr_t to, bool onto_fresh) {
  return onto_fresh || mostly_not_resident(to, e->npages) || mostly_not_resident(e->addr, e->npages);
}

void *arena_realloc_large_moving(arena_t *a, extent_t *e, size_t new_usable) {
  tessera_assert(!opt_hardened && e->state == EXTENT_LARGE && new_usable > e->npages * PAGE);
  bool zeroed;
  size_t gathered, old = e->npages * PAGE;
  /* Resident free pages gathered above the old block's pages (they move below them). */
  extent_t *f = large_extent(a, new_usable, PAGE, e->npages, false, &zeroed, &gathered);
  if (unlikely(f == NULL) && request_possible(new_usable) && arena_handle_oom(new_usable))
    f = large_extent(a, new_usable, PAGE, e->npages, false, &zeroed, &gathered);
  if (f == NULL) return NULL;
  void *q = (void *)f->addr;
  os_move_result_t moved = OS_MOVE_UNSUPPORTED;
  if (!atomic_load_explicit(&move_unsupported, memory_order_relaxed) && move_pays(e, f->addr, zeroed))
    moved = os_move_pages((void *)e->addr, q, old);
  if (moved == OS_MOVE_LOST) fatal("realloc(): lost the mapping of a new block while moving the old one's pages (mremap)");
  if (moved == OS_MOVED) {
    arena_free_large_unguarded(e->arena, e, true);
    return q;
  }
  if (moved == OS_MOVE_UNSUPPORTED && zeroed) atomic_store_explicit(&move_unsupported, true, memory_order_relaxed);
  memcpy(q, (void *)e->addr, old);
  arena_free_large(e->arena, e);
  return q;
}

bool arena_resize_large_in_place(arena_t *a, extent_t *e, size_t new_usable) {
  if (unlikely(opt_hardened)) return false; /* the guard page stays where it is */
  tessera_assert(e->arena == a && e->state == EXTENT_LARGE && new_usable % PAGE == 0);
  size_t old_pages = e->npages, new_pages = new_usable / PAGE;
  if (new_pages == old_pages) return true;
  if (new_pages > old_pages && !request_possible(new_usable)) return false;
  bool ok;
  lock_acquire(&a->extent_lock);
  if (new_pages > old_pages) ok = extent_grow_in_place(a, e, new_pages, large_code(new_usable));
  else ok = extent_shrink_in_place(a, e, new_pages, large_code(new_usable));
  if (ok) {
    e->calloc_measure = 0; /* its pages are not the ones a calloc gave back any more */
    a->large_allocated = a->large_allocated - old_pages * PAGE + new_pages * PAGE;
    a->lextent_cur[large_class_index(old_pages * PAGE)]--;
    a->lextent_cur[large_class_index(new_pages * PAGE)]++;
  }
  lock_release(&a->extent_lock);
  return ok;
}

void arena_free_small(extent_t *slab, void *p) {
  arena_t *a = slab->arena;
  tessera_assert(slab->state == EXTENT_SLAB && slab->class_id < NSMALL);
  bin_t *bin = &a->bins[slab->class_id];
  bin_lock(a, bin);
  bin_free_locked(a, bin, slab, p);
  lock_release(&bin->lock);
  purge_run_deferred(); /* what a decay slice took out meanwhile */
}

/*
 * fork: every lock, in the documented lock order (src/README.md), except the bins'. Those
 * (one per class and arena, on a few pages of each arena) are not taken: each arena's
 * gate closes, which makes every thread give a bin lock back as soon as it takes one
 * (bin_lock), and the handler waits until each is free. Taken, every one would be
 * written again in the parent right after fork, and each page of them copied (copy on
 * write). A bin lock the forking thread holds itself (fork from a signal handler that
 * interrupted malloc) is left as it is.
 */
static bool bin_lock_busy(const lock_t *l, uint32_t me) {
  uint32_t s = atomic_load(&l->state);
  return s != 0 && (s & ~LOCK_WAITERS) != me;
}

COLD_TEXT void arenas_fork_prepare(void) {
  lock_fork_prepare(&arenas_lock);
  unsigned n = arenas_count();
  uint32_t me = lock_my_id();
  for (unsigned i = 0; i < n; i++)
    if (arenas[i] != NULL) atomic_store(&arenas[i]->fork_gate, true);
  for (unsigned i = 0; i < n; i++)
    if (arenas[i] != NULL)
      for (unsigned c = 0; c < NSMALL; c++)
        while (bin_lock_busy(&arenas[i]->bins[c].lock, me)) os_yield();
  for (unsigned i = 0; i < n; i++)
    if (arenas[i] != NULL) lock_fork_prepare(&arenas[i]->extent_lock);
}

COLD_TEXT static void arenas_fork_release(void) {
  unsigned n = arenas_count();
  for (unsigned i = 0; i < n; i++)
    if (arenas[i] != NULL) {
      lock_fork_release(&arenas[i]->extent_lock);
      atomic_store(&arenas[i]->fork_gate, false);
    }
  lock_fork_release(&arenas_lock);
}

COLD_TEXT void arenas_fork_parent(void) { arenas_fork_release(); }
COLD_TEXT void arenas_fork_child(void) {
  /* A thread gone in the child may have held a bin lock at fork, between taking it and
   * giving it back at the gate, having changed nothing: free again. */
  uint32_t me = lock_my_id();
  for (unsigned i = 0; i < arenas_count(); i++)
    if (arenas[i] != NULL)
      for (unsigned c = 0; c < NSMALL; c++)
        if (bin_lock_busy(&arenas[i]->bins[c].lock, me)) atomic_store(&arenas[i]->bins[c].lock.state, 0);
  for (unsigned i = 0; i < arenas_count(); i++)
    if (arenas[i] != NULL) purge_fork_child(arenas[i]);
  arenas_fork_release();
  for (unsigned i = 0; i < arenas_count(); i++)
    if (arenas[i] != NULL) { /* only what changes: each page written is copied */
      if (atomic_load(&arenas[i]->nthreads) != 0) atomic_store(&arenas[i]->nthreads, 0);
      if (arenas[i] != tls_thread.exclusive_arena && atomic_load(&arenas[i]->exclusive_owner) != 0)
        atomic_store(&arenas[i]->exclusive_owner, 0);
    }
  thread_stats_fork_child(); /* its lock is held until stats_fork_release */
}
