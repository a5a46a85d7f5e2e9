/*
 * wal.h -- the write-ahead log of one source (DESIGN §8): a directory of
 * segment files, each record framed with its length, type, epoch, sequence
 * number and a CRC-32C.
 *
 * Records get consecutive sequence numbers from 1 and are appended to an
 * in-memory buffer (any thread; a mutex orders them). lm_wal_commit() makes a
 * record written (async) or written and fdatasync'ed (sync). Commits from
 * several threads share one write and one flush (group commit): one caller
 * becomes the leader and writes everything appended so far while the others
 * wait for it. Writes go through io_uring (liburing) when the build has it and
 * the kernel accepts a ring at open time; otherwise, or when told so, pwrite.
 *
 * On disk: `<dir>/<first seq, 20 digits>.wal`. A segment starts with a 32-byte
 * header (magic "LMWALSG1", first sequence number, version, CRC); each record
 * is a 32-byte header (payload length, CRC, seq, epoch, type, flags) and the
 * payload padded to 8 bytes. The CRC covers the header after its CRC field and
 * the payload.
 *
 * Direct I/O: where the file system takes O_DIRECT (probed at open; not
 * tmpfs) and writes go through pwrite, segments are written with it, so the
 * log skips the page cache: no kernel copy of every byte (DMA from the log's
 * own page-aligned buffer; from 2 MiB on, huge-page backed where the kernel
 * grants it, so a write reaches the device in a few large segments rather
 * than one per 4 KiB page) and no write-back later. Every write is then whole
 * 4 KiB blocks at a block boundary: a segment's header is followed by a
 * padding record filling its first block, and each written batch ends with
 * one filling its last block.
 * A padding record (type LM_WAL_TYPE_PAD, sequence number 0) is framed and
 * CRC-checked like any other but has no sequence number and is never replayed.
 * A flush never rewrites a block an earlier flush wrote.
 *
 * Opening an existing directory validates every record. An all-zero record
 * header is the clean end of the log (segments are preallocated with
 * fallocate, so a full disk shows when a segment is created, not mid-record)
 * provided nothing but zeros follows. The log is cut at the first record that
 * is torn (shorter than its length), corrupt (CRC), out of sequence, zeroed in
 * place, or preceded by a missing segment; the cut is reported in
 * lm_wal_report, never replayed as data. Damage among records a checkpoint
 * covers (lm_wal_options.covered) is skipped instead: the scan goes on at the
 * next whole record (found at a multiple of 8 by its frame, sequence number
 * and CRC) or the next segment when every record missing in between is
 * covered, and the log continues numbering after the covered ones. Strict mode refuses to cut anywhere
 * but in the newest segment. A segment whose header names another first
 * record (copied or foreign) counts as damaged.
 *
 * A failed write or flush (EIO, ENOSPC, ...) fails the commits waiting on it,
 * cuts the file back to what was safely there before (after a failed flush:
 * to the last good flush, and later records go to a fresh segment), discards
 * the records appended but not yet written, and leaves the log usable: later
 * appends and commits work again once the device does. No committed record
 * is lost.
 */
#ifndef LM_WAL_H
#define LM_WAL_H

#include "laminar.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct lm_wal lm_wal;

/* How records reach the file. AUTO: io_uring when built with liburing and the
 * kernel gives a ring, else pwrite. URING: io_uring or fail at open. */
typedef enum lm_wal_io {
  LM_WAL_IO_AUTO = 0,
  LM_WAL_IO_URING = 1,
  LM_WAL_IO_PWRITE = 2,
} lm_wal_io;

/* Fault injection for tests: called before each write and each flush; a
 * non-zero return is the errno that operation fails with (a failing write
 * first writes half of its bytes, like a device that filled up midway). */
