/* SPDX-License-Identifier: MIT */
/*
 * ctl.names: docs/ctl.md and the ctl tree agree. Every name in the doc's tree table
 * exists (queried through tessera_ctl with <i> and <j> replaced by 0, read with the
 * documented type's size), has the documented type and access, and every name the
 * tree has is in the doc. Also checks the errno rules and the MIB functions.
 *
 * usage: names <path of docs/ctl.md>
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctl.h"
#include "tt.h"

#define MAX_NAMES 512

typedef struct entry {
  char name[128];
  char type[32];
  char access[8];
  bool seen;
} entry_t;

static entry_t doc[MAX_NAMES];
static unsigned ndoc;

/* Rows "| `name` | `type` | access | ..." after the "## The tree" heading. */
static void read_doc(const char *path) {
  FILE *f = fopen(path, "r");
  char line[1024];
  bool in_tree = false;
  TT_CHECKF(f != NULL, "cannot open %s", path);
  while (fgets(line, sizeof(line), f) != NULL) {
    if (strncmp(line, "## ", 3) == 0) in_tree = strncmp(line, "## The tree", 11) == 0;
    if (!in_tree || strncmp(line, "| `", 3) != 0) continue;
    TT_CHECK(ndoc < MAX_NAMES);
    entry_t *e = &doc[ndoc++];
    TT_CHECKF(sscanf(line, "| `%127[^`]` | `%31[^`]` | %7s |", e->name, e->type, e->access) == 3,
              "bad row: %s", line);
  }
  fclose(f);
  TT_CHECKF(ndoc > 50, "only %u names in %s", ndoc, path);
}

static entry_t *find(const char *name) {
  for (unsigned i = 0; i < ndoc; i++)
    if (strcmp(doc[i].name, name) == 0) return &doc[i];
  return NULL;
}

static void check_listed(const char *name, ctl_type_t type, bool writable, void *arg) {
  (void)arg;
  entry_t *e = find(name);
  TT_CHECKF(e != NULL, "%s exists but docs/ctl.md does not document it", name);
  e->seen = true;
  TT_CHECKF(strcmp(e->type, ctl_type_name(type)) == 0, "%s: doc says %s, tree says %s", name, e->type,
            ctl_type_name(type));
  const char *access = type == CTL_VOID ? "--" : writable ? "rw" : "r-";
  TT_CHECKF(strcmp(e->access, access) == 0, "%s: doc says %s, tree says %s", name, e->access, access);
}

static size_t size_of(const char *type) {
  if (strcmp(type, "bool") == 0) return sizeof(bool);
  if (strcmp(type, "unsigned") == 0 || strcmp(type, "uint32_t") == 0) return 4;
  if (strcmp(type, "unsigned, void *") == 0) return 4; /* read; a void * is written */
  if (strcmp(type, "void") == 0) return 0;
  return 8; /* size_t, ssize_t, uint64_t, const char * */
}

/* The doc's name with every <i> and <j> replaced by 0. */
static void concrete(const char *name, char *out) {
  for (; *name; name++) {
    if (name[0] == '<' && name[2] == '>') {
      *out++ = '0';
      name += 2;
    } else {
      *out++ = *name;
    }
  }
  *out = '\0';
}

static void query_documented(void) {
  for (unsigned i = 0; i < ndoc; i++) {
    char name[128];
    concrete(doc[i].name, name);
    size_t size = size_of(doc[i].type);
    uint64_t value = 0;
    size_t len = size;
    void *block = malloc(16); /* what a name that takes a pointer is given */
    int r = size == 0                                     ? tessera_ctl(name, NULL, NULL, NULL, 0)
            : strcmp(doc[i].type, "unsigned, void *") == 0 ? tessera_ctl(name, &value, &len, &block, sizeof(block))
                                                          : tessera_ctl(name, &value, &len, NULL, 0);
    free(block);
    TT_CHECKF(r == 0, "documented %s: tessera_ctl returned %d", name, r);
    TT_CHECKF(len == size, "%s: length %zu", name, len);
    TT_CHECKF(doc[i].seen, "documented %s is not in the tree", doc[i].name);
  }
}

