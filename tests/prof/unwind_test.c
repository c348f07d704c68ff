/* SPDX-License-Identifier: MIT */
/* The unwinder against known call chains: through a shared library built with -O2
 * -fomit-frame-pointer (chain.c), on the main thread and on a second thread, with
 * skip, with a depth limit, and with corrupt registers (must stop, never fault); the
 * modules loaded at start noted permanent first, so that the walks use the thread's
 * memo of steps (prof_unwind.c), which captures of other depths and chains must not
 * mislead.
 * "bench N" captures a 10-deep stack N times (for callgrind). */
#include "chain.h"
#include "prof_cfi.h"
#include "prof_modules.h"
#include "prof_symbolize.h"
#include "prof_unwind.h"
#include "unit.h"

#include <pthread.h>
#include <string.h>

#define MAXF 64

typedef struct capture {
  uintptr_t pcs[MAXF];
  unsigned n, skip, max;
  const char *names[MAXF];
  char store[MAXF][64];
} capture_t;

__attribute__((noinline)) static unsigned leaf_capture(void *arg) {
  capture_t *c = arg;
  c->n = prof_unwind_capture(c->pcs, c->max, c->skip);
  return c->n;
}

static void name_cb(const prof_module_table_t *t, void *arg) {
  capture_t *c = arg;
  prof_symbolizer_t sym;
  CHECK(prof_symbolizer_init(&sym, t), "symbolizer memory");
  for (unsigned i = 0; i < c->n; i++) {
    prof_symbol_t s;
    c->names[i] = "?";
    if (prof_symbolize(&sym, c->pcs[i] - 1, &s) && s.name) {
      snprintf(c->store[i], sizeof(c->store[i]), "%s", s.name);
      c->names[i] = c->store[i];
    }
  }
  prof_symbolizer_fini(&sym);
}

static void name_all(capture_t *c) { CHECK(prof_modules_locked(name_cb, c), "module table"); }

static void print_stack(const capture_t *c) {
  for (unsigned i = 0; i < c->n; i++) fprintf(stderr, "  #%u %#lx %s\n", i, (unsigned long)c->pcs[i], c->names[i]);
}

static void expect(const capture_t *c, unsigned at, const char *name) {
  if (at >= c->n || strcmp(c->names[at], name) != 0) {
    print_stack(c);
    CHECK(0, "frame %u should be %s", at, name);
  }
}

/* pcs[0] is the return address into prof_unwind_capture's caller, leaf_capture. */
__attribute__((noinline)) static void check_chain(const char *where) {
  capture_t c = {.max = MAXF};
  chain_a(leaf_capture, &c, 1);
  name_all(&c);
  expect(&c, 0, "leaf_capture");
  expect(&c, 1, "chain_c");
  expect(&c, 2, "chain_b");
  expect(&c, 3, "chain_a");
  expect(&c, 4, "check_chain");
  expect(&c, 5, where);
  __asm__ volatile("" ::: "memory");
}

/* The barriers after the calls keep them from becoming tail calls (jumps leave no frame). */
__attribute__((noinline)) static void check_main_chain(void) {
  check_chain("check_main_chain");
  __asm__ volatile("" ::: "memory");
}

static void *thread_main(void *arg) {
  (void)arg;
  check_chain("thread_chain");
  __asm__ volatile("" ::: "memory");
  return NULL;
}

/* A thread entry of its own name, so the expected caller is known. */
__attribute__((noinline)) static void *thread_chain(void *arg) {
  void *r = thread_main(arg);
  __asm__ volatile("" ::: "memory");
  return r;
}

__attribute__((noinline)) static void check_recursion_and_limits(void) {
  capture_t c = {.max = MAXF};
  chain_recurse(leaf_capture, &c, 10);
  name_all(&c);
  expect(&c, 0, "leaf_capture");
  for (unsigned i = 1; i <= 11; i++) expect(&c, i, "chain_recurse");
  expect(&c, 12, "check_recursion_and_limits");

  capture_t skipped = {.max = MAXF, .skip = 3};
  chain_recurse(leaf_capture, &skipped, 10);
  CHECK(skipped.n + 3 == c.n, "skip 3: %u frames vs %u", skipped.n, c.n);
  for (unsigned i = 0; i < 8; i++) /* same frames, shifted (the outermost pcs differ) */
    CHECK(skipped.pcs[i] == c.pcs[i + 3], "skip: frame %u", i);

  capture_t limited = {.max = 5};
  chain_recurse(leaf_capture, &limited, 10);
  CHECK(limited.n == 5, "max 5 gave %u", limited.n);
}

