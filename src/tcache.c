/* SPDX-License-Identifier: MIT */
#include "tcache.h"

#include <string.h>

#include "arena.h"
#include "bin.h"
#include "config.h"
#include "exact_class.h"
#include "free_map.h"
#include "hardened.h"
#include "hardened_key.h"
#include "large_cache.h"
#include "lock.h"
#include "options.h"
#include "os.h"
#include "prof_cache.h"
#include "pagemap.h"
#include "size_class.h"
#include "thread_stats.h"

static _Atomic size_t tcache_mapped; /* bytes mapped for live thread caches (metadata) */

size_t tcache_mapped_bytes(void) { return atomic_load_explicit(&tcache_mapped, memory_order_relaxed); }
static lock_t registry_lock FORK_LOCK;
static tcache_t *registry;

/* Blocks kept per bin (every cached class is a slab class): (regions per slab) <<
 * lg_tcache_nslots_mul, clamped to [tcache_nslots_small_min, tcache_nslots_small_max]
 * (jemalloc's rule: a fill or a flush then moves about a slab's worth). */
_Static_assert(NCACHED_MAX <= NSMALL, "every class a thread cache holds lives in slabs");

/* A bin's starting capacity also holds at most TCACHE_START_BYTES of blocks (but at
 * least TCACHE_START_MIN blocks): by the block rule alone a bin of a class of several KiB
 * would start at 20 blocks, and a refill (half a bin) would hand a thread that needs one
 * such block 10 of them, up to 140 KiB, per class and per thread. A bin that really
 * serves batches still grows past it (bin_max_capacity). */
#define TCACHE_START_BYTES ((size_t)16 << 10)
#define TCACHE_START_MIN 4
static unsigned bytes_budget(unsigned c, unsigned n) {
  size_t by_bytes = TCACHE_START_BYTES / class_infos[c].size;
  if (by_bytes < TCACHE_START_MIN) by_bytes = TCACHE_START_MIN;
  return n > by_bytes ? (unsigned)by_bytes : n;
}

/* Each bin's starting and largest capacity (capacities below), per class: computed at
 * boot, and for an exact class when it is made (tcache_exact_class_made); until then
 * its slot holds the room every cache reserves for it (exact_room below). Read
 * without a lock: a slot's values only ever go down, from the room to the class's. */
static uint16_t start_capacity[NCACHED_MAX], max_capacity[NCACHED_MAX];
static unsigned bin_capacity(unsigned c) { return __atomic_load_n(&start_capacity[c], __ATOMIC_RELAXED); }
static unsigned bin_max_capacity(unsigned c) { return __atomic_load_n(&max_capacity[c], __ATOMIC_RELAXED); }
/* The stack room of bin c in a cache: its capacities, or for an exact class's slot the
 * room every cache reserves for it (whether made or not: every cache has one layout, so
 * that a pooled cache is reused as it is). */
static unsigned exact_room, exact_room_max;
static unsigned room(unsigned c) { return c < NSTATIC_SMALL ? bin_capacity(c) : exact_room; }
static unsigned room_max(unsigned c) { return c < NSTATIC_SMALL ? bin_max_capacity(c) : exact_room_max; }

static unsigned compute_capacity(unsigned c) {
  /* junk and zero fill every block in the slow paths, so they bypass the caches
   * (hardened mode keeps them, for its slow paths only: tcache_boot, cache_new). */
  if (!opt_tcache || opt_junk || opt_zero || class_infos[c].size > opt_tcache_max) return 0;
  unsigned n = class_infos[c].nregs << opt_lg_tcache_nslots_mul;
  if (n < opt_tcache_nslots_small_min) n = opt_tcache_nslots_small_min;
  if (n > opt_tcache_nslots_small_max) n = opt_tcache_nslots_small_max;
  return bytes_budget(c, n);
}

/*
 * Adaptive capacity: a small bin starts at bin_capacity() and doubles, up to
 * bin_max_capacity(), when it overflows again after a refill, round after round (a
 * program that allocates a batch of one size bigger than the bin, frees it, and starts
 * over: every round would otherwise fill and flush through the arena). The GC halves an
 * idle bin's capacity back towards its start.
 *
 * Where the stacks live: every bin at its starting capacity sits in one packed area at
 * the start of the cache's mapping (a small program touches a page or so of it); each
 * bin that can grow also has a stack reserved at its largest capacity further on, which
 * it moves to when it first grows and leaves when it shrinks back (moving the blocks it
 * holds: rare, a few times per program phase). Untouched slots cost no memory, and a
 * fresh mapping reads as zero, so every empty end already holds its NULL sentinel.
 */
