/* SPDX-License-Identifier: MIT */
/*
 * stress.arena_sharing: memory freed in one arena serves another.
 *
 * Arenas are per CPU; an arena about to touch new pages first borrows another arena's
 * resident free extents or stashed empty slabs (src/extent.c, src/stash.c). Phases of
 * threads pinned to alternating CPUs (so to different arenas on a machine with two or
 * more CPUs) each allocate `mib` MiB of one block size, check them, and free them; the
 * next phase runs on the other CPU with another size, small (slabs) or large (extents).
 * Meanwhile a pair of threads, one per CPU, allocates and frees a random mix and hands
 * blocks to each other, so that borrowing runs against concurrent frees, refills and
 * flushes in both arenas. Every block carries a pattern checked before it is freed.
 *
 * Asserts: every pattern intact; the resident memory with a phase's blocks all live,
 * at its highest over the phases, stays within 1.6 x a phase's bytes + 24 MiB (the other
 * arena's lock is only tried, so some phases touch new pages; without sharing, 48 MiB
 * phases peaked at 157-201 MiB, with it at 67-68).
 *
 * usage: arena_sharing [mib [phases]]
 */
#include "tt.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <string.h>
#include <dlfcn.h>
#include <unistd.h>

static size_t phase_bytes;
static size_t resident_bytes(void);
static size_t resident_max; /* written by one phase thread at a time */
static const size_t phase_sizes[] = {1000, 20000, 64, 100000, 4368, 300};

static void pin_to(int cpu) {
  long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(ncpu > 0 ? cpu % ncpu : 0, &set);
  sched_setaffinity(0, sizeof set, &set); /* best effort: a test machine may forbid it */
}

static void fill(unsigned char *p, size_t size, unsigned seed) {
  size_t step = size < 4096 ? 1 : 509; /* large blocks: a byte per stride, every page */
  for (size_t i = 0; i < size; i += step) p[i] = (unsigned char)(seed + i * 7);
  p[size - 1] = (unsigned char)seed;
}

static void check(const unsigned char *p, size_t size, unsigned seed) {
  size_t step = size < 4096 ? 1 : 509;
  for (size_t i = 0; i + 1 < size; i += step)
    TT_CHECKF(p[i] == (unsigned char)(seed + i * 7), "block %p of %zu bytes, byte %zu corrupted", (const void *)p, size, i);
  TT_CHECKF(p[size - 1] == (unsigned char)seed, "block %p of %zu bytes, last byte corrupted", (const void *)p, size);
}

typedef struct {
  int cpu;
  size_t size;
} phase_arg;

static void *phase(void *arg) {
  phase_arg *pa = arg;
  pin_to(pa->cpu);
  size_t n = phase_bytes / pa->size;
  unsigned char **blocks = malloc(n * sizeof *blocks);
  TT_CHECK(blocks != NULL);
  for (size_t i = 0; i < n; i++) {
    blocks[i] = malloc(pa->size);
    TT_CHECK(blocks[i] != NULL);
    fill(blocks[i], pa->size, (unsigned)i);
  }
  size_t resident = resident_bytes();
  if (resident > resident_max) resident_max = resident;
  for (size_t i = 0; i < n; i++) {
    check(blocks[i], pa->size, (unsigned)i);
    free(blocks[i]);
  }
  free(blocks);
  return NULL;
}

/* The concurrent pair: each thread keeps a few hundred blocks of random sizes and puts
 * every eighth block it would free into a shared slot for the other thread to free.
 * A mixed block starts with its size; the pattern (seeded by the size) follows. */
#define MIX_SLOTS 256
static _Atomic(unsigned char *) exchange[2];
static atomic_bool mix_stop;

static size_t mix_size(uint64_t *rng) {
  *rng = *rng * 6364136223846793005ull + 1442695040888963407ull;
  unsigned r = (unsigned)(*rng >> 33);
  if (r % 64 == 0) return 16384 + r % (512 << 10); /* large now and then */
  return 16 + r % 6000;
}

static unsigned char *mix_new(size_t size) {
  unsigned char *p = malloc(size);
  TT_CHECK(p != NULL);
  memcpy(p, &size, sizeof size);
  fill(p + sizeof size, size - sizeof size, (unsigned)size);
  return p;
}

static void mix_free(unsigned char *p) {
  size_t size;
  memcpy(&size, p, sizeof size);
  check(p + sizeof size, size - sizeof size, (unsigned)size);
  free(p);
}

static void *mix(void *arg) {
  int me = (int)(intptr_t)arg;
  pin_to(me);
  uint64_t rng = 12345 + (uint64_t)me;
  unsigned char *slot[MIX_SLOTS] = {0};
  for (unsigned long step = 0; !atomic_load(&mix_stop); step++) {
    unsigned i = (unsigned)(step * 2654435761u) % MIX_SLOTS;
    unsigned char *expected = NULL;
    if (slot[i] != NULL && !(step % 8 == 0 && atomic_compare_exchange_strong(&exchange[me], &expected, slot[i])))
      mix_free(slot[i]);
    slot[i] = mix_new(mix_size(&rng));
    unsigned char *theirs = atomic_exchange(&exchange[1 - me], NULL);
    if (theirs != NULL) mix_free(theirs);
  }
  for (unsigned i = 0; i < MIX_SLOTS; i++)
    if (slot[i] != NULL) mix_free(slot[i]);
  return NULL;
}

/* tessera's stats.resident (looked up at run time: the test also runs preloaded). */
static size_t resident_bytes(void) {
  int (*ctl)(const char *, void *, size_t *, void *, size_t) =
      (int (*)(const char *, void *, size_t *, void *, size_t))dlsym(RTLD_DEFAULT, "tessera_ctl");
  TT_CHECK(ctl != NULL);
  uint64_t epoch = 1;
  TT_CHECK(ctl("epoch", NULL, NULL, &epoch, sizeof epoch) == 0);
  size_t resident = 0, len = sizeof resident;
  TT_CHECK(ctl("stats.resident", &resident, &len, NULL, 0) == 0);
  return resident;
}

int main(int argc, char **argv) {
  size_t mib = argc > 1 ? strtoul(argv[1], NULL, 10) : 48;
  int phases = argc > 2 ? atoi(argv[2]) : 6;
  phase_bytes = mib << 20;
  pthread_t mixers[2];
  for (int t = 0; t < 2; t++) TT_CHECK(pthread_create(&mixers[t], NULL, mix, (void *)(intptr_t)t) == 0);
  for (int k = 0; k < phases; k++) {
    phase_arg pa = {k % 2, phase_sizes[k % (int)(sizeof phase_sizes / sizeof phase_sizes[0])]};
    pthread_t t;
    TT_CHECK(pthread_create(&t, NULL, phase, &pa) == 0);
    TT_CHECK(pthread_join(t, NULL) == 0);
  }
  atomic_store(&mix_stop, true);
  for (int t = 0; t < 2; t++) TT_CHECK(pthread_join(mixers[t], NULL) == 0);
  for (int t = 0; t < 2; t++) {
    unsigned char *left = atomic_exchange(&exchange[t], NULL);
    if (left != NULL) mix_free(left);
  }
  size_t bound = phase_bytes + phase_bytes * 3 / 5 + ((size_t)24 << 20);
  printf("arena_sharing: %d phases of %zu MiB, resident at most %zu MiB with a phase live (bound %zu MiB)\n",
         phases, mib, resident_max >> 20, bound >> 20);
  TT_CHECKF(resident_max <= bound, "resident %zu MiB with a phase of %zu MiB live: freed memory was not shared",
            resident_max >> 20, mib);
  return 0;
}
