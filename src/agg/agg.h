/*
 * agg.h -- aggregate functions as columnar state: one array per field, indexed
 * by group id, so an update over a batch is a tight loop `state[gid[j]] op=
 * value[sel[j]]` (DESIGN §2: batch-at-a-time, no per-row allocation).
 *
 * Each aggregate supports init (new group), update (a batch), finalize (to an
 * output column), and snapshot/restore of one group. Over a changelog input
 * (rows with a weight: +1 insert, -1 retract, any integer) COUNT, SUM, AVG,
 * MIN, MAX, COUNT(DISTINCT), FIRST, LAST, the moments and the quantiles
 * (APPROX_QUANTILE's sketch included; not APPROX_COUNT_DISTINCT, ARG_MIN,
 * ARG_MAX) are retractable:
 * lm_agg_states_set_weighted() before the first reserve, then
 * lm_agg_update_weighted(); SUM and AVG count their non-NULL values (weighted)
 * so that a group whose values are all retracted is NULL again. Merge folds one
 * group's state into another's (lm_agg_merge, lm_agg_merge_many): hop windows'
 * panes, sessions that a row bridges.
 *
 * Semantics follow DuckDB: COUNT(*) counts rows; COUNT(x), SUM, AVG, MIN, MAX
 * ignore NULLs; SUM/AVG/MIN/MAX of no non-NULL value is NULL. SUM of BIGINT is
 * exact (128-bit accumulator) and NULL if the total does not fit BIGINT; AVG
 * is computed from the exact sum.
 */
#ifndef LM_AGG_H
#define LM_AGG_H

#include "expr/expr.h"
#include "laminar.h"
#include "state/state.h"
#include "util/pool.h"
#include "util/types.h"

typedef enum lm_agg_fn {
  LM_AGG_COUNT_STAR = 1,
  LM_AGG_COUNT = 2,
  LM_AGG_SUM = 3,
  LM_AGG_AVG = 4,
  LM_AGG_MIN = 5,
  LM_AGG_MAX = 6,
  LM_AGG_FIRST = 7,          /* FIRST_VALUE / FIRST: the value of the earliest row */
  LM_AGG_LAST = 8,           /* LAST_VALUE / LAST: the value of the latest row */
  LM_AGG_COUNT_DISTINCT = 9, /* COUNT(DISTINCT x) */
  /* The moment aggregates: over DOUBLE arguments (the binder casts), rows
   * with a NULL argument skipped; a count, means and centered second moments
   * updated by Welford's rule (a retraction is the inverse update) and
   * merged by Chan's. Two-argument ones take (y, x) as DuckDB: y in `arg`,
   * x in `order`. */
  LM_AGG_VAR_SAMP = 10,
  LM_AGG_VAR_POP = 11,
  LM_AGG_STDDEV_SAMP = 12,
  LM_AGG_STDDEV_POP = 13,
  LM_AGG_COVAR_SAMP = 14,
  LM_AGG_COVAR_POP = 15,
  LM_AGG_CORR = 16,
  LM_AGG_REGR_SLOPE = 17,
  LM_AGG_REGR_INTERCEPT = 18,
  LM_AGG_REGR_R2 = 19,
  LM_AGG_REGR_COUNT = 20,
  /* The two-phase split's (src/db/twophase.c): __mean(x), the Welford mean;
   * __m2(mean, n), the centered sum of squares of values `mean` each
   * counted n (BIGINT, in `order`) times -- Chan's merge of partial
   * (n, mean) pairs, to which the partial sums of squares add. */
  LM_AGG_MEAN = 21,
  LM_AGG_M2 = 22,
  /* ARG_MIN(x, by) / ARG_MAX(x, by): x of the row with the least / greatest
   * `by` (in `order`; ties: the first seen); rows with a NULL x or by are
   * skipped (DuckDB). Not retractable. */
  LM_AGG_ARG_MIN = 23,
  LM_AGG_ARG_MAX = 24,
  /* The order statistics: a counted multiset of each group's non-NULL
   * values (the value-set entries with a multiplicity), so they merge and
   * take retractions; the fraction q (spec `param`) is a constant.
   * MEDIAN = QUANTILE_CONT at 0.5; QUANTILE_DISC returns a value held;
   * APPROX_QUANTILE holds sketch buckets (sketch.h) instead of values. */
  LM_AGG_MEDIAN = 40,
  LM_AGG_QUANTILE_CONT = 41,
  LM_AGG_QUANTILE_DISC = 42,
  LM_AGG_APPROX_QUANTILE = 43,
  /* HyperLogLog registers per group (sketch.h); not retractable. */
  LM_AGG_APPROX_COUNT_DISTINCT = 44,
  /* STRING_AGG(x [, sep]): the non-NULL values in arrival order joined by
   * the spec's `sep` (agg/strcat.c); retractable. */
  LM_AGG_STRING_AGG = 45,
  /* A user-defined aggregate (laminar_aggregate_register; agg/udaf.c): the
   * spec's `udaf`, its arguments in `arg` and (a second one) `order`. */
  LM_AGG_UDAF = 100
} lm_agg_fn;

