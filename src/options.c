/* SPDX-License-Identifier: MIT */
#include "options.h"

#include <limits.h>
#include <string.h>

#include "fatal.h"
#include "os.h"

#ifndef TESSERA_CONF_DEFAULT
#define TESSERA_CONF_DEFAULT ""
#endif

/* A program may define this to set options at link time: const char *tessera_conf = "...". */
extern const char *tessera_conf __attribute__((weak));

bool opt_abort_conf = false;
bool opt_tcache = true;
bool opt_exact_classes = true;
bool opt_lending = true;
bool opt_free_map = true;
size_t opt_tcache_max = TCACHE_MAX_LIMIT;
size_t opt_tcache_large_max = LARGE_CACHE_MAX;
unsigned opt_tcache_nslots_small_min = 20;
unsigned opt_tcache_nslots_small_max = 200;
unsigned opt_lg_tcache_nslots_mul = 1;
unsigned opt_narenas = 0;
/* Unused pages are released over dirty_decay_ms (see decay.c); -1 keeps them. */
ssize_t opt_dirty_decay_ms = 5000;
ssize_t opt_muzzy_decay_ms = 0;
unsigned opt_arena_select = ARENA_SELECT_CPU;
bool opt_background_thread = false;
/* Unused bytes in one arena that start the background thread anyway (0: never). */
size_t opt_background_thread_auto = (size_t)64 << 20;
size_t opt_reserve = 0;
size_t opt_limit = 0;
unsigned opt_thp = THP_DEFAULT;
unsigned opt_gather = GATHER_AUTO;
bool opt_junk = false;
bool opt_zero = false;
bool opt_hardened = false;
size_t opt_hardened_quarantine = (size_t)4 << 20;
bool opt_stats_print = false;
char opt_stats_print_opts[16] = "";
char opt_stats_prefix[256] = "";
char opt_arena_exclusive[256] = "";
unsigned opt_percpu_arena = 0;
char opt_slab_sizes[256] = "";
bool opt_prof = false;
bool opt_prof_active = true;
unsigned opt_lg_prof_sample = 19;
char opt_prof_prefix[256] = "tessera";
bool opt_prof_final = false;
bool opt_prof_gdump = false;
ssize_t opt_lg_prof_interval = -1;
bool opt_prof_leak = false;
size_t opt_timeline_ms = 0;
char opt_timeline_prefix[256] = "tessera";
slab_range_t opt_slab_ranges[SLAB_RANGES_MAX];
unsigned opt_slab_nranges;

static const char *const thp_names[] = {"default", "always", "never", NULL};
static const char *const gather_names[] = {"auto", "always", "never", NULL};
static const char *const arena_select_names[] = {"cpu", "least_loaded", NULL};
/* jemalloc's per-CPU arenas bind threads to the CPU they run on: tessera balances by CPU
 * its own way (arena_select), so only jemalloc's "disabled" is accepted. */
static const char *const percpu_arena_names[] = {"disabled", NULL};

static bool valid_stats_opts(const char *v, size_t len);
static bool valid_slab_sizes(const char *v, size_t len);
static bool valid_thread_names(const char *v, size_t len);
static bool valid_path_prefix(const char *v, size_t len);

/* The descriptions stay out of the table (options_doc.c). */
#define BOOL_OPTION(name, var, doc) {name, OPTION_BOOL, &var, 0, 1, NULL, NULL, NULL},
#define NUM_OPTION(name, type, var, lo, hi, doc) {name, type, &var, lo, hi, NULL, NULL, NULL},
#define STRING_OPTION(name, var, doc, accepted, valid) \
  {name, OPTION_STRING, var, 0, sizeof(var) - 1, accepted, valid, NULL},
#define ENUM_OPTION(name, var, doc, names) {name, OPTION_ENUM, &var, 0, 0, NULL, NULL, names},

const option_def_t option_table[] = {
#include "options_table.def"
};
const unsigned option_count = sizeof(option_table) / sizeof(option_table[0]);
_Static_assert(sizeof(option_table) / sizeof(option_table[0]) <= OPTION_MAX, "raise OPTION_MAX");

static bool valid_stats_opts(const char *v, size_t len) {
  for (size_t i = 0; i < len; i++)
    if (strchr("JgmablxtTdeh", v[i]) == NULL || v[i] == '\0') return false;
  return true;
}

