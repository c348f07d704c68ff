/* SPDX-License-Identifier: MIT */
/*
 * ctl.options_doc: docs/options.md is generated from the options table (src/options.c).
 *
 *   options_doc --write <path>   writes the document
 *   options_doc --check <path>   fails unless the file is what --write would produce
 *
 * Linked against the static library: the table is internal. The defaults come from
 * option_default(), captured before any configuration source was read.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "options.h"

static const char *type_name(option_type_t t) {
  switch (t) {
  case OPTION_BOOL: return "bool";
  case OPTION_UNSIGNED: return "unsigned";
  case OPTION_SIZE: return "size_t";
  case OPTION_SSIZE: return "ssize_t";
  case OPTION_STRING: return "string";
  case OPTION_ENUM: return "enum";
  }
  return "?";
}

/* Copies s with '|' escaped for a Markdown table cell. */
static const char *cell(const char *s, char *buf, size_t cap) {
  size_t n = 0;
  for (; *s && n + 3 < cap; s++) {
    if (*s == '|') buf[n++] = '\\';
    buf[n++] = *s;
  }
  buf[n] = '\0';
  return buf;
}

static size_t generate(char *out, size_t cap) {
  size_t n = 0;
#define OUT(...) n += (size_t)snprintf(out + n, n < cap ? cap - n : 0, __VA_ARGS__)
  OUT("# Options\n\n");
  OUT("<!-- Generated from the options table in src/options.c by tests/ctl/options_doc.c\n"
      "     (cmake --build <build> --target options-doc); the ctl.options_doc test checks it. -->\n\n");
  OUT("tessera reads `key:value` pairs separated by commas from, later overriding earlier:\n"
      "the compiled-in default (`TESSERA_CONF_DEFAULT`); jemalloc's `malloc_conf` symbol and\n"
      "`MALLOC_CONF` environment variable, of which the options tessera shares with jemalloc\n"
      "(same name, same meaning) are honoured and the others named in one warning line; a\n"
      "`tessera_conf` string the program defines (`const char *tessera_conf = \"narenas:4\";`);\n"
      "the file `/etc/tessera.conf` (entries separated by commas or newlines, `#` starting a\n"
      "comment that runs to the end of the line; or, if it is a symlink, its target as the\n"
      "string, like jemalloc's `/etc/malloc.conf`); and the `TESSERA_CONF` environment\n"
      "variable. The two environment variables are ignored for setuid and setgid programs.\n\n"
      "A bad key or value prints one line on stderr naming the source, the key, the value and\n"
      "what is accepted, and keeps the previous value; so do two options that contradict each\n"
      "other (`tcache_nslots_small_min` above `tcache_nslots_small_max`, `junk:true` with\n"
      "`zero:true`), naming what is kept. With `abort_conf:true` (from any source) the\n"
      "process aborts once every source has been read. Numbers accept k, m and g suffixes\n"
      "within their range. Every option can be read back as `opt.<name>` through\n"
      "`tessera_ctl` (docs/ctl.md), and the statistics print them in their header.\n\n");
  OUT("| option | type | default | accepted | description |\n| --- | --- | --- | --- | --- |\n");
  for (unsigned i = 0; i < option_count; i++) {
    const option_def_t *d = &option_table[i];
    char accepted[256], acc_cell[512], doc_cell[512];
    option_accepted(d, accepted, sizeof(accepted));
    const char *def = option_default(d);
    OUT("| `%s` | %s | `%s` | %s | %s |\n", d->name, type_name(d->type), def[0] ? def : "\"\"",
        cell(accepted, acc_cell, sizeof(acc_cell)), cell(option_doc(d), doc_cell, sizeof(doc_cell)));
  }
#undef OUT
  return n;
}

int main(int argc, char **argv) {
  static char text[65536], file[65536];
  if (argc != 3) {
    fprintf(stderr, "usage: options_doc --write|--check <path>\n");
    return 2;
  }
  free(malloc(1)); /* initialises the allocator, which captures the defaults */
  size_t n = generate(text, sizeof(text));
  if (strcmp(argv[1], "--write") == 0) {
    FILE *f = fopen(argv[2], "w");
    if (f == NULL || fwrite(text, 1, n, f) != n || fclose(f) != 0) return 1;
    return 0;
  }
  FILE *f = fopen(argv[2], "r");
  size_t m = f ? fread(file, 1, sizeof(file), f) : 0;
  if (f) fclose(f);
  if (m == n && memcmp(file, text, n) == 0) return 0;
  fprintf(stderr, "FAIL %s is out of date with src/options.c; regenerate it with\n"
                  "  cmake --build <build> --target options-doc\nExpected:\n%s", argv[2], text);
  return 1;
}