#define TCACHE_GROWN_SLOTS 2048                 /* at most this many blocks per bin */
#define TCACHE_GROWN_BYTES ((size_t)1 << 20)    /* and at most this many bytes of blocks */
#define TCACHE_GROW_STREAK 2                    /* overflows after refills before growing */
static unsigned compute_max_capacity(unsigned c, unsigned base) {
  if (base == 0) return base;
  size_t by_bytes = TCACHE_GROWN_BYTES / class_infos[c].size;
  unsigned grown = by_bytes < TCACHE_GROWN_SLOTS ? (unsigned)by_bytes : TCACHE_GROWN_SLOTS;
  return grown > base ? grown : base;
}

static void store_capacities(unsigned c, unsigned base, unsigned max) {
  __atomic_store_n(&start_capacity[c], (uint16_t)base, __ATOMIC_RELAXED);
  __atomic_store_n(&max_capacity[c], (uint16_t)max, __ATOMIC_RELAXED);
}

static void capacities_init(void) {
  for (unsigned c = 0; c < NSTATIC_SMALL; c++) {
    unsigned base = compute_capacity(c);
    store_capacities(c, base, compute_max_capacity(c, base));
  }
  bool exact = opt_exact_classes && !opt_hardened;
  exact_room = exact ? start_capacity[EXACT_FIRST_VOTER] : 0;
  exact_room_max = exact ? max_capacity[EXACT_FIRST_VOTER] : 0;
  for (unsigned c = NSTATIC_SMALL; c < NCACHED_MAX; c++) store_capacities(c, exact_room, exact_room_max);
}

/* Within the room of its slot (a largest capacity not above the starting one: no room
 * to grow into). */
NOINLINE void tcache_exact_class_made(unsigned c) {
  unsigned base = compute_capacity(c);
  if (base > exact_room) base = exact_room;
  unsigned max = compute_max_capacity(c, base);
  if (max > exact_room_max || exact_room_max <= exact_room) max = exact_room_max > exact_room ? exact_room_max : base;
  store_capacities(c, base, max);
}

static void thread_exit(void *arg);
static void tcache_retire_inherited(tcache_t *tc);

/* What the GC saw of a bin at its last look: its count and its flushes. Kept by this
 * file in the cache's mapping, right after the tcache_t, before the stacks. */
typedef struct {
  uint64_t count;
  uint64_t nflushed;
} gc_look_t;
static gc_look_t *gc_looks(tcache_t *tc) { return (gc_look_t *)(tc + 1); }
#define GC_LOOKS_BYTES ((NCACHED_MAX + 1) * sizeof(gc_look_t))

/* Debug build: a bin's head lies within its stack, the empty position holds the NULL
 * sentinel, and the low-16-bit marks match the stack's ends. */
static void check_bin(const cache_bin_t *b) {
  if (!config_debug || b->capacity == 0) return;
  tessera_assert(b->head >= b->slots && b->head <= b->slots + b->capacity);
  tessera_assert(b->slots[b->capacity] == NULL);
  tessera_assert(b->low_empty == (uint16_t)(uintptr_t)(b->slots + b->capacity));
  tessera_assert(b->low_full == (uint16_t)(uintptr_t)b->slots);
}

_Static_assert(offsetof(tcache_t, bins) == 0, "the free map stores bin offsets from the tcache's start");

uint16_t tcache_bin_offset_of_size[(LOOKUP_MAX >> 4) + 1];

bool tcache_boot(void) {
  lock_init(&registry_lock);
  capacities_init();
  for (size_t i = 0; i <= LOOKUP_MAX >> 4; i++)
    tcache_bin_offset_of_size[i] = (uint16_t)offsetof(tcache_t, bins[class_of_lookup[i] + 1]);
  /* Hardened mode: malloc's fast path always finds bins[0] empty (its slow path checks
   * the block and writes its trailer). */
  if (opt_hardened) memset(tcache_bin_offset_of_size, 0, sizeof(tcache_bin_offset_of_size));
  return os_thread_exit_hook_init(thread_exit);
}

arena_t *thread_arena(void) {
  if (likely(tls_thread.arena != NULL)) return tls_thread.arena;
  arena_t *a = arena_choose_for_new_thread();
  atomic_fetch_add(&a->nthreads, 1);
  tls_thread.arena = a;
  return a;
}

/* Caches of exited threads kept for reuse (under registry_lock). Options cannot change
 * after start-up, so every cache has the same size. */
#define TCACHE_POOL_MAX 16
static tcache_t *pool[TCACHE_POOL_MAX];
static unsigned pool_count;

static tcache_t *pool_take(size_t size) {
  tcache_t *tc = NULL;
  lock_acquire(&registry_lock);
  if (pool_count > 0 && pool[pool_count - 1]->alloc_size == size) tc = pool[--pool_count];
  lock_release(&registry_lock);
  if (tc != NULL) memset(tc, 0, sizeof(*tc)); /* the stacks need no clearing */
  return tc;
}

