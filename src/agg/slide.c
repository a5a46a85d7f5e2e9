/*
 * slide.c -- sliding aggregate state (slide.h): panes added to and subtracted
 * from a window's per-key-id state; MIN/MAX folded, and folded again from a
 * ring of pane values when the pane holding the value leaves.
 */
#include "agg/slide.h"

#include "util/util.h"

#include <math.h>
#include <string.h>

static bool is_minmax(lm_agg_fn fn) { return fn == LM_AGG_MIN || fn == LM_AGG_MAX; }
static bool is_sum(lm_agg_fn fn) { return fn == LM_AGG_SUM || fn == LM_AGG_AVG; }

bool lm_agg_slide_supported(lm_agg_fn fn, lm_type arg_type) {
  switch (fn) {
    case LM_AGG_COUNT_STAR:
    case LM_AGG_COUNT: return true;
    case LM_AGG_SUM:
    case LM_AGG_AVG: return arg_type != LM_TYPE_STRING;
    case LM_AGG_MIN:
    case LM_AGG_MAX: return arg_type != LM_TYPE_STRING;
    default: return false;
  }
}

void lm_agg_slide_init(lm_agg_slide* s, const lm_agg_states* like, int64_t depth) {
  *s = (lm_agg_slide){0};
  s->fn = like->fn;
  s->arg_type = like->arg_type;
  s->result_type = like->result_type;
  int32_t d = 1;
  while (d < depth) d *= 2;
  s->depth = is_minmax(s->fn) ? d : 0;
}

int64_t lm_agg_slide_key_bytes(const lm_agg_slide* s) {
  if (is_minmax(s->fn)) return 24 + (int64_t)s->depth * 8;
  if (is_sum(s->fn)) return 8 + (s->arg_type == LM_TYPE_DOUBLE ? (int64_t)sizeof(lm_agg_dsum) : 16);
  return 8;
}

#define GROW(field, n)                                                        \
  do {                                                                        \
    void* grown_ = lm_realloc(s->field, sizeof(*s->field) * (size_t)(n));     \
    if (grown_ == NULL) return LAMINAR_ERR_NOMEM;                             \
    s->field = grown_;                                                        \
  } while (0)

laminar_code lm_agg_slide_reserve(lm_agg_slide* s, int64_t cap) {
  if (cap <= s->cap) return LAMINAR_OK;
  int64_t ncap = s->cap ? s->cap * 2 : 64;
  while (ncap < cap) ncap *= 2;
  GROW(n, ncap);
  if (is_minmax(s->fn)) {
    GROW(w_pane, ncap);
    if (s->arg_type == LM_TYPE_DOUBLE) {
      GROW(w_d, ncap);
      GROW(r_d, ncap * s->depth);
    } else {
      GROW(w_i, ncap);
      GROW(r_i, ncap * s->depth);
    }
  } else if (is_sum(s->fn)) {
    if (s->arg_type == LM_TYPE_DOUBLE) {
      GROW(sum_d, ncap);
    } else {
      GROW(sum_i, ncap);
    }
  }
  int64_t old = s->cap;
  s->cap = ncap;
  for (int64_t k = old; k < ncap; k++) lm_agg_slide_reset_key(s, (uint32_t)k);
  return LAMINAR_OK;
}

void lm_agg_slide_free(lm_agg_slide* s) {
  lm_free(s->n);
  lm_free(s->sum_i);
  lm_free(s->sum_d);
  lm_free(s->w_d);
  lm_free(s->w_i);
  lm_free(s->w_pane);
  lm_free(s->r_d);
  lm_free(s->r_i);
  *s = (lm_agg_slide){0};
}

/* MIN/MAX folds start at the identity of DuckDB's order, as agg.c's do. */
static double identity_d(lm_agg_fn fn) { return fn == LM_AGG_MAX ? -INFINITY : NAN; }
static int64_t identity_i(lm_agg_fn fn) { return fn == LM_AGG_MAX ? INT64_MIN : INT64_MAX; }

