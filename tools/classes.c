/* SPDX-License-Identifier: MIT */
/* Prints tessera's size-class table: each class's size, slab size, regions per slab
 * and the bytes per slab that no region can use. (`tessera classes`) */
#include <stdio.h>
#include <stdlib.h>

#include "tessera.h"

static void write_stdout(void *opaque, const char *text) {
  (void)opaque;
  fputs(text, stdout);
}

int main(void) {
  /* The table lives inside the library; it is printed through the stats interface
   * so that this tool needs no internal headers. */
  free(malloc(1)); /* make sure tessera is initialised */
  tessera_print_classes(write_stdout, NULL);
  return 0;
}
