/* SPDX-License-Identifier: MIT */
/*
 * Which malloc entry a caller reaches (src/got_patch.h), against libtessera.so:
 *   entry_test LIB   allocates, then prints its own PLT slots of malloc and calloc as
 *                    "malloc:default" or "malloc:prof" (the slot no longer holds the
 *                    address the loader binds malloc to: got_patch rewrote it), then
 *                    site_main() keeps 32 MiB in 1000-byte blocks through malloc, and
 *                    the library LIB, loaded now with dlopen (after the rewrite: its
 *                    slot keeps the default entry), keeps 32 MiB through its own
 *                    malloc calls; it prints the library's slot too ("lib:default").
 * Built twice: entry_conf_test also defines malloc_conf = "prof:true", the source
 * the loader never sees, to check that it gets the profiling entry all the same.
 * The script reads the leak report for the two sites' estimates.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <elf.h>
#include <link.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef SET_MALLOC_CONF
const char *malloc_conf = "prof:true";
#endif

#define NOINLINE __attribute__((noinline))
#define BLOCK 1000
#define NBLOCKS 32768 /* 32 MiB of 1024-byte blocks */

void site_main(void);
static void *kept[NBLOCKS];

NOINLINE void site_main(void) {
  for (int i = 0; i < NBLOCKS; i++) kept[i] = malloc(BLOCK);
}

typedef struct slot_query {
  const char *object; /* a substring of the object's name; "" for the executable */
  const char *symbol;
  uintptr_t value;
} slot_query_t;

/* The value of the object's PLT slot (R_X86_64_JUMP_SLOT / R_AARCH64_JUMP_SLOT) of
 * the symbol, found as the loader would: the dynamic section's symbol table and PLT
 * relocations. */
static int slot_cb(struct dl_phdr_info *info, size_t size, void *arg) {
  (void)size;
  slot_query_t *q = arg;
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

static const char *slot_state(const char *object, const char *symbol) {
  slot_query_t q = {object, symbol, 0};
  dl_iterate_phdr(slot_cb, &q);
  if (q.value == 0) return "none";
  return q.value == (uintptr_t)dlsym(RTLD_DEFAULT, symbol) ? "default" : "prof";
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: entry_test LIB\n");
    return 2;
  }
  void *volatile warm = calloc(1, 64); /* binds both slots (lazy binding) */
  free(malloc(64));
  free(warm);
  printf("malloc:%s\ncalloc:%s\n", slot_state("", "malloc"), slot_state("", "calloc"));
  site_main();
  void *lib = dlopen(argv[1], RTLD_NOW);
  void (*site_lib)(void) = lib ? (void (*)(void))dlsym(lib, "site_lib") : NULL;
  if (site_lib == NULL) {
    fprintf(stderr, "entry_test: %s: %s\n", argv[1], dlerror());
    return 1;
  }
  site_lib();
  printf("lib:%s\n", slot_state("entry_lib", "malloc"));
  return 0;
}
