/* SPDX-License-Identifier: MIT */
/* prof_cfi: see prof_cfi.h. The DWARF format is described in the DWARF 4 standard
 * (section 6.4, call frame information) and the LSB's .eh_frame / .eh_frame_hdr
 * chapter. */
#include "prof_cfi.h"
#include "prof_cfi_cache.h"

#include <string.h>

/* ---------------------------------------------------------------- checked reading */

typedef struct cursor {
  const uint8_t *p, *end;
  bool bad;
} cursor_t;

static bool take(cursor_t *c, size_t n) {
  if (c->bad || (size_t)(c->end - c->p) < n) {
    c->bad = true;
    return false;
  }
  return true;
}

static uint64_t read_fixed(cursor_t *c, size_t n) {
  if (!take(c, n)) return 0;
  uint64_t v = 0;
  memcpy(&v, c->p, n); /* little endian */
  c->p += n;
  return v;
}

static uint8_t u8(cursor_t *c) { return (uint8_t)read_fixed(c, 1); }

static uint64_t uleb(cursor_t *c) {
  uint64_t v = 0;
  for (unsigned shift = 0; take(c, 1); shift += 7) {
    uint8_t b = *c->p++;
    if (shift < 64) v |= (uint64_t)(b & 0x7f) << shift;
    if (!(b & 0x80)) return v;
  }
  return 0;
}

static int64_t sleb(cursor_t *c) {
  uint64_t v = 0;
  unsigned shift = 0;
  for (; take(c, 1);) {
    uint8_t b = *c->p++;
    if (shift < 64) v |= (uint64_t)(b & 0x7f) << shift;
    shift += 7;
    if (!(b & 0x80)) {
      if (shift < 64 && (b & 0x40)) v |= ~(uint64_t)0 << shift;
      return (int64_t)v;
    }
  }
  return 0;
}

enum {
  PE_ABSPTR = 0x00, PE_ULEB = 0x01, PE_UDATA2 = 0x02, PE_UDATA4 = 0x03, PE_UDATA8 = 0x04,
  PE_SLEB = 0x09, PE_SDATA2 = 0x0a, PE_SDATA4 = 0x0b, PE_SDATA8 = 0x0c,
  PE_PCREL = 0x10, PE_DATAREL = 0x30, PE_INDIRECT = 0x80, PE_OMIT = 0xff
};

/* A pointer in encoding enc; data_base serves DW_EH_PE_datarel. Indirect pointers are
 * not needed for unwinding (only personality routines use them) and are refused. */
static uintptr_t read_encoded(cursor_t *c, uint8_t enc, uintptr_t data_base) {
  if (enc == PE_OMIT) return 0;
  uintptr_t here = (uintptr_t)c->p, v;
  switch (enc & 0x0f) {
  case PE_ABSPTR: case PE_UDATA8: case PE_SDATA8: v = (uintptr_t)read_fixed(c, 8); break;
  case PE_ULEB: v = (uintptr_t)uleb(c); break;
  case PE_SLEB: v = (uintptr_t)sleb(c); break;
  case PE_UDATA2: v = (uintptr_t)read_fixed(c, 2); break;
  case PE_SDATA2: v = (uintptr_t)(int64_t)(int16_t)read_fixed(c, 2); break;
  case PE_UDATA4: v = (uintptr_t)read_fixed(c, 4); break;
  case PE_SDATA4: v = (uintptr_t)(int64_t)(int32_t)read_fixed(c, 4); break;
  default: c->bad = true; return 0;
  }
  switch (enc & 0x70) {
  case 0: break;
  case PE_PCREL: v += here; break;
  case PE_DATAREL: v += data_base; break;
  default: c->bad = true; return 0;
  }
  if (enc & PE_INDIRECT) c->bad = true;
  return v;
}

bool prof_memory_read(const prof_memory_t *mem, uintptr_t addr, uintptr_t *out) {
  if (addr & 7) return false;
  bool ok = (addr >= mem->stack_lo && addr + 8 <= mem->stack_hi) ||
            (mem->modules && prof_module_readable(mem->modules, addr, 8));
  if (ok) memcpy(out, (const void *)addr, 8);
  return ok;
}

