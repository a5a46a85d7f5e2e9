/*
 * agg.c -- columnar aggregate state: update kernels, finalize, snapshot.
 *
 * The update loops are written per (function, argument type) with the NULL
 * test hoisted out when the batch has no NULLs, so the common case is a
 * branch-free gather-and-accumulate the compiler can pipeline.
 */
#include "agg/agg.h"

#include "agg/internal.h"
#include "agg/sketch.h"

#include "state/table.h"
#include "util/util.h"

#include <math.h>
#include <string.h>

bool lm_agg_is_moments(lm_agg_fn fn) { return fn >= LM_AGG_VAR_SAMP && fn <= LM_AGG_M2; }
bool lm_agg_is_quantile(lm_agg_fn fn) {
  return fn >= LM_AGG_MEDIAN && fn <= LM_AGG_APPROX_QUANTILE;
}
/* The moment aggregates of two arguments (y, x). */
static bool is_bivariate(lm_agg_fn fn) {
  return fn >= LM_AGG_COVAR_SAMP && fn <= LM_AGG_REGR_COUNT;
}

static const lm_agg_def agg_defs[] = {
    {"count", LM_AGG_COUNT, 1},
    {"sum", LM_AGG_SUM, 1},
    {"avg", LM_AGG_AVG, 1},
    {"min", LM_AGG_MIN, 1},
    {"max", LM_AGG_MAX, 1},
    {"bool_and", LM_AGG_MIN, 1},
    {"bool_or", LM_AGG_MAX, 1},
    {"first", LM_AGG_FIRST, 1},
    {"first_value", LM_AGG_FIRST, 1},
    {"last", LM_AGG_LAST, 1},
    {"last_value", LM_AGG_LAST, 1},
    {"var_samp", LM_AGG_VAR_SAMP, 1},
    {"variance", LM_AGG_VAR_SAMP, 1},
    {"var_pop", LM_AGG_VAR_POP, 1},
    {"stddev_samp", LM_AGG_STDDEV_SAMP, 1},
    {"stddev", LM_AGG_STDDEV_SAMP, 1},
    {"stddev_pop", LM_AGG_STDDEV_POP, 1},
    {"covar_samp", LM_AGG_COVAR_SAMP, 2},
    {"covar_pop", LM_AGG_COVAR_POP, 2},
    {"corr", LM_AGG_CORR, 2},
    {"regr_slope", LM_AGG_REGR_SLOPE, 2},
    {"regr_intercept", LM_AGG_REGR_INTERCEPT, 2},
    {"regr_r2", LM_AGG_REGR_R2, 2},
    {"regr_count", LM_AGG_REGR_COUNT, 2},
    {"__mean", LM_AGG_MEAN, 1},
    {"__m2", LM_AGG_M2, 2},
    {"arg_min", LM_AGG_ARG_MIN, 2},
    {"arg_max", LM_AGG_ARG_MAX, 2},
    {"median", LM_AGG_MEDIAN, 1},
    {"quantile_cont", LM_AGG_QUANTILE_CONT, 2},
    {"quantile_disc", LM_AGG_QUANTILE_DISC, 2},
    {"quantile", LM_AGG_QUANTILE_DISC, 2},
    {"approx_quantile", LM_AGG_APPROX_QUANTILE, 2},
    {"approx_percentile", LM_AGG_APPROX_QUANTILE, 2},
    {"approx_count_distinct", LM_AGG_APPROX_COUNT_DISTINCT, 1},
    {"string_agg", LM_AGG_STRING_AGG, 2},
    {"group_concat", LM_AGG_STRING_AGG, 2},
    {"listagg", LM_AGG_STRING_AGG, 2},
};

const lm_agg_def* lm_agg_find(const char* name) {
  for (size_t i = 0; i < sizeof agg_defs / sizeof agg_defs[0]; i++) {
    if (lm_streq_nocase(name, agg_defs[i].name)) return &agg_defs[i];
  }
  return NULL;
}

const char* lm_agg_fn_name(lm_agg_fn fn) {
  for (size_t i = 0; i < sizeof agg_defs / sizeof agg_defs[0]; i++) {
    if (agg_defs[i].fn == fn) return agg_defs[i].name;
  }
  return "aggregate";
}

static bool uses_count(lm_agg_fn fn) {
  return fn == LM_AGG_COUNT_STAR || fn == LM_AGG_COUNT || fn == LM_AGG_AVG ||
         fn == LM_AGG_COUNT_DISTINCT || lm_agg_is_moments(fn) || lm_agg_is_quantile(fn);
}
/* Keeps counted value-set entries (d_cnt): over a changelog, and always for
 * the quantiles. */
static bool counts_values(const lm_agg_states* st) {
  return st->weighted || lm_agg_is_quantile(st->fn);
}
static bool is_first_last(lm_agg_fn fn) {
  return fn == LM_AGG_FIRST || fn == LM_AGG_LAST;
}

/* MIN/MAX over a changelog keep a multiset of each group's values (the
 * COUNT(DISTINCT) set with a multiplicity per value): a retraction lowers a
 * value's multiplicity, and the result is the least / greatest value still
 * held, found by a scan of the group's values when it is finalized. */
/* COUNT(DISTINCT) over a changelog keeps the same multiset; `count` is the
 * number of its values held a positive number of times. */
/* FIRST/LAST over a changelog keep a multiset of (event time, value) entries,
 * NULL values included, each with a stack of runs (arrival, copies): +w
 * pushes w copies, -w pops w copies of an equal (event time, value), the most
 * recent arrival first (equal rows are indistinguishable: which copy goes only
 * matters for ties on event time). FIRST is the entry with the least (event
 * time, oldest arrival held), LAST the greatest (event time, newest arrival). */
bool lm_agg_retractable(lm_agg_fn fn) {
  return fn == LM_AGG_COUNT_STAR || fn == LM_AGG_COUNT || fn == LM_AGG_AVG ||
         fn == LM_AGG_SUM || fn == LM_AGG_MIN || fn == LM_AGG_MAX ||
         fn == LM_AGG_COUNT_DISTINCT || fn == LM_AGG_FIRST || fn == LM_AGG_LAST ||
         lm_agg_is_moments(fn) || lm_agg_is_quantile(fn) || fn == LM_AGG_STRING_AGG;
}

bool lm_agg_states_set_weighted(lm_agg_states* st) {
  if (st->fn == LM_AGG_UDAF) {
    st->weighted = st->u_mode == LM_UDAF_WHOLE && lm_udaf_retractable(st->udaf);
    return st->weighted;
  }
  if (!lm_agg_retractable(st->fn)) return false;
  st->weighted = true;
  return true;
}
static bool uses_sum(lm_agg_fn fn) { return fn == LM_AGG_SUM || fn == LM_AGG_AVG; }
static bool uses_minmax(lm_agg_fn fn) { return fn == LM_AGG_MIN || fn == LM_AGG_MAX; }
/* MIN/MAX of DOUBLE start each group at the identity of DuckDB's order (NaN
 * above every number): -inf for MAX, NaN for MIN, so a fold needs no test of
 * whether a value came yet (`has` still says so, for NULL results). */
static double minmax_identity(lm_agg_fn fn) { return fn == LM_AGG_MAX ? -INFINITY : NAN; }
static bool is_arg_minmax(lm_agg_fn fn) {
  return fn == LM_AGG_ARG_MIN || fn == LM_AGG_ARG_MAX;
}
/* Keeps one value of the argument's type per group. */
static bool keeps_value(lm_agg_fn fn) {
  return uses_minmax(fn) || is_first_last(fn) || is_arg_minmax(fn);
}

void lm_agg_states_init(lm_agg_states* st, const lm_agg_spec* spec, lm_type arg_type) {
  *st = (lm_agg_states){0};
  st->fn = spec->fn;
  st->arg_type = arg_type;
  st->result_type = spec->result_type;
  st->q = spec->fn == LM_AGG_MEDIAN ? 0.5 : spec->param;
  st->by_type =
      is_arg_minmax(spec->fn) && spec->order != NULL ? spec->order->type : LM_TYPE_NULL;
  lm_pool_init(&st->strings);
  if (spec->fn == LM_AGG_UDAF) lm_udaf_states_init(st, spec);
  if (spec->fn == LM_AGG_STRING_AGG) lm_strcat_init(st, spec);
}

#define GROW(field, n)                                                      \
  do {                                                                      \
    void* grown_ = lm_realloc(st->field, sizeof(*st->field) * (size_t)(n)); \
    if (grown_ == NULL) return LAMINAR_ERR_NOMEM;                           \
    st->field = grown_;                                                     \
  } while (0)

laminar_code lm_agg_states_reserve(lm_agg_states* st, int64_t cap) {
  if (cap <= st->cap) return LAMINAR_OK;
  if (st->fn == LM_AGG_UDAF) return lm_udaf_states_reserve(st, cap);
  if (st->fn == LM_AGG_STRING_AGG) return lm_strcat_reserve(st, cap);
  if (uses_count(st->fn) || st->weighted) GROW(count, cap);
  if (uses_sum(st->fn)) {
    if (st->arg_type == LM_TYPE_DOUBLE) {
      GROW(sum_d, cap);
    } else {
      GROW(sum_i, cap);
    }
  }
  if (keeps_value(st->fn)) {
    if (st->arg_type == LM_TYPE_DOUBLE) {
      GROW(mm_d, cap);
    } else if (lm_type_is_bytes(st->arg_type)) {
      GROW(mm_s, cap);
    } else {
      GROW(mm_i, cap);
    }
  }
  if (is_first_last(st->fn)) {
    GROW(ord, cap);
    GROW(vnull, cap);
  }
  if (is_arg_minmax(st->fn)) {
    if (st->by_type == LM_TYPE_DOUBLE) {
      GROW(by_d, cap);
    } else if (lm_type_is_bytes(st->by_type)) {
      GROW(by_s, cap);
    } else {
      GROW(by_i, cap);
    }
  }
  if (st->fn == LM_AGG_COUNT_DISTINCT || (st->weighted && keeps_value(st->fn)) ||
      lm_agg_is_quantile(st->fn))
    GROW(d_head, cap);
  if (st->fn == LM_AGG_APPROX_COUNT_DISTINCT) GROW(hll, cap * LM_HLL_M);
  if (lm_agg_is_moments(st->fn)) {
    GROW(m_a, cap);
    GROW(q_a, cap);
    if (is_bivariate(st->fn)) {
      GROW(m_b, cap);
      GROW(q_b, cap);
      GROW(c_ab, cap);
    }
  } else if (st->fn != LM_AGG_COUNT && st->fn != LM_AGG_COUNT_STAR &&
             st->fn != LM_AGG_COUNT_DISTINCT && !lm_agg_is_quantile(st->fn) &&
             st->fn != LM_AGG_APPROX_COUNT_DISTINCT) {
    GROW(has, cap);
  }
  st->cap = cap;
  return LAMINAR_OK;
}

/* Its updates add value-set entries (at most one a row): COUNT(DISTINCT), the
 * quantiles, MIN/MAX/FIRST/LAST over a changelog. */
static bool adds_entries(const lm_agg_states* st) {
  return st->fn == LM_AGG_COUNT_DISTINCT || (st->weighted && keeps_value(st->fn)) ||
         lm_agg_is_quantile(st->fn);
}

int64_t lm_agg_states_bytes(const lm_agg_states* st, int64_t ngroups) {
  if (st->fn == LM_AGG_UDAF) return lm_udaf_states_bytes(st, ngroups);
  if (st->fn == LM_AGG_STRING_AGG) return lm_strcat_bytes(st, ngroups);
  int64_t per = 0;
  if (st->count) per += 8;
  if (st->sum_i) per += (int64_t)sizeof(lm_i128);
  if (st->sum_d) per += 8;
  if (st->mm_i) per += 8;
  if (st->mm_d) per += 8;
  if (st->mm_s) per += (int64_t)sizeof(lm_str);
  if (st->has) per += 1;
  if (st->ord) per += 8;
  if (st->vnull) per += 1;
  if (st->d_head) per += 4;
  per +=
      8 * ((st->m_a != NULL) + (st->m_b != NULL) + (st->q_a != NULL) + (st->q_b != NULL) +
           (st->c_ab != NULL) + (st->by_i != NULL) + (st->by_d != NULL));
  if (st->by_s) per += (int64_t)sizeof(lm_str);
  if (st->hll) per += LM_HLL_M;
  /* A value-set entry: hash, group, value (16 at most), next, count, time,
   * null flag, run top, and its table slots (about two). */
  int64_t entries = st->d_n * 64 + st->r_n * 20;
  return ngroups * per + entries + (int64_t)st->strings.used_bytes;
}

int64_t lm_agg_states_pending_bytes(const lm_agg_states* st, uint64_t seq) {
  return adds_entries(st) && seq != 0 && st->prep_seq == seq ? st->prep_rows * 64 : 0;
}