/* How a user-defined aggregate's call runs (laminar_stream_two_phase splits a
 * stream into a partial and a final query, db/twophase.c):
 * LM_UDAF_WHOLE: update rows, finalize the result (the plain call).
 * LM_UDAF_PARTIAL: update rows, emit each group's state, serialized
 *   (__udaf_partial('f', args) in SQL; a column of LM_UDAF_STATE_TYPE).
 * LM_UDAF_MERGE: each row is such a state, merged into the group's (the
 *   function's merge); finalize the result (__udaf_merge('f', state)).
 * Neither split mode takes retractions. */
typedef enum lm_udaf_mode {
  LM_UDAF_WHOLE = 0,
  LM_UDAF_PARTIAL = 1,
  LM_UDAF_MERGE = 2
} lm_udaf_mode;

/* The SQL type of a partial state column and its encoding (agg/udaf.c: the
 * serialized state as base64 text, the engine having no binary type yet).
 * The one place to switch to VARBINARY: this type and udaf.c's state_text /
 * state_bytes. */
#define LM_UDAF_STATE_TYPE LM_TYPE_STRING

/* An aggregate's SQL name: the function, how many arguments it takes, and
 * for the moment aggregates the fixed result type. */
typedef struct lm_agg_def {
  const char* name;
  lm_agg_fn fn;
  int32_t nargs; /* 1 or 2 (COUNT also takes '*') */
} lm_agg_def;

/* The aggregate named `name` (case-insensitive), NULL if none. Aliases:
 * stddev = stddev_samp, variance = var_samp, first_value = first,
 * last_value = last; bool_and / bool_or are MIN / MAX of a BOOLEAN. */
const lm_agg_def* lm_agg_find(const char* name);
/* The SQL name of `fn` (its first name: "var_samp", "min"). */
const char* lm_agg_fn_name(lm_agg_fn fn);
/* True for the moment aggregates (LM_AGG_VAR_SAMP .. LM_AGG_M2). */
bool lm_agg_is_moments(lm_agg_fn fn);
/* True for MEDIAN, QUANTILE_CONT, QUANTILE_DISC and APPROX_QUANTILE. */
bool lm_agg_is_quantile(lm_agg_fn fn);

typedef struct lm_agg_spec {
  lm_agg_fn fn;
  const lm_expr* arg; /* NULL for COUNT(*) */
  /* FIRST / LAST: the event time ordering the rows (ties: arrival order);
   * NULL: arrival order only. Two-argument aggregates (covar, corr, regr_*):
   * their second argument. */
  const lm_expr* order;
  lm_type
      result_type; /* COUNT: INT64; SUM: INT64 or DOUBLE; AVG: DOUBLE; MIN/MAX: arg's */
  lm_udf* udaf;    /* LM_AGG_UDAF: the function (a reference held by the plan) */
  lm_udaf_mode udaf_mode; /* LM_AGG_UDAF: whole, partial or merge */
  double param;           /* the quantiles: the fraction q in [0, 1] */
  lm_str sep;             /* STRING_AGG: the separator (bytes the caller keeps alive) */
} lm_agg_spec;

/* Where a user-defined aggregate's states report (lm_agg_states_set_report):
 * the scratch memory of its calls, and the first failure of a call that
 * cannot return one (finalize) until the owner takes it. One per operator,
 * used by its partition's thread only. */
typedef struct lm_agg_report {
  lm_eval_ctx* ctx;
  laminar_code rc; /* the first failure not yet taken; LAMINAR_OK: none */
  char text[512];  /* its text, or a failed update's / merge's */
} lm_agg_report;


