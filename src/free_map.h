/* SPDX-License-Identifier: MIT */
/*
 * The free map: what free's fast path needs to know about a page, in one flat array
 * with one 8-byte entry per page, so that a lookup is a shift, a mask and a load (the
 * page map, pagemap.h, is a two-level tree and stays the authority on extents; this is
 * an index beside it, written wherever the page map marks a block of a cached class).
 *
 *   cache_bin_offset  byte offset of the class's cache bin in a tcache_t: code << 6,
 *              0 for every page that has no block of a cached class (bins[0] never
 *              caches, so such a free falls into the slow path untested).
 *   to_offset  (offset of the page in its block - the page's address) mod 2^32: adding
 *              it to the low 32 bits of a pointer gives the pointer's offset from the
 *              start of its block, which free checks is a region start.
 *
 * The array covers 2^32 pages (16 TiB of address space, a 32 GiB MAP_NORESERVE
 * reservation; untouched parts cost nothing, and 32 GiB still fits under valgrind).
 * The index is the page number masked to 32 bits, so every pointer, even a wild one,
 * reads inside the array. Two pages 16 TiB apart would share an entry: the first block
 * fixes the 16 TiB "home" window tessera's heap lives in (Linux places mmap memory
 * within a terabyte or so of one spot), and a block outside it turns the map off for
 * good (mask 0: every lookup reads entry 0, which stays 0). With the map off, when the
 * reservation is refused (strict overcommit), not tried (an RLIMIT_AS limit at start-up)
 * or not wanted (free_map:false), every free takes the slow path, which finds the block
 * through the page map and still uses the thread cache. The reservation counts against
 * RLIMIT_AS: when a program lowers the limit while running, the OS's first refusal of
 * memory gives it back (free_map_release: the map goes off for good, and only the pages
 * of the array that hold entries stay mapped), and the allocation is retried.
 */
#ifndef TESSERA_FREE_MAP_H
#define TESSERA_FREE_MAP_H

#include "types.h"

#define FREE_MAP_LG_PAGES 32

typedef struct free_map_entry {
  uint32_t to_offset;
  uint32_t cache_bin_offset;
} free_map_entry_t;

/* Hidden, so that free reads them straight, not through the GOT. */
/* The mask is a plain word, not _Atomic, so that free can AND it straight from memory;
 * it changes at most twice (on at start-up, off for good), by aligned word stores. */
extern INTERNAL uintptr_t free_map_mask; /* (1 << FREE_MAP_LG_PAGES) - 1, or 0 when off */
extern INTERNAL free_map_entry_t *free_map_entries;

static inline const free_map_entry_t *free_map_lookup(uintptr_t addr) {
  return &free_map_entries[(addr >> LG_PAGE) & free_map_mask];
}

/* The offset of addr from the start of its block, given its page's entry. */
static inline uint32_t free_map_block_offset(const free_map_entry_t *e, uintptr_t addr) {
  return (uint32_t)(addr + e->to_offset);
}

/* Reserves the array; leaves the map off if the OS refuses. */
void free_map_boot(void);
/* Marks the pages of a block of cached class c (code c + 1): every page of a slab, the
 * first page of a large block. Code 0 clears them (a block not of a cached class). */
void free_map_set_block(uintptr_t addr, size_t npages, bool slab, unsigned code);
/* The heap profiler's marks (prof_hooks.c). A sampled block's first page, page, sent to
 * free's slow path: its entry's bin offset becomes 0 (bins[0], which never caches), its
 * offset stays. Then pages [first, first + npages) of a block of code `code` given their
 * bin offset back. Both do nothing while the map is off (an entry of a page of the
 * heap's is written once the map is on: writing only the bin offset is enough). */
void free_map_divert_page(uintptr_t page);
void free_map_restore_pages(uintptr_t first, size_t npages, unsigned code);
/* Clears what free_map_set_block wrote. */
void free_map_clear_block(uintptr_t addr, size_t npages, bool slab);
bool free_map_enabled(void);
/* Turns the map off for good and unmaps the parts of its reservation that no entry was
 * written in (one page per 2 MiB of heap stays). True if it released anything: the
 * first call after a successful boot; false afterwards. */
bool free_map_release(void);
/* Bytes of the array ever written (resident): counted as metadata. */
size_t free_map_mapped_bytes(void);

#endif
