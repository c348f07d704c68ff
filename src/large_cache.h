/* SPDX-License-Identifier: MIT */
/*
 * A thread's cache of freed large blocks, above SMALL_MAX up to tcache_large_max (at most
 * LARGE_CACHE_MAX, 256 KiB). Without it every malloc and free of such a block takes its
 * arena's extent lock and splits or merges an extent (~600 instructions a pair, and the
 * lock passed between threads: four threads cycling blocks of 5-40 KiB ran 6x slower than
 * tcmalloc, which caches blocks up to 256 KiB per thread). A freed block keeps its
 * extent, still active for its arena, in a small stack per class; a malloc of that class
 * takes the newest. Large requests up to LARGE_CACHE_MAX are rounded to their class
 * (arena.c, large_usable_size) so that every block of a class serves every request of
 * it, and a request with none of its class cached takes the smallest cached block of
 * up to twice its size. A thread holds at most LARGE_CACHE_BYTES of them; an incremental
 * GC gives back half of what a class holds when nothing was taken from it since its last
 * look, and the thread's exit (or a flush of its cache) gives back everything.
 *
 * realloc's copies skip the cache (thread_state_t.realloc_copying): a block that grows
 * by realloc belongs where its arena places it, with room above it to grow in place,
 * and the blocks it leaves behind next to the free memory they merge with (a program
 * growing vectors by doubling: 161 -> 153 MB peak RSS, 64k -> 51k page faults).
 *
 * A block next to free memory goes back to its arena to merge with it, unless its
 * class is in use and holds none (large_cache.c). A request aligned beyond a page takes
 * a cached block that happens to be so aligned (blocks freed after such requests are).
 *
 * A cached block is marked (extent_t.thread_cached), so that a second free of it, or a
 * use through realloc or malloc_usable_size, is still diagnosed (free.c).
 */
#ifndef TESSERA_LARGE_CACHE_H
#define TESSERA_LARGE_CACHE_H

#include "types.h"

#define LARGE_CACHE_BYTES ((size_t)1 << 20)

/* A cached block for a request of `usable` bytes (a large class size) aligned to align
 * (a page or more) for the calling thread (tc may be NULL: none), of that class or up to
 * twice its size (its own size is e->npages pages), its mark cleared and, when zero is
 * set, its bytes, or NULL. */
extent_t *large_cache_take(tcache_t *tc, size_t usable, size_t align, bool zero);
/* malloc's common case for a size above LOOKUP_MAX up to LARGE_CACHE_MAX: the block
 * large_cache_take would give (not zeroed, a page's alignment), counted as allocated,
 * or NULL (the general path then notes the miss and asks its arena). Without the
 * general path's layers: a program cycling such blocks asks at every step. */
void *large_cache_pop(tcache_t *tc, size_t size);
/* Whether large block e was taken from a thread's cache for a request of `usable` bytes
 * (a class below its own): a sized free of it with that size is right. */
bool large_cache_served(const extent_t *e, size_t usable);
/* Keeps freed large block e (not sampled, not hardened mode's) in tc; false when it does
 * not fit (another size, the class or the cache full, tcache_large_max): the caller
 * frees it to its arena. */
bool large_cache_put(tcache_t *tc, extent_t *e);
/* Gives every block tc holds back to its arena. */
void large_cache_flush(tcache_t *tc);
/* Bytes tc holds (for statistics: read from any thread). */
size_t large_cache_bytes(const tcache_t *tc);

#endif
