/* SPDX-License-Identifier: MIT */
/*
 * tessera's internal types.
 *
 * Glossary
 *   page     4 KiB, the unit of the page map and of every extent.
 *   class    a size class: four per doubling (16, 32, 48, 64, 80, 96, 112, 128, 160, ...),
 *            plus one "power of two plus a header" class (1152, 2304, 4608, 9216).
 *            Classes up to SMALL_MAX (32 KiB) are "small" and live in slabs; bigger
 *            requests are "large" and get a whole extent.
 *   extent   a run of whole pages with one metadata record (extent_t): a slab, a large
 *            block, or a free run. Extents never overlap; neighbours are found through
 *            the page map, so split and coalesce are O(1).
 *   slab     an extent cut into regions of one small class; a bitmap records the free
 *            regions. Its metadata (and bitmap) lives outside the slab, in base memory.
 *   region   one block handed to the program from a slab.
 *   lending  a class that needs a new slab takes a larger sparse class's free regions
 *            instead (bin.h); the blocks stay the lender's (page map, free).
 *   bin      an arena's state for one small class: the slab in use, the non-full slabs
 *            (lowest address first), one spare empty slab, counters (bin.c).
 *   cache bin  a thread cache's stack of free blocks of one class (tcache.h), or of a
 *            class that lent to it.
 *   class_id   a slab's size class (extent_t.class_id); "code" is class + 1 as the page
 *            map and the free map store it.
 *   arena    independent allocator state: bins and free extents, behind their own locks.
 *   tcache   a thread's cache of free blocks, one cache bin per cached class; the hot
 *            paths touch only this.
 *   stash    an arena's empty slabs, kept whole per class (stash.c).
 *   base     the internal allocator for metadata (extent records, arenas, stats).
 *   page map radix tree from page number to a pagemap entry (pagemap.h): the authority.
 *   free map flat index from page to cache bin, for free's fast path (free_map.h).
 *
 * The layer order and the lock order are written once, in src/README.md.
 */
#ifndef TESSERA_TYPES_H
#define TESSERA_TYPES_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define LG_PAGE 12
#define PAGE ((size_t)1 << LG_PAGE)
#define PAGE_MASK (PAGE - 1)
#define QUANTUM 16 /* every block is aligned to at least this */

#define SMALL_MAX 32768   /* 8 pages: the largest class kept in slabs */
#define NHEADER_CLASSES 4 /* 2^k + 2^k/8 for 1 KiB <= 2^k <= 8 KiB (size_class.h) */
#define NSTATIC_SMALL 44  /* the static classes 16 .. 32768 (size_class.h) */
#define NEXACT_CLASSES 8  /* slots for classes made at run time for one exact size (exact_class.h) */
#define NSMALL (NSTATIC_SMALL + NEXACT_CLASSES) /* every small class id: static, then exact */
#define NCACHED_MAX NSMALL /* every small class may have a thread-cache bin */
#define TCACHE_MAX_LIMIT ((size_t)32 << 10)
#define LOOKUP_MAX TCACHE_MAX_LIMIT /* size -> class by table up to here */

#define SLAB_MAX_PAGES 32        /* a slab is at most 128 KiB */
#define SLAB_MAX_REGIONS 1024    /* so a slab's bitmap is at most 16 words */
#define BITMAP_MAX_WORDS (SLAB_MAX_REGIONS / 64)
/* Extent records come in sizes of 2, 3 and 4 metadata granules of 64 bytes: a free
 * extent's or large block's record (no bitmap) and most slabs' (up to 5 bitmap words:
 * 320 regions) take 128 bytes, a slab of up to 13 words 192, of 16 words 256. */
#define EXTENT_RECORD_KINDS 3

#define MAX_ARENAS 256
/* Large size classes with their own counters: class NSMALL + j for j below this (the
 * last one also counts everything bigger, from 2^40 bytes up). */
#define NLARGE_CLASSES 136

/* Every arena at once, for the control interface's index (jemalloc's MALLCTL_ARENAS_ALL). */
#define ARENAS_ALL 4096u

/* x rounded up to a multiple of align (a power of two); x + align - 1 must not overflow. */
static inline size_t align_up(size_t x, size_t align) { return (x + align - 1) & ~(align - 1); }

