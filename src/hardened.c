/* SPDX-License-Identifier: MIT */
/*
 * Hardened mode's checks (hardened.h). Nothing here knows of arenas: the front end finds
 * the blocks, these functions look at and write their bytes, and keep the quarantine.
 */
#include "hardened.h"

#include <string.h>

#include "base.h"
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
typedef uint32_t __attribute__((may_alias, aligned(1))) heap_u32_t;

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

/* The process's secret for canaries and trailers: set once, by whichever thread gets
 * there first. */
static _Atomic uint64_t canary_secret;

static uint64_t secret(void) {
  uint64_t s = atomic_load_explicit(&canary_secret, memory_order_relaxed);
  if (likely(s != 0)) return s;
  uint64_t fresh = seed_from_kernel() | 1, expected = 0;
  if (atomic_compare_exchange_strong(&canary_secret, &expected, fresh)) return fresh;
  return expected;
}

/* ---------------------------------------------------------------- canaries */

/* The block's canary word: the secret mixed with the block's address. */
static uint64_t canary_word(const void *p) {
  uint64_t s = secret() ^ ((uint64_t)(uintptr_t)p * 0x9e3779b97f4a7c15ull);
  return s ^ (s >> 29);
}

/* The canary bytes after a request, from the block's canary word; every byte odd (never
 * zero: a string's terminating zero written one byte too far is always caught). */
typedef struct canary_bytes {
  uint64_t w[HARDENED_CANARY_MAX / 8];
} canary_bytes_t;

static canary_bytes_t canary_pattern(uint64_t word) {
  uint64_t odd = word | 0x0101010101010101ull; /* the same 8 bytes twice: one OR */
  return (canary_bytes_t){{odd, odd}};
}

/* How many canary bytes follow a request of n in a region. */
static size_t canary_length(size_t region, size_t n) {
  size_t len = region - HARDENED_TRAILER - n;
  return len > HARDENED_CANARY_MAX ? HARDENED_CANARY_MAX : len;
}

/* Copies and compares len (1 to 16) bytes with two overlapping loads or stores of the
 * widest size that fits, without a call to the C library (the length varies). */
typedef uint16_t __attribute__((may_alias, aligned(1))) heap_u16_t;
typedef uint64_t __attribute__((may_alias, aligned(1))) heap_u64_t;

static void copy_small(uint8_t *dst, const uint8_t *src, size_t len) {
  if (len >= 8) {
    *(heap_u64_t *)dst = *(const heap_u64_t *)src;
    *(heap_u64_t *)(dst + len - 8) = *(const heap_u64_t *)(src + len - 8);
  } else if (len >= 4) {
    *(heap_u32_t *)dst = *(const heap_u32_t *)src;
    *(heap_u32_t *)(dst + len - 4) = *(const heap_u32_t *)(src + len - 4);
  } else if (len >= 2) {
    *(heap_u16_t *)dst = *(const heap_u16_t *)src;
    *(heap_u16_t *)(dst + len - 2) = *(const heap_u16_t *)(src + len - 2);
  } else {
    *dst = *src;
  }
}

static bool equal_small(const uint8_t *a, const uint8_t *b, size_t len) {
  if (len >= 8)
    return ((*(const heap_u64_t *)a ^ *(const heap_u64_t *)b) |
            (*(const heap_u64_t *)(a + len - 8) ^ *(const heap_u64_t *)(b + len - 8))) == 0;
  if (len >= 4)
    return ((*(const heap_u32_t *)a ^ *(const heap_u32_t *)b) |
            (*(const heap_u32_t *)(a + len - 4) ^ *(const heap_u32_t *)(b + len - 4))) == 0;
  if (len >= 2)
    return ((*(const heap_u16_t *)a ^ *(const heap_u16_t *)b) |
            (*(const heap_u16_t *)(a + len - 2) ^ *(const heap_u16_t *)(b + len - 2))) == 0;
  return *a == *b;
}

