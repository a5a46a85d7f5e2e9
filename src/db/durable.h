/*
 * durable.h -- durability of a database (DESIGN §8, issue 6): settings, the
 * per-source WAL, checkpoints, recovery at open, file sinks' epochs, and the
 * background thread that flushes async WALs and takes interval checkpoints.
 *
 * Off unless data_dir and checkpoint_interval are both set; then nothing of
 * this runs and a push costs what it cost before (zero overhead when off).
 *
 * On disk under data_dir:
 *   catalog.sql            the DDL of every live source, stream and sink, in
 *                          creation order, rewritten atomically after each DDL:
 *                          a header line with its length and CRC-32C, then per
 *                          object a comment line with its identity (incarnation,
 *                          start) before its statement
 *   checkpoints/ckpt-N.bin checkpoint N (store/ckpt.h), the newest `keep` kept
 *   wal/<source>/          the source's WAL segments (store/wal.h), when its
 *                          wal_mode is not none, and `incarnation`: the
 *                          incarnation of the source the log belongs to
 *
 * Identity: every source, stream, late output and sink has an incarnation (a
 * random 64-bit id, made at CREATE and kept in catalog.sql), and every source
 * and stream a fingerprint of its definition (its statement and its inputs').
 * A checkpoint records both with each position and state: state of another
 * incarnation (the name was dropped and created again) is never restored, and
 * the same incarnation with another fingerprint (an altered catalog) is
 * refused (LDB-5002). A stream or sink created after the checkpoint is fed by
 * the replay only the records after its start (its root source's position at
 * CREATE), as it was live.
 *
 * A checkpoint is taken with the graph stopped between two messages (the
 * reactor paused, or no inline run in progress): with one reactor that point is
 * an aligned barrier on every input at once. Operator state is frozen there
 * (the stall: windows are marked copy-on-write, other state is copied), and
 * encoded, written, flushed and published after the graph runs again. Epoch N's sink output is the rows produced between
 * checkpoints N-1 and N: pre-committed in the stall, committed once checkpoint N
 * is durable.
 *
 * Recovery (laminar_open on a data_dir that holds a catalog): run the catalog,
 * restore the newest whole checkpoint, settle the sinks (staged epochs up to it
 * committed, later ones dropped), and replay each source's WAL records after
 * the checkpoint's offsets through the graph. Pushes then continue with the
 * next offsets.
 */
#ifndef LM_DB_DURABLE_H
#define LM_DB_DURABLE_H

#include "laminar.h"
#include "store/wal.h"

#include <stdbool.h>
#include <stdint.h>

typedef enum lm_wal_mode {
  LM_WAL_NONE = 0,
  LM_WAL_ASYNC = 1,
  LM_WAL_SYNC = 2
} lm_wal_mode;

typedef struct lm_durable_config {
  int64_t checkpoint_interval_ms; /* -1: none (durability off) */
  lm_wal_mode wal_mode;
  int32_t keep; /* checkpoints kept */
  lm_wal_io io;
  lm_wal_direct direct; /* wal_direct_io: auto (O_DIRECT where it works) | off */
  bool strict;          /* refuse to open on WAL damage before the tail */
  int64_t flush_ms;     /* async WAL: longest delay before a flush */
  bool read_only;       /* read_only: recover for queries, write nothing */
  char* sink_root;      /* sink_root: file sinks only under it (NULL: anywhere
                                   * outside data_dir); the config's, freed with it */
} lm_durable_config;

void lm_durable_config_init(lm_durable_config* c);

/* Parse "none" | "async" | "sync". */
bool lm_durable_parse_wal_mode(const char* text, lm_wal_mode* out);

typedef struct lm_durable lm_durable;
struct laminar_db;
struct lm_source_def;
struct lm_stream_def;

/* At laminar_open: validate the settings against data_dir (LAMINAR_ERR_CONFIG_CONFLICT),
 * and when durability is on, recover from data_dir and start the background
 * thread. *out stays NULL when durability is off. */
struct lm_config_sink;
laminar_code lm_durable_open(struct laminar_db* db, const char* data_dir,
                             const lm_durable_config* c, struct lm_config_sink* sinks,
                             int32_t nsinks, lm_durable** out, laminar_error* err);

/* laminar_sink_register (caller holds db->lock). */
laminar_code lm_durable_register_sink(struct laminar_db* db, const char* name,
                                      const char* stream,
                                      const laminar_sink_callbacks* cb,
                                      laminar_error* err);

/* At laminar_close, before the catalog is freed: stop the thread. */
void lm_durable_close(lm_durable* d);

/* After a DDL statement changed the catalog: rewrite catalog.sql. */
laminar_code lm_durable_catalog_changed(struct laminar_db* db, laminar_error* err);

/* CREATE SOURCE with durability on: open its WAL (wal_mode from the source's
 * WITH options, else the database's). */
laminar_code lm_durable_source_created(struct laminar_db* db, struct lm_source_def* def,
                                       const char* wal_mode_option, laminar_error* err);

