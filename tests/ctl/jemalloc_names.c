/* SPDX-License-Identifier: MIT */
/*
 * ctl.jemalloc_names: names and types of jemalloc 5.3's mallctl that programs written for
 * it read (folly's arenas.lookup, jemalloc's own stats readers), read the way such a
 * program reads them: jemalloc's declarations, jemalloc's types and sizes, values checked
 * against a known workload. Every check here holds on jemalloc itself too
 * (LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libjemalloc.so.2 runs this program on it); the
 * few that only tessera can answer are marked and skipped there.
 *
 *   jemalloc_names           the default options
 *   jemalloc_names junk      run with TESSERA_CONF=junk:true (MALLOC_CONF=junk:true)
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/types.h>
#include <time.h>

#include "tt.h"

/* ---- as in <jemalloc/jemalloc.h> ---- */
#define MALLOCX_TCACHE(tc) ((int)(((tc) + 2) << 8))
#define MALLOCX_TCACHE_NONE MALLOCX_TCACHE(-1)
#define MALLOCX_ARENA(a) ((int)(((unsigned)(a) + 1) << 20))
#define MALLCTL_ARENAS_ALL 4096
void *mallocx(size_t size, int flags);
void dallocx(void *ptr, int flags);
int mallctl(const char *name, void *oldp, size_t *oldlenp, void *newp, size_t newlen);
int mallctlnametomib(const char *name, size_t *mibp, size_t *miblenp);
int mallctlbymib(const size_t *mib, size_t miblen, void *oldp, size_t *oldlenp, void *newp, size_t newlen);
/* ---- */

static bool on_tessera; /* arenas.free_map is tessera's own name */

static void read_exact(const char *name, void *v, size_t size) {
  size_t len = size;
  int r = mallctl(name, v, &len, NULL, 0);
  TT_CHECKF(r == 0 && len == size, "%s read with %zu bytes: %d (length %zu)", name, size, r, len);
}

/* The name fmt with arena index i, read into v (size bytes exactly). */
static void read_indexed(const char *fmt, unsigned i, void *v, size_t size) {
  char name[128];
  snprintf(name, sizeof(name), fmt, i);
  read_exact(name, v, size);
}

static size_t read_size(const char *fmt, unsigned i) {
  size_t v;
  read_indexed(fmt, i, &v, sizeof(v));
  return v;
}

static uint64_t read_u64(const char *fmt, unsigned i) {
  uint64_t v;
  read_indexed(fmt, i, &v, sizeof(v));
  return v;
}

static void refresh(void) {
  uint64_t epoch = 1;
  size_t len = sizeof(epoch);
  TT_CHECK(mallctl("epoch", &epoch, &len, &epoch, len) == 0);
}

static unsigned lookup(void *p, int *err) {
  unsigned index = 9999;
  size_t len = sizeof(index);
  *err = mallctl("arenas.lookup", &index, &len, &p, sizeof(p));
  return index;
}

static void sleep_ms(long ms) {
  struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
  while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
  }
}

/* opt.*: jemalloc's types (a const char * junk, size_t lg_prof_sample, ssize_t
 * lg_tcache_nslots_mul), the names jemalloc has that tessera answers for itself. */
static void options(bool junk) {
  const char *s = NULL;
  read_exact("opt.junk", &s, sizeof(s));
  TT_CHECKF(strcmp(s, junk ? "true" : "false") == 0, "opt.junk \"%s\"", s);
  size_t lg = 0;
  read_exact("opt.lg_prof_sample", &lg, sizeof(lg));
  TT_CHECKF(lg == 19, "opt.lg_prof_sample %zu", lg); /* the default of both */
  ssize_t mul = -7;
  read_exact("opt.lg_tcache_nslots_mul", &mul, sizeof(mul));
  TT_CHECKF(mul == 1, "opt.lg_tcache_nslots_mul %zd", mul);
  bool retain = false;
  read_exact("opt.retain", &retain, sizeof(retain));
  if (on_tessera) TT_CHECK(retain); /* Debian's jemalloc: false on Linux unless configured */
  read_exact("opt.dss", &s, sizeof(s));
  if (on_tessera) TT_CHECKF(strcmp(s, "disabled") == 0, "opt.dss \"%s\"", s); /* jemalloc: secondary */
  /* A size that is neither jemalloc's nor tessera's own: jemalloc's EINVAL. */
  uint16_t small = 0;
  size_t len = sizeof(small);
  TT_CHECK(mallctl("opt.lg_prof_sample", &small, &len, NULL, 0) == EINVAL && len == sizeof(small));
  if (!on_tessera) return;
  /* Readers written for tessera's types before these took jemalloc's keep working. */
  bool junk_bool = !junk;
  read_exact("opt.junk", &junk_bool, sizeof(junk_bool));
  TT_CHECK(junk_bool == junk);
  unsigned u = 0;
  read_exact("opt.lg_prof_sample", &u, sizeof(u));
  TT_CHECK(u == 19);
  read_exact("opt.lg_tcache_nslots_mul", &u, sizeof(u));
  TT_CHECK(u == 1);
}