/* "NAME|NAME|...": each name 1-15 characters, no comma or colon. */
static bool valid_thread_names(const char *v, size_t len) {
  size_t run = 0;
  for (size_t i = 0; i < len; i++) {
    if (v[i] == ',' || v[i] == ':' || v[i] == '\0') return false;
    if (v[i] != '|') {
      if (++run > 15) return false;
    } else {
      if (run == 0) return false;
      run = 0;
    }
  }
  return len == 0 || run > 0;
}

/* Leaves room for ".<pid>.json" in a PATH_MAX-sized buffer of the printer. */
static bool valid_path_prefix(const char *v, size_t len) {
  if (len > 200) return false;
  for (size_t i = 0; i < len; i++)
    if (v[i] == ',' || v[i] == '\0') return false;
  return true;
}

/* ---- slab_sizes: "lo-hi:pages|..." ---- */

static bool parse_decimal(const char **p, const char *end, size_t *out) {
  size_t v = 0;
  const char *s = *p;
  if (s == end || *s < '0' || *s > '9') return false;
  for (; s < end && *s >= '0' && *s <= '9'; s++) {
    if (v > ((size_t)1 << 40)) return false;
    v = v * 10 + (size_t)(*s - '0');
  }
  *p = s;
  *out = v;
  return true;
}

static bool expect_char(const char **p, const char *end, char c) {
  if (*p == end || **p != c) return false;
  (*p)++;
  return true;
}

/* Parses the range at *p (up to end); leaves *p after it and its '|' separator. */
static bool next_range(const char **p, const char *end, slab_range_t *r) {
  if (!parse_decimal(p, end, &r->lo) || !expect_char(p, end, '-') || !parse_decimal(p, end, &r->hi) ||
      !expect_char(p, end, ':') || !parse_decimal(p, end, &r->pages))
    return false;
  if (r->lo < 1 || r->lo > r->hi || r->pages < 1) return false;
  if (*p == end) return true;
  return expect_char(p, end, '|') && *p != end;
}

/* Parses v into out[] (at most SLAB_RANGES_MAX ranges); returns the count, or -1. */
static int parse_slab_ranges(const char *v, size_t len, slab_range_t *out) {
  const char *p = v, *end = v + len;
  int n = 0;
  while (p < end) {
    if (n == SLAB_RANGES_MAX || !next_range(&p, end, &out[n])) return -1;
    n++;
  }
  return n;
}

static bool valid_slab_sizes(const char *v, size_t len) {
  slab_range_t scratch[SLAB_RANGES_MAX];
  return parse_slab_ranges(v, len, scratch) >= 0;
}

const option_def_t *option_find(const char *name, size_t len) {
  for (unsigned i = 0; i < option_count; i++)
    if (strlen(option_table[i].name) == len && memcmp(option_table[i].name, name, len) == 0)
      return &option_table[i];
  return NULL;
}

static unsigned rejected_total; /* bad entries over every source: abort_conf acts on it */
static char default_text[OPTION_MAX][32];

/* Appends s (len bytes) to line[*n], keeping room for "\n\0". */
static void put(char *line, size_t cap, size_t *n, const char *s, size_t len) {
  if (*n + len > cap - 2) len = cap - 2 - *n;
  memcpy(line + *n, s, len);
  *n += len;
}

/* One stderr line: tessera: <source>: <what> '<key>[:<value>]' <expected> */
COLD_TEXT static void complain(const char *source, const char *what, const char *key, size_t keylen,
                     const char *value, size_t valuelen, const char *expected) {
  char line[512];
  size_t n = 0;
  put(line, sizeof(line), &n, "tessera: ", 9);
  put(line, sizeof(line), &n, source, strlen(source));
  put(line, sizeof(line), &n, ": ", 2);
  put(line, sizeof(line), &n, what, strlen(what));
  put(line, sizeof(line), &n, " '", 2);
  put(line, sizeof(line), &n, key, keylen);
  if (value != NULL) {
    put(line, sizeof(line), &n, ":", 1);
    put(line, sizeof(line), &n, value, valuelen);
  }
  put(line, sizeof(line), &n, "' ", 2);
  put(line, sizeof(line), &n, expected, strlen(expected));
  line[n++] = '\n';
  line[n] = '\0';
  os_write_stderr(line);
  rejected_total++;
}