/* A new stream, late output or sink, in the graph (graph paused or not
 * running): *incarnation becomes a new random id, or while the stored catalog
 * runs at open the one it records, as does *start (else left as the caller
 * set it: the root source's position now). No-op without durability. */
void lm_durable_identify(lm_durable* d, const char* name, uint64_t* incarnation,
                         uint64_t* start);

/* A stream over several inputs: while the stored catalog runs at open, the
 * start position of each of its n inputs' root sources that the catalog
 * records (starts[b]; left as the caller set them when it records none or
 * another count). No-op without durability. */
void lm_durable_identify_inputs(lm_durable* d, const char* name, uint64_t* starts,
                                int32_t n);

/* The fingerprint of a definition: `text` (its statement) over `input` (its
 * input's fingerprint, 0 for none). */
uint64_t lm_durable_fingerprint(uint64_t input, const char* text);

/* DROP SOURCE, after the catalog without it is on disk: remove the source's
 * WAL files (a crash before leaves a log no source owns: removed at the next
 * open, or when the name is created again). */
laminar_code lm_durable_source_dropped(struct laminar_db* db, struct lm_source_def* def,
                                       laminar_error* err);

/* A source's checkpoint_interval option: checkpoints are database-wide, so
 * the shortest interval asked for wins. */
void lm_durable_lower_interval(lm_durable* d, int64_t ms);

/* The push path: log the message (batch or watermark) and, in sync mode, wait
 * for its flush; sets msg->seq. `kept` (lm_arrow_import_kept of msg's batch;
 * taken over, NULL for none): an async batch record is made by the WAL's
 * writer (lm_wal_append_later) from the kept array, not here -- for pushes
 * from the thread that also runs the engine (the runtime not started),
 * whose time it would take; the engine's batch, views and all, is then let
 * go as soon as the engine is done with it, as with the log off. A producer
 * thread beside a running reactor makes the record itself: it has the time
 * (it waits for queue room), a third busy thread would not. */
struct lm_msg;
struct lm_arrow_kept;
laminar_code lm_durable_log(struct lm_source_def* def, struct lm_msg* msg,
                            struct lm_arrow_kept* kept, laminar_error* err);

/* Take a checkpoint now (laminar_checkpoint; the interval timer). Caller
 * holds db->lock. */
laminar_code lm_durable_checkpoint(struct laminar_db* db, laminar_error* err);

/* True for a database opened read_only (d may be NULL: false). */
bool lm_durable_read_only(const lm_durable* d);

/* LAMINAR_ERR_READ_ONLY: "the database in '<dir>' is open read-only: it <what>". */
laminar_code lm_durable_refuse_write(const lm_durable* d, const char* what,
                                     laminar_error* err);

/* Whether file sink `sink` may write to `path` (resolved: symlinks and ".."
 * followed): not the data directory or inside it, and under
 * sink_root when that is set. LAMINAR_ERR_CONFIG_VALUE naming the path. */
laminar_code lm_durable_check_sink_path(const lm_durable* d, const char* sink,
                                        const char* path, laminar_error* err);
/* The same check of `real`, the canonical path of the directory the sink on
 * `path` opened (lm_file_sink_real): what it writes through, however the
 * path changed since the check above. */
laminar_code lm_durable_check_sink_real(const lm_durable* d, const char* sink,
                                        const char* path, const char* real,
                                        laminar_error* err);

/* The epoch the next checkpoint will have (file sinks begin there). */
uint64_t lm_durable_next_epoch(const lm_durable* d);

/* True while laminar_open runs the stored catalog: file sinks created then
 * begin their epoch once recovery knows which (not at creation). */
bool lm_durable_recovering(const lm_durable* d);

/* Copy the durability report (see laminar_durability_report) into buf. */
void lm_durable_report(lm_durable* d, char* buf, size_t cap);

/* The longest pause one reactor made for the last checkpoint's barrier
 * (freezing the state aligned there), ns. */
int64_t lm_durable_last_stall_ns(const lm_durable* d);
/* The last checkpoint's request to its barrier's completion (every source,
 * reactor and the merge past it), ns. */
int64_t lm_durable_last_barrier_ns(const lm_durable* d);
/* How long it then took to encode the frozen state with the graph running, ns. */
int64_t lm_durable_last_write_ns(const lm_durable* d);
/* Benchmarks and tests: checkpoints pause the whole graph at one message
 * boundary (every reactor, after the rounds in flight) and take every
 * barrier step there, as they did before in-band barriers (the baseline
 * bench_checkpoint compares with). Set under db->lock. */
void lm_durable_set_pause(lm_durable* d, bool pause);
/* Tests and benchmarks: fn(arg) runs in each checkpoint right after the
 * barrier completed, before the frozen state is encoded (db->lock held; the graph may
 * run, e.g. lm_rt_run_until_idle, and change the frozen windows). */
void lm_durable_set_write_hook(lm_durable* d, void (*fn)(void* arg), void* arg);
/* The last checkpoint that became durable (0: none). */
uint64_t lm_durable_last_epoch(const lm_durable* d);

/* The data directory, canonical (connectors keep their staging under it). */
const char* lm_durable_dir(const lm_durable* d);

#endif /* LM_DB_DURABLE_H */
