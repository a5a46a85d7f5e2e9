/*
 * eval.c -- vectorized evaluation of bound expressions (see expr.h): the
 * kernels of every operator and the recursive dispatch over the tree.
 *
 * Internally a sub-expression yields an lm_xvec (internal.h): either a dense
 * vector or a constant standing for every row, so `col + 1` runs a loop over
 * the column against a scalar and `1 + 2` costs one element. Kernels are tight
 * loops over typed arrays in three shapes (vector/vector, vector/constant,
 * constant/vector) that the compiler vectorizes. NULLs are hoisted out of the
 * loops: a strict operator computes values for every row and merges the input
 * null arrays (none when neither input has one); operators that can create
 * NULLs (integer overflow, division by zero) track a fault flag in the loop and
 * only on a fault allocate and fill a null array. CASE and COALESCE evaluate
 * each branch only over the rows still needing a value (sub-selections).
 *
 * All memory comes from the lm_eval_ctx; nothing is allocated per row.
 */
#include "expr/internal.h"

#include "util/util.h"

#include <math.h>
#include <string.h>

/* ---- constants and vector helpers ------------------------------------------------ */

/* Storage a constant NULL points at: one null byte and a zero value of any type. */
static const uint8_t k_null_byte = 1;
static const union {
  int64_t i;
  double d;
  lm_str s;
} k_zero_value;

static void set_const_null(lm_type type, int64_t n, lm_xvec* out) {
  out->v = (lm_vec){type, n, &k_null_byte, &k_zero_value};
  out->cst = true;
}

static inline bool xvec_is_const_null(const lm_xvec* x) {
  return x->cst && x->v.nulls != NULL && x->v.nulls[0];
}

/* Bytes for `m` values of `type` from the context. */
static void* alloc_values(lm_eval_ctx* ctx, lm_type type, int64_t m) {
  return lm_eval_ctx_alloc(ctx, (size_t)lm_type_width(type) * (size_t)m);
}

/* A constant of `type` whose single value is copied from `value` (width bytes). */
static laminar_code set_const(lm_eval_ctx* ctx, lm_type type, int64_t n,
                              const void* value, lm_xvec* out) {
  void* data = alloc_values(ctx, type, 1);
  if (data == NULL) return LAMINAR_ERR_NOMEM;
  memcpy(data, value, (size_t)lm_type_width(type));
  out->v = (lm_vec){type, n, NULL, data};
  out->cst = true;
  return LAMINAR_OK;
}

static laminar_code set_const_bool(lm_eval_ctx* ctx, int64_t n, bool b, lm_xvec* out) {
  uint8_t v = b;
  return set_const(ctx, LM_TYPE_BOOL, n, &v, out);
}

/* Rows where the dense null arrays na or nb (either may be NULL) are set, over
 * m rows. *out is NULL when no row is null; *owned tells whether *out is fresh
 * context memory the caller may write. */
__attribute__((noinline)) static laminar_code merge_nulls(lm_eval_ctx* ctx,
                                                          const uint8_t* na,
                                                          const uint8_t* nb, int64_t m,
                                                          const uint8_t** out,
                                                          bool* owned) {
  *owned = false;
  if (na == NULL || nb == NULL) {
    *out = na != NULL ? na : nb;
    return LAMINAR_OK;
  }
  uint8_t* nl = lm_eval_ctx_alloc(ctx, (size_t)m);
  if (nl == NULL) return LAMINAR_ERR_NOMEM;
  /* Out of line: inlined into lm_expr_eval_x the loop stayed scalar, 3
   * instructions a row (vectorized here: 1/10 of that). */
  uint8_t any = 0;
  for (int64_t k = 0; k < m; k++) {
    uint8_t x = (uint8_t)(na[k] | nb[k]);
    nl[k] = x;
    any |= x;
  }
  *out = any ? nl : NULL;
  *owned = any != 0;
  return LAMINAR_OK;
}

/* A writable copy of `nulls` (zeros when NULL) unless it is already owned. */
static uint8_t* writable_nulls(lm_eval_ctx* ctx, const uint8_t* nulls, bool owned,
                               int64_t m) {
  if (owned) return (uint8_t*)nulls;
  uint8_t* nl = lm_eval_ctx_alloc(ctx, (size_t)m);
  if (nl == NULL) return NULL;
  if (nulls != NULL) {
    memcpy(nl, nulls, (size_t)m);
  } else {
    memset(nl, 0, (size_t)m);
  }
  return nl;
}

/* Null array of `m` rows or NULL when none is set. */
static const uint8_t* nulls_or_none(const uint8_t* nl, int64_t m) {
  uint8_t any = 0;
  for (int64_t k = 0; k < m; k++) any |= nl[k];
  return any ? nl : NULL;
}

laminar_code lm_expr_densify(lm_eval_ctx* ctx, const lm_xvec* x, lm_vec* out) {
  if (!x->cst) {
    *out = x->v;
    return LAMINAR_OK;
  }
  int64_t n = x->v.len;
  lm_type type = x->v.type;
  void* data = alloc_values(ctx, type, n);
  if (data == NULL) return LAMINAR_ERR_NOMEM;
  uint8_t* nl = NULL;
  if (x->v.nulls != NULL && x->v.nulls[0]) {
    nl = lm_eval_ctx_alloc(ctx, (size_t)n);
    if (nl == NULL) return LAMINAR_ERR_NOMEM;
    memset(nl, 1, (size_t)n);
    memset(data, 0, (size_t)(lm_type_width(type) * n));
  } else {
    switch (lm_type_width(type)) {
      case 1: memset(data, *(const uint8_t*)x->v.data, (size_t)n); break;
      case 2: {
        int16_t c = *(const int16_t*)x->v.data;
        for (int64_t k = 0; k < n; k++) ((int16_t*)data)[k] = c;
        break;
      }
      case 4: {
        int32_t c = *(const int32_t*)x->v.data;
        for (int64_t k = 0; k < n; k++) ((int32_t*)data)[k] = c;
        break;
      }
      case 8: {
        int64_t c;
        memcpy(&c, x->v.data, 8);
        for (int64_t k = 0; k < n; k++) ((int64_t*)data)[k] = c;
        break;
      }
      default: {
        lm_str c = *(const lm_str*)x->v.data;
        for (int64_t k = 0; k < n; k++) ((lm_str*)data)[k] = c;
        break;
      }
    }
  }
  *out = (lm_vec){type, n, nl, data};
  return LAMINAR_OK;
}

/* Convert an intermediate to `type` when it is not already stored that way
 * (the binder normally inserts the casts; this keeps kernels safe when it did
 * not, e.g. an INT32 column compared with an INT64 one). */
static laminar_code coerce(lm_eval_ctx* ctx, lm_xvec* x, lm_type type) {
  lm_type t = x->v.type;
  if (t == type) return LAMINAR_OK;
  bool i64a = t == LM_TYPE_INT64 || t == LM_TYPE_TIMESTAMP;
  bool i64b = type == LM_TYPE_INT64 || type == LM_TYPE_TIMESTAMP;
  if (i64a && i64b) return LAMINAR_OK; /* same storage */
  if (xvec_is_const_null(x)) {
    set_const_null(type, x->v.len, x);
    return LAMINAR_OK;
  }
  lm_vec src = x->v;
  if (x->cst) src.len = 1;
  lm_vec dst;
  LM_TRY(lm_expr_cast(ctx, &src, type, &dst));
  dst.len = x->v.len;
  x->v = dst;
  return LAMINAR_OK;
}