COLD_TEXT static bool parse_number(const char *s, size_t len, unsigned long long *out) {
  if (len == 0 || len > 20) return false;
  unsigned long long v = 0, mult = 1;
  char last = s[len - 1];
  if (last == 'k' || last == 'K') { mult = 1ull << 10; len--; }
  else if (last == 'm' || last == 'M') { mult = 1ull << 20; len--; }
  else if (last == 'g' || last == 'G') { mult = 1ull << 30; len--; }
  if (len == 0) return false;
  for (size_t i = 0; i < len; i++) {
    if (s[i] < '0' || s[i] > '9') return false;
    if (v > (~0ull - 9) / 10) return false;
    v = v * 10 + (unsigned long long)(s[i] - '0');
  }
  if (v > ~0ull / mult) return false;
  *out = v * mult;
  return true;
}

static bool set_signed(const option_def_t *d, const char *v, size_t vlen) {
  unsigned long long num;
  bool negative = vlen > 0 && v[0] == '-';
  if (!parse_number(v + negative, vlen - negative, &num) || num > (unsigned long long)LLONG_MAX) return false;
  long long value = negative ? -(long long)num : (long long)num;
  if (value < d->min || value > d->max) return false;
  *(ssize_t *)d->value = (ssize_t)value;
  return true;
}

static bool set_option(const option_def_t *d, const char *v, size_t vlen) {
  unsigned long long num;
  switch (d->type) {
  case OPTION_BOOL:
    if (vlen == 4 && memcmp(v, "true", 4) == 0) *(bool *)d->value = true;
    else if (vlen == 5 && memcmp(v, "false", 5) == 0) *(bool *)d->value = false;
    else return false;
    return true;
  case OPTION_UNSIGNED:
  case OPTION_SIZE:
    if (!parse_number(v, vlen, &num) || num < (unsigned long long)d->min || num > (unsigned long long)d->max) return false;
    if (d->type == OPTION_UNSIGNED) *(unsigned *)d->value = (unsigned)num;
    else *(size_t *)d->value = (size_t)num;
    return true;
  case OPTION_SSIZE:
    return set_signed(d, v, vlen);
  case OPTION_STRING:
    if (vlen > (size_t)d->max || memchr(v, '\0', vlen) != NULL) return false;
    if (d->valid != NULL && !d->valid(v, vlen)) return false;
    memcpy(d->value, v, vlen);
    ((char *)d->value)[vlen] = '\0';
    return true;
  case OPTION_ENUM:
    for (unsigned i = 0; d->names[i] != NULL; i++) {
      if (strlen(d->names[i]) == vlen && memcmp(d->names[i], v, vlen) == 0) {
        *(unsigned *)d->value = i;
        return true;
      }
    }
    return false;
  }
  return false;
}

const char *option_enum_name(const option_def_t *d) { return d->names[*(const unsigned *)d->value]; }

/* "a, b or c" for an enum's names. */
static void enum_accepted(const option_def_t *d, char *buf, size_t len, size_t *n) {
  for (unsigned i = 0; d->names[i] != NULL; i++) {
    if (i > 0) put(buf, len, n, d->names[i + 1] != NULL ? ", " : " or ", d->names[i + 1] != NULL ? 2 : 4);
    put(buf, len, n, d->names[i], strlen(d->names[i]));
  }
}

static void format_signed(char *buf, long long v) {
  if (v < 0) {
    buf[0] = '-';
    format_dec(buf + 1, (unsigned long long)-v);
  } else {
    format_dec(buf, (unsigned long long)v);
  }
}

void option_accepted(const option_def_t *d, char *buf, size_t len) {
  char lo[24], hi[24];
  size_t n = 0;
  buf[0] = '\0';
  if (len < 3) return;
  switch (d->type) {
  case OPTION_BOOL: put(buf, len, &n, "true or false", 13); break;
  case OPTION_ENUM: enum_accepted(d, buf, len, &n); break;
  case OPTION_STRING:
    if (d->accepted != NULL) {
      put(buf, len, &n, d->accepted, strlen(d->accepted));
      break;
    }
    put(buf, len, &n, "a string of at most ", 20);
    format_dec(hi, (unsigned long long)d->max);
    put(buf, len, &n, hi, strlen(hi));
    put(buf, len, &n, " characters", 11);
    break;
  default:
    format_signed(lo, d->min);
    format_signed(hi, d->max);
    put(buf, len, &n, "an integer in [", 15);
    put(buf, len, &n, lo, strlen(lo));
    put(buf, len, &n, ", ", 2);
    put(buf, len, &n, hi, strlen(hi));
    put(buf, len, &n, "]", 1);
    break;
  }
  buf[n] = '\0';
}

