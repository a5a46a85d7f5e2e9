/*
 * query.c -- ad-hoc SELECT over a materialized view, and EXPLAIN.
 *
 * SELECT items FROM view [WHERE c] [ORDER BY k [ASC|DESC] [NULLS FIRST|LAST],
 * ...] [LIMIT n] [OFFSET m] reads a consistent snapshot of the view: the
 * graph is paused (rt.h) only while the view's encoded rows are copied; the
 * copy is decoded, filtered, projected, sorted and cut after the graph runs
 * again. Several views (a UNION ALL of SELECTs over views, or a derived
 * table over one) are copied in the same pause, each run through its
 * branch's filter and projection to the union's columns, and concatenated
 * before the rest. The query is bound by the stream binder over the views' columns;
 * ORDER BY names an output column (by alias or position, as in DuckDB) or is
 * bound as an extra, hidden projection. A row the view holds k times is k
 * rows of the result (bag semantics, as a table with duplicates in DuckDB).
 * NULLs sort last unless NULLS FIRST is given, NaN above every number, strings
 * by their bytes (DuckDB's defaults).
 *
 * EXPLAIN name | EXPLAIN CREATE STREAM/MATERIALIZED VIEW ... | EXPLAIN SELECT
 * returns the operator DAG as rows (id, operator, details, input, output).
 *
 * Control thread, under db->lock.
 */
#include "db/internal.h"

#include "db/options.h"
#include "db/text.h"
#include "op/view.h"
#include "sql/binder.h"
#include "util/util.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* An error at an SQL position: "<msg> at line L, column C". */
__attribute__((format(printf, 6, 7))) static laminar_code fail_sql(
    laminar_error* err, laminar_code code, int32_t line, int32_t column,
    const char* object, const char* fmt, ...) {
  char msg[768];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  lm_error_set(err, code, "%s at line %d, column %d", msg, (int)line, (int)column);
  lm_error_at(err, line, column);
  lm_error_object(err, object, NULL);
  return code;
}

/* ==== binding a query over a view ====================================================== */

typedef struct sort_key {
  int32_t col; /* index into the plan's expressions */
  bool desc;
  bool nulls_first;
} sort_key;

typedef struct query {
  /* over the view's columns: filter, outputs, then hidden columns: DISTINCT
   * ON's expressions, then sort keys not among the outputs */
  lm_plan plan;
  int32_t nout; /* output columns: the first nout expressions */
  sort_key* keys;
  int32_t nkeys;
  int64_t limit; /* -1: all */
  int64_t offset;
  /* SELECT DISTINCT: a row per distinct output row; DISTINCT ON (ndon > 0):
   * the first row in ORDER BY order of each distinct value of the hidden
   * columns nout .. nout + ndon - 1. */
  bool distinct;
  int32_t ndon;
} query;

static void query_free(query* q) {
  lm_plan_free(&q->plan);
  lm_free(q->keys);
  q->keys = NULL;
}

/* The catalog a query sees: its materialized views, under their names. */
static const lm_schema* view_lookup(void* arg, const char* name, bool* out_is_source) {
  laminar_db* db = arg;
  lm_stream_def* s = lm_db_find_stream(db, name);
  if (s == NULL || !lm_db_is_view(s)) return NULL;
  *out_is_source = true;
  return lm_db_view_columns(s);
}

/* The view named by the FROM of `sel` (a plain name), or an error saying why
 * it names none. */
static laminar_code find_view(laminar_db* db, const lm_ast_select* sel,
                              lm_stream_def** out, laminar_error* err) {
  if (sel->from_select != NULL) {
    return fail_sql(
        err, LAMINAR_ERR_SQL_UNSUPPORTED, sel->from_line, sel->from_column, NULL,
        "a derived table inside a UNION ALL branch or another derived table of a "
        "SELECT over views is not supported yet: one level of UNION ALL or derived "
        "table over view names");
  }
  lm_stream_def* s = lm_db_find_stream(db, sel->from);
  if (s != NULL && lm_db_is_view(s)) {
    *out = s;
    return LAMINAR_OK;
  }
  if (s != NULL || lm_db_find_source(db, sel->from) != NULL) {
    return fail_sql(
        err, LAMINAR_ERR_SQL_NOT_MATERIALIZED, sel->from_line, sel->from_column,
        sel->from,
        "'%s' is a %s, not a materialized view: only a materialized view keeps "
        "rows to SELECT (CREATE MATERIALIZED VIEW name AS SELECT ... FROM %s, "
        "then SELECT ... FROM name)",
        sel->from, s != NULL ? "stream" : "source", sel->from);
  }
  return fail_sql(err, LAMINAR_ERR_SQL_UNKNOWN_OBJECT, sel->from_line, sel->from_column,
                  sel->from, "no materialized view named '%s'", sel->from);
}

/* The views a SELECT reads, one per input of its plan (lm_plan.branches, in
 * order): its FROM, or each branch of its UNION ALL set or derived table.
 * *out (lm_malloc'ed) and *n; an error names the first FROM that is no view. */
static laminar_code find_views(laminar_db* db, const lm_ast_select* sel,
                               lm_stream_def*** out, int32_t* n, laminar_error* err) {
  *out = NULL;
  *n = 0;
  const lm_ast_select* first = sel;
  if (sel->union_next == NULL && sel->from_select != NULL) first = sel->from_select;
  int32_t count = 0;
  for (const lm_ast_select* x = first; x != NULL; x = x->union_next) count++;
  lm_stream_def** views = lm_calloc((size_t)count, sizeof *views);
  if (views == NULL) return lm_error_set(err, LAMINAR_ERR_NOMEM, "out of memory");
  int32_t i = 0;
  for (const lm_ast_select* x = first; x != NULL; x = x->union_next, i++) {
    laminar_code rc = find_view(db, x, &views[i], err);
    if (rc != LAMINAR_OK) {
      lm_free(views);
      return rc;
    }
  }
  *out = views;
  *n = count;
  return LAMINAR_OK;
}

/* What a query over a view cannot do (yet): clear errors before binding. */
static laminar_code check_query_shape(const laminar_db* db, const lm_stmt* stmt,
                                      laminar_error* err) {
  const lm_ast_select* sel = stmt->select;
  if (stmt->emit != LM_EMIT_DEFAULT) {
    return fail_sql(
        err, LAMINAR_ERR_SQL_UNSUPPORTED, stmt->line, stmt->column, NULL,
        "EMIT belongs to continuous queries (CREATE STREAM, CREATE MATERIALIZED "
        "VIEW); a SELECT reads the view's current rows");
  }
  for (const lm_ast_select* x = sel; x != NULL; x = x->from_select) {
    if (x->qualify != NULL || lm_bind_select_is_analytic(x)) {
      return fail_sql(
          err, LAMINAR_ERR_SQL_UNSUPPORTED, stmt->line, stmt->column, NULL,
          "window functions (OVER) and QUALIFY in a SELECT over a view are not "
          "supported yet: use them in a stream's definition");
    }
  }
  const lm_ast_expr* agg = NULL;
  if (sel->ngroup > 0) agg = sel->group_by[0];
  if (sel->having != NULL) agg = sel->having;
  for (size_t i = 0; agg == NULL && i < sel->nitems; i++) {
    if (lm_bind_has_aggregate(&db->funcs, sel->items[i].expr)) agg = sel->items[i].expr;
  }
  for (size_t i = 0; agg == NULL && i < sel->norder; i++) {
    if (lm_bind_has_aggregate(&db->funcs, sel->order_by[i].expr))
      agg = sel->order_by[i].expr;
  }
  if (agg != NULL) {
    return fail_sql(err, LAMINAR_ERR_SQL_UNSUPPORTED, agg->line, agg->column, NULL,
                    "aggregates, GROUP BY and HAVING in a SELECT over a view are not "
                    "supported yet: aggregate in the view's own definition");
  }
  return LAMINAR_OK;
}

/* Bind `stmt` (a SELECT over views) into *q. A top-level UNION ALL takes
 * the ORDER BY, LIMIT and OFFSET written after its last branch for the whole
 * set (as in DuckDB); its ORDER BY names output columns (by name or
 * position). */
