/* SPDX-License-Identifier: MIT */
/*
 * Arenas: independent allocator states (bins + free extents, behind their own locks).
 * There are at most opt_narenas automatic ones (default: one per CPU the process may
 * use), created on first use; arenas.create makes more, used only by threads bound to
 * them and explicit-arena allocations. Threads are bound to arenas round-robin until
 * every arena has a thread, then by the CPU they run on.
 */
#ifndef TESSERA_ARENA_H
#define TESSERA_ARENA_H

#include "types.h"

extern arena_t *arenas[MAX_ARENAS];
extern _Atomic unsigned narenas_created;
extern unsigned narenas_limit;
/* Decay times new arenas start with: the options, changed by arenas.*_decay_ms. */
extern _Atomic ssize_t arena_default_dirty_decay_ms, arena_default_muzzy_decay_ms;

/* One past the highest arena index in use: automatic arenas plus created ones. Loops
 * over every arena go up to this (entries may still be NULL). */
unsigned arenas_count(void);
/* arenas.create: a new arena at the next free index; NULL when MAX_ARENAS are in use. */
arena_t *arena_create(void);
bool arenas_init(unsigned narenas);
/* Sets up a zeroed arena record (exposed for the unit tests' private arenas). */
void arena_init(arena_t *a, unsigned index);
/* Arena i, created if needed; NULL if i is out of range or memory is short. */
arena_t *arena_get(unsigned i);
/* Arena i for the control interface: an automatic one (created if needed) or one made
 * by arenas.create; NULL if there is none. */
arena_t *arena_lookup(unsigned i);
/* The arena a new thread should use. */
arena_t *arena_choose_for_new_thread(void);
/* arena_exclusive: when the calling thread's name is one of the option's, the arena
 * it should move to (its own, pinned: tls_thread.exclusive_arena), else NULL. Looks at
 * the name at the arena choice and, for a thread that may have been named since, at
 * its next ARENA_NAME_CHECKS calls (a cache refill is the place: see docs/ctl.md). */
#define ARENA_NAME_CHECKS 8
arena_t *arena_exclusive_check(void);
/* arenas.nthreads_peak: the most threads bound to arenas at once (sampled at each
 * thread's arena choice and at each statistics refresh). */
unsigned arenas_nthreads_peak(void);
void arenas_note_nthreads(unsigned n);
/* arenas.lookup: the index of the arena that owns the block at p (any address in a
 * slab, or in the first or last page of a large block); false for any other address. */
bool arena_index_of(const void *p, unsigned *index);
/* The automatic arena of the CPU the caller runs on. */
arena_t *arena_for_cpu(void);

/* Usable size of a large request (rounded to its class up to tcache_large_max, else to
 * whole pages); 0 if the request is impossible. */
size_t large_usable_size(size_t size);
/* The index of a large usable size in the per-size counters (0 .. NLARGE_CLASSES-1). */
unsigned large_class_index(size_t usable);
/* The page-map code for a large block of the given usable size. */
unsigned large_code(size_t usable);

/* Memory ran out for a request of `request` bytes: gives back what every arena holds
 * unused, releases the reserve and calls the program's OOM callback (oom.c). Returns
 * whether a retry may succeed. No lock may be held. */
bool arena_handle_oom(size_t request);
/* A large block of at least size bytes, aligned to align (>= PAGE, power of two). */
void *arena_malloc_large(arena_t *a, size_t size, size_t align, bool zero);
void arena_free_large(arena_t *a, extent_t *e);
/*
 * realloc of large block e (of any arena) to new_usable bytes, more than it has, where
 * it cannot grow in place: a new block from arena a whose first pages are e's, moved by
 * the kernel instead of copied (os_move_pages: no copy, no page fault, and never both
 * copies resident), e's addresses becoming released pages; copied where the kernel
 * cannot move them. NULL if no memory (e untouched). Not in hardened mode.
 */
void *arena_realloc_large_moving(arena_t *a, extent_t *e, size_t new_usable);
/* Resizes a large block in place to new_usable bytes if possible. */
bool arena_resize_large_in_place(arena_t *a, extent_t *e, size_t new_usable);
/* Frees one small region without a thread cache (locks its bin). */
void arena_free_small(extent_t *slab, void *p);

void arenas_fork_prepare(void);
void arenas_fork_parent(void);
void arenas_fork_child(void);

#endif
