/* SPDX-License-Identifier: MIT */
/*
 * prof_cfi_cache: unwind rows already computed, by PC, and the step that uses one,
 * inline in the unwinder's walk (prof_unwind.c), so that a cached step makes no call.
 *
 * A program's samples come from a few hundred call sites, and finding the FDE and
 * running its program costs thousands of instructions a frame (docs/profiling.md), so
 * prof_cfi_step_uncached (prof_cfi.c) keeps the rows it computes here. Only the common
 * shape is kept: the CFA a register plus an offset, every register the same, undefined
 * or saved at an offset from the CFA. Written only under the profiler's gate
 * (prof_modules_locked), and tagged with the module table's generation, so a PC of a
 * module unloaded since is never trusted.
 *
 * A step from a cached row reads only the thread's stack, so the unwinder first walks
 * with cached rows alone outside the loader's lock (prof_cfi_step_lockless), then checks
 * under the lock that no module was loaded or unloaded since the rows' table was built
 * (prof_modules_check); anything else (a row missing, a register saved outside the
 * stack) sends the whole walk under the lock. Rows are read there while the gate's
 * holder may write one: each carries a sequence number, odd while it is written, and a
 * row is used only if it read the same even number before and after its copy.
 */
#ifndef TESSERA_PROF_CFI_CACHE_H
#define TESSERA_PROF_CFI_CACHE_H

#include "prof_cfi.h"

#include <string.h>

#define PROF_CFI_ROWS 512   /* a power of two */
#define ROW_CACHE_SAVED 8   /* registers saved at an offset from the CFA, at most */

/* One cache line (the lockless step copies it whole); rows whose offsets do not fit 16
 * bits are not cached. */
typedef struct cached_row {
  uint32_t seq; /* odd while the row is written */
  int16_t cfa_offset;
  int16_t saved_hi;   /* the highest saved_offset (nsaved > 0) */
  uintptr_t pc;       /* 0: empty */
  uint64_t generation;
  uint8_t cfa_reg;
  uint8_t nsaved;
  bool signal_frame;
  bool rsp_is_cfa;    /* the stack pointer's rule is "same": the caller's is the CFA */
  bool outermost;     /* the return address is undefined: the walk ends here */
  bool permanent;     /* pc lies in a module never unloaded (prof_modules_permanent) */
  int16_t saved_lo;   /* the lowest saved_offset (nsaved > 0) */
  uint32_t keep_mask; /* registers whose rule is "same" (the rest are undefined) */
  uint32_t saved_mask; /* the registers saved_reg names */
  uint8_t saved_reg[ROW_CACHE_SAVED];
  int16_t saved_offset[ROW_CACHE_SAVED];
} cached_row_t;
_Static_assert(sizeof(cached_row_t) == 64, "a cached row is one cache line");

extern __attribute__((visibility("hidden"))) cached_row_t prof_cfi_rows[PROF_CFI_ROWS] __attribute__((aligned(64)));

/* Two ways per set (adjacent rows), the newer first: two hot PCs of one set do not
 * evict each other at every sample. The first row of pc's set. */
static inline cached_row_t *prof_cfi_row_set(uintptr_t pc) {
  return &prof_cfi_rows[((pc * 0x9E3779B97F4A7C15ull) >> 55 << 1) & (PROF_CFI_ROWS - 1)];
}

/* The row cached for pc under generation, or NULL (under the gate: no row is being
 * written). */
static inline const cached_row_t *prof_cfi_row_find(uintptr_t pc, uint64_t generation) {
  const cached_row_t *set = prof_cfi_row_set(pc);
  if (set[0].pc == pc && set[0].generation == generation) return &set[0];
  if (set[1].pc == pc && set[1].generation == generation) return &set[1];
  return NULL;
}

/* The step for a PC without a cached row (the row is cached when it has the shape). */
__attribute__((visibility("hidden"))) prof_step_t prof_cfi_step_uncached(const prof_memory_t *mem, prof_regs_t *regs,
                                                                          uintptr_t pc, uint64_t generation);
/* The saved registers of cached row c read one by one with checks (some lie outside the
 * thread's stack): the valid mask with those read added. Out of line: rare. */
