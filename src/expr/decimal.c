/*
 * decimal.c -- DECIMAL(p,s) kernels: CAST to and from every type, + - * %,
 * unary minus and comparisons (docs/SQL.md "Decimals").
 *
 * A DECIMAL value is its unscaled integer (value times 10^s), int64_t per row
 * up to 18 digits and lm_i128 above (util/types.h). Every kernel computes in
 * 128 bits and stores in the result type's width. Semantics are DuckDB's:
 * rounding half away from zero wherever digits are dropped, a result that
 * does not fit its precision -- an overflow -- is NULL (the engine's rule for
 * runtime faults, docs/SQL.md "Runtime faults give NULL"; DuckDB raises).
 */
#include "expr/internal.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/* ---- 128-bit helpers ------------------------------------------------------------- */

/* 10^k, 0 <= k <= 38. */
static lm_i128 pow10_i128(int32_t k) {
  lm_i128 r = 1;
  for (int32_t i = 0; i < k; i++) r *= 10;
  return r;
}

bool lm_dec_fits(lm_i128 x, int32_t precision) {
  lm_i128 lim = pow10_i128(precision);
  return x < lim && x > -lim;
}

/* a * b into *out; false when it leaves the 128-bit range (no wrapping done). */
static bool mul_i128(lm_i128 a, lm_i128 b, lm_i128* out) {
  if (a == 0 || b == 0) {
    *out = 0;
    return true;
  }
  lm_u128 ua = a < 0 ? (lm_u128)0 - (lm_u128)a : (lm_u128)a;
  lm_u128 ub = b < 0 ? (lm_u128)0 - (lm_u128)b : (lm_u128)b;
  lm_u128 max = ((lm_u128)1 << 127) - 1;
  if (ua > max / ub) return false;
  lm_i128 m = (lm_i128)(ua * ub);
  *out = (a < 0) != (b < 0) ? -m : m;
  return true;
}

bool lm_dec_rescale(lm_i128 x, int32_t from_scale, int32_t to_scale, lm_i128* out) {
  if (to_scale >= from_scale) return mul_i128(x, pow10_i128(to_scale - from_scale), out);
  lm_i128 d = pow10_i128(from_scale - to_scale);
  lm_i128 q = x / d, r = x % d;
  /* half away from zero: |r| >= d/2 */
  if (r >= 0 ? 2 * r >= d : -2 * r >= d) q += x < 0 ? -1 : 1;
  *out = q;
  return true;
}

int lm_expr_format_decimal(lm_i128 x, int32_t scale, char* buf, size_t cap) {
  char digits[48];
  int nd = 0;
  lm_u128 u = x < 0 ? (lm_u128)0 - (lm_u128)x : (lm_u128)x;
  do {
    digits[nd++] = (char)('0' + (int)(u % 10));
    u /= 10;
  } while (u != 0);
  while (nd <= scale) digits[nd++] = '0'; /* at least one digit before the point */
  char tmp[LM_EXPR_DECIMAL_TEXT_MAX];
  int len = 0;
  if (x < 0) tmp[len++] = '-';
  for (int i = nd - 1; i >= 0; i--) {
    if (i == scale - 1) tmp[len++] = '.';
    tmp[len++] = digits[i];
  }
  if (cap > 0) {
    size_t m = (size_t)len < cap - 1 ? (size_t)len : cap - 1;
    memcpy(buf, tmp, m);
    buf[m] = '\0';
  }
  return len;
}

static bool is_space(char c) { return c == ' ' || (c >= '\t' && c <= '\r'); }
static bool is_digit(char c) { return c >= '0' && c <= '9'; }

