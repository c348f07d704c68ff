/* SPDX-License-Identifier: MIT */
/*
 * The core's hooks for the control interface (ctl.c: tessera_ctl and the jemalloc-
 * compatible entry points in compat.c). Everything the control tree reads or changes in
 * the allocator goes through these functions, so ctl.c needs no knowledge of locks.
 * Each boots the allocator first where it needs it.
 */
#ifndef TESSERA_CONTROL_H
#define TESSERA_CONTROL_H

#include <sys/types.h>

#include "types.h"

/* Arenas 0 .. narenas_limit-1 are automatic (threads are spread over them); arenas
 * created by control_arena_create get the next indices, up to MAX_ARENAS-1, and are
 * used only by threads bound to them or by explicit-arena allocations. */
unsigned control_narenas(void); /* automatic + created: one past the highest index */
/* arenas.create: a new arena; 0 and its index, or EAGAIN when MAX_ARENAS are in use. */
int control_arena_create(unsigned *index);

/* thread.arena: the calling thread's arena, and binding it to another one (blocks the
 * thread already cached stay where they are and go back to their own arenas). */
unsigned control_thread_arena_get(void);
int control_thread_arena_set(unsigned index); /* 0 or EINVAL / EAGAIN */

/* mallocx-style allocation: arena_index < 0 means the thread's own arena; use_tcache
 * false bypasses the thread cache. align is 0 or a power of two. NULL on failure. */
void *control_alloc(int arena_index, size_t size, size_t align, bool zero, bool use_tcache);
/* The usable size control_alloc would give (nallocx); 0 if impossible. */
size_t control_alloc_usable(size_t size, size_t align);
/* dallocx-style free that bypasses the thread cache when use_tcache is false. */
void control_free(void *p, bool use_tcache);

/* arena.<i>.purge / arena.<i>.decay: index == ARENAS_ALL means every arena. purge
 * releases every unused page now; decay releases what the decay curve says is due now.
 * Return 0 or EINVAL. */
int control_arena_purge(unsigned index);
int control_arena_decay(unsigned index);
/* arena.<i>.dirty_decay_ms and muzzy_decay_ms (muzzy = true): *old_ms (if not NULL)
 * receives the current value; new_ms (if not NULL) sets it (-1 = never, 0 = at once).
 * 0, EINVAL (no such arena, or a value below -1). */
int control_arena_decay_ms(unsigned index, bool muzzy, ssize_t *old_ms, const ssize_t *new_ms);
/* arenas.dirty_decay_ms / arenas.muzzy_decay_ms: the decay times arenas created from
 * now on start with (automatic arenas created later included). Same conventions. */
int control_default_decay_ms(bool muzzy, ssize_t *old_ms, const ssize_t *new_ms);

/* background_thread: *old (if not NULL) whether the thread runs; new_value (if not
 * NULL) starts or stops it. 0, or EFAULT when it could not be started or is starting. */
int control_background_thread(bool *old, const bool *new_value);

#endif
