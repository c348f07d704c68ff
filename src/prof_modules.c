/* SPDX-License-Identifier: MIT */
/* prof_modules: see prof_modules.h for the locking argument. */
#include "prof_modules.h"
#include "base.h"

#include "lock.h"
#include "os.h"

#include <string.h>

static prof_module_table_t table;
static unsigned table_capacity;
static unsigned long long built_adds, built_subs;
static bool built;
/* The generation of the table as last built, for walks outside the loader's lock (0: none
 * yet, or the loader gives no load/unload counters to check it against). */
static uint64_t published_generation;
static char exe_path[4096];

typedef struct collect_ctx {
  prof_module_t *out;
  unsigned n, capacity;
} collect_ctx_t;

static void read_build_id(prof_module_t *m, const struct dl_phdr_info *info, const ElfW(Phdr) *ph) {
  const uint8_t *p = (const uint8_t *)(info->dlpi_addr + ph->p_vaddr), *end = p + ph->p_memsz;
  while (p + sizeof(ElfW(Nhdr)) <= end) {
    const ElfW(Nhdr) *n = (const ElfW(Nhdr) *)(const void *)p;
    const uint8_t *name = p + sizeof(*n);
    const uint8_t *desc = name + ((n->n_namesz + 3) & ~3u);
    const uint8_t *next = desc + ((n->n_descsz + 3) & ~3u);
    if (next > end) return;
    if (n->n_type == NT_GNU_BUILD_ID && n->n_namesz == 4 && memcmp(name, "GNU", 4) == 0 &&
        n->n_descsz <= sizeof(m->build_id)) {
      memcpy(m->build_id, desc, n->n_descsz);
      m->build_id_len = (uint8_t)n->n_descsz;
      return;
    }
    p = next;
  }
}

static void add_segment(prof_module_t *m, uintptr_t bias, const ElfW(Phdr) *ph) {
  uintptr_t lo = bias + ph->p_vaddr, hi = lo + ph->p_memsz;
  if (m->nsegments == 0 || lo < m->lo) m->lo = lo;
  if (m->nsegments == 0 || hi > m->hi) m->hi = hi;
  if (m->nsegments < PROF_MODULE_MAX_SEGMENTS) {
    prof_segment_t *s = &m->segments[m->nsegments++];
    s->lo = lo;
    s->hi = hi;
    s->file_offset = ph->p_offset;
    s->exec = (ph->p_flags & PF_X) != 0;
  }
}

static const char *module_name(const struct dl_phdr_info *info, bool first) {
  if (info->dlpi_name && info->dlpi_name[0]) return info->dlpi_name;
  if (!first) return "[vdso]";
  if (!exe_path[0] && !os_readlink("/proc/self/exe", exe_path, sizeof(exe_path)))
    return "[program]";
  return exe_path;
}

static void describe(prof_module_t *m, const struct dl_phdr_info *info, bool first) {
  memset(m, 0, sizeof(*m));
  m->bias = info->dlpi_addr;
  m->name = module_name(info, first);
  for (unsigned i = 0; i < info->dlpi_phnum; i++) {
    const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
    if (ph->p_type == PT_LOAD) add_segment(m, info->dlpi_addr, ph);
    else if (ph->p_type == PT_GNU_EH_FRAME) m->eh_frame_hdr = (const uint8_t *)(info->dlpi_addr + ph->p_vaddr);
    else if (ph->p_type == PT_DYNAMIC) m->dynamic = (const ElfW(Dyn) *)(info->dlpi_addr + ph->p_vaddr);
    else if (ph->p_type == PT_NOTE && m->build_id_len == 0) read_build_id(m, info, ph);
  }
}

static int collect_cb(struct dl_phdr_info *info, size_t size, void *arg) {
  (void)size;
  collect_ctx_t *c = arg;
  if (c->n == c->capacity) { /* count only: the caller retries with more room */
    c->n++;
    return 0;
  }
  if (c->n > c->capacity) {
    c->n++;
    return 0;
  }
  describe(&c->out[c->n], info, c->n == 0);
  if (c->out[c->n].nsegments > 0) c->n++;
  return 0;
}

static void sort_by_lo(prof_module_t *m, unsigned n) {
  for (unsigned i = 1; i < n; i++) { /* insertion sort: tens of modules */
    prof_module_t x = m[i];
    unsigned j = i;
    for (; j > 0 && m[j - 1].lo > x.lo; j--) m[j] = m[j - 1];
    m[j] = x;
  }
}

static bool grow(unsigned need) {
  unsigned cap = table_capacity ? table_capacity : 64;
  while (cap < need) cap *= 2;
  prof_module_t *fresh = base_alloc(cap * sizeof(prof_module_t));
  if (!fresh) return false;
  if (table.modules) base_free(table.modules, table_capacity * sizeof(prof_module_t));
  table.modules = fresh;
  table.count = 0;
  table_capacity = cap;
  return true;
}

/* Runs with the loader's lock held (nested dl_iterate_phdr: the lock is recursive). */
static void refresh(void) {
  table.generation++;
  for (int attempt = 0; attempt < 4; attempt++) {
    if (table_capacity == 0 && !grow(64)) break;
    collect_ctx_t c = {table.modules, 0, table_capacity};
    dl_iterate_phdr(collect_cb, &c);
    if (c.n <= table_capacity) {
      sort_by_lo(table.modules, c.n);
      table.count = c.n;
      return;
    }
    if (!grow(c.n + 16)) break;
  }
  table.count = 0;
}

typedef struct locked_ctx {
  void (*fn)(const prof_module_table_t *t, void *arg);
  void *arg;
  uint64_t unless_generation; /* nonzero: fn is not run if the table is still this one */
  bool ran, current;
} locked_ctx_t;