/* arenas.lookup: the arena of a block, as a pointer written and an index read. */
static void arenas_lookup(unsigned arena) {
  int err;
  unsigned char *small = mallocx(100, MALLOCX_ARENA(arena) | MALLOCX_TCACHE_NONE);
  unsigned char *large = mallocx(300000, MALLOCX_ARENA(arena) | MALLOCX_TCACHE_NONE);
  TT_CHECK(small != NULL && large != NULL);
  TT_CHECKF(lookup(small, &err) == arena && err == 0, "small block: %d", err);
  TT_CHECKF(lookup(small + 50, &err) == arena && err == 0, "inside a small block: %d", err);
  TT_CHECKF(lookup(large, &err) == arena && err == 0, "large block: %d", err);
  TT_CHECKF(lookup(large + 150000, &err) == 9999 && err == EINVAL, "inside a large block: %d", err);
  unsigned mine;
  read_exact("thread.arena", &mine, sizeof(mine));
  void *own = malloc(64);
  TT_CHECK(own != NULL);
  TT_CHECKF(lookup(own, &err) == mine && err == 0, "malloc's block on the thread's arena %u: %d", mine, err);
  if (on_tessera) { /* jemalloc crashes on an address it never handed out */
    int local;
    TT_CHECK(lookup(&local, &err) == 9999 && err == EINVAL);
    TT_CHECK(lookup(NULL, &err) == 9999 && err == EINVAL);
  }
  /* jemalloc's sizes: a void * in, an unsigned out (EINVAL otherwise, what fits copied) */
  size_t index = 12345, len = sizeof(index);
  TT_CHECK(mallctl("arenas.lookup", &index, &len, &small, sizeof(small)) == EINVAL && len == sizeof(unsigned));
  unsigned u = 9999;
  len = sizeof(u);
  TT_CHECK(mallctl("arenas.lookup", &u, &len, &small, 4) == EINVAL && u == 9999);
  TT_CHECK(mallctl("arenas.lookup", NULL, NULL, &small, sizeof(small)) == 0);
  free(own);
  dallocx(small, MALLOCX_TCACHE_NONE);
  dallocx(large, MALLOCX_TCACHE_NONE);
}

/* arena.<i>.initialized, arenas.nhbins, arenas.bin.<j>.nshards. */
static void arena_shape(unsigned arena) {
  unsigned narenas, nbins, nhbins;
  read_exact("arenas.narenas", &narenas, sizeof(narenas));
  read_exact("arenas.nbins", &nbins, sizeof(nbins));
  read_exact("arenas.nhbins", &nhbins, sizeof(nhbins));
  TT_CHECKF(nhbins >= nbins, "nhbins %u, nbins %u", nhbins, nbins);
  if (on_tessera) TT_CHECKF(nhbins == nbins + 12, "nhbins %u: every small class and 12 large ones", nhbins);
  for (unsigned j = 0; j < nbins; j++) {
    char name[64];
    uint32_t nshards = 0;
    snprintf(name, sizeof(name), "arenas.bin.%u.nshards", j);
    read_exact(name, &nshards, sizeof(nshards));
    TT_CHECKF(nshards == 1, "%s = %u", name, nshards);
  }
  char name[64];
  bool init = false;
  read_exact("arena.0.initialized", &init, sizeof(init));
  TT_CHECK(init);
  init = false;
  read_exact("arena.4096.initialized", &init, sizeof(init));
  TT_CHECK(init);
  /* An arena made by arenas.create: initialized from the next refresh on. */
  snprintf(name, sizeof(name), "arena.%u.initialized", arena);
  init = true;
  read_exact(name, &init, sizeof(init));
  TT_CHECK(!init);
  refresh();
  read_exact(name, &init, sizeof(init));
  TT_CHECK(init);
  snprintf(name, sizeof(name), "arena.%u.initialized", narenas); /* every arena's old index */
  init = false;
  read_exact(name, &init, sizeof(init));
  TT_CHECK(init);
  snprintf(name, sizeof(name), "arena.%u.initialized", narenas + 1);
  size_t len = sizeof(init);
  TT_CHECK(mallctl(name, &init, &len, NULL, 0) == ENOENT);
}

