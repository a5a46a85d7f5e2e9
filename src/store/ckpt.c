/*
 * ckpt.c -- atomic file writes and checkpoint files (see ckpt.h).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE  // O_CLOEXEC, fdatasync under -std=c17
#endif

#include "store/ckpt.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "store/crc32c.h"
#include "store/fs.h"
#include "util/util.h"

#define CKPT_MAGIC "LMCKPT01"
#define CKPT_HEADER 32u
#define CKPT_PREFIX "ckpt-"
#define POS_PREFIX "pos-"
#define CKPT_SUFFIX ".bin"
#define EPOCH_DIGITS 20

static laminar_code io_fail(laminar_error* err, const char* what, const char* path,
                            int e) {
  return lm_error_set(err, LAMINAR_ERR_IO, "%s '%s' failed: %s", what, path, strerror(e));
}


/* Write header (hlen bytes) and body as <dir>/<name> atomically; the
 * directory is flushed unless !sync_dir (a later write's flush of the same
 * directory makes the rename durable with its own). */
static laminar_code write_atomic2(const char* dir, const char* name, const void* head,
                                  size_t hlen, const void* body, size_t blen,
                                  bool sync_dir, laminar_error* err) {
  char tmp[4096], final[4096];
  int n1 = snprintf(final, sizeof final, "%s/%s", dir, name);
  int n2 = snprintf(tmp, sizeof tmp, "%s/%s.tmp", dir, name);
  if (n1 < 0 || n2 < 0 || (size_t)n2 >= sizeof tmp)
    return lm_error_set(err, LAMINAR_ERR_IO, "path '%s/%s' is too long", dir, name);
  int fd =
      lm_fs_create_excl(tmp); /* a stale or planted entry is replaced, never followed */
  if (fd < 0) return io_fail(err, "create", tmp, errno);
  int e = lm_fs_write_all(fd, head, hlen);
  if (e == 0) e = lm_fs_write_all(fd, body, blen);
  if (e == 0) e = lm_fault_io();
  if (e == 0 && fdatasync(fd) != 0) e = errno;
  if (close(fd) != 0 && e == 0) e = errno;
  if (e != 0) {
    unlink(tmp);
    return io_fail(err, "write", tmp, e);
  }
  if ((e = lm_fault_io()) != 0 || rename(tmp, final) != 0) {
    if (e == 0) e = errno;
    unlink(tmp);
    return io_fail(err, "rename", tmp, e);
  }
  if (sync_dir && (e = lm_fs_fsync_dir(dir)) != 0) return io_fail(err, "fsync", dir, e);
  return LAMINAR_OK;
}

laminar_code lm_store_write_atomic(const char* dir, const char* name, const void* data,
                                   size_t len, laminar_error* err) {
  return write_atomic2(dir, name, "", 0, data, len, true, err);
}


/* Write `<dir>/<prefix><epoch>.bin` (header, payload) atomically. */
static laminar_code write_framed(const char* dir, const char* prefix, uint64_t epoch,
                                 const void* payload, size_t len, bool sync_dir,
                                 laminar_error* err) {
  uint8_t h[CKPT_HEADER] = {0};
  memcpy(h, CKPT_MAGIC, 8);
  lm_le_put64(h + 8, epoch);
  lm_le_put64(h + 16, (uint64_t)len);
  uint32_t crc = lm_crc32c(0, payload, len);
  lm_le_put64(h + 24, crc);
  char name[64];
  snprintf(name, sizeof name, "%s%0*" PRIu64 CKPT_SUFFIX, prefix, EPOCH_DIGITS, epoch);
  return write_atomic2(dir, name, h, sizeof h, payload, len, sync_dir, err);
}

laminar_code lm_ckpt_write(const char* dir, uint64_t epoch, const void* payload,
                           size_t len, laminar_error* err) {
  return write_framed(dir, CKPT_PREFIX, epoch, payload, len, true, err);
}

laminar_code lm_ckpt_write_positions(const char* dir, uint64_t epoch, const void* payload,
                                     size_t len, laminar_error* err) {
  /* Its rename is made durable by the checkpoint's directory flush that
   * follows (the same directory); before that it matters to no one. */
  return write_framed(dir, POS_PREFIX, epoch, payload, len, false, err);
}

/* ---- listing -------------------------------------------------------------------- */

