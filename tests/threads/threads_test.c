/* SPDX-License-Identifier: MIT */
/*
 * Thread caches and arenas, one scenario per invocation (argv[1]):
 *   gc        a bin that went idle gives its cached blocks back (incremental GC)
 *   lowwater  a bin still in use gives back the blocks it left unused between the GC's
 *             looks (it never dipped below them)
 *   budget    a thread that takes one block of a big class does not get a bin's worth
 *             of them (a bin starts within a byte bound)
 *   counters  after threads allocate, trade blocks, free everything and exit,
 *             stats.allocated is back to its starting value
 *   locks     lock acquisitions per malloc/free pair: single-thread loop (must be
 *             below 0.01: the thread cache serves nearly everything) and a two-thread
 *             producer/consumer (must stay well below one lock per free: remote frees
 *             go back in batches); both figures are printed
 *   grow      a bin that a batch of one size overflows round after round grows until
 *             the batch fits (no more fills or flushes), within its byte bound; idle,
 *             it gives its blocks back
 *   phases    batch phases of one size after another: when a new phase's bin grows, the
 *             grown bin of the phase that ended gives its blocks back at once; two sizes
 *             whose phases alternate keep their grown bins (no refills or flushes)
 *   balance   two threads that take only large blocks from one arena, each on a CPU of
 *             its own: one moves to its CPU's arena (it found the other at work there)
 *   handoff   a new thread's first free (a block its creator handed it) goes straight
 *             back to the block's slab, not into the thread's cache, where it would be
 *             the thread's next block of that size (passive false sharing)
 *   late      a thread whose first allocator calls come after the thread library ran
 *             its exit hooks (frees in the last round of thread-specific destructors)
 *             arms hooks that never run; once its stack is unmapped, a thread that
 *             registered before it exits, and more threads come and go: nothing may
 *             touch the gone thread's stack (the thread registry once linked the
 *             threads' own state, and this crashed), and the process's allocations go on
 */
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tessera.h"
#include "tt.h"

static void refresh(void) {
  uint64_t epoch = 1;
  TT_CHECKF(tessera_ctl("epoch", NULL, NULL, &epoch, sizeof(epoch)) == 0, "epoch");
}

static uint64_t read_u64(const char *name) {
  uint64_t v = 0;
  size_t len = sizeof(v);
  TT_CHECKF(tessera_ctl(name, &v, &len, NULL, 0) == 0, "read %s", name);
  return v;
}

static size_t read_size(const char *name) {
  size_t v = 0, len = sizeof(v);
  TT_CHECKF(tessera_ctl(name, &v, &len, NULL, 0) == 0, "read %s", name);
  return v;
}

/* Every lock acquisition in every arena (bins and extents), plus the base lock. */
static uint64_t total_locks(void) {
  refresh();
  unsigned nbins = 0;
  size_t len = sizeof(nbins);
  TT_CHECKF(tessera_ctl("arenas.nbins", &nbins, &len, NULL, 0) == 0, "arenas.nbins");
  uint64_t sum = read_u64("stats.arenas.4096.mutexes.extents.num_ops") + read_u64("stats.mutexes.base.num_ops");
  for (unsigned j = 0; j < nbins; j++) {
    char name[96];
    snprintf(name, sizeof(name), "stats.arenas.4096.bins.%u.mutex.num_ops", j);
    sum += read_u64(name);
  }
  return sum;
}

/* ---- gc ---- */

static void scenario_gc(void) {
  void *burst[120]; /* fits the 112-byte bin (146 blocks: 16 KiB) */
  for (int i = 0; i < 120; i++) burst[i] = malloc(100); /* class 112 */
  for (int i = 0; i < 120; i++) free(burst[i]);
  refresh();
  size_t before = read_size("stats.arenas.4096.bins.6.curregs");
  TT_CHECKF(read_size("arenas.bin.6.size") == 112, "bin 6 is the 112-byte class");
  /* Steady work in other classes: the slow paths drive the GC. */
  for (int r = 0; r < 5000; r++) {
    void *w[300];
    for (int i = 0; i < 300; i++) w[i] = malloc(1000 + (size_t)(r % 7) * 1000);
    for (int i = 0; i < 300; i++) free(w[i]);
  }
  refresh();
  size_t after = read_size("stats.arenas.4096.bins.6.curregs");
  printf("gc: 112-byte regions out of their slabs: %zu after the burst, %zu after other work\n", before, after);
  TT_CHECKF(before >= 120, "the burst's blocks sit in the thread cache (%zu)", before);
  TT_CHECKF(after < 60, "the idle bin gave back at least half: %zu left", after);
}

