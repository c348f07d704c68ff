/* SPDX-License-Identifier: MIT */
/*
 * The front end's cross-file entry points: the public functions are split by concept
 * (alloc.c, free.c, aligned.c, realloc.c, control.c, ...), and these are what one
 * file of the front end, or cxx.c and compat.c, needs from another.
 */
#ifndef TESSERA_FRONTEND_H
#define TESSERA_FRONTEND_H

#include "types.h"

/* alloc.c */
/* malloc, for code inside the library (the public name may be interposed). */
void *tessera_malloc_internal(size_t size);
/* A block just taken from an arena without a thread cache: counts it for the thread
 * (thread.allocated) and applies junk:true / zero:true. p may be NULL. */
void *alloc_counted(void *p, size_t usable);
/* The same for a large block the arena zeroed when zeroed is true (calloc, MALLOCX_ZERO):
 * counted, but not junk-filled. */
void *alloc_counted_large(void *p, size_t usable, bool zeroed);
/* A large block of at least size bytes, aligned to align (a power of two >= PAGE),
 * zeroed if asked, from the calling thread's arena, counted. NULL if impossible. */
void *alloc_large(size_t size, size_t align, bool zero);
/* prof:true, the allocation prof_alloc_due chose: a sampled block of usize bytes from
 * arena a (NULL: the thread's), recorded with its stack. */
void *alloc_sampled_in(arena_t *a, size_t usize, size_t align, bool zero);
/* hardened:true: every allocation (hardened.h); func names the program's call in a
 * misuse message. zero: a large block must be zeroed (a slab block always is). */
void *alloc_hardened(size_t n, size_t align, bool zero, const char *func);
/* The size of the block alloc_hardened(n, align) gives (0 if impossible). */
size_t alloc_hardened_block_size(size_t n, size_t align);
/* hardened:true: malloc's path and entry (alloc.c; its PLT slots point there: got_patch.h). */
void *malloc_hardened(size_t size);
/* hardened:true: the region (hardened.h) of block p of class c (from free_lookup_block). */
size_t free_hardened_region(const extent_t *e, unsigned c);

/* free.c */
void tessera_free_internal(void *p);
/* hardened:true: free's path and entry (its PLT slots point there: got_patch.h). */
void free_hardened_path(void *p);
/* The block p starts; aborts naming func if p is not a live block tessera handed out
 * ("invalid pointer"), or is one freed before: "double free" if freeing (the caller is
 * about to free it), else "use after free". *class_out receives its class, CODE_LARGE
 * for an uncached large block. */
extent_t *free_lookup_block(const void *p, const char *func, unsigned *class_out, bool freeing);
/* Frees block p of class c (from free_lookup_block) straight to its arena, keyed. */
void free_to_arena(extent_t *e, unsigned c, void *p);
/* free with a size the caller claims (malloc's rules); aborts unless the block's size
 * class is the size's. */
void tessera_free_sized_internal(void *p, size_t size, const char *func);
/* The usable size malloc(size) gives (0 if impossible). */
size_t free_usable_of_malloc(size_t size);
/* Frees p (through the thread cache if use_tcache) if its usable size is usable or
 * usable_alt (two allocation paths may round one request differently); else aborts
 * naming func ("size of another size class"). */
void tessera_free_checked_size(void *p, size_t usable, size_t usable_alt, bool use_tcache, const char *func);
/* The usable size of the live block p; aborts naming func if p is not one. */
size_t tessera_usable_size_internal(const void *p, const char *func);

/* aligned.c */
void *tessera_aligned_internal(size_t align, size_t size);
/* The usable size tessera_aligned_internal(align, size) gives (0 if impossible). */
size_t aligned_usable_size(size_t align, size_t size);
/* free_aligned_sized's check, naming func (C++'s aligned sized delete shares it). */
void tessera_free_aligned_sized_internal(void *p, size_t align, size_t size, const char *func);

/* realloc.c */
/* xallocx: resizes the large block p in place to at least size and at most size + extra
 * bytes where its neighbour allows (zeroing new bytes if asked); returns the usable size
 * it has afterwards (unchanged when nothing could be done). */
size_t realloc_in_place(void *p, size_t size, size_t extra, bool zero);

#endif
