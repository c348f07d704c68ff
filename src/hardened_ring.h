/* SPDX-License-Identifier: MIT */
/*
 * The thread's quarantine ring (hardened.h: the quarantine), and its common case inline:
 * free's hardened path puts a block of a cached class in, and at most one block of a
 * cached class leaves. Every free of hardened mode runs it; as a call (with its
 * arguments loaded again, and the leaving block's sizes looked up twice) it was a sixth
 * of a malloc+free pair. The rest (a new ring, large blocks, several leaving) is in
 * hardened.c.
 */
#ifndef TESSERA_HARDENED_RING_H
#define TESSERA_HARDENED_RING_H

#include "hardened.h"
#include "size_class.h"
#include "types.h"

/* The blocks of threads that have a cache wait in a ring of their own, without a lock:
 * at most THREAD_RING_SLOTS blocks, and the bytes of a shared shard (resident and
 * address space: hardened.c). */
#define THREAD_RING_SLOTS 256 /* a power of two (docs/hardening.md: the quarantine's shape) */

typedef struct thread_ring {
  struct thread_ring *next_free; /* in the pool, once its thread is gone */
  unsigned head, count;          /* the oldest entry, and how many there are */
  size_t resident, size;         /* sums over the entries */
  size_t size_limit;             /* address space: a shard's, whatever the threads */
  hardened_held_t slots[THREAD_RING_SLOTS];
} thread_ring_t;

/* The calling thread's ring; NULL until its first block (hardened_thread_quarantine). */
extern INTERNAL __thread thread_ring_t *hardened_thread_ring __attribute__((tls_model("initial-exec")));

/* The resident bytes every ring may hold: the threads with a ring share
 * hardened_quarantine (a quarter each while there are at most 4, never less than a 64th:
 * hardened.c), so that many threads do not multiply it. */
extern INTERNAL _Atomic size_t hardened_ring_resident_limit;
static inline size_t ring_resident_limit(void) { return atomic_load_explicit(&hardened_ring_resident_limit, memory_order_relaxed); }

/* hardened_thread_quarantine for block p of cached class c (size bytes), when at most
 * one block of a cached class leaves for it: 0 (none left), 1 (*out left), or -1 when
 * the general function must be called instead (nothing was done: no ring yet, a large
 * block would leave, or more than one would have to). */
static inline int hardened_thread_quarantine_one(void *p, unsigned c, size_t size, hardened_held_t *out) {
  thread_ring_t *r = hardened_thread_ring;
  if (unlikely(r == NULL)) return -1;
  unsigned mask = THREAD_RING_SLOTS - 1;
  size_t resident_limit = ring_resident_limit();
  if (likely(r->count < THREAD_RING_SLOTS) && r->resident + size <= resident_limit && r->size + size <= r->size_limit) {
    r->slots[(r->head + r->count) & mask] = (hardened_held_t){p, c, 0};
    r->count++;
    r->resident += size;
    r->size += size;
    return 0;
  }
  /* The oldest leaves, if that makes room (a cached class: its bytes are all resident);
   * the new tail takes its place in the ring: its very slot when the ring is full. */
  hardened_held_t *oldest = &r->slots[r->head];
  if (unlikely(r->count == 0 || oldest->c >= NCACHED_MAX)) return -1;
  size_t old = class_infos[oldest->c].size;
  size_t resident = r->resident - old + size, total = r->size - old + size;
  if (unlikely(resident > resident_limit || total > r->size_limit)) return -1;
  *out = *oldest;
  hardened_held_t *tail = likely(r->count == THREAD_RING_SLOTS) ? oldest : &r->slots[(r->head + r->count) & mask];
  *tail = (hardened_held_t){p, c, 0};
  r->head = (r->head + 1) & mask;
  r->resident = resident;
  r->size = total;
  return 1;
}

#endif
