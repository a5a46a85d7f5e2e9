/*
 * catalog.c -- executing SQL statements against the catalog: CREATE SOURCE,
 * CREATE STREAM, DROP, SHOW, DESCRIBE. Runs under db->lock; graph changes
 * pause the reactor for the edit (rt.h).
 */
#include "db/internal.h"

#include "db/options.h"
#include "sink/file.h"
#include "sink/sink.h"
#include "sql/binder.h"
#include "sql/sql.h"
#include "util/util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

lm_source_def* lm_db_find_source(laminar_db* db, const char* name) {
  for (int32_t i = 0; i < db->graph.nsources; i++) {
    if (lm_streq_nocase(db->graph.sources[i]->name, name)) return db->graph.sources[i];
  }
  return NULL;
}

lm_stream_def* lm_db_find_stream(laminar_db* db, const char* name) {
  for (int32_t i = 0; i < db->graph.nstreams; i++) {
    if (lm_streq_nocase(db->graph.streams[i]->name, name)) return db->graph.streams[i];
  }
  return NULL;
}

lm_source_def* lm_db_root_source(laminar_db* db, const lm_stream_def* s) {
  for (int32_t depth = 0; s != NULL && depth <= db->graph.nstreams; depth++) {
    if (s->plan.input_is_source) return lm_db_find_source(db, s->plan.input);
    s = lm_db_find_stream(db, s->plan.input);
  }
  return NULL;
}

lm_source_def* lm_db_branch_root(laminar_db* db, const lm_stream_def* s, int32_t b) {
  const lm_plan_branch* br = &s->plan.branches[b];
  if (br->input_is_source) return lm_db_find_source(db, br->input);
  return lm_db_root_source(db, lm_db_find_stream(db, br->input));
}

const lm_schema* lm_db_lookup_input(void* arg, const char* name, bool* out_is_source) {
  laminar_db* db = arg;
  lm_source_def* src = lm_db_find_source(db, name);
  if (src != NULL) {
    *out_is_source = true;
    return &src->schema;
  }
  lm_stream_def* s = lm_db_find_stream(db, name);
  if (s != NULL) {
    *out_is_source = false;
    return &s->out_schema;
  }
  return NULL;
}

static laminar_code fail_at(laminar_error* err, laminar_code code, int32_t line,
                            int32_t col, const char* object, const char* msg) {
  lm_error_set(err, code, "%s at line %d, column %d", msg, (int)line, (int)col);
  lm_error_at(err, line, col);
  lm_error_object(err, object, NULL);
  return code;
}

char* lm_db_stmt_text(const char* sql, const lm_stmt* stmt) {
  char* t = lm_malloc(stmt->text_len + 1);
  if (t == NULL) return NULL;
  memcpy(t, sql + stmt->text_offset, stmt->text_len);
  t[stmt->text_len] = '\0';
  return t;
}

static lm_sink_def* find_sink(laminar_db* db, const char* name) {
  for (int32_t i = 0; i < db->nsinks; i++)
    if (lm_streq_nocase(db->sinks[i]->name, name)) return db->sinks[i];
  return NULL;
}

/* The CREATE text of an existing object of that name, or NULL. */
static const char* existing_sql(laminar_db* db, const char* name) {
  lm_source_def* src = lm_db_find_source(db, name);
  if (src != NULL) return src->sql;
  lm_stream_def* st = lm_db_find_stream(db, name);
  if (st != NULL) return st->sql != NULL ? st->sql : ""; /* "": a late side output */
  lm_sink_def* sk = find_sink(db, name);
  if (sk == NULL) return NULL;
  return sk->sql != NULL ? sk->sql : ""; /* a connector sink: no statement to match */
}

bool lm_db_name_taken(laminar_db* db, const char* name) {
  return existing_sql(db, name) != NULL;
}

static laminar_code check_new_name(laminar_db* db, const char* sql, const lm_stmt* stmt,
                                   laminar_error* err, bool* out_skip) {
  *out_skip = false;
  const char* have = existing_sql(db, stmt->name);
  if (have == NULL) return LAMINAR_OK;
  /* IF NOT EXISTS, or the very same statement again (re-running the DDL of a
   * durable database after it recovered its catalog): nothing to do. */
  if (stmt->if_not_exists ||
      (strlen(have) == stmt->text_len &&
       memcmp(have, sql + stmt->text_offset, stmt->text_len) == 0)) {
    *out_skip = true;
    return LAMINAR_OK;
  }
  char msg[256];
  snprintf(msg, sizeof msg, "an object named '%s' already exists", stmt->name);
  return fail_at(err, LAMINAR_ERR_SQL_DUPLICATE_OBJECT, stmt->name_line,
                 stmt->name_column, stmt->name, msg);
}

static laminar_code append_ptr(void*** arr, int32_t* n, void* p) {
  void** grown = lm_realloc(*arr, sizeof(void*) * (size_t)(*n + 1));
  if (grown == NULL) return LAMINAR_ERR_NOMEM;
  grown[(*n)++] = p;
  *arr = grown;
  return LAMINAR_OK;
}

/* ---- CREATE SOURCE ------------------------------------------------------------------ */

