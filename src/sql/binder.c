/*
 * binder.c -- semantic analysis of CREATE STREAM ... AS SELECT.
 *
 * Resolves names against the input's schema, types every expression (inserting
 * the casts the kernels of src/expr expect: INT32 widens to INT64 in
 * arithmetic, mixed numbers meet in DOUBLE, '/' is always DOUBLE as in
 * DuckDB), and splits an aggregating query into the window aggregate (group
 * keys, aggregate calls with their argument expressions) and the projection
 * evaluated over the aggregate's output (window_start, window_end, keys,
 * aggregates). Every error names the line:column of the expression at fault.
 */
#include "sql/binder.h"

#include "op/view.h"
#include "util/util.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

typedef enum bind_mode {
  MODE_ROW = 0, /* expressions over the input row */
  MODE_POST = 1 /* expressions over the aggregate output */
} bind_mode;

typedef struct binder {
  const lm_stmt* stmt; /* for errors that have no expression to point at */
  lm_plan* plan;
  laminar_error* err;
  const lm_schema* input;
  const char* input_name;
  const char* input_alias;
  /* ASOF JOIN: input is the joined row; columns resolve by side (join.*). */
  const lm_schema* join_left;
  const lm_schema* join_right; /* NULL: no join */
  const char* right_name;
  const char* right_alias;
  /* A table function beside the join (FROM a JOIN b ON ..., f(...)): its
   * columns, after the joined row's (lat_base on) in input; NULL: none. */
  const lm_schema* lat_right;
  const char* lat_name;
  const char* lat_alias;
  int32_t lat_base;
  /* A join that carries one input's changelog weight through (lookup, ASOF,
   * temporal): the weight's column in input; else the input ends in it. */
  bool pass_weight;
  int32_t weight_col;
  lm_plan_table_fn tables;  /* lookup joins: the tables in scope (NULL: none) */
  const lm_udf_list* funcs; /* user-defined functions in scope (NULL: none) */
  /* The WHERE conjunct that is the plan's temporal filter (bound as the
   * expire operator, not as a filter), NULL: none. */
  const lm_ast_expr* temporal;
  /* aggregation */
  bool aggregating;
  const lm_ast_expr* tumble; /* the tumble(...) call of GROUP BY */
  const lm_ast_expr** keys;  /* GROUP BY key expressions (AST) */
  int32_t nkeys;
  const lm_ast_expr** agg_calls; /* distinct aggregate calls (AST) */
  lm_agg_spec* aggs;
  int32_t naggs;
  int32_t cap_aggs;
  /* analytic calls (OVER) the select items may refer to, by AST node; the
   * call i is column an_base + i of the analytic operator's output */
  const lm_ast_expr** an_calls;
  int32_t nan;
  int32_t an_base;
} binder;

lm_type lm_bind_sql_type(lm_sql_type type) {
  switch (type) {
    case LM_SQL_TYPE_STRING: return LM_TYPE_STRING;
    case LM_SQL_TYPE_INT64: return LM_TYPE_INT64;
    case LM_SQL_TYPE_INT32: return LM_TYPE_INT32;
    case LM_SQL_TYPE_DOUBLE: return LM_TYPE_DOUBLE;
    case LM_SQL_TYPE_BOOL: return LM_TYPE_BOOL;
    case LM_SQL_TYPE_TIMESTAMP: return LM_TYPE_TIMESTAMP;
    case LM_SQL_TYPE_DATE: return LM_TYPE_DATE;
    case LM_SQL_TYPE_INT16: return LM_TYPE_INT16;
    case LM_SQL_TYPE_INT8: return LM_TYPE_INT8;
    case LM_SQL_TYPE_FLOAT: return LM_TYPE_FLOAT;
    case LM_SQL_TYPE_BINARY: return LM_TYPE_BINARY;
    case LM_SQL_TYPE_TIME: return LM_TYPE_TIME;
    case LM_SQL_TYPE_DECIMAL: break;
  }
  if (((uint32_t)type & 0xffu) == LM_SQL_TYPE_DECIMAL) {
    return lm_type_decimal((int32_t)(((uint32_t)type >> 8) & 0xffu),
                           (int32_t)(((uint32_t)type >> 16) & 0xffu));
  }
  return LM_TYPE_NULL;
}

/* ---- errors ----------------------------------------------------------------------- */

__attribute__((format(printf, 4, 5))) static laminar_code fail(binder* b,
                                                               laminar_code code,
                                                               const lm_ast_expr* at,
                                                               const char* fmt, ...) {
  char msg[768];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  if (at != NULL) {
    lm_error_set(b->err, code, "%s at line %d, column %d", msg, (int)at->line,
                 (int)at->column);
    lm_error_at(b->err, at->line, at->column);
  } else {
    /* No expression to blame: point at the statement. */
    lm_error_set(b->err, code, "%s (statement at line %d, column %d)", msg,
                 (int)b->stmt->line, (int)b->stmt->column);
    lm_error_at(b->err, b->stmt->line, b->stmt->column);
  }
  return code;
}

/* ---- expression construction -------------------------------------------------- */

static lm_expr* new_expr(binder* b, lm_expr_kind kind, lm_type type) {
  lm_expr* e = lm_pool_alloc(&b->plan->pool, sizeof *e);
  if (e == NULL) return NULL;
  memset(e, 0, sizeof *e);
  e->kind = kind;
  e->type = type;
  return e;
}

static lm_expr* new_call(binder* b, lm_expr_op op, lm_type type, int32_t nargs) {
  lm_expr* e = new_expr(b, LM_EXPR_CALL, type);
  if (e == NULL) return NULL;
  e->op = op;
  e->nargs = nargs;
  e->args = lm_pool_alloc(&b->plan->pool, sizeof(lm_expr*) * (size_t)(nargs ? nargs : 1));
  if (e->args == NULL) return NULL;
  return e;
}

#define NOMEM(b) lm_error_set((b)->err, LAMINAR_ERR_NOMEM, "out of memory")

static bool is_numeric(lm_type t) {
  return t == LM_TYPE_INT32 || t == LM_TYPE_INT64 || t == LM_TYPE_DOUBLE ||
         t == LM_TYPE_INT16 || t == LM_TYPE_INT8 || t == LM_TYPE_FLOAT ||
         lm_type_is_decimal(t);
}

/* The floating type two numbers (not meeting as a DECIMAL) compute in, as
 * DuckDB: DOUBLE with a DOUBLE, else REAL with a REAL (an integer or DECIMAL
 * meets a REAL as a REAL), else LM_TYPE_NULL (integers). */
static lm_type float_of(lm_type a, lm_type c) {
  if (a == LM_TYPE_DOUBLE || c == LM_TYPE_DOUBLE) return LM_TYPE_DOUBLE;
  if (a == LM_TYPE_FLOAT || c == LM_TYPE_FLOAT) return LM_TYPE_FLOAT;
  return LM_TYPE_NULL;
}

/* ---- DECIMAL typing, DuckDB's rules (docs/SQL.md "Decimals") ---------------------- */

/* An integer type as the DECIMAL(w, 0) holding all its values (TINYINT 3,
 * SMALLINT 5, INT 10, BIGINT 19 digits); a DECIMAL as itself; else NULL. */
static lm_type as_decimal(lm_type t) {
  switch (lm_type_kind(t)) {
    case LM_TYPE_INT8: return lm_type_decimal(3, 0);
    case LM_TYPE_INT16: return lm_type_decimal(5, 0);
    case LM_TYPE_INT32: return lm_type_decimal(10, 0);
    case LM_TYPE_INT64: return lm_type_decimal(19, 0);
    case LM_TYPE_DECIMAL: return t;
    default: return LM_TYPE_NULL;
  }
}

/* A DECIMAL of `digits` integer digits and scale s, the precision capped at 38. */
static lm_type decimal_of(int32_t digits, int32_t s) {
  int32_t p = digits + s;
  if (p > LM_DECIMAL_MAX_PRECISION) p = LM_DECIMAL_MAX_PRECISION;
  if (p < 1) p = 1;
  return lm_type_decimal(p, s);
}

static int32_t max_i32(int32_t a, int32_t c) { return a > c ? a : c; }

/* The DECIMAL two numbers meet in when one is a DECIMAL and neither a DOUBLE
 * (CASE, COALESCE, '%'): the larger integer part and the larger scale. `extra`
 * integer digits are added ('+' and '-' add one). */
static lm_type common_decimal(lm_type a, lm_type c, int32_t extra) {
  lm_type x = as_decimal(a), y = as_decimal(c);
  int32_t px = lm_type_precision(x), sx = lm_type_scale(x);
  int32_t py = lm_type_precision(y), sy = lm_type_scale(y);
  return decimal_of(max_i32(px - sx, py - sy) + extra, max_i32(sx, sy));
}

/* Whether a and c are numbers that meet as a DECIMAL (one is, no DOUBLE). */
static bool meets_as_decimal(lm_type a, lm_type c) {
  return (lm_type_is_decimal(a) || lm_type_is_decimal(c)) &&
         as_decimal(a) != LM_TYPE_NULL && as_decimal(c) != LM_TYPE_NULL;
}

/* An integer type of at most 32 bits: computes as INT (SMALLINT and TINYINT
 * are storage types, promoted in arithmetic as C promotes them). */
static bool is_int32_or_less(lm_type t) {
  return t == LM_TYPE_INT32 || t == LM_TYPE_INT16 || t == LM_TYPE_INT8;
}

/* Wrap `e` in a CAST to `type` unless it already has it. A NULL literal just
 * takes the type. */
static laminar_code coerce(binder* b, lm_expr** e, lm_type type) {
  if ((*e)->type == type) return LAMINAR_OK;
  if ((*e)->kind == LM_EXPR_LITERAL && (*e)->lit.is_null) {
    (*e)->type = type;
    return LAMINAR_OK;
  }
  lm_expr* c = new_call(b, LM_XOP_CAST, type, 1);
  if (c == NULL) return NOMEM(b);
  c->args[0] = *e;
  *e = c;
  return LAMINAR_OK;
}

/* The type two operands meet in for comparison / CASE / COALESCE, or
 * LM_TYPE_NULL if there is none. */
static lm_type common_type(lm_type a, lm_type c, bool a_is_str_lit, bool c_is_str_lit) {
  if (a == c) return a;
  if (a == LM_TYPE_NULL) return c;
  if (c == LM_TYPE_NULL) return a;
  if (meets_as_decimal(a, c)) return common_decimal(a, c, 0);
  if (is_numeric(a) && is_numeric(c)) {
    lm_type f = float_of(a, c);
    return f != LM_TYPE_NULL ? f : LM_TYPE_INT64;
  }
  /* A DATE meets a TIMESTAMP as its midnight, as in DuckDB. */
  if ((a == LM_TYPE_DATE && c == LM_TYPE_TIMESTAMP) ||
      (a == LM_TYPE_TIMESTAMP && c == LM_TYPE_DATE)) {
    return LM_TYPE_TIMESTAMP;
  }
  /* A string literal meets a typed value in that value's type ('2024-01-01'
   * against a TIMESTAMP, '5' against a BIGINT), as in DuckDB. */
  if (a_is_str_lit && a == LM_TYPE_STRING) return c;
  if (c_is_str_lit && c == LM_TYPE_STRING) return a;
  return LM_TYPE_NULL;
}

static bool is_str_lit(const lm_ast_expr* a) {
  return a->kind == LM_AST_LITERAL && a->lit == LM_LIT_STRING;
}

/* ---- AST helpers ------------------------------------------------------------------- */

static bool ast_equal(const lm_ast_expr* x, const lm_ast_expr* y);

static bool ast_list_equal(lm_ast_expr* const* a, size_t na, lm_ast_expr* const* c,
                           size_t nc) {
  if (na != nc) return false;
  for (size_t i = 0; i < na; i++) {
    if (!ast_equal(a[i], c[i])) return false;
  }
  return true;
}

static bool name_eq(const char* a, const char* c) {
  if (a == NULL || c == NULL) return a == c;
  return lm_streq_nocase(a, c);
}

/* Structural equality (GROUP BY key matching). Qualifiers are ignored. */
static bool ast_equal(const lm_ast_expr* x, const lm_ast_expr* y) {
  if (x == NULL || y == NULL) return x == y;
  if (x->kind != y->kind) return false;
  switch (x->kind) {
    case LM_AST_LITERAL:
      if (x->lit != y->lit) return false;
      switch (x->lit) {
        case LM_LIT_NULL: return true;
        case LM_LIT_BOOL: return x->b == y->b;
        case LM_LIT_INT:
        case LM_LIT_INTERVAL: return x->i == y->i;
        case LM_LIT_DOUBLE: return x->d == y->d;
        case LM_LIT_STRING: return x->slen == y->slen && memcmp(x->s, y->s, x->slen) == 0;
      }
      return false;
    case LM_AST_COLUMN: return name_eq(x->name, y->name);
    case LM_AST_UNARY: return x->op == y->op && ast_equal(x->left, y->left);
    case LM_AST_BINARY:
      return x->op == y->op && ast_equal(x->left, y->left) &&
             ast_equal(x->right, y->right);
    case LM_AST_IS_NULL: return x->negated == y->negated && ast_equal(x->left, y->left);
    case LM_AST_BETWEEN:
    case LM_AST_IN:
      return x->negated == y->negated && ast_equal(x->left, y->left) &&
             ast_list_equal(x->list, x->nlist, y->list, y->nlist);
    case LM_AST_LIKE:
      return x->negated == y->negated && x->ilike == y->ilike &&
             ast_equal(x->left, y->left) && ast_equal(x->right, y->right) &&
             ast_list_equal(x->list, x->nlist, y->list, y->nlist);
    case LM_AST_CASE:
      return ast_equal(x->operand, y->operand) && ast_equal(x->else_expr, y->else_expr) &&
             ast_list_equal(x->whens, x->nwhen, y->whens, y->nwhen) &&
             ast_list_equal(x->thens, x->nwhen, y->thens, y->nwhen);
    case LM_AST_CAST: return x->cast_type == y->cast_type && ast_equal(x->left, y->left);
    case LM_AST_FUNCTION:
      return name_eq(x->fname, y->fname) && x->distinct == y->distinct &&
             x->star == y->star && ast_list_equal(x->args, x->nargs, y->args, y->nargs);
    case LM_AST_STAR: return true;
    case LM_AST_VARIABLE: return name_eq(x->name, y->name);
  }
  return false;
}

/* A built-in aggregate's name, or a user-defined aggregate's in `funcs`
 * (NULL: built-ins only). */
static bool is_udaf_split_name(const char* f) {
  return lm_streq_nocase(f, "__udaf_partial") || lm_streq_nocase(f, "__udaf_merge");
}

static bool is_agg_name(const lm_udf_list* funcs, const char* f) {
  if (f == NULL) return false;
  if (lm_agg_find(f) != NULL || is_udaf_split_name(f)) return true;
  const lm_udf* u = funcs != NULL ? lm_udf_list_find(funcs, f) : NULL;
  return u != NULL && lm_udf_is_aggregate(u);
}

static bool is_window_fn(const char* f) {
  return f != NULL && (lm_streq_nocase(f, "tumble") || lm_streq_nocase(f, "hop") ||
                       lm_streq_nocase(f, "slide") || lm_streq_nocase(f, "session"));
}

/* Whether `e` or a node under it satisfies `pred` (1: yes; 0: look under it;
 * -1: not it, and skip what is under it). */
typedef int (*ast_pred)(const lm_ast_expr* e, const void* arg);
static bool ast_any(const lm_ast_expr* e, ast_pred pred, const void* arg) {
  if (e == NULL) return false;
  int p = pred(e, arg);
  if (p != 0) return p > 0;
  if (ast_any(e->left, pred, arg) || ast_any(e->right, pred, arg) ||
      ast_any(e->operand, pred, arg) || ast_any(e->else_expr, pred, arg)) {
    return true;
  }
  for (size_t i = 0; i < e->nlist; i++) {
    if (ast_any(e->list[i], pred, arg)) return true;
  }
  for (size_t i = 0; i < e->nwhen; i++) {
    if (ast_any(e->whens[i], pred, arg) || ast_any(e->thens[i], pred, arg)) return true;
  }
  for (size_t i = 0; i < e->nargs; i++) {
    if (ast_any(e->args[i], pred, arg)) return true;
  }
  return false;
}

static int agg_pred(const lm_ast_expr* e, const void* funcs) {
  if (e->kind == LM_AST_FUNCTION && e->over != NULL) return -1; /* analytic */
  return e->kind == LM_AST_FUNCTION && is_agg_name(funcs, e->fname);
}

static bool contains_agg(const lm_udf_list* funcs, const lm_ast_expr* e) {
  return ast_any(e, agg_pred, funcs);
}

/* ---- binding ------------------------------------------------------------------------ */

/* What a temporal filter is (errors). */
static const char temporal_shape[] =
    "a temporal filter is a WHERE condition `ts > WATERMARK() - INTERVAL '...'` (or >=) "
    "over a BIGINT or TIMESTAMP column";


static laminar_code bind(binder* b, const lm_ast_expr* a, bind_mode mode, lm_expr** out);

static laminar_code bind_join_column(binder* b, const lm_ast_expr* a, lm_expr** out);

static laminar_code bind_lat_column(binder* b, const lm_ast_expr* a, lm_expr** out);

static laminar_code bind_column_row(binder* b, const lm_ast_expr* a, lm_expr** out) {
  *out = NULL;
  if (b->lat_right != NULL) LM_TRY(bind_lat_column(b, a, out));
  if (*out != NULL) return LAMINAR_OK;
  if (b->join_right != NULL) return bind_join_column(b, a, out);
  if (a->table != NULL && !name_eq(a->table, b->input_name) &&
      !(b->input_alias != NULL && name_eq(a->table, b->input_alias))) {
    return fail(b, LAMINAR_ERR_SQL_UNKNOWN_COLUMN, a,
                "unknown table '%s' in column '%s.%s'", a->table, a->table, a->name);
  }
  int32_t idx = lm_schema_find(b->input, a->name);
  if (idx < 0) {
    laminar_code rc = fail(b, LAMINAR_ERR_SQL_UNKNOWN_COLUMN, a, "no column '%s' in '%s'",
                           a->name, b->input_name);
    lm_error_object(b->err, b->input_name, a->name);
    return rc;
  }
  lm_expr* e = new_expr(b, LM_EXPR_COLUMN, b->input->fields[idx].type);
  if (e == NULL) return NOMEM(b);
  e->column = idx;
  *out = e;
  return LAMINAR_OK;
}

static laminar_code bind_literal(binder* b, const lm_ast_expr* a, lm_expr** out) {
  lm_expr* e = new_expr(b, LM_EXPR_LITERAL, LM_TYPE_NULL);
  if (e == NULL) return NOMEM(b);
  switch (a->lit) {
    case LM_LIT_NULL: e->lit.is_null = true; break;
    case LM_LIT_BOOL:
      e->type = LM_TYPE_BOOL;
      e->lit.b = a->b;
      e->lit.i = a->b;
      break;
    case LM_LIT_INT:
    case LM_LIT_INTERVAL:
      /* Integer literals are INT when they fit, as in DuckDB; intervals are
       * BIGINT milliseconds (scaled to micros next to a TIMESTAMP). */
      e->type = (a->lit == LM_LIT_INT && a->i >= INT32_MIN && a->i <= INT32_MAX)
                    ? LM_TYPE_INT32
                    : LM_TYPE_INT64;
      e->lit.i = a->i;
      e->lit.d = (double)a->i;
      break;
    case LM_LIT_DOUBLE:
      e->type = LM_TYPE_DOUBLE;
      e->lit.d = a->d;
      break;
    case LM_LIT_STRING: {
      e->type = LM_TYPE_STRING;
      char* copy = lm_pool_copy(&b->plan->pool, a->s, a->slen);
      if (copy == NULL) return NOMEM(b);
      e->lit.s = (lm_str){copy, (int64_t)a->slen};
      break;
    }
  }
  *out = e;
  return LAMINAR_OK;
}

const char* lm_bind_op_text(lm_ast_op op) {
  switch (op) {
    case LM_OP_ADD: return "+";
    case LM_OP_SUB: return "-";
    case LM_OP_MUL: return "*";
    case LM_OP_DIV: return "/";
    case LM_OP_MOD: return "%";
    case LM_OP_EQ: return "=";
    case LM_OP_NE: return "<>";
    case LM_OP_LT: return "<";
    case LM_OP_LE: return "<=";
    case LM_OP_GT: return ">";
    case LM_OP_GE: return ">=";
    case LM_OP_AND: return "AND";
    case LM_OP_OR: return "OR";
    case LM_OP_CONCAT: return "||";
    case LM_OP_NOT: return "NOT";
    case LM_OP_NEG: return "-";
    case LM_OP_PLUS: return "+";
  }
  return "?";
}

static laminar_code make_binary(binder* b, const lm_ast_expr* at, lm_ast_op op,
                                lm_expr* l, lm_expr* r, bool l_str_lit, bool r_str_lit,
                                lm_expr** out);

/* The call xop(l, r) of result type `type`. */
static laminar_code make_call2(binder* b, lm_expr_op xop, lm_type type, lm_expr* l,
                               lm_expr* r, lm_expr** out) {
  lm_expr* e = new_call(b, xop, type, 2);
  if (e == NULL) return NOMEM(b);
  e->args[0] = l;
  e->args[1] = r;
  *out = e;
  return LAMINAR_OK;
}

static laminar_code make_compare(binder* b, const lm_ast_expr* at, lm_expr_op xop,
                                 lm_expr* l, lm_expr* r, bool l_str_lit, bool r_str_lit,
                                 lm_expr** out) {
  lm_type t = common_type(l->type, r->type, l_str_lit, r_str_lit);
  if (t == LM_TYPE_NULL && !(l->type == LM_TYPE_NULL && r->type == LM_TYPE_NULL)) {
    return fail(b, LAMINAR_ERR_TYPE_MISMATCH, at, "cannot compare %s with %s",
                lm_type_name(l->type), lm_type_name(r->type));
  }
  if (t == LM_TYPE_NULL) t = LM_TYPE_INT32;
  if (is_int32_or_less(t)) t = LM_TYPE_INT64;
  if (t == LM_TYPE_FLOAT) {
    /* each side as its REAL (DuckDB compares in REAL), widened exactly to
     * the DOUBLE the kernel compares */
    LM_TRY(coerce(b, &l, LM_TYPE_FLOAT));
    LM_TRY(coerce(b, &r, LM_TYPE_FLOAT));
    t = LM_TYPE_DOUBLE;
  }
  if (lm_type_is_decimal(t)) {
    /* each side as a DECIMAL of its own scale: the kernel compares across
     * scales exactly (no common type to overflow) */
    LM_TRY(coerce(b, &l, l->type == LM_TYPE_NULL || l_str_lit ? t : as_decimal(l->type)));
    LM_TRY(coerce(b, &r, r->type == LM_TYPE_NULL || r_str_lit ? t : as_decimal(r->type)));
  } else {
    LM_TRY(coerce(b, &l, t));
    LM_TRY(coerce(b, &r, t));
  }
  lm_expr* e = new_call(b, xop, LM_TYPE_BOOL, 2);
  if (e == NULL) return NOMEM(b);
  e->args[0] = l;
  e->args[1] = r;
  *out = e;
  return LAMINAR_OK;
}

/* l op r (+ - * %) where the operands meet as DECIMALs (types lt, rt, a NULL
 * taking the other's): DuckDB's result types. '+' '-': the larger integer part
 * plus one digit and the larger scale; '%': the same without the digit; '*':
 * the precisions and the scales add, a scale past 38 is an error, and two
 * operands of at most 18 digits stay at 18 when the scale is below 18. The
 * precision is capped at 38; values that do not fit are NULL. */
static laminar_code make_decimal_arith(binder* b, const lm_ast_expr* at, lm_ast_op op,
                                       lm_expr_op xop, lm_expr* l, lm_expr* r, lm_type lt,
                                       lm_type rt, lm_expr** out) {
  lm_type x = as_decimal(lt), y = as_decimal(rt), t;
  if (op == LM_OP_MUL) {
    int32_t p = lm_type_precision(x) + lm_type_precision(y);
    int32_t s = lm_type_scale(x) + lm_type_scale(y);
    if (s > LM_DECIMAL_MAX_PRECISION) {
      return fail(b, LAMINAR_ERR_TYPE_MISMATCH, at,
                  "%s * %s needs scale %d, past DECIMAL's 38: CAST an operand to a "
                  "smaller scale",
                  lm_type_name(x), lm_type_name(y), (int)s);
    }
    if (p > LM_DECIMAL_MAX_PRECISION64 &&
        lm_type_precision(x) <= LM_DECIMAL_MAX_PRECISION64 &&
        lm_type_precision(y) <= LM_DECIMAL_MAX_PRECISION64 &&
        s < LM_DECIMAL_MAX_PRECISION64) {
      p = LM_DECIMAL_MAX_PRECISION64;
    }
    if (p > LM_DECIMAL_MAX_PRECISION) p = LM_DECIMAL_MAX_PRECISION;
    t = lm_type_decimal(p, s);
  } else {
    t = common_decimal(x, y, op == LM_OP_MOD ? 0 : 1);
  }
  LM_TRY(coerce(b, &l, x));
  LM_TRY(coerce(b, &r, y));
  return make_call2(b, xop, t, l, r, out);
}

static laminar_code make_binary(binder* b, const lm_ast_expr* at, lm_ast_op op,
                                lm_expr* l, lm_expr* r, bool l_str_lit, bool r_str_lit,
                                lm_expr** out) {
  lm_expr_op xop;
  switch (op) {
    case LM_OP_EQ: return make_compare(b, at, LM_XOP_EQ, l, r, l_str_lit, r_str_lit, out);
    case LM_OP_NE: return make_compare(b, at, LM_XOP_NE, l, r, l_str_lit, r_str_lit, out);
    case LM_OP_LT: return make_compare(b, at, LM_XOP_LT, l, r, l_str_lit, r_str_lit, out);
    case LM_OP_LE: return make_compare(b, at, LM_XOP_LE, l, r, l_str_lit, r_str_lit, out);
    case LM_OP_GT: return make_compare(b, at, LM_XOP_GT, l, r, l_str_lit, r_str_lit, out);
    case LM_OP_GE: return make_compare(b, at, LM_XOP_GE, l, r, l_str_lit, r_str_lit, out);
    case LM_OP_AND:
    case LM_OP_OR: {
      if ((l->type != LM_TYPE_BOOL && l->type != LM_TYPE_NULL) ||
          (r->type != LM_TYPE_BOOL && r->type != LM_TYPE_NULL)) {
        return fail(b, LAMINAR_ERR_TYPE_MISMATCH, at,
                    "%s needs BOOLEAN operands, got %s and %s", lm_bind_op_text(op),
                    lm_type_name(l->type), lm_type_name(r->type));
      }
      LM_TRY(coerce(b, &l, LM_TYPE_BOOL));
      LM_TRY(coerce(b, &r, LM_TYPE_BOOL));
      xop = op == LM_OP_AND ? LM_XOP_AND : LM_XOP_OR;
      lm_expr* e = new_call(b, xop, LM_TYPE_BOOL, 2);
      if (e == NULL) return NOMEM(b);
      e->args[0] = l;
      e->args[1] = r;
      *out = e;
      return LAMINAR_OK;
    }
    case LM_OP_CONCAT: {
      /* BLOB || BLOB is a BLOB (a NULL or a string literal meets it as one),
       * as DuckDB; anything else concatenates as text */
      bool blob = (l->type == LM_TYPE_BINARY || r->type == LM_TYPE_BINARY) &&
                  (l->type == LM_TYPE_BINARY || l->type == LM_TYPE_NULL || l_str_lit) &&
                  (r->type == LM_TYPE_BINARY || r->type == LM_TYPE_NULL || r_str_lit);
      lm_type ct = blob ? LM_TYPE_BINARY : LM_TYPE_STRING;
      LM_TRY(coerce(b, &l, ct));
      LM_TRY(coerce(b, &r, ct));
      lm_expr* e = new_call(b, LM_XOP_CONCAT, ct, 2);
      if (e == NULL) return NOMEM(b);
      e->args[0] = l;
      e->args[1] = r;
      *out = e;
      return LAMINAR_OK;
    }
    case LM_OP_ADD:
    case LM_OP_SUB:
    case LM_OP_MUL:
    case LM_OP_DIV:
    case LM_OP_MOD: break;
    default: return fail(b, LAMINAR_ERR_INTERNAL, at, "unexpected operator");
  }
  xop = op == LM_OP_ADD   ? LM_XOP_ADD
        : op == LM_OP_SUB ? LM_XOP_SUB
        : op == LM_OP_MUL ? LM_XOP_MUL
        : op == LM_OP_DIV ? LM_XOP_DIV
                          : LM_XOP_MOD;
  /* TIMESTAMP +/- an integer (an INTERVAL, scaled to micros by the caller). */
  bool int_l = l->type == LM_TYPE_INT64 || is_int32_or_less(l->type);
  bool int_r = r->type == LM_TYPE_INT64 || is_int32_or_less(r->type);
  bool add_sub = op == LM_OP_ADD || op == LM_OP_SUB;
  if (add_sub && l->type == LM_TYPE_TIMESTAMP && int_r) {
    LM_TRY(coerce(b, &r, LM_TYPE_INT64));
    return make_call2(b, xop, LM_TYPE_TIMESTAMP, l, r, out);
  }
  /* DATE +/- an integer number of days is a DATE, INT + DATE too, and DATE -
   * DATE the BIGINT number of days between them, as in DuckDB. */
  if ((add_sub && l->type == LM_TYPE_DATE && int_r) ||
      (op == LM_OP_ADD && int_l && r->type == LM_TYPE_DATE)) {
    return make_call2(b, xop, LM_TYPE_DATE, l, r, out);
  }
  if (op == LM_OP_SUB && l->type == r->type &&
      (l->type == LM_TYPE_TIMESTAMP || l->type == LM_TYPE_DATE)) {
    return make_call2(b, xop, LM_TYPE_INT64, l, r, out);
  }
  lm_type lt = l->type == LM_TYPE_NULL ? r->type : l->type;
  lm_type rt = r->type == LM_TYPE_NULL ? l->type : r->type;
  if (lt == LM_TYPE_NULL) lt = rt = LM_TYPE_INT64;
  if (!is_numeric(lt) || !is_numeric(rt)) {
    return fail(b, LAMINAR_ERR_TYPE_MISMATCH, at, "cannot apply '%s' to %s and %s",
                lm_bind_op_text(op), lm_type_name(l->type), lm_type_name(r->type));
  }
  if (op != LM_OP_DIV && meets_as_decimal(lt, rt)) {
    return make_decimal_arith(b, at, op, xop, l, r, lt, rt, out);
  }
  /* As DuckDB: '/' of integers is DOUBLE; INT op INT stays INT (and overflows
   * at 32 bits); REAL op REAL (or an integer or DECIMAL) is REAL. */
  lm_type ft = float_of(lt, rt);
  lm_type t = ft != LM_TYPE_NULL                               ? ft
              : op == LM_OP_DIV                                ? LM_TYPE_DOUBLE
              : (is_int32_or_less(lt) && is_int32_or_less(rt)) ? LM_TYPE_INT32
                                                               : LM_TYPE_INT64;
  LM_TRY(coerce(b, &l, t));
  LM_TRY(coerce(b, &r, t));
  return make_call2(b, xop, t, l, r, out);
}

