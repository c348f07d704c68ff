/* SPDX-License-Identifier: MIT */
/*
 * tessera: a general-purpose malloc(3) replacement.
 *
 * Linking with -ltessera (or starting a program with LD_PRELOAD=libtessera.so)
 * replaces the whole malloc family: malloc, free, calloc, realloc, reallocarray,
 * posix_memalign, aligned_alloc, memalign, valloc, pvalloc, malloc_usable_size,
 * free_sized, free_aligned_sized, malloc_trim, mallinfo, mallinfo2, mallopt,
 * malloc_stats, malloc_info, and C++ operator new/delete in every standard form.
 * Those keep their usual declarations from <stdlib.h> and <malloc.h>.
 *
 * This header declares what tessera adds on top of them.
 */
#ifndef TESSERA_H
#define TESSERA_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Declaration macros go before a declaration, attribute macros after it. */
#if defined(TESSERA_BUILDING)
#define TESSERA_EXPORT __attribute__((visibility("default")))
#else
#define TESSERA_EXPORT
#endif
#define TESSERA_NODISCARD __attribute__((warn_unused_result))
#define TESSERA_ATTR_MALLOC __attribute__((malloc))
#define TESSERA_ATTR_ALLOC_SIZE(n) __attribute__((alloc_size(n)))

#define TESSERA_VERSION_MAJOR 0
#define TESSERA_VERSION_MINOR 1
#define TESSERA_VERSION_PATCH 0

/* C23's sized deallocation (glibc 2.36 does not declare them yet). The size (and
 * alignment) must be those the block was requested with; tessera aborts when the size
 * is larger than the block. */
void free_sized(void *ptr, size_t size);
void free_aligned_sized(void *ptr, size_t alignment, size_t size);

/* The library's version, "MAJOR.MINOR.PATCH". */
TESSERA_EXPORT const char *tessera_version(void);

/*
 * Running out of memory. cb(arg, request, reason) is called when an allocation of
 * `request` bytes needs new memory and cannot have it: reason TESSERA_OOM_OS when the
 * OS refused a mapping (an address-space limit, RLIMIT_AS, or no memory), reason
 * TESSERA_OOM_LIMIT when the mapping would take tessera past its soft limit (option
 * `limit:<bytes>`). Before the call tessera has given back what it holds unused (empty
 * slabs, free pages, the address space of released ones) and released its memory
 * reserve (option `reserve:<bytes>`, kept mapped from start-up), so the callback has room
 * to run; it may free memory (drop a cache) and may allocate. After it returns the
 * allocation is tried once more; if that fails too, it returns NULL with errno ENOMEM.
 * The callback is called with no tessera lock held, at most once per failing call, and
 * never again from inside itself (an allocation that fails inside it just fails). The
 * reserve is mapped again once memory is no longer short. cb NULL removes it.
 */
#define TESSERA_OOM_OS 1
#define TESSERA_OOM_LIMIT 2
typedef void tessera_oom_cb(void *arg, size_t request, int reason);
TESSERA_EXPORT void tessera_set_oom_callback(tessera_oom_cb *cb, void *arg);

/*
 * Writes tessera's statistics through write_cb (or to stderr when write_cb is NULL),
 * in pieces of text that each end at a line boundary. opts is NULL or a string of
 * option letters: 'J' prints JSON instead of text.
 */
typedef void tessera_write_cb(void *cbopaque, const char *text);
TESSERA_EXPORT void tessera_stats_print(tessera_write_cb *write_cb, void *cbopaque,
                                        const char *opts);

/* Writes the size-class table (class, size, slab size, regions per slab, waste) as text. */
TESSERA_EXPORT void tessera_print_classes(tessera_write_cb *write_cb, void *cbopaque);

/* A snapshot of the global counters, in bytes (see docs/design.md, "Counters"). */
typedef struct tessera_counters {
  size_t allocated; /* bytes in blocks handed to the program (usable sizes) */
  size_t active;    /* bytes in pages that hold at least one live block or a cached one */
  size_t metadata;  /* bytes the allocator uses for its own bookkeeping */
  size_t resident;  /* active + dirty + metadata: what the allocator keeps in RAM */
  size_t mapped;    /* bytes of address space mapped from the OS and not returned */
  size_t retained;  /* mapped bytes whose pages have been given back to the OS */
  size_t dirty;     /* free pages still resident, kept for reuse */
} tessera_counters;
TESSERA_EXPORT void tessera_get_counters(tessera_counters *out);

