/*
 * test_expr_func.c -- the scalar functions and the DuckDB arithmetic rules at
 * their edges (this file runs under ASan+UBSan too: no signed overflow, no
 * read past a string, no leak):
 *  - SQL expressions are parsed and bound as a stream over a fixed input
 *    schema, then evaluated by lm_expr_eval over hand-made columns, with and
 *    without a selection vector;
 *  - INT / BIGINT overflow at every operator (NULL), DOUBLE IEEE results,
 *    ROUND's integer and double corner cases, strings that change byte
 *    length under case mapping, SUBSTRING past +-2^32, LIKE backtracking and
 *    a pattern ending with its escape, date_trunc / EXTRACT at the ends of the
 *    64-bit timestamp range;
 *  - through laminar.h: every kind of bad call fails at CREATE with its code
 *    and line:column, and a stream of functions runs end to end.
 */
#include "expr/expr.h"
#include "expr/internal.h"
#include "laminar.h"
#include "lm_test.h"
#include "sql/binder.h"
#include "sql/sql.h"

#include <float.h>
#include <math.h>

/* ---- binding SQL over a fixed schema ------------------------------------------------- */

/* Columns of the input: i INT, b BIGINT, d DOUBLE, s VARCHAR, ts TIMESTAMP,
 * p BOOLEAN, u VARCHAR. */
enum { NCOLS = 7, MAXROWS = 16 };

static const lm_schema* lookup(void* arg, const char* name, bool* is_source) {
  *is_source = true;
  return strcmp(name, "t") == 0 ? (const lm_schema*)arg : NULL;
}

typedef struct fixture {
  lm_schema schema;
  lm_arena* arena;
  lm_plan plan;
  bool bound;
  lm_eval_ctx* ctx;
  int64_t n;
  int32_t i[MAXROWS];
  int64_t b[MAXROWS], ts[MAXROWS];
  double d[MAXROWS];
  lm_str s[MAXROWS], u[MAXROWS];
  uint8_t p[MAXROWS];
  uint8_t nulls[NCOLS][MAXROWS];
  lm_vec cols[NCOLS];
} fixture;

static int fx_init(fixture* f, int64_t n) {
  memset(f, 0, sizeof *f);
  lm_schema_init_empty(&f->schema);
  static const char* const names[NCOLS] = {"i", "b", "d", "s", "ts", "p", "u"};
  static const lm_type types[NCOLS] = {LM_TYPE_INT32,  LM_TYPE_INT64,     LM_TYPE_DOUBLE,
                                       LM_TYPE_STRING, LM_TYPE_TIMESTAMP, LM_TYPE_BOOL,
                                       LM_TYPE_STRING};
  for (int c = 0; c < NCOLS; c++)
    CHECK(lm_schema_add(&f->schema, names[c], types[c], false) == 0);
  CHECK(lm_eval_ctx_create(&f->ctx) == LAMINAR_OK);
  f->n = n;
  const void* data[NCOLS] = {f->i, f->b, f->d, f->s, f->ts, f->p, f->u};
  for (int c = 0; c < NCOLS; c++)
    f->cols[c] = (lm_vec){types[c], n, f->nulls[c], data[c]};
  return 0;
}

static void fx_unbind(fixture* f) {
  if (f->bound) lm_plan_free(&f->plan);
  lm_arena_destroy(f->arena);
  f->arena = NULL;
  f->bound = false;
}

static void fx_free(fixture* f) {
  fx_unbind(f);
  lm_eval_ctx_destroy(f->ctx);
  lm_schema_free(&f->schema);
}

static lm_str str(const char* s) { return (lm_str){s, (int64_t)strlen(s)}; }

/* Bind `expr` as the only select item and evaluate it over the fixture's rows
 * (sel: NULL or a selection of nsel rows). The result is in *out until the
 * next call. Returns 0, or 1 with a message when binding fails. */
