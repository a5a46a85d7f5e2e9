/*
 * test_expr.c -- src/expr: every operator over hand-made vectors with NULLs
 * (three-valued logic truth tables, faults giving NULL, CASE, COALESCE,
 * CAST with DuckDB-verified text), filters with selection vectors, the
 * context's steady state, and a randomized differential test of the
 * vectorized evaluator against a row-at-a-time reference written here.
 */
#include "expr/expr.h"
#include "expr/internal.h"
#include "lm_test.h"

#include <math.h>

/* ---- building trees ----------------------------------------------------------------- */

/* Owns every node and argument array a test builds. */
typedef struct tb {
  void** ptrs;
  size_t n, cap;
} tb;

static void* tb_alloc(tb* t, size_t bytes) {
  if (t->n == t->cap) {
    t->cap = t->cap ? t->cap * 2 : 256;
    void** grown = realloc(t->ptrs, t->cap * sizeof(void*));
    if (grown == NULL) abort();
    t->ptrs = grown;
  }
  void* p = calloc(1, bytes ? bytes : 1);
  if (p == NULL) abort();
  t->ptrs[t->n++] = p;
  return p;
}

static void tb_free(tb* t) {
  for (size_t i = 0; i < t->n; i++) free(t->ptrs[i]);
  free(t->ptrs);
  *t = (tb){0};
}

static lm_expr* col(tb* t, int32_t index, lm_type type) {
  lm_expr* e = tb_alloc(t, sizeof *e);
  e->kind = LM_EXPR_COLUMN;
  e->type = type;
  e->column = index;
  return e;
}

static lm_expr* lit(tb* t, lm_type type) {
  lm_expr* e = tb_alloc(t, sizeof *e);
  e->kind = LM_EXPR_LITERAL;
  e->type = type;
  return e;
}
static lm_expr* lit_i(tb* t, int64_t v) {
  lm_expr* e = lit(t, LM_TYPE_INT64);
  e->lit.i = v;
  return e;
}
static lm_expr* lit_d(tb* t, double v) {
  lm_expr* e = lit(t, LM_TYPE_DOUBLE);
  e->lit.d = v;
  return e;
}
static lm_expr* lit_b(tb* t, bool v) {
  lm_expr* e = lit(t, LM_TYPE_BOOL);
  e->lit.b = v;
  return e;
}
static lm_expr* lit_s(tb* t, const char* s) {
  lm_expr* e = lit(t, LM_TYPE_STRING);
  e->lit.s = (lm_str){s, (int64_t)strlen(s)};
  return e;
}
static lm_expr* lit_null(tb* t, lm_type type) {
  lm_expr* e = lit(t, type);
  e->lit.is_null = true;
  return e;
}

static lm_expr* calln(tb* t, lm_expr_op op, lm_type type, int32_t nargs, lm_expr** args) {
  lm_expr* e = tb_alloc(t, sizeof *e);
  e->kind = LM_EXPR_CALL;
  e->type = type;
  e->op = op;
  e->nargs = nargs;
  e->args = tb_alloc(t, sizeof(lm_expr*) * (size_t)(nargs ? nargs : 1));
  for (int32_t i = 0; i < nargs; i++) e->args[i] = args[i];
  return e;
}
static lm_expr* call1(tb* t, lm_expr_op op, lm_type type, lm_expr* a) {
  return calln(t, op, type, 1, &a);
}
static lm_expr* call2(tb* t, lm_expr_op op, lm_type type, lm_expr* a, lm_expr* b) {
  lm_expr* args[2] = {a, b};
  return calln(t, op, type, 2, args);
}
static lm_expr* cast(tb* t, lm_type to, lm_expr* a) {
  return call1(t, LM_XOP_CAST, to, a);
}

/* ---- vectors ------------------------------------------------------------------------- */

/* Nulls from a pattern: 'N' at position k makes row k NULL; "" = none. */
static const uint8_t* nulls_of(tb* t, const char* pat, int64_t n) {
  if (pat == NULL || *pat == '\0') return NULL;
  uint8_t* nl = tb_alloc(t, (size_t)n);
  for (int64_t k = 0; k < n; k++) nl[k] = pat[k] == 'N';
  return nl;
}

static lm_vec vec_i64(tb* t, const int64_t* v, int64_t n, const char* nulls) {
  int64_t* d = tb_alloc(t, sizeof(int64_t) * (size_t)n);
  memcpy(d, v, sizeof(int64_t) * (size_t)n);
  return (lm_vec){LM_TYPE_INT64, n, nulls_of(t, nulls, n), d};
}
static lm_vec vec_f64(tb* t, const double* v, int64_t n, const char* nulls) {
  double* d = tb_alloc(t, sizeof(double) * (size_t)n);
  memcpy(d, v, sizeof(double) * (size_t)n);
  return (lm_vec){LM_TYPE_DOUBLE, n, nulls_of(t, nulls, n), d};
}
static lm_vec vec_bool(tb* t, const uint8_t* v, int64_t n, const char* nulls) {
  uint8_t* d = tb_alloc(t, (size_t)n);
  memcpy(d, v, (size_t)n);
  return (lm_vec){LM_TYPE_BOOL, n, nulls_of(t, nulls, n), d};
}
static lm_vec vec_str(tb* t, const char* const* v, int64_t n, const char* nulls) {
  lm_str* d = tb_alloc(t, sizeof(lm_str) * (size_t)n);
  for (int64_t k = 0; k < n; k++) {
    d[k] = v[k] ? (lm_str){v[k], (int64_t)strlen(v[k])} : (lm_str){NULL, 0};
  }
  return (lm_vec){LM_TYPE_STRING, n, nulls_of(t, nulls, n), d};
}

static bool vnull(const lm_vec* v, int64_t k) { return v->nulls != NULL && v->nulls[k]; }
static int64_t vi(const lm_vec* v, int64_t k) { return ((const int64_t*)v->data)[k]; }
static int32_t vi32(const lm_vec* v, int64_t k) { return ((const int32_t*)v->data)[k]; }
static double vd(const lm_vec* v, int64_t k) { return ((const double*)v->data)[k]; }
static int vb(const lm_vec* v, int64_t k) { return ((const uint8_t*)v->data)[k]; }
static bool vs_eq(const lm_vec* v, int64_t k, const char* s) {
  lm_str x = ((const lm_str*)v->data)[k];
  return !vnull(v, k) && x.len == (int64_t)strlen(s) &&
         (x.len == 0 || !memcmp(x.ptr, s, (size_t)x.len));
}

/* Expected BOOL results: 't', 'f' or 'N' per row. */
static bool bools_are(const lm_vec* v, const char* want) {
  int64_t n = (int64_t)strlen(want);
  if (v->len != n || v->type != LM_TYPE_BOOL) return false;
  for (int64_t k = 0; k < n; k++) {
    if (want[k] == 'N') {
      if (!vnull(v, k)) return false;
    } else if (vnull(v, k) || vb(v, k) != (want[k] == 't')) {
      return false;
    }
  }
  return true;
}

/* The null array must be NULL when no row is null (the lm_vec contract). */
static bool nulls_tidy(const lm_vec* v) {
  if (v->nulls == NULL) return true;
  for (int64_t k = 0; k < v->len; k++) {
    if (v->nulls[k]) return true;
  }
  return false;
}

/* ---- arithmetic ---------------------------------------------------------------------- */

static int test_arith_int(void) {
  tb t = {0};
  lm_eval_ctx* ctx;
  CHECK(lm_eval_ctx_create(&ctx) == LAMINAR_OK);
  const int64_t a[] = {1, INT64_MAX, INT64_MIN, -7, 7, 5, 0, INT64_MIN};
  const int64_t b[] = {2, 1, 1, 2, -2, 0, 3, -1};
  lm_vec in[2] = {vec_i64(&t, a, 8, ""), vec_i64(&t, b, 8, "")};
  lm_expr* x = col(&t, 0, LM_TYPE_INT64);
  lm_expr* y = col(&t, 1, LM_TYPE_INT64);
  lm_vec r;

  CHECK(lm_expr_eval(ctx, call2(&t, LM_XOP_ADD, LM_TYPE_INT64, x, y), in, NULL, 8, &r) ==
        LAMINAR_OK);
  EXPECT(r.len == 8 && r.type == LM_TYPE_INT64);
  EXPECT(!vnull(&r, 0) && vi(&r, 0) == 3);
  EXPECT(vnull(&r, 1)); /* INT64_MAX + 1 overflows */
  EXPECT(!vnull(&r, 2) && vi(&r, 2) == INT64_MIN + 1);
  EXPECT(!vnull(&r, 3) && vi(&r, 3) == -5);
  EXPECT(vnull(&r, 7)); /* INT64_MIN + -1 */

  CHECK(lm_expr_eval(ctx, call2(&t, LM_XOP_SUB, LM_TYPE_INT64, x, y), in, NULL, 8, &r) ==
        LAMINAR_OK);
  EXPECT(vi(&r, 0) == -1 && !vnull(&r, 1) && vi(&r, 1) == INT64_MAX - 1);
  EXPECT(vnull(&r, 2)); /* INT64_MIN - 1 */
  EXPECT(vnull(&r, 7) == false && vnull(&r, 6) == false && vi(&r, 6) == -3);

  CHECK(lm_expr_eval(ctx, call2(&t, LM_XOP_MUL, LM_TYPE_INT64, x, y), in, NULL, 8, &r) ==
        LAMINAR_OK);
  EXPECT(vi(&r, 0) == 2 && vi(&r, 1) == INT64_MAX && vi(&r, 3) == -14 &&
         vi(&r, 4) == -14);
  EXPECT(vnull(&r, 7)); /* INT64_MIN * -1 */
  EXPECT(!vnull(&r, 5) && vi(&r, 5) == 0);

  CHECK(lm_expr_eval(ctx, call2(&t, LM_XOP_MOD, LM_TYPE_INT64, x, y), in, NULL, 8, &r) ==
        LAMINAR_OK);
  EXPECT(vi(&r, 0) == 1 && vi(&r, 1) == 0 && vi(&r, 2) == 0);
  EXPECT(vi(&r, 3) == -1); /* sign of the dividend */
  EXPECT(vi(&r, 4) == 1);
  EXPECT(vnull(&r, 5)); /* x % 0 */
  EXPECT(!vnull(&r, 6) && vi(&r, 6) == 0);
  EXPECT(vnull(&r, 7)); /* INT64_MIN % -1 overflows (DuckDB raises) */

  CHECK(lm_expr_eval(ctx, call1(&t, LM_XOP_NEG, LM_TYPE_INT64, x), in, NULL, 8, &r) ==
        LAMINAR_OK);
  EXPECT(vi(&r, 0) == -1 && vi(&r, 1) == -INT64_MAX && vnull(&r, 2) && vi(&r, 3) == 7);
  EXPECT(vnull(&r, 7) && !vnull(&r, 6) && vi(&r, 6) == 0);

  /* Column op literal, literal op column, literal op literal. */
  CHECK(lm_expr_eval(ctx, call2(&t, LM_XOP_ADD, LM_TYPE_INT64, x, lit_i(&t, 10)), in,
                     NULL, 8, &r) == LAMINAR_OK);
  EXPECT(vi(&r, 0) == 11 && vnull(&r, 1) && vi(&r, 3) == 3 && r.len == 8);
  CHECK(lm_expr_eval(ctx, call2(&t, LM_XOP_SUB, LM_TYPE_INT64, lit_i(&t, 10), y), in,
                     NULL, 8, &r) == LAMINAR_OK);
  EXPECT(vi(&r, 0) == 8 && vi(&r, 4) == 12 && vi(&r, 7) == 11 && r.nulls == NULL);
  CHECK(lm_expr_eval(ctx,
                     call2(&t, LM_XOP_MOD, LM_TYPE_INT64, lit_i(&t, 10), lit_i(&t, 0)),
                     in, NULL, 8, &r) == LAMINAR_OK);
  for (int k = 0; k < 8; k++) EXPECT(vnull(&r, k));
  CHECK(lm_expr_eval(ctx,
                     call2(&t, LM_XOP_MUL, LM_TYPE_INT64, lit_i(&t, 6), lit_i(&t, 7)), in,
                     NULL, 8, &r) == LAMINAR_OK);
  for (int k = 0; k < 8; k++) EXPECT(!vnull(&r, k) && vi(&r, k) == 42);
  EXPECT(r.nulls == NULL);

  /* NULL inputs propagate; a NULL literal makes everything NULL. */
  lm_vec in2[2] = {vec_i64(&t, a, 8, "N.N....."), vec_i64(&t, b, 8, "...N...N")};
  CHECK(lm_expr_eval(ctx, call2(&t, LM_XOP_ADD, LM_TYPE_INT64, x, y), in2, NULL, 8, &r) ==
        LAMINAR_OK);
  EXPECT(vnull(&r, 0) && vnull(&r, 1) && vnull(&r, 2) && vnull(&r, 3) && !vnull(&r, 4) &&
         vnull(&r, 7) && vi(&r, 4) == 5);
  CHECK(lm_expr_eval(ctx, call2(&t, LM_XOP_MOD, LM_TYPE_INT64, x, y), in2, NULL, 8, &r) ==
        LAMINAR_OK);
  EXPECT(vnull(&r, 5) && vnull(&r, 0) && !vnull(&r, 6));
  EXPECT(in2[0].nulls[5] == 0); /* the input null array was not written to */
  CHECK(lm_expr_eval(ctx,
                     call2(&t, LM_XOP_ADD, LM_TYPE_INT64, x, lit_null(&t, LM_TYPE_INT64)),
                     in, NULL, 8, &r) == LAMINAR_OK);
  for (int k = 0; k < 8; k++) EXPECT(vnull(&r, k));

  /* TIMESTAMP +- INT64 micros and TIMESTAMP - TIMESTAMP. */
  lm_vec ts = vec_i64(&t, a, 8, "");
  ts.type = LM_TYPE_TIMESTAMP;
  lm_vec in3[2] = {ts, in[1]};
  lm_expr* tcol = col(&t, 0, LM_TYPE_TIMESTAMP);
  CHECK(lm_expr_eval(ctx, call2(&t, LM_XOP_ADD, LM_TYPE_TIMESTAMP, tcol, y), in3, NULL, 8,
                     &r) == LAMINAR_OK);
  EXPECT(r.type == LM_TYPE_TIMESTAMP && vi(&r, 0) == 3 && vnull(&r, 1));
  CHECK(lm_expr_eval(ctx, call2(&t, LM_XOP_SUB, LM_TYPE_INT64, tcol, tcol), in3, NULL, 8,
                     &r) == LAMINAR_OK);
  EXPECT(r.type == LM_TYPE_INT64 && vi(&r, 2) == 0 && r.nulls == NULL);

  lm_eval_ctx_destroy(ctx);
  tb_free(&t);
  return 0;
}

