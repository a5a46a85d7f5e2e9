/*
 * laminar.h -- the public C API of LaminarDB, an embedded streaming SQL database.
 *
 * This header is the API reference: anything not declared here is not API.
 *
 * Overview
 * --------
 * A database (`laminar_db`) holds sources (named input streams with a schema),
 * streams (continuous queries declared in SQL) and subscriptions (per-consumer
 * queues of result batches). Data crosses the boundary only through the Arrow C
 * Data Interface (`struct ArrowSchema`, `struct ArrowArray`, `struct
 * ArrowArrayStream`), zero-copy where the layout allows.
 *
 *     laminar_db *db;
 *     laminar_open(NULL, &db, NULL);
 *     laminar_execute(db, "CREATE SOURCE t (k VARCHAR, v BIGINT, ts BIGINT, "
 *                         "WATERMARK FOR ts AS ts - INTERVAL '1' SECOND);"
 *                         "CREATE STREAM s AS SELECT k, SUM(v) AS total FROM t "
 *                         "GROUP BY k, tumble(ts, INTERVAL '10' SECOND) "
 *                         "EMIT ON WINDOW CLOSE;", NULL);
 *     laminar_source *src;  laminar_source_open(db, "t", &src, NULL);
 *     laminar_subscription *sub;  laminar_subscribe(db, "s", &sub, NULL);
 *     laminar_source_push(src, &array, &schema, NULL);   // array is moved
 *     laminar_run_until_idle(db, NULL);                  // or laminar_start(db, NULL)
 *     laminar_subscription_next(sub, 0, &out, &out_schema, NULL);
 *
 * Errors
 * ------
 * Every fallible call returns a `laminar_code`. `LAMINAR_OK` is 0; every other
 * value *is* its LDB number, printed `LDB-NNNN`; `code / 1000` gives the area
 * (1 SQL, 2 schema/type, 3 ingest, 4 subscription, 5 storage, 6 config,
 * 9 internal). Detail goes into a caller-owned `laminar_error` passed last (NULL
 * allowed); its content is defined only when the call failed. A failed call
 * leaves the database as it was.
 *
 * Thread-safety
 * -------------
 * Unless a function says otherwise, a handle is used by one thread at a time.
 * Distinct handles (two sources, a source and a subscription) may be used from
 * different threads at the same time; the database's catalog calls
 * (`laminar_execute`, open/close of handles) are serialized internally.
 *
 * Time
 * ----
 * Event time lives in the source's watermark column: BIGINT epoch milliseconds or
 * TIMESTAMP. Watermarks passed through this API are always epoch milliseconds.
 * Windows are [start, end), aligned to the epoch.
 */
#ifndef LAMINAR_H
#define LAMINAR_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(LAMINAR_BUILDING_LIBRARY)
#define LAMINAR_API __attribute__((visibility("default")))
#else
#define LAMINAR_API
#endif

/* Version. The one source of truth is this block; CMake reads it for
 * project(VERSION). LAMINAR_VERSION_NUMBER is major*1000000 + minor*1000 + patch. */
#define LAMINAR_VERSION_MAJOR 0
#define LAMINAR_VERSION_MINOR 1
#define LAMINAR_VERSION_PATCH 0
#define LAMINAR_VERSION "0.1.0"
#define LAMINAR_VERSION_NUMBER 1000

/* ------------------------------------------------------------------------------
 * Arrow C Data Interface (verbatim layout from the Arrow specification)
 * ---------------------------------------------------------------------------- */
#ifndef ARROW_C_DATA_INTERFACE
#define ARROW_C_DATA_INTERFACE

#define ARROW_FLAG_DICTIONARY_ORDERED 1
#define ARROW_FLAG_NULLABLE 2
#define ARROW_FLAG_MAP_KEYS_SORTED 4

struct ArrowSchema {
  const char* format;
  const char* name;
  const char* metadata;
  int64_t flags;
  int64_t n_children;
  struct ArrowSchema** children;
  struct ArrowSchema* dictionary;
  void (*release)(struct ArrowSchema*);
  void* private_data;
};

struct ArrowArray {
  int64_t length;
  int64_t null_count;
  int64_t offset;
  int64_t n_buffers;
  int64_t n_children;
  const void** buffers;
  struct ArrowArray** children;
  struct ArrowArray* dictionary;
  void (*release)(struct ArrowArray*);
  void* private_data;
};

#endif /* ARROW_C_DATA_INTERFACE */

#ifndef ARROW_C_STREAM_INTERFACE
#define ARROW_C_STREAM_INTERFACE

struct ArrowArrayStream {
  int (*get_schema)(struct ArrowArrayStream*, struct ArrowSchema* out);
  int (*get_next)(struct ArrowArrayStream*, struct ArrowArray* out);
  const char* (*get_last_error)(struct ArrowArrayStream*);
  void (*release)(struct ArrowArrayStream*);
  void* private_data;
};

#endif /* ARROW_C_STREAM_INTERFACE */

/* ------------------------------------------------------------------------------
 * Status codes. Values are stable and append-only; the value is the LDB number.
 * ---------------------------------------------------------------------------- */
typedef enum laminar_code {
  LAMINAR_OK = 0,

  /* 1xxx SQL */
  LAMINAR_ERR_SQL_SYNTAX = 1001,             /* the statement does not parse */
  LAMINAR_ERR_SQL_UNKNOWN_OBJECT = 1002,     /* no source or stream of that name */
  LAMINAR_ERR_SQL_UNKNOWN_COLUMN = 1003,     /* no column of that name in scope */
  LAMINAR_ERR_SQL_DUPLICATE_OBJECT = 1004,   /* an object of that name exists */
  LAMINAR_ERR_SQL_UNSUPPORTED = 1005,        /* valid SQL this version cannot run */
  LAMINAR_ERR_SQL_GROUPING = 1006,           /* a column neither grouped nor aggregated,
                                             or an aggregate where none may be */
  LAMINAR_ERR_SQL_DEPENDENCY = 1007,         /* DROP of an object others read from */
  LAMINAR_ERR_SQL_LIMIT = 1008,              /* statement too large or nested too deep */
  LAMINAR_ERR_SQL_JOIN_CONDITION = 1009,     /* a join's ON / MATCH_CONDITION is not one
                                                it can run (no ordering condition, an
                                                unsupported comparison; FOR SYSTEM_TIME
                                                AS OF without a time on either side) */
  LAMINAR_ERR_SQL_UNBOUNDED_JOIN = 1010,     /* a join of two unbounded inputs with no
                                                time bound on both ends (its state would
                                                grow without end) */
  LAMINAR_ERR_SQL_TABLE_KEY = 1020,          /* a DELETE whose WHERE does not fix the
                                                whole primary key of its table */
  LAMINAR_ERR_SQL_LOOKUP_KEY = 1021,         /* a lookup or temporal join's ON is not
                                                one equality per primary-key column of
                                                its table */
  LAMINAR_ERR_SQL_NOT_MATERIALIZED = 1030,   /* SELECT from a stream or source: only
                                             materialized views keep rows to read */
  LAMINAR_ERR_SQL_UNDEFINED_VARIABLE = 1031, /* ${NAME} with no variable NAME set */
  LAMINAR_ERR_SQL_UNKNOWN_FUNCTION = 1101,   /* no scalar function of that name */
  LAMINAR_ERR_SQL_FUNCTION_ARGS = 1102,      /* wrong number of arguments, or an argument
                                             that must be a valid constant is not */

  /* 2xxx schema and types */
  LAMINAR_ERR_TYPE_MISMATCH = 2001,  /* an expression's operand types do not fit */
  LAMINAR_ERR_UNKNOWN_TYPE = 2002,   /* a type name SQL does not know */
  LAMINAR_ERR_SCHEMA_INVALID = 2003, /* a declared schema is unusable */

  /* 3xxx ingest */
  LAMINAR_ERR_ARROW_INVALID = 3001,   /* the pushed array breaks the Arrow spec */
  LAMINAR_ERR_ARROW_RELEASED = 3002,  /* the pushed array or schema is released */
  LAMINAR_ERR_SCHEMA_MISMATCH = 3003, /* pushed columns do not match the source */
  LAMINAR_ERR_COLUMN_TYPE = 3004,     /* a pushed column has the wrong type */
  LAMINAR_ERR_NULL_VIOLATION = 3005,  /* NULL in a NOT NULL column */
  LAMINAR_ERR_QUEUE_FULL = 3006,      /* the source queue is full and cannot drain */
  LAMINAR_ERR_SOURCE_CLOSED = 3007,   /* the source was dropped */
  LAMINAR_ERR_MEMORY_LIMIT = 3008,    /* a batch would take a stream's keyed state
                                             past max_state_bytes: not applied */
  LAMINAR_ERR_PUSH_TIMEOUT = 3009,    /* no room in the source queue within the
                                             timeout of a *_timeout push; nothing
                                             ingested */
  LAMINAR_ERR_FUNCTION_FAILED = 3010, /* a user-defined function's callback
                                             reported an error: the batch was not
                                             applied */
  LAMINAR_ERR_FUNCTION_RESULT = 3011, /* a user-defined function's result is not
                                             a valid array of its return type and
                                             the rows' count: the batch was not
                                             applied */

  /* 4xxx subscriptions */
  LAMINAR_ERR_SUBSCRIPTION_CLOSED = 4001, /* the stream was dropped or the db closed */

  /* 5xxx storage */
  LAMINAR_ERR_IO = 5001,        /* a file operation failed */
  LAMINAR_ERR_RECOVERY = 5002,  /* stored state does not recover (damage,
                                             catalog mismatch, strict WAL refusal) */
  LAMINAR_ERR_LOCKED = 5003,    /* the data directory is in use by another
                                             database (this process or another) */
  LAMINAR_ERR_READ_ONLY = 5004, /* a write (DDL, push, checkpoint, sink) on
                                             a database opened read_only */
  LAMINAR_ERR_CONNECTOR = 5005, /* an external system of a connector (a Kafka
                                   broker) failed, refused or did not answer
                                   within the timeout */

  /* 6xxx config */
  LAMINAR_ERR_CONFIG_KEY = 6001,      /* unknown configuration key */
  LAMINAR_ERR_CONFIG_VALUE = 6002,    /* invalid value for a known key */
  LAMINAR_ERR_CONFIG_CONFLICT = 6003, /* settings that do not go together */

  /* 9xxx internal and misuse */
  LAMINAR_ERR_NOMEM = 9001,   /* an allocation failed */
  LAMINAR_ERR_MISUSE = 9002,  /* NULL, closed or foreign handle; bad argument */
  LAMINAR_ERR_STATE = 9003,   /* call not allowed in the current state */
  LAMINAR_ERR_INTERNAL = 9999 /* an invariant failed: a bug, please report */
} laminar_code;

/* Detail of a failed call. Caller-owned (stack is fine); filled only on failure.
 * `line`/`column` are 1-based positions in the SQL text (0 when not SQL);
 * `object` and `column_name` name the source/stream and column when known
 * (empty strings otherwise). */
typedef struct laminar_error {
  laminar_code code;
  int32_t line;
  int32_t column;
  char object[128];
  char column_name[128];
  char message[1024]; /* starts with "LDB-NNNN: " */
} laminar_error;