void lm_agg_slide_reset_key(lm_agg_slide* s, uint32_t k) {
  s->n[k] = 0;
  if (s->sum_i) s->sum_i[k] = 0;
  if (s->sum_d) s->sum_d[k] = (lm_agg_dsum){0};
  if (s->w_pane) {
    s->w_pane[k] = INT64_MIN;
    int64_t base = (int64_t)k * s->depth;
    if (s->w_d) {
      double id = identity_d(s->fn);
      s->w_d[k] = id;
      for (int32_t i = 0; i < s->depth; i++) s->r_d[base + i] = id;
    } else {
      int64_t id = identity_i(s->fn);
      s->w_i[k] = id;
      for (int32_t i = 0; i < s->depth; i++) s->r_i[base + i] = id;
    }
  }
}

/* ---- DOUBLE sums ------------------------------------------------------------- */

/* a + b = *s + *e exactly (Knuth's TwoSum; no assumption on magnitudes). */
static inline void two_sum(double a, double b, double* s, double* e) {
  double x = a + b, bv = x - a;
  *e = (a - (x - bv)) + (b - bv);
  *s = x;
}

/* Add `sign` (+1 or -1) times pane sum x. */
static inline void dsum_apply(lm_agg_dsum* d, double x, int32_t sign) {
  if (LM_LIKELY(isfinite(x))) {
    double s, e, lo;
    two_sum(d->hi, sign > 0 ? x : -x, &s, &e);
    two_sum(s, d->lo + e, &d->hi, &lo); /* renormalized: |lo| <= ulp(hi) */
    d->lo = lo;
    double m = fabs(s) > fabs(x) ? fabs(s) : fabs(x);
    d->mag = m > d->mag || isnan(m) ? m : d->mag;
    d->steps++;
  } else if (isnan(x)) {
    d->nan += sign;
  } else if (x > 0) {
    d->pinf += sign;
  } else {
    d->ninf += sign;
  }
}

/* The sum as the plain merge of pane sums gives it for infinities and NaNs. */
static inline double dsum_value(const lm_agg_dsum* d, bool* unsafe) {
  if (d->nan > 0 || (d->pinf > 0 && d->ninf > 0)) return NAN;
  if (d->pinf > 0) return INFINITY;
  if (d->ninf > 0) return -INFINITY;
  if (!isfinite(d->hi)) { /* the finite part overflowed */
    *unsafe = true;
    return d->hi;
  }
  double r = d->hi + d->lo;
  /* error <= steps * 2^-104 * mag; wanted <= 2^-59 * |r| */
  if (!((double)d->steps * d->mag <= 0x1p45 * fabs(r))) *unsafe = true;
  return r;
}

/* ---- add / subtract ------------------------------------------------------------ */

/* MIN/MAX: whether v replaces `cur` when panes fold in order (lm_agg_merge:
 * strictly better in DuckDB's order, NaN above every number; MAX takes a
 * later NaN, MIN never takes a NaN). */
static inline bool beats_d(double v, double cur, bool is_min) {
  /* Bitwise, not short-circuit: no branch on data (x != x: x is NaN). */
  return is_min ? (v < cur) | ((cur != cur) & (v == v)) : (v > cur) | (v != v);
}
static inline bool beats_i(int64_t v, int64_t cur, bool is_min) {
  return is_min ? v < cur : v > cur;
}

/* x when `take`, else y, without a branch (a data-dependent branch here
 * mispredicted on random prices: a third of the refold's time). */
static inline int64_t pick_i(bool take, int64_t x, int64_t y) {
  uint64_t m = -(uint64_t)take;
  return (int64_t)(((uint64_t)x & m) | ((uint64_t)y & ~m));
}
static inline double pick_d(bool take, double x, double y) {
  uint64_t a, b;
  memcpy(&a, &x, 8);
  memcpy(&b, &y, 8);
  uint64_t m = -(uint64_t)take, r = (a & m) | (b & ~m);
  double out;
  memcpy(&out, &r, 8);
  return out;
}

