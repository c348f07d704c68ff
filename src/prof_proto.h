/* SPDX-License-Identifier: MIT */
/*
 * prof_proto: the protocol-buffers wire format, enough to write a message: varints,
 * length-delimited fields and packed repeated integers, into a fixed buffer (nested
 * messages are built in their own buffer, then copied in with their length).
 */
#ifndef TESSERA_PROF_PROTO_H
#define TESSERA_PROF_PROTO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct pb_buf {
  uint8_t *p;
  size_t len, cap;
  bool overflow; /* something did not fit: the message must not be used */
} pb_buf_t;

void pb_init(pb_buf_t *b, void *mem, size_t cap);
void pb_varint(pb_buf_t *b, uint64_t v);
/* A varint field (wire type 0); zero values are written too. */
void pb_uint(pb_buf_t *b, unsigned field, uint64_t v);
/* A length-delimited field (wire type 2): bytes, a string or a nested message. */
void pb_bytes(pb_buf_t *b, unsigned field, const void *p, size_t n);
/* A packed repeated field of varints. */
void pb_packed(pb_buf_t *b, unsigned field, const uint64_t *v, size_t n);

#endif
