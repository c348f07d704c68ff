/* SPDX-License-Identifier: MIT */
/*
 * An intrusive pairing heap of extents ordered by address (lowest first), used for free
 * extent sets and for a bin's non-full slabs. Insert is O(1); remove-first and remove
 * are O(log n) amortized, with no rebalancing (a balanced tree's rebalancing showed up in
 * Mozilla's profiles of the same choice for its non-full runs).
 */
#ifndef TESSERA_PAIRING_HEAP_H
#define TESSERA_PAIRING_HEAP_H

#include "types.h"

static inline bool heap_empty(const extent_heap_t *h) { return h->root == NULL; }
static inline extent_t *heap_first(const extent_heap_t *h) { return h->root; }

void heap_insert(extent_heap_t *h, extent_t *e);
void heap_remove(extent_heap_t *h, extent_t *e);
extent_t *heap_remove_first(extent_heap_t *h);

#endif
