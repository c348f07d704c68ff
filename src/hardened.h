/* SPDX-License-Identifier: MIT */
/*
 * Hardened mode (hardened:true; docs/hardening.md): the checks a fast allocator leaves
 * out, for programs that want misuse stopped more than they want speed. Every malloc and
 * free then takes the slow paths (the thread caches stay, but malloc's and free's fast
 * paths never take a block: tcache.c points them at a bin that never caches), and
 * these helpers do the checking:
 *
 * - A block's layout. A request of n bytes is served from a block of at least
 *   n + HARDENED_EXTRA bytes. The block's "region" is all of it up to 32 KiB, and all
 *   but its last page above (that page is the guard page, PROT_NONE). The
 *   region ends with a trailer, the slack length (region size - n) encoded with a
 *   secret; the bytes from n up to the trailer (at least one) are canary bytes, derived
 *   from the secret and the block's address. free checks both: a write past n (a 1-byte
 *   overflow included) is a heap overflow.
 * - Zero on free, checked on reuse: a freed block is zeroed (a large one's written pages,
 *   or all of them given back, which zeroes them: hardened_scrub), and a slab block is
 *   checked to be still zero when it is handed out again. Fresh pages from the OS are zero too, so one pattern covers
 *   never-used, freed and purged memory, and the program always gets zeroed blocks. The
 *   only words allowed to differ are freed-block keys (hardened_key.h) left by earlier
 *   frees, each the key of its own page.
 * - The quarantine: freed blocks wait in a FIFO ring (bounded in bytes, option
 *   hardened_quarantine) before their memory can be handed out again: a ring per
 *   thread, without a lock, for blocks up to 32 KiB (which then go to the thread's
 *   cache), and shared rings with locks for larger blocks and threads without a cache.
 *   A guarded block that leaves the quarantine is kept as it is (guard page in place,
 *   pages inaccessible) for the next malloc of its size, saving the system calls that
 *   would undo and redo that state (hardened_keep_guarded).
 * - Random slots: a slab hands out the free regions after a random place, shuffled in
 *   small groups, instead of its lowest (hardened_take_regions).
 */
#ifndef TESSERA_HARDENED_H
#define TESSERA_HARDENED_H

#include "options.h"
#include "types.h"

/* The trailer: the slack length, 4 bytes, encoded. */
#define HARDENED_TRAILER 4
/* Bytes a request grows by: the trailer and at least one canary byte. */
#define HARDENED_EXTRA (HARDENED_TRAILER + 1)
/* Canary bytes written and checked after a request at most (the rest of a large slack
 * is left zero: the guard page stops a longer overflow). */
#define HARDENED_CANARY_MAX 16

/* Whether a large block of usable bytes (its guard page not counted) gets a guard page:
 * in hardened mode, above the cached classes (32 KiB). Smaller blocks are slab regions
 * or extents whose overflows the canaries catch, without two system calls a block. */
static inline bool hardened_has_guard(size_t usable) { return opt_hardened && usable > TCACHE_MAX_LIMIT; }

/* Guarded blocks whose region is at most this many bytes (the smallest guarded ones: 9
 * pages, requests of 32 KiB - 4 to 36 KiB - 5, such as the 32 KiB requests the canary
 * pushes past the cached classes) are zeroed when freed and checked when reused, as the
 * cached classes' blocks are, instead of having their pages given back and made
 * inaccessible: no system call while they go through the quarantine and the kept blocks
 * (their guard page stays in place). */
#define HARDENED_ZEROED_GUARDED_MAX (TCACHE_MAX_LIMIT + PAGE)

/* Whether a freed block with this region is zeroed (and checked when reused) rather
 * than given back to the OS and made inaccessible. */
static inline bool hardened_freed_zeroed(size_t region, bool guarded) { return !guarded || region <= HARDENED_ZEROED_GUARDED_MAX; }

/* The region of a block of block_size bytes (a guarded block's last page is its guard). */
static inline size_t hardened_region(size_t block_size, bool guarded) { return guarded ? block_size - PAGE : block_size; }

/* The request hardened mode makes for n bytes aligned to align (<= PAGE: rounded to a
 * multiple of it, whose class is aligned); 0 if impossible. */
static inline size_t hardened_request(size_t n, size_t align) {
  if (n > (size_t)PTRDIFF_MAX - HARDENED_EXTRA - PAGE) return 0;
  size_t m = n + HARDENED_EXTRA;
  return align > QUANTUM && align <= PAGE ? align_up(m, align) : m;
}

