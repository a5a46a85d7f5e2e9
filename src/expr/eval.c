/*
 * eval.c -- vectorized evaluation of bound expressions (see expr.h).
 *
 * Each operator is a loop over the selected rows writing a dense output; NULL
 * handling is hoisted: when no input has NULLs and the operator cannot produce
 * one, no null array is allocated or tested. Scratch memory comes from the
 * lm_eval_ctx bump allocator, reset per batch by the operator that owns it.
 */
#include "expr/expr.h"

#include "util/util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- evaluation context -------------------------------------------------------- */

typedef struct ctx_chunk {
  struct ctx_chunk* prev;
  size_t cap;
  size_t used;
  max_align_t data[];
} ctx_chunk;

struct lm_eval_ctx {
  ctx_chunk* head;
};

laminar_code lm_eval_ctx_create(lm_eval_ctx** out) {
  *out = lm_calloc(1, sizeof(lm_eval_ctx));
  return *out ? LAMINAR_OK : LAMINAR_ERR_NOMEM;
}

void* lm_eval_ctx_alloc(lm_eval_ctx* ctx, size_t bytes) {
  bytes = (bytes + 15) & ~(size_t)15;
  if (bytes == 0) bytes = 16;
  ctx_chunk* c = ctx->head;
  if (c == NULL || c->cap - c->used < bytes) {
    size_t cap = c ? c->cap * 2 : (size_t)1 << 16;
    while (cap < bytes) cap *= 2;
    ctx_chunk* fresh = lm_malloc(sizeof *fresh + cap);
    if (fresh == NULL) return NULL;
    fresh->prev = c;
    fresh->cap = cap;
    fresh->used = 0;
    ctx->head = c = fresh;
  }
  void* p = (char*)c->data + c->used;
  c->used += bytes;
  return p;
}

/* Keep only the newest (largest) chunk: steady state allocates nothing. */
void lm_eval_ctx_reset(lm_eval_ctx* ctx) {
  ctx_chunk* c = ctx->head;
  if (c == NULL) return;
  ctx_chunk* old = c->prev;
  while (old != NULL) {
    ctx_chunk* prev = old->prev;
    lm_free(old);
    old = prev;
  }
  c->prev = NULL;
  c->used = 0;
}

void lm_eval_ctx_destroy(lm_eval_ctx* ctx) {
  if (ctx == NULL) return;
  ctx_chunk* c = ctx->head;
  while (c != NULL) {
    ctx_chunk* prev = c->prev;
    lm_free(c);
    c = prev;
  }
  lm_free(ctx);
}

bool lm_expr_is_constant(const lm_expr* e) {
  if (e->kind == LM_EXPR_LITERAL) return true;
  if (e->kind == LM_EXPR_COLUMN) return false;
  for (int32_t i = 0; i < e->nargs; i++) {
    if (!lm_expr_is_constant(e->args[i])) return false;
  }
  return true;
}

/* ---- helpers -------------------------------------------------------------------- */

#define ROW(k) (sel ? sel[k] : (uint32_t)(k))

static laminar_code alloc_vec(lm_eval_ctx* ctx, lm_type type, int64_t n, bool with_nulls,
                              lm_vec* out) {
  size_t count = (size_t)(n ? n : 1);
  void* data = lm_eval_ctx_alloc(ctx, (size_t)lm_type_width(type) * count);
  uint8_t* nulls = with_nulls ? lm_eval_ctx_alloc(ctx, count) : NULL;
  if (data == NULL || (with_nulls && nulls == NULL)) return LAMINAR_ERR_NOMEM;
  if (nulls) memset(nulls, 0, count);
  *out = (lm_vec){type, n, nulls, data};
  return LAMINAR_OK;
}

static inline bool is_null(const lm_vec* v, int64_t k) { return v->nulls && v->nulls[k]; }

/* Drop the null array when no entry is set. */
static void trim_nulls(lm_vec* v) {
  if (v->nulls == NULL) return;
  for (int64_t k = 0; k < v->len; k++) {
    if (v->nulls[k]) return;
  }
  v->nulls = NULL;
}