/* ---- column and literal -------------------------------------------------------- */

static laminar_code eval_column(lm_eval_ctx* ctx, const lm_expr* e, const lm_vec* in,
                                const uint32_t* sel, int64_t n, lm_xvec* out) {
  const lm_vec* src = &in[e->column];
  out->cst = false;
  if (sel == NULL) {
    out->v = *src;
    out->v.len = n;
    return LAMINAR_OK;
  }
  void* data = alloc_values(ctx, src->type, n);
  if (data == NULL) return LAMINAR_ERR_NOMEM;
  switch (lm_type_width(src->type)) {
    case 1: {
      const uint8_t* s = src->data;
      for (int64_t k = 0; k < n; k++) ((uint8_t*)data)[k] = s[sel[k]];
      break;
    }
    case 2: {
      const int16_t* s = src->data;
      for (int64_t k = 0; k < n; k++) ((int16_t*)data)[k] = s[sel[k]];
      break;
    }
    case 4: {
      const int32_t* s = src->data;
      for (int64_t k = 0; k < n; k++) ((int32_t*)data)[k] = s[sel[k]];
      break;
    }
    case 8: {
      const int64_t* s = src->data;
      for (int64_t k = 0; k < n; k++) ((int64_t*)data)[k] = s[sel[k]];
      break;
    }
    default: {
      const lm_str* s = src->data;
      for (int64_t k = 0; k < n; k++) ((lm_str*)data)[k] = s[sel[k]];
      break;
    }
  }
  const uint8_t* nulls = NULL;
  if (src->nulls != NULL) {
    uint8_t* nl = lm_eval_ctx_alloc(ctx, (size_t)n);
    if (nl == NULL) return LAMINAR_ERR_NOMEM;
    uint8_t any = 0;
    for (int64_t k = 0; k < n; k++) {
      nl[k] = src->nulls[sel[k]];
      any |= nl[k];
    }
    if (any) nulls = nl;
  }
  out->v = (lm_vec){src->type, n, nulls, data};
  return LAMINAR_OK;
}

static laminar_code eval_literal(lm_eval_ctx* ctx, const lm_expr* e, int64_t n,
                                 lm_xvec* out) {
  if (e->lit.is_null || e->type == LM_TYPE_NULL) {
    set_const_null(e->type, n, out);
    return LAMINAR_OK;
  }
  switch (e->type) {
    case LM_TYPE_BOOL: return set_const_bool(ctx, n, e->lit.b, out);
    case LM_TYPE_INT32:
    case LM_TYPE_DATE: {
      int32_t v = (int32_t)e->lit.i;
      return set_const(ctx, e->type, n, &v, out);
    }
    case LM_TYPE_INT16: {
      int16_t v = (int16_t)e->lit.i;
      return set_const(ctx, e->type, n, &v, out);
    }
    case LM_TYPE_INT8: {
      int8_t v = (int8_t)e->lit.i;
      return set_const(ctx, e->type, n, &v, out);
    }
    case LM_TYPE_INT64:
    case LM_TYPE_TIME:
    case LM_TYPE_TIMESTAMP: return set_const(ctx, e->type, n, &e->lit.i, out);
    case LM_TYPE_DOUBLE: return set_const(ctx, e->type, n, &e->lit.d, out);
    case LM_TYPE_BINARY:
    case LM_TYPE_STRING: return set_const(ctx, e->type, n, &e->lit.s, out);
    case LM_TYPE_FLOAT: {
      float v = (float)e->lit.d;
      return set_const(ctx, e->type, n, &v, out);
    }
    case LM_TYPE_DECIMAL:  // only NULL literals are typed DECIMAL
    case LM_TYPE_NULL: break;
  }
  return LAMINAR_ERR_INTERNAL;
}

/* ---- strict binary operators: shape of the loop --------------------------------- */

typedef struct bin_shape {
  int mode;             /* 0 vector/vector, 1 vector/constant, 2 constant/vector */
  int64_t m;            /* rows the kernel loops over (1 when both constant) */
  bool cst;             /* the result is constant */
  const uint8_t* nulls; /* input nulls merged over m rows, NULL when none */
  bool owned;           /* nulls is fresh context memory */
} bin_shape;

/* Neither a nor b may be a constant NULL (callers short-circuit that). */
static laminar_code bin_prepare(lm_eval_ctx* ctx, const lm_xvec* a, const lm_xvec* b,
                                int64_t n, bin_shape* s) {
  s->cst = a->cst && b->cst;
  s->mode = s->cst ? 0 : a->cst ? 2 : b->cst ? 1 : 0;
  s->m = s->cst ? 1 : n;
  return merge_nulls(ctx, a->cst ? NULL : a->v.nulls, b->cst ? NULL : b->v.nulls, s->m,
                     &s->nulls, &s->owned);
}

static laminar_code bin_output(lm_eval_ctx* ctx, lm_type type, int64_t n,
                               const bin_shape* s, void** data, lm_xvec* out) {
  *data = alloc_values(ctx, type, s->m);
  if (*data == NULL) return LAMINAR_ERR_NOMEM;
  out->v = (lm_vec){type, n, s->nulls, *data};
  out->cst = s->cst;
  return LAMINAR_OK;
}

/* Run STMT (which may use k, X and Y) over the loop shape. */
#define FOR3(T1, T2, mode, m, x, y, ...)  \
  do {                                    \
    if ((mode) == 0) {                    \
      for (int64_t k = 0; k < (m); k++) { \
        const T1 X = (x)[k];              \
        const T2 Y = (y)[k];              \
        __VA_ARGS__;                      \
      }                                   \
    } else if ((mode) == 1) {             \
      const T2 Y = (y)[0];                \
      for (int64_t k = 0; k < (m); k++) { \
        const T1 X = (x)[k];              \
        __VA_ARGS__;                      \
      }                                   \
    } else {                              \
      const T1 X = (x)[0];                \
      for (int64_t k = 0; k < (m); k++) { \
        const T2 Y = (y)[k];              \
        __VA_ARGS__;                      \
      }                                   \
    }                                     \
  } while (0)

/* Value of shape row k of an operand (index 0 for a constant). */
#define AT(x, mode, side, k) ((x)[((mode) == (side)) ? 0 : (k)])

/* ---- arithmetic ---------------------------------------------------------------- */

/* Whether x op y faults (gives NULL) for INT64 / TIMESTAMP micros. */
static bool i64_faults(lm_expr_op op, int64_t x, int64_t y) {
  int64_t r;
  switch (op) {
    case LM_XOP_ADD: return __builtin_add_overflow(x, y, &r);
    case LM_XOP_SUB: return __builtin_sub_overflow(x, y, &r);
    case LM_XOP_MUL: return __builtin_mul_overflow(x, y, &r);
    case LM_XOP_DIV: return y == 0 || (y == -1 && x == INT64_MIN);
    case LM_XOP_MOD: return y == 0 || (y == -1 && x == INT64_MIN);
    default: return false;
  }
}

