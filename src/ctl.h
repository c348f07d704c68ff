/* SPDX-License-Identifier: MIT */
/*
 * The control interface (ctl.c: tessera_ctl and the name tree of docs/ctl.md).
 */
#ifndef TESSERA_CTL_H
#define TESSERA_CTL_H

#include "tessera.h"
#include "types.h"

typedef enum ctl_type {
  CTL_VOID, /* an action: no value to read or write */
  CTL_BOOL,
  CTL_UNSIGNED,
  CTL_U32,
  CTL_SIZE,
  CTL_SSIZE,
  CTL_U64,
  CTL_STRING, /* const char * */
  CTL_U64_POINTER, /* uint64_t * */
  CTL_UNSIGNED_OF_POINTER, /* reads an unsigned for the void * written (arenas.lookup) */
} ctl_type_t;

/* Calls f for every name in the tree, indices written <i> (arenas) and <j> (bins),
 * with its type and whether it can be written. For the docs test. */
void ctl_for_each_name(void (*f)(const char *name, ctl_type_t type, bool writable, void *arg), void *arg);
const char *ctl_type_name(ctl_type_t type);

#endif
