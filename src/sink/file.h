/*
 * file.h -- the exactly-once file sink (DESIGN §8): a stream's output written
 * to a directory as one part file per checkpoint epoch, committed in two
 * phases so that a process killed at any moment and restarted from its last
 * checkpoint leaves no duplicate and no partial epoch in the committed output.
 *
 * Layout of the directory:
 *   part-<epoch, 20 digits>.<jsonl|csv>            committed output of an epoch
 *   .part-<epoch>.<jsonl|csv>.pending              staged, not yet committed
 * The committed output is the part files in epoch order; readers never see a
 * pending file under a part name (a commit is a rename).
 *
 * Protocol, driven by the checkpoint coordinator:
 *   begin(e)        open the staging file of epoch e (after the last committed)
 *   write(...)      append rows (formatted, buffered)
 *   seal()          close the epoch for writes (graph stopped: no I/O, its
 *                   buffer and file move aside); the next epoch may begin
 *   sync()          write, cut and fdatasync every sealed epoch's staging
 *                   file (graph running, coordinator thread); from here on
 *                   those epochs survive a crash as staged data
 *   (pre_commit() is seal() then sync())
 *   -- the checkpoint manifest naming epoch e becomes durable --
 *   commit(e)       rename staging -> part, fsync the directory; idempotent
 *   rollback(e)     delete the staging file (the epoch will be produced again)
 * Recovery: recover(c), c the epoch of the checkpoint restored: staged epochs
 * <= c were pre-committed under a durable manifest, so they are committed now;
 * staged epochs > c are rolled back (their rows are produced again by replay).
 * An epoch with no rows leaves no file.
 *
 * Formats: JSONL, one object per row with the schema's column names (NULL ->
 * null; NaN/±inf -> null, JSON has no such numbers; TIMESTAMP -> "YYYY-MM-DD
 * HH:MM:SS[.ffffff]"); CSV (RFC 4180) with a header line per part file, NULL
 * as an empty field, fields quoted when they hold a comma, quote or line break.
 */
#ifndef LM_SINK_FILE_H
#define LM_SINK_FILE_H

#include "laminar.h"
#include "util/types.h"

#include <stdbool.h>
#include <stdint.h>

/* RECORDS_*: framed records, the staging of a connector that publishes each
 * committed epoch elsewhere (sink/kafka.c): per row, a key record (the
 * columns of lm_file_sink_set_key, empty when none) and a value record (the
 * row); each record is 4 bytes of length (little endian) and a JSON object
 * or CSV fields without a line break. Files named part-<epoch>.records. */
typedef enum lm_sink_format {
  LM_SINK_JSONL = 1,
  LM_SINK_CSV = 2,
  LM_SINK_RECORDS_JSON = 3,
  LM_SINK_RECORDS_CSV = 4,
  LM_SINK_RECORDS_RAW = 5, /* key: the one key column, value: the one other
                              column, each as it is (NULL: empty) */
  LM_SINK_RECORDS_AVRO = 6 /* key and value: Avro binary records of the key's
                              columns and of all (connect/avro.h) */
} lm_sink_format;

typedef struct lm_file_sink lm_file_sink;

/* Open the sink on `dir` (created when missing; resolved, then opened once
 * with O_NOFOLLOW: every file is made through that descriptor) for rows of
 * `schema` (copied). Nothing is committed or removed until recover(). Errors:
 * LAMINAR_ERR_IO,
 * LAMINAR_ERR_NOMEM. */
laminar_code lm_file_sink_open(const char* dir, lm_sink_format format,
                               const lm_schema* schema, lm_file_sink** out,
                               laminar_error* err);

/* Framed formats: the columns of each row's key record (copied; none by
 * default). Before the first write. LAMINAR_ERR_NOMEM. */
laminar_code lm_file_sink_set_key(lm_file_sink* sink, const int32_t* cols, int32_t n,
                                  laminar_error* err);

/* The canonical path of the directory the sink opened (and writes in,
 * through its descriptor, whatever becomes of `dir` later): what a caller
 * checks the sink's place against. */
const char* lm_file_sink_real(const lm_file_sink* sink);

/* Close: the open epoch's staging file is removed (no checkpoint covers it:
 * a restart would drop it too, and a sink created again on the directory
 * must not publish it); sealed epochs' files stay for recover() to decide. */
void lm_file_sink_close(lm_file_sink* sink);

/* Commit staged epochs <= checkpointed_epoch, roll back later ones. */
laminar_code lm_file_sink_recover(lm_file_sink* sink, uint64_t checkpointed_epoch,
                                  laminar_error* err);

/* Start epoch `epoch`: none open, and greater than any committed or begun
 * epoch, else LAMINAR_ERR_STATE. */
laminar_code lm_file_sink_begin(lm_file_sink* sink, uint64_t epoch, laminar_error* err);

/* Append nrows rows of the columns (in schema order) to the current epoch.
 * LAMINAR_ERR_STATE outside begin..pre_commit. */
laminar_code lm_file_sink_write(lm_file_sink* sink, const lm_vec* cols, int64_t nrows,
                                laminar_error* err);

/* Close the current epoch for writes without I/O: its unwritten rows and its
 * staging file are set aside for lm_file_sink_sync(). LAMINAR_ERR_STATE with
 * no epoch open; LAMINAR_ERR_NOMEM (nothing changed). The writer may begin
 * the next epoch and write to it while another thread syncs. */
laminar_code lm_file_sink_seal(lm_file_sink* sink, laminar_error* err);

/* Make every sealed epoch durable as staged data (write, ftruncate,
 * fdatasync), oldest first. On failure the epoch that failed and later ones
 * stay sealed, with what was written, and the next call goes on from there.
 * Not concurrent with seal(), commit() or rollback(); concurrent writes to
 * the open epoch are fine. */
laminar_code lm_file_sink_sync(lm_file_sink* sink, laminar_error* err);

/* seal() then sync(): make the current epoch's rows durable as staged data. */
laminar_code lm_file_sink_pre_commit(lm_file_sink* sink, laminar_error* err);

/* Publish epoch `epoch` (pre-committed and synced in this run, or staged
 * before a crash). Committing an already committed epoch is a no-op; an epoch
 * still open or sealed and not synced is LAMINAR_ERR_STATE. */
laminar_code lm_file_sink_commit(lm_file_sink* sink, uint64_t epoch, laminar_error* err);

/* Drop epoch `epoch`'s staged rows. */
laminar_code lm_file_sink_rollback(lm_file_sink* sink, uint64_t epoch,
                                   laminar_error* err);

/* The same sink as the engine's lm_sink (sink.h); closing that closes this. */
struct lm_sink* lm_file_sink_base(lm_file_sink* sink);

/* Highest committed epoch seen by this handle (part files found at open, or
 * committed since); 0 when none. */
uint64_t lm_file_sink_committed_epoch(const lm_file_sink* sink);

#endif /* LM_SINK_FILE_H */
