/* SPDX-License-Identifier: MIT */
/*
 * prof_unwind: the call stack of the calling thread as a list of return addresses.
 *
 * DWARF CFI first (prof_cfi.h: works for code built without frame pointers, such as
 * Debian's python3 and sqlite3), frame pointers for a PC without CFI (JIT code, hand
 * written assembly), and a clean stop on anything that does not check out: every read
 * is bounds-checked against the thread's stack or a module's loaded segments.
 *
 * Cost: the first capture on a thread reads /proc/self/maps once to learn the bounds of
 * the thread's stack; then each capture is one dl_iterate_phdr lock round trip plus one
 * FDE binary search and CFA program per frame (docs/profiling.md has the numbers).
 *
 * Never allocates except base_alloc when the module table grows; never takes an
 * allocator lock itself. The caller must not hold an allocator lock (see
 * prof_modules.h for why this makes deadlock impossible).
 */
#ifndef TESSERA_PROF_UNWIND_H
#define TESSERA_PROF_UNWIND_H

#include "prof_cfi.h"

#include <stdint.h>

#define PROF_DEPTH_MAX 128

/* Stores up to max return addresses into pcs, innermost first, leaving out the skip
 * innermost frames (0 = the caller of prof_unwind_capture is pcs[0]). Returns the
 * number stored. */
unsigned prof_unwind_capture(uintptr_t *pcs, unsigned max, unsigned skip);
/* prof_unwind_capture starting from registers PROF_UNWIND_CAPTURE_REGS took in a function
 * whose frame is still live (a caller of this one): that function's own frame is left
 * out (skip 0: its caller is pcs[0]). The frames between it and this call are never
 * walked, which is the point: an allocator entry takes the start, its sampling path
 * captures. The walk uses start up (it ends holding the outermost frame's registers). */
unsigned prof_unwind_capture_from(prof_regs_t *start, uintptr_t *pcs, unsigned max, unsigned skip);
/* The same with frame pointers only (for comparison and as a cheap mode). */
unsigned prof_unwind_capture_fp(uintptr_t *pcs, unsigned max, unsigned skip);

/* The calling function's registers at one instruction, for an unwind that starts there
 * (CFI describes every instruction of a function: the stack pointer, the PC and the
 * callee-saved registers of one instruction are a consistent starting row). One asm
 * statement, so the PC and the stack pointer belong to the same instruction. */
#define PROF_UNWIND_CAPTURE_REGS(regs)                                                  \
  do {                                                                                  \
  __asm__ volatile("lea 0(%%rip), %%rax\n\t"                                            \
                   "mov %%rax, 128(%0)\n\t"                                             \
                   "mov %%rsp, 56(%0)\n\t"                                              \
                   "mov %%rbp, 48(%0)\n\t"                                              \
                   "mov %%rbx, 24(%0)\n\t"                                              \
                   "mov %%r12, 96(%0)\n\t"                                              \
                   "mov %%r13, 104(%0)\n\t"                                             \
                   "mov %%r14, 112(%0)\n\t"                                             \
                   "mov %%r15, 120(%0)\n\t"                                             \
                   :                                                                    \
                   : "r"((regs)->r)                                                     \
                   : "rax", "memory");                                                  \
    (regs)->valid = (1u << PROF_REG_RIP) | (1u << PROF_REG_RSP) | (1u << PROF_REG_RBP) |\
                    (1u << PROF_REG_RBX) | (0xfu << PROF_REG_R12);                      \
  } while (0)

#endif
