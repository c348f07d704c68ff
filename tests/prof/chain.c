/* SPDX-License-Identifier: MIT */
/* The shared library of the unwinder tests: no frame pointers (see chain.h). Every call
 * is followed by work on its result, so none becomes a tail call, and the functions
 * keep stack frames of different sizes so the CFA offsets differ. */
#include "chain.h"

#include <string.h>

__attribute__((noinline)) static unsigned chain_c(chain_leaf_fn *leaf, void *arg, unsigned n) {
  volatile char pad[40];
  memset((char *)pad, (int)n, sizeof(pad));
  return leaf(arg) + pad[3] * 3u;
}

__attribute__((noinline)) static unsigned chain_b(chain_leaf_fn *leaf, void *arg, unsigned n) {
  volatile char pad[200];
  memset((char *)pad, (int)n, sizeof(pad));
  return chain_c(leaf, arg, n + 1) * 7u + pad[100];
}

__attribute__((noinline)) unsigned chain_a(chain_leaf_fn *leaf, void *arg, unsigned n) {
  return chain_b(leaf, arg, n + 1) * 5u + n;
}

__attribute__((noinline)) unsigned chain_recurse(chain_leaf_fn *leaf, void *arg, unsigned depth) {
  if (depth == 0) return leaf(arg) + 1;
  volatile unsigned r = chain_recurse(leaf, arg, depth - 1); /* a volatile keeps it a real call */
  return r * 3u + depth;
}