COLD_TEXT static void reject_value(const char *source, const option_def_t *d, const char *key, size_t keylen,
                         const char *v, size_t vlen) {
  char accepted[200], expected[256];
  size_t n = 0;
  option_accepted(d, accepted, sizeof(accepted));
  put(expected, sizeof(expected), &n, "(expected ", 10);
  put(expected, sizeof(expected), &n, accepted, strlen(accepted));
  put(expected, sizeof(expected), &n, "; keeping the previous value)", 29);
  expected[n] = '\0';
  complain(source, "bad value for", key, keylen, v, vlen, expected);
}

/* Applies one "key:value" entry of length len. Returns false if it was rejected. */
COLD_TEXT static bool parse_entry(const char *p, size_t len, const char *source) {
  const char *colon = memchr(p, ':', len);
  size_t keylen = (size_t)((colon ? colon : p + len) - p);
  const option_def_t *d = option_find(p, keylen);
  if (d == NULL) {
    complain(source, "unknown option", p, keylen, NULL, 0, "(ignored; see tessera(3))");
    return false;
  }
  if (colon == NULL) {
    complain(source, "missing value for", p, keylen, NULL, 0, "(expected key:value)");
    return false;
  }
  const char *v = colon + 1;
  size_t vlen = len - keylen - 1;
  if (set_option(d, v, vlen)) return true;
  reject_value(source, d, p, keylen, v, vlen);
  return false;
}

static bool is_space(char c) { return c == ' ' || c == '\t' || c == '\r'; }

/* Parses the entries of one line, [p, end), with no comment in it. */
static unsigned parse_line(const char *p, const char *end, const char *source) {
  unsigned rejected = 0;
  while (p < end) {
    const char *stop = memchr(p, ',', (size_t)(end - p));
    if (stop == NULL) stop = end;
    const char *a = p, *b = stop;
    while (a < b && is_space(*a)) a++;
    while (b > a && is_space(b[-1])) b--;
    if (b > a && !parse_entry(a, (size_t)(b - a), source)) rejected++;
    p = stop + 1;
  }
  return rejected;
}

unsigned options_parse(const char *conf, const char *source) {
  unsigned rejected = 0;
  for (const char *p = conf; *p;) {
    const char *eol = strchr(p, '\n');
    if (eol == NULL) eol = p + strlen(p);
    const char *hash = memchr(p, '#', (size_t)(eol - p)); /* a comment runs to the end of the line */
    rejected += parse_line(p, hash != NULL ? hash : eol, source);
    p = *eol ? eol + 1 : eol;
  }
  return rejected;
}

void option_format(const option_def_t *d, char *buf, size_t len) {
  char tmp[24];
  const char *s;
  switch (d->type) {
  case OPTION_BOOL: s = *(bool *)d->value ? "true" : "false"; break;
  case OPTION_UNSIGNED: s = format_dec(tmp, *(unsigned *)d->value); break;
  case OPTION_SIZE: s = format_dec(tmp, *(size_t *)d->value); break;
  case OPTION_SSIZE: format_signed(tmp, (long long)*(ssize_t *)d->value); s = tmp; break;
  case OPTION_ENUM: s = option_enum_name(d); break;
  default: s = (const char *)d->value; break;
  }
  size_t n = strlen(s);
  if (n >= len) n = len - 1;
  memcpy(buf, s, n);
  buf[n] = '\0';
}

const char *option_default(const option_def_t *d) { return default_text[d - option_table]; }

static void capture_defaults(void) {
  for (unsigned i = 0; i < option_count; i++)
    option_format(&option_table[i], default_text[i], sizeof(default_text[i]));
}

/* jemalloc's config sources. Programs written for jemalloc set them; tessera honours the
 * options it shares with jemalloc (same names, same meaning) and names the others in
 * one line instead of a line each: they are jemalloc's, not mistakes. */
extern const char *malloc_conf __attribute__((weak));

