/* SPDX-License-Identifier: MIT */
/*
 * misuse.<case>: one misuse per child process. The child commits exactly one misuse (an
 * invalid free/realloc/malloc_usable_size, or a double free); the parent asserts that the
 * child died by SIGABRT and that its stderr is exactly one line that begins with the
 * expected "tessera: <function>(): <problem> 0x" prefix and names the pointer that was
 * passed.
 *
 * usage: misuse <case>      (misuse --list prints the cases)
 */
#include "tt.h"

#include <dlfcn.h>
#include <inttypes.h>
#include <malloc.h>
#include <sys/mman.h>
#include <sys/resource.h>

/* The compiler must not see where these pointers come from (no -Wfree-nonheap-object, no
 * folding of the misuse away). */
static void *launder(void *p) {
  void *volatile v = p;
  return v;
}

static char static_buffer[256];

typedef struct misuse_case {
  const char *name;
  const char *expected_prefix;
  /* Returns the pointer it is about to misuse (reported to the parent), then misuses it
   * through do_misuse. */
  void *(*prepare)(void);
  void (*do_misuse)(void *p);
  /* Another accepted prefix, or NULL. */
  const char *alt_prefix;
} misuse_case;

static void *stack_pointer(void) {
  /* An address inside the stack (this frame is gone when it is misused, but the stack
   * page stays mapped: what matters is that tessera never handed it out). */
  static char *volatile where;
  char local[64];
  where = local;
  return launder(where + 16);
}
static void *middle_of_small(void) {
  char *p = malloc(64);
  return launder(p + 16);
}
static void *middle_of_large(void) {
  char *p = malloc((size_t)1 << 20);
  memset(p, 1, (size_t)1 << 20);
  return launder(p + 4096);
}
/* The last page of a live block of 100 kB (a class the thread's cache of large blocks
 * takes): page aligned, and the page map names the block's extent there too (its first
 * and last pages are mapped), so only the block's start tells it apart. */
