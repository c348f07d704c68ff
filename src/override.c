/* SPDX-License-Identifier: MIT */
/*
 * glibc's internal names for the malloc family, for the rare program (or library) that
 * calls them directly, and tessera_version.
 */
#include "tessera.h"

#include <malloc.h>
#include <stdlib.h>

void *__libc_malloc(size_t size);
void __libc_free(void *p);
void *__libc_calloc(size_t n, size_t size);
void *__libc_realloc(void *p, size_t size);
void *__libc_memalign(size_t align, size_t size);
void *__libc_valloc(size_t size);
void *__libc_pvalloc(size_t size);
int __posix_memalign(void **out, size_t align, size_t size);
TESSERA_EXPORT void *__libc_malloc(size_t size) { return malloc(size); }
TESSERA_EXPORT void __libc_free(void *p) { free(p); }
TESSERA_EXPORT void *__libc_calloc(size_t n, size_t size) { return calloc(n, size); }
TESSERA_EXPORT void *__libc_realloc(void *p, size_t size) { return realloc(p, size); }
TESSERA_EXPORT void *__libc_memalign(size_t align, size_t size) { return memalign(align, size); }
TESSERA_EXPORT void *__libc_valloc(size_t size) { return valloc(size); }
TESSERA_EXPORT void *__libc_pvalloc(size_t size) { return pvalloc(size); }
TESSERA_EXPORT int __posix_memalign(void **out, size_t align, size_t size) { return posix_memalign(out, align, size); }

TESSERA_EXPORT const char *tessera_version(void) { return TESSERA_VERSION_STRING; }