/* Whether fn's states use fields beyond the common ones (count, sums,
 * min/max values, has, FIRST/LAST order, distinct lists): one test of fn
 * instead of one per rare field in lm_agg_states_init_group (one call per new
 * group: a row each of hop's panes). */
static bool has_rare_fields(lm_agg_fn fn) {
  return fn == LM_AGG_UDAF || fn == LM_AGG_STRING_AGG || is_arg_minmax(fn) ||
         lm_agg_is_moments(fn) || fn == LM_AGG_APPROX_COUNT_DISTINCT;
}

void lm_agg_states_init_group(lm_agg_states* st, int64_t g) {
  if (LM_UNLIKELY(has_rare_fields(st->fn))) {
    if (st->fn == LM_AGG_UDAF || st->fn == LM_AGG_STRING_AGG) {
      lm_agg_states_init_range(st, g, 1);
      return;
    }
    if (st->m_a) st->m_a[g] = st->q_a[g] = 0.0;
    if (st->m_b) st->m_b[g] = st->q_b[g] = st->c_ab[g] = 0.0;
    if (st->by_i) st->by_i[g] = 0;
    if (st->by_d) st->by_d[g] = 0.0;
    if (st->by_s) st->by_s[g] = (lm_str){NULL, 0};
    if (st->hll) memset(st->hll + g * LM_HLL_M, 0, LM_HLL_M);
  }
  if (st->count) st->count[g] = 0;
  if (st->sum_i) st->sum_i[g] = 0;
  if (st->sum_d) st->sum_d[g] = 0.0;
  if (st->mm_i) st->mm_i[g] = 0;
  if (st->mm_d) st->mm_d[g] = uses_minmax(st->fn) ? minmax_identity(st->fn) : 0.0;
  if (st->mm_s) st->mm_s[g] = (lm_str){NULL, 0};
  if (st->has) st->has[g] = 0;
  if (st->ord) st->ord[g] = 0;
  if (st->vnull) st->vnull[g] = 0;
  if (st->d_head) st->d_head[g] = -1;
}

void lm_agg_states_init_range(lm_agg_states* st, int64_t first, int64_t n) {
  if (n <= 0) return;
  if (st->fn == LM_AGG_UDAF) {
    lm_udaf_states_init_range(st, first, n);
    return;
  }
  if (st->fn == LM_AGG_STRING_AGG) {
    lm_strcat_init_range(st, first, n);
    return;
  }
#define ZERO_RANGE(field) \
  if (st->field) memset(st->field + first, 0, sizeof(*st->field) * (size_t)n)
  ZERO_RANGE(count);
  ZERO_RANGE(sum_i);
  ZERO_RANGE(sum_d); /* 0.0 and {NULL, 0} are all-zero bytes */
  ZERO_RANGE(mm_i);
  if (st->mm_d && uses_minmax(st->fn)) {
    double id = minmax_identity(st->fn);
    for (int64_t g = first; g < first + n; g++) st->mm_d[g] = id;
  } else {
    ZERO_RANGE(mm_d);
  }
  ZERO_RANGE(mm_s);
  ZERO_RANGE(has);
  ZERO_RANGE(ord);
  ZERO_RANGE(vnull);
  ZERO_RANGE(m_a);
  ZERO_RANGE(m_b);
  ZERO_RANGE(q_a);
  ZERO_RANGE(q_b);
  ZERO_RANGE(c_ab);
  ZERO_RANGE(by_i);
  ZERO_RANGE(by_d);
  ZERO_RANGE(by_s);
  if (st->hll) memset(st->hll + first * LM_HLL_M, 0, (size_t)n * LM_HLL_M);
#undef ZERO_RANGE
  if (st->d_head) {
    for (int64_t g = first; g < first + n; g++) st->d_head[g] = -1;
  }
}

void lm_agg_states_drop_group(lm_agg_states* st, int64_t g) {
  if (st->fn == LM_AGG_UDAF) {
    lm_udaf_states_drop_group(st, g);
    return;
  }
  if (st->fn == LM_AGG_STRING_AGG) {
    lm_strcat_drop_group(st, g);
    return;
  }
  if (st->d_head == NULL) return;
  for (int32_t e = st->d_head[g]; e >= 0; e = st->d_next[e]) st->d_group[e] = UINT32_MAX;
  st->d_head[g] = -1;
}

void lm_agg_states_clear(lm_agg_states* st) {
  if (st->fn == LM_AGG_UDAF) lm_udaf_states_clear(st);
  if (st->fn == LM_AGG_STRING_AGG) lm_strcat_clear(st);
  lm_pool_reset(&st->strings);
  st->d_n = 0;
  st->r_n = 0;
  st->r_free = 0;
  if (st->d_table) memset(st->d_table, 0, sizeof(uint32_t) * ((size_t)st->d_mask + 1));
}

void lm_agg_states_free(lm_agg_states* st) {
  if (st->fn == LM_AGG_UDAF) lm_udaf_states_free(st);
  if (st->fn == LM_AGG_STRING_AGG) lm_strcat_free(st);
  lm_free(st->count);
  lm_free(st->sum_i);
  lm_free(st->sum_d);
  lm_free(st->mm_i);
  lm_free(st->mm_d);
  lm_free(st->mm_s);
  lm_free(st->has);
  lm_free(st->ord);
  lm_free(st->vnull);
  lm_free(st->m_a);
  lm_free(st->m_b);
  lm_free(st->q_a);
  lm_free(st->q_b);
  lm_free(st->c_ab);
  lm_free(st->by_i);
  lm_free(st->by_d);
  lm_free(st->by_s);
  lm_free(st->d_hash);
  lm_free(st->d_group);
  lm_free(st->d_i);
  lm_free(st->d_d);
  lm_free(st->d_s);
  lm_free(st->d_next);
  lm_free(st->d_cnt);
  lm_free(st->q_sort);
  lm_free(st->hll);
  lm_free(st->d_t);
  lm_free(st->d_vnull);
  lm_free(st->d_top);
  lm_free(st->r_seq);
  lm_free(st->r_cnt);
  lm_free(st->r_next);
  lm_free(st->d_head);
  lm_free(st->d_table);
  lm_pool_free(&st->strings);
  *st = (lm_agg_states){0};
}

/* Non-NULL values of group g: weighted states count them, others flag them. */
static inline bool has_value(const lm_agg_states* st, int64_t g) {
  return st->weighted ? st->count[g] != 0 : st->has[g] != 0;
}

/* ---- update ------------------------------------------------------------- */

#define ROW(j) (sel ? sel[j] : (uint32_t)(j))

static int cmp_str(lm_str a, lm_str b) {
  int64_t n = a.len < b.len ? a.len : b.len;
  int c = n > 0 ? memcmp(a.ptr, b.ptr, (size_t)n) : 0;
  if (c != 0) return c;
  return (a.len > b.len) - (a.len < b.len);
}

/* DuckDB orders NaN above every other double; MIN/MAX follow that order. */
static bool dbl_less(double a, double b) {
  if (isnan(a)) return false;
  if (isnan(b)) return true;
  return a < b;
}

/* Fold double v into MIN/MAX state g (which starts at minmax_identity) in
 * DuckDB's order, NaN above every number, without a branch: a data-dependent
 * branch here mispredicted on random prices (35% of W1's updates, a third of
 * hop's pane merges). Folding the identity changes nothing. */
static inline void fold_minmax_d(double* mm, uint8_t* has, uint32_t g, double v,
                                 bool is_min) {
  double cur = mm[g];
  bool take = is_min ? !isnan(v) && (isnan(cur) || v < cur) : isnan(v) || v > cur;
  mm[g] = take ? v : cur;
  has[g] = 1;
}

static int64_t int_value(const lm_vec* v, uint32_t row) { return lm_vec_int_at(v, row); }

/* A SUM's 128-bit total s plus w times x. A DECIMAL(p > 18) argument can take
 * it past 128 bits: it then sticks at the lowest 128-bit value, a total no
 * result type holds, so it finalizes as NULL (as a total past DECIMAL(38)). */
#define SUM_POISON ((lm_i128)(-(((lm_u128)1 << 127) - 1)) - 1)
static inline lm_i128 sum_add(lm_i128 s, lm_i128 x, int64_t w) {
  lm_i128 wx, r;
  if (s == SUM_POISON || __builtin_mul_overflow(x, (lm_i128)w, &wx) ||
      __builtin_add_overflow(s, wx, &r))
    return SUM_POISON;
  return r;
}

/* ---- the moment aggregates ------------------------------------------------ */

/* Group g takes w more copies of the pair (a, b) (b unused by one-argument
 * aggregates): Welford's update in its weighted form (West, 1979), so that a
 * retraction (w < 0) is the inverse update. A group back at no rows restarts
 * from exact zeros. */
static inline void moments_add(lm_agg_states* st, uint32_t g, double a, double b,
                               int64_t w) {
  int64_t n = st->count[g] + w;
  st->count[g] = n;
  if (n == 0) {
    st->m_a[g] = st->q_a[g] = 0.0;
    if (st->m_b) st->m_b[g] = st->q_b[g] = st->c_ab[g] = 0.0;
    return;
  }
  if (n - w == 0) { /* the first rows: w copies of one point have no spread */
    st->m_a[g] = a;
    if (st->m_b) st->m_b[g] = b;
    return;
  }
  if (n == 1 && w < 0) {
    /* One row left: the retracted rows' rounding goes with them (no spread),
     * though its value is only as exact as the means were. */
    double fw = (double)w, fn = (double)n;
    st->m_a[g] += fw * (a - st->m_a[g]) / fn;
    st->q_a[g] = 0.0;
    if (st->m_b) {
      st->m_b[g] += fw * (b - st->m_b[g]) / fn;
      st->q_b[g] = st->c_ab[g] = 0.0;
    }
    return;
  }
  double fw = (double)w, fn = (double)n;
  double da = a - st->m_a[g];
  st->m_a[g] += fw * da / fn;
  st->q_a[g] += fw * da * (a - st->m_a[g]);
  if (st->m_b) {
    double db = b - st->m_b[g];
    st->m_b[g] += fw * db / fn;
    st->q_b[g] += fw * db * (b - st->m_b[g]);
    st->c_ab[g] += fw * da * (b - st->m_b[g]);
  }
}

/* Rows sel[j] of a (and b for two arguments; DOUBLE), each weight[row] times
 * (weight NULL: once), into groups gids[j]; a row with a NULL argument is
 * skipped. */
static laminar_code moments_update(lm_agg_states* st, const lm_vec* a, const lm_vec* b,
                                   const uint32_t* sel, const uint32_t* gids,
                                   const int64_t* weight, int64_t m) {
  bool two = is_bivariate(st->fn), counted = st->fn == LM_AGG_M2;
  if (a == NULL || a->type != LM_TYPE_DOUBLE ||
      (two && (b == NULL || b->type != LM_TYPE_DOUBLE)) ||
      (counted && (b == NULL || b->type != LM_TYPE_INT64)))
    return LAMINAR_ERR_INTERNAL;
  const double* x = a->data;
  const double* y = two ? b->data : NULL;
  const int64_t* times = counted ? b->data : NULL; /* __m2: each value n times */
  const uint8_t* xn = a->nulls;
  const uint8_t* yn = two || counted ? b->nulls : NULL;
  for (int64_t j = 0; j < m; j++) {
    uint32_t r = ROW(j);
    if ((xn && xn[r]) || (yn && yn[r])) continue;
    int64_t w = weight ? weight[r] : 1;
    if (times != NULL && __builtin_mul_overflow(w, times[r], &w)) continue;
    if (w != 0) moments_add(st, gids[j], x[r], y ? y[r] : 0.0, w);
  }
  return LAMINAR_OK;
}

/* Chan's parallel rule: group src of `from` folded into group dst of st. */
static void moments_merge(lm_agg_states* st, int64_t dst, const lm_agg_states* from,
                          int64_t src) {
  int64_t na = st->count[dst], nb = from->count[src], n = na + nb;
  if (nb == 0) return;
  if (na == 0 || n == 0) {
    st->count[dst] = n;
    st->m_a[dst] = n == 0 ? 0.0 : from->m_a[src];
    st->q_a[dst] = n == 0 ? 0.0 : from->q_a[src];
    if (st->m_b) {
      st->m_b[dst] = n == 0 ? 0.0 : from->m_b[src];
      st->q_b[dst] = n == 0 ? 0.0 : from->q_b[src];
      st->c_ab[dst] = n == 0 ? 0.0 : from->c_ab[src];
    }
    return;
  }
  double fb = (double)nb, fn = (double)n, f = (double)na * fb / fn;
  double da = from->m_a[src] - st->m_a[dst];
  st->m_a[dst] += da * fb / fn;
  st->q_a[dst] += from->q_a[src] + da * da * f;
  if (st->m_b) {
    double db = from->m_b[src] - st->m_b[dst];
    st->m_b[dst] += db * fb / fn;
    st->q_b[dst] += from->q_b[src] + db * db * f;
    st->c_ab[dst] += from->c_ab[src] + da * db * f;
  }
  st->count[dst] = n;
}

