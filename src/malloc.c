/*
 * The public API. malloc and free have a fast path each (a thread-cache pop and push,
 * ~25 source lines together); everything else is in the noinline slow paths below.
 */
#include <errno.h>
#include <malloc.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <unistd.h>

#include "tessera.h"

#include "arena.h"
#include "background.h"
#include "base.h"
#include "bin.h"
#include "control.h"
#include "extent.h"
#include "fastmap.h"
#include "fatal.h"
#include "internal.h"
#include "lock.h"
#include "options.h"
#include "os.h"
#include "pagemap.h"
#include "size_class.h"
#include "tcache.h"

#define EXPORT TESSERA_EXPORT

/* ---- initialisation ---- */

enum { INIT_NONE, INIT_RUNNING, INIT_DONE };
static _Atomic int init_state;
static uintptr_t init_thread;

bool malloc_initialized(void) { return atomic_load_explicit(&init_state, memory_order_acquire) == INIT_DONE; }

NOINLINE static bool malloc_init_slow(void) {
  int expected = INIT_NONE;
  if (!atomic_compare_exchange_strong(&init_state, &expected, INIT_RUNNING)) {
    if (init_thread == thread_marker()) return false; /* recursion: nothing may allocate here */
    while (atomic_load(&init_state) != INIT_DONE) sched_yield();
    return true;
  }
  init_thread = thread_marker();
  if (os_page_size() != PAGE) fatal("unsupported page size (tessera needs 4 KiB pages)");
  options_init(); /* first: slab_sizes shapes the size-class table */
  size_class_init();
  fastmap_boot();
  stats_boot();
  unsigned narenas = opt_narenas ? opt_narenas : os_ncpus();
  if (!arenas_init(narenas) || !tcache_boot()) fatal("out of memory during initialisation");
  atomic_store(&init_state, INIT_DONE);
  fork_boot(); /* pthread_atfork may allocate: only now that malloc works */
  return true;
}

static inline bool malloc_init(void) {
  return likely(atomic_load_explicit(&init_state, memory_order_acquire) == INIT_DONE) ||
         malloc_init_slow();
}

/* Set once the library's constructor has run: libc is fully up, so threads may be
 * started (the first allocations can come from the dynamic loader, before that). */
static _Atomic bool constructed;

/* Initialises tessera even in programs that never allocate, so that option warnings and
 * stats_print work everywhere, and starts the background thread if asked for. */
__attribute__((constructor)) static void tessera_constructor(void) {
  malloc_init();
  atomic_store(&constructed, true);
  background_maybe_start();
}

/* ---- slow paths ---- */

/* Bytes this thread allocated and freed outside its cache bins (the bins count their
 * own blocks): thread.allocated and thread.deallocated add the two. */
static __thread uint64_t tls_direct_allocated __attribute__((tls_model("initial-exec")));
static __thread uint64_t tls_direct_deallocated __attribute__((tls_model("initial-exec")));

void thread_direct_counters(uint64_t *allocated, uint64_t *deallocated) {
  *allocated = tls_direct_allocated;
  *deallocated = tls_direct_deallocated;
}

/* Debug fills (junk:true, zero:true). The thread caches are off when either is set, so
 * every block passes through here on its way out and back. */
#define JUNK_ALLOC 0xa5
#define JUNK_FREE 0x5a

static void *counted(void *p, size_t usable) {
  if (p == NULL) return NULL;
  tls_direct_allocated += usable;
  if (unlikely(opt_zero)) memset(p, 0, usable);
  else if (unlikely(opt_junk)) memset(p, JUNK_ALLOC, usable);
  return p;
}

/* For blocks that must read as zero (calloc): counted, never junk-filled. */
static void *counted_zeroed(void *p, size_t usable) {
  if (p != NULL) tls_direct_allocated += usable;
  return p;
}