void hardened_write_trailer(void *p, size_t region, size_t n) {
  tessera_assert(n + HARDENED_EXTRA <= region);
  uint64_t w = canary_word(p);
  canary_bytes_t c = canary_pattern(w);
  uint8_t *b = p;
  copy_small(b + n, (const uint8_t *)&c, canary_length(region, n));
  *(heap_u32_t *)(b + region - HARDENED_TRAILER) = (uint32_t)(region - n) ^ (uint32_t)(w >> 32);
}

size_t hardened_checked_size(const void *p, size_t region, const char *func) {
  uint64_t w = canary_word(p);
  const uint8_t *b = p;
  size_t slack = *(const heap_u32_t *)(b + region - HARDENED_TRAILER) ^ (uint32_t)(w >> 32);
  if (slack < HARDENED_EXTRA || slack > region) fatal_pointer(func, "heap overflow detected after block", p);
  size_t n = region - slack;
  canary_bytes_t c = canary_pattern(w);
  if (!equal_small(b + n, (const uint8_t *)&c, canary_length(region, n))) fatal_pointer(func, "heap overflow detected after block", p);
  return n;
}

/* ---------------------------------------------------------------- zero on free */

/* Whether size bytes at p (both multiples of 16) are all zero: 32 bytes an iteration,
 * ORed into two 16-byte vectors (the compiler's vector extension: SSE2 on x86-64). */
typedef uint64_t __attribute__((vector_size(16), may_alias)) heap_vec_t;

static bool all_zero(const void *p, size_t size) {
  tessera_assert(((uintptr_t)p | size) % 16 == 0);
  const heap_vec_t *v = p;
  heap_vec_t a = {0, 0}, b = {0, 0};
  size_t n = size / 16, i = 0;
  for (; i + 2 <= n; i += 2) {
    a |= v[i];
    b |= v[i + 1];
  }
  if (i < n) a |= v[i];
  a |= b;
  return (a[0] | a[1]) == 0;
}

void hardened_check_unused(void *p, size_t size, const char *func) {
  if (likely(all_zero(p, size))) return; /* the common case */
  heap_word_t *w = p;
  for (size_t i = 0; i < size / sizeof(*w); i++) {
    if (likely(w[i] == 0)) continue;
    /* A freed-block key left by an earlier free is the key of its own page. */
    if (w[i] != (uint64_t)(uintptr_t)free_map_lookup((uintptr_t)&w[i])) fatal_pointer(func, "write after free detected in block", p);
    w[i] = 0;
  }
}

void hardened_scrub(void *p, size_t region, bool guarded) {
  /* A guarded region is whole pages: giving them back zeroes them and frees the memory;
   * all but the first page (which holds the freed-block key) are then made inaccessible
   * until the block leaves the quarantine (if the kernel refuses, they stay as they are).
   * (One mmap over them would do both, but costs more system time than the two calls,
   * and takes the address space's lock for writing where madvise takes it to read.) */
  if (!guarded || !os_release_pages(p, region)) memset(p, 0, region);
  if (guarded && region > PAGE) os_protect((char *)p + PAGE, region - PAGE, false);
}

/* The first page of a guarded block (zero but for its key, which this clears) checked
 * naming func, and its other pages made accessible again. */
static void guarded_reopen(void *p, size_t region, const char *func) {
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
 * given back and made inaccessible). Shared by all threads, under a lock; blocks up to 1 MiB
 * (system calls are much of their cost), the oldest kept making room for a new one. A
 * kept block holds its first page of memory and its address space; it still counts as
 * allocated in the statistics. */
#define GUARDED_KEPT_SLOTS 64
#define GUARDED_KEPT_MAX_PAGES 257 /* 1 MiB and its guard page */

typedef struct kept_block {
  void *p;
  uint32_t npages;
  uint64_t age; /* when it was kept: the oldest makes room */
} kept_block_t;

static struct {
  lock_t lock;
  _Atomic unsigned count;
  uint64_t clock;
  kept_block_t slots[GUARDED_KEPT_SLOTS];
} kept;

