/* SPDX-License-Identifier: MIT */
/*
 * ctl.options: every option is parsed from TESSERA_CONF, read back through opt.*, and
 * (where the effect exists) observed; bad entries print the expected line and keep the
 * default; abort_conf:true aborts. Each case re-executes this program with TESSERA_CONF
 * set and checks the child's exit status and stderr.
 *
 * usage: options            (runs every case)
 *        options --child <case>
 */
#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tessera.h"
#include "tt.h"

/* ---- reading values ---- */

static bool opt_bool(const char *name) {
  bool v;
  size_t len = sizeof(v);
  TT_CHECKF(tessera_ctl(name, &v, &len, NULL, 0) == 0, "%s", name);
  return v;
}

static uint64_t read_num(const char *name, size_t size) {
  uint64_t v = 0;
  size_t len = size;
  TT_CHECKF(tessera_ctl(name, &v, &len, NULL, 0) == 0, "%s", name);
  if (size == 4) return (uint32_t)v;
  return v;
}
#define READ_U(name) ((unsigned)read_num(name, sizeof(unsigned)))
#define READ_Z(name) ((size_t)read_num(name, sizeof(size_t)))
#define READ_SZ(name) ((ssize_t)read_num(name, sizeof(ssize_t)))

static const char *opt_string(const char *name) {
  const char *v;
  size_t len = sizeof(v);
  TT_CHECKF(tessera_ctl(name, &v, &len, NULL, 0) == 0, "%s", name);
  return v;
}

static void refresh(void) {
  uint64_t e = 1;
  TT_CHECK(tessera_ctl("epoch", NULL, NULL, &e, sizeof(e)) == 0);
}

/* Cached bytes in every thread cache after allocating and freeing n blocks of size. */
static size_t cached_after(size_t size, unsigned n) {
  void *p[512];
  for (unsigned i = 0; i < n; i++) TT_CHECK((p[i] = malloc(size)) != NULL);
  for (unsigned i = 0; i < n; i++) free(p[i]);
  refresh();
  return READ_Z("stats.arenas.4096.tcache_bytes");
}

/* ---- the children's checks ---- */

static int child_defaults(void) {
  TT_CHECK(READ_U("opt.narenas") == 0 && opt_bool("opt.tcache") && READ_Z("opt.tcache_max") == 32768);
  TT_CHECK(strcmp(opt_string("opt.thp"), "default") == 0 && strcmp(opt_string("opt.slab_sizes"), "") == 0);
  TT_CHECK(!opt_bool("opt.junk") && !opt_bool("opt.zero") && !opt_bool("opt.abort_conf"));
  TT_CHECK(READ_SZ("opt.dirty_decay_ms") == 5000 && READ_U("opt.tcache_nslots_small_min") == 20);
  TT_CHECK(opt_bool("arenas.free_map")); /* the tests run without an address-space limit */
  return 0;
}

static int child_narenas(void) {
  TT_CHECK(READ_U("opt.narenas") == 1);
  TT_CHECK(READ_U("arenas.narenas") == 1);
  return 0;
}

static int child_tcache_off(void) {
  TT_CHECK(!opt_bool("opt.tcache"));
  TT_CHECK(cached_after(64, 100) == 0);
  TT_CHECK(!opt_bool("thread.tcache.enabled"));
  TT_CHECK(READ_Z("arenas.tcache_max") == 0);
  refresh();
  TT_CHECK(read_num("stats.arenas.4096.small.nmalloc", 8) >= 100);
  return 0;
}

static int child_tcache_max(void) {
  TT_CHECK(READ_Z("opt.tcache_max") == 1024);
  size_t base = cached_after(2048, 10);
  TT_CHECK(cached_after(2048, 10) == base); /* 2 KiB blocks are not cached */
  TT_CHECK(cached_after(512, 10) >= base + 512);
  return 0;
}

static int child_nslots(void) {
  TT_CHECK(READ_U("opt.tcache_nslots_small_min") == 10 && READ_U("opt.tcache_nslots_small_max") == 20);
  TT_CHECK(READ_U("opt.lg_tcache_nslots_mul") == 0);
  size_t before = cached_after(64, 0);
  size_t after = cached_after(64, 300);
  TT_CHECKF(after - before <= 20 * 64, "cached %zu bytes of 64-byte blocks", after - before);
  return 0;
}

