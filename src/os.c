/* SPDX-License-Identifier: MIT */
/* The OS layer (Linux). See os.h for the contract of each function. */
#include "os.h"

#include "types.h" /* PAGE */

#include <errno.h>
#include <linux/futex.h>
#include <pthread.h>
#include <signal.h>
#include <fcntl.h>
#include <link.h>
#include <sched.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/prctl.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysinfo.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

void *os_map(size_t size) {
  void *p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                 -1, 0);
  return p == MAP_FAILED ? NULL : p;
}

void *os_map_at(void *addr, size_t size, bool *occupied) {
  int saved = errno;
  void *p = mmap(addr, size, PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED_NOREPLACE, -1, 0);
  *occupied = p == MAP_FAILED && errno == EEXIST;
  errno = saved;
  if (p == MAP_FAILED) return NULL;
  if (p != addr) { /* a kernel before 4.17 takes the flag as a hint */
    munmap(p, size);
    errno = saved;
    return NULL;
  }
  return p;
}

bool os_map_over(void *addr, size_t size) {
  int saved = errno;
  void *p = mmap(addr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED, -1, 0);
  errno = saved;
  return p == addr;
}

void os_unmap(void *addr, size_t size) {
  int saved = errno;
  munmap(addr, size);
  errno = saved;
}

bool os_release_pages(void *addr, size_t size) {
  int saved = errno;
  bool ok = madvise(addr, size, MADV_DONTNEED) == 0;
  errno = saved;
  return ok;
}

bool os_pages_resident(void *addr, size_t size, unsigned char *vec) {
  int saved = errno;
  bool ok = mincore(addr, size, vec) == 0;
  errno = saved;
  return ok;
}

COLD_TEXT size_t os_count_resident(void *addr, size_t npages) {
  unsigned char vec[OS_RESIDENT_CHUNK];
  size_t resident = 0;
  for (size_t done = 0; done < npages;) {
    size_t n = npages - done < OS_RESIDENT_CHUNK ? npages - done : OS_RESIDENT_CHUNK;
    if (!os_pages_resident((char *)addr + done * PAGE, n * PAGE, vec)) return SIZE_MAX;
    for (size_t i = 0; i < n; i++) resident += vec[i] & 1;
    done += n;
  }
  return resident;
}

int os_pagemap_open(void) {
  int saved = errno;
  int fd = open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
  errno = saved;
  return fd;
}

#define PAGEMAP_PRESENT ((uint64_t)1 << 63)
#define PAGEMAP_EXCLUSIVE ((uint64_t)1 << 56)

bool os_pages_exclusive(int pagemap_fd, const void *addr, size_t npages, unsigned char *excl) {
  uint64_t entries[OS_PAGEMAP_CHUNK];
  if (pagemap_fd < 0 || npages > OS_PAGEMAP_CHUNK) return false;
  int saved = errno;
  ssize_t got = pread(pagemap_fd, entries, npages * sizeof(uint64_t), (off_t)((uintptr_t)addr / PAGE * sizeof(uint64_t)));
  errno = saved;
  if (got != (ssize_t)(npages * sizeof(uint64_t))) return false;
  for (size_t i = 0; i < npages; i++)
    excl[i] = (entries[i] & (PAGEMAP_PRESENT | PAGEMAP_EXCLUSIVE)) == (PAGEMAP_PRESENT | PAGEMAP_EXCLUSIVE);
  return true;
}

/* sysinfo, errno kept. */
static bool system_info(struct sysinfo *si) {
  int saved = errno;
  bool known = sysinfo(si) == 0;
  errno = saved;
  return known;
}

bool os_swap_configured(void) {
  struct sysinfo si;
  return !system_info(&si) || si.totalswap != 0;
}

