/* SPDX-License-Identifier: MIT */
/* prof_pprof: see prof_pprof.h. */
#include "prof_pprof.h"
#include "prof_meta.h"

#include "prof_proto.h"

#include <string.h>

/* profile.proto field numbers */
enum {
  PROFILE_SAMPLE_TYPE = 1, PROFILE_SAMPLE = 2, PROFILE_MAPPING = 3, PROFILE_LOCATION = 4,
  PROFILE_FUNCTION = 5, PROFILE_STRING_TABLE = 6, PROFILE_PERIOD_TYPE = 11, PROFILE_PERIOD = 12,
  PROFILE_COMMENT = 13, PROFILE_DEFAULT_SAMPLE_TYPE = 14,
  VALUE_TYPE_TYPE = 1, VALUE_TYPE_UNIT = 2,
  SAMPLE_LOCATION_ID = 1, SAMPLE_VALUE = 2,
  MAPPING_ID = 1, MAPPING_START = 2, MAPPING_LIMIT = 3, MAPPING_OFFSET = 4, MAPPING_FILENAME = 5,
  MAPPING_BUILD_ID = 6, MAPPING_HAS_FUNCTIONS = 7,
  LOCATION_ID = 1, LOCATION_MAPPING_ID = 2, LOCATION_ADDRESS = 3, LOCATION_LINE = 4,
  LINE_FUNCTION_ID = 1,
  FUNCTION_ID = 1, FUNCTION_NAME = 2, FUNCTION_SYSTEM_NAME = 3, FUNCTION_FILENAME = 4,
};

/* The fixed strings, in string-table order (index 0 must be ""). */
enum { S_EMPTY, S_ALLOC_OBJECTS, S_COUNT, S_ALLOC_SPACE, S_BYTES, S_INUSE_OBJECTS, S_INUSE_SPACE, S_SPACE, S_FIXED };
static const char *const fixed_strings[S_FIXED] = {"", "alloc_objects", "count", "alloc_space", "bytes",
                                                  "inuse_objects", "inuse_space", "space"};

/* An open-addressing map from a nonzero key to an id. */
typedef struct id_map {
  uintptr_t *keys;
  uint64_t *ids;
  size_t cap;
} id_map_t;

typedef struct writer {
  prof_out_t *out;
  prof_symbolizer_t *sym;
  id_map_t locations, functions;
  uint64_t next_string, next_location, next_function;
} writer_t;

static bool map_init(id_map_t *m, size_t n) {
  m->cap = 64;
  while (m->cap < 2 * n) m->cap *= 2;
  m->keys = prof_meta_alloc(m->cap * sizeof(*m->keys));
  m->ids = prof_meta_alloc(m->cap * sizeof(*m->ids));
  return m->keys && m->ids;
}

static void map_fini(id_map_t *m) {
  if (m->keys) prof_meta_free(m->keys, m->cap * sizeof(*m->keys));
  if (m->ids) prof_meta_free(m->ids, m->cap * sizeof(*m->ids));
}

/* The slot of key: found (keys[slot] == key) or the empty slot to fill. */
static size_t map_slot(const id_map_t *m, uintptr_t key) {
  size_t i = (size_t)((key * 0x9E3779B97F4A7C15ull) >> 17) & (m->cap - 1);
  while (m->keys[i] && m->keys[i] != key) i = (i + 1) & (m->cap - 1);
  return i;
}

static void emit_message(writer_t *w, unsigned field, const pb_buf_t *msg) {
  if (msg->overflow) return; /* cannot happen with the buffer sizes below; skip it if it does */
  uint8_t head[16];
  pb_buf_t h;
  pb_init(&h, head, sizeof(head));
  pb_varint(&h, (uint64_t)field << 3 | 2);
  pb_varint(&h, msg->len);
  prof_out_bytes(w->out, head, h.len);
  prof_out_bytes(w->out, msg->p, msg->len);
}

static uint64_t emit_string(writer_t *w, const char *s, size_t n) {
  uint8_t head[16];
  pb_buf_t h;
  pb_init(&h, head, sizeof(head));
  pb_varint(&h, (uint64_t)PROFILE_STRING_TABLE << 3 | 2);
  pb_varint(&h, n);
  prof_out_bytes(w->out, head, h.len);
  prof_out_bytes(w->out, s, n);
  return w->next_string++;
}

