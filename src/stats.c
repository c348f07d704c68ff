/*
 * Statistics: snapshots of every counter, merged on read from the arenas and the live
 * thread caches (ctl.h), printed as text or JSON (schema in docs/stats.md); and glibc's
 * reporting functions (mallinfo, mallinfo2, malloc_stats, malloc_info) answered from the
 * same numbers.
 *
 * Numbers are gathered under the allocator's locks into the snapshot; printing happens
 * after, with only the snapshot's own lock held (printing may allocate).
 */
#include <malloc.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "tessera.h"

#include "arena.h"
#include "base.h"
#include "ctl.h"
#include "internal.h"
#include "lock.h"
#include "options.h"
#include "os.h"
#include "fastmap.h"
#include "pagemap.h"
#include "size_class.h"
#include "tcache.h"

#define STATS_JSON_SCHEMA 2

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
  s->pdirty = a->dirty.npages + a->stash_pages; /* stashed empty slabs are free, resident pages */
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
  lock_release(&a->extent_lock);
  read_lock(&a->extent_lock, &s->extent_lock);
}

static void read_bin(bin_t *bin, bin_stats_t *b) {
  lock_acquire(&bin->lock);
  b->nmalloc = bin->nmalloc;
  b->ndalloc = bin->ndalloc;
  b->nrequests = bin->nrequests; /* live caches' requests are added by add_tcache */
  b->nfills = bin->nfills;
  b->nflushes = bin->nflushes;
  b->nslabs = bin->nslabs;
  b->curregs = bin->curregs;
  b->curslabs = bin->curslabs;
  lock_release(&bin->lock);
  read_lock(&bin->lock, &b->lock);
}

/* Arena a's numbers into s (which is zeroed). */
static void arena_read(arena_t *a, arena_stats_t *s) {
  s->nthreads = atomic_load(&a->nthreads);
  read_extents(a, s);
  for (unsigned c = 0; c < NSMALL; c++) read_bin(&a->bins[c], &s->bins[c]);
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
  for (unsigned c = 0; c < NCACHED_MAX; c++) {
    const cache_bin_t *b = &tc->bins[c + 1];
    unsigned count = cache_bin_count(b);
    size_t bytes = (size_t)count * class_infos[c].size;
    s->tcache_blocks[c] += count;
    s->tcache_bytes += bytes;
    if (as == NULL) continue;
    as->tcache_bytes += bytes;
    if (c < NSMALL) as->bins[c].nrequests += b->nmalloc;
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
    to->curregs += from->curregs;
    to->curslabs += from->curslabs;
    add_lock(&to->lock, &from->lock);
  }
}

static void totals_from(stats_snapshot_t *s) {
  const arena_stats_t *m = &s->merged;
  tessera_counters *out = &s->totals;
  size_t base = base_mapped_bytes() + tcache_mapped_bytes(); /* allocator-owned memory */
  /* Blocks in thread caches count as allocated for the arenas, but the program does
   * not hold them. */
  size_t handed_out = m->small_allocated + m->large_allocated;
  out->allocated = handed_out > s->tcache_bytes ? handed_out - s->tcache_bytes : 0;
  out->active = m->pactive * PAGE;
  out->metadata = base + pagemap_mapped_bytes() + fastmap_mapped_bytes();
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
  s->epoch++;
  memset(&s->merged, 0, sizeof(s->merged));
  memset(s->tcache_blocks, 0, sizeof(s->tcache_blocks));
  s->ntcaches = 0;
  s->tcache_bytes = 0;
  s->narenas = 0;
  if (!malloc_initialized()) return;
  unsigned n = arenas_count();
  prepare_records(s, n); /* may allocate: before any allocator lock */
  s->narenas = n;
  s->nautomatic = narenas_limit;
  for (unsigned i = 0; i < n; i++)
    if (arenas[i] != NULL && s->arenas[i] != NULL) arena_read(arenas[i], s->arenas[i]);
  tcache_walk_t walk = {s};
  tcache_for_each(add_tcache, &walk);
  for (unsigned i = 0; i < n; i++) {
    if (s->arenas[i] == NULL) continue;
    small_totals(s->arenas[i]);
    merge_arena(&s->merged, s->arenas[i]);
  }
  small_totals(&s->merged);
  read_lock(base_lock_for_stats(), &s->base_lock);
  totals_from(s);
}

