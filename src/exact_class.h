/* SPDX-License-Identifier: MIT */
/*
 * Exact classes: size classes made at run time for one exact size.
 *
 * A static class serves every size between the class below it and its own size, so a
 * program that allocates many blocks of one odd size wastes the difference on each
 * (SQLite's page cache asks for 1032 and 4368 bytes: classes 1152 and 4608, 10% and 5%
 * of its memory). More static classes would cost programs of varied sizes memory
 * instead (more slabs partly filled), so tessera watches each thread's refills: when,
 * over a window of EXACT_WINDOW refills of a static class above 128 bytes (where the
 * classes are more than a quantum apart), at least three quarters ask for one size
 * (rounded up to the 16-byte quantum) that wastes at least EXACT_MIN_WASTE_PCT percent
 * and at least 16 bytes of the class, that size becomes a class of its own: one of the
 * NEXACT_CLASSES slots after the static classes, for the sizes between the class below
 * it and itself (exact_classes:false turns this off; hardened mode never does it).
 *
 * The new class's facts (size_class.h) are written before any size maps to it; then the
 * lookup tables (class_of_lookup, the thread caches' and the profiler's) are redirected
 * with release stores, a byte or two at a time, which a reader sees old or new: either
 * is a class that fits the size. A thread's cache bin for the class is set up on its
 * first slow path for it (tcache_bin_setup_exact); until then the bin is one that never
 * caches. Blocks of the static class stay valid for every size they held: sized frees
 * compare static classes (free.c), and aligned requests use the static classes only
 * (an exact size need not be a multiple of the alignment).
 */
#ifndef TESSERA_EXACT_CLASS_H
#define TESSERA_EXACT_CLASS_H

#include "types.h"

#define EXACT_WINDOW 32        /* refills per vote */
#define EXACT_HITS_MIN 24      /* of them asking for one size */
#define EXACT_MIN_WASTE_PCT 5  /* of the static class's size, and at least a quantum */

/* The first static class that votes: 160 B, the first above 128 B (the classes below are
 * a quantum apart, so no size lies between two of them). */
#define EXACT_FIRST_VOTER 8u

/* The end of a window of votes of static class c in thread cache tc: makes the exact
 * class if one size won it. */
void exact_class_window_end(tcache_t *tc, unsigned c);

/* A refill of class c of thread cache tc, for a request of size bytes (0: unknown):
 * counted in the class's vote (a few instructions inline: a program calls into
 * exact_class.c only every EXACT_WINDOW refills of one class, so a small one never
 * maps its code). */
static inline void exact_class_count_refill(tcache_t *tc, unsigned c, size_t size) {
  if (c - EXACT_FIRST_VOTER >= NSTATIC_SMALL - EXACT_FIRST_VOTER || size == 0) return; /* c: size's class */
  exact_vote_t *v = &tc->exact_votes[c];
  uint16_t quanta = (uint16_t)((size + QUANTUM - 1) / QUANTUM);
  if (v->total == 0) v->quanta = quanta; /* a window's candidate: its first refill's size */
  v->hits += quanta == v->quanta;
  if (++v->total >= EXACT_WINDOW) exact_class_window_end(tc, c);
}

/* Sized frees (free.c): whether a block of small class c (actual usable bytes) may be
 * freed with a size whose class now has usable (or usable_alt) bytes, when neither is
 * actual: a class of the
 * same static class whose size the block holds (an exact class made for the size after
 * the block was allocated, or the block's own class is an exact one). */
bool exact_class_sized_free_fits(unsigned c, size_t actual, size_t usable, size_t usable_alt);

/* Makes an exact class of size bytes (a multiple of the quantum) for the sizes of
 * static class parent up to it; false if it cannot (no free slot, exact_classes:false,
 * hardened mode, too little waste, or the size is another class's already). */
bool exact_class_create(size_t size, unsigned parent);
/* How many exact classes this process has made; their ids follow the static classes'. */
unsigned exact_class_count(void);

void exact_class_fork_prepare(void);
void exact_class_fork_release(void);

#endif
