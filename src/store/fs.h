/*
 * fs.h -- the file-system steps the WAL, checkpoints and file sinks share:
 * complete writes despite short writes and EINTR, flushing a directory after
 * creating, renaming or removing entries in it, and little-endian fields of
 * on-disk headers.
 */
#ifndef LM_STORE_FS_H
#define LM_STORE_FS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Write all n bytes (at the file position / at offset off). 0 or an errno. */
int lm_fs_write_all(int fd, const void* p, size_t n);
int lm_fs_pwrite_all(int fd, const void* p, size_t n, uint64_t off);

/* fsync the directory itself, making entry changes durable. 0 or an errno.
 * The _fd form flushes an open directory. */
int lm_fs_fsync_dir(const char* dir);
int lm_fs_fsync_dir_fd(int dir_fd);

/* Create `path` afresh for writing (a temporary or staging file): a stale
 * entry of that name is removed first (a symlink is removed, never followed),
 * then the file is created with O_CREAT | O_EXCL | O_NOFOLLOW, so a link
 * planted between the two steps makes the open fail instead of writing
 * through it. The fd (O_WRONLY, O_CLOEXEC, mode 0644), or -1 with errno. */
int lm_fs_create_excl(const char* path);
/* The same for `name` in the open directory dir_fd (AT_FDCWD: as above). */
int lm_fs_create_excl_at(int dir_fd, const char* name);

/* Open the directory `path` (O_DIRECTORY | O_NOFOLLOW: its last component is
 * no symlink) and write the canonical path of what was opened -- the kernel's
 * name for the descriptor, not a second lookup of `path` -- into real[cap], so
 * a check of `real` holds for every use of the descriptor however the path is
 * changed later. The fd (O_RDONLY, O_CLOEXEC), or -1 with errno (ELOOP: the
 * last component is a symlink). */
int lm_fs_open_dir(const char* path, char* real, size_t cap);

/* The canonical absolute form of `path` (symlinks, "." and ".." resolved) into
 * out[cap]; `path` itself need not exist yet, its parent must. 0 or an errno
 * (ENAMETOOLONG when it does not fit). */
int lm_fs_resolve(const char* path, char* out, size_t cap);

/* Whether canonical path `path` is `root` or lies under it (both canonical,
 * as lm_fs_resolve makes them). */
bool lm_fs_within(const char* path, const char* root);

/* One owner per data directory: an flock(2) on the directory itself (its own
 * open file description, so a second open in the same process conflicts as a
 * second process does; the kernel drops it when the holder exits, however).
 * Exclusive for a writer, shared for a read-only open; never waits for the
 * lock. A writer records its pid in `<dir>/owner.pid` right after taking it
 * (informational, removed at unlock). Returns the lock's fd (>= 0), or -1
 * with errno: EWOULDBLOCK when another open holds a conflicting lock (then
 * *holder is its pid when known: a writer whose owner.pid names a live
 * process, given ~100 ms to write it when it has just taken the lock; 0 when
 * unknown; -1 when only read-only opens hold it). */
int lm_fs_lock_dir(const char* dir, bool shared, long* holder);

/* Release a lock from lm_fs_lock_dir (a writer's owner.pid removed first). */
void lm_fs_unlock_dir(int fd, const char* dir, bool shared);

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