const arena_stats_t *stats_arena(const stats_snapshot_t *s, size_t i) {
  static const arena_stats_t zero;
  if (i == CTL_ARENAS_ALL) return &s->merged;
  if (i >= s->narenas || s->arenas[i] == NULL) return &zero;
  return s->arenas[i];
}

/* ---- the snapshots' locks and fork ---- */

static stats_snapshot_t print_snapshot; /* tessera_stats_print's */
extern stats_snapshot_t ctl_snapshot;   /* ctl.c's */

static void fork_prepare(void) {
  lock_fork_prepare(&ctl_snapshot.lock);
  lock_fork_prepare(&print_snapshot.lock);
}
static void fork_release(void) {
  lock_fork_release(&print_snapshot.lock);
  lock_fork_release(&ctl_snapshot.lock);
}

/* Registered after the allocator's own handlers, so prepare runs before theirs: the
 * snapshot locks come first in the lock order. */
static void register_fork_handlers(void) {
  static _Atomic int state; /* 0 not yet, 1 registering, 2 done */
  int expected = 0;
  if (atomic_load_explicit(&state, memory_order_acquire) == 2) return;
  if (!atomic_compare_exchange_strong(&state, &expected, 1)) return; /* another thread does it */
  if (!malloc_initialized()) tessera_free_internal(tessera_malloc_internal(1));
  pthread_atfork(fork_prepare, fork_release, fork_release);
  atomic_store_explicit(&state, 2, memory_order_release);
}

void stats_snapshot_lock(stats_snapshot_t *s) {
  register_fork_handlers();
  lock_acquire(&s->lock);
}

void stats_snapshot_unlock(stats_snapshot_t *s) { lock_release(&s->lock); }

TESSERA_EXPORT void tessera_get_counters(tessera_counters *out) {
  stats_snapshot_lock(&print_snapshot);
  stats_refresh(&print_snapshot);
  *out = print_snapshot.totals;
  stats_snapshot_unlock(&print_snapshot);
}

/* ---- printing ---- */

typedef struct emitter {
  tessera_write_cb *cb;
  void *opaque;
  char buf[4096];
  size_t len;
  /* JSON: nesting depth, and whether the open object/array at each depth has a member */
  unsigned depth;
  bool has_member[16];
} emitter_t;

/* What to print: opts letters (as jemalloc's malloc_stats_print): J JSON; leave out
 * g general (version, options), m merged arenas, a per-arena, b bins, l large, x locks,
 * t thread caches. */
typedef struct print_opts {
  bool json, general, merged, per_arena, bins, large, locks, tcaches;
} print_opts_t;

static void write_stderr_cb(void *opaque, const char *text) {
  (void)opaque;
  os_write_stderr(text);
}

static void emit_flush(emitter_t *e) {
  if (e->len == 0) return;
  e->buf[e->len] = '\0';
  e->cb(e->opaque, e->buf);
  e->len = 0;
}

__attribute__((format(printf, 2, 3))) static void emit(emitter_t *e, const char *fmt, ...) {
  char line[512];
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(line, sizeof(line), fmt, ap);
  va_end(ap);
  if (n < 0) return;
  if ((size_t)n >= sizeof(line)) n = sizeof(line) - 1;
  if (e->len + (size_t)n >= sizeof(e->buf) - 1) emit_flush(e);
  memcpy(e->buf + e->len, line, (size_t)n);
  e->len += (size_t)n;
}

static void emitter_init(emitter_t *e, tessera_write_cb *cb, void *opaque) {
  memset(e, 0, sizeof(*e));
  e->cb = cb != NULL ? cb : write_stderr_cb;
  e->opaque = opaque;
}

