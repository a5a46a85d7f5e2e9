/*
 * db.c -- the laminar.h entry points for versions, configuration,
 * database lifecycle and the runtime drivers.
 */
#include "db/internal.h"

#include "db/options.h"
#include "sql/binder.h"
#include "store/fs.h"
#include "util/util.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- version -------------------------------------------------------------------- */

const char* laminar_version(void) { return LAMINAR_VERSION; }
int32_t laminar_version_number(void) { return LAMINAR_VERSION_NUMBER; }

/* ---- configuration ------------------------------------------------------------ */

#define DEFAULT_BUFFER_SIZE 65536u
/* A queue's default byte bound: 256 MiB, a few seconds of a fast feed, far
 * below what 65536 batches of 10k rows can hold (issue 20: ~11.6 GB). */
#define LM_DEFAULT_MAX_QUEUE_BYTES (256LL << 20)

laminar_code laminar_config_create(laminar_config** out) {
  if (out == NULL) return LAMINAR_ERR_MISUSE;
  *out = NULL;
  laminar_config* c = lm_calloc(1, sizeof *c);
  if (c == NULL) return LAMINAR_ERR_NOMEM;
  c->magic = LM_MAGIC_CONFIG;
  c->buffer_size = DEFAULT_BUFFER_SIZE;
  c->backpressure = LM_BP_BLOCK;
  c->wait = lm_wait_default();
  c->slow_drop = false;
  c->max_queue_bytes = LM_DEFAULT_MAX_QUEUE_BYTES;
  c->max_state_bytes = 0;
  c->cores = 1;
  c->core_affinity = false;
  lm_durable_config_init(&c->durable);
  *out = c;
  return LAMINAR_OK;
}

/* Copy `value` into *slot (freeing the old text). */
static laminar_code set_text(char** slot, const char* value, laminar_error* err) {
  char* copy = lm_strdup(value);
  if (copy == NULL) return lm_error_set(err, LAMINAR_ERR_NOMEM, "out of memory");
  lm_free(*slot);
  *slot = copy;
  return LAMINAR_OK;
}

/* The option table's choice lists give these enums' values by position. */
_Static_assert(LM_BP_DROP_OLDEST == 1 && LM_BP_REJECT == 2, "backpressure choices");
_Static_assert(LM_WAL_ASYNC == 1 && LM_WAL_SYNC == 2, "wal_mode choices");
_Static_assert(LM_WAL_IO_URING == 1 && LM_WAL_IO_PWRITE == 2, "wal_io choices");
_Static_assert(LM_WAL_DIRECT_OFF == 1, "wal_direct_io choices");

laminar_code laminar_config_set(laminar_config* config, const char* key,
                                const char* value, laminar_error* err) {
  if (config == NULL || config->magic != LM_MAGIC_CONFIG || key == NULL ||
      value == NULL) {
    return lm_error_set(err, LAMINAR_ERR_MISUSE, "laminar_config_set: invalid argument");
  }
  const lm_option* row;
  lm_option_value v;
  LM_TRY(lm_option_parse_text(LAMINAR_SCOPE_DB, key, value, &row, &v, err));
  lm_durable_config* d = &config->durable;
  switch (lm_option_row_id(row)) {
    case LM_OPT_BUFFER_SIZE: config->buffer_size = (uint32_t)v.i; break;
    case LM_OPT_MAX_QUEUE_BYTES: config->max_queue_bytes = v.i; break;
    case LM_OPT_MAX_STATE_BYTES: config->max_state_bytes = v.i; break;
    case LM_OPT_BACKPRESSURE: config->backpressure = (lm_backpressure)v.i; break;
    case LM_OPT_WAIT_STRATEGY: config->wait = v.wait; break;
    case LM_OPT_SLOW_SUBSCRIBER: config->slow_drop = v.i == 1; break;
    case LM_OPT_CORES: config->cores = (int32_t)v.i; break;
    case LM_OPT_CORE_AFFINITY: config->core_affinity = v.i == 1; break;
    case LM_OPT_READ_ONLY: d->read_only = v.i == 1; break;
    case LM_OPT_DATA_DIR: return set_text(&config->data_dir, value, err);
    case LM_OPT_SINK_ROOT: return set_text(&d->sink_root, value, err);
    case LM_OPT_CHECKPOINT_INTERVAL: d->checkpoint_interval_ms = v.i; break;
    case LM_OPT_CHECKPOINT_KEEP: d->keep = (int32_t)v.i; break;
    case LM_OPT_WAL_MODE: d->wal_mode = (lm_wal_mode)v.i; break;
    case LM_OPT_WAL_FLUSH_INTERVAL: d->flush_ms = v.i; break;
    case LM_OPT_WAL_IO: d->io = (lm_wal_io)v.i; break;
    case LM_OPT_WAL_DIRECT_IO: d->direct = (lm_wal_direct)v.i; break;
    case LM_OPT_WAL_RECOVERY: d->strict = v.i == 1; break;
    case LM_OPT_VAR: return lm_vars_set(&config->vars, key + 4, value, err); /* ${NAME} */
    default:
      return lm_error_set(err, LAMINAR_ERR_INTERNAL, "config '%s': not applied", key);
  }
  return LAMINAR_OK;
}