static void emit_header(writer_t *w, uint64_t period) {
  for (unsigned i = 0; i < S_FIXED; i++) emit_string(w, fixed_strings[i], strlen(fixed_strings[i]));
  static const unsigned types[4][2] = {{S_ALLOC_OBJECTS, S_COUNT}, {S_ALLOC_SPACE, S_BYTES},
                                      {S_INUSE_OBJECTS, S_COUNT}, {S_INUSE_SPACE, S_BYTES}};
  uint8_t mem[32];
  pb_buf_t b;
  for (unsigned i = 0; i < 4; i++) {
    pb_init(&b, mem, sizeof(mem));
    pb_uint(&b, VALUE_TYPE_TYPE, types[i][0]);
    pb_uint(&b, VALUE_TYPE_UNIT, types[i][1]);
    emit_message(w, PROFILE_SAMPLE_TYPE, &b);
  }
  pb_init(&b, mem, sizeof(mem));
  pb_uint(&b, VALUE_TYPE_TYPE, S_SPACE);
  pb_uint(&b, VALUE_TYPE_UNIT, S_BYTES);
  emit_message(w, PROFILE_PERIOD_TYPE, &b);
  pb_init(&b, mem, sizeof(mem));
  pb_uint(&b, PROFILE_PERIOD, period);
  pb_uint(&b, PROFILE_DEFAULT_SAMPLE_TYPE, S_INUSE_SPACE);
  prof_out_bytes(w->out, b.p, b.len);
}

static void emit_mappings(writer_t *w) {
  const prof_module_table_t *t = w->sym->modules;
  for (unsigned i = 0; i < t->count; i++) {
    const prof_module_t *m = &t->modules[i];
    const prof_segment_t *seg = NULL;
    for (unsigned k = 0; k < m->nsegments && !seg; k++)
      if (m->segments[k].exec) seg = &m->segments[k];
    if (!seg) continue;
    uint64_t file = emit_string(w, m->name, strlen(m->name));
    char hex[2 * sizeof(m->build_id)];
    for (unsigned k = 0; k < m->build_id_len; k++) {
      hex[2 * k] = "0123456789abcdef"[m->build_id[k] >> 4];
      hex[2 * k + 1] = "0123456789abcdef"[m->build_id[k] & 15];
    }
    uint64_t build_id = m->build_id_len ? emit_string(w, hex, 2u * m->build_id_len) : S_EMPTY;
    uint8_t mem[128];
    pb_buf_t b;
    pb_init(&b, mem, sizeof(mem));
    pb_uint(&b, MAPPING_ID, i + 1);
    pb_uint(&b, MAPPING_START, seg->lo);
    pb_uint(&b, MAPPING_LIMIT, seg->hi);
    pb_uint(&b, MAPPING_OFFSET, seg->file_offset);
    pb_uint(&b, MAPPING_FILENAME, file);
    pb_uint(&b, MAPPING_BUILD_ID, build_id);
    pb_uint(&b, MAPPING_HAS_FUNCTIONS, 1);
    emit_message(w, PROFILE_MAPPING, &b);
  }
}