/* The state of one aggregate for `cap` groups. Which arrays exist depends on
 * the function and argument type. */
typedef struct lm_agg_states {
  lm_agg_fn fn;
  lm_type arg_type; /* LM_TYPE_NULL for COUNT(*) */
  lm_type by_type;  /* ARG_MIN / ARG_MAX: the type of `by` */
  lm_type result_type;
  int64_t cap;
  int64_t* count; /* COUNT, COUNT(*), AVG, moments (rows with no NULL argument) */
  /* Moment aggregates: the means of the first (a) and second (b) argument,
   * their centered sums of squares (q_a, q_b) and co-moment (c_ab). */
  double* m_a;
  double* m_b;
  double* q_a;
  double* q_b;
  double* c_ab;
  /* ARG_MIN / ARG_MAX: the `by` of the value kept (x: in mm_*), by by_type. */
  int64_t* by_i;
  double* by_d;
  lm_str* by_s;
  lm_i128* sum_i; /* SUM/AVG of INT64 */
  double* sum_d;  /* SUM/AVG of DOUBLE */
  int64_t* mm_i;  /* MIN/MAX of INT32/INT64/TIMESTAMP/BOOL */
  double* mm_d;   /* MIN/MAX of DOUBLE */
  lm_str* mm_s;   /* MIN/MAX of STRING (bytes in `strings`) */
  uint8_t* has;   /* SUM/MIN/MAX/FIRST/LAST: a value (FIRST/LAST: a row) was seen */
  int64_t* ord;   /* FIRST/LAST: the event time of the value kept */
  uint8_t* vnull; /* FIRST/LAST: the value kept is NULL (DuckDB's first keeps NULLs) */
  /* COUNT(DISTINCT): a hash set of (group, value) entries; each group's
   * entries are chained from d_head[g] (for snapshots and merges); `count`
   * holds each group's number of entries. */
  uint64_t* d_hash;
  uint32_t* d_group;
  int64_t* d_i; /* the value: integer types */
  double* d_d;  /* DOUBLE (canonical: -0.0 is 0.0, one NaN) */
  lm_str* d_s;  /* STRING (bytes in `strings`) */
  int32_t* d_next;
  int64_t* d_cnt; /* MIN/MAX over a changelog, quantiles: the value's multiplicity */
  /* The quantiles: q, and room to sort one group's entries (d_cap of them). */
  double q;
  int32_t* q_sort;
  /* APPROX_COUNT_DISTINCT: LM_HLL_M registers per group, group g's at
   * hll[g * LM_HLL_M]. */
  uint8_t* hll;
  /* FIRST/LAST over a changelog: the set's entries are (event time, value)
   * pairs (d_t, d_vnull: the value is NULL), d_cnt their net multiplicity,
   * and d_top[e] the newest of the entry's runs: a stack of (arrival, count)
   * that retractions pop (the latest arrival first). */
  int64_t* d_t;
  uint8_t* d_vnull;
  int32_t* d_top;  /* run index, -1: none */
  int64_t* r_seq;  /* a run's arrival sequence number */
  int64_t* r_cnt;  /* its copies held */
  int32_t* r_next; /* the older run below it (or the next free run) */
  int64_t r_n, r_cap;
  int32_t r_free;  /* free run + 1; 0 = none */
  int64_t seq;     /* the next arrival's sequence number */
  int32_t* d_head; /* per group, -1: none */
  int64_t d_n, d_cap;
  uint32_t* d_table; /* entry + 1; 0 = empty */
  uint32_t d_mask;
  bool weighted; /* retractable: `count` counts non-NULL values for SUM too */
  lm_pool strings;
  /* lm_agg_states_prepare calls of one chunk (prep_seq, nonzero): the rows
   * and string bytes prepared so far, so that their room adds up. */
  uint64_t prep_seq;
  int64_t prep_rows;
  size_t prep_bytes;
  /* LM_AGG_UDAF (agg/udaf.c): the function, cap states of u_size bytes each,
   * which of them hold a state to destroy, where calls report. */
  lm_udf* udaf;
  lm_udaf_mode u_mode;
  uint8_t* u_state;
  uint8_t* u_live;
  int64_t u_size;
  lm_agg_report* report;
  /* LM_AGG_STRING_AGG (agg/strcat.c): the separator (the spec's) and each
   * group's values in arrival order. */
  lm_str sep;
  struct lm_strcat* sc;
} lm_agg_states;