static void *alloc_cached_class(tcache_t *tc, unsigned c) {
  if (tc != NULL && tcache_bin(tc, c)->capacity > 0) {
    cache_bin_t *b = tcache_bin(tc, c);
    if (b->head != b->slots + b->capacity) { /* refills need an empty bin: pop first */
      b->nmalloc++;
      return *b->head++;
    }
    return tcache_alloc_refill(tc, c);
  }
  arena_t *a = tc != NULL ? tc->arena : thread_arena();
  if (c >= NSMALL) return counted(arena_malloc_large(a, class_infos[c].size, PAGE, false), class_infos[c].size);
  return counted(bin_alloc_one(a, c), class_infos[c].size);
}

NOINLINE static void *malloc_slow(size_t size) {
  if (unlikely(!malloc_init())) return NULL;
  if (unlikely(size > (size_t)PTRDIFF_MAX)) {
    errno = ENOMEM;
    return NULL;
  }
  if (unlikely(opt_background_thread && background_state == BG_NONE && constructed)) background_maybe_start();
  if (unlikely(background_requested && constructed)) background_start_requested();
  tcache_t *tc = tcache_get();
  void *p;
  if (size <= LOOKUP_MAX) {
    unsigned c = size_to_class(size);
    p = alloc_cached_class(tc, c);
  } else {
    p = counted(arena_malloc_large(tc != NULL ? tc->arena : thread_arena(), size, PAGE, false),
                large_usable_size(size));
  }
  if (unlikely(p == NULL)) errno = ENOMEM;
  return p;
}

/* Frees the block p of class c (CODE_LARGE, like every class >= NSMALL, is a large
 * block: its size is the extent's) without a thread cache. */
static void free_extent_block(extent_t *e, unsigned c, void *p) {
  if (unlikely(opt_junk)) memset(p, JUNK_FREE, c < NSMALL ? class_infos[c].size : e->npages * PAGE);
  if (c < NSMALL) {
    tls_direct_deallocated += class_infos[c].size;
    arena_free_small(e, p);
  } else {
    tls_direct_deallocated += e->npages * PAGE;
    arena_free_large(e->arena, e);
  }
}

/* Finds the block p starts; aborts naming func if p is not one tessera handed out. */
static extent_t *lookup_block(const void *p, const char *func, unsigned *class_out) {
  uintptr_t a = (uintptr_t)p;
  pm_entry_t e = pagemap_get(a);
  extent_t *ext = pm_extent(e);
  unsigned code = pm_code(e);
  if (code == 0) {
    /* The first page of a free extent: most likely a large block freed before. */
    if (ext != NULL && ext->addr == a) fatal_pointer(func, "double free", p);
    fatal_pointer(func, "invalid pointer", p);
  }
  if (code - 1 < NCACHED_MAX) {
    unsigned c = code - 1;
    if (!class_offset_is_region_start(c, pm_offset(e, a))) fatal_pointer(func, "invalid pointer", p);
    *class_out = c;
    return ext;
  }
  if (ext->state != EXTENT_LARGE || ext->addr != a) fatal_pointer(func, "invalid pointer", p);
  *class_out = CODE_LARGE;
  return ext;
}

NOINLINE static void free_slow(void *p) {
  if (p == NULL) return;
  unsigned c;
  extent_t *e = lookup_block(p, "free()", &c);
  /* Every region of the slab free, p's too: freed before (the slab may sit in its arena's
   * stash, off the free map, which is how such a free gets here). */
  if (c < NSMALL && e->nfree == e->nregs) fatal_pointer("free()", "double free", p);
  tcache_t *tc = tls_tcache;
  if (tc == &tcache_empty && tls_thread_state == THREAD_NEW) {
    /* A thread that frees before it allocates (a consumer) still gets a cache, so its
     * frees go back to their arenas in batches. But this first block, another thread's
     * (typically the argument its creator handed it), goes straight home: cached, it
     * would be the thread's first malloc of that size, and two threads given
     * neighbouring blocks would then write one cache line ("passive" false sharing,
     * Hoard's cache-scratch). */
    if (tcache_get() != NULL) {
      free_extent_block(e, c, p);
      return;
    }
  }
  if (c < NCACHED_MAX && tcache_bin(tc, c)->capacity > 0) {
    /* Here when the bin was full, when p was on top of it already, or when the free
     * map is off (fastmap.h). */
    if (*tcache_bin(tc, c)->head == p) fatal_pointer("free()", "double free", p);
    tcache_free_slow(tc, c, p);
    return;
  }
  free_extent_block(e, c, p);
  if (unlikely(background_requested && constructed)) background_start_requested();
}

