/* SPDX-License-Identifier: MIT */
/*
 * The statistics printers: text and JSON (schema in docs/stats.md) from a snapshot
 * (stats.h), the size-class table, tessera_get_counters, and stats_print:true's report
 * at exit.
 */
#include <stdio.h>
#include <string.h>

#include "tessera.h"

#include "emitter.h"
#include "exact_class.h"
#include "extent.h"
#include "free_map.h"
#include "init.h"
#include "options.h"
#include "os.h"
#include "prof_meta.h"
#include "size_class.h"
#include "stats.h"

#define STATS_JSON_SCHEMA 2

/* What to print: opts letters (as jemalloc's malloc_stats_print): J JSON; leave out
 * g general (version, options), m merged arenas, a per-arena, b bins, l large, x locks,
 * t thread caches, T threads by name. */
typedef struct print_opts {
  bool json, general, merged, per_arena, bins, large, locks, tcaches, threads;
} print_opts_t;

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
  j_u64(e, "nlent", b->nlent);
  j_double(e, "util", bin_util(b, c));
  if (o->locks) j_lock(e, "lock", &b->lock);
  j_close(e, '}');
}

/* Purging: passes, madvise calls, pages released or lazily freed, and pages the program
 * needed again after they were given back. */
static void j_purge(emitter_t *e, const arena_stats_t *s) {
  j_open(e, "purge", '{');
  j_u64(e, "npurge", s->npurge);
  j_u64(e, "nmadvise", s->nmadvise);
  j_u64(e, "purged", s->purged);
  j_u64(e, "lazy_freed", s->lazy_freed);
  j_u64(e, "reused_muzzy", s->reused_muzzy);
  j_u64(e, "reused_released", s->reused_released);
  j_u64(e, "gathered", s->gathered);
  j_close(e, '}');
  j_u64(e, "refaulted", s->reused_muzzy + s->reused_released);
}

