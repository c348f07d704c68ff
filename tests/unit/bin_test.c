/* SPDX-License-Identifier: MIT */
/*
 * What a bin gives back, on a private arena: once a class is idle, bin_release_empty
 * moves its empty slabs (the current one and the spare) out of the bin to the arena's
 * stash, and the next slab of the class comes back from there. Decay's partial drain of
 * the stash (stash_drain_oldest) turns only the oldest stashed slabs into free pages,
 * as many as cover what it asks for. A fill for another thread than the bin's last takes
 * no region whose cache line holds a block in use (no two threads' blocks on one line),
 * while a thread's fills after its own take the lowest regions as always.
 */
#include <pthread.h>
#include <stdint.h>

#include "arena.h"
#include "base.h"
#include "bin.h"
#include "lock.h"
#include "options.h"
#include "pagemap.h"
#include "size_class.h"
#include "stash.h"
#include "unit.h"

#define NSLABS 3

static arena_t *arena;
static unsigned cls, nregs;

static const extent_t *slab_of(const void *p) { return pm_extent(pagemap_get((uintptr_t)p)); }

static void test_release_empty(void) {
  static void *blocks[NSLABS * SLAB_MAX_REGIONS];
  bin_t *bin = &arena->bins[cls];
  CHECK(bin_fill(arena, cls, blocks, NSLABS * nregs) == NSLABS * nregs, "a fill of %u slabs", NSLABS);
  for (unsigned s = 1; s < NSLABS; s++)
    CHECK(slab_of(blocks[s * nregs]) != slab_of(blocks[(s - 1) * nregs]), "fills take a slab whole");
  CHECK(bin_flush(arena, cls, blocks, NSLABS * nregs) == 0, "every block is this arena's");
  CHECK(bin->curregs == 0, "every block was given back (%zu left)", (size_t)bin->curregs);
  CHECK(bin->current != NULL && bin->current->nfree == bin->current->nregs, "the current slab is kept, empty");
  CHECK(bin->spare != NULL, "and one spare");
  size_t active = arena->active_pages, slab_pages = class_infos[cls].slab_pages;
  bin_release_empty(arena, cls);
  CHECK(bin->current == NULL && bin->spare == NULL, "no empty slab left in the bin");
  CHECK(bin->curslabs == 0, "the bin holds no slab (%zu)", (size_t)bin->curslabs);
  CHECK(arena->active_pages == active - 2 * slab_pages, "the two empty slabs left the active pages (to the stash, "
        "or through it to the dirty set): %zu -> %zu", active, (size_t)arena->active_pages);
  void *p;
  CHECK(bin_fill(arena, cls, &p, 1) == 1, "a block after the release");
  CHECK(arena->active_pages == active - slab_pages, "one slab for it");
  CHECK(bin_flush(arena, cls, &p, 1) == 0, "given back");
  bin_release_empty(arena, cls);
  bin_release_empty(arena, cls); /* nothing left: no change */
  CHECK(bin->current == NULL && bin->curslabs == 0 && arena->active_pages == active - 2 * slab_pages,
        "released twice");
}

#define DRAIN_SLABS 6

static void test_drain_oldest(void) {
  static void *blocks[DRAIN_SLABS * SLAB_MAX_REGIONS];
  atomic_store(&arena->dirty_decay_ms, -1); /* no decay pass drains the stash meanwhile */
  CHECK(bin_fill(arena, cls, blocks, DRAIN_SLABS * nregs) == DRAIN_SLABS * nregs, "a fill of %u slabs", DRAIN_SLABS);
  CHECK(bin_flush(arena, cls, blocks, DRAIN_SLABS * nregs) == 0, "every block is this arena's");
  bin_release_empty(arena, cls);
  size_t slab_pages = class_infos[cls].slab_pages;
  lock_acquire(&arena->extent_lock);
  size_t stashed = arena->stash_pages, dirty = arena->dirty.npages;
  CHECK(stashed >= DRAIN_SLABS * slab_pages, "%u empty slabs stashed (%zu pages)", DRAIN_SLABS, stashed);
  extent_t *third = arena->stash_lru.head->lru_next->lru_next;
  stash_drain_oldest(arena, slab_pages + 1); /* more than one slab's pages: two slabs */
  CHECK(arena->stash_pages == stashed - 2 * slab_pages, "two slabs drained: stash %zu -> %zu pages", stashed,
        (size_t)arena->stash_pages);
  CHECK(arena->dirty.npages == dirty + 2 * slab_pages, "their pages are free: dirty %zu -> %zu", dirty,
        (size_t)arena->dirty.npages);
  CHECK(arena->stash_lru.head == third, "the oldest two went, the third oldest is now the oldest");
  stash_drain_oldest(arena, 0);
  CHECK(arena->stash_pages == stashed - 2 * slab_pages, "asked for nothing, nothing drained");
  stash_drain(arena);
  CHECK(arena->stash_pages == 0 && arena->dirty.npages == dirty + stashed, "the whole stash drained");
  lock_release(&arena->extent_lock);
}

