/* SPDX-License-Identifier: MIT */
#include "stats.h"

#include <string.h>

#include "arena.h"
#include "base.h"
#include "bin.h"
#include "free_map.h"
#include "large_cache.h"
#include "lock.h"
#include "pagemap.h"
#include "size_class.h"
#include "os.h"
#include "tcache.h"
#include "thread_stats.h"

stats_snapshot_t stats_ctl_snapshot;
stats_snapshot_t stats_print_snapshot;
/* The snapshots' locks, apart from them, with the other locks fork's handlers take. */
static lock_t ctl_snapshot_lock FORK_LOCK, print_snapshot_lock FORK_LOCK;
static lock_t *snapshot_lock_of(const stats_snapshot_t *s) {
  return s == &stats_ctl_snapshot ? &ctl_snapshot_lock : &print_snapshot_lock;
}

/* ---- gathering ---- */

static void read_lock(const lock_t *l, stats_lock_t *out) {
  out->num_ops = l->n_acquired;
  out->num_wait = l->n_contended;
  out->total_wait_time = l->wait_ns_total;
  out->max_wait_time = l->wait_ns_max;
}

static void add_lock(stats_lock_t *to, const stats_lock_t *from) {
  to->num_ops += from->num_ops;
  to->num_wait += from->num_wait;
  to->total_wait_time += from->total_wait_time;
  if (from->max_wait_time > to->max_wait_time) to->max_wait_time = from->max_wait_time;
}

static void read_extents(arena_t *a, arena_stats_t *s) {
  lock_acquire(&a->extent_lock);
  s->mapped = a->mapped_pages * PAGE;
  s->pactive = a->active_pages;
  /* stashed empty slabs are free, resident pages; so are the pages being handed back */
  s->pdirty = a->dirty.npages + a->stash_pages + a->purging_pages;
  s->pmuzzy = a->muzzy.npages;
  s->pretained = a->retained.npages;
  s->large_allocated = a->large_allocated;
  s->large_nmalloc = a->nmalloc_large;
  s->large_ndalloc = a->ndalloc_large;
  for (unsigned j = 0; j < NLARGE_CLASSES; j++) {
    s->lextents[j].nmalloc = a->lextent_nmalloc[j];
    s->lextents[j].ndalloc = a->lextent_ndalloc[j];
    s->lextents[j].curlextents = a->lextent_cur[j];
  }
  s->npurge = a->npurge;
  s->nmadvise = a->nmadvise;
  s->purged = a->purged_pages;
  s->lazy_freed = a->lazy_freed_pages;
  s->reused_muzzy = a->reused_muzzy_pages;
  s->reused_released = a->reused_released_pages;
  s->gathered = a->gathered_pages;
  lock_release(&a->extent_lock);
  read_lock(&a->extent_lock, &s->extent_lock);
}

static void read_bin(arena_t *a, bin_t *bin, bin_stats_t *b) {
  bin_lock(a, bin);
  b->nmalloc = bin->nmalloc;
  b->ndalloc = bin->ndalloc;
  b->nrequests = bin->nrequests; /* live caches' requests are added by add_tcache */
  b->nfills = bin->nfills;
  b->nflushes = bin->nflushes;
  b->nslabs = bin->nslabs;
  b->nlent = bin->nlent;
  b->curregs = bin->curregs;
  b->curslabs = bin->curslabs;
  lock_release(&bin->lock);
  read_lock(&bin->lock, &b->lock);
}

/* Arena a's numbers into s (which is zeroed); now: the refresh's time. */
static void arena_read(arena_t *a, arena_stats_t *s, uint64_t now) {
  s->initialized = true;
  s->uptime_ns = now > a->created_ns ? now - a->created_ns : 0;
  s->nthreads = atomic_load(&a->nthreads);
  read_extents(a, s);
  for (unsigned c = 0; c < NSMALL; c++) read_bin(a, &a->bins[c], &s->bins[c]);
}