/* Whether the kernel grants mappings whatever their size (vm.overcommit_memory 1). */
COLD_TEXT static bool overcommit_always(void) {
  int saved = errno;
  int fd = open("/proc/sys/vm/overcommit_memory", O_RDONLY | O_CLOEXEC);
  char c = 0;
  bool always = fd >= 0 && read(fd, &c, 1) == 1 && c == '1';
  if (fd >= 0) close(fd);
  errno = saved;
  return always;
}

/* The bound, read once: 0 not yet, SIZE_MAX none. */
static _Atomic size_t memory_bound;

COLD_TEXT size_t os_single_request_bound(void) {
  size_t bound = atomic_load_explicit(&memory_bound, memory_order_relaxed);
  if (bound != 0) return bound;
  struct sysinfo si;
  if (!system_info(&si) || overcommit_always()) bound = SIZE_MAX;
  else bound = ((size_t)si.totalram + (size_t)si.totalswap) * (si.mem_unit ? si.mem_unit : 1);
  atomic_store_explicit(&memory_bound, bound, memory_order_relaxed);
  return bound;
}

size_t os_count_mappings(void) {
  int saved = errno;
  int fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
  size_t lines = 0;
  if (fd >= 0) {
    char buf[4096];
    ssize_t n;
    while ((n = read(fd, buf, sizeof(buf))) > 0)
      for (ssize_t i = 0; i < n; i++) lines += buf[i] == '\n';
    close(fd);
  }
  errno = saved;
  return lines;
}

/* mremap's flag (Linux 5.7) for headers that predate it. */
#ifndef MREMAP_DONTUNMAP
#define MREMAP_DONTUNMAP 4
#endif

os_move_result_t os_move_pages(void *from, void *to, size_t size) {
  int saved = errno;
  void *p = mremap(from, size, size, MREMAP_MAYMOVE | MREMAP_FIXED | MREMAP_DONTUNMAP, to);
  int error = errno;
  errno = saved;
  if (p == to) return OS_MOVED;
  /* The kernel may have unmapped the destination before it failed (a source spanning
   * two mappings is found only then): map it again, over whatever is left of it (its
   * contents are about to be written: nothing is lost). */
  bool occupied = false;
  if (os_map_at(to, size, &occupied) != to && !os_map_over(to, size)) return OS_MOVE_LOST;
  return error == EINVAL || error == ENOSYS ? OS_MOVE_UNSUPPORTED : OS_MOVE_FAILED;
}

/* One try of os_time_page_moves over the 2 * pages pages at m: false if the move failed. */
COLD_TEXT static bool time_one_move(char *m, size_t pages, uint64_t *fault_ns, uint64_t *moved_read_ns) {
  char *from = m, *to = m + pages * PAGE;
  uint64_t t0 = os_now_ns();
  for (size_t i = 0; i < pages; i++) ((volatile char *)from)[i * PAGE] = 1;
  uint64_t t1 = os_now_ns();
  if (os_move_pages(from, to, pages * PAGE) != OS_MOVED) return false;
  uint64_t t2 = os_now_ns();
  for (size_t i = 0; i < pages; i++) (void)((volatile char *)to)[i * PAGE]; /* volatile: each read happens */
  uint64_t t3 = os_now_ns();
  *fault_ns = t1 - t0;
  *moved_read_ns = t3 - t2;
  return true;
}

COLD_TEXT bool os_time_page_moves(size_t pages, uint64_t *fault_ns, uint64_t *moved_read_ns) {
  *fault_ns = *moved_read_ns = UINT64_MAX;
  bool ok = true;
  for (int try = 0; try < 3 && ok; try++) {
    char *m = os_map(2 * pages * PAGE);
    if (m == NULL) return false;
    uint64_t fault, moved_read;
    ok = time_one_move(m, pages, &fault, &moved_read);
    os_unmap(m, 2 * pages * PAGE);
    if (!ok) break;
    if (fault < *fault_ns) *fault_ns = fault;
    if (moved_read < *moved_read_ns) *moved_read_ns = moved_read;
  }
  return ok;
}