/* Static English text for a code ("syntax error", ...); never NULL. Any thread. */
LAMINAR_API const char* laminar_errstr(laminar_code code);

/* The library's version string ("0.1.0") and number (1000); they equal the macros
 * of the header the library was built with. Any thread. */
LAMINAR_API const char* laminar_version(void);
LAMINAR_API int32_t laminar_version_number(void);

/* ------------------------------------------------------------------------------
 * Configuration
 * ---------------------------------------------------------------------------- */

/* Where an option is accepted; laminar_option_get() gives a bit set of them.
 *   LAMINAR_SCOPE_DB            laminar_config_set()
 *   LAMINAR_SCOPE_SOURCE        CREATE SOURCE ... WITH (...)
 *   LAMINAR_SCOPE_STREAM        CREATE STREAM / MATERIALIZED VIEW ... WITH (...)
 *   LAMINAR_SCOPE_SUBSCRIPTION  laminar_subscription_open() (and the text of
 *                               laminar_subscribe_with())
 *   LAMINAR_SCOPE_SINK          CREATE SINK ... INTO FILE (...)
 * Everywhere an unknown key is LAMINAR_ERR_CONFIG_KEY and a value of the wrong
 * type or range is LAMINAR_ERR_CONFIG_VALUE; the message names the key and the
 * scope, and for SQL the object and the value's line:column (also in
 * laminar_error's line, column and object). */
typedef enum laminar_option_scope {
  LAMINAR_SCOPE_DB = 1,
  LAMINAR_SCOPE_SOURCE = 2,
  LAMINAR_SCOPE_STREAM = 4,
  LAMINAR_SCOPE_SUBSCRIPTION = 8,
  LAMINAR_SCOPE_SINK = 16
} laminar_option_scope;

/* The number of rows of the option table (see laminar_option_get()).
 * Thread-safety: any thread. */
LAMINAR_API int32_t laminar_option_count(void);

/* Row `index` (0 .. laminar_option_count() - 1) of the option table: every
 * option the engine accepts, in every scope. One key may have several rows
 * (the database's default and a source's override differ in default and doc).
 * out_key:     the key as written in config and WITH ("var.NAME": any key
 *              starting with "var.")
 * out_scopes:  a bit set of laminar_option_scope
 * out_type:    what the value is ("boolean", "block | drop", "byte count ...")
 * out_default: the default as text: a value ("65536", "park"), "" (not set),
 *              or "config KEY" (the database's setting of KEY)
 * out_doc:     one line of description
 * Any out-parameter may be NULL.
 * Ownership: the strings are static: never free them.
 * Returns: LAMINAR_OK; LAMINAR_ERR_MISUSE when index is out of range.
 * Thread-safety: any thread. */
LAMINAR_API laminar_code laminar_option_get(int32_t index, const char** out_key,
                                            int32_t* out_scopes, const char** out_type,
                                            const char** out_default,
                                            const char** out_doc);

/* A set of key/value options for laminar_open(). Destroy with
 * laminar_config_destroy(). */
typedef struct laminar_config laminar_config;

/* Create an empty config (all defaults).
 * Ownership: *out is the caller's; free with laminar_config_destroy().
 * Returns: LAMINAR_OK; LAMINAR_ERR_NOMEM (then *out is NULL).
 * Thread-safety: any thread. */
LAMINAR_API laminar_code laminar_config_create(laminar_config** out);

/* Set one option from text. Keys (the LAMINAR_SCOPE_DB rows of the option
 * table, laminar_option_get(), which also gives each one's type and default):
 *   buffer_size  slots in each source and subscriber queue; a power of two in
 *                [2, 2^24]; default 65536.
 *   data_dir     a directory for durable state; created if missing. Nothing is
 *                written there unless checkpoint_interval is set too. A durable
 *                database owns its directory until laminar_close(): a second
 *                open of it, in this process or another, fails with
 *                LAMINAR_ERR_LOCKED (see laminar_open()).
 *   read_only    true | false (default): open data_dir for queries only. The
 *                stored catalog, newest whole checkpoint and WAL records after
 *                it are recovered in memory (materialized views, SHOW,
 *                DESCRIBE, EXPLAIN work), and nothing in data_dir is created,
 *                changed or removed: no WAL is opened for writing, no
 *                checkpoint is taken, damage is reported, not cut, and file
 *                sinks publish nothing. DDL (other than re-running an
 *                identical statement), laminar_source_open(),
 *                laminar_checkpoint() and laminar_sink_register() fail with
 *                LAMINAR_ERR_READ_ONLY. Needs data_dir (it must exist);
 *                checkpoint_interval and wal_mode are accepted and ignored.
 *                Read-only opens share the directory with each other, never
 *                with a writer.
 *   sink_root    a directory (must exist at laminar_open): file sinks
 *                (CREATE SINK ... INTO FILE) may only write under it; a path
 *                that resolves (symlinks and '..' followed) elsewhere is
 *                LAMINAR_ERR_CONFIG_VALUE. Without it a file sink may write
 *                anywhere but inside data_dir.
 *   checkpoint_interval  'none' (default: durability off) or a duration such as
 *                '10 seconds', '500 ms', '2 min'; needs data_dir. Turns on
 *                checkpoints, the persisted catalog and recovery at open.
 *   checkpoint_keep      checkpoints kept on disk, 1..1000; default 3.
 *   wal_mode     none (default) | async | sync: each source logs its pushes
 *                (sync: a push returns after its record is on stable storage,
 *                concurrent pushes sharing one flush; async: flushed within
 *                wal_flush_interval); needs checkpoint_interval. A source's
 *                WITH (wal_mode = '...') overrides it.
 *   wal_flush_interval   async mode's longest flush delay; default '10 ms'.
 *   wal_io       auto (default: io_uring when available) | io_uring | pwrite.
 *   wal_direct_io auto (default: O_DIRECT for WAL segments where the file
 *                system takes it, written with pwrite) | off.
 *   wal_recovery cut (default: damage is cut at the last good record and
 *                reported) | strict (laminar_open fails on damage before the
 *                tail of a WAL, LAMINAR_ERR_RECOVERY).
 *   backpressure what a push does when its source's queue is full (default
 *                for every source; CREATE SOURCE ... WITH (backpressure = '...')
 *                overrides it): block (default: wait for room while the
 *                runtime runs; LAMINAR_ERR_QUEUE_FULL when it does not) |
 *                drop_oldest (remove the oldest unread message to make room,
 *                counted in laminar_metrics as dropped_batches/dropped_rows; an
 *                explicit watermark removed so still takes effect; not with a
 *                WAL) | reject (fail the push with LAMINAR_ERR_QUEUE_FULL,
 *                counted as rejected_batches).
 *   wait_strategy how a thread waits on an empty or full queue (default for
 *                sources and subscriptions; WITH (wait_strategy = '...') and
 *                laminar_subscription_open() override it): park (default: a
 *                short poll, then sleep on a futex/condvar, no CPU while idle)
 *                | spin (busy-poll: lowest latency, one core busy) |
 *                spin_yield(n) (n busy polls, then sched_yield between polls;
 *                spin_yield alone means n = 100). A source's strategy applies to
 *                its blocked producers and, for the reactor waiting for input,
 *                the most eager strategy of all sources applies.
 *   slow_subscriber  block (default: a subscriber whose queue is full stops
 *                the reactor from taking input until it reads: nothing is lost,
 *                the pipeline runs at the slowest reader's pace) | drop (a
 *                result batch that does not fit a full subscriber queue is
 *                dropped for that subscriber only, counted in laminar_metrics
 *                as its dropped_batches/dropped_rows). Default for
 *                subscriptions; laminar_subscription_open() overrides it.
 *   cores        number of reactors, 1 (default) to 64 (thread-per-core). With
 *                N > 1 every keyed stream -- a windowed GROUP BY over plain
 *                columns of the source it reads, not a materialized view --
 *                runs as N key-hash partitions, one per reactor; its output
 *                for one input batch comes as one batch per partition that
 *                emitted, in partition order (concatenated into one when a
 *                blocking subscriber has room for fewer than N batches per
 *                input batch), so each key's rows keep their order (rows of
 *                different keys may come in another order, and split across
 *                more batches, than with one core). Other streams
 *                run on reactor 0. Durable databases checkpoint every
 *                partition; a reopen may use another `cores` (the state is
 *                split by key hash again).
 *   core_affinity true | false (default): pin reactor i to CPU i modulo the
 *                online CPUs (and, built with hwloc on a multi-node machine,
 *                bind its memory to that CPU's NUMA node).
 *   var.NAME     the value of substitution variable NAME: laminar_execute()
 *                and laminar_query() replace every ${NAME} in their SQL text
 *                by it, verbatim, before parsing (not inside comments; $${
 *                writes a literal ${). NAME is case-sensitive: a letter or
 *                '_', then letters, digits, '_' or '.'. The value is pasted in
 *                unescaped: never put untrusted input there (SQL injection).
 * Ownership: key and value are copied.
 * Returns: LAMINAR_OK; LAMINAR_ERR_CONFIG_KEY for an unknown key (or an
 *   invalid variable name); LAMINAR_ERR_CONFIG_VALUE for an invalid value (the
 *   message names the key and the scope: "config option 'cores': expected
 *   ..."); LAMINAR_ERR_MISUSE; LAMINAR_ERR_NOMEM; on failure the config is
 *   unchanged.
 * Thread-safety: one thread at a time per config. */
LAMINAR_API laminar_code laminar_config_set(laminar_config* config, const char* key,
                                            const char* value, laminar_error* err);

/* Destroy a config; NULL is a no-op. */
LAMINAR_API void laminar_config_destroy(laminar_config* config);

/* ------------------------------------------------------------------------------
 * Database
 * ---------------------------------------------------------------------------- */

/* An open database. Close with laminar_close(). */
typedef struct laminar_db laminar_db;

/* Open a database.
 * config: NULL for defaults; borrowed and only read (its settings are copied;
 *   the same config may open other databases), may be destroyed after the
 *   call. Its connector sinks (laminar_config_add_sink) are handed to the
 *   database that attaches them, which records the hand-over atomically in
 *   the sink's own record: a second open that would attach them fails with
 *   LAMINAR_ERR_STATE.
 * With data_dir and checkpoint_interval set, opening a directory that holds a
 * database recovers it: the catalog (sources, streams, sinks) is re-created
 * from data_dir/catalog.sql (running the same DDL again afterwards is
 * harmless; a different definition under a used name is
 * LAMINAR_ERR_SQL_DUPLICATE_OBJECT), the newest whole checkpoint is restored
 * (open windows, watermarks, offsets), file sinks publish the epochs that
 * checkpoint covers and drop later ones, and each source's WAL records after
 * the checkpoint are run through the graph again. Sources continue with the
 * next offsets (laminar_source_offset()). WAL damage among records the
 * checkpoint covers is skipped and reported; a damaged or missing newest
 * checkpoint falls back to the previous one, replaying the WAL up to the
 * lost one's positions without publishing its sinks' epochs again
 * (docs/DURABILITY.md, "Damage").
 * One owner per data directory: a durable open takes an exclusive lock on
 * data_dir (flock(2) on the directory, held until laminar_close(), dropped by
 * the kernel if the process dies) and writes its pid to data_dir/owner.pid; a
 * read_only open takes a shared lock. A conflicting open -- a second writer,
 * a writer while read-only opens hold it, a read-only open while a writer
 * holds it; from this process or another -- fails at once with
 * LAMINAR_ERR_LOCKED naming the directory and the holder's pid where known.
 * Ownership: *out is the caller's; close with laminar_close().
 * Returns: LAMINAR_OK; LAMINAR_ERR_CONFIG_VALUE (sink_root that does not
 *   resolve); LAMINAR_ERR_CONFIG_CONFLICT (wal_mode without
 *   checkpoint_interval, checkpoint_interval or read_only without data_dir,
 *   config sinks with read_only); LAMINAR_ERR_IO if data_dir cannot be
 *   created or read (read_only: does not exist); LAMINAR_ERR_LOCKED (above);
 *   LAMINAR_ERR_RECOVERY when stored state does not recover; LAMINAR_ERR_NOMEM.
 *   On failure *out is NULL and nothing in data_dir was changed except cut
 *   WAL tails.
 * Thread-safety: any thread. */
