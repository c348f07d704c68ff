/* SPDX-License-Identifier: MIT */
/* prof_sample: see prof_sample.h. */
#include "prof_sample.h"
#include "prof_meta.h"
#include "prof_modules.h"

#include "base.h"
#include "lock.h"
#include "os.h"
#include "prof_math.h"

#include <string.h>

/* A stack's counters within one shard (stack->per_shard): the records of that shard add
 * to them, under its lock; a snapshot adds the shards up. */
typedef struct shard_counts {
  prof_counts_t counts; /* one cache line: a record and its free touch no other */
  struct shard_counts *next_in_shard; /* the shard's, newest first */
  const prof_stack_t *stack;
} __attribute__((aligned(64))) shard_counts_t;

typedef struct prof_record {
  struct prof_record *next; /* hash chain, or the free list */
  uintptr_t ptr;
  shard_counts_t *counts;
  uintptr_t key; /* the shard's key, for the mark's forget */
  size_t usize;
  double weight;
  const prof_mark_t *mark; /* how the allocator marked the block, or NULL */
} __attribute__((aligned(64))) prof_record_t; /* one cache line each */

/* A shard's lock: a compare-and-swap to take it, a plain store to release it (one
 * locked instruction a round trip where lock_t's release, which checks for sleepers,
 * takes a second: each costs a sample some nanoseconds as it drains the store buffer).
 * Held for a record's insertion or removal (~100 instructions), rarely contended
 * (shards are per arena): a waiter spins a little, then yields the CPU to the holder. */
typedef struct shard_lock {
  _Atomic uint32_t holder; /* 0 free, else the holder's lock_my_id() */
  bool fork_skipped;       /* fork found it held by the forking thread itself */
} shard_lock_t;

#define SHARD_LOCK_SPINS 64

static __attribute__((noinline, cold)) void shard_lock_wait(shard_lock_t *l, uint32_t me) {
  for (unsigned spins = 0;; spins++) {
    if (!atomic_load_explicit(&l->holder, memory_order_relaxed)) {
      uint32_t expected = 0;
      if (atomic_compare_exchange_weak_explicit(&l->holder, &expected, me, memory_order_acquire, memory_order_relaxed))
        return;
    }
    if (spins < SHARD_LOCK_SPINS) {
#if defined(__x86_64__) || defined(__i386__)
      __builtin_ia32_pause();
#endif
    } else {
      os_yield();
    }
  }
}

static inline __attribute__((always_inline)) void shard_lock_acquire(shard_lock_t *l) {
  uint32_t me = lock_my_id(), expected = 0;
  if (unlikely(!atomic_compare_exchange_strong_explicit(&l->holder, &expected, me, memory_order_acquire,
                                                        memory_order_relaxed)))
    shard_lock_wait(l, me);
}

static inline __attribute__((always_inline)) void shard_lock_release(shard_lock_t *l) { atomic_store_explicit(&l->holder, 0, memory_order_release); }

/* fork, as lock_fork_prepare: a lock the forking thread holds (fork from a signal
 * handler that interrupted a record) is left to the interrupted code. */
static void shard_lock_fork_prepare(shard_lock_t *l) {
  if (atomic_load_explicit(&l->holder, memory_order_relaxed) == lock_my_id()) l->fork_skipped = true;
  else shard_lock_acquire(l);
}

static void shard_lock_fork_release(shard_lock_t *l) {
  if (l->fork_skipped) l->fork_skipped = false;
  else shard_lock_release(l);
}

#define RECORD_CHUNK ((size_t)4 << 10)
#define SHARD_BUCKETS_MIN 64

/* Records, by a key the caller gives (the block's extent: every block of a slab in one
 * shard, so that the marks of one extent are made under one lock): a chained hash by
 * pointer per shard, its free records, its stack counters and its weights. */
#define WEIGHT_CACHE 32 /* a power of two */
typedef struct prof_shard {
  /* What a record and its free use, in the first cache line. */
  shard_lock_t lock;
  prof_record_t **buckets;
  prof_record_t *free_list;
  uint32_t nbuckets, count;
  _Atomic uint32_t *_Atomic filter; /* PROF_RECORD_FILTER counts, or NULL: no record yet */
  shard_counts_t *counts_list;
  shard_counts_t *counts_free; /* unused entries of the last chunk */
  size_t counts_free_n;
  uint64_t dropped;
  struct {
    size_t usize; /* 0: empty */
    uint64_t period;
    double weight;
  } weights[WEIGHT_CACHE];
} __attribute__((aligned(64))) prof_shard_t;