typedef enum lm_wal_fault_op {
  LM_WAL_FAULT_WRITE = 1,
  LM_WAL_FAULT_SYNC = 2,
  LM_WAL_FAULT_ALLOCATE = 3, /* reserving a new segment's space */
} lm_wal_fault_op;
typedef int (*lm_wal_fault_fn)(void* arg, lm_wal_fault_op op);
/* A fault hook's answer that skips a flush and reports success: a broken
 * build that forgets an fdatasync, for testing the power-loss test. */
#define LM_WAL_FAULT_PRETEND (-1)

/* Observation for tests that simulate power loss: called after each
 * successful flush of a segment file (its first `size` bytes are on stable
 * storage) and of the directory (the entries created so far are). */
typedef enum lm_wal_event {
  LM_WAL_EVENT_FILE_SYNCED = 1,
  LM_WAL_EVENT_DIR_SYNCED = 2
} lm_wal_event;
typedef void (*lm_wal_observe_fn)(void* arg, lm_wal_event event, const char* path,
                                  uint64_t size);

/* Direct I/O (see above). AUTO: O_DIRECT where the file system accepts it
 * and the log writes with pwrite (never through io_uring: see wal.c's
 * setup_io), else buffered writes; OFF: always buffered. With LM_WAL_IO_AUTO
 * a directory that takes O_DIRECT gets pwrite + O_DIRECT, any other io_uring
 * (buffered) when the kernel gives a ring, else pwrite. */
typedef enum lm_wal_direct {
  LM_WAL_DIRECT_AUTO = 0,
  LM_WAL_DIRECT_OFF = 1,
} lm_wal_direct;

/* The record type of padding (reserved: appending it is refused). */
#define LM_WAL_TYPE_PAD 0xFFFFu
/* The record type of a VOID (reserved, written by lm_wal_void only): its
 * payload is the u64 (little-endian) sequence number of an earlier record
 * the engine refused after it was logged. It takes a sequence number of its
 * own like any record. */
#define LM_WAL_TYPE_VOID 0xFFFEu

typedef struct lm_wal_options {
  const char* dir;        /* created when missing (its parent must exist) */
  uint64_t segment_bytes; /* start a new segment past this size; 0 = 16 MiB */
  lm_wal_io io;
  lm_wal_direct direct;
  lm_wal_fault_fn fault; /* NULL outside tests */
  void* fault_arg;
  lm_wal_observe_fn observe; /* NULL outside tests */
  void* observe_arg;
  /* Refuse to open (LAMINAR_ERR_IO, nothing changed) when damage lies before
   * the newest segment, instead of cutting whole records off there. */
  bool strict;
  /* Records 1..covered are covered by the checkpoint recovery restores (0:
   * none): they are never replayed, so damage or absence among them is
   * skipped (reported in lm_wal_report's skip fields), not cut -- the scan
   * goes on at the next whole record, found by its frame and CRC, when
   * every record missing before it is covered -- and the log continues at
   * covered + 1 at least (appends after a skip go to a fresh segment). */
  uint64_t covered;
} lm_wal_options;

/* What lm_wal_open found. */
typedef struct lm_wal_report {
  uint64_t records;          /* valid records kept */
  uint64_t first_seq;        /* first kept record (0: none) */
  uint64_t last_seq;         /* last kept record (0: none) */
  uint64_t segments;         /* segment files kept */
  bool cut;                  /* something was removed */
  uint64_t bytes_cut;        /* bytes removed, dropped segments included */
  uint64_t segments_dropped; /* whole segment files removed */
  char reason[192];          /* why, when cut: file, offset, what was wrong */
  /* Covered records (options.covered) that are damaged or missing: skipped. */
  uint64_t skip_first;   /* the lowest skipped record (0: nothing skipped) */
  uint64_t skip_last;    /* the highest */
  char skip_reason[192]; /* the first skip: file, offset, what was wrong */
} lm_wal_report;

