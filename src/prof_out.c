/* SPDX-License-Identifier: MIT */
/* prof_out: see prof_out.h. */
#include "prof_out.h"

#include "os.h"

#include <string.h>

uint32_t prof_crc32(uint32_t crc, const void *p, size_t n) {
  const uint8_t *b = p;
  crc = ~crc;
  for (size_t i = 0; i < n; i++) {
    crc ^= b[i];
    for (int k = 0; k < 8; k++) crc = (crc >> 1) ^ (0xEDB88320u & (0u - (crc & 1)));
  }
  return ~crc;
}

static void raw(prof_out_t *o, const void *p, size_t n) {
  if (!o->failed && !os_write_all(o->fd, p, n)) o->failed = true;
}

/* One deflate stored block (RFC 1951 3.2.4): header byte, LEN, NLEN, the bytes. */
static void stored_block(prof_out_t *o, const void *p, size_t n, bool final) {
  uint8_t h[5] = {final ? 1 : 0, (uint8_t)n, (uint8_t)(n >> 8), (uint8_t)~n, (uint8_t)(~n >> 8)};
  raw(o, h, sizeof(h));
  if (n) raw(o, p, n);
}

void prof_out_flush(prof_out_t *o) {
  if (o->len == 0) return;
  if (o->gzip) {
    o->crc = prof_crc32(o->crc, o->buf, o->len);
    stored_block(o, o->buf, o->len, false);
  } else {
    raw(o, o->buf, o->len);
  }
  o->len = 0;
}

void prof_out_open_fd(prof_out_t *o, int fd, bool gzip) {
  o->fd = fd;
  o->gzip = gzip;
  o->failed = fd < 0;
  o->crc = 0;
  o->total = 0;
  o->len = 0;
  if (gzip) {
    /* magic, deflate, no flags, no mtime, no extra flags, OS unix */
    static const uint8_t header[10] = {0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 3};
    raw(o, header, sizeof(header));
  }
}

bool prof_out_open(prof_out_t *o, const char *path, bool gzip, bool append) {
  int fd = os_open_write(path, append);
  prof_out_open_fd(o, fd, gzip);
  return fd >= 0;
}

void prof_out_bytes(prof_out_t *o, const void *p, size_t n) {
  const char *s = p;
  o->total += n;
  while (n > 0) {
    size_t room = sizeof(o->buf) - o->len, k = n < room ? n : room;
    memcpy(o->buf + o->len, s, k);
    o->len += k;
    s += k;
    n -= k;
    if (o->len == sizeof(o->buf)) prof_out_flush(o);
  }
}

void prof_out_str(prof_out_t *o, const char *s) { prof_out_bytes(o, s, strlen(s)); }

void prof_out_dec(prof_out_t *o, uint64_t v) {
  char tmp[24];
  int i = sizeof(tmp);
  do tmp[--i] = (char)('0' + v % 10);
  while ((v /= 10) != 0);
  prof_out_bytes(o, tmp + i, sizeof(tmp) - (size_t)i);
}

void prof_out_hex(prof_out_t *o, uint64_t v) {
  char tmp[24];
  int i = sizeof(tmp);
  do tmp[--i] = "0123456789abcdef"[v & 15];
  while ((v >>= 4) != 0);
  tmp[--i] = 'x';
  tmp[--i] = '0';
  prof_out_bytes(o, tmp + i, sizeof(tmp) - (size_t)i);
}

void prof_out_fixed(prof_out_t *o, double v, unsigned decimals) {
  if (!(v >= 0)) v = 0;
  if (v > 1e18) v = 1e18;
  uint64_t scale = 1;
  for (unsigned i = 0; i < decimals; i++) scale *= 10;
  uint64_t scaled = (uint64_t)(v * (double)scale + 0.5);
  prof_out_dec(o, scaled / scale);
  if (decimals == 0) return;
  prof_out_str(o, ".");
  char tmp[20];
  uint64_t frac = scaled % scale;
  for (unsigned i = decimals; i-- > 0; frac /= 10) tmp[i] = (char)('0' + frac % 10);
  prof_out_bytes(o, tmp, decimals);
}

bool prof_out_close(prof_out_t *o) {
  prof_out_flush(o);
  if (o->gzip) {
    stored_block(o, NULL, 0, true);
    uint8_t trailer[8];
    for (int i = 0; i < 4; i++) {
      trailer[i] = (uint8_t)(o->crc >> (8 * i));
      trailer[4 + i] = (uint8_t)(o->total >> (8 * i));
    }
    raw(o, trailer, sizeof(trailer));
  }
  if (o->fd >= 0) os_close(o->fd);
  o->fd = -1;
  return !o->failed;
}
