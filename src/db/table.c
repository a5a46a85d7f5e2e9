/*
 * table.c -- tables: CREATE TABLE, INSERT INTO ... VALUES, DELETE FROM,
 * DROP TABLE, SHOW TABLES, and laminar_table_upsert / laminar_table_delete.
 *
 * A table `t` (PRIMARY KEY (k, ...)) is made of two catalog objects that one
 * statement creates and one DROP TABLE removes:
 *  - the source `t$changes`: the table's columns then `_weight BIGINT`. Every
 *    write is a batch pushed to it (weight +1 or NULL: upsert the row;
 *    weight -1: delete the row of that key), so writes are logged in its WAL,
 *    replayed at recovery and ordered as any source's pushes are;
 *  - the materialized view `t` over it, whose operator (op/view.h
 *    lm_op_table_create) keeps one row per key and forwards the table's
 *    changelog (an upsert over another row: old -1, new +1). SELECT, streams
 *    and views read `t` as they read any view.
 * Both carry the CREATE TABLE text as their statement: the stored catalog
 * re-runs it once (the second entry repeats it and is skipped).
 *
 * Upsert semantics, as Flink SQL and RisingWave tables with a primary key: an
 * INSERT of a key already present replaces its row (no duplicate-key error).
 *
 * Control thread, under db->lock (internal.h).
 */
#include "db/internal.h"

#include "arrow/arrow.h"
#include "op/view.h"
#include "sql/binder.h"
#include "util/util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CHANGES_SUFFIX "$changes"
#define MAX_KEY 64 /* primary-key columns of one table */

static laminar_code fail_at(laminar_error* err, laminar_code code, int32_t line,
                            int32_t col, const char* object, const char* column,
                            const char* msg) {
  lm_error_set(err, code, "%s at line %d, column %d", msg, (int)line, (int)col);
  lm_error_at(err, line, col);
  lm_error_object(err, object, column);
  return code;
}

/* "<table>$changes" into buf; false when it does not fit. */
static bool changes_name(const char* table, char* buf, size_t cap) {
  int n = snprintf(buf, cap, "%s" CHANGES_SUFFIX, table);
  return n > 0 && (size_t)n < cap;
}

static lm_stream_def* find_table(laminar_db* db, const char* name) {
  lm_stream_def* s = lm_db_find_stream(db, name);
  return s != NULL && lm_db_is_table(s) ? s : NULL;
}

lm_source_def* lm_db_table_source(laminar_db* db, const char* name) {
  char buf[512];
  if (find_table(db, name) == NULL || !changes_name(name, buf, sizeof buf)) return NULL;
  return lm_db_find_source(db, buf);
}

/* Where table `name`'s changes come from: its changelog source, or for a
 * table fed by its query that query's root source (NULL when it reads
 * several inputs). */
static lm_source_def* changes_root(laminar_db* db, const char* name) {
  lm_source_def* def = lm_db_table_source(db, name);
  lm_stream_def* t = find_table(db, name);
  return def != NULL || t == NULL ? def : lm_db_root_source(db, t);
}

/* Whether column c is one of the nkey key columns `keys`. */
static bool is_key(const int32_t* keys, int32_t nkey, int32_t c) {
  for (int32_t k = 0; k < nkey; k++)
    if (keys[k] == c) return true;
  return false;
}

/* Whether table stream s is fed by its query (CREATE TABLE ... AS). */
static bool is_fed(const lm_stream_def* s) {
  return lm_op_table_is_fed(lm_op_view_of(s->chain));
}

laminar_code lm_db_table_writable(laminar_db* db, const char* name, const char* what,
                                  int32_t line, int32_t column, laminar_error* err) {
  lm_stream_def* s = find_table(db, name);
  if (s == NULL || !is_fed(s)) return LAMINAR_OK;
  char msg[400];
  snprintf(msg, sizeof msg,
           "table '%s' is fed by its query (CREATE TABLE ... AS SELECT): it takes no "
           "writes (%s); write to the query's input instead",
           s->name, what);
  if (line > 0) return fail_at(err, LAMINAR_ERR_STATE, line, column, s->name, NULL, msg);
  lm_error_set(err, LAMINAR_ERR_STATE, "%s", msg);
  lm_error_object(err, s->name, NULL);
  return LAMINAR_ERR_STATE;
}

/* The table named by stmt, or LDB-1002 at its name (LDB-9003 for a table
 * fed by its query). */
static laminar_code table_of(laminar_db* db, const lm_stmt* stmt, lm_stream_def** out_s,
                             lm_source_def** out_def, laminar_error* err) {
  *out_s = find_table(db, stmt->name);
  *out_def = *out_s != NULL ? lm_db_table_source(db, stmt->name) : NULL;
  if (*out_def != NULL) return LAMINAR_OK;
  LM_TRY(lm_db_table_writable(db, stmt->name,
                              stmt->kind == LM_STMT_DELETE ? "DELETE" : "INSERT",
                              stmt->name_line, stmt->name_column, err));
  char msg[300];
  snprintf(msg, sizeof msg, "no table named '%s'%s", stmt->name,
           lm_db_name_taken(db, stmt->name)
               ? " (a source, stream or view: only a table takes INSERT and DELETE)"
               : "");
  return fail_at(err, LAMINAR_ERR_SQL_UNKNOWN_OBJECT, stmt->name_line, stmt->name_column,
                 stmt->name, NULL, msg);
}

/* ---- CREATE TABLE / DROP TABLE / SHOW TABLES --------------------------------------- */

/* CREATE TABLE t ... AS query: one catalog object, the view `t` of the query
 * whose operator keeps the last row of each key (op/view.h
 * lm_op_table_create_fed). No changelog source: the feed is the query's
 * input, logged, checkpointed and replayed as any view's, so a restart
 * applies each of its changes once. */
