/* SPDX-License-Identifier: MIT */
#include "decay.h"

#include <string.h>

#include "config.h"

/* h(k) for the backlog slot k (0 = oldest, DECAY_NEPOCHS-1 = the epoch just ended),
 * in 1/2^24 units: smoothstep(x) = 3x^2 - 2x^3 with x = (k + 1) / DECAY_NEPOCHS. */
#define H_ONE ((uint64_t)1 << 24)
static uint32_t weight[DECAY_NEPOCHS];

static void weights_init(void) {
  if (weight[DECAY_NEPOCHS - 1] != 0) return;
  for (unsigned k = 0; k < DECAY_NEPOCHS; k++) {
    double x = (double)(k + 1) / DECAY_NEPOCHS;
    weight[k] = (uint32_t)((3 * x * x - 2 * x * x * x) * (double)H_ONE);
  }
}

static uint64_t epoch_ns(ssize_t ms) {
  uint64_t ns = (uint64_t)ms * 1000000u / DECAY_NEPOCHS;
  return ns ? ns : 1;
}

void decay_start(decay_t *d, ssize_t ms, uint64_t now_ns) {
  tessera_assert(d->added == 0 && d->backlog_weighted == 0);
  weights_init();
  d->epoch_start_ns = now_ns;
  d->ms = ms;
}

/* Starts d over with decay time ms: nothing in its backlog. */
static void decay_restart(decay_t *d, ssize_t ms, uint64_t now_ns) {
  memset(d->backlog, 0, sizeof(d->backlog));
  d->backlog_weighted = 0;
  d->added = 0;
  decay_start(d, ms, now_ns);
}

void decay_advance(decay_t *d, ssize_t ms, uint64_t now_ns, size_t current_pages) {
  if (ms != d->ms) {
    decay_restart(d, ms, now_ns);
    d->added = current_pages; /* what is free now decays over the new time */
    return;
  }
  if (ms <= 0) return;
  uint64_t len = epoch_ns(ms);
  if (now_ns < d->epoch_start_ns + len) return;
  uint64_t n = (now_ns - d->epoch_start_ns) / len;
  if (n >= DECAY_NEPOCHS) {
    memset(d->backlog, 0, sizeof(d->backlog));
  } else {
    memmove(d->backlog, d->backlog + n, (DECAY_NEPOCHS - n) * sizeof(d->backlog[0]));
    memset(d->backlog + DECAY_NEPOCHS - n, 0, n * sizeof(d->backlog[0]));
  }
  /* The pages added during the epoch that ended first are n epochs old now. */
  tessera_assert(n >= 1);
  if (n <= DECAY_NEPOCHS) d->backlog[DECAY_NEPOCHS - n] += d->added;
  d->added = 0;
  d->epoch_start_ns += n * len;
  /* Summed once per epoch here, not on every call of decay_limit (each free that
   * reaches an arena asks for the limit). */
  uint64_t sum = 0;
  for (unsigned k = 0; k < DECAY_NEPOCHS; k++) sum += (uint64_t)d->backlog[k] * weight[k];
  d->backlog_weighted = sum;
}

size_t decay_limit(const decay_t *d) {
  if (d->ms < 0) return SIZE_MAX;
  if (d->ms == 0) return 0;
  return (size_t)(d->backlog_weighted >> 24) + d->added;
}
