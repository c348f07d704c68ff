/* SPDX-License-Identifier: MIT */
/*
 * prof_cache: malloc's thread-cache path with prof:true: the ordinary cache bins, popped
 * in their usual LIFO order, with the thread's byte countdown.
 *
 * The sampler draws sample points at random over the allocated bytes (a Poisson process,
 * prof_sample.h): each thread counts down a random number of bytes, and the allocation
 * that crosses zero is sampled (jemalloc's and tcmalloc's method). malloc's default
 * entry has no byte counter (with prof:false it must cost nothing), so with prof:true
 * malloc and calloc have a second entry whose fast path is prof_cache_pop (alloc.c),
 * and after boot the callers' PLT slots are pointed at it (got_patch.h). A caller still
 * on the default entry (not rewritten) is counted all the same: boot points the default
 * entry's size -> bin table at bins[0], which never caches, so every malloc there
 * misses its fast path, and the slow path starts here too. free's fast path is
 * unchanged, so a block freed is the next one malloc hands out for its class, as with
 * prof:false.
 *
 * (The design before this one kept the fast path and popped a second set of bins that
 * stopped at each class's next sample point: fewer instructions, but a freed block came
 * back only after the next slow path, and python3 ran 17-27% slower in user time for
 * the same instruction count; docs/profiling.md has the measurements.)
 */
#ifndef TESSERA_PROF_CACHE_H
#define TESSERA_PROF_CACHE_H

#include "hardened_key.h"
#include "thread.h"
#include "types.h"

/* prof_cache_lookup[(size + 15) >> 4], for any size up to LOOKUP_MAX: the byte offset in
 * a tcache_t of the size's bin and the class's size, side by side (each read with one
 * zero-extending load: no shift, no mask). */
typedef struct prof_cache_entry {
  uint16_t bin_offset;
  uint16_t class_size;
} prof_cache_entry_t;
extern INTERNAL prof_cache_entry_t prof_cache_lookup[(LOOKUP_MAX >> 4) + 1];

/* Fills prof_cache_lookup (at boot, with prof:true). */
void prof_cache_boot(void);

/* A block for size bytes from the calling thread's cache, its size counted down; NULL
 * when the size is not cached, the bin is empty (or there is no cache yet), or this
 * allocation reaches the next sample point: then the caller's general path decides
 * (prof_alloc_due counts it there). */
static inline void *prof_cache_pop(size_t size) {
  if (unlikely(size > LOOKUP_MAX)) return NULL;
  const prof_cache_entry_t *entry = &prof_cache_lookup[(size + 15) >> 4];
  cache_bin_t *b = (cache_bin_t *)((char *)tls_thread.tcache + entry->bin_offset);
  void **head = b->head;
  if (unlikely((uint16_t)(uintptr_t)head == b->low_empty)) return NULL;
  /* Counted down in place: one subtract to memory, whose flags decide (compilers load,
   * subtract, store and test instead: three instructions more on every malloc). The
   * countdown never comes near overflow (at most 4e18, minus a class size), so "less or
   * equal" after the subtract is the sign of the result. The sampled allocation gives
   * its size back: the general path counts it again (prof_alloc_due). */
  int64_t counted = (int64_t)entry->class_size;
  bool reached;
#if defined(__x86_64__)
  __asm__("subq %[counted], %[left]"
          : [left] "+m"(tls_thread.prof.bytes_until_sample), "=@ccle"(reached)
          : [counted] "r"(counted));
#else
  reached = (tls_thread.prof.bytes_until_sample -= counted) <= 0;
#endif
  if (unlikely(reached)) {
    tls_thread.prof.bytes_until_sample += counted;
    return NULL;
  }
  b->head = head + 1;
  b->nmalloc++;
  void *p = *head;
  ((block_word_t *)p)[1] = 0; /* the freed-block key, as malloc's fast path clears it */
  return p;
}

#endif
