/* SPDX-License-Identifier: MIT */
#include "pairing_heap.h"

#include "config.h"

/* Links b under a (a has the lower address); returns the new subtree root. */
static extent_t *meld(extent_t *a, extent_t *b) {
  if (a == NULL) return b;
  if (b == NULL) return a;
  tessera_assert(a != b && a->addr != b->addr);
  if (b->addr < a->addr) { extent_t *t = a; a = b; b = t; }
  b->heap_prev = a;
  b->heap_next = a->heap_child;
  if (a->heap_child) a->heap_child->heap_prev = b;
  a->heap_child = b;
  a->heap_next = NULL;
  a->heap_prev = NULL;
  return a;
}

/* Two-pass pairing of a sibling list; returns the single root. */
static extent_t *merge_siblings(extent_t *first) {
  if (first == NULL) return NULL;
  /* Pass 1: meld pairs left to right, collecting the results in a reversed list. */
  extent_t *pairs = NULL;
  while (first) {
    extent_t *a = first, *b = first->heap_next;
    first = b ? b->heap_next : NULL;
    a->heap_next = a->heap_prev = NULL;
    if (b) b->heap_next = b->heap_prev = NULL;
    extent_t *m = meld(a, b);
    m->heap_next = pairs;
    pairs = m;
  }
  /* Pass 2: meld right to left. */
  extent_t *root = pairs;
  pairs = pairs->heap_next;
  root->heap_next = NULL;
  while (pairs) {
    extent_t *next = pairs->heap_next;
    pairs->heap_next = NULL;
    root = meld(root, pairs);
    pairs = next;
  }
  return root;
}

void heap_insert(extent_heap_t *h, extent_t *e) {
  tessera_assert(h->root != e);
  e->heap_child = e->heap_next = e->heap_prev = NULL;
  h->root = meld(h->root, e);
  tessera_assert(h->root->heap_prev == NULL && h->root->heap_next == NULL);
}

extent_t *heap_remove_first(extent_heap_t *h) {
  extent_t *root = h->root;
  if (root) {
    h->root = merge_siblings(root->heap_child);
    if (h->root) h->root->heap_prev = NULL;
    root->heap_child = root->heap_next = root->heap_prev = NULL;
  }
  return root;
}

void heap_remove(extent_heap_t *h, extent_t *e) {
  if (h->root == e) { heap_remove_first(h); return; }
  /* Unlink e's subtree from its parent/siblings, then meld its children back in. */
  extent_t *prev = e->heap_prev;
  tessera_assert(prev != NULL); /* e is in this heap, below its root */
  if (prev->heap_child == e) prev->heap_child = e->heap_next;
  else prev->heap_next = e->heap_next;
  if (e->heap_next) e->heap_next->heap_prev = prev;
  extent_t *sub = merge_siblings(e->heap_child);
  e->heap_child = e->heap_next = e->heap_prev = NULL;
  if (sub) { sub->heap_prev = NULL; h->root = meld(h->root, sub); }
}
