/* SPDX-License-Identifier: MIT */
/*
 * The control interface: tessera_ctl(name, oldp, oldlenp, newp, newlen) over the tree of
 * names documented in docs/ctl.md, and name -> MIB translation for repeated queries.
 *
 * The tree: an interior node has named children (an array ending with a {0} entry), one
 * indexed child (a number in the name, <i> for arenas, <j> for bins), or the options
 * table as children (opt.*, then jemalloc's opt.* names that are no option here). A leaf
 * has a type and a read and/or write function, or one function for the whole call. A MIB
 * component is the child's position for named children, the number itself for indexed
 * ones, the table index for options (then option_count + k for jemalloc's names).
 *
 * Return values are jemalloc's (mallctl(3)): 0; ENOENT for an unknown name or index;
 * EINVAL for a wrong *oldlenp or newlen (as much of the value as fits is still read);
 * EPERM for writing a read-only value or reading/writing a void one; EAGAIN when memory
 * is short; EFAULT when an action itself fails.
 *
 * Statistics (stats.*) are read from a snapshot that writing `epoch` refreshes.
 */
#include "prof_hooks.h"
#include "ctl.h"

#include <errno.h>
#include <stddef.h>
#include <string.h>

#include "arena.h"
#include "config.h"
#include "control.h"
#include "exact_class.h"
#include "free_map.h"
#include "init.h"
#include "options.h"
#include "size_class.h"
#include "stats.h"
#include "tcache.h"
#include "thread.h"

typedef enum ctl_kind { NODE_NAMED, NODE_INDEXED, NODE_OPTIONS, NODE_LEAF } ctl_kind_t;

#define CTL_MAX_DEPTH 8
#define CTL_MAX_INDICES 2

typedef struct ctl_node ctl_node_t;
/* idx: the numbers of the name's indexed components, in order. */
typedef int ctl_read_fn(const ctl_node_t *n, const size_t *idx, void *out);
typedef int ctl_write_fn(const ctl_node_t *n, const size_t *idx, const void *in);
/* A leaf with a protocol of its own (arenas.lookup: a write whose result is read). */
typedef int ctl_call_fn(const ctl_node_t *n, const size_t *idx, void *oldp, size_t *oldlenp, void *newp,
                        size_t newlen);

/* What the tree's nodes name instead of pointers (the tables after the functions map
 * them to functions and child arrays): a pointer in static data is written by the dynamic
 * loader when the library loads (a relocation), and every page of such tables then
 * becomes a private copy in every process, whether it calls mallctl or not; tables of
 * numbers and inline names stay in the library's file, unread until the first call. */
#define CTL_READERS(X)                                                                                  \
  X(read_arena_decay_ms) X(read_arena_dss) X(read_arena_initialized) X(read_arena_retained)           \
  X(read_arena_stat) X(read_arenas_create) X(read_arenas_decay_ms) X(read_base_lock) X(read_bin_info) \
  X(read_bin_stat) X(read_config_malloc_conf) X(read_constant_bool) X(read_constant_size)             \
  X(read_constant_u32) X(read_constant_unsigned) X(read_epoch) X(read_free_map) X(read_lextent_size)  \
  X(read_lextent_stat) X(read_narenas) X(read_nbins) X(read_nhbins) X(read_nthreads_peak)             \
  X(read_opt_retain) X(read_option) X(read_prof_lg_sample) X(read_stats_muzzy) X(read_switch)         \
  X(read_tcache_create) X(read_tcache_enabled) X(read_tcache_max) X(read_thread_arena)                \
  X(read_thread_counter) X(read_thread_counter_pointer) X(read_total) X(read_version)
#define CTL_WRITERS(X)                                                                                  \
  X(do_arena_decay) X(do_arena_purge) X(do_tcache_flush) X(write_arena_decay_ms) X(write_arena_dss)  \
  X(write_arenas_decay_ms) X(write_epoch) X(write_prof_dump) X(write_prof_reset) X(write_switch)     \
  X(write_tcache_enabled) X(write_tcache_flush) X(write_thread_arena)
#define CTL_CALLS(X) X(call_arenas_lookup)
#define CTL_INDEX_CHECKS(X) X(arena_or_legacy_index_ok) X(bin_index_ok) X(lextent_index_ok)
#define CTL_TABLES(X)                                                                                   \
  X(bin_lock_nodes) X(extent_lock_nodes) X(base_lock_nodes) X(stats_bin_nodes) X(stats_bin_index)    \
  X(stats_lextent_nodes) X(stats_lextent_index) X(stats_small_nodes) X(stats_large_nodes)             \
  X(stats_arena_mutex_nodes) X(stats_arena_nodes) X(stats_arena_index) X(stats_mutex_nodes)           \
  X(stats_nodes) X(arena_nodes) X(arena_index) X(arenas_bin_nodes) X(arenas_bin_index)               \
  X(arenas_lextent_nodes) X(arenas_lextent_index) X(arenas_nodes) X(thread_tcache_nodes)              \
  X(thread_nodes) X(config_nodes) X(tcache_nodes) X(prof_nodes) X(root_nodes)

/* Number 0 is "none" in each list. */
#define AS_READER(f) R_##f,
#define AS_WRITER(f) W_##f,
#define AS_CALL(f) C_##f,
#define AS_INDEX_CHECK(f) I_##f,
#define AS_TABLE(f) T_##f,
enum { R_NULL, CTL_READERS(AS_READER) };
enum { W_NULL, CTL_WRITERS(AS_WRITER) };
enum { C_NULL, CTL_CALLS(AS_CALL) };
enum { I_NULL, CTL_INDEX_CHECKS(AS_INDEX_CHECK) };
enum { T_NULL, CTL_TABLES(AS_TABLE) };

#define CTL_NAME_MAX 32

struct ctl_node {
  char name[CTL_NAME_MAX]; /* for an indexed node: its placeholder, "<i>" or "<j>"; "" ends an array */
  ctl_kind_t kind;
  uint8_t children;  /* T_*: NAMED, the array of children; INDEXED, the one child's */
  uint8_t index_ok;  /* I_*: INDEXED, which indices exist */
  uint8_t read;      /* R_*: LEAF; none for actions */
  uint8_t write;     /* W_*: LEAF; none for read-only values */
  uint8_t call;      /* C_*: LEAF, does the whole call instead of read and write */
  bool read_after_write; /* LEAF: old value = the value after the write (epoch) */
  bool write_bare;   /* LEAF: a call with no value at all writes NULL (prof.dump) */
  ctl_type_t type;   /* LEAF */
  /* LEAF: the type a value had before it took jemalloc's: a read passing that size
   * still gets the old type, so that readers written for it keep working */
  ctl_type_t own_type;
  size_t offset; /* LEAF: where read_locked finds the value in its record */
  size_t param;  /* LEAF: what its functions are told: a constant's value, an option's
                    index, or which of two values (0 or 1) */
};

