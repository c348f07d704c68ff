/* SPDX-License-Identifier: MIT */
/* prof_unwind: see prof_unwind.h. */
#include "prof_unwind.h"

#include "prof_cfi.h"
#include "prof_cfi_cache.h"
#include "prof_maps.h"
#include "os.h"

#include <stdatomic.h>
#include <stddef.h>
#include <string.h>

/* The calling thread's stack mapping, learned once per thread (and again if the stack
 * pointer leaves it: a signal stack or a user-level thread's stack). */
static __thread uintptr_t tls_stack_lo, tls_stack_hi __attribute__((tls_model("initial-exec")));

/* Bounds without reading /proc/self/maps (tens of microseconds, once per thread: too
 * much for programs that start threads by the thousand): glibc places a thread's
 * descriptor, which the thread pointer names, at the top of the block that holds its
 * stack (its own or one the program gave), so from the stack pointer up to the thread
 * pointer lies the used stack, then the thread's static TLS. mincore fails (ENOMEM)
 * if any page of that range is unmapped; the main thread (whose descriptor lies
 * elsewhere) and a stack pointer far from the thread pointer go to the maps. */
#define STACK_SPAN_MAX ((uintptr_t)1 << 20)
#define SYSTEM_PAGE ((uintptr_t)4096)
static bool stack_bounds_by_thread_pointer(uintptr_t sp, uintptr_t *lo, uintptr_t *hi) {
  uintptr_t tp;
  __asm__("mov %%fs:0, %0" : "=r"(tp));
  if (tp <= sp || tp - sp > STACK_SPAN_MAX) return false;
  uintptr_t first = sp & ~(SYSTEM_PAGE - 1);
  unsigned char resident[STACK_SPAN_MAX / SYSTEM_PAGE + 1];
  if (!os_pages_resident((void *)first, tp - first, resident)) return false;
  *lo = first;
  *hi = tp;
  return true;
}

static bool stack_bounds(uintptr_t sp, uintptr_t *lo, uintptr_t *hi) {
  if (sp < tls_stack_lo || sp >= tls_stack_hi) {
    uintptr_t l, h;
    if (!stack_bounds_by_thread_pointer(sp, &l, &h) && !prof_maps_find(sp, &l, &h)) return false;
    tls_stack_lo = l;
    tls_stack_hi = h;
  }
  *lo = sp;
  *hi = tls_stack_hi;
  return true;
}

/* The thread's memo of the steps its last walks took, by depth: a cached row's step
 * reduced to what the lockless walk uses, for a PC of a module never unloaded (so it
 * stays right whatever is loaded or unloaded since). A walk that meets the same PC at
 * the same depth takes the memo's step: no look-up of the row's set, no consistent copy
 * of its 64 bytes, ~20 instructions and no line of the shared row cache; a program's
 * samples come from a few sites, whose outer frames (the thread's start, main, its
 * loops) repeat from sample to sample. */
typedef struct memo_step {
  uintptr_t pc;       /* the PC whose row this is (0: none) */
  int16_t cfa_offset; /* the CFA: cfa_reg + cfa_offset */
  int16_t ra_offset;  /* the return address at the CFA + ra_offset */
  int16_t rbp_offset; /* the frame pointer at the CFA + rbp_offset, if rbp_saved */
  uint8_t cfa_reg;    /* PROF_REG_RSP or PROF_REG_RBP */
  uint8_t rbp_rule;   /* MEMO_RBP_*: what becomes of the frame pointer; or MEMO_OUTERMOST */
} memo_step_t;
_Static_assert(sizeof(memo_step_t) == 16, "four memo steps a cache line");

enum { MEMO_RBP_UNKNOWN, MEMO_RBP_SAME, MEMO_RBP_SAVED, MEMO_OUTERMOST /* the walk ends here */ };
#define MEMO_STEPS 16

static __thread memo_step_t tls_memo[MEMO_STEPS] __attribute__((tls_model("initial-exec")));
static __thread bool tls_memo_busy __attribute__((tls_model("initial-exec")));

/* The memo of row c's step, when the row has the memo's shape (else the slot is left). */
static void memo_store(memo_step_t *m, const cached_row_t *c) {
  if (!c->permanent || c->cfa_reg >= 32) return;
  if (c->outermost) {
    *m = (memo_step_t){.pc = c->pc, .cfa_reg = c->cfa_reg, .rbp_rule = MEMO_OUTERMOST};
    return;
  }
  if (c->signal_frame || !c->rsp_is_cfa || (c->cfa_reg != PROF_REG_RSP && c->cfa_reg != PROF_REG_RBP)) return;
  memo_step_t s = {.pc = c->pc, .cfa_offset = c->cfa_offset, .cfa_reg = c->cfa_reg,
                   .rbp_rule = (c->keep_mask >> PROF_REG_RBP) & 1 ? MEMO_RBP_SAME : MEMO_RBP_UNKNOWN};
  bool ra = false;
  for (unsigned k = 0; k < c->nsaved; k++) {
    if (c->saved_reg[k] == PROF_REG_RIP) {
      s.ra_offset = c->saved_offset[k];
      ra = true;
    } else if (c->saved_reg[k] == PROF_REG_RBP) {
      s.rbp_offset = c->saved_offset[k];
      s.rbp_rule = MEMO_RBP_SAVED;
    } else if (c->saved_reg[k] == PROF_REG_RSP) {
      return;
    }
  }
  if (ra) *m = s;
}

