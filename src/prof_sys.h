/*
 * prof_sys: the system calls the profiler needs that the OS layer (os.h) does not have
 * yet. They are grouped here so they can move into os.c unchanged. None allocates and
 * each keeps errno as it found it.
 */
#ifndef TESSERA_PROF_SYS_H
#define TESSERA_PROF_SYS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Opens path for reading; returns the descriptor or -1. */
int prof_sys_open_read(const char *path);
/* Creates (or truncates) path for writing, mode 0644; append adds O_APPEND and keeps
 * the contents. Returns the descriptor or -1. */
int prof_sys_open_write(const char *path, bool append);
/* read(2), retried on EINTR; returns bytes read, 0 at end, -1 on error. */
long prof_sys_read(int fd, void *buf, size_t len);
/* Writes all of buf, retrying on short writes and EINTR; false on error. */
bool prof_sys_write_all(int fd, const void *buf, size_t len);
void prof_sys_close(int fd);
/* Maps a whole file read-only; *size receives its length. NULL if absent or empty. */
const void *prof_sys_map_file(const char *path, size_t *size);
void prof_sys_unmap_file(const void *p, size_t size);
/* The process id (a raw getpid: correct in a child right after fork). */
int prof_sys_getpid(void);
/* The target of symlink path, NUL terminated, into buf; false if it cannot be read. */
bool prof_sys_readlink(const char *path, char *buf, size_t buflen);
/* Reads a whole small file into buf (NUL terminated, truncated to buflen - 1);
 * returns the number of bytes read, or -1. */
long prof_sys_read_file(const char *path, char *buf, size_t buflen);
/* Wall-clock time (CLOCK_REALTIME) in nanoseconds since the Unix epoch. */
uint64_t prof_sys_wall_ns(void);

#endif