LAMINAR_API laminar_code laminar_open(const laminar_config* config, laminar_db** out,
                                      laminar_error* err);

/* Close a database: stops the reactor if running, stops the checkpoint
 * thread, closes every source and subscription handle still open (their later
 * use returns LAMINAR_ERR_MISUSE only if the memory is still valid: do not use
 * them after this call), releases the connector sinks it attached, unlocks
 * data_dir and frees the database.
 * Ownership: `db` is freed whatever the code (except LAMINAR_ERR_MISUSE).
 * Returns: LAMINAR_OK (also for NULL: a no-op); LAMINAR_ERR_MISUSE for a
 *   handle that is not an open database (nothing is freed); otherwise the
 *   error that stopped the reactor, as laminar_stop() reports it (e.g.
 *   LAMINAR_ERR_IO from a sink's write, LAMINAR_ERR_NOMEM), with its detail in
 *   `err` (NULL allowed) -- the database is closed and freed all the same.
 * Thread-safety: no other call on this database or its handles may run. */
LAMINAR_API laminar_code laminar_close_v2(laminar_db* db, laminar_error* err);

/* Alias of laminar_close_v2(db, NULL): the same codes, without the detail.
 * Kept for existing callers. */
LAMINAR_API laminar_code laminar_close(laminar_db* db);

/* Run one or more ';'-separated SQL statements (DDL: CREATE SOURCE, CREATE
 * STREAM, CREATE MATERIALIZED VIEW, CREATE SINK, DROP; SELECT, EXPLAIN, SHOW
 * and DESCRIBE are checked and their rows discarded here: use laminar_query()
 * for them). ${NAME} variables (config key var.NAME) are substituted first.
 * The whole text is parsed first: a syntax error anywhere applies nothing.
 * Then the statements run in order; the first failing one stops the call and
 * its error names its line:column (in `sql` as given, before substitution);
 * statements before it stay applied.
 * Returns: LAMINAR_OK; 1xxx for SQL errors (LAMINAR_ERR_SQL_UNDEFINED_VARIABLE
 *   for a ${NAME} with no variable, nothing run); 2xxx for type errors;
 *   LAMINAR_ERR_READ_ONLY for DDL on a database opened read_only (other than
 *   an identical re-run of a stored statement).
 * Thread-safety: any thread (serialized with other catalog calls). */
LAMINAR_API laminar_code laminar_execute(laminar_db* db, const char* sql,
                                         laminar_error* err);

/* Run one SQL statement that returns rows and hand them back as an Arrow
 * stream (one batch): SELECT ... FROM a materialized view [WHERE] [ORDER BY
 * ... [NULLS FIRST|LAST]] [LIMIT n] [OFFSET m], EXPLAIN (a stream or view name,
 * CREATE STREAM / MATERIALIZED VIEW ..., or such a SELECT), SHOW SOURCES /
 * STREAMS / VIEWS / SINKS, DESCRIBE name. A SELECT reads a consistent snapshot
 * of the view -- its rows between two whole input batches -- also while the
 * runtime runs (the reactor pauses only while the rows are copied).
 * ${NAME} variables are substituted as in laminar_execute().
 * Ownership: *out is the caller's on LAMINAR_OK; release it with out->release.
 * Returns: as laminar_execute(); LAMINAR_ERR_SQL_UNSUPPORTED for a statement
 *   that returns no rows; LAMINAR_ERR_SQL_NOT_MATERIALIZED for a SELECT from a
 *   stream or source (they keep no rows: create a materialized view).
 * Thread-safety: any thread. */
LAMINAR_API laminar_code laminar_query(laminar_db* db, const char* sql,
                                       struct ArrowArrayStream* out, laminar_error* err);

/* Report the Arrow schema of a source's, stream's or sink's rows (a sink: its
 * input's). A materialized view's rows as subscribers get them: its columns
 * and `_weight` (BIGINT: +1 inserted, -1 retracted; DESCRIBE lists the view's
 * own columns).
 * Ownership: *out is the caller's on LAMINAR_OK; release with out->release.
 * Returns: LAMINAR_OK; LAMINAR_ERR_SQL_UNKNOWN_OBJECT.
 * Thread-safety: any thread. */
LAMINAR_API laminar_code laminar_schema(laminar_db* db, const char* name,
                                        struct ArrowSchema* out, laminar_error* err);

/* Start the runtime: one reactor thread drains the sources, runs every stream and
 * fans results out to subscribers. Pushes after this call are processed
 * asynchronously.
 * Returns: LAMINAR_OK; LAMINAR_ERR_STATE if already started.
 * Thread-safety: any thread. */
LAMINAR_API laminar_code laminar_start(laminar_db* db, laminar_error* err);

/* Stop the runtime: the reactor finishes the batches already queued, delivers
 * their results, and exits; laminar_stop() returns after that. A full blocking
 * subscriber is waited for while it is read; one that gets no room for 1 s
 * (nobody reads it) leaves the rest of the input queued for a later start or
 * laminar_run_until_idle(). Calling it on a
 * stopped database is a no-op returning LAMINAR_OK.
 * Thread-safety: any thread. */
LAMINAR_API laminar_code laminar_stop(laminar_db* db, laminar_error* err);

/* Drive the same operator graph inline in the caller's thread until no queued
 * input remains (or until a subscriber's queue is full, which leaves the rest of
 * the input queued for the next call). Deterministic: the same pushes give the
 * same output as the reactor.
 * Returns: LAMINAR_OK; LAMINAR_ERR_STATE while laminar_start() runs.
 * Thread-safety: any thread, not while the runtime is started. */
LAMINAR_API laminar_code laminar_run_until_idle(laminar_db* db, laminar_error* err);

/* Take a checkpoint now (the interval timer takes them too): every source's
 * WAL is flushed, a barrier is taken in order in every source queue (by the
 * reactor, or by this call between inline runs) and each reactor snapshots
 * its share of the operators' state when the barrier reaches it, without
 * waiting for the others; the call returns once the state is written
 * to data_dir/checkpoints atomically; once it is durable, file sinks publish
 * the epoch's output and WAL segments it covers are deleted; old checkpoints
 * beyond checkpoint_keep are removed.
 * Returns: LAMINAR_OK; LAMINAR_ERR_STATE when checkpoints are off;
 *   LAMINAR_ERR_READ_ONLY on a database opened read_only; LAMINAR_ERR_IO (the
 *   previous checkpoint stays the one recovery uses, and
 *   the epoch's output is published by the next checkpoint that succeeds).
 * Thread-safety: any thread. */
LAMINAR_API laminar_code laminar_checkpoint(laminar_db* db, laminar_error* err);

/* What durability had to report, one line each: WAL tails cut at recovery (the
 * source, records kept, bytes removed, why), damaged checkpoints skipped,
 * interval checkpoints that failed on the background thread. Empty when
 * there is nothing (or durability is off). Copied into buf (cap bytes,
 * NUL-terminated, truncated if longer).
 * Returns: LAMINAR_OK; LAMINAR_ERR_MISUSE.
 * Thread-safety: any thread. */
LAMINAR_API laminar_code laminar_durability_report(laminar_db* db, char* buf, size_t cap,
                                                   laminar_error* err);

/* An exactly-once sink written by the application (a connector): the engine
 * drives it through the same two-phase epoch protocol as its file sinks.
 * Epoch e holds the rows a stream produced between checkpoints e-1 and e.
 *   begin_epoch(e)   rows of epoch e follow
 *   write(array, schema)  a batch of the stream's rows (a struct array); both
 *                    structs are moved to the callee, which releases them,
 *                    whatever it returns
 *   pre_commit(e)    make epoch e durable as staged data (after epoch e's
 *                    last write; the checkpoint waits for it before it
 *                    publishes anything); the next epoch may begin after it
 *   commit(e)        publish epoch e: its checkpoint is durable. May be called
 *                    again for a published epoch (a no-op for the callee)
 *   rollback(e)      drop epoch e (the sink goes away with e open)
 *   recover(c)       at registration on a recovered database: publish staged
 *                    epochs <= c, drop later ones (their rows come again)
 *   release(user)    the sink is gone: free `user`
 * Each returns 0, or non-zero to fail the step (the call that drove it returns
 * LAMINAR_ERR_IO naming the sink). Any member may be NULL (a no-op). write,
 * and the pre_commit / begin_epoch of a checkpoint, run on the sink's own
 * thread, in order, behind a bounded queue (the graph never waits on a
 * callback; a full queue holds the graph's input, as a full subscriber queue
 * does); commit, recover and rollback run on the thread taking the checkpoint
 * or closing, after what was queued before them. Never two at once. */
typedef struct laminar_sink_callbacks {
  void* user;
  int (*begin_epoch)(void* user, uint64_t epoch);
  int (*write)(void* user, struct ArrowArray* array, struct ArrowSchema* schema);
  int (*pre_commit)(void* user, uint64_t epoch);
  int (*commit)(void* user, uint64_t epoch);
  int (*rollback)(void* user, uint64_t epoch);
  int (*recover)(void* user, uint64_t checkpointed_epoch);
  void (*release)(void* user);
} laminar_sink_callbacks;

/* Attach a connector sink `name` to `stream`'s output (durable databases only:
 * epochs end at checkpoints). It is not part of the stored catalog: after a
 * restart, register it again — in the config (laminar_config_add_sink) so it
 * is attached before the WAL replay regenerates its epoch, or with this call
 * (then recover() is called with the restored checkpoint's epoch). DROP SINK
 * name detaches it.
 * Ownership: callbacks are copied; release(user) is called when it goes.
 * Returns: LAMINAR_OK; LAMINAR_ERR_SQL_UNKNOWN_OBJECT (no such stream);
 *   LAMINAR_ERR_SQL_DUPLICATE_OBJECT; LAMINAR_ERR_CONFIG_CONFLICT (durability
 *   off); LAMINAR_ERR_READ_ONLY (opened read_only); LAMINAR_ERR_IO (recover
 *   or begin_epoch failed; not attached, and
 *   release is not called).
 * Thread-safety: any thread. */
LAMINAR_API laminar_code laminar_sink_register(laminar_db* db, const char* name,
                                               const char* stream,
                                               const laminar_sink_callbacks* callbacks,
                                               laminar_error* err);

