/* SPDX-License-Identifier: MIT */
/* A call chain for the unwinder tests, built in a shared library with -O2
 * -fomit-frame-pointer: chain_a -> chain_b -> chain_c -> leaf(arg). */
#ifndef PROF_TEST_CHAIN_H
#define PROF_TEST_CHAIN_H

typedef unsigned chain_leaf_fn(void *arg);
unsigned chain_a(chain_leaf_fn *leaf, void *arg, unsigned n);
/* Recurses depth times through chain_recurse, then calls leaf. */
unsigned chain_recurse(chain_leaf_fn *leaf, void *arg, unsigned depth);

#endif
