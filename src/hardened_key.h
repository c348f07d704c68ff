/* SPDX-License-Identifier: MIT */
/*
 * The freed-block key (glibc's tcache "key" idea, applied to every cached class, 16 B ..
 * 32 KiB): free writes a key into the second word of every block of a cached class it
 * takes back, and every path that hands such a block out clears that word. A block
 * given to free that already holds its key was freed before and not handed out since: a
 * double free, however many frees lay between and wherever the first copy went (this
 * thread's cache, another thread's, its slab).
 *
 * The key of a block is the address of its page's free-map entry (free_map.h): free's
 * fast path has it in a register already, so the check costs no load, and every thread
 * computes the same key for a block. It is an address inside tessera's private
 * reservation, which no live block holds unless the program copied it out of freed
 * memory. (With the free map off, every page's entry is the one entry 0: still an
 * address no program stores.)
 *
 * Uncached large blocks (above 32 KiB) need no key: each is its own extent, whose state
 * the page map records (free.c).
 */
#ifndef TESSERA_HARDENED_KEY_H
#define TESSERA_HARDENED_KEY_H

#include "free_map.h"
#include "size_class.h"
#include "types.h"

/* The program's memory may hold any type: read and write it as such. */
typedef uintptr_t __attribute__((may_alias)) block_word_t;

static inline uintptr_t block_freed_key(const void *p) { return (uintptr_t)free_map_lookup((uintptr_t)p); }
static inline bool block_has_freed_key(const void *p) { return ((const block_word_t *)p)[1] == block_freed_key(p); }
static inline void block_set_freed_key(void *p) { ((block_word_t *)p)[1] = block_freed_key(p); }
/* Returns p, its key word cleared (p may be NULL). */
static inline void *block_clear_freed_key(void *p) {
  if (p != NULL) ((block_word_t *)p)[1] = 0;
  return p;
}

/* The class of p when free's fast path would take it as a live block of a cached class:
 * its page's free-map entry names a cached class, p starts a region of it, and p holds
 * no freed-block key. NULL for anything else (a large or sampled block, or a misuse,
 * which the general lookup through the page map names). For the paths beside free's
 * that want its shortcut: sized frees, realloc, malloc_usable_size. *offset: p's offset
 * in its slab. */
static inline const class_info_t *block_live_cached_class(const void *p, uint32_t *offset) {
  const free_map_entry_t *fe = free_map_lookup((uintptr_t)p);
  unsigned code = fe->cache_bin_offset / (unsigned)sizeof(cache_bin_t);
  if (code == 0) return NULL;
  const class_info_t *ci = &class_infos[code - 1];
  *offset = free_map_block_offset(fe, (uintptr_t)p);
  if (!magic_divides(ci->magic, *offset) || block_has_freed_key(p)) return NULL;
  return ci;
}

#endif