/* Register a connector sink to attach when laminar_open() recovers the
 * database: after the stored catalog and checkpoint, before the WAL replay
 * (so the replayed rows reach it). The stream must exist in the stored
 * catalog (else laminar_open fails with LAMINAR_ERR_SQL_UNKNOWN_OBJECT).
 * Ownership: callbacks are copied. release(user) is called once: when the
 * sink goes, by the database that attached it, or by laminar_config_destroy if
 * none did. A config's sinks attach to one database (a second open with the
 * same config fails with LAMINAR_ERR_STATE).
 * Returns: LAMINAR_OK; LAMINAR_ERR_MISUSE; LAMINAR_ERR_NOMEM.
 * Thread-safety: one thread at a time per config. */
LAMINAR_API laminar_code laminar_config_add_sink(laminar_config* config, const char* name,
                                                 const char* stream,
                                                 const laminar_sink_callbacks* callbacks,
                                                 laminar_error* err);

/* The engine's counters now, as rows (kind VARCHAR, name VARCHAR, metric
 * VARCHAR, value BIGINT):
 *   source:  pushed_batches, pushed_rows, queue_depth, queue_capacity,
 *            queue_bytes (bytes of the batches queued), max_queue_bytes,
 *            dropped_batches, dropped_rows (drop_oldest), rejected_batches
 *            (reject), producers (open handles), watermark_ms; with a WAL also
 *            wal_next_offset, processed_offset
 *   stream:  rows_in, rows_out, late_rows, state_groups (open window groups;
 *            window functions (OVER): partitions),
 *            state_bytes (the size its operator state would take in a
 *            checkpoint: computed on demand by encoding it, O(state)),
 *            accounted_state_bytes (what max_state_bytes counts; 0 while no
 *            bound applies), max_state_bytes (its own, 0: none),
 *            watermark_ms, subscribers, partitions (1, or `cores` for a keyed
 *            stream); all summed over its partitions; a join stream also
 *            join_left_rows and join_right_rows (ASOF: left rows waiting for
 *            their match, right rows kept for future matches; interval: each
 *            side's rows held while the other side's watermark allows a
 *            match) and join_left_bytes, join_right_bytes (their bytes); window
 *            functions also held_rows (rows waiting for the watermark or for
 *            LEAD's rows)
 *   subscription (name: its stream): delivered_batches, queue_depth (its
 *            lag, in batches), queue_bytes (bytes of its queued batches),
 *            max_queue_bytes, dropped_batches, dropped_rows (slow_subscriber
 *            drop)
 *   reactor (names "0" .. "N-1", config `cores`): busy_ns (time in rounds
 *            that took messages; reactor 0's includes waiting for the others
 *            in a round), running_ns (since laminar_start; 0 when stopped),
 *            busy_pct, rounds and rows (rounds of keyed-stream partitions it
 *            ran, and the rows routed to its partitions), cpu (pinned CPU, -1
 *            if not pinned); reactor 0 also messages (taken through the graph,
 *            by the reactor or laminar_run_until_idle)
 *   database (durable): last_checkpoint, last_checkpoint_stall_ns (the
 *            longest pause of one reactor for its barrier),
 *            last_checkpoint_barrier_ns (request to every reactor past it)
 * The graph is paused for the moment it takes to read them.
 * Ownership: *out is the caller's; release it.
 * Returns: LAMINAR_OK; LAMINAR_ERR_MISUSE; LAMINAR_ERR_NOMEM.
 * Thread-safety: any thread. */
LAMINAR_API laminar_code laminar_metrics(laminar_db* db, struct ArrowArrayStream* out,
                                         laminar_error* err);

/* What each part of the pipeline is doing now, as rows (kind VARCHAR, name
 * VARCHAR, state VARCHAR, input VARCHAR, watermark_ms BIGINT, queue_depth
 * BIGINT, queue_capacity BIGINT, partitions BIGINT); NULL where a column does
 * not apply:
 *   runtime (name ""): state stopped (nothing runs the graph but
 *            laminar_run_until_idle) | idle | active (messages queued, the
 *            reactors take them) | blocked (messages queued, a blocking
 *            subscriber without room holds the input) | failed (an error on
 *            the reactor, reported by laminar_stop); queue_depth: messages
 *            queued over all sources; partitions: reactors (config `cores`)
 *   source:  state idle (nothing queued) | active | waiting (queued, runtime
 *            stopped) | blocked | full (queue at capacity: producers wait, drop
 *            or are refused by its backpressure policy); watermark_ms (NULL
 *            before the first), queue_depth / queue_capacity of its queue
 *   stream | materialized view: state as its root source's, or blocked when
 *            one of its own blocking subscribers lacks room; input (the source
 *            or stream it reads), watermark_ms, queue_depth / queue_capacity of
 *            its fullest subscriber (NULL without one), partitions
 *   subscription (name: its stream): state caught_up | lagging (batches
 *            queued) | blocking (too little room: the reactor waits for it) |
 *            full | full_dropping (slow_subscriber drop: batches are dropped);
 *            queue_depth / queue_capacity of its queue
 *   reactor (names "0" .. "N-1"): state running | stopped
 * The graph is paused for the moment it takes to read them.
 * Ownership: *out is the caller's; release it.
 * Returns: LAMINAR_OK; LAMINAR_ERR_MISUSE; LAMINAR_ERR_NOMEM.
 * Thread-safety: any thread. */
LAMINAR_API laminar_code laminar_pipeline_state(laminar_db* db,
                                                struct ArrowArrayStream* out,
                                                laminar_error* err);

/* Rows a stream dropped because they arrived behind its watermark (their window
 * had already closed), summed since the stream was created. A stream created
 * WITH (late_output = ...) also delivers exactly these rows to its late
 * stream (subscribe to it by name; docs/SQL.md).
 * Returns: LAMINAR_OK; LAMINAR_ERR_SQL_UNKNOWN_OBJECT.
 * Thread-safety: any thread (the value may lag the reactor by one batch). */
LAMINAR_API laminar_code laminar_stream_late_rows(laminar_db* db, const char* name,
                                                  int64_t* out, laminar_error* err);

/* Report how stream `name`'s input may be split across independent databases
 * (one per worker, as the Spark adapter does), as rows (role VARCHAR, name
 * VARCHAR, value VARCHAR):
 *   source        name: the root source the stream reads (through other
 *                 streams)
 *   event_time    name: that source's watermark column, value: its delay in
 *                 ms (no row when the source declares no watermark)
 *   key           name: a source column to hash on (one row each, in the
 *                 source's column order): every
 *                 windowed stream on the path groups by it as a plain column
 *   partitioning  name: `key` (hash on the key rows), `single` (windowed, but
 *                 no such column: all rows in one database) or `any` (no
 *                 window on the path: any split gives the same rows)
 * A stream over a UNION ALL of sources (at the root of its path) has one
 * group of source, event_time and key rows per input, in the union's order,
 * before the partitioning row; the i-th key row of every group is the column
 * that input puts unchanged at the same union column (hash each input's rows
 * on its own key columns: equal keys meet). A union column is a key only
 * when every input passes a plain, uncast source column there. An ASOF JOIN
 * of two sources at the root likewise has one group per input (left, then
 * right), its keys each side's own equality key columns (the join keeps state
 * per key, as a GROUP BY of them).
 * Ownership: *out is the caller's on LAMINAR_OK; release it with out->release.
 * Returns: LAMINAR_OK; LAMINAR_ERR_SQL_UNKNOWN_OBJECT (no stream of that
 *   name); LAMINAR_ERR_SQL_UNSUPPORTED (a UNION ALL branch or an ASOF JOIN
 *   input on the path reads a stream, or a join reads one source on both
 *   sides); LAMINAR_ERR_MISUSE; LAMINAR_ERR_NOMEM.
 * Thread-safety: any thread. */
LAMINAR_API laminar_code laminar_stream_partitioning(laminar_db* db, const char* name,
                                                     struct ArrowArrayStream* out,
                                                     laminar_error* err);

/* Split windowed stream `name` into a partial and a final query (two-phase
 * aggregation): running the partial query over any split of the stream's
 * input, one database per part, and the final query over all the partial
 * rows, with the partial rows of one group in one database, gives the
 * stream's rows (same column names, types and order), window by window.
 * One string table (columns role, name, value), rows in this order:
 *   partial         name: the partial stream; value: SQL declaring the root
 *                   source (its columns only: no WATERMARK, so its windows
 *                   close on explicit watermarks alone and no row is late),
 *                   the upstream streams as declared, and the partial stream
 *                   (one row per window and group: __ws, __we = the window's
 *                   bounds, __k0.. = the GROUP BY keys, __a<j>/__b<j> = the
 *                   partial aggregates)
 *   partial_source  name: the source the partial SQL reads (the root source)
 *   final           name: the stream's own name; value: SQL declaring the
 *                   final source (the partial stream's columns, no watermark)
 *                   and the final stream (the stream's select list, HAVING
 *                   and output names; a window closes at the watermark that
 *                   closes it in the stream)
 *   final_source    name: the source the final SQL reads
 *   key             name: a partial column of a GROUP BY key (one row each):
 *                   hash the partial rows on the keys (and __ws if wanted)
 *   window          name: __ws; value: the window's hop in ms (its size for
 *                   tumble)
 * COUNT, COUNT(*), SUM, MIN, MAX and AVG (as SUM and COUNT) decompose, in any
 * expression over them; WHERE runs in the partial query, HAVING and the select
 * list's expressions in the final. Tumbling and hopping windows decompose
 * (a hopping window per window: __ws names it). Run the partial query to the
 * end of its input and close it with laminar_source_watermark(INT64_MAX)
 * (it holds every window of its part open until then), feed its rows to the
 * final query and close that with a watermark too. A SUM of BIGINT whose
 * partial total does not fit BIGINT is NULL in the partial (the stream would
 * give the full total's verdict).
 * Ownership: *out is the caller's on LAMINAR_OK; release it with out->release.
 * Returns: LAMINAR_OK; LAMINAR_ERR_SQL_UNKNOWN_OBJECT (no stream of that
 *   name); LAMINAR_ERR_SQL_UNSUPPORTED with the reason when the stream does
 *   not decompose (no window, a session window, EMIT CHANGES, COUNT(DISTINCT),
 *   FIRST/LAST, median, the quantiles, approx_count_distinct, SELECT
 *   DISTINCT, an aggregating upstream stream, a materialized view): run it
 *   whole, partitioned as laminar_stream_partitioning says;
 *   LAMINAR_ERR_MISUSE; LAMINAR_ERR_NOMEM.
 * Thread-safety: any thread. */
LAMINAR_API laminar_code laminar_stream_two_phase(laminar_db* db, const char* name,
                                                  struct ArrowArrayStream* out,
                                                  laminar_error* err);

/* ------------------------------------------------------------------------------
 * User-defined scalar functions
 * ---------------------------------------------------------------------------- */

/* Flags of laminar_function_register() (a bit set).
 *   LAMINAR_FUNCTION_DETERMINISTIC  the same arguments always give the same
 *       result and the function has no effect: a call whose arguments are all
 *       constant (literals, or no arguments) is made once per chunk over one
 *       row, its value used for every row. Without it such a call is made over
 *       every row of the chunk.
 *   LAMINAR_FUNCTION_CALLED_ON_NULL  the callback also gets rows where an
 *       argument is NULL and decides their result. Without it (the default,
 *       SQL's "NULL in, NULL out") such rows are NULL and are not passed: the
 *       arrays the callback gets have no NULLs.
 *   LAMINAR_FUNCTION_THREAD_SAFE  the callback may run on several threads at
 *       once (with `cores` > 1 several reactors evaluate expressions). Without
 *       it the calls of one function are serialized by a lock. */
