/* SPDX-License-Identifier: MIT */
/*
 * Decay: how many free pages of a stage (dirty, or muzzy) an arena may keep right now.
 *
 * Pages that enter a stage are counted per epoch (decay_ms / 200 long). A page that
 * entered k epochs ago may stay with weight h(k), a smoothstep falling from 1 (just
 * freed) to 0 (decay_ms ago): limit = sum over epochs of pages_added * h(age). Pages
 * above the limit are moved on, oldest first. So memory is returned on a smooth curve
 * rather than in bursts, and pages reused soon after being freed never cost a syscall
 * (the idea of jemalloc's dirty/muzzy decay, with a smoothstep curve).
 */
#ifndef TESSERA_DECAY_H
#define TESSERA_DECAY_H

#include "types.h"

/* Starts d, all zero (fresh metadata), with decay time ms at now_ns: only the fields
 * that start non-zero are written, so a new arena's backlog pages stay untouched. */
void decay_start(decay_t *d, ssize_t ms, uint64_t now_ns);
/* Closes the epochs that have ended by now_ns. If ms differs from the decay time the
 * backlog was built with, starts over, counting current_pages as just added. */
void decay_advance(decay_t *d, ssize_t ms, uint64_t now_ns, size_t current_pages);
/* Pages the stage may keep now (call decay_advance first). */
size_t decay_limit(const decay_t *d);

#endif