static laminar_code create_source(laminar_db* db, const char* sql, const lm_stmt* stmt,
                                  laminar_error* err) {
  bool skip;
  LM_TRY(check_new_name(db, sql, stmt, err, &skip));
  if (skip) return LAMINAR_OK;
  char msg[256];
  uint32_t capacity = db->buffer_size;
  lm_backpressure backpressure = db->backpressure;
  lm_wait wait = db->wait;
  int64_t max_queue_bytes = db->max_queue_bytes;
  const lm_ast_expr* bp_value = NULL; /* where backpressure was set, for errors */
  char wal_mode[16] = {0};
  /* The watermark: a WATERMARK FOR clause or WITH (watermark = 'col'). */
  lm_stmt wm = *stmt;
  char wm_name[128] = {0};
  int64_t lateness = 0;
  int64_t idle_timeout = 0;
  char align_group[128] = {0};
  int64_t max_drift = -1;
  const lm_ast_expr* align_value = NULL; /* where alignment was set, for errors */
  const lm_ast_expr* drift_value = NULL;
  char wm_key[128] = {0};
  const lm_ast_expr* key_value = NULL; /* where watermark_key was set, for errors */
  for (size_t i = 0; i < stmt->noptions; i++) {
    const lm_ast_option* o = &stmt->options[i];
    const lm_ast_expr* v = o->value;
    const lm_option* row;
    lm_option_value val;
    LM_TRY(lm_option_parse_sql(LAMINAR_SCOPE_SOURCE, stmt->name, o, &row, &val, err));
    switch (lm_option_row_id(row)) {
      case LM_OPT_ALLOWED_LATENESS: lateness = val.i; break;
      case LM_OPT_WATERMARK:
        /* watermark = 'col': the same as WATERMARK FOR col (the table bounds
         * the name's length below sizeof wm_name). */
        if (wm.has_watermark) {
          snprintf(msg, sizeof msg,
                   "source '%s': the watermark is set twice (WATERMARK FOR and WITH "
                   "(watermark = ...))",
                   stmt->name);
          return fail_at(err, LAMINAR_ERR_CONFIG_CONFLICT, v->line, v->column, stmt->name,
                         msg);
        }
        snprintf(wm_name, sizeof wm_name, "%.*s", (int)val.len, val.text);
        wm.has_watermark = true;
        wm.watermark_column = wm_name;
        wm.watermark_delay_ms = 0;
        wm.wm_line = v->line;
        wm.wm_column = v->column;
        break;
      case LM_OPT_WAL_MODE:
      case LM_OPT_CHECKPOINT_INTERVAL:
        if (db->dur == NULL) {
          snprintf(msg, sizeof msg,
                   "source option '%s' needs durability: open the database "
                   "with data_dir and checkpoint_interval",
                   o->key);
          return fail_at(err, LAMINAR_ERR_CONFIG_CONFLICT, v->line, v->column, stmt->name,
                         msg);
        }
        if (lm_option_row_id(row) == LM_OPT_WAL_MODE) {
          snprintf(wal_mode, sizeof wal_mode, "%.*s", (int)v->slen,
                   v->s); /* an enum: short */
        } else {
          lm_durable_lower_interval(db->dur, val.i);
        }
        break;
      case LM_OPT_BACKPRESSURE:
        backpressure = (lm_backpressure)val.i;
        bp_value = v;
        break;
      case LM_OPT_WAIT_STRATEGY: wait = val.wait; break;
      case LM_OPT_MAX_QUEUE_BYTES: max_queue_bytes = val.i; break;
      case LM_OPT_BUFFER_SIZE: capacity = (uint32_t)val.i; break;
      case LM_OPT_FORMAT:
      case LM_OPT_CONNECTOR:
      case LM_OPT_BOOTSTRAP_SERVERS:
      case LM_OPT_TOPIC:
      case LM_OPT_STARTUP:
      case LM_OPT_GROUP_ID:
      case LM_OPT_EVENT_TIME:
      case LM_OPT_TIMEOUT:
      case LM_OPT_PARTITION_DISCOVERY:
      case LM_OPT_TOPIC_PATTERN:
      case LM_OPT_BAD_RECORDS:
      case LM_OPT_AVRO_SCHEMA:
      case LM_OPT_AVRO_CONFLUENT_WIRE:
      case LM_OPT_KAFKA: break; /* a connector's: lm_db_source_connector */
      case LM_OPT_IDLE_TIMEOUT: idle_timeout = val.i > 0 ? val.i : 0; break;
      case LM_OPT_ALIGNMENT_GROUP:
        snprintf(align_group, sizeof align_group, "%.*s", (int)val.len, val.text);
        align_value = v;
        break;
      case LM_OPT_MAX_DRIFT:
        max_drift = val.i;
        drift_value = v;
        break;
      case LM_OPT_WATERMARK_KEY:
        snprintf(wm_key, sizeof wm_key, "%.*s", (int)val.len, val.text);
        key_value = v;
        break;
      default:
        return lm_error_set(err, LAMINAR_ERR_INTERNAL, "source option '%s'", o->key);
    }
  }
  /* Alignment: a group and its drift together, and a policy that holds. */
  if ((align_value != NULL) != (drift_value != NULL) ||
      (align_value != NULL && backpressure == LM_BP_DROP_OLDEST)) {
    const lm_ast_expr* at = align_value != NULL ? align_value : drift_value;
    snprintf(msg, sizeof msg,
             align_value != NULL && drift_value != NULL
                 ? "source '%s': alignment_group holds a source back by back-pressure: "
                   "backpressure 'drop_oldest' cannot go with it (use block or reject)"
                 : "source '%s': alignment_group and max_drift go together",
             stmt->name);
    return fail_at(err, LAMINAR_ERR_CONFIG_CONFLICT, at->line, at->column, stmt->name,
                   msg);
  }
  lm_source_def* def = lm_calloc(1, sizeof *def);
  if (def == NULL) return lm_error_set(err, LAMINAR_ERR_NOMEM, "out of memory");
  atomic_init(&def->refs, 1);
  atomic_init(&def->dropped, false);
  def->wm_col = -1;
  def->wm_key_col = -1;
  def->lateness_ms = lateness;
  def->idle_timeout_ms = idle_timeout;
  def->max_drift_ms = max_drift;
  if (align_value != NULL) def->align_group = lm_strdup(align_group);
  stmt = &wm;
  def->max_ts_ms = INT64_MIN;
  def->watermark_ms = INT64_MIN;
  lm_schema_init_empty(&def->schema);
  laminar_code rc = LAMINAR_OK;
  def->name = lm_strdup(stmt->name);
  def->sql = lm_db_stmt_text(sql, stmt);
  if (def->name == NULL || def->sql == NULL) goto nomem;
  if (align_value != NULL && def->align_group == NULL) goto nomem;
  def->fingerprint = lm_durable_fingerprint(0, def->sql);
  for (size_t i = 0; i < stmt->ncolumns; i++) {
    const lm_ast_column_def* c = &stmt->columns[i];
    if (lm_schema_find(&def->schema, c->name) >= 0) {
      snprintf(msg, sizeof msg, "source '%s': duplicate column '%s'", stmt->name,
               c->name);
      rc = fail_at(err, LAMINAR_ERR_SCHEMA_INVALID, c->line, c->column, stmt->name, msg);
      lm_error_object(err, stmt->name, c->name);
      goto fail;
    }
    if (lm_schema_add(&def->schema, c->name, lm_bind_sql_type(c->type), c->not_null) !=
        0) {
      goto nomem;
    }
  }
  if (stmt->ncolumns == 0) {
    rc = fail_at(err, LAMINAR_ERR_SCHEMA_INVALID, stmt->line, stmt->column, stmt->name,
                 "a source needs at least one column");
    goto fail;
  }
  if (stmt->has_watermark) {
    int32_t idx = lm_schema_find(&def->schema, stmt->watermark_column);
    if (idx < 0) {
      snprintf(msg, sizeof msg, "source '%s': WATERMARK FOR names no column '%s'",
               stmt->name, stmt->watermark_column);
      rc = fail_at(err, LAMINAR_ERR_SQL_UNKNOWN_COLUMN, stmt->wm_line, stmt->wm_column,
                   stmt->name, msg);
      lm_error_object(err, stmt->name, stmt->watermark_column);
      goto fail;
    }
    lm_type t = def->schema.fields[idx].type;
    if (t != LM_TYPE_INT64 && t != LM_TYPE_TIMESTAMP && t != LM_TYPE_INT32) {
      snprintf(
          msg, sizeof msg,
          "source '%s': watermark column '%s' must be BIGINT (epoch ms) or TIMESTAMP, "
          "got %s",
          stmt->name, stmt->watermark_column, lm_type_name(t));
      rc = fail_at(err, LAMINAR_ERR_TYPE_MISMATCH, stmt->wm_line, stmt->wm_column,
                   stmt->name, msg);
      lm_error_object(err, stmt->name, stmt->watermark_column);
      goto fail;
    }
    if (stmt->watermark_delay_ms < 0) {
      rc = fail_at(err, LAMINAR_ERR_SQL_SYNTAX, stmt->wm_line, stmt->wm_column,
                   stmt->name, "the watermark delay must not be negative");
      goto fail;
    }
    def->wm_col = idx;
    def->wm_delay_ms = stmt->watermark_delay_ms;
  }
  if (key_value != NULL) {
    /* Per-key watermarks: a column of the source, a key type, and event time
     * to take each key's watermark from. */
    int32_t idx = lm_schema_find(&def->schema, wm_key);
    if (idx < 0) {
      snprintf(msg, sizeof msg, "source '%s': watermark_key names no column '%s'",
               stmt->name, wm_key);
      rc = fail_at(err, LAMINAR_ERR_SQL_UNKNOWN_COLUMN, key_value->line,
                   key_value->column, stmt->name, msg);
      lm_error_object(err, stmt->name, wm_key);
      goto fail;
    }
    lm_type t = def->schema.fields[idx].type;
    if (!stmt->has_watermark || idx == def->wm_col || t == LM_TYPE_DOUBLE) {
      snprintf(msg, sizeof msg,
               !stmt->has_watermark
                   ? "source '%s': watermark_key '%s' needs a watermark column "
                     "(WATERMARK FOR col or WITH (watermark = 'col'))"
               : idx == def->wm_col
                   ? "source '%s': watermark_key '%s' is the watermark column itself"
                   : "source '%s': watermark_key '%s' must be a column of whole "
                     "numbers, text, a boolean or a timestamp, not DOUBLE",
               stmt->name, wm_key);
      rc = fail_at(err, LAMINAR_ERR_CONFIG_CONFLICT, key_value->line, key_value->column,
                   stmt->name, msg);
      lm_error_object(err, stmt->name, wm_key);
      goto fail;
    }
    def->wm_key_col = idx;
  }
  rc = lm_source_def_init_queue(def, capacity, backpressure, wait);
  def->max_queue_bytes = max_queue_bytes;
  if (rc == LAMINAR_ERR_NOMEM) goto nomem;
  if (rc != LAMINAR_OK) {
    rc = lm_error_set(err, rc, "source '%s': cannot set up its queue", stmt->name);
    goto fail;
  }
  rc = lm_durable_source_created(db, def, wal_mode[0] ? wal_mode : NULL, err);
  if (rc != LAMINAR_OK) goto fail;
  if (def->wal != NULL && backpressure == LM_BP_DROP_OLDEST) {
    /* A dropped message is in the WAL: recovery would replay what the live run
     * never processed. */
    int32_t line = bp_value != NULL ? bp_value->line : stmt->line;
    int32_t col = bp_value != NULL ? bp_value->column : stmt->column;
    rc = fail_at(
        err, LAMINAR_ERR_CONFIG_CONFLICT, line, col, stmt->name,
        "backpressure 'drop_oldest' cannot go with a WAL (wal_mode async or sync): "
        "use 'block' or 'reject', or wal_mode 'none' for this source");
    goto fail;
  }
  /* A connector's consumer (db/connector.c): checked against its system and
   * started now; it feeds the source once this statement is done. */
  if (lm_db_sink_has_connector(stmt)) {
    rc = lm_db_source_connector(db, stmt, def, err);
    if (rc != LAMINAR_OK) goto fail;
  }
  lm_rt_pause(&db->rt);
  rc = append_ptr((void***)&db->graph.sources, &db->graph.nsources, def);
  lm_rt_resume(&db->rt);
  if (rc != LAMINAR_OK) {
    lm_db_source_connector_stop(db, stmt->name);
    goto nomem;
  }
  return lm_durable_catalog_changed(db, err);
nomem:
  rc = lm_error_set(err, LAMINAR_ERR_NOMEM, "out of memory");
fail:
  lm_source_def_unref(def);
  return rc;
}

/* ---- CREATE STREAM ------------------------------------------------------------------- */

/* What branch b of s's plan reads: an lm_source_def* or lm_stream_def*
 * (NULL if gone), and *wm its watermark. */
static void* branch_input(laminar_db* db, const lm_stream_def* s, int32_t b,
                          int64_t* wm) {
  const lm_plan_branch* br = &s->plan.branches[b];
  if (br->input_is_source) {
    lm_source_def* src = lm_db_find_source(db, br->input);
    if (wm != NULL) *wm = src != NULL ? src->watermark_ms : INT64_MIN;
    return src;
  }
  lm_stream_def* up = lm_db_find_stream(db, br->input);
  if (wm != NULL) *wm = up != NULL ? up->watermark_ms : INT64_MIN;
  return up;
}

/* The reader list of what branch b of s reads, if that input is the first
 * branch's to read it (each input lists s once). False otherwise. */
static bool branch_reader_list(laminar_db* db, const lm_stream_def* s, int32_t b,
                               lm_stream_def**** out, int32_t** n) {
  void* in = branch_input(db, s, b, NULL);
  if (in == NULL) return false;
  for (int32_t k = 0; k < b; k++) {
    if (branch_input(db, s, k, NULL) == in) return false;
  }
  if (s->plan.branches[b].input_is_source) {
    *out = &((lm_source_def*)in)->readers;
    *n = &((lm_source_def*)in)->nreaders;
  } else {
    *out = &((lm_stream_def*)in)->readers;
    *n = &((lm_stream_def*)in)->nreaders;
  }
  return true;
}