/* ---- lowwater ---- */

static void scenario_lowwater(void) {
  void *burst[120]; /* fits the 112-byte bin (146 blocks: 16 KiB) */
  for (int i = 0; i < 120; i++) burst[i] = malloc(100); /* class 112 */
  for (int i = 0; i < 120; i++) free(burst[i]);
  refresh();
  size_t before = read_size("stats.arenas.4096.bins.6.curregs");
  /* The 112-byte bin stays in use (one block at a time, never idle between two looks
   * of the GC), while steady work in other classes drives the GC. */
  for (int r = 0; r < 5000; r++) {
    void *w[300];
    void *one = malloc(100);
    for (int i = 0; i < 300; i++) w[i] = malloc(1000 + (size_t)(r % 7) * 1000);
    for (int i = 0; i < 300; i++) free(w[i]);
    free(one);
  }
  refresh();
  size_t after = read_size("stats.arenas.4096.bins.6.curregs");
  printf("lowwater: 112-byte regions out of their slabs: %zu after the burst, %zu after use of one at a time\n",
         before, after);
  TT_CHECKF(before >= 120, "the burst's blocks sit in the thread cache (%zu)", before);
  TT_CHECKF(after < 60, "the busy bin gave back the blocks it never used: %zu left", after);
}

/* ---- budget ---- */

static void scenario_budget(void) {
  TT_CHECKF(read_size("arenas.bin.38.size") == 14336, "bin 38 is the 14 KiB class");
  void *p = malloc(14000);
  TT_CHECK(p != NULL);
  refresh();
  size_t out = read_size("stats.arenas.4096.bins.38.curregs");
  printf("budget: 14 KiB regions out of their slabs after one malloc: %zu\n", out);
  TT_CHECKF(out >= 1 && out <= 4, "one malloc took at most a few 14 KiB blocks (%zu)", out);
  free(p);
}

/* ---- grow ---- */

/* Rounds of n blocks of size bytes allocated, then freed newest first. */
static void batch_rounds(size_t size, int n, int rounds) {
  static void *blocks[2000];
  for (int r = 0; r < rounds; r++) {
    for (int i = 0; i < n; i++) TT_CHECK((blocks[i] = malloc(size)) != NULL);
    for (int i = n - 1; i >= 0; i--) free(blocks[i]);
  }
}

static uint64_t fills_and_flushes(unsigned bin) {
  char a[96], b[96];
  refresh();
  snprintf(a, sizeof(a), "stats.arenas.4096.bins.%u.nfills", bin);
  snprintf(b, sizeof(b), "stats.arenas.4096.bins.%u.nflushes", bin);
  return read_u64(a) + read_u64(b);
}

static void scenario_grow(void) {
  TT_CHECKF(read_size("arenas.bin.3.size") == 64, "bin 3 is the 64-byte class");
  batch_rounds(64, 1000, 8); /* the bin doubles once per round from the second: 200 -> 1600 */
  uint64_t grown = fills_and_flushes(3);
  batch_rounds(64, 1000, 20);
  uint64_t later = fills_and_flushes(3);
  printf("grow: 64-byte bin fills+flushes %llu after 8 rounds, %llu after 20 more\n",
         (unsigned long long)grown, (unsigned long long)later);
  TT_CHECKF(later == grown, "the grown bin holds the whole batch (%llu -> %llu)", (unsigned long long)grown,
            (unsigned long long)later);
  /* 4 KiB blocks: 1000 of them are 4 MiB, past a bin's byte bound: still through the arena. */
  uint64_t big_before = fills_and_flushes(29);
  TT_CHECKF(read_size("arenas.bin.29.size") == 4096, "bin 29 is the 4 KiB class");
  batch_rounds(4096, 1000, 8);
  TT_CHECKF(fills_and_flushes(29) > big_before + 8, "a bin stays within its byte bound");
  /* Idle: the GC gives the 64-byte blocks back, round after round of other work. */
  for (int r = 0; r < 5000; r++) batch_rounds(1000 + (size_t)(r % 7) * 1000, 300, 1);
  refresh();
  size_t left = read_size("stats.arenas.4096.bins.3.curregs");
  printf("grow: 64-byte regions out of their slabs after idling: %zu\n", left);
  TT_CHECKF(left < 100, "the idle grown bin gave its blocks back (%zu left)", left);
}

