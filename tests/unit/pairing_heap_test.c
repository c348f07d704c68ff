/* SPDX-License-Identifier: MIT */
/* The pairing heap against a sorted model: insert, remove any, remove first. */
#include <string.h>

#include "pairing_heap.h"
#include "unit.h"

#define N 3000

static extent_t nodes[N];
static bool in_heap[N];

static int model_min(void) {
  int best = -1;
  for (int i = 0; i < N; i++)
    if (in_heap[i] && (best < 0 || nodes[i].addr < nodes[best].addr)) best = i;
  return best;
}

int main(void) {
  extent_heap_t h = {NULL};
  for (int i = 0; i < N; i++) nodes[i].addr = (uintptr_t)(unit_rand() % 100000000) * PAGE + (uintptr_t)i;
  for (int step = 0; step < 60000; step++) {
    int i = (int)(unit_rand() % N);
    unsigned op = (unsigned)(unit_rand() % 3);
    if (op == 0 && !in_heap[i]) {
      heap_insert(&h, &nodes[i]);
      in_heap[i] = true;
    } else if (op == 1 && in_heap[i]) {
      heap_remove(&h, &nodes[i]);
      in_heap[i] = false;
    } else if (op == 2) {
      int m = model_min();
      extent_t *got = heap_remove_first(&h);
      CHECK((m < 0 && got == NULL) || got == &nodes[m], "remove_first at step %d", step);
      if (m >= 0) in_heap[m] = false;
    }
    int m = model_min();
    CHECK((m < 0 && heap_first(&h) == NULL) || heap_first(&h) == &nodes[m], "first at step %d", step);
  }
  /* Draining yields ascending addresses. */
  uintptr_t last = 0;
  for (extent_t *e; (e = heap_remove_first(&h)) != NULL;) {
    CHECK(e->addr >= last, "ascending drain");
    last = e->addr;
  }
  UNIT_DONE("pairing_heap");
}
