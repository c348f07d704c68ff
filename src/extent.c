/* SPDX-License-Identifier: MIT */
#include "extent.h"

#include <string.h>

#include "base.h"
#include "config.h"
#include "fatal.h"
#include "free_map.h"
#include "lock.h"
#include "options.h"
#include "os.h"
#include "pagemap.h"
#include "pairing_heap.h"
#include "size_class.h"

/* An arena asks the OS for at least 4 MiB at a time, doubling up to 1 GiB, so that the
 * number of mappings stays small; untouched pages of a mapping cost no memory. */
#define GROW_MIN_PAGES ((size_t)1024)
#define GROW_MAX_PAGES ((size_t)1 << 18)
/* A dirty extent this many times a request or more is split from its top end. */
#define DIRTY_MAX_FIT 64
/* Large blocks of at least this many pages (1 MiB) come from the top of the extent
 * chosen for them, smaller ones from its bottom (extent_alloc). */
#define BIG_LARGE_PAGES 256

/* ---- size buckets: 1, 2, 3, 4, 5, 6, 7, 8, 10, 12, 14, 16, 20, ... pages ---- */

/* Inline here: set_find, set_insert and set_remove compute a bucket on every call. */
static inline size_t bucket_size(unsigned b) {
  if (b < 3) return b + 1;
  unsigned lg = (b - 3) / 4 + 2, m = (b - 3) % 4;
  return ((size_t)1 << lg) + m * ((size_t)1 << (lg - 2));
}

static inline unsigned bucket_floor(size_t n) {
  if (n < 4) return (unsigned)n - 1;
  unsigned lg = 63u - (unsigned)__builtin_clzll((unsigned long long)n);
  unsigned m = (unsigned)((n - ((size_t)1 << lg)) >> (lg - 2));
  unsigned b = 3 + (lg - 2) * 4 + m;
  return b < NPAGE_BUCKETS ? b : NPAGE_BUCKETS - 1;
}

/* The ceiling bucket of n, given its floor bucket. */
static inline unsigned bucket_ceil_from(unsigned floor, size_t n) {
  return bucket_size(floor) >= n ? floor : floor + 1;
}

size_t extent_bucket_size(unsigned b) { return bucket_size(b); }
unsigned extent_bucket_floor(size_t n) { return bucket_floor(n); }
unsigned extent_bucket_ceil(size_t n) { return bucket_ceil_from(bucket_floor(n), n); }

/* ---- metadata records ---- */

/* A record holds its slab's bitmap after it: one word per 64 regions. Sized for the
 * slab's class rather than for the largest bitmap, most slabs' records take half the
 * memory (a heap of 90 MiB in 1-4 KiB blocks has some 2,000 slabs: 250 KiB less), and
 * a free extent's record is the same size as most slabs', so they reuse each other's. */
#define RECORD_GRANULE 64 /* base.c's alignment: a record never shares a cache line */
static size_t record_kind_size(unsigned kind) { return (size_t)(kind + 2) * RECORD_GRANULE; }
static unsigned record_bitmap_words(unsigned kind) {
  return (unsigned)((record_kind_size(kind) - sizeof(extent_t)) / sizeof(uint64_t));
}
static unsigned record_kind_for(unsigned words) {
  unsigned kind = 0;
  while (record_bitmap_words(kind) < words) kind++;
  return kind;
}
_Static_assert(sizeof(extent_t) <= 2 * RECORD_GRANULE, "the smallest record holds an extent_t");
_Static_assert(sizeof(extent_t) + BITMAP_MAX_WORDS * sizeof(uint64_t) <= (EXTENT_RECORD_KINDS + 1) * RECORD_GRANULE,
               "the largest record kind holds the largest bitmap");

/* The bitmap words a slab of page-map code code needs (0: not a slab). */
static unsigned slab_bitmap_words(extent_state_t state, unsigned code) {
  return state == EXTENT_SLAB ? (class_infos[code - 1].nregs + 63) / 64 : 0;
}

static extent_t *record_new(arena_t *a, unsigned words) {
  unsigned kind = record_kind_for(words);
  tessera_assert(kind < EXTENT_RECORD_KINDS);
  extent_t *r = a->spare_records[kind];
  if (r != NULL) {
    a->spare_records[kind] = r->heap_next;
    memset(r, 0, record_kind_size(kind));
  } else {
    r = base_alloc(record_kind_size(kind));
    if (r == NULL) return NULL;
  }
  r->record_kind = (uint8_t)kind;
  r->arena = a;
  return r;
}

static void record_delete(arena_t *a, extent_t *r) {
  tessera_assert(r->arena == a);
  r->state = 0; /* a stale page-map entry can never find a valid extent here */
  r->heap_next = a->spare_records[r->record_kind];
  a->spare_records[r->record_kind] = r;
}

/* ---- free-extent sets ---- */

static extent_set_t *set_of(arena_t *a, unsigned state) {
  switch (state) {
  case EXTENT_DIRTY: return &a->dirty;
  case EXTENT_MUZZY: return &a->muzzy;
  default: return &a->retained;
  }
}

/*
 * Free runs of fewer pages than any slab serve no request until a neighbour's free
 * extends them (size_class_min_slab_pages). Left dirty, they stay resident for as long
 * as the dirty stage may keep pages: lua5.4 (bench/real) kept 4.3 MiB of them at its
 * peak, 400 runs of 1-3 pages between live blocks, most left by large blocks resized in
 * place. Once they add up to UNUSABLE_RELEASE_PAGES, a decay pass gives them back
 * (extent_release_unusable), and a run freed next to such a released piece takes it in
 * (insert_free_bounds): without that, the released piece no longer merged with it,
 * and frag's peak grew by 1.8 MiB. The piece's pages count as dirty from then on although
 * they are not resident: decay may hand them back a second time, at the cost of a system
 * call. The threshold spares programs that make such runs all the time and merge them
 * again at once: threads cycling 4-256 KiB buffers (bench buffers) made 36,624 madvise
 * calls instead of 141 and 15% more time when every pass gave them back.
 */
#define UNUSABLE_RELEASE_PAGES 256
static bool unusable_run(size_t npages) { return npages < size_class_min_slab_pages; }

static void set_insert(extent_set_t *s, extent_t *e) {
  unsigned b = bucket_floor(e->npages);
  heap_insert(&s->buckets[b], e);
  s->nonempty[b / 64] |= (uint64_t)1 << (b % 64);
  s->npages += e->npages;
  if (unusable_run(e->npages)) s->unusable_pages += e->npages;
  extent_list_append(&s->lru, e); /* newest last */
}

static void set_remove(extent_set_t *s, extent_t *e) {
  unsigned b = bucket_floor(e->npages);
  tessera_assert(s->npages >= e->npages && !heap_empty(&s->buckets[b]));
  heap_remove(&s->buckets[b], e);
  if (heap_empty(&s->buckets[b])) s->nonempty[b / 64] &= ~((uint64_t)1 << (b % 64));
  s->npages -= e->npages;
  if (unusable_run(e->npages)) {
    tessera_assert(s->unusable_pages >= e->npages);
    s->unusable_pages -= e->npages;
  }
  extent_list_remove(&s->lru, e);
}

/* Extents of a request's floor bucket looked at for one that holds the request: the
 * first ones of the bucket's heap, walked from its root (lower addresses first). */
#define FLOOR_SCAN 16

/* The smallest of the first FLOOR_SCAN extents of h that holds npages (lowest address
 * among equals), or NULL. */
static extent_t *bucket_best_fit(const extent_heap_t *h, size_t npages) {
  extent_t *stack[FLOOR_SCAN], *best = NULL;
  unsigned top = 0;
  if (h->root != NULL) stack[top++] = h->root;
  for (unsigned seen = 0; top > 0 && seen < FLOOR_SCAN; seen++) {
    extent_t *e = stack[--top];
    if (e->npages >= npages && (best == NULL || e->npages < best->npages ||
                                (e->npages == best->npages && e->addr < best->addr)))
      best = e;
    if (e->heap_next != NULL && top < FLOOR_SCAN) stack[top++] = e->heap_next;
    if (e->heap_child != NULL && top < FLOOR_SCAN) stack[top++] = e->heap_child;
  }
  return best;
}

/* An extent that holds npages: the best fit among the first extents of the request's
 * floor bucket (where some extents are smaller than the request, so the ceiling bucket
 * alone would never offer those that are large enough), else the lowest-address extent
 * of the smallest bucket whose extents all hold npages. */
static extent_t *set_find(const extent_set_t *s, size_t npages) {
  unsigned floor = bucket_floor(npages);
  unsigned b = bucket_ceil_from(floor, npages);
  if (floor != b && (s->nonempty[floor / 64] >> (floor % 64) & 1)) {
    extent_t *fit = bucket_best_fit(&s->buckets[floor], npages);
    if (fit != NULL) return fit;
  }
  for (unsigned w = b / 64; w < (NPAGE_BUCKETS + 63) / 64; w++) {
    uint64_t bits = s->nonempty[w];
    if (w == b / 64) bits &= ~(uint64_t)0 << (b % 64);
    if (bits) return heap_first(&s->buckets[w * 64 + (unsigned)__builtin_ctzll(bits)]);
  }
  return NULL;
}

/*
 * An extent that holds npages at an address aligned to align_pages pages, though it is
 * smaller than npages + align_pages - 1 (which set_find asks for: then any extent does).
 * Aligned blocks freed between live ones leave exactly such runs: 64 blocks of 1-5 KB
 * aligned to 64 KiB, cycled, left 16-page runs starting aligned that requests of 1-2
 * pages never took (they asked for 17 pages), and took released pages instead: 18,403
 * page faults in 20,000 steps, none now (test decay.aligned_reuse). The first
 * FLOOR_SCAN extents of each bucket in between are looked at, smaller buckets first;
 * NULL if none fits.
 */
