/* SPDX-License-Identifier: MIT */
/*
 * Hardened mode's checks of a block's bytes (hardened.h: the layout), inline: every
 * malloc and free of hardened mode runs them, and a call each (with the loads of its
 * arguments again) was a fifth of their cost. The rare parts (the secret drawn, a
 * misuse reported, a block holding keys) are out of line in hardened.c.
 *
 * - The trailer: the region's last 4 bytes, the slack length (region size - request)
 *   XORed with the top half of the block's canary word.
 * - The canary bytes: from the request's end up to the trailer, at most 16; the block's
 *   canary word (the secret mixed with the block's address) with every byte made odd
 *   (never zero: a string's terminating zero one byte too far is always caught),
 *   repeated.
 * - Unused: a freed slab block is all zero (or holds freed-block keys) until handed out.
 */
#ifndef TESSERA_HARDENED_BYTES_H
#define TESSERA_HARDENED_BYTES_H

#include "config.h"
#include "hardened.h"
#include "types.h"

/* The program's memory may hold any type: read and write it as such. */
typedef uint16_t __attribute__((may_alias, aligned(1))) heap_u16_t;
typedef uint32_t __attribute__((may_alias, aligned(1))) heap_u32_t;
typedef uint64_t __attribute__((may_alias, aligned(1))) heap_u64_t;
typedef uint64_t __attribute__((vector_size(16), may_alias)) heap_vec_t;

/* The process's secret, 0 until hardened_secret_init draws it (from the kernel). */
extern _Atomic uint64_t hardened_secret;
uint64_t hardened_secret_init(void);
/* Aborts: "heap overflow detected after block", naming func. */
_Noreturn void hardened_overflow(const void *p, const char *func);
/* hardened_check_unused's word by word pass, for a block that is not all zero: clears
 * freed-block keys, aborts naming func on any other word. */
void hardened_check_unused_words(void *p, size_t size, const char *func);

/* The canary word of the block at p under secret s: the two mixed. */
static inline uint64_t canary_word_of(uint64_t s, const void *p) {
  s ^= (uint64_t)(uintptr_t)p * 0x9e3779b97f4a7c15ull;
  return s ^ (s >> 29);
}

/* The block's canary word, the secret drawn if it was not yet (a block is being handed
 * out: every trailer is written through here). */
static inline uint64_t hardened_canary_word(const void *p) {
  uint64_t s = atomic_load_explicit(&hardened_secret, memory_order_relaxed);
  if (unlikely(s == 0)) s = hardened_secret_init();
  return canary_word_of(s, p);
}

/* How many canary bytes follow a request of n in a region. */
static inline size_t hardened_canary_length(size_t region, size_t n) {
  size_t len = region - HARDENED_TRAILER - n;
  return len > HARDENED_CANARY_MAX ? HARDENED_CANARY_MAX : len;
}

/* The 8-byte pattern c as it continues from byte k on (byte j of the result is byte
 * (k + j) % 8 of c, on this little-endian machine). */
static inline uint64_t canary_from(uint64_t c, size_t k) {
  unsigned r = (unsigned)(8 * k) & 63;
  return (c >> r) | (c << ((64 - r) & 63));
}

/* Writes len (1 to 16) bytes of the repeating 8-byte pattern c at dst with two
 * overlapping stores of the widest size that fits, each with the pattern's bytes for
 * its place (so the bytes both write agree). */
static inline void canary_store(uint8_t *dst, uint64_t c, size_t len) {
  if (len >= 8) {
    *(heap_u64_t *)dst = c;
    *(heap_u64_t *)(dst + len - 8) = canary_from(c, len - 8);
  } else if (len >= 4) {
    *(heap_u32_t *)dst = (uint32_t)c;
    *(heap_u32_t *)(dst + len - 4) = (uint32_t)(c >> (8 * (len - 4)));
  } else if (len >= 2) {
    *(heap_u16_t *)dst = (uint16_t)c;
    *(heap_u16_t *)(dst + len - 2) = (uint16_t)(c >> (8 * (len - 2)));
  } else {
    *dst = (uint8_t)c;
  }
}

/* Whether len (1 to 16) bytes at a hold what canary_store(a, c, len) wrote. */
static inline bool canary_intact(const uint8_t *a, uint64_t c, size_t len) {
  if (len >= 8) return ((*(const heap_u64_t *)a ^ c) | (*(const heap_u64_t *)(a + len - 8) ^ canary_from(c, len - 8))) == 0;
  if (len >= 4)
    return ((*(const heap_u32_t *)a ^ (uint32_t)c) | (*(const heap_u32_t *)(a + len - 4) ^ (uint32_t)(c >> (8 * (len - 4))))) == 0;
  if (len >= 2)
    return ((*(const heap_u16_t *)a ^ (uint16_t)c) | (*(const heap_u16_t *)(a + len - 2) ^ (uint16_t)(c >> (8 * (len - 2))))) == 0;
  return *a == (uint8_t)c;
}

/* Writes the trailer and canary bytes of a block whose region is region bytes, of which
 * the program asked for n, w being its canary word. */
static inline void hardened_write_trailer_word(void *p, size_t region, size_t n, uint64_t w) {
  tessera_assert(n + HARDENED_EXTRA <= region);
  uint8_t *b = p;
  canary_store(b + n, w | 0x0101010101010101ull, hardened_canary_length(region, n));
  *(heap_u32_t *)(b + region - HARDENED_TRAILER) = (uint32_t)(region - n) ^ (uint32_t)(w >> 32);
}

/* The same, the canary word computed (the secret drawn if it was not yet). */
static inline void hardened_write_trailer(void *p, size_t region, size_t n) {
  hardened_write_trailer_word(p, region, n, hardened_canary_word(p));
}