/* stats.arenas.<i>.resident, base, internal, retained against the arena's pages and the
 * totals; arena.<narenas>.purge empties every arena's dirty pages. */
static void arena_memory(unsigned arena) {
  enum { NBLOCKS = 16 };
  void *blocks[NBLOCKS];
  for (int k = 0; k < NBLOCKS; k++) {
    blocks[k] = mallocx((size_t)1 << 20, MALLOCX_ARENA(arena) | MALLOCX_TCACHE_NONE);
    TT_CHECK(blocks[k] != NULL);
    memset(blocks[k], 1, (size_t)1 << 20);
  }
  refresh();
  size_t pactive = read_size("stats.arenas.%u.pactive", arena);
  size_t pdirty = read_size("stats.arenas.%u.pdirty", arena);
  size_t resident = read_size("stats.arenas.%u.resident", arena);
  size_t base = read_size("stats.arenas.%u.base", arena);
  TT_CHECKF(pactive >= NBLOCKS * 256, "pactive %zu", pactive);
  TT_CHECKF(resident >= (pactive + pdirty) * 4096 + base && base > 0, "resident %zu: pactive %zu, pdirty %zu, base %zu",
            resident, pactive, pdirty, base);
  (void)read_size("stats.arenas.%u.internal", arena);
  TT_CHECK(read_size("stats.arenas.%u.retained", arena) % 4096 == 0);
  /* The merged numbers are the totals: jemalloc's identities. */
  size_t all_resident = read_size("stats.arenas.%u.resident", MALLCTL_ARENAS_ALL);
  size_t all_base = read_size("stats.arenas.%u.base", MALLCTL_ARENAS_ALL);
  size_t all_internal = read_size("stats.arenas.%u.internal", MALLCTL_ARENAS_ALL);
  size_t all_retained = read_size("stats.arenas.%u.retained", MALLCTL_ARENAS_ALL);
  size_t stats_resident, stats_metadata, stats_retained, len = sizeof(size_t);
  TT_CHECK(mallctl("stats.resident", &stats_resident, &len, NULL, 0) == 0);
  TT_CHECK(mallctl("stats.metadata", &stats_metadata, &len, NULL, 0) == 0);
  TT_CHECK(mallctl("stats.retained", &stats_retained, &len, NULL, 0) == 0);
  TT_CHECKF(all_resident == stats_resident, "merged resident %zu, stats.resident %zu", all_resident, stats_resident);
  TT_CHECKF(all_base + all_internal == stats_metadata, "merged base %zu + internal %zu, stats.metadata %zu",
            all_base, all_internal, stats_metadata);
  TT_CHECKF(all_retained == stats_retained, "merged retained %zu, stats.retained %zu", all_retained, stats_retained);
  TT_CHECK(all_resident >= resident);
  /* stats.arenas.<narenas>: the merged numbers under their pre-5 name */
  unsigned narenas;
  read_exact("arenas.narenas", &narenas, sizeof(narenas));
  TT_CHECK(read_size("stats.arenas.%u.pactive", narenas) == read_size("stats.arenas.%u.pactive", MALLCTL_ARENAS_ALL));
  TT_CHECK(read_size("stats.arenas.%u.resident", narenas) == all_resident);

  /* Freed with no cache: the pages stay dirty (decay times of seconds) until purged. */
  for (int k = 0; k < NBLOCKS; k++) dallocx(blocks[k], MALLOCX_TCACHE_NONE);
  refresh();
  pdirty = read_size("stats.arenas.%u.pdirty", arena);
  TT_CHECKF(pdirty >= 256, "pdirty %zu after freeing 16 MiB", pdirty);
  TT_CHECK(read_size("stats.arenas.%u.resident", arena) >= pdirty * 4096);
  char name[64];
  snprintf(name, sizeof(name), "arena.%u.purge", narenas); /* jemalloc < 5: every arena */
  TT_CHECK(mallctl(name, NULL, NULL, NULL, 0) == 0);
  snprintf(name, sizeof(name), "arena.%u.decay", narenas);
  TT_CHECK(mallctl(name, NULL, NULL, NULL, 0) == 0);
  snprintf(name, sizeof(name), "arena.%u.purge", narenas + 1);
  TT_CHECK(mallctl(name, NULL, NULL, NULL, 0) == ENOENT);
  refresh();
  TT_CHECKF(read_size("stats.arenas.%u.pdirty", arena) == 0, "created arena: pdirty %zu after the purge",
            read_size("stats.arenas.%u.pdirty", arena));
  TT_CHECKF(read_size("stats.arenas.%u.pdirty", MALLCTL_ARENAS_ALL) == 0, "every arena: pdirty %zu after the purge",
            read_size("stats.arenas.%u.pdirty", MALLCTL_ARENAS_ALL));
  TT_CHECK(read_size("stats.arenas.%u.retained", arena) >= (size_t)NBLOCKS << 20); /* released, kept */
}

