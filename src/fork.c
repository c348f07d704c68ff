/* SPDX-License-Identifier: MIT */
#include "fork.h"

#include "exact_class.h"

#include "arena.h"
#include "background.h"
#include "base.h"
#include "lock.h"
#include "options.h"
#include "os.h"
#include "prof_modules.h"
#include "prof_sample.h"
#include "prof_timeline.h"
#include "stats.h"
#include "tcache.h"
#include "thread.h"

/* glibc exports these; weak so that tessera still links and runs on another libc. */
extern void _IO_list_lock(void) __attribute__((weak));
extern void _IO_list_unlock(void) __attribute__((weak));
extern void _IO_list_resetlock(void) __attribute__((weak));

/* The profiler's locks only with prof:true: without it nothing ever takes them, and every
 * lock the handlers take is a page the parent writes again right after fork, which
 * copies it (copy on write): the profiler's 32 locks cost a program that forks without
 * it 6 page copies a fork (api.fork_pages; a forking shell or make pays them). */
COLD_TEXT static void fork_prepare(void) {
  exact_class_fork_prepare(); /* taken with no other lock held */
  if (_IO_list_lock) _IO_list_lock();
  if (opt_prof) {
    prof_modules_fork_prepare(); /* the profiler's stack captures and symbolizing */
    prof_sample_fork_prepare();  /* the profiler's tables: taken with no other lock held */
  }
  stats_fork_prepare();
  tcache_fork_prepare();
  arenas_fork_prepare();
  base_fork_prepare();
}

COLD_TEXT static void fork_parent(void) {
  exact_class_fork_release();
  base_fork_parent();
  arenas_fork_parent();
  tcache_fork_parent();
  stats_fork_release();
  if (opt_prof) {
    prof_sample_fork_parent();
    prof_modules_fork_parent();
  }
  if (_IO_list_unlock) _IO_list_unlock();
}

COLD_TEXT static void fork_child(void) {
  exact_class_fork_release();
  base_fork_child();
  arenas_fork_child();
  tcache_fork_child();
  stats_fork_release();
  if (opt_prof) {
    prof_sample_fork_child();
    prof_modules_fork_child();
  }
  prof_timeline_fork_child();
  background_fork_child();
  /* glibc may or may not have reset the list lock already (it does for multi-threaded
   * parents); only this thread exists now, so resetting it is always right. */
  if (_IO_list_resetlock) _IO_list_resetlock();
}

void fork_register(void) { lock_fork_handlers(fork_prepare, fork_parent, fork_child); }

/* The profiler, the timeline and hardened mode have state a single-threaded program's
 * fork child must fix up too (the timeline's file, the quarantine's handlers, which
 * must come after these): their handlers go in at once. */
void fork_arm_if_needed(void) {
  if (opt_prof || opt_timeline_ms != 0 || opt_hardened) lock_fork_handlers_arm();
}
