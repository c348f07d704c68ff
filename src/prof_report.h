/* SPDX-License-Identifier: MIT */
/*
 * prof_report: human-readable text from a snapshot: the top allocation sites by
 * estimated bytes in use (the summary written next to each dump, and the leak report
 * at exit, which is the same list taken when only leaked blocks are live), and in the
 * summary also the top sites by bytes allocated since the start (or the last
 * prof.reset), freed or not: what a program that frees everything before it exits
 * allocated most.
 * Each site is its stack, one symbolized frame per line. Call inside
 * prof_modules_locked.
 */
#ifndef TESSERA_PROF_REPORT_H
#define TESSERA_PROF_REPORT_H

#include "prof_out.h"
#include "prof_sample.h"
#include "prof_symbolize.h"

/* Writes the title line, the totals, then up to max_sites sites with live memory,
 * largest first, and with_allocated, a second section of up to max_sites sites by
 * bytes allocated. s is sorted in place. */
void prof_report_write(prof_out_t *o, prof_snapshot_t *s, prof_symbolizer_t *sym, const char *title,
                       unsigned max_sites, unsigned max_frames, bool with_allocated);
/* One frame: "name+0xoff (module)" or "module+0xoff". */
void prof_report_frame(prof_out_t *o, prof_symbolizer_t *sym, uintptr_t pc);

#endif
