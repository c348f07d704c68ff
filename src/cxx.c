/* SPDX-License-Identifier: MIT */
/*
 * C++ operator new and delete, every standard form, defined here so that C++ programs
 * reach tessera (and its sized free) directly. Written in C with the Itanium C++ ABI's
 * mangled names so the library needs no C++ runtime: the pieces of libstdc++ that a
 * failing operator new needs (the new-handler and throwing std::bad_alloc) are looked
 * up as weak symbols, present whenever the program is a C++ program.
 */
#include <dlfcn.h>
#include <stddef.h>

#include "tessera.h"

#include "fatal.h"
#include "frontend.h"
#include "got_patch.h"
#include "hardened.h"
#include "prof_hooks.h"
#include "tcache.h"

#define EXPORT TESSERA_EXPORT

typedef void (*new_handler_t)(void);
extern new_handler_t _ZSt15get_new_handlerv(void) __attribute__((weak)); /* std::get_new_handler() */
extern void _ZSt17__throw_bad_allocv(void) __attribute__((weak, noreturn)); /* std::__throw_bad_alloc() */

typedef void *nothrow_new_t(size_t size, const void *nt);
typedef void *nothrow_aligned_new_t(size_t size, size_t align, const void *nt);

/* A nothrow operator new whose allocation failed while a new-handler is installed: the
 * C++ runtime's own operator of that name (the definition after tessera's), which calls
 * the throwing operator (tessera's: its handler loop below) and turns the std::bad_alloc
 * a handler may throw into NULL, as [new.delete.single] requires; C cannot catch it.
 * *done is false if there is no such definition (a program linked statically with
 * tessera): the loop runs here, and a throwing handler's exception reaches the caller. */
static void *new_nothrow_by_runtime(const char *mangled, size_t align, size_t size, bool *done) {
  void *next = dlsym(RTLD_NEXT, mangled);
  *done = next != NULL;
  if (next == NULL) return NULL;
  static const char nt = 0; /* std::nothrow_t is empty: any address will do */
  if (align != 0) return ((nothrow_aligned_new_t *)next)(size, align, &nt);
  return ((nothrow_new_t *)next)(size, &nt);
}

/* The loop [new.delete.single] prescribes: call the new-handler until it succeeds or
 * there is none; then throw (or return NULL for the nothrow forms, which name their
 * mangled symbol in nothrow, NULL for the throwing ones). */
static void *new_failed(size_t align, size_t size, const char *nothrow) {
  for (bool first = true;; first = false) {
    new_handler_t handler = _ZSt15get_new_handlerv ? _ZSt15get_new_handlerv() : NULL;
    if (handler == NULL) break;
    if (nothrow != NULL && first) {
      bool done;
      void *q = new_nothrow_by_runtime(nothrow, align, size, &done);
      if (done) return q;
    }
    handler(); /* may throw */
    void *p = align ? tessera_aligned_internal(align, size) : tessera_malloc_internal(size);
    if (p != NULL) return p;
  }
  if (nothrow != NULL) return NULL;
  if (_ZSt17__throw_bad_allocv) _ZSt17__throw_bad_allocv();
  fatal("operator new: out of memory and no C++ runtime to throw std::bad_alloc");
}

/* operator new past the thread cache's pop: malloc's slow path, then the new-handler
 * loop. In the profiler's section: a tail call leaves no frame of the operator. */
NOINLINE PROF_API_ENTRY static void *new_slow(size_t size, const char *nothrow) {
  void *p = tessera_malloc_internal(size);
  if (__builtin_expect(p == NULL, 0)) return new_failed(0, size, nothrow);
  return p;
}

/* malloc's fast path inline (with prof:true or hardened:true the pop always misses:
 * their paths are the slow path's), so that new costs what malloc costs. */
static inline __attribute__((always_inline)) void *new_impl(size_t size, const char *nothrow) {
  void *p = tcache_pop_size(size);
  if (__builtin_expect(p != NULL, 1)) return p;
  return new_slow(size, nothrow);
}

static inline void *new_aligned_impl(size_t size, size_t align, const char *nothrow) {
  void *p = tessera_aligned_internal(align, size);
  if (__builtin_expect(p == NULL, 0)) return new_failed(align, size, nothrow);
  return p;
}

/* The mangled names, declared so each definition below has a prototype. */
void *_Znwm(size_t size);
void *_Znam(size_t size);
void *_ZnwmRKSt9nothrow_t(size_t size, const void *nt);
void *_ZnamRKSt9nothrow_t(size_t size, const void *nt);
void *_ZnwmSt11align_val_t(size_t size, size_t align);
void *_ZnamSt11align_val_t(size_t size, size_t align);
void *_ZnwmSt11align_val_tRKSt9nothrow_t(size_t size, size_t align, const void *nt);
void *_ZnamSt11align_val_tRKSt9nothrow_t(size_t size, size_t align, const void *nt);
void _ZdlPv(void *p);
void _ZdaPv(void *p);
void _ZdlPvm(void *p, size_t size);
void _ZdaPvm(void *p, size_t size);
void _ZdlPvRKSt9nothrow_t(void *p, const void *nt);
void _ZdaPvRKSt9nothrow_t(void *p, const void *nt);
void _ZdlPvSt11align_val_t(void *p, size_t align);
void _ZdaPvSt11align_val_t(void *p, size_t align);
void _ZdlPvmSt11align_val_t(void *p, size_t size, size_t align);
void _ZdaPvmSt11align_val_t(void *p, size_t size, size_t align);
void _ZdlPvSt11align_val_tRKSt9nothrow_t(void *p, size_t align, const void *nt);
void _ZdaPvSt11align_val_tRKSt9nothrow_t(void *p, size_t align, const void *nt);