void lm_agg_states_init(lm_agg_states* st, const lm_agg_spec* spec, lm_type arg_type);
/* Make the state retractable (COUNT, COUNT(*), SUM, AVG, MIN, MAX, COUNT(DISTINCT),
 * FIRST, LAST, the moments, the quantiles; call before
 * lm_agg_states_reserve). Returns false for an aggregate that cannot be. */
bool lm_agg_states_set_weighted(lm_agg_states* st);
/* True if aggregate `fn` can take retractions (lm_agg_update_weighted). */
bool lm_agg_retractable(lm_agg_fn fn);

/* Make room for `cap` groups (keeps existing ones). LAMINAR_ERR_NOMEM on failure. */
laminar_code lm_agg_states_reserve(lm_agg_states* st, int64_t cap);
/* Initialize group `g` (< cap) to the empty state. */
void lm_agg_states_init_group(lm_agg_states* st, int64_t g);
/* Initialize groups [first, first + n) (< cap) to the empty state at once
 * (a block write per field; the same state as lm_agg_states_init_group). */
void lm_agg_states_init_range(lm_agg_states* st, int64_t first, int64_t n);
/* Forget group g, whose id will be reused (session slots): COUNT(DISTINCT)
 * entries of it stop matching (their memory goes at the next clear). */
void lm_agg_states_drop_group(lm_agg_states* st, int64_t g);
/* Forget every group (keeps capacity and string memory for reuse). */
void lm_agg_states_clear(lm_agg_states* st);
void lm_agg_states_free(lm_agg_states* st);
/* Bytes the state holds for its first `ngroups` groups (max_state_bytes
 * accounting): the per-group arrays it keeps, the value-set and run entries,
 * and its string memory. */
int64_t lm_agg_states_bytes(const lm_agg_states* st, int64_t ngroups);
/* Bytes of the value-set entries the updates prepared by the
 * lm_agg_states_prepare calls of chunk `seq` may add (one a row; 0 for
 * another seq or a state without value sets): what a bound check before
 * those updates adds to lm_agg_states_bytes. */
int64_t lm_agg_states_pending_bytes(const lm_agg_states* st, uint64_t seq);

/* Make room for an lm_agg_update / lm_agg_update_ordered (weighted states:
 * lm_agg_update_weighted / _ordered) of arg (and `order`, NULL if none) rows
 * sel[j], j < m, so that it cannot fail: string copies (MIN/MAX/FIRST/LAST/
 * ARG_MIN/ARG_MAX of strings, ARG_MIN/ARG_MAX of a string `by`),
 * COUNT(DISTINCT) entries, and for a weighted state the MIN/MAX/FIRST/LAST
 * value entries and FIRST/LAST runs. Calls with the same nonzero `seq` (one
 * chunk prepared slice by slice before its first update) add up: the room
 * holds the updates of all of them; a new seq (or 0) starts over. Changes
 * no group's state (only capacity); LAMINAR_ERR_NOMEM (what earlier calls of
 * the seq prepared stays prepared). */
laminar_code lm_agg_states_prepare(lm_agg_states* st, const lm_vec* arg,
                                   const lm_vec* order, const uint32_t* sel, int64_t m,
                                   uint64_t seq);

/* Update groups gids[j] with arg rows sel[j], j < m (arg NULL for COUNT(*)).
 * Returns LAMINAR_ERR_NOMEM if a MIN/MAX string copy fails (it cannot after
 * lm_agg_states_prepare over the same rows; nor can the weighted updates). */
laminar_code lm_agg_update(lm_agg_states* st, const lm_vec* arg, const uint32_t* sel,
                           const uint32_t* gids, int64_t m);

/* FIRST / LAST with the event time of each row in `order` (rows in arrival
 * order; `order` NULL: by arrival only). Other functions ignore `order`. */
laminar_code lm_agg_update_ordered(lm_agg_states* st, const lm_vec* arg,
                                   const lm_vec* order, const uint32_t* sel,
                                   const uint32_t* gids, int64_t m);

/* As lm_agg_update, each row counting weight[row] times (negative: retracted).
 * Needs a weighted state. */
laminar_code lm_agg_update_weighted(lm_agg_states* st, const lm_vec* arg,
                                    const uint32_t* sel, const uint32_t* gids,
                                    const int64_t* weight, int64_t m);
