/* SPDX-License-Identifier: MIT */
/* prof_hooks: see prof_hooks.h. */
#include "prof_hooks.h"

#include <errno.h>
#include <string.h>

#include "arena.h"
#include "extent.h"
#include "free_map.h"
#include "large_cache.h"
#include "lock.h"
#include "options.h"
#include "os.h"
#include "pagemap.h"
#include "prof_cache.h"
#include "prof_dump.h"
#include "prof_modules.h"
#include "size_class.h"
#include "stats.h"
#include "tcache.h"

/* The linker's bounds of the section PROF_API_ENTRY names. */
extern const char __start_tessera_api[] __attribute__((visibility("hidden")));
extern const char __stop_tessera_api[] __attribute__((visibility("hidden")));

bool prof_mallocs_counted;
static int leak_fd = -1;                   /* a duplicate of stderr taken at start-up */
static _Atomic uint64_t interval_counted;  /* bytes allocated, as counted at samples */
static _Atomic uint64_t interval_next;     /* the next lg_prof_interval dump point */
static _Atomic size_t gdump_peak;          /* allocated bytes at the last prof_gdump dump */

#define LEAK_SITES 20

void prof_hooks_boot(void) {
  if (!opt_prof) return;
  prof_config_t c = PROF_CONFIG_DEFAULT;
  c.lg_sample = opt_lg_prof_sample;
  prof_sample_init(&c);
  atomic_store(&prof_active_now, opt_prof_active);
  if (opt_lg_prof_interval >= 0) atomic_store(&interval_next, (uint64_t)1 << opt_lg_prof_interval);
  /* malloc's fast path finds bins[0] empty: every malloc counts down (prof_cache.h). */
  prof_cache_boot();
  prof_mallocs_counted = !opt_hardened;
  memset(tcache_bin_offset_of_size, 0, sizeof(tcache_bin_offset_of_size));
}

COLD_TEXT bool prof_alloc_due_slow(size_t usize) {
  prof_thread_t *t = &tls_thread.prof;
  if (likely(!prof_sample_first_due(t, usize))) return false;
  prof_bytes_until_sample(t); /* from the next allocation on */
  return prof_sample_wanted(t);
}

void prof_hooks_constructed(void) {
  if (opt_prof) prof_modules_note_startup();
  if (opt_prof && opt_prof_leak && leak_fd < 0) leak_fd = os_dup_stderr();
}

/* A block of the thread's cache of large blocks for a sampled request of request bytes
 * (whole pages), or NULL. Its page-map code is already CODE_LARGE. */
static extent_t *cached_large_block(size_t request, size_t align, bool zero) {
  if (request <= SMALL_MAX) return NULL;
  return large_cache_take(tcache_get(), large_usable_size(request), align, zero);
}

COLD_TEXT extent_t *prof_block_new(arena_t *a, size_t usize, size_t align, bool zero) {
  size_t request = (usize + PAGE_MASK) & ~(size_t)PAGE_MASK;
  if (request < usize) return NULL;
  /* Sampled blocks of the sizes threads cache come from and go back to that cache as
   * others do (free.c): through the arena they cost ~2,000 instructions more a sample. */
  extent_t *cached = a == NULL ? cached_large_block(request, align, zero) : NULL;
  if (cached != NULL) {
    cached->sampled = 1;
    return cached;
  }
  void *p = arena_malloc_large(a != NULL ? a : current_arena(tcache_get()), request, align, zero);
  if (p == NULL) return NULL;
  extent_t *e = pm_extent(pagemap_get((uintptr_t)p));
  e->sampled = 1;
  /* An uncached code, whatever the size: its free takes the slow path. */
  lock_acquire(&e->arena->extent_lock);
  extent_map_active(e, CODE_LARGE);
  lock_release(&e->arena->extent_lock);
  return e;
}