/* Add (or remove) s as a reader of each input it reads, once per input. */
static laminar_code branch_readers(laminar_db* db, lm_stream_def* s, bool add) {
  lm_stream_def*** readers;
  int32_t* n;
  for (int32_t b = 0; b < s->plan.nbranches; b++) {
    if (!branch_reader_list(db, s, b, &readers, &n)) continue;
    if (!add) {
      lm_graph_remove_reader(*readers, n, s);
    } else if (lm_graph_add_reader(readers, n, s) != LAMINAR_OK) {
      for (int32_t k = 0; k < b; k++) {
        if (branch_reader_list(db, s, k, &readers, &n))
          lm_graph_remove_reader(*readers, n, s);
      }
      return LAMINAR_ERR_NOMEM;
    }
  }
  return LAMINAR_OK;
}

/* WITH (state_ttl = ...): a running aggregate (GROUP BY without a window)
 * forgets its idle keys; its input's event time is found later
 * (check_ttl_time). 0 leaves every key forever. */
static laminar_code ttl_option(const lm_stmt* stmt, lm_plan* plan, const lm_ast_expr* v,
                               int64_t ttl_ms, laminar_error* err) {
  plan->ttl_line = v->line;
  plan->ttl_column = v->column;
  if (ttl_ms == 0) return LAMINAR_OK;
  if (plan->interval && plan->ijoin.ttl_ms == ttl_ms) return LAMINAR_OK; /* binder's */
  if (plan->windowed && plan->window.global && !plan->joined) {
    plan->window.ttl_ms = ttl_ms;
    return LAMINAR_OK;
  }
  return fail_at(err, LAMINAR_ERR_CONFIG_CONFLICT, v->line, v->column, stmt->name,
                 "state_ttl needs a running aggregate (GROUP BY without a window) or a "
                 "JOIN without a time bound: a windowed query forgets its state when "
                 "its windows close, a time-bounded join by its bound");
}

laminar_code lm_db_stream_options(const lm_stmt* stmt, lm_plan* plan,
                                  laminar_error* err) {
  for (size_t i = 0; i < stmt->noptions; i++) {
    const lm_ast_option* o = &stmt->options[i];
    const lm_ast_expr* v = o->value;
    const lm_option* row;
    lm_option_value val;
    LM_TRY(lm_option_parse_sql(LAMINAR_SCOPE_STREAM, stmt->name, o, &row, &val, err));
    lm_option_id id = lm_option_row_id(row);
    if (id == LM_OPT_MAX_STATE_BYTES) { /* any stream (issue 20) */
      plan->max_state_bytes = val.i;
      continue;
    }
    if (id == LM_OPT_STATE_TTL) {
      LM_TRY(ttl_option(stmt, plan, v, val.i, err));
      continue;
    }
    if (id == LM_OPT_ALLOWED_LATENESS) {
      plan->window.lateness_ms = val.i;
      plan->lateness_set = true;
    } else if (id == LM_OPT_LATE_OUTPUT) {
      plan->late_output = NULL;
      if (!val.is_bool || val.i != 0) {
        char name[160];
        if (val.is_bool) {
          snprintf(name, sizeof name, "%s_late", stmt->name);
        } else {
          snprintf(name, sizeof name, "%.*s", (int)val.len, val.text);
        }
        plan->late_output = lm_pool_copy(&plan->pool, name, strlen(name) + 1);
        if (plan->late_output == NULL)
          return lm_error_set(err, LAMINAR_ERR_NOMEM, "out of memory");
        plan->late_line = v->line;
        plan->late_column = v->column;
      }
    } else {
      /* A stream-scope row this surface does not apply: the table and this
       * switch disagree. */
      return lm_error_set(err, LAMINAR_ERR_INTERNAL, "stream option '%s' is not applied",
                          o->key);
    }
    /* A join's own late rows (behind their input's watermark) go to it too. */
    bool join_late = id == LM_OPT_LATE_OUTPUT && plan->joined;
    if (!join_late && (!plan->windowed || plan->window.global)) {
      char msg[256];
      snprintf(msg, sizeof msg,
               "%s needs a window in GROUP BY (tumble, hop, slide or session)%s",
               id == LM_OPT_ALLOWED_LATENESS ? "allowed_lateness" : "late_output",
               id == LM_OPT_ALLOWED_LATENESS ? "" : " or a JOIN of two streams");
      return fail_at(err, LAMINAR_ERR_CONFIG_CONFLICT, v->line, v->column, stmt->name,
                     msg);
    }
  }
  return LAMINAR_OK;
}

/* The time rules of a windowed stream over sources: its allowed lateness
 * defaults to the largest of its sources'; EMIT ON WINDOW CLOSE needs each
 * source's watermark; over several inputs, every branch projects its
 * source's watermark column to the window's time column. */
/* The time rules of an ASOF join: each side's ordering column is its
 * source's watermark column (the join releases and prunes by the
 * watermarks); a window over the join runs on the left's time column, the
 * time its output watermark is in. */
static laminar_code check_join_time(laminar_db* db, const lm_stmt* stmt, lm_plan* plan,
                                    laminar_error* err) {
  char msg[512];
  for (int32_t b = 0; b < 2; b++) {
    const lm_plan_branch* br = &plan->branches[b];
    const lm_source_def* in =
        br->input_is_source ? lm_db_find_source(db, br->input) : NULL;
    if (in == NULL) continue;
    int32_t col = lm_plan_join_time(plan, b);
    if (in->wm_col < 0) {
      snprintf(msg, sizeof msg,
               "stream '%s': %s needs a watermark on source '%s' (WATERMARK FOR %s ...): "
               "its rows are matched once the watermarks make the match final",
               stmt->name, plan->join_kind, in->name, in->schema.fields[col].name);
      return fail_at(err, LAMINAR_ERR_SQL_JOIN_CONDITION, br->line, br->column, in->name,
                     msg);
    }
    if (in->wm_col != col) {
      snprintf(msg, sizeof msg,
               "stream '%s': the %s time column of '%s' is '%s', but its watermark "
               "column is '%s': order by the watermark column",
               stmt->name, plan->join_kind, in->name, in->schema.fields[col].name,
               in->schema.fields[in->wm_col].name);
      return fail_at(err, LAMINAR_ERR_SQL_JOIN_CONDITION, br->line, br->column, in->name,
                     msg);
    }
  }
  int32_t ltime = lm_plan_join_time(plan, 0);
  if (plan->windowed && !plan->window.global && plan->window.time_col != ltime) {
    snprintf(msg, sizeof msg,
             "stream '%s': a window over %s runs on the left side's time column '%s' "
             "(the join's output watermark is in its time)",
             stmt->name, plan->join_kind, plan->union_schema.fields[ltime].name);
    return fail_at(err, LAMINAR_ERR_SQL_GROUPING, plan->join_line, plan->join_column,
                   stmt->name, msg);
  }
  return LAMINAR_OK;
}

/* A window reading a source with per-key watermarks (watermark_key) directly
 * closes per key (op/keyed_window.c): it must GROUP BY the key column, and
 * only tumbling or hopping windows closed on EMIT ON WINDOW CLOSE do. Sets
 * the plan's keyed_wm. Other readers (plain streams, a union, a stream
 * reading a stream) follow the source's watermark, the least over its keys. */
static laminar_code check_key_watermark(laminar_db* db, const lm_stmt* stmt,
                                        lm_plan* plan, laminar_error* err) {
  if (!plan->windowed || lm_plan_branched(plan) || !plan->input_is_source)
    return LAMINAR_OK;
  const lm_source_def* in = lm_db_find_source(db, plan->input);
  if (in == NULL || in->wm_key_col < 0 || in->wm_external) return LAMINAR_OK;
  const lm_window_spec* w = &plan->window;
  const char* key = in->schema.fields[in->wm_key_col].name;
  const lm_ast_select* sel = stmt->select;
  int32_t line = stmt->line, col = stmt->column;
  if (sel != NULL && sel->ngroup > 0) {
    line = sel->group_by[0]->line;
    col = sel->group_by[0]->column;
  }
  char msg[512];
  const char* why = w->session          ? "session windows"
                    : w->global         ? "a GROUP BY without a window"
                    : w->emit_changes   ? "EMIT CHANGES"
                    : plan->late_output ? "a late side output (late_output)"
                                        : NULL;
  if (why != NULL) {
    snprintf(msg, sizeof msg,
             "stream '%s': source '%s' has per-key watermarks (watermark_key '%s'); "
             "%s over it are not supported: use a tumbling or hopping window with EMIT "
             "ON WINDOW CLOSE",
             stmt->name, in->name, key, why);
    return fail_at(err, LAMINAR_ERR_SQL_UNSUPPORTED, line, col, stmt->name, msg);
  }
  bool grouped = false;
  for (int32_t k = 0; k < w->nkeys; k++) {
    grouped = grouped || (w->keys[k]->kind == LM_EXPR_COLUMN &&
                          w->keys[k]->column == in->wm_key_col);
  }
  if (!grouped) {
    snprintf(msg, sizeof msg,
             "stream '%s': source '%s' has per-key watermarks: its windows close per "
             "'%s', so GROUP BY must contain the column '%s'",
             stmt->name, in->name, key, key);
    return fail_at(err, LAMINAR_ERR_SQL_GROUPING, line, col, stmt->name, msg);
  }
  plan->keyed_wm = true;
  plan->wm_key_col = in->wm_key_col;
  plan->wm_ts_col = in->wm_col;
  plan->wm_key_type = in->schema.fields[in->wm_key_col].type;
  plan->wm_delay_ms = in->wm_delay_ms;
  return LAMINAR_OK;
}

