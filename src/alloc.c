/* SPDX-License-Identifier: MIT */
/*
 * malloc and calloc. malloc's fast path pops a block from the thread cache (one table
 * load for the bin, one test, no lock) and clears its freed-block key (hardened_key.h);
 * everything else is in the noinline slow path. Every path that hands out a block of a
 * cached class clears the key, so that only a freed block ever holds it. With prof:true,
 * malloc and calloc have a second entry each, whose fast path counts down (below).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "tessera.h"

#include "arena.h"
#include "background.h"
#include "bin.h"
#include "config.h"
#include "exact_class.h"
#include "free_map.h"
#include "frontend.h"
#include "got_patch.h"
#include "hardened.h"
#include "hardened_bytes.h"
#include "hardened_key.h"
#include "init.h"
#include "large_cache.h"
#include "options.h"
#include "pagemap.h"
#include "prof_cache.h"
#include "prof_hooks.h"
#include "prof_slab.h"
#include "size_class.h"
#include "tcache.h"
#include "thread.h"

/* Debug fills (junk:true, zero:true). The thread caches are off when either is set, so
 * every block passes through here on its way out and back. */
#define JUNK_ALLOC 0xa5

void *alloc_counted_large(void *p, size_t usable, bool zeroed) {
  if (p == NULL || !zeroed) return alloc_counted(p, usable);
  tls_thread.allocated += usable; /* zeroed (no key): never junk-filled */
  return p;
}

void *alloc_counted(void *p, size_t usable) {
  if (p == NULL) return NULL;
  /* Every size: a large block may shrink in place (realloc) into a cached class, and
   * its second word, if the program never wrote it, must not hold a stale key. */
  block_clear_freed_key(p);
  tls_thread.allocated += usable;
  if (unlikely(opt_zero)) memset(p, 0, usable);
  else if (unlikely(opt_junk)) memset(p, JUNK_ALLOC, usable);
  return p;
}

/* prof:true and this allocation is the sampled one: a large extent of its own, marked
 * sampled (prof_hooks.h), counted, then recorded with its stack. */
PROF_API_ENTRY void *alloc_sampled_in(arena_t *a, size_t usize, size_t align, bool zero) {
  extent_t *e = prof_block_new(a, usize, align, zero); /* arena_malloc_large handles OOM */
  void *p = NULL;
  if (e != NULL && zero) {
    p = (void *)e->addr;
    tls_thread.allocated += e->npages * PAGE; /* zeroed (no key): never junk-filled */
  } else if (e != NULL) {
    p = alloc_counted((void *)e->addr, e->npages * PAGE);
  }
  prof_block_record(p, usize);
  return p;
}

PROF_API_ENTRY static void *alloc_sampled(size_t usize, size_t align, bool zero) {
  return alloc_sampled_in(NULL, usize, align, zero); }

/* A block of at least *usable bytes aligned to align from the calling thread's cache of
 * large blocks (zeroed if asked), its size in *usable, or NULL. */
static void *large_cached(tcache_t *tc, size_t *usable, size_t align, bool zero) {
  extent_t *e = large_cache_take(tc, *usable, align, zero);
  if (e == NULL) return NULL;
  *usable = e->npages * PAGE;
  return (void *)e->addr;
}

PROF_API_ENTRY void *alloc_large(size_t size, size_t align, bool zero) {
  if (unlikely(opt_prof) && prof_alloc_due(large_usable_size(size))) return alloc_sampled(large_usable_size(size), align, zero);
  tcache_t *tc = tcache_get();
  size_t usable = large_usable_size(size);
  void *p = large_cached(tc, &usable, align, zero);
  if (p == NULL) p = arena_malloc_large(tcache_large_arena(tc), size, align, zero);
  return alloc_counted_large(p, usable, zero);
}

/* A block of class c for a request of size bytes (0: not known; the size votes for an
 * exact class on refills: exact_class.h). */
