/* SPDX-License-Identifier: MIT */
#include "control.h"

#include <errno.h>
#include <string.h>

#include "arena.h"
#include "bin.h"
#include "frontend.h"
#include "init.h"
#include "options.h"
#include "prof_hooks.h"
#include "purge.h"
#include "size_class.h"
#include "background.h"
#include "tcache.h"

unsigned control_narenas(void) { return boot_ensure() ? arenas_count() : 0; }

int control_arena_create(unsigned *index) {
  if (!boot_ensure()) return EAGAIN;
  arena_t *a = arena_create();
  if (a == NULL) return EAGAIN;
  *index = a->index;
  return 0;
}

unsigned control_thread_arena_get(void) { return boot_ensure() ? thread_arena()->index : 0; }

int control_thread_arena_set(unsigned index) {
  if (!boot_ensure()) return EAGAIN;
  if (index >= arenas_count()) return EINVAL;
  arena_t *a = arena_lookup(index);
  if (a == NULL) return EAGAIN;
  thread_bind_arena(a);
  return 0;
}

/* The request as control_alloc serves it: size rounded up to the alignment (at least
 * the quantum); 0 if that overflows. */
static size_t aligned_request(size_t size, size_t align) {
  if (align < QUANTUM) align = QUANTUM;
  if (size > SIZE_MAX - align) return 0;
  size_t rounded = align_up(size, align);
  return rounded == 0 ? QUANTUM : rounded;
}

/* The class of an aligned request: beyond the quantum, a static one (an exact class's
 * size need not be a multiple of the alignment: aligned.c). */
static unsigned aligned_class(size_t rounded, size_t align) {
  return align > QUANTUM ? size_to_static_class(rounded) : size_to_class(rounded);
}

/* The largest request the jemalloc-style calls accept: the last large size class
 * (arenas.lextent.<nlextents - 1>.size). jemalloc's nallocx gives 0 and its mallocx
 * NULL above it, without asking the OS; it is beyond any user address space. */
static size_t largest_request(void) { return class_to_size(NSMALL + NLARGE_CLASSES - 1); }

size_t control_alloc_usable(size_t size, size_t align) {
  if (!boot_ensure() || size > largest_request() || align > ((size_t)1 << 62)) return 0;
  size_t rounded = aligned_request(size, align);
  if (rounded == 0) return 0;
  if (align <= PAGE && rounded <= LOOKUP_MAX) return class_infos[aligned_class(rounded, align)].size;
  return large_usable_size(large_request(size));
}

PROF_API_ENTRY void *control_alloc(int arena_index, size_t size, size_t align, bool zero, bool use_tcache) {
  if (!boot_ensure() || size > largest_request()) return NULL;
  if ((arena_index < 0 && use_tcache) || opt_hardened) { /* hardened: its one path */
    void *p = align > QUANTUM ? tessera_aligned_internal(align, size) : tessera_malloc_internal(size);
    if (p != NULL && zero) memset(p, 0, tessera_usable_size_internal(p, "mallocx()"));
    return p;
  }
  arena_t *a = arena_index < 0 ? thread_arena() : arena_lookup((unsigned)arena_index);
  if (a == NULL || size > (size_t)PTRDIFF_MAX || align > ((size_t)1 << 62)) return NULL;
  size_t rounded = aligned_request(size, align);
  if (rounded == 0) return NULL;
  /* An explicit arena, or no cache: sampled like every other allocation. */
  if (unlikely(opt_prof)) {
    size_t usize = control_alloc_usable(size, align);
    if (prof_alloc_due(usize)) return alloc_sampled_in(a, usize, align < PAGE ? PAGE : align, zero);
  }
  if (align <= PAGE && rounded <= SMALL_MAX) {
    unsigned c = aligned_class(rounded, align);
    void *p = bin_alloc_one(a, c);
    if (p == NULL && arena_handle_oom(class_infos[c].size)) p = bin_alloc_one(a, c);
    /* Counted (and junk-filled with junk:true) first: MALLOCX_ZERO's zeros come last. */
    p = alloc_counted(p, class_infos[c].size);
    if (p != NULL && zero) memset(p, 0, class_infos[c].size);
    return p;
  }
  size_t large = large_request(size);
  return alloc_counted_large(arena_malloc_large(a, large, align < PAGE ? PAGE : align, zero),
                             large_usable_size(large), zero);
}

void control_free(void *p, bool use_tcache) {
  if (use_tcache || p == NULL) {
    tessera_free_internal(p);
    return;
  }
  unsigned c;
  extent_t *e = free_lookup_block(p, "dallocx()", &c, true);
  free_to_arena(e, c, p);
}

/* Runs f on arena index (every arena for ARENAS_ALL). */
static int for_arenas(unsigned index, size_t (*f)(arena_t *, bool), bool all) {
  if (!boot_ensure()) return EINVAL;
  if (index == ARENAS_ALL) {
    for (unsigned i = 0; i < arenas_count(); i++)
      if (arenas[i] != NULL) f(arenas[i], all);
    return 0;
  }
  arena_t *a = arena_lookup(index);
  if (a == NULL) return EINVAL;
  f(a, all);
  return 0;
}

int control_arena_purge(unsigned index) { return for_arenas(index, purge_arena, true); }
int control_arena_decay(unsigned index) { return for_arenas(index, purge_arena, false); }

int control_default_decay_ms(bool muzzy, ssize_t *old_ms, const ssize_t *new_ms) {
  if (new_ms != NULL && *new_ms < -1) return EINVAL;
  if (!boot_ensure()) return EINVAL;
  _Atomic ssize_t *field = muzzy ? &arena_default_muzzy_decay_ms : &arena_default_dirty_decay_ms;
  if (old_ms != NULL) *old_ms = atomic_load(field);
  if (new_ms != NULL) atomic_store(field, *new_ms);
  return 0;
}

int control_arena_decay_ms(unsigned index, bool muzzy, ssize_t *old_ms, const ssize_t *new_ms) {
  if (!boot_ensure()) return EINVAL;
  arena_t *a = arena_lookup(index);
  if (a == NULL || (new_ms != NULL && *new_ms < -1)) return EINVAL;
  _Atomic ssize_t *field = muzzy ? &a->muzzy_decay_ms : &a->dirty_decay_ms;
  if (old_ms != NULL) *old_ms = atomic_load(field);
  if (new_ms != NULL) atomic_store(field, *new_ms);
  return 0;
}

int control_background_thread(bool *old, const bool *new_value) {
  if (!boot_ensure()) return EAGAIN;
  if (old != NULL) *old = atomic_load(&background_state) == BG_RUNNING;
  if (new_value == NULL) return 0;
  return (*new_value ? background_start() : background_stop()) ? 0 : EFAULT;
}
