/* SPDX-License-Identifier: MIT */
/*
 * prof_pprof: a heap profile in pprof's profile.proto format (github.com/google/pprof,
 * proto/profile.proto), written through prof_out (gzipped, as pprof expects).
 *
 * Sample types as in Go's heap profiles: alloc_objects/count, alloc_space/bytes,
 * inuse_objects/count, inuse_space/bytes (the default), with unbiased estimates as
 * values; period_type space/bytes with the mean sample interval. One mapping per
 * module (executable segment, file offset, build id), one location per distinct
 * return address (address - 1, the call instruction), functions named by the
 * symbolizer, so pprof needs no binaries to show names.
 */
#ifndef TESSERA_PROF_PPROF_H
#define TESSERA_PROF_PPROF_H

#include "prof_out.h"
#include "prof_sample.h"
#include "prof_symbolize.h"

/* Writes the profile of snapshot s; call inside prof_modules_locked (sym is built on
 * its table). Returns false if memory for the dedup tables could not be had. */
bool prof_pprof_write(prof_out_t *o, const prof_snapshot_t *s, prof_symbolizer_t *sym);

#endif