#define LINE_FILL 8

static unsigned line_cls;
typedef struct fill {
  void *got[LINE_FILL];
  unsigned n;
  struct fill *then; /* filled next on another thread started by this one */
} fill_t;

static void fill_elsewhere(fill_t *f);
static void *fill_in_thread(void *arg) {
  fill_t *f = arg;
  f->n = bin_fill(arena, line_cls, f->got, LINE_FILL);
  /* Started while this thread lives: a new thread's thread-local state could otherwise
   * sit where this one's was, and the bin would take it for the same thread. */
  if (f->then != NULL) fill_elsewhere(f->then);
  return NULL;
}

/* A fill of LINE_FILL regions on a new thread (another thread than the bin's last). */
static void fill_elsewhere(fill_t *f) {
  pthread_t t;
  CHECK(pthread_create(&t, NULL, fill_in_thread, f) == 0 && pthread_join(t, NULL) == 0, "a thread to fill");
  CHECK(f->n >= 1, "another thread's fill got %u regions", f->n);
}

static bool lines_meet(const void *a, const void *b, size_t size) {
  uintptr_t a0 = (uintptr_t)a / 64, a1 = ((uintptr_t)a + size - 1) / 64;
  uintptr_t b0 = (uintptr_t)b / 64, b1 = ((uintptr_t)b + size - 1) / 64;
  return a0 <= b1 && b0 <= a1;
}

/* Whether any of f's blocks shares a cache line with any of held[0 .. n). */
static bool shares_a_line(const fill_t *f, void *const *held, unsigned n, size_t size) {
  for (unsigned i = 0; i < f->n; i++)
    for (unsigned j = 0; j < n; j++)
      if (lines_meet(f->got[i], held[j], size)) return true;
  return false;
}

static void test_line_private_fills(void) {
  line_cls = size_to_class(48);
  size_t size = class_infos[line_cls].size;
  CHECK(size == 48, "a class whose regions straddle cache lines (%zu B)", size);
  void *mine[LINE_FILL];
  CHECK(bin_fill(arena, line_cls, mine, LINE_FILL) == LINE_FILL, "this thread's fill");
  /* The two lowest go back, as a thread's first frees of blocks its creator handed it. */
  CHECK(bin_flush(arena, line_cls, mine, 2) == 0, "two blocks given back");
  fill_t c = {0}, b = {.then = &c};
  fill_elsewhere(&b);
  CHECK(!shares_a_line(&b, mine + 2, LINE_FILL - 2, size), "another thread's blocks share no line with ours");
  CHECK(!shares_a_line(&c, mine + 2, LINE_FILL - 2, size) && !shares_a_line(&c, b.got, b.n, size),
        "a third thread's share no line with either");
  void *again[LINE_FILL];
  unsigned n = bin_fill(arena, line_cls, again, LINE_FILL);
  fill_t ours = {.n = n};
  for (unsigned i = 0; i < n; i++) ours.got[i] = again[i];
  CHECK(n >= 1 && !shares_a_line(&ours, b.got, b.n, size) && !shares_a_line(&ours, c.got, c.n, size),
        "this thread's next fill (after theirs) shares no line with theirs");
  /* mine[1]'s second line holds mine[2], so every fill above passed over it (mine[0]'s
   * line held no block in use: the first other thread took it). */
  void *next;
  CHECK(bin_fill(arena, line_cls, &next, 1) == 1 && next == mine[1],
        "a fill right after this thread's own takes the region passed over: %p, not %p", next, mine[1]);
}

int main(void) {
  options_init(); /* the layers below the front end, booted by hand (as init.c does) */
  size_class_init();
  arena = base_alloc(sizeof(arena_t));
  arena_init(arena, 99);
  cls = size_to_class(256);
  nregs = class_infos[cls].nregs;
  CHECK(nregs >= 16 && nregs <= SLAB_MAX_REGIONS, "256-byte slabs hold %u regions", nregs);
  test_release_empty();
  test_drain_oldest();
  test_line_private_fills();
  UNIT_DONE("bin");
}
