/* SPDX-License-Identifier: MIT */
/* The clock (os_now_ns, read through the vDSO's function where there is one): it is the
 * monotonic clock, so every reading lies between two readings of libc's clock_gettime
 * taken around it, and it never goes back. */
#include <time.h>

#include "os.h"
#include "unit.h"

static uint64_t libc_now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

int main(void) {
  uint64_t last = 0;
  for (int i = 0; i < 100000; i++) {
    uint64_t before = libc_now_ns(), now = os_now_ns(), after = libc_now_ns();
    CHECK(before <= now && now <= after, "reading %d: %llu not within [%llu, %llu]", i, (unsigned long long)now,
          (unsigned long long)before, (unsigned long long)after);
    CHECK(now >= last, "reading %d went back", i);
    last = now;
  }
  printf("os_clock: ok\n");
  return 0;
}