static laminar_code arith_i64(lm_eval_ctx* ctx, lm_expr_op op, lm_type type,
                              const lm_xvec* a, const lm_xvec* b, int64_t n,
                              lm_xvec* out) {
  bin_shape s;
  LM_TRY(bin_prepare(ctx, a, b, n, &s));
  void* data;
  LM_TRY(bin_output(ctx, type, n, &s, &data, out));
  const int64_t* restrict x = a->v.data;
  const int64_t* restrict y = b->v.data;
  int64_t* restrict r = data;
  int mode = s.mode;
  int64_t m = s.m;
  uint8_t bad = 0;
  /* Wrapping arithmetic in unsigned (no UB) plus a sign test for overflow. */
  switch (op) {
    case LM_XOP_ADD:
      FOR3(int64_t, int64_t, mode, m, x, y,
           int64_t R = (int64_t)((uint64_t)X + (uint64_t)Y);
           r[k] = R; bad |= (uint8_t)(((X ^ R) & (Y ^ R)) < 0));
      break;
    case LM_XOP_SUB:
      FOR3(int64_t, int64_t, mode, m, x, y,
           int64_t R = (int64_t)((uint64_t)X - (uint64_t)Y);
           r[k] = R; bad |= (uint8_t)(((X ^ Y) & (X ^ R)) < 0));
      break;
    case LM_XOP_MUL:
      FOR3(int64_t, int64_t, mode, m, x, y, int64_t R;
           bad |= (uint8_t)__builtin_mul_overflow(X, Y, &R); r[k] = R);
      break;
    case LM_XOP_DIV: /* not produced by the binder for integers; truncating */
      FOR3(int64_t, int64_t, mode, m, x, y, int64_t D = (Y == 0 || Y == -1) ? 1 : Y;
           r[k] = Y == -1 ? (int64_t)(0 - (uint64_t)X) : X / D;
           bad |= (uint8_t)(Y == 0 || (Y == -1 && X == INT64_MIN)));
      break;
    case LM_XOP_MOD: /* sign of the dividend (C's %); x % -1 is 0, never a trap;
                        INT64_MIN % -1 is NULL (DuckDB: overflow error) */
      FOR3(int64_t, int64_t, mode, m, x, y, int64_t D = (Y == 0 || Y == -1) ? 1 : Y;
           r[k] = X % D; bad |= (uint8_t)(Y == 0 || (Y == -1 && X == INT64_MIN)));
      break;
    default: return LAMINAR_ERR_INTERNAL;
  }
  if (LM_UNLIKELY(bad)) {
    uint8_t* nl = writable_nulls(ctx, s.nulls, s.owned, m);
    if (nl == NULL) return LAMINAR_ERR_NOMEM;
    for (int64_t k = 0; k < m; k++) {
      if (i64_faults(op, AT(x, mode, 2, k), AT(y, mode, 1, k))) {
        nl[k] = 1;
        r[k] = 0;
      }
    }
    out->v.nulls = nl;
  }
  return LAMINAR_OK;
}

/* INT32 arithmetic as DuckDB's: the result is INT and a value outside INT's
 * range is an overflow (NULL here). Computed exactly in 64 bits. */
static laminar_code arith_i32(lm_eval_ctx* ctx, lm_expr_op op, const lm_xvec* a,
                              const lm_xvec* b, int64_t n, lm_xvec* out) {
  bin_shape s;
  LM_TRY(bin_prepare(ctx, a, b, n, &s));
  void* data;
  LM_TRY(bin_output(ctx, LM_TYPE_INT32, n, &s, &data, out));
  const int32_t* restrict x = a->v.data;
  const int32_t* restrict y = b->v.data;
  int32_t* restrict r = data;
  int mode = s.mode;
  int64_t m = s.m;
  uint8_t bad = 0;
#define I32_STORE(EXPR)                  \
  int64_t W = (EXPR);                    \
  r[k] = (int32_t)(uint32_t)(uint64_t)W; \
  bad |= (uint8_t)(W < INT32_MIN || W > INT32_MAX)
  switch (op) {
    case LM_XOP_ADD:
      FOR3(int32_t, int32_t, mode, m, x, y, I32_STORE((int64_t)X + Y));
      break;
    case LM_XOP_SUB:
      FOR3(int32_t, int32_t, mode, m, x, y, I32_STORE((int64_t)X - Y));
      break;
    case LM_XOP_MUL:
      FOR3(int32_t, int32_t, mode, m, x, y, I32_STORE((int64_t)X * Y));
      break;
    case LM_XOP_MOD: /* INT_MIN % -1 is 0 in 64 bits, but DuckDB calls it an overflow */
      FOR3(int32_t, int32_t, mode, m, x, y, int64_t D = Y == 0 ? 1 : Y;
           I32_STORE((int64_t)X % D);
           bad |= (uint8_t)(Y == 0 || (Y == -1 && X == INT32_MIN)));
      break;
    default: return LAMINAR_ERR_INTERNAL;
  }
#undef I32_STORE
  if (LM_UNLIKELY(bad)) {
    uint8_t* nl = writable_nulls(ctx, s.nulls, s.owned, m);
    if (nl == NULL) return LAMINAR_ERR_NOMEM;
    for (int64_t k = 0; k < m; k++) {
      int64_t X = AT(x, mode, 2, k), Y = AT(y, mode, 1, k), W;
      switch (op) {
        case LM_XOP_ADD: W = X + Y; break;
        case LM_XOP_SUB: W = X - Y; break;
        case LM_XOP_MUL: W = X * Y; break;
        default: W = (Y == 0 || (Y == -1 && X == INT32_MIN)) ? INT64_MAX : 0; break;
      }
      if (W < INT32_MIN || W > INT32_MAX) {
        nl[k] = 1;
        r[k] = 0;
      }
    }
    out->v.nulls = nl;
  }
  return LAMINAR_OK;
}

static laminar_code arith_f64(lm_eval_ctx* ctx, lm_expr_op op, const lm_xvec* a,
                              const lm_xvec* b, int64_t n, lm_xvec* out) {
  bin_shape s;
  LM_TRY(bin_prepare(ctx, a, b, n, &s));
  void* data;
  LM_TRY(bin_output(ctx, LM_TYPE_DOUBLE, n, &s, &data, out));
  const double* restrict x = a->v.data;
  const double* restrict y = b->v.data;
  double* restrict r = data;
  int mode = s.mode;
  int64_t m = s.m;
  switch (op) {
    case LM_XOP_ADD: FOR3(double, double, mode, m, x, y, r[k] = X + Y); break;
    case LM_XOP_SUB: FOR3(double, double, mode, m, x, y, r[k] = X - Y); break;
    case LM_XOP_MUL: FOR3(double, double, mode, m, x, y, r[k] = X * Y); break;
    /* IEEE, as DuckDB's DOUBLE '/' and '%': 1/0 = inf, 0/0 = NaN, x % 0 = NaN. */
    case LM_XOP_DIV: FOR3(double, double, mode, m, x, y, r[k] = X / Y); break;
    case LM_XOP_MOD: FOR3(double, double, mode, m, x, y, r[k] = fmod(X, Y)); break;
    default: return LAMINAR_ERR_INTERNAL;
  }
  return LAMINAR_OK;
}