static bool same_double(double a, double b) {
  if (isnan(a) || isnan(b)) return isnan(a) && isnan(b);
  return a == b && signbit(a) == signbit(b);
}

static int test_arith_double(void) {
  tb t = {0};
  lm_eval_ctx* ctx;
  CHECK(lm_eval_ctx_create(&ctx) == LAMINAR_OK);
  const double a[] = {1.5, 1.0, -7.5, 5.0, NAN, INFINITY, 1e308, 0.0};
  const double b[] = {0.5, 0.0, 2.0, -0.0, 1.0, INFINITY, 10.0, -1.0};
  lm_vec in[2] = {vec_f64(&t, a, 8, ""), vec_f64(&t, b, 8, ".......N")};
  lm_expr* x = col(&t, 0, LM_TYPE_DOUBLE);
  lm_expr* y = col(&t, 1, LM_TYPE_DOUBLE);
  lm_vec r;
  CHECK(lm_expr_eval(ctx, call2(&t, LM_XOP_DIV, LM_TYPE_DOUBLE, x, y), in, NULL, 8, &r) ==
        LAMINAR_OK);
  /* IEEE division, as DuckDB's: 1 / 0 = inf, 5 / -0.0 = -inf, 0 / 0 = NaN. */
  EXPECT(vd(&r, 0) == 3.0 && !vnull(&r, 1) && vd(&r, 1) == INFINITY &&
         vd(&r, 2) == -3.75);
  EXPECT(!vnull(&r, 3) && vd(&r, 3) == -INFINITY);
  EXPECT(!vnull(&r, 4) && isnan(vd(&r, 4)));
  EXPECT(!vnull(&r, 5) && isnan(vd(&r, 5)));
  EXPECT(vd(&r, 6) == 1e307 && vnull(&r, 7));
  CHECK(lm_expr_eval(ctx, call2(&t, LM_XOP_MOD, LM_TYPE_DOUBLE, x, y), in, NULL, 8, &r) ==
        LAMINAR_OK);
  EXPECT(vd(&r, 0) == 0.0 && isnan(vd(&r, 1)) && vd(&r, 2) == -1.5 && isnan(vd(&r, 3)));
  EXPECT(r.nulls != NULL && !vnull(&r, 1) &&
         vnull(&r, 7)); /* fmod(x, 0) is NaN, not NULL */
  CHECK(lm_expr_eval(ctx, call2(&t, LM_XOP_MUL, LM_TYPE_DOUBLE, x, y), in, NULL, 8, &r) ==
        LAMINAR_OK);
  EXPECT(vd(&r, 0) == 0.75 && isinf(vd(&r, 6)) && vnull(&r, 7) && !vnull(&r, 6));
  EXPECT(same_double(vd(&r, 3), -0.0));
  CHECK(lm_expr_eval(ctx, call2(&t, LM_XOP_SUB, LM_TYPE_DOUBLE, x, lit_d(&t, 0.5)), in,
                     NULL, 8, &r) == LAMINAR_OK);
  EXPECT(vd(&r, 0) == 1.0 && r.nulls == NULL);
  CHECK(lm_expr_eval(ctx, call1(&t, LM_XOP_NEG, LM_TYPE_DOUBLE, x), in, NULL, 8, &r) ==
        LAMINAR_OK);
  EXPECT(vd(&r, 0) == -1.5 && same_double(vd(&r, 7), -0.0));
  CHECK(lm_expr_eval(
            ctx, call2(&t, LM_XOP_DIV, LM_TYPE_DOUBLE, lit_d(&t, 1.0), lit_d(&t, 0.0)),
            in, NULL, 3, &r) == LAMINAR_OK);
  EXPECT(r.len == 3 && r.nulls == NULL && vd(&r, 0) == INFINITY && vd(&r, 2) == INFINITY);
  lm_eval_ctx_destroy(ctx);
  tb_free(&t);
  return 0;
}

/* ---- logic ------------------------------------------------------------------------- */

static int test_logic_truth_tables(void) {
  tb t = {0};
  lm_eval_ctx* ctx;
  CHECK(lm_eval_ctx_create(&ctx) == LAMINAR_OK);
  /* All 9 combinations of (a, b) over {TRUE, FALSE, NULL}. */
  const uint8_t av[] = {1, 1, 1, 0, 0, 0, 0, 0, 0};
  const uint8_t bv[] = {1, 0, 0, 1, 0, 0, 1, 0, 0};
  lm_vec in[2] = {vec_bool(&t, av, 9, "......NNN"), vec_bool(&t, bv, 9, "..N..N..N")};
  lm_expr* a = col(&t, 0, LM_TYPE_BOOL);
  lm_expr* b = col(&t, 1, LM_TYPE_BOOL);
  lm_vec r;
  /* rows: TT TF TN FT FF FN NT NF NN */
  CHECK(lm_expr_eval(ctx, call2(&t, LM_XOP_AND, LM_TYPE_BOOL, a, b), in, NULL, 9, &r) ==
        LAMINAR_OK);
  EXPECT(bools_are(&r, "tfNfffNfN"));
  CHECK(lm_expr_eval(ctx, call2(&t, LM_XOP_OR, LM_TYPE_BOOL, a, b), in, NULL, 9, &r) ==
        LAMINAR_OK);
  EXPECT(bools_are(&r, "ttttfNtNN"));
  CHECK(lm_expr_eval(ctx, call1(&t, LM_XOP_NOT, LM_TYPE_BOOL, a), in, NULL, 9, &r) ==
        LAMINAR_OK);
  EXPECT(bools_are(&r,
                   "fffttt"
                   "NNN"));
  CHECK(lm_expr_eval(ctx, call1(&t, LM_XOP_IS_NULL, LM_TYPE_BOOL, b), in, NULL, 9, &r) ==
        LAMINAR_OK);
  EXPECT(bools_are(&r, "fftfftfft") && r.nulls == NULL);
  CHECK(lm_expr_eval(ctx, call1(&t, LM_XOP_IS_NOT_NULL, LM_TYPE_BOOL, a), in, NULL, 9,
                     &r) == LAMINAR_OK);
  EXPECT(bools_are(&r,
                   "tttttt"
                   "fff") &&
         r.nulls == NULL);

  /* The same tables with one side a constant (TRUE, FALSE, NULL) on either
   * side, and with both constant. */
  const uint8_t dv[] = {1, 0, 0};
  lm_vec in3[1] = {vec_bool(&t, dv, 3, "..N")};
  lm_expr* d = col(&t, 0, LM_TYPE_BOOL);
  lm_expr* consts[3] = {lit_b(&t, true), lit_b(&t, false), lit_null(&t, LM_TYPE_BOOL)};
  const char* and_rows[3] = {"tfN", "fff", "NfN"};
  const char* or_rows[3] = {"ttt", "tfN", "tNN"};
  for (int c = 0; c < 3; c++) {
    CHECK(lm_expr_eval(ctx, call2(&t, LM_XOP_AND, LM_TYPE_BOOL, consts[c], d), in3, NULL,
                       3, &r) == LAMINAR_OK);
    EXPECT(bools_are(&r, and_rows[c]));
    CHECK(lm_expr_eval(ctx, call2(&t, LM_XOP_AND, LM_TYPE_BOOL, d, consts[c]), in3, NULL,
                       3, &r) == LAMINAR_OK);
    EXPECT(bools_are(&r, and_rows[c]));
    CHECK(lm_expr_eval(ctx, call2(&t, LM_XOP_OR, LM_TYPE_BOOL, consts[c], d), in3, NULL,
                       3, &r) == LAMINAR_OK);
    EXPECT(bools_are(&r, or_rows[c]));
    CHECK(lm_expr_eval(ctx, call2(&t, LM_XOP_OR, LM_TYPE_BOOL, d, consts[c]), in3, NULL,
                       3, &r) == LAMINAR_OK);
    EXPECT(bools_are(&r, or_rows[c]));
    for (int c2 = 0; c2 < 3; c2++) {
      char want_and[2] = {and_rows[c][c2], 0}, want_or[2] = {or_rows[c][c2], 0};
      CHECK(lm_expr_eval(ctx, call2(&t, LM_XOP_AND, LM_TYPE_BOOL, consts[c], consts[c2]),
                         in3, NULL, 1, &r) == LAMINAR_OK);
      EXPECT(bools_are(&r, want_and));
      CHECK(lm_expr_eval(ctx, call2(&t, LM_XOP_OR, LM_TYPE_BOOL, consts[c], consts[c2]),
                         in3, NULL, 1, &r) == LAMINAR_OK);
      EXPECT(bools_are(&r, want_or));
    }
    CHECK(lm_expr_eval(ctx, call1(&t, LM_XOP_NOT, LM_TYPE_BOOL, consts[c]), in3, NULL, 2,
                       &r) == LAMINAR_OK);
    EXPECT(bools_are(&r, c == 0 ? "ff" : c == 1 ? "tt" : "NN"));
    CHECK(lm_expr_eval(ctx, call1(&t, LM_XOP_IS_NULL, LM_TYPE_BOOL, consts[c]), in3, NULL,
                       2, &r) == LAMINAR_OK);
    EXPECT(bools_are(&r, c == 2 ? "tt" : "ff"));
  }
  /* No nulls in: the fast path. */
  lm_vec in4[2] = {vec_bool(&t, av, 9, ""), vec_bool(&t, bv, 9, "")};
  CHECK(lm_expr_eval(ctx, call2(&t, LM_XOP_AND, LM_TYPE_BOOL, a, b), in4, NULL, 9, &r) ==
        LAMINAR_OK);
  EXPECT(bools_are(&r, "tffffffff") && r.nulls == NULL);
  CHECK(lm_expr_eval(ctx, call2(&t, LM_XOP_OR, LM_TYPE_BOOL, a, b), in4, NULL, 9, &r) ==
        LAMINAR_OK);
  EXPECT(bools_are(&r, "ttttfftff") && r.nulls == NULL);
  lm_eval_ctx_destroy(ctx);
  tb_free(&t);
  return 0;
}

