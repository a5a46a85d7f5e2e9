/*
 * internal.h -- the database handle and its catalog (private to src/db).
 *
 * Locking: `lock` serializes every catalog call (execute, query, open/close of
 * handles, start/stop, run_until_idle). While the reactor runs, a catalog call
 * that changes the graph pauses it (lm_rt_pause) for the change. Pushes and
 * subscription reads take no catalog lock: they touch their own queue (a push
 * to a source with a WAL takes that source's log_mu, see handles.c).
 */
#ifndef LM_DB_INTERNAL_H
#define LM_DB_INTERNAL_H

#include "db/durable.h"
#include "db/vars.h"
#include "laminar.h"
#include "rt/rt.h"
#include "sql/ast.h"

#include <pthread.h>
#include <stdatomic.h>

#define LM_MAGIC_DB 0x4c4d4442u     /* "LMDB" */
#define LM_MAGIC_SOURCE 0x4c4d5352u /* "LMSR" */
#define LM_MAGIC_SUB 0x4c4d5342u    /* "LMSB" */
#define LM_MAGIC_CONFIG 0x4c4d4346u /* "LMCF" */
#define LM_MAGIC_DEAD 0xdeadbeefu

/* A connector sink named in the config, attached when laminar_open recovers. */
typedef struct lm_config_sink {
  char* name;
  char* stream;
  laminar_sink_callbacks cb;
  /* A database took it (and its release): claimed once, atomically, by
   * laminar_open, which reads its const config and writes nothing else. */
  atomic_bool attached;
} lm_config_sink;

struct laminar_config {
  uint32_t magic;
  uint32_t buffer_size;
  char* data_dir;
  lm_durable_config durable;
  lm_config_sink* sinks;
  int32_t nsinks;
  lm_vars vars; /* `var.NAME` keys: ${NAME} substitution (vars.h) */
  /* Runtime defaults (issue 5): sources' back-pressure and wait strategy,
   * subscriptions' wait strategy and slow-subscriber policy. */
  lm_backpressure backpressure;
  lm_wait wait;
  bool slow_drop;
  int64_t max_queue_bytes; /* sources' and subscriptions' byte bound (0: none) */
  int64_t max_state_bytes; /* the database's keyed-state bound (0: none) */
  int32_t cores;           /* reactors (thread-per-core), 1..LM_RT_MAX_CORES */
  bool core_affinity;      /* pin reactor i to CPU i */
  /* Functions every database opened with it starts with (one reference
   * each; laminar_config_function_register). */
  lm_udf_list funcs;
};

/* A sink on a stream: CREATE SINK ... INTO FILE (sql set: part of the stored
 * catalog) or a connector's callbacks (sql NULL: registered by the application). */
typedef struct lm_sink_def {
  char* name;
  char* sql;
  lm_stream_def* stream;
  struct lm_sink* sink;
  uint64_t incarnation; /* durable identity, as a stream's (rt.h) */
  uint64_t start_seq;   /* its root source's position at CREATE: replay feeds it after */
  /* On a stream over several inputs (stream->in_start != NULL): in_start[b]
   * is the position of input b's root source at CREATE (nin of them; NULL
   * otherwise). The replay runs every source up to these first, the sink
   * held, so it gets what it got live: the output after its CREATE. */
  uint64_t* in_start;
  int32_t nin;
} lm_sink_def;


struct laminar_source {
  uint32_t magic;
  laminar_db* db;
  lm_source_def* def;
};

struct laminar_subscription {
  uint32_t magic;
  laminar_db* db;
  lm_stream_def* stream; /* NULL once the stream is dropped */
  char* stream_name;
  lm_schema schema;
  lm_sub* sub;
  char stream_error[256];        /* last error text of an exported stream */
  atomic_int_fast64_t delivered; /* batches handed to the reader (relaxed) */
};

