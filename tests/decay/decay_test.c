/* SPDX-License-Identifier: MIT */
/*
 * Returning memory, one scenario per invocation (argv[1]):
 *   trim        pages really are released: RSS drops after malloc_trim(0), live data intact
 *   immediate   dirty_decay_ms:0 releases freed pages at once
 *   never       dirty_decay_ms:-1 never releases (even on later allocation activity)
 *   curve       dirty_decay_ms:1000: after 1.5 s of idleness plus one allocation, released
 *   background  background_thread:true: released while the program sleeps, no activity
 *   fork        background_thread:true survives fork: the child allocates and exits 0
 *   stash_large empty slabs kept whole for their class, none next to another of the
 *               oldest ones: a 2 MiB request takes their pages (the stash turned into free
 *               runs until one fits) rather than new ones, so RSS does not grow
 *   purge_fork  threads churning slabs and large blocks with dirty_decay_ms:1 hand pages
 *               back all the time, with the extent lock released while they do; children
 *               forked meanwhile get every extent that was out back as a free one: after a
 *               purge of everything the child's dirty count is 0 (an extent left out would
 *               stay counted), and it allocates and frees normally
 *   grow_moves  a 64 KiB block doubling by realloc next to released pages, while freed
 *               pages stay resident elsewhere: it moves onto those (no page faulted in,
 *               contents kept) rather than fault in its released neighbour
 *   absorb      a freed block next to released pages: a bigger request (below 1 MiB)
 *               reuses its resident pages and faults only the pages it lacks (not a whole
 *               released extent)
 *   gather      freed blocks between live ones, none big enough: a bigger request (calloc)
 *               gets their resident pages moved under it: no new RSS, zeroed contents
 *   gather_absorbed  a freed 4 MiB block below released pages, a freed 2 MiB piece
 *               elsewhere, then a 6 MiB request: it takes the block's pages where they
 *               are and only the piece moves (onto the released pages above them)
 *   gather_untouched  blocks of 0.3-1.3 MB cycled, one page of each written: the free
 *               pieces they leave are mostly not in memory, and moving them would save
 *               no page fault, so few pages are gathered (the first move, to time it,
 *               and the rare retries)
 *   aligned_reuse  blocks of 1-5 KB aligned to 64 KiB, cycled: the runs freed blocks
 *               leave between live ones start aligned and serve the next requests, so
 *               the steady state takes no page faults
 *   realloc_untouched  a 4 MiB block with 64 KiB written, grown by realloc onto free
 *               pages that were never touched: its pages move, so neither its unwritten
 *               pages nor the destination's are faulted in; contents kept
 * trim, immediate and curve then do the same with 48 MiB of 1 KiB blocks, all freed: their
 * empty slabs wait in the arena's slab stash, which must count as dirty and go back the
 * same way.
 * The driver sets TESSERA_CONF for each; RSS comes from /proc/self/statm.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <malloc.h>
#include <pthread.h>
#include <stdatomic.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "tessera.h"
#include "tt.h"

#include <sys/resource.h>

#define MIB ((size_t)1 << 20)
#define NBLOCKS 256
#define BLOCK (256 * 1024) /* large blocks: 64 MiB in all */

static size_t rss_bytes(void) {
  FILE *f = fopen("/proc/self/statm", "r");
  unsigned long size = 0, resident = 0;
  if (f == NULL || fscanf(f, "%lu %lu", &size, &resident) != 2) {
    fprintf(stderr, "cannot read /proc/self/statm\n");
    exit(2);
  }
  fclose(f);
  return resident * (size_t)sysconf(_SC_PAGESIZE);
}

static void sleep_ms(long ms) {
  struct timespec ts = {ms / 1000, (ms % 1000) * 1000000};
  while (nanosleep(&ts, &ts) != 0) {}
}

static void *blocks[NBLOCKS];

/* Fills 64 MiB, keeps one block in 16 alive, frees the rest; returns the RSS before. */
static size_t build_and_free(void) {
  for (int i = 0; i < NBLOCKS; i++) {
    blocks[i] = malloc(BLOCK);
    TT_CHECKF(blocks[i] != NULL, "malloc");
    memset(blocks[i], i & 0xff, BLOCK);
  }
  size_t peak = rss_bytes();
  for (int i = 0; i < NBLOCKS; i++)
    if (i % 16 != 0) {
      free(blocks[i]);
      blocks[i] = NULL;
    }
  return peak;
}

static void check_survivors(void) {
  for (int i = 0; i < NBLOCKS; i += 16) {
    const unsigned char *p = blocks[i];
    for (size_t k = 0; k < BLOCK; k += 4096) TT_CHECKF(p[k] == (i & 0xff), "survivor %d byte %zu", i, k);
  }
}

/* Reaches the arena, which runs decay (a block above what threads cache). */
static void activity(void) { free(malloc(4 * MIB)); }

#define NSMALLBLOCKS (48 * 1024)
static void *small_blocks[NSMALLBLOCKS];

