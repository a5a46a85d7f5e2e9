/*
 * twophase.c -- laminar_stream_two_phase: a windowed GROUP BY stream split into
 * a partial and a final query, so that final(partial(any split of the input))
 * gives the stream's rows (the Spark adapter aggregates on the map side and
 * shuffles partial rows only).
 *
 * The partial query is the stream's GROUP BY with every aggregate replaced by
 * its partial state (COUNT -> COUNT, SUM -> SUM, MIN/MAX -> MIN/MAX, AVG ->
 * SUM and COUNT, BOOL_AND/BOOL_OR -> themselves, ARG_MIN(x, by) -> ARG_MIN
 * and MIN of `by` where x is not NULL; ARG_MAX alike; VAR_* / STDDEV_* ->
 * COUNT, __mean and VAR_POP * COUNT, merged by __m2: Chan's rule; STRING_AGG
 * -> itself, its final joining the partial strings; the
 * two-argument ones -> the same for y and x where both are non-NULL and
 * COVAR_POP * REGR_COUNT, the co-moment merged by polarization; a
 * user-defined aggregate f(args) -> __udaf_partial('f', args), its state
 * serialized into a LM_UDAF_STATE_TYPE column, merged in the final by
 * __udaf_merge('f', state): f's merge, then its finalize), one row per
 * (window, key) with window_start ("__ws"),
 * window_end ("__we") and the keys ("__k<i>"); its source has no watermark, so
 * windows close on explicit watermarks only and no row is late whatever order
 * it comes in. The final query groups the partial rows by the keys, "__we"
 * and a tumbling window of the hop over "__ws" (each window start falls in one
 * of them), combines the partial states (SUM of counts and sums, MIN of MINs,
 * SUM/SUM for AVG) and applies the select list and HAVING with the stream's
 * own names; its allowed lateness is the stream's plus (size - hop), so each
 * window closes at the watermark the stream's would.
 *
 * Both texts are generated from the stream's stored CREATE statement (parsed
 * again, printed back fully parenthesized) and checked here by declaring them
 * in scratch in-memory databases (given the stream's functions): the final
 * stream must have the stream's
 * column names and types, or the stream is reported as not decomposable.
 *
 * Control thread, under db->lock (internal.h).
 */
#include "db/internal.h"

#include "db/text.h"
#include "sql/binder.h"
#include "sql/sql.h"
#include "util/util.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

/* ---- printing the AST back to SQL ------------------------------------------------- */

/* Called on every node before it is printed; returns true when it printed the
 * node itself. */
typedef bool (*print_hook)(void* arg, const lm_ast_expr* e, lm_text* out);

static void put(lm_text* t, const char* s) { lm_text_put(t, s, strlen(s)); }

/* `name` between quote characters q, each q in it doubled. */
static void put_quoted(lm_text* t, const char* name, char q) {
  lm_text_put(t, &q, 1);
  for (const char* c = name; *c != '\0'; c++) {
    if (*c == q) lm_text_put(t, &q, 1);
    lm_text_put(t, c, 1);
  }
  lm_text_put(t, &q, 1);
}

static void put_ident(lm_text* t, const char* name) { put_quoted(t, name, '"'); }

static void print_expr(const lm_ast_expr* e, print_hook hook, void* arg, lm_text* t);

static void print_list(lm_ast_expr* const* list, size_t n, print_hook hook, void* arg,
                       lm_text* t) {
  for (size_t i = 0; i < n; i++) {
    if (i) put(t, ", ");
    print_expr(list[i], hook, arg, t);
  }
}

static void print_literal(const lm_ast_expr* e, lm_text* t) {
  switch (e->lit) {
    case LM_LIT_NULL: put(t, "NULL"); return;
    case LM_LIT_BOOL: put(t, e->b ? "TRUE" : "FALSE"); return;
    case LM_LIT_INT:
      /* (-(x)) spelled out: "- -5" would be fine, "--5" a comment. */
      lm_text_printf(t, "(%" PRId64 ")", e->i);
      return;
    case LM_LIT_INTERVAL:
      lm_text_printf(t, "INTERVAL '%" PRId64 "' MILLISECOND", e->i);
      return;
    case LM_LIT_DOUBLE: {
      char buf[64];
      snprintf(buf, sizeof buf, "%.17g", e->d);
      lm_text_printf(t, "(%s%s)", buf, strpbrk(buf, ".eEni") == NULL ? ".0" : "");
      return;
    }
    case LM_LIT_STRING:
      put(t, "'");
      for (size_t i = 0; i < e->slen; i++) {
        if (e->s[i] == '\'') put(t, "'");
        lm_text_put(t, e->s + i, 1);
      }
      put(t, "'");
      return;
  }
}