/* Group g's result (DOUBLE; not REGR_COUNT) in *out, or true for NULL. As
 * DuckDB: population statistics of one row are 0, sample ones NULL; corr and
 * regr_slope divide by a zero deviation (NaN); regr_intercept is NULL where
 * the slope is NaN, regr_r2 NULL when x is constant and 1 when y is. */
static bool moments_result(const lm_agg_states* st, int64_t g, double* out) {
  int64_t n = st->count[g];
  if (n <= 0) return true;
  double fn = (double)n;
  /* (a sum of squares a retraction left a rounding error below zero is zero) */
  double qa = st->q_a[g] > 0.0 ? st->q_a[g] : 0.0;
  double qb = st->q_b != NULL && st->q_b[g] > 0.0 ? st->q_b[g] : 0.0;
  double var_x = n > 1 ? qb / fn : 0.0, var_y = n > 1 ? qa / fn : 0.0;
  /* |c_ab| <= sqrt(q_a q_b) (Cauchy-Schwarz): a co-moment past it is rounding
   * (after retractions), so a constant column gives NaN as it should. */
  double cmax = sqrt(qa) * sqrt(qb);
  double c = st->c_ab != NULL ? st->c_ab[g] : 0.0;
  c = c > cmax ? cmax : c < -cmax ? -cmax : c;
  double cov = c / fn;
  switch (st->fn) {
    case LM_AGG_VAR_POP: *out = qa / fn; return false;
    case LM_AGG_MEAN: *out = st->m_a[g]; return false;
    case LM_AGG_M2: *out = qa; return false;
    case LM_AGG_STDDEV_POP: *out = sqrt(qa / fn); return false;
    case LM_AGG_VAR_SAMP:
    case LM_AGG_STDDEV_SAMP:
      if (n < 2) return true;
      *out = qa / (fn - 1.0);
      if (st->fn == LM_AGG_STDDEV_SAMP) *out = sqrt(*out);
      return false;
    case LM_AGG_COVAR_POP: *out = cov; return false;
    case LM_AGG_COVAR_SAMP:
      if (n < 2) return true;
      *out = c / (fn - 1.0);
      return false;
    case LM_AGG_CORR: *out = cov / (sqrt(var_x) * sqrt(var_y)); return false;
    case LM_AGG_REGR_SLOPE: *out = cov / var_x; return false;
    case LM_AGG_REGR_INTERCEPT: {
      double slope = cov / var_x;
      if (isnan(slope)) return true;
      *out = st->m_a[g] - slope * st->m_b[g];
      return false;
    }
    case LM_AGG_REGR_R2: {
      if (var_x == 0.0) return true;
      if (var_y == 0.0) {
        *out = 1.0;
        return false;
      }
      double r = cov / (sqrt(var_x) * sqrt(var_y));
      *out = r * r;
      return false;
    }
    default: return true;
  }
}

/* ---- COUNT(DISTINCT): the (group, value) set ----------------------------- */

/* One distinct value: its kind follows the state's argument type. */
typedef struct dvalue {
  int64_t i;
  double d;
  lm_str s;
  int64_t t;    /* FIRST/LAST over a changelog: the event time */
  uint8_t null; /* FIRST/LAST over a changelog: the value is NULL */
} dvalue;

static dvalue value_at(const lm_agg_states* st, const lm_vec* arg, uint32_t r) {
  dvalue v = {.i = 0};
  if (st->arg_type == LM_TYPE_DOUBLE) {
    double d = ((const double*)arg->data)[r];
    v.d = d == 0.0 ? 0.0 : isnan(d) ? NAN : d; /* DuckDB: -0.0 = 0.0, NaN = NaN */
  } else if (lm_type_is_bytes(st->arg_type)) {
    v.s = ((const lm_str*)arg->data)[r];
  } else {
    v.i = int_value(arg, r);
  }
  return v;
}

static uint64_t dvalue_hash(const lm_agg_states* st, int64_t g, dvalue v) {
  uint64_t h = lm_state_mix64((uint64_t)g * 0x9E3779B97F4A7C15ULL + 1);
  if (st->weighted && is_first_last(st->fn)) {
    h = lm_state_mix64(h ^ (uint64_t)v.t) + v.null;
    if (v.null) return h;
  }
  if (st->arg_type == LM_TYPE_DOUBLE) {
    uint64_t bits;
    memcpy(&bits, &v.d, 8);
    return lm_state_mix64(h ^ bits);
  }
  if (lm_type_is_bytes(st->arg_type)) {
    for (int64_t k = 0; k < v.s.len; k++)
      h = (h ^ (uint8_t)v.s.ptr[k]) * 0x100000001B3ULL;
    return lm_state_mix64(h ^ (uint64_t)v.s.len);
  }
  return lm_state_mix64(h ^ (uint64_t)v.i);
}

static bool dvalue_eq(const lm_agg_states* st, int32_t e, dvalue v) {
  if (st->d_t != NULL) { /* FIRST/LAST: the same time, both NULL or the same bits */
    if (st->d_t[e] != v.t || st->d_vnull[e] != v.null) return false;
    if (v.null) return true;
    if (st->arg_type == LM_TYPE_DOUBLE) return memcmp(&st->d_d[e], &v.d, sizeof v.d) == 0;
  }
  if (st->arg_type == LM_TYPE_DOUBLE) {
    double a = st->d_d[e];
    return a == v.d || (isnan(a) && isnan(v.d));
  }
  if (lm_type_is_bytes(st->arg_type)) return cmp_str(st->d_s[e], v.s) == 0;
  return st->d_i[e] == v.i;
}

static void dset_link(lm_agg_states* st, int32_t e) {
  uint32_t slot = (uint32_t)st->d_hash[e] & st->d_mask;
  while (st->d_table[slot] != 0) slot = (slot + 1) & st->d_mask;
  st->d_table[slot] = (uint32_t)e + 1;
}

/* The capacity after `cap` (doubled, from 64) that holds `need` entries
 * (indexed by int32), or -1 past that. */
static int64_t grown_cap(int64_t cap, int64_t need) {
  int64_t ncap = cap ? cap * 2 : 64;
  while (ncap < need) ncap *= 2;
  return ncap > INT32_MAX / 4 ? -1 : ncap;
}

/* Room for `extra` more entries, the table at most half full. */
static laminar_code dset_reserve_n(lm_agg_states* st, int64_t extra) {
  int64_t need = st->d_n + extra;
  if (need > st->d_cap) {
    int64_t ncap = grown_cap(st->d_cap, need);
    if (ncap < 0) return LAMINAR_ERR_NOMEM;
    GROW(d_hash, ncap);
    GROW(d_group, ncap);
    GROW(d_next, ncap);
    if (counts_values(st)) GROW(d_cnt, ncap);
    if (lm_agg_is_quantile(st->fn)) GROW(q_sort, ncap);
    if (st->weighted && is_first_last(st->fn)) {
      GROW(d_t, ncap);
      GROW(d_vnull, ncap);
      GROW(d_top, ncap);
    }
    if (st->arg_type == LM_TYPE_DOUBLE) {
      GROW(d_d, ncap);
    } else if (lm_type_is_bytes(st->arg_type)) {
      GROW(d_s, ncap);
    } else {
      GROW(d_i, ncap);
    }
    st->d_cap = ncap;
  }
  uint64_t size = st->d_table ? (uint64_t)st->d_mask + 1 : 0;
  if ((uint64_t)need * 2 > size) {
    uint64_t nsize = size ? size * 2 : 128;
    while ((uint64_t)need * 2 > nsize) nsize *= 2;
    if (nsize > (uint64_t)UINT32_MAX) return LAMINAR_ERR_NOMEM;
    uint32_t* fresh = lm_calloc((size_t)nsize, sizeof(uint32_t));
    if (fresh == NULL) return LAMINAR_ERR_NOMEM;
    lm_free(st->d_table);
    st->d_table = fresh;
    st->d_mask = (uint32_t)(nsize - 1);
    for (int64_t e = 0; e < st->d_n; e++) dset_link(st, (int32_t)e);
  }
  return LAMINAR_OK;
}

static laminar_code dset_reserve(lm_agg_states* st) { return dset_reserve_n(st, 1); }

/* Room for `extra` more runs (FIRST / LAST over a changelog). */
static laminar_code run_reserve_n(lm_agg_states* st, int64_t extra) {
  int64_t need = st->r_n + extra;
  if (need <= st->r_cap) return LAMINAR_OK;
  int64_t ncap = grown_cap(st->r_cap, need);
  if (ncap < 0) return LAMINAR_ERR_NOMEM;
  GROW(r_seq, ncap);
  GROW(r_cnt, ncap);
  GROW(r_next, ncap);
  st->r_cap = ncap;
  return LAMINAR_OK;
}

/* Bytes of a copy of every non-NULL string of v's rows sel[j], j < m, each
 * rounded up to 16 bytes. */
static size_t string_bytes(const lm_vec* v, const uint32_t* sel, int64_t m) {
  const lm_str* x = v->data;
  size_t bytes = 0;
  for (int64_t j = 0; j < m; j++) {
    uint32_t r = sel != NULL ? sel[j] : (uint32_t)j;
    if (v->nulls != NULL && v->nulls[r]) continue;
    bytes += (size_t)x[r].len + 16;
  }
  return bytes;
}

laminar_code lm_agg_states_prepare(lm_agg_states* st, const lm_vec* arg,
                                   const lm_vec* order, const uint32_t* sel, int64_t m,
                                   uint64_t seq) {
  if (arg == NULL || m <= 0) return LAMINAR_OK;
  /* Most states have nothing to prepare (no entries, no strings): out before
   * the bookkeeping below, as this runs per window and aggregate (hop: 5 a
   * pane). */
  if (!adds_entries(st) && st->fn != LM_AGG_STRING_AGG &&
      !(st->weighted && is_first_last(st->fn)) && !lm_type_is_bytes(st->arg_type) &&
      !lm_type_is_bytes(st->by_type))
    return LAMINAR_OK;
  if (seq == 0 || seq != st->prep_seq) { /* a new chunk: nothing prepared yet */
    st->prep_seq = seq;
    st->prep_rows = 0;
    st->prep_bytes = 0;
  }
  /* Value entries: COUNT(DISTINCT)'s; over a changelog MIN/MAX's and
   * FIRST/LAST's too (at most one new entry a row), FIRST/LAST's runs (at
   * most one a row). */
  bool distinct = st->fn == LM_AGG_COUNT_DISTINCT;
  bool sets = adds_entries(st);
  int64_t rows = st->prep_rows + m;
  if (sets) LM_TRY(dset_reserve_n(st, rows));
  if (st->fn == LM_AGG_STRING_AGG) LM_TRY(lm_strcat_room(st, rows));
  if (st->weighted && is_first_last(st->fn)) LM_TRY(run_reserve_n(st, rows));
  /* Every row's string copied at most once (ARG_MIN/ARG_MAX: its x and by),
   * added to what earlier slices of the chunk reserved. */
  size_t bytes = st->prep_bytes;
  if (lm_type_is_bytes(st->arg_type) &&
      (distinct || keeps_value(st->fn) || lm_agg_is_quantile(st->fn) ||
       st->fn == LM_AGG_STRING_AGG))
    bytes += string_bytes(arg, sel, m);
  if (lm_type_is_bytes(st->by_type) && order != NULL)
    bytes += string_bytes(order, sel, m);
  if (bytes > 0 && !lm_pool_reserve(&st->strings, bytes)) return LAMINAR_ERR_NOMEM;
  st->prep_rows = rows;
  st->prep_bytes = bytes;
  return LAMINAR_OK;
}

/* The entry of value v in group g's set, added if new (*out_added). */
static laminar_code dset_find_or_add(lm_agg_states* st, uint32_t g, dvalue v,
                                     int32_t* out, bool* out_added) {
  uint64_t h = dvalue_hash(st, g, v);
  *out_added = false;
  if (st->d_table != NULL) {
    for (uint32_t slot = (uint32_t)h & st->d_mask; st->d_table[slot] != 0;
         slot = (slot + 1) & st->d_mask) {
      int32_t e = (int32_t)st->d_table[slot] - 1;
      if (st->d_hash[e] == h && st->d_group[e] == g && dvalue_eq(st, e, v)) {
        *out = e;
        return LAMINAR_OK;
      }
    }
  }
  LM_TRY(dset_reserve(st));
  int32_t e = (int32_t)st->d_n++;
  if (st->d_cnt) st->d_cnt[e] = 0;
  if (st->d_t) {
    st->d_t[e] = v.t;
    st->d_vnull[e] = v.null;
    st->d_top[e] = -1;
  }
  st->d_hash[e] = h;
  st->d_group[e] = g;
  if (st->arg_type == LM_TYPE_DOUBLE) {
    st->d_d[e] = v.d;
  } else if (lm_type_is_bytes(st->arg_type)) {
    char* copy = lm_pool_copy(&st->strings, v.s.ptr, (size_t)v.s.len);
    if (copy == NULL && v.s.len > 0) return LAMINAR_ERR_NOMEM;
    st->d_s[e] = (lm_str){copy, v.s.len};
  } else {
    st->d_i[e] = v.i;
  }
  st->d_next[e] = st->d_head[g];
  st->d_head[g] = e;
  dset_link(st, e);
  *out = e;
  *out_added = true;
  return LAMINAR_OK;
}

