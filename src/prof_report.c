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

void prof_report_write(prof_out_t *o, prof_snapshot_t *s, prof_symbolizer_t *sym, const char *title,
                       unsigned max_sites, unsigned max_frames) {
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
  prof_snapshot_sort_live(s);
  unsigned shown = 0;
  for (unsigned i = 0; i < s->count && shown < max_sites; i++) {
    const prof_snapshot_entry_t *e = &s->entries[i];
    if (e->counts.live_objects == 0) break;
    shown++;
    prof_out_str(o, "\n#");
    prof_out_dec(o, shown);
    prof_out_str(o, ": ");
    prof_out_dec(o, (uint64_t)(e->counts.live_est_bytes + 0.5));
    prof_out_str(o, " bytes (");
    double share = s->total.live_est_bytes > 0 ? 100.0 * e->counts.live_est_bytes / s->total.live_est_bytes : 0;
    prof_out_fixed(o, share, 1);
    prof_out_str(o, "%) in ");
    prof_out_fixed(o, e->counts.live_est_objects, 0);
    prof_out_str(o, " objects (");
    prof_out_dec(o, e->counts.live_objects);
    prof_out_str(o, " sampled)\n");
    for (unsigned k = 0; k < e->stack->depth && k < max_frames; k++) {
      prof_out_str(o, "    ");
      prof_report_frame(o, sym, e->stack->pcs[k]);
      prof_out_str(o, "\n");
    }
  }
  if (shown == 0) prof_out_str(o, "\nno sampled memory in use\n");
}