/* ---------------------------------------------------------------- CIE and FDE */

typedef struct cie {
  uint64_t code_align;
  int64_t data_align;
  uint64_t ra_reg;
  uint8_t fde_enc;
  bool has_z, signal_frame;
  const uint8_t *insns, *insns_end;
} cie_t;

typedef struct fde {
  uintptr_t pc_begin, pc_end;
  const uint8_t *insns, *insns_end;
  cie_t cie;
} fde_t;

/* An entry's length field; the cursor ends up after it and *end at the entry's end. */
static bool entry_bounds(cursor_t *c, const uint8_t **end) {
  uint64_t len = read_fixed(c, 4);
  if (len == 0xffffffffu) len = read_fixed(c, 8);
  if (c->bad || len == 0 || len > (uint64_t)(c->end - c->p)) return false;
  *end = c->p + len;
  return true;
}

static bool parse_augmentation(cursor_t *c, const char *aug, cie_t *cie, uintptr_t data_base) {
  const uint8_t *after = NULL;
  for (const char *a = aug; *a; a++) {
    switch (*a) {
    case 'z': {
      uint64_t len = uleb(c);
      if (c->bad || len > (uint64_t)(c->end - c->p)) return false;
      after = c->p + len;
      cie->has_z = true;
      break;
    }
    case 'L': u8(c); break;
    case 'R': cie->fde_enc = u8(c); break;
    case 'S': cie->signal_frame = true; break;
    case 'P': {
      uint8_t enc = u8(c);
      read_encoded(c, enc & (uint8_t)~PE_INDIRECT, data_base);
      break;
    }
    default: /* unknown letter: with 'z' the data can be skipped whole */
      if (!after) return false;
      c->p = after;
      return !c->bad;
    }
    if (c->bad) return false;
  }
  if (after) c->p = after;
  return true;
}

static bool parse_cie(const uint8_t *at, const uint8_t *seg_end, cie_t *cie, uintptr_t data_base) {
  cursor_t c = {at, seg_end, false};
  const uint8_t *end;
  if (!entry_bounds(&c, &end)) return false;
  c.end = end;
  if (read_fixed(&c, 4) != 0) return false; /* a CIE's id is 0 in .eh_frame */
  uint8_t version = u8(&c);
  const char *aug = (const char *)c.p;
  while (take(&c, 1) && *c.p) c.p++;
  if (!take(&c, 1)) return false;
  c.p++;
  memset(cie, 0, sizeof(*cie));
  if (aug[0] == 'e' && aug[1] == 'h') read_fixed(&c, 8);
  cie->code_align = uleb(&c);
  cie->data_align = sleb(&c);
  cie->ra_reg = version == 1 ? u8(&c) : uleb(&c);
  if (c.bad || (aug[0] && aug[0] != 'z' && !(aug[0] == 'e' && aug[1] == 'h'))) return false;
  if (!parse_augmentation(&c, aug[0] == 'e' ? aug + 2 : aug, cie, data_base)) return false;
  cie->insns = c.p;
  cie->insns_end = end;
  return true;
}

static bool parse_fde(const uint8_t *at, const uint8_t *seg_lo, const uint8_t *seg_end, fde_t *f,
                      uintptr_t data_base) {
  cursor_t c = {at, seg_end, false};
  const uint8_t *end;
  if (!entry_bounds(&c, &end)) return false;
  c.end = end;
  const uint8_t *id_at = c.p;
  uint32_t id = (uint32_t)read_fixed(&c, 4);
  if (c.bad || id == 0 || id > (uintptr_t)(id_at - seg_lo)) return false;
  if (!parse_cie(id_at - id, seg_end, &f->cie, data_base)) return false;
  f->pc_begin = read_encoded(&c, f->cie.fde_enc, data_base);
  f->pc_end = f->pc_begin + read_encoded(&c, f->cie.fde_enc & 0x0f, data_base);
  if (f->cie.has_z) {
    uint64_t len = uleb(&c);
    if (c.bad || len > (uint64_t)(c.end - c.p)) return false;
    c.p += len;
  }
  f->insns = c.p;
  f->insns_end = end;
  return !c.bad;
}