/* One call site for the captures check_memo compares frame by frame. */
__attribute__((noinline)) static void capture_at_depth(capture_t *c, unsigned depth) {
  chain_recurse(leaf_capture, c, depth);
  __asm__ volatile("" ::: "memory");
}

/* The memo of steps is per depth and PC: captures of one chain at depths 10, 6 and 10
 * again, and of another chain between, must each give their own frames (the same up to
 * capture_at_depth, frame 12 at depth 10; check_memo's return addresses differ). */
__attribute__((noinline)) static void check_memo(void) {
  capture_t deep = {.max = MAXF}, again = {.max = MAXF}, shallow = {.max = MAXF}, last = {.max = MAXF};
  capture_at_depth(&deep, 10);
  capture_at_depth(&again, 10);
  CHECK(again.n == deep.n && deep.n > 13 && memcmp(again.pcs, deep.pcs, 13 * sizeof(deep.pcs[0])) == 0,
        "same chain twice");
  name_all(&again);
  expect(&again, 12, "capture_at_depth");
  expect(&again, 13, "check_memo");
  capture_at_depth(&shallow, 6);
  name_all(&shallow);
  expect(&shallow, 0, "leaf_capture");
  for (unsigned i = 1; i <= 7; i++) expect(&shallow, i, "chain_recurse");
  expect(&shallow, 8, "capture_at_depth");
  expect(&shallow, 9, "check_memo");
  CHECK(shallow.n + 4 == deep.n, "depth 6: %u frames vs %u", shallow.n, deep.n);
  check_chain("check_memo");
  capture_at_depth(&last, 10);
  CHECK(last.n == deep.n && memcmp(last.pcs, deep.pcs, 13 * sizeof(deep.pcs[0])) == 0, "depth 10 after others");
  name_all(&last);
  expect(&last, 13, "check_memo");
  __asm__ volatile("" ::: "memory");
}

/* Corrupt starting registers: every step must fail cleanly. */
static void bad_cb(const prof_module_table_t *t, void *arg) {
  (void)arg;
  prof_memory_t mem = {.stack_lo = 0x10000, .stack_hi = 0x20000, .modules = t};
  prof_regs_t r = {.valid = ~0u};
  r.r[PROF_REG_RIP] = (uintptr_t)chain_a + 4;
  r.r[PROF_REG_RSP] = 0x1000; /* outside the stack bounds: the read is refused */
  prof_step_t s = prof_cfi_step(&mem, &r, false);
  CHECK(s == PROF_STEP_BAD, "bad rsp: step %d", (int)s);
  r.r[PROF_REG_RIP] = 0x123; /* no module */
  CHECK(prof_cfi_step(&mem, &r, true) == PROF_STEP_NO_FDE, "pc outside modules");
  uintptr_t v;
  CHECK(!prof_memory_read(&mem, 0x20000 - 4, &v), "read across the stack end");
  CHECK(!prof_memory_read(&mem, 8, &v), "read of page zero");
}

static void bench(unsigned n) {
  capture_t c = {.max = MAXF};
  unsigned total = 0;
  for (unsigned i = 0; i < n; i++) total += chain_recurse(leaf_capture, &c, 8);
  printf("bench: %u captures, %u frames each\n", n, c.n);
  (void)total;
}

int main(int argc, char **argv) {
  prof_modules_note_startup(); /* as the library's constructor does with prof:true; the memo keeps steps of these modules only */
  if (argc == 3 && strcmp(argv[1], "bench") == 0) {
    bench((unsigned)atoi(argv[2]));
    return 0;
  }
  check_main_chain();
  pthread_t th;
  CHECK(pthread_create(&th, NULL, thread_chain, NULL) == 0, "pthread_create");
  pthread_join(th, NULL);
  check_recursion_and_limits();
  check_memo();
  CHECK(prof_modules_locked(bad_cb, NULL), "module table");
  UNIT_DONE("prof.unwind");
}