/* 48 MiB of 1 KiB blocks, every one freed; returns the RSS with all of them live. */
static size_t small_build_and_free(void) {
  for (int i = 0; i < NSMALLBLOCKS; i++) {
    small_blocks[i] = malloc(1024);
    TT_CHECKF(small_blocks[i] != NULL, "malloc");
    memset(small_blocks[i], 0x5c, 1024);
  }
  size_t peak = rss_bytes();
  /* Newest first: slabs reach the stash from the highest address down, so draining it
   * oldest first merges each slab with the free run above it. */
  for (int i = NSMALLBLOCKS - 1; i >= 0; i--) free(small_blocks[i]);
  return peak;
}

static size_t stats_dirty(void) {
  uint64_t epoch = 1;
  size_t dirty, len = sizeof(dirty);
  TT_CHECKF(tessera_ctl("epoch", NULL, NULL, &epoch, sizeof(epoch)) == 0, "epoch");
  TT_CHECKF(tessera_ctl("stats.dirty", &dirty, &len, NULL, 0) == 0, "stats.dirty");
  return dirty;
}

static void purge_all(void) {
  TT_CHECKF(tessera_ctl("arena.4096.purge", NULL, NULL, NULL, 0) == 0, "arena.4096.purge");
}

/* stash_large: 512 slabs of 4 KiB blocks and 512 of 8 KiB ones, alternating in memory
 * (no thread cache: each malloc takes its region from the bin, so slabs are made one at
 * a time), all freed, the 4 KiB ones first: the oldest stashed slabs have no free
 * neighbour, and only all of them together make a 2 MiB run. */
static void scenario_stash_large(void) {
  enum { ROUNDS = 512 };
  static void *small[ROUNDS * 4], *medium[ROUNDS * 2];
  purge_all();
  for (int r = 0; r < ROUNDS; r++) {
    for (int i = 0; i < 4; i++) small[r * 4 + i] = malloc(4096);
    for (int i = 0; i < 2; i++) medium[r * 2 + i] = malloc(8192);
  }
  for (int i = 0; i < ROUNDS * 4; i++) memset(small[i], 1, 4096);
  for (int i = 0; i < ROUNDS * 2; i++) memset(medium[i], 2, 8192);
  for (int i = 0; i < ROUNDS * 4; i++) free(small[i]);
  for (int i = 0; i < ROUNDS * 2; i++) free(medium[i]);
  size_t before = rss_bytes();
  char *big = malloc(2 * MIB);
  TT_CHECKF(big != NULL, "malloc(2 MiB)");
  memset(big, 3, 2 * MIB);
  size_t after = rss_bytes();
  printf("stash_large: RSS %zu -> %zu KiB for a 2 MiB block over 16 MiB of stashed slabs\n", before / 1024, after / 1024);
  TT_CHECKF(after < before + MIB / 2, "the 2 MiB block took new pages: RSS %zu -> %zu KiB", before / 1024, after / 1024);
  free(big);
}

/* purge_fork: churning threads, and children forked while their decay slices run. */
static atomic_bool churn_stop;
static void *churn(void *arg) {
  unsigned seed = (unsigned)(uintptr_t)arg;
  void *held[64] = {0};
  while (!atomic_load(&churn_stop)) {
    unsigned i = (seed = seed * 1103515245u + 12345u) % 64;
    free(held[i]);
    /* mostly slabs of several classes, some large blocks */
    size_t size = (seed >> 8) % 8 == 0 ? (size_t)64 * 1024 + (seed >> 12) % (512 * 1024) : 16 + (seed >> 12) % 8192;
    held[i] = malloc(size);
    TT_CHECKF(held[i] != NULL, "malloc(%zu)", size);
    memset(held[i], 1, size < 256 ? size : 256);
  }
  for (int i = 0; i < 64; i++) free(held[i]);
  return NULL;
}

static void scenario_purge_fork(void) {
  pthread_t threads[3];
  for (uintptr_t t = 0; t < 3; t++) TT_CHECKF(pthread_create(&threads[t], NULL, churn, (void *)(t + 1)) == 0, "thread");
  for (int round = 0; round < 40; round++) {
    sleep_ms(5);
    pid_t pid = fork();
    TT_CHECKF(pid >= 0, "fork");
    if (pid == 0) {
      for (int i = 0; i < 1000; i++) free(malloc(16 + (size_t)i * 37));
      purge_all();
      size_t dirty = stats_dirty();
      if (dirty != 0) fprintf(stderr, "child %d: %zu bytes still dirty after a purge of everything\n", round, dirty);
      _exit(dirty == 0 ? 0 : 1);
    }
    int status;
    TT_CHECKF(waitpid(pid, &status, 0) == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0, "child %d", round);
  }
  atomic_store(&churn_stop, true);
  for (int t = 0; t < 3; t++) pthread_join(threads[t], NULL);
  purge_all();
  TT_CHECKF(stats_dirty() == 0, "parent: dirty after a purge of everything");
}