static int eval_sel(fixture* f, const char* expr, const uint32_t* sel, int64_t nsel,
                    lm_vec* out) {
  fx_unbind(f);
  char sql[512];
  snprintf(sql, sizeof sql, "CREATE STREAM x AS SELECT %s FROM t", expr);
  CHECK(lm_arena_create(&f->arena) == LAMINAR_OK);
  lm_stmt** stmts;
  size_t n;
  laminar_error err;
  CHECK_CODE(lm_sql_parse(f->arena, sql, &stmts, &n, &err), LAMINAR_OK, &err);
  CHECK_CODE(lm_bind_stream(stmts[0], lookup, &f->schema, NULL, &f->plan, &err),
             LAMINAR_OK, &err);
  f->bound = true;
  for (int c = 0; c < NCOLS;
       c++) { /* the lm_vec contract: no null array without a NULL */
    f->cols[c].nulls = memchr(f->nulls[c], 1, (size_t)f->n) ? f->nulls[c] : NULL;
  }
  lm_eval_ctx_reset(f->ctx);
  CHECK(lm_expr_eval(f->ctx, f->plan.exprs[0], f->cols, sel, nsel, out) == LAMINAR_OK);
  CHECK(out->len == nsel);
  return 0;
}

static int eval(fixture* f, const char* expr, lm_vec* out) {
  return eval_sel(f, expr, NULL, f->n, out);
}

static bool is_null(const lm_vec* v, int64_t k) {
  return v->nulls != NULL && v->nulls[k];
}
static int64_t i64(const lm_vec* v, int64_t k) { return ((const int64_t*)v->data)[k]; }
static int32_t i32(const lm_vec* v, int64_t k) { return ((const int32_t*)v->data)[k]; }
static double f64(const lm_vec* v, int64_t k) { return ((const double*)v->data)[k]; }
static bool b8(const lm_vec* v, int64_t k) { return ((const uint8_t*)v->data)[k] != 0; }
static bool str_is(const lm_vec* v, int64_t k, const char* want) {
  if (is_null(v, k)) return false;
  lm_str s = ((const lm_str*)v->data)[k];
  return s.len == (int64_t)strlen(want) &&
         (s.len == 0 || memcmp(s.ptr, want, (size_t)s.len) == 0);
}

/* ---- integer overflow: INT stays INT, overflow is NULL ------------------------------- */

static int test_int32_arithmetic(void) {
  fixture f;
  CHECK(fx_init(&f, 5) == 0);
  const int32_t iv[5] = {INT32_MAX, INT32_MIN, -7, 0, 46341};
  memcpy(f.i, iv, sizeof iv);
  lm_vec r;
  CHECK(eval(&f, "i + 1", &r) == 0);
  EXPECT(r.type == LM_TYPE_INT32 && is_null(&r, 0) && i32(&r, 1) == INT32_MIN + 1 &&
         i32(&r, 2) == -6);
  CHECK(eval(&f, "i - 1", &r) == 0);
  EXPECT(!is_null(&r, 0) && is_null(&r, 1));
  CHECK(eval(&f, "i * i", &r) == 0);
  EXPECT(is_null(&r, 0) && is_null(&r, 1) && i32(&r, 2) == 49 &&
         is_null(&r, 4)); /* 46341^2 */
  CHECK(eval(&f, "-i", &r) == 0);
  EXPECT(r.type == LM_TYPE_INT32 && i32(&r, 0) == -INT32_MAX && is_null(&r, 1) &&
         i32(&r, 2) == 7);
  CHECK(eval(&f, "abs(i)", &r) == 0);
  EXPECT(r.type == LM_TYPE_INT32 && i32(&r, 0) == INT32_MAX && is_null(&r, 1) &&
         i32(&r, 2) == 7);
  CHECK(eval(&f, "i % -1", &r) == 0);
  EXPECT(i32(&r, 0) == 0 && is_null(&r, 1) && i32(&r, 2) == 0);
  CHECK(eval(&f, "i % 0", &r) == 0);
  for (int k = 0; k < 5; k++) EXPECT(is_null(&r, k));
  CHECK(eval(&f, "i % 4", &r) == 0);
  EXPECT(i32(&r, 2) == -3 && i32(&r, 1) == 0); /* the sign of the dividend */
  CHECK(eval(&f, "i + 2147483648", &r) == 0);  /* a BIGINT literal widens */
  EXPECT(r.type == LM_TYPE_INT64 && i64(&r, 0) == (int64_t)INT32_MAX + 2147483648LL);
  CHECK(eval(&f, "i / 0", &r) == 0);
  EXPECT(r.type == LM_TYPE_DOUBLE && f64(&r, 0) == INFINITY && f64(&r, 1) == -INFINITY &&
         isnan(f64(&r, 3)));
  CHECK(eval(&f, "round(i, -1)", &r) == 0);
  EXPECT(r.type == LM_TYPE_INT32 && is_null(&r, 0) && is_null(&r, 1) &&
         i32(&r, 2) == -10 && i32(&r, 4) == 46340);
  CHECK(eval(&f, "round(i, -10)", &r) == 0);
  for (int k = 0; k < 5; k++) EXPECT(!is_null(&r, k) && i32(&r, k) == 0);
  CHECK(eval(&f, "round(i, 3)", &r) == 0);
  EXPECT(i32(&r, 0) == INT32_MAX && i32(&r, 1) == INT32_MIN);
  fx_free(&f);
  return 0;
}

