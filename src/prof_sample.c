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

typedef struct prof_record {
  struct prof_record *next; /* hash chain, or the free list */
  uintptr_t ptr;
  prof_stack_t *stack;
  size_t usize;
  double weight;
  const prof_mark_t *mark; /* how the allocator marked the block, or NULL */
} prof_record_t;

#define RECORD_CHUNK ((size_t)16 << 10)

_Atomic bool prof_active_now;
static lock_t prof_lock;
static prof_config_t config = PROF_CONFIG_DEFAULT;
static _Atomic uint64_t period = (uint64_t)1 << 19;

/* Stacks: open addressing by hash, capacity a power of two, at most half full. */
static prof_stack_t **stack_slots;
static size_t stack_capacity, stack_count;
static prof_stack_t *stack_list;

/* Records: chained hash by pointer; free records on a list. */
static prof_record_t **record_buckets;
static size_t record_nbuckets, record_count;
static prof_record_t *record_free_list;
static uint64_t dropped;

/* ---------------------------------------------------------------- own memory */

static _Atomic size_t meta_bytes, sampled_padding;

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
size_t prof_meta_sampled_padding(void) { return atomic_load_explicit(&sampled_padding, memory_order_relaxed); }

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

/* A draw from the exponential distribution of mean `mean` (t's generator, seeded on
 * first use). */
static double draw_exponential(prof_thread_t *t, uint64_t mean) {
  if (t->prng == 0) t->prng = (uint64_t)(uintptr_t)t ^ os_now_ns() ^ 0x5851F42D4C957F2Dull;
  /* u uniform in (0, 1]: -ln(u) is exponential with mean 1. */
  double u = (double)((splitmix64(&t->prng) >> 11) + 1) * (1.0 / 9007199254740992.0);
  return -prof_log(u) * (double)mean;
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
  double blocks = draw_exponential(t, prof_sample_period()) / (double)usize;
  return blocks >= 4.0e18 ? (uint64_t)4e18 : (uint64_t)blocks + 1;
}

double prof_sample_weight(size_t usize, uint64_t mean) {
  double p = prof_one_minus_exp_neg((double)usize / (double)mean);
  return p > 0 ? 1.0 / p : 1.0;
}

/* ---------------------------------------------------------------- setup */