/* Whether the block's trailer and canary bytes are as hardened_write_trailer left them;
 * then *n is the size it was asked for. A block never handed out (all zero, or holding
 * freed-block keys) fails: its canary bytes would be zero, and they never are. So does
 * every block while the secret is not drawn: no trailer was written yet (and no call
 * here, which would make free's common path save registers). */
static inline bool hardened_trailer_intact(const void *p, size_t region, size_t *n) {
  uint64_t s = atomic_load_explicit(&hardened_secret, memory_order_relaxed);
  if (unlikely(s == 0)) return false;
  uint64_t w = canary_word_of(s, p);
  const uint8_t *b = p;
  size_t slack = *(const heap_u32_t *)(b + region - HARDENED_TRAILER) ^ (uint32_t)(w >> 32);
  if (unlikely(slack < HARDENED_EXTRA || slack > region)) return false;
  *n = region - slack;
  return canary_intact(b + *n, w | 0x0101010101010101ull, hardened_canary_length(region, *n));
}

/* The n the block was asked for; aborts naming func when its trailer or canary bytes
 * were overwritten ("heap overflow detected after block"). */
static inline size_t hardened_checked_size(const void *p, size_t region, const char *func) {
  size_t n;
  if (unlikely(!hardened_trailer_intact(p, region, &n))) hardened_overflow(p, func);
  return n;
}

/* Whether size bytes at p (both multiples of 16) are all zero, ORed into 16-byte vectors
 * (the compiler's vector extension: SSE2 on x86-64). Up to 256 bytes without a loop: the
 * first and the last 1, 2, 4 or 8 vectors, overlapping (ORing a vector twice changes
 * nothing); above, 64 bytes an iteration, the last 16 to 48 bytes by three overlapping
 * loads. */
static inline __attribute__((always_inline)) bool hardened_all_zero(const void *p, size_t size) {
  tessera_assert(((uintptr_t)p | size) % 16 == 0 && size > 0);
  const heap_vec_t *v = p, *e = v + size / 16;
  heap_vec_t a, b;
  if (size <= 32) {
    a = v[0] | e[-1];
  } else if (size <= 64) {
    a = v[0] | v[1];
    b = e[-2] | e[-1];
    a |= b;
  } else if (size <= 128) {
    a = (v[0] | v[1]) | (v[2] | v[3]);
    b = (e[-4] | e[-3]) | (e[-2] | e[-1]);
    a |= b;
  } else if (size <= 256) {
    a = ((v[0] | v[1]) | (v[2] | v[3])) | ((v[4] | v[5]) | (v[6] | v[7]));
    b = ((e[-8] | e[-7]) | (e[-6] | e[-5])) | ((e[-4] | e[-3]) | (e[-2] | e[-1]));
    a |= b;
  } else {
    a = (heap_vec_t){0, 0}, b = (heap_vec_t){0, 0};
    size_t n = size / 16, i = 0;
    for (; i + 4 <= n; i += 4) {
      a |= v[i] | v[i + 2];
      b |= v[i + 1] | v[i + 3];
    }
    if (i < n) { /* 1 to 3 vectors left: the first, the middle and the last of them */
      a |= v[i] | v[n - 1];
      b |= v[(i + n - 1) / 2];
    }
    a |= b;
  }
  return (a[0] | a[1]) == 0;
}

/* hardened_zero of a block above a KiB (hardened.c): page by page, only the pages not
 * zero already, so that pages the program never wrote stay untouched (not resident). */
void hardened_zero_written_pages(void *p, size_t size);

/* Zeroes size bytes at p (both multiples of 16): up to 256 bytes, the first and the last
 * 1, 2, 4 or 8 16-byte vectors, overlapping; memset above 256 bytes; above a KiB, only
 * the pages not zero already. */
static inline __attribute__((always_inline)) void hardened_zero(void *p, size_t size) {
  tessera_assert(((uintptr_t)p | size) % 16 == 0 && size > 0);
  if (size > 1024) {
    hardened_zero_written_pages(p, size);
    return;
  }
  if (size > 256) { /* memset's 32-byte stores: fewer instructions than the loop, with the call */
    __builtin_memset(p, 0, size);
    return;
  }
  heap_vec_t *v = p, *e = v + size / 16, z = {0, 0};
  if (size <= 32) {
    v[0] = e[-1] = z;
  } else if (size <= 64) {
    v[0] = v[1] = e[-2] = e[-1] = z;
  } else if (size <= 128) {
    v[0] = v[1] = v[2] = v[3] = z;
    e[-4] = e[-3] = e[-2] = e[-1] = z;
  } else {
    v[0] = v[1] = v[2] = v[3] = v[4] = v[5] = v[6] = v[7] = z;
    e[-8] = e[-7] = e[-6] = e[-5] = e[-4] = e[-3] = e[-2] = e[-1] = z;
  }
}

/* Blocks up to this size are checked and zeroed by the inline loops above; larger ones
 * by hardened_all_zero_large (32-byte vectors where the processor has them) and memset. */
#define HARDENED_ZERO_INLINE_MAX 256

/* hardened_all_zero for size above HARDENED_ZERO_INLINE_MAX: hardened_zero_check.c. */
bool hardened_all_zero_large(const void *p, size_t size);

/* Aborts naming func if a slab block about to be handed out was written after it was
 * freed (a word neither zero nor a freed-block key); clears the keys: the block is then
 * all zero. */
static inline void hardened_check_unused(void *p, size_t size, const char *func) {
  bool zero = size <= HARDENED_ZERO_INLINE_MAX ? hardened_all_zero(p, size) : hardened_all_zero_large(p, size);
  if (unlikely(!zero)) hardened_check_unused_words(p, size, func);
}

#endif