laminar_code lm_db_join_ttl(laminar_db* db, const lm_stmt* stmt, lm_plan* plan,
                            laminar_error* err) {
  lm_ijoin_spec* j = &plan->ijoin;
  if (!plan->interval || j->ttl_ms <= 0) return LAMINAR_OK;
  int32_t col[2] = {-1, -1};
  lm_type type[2] = {LM_TYPE_NULL, LM_TYPE_NULL};
  for (int32_t b = 0; b < 2; b++) {
    const lm_plan_branch* br = &plan->branches[b];
    const lm_source_def* in =
        br->input_is_source ? lm_db_find_source(db, br->input) : NULL;
    if (in != NULL && in->wm_col >= 0) {
      col[b] = in->wm_col;
      type[b] = in->schema.fields[in->wm_col].type;
    }
    if (col[b] < 0 || (type[b] != LM_TYPE_INT64 && type[b] != LM_TYPE_TIMESTAMP) ||
        (b == 1 && type[1] != type[0])) {
      char msg[512];
      snprintf(msg, sizeof msg,
               "stream '%s': %s with state_ttl and no time bound drops each side's rows "
               "by the other side's watermark, so both inputs must be sources with a "
               "WATERMARK FOR column of one type (BIGINT ms or TIMESTAMP); '%s' is not "
               "one",
               stmt->name, plan->join_kind, br->input);
      return fail_at(err, LAMINAR_ERR_SQL_UNBOUNDED_JOIN, plan->join_line,
                     plan->join_column, br->input, msg);
    }
  }
  int64_t unit = type[0] == LM_TYPE_TIMESTAMP ? 1000 : 1, ttl;
  if (__builtin_mul_overflow(j->ttl_ms, unit, &ttl)) ttl = INT64_MAX;
  j->ltime = col[0];
  j->rtime = col[1];
  j->time_type = type[0];
  j->lo = -ttl;
  j->hi = ttl;
  if (j->need != NULL) {
    ((uint8_t*)j->need)[col[0]] = 1;
    ((uint8_t*)j->need)[j->lcols + col[1]] = 1;
  }
  return LAMINAR_OK;
}

/* state_ttl measures idleness in event time: the input is one source with a
 * watermark column of BIGINT milliseconds or TIMESTAMP, which the window
 * operator reads per row (window.ttl_col). */
static laminar_code check_ttl_time(laminar_db* db, const lm_stmt* stmt, lm_plan* plan,
                                   laminar_error* err) {
  if (plan->window.ttl_ms <= 0) return LAMINAR_OK;
  const lm_source_def* in =
      plan->input_is_source && !lm_plan_branched(plan) && !plan->joined && !plan->lookup
          ? lm_db_find_source(db, plan->input)
          : NULL;
  if (in != NULL && in->wm_col >= 0 &&
      (in->schema.fields[in->wm_col].type == LM_TYPE_INT64 ||
       in->schema.fields[in->wm_col].type == LM_TYPE_TIMESTAMP)) {
    plan->window.ttl_col = in->wm_col;
    return LAMINAR_OK;
  }
  char msg[512];
  snprintf(msg, sizeof msg,
           "state_ttl forgets keys by event time: stream '%s' must read one source "
           "directly whose WATERMARK FOR column is BIGINT (ms) or TIMESTAMP, and '%s' "
           "is not one",
           stmt->name, plan->input);
  return fail_at(err, LAMINAR_ERR_CONFIG_CONFLICT, plan->ttl_line, plan->ttl_column,
                 stmt->name, msg);
}

static laminar_code check_stream_time(laminar_db* db, const lm_stmt* stmt, lm_plan* plan,
                                      laminar_error* err) {
  if (plan->joined) LM_TRY(check_join_time(db, stmt, plan, err));
  LM_TRY(check_ttl_time(db, stmt, plan, err));
  if (!plan->windowed) return LAMINAR_OK;
  bool branched = lm_plan_branched(plan);
  int64_t lateness = 0;
  for (int32_t b = 0; b < plan->nbranches; b++) {
    const lm_plan_branch* br = &plan->branches[b];
    const lm_source_def* in =
        br->input_is_source ? lm_db_find_source(db, br->input) : NULL;
    if (in == NULL) continue;
    if (in->lateness_ms > lateness) lateness = in->lateness_ms;
    char msg[512];
    if (in->wm_col < 0 && stmt->emit == LM_EMIT_ON_WINDOW_CLOSE) {
      snprintf(
          msg, sizeof msg,
          "EMIT ON WINDOW CLOSE needs a watermark, and source '%s' has none: declare "
          "WATERMARK FOR col or WITH (watermark = 'col')",
          in->name);
      return fail_at(err, LAMINAR_ERR_SQL_GROUPING, stmt->emit_line, stmt->emit_column,
                     stmt->name, msg);
    }
    if (branched && !plan->joined && !plan->window.global && in->wm_col >= 0 &&
        br->col_out[in->wm_col] != plan->window.time_col) {
      snprintf(
          msg, sizeof msg,
          "stream '%s': the window's time column is column %d ('%s') of the union, and "
          "input '%s' must give it its watermark column '%s' unchanged (each input's "
          "watermark column at the same position)",
          stmt->name, (int)plan->window.time_col + 1,
          plan->union_schema.fields[plan->window.time_col].name, in->name,
          in->schema.fields[in->wm_col].name);
      return fail_at(err, LAMINAR_ERR_SQL_GROUPING, br->line, br->column, in->name, msg);
    }
  }
  if (!plan->lateness_set) plan->window.lateness_ms = lateness;
  return LAMINAR_OK;
}

/* Top-N per window: the input is a windowed stream emitting on close (the
 * rows of a window arrive together, before the watermark that closed it),
 * and PARTITION BY holds one of its window bounds, so each partition is
 * whole when the watermark releases it. */
static laminar_code check_analytic_windows(laminar_db* db, const lm_stmt* stmt,
                                           const lm_plan* plan, laminar_error* err) {
  const lm_stream_def* up = lm_db_find_stream(db, plan->input);
  bool ok = up != NULL && up->plan.windowed && !up->plan.window.global &&
            !up->plan.window.emit_changes;
  bool bound = false;
  for (int32_t k = 0; ok && k < plan->an.nkeys; k++) {
    const lm_expr* e = plan->an.keys[k];
    if (e->kind != LM_EXPR_COLUMN || e->column >= up->plan.npost) continue;
    const lm_expr* src = up->plan.post_exprs[e->column];
    if (src->kind == LM_EXPR_COLUMN && (src->column == 0 || src->column == 1))
      bound = true; /* window_start / window_end of the window aggregate */
  }
  if (ok && bound) return LAMINAR_OK;
  char msg[512];
  snprintf(msg, sizeof msg,
           "stream '%s': window functions over stream '%s' run per window (Top-N): "
           "'%s' must be a windowed GROUP BY stream emitting on window close, and "
           "PARTITION BY must hold its window_start or window_end (over a source, "
           "ORDER BY its event-time column)",
           stmt->name, plan->input, plan->input);
  return fail_at(err, LAMINAR_ERR_SQL_UNSUPPORTED, plan->an_line, plan->an_column,
                 stmt->name, msg);
}

/* Window functions (OVER) of a stream run over event time: the input is a
 * source with a watermark, and OVER's ORDER BY is that watermark column. */
static laminar_code check_analytic_time(laminar_db* db, const lm_stmt* stmt,
                                        const lm_plan* plan, laminar_error* err) {
  if (!plan->analytic) return LAMINAR_OK;
  char msg[512];
  const lm_source_def* in =
      plan->input_is_source ? lm_db_find_source(db, plan->input) : NULL;
  if (plan->an.time_col < 0 && !lm_plan_branched(plan))
    return check_analytic_windows(db, stmt, plan, err);
  if (lm_plan_branched(plan) || in == NULL) {
    snprintf(msg, sizeof msg,
             "stream '%s': window functions (OVER) read one source with a watermark "
             "directly; over a stream, a union or a derived table they are not "
             "supported yet",
             stmt->name);
    return fail_at(err, LAMINAR_ERR_SQL_UNSUPPORTED, plan->an_line, plan->an_column,
                   stmt->name, msg);
  }
  if (in->wm_col < 0 || in->wm_col != plan->an.time_col) {
    if (in->wm_col < 0) {
      snprintf(msg, sizeof msg,
               "stream '%s': window functions (OVER) release rows as the watermark "
               "passes them, and source '%s' has none: declare WATERMARK FOR col",
               stmt->name, in->name);
    } else {
      snprintf(msg, sizeof msg,
               "stream '%s': OVER (... ORDER BY '%s') must order by the event-time "
               "column '%s' of source '%s' (its WATERMARK column)",
               stmt->name, in->schema.fields[plan->an.time_col].name,
               in->schema.fields[in->wm_col].name, in->name);
    }
    return fail_at(err, LAMINAR_ERR_SQL_UNSUPPORTED, plan->an_line, plan->an_column,
                   stmt->name, msg);
  }
  return LAMINAR_OK;
}

/* The late side output of new stream `s` (WITH (late_output = ...)): a stream
 * named s->plan.late_output with the columns of s's input, fed by s's window
 * operator. *out is NULL when s declares none. Not yet in the graph. */