/* Two adjacent 512 KiB blocks; the first freed and released, the second freed (resident):
 * a 768 KiB request takes the second's pages and 256 KiB of the first's. (From 1 MiB on,
 * a request gathers resident pages instead: scenario_gather.) */
static void scenario_absorb(void) {
  const size_t eight = MIB / 2, twelve = 3 * MIB / 4;
  purge_all();
  char *low = malloc(eight), *high = malloc(eight), *guard = malloc(eight);
  TT_CHECKF(low != NULL && high != NULL && guard != NULL, "malloc");
  TT_CHECKF(high == low + eight, "adjacent blocks expected (%p, %p)", (void *)low, (void *)high);
  memset(low, 1, eight);
  memset(high, 2, eight);
  free(low);
  purge_all(); /* low's pages are released */
  free(high);  /* high's stay resident */
  size_t before = rss_bytes();
  char *q = malloc(twelve);
  TT_CHECKF(q != NULL, "malloc");
  memset(q, 3, twelve);
  size_t grew = rss_bytes() - before;
  printf("absorb: 768 KiB block at %+td KiB from the freed resident block, RSS grew %zu KiB\n",
         (q - high) / 1024, grew / 1024);
  TT_CHECKF(q < high + eight && q + twelve > high, "the request reuses the freed block's pages");
  TT_CHECKF(grew <= 384 * 1024, "only the missing pages are faulted: RSS grew %zu KiB", grew / 1024);
  free(q);
  free(guard);
}

/* A dirty 512 KiB block, then a 64 KiB one after it whose neighbour above is released:
 * doubling the small one should copy it onto the dirty pages rather than fault in 64 KiB
 * more (the copy costs less than the faults, and the dirty pages would otherwise sit
 * unused while new ones become resident). */
static void scenario_grow_moves(void) {
  const size_t dirty_size = MIB / 2, small = 64 * 1024;
  purge_all();
  char *dirty = malloc(dirty_size), *p = malloc(small);
  TT_CHECKF(dirty != NULL && p != NULL, "malloc");
  memset(dirty, 1, dirty_size);
  for (size_t i = 0; i < small; i++) p[i] = (char)(i % 251);
  free(dirty); /* stays resident: dirty_decay_ms:-1 */
  size_t before = rss_bytes();
  char *q = realloc(p, 2 * small);
  TT_CHECKF(q != NULL, "realloc");
  memset(q + small, 2, small);
  size_t grew = rss_bytes() - before;
  printf("grow_moves: 64 -> 128 KiB %s, RSS grew %zu KiB\n", q == p ? "in place" : "moved", grew / 1024);
  for (size_t i = 0; i < small; i++) TT_CHECKF(q[i] == (char)(i % 251), "byte %zu kept", i);
  TT_CHECKF(q != p && q >= dirty && q < dirty + dirty_size, "the block moved onto the freed resident pages");
  TT_CHECKF(grew < small / 2, "no released page faulted in: RSS grew %zu KiB", grew / 1024);
  free(q);
}

static uint64_t stats_gathered(void) {
  uint64_t epoch = 1, gathered;
  size_t len = sizeof(gathered);
  TT_CHECKF(tessera_ctl("epoch", NULL, NULL, &epoch, sizeof(epoch)) == 0, "epoch");
  TT_CHECKF(tessera_ctl("stats.arenas.4096.gathered", &gathered, &len, NULL, 0) == 0, "stats.arenas.4096.gathered");
  return gathered;
}

/* Four 2 MiB blocks written, each between two live ones, then freed: no free extent
 * holds 8 MiB, so an 8 MiB calloc takes fresh pages and the four resident pieces move
 * under it. It reads as zero, and writing it all grows RSS by less than one piece. */
#define GATHER_PIECES 4
/* Eight live blocks of 0.3-1.3 MB, each replaced in turn, the first page of each
 * written: the pieces that blocks of 1 MiB and more could gather are mostly untouched. */
#define UNTOUCHED_LIVE 8
#define UNTOUCHED_STEPS 3000
static void scenario_gather_untouched(void) {
  purge_all(); /* no resident free pages from before */
  char *live[UNTOUCHED_LIVE] = {0};
  uint64_t gathered_before = stats_gathered(), requested_pages = 0;
  for (int step = 0; step < UNTOUCHED_STEPS; step++) {
    size_t size = 300000 + (size_t)(step % 1024) * 1000;
    int slot = step % UNTOUCHED_LIVE;
    char *p = malloc(size);
    TT_CHECKF(p != NULL, "malloc(%zu)", size);
    memset(p, 1, 4096);
    free(live[slot]);
    live[slot] = p;
    requested_pages += size / 4096;
  }
  for (int i = 0; i < UNTOUCHED_LIVE; i++) free(live[i]);
  uint64_t gathered = stats_gathered() - gathered_before;
  printf("gather_untouched: %llu of %llu pages requested were gathered\n", (unsigned long long)gathered,
         (unsigned long long)requested_pages);
  TT_CHECKF(gathered * 50 < requested_pages, "pages not in memory are not gathered: %llu of %llu",
            (unsigned long long)gathered, (unsigned long long)requested_pages);
}