/* Keeps tc for a later thread if there is room; else unmaps it. */
static void pool_give(tcache_t *tc) {
  lock_acquire(&registry_lock);
  bool kept = pool_count < TCACHE_POOL_MAX;
  if (kept) pool[pool_count++] = tc;
  lock_release(&registry_lock);
  atomic_fetch_sub_explicit(&tcache_mapped, tc->committed, memory_order_relaxed);
  if (!kept) os_unmap(tc, tc->alloc_size);
}

/* Points bin b at the stack whose empty end is empty, with the given capacity (empty;
 * the sentinel at empty reads NULL). */
static void place_stack(cache_bin_t *b, void **empty, unsigned capacity) {
  tessera_assert(*empty == NULL);
  b->capacity = (uint16_t)capacity;
  b->slots = empty - capacity;
  b->head = empty;
  b->low_empty = (uint16_t)(uintptr_t)empty;
  b->low_full = (uint16_t)(uintptr_t)b->slots;
}

static tcache_t *tcache_create(void) {
  tessera_assert(tls_thread.cache_state == THREAD_CREATING);
  size_t slots = 0, committed = 0;
  /* The classes made now (an exact class made meanwhile gets its bin on its first slow
   * path, as in an older cache). */
  unsigned made = NSTATIC_SMALL + atomic_load_explicit(&size_class_nexact, memory_order_acquire);
  for (unsigned c = 0; c < NCACHED_MAX; c++) {
    unsigned base = room(c), max = room_max(c);
    slots += base + 1 + (max > base ? max + 1 : 0); /* +1: the sentinel at each empty end */
    if (c < made) committed += (bin_capacity(c) + 1) * sizeof(void *);
  }
  /* Mapped directly rather than from base: a cache is ~30 KiB of stacks of which a thread
   * touches only what it uses, and unmapping it at thread exit gives that back (a program
   * with a thousand short threads must not keep a thousand caches resident). A few
   * caches of exited threads are kept for the next threads: mapping and unmapping one
   * per thread costs page faults and TLB shootdowns. */
  size_t size = (sizeof(tcache_t) + GC_LOOKS_BYTES + slots * sizeof(void *) + PAGE_MASK) & ~PAGE_MASK;
  tcache_t *tc = pool_take(size);
  if (tc == NULL) {
    tc = os_map(size);
    if (tc == NULL && free_map_release()) tc = os_map(size); /* an address-space limit */
    if (tc == NULL) return NULL;
  }
  tc->alloc_size = size;
  tc->committed = sizeof(tcache_t) + GC_LOOKS_BYTES + committed;
  atomic_fetch_add_explicit(&tcache_mapped, tc->committed, memory_order_relaxed);
  memset(gc_looks(tc), 0, GC_LOOKS_BYTES); /* a pooled cache holds its last thread's */
  void **slot = (void **)(gc_looks(tc) + NCACHED_MAX + 1);
  for (unsigned c = 0; c < NCACHED_MAX; c++) { /* the packed area */
    cache_bin_t *b = tcache_bin(tc, c);
    unsigned capacity = room(c);
    if (capacity == 0) continue; /* head NULL, marks 0: empty and full, never caches */
    tc->home_empty[c + 1] = slot + capacity;
    slot += capacity + 1;
    if (c >= made || bin_capacity(c) == 0) continue; /* an exact class's room: tcache_bin_setup_exact */
    place_stack(b, tc->home_empty[c + 1], bin_capacity(c));
    /* Hardened mode: magic 0 fails free's region-start test, so every free takes the
     * slow path (which checks the canaries and quarantines the block). */
    b->region_magic = opt_hardened ? 0 : class_infos[c].magic;
  }
  for (unsigned c = 0; c < NCACHED_MAX; c++) { /* the stacks bins grow into */
    unsigned max = room_max(c);
    if (max <= room(c)) continue;
    tc->grown_empty[c + 1] = slot + max;
    slot += max + 1;
  }
  tc->arena = thread_arena();
  memset(tc->nmalloc_bias, 0, sizeof tc->nmalloc_bias); /* a pooled cache holds its last thread's */
  if (opt_prof && !opt_hardened) prof_cache_arm(tc); /* each bin due to draw its countdown */
  lock_acquire(&registry_lock);
  tc->next = registry;
  if (registry) registry->prev = tc;
  registry = tc;
  lock_release(&registry_lock);
  return tc;
}

NOINLINE void tcache_bin_setup_exact(tcache_t *tc, unsigned c) {
  cache_bin_t *b = tcache_bin(tc, c);
  if (b->capacity != 0 || !class_made(c) || tc->home_empty[c + 1] == NULL) return;
  unsigned capacity = bin_capacity(c);
  if (capacity == 0) return;
  place_stack(b, tc->home_empty[c + 1], capacity);
  b->region_magic = class_infos[c].magic;
  tc->committed += (capacity + 1) * sizeof(void *);
  atomic_fetch_add_explicit(&tcache_mapped, (capacity + 1) * sizeof(void *), memory_order_relaxed);
}

