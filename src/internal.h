/*
 * Cross-file entry points of the front end (malloc.c) used by cxx.c, stats.c, fork.c.
 */
#ifndef TESSERA_INTERNAL_H
#define TESSERA_INTERNAL_H

#include "types.h"

bool malloc_initialized(void);
/* The allocation functions behind the public names (no errno handling for size 0). */
void *tessera_malloc_internal(size_t size);
void *tessera_aligned_internal(size_t align, size_t size);
void tessera_free_internal(void *p);
/* free with a size (and alignment) the caller claims; verified against the block. */
void tessera_free_sized_internal(void *p, size_t size, const char *func);
size_t tessera_usable_size_internal(const void *p, const char *func);

void fork_boot(void);
/* After options are read: prepares what stats_print:true needs at exit. */
void stats_boot(void);

#endif
