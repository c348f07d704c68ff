/* SPDX-License-Identifier: MIT
 *
 * man_tables: fills the option and control tables of tessera(3) from docs/options.md
 * and docs/ctl.md (which tests keep in step with the library: ctl.options_doc and
 * ctl.names), so the manual and the Markdown documents say the same thing.
 *
 *   man_tables TEMPLATE OPTIONS_MD CTL_MD OUT
 *
 * Copies TEMPLATE to OUT; a line `.\" tessera:options-table` becomes the rows of
 * OPTIONS_MD's option table, `.\" tessera:control-table` those of CTL_MD's tree table,
 * each row a roff tagged paragraph.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_LINE 4096
#define MAX_CELLS 8

/* Writes Markdown inline text as roff: `code` in bold, [text](link) as text, \| as |,
 * backslashes and hyphens escaped. */
static void put_text(FILE *out, const char *s) {
  int bold = 0;
  for (; *s; s++) {
    if (s[0] == '\\' && s[1] == '|') {
      fputc('|', out);
      s++;
    } else if (*s == '`') {
      fputs(bold ? "\\fR" : "\\fB", out);
      bold = !bold;
    } else if (*s == '[' && strstr(s, "](") != NULL && strchr(s, ']') == strstr(s, "](")) {
      continue; /* the link text follows; "](target)" is dropped below */
    } else if (s[0] == ']' && s[1] == '(' && strchr(s, ')') != NULL) {
      s = strchr(s, ')');
    } else if (*s == '\\') {
      fputs("\\e", out);
    } else if (*s == '-') {
      fputs("\\-", out);
    } else {
      fputc(*s, out);
    }
  }
  if (bold) fputs("\\fR", out);
}

/* Splits a table row "| a | b \| c | d |" into trimmed cells; returns their number. */
static int split_row(char *line, char *cells[MAX_CELLS]) {
  int n = 0;
  char *p = strchr(line, '|');
  while (p != NULL && n < MAX_CELLS) {
    char *start = p + 1, *end = start;
    while (*end && !(*end == '|' && end[-1] != '\\')) end++;
    if (*end == '\0') break;
    *end = '\0';
    while (*start == ' ') start++;
    for (char *t = end - 1; t >= start && *t == ' '; t--) *t = '\0';
    cells[n++] = start;
    p = end;
  }
  return n;
}

/* Strips the backticks around a name cell. */
static const char *bare(char *cell) {
  size_t n = strlen(cell);
  if (n >= 2 && cell[0] == '`' && cell[n - 1] == '`') {
    cell[n - 1] = '\0';
    return cell + 1;
  }
  return cell;
}

/* Rows "| `name` | ..." of the first table after the heading line `heading` (NULL: the
 * first table of the file), written by `row`. Returns the rows written. */
static int copy_table(FILE *out, const char *path, const char *heading,
                      void (*row)(FILE *, char **, int)) {
  FILE *in = fopen(path, "r");
  char line[MAX_LINE];
  int rows = 0, in_section = heading == NULL;
  if (in == NULL) {
    fprintf(stderr, "man_tables: cannot open %s\n", path);
    exit(1);
  }
  while (fgets(line, sizeof line, in) != NULL) {
    line[strcspn(line, "\n")] = '\0';
    if (heading != NULL && strncmp(line, "#", 1) == 0) in_section = strcmp(line, heading) == 0;
    if (!in_section || strncmp(line, "| `", 3) != 0) {
      if (rows > 0 && line[0] != '|') break;
      continue;
    }
    char *cells[MAX_CELLS];
    row(out, cells, split_row(line, cells));
    rows++;
  }
  fclose(in);
  return rows;
}

static void option_row(FILE *out, char **c, int n) {
  if (n != 5) return;
  fprintf(out, ".TP\n.B %s\n\\&", bare(c[0]));
  put_text(out, c[4]);
  fputs("\n.br\nType ", out);
  put_text(out, c[1]);
  fputs(", default ", out);
  put_text(out, c[2]);
  fputs("; accepted: ", out);
  put_text(out, c[3]);
  fputs(".\n", out);
}

static void control_row(FILE *out, char **c, int n) {
  if (n != 4) return;
  fprintf(out, ".TP\n.B %s\n(", bare(c[0]));
  put_text(out, c[1]);
  fprintf(out, ", %s) ", strcmp(c[2], "--") == 0 ? "action" : strcmp(c[2], "rw") == 0 ? "read-write" : "read-only");
  put_text(out, c[3]);
  fputc('\n', out);
}

int main(int argc, char **argv) {
  if (argc != 5) {
    fprintf(stderr, "usage: man_tables TEMPLATE OPTIONS_MD CTL_MD OUT\n");
    return 2;
  }
  FILE *in = fopen(argv[1], "r"), *out = fopen(argv[4], "w");
  char line[MAX_LINE];
  if (in == NULL || out == NULL) {
    fprintf(stderr, "man_tables: cannot open %s\n", in == NULL ? argv[1] : argv[4]);
    return 1;
  }
  int options = 0, controls = 0;
  while (fgets(line, sizeof line, in) != NULL) {
    if (strcmp(line, ".\\\" tessera:options-table\n") == 0)
      options = copy_table(out, argv[2], NULL, option_row);
    else if (strcmp(line, ".\\\" tessera:control-table\n") == 0)
      controls = copy_table(out, argv[3], "## The tree", control_row);
    else
      fputs(line, out);
  }
  fclose(in);
  if (fclose(out) != 0 || options < 10 || controls < 50) {
    fprintf(stderr, "man_tables: %d options, %d control names: the tables were not found\n",
            options, controls);
    remove(argv[4]);
    return 1;
  }
  return 0;
}
