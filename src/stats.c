/*
 * Statistics: counters merged from every arena on read, printed as text or JSON
 * (schema documented in docs/stats.md), and glibc's reporting functions (mallinfo,
 * mallinfo2, malloc_stats, malloc_info) answered from the same numbers.
 *
 * Numbers are gathered under the locks, then printed with no lock held (printing may
 * allocate).
 */
#include <malloc.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "tessera.h"

#include "arena.h"
#include "base.h"
#include "internal.h"
#include "lock.h"
#include "options.h"
#include "os.h"
#include "pagemap.h"
#include "size_class.h"
#include "tcache.h"

#define STATS_JSON_SCHEMA 1

typedef struct bin_stats {
  uint64_t nmalloc, ndalloc, nfills, nflushes, nslabs;
  size_t curregs, curslabs;
  uint64_t lock_acquired, lock_contended, lock_wait_ns_total, lock_wait_ns_max;
} bin_stats_t;

typedef struct arena_stats {
  unsigned nthreads;
  unsigned ntcaches;
  size_t tcache_bytes; /* blocks sitting in thread caches: free to the program */
  size_t mapped_pages, active_pages, dirty_pages, retained_pages, large_allocated;
  uint64_t nmalloc_large, ndalloc_large, npurge, nmadvise, purged_pages;
  uint64_t lock_acquired, lock_contended, lock_wait_ns_total, lock_wait_ns_max;
  bin_stats_t bins[NSMALL];
} arena_stats_t;

static void read_lock(const lock_t *l, uint64_t *acq, uint64_t *cont, uint64_t *total, uint64_t *max) {
  *acq += l->n_acquired;
  *cont += l->n_contended;
  *total += l->wait_ns_total;
  if (l->wait_ns_max > *max) *max = l->wait_ns_max;
}

/* Adds arena a's numbers to s. */
static void arena_read(arena_t *a, arena_stats_t *s) {
  s->nthreads += atomic_load(&a->nthreads);
  lock_acquire(&a->extent_lock);
  s->mapped_pages += a->mapped_pages;
  s->active_pages += a->active_pages;
  s->dirty_pages += a->dirty.npages;
  s->retained_pages += a->retained.npages;
  s->large_allocated += a->large_allocated;
  s->nmalloc_large += a->nmalloc_large;
  s->ndalloc_large += a->ndalloc_large;
  s->npurge += a->npurge;
  s->nmadvise += a->nmadvise;
  s->purged_pages += a->purged_pages;
  lock_release(&a->extent_lock);
  read_lock(&a->extent_lock, &s->lock_acquired, &s->lock_contended, &s->lock_wait_ns_total,
            &s->lock_wait_ns_max);
  for (unsigned c = 0; c < NSMALL; c++) {
    bin_t *bin = &a->bins[c];
    bin_stats_t *b = &s->bins[c];
    lock_acquire(&bin->lock);
    b->nmalloc += bin->nmalloc;
    b->ndalloc += bin->ndalloc;
    b->nfills += bin->nfills;
    b->nflushes += bin->nflushes;
    b->nslabs += bin->nslabs;
    b->curregs += bin->curregs;
    b->curslabs += bin->curslabs;
    lock_release(&bin->lock);
    read_lock(&bin->lock, &b->lock_acquired, &b->lock_contended, &b->lock_wait_ns_total,
              &b->lock_wait_ns_max);
  }
}

static size_t small_allocated(const arena_stats_t *s) {
  size_t total = 0;
  for (unsigned c = 0; c < NSMALL; c++) total += s->bins[c].curregs * class_infos[c].size;
  return total;
}

static void counters_from(const arena_stats_t *s, tessera_counters *out) {
  size_t metadata = base_mapped_bytes() + pagemap_mapped_bytes();
  /* Blocks in thread caches count as allocated for the arenas, but the program does
   * not hold them. */
  size_t handed_out = small_allocated(s) + s->large_allocated;
  out->allocated = handed_out > s->tcache_bytes ? handed_out - s->tcache_bytes : 0;
  out->active = s->active_pages * PAGE;
  out->metadata = metadata;
  out->dirty = s->dirty_pages * PAGE;
  out->resident = out->active + out->dirty + base_mapped_bytes();
  out->mapped = s->mapped_pages * PAGE + base_mapped_bytes();
  out->retained = s->retained_pages * PAGE;
}