static laminar_code make_not(binder* b, lm_expr* inner, lm_expr** out) {
  lm_expr* e = new_call(b, LM_XOP_NOT, LM_TYPE_BOOL, 1);
  if (e == NULL) return NOMEM(b);
  e->args[0] = inner;
  *out = e;
  return LAMINAR_OK;
}

/* A value of type t held in state as one 64-bit word: every type but a
 * DECIMAL of more than 18 digits (LDB-2001 for that, naming what refused it). */
static laminar_code check_narrow_decimal(binder* b, const lm_ast_expr* at,
                                         const char* what, lm_type t) {
  if (!lm_type_is_wide(t)) return LAMINAR_OK;
  return fail(b, LAMINAR_ERR_TYPE_MISMATCH, at,
              "%s of %s is not supported: a DECIMAL kept in state has at most 18 digits "
              "(CAST it to DECIMAL(18,%d))",
              what, lm_type_name(t), (int)lm_type_scale(t));
}

/* A moment aggregate's argument: a number (or NULL), as DOUBLE. */
static laminar_code bind_moment_arg(binder* b, const lm_ast_expr* a, const char* f,
                                    const lm_ast_expr* arg, lm_expr** out) {
  if (contains_agg(b->funcs, arg)) {
    return fail(b, LAMINAR_ERR_SQL_GROUPING, arg, "aggregate calls cannot be nested");
  }
  LM_TRY(bind(b, arg, MODE_ROW, out));
  if (!is_numeric((*out)->type) && (*out)->type != LM_TYPE_NULL) {
    return fail(b, LAMINAR_ERR_TYPE_MISMATCH, a, "%s() needs a number, got %s", f,
                lm_type_name((*out)->type));
  }
  return coerce(b, out, LM_TYPE_DOUBLE);
}

/* A call of a user-defined aggregate (laminar_aggregate_register): its
 * arguments typed and cast as a scalar function's; the plan holds a
 * reference to the function. */
static laminar_code bind_udaf(binder* b, const lm_ast_expr* a, lm_udf* f,
                              lm_agg_spec* spec) {
  if (a->star) {
    return fail(b, LAMINAR_ERR_SQL_FUNCTION_ARGS, a,
                "%s(*) is not valid: name its arguments", lm_udf_name(f));
  }
  int32_t given = (int32_t)a->nargs;
  int32_t nb = given < 2 ? given : 2; /* more: lm_udf_bind reports the count */
  lm_expr* args[2] = {NULL, NULL};
  lm_type want[2];
  for (int32_t i = 0; i < nb; i++) {
    if (contains_agg(b->funcs, a->args[i])) {
      return fail(b, LAMINAR_ERR_SQL_GROUPING, a->args[i],
                  "aggregate calls cannot be nested");
    }
    LM_TRY(bind(b, a->args[i], MODE_ROW, &args[i]));
  }
  lm_func_binding fb;
  laminar_code rc = lm_udf_bind(f, (const lm_expr* const*)args, given, want, &fb);
  if (rc != LAMINAR_OK) {
    return fail(b, rc, fb.bad_arg >= 0 ? a->args[fb.bad_arg] : a, "%s", fb.message);
  }
  for (int32_t i = 0; i < nb; i++) LM_TRY(coerce(b, &args[i], want[i]));
  if (!lm_udf_list_has(&b->plan->udfs, f) &&
      lm_udf_list_add(&b->plan->udfs, f, false) != LAMINAR_OK)
    return NOMEM(b);
  spec->fn = LM_AGG_UDAF;
  spec->arg = args[0];
  spec->order = args[1];
  spec->result_type = fb.result;
  spec->udaf = f;
  return LAMINAR_OK;
}

/* __udaf_partial('f', args...) and __udaf_merge('f', state): the two halves
 * of user-defined aggregate f's call that laminar_stream_two_phase writes
 * (lm_udaf_mode): the first typed as f(args...) is, giving its serialized
 * state (LM_UDAF_STATE_TYPE); the second merging such states and giving f's
 * result. */
static laminar_code bind_udaf_split(binder* b, const lm_ast_expr* a, lm_agg_spec* spec) {
  bool partial = lm_streq_nocase(a->fname, "__udaf_partial");
  const lm_ast_expr* nm = a->nargs > 0 ? a->args[0] : NULL;
  if (a->star || nm == NULL || nm->kind != LM_AST_LITERAL || nm->lit != LM_LIT_STRING ||
      a->nargs < 2 || (!partial && a->nargs != 2)) {
    return fail(b, LAMINAR_ERR_SQL_FUNCTION_ARGS, a,
                "%s() takes an aggregate function's name (a string literal) and %s",
                a->fname, partial ? "its arguments" : "one partial state");
  }
  char name[256];
  snprintf(name, sizeof name, "%.*s", (int)nm->slen, nm->s);
  lm_udf* f = b->funcs != NULL ? lm_udf_list_find(b->funcs, name) : NULL;
  if (f == NULL || !lm_udf_is_aggregate(f)) {
    return fail(b, LAMINAR_ERR_SQL_UNKNOWN_FUNCTION, nm,
                "%s(): no user-defined aggregate function named '%s'", a->fname, name);
  }
  if (partial) {
    lm_ast_expr call = *a;
    call.fname = lm_udf_name(f);
    call.args = a->args + 1;
    call.nargs = a->nargs - 1;
    LM_TRY(bind_udaf(b, &call, f, spec));
    spec->udaf_mode = LM_UDAF_PARTIAL;
    spec->result_type = LM_UDAF_STATE_TYPE;
    return LAMINAR_OK;
  }
  if (contains_agg(b->funcs, a->args[1])) {
    return fail(b, LAMINAR_ERR_SQL_GROUPING, a->args[1],
                "aggregate calls cannot be nested");
  }
  lm_expr* state;
  LM_TRY(bind(b, a->args[1], MODE_ROW, &state));
  if (state->type != LM_UDAF_STATE_TYPE) {
    return fail(b, LAMINAR_ERR_TYPE_MISMATCH, a->args[1],
                "__udaf_merge(): a partial state is %s, got %s",
                lm_type_name(LM_UDAF_STATE_TYPE), lm_type_name(state->type));
  }
  if (!lm_udf_list_has(&b->plan->udfs, f) &&
      lm_udf_list_add(&b->plan->udfs, f, false) != LAMINAR_OK)
    return NOMEM(b);
  spec->fn = LM_AGG_UDAF;
  spec->arg = state;
  spec->result_type = lm_udf_result_type(f);
  spec->udaf = f;
  spec->udaf_mode = LM_UDAF_MERGE;
  return LAMINAR_OK;
}

/* The fraction q of quantile_cont / quantile_disc / approx_quantile: a
 * number literal in [0, 1]. */
static laminar_code bind_quantile_fraction(binder* b, const char* f, const lm_ast_expr* q,
                                           double* out) {
  bool number =
      q->kind == LM_AST_LITERAL && (q->lit == LM_LIT_INT || q->lit == LM_LIT_DOUBLE);
  double v = !number ? 0.0 : q->lit == LM_LIT_INT ? (double)q->i : q->d;
  if (!number || !(v >= 0.0 && v <= 1.0)) {
    return fail(b, LAMINAR_ERR_SQL_FUNCTION_ARGS, q,
                "%s(x, q): q must be a number literal between 0 and 1", f);
  }
  *out = v;
  return LAMINAR_OK;
}

/* median / quantile_cont / quantile_disc / approx_quantile(x, q) and
 * approx_count_distinct(x): the argument x and the fraction into spec. */
static laminar_code bind_order_stat(binder* b, const lm_ast_expr* a,
                                    const lm_agg_def* def, lm_agg_spec* spec) {
  const char* f = a->fname;
  if (a->star || a->nargs != (size_t)def->nargs) {
    return fail(b, LAMINAR_ERR_SQL_FUNCTION_ARGS, a, "%s() takes exactly %s", f,
                def->nargs == 1 ? "one argument" : "two arguments (x, q)");
  }
  if (contains_agg(b->funcs, a->args[0])) {
    return fail(b, LAMINAR_ERR_SQL_GROUPING, a->args[0],
                "aggregate calls cannot be nested");
  }
  lm_expr* arg;
  LM_TRY(bind(b, a->args[0], MODE_ROW, &arg));
  if (def->nargs == 2) LM_TRY(bind_quantile_fraction(b, f, a->args[1], &spec->param));
  lm_type at = arg->type;
  spec->fn = def->fn;
  if (def->fn == LM_AGG_APPROX_COUNT_DISTINCT) {
    if (at == LM_TYPE_NULL) LM_TRY(coerce(b, &arg, LM_TYPE_INT32));
    LM_TRY(check_narrow_decimal(b, a, f, at));
    spec->result_type = LM_TYPE_INT64;
  } else if (def->fn == LM_AGG_QUANTILE_DISC) {
    /* a value of the argument's own type (any type: strings in byte order) */
    if (at == LM_TYPE_NULL) LM_TRY(coerce(b, &arg, LM_TYPE_INT32));
    LM_TRY(check_narrow_decimal(b, a, f, at));
    spec->result_type = arg->type;
  } else {
    /* median, quantile_cont and approx_quantile interpolate or bucket: numbers */
    if (!is_numeric(at) && at != LM_TYPE_NULL) {
      return fail(b, LAMINAR_ERR_TYPE_MISMATCH, a, "%s() needs a number, got %s", f,
                  lm_type_name(at));
    }
    if (def->fn == LM_AGG_APPROX_QUANTILE || at == LM_TYPE_NULL || lm_type_is_decimal(at))
      LM_TRY(coerce(b, &arg, LM_TYPE_DOUBLE));
    spec->result_type = LM_TYPE_DOUBLE;
  }
  spec->arg = arg;
  return LAMINAR_OK;
}

/* string_agg(x [, sep]) (group_concat, listagg): x a VARCHAR, sep a string
 * literal (default ','), as DuckDB. */
static laminar_code bind_string_agg(binder* b, const lm_ast_expr* a, lm_agg_spec* spec) {
  const char* f = a->fname;
  if (a->star || a->nargs < 1 || a->nargs > 2) {
    return fail(b, LAMINAR_ERR_SQL_FUNCTION_ARGS, a,
                "%s() takes one or two arguments (x [, separator])", f);
  }
  if (contains_agg(b->funcs, a->args[0])) {
    return fail(b, LAMINAR_ERR_SQL_GROUPING, a->args[0],
                "aggregate calls cannot be nested");
  }
  lm_expr* arg;
  LM_TRY(bind(b, a->args[0], MODE_ROW, &arg));
  if (arg->type != LM_TYPE_STRING && arg->type != LM_TYPE_NULL) {
    return fail(b, LAMINAR_ERR_TYPE_MISMATCH, a->args[0],
                "%s() needs a VARCHAR, got %s (CAST it to VARCHAR)", f,
                lm_type_name(arg->type));
  }
  LM_TRY(coerce(b, &arg, LM_TYPE_STRING));
  spec->sep = (lm_str){",", 1};
  if (a->nargs == 2) {
    const lm_ast_expr* s = a->args[1];
    if (s->kind != LM_AST_LITERAL || s->lit != LM_LIT_STRING) {
      return fail(b, LAMINAR_ERR_SQL_FUNCTION_ARGS, s,
                  "%s(x, separator): the separator must be a string literal", f);
    }
    char* sep = lm_pool_copy(&b->plan->pool, s->s, s->slen);
    if (sep == NULL && s->slen > 0) return NOMEM(b);
    spec->sep = (lm_str){sep, (int64_t)s->slen};
  }
  spec->fn = LM_AGG_STRING_AGG;
  spec->arg = arg;
  spec->result_type = LM_TYPE_STRING;
  return LAMINAR_OK;
}

/* An aggregate call in MODE_POST: register it (deduplicated) and reference its
 * output column. */
static laminar_code bind_agg_ref(binder* b, const lm_ast_expr* a, lm_expr** out) {
  int32_t idx = -1;
  for (int32_t i = 0; i < b->naggs; i++) {
    if (ast_equal(b->agg_calls[i], a)) {
      idx = i;
      break;
    }
  }
  if (idx < 0) {
    if (a->distinct && !lm_streq_nocase(a->fname, "count")) {
      return fail(b, LAMINAR_ERR_SQL_UNSUPPORTED, a,
                  "%s(DISTINCT ...) is not supported yet (COUNT(DISTINCT x) is)",
                  a->fname);
    }
    lm_agg_spec spec = {0};
    const char* f = a->fname;
    const lm_agg_def* def = lm_agg_find(f);
    lm_udf* uf = def == NULL && b->funcs != NULL ? lm_udf_list_find(b->funcs, f) : NULL;
    if (uf != NULL && lm_udf_is_aggregate(uf)) {
      LM_TRY(bind_udaf(b, a, uf, &spec));
    } else if (is_udaf_split_name(f)) {
      LM_TRY(bind_udaf_split(b, a, &spec));
    } else if (lm_streq_nocase(f, "count") && (a->star || a->nargs == 0)) {
      spec.fn = LM_AGG_COUNT_STAR;
      spec.result_type = LM_TYPE_INT64;
    } else if (def != NULL && lm_agg_is_moments(def->fn)) {
      if (a->star || a->nargs != (size_t)def->nargs) {
        return fail(b, LAMINAR_ERR_SQL_FUNCTION_ARGS, a, "%s() takes exactly %s", f,
                    def->nargs == 1 ? "one argument" : "two arguments (y, x)");
      }
      lm_expr* arg;
      LM_TRY(bind_moment_arg(b, a, f, a->args[0], &arg));
      if (def->nargs == 2) {
        lm_expr* x;
        LM_TRY(bind_moment_arg(b, a, f, a->args[1], &x));
        /* __m2(mean, n): n counts, a BIGINT */
        if (def->fn == LM_AGG_M2) LM_TRY(coerce(b, &x, LM_TYPE_INT64));
        spec.order = x;
      }
      spec.fn = def->fn;
      spec.arg = arg;
      spec.result_type = def->fn == LM_AGG_REGR_COUNT ? LM_TYPE_INT64 : LM_TYPE_DOUBLE;
    } else if (def != NULL &&
               (lm_agg_is_quantile(def->fn) || def->fn == LM_AGG_APPROX_COUNT_DISTINCT)) {
      LM_TRY(bind_order_stat(b, a, def, &spec));
    } else if (def != NULL && def->fn == LM_AGG_STRING_AGG) {
      LM_TRY(bind_string_agg(b, a, &spec));
    } else if (def != NULL && (def->fn == LM_AGG_ARG_MIN || def->fn == LM_AGG_ARG_MAX)) {
      if (a->star || a->nargs != 2) {
        return fail(b, LAMINAR_ERR_SQL_FUNCTION_ARGS, a,
                    "%s() takes exactly two arguments (x, by)", f);
      }
      lm_expr* args[2];
      for (int i = 0; i < 2; i++) {
        if (contains_agg(b->funcs, a->args[i])) {
          return fail(b, LAMINAR_ERR_SQL_GROUPING, a->args[i],
                      "aggregate calls cannot be nested");
        }
        LM_TRY(bind(b, a->args[i], MODE_ROW, &args[i]));
        if (args[i]->type == LM_TYPE_NULL) LM_TRY(coerce(b, &args[i], LM_TYPE_INT32));
        LM_TRY(check_narrow_decimal(b, a, f, args[i]->type));
      }
      spec.fn = def->fn;
      spec.arg = args[0];
      spec.order = args[1];
      spec.result_type = args[0]->type;
    } else {
      if (a->nargs != 1 || a->star) {
        return fail(b, LAMINAR_ERR_SQL_SYNTAX, a, "%s() takes exactly one argument", f);
      }
      if (contains_agg(b->funcs, a->args[0])) {
        return fail(b, LAMINAR_ERR_SQL_GROUPING, a->args[0],
                    "aggregate calls cannot be nested");
      }
      lm_expr* arg;
      LM_TRY(bind(b, a->args[0], MODE_ROW, &arg));
      lm_type at = arg->type;
      if (lm_streq_nocase(f, "count")) {
        spec.fn = a->distinct ? LM_AGG_COUNT_DISTINCT : LM_AGG_COUNT;
        spec.result_type = LM_TYPE_INT64;
        if (a->distinct && at == LM_TYPE_NULL) LM_TRY(coerce(b, &arg, LM_TYPE_INT32));
        if (a->distinct) LM_TRY(check_narrow_decimal(b, a, f, at));
      } else if (lm_streq_nocase(f, "first") || lm_streq_nocase(f, "first_value") ||
                 lm_streq_nocase(f, "last") || lm_streq_nocase(f, "last_value")) {
        if (at == LM_TYPE_NULL) LM_TRY(coerce(b, &arg, LM_TYPE_INT32));
        LM_TRY(check_narrow_decimal(b, a, f, at));
        spec.fn = (f[0] == 'f' || f[0] == 'F') ? LM_AGG_FIRST : LM_AGG_LAST;
        spec.result_type = arg->type;
        /* By event time: the window's time column (arrival order without one). */
        if (!b->plan->window.global) {
          lm_expr* t = new_expr(b, LM_EXPR_COLUMN, b->plan->window.time_type);
          if (t == NULL) return NOMEM(b);
          t->column = b->plan->window.time_col;
          spec.order = t;
        }
      } else if (lm_streq_nocase(f, "sum") || lm_streq_nocase(f, "avg")) {
        bool avg = lm_streq_nocase(f, "avg");
        if (!is_numeric(at) && at != LM_TYPE_NULL) {
          return fail(b, LAMINAR_ERR_TYPE_MISMATCH, a, "%s() needs a number, got %s",
                      avg ? "avg" : "sum", lm_type_name(at));
        }
        /* SUM / AVG of a REAL are DOUBLE, as DuckDB */
        lm_type in = at == LM_TYPE_DOUBLE || lm_type_is_decimal(at) ? at
                     : at == LM_TYPE_FLOAT                          ? LM_TYPE_DOUBLE
                                                                    : LM_TYPE_INT64;
        LM_TRY(coerce(b, &arg, in));
        spec.fn = avg ? LM_AGG_AVG : LM_AGG_SUM;
        /* SUM of DECIMAL(p, s) is DECIMAL(38, s), AVG a DOUBLE, as DuckDB */
        spec.result_type = avg ? LM_TYPE_DOUBLE
                           : lm_type_is_decimal(in)
                               ? lm_type_decimal(38, lm_type_scale(in))
                               : in;
      } else if (lm_streq_nocase(f, "bool_and") || lm_streq_nocase(f, "bool_or")) {
        /* MIN / MAX of a BOOLEAN (false < true) */
        if (at != LM_TYPE_BOOL && at != LM_TYPE_NULL) {
          return fail(b, LAMINAR_ERR_TYPE_MISMATCH, a, "%s() needs a BOOLEAN, got %s", f,
                      lm_type_name(at));
        }
        LM_TRY(coerce(b, &arg, LM_TYPE_BOOL));
        spec.fn = def->fn;
        spec.result_type = LM_TYPE_BOOL;
      } else {
        if (at == LM_TYPE_NULL) LM_TRY(coerce(b, &arg, LM_TYPE_INT32));
        LM_TRY(check_narrow_decimal(b, a, f, at));
        spec.fn = lm_streq_nocase(f, "min") ? LM_AGG_MIN : LM_AGG_MAX;
        spec.result_type = arg->type;
      }
      spec.arg = arg;
    }
    if (b->naggs == b->cap_aggs) {
      int32_t ncap = b->cap_aggs ? b->cap_aggs * 2 : 8;
      lm_agg_spec* na = lm_pool_alloc(&b->plan->pool, sizeof(lm_agg_spec) * (size_t)ncap);
      const lm_ast_expr** nc =
          lm_pool_alloc(&b->plan->pool, sizeof(void*) * (size_t)ncap);
      if (na == NULL || nc == NULL) return NOMEM(b);
      if (b->naggs) {
        memcpy(na, b->aggs, sizeof(lm_agg_spec) * (size_t)b->naggs);
        memcpy(nc, b->agg_calls, sizeof(void*) * (size_t)b->naggs);
      }
      b->aggs = na;
      b->agg_calls = nc;
      b->cap_aggs = ncap;
    }
    idx = b->naggs++;
    b->aggs[idx] = spec;
    b->agg_calls[idx] = a;
  }
  lm_expr* e = new_expr(b, LM_EXPR_COLUMN, b->aggs[idx].result_type);
  if (e == NULL) return NOMEM(b);
  e->column = 2 + b->nkeys + idx;
  *out = e;
  return LAMINAR_OK;
}

/* A call of registry function `f` over argv[0..nargs) (the AST node `a` is
 * where errors point unless one argument is at fault). */
static laminar_code bind_func(binder* b, const lm_ast_expr* a, const lm_func_def* f,
                              lm_ast_expr* const* argv, size_t nargs, bind_mode mode,
                              lm_expr** out) {
  if (a->star || a->distinct) {
    return fail(b, LAMINAR_ERR_SQL_FUNCTION_ARGS, a,
                "%s(%s) is only valid for aggregates", lm_func_name(f),
                a->star ? "*" : "DISTINCT ...");
  }
  lm_expr* e = new_call(b, LM_XOP_FUNC, LM_TYPE_NULL, (int32_t)nargs);
  lm_type* want = lm_pool_alloc(&b->plan->pool, sizeof(lm_type) * (nargs ? nargs : 1));
  if (e == NULL || want == NULL) return NOMEM(b);
  for (size_t i = 0; i < nargs; i++) LM_TRY(bind(b, argv[i], mode, &e->args[i]));
  lm_func_binding fb;
  laminar_code rc =
      lm_func_bind(f, (const lm_expr* const*)e->args, (int32_t)nargs, want, &fb);
  if (rc != LAMINAR_OK) {
    return fail(b, rc, fb.bad_arg >= 0 ? argv[fb.bad_arg] : a, "%s", fb.message);
  }
  for (size_t i = 0; i < nargs; i++) LM_TRY(coerce(b, &e->args[i], want[i]));
  e->type = fb.result;
  e->fn = fb.fn;
  e->fn_arg = fb.fn_arg;
  *out = e;
  return LAMINAR_OK;
}

/* A call of a user-defined function (laminar_function_register): typed as a
 * built-in's; the plan holds a reference to the function. */
static laminar_code bind_udf(binder* b, const lm_ast_expr* a, bind_mode mode,
                             lm_expr** out) {
  lm_udf* f = b->funcs != NULL ? lm_udf_list_find(b->funcs, a->fname) : NULL;
  if (f == NULL &&
      (lm_streq_nocase(a->fname, "list") || lm_streq_nocase(a->fname, "array_agg"))) {
    return fail(b, LAMINAR_ERR_SQL_UNSUPPORTED, a,
                "%s() builds a LIST value, and LaminarDB has no LIST type yet "
                "(COUNT(DISTINCT x), approx_count_distinct(x) and FIRST/LAST cover "
                "common uses)",
                a->fname);
  }
  if (f == NULL && lm_streq_nocase(a->fname, "watermark")) {
    return fail(b, LAMINAR_ERR_SQL_UNSUPPORTED, a,
                "WATERMARK() is allowed only in a temporal filter: %s", temporal_shape);
  }
  if (f == NULL) {
    return fail(b, LAMINAR_ERR_SQL_UNKNOWN_FUNCTION, a,
                "unknown function '%s' (a user-defined function must be registered "
                "before a statement that calls it is run or recovered)",
                a->fname);
  }
  if (lm_udf_is_table(f)) {
    return fail(b, LAMINAR_ERR_SQL_UNKNOWN_FUNCTION, a,
                "'%s' is a table function: call it in FROM (FROM s, %s(s.x) or FROM s "
                "CROSS JOIN LATERAL %s(s.x))",
                lm_udf_name(f), lm_udf_name(f), lm_udf_name(f));
  }
  if (a->star || a->distinct) {
    return fail(b, LAMINAR_ERR_SQL_FUNCTION_ARGS, a,
                "%s(%s) is only valid for aggregates", lm_udf_name(f),
                a->star ? "*" : "DISTINCT ...");
  }
  size_t nargs = a->nargs;
  lm_expr* e = new_call(b, LM_XOP_FUNC, LM_TYPE_NULL, (int32_t)nargs);
  lm_type* want = lm_pool_alloc(&b->plan->pool, sizeof(lm_type) * (nargs ? nargs : 1));
  if (e == NULL || want == NULL) return NOMEM(b);
  for (size_t i = 0; i < nargs; i++) LM_TRY(bind(b, a->args[i], mode, &e->args[i]));
  lm_func_binding fb;
  laminar_code rc =
      lm_udf_bind(f, (const lm_expr* const*)e->args, (int32_t)nargs, want, &fb);
  if (rc != LAMINAR_OK) {
    return fail(b, rc, fb.bad_arg >= 0 ? a->args[fb.bad_arg] : a, "%s", fb.message);
  }
  for (size_t i = 0; i < nargs; i++) LM_TRY(coerce(b, &e->args[i], want[i]));
  if (!lm_udf_list_has(&b->plan->udfs, f) &&
      lm_udf_list_add(&b->plan->udfs, f, false) != LAMINAR_OK)
    return NOMEM(b);
  e->type = fb.result;
  e->fn = LM_FN_UDF;
  e->udf = f;
  *out = e;
  return LAMINAR_OK;
}

/* s [NOT] LIKE | ILIKE pattern [ESCAPE c]: the escape, if any, is list[0]. */
static laminar_code bind_like(binder* b, const lm_ast_expr* a, bind_mode mode,
                              lm_expr** out) {
  lm_ast_expr* argv[3] = {a->left, a->right, a->nlist == 1 ? a->list[0] : NULL};
  const lm_func_def* f = lm_func_by_id(a->ilike ? LM_FN_ILIKE : LM_FN_LIKE);
  lm_expr* e;
  LM_TRY(bind_func(b, a, f, argv, a->nlist == 1 ? 3 : 2, mode, &e));
  if (a->negated) return make_not(b, e, out);
  *out = e;
  return LAMINAR_OK;
}

/* NULLIF(x, y) = CASE WHEN x = y THEN NULL ELSE x END, of x's type (DuckDB). */
static laminar_code bind_nullif(binder* b, const lm_ast_expr* a, bind_mode mode,
                                lm_expr** out) {
  if (a->nargs != 2 || a->star || a->distinct) {
    return fail(b, LAMINAR_ERR_SQL_FUNCTION_ARGS, a,
                "nullif() takes 2 arguments, got %d (usage: nullif(value, other))",
                (int)a->nargs);
  }
  lm_expr *x1, *x2, *y, *eq;
  LM_TRY(bind(b, a->args[0], mode, &x1));
  LM_TRY(bind(b, a->args[0], mode, &x2));
  LM_TRY(bind(b, a->args[1], mode, &y));
  if (x1->type == LM_TYPE_NULL) {
    LM_TRY(coerce(b, &x1, LM_TYPE_INT32));
    LM_TRY(coerce(b, &x2, LM_TYPE_INT32));
  }
  LM_TRY(make_compare(b, a, LM_XOP_EQ, x1, y, is_str_lit(a->args[0]),
                      is_str_lit(a->args[1]), &eq));
  lm_expr* null_lit = new_expr(b, LM_EXPR_LITERAL, x2->type);
  lm_expr* e = new_call(b, LM_XOP_CASE, x2->type, 3);
  if (null_lit == NULL || e == NULL) return NOMEM(b);
  null_lit->lit.is_null = true;
  e->has_else = true;
  e->args[0] = eq;
  e->args[1] = null_lit;
  e->args[2] = x2;
  *out = e;
  return LAMINAR_OK;
}