bool os_protect(void *addr, size_t size, bool accessible) {
  int saved = errno;
  bool ok = mprotect(addr, size, accessible ? PROT_READ | PROT_WRITE : PROT_NONE) == 0;
  errno = saved;
  return ok;
}

bool os_protect_readonly(void *addr, size_t size) {
  int saved = errno;
  bool ok = mprotect(addr, size, PROT_READ) == 0;
  errno = saved;
  return ok;
}

bool os_random_bytes(void *buf, size_t n) {
  int saved = errno;
  long got = syscall(SYS_getrandom, buf, n, 0);
  errno = saved;
  return got == (long)n;
}

bool os_lazy_free_pages(void *addr, size_t size) {
  int saved = errno;
  bool ok = madvise(addr, size, MADV_FREE) == 0 || madvise(addr, size, MADV_DONTNEED) == 0;
  errno = saved;
  return ok;
}

/*
 * process_madvise(2) with the pidfd "this process" (PIDFD_SELF, recent kernels) takes
 * MADV_DONTNEED and MADV_FREE for the caller's own memory (Linux 6.13 and later) and
 * flushes the TLBs of the CPUs running the process's other threads once for the whole
 * vector. That flush is most of what an madvise call costs once a program has threads
 * (an interrupt to every other CPU, dearer still in a virtual machine): on this
 * project's 2-CPU VM, with a second thread running, 16 calls on 16 KiB runs took
 * 117-195 us each, one process_madvise on all 16 runs 86-220 us in all. Where the
 * kernel refuses (older kernels: ENOSYS, EBADF for the pidfd, EINVAL for the advice;
 * valgrind), it is not asked again and each run gets its own madvise.
 */
#ifndef SYS_process_madvise
#define SYS_process_madvise 440
#endif
#define OS_PIDFD_SELF (-10000)
#define OS_RANGES_MAX 64 /* per process_madvise call (the kernel takes up to UIO_MAXIOV) */
static _Atomic bool batch_release_unsupported;

COLD_TEXT static bool release_one(void *addr, size_t size, bool lazy) {
  return lazy ? os_lazy_free_pages(addr, size) : os_release_pages(addr, size);
}

/* The n runs in one system call (and one more for each run a short count left out);
 * false if the kernel refused. */
COLD_TEXT static bool release_batch(const os_range_t *ranges, unsigned n, bool lazy) {
  struct iovec iov[OS_RANGES_MAX];
  size_t total = 0;
  for (unsigned i = 0; i < n; i++) {
    iov[i].iov_base = ranges[i].addr;
    iov[i].iov_len = ranges[i].size;
    total += ranges[i].size;
  }
  long done = syscall(SYS_process_madvise, OS_PIDFD_SELF, iov, (size_t)n, lazy ? MADV_FREE : MADV_DONTNEED, 0u);
  if (done < 0) {
    if (errno != EINTR && errno != EAGAIN && errno != ENOMEM)
      atomic_store_explicit(&batch_release_unsupported, true, memory_order_relaxed);
    return false;
  }
  /* A short count: the runs past what was done get their own call. */
  for (unsigned i = 0; i < n && (size_t)done < total; i++) {
    if ((size_t)done >= ranges[i].size) {
      done -= (long)ranges[i].size;
      total -= ranges[i].size;
      continue;
    }
    release_one(ranges[i].addr, ranges[i].size, lazy);
    total -= ranges[i].size;
    done = 0;
  }
  return true;
}

COLD_TEXT unsigned os_release_ranges(const os_range_t *ranges, unsigned n, bool lazy) {
  int saved = errno;
  unsigned calls = 0;
  while (n > 0) {
    unsigned k = n < OS_RANGES_MAX ? n : OS_RANGES_MAX;
    bool batched = k > 1 && !atomic_load_explicit(&batch_release_unsupported, memory_order_relaxed) &&
                   release_batch(ranges, k, lazy);
    if (batched) {
      calls++;
    } else {
      for (unsigned i = 0; i < k; i++) release_one(ranges[i].addr, ranges[i].size, lazy);
      calls += k;
    }
    ranges += k;
    n -= k;
  }
  errno = saved;
  return calls;
}

