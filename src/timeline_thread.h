/* SPDX-License-Identifier: MIT */
/*
 * timeline_thread: with timeline_ms > 0, a service thread that appends the memory
 * counters (the stats layer's snapshot: what tessera_get_counters returns, plus the
 * muzzy pages) to <timeline_prefix>.<pid>.timeline.jsonl every timeline_ms
 * milliseconds (prof_timeline.h has the format), and a last line at exit. A child of
 * fork writes none (its parent's file is not its own); a program it execs starts its
 * own.
 */
#ifndef TESSERA_TIMELINE_THREAD_H
#define TESSERA_TIMELINE_THREAD_H

#include "options.h"

/* timeline_start_if_wanted once timeline_ms is set (cold, like the rest of the file). */
void timeline_start_wanted(void);
/* From the library's constructor (threads may be started from then on). The test is
 * inline: every program makes it, and the file's code is where a program that never
 * writes a timeline should not fault in a page of text. */
static inline void timeline_start_if_wanted(void) {
  if (opt_timeline_ms != 0) timeline_start_wanted();
}

#endif