struct laminar_db {
  uint32_t magic;
  pthread_mutex_t lock;
  uint32_t buffer_size;
  char* data_dir;
  lm_graph graph;
  lm_rt rt;
  laminar_source** sources; /* open producer handles */
  int32_t nsources;
  laminar_subscription** subs; /* open subscriptions */
  int32_t nsubs;
  lm_sink_def** sinks; /* file sinks, in creation order */
  int32_t nsinks;
  /* Consumers feeding sources (CREATE SOURCE ... WITH (connector = ...)). */
  struct lm_kafka_source** consumers;
  int32_t nconsumers;
  lm_durable* dur;              /* NULL: durability off */
  int dir_lock;                 /* lm_fs_lock_dir's fd on data_dir (-1: none) */
  bool read_only;               /* opened with read_only: shared lock, nothing written */
  lm_vars vars;                 /* ${NAME} substitution variables, from the config */
  lm_backpressure backpressure; /* defaults from the config (see laminar_config) */
  lm_wait wait;
  bool slow_drop;
  int64_t max_queue_bytes; /* default of sources and subscriptions (0: none) */
  /* Every stream's keyed state together (config max_state_bytes; 0: no
   * bound): the parent of each stream's budget. */
  lm_state_budget state_budget;
  /* User-defined functions (laminar_function_register), one reference each;
   * written under `lock`. */
  lm_udf_list funcs;
};

/* catalog.c */
laminar_code lm_db_execute_locked(laminar_db* db, const char* sql,
                                  struct ArrowArrayStream* out_rows, laminar_error* err);
void lm_db_catalog_free(laminar_db* db);
lm_source_def* lm_db_find_source(laminar_db* db, const char* name);
lm_stream_def* lm_db_find_stream(laminar_db* db, const char* name);
/* The source stream s's input chain starts at (NULL when there is none). */
lm_source_def* lm_db_root_source(laminar_db* db, const lm_stream_def* s);
/* The root source of branch b of stream s's plan (its input, or that
 * stream's root source); NULL when not found. */
lm_source_def* lm_db_branch_root(laminar_db* db, const lm_stream_def* s, int32_t b);

/* rows.c: a one-batch ArrowArrayStream over a built batch. Takes the batch's
 * reference. */
laminar_code lm_rows_stream(const lm_schema* schema, lm_batch* batch,
                            struct ArrowArrayStream* out);

/* handles.c */
void lm_db_detach_stream_subs(laminar_db* db, lm_stream_def* stream);

/* Attach sink `k` (name, stream and sink set; sql may be NULL) to its stream
 * and the catalog, pausing the graph. On failure nothing is attached and k is
 * still the caller's. */
laminar_code lm_db_attach_sink(laminar_db* db, lm_sink_def* k, laminar_error* err);
/* True when a source, stream or sink is named `name`. */
bool lm_db_name_taken(laminar_db* db, const char* name);
/* Close a sink definition (its sink too). */
void lm_db_sink_free(lm_sink_def* k);
void lm_db_free_handles(laminar_db* db);

/* catalog.c helpers shared with view.c and query.c */
const lm_schema* lm_db_lookup_input(void* arg, const char* name, bool* out_is_source);
/* db.c: user-defined functions, db->lock held. Drop `name` (if_exists: no
 * error when there is none); SHOW FUNCTIONS rows (name, arguments, returns,
 * flags, used_by). */
laminar_code lm_db_function_drop(laminar_db* db, const char* name, bool if_exists,
                                 laminar_error* err);
laminar_code lm_db_show_functions(laminar_db* db, struct ArrowArrayStream* out,
                                  laminar_error* err);

/* A malloc'd copy of the statement's text (free with lm_free), NULL on OOM. */
char* lm_db_stmt_text(const char* sql, const lm_stmt* stmt);
/* Apply the WITH (...) options of CREATE STREAM / MATERIALIZED VIEW `stmt`
 * to its bound plan, each read through the option table (options.c, scope
 * stream): allowed_lateness, late_output, max_state_bytes. Errors: LDB-6001
 * unknown key, LDB-6002 ill-typed value, LDB-6003 a window option on a
 * stream without a window, at the value's line:column. */
laminar_code lm_db_stream_options(const lm_stmt* stmt, lm_plan* plan, laminar_error* err);
/* A join without a time bound that WITH (state_ttl = ...) allows (the
 * binder's ijoin.ttl_ms): its time columns are its two sources' watermark
 * columns, its bound [-ttl, +ttl] in their unit. No-op for other plans.
 * Errors: LDB-1010 when an input is no source with a BIGINT or TIMESTAMP
 * watermark column (or their types differ). */