laminar_code laminar_config_add_sink(laminar_config* config, const char* name,
                                     const char* stream, const laminar_sink_callbacks* cb,
                                     laminar_error* err) {
  if (config == NULL || config->magic != LM_MAGIC_CONFIG || name == NULL ||
      stream == NULL || cb == NULL)
    return lm_error_set(err, LAMINAR_ERR_MISUSE,
                        "laminar_config_add_sink: invalid argument");
  lm_config_sink* grown =
      lm_realloc(config->sinks, sizeof *grown * (size_t)(config->nsinks + 1));
  if (grown == NULL) return lm_error_set(err, LAMINAR_ERR_NOMEM, "out of memory");
  config->sinks = grown;
  lm_config_sink* c = &grown[config->nsinks];
  *c = (lm_config_sink){.name = lm_strdup(name), .stream = lm_strdup(stream), .cb = *cb};
  atomic_init(&c->attached, false);
  if (c->name == NULL || c->stream == NULL) {
    lm_free(c->name);
    lm_free(c->stream);
    return lm_error_set(err, LAMINAR_ERR_NOMEM, "out of memory");
  }
  config->nsinks++;
  return LAMINAR_OK;
}

void laminar_config_destroy(laminar_config* config) {
  if (config == NULL || config->magic != LM_MAGIC_CONFIG) return;
  for (int32_t i = 0; i < config->nsinks; i++) {
    lm_config_sink* c = &config->sinks[i];
    if (!atomic_load(&c->attached) && c->cb.release != NULL) c->cb.release(c->cb.user);
    lm_free(c->name);
    lm_free(c->stream);
  }
  lm_free(config->sinks);
  lm_udf_list_free(&config->funcs); /* a database opened with it holds its own */
  lm_vars_free(&config->vars);
  config->magic = LM_MAGIC_DEAD;
  lm_free(config->data_dir);
  lm_free(config->durable.sink_root);
  lm_free(config);
}

/* ---- lifecycle ------------------------------------------------------------------ */

/* Free an opened database whose runtime is stopped (close, or a failed open). */
static void db_free(laminar_db* db) {
  lm_db_connectors_stop(db); /* their threads take db->lock: before it */
  pthread_mutex_lock(&db->lock);
  lm_db_free_handles(db);
  lm_db_catalog_free(db);
  lm_udf_list_free(&db->funcs); /* after the plans: each function's last reference */
  pthread_mutex_unlock(&db->lock);
  lm_rt_destroy(&db->rt);
  pthread_mutex_destroy(&db->lock);
  db->magic = LM_MAGIC_DEAD;
  lm_vars_free(&db->vars);
  /* Last: every file of the directory (WALs, sinks) is closed by now. */
  lm_fs_unlock_dir(db->dir_lock, db->data_dir, db->read_only);
  lm_free(db->data_dir);
  lm_free(db);
}