static int locked_cb(struct dl_phdr_info *info, size_t size, void *arg) {
  locked_ctx_t *c = arg;
  bool have_counters = size >= offsetof(struct dl_phdr_info, dlpi_subs) + sizeof(info->dlpi_subs);
  unsigned long long adds = have_counters ? info->dlpi_adds : 0, subs = have_counters ? info->dlpi_subs : 0;
  if (!built || !have_counters || adds != built_adds || subs != built_subs) {
    refresh();
    built_adds = adds;
    built_subs = subs;
    built = true;
    __atomic_store_n(&published_generation, have_counters ? table.generation : 0, __ATOMIC_RELEASE);
  } else if (c->unless_generation != 0 && c->unless_generation == table.generation) {
    c->current = true; /* nothing loaded or unloaded since that table was built */
    return 1;
  }
  c->fn(&table, c->arg);
  c->ran = true;
  return 1; /* stop: only the first callback matters */
}

/* Held around the profiler's dl_iterate_phdr calls, and by fork's prepare handler: a
 * child of fork must not inherit the loader's lock held by a thread that no longer
 * exists there (glibc does not reset it), which would stop its first stack capture.
 * One gate per group of threads (by thread id), fork taking them all: threads sampling
 * at once do not pass one lock's line back and forth. */
#define GATES 16 /* a power of two */
static struct {
  lock_t lock;
} __attribute__((aligned(64))) gates[GATES];

/* By the thread's id, as the locks know it (0 before its first lock: gate 0). */
static lock_t *my_gate(void) { return &gates[(tls_thread.lock_id >> 1) & (GATES - 1)].lock; }

bool prof_modules_locked(void (*fn)(const prof_module_table_t *t, void *arg), void *arg) {
  locked_ctx_t c = {fn, arg, 0, false, false};
  lock_t *gate = my_gate();
  lock_acquire(gate);
  dl_iterate_phdr(locked_cb, &c);
  lock_release(gate);
  return c.ran;
}

uint64_t prof_modules_generation(void) { return __atomic_load_n(&published_generation, __ATOMIC_ACQUIRE); }

prof_modules_verdict_t prof_modules_check(uint64_t generation, void (*fn)(const prof_module_table_t *t, void *arg),
                                          void *arg) {
  locked_ctx_t c = {fn, arg, generation, false, false};
  lock_t *gate = my_gate();
  lock_acquire(gate);
  dl_iterate_phdr(locked_cb, &c);
  lock_release(gate);
  return c.current ? PROF_MODULES_CURRENT : c.ran ? PROF_MODULES_RAN : PROF_MODULES_NONE;
}

prof_range_t prof_permanent_ranges[PROF_PERMANENT_MAX];
unsigned prof_permanent_count;

static int note_cb(struct dl_phdr_info *info, size_t size, void *arg) {
  (void)size;
  unsigned *n = arg;
  for (unsigned i = 0; i < info->dlpi_phnum && *n < PROF_PERMANENT_MAX; i++) {
    const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
    if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_X) || ph->p_memsz == 0) continue;
    prof_permanent_ranges[(*n)++] = (prof_range_t){info->dlpi_addr + ph->p_vaddr, info->dlpi_addr + ph->p_vaddr + ph->p_memsz};
  }
  return 0;
}

void prof_modules_note_startup(void) {
  if (__atomic_load_n(&prof_permanent_count, __ATOMIC_RELAXED) != 0) return;
  unsigned n = 0;
  lock_t *gate = my_gate();
  lock_acquire(gate);
  dl_iterate_phdr(note_cb, &n);
  lock_release(gate);
  /* In the loader's order (the program first, then the libraries it was started with):
   * the first entries hold most PCs. */
  __atomic_store_n(&prof_permanent_count, n, __ATOMIC_RELEASE);
}

size_t prof_modules_bytes(void) { return __atomic_load_n(&table_capacity, __ATOMIC_RELAXED) * sizeof(prof_module_t); }

void prof_modules_fork_prepare(void) {
  for (unsigned i = 0; i < GATES; i++) lock_fork_prepare(&gates[i].lock);
}
void prof_modules_fork_parent(void) {
  for (unsigned i = GATES; i-- > 0;) lock_fork_release(&gates[i].lock);
}
void prof_modules_fork_child(void) { prof_modules_fork_parent(); }

const prof_module_t *prof_module_find(const prof_module_table_t *t, uintptr_t addr) {
  unsigned lo = 0, hi = t->count;
  while (lo < hi) { /* first module with lo > addr */
    unsigned mid = (lo + hi) / 2;
    if (t->modules[mid].lo <= addr) lo = mid + 1;
    else hi = mid;
  }
  if (lo == 0) return NULL;
  const prof_module_t *m = &t->modules[lo - 1];
  return addr < m->hi ? m : NULL;
}

bool prof_module_readable(const prof_module_table_t *t, uintptr_t addr, size_t len) {
  const prof_module_t *m = prof_module_find(t, addr);
  return m && prof_module_readable_range(m, addr, len);
}

bool prof_module_readable_range(const prof_module_t *m, uintptr_t addr, size_t len) {
  for (unsigned i = 0; i < m->nsegments; i++)
    if (addr >= m->segments[i].lo && addr + len <= m->segments[i].hi && addr + len >= addr) return true;
  return false;
}

const prof_segment_t *prof_module_segment(const prof_module_t *m, uintptr_t addr) {
  for (unsigned i = 0; i < m->nsegments; i++)
    if (m->segments[i].exec && addr >= m->segments[i].lo && addr < m->segments[i].hi) return &m->segments[i];
  return NULL;
}
