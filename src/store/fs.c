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
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define OWNER_FILE "owner.pid"

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

int lm_fs_fsync_dir_fd(int dir_fd) {
  int fault = lm_fault_io();
  if (fault != 0) return fault;
  return fsync(dir_fd) != 0 ? errno : 0;
}

int lm_fs_create_excl_at(int dir_fd, const char* name) {
  if (unlinkat(dir_fd, name, 0) != 0 && errno != ENOENT) return -1;
  return openat(dir_fd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
}

int lm_fs_create_excl(const char* path) { return lm_fs_create_excl_at(AT_FDCWD, path); }

int lm_fs_open_dir(const char* path, char* real, size_t cap) {
  int fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return -1;
  char link[64];
  snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
  ssize_t n = readlink(link, real, cap);
  int e = n < 0 ? errno : (size_t)n >= cap ? ENAMETOOLONG : 0;
  if (e == 0) {
    real[n] = '\0';
    if (real[0] != '/') e = ENOENT; /* "(deleted)" or not a path: not where it was */
  } else if (e == ENOENT) {
    /* No /proc: the canonical path, if it still names this very directory. */
    struct stat a, b;
    char buf[PATH_MAX];
    e = realpath(path, buf) == NULL                     ? errno
        : fstat(fd, &a) != 0 || stat(buf, &b) != 0      ? errno
        : a.st_dev != b.st_dev || a.st_ino != b.st_ino  ? ESTALE
        : (size_t)snprintf(real, cap, "%s", buf) >= cap ? ENAMETOOLONG
                                                        : 0;
  }
  if (e != 0) {
    close(fd);
    errno = e;
    return -1;
  }
  return fd;
}

int lm_fs_resolve(const char* path, char* out, size_t cap) {
  char buf[PATH_MAX];
  if (realpath(path, buf) != NULL) {
    return (size_t)snprintf(out, cap, "%s", buf) < cap ? 0 : ENAMETOOLONG;
  }
  if (errno != ENOENT) return errno;
  struct stat st;
  if (lstat(path, &st) == 0)
    return ENOENT; /* a dangling symlink: where it leads is unknown */
  /* Not there yet: its parent, resolved, and its last component. */
  size_t n = strlen(path);
  while (n > 1 && path[n - 1] == '/') n--;
  size_t cut = n;
  while (cut > 0 && path[cut - 1] != '/') cut--;
  const char* base = path + cut;
  size_t blen = n - cut;
  if (blen == 0 || (blen == 1 && base[0] == '.') ||
      (blen == 2 && base[0] == '.' && base[1] == '.'))
    return ENOENT;
  char parent[PATH_MAX];
  if (cut == 0) {
    snprintf(parent, sizeof parent, ".");
  } else if (cut == 1) {
    snprintf(parent, sizeof parent, "/");
  } else if (cut - 1 < sizeof parent) {
    memcpy(parent, path, cut - 1);
    parent[cut - 1] = '\0';
  } else {
    return ENAMETOOLONG;
  }
  if (realpath(parent, buf) == NULL) return errno;
  int w =
      snprintf(out, cap, "%s/%.*s", strcmp(buf, "/") == 0 ? "" : buf, (int)blen, base);
  return w >= 0 && (size_t)w < cap ? 0 : ENAMETOOLONG;
}

bool lm_fs_within(const char* path, const char* root) {
  if (strcmp(root, "/") == 0) return true;
  size_t n = strlen(root);
  return strncmp(path, root, n) == 0 && (path[n] == '\0' || path[n] == '/');
}

/* The pid in <dir>/owner.pid when it names a live process, else 0. */
static long owner_pid(const char* dir) {
  char path[4096], text[32];
  if ((size_t)snprintf(path, sizeof path, "%s/" OWNER_FILE, dir) >= sizeof path) return 0;
  int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return 0;
  ssize_t got = read(fd, text, sizeof text - 1);
  close(fd);
  if (got <= 0) return 0;
  text[got] = '\0';
  char* end;
  long pid = strtol(text, &end, 10);
  if (end == text || pid <= 0 || pid > INT_MAX) return 0;
  return kill((pid_t)pid, 0) == 0 || errno == EPERM ? pid : 0;
}

int lm_fs_lock_dir(const char* dir, bool shared, long* holder) {
  *holder = 0;
  int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return -1;
  if (flock(fd, (shared ? LOCK_SH : LOCK_EX) | LOCK_NB) != 0) {
    int e = errno;
    if (e == EWOULDBLOCK) {
      /* A writer refused: a shared lock that is granted means only
       * read-only opens hold the directory. */
      if (!shared && flock(fd, LOCK_SH | LOCK_NB) == 0) {
        *holder = -1;
        (void)flock(fd, LOCK_UN);
      } else {
        /* A writer writes its pid right after taking the lock: give one
         * that just took it a moment (at most ~100 ms) to do so. */
        for (int i = 0; i < 100 && (*holder = owner_pid(dir)) == 0; i++) {
          struct timespec ms = {0, 1000000};
          nanosleep(&ms, NULL);
        }
      }
    }
    close(fd);
    errno = e;
    return -1;
  }
  if (!shared) {
    char path[4096], text[32];
    if ((size_t)snprintf(path, sizeof path, "%s/" OWNER_FILE, dir) < sizeof path) {
      int pfd = lm_fs_create_excl(path);
      if (pfd >= 0) {
        int len = snprintf(text, sizeof text, "%ld\n", (long)getpid());
        if (write(pfd, text, (size_t)len) != len)
          (void)unlink(path); /* informational only */
        close(pfd);
      }
    }
  }
  return fd;
}

void lm_fs_unlock_dir(int fd, const char* dir, bool shared) {
  if (fd < 0) return;
  if (!shared) {
    char path[4096];
    if ((size_t)snprintf(path, sizeof path, "%s/" OWNER_FILE, dir) < sizeof path)
      (void)unlink(path);
  }
  close(fd);
}
