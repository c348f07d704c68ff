/*
 * Thread caches. Each thread's tls_tcache starts pointing at tcache_empty, whose bins
 * all have capacity 0: the fast paths need no "initialised?" test, the first malloc
 * and free simply fall into the slow path, which creates the real cache.
 */
#ifndef TESSERA_TCACHE_H
#define TESSERA_TCACHE_H

#include "types.h"

extern __thread tcache_t *tls_tcache __attribute__((tls_model("initial-exec")));
extern tcache_t tcache_empty;

/* Per-thread state, for the slow paths. */
enum { THREAD_NEW = 0, THREAD_CREATING, THREAD_ACTIVE, THREAD_EXITED, THREAD_CACHE_OFF };
extern __thread uint8_t tls_thread_state __attribute__((tls_model("initial-exec")));

/* The bin of class c (bins are indexed by page-map code, c + 1). */
static inline cache_bin_t *tcache_bin(tcache_t *tc, unsigned c) { return &tc->bins[c + 1]; }

/* tcache_bin_offset_of_size[(size + 15) >> 4]: the byte offset in a tcache_t of the bin
 * of any size up to LOOKUP_MAX (malloc's fast path: one load instead of class + 1, << 6). */
extern INTERNAL uint16_t tcache_bin_offset_of_size[(LOOKUP_MAX >> 4) + 1];

static inline unsigned cache_bin_count(const cache_bin_t *b) {
  return (unsigned)(b->slots + b->capacity - b->head);
}
/* Frees this thread made into the bin: every block the bin handed out or sent back to
 * the arena came in by a fill or a free. */
static inline uint64_t cache_bin_ndalloc(const cache_bin_t *b) {
  return b->nmalloc + cache_bin_count(b) + b->nflushed - b->nfilled;
}

bool tcache_boot(void);
/* Bytes mapped for the live thread caches (counted as metadata). */
size_t tcache_mapped_bytes(void);
/* The calling thread's cache, created if possible; NULL when the thread cannot have
 * one (tcache disabled, the thread is exiting, or we are inside cache creation). */
tcache_t *tcache_get(void);
/* The arena the calling thread allocates from. */
arena_t *thread_arena(void);

/* Slow paths of the fast paths in malloc.c. */
void *tcache_alloc_refill(tcache_t *tc, unsigned c);
/* Pushes p onto bin c (which caches), first flushing the oldest half if it is full. */
void tcache_free_slow(tcache_t *tc, unsigned c, void *p);
/* Returns every cached block of the calling thread to its arena. */
void tcache_flush_all(tcache_t *tc);

void tcache_fork_prepare(void);
void tcache_fork_parent(void);
void tcache_fork_child(void);

/* Calls f for each live thread cache, with the registry locked. */
void tcache_for_each(void (*f)(const tcache_t *, void *), void *arg);

#endif