/* One owner per data directory (laminar.h, laminar_open): the exclusive lock
 * of a durable open, the shared lock of a read-only one. */
static laminar_code lock_data_dir(laminar_db* db, laminar_error* err) {
  long holder;
  db->dir_lock = lm_fs_lock_dir(db->data_dir, db->read_only, &holder);
  if (db->dir_lock >= 0) return LAMINAR_OK;
  if (errno != EWOULDBLOCK)
    return lm_error_set(err, LAMINAR_ERR_IO, "cannot open data_dir '%s': %s",
                        db->data_dir, strerror(errno));
  char who[96];
  if (holder < 0) {
    snprintf(who, sizeof who, "held by read-only opens");
  } else if (holder == 0) {
    snprintf(who, sizeof who, "holder's pid unknown");
  } else {
    snprintf(who, sizeof who, "pid %ld%s", holder,
             holder == (long)getpid() ? ", this process" : "");
  }
  return lm_error_set(
      err, LAMINAR_ERR_LOCKED,
      "the data directory '%s' is in use by another database (%s); close it "
      "first%s",
      db->data_dir, who, db->read_only ? "" : ", or open it with read_only for queries");
}

laminar_code laminar_open(const laminar_config* config, laminar_db** out,
                          laminar_error* err) {
  if (out == NULL)
    return lm_error_set(err, LAMINAR_ERR_MISUSE, "laminar_open: out is NULL");
  *out = NULL;
  if (config != NULL && config->magic != LM_MAGIC_CONFIG) {
    return lm_error_set(err, LAMINAR_ERR_MISUSE, "laminar_open: invalid config handle");
  }
  bool read_only = config != NULL && config->durable.read_only;
  if (read_only && (config->data_dir == NULL || config->nsinks > 0)) {
    return lm_error_set(
        err, LAMINAR_ERR_CONFIG_CONFLICT,
        config->data_dir == NULL
            ? "config 'read_only' needs 'data_dir': the directory to read"
            : "config 'read_only': a read-only database attaches no sinks "
              "(laminar_config_add_sink)");
  }
  if (config != NULL && config->data_dir != NULL && !read_only) {
    if (mkdir(config->data_dir, 0755) != 0 && errno != EEXIST) {
      return lm_error_set(err, LAMINAR_ERR_IO, "cannot create data_dir '%s': %s",
                          config->data_dir, strerror(errno));
    }
  }
  laminar_db* db = lm_calloc(1, sizeof *db);
  if (db == NULL) return lm_error_set(err, LAMINAR_ERR_NOMEM, "out of memory");
  db->dir_lock = -1;
  db->read_only = read_only;
  db->buffer_size = config ? config->buffer_size : DEFAULT_BUFFER_SIZE;
  db->backpressure = config ? config->backpressure : LM_BP_BLOCK;
  db->wait = config ? config->wait : lm_wait_default();
  db->slow_drop = config ? config->slow_drop : false;
  db->max_queue_bytes = config ? config->max_queue_bytes : LM_DEFAULT_MAX_QUEUE_BYTES;
  lm_state_budget_init(&db->state_budget, NULL, config ? config->max_state_bytes : 0,
                       NULL);
  if (config != NULL && config->data_dir != NULL) {
    db->data_dir = lm_strdup(config->data_dir);
    if (db->data_dir == NULL) {
      lm_free(db);
      return lm_error_set(err, LAMINAR_ERR_NOMEM, "out of memory");
    }
  }
  if (pthread_mutex_init(&db->lock, NULL) != 0) {
    lm_free(db->data_dir);
    lm_free(db);
    return lm_error_set(err, LAMINAR_ERR_INTERNAL, "cannot initialize the database lock");
  }
  laminar_code rc = lm_rt_init(&db->rt, &db->graph);
  if (rc == LAMINAR_OK && config != NULL && config->cores > 1) {
    rc = lm_rt_configure(&db->rt, config->cores, config->core_affinity);
    if (rc != LAMINAR_OK) lm_rt_destroy(&db->rt);
  } else if (rc == LAMINAR_OK && config != NULL && config->core_affinity) {
    rc = lm_rt_configure(&db->rt, 1, true);
    if (rc != LAMINAR_OK) lm_rt_destroy(&db->rt);
  }
  if (rc != LAMINAR_OK) {
    pthread_mutex_destroy(&db->lock);
    lm_free(db->data_dir);
    lm_free(db);
    return lm_error_set(err, rc, "cannot initialize the runtime");
  }
  db->magic = LM_MAGIC_DB;
  if (config != NULL && lm_vars_copy(&config->vars, &db->vars) != LAMINAR_OK) {
    db_free(db);
    return lm_error_set(err, LAMINAR_ERR_NOMEM, "out of memory");
  }
  /* The config's functions, before a recovered catalog binds its streams. */
  for (int32_t i = 0; config != NULL && i < config->funcs.n; i++) {
    if (lm_udf_list_add(&db->funcs, config->funcs.items[i], false) != LAMINAR_OK) {
      db_free(db);
      return lm_error_set(err, LAMINAR_ERR_NOMEM, "out of memory");
    }
  }
  lm_durable_config dc;
  lm_durable_config_init(&dc);
  if (config != NULL) dc = config->durable;
  /* A durable or read-only open owns data_dir (shared when read-only) before
   * it reads or writes anything there; until laminar_close (db_free). */
  if (db->data_dir != NULL && (read_only || dc.checkpoint_interval_ms > 0)) {
    rc = lock_data_dir(db, err);
    if (rc != LAMINAR_OK) {
      db_free(db);
      return rc;
    }
  }
  pthread_mutex_lock(&db->lock);
  rc = lm_durable_open(db, db->data_dir, &dc, config ? config->sinks : NULL,
                       config ? config->nsinks : 0, &db->dur, err);
  pthread_mutex_unlock(&db->lock);
  if (rc != LAMINAR_OK) {
    db_free(db); /* nothing of a half-recovered catalog survives */
    return rc;
  }
  *out = db;
  return LAMINAR_OK;
}