void os_set_huge_pages(void *addr, size_t size, int mode) {
  if (mode == 0) return;
  int saved = errno;
  madvise(addr, size, mode == 1 ? MADV_HUGEPAGE : MADV_NOHUGEPAGE);
  errno = saved;
}

size_t os_page_size(void) {
  unsigned long sz = getauxval(AT_PAGESZ);
  return sz ? (size_t)sz : 4096;
}

size_t os_address_space_limit(void) {
  struct rlimit rl;
  if (getrlimit(RLIMIT_AS, &rl) != 0 || rl.rlim_cur == RLIM_INFINITY) return SIZE_MAX;
  return (size_t)rl.rlim_cur;
}

unsigned os_ncpus(void) {
  /* sched_getaffinity through the raw syscall: glibc's CPU_COUNT macros are fine, but
   * sysconf(_SC_NPROCESSORS_ONLN) may open files and allocate. */
  unsigned long mask[16];
  long n = syscall(SYS_sched_getaffinity, 0, sizeof(mask), mask);
  if (n <= 0) return 1;
  unsigned count = 0;
  for (long i = 0; i < n / (long)sizeof(mask[0]); i++)
    for (unsigned long m = mask[i]; m != 0; m &= m - 1) count++;
  return count ? count : 1;
}

unsigned os_current_cpu(void) {
  int cpu = sched_getcpu();
  return cpu < 0 ? 0 : (unsigned)cpu;
}

/* The clock is read through the kernel's vDSO function, found in the vDSO's dynamic
 * symbols, rather than through libc's clock_gettime: on a page fault in a file's code the
 * kernel maps the whole 64 KiB window around it, and libc's wrapper sits in a window
 * that a program which never reads the clock otherwise leaves alone (every arena reads
 * the clock when it is made, so even a trivial program would pay for that window).
 * Without a vDSO (valgrind hides it) or without the symbol, libc's function is used. */
typedef int (*clock_fn_t)(clockid_t, struct timespec *);
static _Atomic(clock_fn_t) clock_fn;

#if defined(__x86_64__)
#define VDSO_CLOCK_GETTIME "__vdso_clock_gettime"
#elif defined(__aarch64__)
#define VDSO_CLOCK_GETTIME "__kernel_clock_gettime"
#endif

#ifdef VDSO_CLOCK_GETTIME
/* The address of the vDSO's function called name, or NULL. Reads the vDSO image the
 * kernel mapped: its program headers give the dynamic section, which gives the symbol
 * table, whose length the SysV hash table's chain count gives. */
static void *vdso_symbol(const char *name) {
  uintptr_t image = (uintptr_t)getauxval(AT_SYSINFO_EHDR);
  if (image == 0) return NULL;
  const ElfW(Ehdr) *eh = (const ElfW(Ehdr) *)image;
  const ElfW(Phdr) *ph = (const ElfW(Phdr) *)(image + eh->e_phoff);
  uintptr_t bias = 0;
  const ElfW(Dyn) *dyn = NULL;
  bool have_load = false;
  for (unsigned i = 0; i < eh->e_phnum; i++) {
    if (ph[i].p_type == PT_LOAD && !have_load) {
      bias = image + ph[i].p_offset - ph[i].p_vaddr;
      have_load = true;
    } else if (ph[i].p_type == PT_DYNAMIC) {
      dyn = (const ElfW(Dyn) *)(image + ph[i].p_offset);
    }
  }
  if (!have_load || dyn == NULL) return NULL;
  const ElfW(Sym) *symbols = NULL;
  const char *strings = NULL;
  const Elf32_Word *hash = NULL;
  for (; dyn->d_tag != DT_NULL; dyn++) {
    if (dyn->d_tag == DT_SYMTAB) symbols = (const ElfW(Sym) *)(bias + dyn->d_un.d_ptr);
    else if (dyn->d_tag == DT_STRTAB) strings = (const char *)(bias + dyn->d_un.d_ptr);
    else if (dyn->d_tag == DT_HASH) hash = (const Elf32_Word *)(bias + dyn->d_un.d_ptr);
  }
  if (symbols == NULL || strings == NULL || hash == NULL) return NULL;
  for (Elf32_Word i = 0; i < hash[1]; i++) { /* hash[1]: the chain count, one per symbol */
    const ElfW(Sym) *sym = &symbols[i];
    if (ELF64_ST_TYPE(sym->st_info) != STT_FUNC || sym->st_shndx == SHN_UNDEF) continue;
    if (strcmp(strings + sym->st_name, name) == 0) return (void *)(bias + sym->st_value);
  }
  return NULL;
}
#endif

