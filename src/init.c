/* SPDX-License-Identifier: MIT */
#include "init.h"

#include "arena.h"
#include "config.h"
#include "background.h"
#include "fatal.h"
#include "fork.h"
#include "free_map.h"
#include "options.h"
#include "os.h"
#include "prof_hooks.h"
#include "size_class.h"
#include "tcache.h"
#include "thread.h"
#include "timeline_thread.h"

_Atomic int boot_state;
_Atomic bool boot_constructed;
static uintptr_t boot_thread;

bool boot_slow(void) {
  int expected = BOOT_NONE;
  if (!atomic_compare_exchange_strong(&boot_state, &expected, BOOT_RUNNING)) {
    if (boot_thread == thread_marker()) return false; /* recursion: nothing may allocate here */
    while (atomic_load(&boot_state) != BOOT_DONE) os_yield();
    return true;
  }
  boot_thread = thread_marker();
  if (os_page_size() != PAGE) fatal("unsupported page size (tessera needs 4 KiB pages)");
  options_init();
  size_class_init(); /* after the options: slab_sizes shapes the table */
  free_map_boot();
  unsigned narenas = opt_narenas ? opt_narenas : os_ncpus();
  if (!arenas_init(narenas) || !tcache_boot()) fatal("out of memory during initialisation");
  prof_hooks_boot(); /* after tcache_boot: it redirects malloc's size -> bin table */
  tessera_assert(class_infos[0].size == QUANTUM && arena_get(0) != NULL);
  fork_register(); /* before any other thread may take a lock */
  atomic_store(&boot_state, BOOT_DONE);
  fork_arm_if_needed(); /* pthread_atfork may allocate: only now that malloc works */
  return true;
}

/* Boots tessera even in programs that never allocate, so that option warnings and
 * stats_print work everywhere, and starts the background thread if asked for. */
__attribute__((constructor)) static void tessera_constructor(void) {
  boot_ensure();
  atomic_store(&boot_constructed, true);
  background_start_if_wanted();
  prof_hooks_constructed();
  timeline_start_if_wanted();
}
