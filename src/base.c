/* SPDX-License-Identifier: MIT */
#include "base.h"

#include <string.h>

#include "config.h"
#include "lock.h"
#include "os.h"

#define BASE_GRANULE 64
/* Chunks start small (a program with one arena needs a few dozen KiB of metadata, and
 * under an address-space limit every mapped byte counts) and double up to 1 MiB. */
#define BASE_CHUNK_MIN ((size_t)128 << 10)
#define BASE_CHUNK ((size_t)1 << 20)
/* Bigger requests get a mapping of their own rather than most of a chunk. */
#define BASE_BIG (BASE_CHUNK / 16)
#define BASE_NLISTS (BASE_BIG / BASE_GRANULE) /* one free list per granule count */

typedef struct free_block {
  struct free_block *next;
} free_block_t;

static lock_t base_lock FORK_LOCK;
static char *bump, *bump_end;
SPARSE_ARRAY free_block_t *base_free_lists[BASE_NLISTS + 1];
/* Whether any block was ever freed: until then no list is read. Reading the lists' page
 * for nothing would cost a page of memory where the kernel maps no shared zero page
 * for reads of untouched memory (some virtual machines' kernels do not). */
static bool any_freed;
static size_t mapped_bytes;
static size_t next_chunk = BASE_CHUNK_MIN;

static size_t round_granule(size_t size) {
  return (size + BASE_GRANULE - 1) & ~(size_t)(BASE_GRANULE - 1);
}

/* A fresh mapping of size bytes (a multiple of PAGE), counted; NULL if refused. */
static char *map_counted(size_t size) {
  char *p = os_map(size);
  if (p != NULL) mapped_bytes += size;
  return p;
}

void *base_alloc(size_t size) {
  size = round_granule(size ? size : 1);
  void *p = NULL;
  lock_acquire(&base_lock);
  free_block_t **list = &base_free_lists[size / BASE_GRANULE];
  if (size > BASE_BIG) {
    p = map_counted(align_up(size, PAGE));
  } else if (any_freed && *list != NULL) {
    p = *list;
    *list = (*list)->next;
    memset(p, 0, size);
  } else {
    if ((size_t)(bump_end - bump) < size) { /* the old chunk's tail (< BASE_BIG) is abandoned */
      size_t chunk = next_chunk;
      char *fresh = map_counted(chunk);
      if (fresh == NULL && chunk > BASE_CHUNK_MIN) fresh = map_counted(chunk = BASE_CHUNK_MIN);
      if (fresh != NULL) {
        bump = fresh;
        bump_end = fresh + chunk;
        if (next_chunk < BASE_CHUNK) next_chunk *= 2;
      }
    }
    if ((size_t)(bump_end - bump) >= size) {
      p = bump;
      bump += size;
    }
  }
  tessera_assert(p == NULL || ((uintptr_t)p & (BASE_GRANULE - 1)) == 0);
  lock_release(&base_lock);
  return p; /* fresh pages from the OS read as zero; reused blocks were cleared */
}

COLD_TEXT void base_free(void *p, size_t size) {
  size = round_granule(size ? size : 1);
  if (size > BASE_BIG) {
    size_t bytes = align_up(size, PAGE);
    os_unmap(p, bytes);
    lock_acquire(&base_lock);
    mapped_bytes -= bytes;
    lock_release(&base_lock);
    return;
  }
  lock_acquire(&base_lock);
  free_block_t *b = p;
  any_freed = true;
  b->next = base_free_lists[size / BASE_GRANULE];
  base_free_lists[size / BASE_GRANULE] = b;
  lock_release(&base_lock);
}

size_t base_mapped_bytes(void) { return mapped_bytes; }
COLD_TEXT void base_fork_prepare(void) { lock_fork_prepare(&base_lock); }
COLD_TEXT void base_fork_parent(void) { lock_fork_release(&base_lock); }
COLD_TEXT void base_fork_child(void) { lock_fork_release(&base_lock); }
lock_t *base_lock_for_stats(void) { return &base_lock; }