static void extreme_add(lm_agg_slide* s, const uint32_t* kid, const lm_agg_states* pane,
                        int64_t n, int64_t pane_no) {
  bool is_min = s->fn == LM_AGG_MIN;
  int64_t slot = (int64_t)((uint64_t)pane_no & ((uint64_t)s->depth - 1));
  s->top = pane_no;
  for (int64_t g = 0; g < n; g++) {
    if (!pane->has[g]) continue;
    uint32_t k = kid[g];
    s->n[k]++;
    bool take;
    if (s->w_d) {
      double v = pane->mm_d[g];
      s->r_d[(int64_t)k * s->depth + slot] = v;
      take = beats_d(v, s->w_d[k], is_min);
      s->w_d[k] = pick_d(take, v, s->w_d[k]);
    } else {
      int64_t v = pane->mm_i[g];
      s->r_i[(int64_t)k * s->depth + slot] = v;
      take = beats_i(v, s->w_i[k], is_min);
      s->w_i[k] = pick_i(take, v, s->w_i[k]);
    }
    s->w_pane[k] = pick_i(take, pane_no, s->w_pane[k]);
  }
}

/* Key k's value folded again from its ring, oldest pane first: the panes
 * after `gone` (which just left) up to the last one added (less than depth
 * panes on; pane numbers as unsigned: no overflow at the ends of time). */
static void extreme_refold(lm_agg_slide* s, uint32_t k, int64_t gone) {
  bool is_min = s->fn == LM_AGG_MIN;
  uint64_t mask = (uint64_t)s->depth - 1, base = (uint64_t)k * (uint64_t)s->depth;
  uint64_t first = (uint64_t)gone + 1, n = (uint64_t)s->top - (uint64_t)gone;
  if (n > mask) n = mask;
  int64_t at = INT64_MIN;
  if (s->w_d) {
    double w = identity_d(s->fn);
    for (uint64_t i = 0; i < n; i++) {
      double v = s->r_d[base + ((first + i) & mask)];
      bool take = beats_d(v, w, is_min);
      w = pick_d(take, v, w);
      at = pick_i(take, (int64_t)(first + i), at);
    }
    s->w_d[k] = w;
  } else {
    int64_t w = identity_i(s->fn);
    for (uint64_t i = 0; i < n; i++) {
      int64_t v = s->r_i[base + ((first + i) & mask)];
      bool take = beats_i(v, w, is_min);
      w = pick_i(take, v, w);
      at = pick_i(take, (int64_t)(first + i), at);
    }
    s->w_i[k] = w;
  }
  s->w_pane[k] = at;
}

static void extreme_sub(lm_agg_slide* s, const uint32_t* kid, const lm_agg_states* pane,
                        int64_t n, int64_t pane_no) {
  int64_t slot = (int64_t)((uint64_t)pane_no & ((uint64_t)s->depth - 1));
  for (int64_t g = 0; g < n; g++) {
    if (!pane->has[g]) continue;
    uint32_t k = kid[g];
    s->n[k]--;
    if (s->w_d) {
      s->r_d[(int64_t)k * s->depth + slot] = identity_d(s->fn);
    } else {
      s->r_i[(int64_t)k * s->depth + slot] = identity_i(s->fn);
    }
    if (s->w_pane[k] == pane_no) extreme_refold(s, k, pane_no);
  }
}

