/* SPDX-License-Identifier: MIT */
/* Exact classes: see exact_class.h. */
#include "exact_class.h"

#include <stddef.h>

#include "lock.h"
#include "options.h"
#include "prof_cache.h"
#include "size_class.h"
#include "tcache.h"

static lock_t exact_lock FORK_LOCK; /* all zero: unlocked; guards the making of a class */
unsigned exact_class_count(void) { return atomic_load_explicit(&size_class_nexact, memory_order_acquire); }

/* Whether an exact class of size bytes pays for itself in static class c. */
static bool worth_a_class(unsigned c, size_t size) {
  size_t whole = class_infos[c].size;
  if (c == 0 || whole - class_infos[c - 1].size <= QUANTUM) return false; /* no sizes between */
  size_t waste = whole - size;
  return size > class_infos[c - 1].size && waste >= QUANTUM && waste * 100 >= whole * EXACT_MIN_WASTE_PCT;
}

void exact_class_window_end(tcache_t *tc, unsigned c) {
  exact_vote_t *v = &tc->exact_votes[c];
  bool won = v->hits >= EXACT_HITS_MIN;
  size_t size = (size_t)v->quanta * QUANTUM;
  v->total = v->hits = 0;
  if (won && exact_class_count() < NEXACT_CLASSES) exact_class_create(size, c);
}

static bool sized_free_fits(unsigned c, size_t actual, size_t usable) {
  if (c >= NSMALL || usable == 0 || usable > actual) return false;
  return size_to_static_class(usable) == class_infos[c].parent;
}

bool exact_class_sized_free_fits(unsigned c, size_t actual, size_t usable, size_t usable_alt) {
  return sized_free_fits(c, actual, usable) || sized_free_fits(c, actual, usable_alt);
}

/* Points every size from size down that still maps to static class parent at class c. */
static void redirect_sizes(size_t size, unsigned parent, unsigned c) {
  uint16_t bin_offset = (uint16_t)offsetof(tcache_t, bins[c + 1]);
  for (size_t i = size / QUANTUM; i > 0 && class_of_lookup[i] == parent; i--) {
    __atomic_store_n(&class_of_lookup[i], (uint8_t)c, __ATOMIC_RELEASE);
    __atomic_store_n(&tcache_bin_offset_of_size[i], bin_offset, __ATOMIC_RELEASE);
    if (opt_prof) __atomic_store_n(&prof_cache_lookup[i], bin_offset, __ATOMIC_RELEASE);
  }
}

bool exact_class_create(size_t size, unsigned parent) {
  if (!opt_exact_classes || opt_hardened || size == 0 || size > LOOKUP_MAX || size % QUANTUM != 0) return false;
  if (parent >= NSTATIC_SMALL || !worth_a_class(parent, size)) return false;
  /* Another thread making a class: this vote is dropped (a later one may win again). */
  if (!lock_try(&exact_lock)) return false;
  bool made = exact_class_count() < NEXACT_CLASSES && class_of_lookup[size / QUANTUM] == parent;
  if (made) { /* the class's facts, then its bins' capacities, then the sizes */
    unsigned c = size_class_fill_exact(size, parent);
    tcache_exact_class_made(c);
    size_class_publish_exact(c);
    redirect_sizes(size, parent, c);
  }
  lock_release(&exact_lock);
  return made;
}

COLD_TEXT void exact_class_fork_prepare(void) { lock_fork_prepare(&exact_lock); }
COLD_TEXT void exact_class_fork_release(void) { lock_fork_release(&exact_lock); }