/* ---- comparisons --------------------------------------------------------------------- */

static int test_compare(void) {
  tb t = {0};
  lm_eval_ctx* ctx;
  CHECK(lm_eval_ctx_create(&ctx) == LAMINAR_OK);
  lm_vec r;
  static const lm_expr_op ops[6] = {LM_XOP_EQ, LM_XOP_NE, LM_XOP_LT,
                                    LM_XOP_LE, LM_XOP_GT, LM_XOP_GE};

  /* INT64 with a NULL: rows (1,2) (2,2) (3,2) (NULL,2). */
  const int64_t ia[] = {1, 2, 3, 9}, ib[] = {2, 2, 2, 2};
  lm_vec iin[2] = {vec_i64(&t, ia, 4, "...N"), vec_i64(&t, ib, 4, "")};
  const char* iwant[6] = {"ftfN", "tftN", "tffN", "ttfN", "fftN", "fttN"};
  for (int o = 0; o < 6; o++) {
    CHECK(lm_expr_eval(ctx,
                       call2(&t, ops[o], LM_TYPE_BOOL, col(&t, 0, LM_TYPE_INT64),
                             col(&t, 1, LM_TYPE_INT64)),
                       iin, NULL, 4, &r) == LAMINAR_OK);
    EXPECT(bools_are(&r, iwant[o]));
    /* column vs literal 2 gives the same answers */
    CHECK(lm_expr_eval(
              ctx,
              call2(&t, ops[o], LM_TYPE_BOOL, col(&t, 0, LM_TYPE_INT64), lit_i(&t, 2)),
              iin, NULL, 4, &r) == LAMINAR_OK);
    EXPECT(bools_are(&r, iwant[o]));
  }
  /* literal on the left: 2 < x */
  CHECK(lm_expr_eval(
            ctx,
            call2(&t, LM_XOP_LT, LM_TYPE_BOOL, lit_i(&t, 2), col(&t, 0, LM_TYPE_INT64)),
            iin, NULL, 4, &r) == LAMINAR_OK);
  EXPECT(bools_are(&r, "fftN"));

  /* DOUBLE: DuckDB orders NaN above everything and equal to itself; -0 == 0. */
  const double da[] = {NAN, NAN, 1.0, -0.0, INFINITY, 1.0};
  const double db[] = {NAN, INFINITY, NAN, 0.0, 1.0, 2.0};
  lm_vec din[2] = {vec_f64(&t, da, 6, ""), vec_f64(&t, db, 6, ".....N")};
  const char* dwant[6] = {"tfftfN", "fttftN", "fftffN", "tfttfN", "ftfftN", "ttfttN"};
  for (int o = 0; o < 6; o++) {
    CHECK(lm_expr_eval(ctx,
                       call2(&t, ops[o], LM_TYPE_BOOL, col(&t, 0, LM_TYPE_DOUBLE),
                             col(&t, 1, LM_TYPE_DOUBLE)),
                       din, NULL, 6, &r) == LAMINAR_OK);
    EXPECT(bools_are(&r, dwant[o]));
  }

  /* STRING: bytewise, then length; NULL rows never read. */
  const char* sa[] = {"abc", "ab", "B", "", "\xc3\xa9", "same", NULL};
  const char* sb[] = {"abd", "abc", "a", "", "z", "same", "x"};
  lm_vec sin_[2] = {vec_str(&t, sa, 7, "......N"), vec_str(&t, sb, 7, "")};
  const char* swant[6] = {"ffftftN",
                          "tttftfN",
                          "tttfffN",
                          "ttttftN",
                          "fffftfN",
                          "fffttt"
                          "N"};
  for (int o = 0; o < 6; o++) {
    CHECK(lm_expr_eval(ctx,
                       call2(&t, ops[o], LM_TYPE_BOOL, col(&t, 0, LM_TYPE_STRING),
                             col(&t, 1, LM_TYPE_STRING)),
                       sin_, NULL, 7, &r) == LAMINAR_OK);
    EXPECT(bools_are(&r, swant[o]));
  }
  CHECK(lm_expr_eval(ctx,
                     call2(&t, LM_XOP_EQ, LM_TYPE_BOOL, col(&t, 1, LM_TYPE_STRING),
                           lit_s(&t, "same")),
                     sin_, NULL, 7, &r) == LAMINAR_OK);
  EXPECT(bools_are(&r, "ffffftf"));

  /* BOOL: false < true. */
  const uint8_t ba[] = {0, 1, 1}, bb[] = {1, 0, 1};
  lm_vec bin[2] = {vec_bool(&t, ba, 3, ""), vec_bool(&t, bb, 3, "")};
  CHECK(lm_expr_eval(ctx,
                     call2(&t, LM_XOP_LT, LM_TYPE_BOOL, col(&t, 0, LM_TYPE_BOOL),
                           col(&t, 1, LM_TYPE_BOOL)),
                     bin, NULL, 3, &r) == LAMINAR_OK);
  EXPECT(bools_are(&r, "tff"));

  /* TIMESTAMP as int64, and INT32 columns. */
  lm_vec tin[2] = {vec_i64(&t, ia, 4, ""), vec_i64(&t, ib, 4, "")};
  tin[0].type = tin[1].type = LM_TYPE_TIMESTAMP;
  CHECK(lm_expr_eval(ctx,
                     call2(&t, LM_XOP_GE, LM_TYPE_BOOL, col(&t, 0, LM_TYPE_TIMESTAMP),
                           col(&t, 1, LM_TYPE_TIMESTAMP)),
                     tin, NULL, 4, &r) == LAMINAR_OK);
  EXPECT(bools_are(&r, "fttt"));
  const int32_t i32[] = {5, -5, 0};
  lm_vec i32in[1] = {{LM_TYPE_INT32, 3, NULL, i32}};
  CHECK(lm_expr_eval(ctx,
                     call2(&t, LM_XOP_GT, LM_TYPE_BOOL, col(&t, 0, LM_TYPE_INT32),
                           cast(&t, LM_TYPE_INT32, lit_i(&t, 0))),
                     i32in, NULL, 3, &r) == LAMINAR_OK);
  EXPECT(bools_are(&r, "tff"));
  /* NULL literal compared: NULL. */
  CHECK(lm_expr_eval(ctx,
                     call2(&t, LM_XOP_EQ, LM_TYPE_BOOL, col(&t, 0, LM_TYPE_INT64),
                           lit_null(&t, LM_TYPE_INT64)),
                     iin, NULL, 4, &r) == LAMINAR_OK);
  EXPECT(bools_are(&r, "NNNN"));
  lm_eval_ctx_destroy(ctx);
  tb_free(&t);
  return 0;
}

/* ---- CASE, COALESCE, CONCAT ------------------------------------------------------------ */

static lm_expr* case_expr(tb* t, lm_type type, bool has_else, int32_t nargs,
                          lm_expr** args) {
  lm_expr* e = calln(t, LM_XOP_CASE, type, nargs, args);
  e->has_else = has_else;
  return e;
}