static laminar_code bind_query(laminar_db* db, const lm_stmt* stmt, query* q,
                               laminar_error* err) {
  memset(q, 0, sizeof *q);
  const lm_ast_select* sel = stmt->select;
  LM_TRY(check_query_shape(db, stmt, err));
  size_t nsel = 0;
  const lm_ast_select* last = sel;
  for (const lm_ast_select* x = sel; x != NULL; x = x->union_next) {
    nsel++;
    last = x;
  }
  bool set = nsel > 1;
  lm_ast_select* body = lm_calloc(nsel, sizeof *body);
  if (body == NULL) return lm_error_set(err, LAMINAR_ERR_NOMEM, "out of memory");
  size_t i = 0;
  for (const lm_ast_select* x = sel; x != NULL; x = x->union_next, i++) {
    body[i] = *x;
    body[i].union_next = i + 1 < nsel ? &body[i + 1] : NULL;
  }
  lm_ast_select* tail = &body[nsel - 1];
  tail->order_by = NULL;
  tail->norder = 0;
  tail->limit = -1;
  tail->offset = 0;
  /* DISTINCT is applied here, over the projected rows (the binder would plan
   * it as a running GROUP BY). */
  q->distinct = sel->distinct;
  for (size_t k = 0; k < nsel; k++) {
    if (k > 0 && body[k].distinct) {
      lm_free(body);
      return fail_sql(err, LAMINAR_ERR_SQL_UNSUPPORTED, stmt->line, stmt->column, NULL,
                      "SELECT DISTINCT in a branch of UNION ALL over views is not "
                      "supported yet: SELECT DISTINCT ... FROM (the union)");
    }
    body[k].distinct = false;
    body[k].distinct_on = NULL;
    body[k].ndistinct_on = 0;
  }
  if (set && q->distinct) {
    lm_free(body);
    return fail_sql(err, LAMINAR_ERR_SQL_UNSUPPORTED, stmt->line, stmt->column, NULL,
                    "SELECT DISTINCT in a branch of UNION ALL over views is not "
                    "supported yet: SELECT DISTINCT ... FROM (the union)");
  }
  lm_stmt bound = *stmt;
  bound.select = body;
  laminar_code rc = lm_bind_stream(&bound, view_lookup, db, &db->funcs, &q->plan, err);
  if (rc == LAMINAR_OK && q->plan.temporal) {
    rc =
        fail_sql(err, LAMINAR_ERR_SQL_UNSUPPORTED, q->plan.temporal_line,
                 q->plan.temporal_column, NULL,
                 "WATERMARK() in a one-off SELECT: a temporal filter belongs to a stream "
                 "or materialized view (the one-off query runs at no watermark)");
    lm_plan_free(&q->plan);
  }
  if (rc != LAMINAR_OK) {
    lm_free(body);
    return rc;
  }
  q->nout = q->plan.nexprs;
  q->limit = last->limit;
  q->offset = last->offset;
  q->ndon = (int32_t)sel->ndistinct_on;
  if (last->norder == 0 && q->ndon == 0) {
    lm_free(body);
    return LAMINAR_OK;
  }

  /* DISTINCT ON's expressions, hidden; ORDER BY: an output column by position
   * or name, else a hidden projection. */
  q->keys = lm_calloc(last->norder + 1, sizeof(sort_key));
  lm_ast_select_item* items =
      lm_calloc(sel->nitems + sel->ndistinct_on + last->norder, sizeof *items);
  if (q->keys == NULL || items == NULL) {
    lm_free(items);
    lm_free(body);
    query_free(q);
    return lm_error_set(err, LAMINAR_ERR_NOMEM, "out of memory");
  }
  memcpy(items, sel->items, sizeof *items * sel->nitems);
  size_t nextra = 0;
  for (; nextra < sel->ndistinct_on; nextra++)
    items[sel->nitems + nextra] = (lm_ast_select_item){sel->distinct_on[nextra], NULL};
  for (size_t k = 0; k < last->norder && rc == LAMINAR_OK; k++) {
    const lm_ast_expr* e = last->order_by[k].expr;
    sort_key* key = &q->keys[q->nkeys++];
    key->desc = last->order_by[k].desc;
    key->nulls_first = last->order_by[k].nulls_first;
    int32_t named = e->kind == LM_AST_COLUMN && e->table == NULL
                        ? lm_schema_find(&q->plan.out_schema, e->name)
                        : -1;
    if (e->kind == LM_AST_LITERAL && e->lit == LM_LIT_INT) {
      if (e->i < 1 || e->i > q->nout) {
        rc = fail_sql(err, LAMINAR_ERR_SQL_UNKNOWN_COLUMN, e->line, e->column, NULL,
                      "ORDER BY position %lld is not in the select list (1 to %d)",
                      (long long)e->i, (int)q->nout);
      }
      key->col = (int32_t)e->i - 1;
    } else if (named >= 0) {
      key->col = named;
    } else if (set) {
      rc = fail_sql(err, LAMINAR_ERR_SQL_UNKNOWN_COLUMN, e->line, e->column, NULL,
                    "ORDER BY after UNION ALL names an output column of the union (by "
                    "name or position), not an expression");
    } else if (q->distinct && q->ndon == 0) {
      rc = fail_sql(err, LAMINAR_ERR_SQL_GROUPING, e->line, e->column, NULL,
                    "for SELECT DISTINCT, ORDER BY expressions must appear in the "
                    "select list");
    } else {
      key->col = q->nout + (int32_t)nextra;
      items[sel->nitems + nextra++] = (lm_ast_select_item){(lm_ast_expr*)e, NULL};
    }
  }
  if (rc == LAMINAR_OK && nextra > 0) {
    lm_plan_free(&q->plan);
    body[0].items = items;
    body[0].nitems = sel->nitems + nextra;
    rc = lm_bind_stream(&bound, view_lookup, db, &db->funcs, &q->plan, err);
  }
  lm_free(items);
  lm_free(body);
  if (rc != LAMINAR_OK) query_free(q);
  return rc;
}

/* ==== running it ========================================================================= */

static int cmp_value(const lm_vec* v, uint32_t a, uint32_t b) {
  switch (lm_type_kind(v->type)) {
    case LM_TYPE_DECIMAL: { /* one type per column: one scale */
      lm_i128 x = lm_vec_dec_at(v, a), y = lm_vec_dec_at(v, b);
      return (x > y) - (x < y);
    }
    case LM_TYPE_BOOL:
    case LM_TYPE_INT8:
    case LM_TYPE_INT16:
    case LM_TYPE_DATE:
    case LM_TYPE_INT32:
    case LM_TYPE_INT64:
    case LM_TYPE_TIME:
    case LM_TYPE_FLOAT: /* its image: NaN above every number */
    case LM_TYPE_TIMESTAMP: {
      int64_t x = lm_vec_int_at(v, a), y = lm_vec_int_at(v, b);
      return (x > y) - (x < y);
    }
    case LM_TYPE_DOUBLE: {
      double x = ((const double*)v->data)[a], y = ((const double*)v->data)[b];
      bool nx = isnan(x), ny = isnan(y);
      if (nx || ny) return (int)nx - (int)ny; /* NaN above every number */
      return (x > y) - (x < y);
    }
    case LM_TYPE_BINARY:
    case LM_TYPE_STRING: {
      lm_str x = ((const lm_str*)v->data)[a], y = ((const lm_str*)v->data)[b];
      int64_t n = x.len < y.len ? x.len : y.len;
      int c = n > 0 ? memcmp(x.ptr, y.ptr, (size_t)n) : 0;
      if (c != 0) return c < 0 ? -1 : 1;
      return (x.len > y.len) - (x.len < y.len);
    }
    case LM_TYPE_NULL: return 0;
  }
  return 0;
}

typedef struct sorter {
  const lm_vec* cols;
  const sort_key* keys;
  int32_t nkeys;
} sorter;

static int cmp_rows(const sorter* s, uint32_t a, uint32_t b) {
  for (int32_t i = 0; i < s->nkeys; i++) {
    const sort_key* k = &s->keys[i];
    const lm_vec* v = &s->cols[k->col];
    bool na = v->nulls != NULL && v->nulls[a], nb = v->nulls != NULL && v->nulls[b];
    int c;
    if (na || nb) {
      if (na && nb) continue;
      c = na == k->nulls_first ? -1 : 1; /* NULL placement ignores ASC/DESC */
    } else {
      c = cmp_value(v, a, b);
      if (k->desc) c = -c;
    }
    if (c != 0) return c;
  }
  return 0;
}

/* Stable bottom-up merge sort of idx[0..n) (tmp: room for n). */
static void merge_sort(uint32_t* idx, uint32_t* tmp, int64_t n, const sorter* s) {
  uint32_t* from = idx;
  uint32_t* to = tmp;
  for (int64_t width = 1; width < n; width *= 2) {
    for (int64_t lo = 0; lo < n; lo += 2 * width) {
      int64_t mid = lo + width < n ? lo + width : n;
      int64_t hi = lo + 2 * width < n ? lo + 2 * width : n;
      int64_t i = lo, j = mid, k = lo;
      while (i < mid && j < hi)
        to[k++] = cmp_rows(s, from[j], from[i]) < 0 ? from[j++] : from[i++];
      while (i < mid) to[k++] = from[i++];
      while (j < hi) to[k++] = from[j++];
    }
    uint32_t* t = from;
    from = to;
    to = t;
  }
  if (from != idx) memcpy(idx, from, sizeof(uint32_t) * (size_t)n);
}

/* (keys, position) order: the order of a stable sort, but total. */
static bool before(const sorter* s, uint32_t a, uint32_t b) {
  int c = cmp_rows(s, a, b);
  return c < 0 || (c == 0 && a < b);
}

static void sift_down(uint32_t* heap, int64_t n, int64_t i, const sorter* s) {
  for (;;) {
    int64_t big = i, l = 2 * i + 1, r = l + 1;
    if (l < n && before(s, heap[big], heap[l])) big = l;
    if (r < n && before(s, heap[big], heap[r])) big = r;
    if (big == i) return;
    uint32_t t = heap[i];
    heap[i] = heap[big];
    heap[big] = t;
    i = big;
  }
}

/* The first k of rows 0..m-1 in stable sorted order, into out[0..k), with a
 * max-heap of the k best so far: O(m log k) where a full sort is O(m log m).
 * ORDER BY ... LIMIT needs no more: a row counts at least once. */
static void top_k(uint32_t* out, uint32_t* tmp, int64_t m, int64_t k, const sorter* s) {
  int64_t n = 0;
  for (int64_t r = 0; r < m && k > 0; r++) {
    if (n < k) {
      out[n] = (uint32_t)r;
      for (int64_t i = n++; i > 0 && before(s, out[(i - 1) / 2], out[i]);
           i = (i - 1) / 2) {
        uint32_t t = out[i];
        out[i] = out[(i - 1) / 2];
        out[(i - 1) / 2] = t;
      }
    } else if (before(s, (uint32_t)r, out[0])) {
      out[0] = (uint32_t)r;
      sift_down(out, n, 0, s);
    }
  }
  merge_sort(out, tmp, n, s); /* ties cannot remain: positions differ */
}

/* The error of a failed evaluation: a user-defined function's text, or out
 * of memory. */
static laminar_code query_eval_error(const lm_eval_ctx* ctx, laminar_code rc,
                                     laminar_error* err) {
  if (lm_expr_udf_failed(rc)) return lm_error_set(err, rc, "%s", lm_eval_ctx_error(ctx));
  return lm_error_set(err, rc, "out of memory evaluating the query");
}