_Atomic bool prof_active_now;
static prof_config_t config = PROF_CONFIG_DEFAULT;
static _Atomic uint64_t period = (uint64_t)1 << 19;
static prof_shard_t shards[PROF_SHARDS];

/* Stacks: open addressing by hash, capacity a power of two, at most half full. Lookups
 * read without a lock (a slot is published once its stack is whole; a grown table
 * replaces the old one, which is kept, since a reader may still probe it); inserts take
 * stack_lock. */
typedef struct stack_table {
  size_t capacity;
  prof_stack_t *_Atomic slots[];
} stack_table_t;

static lock_t stack_lock;
static stack_table_t *_Atomic stacks;
static size_t stack_count;
static prof_stack_t *stack_list;

/* ---------------------------------------------------------------- own memory */

static _Atomic size_t meta_bytes, sampled_padding, slab_padding;

void *prof_meta_alloc(size_t size) {
  void *p = base_alloc(size);
  if (p) atomic_fetch_add_explicit(&meta_bytes, size, memory_order_relaxed);
  return p;
}

void prof_meta_free(void *p, size_t size) {
  base_free(p, size);
  atomic_fetch_sub_explicit(&meta_bytes, size, memory_order_relaxed);
}

size_t prof_meta_bytes(void) {
  return atomic_load_explicit(&meta_bytes, memory_order_relaxed) + prof_modules_bytes();
}
size_t prof_meta_sampled_padding(void) {
  return atomic_load_explicit(&sampled_padding, memory_order_relaxed) + atomic_load_explicit(&slab_padding, memory_order_relaxed);
}

void prof_meta_slab_padding_add(ptrdiff_t delta) { atomic_fetch_add_explicit(&slab_padding, (size_t)delta, memory_order_relaxed); }

/* The pages a sampled block of usize bytes has beyond usize: a block with pages of its
 * own (prof_block_new rounds to pages), not one marked in place. */
static size_t padding_of(const prof_record_t *r) {
  return r->mark ? 0 : ((r->usize + PAGE_MASK) & ~(size_t)PAGE_MASK) - r->usize;
}

/* ---------------------------------------------------------------- sampling math */