static size_t type_size(ctl_type_t t) {
  switch (t) {
  case CTL_VOID: return 0;
  case CTL_BOOL: return sizeof(bool);
  case CTL_UNSIGNED: return sizeof(unsigned);
  case CTL_U32: return sizeof(uint32_t);
  case CTL_SIZE: return sizeof(size_t);
  case CTL_SSIZE: return sizeof(ssize_t);
  case CTL_U64: return sizeof(uint64_t);
  case CTL_STRING: return sizeof(const char *);
  case CTL_U64_POINTER: return sizeof(uint64_t *);
  case CTL_UNSIGNED_OF_POINTER: return sizeof(unsigned);
  }
  return 0;
}

const char *ctl_type_name(ctl_type_t t) {
  static const char *const names[] = {"void",    "bool",     "unsigned",     "uint32_t",   "size_t",
                                      "ssize_t", "uint64_t", "const char *", "uint64_t *", "unsigned, void *"};
  return names[t];
}

/* ---- readers and writers ---- */

static int put_u64(void *out, uint64_t v) { memcpy(out, &v, sizeof(v)); return 0; }
static int put_size(void *out, size_t v) { memcpy(out, &v, sizeof(v)); return 0; }
static int put_unsigned(void *out, unsigned v) { memcpy(out, &v, sizeof(v)); return 0; }
static int put_string(void *out, const char *v) { memcpy(out, &v, sizeof(v)); return 0; }

static int read_version(const ctl_node_t *n, const size_t *idx, void *out) {
  (void)n, (void)idx;
  return put_string(out, TESSERA_VERSION_STRING);
}

/* Refreshes the snapshot the first time any statistic is read. */
static void snapshot_lock(void) {
  boot_ensure();
  stats_snapshot_lock(&stats_ctl_snapshot);
  if (stats_ctl_snapshot.epoch == 0) stats_refresh(&stats_ctl_snapshot);
}

static int read_epoch(const ctl_node_t *n, const size_t *idx, void *out) {
  (void)n, (void)idx;
  snapshot_lock();
  uint64_t epoch = stats_ctl_snapshot.epoch;
  stats_snapshot_unlock(&stats_ctl_snapshot);
  return put_u64(out, epoch);
}

static int write_epoch(const ctl_node_t *n, const size_t *idx, const void *in) {
  (void)n, (void)idx, (void)in;
  if (!boot_ensure()) return EAGAIN;
  stats_snapshot_lock(&stats_ctl_snapshot);
  stats_refresh(&stats_ctl_snapshot);
  stats_snapshot_unlock(&stats_ctl_snapshot);
  return 0;
}

/* Copies the leaf's value from base + n->offset under the snapshot lock. */
static int read_snapshot_field(const ctl_node_t *n, const void *base, void *out) {
  memcpy(out, (const char *)base + n->offset, type_size(n->type));
  return 0;
}

/* Reads node n's field of the snapshot record at base, under the snapshot's lock. */
static int read_locked(const ctl_node_t *n, const void *base, void *out) {
  snapshot_lock();
  read_snapshot_field(n, base, out);
  stats_snapshot_unlock(&stats_ctl_snapshot);
  return 0;
}

static int read_total(const ctl_node_t *n, const size_t *idx, void *out) {
  (void)idx;
  return read_locked(n, &stats_ctl_snapshot.totals, out);
}

/* Arena i's numbers; i = arenas.narenas is the merged ones, as ARENAS_ALL: jemalloc
 * before 5 had no MALLCTL_ARENAS_ALL and its programs read the sums there (jemalloc 5
 * still accepts it). */
static const arena_stats_t *snapshot_arena(size_t i) {
  return stats_arena(&stats_ctl_snapshot, i == control_narenas() ? ARENAS_ALL : i);
}

static int read_arena_stat(const ctl_node_t *n, const size_t *idx, void *out) {
  return read_locked(n, snapshot_arena(idx[0]), out);
}

static int read_bin_stat(const ctl_node_t *n, const size_t *idx, void *out) {
  return read_locked(n, &snapshot_arena(idx[0])->bins[idx[1]], out);
}

static int read_base_lock(const ctl_node_t *n, const size_t *idx, void *out) {
  (void)idx;
  return read_locked(n, &stats_ctl_snapshot, out); /* the node's offset includes base_lock's */
}

static int read_stats_muzzy(const ctl_node_t *n, const size_t *idx, void *out) {
  (void)n, (void)idx;
  snapshot_lock();
  size_t v = stats_ctl_snapshot.merged.pmuzzy * PAGE;
  stats_snapshot_unlock(&stats_ctl_snapshot);
  return put_size(out, v);
}

/* stats.arenas.<i>.retained: jemalloc's name for the retained pages, in bytes. */
static int read_arena_retained(const ctl_node_t *n, const size_t *idx, void *out) {
  (void)n;
  snapshot_lock();
  size_t v = snapshot_arena(idx[0])->pretained * PAGE;
  stats_snapshot_unlock(&stats_ctl_snapshot);
  return put_size(out, v);
}

/* arena.<i>.initialized: whether the arena existed at the last refresh (jemalloc's
 * meaning: its statistics are there to read; an arena made since reads false until the
 * next `epoch`, as in jemalloc). ARENAS_ALL and arenas.narenas (every arena's old name,
 * action_arena) stand for the merged numbers: always. */
static int read_arena_initialized(const ctl_node_t *n, const size_t *idx, void *out) {
  (void)n;
  bool v = true;
  if (idx[0] != ARENAS_ALL && idx[0] != control_narenas()) {
    snapshot_lock();
    v = stats_arena(&stats_ctl_snapshot, idx[0])->initialized;
    stats_snapshot_unlock(&stats_ctl_snapshot);
  }
  memcpy(out, &v, sizeof(v));
  return 0;
}

static int read_narenas(const ctl_node_t *n, const size_t *idx, void *out) {
  (void)n, (void)idx;
  return put_unsigned(out, control_narenas());
}

static int read_arenas_create(const ctl_node_t *n, const size_t *idx, void *out) {
  (void)n, (void)idx;
  unsigned index;
  int err = control_arena_create(&index);
  if (err != 0) return err;
  return put_unsigned(out, index);
}

static int read_constant_size(const ctl_node_t *n, const size_t *idx, void *out) {
  (void)idx;
  return put_size(out, n->param);
}

static int read_constant_u32(const ctl_node_t *n, const size_t *idx, void *out) {
  (void)idx;
  uint32_t v = (uint32_t)n->param;
  memcpy(out, &v, sizeof(v));
  return 0;
}

static int read_constant_unsigned(const ctl_node_t *n, const size_t *idx, void *out) {
  (void)idx;
  return put_unsigned(out, (unsigned)n->param);
}

