/*
 * fork: the child must be able to allocate, even when other threads were inside malloc
 * or inside stdio (which allocates) when fork was called, and even when fork is called
 * from a signal handler that interrupted malloc.
 *
 * The prepare handler takes every allocator lock, so the child inherits consistent
 * state. It first takes glibc's stdio list lock (_IO_list_lock, recursive): stdio code
 * holds that lock while it allocates, so taking it after our locks (as glibc's fork
 * does once the handlers have run) would be a lock-order inversion and a deadlock.
 * Taking it first makes the order list lock -> allocator locks everywhere.
 */
#include <pthread.h>

#include "arena.h"
#include "background.h"
#include "base.h"
#include "internal.h"
#include "lock.h"
#include "tcache.h"

/* glibc exports these; weak so that tessera still links and runs on another libc. */
extern void _IO_list_lock(void) __attribute__((weak));
extern void _IO_list_unlock(void) __attribute__((weak));
extern void _IO_list_resetlock(void) __attribute__((weak));

static void fork_prepare(void) {
  if (!malloc_initialized()) return;
  if (_IO_list_lock) _IO_list_lock();
  tcache_fork_prepare();
  arenas_fork_prepare();
  base_fork_prepare();
}

static void fork_parent(void) {
  if (!malloc_initialized()) return;
  base_fork_parent();
  arenas_fork_parent();
  tcache_fork_parent();
  if (_IO_list_unlock) _IO_list_unlock();
}

static void fork_child(void) {
  if (!malloc_initialized()) return;
  lock_id_reset(); /* this thread has a new id in the child */
  base_fork_child();
  arenas_fork_child();
  tcache_fork_child();
  background_fork_child();
  /* glibc may or may not have reset the list lock already (it does for multi-threaded
   * parents); only this thread exists now, so resetting it is always right. */
  if (_IO_list_resetlock) _IO_list_resetlock();
}

void fork_boot(void) { pthread_atfork(fork_prepare, fork_parent, fork_child); }