static int test_int64_arithmetic(void) {
  fixture f;
  CHECK(fx_init(&f, 5) == 0);
  const int64_t bv[5] = {INT64_MAX, INT64_MIN, 9000000000000000000LL, -15, 25};
  memcpy(f.b, bv, sizeof bv);
  lm_vec r;
  CHECK(eval(&f, "b + 1", &r) == 0);
  EXPECT(r.type == LM_TYPE_INT64 && is_null(&r, 0) && i64(&r, 1) == INT64_MIN + 1);
  CHECK(eval(&f, "-b", &r) == 0);
  EXPECT(i64(&r, 0) == -INT64_MAX && is_null(&r, 1) && i64(&r, 3) == 15);
  CHECK(eval(&f, "abs(b)", &r) == 0);
  EXPECT(i64(&r, 0) == INT64_MAX && is_null(&r, 1) && i64(&r, 3) == 15);
  CHECK(eval(&f, "b % -1", &r) == 0);
  EXPECT(i64(&r, 0) == 0 && is_null(&r, 1));
  CHECK(eval(&f, "b * 2", &r) == 0);
  EXPECT(is_null(&r, 0) && is_null(&r, 1) && is_null(&r, 2) && i64(&r, 3) == -30);
  CHECK(eval(&f, "round(b, -1)", &r) == 0);
  EXPECT(is_null(&r, 0) && is_null(&r, 1) && i64(&r, 3) == -20 && i64(&r, 4) == 30);
  CHECK(eval(&f, "round(b, -19)", &r) == 0); /* 9.2e18 rounds to 1e19: too big */
  EXPECT(is_null(&r, 0) && is_null(&r, 1) && is_null(&r, 2));
  EXPECT(i64(&r, 3) == 0 && i64(&r, 4) == 0);
  CHECK(eval(&f, "round(b, -20)", &r) == 0);
  for (int k = 0; k < 5; k++) EXPECT(!is_null(&r, k) && i64(&r, k) == 0);
  CHECK(eval(&f, "round(b, -9223372036854775807)", &r) == 0);
  for (int k = 0; k < 5; k++) EXPECT(!is_null(&r, k) && i64(&r, k) == 0);
  CHECK(eval(&f, "round(b, 9223372036854775807)", &r) == 0);
  EXPECT(i64(&r, 0) == INT64_MAX && i64(&r, 1) == INT64_MIN);
  fx_free(&f);
  return 0;
}

/* ---- DOUBLE: IEEE everywhere -------------------------------------------------------- */

