/* SPDX-License-Identifier: MIT */
/* prof_maps: see prof_maps.h. */
#include "prof_maps.h"

#include "os.h"

#include <stddef.h>

static const char *parse_hex(const char *s, uintptr_t *out) {
  uintptr_t v = 0;
  for (;; s++) {
    unsigned d;
    if (*s >= '0' && *s <= '9') d = (unsigned)(*s - '0');
    else if (*s >= 'a' && *s <= 'f') d = (unsigned)(*s - 'a' + 10);
    else break;
    v = v << 4 | d;
  }
  *out = v;
  return s;
}

static const char *skip_field(const char *s) {
  while (*s && *s != ' ') s++;
  while (*s == ' ') s++;
  return s;
}

/* "lo-hi perms offset dev inode   path" */
static bool parse_line(const char *s, prof_map_line_t *m) {
  s = parse_hex(s, &m->lo);
  if (*s++ != '-') return false;
  s = parse_hex(s, &m->hi);
  if (*s++ != ' ') return false;
  for (int i = 0; i < 4; i++) m->perms[i] = s[i] ? s[i] : '-';
  m->perms[4] = '\0';
  s = skip_field(s);
  parse_hex(s, &m->offset);
  s = skip_field(skip_field(skip_field(s))); /* offset, dev, inode */
  m->path = s;
  return true;
}

bool prof_maps_foreach(bool (*fn)(const prof_map_line_t *m, void *arg), void *arg) {
  int fd = os_open_read("/proc/self/maps");
  if (fd < 0) return false;
  char chunk[4096], line[512];
  size_t len = 0;
  bool more = true;
  for (long n; more && (n = os_read(fd, chunk, sizeof(chunk))) > 0;) {
    for (long i = 0; i < n && more; i++) {
      if (chunk[i] != '\n') {
        if (len + 1 < sizeof(line)) line[len++] = chunk[i];
        continue;
      }
      line[len] = '\0';
      prof_map_line_t m;
      if (parse_line(line, &m)) more = fn(&m, arg);
      len = 0;
    }
  }
  os_close(fd);
  return true;
}

typedef struct find_ctx {
  uintptr_t addr, lo, hi;
  bool found;
} find_ctx_t;

static bool find_cb(const prof_map_line_t *m, void *arg) {
  find_ctx_t *c = arg;
  if (c->addr < m->lo || c->addr >= m->hi) return true;
  c->lo = m->lo;
  c->hi = m->hi;
  c->found = true;
  return false;
}

bool prof_maps_find(uintptr_t addr, uintptr_t *lo, uintptr_t *hi) {
  find_ctx_t c = {addr, 0, 0, false};
  if (!prof_maps_foreach(find_cb, &c) || !c.found) return false;
  *lo = c.lo;
  *hi = c.hi;
  return true;
}
