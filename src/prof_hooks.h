/* SPDX-License-Identifier: MIT */
/*
 * prof_hooks: the heap profiler (prof_sample.h and the files after it) in the malloc
 * paths, with prof:true. Nothing here runs with prof:false: the only test on a path
 * that prof:false takes is `opt_prof` on malloc's, calloc's and the aligned family's
 * slow paths, and `extent->sampled` on the free of a large block (a slow path too).
 *
 * How every allocation is seen: every allocation counts its usable size down the
 * thread's byte countdown, in order, one stream per thread: malloc's and calloc's
 * through prof_cache_pop (in the fast path of their profiling entries, which got_patch
 * points the callers at after boot; for a caller left on the default entry, boot points
 * its size -> bin table at bins[0], so that every malloc takes the slow path, which
 * starts with the same pop: prof_cache.h), every other path through prof_alloc_due.
 * free's fast path is unchanged.
 *
 * A sampled block of a small class up to PROF_SLAB_MAX_SIZE comes from a slab kept for
 * sampled blocks (prof_slab.h: every block there is a sampled one, and every page of it
 * is sent to free's slow path), so that its live neighbours' frees keep free's fast
 * path. A sampled block of a larger cached class comes from the cache like any other
 * (prof_block_record_in_place): its extent (slab, or large block of the class) counts
 * it in `sampled`, and the free-map entry of its first page (the one free looks up) is
 * diverted to bins[0] (written back when the extent's last sampled block goes), so every
 * free there takes free's slow path, which tells the profiler (prof_block_free) when the
 * extent is marked. Any other sampled allocation (large,
 * aligned, zeroed large, mallocx with an arena) gets a large extent of its own, marked
 * `sampled` and mapped as an uncached large block (CODE_LARGE), whatever its size:
 * its free misses free's fast path the same way.
 *
 * Dumps (prof.dump, prof_final, prof_gdump, lg_prof_interval) and the leak report run
 * with no allocator lock held; see docs/profiling.md for the files.
 */
#ifndef TESSERA_PROF_HOOKS_H
#define TESSERA_PROF_HOOKS_H

#include "prof_sample.h"
#include "thread.h"
#include "types.h"

/* After tcache_boot: readies the engine and, with prof:true, sends malloc's fast path
 * to the slow path. */
void prof_hooks_boot(void);
/* Set at boot when every malloc goes through the countdown (prof:true without
 * hardened:true, whose own slow path takes every allocation): malloc's slow path tests
 * this one flag. */
extern INTERNAL bool prof_mallocs_counted;

/* From the library's constructor: keeps a duplicate of stderr for the leak report. */
void prof_hooks_constructed(void);

/* prof_alloc_due when the countdown may be crossed. */
bool prof_alloc_due_slow(size_t usize);
/* With prof:true, on every allocation of usize bytes prof_cache_pop did not serve:
 * whether it is the sampled one. Draws the next interval. */
static inline bool prof_alloc_due(size_t usize) {
  prof_thread_t *t = &tls_thread.prof;
  if (likely((int64_t)usize < t->bytes_until_sample)) {
    t->bytes_until_sample -= (int64_t)usize;
    return false;
  }
  return prof_alloc_due_slow(usize);
}

/* result = call, a sampled allocation, whose stack is captured from here: the frames
 * of the allocator between this function and the capture are never unwound (~130
 * instructions each: 3 of 7 steps a sample in workingset-4). The registers live in this function's frame, which outlives the
 * call (the start is cleared before returning: the call is not a tail call). */
#define PROF_SAMPLE_FROM_HERE(result, call)                                             \
  do {                                                                                  \
    prof_regs_t prof_start_;                                                            \
    PROF_UNWIND_CAPTURE_REGS(&prof_start_);                                             \
    tls_thread.prof.unwind_start = &prof_start_;                                        \
    (result) = (call);                                                                  \
    tls_thread.prof.unwind_start = NULL;                                                \
  } while (0)

/* The sampled block's extent: a large extent of at least usize bytes (page rounded),
 * aligned to align (>= PAGE), zeroed if asked, marked sampled, from arena a (NULL: the
 * thread's). NULL if impossible. */
extent_t *prof_block_new(arena_t *a, size_t usize, size_t align, bool zero);
/* After the block is counted and before any allocator lock: captures the stack (the
 * allocator's entry points left out) and records p as a sampled block of usize bytes;
 * then any dump the allocation triggers (lg_prof_interval, prof_gdump). p may be NULL
 * (the allocation failed): the next interval is drawn all the same. */
void prof_block_record(void *p, size_t usize);
/* prof_block_record for a block of a cached class allocated from the cache: marked in
 * place (above). */
void prof_block_record_in_place(void *p, size_t usize);
/* prof_block_record for a block of a sample slab (prof_slab.h). */
void prof_block_record_in_slab(void *p, size_t usize);
/* On every free (and realloc's free) of a block p whose extent e is marked sampled:
 * the profiler forgets p if it was sampled. */
void prof_block_free(void *p, const extent_t *e);

/* prof.* (ctl.c). Each returns 0 or an errno value (ENOENT for a write or an action
 * with prof:false). */
int prof_ctl_dump(const char *filename); /* NULL: <prof_prefix>.<pid>.<seq>.u.heap */
int prof_ctl_active(bool *old, const bool *set);
int prof_ctl_reset(const size_t *lg_sample); /* NULL: keep the interval */
int prof_ctl_lg_sample(size_t *out);

/* The section of the allocator's entry points (malloc, calloc, realloc, ...) and of
 * the functions between them and the profiler (malloc's slow path, ...): the profiler
 * leaves every frame up to the outermost of these out of a stack. (A tail call leaves
 * no frame of its caller, so the slow paths must be in the section too.) */
#define PROF_API_ENTRY __attribute__((section("tessera_api")))

#endif