/* Add value v to group g's set (count[g] + 1 if it is new). */
static laminar_code dset_insert(lm_agg_states* st, uint32_t g, dvalue v) {
  int32_t e;
  bool added;
  LM_TRY(dset_find_or_add(st, g, v, &e, &added));
  if (added) st->count[g]++;
  return LAMINAR_OK;
}

/* MIN/MAX and COUNT(DISTINCT) over a changelog: value v of group g held `w`
 * more times (COUNT(DISTINCT): count[g] follows the values held > 0 times). */
static laminar_code dset_weigh(lm_agg_states* st, uint32_t g, dvalue v, int64_t w) {
  int32_t e;
  bool added;
  LM_TRY(dset_find_or_add(st, g, v, &e, &added));
  bool was = st->d_cnt[e] > 0;
  st->d_cnt[e] += w;
  if (st->fn == LM_AGG_COUNT_DISTINCT) st->count[g] += (st->d_cnt[e] > 0) - was;
  return LAMINAR_OK;
}

/* The least (MIN) or greatest (MAX) value group g holds, or -1 if none. */
static int32_t dset_extreme(const lm_agg_states* st, int64_t g) {
  bool is_min = st->fn == LM_AGG_MIN;
  int32_t best = -1;
  for (int32_t e = st->d_head[g]; e >= 0; e = st->d_next[e]) {
    if (st->d_cnt[e] <= 0) continue;
    bool better = best < 0;
    if (!better && st->d_d) {
      better = is_min ? dbl_less(st->d_d[e], st->d_d[best])
                      : dbl_less(st->d_d[best], st->d_d[e]);
    } else if (!better && st->d_s) {
      int c = cmp_str(st->d_s[e], st->d_s[best]);
      better = is_min ? c < 0 : c > 0;
    } else if (!better) {
      better = is_min ? st->d_i[e] < st->d_i[best] : st->d_i[e] > st->d_i[best];
    }
    if (better) best = e;
  }
  return best;
}

static dvalue entry_value(const lm_agg_states* st, int32_t e) {
  dvalue v = {.i = 0};
  if (st->arg_type == LM_TYPE_DOUBLE) {
    v.d = st->d_d[e];
  } else if (lm_type_is_bytes(st->arg_type)) {
    v.s = st->d_s[e];
  } else {
    v.i = st->d_i[e];
  }
  return v;
}

/* ---- FIRST / LAST over a changelog: (event time, value) entries, run stacks ---- */

/* Push `cnt` copies that arrived as `seq` on entry e's stack. */
static laminar_code run_push(lm_agg_states* st, int32_t e, int64_t seq, int64_t cnt) {
  int32_t top = st->d_top[e];
  if (top >= 0 && st->r_seq[top] == seq) {
    st->r_cnt[top] += cnt;
    return LAMINAR_OK;
  }
  int32_t r;
  if (st->r_free != 0) {
    r = st->r_free - 1;
    st->r_free = st->r_next[r] + 1;
  } else {
    LM_TRY(run_reserve_n(st, 1));
    r = (int32_t)st->r_n++;
  }
  st->r_seq[r] = seq;
  st->r_cnt[r] = cnt;
  st->r_next[r] = top;
  st->d_top[e] = r;
  return LAMINAR_OK;
}

/* Pop `cnt` copies off entry e's stack, the newest first (freed runs are reused). */
static void run_pop(lm_agg_states* st, int32_t e, int64_t cnt) {
  while (cnt > 0 && st->d_top[e] >= 0) {
    int32_t top = st->d_top[e];
    int64_t take = cnt < st->r_cnt[top] ? cnt : st->r_cnt[top];
    st->r_cnt[top] -= take;
    cnt -= take;
    if (st->r_cnt[top] == 0) {
      st->d_top[e] = st->r_next[top];
      st->r_next[top] = st->r_free - 1;
      st->r_free = top + 1;
    }
  }
}

/* Entry (v.t, v) of group g weighs `w` more, the copies added arriving as
 * `seq`. The stack holds max(d_cnt, 0) copies: a retraction beyond what is
 * held leaves a debt that later insertions pay first. */
static laminar_code fl_weigh(lm_agg_states* st, uint32_t g, dvalue v, int64_t seq,
                             int64_t w) {
  int32_t e;
  bool added;
  LM_TRY(dset_find_or_add(st, g, v, &e, &added));
  int64_t before = st->d_cnt[e] > 0 ? st->d_cnt[e] : 0;
  int64_t after = st->d_cnt[e] + w > 0 ? st->d_cnt[e] + w : 0;
  if (after > before)
    LM_TRY(run_push(st, e, seq, after - before)); /* NOMEM: nothing changed */
  run_pop(st, e, before - after);
  st->d_cnt[e] += w;
  return LAMINAR_OK;
}

/* The oldest arrival entry e holds (the bottom of its stack). */
static int64_t run_oldest(const lm_agg_states* st, int32_t e) {
  int32_t r = st->d_top[e];
  while (st->r_next[r] >= 0) r = st->r_next[r];
  return st->r_seq[r];
}

/* FIRST: the held entry of group g with the least (time, oldest arrival);
 * LAST: the greatest (time, newest arrival). -1 if none. */
static int32_t fl_pick(const lm_agg_states* st, int64_t g) {
  bool first = st->fn == LM_AGG_FIRST;
  int32_t best = -1;
  int64_t best_t = 0, best_seq = 0;
  for (int32_t e = st->d_head[g]; e >= 0; e = st->d_next[e]) {
    if (st->d_top[e] < 0) continue;
    int64_t t = st->d_t[e];
    int64_t seq = first ? run_oldest(st, e) : st->r_seq[st->d_top[e]];
    bool better = best < 0 || (first ? (t < best_t || (t == best_t && seq < best_seq))
                                     : (t > best_t || (t == best_t && seq > best_seq)));
    if (better) {
      best = e;
      best_t = t;
      best_seq = seq;
    }
  }
  return best;
}

/* Value v of a set entry as result k (result_type) of a finalize. */
static void put_entry_value(const lm_agg_states* st, dvalue v, void* data, int64_t k) {
  switch (st->result_type) {
    case LM_TYPE_DOUBLE: ((double*)data)[k] = v.d; break;
    case LM_TYPE_BINARY:
    case LM_TYPE_STRING: ((lm_str*)data)[k] = v.s; break;
    default: lm_vec_int_put(st->result_type, data, k, v.i); break;
  }
}

/* ---- the quantiles and APPROX_COUNT_DISTINCT (arithmetic in sketch.h) ---- */

/* Row r's value as a quantile state holds it: APPROX_QUANTILE its bucket key. */
static dvalue quantile_value(const lm_agg_states* st, const lm_vec* arg, uint32_t r) {
  dvalue v = value_at(st, arg, r);
  if (st->fn == LM_AGG_APPROX_QUANTILE) v.d = lm_sketch_key(v.d);
  return v;
}

/* Group g holds value v `w` more times (w < 0: retracted). */
static laminar_code quantile_weigh(lm_agg_states* st, uint32_t g, dvalue v, int64_t w) {
  LM_TRY(dset_weigh(st, g, v, w));
  st->count[g] += w;
  return LAMINAR_OK;
}

/* Rows sel[j] (non-NULL) of arg into groups gids[j], each weight[row] times
 * (weight NULL: once). Cannot fail after lm_agg_states_prepare. */
static laminar_code quantile_update(lm_agg_states* st, const lm_vec* arg,
                                    const uint32_t* sel, const uint32_t* gids,
                                    const int64_t* weight, int64_t m) {
  if (arg == NULL) return LAMINAR_ERR_INTERNAL;
  for (int64_t j = 0; j < m; j++) {
    uint32_t r = ROW(j);
    int64_t w = weight ? weight[r] : 1;
    if ((arg->nulls && arg->nulls[r]) || w == 0) continue;
    LM_TRY(quantile_weigh(st, gids[j], quantile_value(st, arg, r), w));
  }
  return LAMINAR_OK;
}

/* Entry a's value before entry b's (DuckDB's order: NaN last). */
static bool entry_less(const lm_agg_states* st, int32_t a, int32_t b) {
  if (st->d_d) return dbl_less(st->d_d[a], st->d_d[b]);
  if (st->d_s) return cmp_str(st->d_s[a], st->d_s[b]) < 0;
  return st->d_i[a] < st->d_i[b];
}

static void sift_down(const lm_agg_states* st, int32_t* a, int64_t root, int64_t n) {
  for (;;) {
    int64_t child = 2 * root + 1;
    if (child >= n) return;
    if (child + 1 < n && entry_less(st, a[child], a[child + 1])) child++;
    if (!entry_less(st, a[root], a[child])) return;
    int32_t t = a[root];
    a[root] = a[child];
    a[child] = t;
    root = child;
  }
}

/* Entries a[0 .. n) by value: insertion sort for a few (a window's group
 * usually holds a handful), heapsort past that (no allocation, no recursion). */
static void sort_entries(const lm_agg_states* st, int32_t* a, int64_t n) {
  if (n <= 24) {
    for (int64_t i = 1; i < n; i++) {
      int32_t e = a[i];
      int64_t j = i;
      for (; j > 0 && entry_less(st, e, a[j - 1]); j--) a[j] = a[j - 1];
      a[j] = e;
    }
    return;
  }
  for (int64_t i = n / 2 - 1; i >= 0; i--) sift_down(st, a, i, n);
  for (int64_t end = n - 1; end > 0; end--) {
    int32_t t = a[0];
    a[0] = a[end];
    a[end] = t;
    sift_down(st, a, 0, end);
  }
}

/* Group g's quantile: the entries at the two positions to interpolate
 * between (the same one for the discrete kinds) and the fraction; false if
 * the group holds no value. Sorts the group's entries in st->q_sort (room
 * for every entry: grown with them). */
static bool quantile_pick(const lm_agg_states* st, int64_t g, int32_t* out_lo,
                          int32_t* out_hi, double* out_frac) {
  int64_t k = 0, n = 0;
  for (int32_t e = st->d_head[g]; e >= 0; e = st->d_next[e]) {
    if (st->d_cnt[e] <= 0) continue;
    st->q_sort[k++] = e;
    n += st->d_cnt[e];
  }
  if (n == 0) return false;
  sort_entries(st, st->q_sort, k);
  int64_t lo, hi;
  *out_frac = 0.0;
  if (st->fn == LM_AGG_MEDIAN || st->fn == LM_AGG_QUANTILE_CONT) {
    lm_quantile_cont_pos(n, st->q, &lo, &hi, out_frac);
  } else {
    lo = hi = lm_quantile_disc_pos(n, st->q);
  }
  *out_lo = *out_hi = -1;
  int64_t held = 0;
  for (int64_t i = 0; i < k; i++) {
    int32_t e = st->q_sort[i];
    held += st->d_cnt[e];
    if (*out_lo < 0 && lo < held) *out_lo = e;
    if (hi < held) {
      *out_hi = e;
      break;
    }
  }
  return *out_lo >= 0 && *out_hi >= 0;
}

/* An entry's value as a DOUBLE (integer kinds converted). */
static double entry_double(const lm_agg_states* st, int32_t e) {
  return st->d_d ? st->d_d[e] : (double)st->d_i[e];
}

/* Group g's quantile result into data[k] (result_type); true for NULL. */
static bool quantile_result(const lm_agg_states* st, int64_t g, void* data, int64_t k) {
  int32_t lo, hi;
  double frac;
  bool is_null = !quantile_pick(st, g, &lo, &hi, &frac);
  if (st->fn != LM_AGG_QUANTILE_DISC) {
    double v = 0.0;
    if (!is_null && st->fn == LM_AGG_APPROX_QUANTILE) {
      v = lm_sketch_value(st->d_d[lo]);
    } else if (!is_null) {
      v = lm_quantile_interpolate(entry_double(st, lo), entry_double(st, hi), frac);
    }
    ((double*)data)[k] = v;
    return is_null;
  }
  put_entry_value(st, is_null ? (dvalue){.i = 0} : entry_value(st, lo), data, k);
  return is_null;
}