/* ---- fast paths ---- */

EXPORT void *malloc(size_t size) {
  tcache_t *tc = tls_tcache;
  if (likely(size <= LOOKUP_MAX)) {
    cache_bin_t *b = (cache_bin_t *)((char *)tc + tcache_bin_offset_of_size[(size + 15) >> 4]);
    void **head = b->head;
    if (likely((uint16_t)(uintptr_t)head != b->low_empty)) {
      b->head = head + 1;
      b->nmalloc++;
      return *head;
    }
  }
  return malloc_slow(size);
}

EXPORT void free(void *p) {
  uintptr_t a = (uintptr_t)p;
  const fastmap_entry_t *e = fastmap_lookup(a);
  /* bin offset 0 (no cached block on this page) is bins[0], which never caches. */
  cache_bin_t *b = (cache_bin_t *)((char *)tls_tcache + e->bin);
  void **head = b->head;
  /* p must start a region, the bin must have room, and p must not be the block we were
   * just given back (*head is the NULL sentinel when the bin is empty). */
  if (likely(magic_divides(b->region_magic, fastmap_block_offset(e, a)) &&
             (uint16_t)(uintptr_t)head != b->low_full && *head != p)) {
    b->head = head - 1;
    head[-1] = p;
    return;
  }
  free_slow(p);
}

/* ---- explicit-arena allocation (mallocx and friends, through ctl.c) ---- */

void *control_alloc(int arena_index, size_t size, size_t align, bool zero, bool use_tcache) {
  if (!malloc_init()) return NULL;
  if (arena_index < 0 && use_tcache) {
    void *p = align > QUANTUM ? tessera_aligned_internal(align, size) : malloc(size);
    if (p != NULL && zero) memset(p, 0, tessera_usable_size_internal(p, "mallocx()"));
    return p;
  }
  arena_t *a = arena_index < 0 ? thread_arena() : control_arena((unsigned)arena_index);
  if (a == NULL || size > (size_t)PTRDIFF_MAX) return NULL;
  if (align < QUANTUM) align = QUANTUM;
  size_t rounded = (size + align - 1) & ~(align - 1);
  if (rounded == 0) rounded = QUANTUM;
  if (align <= PAGE && rounded <= SMALL_MAX) {
    unsigned c = size_to_class(rounded);
    void *p = bin_alloc_one(a, c);
    if (p == NULL) return NULL;
    if (zero) memset(p, 0, class_infos[c].size);
    return counted(p, class_infos[c].size);
  }
  size_t large_size = size <= SMALL_MAX ? SMALL_MAX + 1 : size;
  return counted(arena_malloc_large(a, large_size, align < PAGE ? PAGE : align, zero), large_usable_size(large_size));
}

size_t control_resize_in_place(void *p, size_t size, size_t extra, bool zero) {
  unsigned c;
  extent_t *e = lookup_block(p, "xallocx()", &c);
  if (c < NSMALL) return class_infos[c].size; /* a region cannot change size */
  size_t old_usable = e->npages * PAGE;
  size_t want = size > SIZE_MAX - extra ? SIZE_MAX : size + extra;
  /* As jemalloc: a large block resizes in place only to large sizes (a small size would
   * need a slab region, so the block stays as it is). */
  size_t candidates[2] = {want > SMALL_MAX ? large_usable_size(want) : 0,
                          size > SMALL_MAX ? large_usable_size(size) : 0};
  for (int i = 0; i < 2; i++) {
    size_t usable = candidates[i];
    if (usable == 0 || usable == old_usable) continue;
    if (usable > old_usable && usable < size) continue;
    if (arena_resize_large_in_place(e->arena, e, usable)) {
      tls_direct_allocated += usable;
      tls_direct_deallocated += old_usable;
      if (zero && usable > old_usable) memset((char *)p + old_usable, 0, usable - old_usable);
      return usable;
    }
  }
  return old_usable;
}

