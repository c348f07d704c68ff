/*
 * The optional background thread (background_thread:true): wakes up periodically and
 * runs every arena's decay, so a program that has gone idle still returns memory.
 * Started lazily from an allocation slow path once the library's constructor has run;
 * never keeps the process from exiting (exit ends it); after fork the child starts its
 * own on its next allocation slow path.
 */
#ifndef TESSERA_BACKGROUND_H
#define TESSERA_BACKGROUND_H

#include "types.h"

extern _Atomic int background_state; /* BG_NONE, BG_STARTING, BG_RUNNING, BG_FAILED */
enum { BG_NONE, BG_STARTING, BG_RUNNING, BG_FAILED };

/* Starts the thread if the option asks for it and it is not running. */
void background_maybe_start(void);
/* Set (under an extent lock) when an arena's unused pages pass background_thread_auto;
 * the next allocator call outside the locks starts the thread. */
extern _Atomic bool background_requested;
void background_start_requested(void);
void background_fork_child(void);

#endif
