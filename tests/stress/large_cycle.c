/* SPDX-License-Identifier: MIT */
/*
 * large_cycle <steps> <seed> <max MiB>: big blocks cycled the way programs holding a
 * few large buffers do, checking that no page of a live block ever changes or moves
 * away while the allocator reuses free memory around it (free pages moved under new
 * blocks, blocks placed on old free extents next to released pages, decay releasing
 * pages meanwhile).
 *
 * 16 slots hold blocks of 256 KiB to <max MiB> (log-uniform). Each step picks a slot and,
 * at random, frees its block and allocates a new one (malloc, or calloc whose every
 * page must read zero), or grows or shrinks it by realloc. Every page of a block holds
 * a signature of (block, page) in its first word, written when the page came to the
 * block; a block's pages are checked before it is freed or reallocated, and all live
 * blocks every 64 steps.
 */
#include "tt.h"

#include <stdbool.h>
#include <stdint.h>

enum { SLOTS = 16, PAGE_BYTES = 4096, MIN_BYTES = 256 << 10 };

typedef struct {
  uint64_t *p;
  size_t size;
  uint64_t id;
} slot_t;

static slot_t slots[SLOTS];
static uint64_t rng_state;

static uint64_t next_random(void) {
  rng_state ^= rng_state << 13;
  rng_state ^= rng_state >> 7;
  rng_state ^= rng_state << 17;
  return rng_state;
}

/* Log-uniform in [MIN_BYTES, max]: many blocks near the bottom, a few near the top. */
static size_t random_size(size_t max) {
  unsigned lo = 18, hi = 63u - (unsigned)__builtin_clzll(max);
  unsigned bits = lo + (unsigned)(next_random() % (hi - lo + 1));
  size_t size = ((size_t)1 << bits) + next_random() % ((size_t)1 << bits);
  return size < MIN_BYTES ? MIN_BYTES : size > max ? max : size;
}

static uint64_t signature(uint64_t id, size_t page) { return id * 0x9e3779b97f4a7c15ull ^ (page + 1); }

static void sign_pages(slot_t *s, size_t from_page) {
  for (size_t page = from_page; page < s->size / PAGE_BYTES; page++)
    s->p[page * (PAGE_BYTES / 8)] = signature(s->id, page);
}

static void check_pages(const slot_t *s, size_t npages, const char *when) {
  for (size_t page = 0; page < npages; page++)
    TT_CHECKF(s->p[page * (PAGE_BYTES / 8)] == signature(s->id, page), "%s: block %llu (%zu bytes) page %zu changed",
              when, (unsigned long long)s->id, s->size, page);
}

static void check_zero_pages(const slot_t *s) {
  for (size_t page = 0; page < s->size / PAGE_BYTES; page++)
    TT_CHECKF(s->p[page * (PAGE_BYTES / 8)] == 0, "calloc: block of %zu bytes, page %zu not zero", s->size, page);
}

static void replace(slot_t *s, size_t max, uint64_t id) {
  if (s->p != NULL) check_pages(s, s->size / PAGE_BYTES, "before free");
  free(s->p);
  s->size = random_size(max);
  s->id = id;
  bool zeroed = next_random() % 4 == 0;
  s->p = zeroed ? calloc(1, s->size) : malloc(s->size);
  TT_CHECKF(s->p != NULL, "allocation of %zu bytes failed", s->size);
  if (zeroed) check_zero_pages(s);
  sign_pages(s, 0);
}

static void resize(slot_t *s, size_t max) {
  size_t old_pages = s->size / PAGE_BYTES, size = random_size(max);
  check_pages(s, old_pages, "before realloc");
  uint64_t *q = realloc(s->p, size);
  TT_CHECKF(q != NULL, "realloc to %zu bytes failed", size);
  s->p = q;
  s->size = size;
  size_t kept = old_pages < size / PAGE_BYTES ? old_pages : size / PAGE_BYTES;
  check_pages(s, kept, "after realloc");
  sign_pages(s, kept);
}

int main(int argc, char **argv) {
  TT_CHECKF(argc == 4, "usage: large_cycle <steps> <seed> <max MiB>");
  long steps = atol(argv[1]);
  rng_state = strtoull(argv[2], NULL, 10) | 1;
  size_t max = strtoull(argv[3], NULL, 10) << 20;
  TT_CHECK(steps > 0 && max >= MIN_BYTES);
  uint64_t next_id = 1;
  for (int i = 0; i < SLOTS; i++) replace(&slots[i], max, next_id++);
  for (long step = 0; step < steps; step++) {
    slot_t *s = &slots[next_random() % SLOTS];
    if (next_random() % 4 == 0) resize(s, max);
    else replace(s, max, next_id++);
    if (step % 64 == 63)
      for (int i = 0; i < SLOTS; i++) check_pages(&slots[i], slots[i].size / PAGE_BYTES, "live");
  }
  for (int i = 0; i < SLOTS; i++) {
    check_pages(&slots[i], slots[i].size / PAGE_BYTES, "at the end");
    free(slots[i].p);
  }
  printf("large_cycle: %ld steps, %llu blocks, every page of every live block intact\n", steps,
         (unsigned long long)next_id - 1);
  return 0;
}