/* As lm_agg_update_weighted, FIRST / LAST with each row's event time in
 * `order` (NULL: arrival order only). A retraction removes copies equal in
 * (event time, value), the latest arrival first. */
laminar_code lm_agg_update_weighted_ordered(lm_agg_states* st, const lm_vec* arg,
                                            const lm_vec* order, const uint32_t* sel,
                                            const uint32_t* gids, const int64_t* weight,
                                            int64_t m);

/* Fold group `src` of `from` into group `dst` of `st` (the same function and
 * argument type; `from` may be `st`): counts and sums add, MIN/MAX keep the
 * better value, FIRST/LAST the earlier/later, COUNT(DISTINCT) unites the sets.
 * Strings are copied into st's pool unless from == st. Used by merging session
 * windows and by hop windows built from panes. LAMINAR_ERR_NOMEM on a copy. */
laminar_code lm_agg_merge(lm_agg_states* st, int64_t dst, const lm_agg_states* from,
                          int64_t src);

/* lm_agg_merge of every group g < n of `from` into group dst[g] of `st`
 * (several may go to one), with the common functions as tight loops. */
laminar_code lm_agg_merge_many(lm_agg_states* st, const uint32_t* dst,
                               const lm_agg_states* from, int64_t n);

/* Write the results of groups [first, first+n) into `data` (n values of
 * result_type's width) and `nulls` (n bytes, 1 = NULL); returns true if any
 * result is NULL. STRING results borrow the state's bytes. */
bool lm_agg_finalize(const lm_agg_states* st, int64_t first, int64_t n, void* data,
                     uint8_t* nulls);

/* Make dst (initialized with the same function, argument type and
 * weighting) a copy of src's groups [0, n) with their value sets and run
 * stacks, strings copied into dst's pool; dst's previous groups are
 * forgotten. For a checkpoint's copy-on-write (op/window.c). dst may be
 * partly copied on LAMINAR_ERR_NOMEM (clear or free it). */
laminar_code lm_agg_states_copy(lm_agg_states* dst, const lm_agg_states* src, int64_t n);

/* Whether st's groups are all in per-group arrays (no value sets, strings or
 * run stacks shared by groups): then any range of them copies on its own
 * (lm_agg_states_copy_range). */
bool lm_agg_states_flat(const lm_agg_states* st);
/* Copy groups [first, first + n) of src (flat) into the same groups of dst
 * (the same function, argument type and weighting; reserved past them). For
 * a checkpoint's copy-on-write by blocks of groups (op/window_frozen.c). */
void lm_agg_states_copy_range(lm_agg_states* dst, const lm_agg_states* src, int64_t first,
                              int64_t n);
/* Group fg of `from` copied to group tg of `to`: flat built-in states
 * (lm_agg_states_flat, not a user-defined aggregate) of one aggregate, both
 * reserved past them. Allocates nothing. For EMIT CHANGES' copies of the
 * groups a chunk touches (op/window.c). */
void lm_agg_copy_group(lm_agg_states* to, int64_t tg, const lm_agg_states* from,
                       int64_t fg);
/* Groups g[0..n) of `from` copied to groups [first, first + n) of `to`, as
 * lm_agg_copy_group each, one field at a time. Allocates nothing. For EMIT
 * CHANGES' backups of the groups a chunk updates in place (op/window.c). */
void lm_agg_gather_groups(lm_agg_states* to, int64_t first, const lm_agg_states* from,
                          const uint32_t* g, int64_t n);

/* Where st's user-defined aggregate calls take scratch memory and report
 * (see lm_agg_report); every operator sets it on the states it creates. A
 * no-op for built-in aggregates. */
void lm_agg_states_set_report(lm_agg_states* st, lm_agg_report* report);
/* Take the failure a finalize recorded in `report` (LAMINAR_OK: none),
 * leaving it empty; the text stays in report->text. */
laminar_code lm_agg_report_take(lm_agg_report* report);

void lm_agg_snapshot_group(const lm_agg_states* st, int64_t g, lm_state_writer* w);
/* Restore into group g (already reserved). LAMINAR_ERR_NOMEM on a string copy. */
laminar_code lm_agg_restore_group(lm_agg_states* st, int64_t g, lm_state_reader* r);

#endif /* LM_AGG_H */
