/* SPDX-License-Identifier: MIT */
/*
 * realloc and reallocarray: a block that already fits stays where it is; a large block
 * grows or shrinks in place when its neighbour allows; otherwise allocate, copy, free.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "tessera.h"

#include "arena.h"
#include "free_map.h"
#include "frontend.h"
#include "got_patch.h"
#include "hardened.h"
#include "hardened_bytes.h"
#include "hardened_key.h"
#include "init.h"
#include "options.h"
#include "pagemap.h"
#include "prof_hooks.h"
#include "size_class.h"
#include "tcache.h"
#include "thread.h"

/* Large blocks of at least this size that must move are moved by the kernel rather
 * than copied (arena_realloc_large_moving): each move is a system call and leaves the
 * block a mapping of its own, worth it from a few dozen pages (glibc moves its own
 * mmapped chunks, from 128 KiB, with mremap too). */
#define REALLOC_MOVE_MIN ((size_t)256 << 10)

/* Resizes the large block e in place to new_usable bytes, counting the change. */
static bool resize_large(extent_t *e, size_t old_usable, size_t new_usable) {
  if (!arena_resize_large_in_place(e->arena, e, new_usable)) return false;
  tls_thread.allocated += new_usable;
  tls_thread.deallocated += old_usable;
  return true;
}

/* A large block that grows elsewhere, its pages moved (arena.h); NULL with ENOMEM. Not
 * the profiler's sampled allocation (moving_not_sampled: that one goes through malloc,
 * which records it), nor with the debug fills (junk:true fills the old block, zero:true
 * the new pages). */
static void *realloc_moving(extent_t *e, size_t old_usable, size_t new_usable) {
  void *q = arena_realloc_large_moving(current_arena(tcache_get()), e, new_usable);
  if (q == NULL) {
    errno = ENOMEM; /* p is untouched */
    return NULL;
  }
  tls_thread.allocated += new_usable;
  tls_thread.deallocated += old_usable;
  return q;
}

/* prof:true: whether a block of usize bytes that realloc would move is not the thread's
 * next sampled allocation (its bytes are then counted down, as malloc's would be); a
 * sampled one goes through malloc, which records it. Always true with prof:false. */
static bool moving_not_sampled(size_t usize) {
  if (!opt_prof) return true;
  prof_thread_t *t = &tls_thread.prof;
  if ((int64_t)usize >= t->bytes_until_sample) return false;
  t->bytes_until_sample -= (int64_t)usize;
  return true;
}

/* hardened:true: the block stays where malloc(size) would give a block of its size (its
 * trailer rewritten for the new size), else a new block (the old one quarantined). */
COLD_TEXT static void *realloc_hardened(void *p, size_t size) {
  unsigned c;
  extent_t *e = free_lookup_block(p, "realloc()", &c, true); /* a misuse is named realloc's */
  size_t region = free_hardened_region(e, c);
  size_t old_size = hardened_checked_size(p, region, "realloc()"); /* checked above: the size */
  if (unlikely(size > (size_t)PTRDIFF_MAX)) {
    errno = ENOMEM;
    return NULL;
  }
  size_t block = c == CODE_LARGE ? e->npages * PAGE : class_infos[c].size;
  if (alloc_hardened_block_size(size, QUANTUM) == block && size + HARDENED_EXTRA <= region) {
    hardened_write_trailer(p, region, size);
    return p;
  }
  void *q = malloc_hardened(size);
  if (q == NULL) return NULL; /* errno is ENOMEM; p is untouched */
  memcpy(q, p, size < old_size ? size : old_size);
  free_hardened_path(p);
  return q;
}

/* hardened:true: realloc's entry (the callers' PLT slots of realloc point here once the
 * library is up: realloc_hardened_entry_patch), and where the default entry sends every
 * call. malloc's and free's hardened paths called directly. */
PROF_API_ENTRY static void *realloc_hardened_entry(void *p, size_t size) {
  if (p == NULL) return malloc_hardened(size);
  if (size == 0) { /* glibc's behaviour: free and return NULL */
    unsigned c;
    free_lookup_block(p, "realloc()", &c, true); /* a misuse is named realloc's */
    free_hardened_path(p);
    return NULL;
  }
  return realloc_hardened(p, size);
}

static void realloc_hardened_entry_patch(void);

/* prof:true, the resized block p is the sampled allocation: recorded anew, its stack
 * captured from here (realloc's frames are left out: PROF_API_ENTRY). */
PROF_API_ENTRY static void *record_resized(void *p, size_t usize) {
  prof_block_record(p, usize);
  return p;
}

