/* SPDX-License-Identifier: MIT */
/*
 * prof_meta: the memory the heap profiler itself uses, for the stats (the "prof"
 * section): its metadata (stack and record tables and dump buffers, from base_alloc
 * through prof_meta_alloc, and the module table: prof_modules_bytes) and the padding of the sampled blocks, each of
 * which has pages of its own (prof_hooks.h). Implemented in prof_sample.c.
 */
#ifndef TESSERA_PROF_META_H
#define TESSERA_PROF_META_H

#include <stddef.h>

/* base_alloc / base_free, counted. */
void *prof_meta_alloc(size_t size);
void prof_meta_free(void *p, size_t size);
/* Bytes of profiler metadata now allocated. */
size_t prof_meta_bytes(void);
/* Bytes of the pages of live sampled blocks beyond their usable sizes. */
size_t prof_meta_sampled_padding(void);

#endif
