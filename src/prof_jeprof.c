/* SPDX-License-Identifier: MIT */
/* prof_jeprof: see prof_jeprof.h. */
#include "prof_jeprof.h"

#include "os.h"

static void counts_line(prof_out_t *o, const prof_counts_t *c) {
  prof_out_str(o, "  t*: ");
  prof_out_dec(o, c->live_objects);
  prof_out_str(o, ": ");
  prof_out_dec(o, c->live_bytes);
  prof_out_str(o, " [");
  prof_out_dec(o, c->alloc_objects);
  prof_out_str(o, ": ");
  prof_out_dec(o, c->alloc_bytes);
  prof_out_str(o, "]\n");
}

static void copy_maps(prof_out_t *o) {
  int fd = os_open_read("/proc/self/maps");
  if (fd < 0) return;
  char buf[4096];
  for (long n; (n = os_read(fd, buf, sizeof(buf))) > 0;) prof_out_bytes(o, buf, (size_t)n);
  os_close(fd);
}

void prof_jeprof_write(prof_out_t *o, const prof_snapshot_t *s) {
  prof_out_str(o, "heap_v2/");
  prof_out_dec(o, s->period);
  prof_out_str(o, "\n");
  counts_line(o, &s->total);
  for (unsigned i = 0; i < s->count; i++) {
    const prof_snapshot_entry_t *e = &s->entries[i];
    if (e->counts.alloc_objects == 0 && e->counts.live_objects == 0) continue;
    prof_out_str(o, "@");
    for (unsigned k = 0; k < e->stack->depth; k++) {
      prof_out_str(o, " ");
      prof_out_hex(o, e->stack->pcs[k]);
    }
    prof_out_str(o, "\n");
    counts_line(o, &e->counts);
  }
  prof_out_str(o, "\nMAPPED_LIBRARIES:\n");
  copy_maps(o);
}
