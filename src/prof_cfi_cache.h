/* SPDX-License-Identifier: MIT */
/*
 * prof_cfi_cache: unwind rows already computed, by PC, and the step that uses one,
 * inline in the unwinder's walk (prof_unwind.c), so that a cached step makes no call.
 *
 * A program's samples come from a few hundred call sites, and finding the FDE and
 * running its program costs thousands of instructions a frame (docs/profiling.md), so
 * prof_cfi_step_uncached (prof_cfi.c) keeps the rows it computes here. Only the common
 * shape is kept: the CFA a register plus an offset, every register the same, undefined
 * or saved at an offset from the CFA. Read and written only under the profiler's gate
 * (prof_modules_locked), and tagged with the module table's generation, so a PC of a
 * module unloaded since is never trusted.
 */
#ifndef TESSERA_PROF_CFI_CACHE_H
#define TESSERA_PROF_CFI_CACHE_H

#include "prof_cfi.h"

#include <string.h>

#define PROF_CFI_ROWS 512   /* a power of two */
#define ROW_CACHE_SAVED 8   /* registers saved at an offset from the CFA, at most */

typedef struct cached_row {
  uintptr_t pc; /* 0: empty */
  uint64_t generation;
  int32_t cfa_offset;
  uint8_t cfa_reg;
  bool signal_frame;
  bool rsp_is_cfa;    /* the stack pointer's rule is "same": the caller's is the CFA */
  bool outermost;     /* the return address is undefined: the walk ends here */
  uint8_t nsaved;
  uint32_t keep_mask; /* registers whose rule is "same" (the rest are undefined) */
  uint8_t saved_reg[ROW_CACHE_SAVED];
  int32_t saved_offset[ROW_CACHE_SAVED];
  int32_t saved_lo, saved_hi; /* the lowest and highest saved_offset (nsaved > 0) */
  uint32_t saved_mask;        /* the registers saved_reg names */
} cached_row_t;

extern __attribute__((visibility("hidden"))) cached_row_t prof_cfi_rows[PROF_CFI_ROWS];

static inline cached_row_t *prof_cfi_row_slot(uintptr_t pc) {
  return &prof_cfi_rows[(pc * 0x9E3779B97F4A7C15ull) >> 55 & (PROF_CFI_ROWS - 1)];
}

/* The step for a PC without a cached row (the row is cached when it has the shape). */
__attribute__((visibility("hidden"))) prof_step_t prof_cfi_step_uncached(const prof_memory_t *mem, prof_regs_t *regs,
                                                                          uintptr_t pc, uint64_t generation);
/* The saved registers of cached row c read one by one with checks (some lie outside the
 * thread's stack): the valid mask with those read added. Out of line: rare. */
__attribute__((visibility("hidden"))) uint32_t prof_cfi_read_saved_checked(const prof_memory_t *mem,
                                                                            const cached_row_t *c, uintptr_t cfa,
                                                                            prof_regs_t *regs, uint32_t valid);

/* apply_row (prof_cfi.c) for a cached row, without building a row: the registers kept
 * stay in place, the saved ones are read from the stack, the others become unknown. */
static inline __attribute__((always_inline)) prof_step_t prof_cfi_apply_cached(const prof_memory_t *mem,
                                                                                const cached_row_t *c,
                                                                                prof_regs_t *regs) {
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
  } else {
    valid = prof_cfi_read_saved_checked(mem, c, cfa, regs, valid);
  }
  if (!(valid & (1u << PROF_REG_RIP))) return PROF_STEP_BAD;
  if (c->rsp_is_cfa) {
    regs->r[PROF_REG_RSP] = cfa;
    valid |= 1u << PROF_REG_RSP;
  }
  regs->valid = valid;
  return regs->r[PROF_REG_RIP] ? PROF_STEP_OK : PROF_STEP_END;
}

/* prof_cfi_step, inline: the cached row if there is one. */
static inline __attribute__((always_inline)) prof_step_t prof_cfi_step_inline(const prof_memory_t *mem,
                                                                               prof_regs_t *regs,
                                                                               bool pc_is_return_address) {
  uintptr_t pc = regs->r[PROF_REG_RIP] - (pc_is_return_address ? 1 : 0);
  uint64_t generation = mem->modules ? mem->modules->generation : 0;
  const cached_row_t *hit = prof_cfi_row_slot(pc);
  if (pc != 0 && hit->pc == pc && hit->generation == generation) return prof_cfi_apply_cached(mem, hit, regs);
  return prof_cfi_step_uncached(mem, regs, pc, generation);
}

#endif
