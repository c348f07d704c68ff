/* SPDX-License-Identifier: MIT */
/*
 * hardened.entry: which entries of malloc, calloc and free a caller reaches
 * (src/got_patch.h), and realloc's.
 *
 *   entry EXPECT LIB   allocates and frees blocks of many sizes (so that the library is
 *                      up and has taken its general path), then checks the program's
 *                      own PLT slots: with EXPECT "hardened", each of malloc, calloc,
 *                      realloc and free holds another address than the function's own (dlsym's: a
 *                      function pointer keeps it), an entry of hardened mode; with
 *                      "default", each holds the function's own address. Then the
 *                      library LIB, loaded now with dlopen, works through its own slots,
 *                      which must hold the functions' own addresses (the default
 *                      entries) in both cases; and blocks allocated through one entry
 *                      are freed through the other.
 */
#include "tt.h"

#include "plt_slot.h"

/* "default" (the slot holds the function's own address), "hardened" (another), "none". */
static const char *slot_state(const char *object, const char *symbol) {
  uintptr_t value = tt_plt_slot(object, symbol);
  if (value == 0) return "none";
  return value == (uintptr_t)dlsym(RTLD_DEFAULT, symbol) ? "default" : "hardened";
}

static void check_slots(const char *object, const char *expect) {
  const char *symbols[] = {"malloc", "calloc", "realloc", "free"};
  for (int i = 0; i < 4; i++) {
    const char *state = slot_state(object, symbols[i]);
    printf("%s %s: %s\n", object[0] ? object : "program", symbols[i], state);
    TT_CHECKF(strcmp(state, expect) == 0, "%s's slot of %s: %s, expected %s", object[0] ? object : "program",
              symbols[i], state, expect);
  }
}

/* Blocks from one entry freed through the other, both ways; calloc's blocks zero. */
static void cross_entries(void) {
  void *(*malloc_fn)(size_t) = (void *(*)(size_t))dlsym(RTLD_DEFAULT, "malloc");
  void *(*calloc_fn)(size_t, size_t) = (void *(*)(size_t, size_t))dlsym(RTLD_DEFAULT, "calloc");
  void *(*realloc_fn)(void *, size_t) = (void *(*)(void *, size_t))dlsym(RTLD_DEFAULT, "realloc");
  void (*free_fn)(void *) = (void (*)(void *))dlsym(RTLD_DEFAULT, "free");
  TT_CHECK(malloc_fn != NULL && calloc_fn != NULL && realloc_fn != NULL && free_fn != NULL);
  for (int round = 0; round < 3000; round++) {
    size_t size = 1 + (size_t)round * 13 % 5000;
    unsigned char *a = malloc(size), *b = malloc_fn(size), *c = calloc(1, size), *d = calloc_fn(size, 1);
    TT_CHECK(a != NULL && b != NULL && c != NULL && d != NULL);
    for (size_t k = 0; k < size; k++) TT_CHECK(c[k] == 0 && d[k] == 0);
    memset(a, 1, size), memset(b, 2, size), memset(c, 3, size), memset(d, 4, size);
    a = realloc_fn(a, size + 100), b = realloc(b, size + 100);
    TT_CHECK(a != NULL && b != NULL && a[size - 1] == 1 && b[size - 1] == 2);
    a = realloc(a, size / 2 + 1), b = realloc_fn(b, size / 2 + 1);
    TT_CHECK(a != NULL && b != NULL && a[size / 2] == 1 && b[size / 2] == 2);
    free_fn(a), free(b), free_fn(c), free(d);
  }
}

int main(int argc, char **argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: entry hardened|default LIB\n");
    return 2;
  }
  const char *expect = argv[1];
  for (size_t size = 1; size < 40000; size += size / 8 + 1) free(malloc(size));
  free(calloc(1, 64));
  free(realloc(realloc(NULL, 64), 1000));
  check_slots("", expect);
  cross_entries();
  void *lib = dlopen(argv[2], RTLD_NOW);
  int (*work)(void) = lib ? (int (*)(void))dlsym(lib, "entry_lib_work") : NULL;
  TT_CHECKF(work != NULL, "%s: %s", argv[2], dlerror());
  int r = work();
  TT_CHECKF(r == 0, "the library's blocks: failure %d", r);
  check_slots("entry_lib", "default");
  printf("ok\n");
  return 0;
}