static laminar_code create_fed(laminar_db* db, const char* sql, const lm_stmt* stmt,
                               laminar_error* err) {
  lm_stmt view = *stmt;
  view.kind = LM_STMT_CREATE_STREAM;
  view.object = LM_OBJ_VIEW;
  view.materialized = true;
  view.internal = true;
  view.table_fed = true;
  return lm_db_create_stream(db, sql, &view, err);
}

/* The key column named `name` (line:column) in `cols`, or LDB-1003. */
static laminar_code key_column(const lm_schema* cols, const lm_stmt* stmt, size_t k,
                               bool declared, int32_t* out, laminar_error* err) {
  *out = lm_schema_find(cols, stmt->pkey[k]);
  if (*out >= 0) return LAMINAR_OK;
  char msg[512];
  snprintf(msg, sizeof msg,
           declared ? "table '%s': PRIMARY KEY names no column '%s'"
                    : "table '%s': PRIMARY KEY names '%s', a column its query does not "
                      "give (name it in the SELECT, or with AS)",
           stmt->name, stmt->pkey[k]);
  return fail_at(err, LAMINAR_ERR_SQL_UNKNOWN_COLUMN, stmt->pkey_line[k],
                 stmt->pkey_column[k], stmt->name, stmt->pkey[k], msg);
}

laminar_code lm_db_table_fed_op(const lm_schema* in, const lm_stmt* stmt, lm_op** out,
                                laminar_error* err) {
  *out = NULL;
  char msg[512];
  bool changelog = lm_op_view_is_changelog(in);
  int32_t n = in->ncols - (changelog ? 1 : 0);
  size_t declared = stmt->ncolumns;
  const lm_ast_expr* first =
      stmt->select->nitems > 0 ? stmt->select->items[0].expr : NULL;
  int32_t at_line = first != NULL ? first->line : stmt->line;
  int32_t at_col = first != NULL ? first->column : stmt->column;
  if (declared > 0 && (size_t)n != declared) {
    snprintf(msg, sizeof msg, "table '%s' declares %zu columns, its query gives %d",
             stmt->name, declared, (int)n);
    return fail_at(err, LAMINAR_ERR_SCHEMA_MISMATCH, at_line, at_col, stmt->name, NULL,
                   msg);
  }
  if (stmt->npkey > MAX_KEY) {
    return fail_at(err, LAMINAR_ERR_SQL_LIMIT, stmt->name_line, stmt->name_column,
                   stmt->name, NULL, "the table's primary key is too long");
  }
  lm_schema cols;
  lm_schema_init_empty(&cols);
  laminar_code rc = LAMINAR_OK;
  for (int32_t c = 0; rc == LAMINAR_OK && c < n; c++) {
    const lm_field* f = &in->fields[c];
    const lm_ast_column_def* d = declared > 0 ? &stmt->columns[c] : NULL;
    const char* name = d != NULL ? d->name : f->name;
    bool not_null = f->not_null;
    if (d != NULL && lm_bind_sql_type(d->type) != f->type) {
      snprintf(msg, sizeof msg,
               "table '%s': column '%s' is %s, its query's column %d ('%s') is %s (CAST "
               "it in the SELECT)",
               stmt->name, d->name, lm_type_name(lm_bind_sql_type(d->type)), (int)c + 1,
               f->name, lm_type_name(f->type));
      rc = fail_at(err, LAMINAR_ERR_TYPE_MISMATCH, d->line, d->column, stmt->name,
                   d->name, msg);
    } else if (d != NULL && d->not_null && !f->not_null) {
      bool key = false;
      for (size_t k = 0; k < stmt->npkey; k++) key |= strcmp(stmt->pkey[k], d->name) == 0;
      if (!key) { /* (a key has a value: a row without one is not applied) */
        snprintf(msg, sizeof msg,
                 "table '%s': column '%s' is NOT NULL, its query's column %d ('%s') may "
                 "be NULL",
                 stmt->name, d->name, (int)c + 1, f->name);
        rc = fail_at(err, LAMINAR_ERR_TYPE_MISMATCH, d->line, d->column, stmt->name,
                     d->name, msg);
      }
      not_null = true;
    } else if (lm_streq_nocase(name, LM_WEIGHT_COLUMN)) {
      snprintf(msg, sizeof msg,
               "table '%s': the column name '%s' is reserved for the changelog weight",
               stmt->name, name);
      rc = fail_at(err, LAMINAR_ERR_SCHEMA_INVALID, d != NULL ? d->line : at_line,
                   d != NULL ? d->column : at_col, stmt->name, name, msg);
    } else if (lm_schema_find(&cols, name) >= 0) {
      snprintf(msg, sizeof msg, "table '%s': two columns are named '%s'", stmt->name,
               name);
      rc = fail_at(err, LAMINAR_ERR_SCHEMA_INVALID, d != NULL ? d->line : at_line,
                   d != NULL ? d->column : at_col, stmt->name, name, msg);
    }
    if (rc == LAMINAR_OK && lm_schema_add(&cols, name, f->type, not_null) != 0)
      rc = lm_error_set(err, LAMINAR_ERR_NOMEM, "out of memory");
  }
  int32_t keys[MAX_KEY];
  for (size_t k = 0; rc == LAMINAR_OK && k < stmt->npkey; k++) {
    rc = key_column(&cols, stmt, k, declared > 0, &keys[k], err);
    /* A key has a value: the table applies no row without one. */
    if (rc == LAMINAR_OK) cols.fields[keys[k]].not_null = true;
  }
  if (rc == LAMINAR_OK && changelog &&
      lm_schema_add(&cols, LM_WEIGHT_COLUMN, LM_TYPE_INT64, true) != 0)
    rc = lm_error_set(err, LAMINAR_ERR_NOMEM, "out of memory");
  if (rc == LAMINAR_OK) {
    rc = lm_op_table_create_fed(&cols, keys, (int32_t)stmt->npkey, out);
    if (rc != LAMINAR_OK) rc = lm_error_set(err, rc, "out of memory");
  }
  lm_schema_free(&cols);
  return rc;
}

