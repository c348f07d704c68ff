/* SPDX-License-Identifier: MIT */
/*
 * prof_timeline: the memory timeline, a JSON Lines file (one object per line).
 * The first line describes the process:
 *   {"type":"header","pid":..,"cmdline":[..],"start_unix_ms":..}
 * then one line per call to prof_timeline_append:
 *   {"t_ms":..,"pid":..,"allocated":..,"active":..,"resident":..,"mapped":..,
 *    "retained":..,"dirty":..,"muzzy":..,"metadata":..}
 * t_ms counts from prof_timeline_open. The counters come from the caller (the
 * allocator's stats); each line is written whole with one write(2), so a crash leaves
 * a readable file. tools/tessera-plot draws it.
 */
#ifndef TESSERA_PROF_TIMELINE_H
#define TESSERA_PROF_TIMELINE_H

#include <stdbool.h>
#include <stdint.h>

typedef struct prof_timeline_counters {
  uint64_t allocated, active, resident, mapped, retained, dirty, muzzy, metadata;
} prof_timeline_counters_t;

/* Creates path (truncating it) and writes the header line. False if it cannot. */
bool prof_timeline_open(const char *path);
/* Appends one line; does nothing when no timeline is open. Thread safe. */
void prof_timeline_append(const prof_timeline_counters_t *c);
void prof_timeline_close(void);
/* After fork, in the child: the child does not write into its parent's timeline. */
void prof_timeline_fork_child(void);

#endif
