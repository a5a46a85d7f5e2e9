/*
 * fs.c -- complete writes and directory flushes (see fs.h).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE  // O_CLOEXEC under -std=c17
#endif

#include "store/fs.h"

#include "util/util.h"

#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

int lm_fs_write_all(int fd, const void* p, size_t n) {
  int fault = lm_fault_io();
  if (fault != 0) return fault;
  const char* b = p;
  while (n > 0) {
    ssize_t w = write(fd, b, n);
    if (w < 0) {
      if (errno == EINTR) continue;
      return errno;
    }
    b += w;
    n -= (size_t)w;
  }
  return 0;
}

int lm_fs_pwrite_all(int fd, const void* p, size_t n, uint64_t off) {
  int fault = lm_fault_io();
  if (fault != 0) return fault;
  const char* b = p;
  while (n > 0) {
    ssize_t w = pwrite(fd, b, n, (off_t)off);
    if (w < 0) {
      if (errno == EINTR) continue;
      return errno;
    }
    b += w;
    n -= (size_t)w;
    off += (uint64_t)w;
  }
  return 0;
}

int lm_fs_fsync_dir(const char* dir) {
  int fault = lm_fault_io();
  if (fault != 0) return fault;
  int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return errno;
  int e = fsync(fd) != 0 ? errno : 0;
  close(fd);
  return e;
}