laminar_code lm_db_create_table(laminar_db* db, const char* sql, const lm_stmt* stmt,
                                laminar_error* err) {
  char msg[512];
  char changes[512];
  if (lm_db_name_taken(db, stmt->name)) {
    lm_stream_def* have = find_table(db, stmt->name);
    /* IF NOT EXISTS, or the same statement again (a script re-run after
     * recovery, or the stored catalog's second entry): nothing to do. */
    if (stmt->if_not_exists ||
        (have != NULL && have->sql != NULL && strlen(have->sql) == stmt->text_len &&
         memcmp(have->sql, sql + stmt->text_offset, stmt->text_len) == 0)) {
      return LAMINAR_OK;
    }
    snprintf(msg, sizeof msg, "an object named '%s' already exists", stmt->name);
    return fail_at(err, LAMINAR_ERR_SQL_DUPLICATE_OBJECT, stmt->name_line,
                   stmt->name_column, stmt->name, NULL, msg);
  }
  if (!changes_name(stmt->name, changes, sizeof changes) || stmt->npkey > MAX_KEY) {
    return fail_at(err, LAMINAR_ERR_SQL_LIMIT, stmt->name_line, stmt->name_column,
                   stmt->name, NULL, "the table's name or primary key is too long");
  }
  for (size_t c = 0; c < stmt->ncolumns; c++) {
    if (lm_streq_nocase(stmt->columns[c].name, LM_WEIGHT_COLUMN)) {
      snprintf(msg, sizeof msg,
               "table '%s': the column name '%s' is reserved for the changelog weight",
               stmt->name, stmt->columns[c].name);
      return fail_at(err, LAMINAR_ERR_SCHEMA_INVALID, stmt->columns[c].line,
                     stmt->columns[c].column, stmt->name, stmt->columns[c].name, msg);
    }
  }
  if (stmt->select != NULL) return create_fed(db, sql, stmt, err);
  /* The changelog source: the columns (keys NOT NULL) then _weight. */
  lm_ast_column_def* cols = lm_calloc(stmt->ncolumns + 1, sizeof *cols);
  if (cols == NULL) return lm_error_set(err, LAMINAR_ERR_NOMEM, "out of memory");
  for (size_t c = 0; c < stmt->ncolumns; c++) cols[c] = stmt->columns[c];
  for (size_t k = 0; k < stmt->npkey; k++) {
    size_t c = 0;
    while (c < stmt->ncolumns && strcmp(stmt->columns[c].name, stmt->pkey[k]) != 0) c++;
    if (c == stmt->ncolumns) {
      lm_free(cols);
      snprintf(msg, sizeof msg, "table '%s': PRIMARY KEY names no column '%s'",
               stmt->name, stmt->pkey[k]);
      return fail_at(err, LAMINAR_ERR_SQL_UNKNOWN_COLUMN, stmt->pkey_line[k],
                     stmt->pkey_column[k], stmt->name, stmt->pkey[k], msg);
    }
    cols[c].not_null = true; /* a key has a value */
  }
  cols[stmt->ncolumns] = (lm_ast_column_def){LM_WEIGHT_COLUMN, LM_SQL_TYPE_INT64, false,
                                             stmt->line, stmt->column};
  lm_stmt src = *stmt;
  src.kind = LM_STMT_CREATE_SOURCE;
  src.object = LM_OBJ_SOURCE;
  src.name = changes;
  src.columns = cols;
  src.ncolumns = stmt->ncolumns + 1;
  src.npkey = 0;
  src.internal = true;
  laminar_code rc = lm_db_create_source(db, sql, &src, err);
  lm_free(cols);
  if (rc != LAMINAR_OK) return rc;
  lm_source_def* def = lm_db_find_source(db, changes);
  if (def == NULL || (def->table = lm_strdup(stmt->name)) == NULL) {
    rc = lm_error_set(err, LAMINAR_ERR_NOMEM, "out of memory");
  }
  /* The view over it: SELECT * FROM "t$changes", keyed by the primary key. */
  lm_ast_expr star = {
      .kind = LM_AST_STAR, .line = stmt->line, .column = stmt->column, .height = 1};
  lm_ast_select_item item = {&star, NULL};
  lm_ast_select sel = {.items = &item,
                       .nitems = 1,
                       .from = changes,
                       .from_line = stmt->name_line,
                       .from_column = stmt->name_column,
                       .limit = -1};
  lm_stmt view = *stmt;
  view.kind = LM_STMT_CREATE_STREAM;
  view.object = LM_OBJ_VIEW;
  view.materialized = true;
  view.columns = NULL;
  view.ncolumns = 0;
  view.has_watermark = false;
  view.options = NULL;
  view.noptions = 0;
  view.select = &sel;
  view.emit = LM_EMIT_DEFAULT;
  view.internal = true;
  if (rc == LAMINAR_OK) rc = lm_db_create_stream(db, sql, &view, err);
  if (rc != LAMINAR_OK) {
    /* Not half a table: the source goes again (its error stays the one). */
    lm_stmt drop = {.kind = LM_STMT_DROP,
                    .object = LM_OBJ_SOURCE,
                    .name = changes,
                    .if_exists = true,
                    .internal = true};
    lm_db_drop(db, &drop, NULL);
  }
  return rc;
}

static lm_stream_def* table_reader(laminar_db* db, const char* name);

