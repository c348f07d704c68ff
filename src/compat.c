/* SPDX-License-Identifier: MIT */
/*
 * jemalloc's non-standard API with jemalloc's names, flag encoding and semantics, so
 * programs written against it run unchanged: mallocx, rallocx, xallocx, sallocx,
 * dallocx, sdallocx, nallocx, mallctl, mallctlnametomib, mallctlbymib,
 * malloc_stats_print. Built only with TESSERA_JEMALLOC_COMPAT=ON (the default).
 *
 * Flags (jemalloc's encoding): bits 0..5 lg(alignment) (0: none), 0x40 zero, bits
 * 8..19 thread cache (0 automatic, 1 none, n + 2 an explicit cache: tessera has none and
 * uses the automatic one), bits 20..31 arena index + 1 (0 automatic).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tessera.h"

#include "control.h"
#include "frontend.h"
#include "prof_hooks.h"

typedef struct alloc_flags {
  size_t align;    /* 0 or a power of two */
  bool zero;
  bool use_tcache;
  int arena;       /* -1: the thread's own */
} alloc_flags_t;

static alloc_flags_t decode(int flags) {
  unsigned f = (unsigned)flags;
  alloc_flags_t d;
  unsigned lg = f & 0x3f;
  d.align = lg != 0 ? (size_t)1 << lg : 0;
  d.zero = (f & 0x40) != 0;
  d.use_tcache = ((f >> 8) & 0xfff) != 1;
  d.arena = (int)(f >> 20) - 1;
  return d;
}

static void *alloc_with(size_t size, const alloc_flags_t *d) {
  return control_alloc(d->arena, size == 0 ? 1 : size, d->align, d->zero, d->use_tcache);
}

TESSERA_EXPORT PROF_API_ENTRY void *mallocx(size_t size, int flags) {
  alloc_flags_t d = decode(flags);
  return alloc_with(size, &d);
}

TESSERA_EXPORT size_t nallocx(size_t size, int flags) {
  return control_alloc_usable(size == 0 ? 1 : size, decode(flags).align);
}

TESSERA_EXPORT size_t sallocx(const void *ptr, int flags) {
  (void)flags;
  return tessera_usable_size_internal(ptr, "sallocx()");
}

TESSERA_EXPORT void dallocx(void *ptr, int flags) { control_free(ptr, decode(flags).use_tcache); }

TESSERA_EXPORT void sdallocx(void *ptr, size_t size, int flags) {
  alloc_flags_t d = decode(flags);
  size_t n = size == 0 ? 1 : size;
  /* mallocx rounds a request through the cache (aligned_usable_size) or, with an arena
   * or without the cache, through control_alloc: either size class is the block's. */
  tessera_free_checked_size(ptr, aligned_usable_size(d.align, n), control_alloc_usable(n, d.align), d.use_tcache,
                            "sdallocx()");
}

/* Whether realloc can serve the request: no arena, cache or alignment wishes. */
static bool plain_realloc_will_do(const alloc_flags_t *d) {
  return d->arena < 0 && d->use_tcache && d->align <= QUANTUM;
}

TESSERA_EXPORT PROF_API_ENTRY void *rallocx(void *ptr, size_t size, int flags) {
  alloc_flags_t d = decode(flags);
  size_t old_usable = tessera_usable_size_internal(ptr, "rallocx()");
  if (size == 0) size = 1;
  if (control_alloc_usable(size, d.align) == 0) return NULL; /* as nallocx: above the largest class */
  void *q;
  if (plain_realloc_will_do(&d)) {
    q = realloc(ptr, size);
  } else {
    q = alloc_with(size, &d);
    if (q != NULL) {
      size_t new_usable = tessera_usable_size_internal(q, "rallocx()");
      memcpy(q, ptr, old_usable < new_usable ? old_usable : new_usable);
      control_free(ptr, d.use_tcache);
    }
  }
  if (q != NULL && d.zero) {
    /* jemalloc: the old usable size is the boundary between kept and zeroed bytes. */
    size_t new_usable = tessera_usable_size_internal(q, "rallocx()");
    if (new_usable > old_usable) memset((char *)q + old_usable, 0, new_usable - old_usable);
  }
  return q;
}

/* In place only (jemalloc's semantics: see realloc_in_place). Returns the block's usable
 * size afterwards, as jemalloc does. */
TESSERA_EXPORT size_t xallocx(void *ptr, size_t size, size_t extra, int flags) {
  return realloc_in_place(ptr, size, extra, (flags & 0x40) != 0);
}

TESSERA_EXPORT int mallctl(const char *name, void *oldp, size_t *oldlenp, void *newp, size_t newlen) {
  return tessera_ctl(name, oldp, oldlenp, newp, newlen);
}

TESSERA_EXPORT int mallctlnametomib(const char *name, size_t *mibp, size_t *miblenp) {
  return tessera_ctl_nametomib(name, mibp, miblenp);
}

TESSERA_EXPORT int mallctlbymib(const size_t *mib, size_t miblen, void *oldp, size_t *oldlenp, void *newp,
                                size_t newlen) {
  return tessera_ctl_bymib(mib, miblen, oldp, oldlenp, newp, newlen);
}

TESSERA_EXPORT void malloc_stats_print(void (*write_cb)(void *, const char *), void *cbopaque, const char *opts) {
  tessera_stats_print(write_cb, cbopaque, opts);
}