static laminar_code make_late_stream(laminar_db* db, const lm_stmt* stmt,
                                     lm_stream_def* s, lm_stream_def** out,
                                     laminar_error* err) {
  *out = NULL;
  const char* name = s->plan.late_output;
  if (name == NULL) return LAMINAR_OK;
  if (lm_db_name_taken(db, name) || lm_streq_nocase(name, stmt->name)) {
    char msg[512];
    snprintf(msg, sizeof msg,
             "stream '%s': its late output '%s' would clash with an object of that name "
             "(name another one with late_output = '...')",
             stmt->name, name);
    return fail_at(err, LAMINAR_ERR_SQL_DUPLICATE_OBJECT, s->plan.late_line,
                   s->plan.late_column, name, msg);
  }
  bool is_source;
  const lm_schema* in = lm_db_lookup_input(db, s->plan.input, &is_source);
  /* Over branches, the window reads the union's columns. */
  if (lm_plan_branched(&s->plan)) in = &s->plan.union_schema;
  lm_stream_def* l = lm_calloc(1, sizeof *l);
  if (l == NULL || in == NULL) {
    lm_free(l);
    return lm_error_set(err, in == NULL ? LAMINAR_ERR_INTERNAL : LAMINAR_ERR_NOMEM,
                        "stream '%s': cannot set up its late output", stmt->name);
  }
  l->watermark_ms = INT64_MIN;
  atomic_init(&l->late_rows, 0);
  l->name = lm_strdup(name);
  if (l->name == NULL ||
      lm_plan_passthrough(s->plan.input, is_source, in, &l->plan) != LAMINAR_OK ||
      lm_schema_copy(&l->plan.out_schema, &l->out_schema) != 0 ||
      lm_plan_build_chain(&l->plan, &l->chain) != LAMINAR_OK) {
    lm_stream_def_free(l);
    return lm_error_set(err, LAMINAR_ERR_NOMEM, "out of memory");
  }
  lm_state_budget_init(&l->budget, l->name, 0, &db->state_budget);
  lm_op_chain_set_txn(l->chain, &db->graph.txn);
  lm_plan_context pctx = {.ncores = db->rt.ncores, .source = NULL, .is_view = false};
  lm_plan_physical(&l->plan, &pctx, &l->phys);
  lm_stream_def_attach(l);
  l->nparts = 1;
  l->late_of = s;
  *out = l;
  return LAMINAR_OK;
}

static laminar_code create_stream(laminar_db* db, const char* sql, const lm_stmt* stmt,
                                  laminar_error* err) {
  bool skip;
  LM_TRY(check_new_name(db, sql, stmt, err, &skip));
  if (skip) return LAMINAR_OK;
  if (stmt->object == LM_OBJ_VIEW && !stmt->materialized) {
    return fail_at(
        err, LAMINAR_ERR_SQL_UNSUPPORTED, stmt->line, stmt->column, stmt->name,
        "CREATE VIEW (not materialized) is not supported: CREATE MATERIALIZED VIEW "
        "keeps the result queryable, CREATE STREAM emits it");
  }
  /* Keys and value types from the option table, before binding; the values
   * land in the plan after it (lm_db_stream_options). */
  LM_TRY(lm_option_check_sql(LAMINAR_SCOPE_STREAM, stmt->name, stmt->options,
                             stmt->noptions, err));
  lm_stream_def* s = lm_calloc(1, sizeof *s);
  if (s == NULL) return lm_error_set(err, LAMINAR_ERR_NOMEM, "out of memory");
  s->watermark_ms = INT64_MIN;
  atomic_init(&s->late_rows, 0);
  laminar_code rc = lm_bind_stream_tables(stmt, lm_db_lookup_input, lm_db_table_columns,
                                          db, &db->funcs, &s->plan, err);
  if (rc != LAMINAR_OK) {
    lm_free(s);
    return rc;
  }
  bool branched = lm_plan_branched(&s->plan);
  rc = lm_db_stream_options(stmt, &s->plan, err);
  if (rc == LAMINAR_OK) rc = lm_db_join_ttl(db, stmt, &s->plan, err);
  if (rc == LAMINAR_OK) rc = check_stream_time(db, stmt, &s->plan, err);
  if (rc == LAMINAR_OK) rc = check_analytic_time(db, stmt, &s->plan, err);
  if (rc == LAMINAR_OK) rc = check_key_watermark(db, stmt, &s->plan, err);
  if (rc != LAMINAR_OK) {
    lm_plan_free(&s->plan);
    lm_free(s);
    return rc;
  }
  s->name = lm_strdup(stmt->name);
  s->sql = lm_db_stmt_text(sql, stmt);
  if (s->name == NULL || s->sql == NULL ||
      lm_schema_copy(&s->plan.out_schema, &s->out_schema) != 0 ||
      lm_plan_build_chain(&s->plan, &s->chain) != LAMINAR_OK) {
    lm_stream_def_free(s);
    return lm_error_set(err, LAMINAR_ERR_NOMEM, "out of memory");
  }
  /* A lookup join reads its table's operator in place (table.c). */
  if (s->plan.lookup) lm_db_table_attach_lookup(db, s);
  {
    const lm_source_def* in_src =
        s->plan.input_is_source ? lm_db_find_source(db, s->plan.input) : NULL;
    const lm_stream_def* in_st =
        in_src != NULL ? NULL : lm_db_find_stream(db, s->plan.input);
    s->fingerprint = lm_durable_fingerprint(in_src != NULL  ? in_src->fingerprint
                                            : in_st != NULL ? in_st->fingerprint
                                                            : 0,
                                            s->sql);
  }
  if (stmt->materialized && (rc = lm_db_view_attach(s, stmt, err)) != LAMINAR_OK) {
    lm_stream_def_free(s);
    return rc;
  }
  /* The whole chain, a view's operator included (partitions: part.c). */
  lm_state_budget_init(&s->budget, s->name, s->plan.max_state_bytes, &db->state_budget);
  lm_op_chain_set_budget(s->chain, &s->budget);
  lm_op_chain_set_txn(s->chain, &db->graph.txn);
  lm_stream_def* late;
  if ((rc = make_late_stream(db, stmt, s, &late, err)) != LAMINAR_OK) {
    lm_stream_def_free(s);
    return rc;
  }
  lm_source_def* src =
      s->plan.input_is_source ? lm_db_find_source(db, s->plan.input) : NULL;
  lm_stream_def* up = src ? NULL : lm_db_find_stream(db, s->plan.input);
  /* The physical plan: cores > 1, a keyed stream runs as one partition per
   * reactor (rt/part.c); a stream over branches runs whole. */
  lm_plan_context pctx = {.ncores = db->rt.ncores,
                          .source = branched || src == NULL ? NULL : &src->schema,
                          .is_view = stmt->materialized};
  lm_plan_physical(&s->plan, &pctx, &s->phys);
  if (lm_stream_def_attach_rt(s) != LAMINAR_OK) {
    lm_stream_def_free(late);
    lm_stream_def_free(s);
    return lm_error_set(err, LAMINAR_ERR_NOMEM, "out of memory");
  }
  lm_rt_pause(&db->rt);
  if (s->plan.lookup) lm_db_table_order(db, s);
  if (branched) {
    /* Each input's current watermark; the stream's is the least. */
    const void** defs = lm_calloc((size_t)s->plan.nbranches, sizeof *defs);
    int64_t* wms = lm_calloc((size_t)s->plan.nbranches, sizeof *wms);
    rc = defs != NULL && wms != NULL ? LAMINAR_OK : LAMINAR_ERR_NOMEM;
    for (int32_t b = 0; rc == LAMINAR_OK && b < s->plan.nbranches; b++) {
      defs[b] = branch_input(db, s, b, &wms[b]);
    }
    if (rc == LAMINAR_OK) rc = lm_stream_def_set_inputs(s, defs, wms);
    lm_free(defs);
    lm_free(wms);
  } else {
    /* The new stream starts at its input's current watermark: the input's past
     * is not replayed into it, and its windows close from the next advance on. */
    lm_stream_def_start_at(s, src != NULL ? src->watermark_ms : up->watermark_ms);
  }
  /* Where it starts: the WAL replay at open feeds it the records after. */
  const lm_source_def* root = lm_db_root_source(db, s);
  s->start_seq = root != NULL ? root->processed_seq : 0;
  if (rc == LAMINAR_OK && branched) {
    /* Each input's root source's position: the replay gates it per source. */
    s->in_start = lm_calloc((size_t)s->plan.nbranches, sizeof *s->in_start);
    if (s->in_start == NULL) rc = LAMINAR_ERR_NOMEM;
    for (int32_t b = 0; rc == LAMINAR_OK && b < s->plan.nbranches; b++) {
      const lm_source_def* r = lm_db_branch_root(db, s, b);
      s->in_start[b] = r != NULL ? r->processed_seq : 0;
    }
  }
  if (rc == LAMINAR_OK) rc = branch_readers(db, s, true);
  bool attached = rc == LAMINAR_OK;
  if (rc == LAMINAR_OK) {
    rc = append_ptr((void***)&db->graph.streams, &db->graph.nstreams, s);
    if (rc == LAMINAR_OK && late != NULL) {
      /* Right after its stream: upstream before downstream. */
      rc = append_ptr((void***)&db->graph.streams, &db->graph.nstreams, late);
      if (rc != LAMINAR_OK) db->graph.nstreams--;
    }
    if (rc == LAMINAR_OK && late != NULL) {
      late->watermark_ms = s->watermark_ms;
      s->late = late;
      lm_op_window_set_late_sink(s->chain, lm_stream_take_late, late);
      lm_op_join_set_late_sink(s->chain, lm_stream_take_late, late);
    }
  }
  if (rc != LAMINAR_OK && attached) branch_readers(db, s, false);
  lm_rt_resume(&db->rt);
  if (rc != LAMINAR_OK) {
    lm_stream_def_free(late);
    lm_stream_def_free(s);
    return lm_error_set(err, LAMINAR_ERR_NOMEM, "out of memory");
  }
  lm_durable_identify(db->dur, s->name, &s->incarnation, &s->start_seq);
  if (s->in_start != NULL)
    lm_durable_identify_inputs(db->dur, s->name, s->in_start, s->plan.nbranches);
  if (late != NULL) {
    late->fingerprint = lm_durable_fingerprint(s->fingerprint, "late output");
    late->start_seq = s->start_seq;
    lm_durable_identify(db->dur, late->name, &late->incarnation, NULL);
  }
  return lm_durable_catalog_changed(db, err);
}