/* APPROX_COUNT_DISTINCT: rows sel[j] (non-NULL) of arg into groups gids[j]. */
static void hll_update(lm_agg_states* st, const lm_vec* arg, const uint32_t* sel,
                       const uint32_t* gids, int64_t m) {
  for (int64_t j = 0; j < m; j++) {
    uint32_t r = ROW(j);
    if (arg->nulls && arg->nulls[r]) continue;
    uint64_t h;
    if (st->arg_type == LM_TYPE_DOUBLE) {
      h = lm_hll_hash_double(((const double*)arg->data)[r]);
    } else if (lm_type_is_bytes(st->arg_type)) {
      lm_str s = ((const lm_str*)arg->data)[r];
      h = lm_hll_hash_bytes(s.ptr, s.len);
    } else {
      h = lm_hll_hash_int(int_value(arg, r));
    }
    lm_hll_add(st->hll + (int64_t)gids[j] * LM_HLL_M, h);
  }
}

/* Group g's registers: sparse (count, then index and value of each nonzero
 * one) when under a third are set, else all of them. */
static void hll_snapshot(const lm_agg_states* st, int64_t g, lm_state_writer* w) {
  const uint8_t* reg = st->hll + g * LM_HLL_M;
  uint32_t nz = 0;
  for (int i = 0; i < LM_HLL_M; i++) nz += reg[i] != 0;
  lm_state_put_u32(w, nz);
  if (nz * 3 > LM_HLL_M) {
    lm_state_put_bytes(w, reg, LM_HLL_M);
    return;
  }
  for (uint32_t i = 0; i < LM_HLL_M; i++) {
    if (reg[i] == 0) continue;
    lm_state_put_u32(w, i);
    lm_state_put_u8(w, reg[i]);
  }
}

static void hll_restore(lm_agg_states* st, int64_t g, lm_state_reader* r) {
  uint8_t* reg = st->hll + g * LM_HLL_M;
  memset(reg, 0, LM_HLL_M);
  uint32_t nz = lm_state_get_u32(r);
  if (nz > LM_HLL_M) {
    r->failed = true;
  } else if (nz * 3 > LM_HLL_M) {
    lm_str s = lm_state_get_bytes(r);
    if (s.len != LM_HLL_M) {
      r->failed = true;
    } else {
      memcpy(reg, s.ptr, LM_HLL_M);
    }
  } else {
    for (uint32_t k = 0; k < nz && !r->failed; k++) {
      uint32_t i = lm_state_get_u32(r);
      uint8_t v = lm_state_get_u8(r);
      if (i >= LM_HLL_M || v > 64) {
        r->failed = true;
      } else {
        reg[i] = v;
      }
    }
  }
}

/* ---- FIRST / LAST ------------------------------------------------------------ */

/* Keep row r's value of `arg` (NULL included) as group g's. */
static laminar_code keep_value(lm_agg_states* st, const lm_vec* arg, uint32_t g,
                               uint32_t r) {
  bool is_null = arg->nulls && arg->nulls[r];
  if (st->vnull) st->vnull[g] = is_null;
  st->has[g] = 1;
  if (is_null) return LAMINAR_OK;
  if (st->arg_type == LM_TYPE_DOUBLE) {
    st->mm_d[g] = ((const double*)arg->data)[r];
  } else if (lm_type_is_bytes(st->arg_type)) {
    lm_str s = ((const lm_str*)arg->data)[r];
    char* copy = lm_pool_copy(&st->strings, s.ptr, (size_t)s.len);
    if (copy == NULL && s.len > 0) return LAMINAR_ERR_NOMEM;
    st->mm_s[g] = (lm_str){copy, s.len};
  } else {
    st->mm_i[g] = int_value(arg, r);
  }
  return LAMINAR_OK;
}

/* ---- ARG_MIN / ARG_MAX ------------------------------------------------------ */

/* A `by` value (the field of by_type in use). */
typedef struct byvalue {
  int64_t i;
  double d;
  lm_str s;
} byvalue;

static byvalue by_at(const lm_agg_states* st, const lm_vec* by, uint32_t r) {
  byvalue v = {.i = 0};
  if (st->by_type == LM_TYPE_DOUBLE) {
    v.d = ((const double*)by->data)[r];
  } else if (lm_type_is_bytes(st->by_type)) {
    v.s = ((const lm_str*)by->data)[r];
  } else {
    v.i = int_value(by, r);
  }
  return v;
}

static byvalue by_kept(const lm_agg_states* st, int64_t g) {
  byvalue v = {.i = 0};
  if (st->by_d) v.d = st->by_d[g];
  if (st->by_s) v.s = st->by_s[g];
  if (st->by_i) v.i = st->by_i[g];
  return v;
}

/* Whether `by` value v replaces group g's (strictly better: ties keep the
 * value seen first; DuckDB's order, NaN above every number). */
static bool by_better(const lm_agg_states* st, byvalue v, int64_t g) {
  if (!st->has[g]) return true;
  bool is_min = st->fn == LM_AGG_ARG_MIN;
  byvalue cur = by_kept(st, g);
  if (st->by_d) return is_min ? dbl_less(v.d, cur.d) : dbl_less(cur.d, v.d);
  if (st->by_s) {
    int c = cmp_str(v.s, cur.s);
    return is_min ? c < 0 : c > 0;
  }
  return is_min ? v.i < cur.i : v.i > cur.i;
}

/* Group g's `by` is v now (a string copied into the pool unless `same`). */
static laminar_code by_keep(lm_agg_states* st, bool same, byvalue v, int64_t g) {
  if (st->by_d) st->by_d[g] = v.d;
  if (st->by_i) st->by_i[g] = v.i;
  if (st->by_s) {
    if (same) {
      st->by_s[g] = v.s;
      return LAMINAR_OK;
    }
    char* copy = lm_pool_copy(&st->strings, v.s.ptr, (size_t)v.s.len);
    if (copy == NULL && v.s.len > 0) return LAMINAR_ERR_NOMEM;
    st->by_s[g] = (lm_str){copy, v.s.len};
  }
  return LAMINAR_OK;
}

static laminar_code argmm_update(lm_agg_states* st, const lm_vec* arg, const lm_vec* by,
                                 const uint32_t* sel, const uint32_t* gids, int64_t m) {
  if (arg == NULL || by == NULL) return LAMINAR_ERR_INTERNAL;
  for (int64_t j = 0; j < m; j++) {
    uint32_t r = ROW(j), g = gids[j];
    if ((arg->nulls && arg->nulls[r]) || (by->nulls && by->nulls[r])) continue;
    byvalue v = by_at(st, by, r);
    if (!by_better(st, v, g)) continue;
    LM_TRY(by_keep(st, false, v, g));
    LM_TRY(keep_value(st, arg, g, r));
  }
  return LAMINAR_OK;
}

laminar_code lm_agg_update_ordered(lm_agg_states* st, const lm_vec* arg,
                                   const lm_vec* order, const uint32_t* sel,
                                   const uint32_t* gids, int64_t m) {
  if (is_arg_minmax(st->fn)) return argmm_update(st, arg, order, sel, gids, m);
  if (st->fn == LM_AGG_UDAF)
    return lm_udaf_states_update(st, arg, order, sel, gids, NULL, m);
  if (st->fn == LM_AGG_STRING_AGG) return lm_strcat_update(st, arg, sel, gids, NULL, m);
  if (lm_agg_is_moments(st->fn))
    return moments_update(st, arg, order, sel, gids, NULL, m);
  if (!is_first_last(st->fn)) return lm_agg_update(st, arg, sel, gids, m);
  bool first = st->fn == LM_AGG_FIRST;
  for (int64_t j = 0; j < m; j++) {
    uint32_t r = ROW(j), g = gids[j];
    int64_t t = 0;
    if (order != NULL) {
      if (order->nulls && order->nulls[r])
        continue; /* no event time: no place in the order */
      t = ((const int64_t*)order->data)[r];
    }
    /* Ties go by arrival: FIRST keeps the earlier row, LAST takes the later. */
    bool take = !st->has[g] || (first ? t < st->ord[g] : t >= st->ord[g]);
    if (!take) continue;
    st->ord[g] = t;
    LM_TRY(keep_value(st, arg, g, r));
  }
  return LAMINAR_OK;
}

laminar_code lm_agg_update(lm_agg_states* st, const lm_vec* arg, const uint32_t* sel,
                           const uint32_t* gids, int64_t m) {
  if (st->fn == LM_AGG_UDAF)
    return lm_udaf_states_update(st, arg, NULL, sel, gids, NULL, m);
  if (st->fn == LM_AGG_STRING_AGG) return lm_strcat_update(st, arg, sel, gids, NULL, m);
  const uint8_t* nulls = arg ? arg->nulls : NULL;
  switch (st->fn) {
    case LM_AGG_FIRST:
    case LM_AGG_LAST: return lm_agg_update_ordered(st, arg, NULL, sel, gids, m);
    case LM_AGG_COUNT_DISTINCT:
      for (int64_t j = 0; j < m; j++) {
        uint32_t r = ROW(j);
        if (nulls && nulls[r]) continue;
        LM_TRY(dset_insert(st, gids[j], value_at(st, arg, r)));
      }
      return LAMINAR_OK;
    case LM_AGG_COUNT_STAR:
      for (int64_t j = 0; j < m; j++) st->count[gids[j]]++;
      return LAMINAR_OK;
    case LM_AGG_COUNT:
      if (nulls == NULL) {
        for (int64_t j = 0; j < m; j++) st->count[gids[j]]++;
      } else {
        for (int64_t j = 0; j < m; j++) st->count[gids[j]] += !nulls[ROW(j)];
      }
      return LAMINAR_OK;
    case LM_AGG_SUM:
    case LM_AGG_AVG:
      if (st->arg_type == LM_TYPE_DOUBLE) {
        const double* x = arg->data;
        double* sum = st->sum_d;
        uint8_t* has = st->has;
        if (nulls == NULL && sel != NULL && st->count == NULL) {
          for (int64_t j = 0; j < m; j++) {
            uint32_t g = gids[j];
            sum[g] += x[sel[j]];
            has[g] = 1;
          }
        } else if (nulls == NULL) {
          for (int64_t j = 0; j < m; j++) {
            uint32_t g = gids[j];
            sum[g] += x[ROW(j)];
            has[g] = 1;
            if (st->count) st->count[g]++;
          }
        } else {
          for (int64_t j = 0; j < m; j++) {
            uint32_t r = ROW(j), g = gids[j];
            if (nulls[r]) continue;
            st->sum_d[g] += x[r];
            st->has[g] = 1;
            if (st->count) st->count[g]++;
          }
        }
      } else {
        if (lm_type_is_wide(arg->type)) { /* DECIMAL(p > 18): 128-bit values */
          for (int64_t j = 0; j < m; j++) {
            uint32_t r = ROW(j), g = gids[j];
            if (nulls && nulls[r]) continue;
            st->sum_i[g] = sum_add(st->sum_i[g], lm_vec_dec_at(arg, r), 1);
            st->has[g] = 1;
            if (st->count) st->count[g]++;
          }
        } else if (nulls == NULL && arg->type == LM_TYPE_INT64 && st->count == NULL) {
          const int64_t* x = arg->data;
          for (int64_t j = 0; j < m; j++) {
            uint32_t g = gids[j];
            st->sum_i[g] += x[ROW(j)];
            st->has[g] = 1;
          }
        } else {
          for (int64_t j = 0; j < m; j++) {
            uint32_t r = ROW(j), g = gids[j];
            if (nulls && nulls[r]) continue;
            st->sum_i[g] += int_value(arg, r);
            st->has[g] = 1;
            if (st->count) st->count[g]++;
          }
        }
      }
      return LAMINAR_OK;
    case LM_AGG_MIN:
    case LM_AGG_MAX: {
      bool is_min = st->fn == LM_AGG_MIN;
      if (st->arg_type == LM_TYPE_DOUBLE) {
        const double* x = arg->data;
        double* mm = st->mm_d;
        uint8_t* has = st->has;
        for (int64_t j = 0; j < m; j++) {
          uint32_t r = ROW(j);
          if (nulls && nulls[r]) continue;
          fold_minmax_d(mm, has, gids[j], x[r], is_min);
        }
      } else if (lm_type_is_bytes(st->arg_type)) {
        const lm_str* x = arg->data;
        for (int64_t j = 0; j < m; j++) {
          uint32_t r = ROW(j), g = gids[j];
          if (nulls && nulls[r]) continue;
          int c = st->has[g] ? cmp_str(x[r], st->mm_s[g]) : 0;
          if (!st->has[g] || (is_min ? c < 0 : c > 0)) {
            /* Copy: the input batch is released after this call. Replaced
             * copies stay in the pool until the window closes (bounded by the
             * number of improvements, usually tiny). */
            char* copy = lm_pool_copy(&st->strings, x[r].ptr, (size_t)x[r].len);
            if (copy == NULL) return LAMINAR_ERR_NOMEM;
            st->mm_s[g] = (lm_str){copy, x[r].len};
          }
          st->has[g] = 1;
        }
      } else {
        for (int64_t j = 0; j < m; j++) {
          uint32_t r = ROW(j), g = gids[j];
          if (nulls && nulls[r]) continue;
          int64_t v = int_value(arg, r), cur = st->mm_i[g];
          if (LM_LIKELY(st->has[g])) {
            st->mm_i[g] = is_min ? (v < cur ? v : cur) : (v > cur ? v : cur);
          } else {
            st->mm_i[g] = v;
            st->has[g] = 1;
          }
        }
      }
      return LAMINAR_OK;
    }
    case LM_AGG_VAR_SAMP:
    case LM_AGG_VAR_POP:
    case LM_AGG_STDDEV_SAMP:
    case LM_AGG_STDDEV_POP:
    case LM_AGG_MEAN: return moments_update(st, arg, NULL, sel, gids, NULL, m);
    case LM_AGG_M2:         /* two arguments: lm_agg_update_ordered */
    case LM_AGG_COVAR_SAMP: /* two arguments: lm_agg_update_ordered */
    case LM_AGG_COVAR_POP:
    case LM_AGG_CORR:
    case LM_AGG_REGR_SLOPE:
    case LM_AGG_REGR_INTERCEPT:
    case LM_AGG_REGR_R2:
    case LM_AGG_REGR_COUNT:
    case LM_AGG_ARG_MIN:
    case LM_AGG_ARG_MAX:
    case LM_AGG_UDAF:
    case LM_AGG_STRING_AGG: break; /* (dispatched above) */
    case LM_AGG_MEDIAN:
    case LM_AGG_QUANTILE_CONT:
    case LM_AGG_QUANTILE_DISC:
    case LM_AGG_APPROX_QUANTILE: return quantile_update(st, arg, sel, gids, NULL, m);
    case LM_AGG_APPROX_COUNT_DISTINCT:
      if (arg == NULL) break;
      hll_update(st, arg, sel, gids, m);
      return LAMINAR_OK;
  }
  return LAMINAR_ERR_INTERNAL;
}

