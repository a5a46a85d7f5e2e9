/*
 * planner.h -- the planner: a stream's logical plan (sql/plan.h, what the
 * binder made of the statement) -> its physical plan and operator graph.
 *
 * The physical plan records the choices made over the logical one, once,
 * when the stream is created; rt/ and db/ read them instead of deciding
 * again:
 *  - operators: each branch's map to the union schema (several inputs) and
 *    the main chain (map, or window aggregate -> map), built per partition
 *    by lm_plan_build_chain / lm_plan_build_branch;
 *  - partitioning: with cores > 1, a windowed stream reading a source
 *    directly, grouped by plain input columns, runs as `nparts` partitions,
 *    its rows routed by the hash of those columns (an ASOF join of two
 *    sources: each input by its own equality key columns); otherwise it runs
 *    whole, and `unpartitioned` says why;
 *  - the two-phase split (laminar_stream_two_phase, db/twophase.c): whether
 *    the stream's own shape decomposes into a partial and a final aggregate
 *    and what each aggregate becomes, or why not (the path from the root
 *    source is the catalog's to check).
 *
 * Control thread; the operators built run on the partition's reactor.
 */
#ifndef LM_PLAN_PLANNER_H
#define LM_PLAN_PLANNER_H

#include "laminar.h"
#include "op/op.h"
#include "sql/plan.h"

#include <stdbool.h>
#include <stdint.h>

/* Most GROUP BY keys a partitioned stream hashes on (more: it runs whole). */
#define LM_PLAN_MAX_PART_KEYS 64

typedef struct lm_phys_plan {
  /* Partitions: > 1 when the stream runs as one partition per reactor, its
   * rows routed by the hash of input columns part_keys[0..npart_keys) (the
   * GROUP BY's plain columns, in key order; an ASOF join's left equality key
   * columns, lm_plan_part_source_col gives each input's); 1 otherwise, with
   * `unpartitioned` the reason (static text). */
  int32_t nparts;
  int32_t part_keys[LM_PLAN_MAX_PART_KEYS];
  int32_t npart_keys;
  const char* unpartitioned;
  /* Each GROUP BY key's input column when the key is a bare column, else -1
   * (windowed plans; what any split of the input must keep together). */
  int32_t key_cols[LM_PLAN_MAX_PART_KEYS];
  int32_t nkey_cols;
  /* Two-phase split: NULL when the stream's shape decomposes (a windowed
   * GROUP BY of COUNT, SUM, AVG, MIN and MAX over one input, closed on the
   * window), else why not (static text); when an aggregate is the reason,
   * no_two_phase_agg is its index in the window's aggregates (else -1). */
  const char* no_two_phase;
  int32_t no_two_phase_agg;
} lm_phys_plan;

/* What the planner knows of the stream beyond its logical plan. */
typedef struct lm_plan_context {
  int32_t ncores;          /* reactors of the database (>= 1) */
  const lm_schema* source; /* the input when it is a source read directly, else NULL */
  bool is_view;            /* a materialized view (its operator keeps all rows) */
} lm_plan_context;

/* Choose the physical plan of `plan` in `ctx` into *out (no allocation;
 * nothing to free). Control thread. */
void lm_plan_physical(const lm_plan* plan, const lm_plan_context* ctx, lm_phys_plan* out);

/* The column of its source that branch b of `plan` puts unchanged (a bare
 * column reference, no cast) at union column u, or -1 (also when the branch
 * reads a stream): what keyed unions route by, and the Spark adapter hashes. */
int32_t lm_plan_branch_source_col(const lm_plan* plan, int32_t b, int32_t u);

/* The column of its source that input (branch) b of `plan` routes partition
 * key k of `ph` by: for a union, the source column the branch puts at the
 * key's place (lm_plan_branch_source_col); for an ASOF join, the side's own
 * k-th equality key column. -1 when none. */
int32_t lm_plan_part_source_col(const lm_plan* plan, const lm_phys_plan* ph, int32_t b,
                                int32_t k);

/* The chain of an analytic plan (plan->analytic): analytic -> project. */
laminar_code lm_plan_build_analytic(const lm_plan* plan, lm_op** out);

/* Build the operator chain of one partition of `plan`; the chain borrows the
 * plan's expressions (free the chain before the plan). */
laminar_code lm_plan_build_chain(const lm_plan* plan, lm_op** out);

/* Build the operator of branch `b` (a map to the union schema); *out NULL
 * for a branch without one. The operator borrows the plan's expressions. */
laminar_code lm_plan_build_branch(const lm_plan* plan, int32_t b, lm_op** out);

/* One line per operator, for SHOW STREAMS; written into the plan's pool.
 * With several inputs: the union of the branches, then the rest,
 * "union(a: filter -> project(2 columns), b: project(2 columns)) -> ...". */
const char* lm_plan_describe(lm_plan* plan);

/* The operators of a built chain by name, "window -> map", into buf (cap
 * bytes, truncated, always NUL-terminated). */
void lm_plan_chain_names(const lm_op* chain, char* buf, size_t cap);

/* The input column that output column `col` of `plan` carries unchanged (a
 * bare column reference, through the window's GROUP BY keys for a windowed
 * plan), or -1. */
int32_t lm_plan_traced_column(const lm_plan* plan, int32_t col);

/* What aggregate `fn` becomes in a two-phase split: its partial state
 * ("count", "sum", "sum, count" ...) and how the final combines it; NULL
 * when it does not decompose. Static text. */
const char* lm_plan_two_phase_partial(lm_agg_fn fn);
const char* lm_plan_two_phase_final(lm_agg_fn fn);

/* A join plan's operator name for EXPLAIN ("asof join", "left interval
 * join", ...; static text), and the time column of its side 0 (left) or 1
 * (right), an index in that side's columns. */
const char* lm_plan_join_name(const lm_plan* plan);
int32_t lm_plan_join_time(const lm_plan* plan, int32_t side);

/* The columns of input b (0 left, 1 right) of an interval join that its
 * partitions route by (the keys that are bare columns of both inputs, in key
 * order) into out_cols (room for LM_PLAN_MAX_PART_KEYS); their number, 0
 * when there are none (or the plan is not an interval join). */
int32_t lm_plan_join_part_keys(const lm_plan* plan, int32_t b, int32_t* out_cols);

#endif /* LM_PLAN_PLANNER_H */
