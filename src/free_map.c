/* SPDX-License-Identifier: MIT */
#include "free_map.h"

#include "config.h"
#include "options.h"
#include "os.h"

#define FREE_MAP_BYTES (((size_t)1 << FREE_MAP_LG_PAGES) * sizeof(free_map_entry_t))
#define HOME_SHIFT (FREE_MAP_LG_PAGES + LG_PAGE)

/* Stands for the array while it is off: index 0 of a zero mask reads it. */
static free_map_entry_t off_entry;
uintptr_t free_map_mask;
free_map_entry_t *free_map_entries = &off_entry;
static uintptr_t home_window = UINTPTR_MAX; /* addr >> HOME_SHIFT of the heap; set once */

/* Two bitmaps of the array's 4 KiB pages, a word of each side by side (the entries a
 * program writes then mark one page of them, not two):
 * - touched: ever written (they stay resident): metadata;
 * - covered: ever had an entry written, of any code (a clear included): the pages every
 *   lookup of a live block reads, kept when the reservation is released. */
#define ARRAY_PAGES (FREE_MAP_BYTES / PAGE)
enum { TOUCHED, COVERED };
SPARSE_ARRAY _Atomic uint64_t free_map_page_bits[ARRAY_PAGES / 64][2];
static _Atomic size_t touched_pages;

/* The release (free_map_release) against writers of entries: a writer announces itself
 * in `writers` and then checks `released`; the release sets `released` and then waits
 * for `writers` to drain (both sequentially consistent: one of the two sees the other). */
static _Atomic unsigned writers;
static _Atomic bool released;

size_t free_map_mapped_bytes(void) {
  return atomic_load_explicit(&touched_pages, memory_order_relaxed) * PAGE;
}

static void note_touched(const free_map_entry_t *e) {
  size_t page = (size_t)((uintptr_t)e - (uintptr_t)free_map_entries) / PAGE;
  uint64_t bit = (uint64_t)1 << (page % 64);
  if (atomic_load_explicit(&free_map_page_bits[page / 64][TOUCHED], memory_order_relaxed) & bit) return;
  if (!(atomic_fetch_or_explicit(&free_map_page_bits[page / 64][TOUCHED], bit, memory_order_relaxed) & bit))
    atomic_fetch_add_explicit(&touched_pages, 1, memory_order_relaxed);
}

static void note_covered(const free_map_entry_t *e) {
  size_t page = (size_t)((uintptr_t)e - (uintptr_t)free_map_entries) / PAGE;
  uint64_t bit = (uint64_t)1 << (page % 64);
  if (!(atomic_load_explicit(&free_map_page_bits[page / 64][COVERED], memory_order_relaxed) & bit))
    atomic_fetch_or_explicit(&free_map_page_bits[page / 64][COVERED], bit, memory_order_relaxed);
}

static bool writer_enter(void) {
  atomic_fetch_add(&writers, 1);
  if (!atomic_load(&released)) return true;
  atomic_fetch_sub(&writers, 1);
  return false;
}
static void writer_exit(void) { atomic_fetch_sub(&writers, 1); }

void free_map_boot(void) {
  /* Only where the reservation cannot crowd out the program's own mappings. */
  if (!opt_free_map || os_address_space_limit() < 8 * FREE_MAP_BYTES) return;
  free_map_entry_t *entries = os_map(FREE_MAP_BYTES);
  if (entries == NULL) return;
  os_set_huge_pages(entries, FREE_MAP_BYTES, 2); /* a touched entry must cost 4 KiB, not 2 MiB */
  free_map_entries = entries;
  __atomic_store_n(&free_map_mask, ((uintptr_t)1 << FREE_MAP_LG_PAGES) - 1, __ATOMIC_RELEASE);
}

bool free_map_enabled(void) { return __atomic_load_n(&free_map_mask, __ATOMIC_RELAXED) != 0; }

/* True when the block may be entered; turns the map off if it lies outside the home
 * window. Called under the owning arena's extent lock; home_window is set by the first
 * block and read afterwards, so a compare-and-swap settles concurrent first blocks. */
static bool in_home_window(uintptr_t addr, size_t npages) {
  if (!free_map_enabled()) return false;
  uintptr_t first = addr >> HOME_SHIFT, last = (addr + npages * PAGE - 1) >> HOME_SHIFT;
  uintptr_t home = __atomic_load_n(&home_window, __ATOMIC_ACQUIRE);
  if (home == UINTPTR_MAX) {
    uintptr_t expected = UINTPTR_MAX;
    __atomic_compare_exchange_n(&home_window, &expected, first, false, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE);
    home = __atomic_load_n(&home_window, __ATOMIC_ACQUIRE);
  }
  if (first == home && last == home) return true;
  /* A block whose entries would alias another window's: from now on every free finds
   * its block through the page map. Blocks entered so far keep valid entries, but no
   * lookup reads them any more. */
  __atomic_store_n(&free_map_mask, 0, __ATOMIC_RELEASE);
  return false;
}

