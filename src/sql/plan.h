/*
 * plan.h -- the logical plan of a continuous query: the bound, typed form
 * the binder (binder.c) makes of a CREATE STREAM statement and the planner
 * (src/plan/planner.h) turns into a physical plan and operators. Expression
 * trees and names live in the plan's pool and die with the plan.
 *
 * Inputs: one branch per input (lm_plan_branch); several (UNION ALL, a
 * derived table) project their rows to one union schema first. Then one of
 * two shapes:
 *  - map:     [WHERE filter] -> project(exprs)                  (plain streams)
 *  - window:  window aggregate(filter, keys, aggs over tumble, hop or session,
 *             or no window: GROUP BY alone)                      (GROUP BY)
 *             -> [HAVING filter] -> project(post_exprs over agg_schema)
 *  - analytic: analytic(filter, PARTITION BY keys, calls OVER the event time)
 *             -> [QUALIFY filter] -> project(exprs over an_schema)  (OVER (...))
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

/* One input of a stream. A stream reads N >= 1 inputs; with more than one
 * (UNION ALL) or a derived table, each input's rows go through its branch --
 * [filter] -> project(exprs) to the union schema -- and the branches' rows
 * together feed the rest of the plan. A plain `FROM name` is one branch
 * without operators (exprs NULL): the input's rows go to the plan as they
 * are. */
typedef struct lm_plan_branch {
  char* input; /* the source or stream read, in the pool */
  bool input_is_source;
  int32_t line, column; /* of the input's name in the statement */
  lm_expr* filter;      /* over the input's columns, NULL if none */
  lm_expr** exprs;      /* NULL: no operator (the input's rows as they are) */
  int32_t nexprs;       /* == union_schema.ncols */
  /* The union-schema column each input column is projected to unchanged
   * (a bare column reference), -1 for none: where its watermark column goes. */
  int32_t* col_out;
  int32_t in_ncols;
} lm_plan_branch;