/* SELECT DISTINCT [ON]: order[0..*m) becomes the rows kept, in ORDER BY
 * order. Rows sort by the distinct columns (every output, or DISTINCT ON's
 * hidden ones) -- after the ORDER BY keys for a plain DISTINCT, whose keys are
 * outputs -- so equal rows are neighbours; the first of each run stays (for
 * DISTINCT ON: the first in ORDER BY order, as the sort is stable), then
 * DISTINCT ON's rows are sorted by ORDER BY. NULLs equal NULLs, as in
 * DuckDB. */
static laminar_code distinct_rows(const query* q, const lm_vec* vals, lm_eval_ctx* ctx,
                                  uint32_t* order, uint32_t* tmp, int64_t* m,
                                  laminar_error* err) {
  int32_t nd = q->ndon > 0 ? q->ndon : q->nout;
  int32_t first = q->ndon > 0 ? q->nout : 0; /* the distinct columns */
  sort_key* keys = lm_eval_ctx_alloc(ctx, sizeof(sort_key) * (size_t)(nd + q->nkeys + 1));
  if (keys == NULL) return lm_error_set(err, LAMINAR_ERR_NOMEM, "out of memory");
  int32_t nk = 0;
  if (q->ndon == 0)
    for (int32_t i = 0; i < q->nkeys; i++) keys[nk++] = q->keys[i];
  for (int32_t i = 0; i < nd; i++) keys[nk++] = (sort_key){first + i, false, false};
  if (q->ndon > 0)
    for (int32_t i = 0; i < q->nkeys; i++) keys[nk++] = q->keys[i];
  sorter all = {vals, keys, nk};
  sorter same = {vals, keys + (q->ndon == 0 ? q->nkeys : 0), nd};
  for (int64_t k = 0; k < *m; k++) order[k] = (uint32_t)k;
  merge_sort(order, tmp, *m, &all);
  int64_t kept = 0;
  for (int64_t k = 0; k < *m; k++) {
    if (kept == 0 || cmp_rows(&same, order[kept - 1], order[k]) != 0)
      order[kept++] = order[k];
  }
  *m = kept;
  sorter by = {vals, q->keys, q->nkeys};
  if (q->ndon > 0 && q->nkeys > 0) merge_sort(order, tmp, kept, &by);
  return LAMINAR_OK;
}

/* Filter, project, sort, expand multiplicities and cut rows of `rows` into
 * the result batch. Scratch from ctx. */
static laminar_code evaluate(const query* q, const lm_view_rows* rows, lm_eval_ctx* ctx,
                             const lm_schema* out_schema, lm_batch** out,
                             laminar_error* err) {
  int64_t n = rows->nrows;
  if (n > (int64_t)UINT32_MAX) {
    return lm_error_set(err, LAMINAR_ERR_NOMEM, "the view has too many rows to query");
  }
  uint32_t* sel = NULL;
  int64_t m = n;
  if (q->plan.filter != NULL) {
    sel = lm_eval_ctx_alloc(ctx, sizeof(uint32_t) * (size_t)(n ? n : 1));
    if (sel == NULL) return lm_error_set(err, LAMINAR_ERR_NOMEM, "out of memory");
    laminar_code rc = lm_expr_filter(ctx, q->plan.filter, rows->cols, NULL, n, sel, &m);
    if (rc != LAMINAR_OK) return query_eval_error(ctx, rc, err);
  }
  int32_t nexprs = q->plan.nexprs;
  lm_vec* vals = lm_eval_ctx_alloc(ctx, sizeof(lm_vec) * (size_t)(nexprs ? nexprs : 1));
  uint32_t* order = lm_eval_ctx_alloc(ctx, sizeof(uint32_t) * (size_t)(m ? m : 1));
  uint32_t* tmp = lm_eval_ctx_alloc(ctx, sizeof(uint32_t) * (size_t)(m ? m : 1));
  if (vals == NULL || order == NULL || tmp == NULL) {
    return lm_error_set(err, LAMINAR_ERR_NOMEM, "out of memory");
  }
  for (int32_t i = 0; i < nexprs; i++) {
    laminar_code rc = lm_expr_eval(ctx, q->plan.exprs[i], rows->cols, sel, m, &vals[i]);
    if (rc != LAMINAR_OK) return query_eval_error(ctx, rc, err);
  }
  sorter s = {vals, q->keys, q->nkeys};
  int64_t need =
      q->limit < 0 || q->offset > INT64_MAX - q->limit ? m : q->offset + q->limit;
  if (q->distinct) {
    LM_TRY(distinct_rows(q, vals, ctx, order, tmp, &m, err));
  } else if (q->nkeys > 0 && need < m / 4) {
    top_k(order, tmp, m, need, &s); /* only the first `need` rows can be in the result */
    m = need;
  } else {
    for (int64_t k = 0; k < m; k++) order[k] = (uint32_t)k;
    if (q->nkeys > 0) merge_sort(order, tmp, m, &s);
  }

  /* A row held w times is w result rows (once after DISTINCT); OFFSET and
   * LIMIT count those. */
  int64_t skip = q->offset, take = q->limit < 0 ? INT64_MAX : q->limit, total = 0;
  for (int64_t k = 0; k < m && total < take; k++) {
    int64_t w = q->distinct ? 1 : rows->weights[sel != NULL ? sel[order[k]] : order[k]];
    int64_t drop = skip < w ? skip : w;
    skip -= drop;
    w -= drop;
    total += w < take - total ? w : take - total;
  }
  if (total > (int64_t)INT32_MAX) {
    return lm_error_set(err, LAMINAR_ERR_NOMEM,
                        "the result would have %lld rows: add a LIMIT", (long long)total);
  }
  uint32_t* pick = lm_eval_ctx_alloc(ctx, sizeof(uint32_t) * (size_t)(total ? total : 1));
  lm_vec* cols = lm_eval_ctx_alloc(ctx, sizeof(lm_vec) * (size_t)(q->nout ? q->nout : 1));
  if (pick == NULL || cols == NULL)
    return lm_error_set(err, LAMINAR_ERR_NOMEM, "out of memory");
  skip = q->offset;
  int64_t got = 0;
  for (int64_t k = 0; k < m && got < total; k++) {
    int64_t w = q->distinct ? 1 : rows->weights[sel != NULL ? sel[order[k]] : order[k]];
    for (int64_t r = 0; r < w && got < total; r++) {
      if (skip > 0) {
        skip--;
        continue;
      }
      pick[got++] = order[k];
    }
  }
  for (int32_t c = 0; c < q->nout; c++) {
    laminar_code rc = lm_op_gather(ctx, &vals[c], pick, total, &cols[c]);
    if (rc != LAMINAR_OK) return lm_error_set(err, rc, "out of memory");
  }
  laminar_code rc = lm_arrow_build(out_schema, cols, total, out);
  return rc == LAMINAR_OK ? LAMINAR_OK : lm_error_set(err, rc, "out of memory");
}

/* Concatenate the per-input row sets in[0..n) (over the same columns) into
 * *out: columns and weights in ctx's memory, values pointing where in[]'s
 * do (strings into their rows: keep in[] alive). */
static laminar_code concat_rows(const lm_view_rows* in, int32_t n, int32_t ncols,
                                lm_eval_ctx* ctx, lm_view_rows* out) {
  int64_t total = 0;
  for (int32_t b = 0; b < n; b++) total += in[b].nrows;
  memset(out, 0, sizeof *out);
  out->nrows = total;
  out->ncols = ncols;
  size_t rows = (size_t)(total ? total : 1);
  out->cols = lm_eval_ctx_alloc(ctx, sizeof(lm_vec) * (size_t)(ncols ? ncols : 1));
  out->weights = lm_eval_ctx_alloc(ctx, sizeof(int64_t) * rows);
  if (out->cols == NULL || out->weights == NULL) return LAMINAR_ERR_NOMEM;
  int64_t at = 0;
  for (int32_t b = 0; b < n; b++) {
    memcpy(out->weights + at, in[b].weights, sizeof(int64_t) * (size_t)in[b].nrows);
    at += in[b].nrows;
  }
  for (int32_t c = 0; c < ncols; c++) {
    lm_type type = in[0].cols[c].type;
    size_t w = (size_t)lm_type_width(type);
    unsigned char* data = lm_eval_ctx_alloc(ctx, w * rows);
    uint8_t* nulls = lm_eval_ctx_alloc(ctx, rows);
    if (data == NULL || nulls == NULL) return LAMINAR_ERR_NOMEM;
    at = 0;
    for (int32_t b = 0; b < n; b++) {
      const lm_vec* v = &in[b].cols[c];
      size_t m = (size_t)in[b].nrows;
      if (v->data != NULL && m > 0) memcpy(data + (size_t)at * w, v->data, m * w);
      if (v->data == NULL && m > 0) memset(data + (size_t)at * w, 0, m * w);
      if (v->nulls != NULL && m > 0) memcpy(nulls + at, v->nulls, m);
      if (v->nulls == NULL && m > 0) memset(nulls + at, 0, m);
      at += (int64_t)m;
    }
    out->cols[c] = (lm_vec){type, total, nulls, data};
  }
  return LAMINAR_OK;
}

/* The rows of input b of the query's plan, as the rest of the plan reads
 * them: `rows` through branch b's filter and projection to the union's
 * columns (ctx's memory; strings may point into `rows`). Without an
 * operator (a single input), `rows` as they are. */
