/*
 * view.c -- the catalog side of materialized views and named sinks.
 *
 * A materialized view is a stream (lm_stream_def) whose operator chain ends
 * in the materialize operator (op/view.h): CREATE MATERIALIZED VIEW binds and
 * builds like CREATE STREAM, then lm_db_view_attach() appends it. What the
 * view forwards -- to subscribers, sinks and the streams and views reading it
 * -- is its changelog: the view's columns and `_weight`. DESCRIBE and SELECT
 * see the view's own columns.
 *
 * CREATE SINK name FROM x (without INTO) is a named output endpoint: an entry
 * of the sink catalog (so SHOW SINKS, DROP SINK, the stored catalog and
 * dependency checks treat it as any sink) whose protocol steps are no-ops;
 * laminar_subscribe(db, "name") subscribes to x through it.
 *
 * Control thread, under db->lock (internal.h).
 */
#include "db/internal.h"

#include "op/view.h"
#include "sink/sink.h"
#include "util/util.h"

#include <stdio.h>
#include <string.h>

/* ---- views ---------------------------------------------------------------------------- */

bool lm_db_is_view(const lm_stream_def* s) { return lm_op_view_of(s->chain) != NULL; }

bool lm_db_is_table(const lm_stream_def* s) {
  return lm_op_is_table(lm_op_view_of(s->chain));
}

const lm_schema* lm_db_view_columns(const lm_stream_def* s) {
  return lm_op_view_columns(lm_op_view_of(s->chain));
}

const char* lm_db_object_word(lm_object_kind kind) {
  switch (kind) {
    case LM_OBJ_SOURCE: return "source";
    case LM_OBJ_STREAM: return "stream";
    case LM_OBJ_VIEW: return "materialized view";
    case LM_OBJ_SINK: return "sink";
    case LM_OBJ_FUNCTION: return "function";
    case LM_OBJ_TABLE: return "table";
  }
  return "object";
}

laminar_code lm_db_view_attach(lm_stream_def* s, const lm_stmt* stmt,
                               laminar_error* err) {
  lm_op* tail = s->chain;
  while (tail->next != NULL) tail = tail->next;
  lm_op* view;
  laminar_code rc;
  if (stmt->table_fed) { /* a table fed by its query (table.c): errors its own */
    LM_TRY(lm_db_table_fed_op(&s->plan.out_schema, stmt, &view, err));
    rc = LAMINAR_OK;
  } else if (stmt->npkey > 0) { /* a table's stream (table.c): its key's columns */
    int32_t keys[64];
    int32_t nkey = 0;
    for (size_t k = 0; k < stmt->npkey && k < 64; k++)
      keys[nkey++] = lm_schema_find(&s->plan.out_schema, stmt->pkey[k]);
    rc = lm_op_table_create(&s->plan.out_schema, keys, nkey, &view);
  } else {
    rc = lm_op_view_create(&s->plan.out_schema, &view);
  }
  if (rc == LAMINAR_ERR_SCHEMA_INVALID) {
    lm_error_set(err, rc,
                 "materialized view '%s' needs columns other than _weight (the name is "
                 "reserved for the changelog weight) at line %d, column %d",
                 stmt->name, (int)stmt->line, (int)stmt->column);
    lm_error_at(err, stmt->line, stmt->column);
    lm_error_object(err, stmt->name, NULL);
    return rc;
  }
  if (rc != LAMINAR_OK) return lm_error_set(err, rc, "out of memory");
  lm_schema changelog;
  if (lm_schema_copy(&view->out_schema, &changelog) != 0) {
    lm_op_chain_destroy(view);
    return lm_error_set(err, LAMINAR_ERR_NOMEM, "out of memory");
  }
  tail->next = view;
  lm_schema_free(&s->out_schema);
  s->out_schema = changelog;
  return LAMINAR_OK;
}

/* ---- named sinks (output endpoints) ---------------------------------------------------- */

/* The endpoint has nothing to write or publish: every step succeeds. */
static laminar_code endpoint_write(lm_sink* s, const lm_vec* cols, int64_t nrows,
                                   laminar_error* err) {
  LM_UNUSED(s);
  LM_UNUSED(cols);
  LM_UNUSED(nrows);
  LM_UNUSED(err);
  return LAMINAR_OK;
}

