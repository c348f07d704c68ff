/* SPDX-License-Identifier: MIT */
/*
 * prof_dump: writes the profile files of one dump and the leak report.
 *
 *   <prefix>.<pid>.<seq>.<trigger>.heap    jeprof's heap_v2 text (prof_jeprof.h)
 *   <prefix>.<pid>.<seq>.<trigger>.pb.gz   pprof's profile.proto, gzipped (prof_pprof.h)
 *   <prefix>.<pid>.summary.txt             top allocation sites, symbolized (rewritten
 *                                          by every dump; the launcher prints it)
 *
 * trigger: 'f' final (at exit), 'u' user (ctl / manual), 'i' interval (every
 * 2^lg_prof_interval allocated bytes), 'm' new maximum of active memory. seq counts the
 * dumps of the process from 0. Call with no allocator lock held; never allocates
 * except base_alloc.
 */
#ifndef TESSERA_PROF_DUMP_H
#define TESSERA_PROF_DUMP_H

#include <stdbool.h>

#define PROF_PATH_MAX 1024
#define PROF_SUMMARY_SITES 20

/* Writes the three files; false if any could not be written. */
bool prof_dump(const char *prefix, char trigger);
/* prof.dump with a file name: jeprof's profile to heap_path and pprof's to
 * <heap_path>.pb.gz (no summary). */
bool prof_dump_named(const char *heap_path);
/* Writes the leak report (memory still live, estimated from samples, largest first) to
 * file descriptor fd. Meant for exit; returns false if nothing could be written. */
bool prof_leak_report(int fd, unsigned max_sites);
/* The name the next dump with this prefix and trigger gets (for messages and tests). */
void prof_dump_filename(char *buf, unsigned long size, const char *prefix, unsigned seq, char trigger,
                        const char *suffix);

#endif