tcache_t *tcache_get(void) {
  if (tls_thread.tcache != &tcache_empty) return tls_thread.tcache;
  if (tls_thread.cache_state != THREAD_NEW || !opt_tcache) return NULL;
  tls_thread.cache_state = THREAD_CREATING; /* allocations from here on bypass the cache */
  tcache_t *tc = tcache_create();
  if (tc == NULL) {
    tls_thread.cache_state = THREAD_NEW;
    return NULL;
  }
  /* Arms the exit hook; may itself allocate (glibc's key storage), which is fine: such
   * calls see THREAD_CREATING and go straight to the arena. A value already there was
   * inherited with the stack (tcache_retire_inherited). */
  tcache_t *inherited = os_thread_exit_hook_current();
  if (unlikely(inherited != NULL)) tcache_retire_inherited(inherited);
  os_thread_exit_hook_arm(tc);
  thread_stats_cache_set(tc);
  tls_thread.tcache = tc;
  tls_thread.cache_state = THREAD_ACTIVE;
  return tc;
}

/* Moves the calling thread to arena a (its cached blocks go back to their own arenas
 * whenever they are flushed). */
static void rebind(arena_t *a) {
  tessera_assert(a != NULL);
  arena_t *old = thread_arena();
  if (old == a) return;
  atomic_fetch_sub(&old->nthreads, 1);
  atomic_fetch_add(&a->nthreads, 1);
  tls_thread.arena = a;
  if (tls_thread.tcache != &tcache_empty) tls_thread.tcache->arena = a;
}

void thread_bind_arena(arena_t *a) {
  tls_thread.arena_pinned = true;
  rebind(a);
}

/*
 * Arena balance, applied where a cached thread meets its arena under a lock (a bin's
 * refill, or a large block from the arena's extents): the thread keeps its arena while
 * it was the last thread to take memory there, or while that lock is free; otherwise
 * another thread is working in the same arena right now, and the thread moves to the
 * arena of the CPU it runs on. (This is the rule Mozilla's jemalloc used to balance
 * threads over one arena per CPU instead of four.) Threads whose memory is mostly large
 * blocks meet the bins' locks rarely: four threads cycling 4-256 KiB buffers on two
 * CPUs stayed three to one arena in one run of three, and spent a third of their time
 * waiting on its extent lock.
 */
#define BALANCE_EXTENTS (-1) /* balanced_arena's class for a large block: the extent lock */
static arena_t *balanced_arena(tcache_t *tc, int c) {
  arena_t *a = tc->arena;
  uintptr_t me = thread_marker();
  /* arena_exclusive: a thread often names itself after its first malloc, so the name is
   * looked at again here (a bounded number of times per thread: arena.c). */
  if (unlikely(opt_arena_exclusive[0] != '\0')) {
    arena_t *x = arena_exclusive_check();
    if (x != NULL) {
      rebind(x);
      a = x;
    }
  }
  if (opt_arena_select == ARENA_SELECT_CPU && !tls_thread.arena_pinned && narenas_limit > 1 &&
      atomic_load_explicit(&a->last_refiller, memory_order_relaxed) != me &&
      atomic_load_explicit(c == BALANCE_EXTENTS ? &a->extent_lock.state : &a->bins[c].lock.state,
                           memory_order_relaxed) != 0) {
    arena_t *mine = arena_for_cpu();
    if (mine != a) {
      rebind(mine);
      a = mine;
    }
  }
  if (atomic_load_explicit(&a->last_refiller, memory_order_relaxed) != me)
    atomic_store_explicit(&a->last_refiller, me, memory_order_relaxed);
  return a;
}

arena_t *tcache_large_arena(tcache_t *tc) { return tc != NULL ? balanced_arena(tc, BALANCE_EXTENTS) : thread_arena(); }

void tcache_flush_thread(void) {
  if (tls_thread.tcache != &tcache_empty) tcache_flush_all(tls_thread.tcache);
}

/* Adds what bin c handed out and took back since it last did so to the thread's
 * counters (thread.allocatedp reads them without a call). */
static void publish_bin(tcache_t *tc, unsigned c) {
  const cache_bin_t *b = tcache_bin(tc, c);
  uint64_t m = cache_bin_nmalloc(tc, b), d = cache_bin_ndalloc(tc, b);
  tls_thread.allocated += (m - tc->nmalloc_published[c + 1]) * class_infos[c].size;
  tls_thread.deallocated += (d - tc->ndalloc_published[c + 1]) * class_infos[c].size;
  tc->nmalloc_published[c + 1] = m;
  tc->ndalloc_published[c + 1] = d;
}

/* Publishes every bin first: the counters thread.allocatedp points at then equal what
 * thread.allocated reads, as jemalloc's users check. */
