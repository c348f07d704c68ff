/* SPDX-License-Identifier: MIT */
#include "large_cache.h"

#include "arena.h"
#include "calloc_clear.h"
#include "config.h"
#include "hardened_key.h"
#include "options.h"
#include "pagemap.h"
#include "size_class.h"
#include "thread.h"

/* Takes and puts between two looks of the GC (at one class each). */
#define LARGE_CACHE_GC_EVENTS 32
/* A request may take a cached block up to this many classes above its own (four: up to
 * twice its size). Programs whose large blocks come in many sizes (log-uniform 4-256 KiB
 * buffers on 4 threads) rarely find their exact class cached: the block goes through the
 * arena (~1,500 instructions a pair and its lock) while a bigger one waits in the cache,
 * resident anyway. The smallest class that fits is taken first. */
#define LARGE_CACHE_FIT_UP 4u

/* The cache's classes (2^k + i * 2^(k-2) bytes, i = 1..4, from 40 KiB), by their pages:
 * class j + 1 at a block of exactly that many pages, 0 at any other count. */
#define CLASS_PAGES(kib) (((size_t)(kib) << 10) >> LG_PAGE)
#define CLASS_PAGES_MAX CLASS_PAGES(LARGE_CACHE_MAX >> 10)
static const uint8_t class_by_pages[CLASS_PAGES_MAX + 1] = {
    [CLASS_PAGES(40)] = 1,  [CLASS_PAGES(48)] = 2,  [CLASS_PAGES(56)] = 3,  [CLASS_PAGES(64)] = 4,
    [CLASS_PAGES(80)] = 5,  [CLASS_PAGES(96)] = 6,  [CLASS_PAGES(112)] = 7, [CLASS_PAGES(128)] = 8,
    [CLASS_PAGES(160)] = 9, [CLASS_PAGES(192)] = 10, [CLASS_PAGES(224)] = 11, [CLASS_PAGES(256)] = 12,
};
_Static_assert(LARGE_CACHE_CLASSES == 12 && LARGE_CACHE_MAX == (size_t)256 << 10, "class_by_pages lists the classes");

/* The class a request of that many pages takes (the smallest class that holds it), + 1;
 * 0 up to 8 pages (small classes). One load instead of large_class_round's arithmetic
 * and class_by_pages: malloc asks it on every request of these sizes. */
static const uint8_t class_for_pages[CLASS_PAGES_MAX + 1] = {
    0,  0,  0,  0,  0,  0,  0,  0,  0,                   /* 0-8 pages: small */
    1,  1,  2,  2,  3,  3,  4,  4,                       /* 9-16: 40, 48, 56, 64 KiB */
    5,  5,  5,  5,  6,  6,  6,  6,  7,  7,  7,  7,  8,  8,  8,  8, /* 17-32: 80-128 KiB */
    9,  9,  9,  9,  9,  9,  9,  9,  10, 10, 10, 10, 10, 10, 10, 10, /* 33-48: 160, 192 KiB */
    11, 11, 11, 11, 11, 11, 11, 11, 12, 12, 12, 12, 12, 12, 12, 12, /* 49-64: 224, 256 KiB */
};
_Static_assert(sizeof class_for_pages == 65, "class_for_pages has one entry per page count up to 256 KiB");

/* Blocks a class of `kib` KiB may hold: half the cache's bytes in blocks of its size,
 * 1 to LARGE_CACHE_SLOTS (8 of 40-64 KiB, 2 of 192-256 KiB). */
#define CLASS_FILL(kib) (LARGE_CACHE_BYTES / 2 / ((size_t)(kib) << 10))
#define CLASS_CAPACITY(kib) (CLASS_FILL(kib) > LARGE_CACHE_SLOTS ? LARGE_CACHE_SLOTS : CLASS_FILL(kib) < 1 ? 1 : CLASS_FILL(kib))
static const uint8_t class_capacity[LARGE_CACHE_CLASSES] = {
    CLASS_CAPACITY(40),  CLASS_CAPACITY(48),  CLASS_CAPACITY(56),  CLASS_CAPACITY(64),
    CLASS_CAPACITY(80),  CLASS_CAPACITY(96),  CLASS_CAPACITY(112), CLASS_CAPACITY(128),
    CLASS_CAPACITY(160), CLASS_CAPACITY(192), CLASS_CAPACITY(224), CLASS_CAPACITY(256),
};