laminar_code lm_db_join_ttl(laminar_db* db, const lm_stmt* stmt, lm_plan* plan,
                            laminar_error* err);
/* An ArrowArrayStream of one batch of string columns: cells[row * ncols + col]. */
laminar_code lm_db_string_table(const char* const* names, int32_t ncols, char** cells,
                                int64_t nrows, struct ArrowArrayStream* out);
/* "a BIGINT, b VARCHAR NOT NULL" (malloc'd), NULL on OOM. */
char* lm_db_format_columns(const lm_schema* s);

/* vars.c: laminar_execute / laminar_query: ${VAR} substitution, then
 * lm_db_execute_locked on the result; errors point into `sql`. */
laminar_code lm_db_execute_sql(laminar_db* db, const char* sql,
                               struct ArrowArrayStream* out_rows, laminar_error* err);

/* catalog.c: CREATE SOURCE / CREATE STREAM / DROP of one statement (the
 * statements a table is made of, table.c). */
laminar_code lm_db_create_source(laminar_db* db, const char* sql, const lm_stmt* stmt,
                                 laminar_error* err);
laminar_code lm_db_create_stream(laminar_db* db, const char* sql, const lm_stmt* stmt,
                                 laminar_error* err);
laminar_code lm_db_drop(laminar_db* db, const lm_stmt* stmt, laminar_error* err);

/* table.c: tables (CREATE TABLE, INSERT, DELETE, DROP TABLE, SHOW TABLES).
 * A table `t` is two catalog objects made by one statement: the source
 * `t$changes` (its changelog: the columns and `_weight`, where writes go,
 * logged as any source's) and the materialized view `t` over it, whose
 * operator keeps one row per key (op/view.h lm_op_table_create). */
laminar_code lm_db_create_table(laminar_db* db, const char* sql, const lm_stmt* stmt,
                                laminar_error* err);
laminar_code lm_db_insert(laminar_db* db, const lm_stmt* stmt, laminar_error* err);
laminar_code lm_db_delete(laminar_db* db, const lm_stmt* stmt, laminar_error* err);
laminar_code lm_db_drop_table(laminar_db* db, const lm_stmt* stmt, laminar_error* err);
laminar_code lm_db_show_tables(laminar_db* db, struct ArrowArrayStream* out,
                               laminar_error* err);
/* The operator of the view of a table fed by its query (stmt: the view's
 * statement, table_fed set; CREATE TABLE ... AS), over the query's output
 * `in`: the declared columns (or the query's) renamed, checked against the
 * query's by position, keyed by the PRIMARY KEY. Errors (err set): LDB-3003
 * a column count that differs, LDB-2001 a type that differs (or NOT NULL
 * over a column that may be NULL), LDB-1003 a key column the table lacks,
 * LDB-2003 a column named _weight, LDB-9001. */
laminar_code lm_db_table_fed_op(const lm_schema* in, const lm_stmt* stmt, lm_op** out,
                                laminar_error* err);
/* LAMINAR_OK unless `name` is a table fed by its query: then LDB-9003 (it
 * takes no writes), `what` naming the refused write, at line:column when
 * line > 0 (a statement's). */
laminar_code lm_db_table_writable(laminar_db* db, const char* name, const char* what,
                                  int32_t line, int32_t column, laminar_error* err);
/* The changelog source of table `name`, NULL when there is no such table
 * (or it is fed by a query: it has none). */
lm_source_def* lm_db_table_source(laminar_db* db, const char* name);
/* lm_plan_table_fn over the catalog (arg: the db): table `name`'s columns,
 * primary key, changelog source and event time, NULL when it is no table. */
const lm_schema* lm_db_table_columns(void* arg, const char* name, lm_plan_table* out);
/* Lookup-join stream s (s->plan.lookup) with a WAL on its root source: the
 * reactor records where the source's messages see the table's changes (rt.h
 * order_hook), so that the replay joins them as the live run did. Call with
 * the graph paused. */