typedef struct tcache_walk {
  stats_snapshot_t *snap;
} tcache_walk_t;

/* Called with the tcache registry locked: reads only, into records that exist. */
static void add_tcache(const tcache_t *tc, void *arg) {
  stats_snapshot_t *s = ((tcache_walk_t *)arg)->snap;
  unsigned ai = tc->arena != NULL ? tc->arena->index : MAX_ARENAS;
  arena_stats_t *as = ai < s->narenas ? s->arenas[ai] : NULL;
  s->ntcaches++;
  if (as != NULL) as->ntcaches++;
  size_t large = large_cache_bytes(tc);
  s->tcache_bytes += large;
  if (as != NULL) as->tcache_bytes += large;
  for (unsigned c = 0; c < NCACHED_MAX; c++) {
    const cache_bin_t *b = &tc->bins[c + 1];
    unsigned count = cache_bin_count(b);
    size_t bytes = (size_t)count * class_infos[c].size;
    s->tcache_blocks[c] += count;
    if (b->capacity > s->tcache_capacity_max[c]) s->tcache_capacity_max[c] = b->capacity;
    s->tcache_bytes += bytes;
    if (as == NULL) continue;
    as->tcache_bytes += bytes;
    if (c < NSMALL) as->bins[c].nrequests += cache_bin_nmalloc(tc, b);
  }
}

static void small_totals(arena_stats_t *s) {
  s->small_allocated = 0;
  s->small_nmalloc = s->small_ndalloc = s->small_nrequests = 0;
  for (unsigned c = 0; c < NSMALL; c++) {
    s->small_allocated += s->bins[c].curregs * class_infos[c].size;
    s->small_nmalloc += s->bins[c].nmalloc;
    s->small_ndalloc += s->bins[c].ndalloc;
    s->small_nrequests += s->bins[c].nrequests;
  }
}

static void merge_arena(arena_stats_t *m, const arena_stats_t *s) {
  m->nthreads += s->nthreads;
  m->ntcaches += s->ntcaches;
  m->tcache_bytes += s->tcache_bytes;
  m->pactive += s->pactive;
  m->pdirty += s->pdirty;
  m->pmuzzy += s->pmuzzy;
  m->pretained += s->pretained;
  m->mapped += s->mapped;
  m->large_allocated += s->large_allocated;
  m->large_nmalloc += s->large_nmalloc;
  m->large_ndalloc += s->large_ndalloc;
  for (unsigned j = 0; j < NLARGE_CLASSES; j++) {
    m->lextents[j].nmalloc += s->lextents[j].nmalloc;
    m->lextents[j].ndalloc += s->lextents[j].ndalloc;
    m->lextents[j].curlextents += s->lextents[j].curlextents;
  }
  m->npurge += s->npurge;
  m->nmadvise += s->nmadvise;
  m->purged += s->purged;
  m->lazy_freed += s->lazy_freed;
  m->reused_muzzy += s->reused_muzzy;
  m->reused_released += s->reused_released;
  m->gathered += s->gathered;
  add_lock(&m->extent_lock, &s->extent_lock);
  for (unsigned c = 0; c < NSMALL; c++) {
    bin_stats_t *to = &m->bins[c];
    const bin_stats_t *from = &s->bins[c];
    to->nmalloc += from->nmalloc;
    to->ndalloc += from->ndalloc;
    to->nrequests += from->nrequests;
    to->nfills += from->nfills;
    to->nflushes += from->nflushes;
    to->nslabs += from->nslabs;
    to->nlent += from->nlent;
    to->curregs += from->curregs;
    to->curslabs += from->curslabs;
    add_lock(&to->lock, &from->lock);
  }
}

/* ---- threads by name ---- */

/* Live threads' caches, gathered under the locks and named after (the names are read
 * from /proc); more than this many live threads are summed under "(other)". */