static void *last_page_of_large(void) {
  char *p = malloc(100000);
  TT_CHECK(p != NULL);
  memset(p, 1, 100000);
  return launder(p + ((malloc_usable_size(p) - 1) & ~(size_t)4095));
}
static void *mmap_region(void) {
  void *p = mmap(NULL, 1 << 16, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  TT_CHECK(p != MAP_FAILED);
  return launder(p);
}
static void *static_data(void) { return launder(static_buffer + 32); }
static void *freed_small(void) {
  void *p = malloc(32);
  memset(p, 1, 32);
  void *copy = launder(p); /* the copy is the one reused after free */
  free(p);
  return copy;
}
static void *freed_large(void) {
  void *p = malloc((size_t)1 << 20);
  memset(p, 1, 4096);
  void *copy = launder(p);
  free(p);
  return copy;
}
/* A freed block of 100 kB: it waits in the thread's cache of large blocks (hardened
 * mode: in its quarantine), still an active extent for its arena. Live blocks on both
 * sides: a block next to free pages goes back to its arena instead (large_cache.h). */
static void *freed_cached_large(void) {
  void *below = launder(malloc(100000)), *p = malloc(100000), *above = launder(malloc(100000));
  TT_CHECK(below != NULL && p != NULL && above != NULL);
  memset(p, 1, 4096);
  void *copy = launder(p);
  free(p);
  return copy;
}
/* A large block that realloc moved elsewhere (its pages moved by the kernel, or copied):
 * the old pointer is a freed block. */
static void *moved_by_realloc(void) {
  unsigned char *p = malloc((size_t)1 << 20), *wall = malloc((size_t)1 << 20);
  memset(p, 1, (size_t)1 << 20);
  void *copy = launder(p);
  unsigned char *q = realloc(p < wall ? p : wall, (size_t)16 << 20); /* the lower one cannot grow in place */
  if (q == NULL) abort();
  if (p > wall) copy = launder(wall); /* the block realloc moved */
  return copy;
}
static void *freed_medium(void) {
  void *p = malloc(100000);
  void *copy = launder(p);
  free(p);
  return copy;
}

/* A block whose whole slab was freed and went back to its arena (the slab stash keeps it
 * whole, off the free map): 256 blocks of 1000 B fill 16 slabs; all are freed and the
 * thread cache flushed; a middle slab is then empty and stashed (the lowest is the bin's
 * spare, the last one its current slab). */
static void *freed_in_empty_slab(void) {
  enum { N = 256 };
  void *blocks[N];
  for (int i = 0; i < N; i++) {
    blocks[i] = malloc(1000);
    TT_CHECK(blocks[i] != NULL);
    memset(blocks[i], 1, 1000);
  }
  void *copy = launder(blocks[N / 2]);
  for (int i = 0; i < N; i++) free(blocks[i]);
  int (*ctl)(const char *, void *, size_t *, void *, size_t) =
      (int (*)(const char *, void *, size_t *, void *, size_t))dlsym(RTLD_DEFAULT, "tessera_ctl");
  TT_CHECK(ctl != NULL && ctl("thread.tcache.flush", NULL, NULL, NULL, 0) == 0);
  return copy;
}

/* A slot of a slab that was never handed out: the last region of the slab of a 2 KiB
 * block (a slab of 2 KiB regions holds several; the thread cache took at most half of
 * them, lowest first). */
static void *never_handed_out(void) {
  char *p = malloc(2048);
  TT_CHECK(p != NULL);
  size_t usable = malloc_usable_size(p);
  return launder(p + 3 * usable);
}

/* A slot of a slab that no thread cache holds and that was never handed out: the
 * neighbour of a fresh 2 KiB block, its region given back to the slab when the thread's
 * cache is flushed (a cached region is not free in its slab yet: only the flush can
 * tell it was never handed out). */
static void *never_handed_out_flushed(void) {
  char *p = malloc(2048);
  TT_CHECK(p != NULL);
  size_t usable = malloc_usable_size(p);
  int (*ctl)(const char *, void *, size_t *, void *, size_t) =
      (int (*)(const char *, void *, size_t *, void *, size_t))dlsym(RTLD_DEFAULT, "tessera_ctl");
  TT_CHECK(ctl != NULL && ctl("thread.tcache.flush", NULL, NULL, NULL, 0) == 0);
  return launder(p + usable);
}

/* free_sized and free_aligned_sized (C23), found at run time: libc may lack them. */
static void free_sized_call(void *p, size_t size) {
  void (*f)(void *, size_t) = (void (*)(void *, size_t))dlsym(RTLD_DEFAULT, "free_sized");
  TT_CHECK(f != NULL);
  f(p, size);
}
static void free_aligned_sized_call(void *p, size_t align, size_t size) {
  void (*f)(void *, size_t, size_t) = (void (*)(void *, size_t, size_t))dlsym(RTLD_DEFAULT, "free_aligned_sized");
  TT_CHECK(f != NULL);
  f(p, align, size);
}

/* Sized frees of the right size, of each allocation path, must pass; then a block of
 * 100 B (class 112) is handed to the misuse with a size of class 64. */
static void *sized_small(void) {
  free_sized_call(malloc(100), 100);
  free_sized_call(malloc(100), 97);
  free_sized_call(malloc(40000), 40000);
  free_aligned_sized_call(aligned_alloc(64, 100), 64, 100);
  free_aligned_sized_call(aligned_alloc(4096, 3000), 4096, 3000);
  free_aligned_sized_call(aligned_alloc(8192, 17000), 8192, 17000);
  free_aligned_sized_call(aligned_alloc(1 << 16, 100), 1 << 16, 100);
  return launder(malloc(100));
}
/* An exact class (src/exact_class.h): 1032-byte requests, mostly, make class 1040 for
 * the sizes 1025 .. 1040 of class 1152. A block of it freed with 1100 bytes (class 1152:
 * more than the block holds) is a misuse; the sized frees before it are not. */
static void *exact_class_block(void) {
  void *before = malloc(1032); /* class 1152 */
  enum { N = 4000 };
  static void *v[N];
  for (int i = 0; i < N; i++) v[i] = malloc(1032);
  for (int i = 0; i < N; i++) free_sized_call(v[i], 1032);
  free_sized_call(before, 1032);
  void *p = malloc(1032);
  TT_CHECKF(malloc_usable_size(p) == 1040, "no exact class 1040: usable %zu", malloc_usable_size(p));
  return launder(p);
}
static void misuse_free_sized_1100(void *p) { free_sized_call(p, 1100); }
/* A 64 KiB block from the thread's cache of large blocks serving a 40000-byte request
 * (none of 40 KiB cached): a sized free with 40000 is right, one with 50000 (class
 * 56 KiB) frees another object than the program thinks. */
static void *served_by_bigger_block(void) {
  enum { N = 6 };
  void *v[N];
  for (int i = 0; i < N; i++) v[i] = malloc(64 << 10);
  for (int i = 1; i < N - 1; i++) {
    free(v[i]); /* cached unless next to free memory */
    void *p = malloc(40000);
    if (malloc_usable_size(p) == 64 << 10) {
      free_sized_call(p, 40000);
      p = malloc(40000);
      TT_CHECKF(malloc_usable_size(p) == 64 << 10, "the freed block was not cached again");
      return launder(p);
    }
    v[i] = p;
  }
  TT_CHECKF(0, "no 64 KiB block served a 40000-byte request");
  return NULL;
}
static void misuse_free_sized_50000(void *p) { free_sized_call(p, 50000); }
static void *aligned_small(void) { return launder(aligned_alloc(64, 100)); /* class 128 */ }

/* free(a), then n frees of other blocks, then free(a) again ("double_free_delayed_<size>_<n>"):
 * the other blocks are of a's size while n of them fit in 128 MiB, else of 4 KiB. */
static size_t delayed_size, delayed_n;
#define TCACHE_LIMIT ((size_t)32 << 10) /* blocks above it are extents of their own */
static void *delayed_double_free(void) {
  char *a = malloc(delayed_size);
  TT_CHECK(a != NULL);
  memset(a, 1, delayed_size < 4096 ? delayed_size : 4096);
  size_t other = delayed_size * delayed_n <= ((size_t)128 << 20) ? delayed_size : 4096;
  void **others = malloc(delayed_n * sizeof(void *));
  TT_CHECK(others != NULL);
  for (size_t i = 0; i < delayed_n; i++) {
    others[i] = malloc(other);
    TT_CHECK(others[i] != NULL);
    memset(others[i], 2, other < 64 ? other : 64);
  }
  void *copy = launder(a);
  free(a);
  for (size_t i = 0; i < delayed_n; i++) free(others[i]);
  return copy;
}

static void misuse_free(void *p) { free(p); }
/* free, then the cache flushed: a block never handed out is found at the flush. */
static void misuse_free_flush(void *p) {
  free(p);
  int (*ctl)(const char *, void *, size_t *, void *, size_t) =
      (int (*)(const char *, void *, size_t *, void *, size_t))dlsym(RTLD_DEFAULT, "tessera_ctl");
  TT_CHECK(ctl != NULL && ctl("thread.tcache.flush", NULL, NULL, NULL, 0) == 0);
}
static void misuse_realloc_zero(void *p) { launder(realloc(p, 0)); }
static void misuse_free_sized_64(void *p) { free_sized_call(p, 64); }
static void misuse_free_aligned_sized_300(void *p) { free_aligned_sized_call(p, 64, 300); }
/* Delayed double free: if the second free passes, two mallocs would return a twice. */
static void misuse_free_then_malloc_twice(void *p) {
  free(p);
  void *x = malloc(delayed_size), *y = malloc(delayed_size);
  fprintf(stderr, "not caught: malloc returned %p and %p\n", x, y);
}
static void misuse_realloc(void *p) {
  void *q = realloc(p, 100);
  launder(q);
}
/* realloc to a large size the block (100 kB or 1 MiB, were it live) would keep: the
 * in-place answer for a large block must not take a freed or foreign pointer for one. */
static void misuse_realloc_keep_100k(void *p) { launder(realloc(p, 100000)); }
static void misuse_realloc_keep_1m(void *p) { launder(realloc(p, (size_t)1 << 20)); }
static void misuse_usable_size(void *p) {
  volatile size_t n = malloc_usable_size(p);
  (void)n;
}

/* Hardened mode's cases (hardened:true; run with TESSERA_CONF set by the test). */
static void *overflow_by(size_t size, size_t by) {
  char *p = malloc(size);
  TT_CHECK(p != NULL);
  memset(p, 1, size);
  memset(launder(p + size), 0, by); /* by bytes past the end: a terminating zero, say */
  return launder(p);
}
static void *overflow_small_1(void) { return overflow_by(24, 1); }
/* 32 B fills its class in the default mode: hardened mode serves it from a larger one. */
static void *overflow_small_exact_class_1(void) { return overflow_by(32, 1); }
static void *overflow_small_8(void) { return overflow_by(100, 8); }
static void *overflow_large_1(void) { return overflow_by(100000, 1); }
/* A string one byte too long for its block. */
static void *string_overflow(void) {
  char *p = malloc(15);
  TT_CHECK(p != NULL);
  strcpy(launder(p), "fifteen chars!!"); /* 15 characters and the terminating zero */
  return launder(p);
}
/* Freed, then written: caught when its memory is handed out again (the block leaves the
 * quarantine after enough other frees; then mallocs of its size reach it). */
static void *written_after_free(void) {
  char *p = malloc(64);
  TT_CHECK(p != NULL);
  char *copy = launder(p);
  free(p);
  copy[0] = 'x';
  return copy;
}
/* A large block's first page written after free: caught when it leaves the quarantine
 * (the rest of its pages are inaccessible meanwhile: tests/misuse/guard_page.c). */
static void *written_after_free_large(void) {
  char *p = malloc((size_t)1 << 20);
  TT_CHECK(p != NULL);
  memset(p, 1, (size_t)1 << 20);
  char *copy = launder(p);
  free(p);
  copy[100] = 'x';
  return copy;
}
/* A block of 32 KiB (guarded, 9 pages: zeroed when freed, not made inaccessible)
 * written after free: caught when it is handed out again. */
static void *written_after_free_32k(void) {
  char *p = malloc(32768);
  TT_CHECK(p != NULL);
  memset(p, 1, 32768);
  char *copy = launder(p);
  free(p);
  copy[20000] = 'x';
  return copy;
}
static void misuse_reuse_32k(void *p) {
  (void)p;
  for (int i = 0; i < 1000; i++) free(malloc(32768)); /* through the quarantine */
}
static void misuse_reuse_64(void *p) {
  (void)p;
  for (int i = 0; i < 20000; i++) free(malloc(64)); /* through the quarantine */
  for (int i = 0; i < 100000; i++) launder(malloc(64));
}

#define FREE_INVALID "tessera: free(): invalid pointer 0x"
#define REALLOC_INVALID "tessera: realloc(): invalid pointer 0x"
#define USABLE_INVALID "tessera: malloc_usable_size(): invalid pointer 0x"
#define DOUBLE_FREE "tessera: free(): double free 0x"
#define REALLOC_DOUBLE_FREE "tessera: realloc(): double free 0x"
#define USABLE_FREED "tessera: malloc_usable_size(): use after free 0x"
#define FREE_OVERFLOW "tessera: free(): heap overflow detected after block 0x"

static const misuse_case cases[] = {
    {"free_stack", FREE_INVALID, stack_pointer, misuse_free, NULL},
    {"free_middle_small", FREE_INVALID, middle_of_small, misuse_free, NULL},
    {"free_middle_large", FREE_INVALID, middle_of_large, misuse_free, NULL},
    {"free_last_page_large", FREE_INVALID, last_page_of_large, misuse_free, NULL},
    {"free_mmap", FREE_INVALID, mmap_region, misuse_free, NULL},
    {"free_static", FREE_INVALID, static_data, misuse_free, NULL},
    {"double_free_small", DOUBLE_FREE, freed_small, misuse_free, NULL},
    {"double_free_medium", DOUBLE_FREE, freed_medium, misuse_free, NULL},
    {"double_free_large", DOUBLE_FREE, freed_large, misuse_free, NULL},
    {"double_free_cached_large", DOUBLE_FREE, freed_cached_large, misuse_free, NULL},
    {"usable_size_freed_cached_large", USABLE_FREED, freed_cached_large, misuse_usable_size, NULL},
    {"realloc_freed_cached_large", REALLOC_DOUBLE_FREE, freed_cached_large, misuse_realloc, NULL},
    {"double_free_moved_by_realloc", DOUBLE_FREE, moved_by_realloc, misuse_free, NULL},
    {"double_free_empty_slab", DOUBLE_FREE, freed_in_empty_slab, misuse_free, NULL},
    {"realloc_stack", REALLOC_INVALID, stack_pointer, misuse_realloc, NULL},
    {"realloc_middle_small", REALLOC_INVALID, middle_of_small, misuse_realloc, NULL},
    {"realloc_mmap", REALLOC_INVALID, mmap_region, misuse_realloc, NULL},
    {"usable_size_stack", USABLE_INVALID, stack_pointer, misuse_usable_size, NULL},
    {"usable_size_middle_small", USABLE_INVALID, middle_of_small, misuse_usable_size, NULL},
    {"usable_size_middle_large", USABLE_INVALID, middle_of_large, misuse_usable_size, NULL},
    {"usable_size_freed_small", USABLE_FREED, freed_small, misuse_usable_size, NULL},
    {"usable_size_freed_large", USABLE_FREED, freed_large, misuse_usable_size, NULL},
    {"realloc_freed_small", REALLOC_DOUBLE_FREE, freed_small, misuse_realloc, NULL},
    {"realloc_freed_large", REALLOC_DOUBLE_FREE, freed_large, misuse_realloc, NULL},
    {"realloc_keep_freed_large", REALLOC_DOUBLE_FREE, freed_large, misuse_realloc_keep_1m, NULL},
    {"realloc_keep_freed_cached_large", REALLOC_DOUBLE_FREE, freed_cached_large, misuse_realloc_keep_100k, NULL},
    {"realloc_keep_middle_large", REALLOC_INVALID, middle_of_large, misuse_realloc_keep_1m, NULL},
    {"realloc_zero_freed_small", REALLOC_DOUBLE_FREE, freed_small, misuse_realloc_zero, NULL},
    {"free_never_handed_out", FREE_INVALID, never_handed_out, misuse_free_flush, NULL},
    {"usable_size_never_handed_out", USABLE_INVALID, never_handed_out_flushed, misuse_usable_size, NULL},
    {"free_sized_other_class", "tessera: free_sized(): size of another size class 0x", sized_small,
     misuse_free_sized_64, NULL},
    {"free_sized_exact_class_other_size", "tessera: free_sized(): size of another size class 0x",
     exact_class_block, misuse_free_sized_1100, NULL},
    {"free_sized_served_by_bigger_other_size", "tessera: free_sized(): size of another size class 0x",
     served_by_bigger_block, misuse_free_sized_50000, NULL},
    {"free_aligned_sized_other_class", "tessera: free_aligned_sized(): size of another size class 0x",
     aligned_small, misuse_free_aligned_sized_300, NULL},
    /* hardened:true only */
    {"overflow_small_1_byte", FREE_OVERFLOW, overflow_small_1, misuse_free, NULL},
    {"overflow_small_exact_class_1_byte", FREE_OVERFLOW, overflow_small_exact_class_1, misuse_free, NULL},
    {"overflow_small_8_bytes", FREE_OVERFLOW, overflow_small_8, misuse_free, NULL},
    {"overflow_large_1_byte", FREE_OVERFLOW, overflow_large_1, misuse_free, NULL},
    {"overflow_string", FREE_OVERFLOW, string_overflow, misuse_free, NULL},
    {"overflow_realloc", "tessera: realloc(): heap overflow detected after block 0x", overflow_small_1,
     misuse_realloc, NULL},
    {"overflow_usable_size", "tessera: malloc_usable_size(): heap overflow detected after block 0x",
     overflow_small_8, misuse_usable_size, NULL},
    {"write_after_free_small", "tessera: malloc(): write after free detected in block 0x", written_after_free,
     misuse_reuse_64, NULL},
    {"write_after_free_32k", "tessera: malloc(): write after free detected in block 0x", written_after_free_32k,
     misuse_reuse_32k, NULL},
    {"write_after_free_large", "tessera: free(): write after free detected in block 0x",
     written_after_free_large, misuse_reuse_64, NULL},
};
enum { NCASES = sizeof cases / sizeof cases[0] };

/* Reads everything from fd into buf (NUL-terminated); returns the length. */
static size_t read_all(int fd, char *buf, size_t cap) {
  size_t len = 0;
  for (;;) {
    ssize_t r = read(fd, buf + len, cap - 1 - len);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) break;
    len += (size_t)r;
    if (len == cap - 1) break;
  }
  buf[len] = '\0';
  return len;
}