static lm_type window_bound_type(const binder* b) {
  return b->plan->window.time_type == LM_TYPE_TIMESTAMP ? LM_TYPE_TIMESTAMP
                                                        : LM_TYPE_INT64;
}

static laminar_code bind_analytic_ref(binder* b, const lm_ast_expr* a, lm_expr** out);

static laminar_code bind(binder* b, const lm_ast_expr* a, bind_mode mode, lm_expr** out) {
  if (a->kind == LM_AST_FUNCTION && a->over != NULL) return bind_analytic_ref(b, a, out);
  if (mode == MODE_POST) {
    /* A GROUP BY key used as a whole refers to the key column. */
    for (int32_t i = 0; i < b->nkeys; i++) {
      if (ast_equal(b->keys[i], a)) {
        lm_expr* e = new_expr(b, LM_EXPR_COLUMN, b->plan->agg_schema.fields[2 + i].type);
        if (e == NULL) return NOMEM(b);
        e->column = 2 + i;
        *out = e;
        return LAMINAR_OK;
      }
    }
    if (a->kind == LM_AST_FUNCTION && is_agg_name(b->funcs, a->fname))
      return bind_agg_ref(b, a, out);
    if (a->kind == LM_AST_COLUMN && a->table == NULL &&
        (lm_streq_nocase(a->name, "window_start") ||
         lm_streq_nocase(a->name, "window_end"))) {
      if (b->plan->window.global) {
        return fail(b, LAMINAR_ERR_SQL_GROUPING, a,
                    "%s needs a window in GROUP BY (tumble, hop or slide)", a->name);
      }
      lm_expr* e = new_expr(b, LM_EXPR_COLUMN, window_bound_type(b));
      if (e == NULL) return NOMEM(b);
      e->column = lm_streq_nocase(a->name, "window_start") ? 0 : 1;
      *out = e;
      return LAMINAR_OK;
    }
    if (a->kind == LM_AST_COLUMN) {
      if (lm_schema_find(b->input, a->name) < 0) {
        laminar_code rc = fail(b, LAMINAR_ERR_SQL_UNKNOWN_COLUMN, a,
                               "no column '%s' in '%s'", a->name, b->input_name);
        lm_error_object(b->err, b->input_name, a->name);
        return rc;
      }
      laminar_code rc =
          fail(b, LAMINAR_ERR_SQL_GROUPING, a,
               "column '%s' must appear in GROUP BY or be used in an aggregate", a->name);
      lm_error_object(b->err, b->input_name, a->name);
      return rc;
    }
  } else if (a->kind == LM_AST_FUNCTION && is_agg_name(b->funcs, a->fname)) {
    return fail(b, LAMINAR_ERR_SQL_GROUPING, a, "aggregate %s() is not allowed here",
                a->fname);
  }

  switch (a->kind) {
    case LM_AST_LITERAL: return bind_literal(b, a, out);
    case LM_AST_COLUMN: return bind_column_row(b, a, out);
    case LM_AST_STAR:
      return fail(b, LAMINAR_ERR_SQL_SYNTAX, a, "'*' is not allowed here");
    case LM_AST_VARIABLE:
      return fail(b, LAMINAR_ERR_SQL_UNSUPPORTED, a,
                  "${%s} substitution is not supported yet", a->name);
    case LM_AST_LIKE: return bind_like(b, a, mode, out);
    case LM_AST_UNARY: {
      lm_expr* x;
      LM_TRY(bind(b, a->left, mode, &x));
      if (a->op == LM_OP_NOT) {
        if (x->type != LM_TYPE_BOOL && x->type != LM_TYPE_NULL) {
          return fail(b, LAMINAR_ERR_TYPE_MISMATCH, a, "NOT needs a BOOLEAN, got %s",
                      lm_type_name(x->type));
        }
        LM_TRY(coerce(b, &x, LM_TYPE_BOOL));
        return make_not(b, x, out);
      }
      if (!is_numeric(x->type) && x->type != LM_TYPE_NULL) {
        return fail(b, LAMINAR_ERR_TYPE_MISMATCH, a, "unary '%s' needs a number, got %s",
                    lm_bind_op_text(a->op), lm_type_name(x->type));
      }
      if (a->op == LM_OP_PLUS) {
        *out = x;
        return LAMINAR_OK;
      }
      lm_type t = x->type == LM_TYPE_DOUBLE || x->type == LM_TYPE_FLOAT ||
                          lm_type_is_decimal(x->type)
                      ? x->type
                  : is_int32_or_less(x->type) ? LM_TYPE_INT32
                                              : LM_TYPE_INT64;
      LM_TRY(coerce(b, &x, t));
      lm_expr* e = new_call(b, LM_XOP_NEG, t, 1);
      if (e == NULL) return NOMEM(b);
      e->args[0] = x;
      *out = e;
      return LAMINAR_OK;
    }
    case LM_AST_BINARY: {
      lm_expr *l, *r;
      LM_TRY(bind(b, a->left, mode, &l));
      LM_TRY(bind(b, a->right, mode, &r));
      /* DATE +/- INTERVAL is the TIMESTAMP of its midnight moved, as in DuckDB. */
      if (a->right->kind == LM_AST_LITERAL && a->right->lit == LM_LIT_INTERVAL &&
          l->type == LM_TYPE_DATE) {
        LM_TRY(coerce(b, &l, LM_TYPE_TIMESTAMP));
      }
      if (a->left->kind == LM_AST_LITERAL && a->left->lit == LM_LIT_INTERVAL &&
          r->type == LM_TYPE_DATE) {
        LM_TRY(coerce(b, &r, LM_TYPE_TIMESTAMP));
      }
      /* INTERVAL next to a TIMESTAMP counts microseconds. */
      if (a->right->kind == LM_AST_LITERAL && a->right->lit == LM_LIT_INTERVAL &&
          l->type == LM_TYPE_TIMESTAMP) {
        r->lit.i *= 1000;
      }
      if (a->left->kind == LM_AST_LITERAL && a->left->lit == LM_LIT_INTERVAL &&
          r->type == LM_TYPE_TIMESTAMP) {
        l->lit.i *= 1000;
        if (a->op == LM_OP_ADD) { /* INTERVAL + ts == ts + INTERVAL */
          lm_expr* t = l;
          l = r;
          r = t;
        }
      }
      return make_binary(b, a, a->op, l, r, is_str_lit(a->left), is_str_lit(a->right),
                         out);
    }
    case LM_AST_IS_NULL: {
      lm_expr* x;
      LM_TRY(bind(b, a->left, mode, &x));
      if (x->type == LM_TYPE_NULL) LM_TRY(coerce(b, &x, LM_TYPE_INT32));
      lm_expr* e =
          new_call(b, a->negated ? LM_XOP_IS_NOT_NULL : LM_XOP_IS_NULL, LM_TYPE_BOOL, 1);
      if (e == NULL) return NOMEM(b);
      e->args[0] = x;
      *out = e;
      return LAMINAR_OK;
    }
    case LM_AST_BETWEEN: {
      /* x BETWEEN lo AND hi == x >= lo AND x <= hi (x bound twice). */
      lm_expr *x1, *x2, *lo, *hi, *ge, *le, *both;
      LM_TRY(bind(b, a->left, mode, &x1));
      LM_TRY(bind(b, a->left, mode, &x2));
      LM_TRY(bind(b, a->list[0], mode, &lo));
      LM_TRY(bind(b, a->list[1], mode, &hi));
      LM_TRY(make_compare(b, a, LM_XOP_GE, x1, lo, is_str_lit(a->left),
                          is_str_lit(a->list[0]), &ge));
      LM_TRY(make_compare(b, a, LM_XOP_LE, x2, hi, is_str_lit(a->left),
                          is_str_lit(a->list[1]), &le));
      LM_TRY(make_binary(b, a, LM_OP_AND, ge, le, false, false, &both));
      if (a->negated) return make_not(b, both, out);
      *out = both;
      return LAMINAR_OK;
    }
    case LM_AST_IN: {
      /* x IN (v1..vn) == (x = v1) OR ... OR (x = vn), combined as a balanced
       * tree: a list of 50,000 values must not make a 50,000-deep expression
       * (evaluation recurses over the tree). */
      size_t n = a->nlist;
      if (n == 0)
        return fail(b, LAMINAR_ERR_SQL_SYNTAX, a, "IN needs at least one value");
      lm_expr** terms = lm_pool_alloc(&b->plan->pool, sizeof(lm_expr*) * n);
      if (terms == NULL) return NOMEM(b);
      /* The left operand is bound once and shared by every comparison. */
      lm_expr* x;
      LM_TRY(bind(b, a->left, mode, &x));
      if (x->type == LM_TYPE_NULL) LM_TRY(coerce(b, &x, LM_TYPE_INT32));
      for (size_t i = 0; i < n; i++) {
        lm_expr* v;
        LM_TRY(bind(b, a->list[i], mode, &v));
        LM_TRY(make_compare(b, a->list[i], LM_XOP_EQ, x, v, is_str_lit(a->left),
                            is_str_lit(a->list[i]), &terms[i]));
      }
      for (size_t width = n; width > 1; width = (width + 1) / 2) {
        for (size_t i = 0; i < width / 2; i++) {
          LM_TRY(make_binary(b, a, LM_OP_OR, terms[2 * i], terms[2 * i + 1], false, false,
                             &terms[i]));
        }
        if (width % 2) terms[width / 2] = terms[width - 1];
      }
      if (a->negated) return make_not(b, terms[0], out);
      *out = terms[0];
      return LAMINAR_OK;
    }
    case LM_AST_CASE: {
      int32_t n = (int32_t)a->nwhen;
      int32_t nargs = 2 * n + (a->else_expr ? 1 : 0);
      lm_expr* e = new_call(b, LM_XOP_CASE, LM_TYPE_NULL, nargs);
      if (e == NULL) return NOMEM(b);
      e->has_else = a->else_expr != NULL;
      lm_type t = LM_TYPE_NULL;
      for (int32_t i = 0; i < n; i++) {
        lm_expr *w, *th;
        if (a->operand != NULL) {
          lm_expr *x, *v;
          LM_TRY(bind(b, a->operand, mode, &x));
          LM_TRY(bind(b, a->whens[i], mode, &v));
          LM_TRY(make_compare(b, a->whens[i], LM_XOP_EQ, x, v, is_str_lit(a->operand),
                              is_str_lit(a->whens[i]), &w));
        } else {
          LM_TRY(bind(b, a->whens[i], mode, &w));
          if (w->type != LM_TYPE_BOOL && w->type != LM_TYPE_NULL) {
            return fail(b, LAMINAR_ERR_TYPE_MISMATCH, a->whens[i],
                        "CASE WHEN needs a BOOLEAN condition, got %s",
                        lm_type_name(w->type));
          }
          LM_TRY(coerce(b, &w, LM_TYPE_BOOL));
        }
        LM_TRY(bind(b, a->thens[i], mode, &th));
        lm_type nt = common_type(t, th->type, false, false);
        if (nt == LM_TYPE_NULL && th->type != LM_TYPE_NULL && t != LM_TYPE_NULL) {
          return fail(b, LAMINAR_ERR_TYPE_MISMATCH, a->thens[i],
                      "CASE branches have incompatible types %s and %s", lm_type_name(t),
                      lm_type_name(th->type));
        }
        t = nt;
        e->args[2 * i] = w;
        e->args[2 * i + 1] = th;
      }
      if (a->else_expr != NULL) {
        lm_expr* el;
        LM_TRY(bind(b, a->else_expr, mode, &el));
        lm_type nt = common_type(t, el->type, false, false);
        if (nt == LM_TYPE_NULL && el->type != LM_TYPE_NULL && t != LM_TYPE_NULL) {
          return fail(b, LAMINAR_ERR_TYPE_MISMATCH, a->else_expr,
                      "CASE branches have incompatible types %s and %s", lm_type_name(t),
                      lm_type_name(el->type));
        }
        t = nt;
        e->args[nargs - 1] = el;
      }
      if (t == LM_TYPE_NULL) t = LM_TYPE_INT32;
      for (int32_t i = 0; i < n; i++) LM_TRY(coerce(b, &e->args[2 * i + 1], t));
      if (a->else_expr != NULL) LM_TRY(coerce(b, &e->args[nargs - 1], t));
      e->type = t;
      *out = e;
      return LAMINAR_OK;
    }
    case LM_AST_CAST: {
      lm_expr* x;
      LM_TRY(bind(b, a->left, mode, &x));
      lm_type t = lm_bind_sql_type(a->cast_type);
      /* DATE converts only to and from text and TIMESTAMP (DuckDB refuses
       * the rest when binding too). */
      bool date_ok = x->type == t || x->type == LM_TYPE_NULL ||
                     x->type == LM_TYPE_STRING || x->type == LM_TYPE_TIMESTAMP ||
                     t == LM_TYPE_STRING || t == LM_TYPE_TIMESTAMP;
      /* DECIMAL and REAL convert to and from text, numbers and BOOLEAN (DuckDB). */
      bool time_x = x->type == LM_TYPE_DATE || x->type == LM_TYPE_TIMESTAMP;
      bool time_t = t == LM_TYPE_DATE || t == LM_TYPE_TIMESTAMP;
      bool num_x = lm_type_is_decimal(x->type) || x->type == LM_TYPE_FLOAT;
      bool num_t = lm_type_is_decimal(t) || t == LM_TYPE_FLOAT;
      if ((num_x && time_t) || (num_t && time_x)) {
        return fail(b, LAMINAR_ERR_TYPE_MISMATCH, a, "cannot CAST %s to %s",
                    lm_type_name(x->type), lm_type_name(t));
      }
      /* TIME converts to and from text, and from a TIMESTAMP (its time of
       * day), as DuckDB. */
      bool time_ok = x->type == t || x->type == LM_TYPE_NULL ||
                     x->type == LM_TYPE_STRING || t == LM_TYPE_STRING ||
                     (x->type == LM_TYPE_TIMESTAMP && t == LM_TYPE_TIME);
      if ((x->type == LM_TYPE_TIME || t == LM_TYPE_TIME) && !time_ok) {
        return fail(b, LAMINAR_ERR_TYPE_MISMATCH, a, "cannot CAST %s to %s",
                    lm_type_name(x->type), lm_type_name(t));
      }
      /* VARBINARY converts to and from text only (DuckDB). */
      bool blob_ok = x->type == t || x->type == LM_TYPE_NULL ||
                     (lm_type_is_bytes(x->type) && lm_type_is_bytes(t));
      if ((x->type == LM_TYPE_BINARY || t == LM_TYPE_BINARY) && !blob_ok) {
        return fail(b, LAMINAR_ERR_TYPE_MISMATCH, a, "cannot CAST %s to %s",
                    lm_type_name(x->type), lm_type_name(t));
      }
      if ((x->type == LM_TYPE_DATE || t == LM_TYPE_DATE) && !date_ok) {
        return fail(b, LAMINAR_ERR_TYPE_MISMATCH, a, "cannot CAST %s to %s",
                    lm_type_name(x->type), lm_type_name(t));
      }
      if (x->type == LM_TYPE_NULL) {
        LM_TRY(coerce(b, &x, t));
        *out = x;
        return LAMINAR_OK;
      }
      lm_expr* e = new_call(b, LM_XOP_CAST, t, 1);
      if (e == NULL) return NOMEM(b);
      e->args[0] = x;
      *out = e;
      return LAMINAR_OK;
    }
    case LM_AST_FUNCTION: {
      if (is_window_fn(a->fname)) {
        return fail(b, LAMINAR_ERR_SQL_GROUPING, a, "%s() is only allowed in GROUP BY",
                    a->fname);
      }
      if (lm_streq_nocase(a->fname, "coalesce")) {
        if (a->nargs == 0)
          return fail(b, LAMINAR_ERR_SQL_SYNTAX, a, "coalesce() needs arguments");
        lm_expr* e = new_call(b, LM_XOP_COALESCE, LM_TYPE_NULL, (int32_t)a->nargs);
        if (e == NULL) return NOMEM(b);
        lm_type t = LM_TYPE_NULL;
        for (size_t i = 0; i < a->nargs; i++) {
          LM_TRY(bind(b, a->args[i], mode, &e->args[i]));
          lm_type nt = common_type(t, e->args[i]->type, false, false);
          if (nt == LM_TYPE_NULL && t != LM_TYPE_NULL &&
              e->args[i]->type != LM_TYPE_NULL) {
            return fail(b, LAMINAR_ERR_TYPE_MISMATCH, a->args[i],
                        "coalesce() arguments have incompatible types %s and %s",
                        lm_type_name(t), lm_type_name(e->args[i]->type));
          }
          t = nt;
        }
        if (t == LM_TYPE_NULL) t = LM_TYPE_INT32;
        for (size_t i = 0; i < a->nargs; i++) LM_TRY(coerce(b, &e->args[i], t));
        e->type = t;
        *out = e;
        return LAMINAR_OK;
      }
      if (lm_streq_nocase(a->fname, "nullif")) return bind_nullif(b, a, mode, out);
      const lm_func_def* f = lm_func_find(a->fname);
      if (f == NULL) return bind_udf(b, a, mode, out);
      return bind_func(b, a, f, a->args, a->nargs, mode, out);
    }
  }
  return fail(b, LAMINAR_ERR_INTERNAL, a, "unexpected expression");
}

/* ---- output names ------------------------------------------------------------------- */

static const char* item_name(binder* b, const lm_ast_select_item* item, int32_t i) {
  if (item->alias != NULL) return item->alias;
  const lm_ast_expr* e = item->expr;
  if (e->kind == LM_AST_COLUMN) return e->name;
  if (e->kind == LM_AST_FUNCTION && e->fname != NULL) {
    if (lm_streq_nocase(e->fname, "count") && (e->star || e->nargs == 0))
      return "count_star";
    return e->fname;
  }
  char buf[32];
  snprintf(buf, sizeof buf, "col%d", (int)i);
  return lm_pool_copy(&b->plan->pool, buf, strlen(buf) + 1);
}

/* ---- statement ----------------------------------------------------------------------- */

static laminar_code add_field(binder* b, lm_schema* s, const char* name, lm_type t) {
  if (t == LM_TYPE_NULL) t = LM_TYPE_INT32;
  if (lm_schema_add(s, name, t, false) != 0) return NOMEM(b);
  return LAMINAR_OK;
}

/* ---- changelog inputs (views, EMIT CHANGES streams) ---------------------------------- */

/* The input is a changelog: its last column is _weight BIGINT (op/view.h),
 * or a join carries the weight of its changelog input (binder.pass_weight). */
static bool changelog_input(const binder* b) {
  return b->pass_weight || lm_op_view_is_changelog(b->input);
}

/* The input's weight column (changelog_input). */
static int32_t weight_column(const binder* b) {
  return b->pass_weight ? b->weight_col : b->input->ncols - 1;
}

/* A plain query over a changelog keeps each row's weight: `*` leaves _weight
 * out and the weight is appended as the last output column, so the stream is
 * a changelog too (a filter keeps or drops a delta whole; a projection maps
 * it). Naming an output column _weight would make a second one. */
static laminar_code carry_weight(binder* b) {
  lm_plan* plan = b->plan;
  if (!changelog_input(b)) return LAMINAR_OK;
  if (lm_schema_find(&plan->out_schema, LM_WEIGHT_COLUMN) >= 0) {
    return fail(b, LAMINAR_ERR_SQL_UNSUPPORTED, NULL,
                "'%s' is a changelog: its _weight column is carried to the output by the "
                "engine and cannot be selected or named",
                b->input_name);
  }
  lm_expr** exprs =
      lm_pool_alloc(&plan->pool, sizeof(lm_expr*) * (size_t)(plan->nexprs + 1));
  lm_expr* w = new_expr(b, LM_EXPR_COLUMN, LM_TYPE_INT64);
  if (exprs == NULL || w == NULL) return NOMEM(b);
  w->column = weight_column(b);
  memcpy(exprs, plan->exprs, sizeof(lm_expr*) * (size_t)plan->nexprs);
  exprs[plan->nexprs++] = w;
  plan->exprs = exprs;
  return add_field(b, &plan->out_schema, LM_WEIGHT_COLUMN, LM_TYPE_INT64);
}

/* Expand '*' items and bind every select item in `mode`. */
static laminar_code join_star_range(binder* b, const lm_ast_expr* star, int32_t* lo,
                                    int32_t* hi);

static laminar_code bind_items(binder* b, const lm_ast_select* sel, bind_mode mode,
                               lm_expr*** out_exprs, int32_t* out_n) {
  int32_t n = 0;
  for (size_t i = 0; i < sel->nitems; i++) {
    n += sel->items[i].expr->kind == LM_AST_STAR ? b->input->ncols : 1;
  }
  lm_expr** exprs = lm_pool_alloc(&b->plan->pool, sizeof(lm_expr*) * (size_t)(n ? n : 1));
  if (exprs == NULL) return NOMEM(b);
  int32_t k = 0;
  for (size_t i = 0; i < sel->nitems; i++) {
    const lm_ast_select_item* item = &sel->items[i];
    if (item->expr->kind == LM_AST_STAR) {
      if (mode == MODE_POST) {
        return fail(b, LAMINAR_ERR_SQL_GROUPING, item->expr,
                    "SELECT * is not allowed with GROUP BY");
      }
      int32_t lo = 0, hi = b->input->ncols - (lm_op_view_is_changelog(b->input) ? 1 : 0);
      if (b->lat_right != NULL && item->expr->table != NULL &&
          (name_eq(item->expr->table, b->lat_name) ||
           (b->lat_alias != NULL && name_eq(item->expr->table, b->lat_alias)))) {
        lo = b->lat_base; /* f.*: the table function's columns */
      } else if (b->join_right != NULL) {
        LM_TRY(join_star_range(b, item->expr, &lo, &hi));
        if (b->lat_right != NULL && item->expr->table == NULL) hi = b->input->ncols;
      }
      for (int32_t c = lo; c < hi; c++) {
        /* a joined changelog's weight (join_inputs) */
        if (b->join_right != NULL && strcmp(b->input->fields[c].name, "$weight") == 0)
          continue;
        lm_expr* e = new_expr(b, LM_EXPR_COLUMN, b->input->fields[c].type);
        if (e == NULL) return NOMEM(b);
        e->column = c;
        exprs[k++] = e;
        LM_TRY(add_field(b, &b->plan->out_schema, b->input->fields[c].name, e->type));
      }
      continue;
    }
    lm_expr* e;
    LM_TRY(bind(b, item->expr, mode, &e));
    if (e->type == LM_TYPE_NULL) LM_TRY(coerce(b, &e, LM_TYPE_INT32));
    exprs[k++] = e;
    LM_TRY(add_field(b, &b->plan->out_schema, item_name(b, item, k - 1), e->type));
  }
  *out_exprs = exprs;
  *out_n = k;
  return LAMINAR_OK;
}

/* ---- temporal filters: WHERE ts > WATERMARK() - INTERVAL '1' HOUR ------------------ */

static bool is_watermark_call(const lm_ast_expr* a) {
  return a->kind == LM_AST_FUNCTION && lm_streq_nocase(a->fname, "watermark");
}

static int watermark_pred(const lm_ast_expr* e, const void* arg) {
  (void)arg;
  return is_watermark_call(e);
}

static bool calls_watermark(const lm_ast_expr* a) {
  return ast_any(a, watermark_pred, NULL);
}

/* `a` is base [+|- literal ...] where base is WATERMARK() (want_wm) or a
 * column: *base and the literals' sum in milliseconds (INTERVAL or integer). */
static bool temporal_term(const lm_ast_expr* a, bool want_wm, const lm_ast_expr** base,
                          int64_t* off) {
  if (want_wm ? is_watermark_call(a) && a->nargs == 0 && !a->star
              : a->kind == LM_AST_COLUMN) {
    *base = a;
    *off = 0;
    return true;
  }
  if (a->kind != LM_AST_BINARY || (a->op != LM_OP_ADD && a->op != LM_OP_SUB))
    return false;
  const lm_ast_expr* lit = a->right;
  const lm_ast_expr* rest = a->left;
  if (a->op == LM_OP_ADD && a->left->kind == LM_AST_LITERAL) {
    lit = a->left;
    rest = a->right;
  }
  if (lit->kind != LM_AST_LITERAL ||
      (lit->lit != LM_LIT_INTERVAL && lit->lit != LM_LIT_INT))
    return false;
  if (!temporal_term(rest, want_wm, base, off)) return false;
  int64_t v = a->op == LM_OP_SUB ? -lit->i : lit->i;
  return !__builtin_add_overflow(*off, v, off);
}

/* The WHERE conjunct `c` as a temporal filter: ts [+ a] > WATERMARK() [+ d]
 * (d < 0 for `- INTERVAL ...`; or >=, or the mirrored <, <=) keeps a row
 * while the watermark W is below ts + a - d (at most that, for >=). */
static laminar_code temporal_conjunct(binder* b, const lm_ast_expr* c) {
  lm_plan* plan = b->plan;
  if (b->temporal != NULL) {
    return fail(b, LAMINAR_ERR_SQL_UNSUPPORTED, c,
                "one temporal filter per query: WATERMARK() appears in two conditions");
  }
  const lm_ast_expr *col = NULL, *wm = NULL;
  int64_t a = 0, d = 0;
  bool ok = c->kind == LM_AST_BINARY;
  bool gt = ok && (c->op == LM_OP_GT || c->op == LM_OP_GE);
  bool lt = ok && (c->op == LM_OP_LT || c->op == LM_OP_LE);
  if (gt)
    ok =
        temporal_term(c->left, false, &col, &a) && temporal_term(c->right, true, &wm, &d);
  else if (lt)
    ok =
        temporal_term(c->right, false, &col, &a) && temporal_term(c->left, true, &wm, &d);
  else
    ok = false;
  if (!ok) {
    bool upper = (gt && temporal_term(c->right, false, &col, &a)) ||
                 (lt && temporal_term(c->left, false, &col, &a));
    return fail(b, LAMINAR_ERR_SQL_UNSUPPORTED, c, "%s%s", temporal_shape,
                upper ? "; a bound that lets rows in later (ts < WATERMARK() ...) is not "
                        "supported"
                      : "");
  }
  lm_expr* e;
  LM_TRY(bind_column_row(b, col, &e));
  if (e->type != LM_TYPE_INT64 && e->type != LM_TYPE_TIMESTAMP) {
    return fail(b, LAMINAR_ERR_TYPE_MISMATCH, col, "%s: '%s' is %s", temporal_shape,
                col->name, lm_type_name(e->type));
  }
  int64_t h;
  if (__builtin_sub_overflow(a, d, &h) ||
      (e->type == LM_TYPE_TIMESTAMP && __builtin_mul_overflow(h, (int64_t)1000, &h))) {
    return fail(b, LAMINAR_ERR_SQL_UNSUPPORTED, c,
                "the temporal filter's interval is out of "
                "range");
  }
  bool changelog = lm_op_view_is_changelog(b->input);
  plan->temporal = true;
  plan->temporal_line = c->line;
  plan->temporal_column = c->column;
  plan->expire = (lm_expire_spec){.time_col = e->column,
                                  .time_type = e->type,
                                  .horizon = h,
                                  .inclusive = c->op == LM_OP_GE || c->op == LM_OP_LE,
                                  .in_ncols = b->input->ncols,
                                  .weight_col = changelog ? b->input->ncols - 1 : -1};
  /* The rest of the plan reads the operator's output: a changelog. */
  if (lm_schema_copy(b->input, &plan->union_schema) != 0) return NOMEM(b);
  if (!changelog)
    LM_TRY(add_field(b, &plan->union_schema, LM_WEIGHT_COLUMN, LM_TYPE_INT64));
  b->input = &plan->union_schema;
  b->temporal = c;
  return LAMINAR_OK;
}

/* Find the temporal filter among the top-level AND conjuncts of `w`; a
 * WATERMARK() anywhere else is refused. `allowed`: the query reads one
 * input by name (else any WATERMARK() is refused). */
static laminar_code find_temporal(binder* b, const lm_ast_expr* w, bool allowed) {
  if (w == NULL || !calls_watermark(w)) return LAMINAR_OK;
  if (w->kind == LM_AST_BINARY && w->op == LM_OP_AND) {
    LM_TRY(find_temporal(b, w->left, allowed));
    return find_temporal(b, w->right, allowed);
  }
  if (!allowed) {
    return fail(b, LAMINAR_ERR_SQL_UNSUPPORTED, w,
                "%s, in a stream or view reading one source, stream or view by name "
                "(not over a join, a union, a derived table or a table function)",
                temporal_shape);
  }
  return temporal_conjunct(b, w);
}

