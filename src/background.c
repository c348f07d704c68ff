/* SPDX-License-Identifier: MIT */
#include "background.h"

#include "arena.h"
#include "lock.h"
#include "options.h"
#include "os.h"
#include "purge.h"

_Atomic int background_state;

/* How often the thread looks at the arenas: decay epochs are decay_ms / 200 long, so
 * 50 ms keeps the curve smooth for any decay time of 10 s or more, and costs nothing
 * measurable (20 wake-ups a second). */
#define BACKGROUND_INTERVAL_NS ((uint64_t)50 * 1000000)
/* Longest it holds one arena's lock at a time. */
#define BACKGROUND_SLICE_NS ((uint64_t)2 * 1000000)

static void decay_all_arenas(void) {
  for (unsigned i = 0; i < arenas_count(); i++) {
    arena_t *a = arenas[i];
    if (a == NULL) continue;
    for (;;) { /* slices, releasing the lock in between so allocations get through */
      lock_acquire(&a->extent_lock);
      uint64_t now = os_now_ns();
      size_t moved = purge_decay_locked(a, now, now + BACKGROUND_SLICE_NS);
      bool more = os_now_ns() >= now + BACKGROUND_SLICE_NS && moved > 0;
      lock_release(&a->extent_lock);
      if (!more) break;
    }
  }
}

/* Each start is a generation: a thread ends when background_stop has moved past its own. */
static _Atomic unsigned generation;

COLD_TEXT static void background_main(void) {
  unsigned mine = atomic_load(&generation);
  for (;;) {
    os_sleep_ns(BACKGROUND_INTERVAL_NS);
    if (atomic_load(&generation) != mine) return;
    decay_all_arenas();
  }
}

COLD_TEXT bool background_stop(void) {
  int expected = BG_RUNNING;
  if (!atomic_compare_exchange_strong(&background_state, &expected, BG_STOPPING)) return expected != BG_STARTING;
  atomic_fetch_add(&generation, 1); /* the thread sees it at its next wake-up and returns */
  atomic_store(&purge_background_active, false);
  atomic_store(&background_state, BG_NONE);
  return true;
}

COLD_TEXT bool background_start(void) {
  int expected = BG_NONE;
  if (!atomic_compare_exchange_strong(&background_state, &expected, BG_STARTING))
    return expected != BG_FAILED;
  atomic_fetch_add(&generation, 1); /* a stopped thread still asleep must not come back */
  lock_fork_handlers_arm(); /* a fork child must know that the thread is not there */
  if (!os_start_service_thread(background_main, "tessera-bg")) {
    os_write_stderr("tessera: background_thread: could not start the thread; memory is returned on allocation activity only\n");
    atomic_store(&background_state, BG_FAILED);
    return false;
  }
  atomic_store(&purge_background_active, true);
  atomic_store(&background_state, BG_RUNNING);
  return true;
}

void background_start_wanted(void) {
  if (atomic_load_explicit(&background_state, memory_order_relaxed) != BG_NONE) return;
  atomic_store_explicit(&purge_wants_background, false, memory_order_relaxed);
  background_start();
}

/* Writes only what the child must change: each page it writes is copied (fork.c). */
COLD_TEXT void background_fork_child(void) {
  if (atomic_load(&purge_wants_background)) atomic_store(&purge_wants_background, false);
  if (atomic_load(&purge_background_active)) atomic_store(&purge_background_active, false);
  int s = atomic_load(&background_state);
  if (s == BG_RUNNING || s == BG_STARTING) atomic_store(&background_state, BG_NONE);
}