/* The segment of m that contains p (CFI tables never cross segments). */
static const prof_segment_t *segment_of(const prof_module_t *m, const uint8_t *p) {
  for (unsigned i = 0; i < m->nsegments; i++)
    if ((uintptr_t)p >= m->segments[i].lo && (uintptr_t)p < m->segments[i].hi) return &m->segments[i];
  return NULL;
}

/* Binary search of .eh_frame_hdr's table (sorted initial locations). */
static prof_step_t find_fde(const prof_module_t *m, uintptr_t pc, fde_t *f) {
  const uint8_t *hdr = m->eh_frame_hdr;
  const prof_segment_t *seg = segment_of(m, hdr);
  if (!seg) return PROF_STEP_NO_FDE;
  const uint8_t *seg_lo = (const uint8_t *)seg->lo, *seg_end = (const uint8_t *)seg->hi;
  cursor_t c = {hdr, seg_end, false};
  uint8_t version = u8(&c), ptr_enc = u8(&c), count_enc = u8(&c), table_enc = u8(&c);
  uintptr_t base = (uintptr_t)hdr;
  read_encoded(&c, ptr_enc, base);
  uintptr_t count = read_encoded(&c, count_enc, base);
  if (c.bad || version != 1 || table_enc != (PE_DATAREL | PE_SDATA4) || count == 0) return PROF_STEP_NO_FDE;
  const uint8_t *table = c.p;
  if (count > (uintptr_t)(seg_end - table) / 8) return PROF_STEP_BAD;
  uintptr_t lo = 0, hi = count; /* first entry with start > pc */
  while (lo < hi) {
    uintptr_t mid = (lo + hi) / 2;
    int32_t start;
    memcpy(&start, table + mid * 8, 4);
    if (base + (intptr_t)start <= pc) lo = mid + 1;
    else hi = mid;
  }
  if (lo == 0) return PROF_STEP_NO_FDE;
  int32_t fde_off;
  memcpy(&fde_off, table + (lo - 1) * 8 + 4, 4);
  const uint8_t *fde_at = (const uint8_t *)(base + (intptr_t)fde_off);
  if (fde_at < seg_lo || fde_at >= seg_end) return PROF_STEP_BAD;
  if (!parse_fde(fde_at, seg_lo, seg_end, f, base)) return PROF_STEP_BAD;
  return pc >= f->pc_begin && pc < f->pc_end ? PROF_STEP_OK : PROF_STEP_NO_FDE;
}

/* ---------------------------------------------------------------- the CFA program */

enum rule_kind { RULE_SAME, RULE_UNDEF, RULE_OFFSET, RULE_VAL_OFFSET, RULE_REGISTER, RULE_EXPR, RULE_VAL_EXPR };

typedef struct rule {
  uint8_t kind;
  int64_t value; /* offset, or register number */
  const uint8_t *expr;
  size_t expr_len;
} rule_t;

typedef struct row {
  uint64_t cfa_reg;
  int64_t cfa_offset;
  const uint8_t *cfa_expr; /* non-NULL: the CFA is computed by this expression */
  size_t cfa_expr_len;
  rule_t regs[PROF_NREGS];
} row_t;

#define STATE_STACK 8

typedef struct machine {
  row_t row, initial;
  row_t saved[STATE_STACK];
  unsigned nsaved;
  uintptr_t loc;
} machine_t;

static void set_rule(row_t *r, uint64_t reg, uint8_t kind, int64_t value) {
  if (reg >= PROF_NREGS) return; /* vector registers: not needed to find callers */
  r->regs[reg].kind = kind;
  r->regs[reg].value = value;
}

static void set_expr_rule(row_t *r, uint64_t reg, uint8_t kind, cursor_t *c) {
  uint64_t len = uleb(c);
  if (c->bad || len > (uint64_t)(c->end - c->p)) {
    c->bad = true;
    return;
  }
  if (reg < PROF_NREGS) {
    r->regs[reg].kind = kind;
    r->regs[reg].expr = c->p;
    r->regs[reg].expr_len = (size_t)len;
  }
  c->p += len;
}