/* Bind the conjuncts of `a` but the temporal filter's (*out NULL: none). */
static laminar_code bind_conjuncts(binder* b, const lm_ast_expr* a, lm_expr** out) {
  *out = NULL;
  if (a == b->temporal) return LAMINAR_OK;
  if (a->kind != LM_AST_BINARY || a->op != LM_OP_AND) return bind(b, a, MODE_ROW, out);
  lm_expr *l, *r;
  LM_TRY(bind_conjuncts(b, a->left, &l));
  LM_TRY(bind_conjuncts(b, a->right, &r));
  if (l != NULL) LM_TRY(coerce(b, &l, LM_TYPE_BOOL));
  if (r != NULL) LM_TRY(coerce(b, &r, LM_TYPE_BOOL));
  if (l == NULL || r == NULL) {
    *out = l != NULL ? l : r;
    return LAMINAR_OK;
  }
  return make_call2(b, LM_XOP_AND, LM_TYPE_BOOL, l, r, out);
}

static laminar_code bind_where(binder* b, const lm_ast_select* sel) {
  if (sel->where == NULL) return LAMINAR_OK;
  if (contains_agg(b->funcs, sel->where)) {
    return fail(b, LAMINAR_ERR_SQL_GROUPING, sel->where,
                "aggregates are not allowed in WHERE (use HAVING)");
  }
  lm_expr* w;
  LM_TRY(bind_conjuncts(b, sel->where, &w));
  if (w == NULL) return LAMINAR_OK; /* the temporal filter alone */
  if (w->type != LM_TYPE_BOOL && w->type != LM_TYPE_NULL) {
    return fail(b, LAMINAR_ERR_TYPE_MISMATCH, sel->where, "WHERE needs a BOOLEAN, got %s",
                lm_type_name(w->type));
  }
  LM_TRY(coerce(b, &w, LM_TYPE_BOOL));
  b->plan->filter = w;
  return LAMINAR_OK;
}

/* An INTERVAL (or integer milliseconds) literal argument of a window
 * function, positive. */
static laminar_code window_interval(binder* b, const lm_ast_expr* g,
                                    const lm_ast_expr* arg, const char* what,
                                    int64_t* out) {
  if (arg->kind != LM_AST_LITERAL ||
      (arg->lit != LM_LIT_INTERVAL && arg->lit != LM_LIT_INT)) {
    return fail(b, LAMINAR_ERR_TYPE_MISMATCH, arg, "%s() %s must be an INTERVAL literal",
                g->fname, what);
  }
  if (arg->i <= 0) {
    return fail(b, LAMINAR_ERR_TYPE_MISMATCH, arg, "%s() %s must be positive", g->fname,
                what);
  }
  *out = arg->i;
  return LAMINAR_OK;
}

/* tumble(ts, size), hop(ts, size, hop) / slide(ts, size, slide) and
 * session(ts, gap) in GROUP BY. */
static laminar_code bind_window_fn(binder* b, const lm_ast_expr* g) {
  lm_plan* plan = b->plan;
  if (b->tumble != NULL) {
    return fail(b, LAMINAR_ERR_SQL_GROUPING, g, "only one window function per GROUP BY");
  }
  bool session = lm_streq_nocase(g->fname, "session");
  bool tumble = lm_streq_nocase(g->fname, "tumble") || session;
  if (g->nargs != (tumble ? 2u : 3u) || g->star) {
    return fail(
        b, LAMINAR_ERR_SQL_SYNTAX, g,
        tumble ? "%s() takes a time column and an INTERVAL: %s(ts, INTERVAL '1' SECOND)"
               : "%s() takes a time column, the window size and the hop: %s(ts, "
                 "INTERVAL '10' SECOND, INTERVAL '1' SECOND)",
        g->fname, g->fname);
  }
  if (session && changelog_input(b)) {
    return fail(b, LAMINAR_ERR_SQL_UNSUPPORTED, g,
                "session() windows over a changelog are not supported yet");
  }
  const lm_ast_expr* col = g->args[0];
  if (col->kind != LM_AST_COLUMN) {
    return fail(b, LAMINAR_ERR_SQL_UNSUPPORTED, col, "%s() needs a column as its time",
                g->fname);
  }
  lm_expr* t;
  LM_TRY(bind_column_row(b, col, &t));
  if (t->type != LM_TYPE_INT64 && t->type != LM_TYPE_TIMESTAMP) {
    return fail(b, LAMINAR_ERR_TYPE_MISMATCH, col,
                "%s() time column '%s' must be BIGINT (epoch ms) or TIMESTAMP, got %s",
                g->fname, col->name, lm_type_name(t->type));
  }
  int64_t size = 0, hop = 0;
  LM_TRY(window_interval(b, g, g->args[1], session ? "gap" : "size", &size));
  hop = size;
  if (!tumble) {
    LM_TRY(window_interval(b, g, g->args[2],
                           lm_streq_nocase(g->fname, "hop") ? "hop" : "slide", &hop));
    if (1 + (size - 1) / hop > LM_MAX_WINDOWS_PER_ROW) {
      return fail(
          b, LAMINAR_ERR_SQL_UNSUPPORTED, g->args[2],
          "%s() puts each row in %lld windows; at most %d are supported (make the "
          "hop larger)",
          g->fname, (long long)(1 + (size - 1) / hop), LM_MAX_WINDOWS_PER_ROW);
    }
  }
  b->tumble = g;
  plan->window.time_col = t->column;
  plan->window.time_type = t->type;
  plan->window.size_ms = size;
  plan->window.hop_ms = hop;
  plan->window.session = session;
  return LAMINAR_OK;
}

static laminar_code bind_group_by(binder* b, const lm_ast_select* sel) {
  lm_plan* plan = b->plan;
  b->keys = lm_pool_alloc(&plan->pool, sizeof(void*) * (sel->ngroup + 1));
  lm_expr** key_exprs = lm_pool_alloc(&plan->pool, sizeof(lm_expr*) * (sel->ngroup + 1));
  if (b->keys == NULL || key_exprs == NULL) return NOMEM(b);
  for (size_t i = 0; i < sel->ngroup; i++) {
    const lm_ast_expr* g = sel->group_by[i];
    if (g->kind == LM_AST_FUNCTION && is_window_fn(g->fname)) {
      LM_TRY(bind_window_fn(b, g));
      continue;
    }
    if (contains_agg(b->funcs, g)) {
      return fail(b, LAMINAR_ERR_SQL_GROUPING, g,
                  "aggregates are not allowed in GROUP BY");
    }
    lm_expr* k;
    LM_TRY(bind(b, g, MODE_ROW, &k));
    if (k->type == LM_TYPE_NULL) LM_TRY(coerce(b, &k, LM_TYPE_INT32));
    LM_TRY(check_narrow_decimal(b, g, "a GROUP BY key", k->type));
    b->keys[b->nkeys] = g;
    key_exprs[b->nkeys] = k;
    b->nkeys++;
  }
  if (b->tumble == NULL) {
    /* No window: a running aggregate, which only EMIT CHANGES can express. */
    if (b->stmt->emit == LM_EMIT_ON_WINDOW_CLOSE) {
      return fail(
          b, LAMINAR_ERR_SQL_GROUPING, sel->ngroup ? sel->group_by[0] : NULL,
          "EMIT ON WINDOW CLOSE needs a window in GROUP BY (tumble, hop or slide); "
          "a GROUP BY without one emits its changes (EMIT CHANGES)");
    }
    plan->window.global = true;
  }
  plan->window.keys = (const lm_expr* const*)key_exprs;
  plan->window.nkeys = b->nkeys;
  /* agg_schema: window bounds and keys now, aggregates once the items are bound. */
  LM_TRY(add_field(b, &plan->agg_schema, "window_start", window_bound_type(b)));
  LM_TRY(add_field(b, &plan->agg_schema, "window_end", window_bound_type(b)));
  for (int32_t i = 0; i < b->nkeys; i++) {
    char buf[32];
    snprintf(buf, sizeof buf, "key%d", (int)i);
    LM_TRY(add_field(b, &plan->agg_schema, buf, key_exprs[i]->type));
  }
  return LAMINAR_OK;
}

/* GROUP BY over a changelog: every row counts its weight times, which the
 * retractable aggregates (all of them: COUNT, COUNT(DISTINCT), SUM, AVG, MIN,
 * MAX, FIRST, LAST) follow. */
static laminar_code bind_changelog_aggs(binder* b) {
  if (!changelog_input(b)) return LAMINAR_OK;
  for (int32_t i = 0; i < b->naggs; i++) {
    if (b->aggs[i].fn == LM_AGG_UDAF && (!lm_udaf_retractable(b->aggs[i].udaf) ||
                                         b->aggs[i].udaf_mode != LM_UDAF_WHOLE)) {
      return fail(b, LAMINAR_ERR_SQL_UNSUPPORTED, b->agg_calls[i],
                  "aggregate function '%s' has no retract callback: it cannot read a "
                  "changelog ('%s' ends in a _weight column); register it with one",
                  lm_udf_name(b->aggs[i].udaf), b->input_name);
    }
    if (b->aggs[i].fn != LM_AGG_UDAF && !lm_agg_retractable(b->aggs[i].fn)) {
      return fail(
          b, LAMINAR_ERR_SQL_UNSUPPORTED, b->agg_calls[i],
          "%s() over a changelog ('%s' ends in a _weight column) is not supported "
          "yet: only COUNT, COUNT(DISTINCT), SUM, AVG, MIN, MAX, FIRST, LAST, "
          "BOOL_AND, BOOL_OR, the statistical aggregates, median and the quantiles "
          "take retractions (approx_count_distinct's HyperLogLog cannot forget a value)",
          b->agg_calls[i]->fname, b->input_name);
    }
  }
  b->plan->window.changelog = true;
  b->plan->window.weight_col = weight_column(b);
  return LAMINAR_OK;
}

/* EMIT CHANGES: the aggregate's output and the stream's end in _weight, the
 * projection carrying it through (HAVING keeps or drops a delta whole). */
static laminar_code emit_changes(binder* b) {
  lm_plan* plan = b->plan;
  if (lm_schema_find(&plan->out_schema, LM_WEIGHT_COLUMN) >= 0) {
    return fail(
        b, LAMINAR_ERR_SQL_UNSUPPORTED, NULL,
        "an EMIT CHANGES query ends in the engine's _weight column: no output column "
        "may be named _weight");
  }
  plan->window.emit_changes = true;
  LM_TRY(add_field(b, &plan->agg_schema, LM_WEIGHT_COLUMN, LM_TYPE_INT64));
  lm_expr** exprs =
      lm_pool_alloc(&plan->pool, sizeof(lm_expr*) * (size_t)(plan->npost + 1));
  lm_expr* w = new_expr(b, LM_EXPR_COLUMN, LM_TYPE_INT64);
  if (exprs == NULL || w == NULL) return NOMEM(b);
  w->column = plan->agg_schema.ncols - 1;
  memcpy(exprs, plan->post_exprs, sizeof(lm_expr*) * (size_t)plan->npost);
  exprs[plan->npost++] = w;
  plan->post_exprs = exprs;
  return add_field(b, &plan->out_schema, LM_WEIGHT_COLUMN, LM_TYPE_INT64);
}

static laminar_code bind_analytic(binder* b, const lm_stmt* stmt, bool has_agg);

/* A window bound named as a column (window_start / window_end, unqualified). */
static bool is_window_bound_ref(const lm_ast_expr* e) {
  return e->kind == LM_AST_COLUMN && e->table == NULL &&
         (lm_streq_nocase(e->name, "window_start") ||
          lm_streq_nocase(e->name, "window_end"));
}

/* Whether e is one of the DISTINCT ON expressions of sel. */
static bool is_distinct_on_expr(const lm_ast_select* sel, const lm_ast_expr* e) {
  for (size_t i = 0; i < sel->ndistinct_on; i++) {
    if (ast_equal(sel->distinct_on[i], e)) return true;
  }
  return false;
}

/* SELECT DISTINCT ON (exprs) items ... [GROUP BY window] [ORDER BY exprs[, time
 * [ASC | DESC]]]: grouped by the window and the exprs, every other item
 * FIRST(item) (or LAST with ORDER BY the window's time DESC): one row per key
 * (per window), the key's first or last row by event time (arrival without a
 * window), as FIRST / LAST pick one row for all their calls. The ORDER BY
 * may repeat the exprs (they only sort DuckDB's output) and then name the
 * window's time column; nothing else picks rows here. */
static laminar_code distinct_on_as_group_by(binder* b, const lm_ast_select* sel,
                                            const lm_ast_select** out) {
  const lm_ast_expr* window = NULL;
  for (size_t i = 0; i < sel->ngroup; i++) window = sel->group_by[i];
  for (size_t i = 0; i < sel->ndistinct_on; i++) {
    const lm_ast_expr* e = sel->distinct_on[i];
    if (contains_agg(b->funcs, e) || e->kind == LM_AST_STAR)
      return fail(b, LAMINAR_ERR_SQL_UNSUPPORTED, e,
                  "DISTINCT ON takes expressions of the input's columns");
  }
  bool last = false;
  for (size_t i = 0; i < sel->norder; i++) {
    const lm_ast_order_item* o = &sel->order_by[i];
    if (is_distinct_on_expr(sel, o->expr)) continue;
    if (i + 1 == sel->norder && window != NULL && window->nargs > 0 &&
        ast_equal(o->expr, window->args[0])) {
      last = o->desc;
      continue;
    }
    if (window != NULL)
      return fail(b, LAMINAR_ERR_SQL_UNSUPPORTED, o->expr,
                  "DISTINCT ON keeps each key's first row by event time (ORDER BY "
                  "the window's time column ASC) or its last (DESC): ORDER BY takes "
                  "the DISTINCT ON expressions, then that column");
    return fail(b, LAMINAR_ERR_SQL_UNSUPPORTED, o->expr,
                "without a window DISTINCT ON keeps each key's first row by arrival: "
                "ORDER BY takes the DISTINCT ON expressions only (GROUP BY a window "
                "to pick the first or last row by event time)");
  }
  lm_pool* pool = &b->plan->pool;
  /* `*` is the input's columns (its _weight left out, as `*` does). */
  size_t nitems = 0;
  for (size_t i = 0; i < sel->nitems; i++) {
    const lm_ast_expr* e = sel->items[i].expr;
    if (e->kind != LM_AST_STAR) {
      nitems++;
    } else if (b->join_right != NULL || sel->lateral != NULL || b->input == NULL) {
      return fail(b, LAMINAR_ERR_SQL_UNSUPPORTED, e,
                  "DISTINCT ON with * over a join: name the columns");
    } else {
      nitems += (size_t)b->input->ncols;
    }
  }
  lm_ast_select* d = lm_pool_alloc(pool, sizeof *d);
  lm_ast_expr** keys =
      lm_pool_alloc(pool, sizeof(lm_ast_expr*) * (sel->ngroup + sel->ndistinct_on));
  lm_ast_select_item* items = lm_pool_alloc(pool, sizeof *items * (nitems ? nitems : 1));
  if (d == NULL || keys == NULL || items == NULL) return NOMEM(b);
  nitems = 0;
  for (size_t i = 0; i < sel->nitems; i++) {
    const lm_ast_expr* e = sel->items[i].expr;
    if (e->kind != LM_AST_STAR) {
      items[nitems++] = sel->items[i];
      continue;
    }
    for (int32_t c = 0; c < b->input->ncols; c++) {
      const char* name = b->input->fields[c].name;
      if (changelog_input(b) && c == b->input->ncols - 1) break; /* _weight */
      lm_ast_expr* col = lm_pool_alloc(pool, sizeof *col);
      if (col == NULL) return NOMEM(b);
      memset(col, 0, sizeof *col);
      col->kind = LM_AST_COLUMN;
      col->line = e->line;
      col->column = e->column;
      col->height = 1;
      col->name = name;
      items[nitems++] = (lm_ast_select_item){col, NULL};
    }
  }
  *d = *sel;
  d->distinct = false;
  d->distinct_on = NULL;
  d->ndistinct_on = 0;
  d->order_by = NULL;
  d->norder = 0;
  d->ngroup = 0;
  for (size_t i = 0; i < sel->ngroup; i++) keys[d->ngroup++] = sel->group_by[i];
  for (size_t i = 0; i < sel->ndistinct_on; i++) keys[d->ngroup++] = sel->distinct_on[i];
  d->group_by = keys;
  for (size_t i = 0; i < nitems; i++) {
    lm_ast_expr* e = items[i].expr;
    if (is_window_bound_ref(e) || is_distinct_on_expr(sel, e)) continue;
    lm_ast_expr* call = lm_pool_alloc(pool, sizeof *call);
    lm_ast_expr** args = lm_pool_alloc(pool, sizeof *args);
    if (call == NULL || args == NULL) return NOMEM(b);
    memset(call, 0, sizeof *call);
    call->kind = LM_AST_FUNCTION;
    call->line = e->line;
    call->column = e->column;
    call->height = e->height + 1;
    call->fname = last ? "last" : "first";
    args[0] = e;
    call->args = args;
    call->nargs = 1;
    items[i].alias = item_name(b, &items[i], (int32_t)i);
    items[i].expr = call;
  }
  d->items = items;
  d->nitems = nitems;
  *out = d;
  return LAMINAR_OK;
}

/* SELECT DISTINCT items ... [GROUP BY window]: the same query grouped by the
 * window and every item (but the window's bounds), without aggregates: a row
 * per distinct tuple per window, or without a window a running GROUP BY (a
 * tuple's +1 when first held, its -1 when a changelog input retracts its last
 * row). *out: the rewritten select (in the plan's pool). */
static laminar_code distinct_as_group_by(binder* b, const lm_ast_select* sel,
                                         const lm_ast_select** out) {
  const char* why = NULL;
  const lm_ast_expr* at = NULL;
  for (size_t i = 0; i < sel->nitems && why == NULL; i++) {
    const lm_ast_expr* e = sel->items[i].expr;
    if (e->kind == LM_AST_STAR && sel->ndistinct_on == 0)
      why = "SELECT DISTINCT * is not supported: name the columns";
    if (contains_agg(b->funcs, e))
      why = "SELECT DISTINCT over aggregates is not supported yet";
    at = e;
  }
  for (size_t i = 0; i < sel->ngroup && why == NULL; i++) {
    if (!lm_bind_is_window_call(sel->group_by[i])) {
      why = "SELECT DISTINCT groups by its items: its GROUP BY may hold the window only";
      at = sel->group_by[i];
    }
  }
  if (why == NULL && sel->having != NULL) {
    why = "SELECT DISTINCT takes no HAVING";
    at = sel->having;
  }
  if (why == NULL && (sel->qualify != NULL || lm_bind_select_is_analytic(sel)))
    why = "SELECT DISTINCT with OVER / QUALIFY is not supported yet";
  if (why != NULL) return fail(b, LAMINAR_ERR_SQL_UNSUPPORTED, at, "%s", why);
  if (sel->ndistinct_on > 0) return distinct_on_as_group_by(b, sel, out);
  lm_ast_select* d = lm_pool_alloc(&b->plan->pool, sizeof *d);
  lm_ast_expr** keys =
      lm_pool_alloc(&b->plan->pool, sizeof(lm_ast_expr*) * (sel->ngroup + sel->nitems));
  if (d == NULL || keys == NULL) return NOMEM(b);
  *d = *sel;
  d->distinct = false;
  d->ngroup = 0;
  for (size_t i = 0; i < sel->ngroup; i++) keys[d->ngroup++] = sel->group_by[i];
  for (size_t i = 0; i < sel->nitems; i++) {
    if (!is_window_bound_ref(sel->items[i].expr)) keys[d->ngroup++] = sel->items[i].expr;
  }
  d->group_by = keys;
  *out = d;
  return LAMINAR_OK;
}

static laminar_code bind_select(binder* b, const lm_stmt* stmt) {
  const lm_ast_select* sel = stmt->select;
  lm_plan* plan = b->plan;
  if (sel->distinct) LM_TRY(distinct_as_group_by(b, sel, &sel));
  if (sel->norder > 0 || sel->limit >= 0) {
    return fail(b, LAMINAR_ERR_SQL_UNSUPPORTED,
                sel->norder ? sel->order_by[0].expr : NULL,
                "ORDER BY / LIMIT are not supported on continuous queries");
  }
  bool has_agg = sel->ngroup > 0 || sel->having != NULL;
  for (size_t i = 0; i < sel->nitems && !has_agg; i++)
    has_agg = contains_agg(b->funcs, sel->items[i].expr);
  bool changes = stmt->emit == LM_EMIT_CHANGES;
  bool one_input = plan->nbranches == 1 && !lm_plan_branched(plan) && !plan->joined &&
                   !plan->lookup && !plan->lateral && !b->pass_weight;
  LM_TRY(find_temporal(b, sel->where, one_input));
  LM_TRY(bind_where(b, sel));
  if (sel->qualify != NULL || lm_bind_select_is_analytic(sel)) {
    if (plan->temporal) {
      return fail(b, LAMINAR_ERR_SQL_UNSUPPORTED, b->temporal,
                  "a temporal filter with window functions (OVER) is not supported yet: "
                  "filter in a stream of its own");
    }
    return bind_analytic(b, stmt, has_agg);
  }
  if (!has_agg) {
    if (stmt->emit == LM_EMIT_ON_WINDOW_CLOSE) {
      return fail(b, LAMINAR_ERR_SQL_GROUPING, NULL,
                  "EMIT ON WINDOW CLOSE needs a GROUP BY with a window");
    }
    if (changes) {
      return fail(
          b, LAMINAR_ERR_SQL_UNSUPPORTED, NULL,
          "EMIT CHANGES needs an aggregate (GROUP BY): a plain query emits each row "
          "once, as an insert");
    }
    LM_TRY(bind_items(b, sel, MODE_ROW, &plan->exprs, &plan->nexprs));
    return carry_weight(b);
  }
  if (sel->ngroup == 0 && !changes) {
    return fail(
        b, LAMINAR_ERR_SQL_UNSUPPORTED, NULL,
        "aggregates need GROUP BY with a window, e.g. GROUP BY tumble(ts, INTERVAL "
        "'1' SECOND), or EMIT CHANGES for a running total");
  }
  plan->windowed = true;
  b->aggregating = true;
  LM_TRY(bind_group_by(b, sel));
  plan->window.filter = plan->filter;
  LM_TRY(bind_items(b, sel, MODE_POST, &plan->post_exprs, &plan->npost));
  if (sel->having != NULL) {
    lm_expr* h;
    LM_TRY(bind(b, sel->having, MODE_POST, &h));
    if (h->type != LM_TYPE_BOOL && h->type != LM_TYPE_NULL) {
      return fail(b, LAMINAR_ERR_TYPE_MISMATCH, sel->having,
                  "HAVING needs a BOOLEAN, got %s", lm_type_name(h->type));
    }
    LM_TRY(coerce(b, &h, LM_TYPE_BOOL));
    plan->having = h;
  }
  for (int32_t i = 0; i < b->naggs; i++) {
    char buf[32];
    snprintf(buf, sizeof buf, "agg%d", (int)i);
    LM_TRY(add_field(b, &plan->agg_schema, buf, b->aggs[i].result_type));
  }
  plan->window.aggs = b->aggs;
  plan->window.naggs = b->naggs;
  LM_TRY(bind_changelog_aggs(b));
  if (changes || plan->window.global) LM_TRY(emit_changes(b));
  return LAMINAR_OK;
}


/* ---- inputs: one name, or branches (UNION ALL, derived tables) ------------------- */

static laminar_code unknown_input(const lm_ast_select* sel, laminar_error* err) {
  lm_error_set(err, LAMINAR_ERR_SQL_UNKNOWN_OBJECT,
               "no source or stream named '%s' at line %d, column %d", sel->from,
               (int)sel->from_line, (int)sel->from_column);
  lm_error_at(err, sel->from_line, sel->from_column);
  lm_error_object(err, sel->from, NULL);
  return LAMINAR_ERR_SQL_UNKNOWN_OBJECT;
}

/* Where to point at column j of a branch's select: its item, or the FROM
 * name when a '*' makes positions and items differ. */
static const lm_ast_expr* branch_item_at(const lm_ast_select* sel, int32_t j) {
  for (size_t i = 0; i < sel->nitems; i++) {
    if (sel->items[i].expr->kind == LM_AST_STAR) return NULL;
  }
  return (size_t)j < sel->nitems ? sel->items[j].expr : sel->items[sel->nitems - 1].expr;
}

/* Bind branch `sel` (SELECT items FROM name [WHERE ...]) into *br, its output
 * columns into *cols (named by its items, typed before the union's casts). */
static laminar_code bind_branch(binder* top, const lm_ast_select* sel,
                                lm_plan_lookup_fn lookup, void* lookup_arg,
                                lm_plan_branch* br, lm_schema* cols) {
  lm_plan* plan = top->plan;
  if (sel->from_select != NULL) {
    lm_error_set(
        top->err, LAMINAR_ERR_SQL_UNSUPPORTED,
        "'%s' at line %d, column %d: a UNION ALL branch or derived table reads a "
        "source or stream by name; nested subqueries are not supported yet",
        sel->from, (int)sel->from_line, (int)sel->from_column);
    lm_error_at(top->err, sel->from_line, sel->from_column);
    return LAMINAR_ERR_SQL_UNSUPPORTED;
  }
  const lm_ast_expr* agg = sel->ngroup > 0 ? sel->group_by[0] : sel->having;
  for (size_t i = 0; agg == NULL && i < sel->nitems; i++) {
    if (contains_agg(top->funcs, sel->items[i].expr)) agg = sel->items[i].expr;
  }
  if (agg != NULL || sel->distinct || sel->norder > 0 || sel->limit >= 0) {
    return fail(
        top, LAMINAR_ERR_SQL_UNSUPPORTED, agg,
        "a branch of UNION ALL or a derived table filters and projects only (no "
        "aggregates, GROUP BY, DISTINCT, ORDER BY or LIMIT yet): aggregate over it "
        "in the outer query, e.g. SELECT ... FROM (SELECT ... UNION ALL SELECT ...) "
        "GROUP BY ...");
  }
  bool is_source = false;
  const lm_schema* input = lookup(lookup_arg, sel->from, &is_source);
  if (input == NULL) return unknown_input(sel, top->err);
  if (lm_op_view_is_changelog(input)) {
    lm_error_set(
        top->err, LAMINAR_ERR_SQL_UNSUPPORTED,
        "'%s' at line %d, column %d is a changelog (it ends in _weight): a UNION ALL "
        "branch or derived table over a changelog is not supported yet",
        sel->from, (int)sel->from_line, (int)sel->from_column);
    lm_error_at(top->err, sel->from_line, sel->from_column);
    lm_error_object(top->err, sel->from, NULL);
    return LAMINAR_ERR_SQL_UNSUPPORTED;
  }
  binder b = {.stmt = top->stmt,
              .plan = plan,
              .err = top->err,
              .input = input,
              .input_name = sel->from,
              .input_alias = sel->from_alias,
              .funcs = top->funcs};
  br->input = lm_pool_copy(&plan->pool, sel->from, strlen(sel->from) + 1);
  if (br->input == NULL) return NOMEM(&b);
  br->input_is_source = is_source;
  br->line = sel->from_line;
  br->column = sel->from_column;
  br->in_ncols = input->ncols;
  /* The binding helpers write the plan's filter and output schema: borrow them. */
  lm_schema saved = plan->out_schema;
  lm_expr* saved_filter = plan->filter;
  lm_schema_init_empty(&plan->out_schema);
  plan->filter = NULL;
  laminar_code rc = bind_where(&b, sel);
  if (rc == LAMINAR_OK) rc = bind_items(&b, sel, MODE_ROW, &br->exprs, &br->nexprs);
  br->filter = plan->filter;
  *cols = plan->out_schema;
  plan->out_schema = saved;
  plan->filter = saved_filter;
  return rc;
}

/* Where each input column of br goes unchanged (lm_plan_branch.col_out). */
static laminar_code branch_col_out(binder* b, lm_plan_branch* br) {
  br->col_out =
      lm_pool_alloc(&b->plan->pool, sizeof(int32_t) * (size_t)(br->in_ncols + 1));
  if (br->col_out == NULL) return NOMEM(b);
  for (int32_t c = 0; c < br->in_ncols; c++) br->col_out[c] = -1;
  for (int32_t j = 0; j < br->nexprs; j++) {
    const lm_expr* e = br->exprs[j];
    if (e->kind == LM_EXPR_COLUMN && e->column >= 0 && e->column < br->in_ncols &&
        br->col_out[e->column] < 0) {
      br->col_out[e->column] = j;
    }
  }
  return LAMINAR_OK;
}

/* The branches of set `first` (first UNION ALL next ...): bound, matched by
 * position, typed by the usual implicit casts, named by the first branch. */
