/* SPDX-License-Identifier: MIT */
/*
 * hardened.cxx_entries: which entries C++'s operator new and delete reach (src/cxx.c,
 * src/got_patch.h). Written in C, calling the operators by their mangled names, as a
 * C++ program's calls do (through the program's PLT slots).
 *
 *   cxx_entries EXPECT   allocates and frees blocks of many sizes through new, new[],
 *                        delete, delete[] and the sized deletes (so that the library
 *                        is up and has taken its general path), then checks the
 *                        program's PLT slots of the six: with EXPECT "hardened", each
 *                        holds another address than the function's own (an entry of
 *                        hardened mode); with "default", the function's own. Then
 *                        blocks go through the slots again, and each block is checked
 *                        to hold what was written into it until it is deleted.
 */
#include "tt.h"

#include "plt_slot.h"

void *_Znwm(size_t size);
void *_Znam(size_t size);
void _ZdlPv(void *p);
void _ZdaPv(void *p);
void _ZdlPvm(void *p, size_t size);
void _ZdaPvm(void *p, size_t size);

static const char *const symbols[] = {"_Znwm", "_Znam", "_ZdlPv", "_ZdaPv", "_ZdlPvm", "_ZdaPvm"};

/* new and new[] blocks of sizes from 1 B to 200 KiB, written and checked, deleted by
 * every form (sized with the size asked for). */
static void churn(unsigned rounds) {
  for (unsigned r = 0; r < rounds; r++)
    for (size_t n = 1; n <= 200000; n = n * 3 / 2 + 1) {
      unsigned char *a = _Znwm(n), *b = _Znam(n);
      TT_CHECK(a != NULL && b != NULL);
      memset(a, 0x5a, n);
      memset(b, 0xa5, n);
      TT_CHECKF(a[0] == 0x5a && a[n - 1] == 0x5a && b[0] == 0xa5 && b[n - 1] == 0xa5, "block of %zu B changed", n);
      if ((r + n) % 2) {
        _ZdlPvm(a, n);
        _ZdaPvm(b, n);
      } else {
        _ZdlPv(a);
        _ZdaPv(b);
      }
    }
}

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: cxx_entries hardened|default\n");
    return 2;
  }
  churn(4);
  for (int i = 0; i < 6; i++) {
    uintptr_t value = tt_plt_slot("", symbols[i]);
    const char *state = value == 0 ? "none" : value == (uintptr_t)dlsym(RTLD_DEFAULT, symbols[i]) ? "default" : "hardened";
    printf("program %s: %s\n", symbols[i], state);
    TT_CHECKF(strcmp(state, argv[1]) == 0, "the program's slot of %s: %s, expected %s", symbols[i], state, argv[1]);
  }
  churn(4);
  return 0;
}
