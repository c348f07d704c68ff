/* SPDX-License-Identifier: MIT */
/*
 * prof_modules: the table of loaded ELF modules (program, shared libraries, vDSO) that
 * the unwinder and the symbolizer consult: address ranges, .eh_frame_hdr, dynamic
 * section, build id.
 *
 * Locking, and why it cannot deadlock. The table is read and refreshed only inside
 * prof_modules_locked(), which runs its function from within a dl_iterate_phdr
 * callback, that is while this thread holds the dynamic loader's lock
 * (dl_load_write_lock, a recursive lock). So:
 *   - no module can be unmapped (dlclose) while the unwinder reads its tables;
 *   - refreshes are serialized by the loader's lock: the table has no lock of its own;
 *   - the same thread re-entering (malloc called by the loader, or by another
 *     dl_iterate_phdr callback, on this thread) takes the recursive lock again and
 *     never blocks; the caller's per-thread guard (prof_sample) then skips the sample;
 *   - another thread inside the loader may make us wait, but it never waits for us,
 *     because we hold no allocator lock while we wait (the rule for callers: capture
 *     the stack before taking any allocator lock).
 * The table is refreshed when the loader's load/unload counters (dlpi_adds, dlpi_subs,
 * seen on the first callback) differ from those it was built with. Metadata comes from
 * base_alloc; a failed allocation leaves an empty table (stacks are then truncated to
 * what frame pointers give).
 */
#ifndef TESSERA_PROF_MODULES_H
#define TESSERA_PROF_MODULES_H

#include <elf.h>
#include <link.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define PROF_MODULE_MAX_SEGMENTS 8

typedef struct prof_segment {
  uintptr_t lo, hi;
  uintptr_t file_offset;
  bool exec;
} prof_segment_t;

typedef struct prof_module {
  uintptr_t bias;             /* load bias: runtime address = link address + bias */
  uintptr_t lo, hi;           /* span of the PT_LOAD segments */
  const char *name;           /* path ("" never: the program gets /proc/self/exe) */
  const uint8_t *eh_frame_hdr; /* NULL if the module has none */
  const ElfW(Dyn) *dynamic;
  unsigned nsegments;
  prof_segment_t segments[PROF_MODULE_MAX_SEGMENTS];
  uint8_t build_id_len;
  uint8_t build_id[32];
} prof_module_t;

typedef struct prof_module_table {
  prof_module_t *modules; /* sorted by lo */
  unsigned count;
  uint64_t generation; /* changes at each rebuild: what was learned of a PC may be stale */
} prof_module_table_t;

/* Runs fn(table, arg) with the loader's lock held and the table current. Returns false
 * (without calling fn) only if dl_iterate_phdr found no module at all. */
bool prof_modules_locked(void (*fn)(const prof_module_table_t *t, void *arg), void *arg);
/* For work done outside the loader's lock that read nothing of a module, only what was
 * learned from the table of one generation (the unwinder's cached rows): that generation,
 * 0 if none can be checked. */
uint64_t prof_modules_generation(void);
/* Then, under the loader's lock: whether the table is still that of generation and no
 * module was loaded or unloaded since it was built (the loader's dlpi_adds and dlpi_subs
 * only grow), so that the work stands; otherwise fn runs as prof_modules_locked runs it
 * (the table refreshed first). */
typedef enum {
  PROF_MODULES_CURRENT, /* the work stands; fn was not run */
  PROF_MODULES_RAN,     /* fn ran with the current table */
  PROF_MODULES_NONE     /* no module found: fn was not run */
} prof_modules_verdict_t;
prof_modules_verdict_t prof_modules_check(uint64_t generation, void (*fn)(const prof_module_table_t *t, void *arg),
                                          void *arg);
/* The executable segments of the modules loaded when the library's constructor ran
 * (the program, the libraries it was linked with or preloaded, the loader, the vDSO):
 * glibc unloads only what dlopen loaded, so these stay where they are for the life of
 * the process, and what the unwinder cached about a PC there stays true whatever is
 * loaded or unloaded since. (A module that a constructor run before this library's
 * dlopened would be taken for one of them: the libraries a malloc is preloaded or
 * linked with are initialized first, before their dependents.) Noted once, from the
 * library's constructor, in the loader's order (the program first). */
#define PROF_PERMANENT_MAX 32
typedef struct prof_range {
  uintptr_t lo, hi;
} prof_range_t;
extern __attribute__((visibility("hidden"))) prof_range_t prof_permanent_ranges[PROF_PERMANENT_MAX];
extern __attribute__((visibility("hidden"))) unsigned prof_permanent_count;
void prof_modules_note_startup(void);
/* Whether pc lies in one of those segments (none before the constructor). */
static inline bool prof_modules_permanent(uintptr_t pc) {
  unsigned n = __atomic_load_n(&prof_permanent_count, __ATOMIC_ACQUIRE);
  for (unsigned i = 0; i < n; i++)
    if (pc - prof_permanent_ranges[i].lo < prof_permanent_ranges[i].hi - prof_permanent_ranges[i].lo) return true;
  return false;
}
/* Bytes of the table (for the profiler's own memory, prof_meta.h). */
size_t prof_modules_bytes(void);
/* fork: the gate around the profiler's loader-lock sections, first in the lock order
 * (taken before any allocator lock; the loader's lock and base's are taken inside). */
void prof_modules_fork_prepare(void);
void prof_modules_fork_parent(void);
void prof_modules_fork_child(void);
/* The module whose PT_LOAD span holds addr, or NULL (binary search). */
const prof_module_t *prof_module_find(const prof_module_table_t *t, uintptr_t addr);
/* True when [addr, addr + len) lies inside one loaded segment of a module. */
bool prof_module_readable(const prof_module_table_t *t, uintptr_t addr, size_t len);
/* True when [addr, addr + len) lies inside one loaded segment of module m. */
bool prof_module_readable_range(const prof_module_t *m, uintptr_t addr, size_t len);
/* The executable segment of m that holds addr, or NULL. */
const prof_segment_t *prof_module_segment(const prof_module_t *m, uintptr_t addr);

#endif
