/* SPDX-License-Identifier: MIT */
/*
 * calloc of a used large block: the pages that may hold old data are zeroed, either
 * written with zeros or given back to the OS (they then read as zero, and fault in when
 * touched), whichever the program's recent callocs favour (calloc_clear.c).
 */
#ifndef TESSERA_CALLOC_CLEAR_H
#define TESSERA_CALLOC_CLEAR_H

#include "types.h"

/* Zeroes the `bytes` (whole pages) at addr, the part of large block e that may hold old
 * data. e must be the caller's: a block being handed out. */
void calloc_clear(extent_t *e, void *addr, size_t bytes);

/* Large block e is being freed; its pages were given back at its calloc and it was
 * chosen for measuring (e->calloc_measure): how many of them the program touched since
 * goes into the choice. */
void calloc_clear_freed(extent_t *e);

#endif