static int cmp_str(lm_str a, lm_str b) {
  int64_t n = a.len < b.len ? a.len : b.len;
  int c = n > 0 ? memcmp(a.ptr, b.ptr, (size_t)n) : 0;
  if (c != 0) return c;
  return (a.len > b.len) - (a.len < b.len);
}

/* DuckDB orders NaN above all numbers and equal to itself. */
static inline int cmp_double(double a, double b) {
  bool na = isnan(a), nb = isnan(b);
  if (na || nb) return na == nb ? 0 : (na ? 1 : -1);
  return (a > b) - (a < b);
}

/* ---- column and literal -------------------------------------------------------- */

static laminar_code eval_column(lm_eval_ctx* ctx, const lm_expr* e, const lm_vec* in,
                                const uint32_t* sel, int64_t n, lm_vec* out) {
  const lm_vec* src = &in[e->column];
  if (sel == NULL) {
    *out = *src;
    out->len = n;
    return LAMINAR_OK;
  }
  LM_TRY(alloc_vec(ctx, src->type, n, src->nulls != NULL, out));
  int64_t w = lm_type_width(src->type);
  char* dst = (char*)out->data;
  const char* s = src->data;
  switch (w) {
    case 1:
      for (int64_t k = 0; k < n; k++) dst[k] = s[sel[k]];
      break;
    case 4:
      for (int64_t k = 0; k < n; k++) ((int32_t*)dst)[k] = ((const int32_t*)s)[sel[k]];
      break;
    case 8:
      for (int64_t k = 0; k < n; k++) ((int64_t*)dst)[k] = ((const int64_t*)s)[sel[k]];
      break;
    default:
      for (int64_t k = 0; k < n; k++) ((lm_str*)dst)[k] = ((const lm_str*)s)[sel[k]];
      break;
  }
  if (src->nulls) {
    uint8_t* nl = (uint8_t*)out->nulls;
    for (int64_t k = 0; k < n; k++) nl[k] = src->nulls[sel[k]];
    trim_nulls(out);
  }
  return LAMINAR_OK;
}

static laminar_code eval_literal(lm_eval_ctx* ctx, const lm_expr* e, int64_t n, lm_vec* out) {
  LM_TRY(alloc_vec(ctx, e->type, n, e->lit.is_null, out));
  if (e->lit.is_null) {
    memset((void*)out->data, 0, (size_t)(lm_type_width(e->type) * (n ? n : 1)));
    memset((void*)out->nulls, 1, (size_t)(n ? n : 1));
    return LAMINAR_OK;
  }
  switch (e->type) {
    case LM_TYPE_BOOL: memset((void*)out->data, e->lit.b ? 1 : 0, (size_t)n); break;
    case LM_TYPE_INT32:
      for (int64_t k = 0; k < n; k++) ((int32_t*)out->data)[k] = (int32_t)e->lit.i;
      break;
    case LM_TYPE_INT64:
    case LM_TYPE_TIMESTAMP:
      for (int64_t k = 0; k < n; k++) ((int64_t*)out->data)[k] = e->lit.i;
      break;
    case LM_TYPE_DOUBLE:
      for (int64_t k = 0; k < n; k++) ((double*)out->data)[k] = e->lit.d;
      break;
    case LM_TYPE_STRING:
      for (int64_t k = 0; k < n; k++) ((lm_str*)out->data)[k] = e->lit.s;
      break;
    case LM_TYPE_NULL: break;
  }
  return LAMINAR_OK;
}

/* Forward. */
laminar_code lm_expr_cast(lm_eval_ctx* ctx, const lm_vec* in, lm_type to, lm_vec* out);

/* ---- arithmetic ---------------------------------------------------------------------- */

