#include "background.h"

#include <pthread.h>
#include <signal.h>
#include <time.h>

#include "arena.h"
#include "lock.h"
#include "options.h"
#include "os.h"

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
      size_t moved = arena_decay_locked(a, now, now + BACKGROUND_SLICE_NS);
      bool more = os_now_ns() >= now + BACKGROUND_SLICE_NS && moved > 0;
      lock_release(&a->extent_lock);
      if (!more) break;
    }
  }
}

static void *background_main(void *arg) {
  (void)arg;
  sigset_t all;
  sigfillset(&all);
  pthread_sigmask(SIG_BLOCK, &all, NULL); /* signals are for the program's threads */
  for (;;) {
    struct timespec ts = {0, (long)BACKGROUND_INTERVAL_NS};
    nanosleep(&ts, NULL);
    decay_all_arenas();
  }
  return NULL;
}

_Atomic bool background_requested;

static void start_thread(void);

void background_maybe_start(void) {
  if (opt_background_thread) start_thread();
}

void background_start_requested(void) {
  atomic_store(&background_requested, false);
  start_thread();
}

static void start_thread(void) {
  int expected = BG_NONE;
  if (!atomic_compare_exchange_strong(&background_state, &expected, BG_STARTING)) return;
  pthread_attr_t attr;
  pthread_t thread;
  pthread_attr_init(&attr);
  pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
  pthread_attr_setstacksize(&attr, 64 * 1024);
  int err = pthread_create(&thread, &attr, background_main, NULL);
  pthread_attr_destroy(&attr);
  if (err != 0) {
    os_write_stderr("tessera: background_thread: could not start the thread; memory is returned on allocation activity only\n");
    atomic_store(&background_state, BG_FAILED);
    return;
  }
  pthread_setname_np(thread, "tessera-bg");
  atomic_store(&background_state, BG_RUNNING);
}

void background_fork_child(void) {
  atomic_store(&background_requested, false);
  int s = atomic_load(&background_state);
  if (s == BG_RUNNING || s == BG_STARTING) atomic_store(&background_state, BG_NONE);
}