static inline bool stack_word(const prof_memory_t *mem, uintptr_t at, uintptr_t *out) {
  if (at < mem->stack_lo || at > mem->stack_hi - 8) return false;
  memcpy(out, (const void *)at, 8);
  return true;
}

/* prof_cfi_apply_walk for a memo's step: the same registers out, the same verdicts. */
static inline prof_step_t memo_apply(const prof_memory_t *mem, const memo_step_t *m, prof_regs_t *regs) {
  if (!(regs->valid & (1u << m->cfa_reg))) return PROF_STEP_NO_FDE;
  if (m->rbp_rule == MEMO_OUTERMOST) return PROF_STEP_END;
  uintptr_t cfa = regs->r[m->cfa_reg] + (uintptr_t)(int64_t)m->cfa_offset;
  if (cfa <= regs->r[PROF_REG_RSP]) return PROF_STEP_BAD; /* must move up */
  uint32_t valid = (1u << PROF_REG_RIP) | (1u << PROF_REG_RSP);
  if (m->rbp_rule == MEMO_RBP_SAVED) {
    if (!stack_word(mem, cfa + (uintptr_t)(int64_t)m->rbp_offset, &regs->r[PROF_REG_RBP])) return PROF_STEP_NO_FDE;
    valid |= 1u << PROF_REG_RBP;
  } else if (m->rbp_rule == MEMO_RBP_SAME) {
    valid |= regs->valid & (1u << PROF_REG_RBP);
  }
  if (!stack_word(mem, cfa + (uintptr_t)(int64_t)m->ra_offset, &regs->r[PROF_REG_RIP])) return PROF_STEP_NO_FDE;
  regs->r[PROF_REG_RSP] = cfa;
  regs->valid = valid;
  return regs->r[PROF_REG_RIP] ? PROF_STEP_OK : PROF_STEP_END;
}

typedef struct walk {
  prof_regs_t *regs; /* the frame being left, updated in place */
  prof_memory_t mem;
  uintptr_t *pcs;
  unsigned max, skip, n;
  const prof_regs_t *start; /* a copy of *regs at the start, for a walk that starts again */
  unsigned start_skip;
} walk_t;

/* The caller by frame pointers: [rbp] is the caller's rbp, [rbp + 8] the return address. */
static bool step_frame_pointer(const prof_memory_t *mem, prof_regs_t *regs) {
  uintptr_t fp = regs->r[PROF_REG_RBP], next_fp, ra;
  if (!(regs->valid & (1u << PROF_REG_RBP)) || fp < regs->r[PROF_REG_RSP]) return false;
  if (!prof_memory_read(mem, fp, &next_fp) || !prof_memory_read(mem, fp + 8, &ra) || ra == 0) return false;
  regs->r[PROF_REG_RIP] = ra;
  regs->r[PROF_REG_RSP] = fp + 16;
  regs->r[PROF_REG_RBP] = next_fp;
  regs->valid = (1u << PROF_REG_RIP) | (1u << PROF_REG_RSP) | (1u << PROF_REG_RBP);
  return true;
}

/* Records the current frame's PC (after skipping) and says whether to go on. */
static bool emit(walk_t *w) {
  if (w->skip > 0) w->skip--;
  else w->pcs[w->n++] = w->regs->r[PROF_REG_RIP];
  return w->n < w->max;
}

static void restart(walk_t *w) {
  *w->regs = *w->start;
  w->skip = w->start_skip;
  w->n = 0;
}

/* The walk with cached rows alone, outside the loader's lock (prof_cfi_cache.h): false
 * when a step cannot be taken so (the walk must then run under the lock). *permanent
 * tells whether every row it used was of a PC in a module never unloaded
 * (cached_row_t.permanent): then the rows are right without the check under the lock.
 * It walks a copy of the walk's registers alone (prof_cfi_apply_walk: the others are
 * unknown to it) and leaves w->regs as it found them, for a walk that starts again. */