static void add_tcache(const tcache_t *tc, void *arg) {
  arena_stats_t *s = arg;
  s->ntcaches++;
  for (unsigned c = 0; c < NCACHED_MAX; c++) s->tcache_bytes += (size_t)tc->bins[c + 1].count * class_infos[c].size;
}

static void read_all(arena_stats_t *s) {
  memset(s, 0, sizeof(*s));
  if (!malloc_initialized()) return;
  for (unsigned i = 0; i < arenas_count(); i++)
    if (arenas[i] != NULL) arena_read(arenas[i], s);
  tcache_for_each(add_tcache, s);
}

TESSERA_EXPORT void tessera_get_counters(tessera_counters *out) {
  arena_stats_t s; /* ~5 KiB of stack */
  read_all(&s);
  counters_from(&s, out);
}

/* ---- printing ---- */

typedef struct emitter {
  tessera_write_cb *cb;
  void *opaque;
  char buf[4096];
  size_t len;
} emitter_t;

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

static double ms(uint64_t ns) { return (double)ns / 1e6; }

static void print_text(emitter_t *e, const arena_stats_t *s, const tessera_counters *k) {
  emit(e, "___ tessera %s statistics ___\n", TESSERA_VERSION_STRING);
  emit(e, "options:");
  for (unsigned i = 0; i < option_count; i++) {
    char v[64];
    option_format(&option_table[i], v, sizeof(v));
    emit(e, "%s%s:%s", i ? "," : " ", option_table[i].name, v);
  }
  emit(e, "\narenas: %u of at most %u, threads bound: %u, thread caches: %u holding %zu bytes\n",
       atomic_load(&narenas_created), narenas_limit, s->nthreads, s->ntcaches, s->tcache_bytes);
  emit(e, "allocated: %zu  active: %zu  metadata: %zu  resident: %zu  mapped: %zu  retained: %zu  dirty: %zu\n",
       k->allocated, k->active, k->metadata, k->resident, k->mapped, k->retained, k->dirty);
  emit(e, "large: allocated %zu, nmalloc %llu, ndalloc %llu\n", s->large_allocated,
       (unsigned long long)s->nmalloc_large, (unsigned long long)s->ndalloc_large);
  emit(e, "purging: passes %llu, madvise calls %llu, pages released %llu\n",
       (unsigned long long)s->npurge, (unsigned long long)s->nmadvise, (unsigned long long)s->purged_pages);
  emit(e, "extent lock: acquired %llu, contended %llu, wait total %.3f ms, max %.3f ms\n",
       (unsigned long long)s->lock_acquired, (unsigned long long)s->lock_contended,
       ms(s->lock_wait_ns_total), ms(s->lock_wait_ns_max));
  emit(e, "bins:     size  slab_kb  regs     nmalloc     ndalloc   curregs curslabs   nfills nflushes  util  lock_acq contended\n");
  for (unsigned c = 0; c < NSMALL; c++) {
    const bin_stats_t *b = &s->bins[c];
    if (b->nmalloc == 0 && b->curslabs == 0) continue;
    const class_info_t *ci = &class_infos[c];
    double util = b->curslabs ? (double)b->curregs / (double)(b->curslabs * ci->nregs) : 0.0;
    emit(e, "      %9u %8u %5u %11llu %11llu %9zu %8zu %8llu %8llu %5.2f %9llu %9llu\n", ci->size,
         ci->slab_pages * 4, ci->nregs, (unsigned long long)b->nmalloc, (unsigned long long)b->ndalloc,
         b->curregs, b->curslabs, (unsigned long long)b->nfills, (unsigned long long)b->nflushes, util,
         (unsigned long long)b->lock_acquired, (unsigned long long)b->lock_contended);
  }
  emit(e, "--- end of tessera statistics ---\n");
}

