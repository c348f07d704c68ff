/*
 * Arenas: independent allocator states (bins + free extents). There are at most
 * opt_narenas of them (default: one per CPU the process may use, seed 000); they are
 * created on first use. Threads are bound to arenas round-robin until every arena has
 * a thread, then by the CPU they run on.
 */
#ifndef TESSERA_ARENA_H
#define TESSERA_ARENA_H

#include "types.h"

extern arena_t *arenas[MAX_ARENAS];
extern _Atomic unsigned narenas_created;
extern unsigned narenas_limit;

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
/* The arena a new thread should use. */
arena_t *arena_choose_for_new_thread(void);
/* The automatic arena of the CPU the caller runs on. */
arena_t *arena_for_cpu(void);
/* arena_select:least_loaded (else: cpu, seed 000's rule). */
extern bool arena_select_least_loaded;

/* Usable size of a large request (rounded to its class up to the cache limit, else to
 * whole pages); 0 if the request is impossible. */
size_t large_usable_size(size_t size);
/* The index of a large usable size in the per-size counters (0 .. NLARGE_CLASSES-1). */
unsigned large_class_index(size_t usable);
/* The page-map code for a large block of the given usable size. */
unsigned large_code(size_t usable);

/* A large block of at least size bytes, aligned to align (>= PAGE, power of two). */
void *arena_malloc_large(arena_t *a, size_t size, size_t align, bool zero);
void arena_free_large(arena_t *a, extent_t *e);
/* Resizes a large block in place to new_usable bytes if possible. */
bool arena_resize_large_in_place(arena_t *a, extent_t *e, size_t new_usable);
/* Frees one small region without a thread cache (locks its bin). */
void arena_free_small(extent_t *slab, void *p);
/* Gives unused pages back to the OS: all = every dirty and muzzy page now, else what
 * the decay curves say is due now. Returns pages moved. Takes the extent lock. */
size_t arena_purge(arena_t *a, bool all);
/* Decay with the extent lock held: moves the pages due by now, stopping at deadline
 * (0: no limit). Returns pages moved. */
size_t arena_decay_locked(arena_t *a, uint64_t now, uint64_t deadline);
/* Decay within the time budget of one allocator call; extent lock held. */
void arena_decay_tick(arena_t *a);
/* Transparent huge pages for new mappings: 0 system default, 1 always, 2 never. */
extern int arena_thp_mode;

void arenas_fork_prepare(void);
void arenas_fork_parent(void);
void arenas_fork_child(void);

/* The slab stash (arena.c), under the extent lock: keeps an empty slab whole for its
 * class, and takes back the lowest stashed slab of class c (NULL if none). */
void arena_stash_slab(arena_t *a, extent_t *slab);
extent_t *arena_unstash_slab(arena_t *a, unsigned c);

#endif