static void *alloc_cached_class(tcache_t *tc, unsigned c, size_t size) {
  tessera_assert(c < NCACHED_MAX);
  if (unlikely(c >= NSTATIC_SMALL) && tc != NULL) tcache_bin_setup_exact(tc, c);
  if (tc != NULL && tcache_bin(tc, c)->capacity > 0) {
    cache_bin_t *b = tcache_bin(tc, c);
    if (b->head != b->slots + b->capacity) { /* refills need an empty bin: pop first */
      cache_bin_count_malloc(tc, b);
      return block_clear_freed_key(*b->head++);
    }
    exact_class_count_refill(tc, c, size);
    return block_clear_freed_key(tcache_alloc_refill(tc, c));
  }
  arena_t *a = current_arena(tc);
  /* No cache: the one path to a slab that does not meet the OOM handling of the cache
   * refill or of arena_malloc_large. */
  void *p = bin_alloc_one(a, c);
  if (unlikely(p == NULL) && arena_handle_oom(class_infos[c].size)) p = bin_alloc_one(a, c);
  return alloc_counted(p, class_infos[c].size);
}

/* tcache_get with its common case (the thread has its cache) inline here only: inlined
 * everywhere, it grew the text a small program touches past one 64 KiB window. */
static inline tcache_t *thread_cache(void) {
  return likely(tls_thread.tcache != &tcache_empty) ? tls_thread.tcache : tcache_get();
}

/* hardened:true (hardened.h): the block a request of m bytes (hardened_request) aligned
 * to align gets, its size (a guard page included, which arena_malloc_large adds) and
 * whether it has a guard page. */
COLD_TEXT static size_t hardened_block(size_t m, size_t align, bool *guarded) {
  size_t block = align <= PAGE && m <= LOOKUP_MAX ? class_infos[size_to_class(m)].size : large_usable_size(large_request(m));
  *guarded = hardened_has_guard(block);
  return *guarded ? block + PAGE : block;
}

COLD_TEXT size_t alloc_hardened_block_size(size_t n, size_t align) {
  size_t m = hardened_request(n, align);
  bool guarded = false;
  return m == 0 ? 0 : hardened_block(m, align, &guarded);
}

/* Every allocation of hardened mode: the block for n bytes and its trailer; a block up
 * to 32 KiB is checked to be unused since its last free (it is zero: hardened.h). With
 * the cold code (COLD_TEXT): only hardened mode runs it, which runs hardened.c's code,
 * placed there too, anyway. */
COLD_TEXT void *alloc_hardened(size_t n, size_t align, bool zero, const char *func) {
  size_t m = hardened_request(n, align);
  if (m == 0) return NULL;
  if (likely(align <= PAGE && m <= LOOKUP_MAX)) { /* a cached class: no guard page */
    unsigned c = size_to_class(m);
    tcache_t *tc = thread_cache();
    void *p = alloc_cached_class(tc, c, 0);
    if (p == NULL) return NULL;
    hardened_check_unused(p, class_infos[c].size, func);
    hardened_write_trailer(p, class_infos[c].size, n);
    return p;
  }
  bool guarded = false;
  size_t block = hardened_block(m, align, &guarded); /* sets guarded: a statement first */
  size_t region = hardened_region(block, guarded);
  void *p = guarded && align <= PAGE ? hardened_take_guarded((uint32_t)(block / PAGE), func) : NULL;
  if (p != NULL) p = alloc_counted(p, large_usable_size(large_request(m))); /* all zero */
  else p = alloc_large(large_request(m), align < PAGE ? PAGE : align, zero);
  if (p == NULL) return NULL;
  /* Up to 32 KiB, blocks are zeroed when freed, and must still be (larger ones are
   * pages given back, or fresh: alloc_large zeroes them if asked). */
  if (!guarded) hardened_check_unused(p, region, func);
  hardened_write_trailer(p, region, n);
  return p;
}

static void *alloc_any(size_t size) {
  tcache_t *tc = thread_cache();
  if (size <= LOOKUP_MAX) return alloc_cached_class(tc, size_to_class(size), size);
  size_t usable = large_usable_size(size);
  void *p = large_cached(tc, &usable, PAGE, false);
  if (p == NULL) p = arena_malloc_large(tcache_large_arena(tc), size, PAGE, false);
  return alloc_counted(p, usable);
}

/* prof:true and this allocation is its class's sampled one: a block of a sample slab
 * (prof_slab.h) for a class that has them, else from the cache like any other, marked
 * in place (prof_hooks.h); then recorded with its stack. */
