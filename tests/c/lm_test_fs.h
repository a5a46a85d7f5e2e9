/*
 * lm_test_fs.h -- scratch directories for the storage tests: make one under
 * /tmp, and remove it with the files in it (one level: the WAL, checkpoint
 * and sink directories are flat), or with everything under it.
 */
#ifndef LM_TEST_FS_H
#define LM_TEST_FS_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE  // mkdtemp under -std=c17
#endif

#include <dirent.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Create /tmp/<prefix>XXXXXX into buf; 0 on success. */
static inline int lm_test_mkdtemp(char* buf, size_t cap, const char* prefix) {
  snprintf(buf, cap, "/tmp/%sXXXXXX", prefix);
  return mkdtemp(buf) != NULL ? 0 : -1;
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

#endif /* LM_TEST_FS_H */