static bool db_ok(const laminar_db* db) { return db != NULL && db->magic == LM_MAGIC_DB; }

#define CHECK_DB(db, err)                                                                \
  do {                                                                                   \
    if (!db_ok(db)) {                                                                    \
      return lm_error_set(err, LAMINAR_ERR_MISUSE, "invalid or closed database handle"); \
    }                                                                                    \
  } while (0)

laminar_code laminar_close_v2(laminar_db* db, laminar_error* err) {
  if (db == NULL) return LAMINAR_OK;
  if (!db_ok(db))
    return lm_error_set(err, LAMINAR_ERR_MISUSE,
                        "laminar_close: invalid or closed database handle");
  lm_db_connectors_stop(db); /* they push: stopped before the rest */
  lm_durable_close(db->dur); /* its thread takes db->lock: stopped first */
  db->dur = NULL;
  laminar_code rc = lm_rt_stop(&db->rt, err);
  db_free(db);
  return rc;
}

laminar_code laminar_close(laminar_db* db) { return laminar_close_v2(db, NULL); }

laminar_code laminar_execute(laminar_db* db, const char* sql, laminar_error* err) {
  CHECK_DB(db, err);
  if (sql == NULL)
    return lm_error_set(err, LAMINAR_ERR_MISUSE, "laminar_execute: sql is NULL");
  pthread_mutex_lock(&db->lock);
  laminar_code rc = lm_db_execute_sql(db, sql, NULL, err);
  pthread_mutex_unlock(&db->lock);
  return rc;
}

