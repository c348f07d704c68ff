/* SPDX-License-Identifier: MIT */
/*
 * got_patch: points the loaded objects' PLT slots of a function at another function.
 *
 * Used by prof:true (below) and by hardened:true, whose entries of malloc, calloc, free
 * and realloc start with hardened mode's own path (alloc.c, free.c, realloc.c).
 *
 * With prof:true, malloc's default entry counts down on its slow path only (prof_cache.h),
 * and the profiling entry (alloc.c) counts down on its fast path. Which entry a caller
 * reaches is in the caller's GOT: once prof:true is known (after boot), got_patch
 * rewrites every PLT slot (R_*_JUMP_SLOT) of every loaded object that holds the default
 * entry's address, or that is not bound yet (lazy binding) and would be bound to it, so
 * that it holds the profiling entry's instead.
 *
 * Only PLT slots: a function pointer (R_*_GLOB_DAT: `&malloc`) keeps its value, so that
 * pointers to malloc compare equal everywhere. Whatever is not rewritten (a caller that
 * holds such a pointer, a library loaded later by dlopen, a call from code compiled with
 * -fno-plt, an architecture this file does not know) reaches the default entry, which
 * is correct with prof:true: its slow path counts down.
 *
 * (The first design chose malloc's entry with an ELF IFUNC resolver. glibc binds libc's
 * own references to malloc before it relocates the library that defines it, and then
 * prints "Relink `libc.so.6' with `libtessera.so.0' for IFUNC symbol `malloc'" in every
 * process, and refuses outright (a fatal error) when malloc is linked into the
 * executable: see elf_machine_rela in glibc's sysdeps/x86_64/dl-machine.h.)
 */
#ifndef TESSERA_GOT_PATCH_H
#define TESSERA_GOT_PATCH_H

#include <stddef.h>

/* Points the PLT slots of the symbol name that hold from (or would be bound to it) at
 * to; from must be the address of the process's definition of name. Returns how many
 * slots it rewrote. Takes the loader's lock (dl_iterate_phdr); allocates nothing. */
size_t got_patch(const char *name, void *from, void *to);

#endif