/* Large blocks start above SMALL_MAX: a large request for fewer bytes (an alignment
 * beyond a page, or an explicit arena) is raised to the first large size, so that its
 * pages never carry a slab class's page-map code. */
static inline size_t large_request(size_t size) { return size <= SMALL_MAX ? SMALL_MAX + 1 : size; }

#define likely(x) __builtin_expect(!!(x), 1)
#define unlikely(x) __builtin_expect(!!(x), 0)
/* A big array of which a program touches a few pages: a common symbol, which the
 * linker places after all other zeroed data, so that the small variables every
 * program writes share a few pages instead of being spread between such arrays (each
 * touched page is resident memory). It must be a global without an initializer. */
#define SPARSE_ARRAY __attribute__((common))
#define INTERNAL __attribute__((visibility("hidden")))
#define NOINLINE __attribute__((noinline))
/* A function of a file whose code every program runs that only some programs call (the
 * exact classes' making, say): placed after all other code (src/layout.ld), so that it
 * does not push the start-up code out of the first 64 KiB window (structure.footprint). */
#define COLD_TEXT __attribute__((noinline, section("tessera_cold")))

/* ---- lock.h ---- */
typedef struct lock {
  _Atomic uint32_t state; /* 0 free, else (holder's lock id << 1) | 1 if someone may sleep (lock.c) */
  bool fork_skipped;      /* fork found it held by the forking thread itself */
  /* Counters, written only by the holder, read (racily) by stats. */
  uint64_t n_acquired;
  uint64_t n_contended;
  uint64_t wait_ns_total;
  uint64_t wait_ns_max;
} lock_t;

/* ---- extent.h ---- */
typedef enum extent_state {
  EXTENT_SLAB = 1,  /* active: a slab of one small class */
  EXTENT_LARGE,     /* active: one large block */
  EXTENT_DIRTY,     /* free, pages still resident (touched before) */
  EXTENT_MUZZY,     /* free, pages handed to the kernel lazily (MADV_FREE): may still count
                       as resident until the kernel needs them; contents undefined */
  EXTENT_RETAINED,  /* free, pages released to the OS (or never touched): reads as zero */
} extent_state_t;

struct arena;

typedef struct extent {
  uintptr_t addr;     /* first byte, page aligned */
  size_t npages;      /* size in pages, >= 1 */
  struct arena *arena;
  uint8_t state;      /* extent_state_t */
  union {
    uint8_t class_id; /* slab: its size class */
    /* large: taken from a thread's cache for a request this many classes below its own
     * (large_cache.h), else 0: a sized free with the request's size is right */
    uint8_t served_down;
  };
  uint8_t record_kind; /* its size: room for record_bitmap_words(kind) words (extent.c) */
  uint8_t sampled;    /* large: a block the heap profiler sampled (free tells it) */
  /* slab with sampled blocks: the pages (first, last, from the slab's start) whose
   * free-map entries the profiler cleared (prof_hooks.c; meaningful while sampled > 0) */
  uint8_t sampled_first, sampled_last;
  /* large: freed into a thread's cache of large blocks (large_cache.h), not live */
  uint8_t thread_cached;
  union {
    /* slab: lent regions to a smaller class since it was last empty (bin.h, "Lending") */
    uint8_t lent;
    /* large: calloc gave its pages back, and its free counts the ones touched since
     * (calloc_clear.h) */
    uint8_t calloc_measure;
  };
  /* pairing-heap links (free-extent sets and a bin's non-full slabs; never both) */
  struct extent *heap_child;
  struct extent *heap_next;
  struct extent *heap_prev; /* parent when first child, else previous sibling */
  /* free extents: the set's list, oldest first (decay purges the oldest pages first) */
  struct extent *lru_prev, *lru_next;
  /* slab only */
  uint32_t nfree;     /* free regions */
  uint32_t nregs;     /* regions in the slab */
  uint32_t first_word; /* hint: no free region in bitmap words below this */
  uint64_t bitmap[];  /* bit set = region free; nregs bits, slab extents only */
} extent_t;

typedef struct extent_heap {
  extent_t *root; /* min by address */
} extent_heap_t;