static laminar_code eval_arith(lm_eval_ctx* ctx, lm_expr_op op, lm_type type, const lm_vec* a,
                               const lm_vec* b, int64_t n, lm_vec* out) {
  bool may_null = a->nulls || b->nulls || type != LM_TYPE_DOUBLE || op == LM_XOP_DIV ||
                  op == LM_XOP_MOD;
  LM_TRY(alloc_vec(ctx, type, n, may_null, out));
  uint8_t* nl = (uint8_t*)out->nulls;
  if (nl) {
    for (int64_t k = 0; k < n; k++) nl[k] = is_null(a, k) || is_null(b, k);
  }
  if (type == LM_TYPE_DOUBLE) {
    const double* x = a->data;
    const double* y = b->data;
    double* r = (double*)out->data;
    switch (op) {
      case LM_XOP_ADD: for (int64_t k = 0; k < n; k++) r[k] = x[k] + y[k]; break;
      case LM_XOP_SUB: for (int64_t k = 0; k < n; k++) r[k] = x[k] - y[k]; break;
      case LM_XOP_MUL: for (int64_t k = 0; k < n; k++) r[k] = x[k] * y[k]; break;
      case LM_XOP_DIV:
        for (int64_t k = 0; k < n; k++) {
          if (y[k] == 0.0) {
            nl[k] = 1;
            r[k] = 0;
          } else {
            r[k] = x[k] / y[k];
          }
        }
        break;
      case LM_XOP_MOD:
        for (int64_t k = 0; k < n; k++) {
          if (y[k] == 0.0) {
            nl[k] = 1;
            r[k] = 0;
          } else {
            r[k] = fmod(x[k], y[k]);
          }
        }
        break;
      default: return LAMINAR_ERR_INTERNAL;
    }
  } else {
    /* INT64 and TIMESTAMP (micros): overflow and x/0 give NULL. */
    const int64_t* x = a->data;
    const int64_t* y = b->data;
    int64_t* r = (int64_t*)out->data;
    for (int64_t k = 0; k < n; k++) {
      int64_t v = 0;
      bool bad = false;
      switch (op) {
        case LM_XOP_ADD: bad = __builtin_add_overflow(x[k], y[k], &v); break;
        case LM_XOP_SUB: bad = __builtin_sub_overflow(x[k], y[k], &v); break;
        case LM_XOP_MUL: bad = __builtin_mul_overflow(x[k], y[k], &v); break;
        case LM_XOP_MOD:
          if (y[k] == 0) {
            bad = true;
          } else if (y[k] == -1) {
            v = 0; /* INT64_MIN % -1 would trap */
          } else {
            v = x[k] % y[k];
          }
          break;
        default: return LAMINAR_ERR_INTERNAL;
      }
      r[k] = bad ? 0 : v;
      if (bad) nl[k] = 1;
    }
  }
  if (nl) trim_nulls(out);
  return LAMINAR_OK;
}

/* ---- comparison ------------------------------------------------------------------------ */

static inline bool cmp_result(lm_expr_op op, int c) {
  switch (op) {
    case LM_XOP_EQ: return c == 0;
    case LM_XOP_NE: return c != 0;
    case LM_XOP_LT: return c < 0;
    case LM_XOP_LE: return c <= 0;
    case LM_XOP_GT: return c > 0;
    default: return c >= 0;
  }
}

static laminar_code eval_compare(lm_eval_ctx* ctx, lm_expr_op op, const lm_vec* a,
                                 const lm_vec* b, int64_t n, lm_vec* out) {
  LM_TRY(alloc_vec(ctx, LM_TYPE_BOOL, n, a->nulls || b->nulls, out));
  uint8_t* r = (uint8_t*)out->data;
  switch (a->type) {
    case LM_TYPE_DOUBLE: {
      const double* x = a->data;
      const double* y = b->data;
      for (int64_t k = 0; k < n; k++) r[k] = cmp_result(op, cmp_double(x[k], y[k]));
      break;
    }
    case LM_TYPE_STRING: {
      const lm_str* x = a->data;
      const lm_str* y = b->data;
      for (int64_t k = 0; k < n; k++) r[k] = cmp_result(op, cmp_str(x[k], y[k]));
      break;
    }
    case LM_TYPE_BOOL: {
      const uint8_t* x = a->data;
      const uint8_t* y = b->data;
      for (int64_t k = 0; k < n; k++) r[k] = cmp_result(op, (x[k] > y[k]) - (x[k] < y[k]));
      break;
    }
    case LM_TYPE_INT32: {
      const int32_t* x = a->data;
      const int32_t* y = b->data;
      for (int64_t k = 0; k < n; k++) r[k] = cmp_result(op, (x[k] > y[k]) - (x[k] < y[k]));
      break;
    }
    default: {
      const int64_t* x = a->data;
      const int64_t* y = b->data;
      switch (op) {  /* the common filters get branch-free loops */
        case LM_XOP_GT: for (int64_t k = 0; k < n; k++) r[k] = x[k] > y[k]; break;
        case LM_XOP_LT: for (int64_t k = 0; k < n; k++) r[k] = x[k] < y[k]; break;
        default:
          for (int64_t k = 0; k < n; k++) r[k] = cmp_result(op, (x[k] > y[k]) - (x[k] < y[k]));
      }
      break;
    }
  }
  if (out->nulls) {
    uint8_t* nl = (uint8_t*)out->nulls;
    for (int64_t k = 0; k < n; k++) nl[k] = is_null(a, k) || is_null(b, k);
  }
  return LAMINAR_OK;
}