typedef struct lm_plan {
  lm_pool pool;
  char* input; /* branches[0].input (the only one of most plans) */
  bool input_is_source;
  lm_plan_branch* branches; /* nbranches >= 1, in the pool */
  int32_t nbranches;
  char* inputs; /* several: their names joined by ", " (lm_plan_inputs) */
  /* Columns the branches project to (the rest of the plan's input) when
   * they have operators; empty otherwise. */
  lm_schema union_schema;
  lm_schema out_schema;

  lm_expr* filter; /* WHERE, NULL if none */
  /* map shape */
  lm_expr** exprs;
  int32_t nexprs;
  /* window shape */
  bool windowed;
  /* The stream's WITH (...) options, set after binding by the option
   * table's surface (db: lm_db_stream_options), not by the binder. */
  bool lateness_set; /* WITH (allowed_lateness = ...) on the stream */
  /* WITH (late_output = 'name' | true): the name of the stream that receives
   * the late input rows (true: "<stream>_late"), in the pool; NULL = none. */
  char* late_output;
  int32_t late_line, late_column; /* where the option's value is (errors) */
  /* WITH (max_state_bytes = ...): bound on the stream's keyed state; 0: only
   * the database's (config max_state_bytes). */
  int64_t max_state_bytes;
  /* WITH (state_ttl = ...): where its value is (errors); the value itself is
   * in window.ttl_ms. */
  int32_t ttl_line, ttl_column;
  /* Per-key watermarks (its source's watermark_key; set by db/catalog.c for
   * a window reading such a source directly): the window closes per value
   * of input column wm_key_col (of type wm_key_type) on that key's largest
   * time in wm_ts_col less wm_delay_ms (op/keyed_window.c). */
  bool keyed_wm;
  int32_t wm_key_col, wm_ts_col;
  lm_type wm_key_type;
  int64_t wm_delay_ms;
  lm_window_spec window; /* keys/aggs point into the pool */
  lm_schema agg_schema;  /* window_start, window_end, keys..., aggs... */
  lm_expr* having;       /* over agg_schema, NULL if none */
  /* ASOF JOIN: branches[0] is the left input, branches[1] the right (both
   * without operators of their own), union_schema the joined row (the left
   * columns then the right), which the rest of the plan reads; the chain
   * starts with the join operator (op.h lm_asof_spec, expressions in the
   * pool). The plan's line/column of the join: join_line/join_column. */
  bool joined;
  lm_asof_spec join;
  /* An interval or window join (a JOIN without ASOF): the chain starts with
   * the interval join operator (op.h lm_ijoin_spec) instead. */
  bool interval;
  lm_ijoin_spec ijoin;
  /* A window join (FROM tumble(a, ...) JOIN tumble(b, ...)): each side's
   * branch projects its input's columns then window_start, window_end, the
   * columns of join_side[i] (the join's inputs); empty otherwise. */
  lm_schema join_side[2];
  int32_t join_line, join_column;
  const char* join_kind; /* "ASOF JOIN", "LEFT ASOF JOIN", "FULL JOIN"... (EXPLAIN) */
  /* Lookup join (`FROM s [LEFT] JOIN t ON ...`, t a table): one branch (the
   * stream's input, without operators); union_schema the joined row (the
   * input's columns then the table's), which the rest of the plan reads; the
   * chain starts with the lookup operator (op.h lm_lookup_spec, key
   * expressions in the pool), pointed at the table's operator by the
   * catalog (lookup_table, in the pool). */
  bool lookup;
  lm_lookup_spec lk;
  char* lookup_table;
  /* Temporal join (`JOIN t FOR SYSTEM_TIME AS OF s.ts ON ...`): an ASOF join
   * (joined, join.tombstones) of the input with the table's changelog
   * source; temporal_table names the table (in the pool), NULL otherwise. */
  char* temporal_table;
  /* A temporal filter (WHERE ts > WATERMARK() - INTERVAL h over one input
   * read by name): the chain starts with the expire operator (op.h
   * lm_expire_spec); union_schema is what it emits, the input's columns then
   * _weight (a changelog input's as they are), which the rest of the plan
   * reads as a changelog; temporal_line/column: the condition's place. */
  bool temporal;
  lm_expire_spec expire;
  int32_t temporal_line, temporal_column;
  /* A table function (FROM s, f(s.x)): one branch (s, without operators),
   * union_schema the joined row (s's columns, then f's as lat_cols names
   * them), which the rest of the plan reads; the chain starts with the
   * lateral operator (op.h lm_lateral_spec; fn is held in udfs, its
   * arguments over s's row live in the pool). */
  bool lateral;
  lm_lateral_spec lat;
  lm_schema lat_cols;
  /* A table function beside a join (FROM a JOIN b ON ..., f(a.x)): the
   * join as without it (union_schema its joined row), then the lateral
   * operator over each joined row (jlat: in_ncols the joined row's columns,
   * arguments over it in the pool; fn held in udfs; f's columns named in
   * lat_cols); the rest of the plan reads jlat_schema (the joined row's
   * columns, then f's). */
  bool join_lateral;
  lm_lateral_spec jlat;
  lm_schema jlat_schema;
  lm_expr** post_exprs; /* over agg_schema, one per output column */
  int32_t npost;
  /* analytic shape (OVER (...) calls in a plain query):
   *   analytic(WHERE filter, partition keys, calls; rows in event-time order)
   *   -> [QUALIFY qualify] -> project(exprs over an_schema) */
  bool analytic;
  lm_analytic_spec an;        /* keys/calls point into the pool */
  lm_schema an_schema;        /* the input's columns, then one per call */
  lm_expr* qualify;           /* over an_schema, NULL if none */
  int32_t an_line, an_column; /* the ORDER BY expression of OVER (errors) */
  /* The user-defined functions the plan's expressions call, one reference
   * each (dropped by lm_plan_free). */
  lm_udf_list udfs;
} lm_plan;

/* The tables the binder may join (lookup and temporal joins): for a table
 * `name`, its columns (without _weight) and its primary key's column indexes,
 * the name of its changelog source (the table's columns then _weight; valid
 * while the catalog holds the table; NULL for a table fed by its query, which
 * has none) and its event-time column (the one its WATERMARK is on, -1:
 * none); NULL when `name` is no table. */
typedef struct lm_plan_table {
  const int32_t* keys;
  int32_t nkeys;
  const char* changes;
  int32_t time_col;
} lm_plan_table;
typedef const lm_schema* (*lm_plan_table_fn)(void* arg, const char* name,
                                             lm_plan_table* out);

void lm_plan_free(lm_plan* plan);

/* A plan passing every row of `input` (schema `in`) through unchanged: the
 * plan of a late side output stream, whose rows the window operator of its
 * stream delivers (it reads no input itself). LAMINAR_ERR_NOMEM or OK; on
 * failure *out is left empty. */
laminar_code lm_plan_passthrough(const char* input, bool input_is_source,
                                 const lm_schema* in, lm_plan* out);

/* Whether the plan reads through branches (several inputs, or one behind a
 * derived table's filter and projection) rather than one input as it is. */
bool lm_plan_branched(const lm_plan* plan);

/* The columns branch b's map projects its input to: a window join's side
 * (join_side[b]), a derived table a table function joins (join_side[0], the
 * same for every branch of its union), else the union's (union_schema). */
const lm_schema* lm_plan_branch_out(const lm_plan* plan, int32_t b);

/* What the plan reads, for SHOW STREAMS and pipeline state: its input's
 * name, or the branches' inputs joined by ", " (in the plan's pool). */
const char* lm_plan_inputs(const lm_plan* plan);

#endif /* LM_PLAN_H */