laminar_code laminar_query(laminar_db* db, const char* sql, struct ArrowArrayStream* out,
                           laminar_error* err) {
  CHECK_DB(db, err);
  if (sql == NULL || out == NULL) {
    return lm_error_set(err, LAMINAR_ERR_MISUSE, "laminar_query: NULL argument");
  }
  out->release = NULL;
  pthread_mutex_lock(&db->lock);
  laminar_code rc = lm_db_execute_sql(db, sql, out, err);
  pthread_mutex_unlock(&db->lock);
  if (rc == LAMINAR_OK && out->release == NULL) {
    return lm_error_set(
        err, LAMINAR_ERR_SQL_UNSUPPORTED,
        "laminar_query: the statement returns no rows (use laminar_execute)");
  }
  return rc;
}

laminar_code laminar_schema(laminar_db* db, const char* name, struct ArrowSchema* out,
                            laminar_error* err) {
  CHECK_DB(db, err);
  if (name == NULL || out == NULL) {
    return lm_error_set(err, LAMINAR_ERR_MISUSE, "laminar_schema: NULL argument");
  }
  pthread_mutex_lock(&db->lock);
  const lm_schema* schema = NULL;
  lm_source_def* src = lm_db_find_source(db, name);
  lm_stream_def* stream =
      src ? NULL : lm_db_find_output(db, name); /* stream, view, sink */
  if (src != NULL) schema = &src->schema;
  if (stream != NULL) schema = &stream->out_schema;
  laminar_code rc;
  if (schema == NULL) {
    rc = lm_error_set(err, LAMINAR_ERR_SQL_UNKNOWN_OBJECT,
                      "no source, stream, materialized view or sink named '%s'", name);
    lm_error_object(err, name, NULL);
  } else {
    rc = lm_arrow_schema_export(schema, out);
    if (rc != LAMINAR_OK) lm_error_set(err, rc, "cannot export schema of '%s'", name);
  }
  pthread_mutex_unlock(&db->lock);
  return rc;
}

laminar_code laminar_start(laminar_db* db, laminar_error* err) {
  CHECK_DB(db, err);
  pthread_mutex_lock(&db->lock);
  laminar_code rc = lm_rt_start(&db->rt, err);
  pthread_mutex_unlock(&db->lock);
  return rc;
}

laminar_code laminar_stop(laminar_db* db, laminar_error* err) {
  CHECK_DB(db, err);
  pthread_mutex_lock(&db->lock);
  laminar_code rc = lm_rt_stop(&db->rt, err);
  pthread_mutex_unlock(&db->lock);
  return rc;
}

laminar_code laminar_run_until_idle(laminar_db* db, laminar_error* err) {
  CHECK_DB(db, err);
  pthread_mutex_lock(&db->lock);
  laminar_code rc = lm_rt_run_until_idle(&db->rt, err);
  pthread_mutex_unlock(&db->lock);
  return rc;
}

laminar_code laminar_checkpoint(laminar_db* db, laminar_error* err) {
  CHECK_DB(db, err);
  pthread_mutex_lock(&db->lock);
  laminar_code rc = lm_durable_checkpoint(db, err);
  pthread_mutex_unlock(&db->lock);
  return rc;
}

laminar_code laminar_durability_report(laminar_db* db, char* buf, size_t cap,
                                       laminar_error* err) {
  CHECK_DB(db, err);
  if (buf == NULL || cap == 0)
    return lm_error_set(err, LAMINAR_ERR_MISUSE, "laminar_durability_report: no buffer");
  buf[0] = '\0';
  pthread_mutex_lock(&db->lock);
  if (db->dur != NULL) lm_durable_report(db->dur, buf, cap);
  pthread_mutex_unlock(&db->lock);
  return LAMINAR_OK;
}

laminar_code laminar_sink_register(laminar_db* db, const char* name, const char* stream,
                                   const laminar_sink_callbacks* callbacks,
                                   laminar_error* err) {
  CHECK_DB(db, err);
  if (name == NULL || stream == NULL || callbacks == NULL)
    return lm_error_set(err, LAMINAR_ERR_MISUSE, "laminar_sink_register: NULL argument");
  pthread_mutex_lock(&db->lock);
  laminar_code rc = lm_durable_register_sink(db, name, stream, callbacks, err);
  pthread_mutex_unlock(&db->lock);
  return rc;
}