laminar_code lm_agg_update_weighted(lm_agg_states* st, const lm_vec* arg,
                                    const uint32_t* sel, const uint32_t* gids,
                                    const int64_t* weight, int64_t m) {
  return lm_agg_update_weighted_ordered(st, arg, NULL, sel, gids, weight, m);
}

laminar_code lm_agg_update_weighted_ordered(lm_agg_states* st, const lm_vec* arg,
                                            const lm_vec* order, const uint32_t* sel,
                                            const uint32_t* gids, const int64_t* weight,
                                            int64_t m) {
  if (!st->weighted) return LAMINAR_ERR_INTERNAL;
  if (st->fn == LM_AGG_UDAF)
    return lm_udaf_states_update(st, arg, order, sel, gids, weight, m);
  if (st->fn == LM_AGG_STRING_AGG) return lm_strcat_update(st, arg, sel, gids, weight, m);
  if (lm_agg_is_moments(st->fn))
    return moments_update(st, arg, order, sel, gids, weight, m);
  if (lm_agg_is_quantile(st->fn)) return quantile_update(st, arg, sel, gids, weight, m);
  const uint8_t* nulls = arg ? arg->nulls : NULL;
  for (int64_t j = 0; j < m; j++) {
    uint32_t r = ROW(j), g = gids[j];
    int64_t w = weight[r];
    if (is_first_last(st->fn)) { /* NULL values are kept; rows without a time are not */
      if (w == 0 || (order != NULL && order->nulls && order->nulls[r])) continue;
      dvalue v = {.null = nulls && nulls[r]};
      if (!v.null && st->arg_type == LM_TYPE_DOUBLE) {
        v.d = ((const double*)arg->data)[r]; /* as it is: -0.0 stays -0.0 */
      } else if (!v.null) {
        v = value_at(st, arg, r);
      }
      v.t = order != NULL ? ((const int64_t*)order->data)[r] : 0;
      LM_TRY(fl_weigh(st, g, v, st->seq++, w));
      continue;
    }
    if (st->fn == LM_AGG_COUNT_STAR) {
      st->count[g] += w;
      continue;
    }
    if (nulls && nulls[r]) continue;
    if (st->fn == LM_AGG_COUNT_DISTINCT) {
      LM_TRY(dset_weigh(st, g, value_at(st, arg, r), w));
      continue;
    }
    st->count[g] += w;
    if (st->fn == LM_AGG_COUNT) continue;
    if (uses_minmax(st->fn)) {
      LM_TRY(dset_weigh(st, g, value_at(st, arg, r), w));
      continue;
    }
    if (st->arg_type == LM_TYPE_DOUBLE) {
      st->sum_d[g] += (double)w * ((const double*)arg->data)[r];
    } else {
      st->sum_i[g] = lm_type_is_wide(arg->type)
                         ? sum_add(st->sum_i[g], lm_vec_dec_at(arg, r), w)
                         : st->sum_i[g] + (lm_i128)w * int_value(arg, r);
    }
  }
  return LAMINAR_OK;
}

/* A string kept by `st`: copied into its pool unless it is there already. */
static laminar_code keep_str(lm_agg_states* st, bool same, lm_str v, lm_str* out) {
  if (same) {
    *out = v;
    return LAMINAR_OK;
  }
  char* copy = lm_pool_copy(&st->strings, v.ptr, (size_t)v.len);
  if (copy == NULL && v.len > 0) return LAMINAR_ERR_NOMEM;
  *out = (lm_str){copy, v.len};
  return LAMINAR_OK;
}

laminar_code lm_agg_merge(lm_agg_states* st, int64_t dst, const lm_agg_states* from,
                          int64_t src) {
  if (st->fn == LM_AGG_UDAF) return lm_udaf_states_merge(st, dst, from, src);
  if (st->fn == LM_AGG_STRING_AGG) return lm_strcat_merge(st, dst, from, src);
  bool same = st == from;
  if (lm_agg_is_moments(st->fn)) {
    moments_merge(st, dst, from, src);
    return LAMINAR_OK;
  }
  if (st->fn == LM_AGG_COUNT_DISTINCT) {
    for (int32_t e = from->d_head[src]; e >= 0; e = from->d_next[e]) {
      LM_TRY(dset_insert(st, (uint32_t)dst, entry_value(from, e)));
    }
    return LAMINAR_OK;
  }
  if (lm_agg_is_quantile(st->fn)) { /* the counted values add up */
    for (int32_t e = from->d_head[src]; e >= 0; e = from->d_next[e]) {
      if (from->d_cnt[e] != 0)
        LM_TRY(quantile_weigh(st, (uint32_t)dst, entry_value(from, e), from->d_cnt[e]));
    }
    return LAMINAR_OK;
  }
  if (st->fn == LM_AGG_APPROX_COUNT_DISTINCT) {
    lm_hll_merge(st->hll + dst * LM_HLL_M, from->hll + src * LM_HLL_M);
    return LAMINAR_OK;
  }
  /* Over a changelog nothing merges (no panes, no sessions: the binder refuses them). */
  if (is_first_last(st->fn) && st->weighted) return LAMINAR_ERR_INTERNAL;
  if (is_arg_minmax(st->fn)) {
    if (!from->has[src] || !by_better(st, by_kept(from, src), dst)) return LAMINAR_OK;
    LM_TRY(by_keep(st, same, by_kept(from, src), dst));
    if (st->mm_i) st->mm_i[dst] = from->mm_i[src];
    if (st->mm_d) st->mm_d[dst] = from->mm_d[src];
    if (st->mm_s) LM_TRY(keep_str(st, same, from->mm_s[src], &st->mm_s[dst]));
    st->has[dst] = 1;
    return LAMINAR_OK;
  }
  if (is_first_last(st->fn)) {
    bool first = st->fn == LM_AGG_FIRST;
    if (from->has[src] && (!st->has[dst] || (first ? from->ord[src] < st->ord[dst]
                                                   : from->ord[src] >= st->ord[dst]))) {
      st->ord[dst] = from->ord[src];
      st->vnull[dst] = from->vnull[src];
      if (st->mm_i) st->mm_i[dst] = from->mm_i[src];
      if (st->mm_d) st->mm_d[dst] = from->mm_d[src];
      if (st->mm_s && !from->vnull[src])
        LM_TRY(keep_str(st, same, from->mm_s[src], &st->mm_s[dst]));
      st->has[dst] = 1;
    }
    return LAMINAR_OK;
  }
  if (st->count) st->count[dst] += from->count[src];
  if (st->sum_i) st->sum_i[dst] = sum_add(st->sum_i[dst], from->sum_i[src], 1);
  if (st->sum_d) st->sum_d[dst] += from->sum_d[src];
  if (uses_minmax(st->fn) && from->has[src]) {
    bool is_min = st->fn == LM_AGG_MIN, take = !st->has[dst];
    if (st->mm_d) {
      if (!take)
        take = is_min ? dbl_less(from->mm_d[src], st->mm_d[dst])
                      : dbl_less(st->mm_d[dst], from->mm_d[src]);
      if (take) st->mm_d[dst] = from->mm_d[src];
    } else if (st->mm_s) {
      int c = take ? 0 : cmp_str(from->mm_s[src], st->mm_s[dst]);
      if (take || (is_min ? c < 0 : c > 0))
        LM_TRY(keep_str(st, same, from->mm_s[src], &st->mm_s[dst]));
    } else {
      if (!take)
        take = is_min ? from->mm_i[src] < st->mm_i[dst] : from->mm_i[src] > st->mm_i[dst];
      if (take) st->mm_i[dst] = from->mm_i[src];
    }
  }
  if (st->has) st->has[dst] |= from->has[src];
  return LAMINAR_OK;
}

laminar_code lm_agg_merge_many(lm_agg_states* st, const uint32_t* dst,
                               const lm_agg_states* from, int64_t n) {
  /* The common kinds as plain loops; the rest one group at a time. */
  switch (st->fn) {
    case LM_AGG_COUNT_STAR:
    case LM_AGG_COUNT:
      for (int64_t g = 0; g < n; g++) st->count[dst[g]] += from->count[g];
      return LAMINAR_OK;
    case LM_AGG_SUM:
    case LM_AGG_AVG:
      if (st->weighted) break;
      if (st->count) {
        for (int64_t g = 0; g < n; g++) st->count[dst[g]] += from->count[g];
      }
      if (st->sum_d) {
        for (int64_t g = 0; g < n; g++) st->sum_d[dst[g]] += from->sum_d[g];
      } else {
        for (int64_t g = 0; g < n; g++)
          st->sum_i[dst[g]] = sum_add(st->sum_i[dst[g]], from->sum_i[g], 1);
      }
      for (int64_t g = 0; g < n; g++) st->has[dst[g]] |= from->has[g];
      return LAMINAR_OK;
    case LM_AGG_MIN:
    case LM_AGG_MAX: {
      if (st->mm_d == NULL && st->mm_i == NULL) break;
      bool is_min = st->fn == LM_AGG_MIN;
      const uint8_t* fh = from->has;
      if (st->mm_d) {
        for (int64_t g = 0; g < n; g++) {
          uint32_t d = dst[g];
          uint8_t had = st->has[d];
          fold_minmax_d(st->mm_d, st->has, d, from->mm_d[g],
                        is_min); /* identity if none */
          st->has[d] = had | fh[g];
        }
        return LAMINAR_OK;
      }
      for (int64_t g = 0; g < n; g++) {
        uint32_t d = dst[g];
        if (!fh[g]) continue;
        int64_t v = from->mm_i[g], cur = st->mm_i[d];
        st->mm_i[d] = !st->has[d] ? v
                      : is_min    ? (v < cur ? v : cur)
                                  : (v > cur ? v : cur);
        st->has[d] = 1;
      }
      return LAMINAR_OK;
    }
    default: break;
  }
  for (int64_t g = 0; g < n; g++) LM_TRY(lm_agg_merge(st, dst[g], from, g));
  return LAMINAR_OK;
}

/* ---- finalize ----------------------------------------------------------- */

/* Results that are a value or NULL by `has` (SUM and MIN/MAX of DOUBLE). */
static bool finalize_flagged_d(const double* v, const uint8_t* has, int64_t n,
                               double* data, uint8_t* nulls) {
  uint8_t none = 0;
  for (int64_t k = 0; k < n; k++) {
    uint8_t h = has[k] != 0;
    data[k] = h ? v[k] : 0.0;
    nulls[k] = !h;
    none |= !h;
  }
  return none != 0;
}