/* REAL arithmetic (docs/SQL.md "Types"): the DOUBLE result x of the same
 * operation on the widened operands, rounded to float. For + - * / the double
 * result of two floats rounds to the correctly rounded float (53 >= 2*24 + 2
 * bits), and % is exact, so this equals float arithmetic; past the float range
 * it is +-inf, as IEEE (and DuckDB) give. */
static laminar_code round_to_real(lm_eval_ctx* ctx, lm_xvec* x) {
  int64_t m = x->cst ? 1 : x->v.len;
  float* data = alloc_values(ctx, LM_TYPE_FLOAT, m);
  if (data == NULL) return LAMINAR_ERR_NOMEM;
  const double* d = x->v.data;
  for (int64_t k = 0; k < m; k++) data[k] = (float)d[k];
  x->v.type = LM_TYPE_FLOAT;
  x->v.data = data;
  return LAMINAR_OK;
}

static laminar_code eval_neg(lm_eval_ctx* ctx, lm_type type, const lm_xvec* a, int64_t n,
                             lm_xvec* out) {
  int64_t m = a->cst ? 1 : n;
  void* data = alloc_values(ctx, type, m);
  if (data == NULL) return LAMINAR_ERR_NOMEM;
  out->v = (lm_vec){type, n, a->v.nulls, data};
  out->cst = a->cst;
  if (type == LM_TYPE_DOUBLE) {
    const double* x = a->v.data;
    for (int64_t k = 0; k < m; k++) ((double*)data)[k] = -x[k];
    return LAMINAR_OK;
  }
  if (type == LM_TYPE_INT32) {
    const int32_t* x = a->v.data;
    int32_t* r = data;
    uint8_t bad = 0;
    for (int64_t k = 0; k < m; k++) {
      r[k] = (int32_t)(0u - (uint32_t)x[k]);
      bad |= (uint8_t)(x[k] == INT32_MIN);
    }
    if (LM_UNLIKELY(bad)) {
      uint8_t* nl = writable_nulls(ctx, a->v.nulls, false, m);
      if (nl == NULL) return LAMINAR_ERR_NOMEM;
      for (int64_t k = 0; k < m; k++) nl[k] |= (uint8_t)(x[k] == INT32_MIN);
      out->v.nulls = nl;
    }
    return LAMINAR_OK;
  }
  const int64_t* x = a->v.data;
  int64_t* r = data;
  uint8_t bad = 0;
  for (int64_t k = 0; k < m; k++) {
    r[k] = (int64_t)(0 - (uint64_t)x[k]);
    bad |= (uint8_t)(x[k] == INT64_MIN);
  }
  if (LM_UNLIKELY(bad)) {
    uint8_t* nl = writable_nulls(ctx, a->v.nulls, false, m);
    if (nl == NULL) return LAMINAR_ERR_NOMEM;
    for (int64_t k = 0; k < m; k++) {
      if (x[k] == INT64_MIN) {
        nl[k] = 1;
        r[k] = 0;
      }
    }
    out->v.nulls = nl;
  }
  return LAMINAR_OK;
}

/* ---- comparison ------------------------------------------------------------------ */

#define NUM_EQ(a, b) ((a) == (b))
#define NUM_LT(a, b) ((a) < (b))
#define NUM_LE(a, b) ((a) <= (b))
/* DuckDB orders NaN above every number and equal to itself. */
#define DBL_EQ(a, b) ((a) == (b) || ((a) != (a) && (b) != (b)))
#define DBL_LT(a, b) ((a) < (b) || ((a) == (a) && (b) != (b)))
#define DBL_LE(a, b) ((a) <= (b) || (b) != (b))

#define DEFINE_CMP(NAME, T, EQF, LTF, LEF)                                             \
  static void NAME(lm_expr_op op, int mode, int64_t m, const void* xa, const void* ya, \
                   uint8_t* restrict r) {                                              \
    const T* restrict x = xa;                                                          \
    const T* restrict y = ya;                                                          \
    switch (op) {                                                                      \
      case LM_XOP_EQ: FOR3(T, T, mode, m, x, y, r[k] = (uint8_t)(EQF(X, Y))); break;   \
      case LM_XOP_NE: FOR3(T, T, mode, m, x, y, r[k] = (uint8_t) !(EQF(X, Y))); break; \
      case LM_XOP_LT: FOR3(T, T, mode, m, x, y, r[k] = (uint8_t)(LTF(X, Y))); break;   \
      case LM_XOP_LE: FOR3(T, T, mode, m, x, y, r[k] = (uint8_t)(LEF(X, Y))); break;   \
      case LM_XOP_GT: FOR3(T, T, mode, m, x, y, r[k] = (uint8_t)(LTF(Y, X))); break;   \
      default: FOR3(T, T, mode, m, x, y, r[k] = (uint8_t)(LEF(Y, X))); break;          \
    }                                                                                  \
  }

DEFINE_CMP(cmp_i64, int64_t, NUM_EQ, NUM_LT, NUM_LE)
DEFINE_CMP(cmp_i32, int32_t, NUM_EQ, NUM_LT, NUM_LE)
DEFINE_CMP(cmp_u8, uint8_t, NUM_EQ, NUM_LT, NUM_LE)
DEFINE_CMP(cmp_f64, double, DBL_EQ, DBL_LT, DBL_LE)

/* Bytewise, then the shorter first. */
static inline int str_cmp(lm_str a, lm_str b) {
  int64_t len = a.len < b.len ? a.len : b.len;
  int c = len > 0 ? memcmp(a.ptr, b.ptr, (size_t)len) : 0;
  if (c != 0) return c;
  return (a.len > b.len) - (a.len < b.len);
}

static inline bool cmp_holds(lm_expr_op op, int c) {
  switch (op) {
    case LM_XOP_EQ: return c == 0;
    case LM_XOP_NE: return c != 0;
    case LM_XOP_LT: return c < 0;
    case LM_XOP_LE: return c <= 0;
    case LM_XOP_GT: return c > 0;
    default: return c >= 0;
  }
}

/* Strings in null rows are not looked at (their slots are unspecified). */
static void cmp_str(lm_expr_op op, int mode, int64_t m, const void* xa, const void* ya,
                    const uint8_t* nulls, uint8_t* r) {
  const lm_str* x = xa;
  const lm_str* y = ya;
  if (op == LM_XOP_EQ || op == LM_XOP_NE) {
    uint8_t want = op == LM_XOP_EQ;
    FOR3(lm_str, lm_str, mode, m, x, y,
         r[k] = (nulls != NULL && nulls[k])
                    ? 0
                    : (uint8_t)(((X.len == Y.len) &&
                                 (X.len == 0 ||
                                  memcmp(X.ptr, Y.ptr, (size_t)X.len) == 0)) == want));
    return;
  }
  FOR3(lm_str, lm_str, mode, m, x, y,
       r[k] = (nulls != NULL && nulls[k]) ? 0 : (uint8_t)cmp_holds(op, str_cmp(X, Y)));
}

