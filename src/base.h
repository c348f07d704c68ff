/*
 * base: the allocator for tessera's own metadata (extent records with their bitmaps,
 * thread caches, arenas). It never places metadata inside user memory. Memory comes
 * from the OS in chunks, is carved by bumping a pointer, and freed blocks are kept on
 * free lists by size (64-byte granules) for reuse. Everything is counted as metadata.
 */
#ifndef TESSERA_BASE_H
#define TESSERA_BASE_H

#include "types.h"

/* Zeroed memory of at least size bytes, aligned to 64; NULL if the OS refuses. */
void *base_alloc(size_t size);
void base_free(void *p, size_t size);
size_t base_mapped_bytes(void);

void base_fork_prepare(void);
void base_fork_parent(void);
void base_fork_child(void);
lock_t *base_lock_for_stats(void);

#endif
