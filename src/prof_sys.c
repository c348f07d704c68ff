/* prof_sys: see prof_sys.h. Thin wrappers over libc's system call stubs, none of which
 * allocates. */
#include "prof_sys.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

int prof_sys_open_read(const char *path) {
  int saved = errno;
  int fd;
  do fd = open(path, O_RDONLY | O_CLOEXEC);
  while (fd < 0 && errno == EINTR);
  errno = saved;
  return fd;
}

int prof_sys_open_write(const char *path, bool append) {
  int saved = errno;
  int flags = O_WRONLY | O_CREAT | O_CLOEXEC | (append ? O_APPEND : O_TRUNC);
  int fd;
  do fd = open(path, flags, 0644);
  while (fd < 0 && errno == EINTR);
  errno = saved;
  return fd;
}

long prof_sys_read(int fd, void *buf, size_t len) {
  int saved = errno;
  ssize_t n;
  do n = read(fd, buf, len);
  while (n < 0 && errno == EINTR);
  errno = saved;
  return (long)n;
}

bool prof_sys_write_all(int fd, const void *buf, size_t len) {
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

void prof_sys_close(int fd) {
  int saved = errno;
  close(fd);
  errno = saved;
}

const void *prof_sys_map_file(const char *path, size_t *size) {
  int fd = prof_sys_open_read(path);
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

void prof_sys_unmap_file(const void *p, size_t size) {
  int saved = errno;
  munmap((void *)(uintptr_t)p, size);
  errno = saved;
}

int prof_sys_getpid(void) { return (int)syscall(SYS_getpid); }

bool prof_sys_readlink(const char *path, char *buf, size_t buflen) {
  int saved = errno;
  ssize_t n = readlink(path, buf, buflen - 1);
  errno = saved;
  if (n <= 0) return false;
  buf[n] = '\0';
  return true;
}

long prof_sys_read_file(const char *path, char *buf, size_t buflen) {
  int fd = prof_sys_open_read(path);
  if (fd < 0) return -1;
  size_t got = 0;
  while (got + 1 < buflen) {
    long n = prof_sys_read(fd, buf + got, buflen - 1 - got);
    if (n <= 0) break;
    got += (size_t)n;
  }
  buf[got] = '\0';
  prof_sys_close(fd);
  return (long)got;
}

uint64_t prof_sys_wall_ns(void) {
  struct timespec ts;
  if (clock_gettime(CLOCK_REALTIME, &ts) != 0) return 0;
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}