/* The storage type two comparison operands share. */
static lm_type compare_type(lm_type a, lm_type b) {
  if (a == LM_TYPE_FLOAT || b == LM_TYPE_FLOAT) return LM_TYPE_DOUBLE; /* exact */
  if (a == b) return a;
  if (a == LM_TYPE_DOUBLE || b == LM_TYPE_DOUBLE) return LM_TYPE_DOUBLE;
  if (a == LM_TYPE_TIMESTAMP || b == LM_TYPE_TIMESTAMP) return LM_TYPE_TIMESTAMP;
  if (a == LM_TYPE_DATE && b == LM_TYPE_DATE) return LM_TYPE_DATE;
  return LM_TYPE_INT64;
}

static laminar_code eval_compare(lm_eval_ctx* ctx, lm_expr_op op, lm_xvec* a, lm_xvec* b,
                                 int64_t n, lm_xvec* out) {
  if (a->v.type != b->v.type || a->v.type == LM_TYPE_FLOAT) {
    if (lm_type_is_bytes(a->v.type) || lm_type_is_bytes(b->v.type))
      return LAMINAR_ERR_INTERNAL;
    lm_type t = compare_type(a->v.type, b->v.type);
    LM_TRY(coerce(ctx, a, t));
    LM_TRY(coerce(ctx, b, t));
  }
  bin_shape s;
  LM_TRY(bin_prepare(ctx, a, b, n, &s));
  void* data;
  LM_TRY(bin_output(ctx, LM_TYPE_BOOL, n, &s, &data, out));
  uint8_t* r = data;
  switch (a->v.type) {
    case LM_TYPE_INT64:
    case LM_TYPE_TIME:
    case LM_TYPE_TIMESTAMP: cmp_i64(op, s.mode, s.m, a->v.data, b->v.data, r); break;
    case LM_TYPE_INT32:
    case LM_TYPE_DATE: cmp_i32(op, s.mode, s.m, a->v.data, b->v.data, r); break;
    case LM_TYPE_BOOL: cmp_u8(op, s.mode, s.m, a->v.data, b->v.data, r); break;
    case LM_TYPE_DOUBLE: cmp_f64(op, s.mode, s.m, a->v.data, b->v.data, r); break;
    case LM_TYPE_BINARY: /* bytewise, as DuckDB's BLOB */
    case LM_TYPE_STRING:
      cmp_str(op, s.mode, s.m, a->v.data, b->v.data, s.nulls, r);
      break;
    case LM_TYPE_INT16: /* the binder compares them as BIGINT */
    case LM_TYPE_INT8:
    case LM_TYPE_FLOAT:    // widened to DOUBLE above
    case LM_TYPE_DECIMAL:  // lm_expr_compare_decimal
    case LM_TYPE_NULL: return LAMINAR_ERR_INTERNAL;
  }
  return LAMINAR_OK;
}

/* ---- boolean logic ----------------------------------------------------------------- */

/* AND / OR with one constant operand c (non-null value cv, or null) and a
 * dense one d. */
static laminar_code logic_const(lm_eval_ctx* ctx, bool is_and, const lm_xvec* c,
                                const lm_xvec* d, int64_t n, lm_xvec* out) {
  bool c_null = xvec_is_const_null(c);
  bool cv = !c_null && *(const uint8_t*)c->v.data;
  if (!c_null) {
    /* FALSE AND x = FALSE, TRUE OR x = TRUE; TRUE AND x = x, FALSE OR x = x. */
    if (is_and != cv) return set_const_bool(ctx, n, cv, out);
    *out = *d;
    return LAMINAR_OK;
  }
  /* NULL AND x: FALSE where x is FALSE, else NULL. NULL OR x: TRUE where x is
   * TRUE, else NULL. */
  uint8_t* r = lm_eval_ctx_alloc(ctx, (size_t)n);
  uint8_t* nl = lm_eval_ctx_alloc(ctx, (size_t)n);
  if (r == NULL || nl == NULL) return LAMINAR_ERR_NOMEM;
  const uint8_t* x = d->v.data;
  const uint8_t* dn = d->v.nulls;
  for (int64_t k = 0; k < n; k++) {
    uint8_t known = (uint8_t)((dn == NULL || !dn[k]) & ((x[k] != 0) != is_and));
    r[k] = (uint8_t)(known & !is_and);
    nl[k] = (uint8_t)!known;
  }
  out->v = (lm_vec){LM_TYPE_BOOL, n, nulls_or_none(nl, n), r};
  out->cst = false;
  return LAMINAR_OK;
}

static laminar_code eval_logic(lm_eval_ctx* ctx, lm_expr_op op, const lm_xvec* a,
                               const lm_xvec* b, int64_t n, lm_xvec* out) {
  bool is_and = op == LM_XOP_AND;
  if (a->cst && b->cst) {
    bool an = xvec_is_const_null(a), bn = xvec_is_const_null(b);
    bool av = !an && *(const uint8_t*)a->v.data, bv = !bn && *(const uint8_t*)b->v.data;
    bool decided = is_and ? ((!an && !av) || (!bn && !bv)) : (av || bv);
    if (decided) return set_const_bool(ctx, n, !is_and, out);
    if (an || bn) {
      set_const_null(LM_TYPE_BOOL, n, out);
      return LAMINAR_OK;
    }
    return set_const_bool(ctx, n, is_and, out);
  }
  if (a->cst) return logic_const(ctx, is_and, a, b, n, out);
  if (b->cst) return logic_const(ctx, is_and, b, a, n, out);
  uint8_t* r = lm_eval_ctx_alloc(ctx, (size_t)n);
  if (r == NULL) return LAMINAR_ERR_NOMEM;
  const uint8_t* x = a->v.data;
  const uint8_t* y = b->v.data;
  const uint8_t* na = a->v.nulls;
  const uint8_t* nb = b->v.nulls;
  out->cst = false;
  if (na == NULL && nb == NULL) {
    if (is_and) {
      for (int64_t k = 0; k < n; k++) r[k] = (uint8_t)((x[k] != 0) & (y[k] != 0));
    } else {
      for (int64_t k = 0; k < n; k++) r[k] = (uint8_t)((x[k] != 0) | (y[k] != 0));
    }
    out->v = (lm_vec){LM_TYPE_BOOL, n, NULL, r};
    return LAMINAR_OK;
  }
  uint8_t* nl = lm_eval_ctx_alloc(ctx, (size_t)n);
  if (nl == NULL) return LAMINAR_ERR_NOMEM;
  uint8_t any = 0;
  for (int64_t k = 0; k < n; k++) {
    uint8_t an = na != NULL && na[k], bn = nb != NULL && nb[k];
    uint8_t at = (uint8_t)(!an & (x[k] != 0)), bt = (uint8_t)(!bn & (y[k] != 0));
    uint8_t af = (uint8_t)(!an & (x[k] == 0)), bf = (uint8_t)(!bn & (y[k] == 0));
    if (is_and) {
      /* FALSE wins over NULL. */
      r[k] = at & bt;
      nl[k] = (uint8_t)((uint8_t)((af | bf) == 0) & (an | bn));
    } else {
      /* TRUE wins over NULL. */
      r[k] = at | bt;
      nl[k] = (uint8_t)((uint8_t)((at | bt) == 0) & (an | bn));
    }
    any |= nl[k];
  }
  out->v = (lm_vec){LM_TYPE_BOOL, n, any ? nl : NULL, r};
  return LAMINAR_OK;
}

