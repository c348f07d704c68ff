/* SPDX-License-Identifier: MIT */
/*
 * prof_meta: the memory the heap profiler itself uses, for the stats (the "prof"
 * section): its metadata (stack and record tables and dump buffers, from base_alloc
 * through prof_meta_alloc, and the module table: prof_modules_bytes) and the padding of the sampled blocks, each of
 * which has pages of its own (prof_hooks.h), or a region of a sample slab (prof_slab.h). Implemented in prof_sample.c.
 */
#ifndef TESSERA_PROF_META_H
#define TESSERA_PROF_META_H

#include <stddef.h>

/* base_alloc / base_free, counted. */
void *prof_meta_alloc(size_t size);
void prof_meta_free(void *p, size_t size);
/* Bytes of profiler metadata now allocated. */
size_t prof_meta_bytes(void);
/* Bytes of the pages of live sampled blocks beyond their usable sizes, and of the free
 * regions of the sample slabs (prof_slab.h). */
size_t prof_meta_sampled_padding(void);
/* The sample slabs' free bytes changed by delta (prof_slab.c; prof.reset keeps them). */
void prof_meta_slab_padding_add(ptrdiff_t delta);

#endif