static lock_t ring_pool_lock; /* the rings of threads gone (thread quarantine, below) */

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

/* The blocks of threads that have a cache wait in a ring of their own, without a lock:
 * at most THREAD_RING_SLOTS blocks, and the bytes of a shard (resident and address
 * space, as there). */
#define THREAD_RING_SLOTS 1024 /* a power of two */

typedef struct thread_ring {
  struct thread_ring *next_free; /* in the pool, once its thread is gone */
  unsigned head, count;          /* the oldest entry, and how many there are */
  size_t resident, size;         /* sums over the entries */
  size_t resident_limit, size_limit;
  hardened_held_t slots[THREAD_RING_SLOTS];
} thread_ring_t;

static __thread thread_ring_t *thread_ring __attribute__((tls_model("initial-exec")));
static thread_ring_t *ring_pool; /* under ring_pool_lock */

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
  r->resident_limit = opt_hardened_quarantine / QUARANTINE_SHARDS;
  r->size_limit = r->resident_limit * QUARANTINE_ADDRESS_FACTOR;
  return thread_ring = r;
}

/* A held block's bytes, and those of them resident while it waits (a large block's
 * pages are given back, but for the first). */
static size_t held_size(hardened_held_t h) { return h.c == CODE_LARGE ? (size_t)h.npages * PAGE : class_infos[h.c].size; }
static size_t held_resident(hardened_held_t h) { return h.c == CODE_LARGE ? PAGE : class_infos[h.c].size; }

static hardened_held_t ring_take_oldest(thread_ring_t *r) {
  hardened_held_t h = r->slots[r->head];
  r->head = (r->head + 1) & (THREAD_RING_SLOTS - 1);
  r->count--;
  r->resident -= held_resident(h);
  r->size -= held_size(h);
  return h;
}

unsigned hardened_thread_quarantine(hardened_held_t h, hardened_held_t *out) {
  thread_ring_t *r = thread_ring;
  if (unlikely(r == NULL)) r = ring_new();
  size_t size = held_size(h), resident = held_resident(h);
  if (unlikely(r == NULL || resident > r->resident_limit || size > r->size_limit)) {
    out[0] = h; /* cannot wait */
    return 1;
  }
  unsigned n = 0;
  /* The limits less h's bytes: the loop's test is then a count and two comparisons. */
  size_t resident_max = r->resident_limit - resident, size_max = r->size_limit - size;
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
  thread_ring_t *r = thread_ring;
  if (r == NULL || r->count == 0) return false;
  *out = ring_take_oldest(r);
  return true;
}

void hardened_thread_quarantine_release(void) {
  thread_ring_t *r = thread_ring;
  if (r == NULL) return;
  tessera_assert(r->count == 0);
  thread_ring = NULL;
  lock_acquire(&ring_pool_lock);
  r->next_free = ring_pool;
  ring_pool = r;
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

bool hardened_keep_guarded(void *p, uint32_t npages, void **evicted) {
  *evicted = NULL;
  if (npages > GUARDED_KEPT_MAX_PAGES || !quarantine_ready()) return false;
  lock_acquire(&kept.lock);
  unsigned n = atomic_load_explicit(&kept.count, memory_order_relaxed), slot = n;
  if (n == GUARDED_KEPT_SLOTS) { /* full: the oldest makes room */
    slot = kept_oldest();
    *evicted = kept.slots[slot].p;
  } else {
    atomic_store_explicit(&kept.count, n + 1, memory_order_relaxed);
  }
  kept.slots[slot] = (kept_block_t){p, npages, ++kept.clock};
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
    kept.slots[i] = kept.slots[n - 1];
    atomic_store_explicit(&kept.count, n - 1, memory_order_relaxed);
    break;
  }
  lock_release(&kept.lock);
  if (p != NULL) guarded_reopen(p, hardened_region((size_t)npages * PAGE, true), func);
  return p;
}
