/* SPDX-License-Identifier: MIT */
/*
 * A buffered text writer for reports (statistics, the class table), with a minimal JSON
 * layer: members, nested objects and arrays, indentation. Output goes through a
 * callback in chunks (stderr when none is given). Formatting uses vsnprintf: callers run
 * where the allocator may be entered (not under allocator locks).
 */
#ifndef TESSERA_EMITTER_H
#define TESSERA_EMITTER_H

#include "tessera.h"
#include "types.h"

typedef struct emitter {
  tessera_write_cb *cb;
  void *opaque;
  char buf[4096];
  size_t len;
  /* JSON: nesting depth, and whether the open object/array at each depth has a member */
  unsigned depth;
  bool has_member[16];
} emitter_t;

void emitter_init(emitter_t *e, tessera_write_cb *cb, void *opaque);
/* Appends printf-formatted text (a piece of at most 511 bytes). */
__attribute__((format(printf, 2, 3))) void emit(emitter_t *e, const char *fmt, ...);
/* Hands what is buffered to the callback. */
void emit_flush(emitter_t *e);

/* JSON: j_open starts an object ('{') or array ('[') as member key (NULL: an array
 * element, or the document itself); j_close ends it. Values: */
void j_open(emitter_t *e, const char *key, char bracket);
void j_close(emitter_t *e, char bracket);
void j_u64(emitter_t *e, const char *key, uint64_t v);
void j_str(emitter_t *e, const char *key, const char *v); /* v needs no escaping */
void j_raw(emitter_t *e, const char *key, const char *v);
/* A string of len bytes from outside (a command line, a thread name), JSON-escaped;
 * NUL bytes become spaces (the argument separators of /proc/self/cmdline), other
 * control and non-ASCII bytes \u00XX each (a byte string: always valid JSON). */
void j_escaped(emitter_t *e, const char *key, const char *v, size_t len);
void j_double(emitter_t *e, const char *key, double v);

#endif