static int test_double_functions(void) {
  fixture f;
  CHECK(fx_init(&f, 6) == 0);
  const double dv[6] = {DBL_MAX, -0.0, NAN, -INFINITY, 2.5, -2.5};
  memcpy(f.d, dv, sizeof dv);
  lm_vec r;
  CHECK(eval(&f, "d / 0", &r) == 0);
  EXPECT(f64(&r, 0) == INFINITY && isnan(f64(&r, 1)) && isnan(f64(&r, 2)) &&
         f64(&r, 5) == -INFINITY);
  CHECK(eval(&f, "1 / d", &r) == 0);
  EXPECT(f64(&r, 1) == -INFINITY && r.nulls == NULL); /* IEEE: 1 / -0.0 */
  CHECK(eval(&f, "d % 0", &r) == 0);
  for (int k = 0; k < 6; k++) EXPECT(!is_null(&r, k) && isnan(f64(&r, k)));
  CHECK(eval(&f, "round(d)", &r) == 0);
  EXPECT(f64(&r, 4) == 3.0 && f64(&r, 5) == -3.0 && isnan(f64(&r, 2)) &&
         f64(&r, 3) == -INFINITY);
  CHECK(eval(&f, "round(d, -7)", &r) == 0); /* DBL_MAX / 1e7 * 1e7 overflows: unchanged */
  EXPECT(f64(&r, 0) == DBL_MAX && isnan(f64(&r, 2)) && f64(&r, 4) == 0.0);
  CHECK(eval(&f, "round(d, -400)", &r) == 0);
  EXPECT(f64(&r, 0) == 0.0 && f64(&r, 4) == 0.0 && isnan(f64(&r, 2)));
  CHECK(eval(&f, "round(d, 400)", &r) == 0);
  EXPECT(f64(&r, 0) == DBL_MAX && f64(&r, 4) == 2.5);
  CHECK(eval(&f, "sqrt(d)", &r) == 0);
  EXPECT(isnan(f64(&r, 5)) && signbit(f64(&r, 1)) && r.nulls == NULL);
  CHECK(eval(&f, "ln(d)", &r) == 0);
  EXPECT(f64(&r, 1) == -INFINITY && isnan(f64(&r, 5)));
  CHECK(eval(&f, "exp(d)", &r) == 0);
  EXPECT(f64(&r, 0) == INFINITY && f64(&r, 3) == 0.0);
  CHECK(eval(&f, "power(d, 0)", &r) == 0);
  for (int k = 0; k < 6; k++) EXPECT(f64(&r, k) == 1.0); /* pow(NaN, 0) is 1 */
  CHECK(eval(&f, "floor(d) + ceil(d)", &r) == 0);
  EXPECT(f64(&r, 4) == 5.0 && f64(&r, 5) == -5.0);
  CHECK(eval(&f, "abs(d)", &r) == 0);
  EXPECT(f64(&r, 3) == INFINITY && !signbit(f64(&r, 1)));
  fx_free(&f);
  return 0;
}

/* ---- strings ---------------------------------------------------------------------- */

