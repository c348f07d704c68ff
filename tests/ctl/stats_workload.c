/* SPDX-License-Identifier: MIT */
/*
 * The workload of ctl.stats_json: holds known blocks, then writes to stdout one line
 * "workload <baseline> <requested> <usable> <ctl allocated>" and the JSON statistics
 * (tessera_stats_print with "J"). check_stats.py compares the two.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <malloc.h>

#include "tessera.h"

static void write_out(void *opaque, const char *text) {
  (void)opaque;
  size_t len = strlen(text);
  while (len > 0) {
    ssize_t w = write(1, text, len);
    if (w <= 0) exit(3);
    text += w;
    len -= (size_t)w;
  }
}

static size_t allocated_now(void) {
  uint64_t epoch = 1;
  size_t v, len = sizeof(v);
  if (tessera_ctl("epoch", NULL, NULL, &epoch, sizeof(epoch)) != 0) exit(4);
  if (tessera_ctl("stats.allocated", &v, &len, NULL, 0) != 0) exit(5);
  return v;
}

int main(void) {
  static const size_t sizes[] = {100, 3000, 100000};
  static const unsigned counts[] = {1000, 200, 20};
  static void *blocks[1220];
  char line[160];
  size_t requested = 0, usable = 0;
  unsigned n = 0;
  free(malloc(1));
  size_t baseline = allocated_now();
  for (unsigned k = 0; k < 3; k++) {
    for (unsigned i = 0; i < counts[k]; i++) {
      blocks[n] = malloc(sizes[k]);
      if (blocks[n] == NULL) return 2;
      memset(blocks[n], 1, sizes[k]);
      requested += sizes[k];
      usable += malloc_usable_size(blocks[n]);
      n++;
    }
  }
  size_t after = allocated_now();
  int len = snprintf(line, sizeof(line), "workload %zu %zu %zu %zu\n", baseline, requested, usable, after);
  if (write(1, line, (size_t)len) != len) return 6;
  tessera_stats_print(write_out, NULL, "J");
  for (unsigned i = 0; i < n; i++) free(blocks[i]);
  return 0;
}
