/* SPDX-License-Identifier: MIT */
#include "fatal.h"

#include "config.h"

#include <stdlib.h>

#include "os.h"

char *format_hex(char *buf, unsigned long long v) {
  char tmp[17];
  int n = 0;
  do { tmp[n++] = "0123456789abcdef"[v & 15]; v >>= 4; } while (v);
  buf[0] = '0';
  buf[1] = 'x';
  for (int i = 0; i < n; i++) buf[2 + i] = tmp[n - 1 - i];
  buf[2 + n] = '\0';
  return buf;
}

char *format_dec(char *buf, unsigned long long v) {
  char tmp[21];
  int n = 0;
  do { tmp[n++] = (char)('0' + v % 10); v /= 10; } while (v);
  for (int i = 0; i < n; i++) buf[i] = tmp[n - 1 - i];
  buf[n] = '\0';
  return buf;
}

void fatal_pointer(const char *func, const char *problem, const void *p) {
  char line[160], hex[24];
  char *w = line, *end = line + sizeof(line) - 2;
  const char *parts[] = {"tessera: ", func, ": ", problem, " ", format_hex(hex, (unsigned long long)(uintptr_t)p)};
  for (unsigned i = 0; i < sizeof(parts) / sizeof(parts[0]); i++)
    for (const char *s = parts[i]; *s && w < end; s++) *w++ = *s;
  *w++ = '\n';
  *w = '\0';
  os_write_stderr(line);
  abort();
}

void fatal(const char *message) {
  os_write_stderr("tessera: ");
  os_write_stderr(message);
  os_write_stderr("\n");
  abort();
}

void assert_failed(const char *file, int line, const char *expr) {
  char num[24];
  os_write_stderr("tessera: assertion failed: ");
  os_write_stderr(file);
  os_write_stderr(":");
  os_write_stderr(format_dec(num, (unsigned long long)line));
  os_write_stderr(": ");
  os_write_stderr(expr);
  os_write_stderr("\n");
  abort();
}
