/* SPDX-License-Identifier: MIT */
/*
 * prof_out: a buffered writer on a file descriptor, with an optional gzip layer.
 * A fixed buffer, raw write(2): usable inside the allocator. gzip output uses deflate's
 * stored (uncompressed) blocks, which every inflater accepts, with the CRC-32 and size
 * trailer of RFC 1952.
 */
#ifndef TESSERA_PROF_OUT_H
#define TESSERA_PROF_OUT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define PROF_OUT_BUFFER 16384 /* at most 65535: one stored block per flush */

typedef struct prof_out {
  int fd;
  bool gzip;
  bool failed;  /* a write failed: later output is dropped, close reports false */
  uint32_t crc; /* gzip: CRC-32 of the uncompressed bytes so far */
  uint64_t total; /* uncompressed bytes written */
  size_t len;
  char buf[PROF_OUT_BUFFER];
} prof_out_t;

/* Starts writing to fd (which the writer then owns). */
void prof_out_open_fd(prof_out_t *o, int fd, bool gzip);
/* Creates path; false if it cannot be created. */
bool prof_out_open(prof_out_t *o, const char *path, bool gzip, bool append);
void prof_out_bytes(prof_out_t *o, const void *p, size_t n);
void prof_out_str(prof_out_t *o, const char *s);
void prof_out_dec(prof_out_t *o, uint64_t v);
void prof_out_hex(prof_out_t *o, uint64_t v); /* with 0x */
/* A non-negative real with 'decimals' digits after the point. */
void prof_out_fixed(prof_out_t *o, double v, unsigned decimals);
/* Writes out what is buffered (gzip: as a non-final stored block). */
void prof_out_flush(prof_out_t *o);
/* Flushes, ends the gzip stream, closes; true when everything was written. */
bool prof_out_close(prof_out_t *o);

/* CRC-32 (IEEE 802.3, as gzip uses) of p, continuing from crc (0 to start). */
uint32_t prof_crc32(uint32_t crc, const void *p, size_t n);

#endif