/* stats.arenas.<i>.uptime: nanoseconds since the arena was made, at each refresh;
 * arena 0's and the merged one's since the allocator started. */
static void uptime(unsigned arena) {
  refresh();
  uint64_t mine = read_u64("stats.arenas.%u.uptime", arena);
  uint64_t first = read_u64("stats.arenas.%u.uptime", 0);
  TT_CHECK(read_u64("stats.arenas.%u.uptime", MALLCTL_ARENAS_ALL) == first);
  TT_CHECKF(mine <= first, "created arena %llu ns, arena 0 %llu ns", (unsigned long long)mine,
            (unsigned long long)first);
  sleep_ms(30);
  TT_CHECK(read_u64("stats.arenas.%u.uptime", arena) == mine); /* the same snapshot */
  refresh();
  uint64_t later = read_u64("stats.arenas.%u.uptime", arena);
  TT_CHECKF(later >= mine + 25000000u && later < mine + 60000000000u, "uptime %llu -> %llu over 30 ms",
            (unsigned long long)mine, (unsigned long long)later);
  TT_CHECK(read_u64("stats.arenas.%u.uptime", 0) >= first + 25000000u);
  /* by MIB, as jemalloc's own stats printer reads it */
  size_t mib[4], miblen = 4;
  uint64_t v;
  size_t len = sizeof(v);
  TT_CHECK(mallctlnametomib("stats.arenas.0.uptime", mib, &miblen) == 0 && miblen == 4);
  mib[2] = arena;
  TT_CHECK(mallctlbymib(mib, miblen, &v, &len, NULL, 0) == 0 && v == later);
}

int main(int argc, char **argv) {
  bool junk = argc > 1 && strcmp(argv[1], "junk") == 0;
  bool free_map;
  size_t len = sizeof(free_map);
  on_tessera = mallctl("arenas.free_map", &free_map, &len, NULL, 0) == 0;
  unsigned arena;
  len = sizeof(arena);
  refresh(); /* the arena made next is not in these statistics yet */
  TT_CHECK(mallctl("arenas.create", &arena, &len, NULL, 0) == 0);
  options(junk);
  if (!junk) {
    arenas_lookup(arena);
    arena_shape(arena);
    arena_memory(arena);
    uptime(arena);
  }
  printf("ctl.jemalloc_names: passed on %s\n", on_tessera ? "tessera" : "another allocator");
  return 0;
}