static laminar_code branch_rows(const lm_plan* plan, int32_t b, const lm_view_rows* rows,
                                lm_eval_ctx* ctx, lm_view_rows* out) {
  const lm_plan_branch* br = &plan->branches[b];
  if (br->exprs == NULL) {
    *out = *rows;
    return LAMINAR_OK;
  }
  int64_t n = rows->nrows;
  uint32_t* sel = NULL;
  int64_t m = n;
  if (br->filter != NULL) {
    sel = lm_eval_ctx_alloc(ctx, sizeof(uint32_t) * (size_t)(n ? n : 1));
    if (sel == NULL) return LAMINAR_ERR_NOMEM;
    LM_TRY(lm_expr_filter(ctx, br->filter, rows->cols, NULL, n, sel, &m));
  }
  memset(out, 0, sizeof *out);
  out->nrows = m;
  out->ncols = br->nexprs;
  out->cols =
      lm_eval_ctx_alloc(ctx, sizeof(lm_vec) * (size_t)(br->nexprs ? br->nexprs : 1));
  out->weights = lm_eval_ctx_alloc(ctx, sizeof(int64_t) * (size_t)(m ? m : 1));
  if (out->cols == NULL || out->weights == NULL) return LAMINAR_ERR_NOMEM;
  for (int64_t k = 0; k < m; k++)
    out->weights[k] = rows->weights[sel != NULL ? sel[k] : k];
  for (int32_t c = 0; c < br->nexprs; c++) {
    LM_TRY(lm_expr_eval(ctx, br->exprs[c], rows->cols, sel, m, &out->cols[c]));
  }
  return LAMINAR_OK;
}

/* A table function's joined rows (plan->lateral) of the view's rows `in`:
 * each joined row weighs what its view row does. ctx memory. */
static laminar_code lateral_rows(const lm_plan* plan, const lm_view_rows* in,
                                 lm_eval_ctx* ctx, lm_view_rows* out) {
  memset(out, 0, sizeof *out);
  int32_t ncols = plan->union_schema.ncols;
  out->ncols = ncols;
  out->cols = lm_eval_ctx_alloc(ctx, sizeof(lm_vec) * (size_t)ncols);
  if (out->cols == NULL) return LAMINAR_ERR_NOMEM;
  const uint32_t* parent;
  LM_TRY(lm_op_lateral_apply(ctx, &plan->lat, in->cols, NULL, in->nrows, out->cols,
                             &parent, &out->nrows));
  out->weights =
      lm_eval_ctx_alloc(ctx, sizeof(int64_t) * (size_t)(out->nrows ? out->nrows : 1));
  if (out->weights == NULL) return LAMINAR_ERR_NOMEM;
  for (int64_t k = 0; k < out->nrows; k++) out->weights[k] = in->weights[parent[k]];
  return LAMINAR_OK;
}

/* The SELECT over views `stmt`: its rows as one batch (*out_batch, NULL
 * when only checked) of *out_schema's columns (empty on failure; the
 * caller frees it). */
static laminar_code select_batch(laminar_db* db, const lm_stmt* stmt, bool run,
                                 lm_schema* out_schema, lm_batch** out_batch,
                                 laminar_error* err) {
  *out_batch = NULL;
  lm_schema_init_empty(out_schema);
  lm_stream_def** views;
  int32_t nviews;
  LM_TRY(find_views(db, stmt->select, &views, &nviews, err));
  query q;
  laminar_code rc = bind_query(db, stmt, &q, err);
  if (rc != LAMINAR_OK || !run) { /* laminar_execute: checked, nothing to return */
    if (rc == LAMINAR_OK) query_free(&q);
    lm_free(views);
    return rc;
  }
  /* One input per view the plan reads (its branches, in order). */
  int32_t nin = q.plan.nbranches;
  lm_view_rows* rows = lm_calloc((size_t)nin, sizeof *rows);
  lm_view_rows* branch = lm_calloc((size_t)nin, sizeof *branch);
  lm_view_rows all;
  lm_eval_ctx* ctx = NULL;
  rc = rows == NULL || branch == NULL ? LAMINAR_ERR_NOMEM
       : nin != nviews                ? LAMINAR_ERR_INTERNAL
                                      : LAMINAR_OK;
  /* The consistent snapshot: the graph holds still between two messages
   * while the views' rows are copied (every view at the same message
   * boundary), and runs on during the rest. */
  int32_t copied = 0;
  if (rc == LAMINAR_OK) {
    lm_rt_pause(&db->rt);
    for (; copied < nin && rc == LAMINAR_OK; copied++) {
      rc = lm_op_view_copy(lm_op_view_of(views[copied]->chain), &rows[copied]);
      if (rc != LAMINAR_OK) break;
    }
    lm_rt_resume(&db->rt);
  }
  for (int32_t b = 0; rc == LAMINAR_OK && b < nin; b++)
    rc = lm_view_rows_decode(lm_db_view_columns(views[b]), &rows[b]);
  if (rc == LAMINAR_OK) rc = lm_eval_ctx_create(&ctx);
  for (int32_t b = 0; rc == LAMINAR_OK && b < nin; b++)
    rc = branch_rows(&q.plan, b, &rows[b], ctx, &branch[b]);
  /* The branches' rows: the union's, or a derived table's a table function
   * joins (join_side[0]). */
  if (rc == LAMINAR_OK && nin > 1) {
    int32_t ncols = q.plan.lateral ? lm_plan_branch_out(&q.plan, 0)->ncols
                                   : q.plan.union_schema.ncols;
    rc = concat_rows(branch, nin, ncols, ctx, &all);
  } else if (rc == LAMINAR_OK) {
    all = branch[0];
  }
  bool failed = false; /* err is set */
  if (rc == LAMINAR_OK && q.plan.lateral) {
    lm_view_rows in = all;
    rc = lateral_rows(&q.plan, &in, ctx, &all);
    if (lm_expr_udf_failed(rc)) {
      rc = query_eval_error(ctx, rc, err);
      failed = true;
    }
  }
  for (int32_t c = 0; rc == LAMINAR_OK && c < q.nout; c++) {
    const lm_field* f = &q.plan.out_schema.fields[c];
    if (lm_schema_add(out_schema, f->name, f->type, false) != 0) rc = LAMINAR_ERR_NOMEM;
  }
  if (rc != LAMINAR_OK) {
    if (!failed) rc = lm_error_set(err, rc, "out of memory");
  } else {
    rc = evaluate(&q, &all, ctx, out_schema, out_batch, err);
  }
  lm_eval_ctx_destroy(ctx);
  for (int32_t b = 0; b < copied && rows != NULL; b++) lm_view_rows_free(&rows[b]);
  lm_free(rows);
  lm_free(branch);
  lm_free(views);
  query_free(&q);
  return rc;
}

laminar_code lm_db_select_rows(laminar_db* db, const lm_stmt* stmt, lm_schema* out_schema,
                               lm_batch** out_batch, laminar_error* err) {
  laminar_code rc = select_batch(db, stmt, true, out_schema, out_batch, err);
  if (rc != LAMINAR_OK) lm_schema_free(out_schema);
  return rc;
}

laminar_code lm_db_select(laminar_db* db, const lm_stmt* stmt,
                          struct ArrowArrayStream* out, laminar_error* err) {
  lm_schema out_schema;
  lm_batch* batch;
  laminar_code rc = select_batch(db, stmt, out != NULL, &out_schema, &batch, err);
  if (rc == LAMINAR_OK && out != NULL) {
    rc = lm_rows_stream(&out_schema, batch, out); /* takes the batch */
    if (rc != LAMINAR_OK) rc = lm_error_set(err, rc, "out of memory");
  }
  lm_schema_free(&out_schema);
  return rc;
}

/* ==== EXPLAIN =============================================================================== */

static const char* op_symbol(lm_expr_op op) {
  switch (op) {
    case LM_XOP_ADD: return "+";
    case LM_XOP_SUB: return "-";
    case LM_XOP_MUL: return "*";
    case LM_XOP_DIV: return "/";
    case LM_XOP_MOD: return "%";
    case LM_XOP_EQ: return "=";
    case LM_XOP_NE: return "<>";
    case LM_XOP_LT: return "<";
    case LM_XOP_LE: return "<=";
    case LM_XOP_GT: return ">";
    case LM_XOP_GE: return ">=";
    case LM_XOP_AND: return "AND";
    case LM_XOP_OR: return "OR";
    case LM_XOP_CONCAT: return "||";
    default: return NULL;
  }
}

/* SQL-like text of a bound expression; `names` name its input columns. */
static void put_expr(lm_text* b, const lm_expr* e, const char* const* names) {
  if (e->kind == LM_EXPR_COLUMN) {
    lm_text_printf(b, "%s", names[e->column]);
    return;
  }
  if (e->kind == LM_EXPR_LITERAL) {
    const lm_value* v = &e->lit;
    if (v->is_null) {
      lm_text_printf(b, "NULL");
    } else if (e->type == LM_TYPE_BOOL) {
      lm_text_printf(b, "%s", v->b ? "TRUE" : "FALSE");
    } else if (e->type == LM_TYPE_DOUBLE) {
      lm_text_printf(b, "%.17g", v->d);
    } else if (lm_type_is_bytes(e->type)) {
      lm_text_printf(b, "'");
      for (int64_t i = 0; i < v->s.len; i++) {
        lm_text_printf(b, v->s.ptr[i] == '\'' ? "''" : "%c", v->s.ptr[i]);
      }
      lm_text_printf(b, "'");
    } else {
      lm_text_printf(b, "%lld", (long long)v->i);
    }
    return;
  }
  const char* sym = op_symbol(e->op);
  if (sym != NULL && e->nargs == 2) {
    lm_text_printf(b, "(");
    put_expr(b, e->args[0], names);
    lm_text_printf(b, " %s ", sym);
    put_expr(b, e->args[1], names);
    lm_text_printf(b, ")");
    return;
  }
  switch (e->op) {
    case LM_XOP_NEG:
    case LM_XOP_NOT:
      lm_text_printf(b, "%s", e->op == LM_XOP_NEG ? "-" : "NOT ");
      put_expr(b, e->args[0], names);
      return;
    case LM_XOP_IS_NULL:
    case LM_XOP_IS_NOT_NULL:
      put_expr(b, e->args[0], names);
      lm_text_printf(b, "%s", e->op == LM_XOP_IS_NULL ? " IS NULL" : " IS NOT NULL");
      return;
    case LM_XOP_CAST:
      lm_text_printf(b, "CAST(");
      put_expr(b, e->args[0], names);
      lm_text_printf(b, " AS %s)", lm_type_name(e->type));
      return;
    case LM_XOP_CASE: {
      int32_t pairs = (e->nargs - (e->has_else ? 1 : 0)) / 2;
      lm_text_printf(b, "CASE");
      for (int32_t i = 0; i < pairs; i++) {
        lm_text_printf(b, " WHEN ");
        put_expr(b, e->args[2 * i], names);
        lm_text_printf(b, " THEN ");
        put_expr(b, e->args[2 * i + 1], names);
      }
      if (e->has_else) {
        lm_text_printf(b, " ELSE ");
        put_expr(b, e->args[e->nargs - 1], names);
      }
      lm_text_printf(b, " END");
      return;
    }
    default: break;
  }
  if (e->op == LM_XOP_COALESCE) {
    lm_text_printf(b, "coalesce(");
  } else {
    lm_text_printf(b, "op%d(", (int)e->op);
  }
  for (int32_t i = 0; i < e->nargs; i++) {
    if (i > 0) lm_text_printf(b, ", ");
    put_expr(b, e->args[i], names);
  }
  lm_text_printf(b, ")");
}

