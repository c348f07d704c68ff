/* SPDX-License-Identifier: MIT */
/*
 * prof_symbolize: names for code addresses, from the loaded modules' dynamic symbol
 * tables (PT_DYNAMIC: DT_SYMTAB, DT_STRTAB, with DT_GNU_HASH or DT_HASH for the count)
 * and, where the file on disk has one, its full .symtab (the file is mapped read-only
 * for the lifetime of the symbolizer). Without a covering symbol an address is named
 * module+0xoffset. Never allocates except base_alloc; use inside prof_modules_locked.
 */
#ifndef TESSERA_PROF_SYMBOLIZE_H
#define TESSERA_PROF_SYMBOLIZE_H

#include "prof_modules.h"

typedef struct prof_symbol {
  const char *name;             /* NULL when no symbol covers the address */
  uintptr_t start;              /* runtime address of the symbol */
  const prof_module_t *module;  /* NULL when no module holds the address */
  uintptr_t module_offset;      /* address - module's lowest address */
} prof_symbol_t;

typedef struct prof_symtab {
  const ElfW(Sym) *syms;
  size_t nsyms;
  const char *strs;
  size_t strs_size;
} prof_symtab_t;

typedef struct prof_module_symbols {
  bool loaded;
  prof_symtab_t dynsym, symtab;
  const void *file; /* the mapped ELF file behind symtab, or NULL */
  size_t file_size;
} prof_module_symbols_t;

typedef struct prof_symbolizer {
  const prof_module_table_t *modules;
  prof_module_symbols_t *per_module; /* one per module, filled on first use */
  size_t alloc_size;
} prof_symbolizer_t;

bool prof_symbolizer_init(prof_symbolizer_t *s, const prof_module_table_t *t);
void prof_symbolizer_fini(prof_symbolizer_t *s);
/* Names pc; returns false only if no module holds it. */
bool prof_symbolize(prof_symbolizer_t *s, uintptr_t pc, prof_symbol_t *out);
/* The last path component of a module's name. */
const char *prof_basename(const char *path);

#endif