void tcache_thread_counters(uint64_t *allocated, uint64_t *deallocated) {
  tcache_t *tc = tls_thread.tcache;
  if (tc != &tcache_empty)
    for (unsigned c = 0; c < NCACHED_MAX; c++) publish_bin(tc, c);
  *allocated = tls_thread.allocated;
  *deallocated = tls_thread.deallocated;
}

/*
 * Incremental GC: every TCACHE_GC_EVENTS slow-path events the thread looks at one bin;
 * a bin that served no allocation since the GC's previous look gives back half of what
 * it holds (the oldest blocks). So a thread that allocated a burst once does not keep
 * that memory forever, and the work is a few bins at a time, on slow paths only.
 *
 * A bin that did serve allocations gives back half of its blocks that certainly sat
 * unused since the last look (jemalloc's low-water mark, bounded from the counters
 * instead of tracked on the fast paths): the blocks it held then lie deepest in the
 * stack, each allocation takes at most one of them and each flushed block is one of the
 * oldest, so at least count_then - allocations - flushed of them were never touched.
 */
#define TCACHE_GC_EVENTS 32

static void flush_oldest(tcache_t *tc, unsigned c, unsigned n);

/* Bin c is back at its starting capacity: the whole pages of the stack it grew into go
 * back to the OS (they read as zero again, which is all an unused stack needs). A
 * program going through batch phases of many sizes touched up to 16 KiB of stack for
 * each of them, and kept them all (glibc's bench-malloc-simple shape, `batchfree`: peak
 * RSS 3,728 -> 3,540 KiB). */
static void release_grown_stack(tcache_t *tc, unsigned c) {
  void **empty = tc->grown_empty[c + 1];
  uintptr_t lo = ((uintptr_t)(empty - room_max(c)) + PAGE_MASK) & ~(uintptr_t)PAGE_MASK;
  uintptr_t hi = (uintptr_t)empty & ~(uintptr_t)PAGE_MASK; /* not the page of the end marker */
  if (hi > lo) os_release_pages((void *)lo, hi - lo);
}

/* Sets bin c's capacity (its blocks must fit), moving its blocks, oldest deepest, to
 * the stack that capacity lives in: the packed one at the starting capacity, the
 * reserved one above it. */
static void set_capacity(tcache_t *tc, unsigned c, unsigned capacity) {
  cache_bin_t *b = tcache_bin(tc, c);
  unsigned count = cache_bin_count(b);
  tessera_assert(capacity >= bin_capacity(c) && capacity <= bin_max_capacity(c) && count <= capacity);
  void **empty = b->slots + b->capacity;
  void **target = capacity > bin_capacity(c) ? tc->grown_empty[c + 1] : tc->home_empty[c + 1];
  size_t before = b->capacity;
  if (target != empty) {
    memcpy(target - count, b->head, count * sizeof(void *));
    place_stack(b, target, capacity);
    b->head = target - count;
  } else {
    b->capacity = (uint16_t)capacity;
    b->slots = empty - capacity;
    b->low_full = (uint16_t)(uintptr_t)b->slots;
  }
  if (capacity == bin_capacity(c) && before > capacity) release_grown_stack(tc, c);
  uint64_t bit = (uint64_t)1 << c;
  if (capacity > bin_capacity(c)) {
    tc->grown_bins |= bit;
    if (tc->released_bins & bit) tc->recurrent_bins |= bit;
  } else {
    tc->grown_bins &= ~bit;
  }
  size_t grew = capacity > before ? (capacity - before) * sizeof(void *) : 0;
  size_t shrank = capacity < before ? (before - capacity) * sizeof(void *) : 0;
  tc->committed += grew - shrank;
  atomic_fetch_add_explicit(&tcache_mapped, grew, memory_order_relaxed);
  atomic_fetch_sub_explicit(&tcache_mapped, shrank, memory_order_relaxed);
  check_bin(b);
}

/*
 * A bin grows for a batch phase (should_grow). When the program moves on to batches of
 * another size, the old phase's grown bin holds a batch nobody asks for; the GC would
 * give it back only a bin at a time on slow paths, and a batch phase runs on fast
 * paths. So a grown bin with no refill or overflow of its own during the last
 * TCACHE_PHASE_IDLE_EVENTS slow-path events of other bins gives all its blocks back to
 * their slabs and shrinks to its starting capacity: the new phase's refills then reuse
 * that memory (emptied slabs reach the arena's stash, which new slabs of every class
 * take first) instead of touching new pages.
 *
 * A full bin serving a batch each round without a refill looks idle too: a released
 * bin that grows again is one whose phases come back (two sizes in turn, say), and it
 * is never released so again (else two such bins would release each other every
 * round). Looked at every TCACHE_PHASE_LOOK_EVENTS slow-path events, over the grown
 * bins only (a mask).
 */