#define LIVE_MAX 256
typedef struct live_thread {
  uint32_t tid; /* 0: no registered owner */
  thread_counts_t counts;
} live_thread_t;
static live_thread_t live[LIVE_MAX]; /* under a snapshot lock: one refresh at a time */

typedef struct live_walk {
  stats_snapshot_t *snap;
  unsigned n;
} live_walk_t;

/* Called with the thread-cache registry and the thread-name registry locked. */
static void add_live_thread(const tcache_t *tc, void *arg) {
  live_walk_t *w = arg;
  thread_counts_t c;
  memset(&c, 0, sizeof(c));
  c.nthreads = 1;
  c.arena = tc->arena != NULL ? (int)tc->arena->index : -1;
  thread_counts_of_cache(tc, &c);
  const thread_record_t *owner = thread_stats_owner(tc);
  if (owner != NULL) c.lock_wait_ns = __atomic_load_n(&owner->lock_wait_ns, __ATOMIC_RELAXED);
  if (w->n == LIVE_MAX || owner == NULL) {
    memcpy(c.name, owner == NULL ? "?" : THREAD_STATS_OTHER, owner == NULL ? 2 : sizeof(THREAD_STATS_OTHER));
    thread_table_add(&w->snap->threads, &c);
    return;
  }
  live[w->n].tid = owner->tid;
  memcpy(c.name, owner->name, THREAD_NAME_LEN); /* if the thread is gone meanwhile */
  live[w->n].counts = c;
  w->n++;
}

/* Locks: the snapshot's (held), the thread-name registry, the thread-cache registry. */
static void read_threads(stats_snapshot_t *s) {
  live_walk_t w = {s, 0};
  thread_stats_lock();
  thread_stats_exited(&s->threads);
  tcache_for_each(add_live_thread, &w);
  thread_stats_unlock();
  for (unsigned i = 0; i < w.n; i++) {
    thread_counts_t *c = &live[i].counts;
    char name[THREAD_NAME_LEN];
    if (os_thread_name_of(live[i].tid, name)) memcpy(c->name, name, THREAD_NAME_LEN);
    thread_table_add(&s->threads, c);
  }
}

/* The metadata's parts, read once per refresh so that the totals and the arenas'
 * shares of them agree. */
typedef struct metadata_parts {
  size_t base;     /* the base allocator */
  size_t caches;   /* the thread caches' mappings */
  size_t maps;     /* the page map and the free map */
} metadata_parts_t;

/* Each arena's own record is its share of the base allocator; arena 0 holds the rest
 * (the extent records, statistics records, the profiler's tables), the maps and the
 * thread caches (which move between arenas with their threads). Sums to the totals. */
#define ARENA_RECORD_BYTES ((sizeof(arena_t) + 63) & ~(size_t)63) /* base_alloc's rounding */
static void metadata_by_arena(stats_snapshot_t *s, const metadata_parts_t *md) {
  size_t others = 0;
  for (unsigned i = 1; i < s->narenas; i++) {
    arena_stats_t *as = s->arenas[i];
    if (as == NULL || !as->initialized) continue;
    as->base = ARENA_RECORD_BYTES;
    as->resident = (as->pactive + as->pdirty) * PAGE + as->base;
    others += as->base;
  }
  size_t own = md->base > others ? md->base - others : 0;
  arena_stats_t *a0 = s->narenas > 0 ? s->arenas[0] : NULL;
  if (a0 != NULL && a0->initialized) {
    a0->base = own + md->maps;
    a0->internal = md->caches;
    a0->resident = (a0->pactive + a0->pdirty) * PAGE + own + md->caches;
  }
  arena_stats_t *m = &s->merged;
  m->initialized = true;
  m->uptime_ns = a0 != NULL ? a0->uptime_ns : 0;
  m->base = md->base + md->maps;
  m->internal = md->caches;
  m->resident = (m->pactive + m->pdirty) * PAGE + md->base + md->caches;
}