/* A list of extents through their lru links, oldest first (extent.h). */
typedef struct extent_list {
  extent_t *head, *tail;
} extent_list_t;

#define NPAGE_BUCKETS 160 /* page-count size buckets: four per doubling */
typedef struct extent_set {
  extent_heap_t buckets[NPAGE_BUCKETS];
  uint64_t nonempty[(NPAGE_BUCKETS + 63) / 64];
  size_t npages; /* total pages in the set */
  size_t unusable_pages; /* of those, in extents smaller than any slab (extent.c) */
  extent_list_t lru; /* every extent of the set, oldest first */
} extent_set_t;

/* Decay of one stage (dirty -> muzzy/retained, or muzzy -> retained): see decay.c. */
#define DECAY_NEPOCHS 200
typedef struct decay {
  /* First: what a new stage writes (the fields after it) shares no page with it while
   * nothing has decayed yet (arena_t's order). */
  size_t backlog[DECAY_NEPOCHS]; /* pages that entered in each past epoch, newest last */
  uint64_t backlog_weighted;     /* sum of backlog[k] * h(k), in 1/2^24 pages (decay.c) */
  uint64_t epoch_start_ns;       /* when the current epoch began */
  size_t added;                  /* pages that entered the stage during this epoch */
  ssize_t ms;                    /* the decay time the backlog was built with */
} decay_t;

/* ---- bin.h ---- */
/* All zero is an empty bin with an unlocked lock (arena_init relies on it). */
typedef struct bin {
  lock_t lock;
  extent_t *current;      /* slab regions are taken from; may be NULL */
  extent_heap_t nonfull;  /* other slabs with free regions, lowest address first */
  extent_t *spare;        /* one empty slab kept to avoid slab churn; may be NULL */
  uintptr_t last_filler;  /* thread_marker() of the thread the last fill was for (bin.c) */
  /* counters (under lock) */
  uint64_t nmalloc;   /* regions handed out */
  uint64_t ndalloc;   /* regions returned */
  uint64_t nfills;    /* tcache fills served */
  uint64_t nflushes;  /* tcache flushes received */
  uint64_t nslabs;    /* slabs created */
  uint64_t nrequests; /* malloc calls served, merged from exited threads' caches */
  uint64_t nlent;     /* regions lent to smaller classes (bin.c), also in nmalloc */
  size_t curregs;     /* regions currently handed out */
  size_t curslabs;    /* slabs currently owned */
} bin_t;