static bool holds_aligned(const extent_t *e, size_t npages, size_t align_pages) {
  uintptr_t align = align_pages * PAGE, start = (e->addr + align - 1) & ~(align - 1);
  return start + npages * PAGE <= e->addr + e->npages * PAGE;
}

COLD_TEXT static extent_t *set_find_aligned(const extent_set_t *s, size_t npages, size_t align_pages) {
  unsigned last = bucket_floor(npages + align_pages - 1);
  for (unsigned b = bucket_floor(npages); b <= last; b++) {
    if (!(s->nonempty[b / 64] >> (b % 64) & 1)) continue;
    extent_t *stack[FLOOR_SCAN];
    unsigned top = 0;
    stack[top++] = s->buckets[b].root;
    for (unsigned seen = 0; top > 0 && seen < FLOOR_SCAN; seen++) {
      extent_t *e = stack[--top];
      if (e->npages >= npages && holds_aligned(e, npages, align_pages)) return e;
      if (e->heap_next != NULL && top < FLOOR_SCAN) stack[top++] = e->heap_next;
      if (e->heap_child != NULL && top < FLOOR_SCAN) stack[top++] = e->heap_child;
    }
  }
  return NULL;
}

/* An extent of s that holds a request of npages aligned to align_pages pages: one of
 * search (npages + align_pages - 1) pages, which any holds, else an aligned fit. */
static extent_t *set_find_request(const extent_set_t *s, size_t search, size_t npages, size_t align_pages) {
  extent_t *f = set_find(s, search);
  if (f == NULL && align_pages > 1) f = set_find_aligned(s, npages, align_pages);
  return f;
}

/* ---- page-map bookkeeping ---- */

static uintptr_t last_page(const extent_t *e) { return e->addr + (e->npages - 1) * PAGE; }

/* ---- invariants (debug build) ---- */

/* A free extent: in the bucket its size says, its first and last page mapped to it with
 * code 0, and no free neighbour of its state left unmerged. */
static void check_free(const arena_t *a, const extent_t *e) {
  if (!config_debug) return;
  tessera_assert(e->arena == a && e->npages >= 1 && (e->addr & PAGE_MASK) == 0);
  tessera_assert(e->state == EXTENT_DIRTY || e->state == EXTENT_MUZZY || e->state == EXTENT_RETAINED);
  tessera_assert(pagemap_get(e->addr) == pm_make(e, 0, 0));
  tessera_assert(e->npages == 1 || pagemap_get(last_page(e)) == pm_make(e, 0, e->npages - 1));
  pm_entry_t before = pagemap_get(e->addr - PAGE), after = pagemap_get(e->addr + e->npages * PAGE);
  tessera_assert(!(pm_code(before) == 0 && pm_extent(before) != NULL && pm_extent(before)->arena == a &&
                   pm_extent(before)->state == e->state));
  tessera_assert(!(pm_code(after) == 0 && pm_extent(after) != NULL && pm_extent(after)->arena == a &&
                   pm_extent(after)->state == e->state));
}

/* An active extent: every page of a slab, the first and last page of a large block,
 * mapped to it with its code. */
static void check_active(const extent_t *e, unsigned code) {
  if (!config_debug) return;
  tessera_assert(e->npages >= 1 && (e->addr & PAGE_MASK) == 0);
  tessera_assert(e->state == EXTENT_SLAB || e->state == EXTENT_LARGE);
  size_t step = e->state == EXTENT_SLAB || e->npages == 1 ? 1 : e->npages - 1;
  for (size_t i = 0; i < e->npages; i += step) tessera_assert(pagemap_get(e->addr + i * PAGE) == pm_make(e, code, i));
}

static void map_free_bounds(extent_t *e) {
  pagemap_set(e->addr, pm_make(e, 0, 0));
  if (e->npages > 1) pagemap_set(last_page(e), pm_make(e, 0, e->npages - 1));
}

static void clear_bounds(const extent_t *e) {
  pagemap_set(e->addr, 0);
  if (e->npages > 1) pagemap_set(last_page(e), 0);
}

static void map_active_pages(extent_t *e, unsigned code) {
  if (e->state == EXTENT_SLAB) {
    for (size_t i = 0; i < e->npages; i++) pagemap_set(e->addr + i * PAGE, pm_make(e, code, i));
  } else {
    pagemap_set(e->addr, pm_make(e, code, 0));
    if (e->npages > 1) pagemap_set(last_page(e), pm_make(e, code, e->npages - 1));
  }
}

void extent_map_active(extent_t *e, unsigned code) {
  map_active_pages(e, code);
  /* Written for every active block: a large block resized in place may change class. */
  free_map_set_block(e->addr, e->npages, e->state == EXTENT_SLAB, code <= NCACHED_MAX ? code : 0);
  check_active(e, code);
}

/* extent_map_active for a block just cut from free pages: their free-map entries are
 * already clear (every block's are cleared when it leaves the active state), so a block
 * of no cached class needs no free-map write. */
static void map_new_active(extent_t *e, unsigned code) {
  map_active_pages(e, code);
  if (code <= NCACHED_MAX) free_map_set_block(e->addr, e->npages, e->state == EXTENT_SLAB, code);
  else tessera_assert(free_map_lookup(e->addr)->cache_bin_offset == 0);
  check_active(e, code);
}

static void clear_active(const extent_t *e) {
  free_map_clear_block(e->addr, e->npages, e->state == EXTENT_SLAB);
  if (e->state == EXTENT_SLAB) {
    for (size_t i = 0; i < e->npages; i++) pagemap_set(e->addr + i * PAGE, 0);
  } else {
    clear_bounds(e);
  }
}

/* A free extent of the given state that ends (or starts) on the page at page_addr. */
static extent_t *free_neighbor(arena_t *a, uintptr_t page_addr, unsigned state) {
  pm_entry_t en = pagemap_get(page_addr);
  if (pm_code(en) != 0) return NULL;
  extent_t *n = pm_extent(en);
  if (n == NULL || n->arena != a || n->state != state) return NULL;
  return n;
}

/* e with its free neighbour below merged in, if that neighbour is of state `from` and
 * has fewer than below_pages pages (merge_neighbors says the rest). */
static extent_t *merge_below(arena_t *a, extent_t *e, unsigned from, size_t below_pages, bool *stale_bounds) {
  extent_t *prev = free_neighbor(a, e->addr - PAGE, from);
  if (prev == NULL || prev->npages >= below_pages) return e;
  set_remove(set_of(a, from), prev);
  if (prev->npages > 1) pagemap_set(last_page(prev), 0); /* its first page stays a bound */
  if (*stale_bounds) pagemap_set(e->addr, 0);
  prev->npages += e->npages;
  prev->state = e->state;
  record_delete(a, e);
  *stale_bounds = true;
  return prev;
}

/* The same with its free neighbour above. */
static extent_t *merge_above(arena_t *a, extent_t *e, unsigned from, size_t below_pages, bool *stale_bounds) {
  extent_t *next = free_neighbor(a, e->addr + e->npages * PAGE, from);
  if (next == NULL || next->npages >= below_pages) return e;
  set_remove(set_of(a, from), next);
  if (next->npages > 1) pagemap_set(next->addr, 0); /* its last page stays a bound */
  if (*stale_bounds) pagemap_set(last_page(e), 0);
  e->npages += next->npages;
  record_delete(a, next);
  *stale_bounds = true;
  return e;
}

/* e (in no set) with its free neighbours of state `from` merged in, only those of fewer
 * than below_pages pages (SIZE_MAX: any size). *stale_bounds: as insert_free_bounds
 * says; true once a merge has happened (e's bounds then map to the records merged). */
static extent_t *merge_neighbors(arena_t *a, extent_t *e, unsigned from, size_t below_pages, bool *stale_bounds) {
  e = merge_below(a, e, from, below_pages, stale_bounds);
  return merge_above(a, e, from, below_pages, stale_bounds);
}

/*
 * Inserts e into the set of `state`, first merging it with free neighbours of that state.
 * Pages entering the dirty or muzzy stage are noted for their decay. Every page of e
 * maps to nothing, except its first and last when stale_bounds says they still map to
 * the block it was: those are cleared only if the merge leaves them inside the free
 * extent (otherwise they are written once, as its bounds). Likewise a neighbour's bound
 * is cleared only where it ends up inside.
 */
static void insert_free_bounds(arena_t *a, extent_t *e, unsigned state, bool stale_bounds) {
  e->state = (uint8_t)state;
  if (state == EXTENT_DIRTY) {
    /* Released neighbours too small for any slab come back in (above, "Free runs of
     * fewer pages than any slab"); their pages enter the dirty stage with e's. */
    e = merge_neighbors(a, e, EXTENT_RETAINED, size_class_min_slab_pages, &stale_bounds);
    a->dirty_decay.added += e->npages;
  } else if (state == EXTENT_MUZZY) {
    a->muzzy_decay.added += e->npages;
  }
  e = merge_neighbors(a, e, state, SIZE_MAX, &stale_bounds);
  map_free_bounds(e);
  set_insert(set_of(a, state), e);
  check_free(a, e);
}

/* insert_free_bounds for an extent none of whose pages maps to anything. */
static void insert_free(arena_t *a, extent_t *e, unsigned state) { insert_free_bounds(a, e, state, false); }