static int test_string_functions(void) {
  fixture f;
  CHECK(fx_init(&f, 6) == 0);
  /* U+0250 (2 bytes) upper-cases to U+2C6F (3 bytes); U+212A KELVIN SIGN (3
   * bytes) lower-cases to 'k' (1 byte); the emoji is 4 bytes. */
  const char* sv[6] = {"\xC9\x90\xC9\x90\xC9\x90",
                       "\xE2\x84\xAA",
                       "a\xF0\x9F\xA6\x86"
                       "b",
                       "",
                       "  xx  ",
                       "\xC3\x9F"};
  for (int k = 0; k < 6; k++) f.s[k] = str(sv[k]);
  lm_vec r;
  CHECK(eval(&f, "upper(s)", &r) == 0);
  EXPECT(str_is(&r, 0, "\xE2\xB1\xAF\xE2\xB1\xAF\xE2\xB1\xAF") && str_is(&r, 3, ""));
  EXPECT(str_is(&r, 5, "\xE1\xBA\x9E")); /* sharp s -> capital sharp s, as DuckDB */
  CHECK(eval(&f, "lower(s)", &r) == 0);
  EXPECT(str_is(&r, 1, "k") && str_is(&r, 2,
                                      "a\xF0\x9F\xA6\x86"
                                      "b"));
  CHECK(eval(&f, "length(s)", &r) == 0);
  EXPECT(i64(&r, 0) == 3 && i64(&r, 1) == 1 && i64(&r, 2) == 3 && i64(&r, 3) == 0);
  CHECK(eval(&f, "substring(s, 2, 1)", &r) == 0);
  EXPECT(str_is(&r, 2, "\xF0\x9F\xA6\x86") && str_is(&r, 0, "\xC9\x90") &&
         str_is(&r, 1, ""));
  CHECK(eval(&f, "substring(s, -1)", &r) == 0);
  EXPECT(str_is(&r, 2, "b") && str_is(&r, 4, " "));
  CHECK(eval(&f, "substring(s, 4294967295)", &r) == 0);
  for (int k = 0; k < 6; k++) EXPECT(str_is(&r, k, ""));
  CHECK(eval(&f, "substring(s, 4294967296)", &r) == 0); /* DuckDB: out of range error */
  for (int k = 0; k < 6; k++) EXPECT(is_null(&r, k));
  CHECK(eval(&f, "substring(s, 1, -9223372036854775807)", &r) == 0);
  for (int k = 0; k < 6; k++) EXPECT(is_null(&r, k));
  CHECK(eval(&f, "substring(s, 9223372036854775807)", &r) == 0);
  for (int k = 0; k < 6; k++) EXPECT(is_null(&r, k));
  CHECK(eval(&f, "trim(s, '\xC9\x90 ')", &r) == 0);
  EXPECT(str_is(&r, 0, "") && str_is(&r, 4, "xx") &&
         str_is(&r, 2,
                "a\xF0\x9F\xA6\x86"
                "b"));
  CHECK(eval(&f,
             "rtrim(s, '\xF0\x9F\xA6\x86"
             "b')",
             &r) == 0);
  EXPECT(str_is(&r, 2, "a"));
  CHECK(eval(&f, "replace(s, 'x', 'xyzxyz')", &r) == 0);
  EXPECT(str_is(&r, 4, "  xyzxyzxyzxyz  ") && str_is(&r, 3, ""));
  CHECK(eval(&f, "concat(NULL, NULL)", &r) == 0);
  for (int k = 0; k < 6; k++) EXPECT(str_is(&r, k, ""));
  CHECK(eval(&f, "starts_with(s, '')", &r) == 0);
  for (int k = 0; k < 6; k++) EXPECT(b8(&r, k));
  /* An all-constant call is computed once. */
  lm_xvec x;
  CHECK(eval(&f, "upper('abc')", &r) == 0);
  CHECK(lm_expr_eval_x(f.ctx, f.plan.exprs[0], f.cols, NULL, f.n, &x) == LAMINAR_OK);
  EXPECT(x.cst && x.v.len == f.n && str_is(&r, 5, "ABC"));
  fx_free(&f);
  return 0;
}

static int test_like(void) {
  fixture f;
  CHECK(fx_init(&f, 4) == 0);
  static char long_a[2001];
  memset(long_a, 'a', 2000);
  f.s[0] = str(long_a);
  f.s[1] = str("a%b_c");
  f.s[2] = str("\xC3\x89t\xC3\xA9"); /* Été */
  f.s[3] = str("");
  f.u[0] = str("%a%a%a%a%a%a%a%a%b"); /* backtracking, no match */
  f.u[1] = str("a$%b$_c$");           /* ends with the escape: NULL */
  f.u[2] = str("_t_");
  f.u[3] = str("%");
  lm_vec r;
  CHECK(eval(&f, "s LIKE u ESCAPE '$'", &r) == 0);
  EXPECT(!is_null(&r, 0) && !b8(&r, 0) && is_null(&r, 1) && b8(&r, 2) && b8(&r, 3));
  CHECK(eval(&f, "s LIKE 'a$%b$_c' ESCAPE '$'", &r) == 0);
  EXPECT(!b8(&r, 0) && b8(&r, 1) && !b8(&r, 2));
  CHECK(eval(&f, "s ILIKE '\xC3\xA9T\xC3\x89'", &r) == 0);
  EXPECT(b8(&r, 2) && !b8(&r, 0));
  CHECK(eval(&f, "s NOT LIKE '%'", &r) == 0);
  for (int k = 0; k < 4; k++) EXPECT(!b8(&r, k) && !is_null(&r, k));
  CHECK(eval(&f, "s LIKE '%aaaa'", &r) == 0);
  EXPECT(b8(&r, 0) && !b8(&r, 1));
  fx_free(&f);
  return 0;
}

/* ---- timestamps ------------------------------------------------------------------ */