/* prof:true: sampled large block p (extent e, old_usable bytes) resized in place to
 * new_usable bytes where its neighbour allows, which to the profiler is a free and an
 * allocation, as the copy it saves would have been: the old record forgotten, the new
 * size counted down (prof_alloc_due), and recorded if it is the sampled allocation;
 * else the extent becomes an ordinary large block. (Large blocks are never of a cached
 * class: their free takes the slow path, which tells the profiler, either way.) */
NOINLINE PROF_API_ENTRY static bool resize_sampled_in_place(void *p, extent_t *e, size_t old_usable, size_t new_usable) {
  if (!resize_large(e, old_usable, new_usable)) return false;
  prof_block_free(p, e);
  if (prof_alloc_due(new_usable)) {
    void *q;
    PROF_SAMPLE_FROM_HERE(q, record_resized(p, new_usable));
    (void)q;
  } else {
    __atomic_store_n(&e->sampled, 0, __ATOMIC_RELAXED);
  }
  return true;
}

/* Whether p is a live large block whose usable size a request of size bytes (>
 * LOOKUP_MAX) keeps, the answer realloc_block gives after the general lookup: a string
 * growing a few bytes at a time past 32 KiB asks for that on nearly every call
 * (docs/design.md). Read through the page map alone; anything else, misuse included,
 * takes the general path, which names it. Out of the start-up code's window
 * (structure.footprint): programs of small blocks never call it. */
COLD_TEXT static bool large_keeps_size(const void *p, size_t size) {
  const extent_t *e = pm_extent(pagemap_get((uintptr_t)p));
  return e != NULL && e->addr == (uintptr_t)p && __atomic_load_n(&e->state, __ATOMIC_RELAXED) == EXTENT_LARGE &&
         !__atomic_load_n(&e->thread_cached, __ATOMIC_RELAXED) && large_usable_size(size) == e->npages * PAGE;
}

/* realloc of block p in the default mode, beyond the entry's case (p keeps its class): a
 * small block (a string growing, a table doubling: the common case of programs whose
 * allocator function is realloc, as Lua's is) found through the free map; everything
 * else through the page map. plain: p's class if the entry found p a live block of a
 * cached class, NULL if it found none or did not look (size 0 or above LOOKUP_MAX). */
NOINLINE PROF_API_ENTRY static void *realloc_block(void *p, size_t size, const class_info_t *plain) {
  if (size == 0) { /* glibc's behaviour: free and return NULL */
    unsigned c;
    free_lookup_block(p, "realloc()", &c, true); /* a misuse is named realloc's */
    tessera_free_internal(p);
    return NULL;
  }
  if (size > LOOKUP_MAX) {
    uint32_t offset;
    plain = block_live_cached_class(p, &offset); /* found without the page map */
  }
  unsigned pc = plain != NULL ? (unsigned)(plain - class_infos) : 0;
  if (plain != NULL && pc < NSMALL && size <= (size_t)PTRDIFF_MAX) {
    tls_thread.realloc_copying = true; /* a copy: see below */
    void *q = tessera_malloc_internal(size);
    tls_thread.realloc_copying = false;
    if (q == NULL) return NULL; /* errno is ENOMEM; p is untouched */
    size_t old_usable = plain->size;
    memcpy(q, p, size < old_usable ? size : old_usable);
    tessera_free_internal(p);
    return q;
  }
  unsigned c;
  extent_t *e = free_lookup_block(p, "realloc()", &c, true);
  if (unlikely(size > (size_t)PTRDIFF_MAX)) {
    errno = ENOMEM;
    return NULL;
  }
  size_t old_usable = c == CODE_LARGE ? e->npages * PAGE : class_infos[c].size;
  if (c < NSMALL) {
    if (size <= SMALL_MAX && size_to_class(size) == c) return p;
  } else if (size > SMALL_MAX) {
    size_t new_usable = large_usable_size(size);
    if (new_usable == old_usable) return p;
    if (new_usable != 0 && !e->sampled && resize_large(e, old_usable, new_usable)) return p;
    _Static_assert(NCACHED_MAX == NSMALL, "a large block's code stays CODE_LARGE when it is resized");
    if (new_usable != 0 && unlikely(e->sampled) && resize_sampled_in_place(p, e, old_usable, new_usable)) return p;
    if (new_usable > old_usable && old_usable >= REALLOC_MOVE_MIN && !e->sampled && !opt_junk && !opt_zero &&
        moving_not_sampled(new_usable))
      return realloc_moving(e, old_usable, new_usable);
  }
  /* A copy: neither block goes through the thread's cache of large blocks. */
  tls_thread.realloc_copying = true;
  void *q = tessera_malloc_internal(size);
  if (q != NULL) {
    memcpy(q, p, size < old_usable ? size : old_usable);
    tessera_free_internal(p);
  }
  tls_thread.realloc_copying = false;
  return q; /* NULL: errno is ENOMEM; p is untouched */
}