laminar_code lm_db_create_source(laminar_db* db, const char* sql, const lm_stmt* stmt,
                                 laminar_error* err) {
  return create_source(db, sql, stmt, err);
}

laminar_code lm_db_create_stream(laminar_db* db, const char* sql, const lm_stmt* stmt,
                                 laminar_error* err) {
  return create_stream(db, sql, stmt, err);
}

/* ---- CREATE SINK ... INTO FILE ------------------------------------------------------- */

static laminar_code create_sink(laminar_db* db, const char* sql, const lm_stmt* stmt,
                                laminar_error* err) {
  bool skip;
  LM_TRY(check_new_name(db, sql, stmt, err, &skip));
  if (skip) return LAMINAR_OK;
  char msg[512];
  lm_stream_def* stream = lm_db_find_stream(db, stmt->sink_from);
  if (stream == NULL) {
    snprintf(msg, sizeof msg, "sink '%s': no stream named '%s'", stmt->name,
             stmt->sink_from);
    return fail_at(err, LAMINAR_ERR_SQL_UNKNOWN_OBJECT, stmt->sink_from_line,
                   stmt->sink_from_column, stmt->sink_from, msg);
  }
  if (!stmt->sink_into_file && lm_db_sink_has_connector(stmt))
    return lm_db_create_connector_sink(db, sql, stmt, stream, err);
  if (!stmt->sink_into_file) return lm_db_create_endpoint(db, sql, stmt, stream, err);
  char path[4096] = {0};
  lm_sink_format format = LM_SINK_JSONL;
  for (size_t i = 0; i < stmt->noptions; i++) {
    const lm_option* row;
    lm_option_value val;
    LM_TRY(lm_option_parse_sql(LAMINAR_SCOPE_SINK, stmt->name, &stmt->options[i], &row,
                               &val, err));
    if (lm_option_row_id(row) == LM_OPT_PATH) {
      memcpy(path, val.text, val.len); /* the table bounds it below sizeof path */
      path[val.len] = '\0';
    } else if (val.i >= 3) { /* "jsonl | csv | json | upsert-json | raw" */
      char msg[300];
      snprintf(msg, sizeof msg,
               "sink '%s': format '%s' is a Kafka sink's (connector = 'kafka'), "
               "not a file sink's",
               stmt->name,
               val.i == 3   ? "upsert-json"
               : val.i == 4 ? "raw"
                            : "avro");
      return fail_at(err, LAMINAR_ERR_CONFIG_VALUE, stmt->options[i].value->line,
                     stmt->options[i].value->column, stmt->name, msg);
    } else {
      format = val.i == 1 ? LM_SINK_CSV : LM_SINK_JSONL;
    }
  }
  if (path[0] == '\0') {
    return fail_at(err, LAMINAR_ERR_CONFIG_VALUE, stmt->line, stmt->column, stmt->name,
                   "a file sink needs path = '<directory>'");
  }
  if (db->dur == NULL) {
    return fail_at(
        err, LAMINAR_ERR_CONFIG_CONFLICT, stmt->line, stmt->column, stmt->name,
        "a file sink publishes its output at checkpoints: open the database with "
        "data_dir and checkpoint_interval");
  }
  lm_sink_def* k = lm_calloc(1, sizeof *k);
  if (k == NULL) return lm_error_set(err, LAMINAR_ERR_NOMEM, "out of memory");
  k->stream = stream;
  k->name = lm_strdup(stmt->name);
  k->sql = lm_db_stmt_text(sql, stmt);
  laminar_code rc = LAMINAR_OK;
  if (k->name == NULL || k->sql == NULL)
    rc = lm_error_set(err, LAMINAR_ERR_NOMEM, "out of memory");
  lm_file_sink* fs = NULL;
  if (lm_durable_read_only(db->dur)) {
    /* Read-only: the catalog names the sink, nothing is published. */
    if (rc == LAMINAR_OK) rc = lm_discard_sink_create(&k->sink, err);
  } else {
    if (rc == LAMINAR_OK &&
        (rc = lm_durable_check_sink_path(db->dur, stmt->name, path, err)) != LAMINAR_OK)
      lm_error_object(err, stmt->name, NULL);
    if (rc == LAMINAR_OK)
      rc = lm_file_sink_open(path, format, &stream->out_schema, &fs, err);
    /* Checked again where the directory was opened: a symlink swapped into
     * the path since the check above is caught here, and nothing is written
     * through the path afterwards. */
    if (rc == LAMINAR_OK &&
        (rc = lm_durable_check_sink_real(db->dur, stmt->name, path, lm_file_sink_real(fs),
                                         err)) != LAMINAR_OK)
      lm_error_object(err, stmt->name, NULL);
    /* Its writes run on a sink thread (sink/queue.c), never on the reactor
     * (the queue closes the file sink if it cannot be made). */
    if (fs != NULL && rc == LAMINAR_OK)
      rc = lm_sink_queue_open(lm_file_sink_base(fs), db->buffer_size, &k->sink, err);
    else if (fs != NULL)
      k->sink = lm_file_sink_base(fs);
  }
  if (rc == LAMINAR_OK) rc = lm_db_attach_sink(db, k, err);
  if (rc != LAMINAR_OK) {
    lm_db_sink_free(k);
    return rc;
  }
  return lm_durable_catalog_changed(db, err);
}

laminar_code lm_db_attach_sink(laminar_db* db, lm_sink_def* k, laminar_error* err) {
  /* While the stored catalog runs at open, recovery decides the epoch. */
  if (!lm_durable_recovering(db->dur))
    LM_TRY(k->sink->vt->begin(k->sink, lm_durable_next_epoch(db->dur), err));
  laminar_code rc = LAMINAR_OK;
  if (k->stream->in_start != NULL && k->in_start == NULL) {
    k->in_start = lm_calloc((size_t)k->stream->nin, sizeof *k->in_start);
    if (k->in_start == NULL) return lm_error_set(err, LAMINAR_ERR_NOMEM, "out of memory");
    k->nin = k->stream->nin;
  }
  lm_rt_pause(&db->rt);
  const lm_source_def* root = lm_db_root_source(db, k->stream);
  k->start_seq =
      root != NULL ? root->processed_seq : 0; /* replay feeds it the records after */
  for (int32_t b = 0; b < k->nin; b++) {      /* and per input of a union: its root's */
    const lm_source_def* r = lm_db_branch_root(db, k->stream, b);
    k->in_start[b] = r != NULL ? r->processed_seq : 0;
  }
  rc = append_ptr((void***)&k->stream->sinks, &k->stream->nsinks, k->sink);
  if (rc == LAMINAR_OK) {
    rc = append_ptr((void***)&db->sinks, &db->nsinks, k);
    if (rc != LAMINAR_OK) k->stream->nsinks--;
  }
  lm_rt_resume(&db->rt);
  if (rc != LAMINAR_OK) return lm_error_set(err, LAMINAR_ERR_NOMEM, "out of memory");
  if (k->sql != NULL) {
    lm_durable_identify(db->dur, k->name, &k->incarnation, &k->start_seq);
    if (k->in_start != NULL)
      lm_durable_identify_inputs(db->dur, k->name, k->in_start, k->nin);
  }
  return LAMINAR_OK;
}

void lm_db_sink_free(lm_sink_def* k) {
  if (k->sink != NULL) k->sink->vt->close(k->sink);
  lm_free(k->in_start);
  lm_free(k->name);
  lm_free(k->sql);
  lm_free(k);
}


/* ---- DROP ------------------------------------------------------------------------------ */

static void remove_ptr(void** arr, int32_t* n, const void* p) {
  for (int32_t i = 0; i < *n; i++) {
    if (arr[i] == p) {
      memmove(&arr[i], &arr[i + 1], sizeof(void*) * (size_t)(*n - i - 1));
      (*n)--;
      return;
    }
  }
}