bool lm_agg_finalize(const lm_agg_states* st, int64_t first, int64_t n, void* data,
                     uint8_t* nulls) {
  if (n <= 0) return false; /* (a window without groups: its arrays may not exist yet) */
  if (st->fn == LM_AGG_UDAF) return lm_udaf_states_finalize(st, first, n, data, nulls);
  if (st->fn == LM_AGG_STRING_AGG) return lm_strcat_finalize(st, first, n, data, nulls);
  if (!st->weighted) { /* the common results as plain loops */
    switch (st->fn) {
      case LM_AGG_COUNT_STAR:
      case LM_AGG_COUNT:
      case LM_AGG_COUNT_DISTINCT:
        memcpy(data, st->count + first, sizeof(int64_t) * (size_t)n);
        memset(nulls, 0, (size_t)n);
        return false;
      case LM_AGG_SUM:
        if (st->sum_d)
          return finalize_flagged_d(st->sum_d + first, st->has + first, n, data, nulls);
        if (st->sum_i && lm_type_is_decimal(st->result_type)) break; /* below */
        if (st->sum_i) { /* NULL without a value or when the total does not fit BIGINT */
          uint8_t none = 0;
          for (int64_t k = 0; k < n; k++) {
            lm_i128 v = st->sum_i[first + k];
            uint8_t ok = st->has[first + k] != 0 && v >= INT64_MIN && v <= INT64_MAX;
            ((int64_t*)data)[k] = ok ? (int64_t)v : 0;
            nulls[k] = !ok;
            none |= !ok;
          }
          return none != 0;
        }
        break;
      case LM_AGG_MIN:
      case LM_AGG_MAX:
        if (st->mm_d)
          return finalize_flagged_d(st->mm_d + first, st->has + first, n, data, nulls);
        break;
      default: break;
    }
  }
  bool any_null = false;
  for (int64_t k = 0; k < n; k++) {
    int64_t g = first + k;
    uint8_t is_null = 0;
    switch (st->fn) {
      case LM_AGG_COUNT_STAR:
      case LM_AGG_COUNT:
      case LM_AGG_COUNT_DISTINCT:
      case LM_AGG_REGR_COUNT: ((int64_t*)data)[k] = st->count[g]; break;
      case LM_AGG_APPROX_COUNT_DISTINCT:
        ((int64_t*)data)[k] = lm_hll_estimate(st->hll + g * LM_HLL_M);
        break;
      case LM_AGG_MEDIAN:
      case LM_AGG_QUANTILE_CONT:
      case LM_AGG_QUANTILE_DISC:
      case LM_AGG_APPROX_QUANTILE: is_null = quantile_result(st, g, data, k); break;
      case LM_AGG_VAR_SAMP:
      case LM_AGG_VAR_POP:
      case LM_AGG_STDDEV_SAMP:
      case LM_AGG_STDDEV_POP:
      case LM_AGG_COVAR_SAMP:
      case LM_AGG_COVAR_POP:
      case LM_AGG_CORR:
      case LM_AGG_REGR_SLOPE:
      case LM_AGG_REGR_INTERCEPT:
      case LM_AGG_REGR_R2:
      case LM_AGG_MEAN:
      case LM_AGG_M2: {
        double v = 0.0;
        is_null = moments_result(st, g, &v);
        ((double*)data)[k] = is_null ? 0.0 : v;
        break;
      }
      case LM_AGG_SUM:
        if (!has_value(st, g)) {
          is_null = 1;
          if (st->result_type == LM_TYPE_DOUBLE) {
            ((double*)data)[k] = 0;
          } else {
            lm_vec_dec_put(st->result_type, data, k, 0); /* BIGINT: as DECIMAL(18) */
          }
        } else if (st->arg_type == LM_TYPE_DOUBLE) {
          ((double*)data)[k] = st->sum_d[g];
        } else if (lm_type_is_decimal(st->result_type)) {
          /* DECIMAL(38, s): NULL past 38 digits (DuckDB raises) */
          lm_i128 s = st->sum_i[g], lim = (lm_i128)10000000000000000000u;
          lim = lim * lim; /* 10^38 */
          is_null = !(s < lim && s > -lim);
          lm_vec_dec_put(st->result_type, data, k, is_null ? 0 : s);
        } else {
          lm_i128 s = st->sum_i[g];
          bool fits = s >= INT64_MIN && s <= INT64_MAX;
          ((int64_t*)data)[k] = fits ? (int64_t)s : 0;
          is_null = !fits;
        }
        break;
      case LM_AGG_AVG:
        if (!has_value(st, g)) {
          is_null = 1;
          ((double*)data)[k] = 0;
        } else if (st->arg_type == LM_TYPE_DOUBLE) {
          ((double*)data)[k] = st->sum_d[g] / (double)st->count[g];
        } else if (st->sum_i[g] == SUM_POISON) {
          is_null = 1; /* past 128 bits (sum_add) */
          ((double*)data)[k] = 0;
        } else {
          /* a DECIMAL's sum is unscaled: divide by 10^s, as DuckDB's DOUBLE */
          double scale = 1.0;
          for (int32_t i = 0; i < lm_type_scale(st->arg_type); i++) scale *= 10.0;
          ((double*)data)[k] = (double)st->sum_i[g] / ((double)st->count[g] * scale);
        }
        break;
      case LM_AGG_MIN:
      case LM_AGG_MAX:
      case LM_AGG_FIRST:
      case LM_AGG_LAST:
      case LM_AGG_ARG_MIN:
      case LM_AGG_ARG_MAX:
        if (st->weighted) { /* MIN/MAX/FIRST/LAST over a changelog: from the multiset */
          int32_t e = is_first_last(st->fn) ? fl_pick(st, g) : dset_extreme(st, g);
          is_null = e < 0 || (st->d_vnull != NULL && st->d_vnull[e]);
          dvalue v = is_null ? (dvalue){.i = 0} : entry_value(st, e);
          put_entry_value(st, v, data, k);
          break;
        }
        is_null = !st->has[g] || (st->vnull && st->vnull[g]);
        switch (st->result_type) {
          case LM_TYPE_DOUBLE: ((double*)data)[k] = is_null ? 0 : st->mm_d[g]; break;
          case LM_TYPE_BINARY:
          case LM_TYPE_STRING:
            ((lm_str*)data)[k] = is_null ? (lm_str){NULL, 0} : st->mm_s[g];
            break;
          default:
            lm_vec_int_put(st->result_type, data, k, is_null ? 0 : st->mm_i[g]);
            break;
        }
        break;
      case LM_AGG_UDAF:
      case LM_AGG_STRING_AGG: break; /* (dispatched above) */
    }
    nulls[k] = is_null;
    any_null |= is_null;
  }
  return any_null;
}

/* ---- copy (checkpoints: copy-on-write of a frozen window) ---------------- */

/* dst->field = a copy of src->field's first n elements, in an array of cap. */
#define COPY_ARRAY(field, n, cap)                                                     \
  do {                                                                                \
    if (src->field != NULL) {                                                         \
      void* grown_ = lm_realloc(dst->field, sizeof(*dst->field) * (size_t)(cap));     \
      if (grown_ == NULL) return LAMINAR_ERR_NOMEM;                                   \
      dst->field = grown_;                                                            \
      if ((n) > 0) memcpy(dst->field, src->field, sizeof(*dst->field) * (size_t)(n)); \
    }                                                                                 \
  } while (0)

/* A string of src's pool again in dst's (NULL stays NULL). */
static laminar_code copy_str(lm_agg_states* dst, lm_str* s) {
  if (s->ptr == NULL) return LAMINAR_OK;
  char* copy = lm_pool_copy(&dst->strings, s->ptr, (size_t)s->len);
  if (copy == NULL) return LAMINAR_ERR_NOMEM;
  s->ptr = copy;
  return LAMINAR_OK;
}

laminar_code lm_agg_states_copy(lm_agg_states* dst, const lm_agg_states* src, int64_t n) {
  if (src->fn == LM_AGG_UDAF) return lm_udaf_states_copy(dst, src, n);
  if (src->fn == LM_AGG_STRING_AGG) return lm_strcat_copy(dst, src, n);
  lm_agg_states_clear(dst);
  LM_TRY(lm_agg_states_reserve(dst, n));
  int64_t cap = dst->cap;
  COPY_ARRAY(count, n, cap);
  COPY_ARRAY(sum_i, n, cap);
  COPY_ARRAY(sum_d, n, cap);
  COPY_ARRAY(mm_i, n, cap);
  COPY_ARRAY(mm_d, n, cap);
  COPY_ARRAY(mm_s, n, cap);
  COPY_ARRAY(has, n, cap);
  COPY_ARRAY(ord, n, cap);
  COPY_ARRAY(vnull, n, cap);
  COPY_ARRAY(d_head, n, cap);
  COPY_ARRAY(m_a, n, cap);
  COPY_ARRAY(m_b, n, cap);
  COPY_ARRAY(q_a, n, cap);
  COPY_ARRAY(q_b, n, cap);
  COPY_ARRAY(c_ab, n, cap);
  COPY_ARRAY(by_i, n, cap);
  COPY_ARRAY(by_d, n, cap);
  COPY_ARRAY(by_s, n, cap);
  if (src->hll != NULL && n > 0) memcpy(dst->hll, src->hll, (size_t)n * LM_HLL_M);
  for (int64_t g = 0; dst->mm_s != NULL && g < n; g++)
    LM_TRY(copy_str(dst, &dst->mm_s[g]));
  for (int64_t g = 0; dst->by_s != NULL && g < n; g++)
    LM_TRY(copy_str(dst, &dst->by_s[g]));
  /* The value sets and run stacks: indices, copied as they are. */
  if (src->d_cap > 0) {
    COPY_ARRAY(d_hash, src->d_n, src->d_cap);
    COPY_ARRAY(d_group, src->d_n, src->d_cap);
    COPY_ARRAY(d_i, src->d_n, src->d_cap);
    COPY_ARRAY(d_d, src->d_n, src->d_cap);
    COPY_ARRAY(d_s, src->d_n, src->d_cap);
    COPY_ARRAY(d_next, src->d_n, src->d_cap);
    COPY_ARRAY(d_cnt, src->d_n, src->d_cap);
    COPY_ARRAY(d_t, src->d_n, src->d_cap);
    COPY_ARRAY(d_vnull, src->d_n, src->d_cap);
    COPY_ARRAY(d_top, src->d_n, src->d_cap);
    COPY_ARRAY(q_sort, 0, src->d_cap); /* room only */
    dst->d_cap = src->d_cap;
    dst->d_n = src->d_n;
    for (int64_t e = 0; dst->d_s != NULL && e < src->d_n; e++)
      LM_TRY(copy_str(dst, &dst->d_s[e]));
  }
  if (src->d_table != NULL) {
    size_t size = (size_t)src->d_mask + 1;
    COPY_ARRAY(d_table, size, size);
    dst->d_mask = src->d_mask;
  }
  if (src->r_cap > 0) {
    COPY_ARRAY(r_seq, src->r_n, src->r_cap);
    COPY_ARRAY(r_cnt, src->r_n, src->r_cap);
    COPY_ARRAY(r_next, src->r_n, src->r_cap);
    dst->r_cap = src->r_cap;
  }
  dst->r_n = src->r_n;
  dst->r_free = src->r_free;
  dst->seq = src->seq;
  return LAMINAR_OK;
}

#undef COPY_ARRAY

bool lm_agg_states_flat(const lm_agg_states* st) {
  if (st->fn == LM_AGG_UDAF) return !lm_udaf_owns_memory(st->udaf);
  return !st->weighted && st->fn != LM_AGG_COUNT_DISTINCT &&
         st->fn != LM_AGG_STRING_AGG && !lm_agg_is_quantile(st->fn) &&
         st->fn != LM_AGG_APPROX_COUNT_DISTINCT &&
         !(keeps_value(st->fn) && lm_type_is_bytes(st->arg_type)) &&
         !lm_type_is_bytes(st->by_type);
}

/* dst->field[dfirst .. dfirst + n) = src->field[sfirst ..), for the arrays
 * the state has. */
#define COPY_RANGE(field)                                                                \
  do {                                                                                   \
    if (src->field != NULL)                                                              \
      memcpy(dst->field + dfirst, src->field + sfirst, sizeof(*dst->field) * (size_t)n); \
  } while (0)

/* Groups [sfirst, sfirst + n) of src (flat, built in) into dst's groups from
 * dfirst. */
static inline void copy_slots(lm_agg_states* dst, int64_t dfirst,
                              const lm_agg_states* src, int64_t sfirst, int64_t n) {
  COPY_RANGE(count);
  COPY_RANGE(sum_i);
  COPY_RANGE(sum_d);
  COPY_RANGE(mm_i);
  COPY_RANGE(mm_d);
  COPY_RANGE(has);
  COPY_RANGE(ord);
  COPY_RANGE(vnull);
  COPY_RANGE(m_a);
  COPY_RANGE(m_b);
  COPY_RANGE(q_a);
  COPY_RANGE(q_b);
  COPY_RANGE(c_ab);
  COPY_RANGE(by_i);
  COPY_RANGE(by_d);
}

