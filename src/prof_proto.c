/* SPDX-License-Identifier: MIT */
/* prof_proto: see prof_proto.h. */
#include "prof_proto.h"

#include <string.h>

void pb_init(pb_buf_t *b, void *mem, size_t cap) {
  b->p = mem;
  b->len = 0;
  b->cap = cap;
  b->overflow = false;
}

static void put(pb_buf_t *b, const void *p, size_t n) {
  if (b->overflow || b->cap - b->len < n) {
    b->overflow = true;
    return;
  }
  memcpy(b->p + b->len, p, n);
  b->len += n;
}

static size_t varint_size(uint64_t v) {
  size_t n = 1;
  while (v >= 0x80) {
    v >>= 7;
    n++;
  }
  return n;
}

void pb_varint(pb_buf_t *b, uint64_t v) {
  uint8_t tmp[10];
  size_t n = 0;
  while (v >= 0x80) {
    tmp[n++] = (uint8_t)(v | 0x80);
    v >>= 7;
  }
  tmp[n++] = (uint8_t)v;
  put(b, tmp, n);
}

void pb_uint(pb_buf_t *b, unsigned field, uint64_t v) {
  pb_varint(b, (uint64_t)field << 3);
  pb_varint(b, v);
}

void pb_bytes(pb_buf_t *b, unsigned field, const void *p, size_t n) {
  pb_varint(b, (uint64_t)field << 3 | 2);
  pb_varint(b, n);
  put(b, p, n);
}

void pb_packed(pb_buf_t *b, unsigned field, const uint64_t *v, size_t n) {
  size_t len = 0;
  for (size_t i = 0; i < n; i++) len += varint_size(v[i]);
  pb_varint(b, (uint64_t)field << 3 | 2);
  pb_varint(b, len);
  for (size_t i = 0; i < n; i++) pb_varint(b, v[i]);
}