static void print_json(emitter_t *e, const arena_stats_t *s, const tessera_counters *k) {
  emit(e, "{\"tessera\": {\"version\": \"%s\", \"schema\": %d,\n", TESSERA_VERSION_STRING, STATS_JSON_SCHEMA);
  emit(e, " \"options\": {");
  for (unsigned i = 0; i < option_count; i++) {
    char v[64];
    option_format(&option_table[i], v, sizeof(v));
    bool quoted = option_table[i].type == OPTION_STRING;
    emit(e, "%s\"%s\": %s%s%s", i ? ", " : "", option_table[i].name, quoted ? "\"" : "", v, quoted ? "\"" : "");
  }
  emit(e, "},\n \"stats\": {\"allocated\": %zu, \"active\": %zu, \"metadata\": %zu, \"resident\": %zu, "
          "\"mapped\": %zu, \"retained\": %zu, \"dirty\": %zu},\n",
       k->allocated, k->active, k->metadata, k->resident, k->mapped, k->retained, k->dirty);
  emit(e, " \"arenas\": {\"narenas\": %u, \"limit\": %u, \"nthreads\": %u, \"tcaches\": %u, \"tcache_bytes\": %zu,\n",
       atomic_load(&narenas_created), narenas_limit, s->nthreads, s->ntcaches, s->tcache_bytes);
  emit(e, "  \"large\": {\"allocated\": %zu, \"nmalloc\": %llu, \"ndalloc\": %llu},\n", s->large_allocated,
       (unsigned long long)s->nmalloc_large, (unsigned long long)s->ndalloc_large);
  emit(e, "  \"purge\": {\"passes\": %llu, \"madvise\": %llu, \"pages\": %llu},\n", (unsigned long long)s->npurge,
       (unsigned long long)s->nmadvise, (unsigned long long)s->purged_pages);
  emit(e, "  \"extent_lock\": {\"acquired\": %llu, \"contended\": %llu, \"wait_ns_total\": %llu, \"wait_ns_max\": %llu},\n",
       (unsigned long long)s->lock_acquired, (unsigned long long)s->lock_contended,
       (unsigned long long)s->lock_wait_ns_total, (unsigned long long)s->lock_wait_ns_max);
  emit(e, "  \"bins\": [\n");
  for (unsigned c = 0; c < NSMALL; c++) {
    const bin_stats_t *b = &s->bins[c];
    const class_info_t *ci = &class_infos[c];
    emit(e, "   {\"size\": %u, \"slab_size\": %zu, \"nregs\": %u, \"nmalloc\": %llu, \"ndalloc\": %llu, "
            "\"curregs\": %zu, \"curslabs\": %zu, \"nslabs\": %llu, \"nfills\": %llu, \"nflushes\": %llu, "
            "\"lock\": {\"acquired\": %llu, \"contended\": %llu, \"wait_ns_total\": %llu, \"wait_ns_max\": %llu}}%s\n",
         ci->size, (size_t)ci->slab_pages * PAGE, ci->nregs, (unsigned long long)b->nmalloc,
         (unsigned long long)b->ndalloc, b->curregs, b->curslabs, (unsigned long long)b->nslabs,
         (unsigned long long)b->nfills, (unsigned long long)b->nflushes, (unsigned long long)b->lock_acquired,
         (unsigned long long)b->lock_contended, (unsigned long long)b->lock_wait_ns_total,
         (unsigned long long)b->lock_wait_ns_max, c + 1 < NSMALL ? "," : "");
  }
  emit(e, "  ]}}}\n");
}

TESSERA_EXPORT void tessera_stats_print(tessera_write_cb *write_cb, void *cbopaque, const char *opts) {
  static emitter_t static_emitter; /* 4 KiB: too big for small thread stacks */
  static lock_t print_lock;
  static arena_stats_t s;
  lock_acquire(&print_lock);
  emitter_t *e = &static_emitter;
  e->cb = write_cb ? write_cb : write_stderr_cb;
  e->opaque = cbopaque;
  e->len = 0;
  read_all(&s);
  tessera_counters k;
  counters_from(&s, &k);
  if (opts != NULL && strchr(opts, 'J') != NULL) print_json(e, &s, &k);
  else print_text(e, &s, &k);
  emit_flush(e);
  lock_release(&print_lock);
}

TESSERA_EXPORT void tessera_print_classes(tessera_write_cb *write_cb, void *cbopaque) {
  emitter_t e;
  e.cb = write_cb ? write_cb : write_stderr_cb;
  e.opaque = cbopaque;
  e.len = 0;
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

__attribute__((destructor)) static void stats_at_exit(void) {
  if (opt_stats_print && malloc_initialized()) tessera_stats_print(NULL, NULL, opt_stats_print_opts);
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
