/* SPDX-License-Identifier: MIT */
/*
 * Habits of jemalloc users that must work, one scenario per invocation (argv[1]); the
 * environment comes from the test's registration (tests/compat/CMakeLists.txt):
 *
 *   malloc_conf_env   MALLOC_CONF=narenas:3,metadata_thp:auto,retain:false: the shared
 *                     option is honoured, the two jemalloc-only ones named in one line
 *   tessera_wins      MALLOC_CONF=narenas:3 TESSERA_CONF=narenas:2: TESSERA_CONF is read last
 *   conf_file_syntax  tessera_conf (below) with comments and line breaks, as in
 *                     /etc/tessera.conf: every entry applied, nothing warned
 *   xallocx           jemalloc's xallocx: a block already between size and size + extra
 *                     stays; a bigger one shrinks to size + extra; growth in place
 *
 * The expected stderr is checked by the scenario itself (it re-runs itself with
 * stderr captured), so each case asserts its exact message.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tessera.h"
#include "tt.h"

/* Read by tessera at start-up, like jemalloc's malloc_conf (only conf_file_syntax sets
 * its options: the others run with TESSERA_CONF overriding nothing it sets). */
const char *tessera_conf = "# the config file's syntax, in the program's own string\n"
                           "tcache_max:16k   # a suffix, a comment, a comma, here\n"
                           "\n"
                           "  dirty_decay_ms:1234,muzzy_decay_ms:0\n";

void *mallocx(size_t size, int flags);
size_t xallocx(void *ptr, size_t size, size_t extra, int flags);
void dallocx(void *ptr, int flags);
int mallctl(const char *name, void *oldp, size_t *oldlenp, void *newp, size_t newlen);

static unsigned read_unsigned(const char *name) {
  unsigned v = 0;
  size_t len = sizeof(v);
  TT_CHECKF(mallctl(name, &v, &len, NULL, 0) == 0, "mallctl %s", name);
  return v;
}

static size_t read_size(const char *name) {
  size_t v = 0, len = sizeof(v);
  TT_CHECKF(mallctl(name, &v, &len, NULL, 0) == 0, "mallctl %s", name);
  return v;
}

static ssize_t read_ssize(const char *name) {
  ssize_t v = 0;
  size_t len = sizeof(v);
  TT_CHECKF(mallctl(name, &v, &len, NULL, 0) == 0, "mallctl %s", name);
  return v;
}

/* Runs this program's scenario `child` with stderr captured; returns what it printed. */
static void child_stderr(const char *self, const char *child, char *out, size_t cap) {
  int fds[2];
  TT_CHECK(pipe(fds) == 0);
  pid_t pid = fork();
  TT_CHECK(pid >= 0);
  if (pid == 0) {
    dup2(fds[1], 2);
    close(fds[0]);
    execl(self, self, child, (char *)NULL);
    _exit(127);
  }
  close(fds[1]);
  size_t n = 0;
  ssize_t got;
  while (n + 1 < cap && (got = read(fds[0], out + n, cap - 1 - n)) > 0) n += (size_t)got;
  out[n] = '\0';
  close(fds[0]);
  int status;
  TT_CHECK(waitpid(pid, &status, 0) == pid);
  TT_CHECKF(WIFEXITED(status) && WEXITSTATUS(status) == 0, "scenario %s failed: %s", child, out);
}

static void check_stderr(const char *self, const char *child, const char *expected) {
  char text[2048];
  child_stderr(self, child, text, sizeof(text));
  TT_CHECKF(strcmp(text, expected) == 0, "%s: stderr\n%s\nexpected\n%s", child, text, expected);
}

static void xallocx_semantics(void) {
  const size_t page = 4096, large1 = 10 * page, large3 = 14 * page; /* large classes: above 32 KiB */
  /* A block of large3 asked to be at least large1 and at most large3: it fits, stays. */
  void *p = mallocx(large3, 0);
  TT_CHECK(p != NULL);
  TT_CHECKF(xallocx(p, large1, large3 - large1, 0) == large3, "kept");
  /* Asked for at most large1: shrinks to it (the tail is freed in place). */
  TT_CHECKF(xallocx(p, large1, 0, 0) == large1, "shrunk");
  /* Growth back into the tail just freed: in place, to size + extra. */
  TT_CHECKF(xallocx(p, large1, large3 - large1, 0) == large3, "grown in place");
  /* A size no neighbour can give: unchanged. */
  TT_CHECKF(xallocx(p, (size_t)1 << 40, 0, 0) == large3, "unchanged when impossible");
  dallocx(p, 0);
}

int main(int argc, char **argv) {
  const char *what = argc > 1 ? argv[1] : "";
  /* The scenarios whose stderr is checked run in a child that prints nothing else. */
  if (strncmp(what, "show_", 5) != 0) tt_require_tessera();
  if (strcmp(what, "malloc_conf_env") == 0) {
    check_stderr(argv[0], "show_narenas_3",
                 "tessera: MALLOC_CONF: ignoring jemalloc options tessera does not have: metadata_thp, "
                 "retain (tessera reads TESSERA_CONF; see tessera(3))\n");
  } else if (strcmp(what, "show_narenas_3") == 0) {
    TT_CHECKF(read_unsigned("opt.narenas") == 3, "narenas from MALLOC_CONF");
  } else if (strcmp(what, "tessera_wins") == 0) {
    TT_CHECKF(read_unsigned("opt.narenas") == 2, "TESSERA_CONF read after MALLOC_CONF");
  } else if (strcmp(what, "conf_file_syntax") == 0) {
    check_stderr(argv[0], "show_conf", "");
  } else if (strcmp(what, "show_conf") == 0) {
    TT_CHECKF(read_size("opt.tcache_max") == 16384, "tcache_max:16k");
    TT_CHECKF(read_ssize("opt.dirty_decay_ms") == 1234, "the entry after a blank line");
    TT_CHECKF(read_ssize("opt.muzzy_decay_ms") == 0, "two entries on a line");
  } else if (strcmp(what, "xallocx") == 0) {
    xallocx_semantics();
  } else {
    fprintf(stderr, "usage: %s malloc_conf_env|tessera_wins|conf_file_syntax|xallocx\n", argv[0]);
    return 2;
  }
  return 0;
}