/* Inserts a remainder of a split: its neighbours are known not to be free of its state. */
static void insert_remainder(arena_t *a, extent_t *e, unsigned state) {
  e->state = (uint8_t)state;
  map_free_bounds(e);
  set_insert(set_of(a, state), e);
}

_Atomic bool extent_pressure;
_Atomic size_t extent_mapped_bytes;
/* The lowest address of the arenas' mappings: the next one is asked for just below it,
 * so that mappings stay together (one page-map leaf covers a GiB) and coalesce. */
static _Atomic uintptr_t lowest_mapping;
#define MAP_SKIP ((uintptr_t)2 << 20)

/* Set once a mapping went anywhere the OS chose while the arenas had mappings already:
 * from then on a fresh mapping may have one of ours on either side. */
static _Atomic bool mappings_scattered;

/* Where a fresh mapping may meet free extents of ours, so that inserting it reads the
 * page-map entries of only those neighbours: an entry read beyond the arenas' memory sits
 * on a leaf page nothing else touches, and on a kernel that maps no shared zero page for
 * reads (some virtual machines' kernels) that read alone costs a page of memory. */
typedef enum { FRESH_ALONE, FRESH_BELOW_OURS, FRESH_ANYWHERE } fresh_place_t;

static void *map_below_others(size_t bytes, fresh_place_t *place) {
  uintptr_t low = atomic_load_explicit(&lowest_mapping, memory_order_relaxed);
  void *p = NULL;
  /* Just below, or a little further down past a page-map leaf or a base chunk. */
  bool occupied = true;
  for (uintptr_t k = 0; k < 4 && p == NULL && occupied && low > bytes + k * MAP_SKIP; k++)
    p = os_map_at((void *)(low - bytes - k * MAP_SKIP), bytes, &occupied);
  /* Nothing of ours lies below the lowest mapping; only one placed right below it
   * touches one of ours, above. */
  *place = p != NULL && (uintptr_t)p + bytes == low ? FRESH_BELOW_OURS : FRESH_ALONE;
  /* Anywhere, when no place below was free, or when placing was refused: some
   * environments refuse fixed placements outright (valgrind's address-space manager
   * does) while mapping anywhere still works. */
  if (p == NULL) {
    p = os_map(bytes);
    if (p == NULL) return NULL;
    if (low != 0) atomic_store_explicit(&mappings_scattered, true, memory_order_relaxed);
  }
  if (atomic_load_explicit(&mappings_scattered, memory_order_relaxed)) *place = FRESH_ANYWHERE;
  while ((uintptr_t)p < low || low == 0) {
    if (atomic_compare_exchange_weak_explicit(&lowest_mapping, &low, (uintptr_t)p, memory_order_relaxed,
                                              memory_order_relaxed))
      break;
  }
  return p;
}

/* Inserts a fresh mapping into the retained set, merged with a neighbour only where
 * map_below_others says one of ours may lie. */
static void insert_fresh(arena_t *a, extent_t *e, fresh_place_t place) {
  if (place == FRESH_ANYWHERE) {
    insert_free(a, e, EXTENT_RETAINED);
    return;
  }
  bool stale_bounds = false;
  e->state = EXTENT_RETAINED;
  if (place == FRESH_BELOW_OURS) e = merge_above(a, e, EXTENT_RETAINED, SIZE_MAX, &stale_bounds);
  insert_remainder(a, e, EXTENT_RETAINED);
}

static bool over_limit(size_t pages) {
  return opt_limit != 0 && atomic_load_explicit(&extent_mapped_bytes, memory_order_relaxed) +
                                   base_mapped_bytes() + pages * PAGE > opt_limit;
}

COLD_TEXT size_t extent_unmap_retained(arena_t *a) {
  lock_assert_held(&a->extent_lock);
  size_t unmapped = 0;
  while (a->retained.lru.head != NULL) {
    extent_t *e = a->retained.lru.head;
    set_remove(&a->retained, e);
    clear_bounds(e); /* a free extent has page-map entries on its bounds only */
    os_unmap((void *)e->addr, e->npages * PAGE);
    tessera_assert(a->mapped_pages >= e->npages);
    a->mapped_pages -= e->npages;
    atomic_fetch_sub_explicit(&extent_mapped_bytes, e->npages * PAGE, memory_order_relaxed);
    unmapped += e->npages;
    record_delete(a, e);
  }
  a->retained_released_pages = 0;
  return unmapped;
}

size_t extent_trim(arena_t *a) {
  lock_assert_held(&a->extent_lock);
  extent_purge(a, 0);
  return extent_unmap_retained(a);
}

/*
 * A new mapping of at least min_pages. The step doubles from 4 MiB up to 1 GiB while
 * the OS says yes; when it refuses, the step halves down to what is needed (near an
 * address-space limit the last few MiB come in small pieces), then the arena's unused
 * pages are unmapped and the OS asked once more. A refusal marks memory pressure
 * (extent_pressure) until a mapping of the full step succeeds. The soft limit (option
 * limit) shrinks the step to what is needed, then trims, then refuses.
 */
static bool grow(arena_t *a, size_t min_pages) {
  if (a->grow_pages < GROW_MIN_PAGES) a->grow_pages = GROW_MIN_PAGES;
  /* Round up to a bucket size: set_find only looks in buckets whose every extent fits,
   * so a mapping of exactly min_pages could sit in a bucket below the one searched. */
  min_pages = extent_bucket_size(extent_bucket_ceil(min_pages));
  size_t pages = min_pages > a->grow_pages ? min_pages : a->grow_pages;
  if (pages > SIZE_MAX / PAGE) return false;
  if (over_limit(pages)) pages = min_pages;
  if (over_limit(pages)) extent_trim(a);
  if (over_limit(pages)) return false;
  fresh_place_t place;
  void *p = map_below_others(pages * PAGE, &place);
  bool refused = p == NULL;
  while (p == NULL && pages > min_pages) {
    pages = pages / 2 > min_pages ? pages / 2 : min_pages;
    p = map_below_others(pages * PAGE, &place);
  }
  if (p == NULL && extent_trim(a) > 0) p = map_below_others(pages * PAGE, &place);
  /* After a refusal the next mappings are no bigger than the last size tried (the one
   * the OS granted, or the smallest it refused: under an address-space limit, big
   * mappings would leave no room for the metadata the next ones need). Only ever
   * lowered: a request too big for any mapping (malloc(2^62)) must not become the
   * arena's next mapping size, which the OS may well grant to the next small request
   * (tens of TiB of address space without reservation). */
  if (refused) {
    atomic_store_explicit(&extent_pressure, true, memory_order_relaxed);
    if (pages < a->grow_pages) a->grow_pages = pages > GROW_MIN_PAGES ? pages : GROW_MIN_PAGES;
  }
  if (p == NULL) return false;
  extent_t *e = record_new(a, 0);
  if (e == NULL || !pagemap_reserve((uintptr_t)p, pages * PAGE)) {
    if (e != NULL) record_delete(a, e);
    os_unmap(p, pages * PAGE);
    atomic_store_explicit(&extent_pressure, true, memory_order_relaxed);
    return false;
  }
  if (!refused) {
    if (atomic_load_explicit(&extent_pressure, memory_order_relaxed))
      atomic_store_explicit(&extent_pressure, false, memory_order_relaxed);
    if (a->grow_pages < GROW_MAX_PAGES) a->grow_pages *= 2;
  }
  a->mapped_pages += pages;
  atomic_fetch_add_explicit(&extent_mapped_bytes, pages * PAGE, memory_order_relaxed);
  os_set_huge_pages(p, pages * PAGE, (int)opt_thp);
  e->addr = (uintptr_t)p;
  e->npages = pages;
  insert_fresh(a, e, place); /* fresh pages read as zero, like released ones: retained */
  return true;
}

/* Pages of state `from` taken back into use: muzzy ones were lazily freed; retained
 * ones were released if they came from a purge (released pages are assumed to be used
 * before fresh ones: the retained set does not tell them apart once they coalesce). */
static void note_reuse(arena_t *a, unsigned from, size_t npages) {
  if (from == EXTENT_MUZZY) {
    a->reused_muzzy_pages += npages;
  } else if (from == EXTENT_RETAINED) {
    size_t released = npages < a->retained_released_pages ? npages : a->retained_released_pages;
    a->reused_released_pages += released;
    a->retained_released_pages -= released;
    a->refault_slack += released;
    a->refault_window_pages += released;
  }
}

/* ---- sharing resident free pages between arenas ---- */

/*
 * Arenas are per CPU, so the memory one thread frees often lands in another arena than
 * the one the next allocation comes from (threads move between CPUs, blocks are freed
 * by other threads, a program's phases run on other threads). Before an arena touches
 * pages that are not resident (released or fresh ones), it takes a resident free extent
 * of another arena instead: the extent's record, its pages and their count move over,
 * and it never merges with its old neighbours (merging checks the arena), so each
 * extent always belongs to exactly one arena. The other arena's lock is only tried
 * (never waited for, so two arenas borrowing from each other cannot deadlock).
 */
static arena_t *sharing_arenas[MAX_ARENAS];
static _Atomic unsigned nsharing_arenas;

void extent_share_arena(arena_t *a) {
  unsigned i = atomic_load_explicit(&nsharing_arenas, memory_order_relaxed);
  if (i >= MAX_ARENAS) return;
  sharing_arenas[i] = a;
  atomic_store_explicit(&nsharing_arenas, i + 1, memory_order_release);
}

/* b's best-fitting dirty extent for npages pages, moved whole into a's dirty set; then
 * a's best fit (NULL if b had none). Both locks held. */