static void check_errors(void) {
  unsigned u = 0;
  size_t len = sizeof(u), z = 0;
  TT_CHECK(tessera_ctl("no.such.name", &u, &len, NULL, 0) == ENOENT);
  TT_CHECK(tessera_ctl("arenas", &u, &len, NULL, 0) == ENOENT);                /* interior node */
  TT_CHECK(tessera_ctl("arenas.narenas.x", &u, &len, NULL, 0) == ENOENT);      /* past a leaf */
  TT_CHECK(tessera_ctl("arena.99999.purge", NULL, NULL, NULL, 0) == ENOENT);   /* no such arena */
  TT_CHECK(tessera_ctl("arenas.bin.44.size", &z, &len, NULL, 0) == ENOENT);    /* no such class */
  len = sizeof(z);
  TT_CHECK(tessera_ctl("arenas.narenas", &z, &len, NULL, 0) == EINVAL);        /* 8 for a 4-byte value */
  TT_CHECK(len == sizeof(unsigned));
  TT_CHECK(tessera_ctl("arenas.narenas", NULL, NULL, &u, sizeof(u)) == EPERM); /* read-only */
  ssize_t ms = 100;
  TT_CHECK(tessera_ctl("arena.0.dirty_decay_ms", NULL, NULL, &ms, 4) == EINVAL);
  len = sizeof(u);
  TT_CHECK(tessera_ctl("thread.tcache.flush", &u, &len, NULL, 0) == EPERM);     /* void */
  TT_CHECK(tessera_ctl("arena.0.purge", NULL, NULL, &u, sizeof(u)) == EPERM);
  ms = -2;
  TT_CHECK(tessera_ctl("arena.0.dirty_decay_ms", NULL, NULL, &ms, sizeof(ms)) == EFAULT);
  u = 9999;
  TT_CHECK(tessera_ctl("thread.arena", NULL, NULL, &u, sizeof(u)) == EFAULT);
}

static void check_mib(void) {
  size_t mib[8], miblen = 8, v, len = sizeof(v);
  TT_CHECK(tessera_ctl_nametomib("arenas.bin.0.size", mib, &miblen) == 0 && miblen == 4);
  for (size_t j = 0; j < 5; j++) {
    size_t byname;
    char name[64];
    mib[2] = j;
    TT_CHECK(tessera_ctl_bymib(mib, miblen, &v, &len, NULL, 0) == 0);
    snprintf(name, sizeof(name), "arenas.bin.%zu.size", j);
    TT_CHECK(tessera_ctl(name, &byname, &len, NULL, 0) == 0 && byname == v);
  }
  mib[2] = 1000;
  TT_CHECK(tessera_ctl_bymib(mib, miblen, &v, &len, NULL, 0) == ENOENT);
  miblen = 2; /* partial translation: the first two components only */
  TT_CHECK(tessera_ctl_nametomib("stats.arenas.0.pactive", mib, &miblen) == 0 && miblen == 2);
  TT_CHECK(tessera_ctl_bymib(mib, 2, &v, &len, NULL, 0) == ENOENT);
  mib[2] = 0;
  mib[3] = 1; /* stats.arenas.0.<child 1> = pactive */
  TT_CHECK(tessera_ctl_bymib(mib, 4, &v, &len, NULL, 0) == 0);
  miblen = 8;
  TT_CHECK(tessera_ctl_nametomib("no.such", mib, &miblen) == ENOENT);
}

int main(int argc, char **argv) {
  TT_CHECK(argc == 2);
  free(malloc(1));
  read_doc(argv[1]);
  ctl_for_each_name(check_listed, NULL);
  query_documented();
  check_errors();
  check_mib();
  printf("ctl.names: %u names documented and present\n", ndoc);
  return 0;
}