#define TCACHE_PHASE_IDLE_EVENTS 16
#define TCACHE_PHASE_LOOK_EVENTS 4
_Static_assert(NCACHED_MAX <= 64, "the bin masks hold a bit per bin");

static void release_idle_grown_bins(tcache_t *tc, unsigned busy) {
  tc->busy_event[busy + 1] = tc->events;
  uint64_t others = tc->grown_bins & ~(tc->recurrent_bins | (uint64_t)1 << busy);
  if (others == 0 || tc->events % TCACHE_PHASE_LOOK_EVENTS != 0) return;
  do {
    unsigned c = (unsigned)__builtin_ctzll(others);
    others &= others - 1;
    if (tc->events - tc->busy_event[c + 1] < TCACHE_PHASE_IDLE_EVENTS) continue;
    unsigned count = cache_bin_count(tcache_bin(tc, c));
    if (count > 0) flush_oldest(tc, c, count);
    bin_release_empty(tc->arena, c); /* the new phase's classes take those slabs */
    set_capacity(tc, c, bin_capacity(c));
    tc->overflow_streak[c + 1] = 0;
    tc->released_bins |= (uint64_t)1 << c;
  } while (others != 0);
}

static void tcache_gc_tick(tcache_t *tc) {
  if (++tc->events % TCACHE_GC_EVENTS != 0) return;
  thread_stats_publish_wait(); /* also for a thread that only frees (never refills) */
  unsigned c = tc->gc_bin;
  /* The static classes and the exact classes made so far (made in slot order). */
  tc->gc_bin = (c + 1) % (NSTATIC_SMALL + atomic_load_explicit(&size_class_nexact, memory_order_relaxed));
  cache_bin_t *b = tcache_bin(tc, c);
  gc_look_t *look = &gc_looks(tc)[c + 1];
  unsigned count = cache_bin_count(b);
  uint64_t nmalloc = cache_bin_nmalloc(tc, b);
  if (nmalloc == b->gc_nmalloc) { /* idle since the last look */
    if (count > 0) {
      flush_oldest(tc, c, (count + 1) / 2);
      bin_release_empty(tc->arena, c); /* to the stash, which decays */
    }
    unsigned base = bin_capacity(c), half = b->capacity / 2u;
    if (b->capacity > base) set_capacity(tc, c, half > base ? half : base);
    tc->overflow_streak[c + 1] = 0;
  } else {
    uint64_t touched = (nmalloc - b->gc_nmalloc) + (b->nflushed - look->nflushed);
    uint64_t unused = look->count > touched ? look->count - touched : 0;
    if (unused > count) unused = count;
    /* A busy bin keeps a quarter of its capacity: emptying it would only bring the
     * next refill sooner (a malloc/free pair loop would pay for it). */
    unsigned keep = b->capacity / 4u, give = (unsigned)((unused + 1) / 2);
    if (give > 0 && count - give < keep) give = count > keep ? count - keep : 0;
    if (give > 0) flush_oldest(tc, c, give);
  }
  b->gc_nmalloc = nmalloc;
  look->count = cache_bin_count(b);
  look->nflushed = b->nflushed;
}

/*
 * Bin c is full: true when it should grow rather than flush (see set_capacity).
 *
 * Growing pays only for batches: a program that allocates more blocks of one size than
 * the bin holds, then frees them all. Its bin overflows soon after a refill, with
 * hardly an allocation in between (at most the half bin the refill brought). A bin
 * whose count wanders at random (a working set whose blocks are replaced one at a
 * time) also goes from a refill to an overflow, but through many allocations and frees:
 * a random walk takes about capacity^2 / 4 steps to cross the bin, so growing it to
 * TCACHE_WALK_BYTES makes its refills and flushes rare enough, and growing it further
 * would only hold more of the program's memory in the cache: every class of a
 * program's working set wanders, so each holds about half of that. 32 KiB rather than
 * 64: larson-like churn on 8 threads 13.8 -> 12.5 MiB peak, on 2 threads 7.7 -> 7.3,
 * for 0.5-0.9% more instructions (callgrind, `larson ops=4m`, `churn threads=2
 * ops=4m`); 16 KiB saved as much again for 2.5% more.
 */
#define TCACHE_WALK_BYTES ((size_t)32 << 10)
static bool should_grow(tcache_t *tc, unsigned c) {
  cache_bin_t *b = tcache_bin(tc, c);
  unsigned k = c + 1;
  bool after_refill = b->nfilled != tc->overflow_mark[k];
  tc->overflow_mark[k] = b->nfilled;
  if (!after_refill) return false; /* one long run of frees: a flush serves it */
  bool batch = cache_bin_nmalloc(tc, b) - tc->refill_nmalloc[k] <= b->capacity / 2u;
  if (!batch && (size_t)b->capacity * class_infos[c].size >= TCACHE_WALK_BYTES) {
    tc->overflow_streak[k] = 0; /* a random walk, and the bin is big enough for one */
    return false;
  }
  if (tc->overflow_streak[k] < TCACHE_GROW_STREAK) tc->overflow_streak[k]++;
  return tc->overflow_streak[k] >= TCACHE_GROW_STREAK && b->capacity < bin_max_capacity(c);
}