/* ---- JSON ---- */

/* Starts a member (key != NULL, in an object) or an element (in an array). */
static void j_member(emitter_t *e, const char *key) {
  emit(e, "%s\n%*s", e->has_member[e->depth] ? "," : "", (int)e->depth * 2, "");
  e->has_member[e->depth] = true;
  if (key != NULL) emit(e, "\"%s\": ", key);
}

static void j_open(emitter_t *e, const char *key, char bracket) {
  if (e->depth > 0) j_member(e, key);
  emit(e, "%c", bracket);
  if (e->depth < 15) e->depth++;
  e->has_member[e->depth] = false;
}

static void j_close(emitter_t *e, char bracket) {
  e->depth--;
  emit(e, "\n%*s%c", (int)e->depth * 2, "", bracket);
}

static void j_u64(emitter_t *e, const char *key, uint64_t v) {
  j_member(e, key);
  emit(e, "%llu", (unsigned long long)v);
}

static void j_str(emitter_t *e, const char *key, const char *v) {
  j_member(e, key);
  emit(e, "\"%s\"", v); /* only our own strings: no escaping needed */
}

static void j_raw(emitter_t *e, const char *key, const char *v) {
  j_member(e, key);
  emit(e, "%s", v);
}

static void j_double(emitter_t *e, const char *key, double v) {
  j_member(e, key);
  emit(e, "%.4f", v);
}

static void j_lock(emitter_t *e, const char *key, const stats_lock_t *l) {
  j_open(e, key, '{');
  j_u64(e, "num_ops", l->num_ops);
  j_u64(e, "num_wait", l->num_wait);
  j_u64(e, "total_wait_ns", l->total_wait_time);
  j_u64(e, "max_wait_ns", l->max_wait_time);
  j_close(e, '}');
}

static double bin_util(const bin_stats_t *b, unsigned c) {
  return b->curslabs ? (double)b->curregs / (double)(b->curslabs * class_infos[c].nregs) : 0.0;
}

static void j_bin(emitter_t *e, const bin_stats_t *b, unsigned c, const print_opts_t *o) {
  const class_info_t *ci = &class_infos[c];
  j_open(e, NULL, '{');
  j_u64(e, "size", ci->size);
  j_u64(e, "slab_size", (uint64_t)ci->slab_pages * PAGE);
  j_u64(e, "nregs", ci->nregs);
  j_u64(e, "nmalloc", b->nmalloc);
  j_u64(e, "ndalloc", b->ndalloc);
  j_u64(e, "nrequests", b->nrequests);
  j_u64(e, "curregs", b->curregs);
  j_u64(e, "curslabs", b->curslabs);
  j_u64(e, "nslabs", b->nslabs);
  j_u64(e, "nfills", b->nfills);
  j_u64(e, "nflushes", b->nflushes);
  j_double(e, "util", bin_util(b, c));
  if (o->locks) j_lock(e, "lock", &b->lock);
  j_close(e, '}');
}