/* "e1 AS n1, e2 AS n2, ..." (the AS only where the name differs from e's text). */
static void put_projection(lm_text* b, lm_expr* const* exprs, int32_t n,
                           const lm_schema* out, const char* const* names) {
  for (int32_t i = 0; i < n; i++) {
    if (i > 0) lm_text_printf(b, ", ");
    size_t at = b->len;
    put_expr(b, exprs[i], names);
    const char* name = out->fields[i].name;
    if (b->nomem || strcmp(b->p + at, name) != 0) lm_text_printf(b, " AS %s", name);
  }
}

static const char* agg_name(lm_agg_fn fn) {
  switch (fn) {
    case LM_AGG_COUNT_STAR: return "count(*)";
    case LM_AGG_COUNT: return "count";
    case LM_AGG_SUM: return "sum";
    case LM_AGG_AVG: return "avg";
    case LM_AGG_MIN: return "min";
    case LM_AGG_MAX: return "max";
    case LM_AGG_FIRST: return "first";
    case LM_AGG_LAST: return "last";
    case LM_AGG_COUNT_DISTINCT: return "count distinct";
    default: return lm_agg_fn_name(fn);
  }
}

/* "sum(price * volume)", "count(*)". */
static void put_agg(lm_text* b, const lm_agg_spec* a, const char* const* names) {
  lm_text_printf(b, "%s", a->fn == LM_AGG_UDAF ? lm_udf_name(a->udaf) : agg_name(a->fn));
  if (a->arg == NULL) return;
  lm_text_printf(b, "(");
  put_expr(b, a->arg, names);
  if (a->order != NULL && a->fn != LM_AGG_FIRST && a->fn != LM_AGG_LAST) {
    lm_text_printf(b, ", "); /* the second argument of a two-argument aggregate */
    put_expr(b, a->order, names);
  }
  if (lm_agg_is_quantile(a->fn) && a->fn != LM_AGG_MEDIAN)
    lm_text_printf(b, ", %g", a->param);
  lm_text_printf(b, ")");
}

/* The rows of an EXPLAIN: cells (id, operator, details, input, output,
 * section), owned; rows are added to the current `section` ("logical", then
 * "physical"). */
#define EXPLAIN_COLS 6
typedef struct explain {
  char** cells;
  int64_t n, cap;
  bool nomem;
  const char* section; /* NULL: "logical" */
} explain;

static void add_row(explain* x, const char* op, char* details, const char* input,
                    const char* output) {
  if (details == NULL) x->nomem = true;
  if (!x->nomem && x->n == x->cap) {
    int64_t cap = x->cap ? x->cap * 2 : 8;
    char** grown = lm_realloc(x->cells, sizeof(char*) * EXPLAIN_COLS * (size_t)cap);
    if (grown == NULL) {
      x->nomem = true;
    } else {
      x->cells = grown;
      x->cap = cap;
    }
  }
  if (x->nomem) {
    lm_free(details);
    return;
  }
  char id[24];
  snprintf(id, sizeof id, "%lld", (long long)(x->n + 1));
  char** row = &x->cells[x->n * EXPLAIN_COLS];
  row[0] = lm_strdup(id);
  row[1] = lm_strdup(op);
  row[2] = details;
  row[3] = lm_strdup(input);
  row[4] = lm_strdup(output);
  row[5] = lm_strdup(x->section != NULL ? x->section : "logical");
  x->n++;
  for (int i = 0; i < EXPLAIN_COLS; i++) {
    if (row[i] == NULL) x->nomem = true;
  }
}

/* Input of the next row: the previous one's id. */
static const char* prev_id(const explain* x, char* buf, size_t cap) {
  snprintf(buf, cap, "%lld", (long long)x->n);
  return buf;
}

static const char* next_id(const explain* x, char* buf, size_t cap) {
  snprintf(buf, cap, "%lld", (long long)x->n + 2);
  return buf;
}

static char* text_columns(const char* name, const lm_schema* s) {
  char* cols = lm_db_format_columns(s);
  if (cols == NULL) return NULL;
  lm_text b = {0};
  lm_text_printf(&b, "%s (%s)", name, cols);
  lm_free(cols);
  return lm_text_take(&b);
}

/* Field names of a schema, as the expression printer wants them. */
static const char** names_of(const lm_schema* s) {
  const char** names = lm_calloc((size_t)s->ncols + 1, sizeof(char*));
  for (int32_t i = 0; names != NULL && i < s->ncols; i++) names[i] = s->fields[i].name;
  return names;
}

/* Row for what a plan reads: a source or an upstream stream / view. */
static void explain_input(explain* x, laminar_db* db, const char* name) {
  char buf[24];
  lm_source_def* src = lm_db_find_source(db, name);
  if (src != NULL) {
    lm_text b = {0};
    char* cols = lm_db_format_columns(&src->schema);
    lm_text_printf(&b, "%s (%s)", src->name, cols ? cols : "?");
    if (cols == NULL) b.nomem = true;
    lm_free(cols);
    if (src->wm_col >= 0) {
      lm_text_printf(&b, "; watermark %s - %lld ms", src->schema.fields[src->wm_col].name,
                     (long long)src->wm_delay_ms);
    }
    add_row(x, "source", lm_text_take(&b), "push", next_id(x, buf, sizeof buf));
    return;
  }
  lm_stream_def* up = lm_db_find_stream(db, name);
  lm_text b = {0};
  char* cols = lm_db_format_columns(&up->out_schema);
  if (cols == NULL) b.nomem = true;
  lm_text_printf(&b, "%s (%s)%s; EXPLAIN %s shows its plan", up->name, cols ? cols : "",
                 lm_op_view_is_changelog(&up->out_schema) ? ", a changelog" : "",
                 up->name);
  lm_free(cols);
  add_row(x, lm_db_is_view(up) ? "materialized view" : "stream", lm_text_take(&b), "",
          next_id(x, buf, sizeof buf));
}

/* Rows of a map operator: "filter" (`clause` and the condition, when there is
 * one) and "project". */
static void explain_map(explain* x, const char* clause, const lm_expr* filter,
                        lm_expr* const* exprs, int32_t n, const lm_schema* out,
                        const char* const* names) {
  char pbuf[24], nbuf[24];
  if (filter != NULL) {
    lm_text b = {0};
    lm_text_printf(&b, "%s", clause);
    put_expr(&b, filter, names);
    add_row(x, "filter", lm_text_take(&b), prev_id(x, pbuf, sizeof pbuf),
            next_id(x, nbuf, sizeof nbuf));
  }
  lm_text b = {0};
  put_projection(&b, exprs, n, out, names);
  add_row(x, "project", lm_text_take(&b), prev_id(x, pbuf, sizeof pbuf),
          next_id(x, nbuf, sizeof nbuf));
}

/* Rows for what a plan reads: its input; over branches, each input and its
 * branch's operators (operator names indented), then the "union all" row
 * taking them all. Returns the schema the rest of the plan reads, NULL if
 * an input is missing. */
/* A table function's row (the rows of `input` joined with its rows); the
 * rest reads the joined row, which this returns. */
static const lm_schema* explain_lateral(explain* x, const lm_lateral_spec* lat,
                                        const lm_schema* out, const char* input) {
  char pbuf[24], nbuf[24];
  lm_text what = {0};
  char usage[400];
  lm_udf_usage(lat->fn, usage, sizeof usage);
  lm_text_printf(&what, "%s joined with the rows of %s for each row", input, usage);
  add_row(x, "table function", lm_text_take(&what), prev_id(x, pbuf, sizeof pbuf),
          next_id(x, nbuf, sizeof nbuf));
  return out;
}

/* The rest of a join plan reads its joined row, or (a table function beside
 * the join) the function's row over it. */
static const lm_schema* explain_joined(explain* x, const lm_plan* plan) {
  if (!plan->join_lateral) return &plan->union_schema;
  return explain_lateral(x, &plan->jlat, &plan->jlat_schema, "the joined rows");
}

