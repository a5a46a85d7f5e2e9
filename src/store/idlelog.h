/*
 * idlelog.h -- idle.log in data_dir: the log of per-source idleness changes
 * (db/durable.c writes and reads its records' contents), kept with the WAL's
 * rules.
 *
 * Format: records back to back, each a u32 length n, n bytes of payload and
 * the u32 CRC-32C of the payload (little-endian). A payload starts with the
 * i64 number of the last checkpoint completed when the change was logged
 * (its epoch); the rest is the caller's.
 *
 * Durability: an append is one write(2) of the whole record; with sync
 * (the source's wal_mode = 'sync') it is fdatasync'ed before the append
 * returns, and the directory too when the append created the file. A torn
 * or damaged tail (a crash mid-write) ends the log on read, and the reader
 * cuts it off the file, so later appends follow the last good record (as
 * the WAL's recovery cuts its tail). At each checkpoint the log is pruned:
 * records no restorable checkpoint needs are dropped by writing the rest to
 * idle.log.tmp (fdatasync), renaming it over idle.log and fsyncing the
 * directory, as checkpoints are written.
 *
 * Thread-safety: appends (the reactor's idle hook) and prunes (the
 * checkpointing thread) take the log's mutex, held only for the file
 * operations themselves; a read runs at open, before appends begin.
 */
#ifndef LM_STORE_IDLELOG_H
#define LM_STORE_IDLELOG_H

#include "laminar.h"

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct lm_idlelog {
  char* dir;  /* the data directory */
  char* path; /* dir/idle.log */
  char* tmp;  /* dir/idle.log.tmp */
  pthread_mutex_t mu;
} lm_idlelog;

/* The log of directory `dir` (nothing opened or created yet). Ownership: l
 * holds copies of the paths; free with lm_idlelog_close(). Returns
 * LAMINAR_OK or LAMINAR_ERR_NOMEM (l then needs no close). */
laminar_code lm_idlelog_init(lm_idlelog* l, const char* dir);
/* Free what l holds. A zeroed l is fine. */
void lm_idlelog_close(lm_idlelog* l);

/* Append one record of payload p[0..n) (n >= 8: its epoch first), fsynced
 * when sync. Returns 0 or an errno (nothing is promised of the file then:
 * a partial record is a torn tail the next read cuts). */
int lm_idlelog_append(lm_idlelog* l, const void* p, size_t n, bool sync);

/* Each whole record's payload in log order, to fn (a code other than
 * LAMINAR_OK from fn stops the read and is returned). A torn or damaged tail
 * ends the log: with cut, it is truncated off the file (fdatasync'ed);
 * *out_cut (may be NULL) gets its size in bytes. A missing file is an empty
 * log. LAMINAR_ERR_NOMEM, or LAMINAR_ERR_IO naming the file when it cannot
 * be read or cut. */
laminar_code lm_idlelog_read(lm_idlelog* l, bool cut, int64_t* out_cut,
                             laminar_code (*fn)(void* arg, const uint8_t* p, size_t n),
                             void* arg, laminar_error* err);

/* Drop the records whose epoch + 1 < keep_from (no restore of checkpoint
 * keep_from or a later one reads them) and a torn tail, rewriting the file
 * atomically (temp, fdatasync, rename, directory fsync); nothing is written
 * when nothing is dropped. On failure the log is as it was.
 * LAMINAR_ERR_NOMEM, or LAMINAR_ERR_IO naming the file. */
laminar_code lm_idlelog_prune(lm_idlelog* l, uint64_t keep_from, laminar_error* err);

#endif /* LM_STORE_IDLELOG_H */
