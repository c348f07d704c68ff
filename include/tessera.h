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

#ifdef __cplusplus
}
#endif

#endif /* TESSERA_H */