void control_free(void *p, bool use_tcache) {
  if (use_tcache || p == NULL) {
    free(p);
    return;
  }
  unsigned c;
  extent_t *e = lookup_block(p, "dallocx()", &c);
  free_extent_block(e, c, p);
}

arena_t *control_arena(unsigned index) {
  if (index >= arenas_count()) return NULL;
  return index < narenas_limit ? arena_get(index) : arenas[index];
}

unsigned control_narenas(void) { return arenas_count(); }

int control_arena_create(unsigned *index) {
  if (!malloc_init()) return EAGAIN;
  arena_t *a = arena_create();
  if (a == NULL) return EAGAIN;
  *index = a->index;
  return 0;
}

/* ---- the rest of the family ---- */

void *tessera_malloc_internal(size_t size) { return malloc(size); }
void tessera_free_internal(void *p) { free(p); }

size_t tessera_usable_size_internal(const void *p, const char *func) {
  if (p == NULL) return 0;
  unsigned c;
  extent_t *e = lookup_block(p, func, &c);
  return c == CODE_LARGE ? e->npages * PAGE : class_infos[c].size;
}

void tessera_free_sized_internal(void *p, size_t size, const char *func) {
  if (p == NULL) return;
  /* The claimed size must fit the block (hardened_malloc checks the same). */
  if (unlikely(size > tessera_usable_size_internal(p, func))) fatal_pointer(func, "size larger than the block", p);
  free(p);
}

EXPORT void *calloc(size_t n, size_t size) {
  size_t total;
  if (unlikely(__builtin_mul_overflow(n, size, &total) || total > (size_t)PTRDIFF_MAX)) {
    errno = ENOMEM;
    return NULL;
  }
  if (total > TCACHE_MAX_LIMIT) {
    if (!malloc_init()) return NULL;
    tcache_t *tc = tcache_get();
    void *p = counted_zeroed(arena_malloc_large(tc != NULL ? tc->arena : thread_arena(), total, PAGE, true),
                             large_usable_size(total));
    if (p == NULL) errno = ENOMEM;
    return p;
  }
  void *p = malloc(total);
  if (likely(p != NULL)) memset(p, 0, total);
  return p;
}

void *tessera_aligned_internal(size_t align, size_t size) {
  if (align <= QUANTUM) return malloc(size);
  if (unlikely(size > (size_t)PTRDIFF_MAX || align > ((size_t)1 << 62))) {
    errno = ENOMEM;
    return NULL;
  }
  if (align <= PAGE) {
    /* A class whose size is a multiple of align has every region aligned (slabs are
     * page aligned); rounding the size up to align always lands on such a class. */
    size_t rounded = (size + align - 1) & ~(align - 1);
    if (rounded == 0) rounded = align;
    if (rounded <= LOOKUP_MAX) return malloc(rounded);
  }
  if (!malloc_init()) return NULL;
  tcache_t *tc = tcache_get();
  /* Large blocks start at 16 KiB: smaller page runs would collide with the slab classes'
   * page-map codes. */
  size_t large_size = size <= SMALL_MAX ? SMALL_MAX + 1 : size;
  void *p = counted(arena_malloc_large(tc != NULL ? tc->arena : thread_arena(), large_size,
                                       align < PAGE ? PAGE : align, false),
                    large_usable_size(large_size));
  if (p == NULL) errno = ENOMEM;
  return p;
}

static bool power_of_two(size_t x) { return x != 0 && (x & (x - 1)) == 0; }

EXPORT int posix_memalign(void **out, size_t align, size_t size) {
  if (!power_of_two(align) || align % sizeof(void *) != 0) return EINVAL;
  int saved = errno;
  void *p = tessera_aligned_internal(align, size);
  errno = saved;
  if (p == NULL) return ENOMEM;
  *out = p;
  return 0;
}

EXPORT void *aligned_alloc(size_t align, size_t size) {
  if (!power_of_two(align)) {
    errno = EINVAL;
    return NULL;
  }
  return tessera_aligned_internal(align, size);
}

