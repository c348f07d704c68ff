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
  canary_bytes_t c;
  for (unsigned i = 0; i < HARDENED_CANARY_MAX / 8; i++) c.w[i] = (word >> i) | 0x0101010101010101ull;
  return c;
}

/* How many canary bytes follow a request of n in a region. */
static size_t canary_length(size_t region, size_t n) {
  size_t len = region - HARDENED_TRAILER - n;
  return len > HARDENED_CANARY_MAX ? HARDENED_CANARY_MAX : len;
}

void hardened_write_trailer(void *p, size_t region, size_t n) {
  tessera_assert(n + HARDENED_EXTRA <= region);
  uint64_t w = canary_word(p);
  canary_bytes_t c = canary_pattern(w);
  uint8_t *b = p;
  memcpy(b + n, &c, canary_length(region, n));
  *(heap_u32_t *)(b + region - HARDENED_TRAILER) = (uint32_t)(region - n) ^ (uint32_t)(w >> 32);
}

size_t hardened_checked_size(const void *p, size_t region, const char *func) {
  uint64_t w = canary_word(p);
  const uint8_t *b = p;
  size_t slack = *(const heap_u32_t *)(b + region - HARDENED_TRAILER) ^ (uint32_t)(w >> 32);
  if (slack < HARDENED_EXTRA || slack > region) fatal_pointer(func, "heap overflow detected after block", p);
  size_t n = region - slack;
  canary_bytes_t c = canary_pattern(w);
  if (memcmp(b + n, &c, canary_length(region, n)) != 0) fatal_pointer(func, "heap overflow detected after block", p);
  return n;
}

/* ---------------------------------------------------------------- zero on free */

void hardened_check_unused(void *p, size_t size, const char *func) {
  heap_word_t *w = p, any = 0;
  for (size_t i = 0; i < size / sizeof(*w); i++) any |= w[i]; /* the common case: all zero */
  if (likely(any == 0)) return;
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
   * until the block leaves the quarantine (if the kernel refuses, they stay as they are). */
  if (!guarded || !os_release_pages(p, region)) memset(p, 0, region);
  if (guarded && region > PAGE) os_protect((char *)p + PAGE, region - PAGE, false);
}

void hardened_unscrub(void *p, size_t region, bool guarded) {
  if (!guarded) return;
  /* The first page was left accessible: it must still be zero but for the key. */
  hardened_check_unused(p, PAGE, "free()");
  if (region > PAGE && !os_protect((char *)p + PAGE, region - PAGE, true))
    fatal_pointer("free()", "cannot make a freed block accessible again at", p);
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

static void quarantine_fork_prepare(void) {
  for (unsigned i = 0; i < QUARANTINE_SHARDS; i++) lock_fork_prepare(&shards[i].lock);
}
static void quarantine_fork_parent(void) {
  for (unsigned i = 0; i < QUARANTINE_SHARDS; i++) lock_fork_release(&shards[i].lock);
}
static void quarantine_fork_child(void) {
  for (unsigned i = 0; i < QUARANTINE_SHARDS; i++) lock_init(&shards[i].lock);
}

/* Sets the shards up, once; false while another thread (or this one, reentered) does,
 * or if there was no memory: the block is then freed at once. */
static bool quarantine_ready(void) {
  int state = atomic_load_explicit(&quarantine_state, memory_order_acquire);
  if (likely(state == QUARANTINE_READY)) return true;
  int expected = QUARANTINE_OFF;
  if (state != QUARANTINE_OFF || !atomic_compare_exchange_strong(&quarantine_state, &expected, QUARANTINE_STARTING))
    return false;
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
