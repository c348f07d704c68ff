/* SPDX-License-Identifier: MIT */
/*
 * Hardened mode's checks (hardened.h). Nothing here knows of arenas: the front end finds
 * the blocks, these functions look at and write their bytes, and keep the quarantine.
 */
#include "hardened.h"
#include "hardened_bytes.h"
#include "hardened_ring.h"

#include <string.h>

#include "base.h"
#include "bitmap.h"
#include "fatal.h"
#include "free_map.h"
#include "lock.h"
#include "options.h"
#include "os.h"
#include "pagemap.h"
#include "size_class.h"
#include "thread.h"

/* The program's memory may hold any type: read and write it as such. */
typedef uint64_t __attribute__((may_alias)) heap_word_t;

/* ---------------------------------------------------------------- randomness */

static uint64_t splitmix64(uint64_t *state) {
  uint64_t z = (*state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

/* From the kernel; if it refuses, from the clock and an address (not secret, still
 * different in every process). */
static uint64_t seed_from_kernel(void) {
  uint64_t s;
  if (os_random_bytes(&s, sizeof(s))) return s;
  uint64_t mix = os_now_ns() ^ ((uint64_t)thread_marker() << 16);
  return splitmix64(&mix);
}

static __thread uint64_t rng_state __attribute__((tls_model("initial-exec")));

uint64_t hardened_random(void) {
  if (unlikely(rng_state == 0)) rng_state = seed_from_kernel() | 1;
  return splitmix64(&rng_state);
}

/* A random number below n. */
static unsigned random_below(unsigned n) { return (unsigned)(((hardened_random() >> 32) * n) >> 32); }

/* Random slots (hardened_take_regions): the regions a refill takes are shuffled in groups
 * of this many consecutive ones. Measured on duktape's and Lua's object benchmarks (the
 * suite's js and lua, user time, hardened mode): each region from a random place of its
 * slab 0.35 and 0.35 s; consecutive from a random place, shuffled by groups of 64 0.34
 * and 0.35, of 16 0.30, of 8 0.30, of 4 0.22 and 0.26, not shuffled 0.19 and 0.23; the
 * default mode 0.15 and 0.16. */
#define RANDOM_SLOT_GROUP 4

void hardened_take_regions(uint64_t *bitmap, unsigned nregs, uint32_t *idx, unsigned take) {
  unsigned from = random_below(nregs);
  for (unsigned i = 0; i < take; i++) {
    idx[i] = bitmap_take_from(bitmap, nregs, from);
    from = idx[i] + 1 == nregs ? 0 : idx[i] + 1;
  }
  for (unsigned base = 0; base < take; base += RANDOM_SLOT_GROUP) {
    unsigned n = take - base < RANDOM_SLOT_GROUP ? take - base : RANDOM_SLOT_GROUP;
    for (unsigned i = n; i > 1; i--) { /* Fisher and Yates's shuffle */
      unsigned j = random_below(i);
      uint32_t t = idx[base + i - 1];
      idx[base + i - 1] = idx[base + j];
      idx[base + j] = t;
    }
  }
}

/* The process's secret for canaries and trailers (hardened_bytes.h): set once, by
 * whichever thread gets there first. */
_Atomic uint64_t hardened_secret;

uint64_t hardened_secret_init(void) {
  uint64_t fresh = seed_from_kernel() | 1, expected = 0;
  if (atomic_compare_exchange_strong(&hardened_secret, &expected, fresh)) return fresh;
  return expected;
}

void hardened_overflow(const void *p, const char *func) { fatal_pointer(func, "heap overflow detected after block", p); }

/* ---------------------------------------------------------------- zero on free */

/* The words of the 16 bytes at w (checked by hardened_check_unused_words). */
static void check_unused_pair(heap_word_t *w, void *p, const char *func) {
  for (unsigned i = 0; i < 2; i++) {
    if (w[i] == 0) continue;
    /* A freed-block key left by an earlier free is the key of its own page. */
    if (w[i] != (uint64_t)(uintptr_t)free_map_lookup((uintptr_t)&w[i])) fatal_pointer(func, "write after free detected in block", p);
    w[i] = 0;
  }
}

void hardened_check_unused_words(void *p, size_t size, const char *func) {
  /* 64 bytes at a time, as the zero check: a block holding a few keys (left where
   * earlier blocks of other sizes lay) is mostly zero. */
  char *b = p;
  size_t i = 0;
  for (; i + 64 <= size; i += 64)
    if (unlikely(!hardened_all_zero(b + i, 64)))
      for (size_t j = 0; j < 64; j += 16) check_unused_pair((heap_word_t *)(b + i + j), p, func);
  for (; i < size; i += 16) check_unused_pair((heap_word_t *)(b + i), p, func);
}

/* Whether the 64 bytes at p are zero (aligned to 16). */
static bool chunk_zero(const void *p) {
  const heap_vec_t *v = p;
  heap_vec_t a = v[0] | v[1] | v[2] | v[3];
  return (a[0] | a[1]) == 0;
}

void hardened_zero_written_pages(void *p, size_t size) {
  char *b = p, *end = b + size;
  while (b < end) {
    char *next = (char *)align_up((uintptr_t)b + 1, PAGE);
    if (next > end) next = end;
    size_t len = (size_t)(next - b);
    /* A written page is most often written at its start: then no pass to read it. */
    if (!chunk_zero(b) || (len >= 64 && !chunk_zero(next - 64)) || !hardened_all_zero_large(b, len)) memset(b, 0, len);
    b = next;
  }
}

/* Large blocks kept in memory while freed (hardened_scrub, hardened.h): at most this many
 * times opt_hardened_quarantine bytes. Enough that a browser-like mix of blocks up to 1
 * MiB (the suite's frag) takes no page faults when it reuses them: its thread's ring and
 * the kept guarded blocks hold about 9 MiB of them. */
#define RESIDENT_LARGE_FACTOR 4
static _Atomic size_t resident_large;

/* Counts bytes more of large blocks kept in memory, if that stays within the bound. */
static bool resident_reserve(size_t bytes) {
  size_t limit = opt_hardened_quarantine * RESIDENT_LARGE_FACTOR;
  size_t old = atomic_load_explicit(&resident_large, memory_order_relaxed);
  do {
    if (bytes > limit || old > limit - bytes) return false;
  } while (!atomic_compare_exchange_weak_explicit(&resident_large, &old, old + bytes, memory_order_relaxed,
                                                  memory_order_relaxed));
  return true;
}

void *hardened_resident_done(void *q) {
  void *p = hardened_untag(q);
  if (p != q) {
    const extent_t *e = pm_extent(pagemap_get((uintptr_t)p));
    atomic_fetch_sub_explicit(&resident_large, hardened_region(e->npages * PAGE, true), memory_order_relaxed);
  }
  return p;
}

/* Zeroes a large block's region kept in memory while freed: the pages the program wrote,
 * as hardened_zero_written_pages does, but without reading the pages it never touched
 * (mincore: not in memory, so zero), which a read would map (a page fault each). */
static void zero_resident_pages(char *p, size_t region) {
  unsigned char resident[256];
  for (size_t off = 0; off < region; off += sizeof(resident) * PAGE) {
    size_t len = region - off < sizeof(resident) * PAGE ? region - off : sizeof(resident) * PAGE;
    if (!os_pages_resident(p + off, len, resident)) {
      hardened_zero_written_pages(p + off, len);
      continue;
    }
    for (size_t i = 0; i < len / PAGE; i++)
      if (resident[i] & 1) hardened_zero_written_pages(p + off + i * PAGE, PAGE);
  }
}

void *hardened_scrub(void *p, size_t region, bool guarded) {
  if (hardened_freed_zeroed(region, guarded)) {
    hardened_zero(p, region);
    return p;
  }
  /* A guarded region is whole pages, all but the first (which holds the freed-block key)
   * made inaccessible until the block is handed out again or freed to its arena (if the
   * kernel refuses, they stay as they are). Kept in memory, they are zeroed: the pages
   * the program wrote, as any other block's (much cheaper than faulting them all in
   * again at the next use); else given back, which zeroes them and frees the memory.
   * (One mmap over them would do the latter, but costs more system time than the two
   * calls, and takes the address space's lock for writing where madvise takes it to
   * read.) */
  void *q = p;
  if (resident_reserve(region)) {
    zero_resident_pages(p, region);
    q = (void *)((uintptr_t)p | HARDENED_RESIDENT_TAG);
  } else if (!os_release_pages(p, region)) {
    memset(p, 0, region);
  }
  os_protect((char *)p + PAGE, region - PAGE, false);
  return q;
}

/* The first page of a guarded block (zero but for its key, which this clears) checked
 * naming func, and its other pages made accessible again. */
static void guarded_reopen(void *p, size_t region, const char *func) {
  if (hardened_freed_zeroed(region, true)) { /* zeroed, all accessible */
    hardened_check_unused(p, region, func);
    return;
  }
  hardened_check_unused(p, PAGE, func);
  if (!os_protect((char *)p + PAGE, region - PAGE, true)) fatal_pointer(func, "cannot make a freed block accessible again at", p);
}

void hardened_unscrub(void *p, size_t region, bool guarded) {
  if (guarded) guarded_reopen(p, region, "free()");
}

/* ---------------------------------------------------------------- guard pages */

bool hardened_guard(void *page) { return os_protect(page, PAGE, false); }

void hardened_unguard(void *page) {
  if (!os_protect(page, PAGE, true)) fatal_pointer("free()", "cannot make a guard page accessible again at", page);
}

/* ---------------------------------------------------------------- the quarantine */

/* Shards, each with its lock: threads spread over them by their address. */
#define QUARANTINE_SHARDS 4 /* the top 2 bits of a hash pick one */
#define QUARANTINE_SLOTS 4096 /* blocks a shard holds at most */

typedef struct quarantine_entry {
  void *p;
  size_t size, resident; /* its bytes, and how many of them stay resident while it waits */
} quarantine_entry_t;

typedef struct quarantine_shard {
  lock_t lock;
  quarantine_entry_t *ring; /* QUARANTINE_SLOTS entries, from base */
  unsigned head, count;     /* the oldest entry, and how many there are */
  size_t resident, size;    /* sums over the entries */
} quarantine_shard_t;

/* A large block waits with its pages given back and all but its first page inaccessible:
 * it holds address space, not memory. The quarantine holds opt_hardened_quarantine bytes
 * of memory and this many times as much address space. */
#define QUARANTINE_ADDRESS_FACTOR 64

static quarantine_shard_t shards[QUARANTINE_SHARDS];
enum { QUARANTINE_OFF, QUARANTINE_STARTING, QUARANTINE_READY };
static _Atomic int quarantine_state;

/* ---------------------------------------------------------------- guarded blocks kept */

/* Guarded blocks that left the quarantine wait here, as they were in it (first page
 * zero with its key, the others inaccessible, the guard page in place), for a malloc of
 * their size: one system call then (the pages made accessible), where the arena's way
 * takes three (the pages made accessible when the block leaves the quarantine, the guard
 * page removed when its extent is freed and put back when a block is cut from it again).
 * A block's cycle is then three calls instead of five (two stay at its free: its pages
 * given back, or zeroed, and made inaccessible). Shared by all threads, under a lock;
 * blocks up to 1 MiB (system calls are much of their cost), the oldest kept making room
 * for a new one. A kept block holds its first page of memory (all of it, when zeroed or
 * kept in memory: hardened.h) and its address space; it still counts as allocated in the
 * statistics. The blocks kept in memory among them (hardened_scrub) hold at most half of
 * their bound: beyond, the oldest of them leaves first (to its arena, its pages still in
 * memory, for a block of any size), else the new one is not kept. Without that bound a
 * mix of sizes (the suite's frag) filled the bound of the blocks kept in memory with
 * blocks no malloc asked for again, and the pages of the blocks freed next were given
 * back and faulted in again at their next use (frag phases=20: 2.2 s and 750,000 page
 * faults, against 1.2 s and 55,000). */
#define GUARDED_KEPT_SLOTS 64
#define GUARDED_KEPT_MAX_PAGES 257 /* 1 MiB and its guard page */

typedef struct kept_block {
  void *p; /* as hardened_scrub tagged it */
  uint32_t npages;
  uint64_t age; /* when it was kept: the oldest makes room */
} kept_block_t;

static struct {
  lock_t lock;
  _Atomic unsigned count;
  uint64_t clock;
  size_t resident; /* the regions of the blocks kept in memory (tagged) */
  kept_block_t slots[GUARDED_KEPT_SLOTS];
} kept;

static lock_t ring_pool_lock; /* the rings of threads gone (thread quarantine, below) */

/* The threads' rings (hardened_ring.h). */
INTERNAL __thread thread_ring_t *hardened_thread_ring __attribute__((tls_model("initial-exec")));
static thread_ring_t *ring_pool; /* under ring_pool_lock */
static unsigned live_rings;      /* under ring_pool_lock */

/* A ring's resident bytes never drop below hardened_quarantine / RING_SHARE_MIN. */
#define RING_SHARE_MIN 64
INTERNAL _Atomic size_t hardened_ring_resident_limit;

/* The rings' shared resident limit for this many live rings (hardened_ring.h). */
static size_t ring_share(unsigned live) {
  size_t q = opt_hardened_quarantine;
  size_t share = live > QUARANTINE_SHARDS ? q / live : q / QUARANTINE_SHARDS;
  return share < q / RING_SHARE_MIN ? q / RING_SHARE_MIN : share;
}

/* One ring more (delta +1) or less (-1), or none (0: the limit recomputed), under
 * ring_pool_lock. */
static void rings_count(int delta) {
  live_rings += (unsigned)delta;
  atomic_store_explicit(&hardened_ring_resident_limit, ring_share(live_rings), memory_order_relaxed);
}

static void quarantine_fork_prepare(void) {
  for (unsigned i = 0; i < QUARANTINE_SHARDS; i++) lock_fork_prepare(&shards[i].lock);
  lock_fork_prepare(&ring_pool_lock);
  lock_fork_prepare(&kept.lock);
}
static void quarantine_fork_parent(void) {
  for (unsigned i = 0; i < QUARANTINE_SHARDS; i++) lock_fork_release(&shards[i].lock);
  lock_fork_release(&ring_pool_lock);
  lock_fork_release(&kept.lock);
}
static void quarantine_fork_child(void) {
  for (unsigned i = 0; i < QUARANTINE_SHARDS; i++) lock_init(&shards[i].lock);
  lock_init(&ring_pool_lock);
  lock_init(&kept.lock);
  /* The other threads are gone (their rings with them: their blocks stay allocated). */
  live_rings = 0;
  rings_count(hardened_thread_ring != NULL ? +1 : 0);
}

/* Sets the shards up, once; false while another thread (or this one, reentered) does,
 * or if there was no memory: the block is then freed at once. */
static bool quarantine_ready(void) {
  int state = atomic_load_explicit(&quarantine_state, memory_order_acquire);
  if (likely(state == QUARANTINE_READY)) return true;
  int expected = QUARANTINE_OFF;
  if (state != QUARANTINE_OFF || !atomic_compare_exchange_strong(&quarantine_state, &expected, QUARANTINE_STARTING))
    return false;
  lock_init(&ring_pool_lock);
  lock_init(&kept.lock);
  for (unsigned i = 0; i < QUARANTINE_SHARDS; i++) {
    lock_init(&shards[i].lock);
    shards[i].ring = base_alloc(QUARANTINE_SLOTS * sizeof(quarantine_entry_t));
    if (shards[i].ring == NULL) return false; /* stays STARTING: no quarantine */
  }
  os_at_fork(quarantine_fork_prepare, quarantine_fork_parent, quarantine_fork_child);
  atomic_store_explicit(&quarantine_state, QUARANTINE_READY, memory_order_release);
  return true;
}

static bool quarantine_over(const quarantine_shard_t *q, size_t size, size_t resident, size_t limit) {
  return q->count == QUARANTINE_SLOTS || q->resident + resident > limit ||
         q->size + size > limit * QUARANTINE_ADDRESS_FACTOR;
}

unsigned hardened_quarantine(void *p, size_t size, size_t resident, void **out) {
  size_t limit = opt_hardened_quarantine / QUARANTINE_SHARDS;
  if (resident > limit || size > limit * QUARANTINE_ADDRESS_FACTOR || !quarantine_ready()) {
    out[0] = p;
    return 1;
  }
  /* Threads' state lies at the same offset in pages far apart: mix the address. */
  quarantine_shard_t *q = &shards[(thread_marker() * 0x9e3779b97f4a7c15ull) >> 62];
  unsigned n = 0;
  lock_acquire(&q->lock);
  while (n < HARDENED_EVICT_MAX && q->count > 0 && quarantine_over(q, size, resident, limit)) {
    quarantine_entry_t *e = &q->ring[q->head];
    out[n++] = e->p;
    q->resident -= e->resident;
    q->size -= e->size;
    q->head = (q->head + 1) % QUARANTINE_SLOTS;
    q->count--;
  }
  if (q->count < QUARANTINE_SLOTS) {
    q->ring[(q->head + q->count) % QUARANTINE_SLOTS] = (quarantine_entry_t){p, size, resident};
    q->count++;
    q->resident += resident;
    q->size += size;
  } else {
    out[n++] = p; /* cannot happen: an entry left above whenever the ring was full */
  }
  lock_release(&q->lock);
  return n;
}

/* ---------------------------------------------------------------- the thread's quarantine */

/* The calling thread's ring, from the pool, else new; NULL without memory. */
static thread_ring_t *ring_new(void) {
  if (!quarantine_ready()) return NULL;
  lock_acquire(&ring_pool_lock);
  thread_ring_t *r = ring_pool;
  if (r != NULL) ring_pool = r->next_free;
  lock_release(&ring_pool_lock);
  if (r == NULL) r = base_alloc(sizeof(*r));
  if (r == NULL) return NULL;
  r->next_free = NULL;
  r->head = r->count = 0;
  r->resident = r->size = 0;
  r->size_limit = opt_hardened_quarantine / QUARANTINE_SHARDS * QUARANTINE_ADDRESS_FACTOR;
  lock_acquire(&ring_pool_lock);
  rings_count(+1);
  lock_release(&ring_pool_lock);
  return hardened_thread_ring = r;
}

/* A held block's bytes, and those of them resident while it waits (a large block's
 * pages are given back, but for the first). */
static size_t held_size(hardened_held_t h) { return h.c == CODE_LARGE ? (size_t)h.npages * PAGE : class_infos[h.c].size; }
static size_t held_resident(hardened_held_t h) {
  if (h.c != CODE_LARGE) return class_infos[h.c].size;
  size_t region = hardened_region((size_t)h.npages * PAGE, true);
  return hardened_freed_zeroed(region, true) ? region : PAGE;
}

static hardened_held_t ring_take_oldest(thread_ring_t *r) {
  hardened_held_t h = r->slots[r->head];
  r->head = (r->head + 1) & (THREAD_RING_SLOTS - 1);
  r->count--;
  r->resident -= held_resident(h);
  r->size -= held_size(h);
  return h;
}

unsigned hardened_thread_quarantine(hardened_held_t h, hardened_held_t *out) {
  thread_ring_t *r = hardened_thread_ring;
  if (unlikely(r == NULL)) r = ring_new();
  size_t size = held_size(h), resident = held_resident(h);
  size_t resident_limit = ring_resident_limit();
  if (unlikely(r == NULL || resident > resident_limit || size > r->size_limit)) {
    out[0] = h; /* cannot wait */
    return 1;
  }
  unsigned n = 0;
  /* The limits less h's bytes: the loop's test is then a count and two comparisons. */
  size_t resident_max = resident_limit - resident, size_max = r->size_limit - size;
  while (r->count == THREAD_RING_SLOTS || r->resident > resident_max || r->size > size_max) { /* ends: h alone fits an empty ring */
    if (n == HARDENED_EVICT_MAX) {
      out[n++] = h; /* more would have to leave */
      return n;
    }
    out[n++] = ring_take_oldest(r);
  }
  r->slots[(r->head + r->count) & (THREAD_RING_SLOTS - 1)] = h;
  r->count++;
  r->resident += resident;
  r->size += size;
  return n;
}

bool hardened_thread_quarantine_take(hardened_held_t *out) {
  thread_ring_t *r = hardened_thread_ring;
  if (r == NULL || r->count == 0) return false;
  *out = ring_take_oldest(r);
  out->p = hardened_resident_done(out->p);
  return true;
}

void hardened_thread_quarantine_release(void) {
  thread_ring_t *r = hardened_thread_ring;
  if (r == NULL) return;
  tessera_assert(r->count == 0);
  hardened_thread_ring = NULL;
  lock_acquire(&ring_pool_lock);
  r->next_free = ring_pool;
  ring_pool = r;
  rings_count(-1);
  lock_release(&ring_pool_lock);
}

/* ---------------------------------------------------------------- guarded blocks kept (above) */

/* The slot of the block kept longest. */
static unsigned kept_oldest(void) {
  unsigned oldest = 0;
  for (unsigned i = 1; i < GUARDED_KEPT_SLOTS; i++)
    if (kept.slots[i].age < kept.slots[oldest].age) oldest = i;
  return oldest;
}

/* A kept block's region when it is kept in memory (tagged), else 0. */
static size_t kept_resident_of(const kept_block_t *k) {
  return k->p != hardened_untag(k->p) ? hardened_region((size_t)k->npages * PAGE, true) : 0;
}

/* The slot of the block kept longest among those kept in memory; GUARDED_KEPT_SLOTS if
 * none. */
static unsigned kept_oldest_resident(void) {
  unsigned n = atomic_load_explicit(&kept.count, memory_order_relaxed), oldest = GUARDED_KEPT_SLOTS;
  for (unsigned i = 0; i < n; i++)
    if (kept_resident_of(&kept.slots[i]) != 0 && (oldest == GUARDED_KEPT_SLOTS || kept.slots[i].age < kept.slots[oldest].age))
      oldest = i;
  return oldest;
}

bool hardened_keep_guarded(void *q, uint32_t npages, void **evicted) {
  *evicted = NULL;
  if (npages > GUARDED_KEPT_MAX_PAGES || !quarantine_ready()) return false;
  kept_block_t k = {q, npages, 0};
  size_t resident = kept_resident_of(&k), limit = opt_hardened_quarantine * RESIDENT_LARGE_FACTOR / 2;
  lock_acquire(&kept.lock);
  unsigned n = atomic_load_explicit(&kept.count, memory_order_relaxed), slot = n;
  if (resident != 0 && kept.resident + resident > limit) { /* the oldest kept in memory makes room */
    slot = kept_oldest_resident();
    if (slot == GUARDED_KEPT_SLOTS || kept.resident - kept_resident_of(&kept.slots[slot]) + resident > limit) {
      lock_release(&kept.lock);
      return false;
    }
  } else if (n == GUARDED_KEPT_SLOTS) { /* full: the oldest makes room */
    slot = kept_oldest();
  }
  if (slot < n) {
    *evicted = kept.slots[slot].p;
    kept.resident -= kept_resident_of(&kept.slots[slot]);
  } else {
    atomic_store_explicit(&kept.count, n + 1, memory_order_relaxed);
  }
  k.age = ++kept.clock;
  kept.slots[slot] = k;
  kept.resident += resident;
  lock_release(&kept.lock);
  return true;
}

void *hardened_take_guarded(uint32_t npages, const char *func) {
  if (atomic_load_explicit(&kept.count, memory_order_relaxed) == 0) return NULL;
  void *p = NULL;
  lock_acquire(&kept.lock);
  unsigned n = atomic_load_explicit(&kept.count, memory_order_relaxed);
  for (unsigned i = n; i-- > 0;) {
    if (kept.slots[i].npages != npages) continue;
    p = kept.slots[i].p;
    kept.resident -= kept_resident_of(&kept.slots[i]);
    kept.slots[i] = kept.slots[n - 1];
    atomic_store_explicit(&kept.count, n - 1, memory_order_relaxed);
    break;
  }
  lock_release(&kept.lock);
  if (p == NULL) return NULL;
  p = hardened_resident_done(p);
  guarded_reopen(p, hardened_region((size_t)npages * PAGE, true), func);
  return p;
}