static extent_t *move_dirty(arena_t *a, arena_t *b, size_t npages) {
  extent_t *f = set_find(&b->dirty, npages);
  if (f == NULL) return NULL;
  set_remove(&b->dirty, f);
  clear_bounds(f);
  b->mapped_pages -= f->npages;
  a->mapped_pages += f->npages;
  f->arena = a;
  insert_free(a, f, EXTENT_DIRTY);
  return set_find(&a->dirty, npages);
}

unsigned extent_sharing_count(void) { return atomic_load_explicit(&nsharing_arenas, memory_order_acquire); }
arena_t *extent_sharing_arena(unsigned i) { return sharing_arenas[i]; }

void extent_move_active(arena_t *a, arena_t *b, extent_t *e) {
  lock_assert_held(&a->extent_lock);
  lock_assert_held(&b->extent_lock);
  tessera_assert(e->arena == b && (e->state == EXTENT_SLAB || e->state == EXTENT_LARGE));
  tessera_assert(b->active_pages >= e->npages && b->mapped_pages >= e->npages);
  b->active_pages -= e->npages;
  b->mapped_pages -= e->npages;
  a->active_pages += e->npages;
  a->mapped_pages += e->npages;
  e->arena = a;
}

static extent_t *borrow_dirty(arena_t *a, size_t npages) {
  unsigned n = atomic_load_explicit(&nsharing_arenas, memory_order_acquire);
  for (unsigned i = 0; i < n; i++) {
    arena_t *b = sharing_arenas[i];
    /* A racy look first: most arenas have nothing that fits. */
    if (b == a || __atomic_load_n(&b->dirty.npages, __ATOMIC_RELAXED) < npages || !lock_try(&b->extent_lock))
      continue;
    extent_t *f = move_dirty(a, b, npages);
    lock_release(&b->extent_lock);
    if (f != NULL) return f;
  }
  return NULL;
}

/* ---- resident pages next to released ones ---- */

/* Dirty extents looked at for a retained neighbour (absorb_retained_neighbor), and the
 * smallest request that looks: below it the faults saved do not pay for the search. */
#define ABSORB_SCAN 16
#define ABSORB_MIN_PAGES 64

/* Moves the `need` pages of retained extent r that touch dirty extent d into d (they
 * become dirty pages that are not resident: the allocation about to take d faults them,
 * unless pages are gathered under them; the caller counts the reuse). */
static void absorb_pages(arena_t *a, extent_t *d, extent_t *r, size_t need) {
  size_t resident = d->npages;
  set_remove(&a->dirty, d);
  set_remove(&a->retained, r);
  clear_bounds(d);
  clear_bounds(r);
  if (r->addr > d->addr) r->addr += need * PAGE; /* r above d: its lowest pages go */
  else d->addr -= need * PAGE;                   /* r below d: its highest pages go */
  r->npages -= need;
  d->npages += need;
  if (r->npages > 0) insert_remainder(a, r, EXTENT_RETAINED);
  else record_delete(a, r);
  insert_free(a, d, EXTENT_DIRTY); /* may meet another dirty extent beyond r */
  a->dirty_decay.added -= resident; /* those pages entered the dirty stage before */
}

/* Dirty extent d lacks the request's last `need` pages: the retained neighbour that
 * holds them, or NULL. */
static extent_t *retained_neighbor_holding(arena_t *a, const extent_t *d, size_t need) {
  extent_t *above = free_neighbor(a, d->addr + d->npages * PAGE, EXTENT_RETAINED);
  if (above != NULL && above->npages >= need) return above;
  extent_t *below = free_neighbor(a, d->addr - PAGE, EXTENT_RETAINED);
  return below != NULL && below->npages >= need ? below : NULL;
}

/* The first extents of bucket h (walked from its heap's root), *seen counting those
 * looked at: absorbs into the first one a retained neighbour completes to npages. */
static bool absorb_from_bucket(arena_t *a, const extent_heap_t *h, size_t npages, unsigned *seen) {
  extent_t *stack[ABSORB_SCAN];
  unsigned top = 0;
  if (h->root != NULL) stack[top++] = h->root;
  while (top > 0 && *seen < ABSORB_SCAN) {
    extent_t *d = stack[--top];
    ++*seen;
    extent_t *r = d->npages < npages ? retained_neighbor_holding(a, d, npages - d->npages) : NULL;
    if (r != NULL) {
      note_reuse(a, EXTENT_RETAINED, npages - d->npages);
      absorb_pages(a, d, r, npages - d->npages);
      return true;
    }
    if (d->heap_next != NULL && top < ABSORB_SCAN) stack[top++] = d->heap_next;
    if (d->heap_child != NULL && top < ABSORB_SCAN) stack[top++] = d->heap_child;
  }
  return false;
}

/*
 * No dirty extent holds npages, but one may lie next to a retained one: decay releases
 * the oldest free pages, and a freed block whose neighbour was released no longer
 * coalesces with it (different states), so a program cycling big blocks through the
 * same addresses sees its free memory in resident and released pieces that are each
 * too small. Rather than fault a whole retained extent elsewhere (or map new memory)
 * while those resident pages sit unused, the dirty extent takes from its neighbour just
 * the pages it lacks: the request reuses the resident ones and faults the rest. Looks at
 * ABSORB_SCAN dirty extents, the largest buckets first, for requests of at least
 * ABSORB_MIN_PAGES; true if one now holds npages.
 */
static bool absorb_retained_neighbor(arena_t *a, size_t npages) {
  if (npages < ABSORB_MIN_PAGES) return false;
  unsigned seen = 0;
  for (unsigned w = (NPAGE_BUCKETS + 63) / 64; w-- > 0 && seen < ABSORB_SCAN;)
    for (uint64_t bits = a->dirty.nonempty[w]; bits != 0 && seen < ABSORB_SCAN;) {
      unsigned b = 63u - (unsigned)__builtin_clzll(bits);
      bits &= ~((uint64_t)1 << b);
      if (absorb_from_bucket(a, &a->dirty.buckets[w * 64 + b], npages, &seen)) return true;
    }
  return false;
}

/* ---- resident pages gathered under a new large block ---- */

/*
 * A large request that no free resident extent holds goes to released or fresh pages,
 * and every page the program then writes is a page fault, while the same amount of
 * memory may sit resident in the dirty set in pieces, each too small: a program cycling
 * blocks of a few MiB leaves holes between its live blocks that never fit the next one.
 * Decay releases those pieces in time, oldest first, and the new block faults in as
 * many fresh pages. Instead, the pages of the oldest dirty extents (those decay would
 * release next) are moved under the new block by the kernel (os_move_pages: page-table
 * entries move, nothing is copied), and their old addresses become released pages: the
 * block starts resident, without new memory or faults. (Mesh, Powers et al., PLDI 2019,
 * compacts small-object pages through the page tables in the same way.) The newest
 * dirty extents stay where they are: they are what the program's next requests of
 * their own sizes reuse (a program keeping blocks of up to 4 MiB beside rare ones of
 * 200 MiB, when the big block took the biggest pieces instead, faulted its working set
 * back in: 112k -> 337k page faults).
 *
 * Only for blocks of GATHER_MIN_PAGES or more, pieces of GATHER_PIECE_MIN_PAGES or more
 * (each move is a system call), looking at the GATHER_SCAN oldest dirty extents, and
 * not in hardened mode (a freed block's guard page must stay where it is). A kernel
 * without the move turns it off for good. A move fails when its piece spans two of the
 * kernel's mappings (moved pages and their old neighbours are separate mappings, and
 * free extents coalesce across them): that piece is left.
 */
#define GATHER_MIN_PAGES 256
#define GATHER_PIECE_MIN_PAGES 64
#define GATHER_SCAN 32
static _Atomic bool gather_unsupported;

/*
 * Each move leaves the moved pages a kernel mapping of their own (they never merge with
 * their new neighbours), and the kernel allows a process 65,530 mappings: a program
 * cycling 20 blocks of 5-25 MiB gained about one per step. And among thousands of
 * mappings every move costs the kernel more (splits, lookups, the shared anon_vma's
 * tree): that program, run 6000 steps, spent 0.55 s in the kernel against 0.35 without
 * gathering. So gathering pauses once the process has more than GATHER_MAX_MAPPINGS (or
 * they cannot be counted), until they fall to half that. Counting reads
 * /proc/self/maps, so it happens only when an estimate (the last count, plus four for
 * each move since: a move split more than its own two ends) passes the bound, at most
 * every GATHER_COUNT_SPACING moves; while paused, once every GATHER_PAUSED_RECOUNT
 * large requests that could have gathered (the program may have unmapped memory).
 */
#define GATHER_MAX_MAPPINGS 2048
#define GATHER_COUNT_SPACING 64
#define GATHER_PAUSED_RECOUNT 1024
static _Atomic size_t gather_mappings_estimate;
static _Atomic unsigned gather_events_since_count;
static _Atomic bool gather_paused;

COLD_TEXT static void gather_count_mappings(void) {
  size_t n = os_count_mappings();
  atomic_store_explicit(&gather_mappings_estimate, n, memory_order_relaxed);
  atomic_store_explicit(&gather_events_since_count, 0, memory_order_relaxed);
  bool paused = atomic_load_explicit(&gather_paused, memory_order_relaxed);
  size_t bound = paused ? GATHER_MAX_MAPPINGS / 2 : GATHER_MAX_MAPPINGS;
  atomic_store_explicit(&gather_paused, n == 0 || n > bound, memory_order_relaxed);
}

