/* SPDX-License-Identifier: MIT */
/* Server threads that come and go (larson-like).
 *
 * `threads` threads each own an array of `slots` blocks of uniform random size in
 * [`min`, `max`]. A thread replaces `gen` random blocks (free one, allocate a new one),
 * then starts a successor thread, hands it the array and exits: the successor goes on
 * freeing blocks its predecessor allocated. A thread's lifetime is short and every
 * generation frees memory another (now dead) thread allocated, the pattern of a server
 * that serves each connection on a fresh thread. Total steps `ops` are fixed.
 *
 *   larson threads=4 ops=20m slots=1000 min=8 max=1000 gen=20000 limit=60
 */
#include <pthread.h>
#include <stdatomic.h>

#include "common.h"

static long long slots_per_thread, min_size, max_size, steps_per_gen;
static atomic_llong steps_left;
static atomic_int timed_out;
static double deadline;
static pthread_mutex_t done_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t done_cond = PTHREAD_COND_INITIALIZER;
static int lineages_done;

typedef struct {
  unsigned char **slot;
  uint64_t seed;
  uint64_t checksum;
} lineage;

static void lineage_ends(void) {
  pthread_mutex_lock(&done_lock);
  lineages_done++;
  pthread_cond_signal(&done_cond);
  pthread_mutex_unlock(&done_lock);
}

/* Starts a detached thread running the next generation of a lineage. */
static void start_generation(lineage *l);

static void *generation(void *arg) {
  lineage *l = arg;
  bench_rng rng;
  rng_seed(&rng, l->seed++);
  long long n = atomic_fetch_sub(&steps_left, steps_per_gen);
  if (n > 0 && bench_now() > deadline) {
    atomic_store(&timed_out, 1);
    n = 0;
  }
  if (n <= 0) {
    lineage_ends();
    return NULL;
  }
  if (n > steps_per_gen) n = steps_per_gen;
  for (long long s = 0; s < n; s++) {
    long long i = (long long)(rng_next(&rng) % (uint64_t)slots_per_thread);
    if (l->slot[i]) l->checksum += l->slot[i][0];
    free(l->slot[i]);
    size_t size = (size_t)rng_range(&rng, (uint64_t)min_size, (uint64_t)max_size);
    l->slot[i] = bench_check(malloc(size), size);
    l->slot[i][0] = (unsigned char)s;
  }
  start_generation(l); /* the successor inherits the array; this thread ends */
  return NULL;
}

static void start_generation(lineage *l) {
  pthread_t t;
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
  if (pthread_create(&t, &attr, generation, l) != 0) {
    fprintf(stderr, "larson: pthread_create failed\n");
    exit(2);
  }
  pthread_attr_destroy(&attr);
}

int main(int argc, char **argv) {
  int threads = (int)arg_long(argc, argv, "threads", 4);
  long long ops = arg_long(argc, argv, "ops", 20000000);
  slots_per_thread = arg_long(argc, argv, "slots", 1000);
  min_size = arg_long(argc, argv, "min", 8);
  max_size = arg_long(argc, argv, "max", 1000);
  steps_per_gen = arg_long(argc, argv, "gen", 20000);
  deadline = bench_now() + arg_double(argc, argv, "limit", 60);
  if (threads < 1 || threads > 256 || slots_per_thread < 1 || min_size < 1 ||
      max_size < min_size || steps_per_gen < 1) {
    fprintf(stderr, "larson: need 1 <= threads <= 256, slots, gen >= 1, 1 <= min <= max\n");
    return 2;
  }
  atomic_store(&steps_left, ops);
  static lineage l[256];
  double t0 = bench_now();
  for (int i = 0; i < threads; i++) {
    l[i] = (lineage){.slot = bench_check(calloc((size_t)slots_per_thread, sizeof(void *)), 1),
                     .seed = (uint64_t)i * 1000003u};
    start_generation(&l[i]);
  }
  pthread_mutex_lock(&done_lock);
  while (lineages_done < threads) pthread_cond_wait(&done_cond, &done_lock);
  pthread_mutex_unlock(&done_lock);
  uint64_t sum = 0;
  for (int i = 0; i < threads; i++) {
    sum += l[i].checksum;
    for (long long j = 0; j < slots_per_thread; j++) free(l[i].slot[j]);
    free(l[i].slot);
  }
  double dt = bench_now() - t0;
  long long done = ops - (atomic_load(&steps_left) > 0 ? atomic_load(&steps_left) : 0);
  int to = atomic_load(&timed_out);
  printf("larson: %d lineages, %lld steps in %.3f s%s\n", threads, done, dt, to ? " TIMED OUT" : "");
  bench_result("ops_per_s=%.0f seconds=%.4f checksum=%llu timeout=%d", (double)done / dt, dt,
               (unsigned long long)sum, to);
  return 0;
}
