/* SPDX-License-Identifier: MIT */
/*
 * fork: the child must be able to allocate, even when other threads were inside malloc
 * or inside stdio (which allocates) when fork was called, and even when fork is called
 * from a signal handler that interrupted malloc.
 *
 * The prepare handler takes every allocator lock, in the lock order (src/README.md), so
 * the child inherits consistent state. It first takes glibc's stdio list lock
 * (_IO_list_lock, recursive): stdio code holds that lock while it allocates, so taking
 * it after our locks (as glibc's fork does once the handlers have run) would be a
 * lock-order inversion and a deadlock. Taking it first makes the order list lock ->
 * allocator locks everywhere.
 */
#ifndef TESSERA_FORK_H
#define TESSERA_FORK_H

/* Hands the handlers to the locks (once, at boot, before another thread may take a
 * lock): they are registered with libc once the process has a second thread (lock.h). */
void fork_register(void);
/* Registers them at once when the options need them even without a second thread. May
 * allocate: after boot. */
void fork_arm_if_needed(void);

#endif