void lm_db_table_order(laminar_db* db, lm_stream_def* s);
/* Point lookup-join stream s's operator at its table's (s->plan.lookup). */
void lm_db_table_attach_lookup(laminar_db* db, lm_stream_def* s);
/* True when stream `s` is a table's. */
bool lm_db_is_table(const lm_stream_def* s);
/* handles.c: push one array to a table's changelog source from the control
 * thread (SQL INSERT/DELETE, laminar_table_*), as a producer for the push;
 * LAMINAR_ERR_STATE while a producer handle is open. Moves the array on
 * success. */
laminar_code lm_db_table_push(laminar_db* db, lm_source_def* def,
                              struct ArrowArray* array, const struct ArrowSchema* schema,
                              laminar_error* err);

/* view.c: materialized views and named sinks in the catalog */
/* True when stream `s` is a materialized view (its chain ends in materialize). */
bool lm_db_is_view(const lm_stream_def* s);
/* A view's own columns (its output without _weight). */
const lm_schema* lm_db_view_columns(const lm_stream_def* s);
/* End a new view's chain with the materialize operator (before
 * lm_stream_def_attach); s->out_schema becomes the view's changelog. */
laminar_code lm_db_view_attach(lm_stream_def* s, const lm_stmt* stmt, laminar_error* err);
/* "stream", "materialized view", ... for messages. */
const char* lm_db_object_word(lm_object_kind kind);
/* CREATE SINK name FROM stream_or_view (no INTO): a named endpoint. */
/* CREATE SINK ... WITH (connector = ...): whether the statement names a
 * connector, and the sink it makes (db/connector.c). */
bool lm_db_sink_has_connector(const lm_stmt* stmt);
/* CREATE SOURCE ... WITH (connector = ...): check the options and start the
 * source's consumer (db->consumers). Stop it (DROP, a failed CREATE);
 * a source without one is a no-op. Stop them all (close). */
laminar_code lm_db_source_connector(laminar_db* db, const lm_stmt* stmt,
                                    lm_source_def* def, laminar_error* err);
void lm_db_source_connector_stop(laminar_db* db, const char* source);
/* The Kafka source (still running) whose dead-letter output (bad_records) is
 * source `name`, or NULL. */
const char* lm_db_dead_letter_user(laminar_db* db, const char* name);
/* A durable checkpoint covers source `source`'s records up to `covered`:
 * its consumer, if any, commits the matching Kafka offsets to its group
 * (monitoring only). Under db->lock. */
void lm_db_source_connector_checkpointed(laminar_db* db, const char* source,
                                         int64_t covered);
void lm_db_connectors_stop(laminar_db* db);
laminar_code lm_db_create_connector_sink(laminar_db* db, const char* sql,
                                         const lm_stmt* stmt, lm_stream_def* stream,
                                         laminar_error* err);
laminar_code lm_db_create_endpoint(laminar_db* db, const char* sql, const lm_stmt* stmt,
                                   lm_stream_def* stream, laminar_error* err);
/* The stream, view, or the input of the sink, called `name` (laminar_subscribe). */
lm_stream_def* lm_db_find_output(laminar_db* db, const char* name);
laminar_code lm_db_show_sinks(laminar_db* db, struct ArrowArrayStream* out,
                              laminar_error* err);

/* query.c: ad-hoc SELECT over a materialized view; EXPLAIN */
laminar_code lm_db_select(laminar_db* db, const lm_stmt* stmt,
                          struct ArrowArrayStream* out, laminar_error* err);
/* The same SELECT's result as one batch (a reference to unref) of
 * *out_schema's columns (free it with lm_schema_free; empty on failure):
 * INSERT INTO ... SELECT. */
laminar_code lm_db_select_rows(laminar_db* db, const lm_stmt* stmt, lm_schema* out_schema,
                               struct lm_batch** out_batch, laminar_error* err);
laminar_code lm_db_explain(laminar_db* db, const lm_stmt* stmt,
                           struct ArrowArrayStream* out, laminar_error* err);

#endif /* LM_DB_INTERNAL_H */