typedef enum laminar_function_flags {
  LAMINAR_FUNCTION_DETERMINISTIC = 1,
  LAMINAR_FUNCTION_CALLED_ON_NULL = 2,
  LAMINAR_FUNCTION_THREAD_SAFE = 4
} laminar_function_flags;

/* A scalar function over one chunk of rows (Arrow C Data Interface).
 * user:        the pointer given to laminar_function_register()
 * args:        a struct array ("+s") of `args->length` rows whose children are
 *              the arguments in order, each of its declared type (children
 *              named "arg0", "arg1", ...; no children for a function of no
 *              arguments). Borrowed: its buffers are valid until the callback
 *              returns and must not be written. Its release callbacks free
 *              nothing, so a consumer may import it (moving the struct) and
 *              release it, but must not use its buffers after returning.
 * args_schema: the schema of `args`, borrowed likewise.
 * out, out_schema: the callee fills both (released structs on entry): an array
 *              of exactly args->length rows of the declared return type, and
 *              its schema. The core takes ownership of both whatever the return
 *              value and releases each that is not released.
 * error, error_cap: on failure the callee may write a NUL-terminated message
 *              of at most error_cap bytes (error[0] is '\0' on entry).
 * Returns: 0 on success; LAMINAR_ERR_FUNCTION_RESULT (3011) when the callee
 *   found its own result invalid (a value it cannot represent in the declared
 *   type, e.g. a host language's decimal with more digits than the precision):
 *   the call fails with LAMINAR_ERR_FUNCTION_RESULT and the message; any other
 *   value fails the call with LAMINAR_ERR_FUNCTION_FAILED.
 * Thread-safety: see LAMINAR_FUNCTION_THREAD_SAFE. The callback runs on the
 *   thread that evaluates the expression: a reactor thread, the caller of
 *   laminar_run_until_idle() or laminar_query(), the opener of a durable
 *   database replaying its WAL. It must not call this database's API except
 *   to read its own `user` data. */
typedef int (*laminar_function_callback)(void* user, const struct ArrowArray* args,
                                         const struct ArrowSchema* args_schema,
                                         struct ArrowArray* out,
                                         struct ArrowSchema* out_schema, char* error,
                                         size_t error_cap);

/* Register scalar function `name`, callable in SQL wherever an expression is
 * allowed (select list, WHERE, GROUP BY keys, aggregate arguments, HAVING) by
 * the streams, views and queries bound after this call. Names are
 * case-insensitive; a built-in function's name (abs, upper, ...) cannot be
 * taken. Registering a name again replaces the function, unless a stream or
 * view uses it.
 * Functions are code, not catalog: they are not stored in data_dir, and a
 * statement that calls one must run after its registration. A durable
 * database recovers its stored streams (and replays its WAL through them)
 * inside laminar_open(): register the functions they call in the config
 * (laminar_config_function_register) before opening it. Reopening one whose
 * streams call a function the config does not have fails with
 * LAMINAR_ERR_RECOVERY, the message naming the function ("catalog.sql does
 * not run: LDB-1101: unknown function 'fx' ...").
 * arg_types:   nargs Arrow format strings, one per argument: "b" BOOLEAN,
 *              "i" INT, "l" BIGINT, "g" DOUBLE, "u" VARCHAR, "tsu:" TIMESTAMP
 *              (microseconds), "tdD" DATE (days), "d:p,s" (or "d:p,s,128")
 *              DECIMAL(p, s), 1 <= p <= 38, 0 <= s <= p, passed as decimal128
 *              (16-byte unscaled values) whatever p. SQL arguments are cast to
 *              these types as a built-in function's are (an INT widens to
 *              BIGINT or DOUBLE; a string literal converts; a DECIMAL
 *              parameter takes any DECIMAL, an integer or a number literal).
 * nargs:       0 to 64.
 * return_type: one Arrow format string of the same set: the format the
 *              callback's out_schema must have ("U" is also accepted for
 *              "u", large offsets; a DECIMAL's precision and scale must be
 *              the declared ones, and a value with more digits than the
 *              precision is LAMINAR_ERR_FUNCTION_RESULT).
 * fn:          the callback (laminar_function_callback).
 * user:        passed to every call of fn; may be NULL.
 * destroy:     called once with `user` when the function is dropped, replaced
 *              or the database is closed (after the last call); NULL: none.
 * flags:       a bit set of laminar_function_flags.
 * At run time a callback that returns non-zero fails the chunk with
 * LAMINAR_ERR_FUNCTION_FAILED (LAMINAR_ERR_FUNCTION_RESULT when it returned
 * that code), and a result that is released, of another
 * format, of another length, or that fails nanoarrow's full validation with
 * LAMINAR_ERR_FUNCTION_RESULT; the message names the function and the stream
 * ("stream 'q': function 'fx' failed: <callback's message>"). The stream's
 * batch is not applied (nothing of it is emitted; a windowed stream's state is
 * as before it), the error is reported as other processing errors are (by
 * laminar_run_until_idle(), or by laminar_stop() for the reactor), and the
 * stream goes on with the next batch.
 * Ownership: name and arg_types are copied; `user` is the database's from a
 *   successful call (freed by `destroy`); on failure it stays the caller's and
 *   destroy is not called.
 * Returns: LAMINAR_OK; LAMINAR_ERR_SQL_DUPLICATE_OBJECT (a built-in function
 *   has that name); LAMINAR_ERR_SQL_DEPENDENCY (replacing a function a stream
 *   or view uses: the message names it); LAMINAR_ERR_UNKNOWN_TYPE (a format
 *   not in the list, naming the argument); LAMINAR_ERR_MISUSE (NULL db, name
 *   or fn, an empty name or one that is not an identifier, nargs out of range,
 *   unknown flags); LAMINAR_ERR_NOMEM.
 * Thread-safety: any thread (serialized with other catalog calls). */
LAMINAR_API laminar_code laminar_function_register(
    laminar_db* db, const char* name, const char* const* arg_types, int32_t nargs,
    const char* return_type, laminar_function_callback fn, void* user,
    void (*destroy)(void* user), uint32_t flags, laminar_error* err);

/* Register a function in a config, as laminar_function_register() does on a
 * database: every database laminar_open() opens with this config starts with
 * it, before a durable one recovers its catalog and replays its WAL (so
 * stored streams that call it bind and run). Registering a name again in the
 * same config replaces it. A database may replace or drop its copy
 * afterwards (laminar_function_register / laminar_function_drop) without
 * touching the config's.
 * Ownership: as laminar_function_register(); the config and each database
 *   opened with it share the function, and destroy(user) runs once, when the
 *   last of them lets it go (laminar_config_destroy(), laminar_close(), a
 *   drop or replace).
 * Returns: LAMINAR_OK; LAMINAR_ERR_SQL_DUPLICATE_OBJECT (a built-in's name);
 *   LAMINAR_ERR_UNKNOWN_TYPE; LAMINAR_ERR_MISUSE (as laminar_function_register,
 *   or an invalid config handle); LAMINAR_ERR_NOMEM.
 * Thread-safety: one thread at a time per config. */
LAMINAR_API laminar_code laminar_config_function_register(
    laminar_config* config, const char* name, const char* const* arg_types, int32_t nargs,
    const char* return_type, laminar_function_callback fn, void* user,
    void (*destroy)(void* user), uint32_t flags, laminar_error* err);

/* Drop user-defined function `name` from the database: `destroy(user)` is
 * called once nothing else holds it (at once, unless a config it was
 * registered in still does).
 * Returns: LAMINAR_OK; LAMINAR_ERR_SQL_UNKNOWN_FUNCTION (no user-defined
 *   function of that name); LAMINAR_ERR_SQL_DEPENDENCY (a stream or view uses
 *   it: drop that first; the message names it); LAMINAR_ERR_MISUSE.
 * Thread-safety: any thread (serialized with other catalog calls). */
LAMINAR_API laminar_code laminar_function_drop(laminar_db* db, const char* name,
                                               laminar_error* err);

/* ---- aggregate functions ----------------------------------------------------
 *
 * A user-defined aggregate keeps one state per group: `state_size` bytes the
 * core owns (allocated, zeroed, copied, checkpointed and freed by it), laid
 * out one group after another, so that a callback reaches group g's state at
 * `(char*)states + g * state_size`. A state that points at memory of its own
 * (a heap buffer, a handle into a host language) says so with
 * destroy_state, which the core calls once for every state it discards, and
 * with serialize/deserialize, which the core then uses to copy and checkpoint
 * it. Callbacks of one aggregate run on the thread that processes its
 * stream's partition (one at a time unless LAMINAR_FUNCTION_THREAD_SAFE); they
 * must not call this database's API. error/error_cap: as for
 * laminar_function_callback (a NUL-terminated message, error[0] '\0' on
 * entry). */

/* Make group state `state` (state_size zero bytes on entry) the empty
 * state. Called for every new group before any other callback sees it. */
typedef void (*laminar_aggregate_init)(void* user, void* state);

/* Fold one chunk's rows into their groups' states: row j of `args` (a
 * struct array as laminar_function_callback's: one child per declared
 * argument, borrowed for the call) goes to the state at
 * `(char*)states + groups[j] * state_size`, j < args->length. Rows of one
 * group come in arrival order. Without LAMINAR_FUNCTION_CALLED_ON_NULL rows
 * with a NULL argument are not passed. The retract callback has the same
 * shape and removes the rows' contributions (a changelog's -1 rows).
 * Returns: 0 on success; any other value fails the batch. */
typedef int (*laminar_aggregate_update)(void* user, void* states, const uint32_t* groups,
                                        const struct ArrowArray* args,
                                        const struct ArrowSchema* args_schema,
                                        char* error, size_t error_cap);

/* Fold state `other` (unchanged, and still in use afterwards) into `state`:
 * afterwards `state` is what updating it with other's rows would have made
 * it. Used by hop windows (panes), sessions that a row bridges, several
 * cores' partial results and the two-phase split.
 * Returns: 0 on success; any other value fails the batch. */
typedef int (*laminar_aggregate_merge)(void* user, void* state, const void* other,
                                       char* error, size_t error_cap);

/* The results of n consecutive group states (`states`, n * state_size
 * bytes; not to be changed): fill out/out_schema (released on entry) with an
 * array of exactly n rows of the declared return type, as
 * laminar_function_callback does. The core takes ownership of both whatever
 * the return value.
 * Returns: 0 on success; any other value fails the batch (its rows are not
 * emitted), LAMINAR_ERR_FUNCTION_RESULT with that code as for
 * laminar_function_callback. */
typedef int (*laminar_aggregate_finalize)(void* user, const void* states, int64_t n,
                                          struct ArrowArray* out,
                                          struct ArrowSchema* out_schema, char* error,
                                          size_t error_cap);

/* Write state `state` as bytes into buf (cap bytes): returns the number of
 * bytes the encoding takes, having written them only if that is <= cap (the
 * core calls again with a larger buffer otherwise); a negative value is an
 * error. */
