/*
 * idlelog.c -- idle.log (store/idlelog.h): framed, CRC-checked records of
 * idleness changes, fsynced as the source's WAL is, cut at a torn tail and
 * pruned at checkpoints by an atomic rewrite.
 */
#define _GNU_SOURCE  // O_CLOEXEC, fdatasync, ftruncate under -std=c17
#include "store/idlelog.h"

#include "store/crc32c.h"
#include "store/fs.h"
#include "util/util.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

laminar_code lm_idlelog_init(lm_idlelog* l, const char* dir) {
  memset(l, 0, sizeof *l);
  size_t n = strlen(dir);
  l->dir = lm_strdup(dir);
  l->path = lm_malloc(n + sizeof "/idle.log");
  l->tmp = lm_malloc(n + sizeof "/idle.log.tmp");
  if (l->dir == NULL || l->path == NULL || l->tmp == NULL) {
    lm_free(l->dir);
    lm_free(l->path);
    lm_free(l->tmp);
    memset(l, 0, sizeof *l);
    return LAMINAR_ERR_NOMEM;
  }
  snprintf(l->path, n + sizeof "/idle.log", "%s/idle.log", dir);
  snprintf(l->tmp, n + sizeof "/idle.log.tmp", "%s/idle.log.tmp", dir);
  pthread_mutex_init(&l->mu, NULL);
  return LAMINAR_OK;
}

void lm_idlelog_close(lm_idlelog* l) {
  if (l->path == NULL) return;
  pthread_mutex_destroy(&l->mu);
  lm_free(l->dir);
  lm_free(l->path);
  lm_free(l->tmp);
  memset(l, 0, sizeof *l);
}

/* ---- appends ---------------------------------------------------------------------- */

int lm_idlelog_append(lm_idlelog* l, const void* p, size_t n, bool sync) {
  if (n > UINT32_MAX - 8) return EINVAL;
  uint8_t* rec = lm_malloc(n + 8);
  if (rec == NULL) return ENOMEM;
  lm_le_put32(rec, (uint32_t)n);
  memcpy(rec + 4, p, n);
  lm_le_put32(rec + 4 + n, lm_crc32c(0, rec + 4, n));
  pthread_mutex_lock(&l->mu);
  bool created = false;
  int fd = open(l->path, O_WRONLY | O_APPEND | O_CLOEXEC);
  if (fd < 0 && errno == ENOENT) {
    fd = open(l->path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
    created = fd >= 0;
  }
  int e = fd < 0 ? errno : lm_fault_io();
  if (e == 0) e = lm_fs_write_all(fd, rec, n + 8);
  if (e == 0 && sync) e = lm_fault_io();
  if (e == 0 && sync && fdatasync(fd) != 0) e = errno;
  if (fd >= 0) close(fd);
  /* A new entry in the directory: durable only once the directory is. */
  if (e == 0 && sync && created) e = lm_fs_fsync_dir(l->dir);
  pthread_mutex_unlock(&l->mu);
  lm_free(rec);
  return e;
}

/* ---- reads ------------------------------------------------------------------------ */

/* Whether a whole record with a good CRC starts at p[at..len); its payload
 * length in *n. */
static bool whole_record(const uint8_t* p, size_t len, size_t at, size_t* n) {
  if (len - at < 8) return false;
  *n = lm_le_get32(p + at);
  if (*n > len - at - 8) return false;
  return lm_crc32c(0, p + at + 4, *n) == lm_le_get32(p + at + 4 + *n);
}

/* The whole file into *out (*len bytes; NULL and 0 when missing). */
static laminar_code read_all(const lm_idlelog* l, uint8_t** out, size_t* len,
                             laminar_error* err) {
  *out = NULL;
  *len = 0;
  int fd = open(l->path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT) return LAMINAR_OK;
    return lm_error_set(err, LAMINAR_ERR_IO, "cannot read %s: %s", l->path,
                        strerror(errno));
  }
  struct stat st;
  uint8_t* buf = NULL;
  laminar_code rc = LAMINAR_OK;
  if (fstat(fd, &st) != 0) {
    rc =
        lm_error_set(err, LAMINAR_ERR_IO, "cannot read %s: %s", l->path, strerror(errno));
  } else if ((buf = lm_malloc((size_t)st.st_size + 1)) == NULL) {
    rc = lm_error_set(err, LAMINAR_ERR_NOMEM, "out of memory reading %s", l->path);
  }
  size_t got = 0;
  while (rc == LAMINAR_OK && got < (size_t)st.st_size) {
    ssize_t r = read(fd, buf + got, (size_t)st.st_size - got);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0)
      rc = lm_error_set(err, LAMINAR_ERR_IO, "cannot read %s: %s", l->path,
                        strerror(errno));
    if (r <= 0) break;
    got += (size_t)r;
  }
  close(fd);
  if (rc != LAMINAR_OK) {
    lm_free(buf);
    return rc;
  }
  *out = buf;
  *len = got;
  return LAMINAR_OK;
}

