/* SPDX-License-Identifier: MIT */
/*
 * Extents: an arena's page-granular allocator. Free extents sit in three sets, dirty
 * (resident), muzzy (lazily freed) and retained (released, reads as zero, or never
 * touched), bucketed by size (four buckets per
 * doubling), each bucket a pairing heap by address: a request takes the lowest-address
 * extent of the smallest bucket that surely fits, unless one of the first extents of
 * the request's own bucket holds it (the smallest of those is taken: a freed multi-MiB
 * block is reused by the next request of about its size). Freed extents coalesce with free
 * neighbours of the same state, found in O(1) through the page map.
 *
 * Every function here is called with arena->extent_lock held.
 */
#ifndef TESSERA_EXTENT_H
#define TESSERA_EXTENT_H

#include "types.h"

/* Appends e (the newest) to a list; removes e from it (below). */
static inline void extent_list_append(extent_list_t *l, extent_t *e) {
  e->lru_next = NULL;
  e->lru_prev = l->tail;
  if (l->tail) l->tail->lru_next = e;
  else l->head = e;
  l->tail = e;
}
/* Puts e first (the oldest). */
static inline void extent_list_prepend(extent_list_t *l, extent_t *e) {
  e->lru_prev = NULL;
  e->lru_next = l->head;
  if (l->head) l->head->lru_prev = e;
  else l->tail = e;
  l->head = e;
}
static inline void extent_list_remove(extent_list_t *l, extent_t *e) {
  if (e->lru_prev) e->lru_prev->lru_next = e->lru_next;
  else l->head = e->lru_next;
  if (e->lru_next) e->lru_next->lru_prev = e->lru_prev;
  else l->tail = e->lru_prev;
  e->lru_prev = e->lru_next = NULL;
}

/* Lets arena a's resident free extents serve the other arenas (and theirs serve a)
 * when one would otherwise touch new pages. Called once per arena, as it is created. */
void extent_share_arena(arena_t *a);

/* The arenas registered by extent_share_arena (for other layers' borrowing). */
unsigned extent_sharing_count(void);
arena_t *extent_sharing_arena(unsigned i);
/* Active extent e of arena b (an empty slab) becomes arena a's, with its pages'
 * counts. Both extent locks held. */
void extent_move_active(arena_t *a, arena_t *b, extent_t *e);

/* True when extent_alloc(a, npages, 1, ...) would reuse resident free pages (a dirty
 * extent), without touching new ones. */
bool extent_dirty_fits(const arena_t *a, size_t npages);

/*
 * Takes npages pages aligned to align_pages pages (a power of two) and makes them an
 * active extent in state `state` (EXTENT_SLAB or EXTENT_LARGE), with page-map entries
 * carrying `code`: on every page for a slab, on the first and last page for a large
 * block. *zeroed tells whether the pages are known to read as zero. want_zero: the
 * caller clears the pages unless they read as zero (calloc), so resident pages are not
 * stretched over released ones (see absorb_retained_neighbor). NULL if the OS refuses
 * memory.
 */
extent_t *extent_alloc(arena_t *a, size_t npages, size_t align_pages, extent_state_t state,
                       unsigned code, bool want_zero, bool *zeroed);
/*
 * extent_alloc for a large block that gathers resident free pages: when the block's
 * pages come from released or fresh ones (*zeroed), resident free extents are moved
 * under it by the kernel (no copy, no page fault) from page gather_at on; *gathered
 * pages from there hold old data, the others read as zero.
 */
extent_t *extent_alloc_gathering(arena_t *a, size_t npages, size_t align_pages, unsigned code, size_t gather_at,
                                 bool want_zero, bool *zeroed, size_t *gathered);
/* Whether moved pages cost too much on a machine where a page fault of `pages` fresh
 * pages took fault_ns and the first reads of as many pages moved to addresses never
 * touched took moved_read_ns: more than 1/GATHER_READ_SHARE_MAX of it (extent.c). */
#define GATHER_READ_SHARE_MAX 8
static inline bool extent_gather_costly(uint64_t fault_ns, uint64_t moved_read_ns) {
  return moved_read_ns > fault_ns / GATHER_READ_SHARE_MAX;
}
/* Whether large blocks may gather (not measured yet counts as yes), and the measure of
 * the machine's page faults and moved pages' first reads, in ns a page (0: not yet). */
bool extent_gather_state(uint64_t *fault_ns, uint64_t *moved_read_ns);
/* Returns an active extent's pages to the dirty set (coalescing), clearing its entries. */
void extent_free(arena_t *a, extent_t *e);
/* extent_free for a large block whose pages were moved away (os_move_pages): they read
 * as zero, so the extent joins the retained set. */