void lm_agg_states_copy_range(lm_agg_states* dst, const lm_agg_states* src, int64_t first,
                              int64_t n) {
  if (n <= 0) return;
  if (src->fn == LM_AGG_UDAF) {
    lm_udaf_states_copy_range(dst, src, first, n);
    return;
  }
  copy_slots(dst, first, src, first, n);
}

void lm_agg_copy_group(lm_agg_states* to, int64_t tg, const lm_agg_states* from,
                       int64_t fg) {
  copy_slots(to, tg, from, fg, 1);
}

/* to->field[first + i] = from->field[g[i]], for the arrays the state has. */
#define GATHER_SLOTS(field)                                                     \
  do {                                                                          \
    if (from->field != NULL)                                                    \
      for (int64_t i = 0; i < n; i++) to->field[first + i] = from->field[g[i]]; \
  } while (0)

void lm_agg_gather_groups(lm_agg_states* to, int64_t first, const lm_agg_states* from,
                          const uint32_t* g, int64_t n) {
  GATHER_SLOTS(count);
  GATHER_SLOTS(sum_i);
  GATHER_SLOTS(sum_d);
  GATHER_SLOTS(mm_i);
  GATHER_SLOTS(mm_d);
  GATHER_SLOTS(has);
  GATHER_SLOTS(ord);
  GATHER_SLOTS(vnull);
  GATHER_SLOTS(m_a);
  GATHER_SLOTS(m_b);
  GATHER_SLOTS(q_a);
  GATHER_SLOTS(q_b);
  GATHER_SLOTS(c_ab);
  GATHER_SLOTS(by_i);
  GATHER_SLOTS(by_d);
}

#undef GATHER_SLOTS

#undef COPY_RANGE

/* ---- snapshot ----------------------------------------------------------- */

/* One value of the set (snapshot) and back. */
static void write_value(const lm_agg_states* st, int32_t e, lm_state_writer* w) {
  if (st->d_s) {
    lm_state_put_bytes(w, st->d_s[e].ptr, (size_t)st->d_s[e].len);
  } else if (st->d_d) {
    lm_state_put_f64(w, st->d_d[e]);
  } else {
    lm_state_put_i64(w, st->d_i[e]);
  }
}

static dvalue read_value(const lm_agg_states* st, lm_state_reader* r) {
  dvalue v = {.i = 0};
  if (lm_type_is_bytes(st->arg_type)) {
    v.s = lm_state_get_bytes(r);
  } else if (st->arg_type == LM_TYPE_DOUBLE) {
    v.d = lm_state_get_f64(r);
  } else {
    v.i = lm_state_get_i64(r);
  }
  return v;
}

void lm_agg_snapshot_group(const lm_agg_states* st, int64_t g, lm_state_writer* w) {
  if (st->fn == LM_AGG_UDAF) {
    lm_udaf_snapshot_group(st, g, w);
    return;
  }
  if (st->fn == LM_AGG_STRING_AGG) {
    lm_strcat_snapshot_group(st, g, w);
    return;
  }
  if (st->count) lm_state_put_i64(w, st->count[g]);
  if (st->sum_i) {
    lm_state_put_i64(w, (int64_t)(uint64_t)st->sum_i[g]);
    lm_state_put_i64(w, (int64_t)(uint64_t)(st->sum_i[g] >> 64));
  }
  if (st->sum_d) lm_state_put_f64(w, st->sum_d[g]);
  if (st->mm_i) lm_state_put_i64(w, st->mm_i[g]);
  if (st->mm_d) lm_state_put_f64(w, st->mm_d[g]);
  if (st->mm_s) lm_state_put_bytes(w, st->mm_s[g].ptr, (size_t)st->mm_s[g].len);
  if (st->has) lm_state_put_u8(w, st->has[g]);
  if (st->ord) lm_state_put_i64(w, st->ord[g]);
  if (st->vnull) lm_state_put_u8(w, st->vnull[g]);
  if (st->m_a) {
    lm_state_put_f64(w, st->m_a[g]);
    lm_state_put_f64(w, st->q_a[g]);
  }
  if (st->m_b) {
    lm_state_put_f64(w, st->m_b[g]);
    lm_state_put_f64(w, st->q_b[g]);
    lm_state_put_f64(w, st->c_ab[g]);
  }
  if (st->by_i) lm_state_put_i64(w, st->by_i[g]);
  if (st->by_d) lm_state_put_f64(w, st->by_d[g]);
  if (st->by_s) lm_state_put_bytes(w, st->by_s[g].ptr, (size_t)st->by_s[g].len);
  if (st->hll) hll_snapshot(st, g, w);
  if ((st->weighted && (uses_minmax(st->fn) || st->fn == LM_AGG_COUNT_DISTINCT)) ||
      lm_agg_is_quantile(st->fn)) {
    /* MIN/MAX and COUNT(DISTINCT) over a changelog, the quantiles: the
     * values held, with their multiplicities */
    uint32_t n = 0;
    for (int32_t e = st->d_head[g]; e >= 0; e = st->d_next[e]) n += st->d_cnt[e] != 0;
    lm_state_put_u32(w, n);
    for (int32_t e = st->d_head[g]; e >= 0; e = st->d_next[e]) {
      if (st->d_cnt[e] == 0) continue;
      lm_state_put_i64(w, st->d_cnt[e]);
      write_value(st, e, w);
    }
  }
  if (st->weighted && is_first_last(st->fn)) {
    /* FIRST/LAST over a changelog: the entries with their runs, newest first */
    uint32_t n = 0;
    for (int32_t e = st->d_head[g]; e >= 0; e = st->d_next[e]) n += st->d_cnt[e] != 0;
    lm_state_put_u32(w, n);
    for (int32_t e = st->d_head[g]; e >= 0; e = st->d_next[e]) {
      if (st->d_cnt[e] == 0) continue;
      lm_state_put_i64(w, st->d_t[e]);
      lm_state_put_u8(w, st->d_vnull[e]);
      if (!st->d_vnull[e]) write_value(st, e, w);
      lm_state_put_i64(w, st->d_cnt[e]);
      uint32_t nruns = 0;
      for (int32_t r = st->d_top[e]; r >= 0; r = st->r_next[r]) nruns++;
      lm_state_put_u32(w, nruns);
      for (int32_t r = st->d_top[e]; r >= 0; r = st->r_next[r]) {
        lm_state_put_i64(w, st->r_seq[r]);
        lm_state_put_i64(w, st->r_cnt[r]);
      }
    }
  }
  if (st->fn == LM_AGG_COUNT_DISTINCT && !st->weighted) { /* the values, newest first */
    for (int32_t e = st->d_head[g]; e >= 0; e = st->d_next[e]) {
      write_value(st, e, w);
    }
  }
}

/* FIRST/LAST over a changelog: group g's entries and their runs (written
 * newest first, rebuilt in that order); later arrivals number after them. */
static laminar_code fl_restore_group(lm_agg_states* st, uint32_t g, lm_state_reader* r) {
  uint32_t n = lm_state_get_u32(r);
  if (n > r->len) r->failed = true;
  for (uint32_t k = 0; k < n && !r->failed; k++) {
    dvalue v = {.t = lm_state_get_i64(r)};
    v.null = lm_state_get_u8(r) ? 1 : 0;
    if (!v.null) {
      dvalue val = read_value(st, r);
      val.t = v.t;
      v = val;
    }
    int64_t cnt = lm_state_get_i64(r);
    uint32_t nruns = lm_state_get_u32(r);
    if (r->failed || nruns > r->len) {
      r->failed = true;
      break;
    }
    int32_t e;
    bool added;
    LM_TRY(dset_find_or_add(st, g, v, &e, &added));
    st->d_cnt[e] = cnt;
    int32_t below = -1; /* the run last restored: the new one goes under it */
    for (uint32_t q = 0; q < nruns && !r->failed; q++) {
      int64_t seq = lm_state_get_i64(r);
      int64_t c = lm_state_get_i64(r);
      if (r->failed || c <= 0) {
        r->failed = true;
        break;
      }
      int32_t saved = st->d_top[e];
      st->d_top[e] = -1;
      LM_TRY(run_push(st, e, seq, c));
      int32_t run = st->d_top[e];
      st->d_top[e] = saved;
      if (below < 0) {
        st->d_top[e] = run;
      } else {
        st->r_next[below] = run;
      }
      below = run;
      if (seq >= st->seq) st->seq = seq + 1;
    }
  }
  return LAMINAR_OK;
}

laminar_code lm_agg_restore_group(lm_agg_states* st, int64_t g, lm_state_reader* r) {
  if (st->fn == LM_AGG_UDAF) return lm_udaf_restore_group(st, g, r);
  if (st->fn == LM_AGG_STRING_AGG) return lm_strcat_restore_group(st, g, r);
  if (st->count) st->count[g] = lm_state_get_i64(r);
  if (st->sum_i) {
    uint64_t lo = (uint64_t)lm_state_get_i64(r);
    uint64_t hi = (uint64_t)lm_state_get_i64(r);
    st->sum_i[g] = (lm_i128)(((lm_u128)hi << 64) | lo);
  }
  if (st->sum_d) st->sum_d[g] = lm_state_get_f64(r);
  if (st->mm_i) st->mm_i[g] = lm_state_get_i64(r);
  if (st->mm_d)
    st->mm_d[g] = lm_state_get_f64(r); /* (the identity fixed below if no value) */
  if (st->mm_s) {
    lm_str s = lm_state_get_bytes(r);
    char* copy = lm_pool_copy(&st->strings, s.ptr, (size_t)s.len);
    if (copy == NULL) return LAMINAR_ERR_NOMEM;
    st->mm_s[g] = (lm_str){copy, s.len};
  }
  if (st->has) st->has[g] = lm_state_get_u8(r) ? 1 : 0;
  if (st->mm_d && uses_minmax(st->fn) && !st->has[g])
    st->mm_d[g] = minmax_identity(st->fn);
  if (st->ord) st->ord[g] = lm_state_get_i64(r);
  if (st->vnull) st->vnull[g] = lm_state_get_u8(r) ? 1 : 0;
  if (st->m_a) {
    st->m_a[g] = lm_state_get_f64(r);
    st->q_a[g] = lm_state_get_f64(r);
  }
  if (st->m_b) {
    st->m_b[g] = lm_state_get_f64(r);
    st->q_b[g] = lm_state_get_f64(r);
    st->c_ab[g] = lm_state_get_f64(r);
  }
  if (st->by_i) st->by_i[g] = lm_state_get_i64(r);
  if (st->by_d) st->by_d[g] = lm_state_get_f64(r);
  if (st->by_s) {
    lm_str s = lm_state_get_bytes(r);
    char* copy = lm_pool_copy(&st->strings, s.ptr, (size_t)s.len);
    if (copy == NULL && s.len > 0) return LAMINAR_ERR_NOMEM;
    st->by_s[g] = (lm_str){copy, s.len};
  }
  if (st->hll) hll_restore(st, g, r);
  if ((st->weighted && (uses_minmax(st->fn) || st->fn == LM_AGG_COUNT_DISTINCT)) ||
      lm_agg_is_quantile(st->fn)) {
    if (st->fn == LM_AGG_COUNT_DISTINCT) st->count[g] = 0; /* recounted from the values */
    uint32_t n = lm_state_get_u32(r);
    if (n > r->len) r->failed = true;
    for (uint32_t k = 0; k < n && !r->failed; k++) {
      int64_t cnt = lm_state_get_i64(r);
      dvalue v = read_value(st, r);
      if (!r->failed) LM_TRY(dset_weigh(st, (uint32_t)g, v, cnt));
    }
  }
  if (st->weighted && is_first_last(st->fn)) LM_TRY(fl_restore_group(st, (uint32_t)g, r));
  if (st->fn == LM_AGG_COUNT_DISTINCT && !st->weighted) {
    int64_t n = st->count[g];
    st->count[g] = 0;
    if (n < 0 || (uint64_t)n > r->len) r->failed = true;
    for (int64_t k = 0; k < n && !r->failed; k++) {
      dvalue v = read_value(st, r);
      if (!r->failed) LM_TRY(dset_insert(st, (uint32_t)g, v));
    }
  }
  return LAMINAR_OK;
}

/* ---- user-defined aggregates (the state: agg/udaf.c) ------------------------ */

void lm_agg_states_set_report(lm_agg_states* st, lm_agg_report* report) {
  st->report = report;
}

laminar_code lm_agg_report_take(lm_agg_report* report) {
  laminar_code rc = report->rc;
  report->rc = LAMINAR_OK;
  return rc;
}