/* Executes one extended (non-packed) opcode; false on an unknown one. */
static bool run_extended(machine_t *m, const cie_t *cie, uint8_t op, cursor_t *c) {
  row_t *r = &m->row;
  int64_t da = cie->data_align;
  uint64_t reg;
  switch (op) {
  case 0x00: return true;                                              /* nop */
  case 0x05: reg = uleb(c); set_rule(r, reg, RULE_OFFSET, (int64_t)uleb(c) * da); return true;
  case 0x06: reg = uleb(c); if (reg < PROF_NREGS) r->regs[reg] = m->initial.regs[reg]; return true;
  case 0x07: set_rule(r, uleb(c), RULE_UNDEF, 0); return true;
  case 0x08: set_rule(r, uleb(c), RULE_SAME, 0); return true;
  case 0x09: reg = uleb(c); set_rule(r, reg, RULE_REGISTER, (int64_t)uleb(c)); return true;
  case 0x0a:                                                           /* remember_state */
    if (m->nsaved == STATE_STACK) return false;
    m->saved[m->nsaved++] = *r;
    return true;
  case 0x0b:                                                           /* restore_state */
    if (m->nsaved == 0) return false;
    *r = m->saved[--m->nsaved];
    return true;
  case 0x0c: r->cfa_reg = uleb(c); r->cfa_offset = (int64_t)uleb(c); r->cfa_expr = NULL; return true;
  case 0x0d: r->cfa_reg = uleb(c); r->cfa_expr = NULL; return true;
  case 0x0e: r->cfa_offset = (int64_t)uleb(c); return true;
  case 0x0f: {                                                         /* def_cfa_expression */
    uint64_t len = uleb(c);
    if (c->bad || len > (uint64_t)(c->end - c->p)) return false;
    r->cfa_expr = c->p;
    r->cfa_expr_len = (size_t)len;
    c->p += len;
    return true;
  }
  case 0x10: reg = uleb(c); set_expr_rule(r, reg, RULE_EXPR, c); return true;
  case 0x11: reg = uleb(c); set_rule(r, reg, RULE_OFFSET, sleb(c) * da); return true;
  case 0x12: r->cfa_reg = uleb(c); r->cfa_offset = sleb(c) * da; r->cfa_expr = NULL; return true;
  case 0x13: r->cfa_offset = sleb(c) * da; return true;
  case 0x14: reg = uleb(c); set_rule(r, reg, RULE_VAL_OFFSET, (int64_t)uleb(c) * da); return true;
  case 0x15: reg = uleb(c); set_rule(r, reg, RULE_VAL_OFFSET, sleb(c) * da); return true;
  case 0x16: reg = uleb(c); set_expr_rule(r, reg, RULE_VAL_EXPR, c); return true;
  case 0x2e: uleb(c); return true;                                     /* GNU_args_size */
  case 0x2f: reg = uleb(c); set_rule(r, reg, RULE_OFFSET, -(int64_t)uleb(c) * da); return true;
  default: return false;
  }
}

/* Runs instructions until the location passes pc. False on a bad program. */
static bool run_program(machine_t *m, const cie_t *cie, const uint8_t *p, const uint8_t *end, uintptr_t pc,
                        uintptr_t data_base) {
  cursor_t c = {p, end, false};
  while (c.p < c.end && !c.bad) {
    uint8_t op = u8(&c), low = op & 0x3f;
    uintptr_t advance = 0;
    switch (op & 0xc0) {
    case 0x40: advance = low; break;
    case 0x80: set_rule(&m->row, low, RULE_OFFSET, (int64_t)uleb(&c) * cie->data_align); continue;
    case 0xc0: if (low < PROF_NREGS) m->row.regs[low] = m->initial.regs[low]; continue;
    default:
      switch (op) {
      case 0x01: m->loc = read_encoded(&c, cie->fde_enc, data_base); if (m->loc > pc) return true; continue;
      case 0x02: advance = u8(&c); break;
      case 0x03: advance = (uintptr_t)read_fixed(&c, 2); break;
      case 0x04: advance = (uintptr_t)read_fixed(&c, 4); break;
      default: if (!run_extended(m, cie, op, &c)) return false; continue;
      }
    }
    m->loc += advance * cie->code_align;
    if (m->loc > pc) return true;
  }
  return !c.bad;
}