static long minor_faults(void) {
  struct rusage u;
  TT_CHECK(getrusage(RUSAGE_SELF, &u) == 0);
  return u.ru_minflt;
}

/* 64 live blocks of 1-5 KB, each aligned to 64 KiB and its first page written, one
 * replaced at random each step: after a warm-up, the steps fault in (almost) no page. */
#define ALIGNED_LIVE 64
#define ALIGNED_STEPS 20000
static void scenario_aligned_reuse(void) {
  purge_all(); /* no big free runs from before */
  void *live[ALIGNED_LIVE] = {0};
  long faults_before = 0;
  unsigned seed = 7;
  for (int step = 0; step < 2 * ALIGNED_STEPS; step++) {
    if (step == ALIGNED_STEPS) faults_before = minor_faults();
    seed = seed * 1103515245u + 12345u;
    size_t size = 1000 + (size_t)(seed >> 8) % 4000;
    void *p = NULL;
    TT_CHECKF(posix_memalign(&p, 65536, size) == 0 && ((uintptr_t)p & 65535) == 0, "posix_memalign(65536, %zu)", size);
    memset(p, 1, size < 4096 ? size : 4096);
    int slot = (int)(seed >> 20) % ALIGNED_LIVE;
    free(live[slot]);
    live[slot] = p;
  }
  long faults = minor_faults() - faults_before;
  for (int i = 0; i < ALIGNED_LIVE; i++) free(live[i]);
  printf("aligned_reuse: %ld page faults in %d steps\n", faults, ALIGNED_STEPS);
  TT_CHECKF(faults < ALIGNED_STEPS / 10, "freed aligned runs serve aligned requests: %ld page faults in %d steps", faults,
            ALIGNED_STEPS);
}

/* A block that cannot grow in place (a live block right above it) and a freed, untouched
 * 16 MiB block (dirty, not in memory): realloc to 8 MiB takes the freed block's pages
 * and must move the old pages there, not copy them. */
static void scenario_realloc_untouched(void) {
  const size_t size = 4 * MIB, written = 64 * 1024;
  purge_all();
  /* Two big blocks in a row: the second lands right above the first, which therefore
   * cannot grow in place. */
  unsigned char *p = malloc(size);
  void *above = malloc(size);
  void *spare = malloc(16 * MIB);
  TT_CHECKF(p != NULL && above != NULL && spare != NULL, "malloc");
  TT_CHECKF((uintptr_t)above == (uintptr_t)p + size, "a block right above the one to grow (%p, %p)", (void *)p, above);
  for (size_t i = 0; i < written; i++) p[i] = (unsigned char)(i % 251 + 1);
  free(spare);
  long before = minor_faults();
  unsigned char *q = realloc(p, 2 * size);
  long faults = minor_faults() - before;
  TT_CHECKF(q != NULL, "realloc");
  printf("realloc_untouched: %s, %ld page faults\n", q == p ? "in place" : "moved", faults);
  for (size_t i = 0; i < written; i++) TT_CHECKF(q[i] == (unsigned char)(i % 251 + 1), "byte %zu kept", i);
  size_t nonzero = 0;
  for (size_t i = written; i < size; i += 4096) nonzero += q[i] != 0;
  TT_CHECKF(nonzero == 0, "%zu unwritten pages read nonzero", nonzero);
  TT_CHECKF(faults < 64, "neither side's untouched pages faulted in: %ld page faults", faults);
  free(q);
  free(above);
}

static void scenario_gather(bool gather) {
  const size_t piece = 2 * MIB;
  purge_all();
  char *freed[GATHER_PIECES], *kept[GATHER_PIECES];
  for (int i = 0; i < GATHER_PIECES; i++) {
    freed[i] = malloc(piece);
    kept[i] = malloc(piece);
    TT_CHECKF(freed[i] != NULL && kept[i] != NULL, "malloc");
    memset(freed[i], 0x5a, piece);
    memset(kept[i], 0x33, piece);
  }
  for (int i = 0; i < GATHER_PIECES; i++) free(freed[i]);
  uint64_t gathered_before = stats_gathered();
  size_t before = rss_bytes();
  unsigned char *q = calloc(1, GATHER_PIECES * piece);
  TT_CHECKF(q != NULL, "calloc");
  size_t nonzero = 0;
  for (size_t i = 0; i < GATHER_PIECES * piece; i++) nonzero += q[i] != 0;
  TT_CHECKF(nonzero == 0, "calloc's block holds %zu nonzero bytes", nonzero);
  memset(q, 1, GATHER_PIECES * piece);
  size_t grew = rss_bytes() - before;
  uint64_t gathered = stats_gathered() - gathered_before;
  printf("gather: 8 MiB block, %llu pages gathered, RSS grew %zu KiB\n", (unsigned long long)gathered, grew / 1024);
  if (gather) {
    TT_CHECKF(gathered >= 3 * piece / 4096, "the freed pieces are gathered: %llu pages", (unsigned long long)gathered);
    TT_CHECKF(grew <= piece, "RSS grew %zu KiB", grew / 1024);
  } else {
    TT_CHECKF(gathered == 0, "gather:never, yet %llu pages gathered", (unsigned long long)gathered);
  }
  for (int i = 0; i < GATHER_PIECES; i++) {
    TT_CHECKF(kept[i][0] == 0x33 && kept[i][piece - 1] == 0x33, "live block %d intact", i);
    free(kept[i]);
  }
  free(q);
}

