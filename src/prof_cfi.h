/* SPDX-License-Identifier: MIT */
/*
 * prof_cfi: one step of an x86_64 DWARF call-frame-information unwinder. Finds the FDE
 * for a PC through the module's .eh_frame_hdr search table, runs the CIE's and FDE's
 * CFA programs up to the PC, and computes the caller's registers.
 *
 * Every read of unwound memory (the stack, the CFI tables) is checked against the
 * thread's stack bounds or a loaded segment of a module first, so a corrupt frame ends
 * the walk instead of faulting.
 */
#ifndef TESSERA_PROF_CFI_H
#define TESSERA_PROF_CFI_H

#include "prof_modules.h"

/* DWARF register numbers on x86_64. */
enum {
  PROF_REG_RBX = 3, PROF_REG_RBP = 6, PROF_REG_RSP = 7, PROF_REG_R12 = 12,
  PROF_REG_R15 = 15, PROF_REG_RIP = 16, PROF_NREGS = 17
};

typedef struct prof_regs {
  uintptr_t r[PROF_NREGS];
  uint32_t valid; /* bit i: r[i] is known */
} prof_regs_t;

/* What a step may read: the thread's stack and the loaded modules. */
typedef struct prof_memory {
  uintptr_t stack_lo, stack_hi;
  const prof_module_table_t *modules;
} prof_memory_t;

typedef enum prof_step {
  PROF_STEP_OK,      /* regs now describe the caller */
  PROF_STEP_END,     /* the outermost frame (return address undefined) */
  PROF_STEP_NO_FDE,  /* no CFI for this PC: the caller may try frame pointers */
  PROF_STEP_BAD      /* unsupported or inconsistent CFI, or an unreadable address */
} prof_step_t;

/* Unwinds one frame. pc_is_return_address: the PC came from a return address (look up
 * PC - 1, the call instruction), not from the interrupted instruction itself. */
prof_step_t prof_cfi_step(const prof_memory_t *mem, prof_regs_t *regs, bool pc_is_return_address);
/* A checked 8-byte read. */
bool prof_memory_read(const prof_memory_t *mem, uintptr_t addr, uintptr_t *out);

#endif
