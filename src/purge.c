/* SPDX-License-Identifier: MIT */
#include "purge.h"

#include "config.h"
#include "decay.h"
#include "extent.h"
#include "lock.h"
#include "options.h"
#include "oom.h"
#include "os.h"
#include "stash.h"

_Atomic bool purge_wants_background;
_Atomic bool purge_background_active;

/* Decay work done inside one malloc or free is bounded by time, so no call stalls long
 * (the background thread, or later calls, continue where it stopped). */
#define DECAY_BUDGET_NS ((uint64_t)500 * 1000)
/* The slack's base: a quarter of the recent peak of active pages, between 4 and 64 MiB.
 * Proportional, so that a small heap does not keep several times its size in free
 * pages (a flat 64 MiB let a 10 MiB program keep 20 MiB of free pages it never reused). */
#define DIRTY_SLACK_MAX_PAGES ((size_t)16384)
#define DIRTY_SLACK_FLOOR_PAGES ((size_t)1024)

/* The slack: the base, plus the released pages the program needed again lately (up to
 * a quarter of the recent peak). A program that cycles big blocks through free and
 * malloc gets the room to keep them resident once releasing them has cost it page
 * faults (without it, a program cycling 20 blocks of 5-25 MiB released and faulted back
 * 2.9 GiB in 1500 steps); one whose freed pages stay unused keeps the base. A quarter,
 * not half: vectors grown by realloc to up to 8 MiB kept 159 MiB at their peak with half
 * (tcmalloc 134, jemalloc 112), 139 MiB with a quarter, for 4% more time (61k -> 66k page
 * faults); the cycling program is the same with either. */
static size_t dirty_slack(const arena_t *a) {
  size_t extra = a->refault_slack < a->active_peak_pages / 4 ? a->refault_slack : a->active_peak_pages / 4;
  if (!a->refaults_costly) extra = 0;
  size_t base = a->active_peak_pages / 4;
  if (base < DIRTY_SLACK_FLOOR_PAGES) base = DIRTY_SLACK_FLOOR_PAGES;
  if (base > DIRTY_SLACK_MAX_PAGES) base = DIRTY_SLACK_MAX_PAGES;
  return base + extra;
}

/*
 * The refaults grow the slack only while they cost time: at least
 * REFAULT_COSTLY_PAGES_PER_S released pages taken back per second (a page fault costs
 * about a microsecond: 2% of a CPU), measured over windows of REFAULT_WINDOW_NS. A
 * program whose threads come and go with a few blocks of up to 1 MiB refaulted 6,600
 * pages a second and kept 3.6 MiB more for them (17.3 MiB, glibc 10.5), which saved
 * 0.6% of its time; a program cycling blocks of 5-25 MiB refaults 300,000 a second
 * without the slack, and runs 2.4x slower.
 */
#define REFAULT_WINDOW_NS ((uint64_t)100 * 1000 * 1000)
#define REFAULT_COSTLY_PAGES_PER_S 20000u
static void refault_rate_update(arena_t *a, uint64_t now) {
  uint64_t elapsed = now - a->refault_window_start_ns;
  if (now < a->refault_window_start_ns || elapsed < REFAULT_WINDOW_NS) return;
  a->refaults_costly = (double)a->refault_window_pages * 1e9 >= (double)REFAULT_COSTLY_PAGES_PER_S * (double)elapsed;
  a->refault_window_start_ns = now;
  a->refault_window_pages = 0;
}

/*
 * Whatever the decay curve allows, the dirty stage keeps at most half of what active
 * pages fell from their recent peak, plus a slack (dirty_slack): a program that frees
 * faster than decay_ms (growing buffers, threads that come and go) cannot pile up free
 * pages far beyond what it recently needed, while a block freed and soon needed again
 * (multi-MiB blocks cycled by the program) stays resident. Half, not all: free pages
 * left behind by a phase are mostly in pieces the next phase cannot use whole (the
 * realloc-doubling program kept 190 MiB with all, 142 MiB with half; glibc 129). The
 * peak follows active down linearly over the decay time. Returns the pages the dirty
 * stage may keep under that cap.
 */
static size_t dirty_cap(arena_t *a, ssize_t dirty_ms, uint64_t epoch_before) {
  if (a->active_pages > a->active_peak_pages) a->active_peak_pages = a->active_pages;
  if (dirty_ms > 0 && a->dirty_decay.epoch_start_ns != epoch_before) {
    uint64_t epochs = (a->dirty_decay.epoch_start_ns - epoch_before) / ((uint64_t)dirty_ms * 1000000u / DECAY_NEPOCHS + 1);
    size_t excess = a->active_peak_pages - a->active_pages;
    a->active_peak_pages -= epochs >= DECAY_NEPOCHS ? excess : (size_t)(excess * epochs / DECAY_NEPOCHS);
    a->refault_slack -= epochs >= DECAY_NEPOCHS ? a->refault_slack : (size_t)(a->refault_slack * epochs / DECAY_NEPOCHS);
  }
  return (a->active_peak_pages - a->active_pages) / 2 + dirty_slack(a);
}

