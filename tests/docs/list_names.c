/* SPDX-License-Identifier: MIT */
/*
 * list_names: prints every control name the library has (arena and class indices as
 * <i> and <j>, as docs/ctl.md writes them), one a line. The option names are those under
 * opt. (the opt.* names are generated from the options table). Used by man_pages.sh.
 * Linked against the static library: the name walk is internal.
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>

#include "ctl.h"

static void print_name(const char *name, ctl_type_t type, bool writable, void *arg) {
  (void)type;
  (void)writable;
  (void)arg;
  puts(name);
}

int main(void) {
  free(malloc(1)); /* initialises the allocator */
  ctl_for_each_name(print_name, NULL);
  return fflush(stdout) == 0 ? 0 : 1;
}