laminar_code lm_db_drop_table(laminar_db* db, const lm_stmt* stmt, laminar_error* err) {
  char changes[512];
  if (find_table(db, stmt->name) == NULL) {
    if (stmt->if_exists) return LAMINAR_OK;
    char msg[300];
    snprintf(msg, sizeof msg, "no table named '%s'", stmt->name);
    return fail_at(err, LAMINAR_ERR_SQL_UNKNOWN_OBJECT, stmt->name_line,
                   stmt->name_column, stmt->name, NULL, msg);
  }
  lm_stream_def* joiner = table_reader(db, stmt->name);
  if (joiner != NULL) {
    char msg[300];
    snprintf(msg, sizeof msg, "cannot drop '%s': stream '%s' joins it", stmt->name,
             joiner->name);
    return fail_at(err, LAMINAR_ERR_SQL_DEPENDENCY, stmt->name_line, stmt->name_column,
                   stmt->name, NULL, msg);
  }
  /* No source's lookup-join order names the changelog source (or the
   * query's input) any more. */
  lm_source_def* def = changes_root(db, stmt->name);
  lm_rt_pause(&db->rt);
  for (int32_t i = 0; def != NULL && i < db->graph.nsources; i++)
    if (db->graph.sources[i]->order_of == def) db->graph.sources[i]->order_of = NULL;
  /* The query's input may feed another table a lookup join reads: its
   * joins order themselves again (none joins this one). */
  for (int32_t i = 0; def != NULL && def->table == NULL && i < db->graph.nstreams; i++)
    if (db->graph.streams[i]->plan.lookup) lm_db_table_order(db, db->graph.streams[i]);
  lm_rt_resume(&db->rt);
  /* The view first (refused while a stream, view or sink reads it), then its
   * changelog source. */
  lm_stmt part = *stmt;
  part.object = LM_OBJ_VIEW;
  part.internal = true;
  LM_TRY(lm_db_drop(db, &part, err));
  if (!changes_name(stmt->name, changes, sizeof changes)) return LAMINAR_OK;
  part.object = LM_OBJ_SOURCE;
  part.name = changes;
  part.if_exists = true;
  return lm_db_drop(db, &part, err);
}

/* The primary key's column indexes of table stream s (*n of them). */
static const int32_t* table_keys(const lm_stream_def* s, int32_t* n) {
  return lm_op_table_keys(lm_op_view_of(s->chain), n);
}

laminar_code lm_db_show_tables(laminar_db* db, struct ArrowArrayStream* out,
                               laminar_error* err) {
  if (out == NULL) return LAMINAR_OK;
  int64_t n = db->graph.nstreams;
  char** cells = lm_calloc((size_t)(n * 3 + 1), sizeof(char*));
  char** owned = lm_calloc((size_t)(n * 2 + 1), sizeof(char*));
  laminar_code rc = cells != NULL && owned != NULL ? LAMINAR_OK : LAMINAR_ERR_NOMEM;
  int64_t k = 0;
  for (int64_t i = 0; rc == LAMINAR_OK && i < n; i++) {
    lm_stream_def* s = db->graph.streams[i];
    if (!lm_db_is_table(s)) continue;
    const lm_schema* cols = lm_db_view_columns(s);
    int32_t nkey;
    const int32_t* keys = table_keys(s, &nkey);
    size_t len = 1;
    for (int32_t j = 0; j < nkey; j++) len += strlen(cols->fields[keys[j]].name) + 2;
    char* key_text = lm_malloc(len);
    owned[2 * i] = key_text;
    /* The changelog source's columns without _weight: keys NOT NULL. */
    lm_source_def* def = lm_db_table_source(db, s->name);
    lm_schema declared = {def != NULL ? def->schema.ncols - 1 : cols->ncols,
                          def != NULL ? def->schema.fields : cols->fields};
    owned[2 * i + 1] = lm_db_format_columns(&declared);
    if (key_text == NULL || owned[2 * i + 1] == NULL) {
      rc = LAMINAR_ERR_NOMEM;
      break;
    }
    key_text[0] = '\0';
    for (int32_t j = 0; j < nkey; j++) {
      if (j > 0) strcat(key_text, ", ");
      strcat(key_text, cols->fields[keys[j]].name);
    }
    cells[k * 3] = s->name;
    cells[k * 3 + 1] = owned[2 * i + 1];
    cells[k * 3 + 2] = key_text;
    k++;
  }
  if (rc == LAMINAR_OK) {
    static const char* const names[] = {"name", "columns", "primary_key"};
    rc = lm_db_string_table(names, 3, cells, k, out);
  }
  for (int64_t i = 0; owned != NULL && i < 2 * n; i++) lm_free(owned[i]);
  lm_free(owned);
  lm_free(cells);
  if (rc != LAMINAR_OK) return lm_error_set(err, rc, "out of memory");
  return LAMINAR_OK;
}

/* ---- lookup joins -------------------------------------------------------------------- */

const lm_schema* lm_db_table_columns(void* arg, const char* name, lm_plan_table* out) {
  lm_stream_def* s = find_table(arg, name);
  lm_source_def* def = s != NULL ? lm_db_table_source(arg, name) : NULL;
  if (def == NULL && (s == NULL || !is_fed(s))) return NULL;
  out->keys = table_keys(s, &out->nkeys);
  /* A table fed by its query has no changelog source and no event time of
   * its own: lookup joins read it, temporal joins do not. */
  out->changes = def != NULL ? def->name : NULL;
  out->time_col = def != NULL ? def->wm_col : -1;
  return lm_db_view_columns(s);
}

void lm_db_table_attach_lookup(laminar_db* db, lm_stream_def* s) {
  lm_stream_def* t = find_table(db, s->plan.lookup_table);
  if (s->chain != NULL && lm_op_is_lookup(s->chain))
    lm_op_lookup_set_table(s->chain, t != NULL ? lm_op_view_of(t->chain) : NULL);
}