/* ---------------------------------------------------------------- DWARF expressions */

#define EXPR_STACK 16

/* Evaluates expr with an optional initial value pushed; the subset compilers emit for
 * PLT entries and signal trampolines. */
static bool eval_expr(const prof_memory_t *mem, const prof_regs_t *regs, const uint8_t *expr, size_t len,
                      bool push_initial, uintptr_t initial, uintptr_t *out) {
  uintptr_t st[EXPR_STACK];
  unsigned n = 0;
  if (push_initial) st[n++] = initial;
  cursor_t c = {expr, expr + len, false};
  while (c.p < c.end && !c.bad) {
    uint8_t op = u8(&c);
    uintptr_t a, b;
    if (n + 1 >= EXPR_STACK) return false;
    if (op >= 0x30 && op <= 0x4f) { st[n++] = op - 0x30; continue; }   /* lit0..31 */
    if (op >= 0x70 && op <= 0x8f) {                                    /* breg0..31 */
      unsigned reg = op - 0x70;
      int64_t off = sleb(&c);
      if (reg >= PROF_NREGS || !(regs->valid & (1u << reg))) return false;
      st[n++] = regs->r[reg] + (uintptr_t)off;
      continue;
    }
    switch (op) {
    case 0x08: st[n++] = u8(&c); continue;                              /* const1u */
    case 0x09: st[n++] = (uintptr_t)(int64_t)(int8_t)u8(&c); continue;  /* const1s */
    case 0x0a: st[n++] = (uintptr_t)read_fixed(&c, 2); continue;
    case 0x0b: st[n++] = (uintptr_t)(int64_t)(int16_t)read_fixed(&c, 2); continue;
    case 0x0c: st[n++] = (uintptr_t)read_fixed(&c, 4); continue;
    case 0x0d: st[n++] = (uintptr_t)(int64_t)(int32_t)read_fixed(&c, 4); continue;
    case 0x0e: case 0x0f: st[n++] = (uintptr_t)read_fixed(&c, 8); continue;
    case 0x10: st[n++] = (uintptr_t)uleb(&c); continue;                 /* constu */
    case 0x11: st[n++] = (uintptr_t)sleb(&c); continue;                 /* consts */
    case 0x12: if (n < 1) return false; st[n] = st[n - 1]; n++; continue; /* dup */
    case 0x13: if (n < 1) return false; n--; continue;                  /* drop */
    case 0x16: if (n < 2) return false; a = st[n - 1]; st[n - 1] = st[n - 2]; st[n - 2] = a; continue;
    case 0x06:                                                          /* deref */
      if (n < 1 || !prof_memory_read(mem, st[n - 1], &st[n - 1])) return false;
      continue;
    case 0x23: if (n < 1) return false; st[n - 1] += (uintptr_t)uleb(&c); continue; /* plus_uconst */
    default: break;
    }
    if (n < 2) return false; /* binary operators */
    b = st[--n];
    a = st[n - 1];
    switch (op) {
    case 0x1a: a &= b; break;
    case 0x1c: a -= b; break;
    case 0x21: a |= b; break;
    case 0x22: a += b; break;
    case 0x24: a = b < 64 ? a << b : 0; break;
    case 0x25: a = b < 64 ? a >> b : 0; break;
    case 0x27: a ^= b; break;
    case 0x29: a = a == b; break;
    case 0x2a: a = (intptr_t)a >= (intptr_t)b; break;
    case 0x2b: a = (intptr_t)a > (intptr_t)b; break;
    case 0x2c: a = (intptr_t)a <= (intptr_t)b; break;
    case 0x2d: a = (intptr_t)a < (intptr_t)b; break;
    case 0x2e: a = a != b; break;
    default: return false;
    }
    st[n - 1] = a;
  }
  if (c.bad || n == 0) return false;
  *out = st[n - 1];
  return true;
}

/* ---------------------------------------------------------------- one step */

static bool compute_cfa(const prof_memory_t *mem, const row_t *row, const prof_regs_t *regs, uintptr_t *cfa) {
  if (row->cfa_expr) return eval_expr(mem, regs, row->cfa_expr, row->cfa_expr_len, false, 0, cfa);
  if (row->cfa_reg >= PROF_NREGS || !(regs->valid & (1u << row->cfa_reg))) return false;
  *cfa = regs->r[row->cfa_reg] + (uintptr_t)row->cfa_offset;
  return true;
}

