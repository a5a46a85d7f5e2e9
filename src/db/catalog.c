/*
 * catalog.c -- executing SQL statements against the catalog: CREATE SOURCE,
 * CREATE STREAM, DROP, SHOW, DESCRIBE. Runs under db->lock; graph changes
 * pause the reactor for the edit (rt.h).
 */
#include "db/internal.h"

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

static const lm_schema* lookup_input(void* arg, const char* name, bool* out_is_source) {
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

static laminar_code fail_at(laminar_error* err, laminar_code code, int32_t line, int32_t col,
                            const char* object, const char* msg) {
  lm_error_set(err, code, "%s at line %d, column %d", msg, (int)line, (int)col);
  lm_error_at(err, line, col);
  lm_error_object(err, object, NULL);
  return code;
}

static char* stmt_text(const char* sql, const lm_stmt* stmt) {
  char* t = lm_malloc(stmt->text_len + 1);
  if (t == NULL) return NULL;
  memcpy(t, sql + stmt->text_offset, stmt->text_len);
  t[stmt->text_len] = '\0';
  return t;
}

static laminar_code check_new_name(laminar_db* db, const lm_stmt* stmt, laminar_error* err,
                                   bool* out_skip) {
  *out_skip = false;
  if (lm_db_find_source(db, stmt->name) == NULL && lm_db_find_stream(db, stmt->name) == NULL) {
    return LAMINAR_OK;
  }
  if (stmt->if_not_exists) {
    *out_skip = true;
    return LAMINAR_OK;
  }
  char msg[256];
  snprintf(msg, sizeof msg, "an object named '%s' already exists", stmt->name);
  return fail_at(err, LAMINAR_ERR_SQL_DUPLICATE_OBJECT, stmt->name_line, stmt->name_column,
                 stmt->name, msg);
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
  LM_TRY(check_new_name(db, stmt, err, &skip));
  if (skip) return LAMINAR_OK;
  char msg[256];
  uint32_t capacity = db->buffer_size;
  for (size_t i = 0; i < stmt->noptions; i++) {
    const lm_ast_option* o = &stmt->options[i];
    const lm_ast_expr* v = o->value;
    if (lm_streq_nocase(o->key, "buffer_size")) {
      int64_t n = -1;
      if (v->kind == LM_AST_LITERAL && v->lit == LM_LIT_INT) n = v->i;
      if (v->kind == LM_AST_LITERAL && v->lit == LM_LIT_STRING) {
        char tmp[32] = {0};
        memcpy(tmp, v->s, v->slen < 31 ? v->slen : 31);
        char* end;
        n = strtoll(tmp, &end, 10);
        if (*end != '\0') n = -1;
      }
      if (n < 2 || n > (1 << 24) || (n & (n - 1)) != 0) {
        return fail_at(err, LAMINAR_ERR_CONFIG_VALUE, v->line, v->column, stmt->name,
                       "buffer_size must be a power of two between 2 and 16777216");
      }
      capacity = (uint32_t)n;
    } else {
      snprintf(msg, sizeof msg, "unknown source option '%s' (known: buffer_size)", o->key);
      return fail_at(err, LAMINAR_ERR_CONFIG_KEY, v->line, v->column, stmt->name, msg);
    }
  }
  lm_source_def* def = lm_calloc(1, sizeof *def);
  if (def == NULL) return lm_error_set(err, LAMINAR_ERR_NOMEM, "out of memory");
  atomic_init(&def->refs, 1);
  atomic_init(&def->dropped, false);
  atomic_init(&def->has_producer, false);
  def->wm_col = -1;
  def->max_ts_ms = INT64_MIN;
  def->watermark_ms = INT64_MIN;
  lm_schema_init_empty(&def->schema);
  laminar_code rc = LAMINAR_OK;
  def->name = lm_strdup(stmt->name);
  def->sql = stmt_text(sql, stmt);
  if (def->name == NULL || def->sql == NULL) goto nomem;
  for (size_t i = 0; i < stmt->ncolumns; i++) {
    const lm_ast_column_def* c = &stmt->columns[i];
    if (lm_schema_find(&def->schema, c->name) >= 0) {
      snprintf(msg, sizeof msg, "source '%s': duplicate column '%s'", stmt->name, c->name);
      rc = fail_at(err, LAMINAR_ERR_SCHEMA_INVALID, c->line, c->column, stmt->name, msg);
      lm_error_object(err, stmt->name, c->name);
      goto fail;
    }
    if (lm_schema_add(&def->schema, c->name, lm_bind_sql_type(c->type), c->not_null) != 0) {
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
      snprintf(msg, sizeof msg, "source '%s': WATERMARK FOR names no column '%s'", stmt->name,
               stmt->watermark_column);
      rc = fail_at(err, LAMINAR_ERR_SQL_UNKNOWN_COLUMN, stmt->wm_line, stmt->wm_column,
                   stmt->name, msg);
      lm_error_object(err, stmt->name, stmt->watermark_column);
      goto fail;
    }
    lm_type t = def->schema.fields[idx].type;
    if (t != LM_TYPE_INT64 && t != LM_TYPE_TIMESTAMP && t != LM_TYPE_INT32) {
      snprintf(msg, sizeof msg,
               "source '%s': watermark column '%s' must be BIGINT (epoch ms) or TIMESTAMP, "
               "got %s",
               stmt->name, stmt->watermark_column, lm_type_name(t));
      rc = fail_at(err, LAMINAR_ERR_TYPE_MISMATCH, stmt->wm_line, stmt->wm_column, stmt->name,
                   msg);
      lm_error_object(err, stmt->name, stmt->watermark_column);
      goto fail;
    }
    if (stmt->watermark_delay_ms < 0) {
      rc = fail_at(err, LAMINAR_ERR_SQL_SYNTAX, stmt->wm_line, stmt->wm_column, stmt->name,
                   "the watermark delay must not be negative");
      goto fail;
    }
    def->wm_col = idx;
    def->wm_delay_ms = stmt->watermark_delay_ms;
  }
  if (lm_ring_create(capacity, &def->ring) != LAMINAR_OK) goto nomem;
  lm_rt_pause(&db->rt);
  rc = append_ptr((void***)&db->graph.sources, &db->graph.nsources, def);
  lm_rt_resume(&db->rt);
  if (rc != LAMINAR_OK) goto nomem;
  return LAMINAR_OK;
nomem:
  rc = lm_error_set(err, LAMINAR_ERR_NOMEM, "out of memory");
fail:
  lm_source_def_unref(def);
  return rc;
}

/* ---- CREATE STREAM ------------------------------------------------------------------- */

static laminar_code create_stream(laminar_db* db, const char* sql, const lm_stmt* stmt,
                                  laminar_error* err) {
  bool skip;
  LM_TRY(check_new_name(db, stmt, err, &skip));
  if (skip) return LAMINAR_OK;
  if (stmt->materialized || stmt->object == LM_OBJ_VIEW) {
    return fail_at(err, LAMINAR_ERR_SQL_UNSUPPORTED, stmt->line, stmt->column, stmt->name,
                   "CREATE [MATERIALIZED] VIEW is not supported yet (use CREATE STREAM)");
  }
  lm_stream_def* s = lm_calloc(1, sizeof *s);
  if (s == NULL) return lm_error_set(err, LAMINAR_ERR_NOMEM, "out of memory");
  s->watermark_ms = INT64_MIN;
  atomic_init(&s->late_rows, 0);
  laminar_code rc = lm_bind_stream(stmt, lookup_input, db, &s->plan, err);
  if (rc != LAMINAR_OK) {
    lm_free(s);
    return rc;
  }
  s->name = lm_strdup(stmt->name);
  s->sql = stmt_text(sql, stmt);
  if (s->name == NULL || s->sql == NULL || lm_schema_copy(&s->plan.out_schema, &s->out_schema) != 0 ||
      lm_plan_build_chain(&s->plan, &s->chain) != LAMINAR_OK) {
    lm_stream_def_free(s);
    return lm_error_set(err, LAMINAR_ERR_NOMEM, "out of memory");
  }
  lm_stream_def_attach(s);
  lm_source_def* src = s->plan.input_is_source ? lm_db_find_source(db, s->plan.input) : NULL;
  lm_stream_def* up = src ? NULL : lm_db_find_stream(db, s->plan.input);
  lm_rt_pause(&db->rt);
  /* The new stream starts at its input's current watermark: the input's past
   * is not replayed into it, and its windows close from the next advance on. */
  s->watermark_ms = src != NULL ? src->watermark_ms : up->watermark_ms;
  if (s->watermark_ms != INT64_MIN) {
    lm_op_chain_watermark(s->chain, s->watermark_ms); /* empty state: emits nothing */
  }
  if (src != NULL) {
    rc = lm_graph_add_reader(&src->readers, &src->nreaders, s);
  } else {
    rc = lm_graph_add_reader(&up->readers, &up->nreaders, s);
  }
  if (rc == LAMINAR_OK) {
    rc = append_ptr((void***)&db->graph.streams, &db->graph.nstreams, s);
    if (rc != LAMINAR_OK) {
      if (src != NULL) {
        lm_graph_remove_reader(src->readers, &src->nreaders, s);
      } else {
        lm_graph_remove_reader(up->readers, &up->nreaders, s);
      }
    }
  }
  lm_rt_resume(&db->rt);
  if (rc != LAMINAR_OK) {
    lm_stream_def_free(s);
    return lm_error_set(err, LAMINAR_ERR_NOMEM, "out of memory");
  }
  return LAMINAR_OK;
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

static laminar_code drop(laminar_db* db, const lm_stmt* stmt, laminar_error* err) {
  char msg[256];
  lm_source_def* src = lm_db_find_source(db, stmt->name);
  lm_stream_def* s = lm_db_find_stream(db, stmt->name);
  bool want_source = stmt->object == LM_OBJ_SOURCE;
  if ((want_source && src == NULL) || (!want_source && s == NULL)) {
    if (stmt->if_exists) return LAMINAR_OK;
    snprintf(msg, sizeof msg, "no %s named '%s'", want_source ? "source" : "stream", stmt->name);
    return fail_at(err, LAMINAR_ERR_SQL_UNKNOWN_OBJECT, stmt->name_line, stmt->name_column,
                   stmt->name, msg);
  }
  int32_t nreaders = want_source ? src->nreaders : s->nreaders;
  if (nreaders > 0) {
    lm_stream_def* r = want_source ? src->readers[0] : s->readers[0];
    snprintf(msg, sizeof msg, "cannot drop '%s': stream '%s' reads from it", stmt->name, r->name);
    return fail_at(err, LAMINAR_ERR_SQL_DEPENDENCY, stmt->name_line, stmt->name_column,
                   stmt->name, msg);
  }
  lm_rt_pause(&db->rt);
  if (want_source) {
    remove_ptr((void**)db->graph.sources, &db->graph.nsources, src);
    atomic_store_explicit(&src->dropped, true, memory_order_release);
  } else {
    remove_ptr((void**)db->graph.streams, &db->graph.nstreams, s);
    lm_source_def* in = s->plan.input_is_source ? lm_db_find_source(db, s->plan.input) : NULL;
    if (in != NULL) {
      lm_graph_remove_reader(in->readers, &in->nreaders, s);
    } else {
      lm_stream_def* up = lm_db_find_stream(db, s->plan.input);
      if (up != NULL) lm_graph_remove_reader(up->readers, &up->nreaders, s);
    }
    lm_db_detach_stream_subs(db, s);
  }
  lm_rt_resume(&db->rt);
  if (want_source) {
    lm_source_def_unref(src);
  } else {
    lm_stream_def_free(s);
  }
  return LAMINAR_OK;
}

/* ---- SHOW / DESCRIBE ----------------------------------------------------------------- */

/* Build a table of string columns (`ncols` names) from rows of strings. */
static laminar_code string_table(const char* const* names, int32_t ncols, char** cells,
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

static char* format_columns(const lm_schema* s) {
  size_t cap = 64;
  for (int32_t i = 0; i < s->ncols; i++) cap += strlen(s->fields[i].name) + 32;
  char* out = lm_malloc(cap);
  if (out == NULL) return NULL;
  size_t len = 0;
  out[0] = '\0';
  for (int32_t i = 0; i < s->ncols; i++) {
    len += (size_t)snprintf(out + len, cap - len, "%s%s %s%s", i ? ", " : "", s->fields[i].name,
                            lm_type_name(s->fields[i].type),
                            s->fields[i].not_null ? " NOT NULL" : "");
  }
  return out;
}

static laminar_code show(laminar_db* db, const lm_stmt* stmt, struct ArrowArrayStream* out,
                         laminar_error* err) {
  bool sources = stmt->object == LM_OBJ_SOURCE;
  if (stmt->object != LM_OBJ_SOURCE && stmt->object != LM_OBJ_STREAM) {
    return fail_at(err, LAMINAR_ERR_SQL_UNSUPPORTED, stmt->line, stmt->column, NULL,
                   "only SHOW SOURCES and SHOW STREAMS are supported");
  }
  if (out == NULL) return LAMINAR_OK;
  int64_t n = sources ? db->graph.nsources : db->graph.nstreams;
  char** cells = lm_calloc((size_t)(n * 3 + 1), sizeof(char*));
  char** owned = lm_calloc((size_t)(n + 1), sizeof(char*));
  laminar_code rc = LAMINAR_OK;
  if (cells == NULL || owned == NULL) {
    rc = LAMINAR_ERR_NOMEM;
    goto done;
  }
  for (int64_t i = 0; i < n; i++) {
    if (sources) {
      lm_source_def* s = db->graph.sources[i];
      owned[i] = format_columns(&s->schema);
      if (owned[i] == NULL) {
        rc = LAMINAR_ERR_NOMEM;
        goto done;
      }
      cells[i * 3] = s->name;
      cells[i * 3 + 1] = owned[i];
      cells[i * 3 + 2] = s->wm_col >= 0 ? s->schema.fields[s->wm_col].name : "";
    } else {
      lm_stream_def* s = db->graph.streams[i];
      cells[i * 3] = s->name;
      cells[i * 3 + 1] = s->plan.input;
      cells[i * 3 + 2] = (char*)lm_plan_describe(&s->plan);
      if (cells[i * 3 + 2] == NULL) {
        rc = LAMINAR_ERR_NOMEM;
        goto done;
      }
    }
  }
  {
    static const char* const src_names[] = {"name", "columns", "watermark_column"};
    static const char* const stream_names[] = {"name", "input", "plan"};
    rc = string_table(sources ? src_names : stream_names, 3, cells, n, out);
  }
done:
  for (int64_t i = 0; owned != NULL && i < n; i++) lm_free(owned[i]);
  lm_free(owned);
  lm_free(cells);
  if (rc != LAMINAR_OK) return lm_error_set(err, rc, "out of memory");
  return LAMINAR_OK;
}

static laminar_code describe(laminar_db* db, const lm_stmt* stmt, struct ArrowArrayStream* out,
                             laminar_error* err) {
  const lm_schema* schema = NULL;
  lm_source_def* src = lm_db_find_source(db, stmt->name);
  lm_stream_def* s = src ? NULL : lm_db_find_stream(db, stmt->name);
  if (src) schema = &src->schema;
  if (s) schema = &s->out_schema;
  if (schema == NULL) {
    char msg[256];
    snprintf(msg, sizeof msg, "no source or stream named '%s'", stmt->name);
    return fail_at(err, LAMINAR_ERR_SQL_UNKNOWN_OBJECT, stmt->name_line, stmt->name_column,
                   stmt->name, msg);
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
  laminar_code rc = string_table(names, 3, cells, n, out);
  lm_free(cells);
  if (rc != LAMINAR_OK) return lm_error_set(err, rc, "out of memory");
  return LAMINAR_OK;
}

/* ---- dispatch ---------------------------------------------------------------------------- */

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
      (n != 1 || (stmts[0]->kind != LM_STMT_SHOW && stmts[0]->kind != LM_STMT_DESCRIBE))) {
    rc = lm_error_set(err, LAMINAR_ERR_SQL_UNSUPPORTED,
                      "laminar_query takes exactly one SHOW or DESCRIBE statement");
  }
  for (size_t i = 0; i < n && rc == LAMINAR_OK; i++) {
    const lm_stmt* st = stmts[i];
    switch (st->kind) {
      case LM_STMT_CREATE_SOURCE: rc = create_source(db, sql, st, err); break;
      case LM_STMT_CREATE_STREAM: rc = create_stream(db, sql, st, err); break;
      case LM_STMT_DROP:
        if (st->object != LM_OBJ_SOURCE && st->object != LM_OBJ_STREAM) {
          rc = fail_at(err, LAMINAR_ERR_SQL_UNSUPPORTED, st->line, st->column, st->name,
                       "only DROP SOURCE and DROP STREAM are supported");
        } else {
          rc = drop(db, st, err);
        }
        break;
      case LM_STMT_SHOW: rc = show(db, st, out_rows, err); break;
      case LM_STMT_DESCRIBE: rc = describe(db, st, out_rows, err); break;
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
  for (int32_t i = db->graph.nstreams - 1; i >= 0; i--) lm_stream_def_free(db->graph.streams[i]);
  lm_free(db->graph.streams);
  for (int32_t i = 0; i < db->graph.nsources; i++) lm_source_def_unref(db->graph.sources[i]);
  lm_free(db->graph.sources);
  memset(&db->graph, 0, sizeof db->graph);
}