/* The dirty stage's pages of a down to keep_pages, moved to `next` under the lock, or
 * with a batch (purge_tick_unlock) taken out to be handed back after it. */
COLD_TEXT static size_t dirty_move_oldest(arena_t *a, unsigned next, size_t keep_pages, uint64_t deadline, extent_batch_t *batch) {
  if (batch == NULL || (batch->n > 0 && batch->to != next))
    return extent_move_oldest(a, EXTENT_DIRTY, next, keep_pages, deadline);
  batch->to = next;
  return extent_detach_oldest(a, keep_pages, batch);
}

/*
 * A pass that hands back a batch (purge_tick_unlock) gives back some pages more than
 * the cap needs, and leaves the curve's due pages until there are some: a system call
 * serves the whole batch (os_release_ranges), so its extents should come in numbers.
 * Passing just what each call's free or new slab had moved over the line handed back
 * one slab-sized extent a pass: eight threads passing blocks to each other made 14,282
 * calls for 69,532 pages.
 */
#define BATCH_MARGIN_PAGES ((size_t)128)
static size_t batch_margin(const extent_batch_t *batch, size_t bound) {
  if (batch == NULL) return 0;
  return bound / 8 < BATCH_MARGIN_PAGES ? bound / 8 : BATCH_MARGIN_PAGES;
}

/* purge_decay_locked; with a batch, the dirty stage's pages due are taken out into it
 * instead of handed back here (deadline then bounds the other stages' work only). */
static size_t decay_pass(arena_t *a, uint64_t now, uint64_t deadline, extent_batch_t *batch) {
  lock_assert_held(&a->extent_lock);
  ssize_t dirty_ms = atomic_load_explicit(&a->dirty_decay_ms, memory_order_relaxed);
  ssize_t muzzy_ms = atomic_load_explicit(&a->muzzy_decay_ms, memory_order_relaxed);
  /* With muzzy_decay_ms 0 the muzzy stage is skipped: dirty pages are released. */
  unsigned next = muzzy_ms != 0 ? EXTENT_MUZZY : EXTENT_RETAINED;
  size_t moved = 0;
  uint64_t epoch_before = a->dirty_decay.epoch_start_ns;
  refault_rate_update(a, now);
  decay_advance(&a->dirty_decay, dirty_ms, now, a->dirty.npages + a->stash_pages);
  size_t keep = decay_limit(&a->dirty_decay);
  size_t cap = dirty_cap(a, dirty_ms, epoch_before);
  if (dirty_ms >= 0 && keep > cap) keep = cap;
  size_t excess = a->dirty.npages + a->stash_pages > keep ? a->dirty.npages + a->stash_pages - keep : 0;
  if (excess > a->dirty.npages) stash_drain_oldest(a, excess - a->dirty.npages);
  /* Both bounds hold for the dirty set and the stash together. The stash goes only
   * where the dirty set alone cannot give what must go: its slabs are the ones the
   * program's bins take back next (a slab from the stash costs a heap pop, one made
   * from free pages an extent split and its page-map and free-map entries), and eight
   * threads passing blocks to each other, whose slabs empty and fill by the thousand,
   * spent a third of the allocator's instructions remaking slabs when every pass
   * drained the whole stash. */
  size_t dirty_keep = keep > a->stash_pages ? keep - a->stash_pages : 0;
  size_t dirty_cap_pages = cap > a->stash_pages ? cap - a->stash_pages : 0;
  /* The cap is a bound on memory, not a pace: what exceeds it goes now, whatever the
   * time budget (in steps of a few MiB per system call); the curve's share below it is
   * what the budget paces. */
  if (dirty_ms >= 0 && a->dirty.npages > dirty_cap_pages)
    moved += dirty_move_oldest(a, next, dirty_cap_pages - batch_margin(batch, dirty_cap_pages), 0, batch);
  if (a->dirty.npages > dirty_keep + (dirty_ms > 0 ? batch_margin(batch, dirty_keep) : 0))
    moved += dirty_move_oldest(a, next, dirty_keep, deadline, batch);
  /* Runs no request can use, whatever the curve allows (extent.c, "Free runs of fewer
   * pages than any slab"); not when the program asked to keep every free page. */
  if (dirty_ms >= 0) moved += extent_release_unusable(a, deadline);
  a->tick_dirty_keep = keep;
  decay_advance(&a->muzzy_decay, muzzy_ms, now, a->muzzy.npages);
  keep = decay_limit(&a->muzzy_decay);
  if (a->muzzy.npages > keep) moved += extent_move_oldest(a, EXTENT_MUZZY, EXTENT_RETAINED, keep, deadline);
  a->tick_muzzy_keep = keep;
  return moved;
}