static void scenario_gather_absorbed(void) {
  const size_t big = 4 * MIB, piece = 2 * MIB, kept_size = MIB;
  purge_all();
  unsigned char *low = malloc(big), *high = malloc(big), *kept1 = malloc(kept_size), *freed = malloc(piece),
                *kept2 = malloc(kept_size);
  TT_CHECKF(low != NULL && high != NULL && kept1 != NULL && freed != NULL && kept2 != NULL, "malloc");
  TT_CHECKF(high == low + big, "adjacent blocks expected (%p, %p)", (void *)low, (void *)high);
  memset(low, 0x11, big);
  memset(high, 0x22, big);
  memset(kept1, 0x33, kept_size);
  memset(freed, 0x44, piece);
  memset(kept2, 0x55, kept_size);
  free(high);
  purge_all(); /* high's pages are released */
  free(low);   /* the oldest free resident pages, then the piece's */
  free(freed);
  uint64_t gathered_before = stats_gathered();
  size_t before = rss_bytes();
  unsigned char *q = malloc(big + piece);
  TT_CHECKF(q != NULL, "malloc");
  memset(q, 0x66, big + piece);
  size_t grew = rss_bytes() - before;
  uint64_t gathered = stats_gathered() - gathered_before;
  printf("gather_absorbed: 6 MiB block at %+td KiB from the freed 4 MiB one, %llu pages moved, RSS grew %zu KiB\n",
         (q - low) / 1024, (unsigned long long)gathered, grew / 1024);
  TT_CHECKF(q == low, "the block takes the freed block's pages where they are (%p, not %p)", (void *)q, (void *)low);
  TT_CHECKF(gathered == piece / 4096, "only the piece's %zu pages move: %llu", piece / 4096, (unsigned long long)gathered);
  TT_CHECKF(grew <= piece / 4, "RSS grew %zu KiB", grew / 1024);
  TT_CHECKF(kept1[0] == 0x33 && kept1[kept_size - 1] == 0x33 && kept2[0] == 0x55 && kept2[kept_size - 1] == 0x55,
            "live blocks intact");
  free(q);
  free(kept1);
  free(kept2);
}

/* A calloc'd table read through (each page then maps the kernel's zero page, which
 * counts as resident) and freed: its pages stay dirty (dirty_decay_ms:-1). A calloc
 * that reuses them, directly or by moving them under fresh pages, must not clear them by
 * writing: a write copies the zero page (16k page faults and 64 MiB more resident a
 * call). Two rounds of each shape. */
static void scenario_calloc_read_through(void) {
  const size_t big = 64 * MIB, page = 4096;
  purge_all();
  unsigned char *m = malloc(big);
  TT_CHECKF(m != NULL, "malloc");
  memset(m, 0xAA, 4 * MIB);
  free(m);
  for (int round = 0; round < 4; round++) {
    long before = minor_faults();
    size_t rss_before = rss_bytes();
    unsigned char *t = calloc(1, big);
    long faults = minor_faults() - before;
    TT_CHECKF(t != NULL, "calloc");
    size_t nonzero = 0;
    for (size_t b = 0; b < big; b += page) nonzero += t[b] != 0 || t[b + page - 1] != 0; /* read through */
    TT_CHECKF(nonzero == 0, "round %d: %zu pages not zero", round, nonzero);
    size_t grew = rss_bytes() - rss_before;
    printf("calloc_read_through: round %d, %ld page faults in calloc, RSS grew %zu KiB\n", round, faults, grew / 1024);
    if (round > 0) {
      TT_CHECKF(faults < 1024, "round %d: calloc(64 MiB) of a table read through: %ld page faults", round, faults);
      TT_CHECKF(grew < 8 * MIB, "round %d: RSS grew %zu KiB", round, grew / 1024);
    }
    t[(size_t)round * page] = 1;
    free(t);
  }
}

/*
 * calloc of used blocks (src/calloc_clear.c): a program that uses its zeroed tables
 * sparsely gets the tables' old pages given back, one that fills them gets them written
 * with zeros, one that changes from filling to sparse use is followed.
 */
#define TABLE MIB
#define TABLE_PAGES (TABLE / 4096)
#define TABLES 32

static void *tables[TABLES];
static unsigned table_rng = 12345;