void lm_db_table_order(laminar_db* db, lm_stream_def* s) {
  lm_source_def* root = lm_db_root_source(db, s);
  lm_source_def* changes = changes_root(db, s->plan.lookup_table);
  if (root == NULL || changes == NULL || root == changes || root->wal == NULL) return;
  changes->order_target = true;
  root->order_of = changes;
  root->order_noted = changes->processed_seq;
  root->order_self = root->processed_seq;
}

/* The first stream joining table `name`, NULL for none. */
static lm_stream_def* table_reader(laminar_db* db, const char* name) {
  for (int32_t i = 0; i < db->graph.nstreams; i++) {
    lm_stream_def* s = db->graph.streams[i];
    const char* joined = s->plan.lookup ? s->plan.lookup_table : s->plan.temporal_table;
    if (joined != NULL && lm_streq_nocase(joined, name)) return s;
  }
  return NULL;
}

/* ---- writes: rows -> one batch on the changelog source ----------------------------- */

/* Columns of nrows rows being built for a table's changelog (its source's
 * schema): values and null bytes per column, in one allocation each. */
typedef struct rows {
  int32_t ncols; /* the source's: the table's columns and _weight */
  int64_t nrows;
  lm_vec* cols;
  void** data;
  uint8_t** nulls;
} rows;

static void rows_free(rows* r) {
  for (int32_t c = 0; r->data != NULL && c < r->ncols; c++) {
    lm_free(r->data[c]);
    lm_free(r->nulls[c]);
  }
  lm_free(r->data);
  lm_free(r->nulls);
  lm_free(r->cols);
}

/* nrows rows of `schema`, every value NULL (zero data), weights w. */
static laminar_code rows_init(rows* r, const lm_schema* schema, int64_t nrows,
                              int64_t w) {
  memset(r, 0, sizeof *r);
  r->ncols = schema->ncols;
  r->nrows = nrows;
  r->cols = lm_calloc((size_t)r->ncols, sizeof *r->cols);
  r->data = lm_calloc((size_t)r->ncols, sizeof *r->data);
  r->nulls = lm_calloc((size_t)r->ncols, sizeof *r->nulls);
  if (r->cols == NULL || r->data == NULL || r->nulls == NULL) return LAMINAR_ERR_NOMEM;
  size_t n = (size_t)(nrows ? nrows : 1);
  for (int32_t c = 0; c < r->ncols; c++) {
    lm_type t = schema->fields[c].type;
    r->data[c] = lm_calloc(n, (size_t)lm_type_width(t));
    r->nulls[c] = lm_malloc(n);
    if (r->data[c] == NULL || r->nulls[c] == NULL) return LAMINAR_ERR_NOMEM;
    memset(r->nulls[c], 1, n);
    r->cols[c] = (lm_vec){t, nrows, r->nulls[c], r->data[c]};
  }
  int32_t wc = r->ncols - 1; /* _weight */
  for (int64_t i = 0; i < nrows; i++) {
    ((int64_t*)r->data[wc])[i] = w;
    r->nulls[wc][i] = 0;
  }
  return LAMINAR_OK;
}

/* Rows whose value in a NOT NULL column is NULL get that type's zero: a
 * delete's non-key values, which the table ignores. */
static void rows_fill_not_null(rows* r, const lm_schema* schema) {
  for (int32_t c = 0; c < r->ncols; c++) {
    if (!schema->fields[c].not_null) continue;
    memset(r->nulls[c], 0, (size_t)(r->nrows ? r->nrows : 1));
  }
}

/* Push the rows to def (the changelog source) as one batch. */
static laminar_code rows_push(laminar_db* db, lm_source_def* def, const rows* r,
                              laminar_error* err) {
  lm_batch* batch;
  if (lm_arrow_build(&def->schema, r->cols, r->nrows, &batch) != LAMINAR_OK)
    return lm_error_set(err, LAMINAR_ERR_NOMEM, "out of memory");
  struct ArrowArray array;
  struct ArrowSchema schema;
  array.release = NULL;
  schema.release = NULL;
  laminar_code rc = lm_batch_export(batch, &array);
  lm_batch_unref(batch);
  if (rc == LAMINAR_OK) rc = lm_arrow_schema_export(&def->schema, &schema);
  if (rc != LAMINAR_OK) {
    rc = lm_error_set(err, rc, "out of memory");
  } else {
    rc = lm_db_table_push(db, def, &array, &schema, err);
  }
  lm_arrow_release(&array);
  lm_arrow_schema_release(&schema);
  return rc;
}