typedef int64_t (*laminar_aggregate_serialize)(void* user, const void* state, void* buf,
                                               int64_t cap);

/* Make `state` (state_size zero bytes on entry, init not called) the state
 * that serialize wrote as buf[0..len). Returns: 0 on success; any other value
 * fails the restore or copy. */
typedef int (*laminar_aggregate_deserialize)(void* user, void* state, const void* buf,
                                             int64_t len);

/* Free what state `state` points at; called once for each state the core
 * discards (a closed window's, a dropped group's, at close). */
typedef void (*laminar_aggregate_destroy_state)(void* user, void* state);

/* Register aggregate function `name`, callable in SQL as a built-in
 * aggregate is -- in the select list and HAVING of a GROUP BY with or
 * without tumble/hop/session windows, EMIT ON WINDOW CLOSE or EMIT CHANGES --
 * by the streams, views and queries bound after this call. Aggregates share
 * the function namespace with laminar_function_register (SHOW FUNCTIONS,
 * DROP FUNCTION, laminar_function_drop, the same durability rules).
 * arg_types, nargs: as laminar_function_register (1 or 2 arguments).
 * return_type: one Arrow format string of laminar_function_register's set
 *              ("b", "i", "l", "g", "u" VARCHAR, "tsu:", "tdD", "d:p,s"): the format
 *              finalize's out_schema must have ("U" is also accepted for "u").
 *              A VARCHAR result's strings are copied out of finalize's array
 *              before it is released.
 * state_size: bytes of one group's state, 1 to 65536.
 * init:        optional (NULL: the empty state is state_size zero bytes).
 * update:      required.
 * retract:     optional; without it the aggregate cannot read a changelog
 *              (a stream over an EMIT CHANGES stream or a view): a statement
 *              that would is refused with LAMINAR_ERR_SQL_UNSUPPORTED.
 * merge:       required.
 * finalize:    required.
 * serialize, deserialize: both or neither; neither: the state's bytes are
 *              copied and checkpointed as they are.
 * destroy_state: optional; with it serialize/deserialize are required.
 * user, destroy: as laminar_function_register.
 * flags:       LAMINAR_FUNCTION_CALLED_ON_NULL, LAMINAR_FUNCTION_THREAD_SAFE.
 * At run time a callback returning non-zero fails the batch with
 * LAMINAR_ERR_FUNCTION_FAILED and a bad finalize result with
 * LAMINAR_ERR_FUNCTION_RESULT, the message naming the stream and the
 * function ("stream 'q': function 'geomean' failed: <message>"), reported as
 * a scalar function's failure is. A failed update or retract leaves the
 * aggregate's states as before the batch: the core restores the plain-bytes
 * states (no serialize) of the groups the batch touched; a callback whose
 * states own memory (serialize set) must leave them unchanged when it fails.
 * In a window with EMIT ON WINDOW CLOSE, aggregates listed before it in the
 * select list may keep the batch's rows.
 * Ownership: as laminar_function_register().
 * Returns: LAMINAR_OK; LAMINAR_ERR_SQL_DUPLICATE_OBJECT (a built-in's name);
 *   LAMINAR_ERR_SQL_DEPENDENCY (replacing a function a stream uses);
 *   LAMINAR_ERR_UNKNOWN_TYPE (a format not in the lists); LAMINAR_ERR_MISUSE
 *   (NULL db, name, update, merge or finalize, a name that is not an
 *   identifier, nargs or state_size out of range, one of serialize/deserialize
 *   without the other, destroy_state without them, unknown flags);
 *   LAMINAR_ERR_NOMEM.
 * Thread-safety: any thread (serialized with other catalog calls). */
LAMINAR_API laminar_code laminar_aggregate_register(
    laminar_db* db, const char* name, const char* const* arg_types, int32_t nargs,
    const char* return_type, int64_t state_size, laminar_aggregate_init init,
    laminar_aggregate_update update, laminar_aggregate_update retract,
    laminar_aggregate_merge merge, laminar_aggregate_finalize finalize,
    laminar_aggregate_serialize serialize, laminar_aggregate_deserialize deserialize,
    laminar_aggregate_destroy_state destroy_state, void* user,
    void (*destroy)(void* user), uint32_t flags, laminar_error* err);

/* Register an aggregate function in a config, as
 * laminar_aggregate_register() does on a database (see
 * laminar_config_function_register: databases opened with the config start
 * with it, before a durable one recovers its streams).
 * Ownership, returns: as laminar_config_function_register().
 * Thread-safety: one thread at a time per config. */
LAMINAR_API laminar_code laminar_config_aggregate_register(
    laminar_config* config, const char* name, const char* const* arg_types, int32_t nargs,
    const char* return_type, int64_t state_size, laminar_aggregate_init init,
    laminar_aggregate_update update, laminar_aggregate_update retract,
    laminar_aggregate_merge merge, laminar_aggregate_finalize finalize,
    laminar_aggregate_serialize serialize, laminar_aggregate_deserialize deserialize,
    laminar_aggregate_destroy_state destroy_state, void* user,
    void (*destroy)(void* user), uint32_t flags, laminar_error* err);

/* ---- table functions -------------------------------------------------------
 *
 * A table function turns each input row into zero or more output rows: SQL
 * calls it in FROM, joined to the rows of one input read by name or of a
 * derived table (FROM (SELECT ...) d, f(d.x)),
 *   FROM s, f(s.x, ...) [[AS] t [(a, b, ...)]]
 *   FROM s CROSS JOIN LATERAL f(s.x, ...) [[AS] t [(a, b, ...)]]
 * (LATERAL is optional), and the rest of the query (WHERE, GROUP BY and
 * windows, the select list) reads s's columns and f's. Over a changelog (an
 * EMIT CHANGES stream, a view) each output row carries its input row's
 * _weight. The callback has the
 * laminar_function_callback signature and is vectorized: one call per chunk
 * of input rows, `args` as a scalar function's (one child per argument; rows
 * with a NULL argument are left out unless LAMINAR_FUNCTION_CALLED_ON_NULL,
 * and make no rows). It fills out/out_schema with a struct array ("+s",
 * offset 0, no NULL rows) whose child 0 is the parent-row column -- "i"
 * (int32) or "l" (int64), no NULLs: for each output row the row of `args` it
 * came from, in [0, args->length) and never going down -- and whose next
 * children are the declared columns in order, each of its declared format.
 * Output rows keep their parent's columns, its event time included, so
 * watermarks and windows downstream work as over the input. */

/* Register table function `name` (see above), callable in FROM by the
 * streams, views and queries bound after this call. It shares the function
 * namespace of laminar_function_register (SHOW FUNCTIONS lists it as
 * "table", laminar_function_drop and DROP FUNCTION drop it, the same rules on
 * replacing one a stream uses and on durability: register it in the config
 * of a durable database whose streams call it, before laminar_open()).
 * Built-in table functions: generate_series(start, stop [, step]),
 * range(start, stop [, step]) and string_split_to_rows(s, sep), also written
 * unnest(string_split(s, sep)); their names cannot be taken.
 * arg_types, nargs: as laminar_function_register (0 to 64 arguments).
 * columns:     a struct schema ("+s") with 1 to 64 children, one per output
 *              column: its name (an identifier, unique) and its type, an
 *              Arrow format of laminar_function_register's set. Borrowed for
 *              the call (names and formats are copied).
 * fn:          the callback (laminar_function_callback, as described above).
 * user, destroy, flags: as laminar_function_register
 *              (LAMINAR_FUNCTION_DETERMINISTIC is accepted and has no effect).
 * At run time a callback that returns non-zero fails the chunk with
 * LAMINAR_ERR_FUNCTION_FAILED; a result that is released, not a struct of the
 * parent column and the declared columns, of another format, with a parent
 * index NULL, out of range or going down, of mismatched lengths, or failing
 * nanoarrow's full validation fails it with LAMINAR_ERR_FUNCTION_RESULT. The
 * message names the stream, the function, and the column or output row
 * ("stream 'q': function 'split' returned an invalid result: parent row 7 at
 * output row 3 is out of range (the call had 4 rows)"). Nothing of the batch
 * is emitted and the stream goes on, as for a scalar function.
 * Ownership: name, arg_types and columns are copied; `user` as
 *   laminar_function_register.
 * Returns: LAMINAR_OK; LAMINAR_ERR_SQL_DUPLICATE_OBJECT (a built-in function
 *   has that name); LAMINAR_ERR_SQL_DEPENDENCY (replacing a function a stream
 *   or view uses); LAMINAR_ERR_UNKNOWN_TYPE (an argument's or column's format
 *   not in the list, naming it); LAMINAR_ERR_MISUSE (NULL db, name, fn or
 *   columns, a released or non-struct columns schema, no or too many columns,
 *   a column without an identifier name or named twice, nargs out of range,
 *   unknown flags); LAMINAR_ERR_NOMEM. On failure nothing is registered.
 * Thread-safety: any thread (serialized with other catalog calls). */
LAMINAR_API laminar_code laminar_table_function_register(
    laminar_db* db, const char* name, const char* const* arg_types, int32_t nargs,
    const struct ArrowSchema* columns, laminar_function_callback fn, void* user,
    void (*destroy)(void* user), uint32_t flags, laminar_error* err);

/* Register a table function in a config, as laminar_table_function_register()
 * does on a database: every database opened with the config starts with it,
 * before a durable one recovers its streams (see
 * laminar_config_function_register).
 * Ownership, returns: as laminar_config_function_register() and
 *   laminar_table_function_register().
 * Thread-safety: one thread at a time per config. */
LAMINAR_API laminar_code laminar_config_table_function_register(
    laminar_config* config, const char* name, const char* const* arg_types, int32_t nargs,
    const struct ArrowSchema* columns, laminar_function_callback fn, void* user,
    void (*destroy)(void* user), uint32_t flags, laminar_error* err);

/* ------------------------------------------------------------------------------
 * Sources
 * ---------------------------------------------------------------------------- */

/* A producer handle on a source. Close with laminar_source_close(). */
typedef struct laminar_source laminar_source;

/* Open a producer handle on source `name`. A source starts single-producer
 * (its queue is an SPSC-fast path); more producer threads get their own
 * handle with laminar_source_clone().
 * Ownership: *out is the caller's; close with laminar_source_close().
 * Returns: LAMINAR_OK; LAMINAR_ERR_SQL_UNKNOWN_OBJECT; LAMINAR_ERR_STATE if a
 *   producer handle (or a clone of one) is already open on it: clone that one;
 *   also LAMINAR_ERR_STATE for a table fed by its query (CREATE TABLE ... AS
 *   SELECT), which only its query writes; LAMINAR_ERR_READ_ONLY on a
 *   database opened read_only.
 * Thread-safety: any thread. */
LAMINAR_API laminar_code laminar_source_open(laminar_db* db, const char* name,
                                             laminar_source** out, laminar_error* err);

