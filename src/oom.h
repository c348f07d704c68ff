/* SPDX-License-Identifier: MIT */
/*
 * Memory running out: the memory reserve (option reserve) and the program's callback
 * (tessera_set_oom_callback in include/tessera.h). The arena layer decides when memory
 * ran out and calls oom_notify with no lock held.
 */
#ifndef TESSERA_OOM_H
#define TESSERA_OOM_H

#include "types.h"

/* Maps the reserve if it is configured and not held (at start-up, and once memory is
 * no longer short). Takes no lock. */
void oom_reserve_fill(void);
/* Whether the reserve is given up now (a refill is due once pressure is gone). */
bool oom_reserve_wanted(void);
/* Why a request of request bytes failed: TESSERA_OOM_LIMIT if the soft limit stands in
 * the way, else TESSERA_OOM_OS. */
int oom_reason(size_t request);
/* Tells the program that an allocation of request bytes failed: releases the reserve,
 * calls the callback (once, never from inside itself). Returns whether anything was
 * done that may let a retry succeed. No lock may be held. */
bool oom_notify(size_t request);

#endif
