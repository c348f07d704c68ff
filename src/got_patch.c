/* SPDX-License-Identifier: MIT */
/* got_patch: see got_patch.h. */
#include "got_patch.h"

#include <elf.h>
#include <link.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "os.h"

#if defined(__x86_64__)
#define JUMP_SLOT R_X86_64_JUMP_SLOT
#elif defined(__aarch64__)
#define JUMP_SLOT R_AARCH64_JUMP_SLOT
#endif

#define PAGE_OF(a) ((a) & ~(uintptr_t)4095)

/* What got_patch needs of one loaded object, from its program headers and its dynamic
 * section. */
typedef struct object {
  uintptr_t base;
  const ElfW(Phdr) *phdr;
  size_t phnum;
  const ElfW(Sym) *symtab;
  const char *strtab;
  const uint32_t *gnu_hash; /* NULL without DT_GNU_HASH */
  const ElfW(Dyn) *dynamic;
  const ElfW(Rela) *jmprel;
  size_t njmprel;
  const struct r_debug *debug; /* the executable's DT_DEBUG (set by the loader), or NULL */
  /* The read-only pages of PT_GNU_RELRO, as the loader protects them: whole pages only
   * (a last page shared with writable data stays writable); 0, 0 without it. */
  uintptr_t relro_start, relro_end;
} object_t;

typedef struct patch {
  const char *name;
  uintptr_t from, to;
  const struct r_debug *debug; /* the loader's list of the first namespace; NULL: unknown */
  bool unbound_ok; /* pass 2: slots not bound yet would be bound to from */
  bool definer_seen; /* pass 1: an object before from's defines name */
  size_t patched;
} patch_t;

/* The loader relocates the dynamic section's addresses in place, except in the vDSO. */
static uintptr_t dyn_address(const object_t *o, ElfW(Addr) v) { return v < o->base ? v + o->base : v; }

static bool object_read(const struct dl_phdr_info *info, object_t *o) {
  memset(o, 0, sizeof(*o));
  o->base = info->dlpi_addr;
  o->phdr = info->dlpi_phdr;
  o->phnum = info->dlpi_phnum;
  const ElfW(Dyn) *dyn = NULL;
  for (size_t i = 0; i < o->phnum; i++) {
    if (o->phdr[i].p_type == PT_DYNAMIC) dyn = (const ElfW(Dyn) *)(o->base + o->phdr[i].p_vaddr);
    if (o->phdr[i].p_type == PT_GNU_RELRO) { /* the pages the loader made read-only */
      o->relro_start = PAGE_OF(o->base + o->phdr[i].p_vaddr);
      o->relro_end = PAGE_OF(o->base + o->phdr[i].p_vaddr + o->phdr[i].p_memsz);
    }
  }
  if (dyn == NULL) return false;
  o->dynamic = dyn;
  size_t pltrelsz = 0;
  bool rela = true;
  for (; dyn->d_tag != DT_NULL; dyn++) {
    switch (dyn->d_tag) {
    case DT_SYMTAB: o->symtab = (const ElfW(Sym) *)dyn_address(o, dyn->d_un.d_ptr); break;
    case DT_STRTAB: o->strtab = (const char *)dyn_address(o, dyn->d_un.d_ptr); break;
    case DT_GNU_HASH: o->gnu_hash = (const uint32_t *)dyn_address(o, dyn->d_un.d_ptr); break;
    case DT_JMPREL: o->jmprel = (const ElfW(Rela) *)dyn_address(o, dyn->d_un.d_ptr); break;
    case DT_PLTRELSZ: pltrelsz = dyn->d_un.d_val; break;
    case DT_PLTREL: rela = dyn->d_un.d_val == DT_RELA; break;
    case DT_DEBUG: o->debug = (const struct r_debug *)dyn->d_un.d_ptr; break;
    default: break;
    }
  }
  if (o->symtab == NULL || o->strtab == NULL || !rela) return false;
  o->njmprel = o->jmprel != NULL ? pltrelsz / sizeof(ElfW(Rela)) : 0;
  return true;
}

static bool object_contains(const object_t *o, uintptr_t a) {
  for (size_t i = 0; i < o->phnum; i++) {
    const ElfW(Phdr) *ph = &o->phdr[i];
    if (ph->p_type == PT_LOAD && a >= o->base + ph->p_vaddr && a - (o->base + ph->p_vaddr) < ph->p_memsz) return true;
  }
  return false;
}

static uint32_t gnu_hash_of(const char *name) {
  uint32_t h = 5381;
  for (const unsigned char *p = (const unsigned char *)name; *p; p++) h = h * 33 + *p;
  return h;
}

