/* SPDX-License-Identifier: MIT */
/*
 * prof_jeprof: the text heap profile that jemalloc's jeprof reads ("heap_v2"):
 *
 *   heap_v2/<mean sample interval>
 *     t*: <live objects>: <live bytes> [<allocated objects>: <allocated bytes>]
 *   @ 0x<pc> 0x<pc> ...
 *     t*: ... (the same four numbers for this stack)
 *   ...
 *
 *   MAPPED_LIBRARIES:
 *   <the text of /proc/self/maps>
 *
 * The numbers are the raw sampled counts: jeprof unbiases them itself with
 * 1 / (1 - e^(-mean size / interval)) per stack (its AdjustSamples).
 */
#ifndef TESSERA_PROF_JEPROF_H
#define TESSERA_PROF_JEPROF_H

#include "prof_out.h"
#include "prof_sample.h"

void prof_jeprof_write(prof_out_t *o, const prof_snapshot_t *s);

#endif
