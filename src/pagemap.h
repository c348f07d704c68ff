/* SPDX-License-Identifier: MIT */
/*
 * The page map: a two-level radix tree from page number to a 64-bit entry.
 *
 *   bits  0..47  extent_t * (user-space pointers fit in 47 bits)
 *   bits 48..55  page index within the extent, saturated at 255
 *   bits 56..63  code: 0 = no block starts on this page; 1..NCACHED_MAX = cached class+1
 *                (a slab page, or the first/last page of a large block of a cached
 *                class); CODE_LARGE = another large block. In the top byte so that
 *                free extracts it with one shift.
 *
 * Which pages are mapped: every page of a slab; the first and last page of a large
 * block; the first and last page of a free extent (code 0, for coalescing). All other
 * entries are 0. A root slot holds its leaf's distance from a shared all-zero leaf, so
 * an untouched (zero) slot already means "the zero leaf": a lookup never tests for NULL
 * and the root needs no initialisation (it stays in untouched BSS). Leaves are
 * installed with a CAS and never freed.
 */
#ifndef TESSERA_PAGEMAP_H
#define TESSERA_PAGEMAP_H

#include "types.h"

#define PM_LEAF_BITS 18
#define PM_ROOT_BITS 18 /* 18 + 18 + 12 = 48 bits of address */
#define PM_LEAF_SIZE ((size_t)1 << PM_LEAF_BITS)
#define PM_ROOT_SIZE ((size_t)1 << PM_ROOT_BITS)

#define CODE_LARGE 0xFE
#define PM_EXTENT_MASK (((uint64_t)1 << 48) - 1)

typedef uint64_t pm_entry_t;

extern _Atomic intptr_t pagemap_root[PM_ROOT_SIZE];
extern pm_entry_t pagemap_zero_leaf[PM_LEAF_SIZE];

static inline pm_entry_t pagemap_get(uintptr_t addr) {
  intptr_t offset = atomic_load_explicit(
      &pagemap_root[(addr >> (LG_PAGE + PM_LEAF_BITS)) & (PM_ROOT_SIZE - 1)], memory_order_acquire);
  const pm_entry_t *leaf = (const pm_entry_t *)((uintptr_t)pagemap_zero_leaf + (uintptr_t)offset);
  return leaf[(addr >> LG_PAGE) & (PM_LEAF_SIZE - 1)];
}

static inline extent_t *pm_extent(pm_entry_t e) { return (extent_t *)(uintptr_t)(e & PM_EXTENT_MASK); }
static inline unsigned pm_code(pm_entry_t e) { return (unsigned)(e >> 56); }
static inline unsigned pm_page_index(pm_entry_t e) { return (unsigned)(e >> 48) & 0xFF; }
/* The offset of addr from the start of its extent (exact below 256 pages). */
static inline uint32_t pm_offset(pm_entry_t e, uintptr_t addr) {
  return (uint32_t)(addr & PAGE_MASK) | ((uint32_t)(e >> (48 - LG_PAGE)) & (0xFFu << LG_PAGE));
}

static inline pm_entry_t pm_make(const extent_t *ext, unsigned code, size_t page_index) {
  if (page_index > 255) page_index = 255;
  return (uint64_t)(uintptr_t)ext | ((uint64_t)page_index << 48) | ((uint64_t)code << 56);
}

/* pagemap_set's path for a page whose leaf is not installed yet. */
bool pagemap_set_new_leaf(uintptr_t addr, pm_entry_t e);

/* Sets the entry of the page holding addr; creates the leaf if needed. Returns false
 * only if the OS refused memory for a new leaf. Inline: the extent layer writes a few
 * entries per allocation and free, and almost always into an existing leaf. */
static inline bool pagemap_set(uintptr_t addr, pm_entry_t e) {
  intptr_t offset = atomic_load_explicit(
      &pagemap_root[(addr >> (LG_PAGE + PM_LEAF_BITS)) & (PM_ROOT_SIZE - 1)], memory_order_acquire);
  if (unlikely(offset == 0)) return pagemap_set_new_leaf(addr, e); /* never write the zero leaf */
  pm_entry_t *leaf = (pm_entry_t *)((uintptr_t)pagemap_zero_leaf + (uintptr_t)offset);
  leaf[(addr >> LG_PAGE) & (PM_LEAF_SIZE - 1)] = e;
  return true;
}
/* Makes sure leaves exist for every page of [addr, addr + size). */
bool pagemap_reserve(uintptr_t addr, size_t size);
/* Bytes mapped for the page map (metadata). */
size_t pagemap_mapped_bytes(void);

#endif