static int test_case(void) {
  tb t = {0};
  lm_eval_ctx* ctx;
  CHECK(lm_eval_ctx_create(&ctx) == LAMINAR_OK);
  const int64_t xv[] = {-5, 0, 5, 50, 7, 0};
  const int64_t yv[] = {1, 2, 0, 4, 5, 0};
  lm_vec in[2] = {vec_i64(&t, xv, 6, "....N."), vec_i64(&t, yv, 6, "")};
  lm_expr* x = col(&t, 0, LM_TYPE_INT64);
  lm_expr* y = col(&t, 1, LM_TYPE_INT64);
  lm_vec r;

  /* CASE WHEN x < 0 THEN 'neg' WHEN x < 10 THEN 'small' ELSE 'big' END;
   * x NULL: both WHENs NULL -> ELSE. */
  lm_expr* a1[5] = {call2(&t, LM_XOP_LT, LM_TYPE_BOOL, x, lit_i(&t, 0)), lit_s(&t, "neg"),
                    call2(&t, LM_XOP_LT, LM_TYPE_BOOL, x, lit_i(&t, 10)),
                    lit_s(&t, "small"), lit_s(&t, "big")};
  lm_expr* c1 = case_expr(&t, LM_TYPE_STRING, true, 5, a1);
  CHECK(lm_expr_eval(ctx, c1, in, NULL, 6, &r) == LAMINAR_OK);
  EXPECT(vs_eq(&r, 0, "neg") && vs_eq(&r, 1, "small") && vs_eq(&r, 2, "small"));
  EXPECT(vs_eq(&r, 3, "big") && vs_eq(&r, 4, "big") && vs_eq(&r, 5, "small"));
  EXPECT(r.nulls == NULL);

  /* Without ELSE: unmatched rows are NULL. */
  lm_expr* c2 = case_expr(&t, LM_TYPE_STRING, false, 4, a1);
  CHECK(lm_expr_eval(ctx, c2, in, NULL, 6, &r) == LAMINAR_OK);
  EXPECT(vs_eq(&r, 0, "neg") && vs_eq(&r, 1, "small") && vnull(&r, 3) && vnull(&r, 4));

  /* Guarded division: CASE WHEN y <> 0 THEN x % y ELSE -1 END. */
  lm_expr* a3[3] = {call2(&t, LM_XOP_NE, LM_TYPE_BOOL, y, lit_i(&t, 0)),
                    call2(&t, LM_XOP_MOD, LM_TYPE_INT64, x, y), lit_i(&t, -1)};
  CHECK(lm_expr_eval(ctx, case_expr(&t, LM_TYPE_INT64, true, 3, a3), in, NULL, 6, &r) ==
        LAMINAR_OK);
  EXPECT(vi(&r, 0) == 0 && vi(&r, 1) == 0 && vi(&r, 2) == -1 && vi(&r, 3) == 2 &&
         vnull(&r, 4) && vi(&r, 5) == -1);

  /* Nested: CASE WHEN x IS NULL THEN 0 ELSE CASE WHEN x > 0 THEN x * 2 END END. */
  lm_expr* inner_args[2] = {call2(&t, LM_XOP_GT, LM_TYPE_BOOL, x, lit_i(&t, 0)),
                            call2(&t, LM_XOP_MUL, LM_TYPE_INT64, x, lit_i(&t, 2))};
  lm_expr* inner = case_expr(&t, LM_TYPE_INT64, false, 2, inner_args);
  lm_expr* outer_args[3] = {call1(&t, LM_XOP_IS_NULL, LM_TYPE_BOOL, x), lit_i(&t, 0),
                            inner};
  lm_expr* nested = case_expr(&t, LM_TYPE_INT64, true, 3, outer_args);
  CHECK(lm_expr_eval(ctx, nested, in, NULL, 6, &r) == LAMINAR_OK);
  EXPECT(vnull(&r, 0) && vnull(&r, 1) && vi(&r, 2) == 10 && vi(&r, 3) == 100 &&
         !vnull(&r, 4) && vi(&r, 4) == 0 && vnull(&r, 5));

  /* With a selection: rows 1, 3, 4 only. */
  const uint32_t sel[3] = {1, 3, 4};
  CHECK(lm_expr_eval(ctx, nested, in, sel, 3, &r) == LAMINAR_OK);
  EXPECT(r.len == 3 && vnull(&r, 0) && vi(&r, 1) == 100 && vi(&r, 2) == 0);

  /* Constant conditions: WHEN NULL is not true; WHEN TRUE takes everything. */
  lm_expr* a4[5] = {lit_null(&t, LM_TYPE_BOOL), lit_i(&t, 1), lit_b(&t, true), y,
                    lit_i(&t, 3)};
  CHECK(lm_expr_eval(ctx, case_expr(&t, LM_TYPE_INT64, true, 5, a4), in, NULL, 6, &r) ==
        LAMINAR_OK);
  for (int k = 0; k < 6; k++) EXPECT(!vnull(&r, k) && vi(&r, k) == yv[k]);
  lm_expr* a5[3] = {lit_b(&t, false), lit_i(&t, 1), lit_i(&t, 3)};
  CHECK(lm_expr_eval(ctx, case_expr(&t, LM_TYPE_INT64, true, 3, a5), in, NULL, 6, &r) ==
        LAMINAR_OK);
  for (int k = 0; k < 6; k++) EXPECT(!vnull(&r, k) && vi(&r, k) == 3);
  /* THEN NULL literal of the NULL type. */
  lm_expr* a6[3] = {call2(&t, LM_XOP_GT, LM_TYPE_BOOL, x, lit_i(&t, 0)),
                    lit_null(&t, LM_TYPE_NULL), y};
  CHECK(lm_expr_eval(ctx, case_expr(&t, LM_TYPE_INT64, true, 3, a6), in, NULL, 6, &r) ==
        LAMINAR_OK);
  EXPECT(vi(&r, 0) == 1 && vnull(&r, 2) && vnull(&r, 3) && vi(&r, 4) == 5);
  /* Zero rows. */
  CHECK(lm_expr_eval(ctx, nested, in, sel, 0, &r) == LAMINAR_OK);
  EXPECT(r.len == 0);
  lm_eval_ctx_destroy(ctx);
  tb_free(&t);
  return 0;
}

static int test_coalesce(void) {
  tb t = {0};
  lm_eval_ctx* ctx;
  CHECK(lm_eval_ctx_create(&ctx) == LAMINAR_OK);
  const int64_t av[] = {1, 2, 3, 4}, bv[] = {10, 20, 30, 40};
  lm_vec in[3] = {vec_i64(&t, av, 4, "N.NN"), vec_i64(&t, bv, 4, "N..N"),
                  vec_i64(&t, bv, 4, "")};
  lm_expr* a = col(&t, 0, LM_TYPE_INT64);
  lm_expr* b = col(&t, 1, LM_TYPE_INT64);
  lm_vec r;
  lm_expr* args[3] = {a, b, lit_i(&t, -1)};
  CHECK(lm_expr_eval(ctx, calln(&t, LM_XOP_COALESCE, LM_TYPE_INT64, 3, args), in, NULL, 4,
                     &r) == LAMINAR_OK);
  EXPECT(vi(&r, 0) == -1 && vi(&r, 1) == 2 && vi(&r, 2) == 30 && vi(&r, 3) == -1 &&
         r.nulls == NULL);
  CHECK(lm_expr_eval(ctx, calln(&t, LM_XOP_COALESCE, LM_TYPE_INT64, 2, args), in, NULL, 4,
                     &r) == LAMINAR_OK);
  EXPECT(vnull(&r, 0) && vi(&r, 1) == 2 && vi(&r, 2) == 30 && vnull(&r, 3));
  lm_expr* nulls2[2] = {lit_null(&t, LM_TYPE_INT64), lit_null(&t, LM_TYPE_NULL)};
  CHECK(lm_expr_eval(ctx, calln(&t, LM_XOP_COALESCE, LM_TYPE_INT64, 2, nulls2), in, NULL,
                     4, &r) == LAMINAR_OK);
  EXPECT(vnull(&r, 0) && vnull(&r, 3) && r.type == LM_TYPE_INT64);
  /* A first argument without NULLs is the answer as it stands (zero-copy). */
  lm_expr* args2[2] = {col(&t, 2, LM_TYPE_INT64), a};
  CHECK(lm_expr_eval(ctx, calln(&t, LM_XOP_COALESCE, LM_TYPE_INT64, 2, args2), in, NULL,
                     4, &r) == LAMINAR_OK);
  EXPECT(r.data == in[2].data && r.nulls == NULL);
  /* NULL literal first, then the column, then a constant; with a selection. */
  lm_expr* args3[3] = {lit_null(&t, LM_TYPE_INT64), a, lit_i(&t, 7)};
  const uint32_t sel[2] = {1, 2};
  CHECK(lm_expr_eval(ctx, calln(&t, LM_XOP_COALESCE, LM_TYPE_INT64, 3, args3), in, sel, 2,
                     &r) == LAMINAR_OK);
  EXPECT(r.len == 2 && vi(&r, 0) == 2 && vi(&r, 1) == 7 && r.nulls == NULL);
  lm_eval_ctx_destroy(ctx);
  tb_free(&t);
  return 0;
}

static int test_concat(void) {
  tb t = {0};
  lm_eval_ctx* ctx;
  CHECK(lm_eval_ctx_create(&ctx) == LAMINAR_OK);
  const char* sa[] = {"ab", "", NULL, "x"};
  const char* sb[] = {"cd", "", "y", NULL};
  lm_vec in[2] = {vec_str(&t, sa, 4, "..N."), vec_str(&t, sb, 4, "...N")};
  lm_expr* a = col(&t, 0, LM_TYPE_STRING);
  lm_expr* b = col(&t, 1, LM_TYPE_STRING);
  lm_vec r;
  CHECK(lm_expr_eval(ctx, call2(&t, LM_XOP_CONCAT, LM_TYPE_STRING, a, b), in, NULL, 4,
                     &r) == LAMINAR_OK);
  EXPECT(vs_eq(&r, 0, "abcd") && vs_eq(&r, 1, "") && vnull(&r, 2) && vnull(&r, 3));
  lm_expr* e = call2(&t, LM_XOP_CONCAT, LM_TYPE_STRING, lit_s(&t, "<"),
                     call2(&t, LM_XOP_CONCAT, LM_TYPE_STRING, a, lit_s(&t, ">")));
  CHECK(lm_expr_eval(ctx, e, in, NULL, 4, &r) == LAMINAR_OK);
  EXPECT(vs_eq(&r, 0, "<ab>") && vs_eq(&r, 1, "<>") && vnull(&r, 2) &&
         vs_eq(&r, 3, "<x>"));
  CHECK(lm_expr_eval(
            ctx, call2(&t, LM_XOP_CONCAT, LM_TYPE_STRING, lit_s(&t, "p"), lit_s(&t, "q")),
            in, NULL, 4, &r) == LAMINAR_OK);
  for (int k = 0; k < 4; k++) EXPECT(vs_eq(&r, k, "pq"));
  lm_eval_ctx_destroy(ctx);
  tb_free(&t);
  return 0;
}

/* ---- CAST ---------------------------------------------------------------------------- */

/* CAST one literal and return the dense result (one row). */
static lm_vec cast1(lm_eval_ctx* ctx, tb* t, lm_expr* value, lm_type to) {
  lm_vec r = {0};
  if (lm_expr_eval(ctx, cast(t, to, value), NULL, NULL, 1, &r) != LAMINAR_OK) abort();
  return r;
}

static bool text_is(lm_eval_ctx* ctx, tb* t, lm_expr* value, const char* want) {
  lm_vec r = cast1(ctx, t, value, LM_TYPE_STRING);
  if (!vs_eq(&r, 0, want)) {
    lm_str s = ((const lm_str*)r.data)[0];
    fprintf(stderr, "  cast text: got '%.*s' want '%s'\n", (int)s.len, s.ptr ? s.ptr : "",
            want);
    return false;
  }
  return true;
}

static lm_expr* lit_ts(tb* t, int64_t micros) {
  lm_expr* e = lit(t, LM_TYPE_TIMESTAMP);
  e->lit.i = micros;
  return e;
}

static int test_cast_to_string(void) {
  tb t = {0};
  lm_eval_ctx* ctx;
  CHECK(lm_eval_ctx_create(&ctx) == LAMINAR_OK);
  /* Every expected string below is what DuckDB 2.0 prints for x::VARCHAR. */
  static const struct {
    double d;
    const char* s;
  } doubles[] = {
      {1.5, "1.5"},
      {0.1, "0.1"},
      {1e20, "1e+20"},
      {100.0, "100.0"},
      {1e15, "1000000000000000.0"},
      {1e16, "1e+16"},
      {1e-5, "1e-05"},
      {0.0001, "0.0001"},
      {1e-7, "1e-07"},
      {-0.0, "-0.0"},
      {0.0, "0.0"},
      {1.0 / 3.0, "0.3333333333333333"},
      {2.5e-10, "2.5e-10"},
      {123.456, "123.456"},
      {1e21, "1e+21"},
      {12345678.9, "12345678.9"},
      {1e7, "10000000.0"},
      {1.5e300, "1.5e+300"},
      {0.000123, "0.000123"},
      {5e-324, "5e-324"},
      {1.7976931348623157e308, "1.7976931348623157e+308"},
      {123456789012345678.0, "1.2345678901234568e+17"},
      {-1.25e-8, "-1.25e-08"},
      {5.684341886080802e-14, "5.684341886080802e-14"},
      {9999999999999998.0, "9999999999999998.0"},
      {7.291122019556398e-304, "7.291122019556398e-304"},
      {NAN, "nan"},
      {INFINITY, "inf"},
      {-INFINITY, "-inf"},
  };
  for (size_t i = 0; i < sizeof doubles / sizeof doubles[0]; i++) {
    EXPECT(text_is(ctx, &t, lit_d(&t, doubles[i].d), doubles[i].s));
  }
  EXPECT(text_is(ctx, &t, lit_i(&t, 0), "0"));
  EXPECT(text_is(ctx, &t, lit_i(&t, -42), "-42"));
  EXPECT(text_is(ctx, &t, lit_i(&t, INT64_MIN), "-9223372036854775808"));
  EXPECT(text_is(ctx, &t, cast(&t, LM_TYPE_INT32, lit_i(&t, -7)), "-7"));
  EXPECT(text_is(ctx, &t, lit_b(&t, true), "true"));
  EXPECT(text_is(ctx, &t, lit_b(&t, false), "false"));
  /* Timestamps (micros since the epoch): DuckDB's '...'::TIMESTAMP::VARCHAR. */
  EXPECT(text_is(ctx, &t, lit_ts(&t, 0), "1970-01-01 00:00:00"));
  EXPECT(text_is(ctx, &t, lit_ts(&t, 1704449472500000), "2024-01-05 10:11:12.5"));
  EXPECT(text_is(ctx, &t, lit_ts(&t, 1704449472000500), "2024-01-05 10:11:12.0005"));
  EXPECT(text_is(ctx, &t, lit_ts(&t, -1), "1969-12-31 23:59:59.999999"));
  EXPECT(text_is(ctx, &t, lit_ts(&t, -60646060800000000), "0048-03-15 00:00:00"));
  EXPECT(text_is(ctx, &t, lit_ts(&t, 951782400000000), "2000-02-29 00:00:00"));
  /* BC dates as DuckDB prints them; INT64_MIN (beyond DuckDB's range) must
   * format without overflow. */
  EXPECT(text_is(ctx, &t, lit_ts(&t, -62135596800000001),
                 "0001-12-31 (BC) 23:59:59.999999"));
  EXPECT(text_is(ctx, &t, lit_ts(&t, INT64_MIN), "290309-12-21 (BC) 19:59:05.224192"));
  EXPECT(text_is(ctx, &t, lit_ts(&t, INT64_MAX), "294247-01-10 04:00:54.775807"));
  /* NULL in, NULL out. */
  lm_vec r = cast1(ctx, &t, lit_null(&t, LM_TYPE_DOUBLE), LM_TYPE_STRING);
  EXPECT(vnull(&r, 0));
  lm_eval_ctx_destroy(ctx);
  tb_free(&t);
  return 0;
}