typedef struct lm_wal_record {
  uint64_t seq;
  uint64_t epoch;
  uint16_t type;
  uint32_t len;
  const void* payload; /* borrowed for the duration of the callback */
  /* Replay only: the record is a VOID or a VOID of the log names it (see
   * lm_wal_void). Its sequence number counts; its payload must not be
   * applied. */
  bool voided;
} lm_wal_record;

/* Returned by lm_wal_append, handed to lm_wal_commit: the sequence number and
 * the log's failure generation it was appended in. */
typedef struct lm_wal_ticket {
  uint64_t seq;
  uint32_t gen;
} lm_wal_ticket;

#define LM_WAL_MAX_RECORD (1u << 30)

/* Open (or create) the log in opt->dir, validating and cutting as described.
 * report may be NULL. Errors: LAMINAR_ERR_IO (directory or file operations,
 * io_uring refused with LM_WAL_IO_URING), LAMINAR_ERR_NOMEM. */
laminar_code lm_wal_open(const lm_wal_options* opt, lm_wal** out, lm_wal_report* report,
                         laminar_error* err);

/* Close: commit (sync) what is appended, release everything. Returns the
 * flush's error if it fails; the log is closed either way. NULL allowed. */
laminar_code lm_wal_close(lm_wal* wal, laminar_error* err);

/* Call fn for every written record with seq >= from_seq, in order. Stops at
 * fn's first error and returns it. Not concurrent with appends. Records
 * voided by a VOID found when the log was opened (lm_wal_void) and the
 * VOIDs themselves come with rec->voided set. */
typedef laminar_code (*lm_wal_replay_fn)(void* arg, const lm_wal_record* rec,
                                         laminar_error* err);
laminar_code lm_wal_replay(lm_wal* wal, uint64_t from_seq, lm_wal_replay_fn fn, void* arg,
                           laminar_error* err);
/* lm_wal_replay that reads no segment whose records all come after to_seq
 * (fn may still see some records after to_seq, of a segment it reads): a
 * replay in passes (db/durable.c cuts) reads each part of the log about
 * once, not the rest of the log on every pass. */
laminar_code lm_wal_replay_upto(lm_wal* wal, uint64_t from_seq, uint64_t to_seq,
                                lm_wal_replay_fn fn, void* arg, laminar_error* err);

/* Replay the log in `dir` without opening it for writing (a read_only
 * database): call fn for every record with seq >= from_seq, in order
 * (rec->voided as lm_wal_replay sets it: the log is read twice, VOIDs
 * gathered first), up to
 * the first damage lm_wal_open would cut (a torn, corrupt or out-of-sequence
 * record, a missing segment). Damage or absence among the records up to
 * `covered` (the restored checkpoint's position) -- inside a segment, a
 * segment's covered tail, whole missing segments -- is skipped exactly as
 * lm_wal_open skips it (the same walk over the segments) and reported in
 * rep's skip fields. A cut is described in rep (cut true, reason, bytes_cut
 * and segments_dropped as a cut would remove them) and nothing changes: no
 * file is created, cut or removed. A
 * directory that does not exist is an empty log. Errors: fn's, LAMINAR_ERR_IO
 * when a segment cannot be read, LAMINAR_ERR_NOMEM. */
laminar_code lm_wal_replay_readonly(const char* dir, uint64_t from_seq, uint64_t covered,
                                    lm_wal_replay_fn fn, void* arg, lm_wal_report* rep,
                                    laminar_error* err);

/* Append one record (copied). Thread-safe. Errors: LAMINAR_ERR_IO for a
 * payload over LM_WAL_MAX_RECORD, LAMINAR_ERR_NOMEM. */
laminar_code lm_wal_append(lm_wal* wal, uint16_t type, uint64_t epoch,
                           const void* payload, uint32_t len, lm_wal_ticket* out,
                           laminar_error* err);

/* As lm_wal_append, the payload written in place by fill(arg, dst) (len
 * bytes), under the log's lock: no intermediate copy. */