/* ---- phases ---- */

static void scenario_phases(void) {
  TT_CHECKF(read_size("arenas.bin.3.size") == 64, "bin 3 is the 64-byte class");
  TT_CHECKF(read_size("arenas.bin.11.size") == 256, "bin 11 is the 256-byte class");
  batch_rounds(64, 1000, 8); /* grown to hold the batch */
  refresh();
  size_t held = read_size("stats.arenas.4096.bins.3.curregs");
  batch_rounds(256, 1000, 4); /* the next phase: its bin grows */
  refresh();
  size_t left = read_size("stats.arenas.4096.bins.3.curregs");
  printf("phases: 64-byte regions out of their slabs %zu in the 64-byte phase, %zu in the next\n", held, left);
  TT_CHECKF(held >= 1000, "the 64-byte phase's bin held its batch (%zu)", held);
  TT_CHECKF(left == 0, "the ended phase's grown bin gave its blocks back (%zu left)", left);
  /* Two sizes in turn, each phase a batch: both bins stay grown. */
  for (int r = 0; r < 10; r++) {
    batch_rounds(64, 1000, 1);
    batch_rounds(256, 1000, 1);
  }
  uint64_t settled = fills_and_flushes(3) + fills_and_flushes(11);
  for (int r = 0; r < 50; r++) {
    batch_rounds(64, 1000, 1);
    batch_rounds(256, 1000, 1);
  }
  uint64_t later = fills_and_flushes(3) + fills_and_flushes(11);
  printf("phases: alternating sizes, fills+flushes %llu after 10 rounds, %llu after 50 more\n",
         (unsigned long long)settled, (unsigned long long)later);
  TT_CHECKF(later == settled, "alternating phases keep their grown bins (%llu -> %llu)", (unsigned long long)settled,
            (unsigned long long)later);
}

/* ---- counters ---- */

#define NTHREADS 16
#define PER_THREAD 4000
static void *handoff[NTHREADS][PER_THREAD];

static void *alloc_worker(void *arg) {
  int t = (int)(intptr_t)arg;
  unsigned seed = (unsigned)t * 7919u + 1;
  for (int i = 0; i < PER_THREAD; i++) {
    seed = seed * 1103515245u + 12345u;
    size_t size = (seed >> 8) % 16 == 0 ? 20000 + (seed >> 4) % 100000 : 1 + (seed >> 8) % 2000;
    void *p = malloc(size);
    TT_CHECKF(p != NULL, "malloc");
    memset(p, t, size < 64 ? size : 64);
    if (i % 2) free(p); /* freed by its own thread */
    else handoff[t][i] = p; /* freed later by another thread */
  }
  return NULL;
}

static void *free_worker(void *arg) {
  int t = (int)(intptr_t)arg;
  int victim = (t + 1) % NTHREADS;
  for (int i = 0; i < PER_THREAD; i += 2) free(handoff[victim][i]);
  return NULL;
}

static void *nothing(void *arg) { return arg; }

static void scenario_counters(void) {
  /* Warm up what glibc allocates once and keeps: stdout's buffer, and the per-thread
   * structures it caches with reused thread stacks. */
  printf("counters:\n");
  pthread_t warm[NTHREADS];
  for (int t = 0; t < NTHREADS; t++) pthread_create(&warm[t], NULL, nothing, NULL);
  for (int t = 0; t < NTHREADS; t++) pthread_join(warm[t], NULL);
  refresh();
  size_t start = read_size("stats.allocated");
  pthread_t th[NTHREADS];
  for (int t = 0; t < NTHREADS; t++) pthread_create(&th[t], NULL, alloc_worker, (void *)(intptr_t)t);
  for (int t = 0; t < NTHREADS; t++) pthread_join(th[t], NULL);
  refresh();
  size_t during = read_size("stats.allocated");
  for (int t = 0; t < NTHREADS; t++) pthread_create(&th[t], NULL, free_worker, (void *)(intptr_t)t);
  for (int t = 0; t < NTHREADS; t++) pthread_join(th[t], NULL);
  refresh();
  size_t end = read_size("stats.allocated");
  printf("  stats.allocated %zu at start, %zu with blocks live, %zu after all threads exit\n", start, during,
         end);
  TT_CHECKF(during > start + (size_t)NTHREADS * PER_THREAD / 2, "live blocks are counted");
  TT_CHECKF(end == start, "allocated returns to its start: %zu vs %zu", end, start);
}

