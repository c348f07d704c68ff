/* SPDX-License-Identifier: MIT */
/* A trivial program: start-up footprint.
 *
 * Allocates a few KiB the way a small command-line tool does (an options table, a few
 * strings, a read buffer), uses them and exits. Its peak RSS is the C runtime plus what
 * the allocator maps and touches just to get going: its metadata, its first chunk or
 * arena, its thread cache. For the many small processes a system runs (shells, build
 * steps, scripts), that start-up cost is most of their memory. It reports its RSS at
 * exit counted page by page (rss_end_kib, rss_end_mib; bench_rss_exact): the peak the
 * kernel reports for so small a process moves by 100 KiB from run to run.
 *
 * `smaps=1` lists, before exiting, every mapping with resident pages (from
 * /proc/self/smaps) on stderr: where the start-up footprint lives.
 *
 *   trivial blocks=32 buffer=4K smaps=0
 */
#include "common.h"

/* Prints "RSS_KiB  range  name" for every mapping of this process with resident pages
 * (anonymous mappings are named [anon]). */
static void print_resident_mappings(void) {
  FILE *f = fopen("/proc/self/smaps", "r");
  if (!f) return;
  char line[512], range[64] = "", name[256] = "";
  while (fgets(line, sizeof line, f)) {
    unsigned long lo, hi;
    long kib;
    int name_at = 0;
    char perms[8];
    if (sscanf(line, "%lx-%lx %7s %*s %*s %*s %n", &lo, &hi, perms, &name_at) == 3 && name_at > 0) {
      snprintf(range, sizeof range, "%lx-%lx %s", lo, hi, perms);
      snprintf(name, sizeof name, "%s", line[name_at] && line[name_at] != '\n' ? line + name_at : "[anon]\n");
    } else if (sscanf(line, "Rss: %ld kB", &kib) == 1 && kib > 0) {
      fprintf(stderr, "%6ld KiB  %s  %s", kib, range, name);
    }
  }
  fclose(f);
}

int main(int argc, char **argv) {
  int blocks = (int)arg_long(argc, argv, "blocks", 32);
  long long buffer = arg_long(argc, argv, "buffer", 4096);
  if (blocks < 0 || blocks > 4096 || buffer < 0) {
    fprintf(stderr, "trivial: need 0 <= blocks <= 4096 and buffer >= 0\n");
    return 2;
  }
  char **names = bench_check(calloc((size_t)blocks + 1, sizeof *names), 1);
  size_t total = 0;
  for (int i = 0; i < blocks; i++) {
    char tmp[64];
    int n = snprintf(tmp, sizeof tmp, "option-%d=%s", i, i % 3 ? "yes" : "a longer value here");
    names[i] = bench_check(malloc((size_t)n + 1), (size_t)n + 1);
    memcpy(names[i], tmp, (size_t)n + 1);
    total += (size_t)n + 1;
  }
  char *buf = bench_check(malloc((size_t)buffer), (size_t)buffer);
  memset(buf, 'x', (size_t)buffer);
  unsigned sum = 0;
  for (int i = 0; i < blocks; i++) sum += (unsigned char)names[i][7];
  for (int i = 0; i < blocks; i++) free(names[i]);
  free(names);
  free(buf);
  printf("trivial: %d strings (%zu B) and a %lld B buffer\n", blocks, total, buffer);
  /* Its peak: nothing it maps is given back before it exits. */
  long long rss = bench_rss_exact();
  bench_result("bytes=%zu checksum=%u rss_end_kib=%lld rss_end_mib=%.4f", total + (size_t)buffer, sum, rss / 1024,
               (double)rss / (1 << 20));
  if (arg_long(argc, argv, "smaps", 0)) print_resident_mappings();
  return 0;
}