static void totals_from(stats_snapshot_t *s, const metadata_parts_t *md) {
  const arena_stats_t *m = &s->merged;
  tessera_counters *out = &s->totals;
  size_t base = md->base + md->caches; /* allocator-owned memory */
  /* Blocks in thread caches count as allocated for the arenas, but the program does
   * not hold them. */
  size_t handed_out = m->small_allocated + m->large_allocated;
  out->allocated = handed_out > s->tcache_bytes ? handed_out - s->tcache_bytes : 0;
  out->active = m->pactive * PAGE;
  out->metadata = base + md->maps;
  out->dirty = m->pdirty * PAGE;
  out->resident = out->active + out->dirty + base;
  out->mapped = m->mapped + base;
  out->retained = m->pretained * PAGE;
}

/* Makes sure s has a record for each of the first n arenas; zeroes them. */
static void prepare_records(stats_snapshot_t *s, unsigned n) {
  for (unsigned i = 0; i < n; i++) {
    if (s->arenas[i] == NULL) s->arenas[i] = base_alloc(sizeof(arena_stats_t));
    else memset(s->arenas[i], 0, sizeof(arena_stats_t));
  }
}

void stats_refresh(stats_snapshot_t *s) {
  lock_assert_held(snapshot_lock_of(s));
  s->epoch++;
  memset(&s->merged, 0, sizeof(s->merged));
  memset(s->tcache_blocks, 0, sizeof(s->tcache_blocks));
  memset(s->tcache_capacity_max, 0, sizeof(s->tcache_capacity_max));
  s->ncpus = os_ncpus();
  s->ntcaches = 0;
  s->tcache_bytes = 0;
  s->narenas = 0;
  unsigned n = arenas_count();
  prepare_records(s, n); /* may allocate: before any allocator lock */
  s->narenas = n;
  s->nautomatic = narenas_limit;
  uint64_t now = os_now_ns();
  for (unsigned i = 0; i < n; i++)
    if (arenas[i] != NULL && s->arenas[i] != NULL) arena_read(arenas[i], s->arenas[i], now);
  tcache_walk_t walk = {s};
  tcache_for_each(add_tcache, &walk);
  for (unsigned i = 0; i < n; i++) {
    if (s->arenas[i] == NULL) continue;
    small_totals(s->arenas[i]);
    merge_arena(&s->merged, s->arenas[i]);
  }
  small_totals(&s->merged);
  read_lock(base_lock_for_stats(), &s->base_lock);
  metadata_parts_t md = {base_mapped_bytes(), tcache_mapped_bytes(), pagemap_mapped_bytes() + free_map_mapped_bytes()};
  totals_from(s, &md);
  metadata_by_arena(s, &md);
  arenas_note_nthreads(s->merged.nthreads);
  s->nthreads_peak = arenas_nthreads_peak();
  read_threads(s);
}

const arena_stats_t *stats_arena(const stats_snapshot_t *s, size_t i) {
  /* Not const: a zero struct in .bss takes no file page (in .rodata it made the
   * library's first segment, resident whole in every process, two pages longer). */
  static arena_stats_t zero;
  if (i == ARENAS_ALL) return &s->merged;
  if (i >= s->narenas || s->arenas[i] == NULL) return &zero;
  return s->arenas[i];
}

/* ---- the snapshots' locks and fork ---- */

void stats_snapshot_lock(stats_snapshot_t *s) { lock_acquire(snapshot_lock_of(s)); }
void stats_snapshot_unlock(stats_snapshot_t *s) { lock_release(snapshot_lock_of(s)); }

void stats_fork_prepare(void) {
  lock_fork_prepare(&ctl_snapshot_lock);
  lock_fork_prepare(&print_snapshot_lock);
  thread_stats_fork_prepare();
}

void stats_fork_release(void) {
  thread_stats_fork_release();
  lock_fork_release(&print_snapshot_lock);
  lock_fork_release(&ctl_snapshot_lock);
}
