/*
 * partition.c -- laminar_stream_partitioning: how a stream's input may be split
 * across independent engines (the Spark adapter's repartition key).
 *
 * Rows that fall into one group of any windowed stream on the path from the
 * root source to the stream must reach the same engine. Hashing the input on a
 * set S of source columns keeps them together when every windowed stream on
 * the path groups by each column of S as a plain column key (then one group
 * means equal values of S). So S is the intersection, over the windowed
 * streams of the path, of their plain-column GROUP BY keys traced back to the
 * source; a key that is an expression, or a column that does not trace back
 * to a source column unchanged, adds nothing. Streams without windows keep no
 * state across rows: any split works.
 *
 * Control thread, under db->lock (internal.h).
 */
#include "db/internal.h"

#include "util/util.h"

#include <stdio.h>
#include <string.h>

/* The root source column that input column `col` of stream `s` carries
 * unchanged, or -1. */
static int32_t trace_column(laminar_db* db, const lm_stream_def* s, int32_t col) {
  if (s->plan.input_is_source) return col;
  const lm_stream_def* up = lm_db_find_stream(db, s->plan.input);
  if (up == NULL || col < 0 || col >= up->out_schema.ncols) return -1;
  const lm_plan* p = &up->plan;
  if (!p->windowed) {
    if (col >= p->nexprs || p->exprs[col]->kind != LM_EXPR_COLUMN) return -1;
    return trace_column(db, up, p->exprs[col]->column);
  }
  /* agg_schema: window_start, window_end, keys..., aggregates... */
  if (col >= p->npost || p->post_exprs[col]->kind != LM_EXPR_COLUMN) return -1;
  int32_t k = p->post_exprs[col]->column - 2;
  if (k < 0 || k >= p->window.nkeys || p->window.keys[k]->kind != LM_EXPR_COLUMN)
    return -1;
  return trace_column(db, up, p->window.keys[k]->column);
}

laminar_code laminar_stream_partitioning(laminar_db* db, const char* stream,
                                         struct ArrowArrayStream* out,
                                         laminar_error* err) {
  if (db == NULL || db->magic != LM_MAGIC_DB || stream == NULL || out == NULL) {
    return lm_error_set(err, LAMINAR_ERR_MISUSE,
                        "laminar_stream_partitioning: NULL or "
                        "closed argument");
  }
  out->release = NULL;
  pthread_mutex_lock(&db->lock);
  laminar_code rc = LAMINAR_OK;
  lm_stream_def* s = lm_db_find_stream(db, stream);
  if (s == NULL) {
    rc =
        lm_error_set(err, LAMINAR_ERR_SQL_UNKNOWN_OBJECT, "no stream named '%s'", stream);
    lm_error_object(err, stream, NULL);
    pthread_mutex_unlock(&db->lock);
    return rc;
  }
  /* Walk to the root source; `in` marks the source columns every windowed
   * stream on the path groups by (starting from "all"). */
  const lm_stream_def* cur = s;
  for (;;) {
    if (lm_plan_branched(&cur->plan)) {
      rc = lm_error_set(err, LAMINAR_ERR_SQL_UNSUPPORTED,
                        "stream '%s': %s reads several inputs (UNION ALL, ASOF JOIN) or "
                        "a derived table; "
                        "its partitioning by one root source is not supported yet",
                        stream, cur == s ? "it" : cur->name);
      lm_error_object(err, stream, NULL);
      pthread_mutex_unlock(&db->lock);
      return rc;
    }
    if (cur->plan.input_is_source) break;
    const lm_stream_def* up = lm_db_find_stream(db, cur->plan.input);
    if (up == NULL) break;
    cur = up;
  }
  lm_source_def* src = lm_db_find_source(db, cur->plan.input);
  if (src == NULL) {
    rc =
        lm_error_set(err, LAMINAR_ERR_INTERNAL, "stream '%s' has no root source", stream);
    pthread_mutex_unlock(&db->lock);
    return rc;
  }
  int32_t ncols = src->schema.ncols;
  bool* in = lm_calloc((size_t)ncols + 1, sizeof(bool));
  bool* mine = lm_calloc((size_t)ncols + 1, sizeof(bool));
  /* at most: source, event_time, partitioning, one key per column */
  char** cells = lm_calloc((size_t)(ncols + 3) * 3, sizeof(char*));
  char delay[32];
  if (in == NULL || mine == NULL || cells == NULL) {
    rc = lm_error_set(err, LAMINAR_ERR_NOMEM, "out of memory");
    goto done;
  }
  for (int32_t c = 0; c < ncols; c++) in[c] = true;
  bool windowed = false;
  /* A late side output holds rows its stream's window operator picked: its
   * stream's keys count as if it read through it (same input). */
  for (const lm_stream_def* x = s; x != NULL;
       x = x->late_of != NULL        ? x->late_of
           : x->plan.input_is_source ? NULL
                                     : lm_db_find_stream(db, x->plan.input)) {
    if (!x->plan.windowed) continue;
    windowed = true;
    memset(mine, 0, (size_t)ncols * sizeof(bool));
    for (int32_t k = 0; k < x->plan.window.nkeys; k++) {
      const lm_expr* key = x->plan.window.keys[k];
      if (key->kind != LM_EXPR_COLUMN) continue;
      int32_t c = trace_column(db, x, key->column);
      if (c >= 0 && c < ncols) mine[c] = true;
    }
    for (int32_t c = 0; c < ncols; c++) in[c] = in[c] && mine[c];
  }
  int64_t n = 0;
  bool any_key = false;
  cells[n * 3] = "source";
  cells[n * 3 + 1] = src->name;
  cells[n * 3 + 2] = "";
  n++;
  if (src->wm_col >= 0) {
    snprintf(delay, sizeof delay, "%lld", (long long)src->wm_delay_ms);
    cells[n * 3] = "event_time";
    cells[n * 3 + 1] = src->schema.fields[src->wm_col].name;
    cells[n * 3 + 2] = delay;
    n++;
  }
  for (int32_t c = 0; windowed && c < ncols; c++) {
    if (!in[c]) continue;
    any_key = true;
    cells[n * 3] = "key";
    cells[n * 3 + 1] = src->schema.fields[c].name;
    cells[n * 3 + 2] = "";
    n++;
  }
  cells[n * 3] = "partitioning";
  cells[n * 3 + 1] = !windowed ? "any" : any_key ? "key" : "single";
  cells[n * 3 + 2] = "";
  n++;
  static const char* const names[] = {"role", "name", "value"};
  rc = lm_db_string_table(names, 3, cells, n, out);
  if (rc != LAMINAR_OK) lm_error_set(err, rc, "out of memory");
done:
  lm_free(in);
  lm_free(mine);
  lm_free(cells);
  pthread_mutex_unlock(&db->lock);
  return rc;
}