static clock_fn_t clock_fn_find(void) {
  clock_fn_t fn = clock_gettime;
#ifdef VDSO_CLOCK_GETTIME
  void *vdso = vdso_symbol(VDSO_CLOCK_GETTIME);
  /* Converting an object pointer to a function pointer: POSIX allows it (dlsym). */
  if (vdso != NULL) memcpy(&fn, &vdso, sizeof(fn));
#endif
  atomic_store_explicit(&clock_fn, fn, memory_order_relaxed);
  return fn;
}

uint64_t os_now_ns(void) {
  clock_fn_t fn = atomic_load_explicit(&clock_fn, memory_order_relaxed);
  if (unlikely(fn == NULL)) fn = clock_fn_find();
  struct timespec ts;
  if (fn(CLOCK_MONOTONIC, &ts) != 0) clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

void os_write_stderr(const char *s) { os_write_fd(2, s); }

int os_dup_stderr(void) {
  int saved = errno;
  int fd = fcntl(2, F_DUPFD_CLOEXEC, 3);
  errno = saved;
  return fd;
}

void os_write_fd(int fd, const char *s) {
  int saved = errno;
  size_t len = strlen(s);
  while (len > 0) {
    ssize_t w = write(fd, s, len);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) break;
    s += w;
    len -= (size_t)w;
  }
  errno = saved;
}

static bool copy_value(const char *entry, const char *name, char *buf, size_t buflen) {
  size_t nlen = strlen(name);
  if (strncmp(entry, name, nlen) != 0 || entry[nlen] != '=') return false;
  const char *v = entry + nlen + 1;
  size_t vlen = strlen(v);
  if (vlen >= buflen) vlen = buflen - 1;
  memcpy(buf, v, vlen);
  buf[vlen] = '\0';
  return true;
}

/* The environment read from /proc when environ is not set up yet. A common symbol, like
 * the other big arrays (SPARSE_ARRAY, types.h: this layer sits below it): the linker
 * puts it after the small variables every program writes. */
__attribute__((common)) char os_environ_copy[16384];

