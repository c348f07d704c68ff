/* SPDX-License-Identifier: MIT */
#include "thread.h"

__thread thread_state_t tls_thread __attribute__((tls_model("initial-exec"))) = {.tcache = &tcache_empty};

/* Zeroed: every bin has capacity 0, so it never caches (tcache.c). */
SPARSE_ARRAY tcache_t tcache_empty;