/*
 * The control interface (docs/ctl.md): reads and writes the value called name. To read,
 * pass a buffer in oldp and its size in *oldlenp; to write, the new value in newp and
 * its size in newlen; NULL/0 otherwise. Returns 0, or as jemalloc's mallctl: ENOENT
 * (unknown name), EINVAL (wrong size), EPERM (read-only or void value), EAGAIN (out of
 * memory), EFAULT (the action failed). Statistics are a snapshot taken when "epoch" is
 * written.
 */
TESSERA_EXPORT int tessera_ctl(const char *name, void *oldp, size_t *oldlenp, void *newp,
                               size_t newlen);
/* Translates name into a MIB (at most *miblenp components; *miblenp gets the count) for
 * repeated queries with tessera_ctl_bymib; index components may then be changed. */
TESSERA_EXPORT int tessera_ctl_nametomib(const char *name, size_t *mibp, size_t *miblenp);
TESSERA_EXPORT int tessera_ctl_bymib(const size_t *mib, size_t miblen, void *oldp,
                                     size_t *oldlenp, void *newp, size_t newlen);
/* The index that means "every arena" in arena.<i>.* and stats.arenas.<i>.* names. */
#define TESSERA_ARENAS_ALL 4096

/* Flags of the jemalloc-style allocation calls (mallocx, rallocx, ...), encoded as in
 * jemalloc: low 6 bits lg(alignment), 0x40 zero, bits 8..19 thread cache, 20.. arena + 1. */
#define TESSERA_ALIGN_LG(la) ((int)(la))
#define TESSERA_ALIGN(a) ((int)(__builtin_ctzll((unsigned long long)(a))))
#define TESSERA_ZERO ((int)0x40)
#define TESSERA_TCACHE_NONE ((int)(1 << 8))
#define TESSERA_ARENA(a) ((int)(((unsigned)(a) + 1) << 20))

/*
 * jemalloc's non-standard API, with jemalloc's names and semantics (unless tessera was
 * built with TESSERA_JEMALLOC_COMPAT=OFF), so programs written against it run
 * unchanged. Define TESSERA_NO_JEMALLOC_API before including this header to leave these
 * declarations out (e.g. next to <jemalloc/jemalloc.h>).
 */
#ifndef TESSERA_NO_JEMALLOC_API
#ifndef MALLOCX_ZERO
#define MALLOCX_LG_ALIGN(la) TESSERA_ALIGN_LG(la)
#define MALLOCX_ALIGN(a) TESSERA_ALIGN(a)
#define MALLOCX_ZERO TESSERA_ZERO
#define MALLOCX_TCACHE(tc) ((int)(((tc) + 2) << 8))
#define MALLOCX_TCACHE_NONE TESSERA_TCACHE_NONE
#define MALLOCX_ARENA(a) TESSERA_ARENA(a)
#define MALLCTL_ARENAS_ALL TESSERA_ARENAS_ALL
#endif
TESSERA_EXPORT void *mallocx(size_t size, int flags) TESSERA_ATTR_MALLOC TESSERA_ATTR_ALLOC_SIZE(1);
TESSERA_EXPORT void *rallocx(void *ptr, size_t size, int flags) TESSERA_ATTR_ALLOC_SIZE(2);
TESSERA_EXPORT size_t xallocx(void *ptr, size_t size, size_t extra, int flags);
TESSERA_EXPORT size_t sallocx(const void *ptr, int flags);
TESSERA_EXPORT void dallocx(void *ptr, int flags);
TESSERA_EXPORT void sdallocx(void *ptr, size_t size, int flags);
TESSERA_EXPORT size_t nallocx(size_t size, int flags);
TESSERA_EXPORT int mallctl(const char *name, void *oldp, size_t *oldlenp, void *newp, size_t newlen);
TESSERA_EXPORT int mallctlnametomib(const char *name, size_t *mibp, size_t *miblenp);
TESSERA_EXPORT int mallctlbymib(const size_t *mib, size_t miblen, void *oldp, size_t *oldlenp,
                                void *newp, size_t newlen);
TESSERA_EXPORT void malloc_stats_print(void (*write_cb)(void *, const char *), void *cbopaque,
                                       const char *opts);
#endif

#ifdef __cplusplus
}
#endif

#endif /* TESSERA_H */