static int run_case(const misuse_case *c) {
  int err_pipe[2], ptr_pipe[2];
  TT_CHECK(pipe(err_pipe) == 0 && pipe(ptr_pipe) == 0);
  fflush(NULL);
  pid_t pid = fork();
  TT_CHECK(pid >= 0);
  if (pid == 0) {
    struct rlimit no_core = {0, 0};
    setrlimit(RLIMIT_CORE, &no_core); /* the expected abort must not leave core files */
    alarm(20);
    close(err_pipe[0]);
    close(ptr_pipe[0]);
    dup2(err_pipe[1], 2);
    close(err_pipe[1]);
    void *p = c->prepare();
    uint64_t value = (uint64_t)(uintptr_t)p;
    if (write(ptr_pipe[1], &value, sizeof value) != (ssize_t)sizeof value) _exit(2);
    close(ptr_pipe[1]);
    c->do_misuse(p);
    _exit(0); /* reached only if the misuse went unnoticed */
  }
  close(err_pipe[1]);
  close(ptr_pipe[1]);
  uint64_t misused = 0;
  TT_CHECK(read(ptr_pipe[0], &misused, sizeof misused) == (ssize_t)sizeof misused);
  close(ptr_pipe[0]);
  static char err[8192];
  size_t len = read_all(err_pipe[0], err, sizeof err);
  close(err_pipe[0]);
  int status;
  TT_CHECK(waitpid(pid, &status, 0) == pid);

  int failures = 0;
  if (!WIFSIGNALED(status) || WTERMSIG(status) != SIGABRT) {
    if (WIFSIGNALED(status))
      fprintf(stderr, "FAIL %s: child died by signal %d (%s), want SIGABRT\n", c->name,
              WTERMSIG(status), strsignal(WTERMSIG(status)));
    else
      fprintf(stderr, "FAIL %s: child exited with status %d, want death by SIGABRT\n", c->name,
              WEXITSTATUS(status));
    failures++;
  }
  /* Exactly one line, starting with the prefix. */
  const char *newline = memchr(err, '\n', len);
  if (len == 0 || newline == NULL || (size_t)(newline - err) + 1 != len) {
    fprintf(stderr, "FAIL %s: want exactly one line on stderr, got %zu bytes:\n%s\n", c->name,
            len, err);
    failures++;
  }
  const char *prefix = c->expected_prefix;
  if (c->alt_prefix != NULL && strncmp(err, prefix, strlen(prefix)) != 0) prefix = c->alt_prefix;
  /* hardened:true hands out slab slots at random: the slot three regions on may have
   * been handed out (to the C library, say) and freed before, which makes its free a
   * double free as far as the allocator can tell. */
  const char *conf = getenv("TESSERA_CONF");
  if (strcmp(c->name, "free_never_handed_out") == 0 && conf != NULL && strstr(conf, "hardened:true") != NULL &&
      strncmp(err, prefix, strlen(prefix)) != 0)
    prefix = DOUBLE_FREE;
  size_t prefix_len = strlen(prefix);
  if (strncmp(err, prefix, prefix_len) != 0) {
    fprintf(stderr, "FAIL %s: stderr does not start with \"%s\":\n%s\n", c->name,
            c->expected_prefix, err);
    failures++;
  } else {
    /* The message names the pointer that was passed (hex, any zero padding). */
    uint64_t named = strtoull(err + prefix_len, NULL, 16);
    if (named != misused) {
      fprintf(stderr, "FAIL %s: message names 0x%" PRIx64 ", the pointer passed was 0x%" PRIx64
                      "\n",
              c->name, named, misused);
      failures++;
    }
  }
  if (failures == 0) printf("misuse.%s: ok: SIGABRT with \"%.*s\"\n", c->name, (int)(len - 1), err);
  return failures;
}

int main(int argc, char **argv) {
  TT_CHECKF(argc == 2, "usage: misuse <case>|--list");
  if (strcmp(argv[1], "--list") == 0) {
    for (int i = 0; i < NCASES; i++) printf("%s\n", cases[i].name);
    return 0;
  }
  tt_require_tessera();
  if (sscanf(argv[1], "double_free_delayed_%zu_%zu", &delayed_size, &delayed_n) == 2) {
    /* A large block freed between may have merged with a's extent, hiding where a
     * started: then the page map knows only that a is no live block. */
    misuse_case c = {argv[1], DOUBLE_FREE, delayed_double_free, misuse_free_then_malloc_twice,
                     delayed_size > TCACHE_LIMIT ? FREE_INVALID : NULL};
    return run_case(&c) == 0 ? 0 : 1;
  }
  for (int i = 0; i < NCASES; i++)
    if (strcmp(argv[1], cases[i].name) == 0) return run_case(&cases[i]) == 0 ? 0 : 1;
  TT_FAIL("unknown case %s", argv[1]);
}