bool lm_dec_parse(lm_str s, int32_t precision, int32_t scale, lm_i128* out) {
  const char* p = s.ptr;
  const char* end = s.ptr + s.len;
  while (p < end && is_space(*p)) p++;
  while (end > p && is_space(end[-1])) end--;
  bool neg = false;
  if (p < end && (*p == '+' || *p == '-')) neg = *p++ == '-';
  /* The significant digits (leading zeros dropped) and where the point falls
   * among them: value = 0.d1 d2 ... * 10^point. */
  char dig[80];
  int32_t nd = 0, point = 0;
  bool any = false, seen_point = false, big = false;
  for (; p < end; p++) {
    char c = *p;
    if (is_digit(c)) {
      any = true;
      if (nd == 0 && c == '0') {
        if (seen_point) point--;
        continue;
      }
      if (nd < (int32_t)sizeof dig) {
        dig[nd++] = c;
      } else if (!seen_point) {
        big = true;
      }
      if (!seen_point) point++;
    } else if (c == '_' && any && p + 1 < end && is_digit(p[1]) && is_digit(p[-1])) {
      continue;
    } else if (c == '.' && !seen_point) {
      seen_point = true;
    } else {
      break;
    }
  }
  if (!any) return false;
  if (p < end && (*p == 'e' || *p == 'E')) {
    p++;
    bool eneg = false;
    if (p < end && (*p == '+' || *p == '-')) eneg = *p++ == '-';
    if (p == end || !is_digit(*p)) return false;
    int64_t e = 0;
    for (; p < end && is_digit(*p); p++) {
      if (e < 100000) e = e * 10 + (*p - '0');
    }
    point += (int32_t)(eneg ? -e : e);
  }
  if (p != end || big) return false;
  /* Keep the digits before position point + scale, round on the next one. */
  int32_t keep = point + scale;
  if (keep > precision) return nd == 0 ? (*out = 0, true) : false;
  lm_i128 v = 0;
  for (int32_t i = 0; i < keep; i++) v = v * 10 + (i < nd ? dig[i] - '0' : 0);
  if (keep >= 0 && keep < nd && dig[keep] >= '5') v++;
  if (!lm_dec_fits(v, precision)) return false;
  *out = neg ? -v : v;
  return true;
}

bool lm_dec_from_double(double d, int32_t precision, int32_t scale, lm_i128* out) {
  /* DuckDB's rule: scale, nudge by 1e-9 away from zero (so that 0.015 is 2
   * hundredths), then round to nearest. */
  double v = d * pow(10.0, scale);
  v += 1e-9 * (double)((v > 0) - (v < 0));
  double lim = pow(10.0, precision);
  if (!(v > -lim && v < lim)) return false; /* NaN too */
  double r = nearbyint(v);
  lm_i128 x = (lm_i128)r;
  if (!lm_dec_fits(x, precision)) return false;
  *out = x;
  return true;
}

double lm_dec_to_double(lm_i128 x, int32_t scale) { return (double)x / pow(10.0, scale); }

/* ---- CAST ------------------------------------------------------------------------- */

/* Row k of a dense vector `in` (not STRING) as DECIMAL(p, s): false when it
 * does not convert. */
static bool to_decimal(const lm_vec* in, int64_t k, int32_t p, int32_t s, lm_i128* out) {
  lm_type from = in->type;
  if (lm_type_is_decimal(from)) {
    lm_i128 v;
    return lm_dec_rescale(lm_vec_dec_at(in, k), lm_type_scale(from), s, &v) &&
           lm_dec_fits(v, p) && (*out = v, true);
  }
  switch (from) {
    case LM_TYPE_BOOL:
    case LM_TYPE_INT8:
    case LM_TYPE_INT16:
    case LM_TYPE_INT32:
    case LM_TYPE_INT64: {
      lm_i128 v;
      return mul_i128(lm_vec_int_at(in, k), pow10_i128(s), &v) && lm_dec_fits(v, p) &&
             (*out = v, true);
    }
    case LM_TYPE_DOUBLE:
      return lm_dec_from_double(((const double*)in->data)[k], p, s, out);
    case LM_TYPE_STRING: return lm_dec_parse(((const lm_str*)in->data)[k], p, s, out);
    default: return false;
  }
}

