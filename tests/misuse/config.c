/* SPDX-License-Identifier: MIT */
/*
 * misuse.config_<case>: TESSERA_CONF handling. The test re-executes itself with a given
 * TESSERA_CONF, the child does ordinary allocation work and prints "done"; the parent checks
 * the child's exit status, stdout and stderr:
 *   silent:         no TESSERA_CONF: the library prints nothing at all;
 *   unknown_key:    an unknown key gives one warning line "tessera: ..." naming the key, and
 *                   the program runs normally;
 *   mixed:          valid keys around an unknown one: same warning, normal run;
 *   stats_print:    stats_print:true prints statistics at exit to stderr, mentioning tessera.
 *
 * usage: config <case>
 */
#include "tt.h"

#include <malloc.h>

/* The child's work: enough allocation to initialise everything, then "done" on stdout. */
static int child_main(void) {
  if (!tt_on_tessera()) return 10;
  void *blocks[1000];
  for (int i = 0; i < 1000; i++) {
    blocks[i] = malloc((size_t)(i % 100) * 50 + 1);
    if (blocks[i] == NULL) return 11;
  }
  for (int i = 0; i < 1000; i++) free(blocks[i]);
  void *big = malloc(5 << 20);
  if (big == NULL) return 12;
  free(big);
  printf("done\n");
  return 0;
}

typedef struct result {
  int status;
  char out[4096];
  char err[65536];
} result;

static void read_fd(int fd, char *buf, size_t cap) {
  size_t len = 0;
  for (;;) {
    ssize_t r = read(fd, buf + len, cap - 1 - len);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0 || (len += (size_t)r) == cap - 1) break;
  }
  buf[len] = '\0';
}

/* Runs this program as "config --child" with TESSERA_CONF = conf (NULL: unset). stderr is
 * read fully before stdout: the child's stdout output is tiny and cannot fill its pipe. */
static void run_child(const char *conf, result *r) {
  int out_pipe[2], err_pipe[2];
  TT_CHECK(pipe(out_pipe) == 0 && pipe(err_pipe) == 0);
  fflush(NULL);
  pid_t pid = fork();
  TT_CHECK(pid >= 0);
  if (pid == 0) {
    dup2(out_pipe[1], 1);
    dup2(err_pipe[1], 2);
    close(out_pipe[0]);
    close(out_pipe[1]);
    close(err_pipe[0]);
    close(err_pipe[1]);
    if (conf != NULL) setenv("TESSERA_CONF", conf, 1);
    else unsetenv("TESSERA_CONF");
    alarm(30);
    execl("/proc/self/exe", "config", "--child", (char *)NULL);
    _exit(127);
  }
  close(out_pipe[1]);
  close(err_pipe[1]);
  read_fd(err_pipe[0], r->err, sizeof r->err);
  read_fd(out_pipe[0], r->out, sizeof r->out);
  close(out_pipe[0]);
  close(err_pipe[0]);
  TT_CHECK(waitpid(pid, &r->status, 0) == pid);
}

static void expect_normal_run(const char *conf, const result *r) {
  TT_CHECKF(WIFEXITED(r->status) && WEXITSTATUS(r->status) == 0,
            "TESSERA_CONF=%s: child %s %d (10: not on tessera)\nstderr:\n%s", conf ? conf : "(unset)",
            WIFEXITED(r->status) ? "exited with" : "killed by signal",
            WIFEXITED(r->status) ? WEXITSTATUS(r->status) : WTERMSIG(r->status), r->err);
  TT_CHECKF(strcmp(r->out, "done\n") == 0, "TESSERA_CONF=%s: stdout is \"%s\", want \"done\"",
            conf ? conf : "(unset)", r->out);
}

/* A line of stderr that starts with "tessera: " and mentions key. */
static int has_warning_about(const char *err, const char *key) {
  for (const char *line = err; *line != '\0';) {
    const char *end = strchr(line, '\n');
    size_t len = end ? (size_t)(end - line) : strlen(line);
    if (strncmp(line, "tessera: ", 9) == 0) {
      char buf[1024];
      size_t n = len < sizeof buf - 1 ? len : sizeof buf - 1;
      memcpy(buf, line, n);
      buf[n] = '\0';
      if (strstr(buf, key) != NULL) return 1;
    }
    line += len + (end ? 1 : 0);
  }
  return 0;
}

int main(int argc, char **argv) {
  TT_CHECKF(argc == 2, "usage: config silent|unknown_key|mixed|stats_print");
  if (strcmp(argv[1], "--child") == 0) return child_main();
  tt_require_tessera();
  static result r;
  const char *c = argv[1];
  if (strcmp(c, "silent") == 0) {
    run_child(NULL, &r);
    expect_normal_run(NULL, &r);
    TT_CHECKF(r.err[0] == '\0', "without TESSERA_CONF the library wrote to stderr:\n%s", r.err);
  } else if (strcmp(c, "unknown_key") == 0) {
    const char *conf = "no_such_option_xyz:1";
    run_child(conf, &r);
    expect_normal_run(conf, &r);
    TT_CHECKF(has_warning_about(r.err, "no_such_option_xyz"),
              "TESSERA_CONF=%s: no \"tessera: \" line naming the key on stderr:\n%s", conf,
              r.err);
  } else if (strcmp(c, "mixed") == 0) {
    const char *conf = "tcache:false,bogus_key:7,narenas:2";
    run_child(conf, &r);
    expect_normal_run(conf, &r);
    TT_CHECKF(has_warning_about(r.err, "bogus_key"),
              "TESSERA_CONF=%s: no \"tessera: \" line naming bogus_key on stderr:\n%s", conf,
              r.err);
    TT_CHECKF(!has_warning_about(r.err, "narenas") && !has_warning_about(r.err, "tcache"),
              "TESSERA_CONF=%s: a valid key was reported as bad:\n%s", conf, r.err);
  } else if (strcmp(c, "stats_print") == 0) {
    const char *conf = "stats_print:true";
    run_child(conf, &r);
    expect_normal_run(conf, &r);
    TT_CHECKF(strstr(r.err, "tessera") != NULL,
              "TESSERA_CONF=%s: no statistics mentioning tessera on stderr at exit:\n%s", conf,
              r.err);
    TT_CHECKF(strlen(r.err) > 100, "TESSERA_CONF=%s: statistics suspiciously short:\n%s", conf,
              r.err);
  } else {
    TT_FAIL("unknown case %s", c);
  }
  printf("misuse.config_%s: ok\n", c);
  return 0;
}
