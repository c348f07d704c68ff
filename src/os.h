/* SPDX-License-Identifier: MIT */
/*
 * The OS layer: the only place that makes system calls. Nothing here allocates.
 *
 * Linux only. Every function is safe to call before libc's constructors have run.
 */
#ifndef TESSERA_OS_H
#define TESSERA_OS_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Maps size bytes (a multiple of PAGE) of fresh zeroed read-write memory, aligned to
 * PAGE. Returns NULL when the OS refuses. */
void *os_map(size_t size);
/* os_map at exactly addr (page aligned); NULL if anything is mapped there already
 * (*occupied set) or the OS refuses. */
void *os_map_at(void *addr, size_t size, bool *occupied);
/* Fresh zero pages at exactly addr (page aligned), replacing whatever was mapped there
 * (only for ranges whose contents do not matter); false if the OS refuses. */
bool os_map_over(void *addr, size_t size);
/* Gives size bytes at addr (page aligned) back to the OS: the range is unmapped. */
void os_unmap(void *addr, size_t size);
/* Releases the pages of a range but keeps the address range: the next touch reads
 * zeros (MADV_DONTNEED). Returns false if the kernel refused. */
bool os_release_pages(void *addr, size_t size);
/* Lets the kernel take the pages of a range lazily, when it needs memory (MADV_FREE):
 * until then they stay resident and may keep their contents. Falls back to
 * os_release_pages where MADV_FREE is unsupported. Returns false if both fail. */
bool os_lazy_free_pages(void *addr, size_t size);
/* Several page runs handed back at once (os_release_pages, or os_lazy_free_pages when
 * lazy), in one system call where the kernel takes one (process_madvise on the process
 * itself, on recent kernels): the kernel then flushes the other CPUs' TLBs once for
 * all of them instead of once a run. Otherwise a call a run. */
typedef struct os_range {
  void *addr;
  size_t size;
} os_range_t;
unsigned os_release_ranges(const os_range_t *ranges, unsigned n, bool lazy); /* the calls made */
/* Sets bit 0 of vec[i] to whether page i of a range (page aligned) is in memory
 * (mincore: a page never touched is not; the other bits are reserved). Returns false if
 * the kernel refused. */
bool os_pages_resident(void *addr, size_t size, unsigned char *vec);
/* How many of the npages pages at addr (page aligned) are in memory (mincore, one call
 * per OS_RESIDENT_CHUNK pages); SIZE_MAX if the kernel refused. */
#define OS_RESIDENT_CHUNK 256 /* pages asked about per call */
size_t os_count_resident(void *addr, size_t npages);
/* The kernel's page table of this process (/proc/self/pagemap), opened for
 * os_pages_exclusive: -1 if it cannot be read (no /proc). Close it with os_close. */
int os_pagemap_open(void);
/* Sets excl[i] to whether page i of a range (page aligned, at most OS_PAGEMAP_CHUNK
 * pages) is resident and mapped by this process alone (pagemap's "exclusively mapped"):
 * a page the process wrote. A resident page that is not is the kernel's shared zero page
 * (mapped by a read of a page never written) or a page shared with a forked process.
 * Returns false if the kernel refused. */
#define OS_PAGEMAP_CHUNK 256
bool os_pages_exclusive(int pagemap_fd, const void *addr, size_t npages, unsigned char *excl);
/* Whether the system has swap space (sysinfo): without it, a page of a private anonymous
 * mapping that is not resident has never been written since it was last released, and
 * reads as zero. True when unknown. */
bool os_swap_configured(void);
/* The largest single request that memory could hold: RAM plus swap (sysinfo), the
 * bound the kernel's default overcommit heuristic puts on a mapping that reserves its
 * memory; SIZE_MAX where the system grants any (vm.overcommit_memory 1) or cannot say.
 * Read once. */
size_t os_single_request_bound(void);
/* The process's memory mappings (lines of /proc/self/maps); 0 if unreadable. */
size_t os_count_mappings(void);
/* Makes a range (page aligned) inaccessible (PROT_NONE), or readable and writable
 * again. Returns false if the kernel refused (too many mappings). */
bool os_protect(void *addr, size_t size, bool accessible);

/* Moves the pages of [from, from + size) to [to, to + size) (page aligned, both in
 * private anonymous mappings, nothing to keep at to) by moving their page-table entries:
 * no copy, no page fault; from then reads as zero, like released pages (mremap with
 * MREMAP_DONTUNMAP, Linux 5.7). OS_MOVE_UNSUPPORTED: the kernel has no such move;
 * OS_MOVE_FAILED: not this time (from spans two mappings, a mapping limit); either way
 * nothing moved, from is as before and to holds zero pages. OS_MOVE_LOST: the move
 * failed after the kernel unmapped the destination, which could not be mapped again. */
typedef enum { OS_MOVED, OS_MOVE_UNSUPPORTED, OS_MOVE_FAILED, OS_MOVE_LOST } os_move_result_t;
os_move_result_t os_move_pages(void *from, void *to, size_t size);
/* Times what moving pages costs on this machine: the first writes of `pages` fresh pages
 * (their page faults, *fault_ns) and the first reads of the same pages once
 * os_move_pages moved them to addresses never touched (*moved_read_ns); the lower of
 * three tries each, so that a try the scheduler interrupted does not count. False if
 * the memory was refused or the move failed. */