/* allocated bytes now (the stats layer's snapshot, as tessera_get_counters). */
static size_t allocated_now(void) {
  stats_snapshot_lock(&stats_print_snapshot);
  stats_refresh(&stats_print_snapshot);
  size_t v = stats_print_snapshot.totals.allocated;
  stats_snapshot_unlock(&stats_print_snapshot);
  return v;
}

static void dump_if_interval(uint64_t consumed) {
  if (opt_lg_prof_interval < 0) return;
  uint64_t total = atomic_fetch_add(&interval_counted, consumed) + consumed;
  uint64_t next = atomic_load(&interval_next);
  if (total < next) return;
  uint64_t step = (uint64_t)1 << opt_lg_prof_interval;
  uint64_t after = (total / step + 1) * step;
  if (atomic_compare_exchange_strong(&interval_next, &next, after)) prof_dump(opt_prof_prefix, 'i');
}

static void dump_if_peak(void) {
  if (!opt_prof_gdump) return;
  size_t now = allocated_now();
  size_t peak = atomic_load(&gdump_peak);
  if (now > peak && atomic_compare_exchange_strong(&gdump_peak, &peak, now)) prof_dump(opt_prof_prefix, 'm');
}

/* A sampled block of a cached class stays where the cache put it: its extent (a slab, or
 * a large block of the class) counts its sampled blocks in `sampled`, and the free-map
 * entry of the block's first page (the one free looks up) sends every free there to
 * free's slow path, which tells the profiler (prof_block_free). When the extent's last
 * sampled block goes, the span of first pages its sampled blocks diverted (sampled_first
 * to sampled_last) gets its entries back (the pages between were never diverted and are
 * written the same). Both run under the lock of the profiler's record shard, which is
 * chosen by the extent (shard_key): every mark of one extent under one lock. */
_Static_assert(SLAB_MAX_PAGES <= UINT8_MAX + 1, "a slab's page index fits extent_t.sampled_first");
static bool mark_in_place(uintptr_t p, uintptr_t key) {
  extent_t *e = (extent_t *)key;
  uint8_t n = __atomic_load_n(&e->sampled, __ATOMIC_RELAXED);
  if (n == UINT8_MAX) return false;
  __atomic_store_n(&e->sampled, (uint8_t)(n + 1), __ATOMIC_RELAXED);
  uintptr_t page = p & ~(uintptr_t)PAGE_MASK;
  free_map_divert_page(page);
  uint8_t index = (uint8_t)((page - e->addr) >> LG_PAGE);
  if (n == 0 || index < e->sampled_first) e->sampled_first = index;
  if (n == 0 || index > e->sampled_last) e->sampled_last = index;
  return true;
}

COLD_TEXT static void forget_in_place(uintptr_t p, uintptr_t key) {
  extent_t *e = (extent_t *)key;
  uint8_t n = __atomic_load_n(&e->sampled, __ATOMIC_RELAXED) - 1;
  __atomic_store_n(&e->sampled, n, __ATOMIC_RELAXED);
  if (n != 0) return;
  free_map_restore_pages(e->addr + ((uintptr_t)e->sampled_first << LG_PAGE),
                         (size_t)(e->sampled_last - e->sampled_first) + 1, pm_code(pagemap_get(p)));
}

static const prof_mark_t in_place = {mark_in_place, forget_in_place};

/* A block of a sample slab (prof_slab.h) needs no mark: its pages are the slab's, sent
 * to free's slow path for as long as it is one. (A mark all the same, so that the
 * record counts no page padding: the slab's free regions are counted by prof_slab.c.) */
static bool mark_nothing(uintptr_t p, uintptr_t key) {
  (void)p;
  (void)key;
  return true;
}
static void forget_nothing(uintptr_t p, uintptr_t key) {
  (void)p;
  (void)key;
}
static const prof_mark_t in_sample_slab = {mark_nothing, forget_nothing};

