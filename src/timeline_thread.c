/* SPDX-License-Identifier: MIT */
/* timeline_thread: see timeline_thread.h. */
#include "timeline_thread.h"

#include <stdatomic.h>

#include "options.h"
#include "os.h"
#include "prof_dump.h"
#include "prof_timeline.h"
#include "stats.h"

static _Atomic bool timeline_running;

COLD_TEXT static void counters_now(prof_timeline_counters_t *c) {
  stats_snapshot_lock(&stats_print_snapshot);
  stats_refresh(&stats_print_snapshot);
  const tessera_counters *t = &stats_print_snapshot.totals;
  c->allocated = t->allocated;
  c->active = t->active;
  c->resident = t->resident;
  c->mapped = t->mapped;
  c->retained = t->retained;
  c->dirty = t->dirty;
  c->muzzy = (uint64_t)stats_print_snapshot.merged.pmuzzy * PAGE;
  c->metadata = t->metadata;
  stats_snapshot_unlock(&stats_print_snapshot);
}

COLD_TEXT static void append_now(void) {
  prof_timeline_counters_t c;
  counters_now(&c);
  prof_timeline_append(&c);
}

COLD_TEXT static void timeline_main(void) {
  uint64_t period_ns = (uint64_t)opt_timeline_ms * 1000000u;
  uint64_t next = os_now_ns() + period_ns;
  while (atomic_load(&timeline_running)) {
    uint64_t now = os_now_ns();
    if (now < next) os_sleep_ns(next - now);
    next += period_ns;
    if (os_now_ns() > next) next = os_now_ns() + period_ns; /* stopped for a while: no burst */
    if (atomic_load(&timeline_running)) append_now();
  }
}

/* Cold, like the rest of this file: only programs with timeline_ms set come here. */
COLD_TEXT static void timeline_start(void) {
  char path[PROF_PATH_MAX];
  prof_dump_filename(path, sizeof(path), opt_timeline_prefix, 0, 0, ".timeline.jsonl");
  if (!prof_timeline_open(path)) {
    os_write_stderr("tessera: timeline_ms: cannot create the timeline file; no timeline\n");
    return;
  }
  append_now();
  atomic_store(&timeline_running, true);
  if (!os_start_service_thread(timeline_main, "tessera-tl")) {
    atomic_store(&timeline_running, false);
    os_write_stderr("tessera: timeline_ms: cannot start the timeline thread; only the first and last lines\n");
  }
}

COLD_TEXT void timeline_start_wanted(void) {
  if (atomic_load(&timeline_running)) return;
  timeline_start();
}

__attribute__((destructor)) static void timeline_at_exit(void) {
  if (opt_timeline_ms == 0) return;
  atomic_store(&timeline_running, false);
  append_now(); /* does nothing if no timeline is open (a fork child) */
  prof_timeline_close();
}
