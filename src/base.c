#include "base.h"

#include <string.h>

#include "lock.h"
#include "os.h"

#define BASE_GRANULE 64
#define BASE_CHUNK ((size_t)1 << 20)
#define BASE_NLISTS 1024 /* free lists for sizes up to 64 KiB */

typedef struct free_block { struct free_block *next; } free_block_t;

static lock_t base_lock;
static char *bump, *bump_end;
static free_block_t *free_lists[BASE_NLISTS + 1];
static size_t mapped_bytes;

static size_t round_granule(size_t size) {
  return (size + BASE_GRANULE - 1) & ~(size_t)(BASE_GRANULE - 1);
}

void *base_alloc(size_t size) {
  size = round_granule(size ? size : 1);
  size_t list = size / BASE_GRANULE;
  void *p = NULL;
  bool recycled = false;
  lock_acquire(&base_lock);
  if (list <= BASE_NLISTS && free_lists[list] != NULL) {
    p = free_lists[list];
    free_lists[list] = free_lists[list]->next;
    recycled = true;
  } else if (list <= BASE_NLISTS && (size_t)(bump_end - bump) >= size) {
    p = bump;
    bump += size;
  } else {
    /* Blocks too big for a free list get a mapping of their own (base_free unmaps it). */
    size_t chunk = list > BASE_NLISTS ? (size + PAGE - 1) & ~PAGE_MASK : BASE_CHUNK;
    char *fresh = os_map(chunk);
    if (fresh != NULL) {
      mapped_bytes += chunk;
      if (list <= BASE_NLISTS) { /* the old chunk's tail (< 64 KiB) is abandoned */
        bump = fresh + size;
        bump_end = fresh + chunk;
      }
      p = fresh;
    }
  }
  lock_release(&base_lock);
  if (recycled) memset(p, 0, size);
  return p;
}

void base_free(void *p, size_t size) {
  size = round_granule(size ? size : 1);
  size_t list = size / BASE_GRANULE;
  lock_acquire(&base_lock);
  if (list <= BASE_NLISTS) {
    free_block_t *b = p;
    b->next = free_lists[list];
    free_lists[list] = b;
  } else {
    /* Big blocks (never extent records) go back to the OS whole. */
    lock_release(&base_lock);
    os_unmap(p, (size + PAGE - 1) & ~PAGE_MASK);
    lock_acquire(&base_lock);
    mapped_bytes -= (size + PAGE - 1) & ~PAGE_MASK;
  }
  lock_release(&base_lock);
}

size_t base_mapped_bytes(void) { return mapped_bytes; }
void base_fork_prepare(void) { lock_fork_prepare(&base_lock); }
void base_fork_parent(void) { lock_fork_release(&base_lock); }
void base_fork_child(void) { lock_fork_release(&base_lock); }
lock_t *base_lock_for_stats(void) { return &base_lock; }