laminar_code lm_idlelog_read(lm_idlelog* l, bool cut, int64_t* out_cut,
                             laminar_code (*fn)(void* arg, const uint8_t* p, size_t n),
                             void* arg, laminar_error* err) {
  if (out_cut != NULL) *out_cut = 0;
  uint8_t* buf;
  size_t len, at = 0, n;
  LM_TRY(read_all(l, &buf, &len, err));
  laminar_code rc = LAMINAR_OK;
  while (rc == LAMINAR_OK && whole_record(buf, len, at, &n)) {
    rc = fn(arg, buf + at + 4, n);
    at += 8 + n;
  }
  lm_free(buf);
  if (rc != LAMINAR_OK || at == len) return rc;
  /* A torn or damaged tail: the log ends at the last good record. */
  if (out_cut != NULL) *out_cut = (int64_t)(len - at);
  if (!cut) return LAMINAR_OK;
  int fd = open(l->path, O_WRONLY | O_CLOEXEC);
  int e = fd < 0 ? errno : lm_fault_io();
  if (e == 0 && ftruncate(fd, (off_t)at) != 0) e = errno;
  if (e == 0 && fdatasync(fd) != 0) e = errno;
  if (fd >= 0) close(fd);
  if (e != 0)
    return lm_error_set(err, LAMINAR_ERR_IO, "cannot cut the torn tail of %s: %s",
                        l->path, strerror(e));
  return LAMINAR_OK;
}

/* ---- pruning ---------------------------------------------------------------------- */

/* Write p[0..n) to the temp file and rename it over the log (all durable).
 * 0 or an errno (the log as it was; the temp file removed). */
static int replace_log(lm_idlelog* l, const uint8_t* p, size_t n) {
  int fd = lm_fs_create_excl(l->tmp);
  int e = fd < 0 ? errno : lm_fault_io();
  if (e == 0) e = lm_fs_write_all(fd, p, n);
  if (e == 0 && fdatasync(fd) != 0) e = errno;
  if (fd >= 0) close(fd);
  if (e == 0 && rename(l->tmp, l->path) != 0) e = errno;
  if (e != 0) {
    unlink(l->tmp);
    return e;
  }
  return lm_fs_fsync_dir(l->dir);
}

laminar_code lm_idlelog_prune(lm_idlelog* l, uint64_t keep_from, laminar_error* err) {
  pthread_mutex_lock(&l->mu);
  uint8_t* buf;
  size_t len, at = 0, kept = 0, n;
  laminar_code rc = read_all(l, &buf, &len, err);
  /* The records kept move forward in place: kept <= at throughout. */
  while (rc == LAMINAR_OK && whole_record(buf, len, at, &n)) {
    uint64_t epoch = n >= 8 ? lm_le_get64(buf + at + 4) : 0;
    if (epoch + 1 >= keep_from) {
      memmove(buf + kept, buf + at, 8 + n);
      kept += 8 + n;
    }
    at += 8 + n;
  }
  if (rc == LAMINAR_OK && kept < len) {
    int e = replace_log(l, buf, kept);
    if (e != 0)
      rc = lm_error_set(err, LAMINAR_ERR_IO, "cannot rewrite %s: %s", l->path,
                        strerror(e));
  }
  pthread_mutex_unlock(&l->mu);
  lm_free(buf);
  return rc;
}
