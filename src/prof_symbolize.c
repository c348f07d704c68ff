/* SPDX-License-Identifier: MIT */
/* prof_symbolize: see prof_symbolize.h. */
#include "prof_symbolize.h"
#include "prof_meta.h"

#include "os.h"

#include <string.h>

const char *prof_basename(const char *path) {
  const char *b = path;
  for (const char *p = path; *p; p++)
    if (*p == '/') b = p + 1;
  return b;
}

/* ---------------------------------------------------------------- .dynsym */

/* Dynamic-section pointers are relocated in place by the loader for ordinary modules,
 * but not for the vDSO: an address below the load bias is a link address. */
static uintptr_t dyn_ptr(const prof_module_t *m, uintptr_t v) { return v < m->bias ? v + m->bias : v; }

static size_t gnu_hash_count(const prof_module_t *m, const uint32_t *h) {
  uint32_t nbuckets = h[0], symoffset = h[1], bloom_size = h[2];
  if (!prof_module_readable_range(m, (uintptr_t)h, 16 + (size_t)bloom_size * 8 + (size_t)nbuckets * 4)) return 0;
  const uint32_t *buckets = (const uint32_t *)(const void *)((const uint8_t *)(h + 4) + (size_t)bloom_size * 8);
  const uint32_t *chain = buckets + nbuckets;
  uint32_t last = 0;
  for (uint32_t i = 0; i < nbuckets; i++)
    if (buckets[i] > last) last = buckets[i];
  if (last < symoffset) return symoffset;
  for (;; last++) {
    if (!prof_module_readable_range(m, (uintptr_t)&chain[last - symoffset], 4)) return last;
    if (chain[last - symoffset] & 1) return (size_t)last + 1;
  }
}

static void load_dynsym(const prof_module_t *m, prof_symtab_t *out) {
  const ElfW(Dyn) *d = m->dynamic;
  if (!d) return;
  uintptr_t symtab = 0, strtab = 0, strsz = 0, hash = 0, gnu_hash = 0;
  for (; d->d_tag != DT_NULL; d++) {
    switch (d->d_tag) {
    case DT_SYMTAB: symtab = dyn_ptr(m, d->d_un.d_ptr); break;
    case DT_STRTAB: strtab = dyn_ptr(m, d->d_un.d_ptr); break;
    case DT_STRSZ: strsz = d->d_un.d_val; break;
    case DT_HASH: hash = dyn_ptr(m, d->d_un.d_ptr); break;
    case DT_GNU_HASH: gnu_hash = dyn_ptr(m, d->d_un.d_ptr); break;
    default: break;
    }
  }
  if (!symtab || !strtab || !prof_module_readable_range(m, strtab, strsz)) return;
  size_t n = 0;
  if (gnu_hash) n = gnu_hash_count(m, (const uint32_t *)gnu_hash);
  else if (hash && prof_module_readable_range(m, hash, 8)) n = ((const uint32_t *)hash)[1];
  if (!prof_module_readable_range(m, symtab, n * sizeof(ElfW(Sym)))) return;
  out->syms = (const ElfW(Sym) *)symtab;
  out->nsyms = n;
  out->strs = (const char *)strtab;
  out->strs_size = strsz;
}

/* ---------------------------------------------------------------- .symtab on disk */

static bool in_file(size_t file_size, uint64_t off, uint64_t len) { return off <= file_size && len <= file_size - off; }