static void j_arena(emitter_t *e, const char *key, const arena_stats_t *s, const print_opts_t *o) {
  j_open(e, key, '{');
  j_u64(e, "nthreads", s->nthreads);
  j_u64(e, "pactive", s->pactive);
  j_u64(e, "pdirty", s->pdirty);
  j_u64(e, "pmuzzy", s->pmuzzy);
  j_u64(e, "pretained", s->pretained);
  j_u64(e, "mapped", s->mapped);
  j_open(e, "purge", '{');
  j_u64(e, "npurge", s->npurge);
  j_u64(e, "nmadvise", s->nmadvise);
  j_u64(e, "purged", s->purged);
  j_u64(e, "lazy_freed", s->lazy_freed);
  j_close(e, '}');
  j_open(e, "small", '{');
  j_u64(e, "allocated", s->small_allocated);
  j_u64(e, "nmalloc", s->small_nmalloc);
  j_u64(e, "ndalloc", s->small_ndalloc);
  j_u64(e, "nrequests", s->small_nrequests);
  j_close(e, '}');
  if (o->large) {
    j_open(e, "large", '{');
    j_u64(e, "allocated", s->large_allocated);
    j_u64(e, "nmalloc", s->large_nmalloc);
    j_u64(e, "ndalloc", s->large_ndalloc);
    /* Per large size class, only the classes that were ever used. */
    j_open(e, "sizes", '[');
    for (unsigned j = 0; j < NLARGE_CLASSES; j++) {
      const lextent_stats_t *l = &s->lextents[j];
      if (l->nmalloc == 0 && l->curlextents == 0) continue;
      j_open(e, NULL, '{');
      j_u64(e, "size", class_to_size(NSMALL + j));
      j_u64(e, "nmalloc", l->nmalloc);
      j_u64(e, "ndalloc", l->ndalloc);
      j_u64(e, "curlextents", l->curlextents);
      j_close(e, '}');
    }
    j_close(e, ']');
    j_close(e, '}');
  }
  j_open(e, "tcaches", '{');
  j_u64(e, "count", s->ntcaches);
  j_u64(e, "bytes", s->tcache_bytes);
  j_close(e, '}');
  if (o->locks) j_lock(e, "extent_lock", &s->extent_lock);
  if (o->bins) {
    j_open(e, "bins", '[');
    for (unsigned c = 0; c < NSMALL; c++) j_bin(e, &s->bins[c], c, o);
    j_close(e, ']');
  }
  j_close(e, '}');
}

static void j_options(emitter_t *e) {
  j_open(e, "options", '{');
  for (unsigned i = 0; i < option_count; i++) {
    const option_def_t *d = &option_table[i];
    char v[300], q[304];
    option_format(d, v, sizeof(v));
    if (d->type == OPTION_STRING) {
      snprintf(q, sizeof(q), "\"%s\"", v);
      j_raw(e, d->name, q);
    } else {
      j_raw(e, d->name, v);
    }
  }
  j_close(e, '}');
}

static void j_totals(emitter_t *e, const stats_snapshot_t *s) {
  const tessera_counters *k = &s->totals;
  j_open(e, "stats", '{');
  j_u64(e, "allocated", k->allocated);
  j_u64(e, "active", k->active);
  j_u64(e, "metadata", k->metadata);
  j_u64(e, "resident", k->resident);
  j_u64(e, "mapped", k->mapped);
  j_u64(e, "retained", k->retained);
  j_u64(e, "dirty", k->dirty);
  j_u64(e, "muzzy", (uint64_t)s->merged.pmuzzy * PAGE);
  j_close(e, '}');
}

static void j_tcaches(emitter_t *e, const stats_snapshot_t *s) {
  j_open(e, "tcaches", '{');
  j_u64(e, "count", s->ntcaches);
  j_u64(e, "bytes", s->tcache_bytes);
  j_open(e, "classes", '[');
  for (unsigned c = 0; c < NCACHED_MAX; c++) {
    j_open(e, NULL, '{');
    j_u64(e, "size", class_infos[c].size);
    j_u64(e, "cached", s->tcache_blocks[c]);
    j_close(e, '}');
  }
  j_close(e, ']');
  j_close(e, '}');
}

static void print_json(emitter_t *e, const stats_snapshot_t *s, const print_opts_t *o) {
  j_open(e, NULL, '{');
  j_open(e, "tessera", '{');
  j_str(e, "version", TESSERA_VERSION_STRING);
  j_u64(e, "schema", STATS_JSON_SCHEMA);
  if (o->general) j_options(e);
  j_totals(e, s);
  j_open(e, "arenas", '{');
  j_u64(e, "narenas", s->narenas);
  j_u64(e, "automatic", s->nautomatic);
  j_u64(e, "nthreads", s->merged.nthreads);
  if (o->merged) j_arena(e, "merged", &s->merged, o);
  if (o->per_arena) {
    j_open(e, "per_arena", '[');
    for (unsigned i = 0; i < s->narenas; i++) {
      if (s->arenas[i] == NULL) continue;
      j_open(e, NULL, '{');
      j_u64(e, "index", i);
      j_arena(e, "stats", s->arenas[i], o);
      j_close(e, '}');
    }
    j_close(e, ']');
  }
  j_close(e, '}');
  if (o->locks) {
    j_open(e, "locks", '{');
    j_lock(e, "base", &s->base_lock);
    j_close(e, '}');
  }
  if (o->tcaches) j_tcaches(e, s);
  j_close(e, '}');
  j_close(e, '}');
  emit(e, "\n");
}

