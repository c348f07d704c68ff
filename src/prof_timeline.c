/* SPDX-License-Identifier: MIT */
/* prof_timeline: see prof_timeline.h. */
#include "prof_timeline.h"

#include "lock.h"
#include "os.h"
#include "prof_out.h"
#include "os.h"

static lock_t timeline_lock;
/* Zero-initialised (bss, not 16 KiB of .data): used only while timeline_open. */
static prof_out_t timeline_out;
static bool timeline_open;
static uint64_t start_ns;
static int timeline_pid;

/* A JSON string: quotes, backslashes and control characters escaped. */
static void json_string(prof_out_t *o, const char *s, size_t n) {
  prof_out_str(o, "\"");
  for (size_t i = 0; i < n; i++) {
    unsigned char c = (unsigned char)s[i];
    if (c == '"' || c == '\\') {
      char e[2] = {'\\', (char)c};
      prof_out_bytes(o, e, 2);
    } else if (c < 0x20) {
      char e[6] = {'\\', 'u', '0', '0', "0123456789abcdef"[c >> 4], "0123456789abcdef"[c & 15]};
      prof_out_bytes(o, e, 6);
    } else {
      prof_out_bytes(o, &s[i], 1);
    }
  }
  prof_out_str(o, "\"");
}

static void write_cmdline(prof_out_t *o) {
  char buf[4096];
  long n = os_read_file("/proc/self/cmdline", buf, sizeof(buf));
  prof_out_str(o, "[");
  for (long i = 0, first = 1; i < n; first = 0) {
    long j = i;
    while (j < n && buf[j]) j++;
    if (!first) prof_out_str(o, ",");
    json_string(o, buf + i, (size_t)(j - i));
    i = j + 1;
  }
  prof_out_str(o, "]");
}

bool prof_timeline_open(const char *path) {
  lock_acquire(&timeline_lock);
  if (timeline_open) prof_out_close(&timeline_out);
  timeline_open = prof_out_open(&timeline_out, path, false, false);
  if (timeline_open) {
    start_ns = os_now_ns();
    timeline_pid = os_getpid();
    prof_out_str(&timeline_out, "{\"type\":\"header\",\"pid\":");
    prof_out_dec(&timeline_out, (uint64_t)timeline_pid);
    prof_out_str(&timeline_out, ",\"cmdline\":");
    write_cmdline(&timeline_out);
    prof_out_str(&timeline_out, ",\"start_unix_ms\":");
    prof_out_dec(&timeline_out, os_wall_ns() / 1000000u);
    prof_out_str(&timeline_out, "}\n");
    prof_out_flush(&timeline_out);
  }
  lock_release(&timeline_lock);
  return timeline_open;
}

static void field(prof_out_t *o, const char *name, uint64_t v) {
  prof_out_str(o, name);
  prof_out_dec(o, v);
}

void prof_timeline_append(const prof_timeline_counters_t *c) {
  lock_acquire(&timeline_lock);
  if (timeline_open) {
    prof_out_t *o = &timeline_out;
    uint64_t us = (os_now_ns() - start_ns) / 1000u;
    prof_out_str(o, "{\"t_ms\":");
    prof_out_dec(o, us / 1000u);
    prof_out_str(o, ".");
    char frac[3] = {(char)('0' + us / 100 % 10), (char)('0' + us / 10 % 10), (char)('0' + us % 10)};
    prof_out_bytes(o, frac, 3);
    field(o, ",\"pid\":", (uint64_t)timeline_pid);
    field(o, ",\"allocated\":", c->allocated);
    field(o, ",\"active\":", c->active);
    field(o, ",\"resident\":", c->resident);
    field(o, ",\"mapped\":", c->mapped);
    field(o, ",\"retained\":", c->retained);
    field(o, ",\"dirty\":", c->dirty);
    field(o, ",\"muzzy\":", c->muzzy);
    field(o, ",\"metadata\":", c->metadata);
    prof_out_str(o, "}\n");
    prof_out_flush(o);
  }
  lock_release(&timeline_lock);
}

void prof_timeline_close(void) {
  lock_acquire(&timeline_lock);
  if (timeline_open) prof_out_close(&timeline_out);
  timeline_open = false;
  lock_release(&timeline_lock);
}

/* Writes only what the child must change: each page it writes is copied (fork.c). */
void prof_timeline_fork_child(void) {
  if (atomic_load_explicit(&timeline_lock.state, memory_order_relaxed) != 0) lock_init(&timeline_lock);
  if (!timeline_open) return;
  os_close(timeline_out.fd);
  timeline_open = false;
  timeline_out.len = 0;
}