/* `steps` callocs of 1 MiB tables kept in TABLES slots, `touch` pages written in each
 * (every page when touch is TABLE_PAGES); returns the page faults they took. */
static long calloc_tables(int steps, int touch, int slots) {
  long before = minor_faults();
  for (int i = 0; i < steps; i++) {
    unsigned char *t = calloc(1, TABLE);
    TT_CHECKF(t != NULL, "calloc");
    for (int k = 0; k < touch; k++) {
      table_rng = table_rng * 1103515245u + 12345u;
      size_t page = touch == (int)TABLE_PAGES ? (size_t)k : (table_rng >> 8) % TABLE_PAGES;
      unsigned char mark = (unsigned char)(i % 255 + 1), *entry = &t[page * 4096 + 64];
      TT_CHECKF(*entry == 0 || *entry == mark, "step %d: a calloc'd table holds old data", i);
      *entry = mark;
    }
    int slot = i % slots;
    free(tables[slot]);
    tables[slot] = t;
  }
  return minor_faults() - before;
}

static void free_tables(void) {
  for (int i = 0; i < TABLES; i++) {
    free(tables[i]);
    tables[i] = NULL;
  }
}

/* 4 pages set in each table: the old pages go back; written with zeros, every reused
 * table would stay resident whole (32 MiB). */
static void scenario_calloc_sparse(void) {
  purge_all();
  size_t before = rss_bytes();
  calloc_tables(3000, 4, TABLES);
  size_t grew = rss_bytes() - before;
  printf("calloc_sparse: RSS grew %zu KiB over 32 tables of 1 MiB\n", grew / 1024);
  TT_CHECKF(grew < 8 * MIB, "sparse tables kept %zu KiB resident", grew / 1024);
  free_tables();
}

/* Every page set in each table: zeros are written (a page fault for each page of every
 * table if its pages went back: 512k). */
static void scenario_calloc_dense(void) {
  long faults = calloc_tables(2000, (int)TABLE_PAGES, 8);
  printf("calloc_dense: %ld page faults for 2000 tables of 256 pages\n", faults);
  TT_CHECKF(faults < 2000 * (long)TABLE_PAGES / 10, "dense tables: %ld page faults", faults);
  free_tables();
}

/* Filled tables, then sparse ones: the change is seen, and the resident pages of the
 * filled phase go back as their blocks are reused. */
static void scenario_calloc_phases(void) {
  purge_all();
  calloc_tables(2000, (int)TABLE_PAGES, 8);
  size_t dense = rss_bytes();
  calloc_tables(8000, 4, 8);
  size_t sparse = rss_bytes();
  printf("calloc_phases: RSS %zu KiB after the filled tables, %zu KiB after the sparse ones\n", dense / 1024,
         sparse / 1024);
  TT_CHECKF(sparse + 4 * MIB < dense, "sparse tables after filled ones: RSS %zu -> %zu KiB", dense / 1024,
            sparse / 1024);
  free_tables();
}

/* Small tables filled and big ones used sparsely, at once: each size is judged on its
 * own. The small tables' pages are written with zeros (a filled table would fault each
 * of them in again) and the big tables' pages go back (written, 8 of them would keep
 * 8 MiB resident for 32 pages in use). */
static void scenario_calloc_sizes(void) {
  enum { STEPS = 3000, SLOTS = 8, SMALL = 64 << 10 };
  static void *small[SLOTS], *big[SLOTS];
  long small_faults = 0;
  purge_all();
  size_t rss_before = rss_bytes();
  for (int i = 0; i < STEPS; i++) {
    long before = minor_faults();
    unsigned char *s = calloc(1, SMALL);
    TT_CHECKF(s != NULL, "calloc");
    for (size_t page = 0; page < SMALL / 4096; page++) {
      TT_CHECKF(s[page * 4096 + 8] == 0, "step %d: a calloc'd small table holds old data", i);
      s[page * 4096 + 8] = 1;
    }
    small_faults += minor_faults() - before;
    unsigned char *b = calloc(1, TABLE);
    TT_CHECKF(b != NULL, "calloc");
    for (int k = 0; k < 4; k++) {
      table_rng = table_rng * 1103515245u + 12345u;
      unsigned char *entry = &b[(table_rng >> 8) % TABLE_PAGES * 4096 + 64];
      TT_CHECKF(*entry == 0 || *entry == 1, "step %d: a calloc'd table holds old data", i);
      *entry = 1;
    }
    free(small[i % SLOTS]);
    small[i % SLOTS] = s;
    free(big[i % SLOTS]);
    big[i % SLOTS] = b;
  }
  size_t grew = rss_bytes() - rss_before;
  printf("calloc_sizes: %ld page faults in %d filled 64 KiB tables; RSS grew %zu KiB with 8 sparse 1 MiB tables\n",
         small_faults, STEPS, grew / 1024);
  TT_CHECKF(small_faults < STEPS * 2L, "%ld page faults: the filled small tables' pages went back", small_faults);
  TT_CHECKF(grew < 6 * MIB, "the sparse big tables kept %zu KiB resident", grew / 1024);
  for (int i = 0; i < SLOTS; i++) {
    free(small[i]);
    free(big[i]);
  }
}