/* The cache's class of a large usable size, or LARGE_CACHE_CLASSES when the size is
 * not exactly a class it caches (a sampled block's extent, a block above the limit). */
static unsigned class_of(size_t usable) {
  size_t pages = usable >> LG_PAGE;
  if (usable > opt_tcache_large_max || pages > CLASS_PAGES_MAX || class_by_pages[pages] == 0 ||
      (usable & PAGE_MASK) != 0)
    return LARGE_CACHE_CLASSES;
  unsigned j = class_by_pages[pages] - 1u;
  tessera_assert(class_to_size(NSMALL + j) == usable);
  return j;
}

static void add_bytes(large_cache_t *lc, size_t bytes, bool add) {
  size_t now = lc->bytes;
  __atomic_store_n(&lc->bytes, add ? now + bytes : now - bytes, __ATOMIC_RELAXED);
}

/* The oldest n blocks of class j back to their arenas. */
static void flush_oldest(large_cache_t *lc, unsigned j, unsigned n) {
  tessera_assert(n <= lc->count[j]);
  for (unsigned i = 0; i < n; i++) {
    extent_t *e = lc->slots[j][i];
    add_bytes(lc, e->npages * PAGE, false);
    __atomic_store_n(&e->thread_cached, 0, __ATOMIC_RELAXED);
    arena_free_large(e->arena, e);
  }
  unsigned left = lc->count[j] - n;
  for (unsigned i = 0; i < left; i++) lc->slots[j][i] = lc->slots[j][n + i];
  lc->count[j] = (uint8_t)left;
}

/* The GC's look at its next class: if nothing was taken from it since the last look,
 * half of its blocks (the oldest) go back. */
static void gc_look(large_cache_t *lc) {
  unsigned j = lc->gc_class;
  lc->gc_class = (uint8_t)((j + 1) % LARGE_CACHE_CLASSES);
  if (lc->count[j] > 0 && !lc->taken[j]) flush_oldest(lc, j, (lc->count[j] + 1u) / 2u);
  if (!lc->taken[j]) lc->missed[j] = 0;
  lc->taken[j] = 0;
}

/* Every LARGE_CACHE_GC_EVENTS takes and puts, a look (inline: every take and put counts). */
static inline void gc_tick(large_cache_t *lc) {
  if (unlikely(++lc->events % LARGE_CACHE_GC_EVENTS == 0)) gc_look(lc);
}

COLD_TEXT bool large_cache_served(const extent_t *e, size_t usable) {
  return e->served_down > 0 && class_of(usable) + e->served_down == class_of(e->npages * PAGE);
}

/* The newest block of the first class from *j to last that holds one (*j: its class). */
static extent_t *take_newest(large_cache_t *lc, unsigned *j, unsigned last) {
  unsigned c = *j;
  while (lc->count[c] == 0)
    if (++c > last) return NULL;
  *j = c;
  return lc->slots[c][--lc->count[c]];
}

/* The newest block at an address aligned to align (beyond a page) of the first class
 * from *j to last that holds one. Blocks freed after an aligned request are aligned
 * alike: a program asking for 64 KiB-aligned buffers again and again finds its own
 * freed ones here instead of searching its arena's free runs for an aligned one. With
 * the cold code (COLD_TEXT): a small program never asks for such alignments. */
COLD_TEXT static extent_t *take_aligned(large_cache_t *lc, unsigned *j, unsigned last, size_t align) {
  for (unsigned c = *j; c <= last; c++)
    for (unsigned i = lc->count[c]; i-- > 0;) {
      extent_t *e = lc->slots[c][i];
      if ((e->addr & (align - 1)) != 0) continue;
      for (; i + 1u < lc->count[c]; i++) lc->slots[c][i] = lc->slots[c][i + 1u];
      lc->count[c]--;
      *j = c;
      return e;
    }
  return NULL;
}

/* Block e, just taken from class j for a request of class want, leaves the cache. */
static inline void hand_out(large_cache_t *lc, extent_t *e, unsigned j, unsigned want) {
  tessera_assert(e->state == EXTENT_LARGE && class_of(e->npages * PAGE) == j && !e->sampled);
  e->served_down = (uint8_t)(j - want);
  lc->taken[j] = 1;
  add_bytes(lc, e->npages * PAGE, false);
  __atomic_store_n(&e->thread_cached, 0, __ATOMIC_RELAXED);
}

/* The last class a request of class j may take a block of. */
static inline unsigned last_fit(unsigned j) {
  return j + LARGE_CACHE_FIT_UP < LARGE_CACHE_CLASSES ? j + LARGE_CACHE_FIT_UP : LARGE_CACHE_CLASSES - 1u;
}

