/* SPDX-License-Identifier: MIT */
/*
 * prof_unwind: the call stack of the calling thread as a list of return addresses.
 *
 * DWARF CFI first (prof_cfi.h: works for code built without frame pointers, such as
 * Debian's python3 and sqlite3), frame pointers for a PC without CFI (JIT code, hand
 * written assembly), and a clean stop on anything that does not check out: every read
 * is bounds-checked against the thread's stack or a module's loaded segments.
 *
 * Cost: the first capture on a thread reads /proc/self/maps once to learn the bounds of
 * the thread's stack; then each capture is one dl_iterate_phdr lock round trip plus one
 * FDE binary search and CFA program per frame (docs/profiling.md has the numbers).
 *
 * Never allocates except base_alloc when the module table grows; never takes an
 * allocator lock itself. The caller must not hold an allocator lock (see
 * prof_modules.h for why this makes deadlock impossible).
 */
#ifndef TESSERA_PROF_UNWIND_H
#define TESSERA_PROF_UNWIND_H

#include <stdint.h>

#define PROF_DEPTH_MAX 128

/* Stores up to max return addresses into pcs, innermost first, leaving out the skip
 * innermost frames (0 = the caller of prof_unwind_capture is pcs[0]). Returns the
 * number stored. */
unsigned prof_unwind_capture(uintptr_t *pcs, unsigned max, unsigned skip);
/* The same with frame pointers only (for comparison and as a cheap mode). */
unsigned prof_unwind_capture_fp(uintptr_t *pcs, unsigned max, unsigned skip);

#endif