static void gather_note_move(void) {
  size_t estimate = atomic_fetch_add_explicit(&gather_mappings_estimate, 4, memory_order_relaxed) + 4;
  unsigned since = atomic_fetch_add_explicit(&gather_events_since_count, 1, memory_order_relaxed) + 1;
  if (estimate > GATHER_MAX_MAPPINGS && since >= GATHER_COUNT_SPACING) gather_count_mappings();
}

/*
 * Whether moving pages is cheap on this machine. A move is a system call that moves
 * page-table entries, and a moved page's first read costs about as little as any read
 * (5-20 ns on the machines this was measured on, against 2-5 us for a page fault,
 * kernel zeroing included). But on some virtual machines the
 * first touch of a page moved to addresses never touched costs a large part of a fault
 * (a paravirtualized kernel: 4 us against 14), and a program cycling blocks of
 * 5-25 MiB, whose pages gathering moved eight times for each fault it saved, ran 2.4x
 * slower with gathering than without (1.5 s without, 3.6 s with; tcmalloc 1.4). So the
 * first time a block could gather, the machine is measured (os_time_page_moves over
 * GATHER_PROBE_PAGES pages, a fraction of a millisecond, once per process), and
 * gathering stays on only where a moved page's first read costs at most
 * 1/GATHER_READ_SHARE_MAX of a page fault (extent_gather_costly, extent.h). Option
 * gather (always, never) overrides the measure.
 */
#define GATHER_PROBE_PAGES 32
enum { GATHER_COST_UNKNOWN, GATHER_COST_CHEAP, GATHER_COST_HIGH };
static _Atomic unsigned char gather_cost;
static _Atomic uint64_t gather_probe_fault_ns, gather_probe_moved_read_ns;

COLD_TEXT static bool gather_measure(void) {
  uint64_t fault_ns, moved_read_ns;
  if (!os_time_page_moves(GATHER_PROBE_PAGES, &fault_ns, &moved_read_ns)) {
    atomic_store_explicit(&gather_unsupported, true, memory_order_relaxed);
    return false;
  }
  atomic_store_explicit(&gather_probe_fault_ns, fault_ns / GATHER_PROBE_PAGES, memory_order_relaxed);
  atomic_store_explicit(&gather_probe_moved_read_ns, moved_read_ns / GATHER_PROBE_PAGES, memory_order_relaxed);
  bool cheap = !extent_gather_costly(fault_ns, moved_read_ns);
  atomic_store_explicit(&gather_cost, cheap ? GATHER_COST_CHEAP : GATHER_COST_HIGH, memory_order_relaxed);
  return cheap;
}

/* Whether large blocks may gather: by option, mode and kernel, then by the machine's
 * measure, which is made now if `measure` and not made yet (not made counts as yes). */
COLD_TEXT static bool gather_on(bool measure) {
  if (opt_gather == GATHER_NEVER || opt_hardened || atomic_load_explicit(&gather_unsupported, memory_order_relaxed))
    return false;
  if (opt_gather == GATHER_ALWAYS) return true;
  unsigned cost = atomic_load_explicit(&gather_cost, memory_order_relaxed);
  if (cost == GATHER_COST_UNKNOWN) return measure ? gather_measure() : true;
  return cost == GATHER_COST_CHEAP;
}

COLD_TEXT bool extent_gather_state(uint64_t *fault_ns, uint64_t *moved_read_ns) {
  *fault_ns = atomic_load_explicit(&gather_probe_fault_ns, memory_order_relaxed);
  *moved_read_ns = atomic_load_explicit(&gather_probe_moved_read_ns, memory_order_relaxed);
  return gather_on(false);
}

/* Gathering is paused: a large request that could have gathered. */
static void gather_note_paused_request(void) {
  if (atomic_fetch_add_explicit(&gather_events_since_count, 1, memory_order_relaxed) + 1 >= GATHER_PAUSED_RECOUNT)
    gather_count_mappings();
}

/* The top `pages` pages of dirty extent d (all of it if it has no more), out of the
 * dirty set; NULL if a record for the split is refused (d is left as it was). */
COLD_TEXT static extent_t *take_dirty_top(arena_t *a, extent_t *d, size_t pages) {
  extent_t *top = pages < d->npages ? record_new(a, 0) : d;
  if (top == NULL) return NULL;
  set_remove(&a->dirty, d);
  clear_bounds(d);
  if (top != d) {
    d->npages -= pages;
    top->addr = d->addr + d->npages * PAGE;
    top->npages = pages;
    insert_remainder(a, d, EXTENT_DIRTY);
  }
  return top;
}

/*
 * A dirty piece is moved only where that pays. Dirty pages are free pages not released,
 * but not all of them are in memory: a block the program wrote a page of leaves the
 * rest of its pages dirty and untouched, and moving those saves no page fault. And a
 * move costs more among many mappings: a program cycling 8 blocks of 0.3-1.3 MB that it
 * never writes made 2,779 moves of ~150 pages, 213 us each (`strace -c`), for pages none
 * of which was resident: 0.72 s, 0.63 s of it in the
 * kernel (tcmalloc 0.02 s). So the piece's resident pages are counted
 * (mincore: one system call per 256 pages), and it moves when the faults they save
 * (the machine's measured fault cost each) outweigh what moving its pages costs, by
 * the moves timed so far in this process. A piece left is counted against the estimate
 * so that a move is tried again now and then (the cost may have fallen).
 */
#define GATHER_FAULT_NS_UNMEASURED 1000 /* gather:always, machine not measured */
#define GATHER_SKIPS_MAX 4              /* pieces left per gather before it stops looking */
static _Atomic uint64_t gather_move_ns_per_page; /* moves timed so far, moving average; 0: none yet */

COLD_TEXT static bool gather_pays(uintptr_t addr, size_t pages) {
  uint64_t fault_ns = atomic_load_explicit(&gather_probe_fault_ns, memory_order_relaxed);
  if (fault_ns == 0) fault_ns = GATHER_FAULT_NS_UNMEASURED;
  uint64_t move_ns = atomic_load_explicit(&gather_move_ns_per_page, memory_order_relaxed);
  size_t resident = os_count_resident((void *)addr, pages);
  if (resident == SIZE_MAX) resident = pages; /* unknown: as if all were */
  if (resident * fault_ns > pages * move_ns) return true;
  atomic_store_explicit(&gather_move_ns_per_page, move_ns - move_ns / 128, memory_order_relaxed);
  return false;
}

/* One move timed far above the average is more likely the thread preempted during the
 * call (a virtual machine's CPU taken away for milliseconds) than moves becoming dearer:
 * it counts as GATHER_COST_OUTLIER times the average, so that one such move cannot turn
 * gathering off for the next requests (a program cycling 5-25 MiB blocks then left its
 * free pieces resident and faulted new pages: 370 -> 480 MiB peak RSS in some runs). */
#define GATHER_COST_OUTLIER 4
COLD_TEXT static void gather_note_cost(uint64_t ns, size_t pages) {
  uint64_t per_page = ns / pages, avg = atomic_load_explicit(&gather_move_ns_per_page, memory_order_relaxed);
  if (avg != 0 && per_page > GATHER_COST_OUTLIER * avg) per_page = GATHER_COST_OUTLIER * avg;
  avg = avg == 0 ? per_page : avg - avg / 4 + per_page / 4;
  atomic_store_explicit(&gather_move_ns_per_page, avg, memory_order_relaxed);
}

/*
 * Gathers that moved nothing (every piece left, or too small) make the next requests
 * skip gathering, 2^n - 1 of each 2^n after n such gathers in a row (n at most
 * GATHER_BACKOFF_MAX): a request that cannot gather takes a released neighbour of a
 * dirty extent instead (absorb_retained_neighbor), which a request that may gather does
 * not, and the pieces' check costs system calls. One that moves pages ends the streak.
 */
#define GATHER_BACKOFF_MAX 6
static _Atomic unsigned gather_fruitless, gather_backoff_requests;

static bool gather_backoff_allows(void) {
  unsigned f = atomic_load_explicit(&gather_fruitless, memory_order_relaxed);
  if (f == 0) return true;
  unsigned period = 1u << (f < GATHER_BACKOFF_MAX ? f : GATHER_BACKOFF_MAX);
  return atomic_fetch_add_explicit(&gather_backoff_requests, 1, memory_order_relaxed) % period == 0;
}

COLD_TEXT static void gather_note_outcome(size_t moved) {
  unsigned f = atomic_load_explicit(&gather_fruitless, memory_order_relaxed);
  atomic_store_explicit(&gather_fruitless, moved > 0 ? 0 : f < GATHER_BACKOFF_MAX ? f + 1 : f, memory_order_relaxed);
}

/* Moves the top `pages` pages of dirty extent d to `to`; false if they stay. */
COLD_TEXT static bool gather_piece(arena_t *a, extent_t *d, size_t pages, uintptr_t to) {
  extent_t *piece = take_dirty_top(a, d, pages);
  if (piece == NULL) return false;
  uint64_t start = os_now_ns();
  os_move_result_t moved = os_move_pages((void *)piece->addr, (void *)to, pages * PAGE);
  gather_note_cost(os_now_ns() - start, pages);
  if (moved == OS_MOVE_LOST) fatal("lost the mapping of free pages when moving pages under a block (mremap)");
  if (moved != OS_MOVED) {
    if (moved == OS_MOVE_UNSUPPORTED) atomic_store_explicit(&gather_unsupported, true, memory_order_relaxed);
    insert_free(a, piece, EXTENT_DIRTY); /* merges back with the rest of d */
    a->dirty_decay.added -= pages;        /* they entered the dirty stage before */
    return false;
  }
  /* Not counted as released by decay (retained_released_pages): taken again, they
   * would grow the dirty cap's slack for refaults that decay never caused. */
  a->gathered_pages += pages;
  gather_note_move();
  insert_free(a, piece, EXTENT_RETAINED);
  return true;
}