/* realloc of block p to size > LOOKUP_MAX bytes: the entry's case for a large block
 * (large_keeps_size), else realloc_block. A tail call from the entry, which therefore
 * saves no register for it; in the profiler's section (prof_hooks.h), as the entry's
 * frame is gone when it calls realloc_block. */
NOINLINE PROF_API_ENTRY static void *realloc_large(void *p, size_t size) {
  if (large_keeps_size(p, size)) return p;
  return realloc_block(p, size, NULL);
}

/* realloc: the default entry. realloc(NULL, n) is a malloc, and the only call of
 * programs that allocate through realloc alone: a test and a jump, before any register
 * is saved. */
PROF_API_ENTRY static void *realloc_default(void *p, size_t size) {
  if (unlikely(opt_hardened)) {
    realloc_hardened_entry_patch();
    return realloc_hardened_entry(p, size);
  }
  if (p == NULL) return tessera_malloc_internal(size);
  /* The common case, a small block whose new size keeps its class (a string growing
   * within its region), answered here, without realloc_block's stack frame. */
  const class_info_t *plain = NULL;
  if (size - 1 < LOOKUP_MAX) { /* size 0 wraps around */
    uint32_t offset;
    plain = block_live_cached_class(p, &offset);
    if (plain != NULL && class_of_lookup[(size + 15) >> 4] == (unsigned)(plain - class_infos)) return p;
  } else if (size != 0) {
    return realloc_large(p, size);
  }
  return realloc_block(p, size, plain);
}

TESSERA_EXPORT void *realloc(void *p, size_t size) __attribute__((alias("realloc_default")));

/* hardened:true, once, on the first call of realloc's default entry after the library's
 * constructor ran (libc is ready): the callers' PLT slots of realloc pointed at
 * realloc_hardened_entry (got_patch.h). A caller not rewritten keeps the default entry,
 * which sends the call there too. hardened is set at boot only. */
static _Atomic bool realloc_hardened_entry_patched;

COLD_TEXT static void realloc_hardened_entry_patch_now(void) {
  if (!atomic_load_explicit(&boot_constructed, memory_order_acquire)) return;
  if (atomic_exchange(&realloc_hardened_entry_patched, true)) return;
  got_patch("realloc", (void *)realloc_default, (void *)realloc_hardened_entry);
}

static void realloc_hardened_entry_patch(void) {
  if (unlikely(!atomic_load_explicit(&realloc_hardened_entry_patched, memory_order_relaxed))) realloc_hardened_entry_patch_now();
}

TESSERA_EXPORT PROF_API_ENTRY void *reallocarray(void *p, size_t n, size_t size) {
  size_t total;
  if (__builtin_mul_overflow(n, size, &total)) {
    errno = ENOMEM;
    return NULL;
  }
  return realloc(p, total);
}

/* The usable size a large block of at least n bytes gets; 0 for a small size. */
static size_t large_target(size_t n) { return n > SMALL_MAX ? large_usable_size(n) : 0; }

size_t realloc_in_place(void *p, size_t size, size_t extra, bool zero) {
  unsigned c;
  extent_t *e = free_lookup_block(p, "xallocx()", &c, false);
  if (unlikely(opt_hardened)) return tessera_usable_size_internal(p, "xallocx()"); /* never in place */
  if (c < NSMALL) return class_infos[c].size; /* a region cannot change size */
  size_t old_usable = e->npages * PAGE;
  if (e->sampled) return old_usable; /* the profiler's block of its own stays as it is */
  size_t want = size > SIZE_MAX - extra ? SIZE_MAX : size + extra;
  /* As jemalloc: grow to size + extra where the neighbour allows (else to size, if the
   * block is smaller than that); a block then between size and size + extra stays as it
   * is; a bigger one shrinks to size + extra. Only to large sizes: a small size would
   * need a slab region, so the block stays. */
  size_t grow[2] = {old_usable < want ? large_target(want) : 0, old_usable < size ? large_target(size) : 0};
  for (int i = 0; i < 2; i++)
    if (grow[i] > old_usable && resize_large(e, old_usable, grow[i])) {
      if (zero) memset((char *)p + old_usable, 0, grow[i] - old_usable);
      return grow[i];
    }
  if (old_usable >= size && old_usable <= want) return old_usable;
  size_t shrink = old_usable > want ? large_target(want) : 0;
  if (shrink != 0 && shrink < old_usable && resize_large(e, old_usable, shrink)) return shrink;
  return old_usable;
}
