/*
 * Options: one table (options.c) names every option with its type, default, range and
 * one line of documentation. The table drives parsing, reading back and the docs.
 *
 * Sources, later overriding earlier: the compiled-in default (TESSERA_CONF_DEFAULT),
 * the `tessera_conf` string a program may define, /etc/tessera.conf (a file, or a
 * symlink whose target is the string), and the TESSERA_CONF environment variable
 * (ignored for setuid programs). Syntax: "key:value,key:value". A bad entry prints one
 * line naming the key, the value and what is accepted, and keeps the previous value;
 * with abort_conf:true (from any source) the process aborts once every source is read.
 */
#ifndef TESSERA_OPTIONS_H
#define TESSERA_OPTIONS_H

#include "types.h"

extern bool opt_abort_conf;
extern bool opt_tcache;
extern bool opt_free_map;
extern size_t opt_tcache_max;
extern unsigned opt_tcache_nslots_small_min;
extern unsigned opt_tcache_nslots_small_max;
extern unsigned opt_lg_tcache_nslots_mul;
extern unsigned opt_narenas; /* 0 = one per CPU */
extern ssize_t opt_dirty_decay_ms;
extern ssize_t opt_muzzy_decay_ms;
extern char opt_arena_select[16];
extern bool opt_background_thread;
extern size_t opt_background_thread_auto;
extern char opt_thp[16];
extern bool opt_junk;
extern bool opt_zero;
extern bool opt_stats_print;
extern char opt_stats_print_opts[16];
/* "lo-hi:pages|lo-hi:pages|...": slab size in pages for the small classes whose size
 * lies in [lo, hi]; applied by size_class_init in order, later ranges winning. */
extern char opt_slab_sizes[256];

typedef enum option_type { OPTION_BOOL, OPTION_UNSIGNED, OPTION_SIZE, OPTION_SSIZE, OPTION_STRING } option_type_t;

typedef struct option_def {
  const char *name;
  option_type_t type;
  void *value;
  long long min, max; /* numbers: the accepted range; strings: max = capacity */
  const char *doc;
  /* Strings only, both optional: what a value must look like (for messages and the
   * docs), and the check that enforces it. */
  const char *accepted;
  bool (*valid)(const char *value, size_t len);
} option_def_t;

extern const option_def_t option_table[];
extern const unsigned option_count;
#define OPTION_MAX 48 /* room in the defaults table; a static assert keeps the table below */

/* The text of option d's compiled-in default (captured before any source is read). */
const char *option_default(const option_def_t *d);
/* The table entry named name, or NULL. */
const option_def_t *option_find(const char *name, size_t len);
/* Writes "true or false", "an integer in [lo, hi]", ... (what the option accepts). */
void option_accepted(const option_def_t *d, char *buf, size_t len);

/* Reads every source. Warnings go to stderr; with abort_conf:true a bad entry aborts. */
void options_init(void);
/* Parses one "key:value,..." string; source names it in messages. Returns the number
 * of entries rejected. */
unsigned options_parse(const char *conf, const char *source);
/* Writes the current value of option d as text into buf. */
void option_format(const option_def_t *d, char *buf, size_t len);

#endif
