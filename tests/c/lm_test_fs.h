/*
 * lm_test_fs.h -- scratch directories for the storage tests: make one under
 * /tmp, remove it with the files in it (one level: the WAL, checkpoint
 * and sink directories are flat) or with everything under it, copy a data
 * directory (as a crash would leave it: the copy of an open database).
 */
#ifndef LM_TEST_FS_H
#define LM_TEST_FS_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE  // mkdtemp under -std=c17
#endif

#include <dirent.h>
#include <stdbool.h>
#include <stdint.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Create <base>/<prefix>XXXXXX into buf; 0 on success, -1 when it does not
 * fit in cap or mkdtemp fails. base: $LAMINAR_TEST_TMPDIR when set (the test
 * command points it at a RAM disk where there is room, scripts/test.sh: what
 * the tests prove does not depend on the medium -- kill -9 keeps the page
 * cache, test_store_powerloss models lost syncs itself -- and sync WAL runs
 * are I/O bound on a disk), else $TMPDIR, else /tmp. lm_test_mkdtemp_disk
 * skips the RAM disk: the storage layer's own tests, which probe O_DIRECT
 * (tmpfs has none). */
static inline int lm_test_mkdtemp_at_(char* buf, size_t cap, const char* prefix,
                                      bool ram) {
  const char* base = ram ? getenv("LAMINAR_TEST_TMPDIR") : NULL;
  if (base == NULL || base[0] == '\0') base = getenv("TMPDIR");
  if (base == NULL || base[0] == '\0') base = "/tmp";
  int n = snprintf(buf, cap, "%s/%sXXXXXX", base, prefix);
  if (n < 0 || (size_t)n >= cap) return -1;
  return mkdtemp(buf) != NULL ? 0 : -1;
}
static inline int lm_test_mkdtemp(char* buf, size_t cap, const char* prefix) {
  return lm_test_mkdtemp_at_(buf, cap, prefix, true);
}
static inline int lm_test_mkdtemp_disk(char* buf, size_t cap, const char* prefix) {
  return lm_test_mkdtemp_at_(buf, cap, prefix, false);
}

/* Remove the files of dir, then dir. */
static inline void lm_test_rmdir(const char* dir) {
  DIR* d = opendir(dir);
  struct dirent* e;
  char p[4096];
  while (d != NULL && (e = readdir(d)) != NULL) {
    if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
    if (snprintf(p, sizeof p, "%s/%s", dir, e->d_name) < (int)sizeof p) unlink(p);
  }
  if (d != NULL) closedir(d);
  rmdir(dir);
}

static inline int lm_test_rm_entry_(const char* path, const struct stat* st, int flag,
                                    struct FTW* ftw) {
  (void)st, (void)flag, (void)ftw;
  return remove(path);
}

/* Remove dir and everything under it (symlinks removed, not followed). */
static inline void lm_test_rmtree(const char* dir) {
  (void)nftw(dir, lm_test_rm_entry_, 16, FTW_DEPTH | FTW_PHYS);
}

/* Copy file from -> to, skipping all-zero blocks (WAL segments are
 * preallocated: the copy stays sparse, its length the same). */
static inline int lm_test_copy_file(const char* from, const char* to, off_t size) {
  int in = open(from, O_RDONLY), out = open(to, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  int rc = in >= 0 && out >= 0 ? 0 : -1;
  static char buf[65536];
  static const char zero[65536];
  ssize_t got;
  while (rc == 0 && (got = read(in, buf, sizeof buf)) > 0) {
    if (memcmp(buf, zero, (size_t)got) == 0) {
      if (lseek(out, got, SEEK_CUR) < 0) rc = -1;
    } else if (write(out, buf, (size_t)got) != got) {
      rc = -1;
    }
  }
  if (rc == 0 && ftruncate(out, size) != 0) rc = -1;
  if (in >= 0) close(in);
  if (out >= 0) close(out);
  return rc;
}

/* Copy the tree under `from` to `to` (which does not exist yet). */
static inline int lm_test_copy_tree(const char* from, const char* to) {
  struct stat st;
  if (stat(from, &st) != 0) return -1;
  if (!S_ISDIR(st.st_mode)) return lm_test_copy_file(from, to, st.st_size);
  if (mkdir(to, 0755) != 0) return -1;
  DIR* d = opendir(from);
  if (d == NULL) return -1;
  struct dirent* e;
  int rc = 0;
  while (rc == 0 && (e = readdir(d)) != NULL) {
    if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
    char a[1400], b[1400];
    snprintf(a, sizeof a, "%.1000s/%.255s", from, e->d_name);
    snprintf(b, sizeof b, "%.1000s/%.255s", to, e->d_name);
    rc = lm_test_copy_tree(a, b);
  }
  closedir(d);
  return rc;
}

/* The byte offset of record `seq`'s header in WAL segment `path`, or -1
 * (store/wal.h: a 32-byte segment header, then records of a 32-byte header --
 * u32 length, u32 CRC, u64 seq, u64 epoch, u16 type -- and the payload padded
 * to 8 bytes; type 0xFFFF pads to a block boundary; zeros end the log). */
static inline long lm_test_wal_record_at(const char* path, uint64_t seq) {
  FILE* f = fopen(path, "rb");
  if (f == NULL) return -1;
  long at = -1;
  for (long off = 32; at < 0;) {
    uint8_t h[32];
    if (fseek(f, off, SEEK_SET) != 0 || fread(h, 1, sizeof h, f) != sizeof h) break;
    uint32_t len = (uint32_t)h[0] | (uint32_t)h[1] << 8 | (uint32_t)h[2] << 16 |
                   (uint32_t)h[3] << 24;
    uint64_t s = 0;
    for (int i = 7; i >= 0; i--) s = s << 8 | h[8 + i];
    bool pad = h[24] == 0xff && h[25] == 0xff;
    if (len == 0 && s == 0 && !pad) break; /* the end */
    if (s == seq && !pad) at = off;
    off += 32 + (long)((len + 7u) & ~7u);
  }
  fclose(f);
  return at;
}

#endif /* LM_TEST_FS_H */