static int test_cast_from_string(void) {
  tb t = {0};
  lm_eval_ctx* ctx;
  CHECK(lm_eval_ctx_create(&ctx) == LAMINAR_OK);
  /* DuckDB's TRY_CAST(s AS BIGINT); NULL_I marks "NULL". */
  const int64_t NULL_I = 0x7eadbeef;
  static const struct {
    const char* s;
    int64_t v;
  } ints[] = {
      {" 12 ", 12},
      {"1.5", 2},
      {"2.5", 3},
      {"-2.5", -3},
      {"1.49", 1},
      {"+5", 5},
      {"1e2", 100},
      {"15e-1", 2},
      {"1e-1", 0},
      {"0x10", 16},
      {"0X1f", 31},
      {"0b101", 5},
      {"1_000", 1000},
      {"1__0", 0x7eadbeef},
      {"_1", 0x7eadbeef},
      {"1_", 0x7eadbeef},
      {"1.", 1},
      {".5", 1},
      {"", 0x7eadbeef},
      {"  ", 0x7eadbeef},
      {"abc", 0x7eadbeef},
      {"1 2", 0x7eadbeef},
      {"9223372036854775807", INT64_MAX},
      {"9223372036854775808", 0x7eadbeef},
      {"-9223372036854775808", INT64_MIN},
      {"9223372036854775807.4", INT64_MAX},
      {"1e19", 0x7eadbeef},
      {"-0x10", 0x7eadbeef},
      {"0x8000000000000000", 0x7eadbeef},
      {"1.5e1", 15},
      {"1_000.5", 1001},
      {"00012", 12},
      {"-0", 0},
      {"-", 0x7eadbeef},
      {"1.5.", 0x7eadbeef},
      {"1e2.5", 0x7eadbeef},
      {"\t5\n", 5},
      {" 0x10 ", 0x7eadbeef},
  };
  for (size_t i = 0; i < sizeof ints / sizeof ints[0]; i++) {
    lm_vec r = cast1(ctx, &t, lit_s(&t, ints[i].s), LM_TYPE_INT64);
    bool ok =
        ints[i].v == NULL_I ? vnull(&r, 0) : (!vnull(&r, 0) && vi(&r, 0) == ints[i].v);
    if (!ok) fprintf(stderr, "  '%s' -> BIGINT wrong\n", ints[i].s);
    EXPECT(ok);
  }
  lm_vec r = cast1(ctx, &t, lit_s(&t, "2147483648"), LM_TYPE_INT32);
  EXPECT(vnull(&r, 0));
  r = cast1(ctx, &t, lit_s(&t, "-2147483648.4"), LM_TYPE_INT32);
  EXPECT(!vnull(&r, 0) && vi32(&r, 0) == INT32_MIN);
  r = cast1(ctx, &t, lit_s(&t, "2147483647.5"), LM_TYPE_INT32);
  EXPECT(vnull(&r, 0));

  static const struct {
    const char* s;
    double v;
    bool null;
  } dbls[] = {
      {" 1.5 ", 1.5, false},
      {"inf", INFINITY, false},
      {"-Infinity", -INFINITY, false},
      {"1_000.5", 1000.5, false},
      {".5", 0.5, false},
      {"5.", 5.0, false},
      {"1e400", INFINITY, false},
      {"1e-400", 0.0, false},
      {"1.5E+2", 150.0, false},
      {"+.5", 0.5, false},
      {"1e1_0", 1e10, false},
      {"-", 0, true},
      {"0x1p3", 0, true},
      {"0x10", 0, true},
      {"1,5", 0, true},
      {"1e", 0, true},
      {"e5", 0, true},
      {".e1", 0, true},
      {"1_.5", 0, true},
      {"infin", 0, true},
      {"nana", 0, true},
      {"", 0, true},
  };
  for (size_t i = 0; i < sizeof dbls / sizeof dbls[0]; i++) {
    r = cast1(ctx, &t, lit_s(&t, dbls[i].s), LM_TYPE_DOUBLE);
    bool ok = dbls[i].null ? vnull(&r, 0) : (!vnull(&r, 0) && vd(&r, 0) == dbls[i].v);
    if (!ok) fprintf(stderr, "  '%s' -> DOUBLE wrong\n", dbls[i].s);
    EXPECT(ok);
  }
  r = cast1(ctx, &t, lit_s(&t, "NaN"), LM_TYPE_DOUBLE);
  EXPECT(!vnull(&r, 0) && isnan(vd(&r, 0)));

  static const struct {
    const char* s;
    char want; /* 't', 'f', 'N' */
  } bools[] = {{"true", 't'}, {"TrUe", 't'}, {"T", 't'},     {"yes", 't'},
               {"Y", 't'},    {"1", 't'},    {"false", 'f'}, {"f", 'f'},
               {"No", 'f'},   {"n", 'f'},    {"0", 'f'},     {"2", 'N'},
               {"off", 'N'},  {"", 'N'},     {" TRUE ", 'N'}};
  for (size_t i = 0; i < sizeof bools / sizeof bools[0]; i++) {
    r = cast1(ctx, &t, lit_s(&t, bools[i].s), LM_TYPE_BOOL);
    char want[2] = {bools[i].want, 0};
    bool ok = bools_are(&r, want);
    if (!ok) fprintf(stderr, "  '%s' -> BOOLEAN wrong\n", bools[i].s);
    EXPECT(ok);
  }

  /* Timestamps; expected micros from DuckDB's epoch_us('...'::TIMESTAMP). */
  static const struct {
    const char* s;
    int64_t v;
    bool null;
  } tss[] = {
      {"2024-01-05", 1704412800000000, false},
      {"2024-01-05 10:11:12.5", 1704449472500000, false},
      {"2024-01-05T10:11:12", 1704449472000000, false},
      {"2024-1-5", 1704412800000000, false},
      {"2024-01-05 10:11", 1704449460000000, false},
      {"2024-01-05 24:00:00", 1704499200000000, false},
      {"2024-01-05 10:11:12.1234567", 1704449472123456, false},
      {" 2024-01-05", 1704412800000000, false},
      {"2024/01/05", 1704412800000000, false},
      {"2000-02-29", 951782400000000, false},
      {"1969-12-31 23:59:59.999999", -1, false},
      {"2024-01-05 10:11:12 ", 1704449472000000, false},
      {"2024-01-05 10:11:12Z", 1704449472000000, false},
      {"2024-01-05 1:2:3", 1704416523000000, false},
      {"2024-02-30", 0, true},
      {"2023-02-29", 0, true},
      {"1900-02-29", 0, true},
      {"2024-01-05 24:00:01", 0, true},
      {"2024-01/05", 0, true},
      {"2024-01-05T", 0, true},
      {"2024-01-05 10", 0, true},
      {"20240105", 0, true},
      {"2024-01-05 10:11:60", 0, true},
      {"2024-013-05", 0, true},
      {"2024-01-05 ", 0, true},
      {"294248-01-01", 0, true},
      {"", 0, true},
      {"x", 0, true},
  };
  for (size_t i = 0; i < sizeof tss / sizeof tss[0]; i++) {
    r = cast1(ctx, &t, lit_s(&t, tss[i].s), LM_TYPE_TIMESTAMP);
    bool ok = tss[i].null ? vnull(&r, 0) : (!vnull(&r, 0) && vi(&r, 0) == tss[i].v);
    if (!ok) fprintf(stderr, "  '%s' -> TIMESTAMP wrong\n", tss[i].s);
    EXPECT(ok);
  }
  lm_eval_ctx_destroy(ctx);
  tb_free(&t);
  return 0;
}