void *tcache_alloc_refill(tcache_t *tc, unsigned c) {
  tcache_gc_tick(tc);
  release_idle_grown_bins(tc, c);
  cache_bin_t *b = tcache_bin(tc, c);
  tessera_assert(tc == tls_thread.tcache && b->capacity > 0);
  tessera_assert(b->head == b->slots + b->capacity); /* refills land in an empty bin */
  /* The batch lands straight in the stack's slots, lowest address first, ending at the
   * empty position: its first block is returned, the second becomes the top. */
  unsigned want = b->capacity > 1 ? b->capacity / 2u : b->capacity; /* half a bin per fill */
  void **empty = b->slots + b->capacity;
  void **batch = empty - want;
  unsigned got = bin_fill(balanced_arena(tc, (int)c), c, batch, want);
  if (unlikely(got == 0) && arena_handle_oom(class_infos[c].size)) got = bin_fill(balanced_arena(tc, (int)c), c, batch, want);
  if (got == 0) return NULL;
  if (got < want) { /* the OS refused memory partway */
    memmove(empty - got, batch, got * sizeof(void *));
    batch = empty - got;
  }
  b->head = batch + 1;
  b->nfilled += got;
  cache_bin_count_malloc(tc, b);
  tc->refill_nmalloc[c + 1] = cache_bin_nmalloc(tc, b);
  check_bin(b);
  publish_bin(tc, c);
  return batch[0];
}

/* Returns the oldest n blocks of bin c (the n slots below the empty position) to their
 * arenas: one lock acquisition per owning arena, however the blocks are mixed. */
static void flush_oldest(tcache_t *tc, unsigned c, unsigned n) {
  cache_bin_t *b = tcache_bin(tc, c);
  unsigned count = cache_bin_count(b);
  check_bin(b);
  tessera_assert(n >= 1 && n <= count);
  void **items = b->slots + b->capacity - n;
  unsigned left = n;
  while (left > 0) { /* one round per owning arena (and per lending class, bin.h) */
    const extent_t *slab = pm_extent(pagemap_get((uintptr_t)items[0]));
    left = bin_flush(slab->arena, slab->class_id, items, left);
  }
  /* The newer blocks move up into the freed slots, keeping their order. */
  memmove(b->head + n, b->head, (count - n) * sizeof(void *));
  b->head += n;
  b->nflushed += n;
  check_bin(b);
}

void tcache_free_slow(tcache_t *tc, unsigned c, void *p) {
  tcache_gc_tick(tc);
  release_idle_grown_bins(tc, c);
  cache_bin_t *b = tcache_bin(tc, c);
  check_bin(b);
  if (b->head == b->slots) { /* full: grow, or the oldest half goes back */
    unsigned count = cache_bin_count(b);
    if (should_grow(tc, c)) {
      unsigned max = bin_max_capacity(c), twice = 2u * b->capacity;
      set_capacity(tc, c, twice < max ? twice : max);
    } else {
      flush_oldest(tc, c, count - count / 2);
    }
  }
  *--b->head = p;
  check_bin(b);
  publish_bin(tc, c);
}

/* Also gives the slabs the thread's blocks emptied to the stash, where decay finds them:
 * the next threads on the arena take them from there, and if none comes they do not
 * stay resident. */
void tcache_flush_all(tcache_t *tc) {
  large_cache_flush(tc);
  for (unsigned c = 0; c < NCACHED_MAX; c++) {
    const cache_bin_t *b = tcache_bin(tc, c);
    unsigned count = cache_bin_count(b);
    if (count > 0) flush_oldest(tc, c, count);
    if (cache_bin_nmalloc(tc, b) != 0) bin_release_empty(tc->arena, c);
    publish_bin(tc, c);
  }
}

/* Hardened mode: the thread's quarantine empties before its cache goes (hardened.h):
 * blocks of the classes the cache holds into their bins (flushed below), others (above
 * 32 KiB) checked and freed to their arenas, as free does when they leave the ring. */
static void drain_quarantine(tcache_t *tc) {
  hardened_held_t h;
  while (hardened_thread_quarantine_take(&h)) {
    if (h.c < NCACHED_MAX && tcache_bin(tc, h.c)->capacity > 0) {
      tcache_free_slow(tc, h.c, h.p);
      continue;
    }
    extent_t *e = pm_extent(pagemap_get((uintptr_t)h.p));
    bool large = h.c >= NSMALL;
    size_t block = large ? e->npages * PAGE : class_infos[h.c].size;
    block_clear_freed_key(h.p);
    hardened_unscrub(h.p, hardened_region(block, h.c == CODE_LARGE), h.c == CODE_LARGE);
    if (h.c < NCACHED_MAX) block_set_freed_key(h.p); /* a later free is a double free */
    tls_thread.deallocated += block;
    if (large) arena_free_large(e->arena, e);
    else arena_free_small(e, h.p);
  }
  hardened_thread_quarantine_release();
}

