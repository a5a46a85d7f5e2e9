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
    case LM_AGG_AVG: /* a DECIMAL's sum: the panes' merge (agg.c) scales it */
      return !lm_type_is_bytes(arg_type) && !lm_type_is_decimal(arg_type);
    case LM_AGG_MIN:
    case LM_AGG_MAX: return !lm_type_is_bytes(arg_type);
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
  if (is_minmax(s->fn)) return 32 + (int64_t)s->depth * 16;
  if (is_sum(s->fn))
    return 8 + (s->arg_type == LM_TYPE_DOUBLE ? (int64_t)sizeof(lm_agg_dsum) : 16);
  return 8;
}

#define GROW(field, n)                                                    \
  do {                                                                    \
    void* grown_ = lm_realloc(s->field, sizeof(*s->field) * (size_t)(n)); \
    if (grown_ == NULL) return LAMINAR_ERR_NOMEM;                         \
    s->field = grown_;                                                    \
  } while (0)

laminar_code lm_agg_slide_reserve(lm_agg_slide* s, int64_t cap) {
  if (cap <= s->cap) return LAMINAR_OK;
  int64_t ncap = s->cap ? s->cap * 2 : 64;
  while (ncap < cap) ncap *= 2;
  GROW(n, ncap);
  if (is_minmax(s->fn)) {
    GROW(w_pane, ncap);
    GROW(w_key, ncap);
    GROW(w_val, ncap);
    GROW(r_key, ncap * s->depth);
    GROW(r_val, ncap * s->depth);
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
  lm_free(s->w_pane);
  lm_free(s->w_key);
  lm_free(s->w_val);
  lm_free(s->r_key);
  lm_free(s->r_val);
  *s = (lm_agg_slide){0};
}

/* MIN/MAX fold on order keys (int64): a value replaces the window's when its
 * key is greater, or when its key is INT64_MAX (a NaN for MAX: a later NaN
 * replaces an earlier one, as lm_agg_merge folds them). The fold starts at
 * key INT64_MIN with the identity of DuckDB's order as value (-inf / NaN for
 * MAX / MIN of DOUBLE, as agg.c's states start; the extreme integer), which
 * only a value of that same key leaves standing. Integer compares make the
 * fold's select a cmov: with doubles it compiled to branches that
 * mispredicted on random prices (half of the refold's time). */
static int64_t identity_val(const lm_agg_slide* s) {
  if (s->arg_type == LM_TYPE_DOUBLE) {
    double d = s->fn == LM_AGG_MAX ? -INFINITY : NAN;
    int64_t bits;
    memcpy(&bits, &d, 8);
    return bits;
  }
  return s->fn == LM_AGG_MAX ? INT64_MIN : INT64_MAX;
}

/* The order key of value v (raw bits for a DOUBLE). DOUBLE: -0.0 as 0.0,
 * IEEE order as signed integers (negatives' magnitude bits flipped); NaN
 * above every number for MAX, below every key for MIN (never taken). MIN
 * keys are reversed (~), so greater always wins. */
static inline int64_t order_key(const lm_agg_slide* s, int64_t v) {
  bool is_min = s->fn == LM_AGG_MIN;
  if (s->arg_type != LM_TYPE_DOUBLE) return is_min ? ~v : v;
  double d;
  memcpy(&d, &v, 8);
  if (d != d) return is_min ? INT64_MIN : INT64_MAX;
  int64_t k = d == 0.0 ? 0 : v;
  k = k >= 0 ? k : k ^ INT64_MAX;
  return is_min ? ~k : k;
}

void lm_agg_slide_reset_key(lm_agg_slide* s, uint32_t k) {
  s->n[k] = 0;
  if (s->sum_i) s->sum_i[k] = 0;
  if (s->sum_d) s->sum_d[k] = (lm_agg_dsum){0};
  if (s->w_pane) {
    int64_t base = (int64_t)k * s->depth, id = identity_val(s);
    s->w_pane[k] = INT64_MIN;
    s->w_key[k] = INT64_MIN;
    s->w_val[k] = id;
    for (int32_t i = 0; i < s->depth; i++) {
      s->r_key[base + i] = INT64_MIN;
      s->r_val[base + i] = id;
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

/* x when `take`, else y, without a branch. */
static inline int64_t pick(bool take, int64_t x, int64_t y) {
  uint64_t m = -(uint64_t)take;
  return (int64_t)(((uint64_t)x & m) | ((uint64_t)y & ~m));
}

static inline bool beats(int64_t key, int64_t cur) {
  return (key > cur) | (key == INT64_MAX);
}

static void extreme_add(lm_agg_slide* s, const uint32_t* kid, const lm_agg_states* pane,
                        int64_t n, int64_t pane_no) {
  int64_t depth = s->depth, slot = (int64_t)((uint64_t)pane_no & ((uint64_t)depth - 1));
  bool dbl = s->arg_type == LM_TYPE_DOUBLE;
  s->top = pane_no;
  /* Arrays in locals: stores through them may alias the structs' fields. */
  int64_t *cnt = s->n, *r_key = s->r_key, *r_val = s->r_val;
  int64_t *w_key = s->w_key, *w_val = s->w_val, *w_pane = s->w_pane;
  const uint8_t* has = pane->has;
  const double* pd = pane->mm_d;
  const int64_t* pi = pane->mm_i;
  for (int64_t g = 0; g < n; g++) {
    if (!has[g]) continue;
    uint32_t k = kid[g];
    int64_t v;
    if (dbl) {
      memcpy(&v, &pd[g], 8);
    } else {
      v = pi[g];
    }
    int64_t key = order_key(s, v), at = (int64_t)k * depth + slot;
    cnt[k]++;
    r_key[at] = key;
    r_val[at] = v;
    bool take = beats(key, w_key[k]);
    w_key[k] = pick(take, key, w_key[k]);
    w_val[k] = pick(take, v, w_val[k]);
    w_pane[k] = pick(take, pane_no, w_pane[k]);
  }
}

/* Key k's value folded again from its ring, oldest pane first: the panes
 * after `gone` (which just left) up to the last one added (less than depth
 * panes on; pane numbers as unsigned: no overflow at the ends of time). */
static void extreme_refold(lm_agg_slide* s, uint32_t k, int64_t gone) {
  uint64_t mask = (uint64_t)s->depth - 1, base = (uint64_t)k * (uint64_t)s->depth;
  uint64_t first = (uint64_t)gone + 1, n = (uint64_t)s->top - (uint64_t)gone;
  if (n > mask) n = mask;
  int64_t w = INT64_MIN;
  uint64_t best = n; /* none */
  for (uint64_t i = 0; i < n; i++) {
    int64_t key = s->r_key[base + ((first + i) & mask)];
    bool take = beats(key, w);
    w = pick(take, key, w);
    best = (uint64_t)pick(take, (int64_t)i, (int64_t)best);
  }
  s->w_key[k] = w;
  s->w_pane[k] = best < n ? (int64_t)(first + best) : INT64_MIN;
  s->w_val[k] = best < n ? s->r_val[base + ((first + best) & mask)] : identity_val(s);
}

static void extreme_sub(lm_agg_slide* s, const uint32_t* kid, const lm_agg_states* pane,
                        int64_t n, int64_t pane_no) {
  int64_t depth = s->depth, slot = (int64_t)((uint64_t)pane_no & ((uint64_t)depth - 1));
  int64_t id = identity_val(s);
  int64_t *cnt = s->n, *r_key = s->r_key, *r_val = s->r_val;
  const int64_t* w_pane = s->w_pane;
  const uint8_t* has = pane->has;
  for (int64_t g = 0; g < n; g++) {
    if (!has[g]) continue;
    uint32_t k = kid[g];
    int64_t at = (int64_t)k * depth + slot;
    cnt[k]--;
    r_key[at] = INT64_MIN;
    r_val[at] = id;
    if (w_pane[k] == pane_no) extreme_refold(s, k, pane_no);
  }
}

static void apply(lm_agg_slide* s, const uint32_t* kid, const lm_agg_states* pane,
                  int64_t n, int32_t sign) {
  /* Arrays in locals: stores through them may alias the structs' fields. */
  int64_t* cnt = s->n;
  const int64_t* pc = pane->count;
  const uint8_t* has = pane->has;
  switch (s->fn) {
    case LM_AGG_COUNT_STAR:
    case LM_AGG_COUNT:
      for (int64_t g = 0; g < n; g++) cnt[kid[g]] += sign * pc[g];
      return;
    case LM_AGG_SUM:
    case LM_AGG_AVG:
      if (s->fn == LM_AGG_AVG) {
        for (int64_t g = 0; g < n; g++) cnt[kid[g]] += sign * pc[g];
      } else {
        for (int64_t g = 0; g < n; g++) cnt[kid[g]] += sign * (int64_t)(has[g] != 0);
      }
      if (s->sum_d) {
        lm_agg_dsum* sd = s->sum_d;
        const double* ps = pane->sum_d;
        for (int64_t g = 0; g < n; g++) {
          if (has[g]) dsum_apply(&sd[kid[g]], ps[g], sign);
        }
      } else {
        lm_i128* si = s->sum_i;
        const lm_i128* ps = pane->sum_i;
        if (sign > 0) {
          for (int64_t g = 0; g < n; g++) si[kid[g]] += ps[g];
        } else {
          for (int64_t g = 0; g < n; g++) si[kid[g]] -= ps[g];
        }
      }
      return;
    default: return;
  }
}

void lm_agg_slide_add(lm_agg_slide* s, const uint32_t* kid, const lm_agg_states* pane,
                      int64_t n, int64_t pane_no) {
  if (is_minmax(s->fn)) {
    extreme_add(s, kid, pane, n, pane_no);
  } else {
    apply(s, kid, pane, n, +1);
  }
}

void lm_agg_slide_sub(lm_agg_slide* s, const uint32_t* kid, const lm_agg_states* pane,
                      int64_t n, int64_t pane_no) {
  if (is_minmax(s->fn)) {
    extreme_sub(s, kid, pane, n, pane_no);
  } else {
    apply(s, kid, pane, n, -1);
  }
}

/* ---- finalize ------------------------------------------------------------------- */

bool lm_agg_slide_finalize(const lm_agg_slide* s, const uint32_t* kids, int64_t n,
                           void* data, uint8_t* nulls, bool* unsafe) {
  uint8_t any = 0;
  const int64_t* cnt = s->n; /* (stores to data may alias the struct's fields) */
  switch (s->fn) {           /* one plain loop per kind */
    case LM_AGG_COUNT_STAR:
    case LM_AGG_COUNT:
      for (int64_t j = 0; j < n; j++) ((int64_t*)data)[j] = cnt[kids[j]];
      memset(nulls, 0, (size_t)n);
      return false;
    case LM_AGG_SUM:
    case LM_AGG_AVG: {
      const lm_agg_dsum* sd = s->sum_d;
      const lm_i128* si = s->sum_i;
      bool avg = s->fn == LM_AGG_AVG;
      for (int64_t j = 0; j < n; j++) {
        uint32_t k = kids[j];
        uint8_t is_null = cnt[k] == 0;
        if (sd) {
          double v = is_null ? 0.0 : dsum_value(&sd[k], unsafe);
          ((double*)data)[j] = is_null || !avg ? v : v / (double)cnt[k];
        } else if (avg) {
          ((double*)data)[j] = is_null ? 0.0 : (double)si[k] / (double)cnt[k];
        } else { /* NULL also when the total does not fit BIGINT */
          lm_i128 v = si[k];
          is_null |= v < INT64_MIN || v > INT64_MAX;
          ((int64_t*)data)[j] = is_null ? 0 : (int64_t)v;
        }
        nulls[j] = is_null;
        any |= is_null;
      }
      return any != 0;
    }
    case LM_AGG_MIN:
    case LM_AGG_MAX: {
      /* One loop per result type: a test of the type per row (the switch of
       * lm_vec_int_put) kept the compiler from hoisting it, 7 instructions a
       * row in hop's MIN/MAX. DOUBLE and BIGINT/TIMESTAMP store 8 bytes. */
      const int64_t* w_val = s->w_val;
      lm_type rt = s->arg_type == LM_TYPE_DOUBLE ? LM_TYPE_INT64 : s->result_type;
      if (rt == LM_TYPE_INT64 || rt == LM_TYPE_TIMESTAMP) {
        for (int64_t j = 0; j < n; j++) {
          uint32_t k = kids[j];
          uint8_t is_null = cnt[k] == 0;
          int64_t v = is_null ? 0 : w_val[k]; /* (as DOUBLE bits, 0: 0.0) */
          memcpy((int64_t*)data + j, &v, 8);
          nulls[j] = is_null;
          any |= is_null;
        }
        return any != 0;
      }
      for (int64_t j = 0; j < n; j++) {
        uint32_t k = kids[j];
        uint8_t is_null = cnt[k] == 0;
        lm_vec_int_put(rt, data, j, is_null ? 0 : w_val[k]);
        nulls[j] = is_null;
        any |= is_null;
      }
      return any != 0;
    }
    default: /* not a sliding kind (lm_agg_slide_supported) */
      memset(nulls, 1, (size_t)n);
      return n > 0;
  }
}