/* Every operator parenthesized, so the text binds to the same tree. */
static void print_expr(const lm_ast_expr* e, print_hook hook, void* arg, lm_text* t) {
  if (hook != NULL && hook(arg, e, t)) return;
  switch (e->kind) {
    case LM_AST_LITERAL: print_literal(e, t); return;
    case LM_AST_COLUMN:
      if (e->table != NULL) {
        put_ident(t, e->table);
        put(t, ".");
      }
      put_ident(t, e->name);
      return;
    case LM_AST_UNARY:
      lm_text_printf(t, "(%s (", lm_bind_op_text(e->op));
      print_expr(e->left, hook, arg, t);
      put(t, "))");
      return;
    case LM_AST_BINARY:
      put(t, "(");
      print_expr(e->left, hook, arg, t);
      lm_text_printf(t, " %s ", lm_bind_op_text(e->op));
      print_expr(e->right, hook, arg, t);
      put(t, ")");
      return;
    case LM_AST_IS_NULL:
      put(t, "(");
      print_expr(e->left, hook, arg, t);
      put(t, e->negated ? " IS NOT NULL)" : " IS NULL)");
      return;
    case LM_AST_BETWEEN:
      put(t, "(");
      print_expr(e->left, hook, arg, t);
      put(t, e->negated ? " NOT BETWEEN " : " BETWEEN ");
      print_expr(e->list[0], hook, arg, t);
      put(t, " AND ");
      print_expr(e->list[1], hook, arg, t);
      put(t, ")");
      return;
    case LM_AST_IN:
      put(t, "(");
      print_expr(e->left, hook, arg, t);
      put(t, e->negated ? " NOT IN (" : " IN (");
      print_list(e->list, e->nlist, hook, arg, t);
      put(t, "))");
      return;
    case LM_AST_LIKE:
      put(t, "(");
      print_expr(e->left, hook, arg, t);
      put(t, e->negated ? " NOT" : "");
      put(t, e->ilike ? " ILIKE " : " LIKE ");
      print_expr(e->right, hook, arg, t);
      if (e->nlist == 1) {
        put(t, " ESCAPE ");
        print_expr(e->list[0], hook, arg, t);
      }
      put(t, ")");
      return;
    case LM_AST_CASE:
      put(t, "(CASE");
      if (e->operand != NULL) {
        put(t, " ");
        print_expr(e->operand, hook, arg, t);
      }
      for (size_t i = 0; i < e->nwhen; i++) {
        put(t, " WHEN ");
        print_expr(e->whens[i], hook, arg, t);
        put(t, " THEN ");
        print_expr(e->thens[i], hook, arg, t);
      }
      if (e->else_expr != NULL) {
        put(t, " ELSE ");
        print_expr(e->else_expr, hook, arg, t);
      }
      put(t, " END)");
      return;
    case LM_AST_CAST:
      put(t, "CAST(");
      print_expr(e->left, hook, arg, t);
      lm_text_printf(t, " AS %s)", lm_sql_type_name(e->cast_type));
      return;
    case LM_AST_FUNCTION:
      lm_text_printf(t, "%s(%s", e->fname, e->distinct ? "DISTINCT " : "");
      if (e->star) put(t, "*");
      print_list(e->args, e->nargs, hook, arg, t);
      put(t, ")");
      return;
    case LM_AST_STAR:
      if (e->table != NULL) {
        put_ident(t, e->table);
        put(t, ".");
      }
      put(t, "*");
      return;
    case LM_AST_VARIABLE: lm_text_printf(t, "${%s}", e->name); return;
  }
}

/* ---- the decomposition ------------------------------------------------------------ */

#define MAX_REASON 1100

typedef struct splitter {
  const lm_ast_select* sel;
  const lm_udf_list* funcs; /* the stream's functions (its plan's) */
  const lm_ast_expr** keys; /* the plain GROUP BY expressions */
  int32_t nkeys;
  const lm_ast_expr** aggs; /* distinct aggregate calls, in first-use order */
  int32_t naggs, cap_aggs;
  lm_text partial_items; /* ", SUM(x) AS "__a0", ..." */
  bool nomem;
  char reason[MAX_REASON]; /* why the stream does not decompose ("" if it does) */
} splitter;

static void refuse(splitter* s, const char* fmt, const char* what) {
  if (s->reason[0] == '\0') snprintf(s->reason, sizeof s->reason, fmt, what);
}

/* VAR_* and STDDEV_*: merged by Chan's rule in the final query. */
static bool is_univariate(lm_agg_fn fn) {
  return fn == LM_AGG_VAR_SAMP || fn == LM_AGG_VAR_POP || fn == LM_AGG_STDDEV_SAMP ||
         fn == LM_AGG_STDDEV_POP;
}

static bool is_bool_agg(const char* f) {
  return lm_streq_nocase(f, "bool_and") || lm_streq_nocase(f, "bool_or");
}
static bool is_arg_minmax(const char* f) {
  return lm_streq_nocase(f, "arg_min") || lm_streq_nocase(f, "arg_max");
}

/* The user-defined aggregate call `e` is of, or NULL (a built-in's call or
 * anything else). */