static laminar_code eval_not(lm_eval_ctx* ctx, const lm_xvec* a, int64_t n,
                             lm_xvec* out) {
  int64_t m = a->cst ? 1 : n;
  uint8_t* r = lm_eval_ctx_alloc(ctx, (size_t)m);
  if (r == NULL) return LAMINAR_ERR_NOMEM;
  const uint8_t* x = a->v.data;
  for (int64_t k = 0; k < m; k++) r[k] = (uint8_t)(x[k] == 0);
  out->v = (lm_vec){LM_TYPE_BOOL, n, a->v.nulls, r};
  out->cst = a->cst;
  return LAMINAR_OK;
}

static laminar_code eval_is_null(lm_eval_ctx* ctx, bool want_null, const lm_xvec* a,
                                 int64_t n, lm_xvec* out) {
  const uint8_t* an = a->v.nulls;
  if (an == NULL || a->cst) {
    bool is_null = an != NULL && an[0];
    return set_const_bool(ctx, n, is_null == want_null, out);
  }
  uint8_t* r = lm_eval_ctx_alloc(ctx, (size_t)n);
  if (r == NULL) return LAMINAR_ERR_NOMEM;
  for (int64_t k = 0; k < n; k++) r[k] = (uint8_t)((an[k] != 0) == want_null);
  out->v = (lm_vec){LM_TYPE_BOOL, n, NULL, r};
  out->cst = false;
  return LAMINAR_OK;
}

/* ---- strings ------------------------------------------------------------------------- */

static laminar_code eval_concat(lm_eval_ctx* ctx, const lm_xvec* a, const lm_xvec* b,
                                int64_t n, lm_xvec* out) {
  bin_shape s;
  LM_TRY(bin_prepare(ctx, a, b, n, &s));
  void* data;
  LM_TRY(bin_output(ctx, LM_TYPE_STRING, n, &s, &data, out));
  const lm_str* x = a->v.data;
  const lm_str* y = b->v.data;
  lm_str* r = data;
  const uint8_t* nl = s.nulls;
  /* One allocation for all the bytes of the batch. */
  size_t total = 0;
  FOR3(lm_str, lm_str, s.mode, s.m, x, y,
       if (nl == NULL || !nl[k]) total += (size_t)X.len + (size_t)Y.len);
  char* buf = lm_eval_ctx_alloc(ctx, total);
  if (buf == NULL) return LAMINAR_ERR_NOMEM;
  FOR3(
      lm_str, lm_str, s.mode, s.m, x, y,
      if (nl != NULL && nl[k]) {
        r[k] = (lm_str){NULL, 0};
      } else {
        if (X.len > 0) memcpy(buf, X.ptr, (size_t)X.len);
        if (Y.len > 0) memcpy(buf + X.len, Y.ptr, (size_t)Y.len);
        r[k] = (lm_str){buf, X.len + Y.len};
        buf += X.len + Y.len;
      });
  return LAMINAR_OK;
}

/* ---- CASE and COALESCE --------------------------------------------------------------- */

/* dst[pos[j]] = src row j for j < count (src may be constant); dnull likewise. */
static void scatter(lm_type type, void* dst, uint8_t* dnull, const uint32_t* pos,
                    const lm_xvec* src, int64_t count) {
  const uint8_t* sn = src->v.nulls;
  bool cst = src->cst;
  if (cst && sn != NULL && sn[0]) {
    for (int64_t j = 0; j < count; j++) dnull[pos[j]] = 1;
    return;
  }
  if (sn == NULL) {
    for (int64_t j = 0; j < count; j++) dnull[pos[j]] = 0;
  } else {
    for (int64_t j = 0; j < count; j++) dnull[pos[j]] = sn[j];
  }
  switch (lm_type_width(type)) {
    case 1: {
      const uint8_t* s = src->v.data;
      for (int64_t j = 0; j < count; j++) ((uint8_t*)dst)[pos[j]] = s[cst ? 0 : j];
      break;
    }
    case 2: {
      const int16_t* s = src->v.data;
      for (int64_t j = 0; j < count; j++) ((int16_t*)dst)[pos[j]] = s[cst ? 0 : j];
      break;
    }
    case 4: {
      const int32_t* s = src->v.data;
      for (int64_t j = 0; j < count; j++) ((int32_t*)dst)[pos[j]] = s[cst ? 0 : j];
      break;
    }
    case 8: {
      const int64_t* s = src->v.data;
      for (int64_t j = 0; j < count; j++) ((int64_t*)dst)[pos[j]] = s[cst ? 0 : j];
      break;
    }
    default: {
      const lm_str* s = src->v.data;
      for (int64_t j = 0; j < count; j++) ((lm_str*)dst)[pos[j]] = s[cst ? 0 : j];
      break;
    }
  }
}

/* Rows still waiting for a value while CASE / COALESCE walk their arguments:
 * `rows` are input row numbers (a sub-selection, ascending) and `pos` their
 * positions in the output. Before the first split they are implicitly the
 * caller's selection and 0..n-1. */
typedef struct pending {
  const uint32_t* sel; /* rows to evaluate the next argument over */
  int64_t count;
  uint32_t* rows;
  uint32_t* pos;
  bool split; /* rows/pos hold the pending set (else sel and 0..n-1) */
} pending;

static laminar_code pending_init(lm_eval_ctx* ctx, const uint32_t* sel, int64_t n,
                                 pending* p) {
  p->sel = sel;
  p->count = n;
  p->split = false;
  p->rows = lm_eval_ctx_alloc(ctx, sizeof(uint32_t) * (size_t)n);
  p->pos = lm_eval_ctx_alloc(ctx, sizeof(uint32_t) * (size_t)n);
  return p->rows != NULL && p->pos != NULL ? LAMINAR_OK : LAMINAR_ERR_NOMEM;
}

/* Make rows/pos explicit (the first time only). */
static void pending_materialize(pending* p) {
  if (p->split) return;
  for (int64_t j = 0; j < p->count; j++) {
    p->rows[j] = p->sel != NULL ? p->sel[j] : (uint32_t)j;
    p->pos[j] = (uint32_t)j;
  }
  p->sel = p->rows;
  p->split = true;
}

static laminar_code coerce_branch(lm_eval_ctx* ctx, lm_xvec* v, lm_type type) {
  if (v->v.type == type || xvec_is_const_null(v)) return LAMINAR_OK;
  return coerce(ctx, v, type);
}

