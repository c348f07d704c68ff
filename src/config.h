/* SPDX-License-Identifier: MIT */
/*
 * Build variants, defined here and only here.
 *
 * TESSERA_DEBUG (cmake -DTESSERA_DEBUG=ON) turns on internal assertions: lock
 * ownership where a function needs a lock held, extent, bitmap and page-map invariants
 * after every change, cache-bin bounds. In the release build config_debug is a constant
 * false, so every `if (config_debug)` and every assertion compiles (the code is always
 * type-checked) and then vanishes: the fast paths keep their instruction counts.
 */
#ifndef TESSERA_CONFIG_H
#define TESSERA_CONFIG_H

#include <stdbool.h>

#ifdef TESSERA_DEBUG
static const bool config_debug = true;
#else
static const bool config_debug = false;
#endif

/* Prints "tessera: assertion failed: <file>:<line>: <expression>" and aborts (fatal.c). */
__attribute__((noreturn, cold)) void assert_failed(const char *file, int line, const char *expr);

/* An internal invariant: checked in the debug build only. */
#define tessera_assert(e)                                                                  \
  do {                                                                                     \
    if (config_debug && __builtin_expect(!(e), 0)) assert_failed(__FILE__, __LINE__, #e); \
  } while (0)

#endif