/* Push one batch: `array` is a struct array whose children are the source's
 * columns, matched by name (any order; a missing nullable column is not
 * allowed), described by `schema`.
 * Validation: the schema must match the source (names, types; UTF8, LARGE_UTF8
 * and dictionary(int32 -> utf8) all fit VARCHAR; any TIMESTAMP unit fits
 * TIMESTAMP), and the array is validated at nanoarrow's full level before
 * anything is ingested; any failure is LAMINAR_ERR_ARROW_INVALID naming the
 * column (err->column_name) or, for the struct and the top-level schema, the
 * batch. Checked: buffer and child counts, NULL buffers where rows need them;
 * length, offset and null_count non-negative (null_count -1 = unknown),
 * offset + length and every buffer's byte size as they imply it within int64
 * and not wrapping the address space; null_count equal to the validity
 * bitmap's count; utf8 offsets non-decreasing, first and last >= 0, the values
 * buffer's size being the last offset; UTF-8 of every non-null value (also
 * dictionary values); dictionary indices in [0, dictionary length); fixed-width
 * and offset buffers aligned; each column as long as the struct's offset +
 * length; no top-level struct nulls; schema metadata (of the struct, each
 * column and dictionary) walked by its length words, each non-negative and
 * the blob at most 64 MiB, so a malformed blob is refused, not read past.
 * Not checkable: the C Data Interface carries no allocation sizes, so a buffer
 * whose real allocation is shorter than its declared lengths and offsets
 * imply cannot be told from a right one when other mapped memory follows it
 * (it would be read, and its bytes could reach results); nor can a metadata
 * blob shorter than its own length words claim, or a format or name string
 * without its terminating NUL. Partly: a slice that ends 256 KiB or more past
 * its buffer's start is probed (mincore) and refused when its pages are not
 * mapped, which catches offsets or lengths far past a small buffer. A
 * producer must hand over buffers of at least the sizes it declares.
 * Ownership: on LAMINAR_OK `*array` has been moved into the core (its release
 * member is now NULL) and its buffers are kept, zero-copy, until the core no
 * longer needs them. On failure `*array` is untouched and still the caller's.
 * `schema` is borrowed for the call only.
 * Returns: LAMINAR_OK; LAMINAR_ERR_ARROW_RELEASED; LAMINAR_ERR_ARROW_INVALID;
 *   LAMINAR_ERR_SCHEMA_MISMATCH; LAMINAR_ERR_COLUMN_TYPE;
 *   LAMINAR_ERR_NULL_VIOLATION; LAMINAR_ERR_QUEUE_FULL; LAMINAR_ERR_SOURCE_CLOSED;
 *   LAMINAR_ERR_IO when the source's WAL cannot log it (then nothing is
 *   ingested; with wal_mode sync, LAMINAR_OK means the batch is on stable
 *   storage). A rejected batch ingests nothing; data pushed before it is kept.
 * Back-pressure when the queue is full: the source's policy (block, drop_oldest,
 * reject; see laminar_config_set). Block waits with the source's wait strategy
 * while the runtime runs and returns LAMINAR_ERR_QUEUE_FULL when it does not
 * (also when the runtime stops during the wait: nothing is logged then either).
 * The wait has no time limit: laminar_source_push_timeout() bounds it.
 * Thread-safety: the producer thread of this handle (one thread at a time per
 *   handle; clones push from their own threads at the same time); the
 *   runtime may run. */
LAMINAR_API laminar_code laminar_source_push(laminar_source* source,
                                             struct ArrowArray* array,
                                             const struct ArrowSchema* schema,
                                             laminar_error* err);

/* As laminar_source_push(), but never waits: when a block source's queue is
 * full it returns LAMINAR_ERR_QUEUE_FULL at once, whether or not the reactor
 * runs, and nothing is ingested or logged (`*array` is still the caller's).
 * drop_oldest and reject sources never wait anyway: they behave as push.
 * Thread-safety: as laminar_source_push(). */
LAMINAR_API laminar_code laminar_source_try_push(laminar_source* source,
                                                 struct ArrowArray* array,
                                                 const struct ArrowSchema* schema,
                                                 laminar_error* err);

/* As laminar_source_push(), but a wait for room (block back-pressure while
 * the runtime runs) lasts at most `timeout_ms` milliseconds: for a caller
 * that must stay responsive (a signal, a shutdown flag) while a full queue
 * does not drain, e.g. a subscriber nobody reads. Push again after a timeout.
 * timeout_ms: the longest wait; 0 waits not at all; < 0 waits as
 *   laminar_source_push() does (no limit).
 * Ownership: as laminar_source_push(); after LAMINAR_ERR_PUSH_TIMEOUT `*array`
 *   is untouched and still the caller's, and nothing of it was ingested or
 *   logged.
 * Returns: as laminar_source_push(); LAMINAR_ERR_PUSH_TIMEOUT when the queue
 *   had no room within timeout_ms (a source that would not wait --
 *   reject, drop_oldest, or block without a running runtime -- answers as
 *   laminar_source_push() does).
 * Thread-safety: as laminar_source_push(). */
LAMINAR_API laminar_code laminar_source_push_timeout(laminar_source* source,
                                                     struct ArrowArray* array,
                                                     const struct ArrowSchema* schema,
                                                     int64_t timeout_ms,
                                                     laminar_error* err);

/* Check `array` against the source exactly as laminar_source_push() does --
 * every validation listed there, in the same order, with the same errors --
 * without ingesting, logging or queueing anything: for a binding that must
 * know an array is sound before handing it to code with weaker checks (the
 * Python binding calls it before pyarrow reads a foreign array).
 * Ownership: `array` and `schema` are borrowed for the call only; the array
 *   is not moved (its release member is left as it was) and stays the
 *   caller's, accepted or not.
 * Returns: LAMINAR_OK when a push would accept it (room in the queue aside);
 *   otherwise the code laminar_source_push() would return for it
 *   (LAMINAR_ERR_ARROW_RELEASED, LAMINAR_ERR_ARROW_INVALID,
 *   LAMINAR_ERR_SCHEMA_MISMATCH, LAMINAR_ERR_COLUMN_TYPE,
 *   LAMINAR_ERR_NULL_VIOLATION, LAMINAR_ERR_SOURCE_CLOSED);
 *   LAMINAR_ERR_MISUSE for a bad handle or a NULL array or schema.
 * Thread-safety: any thread (it reads the source's schema only). */
LAMINAR_API laminar_code laminar_source_validate(laminar_source* source,
                                                 const struct ArrowArray* array,
                                                 const struct ArrowSchema* schema,
                                                 laminar_error* err);

/* Another producer handle on the same source, for another thread. The first
 * clone switches the source's queue to multi-producer mode for good (a CAS per
 * push instead of a store); messages already queued stay queued, in order.
 * Each handle's messages reach the graph in the order that handle pushed
 * them; messages of different handles interleave. Close each clone with
 * laminar_source_close(); the source accepts a new laminar_source_open() once
 * every handle is closed.
 * Ownership: *out is the caller's; close with laminar_source_close().
 * Returns: LAMINAR_OK; LAMINAR_ERR_MISUSE; LAMINAR_ERR_SOURCE_CLOSED;
 *   LAMINAR_ERR_NOMEM (then *out is NULL).
 * Thread-safety: the thread using `source` (no push on `source` may run
 *   during the call); hand the clone to its thread afterwards. */
LAMINAR_API laminar_code laminar_source_clone(laminar_source* source,
                                              laminar_source** out, laminar_error* err);

/* Push `n` batches in one call: arrays[0..n), each a struct array described
 * by the same `schema`, validated as laminar_source_push() validates one. All
 * are validated before any is queued, then they are queued in order as one
 * contiguous run (no other producer's message lands between them, up to the
 * queue's capacity per run), with one wake-up of the reactor.
 * Ownership: on LAMINAR_OK every array has been moved (release == NULL). On
 *   failure arrays[*out_pushed..n) are untouched and still the caller's; the
 *   first *out_pushed were ingested -- 0 except when the source was dropped or
 *   the runtime stopped while a run longer than the queue waited for room.
 * out_pushed: NULL allowed.
 * Returns: as laminar_source_push(); a validation error names the array's
 *   index ("array 3 of 10"). Back-pressure: block waits for room; reject
 *   refuses the whole call when the queue lacks room for all n (counted as n
 *   rejected); drop_oldest drops as many old messages as needed.
 * Thread-safety: as laminar_source_push(). */
LAMINAR_API laminar_code laminar_source_push_batch(laminar_source* source,
                                                   struct ArrowArray* arrays, int64_t n,
                                                   const struct ArrowSchema* schema,
                                                   int64_t* out_pushed,
                                                   laminar_error* err);

/* As laminar_source_push_batch(), but a wait for room (block back-pressure
 * while the runtime runs) lasts at most `timeout_ms` milliseconds (0: no
 * wait; < 0: no limit, as laminar_source_push_batch()), so a caller can stay
 * responsive (a signal, an interrupt, a shutdown flag) while a full queue
 * does not drain: push the rest again after a timeout.
 * A run that fits the queue (n <= its capacity, buffer_size) waits for room
 * for all n before any is logged or queued: after LAMINAR_ERR_PUSH_TIMEOUT
 * nothing of the call was ingested or logged (*out_pushed is 0). A longer run
 * is queued a capacity at a time, and a timeout may leave the first
 * *out_pushed arrays ingested.
 * Ownership: as laminar_source_push_batch(): arrays[*out_pushed..n) are
 *   untouched and still the caller's after any failure, a timeout included.
 * out_pushed: NULL allowed (then a partial run cannot be told).
 * Returns: as laminar_source_push_batch(); LAMINAR_ERR_PUSH_TIMEOUT when the
 *   queue had no room within timeout_ms (a source that would not wait
 *   answers as laminar_source_push_batch() does).
 * Thread-safety: as laminar_source_push(). */
LAMINAR_API laminar_code laminar_source_push_batch_timeout(
    laminar_source* source, struct ArrowArray* arrays, int64_t n,
    const struct ArrowSchema* schema, int64_t timeout_ms, int64_t* out_pushed,
    laminar_error* err);

/* Upsert rows into table `table` (CREATE TABLE ... PRIMARY KEY): each row
 * replaces the row of its key, or adds it. The same as pushing the rows with
 * `_weight` +1 to the table's source (laminar_source_open(db, table) opens
 * it: its columns are the table's then `_weight BIGINT`, +1 or NULL upsert,
 * -1 deletes), and as SQL `INSERT INTO table VALUES ...`.
 * table: the table's name. rows/schema: a struct array whose columns are the
 *   table's, matched by name in any order (as laminar_source_push matches a
 *   source's), without `_weight`; NULL in a key column is refused.
 * Ownership: on LAMINAR_OK `*rows` has been consumed (its release member is
 *   NULL); on failure it is untouched and still the caller's. `schema` is
 *   borrowed for the call.
 * Returns: LAMINAR_OK; LAMINAR_ERR_SQL_UNKNOWN_OBJECT (no table of that name);
 *   LAMINAR_ERR_STATE while a producer handle of the table is open (write
 *   through that handle instead), and for a table fed by its query (CREATE
 *   TABLE ... AS SELECT: only its query writes it); LAMINAR_ERR_READ_ONLY on a read-only
 *   database; the import errors of laminar_source_push (LAMINAR_ERR_SCHEMA_MISMATCH,
 *   LAMINAR_ERR_COLUMN_TYPE, LAMINAR_ERR_NULL_VIOLATION, LAMINAR_ERR_ARROW_*)
 *   and its queue and WAL errors; LAMINAR_ERR_MISUSE for NULL arguments. On
 *   failure nothing is written.
 * Thread-safety: any thread; takes the database's catalog lock for the call. */