typedef void (*lm_wal_fill_fn)(void* arg, uint8_t* dst);
laminar_code lm_wal_append_fill(lm_wal* wal, uint16_t type, uint64_t epoch, uint32_t len,
                                lm_wal_fill_fn fill, void* arg, lm_wal_ticket* out,
                                laminar_error* err);

/* A record whose payload is made by the writer (the commit leader that takes
 * it), off the appending thread: measure(arg, &type) gives its payload length
 * (<= the max_len it was appended with) and record type, fill(arg, dst)
 * writes that many bytes, release(arg) lets go of arg -- after the fill, or
 * when the record is discarded (a failed write, a close). Each is called
 * once, measure before fill; measure and fill never under the log's lock,
 * release maybe under it (it must not call into the log). A measure that
 * cannot (out of memory) returns LM_WAL_MEASURE_FAILED: the write fails with
 * ENOMEM, like a failed write (the batch is discarded, its commits fail). */
#define LM_WAL_MEASURE_FAILED UINT32_MAX
typedef struct lm_wal_later_ops {
  uint32_t (*measure)(void* arg, uint16_t* type);
  void (*fill)(void* arg, uint8_t* dst);
  void (*release)(void* arg);
} lm_wal_later_ops;

/* Append a record made later (above): it takes its sequence number and its
 * place now. For an async source's batches (immutable, reference-counted):
 * the pushing thread, which may be the engine's, neither analyses, copies nor
 * checksums them. `arg` must stay valid until release. Thread-safe. Errors:
 * LAMINAR_ERR_IO for a max_len over LM_WAL_MAX_RECORD, LAMINAR_ERR_NOMEM
 * (then release is not called). */
laminar_code lm_wal_append_later(lm_wal* wal, uint64_t epoch, uint32_t max_len,
                                 const lm_wal_later_ops* ops, void* arg,
                                 lm_wal_ticket* out, laminar_error* err);

/* Void record `seq` (< lm_wal_next_seq): append a VOID record naming it,
 * and commit it (written and fdatasync'ed) when `sync`, else leave it to the
 * next commit or the background flush as any async record. A replay after
 * the next open passes `seq` and the VOID with rec->voided set, so the
 * caller skips them (docs/DURABILITY.md "VOID records": a batch refused for
 * memory after it was logged, which its producer may push again). Called by
 * the thread that found the record refused, before the refusal is reported.
 * Thread-safe. Errors: LAMINAR_ERR_NOMEM, LAMINAR_ERR_IO (the commit; as
 * lm_wal_commit). */
laminar_code lm_wal_void(lm_wal* wal, uint64_t seq, bool sync, laminar_error* err);

/* Return once the ticket's record is written (sync = false) or written and on
 * stable storage (sync = true). Thread-safe; concurrent commits share one
 * write and flush. LAMINAR_ERR_IO when the write or flush failed (the record
 * was discarded: append it again) or failed earlier for this record. */
laminar_code lm_wal_commit(lm_wal* wal, lm_wal_ticket ticket, bool sync,
                           laminar_error* err);

/* Delete the segment files that hold only records below `seq` (a checkpoint
 * covers them). The newest segment is always kept. */
laminar_code lm_wal_truncate_before(lm_wal* wal, uint64_t seq, laminar_error* err);

/* Sequence number the next append gets. */
uint64_t lm_wal_next_seq(lm_wal* wal);
/* A ticket for the last record appended (seq 0 when none): committing it
 * commits everything appended so far. */
lm_wal_ticket lm_wal_ticket_last(lm_wal* wal);
/* "io_uring" or "pwrite". */
const char* lm_wal_io_name(const lm_wal* wal);
/* Whether the active segment is written with O_DIRECT (for tests and reports:
 * call it when no commit is running; a commit may roll to a new segment). */
bool lm_wal_is_direct(lm_wal* wal);

#endif /* LM_WAL_H */