/* Store literal e into column c, row i of r (field f of table `table`). */
static laminar_code put_literal(rows* r, int32_t c, int64_t i, const lm_field* f,
                                const lm_ast_expr* e, const char* table,
                                laminar_error* err) {
  char msg[512];
  if (e->kind != LM_AST_LITERAL) {
    snprintf(msg, sizeof msg,
             "table '%s': a value for column '%s' must be a literal (a number, "
             "'string', TRUE/FALSE or NULL)",
             table, f->name);
    return fail_at(err, LAMINAR_ERR_SQL_UNSUPPORTED, e->line, e->column, table, f->name,
                   msg);
  }
  if (e->lit == LM_LIT_NULL) {
    if (!f->not_null) return LAMINAR_OK; /* already NULL */
    snprintf(msg, sizeof msg, "table '%s': column '%s' is NOT NULL", table, f->name);
    return fail_at(err, LAMINAR_ERR_NULL_VIOLATION, e->line, e->column, table, f->name,
                   msg);
  }
  void* d = r->data[c];
  bool ok = true;
  switch (lm_type_kind(f->type)) {
    case LM_TYPE_DECIMAL: { /* '12.50' and 12 exactly; 12.5 as CAST from DOUBLE */
      lm_i128 x = 0;
      int32_t p = lm_type_precision(f->type), sc = lm_type_scale(f->type);
      char num[24];
      int n = snprintf(num, sizeof num, "%lld", (long long)e->i);
      ok = e->lit == LM_LIT_STRING
               ? lm_dec_parse((lm_str){e->s, (int64_t)e->slen}, p, sc, &x)
           : e->lit == LM_LIT_INT
               ? lm_dec_parse((lm_str){num, n}, p, sc, &x)
               : e->lit == LM_LIT_DOUBLE && lm_dec_from_double(e->d, p, sc, &x);
      if (ok) lm_vec_dec_put(f->type, d, i, x);
      break;
    }
    case LM_TYPE_INT64:
      ok = e->lit == LM_LIT_INT;
      if (ok) ((int64_t*)d)[i] = e->i;
      break;
    case LM_TYPE_INT32:
      ok = e->lit == LM_LIT_INT && e->i >= INT32_MIN && e->i <= INT32_MAX;
      if (ok) ((int32_t*)d)[i] = (int32_t)e->i;
      break;
    case LM_TYPE_DOUBLE:
      ok = e->lit == LM_LIT_INT || e->lit == LM_LIT_DOUBLE;
      if (ok) ((double*)d)[i] = e->lit == LM_LIT_INT ? (double)e->i : e->d;
      break;
    case LM_TYPE_BOOL:
      ok = e->lit == LM_LIT_BOOL;
      if (ok) ((uint8_t*)d)[i] = e->b ? 1 : 0;
      break;
    case LM_TYPE_STRING:
      ok = e->lit == LM_LIT_STRING;
      if (ok) ((lm_str*)d)[i] = (lm_str){e->s, (int64_t)e->slen};
      break;
    default: ok = false; break; /* TIMESTAMP: written through the push API */
  }
  if (!ok) {
    snprintf(msg, sizeof msg, "table '%s': column '%s' is %s, the value does not fit it",
             table, f->name, lm_type_name(f->type));
    return fail_at(err, LAMINAR_ERR_TYPE_MISMATCH, e->line, e->column, table, f->name,
                   msg);
  }
  r->nulls[c][i] = 0;
  return LAMINAR_OK;
}

/* INSERT INTO table SELECT ...: the SELECT runs once over its views' (and
 * tables') current rows, as an ad-hoc SELECT does, and its rows are written
 * as one batch, in order, matched to the table's columns by position. A
 * source or stream in its FROM is refused (that feed is continuous: CREATE
 * TABLE ... AS). */
static laminar_code insert_select(laminar_db* db, const lm_stmt* stmt, lm_source_def* def,
                                  laminar_error* err) {
  char msg[700];
  const lm_ast_select* sel = stmt->select;
  const lm_ast_select* first =
      sel->union_next == NULL && sel->from_select != NULL ? sel->from_select : sel;
  for (const lm_ast_select* x = first; x != NULL; x = x->union_next) {
    if (x->from_select != NULL || x->from == NULL) continue;
    lm_stream_def* in = lm_db_find_stream(db, x->from);
    if ((in != NULL && lm_db_is_view(in)) ||
        (in == NULL && lm_db_find_source(db, x->from) == NULL))
      continue; /* a view or table; or nothing, which the SELECT reports */
    snprintf(msg, sizeof msg,
             "INSERT INTO %s SELECT reads the current rows of materialized views and "
             "tables once; '%s' is a %s, whose rows keep coming: a table fed by it is "
             "CREATE TABLE %s ... AS SELECT ... FROM %s",
             stmt->name, x->from, in != NULL ? "stream" : "source", stmt->name, x->from);
    return fail_at(err, LAMINAR_ERR_SQL_NOT_MATERIALIZED, x->from_line, x->from_column,
                   stmt->name, NULL, msg);
  }
  lm_stmt q = {.kind = LM_STMT_SELECT,
               .line = stmt->line,
               .column = stmt->column,
               .select = stmt->select,
               .emit = LM_EMIT_DEFAULT};
  lm_schema got;
  lm_batch* batch;
  LM_TRY(lm_db_select_rows(db, &q, &got, &batch, err));
  int32_t ncols = def->schema.ncols - 1;
  laminar_code rc = LAMINAR_OK;
  /* Errors at the SELECT item of the column when items and columns pair up
   * (no `*`), else at the first item. */
  bool paired = sel->nitems == (size_t)got.ncols;
  for (size_t i = 0; paired && i < sel->nitems; i++)
    paired = sel->items[i].expr->kind != LM_AST_STAR;
  const lm_ast_expr* at = sel->items[0].expr;
  if (got.ncols != ncols) {
    snprintf(msg, sizeof msg, "table '%s' has %d columns, the SELECT gives %d",
             stmt->name, (int)ncols, (int)got.ncols);
    rc = fail_at(err, LAMINAR_ERR_SCHEMA_MISMATCH, at->line, at->column, stmt->name, NULL,
                 msg);
  }
  for (int32_t c = 0; rc == LAMINAR_OK && c < ncols; c++) {
    const lm_field* f = &def->schema.fields[c];
    if (got.fields[c].type == f->type) continue;
    if (paired) at = sel->items[c].expr;
    snprintf(
        msg, sizeof msg,
        "table '%s': column '%s' is %s, the SELECT's column %d ('%s') is %s (CAST it)",
        stmt->name, f->name, lm_type_name(f->type), (int)c + 1, got.fields[c].name,
        lm_type_name(got.fields[c].type));
    rc = fail_at(err, LAMINAR_ERR_TYPE_MISMATCH, at->line, at->column, stmt->name,
                 f->name, msg);
  }
  rows r = {0};
  if (rc == LAMINAR_OK && batch->nrows > 0) {
    rc = rows_init(&r, &def->schema, batch->nrows, 1);
    if (rc != LAMINAR_OK) rc = lm_error_set(err, rc, "out of memory");
    for (int32_t c = 0; rc == LAMINAR_OK && c < ncols; c++) r.cols[c] = batch->cols[c];
    if (rc == LAMINAR_OK) rc = rows_push(db, def, &r, err);
  }
  rows_free(&r);
  lm_batch_unref(batch);
  lm_schema_free(&got);
  return rc;
}

