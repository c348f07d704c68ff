/* SPDX-License-Identifier: MIT */
/* prof_cache: see prof_cache.h. */
#include "prof_cache.h"

#include <string.h>

#include "arena.h"
#include "bin.h"
#include "hardened_key.h"
#include "options.h"
#include "pagemap.h"
#include "prof_hooks.h"
#include "size_class.h"
#include "tcache.h"
#include "thread.h"

size_t prof_cache_slots(void) { return opt_prof ? (size_t)NCACHED_MAX * (PROF_CACHE_SLOTS + 1) : 0; }

/* Per class, the blocks a prof bin may hold: PROF_CACHE_BYTES of blocks, at least
 * PROF_CACHE_MIN, at most PROF_CACHE_SLOTS (a table: no division on the slow path). */
static uint8_t most_blocks[NCACHED_MAX];

void prof_cache_boot(void) {
  for (unsigned c = 0; c < NCACHED_MAX; c++) {
    size_t most = PROF_CACHE_BYTES / class_infos[c].size;
    if (most < PROF_CACHE_MIN) most = PROF_CACHE_MIN;
    if (most > PROF_CACHE_SLOTS) most = PROF_CACHE_SLOTS;
    most_blocks[c] = (uint8_t)most;
  }
}

static uint16_t low16(void **p) { return (uint16_t)(uintptr_t)p; }
static void **stack_end(const cache_bin_t *m) { return m->slots + m->capacity; }

/* A prof bin never fills or flushes through its own counters, so nfilled holds the
 * class's count instead: blocks from the next allocation up to and including the next
 * sampled one (0: not drawn yet). */
static uint64_t *blocks_left(cache_bin_t *m) { return &m->nfilled; }

void **prof_cache_place(tcache_t *tc, void **slot) {
  if (!opt_prof) return slot;
  for (unsigned c = 0; c < NCACHED_MAX; c++) {
    if (tcache_bin(tc, c)->capacity == 0) continue; /* never caches: always the slow path */
    cache_bin_t *m = prof_cache_bin(tc, c);
    m->slots = slot;
    m->capacity = PROF_CACHE_SLOTS;
    m->head = slot + PROF_CACHE_SLOTS;
    *m->head = NULL;
    m->low_empty = low16(m->head);
    m->low_full = low16(m->slots);
    slot += PROF_CACHE_SLOTS + 1;
  }
  return slot;
}

/* The pops the fast path made since the last slow path: counted as the ordinary bin's
 * and off the class's count; the fast path stops at the head until the bin is armed. */
static void settle(tcache_t *tc, unsigned c) {
  cache_bin_t *m = prof_cache_bin(tc, c), *a = tcache_bin(tc, c);
  uint64_t pops = m->nmalloc - m->gc_nmalloc; /* gc_nmalloc: the pops already counted */
  a->nmalloc += pops;
  a->nfilled += pops;
  m->gc_nmalloc = m->nmalloc;
  *blocks_left(m) -= pops; /* the allowance kept pops below it */
  m->low_empty = low16(m->head);
}

bool prof_cache_due(tcache_t *tc, unsigned c, prof_thread_t *t) {
  cache_bin_t *m = prof_cache_bin(tc, c);
  settle(tc, c);
  uint64_t *left = blocks_left(m);
  if (*left == 0) *left = prof_blocks_until_sample(t, class_infos[c].size);
  if (--*left > 0) return false;
  *left = prof_blocks_until_sample(t, class_infos[c].size); /* from the next allocation on */
  return prof_sample_wanted(t);
}

/* Blocks c's prof bin may hold and hand out: a stack's worth of small blocks, fewer of
 * bigger ones (what it holds is kept from the ordinary bin's GC), never past the block
 * before the class's next sample. */
static size_t want_for(uint64_t left, unsigned c) {
  size_t most = most_blocks[c];
  return left == 0 ? 0 : left - 1 < most ? (size_t)(left - 1) : most;
}
static size_t want_of(cache_bin_t *m, unsigned c) { return want_for(*blocks_left(m), c); }

static void pull(tcache_t *tc, unsigned c, unsigned n);

