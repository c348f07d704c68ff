/* SPDX-License-Identifier: MIT */
/* prof_cache: see prof_cache.h. */
#include "prof_cache.h"

#include <string.h>

#include "arena.h"
#include "bin.h"
#include "hardened_key.h"
#include "options.h"
#include "pagemap.h"
#include "size_class.h"
#include "tcache.h"
#include "thread.h"

size_t prof_cache_slots(void) { return opt_prof ? (size_t)NCACHED_MAX * (PROF_CACHE_SLOTS + 1) : 0; }

static uint16_t low16(void **p) { return (uint16_t)(uintptr_t)p; }
static void **stack_end(const cache_bin_t *m) { return m->slots + m->capacity; }
/* Where the fast path stops: low_empty names it by its low 16 bits (a stack spans less
 * than 64 KiB, and head <= stop <= end). */
static void **stop_of(const cache_bin_t *m) {
  return m->head + (uint16_t)(m->low_empty - low16(m->head)) / sizeof(void *);
}

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

/* The pops the fast path made since the last look count as the ordinary bin's. */
static void settle(tcache_t *tc, unsigned c) {
  cache_bin_t *m = prof_cache_bin(tc, c), *a = tcache_bin(tc, c);
  uint64_t pops = m->nmalloc - m->gc_nmalloc; /* gc_nmalloc: the pops already counted */
  a->nmalloc += pops;
  a->nfilled += pops;
  m->gc_nmalloc = m->nmalloc;
}

/* Cuts c's allowance to keep of what is left (keep 0: the bin stops at its head);
 * returns the bytes taken back. */
static int64_t cut(tcache_t *tc, unsigned c, unsigned keep_shift) {
  cache_bin_t *m = prof_cache_bin(tc, c);
  size_t left = (size_t)(stop_of(m) - m->head), keep = keep_shift ? left >> keep_shift : 0;
  m->low_empty = low16(m->head + keep);
  if (keep == 0) tc->prof_armed &= ~((uint64_t)1 << c);
  return (int64_t)((left - keep) * class_infos[c].size);
}
static int64_t disarm(tcache_t *tc, unsigned c) { return cut(tc, c, 0); }

/* Takes back all (keep_shift 0) or half (1) of every bin's allowance. */
static int64_t reclaim(tcache_t *tc, unsigned keep_shift) {
  int64_t refund = 0;
  for (uint64_t armed = tc->prof_armed; armed != 0; armed &= armed - 1)
    refund += cut(tc, (unsigned)__builtin_ctzll(armed), keep_shift);
  return refund;
}

int64_t prof_cache_reclaim(tcache_t *tc) { return reclaim(tc, 0); }
int64_t prof_cache_reclaim_half(tcache_t *tc) { return reclaim(tc, 1); }

void *prof_cache_take(tcache_t *tc, unsigned c) {
  cache_bin_t *m = prof_cache_bin(tc, c);
  if (m->capacity == 0 || m->head == stack_end(m)) return NULL;
  tls_thread.prof.bytes_until_sample += disarm(tc, c);
  settle(tc, c);
  void *p = *m->head++;
  m->low_empty = low16(m->head);
  cache_bin_t *a = tcache_bin(tc, c);
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

void prof_cache_arm(tcache_t *tc, unsigned c, prof_thread_t *t) {
  cache_bin_t *m = prof_cache_bin(tc, c);
  if (m->capacity == 0) return;
  t->bytes_until_sample += disarm(tc, c);
  settle(tc, c);
  size_t size = class_infos[c].size;
  int64_t half = t->bytes_until_sample / 2;
  size_t want = half > 0 ? (size_t)half / size : 0;
  if (want > m->capacity) want = m->capacity;
  size_t held = (size_t)(stack_end(m) - m->head);
  if (held < want) pull(tc, c, (unsigned)(want - held));
  held = (size_t)(stack_end(m) - m->head);
  size_t grant = want < held ? want : held;
  m->low_empty = low16(m->head + grant);
  t->bytes_until_sample -= (int64_t)(grant * size);
  if (grant > 0) tc->prof_armed |= (uint64_t)1 << c;
}

void prof_cache_flush(tcache_t *tc) {
  for (unsigned c = 0; c < NCACHED_MAX; c++) {
    cache_bin_t *m = prof_cache_bin(tc, c), *a = tcache_bin(tc, c);
    if (m->capacity == 0) continue;
    tls_thread.prof.bytes_until_sample += disarm(tc, c);
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
