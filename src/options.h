/* SPDX-License-Identifier: MIT */
/*
 * Options: one table (options.c) names every option with its type, default, range and
 * one line of documentation. The table drives parsing, reading back (opt.*), the stats
 * header and the docs test.
 *
 * Sources, later overriding earlier: the compiled-in default (TESSERA_CONF_DEFAULT);
 * jemalloc's `malloc_conf` symbol and MALLOC_CONF environment variable (the names
 * tessera shares with jemalloc are honoured, the others named in one warning); the
 * `tessera_conf` string a program may define; /etc/tessera.conf (a file, with `#`
 * comments and entries on separate lines or separated by commas, or a symlink whose
 * target is the string); and the TESSERA_CONF environment variable (the two variables
 * are ignored for setuid programs). Syntax: "key:value,key:value". A bad entry, or a
 * combination that contradicts itself, prints one line naming the keys, the values and
 * what is accepted, and keeps a defined value; with abort_conf:true (from any source)
 * the process aborts once every source is read.
 *
 * This is the lowest layer that knows about tessera (only the OS layer and fatal.c are
 * below it), so every other layer may read opt_* variables.
 */
#ifndef TESSERA_OPTIONS_H
#define TESSERA_OPTIONS_H

#include "types.h"

typedef enum thp_mode { THP_DEFAULT, THP_ALWAYS, THP_NEVER } thp_mode_t; /* os_set_huge_pages' modes */
typedef enum arena_select { ARENA_SELECT_CPU, ARENA_SELECT_LEAST_LOADED } arena_select_t;

extern bool opt_abort_conf;
extern bool opt_tcache;
extern bool opt_exact_classes; /* exact_class.h */
extern bool opt_lending;       /* bin.h */
extern bool opt_free_map;
extern size_t opt_tcache_max;
extern size_t opt_tcache_large_max;
extern unsigned opt_tcache_nslots_small_min;
extern unsigned opt_tcache_nslots_small_max;
extern unsigned opt_lg_tcache_nslots_mul;
extern unsigned opt_narenas; /* 0 = one per CPU */
extern ssize_t opt_dirty_decay_ms;
extern ssize_t opt_muzzy_decay_ms;
extern unsigned opt_arena_select; /* arena_select_t */
extern bool opt_background_thread;
extern size_t opt_background_thread_auto;
extern size_t opt_reserve; /* bytes of the memory reserve (oom.c) */
extern size_t opt_limit;   /* soft limit on mapped bytes, 0 = none (oom.c) */
extern unsigned opt_thp; /* thp_mode_t */
typedef enum gather_mode { GATHER_AUTO, GATHER_ALWAYS, GATHER_NEVER } gather_mode_t;
extern unsigned opt_gather; /* gather_mode_t */
extern bool opt_junk;
extern bool opt_zero;
extern bool opt_hardened;               /* hardened mode (hardened.h) */
extern size_t opt_hardened_quarantine; /* bytes held back from reuse in hardened mode */
extern bool opt_stats_print;
extern char opt_stats_print_opts[16];
/* stats_print's output file: "<prefix>.<pid>.json" (or .txt); empty: stderr. */
extern char opt_stats_prefix[256];
/* "NAME|NAME|...": threads with these names get an arena of their own (arena.c). */
extern char opt_arena_exclusive[256];
extern unsigned opt_percpu_arena; /* jemalloc's option: only "disabled" */
/* The heap profiler (docs/profiling.md) and the memory timeline. */
extern bool opt_prof;
extern bool opt_prof_active;
extern unsigned opt_lg_prof_sample;
extern char opt_prof_prefix[256];
extern bool opt_prof_final;
extern bool opt_prof_gdump;
extern ssize_t opt_lg_prof_interval; /* -1: off */
extern bool opt_prof_leak;
extern size_t opt_timeline_ms; /* 0: off */
extern char opt_timeline_prefix[256];
/* "lo-hi:pages|lo-hi:pages|...": slab size in pages for the small classes whose size
 * lies in [lo, hi], later ranges winning; parsed into opt_slab_ranges. */
extern char opt_slab_sizes[256];

typedef struct slab_range {
  size_t lo, hi, pages;
} slab_range_t;
#define SLAB_RANGES_MAX 64
extern slab_range_t opt_slab_ranges[SLAB_RANGES_MAX];
extern unsigned opt_slab_nranges;

typedef enum option_type {
  OPTION_BOOL,
  OPTION_UNSIGNED,
  OPTION_SIZE,
  OPTION_SSIZE,
  OPTION_STRING,
  OPTION_ENUM, /* an unsigned holding the index of one of `names` */
} option_type_t;

typedef struct option_def {
  const char *name;
  option_type_t type;
  void *value;
  long long min, max; /* numbers: the accepted range; strings: max = capacity */
  /* Strings: what a value must look like (for messages and the docs), and the check
   * that enforces it (both optional). */
  const char *accepted;
  bool (*valid)(const char *value, size_t len);
  const char *const *names; /* enums: the values' names, NULL-terminated */
} option_def_t;

extern const option_def_t option_table[];
extern const unsigned option_count;
#define OPTION_MAX 64 /* room in the defaults table; a static assert keeps the table below */

/* Option d's one-line description (for the docs). */
const char *option_doc(const option_def_t *d);
/* The text of option d's compiled-in default (captured before any source is read). */
const char *option_default(const option_def_t *d);
/* The table entry named name, or NULL. */
const option_def_t *option_find(const char *name, size_t len);
/* Writes "true or false", "an integer in [lo, hi]", ... (what the option accepts). */
void option_accepted(const option_def_t *d, char *buf, size_t len);

/* The compiled-in option string (TESSERA_CONF_DEFAULT; config.malloc_conf). */
const char *option_builtin_conf(void);
/* Reads every source. Warnings go to stderr; with abort_conf:true a bad entry aborts. */
void options_init(void);
/* Parses one "key:value,..." string; source names it in messages. Entries may also be
 * separated by newlines, and `#` starts a comment that runs to the end of the line.
 * Returns the number of entries rejected. */
unsigned options_parse(const char *conf, const char *source);
/* Writes the current value of option d as text into buf. */
void option_format(const option_def_t *d, char *buf, size_t len);
/* The name of enum option d's current value. */
const char *option_enum_name(const option_def_t *d);

#endif
