/*
 * fs.h -- the file-system steps the WAL, checkpoints and file sinks share:
 * complete writes despite short writes and EINTR, flushing a directory after
 * creating, renaming or removing entries in it, and little-endian fields of
 * on-disk headers.
 */
#ifndef LM_STORE_FS_H
#define LM_STORE_FS_H

#include <stddef.h>
#include <stdint.h>

/* Write all n bytes (at the file position / at offset off). 0 or an errno. */
int lm_fs_write_all(int fd, const void* p, size_t n);
int lm_fs_pwrite_all(int fd, const void* p, size_t n, uint64_t off);

/* fsync the directory itself, making entry changes durable. 0 or an errno. */
int lm_fs_fsync_dir(const char* dir);

static inline void lm_le_put32(uint8_t* p, uint32_t v) {
  for (int i = 0; i < 4; i++) p[i] = (uint8_t)(v >> (8 * i));
}
static inline void lm_le_put64(uint8_t* p, uint64_t v) {
  for (int i = 0; i < 8; i++) p[i] = (uint8_t)(v >> (8 * i));
}
static inline uint32_t lm_le_get32(const uint8_t* p) {
  uint32_t v = 0;
  for (int i = 0; i < 4; i++) v |= (uint32_t)p[i] << (8 * i);
  return v;
}
static inline uint64_t lm_le_get64(const uint8_t* p) {
  uint64_t v = 0;
  for (int i = 0; i < 8; i++) v |= (uint64_t)p[i] << (8 * i);
  return v;
}

#endif /* LM_STORE_FS_H */
