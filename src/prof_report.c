/* SPDX-License-Identifier: MIT */
/* prof_report: see prof_report.h. */
#include "prof_report.h"

void prof_report_frame(prof_out_t *o, prof_symbolizer_t *sym, uintptr_t pc) {
  prof_symbol_t s;
  uintptr_t addr = pc - 1; /* a return address: name the call instruction */
  if (!prof_symbolize(sym, addr, &s)) {
    prof_out_hex(o, pc);
    return;
  }
  if (s.name) {
    prof_out_str(o, s.name);
    prof_out_str(o, "+");
    prof_out_hex(o, pc - s.start);
    prof_out_str(o, " (");
    prof_out_str(o, prof_basename(s.module->name));
    prof_out_str(o, ")");
  } else {
    prof_out_str(o, prof_basename(s.module->name));
    prof_out_str(o, "+");
    prof_out_hex(o, s.module_offset + 1);
  }
}

static void mib(prof_out_t *o, double bytes) {
  prof_out_fixed(o, bytes / 1048576.0, 2);
  prof_out_str(o, " MiB");
}

/* One site: "#n: B bytes (P%) in O objects (S sampled)", then its frames. */
static void site(prof_out_t *o, prof_symbolizer_t *sym, unsigned n, const prof_snapshot_entry_t *e, bool live,
                 double total, unsigned max_frames) {
  double bytes = live ? e->counts.live_est_bytes : e->counts.alloc_est_bytes;
  double objects = live ? e->counts.live_est_objects : e->counts.alloc_est_objects;
  prof_out_str(o, "\n#");
  prof_out_dec(o, n);
  prof_out_str(o, ": ");
  prof_out_dec(o, (uint64_t)(bytes + 0.5));
  prof_out_str(o, " bytes (");
  prof_out_fixed(o, total > 0 ? 100.0 * bytes / total : 0, 1);
  prof_out_str(o, "%) in ");
  prof_out_fixed(o, objects, 0);
  prof_out_str(o, " objects (");
  prof_out_dec(o, live ? e->counts.live_objects : e->counts.alloc_objects);
  prof_out_str(o, " sampled)\n");
  for (unsigned k = 0; k < e->stack->depth && k < max_frames; k++) {
    prof_out_str(o, "    ");
    prof_report_frame(o, sym, e->stack->pcs[k]);
    prof_out_str(o, "\n");
  }
}

/* The sites of s (sorted already) with bytes of the kind asked for, up to max_sites. */
static unsigned sites(prof_out_t *o, prof_symbolizer_t *sym, const prof_snapshot_t *s, bool live, unsigned max_sites,
                      unsigned max_frames) {
  unsigned shown = 0;
  for (unsigned i = 0; i < s->count && shown < max_sites; i++) {
    const prof_snapshot_entry_t *e = &s->entries[i];
    if ((live ? e->counts.live_objects : e->counts.alloc_objects) == 0) break;
    site(o, sym, ++shown, e, live, live ? s->total.live_est_bytes : s->total.alloc_est_bytes, max_frames);
  }
  return shown;
}

void prof_report_write(prof_out_t *o, prof_snapshot_t *s, prof_symbolizer_t *sym, const char *title,
                       unsigned max_sites, unsigned max_frames, bool with_allocated) {
  prof_out_str(o, title);
  prof_out_str(o, "\nsample interval (mean) ");
  prof_out_dec(o, s->period);
  prof_out_str(o, " bytes; in use (estimated) ");
  mib(o, s->total.live_est_bytes);
  prof_out_str(o, " in ");
  prof_out_fixed(o, s->total.live_est_objects, 0);
  prof_out_str(o, " objects; allocated since start ");
  mib(o, s->total.alloc_est_bytes);
  if (s->dropped) {
    prof_out_str(o, "; samples dropped at the table bounds ");
    prof_out_dec(o, s->dropped);
  }
  prof_out_str(o, "\n");
  if (with_allocated) prof_out_str(o, "\n== in use: sites by bytes still allocated, largest first\n");
  prof_snapshot_sort_live(s);
  if (sites(o, sym, s, true, max_sites, max_frames) == 0) prof_out_str(o, "\nno sampled memory in use\n");
  if (!with_allocated) return;
  prof_out_str(o, "\n== allocated since start: sites by bytes allocated, freed or not, largest first\n");
  prof_snapshot_sort_allocated(s);
  if (sites(o, sym, s, false, max_sites, max_frames) == 0) prof_out_str(o, "\nno sampled allocation\n");
}