PROF_API_ENTRY static void *alloc_sampled_cached(tcache_t *tc, unsigned c) {
  if (prof_slab_class(c)) {
    void *q = alloc_counted(prof_slab_alloc(current_arena(tc), c), class_infos[c].size);
    if (likely(q != NULL)) {
      prof_block_record_in_slab(q, class_infos[c].size);
      return q;
    }
    /* The OS refused a new slab: from the cache, marked in place (its OOM handling). */
  }
  void *p = alloc_cached_class(tc, c, 0);
  if (p != NULL) prof_block_record_in_place(p, class_infos[c].size);
  return p;
}

/* prof:true: every allocation prof_cache_pop did not serve (prof_cache.h): the bin's
 * countdown (else the thread's bytes) decides whether it is sampled. Inlined into malloc_profiled_slow, so that a
 * sampled stack starts in the function malloc_prof tail-calls: its caller is the
 * program's call site, and no allocator frame is unwound. */
static inline __attribute__((always_inline)) void *malloc_profiled_any(size_t size) {
  bool cached = size <= LOOKUP_MAX;
  unsigned c = cached ? size_to_class(size) : 0;
  tcache_t *tc = cached ? tcache_get() : NULL;
  void *p;
  if (tc != NULL && tcache_bin(tc, c)->capacity > 0) { /* the bin's own countdown */
    if (likely(!prof_bin_due(tc, c))) return alloc_any(size);
    if (unlikely(!prof_bin_armed(tc, c))) { /* the bin's first: its countdown starts */
      prof_bin_rearm(tc, c);
      return alloc_any(size);
    }
    if (prof_sample_wanted(&tls_thread.prof)) PROF_SAMPLE_FROM_HERE(p, alloc_sampled_cached(tc, c));
    else p = alloc_any(size);
    prof_bin_rearm(tc, c);
    return p;
  }
  /* Not from a bin (a large size, a thread without a cache): the thread's bytes. */
  size_t usize = cached ? class_infos[c].size : large_usable_size(size);
  if (likely(!prof_alloc_due(usize))) return alloc_any(size);
  PROF_SAMPLE_FROM_HERE(p, alloc_sampled(usize, PAGE, false));
  return p;
}

/* What malloc's slow paths check first: the allocator is up (false during its own boot),
 * the size possible (else false with ENOMEM), and the background thread started if it is
 * wanted. */
static inline bool malloc_admits(size_t size) {
  if (unlikely(!boot_ensure())) return false;
  if (unlikely(size > (size_t)PTRDIFF_MAX)) {
    errno = ENOMEM;
    return false;
  }
  if (atomic_load_explicit(&boot_constructed, memory_order_relaxed)) background_start_if_wanted();
  return true;
}

static void entries_patch(void);

/* prof:true, after prof_cache_pop: the checks malloc_slow makes, then the general path. */
NOINLINE PROF_API_ENTRY static void *malloc_profiled_slow(size_t size) {
  if (unlikely(!malloc_admits(size))) return NULL;
  entries_patch();
  void *p = malloc_profiled_any(size);
  if (unlikely(p == NULL)) errno = ENOMEM;
  return p;
}

/* prof:true (without hardened:true): every malloc of a caller left on the default entry
 * (got_patch.h), its fast path finding bins[0] empty. The thread cache's pop with the
 * countdown (no registers to save), else the rest. */
NOINLINE PROF_API_ENTRY static void *malloc_profiled(size_t size) {
  void *p = prof_cache_pop(size);
  if (likely(p != NULL)) return p;
  return malloc_profiled_slow(size);
}

static void hardened_entries_patch(void);

NOINLINE PROF_API_ENTRY static void *malloc_general(size_t size) {
  if (unlikely(!malloc_admits(size))) return NULL;
  if (unlikely(opt_hardened)) {
    hardened_entries_patch();
    void *q = alloc_hardened(size, QUANTUM, false, "malloc()");
    if (unlikely(q == NULL)) errno = ENOMEM;
    return q;
  }
  /* Every path below meets the OOM handling once (arena_handle_oom: the free map's
   * reservation given back, unused memory unmapped, the program's callback, a retry). */
  void *p = alloc_any(size);
  if (unlikely(p == NULL)) errno = ENOMEM;
  return p;
}

