/* SPDX-License-Identifier: MIT */
/*
 * Lending (src/bin.h): a class that needs a new slab takes the free regions of a larger,
 * sparse class of its arena instead. One case per process:
 *   lend      128-byte blocks, two in three freed, leave their class a third full; then
 *             64-byte requests get 128-byte regions, counted in the lender's nlent, and
 *             free and free_sized (with the requested size) take them back
 *   align     only classes whose regions are 16-byte aligned are sparse: 32-byte
 *             requests (aligned_alloc(32, ...) among them) borrow nothing, and every
 *             block is 32-byte aligned; then a sparse 96-byte class (32-byte aligned
 *             regions) lends to them, aligned too
 *   threads   two threads on one arena borrow from a sparse class and free half of
 *             their lent blocks on the other thread (free and free_sized): after every
 *             block is freed and both caches flushed, the lender's count of regions in
 *             use is back where it was (the debug build also checks every slab's bitmap)
 *   hardened  hardened:true (run with TESSERA_CONF): nothing is lent
 *   off       lending:false (run with TESSERA_CONF): nothing is lent
 */
#include "tt_ctl.h"

#include <malloc.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>

/* free_sized is C23: looked up, as the C library here may not declare it. */
static void free_sized_call(void *p, size_t size) {
  void (*f)(void *, size_t) = (void (*)(void *, size_t))dlsym(RTLD_DEFAULT, "free_sized");
  TT_CHECK(f != NULL);
  f(p, size);
}

static size_t bin_count(const char *field, size_t size) {
  char fmt[96];
  snprintf(fmt, sizeof(fmt), "stats.arenas.4096.bins.%%u.%s", field);
  tt_stats_refresh();
  return tt_ctl_size(fmt, tt_bin_of(size));
}

static uint64_t lent_by(size_t size) {
  char name[96];
  snprintf(name, sizeof(name), "stats.arenas.4096.bins.%u.nlent", tt_bin_of(size));
  tt_stats_refresh();
  uint64_t v = 0;
  size_t len = sizeof(v);
  TT_CHECKF(tt_ctl(name, &v, &len, NULL, 0) == 0, "read %s", name);
  return v;
}

static void flush_cache(void) { TT_CHECK(tt_ctl("thread.tcache.flush", NULL, NULL, NULL, 0) == 0); }

enum { SPARSE_BLOCKS = 12000, BORROWERS = 3000 };
static void *sparse_blocks[SPARSE_BLOCKS];

/* Leaves class `size` a third full: SPARSE_BLOCKS blocks, two in three freed, the
 * thread's cache flushed so that the freed regions are back in their slabs. */
static void make_sparse(size_t size) {
  for (int i = 0; i < SPARSE_BLOCKS; i++) {
    sparse_blocks[i] = malloc(size);
    TT_CHECK(sparse_blocks[i] != NULL);
    memset(sparse_blocks[i], 1, size);
  }
  for (int i = 0; i < SPARSE_BLOCKS; i++)
    if (i % 3 != 0) free(sparse_blocks[i]);
  flush_cache();
  size_t regs = bin_count("curregs", size);
  TT_CHECKF(regs <= (size_t)SPARSE_BLOCKS / 3 + 64, "class %zu: %zu regions in use after freeing two in three", size, regs);
}

static void *borrowers[BORROWERS];

/* BORROWERS blocks of `size` bytes (aligned to `align` if not 0), written; returns how
 * many got a region bigger than their class, each checked to be aligned to `align`. */
static int allocate_borrowers(size_t size, size_t align) {
  int bigger = 0;
  for (int i = 0; i < BORROWERS; i++) {
    borrowers[i] = align != 0 ? aligned_alloc(align, size) : malloc(size);
    TT_CHECK(borrowers[i] != NULL);
    if (align != 0)
      TT_CHECKF((uintptr_t)borrowers[i] % align == 0, "aligned_alloc(%zu, %zu) returned %p", align, size, borrowers[i]);
    memset(borrowers[i], 2, size);
    if (malloc_usable_size(borrowers[i]) > size) bigger++;
  }
  return bigger;
}