size_t purge_decay_locked(arena_t *a, uint64_t now, uint64_t deadline) { return decay_pass(a, now, deadline, NULL); }

size_t purge_trim_locked(arena_t *a) {
  lock_assert_held(&a->extent_lock);
  stash_drain(a);
  return extent_trim(a);
}

COLD_TEXT size_t purge_trim(arena_t *a) {
  lock_acquire(&a->extent_lock);
  size_t unmapped = purge_trim_locked(a);
  lock_release(&a->extent_lock);
  return unmapped;
}

/* Calls of purge_tick_unlock that may skip the decay pass in a row, while both stages stay
 * within what the last pass let them keep: a pass reads the clock and walks the curve,
 * and a program allocating and freeing slabs or large blocks calls this on every one
 * (the curve itself moves in epochs of decay_ms / 200, so it loses nothing). */
#define PURGE_TICK_SKIP 15

/* True when this call may skip the decay pass. */
static bool tick_can_skip(arena_t *a) {
  if (a->tick_skipped >= PURGE_TICK_SKIP) return false;
  if (a->dirty.npages + a->stash_pages > a->tick_dirty_keep || a->muzzy.npages > a->tick_muzzy_keep) return false;
  a->tick_skipped++;
  return true;
}

/* The decay slice of purge_tick_unlock, the lock still held: what the dirty stage must
 * give back is taken out into batch. */
static void tick(arena_t *a, extent_batch_t *batch) {
  /* The OS refused memory lately: what is freed goes back at once, address space too. */
  if (unlikely(atomic_load_explicit(&extent_pressure, memory_order_relaxed))) purge_trim_locked(a);
  else if (unlikely(oom_reserve_wanted())) oom_reserve_fill(); /* given up, and memory is back */
  else if (tick_can_skip(a)) return;
  a->tick_skipped = 0;
  uint64_t now = os_now_ns();
  decay_pass(a, now, now + DECAY_BUDGET_NS, batch);
  /* Lots of unused memory: a thread that returns it even while the program is idle. */
  if (unlikely(opt_background_thread_auto != 0 &&
               (a->dirty.npages + a->stash_pages + a->muzzy.npages) * PAGE >= opt_background_thread_auto &&
               !atomic_load_explicit(&purge_background_active, memory_order_relaxed)))
    atomic_store_explicit(&purge_wants_background, true, memory_order_relaxed);
}

/* The thread's batch: taken out under an extent lock, handed back once the thread holds
 * no lock (purge_run_deferred). busy: being handed back (a signal handler's malloc
 * meanwhile purges under the lock). */
INTERNAL __thread purge_deferred_t purge_deferred __attribute__((tls_model("initial-exec")));

void purge_tick_defer(arena_t *a) {
  purge_deferred_t *d = &purge_deferred;
  bool batch_ok = !d->busy && (d->batch.n == 0 || d->arena == a);
  tick(a, batch_ok ? &d->batch : NULL);
  if (d->batch.n > 0) d->arena = a;
  lock_release(&a->extent_lock);
}

void purge_tick_unlock(arena_t *a) {
  purge_tick_defer(a);
  purge_run_deferred();
}

COLD_TEXT void purge_hand_back_deferred(void) {
  purge_deferred_t *d = &purge_deferred;
  arena_t *a = d->arena;
  d->busy = true;
  extent_hand_back_detached(&d->batch);
  lock_acquire(&a->extent_lock);
  extent_insert_detached(a, &d->batch);
  lock_release(&a->extent_lock);
  d->arena = NULL;
  d->busy = false;
}

COLD_TEXT void purge_fork_child(arena_t *a) {
  /* The threads handing back batches are gone, except this one if it forked from a
   * signal handler while it had a batch out: it finishes that batch itself, and the
   * others' extents stay out (their pages lost to this child, never reused). */
  if (purge_deferred.batch.n == 0) extent_restore_detached(a);
}

COLD_TEXT size_t purge_arena(arena_t *a, bool all) {
  lock_acquire(&a->extent_lock);
  if (all) stash_drain(a);
  size_t released = all ? extent_purge(a, 0) : purge_decay_locked(a, os_now_ns(), 0);
  lock_release(&a->extent_lock);
  return released;
}