laminar_code lm_db_insert(laminar_db* db, const lm_stmt* stmt, laminar_error* err) {
  lm_stream_def* s;
  lm_source_def* def;
  LM_TRY(table_of(db, stmt, &s, &def, err));
  if (stmt->select != NULL) return insert_select(db, stmt, def, err);
  int32_t ncols = def->schema.ncols - 1;
  if (stmt->nvalues != (size_t)ncols) {
    char msg[300];
    snprintf(msg, sizeof msg, "table '%s' has %d columns, VALUES gives %zu", stmt->name,
             (int)ncols, stmt->nvalues);
    const lm_ast_expr* at = stmt->values[0];
    return fail_at(err, LAMINAR_ERR_SCHEMA_MISMATCH, at->line, at->column, stmt->name,
                   NULL, msg);
  }
  rows r;
  laminar_code rc = rows_init(&r, &def->schema, (int64_t)stmt->nrows, 1);
  if (rc != LAMINAR_OK) rc = lm_error_set(err, rc, "out of memory");
  for (size_t i = 0; rc == LAMINAR_OK && i < stmt->nrows; i++) {
    for (int32_t c = 0; rc == LAMINAR_OK && c < ncols; c++) {
      rc = put_literal(&r, c, (int64_t)i, &def->schema.fields[c],
                       stmt->values[i * stmt->nvalues + (size_t)c], stmt->name, err);
    }
  }
  if (rc == LAMINAR_OK) rc = rows_push(db, def, &r, err);
  rows_free(&r);
  return rc;
}

/* A DELETE's WHERE that is not `key = literal AND ...` over the whole key. */
static laminar_code key_error(const lm_stmt* stmt, const lm_schema* cols,
                              const int32_t* keys, int32_t nkey, int32_t line,
                              int32_t column, const char* why, laminar_error* err) {
  char key_text[300] = "";
  for (int32_t k = 0; k < nkey; k++) {
    size_t used = strlen(key_text);
    snprintf(key_text + used, sizeof key_text - used, "%s%s", k ? ", " : "",
             cols->fields[keys[k]].name);
  }
  char msg[700];
  snprintf(msg, sizeof msg,
           "DELETE FROM %s: %s; the WHERE must be `key = value` for each primary-key "
           "column (%s), joined by AND",
           stmt->name, why, key_text);
  return fail_at(err, LAMINAR_ERR_SQL_TABLE_KEY, line, column, stmt->name, NULL, msg);
}

laminar_code lm_db_delete(laminar_db* db, const lm_stmt* stmt, laminar_error* err) {
  lm_stream_def* s;
  lm_source_def* def;
  LM_TRY(table_of(db, stmt, &s, &def, err));
  int32_t nkey;
  const int32_t* keys = table_keys(s, &nkey);
  const lm_schema* cols = lm_db_view_columns(s);
  if (stmt->where == NULL) {
    return key_error(stmt, cols, keys, nkey, stmt->line, stmt->column,
                     "a DELETE without WHERE would empty the table", err);
  }
  /* The conjuncts of WHERE, AND by AND (the parser bounds the depth). */
  const lm_ast_expr* todo[256];
  const lm_ast_expr* value[MAX_KEY] = {0};
  /* A table with event time: the delete's time too (its temporal joins see
   * the row end then). */
  int32_t time_col = is_key(keys, nkey, def->wm_col) ? -1 : def->wm_col;
  const lm_ast_expr* time_value = NULL;
  int32_t ntodo = 0;
  todo[ntodo++] = stmt->where;
  char why[300];
  while (ntodo > 0) {
    const lm_ast_expr* e = todo[--ntodo];
    if (e->kind == LM_AST_BINARY && e->op == LM_OP_AND && ntodo + 2 <= 256) {
      todo[ntodo++] = e->right;
      todo[ntodo++] = e->left;
      continue;
    }
    const lm_ast_expr* col = NULL;
    const lm_ast_expr* lit = NULL;
    if (e->kind == LM_AST_BINARY && e->op == LM_OP_EQ) {
      col = e->left->kind == LM_AST_COLUMN ? e->left : e->right;
      lit = e->left->kind == LM_AST_COLUMN ? e->right : e->left;
    }
    if (col == NULL || col->kind != LM_AST_COLUMN || lit->kind != LM_AST_LITERAL ||
        (col->table != NULL && !lm_streq_nocase(col->table, stmt->name))) {
      return key_error(stmt, cols, keys, nkey, e->line, e->column,
                       "this condition is not `key = value`", err);
    }
    int32_t c = lm_schema_find(cols, col->name);
    if (c < 0) {
      snprintf(why, sizeof why, "table '%s' has no column '%s'", stmt->name, col->name);
      return fail_at(err, LAMINAR_ERR_SQL_UNKNOWN_COLUMN, col->line, col->column,
                     stmt->name, col->name, why);
    }
    if (c == time_col && time_value == NULL) {
      time_value = lit; /* when the delete happens (a table with event time) */
      continue;
    }
    int32_t k = 0;
    while (k < nkey && keys[k] != c) k++;
    if (k == nkey || value[k] != NULL) {
      snprintf(why, sizeof why,
               k == nkey ? "column '%s' is not in the primary key"
                         : "key column '%s' is fixed twice",
               col->name);
      return key_error(stmt, cols, keys, nkey, col->line, col->column, why, err);
    }
    value[k] = lit;
  }
  for (int32_t k = 0; k < nkey; k++) {
    if (value[k] != NULL) continue;
    snprintf(why, sizeof why, "key column '%s' is not fixed", cols->fields[keys[k]].name);
    return key_error(stmt, cols, keys, nkey, stmt->where->line, stmt->where->column, why,
                     err);
  }
  if (time_col >= 0 && time_value == NULL) {
    snprintf(
        why, sizeof why,
        "table '%s' has event time '%s': a DELETE gives its time too (AND %s = value)",
        stmt->name, cols->fields[time_col].name, cols->fields[time_col].name);
    return key_error(stmt, cols, keys, nkey, stmt->where->line, stmt->where->column, why,
                     err);
  }
  rows r;
  laminar_code rc = rows_init(&r, &def->schema, 1, -1);
  if (rc != LAMINAR_OK) rc = lm_error_set(err, rc, "out of memory");
  if (rc == LAMINAR_OK) rows_fill_not_null(&r, &def->schema);
  for (int32_t k = 0; rc == LAMINAR_OK && k < nkey; k++) {
    r.nulls[keys[k]][0] = 1; /* set by the literal, or refused if NULL */
    rc = put_literal(&r, keys[k], 0, &def->schema.fields[keys[k]], value[k], stmt->name,
                     err);
  }
  if (rc == LAMINAR_OK && time_value != NULL) {
    r.nulls[time_col][0] = 1;
    rc = put_literal(&r, time_col, 0, &def->schema.fields[time_col], time_value,
                     stmt->name, err);
  }
  if (rc == LAMINAR_OK) rc = rows_push(db, def, &r, err);
  rows_free(&r);
  return rc;
}