/* hardened:true: malloc_hardened's checks of block p (region bytes, for a request of
 * size) when it is above HARDENED_ZERO_INLINE_MAX or not all zero: out of line, so that
 * the common path makes no call and saves no registers. */
COLD_TEXT static void *malloc_hardened_checked(void *p, size_t region, size_t size) {
  hardened_check_unused(p, region, "malloc()");
  hardened_write_trailer(p, region, size);
  return p;
}

/* hardened:true: malloc's common case, a cached class popped from a thread cache that has
 * a block for it (the checks of alloc_hardened, without its layers); else the general
 * path (which refills the bin). Also hardened mode's entry: the callers' PLT slots of
 * malloc point here once the library is up (hardened_entries_patch). A thread without a
 * cache has tcache_empty, whose bins are all empty (zero), as is a bin that never
 * caches: one test for the three. Its common path makes no call (so it saves no
 * registers): a block above HARDENED_ZERO_INLINE_MAX or not all zero, or the secret not
 * drawn yet, is a tail call. */
NOINLINE PROF_API_ENTRY void *malloc_hardened(size_t size) {
  if (unlikely(size > LOOKUP_MAX - HARDENED_EXTRA)) return malloc_general(size);
  unsigned c = size_to_class(size + HARDENED_EXTRA);
  cache_bin_t *b = tcache_bin(tls_thread.tcache, c);
  void **head = b->head;
  if (unlikely((uint16_t)(uintptr_t)head == b->low_empty)) return malloc_general(size);
  b->head = head + 1;
  b->nmalloc_raw++; /* hardened mode: never a profiler's bias (prof is off) */
  void *p = *head;
  ((block_word_t *)p)[1] = 0; /* the freed-block key (a cached block is never NULL) */
  size_t region = class_infos[c].size;
  uint64_t secret = atomic_load_explicit(&hardened_secret, memory_order_relaxed);
  if (region > HARDENED_ZERO_INLINE_MAX || unlikely(secret == 0) || unlikely(!hardened_all_zero(p, region)))
    return malloc_hardened_checked(p, region, size);
  hardened_write_trailer_word(p, region, size, canary_word_of(secret, p));
  return p;
}

/* Hardened mode (hardened.h) and prof:true (prof_cache.h) send every call here; both
 * are set at boot only. Each path is a function of its own, so that this one is a few
 * tests and a jump. */
NOINLINE PROF_API_ENTRY static void *malloc_slow(size_t size) {
  if (unlikely(opt_hardened)) return malloc_hardened(size);
  if (unlikely(prof_mallocs_counted)) return malloc_profiled(size);
  if (size - (LOOKUP_MAX + 1) < LARGE_CACHE_MAX - LOOKUP_MAX) {
    void *p = large_cache_pop(tls_thread.tcache, size);
    if (p != NULL) return p;
  }
  return malloc_general(size);
}

/* The default entry's fast path: the thread cache's pop, else the slow path. */
static inline __attribute__((always_inline)) void *malloc_default_inline(size_t size) {
  void *p = tcache_pop_size(size);
  if (likely(p != NULL)) return p;
  return malloc_slow(size);
}

/* The profiling entry's fast path (prof:true): the thread cache's pop with the byte
 * countdown (prof_cache.h), else the general path with the countdown. */
static inline __attribute__((always_inline)) void *malloc_prof_inline(size_t size) {
  void *p = prof_cache_pop(size);
  if (likely(p != NULL)) return p;
  return malloc_profiled_slow(size);
}

/* malloc: the default entry. */
PROF_API_ENTRY static void *malloc_default(size_t size) { return malloc_default_inline(size); }
TESSERA_EXPORT void *malloc(size_t size) __attribute__((alias("malloc_default")));

/* With prof:true, the callers' PLT slots of malloc and calloc are pointed here after
 * boot (got_patch.h); a caller not rewritten reaches the default entry, whose slow path
 * counts down (prof_cache.h), so both are correct and only the cost differs. Reached
 * only with prof:true (patched only then), and prof is set at boot only. */
PROF_API_ENTRY static void *malloc_prof(size_t size) { return malloc_prof_inline(size); }