/* ---- locks ---- */

#define QUEUE 4096
static void *queue[QUEUE]; /* slots handed over with __atomic builtins */
static const long transfers = 2000000;

static void *producer(void *arg) {
  (void)arg;
  for (long i = 0; i < transfers; i++) {
    void *p = malloc(16 + (size_t)(i % 16) * 16);
    void *expected = NULL;
    while (!__atomic_compare_exchange_n(&queue[i % QUEUE], &expected, p, false, __ATOMIC_RELEASE, __ATOMIC_RELAXED))
      expected = NULL;
  }
  return NULL;
}

static void *consumer(void *arg) {
  (void)arg;
  for (long i = 0; i < transfers; i++) {
    void *p;
    while ((p = __atomic_exchange_n(&queue[i % QUEUE], NULL, __ATOMIC_ACQUIRE)) == NULL) {}
    free(p);
  }
  return NULL;
}

static void scenario_locks(void) {
  const long pairs = 4000000;
  for (long i = 0; i < 100000; i++) free(malloc(16 + (size_t)(i % 16) * 16)); /* warm */
  uint64_t before = total_locks();
  for (long i = 0; i < pairs; i++) {
    void *p = malloc(16 + (size_t)(i % 16) * 16);
    __asm__ volatile("" : : "r"(p) : "memory");
    free(p);
  }
  uint64_t single = total_locks() - before;
  before = total_locks();
  pthread_t a, b;
  pthread_create(&a, NULL, producer, NULL);
  pthread_create(&b, NULL, consumer, NULL);
  pthread_join(a, NULL);
  pthread_join(b, NULL);
  uint64_t cross = total_locks() - before;
  printf("locks per malloc/free pair: single thread %.5f (%llu over %ld pairs), producer/consumer %.4f (%llu over %ld)\n",
         (double)single / (double)pairs, (unsigned long long)single, pairs, (double)cross / (double)transfers,
         (unsigned long long)cross, transfers);
  TT_CHECKF((double)single / (double)pairs < 0.01, "single-thread loop takes locks");
  TT_CHECKF((double)cross / (double)transfers < 0.25, "remote frees must go back in batches");
}

/* The worker frees the block it was handed, then waits while main looks at the stats. */
static pthread_barrier_t handoff_barrier;

static void *handoff_worker(void *arg) {
  free(arg);
  pthread_barrier_wait(&handoff_barrier); /* freed */
  pthread_barrier_wait(&handoff_barrier); /* main has looked */
  return NULL;
}

static void scenario_handoff(void) {
  const char *ndalloc = "stats.arenas.4096.bins.1.ndalloc"; /* the 32 B class, all arenas */
  TT_CHECKF(pthread_barrier_init(&handoff_barrier, NULL, 2) == 0, "barrier");
  for (int round = 0; round < 20; round++) {
    void *given = malloc(24);
    refresh();
    uint64_t before = read_u64(ndalloc);
    pthread_t t;
    TT_CHECKF(pthread_create(&t, NULL, handoff_worker, given) == 0, "pthread_create");
    pthread_barrier_wait(&handoff_barrier);
    refresh();
    uint64_t after = read_u64(ndalloc);
    pthread_barrier_wait(&handoff_barrier);
    TT_CHECKF(pthread_join(t, NULL) == 0, "pthread_join");
    /* Cached, it would only reach its slab when the worker exits. */
    TT_CHECKF(after == before + 1, "round %d: the handed block is not back in its slab (%llu -> %llu)", round,
              (unsigned long long)before, (unsigned long long)after);
  }
}