static int test_timestamp_edges(void) {
  fixture f;
  CHECK(fx_init(&f, 4) == 0);
  const int64_t tv[4] = {INT64_MIN, INT64_MAX, -1, 1709642096789012LL};
  memcpy(f.ts, tv, sizeof tv);
  lm_vec r;
  CHECK(eval(&f, "date_trunc('year', ts)", &r) == 0);
  EXPECT(r.type == LM_TYPE_TIMESTAMP && is_null(&r, 0) && !is_null(&r, 1));
  EXPECT(i64(&r, 2) == -31536000000000LL && i64(&r, 3) == 1704067200000000LL);
  CHECK(eval(&f, "date_trunc('hour', ts)", &r) == 0);
  EXPECT(is_null(&r, 0) && i64(&r, 2) == -3600000000LL);
  CHECK(eval(&f, "date_trunc('microsecond', ts)", &r) == 0);
  EXPECT(i64(&r, 0) == INT64_MIN && i64(&r, 1) == INT64_MAX);
  CHECK(eval(&f, "date_trunc('week', ts)", &r) == 0);
  EXPECT(i64(&r, 3) == 1709510400000000LL); /* Monday 2024-03-04 */
  CHECK(eval(&f, "extract(year FROM ts)", &r) == 0);
  EXPECT(i64(&r, 0) == -290308 && i64(&r, 1) == 294247 && i64(&r, 2) == 1969 &&
         i64(&r, 3) == 2024);
  CHECK(eval(&f, "extract(microsecond FROM ts)", &r) == 0);
  EXPECT(i64(&r, 2) == 59999999 && i64(&r, 3) == 56789012);
  CHECK(eval(&f, "extract(epoch FROM ts)", &r) == 0);
  EXPECT(f64(&r, 2) == -1e-6 && isfinite(f64(&r, 0)));
  CHECK(eval(&f, "extract(dow FROM ts) + extract(isodow FROM ts)", &r) == 0);
  EXPECT(i64(&r, 3) == 4); /* a Tuesday: 2 + 2 */
  CHECK(eval(&f, "ts + INTERVAL '1' DAY", &r) == 0);
  EXPECT(!is_null(&r, 0) && is_null(&r, 1) &&
         i64(&r, 3) == 1709642096789012LL + 86400000000LL);
  CHECK(eval(&f, "ts - ts", &r) == 0);
  EXPECT(r.type == LM_TYPE_INT64 && i64(&r, 0) == 0);
  CHECK(eval(&f, "CAST(CAST(ts AS VARCHAR) AS TIMESTAMP) = ts", &r) == 0);
  for (int k = 0; k < 4; k++)
    EXPECT(!is_null(&r, k) && b8(&r, k)); /* BC years round-trip */
  f.s[0] = str("0044-03-15 (BC) 12:00:00");
  CHECK(eval(&f, "extract(year FROM CAST(s AS TIMESTAMP))", &r) == 0);
  EXPECT(i64(&r, 0) == -43);
  fx_free(&f);
  return 0;
}

/* ---- selections, NULL propagation ------------------------------------------------- */

static int test_selection_and_nulls(void) {
  fixture f;
  CHECK(fx_init(&f, 8) == 0);
  for (int k = 0; k < 8; k++) {
    f.i[k] = k - 4;
    f.d[k] = k * 1.5;
    f.s[k] = str(k % 2 ? "Ab" : "\xC3\xA9");
    f.nulls[0][k] = k == 3;
    f.nulls[3][k] = k == 5;
  }
  const uint32_t sel[3] = {1, 3, 5};
  lm_vec r;
  CHECK(eval_sel(&f, "concat(upper(s), abs(i), NULL)", sel, 3, &r) == 0);
  EXPECT(str_is(&r, 0, "AB3") && str_is(&r, 1, "AB") && str_is(&r, 2, "1"));
  CHECK(eval_sel(&f, "upper(s) || abs(i)", sel, 3, &r) == 0);
  EXPECT(str_is(&r, 0, "AB3") && is_null(&r, 1) && is_null(&r, 2));
  CHECK(eval_sel(&f, "round(d, i)", sel, 3, &r) == 0);
  EXPECT(f64(&r, 0) == 0.0 && is_null(&r, 1) && f64(&r, 2) == 7.5);
  CHECK(eval_sel(&f, "NULLIF(i, -1)", sel, 3, &r) == 0);
  EXPECT(r.type == LM_TYPE_INT32 && i32(&r, 0) == -3 && is_null(&r, 1) &&
         i32(&r, 2) == 1);
  CHECK(eval(&f, "length(NULL)", &r) == 0);
  for (int k = 0; k < 8; k++) EXPECT(is_null(&r, k));
  CHECK(eval(&f, "date_trunc(NULL, ts)", &r) == 0);
  for (int k = 0; k < 8; k++) EXPECT(is_null(&r, k));
  CHECK(eval(&f, "s LIKE 'a' ESCAPE NULL", &r) == 0);
  for (int k = 0; k < 8; k++) EXPECT(is_null(&r, k));
  fx_free(&f);
  return 0;
}