static const lm_udf* udaf_of(const splitter* s, const lm_ast_expr* e) {
  if (e->kind != LM_AST_FUNCTION || e->over != NULL || lm_agg_find(e->fname) != NULL)
    return NULL;
  const lm_udf* f = lm_udf_list_find(s->funcs, e->fname);
  return f != NULL && lm_udf_is_aggregate(f) ? f : NULL;
}

/* "CASE WHEN (other) IS NULL THEN NULL ELSE (v) END": v where both are non-NULL. */
static void print_masked(lm_text* t, const lm_ast_expr* v, const lm_ast_expr* other) {
  put(t, "CASE WHEN (");
  print_expr(other, NULL, NULL, t);
  put(t, ") IS NULL THEN NULL ELSE (");
  print_expr(v, NULL, NULL, t);
  put(t, ") END");
}

/* The index of aggregate call `e`, adding it (and its partial columns) when new. */
static int32_t agg_index(splitter* s, const lm_ast_expr* e) {
  for (int32_t i = 0; i < s->naggs; i++) {
    if (lm_bind_ast_equal(s->aggs[i], e)) return i;
  }
  if (s->naggs == s->cap_aggs) {
    int32_t cap = s->cap_aggs ? s->cap_aggs * 2 : 8;
    const lm_ast_expr** grown = lm_realloc(s->aggs, sizeof(void*) * (size_t)cap);
    if (grown == NULL) {
      s->nomem = true;
      return -1;
    }
    s->aggs = grown;
    s->cap_aggs = cap;
  }
  int32_t j = s->naggs++;
  s->aggs[j] = e;
  const char* f = e->fname;
  lm_text* t = &s->partial_items;
  bool count_star = lm_streq_nocase(f, "count") && (e->star || e->nargs == 0);
  if (e->distinct) {
    refuse(s,
           "%s(DISTINCT ...) does not decompose (a partial count of distinct values "
           "cannot be added up)",
           f);
    return j;
  }
  const lm_udf* u = udaf_of(s, e);
  if (u != NULL) {
    /* its state, serialized (the final merges the states: __udaf_merge) */
    put(t, ", __udaf_partial(");
    put_quoted(t, lm_udf_name(u), '\'');
    for (size_t i = 0; i < e->nargs; i++) {
      put(t, ", ");
      print_expr(e->args[i], NULL, NULL, t);
    }
    lm_text_printf(t, ") AS \"__a%d\"", (int)j);
    return j;
  }
  const lm_agg_def* def = lm_agg_find(f);
  if (def != NULL && is_univariate(def->fn) && e->nargs == 1) {
    /* n, the Welford mean and the centered sum of squares */
    put(t, ", count(");
    print_expr(e->args[0], NULL, NULL, t);
    lm_text_printf(t, ") AS \"__a%d\", __mean(", (int)j);
    print_expr(e->args[0], NULL, NULL, t);
    lm_text_printf(t, ") AS \"__b%d\", (var_pop(", (int)j);
    print_expr(e->args[0], NULL, NULL, t);
    put(t, ") * count(");
    print_expr(e->args[0], NULL, NULL, t);
    lm_text_printf(t, ")) AS \"__c%d\"", (int)j);
    return j;
  }
  if (def != NULL && lm_agg_is_moments(def->fn) && e->nargs == 2 &&
      def->fn != LM_AGG_M2) {
    /* over the rows where both are non-NULL (y', x'): n, the means, the sums
     * of squares and the co-moment */
    for (int c = 0; c < 5; c++) {
      const lm_ast_expr* v = e->args[c < 3 ? 0 : 1];
      const lm_ast_expr* other = e->args[c < 3 ? 1 : 0];
      if (c == 0) {
        put(t, ", count(");
      } else {
        put(t, c == 1 || c == 3 ? ", __mean(" : ", (var_pop(");
      }
      print_masked(t, v, other);
      if (c == 2 || c == 4) {
        put(t, ") * count(");
        print_masked(t, v, other);
        put(t, ")");
      }
      lm_text_printf(t, ") AS \"__%c%d\"", 'a' + c, (int)j);
    }
    put(t, ", (covar_pop(");
    print_list(e->args, 2, NULL, NULL, t);
    put(t, ") * regr_count(");
    print_list(e->args, 2, NULL, NULL, t);
    lm_text_printf(t, ")) AS \"__f%d\"", (int)j);
    return j;
  }
  if (def != NULL && lm_agg_is_moments(def->fn)) {
    refuse(s,
           "%s() does not decompose yet (its partial state, a count, means and centered "
           "sums of squares, has no SQL form the final query can merge)",
           f);
    return j;
  }
  if (def != NULL &&
      (lm_agg_is_quantile(def->fn) || def->fn == LM_AGG_APPROX_COUNT_DISTINCT)) {
    refuse(s,
           "%s() does not decompose (its partial state, a group's counted values or a "
           "sketch, has no SQL column the final query could merge)",
           f);
    return j;
  }
  if (is_arg_minmax(f) && e->nargs == 2) {
    /* the partial's x and its `by` (over the rows where both are non-NULL) */
    lm_text_printf(t, ", %s(", f);
    print_list(e->args, 2, NULL, NULL, t);
    lm_text_printf(t, ") AS \"__a%d\", %s(CASE WHEN (", (int)j,
                   lm_streq_nocase(f, "arg_min") ? "min" : "max");
    print_expr(e->args[0], NULL, NULL, t);
    put(t, ") IS NULL THEN NULL ELSE (");
    print_expr(e->args[1], NULL, NULL, t);
    lm_text_printf(t, ") END) AS \"__b%d\"", (int)j);
    return j;
  }
  if (def != NULL && def->fn == LM_AGG_STRING_AGG) {
    /* each split's values joined in its arrival order; the final joins those */
    lm_text_printf(t, ", %s(", f);
    print_list(e->args, e->nargs, NULL, NULL, t);
    lm_text_printf(t, ") AS \"__a%d\"", (int)j);
    return j;
  }
  if (!count_star && e->nargs != 1) {
    refuse(s, "%s() with other than one argument", f);
    return j;
  }
  bool avg = lm_streq_nocase(f, "avg");
  if (!count_star && !avg && !lm_streq_nocase(f, "count") && !lm_streq_nocase(f, "sum") &&
      !lm_streq_nocase(f, "min") && !lm_streq_nocase(f, "max") && !is_bool_agg(f)) {
    refuse(s,
           "%s() does not decompose (only COUNT, SUM, AVG, MIN, MAX, BOOL_AND, BOOL_OR, "
           "ARG_MIN and ARG_MAX do)",
           f);
    return j;
  }
  if (count_star) {
    lm_text_printf(t, ", count(*) AS \"__a%d\"", (int)j);
    return j;
  }
  lm_text_printf(t, ", %s(", avg ? "sum" : f);
  print_expr(e->args[0], NULL, NULL, t);
  lm_text_printf(t, ") AS \"__a%d\"", (int)j);
  if (avg) {
    put(t, ", count(");
    print_expr(e->args[0], NULL, NULL, t);
    lm_text_printf(t, ") AS \"__b%d\"", (int)j);
  }
  return j;
}

