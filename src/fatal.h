/* SPDX-License-Identifier: MIT */
/*
 * Reporting misuse and impossible states: one clear line on stderr, then abort().
 * Never allocates, so it is safe anywhere, with any lock held.
 */
#ifndef TESSERA_FATAL_H
#define TESSERA_FATAL_H

/* Prints "tessera: <func>: <problem> 0x<p>" and aborts. */
__attribute__((noreturn, cold)) void fatal_pointer(const char *func, const char *problem,
                                                  const void *p);
/* Prints "tessera: <message>" and aborts. */
__attribute__((noreturn, cold)) void fatal(const char *message);
/* Formats v in hex (with 0x) or decimal into buf (at least 24 bytes); returns buf. */
char *format_hex(char *buf, unsigned long long v);
char *format_dec(char *buf, unsigned long long v);

#endif
