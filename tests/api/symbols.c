/* SPDX-License-Identifier: MIT */
/*
 * api.symbols: every function of the malloc family that glibc exports, and every form of
 * C++ operator new/delete, resolves to libtessera. A function tessera left out would fall
 * through to glibc, and a glibc block later freed by tessera crashes the program.
 */
#include "tt.h"

static const char *const c_names[] = {
    "malloc",         "free",           "calloc",      "realloc",
    "reallocarray",   "posix_memalign", "aligned_alloc", "memalign",
    "valloc",         "pvalloc",        "malloc_usable_size", "free_sized",
    "free_aligned_sized", "malloc_trim", "mallinfo",   "mallinfo2",
    "mallopt",        "malloc_stats",   "malloc_info", "tessera_version",
    "tessera_stats_print", "tessera_get_counters",
};

/* Itanium C++ ABI names for a 64-bit size_t. */
static const char *const cxx_names[] = {
    "_Znwm",                                 /* new(size_t) */
    "_Znam",                                 /* new[](size_t) */
    "_ZnwmRKSt9nothrow_t",                   /* new(size_t, nothrow) */
    "_ZnamRKSt9nothrow_t",                   /* new[](size_t, nothrow) */
    "_ZnwmSt11align_val_t",                  /* new(size_t, align) */
    "_ZnamSt11align_val_t",                  /* new[](size_t, align) */
    "_ZnwmSt11align_val_tRKSt9nothrow_t",    /* new(size_t, align, nothrow) */
    "_ZnamSt11align_val_tRKSt9nothrow_t",    /* new[](size_t, align, nothrow) */
    "_ZdlPv",                                /* delete(void*) */
    "_ZdaPv",                                /* delete[](void*) */
    "_ZdlPvm",                               /* delete(void*, size_t) */
    "_ZdaPvm",                               /* delete[](void*, size_t) */
    "_ZdlPvRKSt9nothrow_t",                  /* delete(void*, nothrow) */
    "_ZdaPvRKSt9nothrow_t",                  /* delete[](void*, nothrow) */
    "_ZdlPvSt11align_val_t",                 /* delete(void*, align) */
    "_ZdaPvSt11align_val_t",                 /* delete[](void*, align) */
    "_ZdlPvmSt11align_val_t",                /* delete(void*, size_t, align) */
    "_ZdaPvmSt11align_val_t",                /* delete[](void*, size_t, align) */
    "_ZdlPvSt11align_val_tRKSt9nothrow_t",   /* delete(void*, align, nothrow) */
    "_ZdaPvSt11align_val_tRKSt9nothrow_t",   /* delete[](void*, align, nothrow) */
};

static int check_names(const char *const *names, size_t count) {
  int failures = 0;
  for (size_t i = 0; i < count; i++) {
    void *sym = dlsym(RTLD_DEFAULT, names[i]);
    Dl_info info;
    if (sym == NULL) {
      fprintf(stderr, "FAIL: %s is not defined at all\n", names[i]);
      failures++;
    } else if (dladdr(sym, &info) == 0 || info.dli_fname == NULL ||
               strstr(info.dli_fname, "libtessera") == NULL) {
      fprintf(stderr, "FAIL: %s resolves to %s, not libtessera\n", names[i],
              info.dli_fname ? info.dli_fname : "?");
      failures++;
    }
  }
  return failures;
}

int main(void) {
  tt_require_tessera();
  int failures = check_names(c_names, sizeof c_names / sizeof c_names[0]);
  failures += check_names(cxx_names, sizeof cxx_names / sizeof cxx_names[0]);
  TT_CHECKF(failures == 0, "%d symbols do not resolve to libtessera", failures);
  printf("api.symbols: ok\n");
  return 0;
}