/* The caller's value of register i; false if it cannot be known. */
static bool recover(const prof_memory_t *mem, const rule_t *rule, const prof_regs_t *regs, uintptr_t cfa,
                    unsigned i, uintptr_t *out) {
  uintptr_t addr;
  switch (rule->kind) {
  case RULE_SAME: *out = regs->r[i]; return (regs->valid >> i) & 1;
  case RULE_OFFSET: return prof_memory_read(mem, cfa + (uintptr_t)rule->value, out);
  case RULE_VAL_OFFSET: *out = cfa + (uintptr_t)rule->value; return true;
  case RULE_REGISTER:
    if (rule->value < 0 || rule->value >= PROF_NREGS || !((regs->valid >> rule->value) & 1)) return false;
    *out = regs->r[rule->value];
    return true;
  case RULE_EXPR:
    return eval_expr(mem, regs, rule->expr, rule->expr_len, true, cfa, &addr) && prof_memory_read(mem, addr, out);
  case RULE_VAL_EXPR: return eval_expr(mem, regs, rule->expr, rule->expr_len, true, cfa, out);
  default: return false;
  }
}

/* The caller's registers from the row at the PC (the frame's unwind rules). */
static prof_step_t apply_row(const prof_memory_t *mem, const row_t *row, bool signal_frame, prof_regs_t *regs) {
  uintptr_t cfa;
  if (!compute_cfa(mem, row, regs, &cfa)) return PROF_STEP_BAD;
  if (row->regs[PROF_REG_RIP].kind == RULE_UNDEF) return PROF_STEP_END;
  prof_regs_t next = {.valid = 0};
  for (unsigned i = 0; i < PROF_NREGS; i++)
    if (row->regs[i].kind != RULE_UNDEF && recover(mem, &row->regs[i], regs, cfa, i, &next.r[i]))
      next.valid |= 1u << i;
  if (!(next.valid & (1u << PROF_REG_RIP))) return PROF_STEP_BAD;
  if (row->regs[PROF_REG_RSP].kind == RULE_SAME) {
    next.r[PROF_REG_RSP] = cfa; /* the CFA is the caller's stack pointer by definition */
    next.valid |= 1u << PROF_REG_RSP;
  }
  if (!signal_frame && cfa <= regs->r[PROF_REG_RSP]) return PROF_STEP_BAD; /* must move up */
  *regs = next;
  return next.r[PROF_REG_RIP] ? PROF_STEP_OK : PROF_STEP_END;
}

/* ---------------------------------------------------------------- cached rows */

cached_row_t prof_cfi_rows[PROF_CFI_ROWS] __attribute__((aligned(64)));

static bool fits_int16(int64_t v) { return v >= INT16_MIN && v <= INT16_MAX; }

/* Writes *from into slot for lockless readers (prof_cfi_row_copy): its sequence number
 * odd while it is written. Writers hold the loader's lock (a dl_iterate_phdr callback). */
static void row_write(cached_row_t *slot, const cached_row_t *from) {
  uint32_t seq = slot->seq;
  __atomic_store_n(&slot->seq, seq + 1, __ATOMIC_RELAXED);
  __atomic_thread_fence(__ATOMIC_RELEASE);
  cached_row_t c = *from;
  c.seq = seq + 1;
  *slot = c;
  __atomic_store_n(&slot->seq, seq + 2, __ATOMIC_RELEASE);
}