bool os_getenv(const char *name, char *buf, size_t buflen) {
  if (getauxval(AT_SECURE)) return false; /* never trust the environment of setuid programs */
  if (environ != NULL) {
    for (char **e = environ; *e != NULL; e++)
      if (copy_value(*e, name, buf, buflen)) return true;
    return false;
  }
  /* Called before libc set up environ (from the dynamic loader): read it from /proc. */
  char *envbuf = os_environ_copy;
  int fd = open("/proc/self/environ", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  ssize_t n = read(fd, envbuf, sizeof(os_environ_copy) - 1);
  close(fd);
  if (n <= 0) return false;
  envbuf[n] = '\0';
  for (char *e = envbuf; e < envbuf + n; e += strlen(e) + 1)
    if (copy_value(e, name, buf, buflen)) return true;
  return false;
}

bool os_read_config_file(const char *path, char *buf, size_t buflen) {
  int saved = errno;
  bool found = false;
  /* Like jemalloc's /etc/malloc.conf: the file may be a symlink whose target names the
   * options ("ln -s 'narenas:2' /etc/tessera.conf"), or a regular file holding them. */
  ssize_t n = readlink(path, buf, buflen - 1);
  if (n > 0) {
    buf[n] = '\0';
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
      found = true; /* dangling symlink: its target is the option string */
    } else {
      n = read(fd, buf, buflen - 1);
      close(fd);
      if (n >= 0) { buf[n] = '\0'; found = true; }
    }
  } else {
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd >= 0) {
      n = read(fd, buf, buflen - 1);
      close(fd);
      if (n >= 0) { buf[n] = '\0'; found = true; }
    }
  }
  errno = saved;
  return found;
}

/* ---- threads and synchronisation ---- */

uint32_t os_thread_id(void) { return (uint32_t)syscall(SYS_gettid); }

void os_futex_wait(_Atomic uint32_t *word, uint32_t expected) {
  int saved = errno;
  syscall(SYS_futex, word, FUTEX_WAIT_PRIVATE, expected, NULL, NULL, 0);
  errno = saved;
}

void os_futex_wake_one(_Atomic uint32_t *word) {
  int saved = errno;
  syscall(SYS_futex, word, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
  errno = saved;
}

void os_yield(void) { sched_yield(); }

void os_sleep_ns(uint64_t ns) {
  struct timespec ts = {(time_t)(ns / 1000000000u), (long)(ns % 1000000000u)};
  int saved = errno;
  nanosleep(&ts, NULL);
  errno = saved;
}

static void *service_thread_main(void *arg) {
  sigset_t all;
  sigfillset(&all);
  pthread_sigmask(SIG_BLOCK, &all, NULL); /* signals are for the program's threads */
  ((void (*)(void))arg)();
  return NULL;
}

bool os_start_service_thread(void (*main_fn)(void), const char *name) {
  pthread_attr_t attr;
  pthread_t thread;
  pthread_attr_init(&attr);
  pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
  pthread_attr_setstacksize(&attr, 64 * 1024);
  int saved = errno;
  /* A function pointer travels as the thread's argument: POSIX allows the conversion
   * on every platform that has dlsym. */
  int err = pthread_create(&thread, &attr, service_thread_main, (void *)main_fn);
  pthread_attr_destroy(&attr);
  if (err == 0) pthread_setname_np(thread, name);
  errno = saved;
  return err == 0;
}

static pthread_key_t exit_key;

bool os_thread_exit_hook_init(void (*hook)(void *)) { return pthread_key_create(&exit_key, hook) == 0; }

void os_thread_exit_hook_arm(void *arg) { pthread_setspecific(exit_key, arg); }

void *os_thread_exit_hook_current(void) { return pthread_getspecific(exit_key); }

static pthread_key_t observer_key;

bool os_thread_exit_observer_init(void (*hook)(void *)) { return pthread_key_create(&observer_key, hook) == 0; }

void os_thread_exit_observer_arm(void *arg) { pthread_setspecific(observer_key, arg); }

void *os_thread_exit_observer_current(void) { return pthread_getspecific(observer_key); }

void os_thread_name(char name[16]) {
  int saved = errno;
  memset(name, 0, 16);
  if (prctl(PR_GET_NAME, name, 0, 0, 0) != 0) name[0] = '\0';
  name[15] = '\0';
  errno = saved;
}

COLD_TEXT bool os_thread_name_of(uint32_t tid, char name[16]) {
  char path[48] = "/proc/self/task/", digits[12];
  int nd = 0;
  do digits[nd++] = (char)('0' + tid % 10), tid /= 10;
  while (tid != 0);
  size_t len = strlen(path);
  while (nd > 0) path[len++] = digits[--nd];
  memcpy(path + len, "/comm", 6);
  int saved = errno;
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  ssize_t n = -1;
  if (fd >= 0) {
    n = read(fd, name, 15);
    close(fd);
  }
  errno = saved;
  if (n < 0) return false;
  name[n] = '\0';
  if (n > 0 && name[n - 1] == '\n') name[n - 1] = '\0';
  return true;
}

#ifdef __GLIBC__
/* What glibc's pthread_atfork does: it is a stub linked statically into every library
 * that calls it (libc_nonshared.a), placed after all of tessera's code, where calling
 * it at start-up would make the kernel map a page of cold code. */
extern int __register_atfork(void (*prepare)(void), void (*parent)(void), void (*child)(void), void *dso);
extern void *__dso_handle;
bool os_at_fork(void (*prepare)(void), void (*parent)(void), void (*child)(void)) {
  return __register_atfork(prepare, parent, child, &__dso_handle) == 0;
}
#else
bool os_at_fork(void (*prepare)(void), void (*parent)(void), void (*child)(void)) {
  return pthread_atfork(prepare, parent, child) == 0;
}
#endif

/* ---- files, for the heap profiler's dumps and symbols ---- */


int os_open_read(const char *path) {
  int saved = errno;
  int fd;
  do fd = open(path, O_RDONLY | O_CLOEXEC);
  while (fd < 0 && errno == EINTR);
  errno = saved;
  return fd;
}

int os_open_write(const char *path, bool append) {
  int saved = errno;
  int flags = O_WRONLY | O_CREAT | O_CLOEXEC | (append ? O_APPEND : O_TRUNC);
  int fd;
  do fd = open(path, flags, 0644);
  while (fd < 0 && errno == EINTR);
  errno = saved;
  return fd;
}

long os_read(int fd, void *buf, size_t len) {
  int saved = errno;
  ssize_t n;
  do n = read(fd, buf, len);
  while (n < 0 && errno == EINTR);
  errno = saved;
  return (long)n;
}

bool os_write_all(int fd, const void *buf, size_t len) {
  int saved = errno;
  const char *p = buf;
  bool ok = true;
  while (len > 0) {
    ssize_t n = write(fd, p, len);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      ok = false;
      break;
    }
    p += n;
    len -= (size_t)n;
  }
  errno = saved;
  return ok;
}