static const lm_schema* explain_inputs(explain* x, laminar_db* db, const lm_plan* plan) {
  bool is_source = false;
  if (!lm_plan_branched(plan)) {
    const lm_schema* in = lm_db_lookup_input(db, plan->input, &is_source);
    if (in != NULL) explain_input(x, db, plan->input);
    if (in != NULL && plan->lateral)
      return explain_lateral(x, &plan->lat, &plan->union_schema, plan->input);
    if (in == NULL || !plan->lookup) return in;
    /* A lookup join: its row, then the rest reads the joined row. */
    char pbuf[24], nbuf[24];
    lm_text what = {0};
    lm_text_printf(&what,
                   "%s with table %s ON its %d key column%s, its rows when each "
                   "row is processed",
                   plan->input, plan->lookup_table, (int)plan->lk.nkeys,
                   plan->lk.nkeys == 1 ? "" : "s");
    add_row(x, plan->lk.left_outer ? "left lookup join" : "lookup join",
            lm_text_take(&what), prev_id(x, pbuf, sizeof pbuf),
            next_id(x, nbuf, sizeof nbuf));
    return explain_joined(x, plan);
  }
  lm_text ins = {0}, what = {0};
  int64_t* last = lm_calloc((size_t)plan->nbranches, sizeof *last);
  if (last == NULL) x->nomem = true;
  for (int32_t b = 0; last != NULL && b < plan->nbranches; b++) {
    const lm_plan_branch* br = &plan->branches[b];
    const lm_schema* in = lm_db_lookup_input(db, br->input, &is_source);
    if (in == NULL) {
      lm_free(last);
      lm_free(ins.p);
      lm_free(what.p);
      return NULL;
    }
    int64_t first = x->n;
    explain_input(x, db, br->input);
    const char** names = names_of(in);
    if (names == NULL) x->nomem = true;
    if (names != NULL && br->exprs != NULL) {
      explain_map(x, "WHERE ", br->filter, br->exprs, br->nexprs,
                  lm_plan_branch_out(plan, b), names);
    }
    lm_free(names);
    for (int64_t r = first; !x->nomem && r < x->n; r++) {
      char** op = &x->cells[r * EXPLAIN_COLS + 1];
      lm_text t = {0};
      lm_text_printf(&t, "  %s", *op);
      lm_free(*op);
      *op = lm_text_take(&t);
      if (*op == NULL) x->nomem = true;
    }
    last[b] = x->n;
    lm_text_printf(&ins, "%s%lld", b > 0 ? ", " : "", (long long)x->n);
    lm_text_printf(&what, "%s%s", b > 0 ? ", " : "", br->input);
  }
  /* Each branch's last row feeds the union row, the next one. */
  char id[24];
  snprintf(id, sizeof id, "%lld", (long long)x->n + 1);
  for (int32_t b = 0; last != NULL && !x->nomem && b < plan->nbranches; b++) {
    char** out = &x->cells[(last[b] - 1) * EXPLAIN_COLS + 4];
    lm_free(*out);
    *out = lm_strdup(id);
    if (*out == NULL) x->nomem = true;
  }
  lm_free(last);
  if (plan->interval) {
    /* An interval join: its keys and time bound instead of the union's inputs. */
    const lm_ijoin_spec* j = &plan->ijoin;
    const char* unit = j->time_type == LM_TYPE_TIMESTAMP ? "us" : "ms";
    lm_free(what.p);
    what = (lm_text){0};
    if (j->window_ms > 0 && j->slide_ms != j->window_ms) {
      lm_text_printf(
          &what, "%s with %s ON %d key%s, hopping windows of %lld ms every %lld ms%s",
          plan->branches[0].input, plan->branches[1].input, (int)j->nkeys,
          j->nkeys == 1 ? "" : "s", (long long)j->window_ms, (long long)j->slide_ms,
          j->residual != NULL ? ", residual filter" : "");
    } else if (j->window_ms > 0) {
      lm_text_printf(&what, "%s with %s ON %d key%s, one tumbling window of %lld ms%s",
                     plan->branches[0].input, plan->branches[1].input, (int)j->nkeys,
                     j->nkeys == 1 ? "" : "s", (long long)j->window_ms,
                     j->residual != NULL ? ", residual filter" : "");
    } else {
      lm_text_printf(&what, "%s with %s ON %d key%s, %s.%s - %s.%s in [%lld, %lld] %s%s",
                     plan->branches[0].input, plan->branches[1].input, (int)j->nkeys,
                     j->nkeys == 1 ? "" : "s", plan->branches[1].input,
                     plan->union_schema.fields[j->lcols + j->rtime].name,
                     plan->branches[0].input, plan->union_schema.fields[j->ltime].name,
                     (long long)j->lo, (long long)j->hi, unit,
                     j->residual != NULL ? ", residual filter" : "");
    }
    lm_text_printf(&what, j->window_ms > 0
                              ? "; a window's rows held until both watermarks close it"
                              : "; each side's rows held until the other's watermark "
                                "passes");
  } else if (plan->joined && plan->temporal_table != NULL) {
    /* A temporal join: the table, its changelog the right input. */
    const lm_asof_spec* j = &plan->join;
    lm_free(what.p);
    what = (lm_text){0};
    lm_text_printf(&what,
                   "%s with %s FOR SYSTEM_TIME AS OF %s.%s ON %d key%s (the table's "
                   "changelog %s); %s rows wait for the table's watermark",
                   plan->branches[0].input, plan->temporal_table, plan->branches[0].input,
                   plan->union_schema.fields[j->ltime].name, (int)j->nkeys,
                   j->nkeys == 1 ? "" : "s", plan->branches[1].input,
                   plan->branches[0].input);
  } else if (plan->joined) {
    /* An ASOF join: its condition instead of the union's inputs. */
    static const char* const cmps[] = {"", ">=", ">", "<=", "<"};
    const lm_asof_spec* j = &plan->join;
    lm_free(what.p);
    what = (lm_text){0};
    lm_text_printf(&what, "%s with %s ON %d key%s, MATCH_CONDITION(%s.%s %s %s.%s)",
                   plan->branches[0].input, plan->branches[1].input, (int)j->nkeys,
                   j->nkeys == 1 ? "" : "s", plan->branches[0].input,
                   plan->union_schema.fields[j->ltime].name, cmps[j->cmp],
                   plan->branches[1].input,
                   plan->union_schema.fields[j->lcols + j->rtime].name);
    if (j->has_tolerance) {
      lm_text_printf(&what, ", tolerance %lld %s", (long long)j->tolerance,
                     j->time_type == LM_TYPE_TIMESTAMP ? "us" : "ms");
    }
    lm_text_printf(&what, "; %s rows wait for the right watermark",
                   plan->branches[0].input);
  } else {
    lm_text_printf(&what, "; each input's own watermark, the least of them the union's");
  }
  char nbuf[24];
  char* inputs = lm_text_take(&ins);
  if (inputs == NULL) x->nomem = true;
  add_row(x, plan->interval || plan->joined ? lm_plan_join_name(plan) : "union all",
          lm_text_take(&what), inputs != NULL ? inputs : "",
          next_id(x, nbuf, sizeof nbuf));
  lm_free(inputs);
  /* A derived table a table function joins: the union's rows, then its. */
  if (plan->lateral)
    return explain_lateral(x, &plan->lat, &plan->union_schema, "the derived table");
  return explain_joined(x, plan);
}

/* The analytic operator's row and the projection over its output (the
 * input's columns, then the calls'). */
static void explain_analytic(explain* x, const lm_plan* plan, const char* const* names) {
  static const char* const fn_names[] = {
      "",     "ROW_NUMBER",  "RANK",       "DENSE_RANK", "LAG",
      "LEAD", "FIRST_VALUE", "LAST_VALUE", "",           ""};
  static const char* const agg_names[] = {"",    "COUNT", "COUNT", "SUM",
                                          "AVG", "MIN",   "MAX"};
  char pbuf[24], nbuf[24];
  const lm_analytic_spec* a = &plan->an;
  lm_text b = {0};
  if (a->filter != NULL) {
    lm_text_printf(&b, "WHERE ");
    put_expr(&b, a->filter, names);
    lm_text_printf(&b, "; ");
  }
  for (int32_t i = 0; i < a->ncalls; i++) {
    const lm_analytic_call* c = &a->calls[i];
    bool agg = c->fn == LM_AN_AGG_ROWS || c->fn == LM_AN_AGG_RANGE;
    lm_text_printf(&b, "%s%s(", i > 0 ? ", " : "",
                   agg && c->agg <= LM_AGG_MAX ? agg_names[c->agg] : fn_names[c->fn]);
    if (c->arg != NULL) put_expr(&b, c->arg, names);
    if (agg && c->arg == NULL) lm_text_printf(&b, "*");
    if (c->fn == LM_AN_AGG_ROWS)
      lm_text_printf(&b, ") ROWS %lld PRECEDING", (long long)c->offset);
    if (c->fn == LM_AN_AGG_RANGE)
      lm_text_printf(&b, ") RANGE %lld ms PRECEDING", (long long)c->offset);
    if (agg) continue;
    if (c->fn == LM_AN_LAG || c->fn == LM_AN_LEAD) {
      lm_text_printf(&b, ", %lld", (long long)c->offset);
      if (c->def != NULL) {
        lm_text_printf(&b, ", ");
        put_expr(&b, c->def, names);
      }
    }
    lm_text_printf(&b, ")");
  }
  lm_text_printf(&b, " OVER (");
  if (a->nkeys > 0) lm_text_printf(&b, "PARTITION BY ");
  for (int32_t i = 0; i < a->nkeys; i++) {
    if (i > 0) lm_text_printf(&b, ", ");
    put_expr(&b, a->keys[i], names);
  }
  if (a->time_col >= 0) {
    lm_text_printf(&b, "%sORDER BY %s); rows held until the watermark passes them",
                   a->nkeys > 0 ? " " : "", names[a->time_col]);
  } else {
    lm_text_printf(&b, "%sORDER BY ", a->nkeys > 0 ? " " : "");
    for (int32_t i = 0; i < a->norder; i++) {
      if (i > 0) lm_text_printf(&b, ", ");
      put_expr(&b, a->order[i], names);
      if (a->desc[i]) lm_text_printf(&b, " DESC");
    }
    lm_text_printf(&b, "); per window: rows held until the watermark closes it");
  }
  add_row(x, "analytic", lm_text_take(&b), prev_id(x, pbuf, sizeof pbuf),
          next_id(x, nbuf, sizeof nbuf));
  const char** post = lm_calloc((size_t)plan->an_schema.ncols + 1, sizeof(char*));
  if (post == NULL) {
    x->nomem = true;
    return;
  }
  for (int32_t i = 0; i < plan->an_schema.ncols; i++) {
    post[i] = i < a->in_ncols ? names[i] : plan->an_schema.fields[i].name;
  }
  explain_map(x, "QUALIFY ", plan->qualify, plan->exprs, plan->nexprs, &plan->out_schema,
              post);
  lm_free(post);
}