static laminar_code bind_branches(binder* b, const lm_ast_select* first,
                                  lm_plan_lookup_fn lookup, void* lookup_arg) {
  lm_plan* plan = b->plan;
  int32_t n = 0;
  for (const lm_ast_select* x = first; x != NULL; x = x->union_next) n++;
  plan->branches = lm_pool_alloc(&plan->pool, sizeof(lm_plan_branch) * (size_t)n);
  lm_schema* cols = lm_calloc((size_t)n, sizeof(lm_schema));
  if (plan->branches == NULL || cols == NULL) {
    lm_free(cols);
    return NOMEM(b);
  }
  memset(plan->branches, 0, sizeof(lm_plan_branch) * (size_t)n);
  for (int32_t i = 0; i < n; i++) lm_schema_init_empty(&cols[i]);
  laminar_code rc = LAMINAR_OK;
  const lm_ast_select* x = first;
  for (int32_t i = 0; i < n && rc == LAMINAR_OK; i++, x = x->union_next) {
    rc = bind_branch(b, x, lookup, lookup_arg, &plan->branches[i], &cols[i]);
    plan->nbranches = i + 1;
    if (rc == LAMINAR_OK && cols[i].ncols != cols[0].ncols) {
      rc =
          fail(b, LAMINAR_ERR_TYPE_MISMATCH, branch_item_at(x, 0),
               "UNION ALL: branch %d (FROM '%s') has %d columns, the first branch has %d",
               (int)i + 1, x->from, (int)cols[i].ncols, (int)cols[0].ncols);
    }
  }
  /* Column j's type: where every branch's column j meets (numbers widen). */
  for (int32_t j = 0; rc == LAMINAR_OK && j < cols[0].ncols; j++) {
    lm_type t = cols[0].fields[j].type;
    x = first;
    for (int32_t i = 1; i < n && rc == LAMINAR_OK; i++) {
      x = x->union_next;
      lm_type u = common_type(t, cols[i].fields[j].type, false, false);
      if (u == LM_TYPE_NULL) {
        rc =
            fail(b, LAMINAR_ERR_TYPE_MISMATCH, branch_item_at(x, j),
                 "UNION ALL column %d ('%s'): %s in branch %d (FROM '%s') does not match "
                 "%s of the branches before it",
                 (int)j + 1, cols[0].fields[j].name, lm_type_name(cols[i].fields[j].type),
                 (int)i + 1, x->from, lm_type_name(t));
      }
      t = u;
    }
    for (int32_t i = 0; i < n && rc == LAMINAR_OK; i++) {
      rc = coerce(b, &plan->branches[i].exprs[j], t);
    }
    if (rc == LAMINAR_OK)
      rc = add_field(b, &plan->union_schema, cols[0].fields[j].name, t);
  }
  for (int32_t i = 0; i < n && rc == LAMINAR_OK; i++) {
    rc = branch_col_out(b, &plan->branches[i]);
  }
  for (int32_t i = 0; i < n; i++) lm_schema_free(&cols[i]);
  lm_free(cols);
  return rc;
}

/* The plan's input names after bind_branches: SHOW STREAMS' "a, b" and the
 * first branch's input as the plan's. */
static laminar_code branch_inputs(binder* b) {
  lm_plan* out = b->plan;
  size_t len = 1;
  for (int32_t i = 0; i < out->nbranches; i++) len += strlen(out->branches[i].input) + 2;
  if ((out->inputs = lm_pool_alloc(&out->pool, len)) == NULL) return NOMEM(b);
  out->inputs[0] = '\0';
  for (int32_t i = 0; i < out->nbranches; i++) {
    if (i > 0) strcat(out->inputs, ", ");
    strcat(out->inputs, out->branches[i].input);
  }
  out->input = out->branches[0].input;
  out->input_is_source = out->branches[0].input_is_source;
  return LAMINAR_OK;
}

/* A top-level set: the stream is the union itself (every column, as is). */
static laminar_code bind_union_output(binder* b) {
  lm_plan* plan = b->plan;
  if (b->stmt->emit != LM_EMIT_DEFAULT) {
    return fail(
        b, LAMINAR_ERR_SQL_UNSUPPORTED, NULL,
        "EMIT needs a GROUP BY over the union: SELECT ... FROM (SELECT ... UNION ALL "
        "SELECT ...) GROUP BY ... EMIT ...");
  }
  plan->nexprs = plan->union_schema.ncols;
  plan->exprs = lm_pool_alloc(&plan->pool, sizeof(lm_expr*) * (size_t)(plan->nexprs + 1));
  if (plan->exprs == NULL) return NOMEM(b);
  for (int32_t c = 0; c < plan->nexprs; c++) {
    lm_expr* e = new_expr(b, LM_EXPR_COLUMN, plan->union_schema.fields[c].type);
    if (e == NULL) return NOMEM(b);
    e->column = c;
    plan->exprs[c] = e;
  }
  if (lm_schema_copy(&plan->union_schema, &plan->out_schema) != 0) return NOMEM(b);
  return LAMINAR_OK;
}

/* The plan reads one input, `FROM name` of sel, as it is: b's input and the
 * plan's one branch. */
static laminar_code bind_one_input(binder* b, const lm_ast_select* sel,
                                   lm_plan_lookup_fn lookup, void* lookup_arg) {
  lm_plan* out = b->plan;
  bool is_source = false;
  const lm_schema* input = lookup(lookup_arg, sel->from, &is_source);
  if (input == NULL) return unknown_input(sel, b->err);
  b->input = input;
  b->input_name = sel->from;
  b->input_alias = sel->from_alias;
  out->input = lm_pool_copy(&out->pool, sel->from, strlen(sel->from) + 1);
  out->input_is_source = is_source;
  out->branches = lm_pool_alloc(&out->pool, sizeof(lm_plan_branch));
  if (out->input == NULL || out->branches == NULL) return NOMEM(b);
  memset(out->branches, 0, sizeof(lm_plan_branch));
  out->branches[0].input = out->input;
  out->branches[0].input_is_source = is_source;
  out->branches[0].line = sel->from_line;
  out->branches[0].column = sel->from_column;
  out->branches[0].in_ncols = input->ncols;
  out->nbranches = 1;
  return LAMINAR_OK;
}

static laminar_code bind_analytic_derived(binder* b, const lm_stmt* stmt,
                                          lm_plan_lookup_fn lookup, void* lookup_arg);

/* ---- ASOF JOIN: two inputs, their conditions, the joined row ---------------------- */

/* Which side column reference `a` names: 0 left, 1 right, with its index in
 * that side's schema; an unknown table or column, or an unqualified name
 * both sides have, fails naming it. */
/* The side a qualifier names: 0 the left, 1 the right, -1 neither (a
 * self-join names its sides by their aliases). */
static int32_t join_table_side(const binder* b, const char* table) {
  bool is_left =
      name_eq(table, b->input_name) || (b->input_alias && name_eq(table, b->input_alias));
  bool is_right =
      name_eq(table, b->right_name) || (b->right_alias && name_eq(table, b->right_alias));
  if (is_left && is_right) {
    is_left = b->input_alias && name_eq(table, b->input_alias);
    is_right = !is_left;
  }
  return is_left ? 0 : is_right ? 1 : -1;
}

static laminar_code join_side_of_column(binder* b, const lm_ast_expr* a,
                                        int32_t* out_side, int32_t* out_idx) {
  int32_t li = lm_schema_find(b->join_left, a->name);
  int32_t ri = lm_schema_find(b->join_right, a->name);
  if (a->table != NULL) {
    *out_side = join_table_side(b, a->table);
    if (*out_side < 0) {
      return fail(b, LAMINAR_ERR_SQL_UNKNOWN_COLUMN, a,
                  "unknown table '%s' in column '%s.%s'", a->table, a->table, a->name);
    }
    *out_idx = *out_side == 0 ? li : ri;
  } else if (li >= 0 && ri >= 0) {
    return fail(b, LAMINAR_ERR_SQL_UNKNOWN_COLUMN, a,
                "column '%s' is in both sides of the join: qualify it (%s.%s or %s.%s)",
                a->name, b->input_alias ? b->input_alias : b->input_name, a->name,
                b->right_alias ? b->right_alias : b->right_name, a->name);
  } else {
    *out_side = li >= 0 ? 0 : 1;
    *out_idx = li >= 0 ? li : ri;
  }
  if (*out_idx < 0) {
    const char* in = *out_side == 0 ? b->input_name : b->right_name;
    laminar_code rc = fail(b, LAMINAR_ERR_SQL_UNKNOWN_COLUMN, a, "no column '%s' in '%s'",
                           a->name, a->table != NULL ? in : b->input_name);
    lm_error_object(b->err, in, a->name);
    return rc;
  }
  return LAMINAR_OK;
}

/* A column of the table function beside a join (b->lat_right), into *out;
 * *out left NULL for a column of the join's sides. A name both the function
 * and a side have must be qualified. */
static laminar_code bind_lat_column(binder* b, const lm_ast_expr* a, lm_expr** out) {
  int32_t li = lm_schema_find(b->lat_right, a->name);
  if (a->table != NULL) {
    if (!name_eq(a->table, b->lat_name) &&
        !(b->lat_alias != NULL && name_eq(a->table, b->lat_alias)))
      return LAMINAR_OK;
    if (li < 0) {
      return fail(b, LAMINAR_ERR_SQL_UNKNOWN_COLUMN, a,
                  "no column '%s' in table function '%s'", a->name, b->lat_name);
    }
  } else {
    if (li < 0) return LAMINAR_OK;
    if (lm_schema_find(b->join_left, a->name) >= 0 ||
        lm_schema_find(b->join_right, a->name) >= 0) {
      return fail(b, LAMINAR_ERR_SQL_UNKNOWN_COLUMN, a,
                  "column '%s' is in the join and in table function '%s': qualify it "
                  "(%s.%s)",
                  a->name, b->lat_name, b->lat_alias ? b->lat_alias : b->lat_name,
                  a->name);
    }
  }
  int32_t col = b->lat_base + li;
  lm_expr* e = new_expr(b, LM_EXPR_COLUMN, b->input->fields[col].type);
  if (e == NULL) return NOMEM(b);
  e->column = col;
  *out = e;
  return LAMINAR_OK;
}

/* A column of the joined row: the left's columns, then the right's. */
static laminar_code bind_join_column(binder* b, const lm_ast_expr* a, lm_expr** out) {
  int32_t side, idx;
  LM_TRY(join_side_of_column(b, a, &side, &idx));
  int32_t col = side == 0 ? idx : b->join_left->ncols + idx;
  lm_expr* e = new_expr(b, LM_EXPR_COLUMN, b->input->fields[col].type);
  if (e == NULL) return NOMEM(b);
  e->column = col;
  *out = e;
  return LAMINAR_OK;
}

/* The joined columns `*` (all) or `t.*` (one side's) stands for: [lo, hi). */
static laminar_code join_star_range(binder* b, const lm_ast_expr* star, int32_t* lo,
                                    int32_t* hi) {
  int32_t nl = b->join_left->ncols;
  *lo = 0;
  *hi = nl + b->join_right->ncols;
  if (star->table == NULL) return LAMINAR_OK;
  int32_t side = join_table_side(b, star->table);
  if (side < 0) {
    return fail(b, LAMINAR_ERR_SQL_UNKNOWN_COLUMN, star, "unknown table '%s' in '%s.*'",
                star->table, star->table);
  }
  if (side == 0)
    *hi = nl;
  else
    *lo = nl;
  return LAMINAR_OK;
}

/* The sides expression `a` reads: bit 1 the left, bit 2 the right. */
static laminar_code join_sides(binder* b, const lm_ast_expr* a, int* out) {
  if (a == NULL) return LAMINAR_OK;
  if (a->kind == LM_AST_COLUMN) {
    int32_t side, idx;
    LM_TRY(join_side_of_column(b, a, &side, &idx));
    *out |= side == 0 ? 1 : 2;
    return LAMINAR_OK;
  }
  LM_TRY(join_sides(b, a->left, out));
  LM_TRY(join_sides(b, a->right, out));
  LM_TRY(join_sides(b, a->operand, out));
  LM_TRY(join_sides(b, a->else_expr, out));
  for (size_t i = 0; i < a->nlist; i++) LM_TRY(join_sides(b, a->list[i], out));
  for (size_t i = 0; i < a->nwhen; i++) {
    LM_TRY(join_sides(b, a->whens[i], out));
    LM_TRY(join_sides(b, a->thens[i], out));
  }
  for (size_t i = 0; i < a->nargs; i++) LM_TRY(join_sides(b, a->args[i], out));
  return LAMINAR_OK;
}

/* Bind `a` over one side's own columns (a key, the time). */
static laminar_code bind_join_side(binder* b, int32_t side, const lm_ast_expr* a,
                                   lm_expr** out) {
  binder s = {.stmt = b->stmt,
              .plan = b->plan,
              .err = b->err,
              .input = side == 0 ? b->join_left : b->join_right,
              .input_name = side == 0 ? b->input_name : b->right_name,
              .input_alias = side == 0 ? b->input_alias : b->right_alias};
  return bind(&s, a, MODE_ROW, out);
}

/* The conjuncts of `a` (split at AND) appended to list[*n] (at most cap). */
static laminar_code join_conjuncts(binder* b, const lm_ast_expr* a,
                                   const lm_ast_expr** list, int32_t* n, int32_t cap) {
  if (a->kind == LM_AST_BINARY && a->op == LM_OP_AND) {
    LM_TRY(join_conjuncts(b, a->left, list, n, cap));
    return join_conjuncts(b, a->right, list, n, cap);
  }
  if (*n == cap) {
    return fail(b, LAMINAR_ERR_SQL_LIMIT, a, "a join condition has more than %d parts",
                (int)cap);
  }
  list[(*n)++] = a;
  return LAMINAR_OK;
}

static lm_asof_cmp asof_cmp_of(lm_ast_op op, bool flipped) {
  switch (op) {
    case LM_OP_GE: return flipped ? LM_ASOF_LE : LM_ASOF_GE;
    case LM_OP_GT: return flipped ? LM_ASOF_LT : LM_ASOF_GT;
    case LM_OP_LE: return flipped ? LM_ASOF_GE : LM_ASOF_LE;
    default: return flipped ? LM_ASOF_GT : LM_ASOF_LT;
  }
}

/* `x.ts - y.ts <= INTERVAL ...` (or an integer of the time's unit): the
 * tolerance, with `*out_left_minus` whether it is left minus right. */
static bool tolerance_shape(binder* b, const lm_ast_expr* c, bool* out_left_minus,
                            const lm_ast_expr** out_bound) {
  if (c->kind != LM_AST_BINARY || c->op != LM_OP_LE) return false;
  const lm_ast_expr* d = c->left;
  if (d->kind != LM_AST_BINARY || d->op != LM_OP_SUB || d->left->kind != LM_AST_COLUMN ||
      d->right->kind != LM_AST_COLUMN)
    return false;
  int sl = 0, sr = 0;
  if (join_sides(b, d->left, &sl) != LAMINAR_OK ||
      join_sides(b, d->right, &sr) != LAMINAR_OK)
    return false;
  if (sl == sr) return false;
  *out_left_minus = sl == 1;
  *out_bound = c->right;
  return true;
}

/* The key equality `c` (la = ra, la over the left side, ra the right) as
 * keys[0][*n] = keys[1][*n], both of the type the two meet in (LDB-2001 when
 * they do not). */
static laminar_code bind_join_key(binder* b, const lm_ast_expr* c, const lm_ast_expr* la,
                                  const lm_ast_expr* ra, lm_expr** keys[2], int32_t* n) {
  lm_expr *l, *r;
  LM_TRY(bind_join_side(b, 0, la, &l));
  LM_TRY(bind_join_side(b, 1, ra, &r));
  lm_type t = common_type(l->type, r->type, is_str_lit(la), is_str_lit(ra));
  if (t == LM_TYPE_NULL || l->type == LM_TYPE_NULL) {
    return fail(b, LAMINAR_ERR_TYPE_MISMATCH, c, "%s key: cannot compare %s with %s",
                b->plan->join_kind, lm_type_name(l->type), lm_type_name(r->type));
  }
  LM_TRY(check_narrow_decimal(b, c, "a join key", t));
  LM_TRY(coerce(b, &l, t));
  LM_TRY(coerce(b, &r, t));
  keys[0][*n] = l;
  keys[1][(*n)++] = r;
  return LAMINAR_OK;
}

/* One side of a window join, `tumble(input, time, size)` or `hop(input,
 * time, size, slide)` over `in`: the branch's projection (the input's
 * columns, then window_start and window_end, of the time column's type, which
 * the join operator fills with the window each joined row is of: here they
 * are the time itself) into `side`, the columns the join reads of that side.
 * Both sides take one size, one slide and one time type. */
static laminar_code window_side(binder* b, const lm_ast_expr* w, const lm_schema* in,
                                lm_plan_branch* br, lm_schema* side) {
  lm_plan* plan = b->plan;
  bool hop = lm_streq_nocase(w->fname, "hop");
  if (!hop && !lm_streq_nocase(w->fname, "tumble")) {
    return fail(b, LAMINAR_ERR_SQL_UNSUPPORTED, w,
                "window joins over %s(...) are not supported: tumble(input, time, "
                "size) or hop(input, time, size, slide) on both sides",
                w->fname);
  }
  if (w->nargs != (hop ? 4u : 3u) || w->args[1]->kind != LM_AST_COLUMN) {
    return fail(b, LAMINAR_ERR_SQL_FUNCTION_ARGS, w,
                hop ? "hop in FROM takes (input, time column, INTERVAL size > 0, "
                      "INTERVAL slide > 0)"
                    : "tumble in FROM takes (input, time column, INTERVAL size > 0)");
  }
  int64_t size = 0, slide = 0;
  LM_TRY(window_interval(b, w, w->args[2], "size", &size));
  slide = size;
  if (hop) {
    LM_TRY(window_interval(b, w, w->args[3], "slide", &slide));
    if (1 + (size - 1) / slide > LM_MAX_WINDOWS_PER_ROW) {
      return fail(b, LAMINAR_ERR_SQL_UNSUPPORTED, w->args[3],
                  "hop() puts each row in %lld windows; at most %d are supported (make "
                  "the slide larger)",
                  (long long)(1 + (size - 1) / slide), LM_MAX_WINDOWS_PER_ROW);
    }
  }
  int32_t tc = lm_schema_find(in, w->args[1]->name);
  if (tc < 0) {
    return fail(b, LAMINAR_ERR_SQL_UNKNOWN_COLUMN, w->args[1], "no column '%s' in '%s'",
                w->args[1]->name, br->input);
  }
  lm_type tt = in->fields[tc].type;
  if (tt != LM_TYPE_INT64 && tt != LM_TYPE_TIMESTAMP) {
    return fail(b, LAMINAR_ERR_TYPE_MISMATCH, w->args[1],
                "%s() time column '%s' must be BIGINT (epoch ms) or TIMESTAMP, got %s",
                w->fname, w->args[1]->name, lm_type_name(tt));
  }
  lm_ijoin_spec* sp = &plan->ijoin;
  if (sp->window_ms != 0 && (sp->window_ms != size || sp->slide_ms != slide)) {
    return fail(b, LAMINAR_ERR_SQL_JOIN_CONDITION, w,
                "both sides of a window join take one window: size %lld and %lld ms, "
                "slide %lld and %lld ms",
                (long long)sp->window_ms, (long long)size, (long long)sp->slide_ms,
                (long long)slide);
  }
  if (sp->window_ms != 0 && sp->time_type != tt) {
    return fail(b, LAMINAR_ERR_TYPE_MISMATCH, w->args[1],
                "both sides of a window join take one time type: %s and %s",
                lm_type_name(sp->time_type), lm_type_name(tt));
  }
  sp->window_ms = size;
  sp->slide_ms = slide;
  sp->time_type = tt;
  lm_schema_init_empty(side);
  for (int32_t c = 0; c < in->ncols; c++)
    LM_TRY(add_field(b, side, in->fields[c].name, in->fields[c].type));
  LM_TRY(add_field(b, side, "window_start", tt));
  LM_TRY(add_field(b, side, "window_end", tt));
  int32_t n = side->ncols;
  br->exprs = lm_pool_alloc(&plan->pool, sizeof(lm_expr*) * (size_t)n);
  if (br->exprs == NULL) return NOMEM(b);
  br->nexprs = n;
  br->col_out = lm_pool_alloc(&plan->pool, sizeof(int32_t) * (size_t)in->ncols);
  if (br->col_out == NULL) return NOMEM(b);
  for (int32_t c = 0; c < in->ncols; c++) {
    lm_expr* e = new_expr(b, LM_EXPR_COLUMN, in->fields[c].type);
    if (e == NULL) return NOMEM(b);
    e->column = c;
    br->exprs[c] = e;
    br->col_out[c] = c;
  }
  br->exprs[n - 2] = br->exprs[tc];
  br->exprs[n - 1] = br->exprs[tc];
  return LAMINAR_OK;
}

/* A join whose left input is a changelog (its weight at column wcol of the
 * joined row, -1: none) emits each joined row with the left row's weight. */
static void pass_left_weight(binder* b, int32_t wcol) {
  b->pass_weight = wcol >= 0;
  b->weight_col = wcol;
}

/* The two inputs of a join (ASOF or not): two branches without operators,
 * the joined row (the left's columns then the right's) as union_schema,
 * which the select binds over; their schemas in in[0], in[1]. Side i may be
 * a changelog when bit i of `weights` is set (else LDB-1005; the right side
 * always when it is a table's, `changelog`); a changelog's weight is named
 * `$weight` in the joined row (no column reference or `*` reaches it), at
 * column wcol[i] of its side (-1: not a changelog). */
static laminar_code join_inputs(binder* b, const lm_ast_select* sel,
                                lm_plan_lookup_fn lookup, void* lookup_arg,
                                const char* changelog, unsigned weights,
                                const lm_schema** in, int32_t* wcol) {
  lm_plan* plan = b->plan;
  const lm_ast_join* jn = sel->join;
  bool src[2];
  const char* names[2] = {sel->from, changelog != NULL ? changelog : jn->right};
  int32_t lines[2] = {sel->from_line, jn->right_line};
  int32_t cols[2] = {sel->from_column, jn->right_column};
  for (int i = 0; i < 2; i++) {
    in[i] = lookup(lookup_arg, names[i], &src[i]);
    if (in[i] == NULL) {
      lm_error_set(b->err, LAMINAR_ERR_SQL_UNKNOWN_OBJECT,
                   "no source or stream named '%s' at line %d, column %d", names[i],
                   (int)lines[i], (int)cols[i]);
      lm_error_at(b->err, lines[i], cols[i]);
      lm_error_object(b->err, names[i], NULL);
      return LAMINAR_ERR_SQL_UNKNOWN_OBJECT;
    }
    bool is_log = lm_op_view_is_changelog(in[i]);
    wcol[i] = is_log ? in[i]->ncols - 1 : -1;
    if (is_log && !(i == 1 && changelog != NULL) && !(weights & (1u << i))) {
      lm_error_set(b->err, LAMINAR_ERR_SQL_UNSUPPORTED,
                   "'%s' at line %d, column %d is a changelog (it ends in _weight): %s",
                   names[i], (int)lines[i], (int)cols[i],
                   sel->join->asof ? "an ASOF JOIN reads a changelog on its left side "
                                     "only (a retracted right row would change matches "
                                     "already emitted)"
                                   : "this join does not read a changelog there");
      lm_error_at(b->err, lines[i], cols[i]);
      lm_error_object(b->err, names[i], NULL);
      return LAMINAR_ERR_SQL_UNSUPPORTED;
    }
  }
  plan->branches = lm_pool_alloc(&plan->pool, sizeof(lm_plan_branch) * 2);
  if (plan->branches == NULL) return NOMEM(b);
  memset(plan->branches, 0, sizeof(lm_plan_branch) * 2);
  const lm_ast_expr* windows[2] = {sel->from_window, jn->right_window};
  for (int i = 0; i < 2; i++) {
    lm_plan_branch* br = &plan->branches[i];
    br->input = lm_pool_copy(&plan->pool, names[i], strlen(names[i]) + 1);
    if (br->input == NULL) return NOMEM(b);
    br->input_is_source = src[i];
    br->line = lines[i];
    br->column = cols[i];
    br->in_ncols = in[i]->ncols;
    if (windows[i] != NULL) {
      LM_TRY(window_side(b, windows[i], in[i], br, &plan->join_side[i]));
      in[i] = &plan->join_side[i];
    }
    for (int32_t c = 0; c < in[i]->ncols; c++) {
      bool weight = c == wcol[i];
      LM_TRY(add_field(b, &plan->union_schema, weight ? "$weight" : in[i]->fields[c].name,
                       in[i]->fields[c].type));
    }
  }
  plan->nbranches = 2;
  size_t len = strlen(names[0]) + strlen(names[1]) + 3;
  plan->inputs = lm_pool_alloc(&plan->pool, len);
  if (plan->inputs == NULL) return NOMEM(b);
  snprintf(plan->inputs, len, "%s, %s", names[0], names[1]);
  plan->input = plan->branches[0].input;
  plan->input_is_source = src[0];
  plan->joined = true;
  plan->join_line = jn->line;
  plan->join_column = jn->column;
  b->input = &plan->union_schema;
  b->join_left = in[0];
  b->join_right = in[1];
  b->right_name = jn->right;
  b->right_alias = jn->right_alias;
  return LAMINAR_OK;
}

/* FROM left [alias] [LEFT] ASOF JOIN right [alias] MATCH_CONDITION(...) ON ...:
 * the join spec from the conditions: equalities across the sides are the
 * keys, one comparison of the two sides' time columns the ordering, and
 * `l.ts - r.ts <= INTERVAL` (`r.ts - l.ts` for <= / <) the tolerance. */