static void cache_store(uintptr_t pc, uint64_t generation, const row_t *row, bool signal_frame) {
  if (row->cfa_expr || row->cfa_reg >= PROF_NREGS || !fits_int16(row->cfa_offset)) return;
  unsigned ra = row->regs[PROF_REG_RIP].kind;
  if (ra != RULE_OFFSET && ra != RULE_UNDEF) return; /* the common shape only */
  cached_row_t c = {.pc = pc, .generation = generation, .cfa_offset = (int16_t)row->cfa_offset,
                    .cfa_reg = (uint8_t)row->cfa_reg, .signal_frame = signal_frame,
                    .rsp_is_cfa = row->regs[PROF_REG_RSP].kind == RULE_SAME, .outermost = ra == RULE_UNDEF,
                    .permanent = prof_modules_permanent(pc)};
  /* The walk's own registers first (PROF_CFI_WALK_REGS: the lockless walk restores
   * only those, from the row's first saved entries), then the others. */
  for (unsigned pass = 0; pass < 2; pass++) {
    for (unsigned i = 0; i < PROF_NREGS; i++) {
      if ((((PROF_CFI_WALK_REGS >> i) & 1) != 0) != (pass == 0)) continue;
      const rule_t *r = &row->regs[i];
      if (r->kind == RULE_SAME && i != PROF_REG_RSP) c.keep_mask |= 1u << i;
      else if (r->kind == RULE_OFFSET && c.nsaved < ROW_CACHE_SAVED && fits_int16(r->value)) {
        c.saved_reg[c.nsaved] = (uint8_t)i;
        c.saved_offset[c.nsaved++] = (int16_t)r->value;
      } else if (r->kind != RULE_UNDEF && !(r->kind == RULE_SAME && i == PROF_REG_RSP)) {
        return;
      }
    }
  }
  for (unsigned k = 0; k < c.nsaved; k++) {
    if (k == 0 || c.saved_offset[k] < c.saved_lo) c.saved_lo = c.saved_offset[k];
    if (k == 0 || c.saved_offset[k] > c.saved_hi) c.saved_hi = c.saved_offset[k];
    c.saved_mask |= 1u << c.saved_reg[k];
  }
  cached_row_t *set = prof_cfi_row_set(pc);
  if (set[0].pc != pc) row_write(&set[1], &set[0]); /* the older row moves to the second way */
  row_write(&set[0], &c);
}

uint32_t prof_cfi_read_saved_checked(const prof_memory_t *mem, const cached_row_t *c, uintptr_t cfa, prof_regs_t *regs,
                                     uint32_t valid) {
  uintptr_t saved[ROW_CACHE_SAVED];
  for (unsigned k = 0; k < c->nsaved; k++)
    if (prof_memory_read(mem, cfa + (uintptr_t)(int64_t)c->saved_offset[k], &saved[k])) valid |= 1u << c->saved_reg[k];
  for (unsigned k = 0; k < c->nsaved; k++) regs->r[c->saved_reg[k]] = saved[k];
  return valid;
}

/* A step whose row is not cached: the FDE found and its program run (out of line: its
 * frame is large, and the cached step should not pay for saving it). */
prof_step_t prof_cfi_step_uncached(const prof_memory_t *mem, prof_regs_t *regs, uintptr_t pc, uint64_t generation) {
  machine_t m;
  const prof_module_t *mod = mem->modules ? prof_module_find(mem->modules, pc) : NULL;
  if (!mod || !mod->eh_frame_hdr) return PROF_STEP_NO_FDE;
  fde_t f;
  prof_step_t found = find_fde(mod, pc, &f);
  if (found != PROF_STEP_OK) return found;
  if (f.cie.ra_reg != PROF_REG_RIP) return PROF_STEP_BAD;
  memset(&m.row, 0, sizeof(m.row));
  m.nsaved = 0;
  m.loc = f.pc_begin;
  uintptr_t data_base = (uintptr_t)mod->eh_frame_hdr;
  m.initial = m.row;
  if (!run_program(&m, &f.cie, f.cie.insns, f.cie.insns_end, pc, data_base)) return PROF_STEP_BAD;
  m.initial = m.row;
  m.loc = f.pc_begin;
  if (!run_program(&m, &f.cie, f.insns, f.insns_end, pc, data_base)) return PROF_STEP_BAD;
  if (pc != 0 && mem->modules) cache_store(pc, generation, &m.row, f.cie.signal_frame);
  return apply_row(mem, &m.row, f.cie.signal_frame, regs);
}

prof_step_t prof_cfi_step(const prof_memory_t *mem, prof_regs_t *regs, bool pc_is_return_address) {
  return prof_cfi_step_inline(mem, regs, pc_is_return_address);
}