/* std::nothrow_t and std::align_val_t are passed as a reference and a size_t. */
EXPORT void *_Znwm(size_t size) { return new_impl(size, NULL); }
EXPORT void *_Znam(size_t size) { return new_impl(size, NULL); }
EXPORT void *_ZnwmRKSt9nothrow_t(size_t size, const void *nt) { (void)nt; return new_impl(size, "_ZnwmRKSt9nothrow_t"); }
EXPORT void *_ZnamRKSt9nothrow_t(size_t size, const void *nt) { (void)nt; return new_impl(size, "_ZnamRKSt9nothrow_t"); }
EXPORT void *_ZnwmSt11align_val_t(size_t size, size_t align) { return new_aligned_impl(size, align, NULL); }
EXPORT void *_ZnamSt11align_val_t(size_t size, size_t align) { return new_aligned_impl(size, align, NULL); }
EXPORT void *_ZnwmSt11align_val_tRKSt9nothrow_t(size_t size, size_t align, const void *nt) {
  (void)nt;
  return new_aligned_impl(size, align, "_ZnwmSt11align_val_tRKSt9nothrow_t");
}
EXPORT void *_ZnamSt11align_val_tRKSt9nothrow_t(size_t size, size_t align, const void *nt) {
  (void)nt;
  return new_aligned_impl(size, align, "_ZnamSt11align_val_tRKSt9nothrow_t");
}

EXPORT void _ZdlPv(void *p) { tessera_free_internal(p); }
EXPORT void _ZdaPv(void *p) { tessera_free_internal(p); }
EXPORT void _ZdlPvm(void *p, size_t size) { tessera_free_sized_internal(p, size, "operator delete()"); }
EXPORT void _ZdaPvm(void *p, size_t size) { tessera_free_sized_internal(p, size, "operator delete[]()"); }
EXPORT void _ZdlPvRKSt9nothrow_t(void *p, const void *nt) { (void)nt; tessera_free_internal(p); }
EXPORT void _ZdaPvRKSt9nothrow_t(void *p, const void *nt) { (void)nt; tessera_free_internal(p); }
EXPORT void _ZdlPvSt11align_val_t(void *p, size_t align) { (void)align; tessera_free_internal(p); }
EXPORT void _ZdaPvSt11align_val_t(void *p, size_t align) { (void)align; tessera_free_internal(p); }
EXPORT void _ZdlPvmSt11align_val_t(void *p, size_t size, size_t align) {
  tessera_free_aligned_sized_internal(p, align, size, "operator delete()");
}
EXPORT void _ZdaPvmSt11align_val_t(void *p, size_t size, size_t align) {
  tessera_free_aligned_sized_internal(p, align, size, "operator delete[]()");
}
EXPORT void _ZdlPvSt11align_val_tRKSt9nothrow_t(void *p, size_t align, const void *nt) {
  (void)align;
  (void)nt;
  tessera_free_internal(p);
}
EXPORT void _ZdaPvSt11align_val_tRKSt9nothrow_t(void *p, size_t align, const void *nt) {
  (void)align;
  (void)nt;
  tessera_free_internal(p);
}

/* hardened:true: operator new's and new[]'s entry (malloc's hardened path), and the sized
 * deletes' (the size checked against the block's class first). delete and delete[]
 * without a size are free's hardened path itself. */
static void *new_hardened(size_t size) {
  void *p = malloc_hardened(size);
  if (__builtin_expect(p == NULL, 0)) return new_failed(0, size, NULL);
  return p;
}
static void delete_sized_hardened(void *p, size_t size) { free_sized_hardened(p, size, "operator delete()"); }
static void delete_array_sized_hardened(void *p, size_t size) { free_sized_hardened(p, size, "operator delete[]()"); }

static void cxx_hardened_entries_patch(void) {
  got_patch("_Znwm", (void *)_Znwm, (void *)new_hardened);
  got_patch("_Znam", (void *)_Znam, (void *)new_hardened);
  got_patch("_ZdlPv", (void *)_ZdlPv, (void *)free_hardened_path);
  got_patch("_ZdaPv", (void *)_ZdaPv, (void *)free_hardened_path);
  got_patch("_ZdlPvm", (void *)_ZdlPvm, (void *)delete_sized_hardened);
  got_patch("_ZdaPvm", (void *)_ZdaPvm, (void *)delete_array_sized_hardened);
}

/* Run when the library is loaded: hardened mode's trigger (alloc.c) may call it. */
__attribute__((constructor)) static void cxx_hardened_entries_register(void) { hardened_cxx_entries_patch = cxx_hardened_entries_patch; }