/* The final expression of two-argument moment aggregate `fn` over partial
 * columns __a..__f of aggregate j (n, y's mean and sum of squares, x's, the
 * co-moment): sums of squares merged by __m2 (Chan), the co-moment's merge
 * term by polarization, (Q(y+x) - Q(y) - Q(x)) / 2 over the partial means
 * (the means of y + x are their sums); DuckDB's NULL / NaN results. */
static void print_bivariate_final(lm_agg_fn fn, int32_t j, lm_text* out) {
  char n[64], qy[160], qx[160], c0[400], c[1024], my[128], mx[128];
  int k = (int)j;
  snprintf(n, sizeof n, "sum(\"__a%d\")", k);
  snprintf(qy, sizeof qy, "(sum(\"__c%d\") + __m2(\"__b%d\", \"__a%d\"))", k, k, k);
  snprintf(qx, sizeof qx, "(sum(\"__e%d\") + __m2(\"__d%d\", \"__a%d\"))", k, k, k);
  snprintf(c0, sizeof c0,
           "(sum(\"__f%d\") + (__m2((\"__b%d\" + \"__d%d\"), \"__a%d\") - "
           "__m2(\"__b%d\", \"__a%d\") - __m2(\"__d%d\", \"__a%d\")) / 2)",
           k, k, k, k, k, k, k, k);
  /* a constant y or x has no co-moment (not the polarization's rounding) */
  snprintf(c, sizeof c, "(CASE WHEN %s = 0 OR %s = 0 THEN 0.0 ELSE %s END)", qy, qx, c0);
  snprintf(my, sizeof my, "(sum((\"__b%d\" * \"__a%d\")) / %s)", k, k, n);
  snprintf(mx, sizeof mx, "(sum((\"__d%d\" * \"__a%d\")) / %s)", k, k, n);
  switch (fn) {
    case LM_AGG_REGR_COUNT: lm_text_printf(out, "%s", n); return;
    case LM_AGG_COVAR_POP:
      lm_text_printf(out, "(CASE WHEN %s > 0 THEN %s / %s END)", n, c, n);
      return;
    case LM_AGG_COVAR_SAMP:
      lm_text_printf(out, "(CASE WHEN %s > 1 THEN %s / (%s - 1) END)", n, c, n);
      return;
    case LM_AGG_CORR:
      lm_text_printf(out, "(CASE WHEN %s > 0 THEN %s / sqrt(%s * %s) END)", n, c, qy, qx);
      return;
    case LM_AGG_REGR_SLOPE:
      lm_text_printf(out, "(CASE WHEN %s > 0 THEN %s / %s END)", n, c, qx);
      return;
    case LM_AGG_REGR_INTERCEPT:
      lm_text_printf(out, "(CASE WHEN %s > 0 AND %s <> 0 THEN %s - %s / %s * %s END)", n,
                     qx, my, c, qx, mx);
      return;
    case LM_AGG_REGR_R2:
      lm_text_printf(out,
                     "(CASE WHEN %s > 0 AND %s <> 0 THEN (CASE WHEN %s = 0 THEN 1.0 ELSE "
                     "%s * %s / (%s * %s) END) END)",
                     n, qx, qy, c, c, qx, qy);
      return;
    default: return;
  }
}