static laminar_code bind_join(binder* b, const lm_ast_select* sel,
                              lm_plan_lookup_fn lookup, void* lookup_arg) {
  lm_plan* plan = b->plan;
  const lm_ast_join* jn = sel->join;
  const lm_schema* in[2];
  plan->join_kind = jn->left_outer ? "LEFT ASOF JOIN" : "ASOF JOIN";
  if (sel->from_window != NULL) {
    return fail(b, LAMINAR_ERR_SQL_UNSUPPORTED, sel->from_window,
                "an ASOF JOIN reads its inputs by name, not through %s(...)",
                sel->from_window->fname);
  }
  int32_t wcol[2];
  LM_TRY(join_inputs(b, sel, lookup, lookup_arg, NULL, 1u, in, wcol));
  pass_left_weight(b, wcol[0]);
  lm_asof_spec* sp = &plan->join;
  sp->left_outer = jn->left_outer;
  sp->lcols = in[0]->ncols;
  sp->rcols = in[1]->ncols;
  enum { MAXC = 64 };
  const lm_ast_expr* conj[MAXC];
  int32_t n = 0;
  if (jn->match != NULL) LM_TRY(join_conjuncts(b, jn->match, conj, &n, MAXC));
  LM_TRY(join_conjuncts(b, jn->on, conj, &n, MAXC));
  lm_expr** keys[2];
  for (int i = 0; i < 2; i++) {
    keys[i] = lm_pool_alloc(&plan->pool, sizeof(lm_expr*) * MAXC);
    if (keys[i] == NULL) return NOMEM(b);
  }
  const lm_ast_expr* order = NULL;
  const lm_ast_expr* tol = NULL;
  bool tol_left_minus = false;
  const lm_ast_expr* tol_bound = NULL;
  for (int32_t i = 0; i < n; i++) {
    const lm_ast_expr* c = conj[i];
    if (tolerance_shape(b, c, &tol_left_minus, &tol_bound)) {
      if (tol != NULL) {
        return fail(b, LAMINAR_ERR_SQL_JOIN_CONDITION, c,
                    "ASOF JOIN takes one tolerance (l.ts - r.ts <= INTERVAL ...)");
      }
      tol = c;
      continue;
    }
    bool cmp = c->kind == LM_AST_BINARY &&
               (c->op == LM_OP_EQ || c->op == LM_OP_GE || c->op == LM_OP_GT ||
                c->op == LM_OP_LE || c->op == LM_OP_LT);
    int sl = 0, sr = 0;
    if (cmp) {
      LM_TRY(join_sides(b, c->left, &sl));
      LM_TRY(join_sides(b, c->right, &sr));
    }
    bool across = cmp && ((sl == 1 && sr == 2) || (sl == 2 && sr == 1));
    if (!across) {
      return fail(b, LAMINAR_ERR_SQL_JOIN_CONDITION, c,
                  "an ASOF JOIN condition compares the two sides: equalities "
                  "(l.k = r.k), one ordering comparison of their time columns (l.ts >= "
                  "r.ts, >, <=, <) and optionally a tolerance (l.ts - r.ts <= INTERVAL "
                  "...); filter one side with WHERE");
    }
    const lm_ast_expr* la = sl == 1 ? c->left : c->right;
    const lm_ast_expr* ra = sl == 1 ? c->right : c->left;
    if (c->op == LM_OP_EQ) {
      LM_TRY(bind_join_key(b, c, la, ra, keys, &sp->nkeys));
      continue;
    }
    if (order != NULL) {
      return fail(b, LAMINAR_ERR_SQL_JOIN_CONDITION, c,
                  "ASOF JOIN takes one ordering condition; the other comparison is at "
                  "line %d, column %d",
                  (int)order->line, (int)order->column);
    }
    order = c;
    lm_expr *l, *r;
    LM_TRY(bind_join_side(b, 0, la, &l));
    LM_TRY(bind_join_side(b, 1, ra, &r));
    if (l->kind != LM_EXPR_COLUMN || r->kind != LM_EXPR_COLUMN) {
      return fail(b, LAMINAR_ERR_SQL_JOIN_CONDITION, c,
                  "the ASOF JOIN ordering condition compares two time columns (l.ts >= "
                  "r.ts)");
    }
    for (int k = 0; k < 2; k++) {
      const lm_expr* e = k == 0 ? l : r;
      if (e->type != LM_TYPE_INT64 && e->type != LM_TYPE_TIMESTAMP) {
        return fail(
            b, LAMINAR_ERR_TYPE_MISMATCH, k == 0 ? la : ra,
            "the ASOF JOIN ordering column '%s' must be a time: BIGINT (epoch ms) "
            "or TIMESTAMP, got %s",
            (k == 0 ? la : ra)->name, lm_type_name(e->type));
      }
    }
    if (l->type != r->type) {
      return fail(b, LAMINAR_ERR_TYPE_MISMATCH, c,
                  "the ASOF JOIN ordering columns must have one type, got %s and %s",
                  lm_type_name(l->type), lm_type_name(r->type));
    }
    sp->cmp = asof_cmp_of(c->op, sl != 1);
    sp->ltime = l->column;
    sp->rtime = r->column;
    sp->time_type = l->type;
  }
  if (order == NULL) {
    lm_error_set(b->err, LAMINAR_ERR_SQL_JOIN_CONDITION,
                 "%s at line %d, column %d needs an ordering condition on the two time "
                 "columns: MATCH_CONDITION(l.ts >= r.ts) (or >, <=, <)",
                 plan->join_kind, (int)jn->line, (int)jn->column);
    lm_error_at(b->err, jn->line, jn->column);
    return LAMINAR_ERR_SQL_JOIN_CONDITION;
  }
  if (tol != NULL) {
    bool before = sp->cmp == LM_ASOF_GE || sp->cmp == LM_ASOF_GT;
    const lm_ast_expr* v = tol_bound;
    if (tol_left_minus != before) {
      return fail(b, LAMINAR_ERR_SQL_JOIN_CONDITION, tol,
                  "the tolerance bounds the distance on the ordering's side: %s",
                  before ? "l.ts - r.ts <= INTERVAL ..." : "r.ts - l.ts <= INTERVAL ...");
    }
    if (v->kind != LM_AST_LITERAL ||
        (v->lit != LM_LIT_INTERVAL && v->lit != LM_LIT_INT) || v->i < 0) {
      return fail(b, LAMINAR_ERR_SQL_JOIN_CONDITION, v,
                  "the ASOF JOIN tolerance must be an INTERVAL literal of zero or more");
    }
    sp->has_tolerance = true;
    /* INTERVALs are ms; a TIMESTAMP's unit is µs. */
    sp->tolerance = v->i;
    if (sp->time_type == LM_TYPE_TIMESTAMP && v->lit == LM_LIT_INTERVAL) {
      if (__builtin_mul_overflow(v->i, (int64_t)1000, &sp->tolerance))
        sp->tolerance = INT64_MAX;
    }
  }
  sp->lkeys = (const lm_expr* const*)keys[0];
  sp->rkeys = (const lm_expr* const*)keys[1];
  return LAMINAR_OK;
}

/* ---- interval joins: equality keys, a time bound, a residual ---------------------- */

/* `col`, `col + k`, `col - k` or `k + col`, k an INTERVAL or integer literal:
 * the column, its side (0 left, 1 right) and the offset k (signed). */
typedef struct time_term {
  const lm_ast_expr* col;
  int32_t side;
  int64_t off;
  bool off_interval; /* k is an INTERVAL (ms), else in the time column's unit */
} time_term;

static bool is_offset_lit(const lm_ast_expr* e) {
  return e->kind == LM_AST_LITERAL && (e->lit == LM_LIT_INTERVAL || e->lit == LM_LIT_INT);
}

static bool time_term_of(binder* b, const lm_ast_expr* e, time_term* out) {
  const lm_ast_expr* lit = NULL;
  bool minus = false;
  if (e->kind == LM_AST_COLUMN) {
    out->col = e;
  } else if (e->kind == LM_AST_BINARY && (e->op == LM_OP_ADD || e->op == LM_OP_SUB) &&
             e->left->kind == LM_AST_COLUMN && is_offset_lit(e->right)) {
    out->col = e->left;
    lit = e->right;
    minus = e->op == LM_OP_SUB;
  } else if (e->kind == LM_AST_BINARY && e->op == LM_OP_ADD &&
             e->right->kind == LM_AST_COLUMN && is_offset_lit(e->left)) {
    out->col = e->right;
    lit = e->left;
  } else {
    return false;
  }
  int sides = 0;
  if (join_sides(b, out->col, &sides) != LAMINAR_OK) return false;
  out->side = sides == 1 ? 0 : 1;
  out->off = lit == NULL ? 0 : minus ? -lit->i : lit->i;
  out->off_interval = lit != NULL && lit->lit == LM_LIT_INTERVAL;
  return true;
}

/* What the conjuncts of an interval join's ON bound: right time - left time
 * in [lo, hi] (the time column's unit), over one pair of time columns. */
typedef struct time_bound {
  bool has_lo, has_hi;
  int64_t lo, hi;
  const lm_expr *lt, *rt; /* the two time columns (bound), NULL before the first */
  const lm_ast_expr* first;
} time_bound;

/* `x op y` (op >=, >, <=, <) as a bound on the time difference when x and y
 * are time terms (time_term_of) of the two sides' time columns; *out_used
 * false (and nothing changed) when it is not one. */
static laminar_code add_time_bound(binder* b, const lm_ast_expr* at, const lm_ast_expr* x,
                                   lm_ast_op op, const lm_ast_expr* y, time_bound* tb,
                                   bool* out_used) {
  *out_used = false;
  time_term tx, ty;
  if (!time_term_of(b, x, &tx) || !time_term_of(b, y, &ty) || tx.side == ty.side)
    return LAMINAR_OK;
  if (tx.side == 1) { /* left term first: l + cx op r + cy */
    time_term s = tx;
    tx = ty;
    ty = s;
    op = op == LM_OP_GE   ? LM_OP_LE
         : op == LM_OP_GT ? LM_OP_LT
         : op == LM_OP_LE ? LM_OP_GE
                          : LM_OP_GT;
  }
  lm_expr *l, *r;
  LM_TRY(bind_join_side(b, 0, tx.col, &l));
  LM_TRY(bind_join_side(b, 1, ty.col, &r));
  bool timeish = (l->type == LM_TYPE_INT64 || l->type == LM_TYPE_TIMESTAMP) &&
                 (r->type == LM_TYPE_INT64 || r->type == LM_TYPE_TIMESTAMP);
  if (!timeish) return LAMINAR_OK; /* not times: a residual condition */
  if (l->type != r->type) {
    return fail(b, LAMINAR_ERR_TYPE_MISMATCH, at,
                "the %s time columns must have one type, got %s and %s",
                b->plan->join_kind, lm_type_name(l->type), lm_type_name(r->type));
  }
  if (tb->lt != NULL && (tb->lt->column != l->column || tb->rt->column != r->column)) {
    return fail(b, LAMINAR_ERR_SQL_JOIN_CONDITION, at,
                "the time bounds of a %s compare one pair of time columns; the first "
                "is at line %d, column %d",
                b->plan->join_kind, (int)tb->first->line, (int)tb->first->column);
  }
  if (tb->lt == NULL) {
    tb->lt = l;
    tb->rt = r;
    tb->first = at;
  }
  /* INTERVALs are ms; a TIMESTAMP's unit is µs. */
  int64_t cx = tx.off, cy = ty.off, d;
  if (l->type == LM_TYPE_TIMESTAMP) {
    if ((tx.off_interval && __builtin_mul_overflow(cx, (int64_t)1000, &cx)) ||
        (ty.off_interval && __builtin_mul_overflow(cy, (int64_t)1000, &cy)))
      return fail(b, LAMINAR_ERR_SQL_JOIN_CONDITION, at, "the time bound is too large");
  }
  if (__builtin_sub_overflow(cx, cy, &d) || d == INT64_MIN || d == INT64_MAX)
    return fail(b, LAMINAR_ERR_SQL_JOIN_CONDITION, at, "the time bound is too large");
  /* l + cx op r + cy  <=>  r - l op' cx - cy */
  if (op == LM_OP_GT) d -= 1; /* integers: r - l < d is r - l <= d - 1 */
  if (op == LM_OP_LT) d += 1;
  if (op == LM_OP_GE || op == LM_OP_GT) {
    if (!tb->has_hi || d < tb->hi) tb->hi = d;
    tb->has_hi = true;
  } else {
    if (!tb->has_lo || d > tb->lo) tb->lo = d;
    tb->has_lo = true;
  }
  *out_used = true;
  return LAMINAR_OK;
}

/* Conjunct `c` as a time bound (a comparison or a BETWEEN of time terms of
 * the two sides), *out_used false when it is not one. */
static laminar_code time_bound_of(binder* b, const lm_ast_expr* c, time_bound* tb,
                                  bool* out_used) {
  *out_used = false;
  if (c->kind == LM_AST_BINARY &&
      (c->op == LM_OP_GE || c->op == LM_OP_GT || c->op == LM_OP_LE || c->op == LM_OP_LT))
    return add_time_bound(b, c, c->left, c->op, c->right, tb, out_used);
  if (c->kind != LM_AST_BETWEEN || c->negated || c->nlist != 2) return LAMINAR_OK;
  /* x BETWEEN y AND z: both halves bounds, or the whole a residual */
  time_term tx, ty, tz;
  if (!time_term_of(b, c->left, &tx) || !time_term_of(b, c->list[0], &ty) ||
      !time_term_of(b, c->list[1], &tz) || ty.side == tx.side || tz.side == tx.side)
    return LAMINAR_OK;
  time_bound keep = *tb;
  bool lo_used, hi_used;
  LM_TRY(add_time_bound(b, c, c->left, LM_OP_GE, c->list[0], tb, &lo_used));
  LM_TRY(add_time_bound(b, c, c->left, LM_OP_LE, c->list[1], tb, &hi_used));
  if (!lo_used || !hi_used) {
    *tb = keep;
    return LAMINAR_OK;
  }
  *out_used = true;
  return LAMINAR_OK;
}

/* Whether `e` reads column c or c + 1 (a window join side's window_start,
 * window_end). */
static bool reads_window(const lm_expr* e, int32_t c) {
  if (e->kind == LM_EXPR_COLUMN) return e->column == c || e->column == c + 1;
  for (int32_t i = 0; e->kind == LM_EXPR_CALL && i < e->nargs; i++)
    if (reads_window(e->args[i], c)) return true;
  return false;
}

/* A window join's ON refused with `code` at the JOIN: "a window join at
 * line:column<before> l.window_start = r.window_start<after>". */
static laminar_code window_join_fail(binder* b, const lm_ast_select* sel,
                                     laminar_code code, const char* before,
                                     const char* after) {
  lm_error_set(b->err, code,
               "a window join at line %d, column %d%s %s.window_start = "
               "%s.window_start%s",
               (int)sel->join->line, (int)sel->join->column, before,
               b->input_alias ? b->input_alias : b->input_name,
               b->right_alias ? b->right_alias : b->right_name, after);
  lm_error_at(b->err, sel->join->line, sel->join->column);
  return code;
}

/* A window join's spec past its keys: the time columns its tumble() or hop()
 * calls name, and a key `l.window_start = r.window_start` it must have (rows
 * of one window meet; LDB-1009 without). The operator joins window by window
 * itself, so that key (and `l.window_end = r.window_end`) leave the keys;
 * another key over a window column is LDB-1005. */
static laminar_code window_join_keys(binder* b, const lm_ast_select* sel,
                                     const lm_schema* const* in, lm_expr** keys[2]) {
  lm_ijoin_spec* sp = &b->plan->ijoin;
  const lm_ast_expr* w[2] = {sel->from_window, sel->join->right_window};
  int32_t ws[2];
  for (int i = 0; i < 2; i++) ws[i] = in[i]->ncols - 2;
  bool keyed = false;
  int32_t n = 0;
  for (int32_t k = 0; k < sp->nkeys; k++) {
    const lm_expr *l = sp->lkeys[k], *r = sp->rkeys[k];
    bool cols = l->kind == LM_EXPR_COLUMN && r->kind == LM_EXPR_COLUMN;
    bool start = cols && l->column == ws[0] && r->column == ws[1];
    bool end = cols && l->column == ws[0] + 1 && r->column == ws[1] + 1;
    keyed = keyed || start;
    if (start || end) continue;
    if (reads_window(l, ws[0]) || reads_window(r, ws[1])) {
      return window_join_fail(b, sel, LAMINAR_ERR_SQL_UNSUPPORTED,
                              ": a key over window_start or window_end other than",
                              " is not supported");
    }
    keys[0][n] = keys[0][k];
    keys[1][n++] = keys[1][k];
  }
  if (!keyed) {
    return window_join_fail(b, sel, LAMINAR_ERR_SQL_JOIN_CONDITION,
                            " joins the rows of one window: ON needs", "");
  }
  sp->nkeys = n;
  sp->lwin = ws[0];
  sp->rwin = ws[1];
  sp->ltime = lm_schema_find(in[0], w[0]->args[1]->name);
  sp->rtime = lm_schema_find(in[1], w[1]->args[1]->name);
  return LAMINAR_OK;
}

/* The statement's WITH (state_ttl = ...) in milliseconds (an INTERVAL or a
 * whole number literal), 0 when it has none; the option table checks it. */
static int64_t stmt_state_ttl(const lm_stmt* stmt) {
  for (size_t i = 0; i < stmt->noptions; i++) {
    const lm_ast_expr* v = stmt->options[i].value;
    if (lm_streq_nocase(stmt->options[i].key, "state_ttl") && v->kind == LM_AST_LITERAL &&
        (v->lit == LM_LIT_INTERVAL || v->lit == LM_LIT_INT) && v->i > 0)
      return v->i;
  }
  return 0;
}

/* FROM left [alias] [INNER | LEFT | RIGHT | FULL] JOIN right [alias] ON ...:
 * the ON's conjuncts split into equalities across the sides (the keys),
 * comparisons of the two sides' time columns that bound their difference
 * (l.ts >= r.ts - INTERVAL ..., r.ts BETWEEN l.ts - ... AND l.ts + ...), and
 * the rest, a residual filter over the joined row. Without a bound on both
 * ends the join could hold every row forever: LDB-1010. */
static laminar_code bind_interval_join(binder* b, const lm_ast_select* sel,
                                       lm_plan_lookup_fn lookup, void* lookup_arg) {
  lm_plan* plan = b->plan;
  const lm_ast_join* jn = sel->join;
  static const char* const kinds[] = {"JOIN", "LEFT JOIN", "RIGHT JOIN", "FULL JOIN"};
  plan->join_kind = kinds[jn->type];
  bool windowed = sel->from_window != NULL || jn->right_window != NULL;
  if (windowed && (sel->from_window == NULL || jn->right_window == NULL)) {
    const lm_ast_expr* w = sel->from_window != NULL ? sel->from_window : jn->right_window;
    return fail(b, LAMINAR_ERR_SQL_UNSUPPORTED, w,
                "a window join takes a window on both sides: FROM tumble(a, ts, size) "
                "JOIN tumble(b, ts, size) ON a.window_start = b.window_start ...");
  }
  const lm_schema* in[2];
  int32_t wcol[2];
  LM_TRY(join_inputs(b, sel, lookup, lookup_arg, NULL, 3u, in, wcol));
  plan->interval = true;
  lm_ijoin_spec* sp = &plan->ijoin;
  /* Over a changelog: the joined row's weight, the product of its sides',
   * ends the row, so the select reads a changelog. */
  sp->lweight = wcol[0];
  sp->rweight = wcol[1];
  sp->weighted = wcol[0] >= 0 || wcol[1] >= 0;
  if (sp->weighted)
    LM_TRY(add_field(b, &plan->union_schema, LM_WEIGHT_COLUMN, LM_TYPE_INT64));
  sp->keep_left = jn->type == LM_JOIN_LEFT || jn->type == LM_JOIN_FULL;
  sp->keep_right = jn->type == LM_JOIN_RIGHT || jn->type == LM_JOIN_FULL;
  sp->lcols = in[0]->ncols;
  sp->rcols = in[1]->ncols;
  enum { MAXC = 64 };
  const lm_ast_expr* conj[MAXC];
  int32_t n = 0;
  LM_TRY(join_conjuncts(b, jn->on, conj, &n, MAXC));
  lm_expr** keys[2];
  for (int i = 0; i < 2; i++) {
    keys[i] = lm_pool_alloc(&plan->pool, sizeof(lm_expr*) * MAXC);
    if (keys[i] == NULL) return NOMEM(b);
  }
  sp->lkeys = (const lm_expr* const*)keys[0];
  sp->rkeys = (const lm_expr* const*)keys[1];
  time_bound tb = {0};
  for (int32_t i = 0; i < n; i++) {
    const lm_ast_expr* c = conj[i];
    if (c->kind == LM_AST_BINARY && c->op == LM_OP_EQ) {
      int sl = 0, sr = 0;
      LM_TRY(join_sides(b, c->left, &sl));
      LM_TRY(join_sides(b, c->right, &sr));
      if ((sl == 1 && sr == 2) || (sl == 2 && sr == 1)) {
        LM_TRY(bind_join_key(b, c, sl == 1 ? c->left : c->right,
                             sl == 1 ? c->right : c->left, keys, &sp->nkeys));
        continue;
      }
    }
    bool used = false;
    if (!windowed) LM_TRY(time_bound_of(b, c, &tb, &used));
    if (used) continue;
    lm_expr* e;
    if (contains_agg(b->funcs, c)) {
      return fail(b, LAMINAR_ERR_SQL_GROUPING, c, "aggregates are not allowed in ON");
    }
    LM_TRY(bind(b, c, MODE_ROW, &e));
    if (e->type != LM_TYPE_BOOL && e->type != LM_TYPE_NULL) {
      return fail(b, LAMINAR_ERR_TYPE_MISMATCH, c, "ON needs a BOOLEAN, got %s",
                  lm_type_name(e->type));
    }
    LM_TRY(coerce(b, &e, LM_TYPE_BOOL));
    if (sp->residual != NULL) {
      lm_expr*and = new_call(b, LM_XOP_AND, LM_TYPE_BOOL, 2);
      if (and == NULL) return NOMEM(b);
      and->args[0] = (lm_expr*)sp->residual;
      and->args[1] = e;
      e = and;
    }
    sp->residual = e;
  }
  if (windowed) return window_join_keys(b, sel, in, keys);
  if (!tb.has_lo && !tb.has_hi && (sp->ttl_ms = stmt_state_ttl(b->stmt)) > 0) {
    /* bounded by the TTL over the watermark columns, which the catalog
     * knows (lm_db_join_ttl) */
    sp->ltime = sp->rtime = -1;
    sp->time_type = LM_TYPE_INT64;
    return LAMINAR_OK;
  }
  if (!tb.has_lo || !tb.has_hi) {
    lm_error_set(b->err, LAMINAR_ERR_SQL_UNBOUNDED_JOIN,
                 "%s at line %d, column %d joins two unbounded inputs without a time "
                 "bound on %s: it would hold every row forever. Bound the time "
                 "difference on both ends (ON ... AND r.ts BETWEEN l.ts - INTERVAL "
                 "'1' SECOND AND l.ts + INTERVAL '1' SECOND), use an ASOF JOIN, or "
                 "(with no bound at all) let rows go after a time: WITH (state_ttl = "
                 "INTERVAL '1' HOUR)",
                 plan->join_kind, (int)jn->line, (int)jn->column,
                 !tb.has_lo && !tb.has_hi ? "either end"
                 : tb.has_lo              ? "its upper end"
                                          : "its lower end");
    lm_error_at(b->err, jn->line, jn->column);
    return LAMINAR_ERR_SQL_UNBOUNDED_JOIN;
  }
  sp->lo = tb.lo;
  sp->hi = tb.hi;
  sp->ltime = tb.lt->column;
  sp->rtime = tb.rt->column;
  sp->time_type = tb.lt->type;
  return LAMINAR_OK;
}

/* ---- lookup join: a stream with a table -------------------------------------------- */

/* An error at line:column of the statement (no expression to point at). */
static laminar_code fail_pos(binder* b, laminar_code code, int32_t line, int32_t column,
                             const char* object, const char* msg) {
  lm_error_set(b->err, code, "%s at line %d, column %d", msg, (int)line, (int)column);
  lm_error_at(b->err, line, column);
  lm_error_object(b->err, object, NULL);
  return code;
}

/* The ON of a join with table `table` (named by the join, primary key
 * tk): exactly one `input expression = t.key` per key column, in any order,
 * joined by AND (LDB-1021 otherwise). Out: per key column k, the input's
 * expression (bound over the left side) in lkeys[k] (nkeys of them, in the
 * pool). */
static laminar_code bind_table_keys(binder* b, const lm_ast_join* jn,
                                    const lm_schema* table, const lm_plan_table* tk,
                                    lm_expr*** out_lkeys) {
  lm_plan* plan = b->plan;
  const int32_t* keys = tk->keys;
  int32_t nkeys = tk->nkeys;
  enum { MAXC = 64 };
  const lm_ast_expr* conj[MAXC];
  int32_t n = 0;
  LM_TRY(join_conjuncts(b, jn->on, conj, &n, MAXC));
  lm_expr** lkeys = lm_pool_alloc(&plan->pool, sizeof(lm_expr*) * (size_t)(nkeys + 1));
  if (lkeys == NULL) return NOMEM(b);
  memset(lkeys, 0, sizeof(lm_expr*) * (size_t)(nkeys + 1));
  const char* what = jn->as_of != NULL ? "temporal" : "lookup";
  char key_text[256] = "";
  for (int32_t k = 0; k < nkeys; k++) {
    size_t used = strlen(key_text);
    snprintf(key_text + used, sizeof key_text - used, "%s%s", k ? ", " : "",
             table->fields[keys[k]].name);
  }
  for (int32_t i = 0; i < n; i++) {
    const lm_ast_expr* c = conj[i];
    int sl = 0, sr = 0;
    bool eq = c->kind == LM_AST_BINARY && c->op == LM_OP_EQ;
    if (eq) {
      LM_TRY(join_sides(b, c->left, &sl));
      LM_TRY(join_sides(b, c->right, &sr));
    }
    /* The table's side: one bare column of it; the other side the input's. */
    const lm_ast_expr* ta = sl == 2 ? c->left : c->right;
    const lm_ast_expr* la = sl == 2 ? c->right : c->left;
    int32_t side = -1, col = -1, k = 0;
    if (eq && ((sl == 2 && sr == 1) || (sl == 1 && sr == 2)) && ta->kind == LM_AST_COLUMN)
      LM_TRY(join_side_of_column(b, ta, &side, &col));
    while (side == 1 && k < nkeys && keys[k] != col) k++;
    if (side != 1 || k == nkeys || lkeys[k] != NULL) {
      return fail(b, LAMINAR_ERR_SQL_LOOKUP_KEY, c,
                  "a %s join's ON is `input_column = %s.key` once for each column of "
                  "the table's primary key (%s), joined by AND%s",
                  what, jn->right, key_text,
                  side == 1 && k == nkeys ? ": this column is not in the key"
                  : side == 1             ? ": this key column is given twice"
                                          : "");
    }
    lm_expr* l;
    LM_TRY(bind_join_side(b, 0, la, &l));
    lm_type want = table->fields[col].type;
    if (l->type != want && l->type != LM_TYPE_NULL) {
      return fail(b, LAMINAR_ERR_TYPE_MISMATCH, c,
                  "%s join key: %s cannot match the table's key column '%s' (%s)", what,
                  lm_type_name(l->type), table->fields[col].name, lm_type_name(want));
    }
    lkeys[k] = l;
  }
  for (int32_t k = 0; k < nkeys; k++) {
    if (lkeys[k] != NULL) continue;
    return fail(b, LAMINAR_ERR_SQL_LOOKUP_KEY, jn->on,
                "the ON of a %s join fixes every column of %s's primary key (%s): "
                "'%s' is missing",
                what, jn->right, key_text, table->fields[keys[k]].name);
  }
  *out_lkeys = lkeys;
  return LAMINAR_OK;
}

/* The input of a join with a table (FROM s): its schema, or LDB-1002. */
static laminar_code table_join_input(binder* b, const lm_ast_select* sel,
                                     lm_plan_lookup_fn lookup, void* lookup_arg,
                                     const lm_schema** out, bool* out_src) {
  *out = lookup(lookup_arg, sel->from, out_src);
  if (*out == NULL) return unknown_input(sel, b->err);
  return LAMINAR_OK;
}

/* Names in a join of input `left` with `table` (the statement's join's
 * right side) bind over the joined row, union_schema. */
static void table_join_scope(binder* b, const lm_schema* left, const lm_schema* table) {
  b->input = &b->plan->union_schema;
  b->join_left = left;
  b->join_right = table;
  b->right_name = b->stmt->select->join->right;
  b->right_alias = b->stmt->select->join->right_alias;
}

/* The one branch of a plan that joins FROM's input `left` (s) with what is
 * not a stream (a table, a table function): s read as it is, and s's columns
 * as the first of union_schema (a changelog's weight named `$weight`, as
 * join_inputs names it). */
static laminar_code joined_branch(binder* b, const lm_ast_select* sel,
                                  const lm_schema* left, bool src) {
  lm_plan* plan = b->plan;
  plan->branches = lm_pool_alloc(&plan->pool, sizeof(lm_plan_branch));
  plan->input = lm_pool_copy(&plan->pool, sel->from, strlen(sel->from) + 1);
  if (plan->branches == NULL || plan->input == NULL) return NOMEM(b);
  plan->branches[0] = (lm_plan_branch){.input = plan->input,
                                       .input_is_source = src,
                                       .line = sel->from_line,
                                       .column = sel->from_column,
                                       .in_ncols = left->ncols};
  plan->nbranches = 1;
  plan->input_is_source = src;
  int32_t wcol = lm_op_view_is_changelog(left) ? left->ncols - 1 : -1;
  for (int32_t c = 0; c < left->ncols; c++) {
    LM_TRY(add_field(b, &plan->union_schema, c == wcol ? "$weight" : left->fields[c].name,
                     left->fields[c].type));
  }
  return LAMINAR_OK;
}

/* FROM s [alias] [INNER | LEFT [OUTER]] JOIN t [alias] ON s.x = t.k [AND ...]
 * with t a table (columns `table`, key tk): one branch (s) without
 * operators, the joined row (s's columns then t's) as union_schema, the
 * lookup spec from ON (bind_table_keys). */
static laminar_code bind_lookup_join(binder* b, const lm_ast_select* sel,
                                     lm_plan_lookup_fn lookup, void* lookup_arg,
                                     const lm_schema* table, const lm_plan_table* tk) {
  lm_plan* plan = b->plan;
  const lm_ast_join* jn = sel->join;
  bool src = false;
  const lm_schema* left;
  LM_TRY(table_join_input(b, sel, lookup, lookup_arg, &left, &src));
  plan->lookup_table = lm_pool_copy(&plan->pool, jn->right, strlen(jn->right) + 1);
  if (plan->lookup_table == NULL) return NOMEM(b);
  LM_TRY(joined_branch(b, sel, left, src));
  for (int32_t c = 0; c < table->ncols; c++)
    LM_TRY(
        add_field(b, &plan->union_schema, table->fields[c].name, table->fields[c].type));
  plan->lookup = true;
  table_join_scope(b, left, table);
  pass_left_weight(b, lm_op_view_is_changelog(left) ? left->ncols - 1 : -1);
  lm_expr** lkeys;
  LM_TRY(bind_table_keys(b, jn, table, tk, &lkeys));
  plan->lk = (lm_lookup_spec){.left_outer = jn->left_outer,
                              .lcols = left->ncols,
                              .rcols = table->ncols,
                              .nkeys = tk->nkeys,
                              .lkeys = (const lm_expr* const*)lkeys};
  return LAMINAR_OK;
}

/* FROM s [alias] [INNER | LEFT] JOIN t FOR SYSTEM_TIME AS OF s.ts [alias] ON
 * s.x = t.k ... (t a table with an event time): an ASOF join (>=) of s with
 * t's changelog source, keyed by t's primary key, whose deletes end a
 * version (lm_asof_spec.tombstones). Two branches (s, the changelog); the
 * joined row is s's columns, t's, then the changelog weight (named so that
 * no column reference or `*` reaches it). A table without a time column and
 * WATERMARK, or an AS OF that is not a time column of s: LDB-1009. */