static void load_file_symtab(prof_module_symbols_t *ms, const prof_module_t *m) {
  if (m->name[0] != '/') return;
  size_t size = 0;
  const uint8_t *f = os_map_file(m->name, &size);
  if (!f) return;
  const ElfW(Ehdr) *eh = (const ElfW(Ehdr) *)(const void *)f;
  bool ok = size >= sizeof(*eh) && memcmp(eh->e_ident, ELFMAG, SELFMAG) == 0 &&
            eh->e_ident[EI_CLASS] == ELFCLASS64 && eh->e_shentsize == sizeof(ElfW(Shdr)) &&
            in_file(size, eh->e_shoff, (uint64_t)eh->e_shnum * sizeof(ElfW(Shdr)));
  const ElfW(Shdr) *sh = ok ? (const ElfW(Shdr) *)(const void *)(f + eh->e_shoff) : NULL;
  for (unsigned i = 0; ok && i < eh->e_shnum; i++) {
    if (sh[i].sh_type != SHT_SYMTAB || sh[i].sh_link >= eh->e_shnum) continue;
    const ElfW(Shdr) *str = &sh[sh[i].sh_link];
    if (!in_file(size, sh[i].sh_offset, sh[i].sh_size) || !in_file(size, str->sh_offset, str->sh_size)) break;
    ms->symtab.syms = (const ElfW(Sym) *)(const void *)(f + sh[i].sh_offset);
    ms->symtab.nsyms = sh[i].sh_size / sizeof(ElfW(Sym));
    ms->symtab.strs = (const char *)f + str->sh_offset;
    ms->symtab.strs_size = str->sh_size;
    ms->file = f;
    ms->file_size = size;
    return;
  }
  os_unmap_file(f, size);
}

/* ---------------------------------------------------------------- lookup */

/* Of two symbols at one address (gcc's "f.localalias" next to "f"): the global one. */
static bool preferred_alias(const ElfW(Sym) *s, const ElfW(Sym) *than) {
  unsigned bs = ELF64_ST_BIND(s->st_info), bt = ELF64_ST_BIND(than->st_info);
  return bs != STB_LOCAL && bt == STB_LOCAL;
}

/* The function symbol covering link address a: the highest start <= a, preferring one
 * whose size covers a. */
static const ElfW(Sym) *lookup(const prof_symtab_t *t, uintptr_t a) {
  const ElfW(Sym) *best = NULL;
  bool best_covers = false;
  for (size_t i = 0; i < t->nsyms; i++) {
    const ElfW(Sym) *s = &t->syms[i];
    unsigned type = ELF64_ST_TYPE(s->st_info);
    if ((type != STT_FUNC && type != STT_GNU_IFUNC) || s->st_shndx == SHN_UNDEF || s->st_value > a) continue;
    if (s->st_name >= t->strs_size) continue;
    bool covers = a < s->st_value + s->st_size;
    if (!best || (covers && !best_covers) || (covers == best_covers && s->st_value > best->st_value) ||
        (covers == best_covers && s->st_value == best->st_value && preferred_alias(s, best))) {
      best = s;
      best_covers = covers;
    }
  }
  return best_covers ? best : NULL;
}

bool prof_symbolizer_init(prof_symbolizer_t *s, const prof_module_table_t *t) {
  s->modules = t;
  s->alloc_size = (t->count ? t->count : 1) * sizeof(prof_module_symbols_t);
  s->per_module = prof_meta_alloc(s->alloc_size);
  return s->per_module != NULL;
}

void prof_symbolizer_fini(prof_symbolizer_t *s) {
  if (!s->per_module) return;
  for (unsigned i = 0; i < s->modules->count; i++)
    if (s->per_module[i].file) os_unmap_file(s->per_module[i].file, s->per_module[i].file_size);
  prof_meta_free(s->per_module, s->alloc_size);
  s->per_module = NULL;
}

bool prof_symbolize(prof_symbolizer_t *s, uintptr_t pc, prof_symbol_t *out) {
  memset(out, 0, sizeof(*out));
  const prof_module_t *m = prof_module_find(s->modules, pc);
  if (!m) return false;
  out->module = m;
  out->module_offset = pc - m->lo;
  if (!s->per_module) return true;
  prof_module_symbols_t *ms = &s->per_module[m - s->modules->modules];
  if (!ms->loaded) {
    ms->loaded = true;
    load_dynsym(m, &ms->dynsym);
    load_file_symtab(ms, m);
  }
  const prof_symtab_t *t = &ms->symtab;
  const ElfW(Sym) *sym = t->nsyms ? lookup(t, pc - m->bias) : NULL;
  if (!sym) {
    t = &ms->dynsym;
    sym = lookup(t, pc - m->bias);
  }
  if (sym) {
    out->name = t->strs + sym->st_name;
    out->start = sym->st_value + m->bias;
  }
  return true;
}