/* Rows for the operators of a bound plan, reading `in` (the input schema). */
static void explain_plan(explain* x, const lm_plan* plan, const lm_schema* in,
                         bool view) {
  char pbuf[24], nbuf[24];
  const char** names = names_of(in);
  if (names == NULL) {
    x->nomem = true;
    return;
  }
  if (plan->analytic) {
    explain_analytic(x, plan, names);
  } else if (plan->windowed) {
    const lm_window_spec* w = &plan->window;
    lm_text b = {0};
    if (w->global) {
      lm_text_printf(&b, "no window");
    } else if (w->session) {
      lm_text_printf(&b, "session(%s, %lld ms)", names[w->time_col],
                     (long long)w->size_ms);
    } else if (w->hop_ms != w->size_ms) {
      lm_text_printf(&b, "hop(%s, %lld ms, %lld ms)", names[w->time_col],
                     (long long)w->size_ms, (long long)w->hop_ms);
    } else {
      lm_text_printf(&b, "tumble(%s, %lld ms)", names[w->time_col],
                     (long long)w->size_ms);
    }
    if (w->nkeys > 0) lm_text_printf(&b, " GROUP BY ");
    for (int32_t i = 0; i < w->nkeys; i++) {
      if (i > 0) lm_text_printf(&b, ", ");
      put_expr(&b, w->keys[i], names);
    }
    lm_text_printf(&b, "; aggregates ");
    for (int32_t i = 0; i < w->naggs; i++) {
      if (i > 0) lm_text_printf(&b, ", ");
      put_agg(&b, &w->aggs[i], names);
    }
    if (w->filter != NULL) {
      lm_text_printf(&b, "; WHERE ");
      put_expr(&b, w->filter, names);
    }
    if (w->changelog) lm_text_printf(&b, "; input weighted by %s", names[w->weight_col]);
    lm_text_printf(&b, w->emit_changes ? "; EMIT CHANGES" : "; EMIT ON WINDOW CLOSE");
    if (w->lateness_ms > 0) {
      lm_text_printf(&b, "; allowed lateness %lld ms", (long long)w->lateness_ms);
    }
    if (plan->late_output != NULL)
      lm_text_printf(&b, "; late rows to %s", plan->late_output);
    if (w->ttl_ms > 0)
      lm_text_printf(&b, "; keys idle %lld ms in event time forgotten (state_ttl)",
                     (long long)w->ttl_ms);
    add_row(x, "window_aggregate", lm_text_take(&b), prev_id(x, pbuf, sizeof pbuf),
            next_id(x, nbuf, sizeof nbuf));
    /* The projection reads window_start, window_end, keys, then aggregates. */
    lm_text* texts = lm_calloc((size_t)plan->agg_schema.ncols + 1, sizeof(lm_text));
    const char** post = lm_calloc((size_t)plan->agg_schema.ncols + 1, sizeof(char*));
    if (texts == NULL || post == NULL) {
      x->nomem = true;
    } else {
      for (int32_t i = 0; i < plan->agg_schema.ncols; i++) {
        int32_t k = i - 2, a = i - 2 - w->nkeys;
        if (i < 2 || a >= w->naggs) {
          lm_text_printf(&texts[i], "%s", plan->agg_schema.fields[i].name);
        } else if (k < w->nkeys) {
          put_expr(&texts[i], w->keys[k], names);
        } else {
          put_agg(&texts[i], &w->aggs[a], names);
        }
        post[i] = texts[i].p != NULL ? texts[i].p : "?";
        if (texts[i].nomem) x->nomem = true;
      }
      explain_map(x, "HAVING ", plan->having, plan->post_exprs, plan->npost,
                  &plan->out_schema, post);
    }
    for (int32_t i = 0; texts != NULL && i < plan->agg_schema.ncols; i++)
      lm_free(texts[i].p);
    lm_free(texts);
    lm_free(post);
  } else {
    explain_map(x, "WHERE ", plan->filter, plan->exprs, plan->nexprs, &plan->out_schema,
                names);
  }
  if (view) {
    lm_text b = {0};
    lm_text_printf(
        &b, "%s",
        lm_op_view_is_changelog(&plan->out_schema)
            ? "Z-set of the rows: each input row adds its _weight; forwards the "
              "changes it applied (_weight)"
            : "Z-set of the rows: each input row adds 1; forwards the changes it "
              "applied (_weight)");
    add_row(x, "materialize", lm_text_take(&b), prev_id(x, pbuf, sizeof pbuf),
            next_id(x, nbuf, sizeof nbuf));
  }
  lm_free(names);
}

/* The physical section (plan/planner.h): a "branch" row per input of a
 * branched plan (its operator), the "chain" row (the operators each
 * partition runs, by name), then the planner's choices: "partitioning"
 * (partitions and hash keys, or why the stream runs whole) and "two_phase"
 * (what each aggregate becomes in a partial and a final step, or why the
 * stream does not split). `chain` is the built chain of partition 0 (a
 * view's materialize operator included), `in` the schema the window reads,
 * `output` where the rows go. */
static void explain_physical(explain* x, const lm_plan* plan, const lm_phys_plan* ph,
                             const lm_op* chain, bool view, const lm_schema* in,
                             const char* output) {
  x->section = "physical";
  char idbuf[24], ops[256];
  bool branched = lm_plan_branched(plan);
  int64_t chain_id = x->n + (branched ? plan->nbranches : 0) + 1;
  snprintf(idbuf, sizeof idbuf, "%lld", (long long)chain_id);
  lm_text ins = {0};
  for (int32_t b = 0; branched && b < plan->nbranches; b++) {
    const lm_plan_branch* br = &plan->branches[b];
    lm_text d = {0};
    lm_text_printf(&d, "%s: %s", br->input,
                   br->exprs != NULL ? "map (to the union's columns)"
                                     : "no operator (its rows as they are)");
    add_row(x, "branch", lm_text_take(&d), br->input, idbuf);
    lm_text_printf(&ins, "%s%lld", b > 0 ? ", " : "", (long long)x->n);
  }
  if (!branched) lm_text_printf(&ins, "%s", plan->input);
  lm_plan_chain_names(chain, ops, sizeof ops);
  lm_text d = {0};
  lm_text_printf(&d, "%s%s", ops,
                 view && strstr(ops, "materialize") == NULL ? " -> materialize" : "");
  if (ph->nparts > 1) {
    lm_text_printf(&d, "; one per partition (%d)", (int)ph->nparts);
  } else {
    lm_text_printf(&d, "; one instance, on reactor 0");
  }
  char* from = lm_text_take(&ins);
  if (from == NULL) x->nomem = true;
  add_row(x, "chain", lm_text_take(&d), from != NULL ? from : "", output);
  lm_free(from);
  lm_text p = {0};
  if (ph->nparts > 1) {
    lm_text_printf(&p, "%d partitions by hash of ", (int)ph->nparts);
    for (int32_t k = 0; k < ph->npart_keys && !plan->joined; k++) {
      lm_text_printf(&p, "%s%s", k > 0 ? ", " : "", in->fields[ph->part_keys[k]].name);
    }
    for (int32_t k = 0; k < ph->npart_keys && plan->joined; k++) {
      /* An ASOF join: each input by its own key column. */
      int32_t rc = lm_plan_part_source_col(plan, ph, 1, k);
      lm_text_printf(&p, "%s%s.%s / %s.%s", k > 0 ? ", " : "", plan->branches[0].input,
                     in->fields[ph->part_keys[k]].name, plan->branches[1].input,
                     in->fields[plan->join.lcols + rc].name);
    }
    lm_text_printf(&p, " (cores = %d)", (int)ph->nparts);
  } else {
    lm_text_printf(&p, "unpartitioned: %s", ph->unpartitioned);
  }
  add_row(x, "partitioning", lm_text_take(&p), idbuf, "");
  const lm_window_spec* w = &plan->window;
  const char** names = names_of(in);
  lm_text t = {0};
  if (names == NULL) {
    x->nomem = true;
  } else if (ph->no_two_phase == NULL) {
    lm_text_printf(&t, "split: partial per window and key");
    for (int32_t i = 0; i < w->naggs; i++) {
      lm_text_printf(&t, "%s", i > 0 ? ", " : ": ");
      put_agg(&t, &w->aggs[i], names);
      lm_text_printf(&t, " as %s", lm_plan_two_phase_partial(w->aggs[i].fn));
    }
    lm_text_printf(&t, "; final combines them by");
    for (int32_t i = 0; i < w->naggs; i++) {
      lm_text_printf(&t, "%s%s", i > 0 ? ", " : " ",
                     lm_plan_two_phase_final(w->aggs[i].fn));
    }
  } else if (ph->no_two_phase_agg >= 0) {
    lm_text_printf(&t, "not split: ");
    put_agg(&t, &w->aggs[ph->no_two_phase_agg], names);
    lm_text_printf(&t, " does not decompose (only COUNT, SUM, AVG, MIN and MAX do)");
  } else {
    lm_text_printf(&t, "not split: %s", ph->no_two_phase);
  }
  lm_free(names);
  add_row(x, "two_phase", lm_text_take(&t), idbuf, "");
}

