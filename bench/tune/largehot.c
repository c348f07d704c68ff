/* SPDX-License-Identifier: MIT */
/*
 * Rule "hot large sizes that miss the thread cache": a loop that allocates a 24 KiB
 * buffer, fills its first cache lines and frees it. Above tcache_max every one of these
 * goes to the arena (extent lock, extent split and merge).
 *
 *   largehot [iterations=3000000] [size=24576]
 * Run with TESSERA_CONF=tcache_max:16384 to build the problem.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv) {
  unsigned long iterations = argc > 1 ? strtoul(argv[1], NULL, 10) : 3000000;
  size_t size = argc > 2 ? strtoul(argv[2], NULL, 10) : 24576;
  if (iterations == 0 || size < 256 || size > (64u << 20)) {
    fprintf(stderr, "largehot: usage: largehot [iterations] [size 256-67108864]\n");
    return 2;
  }
  unsigned long sum = 0;
  for (unsigned long i = 0; i < iterations; i++) {
    unsigned char *p = malloc(size);
    if (p == NULL) abort();
    memset(p, (int)i, 256);
    sum += p[(i * 64) % 256];
    free(p);
  }
  return sum == 1 ? 1 : 0;
}
