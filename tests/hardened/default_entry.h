/* SPDX-License-Identifier: MIT */
/*
 * Included before a test's source (-include): its calls of malloc, calloc, realloc and
 * free go through pointers that dlsym gave, the functions' own addresses, as a program's
 * function pointers (&malloc) do. With hardened:true, got_patch rewrites only PLT slots
 * (src/got_patch.h), so these calls reach the default entries, where the PLT calls reach
 * hardened mode's own: built this way, the misuse tests run through the default entries.
 */
#ifndef TT_DEFAULT_ENTRY_H
#define TT_DEFAULT_ENTRY_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <inttypes.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>

typedef struct tt_default_entries {
  void *(*malloc)(size_t);
  void *(*calloc)(size_t, size_t);
  void *(*realloc)(void *, size_t);
  void (*free)(void *);
} tt_default_entries_t;

/* The functions' own addresses, looked up on first use (dlsym: never a PLT slot). */
static inline const tt_default_entries_t *tt_default_entries(void) {
  static tt_default_entries_t e;
  if (e.free == NULL) {
    e.malloc = (void *(*)(size_t))dlsym(RTLD_DEFAULT, "malloc");
    e.calloc = (void *(*)(size_t, size_t))dlsym(RTLD_DEFAULT, "calloc");
    e.realloc = (void *(*)(void *, size_t))dlsym(RTLD_DEFAULT, "realloc");
    e.free = (void (*)(void *))dlsym(RTLD_DEFAULT, "free");
    if (e.malloc == NULL || e.calloc == NULL || e.realloc == NULL || e.free == NULL) {
      fprintf(stderr, "default_entry.h: dlsym failed\n");
      exit(1);
    }
  }
  return &e;
}

#define malloc(n) (tt_default_entries()->malloc(n))
#define calloc(n, s) (tt_default_entries()->calloc(n, s))
#define realloc(p, n) (tt_default_entries()->realloc(p, n))
#define free(p) (tt_default_entries()->free(p))

#endif
