/* SPDX-License-Identifier: MIT */
/* prof_dlopen_race's library, built twice (RACE_LIB_B changes its code and frames), so
 * that one may be mapped where the other was: its blocks are sampled with its frames on
 * the stack, while the library comes and goes. */
#include <stdlib.h>
#include <string.h>

#ifdef RACE_LIB_B
#define PAD 296
#else
#define PAD 40
#endif

__attribute__((noinline)) static unsigned race_inner(unsigned n) {
  volatile char pad[PAD];
  memset((char *)pad, (int)n, sizeof(pad));
  unsigned sum = 0;
  for (unsigned i = 0; i < n; i++) {
    unsigned char *p = malloc(256 + (i & 7) * 32);
    if (p == NULL) abort();
    p[0] = (unsigned char)i;
    sum += p[0];
    free(p);
  }
  return sum + pad[7];
}

unsigned race_work(unsigned n);

__attribute__((noinline)) unsigned race_work(unsigned n) {
  volatile unsigned r = race_inner(n); /* a volatile keeps it a real call */
  return r * 3u + n;
}