/* Runs of fewer pages than any slab, between live blocks, serve no request: decay gives
 * them back whatever its curve allows once they add up to 1 MiB (src/extent.c), and not
 * before (a program making such runs all the time merges them again soon). 64 blocks of
 * 48 KiB shrunk in place to 40 KiB leave 64 runs of 2 pages (512 KiB): they stay; 1000
 * leave 8 MiB: they go, at however many runs a pass has time for. */
/* n blocks of 48 KiB written and shrunk in place to 40 KiB: n runs of 2 pages between
 * them, after a purge (so that nothing else is dirty but what the caller adds). */
static void shrunk_blocks(void **shrunk, int n) {
  purge_all();
  for (int i = 0; i < n; i++) {
    shrunk[i] = malloc(48 * 1024);
    TT_CHECKF(shrunk[i] != NULL, "malloc");
    memset(shrunk[i], 1, 48 * 1024);
  }
  for (int i = 0; i < n; i++) TT_CHECKF(realloc(shrunk[i], 40 * 1024) == shrunk[i], "realloc in place %d", i);
}

/* Dirty bytes after up to `rounds` rounds of a 2 MiB block allocated and freed (each
 * round ticks decay; a pass runs at least every 16 ticks), stopping early once dirty is
 * below `enough` (0: never). A pass gives back runs for at most its time budget, a system call a
 * run: how many rounds the release takes depends on how fast the kernel answers, so
 * the caller bounds rounds, not time. */
static size_t dirty_after_decay_rounds(int rounds, size_t enough) {
  size_t dirty = stats_dirty();
  for (int i = 0; i < rounds && dirty >= enough; i++) {
    free(malloc(2 * MIB));
    if (i % 16 == 15) dirty = stats_dirty();
  }
  return stats_dirty();
}

static void scenario_unusable_runs(void) {
  enum { NFEW = 64, NRUNS = 1000 };
  static void *live[NRUNS];
  shrunk_blocks(live, NFEW);
  free(malloc(2 * MIB)); /* its freed pages count in both figures */
  size_t before = stats_dirty(), after = dirty_after_decay_rounds(800, 0);
  printf("unusable_runs: 512 KiB of runs: dirty %zu KiB, after 800 rounds %zu KiB\n", before / 1024, after / 1024);
  TT_CHECKF(after + 256 * 1024 >= before, "runs below the threshold were given back: %zu -> %zu KiB", before / 1024,
            after / 1024);
  for (int i = 0; i < NFEW; i++) free(live[i]);

  shrunk_blocks(live, NRUNS);
  before = stats_dirty();
  /* What stays: the 2 MiB block and under 1 MiB of runs (the threshold). */
  after = dirty_after_decay_rounds(20000, 4 * MIB);
  printf("unusable_runs: dirty %zu KiB after shrinking, %zu KiB after decay passes\n", before / 1024, after / 1024);
  TT_CHECKF(before >= 7 * MIB, "the shrunk blocks should leave 8 MiB of 2-page runs: %zu KiB", before / 1024);
  TT_CHECKF(after < 4 * MIB, "runs no request can use stayed dirty: %zu KiB", after / 1024);
  for (int i = 0; i < NRUNS; i++) free(live[i]);
}