static int child_slab_sizes(void) {
  TT_CHECK(strcmp(opt_string("opt.slab_sizes"), "1-4096:17|100-200:1|128-128:2") == 0);
  TT_CHECK(READ_Z("arenas.bin.7.size") == 128 && READ_Z("arenas.bin.7.slab_size") == 8192);
  TT_CHECK(READ_Z("arenas.bin.6.size") == 112 && READ_Z("arenas.bin.6.slab_size") == 4096);
  TT_CHECK(READ_Z("arenas.bin.0.slab_size") == 16384);  /* 17 pages: clamped to 1024 regions */
  TT_CHECK(READ_Z("arenas.bin.29.size") == 4096 && READ_Z("arenas.bin.29.slab_size") == 69632); /* 17 pages */
  TT_CHECK(READ_Z("arenas.bin.31.size") == 5120 && READ_Z("arenas.bin.31.slab_size") == 20480); /* outside: the default */
  void *p[300];
  for (int i = 0; i < 300; i++) TT_CHECK((p[i] = malloc(128)) != NULL);
  for (int i = 0; i < 300; i++) free(p[i]);
  return 0;
}

static int child_decay(void) {
  TT_CHECK(READ_SZ("opt.dirty_decay_ms") == 1000 && READ_SZ("opt.muzzy_decay_ms") == -1);
  TT_CHECK(READ_SZ("arenas.dirty_decay_ms") == 1000);
  free(malloc(1));
  TT_CHECK(READ_SZ("arena.0.dirty_decay_ms") == 1000 && READ_SZ("arena.0.muzzy_decay_ms") == -1);
  ssize_t v = 2000, old;
  size_t len = sizeof(old);
  TT_CHECK(tessera_ctl("arena.0.dirty_decay_ms", &old, &len, &v, sizeof(v)) == 0 && old == 1000);
  TT_CHECK(READ_SZ("arena.0.dirty_decay_ms") == 2000);
  return 0;
}

static int child_misc(void) {
  TT_CHECK(opt_bool("opt.background_thread"));
  TT_CHECK(strcmp(opt_string("opt.thp"), "never") == 0);
  TT_CHECK(opt_bool("opt.stats_print") == false);
  return 0;
}

static int child_junk(void) {
  TT_CHECK(opt_bool("opt.junk"));
  unsigned char *p = malloc(100);
  TT_CHECK(p != NULL && p[0] == 0xa5 && p[99] == 0xa5);
  free(p);
  return 0;
}

/* free_map:false: no reservation, and every free on the slow path still recycles blocks
 * through the thread cache and catches a double free on top of it. */
static int child_free_map(void) {
  TT_CHECK(!opt_bool("opt.free_map") && !opt_bool("arenas.free_map"));
  void *first = malloc(48);
  free(first);
  TT_CHECK(malloc(48) == first); /* handed back from the cache, newest first */
  free(first);
  return 0;
}

static int child_zero(void) {
  TT_CHECK(opt_bool("opt.zero"));
  for (int i = 0; i < 100; i++) {
    unsigned char *p = malloc(200);
    TT_CHECK(p != NULL && p[0] == 0 && p[199] == 0);
    memset(p, 0xff, 200);
    free(p);
  }
  return 0;
}

static int child_work(void);

/* Contradictory options: the outcome each warning announces. */
static int child_nslots_contradiction(void) {
  TT_CHECK(READ_U("opt.tcache_nslots_small_min") == 100 && READ_U("opt.tcache_nslots_small_max") == 100);
  return 0;
}

static int child_junk_zero(void) {
  TT_CHECK(opt_bool("opt.junk") && opt_bool("opt.zero"));
  unsigned char *p = malloc(200);
  TT_CHECK(p != NULL && p[0] == 0 && p[199] == 0); /* new blocks zeroed */
  free(p);
  return 0;
}