/* A random number from the calling thread's generator (seeded from the kernel). */
uint64_t hardened_random(void);
/* Random slots: takes take free regions (at most the free ones) of a slab's bitmap of
 * nregs regions into idx: the free regions that follow a random place (wrapping),
 * shuffled in groups of a few (hardened.c). Nearly consecutive, so that the blocks a
 * thread's cache hands out one after the other share pages and cache lines almost as in
 * the default mode (each from a random place of the slab made an interpreter's objects,
 * allocated together and used together, twice as slow: the suite's js and lua); the
 * program still cannot tell where the first one lies, nor which of a group comes next. */
void hardened_take_regions(uint64_t *bitmap, unsigned nregs, uint32_t *idx, unsigned take);

/* The trailer, the canary bytes and the unused-block check: hardened_bytes.h. */
/* Zeroes a freed block's region; a guarded block's pages above
 * HARDENED_ZEROED_GUARDED_MAX are then made inaccessible, all but its first, while it
 * waits in the quarantine and among the kept blocks. They stay in memory (zeroed, so
 * that the next use takes no page faults) while the large blocks kept so hold at most
 * hardened_quarantine bytes; beyond, they are given back to the OS instead. Returns the
 * pointer the quarantine carries: p, tagged (hardened_resident_tag) when it holds
 * memory of that bound. */
void *hardened_scrub(void *p, size_t region, bool guarded);
/* A tagged pointer's block (hardened_scrub). */
#define HARDENED_RESIDENT_TAG ((uintptr_t)1)
static inline void *hardened_untag(void *q) { return (void *)((uintptr_t)q & ~HARDENED_RESIDENT_TAG); }
/* A block that the quarantine carried as q leaves it for good (to its arena, or handed
 * out): its memory no longer counts against the resident bound. Returns its block. */
void *hardened_resident_done(void *q);
/* A block leaving the quarantine: a guarded one's first page is checked to be unused (a
 * write after free aborts naming free) and the rest made accessible again (all of it
 * checked, when it was zeroed: hardened_freed_zeroed). */
void hardened_unscrub(void *p, size_t region, bool guarded);

/* A guarded block (npages pages, its guard page included; q as hardened_scrub tagged
 * it) leaving the quarantine: kept as it is, for a malloc of the same size (true), else
 * to be freed by the caller (false). *evicted is then a kept block that made room (as
 * tagged, freed by the caller as one leaving the quarantine), or NULL. */
bool hardened_keep_guarded(void *q, uint32_t npages, void **evicted);
/* A kept guarded block of npages pages, ready to be handed out (its first page checked
 * to be unused, naming func, and all its pages accessible and zero); NULL if none. */
void *hardened_take_guarded(uint32_t npages, const char *func);

/* The guard page of a large block: made inaccessible when it is handed out, accessible
 * again before its extent is freed. hardened_guard returns false if the kernel refused. */
bool hardened_guard(void *page);
void hardened_unguard(void *page);

/* Puts freed block p (of size bytes, resident of them kept in memory while it waits) in
 * the quarantine; writes to out[] the blocks that leave it (to be freed now, oldest
 * first; p itself when it is too big to wait) and returns how many (at most
 * HARDENED_EVICT_MAX + 1). */
#define HARDENED_EVICT_MAX 16
unsigned hardened_quarantine(void *p, size_t size, size_t resident, void **out);

/* A block waiting in its thread's quarantine. */
typedef struct hardened_held {
  void *p;         /* as hardened_scrub tagged it */
  uint32_t c;      /* its class, or CODE_LARGE (a block above the cached classes) */
  uint32_t npages; /* a large block's pages, its guard page included */
} hardened_held_t;

/* Puts freed block h in the calling thread's quarantine: a FIFO ring of its own, no lock,
 * bounded as a shard of the shared one. Writes to out[] the blocks that leave it (oldest
 * first; h itself when it cannot wait) and returns how many (at most
 * HARDENED_EVICT_MAX + 1). */
unsigned hardened_thread_quarantine(hardened_held_t h, hardened_held_t *out);
/* Its common case, inline: hardened_ring.h. */
/* Takes the oldest block out of the calling thread's quarantine (untagged, its memory
 * no longer counted: hardened_resident_done); false when it is empty. Then hardened_thread_quarantine_release gives the ring back (the thread exits
 * or drops its cache). */
bool hardened_thread_quarantine_take(hardened_held_t *out);
void hardened_thread_quarantine_release(void);

/* Points the callers' PLT slots of C++'s common operator new and delete forms at
 * hardened mode's entries (cxx.c, which sets it when the library is loaded: a layer above
 * alloc.c, which calls it once, with malloc's: got_patch.h); NULL before. */
extern void (*hardened_cxx_entries_patch)(void);
/* A sized free (operator delete with a size) of hardened mode: free's hardened path when
 * the size is of p's size class; else the general checks, naming func (free.c). */
void free_sized_hardened(void *p, size_t size, const char *func);

#endif
