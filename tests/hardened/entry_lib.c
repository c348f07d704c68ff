/* SPDX-License-Identifier: MIT */
/* hardened.entry's library, loaded with dlopen after the program's PLT slots were
 * rewritten: its own slots of malloc, calloc, realloc and free keep the default entries, which
 * must work as before (a block's bytes kept, calloc's zeroed, blocks reused). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int entry_lib_work(void);

int entry_lib_work(void) {
  enum { N = 4096 };
  static unsigned char *kept[N];
  for (int round = 0; round < 4; round++) {
    for (int i = 0; i < N; i++) {
      size_t size = 1 + (size_t)(i * 37 % 3000);
      kept[i] = i % 3 == 0 ? calloc(1, size) : malloc(size);
      if (kept[i] == NULL) return 1;
      if (i % 3 == 0)
        for (size_t k = 0; k < size; k++)
          if (kept[i][k] != 0) return 2;
      memset(kept[i], (int)(i & 0xff), size);
      if (i % 5 == 0) { /* grown through realloc: the bytes kept */
        unsigned char *q = realloc(kept[i], size + 500);
        if (q == NULL || q[size - 1] != (unsigned char)(i & 0xff)) return 4;
        kept[i] = q;
      }
    }
    for (int i = 0; i < N; i++) {
      size_t size = 1 + (size_t)(i * 37 % 3000);
      for (size_t k = 0; k < size; k += 61)
        if (kept[i][k] != (unsigned char)(i & 0xff)) return 3;
      free(kept[i]);
    }
  }
  return 0;
}
