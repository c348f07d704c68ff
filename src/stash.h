/* SPDX-License-Identifier: MIT */
/*
 * The slab stash: empty slabs an arena keeps whole, per class lowest address first and
 * on one list oldest first (the extents' lru links).
 *
 * A bin that has an empty slab beyond its spare hands it here instead of back to the
 * extent sets. The slab stays whole (page-map entries, class, bitmap with every region
 * free), so the next slab of its class costs a heap pop and its free-map entries rather
 * than an extent split and a rewrite of every page's entries: a program that fills and
 * empties many slabs in turn (a batch that overflows its thread cache) no longer churns
 * them. Stashed pages count as dirty for decay and stats: when decay wants free pages
 * gone, the stash's oldest slabs go into the dirty set only as far as the dirty set
 * alone cannot give what must go (purge.c).
 *
 * Every function here is called with the arena's extent lock held.
 */
#ifndef TESSERA_STASH_H
#define TESSERA_STASH_H

#include "types.h"

/* Keeps the empty slab whole for its class. */
void stash_put(arena_t *a, extent_t *slab);
/* Takes back the lowest stashed slab of class c, ready to use; NULL if none. */
extent_t *stash_take(arena_t *a, unsigned c);
/* Turns every stashed slab into dirty pages, oldest first. */
void stash_drain(arena_t *a);
/* The same for the oldest stashed slabs only, until at least npages pages left. */
void stash_drain_oldest(arena_t *a, size_t npages);
/* The class argument of stash_make_room for a large block (no slab can serve it). */
#define STASH_LARGE NSMALL
/*
 * Arena a is about to take npages pages for a slab of class c (or a large block:
 * STASH_LARGE) and has no stashed slab of that class: makes the program's free memory
 * serve before new pages are touched. First a's own stashed slabs of other classes,
 * oldest first, turn into dirty pages until a resident free extent fits (or a few times
 * npages were given back); if none fits yet, another arena's stashed slab of class c is
 * returned, moved to a and ready to use, or else other arenas' stashed slabs turn into
 * dirty pages that extent_alloc borrows (extent.c). Other arenas' locks are only tried.
 * NULL when no slab was moved.
 */
extent_t *stash_make_room(arena_t *a, unsigned c, size_t npages);

#endif
