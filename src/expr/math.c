/*
 * math.c -- kernels of the numeric functions: ABS, ROUND, FLOOR, CEIL, SQRT,
 * POWER, LN, EXP, LOG10 (see lm_func_id for the types).
 *
 * Each kernel is one loop over the column (a constant argument is read at
 * index 0). DOUBLE results are IEEE, as DuckDB's with its default
 * ieee_floating_point_ops: sqrt(-1) and ln(-1) are NaN, ln(0) is -inf,
 * exp(1000) is inf. Integer results that overflow (ABS(INT_MIN), ROUND(x, d)
 * past the type's range) are NULL where DuckDB raises an error. No signed
 * overflow is ever evaluated: integer paths use unsigned or 128-bit math.
 */
#include "expr/internal.h"

#include "util/util.h"

#include <math.h>
#include <string.h>

__extension__ typedef __int128 i128;

/* ---- ABS ----------------------------------------------------------------------- */

/* |x| of a signed integer type T (unsigned U) with MIN as overflow. */
#define ABS_INT(T, U, MIN)                                               \
  do {                                                                   \
    const T* x = c->args[0].v.data;                                      \
    T* r = c->data;                                                      \
    uint8_t bad = 0;                                                     \
    for (int64_t k = 0; k < m; k++) {                                    \
      U u = (U)x[k];                                                     \
      r[k] = (T)(x[k] < 0 ? (U)0 - u : u);                               \
      bad |= (uint8_t)(x[k] == (MIN));                                   \
    }                                                                    \
    if (LM_UNLIKELY(bad)) {                                              \
      uint8_t* nl = lm_fcall_nulls(c);                                   \
      if (nl == NULL) return LAMINAR_ERR_NOMEM;                          \
      for (int64_t k = 0; k < m; k++) nl[k] |= (uint8_t)(x[k] == (MIN)); \
    }                                                                    \
  } while (0)

static laminar_code fn_abs(lm_fcall* c) {
  int64_t m = c->m;
  switch (c->e->type) {
    case LM_TYPE_DOUBLE: {
      const double* x = c->args[0].v.data;
      double* r = c->data;
      for (int64_t k = 0; k < m; k++) r[k] = fabs(x[k]);
      return LAMINAR_OK;
    }
    case LM_TYPE_INT32: ABS_INT(int32_t, uint32_t, INT32_MIN); return LAMINAR_OK;
    case LM_TYPE_INT64: ABS_INT(int64_t, uint64_t, INT64_MIN); return LAMINAR_OK;
    default: return LAMINAR_ERR_INTERNAL;
  }
}

/* ---- ROUND ---------------------------------------------------------------------- */

/* round(x, d) of a double, as DuckDB computes it: scale by 10^|d|, round half
 * away from zero, scale back. A non-finite input is returned as is; a
 * non-finite result gives x (the scaling overflowed: nothing to round), except
 * NaN for d < 0, which gives 0 (the unit 10^-d is infinite). */
static inline double round_double(double x, int64_t d) {
  if (!isfinite(x)) return x;
  double r;
  if (d < 0) {
    double mod = d < -400 ? INFINITY : pow(10.0, (double)-d);
    r = round(x / mod) * mod;
    return isnan(r) ? 0.0 : isinf(r) ? x : r;
  }
  double mod = d > 400 ? INFINITY : pow(10.0, (double)d);
  r = round(x * mod) / mod;
  return isfinite(r) ? r : x;
}

/* round(x, d) of an integer for d < 0: to a multiple of 10^-d, half away from
 * zero. False when the result leaves [lo, hi]. */
static inline bool round_int(int64_t x, int64_t d, int64_t lo, int64_t hi, int64_t* out) {
  if (d >= 0) {
    *out = x;
    return true;
  }
  if (d < -20) { /* 10^21 exceeds every 64-bit value twice over */
    *out = 0;
    return true;
  }
  i128 p = 1;
  for (int64_t i = 0; i < -d; i++) p *= 10;
  i128 q = (i128)x / p;
  i128 rem = (i128)x - q * p;
  if (2 * (rem < 0 ? -rem : rem) >= p) q += x < 0 ? -1 : 1;
  i128 r = q * p;
  if (r < lo || r > hi) return false;
  *out = (int64_t)r;
  return true;
}

static laminar_code fn_round(lm_fcall* c) {
  int64_t m = c->m;
  bool has_d = c->nargs == 2;
  lm_type t = c->e->type;
  if (t == LM_TYPE_DOUBLE) {
    const double* x = c->args[0].v.data;
    double* r = c->data;
    if (!has_d) {
      for (int64_t k = 0; k < m; k++) r[k] = round(x[k]);
    } else {
      for (int64_t k = 0; k < m; k++) r[k] = round_double(x[k], FARG(c, int64_t, 1, k));
    }
    return LAMINAR_OK;
  }
  if (!has_d) { /* an integer rounded to 0 digits is itself */
    memcpy(c->data, c->args[0].v.data, (size_t)(lm_type_width(t) * m));
    return LAMINAR_OK;
  }
  uint8_t* nl = NULL;
  for (int64_t k = 0; k < m; k++) {
    if (FNULL(c, k)) continue;
    int64_t d = FARG(c, int64_t, 1, k);
    int64_t v;
    bool ok;
    if (t == LM_TYPE_INT32) {
      ok = round_int(FARG(c, int32_t, 0, k), d, INT32_MIN, INT32_MAX, &v);
      ((int32_t*)c->data)[k] = ok ? (int32_t)v : 0;
    } else {
      ok = round_int(FARG(c, int64_t, 0, k), d, INT64_MIN, INT64_MAX, &v);
      ((int64_t*)c->data)[k] = ok ? v : 0;
    }
    if (!ok) {
      if (nl == NULL && (nl = lm_fcall_nulls(c)) == NULL) return LAMINAR_ERR_NOMEM;
      nl[k] = 1;
    }
  }
  return LAMINAR_OK;
}

/* ---- DOUBLE functions ------------------------------------------------------------- */

#define UNARY_LOOP(EXPR)                  \
  do {                                    \
    const double* x_ = c->args[0].v.data; \
    double* r_ = c->data;                 \
    for (int64_t k = 0; k < m; k++) {     \
      double X = x_[k];                   \
      r_[k] = (EXPR);                     \
    }                                     \
  } while (0)

laminar_code lm_fn_math(lm_fcall* c) {
  int64_t m = c->m;
  if (lm_type_is_decimal(c->e->type)) return lm_fn_math_decimal(c);
  switch (c->e->fn) {
    case LM_FN_ABS: return fn_abs(c);
    case LM_FN_ROUND: return fn_round(c);
    case LM_FN_FLOOR: UNARY_LOOP(floor(X)); return LAMINAR_OK;
    case LM_FN_CEIL: UNARY_LOOP(ceil(X)); return LAMINAR_OK;
    case LM_FN_SQRT: UNARY_LOOP(sqrt(X)); return LAMINAR_OK;
    case LM_FN_LN: UNARY_LOOP(log(X)); return LAMINAR_OK;
    case LM_FN_EXP: UNARY_LOOP(exp(X)); return LAMINAR_OK;
    case LM_FN_LOG10: UNARY_LOOP(log10(X)); return LAMINAR_OK;
    case LM_FN_POWER: {
      double* r = c->data;
      for (int64_t k = 0; k < m; k++)
        r[k] = pow(FARG(c, double, 0, k), FARG(c, double, 1, k));
      return LAMINAR_OK;
    }
    default: return LAMINAR_ERR_INTERNAL;
  }
}
