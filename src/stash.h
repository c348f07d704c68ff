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
 * gone, the stash goes first, oldest slab first, into the dirty set (purge.c).
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
/* About to take npages for a slab or large block that no resident free extent fits: turns stashed slabs of other classes, oldest first, into dirty pages until one
 * does (or a few times npages were given back), so that the program's free memory is
 * reused before new pages are touched. */
void stash_reclaim(arena_t *a, size_t npages);
/* Arena a needs a slab of class c (npages pages) and has neither one stashed nor a
 * resident free extent for it: takes another arena's stashed slab of that class, or
 * else turns other arenas' stashed slabs into dirty pages that extent_alloc borrows
 * (extent.c). Other arenas' locks are only tried. NULL if no slab of class c moved. */
extent_t *stash_borrow(arena_t *a, unsigned c, size_t npages);

#endif
