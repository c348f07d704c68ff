/* SPDX-License-Identifier: MIT */
/*
 * base: the allocator for tessera's own metadata (extent records with their bitmaps,
 * arenas, statistics records). It never places metadata inside user memory. Memory
 * comes from the OS in chunks of 128 KiB doubling to 1 MiB and is carved by bumping a pointer; freed blocks
 * (the heap profiler's tables as they grow, its dump scratch) wait on a free list per
 * size for the next request of that size. A request bigger than 64 KiB gets a mapping
 * of its own, unmapped when freed. Everything is counted as metadata. (Extent records
 * are not freed here: their arena recycles them.)
 */
#ifndef TESSERA_BASE_H
#define TESSERA_BASE_H

#include "types.h"

/* Zeroed memory of at least size bytes, aligned to 64; NULL if the OS refuses. */
void *base_alloc(size_t size);
/* Returns p, of the size it was asked with, for reuse. */
void base_free(void *p, size_t size);
size_t base_mapped_bytes(void);

void base_fork_prepare(void);
void base_fork_parent(void);
void base_fork_child(void);
lock_t *base_lock_for_stats(void);

#endif