LAMINAR_API laminar_code laminar_table_upsert(laminar_db* db, const char* table,
                                              struct ArrowArray* rows,
                                              const struct ArrowSchema* schema,
                                              laminar_error* err);

/* Delete the rows of the given keys from table `table`; a key with no row is
 * ignored. The same as SQL `DELETE FROM table WHERE k = ...` per key.
 * keys/schema: a struct array of exactly the table's primary-key columns
 *   (matched by name), one row per key to delete; for a table with an event
 *   time (WATERMARK FOR a column that is not in the key) also that column:
 *   the time of each delete, which ends the key's version for temporal joins
 *   (docs/SQL.md "Temporal JOIN").
 * Ownership: as laminar_table_upsert().
 * Returns: as laminar_table_upsert() (LAMINAR_ERR_SCHEMA_MISMATCH when the
 *   columns are not the primary key's).
 * Thread-safety: as laminar_table_upsert(). */
LAMINAR_API laminar_code laminar_table_delete(laminar_db* db, const char* table,
                                              struct ArrowArray* keys,
                                              const struct ArrowSchema* schema,
                                              laminar_error* err);

/* Alias of laminar_source_free_slots(): *out = 1 when it reports at least `n`
 * free slots, else 0. Kept for existing callers (the bindings' has_capacity).
 * Returns: LAMINAR_OK; LAMINAR_ERR_MISUSE (n < 0, NULL out, bad handle).
 * Thread-safety: any thread. */
LAMINAR_API laminar_code laminar_source_has_capacity(laminar_source* source, int64_t n,
                                                     int32_t* out, laminar_error* err);

/* Free slots in the source's queue now (each push or watermark takes one; the
 * reactor or laminar_run_until_idle frees them). A snapshot: with the reactor
 * running it may grow at any moment.
 * Returns: LAMINAR_OK; LAMINAR_ERR_MISUSE.
 * Thread-safety: any thread. */
LAMINAR_API laminar_code laminar_source_free_slots(laminar_source* source, int64_t* out,
                                                   laminar_error* err);

/* Advance the source's watermark explicitly to `watermark_ms` (epoch
 * milliseconds): a message queued (and logged) after the batches pushed
 * before it, taking a queue slot and waiting for room as laminar_source_push()
 * does; a value below the current watermark is ignored. INT64_MAX closes
 * every open window.
 * Returns: LAMINAR_OK; LAMINAR_ERR_QUEUE_FULL; LAMINAR_ERR_SOURCE_CLOSED;
 *   LAMINAR_ERR_MISUSE.
 * Thread-safety: as laminar_source_push(). */
LAMINAR_API laminar_code laminar_source_push_watermark(laminar_source* source,
                                                       int64_t watermark_ms,
                                                       laminar_error* err);

/* As laminar_source_push_watermark(), but a wait for room in a full queue
 * lasts at most `timeout_ms` milliseconds (0: no wait; < 0: no limit), as
 * laminar_source_push_timeout() waits.
 * Returns: as laminar_source_push_watermark(); LAMINAR_ERR_PUSH_TIMEOUT when
 *   the queue had no room within timeout_ms (the watermark was not queued or
 *   logged: send it again).
 * Thread-safety: as laminar_source_push(). */
LAMINAR_API laminar_code laminar_source_push_watermark_timeout(laminar_source* source,
                                                               int64_t watermark_ms,
                                                               int64_t timeout_ms,
                                                               laminar_error* err);

/* Alias of laminar_source_push_watermark(); kept for existing callers. */
LAMINAR_API laminar_code laminar_source_watermark(laminar_source* source,
                                                  int64_t watermark_ms,
                                                  laminar_error* err);

/* Alias of laminar_source_push_watermark_timeout(); kept for existing callers. */
LAMINAR_API laminar_code laminar_source_watermark_timeout(laminar_source* source,
                                                          int64_t watermark_ms,
                                                          int64_t timeout_ms,
                                                          laminar_error* err);

/* Declare the source idle (idle != 0) or active again (idle == 0), as
 * Flink's idleness: an idle source holds back the watermark of no stream
 * reading it -- a stream over several inputs (UNION ALL) takes the least
 * watermark of its active inputs only, and keeps its watermark while every
 * input is idle. The change is a message queued after the batches pushed
 * before it (it takes a queue slot and waits for room as
 * laminar_source_push() does), so it applies once they went through the
 * graph; the next batch or watermark pushed makes the source active again
 * (its rows behind the watermark its readers reached meanwhile are late).
 * CREATE SOURCE ... WITH (idle_timeout = '5 s') makes it idle after that
 * long without data, on the reactor's clock. On a durable database a
 * checkpoint holds each source's idleness and each change is recorded with
 * the sources' positions where it took effect; a restart's WAL replay
 * applies it there (docs/SQL.md "Idle sources").
 * Params: source: an open handle; idle: nonzero idle, 0 active.
 * Ownership: nothing is transferred.
 * Returns: LAMINAR_OK; LAMINAR_ERR_QUEUE_FULL (a full queue that cannot
 *   wait: not started, or backpressure = 'reject'); LAMINAR_ERR_SOURCE_CLOSED;
 *   LAMINAR_ERR_MISUSE.
 * Thread-safety: as laminar_source_push(). */
LAMINAR_API laminar_code laminar_source_set_idle(laminar_source* source, int32_t idle,
                                                 laminar_error* err);

/* The offset the next push or watermark on this source will get: 1 + the
 * number of messages its WAL holds or has checkpointed (1 for a new source).
 * After recovery a producer resumes its input from here: messages below it
 * were accepted before the restart and are in the recovered state. It is
 * max(the restored checkpoint's position, the last good WAL record) + 1:
 * damaged or missing WAL records the checkpoint covers never pull it back.
 * Durable without a WAL (wal_mode none) messages are counted the same way,
 * and after recovery it is the checkpoint's position + 1 (input after the
 * checkpoint is not kept). Without durability it is 0.
 * Returns: LAMINAR_OK; LAMINAR_ERR_MISUSE.
 * Thread-safety: as laminar_source_push(). */
LAMINAR_API laminar_code laminar_source_offset(laminar_source* source, int64_t* out,
                                               laminar_error* err);

/* Close a producer handle; queued batches are still processed. NULL is a no-op.
 * Thread-safety: the producer thread. */
LAMINAR_API void laminar_source_close(laminar_source* source);

/* ------------------------------------------------------------------------------
 * Subscriptions
 * ---------------------------------------------------------------------------- */

/* A consumer queue of one stream's result batches. Close with
 * laminar_subscription_close(). */
typedef struct laminar_subscription laminar_subscription;

/* Subscribe to the results of stream `name` produced from now on. `name` may
 * also be a materialized view (its changes: its columns and `_weight`) or a
 * sink (CREATE SINK name FROM x: subscribes to x; dropping the sink later
 * leaves the subscription on x).
 * keys, values: `noptions` options of this subscription (keys[i] = values[i],
 *   values as text, as laminar_config_set() takes them; NULL and 0 for the
 *   database's settings). The LAMINAR_SCOPE_SUBSCRIPTION rows of the option
 *   table (laminar_option_get()):
 *   buffer_size      slots in its queue (a power of two in [2, 2^24]; default
 *                    the config's buffer_size)
 *   max_queue_bytes  bytes of the batches in its queue (default the config's)
 *   slow_subscriber  block | drop (see laminar_config_set)
 *   wait_strategy    park | spin | spin_yield(n): how
 *                    laminar_subscription_next() waits for a batch
 * Each subscription has its own queue: a stream's output batch is shared by
 * reference with every subscriber (broadcast) and each reads at its own pace.
 * Ownership: keys and values are borrowed for the call; *out is the caller's:
 *   close it with laminar_subscription_close().
 * Returns: LAMINAR_OK; LAMINAR_ERR_SQL_UNKNOWN_OBJECT (nothing of that name);
 *   LAMINAR_ERR_CONFIG_KEY (an unknown option) or LAMINAR_ERR_CONFIG_VALUE (a
 *   bad value), naming the key: nothing subscribed; LAMINAR_ERR_MISUSE (NULL
 *   name or out, noptions < 0, a NULL key or value); LAMINAR_ERR_NOMEM. On
 *   failure *out is NULL.
 * Thread-safety: any thread. */
LAMINAR_API laminar_code laminar_subscription_open(
    laminar_db* db, const char* name, const char* const* keys, const char* const* values,
    int32_t noptions, laminar_subscription** out, laminar_error* err);

/* Alias of laminar_subscription_open(db, name, NULL, NULL, 0, out, err): the
 * database's settings. Kept for existing callers.
 * Thread-safety: any thread. */
LAMINAR_API laminar_code laminar_subscribe(laminar_db* db, const char* name,
                                           laminar_subscription** out,
                                           laminar_error* err);

/* Alias of laminar_subscription_open() with the options as one text
 * "key = value, key = 'value'" (NULL or "" for the database's defaults); a
 * malformed text is LAMINAR_ERR_CONFIG_VALUE. Kept for existing callers:
 * laminar_subscription_open() takes the options as key/value arrays.
 * Returns: as laminar_subscription_open().
 * Thread-safety: any thread. */
LAMINAR_API laminar_code laminar_subscribe_with(laminar_db* db, const char* name,
                                                const char* options,
                                                laminar_subscription** out,
                                                laminar_error* err);

/* Take the next result batch, waiting up to `timeout_ms` (0: do not wait; -1:
 * wait until a batch arrives or the subscription ends).
 * Ownership: on LAMINAR_OK with a batch, `*out` (a struct array) and
 * `*out_schema` (NULL allowed: not filled) are the caller's; release each with
 * its release callback, on any thread. With no batch before the timeout,
 * LAMINAR_OK is returned and out->release is NULL.
 * The wait follows the subscription's wait strategy (laminar_subscription_open).
 * Returns: LAMINAR_OK; LAMINAR_ERR_SUBSCRIPTION_CLOSED once the stream is
 *   dropped (or the database closed) and no batch remains.
 * Thread-safety: one consumer thread per subscription; the runtime may run. */
LAMINAR_API laminar_code laminar_subscription_next(laminar_subscription* sub,
                                                   int64_t timeout_ms,
                                                   struct ArrowArray* out,
                                                   struct ArrowSchema* out_schema,
                                                   laminar_error* err);

/* Export the subscription as an ArrowArrayStream. get_next() returns the batches
 * queued now and then ends (out->release == NULL); it never waits. The stream
 * borrows the subscription: release the stream before closing it.
 * Ownership: *out is the caller's; release with out->release.
 * Returns: LAMINAR_OK; LAMINAR_ERR_MISUSE.
 * Thread-safety: as laminar_subscription_next(). */
LAMINAR_API laminar_code laminar_subscription_stream(laminar_subscription* sub,
                                                     struct ArrowArrayStream* out,
                                                     laminar_error* err);

/* Close a subscription and free its queued batches; NULL is a no-op.
 * Thread-safety: the consumer thread; the runtime may run. */
LAMINAR_API void laminar_subscription_close(laminar_subscription* sub);

#ifdef __cplusplus
}
#endif

#endif /* LAMINAR_H */