static int test_cast_numeric(void) {
  tb t = {0};
  lm_eval_ctx* ctx;
  CHECK(lm_eval_ctx_create(&ctx) == LAMINAR_OK);
  /* DOUBLE -> BIGINT: DuckDB 2.0 rounds ties to even; NaN / out of range NULL. */
  const double dv[] = {2.5,
                       3.5,
                       -2.5,
                       0.5,
                       -0.5,
                       2.5000001,
                       NAN,
                       1e19,
                       -9.2233720368547758e18,
                       9.2233720368547758e18,
                       INFINITY,
                       1.0};
  const char* dn = "...........N";
  lm_vec din[1] = {vec_f64(&t, dv, 12, dn)};
  lm_vec r;
  CHECK(lm_expr_eval(ctx, cast(&t, LM_TYPE_INT64, col(&t, 0, LM_TYPE_DOUBLE)), din, NULL,
                     12, &r) == LAMINAR_OK);
  const int64_t want64[] = {2, 4, -2, 0, 0, 3};
  for (int k = 0; k < 6; k++) EXPECT(!vnull(&r, k) && vi(&r, k) == want64[k]);
  EXPECT(vnull(&r, 6) && vnull(&r, 7) && !vnull(&r, 8) && vi(&r, 8) == INT64_MIN &&
         vnull(&r, 9) && vnull(&r, 10) && vnull(&r, 11));
  /* DOUBLE -> INT. */
  const double d32[] = {2147483647.4, 2147483647.5, -2147483648.5, -2147483648.6, 1.5};
  lm_vec d32in[1] = {vec_f64(&t, d32, 5, "")};
  CHECK(lm_expr_eval(ctx, cast(&t, LM_TYPE_INT32, col(&t, 0, LM_TYPE_DOUBLE)), d32in,
                     NULL, 5, &r) == LAMINAR_OK);
  EXPECT(r.type == LM_TYPE_INT32 && vi32(&r, 0) == INT32_MAX && vnull(&r, 1) &&
         vi32(&r, 2) == INT32_MIN && vnull(&r, 3) && vi32(&r, 4) == 2);
  /* BIGINT -> INT range; -> DOUBLE; -> BOOLEAN; -> TIMESTAMP (micros). */
  const int64_t iv[] = {3000000000LL, -2147483648LL, 0, -5, 7};
  lm_vec iin[1] = {vec_i64(&t, iv, 5, "....N")};
  lm_expr* ic = col(&t, 0, LM_TYPE_INT64);
  CHECK(lm_expr_eval(ctx, cast(&t, LM_TYPE_INT32, ic), iin, NULL, 5, &r) == LAMINAR_OK);
  EXPECT(vnull(&r, 0) && vi32(&r, 1) == INT32_MIN && vi32(&r, 2) == 0 &&
         vi32(&r, 3) == -5 && vnull(&r, 4));
  CHECK(lm_expr_eval(ctx, cast(&t, LM_TYPE_DOUBLE, ic), iin, NULL, 5, &r) == LAMINAR_OK);
  EXPECT(vd(&r, 0) == 3e9 && vd(&r, 3) == -5.0 && vnull(&r, 4) && !vnull(&r, 3));
  CHECK(lm_expr_eval(ctx, cast(&t, LM_TYPE_BOOL, ic), iin, NULL, 5, &r) == LAMINAR_OK);
  EXPECT(bools_are(&r, "ttftN"));
  CHECK(lm_expr_eval(ctx, cast(&t, LM_TYPE_TIMESTAMP, ic), iin, NULL, 5, &r) ==
        LAMINAR_OK);
  EXPECT(r.type == LM_TYPE_TIMESTAMP && vi(&r, 0) == 3000000000LL && vnull(&r, 4));
  CHECK(lm_expr_eval(ctx, cast(&t, LM_TYPE_INT64, cast(&t, LM_TYPE_TIMESTAMP, ic)), iin,
                     NULL, 5, &r) == LAMINAR_OK);
  EXPECT(r.type == LM_TYPE_INT64 && vi(&r, 3) == -5);
  /* BOOLEAN <-> numbers. */
  const uint8_t bv[] = {1, 0, 1};
  lm_vec bin[1] = {vec_bool(&t, bv, 3, "..N")};
  lm_expr* bc = col(&t, 0, LM_TYPE_BOOL);
  CHECK(lm_expr_eval(ctx, cast(&t, LM_TYPE_INT64, bc), bin, NULL, 3, &r) == LAMINAR_OK);
  EXPECT(vi(&r, 0) == 1 && vi(&r, 1) == 0 && vnull(&r, 2));
  CHECK(lm_expr_eval(ctx, cast(&t, LM_TYPE_DOUBLE, bc), bin, NULL, 3, &r) == LAMINAR_OK);
  EXPECT(vd(&r, 0) == 1.0 && vd(&r, 1) == 0.0 && vnull(&r, 2));
  CHECK(lm_expr_eval(ctx, cast(&t, LM_TYPE_INT32, bc), bin, NULL, 3, &r) == LAMINAR_OK);
  EXPECT(vi32(&r, 0) == 1 && vi32(&r, 1) == 0 && vnull(&r, 2));
  CHECK(lm_expr_eval(ctx, cast(&t, LM_TYPE_TIMESTAMP, bc), bin, NULL, 3, &r) ==
        LAMINAR_OK);
  EXPECT(vnull(&r, 0) && vnull(&r, 1) && vnull(&r, 2));
  /* DOUBLE -> BOOLEAN: x != 0, NaN is true (DuckDB). */
  const double bd[] = {0.5, 0.0, -0.0, NAN};
  lm_vec bdin[1] = {vec_f64(&t, bd, 4, "")};
  CHECK(lm_expr_eval(ctx, cast(&t, LM_TYPE_BOOL, col(&t, 0, LM_TYPE_DOUBLE)), bdin, NULL,
                     4, &r) == LAMINAR_OK);
  EXPECT(bools_are(&r, "tfft") && r.nulls == NULL);
  /* Same type: identity, zero-copy. */
  CHECK(lm_expr_eval(ctx, cast(&t, LM_TYPE_INT64, ic), iin, NULL, 5, &r) == LAMINAR_OK);
  EXPECT(r.data == iin[0].data);
  /* A NULL literal of the NULL type cast to anything. */
  lm_vec nr = cast1(ctx, &t, lit_null(&t, LM_TYPE_NULL), LM_TYPE_STRING);
  EXPECT(nr.type == LM_TYPE_STRING && vnull(&nr, 0));
  lm_eval_ctx_destroy(ctx);
  tb_free(&t);
  return 0;
}

/* Doubles printed and parsed back are the same double (shortest round trip). */
static int test_cast_double_roundtrip(void) {
  uint64_t state = lm_test_seed() ^ 0x5eed;
  for (int i = 0; i < 20000; i++) {
    uint64_t bits = lm_test_rand(&state);
    double d;
    if (i % 2) {
      memcpy(&d, &bits, sizeof d);
    } else {
      d = (double)(int64_t)(bits >> 11) * pow(10.0, (double)((int)(bits % 40) - 20)) /
          1e6;
    }
    if (isnan(d) || isinf(d)) continue;
    char buf[LM_EXPR_DOUBLE_TEXT_MAX + 1];
    int n = lm_expr_format_double(d, buf, sizeof buf - 1);
    buf[n] = '\0';
    double back;
    CHECK(lm_expr_parse_double((lm_str){buf, n}, &back));
    if (!same_double(back, d)) {
      fprintf(stderr, "  %.17g printed as %s\n", d, buf);
      CHECK(0);
    }
    CHECK(strchr(buf, '.') != NULL || strchr(buf, 'e') != NULL);
  }
  return 0;
}

/* Random text cast to every type: no crash or over-read (the strings are
 * exact-size heap copies, so ASan sees any), and every decimal the integer
 * parser accepts the double parser accepts too, with a close value. */
static int test_cast_random_strings(void) {
  tb t = {0};
  uint64_t state = lm_test_seed() ^ 0xca57;
  lm_eval_ctx* ctx;
  CHECK(lm_eval_ctx_create(&ctx) == LAMINAR_OK);
  static const char alphabet[] = "0123456789+-._eExXbB :T/Zinfa\t";
  enum { N = 512 };
  lm_str* strs = tb_alloc(&t, sizeof(lm_str) * N);
  for (int round = 0; round < 40; round++) {
    lm_eval_ctx_reset(ctx);
    for (int k = 0; k < N; k++) {
      int len = (int)(lm_test_rand(&state) % 24);
      char* p = tb_alloc(&t, (size_t)len);
      for (int i = 0; i < len; i++) {
        p[i] = lm_test_rand(&state) % 3 == 0
                   ? (char)('0' + lm_test_rand(&state) % 10)
                   : alphabet[lm_test_rand(&state) % (sizeof alphabet - 1)];
      }
      strs[k] = (lm_str){len ? p : NULL, len};
    }
    lm_vec in[1] = {{LM_TYPE_STRING, N, NULL, strs}};
    lm_expr* c = col(&t, 0, LM_TYPE_STRING);
    static const lm_type tos[5] = {LM_TYPE_INT64, LM_TYPE_INT32, LM_TYPE_DOUBLE,
                                   LM_TYPE_BOOL, LM_TYPE_TIMESTAMP};
    lm_vec outs[5];
    for (int i = 0; i < 5; i++) {
      CHECK(lm_expr_eval(ctx, cast(&t, tos[i], c), in, NULL, N, &outs[i]) == LAMINAR_OK);
      EXPECT(outs[i].len == N && nulls_tidy(&outs[i]));
    }
    for (int k = 0; k < N; k++) {
      bool radix = false;
      for (int64_t i = 0; i < strs[k].len; i++)
        radix |= strchr("xXbB", strs[k].ptr[i]) != NULL;
      if (radix || vnull(&outs[0], k)) continue;
      CHECK(!vnull(&outs[2], k));
      double dv = vd(&outs[2], k);
      EXPECT(fabs(dv - (double)vi(&outs[0], k)) <= 0.5 + fabs(dv) * 1e-15);
    }
  }
  lm_eval_ctx_destroy(ctx);
  tb_free(&t);
  return 0;
}

/* ---- filter and selection ------------------------------------------------------------ */

static int test_filter(void) {
  tb t = {0};
  lm_eval_ctx* ctx;
  CHECK(lm_eval_ctx_create(&ctx) == LAMINAR_OK);
  const int64_t xv[] = {5, 1, 7, 9, 2, 8, 6, 3};
  lm_vec in[1] = {vec_i64(&t, xv, 8, "..N.....")};
  lm_expr* x = col(&t, 0, LM_TYPE_INT64);
  lm_expr* gt4 = call2(&t, LM_XOP_GT, LM_TYPE_BOOL, x, lit_i(&t, 4));
  uint32_t out[8];
  int64_t m = -1;
  CHECK(lm_expr_filter(ctx, gt4, in, NULL, 8, out, &m) == LAMINAR_OK);
  CHECK(m == 4); /* NULL row 2 is dropped */
  EXPECT(out[0] == 0 && out[1] == 3 && out[2] == 5 && out[3] == 6);

  /* A selection in: original row numbers out. */
  const uint32_t sel[5] = {1, 2, 3, 5, 7};
  CHECK(lm_expr_filter(ctx, gt4, in, sel, 5, out, &m) == LAMINAR_OK);
  CHECK(m == 2);
  EXPECT(out[0] == 3 && out[1] == 5);

  /* In place (out_sel == sel). */
  uint32_t inplace[5] = {1, 2, 3, 5, 7};
  CHECK(lm_expr_filter(ctx, gt4, in, inplace, 5, inplace, &m) == LAMINAR_OK);
  CHECK(m == 2);
  EXPECT(inplace[0] == 3 && inplace[1] == 5);

  /* AND splits: x > 4 AND x < 9 AND x IS NOT NULL. */
  lm_expr* lt9 = call2(&t, LM_XOP_LT, LM_TYPE_BOOL, x, lit_i(&t, 9));
  lm_expr* both = call2(&t, LM_XOP_AND, LM_TYPE_BOOL, gt4, lt9);
  lm_expr* three = call2(&t, LM_XOP_AND, LM_TYPE_BOOL, both,
                         call1(&t, LM_XOP_IS_NOT_NULL, LM_TYPE_BOOL, x));
  CHECK(lm_expr_filter(ctx, three, in, NULL, 8, out, &m) == LAMINAR_OK);
  CHECK(m == 3);
  EXPECT(out[0] == 0 && out[1] == 5 && out[2] == 6);
  uint32_t sel2[5] = {1, 2, 3, 5, 7};
  CHECK(lm_expr_filter(ctx, three, in, sel2, 5, sel2, &m) == LAMINAR_OK);
  CHECK(m == 1);
  EXPECT(sel2[0] == 5);
  /* AND whose first conjunct keeps everything. */
  lm_expr* keep_all = call2(&t, LM_XOP_AND, LM_TYPE_BOOL, lit_b(&t, true), gt4);
  CHECK(lm_expr_filter(ctx, keep_all, in, NULL, 8, out, &m) == LAMINAR_OK);
  CHECK(m == 4);
  EXPECT(out[0] == 0 && out[3] == 6);

  /* Constant predicates. */
  CHECK(lm_expr_filter(ctx, lit_b(&t, true), in, sel, 5, out, &m) == LAMINAR_OK);
  EXPECT(m == 5 && out[0] == 1 && out[4] == 7);
  CHECK(lm_expr_filter(ctx, lit_null(&t, LM_TYPE_BOOL), in, NULL, 8, out, &m) ==
        LAMINAR_OK);
  EXPECT(m == 0);
  CHECK(lm_expr_filter(ctx, lit_b(&t, false), in, NULL, 8, out, &m) == LAMINAR_OK);
  EXPECT(m == 0);
  /* OR with NULL: NULL OR TRUE keeps, NULL OR FALSE drops. */
  lm_expr* either = call2(&t, LM_XOP_OR, LM_TYPE_BOOL, gt4,
                          call2(&t, LM_XOP_EQ, LM_TYPE_BOOL, x, lit_i(&t, 1)));
  CHECK(lm_expr_filter(ctx, either, in, NULL, 8, out, &m) == LAMINAR_OK);
  EXPECT(m == 5 && out[0] == 0 && out[1] == 1 && out[2] == 3);
  lm_eval_ctx_destroy(ctx);
  tb_free(&t);
  return 0;
}