void extent_free_moved(arena_t *a, extent_t *e);
/* extent_free for an empty slab from the arena's slab stash (arena.c), whose pages are
 * already counted as free: not active, and noted for decay when they were stashed. */
void extent_free_stashed_slab(arena_t *a, extent_t *e);
/* Grows a large extent in place to npages if the following pages are free; keeps code. */
bool extent_grow_in_place(arena_t *a, extent_t *e, size_t npages, unsigned code);
/* Shrinks a large extent in place to npages (< e->npages); the tail becomes free.
 * Returns false (and changes nothing) only if no metadata record could be had. */
bool extent_shrink_in_place(arena_t *a, extent_t *e, size_t npages, unsigned code);
/* Gives back (to the retained set) every dirty run too small for any request
 * (size_class_min_slab_pages) once they add up to 1 MiB, until deadline_ns (0: none)
 * has passed; returns the pages. */
size_t extent_release_unusable(arena_t *a, uint64_t deadline_ns);
/* Moves the oldest free extents of state `from` to state `to` (EXTENT_MUZZY: lazily
 * freed with MADV_FREE; EXTENT_RETAINED: released with MADV_DONTNEED) until at most
 * keep_pages remain in `from`, or until deadline_ns (0: none) has passed. Returns the
 * pages moved. */
size_t extent_move_oldest(arena_t *a, unsigned from, unsigned to, size_t keep_pages, uint64_t deadline_ns);
/*
 * Purging with the extent lock released. A madvise call takes microseconds (more when
 * the kernel must flush the TLBs of the other CPUs running the process's threads), and
 * every thread that needs a slab or a large block meanwhile waits for the extent lock,
 * and every thread needing that class's bin waits behind it: eight threads passing
 * blocks of 16 B-16 KiB to each other waited on the locks for twice as long with
 * decay on as with it off. So a decay slice takes the oldest dirty extents out of the
 * dirty set (extent_detach_oldest, lock held), the pages go to the OS with the lock
 * released (extent_hand_back_detached), and the extents go into the muzzy or retained
 * set with the lock held again (extent_insert_detached). While out, an extent is in no
 * set and its bounds map to nothing: no free merges with it, no request takes it. The
 * arena lists the extents that are out (its purging list), so that a child process
 * forked meanwhile, where the thread handing them back does not exist, gets them back
 * as dirty pages (extent_restore_detached).
 */
#define EXTENT_DETACH_MAX 16
typedef struct extent_batch {
  extent_t *extents[EXTENT_DETACH_MAX];
  unsigned n;
  unsigned to;       /* EXTENT_MUZZY or EXTENT_RETAINED */
  uint64_t nmadvise; /* calls made by extent_hand_back_detached */
} extent_batch_t;
/* Takes the oldest dirty extents (the top of the last one when it is bigger than what
 * must go) out until at most keep_pages dirty pages remain or the batch is full.
 * Returns the pages taken. Lock held. */
size_t extent_detach_oldest(arena_t *a, size_t keep_pages, extent_batch_t *b);
/* Hands the batch's pages to the OS for state b->to. No lock needed (nor held, ideally). */
void extent_hand_back_detached(extent_batch_t *b);
/* Puts the batch's extents in the set of b->to, counted as handed back. Lock held. */
void extent_insert_detached(arena_t *a, extent_batch_t *b);
/* In a forked child: every extent that was out goes back to the dirty set. Lock held. */
void extent_restore_detached(arena_t *a);
/* Releases every muzzy page and dirty pages down to keep_pages. Returns pages released. */
size_t extent_purge(arena_t *a, size_t keep_pages);
/* Unmaps every retained extent (their page-map entries cleared, mapped_pages lowered).
 * Returns the pages unmapped. */
size_t extent_unmap_retained(arena_t *a);
/* Gives back every unused page the extent sets hold: purges dirty and muzzy pages, then
 * unmaps the retained ones. Returns the pages unmapped. */
size_t extent_trim(arena_t *a);
/* Set when the OS refused a mapping, cleared when a full growth step succeeds again:
 * while it is set, freed memory is unmapped at once (purge_tick_unlock), so that mappings the
 * program makes itself (thread stacks) fit under an address-space limit. */
extern _Atomic bool extent_pressure;
/* Bytes every arena has mapped (what the soft limit, option limit, counts with base). */
extern _Atomic size_t extent_mapped_bytes;

/* Sets page-map entries for an active extent (slab: all pages; large: first and last). */
void extent_map_active(extent_t *e, unsigned code);

/* Page-count buckets (exposed for tests). */
unsigned extent_bucket_floor(size_t npages);
unsigned extent_bucket_ceil(size_t npages);
size_t extent_bucket_size(unsigned bucket);

#endif