/* Moves dirty pieces onto the npages released pages from `to` on (part of a large block
 * just taken), from the first of them on; returns the pages moved. A remainder smaller
 * than a piece faults: a move's system call and the kernel's work on its mappings cost
 * more than a few faults, and timed per page it would make the next big moves look
 * costly (gather_pays). */
COLD_TEXT static size_t gather_dirty(arena_t *a, uintptr_t to, size_t npages) {
  size_t done = 0;
  unsigned skipped = 0;
  extent_t *d = a->dirty.lru.head;
  for (unsigned seen = 0; d != NULL && seen < GATHER_SCAN && npages - done >= GATHER_PIECE_MIN_PAGES &&
                          skipped < GATHER_SKIPS_MAX;
       seen++) {
    /* d may shrink and move to the newest end, or go: its successor is taken first (a
     * piece that stays merges back into d only, never into another dirty extent). */
    extent_t *next = d->lru_next;
    size_t want = npages - done;
    size_t pages = d->npages < want ? d->npages : want;
    if (d->npages >= GATHER_PIECE_MIN_PAGES) {
      if (!gather_pays(d->addr + (d->npages - pages) * PAGE, pages)) skipped++;
      else if (gather_piece(a, d, pages, to + done * PAGE)) done += pages;
    }
    if (atomic_load_explicit(&gather_unsupported, memory_order_relaxed)) break;
    d = next;
  }
  return done;
}

/*
 * A block that would gather needs as many moved pages as it has pages, while one of
 * the dirty extents it would take pieces from may lie next to released pages that
 * complete it to the block's size: the block then goes there, and only the released
 * part gathers. The candidates are the oldest dirty extents, as many as gathering would
 * take for this block, so that the same free pages are used up (the newest still stay
 * for the program's next requests of their sizes); the largest with such a neighbour
 * is taken, its released range going to *lo..*hi. Taking the largest of all GATHER_SCAN
 * oldest instead left older pieces resident: 20% more peak RSS on the program below
 * when it writes whole blocks. Moves cost more than their system calls: the kernel
 * splits and merges mappings, and the program's loop writing the new blocks ran a
 * third longer than with no moves at all (`perf record -e cpu-clock` samples in its
 * `main`, 770 against 556 with `gather:never,dirty_decay_ms:-1`). A program cycling 20 blocks
 * of 5-25 MiB, a byte of every page written (`largereuse steps=1500`, 8 interleaved
 * runs, with the fixes in gather_dirty and gather_note_cost): 1.57 M pages moved ->
 * 0.70 M, 0.55-0.72 s -> 0.44-0.58 s, the same page faults, 370 MiB peak RSS.
 */
COLD_TEXT static bool absorb_oldest(arena_t *a, size_t npages, uintptr_t *lo, uintptr_t *hi) {
  extent_t *best = NULL, *best_r = NULL;
  extent_t *d = a->dirty.lru.head;
  size_t pieces = 0; /* the pages of the extents gathering would take, up to d */
  for (unsigned seen = 0; d != NULL && seen < GATHER_SCAN && pieces < npages; seen++, d = d->lru_next) {
    if (d->npages < GATHER_PIECE_MIN_PAGES) continue;
    pieces += d->npages;
    if (d->npages >= npages || (best != NULL && d->npages <= best->npages)) continue;
    extent_t *r = retained_neighbor_holding(a, d, npages - d->npages);
    if (r != NULL) {
      best = d;
      best_r = r;
    }
  }
  if (best == NULL) return false;
  size_t need = npages - best->npages;
  *lo = best_r->addr > best->addr ? best->addr + best->npages * PAGE : best->addr - need * PAGE;
  *hi = *lo + need * PAGE;
  absorb_pages(a, best, best_r, need);
  return true;
}

/* Gathers under the released pages lo..hi that block `block` took with a dirty extent
 * (absorb_oldest); returns the pages moved. */
COLD_TEXT static size_t gather_absorbed(arena_t *a, const extent_t *block, uintptr_t lo, uintptr_t hi) {
  uintptr_t end = block->addr + block->npages * PAGE;
  if (lo < block->addr) lo = block->addr;
  if (hi > end) hi = end;
  size_t released = hi > lo ? (hi - lo) / PAGE : 0;
  size_t moved = released > 0 ? gather_dirty(a, lo, released) : 0;
  note_reuse(a, EXTENT_RETAINED, released - moved); /* the pages that will fault */
  /* The dirty extent's pages served the block: not a fruitless gather, whatever moved. */
  gather_note_outcome(block->npages - released + moved);
  return moved;
}

/* Whether a block taking released or fresh pages would gather npages resident ones. */
static bool gather_possible(arena_t *a, size_t npages) {
  if (npages < GATHER_MIN_PAGES || a->dirty.npages < GATHER_PIECE_MIN_PAGES || !gather_on(false)) return false;
  if (!atomic_load_explicit(&gather_paused, memory_order_relaxed)) return gather_on(true) && gather_backoff_allows();
  gather_note_paused_request();
  return false;
}

/* gather_possible, asked once per request: *memo is -1 until then. */
static bool gather_possible_once(arena_t *a, size_t npages, int *memo) {
  if (*memo < 0) *memo = gather_possible(a, npages);
  return *memo;
}

/* Block `block`, just taken from released or fresh pages: resident pieces gathered under
 * it from page gather_at on, where gathering is possible; returns the pages moved. */
COLD_TEXT static size_t gather_fresh(arena_t *a, const extent_t *block, size_t gather_at, int *may_gather) {
  size_t moved = 0;
  if (gather_possible_once(a, block->npages - gather_at, may_gather)) {
    moved = gather_dirty(a, block->addr + gather_at * PAGE, block->npages - gather_at);
    gather_note_outcome(moved);
  }
  note_reuse(a, EXTENT_RETAINED, block->npages - moved); /* the pages that will fault */
  return moved;
}

/* A large request of npages (search with its alignment's slack) that no free extent
 * holds, not to be cleared: a dirty extent that its released neighbour completes to the
 * request, or NULL. Where the request may gather,
 * only among the extents it would gather (absorb_oldest, the released range to
 * *lo..*hi); otherwise any (absorb_retained_neighbor). */
COLD_TEXT static extent_t *dirty_next_to_released(arena_t *a, size_t npages, size_t search, size_t align_pages,
                                                  size_t gather_at, int *may_gather, uintptr_t *lo, uintptr_t *hi) {
  if (!(gather_at < npages && gather_possible_once(a, npages - gather_at, may_gather)))
    return absorb_retained_neighbor(a, search) ? set_find(&a->dirty, search) : NULL;
  if (gather_at == 0 && align_pages == 1 && absorb_oldest(a, npages, lo, hi)) return set_find(&a->dirty, search);
  return NULL;
}

bool extent_dirty_fits(const arena_t *a, size_t npages) {
  lock_assert_held(&a->extent_lock);
  return set_find(&a->dirty, npages) != NULL;
}

/* extent_alloc, and for a large block taken from released or fresh pages with
 * gather_at < npages, resident free pieces moved under it from page gather_at on
 * (*gathered of them). */