static int child_hardened_junk(void) {
  TT_CHECK(opt_bool("opt.hardened") && !opt_bool("opt.junk") && !opt_bool("opt.zero"));
  return child_work();
}

static int child_hardened_prof(void) {
  TT_CHECK(opt_bool("opt.hardened") && !opt_bool("opt.prof"));
  return child_work();
}

static int child_work(void) {
  void *p[100];
  for (int i = 0; i < 100; i++) TT_CHECK((p[i] = malloc((size_t)i * 40 + 1)) != NULL);
  for (int i = 0; i < 100; i++) free(p[i]);
  return 0;
}

typedef struct check {
  const char *name;
  int (*fn)(void);
} check_t;

static const check_t checks[] = {
    {"defaults", child_defaults}, {"narenas", child_narenas},   {"tcache_off", child_tcache_off},
    {"tcache_max", child_tcache_max}, {"nslots", child_nslots}, {"slab_sizes", child_slab_sizes},
    {"decay", child_decay},       {"misc", child_misc},         {"junk", child_junk},
    {"zero", child_zero},         {"work", child_work},         {"free_map", child_free_map},
    {"nslots_contradiction", child_nslots_contradiction}, {"junk_zero", child_junk_zero},
    {"hardened_junk", child_hardened_junk}, {"hardened_prof", child_hardened_prof},
};

static int run_check(const char *name) {
  for (size_t i = 0; i < sizeof(checks) / sizeof(checks[0]); i++)
    if (strcmp(checks[i].name, name) == 0) return checks[i].fn();
  return 99;
}

/* ---- the parent ---- */

typedef struct outcome {
  int status;
  char err[262144]; /* room for the whole JSON stats document */
} outcome_t;

static void run_child(const char *check, const char *conf, outcome_t *o) {
  int pipefd[2];
  TT_CHECK(pipe(pipefd) == 0);
  fflush(NULL);
  pid_t pid = fork();
  TT_CHECK(pid >= 0);
  if (pid == 0) {
    dup2(pipefd[1], 2);
    close(pipefd[0]);
    close(pipefd[1]);
    setenv("TESSERA_CONF", conf, 1);
    alarm(30);
    execl("/proc/self/exe", "options", "--child", check, (char *)NULL);
    _exit(127);
  }
  close(pipefd[1]);
  size_t len = 0;
  for (;;) {
    ssize_t r = read(pipefd[0], o->err + len, sizeof(o->err) - 1 - len);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0 || (len += (size_t)r) == sizeof(o->err) - 1) break;
  }
  o->err[len] = '\0';
  close(pipefd[0]);
  TT_CHECK(waitpid(pid, &o->status, 0) == pid);
}

static unsigned count_lines(const char *s) {
  unsigned n = 0;
  for (; *s; s++) n += *s == '\n';
  return n;
}

/* conf must run check cleanly; stderr must be exactly `expected` ("" = silent). */
static void expect(const char *check, const char *conf, const char *expected) {
  static outcome_t o;
  run_child(check, conf, &o);
  TT_CHECKF(WIFEXITED(o.status) && WEXITSTATUS(o.status) == 0, "%s with TESSERA_CONF=%s: status %d, stderr:\n%s",
            check, conf, o.status, o.err);
  TT_CHECKF(strcmp(o.err, expected) == 0, "TESSERA_CONF=%s: stderr\n%s\nexpected\n%s", conf, o.err, expected);
}

static void expect_abort(const char *conf, const char *line) {
  static outcome_t o;
  run_child("work", conf, &o);
  TT_CHECKF(WIFSIGNALED(o.status) && WTERMSIG(o.status) == SIGABRT, "TESSERA_CONF=%s: status %d", conf, o.status);
  TT_CHECKF(strstr(o.err, line) != NULL, "TESSERA_CONF=%s: stderr\n%s\nlacks %s", conf, o.err, line);
}

static void expect_stats_json(void) {
  static outcome_t o;
  run_child("work", "stats_print:true,stats_print_opts:J", &o);
  TT_CHECK(WIFEXITED(o.status) && WEXITSTATUS(o.status) == 0);
  TT_CHECKF(strstr(o.err, "\"schema\": 2") != NULL && strstr(o.err, "\"bins\"") != NULL, "%s", o.err);
  run_child("work", "stats_print:true,stats_print_opts:bx", &o);
  TT_CHECK(strstr(o.err, "tessera") != NULL && strstr(o.err, "bins:") == NULL && count_lines(o.err) > 3);
}