laminar_code laminar_stream_late_rows(laminar_db* db, const char* name, int64_t* out,
                                      laminar_error* err) {
  CHECK_DB(db, err);
  if (name == NULL || out == NULL) {
    return lm_error_set(err, LAMINAR_ERR_MISUSE,
                        "laminar_stream_late_rows: NULL argument");
  }
  pthread_mutex_lock(&db->lock);
  lm_stream_def* s = lm_db_find_stream(db, name);
  laminar_code rc = LAMINAR_OK;
  if (s == NULL) {
    rc = lm_error_set(err, LAMINAR_ERR_SQL_UNKNOWN_OBJECT, "no stream named '%s'", name);
    lm_error_object(err, name, NULL);
  } else {
    *out = (int64_t)atomic_load_explicit(&s->late_rows, memory_order_relaxed);
  }
  pthread_mutex_unlock(&db->lock);
  return rc;
}

/* ---- user-defined functions ------------------------------------------------------ */

/* The first stream or view whose plan calls function `name`, or NULL. */
static const lm_stream_def* function_user(const laminar_db* db, const char* name) {
  for (int32_t i = 0; i < db->graph.nstreams; i++) {
    const lm_stream_def* s = db->graph.streams[i];
    if (lm_udf_list_find(&s->plan.udfs, name) != NULL) return s;
  }
  return NULL;
}

static laminar_code function_in_use(const lm_stream_def* s, const char* name,
                                    const char* what, laminar_error* err) {
  lm_error_set(err, LAMINAR_ERR_SQL_DEPENDENCY,
               "cannot %s function '%s': %s '%s' uses it (drop it first)", what, name,
               lm_db_is_view(s) ? "view" : "stream", s->name);
  lm_error_object(err, s->name, NULL);
  return LAMINAR_ERR_SQL_DEPENDENCY;
}

/* Whether SQL resolves `name` before user-defined functions: a built-in
 * scalar, an aggregate, a window function, coalesce or nullif. */
static bool builtin_function(const char* name) {
  lm_ast_expr call = {.kind = LM_AST_FUNCTION, .fname = (char*)name};
  return lm_func_find(name) != NULL || lm_bind_is_aggregate_call(&call) ||
         lm_bind_is_window_call(&call) || lm_streq_nocase(name, "coalesce") ||
         lm_streq_nocase(name, "nullif");
}

static laminar_code register_udf(laminar_db* db, const char* name, lm_udf* f,
                                 laminar_error* err);

/* A new function from laminar_function_register()'s arguments, its name not a
 * built-in's. On failure `user` stays the caller's. */
static laminar_code new_function(const char* name, const char* const* arg_types,
                                 int32_t nargs, const char* return_type,
                                 laminar_function_callback fn, void* user,
                                 void (*destroy)(void* user), uint32_t flags,
                                 lm_udf** out, laminar_error* err) {
  LM_TRY(lm_udf_create(name, arg_types, nargs, return_type, fn, user, destroy, flags, out,
                       err));
  if (builtin_function(name)) {
    lm_udf_set_destroy(*out, NULL); /* `user` stays the caller's */
    lm_udf_unref(*out);
    *out = NULL;
    return lm_error_set(err, LAMINAR_ERR_SQL_DUPLICATE_OBJECT,
                        "cannot register function '%s': a built-in function has that "
                        "name",
                        name);
  }
  return LAMINAR_OK;
}