static int read_nbins(const ctl_node_t *n, const size_t *idx, void *out) {
  (void)n, (void)idx;
  return put_unsigned(out, NSTATIC_SMALL + exact_class_count());
}

/* arenas.nhbins: the size classes a thread cache keeps blocks of: the small classes up
 * to tcache_max, then the large classes the large-block cache keeps (large_cache.h: up
 * to tcache_large_max, none in hardened mode). junk and zero bypass the caches: none. */
static int read_nhbins(const ctl_node_t *n, const size_t *idx, void *out) {
  (void)n, (void)idx;
  if (!boot_ensure()) return EAGAIN;
  unsigned count = 0;
  if (opt_tcache && !opt_junk && !opt_zero) {
    unsigned nbins = NSTATIC_SMALL + exact_class_count();
    for (unsigned j = 0; j < nbins; j++) count += class_infos[j].size <= opt_tcache_max;
    for (unsigned j = 0; j < LARGE_CACHE_CLASSES && !opt_hardened; j++)
      count += class_to_size(NSMALL + j) <= opt_tcache_large_max;
  }
  return put_unsigned(out, count);
}

static int read_tcache_max(const ctl_node_t *n, const size_t *idx, void *out) {
  (void)n, (void)idx;
  return put_size(out, opt_tcache ? opt_tcache_max : 0);
}

static int read_bin_info(const ctl_node_t *n, const size_t *idx, void *out) {
  if (!boot_ensure()) return EAGAIN;
  const class_info_t *ci = &class_infos[idx[0]];
  if (n->param == 0) return put_size(out, ci->size);
  if (n->param == 1) return put_size(out, (size_t)ci->slab_pages * PAGE);
  uint32_t nregs = ci->nregs;
  memcpy(out, &nregs, sizeof(nregs));
  return 0;
}

static int read_lextent_size(const ctl_node_t *n, const size_t *idx, void *out) {
  (void)n;
  return put_size(out, class_to_size(NSMALL + (unsigned)idx[0]));
}

static int read_lextent_stat(const ctl_node_t *n, const size_t *idx, void *out) {
  return read_locked(n, &snapshot_arena(idx[0])->lextents[idx[1]], out);
}

static int read_arenas_decay_ms(const ctl_node_t *n, const size_t *idx, void *out) {
  (void)idx;
  ssize_t v;
  control_default_decay_ms(n->param != 0, &v, NULL);
  memcpy(out, &v, sizeof(v));
  return 0;
}

static int write_arenas_decay_ms(const ctl_node_t *n, const size_t *idx, const void *in) {
  (void)idx;
  ssize_t v;
  memcpy(&v, in, sizeof(v));
  return control_default_decay_ms(n->param != 0, NULL, &v) == 0 ? 0 : EFAULT;
}

/* Maps the core's EINVAL (no such arena, bad value) to jemalloc's EFAULT for actions. */
static int action_result(int err) { return err == EINVAL ? EFAULT : err; }

/* arena.<narenas>.purge and .decay act on every arena: jemalloc before 5 had no
 * MALLCTL_ARENAS_ALL and its programs name all arenas so; jemalloc 5 still accepts it. */
static unsigned action_arena(size_t i) { return i == control_narenas() ? ARENAS_ALL : (unsigned)i; }

static int do_arena_purge(const ctl_node_t *n, const size_t *idx, const void *in) {
  (void)n, (void)in;
  return action_result(control_arena_purge(action_arena(idx[0])));
}

static int do_arena_decay(const ctl_node_t *n, const size_t *idx, const void *in) {
  (void)n, (void)in;
  return action_result(control_arena_decay(action_arena(idx[0])));
}

static int copy_out(const void *value, size_t size, void *oldp, size_t *oldlenp);

/* arenas.lookup: the address written (a void *), the index of its arena read, as in
 * jemalloc: EINVAL for an address in no block (or inside a large block, past its first
 * and last pages), or for a value of another size. */
static int call_arenas_lookup(const ctl_node_t *n, const size_t *idx, void *oldp, size_t *oldlenp, void *newp,
                              size_t newlen) {
  (void)n, (void)idx;
  const void *p = NULL;
  unsigned index;
  if (newp != NULL || newlen != 0) {
    if (newp == NULL || newlen != sizeof(p)) return EINVAL;
    memcpy(&p, newp, sizeof(p));
  }
  if (!boot_done() || !arena_index_of(p, &index)) return EINVAL;
  return copy_out(&index, sizeof(index), oldp, oldlenp);
}

static int read_arena_decay_ms(const ctl_node_t *n, const size_t *idx, void *out) {
  ssize_t v;
  if (idx[0] == ARENAS_ALL) return EFAULT;
  int err = control_arena_decay_ms((unsigned)idx[0], n->param != 0, &v, NULL);
  if (err != 0) return action_result(err);
  memcpy(out, &v, sizeof(v));
  return 0;
}

static int write_arena_decay_ms(const ctl_node_t *n, const size_t *idx, const void *in) {
  ssize_t v;
  memcpy(&v, in, sizeof(v));
  if (idx[0] == ARENAS_ALL) return EFAULT;
  return action_result(control_arena_decay_ms((unsigned)idx[0], n->param != 0, NULL, &v));
}

static int read_thread_arena(const ctl_node_t *n, const size_t *idx, void *out) {
  (void)n, (void)idx;
  return put_unsigned(out, control_thread_arena_get());
}

static int write_thread_arena(const ctl_node_t *n, const size_t *idx, const void *in) {
  (void)n, (void)idx;
  unsigned v;
  memcpy(&v, in, sizeof(v));
  return action_result(control_thread_arena_set(v));
}

static int do_tcache_flush(const ctl_node_t *n, const size_t *idx, const void *in) {
  (void)n, (void)idx, (void)in;
  tcache_flush_thread();
  return 0;
}

static int read_free_map(const ctl_node_t *n, const size_t *idx, void *out) {
  (void)n, (void)idx;
  bool v = free_map_enabled();
  memcpy(out, &v, sizeof(v));
  return 0;
}

static int read_tcache_enabled(const ctl_node_t *n, const size_t *idx, void *out) {
  (void)n, (void)idx;
  bool v = tcache_thread_enabled();
  memcpy(out, &v, sizeof(v));
  return 0;
}

static int write_tcache_enabled(const ctl_node_t *n, const size_t *idx, const void *in) {
  (void)n, (void)idx;
  bool v;
  memcpy(&v, in, sizeof(v));
  if (v && !opt_tcache) return EFAULT; /* caches are off for the whole process (tcache:false) */
  tcache_thread_enable(v);
  return 0;
}

static int read_thread_counter(const ctl_node_t *n, const size_t *idx, void *out) {
  (void)idx;
  uint64_t allocated = 0, deallocated = 0;
  if (boot_done()) tcache_thread_counters(&allocated, &deallocated);
  return put_u64(out, n->param ? deallocated : allocated);
}