static uint64_t splitmix64(uint64_t *state) {
  uint64_t z = (*state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

uint64_t prof_sample_period(void) { return atomic_load_explicit(&period, memory_order_relaxed); }

/* -ln(u) for u = x / 2^53, x in [1, 2^53] (an exponential draw of mean 1 from a
 * uniform x), as 53 ln 2 - ln(x): ln(x) = e ln 2 + ln(c) + ln(1 + r) with x = m 2^e,
 * m in [1, 2), c the middle of m's sixteenth of [1, 2) (its first 4 fraction bits),
 * r = m / c - 1 (|r| < 1/32, from a table of 1 / c: no division) and ln(1 + r) by five
 * terms of its series (the next, r^6 / 6, below 2e-10). ~25 instructions, no division,
 * and a table of 256 bytes (four cache lines; one of 256 entries, interpolated, was
 * tried: its 2 KiB missed the cache at nearly every draw of a program using much
 * memory). Filled once, under the stacks' lock. */
#define LOG_TABLE_BITS 4
static struct {
  double inv_c, ln_c;
} log_table[1u << LOG_TABLE_BITS] __attribute__((aligned(64)));
static _Atomic bool log_table_ready;

static __attribute__((noinline, cold)) void log_table_fill(void) {
  lock_acquire(&stack_lock);
  if (!atomic_load_explicit(&log_table_ready, memory_order_relaxed)) {
    for (unsigned i = 0; i < 1u << LOG_TABLE_BITS; i++) {
      double c = 1.0 + ((double)i + 0.5) / (double)(1u << LOG_TABLE_BITS);
      log_table[i].inv_c = 1.0 / c;
      log_table[i].ln_c = prof_log(c);
    }
    atomic_store_explicit(&log_table_ready, true, memory_order_release);
  }
  lock_release(&stack_lock);
}

static inline double neg_log_unit(uint64_t x) {
  if (unlikely(!atomic_load_explicit(&log_table_ready, memory_order_acquire))) log_table_fill();
  double d = (double)(int64_t)x; /* exact: x has at most 53 bits (signed: one instruction) */
  uint64_t b;
  memcpy(&b, &d, sizeof(b));
  int e = (int)(b >> 52) - 1023;
  unsigned i = (unsigned)(b >> (52 - LOG_TABLE_BITS)) & ((1u << LOG_TABLE_BITS) - 1);
  uint64_t mb = (b & 0x000fffffffffffffull) | 0x3ff0000000000000ull;
  double m;
  memcpy(&m, &mb, sizeof(m));
  double r = m * log_table[i].inv_c - 1.0;
  double ln_1r = r * (1.0 + r * (-0.5 + r * (1.0 / 3 + r * (-0.25 + r * 0.2))));
  return (53 - e) * 0.69314718055994530942 - log_table[i].ln_c - ln_1r;
}

/* A draw from the exponential distribution of mean `mean` (t's generator, seeded on
 * first use). */
static double draw_exponential(prof_thread_t *t, uint64_t mean) {
  if (unlikely(t->prng == 0)) t->prng = (uint64_t)(uintptr_t)t ^ os_now_ns() ^ 0x5851F42D4C957F2Dull;
  /* x uniform in [1, 2^53]: u = x / 2^53 in (0, 1], -ln(u) exponential with mean 1. */
  return neg_log_unit((splitmix64(&t->prng) >> 11) + 1) * (double)(int64_t)mean; /* mean <= 2^40 */
}

uint64_t prof_bytes_until_sample(prof_thread_t *t) {
  double draw = draw_exponential(t, prof_sample_period());
  uint64_t bytes = draw >= 4.0e18 ? (uint64_t)4e18 : (uint64_t)draw + 1;
  t->bytes_until_sample = (int64_t)bytes;
  t->interval = bytes;
  return bytes;
}

uint64_t prof_blocks_until_sample(prof_thread_t *t, size_t usize) {
  /* The first sample point past the stream's start, in bytes, falls in block
   * floor(bytes / usize) + 1; each block is then sampled with probability
   * 1 - exp(-usize / period), as prof_sample_weight assumes. */
  return prof_blocks_until_sample_inv(t, 1.0 / (double)usize);
}

uint64_t prof_blocks_until_sample_inv(prof_thread_t *t, double inv_usize) {
  double blocks = draw_exponential(t, prof_sample_period()) * inv_usize;
  return blocks >= 4.0e18 ? (uint64_t)4e18 : (uint64_t)(int64_t)blocks + 1;
}

double prof_sample_weight(size_t usize, uint64_t mean) {
  double p = prof_one_minus_exp_neg((double)usize / (double)mean);
  return p > 0 ? 1.0 / p : 1.0;
}

/* ---------------------------------------------------------------- setup */

void prof_sample_init(const prof_config_t *c) {
  lock_acquire(&stack_lock);
  config = *c;
  if (config.lg_sample > 40) config.lg_sample = 40;
  if (config.max_depth == 0 || config.max_depth > PROF_DEPTH_MAX) config.max_depth = PROF_DEPTH_MAX;
  atomic_store_explicit(&period, (uint64_t)1 << config.lg_sample, memory_order_relaxed);
  lock_release(&stack_lock);
}

/* ---------------------------------------------------------------- stacks */

static uint64_t hash_pcs(const uintptr_t *pcs, unsigned depth) {
  uint64_t h = 0x243F6A8885A308D3ull ^ depth;
  for (unsigned i = 0; i < depth; i++) {
    h ^= pcs[i];
    h *= 0x9FB21C651E98DF25ull;
    h ^= h >> 29;
  }
  return h;
}

static void stack_table_put(stack_table_t *t, prof_stack_t *s) {
  size_t j = s->hash & (t->capacity - 1);
  while (atomic_load_explicit(&t->slots[j], memory_order_relaxed)) j = (j + 1) & (t->capacity - 1);
  atomic_store_explicit(&t->slots[j], s, memory_order_release);
}

/* A table twice as large (1,024 slots the first time), published whole; the old one
 * stays (a lookup may be probing it): the tables sum to twice the last one. stack_lock
 * held. */
static bool stack_table_grow(void) {
  stack_table_t *old = atomic_load_explicit(&stacks, memory_order_relaxed);
  size_t cap = old ? old->capacity * 2 : 1024;
  stack_table_t *t = prof_meta_alloc(sizeof(*t) + cap * sizeof(t->slots[0]));
  if (!t) return false;
  t->capacity = cap; /* base memory comes zeroed: every slot empty */
  for (size_t i = 0; old && i < old->capacity; i++) {
    prof_stack_t *s = atomic_load_explicit(&old->slots[i], memory_order_relaxed);
    if (s) stack_table_put(t, s);
  }
  atomic_store_explicit(&stacks, t, memory_order_release);
  return true;
}

static bool same_pcs(const uintptr_t *a, const uintptr_t *b, unsigned depth) {
  for (unsigned i = 0; i < depth; i++) /* a few frames: no call to memcmp */
    if (a[i] != b[i]) return false;
  return true;
}

/* The interned stack of hash h in the current table, or NULL; no lock. */
static prof_stack_t *stack_find(const uintptr_t *pcs, unsigned depth, uint64_t h) {
  stack_table_t *t = atomic_load_explicit(&stacks, memory_order_acquire);
  if (!t) return NULL;
  for (size_t j = h & (t->capacity - 1);; j = (j + 1) & (t->capacity - 1)) {
    prof_stack_t *s = atomic_load_explicit(&t->slots[j], memory_order_acquire);
    if (!s) return NULL;
    if (s->hash == h && s->depth == depth && same_pcs(s->pcs, pcs, depth)) return s;
  }
}

/* The interned copy of a stack of hash h (hash_pcs); NULL at the bound or without
 * memory. Found without a lock once it exists (threads sampling one site share only
 * reads of it). */
static prof_stack_t *stack_intern(const uintptr_t *pcs, unsigned depth, uint64_t h) {
  prof_stack_t *s = stack_find(pcs, depth, h);
  if (s) return s;
  lock_acquire(&stack_lock);
  s = stack_find(pcs, depth, h); /* another thread's, since */
  stack_table_t *t = atomic_load_explicit(&stacks, memory_order_relaxed);
  if (!s && stack_count < config.max_stacks && ((t && (stack_count + 1) * 2 <= t->capacity) || stack_table_grow())) {
    s = prof_meta_alloc(sizeof(*s) + depth * sizeof(*pcs)); /* zeroed: no shard counters yet */
    if (s) {
      s->hash = h;
      s->depth = depth;
      s->index = (unsigned)stack_count;
      memcpy(s->pcs, pcs, depth * sizeof(*pcs));
      s->next_in_order = stack_list;
      stack_list = s;
      __atomic_store_n(&stack_count, stack_count + 1, __ATOMIC_RELAXED);
      stack_table_put(atomic_load_explicit(&stacks, memory_order_relaxed), s);
    }
  }
  lock_release(&stack_lock);
  return s;
}

/* The thread's last interned stack: a thread samples one site over and over (a loop's
 * allocation), and comparing its few frames costs less than hashing them and probing the
 * table (and reads no line of it). Stacks are never freed: the pointer stays valid. */
static __thread prof_stack_t *tls_last_stack __attribute__((tls_model("initial-exec")));

static prof_stack_t *stack_of(const uintptr_t *pcs, unsigned depth) {
  prof_stack_t *last = tls_last_stack;
  if (last != NULL && last->depth == depth && same_pcs(last->pcs, pcs, depth)) return last;
  prof_stack_t *s = stack_intern(pcs, depth, hash_pcs(pcs, depth));
  if (s != NULL) tls_last_stack = s;
  return s;
}

/* ---------------------------------------------------------------- records */

unsigned prof_shard_of(uintptr_t key) { return (unsigned)(((uint64_t)key * 0x9E3779B97F4A7C15ull) >> 60) & (PROF_SHARDS - 1); }

static size_t record_bucket(const prof_shard_t *sh, uintptr_t ptr) {
  return (size_t)(((uint64_t)ptr * 0x9E3779B97F4A7C15ull) >> 20) & (sh->nbuckets - 1);
}

/* How many live records of each shard hash to each slot (written under the shard's
 * lock, read without a lock), so that a free on a marked page of a block that is not sampled
 * (its neighbours') most often leaves without a lock. A block's record is in before
 * malloc returns it, so any free of it, ordered after that return, sees its slot's count
 * at 1 or more. */
#define PROF_RECORD_FILTER 1024 /* a power of two */

static size_t filter_index(uintptr_t ptr) {
  return (size_t)(((uint64_t)ptr * 0x9E3779B97F4A7C15ull) >> 54) & (PROF_RECORD_FILTER - 1);
}

/* Under the shard's lock, which every writer of its filter holds: a load and a store,
 * no locked read-modify-write (readers only load). The filter exists: the record does. */
static inline void filter_add(prof_shard_t *sh, uintptr_t ptr, int32_t delta) {
  _Atomic uint32_t *slot = &atomic_load_explicit(&sh->filter, memory_order_relaxed)[filter_index(ptr)];
  atomic_store_explicit(slot, atomic_load_explicit(slot, memory_order_relaxed) + (uint32_t)delta, memory_order_relaxed);
}

/* False when ptr is surely not recorded in sh; no lock. */
static inline bool filter_maybe(prof_shard_t *sh, uintptr_t ptr) {
  _Atomic uint32_t *f = atomic_load_explicit(&sh->filter, memory_order_acquire);
  return f != NULL && atomic_load_explicit(&f[filter_index(ptr)], memory_order_relaxed) != 0;
}

/* The shard's filter, made with its first record. Shard lock held. */
static bool filter_ready(prof_shard_t *sh) {
  if (atomic_load_explicit(&sh->filter, memory_order_relaxed)) return true;
  _Atomic uint32_t *f = prof_meta_alloc(PROF_RECORD_FILTER * sizeof(*f)); /* zeroed */
  if (!f) return false;
  atomic_store_explicit(&sh->filter, f, memory_order_release);
  return true;
}

static bool record_buckets_grow(prof_shard_t *sh) {
  size_t n = sh->nbuckets ? (size_t)sh->nbuckets * 2 : SHARD_BUCKETS_MIN;
  if (n > UINT32_MAX) return false;
  prof_record_t **b = prof_meta_alloc(n * sizeof(*b));
  if (!b) return false;
  size_t old_n = sh->nbuckets;
  prof_record_t **old = sh->buckets;
  sh->buckets = b;
  sh->nbuckets = (uint32_t)n;
  for (size_t i = 0; i < old_n; i++) {
    for (prof_record_t *r = old[i], *next; r; r = next) {
      next = r->next;
      size_t j = record_bucket(sh, r->ptr);
      r->next = b[j];
      b[j] = r;
    }
  }
  if (old) prof_meta_free(old, old_n * sizeof(*old));
  return true;
}

static prof_record_t *record_new(prof_shard_t *sh) {
  if (!sh->free_list) {
    prof_record_t *chunk = prof_meta_alloc(RECORD_CHUNK);
    if (!chunk) return NULL;
    for (size_t i = 0; i < RECORD_CHUNK / sizeof(*chunk); i++) {
      chunk[i].next = sh->free_list;
      sh->free_list = &chunk[i];
    }
  }
  prof_record_t *r = sh->free_list;
  sh->free_list = r->next;
  return r;
}

/* Stack s's counters in shard sh (made on its first record there). Shard lock held. */
#define COUNTS_CHUNK 32
static shard_counts_t *shard_counts(prof_shard_t *sh, prof_stack_t *s) {
  unsigned k = (unsigned)(sh - shards);
  shard_counts_t *c = __atomic_load_n(&s->per_shard[k], __ATOMIC_RELAXED);
  if (c) return c;
  if (sh->counts_free_n == 0) {
    sh->counts_free = prof_meta_alloc(COUNTS_CHUNK * sizeof(shard_counts_t));
    if (!sh->counts_free) return NULL;
    sh->counts_free_n = COUNTS_CHUNK;
  }
  c = sh->counts_free++;
  sh->counts_free_n--;
  c->stack = s;
  c->next_in_shard = sh->counts_list;
  sh->counts_list = c;
  __atomic_store_n(&s->per_shard[k], c, __ATOMIC_RELAXED);
  return c;
}

static void counts_add(prof_counts_t *c, size_t usize, double weight, bool live_only) {
  c->live_objects++;
  c->live_bytes += usize;
  c->live_est_objects += weight;
  c->live_est_bytes += weight * (double)usize;
  if (live_only) return;
  c->alloc_objects++;
  c->alloc_bytes += usize;
  c->alloc_est_objects += weight;
  c->alloc_est_bytes += weight * (double)usize;
}

static void counts_remove(prof_counts_t *c, size_t usize, double weight) {
  c->live_objects--;
  c->live_bytes -= usize;
  c->live_est_objects -= weight;
  c->live_est_bytes -= weight * (double)usize;
  if (c->live_objects == 0) c->live_est_objects = c->live_est_bytes = 0; /* no rounding residue */
}

/* Forgets record r (taken off its chain already). Its shard's lock held. */
static void record_forget(prof_shard_t *sh, prof_record_t *r) {
  counts_remove(&r->counts->counts, r->usize, r->weight);
  size_t padding = padding_of(r);
  if (padding != 0) atomic_fetch_sub_explicit(&sampled_padding, padding, memory_order_relaxed);
  filter_add(sh, r->ptr, -1);
  if (r->mark) r->mark->forget(r->ptr, r->key);
}

bool prof_record_alloc(void *ptr, size_t usize, const uintptr_t *pcs, unsigned depth) {
  return prof_record_alloc_marked(ptr, (uintptr_t)ptr, prof_shard_of((uintptr_t)ptr), usize, pcs, depth, NULL);
}

/* The weights of recently sampled sizes (a program samples a few sizes over and over):
 * one exp per size and period instead of one per sample. Shard lock held. */
static size_t weight_slot(size_t usize) {
  return (size_t)(((uint64_t)usize * 0x9E3779B97F4A7C15ull) >> 58) & (WEIGHT_CACHE - 1);
}

static double weight_of(prof_shard_t *sh, size_t usize, uint64_t mean) {
  size_t i = weight_slot(usize);
  if (sh->weights[i].usize != usize || sh->weights[i].period != mean) {
    sh->weights[i].usize = usize;
    sh->weights[i].period = mean;
    sh->weights[i].weight = prof_sample_weight(usize, mean);
  }
  return sh->weights[i].weight;
}

void prof_record_prefetch(unsigned shard, size_t usize) {
  prof_shard_t *sh = &shards[shard & (PROF_SHARDS - 1)];
  __builtin_prefetch(&sh->lock, 1);
  __builtin_prefetch(&sh->weights[weight_slot(usize)], 0);
}

/* The bound on live records, shared out among the shards. */
static size_t shard_max_records(void) {
  size_t n = config.max_records / PROF_SHARDS;
  return n ? n : 1;
}

/* Puts the record in (and marks the block); false if it cannot be. Shard lock held. */
static bool shard_insert(prof_shard_t *sh, prof_stack_t *s, void *ptr, uintptr_t key, size_t usize,
                         const prof_mark_t *mark) {
  if (sh->count >= shard_max_records()) return false;
  if (sh->count + 1 > sh->nbuckets && !record_buckets_grow(sh)) return false; /* chains of one */
  if (!filter_ready(sh)) return false;
  shard_counts_t *c = shard_counts(sh, s);
  prof_record_t *r = c ? record_new(sh) : NULL;
  if (!r) return false;
  if (mark && !mark->mark((uintptr_t)ptr, key)) { /* cannot be marked: not sampled */
    r->next = sh->free_list;
    sh->free_list = r;
    return false;
  }
  double weight = weight_of(sh, usize, prof_sample_period());
  r->ptr = (uintptr_t)ptr;
  r->counts = c;
  r->key = key;
  r->usize = usize;
  r->weight = weight;
  r->mark = mark;
  size_t j = record_bucket(sh, r->ptr);
  r->next = sh->buckets[j];
  sh->buckets[j] = r;
  sh->count++;
  filter_add(sh, r->ptr, 1);
  counts_add(&c->counts, usize, weight, false);
  size_t padding = padding_of(r);
  if (padding != 0) atomic_fetch_add_explicit(&sampled_padding, padding, memory_order_relaxed);
  return true;
}

bool prof_record_alloc_marked(void *ptr, uintptr_t key, unsigned shard, size_t usize, const uintptr_t *pcs,
                              unsigned depth, const prof_mark_t *mark) {
  if (!ptr) return false;
  if (depth > config.max_depth) depth = config.max_depth;
  /* The interned stack before the shard's lock: it is held for less. */
  prof_stack_t *s = stack_of(pcs, depth);
  prof_shard_t *sh = &shards[shard & (PROF_SHARDS - 1)];
  shard_lock_acquire(&sh->lock);
  bool ok = s && shard_insert(sh, s, ptr, key, usize, mark);
  if (!ok) sh->dropped++;
  shard_lock_release(&sh->lock);
  return ok;
}

bool prof_record_free_keyed(void *ptr, uintptr_t key, unsigned shard) {
  (void)key; /* the shard's records are found by pointer */
  prof_shard_t *sh = &shards[shard & (PROF_SHARDS - 1)];
  if (!filter_maybe(sh, (uintptr_t)ptr)) return false;
  shard_lock_acquire(&sh->lock);
  prof_record_t *found = NULL;
  if (sh->nbuckets) {
    for (prof_record_t **link = &sh->buckets[record_bucket(sh, (uintptr_t)ptr)]; *link; link = &(*link)->next) {
      if ((*link)->ptr != (uintptr_t)ptr) continue;
      found = *link;
      *link = found->next;
      break;
    }
  }
  if (found) {
    record_forget(sh, found);
    found->next = sh->free_list;
    sh->free_list = found;
    sh->count--;
  }
  shard_lock_release(&sh->lock);
  return found != NULL;
}

bool prof_record_free(void *ptr) { return prof_record_free_keyed(ptr, (uintptr_t)ptr, prof_shard_of((uintptr_t)ptr)); }

bool prof_sample_alloc(prof_thread_t *t, void *ptr, size_t usize, unsigned skip) {
  prof_bytes_until_sample(t);
  if (t->busy || !ptr) return false;
  t->busy = true;
  uintptr_t pcs[PROF_DEPTH_MAX];
  unsigned depth = prof_unwind_capture(pcs, config.max_depth, skip + 1);
  bool ok = prof_record_alloc(ptr, usize, pcs, depth);
  t->busy = false;
  return ok;
}

bool prof_sample_alloc_outside(prof_thread_t *t, void *ptr, uintptr_t key, unsigned shard, size_t usize, uintptr_t lo,
                               uintptr_t hi, const prof_mark_t *mark) {
  if (t->busy || !ptr) return false;
  t->busy = true;
  prof_record_prefetch(shard, usize);
  uintptr_t pcs[PROF_DEPTH_MAX + PROF_TRIM_FRAMES];
  unsigned max = config.max_depth + PROF_TRIM_FRAMES;
  unsigned depth = t->unwind_start ? prof_unwind_capture_from(t->unwind_start, pcs, max, 0)
                                   : prof_unwind_capture(pcs, max, 1);
  unsigned first = 0;
  for (unsigned i = 0; i < depth && i < PROF_TRIM_FRAMES; i++)
    if (pcs[i] >= lo && pcs[i] < hi) first = i + 1;
  bool ok = prof_record_alloc_marked(ptr, key, shard, usize, pcs + first, depth - first, mark);
  t->busy = false;
  return ok;
}

/* Every lock of the tables, in their order: the stacks' first, then the shards'. */
static void lock_all(void) {
  lock_acquire(&stack_lock);
  for (unsigned k = 0; k < PROF_SHARDS; k++) shard_lock_acquire(&shards[k].lock);
}

static void unlock_all(void) {
  for (unsigned k = PROF_SHARDS; k-- > 0;) shard_lock_release(&shards[k].lock);
  lock_release(&stack_lock);
}

static void shard_reset(prof_shard_t *sh) {
  for (shard_counts_t *c = sh->counts_list; c; c = c->next_in_shard) memset(&c->counts, 0, sizeof(c->counts));
  for (size_t i = 0; i < sh->nbuckets; i++) {
    for (prof_record_t *r = sh->buckets[i], *next; r; r = next) {
      next = r->next;
      filter_add(sh, r->ptr, -1);
      if (r->mark) r->mark->forget(r->ptr, r->key);
      r->next = sh->free_list;
      sh->free_list = r;
    }
    sh->buckets[i] = NULL;
  }
  sh->count = 0;
  sh->dropped = 0;
}

void prof_sample_reset(unsigned lg_sample) {
  lock_all();
  if (lg_sample > 40) lg_sample = 40;
  config.lg_sample = lg_sample;
  atomic_store_explicit(&period, (uint64_t)1 << lg_sample, memory_order_relaxed);
  for (unsigned k = 0; k < PROF_SHARDS; k++) shard_reset(&shards[k]);
  atomic_store_explicit(&sampled_padding, 0, memory_order_relaxed);
  unlock_all();
}

unsigned prof_sample_lg(void) { return (unsigned)__builtin_ctzll(prof_sample_period()); }

/* ---------------------------------------------------------------- snapshots */

static void counts_accumulate(prof_counts_t *to, const prof_counts_t *c) {
  to->live_objects += c->live_objects;
  to->live_bytes += c->live_bytes;
  to->alloc_objects += c->alloc_objects;
  to->alloc_bytes += c->alloc_bytes;
  to->live_est_objects += c->live_est_objects;
  to->live_est_bytes += c->live_est_bytes;
  to->alloc_est_objects += c->alloc_est_objects;
  to->alloc_est_bytes += c->alloc_est_bytes;
}

/* The shards' counters added up into e (an entry per stack, newest stack first), the
 * totals into s. Every lock held: every live sample is counted once, in one cut. */
static void snapshot_fill(prof_snapshot_t *s, prof_snapshot_entry_t *e, size_t n) {
  for (prof_stack_t *st = stack_list; st; st = st->next_in_order) e[n - 1 - st->index].stack = st;
  for (unsigned k = 0; k < PROF_SHARDS; k++) {
    for (shard_counts_t *c = shards[k].counts_list; c; c = c->next_in_shard)
      counts_accumulate(&e[n - 1 - c->stack->index].counts, &c->counts);
    s->dropped += shards[k].dropped;
  }
  for (size_t i = 0; i < n; i++) counts_accumulate(&s->total, &e[i].counts);
}

bool prof_snapshot_take(prof_snapshot_t *s) {
  memset(s, 0, sizeof(*s));
  for (int attempt = 0; attempt < 4; attempt++) {
    size_t n = __atomic_load_n(&stack_count, __ATOMIC_RELAXED) + 64;
    size_t size = n * sizeof(prof_snapshot_entry_t);
    prof_snapshot_entry_t *e = prof_meta_alloc(size); /* zeroed */
    if (!e) return false;
    lock_all();
    if (stack_count <= n) {
      snapshot_fill(s, e, stack_count);
      s->entries = e;
      s->count = (unsigned)stack_count;
      s->alloc_size = size;
      s->period = prof_sample_period();
      unlock_all();
      return true;
    }
    unlock_all();
    prof_meta_free(e, size);
  }
  return false;
}

void prof_snapshot_release(prof_snapshot_t *s) {
  if (s->entries) prof_meta_free(s->entries, s->alloc_size);
  s->entries = NULL;
  s->count = 0;
}

typedef bool (*entry_less_t)(const prof_snapshot_entry_t *a, const prof_snapshot_entry_t *b);

static bool live_less(const prof_snapshot_entry_t *a, const prof_snapshot_entry_t *b) {
  return a->counts.live_est_bytes < b->counts.live_est_bytes;
}

static bool allocated_less(const prof_snapshot_entry_t *a, const prof_snapshot_entry_t *b) {
  return a->counts.alloc_est_bytes < b->counts.alloc_est_bytes;
}

/* Min-heap sift: the smallest at the root, so the heap sort ends largest first. */
static void sift_down(prof_snapshot_entry_t *e, unsigned n, unsigned i, entry_less_t less) {
  for (;;) {
    unsigned m = i, l = 2 * i + 1, r = l + 1;
    if (l < n && less(&e[l], &e[m])) m = l;
    if (r < n && less(&e[r], &e[m])) m = r;
    if (m == i) return;
    prof_snapshot_entry_t x = e[i];
    e[i] = e[m];
    e[m] = x;
    i = m;
  }
}

static void heap_sort(prof_snapshot_t *s, entry_less_t less) {
  prof_snapshot_entry_t *e = s->entries;
  unsigned n = s->count;
  for (unsigned i = n / 2; i-- > 0;) sift_down(e, n, i, less);
  for (unsigned end = n; end > 1; end--) {
    prof_snapshot_entry_t x = e[0];
    e[0] = e[end - 1];
    e[end - 1] = x;
    sift_down(e, end - 1, 0, less);
  }
}

void prof_snapshot_sort_live(prof_snapshot_t *s) { heap_sort(s, live_less); }
void prof_snapshot_sort_allocated(prof_snapshot_t *s) { heap_sort(s, allocated_less); }

/* ---------------------------------------------------------------- fork */

void prof_sample_fork_prepare(void) {
  lock_fork_prepare(&stack_lock);
  for (unsigned k = 0; k < PROF_SHARDS; k++) shard_lock_fork_prepare(&shards[k].lock);
}

void prof_sample_fork_parent(void) {
  for (unsigned k = PROF_SHARDS; k-- > 0;) shard_lock_fork_release(&shards[k].lock);
  lock_fork_release(&stack_lock);
}

void prof_sample_fork_child(void) { prof_sample_fork_parent(); }