/* Balance: the workers start on the first CPU's arena, then each runs on a CPU of its
 * own taking blocks above the thread cache's large limit (so every one comes from the
 * arena's extents, and no bin is ever refilled). While both share the arena, one of
 * them finds its extent lock held by the other and moves to its own CPU's arena. */
#define BALANCE_SECONDS 10.0
#define BALANCE_BLOCK ((size_t)320 << 10)
static int balance_cpu[2];
static unsigned balance_start[2];    /* the arena of each worker before the barrier */
static _Atomic unsigned balance_arena[2]; /* and as it goes */
static _Atomic int balance_stop;
static pthread_barrier_t balance_barrier;

static void pin_to(int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  TT_CHECKF(pthread_setaffinity_np(pthread_self(), sizeof(set), &set) == 0, "pin to CPU %d", cpu);
}

static unsigned thread_arena_index(void) {
  unsigned arena = 0;
  size_t len = sizeof(arena);
  TT_CHECKF(tessera_ctl("thread.arena", &arena, &len, NULL, 0) == 0, "read thread.arena");
  return arena;
}

static void *balance_worker(void *arg) {
  int me = (int)(intptr_t)arg;
  pin_to(balance_cpu[0]);
  free(malloc(BALANCE_BLOCK)); /* the first use binds the thread to CPU 0's arena */
  balance_start[me] = thread_arena_index();
  atomic_store(&balance_arena[me], balance_start[me]);
  pthread_barrier_wait(&balance_barrier);
  pin_to(balance_cpu[me]);
  for (unsigned i = 0; !atomic_load(&balance_stop); i++) {
    char *p = malloc(BALANCE_BLOCK);
    TT_CHECKF(p != NULL, "malloc");
    p[0] = p[BALANCE_BLOCK - 1] = (char)i;
    free(p);
    if (i % 64 == 0) atomic_store(&balance_arena[me], thread_arena_index());
  }
  return NULL;
}

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static void *touch_one_block(void *arg) {
  free(malloc(64));
  return arg;
}

/* Two CPUs this process may run on whose arenas differ; false when there are none. */
static unsigned narenas;
static bool two_cpus_two_arenas(void) {
  size_t len = sizeof(narenas);
  TT_CHECKF(tessera_ctl("arenas.narenas", &narenas, &len, NULL, 0) == 0, "arenas.narenas");
  cpu_set_t set;
  TT_CHECKF(sched_getaffinity(0, sizeof(set), &set) == 0, "sched_getaffinity");
  int found = 0;
  for (int cpu = 0; cpu < CPU_SETSIZE && found < 2 && narenas > 1; cpu++) {
    if (!CPU_ISSET(cpu, &set)) continue;
    if (found == 1 && (unsigned)cpu % narenas == (unsigned)balance_cpu[0] % narenas) continue;
    balance_cpu[found++] = cpu;
  }
  return found == 2;
}

static void scenario_balance(void) {
  if (!two_cpus_two_arenas()) {
    printf("threads balance: skipped (needs two CPUs with different arenas)\n");
    exit(77);
  }
  /* The first threads go to the arenas in turn; after them, a thread starts on the
   * arena of the CPU it runs on. */
  for (unsigned i = 0; i < narenas; i++) {
    pthread_t first;
    TT_CHECKF(pthread_create(&first, NULL, touch_one_block, NULL) == 0 && pthread_join(first, NULL) == 0,
              "a thread");
  }
  TT_CHECKF(pthread_barrier_init(&balance_barrier, NULL, 3) == 0, "barrier");
  pthread_t t[2];
  for (int i = 0; i < 2; i++)
    TT_CHECKF(pthread_create(&t[i], NULL, balance_worker, (void *)(intptr_t)i) == 0, "pthread_create");
  pthread_barrier_wait(&balance_barrier); /* both workers are on the first CPU's arena */
  TT_CHECKF(balance_start[0] == balance_start[1], "the workers start on one arena (%u, %u)", balance_start[0],
            balance_start[1]);
  double deadline = now_s() + BALANCE_SECONDS;
  while (!atomic_load(&balance_stop)) {
    struct timespec pause = {0, 1000000};
    nanosleep(&pause, NULL);
    if (now_s() > deadline) atomic_store(&balance_stop, 1);
    else if (atomic_load(&balance_arena[0]) != atomic_load(&balance_arena[1])) atomic_store(&balance_stop, 1);
  }
  for (int i = 0; i < 2; i++) TT_CHECKF(pthread_join(t[i], NULL) == 0, "pthread_join");
  unsigned a0 = atomic_load(&balance_arena[0]), a1 = atomic_load(&balance_arena[1]);
  printf("threads balance: CPUs %d and %d, arenas %u and %u\n", balance_cpu[0], balance_cpu[1], a0, a1);
  TT_CHECKF(a0 != a1, "two threads busy with large blocks on two CPUs stayed on arena %u for %.0f s", a0,
            BALANCE_SECONDS);
}