laminar_code lm_db_drop(laminar_db* db, const lm_stmt* stmt, laminar_error* err) {
  char msg[256];
  lm_source_def* src = lm_db_find_source(db, stmt->name);
  lm_stream_def* s = lm_db_find_stream(db, stmt->name);
  bool want_source = stmt->object == LM_OBJ_SOURCE;
  const char* other = NULL; /* DROP STREAM of a view, DROP VIEW of a stream */
  /* A table's parts go only with DROP TABLE (lm_db_drop_table). */
  if (src != NULL && src->table != NULL && !stmt->internal) src = NULL;
  if (s != NULL && lm_db_is_table(s) && !stmt->internal) {
    other = "TABLE";
    s = NULL;
  }
  if (s != NULL && lm_db_is_view(s) != (stmt->object == LM_OBJ_VIEW)) {
    other = lm_db_is_view(s) ? "MATERIALIZED VIEW" : "STREAM";
    s = NULL;
  }
  if ((want_source && src == NULL) || (!want_source && s == NULL)) {
    if (stmt->if_exists) return LAMINAR_OK;
    int n =
        snprintf(msg, sizeof msg, "no %s named '%s'",
                 want_source ? "source" : lm_db_object_word(stmt->object), stmt->name);
    if (other != NULL && n > 0 && (size_t)n < sizeof msg) {
      snprintf(msg + n, sizeof msg - (size_t)n, " (it is a %s: DROP %s %s)",
               lm_streq_nocase(other, "STREAM")  ? "stream"
               : lm_streq_nocase(other, "TABLE") ? "table"
                                                 : "materialized view",
               other, stmt->name);
    }
    return fail_at(err, LAMINAR_ERR_SQL_UNKNOWN_OBJECT, stmt->name_line,
                   stmt->name_column, stmt->name, msg);
  }
  if (!want_source && s->late_of != NULL) {
    snprintf(
        msg, sizeof msg,
        "cannot drop '%s': it is the late output of stream '%s' (DROP STREAM %s drops "
        "both)",
        stmt->name, s->late_of->name, s->late_of->name);
    return fail_at(err, LAMINAR_ERR_SQL_DEPENDENCY, stmt->name_line, stmt->name_column,
                   stmt->name, msg);
  }
  /* A stream goes with its late output: neither may have readers or sinks. */
  for (int32_t pass = 0; pass < (want_source ? 1 : 2); pass++) {
    const lm_stream_def* x = pass == 0 ? s : s->late;
    if (!want_source && x == NULL) break;
    int32_t nreaders = want_source ? src->nreaders : x->nreaders;
    if (nreaders > 0) {
      lm_stream_def* r = want_source ? src->readers[0] : x->readers[0];
      snprintf(msg, sizeof msg, "cannot drop '%s': stream '%s' reads from %s", stmt->name,
               r->name, pass == 0 ? "it" : "its late output");
      return fail_at(err, LAMINAR_ERR_SQL_DEPENDENCY, stmt->name_line, stmt->name_column,
                     stmt->name, msg);
    }
    for (int32_t i = 0; !want_source && i < db->nsinks; i++) {
      if (db->sinks[i]->stream != x) continue;
      snprintf(msg, sizeof msg, "cannot drop '%s': sink '%s' writes the rows of %s",
               stmt->name, db->sinks[i]->name, pass == 0 ? "it" : "its late output");
      return fail_at(err, LAMINAR_ERR_SQL_DEPENDENCY, stmt->name_line, stmt->name_column,
                     stmt->name, msg);
    }
  }
  const char* feeding = want_source ? lm_db_dead_letter_user(db, src->name) : NULL;
  if (feeding != NULL) {
    snprintf(msg, sizeof msg,
             "cannot drop '%s': it is the dead-letter output (bad_records) of Kafka "
             "source '%s' (drop that first)",
             stmt->name, feeding);
    return fail_at(err, LAMINAR_ERR_SQL_DEPENDENCY, stmt->name_line, stmt->name_column,
                   stmt->name, msg);
  }
  if (want_source) lm_db_source_connector_stop(db, src->name); /* its consumer first */
  lm_rt_pause(&db->rt);
  if (want_source) {
    remove_ptr((void**)db->graph.sources, &db->graph.nsources, src);
    atomic_store_explicit(&src->dropped, true, memory_order_release);
    lm_waiter_notify(&src->room); /* producers blocked on its full queue give up */
  } else {
    remove_ptr((void**)db->graph.streams, &db->graph.nstreams, s);
    branch_readers(db, s, false);
    lm_db_detach_stream_subs(db, s);
    if (s->late != NULL) {
      remove_ptr((void**)db->graph.streams, &db->graph.nstreams, s->late);
      lm_db_detach_stream_subs(db, s->late);
    }
  }
  lm_rt_resume(&db->rt);
  /* The catalog without it first: a crash after leaves a log no source owns
   * (removed at the next open), never a catalog source without its log. */
  laminar_code rc = lm_durable_catalog_changed(db, err);
  if (want_source) {
    /* Its WAL goes with it: a source created later under this name starts
     * from nothing. */
    if (rc == LAMINAR_OK) rc = lm_durable_source_dropped(db, src, err);
    lm_source_def_unref(src);
  } else {
    lm_stream_def_free(s->late);
    lm_stream_def_free(s);
  }
  return rc;
}

static laminar_code drop_sink(laminar_db* db, const lm_stmt* stmt, laminar_error* err) {
  lm_sink_def* k = find_sink(db, stmt->name);
  if (k == NULL) {
    if (stmt->if_exists) return LAMINAR_OK;
    char msg[256];
    snprintf(msg, sizeof msg, "no sink named '%s'", stmt->name);
    return fail_at(err, LAMINAR_ERR_SQL_UNKNOWN_OBJECT, stmt->name_line,
                   stmt->name_column, stmt->name, msg);
  }
  lm_rt_pause(&db->rt);
  remove_ptr((void**)k->stream->sinks, &k->stream->nsinks, k->sink);
  remove_ptr((void**)db->sinks, &db->nsinks, k);
  lm_rt_resume(&db->rt);
  lm_db_sink_free(k); /* what it staged since the last checkpoint is not published */
  return lm_durable_catalog_changed(db, err);
}

/* ---- SHOW / DESCRIBE ----------------------------------------------------------------- */

/* Build a table of string columns (`ncols` names) from rows of strings. */
laminar_code lm_db_string_table(const char* const* names, int32_t ncols, char** cells,
                                int64_t nrows, struct ArrowArrayStream* out) {
  lm_schema schema;
  lm_schema_init_empty(&schema);
  laminar_code rc = LAMINAR_OK;
  lm_vec* cols = lm_calloc((size_t)ncols, sizeof(lm_vec));
  lm_str* strs = lm_calloc((size_t)(ncols * (nrows ? nrows : 1)), sizeof(lm_str));
  if (cols == NULL || strs == NULL) {
    rc = LAMINAR_ERR_NOMEM;
    goto done;
  }
  for (int32_t c = 0; c < ncols; c++) {
    if (lm_schema_add(&schema, names[c], LM_TYPE_STRING, false) != 0) {
      rc = LAMINAR_ERR_NOMEM;
      goto done;
    }
    for (int64_t r = 0; r < nrows; r++) {
      const char* cell = cells[r * ncols + c];
      strs[c * nrows + r] = (lm_str){cell, (int64_t)strlen(cell)};
    }
    cols[c] = (lm_vec){LM_TYPE_STRING, nrows, NULL, strs + c * nrows};
  }
  lm_batch* batch;
  rc = lm_arrow_build(&schema, cols, nrows, &batch);
  if (rc == LAMINAR_OK) rc = lm_rows_stream(&schema, batch, out);
done:
  lm_schema_free(&schema);
  lm_free(cols);
  lm_free(strs);
  return rc;
}

char* lm_db_format_columns(const lm_schema* s) {
  size_t cap = 64;
  for (int32_t i = 0; i < s->ncols; i++) cap += strlen(s->fields[i].name) + 32;
  char* out = lm_malloc(cap);
  if (out == NULL) return NULL;
  size_t len = 0;
  out[0] = '\0';
  for (int32_t i = 0; i < s->ncols; i++) {
    len += (size_t)snprintf(out + len, cap - len, "%s%s %s%s", i ? ", " : "",
                            s->fields[i].name, lm_type_name(s->fields[i].type),
                            s->fields[i].not_null ? " NOT NULL" : "");
  }
  return out;
}

static laminar_code show(laminar_db* db, const lm_stmt* stmt,
                         struct ArrowArrayStream* out, laminar_error* err) {
  bool sources = stmt->object == LM_OBJ_SOURCE;
  if (stmt->object == LM_OBJ_SINK) return lm_db_show_sinks(db, out, err);
  if (stmt->object == LM_OBJ_FUNCTION) return lm_db_show_functions(db, out, err);
  if (stmt->object == LM_OBJ_TABLE) return lm_db_show_tables(db, out, err);
  bool views = stmt->object == LM_OBJ_VIEW; /* SHOW STREAMS lists the others */
  if (out == NULL) return LAMINAR_OK;
  int64_t n = sources ? db->graph.nsources : db->graph.nstreams;
  char** cells = lm_calloc((size_t)(n * 3 + 1), sizeof(char*));
  char** owned = lm_calloc((size_t)(n + 1), sizeof(char*));
  laminar_code rc = LAMINAR_OK;
  if (cells == NULL || owned == NULL) {
    rc = LAMINAR_ERR_NOMEM;
    goto done;
  }
  int64_t k = 0; /* rows filled */
  for (int64_t i = 0; i < n; i++) {
    if (!sources && lm_db_is_view(db->graph.streams[i]) != views) continue;
    if (!sources && lm_db_is_table(db->graph.streams[i])) continue; /* SHOW TABLES */
    if (sources && db->graph.sources[i]->table != NULL) continue;
    if (sources) {
      lm_source_def* s = db->graph.sources[i];
      owned[i] = lm_db_format_columns(&s->schema);
      if (owned[i] == NULL) {
        rc = LAMINAR_ERR_NOMEM;
        goto done;
      }
      cells[k * 3] = s->name;
      cells[k * 3 + 1] = owned[i];
      cells[k * 3 + 2] = s->wm_col >= 0 ? s->schema.fields[s->wm_col].name : "";
    } else {
      lm_stream_def* s = db->graph.streams[i];
      cells[k * 3] = s->name;
      cells[k * 3 + 1] = (char*)lm_plan_inputs(&s->plan);
      cells[k * 3 + 2] = (char*)lm_plan_describe(&s->plan);
      if (s->late_of != NULL) { /* a late side output: its rows come from its stream */
        size_t len = strlen(s->late_of->name) + 32;
        owned[i] = lm_malloc(len);
        if (owned[i] != NULL)
          snprintf(owned[i], len, "late rows of %s", s->late_of->name);
        cells[k * 3 + 2] = owned[i];
      }
      if (cells[k * 3 + 2] == NULL) {
        rc = LAMINAR_ERR_NOMEM;
        goto done;
      }
    }
    k++;
  }
  {
    static const char* const src_names[] = {"name", "columns", "watermark_column"};
    static const char* const stream_names[] = {"name", "input", "plan"};
    rc = lm_db_string_table(sources ? src_names : stream_names, 3, cells, k, out);
  }
done:
  for (int64_t i = 0; owned != NULL && i < n; i++) lm_free(owned[i]);
  lm_free(owned);
  lm_free(cells);
  if (rc != LAMINAR_OK) return lm_error_set(err, rc, "out of memory");
  return LAMINAR_OK;
}

