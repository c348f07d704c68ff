/*
 * base: the allocator for tessera's own metadata (extent records with their bitmaps,
 * arenas, statistics records). It never places metadata inside user memory. Memory
 * comes from the OS in 1 MiB chunks and is carved by bumping a pointer; nothing is ever
 * freed here (extent records are recycled by their arena, which keeps spare records),
 * and everything is counted as metadata. A request bigger than a chunk's useful part
 * gets a mapping of its own.
 */
#ifndef TESSERA_BASE_H
#define TESSERA_BASE_H

#include "types.h"

/* Zeroed memory of at least size bytes, aligned to 64; NULL if the OS refuses. */
void *base_alloc(size_t size);
size_t base_mapped_bytes(void);

void base_fork_prepare(void);
void base_fork_parent(void);
void base_fork_child(void);
lock_t *base_lock_for_stats(void);

#endif