/* late: the blocks the late thread frees, its key, and the neighbour's release. */
#define LATE_BLOCKS 64
static void *late_blocks[LATE_BLOCKS];
static pthread_key_t late_key;
static atomic_bool neighbour_go;

/* Re-arms itself until the last round glibc runs, then frees: the thread's first calls. */
static void late_destructor(void *value) {
  uintptr_t round = (uintptr_t)value;
  if (round < PTHREAD_DESTRUCTOR_ITERATIONS) {
    pthread_setspecific(late_key, (void *)(round + 1));
    return;
  }
  for (int i = 0; i < LATE_BLOCKS; i++) free(late_blocks[i]);
}

static void *late_thread(void *arg) {
  pthread_setspecific(late_key, (void *)1);
  return arg;
}

static void *neighbour_thread(void *arg) {
  free(malloc(100)); /* registered before the late thread */
  while (!atomic_load(&neighbour_go)) sched_yield();
  free(malloc(200));
  return arg;
}

static void *short_thread(void *arg) {
  for (int i = 0; i < 100; i++) free(malloc(16 + (size_t)i * 8));
  return arg;
}

static void scenario_late(void) {
  TT_CHECKF(pthread_key_create(&late_key, late_destructor) == 0, "pthread_key_create");
  pthread_t neighbour, late;
  TT_CHECKF(pthread_create(&neighbour, NULL, neighbour_thread, NULL) == 0, "pthread_create");
  for (int i = 0; i < LATE_BLOCKS; i++) late_blocks[i] = malloc(64);
  /* A stack bigger than glibc's cache of stacks (40 MiB): unmapped once it is joined. */
  pthread_attr_t attr;
  TT_CHECKF(pthread_attr_init(&attr) == 0 && pthread_attr_setstacksize(&attr, (size_t)64 << 20) == 0, "attr");
  TT_CHECKF(pthread_create(&late, &attr, late_thread, NULL) == 0 && pthread_join(late, NULL) == 0, "late");
  pthread_attr_destroy(&attr);
  atomic_store(&neighbour_go, true);
  TT_CHECKF(pthread_join(neighbour, NULL) == 0, "pthread_join");
  for (int round = 0; round < 20; round++) {
    pthread_t t;
    TT_CHECKF(pthread_create(&t, NULL, short_thread, NULL) == 0 && pthread_join(t, NULL) == 0, "thread %d", round);
  }
  malloc_stats_print(NULL, NULL, "gmdablx"); /* walks the registry: the threads section */
}

int main(int argc, char **argv) {
  TT_CHECKF(argc == 2, "usage: threads_test gc|lowwater|budget|counters|locks|handoff|grow|phases|balance|late");
  if (strcmp(argv[1], "gc") == 0) scenario_gc();
  else if (strcmp(argv[1], "counters") == 0) scenario_counters();
  else if (strcmp(argv[1], "locks") == 0) scenario_locks();
  else if (strcmp(argv[1], "handoff") == 0) scenario_handoff();
  else if (strcmp(argv[1], "grow") == 0) scenario_grow();
  else if (strcmp(argv[1], "phases") == 0) scenario_phases();
  else if (strcmp(argv[1], "lowwater") == 0) scenario_lowwater();
  else if (strcmp(argv[1], "budget") == 0) scenario_budget();
  else if (strcmp(argv[1], "balance") == 0) scenario_balance();
  else if (strcmp(argv[1], "late") == 0) scenario_late();
  else TT_CHECKF(0, "unknown scenario %s", argv[1]);
  printf("threads %s: ok\n", argv[1]);
  return 0;
}