extent_t *large_cache_take(tcache_t *tc, size_t usable, size_t align, bool zero) {
  unsigned j = class_of(usable);
  if (tc == NULL || j == LARGE_CACHE_CLASSES || tls_thread.realloc_copying) return NULL;
  large_cache_t *lc = &tc->large;
  gc_tick(lc);
  unsigned want = j, last = last_fit(j);
  extent_t *e = align <= PAGE ? take_newest(lc, &j, last) : take_aligned(lc, &j, last, align);
  if (e == NULL) {
    lc->missed[want] = 1;
    return NULL;
  }
  hand_out(lc, e, j, want);
  /* A used block, cleared whole: its usable size is what malloc_usable_size reports. */
  if (zero) calloc_clear(e, (void *)e->addr, e->npages * PAGE);
  return e;
}

void *large_cache_pop(tcache_t *tc, size_t size) {
  if (tc == &tcache_empty || tls_thread.realloc_copying) return NULL;
  unsigned want = class_for_pages[(size + PAGE_MASK) >> LG_PAGE] - 1u, j = want;
  tessera_assert(class_to_size(NSMALL + want) == large_class_round(size));
  large_cache_t *lc = &tc->large;
  gc_tick(lc);
  extent_t *e;
  if (likely(lc->count[j] != 0)) e = lc->slots[j][--lc->count[j]]; /* its own class: the common case */
  else if ((e = take_newest(lc, &j, last_fit(want))) == NULL) return NULL; /* the general path notes the miss */
  hand_out(lc, e, j, want);
  tls_thread.allocated += e->npages * PAGE;
  return block_clear_freed_key((void *)e->addr);
}

/* Whether the page at addr ends or starts a free extent with resident pages. Read
 * without the arena's lock (records are never unmapped): a hint only. */
static bool free_resident_at(uintptr_t addr) {
  const extent_t *x = pm_extent(pagemap_get(addr));
  if (x == NULL) return false;
  unsigned state = __atomic_load_n(&x->state, __ATOMIC_RELAXED);
  return state == EXTENT_DIRTY || state == EXTENT_MUZZY;
}

/* A block next to free resident pages goes back to its arena, where it merges with
 * them: cached, it would split that free memory in two, and a bigger request (a vector
 * doubling, a block growing in place) would take fresh pages instead (4 threads
 * growing vectors by realloc: 10k -> 39k page faults when every block was cached). */
static bool next_to_free_pages(const extent_t *e) {
  return free_resident_at(e->addr - PAGE) || free_resident_at(e->addr + e->npages * PAGE);
}

bool large_cache_put(tcache_t *tc, extent_t *e) {
  tessera_assert(e->state == EXTENT_LARGE && !e->thread_cached);
  if (opt_hardened || opt_junk || opt_zero || e->sampled) return false;
  size_t usable = e->npages * PAGE;
  unsigned j = class_of(usable);
  if (j == LARGE_CACHE_CLASSES || tls_thread.realloc_copying) return false;
  large_cache_t *lc = &tc->large;
  gc_tick(lc);
  if (lc->count[j] >= class_capacity[j] || lc->bytes + usable > LARGE_CACHE_BYTES) return false;
  /* A block next to free resident pages goes back to merge with them, unless the class
   * is in use with nothing cached: a block carved from free memory sits next to the rest
   * of it, and a program freeing and asking for its class again and again would send
   * each block through the arena and back, for good (4 threads each replacing one block
   * of random size up to 256 KiB: 136,776 round trips, 21 now). One block of the class
   * then stays, not more. The two page-map reads come after the cheaper tests. */
  if (!(lc->missed[j] && lc->count[j] == 0) && next_to_free_pages(e)) return false;
  __atomic_store_n(&e->thread_cached, 1, __ATOMIC_RELAXED);
  lc->slots[j][lc->count[j]++] = e;
  add_bytes(lc, usable, true);
  return true;
}

void large_cache_flush(tcache_t *tc) {
  large_cache_t *lc = &tc->large;
  for (unsigned j = 0; j < LARGE_CACHE_CLASSES; j++)
    if (lc->count[j] > 0) flush_oldest(lc, j, lc->count[j]);
}

size_t large_cache_bytes(const tcache_t *tc) { return __atomic_load_n(&tc->large.bytes, __ATOMIC_RELAXED); }