static extent_t *alloc_pages(arena_t *a, size_t npages, size_t align_pages, extent_state_t state, unsigned code,
                             size_t gather_at, bool want_zero, bool *zeroed, size_t *gathered) {
  lock_assert_held(&a->extent_lock);
  tessera_assert(npages >= 1 && align_pages >= 1 && (align_pages & (align_pages - 1)) == 0);
  size_t search = npages + (align_pages > 1 ? align_pages - 1 : 0);
  if (search < npages) return NULL;
  /* Reuse resident pages first (no page faults), then lazily freed ones, then released. */
  extent_t *f = set_find_request(&a->dirty, search, npages, align_pages);
  /*
   * Where in the chosen extent (the best fit: nothing smaller fits) the request goes.
   * Its resident pages always serve it: touching fresh pages instead would grow the
   * resident set while a big free extent sits unused (a program freeing 100 MiB of
   * blocks, then allocating 100 MiB of smaller ones, would need 200 MiB). A slab is cut
   * from the top of a bigger extent, and so is a large block from one 64 times its size
   * or more: the start of a large block freed there stays free as long as the extent
   * lasts, so a second free of it is still reported as a double free (even after hidden
   * allocations, say a thread's start-up, took slabs from its pages), and a request as
   * big as that block still finds it whole. Blocks of 1 MiB and more come from the top
   * too, the others from the bottom, with room above them to grow in place (realloc;
   * slabs never grow): big and small blocks then gather at opposite ends of the free
   * memory, so that a freed big block's neighbours are more often big free ones (a
   * program growing vectors of up to 8 MiB by realloc: peak RSS 158 -> 148 MiB, and a
   * program cycling blocks of 5-25 MiB 162k -> 152k page faults). A big block that
   * realloc moves to grow it comes from the bottom: it will likely grow again, and with
   * the free pages above it in place (a buffer doubled from 1 to 64 MiB moved to the top
   * of the free pages below it at every step, copying, and grew the next time into
   * released pages: sqlite3's sorter, `grow_elsewhere`).
   */
  bool growing = gather_at > 0 && gather_at < npages; /* a block realloc moves to grow it */
  bool from_top = f != NULL && (state == EXTENT_SLAB ? f->npages > search
                                                     : f->npages / DIRTY_MAX_FIT > search || (search >= BIG_LARGE_PAGES && !growing));
  if (f == NULL) f = set_find_request(&a->muzzy, search, npages, align_pages);
  if (f == NULL && align_pages == 1) f = borrow_dirty(a, search);
  /* Not for a block to be cleared: its released pages would be labelled dirty, and
   * clearing them would fault them all (calloc of 64 MiB, freed and asked for again:
   * 16k page faults a call instead of none). One that can gather looks only at the
   * dirty extents it would gather, and gathers under the released part (absorb_oldest). */
  int may_gather = -1;
  uintptr_t absorbed_lo = 0, absorbed_hi = 0; /* released pages absorbed to gather under */
  if (f == NULL && state == EXTENT_LARGE && !want_zero)
    f = dirty_next_to_released(a, npages, search, align_pages, gather_at, &may_gather, &absorbed_lo, &absorbed_hi);
  if (f == NULL) f = set_find(&a->retained, search);
  if (f == NULL) {
    if (!grow(a, search)) return NULL;
    f = set_find(&a->retained, search);
    if (f == NULL) return NULL;
  }
  uintptr_t align = align_pages * PAGE;
  uintptr_t start = (f->addr + align - 1) & ~(align - 1);
  if (from_top) start = (f->addr + (f->npages - npages) * PAGE) & ~(align - 1);
  size_t lead = (start - f->addr) / PAGE;
  size_t trail = f->npages - lead - npages;
  /* Take the records we need before changing anything, so failure is clean: a second
   * one only when f splits in three. */
  extent_t *r = record_new(a, slab_bitmap_words(state, code));
  extent_t *spare = r != NULL && lead > 0 && trail > 0 ? record_new(a, 0) : NULL;
  if (r == NULL || (lead > 0 && trail > 0 && spare == NULL)) {
    if (r != NULL) record_delete(a, r);
    return NULL;
  }
  unsigned fstate = f->state;
  set_remove(set_of(a, fstate), f);
  /* f's bounds are not cleared: its first and last pages are the bounds of the pieces
   * (remainders, block) written below. */
  r->addr = start;
  r->npages = npages;
  if (lead > 0) {
    f->npages = lead;
    insert_remainder(a, f, fstate);
    f = spare;
    spare = NULL;
  }
  if (trail > 0) {
    f->addr = start + npages * PAGE;
    f->npages = trail;
    insert_remainder(a, f, fstate);
    f = NULL;
  }
  if (f != NULL) record_delete(a, f);
  if (spare != NULL) record_delete(a, spare);
  r->state = (uint8_t)state;
  r->class_id = 0; /* a slab's is set by its bin; a large block's served_down */
  r->sampled = 0; /* the profiler marks its own blocks after this */
  r->calloc_measure = 0; /* (a slab's lent, the same byte) */
  map_new_active(r, code);
  a->active_pages += npages;
  /* The dirty cap's recent peak (purge.c) sees the rise a big block makes at once, not
   * only when a decay pass happens to run while the block lives. */
  if (state == EXTENT_LARGE && npages >= GATHER_MIN_PAGES && a->active_pages > a->active_peak_pages)
    a->active_peak_pages = a->active_pages;
  *gathered = 0;
  if (absorbed_hi != 0) *gathered = gather_absorbed(a, r, absorbed_lo, absorbed_hi);
  else if (gather_at < npages && fstate == EXTENT_RETAINED) *gathered = gather_fresh(a, r, gather_at, &may_gather);
  else note_reuse(a, fstate, npages);
  *zeroed = fstate == EXTENT_RETAINED;
  return r;
}

extent_t *extent_alloc(arena_t *a, size_t npages, size_t align_pages, extent_state_t state, unsigned code,
                       bool want_zero, bool *zeroed) {
  size_t gathered;
  return alloc_pages(a, npages, align_pages, state, code, npages, want_zero, zeroed, &gathered);
}

extent_t *extent_alloc_gathering(arena_t *a, size_t npages, size_t align_pages, unsigned code, size_t gather_at,
                                 bool want_zero, bool *zeroed, size_t *gathered) {
  return alloc_pages(a, npages, align_pages, EXTENT_LARGE, code, gather_at, want_zero, zeroed, gathered);
}

void extent_free(arena_t *a, extent_t *e) {
  lock_assert_held(&a->extent_lock);
  tessera_assert(e->arena == a && (e->state == EXTENT_SLAB || e->state == EXTENT_LARGE));
  tessera_assert(a->active_pages >= e->npages);
  a->active_pages -= e->npages;
  if (e->state == EXTENT_SLAB) {
    clear_active(e);
    insert_free(a, e, EXTENT_DIRTY);
  } else { /* a large block maps its bounds only: they become the free extent's, or are cleared */
    free_map_clear_block(e->addr, e->npages, false);
    insert_free_bounds(a, e, EXTENT_DIRTY, true);
  }
}

void extent_free_moved(arena_t *a, extent_t *e) {
  lock_assert_held(&a->extent_lock);
  tessera_assert(e->arena == a && e->state == EXTENT_LARGE && a->active_pages >= e->npages);
  a->active_pages -= e->npages;
  free_map_clear_block(e->addr, e->npages, false);
  insert_free_bounds(a, e, EXTENT_RETAINED, true); /* not counted as released by decay */
}

void extent_free_stashed_slab(arena_t *a, extent_t *e) {
  lock_assert_held(&a->extent_lock);
  tessera_assert(e->arena == a && e->state == EXTENT_SLAB);
  size_t npages = e->npages; /* insert_free may merge e into a neighbour and delete it */
  clear_active(e);
  insert_free(a, e, EXTENT_DIRTY);
  a->dirty_decay.added -= npages; /* counted for decay when the slab was stashed */
}

/*
 * Whether a block of old_pages growing by extra pages should rather move onto the
 * arena's resident free pages than grow into released ones (its neighbour): growing in
 * place faults in the extra pages, a new resident page each, while as many free pages
 * stay resident elsewhere; moving copies the old pages onto resident free ones and
 * leaves its own behind, free and resident: no page fault, no new resident page. A copy
 * costs about a fifth of a fault a page, so it pays while the old block is at most
 * GROW_COPY_RATIO times the growth (a block doubling: always). sqlite3 building two
 * indexes and a window query over 1M rows (its sorter's buffer grows by realloc from 1
 * to 64 MiB for each sort, freed between sorts): the second and third buffers grew into
 * released pages next to them while the first's 64 MiB stayed resident. From 16 pages
 * of growth (64 KiB): a buffer built by doubling to 8 MiB and freed, again and again,
 * grew in place from 64 to 256 KiB into released pages each time (the 48 pages decay
 * had just released) while the dirty pages stayed unused up to the cap: 15.5 MiB peak
 * and 15k faults against glibc's 9.8 MiB, 10.3 MiB and 2.5k with moves from 64 KiB
 * (`growth rounds=50000 vectors=1 strings=0`). Below that, the faults are few.
 */
#define GROW_COPY_RATIO 4u
#define GROW_MOVE_MIN_PAGES ((size_t)16)
static bool grow_elsewhere(const arena_t *a, size_t old_pages, size_t extra) {
  return extra >= GROW_MOVE_MIN_PAGES && old_pages <= GROW_COPY_RATIO * extra && a->dirty.npages >= old_pages + extra;
}

bool extent_grow_in_place(arena_t *a, extent_t *e, size_t npages, unsigned code) {
  lock_assert_held(&a->extent_lock);
  tessera_assert(e->state == EXTENT_LARGE && npages > e->npages);
  size_t extra = npages - e->npages;
  uintptr_t end = e->addr + e->npages * PAGE;
  extent_t *n = free_neighbor(a, end, EXTENT_DIRTY);
  if (n == NULL) n = free_neighbor(a, end, EXTENT_MUZZY);
  if (n == NULL) {
    n = free_neighbor(a, end, EXTENT_RETAINED);
    if (n != NULL && grow_elsewhere(a, e->npages, extra)) return false;
  }
  if (n == NULL || n->npages < extra) return false;
  extent_set_t *set = set_of(a, n->state);
  note_reuse(a, n->state, extra);
  set_remove(set, n);
  clear_bounds(n);
  if (e->npages > 1) pagemap_set(last_page(e), 0);
  if (n->npages > extra) {
    n->addr += extra * PAGE;
    n->npages -= extra;
    map_free_bounds(n);
    set_insert(set, n);
  } else {
    record_delete(a, n);
  }
  e->npages = npages;
  e->served_down = 0; /* its size is now the one realloc asked for */
  extent_map_active(e, code);
  a->active_pages += extra;
  return true;
}

bool extent_shrink_in_place(arena_t *a, extent_t *e, size_t npages, unsigned code) {
  lock_assert_held(&a->extent_lock);
  tessera_assert(e->state == EXTENT_LARGE && npages >= 1 && npages < e->npages);
  extent_t *t = record_new(a, 0);
  if (t == NULL) return false;
  clear_bounds(e);
  t->addr = e->addr + npages * PAGE;
  t->npages = e->npages - npages;
  e->npages = npages;
  e->served_down = 0;
  extent_map_active(e, code);
  a->active_pages -= t->npages;
  insert_free(a, t, EXTENT_DIRTY);
  return true;
}

/* Pages one madvise call hands back at most: a call on hundreds of MiB of resident pages
 * takes milliseconds, and a time-bounded pass checks its deadline between calls. */
#define MOVE_STEP_PAGES ((size_t)2048)

