/* SPDX-License-Identifier: MIT */
/*
 * structure.footprint: what a small program keeps resident of the library's file.
 *
 * The kernel maps a file's pages in 64 KiB windows around each page fault
 * ("fault-around"), so the library's code costs a program every window it touches. The
 * link order and src/layout.ld put the code every program runs in the text's first
 * window and the unwind tables with the read-only data of the cold files (profiler,
 * statistics printing, mallctl) in a segment a program without them never reads. A
 * function added to the start-up path from a cold file, or a hot file grown past the
 * window, makes a small program pay for a second window (48 KiB of the text today):
 * this program allocates and frees like a small command-line tool and fails when the
 * text's resident pages exceed one window or the cold segment has any.
 *
 * The two small segments every program maps whole are bounded too: the headers, dynamic
 * symbols and hot read-only data before the text (12 KiB today), and the data the dynamic
 * loader relocates at start-up (8 KiB today: each of its pages becomes a private copy).
 * Pointers in big static tables (mallctl's tree) or long strings in a hot file's
 * read-only data (the options' descriptions) are what made them 20 and 24 KiB before.
 *
 * With the argument `threads`, a second thread does that work too, then allocates and
 * frees a few thousand blocks of assorted sizes (cache refills and flushes, the exact
 * classes' counting window), a block of 100 KiB (the thread's cache of large blocks) and
 * exits (its cache's destruction, its statistics' hand-over): what a small program with
 * threads runs. That must fit the same window: a batch of such functions marked cold
 * once made every program that starts a thread keep 140 KiB of the text resident.
 */
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define WINDOW_KIB 64
#define HEADERS_MAX_KIB 12
#define RELOCATED_MAX_KIB 8

typedef struct {
  char perms[5];
  long rss_kib;
} mapping_t;

/* The library's segments in address order (at most max), from /proc/self/smaps. */
static int library_mappings(mapping_t *out, int max) {
  FILE *f = fopen("/proc/self/smaps", "r");
  if (f == NULL) return -1;
  char line[512];
  int n = 0;
  bool in_library = false;
  while (fgets(line, sizeof line, f)) {
    unsigned long lo, hi;
    char perms[5];
    long kib;
    if (sscanf(line, "%lx-%lx %4s", &lo, &hi, perms) == 3) {
      /* The inaccessible gaps between the segments (---p) are no segment. */
      in_library = strstr(line, "libtessera") != NULL && strcmp(perms, "---p") != 0 && n < max;
      if (in_library) {
        memcpy(out[n].perms, perms, sizeof perms);
        out[n++].rss_kib = 0;
      }
    } else if (in_library && sscanf(line, "Rss: %ld kB", &kib) == 1) {
      out[n - 1].rss_kib = kib;
    }
  }
  fclose(f);
  return n;
}

/* What a small tool does: a few strings of assorted sizes, a buffer, some freed. */
static unsigned small_program_work(void) {
  char *strings[32];
  unsigned sum = 0;
  for (int i = 0; i < 32; i++) {
    strings[i] = malloc(8 + (size_t)i * 5);
    snprintf(strings[i], 8 + (size_t)i * 5, "option-%d", i);
  }
  char *buffer = malloc(4096);
  memset(buffer, 'x', 4096);
  buffer = realloc(buffer, 6000);
  for (int i = 0; i < 32; i++) {
    sum += (unsigned char)strings[i][7];
    if (i % 2) free(strings[i]);
  }
  sum += (unsigned char)buffer[100];
  free(buffer);
  return sum;
}

/* The second thread of the `threads` mode. */
static void *worker(void *arg) {
  unsigned *sum = arg;
  *sum = small_program_work();
  void *held[64] = {0};
  for (unsigned i = 0; i < 4000; i++) {
    unsigned k = (i * 7919u) % 64;
    free(held[k]);
    held[k] = malloc(16 + (i * 37u) % 2000);
    *(volatile char *)held[k] = (char)i;
  }
  for (unsigned k = 0; k < 64; k++) free(held[k]);
  char *large = malloc(100 * 1024);
  large[0] = 1;
  *sum += (unsigned char)large[0];
  free(large);
  return NULL;
}

int main(int argc, char **argv) {
  unsigned sum = small_program_work();
  if (argc > 1 && strcmp(argv[1], "threads") == 0) {
    unsigned thread_sum = 0;
    pthread_t t;
    if (pthread_create(&t, NULL, worker, &thread_sum) != 0 || pthread_join(t, NULL) != 0) {
      fprintf(stderr, "footprint: cannot run a second thread\n");
      return 1;
    }
    sum += thread_sum;
  }
  mapping_t m[8];
  int n = library_mappings(m, 8);
  int text = -1;
  for (int i = 0; i < n && text < 0; i++)
    if (strcmp(m[i].perms, "r-xp") == 0) text = i;
  if (text < 0 || text + 1 >= n) {
    fprintf(stderr, "footprint: libtessera's mappings not found in /proc/self/smaps (%d)\n", n);
    return 1;
  }
  int failures = 0;
  if (m[text].rss_kib > WINDOW_KIB) {
    fprintf(stderr, "footprint: %ld KiB of the library's text resident, more than one %d KiB window\n",
            m[text].rss_kib, WINDOW_KIB);
    failures++;
  }
  if (text >= 1 && strcmp(m[text - 1].perms, "r--p") == 0 && m[text - 1].rss_kib > HEADERS_MAX_KIB) {
    fprintf(stderr, "footprint: %ld KiB of headers and read-only data before the text, more than %d\n",
            m[text - 1].rss_kib, HEADERS_MAX_KIB);
    failures++;
  }
  /* The relocated data: the read-only segment after the cold one. */
  int relocated = -1;
  for (int i = text + 2; i < n && relocated < 0; i++)
    if (strcmp(m[i].perms, "r--p") == 0) relocated = i;
  if (relocated >= 0 && m[relocated].rss_kib > RELOCATED_MAX_KIB) {
    fprintf(stderr, "footprint: %ld KiB of relocated data resident, more than %d\n", m[relocated].rss_kib,
            RELOCATED_MAX_KIB);
    failures++;
  }
  /* The segment after the text: unwind tables and the cold files' read-only data. */
  if (strcmp(m[text + 1].perms, "r--p") == 0 && m[text + 1].rss_kib != 0) {
    fprintf(stderr, "footprint: %ld KiB of the unwind and cold read-only segment resident\n",
            m[text + 1].rss_kib);
    failures++;
  }
  printf("footprint: headers %ld KiB, text %ld KiB, cold segment %ld KiB, relocated data %ld KiB resident "
         "(checksum %u)\n",
         text >= 1 ? m[text - 1].rss_kib : -1, m[text].rss_kib, m[text + 1].rss_kib,
         relocated >= 0 ? m[relocated].rss_kib : -1, sum);
  return failures ? 1 : 0;
}