static int test_column_and_literal(void) {
  tb t = {0};
  lm_eval_ctx* ctx;
  CHECK(lm_eval_ctx_create(&ctx) == LAMINAR_OK);
  const int64_t xv[] = {5, 1, 7, 9};
  const char* sv[] = {"a", "bb", NULL, "dddd"};
  lm_vec in[2] = {vec_i64(&t, xv, 4, ".N.."), vec_str(&t, sv, 4, "..N.")};
  lm_vec r;
  /* sel == NULL: zero-copy. */
  CHECK(lm_expr_eval(ctx, col(&t, 0, LM_TYPE_INT64), in, NULL, 4, &r) == LAMINAR_OK);
  EXPECT(r.data == in[0].data && r.nulls == in[0].nulls && r.len == 4);
  /* With a selection: gathered; a subset without nulls has nulls == NULL. */
  const uint32_t sel[2] = {0, 3};
  CHECK(lm_expr_eval(ctx, col(&t, 0, LM_TYPE_INT64), in, sel, 2, &r) == LAMINAR_OK);
  EXPECT(r.len == 2 && vi(&r, 0) == 5 && vi(&r, 1) == 9 && r.nulls == NULL &&
         r.data != in[0].data);
  const uint32_t sel2[2] = {1, 2};
  CHECK(lm_expr_eval(ctx, col(&t, 1, LM_TYPE_STRING), in, sel2, 2, &r) == LAMINAR_OK);
  EXPECT(vs_eq(&r, 0, "bb") && vnull(&r, 1));
  /* Literals broadcast to nsel rows. */
  CHECK(lm_expr_eval(ctx, lit_s(&t, "hey"), in, sel2, 2, &r) == LAMINAR_OK);
  EXPECT(r.len == 2 && vs_eq(&r, 0, "hey") && vs_eq(&r, 1, "hey") && r.nulls == NULL);
  CHECK(lm_expr_eval(ctx, lit_null(&t, LM_TYPE_DOUBLE), in, NULL, 3, &r) == LAMINAR_OK);
  EXPECT(r.len == 3 && r.type == LM_TYPE_DOUBLE && vnull(&r, 0) && vnull(&r, 2));
  CHECK(lm_expr_eval(ctx, cast(&t, LM_TYPE_INT32, lit_i(&t, 12)), in, NULL, 3, &r) ==
        LAMINAR_OK);
  EXPECT(r.type == LM_TYPE_INT32 && vi32(&r, 2) == 12);
  CHECK(lm_expr_eval(ctx, lit_b(&t, true), in, NULL, 0, &r) == LAMINAR_OK);
  EXPECT(r.len == 0);
  EXPECT(lm_expr_is_constant(
      call2(&t, LM_XOP_ADD, LM_TYPE_INT64, lit_i(&t, 1), lit_i(&t, 2))));
  EXPECT(!lm_expr_is_constant(
      call2(&t, LM_XOP_ADD, LM_TYPE_INT64, lit_i(&t, 1), col(&t, 0, LM_TYPE_INT64))));
  lm_eval_ctx_destroy(ctx);
  tb_free(&t);
  return 0;
}

/* After the first batch, evaluating batches of the same size allocates nothing. */
static int test_ctx_steady_state(void) {
  tb t = {0};
  lm_eval_ctx* ctx;
  CHECK(lm_eval_ctx_create(&ctx) == LAMINAR_OK);
  enum { N = 50000 };
  int64_t* xv = tb_alloc(&t, sizeof(int64_t) * N);
  for (int64_t k = 0; k < N; k++) xv[k] = k;
  lm_vec in[1] = {vec_i64(&t, xv, N, "")};
  lm_expr* x = col(&t, 0, LM_TYPE_INT64);
  lm_expr* e = cast(&t, LM_TYPE_STRING,
                    call2(&t, LM_XOP_MUL, LM_TYPE_INT64,
                          call2(&t, LM_XOP_ADD, LM_TYPE_INT64, x, x), lit_i(&t, 3)));
  uint64_t mallocs_after_first = 0;
  for (int round = 0; round < 5; round++) {
    lm_eval_ctx_reset(ctx);
    lm_vec r;
    CHECK(lm_expr_eval(ctx, e, in, NULL, N, &r) == LAMINAR_OK);
    EXPECT(vs_eq(&r, N - 1, "299994"));
    if (round == 1) mallocs_after_first = lm_eval_ctx_mallocs(ctx);
    if (round > 1) EXPECT(lm_eval_ctx_mallocs(ctx) == mallocs_after_first);
  }
  EXPECT(lm_eval_ctx_reserved(ctx) > 0);
  /* Zero-byte allocations are valid and distinct from NULL. */
  EXPECT(lm_eval_ctx_alloc(ctx, 0) != NULL);
  lm_eval_ctx_destroy(ctx);
  lm_eval_ctx_destroy(NULL);
  tb_free(&t);
  return 0;
}

/* ---- randomized differential test --------------------------------------------------- */

/* A scalar value for the reference evaluator. */
typedef struct sval {
  bool null;
  int64_t i;
  double d;
  bool b;
} sval;

enum { RCOLS = 5 }; /* 0,1 INT64; 2,3 DOUBLE; 4 BOOL */
static const lm_type rcol_types[RCOLS] = {LM_TYPE_INT64, LM_TYPE_INT64, LM_TYPE_DOUBLE,
                                          LM_TYPE_DOUBLE, LM_TYPE_BOOL};

typedef struct rgen {
  uint64_t state;
  tb* t;
} rgen;

static uint64_t rnd(rgen* g, uint64_t n) { return lm_test_rand(&g->state) % n; }

static int64_t rand_i64(rgen* g) {
  switch (rnd(g, 6)) {
    case 0: return INT64_MAX - (int64_t)rnd(g, 3);
    case 1: return INT64_MIN + (int64_t)rnd(g, 3);
    case 2: return (int64_t)lm_test_rand(&g->state);
    case 3: return (int64_t)rnd(g, 4000000000ULL) - 2000000000;
    default: return (int64_t)rnd(g, 21) - 10;
  }
}

static double rand_f64(rgen* g) {
  switch (rnd(g, 8)) {
    case 0: return NAN;
    case 1: return rnd(g, 2) ? INFINITY : -INFINITY;
    case 2: return rnd(g, 2) ? 0.0 : -0.0;
    case 3: return (double)rand_i64(g);
    case 4: return ((double)rnd(g, 2000001) - 1000000.0) / 8.0;
    default: return ((double)rnd(g, 41) - 20.0) / 2.0;
  }
}

static lm_expr* gen(rgen* g, lm_type type, int depth);

static lm_expr* gen_leaf(rgen* g, lm_type type) {
  tb* t = g->t;
  if (rnd(g, 10) < 7) {
    int c;
    if (type == LM_TYPE_INT64)
      c = (int)rnd(g, 2);
    else if (type == LM_TYPE_DOUBLE)
      c = 2 + (int)rnd(g, 2);
    else
      c = 4;
    return col(t, c, type);
  }
  if (rnd(g, 8) == 0) return lit_null(t, type);
  switch (type) {
    case LM_TYPE_INT64: return lit_i(t, rand_i64(g));
    case LM_TYPE_DOUBLE: return lit_d(t, rand_f64(g));
    default: return lit_b(t, rnd(g, 2));
  }
}

static lm_expr* gen_case(rgen* g, lm_type type, int depth) {
  int nwhen = 1 + (int)rnd(g, 2);
  bool has_else = rnd(g, 2);
  lm_expr* args[5];
  int n = 0;
  for (int w = 0; w < nwhen; w++) {
    args[n++] = gen(g, LM_TYPE_BOOL, depth - 1);
    args[n++] = gen(g, type, depth - 1);
  }
  if (has_else) args[n++] = gen(g, type, depth - 1);
  return case_expr(g->t, type, has_else, n, args);
}

static lm_expr* gen(rgen* g, lm_type type, int depth) {
  tb* t = g->t;
  if (depth <= 0 || rnd(g, 5) == 0) return gen_leaf(g, type);
  static const lm_expr_op arith[] = {LM_XOP_ADD, LM_XOP_SUB, LM_XOP_MUL, LM_XOP_MOD,
                                     LM_XOP_DIV};
  static const lm_expr_op cmps[] = {LM_XOP_EQ, LM_XOP_NE, LM_XOP_LT,
                                    LM_XOP_LE, LM_XOP_GT, LM_XOP_GE};
  if (type == LM_TYPE_BOOL) {
    switch (rnd(g, 8)) {
      case 0:
      case 1: {
        lm_type ot = rnd(g, 2) ? LM_TYPE_INT64 : LM_TYPE_DOUBLE;
        return call2(t, cmps[rnd(g, 6)], LM_TYPE_BOOL, gen(g, ot, depth - 1),
                     gen(g, ot, depth - 1));
      }
      case 2:
        return call2(t, LM_XOP_AND, LM_TYPE_BOOL, gen(g, type, depth - 1),
                     gen(g, type, depth - 1));
      case 3:
        return call2(t, LM_XOP_OR, LM_TYPE_BOOL, gen(g, type, depth - 1),
                     gen(g, type, depth - 1));
      case 4: return call1(t, LM_XOP_NOT, LM_TYPE_BOOL, gen(g, type, depth - 1));
      case 5: {
        lm_type ot = (lm_type)rcol_types[rnd(g, RCOLS)];
        return call1(t, rnd(g, 2) ? LM_XOP_IS_NULL : LM_XOP_IS_NOT_NULL, LM_TYPE_BOOL,
                     gen(g, ot, depth - 1));
      }
      case 6: return gen_case(g, type, depth);
      default:
        return cast(t, LM_TYPE_BOOL,
                    gen(g, rnd(g, 2) ? LM_TYPE_INT64 : LM_TYPE_DOUBLE, depth - 1));
    }
  }
  switch (rnd(g, 7)) {
    case 0:
    case 1:
    case 2: {
      lm_expr_op op = arith[rnd(g, type == LM_TYPE_DOUBLE ? 5 : 4)];
      return call2(t, op, type, gen(g, type, depth - 1), gen(g, type, depth - 1));
    }
    case 3: return call1(t, LM_XOP_NEG, type, gen(g, type, depth - 1));
    case 4: return gen_case(g, type, depth);
    case 5: {
      int n = 1 + (int)rnd(g, 3);
      lm_expr* args[3];
      for (int i = 0; i < n; i++) args[i] = gen(g, type, depth - 1);
      return calln(t, LM_XOP_COALESCE, type, n, args);
    }
    default: {
      lm_type from = type == LM_TYPE_INT64 ? (rnd(g, 2) ? LM_TYPE_DOUBLE : LM_TYPE_BOOL)
                                           : (rnd(g, 2) ? LM_TYPE_INT64 : LM_TYPE_BOOL);
      return cast(t, type, gen(g, from, depth - 1));
    }
  }
}