laminar_code laminar_config_function_register(laminar_config* config, const char* name,
                                              const char* const* arg_types, int32_t nargs,
                                              const char* return_type,
                                              laminar_function_callback fn, void* user,
                                              void (*destroy)(void* user), uint32_t flags,
                                              laminar_error* err) {
  if (config == NULL || config->magic != LM_MAGIC_CONFIG) {
    return lm_error_set(err, LAMINAR_ERR_MISUSE,
                        "laminar_config_function_register: invalid config handle");
  }
  lm_udf* f;
  LM_TRY(new_function(name, arg_types, nargs, return_type, fn, user, destroy, flags, &f,
                      err));
  laminar_code rc = lm_udf_list_add(&config->funcs, f, true);
  if (rc != LAMINAR_OK) {
    lm_udf_set_destroy(f, NULL);
    rc = lm_error_set(err, rc, "function '%s': out of memory", name);
  }
  lm_udf_unref(f); /* the config holds it now, or nothing does */
  return rc;
}

laminar_code laminar_function_register(laminar_db* db, const char* name,
                                       const char* const* arg_types, int32_t nargs,
                                       const char* return_type,
                                       laminar_function_callback fn, void* user,
                                       void (*destroy)(void* user), uint32_t flags,
                                       laminar_error* err) {
  CHECK_DB(db, err);
  lm_udf* f;
  LM_TRY(new_function(name, arg_types, nargs, return_type, fn, user, destroy, flags, &f,
                      err));
  return register_udf(db, name, f, err);
}

/* ---- aggregate functions --------------------------------------------------------- */

/* A new aggregate from laminar_aggregate_register()'s arguments, its name not
 * a built-in's. On failure `user` stays the caller's. */
static laminar_code new_aggregate(const char* name, const char* const* arg_types,
                                  int32_t nargs, const char* return_type,
                                  const lm_udaf_callbacks* cb, void* user,
                                  void (*destroy)(void* user), uint32_t flags,
                                  lm_udf** out, laminar_error* err) {
  LM_TRY(lm_udaf_create(name, arg_types, nargs, return_type, cb, user, destroy, flags,
                        out, err));
  if (builtin_function(name)) {
    lm_udf_set_destroy(*out, NULL);
    lm_udf_unref(*out);
    *out = NULL;
    return lm_error_set(err, LAMINAR_ERR_SQL_DUPLICATE_OBJECT,
                        "cannot register aggregate '%s': a built-in function has that "
                        "name",
                        name);
  }
  return LAMINAR_OK;
}

/* Register f (a new reference) in db's registry unless a stream uses the name. */
static laminar_code register_udf(laminar_db* db, const char* name, lm_udf* f,
                                 laminar_error* err) {
  pthread_mutex_lock(&db->lock);
  const lm_stream_def* user_of = function_user(db, name);
  laminar_code rc = LAMINAR_OK;
  if (user_of != NULL) {
    rc = function_in_use(user_of, name, "replace", err);
  } else {
    rc = lm_udf_list_add(&db->funcs, f, true);
    if (rc != LAMINAR_OK)
      rc = lm_error_set(err, rc, "function '%s': out of memory", name);
  }
  pthread_mutex_unlock(&db->lock);
  if (rc != LAMINAR_OK) lm_udf_set_destroy(f, NULL); /* `user` stays the caller's */
  lm_udf_unref(f); /* the registry holds it now, or nothing does */
  return rc;
}

laminar_code laminar_aggregate_register(
    laminar_db* db, const char* name, const char* const* arg_types, int32_t nargs,
    const char* return_type, int64_t state_size, laminar_aggregate_init init,
    laminar_aggregate_update update, laminar_aggregate_update retract,
    laminar_aggregate_merge merge, laminar_aggregate_finalize finalize,
    laminar_aggregate_serialize serialize, laminar_aggregate_deserialize deserialize,
    laminar_aggregate_destroy_state destroy_state, void* user,
    void (*destroy)(void* user), uint32_t flags, laminar_error* err) {
  CHECK_DB(db, err);
  lm_udaf_callbacks cb = {state_size, init,      update,      retract,      merge,
                          finalize,   serialize, deserialize, destroy_state};
  lm_udf* f;
  LM_TRY(new_aggregate(name, arg_types, nargs, return_type, &cb, user, destroy, flags, &f,
                       err));
  return register_udf(db, name, f, err);
}