/* Epochs named by checkpoint files in dir, sorted ascending; *tmp_out counts
 * leftover temporaries when non-NULL (and removes them when remove_tmp). */
static laminar_code list_files(const char* dir, const char* prefix, uint64_t** out,
                               size_t* out_n, bool remove_tmp, laminar_error* err) {
  *out = NULL;
  *out_n = 0;
  DIR* d = opendir(dir);
  if (d == NULL) return io_fail(err, "opendir", dir, errno);
  uint64_t* v = NULL;
  size_t n = 0, cap = 0;
  laminar_code rc = LAMINAR_OK;
  const size_t plen = strlen(prefix), slen = strlen(CKPT_SUFFIX);
  struct dirent* e;
  while ((e = readdir(d)) != NULL) {
    const char* s = e->d_name;
    size_t len = strlen(s);
    if (strncmp(s, prefix, plen) != 0) continue;
    if (remove_tmp && len > 4 && strcmp(s + len - 4, ".tmp") == 0) {
      char p[4096];
      if (snprintf(p, sizeof p, "%s/%s", dir, s) < (int)sizeof p) unlink(p);
      continue;
    }
    if (len != plen + EPOCH_DIGITS + slen ||
        strcmp(s + plen + EPOCH_DIGITS, CKPT_SUFFIX) != 0)
      continue;
    uint64_t epoch = 0;
    bool digits = true;
    for (size_t i = 0; i < EPOCH_DIGITS && digits; i++) {
      char c = s[plen + i];
      digits = c >= '0' && c <= '9';
      epoch = epoch * 10 + (uint64_t)(c - '0');
    }
    if (!digits) continue;
    if (n == cap) {
      cap = cap ? cap * 2 : 8;
      uint64_t* nv = lm_realloc(v, cap * sizeof *v);
      if (nv == NULL) {
        rc = lm_error_set(err, LAMINAR_ERR_NOMEM, "checkpoints '%s': out of memory", dir);
        break;
      }
      v = nv;
    }
    v[n++] = epoch;
  }
  closedir(d);
  if (rc != LAMINAR_OK) {
    lm_free(v);
    return rc;
  }
  for (size_t i = 1; i < n; i++) /* few files: insertion sort */
    for (size_t j = i; j > 0 && v[j - 1] > v[j]; j--) {
      uint64_t t = v[j];
      v[j] = v[j - 1];
      v[j - 1] = t;
    }
  *out = v;
  *out_n = n;
  return LAMINAR_OK;
}

/* Read and check checkpoint `epoch`: 0 and the payload, or an errno / -1
 * (damaged, with why filled). */
static int read_framed(const char* dir, const char* prefix, uint64_t epoch, uint8_t** out,
                       size_t* out_len, char* why, size_t whylen) {
  char path[4096];
  snprintf(path, sizeof path, "%s/%s%0*" PRIu64 CKPT_SUFFIX, dir, prefix, EPOCH_DIGITS,
           epoch);
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    snprintf(why, whylen, "epoch %" PRIu64 ": %s (%.200s)", epoch, strerror(errno), path);
    return -1;
  }
  struct stat st;
  uint8_t h[CKPT_HEADER];
  int rc = -1;
  uint8_t* body = NULL;
  if (fstat(fd, &st) != 0 || (uint64_t)st.st_size < CKPT_HEADER ||
      pread(fd, h, sizeof h, 0) != (ssize_t)sizeof h || memcmp(h, CKPT_MAGIC, 8) != 0 ||
      lm_le_get64(h + 8) != epoch ||
      lm_le_get64(h + 16) != (uint64_t)st.st_size - CKPT_HEADER) {
    snprintf(why, whylen, "epoch %" PRIu64 ": header or length invalid (%.200s)", epoch,
             path);
    goto out;
  }
  size_t len = (size_t)lm_le_get64(h + 16);
  body = lm_malloc(len > 0 ? len : 1);
  if (body == NULL) {
    snprintf(why, whylen, "epoch %" PRIu64 ": out of memory (%.200s)", epoch, path);
    goto out;
  }
  size_t got = 0;
  while (got < len) {
    ssize_t r = pread(fd, body + got, len - got, (off_t)(CKPT_HEADER + got));
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) break;
    got += (size_t)r;
  }
  if (got != len || (uint64_t)lm_crc32c(0, body, len) != lm_le_get64(h + 24)) {
    snprintf(why, whylen, "epoch %" PRIu64 ": %s (%.200s)", epoch,
             got != len ? "short read" : "CRC mismatch", path);
    goto out;
  }
  *out = body;
  *out_len = len;
  body = NULL;
  rc = 0;