void os_close(int fd) {
  int saved = errno;
  close(fd);
  errno = saved;
}

COLD_TEXT const void *os_map_file(const char *path, size_t *size) {
  int fd = os_open_read(path);
  if (fd < 0) return NULL;
  int saved = errno;
  struct stat st;
  void *p = MAP_FAILED;
  if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0) {
    p = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
    *size = (size_t)st.st_size;
  }
  close(fd);
  errno = saved;
  return p == MAP_FAILED ? NULL : p;
}

void os_unmap_file(const void *p, size_t size) {
  int saved = errno;
  munmap((void *)(uintptr_t)p, size);
  errno = saved;
}

int os_getpid(void) { return (int)syscall(SYS_getpid); }

bool os_readlink(const char *path, char *buf, size_t buflen) {
  int saved = errno;
  ssize_t n = readlink(path, buf, buflen - 1);
  errno = saved;
  if (n <= 0) return false;
  buf[n] = '\0';
  return true;
}

COLD_TEXT long os_read_file(const char *path, char *buf, size_t buflen) {
  int fd = os_open_read(path);
  if (fd < 0) return -1;
  size_t got = 0;
  while (got + 1 < buflen) {
    long n = os_read(fd, buf + got, buflen - 1 - got);
    if (n <= 0) break;
    got += (size_t)n;
  }
  buf[got] = '\0';
  os_close(fd);
  return (long)got;
}

uint64_t os_wall_ns(void) {
  struct timespec ts;
  if (clock_gettime(CLOCK_REALTIME, &ts) != 0) return 0;
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}
