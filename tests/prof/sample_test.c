/* SPDX-License-Identifier: MIT */
/* Sampling: the interval distribution, the unbiasing weight, the math without libm,
 * and the record/stack tables (counts by stack, free, realloc as free + alloc). */
#include "prof_math.h"
#include "prof_sample.h"
#include "unit.h"

#include <math.h>
#include <pthread.h>

static void check_math(void) {
  for (double x = 1e-300; x < 1e300; x *= 7.3) {
    double want = log(x), got = prof_log(x);
    CHECK(fabs(got - want) <= 1e-13 * fabs(want) + 1e-15, "log(%g): %.17g vs %.17g", x, got, want);
  }
  /* The draws' range, (0, 1], densely, and close to 1 (where ln x is near 0 and only a
   * relative error of the series itself shows). */
  for (double x = 1e-4; x <= 2.0; x += 1e-4) {
    double want = log(x), got = prof_log(x);
    CHECK(fabs(got - want) <= 1e-13 * fabs(want) + 1e-17, "log(%.17g): %.17g vs %.17g", x, got, want);
  }
  for (int k = 1; k <= 52; k++) {
    double x = 1.0 - ldexp(1.0, -k), want = log(x), got = prof_log(x);
    CHECK(fabs(got - want) <= 1e-13 * fabs(want), "log(1 - 2^-%d): %.17g vs %.17g", k, got, want);
  }
  for (double x = -740; x < 700; x += 0.37) {
    double want = exp(x), got = prof_exp(x);
    CHECK(fabs(got - want) <= 1e-13 * want, "exp(%g): %.17g vs %.17g", x, got, want);
  }
  for (double x = 1e-12; x < 50; x *= 1.9) {
    double want = -expm1(-x), got = prof_one_minus_exp_neg(x);
    CHECK(fabs(got - want) <= 1e-13 * want, "1-exp(-%g): %.17g vs %.17g", x, got, want);
  }
}

/* Draws are exponential with the configured mean: mean and standard deviation both
 * equal it (within 2% over 400000 draws: the standard error is 0.16%). */
static void check_intervals(void) {
  prof_config_t cfg = PROF_CONFIG_DEFAULT;
  prof_sample_init(&cfg);
  CHECK(prof_sample_period() == 524288, "default period %llu", (unsigned long long)prof_sample_period());
  prof_thread_t t = {0};
  const unsigned n = 400000;
  double sum = 0, sum2 = 0, below_mean = 0;
  for (unsigned i = 0; i < n; i++) {
    double v = (double)prof_bytes_until_sample(&t);
    CHECK(v >= 1 && (int64_t)v == t.bytes_until_sample, "draw %g", v);
    sum += v;
    sum2 += v * v;
    below_mean += v < 524288;
  }
  double mean = sum / n, sd = sqrt(sum2 / n - mean * mean);
  CHECK(fabs(mean / 524288 - 1) < 0.02, "mean %g", mean);
  CHECK(fabs(sd / 524288 - 1) < 0.03, "sd %g", sd);
  /* P(X < mean) = 1 - 1/e for an exponential */
  CHECK(fabs(below_mean / n - (1 - exp(-1))) < 0.01, "P(below mean) %g", below_mean / n);
}

static void check_weight(void) {
  uint64_t mean = 524288;
  CHECK(fabs(prof_sample_weight(16, mean) - (mean / 16.0 + 0.5)) < 0.01, "small block weight %g",
        prof_sample_weight(16, mean));
  CHECK(fabs(prof_sample_weight(64 << 20, mean) - 1) < 1e-12, "huge block weight");
  double w = prof_sample_weight(mean, mean);
  CHECK(fabs(w - 1 / (1 - exp(-1))) < 1e-12, "weight at the mean %g", w);
}

/* The whole estimator: simulate allocations of mixed sizes through the per-thread
 * countdown and compare the estimated bytes and objects with the truth, within 5
 * standard deviations of the estimate. An allocation of s bytes is sampled with
 * probability p and then counts w = 1/p times: the variance it adds is w - 1 objects
 * (s^2 (w - 1) bytes^2). The small blocks, sampled rarely and weighing thousands each,
 * make the object count's deviation about 2%: a fixed 5% bound failed one run in 30. */