static laminar_code endpoint_epoch(lm_sink* s, uint64_t epoch, laminar_error* err) {
  LM_UNUSED(s);
  LM_UNUSED(epoch);
  LM_UNUSED(err);
  return LAMINAR_OK;
}

static laminar_code endpoint_pre_commit(lm_sink* s, laminar_error* err) {
  LM_UNUSED(s);
  LM_UNUSED(err);
  return LAMINAR_OK;
}

static void endpoint_close(lm_sink* s) { lm_free(s); }

static const lm_sink_vt endpoint_vt = {
    .write = endpoint_write,
    .begin = endpoint_epoch,
    .pre_commit = endpoint_pre_commit,
    .commit = endpoint_epoch,
    .recover = endpoint_epoch,
    .close = endpoint_close,
};

laminar_code lm_db_create_endpoint(laminar_db* db, const char* sql, const lm_stmt* stmt,
                                   lm_stream_def* stream, laminar_error* err) {
  if (stmt->noptions > 0) {
    const lm_ast_option* o = &stmt->options[0];
    lm_error_set(
        err, LAMINAR_ERR_CONFIG_KEY,
        "sink '%s': unknown option '%s' (a sink without INTO takes no options) at "
        "line %d, column %d",
        stmt->name, o->key, (int)o->value->line, (int)o->value->column);
    lm_error_at(err, o->value->line, o->value->column);
    lm_error_object(err, stmt->name, NULL);
    return LAMINAR_ERR_CONFIG_KEY;
  }
  lm_sink_def* k = lm_calloc(1, sizeof *k);
  lm_sink* sink = lm_calloc(1, sizeof *sink);
  lm_sink_def** grown =
      lm_realloc(db->sinks, sizeof(lm_sink_def*) * (size_t)(db->nsinks + 1));
  if (grown != NULL) db->sinks = grown;
  if (k != NULL) {
    k->name = lm_strdup(stmt->name);
    k->sql = lm_db_stmt_text(sql, stmt);
  }
  if (k == NULL || sink == NULL || grown == NULL || k->name == NULL || k->sql == NULL) {
    lm_free(sink);
    if (k != NULL) lm_db_sink_free(k);
    return lm_error_set(err, LAMINAR_ERR_NOMEM, "out of memory");
  }
  sink->vt = &endpoint_vt;
  k->sink = sink;
  k->stream = stream;
  /* Not in stream->sinks (nothing to write): the reactor never sees it. */
  db->sinks[db->nsinks++] = k;
  lm_durable_identify(db->dur, k->name, &k->incarnation, NULL);
  return lm_durable_catalog_changed(db, err);
}

lm_stream_def* lm_db_find_output(laminar_db* db, const char* name) {
  lm_stream_def* s = lm_db_find_stream(db, name);
  if (s != NULL) return s;
  for (int32_t i = 0; i < db->nsinks; i++) {
    if (lm_streq_nocase(db->sinks[i]->name, name)) return db->sinks[i]->stream;
  }
  return NULL;
}

laminar_code lm_db_show_sinks(laminar_db* db, struct ArrowArrayStream* out,
                              laminar_error* err) {
  if (out == NULL) return LAMINAR_OK;
  char** cells = lm_calloc((size_t)db->nsinks * 3 + 1, sizeof(char*));
  if (cells == NULL) return lm_error_set(err, LAMINAR_ERR_NOMEM, "out of memory");
  for (int32_t i = 0; i < db->nsinks; i++) {
    const lm_sink_def* k = db->sinks[i];
    cells[i * 3] = k->name;
    cells[i * 3 + 1] = k->stream->name;
    cells[i * 3 + 2] = k->sql == NULL                ? "connector"
                       : k->sink->vt == &endpoint_vt ? "subscribe"
                                                     : "file";
  }
  static const char* const names[] = {"name", "input", "kind"};
  laminar_code rc = lm_db_string_table(names, 3, cells, db->nsinks, out);
  lm_free(cells);
  return rc == LAMINAR_OK ? LAMINAR_OK : lm_error_set(err, rc, "out of memory");
}