/* thread.allocatedp / deallocatedp: where the thread's published counters live
 * (thread.h): a program reads them without a call, as jemalloc's users do. */
static int read_thread_counter_pointer(const ctl_node_t *n, const size_t *idx, void *out) {
  (void)idx;
  if (!boot_ensure()) return EAGAIN;
  uint64_t allocated, deallocated; /* published: *p equals thread.allocated now */
  tcache_thread_counters(&allocated, &deallocated);
  uint64_t *p = n->param ? &tls_thread.deallocated : &tls_thread.allocated;
  memcpy(out, &p, sizeof(p));
  return 0;
}

static int read_nthreads_peak(const ctl_node_t *n, const size_t *idx, void *out) {
  (void)n, (void)idx;
  snapshot_lock(); /* a refresh samples the bound threads too */
  stats_snapshot_unlock(&stats_ctl_snapshot);
  return put_unsigned(out, arenas_nthreads_peak());
}

/* Boolean switches the core reads and sets through one hook, (*old, *new_value) -> 0
 * or an error (control.h, prof_hooks.h); a leaf's param picks the hook. */
typedef int bool_switch_fn(bool *old, const bool *new_value);
enum { SWITCH_BACKGROUND_THREAD, SWITCH_PROF_ACTIVE };
static bool_switch_fn *const bool_switches[] = {control_background_thread, prof_ctl_active};

static int read_switch(const ctl_node_t *n, const size_t *idx, void *out) {
  (void)idx;
  bool v;
  int err = bool_switches[n->param](&v, NULL);
  if (err == 0) memcpy(out, &v, sizeof(v));
  return err;
}

static int write_switch(const ctl_node_t *n, const size_t *idx, const void *in) {
  (void)idx;
  bool v;
  memcpy(&v, in, sizeof(v));
  return bool_switches[n->param](NULL, &v);
}

static int read_constant_bool(const ctl_node_t *n, const size_t *idx, void *out) {
  (void)idx;
  bool v = n->param != 0;
  memcpy(out, &v, sizeof(v));
  return 0;
}

static int read_config_malloc_conf(const ctl_node_t *n, const size_t *idx, void *out) {
  (void)n, (void)idx;
  return put_string(out, option_builtin_conf());
}

/* arena.<i>.dss: tessera maps with mmap only, as jemalloc built without sbrk: "disabled"
 * reads back and is accepted; any other precedence is EFAULT, jemalloc's answer there. */
static int read_arena_dss(const ctl_node_t *n, const size_t *idx, void *out) {
  (void)n, (void)idx;
  return put_string(out, "disabled");
}

static int write_arena_dss(const ctl_node_t *n, const size_t *idx, const void *in) {
  (void)n, (void)idx;
  const char *v;
  memcpy(&v, in, sizeof(v));
  return v != NULL && strcmp(v, "disabled") == 0 ? 0 : EFAULT;
}

/*
 * tcache.create / flush / destroy: jemalloc's explicit caches. tessera keeps one cache
 * per thread and no others: an identifier is a number MALLOCX_TCACHE(id) accepts, and
 * allocations made with it use the calling thread's own cache. flush and destroy return
 * the calling thread's cached blocks to the arenas (what jemalloc does for the explicit
 * cache's blocks); destroy also frees the identifier. Unknown identifiers: EFAULT.
 */
#define TCACHE_IDS_MAX 4093 /* MALLOCX_TCACHE(id) keeps id + 2 in 12 bits */
static _Atomic uint64_t tcache_ids[(TCACHE_IDS_MAX + 63) / 64];

static int read_tcache_create(const ctl_node_t *n, const size_t *idx, void *out) {
  (void)n, (void)idx;
  for (unsigned w = 0; w < (TCACHE_IDS_MAX + 63) / 64; w++) {
    uint64_t bits = atomic_load(&tcache_ids[w]);
    while (~bits != 0) {
      unsigned b = (unsigned)__builtin_ctzll(~bits);
      if (w * 64 + b >= TCACHE_IDS_MAX) return EAGAIN;
      if (atomic_compare_exchange_weak(&tcache_ids[w], &bits, bits | (1ull << b))) return put_unsigned(out, w * 64 + b);
    }
  }
  return EAGAIN;
}

static bool tcache_id_live(unsigned id) {
  return id < TCACHE_IDS_MAX && (atomic_load(&tcache_ids[id / 64]) >> (id % 64) & 1) != 0;
}

static int write_tcache_flush(const ctl_node_t *n, const size_t *idx, const void *in) {
  (void)idx;
  unsigned id;
  memcpy(&id, in, sizeof(id));
  if (!tcache_id_live(id)) return EFAULT;
  tcache_flush_thread();
  if (n->param) atomic_fetch_and(&tcache_ids[id / 64], ~(1ull << (id % 64))); /* destroy */
  return 0;
}

/* ---- index checks ---- */

/* Arena indices: an existing arena, or ARENAS_ALL (every arena, or the merged
 * statistics). */
static bool arena_index_ok(size_t i) {
  return i == ARENAS_ALL || i < control_narenas();
}

/* arena.<i> and stats.arenas.<i>: also <i> = arenas.narenas, every arena's old name
 * (action_arena, snapshot_arena). */
static bool arena_or_legacy_index_ok(size_t i) { return arena_index_ok(i) || i == control_narenas(); }

/* The bins: the static classes, then the exact classes made so far (exact_class.h), so
 * that arenas.nbins and arenas.bin.<j>.size list every class a size may map to now. */
static bool bin_index_ok(size_t i) { return i < NSTATIC_SMALL + exact_class_count(); }
static bool lextent_index_ok(size_t i) { return i < NLARGE_CLASSES; }

/* ---- the tree ---- */

/* LEAF: a value at offset in a snapshot record; PARAM_LEAF: one whose functions are
 * given param. */
#define LEAF(nm, t, rd, wr, off) {.name = nm, .kind = NODE_LEAF, .type = t, .read = R_##rd, .write = W_##wr, .offset = off}
#define PARAM_LEAF(nm, t, rd, wr, prm) {.name = nm, .kind = NODE_LEAF, .type = t, .read = R_##rd, .write = W_##wr, .param = prm}
#define ACTION(nm, fn) {.name = nm, .kind = NODE_LEAF, .type = CTL_VOID, .write = W_##fn}
#define NAMED(nm, kids) {.name = nm, .kind = NODE_NAMED, .children = T_##kids}
#define INDEXED(nm, kid, ok) {.name = nm, .kind = NODE_INDEXED, .children = T_##kid, .index_ok = I_##ok}
#define END {.name = "", .kind = NODE_LEAF}