/* Print a select item or HAVING of the final query: keys become their partial
 * column, aggregates their combination, window_end the partial window end. */
static bool final_hook(void* arg, const lm_ast_expr* e, lm_text* out) {
  splitter* s = arg;
  for (int32_t i = 0; i < s->nkeys; i++) {
    if (lm_bind_ast_equal(s->keys[i], e)) {
      lm_text_printf(out, "\"__k%d\"", (int)i);
      return true;
    }
  }
  const lm_udf* u = udaf_of(s, e);
  if (lm_bind_is_aggregate_call(e) || u != NULL) {
    int32_t j = agg_index(s, e);
    if (j < 0) return true;
    const char* f = e->fname;
    if (u != NULL) {
      put(out, "__udaf_merge(");
      put_quoted(out, lm_udf_name(u), '\'');
      lm_text_printf(out, ", \"__a%d\")", (int)j);
    } else if (lm_streq_nocase(f, "avg")) {
      lm_text_printf(out, "(CAST(sum(\"__a%d\") AS DOUBLE) / sum(\"__b%d\"))", (int)j,
                     (int)j);
    } else if (lm_streq_nocase(f, "min") || lm_streq_nocase(f, "max") || is_bool_agg(f)) {
      lm_text_printf(out, "%s(\"__a%d\")", f, (int)j);
    } else if (lm_agg_find(f) != NULL && is_univariate(lm_agg_find(f)->fn)) {
      /* N, and the sum of squares: the partials' own plus their means' spread */
      lm_agg_fn fn = lm_agg_find(f)->fn;
      bool samp = fn == LM_AGG_VAR_SAMP || fn == LM_AGG_STDDEV_SAMP;
      bool root = fn == LM_AGG_STDDEV_SAMP || fn == LM_AGG_STDDEV_POP;
      lm_text_printf(out,
                     "%s(CASE WHEN sum(\"__a%d\") > %d THEN (sum(\"__c%d\") + "
                     "__m2(\"__b%d\", \"__a%d\")) / (sum(\"__a%d\") - %d) END)",
                     root ? "sqrt" : "", (int)j, samp ? 1 : 0, (int)j, (int)j, (int)j,
                     (int)j, samp ? 1 : 0);
    } else if (lm_agg_find(f) != NULL && lm_agg_is_moments(lm_agg_find(f)->fn)) {
      print_bivariate_final(lm_agg_find(f)->fn, j, out);
    } else if (is_arg_minmax(f)) {
      lm_text_printf(out, "%s(\"__a%d\", \"__b%d\")", f, (int)j, (int)j);
    } else if (lm_agg_find(f) != NULL && lm_agg_find(f)->fn == LM_AGG_STRING_AGG) {
      lm_text_printf(out, "%s(\"__a%d\"", f, (int)j);
      if (e->nargs == 2) {
        put(out, ", ");
        print_expr(e->args[1], NULL, NULL, out);
      }
      put(out, ")");
    } else {
      lm_text_printf(out, "sum(\"__a%d\")", (int)j);
    }
    return true;
  }
  if (e->kind == LM_AST_COLUMN && e->table == NULL &&
      lm_streq_nocase(e->name, "window_end")) {
    put(out, "\"__we\"");
    return true;
  }
  if (e->kind == LM_AST_STAR) refuse(s, "%s in the select list of a GROUP BY", "'*'");
  return false;
}

/* "CREATE SOURCE name (cols)" for `schema`, quoted, with NOT NULL marks. */
static void source_ddl(lm_text* t, const char* name, const lm_schema* schema) {
  put(t, "CREATE SOURCE ");
  put_ident(t, name);
  put(t, " (");
  for (int32_t i = 0; i < schema->ncols; i++) {
    if (i) put(t, ", ");
    put_ident(t, schema->fields[i].name);
    lm_text_printf(t, " %s%s", lm_type_name(schema->fields[i].type),
                   schema->fields[i].not_null ? " NOT NULL" : "");
  }
  put(t, ")");
}

/* Why stream `s` (or its path from the root source) cannot be split in two
 * phases, or NULL. */
static const char* path_refusal(laminar_db* db, const lm_stream_def* s) {
  /* The stream's own shape: the planner's choice (plan/planner.c); an
   * aggregate that does not decompose is named by the splitter below, as the
   * statement spells it. */
  if (s->phys.no_two_phase != NULL && s->phys.no_two_phase_agg < 0)
    return s->phys.no_two_phase;
  for (const lm_stream_def* x = s; !x->plan.input_is_source;) {
    x = lm_db_find_stream(db, x->plan.input);
    if (x == NULL) return "an upstream stream is missing";
    if (lm_plan_branched(&x->plan))
      return "an upstream stream reads several inputs (UNION ALL, ASOF JOIN)";
    if (x->plan.windowed || lm_db_is_view(x)) {
      return "an upstream stream aggregates (only filters and projections may come "
             "before "
             "the split window)";
    }
  }
  return NULL;
}

