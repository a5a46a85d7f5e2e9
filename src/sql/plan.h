/*
 * plan.h -- the bound, typed plan of a continuous query: what the binder
 * (binder.c) makes of a CREATE STREAM statement and what the runtime turns
 * into an operator chain (src/db). Expression trees and names live in the
 * plan's pool and die with the plan.
 *
 * Two shapes in this version:
 *  - map:     [WHERE filter] -> project(exprs)                  (plain streams)
 *  - window:  window aggregate(filter, keys, aggs over tumble, hop or session,
 *             or no window: GROUP BY alone)                      (GROUP BY)
 *             -> [HAVING filter] -> project(post_exprs over agg_schema)
 */
#ifndef LM_PLAN_H
#define LM_PLAN_H

#include "agg/agg.h"
#include "expr/expr.h"
#include "op/op.h"
#include "util/pool.h"
#include "util/types.h"

/* The catalog view the binder needs: a function resolving an input name to
 * its schema (NULL when unknown). */
typedef const lm_schema* (*lm_plan_lookup_fn)(void* arg, const char* name,
                                              bool* out_is_source);

typedef struct lm_plan {
  lm_pool pool;
  char* input;                 /* the source or stream read */
  bool input_is_source;
  lm_schema out_schema;

  lm_expr* filter;             /* WHERE, NULL if none */
  /* map shape */
  lm_expr** exprs;
  int32_t nexprs;
  /* window shape */
  bool windowed;
  bool lateness_set;           /* WITH (allowed_lateness = ...) on the stream */
  /* WITH (late_output = 'name' | true): the name of the stream that receives
   * the late input rows (true: "<stream>_late"), in the pool; NULL = none. */
  char* late_output;
  int32_t late_line, late_column; /* where the option's value is (errors) */
  /* WITH (max_state_bytes = ...): bound on the stream's keyed state; 0: only
   * the database's (config max_state_bytes). */
  int64_t max_state_bytes;
  lm_window_spec window;       /* keys/aggs point into the pool */
  lm_schema agg_schema;        /* window_start, window_end, keys..., aggs... */
  lm_expr* having;             /* over agg_schema, NULL if none */
  lm_expr** post_exprs;        /* over agg_schema, one per output column */
  int32_t npost;
} lm_plan;

void lm_plan_free(lm_plan* plan);

/* A plan passing every row of `input` (schema `in`) through unchanged: the
 * plan of a late side output stream, whose rows the window operator of its
 * stream delivers (it reads no input itself). LAMINAR_ERR_NOMEM or OK; on
 * failure *out is left empty. */
laminar_code lm_plan_passthrough(const char* input, bool input_is_source, const lm_schema* in,
                                 lm_plan* out);

/* Build the operator chain of one partition of `plan`; the chain borrows the
 * plan's expressions (free the chain before the plan). */
laminar_code lm_plan_build_chain(const lm_plan* plan, lm_op** out);

/* One line per operator, for EXPLAIN and SHOW STREAMS; written into the
 * plan's pool. */
const char* lm_plan_describe(lm_plan* plan);

#endif /* LM_PLAN_H */
