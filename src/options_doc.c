/* SPDX-License-Identifier: MIT */
/*
 * The options' descriptions, for the docs (docs/options.md is generated from them). They
 * live in one string in this file, whose read-only data src/layout.ld keeps with the
 * cold files': in the options table they made 4 KiB of the read-only data that every
 * program maps at start-up.
 */
#include "options.h"

#include <string.h>

#define BOOL_OPTION(name, var, doc) doc "\0"
#define NUM_OPTION(name, type, var, lo, hi, doc) doc "\0"
#define STRING_OPTION(name, var, doc, accepted, valid) doc "\0"
#define ENUM_OPTION(name, var, doc, names) doc "\0"

/* The descriptions in table order, each ended by a NUL. */
static const char descriptions[] =
#include "options_table.def"
    ;

const char *option_doc(const option_def_t *d) {
  const char *p = descriptions;
  for (ptrdiff_t i = d - option_table; i > 0; i--) p += strlen(p) + 1;
  return p;
}