static laminar_code eval_case(lm_eval_ctx* ctx, const lm_expr* e, const lm_vec* in,
                              const uint32_t* sel, int64_t n, lm_xvec* out) {
  lm_type type = e->type;
  void* data = alloc_values(ctx, type, n);
  uint8_t* nl = lm_eval_ctx_alloc(ctx, (size_t)n);
  uint32_t* hit_rows = lm_eval_ctx_alloc(ctx, sizeof(uint32_t) * (size_t)n);
  uint32_t* hit_pos = lm_eval_ctx_alloc(ctx, sizeof(uint32_t) * (size_t)n);
  if (data == NULL || nl == NULL || hit_rows == NULL || hit_pos == NULL) {
    return LAMINAR_ERR_NOMEM;
  }
  memset(data, 0, (size_t)(lm_type_width(type) * n));
  memset(nl, 1, (size_t)n); /* no WHEN matched and no ELSE: NULL */
  pending p;
  LM_TRY(pending_init(ctx, sel, n, &p));
  int32_t nwhen = (e->nargs - (e->has_else ? 1 : 0)) / 2;
  for (int32_t w = 0; w < nwhen && p.count > 0; w++) {
    lm_xvec cond, val;
    LM_TRY(lm_expr_eval_x(ctx, e->args[2 * w], in, p.sel, p.count, &cond));
    if (cond.cst) {
      if (xvec_is_const_null(&cond) || !*(const uint8_t*)cond.v.data) continue;
      /* Every pending row takes this branch. */
      pending_materialize(&p);
      LM_TRY(lm_expr_eval_x(ctx, e->args[2 * w + 1], in, p.sel, p.count, &val));
      LM_TRY(coerce_branch(ctx, &val, type));
      scatter(type, data, nl, p.pos, &val, p.count);
      p.count = 0;
      break;
    }
    pending_materialize(&p);
    /* Split the pending rows into those this WHEN is TRUE for and the rest. */
    const uint8_t* c = cond.v.data;
    const uint8_t* cn = cond.v.nulls;
    int64_t nhit = 0, nrest = 0;
    for (int64_t j = 0; j < p.count; j++) {
      if (c[j] != 0 && (cn == NULL || !cn[j])) {
        hit_rows[nhit] = p.rows[j];
        hit_pos[nhit++] = p.pos[j];
      } else {
        p.rows[nrest] = p.rows[j];
        p.pos[nrest++] = p.pos[j];
      }
    }
    p.count = nrest;
    if (nhit > 0) {
      LM_TRY(lm_expr_eval_x(ctx, e->args[2 * w + 1], in, hit_rows, nhit, &val));
      LM_TRY(coerce_branch(ctx, &val, type));
      scatter(type, data, nl, hit_pos, &val, nhit);
    }
  }
  if (e->has_else && p.count > 0) {
    lm_xvec val;
    pending_materialize(&p);
    LM_TRY(lm_expr_eval_x(ctx, e->args[e->nargs - 1], in, p.sel, p.count, &val));
    LM_TRY(coerce_branch(ctx, &val, type));
    scatter(type, data, nl, p.pos, &val, p.count);
  }
  out->v = (lm_vec){type, n, nulls_or_none(nl, n), data};
  out->cst = false;
  return LAMINAR_OK;
}

static laminar_code eval_coalesce(lm_eval_ctx* ctx, const lm_expr* e, const lm_vec* in,
                                  const uint32_t* sel, int64_t n, lm_xvec* out) {
  lm_type type = e->type;
  void* data = NULL;
  uint8_t* nl = NULL;
  pending p = {sel, n, NULL, NULL, false};
  for (int32_t i = 0; i < e->nargs && p.count > 0; i++) {
    lm_xvec v;
    LM_TRY(lm_expr_eval_x(ctx, e->args[i], in, p.sel, p.count, &v));
    if (xvec_is_const_null(&v)) continue;
    LM_TRY(coerce_branch(ctx, &v, type));
    if (data == NULL && v.v.nulls == NULL) {
      /* The first argument evaluated over all rows has no NULL: it is the
       * answer as it stands. */
      *out = v;
      return LAMINAR_OK;
    }
    if (data == NULL) {
      data = alloc_values(ctx, type, n);
      nl = lm_eval_ctx_alloc(ctx, (size_t)n);
      if (data == NULL || nl == NULL) return LAMINAR_ERR_NOMEM;
      memset(data, 0, (size_t)(lm_type_width(type) * n));
      memset(nl, 1, (size_t)n);
      LM_TRY(pending_init(ctx, sel, n, &p));
    }
    pending_materialize(&p);
    if (v.cst) { /* a non-null constant fills every pending row */
      scatter(type, data, nl, p.pos, &v, p.count);
      p.count = 0;
      break;
    }
    /* Take the non-null values; keep the rest pending. */
    const uint8_t* vn = v.v.nulls;
    int64_t nrest = 0, w = lm_type_width(type);
    for (int64_t j = 0; j < p.count; j++) {
      if (vn != NULL && vn[j]) {
        p.rows[nrest] = p.rows[j];
        p.pos[nrest++] = p.pos[j];
      } else {
        nl[p.pos[j]] = 0;
        memcpy((char*)data + w * p.pos[j], (const char*)v.v.data + w * j, (size_t)w);
      }
    }
    p.count = nrest;
  }
  if (data == NULL) { /* every argument was a NULL constant */
    set_const_null(type, n, out);
    return LAMINAR_OK;
  }
  out->v = (lm_vec){type, n, nulls_or_none(nl, n), data};
  out->cst = false;
  return LAMINAR_OK;
}

/* ---- dispatch ---------------------------------------------------------------------- */

bool lm_expr_is_constant(const lm_expr* e) {
  if (e->kind == LM_EXPR_LITERAL) return true;
  if (e->kind == LM_EXPR_COLUMN) return false;
  if (e->op == LM_XOP_FUNC && e->fn == LM_FN_UDF && !lm_udf_deterministic(e->udf))
    return false;
  for (int32_t i = 0; i < e->nargs; i++) {
    if (!lm_expr_is_constant(e->args[i])) return false;
  }
  return true;
}

static laminar_code eval_cast(lm_eval_ctx* ctx, lm_type to, const lm_xvec* a, int64_t n,
                              lm_xvec* out) {
  if (xvec_is_const_null(a)) {
    set_const_null(to, n, out);
    return LAMINAR_OK;
  }
  lm_vec src = a->v;
  if (a->cst) src.len = 1;
  LM_TRY(lm_expr_cast(ctx, &src, to, &out->v));
  out->v.len = n;
  out->cst = a->cst;
  return LAMINAR_OK;
}