/* ---- the C API: laminar_table_upsert / laminar_table_delete ------------------------ */

/* Import `array` (columns `want`, by name) for table `name`, then build its
 * rows for the changelog with weight w: the imported columns at their table
 * positions (pos[i] for want's column i), the rest NULL or zero. */
static laminar_code write_table(laminar_db* db, const char* name,
                                struct ArrowArray* array,
                                const struct ArrowSchema* schema, bool upsert,
                                laminar_error* err) {
  const char* fn = upsert ? "laminar_table_upsert" : "laminar_table_delete";
  if (db == NULL || db->magic != LM_MAGIC_DB || name == NULL || array == NULL ||
      schema == NULL) {
    return lm_error_set(err, LAMINAR_ERR_MISUSE, "%s: invalid argument", fn);
  }
  pthread_mutex_lock(&db->lock);
  laminar_code rc = LAMINAR_OK;
  lm_stream_def* s = find_table(db, name);
  lm_source_def* def = s != NULL ? lm_db_table_source(db, name) : NULL;
  lm_schema want;
  lm_schema_init_empty(&want);
  int32_t pos[256];
  lm_batch* batch = NULL;
  rows r = {0};
  if (def == NULL && (rc = lm_db_table_writable(db, name, fn, 0, 0, err)) != LAMINAR_OK) {
    goto done;
  }
  if (def == NULL) {
    rc = lm_error_set(err, LAMINAR_ERR_SQL_UNKNOWN_OBJECT, "%s: no table named '%s'", fn,
                      name);
    lm_error_object(err, name, NULL);
    goto done;
  }
  if (lm_durable_read_only(db->dur)) {
    rc = lm_durable_refuse_write(db->dur, "takes no writes", err);
    lm_error_object(err, name, NULL);
    goto done;
  }
  int32_t nkey;
  const int32_t* keys = table_keys(s, &nkey);
  /* A delete gives the key; of a table with event time also the time the
   * delete happens at (it ends the version a temporal join sees then). */
  bool timed = !upsert && def->wm_col >= 0 && !is_key(keys, nkey, def->wm_col);
  int32_t nwant = upsert ? def->schema.ncols - 1 : nkey + (timed ? 1 : 0);
  if (nwant > 256) {
    rc = lm_error_set(err, LAMINAR_ERR_SQL_LIMIT, "%s: table '%s' has too many columns",
                      fn, name);
    goto done;
  }
  for (int32_t i = 0; i < nwant; i++) {
    pos[i] = upsert ? i : i < nkey ? keys[i] : def->wm_col;
    const lm_field* f = &def->schema.fields[pos[i]];
    if (lm_schema_add(&want, f->name, f->type, f->not_null) != 0) {
      rc = lm_error_set(err, LAMINAR_ERR_NOMEM, "out of memory");
      goto done;
    }
  }
  char what[300];
  snprintf(what, sizeof what, "%s%s", name,
           upsert  ? ""
           : timed ? " (its primary key and event time)"
                   : " (its primary key)");
  rc = lm_arrow_import(&want, what, array, schema, &batch, err);
  if (rc != LAMINAR_OK) goto done; /* the array is still the caller's */
  rc = rows_init(&r, &def->schema, batch->nrows, upsert ? 1 : -1);
  if (rc != LAMINAR_OK) {
    rc = lm_error_set(err, rc, "out of memory");
    goto done;
  }
  if (!upsert) rows_fill_not_null(&r, &def->schema);
  for (int32_t i = 0; i < nwant; i++) r.cols[pos[i]] = batch->cols[i];
  rc = rows_push(db, def, &r, err);
done:
  pthread_mutex_unlock(&db->lock);
  lm_batch_unref(batch);
  rows_free(&r);
  lm_schema_free(&want);
  return rc;
}

laminar_code laminar_table_upsert(laminar_db* db, const char* table,
                                  struct ArrowArray* rows_array,
                                  const struct ArrowSchema* schema, laminar_error* err) {
  return write_table(db, table, rows_array, schema, true, err);
}

laminar_code laminar_table_delete(laminar_db* db, const char* table,
                                  struct ArrowArray* keys,
                                  const struct ArrowSchema* schema, laminar_error* err) {
  return write_table(db, table, keys, schema, false, err);
}