/* The partial and final SQL texts of stream `s` (malloc'd); reason[] set and
 * LAMINAR_OK with NULL texts when it does not decompose. */
static laminar_code build_texts(laminar_db* db, const lm_stream_def* s,
                                const lm_stmt* stmt, const lm_source_def* root,
                                splitter* sp, char** out_partial, char** out_final_tail,
                                laminar_error* err) {
  const lm_ast_select* sel = stmt->select;
  const lm_plan* p = &s->plan;
  lm_text part = {0}, tail = {0};
  *out_partial = NULL;
  *out_final_tail = NULL;
  sp->sel = sel;
  sp->keys = lm_calloc(sel->ngroup + 1, sizeof(void*));
  if (sp->keys == NULL) return lm_error_set(err, LAMINAR_ERR_NOMEM, "out of memory");
  const lm_ast_expr* window = NULL;
  for (size_t i = 0; i < sel->ngroup; i++) {
    if (lm_bind_is_window_call(sel->group_by[i])) {
      window = sel->group_by[i];
    } else {
      sp->keys[sp->nkeys++] = sel->group_by[i];
    }
  }
  if (sel->distinct) {
    snprintf(sp->reason, sizeof sp->reason, "SELECT DISTINCT does not decompose");
  } else if (window == NULL || sel->norder > 0 || sel->limit >= 0) {
    snprintf(sp->reason, sizeof sp->reason, "its statement has no window in GROUP BY");
    return LAMINAR_OK;
  }
  /* The final: select items (with the stream's output names) and HAVING. */
  put(&tail, "SELECT ");
  for (size_t i = 0; i < sel->nitems; i++) {
    if (i) put(&tail, ", ");
    print_expr(sel->items[i].expr, final_hook, sp, &tail);
    put(&tail, " AS ");
    put_ident(&tail,
              (int32_t)i < s->out_schema.ncols ? s->out_schema.fields[i].name : "?");
  }
  lm_text having = {0};
  if (sel->having != NULL) {
    put(&having, " HAVING ");
    print_expr(sel->having, final_hook, sp, &having);
  }
  /* The partial: window bounds, keys, partial aggregates; the stream's FROM,
   * WHERE and GROUP BY. */
  lm_text_printf(&part, "CREATE STREAM ");
  put_ident(&part, s->name);
  put(&part, " AS SELECT window_start AS \"__ws\", window_end AS \"__we\"");
  for (int32_t i = 0; i < sp->nkeys; i++) {
    put(&part, ", ");
    print_expr(sp->keys[i], NULL, NULL, &part);
    lm_text_printf(&part, " AS \"__k%d\"", (int)i);
  }
  if (sp->partial_items.p != NULL) put(&part, sp->partial_items.p);
  put(&part, " FROM ");
  put_ident(&part, sel->from);
  if (sel->from_alias != NULL) {
    put(&part, " AS ");
    put_ident(&part, sel->from_alias);
  }
  if (sel->where != NULL) {
    put(&part, " WHERE ");
    print_expr(sel->where, NULL, NULL, &part);
  }
  put(&part, " GROUP BY ");
  print_list(sel->group_by, sel->ngroup, NULL, NULL, &part);
  /* Final GROUP BY: keys, window end, a tumble of the hop over window starts. */
  put(&tail, " FROM \"__partial\" GROUP BY ");
  for (int32_t i = 0; i < sp->nkeys; i++) lm_text_printf(&tail, "\"__k%d\", ", (int)i);
  lm_text_printf(&tail, "\"__we\", tumble(\"__ws\", INTERVAL '%" PRId64 "' MILLISECOND)",
                 p->window.hop_ms);
  if (having.p != NULL) put(&tail, having.p);
  bool oom = having.nomem;
  lm_free(lm_text_take(&having));
  int64_t lateness = p->window.lateness_ms + (p->window.size_ms - p->window.hop_ms);
  if (lateness > 0) {
    lm_text_printf(&tail, " WITH (allowed_lateness = INTERVAL '%" PRId64 "' MILLISECOND)",
                   lateness);
  }
  /* The partial script: the root source without its watermark, the upstream
   * streams as declared, then the partial stream. */
  lm_text script = {0};
  source_ddl(&script, root->name, &root->schema);
  put(&script, ";\n");
  const lm_stream_def* chain[64];
  int32_t n = 0;
  for (const lm_stream_def* x = s; !x->plan.input_is_source && n < 64;) {
    x = lm_db_find_stream(db, x->plan.input);
    chain[n++] = x;
  }
  if (n == 64) snprintf(sp->reason, sizeof sp->reason, "more than 63 upstream streams");
  for (int32_t i = n - 1; i >= 0; i--) {
    put(&script, chain[i]->sql);
    put(&script, ";\n");
  }
  if (part.p != NULL) put(&script, part.p);
  put(&script, ";");
  oom = oom || part.nomem;
  lm_free(lm_text_take(&part));
  *out_partial = lm_text_take(&script);
  *out_final_tail = lm_text_take(&tail);
  if (oom || *out_partial == NULL || *out_final_tail == NULL || sp->nomem ||
      sp->partial_items.nomem) {
    lm_free(*out_partial);
    lm_free(*out_final_tail);
    *out_partial = *out_final_tail = NULL;
    return lm_error_set(err, LAMINAR_ERR_NOMEM, "out of memory");
  }
  return LAMINAR_OK;
}