/* ---- errors through laminar.h ---------------------------------------------------- */

typedef struct bad_sql {
  const char* select; /* after "CREATE STREAM s AS\n" */
  laminar_code code;
  int32_t line, column;
  const char* text; /* a part of the message */
} bad_sql;

static const bad_sql k_bad[] = {
    {"SELECT frobnicate(i) FROM t", LAMINAR_ERR_SQL_UNKNOWN_FUNCTION, 2, 8,
     "unknown function 'frobnicate'"},
    {"SELECT i,\n  abs(i, b) FROM t", LAMINAR_ERR_SQL_FUNCTION_ARGS, 3, 3,
     "abs() takes 1 argument, got 2"},
    {"SELECT substring(s) FROM t", LAMINAR_ERR_SQL_FUNCTION_ARGS, 2, 8,
     "takes 2 to 3 arguments"},
    {"SELECT concat() FROM t", LAMINAR_ERR_SQL_FUNCTION_ARGS, 2, 8,
     "at least 1 argument"},
    {"SELECT nullif(i) FROM t", LAMINAR_ERR_SQL_FUNCTION_ARGS, 2, 8, "nullif() takes 2"},
    {"SELECT upper(b) FROM t", LAMINAR_ERR_TYPE_MISMATCH, 2, 14,
     "upper() needs VARCHAR as argument 1, got BIGINT"},
    {"SELECT round(d, 1.5) FROM t", LAMINAR_ERR_TYPE_MISMATCH, 2, 17,
     "an integer as argument 2"},
    {"SELECT length(p) FROM t", LAMINAR_ERR_TYPE_MISMATCH, 2, 15, "got BOOLEAN"},
    {"SELECT sqrt(s) FROM t", LAMINAR_ERR_TYPE_MISMATCH, 2, 13, "a number"},
    {"SELECT date_trunc('day', b) FROM t", LAMINAR_ERR_TYPE_MISMATCH, 2, 26,
     "a TIMESTAMP"},
    {"SELECT extract(hour FROM d) FROM t", LAMINAR_ERR_TYPE_MISMATCH, 2, 26,
     "a TIMESTAMP"},
    {"SELECT b LIKE 'x%' FROM t", LAMINAR_ERR_TYPE_MISMATCH, 2, 8, "VARCHAR"},
    {"SELECT s ILIKE b FROM t", LAMINAR_ERR_TYPE_MISMATCH, 2, 16, "pattern"},
    {"SELECT s < b FROM t", LAMINAR_ERR_TYPE_MISMATCH, 2, 8,
     "cannot compare VARCHAR with BIGINT"},
    {"SELECT s + 1 FROM t", LAMINAR_ERR_TYPE_MISMATCH, 2, 8, "cannot apply '+'"},
    {"SELECT date_trunc('fortnight', ts) FROM t", LAMINAR_ERR_SQL_FUNCTION_ARGS, 2, 19,
     "'fortnight'"},
    {"SELECT extract(bogus FROM ts) FROM t", LAMINAR_ERR_SQL_FUNCTION_ARGS, 2, 16,
     "not a date part"},
    {"SELECT date_part(s, ts) FROM t", LAMINAR_ERR_SQL_FUNCTION_ARGS, 2, 18,
     "constant string"},
    {"SELECT date_trunc('era', ts) FROM t", LAMINAR_ERR_SQL_FUNCTION_ARGS, 2, 19, "unit"},
    {"SELECT s LIKE 'a' ESCAPE 'ab' FROM t", LAMINAR_ERR_SQL_FUNCTION_ARGS, 2, 26,
     "one character"},
    {"SELECT s LIKE 'a$' ESCAPE '$' FROM t", LAMINAR_ERR_SQL_FUNCTION_ARGS, 2, 15,
     "must not end"},
    {"SELECT s LIKE 'a' ESCAPE u FROM t", LAMINAR_ERR_SQL_FUNCTION_ARGS, 2, 26,
     "constant"},
    {"SELECT abs(DISTINCT i) FROM t", LAMINAR_ERR_SQL_FUNCTION_ARGS, 2, 8,
     "only valid for aggregates"},
    {"SELECT upper(*) FROM t", LAMINAR_ERR_SQL_FUNCTION_ARGS, 2, 8, "upper(*)"},
    {"SELECT TRY_CAST(i AS FLOAT16) FROM t", LAMINAR_ERR_UNKNOWN_TYPE, 2, 22,
     "not a type"},
    {"SELECT trim(LEADING 'x' s) FROM t", LAMINAR_ERR_SQL_SYNTAX, 2, 25, "FROM"},
    {"SELECT extract(FROM ts) FROM t", LAMINAR_ERR_SQL_SYNTAX, 2, 21, "FROM"},
    {"SELECT i FROM t WHERE abs(SUM(i)) > 1", LAMINAR_ERR_SQL_GROUPING, 2, 23, "WHERE"},
    {"SELECT upper(s), COUNT(*) FROM t GROUP BY upper(s), abs(COUNT(*)), tumble(ts, "
     "INTERVAL '1' SECOND)",
     LAMINAR_ERR_SQL_GROUPING, 2, 53, "GROUP BY"},
    {"SELECT SUM(abs(SUM(i))) FROM t GROUP BY tumble(ts, INTERVAL '1' SECOND)",
     LAMINAR_ERR_SQL_GROUPING, 2, 12, "nested"},
    {"SELECT round(i, b) + s FROM t", LAMINAR_ERR_TYPE_MISMATCH, 2, 8,
     "cannot apply '+' to INT and VARCHAR"},
};

