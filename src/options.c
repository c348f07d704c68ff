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
size_t opt_tcache_max = TCACHE_MAX_LIMIT;
unsigned opt_tcache_nslots_small_min = 20;
unsigned opt_tcache_nslots_small_max = 200;
unsigned opt_lg_tcache_nslots_mul = 1;
unsigned opt_narenas = 0;
/* Unused pages are released over dirty_decay_ms (see decay.c); -1 keeps them. */
ssize_t opt_dirty_decay_ms = 5000;
ssize_t opt_muzzy_decay_ms = 0;
bool opt_background_thread = false;
char opt_thp[16] = "default";
bool opt_junk = false;
bool opt_zero = false;
bool opt_stats_print = false;
char opt_stats_print_opts[16] = "";

const option_def_t option_table[] = {
    {"abort_conf", OPTION_BOOL, &opt_abort_conf, 0, 1,
     "Abort on a bad option instead of warning and keeping the default."},
    {"narenas", OPTION_UNSIGNED, &opt_narenas, 0, MAX_ARENAS,
     "Number of arenas; 0 means one per CPU the process may run on."},
    {"tcache", OPTION_BOOL, &opt_tcache, 0, 1, "Per-thread caches of free blocks."},
    {"tcache_max", OPTION_SIZE, &opt_tcache_max, 0, TCACHE_MAX_LIMIT,
     "Largest block size kept in thread caches, in bytes."},
    {"tcache_nslots_small_min", OPTION_UNSIGNED, &opt_tcache_nslots_small_min, 1, 8192,
     "Fewest blocks a small-class thread-cache bin holds."},
    {"tcache_nslots_small_max", OPTION_UNSIGNED, &opt_tcache_nslots_small_max, 1, 8192,
     "Most blocks a small-class thread-cache bin holds."},
    {"lg_tcache_nslots_mul", OPTION_UNSIGNED, &opt_lg_tcache_nslots_mul, 0, 8,
     "A small bin holds (regions per slab) << this, before clamping."},
    {"dirty_decay_ms", OPTION_SSIZE, &opt_dirty_decay_ms, -1, 3600000,
     "Time (ms) over which unused dirty pages are released to the OS; -1 never, 0 at once."},
    {"muzzy_decay_ms", OPTION_SSIZE, &opt_muzzy_decay_ms, -1, 3600000,
     "Time (ms) pages stay lazily freed (MADV_FREE) before release; 0 skips that stage."},
    {"background_thread", OPTION_BOOL, &opt_background_thread, 0, 1,
     "A background thread that releases unused memory while the program is idle."},
    {"thp", OPTION_STRING, opt_thp, 0, sizeof(opt_thp) - 1,
     "Transparent huge pages for arena memory: default (the system's setting), always, never."},
    {"junk", OPTION_BOOL, &opt_junk, 0, 1,
     "Fill new blocks with 0xa5 and freed blocks with 0x5a (debugging; bypasses the thread cache)."},
    {"zero", OPTION_BOOL, &opt_zero, 0, 1, "Zero every new block (debugging; bypasses the thread cache)."},
    {"stats_print", OPTION_BOOL, &opt_stats_print, 0, 1, "Print statistics to stderr at exit."},
    {"stats_print_opts", OPTION_STRING, opt_stats_print_opts, 0, sizeof(opt_stats_print_opts) - 1,
     "Options for the exit statistics: J for JSON."},
};
const unsigned option_count = sizeof(option_table) / sizeof(option_table[0]);

static void complain(const char *source, const char *what, const char *key, size_t keylen,
                     const char *value, size_t valuelen, const char *expected) {
  char line[512];
  size_t n = 0;
#define PUT(s, l)                                            \
  do {                                                       \
    size_t l_ = (l);                                         \
    if (n + l_ > sizeof(line) - 2) l_ = sizeof(line) - 2 - n; \
    memcpy(line + n, (s), l_);                               \
    n += l_;                                                 \
  } while (0)
  PUT("tessera: ", 9);
  PUT(source, strlen(source));
  PUT(": ", 2);
  PUT(what, strlen(what));
  PUT(" '", 2);
  PUT(key, keylen);
  if (value != NULL) {
    PUT(":", 1);
    PUT(value, valuelen);
  }
  PUT("' ", 2);
  PUT(expected, strlen(expected));
#undef PUT
  line[n++] = '\n';
  line[n] = '\0';
  os_write_stderr(line);
  if (opt_abort_conf) fatal("aborting on a bad option (abort_conf:true)");
}