/* ---- arena.h ---- */
typedef struct arena {
  /* First, the 6.5 KiB that a program of small blocks that has not yet freed pages never
   * writes: the large classes' counters and the decay backlogs. A new arena's first page
   * holds nothing else, so such a program keeps 4 pages of the arena's 18 KiB resident,
   * not 5: the arena's own fields, then its first extent records, right after it. */
  uint64_t lextent_nmalloc[NLARGE_CLASSES]; /* per large size class (large_class_index), */
  uint64_t lextent_ndalloc[NLARGE_CLASSES]; /* under extent_lock */
  size_t lextent_cur[NLARGE_CLASSES];
  decay_t dirty_decay;
  decay_t muzzy_decay;
  unsigned index;
  /* When it was made (os_now_ns), for stats.arenas.<i>.uptime. Here rather than in a
   * table of the library's zeroed data: written at start-up, such a table moved the data
   * every program touches onto one more page. */
  uint64_t created_ns;
  _Atomic unsigned nthreads; /* threads bound to it */
  _Atomic uintptr_t last_refiller; /* thread_marker() of the thread that refilled last */
  lock_t extent_lock;        /* guards the extent sets and the large counters */
  /* Set while fork's handlers run (arena.c): a bin lock taken meanwhile is given back
   * until it clears (bin_lock). Beside the extent lock: one page the parent writes after
   * fork for both. */
  _Atomic bool fork_gate;
  extent_set_t dirty;
  extent_set_t muzzy;
  extent_set_t retained;
  size_t grow_pages;         /* size of the next mapping from the OS */
  _Atomic ssize_t dirty_decay_ms; /* -1 never purge, 0 purge at once, else the decay time */
  _Atomic ssize_t muzzy_decay_ms;
  /* counters (under extent_lock) */
  size_t mapped_pages;
  size_t active_pages;       /* pages in slabs and large blocks */
  size_t active_peak_pages;  /* recent peak of active_pages (decays over dirty_decay_ms) */
  /* What the last full decay pass let each stage keep, and the passes skipped since
   * (purge_tick_unlock: a pass reads the clock and walks the curve; most calls need neither). */
  size_t tick_dirty_keep;
  size_t tick_muzzy_keep;
  unsigned tick_skipped;
  size_t large_allocated;    /* usable bytes of live large blocks */
  uint64_t nmalloc_large;
  uint64_t ndalloc_large;
  uint64_t npurge;           /* purge passes */
  uint64_t nmadvise;         /* madvise calls */
  uint64_t purged_pages;     /* pages released (MADV_DONTNEED) */
  uint64_t lazy_freed_pages; /* pages lazily freed (MADV_FREE) */
  /* Pages taken back into use after a purge (each may cost a page fault): from the
   * muzzy set, and released pages from the retained set (extent.c). */
  uint64_t reused_muzzy_pages;
  uint64_t reused_released_pages;
  uint64_t gathered_pages; /* dirty pages moved under new large blocks (extent.c) */
  size_t retained_released_pages; /* of the retained set, pages released by purging (the
                                     rest are fresh mappings, never touched) */
  /* Released pages the program needed again soon (taken back from the retained set),
   * decaying over dirty_decay_ms: the dirty cap's slack grows by them (purge.c). */
  size_t refault_slack;
  /* Whether those refaults cost time (purge.c): released pages taken back per window. */
  uint64_t refault_window_start_ns;
  size_t refault_window_pages;
  bool refaults_costly;
  /* arena_exclusive: made for one thread by name; owner is that thread's marker while it
   * lives (0: free for the next matching thread). */
  bool exclusive;
  _Atomic uintptr_t exclusive_owner;
  extent_t *spare_records[EXTENT_RECORD_KINDS]; /* unused extent records, by kind (size) */
  /* The slab stash (arena.c): empty slabs kept whole, per class lowest address first and
   * on one list oldest first (lru links). Their pages count as dirty, not active. */
  extent_heap_t stash[NSMALL];
  extent_list_t stash_lru;
  size_t stash_pages;
  /* Extents a decay slice took out to hand back with the lock released (extent.h,
   * "Purging with the extent lock released"), and their pages. */
  extent_list_t purging;
  size_t purging_pages;
  bin_t bins[NSMALL];
} arena_t;

/* ---- tcache.h ---- */
/*
 * One class's stack of cached blocks, in slots[0 .. capacity). The stack grows down:
 * head points at the most recent block (the next one malloc hands out) and moves down
 * on free; an empty bin has head == slots + capacity, where a NULL sits (the debug
 * build checks it). The fast paths test fullness and emptiness by the low 16 bits of
 * head alone (a stack spans less than 64 KiB), so a bin that caches nothing has head
 * NULL and both marks 0: empty and full at once, every call takes the slow path.
 */
typedef struct cache_bin {
  /* the fast paths touch only these */
  void **head;
  uint16_t low_empty;    /* (uint16_t)head when the bin is empty */
  uint16_t low_full;     /* (uint16_t)head when the bin is full */
  uint16_t capacity;
  uint64_t region_magic; /* class_info_t.magic, for free's region-start test; 0 = not cached */
  /* Blocks this thread took from this bin (fast and slow paths), less the cache's
   * nmalloc_bias for the bin: read it with cache_bin_nmalloc (tcache.h). With prof:true
   * the bias makes this field reach 0 at the bin's next sampled allocation, so that the
   * profiling entry's fast path finds it in the flags of its increment (prof_cache.h). */
  uint64_t nmalloc_raw;
  /* slow paths only */
  void **slots;
  /* Blocks moved in from the arena and out to it: with nmalloc and the count they give
   * the frees without a counter on free's fast path (cache_bin_ndalloc). */
  uint64_t nfilled;
  uint64_t nflushed;
  uint64_t gc_nmalloc;   /* nmalloc when the GC last looked: unchanged means idle */
} cache_bin_t;
_Static_assert(sizeof(cache_bin_t) == 64, "the free map stores a bin's offset as code << 6");

