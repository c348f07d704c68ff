/* SPDX-License-Identifier: MIT */
#include "emitter.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "os.h"

static void write_stderr_cb(void *opaque, const char *text) {
  (void)opaque;
  os_write_stderr(text);
}

void emit_flush(emitter_t *e) {
  if (e->len == 0) return;
  e->buf[e->len] = '\0';
  e->cb(e->opaque, e->buf);
  e->len = 0;
}

void emit(emitter_t *e, const char *fmt, ...) {
  char line[512];
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(line, sizeof(line), fmt, ap);
  va_end(ap);
  if (n < 0) return;
  if ((size_t)n >= sizeof(line)) n = sizeof(line) - 1;
  if (e->len + (size_t)n >= sizeof(e->buf) - 1) emit_flush(e);
  memcpy(e->buf + e->len, line, (size_t)n);
  e->len += (size_t)n;
}

void emitter_init(emitter_t *e, tessera_write_cb *cb, void *opaque) {
  memset(e, 0, sizeof(*e));
  e->cb = cb != NULL ? cb : write_stderr_cb;
  e->opaque = opaque;
}

/* ---- JSON ---- */

/* Starts a member (key != NULL, in an object) or an element (in an array). */
static void j_member(emitter_t *e, const char *key) {
  emit(e, "%s\n%*s", e->has_member[e->depth] ? "," : "", (int)e->depth * 2, "");
  e->has_member[e->depth] = true;
  if (key != NULL) emit(e, "\"%s\": ", key);
}

void j_open(emitter_t *e, const char *key, char bracket) {
  if (e->depth > 0) j_member(e, key);
  emit(e, "%c", bracket);
  if (e->depth < 15) e->depth++;
  e->has_member[e->depth] = false;
}

void j_close(emitter_t *e, char bracket) {
  e->depth--;
  emit(e, "\n%*s%c", (int)e->depth * 2, "", bracket);
}

void j_u64(emitter_t *e, const char *key, uint64_t v) {
  j_member(e, key);
  emit(e, "%llu", (unsigned long long)v);
}

void j_str(emitter_t *e, const char *key, const char *v) {
  j_member(e, key);
  emit(e, "\"%s\"", v); /* only our own strings: no escaping needed */
}

void j_raw(emitter_t *e, const char *key, const char *v) {
  j_member(e, key);
  emit(e, "%s", v);
}

void j_double(emitter_t *e, const char *key, double v) {
  j_member(e, key);
  emit(e, "%.4f", v);
}


static void emit_char(emitter_t *e, char c) {
  if (e->len + 1 >= sizeof(e->buf) - 1) emit_flush(e);
  e->buf[e->len++] = c;
}

void j_escaped(emitter_t *e, const char *key, const char *v, size_t len) {
  static const char hex[] = "0123456789abcdef";
  j_member(e, key);
  emit_char(e, '"');
  for (size_t i = 0; i < len; i++) {
    unsigned char c = (unsigned char)v[i];
    if (c == '\0') {
      emit_char(e, ' '); /* argument separator of /proc/self/cmdline */
    } else if (c == '"' || c == '\\') {
      emit_char(e, '\\');
      emit_char(e, (char)c);
    } else if (c < 0x20 || c >= 0x7f) { /* bytes, not UTF-8: the document stays valid */
      emit(e, "\\u00%c%c", hex[c >> 4], hex[c & 15]);
    } else {
      emit_char(e, (char)c);
    }
  }
  emit_char(e, '"');
}