static int test_bad_calls_fail_at_create(void) {
  laminar_db* db;
  laminar_error err;
  CHECK_CODE(laminar_open(NULL, &db, &err), LAMINAR_OK, &err);
  CHECK_CODE(laminar_execute(db,
                             "CREATE SOURCE t (i INT, b BIGINT, d DOUBLE, s VARCHAR, "
                             "ts TIMESTAMP, p BOOLEAN, u VARCHAR)",
                             &err),
             LAMINAR_OK, &err);
  for (size_t k = 0; k < sizeof k_bad / sizeof k_bad[0]; k++) {
    const bad_sql* c = &k_bad[k];
    char sql[512];
    snprintf(sql, sizeof sql, "CREATE STREAM s AS\n%s", c->select);
    laminar_code rc = laminar_execute(db, sql, &err);
    bool ok = rc == c->code && err.line == c->line && err.column == c->column &&
              strstr(err.message, c->text) != NULL;
    char want[16];
    snprintf(want, sizeof want, "LDB-%d", (int)c->code);
    ok = ok && strncmp(err.message, want, strlen(want)) == 0;
    if (!ok) {
      fprintf(stderr,
              "%s\n  got %d at %d:%d \"%s\"\n  want %d at %d:%d containing \"%s\"\n", sql,
              (int)rc, (int)err.line, (int)err.column, rc ? err.message : "",
              (int)c->code, (int)c->line, (int)c->column, c->text);
    }
    EXPECT(ok);
  }
  /* Nothing was created by the failures; a good statement still works. */
  CHECK_CODE(laminar_execute(db, "CREATE STREAM s AS SELECT upper(s) AS us FROM t", &err),
             LAMINAR_OK, &err);
  laminar_close(db);
  return 0;
}

static const lm_test_case cases[] = {
    {"int32_arithmetic", test_int32_arithmetic},
    {"int64_arithmetic", test_int64_arithmetic},
    {"double_functions", test_double_functions},
    {"string_functions", test_string_functions},
    {"like", test_like},
    {"timestamp_edges", test_timestamp_edges},
    {"selection_and_nulls", test_selection_and_nulls},
    {"bad_calls_fail_at_create", test_bad_calls_fail_at_create},
    {NULL, NULL},
};

int main(int argc, char** argv) { return lm_test_main(argc, argv, cases); }