int main(int argc, char **argv) {
  TT_CHECKF(argc == 2, "usage: decay_test trim|immediate|never|curve|background|fork|purge_fork|stash_large|absorb|gather|gather_never|gather_absorbed|gather_untouched|aligned_reuse|realloc_untouched|calloc_read_through|calloc_sparse|calloc_dense|calloc_phases|calloc_sizes|unusable_runs");
  TT_CHECKF(strcmp(tessera_version(), "") != 0, "not running on tessera");
  const char *mode = argv[1];
  size_t base = rss_bytes();
  size_t peak = build_and_free();
  size_t live = (NBLOCKS / 16) * (size_t)BLOCK;
  TT_CHECKF(peak >= base + 60 * MIB, "the workload should be resident: %zu -> %zu", base, peak);
  size_t target = base + live + 8 * MIB; /* what "given back" means here */
  if (strcmp(mode, "trim") == 0) {
    TT_CHECKF(rss_bytes() > target, "with the default decay nothing should be gone yet (%zu MiB)", rss_bytes() / MIB);
    malloc_trim(0);
    TT_CHECKF(rss_bytes() <= target, "after malloc_trim: %zu MiB, want <= %zu", rss_bytes() / MIB, target / MIB);
  } else if (strcmp(mode, "immediate") == 0) {
    TT_CHECKF(rss_bytes() <= target, "dirty_decay_ms:0: %zu MiB, want <= %zu", rss_bytes() / MIB, target / MIB);
  } else if (strcmp(mode, "never") == 0) {
    sleep_ms(300);
    for (int i = 0; i < 100; i++) activity();
    TT_CHECKF(rss_bytes() >= peak - 8 * MIB, "dirty_decay_ms:-1 released pages: %zu -> %zu MiB", peak / MIB, rss_bytes() / MIB);
  } else if (strcmp(mode, "curve") == 0) {
    sleep_ms(400);
    activity();
    size_t partway = rss_bytes();
    sleep_ms(1100);
    for (int i = 0; i < 20; i++) activity();
    size_t after = rss_bytes();
    printf("curve: peak %zu MiB, at 0.4 s %zu MiB, at 1.5 s %zu MiB, live %zu MiB\n", peak / MIB, partway / MIB,
           after / MIB, live / MIB);
    TT_CHECKF(after <= target, "dirty_decay_ms:1000 after 1.5 s: %zu MiB, want <= %zu", after / MIB, target / MIB);
  } else if (strcmp(mode, "background") == 0) {
    sleep_ms(1600); /* no allocation at all meanwhile */
    size_t after = rss_bytes();
    printf("background: peak %zu MiB, after 1.6 s idle %zu MiB\n", peak / MIB, after / MIB);
    TT_CHECKF(after <= target, "background thread, dirty_decay_ms:1000: %zu MiB, want <= %zu", after / MIB, target / MIB);
  } else if (strcmp(mode, "fork") == 0) {
    for (int round = 0; round < 20; round++) {
      pid_t pid = fork();
      TT_CHECKF(pid >= 0, "fork");
      if (pid == 0) {
        void *p = malloc(BLOCK);
        memset(p, 1, BLOCK);
        free(p);
        sleep_ms(60); /* long enough for the child's own background thread to run */
        activity();
        _exit(0);
      }
      int status;
      TT_CHECKF(waitpid(pid, &status, 0) == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0, "child %d", round);
    }
  } else if (strcmp(mode, "stash_large") == 0) {
    scenario_stash_large();
  } else if (strcmp(mode, "purge_fork") == 0) {
    scenario_purge_fork();
  } else if (strcmp(mode, "grow_moves") == 0) {
    scenario_grow_moves();
  } else if (strcmp(mode, "absorb") == 0) {
    scenario_absorb();
  } else if (strcmp(mode, "gather") == 0 || strcmp(mode, "gather_never") == 0) {
    scenario_gather(strcmp(mode, "gather") == 0);
  } else if (strcmp(mode, "realloc_untouched") == 0) {
    scenario_realloc_untouched();
  } else if (strcmp(mode, "aligned_reuse") == 0) {
    scenario_aligned_reuse();
  } else if (strcmp(mode, "gather_absorbed") == 0) {
    scenario_gather_absorbed();
  } else if (strcmp(mode, "gather_untouched") == 0) {
    scenario_gather_untouched();
  } else if (strcmp(mode, "calloc_read_through") == 0) {
    scenario_calloc_read_through();
  } else if (strcmp(mode, "unusable_runs") == 0) {
    scenario_unusable_runs();
  } else if (strcmp(mode, "calloc_sparse") == 0) {
    scenario_calloc_sparse();
  } else if (strcmp(mode, "calloc_dense") == 0) {
    scenario_calloc_dense();
  } else if (strcmp(mode, "calloc_phases") == 0) {
    scenario_calloc_phases();
  } else if (strcmp(mode, "calloc_sizes") == 0) {
    scenario_calloc_sizes();
  } else {
    TT_CHECKF(0, "unknown mode %s", mode);
  }
  check_survivors();
  if (strcmp(mode, "trim") == 0 || strcmp(mode, "immediate") == 0 || strcmp(mode, "curve") == 0) {
    size_t base_small = rss_bytes();
    size_t peak_small = small_build_and_free();
    TT_CHECKF(peak_small >= base_small + 44 * MIB, "small blocks resident: %zu -> %zu", base_small, peak_small);
    size_t small_target = base_small + 8 * MIB;
    if (mode[0] == 'c') { /* the stash drains into the dirty set and follows the curve */
      sleep_ms(1500);
      for (int i = 0; i < 20; i++) activity();
    }
    if (mode[0] == 't') {
      TT_CHECKF(rss_bytes() > small_target, "empty slabs kept for reuse (%zu MiB)", rss_bytes() / MIB);
      TT_CHECKF(stats_dirty() >= 40 * MIB, "stashed slabs count as dirty: %zu MiB", stats_dirty() / MIB);
      malloc_trim(0);
      TT_CHECKF(stats_dirty() < 8 * MIB, "after malloc_trim, dirty %zu MiB", stats_dirty() / MIB);
    }
    TT_CHECKF(rss_bytes() <= small_target, "%s, small blocks: %zu MiB, want <= %zu", mode, rss_bytes() / MIB,
              small_target / MIB);
  }
  printf("decay %s: ok\n", mode);
  return 0;
}