/* Writes the entries of pages [first, end) of the block at addr. */
static void write_entries_of(uintptr_t addr, size_t first, size_t end, unsigned code) {
  for (size_t k = first; k < end; k++) {
    uintptr_t page = addr + k * PAGE;
    free_map_entry_t *e = &free_map_entries[(page >> LG_PAGE) & (((uintptr_t)1 << FREE_MAP_LG_PAGES) - 1)];
    /* Noted once per page of the array: the entries of a block's pages are adjacent. */
    if (k == 0 || ((uintptr_t)e & PAGE_MASK) == 0) {
      if (code != 0) note_touched(e);
      note_covered(e);
    }
    e->to_offset = code ? (uint32_t)(k * PAGE - page) : 0;
    e->cache_bin_offset = code * (uint32_t)sizeof(cache_bin_t);
    tessera_assert(free_map_block_offset(e, page) == (code ? k * PAGE : (uint32_t)page));
  }
}
static void write_entries(uintptr_t addr, size_t npages, unsigned code) { write_entries_of(addr, 0, npages, code); }

void free_map_set_block(uintptr_t addr, size_t npages, bool slab, unsigned code) {
  tessera_assert((addr & PAGE_MASK) == 0 && npages >= 1 && code <= NCACHED_MAX);
  if (code == 0) {
    free_map_clear_block(addr, npages, slab);
    return;
  }
  if (!writer_enter()) return;
  if (in_home_window(addr, npages)) write_entries(addr, slab ? npages : 1, code);
  writer_exit();
}

/* The profiler's writes touch only entries the map wrote before: those of a live block's
 * pages, written when it became active. While the mask is on, it has been on since boot
 * and every block has been in the home window (a block outside it turns the map off for
 * good), so those entries were written, in covered pages, which the release keeps
 * mapped: the writes need no writer count (a shared counter, two read-modify-writes a
 * mark, which sampling threads passed back and forth). Once the mask is off no lookup
 * reads them, so a write that races with the release is harmless. */
void free_map_divert_page(uintptr_t page) {
  uintptr_t mask = __atomic_load_n(&free_map_mask, __ATOMIC_ACQUIRE);
  if (mask != 0) __atomic_store_n(&free_map_entries[(page >> LG_PAGE) & mask].cache_bin_offset, 0, __ATOMIC_RELAXED);
}

void free_map_restore_pages(uintptr_t first, size_t npages, unsigned code) {
  tessera_assert((first & PAGE_MASK) == 0 && code >= 1 && code <= NCACHED_MAX);
  uintptr_t mask = __atomic_load_n(&free_map_mask, __ATOMIC_ACQUIRE);
  if (mask == 0) return;
  uint32_t offset = code * (uint32_t)sizeof(cache_bin_t);
  for (size_t k = 0; k < npages; k++)
    __atomic_store_n(&free_map_entries[((first >> LG_PAGE) + k) & mask].cache_bin_offset, offset, __ATOMIC_RELAXED);
}

void free_map_clear_block(uintptr_t addr, size_t npages, bool slab) {
  /* Entries are only ever written inside the home window; outside it there is nothing
   * to clear (and writing would clear another block's aliased entry). */
  if (free_map_entries == &off_entry) return;
  if (addr >> HOME_SHIFT != __atomic_load_n(&home_window, __ATOMIC_ACQUIRE) || !writer_enter()) return;
  write_entries(addr, slab ? npages : 1, 0);
  writer_exit();
}

/* Unmaps the pages [first, end) of the array. */
static void unmap_array_pages(size_t first, size_t end) {
  if (end > first) os_unmap((char *)free_map_entries + first * PAGE, (end - first) * PAGE);
}

bool free_map_release(void) {
  if (free_map_entries == &off_entry) return false;
  bool expected = false;
  if (!atomic_compare_exchange_strong(&released, &expected, true)) return false;
  __atomic_store_n(&free_map_mask, 0, __ATOMIC_SEQ_CST);
  while (atomic_load(&writers) != 0) os_yield();
  /* Every lookup from now on reads entry 0, whose page always stays (not marked covered
   * at boot: that would write a page of the bitmap in every process). A free that loaded
   * the mask just before reads the entry of its block's page, in a covered page, which
   * stays mapped. */
  size_t run = 1; /* first page of the current run of uncovered pages */
  for (size_t w = 0; w < ARRAY_PAGES / 64; w++) {
    uint64_t bits = atomic_load_explicit(&free_map_page_bits[w][COVERED], memory_order_relaxed);
    if (bits == 0) continue;
    for (unsigned b = 0; b < 64; b++) {
      if (!((bits >> b) & 1)) continue;
      unmap_array_pages(run, w * 64 + b);
      run = w * 64 + b + 1;
    }
  }
  unmap_array_pages(run, ARRAY_PAGES);
  return true;
}