__attribute__((visibility("hidden"))) uint32_t prof_cfi_read_saved_checked(const prof_memory_t *mem,
                                                                            const cached_row_t *c, uintptr_t cfa,
                                                                            prof_regs_t *regs, uint32_t valid);

/* The end of a step from cached row c: the return address must be known; the stack
 * pointer becomes the CFA where the row says so. */
static inline __attribute__((always_inline)) prof_step_t prof_cfi_step_finish(const cached_row_t *c, uintptr_t cfa,
                                                                              prof_regs_t *regs, uint32_t valid) {
  if (!(valid & (1u << PROF_REG_RIP))) return PROF_STEP_BAD;
  if (c->rsp_is_cfa) {
    regs->r[PROF_REG_RSP] = cfa;
    valid |= 1u << PROF_REG_RSP;
  }
  regs->valid = valid;
  return regs->r[PROF_REG_RIP] ? PROF_STEP_OK : PROF_STEP_END;
}

/* apply_row (prof_cfi.c) for a cached row, without building a row: the registers kept
 * stay in place, the saved ones are read from the stack, the others become unknown. */
static inline __attribute__((always_inline)) prof_step_t prof_cfi_apply_cached(const prof_memory_t *mem,
                                                                                const cached_row_t *c,
                                                                                prof_regs_t *regs, bool stack_only) {
  if (!(regs->valid & (1u << c->cfa_reg))) return PROF_STEP_BAD;
  if (c->outermost) return PROF_STEP_END;
  uintptr_t cfa = regs->r[c->cfa_reg] + (uintptr_t)(int64_t)c->cfa_offset;
  if (!c->signal_frame && cfa <= regs->r[PROF_REG_RSP]) return PROF_STEP_BAD; /* must move up */
  uint32_t valid = regs->valid & c->keep_mask;
  uintptr_t lo = cfa + (uintptr_t)(int64_t)c->saved_lo, hi = cfa + (uintptr_t)(int64_t)c->saved_hi;
  if (((lo | hi) & 7) == 0 && lo >= mem->stack_lo && hi >= lo && hi + 8 <= mem->stack_hi) {
    /* Every saved register in the thread's stack (the common case): one bounds check.
     * (A row without saved registers has lo = hi = cfa: the check only costs.) */
    for (unsigned k = 0; k < c->nsaved; k++)
      memcpy(&regs->r[c->saved_reg[k]], (const void *)(cfa + (uintptr_t)(int64_t)c->saved_offset[k]), 8);
    valid |= c->saved_mask;
  } else if (stack_only) {
    return PROF_STEP_NO_FDE; /* not decided here: the walk goes under the lock */
  } else {
    valid = prof_cfi_read_saved_checked(mem, c, cfa, regs, valid);
  }
  return prof_cfi_step_finish(c, cfa, regs, valid);
}

/* prof_cfi_step, inline: the cached row if there is one. */
static inline __attribute__((always_inline)) prof_step_t prof_cfi_step_inline(const prof_memory_t *mem,
                                                                               prof_regs_t *regs,
                                                                               bool pc_is_return_address) {
  uintptr_t pc = regs->r[PROF_REG_RIP] - (pc_is_return_address ? 1 : 0);
  uint64_t generation = mem->modules ? mem->modules->generation : 0;
  const cached_row_t *hit = pc != 0 ? prof_cfi_row_find(pc, generation) : NULL;
  if (hit != NULL) return prof_cfi_apply_cached(mem, hit, regs, false);
  return prof_cfi_step_uncached(mem, regs, pc, generation);
}

/* A row as the words it is copied by. */
typedef union row_words {
  uint64_t w[sizeof(cached_row_t) / 8];
  cached_row_t row;
} row_words_t;

/* A consistent copy of a row another thread may be writing; false if it was being
 * written. */