/* A record's key is its block's extent, the same for every block of a slab (their
 * marks share the extent's count and span), which the marks then need not look up; its
 * shard is the extent's arena's: the threads of one arena share its slabs, those of
 * different arenas (one per CPU) share no line of the profiler's records (unless two
 * arenas' pointers hash to one shard: one chance in 16 for two). By the arena's
 * pointer, which the extent's line holds: its index would be a read of the arena's
 * own line, which a sample otherwise never touches (a cache miss in a program that
 * uses much memory: 70% of the record's own time in workingset-1 under perf). */
static unsigned shard_of_extent(const extent_t *e) { return prof_shard_of((uintptr_t)e->arena); }

/* Records p after its stack, then any dump the allocation triggers. */
COLD_TEXT static void record(void *p, size_t usize, const prof_mark_t *mark) {
  prof_thread_t *t = &tls_thread.prof;
  /* The bytes allocated since the thread's previous sample, on average (what each
   * stream counted down is not kept). */
  uint64_t consumed = prof_sample_period();
  extent_t *e = p ? pm_extent(pagemap_get((uintptr_t)p)) : NULL;
  prof_sample_alloc_outside(t, p, (uintptr_t)e, e ? shard_of_extent(e) : 0, usize, (uintptr_t)__start_tessera_api,
                            (uintptr_t)__stop_tessera_api, mark);
  if (p == NULL) return;
  t->busy = true; /* a dump's own allocations (none expected) are never sampled */
  dump_if_interval(consumed);
  dump_if_peak();
  t->busy = false;
}

PROF_API_ENTRY void prof_block_record(void *p, size_t usize) { record(p, usize, NULL); }
PROF_API_ENTRY void prof_block_record_in_place(void *p, size_t usize) { record(p, usize, &in_place); }
PROF_API_ENTRY void prof_block_record_in_slab(void *p, size_t usize) { record(p, usize, &in_sample_slab); }

COLD_TEXT void prof_block_free(void *p, const extent_t *e) {
  prof_record_free_keyed(p, (uintptr_t)e, shard_of_extent(e));
}

/* ---------------------------------------------------------------- prof.* */

COLD_TEXT int prof_ctl_dump(const char *filename) {
  if (!opt_prof) return ENOENT;
  bool ok = filename ? prof_dump_named(filename) : prof_dump(opt_prof_prefix, 'u');
  return ok ? 0 : EFAULT;
}

COLD_TEXT int prof_ctl_active(bool *old, const bool *set) {
  if (set && !opt_prof) return ENOENT;
  if (old) *old = atomic_load(&prof_active_now);
  if (set) atomic_store(&prof_active_now, *set);
  return 0;
}

COLD_TEXT int prof_ctl_reset(const size_t *lg_sample) {
  if (!opt_prof) return ENOENT;
  if (lg_sample && *lg_sample > 40) return EINVAL;
  prof_sample_reset(lg_sample ? (unsigned)*lg_sample : prof_sample_lg());
  return 0;
}

COLD_TEXT int prof_ctl_lg_sample(size_t *out) {
  *out = opt_prof ? prof_sample_lg() : opt_lg_prof_sample;
  return 0;
}

/* ---------------------------------------------------------------- exit */

static void leak_report_at_exit(void) {
  char path[PROF_PATH_MAX];
  prof_dump_filename(path, sizeof(path), opt_prof_prefix, 0, 0, ".leak.txt");
  int fd = os_open_write(path, false);
  if (fd >= 0) {
    prof_leak_report(fd, LEAK_SITES);
    os_close(fd);
  }
  if (leak_fd >= 0) prof_leak_report(leak_fd, LEAK_SITES);
}

__attribute__((destructor)) static void prof_at_exit(void) {
  if (!opt_prof) return;
  tls_thread.prof.busy = true;
  if (opt_prof_final && !prof_dump(opt_prof_prefix, 'f')) os_write_stderr("tessera: prof_final: the profile could not be written\n");
  if (opt_prof_leak) leak_report_at_exit();
  tls_thread.prof.busy = false;
}