void *prof_cache_take(tcache_t *tc, unsigned c) {
  cache_bin_t *m = prof_cache_bin(tc, c), *a = tcache_bin(tc, c);
  if (m->head == stack_end(m)) {
    /* Nothing parked, and the ordinary bin too short for a useful allowance: its few
     * blocks are parked, so that the caller's allocation refills it with a batch. */
    unsigned have = cache_bin_count(a);
    if (c < NSMALL && have > 0 && have < want_of(m, c) / 2) pull(tc, c, have);
    return NULL;
  }
  void *p = *m->head++;
  m->low_empty = low16(m->head);
  a->nmalloc++;
  a->nfilled++;
  return block_clear_freed_key(p);
}

/* Moves up to n of the ordinary bin's newest blocks onto the prof bin, keeping their
 * order (the newest ends on top). */
static void pull(tcache_t *tc, unsigned c, unsigned n) {
  cache_bin_t *m = prof_cache_bin(tc, c), *a = tcache_bin(tc, c);
  unsigned have = cache_bin_count(a), room = (unsigned)(m->head - m->slots);
  if (n > have) n = have;
  if (n > room) n = room;
  if (n == 0) return;
  m->head -= n;
  memcpy(m->head, a->head, n * sizeof(void *));
  a->head += n;
  a->nfilled -= n; /* back when each is popped (settle) or flushed */
}

void *prof_cache_next(size_t size) {
  if (unlikely(size > LOOKUP_MAX)) return NULL;
  unsigned c = class_of_lookup[(size + 15) >> 4];
  tcache_t *tc = tls_thread.tcache;
  cache_bin_t *m = prof_cache_bin(tc, c), *a = tcache_bin(tc, c);
  if (unlikely(m->capacity == 0)) return NULL; /* no cache yet, or a class never cached */
  uint64_t left = *blocks_left(m) - (m->nmalloc - m->gc_nmalloc); /* after settling */
  if (unlikely(*blocks_left(m) == 0 || left <= 1)) return NULL;   /* to draw, or the sampled one */
  bool parked = m->head != stack_end(m);
  /* Nothing parked: the ordinary bin serves, if it holds enough for an allowance (else
   * prof_cache_take parks its few blocks and the ordinary bin refills with a batch). */
  if (!parked) {
    unsigned have = cache_bin_count(a);
    if (have == 0 || (c < NSMALL && have < want_for(left - 1, c) / 2)) return NULL;
  }
  settle(tc, c);
  --*blocks_left(m);
  void *p;
  if (parked) {
    p = *m->head++;
    a->nfilled++;
  } else {
    p = *a->head++;
  }
  a->nmalloc++;
  prof_cache_arm(tc, c);
  return block_clear_freed_key(p);
}

void prof_cache_arm(tcache_t *tc, unsigned c) {
  cache_bin_t *m = prof_cache_bin(tc, c);
  size_t want = want_of(m, c);
  size_t held = (size_t)(stack_end(m) - m->head);
  if (held < want) pull(tc, c, (unsigned)(want - held));
  held = (size_t)(stack_end(m) - m->head);
  m->low_empty = low16(m->head + (want < held ? want : held));
}

void prof_cache_flush(tcache_t *tc) {
  for (unsigned c = 0; c < NCACHED_MAX; c++) {
    cache_bin_t *m = prof_cache_bin(tc, c), *a = tcache_bin(tc, c);
    if (m->capacity == 0) continue;
    settle(tc, c);
    unsigned n = (unsigned)(stack_end(m) - m->head), left = n;
    if (c < NSMALL) {
      while (left > 0) /* one round per owning arena */
        left = bin_flush(pm_extent(pagemap_get((uintptr_t)m->head[0]))->arena, c, m->head, left);
    } else {
      for (unsigned i = 0; i < n; i++) {
        extent_t *e = pm_extent(pagemap_get((uintptr_t)m->head[i]));
        arena_free_large(e->arena, e);
      }
    }
    m->head += n;
    m->low_empty = low16(m->head);
    a->nflushed += n;
    a->nfilled += n;
  }
}