/* ---- logic ---------------------------------------------------------------------------- */

static laminar_code eval_logic(lm_eval_ctx* ctx, lm_expr_op op, const lm_vec* a,
                               const lm_vec* b, int64_t n, lm_vec* out) {
  LM_TRY(alloc_vec(ctx, LM_TYPE_BOOL, n, a->nulls || b->nulls, out));
  uint8_t* r = (uint8_t*)out->data;
  uint8_t* nl = (uint8_t*)out->nulls;
  const uint8_t* x = a->data;
  const uint8_t* y = b->data;
  bool is_and = op == LM_XOP_AND;
  for (int64_t k = 0; k < n; k++) {
    bool an = is_null(a, k), bn = is_null(b, k);
    bool av = !an && x[k], bv = !bn && y[k];
    if (is_and) {
      /* FALSE wins over NULL. */
      if ((!an && !av) || (!bn && !bv)) {
        r[k] = 0;
      } else if (an || bn) {
        r[k] = 0;
        nl[k] = 1;
      } else {
        r[k] = 1;
      }
    } else {
      /* TRUE wins over NULL. */
      if (av || bv) {
        r[k] = 1;
      } else if (an || bn) {
        r[k] = 0;
        nl[k] = 1;
      } else {
        r[k] = 0;
      }
    }
  }
  if (nl) trim_nulls(out);
  return LAMINAR_OK;
}

/* ---- CASE and COALESCE: evaluate each branch only on the rows that need it ---------- */

/* Copy value k_src of `src` into row k_dst of `dst` (same type). */
static void put_value(lm_vec* dst, int64_t kd, const lm_vec* src, int64_t ks) {
  int64_t w = lm_type_width(dst->type);
  memcpy((char*)dst->data + w * kd, (const char*)src->data + w * ks, (size_t)w);
  ((uint8_t*)dst->nulls)[kd] = is_null(src, ks);
}

static laminar_code eval_case(lm_eval_ctx* ctx, const lm_expr* e, const lm_vec* in,
                              const uint32_t* sel, int64_t n, lm_vec* out) {
  LM_TRY(alloc_vec(ctx, e->type, n, true, out));
  memset((void*)out->nulls, 1, (size_t)(n ? n : 1));
  memset((void*)out->data, 0, (size_t)(lm_type_width(e->type) * (n ? n : 1)));
  /* pending: positions (into 0..n) still without a value, with their rows. */
  uint32_t* pos = lm_eval_ctx_alloc(ctx, sizeof(uint32_t) * (size_t)(n ? n : 1));
  uint32_t* rows = lm_eval_ctx_alloc(ctx, sizeof(uint32_t) * (size_t)(n ? n : 1));
  uint32_t* hit_pos = lm_eval_ctx_alloc(ctx, sizeof(uint32_t) * (size_t)(n ? n : 1));
  uint32_t* hit_rows = lm_eval_ctx_alloc(ctx, sizeof(uint32_t) * (size_t)(n ? n : 1));
  if (!pos || !rows || !hit_pos || !hit_rows) return LAMINAR_ERR_NOMEM;
  int64_t npending = n;
  for (int64_t k = 0; k < n; k++) {
    pos[k] = (uint32_t)k;
    rows[k] = ROW(k);
  }
  int32_t nwhen = (e->nargs - (e->has_else ? 1 : 0)) / 2;
  for (int32_t w = 0; w < nwhen && npending > 0; w++) {
    lm_vec cond, val;
    LM_TRY(lm_expr_eval(ctx, e->args[2 * w], in, rows, npending, &cond));
    int64_t nhit = 0, nrest = 0;
    const uint8_t* c = cond.data;
    for (int64_t j = 0; j < npending; j++) {
      if (!is_null(&cond, j) && c[j]) {
        hit_pos[nhit] = pos[j];
        hit_rows[nhit++] = rows[j];
      } else {
        pos[nrest] = pos[j];
        rows[nrest++] = rows[j];
      }
    }
    if (nhit > 0) {
      LM_TRY(lm_expr_eval(ctx, e->args[2 * w + 1], in, hit_rows, nhit, &val));
      for (int64_t j = 0; j < nhit; j++) put_value(out, hit_pos[j], &val, j);
    }
    npending = nrest;
  }
  if (e->has_else && npending > 0) {
    lm_vec val;
    LM_TRY(lm_expr_eval(ctx, e->args[e->nargs - 1], in, rows, npending, &val));
    for (int64_t j = 0; j < npending; j++) put_value(out, pos[j], &val, j);
  }
  trim_nulls(out);
  return LAMINAR_OK;
}