static laminar_code describe(laminar_db* db, const lm_stmt* stmt,
                             struct ArrowArrayStream* out, laminar_error* err) {
  const lm_schema* schema = NULL;
  lm_source_def* src = lm_db_find_source(db, stmt->name);
  lm_stream_def* s = src ? NULL : lm_db_find_stream(db, stmt->name);
  if (src) schema = &src->schema;
  if (s) schema = lm_db_is_view(s) ? lm_db_view_columns(s) : &s->out_schema;
  /* A table: its declared columns (keys NOT NULL), its changelog's without
   * _weight. */
  lm_source_def* changes = s != NULL ? lm_db_table_source(db, s->name) : NULL;
  lm_schema declared = {changes != NULL ? changes->schema.ncols - 1 : 0,
                        changes != NULL ? changes->schema.fields : NULL};
  if (changes != NULL) schema = &declared;
  if (schema == NULL) {
    char msg[256];
    snprintf(msg, sizeof msg, "no source, stream or view named '%s'", stmt->name);
    return fail_at(err, LAMINAR_ERR_SQL_UNKNOWN_OBJECT, stmt->name_line,
                   stmt->name_column, stmt->name, msg);
  }
  if (out == NULL) return LAMINAR_OK;
  int64_t n = schema->ncols;
  char** cells = lm_calloc((size_t)(n * 3 + 1), sizeof(char*));
  if (cells == NULL) return lm_error_set(err, LAMINAR_ERR_NOMEM, "out of memory");
  for (int64_t i = 0; i < n; i++) {
    cells[i * 3] = schema->fields[i].name;
    cells[i * 3 + 1] = (char*)lm_type_name(schema->fields[i].type);
    cells[i * 3 + 2] = schema->fields[i].not_null ? "NO" : "YES";
  }
  static const char* const names[] = {"column_name", "column_type", "null"};
  laminar_code rc = lm_db_string_table(names, 3, cells, n, out);
  lm_free(cells);
  if (rc != LAMINAR_OK) return lm_error_set(err, rc, "out of memory");
  return LAMINAR_OK;
}

/* ---- dispatch ---------------------------------------------------------------------------- */

/* A statement on a read-only database: DROP is refused, CREATE too unless it
 * repeats the stored definition (re-running a script's DDL); the rest reads. */
static laminar_code read_only_statement(laminar_db* db, const char* sql,
                                        const lm_stmt* st, laminar_error* err) {
  bool create = st->kind == LM_STMT_CREATE_SOURCE || st->kind == LM_STMT_CREATE_STREAM ||
                st->kind == LM_STMT_CREATE_SINK || st->kind == LM_STMT_CREATE_TABLE;
  if (st->kind == LM_STMT_INSERT || st->kind == LM_STMT_DELETE) {
    char what[192];
    snprintf(what, sizeof what, "takes no writes (%s '%s')",
             st->kind == LM_STMT_INSERT ? "INSERT INTO" : "DELETE FROM", st->name);
    laminar_code rc = lm_durable_refuse_write(db->dur, what, err);
    lm_error_at(err, st->line, st->column);
    lm_error_object(err, st->name, NULL);
    return rc;
  }
  /* Functions are not stored: DROP FUNCTION changes nothing in data_dir. */
  if (!create && (st->kind != LM_STMT_DROP || st->object == LM_OBJ_FUNCTION))
    return LAMINAR_OK;
  if (create) {
    bool skip;
    LM_TRY(check_new_name(db, sql, st, err, &skip));
    if (skip) return LAMINAR_OK;
  }
  char what[192];
  snprintf(what, sizeof what, "takes no DDL (%s '%s')", create ? "CREATE" : "DROP",
           st->name);
  laminar_code rc = lm_durable_refuse_write(db->dur, what, err);
  lm_error_at(err, st->line, st->column);
  lm_error_object(err, st->name, NULL);
  return rc;
}

laminar_code lm_db_execute_locked(laminar_db* db, const char* sql,
                                  struct ArrowArrayStream* out_rows, laminar_error* err) {
  lm_arena* arena;
  if (lm_arena_create(&arena) != LAMINAR_OK) {
    return lm_error_set(err, LAMINAR_ERR_NOMEM, "out of memory");
  }
  lm_stmt** stmts = NULL;
  size_t n = 0;
  laminar_code rc = lm_sql_parse(arena, sql, &stmts, &n, err);
  if (rc == LAMINAR_OK && out_rows != NULL &&
      (n != 1 ||
       (stmts[0]->kind != LM_STMT_SHOW && stmts[0]->kind != LM_STMT_DESCRIBE &&
        stmts[0]->kind != LM_STMT_SELECT && stmts[0]->kind != LM_STMT_EXPLAIN))) {
    rc = lm_error_set(err, LAMINAR_ERR_SQL_UNSUPPORTED,
                      "laminar_query takes exactly one SELECT, EXPLAIN, SHOW or DESCRIBE "
                      "statement");
  }
  for (size_t i = 0; i < n && rc == LAMINAR_OK; i++) {
    const lm_stmt* st = stmts[i];
    if (lm_durable_read_only(db->dur) && !lm_durable_recovering(db->dur)) {
      rc = read_only_statement(db, sql, st, err);
      if (rc != LAMINAR_OK || st->kind == LM_STMT_CREATE_SOURCE ||
          st->kind == LM_STMT_CREATE_STREAM || st->kind == LM_STMT_CREATE_SINK ||
          st->kind == LM_STMT_CREATE_TABLE)
        continue; /* refused, or a re-declaration: nothing to do */
    }
    switch (st->kind) {
      case LM_STMT_CREATE_SOURCE: rc = create_source(db, sql, st, err); break;
      case LM_STMT_CREATE_STREAM: rc = create_stream(db, sql, st, err); break;
      case LM_STMT_CREATE_SINK: rc = create_sink(db, sql, st, err); break;
      case LM_STMT_CREATE_TABLE: rc = lm_db_create_table(db, sql, st, err); break;
      case LM_STMT_INSERT: rc = lm_db_insert(db, st, err); break;
      case LM_STMT_DELETE: rc = lm_db_delete(db, st, err); break;
      case LM_STMT_DROP:
        if (st->object == LM_OBJ_TABLE) {
          rc = lm_db_drop_table(db, st, err);
        } else if (st->object == LM_OBJ_SINK) {
          rc = drop_sink(db, st, err);
        } else if (st->object == LM_OBJ_FUNCTION) {
          rc = lm_db_function_drop(db, st->name, st->if_exists, err);
          if (rc != LAMINAR_OK) lm_error_at(err, st->name_line, st->name_column);
        } else if (st->object != LM_OBJ_SOURCE && st->object != LM_OBJ_STREAM &&
                   st->object != LM_OBJ_VIEW) {
          rc = fail_at(
              err, LAMINAR_ERR_SQL_UNSUPPORTED, st->line, st->column, st->name,
              "only DROP SOURCE, DROP TABLE, DROP STREAM, DROP MATERIALIZED VIEW and "
              "DROP SINK are supported");
        } else {
          rc = lm_db_drop(db, st, err);
        }
        break;
      case LM_STMT_SHOW: rc = show(db, st, out_rows, err); break;
      case LM_STMT_DESCRIBE: rc = describe(db, st, out_rows, err); break;
      case LM_STMT_SELECT: rc = lm_db_select(db, st, out_rows, err); break;
      case LM_STMT_EXPLAIN: rc = lm_db_explain(db, st, out_rows, err); break;
      default:
        rc = fail_at(err, LAMINAR_ERR_SQL_UNSUPPORTED, st->line, st->column, NULL,
                     "this statement is not supported yet");
        break;
    }
  }
  lm_arena_destroy(arena);
  return rc;
}

void lm_db_catalog_free(laminar_db* db) {
  for (int32_t i = db->nsinks - 1; i >= 0; i--) lm_db_sink_free(db->sinks[i]);
  lm_free(db->sinks);
  db->sinks = NULL;
  db->nsinks = 0;
  for (int32_t i = db->graph.nstreams - 1; i >= 0; i--)
    lm_stream_def_free(db->graph.streams[i]);
  lm_free(db->graph.streams);
  lm_op_txn_free(&db->graph.txn);
  for (int32_t i = 0; i < db->graph.nsources; i++)
    lm_source_def_unref(db->graph.sources[i]);
  lm_free(db->graph.sources);
  memset(&db->graph, 0, sizeof db->graph);
}