/* Declare `sql` in a fresh in-memory database (*out, to close) that has the
 * stream's functions `funcs`. */
static laminar_code scratch(const char* sql, const lm_udf_list* funcs, laminar_db** out,
                            laminar_error* err) {
  laminar_code rc = laminar_open(NULL, out, err);
  for (int32_t i = 0; rc == LAMINAR_OK && i < funcs->n; i++) {
    rc = lm_udf_list_add(&(*out)->funcs, funcs->items[i], false);
    if (rc != LAMINAR_OK) lm_error_set(err, rc, "out of memory");
  }
  if (rc == LAMINAR_OK) rc = laminar_execute(*out, sql, err);
  return rc;
}

/* Declare one half's script in a scratch database (*dbp) and find its stream
 * `name` (*out). A script that does not declare is a refusal: LAMINAR_OK,
 * *out NULL and `reason` says why. */
static laminar_code declare_half(const char* script, const lm_udf_list* funcs,
                                 const char* half, const char* stream, const char* name,
                                 laminar_db** dbp, const lm_stream_def** out,
                                 char* reason, size_t cap, laminar_error* err) {
  *out = NULL;
  laminar_error serr;
  laminar_code rc = scratch(script, funcs, dbp, &serr);
  if (rc == LAMINAR_ERR_NOMEM) return lm_error_set(err, rc, "out of memory");
  if (rc != LAMINAR_OK) {
    snprintf(reason, cap, "the %s query does not declare: %s", half, serr.message);
    return LAMINAR_OK;
  }
  *out = lm_db_find_stream(*dbp, name);
  if (*out == NULL)
    return lm_error_set(err, LAMINAR_ERR_INTERNAL,
                        "stream '%s': the %s query declares no stream '%s'", stream, half,
                        name);
  return LAMINAR_OK;
}

static bool same_columns(const lm_schema* a, const lm_schema* b, char* why, size_t cap) {
  if (a->ncols != b->ncols) {
    snprintf(why, cap, "the final query has %d columns, the stream %d", (int)a->ncols,
             (int)b->ncols);
    return false;
  }
  for (int32_t i = 0; i < a->ncols; i++) {
    if (strcmp(a->fields[i].name, b->fields[i].name) != 0 ||
        a->fields[i].type != b->fields[i].type) {
      snprintf(why, cap,
               "the final query's column %d would be '%s' %s, the stream's is '%s' %s",
               (int)i + 1, a->fields[i].name, lm_type_name(a->fields[i].type),
               b->fields[i].name, lm_type_name(b->fields[i].type));
      return false;
    }
  }
  return true;
}