/* Reference semantics, one row at a time, written independently of eval.c. */
static bool ref_lt_d(double a, double b) {
  if (isnan(a)) return false;
  if (isnan(b)) return true;
  return a < b;
}
static bool ref_eq_d(double a, double b) {
  if (isnan(a) || isnan(b)) return isnan(a) && isnan(b);
  return a == b;
}

static sval ref_eval(const lm_expr* e, const lm_vec* in, int64_t row);

static sval ref_null(void) {
  sval v = {0};
  v.null = true;
  return v;
}

static sval ref_call(const lm_expr* e, const lm_vec* in, int64_t row) {
  sval r = {0};
  if (e->op == LM_XOP_CASE) {
    int32_t nwhen = (e->nargs - (e->has_else ? 1 : 0)) / 2;
    for (int32_t w = 0; w < nwhen; w++) {
      sval c = ref_eval(e->args[2 * w], in, row);
      if (!c.null && c.b) return ref_eval(e->args[2 * w + 1], in, row);
    }
    return e->has_else ? ref_eval(e->args[e->nargs - 1], in, row) : ref_null();
  }
  if (e->op == LM_XOP_COALESCE) {
    for (int32_t i = 0; i < e->nargs; i++) {
      sval v = ref_eval(e->args[i], in, row);
      if (!v.null) return v;
    }
    return ref_null();
  }
  sval a = ref_eval(e->args[0], in, row);
  sval b = e->nargs > 1 ? ref_eval(e->args[1], in, row) : ref_null();
  lm_type at = e->args[0]->type;
  switch (e->op) {
    case LM_XOP_AND:
      if ((!a.null && !a.b) || (!b.null && !b.b)) return r;
      if (a.null || b.null) return ref_null();
      r.b = true;
      return r;
    case LM_XOP_OR:
      if ((!a.null && a.b) || (!b.null && b.b)) {
        r.b = true;
        return r;
      }
      if (a.null || b.null) return ref_null();
      return r;
    case LM_XOP_IS_NULL: r.b = a.null; return r;
    case LM_XOP_IS_NOT_NULL: r.b = !a.null; return r;
    default: break;
  }
  if (a.null || (e->nargs > 1 && b.null)) return ref_null();
  switch (e->op) {
    case LM_XOP_NOT: r.b = !a.b; return r;
    case LM_XOP_NEG:
      if (e->type == LM_TYPE_DOUBLE) {
        r.d = -a.d;
      } else {
        if (a.i == INT64_MIN) return ref_null();
        r.i = -a.i;
      }
      return r;
    case LM_XOP_ADD:
    case LM_XOP_SUB:
    case LM_XOP_MUL:
    case LM_XOP_DIV:
    case LM_XOP_MOD:
      if (e->type == LM_TYPE_DOUBLE) {
        switch (e->op) {
          case LM_XOP_ADD: r.d = a.d + b.d; break;
          case LM_XOP_SUB: r.d = a.d - b.d; break;
          case LM_XOP_MUL: r.d = a.d * b.d; break;
          case LM_XOP_DIV: r.d = a.d / b.d; break; /* IEEE, as DuckDB's DOUBLE '/' */
          default: r.d = fmod(a.d, b.d); break;
        }
        return r;
      }
      switch (e->op) {
        case LM_XOP_ADD:
          if (__builtin_add_overflow(a.i, b.i, &r.i)) return ref_null();
          break;
        case LM_XOP_SUB:
          if (__builtin_sub_overflow(a.i, b.i, &r.i)) return ref_null();
          break;
        case LM_XOP_MUL:
          if (__builtin_mul_overflow(a.i, b.i, &r.i)) return ref_null();
          break;
        default:
          if (b.i == 0 || (b.i == -1 && a.i == INT64_MIN)) return ref_null();
          r.i = b.i == -1 ? 0 : a.i % b.i;
          break;
      }
      return r;
    case LM_XOP_EQ:
    case LM_XOP_NE:
    case LM_XOP_LT:
    case LM_XOP_LE:
    case LM_XOP_GT:
    case LM_XOP_GE: {
      bool lt, eq;
      if (at == LM_TYPE_DOUBLE) {
        lt = ref_lt_d(a.d, b.d);
        eq = ref_eq_d(a.d, b.d);
      } else if (at == LM_TYPE_BOOL) {
        lt = !a.b && b.b;
        eq = a.b == b.b;
      } else {
        lt = a.i < b.i;
        eq = a.i == b.i;
      }
      switch (e->op) {
        case LM_XOP_EQ: r.b = eq; break;
        case LM_XOP_NE: r.b = !eq; break;
        case LM_XOP_LT: r.b = lt; break;
        case LM_XOP_LE: r.b = lt || eq; break;
        case LM_XOP_GT: r.b = !lt && !eq; break;
        default: r.b = !lt; break;
      }
      return r;
    }
    case LM_XOP_CAST:
      if (e->type == LM_TYPE_BOOL) {
        r.b = at == LM_TYPE_DOUBLE ? a.d != 0 : at == LM_TYPE_INT64 ? a.i != 0 : a.b;
      } else if (e->type == LM_TYPE_DOUBLE) {
        r.d = at == LM_TYPE_INT64  ? (double)a.i
              : at == LM_TYPE_BOOL ? (a.b ? 1.0 : 0.0)
                                   : a.d;
      } else if (at == LM_TYPE_BOOL) {
        r.i = a.b;
      } else if (at == LM_TYPE_DOUBLE) {
        /* ties to even, by hand */
        if (isnan(a.d)) return ref_null();
        double fl = floor(a.d), diff = a.d - fl, v = fl;
        if (diff > 0.5 || (diff == 0.5 && fmod(fl, 2.0) != 0)) v = fl + 1;
        if (!(v >= -9223372036854775808.0 && v < 9223372036854775808.0))
          return ref_null();
        r.i = (int64_t)v;
      } else {
        r.i = a.i;
      }
      return r;
    default: break;
  }
  abort();
}

static sval ref_eval(const lm_expr* e, const lm_vec* in, int64_t row) {
  sval r = {0};
  if (e->kind == LM_EXPR_LITERAL) {
    r.null = e->lit.is_null;
    r.i = e->lit.i;
    r.d = e->lit.d;
    r.b = e->lit.b;
    return r;
  }
  if (e->kind == LM_EXPR_COLUMN) {
    const lm_vec* v = &in[e->column];
    if (vnull(v, row)) return ref_null();
    if (v->type == LM_TYPE_DOUBLE)
      r.d = vd(v, row);
    else if (v->type == LM_TYPE_BOOL)
      r.b = vb(v, row);
    else
      r.i = vi(v, row);
    return r;
  }
  return ref_call(e, in, row);
}

/* Whether dense result row k matches reference value s. */
static bool matches(const lm_vec* v, int64_t k, sval s) {
  if (vnull(v, k) != s.null) return false;
  if (s.null) return true;
  switch (v->type) {
    case LM_TYPE_INT64: return vi(v, k) == s.i;
    case LM_TYPE_DOUBLE: return same_double(vd(v, k), s.d);
    case LM_TYPE_BOOL: return (vb(v, k) != 0) == s.b;
    default: return false;
  }
}

static int test_random_differential(void) {
  tb t = {0};
  rgen g = {lm_test_seed(), &t};
  lm_eval_ctx* ctx;
  CHECK(lm_eval_ctx_create(&ctx) == LAMINAR_OK);
  enum { N = 257 };
  uint32_t* sel = tb_alloc(&t, sizeof(uint32_t) * N);
  uint32_t* fsel = tb_alloc(&t, sizeof(uint32_t) * N);
  for (int batch = 0; batch < 40; batch++) {
    /* Random columns, each with its own null density (sometimes none). */
    lm_vec in[RCOLS];
    for (int c = 0; c < RCOLS; c++) {
      uint64_t density = rnd(&g, 4); /* 0: no nulls */
      uint8_t* nl = density ? tb_alloc(&t, N) : NULL;
      void* data = tb_alloc(&t, (size_t)lm_type_width(rcol_types[c]) * N);
      for (int64_t k = 0; k < N; k++) {
        if (nl) nl[k] = rnd(&g, 8) < density;
        if (rcol_types[c] == LM_TYPE_INT64)
          ((int64_t*)data)[k] = rand_i64(&g);
        else if (rcol_types[c] == LM_TYPE_DOUBLE)
          ((double*)data)[k] = rand_f64(&g);
        else
          ((uint8_t*)data)[k] = (uint8_t)rnd(&g, 2);
      }
      in[c] = (lm_vec){rcol_types[c], N, nl, data};
    }
    int64_t nsel = 0;
    for (uint32_t k = 0; k < N; k++) {
      if (rnd(&g, 3) == 0) sel[nsel++] = k;
    }
    for (int q = 0; q < 50; q++) {
      lm_eval_ctx_reset(ctx);
      static const lm_type types[3] = {LM_TYPE_INT64, LM_TYPE_DOUBLE, LM_TYPE_BOOL};
      lm_type type = types[rnd(&g, 3)];
      lm_expr* e = gen(&g, type, 1 + (int)rnd(&g, 4));
      lm_vec all, sub;
      CHECK(lm_expr_eval(ctx, e, in, NULL, N, &all) == LAMINAR_OK);
      CHECK(lm_expr_eval(ctx, e, in, sel, nsel, &sub) == LAMINAR_OK);
      CHECK(all.len == N && sub.len == nsel && all.type == type && sub.type == type);
      EXPECT(nulls_tidy(&all) && nulls_tidy(&sub));
      for (int64_t k = 0; k < N; k++) {
        sval want = ref_eval(e, in, k);
        if (!matches(&all, k, want)) {
          fprintf(stderr,
                  "  batch %d query %d row %lld: vectorized differs from reference\n",
                  batch, q, (long long)k);
          CHECK(0);
        }
      }
      for (int64_t j = 0; j < nsel; j++) {
        if (!matches(&sub, j, ref_eval(e, in, sel[j]))) {
          fprintf(stderr, "  batch %d query %d sel %lld: selection result differs\n",
                  batch, q, (long long)j);
          CHECK(0);
        }
      }
      if (type == LM_TYPE_BOOL) {
        int64_t m;
        CHECK(lm_expr_filter(ctx, e, in, sel, nsel, fsel, &m) == LAMINAR_OK);
        int64_t want_m = 0;
        for (int64_t j = 0; j < nsel; j++) {
          sval v = ref_eval(e, in, sel[j]);
          if (!v.null && v.b) {
            CHECK(want_m < m && fsel[want_m] == sel[j]);
            want_m++;
          }
        }
        CHECK(m == want_m);
      }
    }
  }
  lm_eval_ctx_destroy(ctx);
  tb_free(&t);
  return 0;
}

int main(int argc, char** argv) {
  static const lm_test_case cases[] = {
      {"arith_int", test_arith_int},
      {"arith_double", test_arith_double},
      {"logic_truth_tables", test_logic_truth_tables},
      {"compare", test_compare},
      {"case", test_case},
      {"coalesce", test_coalesce},
      {"concat", test_concat},
      {"cast_to_string", test_cast_to_string},
      {"cast_from_string", test_cast_from_string},
      {"cast_numeric", test_cast_numeric},
      {"cast_double_roundtrip", test_cast_double_roundtrip},
      {"cast_random_strings", test_cast_random_strings},
      {"filter", test_filter},
      {"column_and_literal", test_column_and_literal},
      {"ctx_steady_state", test_ctx_steady_state},
      {"random_differential", test_random_differential},
      {NULL, NULL},
  };
  return lm_test_main(argc, argv, cases);
}