laminar_code lm_expr_cast_decimal(lm_eval_ctx* ctx, const lm_vec* in, lm_type to,
                                  lm_vec* out) {
  int64_t n = in->len;
  size_t cnt = (size_t)n;
  lm_type from = in->type;
  if (lm_type_is_decimal(to)) {
    void* data = lm_eval_ctx_alloc(ctx, (size_t)lm_type_width(to) * cnt);
    uint8_t* nl = lm_eval_ctx_alloc(ctx, cnt);
    if (data == NULL || nl == NULL) return LAMINAR_ERR_NOMEM;
    int32_t p = lm_type_precision(to), s = lm_type_scale(to);
    uint8_t any = 0;
    for (int64_t k = 0; k < n; k++) {
      lm_i128 v = 0;
      bool ok = !(in->nulls != NULL && in->nulls[k]) && from != LM_TYPE_NULL &&
                to_decimal(in, k, p, s, &v);
      nl[k] = !ok;
      any |= nl[k];
      lm_vec_dec_put(to, data, k, ok ? v : 0);
    }
    *out = (lm_vec){to, n, any ? nl : NULL, data};
    return LAMINAR_OK;
  }
  /* From DECIMAL(p, s). */
  int32_t s = lm_type_scale(from);
  if (to == LM_TYPE_STRING) {
    lm_str* r = lm_eval_ctx_alloc(ctx, sizeof(lm_str) * cnt);
    char* slab = lm_eval_ctx_alloc(ctx, LM_EXPR_DECIMAL_TEXT_MAX * cnt);
    if (r == NULL || slab == NULL) return LAMINAR_ERR_NOMEM;
    for (int64_t k = 0; k < n; k++) {
      if (in->nulls != NULL && in->nulls[k]) {
        r[k] = (lm_str){NULL, 0};
        continue;
      }
      char* w = slab + (size_t)k * LM_EXPR_DECIMAL_TEXT_MAX;
      int len =
          lm_expr_format_decimal(lm_vec_dec_at(in, k), s, w, LM_EXPR_DECIMAL_TEXT_MAX);
      r[k] = (lm_str){w, len};
    }
    *out = (lm_vec){to, n, in->nulls, r};
    return LAMINAR_OK;
  }
  if (to == LM_TYPE_DOUBLE || to == LM_TYPE_BOOL) {
    void* data = lm_eval_ctx_alloc(ctx, (size_t)lm_type_width(to) * cnt);
    if (data == NULL) return LAMINAR_ERR_NOMEM;
    for (int64_t k = 0; k < n; k++) {
      lm_i128 x = lm_vec_dec_at(in, k);
      if (to == LM_TYPE_DOUBLE) {
        ((double*)data)[k] = lm_dec_to_double(x, s);
      } else {
        ((uint8_t*)data)[k] = x != 0;
      }
    }
    *out = (lm_vec){to, n, in->nulls, data};
    return LAMINAR_OK;
  }
  if (to == LM_TYPE_INT64 || to == LM_TYPE_INT32 || to == LM_TYPE_INT16 ||
      to == LM_TYPE_INT8) {
    /* Round half away from zero to BIGINT, then narrow as BIGINT does. */
    int64_t* data = lm_eval_ctx_alloc(ctx, 8 * cnt);
    uint8_t* nl = lm_eval_ctx_alloc(ctx, cnt);
    if (data == NULL || nl == NULL) return LAMINAR_ERR_NOMEM;
    uint8_t any = 0;
    for (int64_t k = 0; k < n; k++) {
      lm_i128 v = 0;
      bool ok = !(in->nulls != NULL && in->nulls[k]);
      if (ok) {
        lm_dec_rescale(lm_vec_dec_at(in, k), s, 0, &v);
        ok = v >= INT64_MIN && v <= INT64_MAX;
      }
      nl[k] = !ok;
      any |= nl[k];
      data[k] = ok ? (int64_t)v : 0;
    }
    lm_vec wide = {LM_TYPE_INT64, n, any ? nl : NULL, data};
    return lm_expr_cast(ctx, &wide, to, out);
  }
  /* DATE, TIMESTAMP (refused when binding): NULL. */
  void* data = lm_eval_ctx_alloc(ctx, (size_t)lm_type_width(to) * cnt);
  uint8_t* nl = lm_eval_ctx_alloc(ctx, cnt);
  if (data == NULL || nl == NULL) return LAMINAR_ERR_NOMEM;
  memset(data, 0, (size_t)lm_type_width(to) * cnt);
  memset(nl, 1, cnt);
  *out = (lm_vec){to, n, nl, data};
  return LAMINAR_OK;
}