static laminar_code eval_coalesce(lm_eval_ctx* ctx, const lm_expr* e, const lm_vec* in,
                                  const uint32_t* sel, int64_t n, lm_vec* out) {
  LM_TRY(alloc_vec(ctx, e->type, n, true, out));
  memset((void*)out->nulls, 1, (size_t)(n ? n : 1));
  memset((void*)out->data, 0, (size_t)(lm_type_width(e->type) * (n ? n : 1)));
  uint32_t* pos = lm_eval_ctx_alloc(ctx, sizeof(uint32_t) * (size_t)(n ? n : 1));
  uint32_t* rows = lm_eval_ctx_alloc(ctx, sizeof(uint32_t) * (size_t)(n ? n : 1));
  if (!pos || !rows) return LAMINAR_ERR_NOMEM;
  int64_t npending = n;
  for (int64_t k = 0; k < n; k++) {
    pos[k] = (uint32_t)k;
    rows[k] = ROW(k);
  }
  for (int32_t a = 0; a < e->nargs && npending > 0; a++) {
    lm_vec v;
    LM_TRY(lm_expr_eval(ctx, e->args[a], in, rows, npending, &v));
    int64_t nrest = 0;
    for (int64_t j = 0; j < npending; j++) {
      if (is_null(&v, j)) {
        pos[nrest] = pos[j];
        rows[nrest++] = rows[j];
      } else {
        put_value(out, pos[j], &v, j);
      }
    }
    npending = nrest;
  }
  trim_nulls(out);
  return LAMINAR_OK;
}

/* ---- strings ------------------------------------------------------------------------------ */

static laminar_code eval_concat(lm_eval_ctx* ctx, const lm_vec* a, const lm_vec* b, int64_t n,
                                lm_vec* out) {
  LM_TRY(alloc_vec(ctx, LM_TYPE_STRING, n, a->nulls || b->nulls, out));
  const lm_str* x = a->data;
  const lm_str* y = b->data;
  lm_str* r = (lm_str*)out->data;
  for (int64_t k = 0; k < n; k++) {
    if (is_null(a, k) || is_null(b, k)) {
      ((uint8_t*)out->nulls)[k] = 1;
      r[k] = (lm_str){NULL, 0};
      continue;
    }
    char* buf = lm_eval_ctx_alloc(ctx, (size_t)(x[k].len + y[k].len));
    if (buf == NULL) return LAMINAR_ERR_NOMEM;
    if (x[k].len) memcpy(buf, x[k].ptr, (size_t)x[k].len);
    if (y[k].len) memcpy(buf + x[k].len, y[k].ptr, (size_t)y[k].len);
    r[k] = (lm_str){buf, x[k].len + y[k].len};
  }
  return LAMINAR_OK;
}

/* ---- dispatch ---------------------------------------------------------------------------- */

