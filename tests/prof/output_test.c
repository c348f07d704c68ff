/* SPDX-License-Identifier: MIT */
/* Writes every output file for a known workload: hot() allocates 64 MiB and cold()
 * 8 MiB (in 4 KiB blocks, fake addresses: nothing is really allocated) through the
 * sampler with a 16 KiB mean interval, and everything stays live. Then a dump
 * (<prefix>.<pid>.0.u.heap / .pb.gz / .summary.txt), a leak report and a timeline.
 * check_output.sh, check_pprof.sh and check_jeprof.sh read them.
 * Usage: output_test <scratch directory> */
#include "prof_dump.h"
#include "prof_sample.h"
#include "os.h"
#include "prof_timeline.h"
#include "unit.h"

#include <string.h>
#include <unistd.h>

static prof_thread_t thread_state;
static uintptr_t next_fake = 0x100000000000ull;
static unsigned sampled;

/* Stands for malloc: the lead's skip of 1 leaves out this frame. */
__attribute__((noinline)) static void fake_malloc(size_t size) {
  void *p = (void *)next_fake;
  next_fake += size;
  if (prof_sample_due(&thread_state, size)) sampled += prof_sample_alloc(&thread_state, p, size, 1);
  __asm__ volatile("" ::: "memory");
}

__attribute__((noinline)) void hot(void);
__attribute__((noinline)) void cold(void);

void hot(void) {
  for (int i = 0; i < (64 << 20) / 4096; i++) fake_malloc(4096);
  __asm__ volatile("" ::: "memory");
}

void cold(void) {
  for (int i = 0; i < (8 << 20) / 4096; i++) fake_malloc(4096);
  __asm__ volatile("" ::: "memory");
}

int main(int argc, char **argv) {
  CHECK(argc == 2, "usage: output_test <scratch directory>");
  prof_config_t cfg = PROF_CONFIG_DEFAULT;
  cfg.lg_sample = 14;
  prof_sample_init(&cfg);
  char prefix[512], path[1024];
  snprintf(prefix, sizeof(prefix), "%s/prof", argv[1]);

  snprintf(path, sizeof(path), "%s/timeline.jsonl", argv[1]);
  CHECK(prof_timeline_open(path), "timeline %s", path);
  prof_timeline_counters_t c = {0};
  for (int step = 0; step < 5; step++) {
    c.allocated = (uint64_t)step * (16 << 20);
    c.active = c.allocated + (1 << 20);
    c.resident = c.active + (2 << 20);
    c.mapped = c.resident + (8 << 20);
    c.metadata = 1 << 18;
    prof_timeline_append(&c);
    if (step == 1) hot();
    if (step == 3) cold();
  }
  prof_timeline_close();
  CHECK(sampled > 3000, "sampled %u", sampled);

  CHECK(prof_dump(prefix, 'u'), "dump");
  snprintf(path, sizeof(path), "%s/leaks.txt", argv[1]);
  int fd = os_open_write(path, false);
  CHECK(fd >= 0 && prof_leak_report(fd, 10), "leak report");
  os_close(fd);
  printf("pid %d sampled %u\n", (int)getpid(), sampled);
  return 0;
}
