/* SPDX-License-Identifier: MIT */
/*
 * Hardened mode's zero check of blocks above HARDENED_ZERO_INLINE_MAX (hardened_bytes.h):
 * the pass over every block handed out again. With AVX2 (checked once, with cpuid and
 * the OS's saved state, on the first call), 32-byte vectors: half the instructions of
 * the SSE2 loop inlined for small blocks. The library is built for baseline x86-64, so
 * the AVX2 loop is a function of its own compiled for that target, and called only when
 * the processor has it.
 */
#include "hardened_bytes.h"

#if defined(__x86_64__)
#include <cpuid.h>

typedef uint64_t __attribute__((vector_size(32), may_alias, aligned(16))) heap_vec32_t;

/* size bytes at p (multiples of 16, size >= 64) all zero: 128 bytes an iteration, then
 * the last 0 to 127 bytes as 16-byte vectors. */
__attribute__((target("avx2"))) static bool all_zero_avx2(const void *p, size_t size) {
  const heap_vec32_t *v = p;
  heap_vec32_t a = {0, 0, 0, 0}, b = {0, 0, 0, 0};
  size_t n = size / 32, i = 0;
  for (; i + 4 <= n; i += 4) {
    a |= v[i] | v[i + 2];
    b |= v[i + 1] | v[i + 3];
  }
  for (; i < n; i++) a |= v[i];
  a |= b;
  bool zero = (a[0] | a[1] | a[2] | a[3]) == 0;
  if (size % 32 != 0) zero = zero && hardened_all_zero((const char *)p + size - 16, 16);
  return zero;
}

/* Whether the processor has AVX2 and the OS saves its registers. */
static bool have_avx2(void) {
  unsigned a, b, c, d;
  if (!__get_cpuid(1, &a, &b, &c, &d) || !(c & bit_OSXSAVE) || !(c & bit_AVX)) return false;
  unsigned lo, hi;
  __asm__("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
  if ((lo & 6) != 6) return false; /* XMM and YMM state */
  if (!__get_cpuid_count(7, 0, &a, &b, &c, &d)) return false;
  return (b & bit_AVX2) != 0;
}

enum { WIDE_UNKNOWN, WIDE_NO, WIDE_YES };
static _Atomic int wide_state;

bool hardened_all_zero_large(const void *p, size_t size) {
  int state = atomic_load_explicit(&wide_state, memory_order_relaxed);
  if (unlikely(state == WIDE_UNKNOWN)) {
    state = have_avx2() ? WIDE_YES : WIDE_NO;
    atomic_store_explicit(&wide_state, state, memory_order_relaxed);
  }
  return state == WIDE_YES ? all_zero_avx2(p, size) : hardened_all_zero(p, size);
}
#else
bool hardened_all_zero_large(const void *p, size_t size) { return hardened_all_zero(p, size); }
#endif
