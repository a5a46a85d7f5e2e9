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
 * to a source column unchanged, adds nothing. Window functions (OVER) count
 * as a GROUP BY of their PARTITION BY keys. Streams without windows keep no
 * state across rows: any split works. With a UNION ALL of sources at the root
 * of the path, S is a set of union columns that every input fills with a
 * plain, uncast column of its own source, reported per input: hashing each
 * input on its own columns there sends equal keys to one engine. An ASOF
 * JOIN of two sources at the root counts as a GROUP BY of its equality keys
 * (its left key columns; each input is reported with its own key columns).
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
  int32_t in = lm_plan_traced_column(&up->plan, col); /* plan/planner.c */
  return in < 0 ? -1 : trace_column(db, up, in);
}

/* The column of input b's source at column c of the several-input root
 * `plan`: a union's branch column (lm_plan_branch_source_col), or, for an
 * ASOF join, at the left key column of key k, each side's own k-th key
 * column; -1 when none. */
static int32_t root_col(const lm_plan* plan, int32_t b, int32_t c) {
  if (!plan->joined || plan->interval) return lm_plan_branch_source_col(plan, b, c);
  for (int32_t k = 0; k < plan->join.nkeys; k++) {
    const lm_expr* l = plan->join.lkeys[k];
    const lm_expr* r = plan->join.rkeys[k];
    if (l->kind != LM_EXPR_COLUMN || l->column != c) continue;
    if (b == 0) return c;
    /* Equal values hash alike only as one type. */
    return r->kind == LM_EXPR_COLUMN && r->type == l->type ? r->column : -1;
  }
  return -1;
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
  /* Walk to the root: a source, or a union of sources (then `in` marks
   * union columns, each input's source column at that place is its key). */
  const lm_stream_def* cur = s;
  const lm_stream_def* onion = NULL; /* the union at the root, if any */
  for (;;) {
    if (lm_plan_branched(&cur->plan)) {
      bool sources = !cur->plan.interval; /* an interval join: not reported yet */
      for (int32_t b = 0; b < cur->plan.nbranches; b++)
        sources = sources && cur->plan.branches[b].input_is_source;
      /* A self-join's two inputs are one source: not split per input. */
      bool self_join = cur->plan.joined && lm_streq_nocase(cur->plan.branches[0].input,
                                                           cur->plan.branches[1].input);
      if (!sources || self_join) {
        rc = lm_error_set(
            err, LAMINAR_ERR_SQL_UNSUPPORTED,
            "stream '%s': %s reads a stream in a UNION ALL branch, a derived table or "
            "an ASOF JOIN, joins a source with itself, or reads two sources through "
            "an interval join; its partitioning by root sources is not supported yet",
            stream, cur == s ? "it" : cur->name);
        lm_error_object(err, stream, NULL);
        pthread_mutex_unlock(&db->lock);
        return rc;
      }
      onion = cur;
      break;
    }
    if (cur->plan.input_is_source) break;
    const lm_stream_def* up = lm_db_find_stream(db, cur->plan.input);
    if (up == NULL) break;
    cur = up;
  }
  int32_t nin = onion != NULL ? onion->plan.nbranches : 1;
  lm_source_def** srcs = lm_calloc((size_t)nin, sizeof *srcs);
  for (int32_t b = 0; srcs != NULL && b < nin; b++) {
    srcs[b] = lm_db_find_source(
        db, onion != NULL ? onion->plan.branches[b].input : cur->plan.input);
    if (srcs[b] == NULL) {
      lm_free(srcs);
      rc = lm_error_set(err, LAMINAR_ERR_INTERNAL, "stream '%s' has no root source",
                        stream);
      pthread_mutex_unlock(&db->lock);
      return rc;
    }
  }
  int32_t ncols = onion != NULL  ? onion->plan.union_schema.ncols
                  : srcs != NULL ? srcs[0]->schema.ncols
                                 : 0;
  bool* in = lm_calloc((size_t)ncols + 1, sizeof(bool));
  bool* mine = lm_calloc((size_t)ncols + 1, sizeof(bool));
  /* at most, per input: source, event_time, one key per column; partitioning */
  char** cells = lm_calloc((size_t)(nin * (ncols + 2) + 1) * 3, sizeof(char*));
  char* delays = lm_calloc((size_t)nin, 32);
  if (srcs == NULL || in == NULL || mine == NULL || cells == NULL || delays == NULL) {
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
    if (x->plan.joined && !x->plan.interval) {
      /* An ASOF join keeps state per equality key: its left key columns (at
       * their union places; root_col maps each input's own). */
      windowed = true;
      memset(mine, 0, (size_t)ncols * sizeof(bool));
      for (int32_t k = 0; k < x->plan.join.nkeys; k++) {
        const lm_expr* e = x->plan.join.lkeys[k];
        if (e->kind == LM_EXPR_COLUMN && e->column >= 0 && e->column < ncols)
          mine[e->column] = true;
      }
      for (int32_t c = 0; c < ncols; c++) in[c] = in[c] && mine[c];
    }
    if (!x->plan.windowed && !x->plan.analytic) continue;
    windowed = true;
    memset(mine, 0, (size_t)ncols * sizeof(bool));
    /* The planner's key columns: a GROUP BY key's input column, -1 for an
     * expression (plan/planner.h). */
    for (int32_t k = 0; k < x->phys.nkey_cols; k++) {
      if (x->phys.key_cols[k] < 0) continue;
      int32_t c = trace_column(db, x, x->phys.key_cols[k]);
      if (c >= 0 && c < ncols) mine[c] = true;
    }
    for (int32_t c = 0; c < ncols; c++) in[c] = in[c] && mine[c];
  }
  /* Over a union, a key every input puts there unchanged: hashing each
   * input's own column at that place keeps a key's rows together. */
  for (int32_t c = 0; onion != NULL && c < ncols; c++) {
    for (int32_t b = 0; in[c] && b < nin; b++) in[c] = root_col(&onion->plan, b, c) >= 0;
  }
  int64_t n = 0;
  bool any_key = false;
  for (int32_t b = 0; b < nin; b++) {
    const lm_source_def* src = srcs[b];
    cells[n * 3] = "source";
    cells[n * 3 + 1] = src->name;
    cells[n * 3 + 2] = "";
    n++;
    if (src->wm_col >= 0) {
      char* delay = delays + 32 * b;
      snprintf(delay, 32, "%lld", (long long)src->wm_delay_ms);
      cells[n * 3] = "event_time";
      cells[n * 3 + 1] = src->schema.fields[src->wm_col].name;
      cells[n * 3 + 2] = delay;
      n++;
    }
    for (int32_t c = 0; windowed && c < ncols; c++) {
      if (!in[c]) continue;
      int32_t sc = onion != NULL ? root_col(&onion->plan, b, c) : c;
      any_key = true;
      cells[n * 3] = "key";
      cells[n * 3 + 1] = src->schema.fields[sc].name;
      cells[n * 3 + 2] = "";
      n++;
    }
  }
  cells[n * 3] = "partitioning";
  cells[n * 3 + 1] = !windowed ? "any" : any_key ? "key" : "single";
  cells[n * 3 + 2] = "";
  n++;
  static const char* const names[] = {"role", "name", "value"};
  rc = lm_db_string_table(names, 3, cells, n, out);
  if (rc != LAMINAR_OK) lm_error_set(err, rc, "out of memory");
done:
  lm_free(srcs);
  lm_free(in);
  lm_free(mine);
  lm_free(cells);
  lm_free(delays);
  pthread_mutex_unlock(&db->lock);
  return rc;
}
