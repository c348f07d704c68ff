/* SPDX-License-Identifier: MIT */
/*
 * The aligned allocation family: posix_memalign, aligned_alloc, memalign, valloc,
 * pvalloc. Alignments up to a page come from the size classes (a class whose size is a
 * multiple of the alignment has every region aligned, slabs being page aligned);
 * larger ones from an aligned extent.
 */
#include <errno.h>
#include <malloc.h>
#include <stdlib.h>

#include "tessera.h"

#include "arena.h"
#include "frontend.h"
#include "init.h"
#include "options.h"
#include "prof_hooks.h"
#include "size_class.h"

static bool power_of_two(size_t x) { return x != 0 && (x & (x - 1)) == 0; }

/* The request for an aligned block of rounded bytes (a multiple of the alignment, up to
 * LOOKUP_MAX): its static class's size, which is a multiple of every alignment up to
 * the size, and which no exact class ever takes (exact_class.h: an exact class's size
 * need not be such a multiple, and one made meanwhile must not take the request). */
static size_t static_class_request(size_t rounded) { return class_infos[size_to_static_class(rounded)].size; }

PROF_API_ENTRY void *tessera_aligned_internal(size_t align, size_t size) {
  if (align <= QUANTUM) return tessera_malloc_internal(size);
  if (unlikely(size > (size_t)PTRDIFF_MAX || align > ((size_t)1 << 62))) {
    errno = ENOMEM;
    return NULL;
  }
  if (!boot_ensure()) return NULL;
  if (unlikely(opt_hardened)) {
    void *q = alloc_hardened(size, align, false, "aligned_alloc()");
    if (q == NULL) errno = ENOMEM;
    return q;
  }
  if (align <= PAGE) {
    size_t rounded = align_up(size, align);
    if (rounded == 0) rounded = align;
    if (rounded <= LOOKUP_MAX) return tessera_malloc_internal(static_class_request(rounded));
  }
  void *p = alloc_large(large_request(size), align < PAGE ? PAGE : align, false);
  if (p == NULL) errno = ENOMEM;
  return p;
}

size_t aligned_usable_size(size_t align, size_t size) {
  if (align <= QUANTUM) return free_usable_of_malloc(size);
  if (size > (size_t)PTRDIFF_MAX || align > ((size_t)1 << 62)) return 0;
  if (unlikely(opt_hardened)) return alloc_hardened_block_size(size, align);
  if (align <= PAGE) {
    size_t rounded = align_up(size, align);
    if (rounded == 0) rounded = align;
    if (rounded <= LOOKUP_MAX) return free_usable_of_malloc(static_class_request(rounded));
  }
  return large_usable_size(large_request(size));
}

void tessera_free_aligned_sized_internal(void *p, size_t align, size_t size, const char *func) {
  /* A block of this size from plain malloc is accepted too: C++ uses the aligned delete
   * only for over-aligned types, but C code may pass malloc's blocks with their natural
   * alignment. */
  tessera_free_checked_size(p, aligned_usable_size(align, size), free_usable_of_malloc(size), true, func);
}

TESSERA_EXPORT void free_aligned_sized(void *p, size_t align, size_t size) {
  tessera_free_aligned_sized_internal(p, align, size, "free_aligned_sized()");
}

TESSERA_EXPORT PROF_API_ENTRY int posix_memalign(void **out, size_t align, size_t size) {
  if (!power_of_two(align) || align % sizeof(void *) != 0) return EINVAL;
  int saved = errno;
  void *p = tessera_aligned_internal(align, size);
  errno = saved;
  if (p == NULL) return ENOMEM;
  *out = p;
  return 0;
}

TESSERA_EXPORT PROF_API_ENTRY void *aligned_alloc(size_t align, size_t size) {
  if (!power_of_two(align)) {
    errno = EINVAL;
    return NULL;
  }
  return tessera_aligned_internal(align, size);
}

TESSERA_EXPORT PROF_API_ENTRY void *memalign(size_t align, size_t size) {
  /* glibc: an alignment above 2^63 is EINVAL; a non-power-of-two one is rounded up to
   * the next power of two; an alignment that cannot be met is ENOMEM, like a size. */
  if (align > SIZE_MAX / 2 + 1) {
    errno = EINVAL;
    return NULL;
  }
  if (!power_of_two(align)) {
    size_t a = 1;
    while (a < align) a <<= 1;
    align = a;
  }
  return tessera_aligned_internal(align, size);
}

TESSERA_EXPORT PROF_API_ENTRY void *valloc(size_t size) { return tessera_aligned_internal(PAGE, size); }

TESSERA_EXPORT PROF_API_ENTRY void *pvalloc(size_t size) {
  if (size > SIZE_MAX - PAGE_MASK) {
    errno = ENOMEM;
    return NULL;
  }
  size_t rounded = align_up(size, PAGE);
  return tessera_aligned_internal(PAGE, rounded ? rounded : PAGE);
}