static void check_unbiased(void) {
  prof_config_t cfg = PROF_CONFIG_DEFAULT;
  cfg.lg_sample = 16;
  prof_sample_init(&cfg);
  prof_thread_t t = {0};
  double est_bytes = 0, est_objects = 0, true_bytes = 0, true_objects = 0, var_bytes = 0, var_objects = 0;
  static const size_t sizes[] = {16, 48, 256, 4096, 65536, 1 << 20};
  for (unsigned i = 0; i < 3000000; i++) {
    size_t s = sizes[unit_rand() % 6];
    if (s == (1 << 20) && unit_rand() % 64) s = 32; /* few huge blocks */
    true_bytes += (double)s;
    true_objects += 1;
    double w = prof_sample_weight(s, prof_sample_period());
    var_objects += w - 1;
    var_bytes += (double)s * (double)s * (w - 1);
    if (prof_sample_due(&t, s)) {
      prof_bytes_until_sample(&t);
      est_bytes += w * (double)s;
      est_objects += w;
    }
  }
  CHECK(fabs(est_bytes - true_bytes) < 5 * sqrt(var_bytes), "bytes: estimate %g, true %g, sd %g", est_bytes,
        true_bytes, sqrt(var_bytes));
  CHECK(fabs(est_objects - true_objects) < 5 * sqrt(var_objects), "objects: estimate %g, true %g, sd %g",
        est_objects, true_objects, sqrt(var_objects));
  CHECK(sqrt(var_objects) < 0.03 * true_objects && sqrt(var_bytes) < 0.01 * true_bytes,
        "the deviations allowed stay small: %g objects, %g bytes", sqrt(var_objects), sqrt(var_bytes));
}

static const prof_snapshot_entry_t *entry_for(const prof_snapshot_t *s, uintptr_t pc0) {
  for (unsigned i = 0; i < s->count; i++)
    if (s->entries[i].stack->depth > 0 && s->entries[i].stack->pcs[0] == pc0) return &s->entries[i];
  return NULL;
}

static void check_tables(void) {
  prof_config_t cfg = PROF_CONFIG_DEFAULT;
  prof_sample_init(&cfg);
  uintptr_t a[3] = {0x1000, 0x2000, 0x3000}, b[2] = {0x5000, 0x6000};
  char blocks[100];
  for (int i = 0; i < 100; i++) CHECK(prof_record_alloc(&blocks[i], 4096, i % 2 ? a : b, i % 2 ? 3 : 2), "record %d", i);
  char other;
  CHECK(!prof_record_free(&other), "unknown pointer is not sampled");
  for (int i = 0; i < 100; i += 4) CHECK(prof_record_free(&blocks[i]), "free %d", i); /* 25 of b's 50 */
  CHECK(!prof_record_free(&blocks[0]), "second free of a record");
  prof_snapshot_t s;
  CHECK(prof_snapshot_take(&s), "snapshot");
  const prof_snapshot_entry_t *ea = entry_for(&s, 0x1000), *eb = entry_for(&s, 0x5000);
  CHECK(ea && eb, "both stacks present");
  CHECK(ea->stack->depth == 3 && eb->stack->depth == 2, "depths");
  CHECK(ea->counts.live_objects == 50 && ea->counts.alloc_objects == 50, "a counts %llu",
        (unsigned long long)ea->counts.live_objects);
  CHECK(eb->counts.live_objects == 25 && eb->counts.alloc_objects == 50 && eb->counts.live_bytes == 25 * 4096,
        "b counts %llu", (unsigned long long)eb->counts.live_objects);
  double w = prof_sample_weight(4096, 524288);
  CHECK(fabs(eb->counts.live_est_bytes - 25 * 4096 * w) < 1, "b estimate %g", eb->counts.live_est_bytes);
  prof_snapshot_sort_live(&s);
  for (unsigned i = 1; i < s.count; i++)
    CHECK(s.entries[i - 1].counts.live_est_bytes >= s.entries[i].counts.live_est_bytes, "sorted at %u", i);
  prof_snapshot_release(&s);
  for (int i = 0; i < 100; i++) prof_record_free(&blocks[i]);
  CHECK(prof_snapshot_take(&s), "snapshot");
  CHECK(s.total.live_objects == 0 && s.total.live_est_bytes == 0, "all freed");
  prof_snapshot_release(&s);
}

