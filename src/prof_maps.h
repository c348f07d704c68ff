/* SPDX-License-Identifier: MIT */
/*
 * prof_maps: /proc/self/maps, line by line, without allocating (a fixed line buffer;
 * longer lines are cut). Used for the thread-stack bounds of the unwinder.
 */
#ifndef TESSERA_PROF_MAPS_H
#define TESSERA_PROF_MAPS_H

#include <stdbool.h>
#include <stdint.h>

typedef struct prof_map_line {
  uintptr_t lo, hi;
  uintptr_t offset;
  char perms[5];
  const char *path; /* "" when anonymous */
} prof_map_line_t;

/* Calls fn for each mapping until it returns false. Returns false if the file cannot
 * be read. */
bool prof_maps_foreach(bool (*fn)(const prof_map_line_t *m, void *arg), void *arg);
/* The mapping that contains addr: *lo and *hi receive its bounds. */
bool prof_maps_find(uintptr_t addr, uintptr_t *lo, uintptr_t *hi);

#endif
