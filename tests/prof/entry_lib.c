/* SPDX-License-Identifier: MIT */
/* entry_test's library, loaded with dlopen: keeps 32 MiB in 1000-byte blocks through its
 * own PLT slot of malloc (which keeps the default entry). */
#include <stdlib.h>

void site_lib(void);

static void *kept[32768];

__attribute__((noinline)) void site_lib(void) {
  for (int i = 0; i < 32768; i++) kept[i] = malloc(1000);
}