/* Threads record and free at once while snapshots are taken: the records spread over
 * the shards, and every snapshot (all shard locks held) counts each live sample once. */
#define THREADS 4
#define PER_THREAD 3000
static char thread_blocks[THREADS][PER_THREAD];
static const uintptr_t shared_stack[2] = {0x7000, 0x8000};
static _Atomic int threads_done;

static void *record_and_free(void *arg) {
  char *blocks = arg;
  for (int i = 0; i < PER_THREAD; i++) prof_record_alloc(&blocks[i], 64, shared_stack, 2);
  for (int i = 0; i < PER_THREAD; i += 2) prof_record_free(&blocks[i]);
  atomic_fetch_add(&threads_done, 1);
  return NULL;
}

static void check_threads(void) {
  prof_sample_reset(19);
  pthread_t th[THREADS];
  for (int t = 0; t < THREADS; t++) pthread_create(&th[t], NULL, record_and_free, thread_blocks[t]);
  unsigned snapshots = 0;
  while (atomic_load(&threads_done) < THREADS || snapshots == 0) {
    prof_snapshot_t s;
    CHECK(prof_snapshot_take(&s), "snapshot while recording");
    const prof_snapshot_entry_t *e = entry_for(&s, 0x7000);
    if (e) CHECK(e->counts.live_objects <= e->counts.alloc_objects && e->counts.alloc_objects <= THREADS * PER_THREAD,
                 "a consistent cut: live %llu, allocated %llu", (unsigned long long)e->counts.live_objects,
                 (unsigned long long)e->counts.alloc_objects);
    prof_snapshot_release(&s);
    snapshots++;
  }
  for (int t = 0; t < THREADS; t++) pthread_join(th[t], NULL);
  prof_sample_fork_prepare(); /* every lock taken, then every lock given back */
  prof_sample_fork_parent();
  prof_snapshot_t s;
  CHECK(prof_snapshot_take(&s), "snapshot after the threads");
  const prof_snapshot_entry_t *e = entry_for(&s, 0x7000);
  CHECK(e != NULL, "the shared stack is interned once and found");
  unsigned found = 0;
  for (unsigned i = 0; i < s.count; i++) found += s.entries[i].stack->pcs[0] == 0x7000;
  CHECK(found == 1, "one entry for the shared stack (%u)", found);
  CHECK(e && e->counts.live_objects == THREADS * PER_THREAD / 2 && e->counts.alloc_objects == THREADS * PER_THREAD,
        "every shard's counts added once: live %llu, allocated %llu", e ? (unsigned long long)e->counts.live_objects : 0,
        e ? (unsigned long long)e->counts.alloc_objects : 0);
  CHECK(s.total.live_bytes == (uint64_t)THREADS * PER_THREAD / 2 * 64, "total live bytes %llu",
        (unsigned long long)s.total.live_bytes);
  prof_snapshot_release(&s);
  for (int t = 0; t < THREADS; t++)
    for (int i = 1; i < PER_THREAD; i += 2) CHECK(prof_record_free(&thread_blocks[t][i]), "free %d/%d", t, i);
  CHECK(prof_snapshot_take(&s), "snapshot");
  CHECK(s.total.live_objects == 0, "all freed: %llu", (unsigned long long)s.total.live_objects);
  prof_snapshot_release(&s);
}

int main(void) {
  check_math();
  check_intervals();
  check_weight();
  check_unbiased();
  check_tables();
  check_threads();
  UNIT_DONE("prof.sample");
}
