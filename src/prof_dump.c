/* SPDX-License-Identifier: MIT */
/* prof_dump: see prof_dump.h. */
#include "prof_dump.h"
#include "prof_meta.h"

#include "prof_jeprof.h"
#include "prof_pprof.h"
#include "prof_report.h"
#include "os.h"

#include <string.h>

static _Atomic unsigned dump_seq;

typedef struct name_builder {
  char *buf;
  size_t size, len;
} name_builder_t;

static void nb_str(name_builder_t *b, const char *s) {
  while (*s && b->len + 1 < b->size) b->buf[b->len++] = *s++;
  b->buf[b->len] = '\0';
}

static void nb_dec(name_builder_t *b, unsigned long long v) {
  char tmp[24];
  int i = sizeof(tmp) - 1;
  tmp[i] = '\0';
  do tmp[--i] = (char)('0' + v % 10);
  while ((v /= 10) != 0);
  nb_str(b, tmp + i);
}

void prof_dump_filename(char *buf, unsigned long size, const char *prefix, unsigned seq, char trigger,
                        const char *suffix) {
  name_builder_t b = {buf, size, 0};
  char t[3] = {'.', trigger, '\0'};
  nb_str(&b, prefix);
  nb_str(&b, ".");
  nb_dec(&b, (unsigned long long)os_getpid());
  if (trigger) {
    nb_str(&b, ".");
    nb_dec(&b, seq);
    nb_str(&b, t);
  }
  nb_str(&b, suffix);
}

/* Everything a locked writer needs, in base memory (the writer's buffer is 16 KiB). */
typedef struct dump_job {
  prof_out_t out;
  prof_snapshot_t snap;
  char pb_path[PROF_PATH_MAX], summary_path[PROF_PATH_MAX];
  const char *title;
  unsigned max_sites;
  int report_fd; /* leak report: write here instead of the summary file */
  bool ok;
} dump_job_t;

static void write_symbolized(const prof_module_table_t *t, void *arg) {
  dump_job_t *j = arg;
  prof_symbolizer_t sym;
  if (!prof_symbolizer_init(&sym, t)) {
    j->ok = false;
    return;
  }
  if (j->pb_path[0]) {
    j->ok &= prof_out_open(&j->out, j->pb_path, true, false);
    j->ok &= prof_pprof_write(&j->out, &j->snap, &sym);
    j->ok &= prof_out_close(&j->out);
  }
  if (j->report_fd < 0 && !j->summary_path[0]) {
    prof_symbolizer_fini(&sym);
    return;
  }
  if (j->report_fd >= 0) prof_out_open_fd(&j->out, j->report_fd, false);
  else j->ok &= prof_out_open(&j->out, j->summary_path, false, false);
  prof_report_write(&j->out, &j->snap, &sym, j->title, j->max_sites, 16, j->report_fd < 0);
  if (j->report_fd >= 0) {
    prof_out_flush(&j->out);
    j->ok &= !j->out.failed;
  } else {
    j->ok &= prof_out_close(&j->out);
  }
  prof_symbolizer_fini(&sym);
}

static dump_job_t *job_new(void) {
  dump_job_t *j = prof_meta_alloc(sizeof(dump_job_t));
  if (!j) return NULL;
  if (!prof_snapshot_take(&j->snap)) {
    prof_meta_free(j, sizeof(*j));
    return NULL;
  }
  j->ok = true;
  j->report_fd = -1;
  return j;
}

static void job_free(dump_job_t *j) {
  prof_snapshot_release(&j->snap);
  prof_meta_free(j, sizeof(*j));
}

/* Writes heap_path and j->pb_path (and j->summary_path if set), then frees j. */
static bool dump_job_run(dump_job_t *j, const char *heap_path) {
  j->ok &= prof_out_open(&j->out, heap_path, false, false);
  prof_jeprof_write(&j->out, &j->snap);
  j->ok &= prof_out_close(&j->out);
  j->title = "tessera heap profile: top allocation sites";
  j->max_sites = PROF_SUMMARY_SITES;
  if (!prof_modules_locked(write_symbolized, j)) j->ok = false;
  bool ok = j->ok;
  job_free(j);
  return ok;
}

bool prof_dump(const char *prefix, char trigger) {
  dump_job_t *j = job_new();
  if (!j) return false;
  unsigned seq = atomic_fetch_add(&dump_seq, 1);
  char heap_path[PROF_PATH_MAX];
  prof_dump_filename(heap_path, sizeof(heap_path), prefix, seq, trigger, ".heap");
  prof_dump_filename(j->pb_path, sizeof(j->pb_path), prefix, seq, trigger, ".pb.gz");
  prof_dump_filename(j->summary_path, sizeof(j->summary_path), prefix, 0, 0, ".summary.txt");
  return dump_job_run(j, heap_path);
}

bool prof_dump_named(const char *heap_path) {
  size_t n = strlen(heap_path);
  if (n == 0 || n + sizeof(".pb.gz") > PROF_PATH_MAX) return false;
  dump_job_t *j = job_new();
  if (!j) return false;
  memcpy(j->pb_path, heap_path, n);
  memcpy(j->pb_path + n, ".pb.gz", sizeof(".pb.gz"));
  j->summary_path[0] = '\0';
  return dump_job_run(j, heap_path);
}

bool prof_leak_report(int fd, unsigned max_sites) {
  dump_job_t *j = job_new();
  if (!j) return false;
  j->report_fd = fd;
  j->title = "tessera leak report: memory still allocated, estimated from sampled blocks";
  j->max_sites = max_sites;
  if (!prof_modules_locked(write_symbolized, j)) j->ok = false;
  bool ok = j->ok;
  job_free(j);
  return ok;
}
