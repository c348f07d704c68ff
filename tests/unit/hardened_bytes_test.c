/* SPDX-License-Identifier: MIT */
/* Hardened mode's byte checks (hardened_bytes.h, hardened_zero_check.c): the zero check
 * sees a nonzero byte anywhere in a block of any size, inline and with wide vectors; the
 * zeroing clears exactly the block, small and page by page; the trailer and canaries
 * are intact as written and not after any byte of them changes, nor on a zero block. */
#include <stdalign.h>
#include <string.h>

#include "hardened_bytes.h"
#include "unit.h"

#define MAX_SIZE 9216 /* past two pages: hardened_zero's page-by-page path */
#define GUARD 64
static alignas(4096) unsigned char buf[GUARD + MAX_SIZE + 4096 + GUARD];

/* Every size a multiple of 16 up to 1 KiB, then some larger ones. */
static size_t next_size(size_t size) { return size < 1024 ? size + 16 : size * 3 / 2 / 16 * 16; }

static void zero_check(void) {
  for (size_t off = 0; off < 64; off += 16)
    for (size_t size = 16; size <= MAX_SIZE; size = next_size(size)) {
      unsigned char *p = buf + GUARD + off;
      memset(buf, 0xaa, sizeof buf);
      memset(p, 0, size);
      CHECK(hardened_all_zero(p, size) && hardened_all_zero_large(p, size), "size %zu zero", size);
      size_t step = size <= 1024 ? 1 : 61;
      for (size_t i = 0; i < size; i += step) {
        p[i] = 1;
        CHECK(!hardened_all_zero(p, size), "size %zu, byte %zu set, inline", size, i);
        CHECK(!hardened_all_zero_large(p, size), "size %zu, byte %zu set, wide", size, i);
        p[i] = 0;
      }
    }
}

static void zeroing(void) {
  for (size_t off = 0; off < 4096; off = off < 64 ? off + 16 : off + 1008)
    for (size_t size = 16; size <= MAX_SIZE; size = next_size(size)) {
      unsigned char *p = buf + GUARD + off;
      memset(buf, 0xaa, sizeof buf);
      for (size_t i = 0; i < size; i++) p[i] = (unsigned char)(i * 7 + 1);
      /* A page left zero between written ones: kept as it is, the rest cleared. */
      if (size > 2 * 4096) memset(p + 4096, 0, 4096);
      hardened_zero(p, size);
      for (size_t i = 0; i < size; i++) CHECK(p[i] == 0, "size %zu offset %zu: byte %zu not cleared", size, off, i);
      for (unsigned char *q = buf; q < p; q++) CHECK(*q == 0xaa, "size %zu: a byte before the block cleared", size);
      for (unsigned char *q = p + size; q < buf + sizeof buf; q++) CHECK(*q == 0xaa, "size %zu: a byte after the block cleared", size);
    }
}

static void canaries(void) {
  for (size_t region = 16; region <= 1024; region += 16)
    for (size_t n = 0; n + HARDENED_EXTRA <= region; n += n < 40 ? 1 : 13) {
      unsigned char *p = buf + GUARD;
      memset(p, 0, region);
      size_t got = 0;
      CHECK(!hardened_trailer_intact(p, region, &got), "region %zu: a zero block has no trailer", region);
      hardened_write_trailer(p, region, n);
      CHECK(hardened_trailer_intact(p, region, &got) && got == n, "region %zu n %zu: intact, got %zu", region, n, got);
      for (size_t i = n; i < region; i++) {
        size_t canary_end = n + hardened_canary_length(region, n);
        if (i >= canary_end && i < region - HARDENED_TRAILER) continue; /* zero, unchecked */
        p[i] ^= 0x40;
        CHECK(!hardened_trailer_intact(p, region, &got), "region %zu n %zu: byte %zu changed", region, n, i);
        p[i] ^= 0x40;
      }
      for (size_t i = n; i < n + hardened_canary_length(region, n); i++) CHECK(p[i] != 0, "canary byte %zu is zero", i);
    }
}

int main(void) {
  zero_check();
  zeroing();
  canaries();
  UNIT_DONE("unit.hardened_bytes");
}