/* ---- arithmetic and comparison ----------------------------------------------------- */

/* Row k of x (a constant at 0) as an unscaled value at scale `s`; false on
 * overflow. */
static inline bool arg_at(const lm_xvec* x, int64_t k, int32_t s, lm_i128* out) {
  int64_t row = x->cst ? 0 : k;
  lm_i128 v = lm_vec_dec_at(&x->v, row);
  return lm_dec_rescale(v, lm_type_scale(x->v.type), s, out);
}

static inline bool arg_null(const lm_xvec* x, int64_t k) {
  return x->v.nulls != NULL && x->v.nulls[x->cst ? 0 : k];
}

laminar_code lm_expr_arith_decimal(lm_eval_ctx* ctx, lm_expr_op op, lm_type type,
                                   const lm_xvec* a, const lm_xvec* b, int64_t n,
                                   lm_xvec* out) {
  bool cst = a->cst && (b == NULL || b->cst);
  int64_t m = cst ? 1 : n;
  void* data = lm_eval_ctx_alloc(ctx, (size_t)lm_type_width(type) * (size_t)m);
  uint8_t* nl = lm_eval_ctx_alloc(ctx, (size_t)m);
  if (data == NULL || nl == NULL) return LAMINAR_ERR_NOMEM;
  int32_t p = lm_type_precision(type), s = lm_type_scale(type);
  /* Operands meet at the result's scale, except for '*' (scales add). */
  int32_t sa = op == LM_XOP_MUL ? lm_type_scale(a->v.type) : s;
  int32_t sb = op == LM_XOP_MUL && b != NULL ? lm_type_scale(b->v.type) : s;
  uint8_t any = 0;
  for (int64_t k = 0; k < m; k++) {
    lm_i128 x = 0, y = 0, r = 0;
    bool ok = !arg_null(a, k) && (b == NULL || !arg_null(b, k)) && arg_at(a, k, sa, &x) &&
              (b == NULL || arg_at(b, k, sb, &y));
    if (ok) {
      switch (op) {
        case LM_XOP_NEG: r = -x; break;
        case LM_XOP_ADD: ok = !__builtin_add_overflow(x, y, &r); break;
        case LM_XOP_SUB: ok = !__builtin_sub_overflow(x, y, &r); break;
        case LM_XOP_MUL: ok = mul_i128(x, y, &r); break;
        case LM_XOP_MOD:
          ok = y != 0;
          if (ok) r = x % y;
          break;
        default: return LAMINAR_ERR_INTERNAL;
      }
      ok = ok && lm_dec_fits(r, p);
    }
    nl[k] = !ok;
    any |= nl[k];
    lm_vec_dec_put(type, data, k, ok ? r : 0);
  }
  out->v = (lm_vec){type, n, any ? nl : NULL, data};
  out->cst = cst;
  return LAMINAR_OK;
}