static bool walk_lockless(walk_t *w, uint64_t generation, bool *permanent) {
  prof_memory_t stack_only = {w->mem.stack_lo, w->mem.stack_hi, NULL};
  prof_regs_t regs;
  regs.r[PROF_REG_RIP] = w->regs->r[PROF_REG_RIP];
  regs.r[PROF_REG_RSP] = w->regs->r[PROF_REG_RSP];
  regs.r[PROF_REG_RBP] = w->regs->r[PROF_REG_RBP];
  regs.valid = w->regs->valid & PROF_CFI_WALK_REGS;
  /* The memo is this thread's; a capture nested in it (a signal handler's) leaves it. */
  bool memo = !tls_memo_busy;
  tls_memo_busy = true;
  atomic_signal_fence(memory_order_seq_cst);
  bool done = true;
  *permanent = true;
  for (unsigned frames = 0; frames < PROF_DEPTH_MAX + 64; frames++) {
    uintptr_t pc = regs.r[PROF_REG_RIP] - (frames != 0 ? 1 : 0);
    memo_step_t *m = memo && frames < MEMO_STEPS ? &tls_memo[frames] : NULL;
    prof_step_t s;
    if (m != NULL && m->pc == pc && pc != 0) {
      s = memo_apply(&stack_only, m, &regs);
    } else {
      row_words_t row;
      s = prof_cfi_step_lockless(&stack_only, &regs, pc, generation, permanent, &row);
      if (m != NULL && (s == PROF_STEP_OK || (s == PROF_STEP_END && row.row.outermost))) memo_store(m, &row.row);
    }
    if (s == PROF_STEP_NO_FDE) {
      done = false;
      break;
    }
    if (s == PROF_STEP_END || s == PROF_STEP_BAD) break;
    if (regs.r[PROF_REG_RSP] >= w->mem.stack_hi) break;
    if (w->skip > 0) w->skip--;
    else w->pcs[w->n++] = regs.r[PROF_REG_RIP];
    if (w->n >= w->max) break;
  }
  atomic_signal_fence(memory_order_seq_cst);
  if (memo) tls_memo_busy = false;
  return done;
}

/* The walk under the loader's lock (t current), or with frame pointers alone (t NULL). */
static void walk(const prof_module_table_t *t, void *arg) {
  walk_t *w = arg;
  restart(w);
  w->mem.modules = t;
  bool first = true, use_cfi = t != NULL;
  for (unsigned frames = 0; frames < PROF_DEPTH_MAX + 64; frames++) {
    prof_step_t s = use_cfi ? prof_cfi_step_inline(&w->mem, w->regs, !first) : PROF_STEP_NO_FDE;
    if (s == PROF_STEP_END || s == PROF_STEP_BAD) return;
    if (s == PROF_STEP_NO_FDE && !step_frame_pointer(&w->mem, w->regs)) return;
    first = false;
    if (w->regs->r[PROF_REG_RSP] >= w->mem.stack_hi) return;
    if (!emit(w)) return;
  }
}

/* The loader's lock is held only to check the walk (a few hundred instructions) when
 * every step had a cached row, for the whole walk otherwise. */
static unsigned capture(walk_t *w, bool use_cfi) {
  if (!stack_bounds(w->regs->r[PROF_REG_RSP], &w->mem.stack_lo, &w->mem.stack_hi)) return 0;
  w->start_skip = w->skip;
  /* The capturing function's own frame is not reported. */
  uint64_t generation = use_cfi ? prof_modules_generation() : 0;
  bool permanent = false, walked = generation != 0 && walk_lockless(w, generation, &permanent);
  if (walked && permanent) return w->n; /* the common case: no copy of the registers */
  prof_regs_t start = *w->regs; /* walk() starts again from it (restart) */
  w->start = &start;
  if (!use_cfi) {
    walk(NULL, w);
    return w->n;
  }
  prof_modules_verdict_t v;
  if (walked) v = prof_modules_check(generation, walk, w);
  else v = prof_modules_locked(walk, w) ? PROF_MODULES_RAN : PROF_MODULES_NONE;
  if (v == PROF_MODULES_NONE) walk(NULL, w);
  return w->n;
}

__attribute__((noinline)) unsigned prof_unwind_capture(uintptr_t *pcs, unsigned max, unsigned skip) {
  prof_regs_t regs;
  walk_t w = {.regs = &regs, .pcs = pcs, .max = max < PROF_DEPTH_MAX ? max : PROF_DEPTH_MAX, .skip = skip};
  if (w.max == 0) return 0;
  PROF_UNWIND_CAPTURE_REGS(&regs);
  return capture(&w, true);
}

unsigned prof_unwind_capture_from(prof_regs_t *start, uintptr_t *pcs, unsigned max, unsigned skip) {
  walk_t w = {.regs = start, .pcs = pcs, .max = max < PROF_DEPTH_MAX ? max : PROF_DEPTH_MAX, .skip = skip};
  if (w.max == 0) return 0;
  return capture(&w, true);
}

__attribute__((noinline)) unsigned prof_unwind_capture_fp(uintptr_t *pcs, unsigned max, unsigned skip) {
  prof_regs_t regs;
  walk_t w = {.regs = &regs, .pcs = pcs, .max = max < PROF_DEPTH_MAX ? max : PROF_DEPTH_MAX, .skip = skip};
  if (w.max == 0) return 0;
  PROF_UNWIND_CAPTURE_REGS(&regs);
  /* Without CFI the starting frame must be left by its frame pointer, which only a
   * function built with frame pointers has: start from our caller's frame instead. */
  regs.r[PROF_REG_RBP] = (uintptr_t)__builtin_frame_address(0);
  return capture(&w, false);
}