/* Where an existing stream's rows go: "2 subscribers; stream b; sink s". */
static char* outputs_of(laminar_db* db, const lm_stream_def* s) {
  lm_text b = {0};
  const char* sep = "";
  if (s->nsubs > 0) {
    lm_text_printf(&b, "%d subscriber%s", (int)s->nsubs, s->nsubs == 1 ? "" : "s");
    sep = "; ";
  }
  for (int32_t i = 0; i < s->nreaders; i++) {
    lm_text_printf(&b, "%s%s %s", sep,
                   lm_db_is_view(s->readers[i]) ? "materialized view" : "stream",
                   s->readers[i]->name);
    sep = "; ";
  }
  for (int32_t i = 0; i < db->nsinks; i++) {
    if (db->sinks[i]->stream != s) continue;
    lm_text_printf(&b, "%ssink %s", sep, db->sinks[i]->name);
    sep = "; ";
  }
  if (*sep == '\0') lm_text_printf(&b, "(none yet)");
  return lm_text_take(&b);
}

/* Hand the rows out (out NULL: laminar_execute, nothing to hand) and free them. */
static laminar_code explain_rows(explain* x, struct ArrowArrayStream* out,
                                 laminar_error* err) {
  laminar_code rc = x->nomem ? LAMINAR_ERR_NOMEM : LAMINAR_OK;
  if (rc == LAMINAR_OK && out != NULL) {
    static const char* const names[] = {"id",    "operator", "details",
                                        "input", "output",   "section"};
    rc = lm_db_string_table(names, EXPLAIN_COLS, x->cells, x->n, out);
  }
  for (int64_t i = 0; i < x->n * EXPLAIN_COLS; i++) lm_free(x->cells[i]);
  lm_free(x->cells);
  return rc == LAMINAR_OK ? LAMINAR_OK : lm_error_set(err, rc, "out of memory");
}

/* EXPLAIN SELECT ... FROM view. */
static laminar_code explain_select(laminar_db* db, const lm_stmt* stmt, explain* x,
                                   laminar_error* err) {
  lm_stream_def** views;
  int32_t nviews;
  LM_TRY(find_views(db, stmt->select, &views, &nviews, err));
  query q;
  laminar_code rc = bind_query(db, stmt, &q, err);
  lm_stream_def* s = views[0];
  lm_free(views);
  LM_TRY(rc);
  char pbuf[24], nbuf[24];
  if (lm_plan_branched(&q.plan)) {
    /* Each view, its branch's operators, the union (as a stream's inputs). */
    const lm_schema* in = explain_inputs(x, db, &q.plan);
    explain_plan(x, &q.plan, in != NULL ? in : &q.plan.union_schema, false);
  } else {
    add_row(x, "scan", text_columns(s->name, lm_db_view_columns(s)), "materialized view",
            next_id(x, nbuf, sizeof nbuf));
    explain_plan(x, &q.plan, lm_db_view_columns(s), false);
  }
  const char** names = names_of(&q.plan.out_schema);
  if (names == NULL) x->nomem = true;
  if (q.nkeys > 0 && names != NULL) {
    lm_text b = {0};
    lm_text_printf(&b, "ORDER BY ");
    for (int32_t i = 0; i < q.nkeys; i++) {
      lm_text_printf(&b, "%s%s%s%s", i ? ", " : "", names[q.keys[i].col],
                     q.keys[i].desc ? " DESC" : "",
                     q.keys[i].nulls_first ? " NULLS FIRST" : "");
    }
    add_row(x, "sort", lm_text_take(&b), prev_id(x, pbuf, sizeof pbuf),
            next_id(x, nbuf, sizeof nbuf));
  }
  if (q.limit >= 0 || q.offset > 0) {
    lm_text b = {0};
    if (q.limit >= 0) lm_text_printf(&b, "LIMIT %lld ", (long long)q.limit);
    lm_text_printf(&b, "OFFSET %lld (rows a view holds k times count k times)",
                   (long long)q.offset);
    add_row(x, "limit", lm_text_take(&b), prev_id(x, pbuf, sizeof pbuf),
            next_id(x, nbuf, sizeof nbuf));
  }
  lm_free(names);
  /* The result has the first nout columns only (the rest were sort keys). */
  lm_schema shown = q.plan.out_schema;
  shown.ncols = q.nout;
  add_row(x, "output", text_columns("result", &shown), prev_id(x, pbuf, sizeof pbuf),
          "laminar_query");
  x->section = "physical";
  lm_text d = {0};
  lm_text_printf(&d, "once over a snapshot of %s's rows; in the caller's thread",
                 s->name);
  add_row(x, "query", lm_text_take(&d), "materialized view", "laminar_query");
  query_free(&q);
  return LAMINAR_OK;
}

laminar_code lm_db_explain(laminar_db* db, const lm_stmt* stmt,
                           struct ArrowArrayStream* out, laminar_error* err) {
  explain x = {0};
  char pbuf[24];
  const lm_stmt* inner = stmt->inner;
  lm_stmt as_view;
  if (inner != NULL && inner->kind == LM_STMT_CREATE_TABLE && inner->select != NULL) {
    as_view = *inner; /* a table fed by its query: its view (db/table.c) */
    as_view.kind = LM_STMT_CREATE_STREAM;
    as_view.object = LM_OBJ_VIEW;
    as_view.materialized = true;
    inner = &as_view;
  }
  if (inner == NULL) { /* EXPLAIN name */
    lm_stream_def* s = lm_db_find_stream(db, stmt->name);
    if (s == NULL) {
      return fail_sql(err, LAMINAR_ERR_SQL_UNKNOWN_OBJECT, stmt->name_line,
                      stmt->name_column, stmt->name,
                      "no stream or materialized view named '%s'", stmt->name);
    }
    const lm_schema* in = explain_inputs(&x, db, &s->plan);
    if (LM_NEVER(in == NULL)) {
      explain_rows(&x, NULL, err);
      return lm_error_set(err, LAMINAR_ERR_INTERNAL, "input vanished");
    }
    if (s->late_of != NULL) { /* a late side output: its stream's window picks the rows */
      char nbuf[24];
      lm_text b = {0};
      lm_text_printf(&b, "the rows of %s that stream %s's window counts as late",
                     s->plan.input, s->late_of->name);
      add_row(&x, "late_rows", lm_text_take(&b), prev_id(&x, pbuf, sizeof pbuf),
              next_id(&x, nbuf, sizeof nbuf));
    } else {
      explain_plan(&x, &s->plan, in, lm_db_is_view(s));
    }
    char* where = outputs_of(db, s);
    add_row(
        &x, "output",
        text_columns(s->name, lm_db_is_view(s) ? lm_db_view_columns(s) : &s->out_schema),
        prev_id(&x, pbuf, sizeof pbuf), where != NULL ? where : "");
    if (where == NULL) x.nomem = true;
    explain_physical(&x, &s->plan, &s->phys, s->chain, lm_db_is_view(s), in,
                     where != NULL ? where : "");
    lm_free(where);
  } else if (inner->kind == LM_STMT_CREATE_STREAM &&
             (inner->object != LM_OBJ_VIEW || inner->materialized)) {
    lm_plan plan;
    LM_TRY(lm_option_check_sql(LAMINAR_SCOPE_STREAM, inner->name, inner->options,
                               inner->noptions, err));
    LM_TRY(lm_bind_stream_tables(inner, lm_db_lookup_input, lm_db_table_columns, db,
                                 &db->funcs, &plan, err));
    laminar_code orc = lm_db_stream_options(inner, &plan, err);
    if (orc == LAMINAR_OK) orc = lm_db_join_ttl(db, inner, &plan, err);
    if (orc != LAMINAR_OK) {
      lm_plan_free(&plan);
      return orc;
    }
    const lm_schema* in = explain_inputs(&x, db, &plan);
    if (LM_NEVER(in == NULL)) {
      lm_plan_free(&plan);
      explain_rows(&x, NULL, err);
      return lm_error_set(err, LAMINAR_ERR_INTERNAL, "input vanished");
    }
    explain_plan(&x, &plan, in, inner->materialized);
    /* A view's own columns: its plan's output without a carried _weight. */
    lm_schema shown = plan.out_schema;
    if (inner->materialized && lm_op_view_is_changelog(&shown)) shown.ncols--;
    add_row(&x, "output", text_columns(inner->name, &shown),
            prev_id(&x, pbuf, sizeof pbuf), "(not created: EXPLAIN only)");
    /* What the planner would choose, over the chain it would build. */
    bool is_source = false;
    const lm_schema* src_schema = lm_db_lookup_input(db, plan.input, &is_source);
    lm_plan_context pctx = {
        .ncores = db->rt.ncores,
        .source = !lm_plan_branched(&plan) && is_source ? src_schema : NULL,
        .is_view = inner->materialized};
    lm_phys_plan ph;
    lm_plan_physical(&plan, &pctx, &ph);
    lm_op* chain = NULL;
    if (lm_plan_build_chain(&plan, &chain) != LAMINAR_OK) x.nomem = true;
    if (chain != NULL) {
      explain_physical(&x, &plan, &ph, chain, inner->materialized, in,
                       "(not created: EXPLAIN only)");
    }
    lm_op_chain_destroy(chain);
    lm_plan_free(&plan);
  } else if (inner->kind == LM_STMT_SELECT) {
    LM_TRY(explain_select(db, inner, &x, err));
  } else {
    return fail_sql(err, LAMINAR_ERR_SQL_UNSUPPORTED, inner->line, inner->column, NULL,
                    "EXPLAIN takes a stream or view name, CREATE STREAM / CREATE "
                    "MATERIALIZED VIEW / CREATE TABLE ... AS SELECT, or a SELECT over a "
                    "view");
  }
  return explain_rows(&x, out, err);
}