laminar_code lm_expr_eval(lm_eval_ctx* ctx, const lm_expr* e, const lm_vec* in,
                          const uint32_t* sel, int64_t nsel, lm_vec* out) {
  switch (e->kind) {
    case LM_EXPR_COLUMN: return eval_column(ctx, e, in, sel, nsel, out);
    case LM_EXPR_LITERAL: return eval_literal(ctx, e, nsel, out);
    case LM_EXPR_CALL: break;
  }
  switch (e->op) {
    case LM_XOP_CASE: return eval_case(ctx, e, in, sel, nsel, out);
    case LM_XOP_COALESCE: return eval_coalesce(ctx, e, in, sel, nsel, out);
    default: break;
  }
  lm_vec a, b;
  LM_TRY(lm_expr_eval(ctx, e->args[0], in, sel, nsel, &a));
  if (e->nargs > 1) LM_TRY(lm_expr_eval(ctx, e->args[1], in, sel, nsel, &b));
  switch (e->op) {
    case LM_XOP_NEG: {
      lm_vec zero;
      lm_expr z = {.kind = LM_EXPR_LITERAL, .type = e->type};
      LM_TRY(eval_literal(ctx, &z, nsel, &zero));
      return eval_arith(ctx, LM_XOP_SUB, e->type, &zero, &a, nsel, out);
    }
    case LM_XOP_NOT: {
      LM_TRY(alloc_vec(ctx, LM_TYPE_BOOL, nsel, a.nulls != NULL, out));
      const uint8_t* x = a.data;
      for (int64_t k = 0; k < nsel; k++) ((uint8_t*)out->data)[k] = !x[k];
      if (a.nulls) memcpy((void*)out->nulls, a.nulls, (size_t)nsel);
      return LAMINAR_OK;
    }
    case LM_XOP_ADD:
    case LM_XOP_SUB:
    case LM_XOP_MUL:
    case LM_XOP_DIV:
    case LM_XOP_MOD:
      return eval_arith(ctx, e->op, e->type == LM_TYPE_DOUBLE ? LM_TYPE_DOUBLE : LM_TYPE_INT64,
                        &a, &b, nsel, out)
                 == LAMINAR_OK
                 ? (out->type = e->type, LAMINAR_OK)
                 : LAMINAR_ERR_NOMEM;
    case LM_XOP_EQ:
    case LM_XOP_NE:
    case LM_XOP_LT:
    case LM_XOP_LE:
    case LM_XOP_GT:
    case LM_XOP_GE: return eval_compare(ctx, e->op, &a, &b, nsel, out);
    case LM_XOP_AND:
    case LM_XOP_OR: return eval_logic(ctx, e->op, &a, &b, nsel, out);
    case LM_XOP_IS_NULL:
    case LM_XOP_IS_NOT_NULL: {
      LM_TRY(alloc_vec(ctx, LM_TYPE_BOOL, nsel, false, out));
      uint8_t want = e->op == LM_XOP_IS_NULL;
      for (int64_t k = 0; k < nsel; k++) {
        ((uint8_t*)out->data)[k] = (uint8_t)(is_null(&a, k) == want);
      }
      return LAMINAR_OK;
    }
    case LM_XOP_CAST: return lm_expr_cast(ctx, &a, e->type, out);
    case LM_XOP_CONCAT: return eval_concat(ctx, &a, &b, nsel, out);
    default: return LAMINAR_ERR_INTERNAL;
  }
}

laminar_code lm_expr_filter(lm_eval_ctx* ctx, const lm_expr* pred, const lm_vec* in,
                            const uint32_t* sel, int64_t nsel, uint32_t* out_sel,
                            int64_t* out_n) {
  lm_vec v;
  LM_TRY(lm_expr_eval(ctx, pred, in, sel, nsel, &v));
  const uint8_t* b = v.data;
  int64_t m = 0;
  if (v.nulls == NULL) {
    for (int64_t k = 0; k < nsel; k++) {
      out_sel[m] = ROW(k);
      m += b[k] != 0;
    }
  } else {
    for (int64_t k = 0; k < nsel; k++) {
      out_sel[m] = ROW(k);
      m += b[k] != 0 && !v.nulls[k];
    }
  }
  *out_n = m;
  return LAMINAR_OK;
}