static laminar_code bind_temporal_join(binder* b, const lm_ast_select* sel,
                                       lm_plan_lookup_fn lookup, void* lookup_arg,
                                       const lm_schema* table, const lm_plan_table* tk) {
  lm_plan* plan = b->plan;
  const lm_ast_join* jn = sel->join;
  plan->join_kind = jn->left_outer ? "LEFT TEMPORAL JOIN" : "TEMPORAL JOIN";
  if (tk->changes == NULL) {
    return fail(b, LAMINAR_ERR_SQL_JOIN_CONDITION, jn->as_of,
                "table '%s' is fed by its query (CREATE TABLE ... AS SELECT) and keeps "
                "no versions: its writes are its query's changelog, whose deletes carry "
                "the deleted row's values and no time of their own, so the version valid "
                "at a row's time would depend on when the query ran, not on the data. "
                "FOR SYSTEM_TIME AS OF does not join it (a lookup join, without FOR "
                "SYSTEM_TIME AS OF, joins its current rows; a table with a time column "
                "and WATERMARK, written with upserts and deletes, keeps versions)",
                jn->right);
  }
  if (tk->time_col < 0) {
    return fail(b, LAMINAR_ERR_SQL_JOIN_CONDITION, jn->as_of,
                "FOR SYSTEM_TIME AS OF joins the version of %s valid at each row's time, "
                "and table '%s' has no event time: declare it with a time column and "
                "WATERMARK FOR it (CREATE TABLE %s (..., ts TIMESTAMP, WATERMARK FOR ts "
                "AS ts - INTERVAL '1' SECOND, PRIMARY KEY (...)))",
                jn->right, jn->right, jn->right);
  }
  const lm_schema* in[2];
  int32_t wcol[2];
  LM_TRY(join_inputs(b, sel, lookup, lookup_arg, tk->changes, 1u, in, wcol));
  pass_left_weight(b, wcol[0]);
  if (in[1]->ncols != table->ncols + 1) {
    return fail(b, LAMINAR_ERR_INTERNAL, jn->as_of, "table '%s' has no changelog source",
                jn->right);
  }
  b->join_right = table;
  plan->temporal_table = lm_pool_copy(&plan->pool, jn->right, strlen(jn->right) + 1);
  size_t len = strlen(sel->from) + strlen(jn->right) + 3;
  plan->inputs = lm_pool_alloc(&plan->pool, len); /* SHOW STREAMS: the table's name */
  if (plan->temporal_table == NULL || plan->inputs == NULL) return NOMEM(b);
  snprintf(plan->inputs, len, "%s, %s", sel->from, jn->right);

  /* AS OF: a time column of the input, of the table's time type. */
  int sides = 0;
  LM_TRY(join_sides(b, jn->as_of, &sides));
  lm_expr* l = NULL;
  if (sides == 1 && jn->as_of->kind == LM_AST_COLUMN)
    LM_TRY(bind_join_side(b, 0, jn->as_of, &l));
  lm_type tt = table->fields[tk->time_col].type;
  if (l == NULL || (l->type != LM_TYPE_INT64 && l->type != LM_TYPE_TIMESTAMP)) {
    return fail(b, LAMINAR_ERR_SQL_JOIN_CONDITION, jn->as_of,
                "FOR SYSTEM_TIME AS OF takes a time column of '%s' (BIGINT epoch ms or "
                "TIMESTAMP, e.g. %s.ts): the version of %s valid at that time is joined",
                sel->from, sel->from_alias ? sel->from_alias : sel->from, jn->right);
  }
  if (l->type != tt) {
    return fail(b, LAMINAR_ERR_TYPE_MISMATCH, jn->as_of,
                "FOR SYSTEM_TIME AS OF: '%s' is %s, table '%s''s time column '%s' is %s",
                jn->as_of->name, lm_type_name(l->type), jn->right,
                table->fields[tk->time_col].name, lm_type_name(tt));
  }
  lm_expr** lkeys;
  LM_TRY(bind_table_keys(b, jn, table, tk, &lkeys));
  lm_expr** rkeys =
      lm_pool_alloc(&plan->pool, sizeof(lm_expr*) * (size_t)(tk->nkeys + 1));
  if (rkeys == NULL) return NOMEM(b);
  for (int32_t k = 0; k < tk->nkeys; k++) {
    rkeys[k] = new_expr(b, LM_EXPR_COLUMN, table->fields[tk->keys[k]].type);
    if (rkeys[k] == NULL) return NOMEM(b);
    rkeys[k]->column = tk->keys[k];
    if (lkeys[k]->type == LM_TYPE_NULL) LM_TRY(coerce(b, &lkeys[k], rkeys[k]->type));
  }
  plan->join = (lm_asof_spec){.left_outer = jn->left_outer,
                              .cmp = LM_ASOF_GE,
                              .nkeys = tk->nkeys,
                              .lkeys = (const lm_expr* const*)lkeys,
                              .rkeys = (const lm_expr* const*)rkeys,
                              .ltime = l->column,
                              .rtime = tk->time_col,
                              .time_type = tt,
                              .lcols = in[0]->ncols,
                              .rcols = in[1]->ncols,
                              .tombstones = true};
  return LAMINAR_OK;
}

/* ---- table functions: FROM s, f(s.x) ---------------------------------------------- */

/* The table function a FROM call names, with the arguments to bind: a
 * user-defined one (a new reference), else a built-in (a new object);
 * `unnest(string_split(s, sep))` is the built-in string_split_to_rows(s, sep)
 * with its column named unnest, as DuckDB names it. */
static laminar_code lateral_function(binder* b, const lm_ast_expr* call, lm_udf** out,
                                     lm_ast_expr* const** out_args, size_t* out_nargs) {
  *out = NULL;
  *out_args = call->args;
  *out_nargs = call->nargs;
  const char* name = call->fname;
  const char* column = NULL;
  if (lm_streq_nocase(name, "unnest")) {
    const lm_ast_expr* in = call->nargs == 1 ? call->args[0] : NULL;
    if (in == NULL || in->kind != LM_AST_FUNCTION ||
        !lm_streq_nocase(in->fname, "string_split") || in->nargs != 2) {
      return fail(b, LAMINAR_ERR_SQL_UNSUPPORTED, call,
                  "unnest() in FROM takes string_split(s, sep) (there is no LIST type "
                  "yet): FROM t, unnest(string_split(t.s, ','))");
    }
    name = "string_split_to_rows";
    column = "unnest";
    *out_args = in->args;
    *out_nargs = in->nargs;
  }
  lm_udf* f =
      b->funcs != NULL && column == NULL ? lm_udf_list_find(b->funcs, name) : NULL;
  if (f != NULL && !lm_udf_is_table(f)) {
    return fail(b, LAMINAR_ERR_SQL_UNKNOWN_FUNCTION, call,
                "'%s' is not a table function (it returns one value per row: call it in "
                "the select list)",
                lm_udf_name(f));
  }
  if (f != NULL) {
    lm_udf_ref(f);
    *out = f;
    return LAMINAR_OK;
  }
  bool known;
  f = lm_udtf_builtin(name, (int32_t)*out_nargs, column, &known);
  if (f != NULL) {
    *out = f;
    return LAMINAR_OK;
  }
  if (!known) {
    return fail(b, LAMINAR_ERR_SQL_UNKNOWN_FUNCTION, call,
                "unknown table function '%s' (the built-ins are generate_series, range, "
                "string_split_to_rows and unnest(string_split(...)); a user-defined one "
                "must be registered before a statement that calls it is run or "
                "recovered)",
                name);
  }
  bool split = lm_streq_nocase(name, "string_split_to_rows");
  return fail(b, LAMINAR_ERR_SQL_FUNCTION_ARGS, call,
              "%s() takes %s arguments, got %d (usage: %s)", call->fname,
              split ? "2" : "2 or 3", (int)*out_nargs,
              split ? "string_split_to_rows(s VARCHAR, sep VARCHAR)"
                    : "generate_series(start BIGINT, stop BIGINT [, step BIGINT])");
}

/* Table function call lat->call over b's input row (its scope as set): f
 * (held by the plan's udfs), its arguments bound and cast (pool memory), and
 * f's columns as named by lat's alias into plan->lat_cols. */
static laminar_code bind_table_call(binder* b, const lm_ast_lateral* lat, lm_udf** out_f,
                                    lm_expr*** out_args, size_t* out_nargs) {
  lm_plan* plan = b->plan;
  const lm_ast_expr* call = lat->call;
  if (call->star || call->distinct) {
    return fail(b, LAMINAR_ERR_SQL_FUNCTION_ARGS, call,
                "%s(%s) is only valid for aggregates", call->fname,
                call->star ? "*" : "DISTINCT ...");
  }
  lm_udf* f;
  lm_ast_expr* const* argv;
  size_t nargs;
  LM_TRY(lateral_function(b, call, &f, &argv, &nargs));
  laminar_code rc = lm_udf_list_add(&plan->udfs, f, false);
  lm_udf_unref(f); /* the plan's reference holds it (or none, on failure) */
  if (rc != LAMINAR_OK) return NOMEM(b);
  /* The arguments, over the input row (b's scope). */
  lm_expr** args = lm_pool_alloc(&plan->pool, sizeof(lm_expr*) * (nargs ? nargs : 1));
  lm_type* want = lm_pool_alloc(&plan->pool, sizeof(lm_type) * (nargs ? nargs : 1));
  if (args == NULL || want == NULL) return NOMEM(b);
  for (size_t i = 0; i < nargs; i++) {
    if (contains_agg(b->funcs, argv[i])) {
      return fail(b, LAMINAR_ERR_SQL_GROUPING, argv[i],
                  "an aggregate in the arguments of table function '%s'", call->fname);
    }
    LM_TRY(bind(b, argv[i], MODE_ROW, &args[i]));
  }
  lm_func_binding fb;
  rc = lm_udf_bind(f, (const lm_expr* const*)args, (int32_t)nargs, want, &fb);
  if (rc != LAMINAR_OK)
    return fail(b, rc, fb.bad_arg >= 0 ? argv[fb.bad_arg] : call, "%s", fb.message);
  for (size_t i = 0; i < nargs; i++) LM_TRY(coerce(b, &args[i], want[i]));
  /* f's columns, renamed by the alias list; a built-in's one column (a set of
   * values, not of rows) also by the alias alone, as in DuckDB and
   * PostgreSQL. */
  int32_t ncols = lm_udtf_ncols(f);
  bool builtin = b->funcs == NULL || !lm_udf_list_has(b->funcs, f);
  if (lat->ncols > (size_t)ncols) {
    return fail(b, LAMINAR_ERR_SQL_FUNCTION_ARGS, call,
                "table function '%s' has %d column%s, and its alias %s names %d",
                lm_udf_name(f), (int)ncols, ncols == 1 ? "" : "s", lat->alias,
                (int)lat->ncols);
  }
  for (int32_t c = 0; c < ncols; c++) {
    const char* name = lm_udtf_col_name(f, c);
    if ((size_t)c < lat->ncols) {
      name = lat->cols[c];
    } else if (builtin && lat->alias != NULL && lat->ncols == 0 && ncols == 1) {
      name = lat->alias;
    }
    LM_TRY(add_field(b, &plan->lat_cols, name, lm_udtf_col_type(f, c)));
  }
  *out_f = f;
  *out_args = args;
  *out_nargs = nargs;
  return LAMINAR_OK;
}

/* FROM s [alias], [LATERAL] f(args) [alias [(cols)]] (or CROSS JOIN ...): one
 * branch (s, without operators), the joined row (s's columns then f's) as
 * union_schema, the lateral spec (f and its arguments over s's row). Column
 * references then resolve by side, as for a lookup join. */
static laminar_code bind_lateral(binder* b, const lm_ast_select* sel,
                                 lm_plan_lookup_fn lookup, void* lookup_arg) {
  lm_plan* plan = b->plan;
  const lm_ast_lateral* lat = sel->lateral;
  const lm_ast_expr* call = lat->call;
  if (sel->from_window != NULL || sel->union_next != NULL) {
    return fail(b, LAMINAR_ERR_SQL_UNSUPPORTED, call,
                "a table function joins one input read by name (FROM s, f(s.x)), a "
                "derived table (FROM (SELECT ...) d, f(d.x)) or a join's rows (FROM a "
                "JOIN b ON ..., f(a.x)): not a window table function or a UNION ALL of "
                "the outer query (make the union a derived table)");
  }
  bool src = false;
  const lm_schema* input;
  if (sel->from_select != NULL) {
    /* A derived table (a UNION ALL of them too): its branches project to its
     * columns (join_side[0]), whose rows the function's then join. */
    LM_TRY(bind_branches(b, sel->from_select, lookup, lookup_arg));
    LM_TRY(branch_inputs(b));
    plan->join_side[0] = plan->union_schema;
    lm_schema_init_empty(&plan->union_schema);
    input = &plan->join_side[0];
  } else {
    input = lookup(lookup_arg, sel->from, &src);
    if (input == NULL) return unknown_input(sel, b->err);
  }
  /* Over a changelog (EMIT CHANGES, a view) the joined row is the input's
   * columns but _weight, f's, then _weight: each joined row weighs what its
   * input row does, and what follows reads a changelog as over the input. */
  bool changelog = lm_op_view_is_changelog(input);
  lm_schema* left = lm_pool_alloc(&plan->pool, sizeof *left);
  if (left == NULL) return NOMEM(b);
  *left = (lm_schema){input->ncols - (changelog ? 1 : 0), input->fields};
  b->input = left;
  lm_udf* f;
  lm_expr** args;
  size_t nargs;
  LM_TRY(bind_table_call(b, lat, &f, &args, &nargs));
  int32_t ncols = lm_udtf_ncols(f);
  if (sel->from_select != NULL) {
    for (int32_t c = 0; c < left->ncols; c++)
      LM_TRY(
          add_field(b, &plan->union_schema, left->fields[c].name, left->fields[c].type));
  } else {
    LM_TRY(joined_branch(b, sel, left, src));
    plan->branches[0].in_ncols = input->ncols;
  }
  for (int32_t c = 0; c < ncols; c++) {
    LM_TRY(add_field(b, &plan->union_schema, plan->lat_cols.fields[c].name,
                     plan->lat_cols.fields[c].type));
  }
  if (changelog)
    LM_TRY(add_field(b, &plan->union_schema, LM_WEIGHT_COLUMN, LM_TYPE_INT64));
  plan->lateral = true;
  plan->lat = (lm_lateral_spec){.fn = f,
                                .args = (const lm_expr* const*)args,
                                .nargs = (int32_t)nargs,
                                .in_ncols = left->ncols,
                                .weight_col = changelog ? input->ncols - 1 : -1};
  b->input = &plan->union_schema;
  b->join_left = left;
  b->join_right = &plan->lat_cols;
  b->right_name = lm_udf_name(f);
  b->right_alias = lat->alias;
  return LAMINAR_OK;
}

/* FROM a JOIN b ON ..., [LATERAL] f(args) [alias [(cols)]] (or CROSS JOIN
 * ...), after the join is bound (b's scope its joined row, union_schema):
 * the function over each joined row (plan->jlat, its arguments resolving by
 * side as the join's columns do), the rest of the plan over jlat_schema (the
 * joined row's columns, then f's). Column references then resolve to f's
 * columns by its alias or name, or by side. */
static laminar_code bind_join_lateral(binder* b, const lm_ast_select* sel) {
  lm_plan* plan = b->plan;
  const lm_ast_lateral* lat = sel->lateral;
  const lm_schema* in = b->input;
  if (sel->from_window != NULL || b->pass_weight || lm_op_view_is_changelog(in) ||
      (in->ncols > 0 && strcmp(in->fields[in->ncols - 1].name, "$weight") == 0)) {
    return fail(b, LAMINAR_ERR_SQL_UNSUPPORTED, lat->call,
                "a table function beside a window join or a join of a changelog (a "
                "view, an EMIT CHANGES stream, a table's versions) is not supported "
                "yet: join in a stream of its own and call the function over it");
  }
  lm_udf* f;
  lm_expr** args;
  size_t nargs;
  LM_TRY(bind_table_call(b, lat, &f, &args, &nargs));
  for (int32_t c = 0; c < in->ncols; c++)
    LM_TRY(add_field(b, &plan->jlat_schema, in->fields[c].name, in->fields[c].type));
  for (int32_t c = 0; c < plan->lat_cols.ncols; c++) {
    LM_TRY(add_field(b, &plan->jlat_schema, plan->lat_cols.fields[c].name,
                     plan->lat_cols.fields[c].type));
  }
  plan->join_lateral = true;
  plan->jlat = (lm_lateral_spec){.fn = f,
                                 .args = (const lm_expr* const*)args,
                                 .nargs = (int32_t)nargs,
                                 .in_ncols = in->ncols,
                                 .weight_col = -1};
  b->input = &plan->jlat_schema;
  b->lat_right = &plan->lat_cols;
  b->lat_name = lm_udf_name(f);
  b->lat_alias = lat->alias;
  b->lat_base = in->ncols;
  return LAMINAR_OK;
}

static void mark_columns(const lm_expr* e, uint8_t* need, int32_t n) {
  if (e == NULL) return;
  if (e->kind == LM_EXPR_COLUMN && e->column >= 0 && e->column < n) need[e->column] = 1;
  for (int32_t i = 0; e->kind == LM_EXPR_CALL && i < e->nargs; i++)
    mark_columns(e->args[i], need, n);
}

/* Whether the statement has WITH (late_output = ...) other than FALSE (the
 * option table checks the value later). */
static bool stmt_late_output(const lm_stmt* stmt) {
  for (size_t i = 0; stmt != NULL && i < stmt->noptions; i++) {
    const lm_ast_expr* v = stmt->options[i].value;
    if (lm_streq_nocase(stmt->options[i].key, "late_output"))
      return !(v->kind == LM_AST_LITERAL && v->lit == LM_LIT_BOOL && !v->b);
  }
  return false;
}

/* The joined columns the rest of the bound plan reads, and the join's keys
 * and times (lm_asof_spec.need): the join then holds only those. A late side
 * output takes them all. */
static laminar_code join_needed_columns(binder* b) {
  lm_plan* plan = b->plan;
  int32_t n = plan->union_schema.ncols;
  uint8_t* need = lm_pool_alloc(&plan->pool, (size_t)(n ? n : 1));
  if (need == NULL) return NOMEM(b);
  memset(need, plan->late_output != NULL || stmt_late_output(b->stmt), (size_t)n);
  mark_columns(plan->filter, need, n);
  for (int32_t i = 0; plan->join_lateral && i < plan->jlat.nargs; i++)
    mark_columns(plan->jlat.args[i], need, n);
  for (int32_t i = 0; !plan->windowed && i < plan->nexprs; i++)
    mark_columns(plan->exprs[i], need, n);
  if (plan->windowed) {
    const lm_window_spec* w = &plan->window;
    mark_columns(w->filter, need, n);
    if (!w->global && w->time_col >= 0 && w->time_col < n) need[w->time_col] = 1;
    if (w->changelog && w->weight_col >= 0 && w->weight_col < n) need[w->weight_col] = 1;
    for (int32_t i = 0; i < w->nkeys; i++) mark_columns(w->keys[i], need, n);
    for (int32_t i = 0; i < w->naggs; i++) {
      mark_columns(w->aggs[i].arg, need, n);
      mark_columns(w->aggs[i].order, need, n);
    }
  }
  if (plan->interval) { /* both sides' rows are restored through their keys */
    lm_ijoin_spec* ij = &plan->ijoin;
    for (int32_t k = 0; k < ij->nkeys; k++) {
      mark_columns(ij->lkeys[k], need, ij->lcols);
      mark_columns(ij->rkeys[k], need + ij->lcols, ij->rcols);
    }
    mark_columns(ij->residual, need, n);
    if (ij->ltime >= 0) need[ij->ltime] = 1; /* (a TTL join's: lm_db_join_ttl) */
    if (ij->rtime >= 0) need[ij->lcols + ij->rtime] = 1;
    if (ij->lweight >= 0) need[ij->lweight] = 1; /* changelog inputs: the weights */
    if (ij->rweight >= 0) need[ij->lcols + ij->rweight] = 1;
    if (ij->weighted) need[n - 1] = 1;
    ij->need = need;
    return LAMINAR_OK;
  }
  /* The left side's keys and time (its waiting rows are restored through the
   * key expressions). */
  const lm_asof_spec* j = &plan->join;
  uint8_t* right = need + j->lcols;
  /* Right rows are snapshotted by key group: their keys need no columns. */
  for (int32_t k = 0; k < j->nkeys; k++) mark_columns(j->lkeys[k], need, j->lcols);
  need[j->ltime] = 1;
  if (j->tombstones) right[j->rcols - 1] = 1; /* the weight: a delete ends a version */
  plan->join.need = need;
  return LAMINAR_OK;
}

laminar_code lm_bind_stream(const lm_stmt* stmt, lm_plan_lookup_fn lookup,
                            void* lookup_arg, const lm_udf_list* funcs, lm_plan* out,
                            laminar_error* err) {
  return lm_bind_stream_tables(stmt, lookup, NULL, lookup_arg, funcs, out, err);
}

laminar_code lm_bind_stream_tables(const lm_stmt* stmt, lm_plan_lookup_fn lookup,
                                   lm_plan_table_fn tables, void* lookup_arg,
                                   const lm_udf_list* funcs, lm_plan* out,
                                   laminar_error* err) {
  memset(out, 0, sizeof *out);
  lm_pool_init(&out->pool);
  lm_schema_init_empty(&out->out_schema);
  lm_schema_init_empty(&out->agg_schema);
  lm_schema_init_empty(&out->union_schema);
  lm_schema_init_empty(&out->lat_cols);
  lm_schema_init_empty(&out->jlat_schema);
  lm_schema_init_empty(&out->an_schema);
  lm_schema_init_empty(&out->join_side[0]);
  lm_schema_init_empty(&out->join_side[1]);
  const lm_ast_select* sel = stmt->select;
  binder b = {.stmt = stmt,
              .plan = out,
              .err = err,
              .input_name = sel->from,
              .input_alias = sel->from_alias,
              .tables = tables,
              .funcs = funcs};
  laminar_code rc = LAMINAR_OK;
  lm_plan_table tk = {.time_col = -1};
  const lm_schema* table = NULL;
  if (sel->lateral != NULL && sel->join == NULL) {
    rc = bind_lateral(&b, sel, lookup, lookup_arg);
    if (rc == LAMINAR_OK) rc = bind_select(&b, stmt);
  } else if (sel->join != NULL && sel->join->plain && b.tables != NULL &&
             (table = b.tables(lookup_arg, sel->join->right, &tk)) != NULL) {
    /* JOIN of a table: a lookup join (an interval join reads two streams) */
    const lm_ast_join* jn = sel->join;
    if (jn->type == LM_JOIN_RIGHT || jn->type == LM_JOIN_FULL ||
        sel->from_window != NULL || jn->right_window != NULL) {
      lm_error_set(err, LAMINAR_ERR_SQL_UNSUPPORTED,
                   "a join with table '%s' at line %d, column %d is [INNER] or LEFT "
                   "JOIN of a stream read by name",
                   jn->right, (int)jn->line, (int)jn->column);
      lm_error_at(err, jn->line, jn->column);
      lm_plan_free(out);
      return LAMINAR_ERR_SQL_UNSUPPORTED;
    }
    rc = jn->as_of != NULL ? bind_temporal_join(&b, sel, lookup, lookup_arg, table, &tk)
                           : bind_lookup_join(&b, sel, lookup, lookup_arg, table, &tk);
    if (rc == LAMINAR_OK && sel->lateral != NULL) rc = bind_join_lateral(&b, sel);
    if (rc == LAMINAR_OK && sel->union_next != NULL) {
      rc = fail(&b, LAMINAR_ERR_SQL_UNSUPPORTED, NULL,
                "UNION ALL of a join is not supported yet: join in a stream of its own "
                "and read that stream");
    }
    if (rc == LAMINAR_OK) rc = bind_select(&b, stmt);
    if (rc == LAMINAR_OK && out->lookup && (out->windowed || out->analytic)) {
      rc = fail(&b, LAMINAR_ERR_SQL_UNSUPPORTED, NULL,
                "GROUP BY, aggregates and OVER over a lookup join are not supported yet: "
                "join in a stream of its own and aggregate in a stream reading it");
    }
  } else if (sel->join != NULL && sel->join->as_of != NULL) {
    bool src = false;
    bool exists = lookup(lookup_arg, sel->join->right, &src) != NULL;
    char msg[300];
    snprintf(msg, sizeof msg,
             exists ? "FOR SYSTEM_TIME AS OF reads a table (CREATE TABLE): '%s' is a %s"
                    : "no table named '%s'",
             sel->join->right, src ? "source" : "stream or view");
    rc = fail_pos(&b,
                  exists ? LAMINAR_ERR_SQL_UNSUPPORTED : LAMINAR_ERR_SQL_UNKNOWN_OBJECT,
                  sel->join->right_line, sel->join->right_column, sel->join->right, msg);
    lm_plan_free(out);
    return rc;
  } else if (sel->join != NULL) {
    rc = sel->join->asof ? bind_join(&b, sel, lookup, lookup_arg)
                         : bind_interval_join(&b, sel, lookup, lookup_arg);
    if (rc == LAMINAR_OK && sel->lateral != NULL) rc = bind_join_lateral(&b, sel);
    if (rc == LAMINAR_OK && sel->union_next != NULL) {
      rc = fail(&b, LAMINAR_ERR_SQL_UNSUPPORTED, NULL,
                "UNION ALL of a join is not supported yet: join in a stream of its own "
                "and read that stream");
    }
    if (rc == LAMINAR_OK) rc = bind_select(&b, stmt);
  } else if (sel->union_next == NULL && sel->from_select != NULL &&
             sel->from_select->union_next == NULL &&
             lm_bind_select_is_analytic(sel->from_select)) {
    rc = bind_analytic_derived(&b, stmt, lookup, lookup_arg);
  } else if (sel->union_next != NULL || sel->from_select != NULL) {
    /* Branches: a top-level UNION ALL (the stream is the union), or a
     * derived table the outer select reads. */
    bool derived = sel->union_next == NULL;
    rc = bind_branches(&b, derived ? sel->from_select : sel, lookup, lookup_arg);
    if (rc == LAMINAR_OK) rc = branch_inputs(&b);
    if (rc == LAMINAR_OK) {
      b.input = &out->union_schema;
      rc = derived ? bind_select(&b, stmt) : bind_union_output(&b);
    }
  } else {
    rc = bind_one_input(&b, sel, lookup, lookup_arg);
    if (rc == LAMINAR_OK) rc = bind_select(&b, stmt);
  }
  if (rc == LAMINAR_OK && out->joined) rc = join_needed_columns(&b);
  if (rc != LAMINAR_OK) lm_plan_free(out);
  return rc;
}

bool lm_bind_has_aggregate(const lm_udf_list* funcs, const lm_ast_expr* e) {
  return contains_agg(funcs, e);
}

bool lm_bind_ast_equal(const lm_ast_expr* x, const lm_ast_expr* y) {
  return ast_equal(x, y);
}

bool lm_bind_is_aggregate_call(const lm_ast_expr* e) {
  return e != NULL && e->kind == LM_AST_FUNCTION && is_agg_name(NULL, e->fname);
}

bool lm_bind_is_window_call(const lm_ast_expr* e) {
  return e != NULL && e->kind == LM_AST_FUNCTION && is_window_fn(e->fname);
}

/* ---- plan lifecycle ----------------------------------------------------------------- */

void lm_plan_free(lm_plan* plan) {
  lm_udf_list_free(&plan->udfs);
  lm_schema_free(&plan->union_schema);
  lm_schema_free(&plan->lat_cols);
  lm_schema_free(&plan->jlat_schema);
  lm_schema_free(&plan->out_schema);
  lm_schema_free(&plan->agg_schema);
  lm_schema_free(&plan->an_schema);
  lm_schema_free(&plan->join_side[0]);
  lm_schema_free(&plan->join_side[1]);
  lm_pool_free(&plan->pool);
  memset(plan, 0, sizeof *plan);
}

bool lm_plan_branched(const lm_plan* plan) {
  return plan->nbranches > 1 || (plan->nbranches == 1 && plan->branches[0].exprs != NULL);
}

const lm_schema* lm_plan_branch_out(const lm_plan* plan, int32_t b) {
  if (plan->joined) return &plan->join_side[b];
  return plan->lateral ? &plan->join_side[0] : &plan->union_schema;
}