/* operator new's malloc (cxx.c): the default entry (with prof:true, the countdown on its
 * slow path). */
PROF_API_ENTRY void *tessera_malloc_internal(size_t size) { return malloc_default_inline(size); }

/* calloc through either entry's malloc (prof_entry is a constant: two functions). */
static inline __attribute__((always_inline)) void *calloc_with(size_t n, size_t size, bool prof_entry) {
  size_t total;
  if (unlikely(__builtin_mul_overflow(n, size, &total) || total > (size_t)PTRDIFF_MAX)) {
    errno = ENOMEM;
    return NULL;
  }
  if (total > TCACHE_MAX_LIMIT) {
    /* Large: fresh pages from the OS read as zero already, so no memset for them. */
    if (!boot_ensure()) return NULL;
    void *p = unlikely(opt_hardened) ? alloc_hardened(total, QUANTUM, true, "calloc()") : alloc_large(total, PAGE, true);
    if (p == NULL) errno = ENOMEM;
    return p;
  }
  void *p = prof_entry ? malloc_prof_inline(total) : malloc_default_inline(total);
  if (likely(p != NULL)) memset(p, 0, total);
  return p;
}

PROF_API_ENTRY static void *calloc_default(size_t n, size_t size) { return calloc_with(n, size, false); }
TESSERA_EXPORT void *calloc(size_t n, size_t size) __attribute__((alias("calloc_default")));
PROF_API_ENTRY static void *calloc_prof(size_t n, size_t size) { return calloc_with(n, size, true); }

/* Once, on the first general path with prof:true after the library's constructor ran
 * (libc is ready): the callers' slots pointed at the profiling entries. */
static _Atomic bool entries_patched;

static void entries_patch(void) {
  if (likely(atomic_load_explicit(&entries_patched, memory_order_relaxed))) return;
  if (!atomic_load_explicit(&boot_constructed, memory_order_acquire)) return;
  if (atomic_exchange(&entries_patched, true)) return;
  got_patch("malloc", (void *)malloc_default, (void *)malloc_prof);
  got_patch("calloc", (void *)calloc_default, (void *)calloc_prof);
}

/* hardened:true: calloc's entry (the callers' PLT slots of calloc point here). A block
 * hardened mode hands out is zero up to the request already (slab blocks are checked to
 * be, and large ones are asked zeroed): no memset. */
PROF_API_ENTRY static void *calloc_hardened(size_t n, size_t size) {
  size_t total;
  if (unlikely(__builtin_mul_overflow(n, size, &total) || total > (size_t)PTRDIFF_MAX)) {
    errno = ENOMEM;
    return NULL;
  }
  if (likely(total <= LOOKUP_MAX - HARDENED_EXTRA)) return malloc_hardened(total);
  void *p = alloc_hardened(total, QUANTUM, true, "calloc()");
  if (p == NULL) errno = ENOMEM;
  return p;
}

/* hardened:true, once, on the first general path after the library's constructor ran
 * (libc is ready): the callers' PLT slots of malloc and calloc pointed at hardened
 * mode's own paths (got_patch.h; free's: free.c), which then start with its first test
 * instead of the default fast path's miss and the slow path's dispatch. A caller not
 * rewritten (a function pointer, a library loaded later) keeps the default entries,
 * which reach the same paths through the slow paths. hardened is set at boot only. */
static _Atomic bool hardened_entries_patched;
/* hardened.h. Defined here rather than in hardened.c: cxx.c's constructor writes it in
 * every process, and here it shares a page with the variables every program writes
 * anyway (hardened.c's variables sit in pages a default process never touches). */
void (*hardened_cxx_entries_patch)(void);

static void hardened_entries_patch(void) {
  if (likely(atomic_load_explicit(&hardened_entries_patched, memory_order_relaxed))) return;
  if (!atomic_load_explicit(&boot_constructed, memory_order_acquire)) return;
  if (atomic_exchange(&hardened_entries_patched, true)) return;
  got_patch("malloc", (void *)malloc_default, (void *)malloc_hardened);
  got_patch("calloc", (void *)calloc_default, (void *)calloc_hardened);
  if (hardened_cxx_entries_patch != NULL) hardened_cxx_entries_patch();
}