/* Large blocks, and per large size class only the classes that were ever used. */
static void j_large(emitter_t *e, const arena_stats_t *s) {
  j_open(e, "large", '{');
  j_u64(e, "allocated", s->large_allocated);
  j_u64(e, "nmalloc", s->large_nmalloc);
  j_u64(e, "ndalloc", s->large_ndalloc);
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

static void j_arena(emitter_t *e, const char *key, const arena_stats_t *s, const print_opts_t *o) {
  j_open(e, key, '{');
  j_u64(e, "nthreads", s->nthreads);
  j_u64(e, "pactive", s->pactive);
  j_u64(e, "pdirty", s->pdirty);
  j_u64(e, "pmuzzy", s->pmuzzy);
  j_u64(e, "pretained", s->pretained);
  j_u64(e, "mapped", s->mapped);
  j_purge(e, s);
  j_open(e, "small", '{');
  j_u64(e, "allocated", s->small_allocated);
  j_u64(e, "nmalloc", s->small_nmalloc);
  j_u64(e, "ndalloc", s->small_ndalloc);
  j_u64(e, "nrequests", s->small_nrequests);
  j_close(e, '}');
  if (o->large) j_large(e, s);
  j_open(e, "tcaches", '{');
  j_u64(e, "count", s->ntcaches);
  j_u64(e, "bytes", s->tcache_bytes);
  j_close(e, '}');
  if (o->locks) j_lock(e, "extent_lock", &s->extent_lock);
  if (o->bins) {
    j_open(e, "bins", '[');
    for (unsigned c = 0; c < NSMALL; c++)
      if (class_infos[c].size != 0) j_bin(e, &s->bins[c], c, o); /* an exact class's slot not made yet: none */
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
    if (d->type == OPTION_STRING || d->type == OPTION_ENUM) {
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

/* prof:true: the memory the heap profiler itself uses (prof_meta.h). */
static void j_prof(emitter_t *e) {
  j_open(e, "prof", '{');
  j_u64(e, "metadata", prof_meta_bytes());
  j_u64(e, "sampled_padding", prof_meta_sampled_padding());
  j_close(e, '}');
}

static void j_tcaches(emitter_t *e, const stats_snapshot_t *s) {
  j_open(e, "tcaches", '{');
  j_u64(e, "count", s->ntcaches);
  j_u64(e, "bytes", s->tcache_bytes);
  j_open(e, "classes", '[');
  for (unsigned c = 0; c < NCACHED_MAX; c++) {
    if (class_infos[c].size == 0) continue; /* an exact class's slot not made yet */
    j_open(e, NULL, '{');
    j_u64(e, "size", class_infos[c].size);
    j_u64(e, "cached", s->tcache_blocks[c]);
    j_u64(e, "capacity_max", s->tcache_capacity_max[c]);
    j_close(e, '}');
  }
  j_close(e, ']');
  j_close(e, '}');
}

static void j_threads(emitter_t *e, const stats_snapshot_t *s) {
  j_open(e, "threads", '[');
  for (unsigned i = 0; i < s->threads.n; i++) {
    const thread_counts_t *t = &s->threads.names[i];
    j_open(e, NULL, '{');
    j_escaped(e, "name", t->name, strlen(t->name));
    j_u64(e, "nthreads", t->nthreads);
    j_u64(e, "nexited", t->nexited);
    j_u64(e, "nrequests", t->nrequests);
    j_u64(e, "nfilled", t->nfilled);
    j_u64(e, "nflushed", t->nflushed);
    j_u64(e, "lock_wait_ns", t->lock_wait_ns);
    char arena[16];
    snprintf(arena, sizeof(arena), "%d", t->arena);
    j_raw(e, "arena", arena);
    j_close(e, '}');
  }
  j_close(e, ']');
}

/* Which process wrote the document: pid, command line, Unix time. */
static void j_process(emitter_t *e) {
  static char cmdline[1024]; /* guarded by the print snapshot's lock */
  long got = os_read_file("/proc/self/cmdline", cmdline, sizeof(cmdline)); /* NUL-separated */
  size_t n = got > 0 ? (size_t)got : 0;
  while (n > 0 && cmdline[n - 1] == '\0') n--;
  char pid[16];
  snprintf(pid, sizeof(pid), "%d", os_getpid());
  j_raw(e, "pid", pid);
  j_escaped(e, "cmdline", cmdline, n);
  j_u64(e, "time", os_wall_ns() / 1000000000u);
}

/* The exact classes made so far (exact_class.h): their sizes, in the order made. */
static void j_exact_classes(emitter_t *e) {
  j_open(e, "exact_classes", '[');
  for (unsigned k = 0, n = exact_class_count(); k < n; k++) {
    char v[16];
    snprintf(v, sizeof(v), "%u", class_infos[NSTATIC_SMALL + k].size);
    j_raw(e, NULL, v);
  }
  j_close(e, ']');
}

/* Gathering (extent.c): on or off, and the measure of the machine that decided it. */
static void j_gathering(emitter_t *e) {
  uint64_t fault_ns, moved_read_ns;
  bool on = extent_gather_state(&fault_ns, &moved_read_ns);
  j_open(e, "gathering", '{');
  j_raw(e, "on", on ? "true" : "false");
  j_u64(e, "page_fault_ns", fault_ns);
  j_u64(e, "moved_page_read_ns", moved_read_ns);
  j_close(e, '}');
}

static void t_gathering(emitter_t *e) {
  uint64_t fault_ns, moved_read_ns;
  bool on = extent_gather_state(&fault_ns, &moved_read_ns);
  if (fault_ns == 0) {
    emit(e, "gathering: %s\n", on ? "on, not measured yet (no large block could gather yet)"
                                    : "off (gather:never, hardened mode, or a kernel that cannot move pages)");
    return;
  }
  emit(e, "gathering: %s (a page fault %llu ns, a moved page's first read %llu ns)\n", on ? "on" : "off",
       (unsigned long long)fault_ns, (unsigned long long)moved_read_ns);
}

static void print_json(emitter_t *e, const stats_snapshot_t *s, const print_opts_t *o) {
  j_open(e, NULL, '{');
  j_open(e, "tessera", '{');
  j_str(e, "version", TESSERA_VERSION_STRING);
  j_u64(e, "schema", STATS_JSON_SCHEMA);
  j_process(e);
  j_u64(e, "ncpus", s->ncpus);
  j_exact_classes(e);
  j_gathering(e);
  if (o->general) j_options(e);
  j_totals(e, s);
  if (opt_prof) j_prof(e);
  j_open(e, "arenas", '{');
  j_u64(e, "narenas", s->narenas);
  j_u64(e, "automatic", s->nautomatic);
  j_u64(e, "nthreads", s->merged.nthreads);
  j_u64(e, "nthreads_peak", s->nthreads_peak);
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
  if (o->threads) j_threads(e, s);
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
  emit(e, "  bins:     size  slab_kb  regs     nmalloc     ndalloc   nrequests   curregs curslabs   nfills nflushes     nlent  util%s\n",
       o->locks ? "  lock_ops   lock_wait" : "");
  for (unsigned c = 0; c < NSMALL; c++) {
    const bin_stats_t *b = &s->bins[c];
    if (b->nmalloc == 0 && b->curslabs == 0 && b->nrequests == 0) continue;
    const class_info_t *ci = &class_infos[c];
    emit(e, "        %9u %8u %5u %11llu %11llu %11llu %9zu %8zu %8llu %8llu %9llu %5.2f", ci->size,
         ci->slab_pages * 4, ci->nregs, (unsigned long long)b->nmalloc, (unsigned long long)b->ndalloc,
         (unsigned long long)b->nrequests, b->curregs, b->curslabs, (unsigned long long)b->nfills,
         (unsigned long long)b->nflushes, (unsigned long long)b->nlent, bin_util(b, c));
    if (o->locks) emit(e, " %9llu %11llu", (unsigned long long)b->lock.num_ops, (unsigned long long)b->lock.num_wait);
    emit(e, "\n");
  }
}

static void t_arena(emitter_t *e, const char *title, const arena_stats_t *s, const print_opts_t *o) {
  emit(e, "%s: threads %u, thread caches %u holding %zu bytes\n", title, s->nthreads, s->ntcaches, s->tcache_bytes);
  emit(e, "  pages: active %zu, dirty %zu, muzzy %zu, retained %zu; mapped %zu bytes\n", s->pactive, s->pdirty,
       s->pmuzzy, s->pretained, s->mapped);
  emit(e, "  purging: passes %llu, madvise calls %llu, pages released %llu, lazily freed %llu; reused after purge: %llu lazily freed, %llu released; gathered under new blocks %llu\n",
       (unsigned long long)s->npurge, (unsigned long long)s->nmadvise, (unsigned long long)s->purged,
       (unsigned long long)s->lazy_freed, (unsigned long long)s->reused_muzzy,
       (unsigned long long)s->reused_released, (unsigned long long)s->gathered);
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
  emit(e, "thread caches: %u holding %zu bytes; size:blocks cached/largest bin per class:", s->ntcaches,
       s->tcache_bytes);
  for (unsigned c = 0; c < NCACHED_MAX; c++)
    if (s->tcache_blocks[c] != 0)
      emit(e, " %u:%llu/%u", class_infos[c].size, (unsigned long long)s->tcache_blocks[c], s->tcache_capacity_max[c]);
  emit(e, "\n");
}

static void t_threads(emitter_t *e, const stats_snapshot_t *s) {
  emit(e, "threads by name:       name  threads  exited   nrequests    nfilled   nflushed  lock_wait_ms  arena\n");
  for (unsigned i = 0; i < s->threads.n; i++) {
    const thread_counts_t *t = &s->threads.names[i];
    emit(e, "  %25s %8llu %7llu %11llu %10llu %10llu %13.3f %6d\n", t->name, (unsigned long long)t->nthreads,
         (unsigned long long)t->nexited, (unsigned long long)t->nrequests, (unsigned long long)t->nfilled,
         (unsigned long long)t->nflushed, ms(t->lock_wait_ns), t->arena);
  }
}

static void t_exact_classes(emitter_t *e) {
  unsigned n = exact_class_count();
  emit(e, "exact classes: %u of %u", n, NEXACT_CLASSES);
  for (unsigned k = 0; k < n; k++) {
    const class_info_t *ci = &class_infos[NSTATIC_SMALL + k];
    emit(e, "%s%u (for %u)", k ? ", " : ": ", ci->size, class_infos[ci->parent].size);
  }
  emit(e, "%s\n", opt_exact_classes && !opt_hardened ? "" : " (exact_classes off)");
}

static void print_text(emitter_t *e, const stats_snapshot_t *s, const print_opts_t *o) {
  const tessera_counters *k = &s->totals;
  emit(e, "___ tessera %s statistics ___\n", TESSERA_VERSION_STRING);
  if (o->general) t_general(e);
  emit(e, "pid %d, time %llu\n", os_getpid(), (unsigned long long)os_wall_ns() / 1000000000u);
  emit(e, "CPUs: %u, arenas: %u (%u automatic), threads bound: %u (at most %u at once), free map: %s\n",
       s->ncpus, s->narenas, s->nautomatic, s->merged.nthreads, s->nthreads_peak, free_map_enabled() ? "on" : "off");
  emit(e, "allocated: %zu  active: %zu  metadata: %zu  resident: %zu  mapped: %zu  retained: %zu  dirty: %zu  muzzy: %zu\n",
       k->allocated, k->active, k->metadata, k->resident, k->mapped, k->retained, k->dirty, s->merged.pmuzzy * PAGE);
  t_exact_classes(e);
  t_gathering(e);
  if (opt_prof)
    emit(e, "heap profiler: metadata: %zu  sampled-block padding: %zu\n", prof_meta_bytes(), prof_meta_sampled_padding());
  if (o->locks) t_lock(e, "base lock:", &s->base_lock);
  if (o->tcaches) t_tcaches(e, s);
  if (o->threads) t_threads(e, s);
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
  print_opts_t o = {false, true, true, true, true, true, true, true, true};
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
    case 'T': o.threads = false; break;
    default: break; /* jemalloc's other letters (d, e, h) have nothing to leave out here */
    }
  }
  return o;
}

TESSERA_EXPORT void tessera_stats_print(tessera_write_cb *write_cb, void *cbopaque, const char *opts) {
  static emitter_t e; /* 4 KiB: too big for small thread stacks; guarded by the lock */
  if (!boot_ensure()) return;
  print_opts_t o = parse_print_opts(opts);
  stats_snapshot_lock(&stats_print_snapshot);
  stats_refresh(&stats_print_snapshot);
  emitter_init(&e, write_cb, cbopaque);
  if (o.json) print_json(&e, &stats_print_snapshot, &o);
  else print_text(&e, &stats_print_snapshot, &o);
  emit_flush(&e);
  stats_snapshot_unlock(&stats_print_snapshot);
}

TESSERA_EXPORT void tessera_print_classes(tessera_write_cb *write_cb, void *cbopaque) {
  emitter_t e;
  emitter_init(&e, write_cb, cbopaque);
  if (!boot_ensure()) return;
  emit(&e, "class      size  kind   slab_bytes  regions  waste_bytes  waste_pct\n");
  for (unsigned c = 0; c < NCACHED_MAX; c++) {
    const class_info_t *ci = &class_infos[c];
    if (ci->size == 0) continue; /* an exact class's slot not made yet */
    size_t slab = (size_t)ci->slab_pages * PAGE;
    size_t waste = slab - (size_t)ci->nregs * ci->size;
    emit(&e, "%5u %9u  %-5s %11zu %8u %12zu %9.2f\n", c, ci->size, c < NSTATIC_SMALL ? "small" : "exact",
         slab, ci->nregs, waste, slab ? 100.0 * (double)waste / (double)slab : 0.0);
  }
  emit(&e, "larger sizes: whole pages (4096 bytes), one extent each\n");
  emit_flush(&e);
}

TESSERA_EXPORT void tessera_get_counters(tessera_counters *out) {
  if (!boot_ensure()) {
    memset(out, 0, sizeof(*out));
    return;
  }
  stats_snapshot_lock(&stats_print_snapshot);
  stats_refresh(&stats_print_snapshot);
  *out = stats_print_snapshot.totals;
  stats_snapshot_unlock(&stats_print_snapshot);
}

/* stats_print:true writes through a duplicate of stderr taken at start-up: many
 * programs (coreutils among them) close fd 2 in an atexit handler, which runs before
 * this library's destructor. */
static int exit_stats_fd = -1;

/* Runs at load, before main (and so before any atexit handler). With stats_prefix the
 * file is opened at exit instead (the pid is the exiting process's, fork included). */
__attribute__((constructor)) static void stats_print_at_start(void) {
  if (boot_ensure() && opt_stats_print && opt_stats_prefix[0] == '\0') exit_stats_fd = os_dup_stderr();
}

/* "<prefix>.<pid>.json" (or .txt): the file stats_print writes to, created now; -1 with
 * a one-line message (then the statistics go to stderr) if it cannot be. */
static int open_stats_file(bool json) {
  char path[sizeof(opt_stats_prefix) + 32];
  snprintf(path, sizeof(path), "%s.%d.%s", opt_stats_prefix, os_getpid(), json ? "json" : "txt");
  int fd = os_open_write(path, false);
  if (fd < 0) {
    char msg[sizeof(path) + 80];
    snprintf(msg, sizeof(msg), "tessera: stats_prefix: cannot create %s; statistics go to stderr\n", path);
    os_write_stderr(msg);
  }
  return fd;
}

static void write_exit_fd_cb(void *opaque, const char *text) {
  (void)opaque;
  os_write_fd(exit_stats_fd, text);
}

__attribute__((destructor)) static void stats_at_exit(void) {
  if (!opt_stats_print || !boot_done()) return;
  bool to_file = opt_stats_prefix[0] != '\0';
  if (to_file) exit_stats_fd = open_stats_file(strchr(opt_stats_print_opts, 'J') != NULL);
  tessera_stats_print(exit_stats_fd >= 0 ? write_exit_fd_cb : NULL, NULL, opt_stats_print_opts);
  if (to_file && exit_stats_fd >= 0) os_close(exit_stats_fd);
}