/* ---- text ---- */

static double ms(uint64_t ns) { return (double)ns / 1e6; }

static void t_lock(emitter_t *e, const char *name, const stats_lock_t *l) {
  emit(e, "  %-12s acquired %llu, contended %llu, wait total %.3f ms, max %.3f ms\n", name,
       (unsigned long long)l->num_ops, (unsigned long long)l->num_wait, ms(l->total_wait_time),
       ms(l->max_wait_time));
}

static void t_bins(emitter_t *e, const arena_stats_t *s, const print_opts_t *o) {
  emit(e, "  bins:     size  slab_kb  regs     nmalloc     ndalloc   nrequests   curregs curslabs   nfills nflushes  util%s\n",
       o->locks ? "  lock_ops   lock_wait" : "");
  for (unsigned c = 0; c < NSMALL; c++) {
    const bin_stats_t *b = &s->bins[c];
    if (b->nmalloc == 0 && b->curslabs == 0 && b->nrequests == 0) continue;
    const class_info_t *ci = &class_infos[c];
    emit(e, "        %9u %8u %5u %11llu %11llu %11llu %9zu %8zu %8llu %8llu %5.2f", ci->size,
         ci->slab_pages * 4, ci->nregs, (unsigned long long)b->nmalloc, (unsigned long long)b->ndalloc,
         (unsigned long long)b->nrequests, b->curregs, b->curslabs, (unsigned long long)b->nfills,
         (unsigned long long)b->nflushes, bin_util(b, c));
    if (o->locks) emit(e, " %9llu %11llu", (unsigned long long)b->lock.num_ops, (unsigned long long)b->lock.num_wait);
    emit(e, "\n");
  }
}

static void t_arena(emitter_t *e, const char *title, const arena_stats_t *s, const print_opts_t *o) {
  emit(e, "%s: threads %u, thread caches %u holding %zu bytes\n", title, s->nthreads, s->ntcaches, s->tcache_bytes);
  emit(e, "  pages: active %zu, dirty %zu, muzzy %zu, retained %zu; mapped %zu bytes\n", s->pactive, s->pdirty,
       s->pmuzzy, s->pretained, s->mapped);
  emit(e, "  purging: passes %llu, madvise calls %llu, pages released %llu, lazily freed %llu\n",
       (unsigned long long)s->npurge, (unsigned long long)s->nmadvise, (unsigned long long)s->purged,
       (unsigned long long)s->lazy_freed);
  emit(e, "  small: allocated %zu, nmalloc %llu, ndalloc %llu, nrequests %llu\n", s->small_allocated,
       (unsigned long long)s->small_nmalloc, (unsigned long long)s->small_ndalloc,
       (unsigned long long)s->small_nrequests);
  if (o->large) {
    emit(e, "  large: allocated %zu, nmalloc %llu, ndalloc %llu\n", s->large_allocated,
         (unsigned long long)s->large_nmalloc, (unsigned long long)s->large_ndalloc);
    for (unsigned j = 0; j < NLARGE_CLASSES; j++) {
      const lextent_stats_t *l = &s->lextents[j];
      if (l->nmalloc == 0 && l->curlextents == 0) continue;
      emit(e, "    up to %12zu bytes: nmalloc %llu, ndalloc %llu, current %zu\n", class_to_size(NSMALL + j),
           (unsigned long long)l->nmalloc, (unsigned long long)l->ndalloc, l->curlextents);
    }
  }
  if (o->locks) t_lock(e, "extent lock:", &s->extent_lock);
  if (o->bins) t_bins(e, s, o);
}