laminar_code lm_expr_eval_x(lm_eval_ctx* ctx, const lm_expr* e, const lm_vec* in,
                            const uint32_t* sel, int64_t n, lm_xvec* out) {
  switch (e->kind) {
    case LM_EXPR_COLUMN: return eval_column(ctx, e, in, sel, n, out);
    case LM_EXPR_LITERAL: return eval_literal(ctx, e, n, out);
    case LM_EXPR_CALL: break;
    default: return LAMINAR_ERR_INTERNAL;
  }
  switch (e->op) {
    case LM_XOP_CASE: return eval_case(ctx, e, in, sel, n, out);
    case LM_XOP_COALESCE: return eval_coalesce(ctx, e, in, sel, n, out);
    case LM_XOP_FUNC: return lm_expr_eval_func(ctx, e, in, sel, n, out);
    default: break;
  }
  if (e->nargs < 1 || e->nargs > 2) return LAMINAR_ERR_INTERNAL;
  lm_xvec a, b;
  LM_TRY(lm_expr_eval_x(ctx, e->args[0], in, sel, n, &a));
  if (e->nargs > 1) LM_TRY(lm_expr_eval_x(ctx, e->args[1], in, sel, n, &b));
  switch (e->op) {
    case LM_XOP_NOT: return eval_not(ctx, &a, n, out);
    case LM_XOP_AND:
    case LM_XOP_OR:
      if (e->nargs != 2) return LAMINAR_ERR_INTERNAL;
      return eval_logic(ctx, e->op, &a, &b, n, out);
    case LM_XOP_IS_NULL:
    case LM_XOP_IS_NOT_NULL:
      return eval_is_null(ctx, e->op == LM_XOP_IS_NULL, &a, n, out);
    case LM_XOP_CAST: return eval_cast(ctx, e->type, &a, n, out);
    default: break;
  }
  /* Strict operators: a NULL constant operand makes the whole result NULL. */
  if (xvec_is_const_null(&a) || (e->nargs > 1 && xvec_is_const_null(&b))) {
    set_const_null(e->type, n, out);
    return LAMINAR_OK;
  }
  switch (e->op) {
    case LM_XOP_NEG: {
      if (lm_type_is_decimal(e->type)) {
        return lm_expr_arith_decimal(ctx, LM_XOP_NEG, e->type, &a, NULL, n, out);
      }
      if (e->type == LM_TYPE_FLOAT) {
        LM_TRY(coerce(ctx, &a, LM_TYPE_DOUBLE));
        LM_TRY(eval_neg(ctx, LM_TYPE_DOUBLE, &a, n, out));
        return round_to_real(ctx, out);
      }
      lm_type t =
          e->type == LM_TYPE_DOUBLE || e->type == LM_TYPE_INT32 ? e->type : LM_TYPE_INT64;
      LM_TRY(coerce(ctx, &a, t));
      LM_TRY(eval_neg(ctx, t, &a, n, out));
      out->v.type = e->type;
      return LAMINAR_OK;
    }
    case LM_XOP_ADD:
    case LM_XOP_SUB:
    case LM_XOP_MUL:
    case LM_XOP_DIV:
    case LM_XOP_MOD:
      if (e->nargs != 2) return LAMINAR_ERR_INTERNAL;
      if (lm_type_is_decimal(e->type)) {
        return lm_expr_arith_decimal(ctx, e->op, e->type, &a, &b, n, out);
      }
      if (e->type == LM_TYPE_DOUBLE || e->type == LM_TYPE_FLOAT) {
        LM_TRY(coerce(ctx, &a, LM_TYPE_DOUBLE));
        LM_TRY(coerce(ctx, &b, LM_TYPE_DOUBLE));
        LM_TRY(arith_f64(ctx, e->op, &a, &b, n, out));
        return e->type == LM_TYPE_FLOAT ? round_to_real(ctx, out) : LAMINAR_OK;
      }
      if (e->type == LM_TYPE_INT32 && e->op != LM_XOP_DIV) {
        LM_TRY(coerce(ctx, &a, LM_TYPE_INT32));
        LM_TRY(coerce(ctx, &b, LM_TYPE_INT32));
        return arith_i32(ctx, e->op, &a, &b, n, out);
      }
      /* INT64, and TIMESTAMP +- INT64 micros / TIMESTAMP - TIMESTAMP; DATE +- n
       * and DATE - DATE in days. */
      LM_TRY(coerce(ctx, &a, LM_TYPE_INT64));
      LM_TRY(coerce(ctx, &b, LM_TYPE_INT64));
      if (e->type == LM_TYPE_DATE) {
        /* the day count in 64 bits, then NULL where it leaves the DATE range */
        lm_xvec days;
        LM_TRY(arith_i64(ctx, e->op, LM_TYPE_INT64, &a, &b, n, &days));
        return eval_cast(ctx, LM_TYPE_DATE, &days, n, out);
      }
      return arith_i64(ctx, e->op, e->type, &a, &b, n, out);
    case LM_XOP_EQ:
    case LM_XOP_NE:
    case LM_XOP_LT:
    case LM_XOP_LE:
    case LM_XOP_GT:
    case LM_XOP_GE:
      if (e->nargs != 2) return LAMINAR_ERR_INTERNAL;
      if (lm_type_is_decimal(a.v.type) && lm_type_is_decimal(b.v.type)) {
        return lm_expr_compare_decimal(ctx, e->op, &a, &b, n, out);
      }
      return eval_compare(ctx, e->op, &a, &b, n, out);
    case LM_XOP_CONCAT:
      if (e->nargs != 2 || a.v.type != e->type || b.v.type != e->type) {
        return LAMINAR_ERR_INTERNAL;
      }
      LM_TRY(eval_concat(ctx, &a, &b, n, out));
      out->v.type = e->type; /* VARCHAR, or VARBINARY of two */
      return LAMINAR_OK;
    default: return LAMINAR_ERR_INTERNAL;
  }
}

laminar_code lm_expr_eval(lm_eval_ctx* ctx, const lm_expr* e, const lm_vec* in,
                          const uint32_t* sel, int64_t nsel, lm_vec* out) {
  lm_xvec x;
  LM_TRY(lm_expr_eval_x(ctx, e, in, sel, nsel, &x));
  return lm_expr_densify(ctx, &x, out);
}

laminar_code lm_expr_filter(lm_eval_ctx* ctx, const lm_expr* pred, const lm_vec* in,
                            const uint32_t* sel, int64_t nsel, uint32_t* out_sel,
                            int64_t* out_n) {
  if (pred->kind == LM_EXPR_CALL && pred->op == LM_XOP_AND && pred->nargs == 2) {
    /* a AND b is TRUE exactly where both are: filter by a, then test b only
     * on the survivors. */
    int64_t m;
    LM_TRY(lm_expr_filter(ctx, pred->args[0], in, sel, nsel, out_sel, &m));
    if (m == nsel && out_sel != sel) {
      /* Nothing dropped: keep the caller's selection (NULL = zero-copy). */
      return lm_expr_filter(ctx, pred->args[1], in, sel, nsel, out_sel, out_n);
    }
    return lm_expr_filter(ctx, pred->args[1], in, out_sel, m, out_sel, out_n);
  }
  lm_xvec v;
  LM_TRY(lm_expr_eval_x(ctx, pred, in, sel, nsel, &v));
  int64_t m = 0;
  if (v.cst) {
    bool keep = !xvec_is_const_null(&v) && *(const uint8_t*)v.v.data != 0;
    if (keep) {
      for (int64_t k = 0; k < nsel; k++) out_sel[k] = sel != NULL ? sel[k] : (uint32_t)k;
      m = nsel;
    }
    *out_n = m;
    return LAMINAR_OK;
  }
  const uint8_t* b = v.v.data;
  const uint8_t* nl = v.v.nulls;
  /* Branch-free compaction: write every candidate, advance on TRUE. Writing
   * out_sel[m] with m <= k is safe when out_sel == sel (sel[k] is read first). */
  if (sel == NULL) {
    if (nl == NULL) {
      for (int64_t k = 0; k < nsel; k++) {
        out_sel[m] = (uint32_t)k;
        m += b[k] != 0;
      }
    } else {
      for (int64_t k = 0; k < nsel; k++) {
        out_sel[m] = (uint32_t)k;
        m += (b[k] != 0) & (nl[k] == 0);
      }
    }
  } else {
    for (int64_t k = 0; k < nsel; k++) {
      uint32_t row = sel[k];
      out_sel[m] = row;
      m += (b[k] != 0) & (nl == NULL || nl[k] == 0);
    }
  }
  *out_n = m;
  return LAMINAR_OK;
}
