/* SPDX-License-Identifier: MIT */
/*
 * Which malloc entry a caller reaches (src/got_patch.h), against libtessera.so:
 *   entry_test LIB   allocates, then prints its own PLT slots of malloc and calloc as
 *                    "malloc:default" or "malloc:prof" (the slot no longer holds the
 *                    address the loader binds malloc to: got_patch rewrote it), then
 *                    site_main() keeps 32 MiB in 1000-byte blocks through malloc, and
 *                    the library LIB, loaded now with dlopen (after the rewrite: its
 *                    slot keeps the default entry), keeps 32 MiB through its own
 *                    malloc calls; it prints the library's slot too ("lib:default").
 * Built twice: entry_conf_test also defines malloc_conf = "prof:true", the source
 * the loader never sees, to check that it gets the profiling entry all the same.
 * The script reads the leak report for the two sites' estimates.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include "plt_slot.h"
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef SET_MALLOC_CONF
const char *malloc_conf = "prof:true";
#endif

#define NOINLINE __attribute__((noinline))
#define BLOCK 1000
#define NBLOCKS 32768 /* 32 MiB of 1024-byte blocks */

void site_main(void);
static void *kept[NBLOCKS];

NOINLINE void site_main(void) {
  for (int i = 0; i < NBLOCKS; i++) kept[i] = malloc(BLOCK);
}

static const char *slot_state(const char *object, const char *symbol) {
  uintptr_t value = tt_plt_slot(object, symbol);
  if (value == 0) return "none";
  return value == (uintptr_t)dlsym(RTLD_DEFAULT, symbol) ? "default" : "prof";
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: entry_test LIB\n");
    return 2;
  }
  void *volatile warm = calloc(1, 64); /* binds both slots (lazy binding) */
  free(malloc(64));
  free(warm);
  printf("malloc:%s\ncalloc:%s\n", slot_state("", "malloc"), slot_state("", "calloc"));
  site_main();
  void *lib = dlopen(argv[1], RTLD_NOW);
  void (*site_lib)(void) = lib ? (void (*)(void))dlsym(lib, "site_lib") : NULL;
  if (site_lib == NULL) {
    fprintf(stderr, "entry_test: %s: %s\n", argv[1], dlerror());
    return 1;
  }
  site_lib();
  printf("lib:%s\n", slot_state("entry_lib", "malloc"));
  return 0;
}