/* A static class's vote for an exact class (exact_class.h), over a window of refills:
 * the candidate size (in quanta), the refills that asked for it, and all refills. */
typedef struct exact_vote {
  uint16_t quanta;
  uint8_t hits, total;
} exact_vote_t;

/* ---- large_cache.h ---- */
/* A thread's cache of freed large blocks: the large classes above SMALL_MAX up to
 * LARGE_CACHE_MAX (four per doubling: 40 KiB .. 256 KiB), a few blocks of each. */
#define LARGE_CACHE_MAX ((size_t)256 << 10)
#define LARGE_CACHE_CLASSES 12
#define LARGE_CACHE_SLOTS 8
typedef struct large_cache {
  size_t bytes;            /* held, every class (stats read it from other threads) */
  uint32_t events;         /* takes and puts, which drive its GC */
  uint8_t gc_class;        /* the class the GC looks at next */
  uint8_t count[LARGE_CACHE_CLASSES];
  uint8_t taken[LARGE_CACHE_CLASSES]; /* a block was taken since the GC's last look */
  /* a request found none of the class (nor up to four above) since the GC's last look
   * found the class idle: the class is in use, and its freed blocks stay (large_cache.c) */
  uint8_t missed[LARGE_CACHE_CLASSES];
  extent_t *slots[LARGE_CACHE_CLASSES][LARGE_CACHE_SLOTS]; /* oldest first */
} large_cache_t;

typedef struct tcache {
  /* Indexed by page-map code (class + 1), first in the struct: the free map stores a
   * bin's byte offset (code << 6) and bins[0], a dummy that never caches, is where every
   * page without a cached block points. Use tcache_bin(). */
  cache_bin_t bins[NCACHED_MAX + 1];
  arena_t *arena;
  struct tcache *next, *prev; /* registry of live tcaches (for stats and fork) */
  uint64_t events;            /* slow-path events, drives the incremental GC */
  unsigned gc_bin;            /* next bin the GC looks at */
  size_t alloc_size;          /* bytes mapped for this tcache (its bins' stacks reserved
                                 at their largest capacity) */
  size_t committed;           /* bytes of it the bins' current capacities can touch */
  /* Per bin, what its nmalloc_raw is off by: 0 unless prof:true (prof_cache.h). */
  uint64_t nmalloc_bias[NCACHED_MAX + 1];
  /* Per bin, its nmalloc and frees when last published into the thread's counters. */
  uint64_t nmalloc_published[NCACHED_MAX + 1];
  uint64_t ndalloc_published[NCACHED_MAX + 1];
  /* Adaptive capacity (tcache.c), per bin: nfilled when it last overflowed, nmalloc just
   * after its last refill, and how many overflows in a row looked like a batch bigger
   * than the bin (a refill, then frees with hardly an allocation between). */
  uint64_t overflow_mark[NCACHED_MAX + 1];
  uint64_t refill_nmalloc[NCACHED_MAX + 1];
  uint8_t overflow_streak[NCACHED_MAX + 1];
  /* Ended batch phases (tcache.c, release_idle_grown_bins): per bin, the slow-path
   * event (events) of its last refill or overflow; bit c of grown_bins: bin c is above
   * its starting capacity; of released_bins: it was released as idle; of
   * recurrent_bins: it grew again after that, and is never released so again. */
  uint64_t busy_event[NCACHED_MAX + 1];
  uint64_t grown_bins, released_bins, recurrent_bins;
  uint64_t prof_armed_bins; /* prof:true: bit c, bin c has drawn its countdown (prof_cache.h) */
  exact_vote_t exact_votes[NSTATIC_SMALL]; /* per static class (exact_class.h) */
  /* Each bin's two stacks, by their empty ends: the packed one (the starting capacity)
   * and the one it grows into (NULL: the bin never grows). */
  void **home_empty[NCACHED_MAX + 1];
  void **grown_empty[NCACHED_MAX + 1];
  large_cache_t large; /* last: a program without large blocks never touches it */
} tcache_t;

#endif /* TESSERA_TYPES_H */