static void apply(lm_agg_slide* s, const uint32_t* kid, const lm_agg_states* pane, int64_t n,
                  int32_t sign) {
  switch (s->fn) {
    case LM_AGG_COUNT_STAR:
    case LM_AGG_COUNT:
      for (int64_t g = 0; g < n; g++) s->n[kid[g]] += sign * pane->count[g];
      return;
    case LM_AGG_SUM:
    case LM_AGG_AVG:
      if (s->fn == LM_AGG_AVG) {
        for (int64_t g = 0; g < n; g++) s->n[kid[g]] += sign * pane->count[g];
      } else {
        for (int64_t g = 0; g < n; g++) s->n[kid[g]] += sign * (int64_t)(pane->has[g] != 0);
      }
      if (s->sum_d) {
        for (int64_t g = 0; g < n; g++) {
          if (pane->has[g]) dsum_apply(&s->sum_d[kid[g]], pane->sum_d[g], sign);
        }
      } else if (sign > 0) {
        for (int64_t g = 0; g < n; g++) s->sum_i[kid[g]] += pane->sum_i[g];
      } else {
        for (int64_t g = 0; g < n; g++) s->sum_i[kid[g]] -= pane->sum_i[g];
      }
      return;
    default: return;
  }
}

void lm_agg_slide_add(lm_agg_slide* s, const uint32_t* kid, const lm_agg_states* pane, int64_t n,
                      int64_t pane_no) {
  if (is_minmax(s->fn)) {
    extreme_add(s, kid, pane, n, pane_no);
  } else {
    apply(s, kid, pane, n, +1);
  }
}

void lm_agg_slide_sub(lm_agg_slide* s, const uint32_t* kid, const lm_agg_states* pane, int64_t n,
                      int64_t pane_no) {
  if (is_minmax(s->fn)) {
    extreme_sub(s, kid, pane, n, pane_no);
  } else {
    apply(s, kid, pane, n, -1);
  }
}

/* ---- finalize ------------------------------------------------------------------- */

bool lm_agg_slide_finalize(const lm_agg_slide* s, const uint32_t* kids, int64_t n, void* data,
                           uint8_t* nulls, bool* unsafe) {
  uint8_t any = 0;
  switch (s->fn) { /* one plain loop per kind */
    case LM_AGG_COUNT_STAR:
    case LM_AGG_COUNT:
      for (int64_t j = 0; j < n; j++) ((int64_t*)data)[j] = s->n[kids[j]];
      memset(nulls, 0, (size_t)n);
      return false;
    case LM_AGG_SUM:
    case LM_AGG_AVG:
      for (int64_t j = 0; j < n; j++) {
        uint32_t k = kids[j];
        uint8_t is_null = s->n[k] == 0;
        if (s->sum_d) {
          double v = is_null ? 0.0 : dsum_value(&s->sum_d[k], unsafe);
          ((double*)data)[j] = is_null || s->fn == LM_AGG_SUM ? v : v / (double)s->n[k];
        } else if (s->fn == LM_AGG_AVG) {
          ((double*)data)[j] = is_null ? 0.0 : (double)s->sum_i[k] / (double)s->n[k];
        } else { /* NULL also when the total does not fit BIGINT */
          lm_i128 v = s->sum_i[k];
          is_null |= v < INT64_MIN || v > INT64_MAX;
          ((int64_t*)data)[j] = is_null ? 0 : (int64_t)v;
        }
        nulls[j] = is_null;
        any |= is_null;
      }
      return any != 0;
    case LM_AGG_MIN:
    case LM_AGG_MAX:
      for (int64_t j = 0; j < n; j++) {
        uint32_t k = kids[j];
        uint8_t is_null = s->n[k] == 0;
        if (s->w_d) {
          ((double*)data)[j] = is_null ? 0.0 : s->w_d[k];
        } else {
          int64_t v = is_null ? 0 : s->w_i[k];
          switch (s->result_type) {
            case LM_TYPE_INT32: ((int32_t*)data)[j] = (int32_t)v; break;
            case LM_TYPE_BOOL: ((uint8_t*)data)[j] = (uint8_t)v; break;
            default: ((int64_t*)data)[j] = v; break;
          }
        }
        nulls[j] = is_null;
        any |= is_null;
      }
      return any != 0;
    default: /* not a sliding kind (lm_agg_slide_supported) */
      memset(nulls, 1, (size_t)n);
      return n > 0;
  }
}