laminar_code lm_expr_compare_decimal(lm_eval_ctx* ctx, lm_expr_op op, const lm_xvec* a,
                                     const lm_xvec* b, int64_t n, lm_xvec* out) {
  bool cst = a->cst && b->cst;
  int64_t m = cst ? 1 : n;
  uint8_t* data = lm_eval_ctx_alloc(ctx, (size_t)m);
  uint8_t* nl = lm_eval_ctx_alloc(ctx, (size_t)m);
  if (data == NULL || nl == NULL) return LAMINAR_ERR_NOMEM;
  int32_t s = lm_type_scale(a->v.type) > lm_type_scale(b->v.type)
                  ? lm_type_scale(a->v.type)
                  : lm_type_scale(b->v.type);
  uint8_t any = 0;
  for (int64_t k = 0; k < m; k++) {
    lm_i128 x = 0, y = 0;
    /* at the larger scale both fit: at most 38 digits plus 38 of scale would
     * not, so compare overflowing values by their sign instead */
    bool isnull = arg_null(a, k) || arg_null(b, k);
    int c = 0;
    if (!isnull) {
      bool okx = arg_at(a, k, s, &x), oky = arg_at(b, k, s, &y);
      if (okx && oky) {
        c = (x > y) - (x < y);
      } else {
        lm_i128 rx = lm_vec_dec_at(&a->v, a->cst ? 0 : k);
        lm_i128 ry = lm_vec_dec_at(&b->v, b->cst ? 0 : k);
        c = !okx ? (rx > 0 ? 1 : -1) : (ry > 0 ? -1 : 1);
      }
    }
    bool r = false;
    switch (op) {
      case LM_XOP_EQ: r = c == 0; break;
      case LM_XOP_NE: r = c != 0; break;
      case LM_XOP_LT: r = c < 0; break;
      case LM_XOP_LE: r = c <= 0; break;
      case LM_XOP_GT: r = c > 0; break;
      case LM_XOP_GE: r = c >= 0; break;
      default: return LAMINAR_ERR_INTERNAL;
    }
    nl[k] = isnull;
    any |= nl[k];
    data[k] = !isnull && r;
  }
  out->v = (lm_vec){LM_TYPE_BOOL, n, any ? nl : NULL, data};
  out->cst = cst;
  return LAMINAR_OK;
}

/* ---- ABS, ROUND, FLOOR, CEIL of a DECIMAL ---------------------------------------------- */

laminar_code lm_fn_math_decimal(lm_fcall* c) {
  const lm_xvec* x = &c->args[0];
  lm_type in = x->v.type, out = c->e->type;
  int32_t s = lm_type_scale(in), p = lm_type_precision(out);
  for (int64_t k = 0; k < c->m; k++) {
    lm_i128 v = FNULL(c, k) ? 0 : lm_vec_dec_at(&x->v, x->cst ? 0 : k), r = 0;
    bool ok = true;
    switch (c->e->fn) {
      case LM_FN_ABS: r = v < 0 ? -v : v; break;
      case LM_FN_ROUND: {
        int64_t d = c->nargs == 2 ? FARG(c, int64_t, 1, k) : 0;
        if (d >= s) {
          r = v;
        } else if (d >= 0) {
          lm_dec_rescale(v, s, (int32_t)d, &r);
        } else if (s - d > LM_DECIMAL_MAX_PRECISION) { /* rounds to 0 */
          r = 0;
        } else { /* to a multiple of 10^-d, at scale 0 */
          lm_dec_rescale(v, s, (int32_t)d, &r);
          ok = lm_dec_rescale(r, 0, (int32_t)-d, &r) && lm_dec_fits(r, p);
        }
        break;
      }
      case LM_FN_FLOOR:
      case LM_FN_CEIL: {
        lm_i128 unit = 1;
        for (int32_t i = 0; i < s; i++) unit *= 10;
        r = v / unit;
        lm_i128 rem = v % unit;
        if (c->e->fn == LM_FN_FLOOR && rem < 0) r--;
        if (c->e->fn == LM_FN_CEIL && rem > 0) r++;
        break;
      }
      default: return LAMINAR_ERR_INTERNAL;
    }
    if (!ok) {
      uint8_t* nl = lm_fcall_nulls(c);
      if (nl == NULL) return LAMINAR_ERR_NOMEM;
      nl[k] = 1;
      r = 0;
    }
    lm_vec_dec_put(out, c->data, k, r);
  }
  return LAMINAR_OK;
}
