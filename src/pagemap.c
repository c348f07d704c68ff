/* SPDX-License-Identifier: MIT */
#include "pagemap.h"

#include "config.h"
#include "os.h"

/* Never written: it stands for "no leaf yet". Its 2 MiB sit in BSS; reading them maps
 * the kernel's shared zero page, so it costs no memory. */
SPARSE_ARRAY pm_entry_t pagemap_zero_leaf[PM_LEAF_SIZE];
SPARSE_ARRAY _Atomic intptr_t pagemap_root[PM_ROOT_SIZE];
static _Atomic size_t leaves_mapped;

static pm_entry_t *leaf_for(uintptr_t addr) {
  _Atomic intptr_t *slot = &pagemap_root[(addr >> (LG_PAGE + PM_LEAF_BITS)) & (PM_ROOT_SIZE - 1)];
  intptr_t offset = atomic_load_explicit(slot, memory_order_acquire);
  if (offset != 0) return (pm_entry_t *)((uintptr_t)pagemap_zero_leaf + (uintptr_t)offset);
  tessera_assert((addr >> (LG_PAGE + PM_LEAF_BITS)) < PM_ROOT_SIZE); /* 48-bit addresses */
  pm_entry_t *fresh = os_map(PM_LEAF_SIZE * sizeof(pm_entry_t));
  if (fresh == NULL) return NULL;
  intptr_t fresh_offset = (intptr_t)((uintptr_t)fresh - (uintptr_t)pagemap_zero_leaf);
  intptr_t expected = 0;
  if (atomic_compare_exchange_strong_explicit(slot, &expected, fresh_offset, memory_order_acq_rel,
                                              memory_order_acquire)) {
    atomic_fetch_add_explicit(&leaves_mapped, 1, memory_order_relaxed);
    return fresh;
  }
  os_unmap(fresh, PM_LEAF_SIZE * sizeof(pm_entry_t)); /* another thread won the race */
  return (pm_entry_t *)((uintptr_t)pagemap_zero_leaf + (uintptr_t)expected);
}

bool pagemap_set_new_leaf(uintptr_t addr, pm_entry_t e) {
  pm_entry_t *leaf = leaf_for(addr);
  if (leaf == NULL) return false;
  leaf[(addr >> LG_PAGE) & (PM_LEAF_SIZE - 1)] = e;
  tessera_assert(pagemap_get(addr) == e);
  return true;
}

bool pagemap_reserve(uintptr_t addr, size_t size) {
  uintptr_t step = (uintptr_t)1 << (LG_PAGE + PM_LEAF_BITS);
  uintptr_t end = addr + size;
  for (uintptr_t a = addr & ~(step - 1); a < end; a += step)
    if (leaf_for(a) == NULL) return false;
  return true;
}

size_t pagemap_mapped_bytes(void) {
  return atomic_load_explicit(&leaves_mapped, memory_order_relaxed) * PM_LEAF_SIZE * sizeof(pm_entry_t);
}