void prof_sample_init(const prof_config_t *c) {
  lock_acquire(&prof_lock);
  config = *c;
  if (config.lg_sample > 40) config.lg_sample = 40;
  if (config.max_depth == 0 || config.max_depth > PROF_DEPTH_MAX) config.max_depth = PROF_DEPTH_MAX;
  atomic_store_explicit(&period, (uint64_t)1 << config.lg_sample, memory_order_relaxed);
  lock_release(&prof_lock);
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

static bool stack_table_grow(void) {
  size_t cap = stack_capacity ? stack_capacity * 2 : 1024;
  prof_stack_t **slots = prof_meta_alloc(cap * sizeof(*slots));
  if (!slots) return false;
  for (size_t i = 0; i < stack_capacity; i++) {
    prof_stack_t *s = stack_slots[i];
    if (!s) continue;
    size_t j = s->hash & (cap - 1);
    while (slots[j]) j = (j + 1) & (cap - 1);
    slots[j] = s;
  }
  if (stack_slots) prof_meta_free(stack_slots, stack_capacity * sizeof(*stack_slots));
  stack_slots = slots;
  stack_capacity = cap;
  return true;
}

static bool same_pcs(const uintptr_t *a, const uintptr_t *b, unsigned depth) {
  for (unsigned i = 0; i < depth; i++) /* a few frames: no call to memcmp */
    if (a[i] != b[i]) return false;
  return true;
}

/* The interned copy of a stack of hash h (hash_pcs); NULL at the bound or without
 * memory. Lock held. */
static prof_stack_t *stack_intern(const uintptr_t *pcs, unsigned depth, uint64_t h) {
  if (stack_capacity) {
    for (size_t j = h & (stack_capacity - 1);; j = (j + 1) & (stack_capacity - 1)) {
      prof_stack_t *s = stack_slots[j];
      if (!s) break;
      if (s->hash == h && s->depth == depth && same_pcs(s->pcs, pcs, depth)) return s;
    }
  }
  if (stack_count >= config.max_stacks) return NULL;
  if ((stack_count + 1) * 2 > stack_capacity && !stack_table_grow()) return NULL;
  prof_stack_t *s = prof_meta_alloc(sizeof(*s) + depth * sizeof(*pcs));
  if (!s) return NULL;
  s->hash = h;
  s->depth = depth;
  memcpy(s->pcs, pcs, depth * sizeof(*pcs));
  size_t j = h & (stack_capacity - 1);
  while (stack_slots[j]) j = (j + 1) & (stack_capacity - 1);
  stack_slots[j] = s;
  s->next_in_order = stack_list;
  stack_list = s;
  stack_count++;
  return s;
}

/* ---------------------------------------------------------------- records */

static size_t record_bucket(uintptr_t ptr) {
  return (size_t)(((uint64_t)ptr * 0x9E3779B97F4A7C15ull) >> 20) & (record_nbuckets - 1);
}

/* How many live records hash to each slot (written under the lock, read without it), so
 * that a free on a marked page of a block that is not sampled (its neighbours') most
 * often leaves without the lock. A block's record is in before malloc returns it, so any
 * free of it, ordered after that return, sees its slot's count at 1 or more. */
#define RECORD_FILTER 1024 /* a power of two */
static _Atomic uint32_t record_filter[RECORD_FILTER];

static inline _Atomic uint32_t *filter_slot(uintptr_t ptr) {
  return &record_filter[((uint64_t)ptr * 0x9E3779B97F4A7C15ull) >> 54 & (RECORD_FILTER - 1)];
}
static inline void filter_add(uintptr_t ptr, int32_t delta) {
  _Atomic uint32_t *slot = filter_slot(ptr);
  atomic_store_explicit(slot, atomic_load_explicit(slot, memory_order_relaxed) + (uint32_t)delta, memory_order_relaxed);
}

static bool record_buckets_grow(void) {
  size_t n = record_nbuckets ? record_nbuckets * 2 : 1024;
  prof_record_t **b = prof_meta_alloc(n * sizeof(*b));
  if (!b) return false;
  size_t old_n = record_nbuckets;
  prof_record_t **old = record_buckets;
  record_buckets = b;
  record_nbuckets = n;
  for (size_t i = 0; i < old_n; i++) {
    for (prof_record_t *r = old[i], *next; r; r = next) {
      next = r->next;
      size_t j = record_bucket(r->ptr);
      r->next = b[j];
      b[j] = r;
    }
  }
  if (old) prof_meta_free(old, old_n * sizeof(*old));
  return true;
}

static prof_record_t *record_new(void) {
  if (!record_free_list) {
    prof_record_t *chunk = prof_meta_alloc(RECORD_CHUNK);
    if (!chunk) return NULL;
    for (size_t i = 0; i < RECORD_CHUNK / sizeof(*chunk); i++) {
      chunk[i].next = record_free_list;
      record_free_list = &chunk[i];
    }
  }
  prof_record_t *r = record_free_list;
  record_free_list = r->next;
  return r;
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

/* Forgets record r (taken off its chain already). Lock held. */
static void record_forget(prof_record_t *r) {
  counts_remove(&r->stack->counts, r->usize, r->weight);
  size_t padding = padding_of(r);
  if (padding != 0) atomic_fetch_sub_explicit(&sampled_padding, padding, memory_order_relaxed);
  filter_add(r->ptr, -1);
  if (r->mark) r->mark->forget(r->ptr);
}

bool prof_record_alloc(void *ptr, size_t usize, const uintptr_t *pcs, unsigned depth) {
  return prof_record_alloc_marked(ptr, usize, pcs, depth, NULL);
}

/* The weights of recently sampled sizes (a program samples a few sizes over and over):
 * one exp per size and period instead of one per sample. Lock held. */
#define WEIGHT_CACHE 64 /* a power of two */
static struct {
  size_t usize; /* 0: empty */
  uint64_t period;
  double weight;
} weight_cache[WEIGHT_CACHE];

static double weight_of(size_t usize, uint64_t mean) {
  size_t i = (size_t)(((uint64_t)usize * 0x9E3779B97F4A7C15ull) >> 58) & (WEIGHT_CACHE - 1);
  if (weight_cache[i].usize != usize || weight_cache[i].period != mean) {
    weight_cache[i].usize = usize;
    weight_cache[i].period = mean;
    weight_cache[i].weight = prof_sample_weight(usize, mean);
  }
  return weight_cache[i].weight;
}

bool prof_record_alloc_marked(void *ptr, size_t usize, const uintptr_t *pcs, unsigned depth, const prof_mark_t *mark) {
  if (!ptr) return false;
  if (depth > config.max_depth) depth = config.max_depth;
  uint64_t hash = hash_pcs(pcs, depth); /* before the lock: it is held for less */
  lock_acquire(&prof_lock);
  double weight = weight_of(usize, prof_sample_period());
  bool ok = false;
  prof_stack_t *s = record_count < config.max_records ? stack_intern(pcs, depth, hash) : NULL;
  if (s && (record_count + 1 <= record_nbuckets * 2 || record_buckets_grow())) {
    prof_record_t *r = record_new();
    if (r && mark && !mark->mark((uintptr_t)ptr)) { /* cannot be marked: not sampled */
      r->next = record_free_list;
      record_free_list = r;
      r = NULL;
    }
    if (r) {
      r->ptr = (uintptr_t)ptr;
      r->stack = s;
      r->usize = usize;
      r->weight = weight;
      r->mark = mark;
      size_t j = record_bucket(r->ptr);
      r->next = record_buckets[j];
      record_buckets[j] = r;
      record_count++;
      filter_add(r->ptr, 1);
      counts_add(&s->counts, usize, weight, false);
      size_t padding = padding_of(r);
      if (padding != 0) atomic_fetch_add_explicit(&sampled_padding, padding, memory_order_relaxed);
      ok = true;
    }
  }
  if (!ok) dropped++;
  lock_release(&prof_lock);
  return ok;
}

bool prof_record_free(void *ptr) {
  if (atomic_load_explicit(filter_slot((uintptr_t)ptr), memory_order_relaxed) == 0) return false;
  lock_acquire(&prof_lock);
  prof_record_t *found = NULL;
  if (record_nbuckets) {
    for (prof_record_t **link = &record_buckets[record_bucket((uintptr_t)ptr)]; *link; link = &(*link)->next) {
      if ((*link)->ptr != (uintptr_t)ptr) continue;
      found = *link;
      *link = found->next;
      break;
    }
  }
  if (found) {
    record_forget(found);
    found->next = record_free_list;
    record_free_list = found;
    record_count--;
  }
  lock_release(&prof_lock);
  return found != NULL;
}

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

bool prof_sample_alloc_outside(prof_thread_t *t, void *ptr, size_t usize, uintptr_t lo, uintptr_t hi,
                               const prof_mark_t *mark) {
  if (t->busy || !ptr) return false;
  t->busy = true;
  uintptr_t pcs[PROF_DEPTH_MAX + PROF_TRIM_FRAMES];
  unsigned max = config.max_depth + PROF_TRIM_FRAMES;
  unsigned depth = t->unwind_start ? prof_unwind_capture_from(t->unwind_start, pcs, max, 0)
                                   : prof_unwind_capture(pcs, max, 1);
  unsigned first = 0;
  for (unsigned i = 0; i < depth && i < PROF_TRIM_FRAMES; i++)
    if (pcs[i] >= lo && pcs[i] < hi) first = i + 1;
  bool ok = prof_record_alloc_marked(ptr, usize, pcs + first, depth - first, mark);
  t->busy = false;
  return ok;
}

void prof_sample_reset(unsigned lg_sample) {
  lock_acquire(&prof_lock);
  if (lg_sample > 40) lg_sample = 40;
  config.lg_sample = lg_sample;
  atomic_store_explicit(&period, (uint64_t)1 << lg_sample, memory_order_relaxed);
  for (prof_stack_t *s = stack_list; s; s = s->next_in_order) memset(&s->counts, 0, sizeof(s->counts));
  for (size_t i = 0; i < record_nbuckets; i++) {
    for (prof_record_t *r = record_buckets[i], *next; r; r = next) {
      next = r->next;
      filter_add(r->ptr, -1);
      if (r->mark) r->mark->forget(r->ptr);
      r->next = record_free_list;
      record_free_list = r;
    }
    record_buckets[i] = NULL;
  }
  record_count = 0;
  atomic_store_explicit(&sampled_padding, 0, memory_order_relaxed);
  dropped = 0;
  lock_release(&prof_lock);
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

bool prof_snapshot_take(prof_snapshot_t *s) {
  memset(s, 0, sizeof(*s));
  for (int attempt = 0; attempt < 4; attempt++) {
    size_t n = __atomic_load_n(&stack_count, __ATOMIC_RELAXED) + 64;
    size_t size = n * sizeof(prof_snapshot_entry_t);
    prof_snapshot_entry_t *e = prof_meta_alloc(size);
    if (!e) return false;
    lock_acquire(&prof_lock);
    if (stack_count <= n) {
      unsigned i = 0;
      for (prof_stack_t *st = stack_list; st; st = st->next_in_order, i++) {
        e[i].stack = st;
        e[i].counts = st->counts;
        counts_accumulate(&s->total, &st->counts);
      }
      s->entries = e;
      s->count = i;
      s->alloc_size = size;
      s->period = prof_sample_period();
      s->dropped = dropped;
      lock_release(&prof_lock);
      return true;
    }
    lock_release(&prof_lock);
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

void prof_sample_fork_prepare(void) { lock_fork_prepare(&prof_lock); }
void prof_sample_fork_parent(void) { lock_fork_release(&prof_lock); }
void prof_sample_fork_child(void) { lock_fork_release(&prof_lock); }