laminar_code laminar_stream_two_phase(laminar_db* db, const char* stream,
                                      struct ArrowArrayStream* out, laminar_error* err) {
  if (db == NULL || db->magic != LM_MAGIC_DB || stream == NULL || out == NULL) {
    return lm_error_set(err, LAMINAR_ERR_MISUSE,
                        "laminar_stream_two_phase: NULL or closed "
                        "argument");
  }
  out->release = NULL;
  pthread_mutex_lock(&db->lock);
  laminar_code rc = LAMINAR_OK;
  lm_arena* arena = NULL;
  splitter sp;
  memset(&sp, 0, sizeof sp);
  char *partial = NULL, *tail = NULL, *final = NULL, *final_source = NULL;
  laminar_db *pdb = NULL, *fdb = NULL;
  char** cells = NULL;
  const lm_stream_def* s = lm_db_find_stream(db, stream);
  if (s == NULL) {
    rc =
        lm_error_set(err, LAMINAR_ERR_SQL_UNKNOWN_OBJECT, "no stream named '%s'", stream);
    lm_error_object(err, stream, NULL);
    goto done;
  }
  const char* why = path_refusal(db, s);
  if (why != NULL) {
    snprintf(sp.reason, sizeof sp.reason, "%s", why);
    goto refused;
  }
  sp.funcs = &s->plan.udfs;
  const lm_stream_def* cur = s;
  while (!cur->plan.input_is_source) cur = lm_db_find_stream(db, cur->plan.input);
  const lm_source_def* root = lm_db_find_source(db, cur->plan.input);
  if (root == NULL) {
    rc =
        lm_error_set(err, LAMINAR_ERR_INTERNAL, "stream '%s' has no root source", stream);
    goto done;
  }
  lm_stmt** stmts = NULL;
  size_t nstmts = 0;
  laminar_error perr;
  if (lm_arena_create(&arena) != LAMINAR_OK) {
    rc = lm_error_set(err, LAMINAR_ERR_NOMEM, "out of memory");
    goto done;
  }
  rc = lm_sql_parse(arena, s->sql, &stmts, &nstmts, &perr);
  if (rc != LAMINAR_OK || nstmts != 1 || stmts[0]->select == NULL) {
    rc = lm_error_set(err, rc == LAMINAR_ERR_NOMEM ? rc : LAMINAR_ERR_INTERNAL,
                      "stream '%s': its stored statement does not parse again", stream);
    goto done;
  }
  rc = build_texts(db, s, stmts[0], root, &sp, &partial, &tail, err);
  if (rc != LAMINAR_OK) goto done;
  if (sp.reason[0] != '\0') goto refused;
  /* Check both halves in scratch databases; the final's source is the
   * partial stream's rows. */
  const lm_stream_def* ps;
  rc = declare_half(partial, &s->plan.udfs, "partial", stream, s->name, &pdb, &ps,
                    sp.reason, sizeof sp.reason, err);
  if (rc != LAMINAR_OK) goto done;
  if (ps == NULL) goto refused;
  lm_text ft = {0};
  source_ddl(&ft, "__partial", &ps->out_schema);
  put(&ft, ";\nCREATE STREAM ");
  put_ident(&ft, s->name);
  put(&ft, " AS ");
  put(&ft, tail);
  put(&ft, ";");
  final = lm_text_take(&ft);
  final_source = lm_strdup("__partial");
  if (final == NULL || final_source == NULL) {
    rc = lm_error_set(err, LAMINAR_ERR_NOMEM, "out of memory");
    goto done;
  }
  const lm_stream_def* fs;
  rc = declare_half(final, &s->plan.udfs, "final", stream, s->name, &fdb, &fs, sp.reason,
                    sizeof sp.reason, err);
  if (rc != LAMINAR_OK) goto done;
  if (fs == NULL) goto refused;
  if (!same_columns(&fs->out_schema, &s->out_schema, sp.reason, sizeof sp.reason)) {
    goto refused;
  }
  /* role, name, value: partial / partial_source / final / final_source /
   * key (one per GROUP BY key) / window (value: the window's hop in ms). */
  int64_t nrows = 5 + sp.nkeys;
  cells = lm_calloc((size_t)nrows * 3, sizeof(char*));
  char** key_names = lm_calloc((size_t)sp.nkeys + 1, sizeof(char*));
  char hop[32];
  snprintf(hop, sizeof hop, "%" PRId64, s->plan.window.hop_ms);
  bool ok = cells != NULL && key_names != NULL;
  for (int32_t i = 0; ok && i < sp.nkeys; i++) {
    char buf[32];
    snprintf(buf, sizeof buf, "__k%d", (int)i);
    key_names[i] = lm_strdup(buf);
    ok = key_names[i] != NULL;
  }
  if (ok) {
    const char* rows[][3] = {{"partial", s->name, partial},
                             {"partial_source", root->name, ""},
                             {"final", s->name, final},
                             {"final_source", final_source, ""},
                             {"window", "__ws", hop}};
    for (int32_t r = 0; r < 4; r++) {
      for (int c = 0; c < 3; c++) cells[r * 3 + c] = (char*)rows[r][c];
    }
    for (int32_t i = 0; i < sp.nkeys; i++) {
      cells[(4 + i) * 3] = "key";
      cells[(4 + i) * 3 + 1] = key_names[i];
      cells[(4 + i) * 3 + 2] = "";
    }
    int32_t w = 4 + sp.nkeys;
    for (int c = 0; c < 3; c++) cells[w * 3 + c] = (char*)rows[4][c];
    static const char* const names[] = {"role", "name", "value"};
    rc = lm_db_string_table(names, 3, cells, nrows, out);
    if (rc != LAMINAR_OK) lm_error_set(err, rc, "out of memory");
  } else {
    rc = lm_error_set(err, LAMINAR_ERR_NOMEM, "out of memory");
  }
  for (int32_t i = 0; key_names != NULL && i < sp.nkeys; i++) lm_free(key_names[i]);
  lm_free(key_names);
  goto done;
refused:
  rc = lm_error_set(err, LAMINAR_ERR_SQL_UNSUPPORTED,
                    "stream '%s' does not split into partial and final aggregation: %s",
                    stream, sp.reason);
  lm_error_object(err, stream, NULL);
done:
  if (pdb != NULL) laminar_close(pdb);
  if (fdb != NULL) laminar_close(fdb);
  lm_free(cells);
  lm_free(partial);
  lm_free(tail);
  lm_free(final);
  lm_free(final_source);
  lm_free(sp.keys);
  lm_free(sp.aggs);
  lm_free(lm_text_take(&sp.partial_items));
  lm_arena_destroy(arena);
  pthread_mutex_unlock(&db->lock);
  return rc;
}