laminar_code laminar_config_aggregate_register(
    laminar_config* config, const char* name, const char* const* arg_types, int32_t nargs,
    const char* return_type, int64_t state_size, laminar_aggregate_init init,
    laminar_aggregate_update update, laminar_aggregate_update retract,
    laminar_aggregate_merge merge, laminar_aggregate_finalize finalize,
    laminar_aggregate_serialize serialize, laminar_aggregate_deserialize deserialize,
    laminar_aggregate_destroy_state destroy_state, void* user,
    void (*destroy)(void* user), uint32_t flags, laminar_error* err) {
  if (config == NULL || config->magic != LM_MAGIC_CONFIG) {
    return lm_error_set(err, LAMINAR_ERR_MISUSE,
                        "laminar_config_aggregate_register: invalid config handle");
  }
  lm_udaf_callbacks cb = {state_size, init,      update,      retract,      merge,
                          finalize,   serialize, deserialize, destroy_state};
  lm_udf* f;
  LM_TRY(new_aggregate(name, arg_types, nargs, return_type, &cb, user, destroy, flags, &f,
                       err));
  laminar_code rc = lm_udf_list_add(&config->funcs, f, true);
  if (rc != LAMINAR_OK) {
    lm_udf_set_destroy(f, NULL);
    rc = lm_error_set(err, rc, "aggregate '%s': out of memory", name);
  }
  lm_udf_unref(f);
  return rc;
}

laminar_code lm_db_function_drop(laminar_db* db, const char* name, bool if_exists,
                                 laminar_error* err) {
  const lm_stream_def* user_of = function_user(db, name);
  if (user_of != NULL) return function_in_use(user_of, name, "drop", err);
  if (!lm_udf_list_remove(&db->funcs, name) && !if_exists) {
    return lm_error_set(err, LAMINAR_ERR_SQL_UNKNOWN_FUNCTION,
                        "no user-defined function named '%s'", name);
  }
  return LAMINAR_OK;
}

laminar_code laminar_function_drop(laminar_db* db, const char* name, laminar_error* err) {
  CHECK_DB(db, err);
  if (name == NULL)
    return lm_error_set(err, LAMINAR_ERR_MISUSE, "laminar_function_drop: name is NULL");
  pthread_mutex_lock(&db->lock);
  laminar_code rc = lm_db_function_drop(db, name, false, err);
  pthread_mutex_unlock(&db->lock);
  return rc;
}

laminar_code lm_db_show_functions(laminar_db* db, struct ArrowArrayStream* out,
                                  laminar_error* err) {
  if (out == NULL) return LAMINAR_OK;
  int32_t n = db->funcs.n;
  char** cells = lm_calloc((size_t)(n * 5 + 1), sizeof(char*));
  char* text = lm_calloc((size_t)(n + 1), 512); /* arguments | returns | flags */
  laminar_code rc = cells == NULL || text == NULL ? LAMINAR_ERR_NOMEM : LAMINAR_OK;
  for (int32_t i = 0; rc == LAMINAR_OK && i < n; i++) {
    const lm_udf* f = db->funcs.items[i];
    char* args = text + (size_t)i * 512;
    char* returns = args + 320;
    char* flags = args + 400;
    lm_udf_describe(f, args, 320, returns, 80, flags, 112);
    const lm_stream_def* user_of = function_user(db, lm_udf_name(f));
    cells[i * 5] = (char*)lm_udf_name(f);
    cells[i * 5 + 1] = args;
    cells[i * 5 + 2] = returns;
    cells[i * 5 + 3] = flags;
    cells[i * 5 + 4] = user_of != NULL ? user_of->name : "";
  }
  static const char* const names[] = {"name", "arguments", "returns", "flags", "used_by"};
  if (rc == LAMINAR_OK) rc = lm_db_string_table(names, 5, cells, n, out);
  lm_free(text);
  lm_free(cells);
  if (rc != LAMINAR_OK) return lm_error_set(err, rc, "out of memory");
  return LAMINAR_OK;
}