out:
  lm_free(body);
  close(fd);
  return rc;
}

laminar_code lm_ckpt_load_latest(const char* dir, bool* found, uint64_t* out_epoch,
                                 uint8_t** out, size_t* out_len, lm_ckpt_report* report,
                                 laminar_error* err) {
  *found = false;
  *out = NULL;
  *out_len = 0;
  *out_epoch = 0;
  lm_ckpt_report scratch;
  lm_ckpt_report* rep = report != NULL ? report : &scratch;
  memset(rep, 0, sizeof *rep);
  uint64_t* epochs;
  size_t n;
  LM_TRY(list_files(dir, CKPT_PREFIX, &epochs, &n, false, err));
  char why[sizeof rep->reason];
  for (size_t i = n; i-- > 0;) {
    if (read_framed(dir, CKPT_PREFIX, epochs[i], out, out_len, why, sizeof why) == 0) {
      *found = true;
      *out_epoch = epochs[i];
      break;
    }
    if (rep->skipped++ == 0) snprintf(rep->reason, sizeof rep->reason, "%s", why);
    if (rep->newest_skipped == 0) rep->newest_skipped = epochs[i];
  }
  lm_free(epochs);
  return LAMINAR_OK;
}

laminar_code lm_ckpt_load_positions(const char* dir, uint64_t after, bool* found,
                                    uint64_t* out_epoch, uint8_t** out, size_t* out_len,
                                    laminar_error* err) {
  *found = false;
  *out = NULL;
  *out_len = 0;
  *out_epoch = 0;
  uint64_t* epochs;
  size_t n;
  LM_TRY(list_files(dir, POS_PREFIX, &epochs, &n, false, err));
  char why[256];
  for (size_t i = n; i-- > 0 && epochs[i] > after;) {
    if (read_framed(dir, POS_PREFIX, epochs[i], out, out_len, why, sizeof why) == 0) {
      *found = true;
      *out_epoch = epochs[i];
      break;
    }
  }
  lm_free(epochs);
  return LAMINAR_OK;
}

laminar_code lm_ckpt_gc(const char* dir, int32_t keep, laminar_error* err) {
  if (keep < 1) keep = 1;
  uint64_t* epochs;
  size_t n;
  LM_TRY(list_files(dir, CKPT_PREFIX, &epochs, &n, true, err));
  laminar_code rc = LAMINAR_OK;
  int32_t whole = 0;
  uint64_t oldest_kept = 0;
  char why[256], path[4096];
  for (size_t i = n; i-- > 0;) {
    bool drop = whole >= keep;
    if (!drop) {
      uint8_t* body;
      size_t len;
      if (read_framed(dir, CKPT_PREFIX, epochs[i], &body, &len, why, sizeof why) == 0) {
        lm_free(body);
        whole++;
        oldest_kept = epochs[i];
      } else {
        drop = whole > 0; /* damaged and superseded */
      }
    }
    if (!drop) continue;
    snprintf(path, sizeof path, "%s/" CKPT_PREFIX "%0*" PRIu64 CKPT_SUFFIX, dir,
             EPOCH_DIGITS, epochs[i]);
    if (unlink(path) != 0 && errno != ENOENT) {
      rc = io_fail(err, "unlink", path, errno);
      break;
    }
  }
  lm_free(epochs);
  /* Positions files older than the oldest whole checkpoint kept: no
   * fallback reaches them. */
  if (rc == LAMINAR_OK &&
      (rc = list_files(dir, POS_PREFIX, &epochs, &n, true, err)) == LAMINAR_OK) {
    for (size_t i = 0; rc == LAMINAR_OK && i < n && epochs[i] < oldest_kept; i++) {
      snprintf(path, sizeof path, "%s/" POS_PREFIX "%0*" PRIu64 CKPT_SUFFIX, dir,
               EPOCH_DIGITS, epochs[i]);
      if (unlink(path) != 0 && errno != ENOENT) rc = io_fail(err, "unlink", path, errno);
    }
    lm_free(epochs);
  }
  if (rc == LAMINAR_OK) {
    int e = lm_fs_fsync_dir(dir);
    if (e != 0) rc = io_fail(err, "fsync", dir, e);
  }
  return rc;
}