static bool parse_number(const char *s, size_t len, unsigned long long *out) {
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
  case OPTION_SSIZE: {
    bool negative = vlen > 0 && v[0] == '-';
    if (!parse_number(v + negative, vlen - negative, &num) || num > (unsigned long long)LLONG_MAX) return false;
    long long value = negative ? -(long long)num : (long long)num;
    if (value < d->min || value > d->max) return false;
    *(ssize_t *)d->value = (ssize_t)value;
    return true;
  }
  case OPTION_STRING:
    if (vlen > (size_t)d->max) return false;
    memcpy(d->value, v, vlen);
    ((char *)d->value)[vlen] = '\0';
    return true;
  }
  return false;
}

static const char *expectation(const option_def_t *d, char *buf, size_t len) {
  char lo[24], hi[24];
  const char *parts[5] = {"(expected ", "", "", "", "; keeping the previous value)"};
  switch (d->type) {
  case OPTION_BOOL: parts[1] = "true or false"; break;
  case OPTION_STRING: parts[1] = "a string of at most "; parts[2] = format_dec(hi, (unsigned long long)d->max); parts[3] = " characters"; break;
  default:
    parts[1] = "an integer in [";
    if (d->min < 0) { lo[0] = '-'; format_dec(lo + 1, (unsigned long long)-d->min); }
    else format_dec(lo, (unsigned long long)d->min);
    format_dec(hi, (unsigned long long)d->max);
    parts[2] = lo;
    parts[3] = hi;
    break;
  }
  size_t n = 0;
  for (int i = 0; i < 5; i++) {
    const char *p = parts[i];
    if (d->type != OPTION_BOOL && d->type != OPTION_STRING && i == 3) {
      if (n + 2 < len) { buf[n++] = ','; buf[n++] = ' '; }
    }
    for (; *p && n + 1 < len; p++) buf[n++] = *p;
    if (d->type != OPTION_BOOL && d->type != OPTION_STRING && i == 3 && n + 1 < len) buf[n++] = ']';
  }
  buf[n] = '\0';
  return buf;
}

unsigned options_parse(const char *conf, const char *source) {
  unsigned rejected = 0;
  const char *p = conf;
  while (*p) {
    const char *end = strchr(p, ',');
    if (end == NULL) end = p + strlen(p);
    const char *colon = memchr(p, ':', (size_t)(end - p));
    size_t keylen = (size_t)((colon ? colon : end) - p);
    if (keylen == 0 && end == p) { p = *end ? end + 1 : end; continue; } /* empty entry */
    const option_def_t *d = NULL;
    for (unsigned i = 0; i < option_count; i++)
      if (strlen(option_table[i].name) == keylen && memcmp(option_table[i].name, p, keylen) == 0)
        d = &option_table[i];
    if (d == NULL) {
      complain(source, "unknown option", p, keylen, NULL, 0, "(ignored; see docs/options.md)");
      rejected++;
    } else if (colon == NULL) {
      complain(source, "missing value for", p, keylen, NULL, 0, "(expected key:value)");
      rejected++;
    } else {
      const char *v = colon + 1;
      size_t vlen = (size_t)(end - v);
      if (!set_option(d, v, vlen)) {
        char buf[160];
        complain(source, "bad value for", p, keylen, v, vlen, expectation(d, buf, sizeof(buf)));
        rejected++;
      }
    }
    p = *end ? end + 1 : end;
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
  case OPTION_SSIZE:
    if (*(ssize_t *)d->value < 0) { tmp[0] = '-'; format_dec(tmp + 1, (unsigned long long)-*(ssize_t *)d->value); s = tmp; }
    else s = format_dec(tmp, (unsigned long long)*(ssize_t *)d->value);
    break;
  default: s = (const char *)d->value; break;
  }
  size_t n = strlen(s);
  if (n >= len) n = len - 1;
  memcpy(buf, s, n);
  buf[n] = '\0';
}

void options_init(void) {
  static char buf[4096];
  options_parse(TESSERA_CONF_DEFAULT, "built-in default");
  if (&tessera_conf != NULL && tessera_conf != NULL) options_parse(tessera_conf, "tessera_conf");
  if (os_read_config_file("/etc/tessera.conf", buf, sizeof(buf))) {
    size_t n = strlen(buf);
    while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == ' ')) buf[--n] = '\0';
    options_parse(buf, "/etc/tessera.conf");
  }
  if (os_getenv("TESSERA_CONF", buf, sizeof(buf))) options_parse(buf, "TESSERA_CONF");
  if (opt_tcache_nslots_small_min > opt_tcache_nslots_small_max)
    opt_tcache_nslots_small_min = opt_tcache_nslots_small_max;
}