#define BAD(key_value, accepted) \
  "tessera: TESSERA_CONF: bad value for '" key_value "' (expected " accepted "; keeping the previous value)\n"

static void run_all(void) {
  expect("defaults", "", "");
  expect("narenas", "narenas:1", "");
  expect("tcache_off", "tcache:false", "");
  expect("tcache_max", "tcache_max:1024", "");
  expect("nslots", "tcache_nslots_small_min:10,tcache_nslots_small_max:20,lg_tcache_nslots_mul:0", "");
  expect("slab_sizes", "slab_sizes:1-4096:17|100-200:1|128-128:2", "");
  expect("decay", "dirty_decay_ms:1000,muzzy_decay_ms:-1", "");
  expect("misc", "background_thread:true,thp:never", "");
  expect("junk", "junk:true", "");
  expect("zero", "zero:true", "");
  expect("free_map", "free_map:false", "");
  expect_stats_json();
  /* Bad entries: one line each, defaults kept, the good entries around them applied. */
  expect("defaults", "narenas:1000", BAD("narenas:1000", "an integer in [0, 256]"));
  expect("defaults", "tcache:yes", BAD("tcache:yes", "true or false"));
  expect("defaults", "thp:sometimes", BAD("thp:sometimes", "default, always or never"));
  expect("defaults", "dirty_decay_ms:-5", BAD("dirty_decay_ms:-5", "an integer in [-1, 3600000]"));
  expect("defaults", "slab_sizes:1-x:3",
         BAD("slab_sizes:1-x:3", "lo-hi:pages ranges separated by |, 1 <= lo <= hi, pages >= 1, 255 characters at most"));
  expect("defaults", "slab_sizes:200-100:3",
         BAD("slab_sizes:200-100:3", "lo-hi:pages ranges separated by |, 1 <= lo <= hi, pages >= 1, 255 characters at most"));
  expect("defaults", "stats_print_opts:Q", BAD("stats_print_opts:Q", "letters from JgmablxtTdeh"));
  expect("defaults", "no_such_option:1", "tessera: TESSERA_CONF: unknown option 'no_such_option' (ignored; see tessera(3))\n");
  expect("defaults", "narenas", "tessera: TESSERA_CONF: missing value for 'narenas' (expected key:value)\n");
  expect("narenas", "tcache_max:big,narenas:1", BAD("tcache_max:big", "an integer in [0, 32768]"));
  /* Contradictory values: one line each, as for a bad value, and the outcome it names. */
  expect("nslots_contradiction", "tcache_nslots_small_min:300,tcache_nslots_small_max:100",
         "tessera: contradictory options 'tcache_nslots_small_min:300' and 'tcache_nslots_small_max:100' (the "
         "minimum is above the maximum; using the maximum for both)\n");
  expect("junk_zero", "junk:true,zero:true",
         "tessera: contradictory options 'junk:true' and 'zero:true' (new blocks cannot be both; new blocks are "
         "zeroed, freed ones junk-filled)\n");
  expect("hardened_junk", "hardened:true,junk:true",
         "tessera: contradictory options 'hardened:true' and 'junk:true' (hardened mode zeroes freed blocks and "
         "checks them; junk and zero are off)\n");
  expect("hardened_prof", "hardened:true,prof:true",
         "tessera: contradictory options 'hardened:true' and 'prof:true' (the profiler's sampled blocks have no "
         "canaries; prof is off)\n");
  expect_abort("abort_conf:true,narenas:bogus", "bad value for 'narenas:bogus'");
  expect_abort("narenas:bogus,abort_conf:true", "aborting on a bad option (abort_conf:true)");
}

int main(int argc, char **argv) {
  if (argc == 3 && strcmp(argv[1], "--child") == 0) return run_check(argv[2]);
  run_all();
  printf("ctl.options: all cases passed\n");
  return 0;
}
