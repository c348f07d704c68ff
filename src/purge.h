/* SPDX-License-Identifier: MIT */
/*
 * Purging: giving an arena's unused pages back to the OS on the decay curves (decay.c),
 * under a cap that follows the recent peak of live pages, within a time budget per call.
 *
 * Allocator calls run a bounded slice of it (purge_tick_unlock) whenever they hold the extent
 * lock anyway; the background thread (background.c) runs it while the program is idle.
 */
#ifndef TESSERA_PURGE_H
#define TESSERA_PURGE_H

#include "extent.h"
#include "types.h"

/* Decay with the extent lock held: moves the pages due by now, stopping at deadline
 * (0: no limit). Returns pages moved. */
size_t purge_decay_locked(arena_t *a, uint64_t now, uint64_t deadline);
/* Decay within the time budget of one allocator call, then the extent lock (held on
 * entry) released: the dirty pages due go to the OS after it is released (extent.h,
 * "Purging with the extent lock released"). */
void purge_tick_unlock(arena_t *a);
/* The same where a bin lock is still held: the pages due go to the OS at the thread's
 * next purge_run_deferred, which the bin's code calls once it has released its lock. */
void purge_tick_defer(arena_t *a);
typedef struct purge_deferred {
  extent_batch_t batch;
  arena_t *arena; /* whose extents the batch holds */
  bool busy;
} purge_deferred_t;
extern INTERNAL __thread purge_deferred_t purge_deferred __attribute__((tls_model("initial-exec")));
void purge_hand_back_deferred(void);
/* Hands back the pages the thread's last decay slices took out, if any. No lock held. */
static inline void purge_run_deferred(void) {
  if (unlikely(purge_deferred.batch.n != 0)) purge_hand_back_deferred();
}
/* In a forked child, extent lock held: the extents other threads were handing back at
 * the fork go back to the dirty set. */
void purge_fork_child(arena_t *a);
/* Gives unused pages back to the OS: all = every dirty and muzzy page now, else what
 * the decay curves say is due now. Returns pages moved. Takes the extent lock. */
size_t purge_arena(arena_t *a, bool all);

/* Gives back everything the arena holds unused: empty stashed slabs, dirty and muzzy
 * pages, and the address space of retained ones (unmapped). Returns pages unmapped.
 * purge_trim takes the extent lock; purge_trim_locked is called with it held. */
size_t purge_trim(arena_t *a);
size_t purge_trim_locked(arena_t *a);

/* Set (under an extent lock) when an arena's unused pages pass background_thread_auto;
 * the next allocator call outside the locks starts the background thread. */
extern _Atomic bool purge_wants_background;
/* Set by the background thread while it runs: no need to ask for it. */
extern _Atomic bool purge_background_active;

#endif