static inline __attribute__((always_inline)) bool prof_cfi_row_copy(const cached_row_t *slot, row_words_t *out) {
  const uint64_t *from = (const uint64_t *)(const void *)slot;
  out->w[0] = __atomic_load_n(&from[0], __ATOMIC_ACQUIRE); /* seq (little endian), then the rest */
  out->w[1] = __atomic_load_n(&from[1], __ATOMIC_RELAXED);
  out->w[2] = __atomic_load_n(&from[2], __ATOMIC_RELAXED);
  out->w[3] = __atomic_load_n(&from[3], __ATOMIC_RELAXED);
  out->w[4] = __atomic_load_n(&from[4], __ATOMIC_RELAXED);
  out->w[5] = __atomic_load_n(&from[5], __ATOMIC_RELAXED);
  out->w[6] = __atomic_load_n(&from[6], __ATOMIC_RELAXED);
  out->w[7] = __atomic_load_n(&from[7], __ATOMIC_RELAXED);
  __atomic_thread_fence(__ATOMIC_ACQUIRE);
  return !(out->row.seq & 1) && __atomic_load_n(&slot->seq, __ATOMIC_RELAXED) == out->row.seq;
}

/* The registers a walk needs from frame to frame: the return address, the stack
 * pointer (a signal frame saves it) and the frame pointer (the CFA of frames that keep
 * one). Rows list their saved entries for these first (cache_store). */
#define PROF_CFI_WALK_REGS ((1u << PROF_REG_RIP) | (1u << PROF_REG_RSP) | (1u << PROF_REG_RBP))

/* prof_cfi_apply_cached for the lockless walk, restoring only the walk's registers
 * (the row's first saved entries, at most three): the other saved registers become
 * unknown instead of being read (4-7 reads a frame, for values only a rare row uses as
 * its CFA). A row whose CFA register is unknown is then not decided here
 * (PROF_STEP_NO_FDE: the walk goes under the lock, from the start, restoring every
 * register), so the walk's result is the one the full step gives. */
static inline __attribute__((always_inline)) prof_step_t prof_cfi_apply_walk(const prof_memory_t *mem,
                                                                              const cached_row_t *c,
                                                                              prof_regs_t *regs) {
  if (!(regs->valid & (1u << c->cfa_reg))) return PROF_STEP_NO_FDE;
  if (c->outermost) return PROF_STEP_END;
  uintptr_t cfa = regs->r[c->cfa_reg] + (uintptr_t)(int64_t)c->cfa_offset;
  if (!c->signal_frame && cfa <= regs->r[PROF_REG_RSP]) return PROF_STEP_BAD; /* must move up */
  uint32_t valid = regs->valid & c->keep_mask;
  for (unsigned k = 0; k < 3 && k < c->nsaved && ((PROF_CFI_WALK_REGS >> c->saved_reg[k]) & 1); k++) {
    uintptr_t at = cfa + (uintptr_t)(int64_t)c->saved_offset[k];
    if (at < mem->stack_lo || at > mem->stack_hi - 8) return PROF_STEP_NO_FDE; /* the walk under the lock reads it */
    memcpy(&regs->r[c->saved_reg[k]], (const void *)at, 8);
    valid |= 1u << c->saved_reg[k];
  }
  return prof_cfi_step_finish(c, cfa, regs, valid);
}

/* A step outside the loader's lock, from a row cached for the table of `generation`:
 * PROF_STEP_NO_FDE when it cannot be decided so (no such row, a row being written, a
 * register saved outside the thread's stack, a CFA register not restored).
 * *permanent is cleared when the row's PC is not in a module that is never unloaded. */
/* The row it used is left in *copy (for the unwinder's memo of steps: prof_unwind.c). */
static inline __attribute__((always_inline)) prof_step_t prof_cfi_step_lockless(const prof_memory_t *mem,
                                                                                 prof_regs_t *regs, uintptr_t pc,
                                                                                 uint64_t generation,
                                                                                 bool *permanent, row_words_t *copy) {
  const cached_row_t *set = prof_cfi_row_set(pc);
  const cached_row_t *slot = __atomic_load_n(&set[0].pc, __ATOMIC_RELAXED) == pc ? &set[0] : &set[1];
  if (!prof_cfi_row_copy(slot, copy)) return PROF_STEP_NO_FDE;
  if (pc == 0 || copy->row.pc != pc || copy->row.generation != generation) return PROF_STEP_NO_FDE;
  *permanent = *permanent && copy->row.permanent;
  return prof_cfi_apply_walk(mem, &copy->row, regs);
}

#endif