COLD_TEXT static void parse_jemalloc_conf(const char *conf, const char *source) {
  char unknown[256];
  size_t n = 0;
  for (const char *p = conf; *p;) {
    const char *end = p;
    while (*end && *end != ',') end++;
    const char *colon = memchr(p, ':', (size_t)(end - p));
    size_t keylen = (size_t)((colon ? colon : end) - p);
    if (option_find(p, keylen) != NULL) {
      parse_entry(p, (size_t)(end - p), source); /* counts what it rejects */
    } else if (end > p) {
      if (n > 0) put(unknown, sizeof(unknown), &n, ", ", 2);
      put(unknown, sizeof(unknown), &n, p, keylen);
    }
    p = *end ? end + 1 : end;
  }
  if (n == 0) return;
  unknown[n] = '\0';
  os_write_stderr("tessera: ");
  os_write_stderr(source);
  os_write_stderr(": ignoring jemalloc options tessera does not have: ");
  os_write_stderr(unknown);
  os_write_stderr(" (tessera reads TESSERA_CONF; see tessera(3))\n");
}

/* One line for two options whose values contradict each other, and what is kept. */
COLD_TEXT static void contradiction(const char *a, const char *b, const char *outcome) {
  char line[400];
  size_t n = 0;
  put(line, sizeof(line), &n, "tessera: contradictory options '", 32);
  put(line, sizeof(line), &n, a, strlen(a));
  put(line, sizeof(line), &n, "' and '", 7);
  put(line, sizeof(line), &n, b, strlen(b));
  put(line, sizeof(line), &n, "' (", 3);
  put(line, sizeof(line), &n, outcome, strlen(outcome));
  put(line, sizeof(line), &n, ")", 1);
  line[n++] = '\n';
  line[n] = '\0';
  os_write_stderr(line);
  rejected_total++;
}

static void check_consistency(void) {
  if (opt_tcache_nslots_small_min > opt_tcache_nslots_small_max) {
    char a[64] = "tcache_nslots_small_min:", b[64] = "tcache_nslots_small_max:";
    format_dec(a + strlen(a), opt_tcache_nslots_small_min);
    format_dec(b + strlen(b), opt_tcache_nslots_small_max);
    contradiction(a, b, "the minimum is above the maximum; using the maximum for both");
    opt_tcache_nslots_small_min = opt_tcache_nslots_small_max;
  }
  if (opt_junk && opt_zero) {
    contradiction("junk:true", "zero:true", "new blocks cannot be both; new blocks are zeroed, freed ones junk-filled");
  }
  if (opt_hardened && (opt_junk || opt_zero)) {
    contradiction("hardened:true", opt_junk ? "junk:true" : "zero:true",
                  "hardened mode zeroes freed blocks and checks them; junk and zero are off");
    opt_junk = opt_zero = false;
  }
  if (opt_hardened && opt_prof) {
    contradiction("hardened:true", "prof:true", "the profiler's sampled blocks have no canaries; prof is off");
    opt_prof = false;
  }
}

static void read_config_file(const char *path, char *buf, size_t len) {
  if (os_read_config_file(path, buf, len)) options_parse(buf, path);
}

const char *option_builtin_conf(void) { return TESSERA_CONF_DEFAULT; }

/* One option source's text at a time (an environment variable, the config file). */
SPARSE_ARRAY char options_source_text[4096];

void options_init(void) {
  char *buf = options_source_text;
  const size_t buf_size = sizeof(options_source_text);
  capture_defaults();
  options_parse(TESSERA_CONF_DEFAULT, "built-in default");
  if (&malloc_conf != NULL && malloc_conf != NULL) parse_jemalloc_conf(malloc_conf, "malloc_conf");
  if (os_getenv("MALLOC_CONF", buf, buf_size)) parse_jemalloc_conf(buf, "MALLOC_CONF");
  if (&tessera_conf != NULL && tessera_conf != NULL) options_parse(tessera_conf, "tessera_conf");
  read_config_file("/etc/tessera.conf", buf, buf_size);
  if (os_getenv("TESSERA_CONF", buf, buf_size)) options_parse(buf, "TESSERA_CONF");
  check_consistency();
  opt_slab_nranges = (unsigned)parse_slab_ranges(opt_slab_sizes, strlen(opt_slab_sizes), opt_slab_ranges);
  if (opt_abort_conf && rejected_total > 0) fatal("aborting on a bad option (abort_conf:true)");
}