EXPORT void *memalign(size_t align, size_t size) {
  /* glibc: a non-power-of-two alignment is rounded up to the next power of two. */
  if (align > ((size_t)1 << 62)) {
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

EXPORT void *valloc(size_t size) { return tessera_aligned_internal(PAGE, size); }

EXPORT void *pvalloc(size_t size) {
  if (size > SIZE_MAX - PAGE_MASK) {
    errno = ENOMEM;
    return NULL;
  }
  size_t rounded = (size + PAGE_MASK) & ~PAGE_MASK;
  return tessera_aligned_internal(PAGE, rounded ? rounded : PAGE);
}

EXPORT void *realloc(void *p, size_t size) {
  if (p == NULL) return malloc(size);
  if (size == 0) { /* glibc's behaviour: free and return NULL */
    free(p);
    return NULL;
  }
  /* A block of a cached class that already fits (a string growing a byte at a time):
   * answered from the free map, like free's fast path, without the page-map walk. */
  const fastmap_entry_t *fe = fastmap_lookup((uintptr_t)p);
  if (fe->bin != 0 && size <= LOOKUP_MAX) {
    unsigned code = fe->bin / (unsigned)sizeof(cache_bin_t);
    if (class_of_lookup[(size + 15) >> 4] == code - 1 &&
        magic_divides(class_infos[code - 1].magic, fastmap_block_offset(fe, (uintptr_t)p)))
      return p;
  }
  unsigned c;
  extent_t *e = lookup_block(p, "realloc()", &c);
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
    if (new_usable != 0 && arena_resize_large_in_place(e->arena, e, new_usable)) {
      tls_direct_allocated += new_usable;
      tls_direct_deallocated += old_usable;
      return p;
    }
  }
  void *q = malloc(size);
  if (q == NULL) return NULL; /* errno is ENOMEM; p is untouched */
  memcpy(q, p, size < old_usable ? size : old_usable);
  free(p);
  return q;
}

EXPORT void *reallocarray(void *p, size_t n, size_t size) {
  size_t total;
  if (__builtin_mul_overflow(n, size, &total)) {
    errno = ENOMEM;
    return NULL;
  }
  return realloc(p, total);
}

EXPORT size_t malloc_usable_size(void *p) { return tessera_usable_size_internal(p, "malloc_usable_size()"); }

EXPORT void free_sized(void *p, size_t size) { tessera_free_sized_internal(p, size, "free_sized()"); }

EXPORT void free_aligned_sized(void *p, size_t align, size_t size) {
  (void)align;
  tessera_free_sized_internal(p, size, "free_aligned_sized()");
}

EXPORT int malloc_trim(size_t pad) {
  (void)pad;
  if (!malloc_initialized()) return 0;
  tcache_t *tc = tls_tcache;
  if (tc != &tcache_empty) tcache_flush_all(tc);
  size_t released = 0;
  for (unsigned i = 0; i < arenas_count(); i++)
    if (arenas[i] != NULL) released += arena_purge(arenas[i], true);
  return released > 0;
}

/* glibc's internal names, for the rare program that calls them directly. */
void *__libc_malloc(size_t size);
void __libc_free(void *p);
void *__libc_calloc(size_t n, size_t size);
void *__libc_realloc(void *p, size_t size);
void *__libc_memalign(size_t align, size_t size);
void *__libc_valloc(size_t size);
void *__libc_pvalloc(size_t size);
int __posix_memalign(void **out, size_t align, size_t size);
EXPORT void *__libc_malloc(size_t size) { return malloc(size); }
EXPORT void __libc_free(void *p) { free(p); }
EXPORT void *__libc_calloc(size_t n, size_t size) { return calloc(n, size); }
EXPORT void *__libc_realloc(void *p, size_t size) { return realloc(p, size); }
EXPORT void *__libc_memalign(size_t align, size_t size) { return memalign(align, size); }
EXPORT void *__libc_valloc(size_t size) { return valloc(size); }
EXPORT void *__libc_pvalloc(size_t size) { return pvalloc(size); }
EXPORT int __posix_memalign(void **out, size_t align, size_t size) { return posix_memalign(out, align, size); }

EXPORT const char *tessera_version(void) { return TESSERA_VERSION_STRING; }
