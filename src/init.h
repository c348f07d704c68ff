/* SPDX-License-Identifier: MIT */
/*
 * Start-up: the one boot path. Every entry point that needs the allocator set up calls
 * boot_ensure() first: malloc's and free's slow paths, the control interface, the stats
 * printers, the jemalloc API. (The fast paths need no test: a thread's empty cache sends
 * its first calls to the slow paths.) Boot reads the options, derives the size classes,
 * reserves the free map, creates the first arena and registers the fork handlers; it
 * never allocates, so it can run inside the first malloc, even one the dynamic loader
 * makes before libc is fully up.
 */
#ifndef TESSERA_INIT_H
#define TESSERA_INIT_H

#include "types.h"

enum { BOOT_NONE, BOOT_RUNNING, BOOT_DONE };
extern _Atomic int boot_state;

bool boot_slow(void);
/* True once the allocator is set up (booting now if needed). False only inside boot
 * itself (a recursive call from boot's own code), where nothing may allocate. */
static inline __attribute__((always_inline)) bool boot_ensure(void) {
  return likely(atomic_load_explicit(&boot_state, memory_order_acquire) == BOOT_DONE) || boot_slow();
}
static inline bool boot_done(void) {
  return atomic_load_explicit(&boot_state, memory_order_acquire) == BOOT_DONE;
}

/* Set once the library's constructor has run: libc is fully up, so threads may be
 * started (the first allocations can come from the dynamic loader, before that). */
extern _Atomic bool boot_constructed;

#endif