static void t_general(emitter_t *e) {
  emit(e, "options:");
  for (unsigned i = 0; i < option_count; i++) {
    char v[300];
    option_format(&option_table[i], v, sizeof(v));
    emit(e, "%s%s:%s", i ? "," : " ", option_table[i].name, v);
  }
  emit(e, "\n");
}

static void t_tcaches(emitter_t *e, const stats_snapshot_t *s) {
  emit(e, "thread caches: %u holding %zu bytes; blocks cached per class:", s->ntcaches, s->tcache_bytes);
  for (unsigned c = 0; c < NCACHED_MAX; c++)
    if (s->tcache_blocks[c] != 0) emit(e, " %u:%llu", class_infos[c].size, (unsigned long long)s->tcache_blocks[c]);
  emit(e, "\n");
}

static void print_text(emitter_t *e, const stats_snapshot_t *s, const print_opts_t *o) {
  const tessera_counters *k = &s->totals;
  emit(e, "___ tessera %s statistics ___\n", TESSERA_VERSION_STRING);
  if (o->general) t_general(e);
  emit(e, "arenas: %u (%u automatic), threads bound: %u, free map: %s\n", s->narenas, s->nautomatic,
       s->merged.nthreads, fastmap_enabled() ? "on" : "off");
  emit(e, "allocated: %zu  active: %zu  metadata: %zu  resident: %zu  mapped: %zu  retained: %zu  dirty: %zu  muzzy: %zu\n",
       k->allocated, k->active, k->metadata, k->resident, k->mapped, k->retained, k->dirty, s->merged.pmuzzy * PAGE);
  if (o->locks) t_lock(e, "base lock:", &s->base_lock);
  if (o->tcaches) t_tcaches(e, s);
  if (o->merged) t_arena(e, "all arenas", &s->merged, o);
  if (o->per_arena) {
    for (unsigned i = 0; i < s->narenas; i++) {
      char title[32];
      if (s->arenas[i] == NULL) continue;
      snprintf(title, sizeof(title), "arena %u", i);
      t_arena(e, title, s->arenas[i], o);
    }
  }
  emit(e, "--- end of tessera statistics ---\n");
}

static print_opts_t parse_print_opts(const char *opts) {
  print_opts_t o = {false, true, true, true, true, true, true, true};
  for (const char *p = opts ? opts : ""; *p; p++) {
    switch (*p) {
    case 'J': o.json = true; break;
    case 'g': o.general = false; break;
    case 'm': o.merged = false; break;
    case 'a': o.per_arena = false; break;
    case 'b': o.bins = false; break;
    case 'l': o.large = false; break;
    case 'x': o.locks = false; break;
    case 't': o.tcaches = false; break;
    default: break; /* jemalloc's other letters (d, e, h) have nothing to leave out here */
    }
  }
  return o;
}

TESSERA_EXPORT void tessera_stats_print(tessera_write_cb *write_cb, void *cbopaque, const char *opts) {
  static emitter_t e; /* 4 KiB: too big for small thread stacks; guarded by the lock */
  print_opts_t o = parse_print_opts(opts);
  stats_snapshot_lock(&print_snapshot);
  stats_refresh(&print_snapshot);
  emitter_init(&e, write_cb, cbopaque);
  if (o.json) print_json(&e, &print_snapshot, &o);
  else print_text(&e, &print_snapshot, &o);
  emit_flush(&e);
  stats_snapshot_unlock(&print_snapshot);
}

