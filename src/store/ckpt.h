/*
 * ckpt.h -- checkpoint files and the atomic file write they rest on (DESIGN §8).
 *
 * A checkpoint is one file `<dir>/ckpt-<epoch, 20 digits>.bin`: a 32-byte
 * header (magic "LMCKPT01", epoch, payload length, CRC-32C of the payload)
 * followed by the payload, which the database fills with its manifest (source
 * offsets, operator states, sink epochs, watermarks; src/db). It appears
 * atomically: written to a temporary name, flushed, renamed, and the directory
 * flushed — a crash leaves either the whole file or none, never a torn one
 * under the final name. Loading takes the newest file that is whole (header,
 * length and CRC check out); damaged or stray files are skipped and reported.
 */
#ifndef LM_CKPT_H
#define LM_CKPT_H

#include "laminar.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Write `len` bytes as `<dir>/<name>` atomically (temporary `<name>.tmp`,
 * fdatasync, rename, fsync of the directory). LAMINAR_ERR_IO on failure (the
 * temporary is removed; an older `<name>` is left as it was). */
laminar_code lm_store_write_atomic(const char* dir, const char* name, const void* data,
                                   size_t len, laminar_error* err);

/* Write checkpoint `epoch` (see above). `dir` must exist. */
laminar_code lm_ckpt_write(const char* dir, uint64_t epoch, const void* payload,
                           size_t len, laminar_error* err);

typedef struct lm_ckpt_report {
  int32_t skipped;         /* damaged checkpoint files passed over */
  uint64_t newest_skipped; /* the epoch of the newest one (0: none) */
  char reason[256];        /* the newest one skipped (its path), and why */
} lm_ckpt_report;

/* Load the newest whole checkpoint: *out_epoch, and the payload in *out (free
 * with lm_free) of *out_len bytes. *found is false (and *out NULL) when there
 * is none. report may be NULL. LAMINAR_ERR_IO when the directory cannot be
 * read. */
laminar_code lm_ckpt_load_latest(const char* dir, bool* found, uint64_t* out_epoch,
                                 uint8_t** out, size_t* out_len, lm_ckpt_report* report,
                                 laminar_error* err);

/* A checkpoint's positions: a small companion of checkpoint `epoch`,
 * `<dir>/pos-<epoch>.bin`, framed like it (header, CRC) and written before
 * it, holding where each source stood at the barrier (the payload is the
 * database's). When checkpoint `epoch` is later found damaged or missing,
 * recovery falls back to an older one and replays the log up to these
 * positions without publishing again what sinks committed for epochs up to
 * `epoch` (db/durable.c). The directory is not flushed: write the
 * checkpoint next, whose flush covers this rename too. */
laminar_code lm_ckpt_write_positions(const char* dir, uint64_t epoch, const void* payload,
                                     size_t len, laminar_error* err);

/* Load the newest whole positions file of an epoch above `after`: *found,
 * *out_epoch, the payload in *out (free with lm_free). LAMINAR_ERR_IO when
 * the directory cannot be read. */
laminar_code lm_ckpt_load_positions(const char* dir, uint64_t after, bool* found,
                                    uint64_t* out_epoch, uint8_t** out, size_t* out_len,
                                    laminar_error* err);

/* Keep the newest `keep` (>= 1) whole checkpoints; delete older ones, damaged
 * ones older than the newest kept, positions files older than the oldest
 * kept, and leftover temporaries. */
laminar_code lm_ckpt_gc(const char* dir, int32_t keep, laminar_error* err);

#endif /* LM_CKPT_H */