/* The function id of a symbolized address, emitting the Function the first time. */
static uint64_t function_id(writer_t *w, const prof_symbol_t *s, uintptr_t addr) {
  uintptr_t key = s->name ? s->start : addr;
  size_t slot = map_slot(&w->functions, key);
  if (w->functions.keys[slot]) return w->functions.ids[slot];
  uint64_t name;
  if (s->name) {
    name = emit_string(w, s->name, strlen(s->name));
  } else { /* module+0xoffset */
    char buf[512];
    const char *base = s->module ? prof_basename(s->module->name) : "?";
    size_t n = strlen(base);
    if (n > sizeof(buf) - 24) n = sizeof(buf) - 24;
    memcpy(buf, base, n);
    buf[n++] = '+';
    buf[n++] = '0';
    buf[n++] = 'x';
    char tmp[17];
    int k = 16;
    uintptr_t v = s->module_offset;
    do tmp[--k] = "0123456789abcdef"[v & 15];
    while ((v >>= 4) != 0);
    memcpy(buf + n, tmp + k, (size_t)(16 - k));
    n += (size_t)(16 - k);
    name = emit_string(w, buf, n);
  }
  uint64_t file = s->module ? emit_string(w, s->module->name, strlen(s->module->name)) : S_EMPTY;
  uint64_t id = ++w->next_function;
  uint8_t mem[64];
  pb_buf_t b;
  pb_init(&b, mem, sizeof(mem));
  pb_uint(&b, FUNCTION_ID, id);
  pb_uint(&b, FUNCTION_NAME, name);
  pb_uint(&b, FUNCTION_SYSTEM_NAME, name);
  pb_uint(&b, FUNCTION_FILENAME, file);
  emit_message(w, PROFILE_FUNCTION, &b);
  w->functions.keys[slot] = key;
  w->functions.ids[slot] = id;
  return id;
}

/* The location id of a return address, emitting Location (and Function) the first time. */
static uint64_t location_id(writer_t *w, uintptr_t pc) {
  uintptr_t addr = pc - 1; /* the call instruction */
  size_t slot = map_slot(&w->locations, pc);
  if (w->locations.keys[slot]) return w->locations.ids[slot];
  prof_symbol_t s;
  prof_symbolize(w->sym, addr, &s);
  uint64_t fn = function_id(w, &s, addr);
  uint64_t id = ++w->next_location;
  uint8_t mem[64], line_mem[16];
  pb_buf_t b, line;
  pb_init(&line, line_mem, sizeof(line_mem));
  pb_uint(&line, LINE_FUNCTION_ID, fn);
  pb_init(&b, mem, sizeof(mem));
  pb_uint(&b, LOCATION_ID, id);
  if (s.module) pb_uint(&b, LOCATION_MAPPING_ID, (uint64_t)(s.module - w->sym->modules->modules) + 1);
  pb_uint(&b, LOCATION_ADDRESS, addr);
  pb_bytes(&b, LOCATION_LINE, line.p, line.len);
  emit_message(w, PROFILE_LOCATION, &b);
  w->locations.keys[slot] = pc;
  w->locations.ids[slot] = id;
  return id;
}

static uint64_t rounded(double v) { return v > 0 ? (uint64_t)(v + 0.5) : 0; }

static void emit_sample(writer_t *w, const prof_snapshot_entry_t *e) {
  const prof_counts_t *c = &e->counts;
  if (c->alloc_objects == 0 && c->live_objects == 0) return;
  uint64_t ids[PROF_DEPTH_MAX];
  unsigned n = 0;
  for (unsigned i = 0; i < e->stack->depth && n < PROF_DEPTH_MAX; i++)
    if (e->stack->pcs[i]) ids[n++] = location_id(w, e->stack->pcs[i]);
  uint64_t values[4] = {rounded(c->alloc_est_objects), rounded(c->alloc_est_bytes), rounded(c->live_est_objects),
                        rounded(c->live_est_bytes)};
  uint8_t mem[PROF_DEPTH_MAX * 10 + 128];
  pb_buf_t b;
  pb_init(&b, mem, sizeof(mem));
  pb_packed(&b, SAMPLE_LOCATION_ID, ids, n);
  pb_packed(&b, SAMPLE_VALUE, values, 4);
  emit_message(w, PROFILE_SAMPLE, &b);
}

bool prof_pprof_write(prof_out_t *o, const prof_snapshot_t *s, prof_symbolizer_t *sym) {
  size_t npcs = 0;
  for (unsigned i = 0; i < s->count; i++) npcs += s->entries[i].stack->depth;
  writer_t w = {.out = o, .sym = sym};
  bool ok = map_init(&w.locations, npcs) && map_init(&w.functions, npcs);
  if (ok) {
    emit_header(&w, s->period);
    emit_mappings(&w);
    for (unsigned i = 0; i < s->count; i++) emit_sample(&w, &s->entries[i]);
  }
  map_fini(&w.locations);
  map_fini(&w.functions);
  return ok;
}