TESSERA_EXPORT void tessera_print_classes(tessera_write_cb *write_cb, void *cbopaque) {
  emitter_t e;
  emitter_init(&e, write_cb, cbopaque);
  if (!malloc_initialized()) tessera_free_internal(tessera_malloc_internal(1));
  emit(&e, "class      size  kind   slab_bytes  regions  waste_bytes  waste_pct\n");
  for (unsigned c = 0; c < NCACHED_MAX; c++) {
    const class_info_t *ci = &class_infos[c];
    size_t slab = (size_t)ci->slab_pages * PAGE;
    size_t waste = slab - (size_t)ci->nregs * ci->size;
    emit(&e, "%5u %9u  %-5s %11zu %8u %12zu %9.2f\n", c, ci->size, c < NSMALL ? "small" : "large",
         slab, ci->nregs, waste, slab ? 100.0 * (double)waste / (double)slab : 0.0);
  }
  emit(&e, "larger sizes: whole pages (4096 bytes), one extent each\n");
  emit_flush(&e);
}

/* stats_print:true writes through a duplicate of stderr taken at start-up: many
 * programs (coreutils among them) close fd 2 in an atexit handler, which runs before
 * this library's destructor. */
static int exit_stats_fd = -1;

void stats_boot(void) {
  if (opt_stats_print) exit_stats_fd = os_dup_stderr();
}

static void write_exit_fd_cb(void *opaque, const char *text) {
  (void)opaque;
  os_write_fd(exit_stats_fd, text);
}

__attribute__((destructor)) static void stats_at_exit(void) {
  if (!opt_stats_print || !malloc_initialized()) return;
  tessera_stats_print(exit_stats_fd >= 0 ? write_exit_fd_cb : NULL, NULL, opt_stats_print_opts);
}


/* ---- glibc's reporting functions ---- */

TESSERA_EXPORT struct mallinfo2 mallinfo2(void) {
  struct mallinfo2 m;
  memset(&m, 0, sizeof(m));
  tessera_counters k;
  tessera_get_counters(&k);
  m.arena = k.mapped;                    /* bytes obtained from the OS */
  m.ordblks = 0;
  m.hblkhd = 0;
  m.uordblks = k.allocated;              /* bytes in use by the program */
  m.fordblks = k.mapped > k.allocated ? k.mapped - k.allocated : 0; /* free, incl. retained */
  m.keepcost = k.dirty;                  /* what malloc_trim could release now */
  return m;
}

static int clamp_int(size_t v) { return v > 0x7fffffff ? 0x7fffffff : (int)v; }

TESSERA_EXPORT struct mallinfo mallinfo(void) {
  struct mallinfo2 m2 = mallinfo2();
  struct mallinfo m;
  memset(&m, 0, sizeof(m));
  m.arena = clamp_int(m2.arena);
  m.uordblks = clamp_int(m2.uordblks);
  m.fordblks = clamp_int(m2.fordblks);
  m.keepcost = clamp_int(m2.keepcost);
  return m;
}

/* mallopt's parameters tune glibc's own allocator; tessera accepts them and keeps its
 * own settings (its options come from TESSERA_CONF). 1 means success, as in glibc. */
TESSERA_EXPORT int mallopt(int param, int value) {
  (void)param;
  (void)value;
  return 1;
}

TESSERA_EXPORT void malloc_stats(void) { tessera_stats_print(NULL, NULL, NULL); }

TESSERA_EXPORT int malloc_info(int options, FILE *stream) {
  if (options != 0) return -1; /* glibc: EINVAL */
  tessera_counters k;
  tessera_get_counters(&k);
  fprintf(stream,
          "<malloc version=\"tessera-%s\">\n"
          "<total type=\"allocated\" size=\"%zu\"/>\n<total type=\"active\" size=\"%zu\"/>\n"
          "<total type=\"dirty\" size=\"%zu\"/>\n<total type=\"retained\" size=\"%zu\"/>\n"
          "<system type=\"current\" size=\"%zu\"/>\n<system type=\"max\" size=\"%zu\"/>\n"
          "</malloc>\n",
          TESSERA_VERSION_STRING, k.allocated, k.active, k.dirty, k.retained, k.mapped, k.mapped);
  return 0;
}
