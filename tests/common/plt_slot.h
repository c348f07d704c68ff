/* SPDX-License-Identifier: MIT */
/*
 * plt_slot.h: for the tests of the entries that the allocator points programs' calls at
 * (prof:true, hardened:true): the value a loaded object's PLT slot of a symbol holds.
 */
#ifndef TT_PLT_SLOT_H
#define TT_PLT_SLOT_H

#include <elf.h>
#include <link.h>
#include <stdint.h>
#include <string.h>

typedef struct tt_slot_query {
  const char *object; /* a substring of the object's name; "" for the executable */
  const char *symbol;
  uintptr_t value;
} tt_slot_query_t;

/* The slot (R_X86_64_JUMP_SLOT / R_AARCH64_JUMP_SLOT relocation) found as the loader
 * would: the dynamic section's symbol table and PLT relocations. */
static int tt_slot_cb(struct dl_phdr_info *info, size_t size, void *arg) {
  (void)size;
  tt_slot_query_t *q = arg;
  if (q->object[0] == '\0' ? info->dlpi_name[0] != '\0' : strstr(info->dlpi_name, q->object) == NULL) return 0;
  const ElfW(Dyn) *dyn = NULL;
  for (int i = 0; i < info->dlpi_phnum; i++)
    if (info->dlpi_phdr[i].p_type == PT_DYNAMIC) dyn = (const void *)(info->dlpi_addr + info->dlpi_phdr[i].p_vaddr);
  const ElfW(Sym) *symtab = NULL;
  const char *strtab = NULL;
  const ElfW(Rela) *rel = NULL;
  size_t relsz = 0;
  for (; dyn != NULL && dyn->d_tag != DT_NULL; dyn++) {
    if (dyn->d_tag == DT_SYMTAB) symtab = (const void *)dyn->d_un.d_ptr;
    if (dyn->d_tag == DT_STRTAB) strtab = (const void *)dyn->d_un.d_ptr;
    if (dyn->d_tag == DT_JMPREL) rel = (const void *)dyn->d_un.d_ptr;
    if (dyn->d_tag == DT_PLTRELSZ) relsz = dyn->d_un.d_val;
  }
  for (size_t i = 0; rel != NULL && i < relsz / sizeof(*rel); i++) {
    const ElfW(Sym) *s = &symtab[ELF64_R_SYM(rel[i].r_info)];
    if (strcmp(strtab + s->st_name, q->symbol) == 0) q->value = *(uintptr_t *)(info->dlpi_addr + rel[i].r_offset);
  }
  return 1;
}

/* The value of object's PLT slot of symbol; 0 if it has none. */
static inline uintptr_t tt_plt_slot(const char *object, const char *symbol) {
  tt_slot_query_t q = {object, symbol, 0};
  dl_iterate_phdr(tt_slot_cb, &q);
  return q.value;
}

#endif