/* Returns every block tc caches to its arena and takes tc off the registry. */
static void tcache_retire(tcache_t *tc) {
  tcache_flush_all(tc);
  /* Keep the exited thread's request counts: stats add them to the live caches'. */
  for (unsigned c = 0; c < NSMALL; c++) {
    bin_t *bin = &tc->arena->bins[c];
    bin_lock(tc->arena, bin);
    bin->nrequests += cache_bin_nmalloc(tc, tcache_bin(tc, c));
    lock_release(&bin->lock);
  }
  lock_acquire(&registry_lock);
  if (tc->prev) tc->prev->next = tc->next;
  else registry = tc->next;
  if (tc->next) tc->next->prev = tc->prev;
  lock_release(&registry_lock);
}

/* Returns every cached block and the cache itself; state is what the thread becomes. A
 * thread's exit or the program turning its cache off comes here, never a program with
 * one thread that exits through exit(); but every program that starts a thread does, so
 * it stays with the code every program runs (structure.footprint's threads mode). */
NOINLINE static void tcache_destroy(tcache_t *tc, uint8_t state) {
  tessera_assert(tc != &tcache_empty && tc == tls_thread.tcache);
  if (opt_hardened) drain_quarantine(tc);
  tls_thread.cache_state = state; /* from now on this thread bypasses the cache */
  tls_thread.tcache = &tcache_empty;
  thread_stats_cache_set(NULL);
  tcache_retire(tc);
  if (state == THREAD_EXITED && tls_thread.arena != NULL) atomic_fetch_sub(&tls_thread.arena->nthreads, 1);
  pool_give(tc);
}

/*
 * The cache of a thread gone without its exit hook running: one whose first allocator
 * call came after libc ran its thread-specific destructors (thread_stats.c) armed a hook
 * libc no longer runs. libc leaves the hook's value in the thread's descriptor, and the
 * next thread given that stack inherits it: that thread's own exit runs the hook with
 * the old cache, or its first cache finds the value still set. Either way the old
 * cache's blocks go back to their arenas and the cache to the pool then.
 */
COLD_TEXT static void tcache_retire_inherited(tcache_t *tc) {
  tcache_retire(tc);
  if (tc->arena != NULL) atomic_fetch_sub(&tc->arena->nthreads, 1);
  pool_give(tc);
}

static void thread_exit(void *arg) {
  if (arg != tls_thread.tcache) tcache_retire_inherited(arg);
  else tcache_destroy(arg, THREAD_EXITED);
}

bool tcache_thread_enabled(void) {
  return opt_tcache && (tls_thread.tcache != &tcache_empty || tls_thread.cache_state == THREAD_NEW);
}

void tcache_thread_enable(bool enable) {
  if (!enable && tls_thread.tcache != &tcache_empty) {
    tcache_t *tc = tls_thread.tcache;
    os_thread_exit_hook_arm(NULL); /* nothing left for the exit hook */
    tcache_destroy(tc, THREAD_CACHE_OFF);
  } else if (!enable && tls_thread.cache_state == THREAD_NEW) {
    tls_thread.cache_state = THREAD_CACHE_OFF;
  } else if (enable && tls_thread.cache_state == THREAD_CACHE_OFF) {
    tls_thread.cache_state = THREAD_NEW; /* the next slow path creates a cache */
  }
}

COLD_TEXT void tcache_for_each(void (*f)(const tcache_t *, void *), void *arg) {
  lock_acquire(&registry_lock);
  for (tcache_t *tc = registry; tc != NULL; tc = tc->next) f(tc, arg);
  lock_release(&registry_lock);
}

COLD_TEXT void tcache_fork_prepare(void) { lock_fork_prepare(&registry_lock); }
COLD_TEXT void tcache_fork_parent(void) { lock_fork_release(&registry_lock); }
COLD_TEXT void tcache_fork_child(void) {
  lock_fork_release(&registry_lock);
  /* Only the forking thread lives on in the child; the other threads' caches stay
   * allocated (their blocks are lost to the child, as with every thread-caching
   * allocator) but are dropped from the registry. */
  tcache_t *mine = tls_thread.tcache != &tcache_empty ? tls_thread.tcache : NULL;
  if (registry != mine) registry = mine; /* only what changes: each page written is copied */
  if (mine && (mine->next != NULL || mine->prev != NULL)) mine->next = mine->prev = NULL;
  if (tls_thread.arena != NULL) atomic_store(&tls_thread.arena->nthreads, 1);
}
