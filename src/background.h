/* SPDX-License-Identifier: MIT */
/*
 * The optional background thread (background_thread:true, or started by itself once an
 * arena holds background_thread_auto unused bytes): wakes up periodically and runs every
 * arena's decay, so a program that has gone idle still returns memory. Started from an
 * allocation slow path once the library's constructor has run (threads cannot be
 * started earlier); never keeps the process from exiting (exit ends it); after fork the
 * child starts its own on its next allocation slow path.
 */
#ifndef TESSERA_BACKGROUND_H
#define TESSERA_BACKGROUND_H

#include "options.h"
#include "purge.h"
#include "types.h"

enum { BG_NONE, BG_STARTING, BG_RUNNING, BG_FAILED, BG_STOPPING };
extern _Atomic int background_state;

/* background_start_if_wanted once the thread is wanted. */
void background_start_wanted(void);
/* Starts the thread if it is wanted (the option, or purge_wants_background) and not
 * running. Call with no allocator lock held: starting a thread allocates. Inline: the
 * slow paths of malloc and free ask on every call, and by default nothing is wanted. */
static inline void background_start_if_wanted(void) {
  if (likely(!opt_background_thread && !atomic_load_explicit(&purge_wants_background, memory_order_relaxed))) return;
  background_start_wanted();
}
/* Starts the thread unless it runs (mallctl background_thread); false if it could not. */
bool background_start(void);
/* Stops the thread (mallctl background_thread false): it ends at its next wake-up,
 * within 50 ms; purging goes back to allocation activity. False if it is starting. A
 * later start makes a new thread; background_thread_auto may start one again. */
bool background_stop(void);
void background_fork_child(void);

#endif