laminar_code lm_plan_passthrough(const char* input, bool input_is_source,
                                 const lm_schema* in, lm_plan* out) {
  memset(out, 0, sizeof *out);
  lm_pool_init(&out->pool);
  lm_schema_init_empty(&out->out_schema);
  lm_schema_init_empty(&out->agg_schema);
  lm_schema_init_empty(&out->union_schema);
  out->input = lm_pool_copy(&out->pool, input, strlen(input) + 1);
  out->input_is_source = input_is_source;
  out->branches = lm_pool_alloc(&out->pool, sizeof(lm_plan_branch));
  if (out->branches != NULL) {
    memset(out->branches, 0, sizeof(lm_plan_branch));
    out->branches[0].input = out->input;
    out->branches[0].input_is_source = input_is_source;
    out->branches[0].in_ncols = in->ncols;
    out->nbranches = 1;
  }
  out->nexprs = in->ncols;
  out->exprs = lm_pool_alloc(&out->pool, sizeof(lm_expr*) * (size_t)(in->ncols + 1));
  bool ok = out->input != NULL && out->exprs != NULL && out->branches != NULL &&
            lm_schema_copy(in, &out->out_schema) == 0;
  for (int32_t c = 0; ok && c < in->ncols; c++) {
    lm_expr* e = lm_pool_alloc(&out->pool, sizeof *e);
    if (e == NULL) {
      ok = false;
      break;
    }
    memset(e, 0, sizeof *e);
    e->kind = LM_EXPR_COLUMN;
    e->type = in->fields[c].type;
    e->column = c;
    out->exprs[c] = e;
  }
  if (ok) return LAMINAR_OK;
  lm_plan_free(out);
  return LAMINAR_ERR_NOMEM;
}

const char* lm_plan_inputs(const lm_plan* plan) {
  return plan->inputs != NULL ? plan->inputs : plan->input;
}

/* ---- analytic functions: f(...) OVER (PARTITION BY .. ORDER BY <event time>) ----- */

static bool has_over(const lm_ast_expr* e) {
  if (e == NULL) return false;
  if (e->kind == LM_AST_FUNCTION && e->over != NULL) return true;
  if (has_over(e->left) || has_over(e->right) || has_over(e->operand) ||
      has_over(e->else_expr))
    return true;
  for (size_t i = 0; i < e->nlist; i++)
    if (has_over(e->list[i])) return true;
  for (size_t i = 0; i < e->nwhen; i++)
    if (has_over(e->whens[i]) || has_over(e->thens[i])) return true;
  for (size_t i = 0; i < e->nargs; i++)
    if (has_over(e->args[i])) return true;
  return false;
}

bool lm_bind_select_is_analytic(const lm_ast_select* sel) {
  for (size_t i = 0; i < sel->nitems; i++)
    if (has_over(sel->items[i].expr)) return true;
  return has_over(sel->qualify);
}

/* Append every OVER call of e (outermost first) to b->an_calls. */
static laminar_code collect_over(binder* b, const lm_ast_expr* e, int32_t* cap) {
  if (e == NULL) return LAMINAR_OK;
  if (e->kind == LM_AST_FUNCTION && e->over != NULL) {
    if (b->nan == *cap) {
      int32_t ncap = *cap ? *cap * 2 : 8;
      const lm_ast_expr** n = lm_pool_alloc(&b->plan->pool, sizeof(void*) * (size_t)ncap);
      if (n == NULL) return NOMEM(b);
      if (b->nan > 0) memcpy(n, b->an_calls, sizeof(void*) * (size_t)b->nan);
      b->an_calls = n;
      *cap = ncap;
    }
    b->an_calls[b->nan++] = e;
    for (size_t i = 0; i < e->nargs; i++) {
      if (has_over(e->args[i])) {
        return fail(b, LAMINAR_ERR_SQL_UNSUPPORTED, e->args[i],
                    "window function calls cannot be nested");
      }
    }
    return LAMINAR_OK;
  }
  LM_TRY(collect_over(b, e->left, cap));
  LM_TRY(collect_over(b, e->right, cap));
  LM_TRY(collect_over(b, e->operand, cap));
  LM_TRY(collect_over(b, e->else_expr, cap));
  for (size_t i = 0; i < e->nlist; i++) LM_TRY(collect_over(b, e->list[i], cap));
  for (size_t i = 0; i < e->nwhen; i++) {
    LM_TRY(collect_over(b, e->whens[i], cap));
    LM_TRY(collect_over(b, e->thens[i], cap));
  }
  for (size_t i = 0; i < e->nargs; i++) LM_TRY(collect_over(b, e->args[i], cap));
  return LAMINAR_OK;
}

/* A select item's reference to analytic call `a`: the operator's column. */
static laminar_code bind_analytic_ref(binder* b, const lm_ast_expr* a, lm_expr** out) {
  for (int32_t i = 0; i < b->nan; i++) {
    if (b->an_calls[i] != a) continue;
    lm_expr* e = new_expr(b, LM_EXPR_COLUMN, b->plan->an.calls[i].type);
    if (e == NULL) return NOMEM(b);
    e->column = b->an_base + i;
    *out = e;
    return LAMINAR_OK;
  }
  return fail(b, LAMINAR_ERR_SQL_UNSUPPORTED, a,
              "window function %s() OVER (...) is only allowed in the SELECT list and "
              "QUALIFY of a stream",
              a->fname);
}

/* Whether two OVER clauses have the same PARTITION BY and ORDER BY. */
static bool same_window(const lm_ast_over* x, const lm_ast_over* y) {
  if (!ast_list_equal(x->partition, x->npartition, y->partition, y->npartition) ||
      x->norder != y->norder)
    return false;
  for (size_t i = 0; i < x->norder; i++) {
    if (x->order[i].desc != y->order[i].desc ||
        !ast_equal(x->order[i].expr, y->order[i].expr))
      return false;
  }
  return true;
}

/* A frame other than the default (RANGE|ROWS BETWEEN UNBOUNDED PRECEDING AND
 * CURRENT ROW) is refused; *rows: it was written ROWS. Ranking functions,
 * LAG and LEAD ignore frames (as DuckDB). */
static laminar_code analytic_frame(binder* b, const lm_ast_expr* a, bool* rows) {
  const lm_ast_over* o = a->over;
  *rows = false;
  if (!o->has_frame) return LAMINAR_OK;
  *rows = o->rows;
  if (o->start == LM_FRAME_UNBOUNDED_PRECEDING && o->end == LM_FRAME_CURRENT_ROW)
    return LAMINAR_OK;
  lm_error_set(b->err, LAMINAR_ERR_SQL_UNSUPPORTED,
               "%s() OVER (...): this window frame is not supported over a stream "
               "(supported: %s BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) at line %d, "
               "column %d",
               a->fname, o->rows ? "ROWS" : "RANGE", (int)o->frame_line,
               (int)o->frame_column);
  lm_error_at(b->err, o->frame_line, o->frame_column);
  return LAMINAR_ERR_SQL_UNSUPPORTED;
}

/* LAG / LEAD's offset: a non-negative integer literal. */
static laminar_code analytic_offset(binder* b, const lm_ast_expr* a, int64_t* out) {
  *out = 1;
  if (a->nargs < 2) return LAMINAR_OK;
  const lm_ast_expr* o = a->args[1];
  if (o->kind != LM_AST_LITERAL || o->lit != LM_LIT_INT || o->i < 0 || o->i > 100000) {
    return fail(b, LAMINAR_ERR_SQL_FUNCTION_ARGS, o,
                "%s() offset must be an integer literal from 0 to 100000", a->fname);
  }
  *out = o->i;
  return LAMINAR_OK;
}

/* An aggregate over a frame ending at the current row: ROWS BETWEEN n
 * PRECEDING AND CURRENT ROW, or RANGE BETWEEN INTERVAL '..' PRECEDING AND
 * CURRENT ROW (CURRENT ROW AND CURRENT ROW: n / the interval 0). */
static laminar_code bind_analytic_agg(binder* b, const lm_ast_expr* a,
                                      lm_analytic_call* c) {
  const char* f = a->fname;
  const lm_ast_over* o = a->over;
  bool bounded = o->has_frame && o->end == LM_FRAME_CURRENT_ROW &&
                 (o->start == LM_FRAME_CURRENT_ROW || o->start == LM_FRAME_PRECEDING);
  const lm_ast_expr* off = o->start_offset;
  if (bounded && off != NULL) {
    bool ok = off->kind == LM_AST_LITERAL && off->i >= 0 &&
              (o->rows ? off->lit == LM_LIT_INT && off->i <= 100000
                       : off->lit == LM_LIT_INTERVAL || off->lit == LM_LIT_INT);
    if (!ok) {
      return fail(b, LAMINAR_ERR_SQL_UNSUPPORTED, off,
                  "%s() OVER (...): a %s frame over a stream starts %s PRECEDING", f,
                  o->rows ? "ROWS" : "RANGE",
                  o->rows ? "an integer literal from 0 to 100000"
                          : "an INTERVAL literal of zero or more");
    }
  }
  if (!bounded) {
    int32_t line = o->has_frame ? o->frame_line : a->line;
    int32_t col = o->has_frame ? o->frame_column : a->column;
    lm_error_set(b->err, LAMINAR_ERR_SQL_UNSUPPORTED,
                 "%s() OVER (...) over a stream needs a frame that bounds its state: "
                 "ROWS BETWEEN n PRECEDING AND CURRENT ROW or RANGE BETWEEN INTERVAL "
                 "'..' PRECEDING AND CURRENT ROW at line %d, column %d",
                 f, (int)line, (int)col);
    lm_error_at(b->err, line, col);
    return LAMINAR_ERR_SQL_UNSUPPORTED;
  }
  c->fn = o->rows ? LM_AN_AGG_ROWS : LM_AN_AGG_RANGE;
  c->offset = off != NULL ? off->i : 0;
  if (a->distinct) {
    return fail(b, LAMINAR_ERR_SQL_UNSUPPORTED, a,
                "%s(DISTINCT ...) OVER (...) is not supported", f);
  }
  if (lm_streq_nocase(f, "count") && (a->star || a->nargs == 0)) {
    c->agg = LM_AGG_COUNT_STAR;
    c->type = LM_TYPE_INT64;
    return LAMINAR_OK;
  }
  if (a->nargs != 1 || a->star)
    return fail(b, LAMINAR_ERR_SQL_FUNCTION_ARGS, a, "%s() takes exactly one argument",
                f);
  lm_expr* arg;
  LM_TRY(bind(b, a->args[0], MODE_ROW, &arg));
  lm_type t = arg->type == LM_TYPE_NULL ? LM_TYPE_INT64 : arg->type;
  if (lm_streq_nocase(f, "count")) {
    c->agg = LM_AGG_COUNT;
    c->type = LM_TYPE_INT64;
  } else if (lm_streq_nocase(f, "sum") || lm_streq_nocase(f, "avg")) {
    if (!is_numeric(t)) {
      return fail(b, LAMINAR_ERR_TYPE_MISMATCH, a->args[0], "%s() needs a number, got %s",
                  f, lm_type_name(t));
    }
    t = t == LM_TYPE_DOUBLE || t == LM_TYPE_FLOAT ? LM_TYPE_DOUBLE : LM_TYPE_INT64;
    c->agg = lm_streq_nocase(f, "sum") ? LM_AGG_SUM : LM_AGG_AVG;
    c->type = c->agg == LM_AGG_AVG ? LM_TYPE_DOUBLE : t;
  } else if (lm_streq_nocase(f, "min") || lm_streq_nocase(f, "max")) {
    c->agg = lm_streq_nocase(f, "min") ? LM_AGG_MIN : LM_AGG_MAX;
    c->type = t;
  } else {
    return fail(b, LAMINAR_ERR_SQL_UNSUPPORTED, a,
                "%s() OVER (...) is not supported over a stream (aggregates over a "
                "frame: COUNT, SUM, AVG, MIN, MAX)",
                f);
  }
  LM_TRY(coerce(b, &arg, t));
  c->arg = arg;
  return LAMINAR_OK;
}

/* Bind analytic call a into *c. */
static laminar_code bind_analytic_call(binder* b, const lm_ast_expr* a,
                                       lm_analytic_call* c) {
  const char* f = a->fname;
  memset(c, 0, sizeof *c);
  if (is_agg_name(NULL, f) && !lm_streq_nocase(f, "first_value") &&
      !lm_streq_nocase(f, "last_value"))
    return bind_analytic_agg(b, a, c);
  static const struct {
    const char* name;
    lm_analytic_fn fn;
    int32_t min, max;
  } fns[] = {{"row_number", LM_AN_ROW_NUMBER, 0, 0},
             {"rank", LM_AN_RANK, 0, 0},
             {"dense_rank", LM_AN_DENSE_RANK, 0, 0},
             {"lag", LM_AN_LAG, 1, 3},
             {"lead", LM_AN_LEAD, 1, 3},
             {"first_value", LM_AN_FIRST_VALUE, 1, 1},
             {"last_value", LM_AN_LAST_VALUE, 1, 1}};
  int32_t k = -1;
  for (int32_t i = 0; i < (int32_t)(sizeof fns / sizeof fns[0]); i++) {
    if (lm_streq_nocase(f, fns[i].name)) k = i;
  }
  if (k < 0) {
    return fail(b, LAMINAR_ERR_SQL_UNSUPPORTED, a,
                "%s() OVER (...) is not supported over a stream (supported: ROW_NUMBER, "
                "RANK, DENSE_RANK, LAG, LEAD, FIRST_VALUE, LAST_VALUE, and COUNT, SUM, "
                "AVG, MIN, MAX over a bounded frame)",
                f);
  }
  if (a->distinct || a->star || (int32_t)a->nargs < fns[k].min ||
      (int32_t)a->nargs > fns[k].max) {
    return fail(b, LAMINAR_ERR_SQL_FUNCTION_ARGS, a,
                "%s() takes %d to %d arguments (no DISTINCT or *)", f, (int)fns[k].min,
                (int)fns[k].max);
  }
  c->fn = fns[k].fn;
  c->type = LM_TYPE_INT64;
  bool rows = false;
  if (c->fn == LM_AN_FIRST_VALUE || c->fn == LM_AN_LAST_VALUE)
    LM_TRY(analytic_frame(b, a, &rows));
  c->rows_frame = c->fn == LM_AN_LAST_VALUE && rows;
  if (a->nargs == 0) return LAMINAR_OK;
  lm_expr* arg;
  LM_TRY(bind(b, a->args[0], MODE_ROW, &arg));
  lm_type t = arg->type;
  if (c->fn == LM_AN_LAG || c->fn == LM_AN_LEAD) {
    LM_TRY(analytic_offset(b, a, &c->offset));
    if (a->nargs == 3) {
      lm_expr* def;
      LM_TRY(bind(b, a->args[2], MODE_ROW, &def));
      lm_type u =
          common_type(t, def->type, is_str_lit(a->args[0]), is_str_lit(a->args[2]));
      if (u == LM_TYPE_NULL && t != LM_TYPE_NULL && def->type != LM_TYPE_NULL) {
        return fail(b, LAMINAR_ERR_TYPE_MISMATCH, a->args[2],
                    "%s() default of type %s does not match the value's type %s", f,
                    lm_type_name(def->type), lm_type_name(t));
      }
      if (u == LM_TYPE_NULL) u = t != LM_TYPE_NULL ? t : def->type;
      if (u == LM_TYPE_NULL) u = LM_TYPE_INT32;
      LM_TRY(coerce(b, &def, u));
      c->def = def;
      t = u;
    }
  }
  if (t == LM_TYPE_NULL) t = LM_TYPE_INT32;
  LM_TRY(coerce(b, &arg, t));
  c->arg = arg;
  c->type = t;
  return LAMINAR_OK;
}

/* OVER's PARTITION BY keys. */
static laminar_code bind_analytic_keys(binder* b, const lm_ast_over* o) {
  lm_plan* plan = b->plan;
  lm_expr** keys =
      lm_pool_alloc(&plan->pool, sizeof(lm_expr*) * (size_t)(o->npartition + 1));
  if (keys == NULL) return NOMEM(b);
  for (size_t i = 0; i < o->npartition; i++) {
    LM_TRY(bind(b, o->partition[i], MODE_ROW, &keys[i]));
    LM_TRY(check_narrow_decimal(b, o->partition[i], "a PARTITION BY key", keys[i]->type));
    if (keys[i]->type == LM_TYPE_NULL) LM_TRY(coerce(b, &keys[i], LM_TYPE_INT32));
  }
  plan->an.keys = (const lm_expr* const*)keys;
  plan->an.nkeys = (int32_t)o->npartition;
  return LAMINAR_OK;
}

/* Over a stream (Top-N per window): ORDER BY any expressions; the catalog
 * checks that the input is windowed and PARTITION BY holds a window bound. */
static laminar_code bind_analytic_per_window(binder* b, const lm_ast_over* o) {
  lm_plan* plan = b->plan;
  size_t n = o->norder;
  lm_expr** order = lm_pool_alloc(&plan->pool, sizeof(lm_expr*) * (n + 1));
  bool* desc = lm_pool_alloc(&plan->pool, sizeof(bool) * (n + 1));
  bool* nulls_first = lm_pool_alloc(&plan->pool, sizeof(bool) * (n + 1));
  if (order == NULL || desc == NULL || nulls_first == NULL) return NOMEM(b);
  for (size_t i = 0; i < n; i++) {
    LM_TRY(bind(b, o->order[i].expr, MODE_ROW, &order[i]));
    if (order[i]->type == LM_TYPE_NULL) LM_TRY(coerce(b, &order[i], LM_TYPE_INT32));
    desc[i] = o->order[i].desc;
    nulls_first[i] = o->order[i].nulls_first;
  }
  plan->an.time_col = -1;
  plan->an.order = (const lm_expr* const*)order;
  plan->an.desc = desc;
  plan->an.nulls_first = nulls_first;
  plan->an.norder = (int32_t)n;
  return bind_analytic_keys(b, o);
}

/* The window shared by every call: PARTITION BY keys and the ORDER BY column
 * (the event time over a source; any order per window over a stream). */
static laminar_code bind_analytic_window(binder* b, const lm_ast_over* o,
                                         const lm_ast_expr* call) {
  lm_plan* plan = b->plan;
  if (o->norder == 0) {
    return fail(b, LAMINAR_ERR_SQL_UNSUPPORTED, call,
                "%s() OVER (...) over a stream needs ORDER BY its event-time column "
                "(the source's WATERMARK column)",
                call->fname);
  }
  /* The operator holds every input column in 64-bit values (op/analytic.c). */
  for (int32_t c = 0; c < b->input->ncols; c++) {
    if (!lm_type_is_wide(b->input->fields[c].type)) continue;
    laminar_code rc =
        fail(b, LAMINAR_ERR_TYPE_MISMATCH, call,
             "%s() OVER (...) over '%s': its column '%s' is %s, and a window function's "
             "input holds DECIMALs of at most 18 digits (CAST it to DECIMAL(18,%d) "
             "upstream)",
             call->fname, b->input_name, b->input->fields[c].name,
             lm_type_name(b->input->fields[c].type),
             (int)lm_type_scale(b->input->fields[c].type));
    lm_error_object(b->err, b->input_name, b->input->fields[c].name);
    return rc;
  }
  const lm_ast_order_item* ord = &o->order[0];
  plan->an_line = ord->expr->line;
  plan->an_column = ord->expr->column;
  if (!plan->input_is_source) return bind_analytic_per_window(b, o);
  lm_expr* t;
  LM_TRY(bind(b, ord->expr, MODE_ROW, &t));
  if (o->norder > 1 || ord->desc || t->kind != LM_EXPR_COLUMN ||
      (t->type != LM_TYPE_INT64 && t->type != LM_TYPE_TIMESTAMP &&
       t->type != LM_TYPE_INT32)) {
    return fail(b, LAMINAR_ERR_SQL_UNSUPPORTED, ord->expr,
                "OVER (... ORDER BY ...) over a stream must order by its event-time "
                "column alone, ascending (rows are released in event-time order)");
  }
  plan->an.time_col = t->column;
  return bind_analytic_keys(b, o);
}

/* A plain query with OVER calls: the analytic operator, then QUALIFY and the
 * select items over its output (the input's columns, then the calls'). */
static laminar_code bind_analytic(binder* b, const lm_stmt* stmt, bool has_agg) {
  const lm_ast_select* sel = stmt->select;
  lm_plan* plan = b->plan;
  int32_t cap = 0;
  for (size_t i = 0; i < sel->nitems; i++)
    LM_TRY(collect_over(b, sel->items[i].expr, &cap));
  LM_TRY(collect_over(b, sel->qualify, &cap));
  if (has_agg) {
    return fail(b, LAMINAR_ERR_SQL_UNSUPPORTED,
                b->nan > 0 ? b->an_calls[0] : sel->qualify,
                "window functions (OVER) and GROUP BY / aggregates in one query are not "
                "supported yet: aggregate in one stream and read it from another");
  }
  if (stmt->emit != LM_EMIT_DEFAULT) {
    return fail(b, LAMINAR_ERR_SQL_UNSUPPORTED, NULL,
                "EMIT does not apply to window functions: each row is emitted once, "
                "when the watermark passes it");
  }
  if (plan->joined) {
    return fail(b, LAMINAR_ERR_SQL_UNSUPPORTED, b->nan > 0 ? b->an_calls[0] : NULL,
                "window functions (OVER) over a join are not supported yet: join in a "
                "stream of its own and read that stream");
  }
  if (changelog_input(b)) {
    return fail(b, LAMINAR_ERR_SQL_UNSUPPORTED, NULL,
                "'%s' is a changelog (it ends in _weight): window functions over a "
                "changelog are not supported",
                b->input_name);
  }
  if (b->nan == 0) {
    return fail(b, LAMINAR_ERR_SQL_UNSUPPORTED, sel->qualify,
                "QUALIFY needs a window function (OVER) in the query");
  }
  const lm_ast_over* o = b->an_calls[0]->over;
  for (int32_t i = 1; i < b->nan; i++) {
    if (!same_window(o, b->an_calls[i]->over)) {
      return fail(b, LAMINAR_ERR_SQL_UNSUPPORTED, b->an_calls[i],
                  "every window function of a stream must use the same PARTITION BY and "
                  "ORDER BY");
    }
  }
  LM_TRY(bind_analytic_window(b, o, b->an_calls[0]));
  lm_analytic_call* calls =
      lm_pool_alloc(&plan->pool, sizeof(lm_analytic_call) * (size_t)b->nan);
  lm_type* in_types =
      lm_pool_alloc(&plan->pool, sizeof(lm_type) * (size_t)(b->input->ncols + 1));
  if (calls == NULL || in_types == NULL) return NOMEM(b);
  for (int32_t i = 0; i < b->nan; i++) {
    LM_TRY(bind_analytic_call(b, b->an_calls[i], &calls[i]));
    lm_analytic_fn fn = calls[i].fn;
    if (plan->an.time_col < 0 && fn != LM_AN_ROW_NUMBER && fn != LM_AN_RANK &&
        fn != LM_AN_DENSE_RANK) {
      return fail(b, LAMINAR_ERR_SQL_UNSUPPORTED, b->an_calls[i],
                  "over a stream (Top-N per window), only ROW_NUMBER, RANK and "
                  "DENSE_RANK are supported");
    }
  }
  plan->analytic = true;
  plan->an.filter = plan->filter;
  plan->an.calls = calls;
  plan->an.ncalls = b->nan;
  plan->an.in_ncols = b->input->ncols;
  plan->an.in_types = in_types;
  b->an_base = b->input->ncols;
  for (int32_t c = 0; c < b->input->ncols; c++) {
    in_types[c] = b->input->fields[c].type;
    LM_TRY(add_field(b, &plan->an_schema, b->input->fields[c].name, in_types[c]));
  }
  for (int32_t i = 0; i < b->nan; i++) {
    const char* name = NULL;
    for (size_t k = 0; k < sel->nitems && name == NULL; k++) {
      if (sel->items[k].expr == b->an_calls[i]) name = sel->items[k].alias;
    }
    char buf[32];
    if (name == NULL) {
      snprintf(buf, sizeof buf, "__analytic%d", (int)i);
      name = buf;
    }
    LM_TRY(add_field(b, &plan->an_schema, name, calls[i].type));
  }
  LM_TRY(bind_items(b, sel, MODE_ROW, &plan->exprs, &plan->nexprs));
  if (sel->qualify != NULL) {
    const lm_schema* in = b->input;
    b->input = &plan->an_schema; /* QUALIFY may name the items' aliases */
    lm_expr* q;
    laminar_code rc = bind(b, sel->qualify, MODE_ROW, &q);
    b->input = in;
    LM_TRY(rc);
    if (q->type != LM_TYPE_BOOL && q->type != LM_TYPE_NULL) {
      return fail(b, LAMINAR_ERR_TYPE_MISMATCH, sel->qualify,
                  "QUALIFY needs a BOOLEAN, got %s", lm_type_name(q->type));
    }
    LM_TRY(coerce(b, &q, LM_TYPE_BOOL));
    plan->qualify = q;
  }
  return LAMINAR_OK;
}

/* Copy of e over the columns of an inner query whose column j is subs[j]. */
static laminar_code subst_columns(binder* b, const lm_expr* e, lm_expr* const* subs,
                                  lm_expr** out) {
  if (e->kind == LM_EXPR_COLUMN) {
    *out = subs[e->column];
    return LAMINAR_OK;
  }
  lm_expr* c = new_expr(b, e->kind, e->type);
  if (c == NULL) return NOMEM(b);
  *c = *e;
  if (e->kind == LM_EXPR_CALL && e->nargs > 0) {
    c->args = lm_pool_alloc(&b->plan->pool, sizeof(lm_expr*) * (size_t)e->nargs);
    if (c->args == NULL) return NOMEM(b);
    for (int32_t i = 0; i < e->nargs; i++)
      LM_TRY(subst_columns(b, e->args[i], subs, &c->args[i]));
  }
  *out = c;
  return LAMINAR_OK;
}

/* SELECT items FROM (SELECT ..., f() OVER (...) AS rn FROM name ...) [WHERE
 * cond]: the inner query is the analytic plan; the outer WHERE joins its
 * QUALIFY and the outer items replace its projection, both written over the
 * inner query's expressions (one operator after the analytic one). */
static laminar_code bind_analytic_derived(binder* b, const lm_stmt* stmt,
                                          lm_plan_lookup_fn lookup, void* lookup_arg) {
  const lm_ast_select* outer = stmt->select;
  const lm_ast_select* inner = outer->from_select;
  lm_plan* plan = b->plan;
  bool outer_agg = outer->ngroup > 0 || outer->having != NULL;
  for (size_t i = 0; i < outer->nitems && !outer_agg; i++)
    outer_agg = contains_agg(b->funcs, outer->items[i].expr);
  if (inner->from_select != NULL || outer_agg || outer->distinct || outer->norder > 0 ||
      outer->limit >= 0 || outer->qualify != NULL || lm_bind_select_is_analytic(outer) ||
      inner->distinct || inner->norder > 0 || inner->limit >= 0 ||
      stmt->emit != LM_EMIT_DEFAULT) {
    return fail(b, LAMINAR_ERR_SQL_UNSUPPORTED, NULL,
                "over a subquery with window functions (OVER) a stream filters and "
                "projects only: SELECT ... FROM (SELECT ..., f() OVER (...) AS rn FROM "
                "name) WHERE rn <= N");
  }
  LM_TRY(bind_one_input(b, inner, lookup, lookup_arg));
  lm_stmt is = *stmt;
  is.select = (lm_ast_select*)inner;
  binder ib = *b;
  ib.stmt = &is;
  bool inner_agg = inner->ngroup > 0 || inner->having != NULL;
  for (size_t i = 0; i < inner->nitems && !inner_agg; i++)
    inner_agg = contains_agg(b->funcs, inner->items[i].expr);
  LM_TRY(bind_where(&ib, inner));
  LM_TRY(bind_analytic(&ib, &is, inner_agg));
  /* The outer query over the inner one's columns. */
  lm_schema cols = plan->out_schema;
  lm_schema_init_empty(&plan->out_schema);
  lm_expr** inner_exprs = plan->exprs;
  binder ob = {.stmt = stmt,
               .plan = plan,
               .err = b->err,
               .input = &cols,
               .input_name = outer->from,
               .input_alias = outer->from_alias};
  lm_expr* where = NULL;
  laminar_code rc = LAMINAR_OK;
  if (outer->where != NULL) {
    rc = bind(&ob, outer->where, MODE_ROW, &where);
    if (rc == LAMINAR_OK && where->type != LM_TYPE_BOOL && where->type != LM_TYPE_NULL) {
      rc = fail(&ob, LAMINAR_ERR_TYPE_MISMATCH, outer->where,
                "WHERE needs a BOOLEAN, got %s", lm_type_name(where->type));
    }
    if (rc == LAMINAR_OK) rc = coerce(&ob, &where, LM_TYPE_BOOL);
    if (rc == LAMINAR_OK) rc = subst_columns(&ob, where, inner_exprs, &where);
  }
  if (rc == LAMINAR_OK)
    rc = bind_items(&ob, outer, MODE_ROW, &plan->exprs, &plan->nexprs);
  for (int32_t i = 0; rc == LAMINAR_OK && i < plan->nexprs; i++)
    rc = subst_columns(&ob, plan->exprs[i], inner_exprs, &plan->exprs[i]);
  lm_schema_free(&cols);
  LM_TRY(rc);
  if (where != NULL && plan->qualify != NULL) {
    lm_expr* both = new_call(b, LM_XOP_AND, LM_TYPE_BOOL, 2);
    if (both == NULL) return NOMEM(b);
    both->args[0] = plan->qualify;
    both->args[1] = where;
    where = both;
  }
  if (where != NULL) plan->qualify = where;
  return LAMINAR_OK;
}