#define TOTAL(nm, field) LEAF(nm, CTL_SIZE, read_total, NULL, offsetof(tessera_counters, field))
#define ASTAT(nm, t, field) LEAF(nm, t, read_arena_stat, NULL, offsetof(arena_stats_t, field))
#define BSTAT(nm, t, field) LEAF(nm, t, read_bin_stat, NULL, offsetof(bin_stats_t, field))
#define LOCKSTAT(rd, base, nm, field) \
  LEAF(#nm, CTL_U64, rd, NULL, offsetof(base, field) + offsetof(stats_lock_t, nm))

#define LOCK_NODES(rd, base, field)                                                             \
  {LOCKSTAT(rd, base, num_ops, field), LOCKSTAT(rd, base, num_wait, field),                     \
   LOCKSTAT(rd, base, total_wait_time, field), LOCKSTAT(rd, base, max_wait_time, field), END}

static const ctl_node_t bin_lock_nodes[] = LOCK_NODES(read_bin_stat, bin_stats_t, lock);
static const ctl_node_t extent_lock_nodes[] = LOCK_NODES(read_arena_stat, arena_stats_t, extent_lock);
static const ctl_node_t base_lock_nodes[] = LOCK_NODES(read_base_lock, stats_snapshot_t, base_lock);

static const ctl_node_t stats_bin_nodes[] = {
    BSTAT("nmalloc", CTL_U64, nmalloc),     BSTAT("ndalloc", CTL_U64, ndalloc),
    BSTAT("nrequests", CTL_U64, nrequests), BSTAT("curregs", CTL_SIZE, curregs),
    BSTAT("curslabs", CTL_SIZE, curslabs),  BSTAT("nslabs", CTL_U64, nslabs),
    BSTAT("nfills", CTL_U64, nfills),       BSTAT("nflushes", CTL_U64, nflushes),
    BSTAT("nlent", CTL_U64, nlent),
    NAMED("mutex", bin_lock_nodes),         END};
static const ctl_node_t stats_bin_index[] = {INDEXED("<j>", stats_bin_nodes, bin_index_ok), END};

#define LSTAT(nm, t, field) LEAF(nm, t, read_lextent_stat, NULL, offsetof(lextent_stats_t, field))
static const ctl_node_t stats_lextent_nodes[] = {
    LSTAT("nmalloc", CTL_U64, nmalloc), LSTAT("ndalloc", CTL_U64, ndalloc),
    LSTAT("curlextents", CTL_SIZE, curlextents), END};
static const ctl_node_t stats_lextent_index[] = {INDEXED("<j>", stats_lextent_nodes, lextent_index_ok), END};

static const ctl_node_t stats_small_nodes[] = {
    ASTAT("allocated", CTL_SIZE, small_allocated), ASTAT("nmalloc", CTL_U64, small_nmalloc),
    ASTAT("ndalloc", CTL_U64, small_ndalloc), ASTAT("nrequests", CTL_U64, small_nrequests), END};
static const ctl_node_t stats_large_nodes[] = {
    ASTAT("allocated", CTL_SIZE, large_allocated), ASTAT("nmalloc", CTL_U64, large_nmalloc),
    ASTAT("ndalloc", CTL_U64, large_ndalloc), END};
static const ctl_node_t stats_arena_mutex_nodes[] = {NAMED("extents", extent_lock_nodes), END};

static const ctl_node_t stats_arena_nodes[] = {
    ASTAT("nthreads", CTL_UNSIGNED, nthreads),
    ASTAT("uptime", CTL_U64, uptime_ns),
    ASTAT("pactive", CTL_SIZE, pactive),
    ASTAT("pdirty", CTL_SIZE, pdirty),
    ASTAT("pmuzzy", CTL_SIZE, pmuzzy),
    ASTAT("pretained", CTL_SIZE, pretained),
    ASTAT("mapped", CTL_SIZE, mapped),
    LEAF("retained", CTL_SIZE, read_arena_retained, NULL, 0),
    ASTAT("base", CTL_SIZE, base),
    ASTAT("internal", CTL_SIZE, internal),
    ASTAT("resident", CTL_SIZE, resident),
    ASTAT("dirty_npurge", CTL_U64, npurge),
    ASTAT("dirty_nmadvise", CTL_U64, nmadvise),
    ASTAT("dirty_purged", CTL_U64, purged),
    ASTAT("muzzy_purged", CTL_U64, lazy_freed),
    ASTAT("muzzy_reused", CTL_U64, reused_muzzy),
    ASTAT("released_reused", CTL_U64, reused_released),
    ASTAT("gathered", CTL_U64, gathered),
    ASTAT("tcache_bytes", CTL_SIZE, tcache_bytes),
    NAMED("small", stats_small_nodes),
    NAMED("large", stats_large_nodes),
    NAMED("bins", stats_bin_index),
    NAMED("lextents", stats_lextent_index),
    NAMED("mutexes", stats_arena_mutex_nodes),
    END};
static const ctl_node_t stats_arena_index[] = {INDEXED("<i>", stats_arena_nodes, arena_or_legacy_index_ok), END};
static const ctl_node_t stats_mutex_nodes[] = {NAMED("base", base_lock_nodes), END};

static const ctl_node_t stats_nodes[] = {
    TOTAL("allocated", allocated), TOTAL("active", active),
    TOTAL("metadata", metadata),   TOTAL("resident", resident),
    TOTAL("mapped", mapped),       TOTAL("retained", retained),
    TOTAL("dirty", dirty),         LEAF("muzzy", CTL_SIZE, read_stats_muzzy, NULL, 0),
    NAMED("arenas", stats_arena_index), NAMED("mutexes", stats_mutex_nodes),
    END};

static const ctl_node_t arena_nodes[] = {
    LEAF("initialized", CTL_BOOL, read_arena_initialized, NULL, 0),
    ACTION("purge", do_arena_purge),
    LEAF("dss", CTL_STRING, read_arena_dss, write_arena_dss, 0),
    ACTION("decay", do_arena_decay),
    PARAM_LEAF("dirty_decay_ms", CTL_SSIZE, read_arena_decay_ms, write_arena_decay_ms, 0),
    PARAM_LEAF("muzzy_decay_ms", CTL_SSIZE, read_arena_decay_ms, write_arena_decay_ms, 1),
    END};
static const ctl_node_t arena_index[] = {INDEXED("<i>", arena_nodes, arena_or_legacy_index_ok), END};

static const ctl_node_t arenas_bin_nodes[] = {
    PARAM_LEAF("size", CTL_SIZE, read_bin_info, NULL, 0), PARAM_LEAF("slab_size", CTL_SIZE, read_bin_info, NULL, 1),
    PARAM_LEAF("nregs", CTL_U32, read_bin_info, NULL, 2),
    PARAM_LEAF("nshards", CTL_U32, read_constant_u32, NULL, 1), /* one bin per class and arena */
    END};
static const ctl_node_t arenas_bin_index[] = {INDEXED("<j>", arenas_bin_nodes, bin_index_ok), END};

static const ctl_node_t arenas_lextent_nodes[] = {LEAF("size", CTL_SIZE, read_lextent_size, NULL, 0), END};
static const ctl_node_t arenas_lextent_index[] = {INDEXED("<j>", arenas_lextent_nodes, lextent_index_ok), END};

static const ctl_node_t arenas_nodes[] = {
    LEAF("narenas", CTL_UNSIGNED, read_narenas, NULL, 0),
    LEAF("nthreads_peak", CTL_UNSIGNED, read_nthreads_peak, NULL, 0),
    LEAF("create", CTL_UNSIGNED, read_arenas_create, NULL, 0),
    PARAM_LEAF("page", CTL_SIZE, read_constant_size, NULL, PAGE),
    PARAM_LEAF("quantum", CTL_SIZE, read_constant_size, NULL, QUANTUM),
    LEAF("nbins", CTL_UNSIGNED, read_nbins, NULL, 0),
    LEAF("nhbins", CTL_UNSIGNED, read_nhbins, NULL, 0),
    LEAF("tcache_max", CTL_SIZE, read_tcache_max, NULL, 0),
    LEAF("free_map", CTL_BOOL, read_free_map, NULL, 0),
    PARAM_LEAF("dirty_decay_ms", CTL_SSIZE, read_arenas_decay_ms, write_arenas_decay_ms, 0),
    PARAM_LEAF("muzzy_decay_ms", CTL_SSIZE, read_arenas_decay_ms, write_arenas_decay_ms, 1),
    NAMED("bin", arenas_bin_index),
    PARAM_LEAF("nlextents", CTL_UNSIGNED, read_constant_unsigned, NULL, NLARGE_CLASSES),
    NAMED("lextent", arenas_lextent_index),
    {.name = "lookup", .kind = NODE_LEAF, .type = CTL_UNSIGNED_OF_POINTER, .call = C_call_arenas_lookup},
    END};

static const ctl_node_t thread_tcache_nodes[] = {
    ACTION("flush", do_tcache_flush), LEAF("enabled", CTL_BOOL, read_tcache_enabled, write_tcache_enabled, 0), END};

static const ctl_node_t thread_nodes[] = {
    LEAF("arena", CTL_UNSIGNED, read_thread_arena, write_thread_arena, 0),
    NAMED("tcache", thread_tcache_nodes),
    PARAM_LEAF("allocated", CTL_U64, read_thread_counter, NULL, 0),
    PARAM_LEAF("deallocated", CTL_U64, read_thread_counter, NULL, 1),
    PARAM_LEAF("allocatedp", CTL_U64_POINTER, read_thread_counter_pointer, NULL, 0),
    PARAM_LEAF("deallocatedp", CTL_U64_POINTER, read_thread_counter_pointer, NULL, 1),
    END};

#ifdef TESSERA_DEBUG
#define CONFIG_DEBUG 1
#else
#define CONFIG_DEBUG 0
#endif

/* config.*: how this library was built, with jemalloc's names and meanings. */
static const ctl_node_t config_nodes[] = {
    PARAM_LEAF("cache_oblivious", CTL_BOOL, read_constant_bool, NULL, 0),
    PARAM_LEAF("debug", CTL_BOOL, read_constant_bool, NULL, CONFIG_DEBUG),
    PARAM_LEAF("fill", CTL_BOOL, read_constant_bool, NULL, 1),
    PARAM_LEAF("lazy_lock", CTL_BOOL, read_constant_bool, NULL, 0),
    LEAF("malloc_conf", CTL_STRING, read_config_malloc_conf, NULL, 0),
    PARAM_LEAF("prof", CTL_BOOL, read_constant_bool, NULL, 1), /* built in, on with prof:true */
    PARAM_LEAF("prof_libgcc", CTL_BOOL, read_constant_bool, NULL, 0),
    PARAM_LEAF("prof_libunwind", CTL_BOOL, read_constant_bool, NULL, 0),
    PARAM_LEAF("stats", CTL_BOOL, read_constant_bool, NULL, 1),
    PARAM_LEAF("utrace", CTL_BOOL, read_constant_bool, NULL, 0),
    PARAM_LEAF("xmalloc", CTL_BOOL, read_constant_bool, NULL, 0),
    END};

static const ctl_node_t tcache_nodes[] = {
    LEAF("create", CTL_UNSIGNED, read_tcache_create, NULL, 0),
    PARAM_LEAF("flush", CTL_UNSIGNED, NULL, write_tcache_flush, 0),
    PARAM_LEAF("destroy", CTL_UNSIGNED, NULL, write_tcache_flush, 1),
    END};

/* prof.*: the heap profiler (prof_hooks.h); ENOENT unless prof:true, as jemalloc. */
static int write_prof_dump(const ctl_node_t *n, const size_t *idx, const void *in) {
  (void)n, (void)idx;
  const char *filename = NULL;
  if (in != NULL) memcpy(&filename, in, sizeof(filename));
  return prof_ctl_dump(filename);
}

static int write_prof_reset(const ctl_node_t *n, const size_t *idx, const void *in) {
  (void)n, (void)idx;
  size_t lg;
  if (in == NULL) return prof_ctl_reset(NULL);
  memcpy(&lg, in, sizeof(lg));
  return prof_ctl_reset(&lg);
}

static int read_prof_lg_sample(const ctl_node_t *n, const size_t *idx, void *out) {
  (void)n, (void)idx;
  size_t v;
  int err = prof_ctl_lg_sample(&v);
  if (err == 0) put_size(out, v);
  return err;
}

static const ctl_node_t prof_nodes[] = {
    {.name = "dump", .kind = NODE_LEAF, .type = CTL_STRING, .write = W_write_prof_dump, .write_bare = true},
    PARAM_LEAF("active", CTL_BOOL, read_switch, write_switch, SWITCH_PROF_ACTIVE),
    {.name = "reset", .kind = NODE_LEAF, .type = CTL_SIZE, .write = W_write_prof_reset, .write_bare = true},
    LEAF("lg_sample", CTL_SIZE, read_prof_lg_sample, NULL, 0),
    END};

static const ctl_node_t root_nodes[] = {
    LEAF("version", CTL_STRING, read_version, NULL, 0),
    PARAM_LEAF("background_thread", CTL_BOOL, read_switch, write_switch, SWITCH_BACKGROUND_THREAD),
    NAMED("config", config_nodes),
    NAMED("tcache", tcache_nodes),
    {.name = "epoch", .kind = NODE_LEAF, .type = CTL_U64, .read = R_read_epoch, .write = W_write_epoch,
     .read_after_write = true},
    {.name = "opt", .kind = NODE_OPTIONS},
    NAMED("stats", stats_nodes),
    NAMED("arenas", arenas_nodes),
    NAMED("arena", arena_index),
    NAMED("thread", thread_nodes),
    NAMED("prof", prof_nodes),
    END};
static const ctl_node_t root = NAMED("", root_nodes);

/* ---- opt.*: leaves made from the options table ---- */

/* An option's value as its own type. */
static ctl_type_t option_own_type(const option_def_t *d) {
  switch (d->type) {
  case OPTION_BOOL: return CTL_BOOL;
  case OPTION_UNSIGNED: return CTL_UNSIGNED;
  case OPTION_SIZE: return CTL_SIZE;
  case OPTION_SSIZE: return CTL_SSIZE;
  case OPTION_STRING: return CTL_STRING;
  case OPTION_ENUM: return CTL_STRING;
  }
  return CTL_VOID;
}

/* Options jemalloc has with another type: opt.* reads them as jemalloc's (a program
 * written for jemalloc passes its size), and the option's own size still reads its own
 * type (call_leaf). junk:true is jemalloc's junk:"true" (new and freed blocks filled). */
static const struct {
  const char *name;
  ctl_type_t type;
} jemalloc_option_types[] = {{"junk", CTL_STRING}, {"lg_prof_sample", CTL_SIZE}, {"lg_tcache_nslots_mul", CTL_SSIZE}};

static ctl_type_t option_ctl_type(const option_def_t *d) {
  for (unsigned k = 0; k < sizeof(jemalloc_option_types) / sizeof(jemalloc_option_types[0]); k++)
    if (strcmp(d->name, jemalloc_option_types[k].name) == 0) return jemalloc_option_types[k].type;
  return option_own_type(d);
}

static int read_option(const ctl_node_t *n, const size_t *idx, void *out) {
  (void)idx;
  if (!boot_ensure()) return EAGAIN;
  const option_def_t *d = &option_table[n->param];
  ctl_type_t own = option_own_type(d);
  if (d->type == OPTION_STRING) return put_string(out, (const char *)d->value);
  if (d->type == OPTION_ENUM) return put_string(out, option_enum_name(d));
  if (n->type == own) {
    memcpy(out, d->value, type_size(own));
    return 0;
  }
  if (own == CTL_BOOL) return put_string(out, *(const bool *)d->value ? "true" : "false");
  unsigned v = *(const unsigned *)d->value; /* jemalloc's wider integer types */
  if (n->type == CTL_SIZE) return put_size(out, v);
  ssize_t sv = (ssize_t)v;
  memcpy(out, &sv, sizeof(sv));
  return 0;
}

/* opt.* names jemalloc has that are no option here: what tessera always does. */
static int read_opt_retain(const ctl_node_t *n, const size_t *idx, void *out) {
  (void)n, (void)idx;
  bool v = true; /* released address space is kept for reuse (retained pages) */
  memcpy(out, &v, sizeof(v));
  return 0;
}

static int read_arena_dss(const ctl_node_t *n, const size_t *idx, void *out);
static const ctl_node_t opt_jemalloc_nodes[] = {
    LEAF("retain", CTL_BOOL, read_opt_retain, NULL, 0), LEAF("dss", CTL_STRING, read_arena_dss, NULL, 0), END};
#define OPT_JEMALLOC_COUNT (sizeof(opt_jemalloc_nodes) / sizeof(opt_jemalloc_nodes[0]) - 1)

/* Child k of opt: option k (a leaf built in *scratch), then the jemalloc-only names. */
static const ctl_node_t *option_node(unsigned k, ctl_node_t *scratch) {
  if (k >= option_count) return &opt_jemalloc_nodes[k - option_count];
  const option_def_t *d = &option_table[k];
  ctl_type_t type = option_ctl_type(d), own = option_own_type(d);
  ctl_node_t n = PARAM_LEAF("", type, read_option, NULL, k);
  tessera_assert(strlen(d->name) < sizeof(n.name));
  strncpy(n.name, d->name, sizeof(n.name) - 1);
  if (own != type) n.own_type = own;
  *scratch = n;
  return scratch;
}

/* ---- the numbers in the nodes ---- */

#define AS_POINTER(f) f,
static ctl_read_fn *const ctl_readers[] = {NULL, CTL_READERS(AS_POINTER)};
static ctl_write_fn *const ctl_writers[] = {NULL, CTL_WRITERS(AS_POINTER)};
static ctl_call_fn *const ctl_calls[] = {NULL, CTL_CALLS(AS_POINTER)};
static bool (*const ctl_index_checks[])(size_t i) = {NULL, CTL_INDEX_CHECKS(AS_POINTER)};
static const ctl_node_t *const ctl_tables[] = {NULL, CTL_TABLES(AS_POINTER)};

static const ctl_node_t *children_of(const ctl_node_t *n) { return ctl_tables[n->children]; }

/* ---- lookup ---- */

/* Whether n's only child is an indexed one (arena -> <i>). */
static bool has_index_child(const ctl_node_t *n) {
  return (n->kind == NODE_NAMED || n->kind == NODE_INDEXED) && children_of(n)[0].kind == NODE_INDEXED;
}

static unsigned count_children(const ctl_node_t *n) {
  if (n->kind == NODE_OPTIONS) return option_count + (unsigned)OPT_JEMALLOC_COUNT;
  if (n->kind == NODE_LEAF) return 0;
  unsigned k = 0;
  while (children_of(n)[k].name[0] != '\0') k++;
  return k;
}

typedef struct walk {
  const ctl_node_t *node;
  ctl_node_t option;             /* the leaf for an opt.* name */
  size_t idx[CTL_MAX_INDICES];   /* the indexed components so far */
  unsigned nidx;
} walk_t;

/* Moves w one step down along MIB component c. Returns false if there is no such child
 * (or index). */
static bool step(walk_t *w, size_t c) {
  const ctl_node_t *n = w->node;
  if (n->kind == NODE_LEAF) return false;
  if (n->kind == NODE_OPTIONS) {
    if (c >= count_children(n)) return false;
    w->node = option_node((unsigned)c, &w->option);
    return true;
  }
  if (has_index_child(n)) {
    if (w->nidx == CTL_MAX_INDICES || !ctl_index_checks[children_of(n)[0].index_ok](c)) return false;
    w->idx[w->nidx++] = c;
    w->node = &children_of(n)[0];
    return true;
  }
  if (c >= count_children(n)) return false;
  w->node = &children_of(n)[c];
  return true;
}

static bool parse_index(const char *s, size_t len, size_t *out) {
  size_t v = 0;
  if (len == 0 || len > 9) return false;
  for (size_t i = 0; i < len; i++) {
    if (s[i] < '0' || s[i] > '9') return false;
    v = v * 10 + (size_t)(s[i] - '0');
  }
  *out = v;
  return true;
}

/* The MIB component for name component s (len bytes) under node n. */
static bool component(const ctl_node_t *n, const char *s, size_t len, size_t *out) {
  if (n->kind == NODE_LEAF) return false;
  if (has_index_child(n)) return parse_index(s, len, out);
  unsigned count = count_children(n);
  for (unsigned k = 0; k < count; k++) {
    ctl_node_t scratch;
    const char *name = n->kind == NODE_OPTIONS ? option_node(k, &scratch)->name : children_of(n)[k].name;
    if (strlen(name) == len && memcmp(name, s, len) == 0) {
      *out = k;
      return true;
    }
  }
  return false;
}

/* Walks name to its leaf; the first cap components go to mib (may be NULL), their
 * count to *miblen. ENOENT unless the name is a whole path to a leaf. */
static int walk_name(const char *name, walk_t *w, size_t *mib, size_t cap, size_t *miblen) {
  size_t n = 0;
  w->node = &root;
  w->nidx = 0;
  if (name == NULL) return ENOENT;
  for (const char *p = name;;) {
    const char *dot = strchr(p, '.');
    size_t len = dot ? (size_t)(dot - p) : strlen(p);
    size_t c;
    if (!component(w->node, p, len, &c) || !step(w, c)) return ENOENT;
    if (mib != NULL && n < cap) mib[n] = c;
    n++;
    if (dot == NULL) break;
    p = dot + 1;
  }
  if (w->node->kind != NODE_LEAF) return ENOENT;
  if (miblen != NULL) *miblen = n < cap ? n : cap;
  return 0;
}

static int walk_mib(const size_t *mib, size_t miblen, walk_t *w) {
  w->node = &root;
  w->nidx = 0;
  if (mib == NULL || miblen == 0 || miblen > CTL_MAX_DEPTH) return ENOENT;
  for (size_t k = 0; k < miblen; k++)
    if (!step(w, mib[k])) return ENOENT;
  return w->node->kind == NODE_LEAF ? 0 : ENOENT;
}

/* ---- reading and writing a leaf ---- */

static int call_action(const walk_t *w, void *oldp, size_t *oldlenp, void *newp, size_t newlen) {
  if (oldp != NULL || oldlenp != NULL || newp != NULL || newlen != 0) return EPERM;
  return ctl_writers[w->node->write](w->node, w->idx, NULL);
}

/* Copies value (size bytes) to oldp as jemalloc does: a size mismatch copies what fits
 * and returns EINVAL. */
static int copy_out(const void *value, size_t size, void *oldp, size_t *oldlenp) {
  if (oldp == NULL || oldlenp == NULL) return 0;
  if (*oldlenp != size) {
    size_t n = *oldlenp < size ? *oldlenp : size;
    memcpy(oldp, value, n);
    *oldlenp = n;
    return EINVAL;
  }
  memcpy(oldp, value, size);
  return 0;
}

static int call_leaf(const walk_t *w, void *oldp, size_t *oldlenp, void *newp, size_t newlen) {
  const ctl_node_t *n = w->node;
  if (n->call != C_NULL) return ctl_calls[n->call](n, w->idx, oldp, oldlenp, newp, newlen);
  if (n->type == CTL_VOID) return call_action(w, oldp, oldlenp, newp, newlen);
  size_t size = type_size(n->type);
  bool writing = newp != NULL || newlen != 0;
  bool reading = oldp != NULL && oldlenp != NULL;
  ctl_node_t as_own;
  if (reading && n->own_type != CTL_VOID && *oldlenp == type_size(n->own_type) && *oldlenp != size) {
    as_own = *n; /* a reader of the value's type before it took jemalloc's */
    as_own.type = n->own_type;
    n = &as_own;
    size = type_size(n->type);
  }
  unsigned char value[sizeof(uint64_t)];
  int err;
  if (writing && n->write == W_NULL) return EPERM;
  if (!writing && !reading && n->write_bare) return ctl_writers[n->write](n, w->idx, NULL);
  if (writing && (newp == NULL || newlen != size)) return EINVAL;
  if (reading && n->read != R_NULL && !n->read_after_write && (err = ctl_readers[n->read](n, w->idx, value)) != 0)
    return err;
  if (writing && (err = ctl_writers[n->write](n, w->idx, newp)) != 0) return err;
  if (reading && n->read != R_NULL && n->read_after_write && (err = ctl_readers[n->read](n, w->idx, value)) != 0)
    return err;
  return reading ? copy_out(value, size, oldp, oldlenp) : 0;
}

/* ---- the public entry points ---- */

TESSERA_EXPORT int tessera_ctl(const char *name, void *oldp, size_t *oldlenp, void *newp, size_t newlen) {
  walk_t w;
  int err = walk_name(name, &w, NULL, 0, NULL);
  return err != 0 ? err : call_leaf(&w, oldp, oldlenp, newp, newlen);
}

TESSERA_EXPORT int tessera_ctl_nametomib(const char *name, size_t *mibp, size_t *miblenp) {
  walk_t w;
  if (mibp == NULL || miblenp == NULL) return EINVAL;
  return walk_name(name, &w, mibp, *miblenp, miblenp);
}

TESSERA_EXPORT int tessera_ctl_bymib(const size_t *mib, size_t miblen, void *oldp, size_t *oldlenp, void *newp,
                                     size_t newlen) {
  walk_t w;
  int err = walk_mib(mib, miblen, &w);
  return err != 0 ? err : call_leaf(&w, oldp, oldlenp, newp, newlen);
}

/* ---- enumeration (for the docs test) ---- */

typedef void ctl_name_fn(const char *name, ctl_type_t type, bool writable, void *arg);

static void visit(const ctl_node_t *n, char *path, size_t len, ctl_name_fn *f, void *arg);

static void visit_child(const ctl_node_t *child, char *path, size_t len, ctl_name_fn *f, void *arg) {
  size_t add = strlen(child->name);
  if (len + add + 2 > 256) return;
  if (len > 0) path[len++] = '.';
  memcpy(path + len, child->name, add + 1);
  visit(child, path, len + add, f, arg);
}

static void visit(const ctl_node_t *n, char *path, size_t len, ctl_name_fn *f, void *arg) {
  if (n->kind == NODE_LEAF) {
    f(path, n->type, (n->write != W_NULL || n->call != C_NULL) && n->type != CTL_VOID, arg);
    return;
  }
  if (has_index_child(n)) {
    visit_child(&children_of(n)[0], path, len, f, arg);
    return;
  }
  unsigned count = count_children(n);
  for (unsigned k = 0; k < count; k++) {
    ctl_node_t opt;
    visit_child(n->kind == NODE_OPTIONS ? option_node(k, &opt) : &children_of(n)[k], path, len, f, arg);
  }
}

void ctl_for_each_name(ctl_name_fn *f, void *arg) {
  char path[256] = "";
  visit(&root, path, 0, f, arg);
}