bool os_time_page_moves(size_t pages, uint64_t *fault_ns, uint64_t *moved_read_ns);
/* Makes a range (page aligned) read-only again (got_patch.c: a RELRO page it wrote). */
bool os_protect_readonly(void *addr, size_t size);
/* Fills buf with n random bytes from the kernel (getrandom); false if it refused. */
bool os_random_bytes(void *buf, size_t n);
/* Transparent huge pages for a range: mode 1 asks for them (MADV_HUGEPAGE), mode 2
 * forbids them (MADV_NOHUGEPAGE), 0 leaves the system default. */
void os_set_huge_pages(void *addr, size_t size, int mode);
/* The kernel's page size; tessera requires it to be PAGE (4 KiB). */
size_t os_page_size(void);
/* The address-space limit of the process (RLIMIT_AS) in bytes; SIZE_MAX if none. */
size_t os_address_space_limit(void);
/* The number of CPUs this process may run on (at least 1). */
unsigned os_ncpus(void);
/* The CPU the caller runs on, or 0 if unknown. */
unsigned os_current_cpu(void);
/* Monotonic time in nanoseconds. */
uint64_t os_now_ns(void);
/* Writes a whole string to stderr (fd 2), retrying on short writes. */
void os_write_stderr(const char *s);
/* Writes a whole string to file descriptor fd. */
void os_write_fd(int fd, const char *s);
/* A close-on-exec duplicate of stderr (so output still reaches it after the program
 * closes fd 2, as coreutils do at exit), or -1. */
int os_dup_stderr(void);
/* Reads the value of environment variable name into buf (NUL terminated). Works before
 * libc has set up environ by falling back to /proc/self/environ. Returns false when the
 * variable is absent, or when the process is setuid/setgid (AT_SECURE). */
bool os_getenv(const char *name, char *buf, size_t buflen);
/* Reads up to buflen-1 bytes of a file (following a symlink's target as a string if
 * the path is a symlink whose target is not a file) into buf. Returns false if absent. */
bool os_read_config_file(const char *path, char *buf, size_t buflen);

/* ---- threads and synchronisation ---- */

/* The kernel's id of the calling thread (positive, below 2^30). */
uint32_t os_thread_id(void);
/* Sleeps while *word == expected (or until woken; spurious returns are allowed). */
void os_futex_wait(_Atomic uint32_t *word, uint32_t expected);
/* Wakes one thread sleeping on word. */
void os_futex_wake_one(_Atomic uint32_t *word);
void os_yield(void);
void os_sleep_ns(uint64_t ns);
/* Starts a detached thread with a small stack and every signal blocked, named name
 * (15 characters at most), running main_fn. False if the system refused. May allocate
 * (the thread library's own bookkeeping): call with no allocator lock held. */
bool os_start_service_thread(void (*main_fn)(void), const char *name);
/* The hook called with arg when a thread that armed it exits (one for the process:
 * init once, then each thread arms it with its own arg; NULL disarms). Arming may
 * allocate (the thread library's key storage). */
bool os_thread_exit_hook_init(void (*hook)(void *));
void os_thread_exit_hook_arm(void *arg);
/* The value the calling thread's exit hook is armed with (NULL: none). */
void *os_thread_exit_hook_current(void);
/* A second exit hook, independent of the first (same contract): for the thread-name
 * statistics (thread_stats.c). Keys run in creation order (glibc runs thread-specific
 * destructors by ascending key), so the hook initialised first runs first at exit. */
bool os_thread_exit_observer_init(void (*hook)(void *));
void os_thread_exit_observer_arm(void *arg);
void *os_thread_exit_observer_current(void);
/* The calling thread's name (PR_GET_NAME: 15 characters at most, NUL terminated). */
void os_thread_name(char name[16]);
/* The name of thread tid of this process (/proc/self/task/<tid>/comm); false if the
 * thread is gone. */
bool os_thread_name_of(uint32_t tid, char name[16]);
/* Registers fork handlers (pthread_atfork). May allocate. */
bool os_at_fork(void (*prepare)(void), void (*parent)(void), void (*child)(void));

/* ---- files, for the heap profiler's dumps and symbols (none allocates; each keeps
 * errno as it found it) ---- */

/* Opens path for reading; returns the descriptor or -1. */
int os_open_read(const char *path);
/* Creates (or truncates) path for writing, mode 0644; append adds O_APPEND and keeps
 * the contents. Returns the descriptor or -1. */
int os_open_write(const char *path, bool append);
/* read(2), retried on EINTR; returns bytes read, 0 at end, -1 on error. */
long os_read(int fd, void *buf, size_t len);
/* Writes all of buf, retrying on short writes and EINTR; false on error. */
bool os_write_all(int fd, const void *buf, size_t len);
void os_close(int fd);
/* Maps a whole file read-only; *size receives its length. NULL if absent or empty. */
const void *os_map_file(const char *path, size_t *size);
void os_unmap_file(const void *p, size_t size);
/* The process id (a raw getpid: correct in a child right after fork). */
int os_getpid(void);
/* The target of symlink path, NUL terminated, into buf; false if it cannot be read. */
bool os_readlink(const char *path, char *buf, size_t buflen);
/* Reads a whole small file into buf (NUL terminated, truncated to buflen - 1);
 * returns the number of bytes read, or -1. */
long os_read_file(const char *path, char *buf, size_t buflen);
/* Wall-clock time (CLOCK_REALTIME) in nanoseconds since the Unix epoch. */
uint64_t os_wall_ns(void);

#endif