/* Whether the object defines name (its GNU hash table holds its defined symbols only);
 * true, to be safe, when it has no GNU hash table. */
static bool object_defines(const object_t *o, const char *name) {
  const uint32_t *ht = o->gnu_hash;
  if (ht == NULL) return true;
  uint32_t nbuckets = ht[0], symoffset = ht[1], bloom_size = ht[2];
  if (nbuckets == 0) return false;
  const uint32_t *buckets = (const uint32_t *)((const ElfW(Addr) *)(ht + 4) + bloom_size);
  const uint32_t *chain = buckets + nbuckets;
  uint32_t h = gnu_hash_of(name);
  for (uint32_t i = buckets[h % nbuckets]; i >= symoffset; i++) {
    uint32_t h2 = chain[i - symoffset];
    const ElfW(Sym) *s = &o->symtab[i];
    if ((h | 1) == (h2 | 1) && s->st_shndx != SHN_UNDEF && strcmp(o->strtab + s->st_name, name) == 0) return true;
    if (h2 & 1) break;
  }
  return false;
}

/* Writes a slot, making its page writable for the time if it is in the RELRO segment
 * (bound at load time: BIND_NOW). */
static bool slot_write(const object_t *o, uintptr_t *slot, uintptr_t value) {
  uintptr_t a = (uintptr_t)slot;
  bool relro = a >= o->relro_start && a < o->relro_end;
  if (relro && !os_protect((void *)PAGE_OF(a), 4096, true)) return false;
  __atomic_store_n(slot, value, __ATOMIC_RELEASE);
  if (relro) os_protect_readonly((void *)PAGE_OF(a), 4096);
  return true;
}

#ifdef JUMP_SLOT
/* Whether the object is in the loader's first namespace (the one whose search order
 * pass 1 walked): an object loaded with dlmopen binds its slots in a namespace of its
 * own, with its own malloc. */
static bool object_in_first_namespace(const object_t *o, const patch_t *p) {
  if (p->debug == NULL) return false;
  for (const struct link_map *l = p->debug->r_map; l != NULL; l = l->l_next)
    if (l->l_ld == o->dynamic) return true;
  return false;
}

static void object_patch(const object_t *o, patch_t *p) {
  for (size_t i = 0; i < o->njmprel; i++) {
    const ElfW(Rela) *r = &o->jmprel[i];
    if (ELF64_R_TYPE(r->r_info) != JUMP_SLOT) continue;
    const ElfW(Sym) *s = &o->symtab[ELF64_R_SYM(r->r_info)];
    if (strcmp(o->strtab + s->st_name, p->name) != 0) continue;
    uintptr_t *slot = (uintptr_t *)(o->base + r->r_offset);
    uintptr_t v = __atomic_load_n(slot, __ATOMIC_RELAXED);
    /* Not bound yet: the slot points back into the object's own PLT. */
    bool unbound = p->unbound_ok && s->st_shndx == SHN_UNDEF && object_contains(o, v) && object_in_first_namespace(o, p);
    if ((v == p->from || unbound) && slot_write(o, slot, p->to)) p->patched++;
  }
}

/* Pass 1: whether an object before the definition at from (the process's search
 * order) also defines name: then a slot bound later might not be bound to from. */
static int find_definer_cb(struct dl_phdr_info *info, size_t size, void *arg) {
  (void)size;
  patch_t *p = arg;
  object_t o;
  if (!object_read(info, &o)) return 0;
  if (o.debug != NULL && p->debug == NULL) p->debug = o.debug; /* the executable's */
  if (object_contains(&o, p->from)) return 1; /* reached the definition: stop */
  if (object_defines(&o, p->name)) p->definer_seen = true;
  return 0;
}

static int patch_cb(struct dl_phdr_info *info, size_t size, void *arg) {
  (void)size;
  object_t o;
  if (object_read(info, &o)) object_patch(&o, arg);
  return 0;
}

size_t got_patch(const char *name, void *from, void *to) {
  patch_t p = {name, (uintptr_t)from, (uintptr_t)to, NULL, false, false, 0};
  bool from_found = dl_iterate_phdr(find_definer_cb, &p) == 1;
  p.unbound_ok = from_found && !p.definer_seen && p.debug != NULL;
  dl_iterate_phdr(patch_cb, &p);
  return p.patched;
}
#else
size_t got_patch(const char *name, void *from, void *to) {
  (void)name, (void)from, (void)to;
  return 0;
}
#endif