/* Takes extent e (of state `from`, the oldest) out of its set, or only its top `pages`
 * pages when it has more (the rest stays, as the oldest): what is taken, ready to move. */
static extent_t *take_top(arena_t *a, extent_set_t *set, extent_t *e, size_t pages, unsigned from) {
  set_remove(set, e);
  clear_bounds(e);
  extent_t *top = pages < e->npages ? record_new(a, 0) : NULL;
  if (top == NULL) return e; /* all of it (or no record to split with: all of it) */
  e->npages -= pages;
  top->addr = e->addr + e->npages * PAGE;
  top->npages = pages;
  insert_remainder(a, e, from);
  extent_list_remove(&set->lru, e); /* still the oldest */
  extent_list_prepend(&set->lru, e);
  return top;
}

/* One step of handing e's pages back: the n pages below its top `done` ones. */
static os_range_t step_range(const extent_t *e, size_t done, size_t n) {
  return (os_range_t){(void *)(e->addr + (e->npages - done - n) * PAGE), n * PAGE};
}

static size_t step_pages(const extent_t *e, size_t done) {
  return e->npages - done < MOVE_STEP_PAGES ? e->npages - done : MOVE_STEP_PAGES;
}

/* Hands the pages of e (out of every set) below its top `done` ones to the OS for state
 * `to`, MOVE_STEP_PAGES per call from the top down, until all are done or the deadline
 * has passed (0: none). Returns the pages done: the top ones of e. */
static size_t hand_back_pages(arena_t *a, const extent_t *e, unsigned to, size_t done, uint64_t deadline_ns) {
  while (done < e->npages) {
    size_t n = step_pages(e, done);
    os_range_t r = step_range(e, done, n);
    a->nmadvise += os_release_ranges(&r, 1, to == EXTENT_MUZZY);
    done += n;
    if (deadline_ns != 0 && done < e->npages && os_now_ns() >= deadline_ns) break;
  }
  return done;
}

/* The stats of pages hand_back_pages handed back for state `to`. */
static void count_handed_back(arena_t *a, unsigned to, size_t pages) {
  if (to == EXTENT_MUZZY) {
    a->lazy_freed_pages += pages;
  } else {
    a->purged_pages += pages;
    a->retained_released_pages += pages;
  }
}

/* The bottom `pages` pages of e, which a deadline left in state `from`, split off and
 * given back to it (merging with the rest of their extent, which stayed there): false
 * when no record is left to split with. */
static bool give_back_bottom(arena_t *a, extent_t *e, size_t pages, unsigned from) {
  extent_t *bottom = record_new(a, 0);
  if (bottom == NULL) return false;
  bottom->addr = e->addr;
  bottom->npages = pages;
  e->addr += pages * PAGE;
  e->npages -= pages;
  insert_free(a, bottom, from);
  /* They entered the stage when they were freed: not again now. */
  if (from == EXTENT_DIRTY) a->dirty_decay.added -= pages;
  else if (from == EXTENT_MUZZY) a->muzzy_decay.added -= pages;
  return true;
}

/* Runs extent_release_unusable hands back with one os_release_ranges call. */
#define UNUSABLE_BATCH 32

/* The n runs taken out of the dirty set, handed back and put in the retained set. */
COLD_TEXT static size_t release_runs(arena_t *a, extent_t **runs, unsigned n) {
  os_range_t ranges[UNUSABLE_BATCH] = {{NULL, 0}};
  size_t pages = 0;
  if (n == 0) return 0;
  for (unsigned i = 0; i < n; i++) {
    ranges[i].addr = (void *)runs[i]->addr;
    ranges[i].size = runs[i]->npages * PAGE;
  }
  a->nmadvise += os_release_ranges(ranges, n, false);
  for (unsigned i = 0; i < n; i++) {
    pages += runs[i]->npages;
    count_handed_back(a, EXTENT_RETAINED, runs[i]->npages);
    insert_free(a, runs[i], EXTENT_RETAINED);
  }
  return pages;
}

/* extent_release_unusable once there are enough such pages. */
COLD_TEXT static size_t release_unusable_runs(arena_t *a, uint64_t deadline_ns) {
  size_t released = 0;
  extent_t *runs[UNUSABLE_BATCH];
  unsigned n = 0;
  for (unsigned b = 0; b < NPAGE_BUCKETS && unusable_run(bucket_size(b)); b++) {
    extent_t *e;
    while ((e = heap_first(&a->dirty.buckets[b])) != NULL) {
      set_remove(&a->dirty, e);
      clear_bounds(e);
      runs[n++] = e;
      if (n < UNUSABLE_BATCH) continue;
      released += release_runs(a, runs, n);
      n = 0;
      /* A system call a batch: hundreds of them would stall the malloc running the pass;
       * what is left waits for the next pass. */
      if (deadline_ns != 0 && os_now_ns() >= deadline_ns) return released;
    }
  }
  return released + release_runs(a, runs, n);
}

size_t extent_release_unusable(arena_t *a, uint64_t deadline_ns) {
  lock_assert_held(&a->extent_lock);
  if (a->dirty.unusable_pages < UNUSABLE_RELEASE_PAGES) return 0;
  return release_unusable_runs(a, deadline_ns);
}

/*
 * Moves the oldest pages of state `from` to `to` until `keep_pages` are left (or the
 * deadline has passed). Each pass takes the top of the oldest extent as one piece and
 * hands its pages back in steps, so that a piece writes the page map's bounds once, not
 * once per step: a bound every 8 MiB of a free extent of 512 GiB (a block the program
 * mapped, hardly touched and freed) touched a page-map page each, 256 MiB in all.
 */
size_t extent_move_oldest(arena_t *a, unsigned from, unsigned to, size_t keep_pages, uint64_t deadline_ns) {
  lock_assert_held(&a->extent_lock);
  tessera_assert(from != to && (to == EXTENT_MUZZY || to == EXTENT_RETAINED));
  extent_set_t *set = set_of(a, from);
  size_t moved = 0;
  if (set->npages <= keep_pages) return 0;
  a->npurge++;
  while (set->npages > keep_pages) {
    extent_t *e = take_top(a, set, set->lru.head, set->npages - keep_pages, from);
    size_t done = hand_back_pages(a, e, to, 0, deadline_ns);
    /* Stopped by the deadline: the rest goes back (or, with no record to split with,
     * is handed back too). */
    if (done < e->npages && !give_back_bottom(a, e, e->npages - done, from)) done = hand_back_pages(a, e, to, done, 0);
    count_handed_back(a, to, done);
    moved += done;
    insert_free(a, e, to);
    if (deadline_ns != 0 && os_now_ns() >= deadline_ns) break;
  }
  return moved;
}

COLD_TEXT size_t extent_detach_oldest(arena_t *a, size_t keep_pages, extent_batch_t *b) {
  lock_assert_held(&a->extent_lock);
  size_t taken = 0;
  if (a->dirty.npages <= keep_pages || b->n == EXTENT_DETACH_MAX) return 0;
  a->npurge++;
  while (a->dirty.npages > keep_pages && b->n < EXTENT_DETACH_MAX) {
    extent_t *e = take_top(a, &a->dirty, a->dirty.lru.head, a->dirty.npages - keep_pages, EXTENT_DIRTY);
    extent_list_append(&a->purging, e);
    a->purging_pages += e->npages;
    b->extents[b->n++] = e;
    taken += e->npages;
  }
  return taken;
}

/* Runs handed to os_release_ranges at once by extent_hand_back_detached. */
#define HAND_BACK_RANGES 32

COLD_TEXT void extent_hand_back_detached(extent_batch_t *b) {
  os_range_t ranges[HAND_BACK_RANGES];
  unsigned n = 0;
  bool lazy = b->to == EXTENT_MUZZY;
  for (unsigned i = 0; i < b->n; i++) {
    const extent_t *e = b->extents[i];
    for (size_t done = 0, step; done < e->npages; done += step) {
      step = step_pages(e, done);
      if (n == HAND_BACK_RANGES) {
        b->nmadvise += os_release_ranges(ranges, n, lazy);
        n = 0;
      }
      ranges[n++] = step_range(e, done, step);
    }
  }
  b->nmadvise += os_release_ranges(ranges, n, lazy);
}

/* e, out of every set, off the purging list. */
static void end_detached(arena_t *a, extent_t *e) {
  extent_list_remove(&a->purging, e);
  tessera_assert(a->purging_pages >= e->npages);
  a->purging_pages -= e->npages;
}

COLD_TEXT void extent_insert_detached(arena_t *a, extent_batch_t *b) {
  lock_assert_held(&a->extent_lock);
  a->nmadvise += b->nmadvise;
  for (unsigned i = 0; i < b->n; i++) {
    extent_t *e = b->extents[i];
    end_detached(a, e);
    count_handed_back(a, b->to, e->npages);
    insert_free(a, e, b->to);
  }
  b->n = 0;
  b->nmadvise = 0;
}

COLD_TEXT void extent_restore_detached(arena_t *a) {
  lock_assert_held(&a->extent_lock);
  extent_t *e;
  while ((e = a->purging.head) != NULL) {
    end_detached(a, e);
    insert_free(a, e, EXTENT_DIRTY);
  }
}

size_t extent_purge(arena_t *a, size_t keep_pages) {
  /* Muzzy pages first, then dirty ones, all the way to released. */
  size_t released = extent_move_oldest(a, EXTENT_MUZZY, EXTENT_RETAINED, 0, 0);
  return released + extent_move_oldest(a, EXTENT_DIRTY, EXTENT_RETAINED, keep_pages, 0);
}