static void test_lend(void) {
  make_sparse(128);
  size_t slabs64 = bin_count("curslabs", 64);
  int lent = allocate_borrowers(64, 0);
  TT_CHECKF(lent > BORROWERS / 2, "64-byte requests beside a sparse 128-byte class: only %d of %d got its regions",
            lent, BORROWERS);
  TT_CHECKF(lent_by(128) >= (uint64_t)lent, "class 128 counts %llu lent regions, %d blocks have one",
            (unsigned long long)lent_by(128), lent);
  size_t grown = bin_count("curslabs", 64) - slabs64;
  TT_CHECKF(grown * 256 < (size_t)BORROWERS / 2, "class 64 took %zu new slabs although its blocks were lent", grown);
  /* free_sized with the size asked for: right, not "size of another size class". */
  for (int i = 0; i < BORROWERS; i++) {
    if (i % 2 == 0) free_sized_call(borrowers[i], 64);
    else free(borrowers[i]);
  }
  flush_cache();
  size_t regs = bin_count("curregs", 128);
  TT_CHECKF(regs <= (size_t)SPARSE_BLOCKS / 3 + 64, "every lent block freed: class 128 still has %zu regions in use", regs);
  for (int i = 0; i < SPARSE_BLOCKS; i += 3) free(sparse_blocks[i]);
}

static void test_align(void) {
  make_sparse(48);
  make_sparse(80);
  make_sparse(112);
  int bigger = allocate_borrowers(32, 32);
  TT_CHECKF(bigger == 0, "%d blocks of class 32 came from classes whose regions are not 32-byte aligned", bigger);
  TT_CHECK(lent_by(48) == 0 && lent_by(80) == 0 && lent_by(112) == 0);
  for (int i = 0; i < BORROWERS; i++) free(borrowers[i]);
  flush_cache();
  make_sparse(96);
  bigger = allocate_borrowers(32, 32);
  TT_CHECKF(bigger > BORROWERS / 2, "32-byte requests beside a sparse 96-byte class: only %d of %d got its regions",
            bigger, BORROWERS);
  bigger = allocate_borrowers(32, 0); /* plain malloc: also aligned to 32 then */
  for (int i = 0; i < BORROWERS; i++)
    TT_CHECKF((uintptr_t)borrowers[i] % 32 == 0, "malloc(32) returned %p", borrowers[i]);
}

enum { PER_THREAD = 4000 };
static void *handed[2][PER_THREAD / 2]; /* each thread's blocks for the other to free */
static pthread_barrier_t handoff;

static void bind_to_arena_0(void) {
  unsigned zero = 0;
  TT_CHECK(tt_ctl("thread.arena", NULL, NULL, &zero, sizeof(zero)) == 0);
}

static void *borrow_and_swap(void *arg) {
  int me = (int)(intptr_t)arg;
  bind_to_arena_0();
  void *mine[PER_THREAD / 2];
  for (int i = 0; i < PER_THREAD; i++) {
    void *p = malloc(64);
    TT_CHECK(p != NULL);
    memset(p, me + 1, 64);
    if (i % 2 == 0) handed[me][i / 2] = p;
    else mine[i / 2] = p;
  }
  pthread_barrier_wait(&handoff);
  for (int i = 0; i < PER_THREAD / 2; i++) {
    free(mine[i]);
    if (i % 2 == 0) free_sized_call(handed[1 - me][i], 64);
    else free(handed[1 - me][i]);
  }
  flush_cache();
  return NULL;
}

static void test_threads(void) {
  bind_to_arena_0();
  make_sparse(128);
  size_t before = bin_count("curregs", 128);
  TT_CHECK(pthread_barrier_init(&handoff, NULL, 2) == 0);
  pthread_t t[2];
  for (int i = 0; i < 2; i++) TT_CHECK(pthread_create(&t[i], NULL, borrow_and_swap, (void *)(intptr_t)i) == 0);
  for (int i = 0; i < 2; i++) TT_CHECK(pthread_join(t[i], NULL) == 0);
  TT_CHECKF(lent_by(128) > 0, "two threads of arena 0 took 64-byte blocks beside a sparse 128-byte class: none lent");
  flush_cache();
  size_t after = bin_count("curregs", 128);
  TT_CHECKF(after == before, "class 128 had %zu regions in use before the threads, %zu after all their blocks were freed",
            before, after);
}

/* hardened:true or lending:false, set by the test's environment. */
static void test_nothing_lent(const char *mode) {
  make_sparse(128);
  allocate_borrowers(64, 0);
  TT_CHECKF(lent_by(128) == 0, "%s: lent %llu regions", mode, (unsigned long long)lent_by(128));
}

int main(int argc, char **argv) {
  TT_CHECK(argc == 2);
  if (strcmp(argv[1], "lend") == 0) test_lend();
  else if (strcmp(argv[1], "align") == 0) test_align();
  else if (strcmp(argv[1], "threads") == 0) test_threads();
  else if (strcmp(argv[1], "hardened") == 0 || strcmp(argv[1], "off") == 0) test_nothing_lent(argv[1]);
  else TT_CHECKF(0, "unknown case %s", argv[1]);
  return 0;
}
