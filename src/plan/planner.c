/*
 * planner.c -- a stream's logical plan (sql/plan.h) -> its physical plan:
 * the operators of each branch and of the main chain, the partitioning
 * (thread-per-core, rt/part.c) and whether the two-phase split applies
 * (db/twophase.c). See planner.h.
 *
 * Control thread.
 */
#include "plan/planner.h"

#include "util/util.h"

#include <stdio.h>
#include <string.h>

/* ---- operators ---------------------------------------------------------------------- */

static laminar_code build_rest(const lm_plan* plan, lm_op** out);

/* A join plan (ASOF, lookup, a table function): the join operator, then (a
 * table function beside a join) the lateral one, then the rest of the plan. */
laminar_code lm_plan_build_chain(const lm_plan* plan, lm_op** out) {
  *out = NULL;
  if (!plan->joined && !plan->lookup && !plan->lateral && !plan->temporal)
    return build_rest(plan, out);
  lm_op* join;
  if (plan->temporal)
    LM_TRY(lm_op_expire_create(&plan->expire, &plan->union_schema, &plan->union_schema,
                               &join));
  else if (plan->lateral)
    LM_TRY(lm_op_lateral_create(&plan->lat, &plan->union_schema, &join));
  else if (plan->interval)
    LM_TRY(lm_op_ijoin_create(&plan->ijoin, &plan->union_schema, &join));
  else if (plan->lookup)
    LM_TRY(lm_op_lookup_create(&plan->lk, &plan->union_schema, &join));
  else
    LM_TRY(lm_op_asof_create(&plan->join, &plan->union_schema, &join));
  lm_op** rest = &join->next;
  laminar_code rc = LAMINAR_OK;
  if (plan->join_lateral) { /* the table function over each joined row */
    rc = lm_op_lateral_create(&plan->jlat, &plan->jlat_schema, rest);
    if (rc == LAMINAR_OK) rest = &(*rest)->next;
  }
  if (rc == LAMINAR_OK) rc = build_rest(plan, rest);
  if (rc != LAMINAR_OK) {
    lm_op_chain_destroy(join);
    return rc;
  }
  *out = join;
  return LAMINAR_OK;
}

static laminar_code build_rest(const lm_plan* plan, lm_op** out) {
  *out = NULL;
  if (plan->analytic) return lm_plan_build_analytic(plan, out);
  if (!plan->windowed) {
    return lm_op_map_create(plan->filter, (const lm_expr* const*)plan->exprs,
                            plan->nexprs, &plan->out_schema, out);
  }
  lm_op* win;
  if (plan->keyed_wm) {
    LM_TRY(lm_op_keyed_window_create(&plan->window, &plan->agg_schema, plan->wm_key_col,
                                     plan->wm_ts_col, plan->wm_key_type,
                                     plan->wm_delay_ms, &win));
  } else {
    LM_TRY(lm_op_window_create(&plan->window, &plan->agg_schema, &win));
  }
  lm_op* post;
  laminar_code rc =
      lm_op_map_create(plan->having, (const lm_expr* const*)plan->post_exprs, plan->npost,
                       &plan->out_schema, &post);
  if (rc != LAMINAR_OK) {
    lm_op_chain_destroy(win);
    return rc;
  }
  win->next = post;
  *out = win;
  return LAMINAR_OK;
}

laminar_code lm_plan_build_analytic(const lm_plan* plan, lm_op** out) {
  *out = NULL;
  lm_op* an;
  LM_TRY(lm_op_analytic_create(&plan->an, &plan->an_schema, &an));
  lm_op* post;
  laminar_code rc = lm_op_map_create(plan->qualify, (const lm_expr* const*)plan->exprs,
                                     plan->nexprs, &plan->out_schema, &post);
  if (rc != LAMINAR_OK) {
    lm_op_chain_destroy(an);
    return rc;
  }
  an->next = post;
  *out = an;
  return LAMINAR_OK;
}

laminar_code lm_plan_build_branch(const lm_plan* plan, int32_t b, lm_op** out) {
  *out = NULL;
  const lm_plan_branch* br = &plan->branches[b];
  if (br->exprs == NULL) return LAMINAR_OK;
  /* A window join's side projects to that side's columns, not the joined row;
   * a derived table a table function joins, to the derived table's columns. */
  return lm_op_map_create(br->filter, (const lm_expr* const*)br->exprs, br->nexprs,
                          lm_plan_branch_out(plan, b), out);
}

const char* lm_plan_describe(lm_plan* plan) {
  char buf[512], head[256] = "";
  if (plan->interval) {
    const lm_ijoin_spec* j = &plan->ijoin;
    snprintf(head, sizeof head,
             "%s(%s, %s: %d keys, %s.%s - %s.%s in [%lld, %lld]%s) -> ",
             lm_plan_join_name(plan), plan->branches[0].input, plan->branches[1].input,
             (int)j->nkeys, plan->branches[1].input,
             plan->union_schema.fields[j->lcols + j->rtime].name, plan->branches[0].input,
             plan->union_schema.fields[j->ltime].name, (long long)j->lo, (long long)j->hi,
             j->residual != NULL ? ", residual" : "");
  } else if (plan->joined && plan->temporal_table != NULL) {
    const lm_asof_spec* j = &plan->join;
    snprintf(head, sizeof head, "%s(%s, %s: %d keys, AS OF %s.%s) -> ",
             plan->join.left_outer ? "left_temporal_join" : "temporal_join",
             plan->branches[0].input, plan->temporal_table, (int)j->nkeys,
             plan->branches[0].input, plan->union_schema.fields[j->ltime].name);
  } else if (plan->joined) {
    static const char* const cmps[] = {"", ">=", ">", "<=", "<"};
    const lm_asof_spec* j = &plan->join;
    snprintf(head, sizeof head, "%s(%s, %s: %d keys, %s.%s %s %s.%s%s) -> ",
             plan->join.left_outer ? "left_asof_join" : "asof_join",
             plan->branches[0].input, plan->branches[1].input, (int)j->nkeys,
             plan->branches[0].input, plan->union_schema.fields[j->ltime].name,
             cmps[j->cmp], plan->branches[1].input,
             plan->union_schema.fields[j->lcols + j->rtime].name,
             j->has_tolerance ? ", tolerance" : "");
  } else if (plan->temporal) {
    const lm_expire_spec* x = &plan->expire;
    snprintf(head, sizeof head, "temporal_filter(%s.%s %s watermark - %lld%s) -> ",
             plan->input, plan->union_schema.fields[x->time_col].name,
             x->inclusive ? ">=" : ">", (long long)x->horizon,
             x->time_type == LM_TYPE_TIMESTAMP ? " us" : " ms");
  } else if (plan->lateral) {
    snprintf(head, sizeof head, "lateral(%s, %s: %d columns) -> ", plan->input,
             lm_udf_name(plan->lat.fn), (int)lm_udtf_ncols(plan->lat.fn));
  } else if (plan->lookup) {
    snprintf(head, sizeof head, "%s(%s, %s: %d keys) -> ",
             plan->lk.left_outer ? "left_lookup_join" : "lookup_join", plan->input,
             plan->lookup_table, (int)plan->lk.nkeys);
  } else if (lm_plan_branched(plan)) {
    /* union(a: filter -> project(2 columns), b: project(2 columns)) -> ... */
    size_t n = (size_t)snprintf(head, sizeof head, "union(");
    for (int32_t b = 0; b < plan->nbranches && n < sizeof head; b++) {
      const lm_plan_branch* br = &plan->branches[b];
      n += (size_t)snprintf(head + n, sizeof head - n, "%s%s: %s", b > 0 ? ", " : "",
                            br->input, br->filter != NULL ? "filter -> " : "");
      if (n < sizeof head) {
        n += (size_t)snprintf(head + n, sizeof head - n,
                              br->exprs != NULL ? "project(%d columns)" : "as is",
                              (int)br->nexprs);
      }
    }
    if (n < sizeof head) snprintf(head + n, sizeof head - n, ") -> ");
  }
  if (plan->analytic) {
    snprintf(buf, sizeof buf,
             "%s%sanalytic(%d partition keys, %d calls, event time column %d) -> "
             "%sproject(%d columns)",
             head, plan->filter ? "filter -> " : "", (int)plan->an.nkeys,
             (int)plan->an.ncalls, (int)plan->an.time_col,
             plan->qualify ? "qualify -> " : "", (int)plan->nexprs);
  } else if (plan->windowed) {
    char shape[64];
    if (plan->window.global) {
      snprintf(shape, sizeof shape, "no window");
    } else if (plan->window.session) {
      snprintf(shape, sizeof shape, "session gap %lld ms",
               (long long)plan->window.size_ms);
    } else if (plan->window.hop_ms != plan->window.size_ms) {
      snprintf(shape, sizeof shape, "hop %lld ms every %lld ms",
               (long long)plan->window.size_ms, (long long)plan->window.hop_ms);
    } else {
      snprintf(shape, sizeof shape, "tumble %lld ms", (long long)plan->window.size_ms);
    }
    snprintf(buf, sizeof buf,
             "%swindow_aggregate(%s on column %d, %d keys, %d aggregates%s%s) -> "
             "project(%d columns%s)",
             head, shape, (int)plan->window.time_col, (int)plan->window.nkeys,
             (int)plan->window.naggs, plan->window.filter ? ", filtered" : "",
             plan->window.emit_changes ? ", emit changes" : "", (int)plan->npost,
             plan->having ? ", having" : "");
  } else {
    snprintf(buf, sizeof buf, "%s%sproject(%d columns)", head,
             plan->filter ? "filter -> " : "", (int)plan->nexprs);
  }
  return lm_pool_copy(&plan->pool, buf, strlen(buf) + 1);
}

/* ---- the physical choices ----------------------------------------------------------- */

int32_t lm_plan_branch_source_col(const lm_plan* plan, int32_t b, int32_t u) {
  const lm_plan_branch* br = &plan->branches[b];
  if (!br->input_is_source) return -1;
  if (br->exprs == NULL) return u < br->in_ncols ? u : -1; /* the input as it is */
  const lm_expr* e = u < br->nexprs ? br->exprs[u] : NULL;
  if (e == NULL || e->kind != LM_EXPR_COLUMN || e->column < 0 ||
      e->column >= br->in_ncols)
    return -1;
  return e->column;
}

/* Whether union column u (the join's output row) is one of the GROUP BY or
 * PARTITION BY keys, a bare column, of what follows the join. */
static bool join_rest_keyed_by(const lm_plan* plan, int32_t u) {
  const lm_expr* const* keys = plan->analytic ? plan->an.keys : plan->window.keys;
  int32_t nkeys = plan->analytic ? plan->an.nkeys : plan->window.nkeys;
  for (int32_t k = 0; k < nkeys; k++) {
    if (keys[k]->kind == LM_EXPR_COLUMN && keys[k]->column == u) return true;
  }
  return false;
}

/* Why an ASOF join runs whole, or NULL when each input can be routed by its
 * own equality key columns (rows of equal keys meet in one partition, which
 * joins them as the whole would). A GROUP BY or window functions after the
 * join keep their groups in one partition only when they are keyed by the
 * join's keys too. */
static const char* join_partition_refusal(const lm_plan* plan,
                                          const lm_plan_context* ctx) {
  const lm_asof_spec* j = &plan->join;
  if (ctx->is_view) return "a materialized view (one table of all its rows)";
  if (j->nkeys == 0) return "an ASOF JOIN without equality keys (one operator)";
  if (j->nkeys > LM_PLAN_MAX_PART_KEYS) return "too many keys";
  if (!plan->branches[0].input_is_source || !plan->branches[1].input_is_source)
    return "an ASOF JOIN input is a stream, not a source";
  if (plan->late_output != NULL) return "a late side output";
  for (int32_t k = 0; k < j->nkeys; k++) {
    const lm_expr* l = j->lkeys[k];
    const lm_expr* r = j->rkeys[k];
    if (l->kind != LM_EXPR_COLUMN || r->kind != LM_EXPR_COLUMN || l->column < 0 ||
        l->column >= j->lcols || r->column < 0 || r->column >= j->rcols)
      return "an ASOF JOIN key is an expression, not a column";
    /* Equal values must hash alike on both sides. */
    if (l->type != r->type) return "ASOF JOIN keys of different types";
    if ((plan->windowed || plan->analytic) && !join_rest_keyed_by(plan, l->column) &&
        (j->left_outer || !join_rest_keyed_by(plan, j->lcols + r->column)))
      return "a GROUP BY or PARTITION BY after the ASOF JOIN without its keys";
  }
  if (plan->windowed && plan->window.changelog) return "its input is a changelog";
  if (ctx->ncores <= 1) return "cores = 1";
  return NULL;
}

int32_t lm_plan_part_source_col(const lm_plan* plan, const lm_phys_plan* ph, int32_t b,
                                int32_t k) {
  if (k < 0 || k >= ph->npart_keys) return -1;
  if (plan->joined && !plan->interval) {
    const lm_expr* e = b == 0 ? plan->join.lkeys[k] : plan->join.rkeys[k];
    return e->kind == LM_EXPR_COLUMN ? e->column : -1;
  }
  return lm_plan_branch_source_col(plan, b, ph->part_keys[k]);
}

/* Why the plan runs whole rather than as key-hash partitions, or NULL when it
 * can be partitioned (then ctx->ncores decides how many). A stream with a late
 * side output stays whole: its window operator hands late rows straight to
 * the late stream, one reactor's chain only. */
static const char* partition_refusal(const lm_plan* plan, const lm_plan_context* ctx) {
  if (plan->joined && !plan->interval) return join_partition_refusal(plan, ctx);
  const lm_window_spec* w = &plan->window;
  /* Window functions keep state per PARTITION BY key, as a GROUP BY does:
   * routed by those columns. */
  const lm_expr* const* keys = plan->analytic ? plan->an.keys : w->keys;
  int32_t nkeys = plan->analytic ? plan->an.nkeys : w->nkeys;
  bool branched = lm_plan_branched(plan);
  if (plan->interval) {
    int32_t cols[LM_PLAN_MAX_PART_KEYS];
    if (ctx->is_view) return "a materialized view (one table of all its rows)";
    if (!plan->branches[0].input_is_source || !plan->branches[1].input_is_source)
      return "a join reading a stream (its inputs are routed by source columns)";
    if (lm_plan_join_part_keys(plan, 0, cols) == 0)
      return "a join without an equality of two plain columns";
    if (plan->late_output != NULL) return "a late side output";
    if (plan->windowed && plan->window.changelog) return "its input is a changelog";
    /* What follows the join keeps its groups in one partition only when keyed
     * by a join key of a side never padded with NULLs (as for ASOF). */
    const lm_ijoin_spec* j = &plan->ijoin;
    bool keyed = !plan->windowed && !plan->analytic;
    for (int32_t k = 0; !keyed && k < j->nkeys; k++) {
      const lm_expr *l = j->lkeys[k], *r = j->rkeys[k];
      if (l->kind != LM_EXPR_COLUMN || r->kind != LM_EXPR_COLUMN) continue;
      keyed = (!j->keep_right && join_rest_keyed_by(plan, l->column)) ||
              (!j->keep_left && join_rest_keyed_by(plan, j->lcols + r->column));
    }
    if (!keyed) return "a GROUP BY or PARTITION BY after the join without its keys";
    if (ctx->ncores <= 1) return "cores = 1";
    return NULL;
  }
  if (!plan->windowed && !plan->analytic) return "no GROUP BY (no keyed state)";
  if (ctx->is_view) return "a materialized view (one table of all its rows)";
  if (plan->lookup) return "a lookup join (it reads its table where the table runs)";
  if (branched && plan->analytic) return "window functions over several inputs";
  if (!branched && ctx->source == NULL) return "it reads a stream, not a source";
  if (plan->analytic && plan->an.time_col < 0) return "no event-time column";
  if (!plan->analytic && w->changelog) return "its input is a changelog";
  if (nkeys == 0) return plan->analytic ? "no PARTITION BY key" : "no GROUP BY key";
  if (plan->late_output != NULL)
    return "a late side output (the window hands late rows to one stream)";
  if (nkeys > LM_PLAN_MAX_PART_KEYS) return "too many keys";
  int32_t ncols = branched ? plan->union_schema.ncols : ctx->source->ncols;
  for (int32_t k = 0; k < nkeys; k++) {
    bool plain = keys[k]->kind == LM_EXPR_COLUMN && keys[k]->column >= 0 &&
                 keys[k]->column < ncols;
    if (plan->lateral && keys[k]->kind == LM_EXPR_COLUMN &&
        keys[k]->column >= plan->lat.in_ncols)
      return "a key is a table function's column (rows are routed before the call)";
    if (!plain) return "a key is an expression, not a column";
  }
  /* Over a union: every branch routes its rows by the source columns it puts
   * at the keys' places (rt/part.c), so each must be one, unchanged. */
  for (int32_t b = 0; branched && b < plan->nbranches; b++) {
    for (int32_t k = 0; k < nkeys; k++) {
      if (lm_plan_branch_source_col(plan, b, keys[k]->column) < 0)
        return "a UNION ALL branch reads a stream, or computes or casts a key";
    }
  }
  if (ctx->ncores <= 1) return "cores = 1";
  return NULL;
}

/* Why the plan's own shape does not split into partial and final aggregates,
 * or NULL. */
static const char* two_phase_refusal(const lm_plan* plan, bool is_view, int32_t* agg) {
  *agg = -1;
  const lm_window_spec* w = &plan->window;
  if (is_view) return "it is a materialized view";
  if (plan->interval) return "it is an interval join (its inputs cannot be split apart)";
  if (plan->joined) return "it is an ASOF JOIN (its inputs cannot be split apart)";
  if (plan->lookup) return "it is a lookup join (it reads its table in place)";
  if (plan->lateral) return "it calls a table function (FROM s, f(...))";
  if (plan->analytic)
    return "it has window functions (OVER): split its input by the PARTITION BY "
           "keys instead, see laminar_stream_partitioning";
  if (!plan->windowed)
    return "it has no GROUP BY window (its rows need no merging: any split "
           "of its input works, see laminar_stream_partitioning)";
  if (w->global) return "its GROUP BY has no window (a running aggregate)";
  if (w->session)
    return "session windows do not decompose (a session spans rows a "
           "split may put in different parts)";
  if (w->emit_changes) return "EMIT CHANGES does not decompose";
  if (w->changelog) return "its input is a changelog";
  if (lm_plan_branched(plan))
    return "it reads several inputs (UNION ALL) or a derived table";
  for (int32_t i = 0; i < w->naggs; i++) {
    if (lm_plan_two_phase_partial(w->aggs[i].fn) == NULL) {
      *agg = i;
      return "an aggregate other than COUNT, SUM, AVG, MIN and MAX does not decompose";
    }
  }
  return NULL;
}

void lm_plan_physical(const lm_plan* plan, const lm_plan_context* ctx,
                      lm_phys_plan* out) {
  memset(out, 0, sizeof *out);
  const lm_expr* const* keys = plan->analytic ? plan->an.keys : plan->window.keys;
  int32_t nkeys = plan->analytic   ? plan->an.nkeys
                  : plan->windowed ? plan->window.nkeys
                                   : 0;
  for (int32_t k = 0; k < nkeys && k < LM_PLAN_MAX_PART_KEYS; k++) {
    out->key_cols[k] = keys[k]->kind == LM_EXPR_COLUMN ? keys[k]->column : -1;
    out->nkey_cols = k + 1;
  }
  /* Per-key watermarks: a key's rows (and its watermark) stay together, so
   * the key column alone is what any split keeps together. */
  if (plan->keyed_wm) {
    out->key_cols[0] = plan->wm_key_col;
    out->nkey_cols = 1;
  }
  out->nparts = 1;
  out->unpartitioned = partition_refusal(plan, ctx);
  if (out->unpartitioned == NULL && plan->interval) {
    /* A join: each input routed by its own columns of the keys
     * (lm_plan_join_part_keys); part_keys are the left side's. */
    out->nparts = ctx->ncores;
    out->npart_keys = lm_plan_join_part_keys(plan, 0, out->part_keys);
  } else if (out->unpartitioned == NULL && plan->joined) {
    /* The left key columns, at their union places; lm_plan_part_source_col
     * maps them to each input's own. */
    out->nparts = ctx->ncores;
    for (int32_t k = 0; k < plan->join.nkeys; k++)
      out->part_keys[k] = plan->join.lkeys[k]->column;
    out->npart_keys = plan->join.nkeys;
  } else if (out->unpartitioned == NULL) {
    out->nparts = ctx->ncores;
    for (int32_t k = 0; k < nkeys; k++) out->part_keys[k] = keys[k]->column;
    out->npart_keys = nkeys;
    /* Per-key watermarks: a key's rows (and its watermark) in one partition. */
    if (plan->keyed_wm) {
      out->part_keys[0] = plan->wm_key_col;
      out->npart_keys = 1;
    }
  }
  out->no_two_phase = two_phase_refusal(plan, ctx->is_view, &out->no_two_phase_agg);
}

const char* lm_plan_two_phase_partial(lm_agg_fn fn) {
  switch (fn) {
    case LM_AGG_COUNT_STAR: return "count";
    case LM_AGG_COUNT: return "count";
    case LM_AGG_SUM: return "sum";
    case LM_AGG_AVG: return "sum, count";
    case LM_AGG_MIN: return "min";
    case LM_AGG_MAX: return "max";
    case LM_AGG_UDAF: return "its serialized state";
    default: return NULL;
  }
}

const char* lm_plan_two_phase_final(lm_agg_fn fn) {
  switch (fn) {
    case LM_AGG_COUNT_STAR:
    case LM_AGG_COUNT:
    case LM_AGG_SUM: return "sum";
    case LM_AGG_AVG: return "sum / sum";
    case LM_AGG_MIN: return "min";
    case LM_AGG_MAX: return "max";
    case LM_AGG_UDAF: return "merge";
    default: return NULL;
  }
}

void lm_plan_chain_names(const lm_op* chain, char* buf, size_t cap) {
  size_t n = 0;
  buf[0] = '\0';
  for (const lm_op* op = chain; op != NULL && n < cap; op = op->next) {
    n += (size_t)snprintf(buf + n, cap - n, "%s%s", op == chain ? "" : " -> ",
                          op->vt->name);
  }
}

int32_t lm_plan_traced_column(const lm_plan* p, int32_t col) {
  if (col < 0) return -1;
  if (!p->windowed) {
    if (col >= p->nexprs || p->exprs[col]->kind != LM_EXPR_COLUMN) return -1;
    /* An analytic stream's own columns (after its input's) are computed. */
    if (p->analytic && p->exprs[col]->column >= p->an.in_ncols) return -1;
    return p->exprs[col]->column;
  }
  /* agg_schema: window_start, window_end, keys..., aggregates... */
  if (col >= p->npost || p->post_exprs[col]->kind != LM_EXPR_COLUMN) return -1;
  int32_t k = p->post_exprs[col]->column - 2;
  if (k < 0 || k >= p->window.nkeys || p->window.keys[k]->kind != LM_EXPR_COLUMN)
    return -1;
  return p->window.keys[k]->column;
}

const char* lm_plan_join_name(const lm_plan* plan) {
  if (plan->temporal_table != NULL)
    return plan->join.left_outer ? "left temporal join" : "temporal join";
  if (!plan->interval) return plan->join.left_outer ? "left asof join" : "asof join";
  const lm_ijoin_spec* j = &plan->ijoin;
  static const char* const names[2][4] = {
      {"interval join", "left interval join", "right interval join",
       "full interval join"},
      {"window join", "left window join", "right window join", "full window join"}};
  return names[j->window_ms > 0][(j->keep_left ? 1 : 0) + (j->keep_right ? 2 : 0)];
}

int32_t lm_plan_join_time(const lm_plan* plan, int32_t side) {
  if (plan->interval) return side == 0 ? plan->ijoin.ltime : plan->ijoin.rtime;
  return side == 0 ? plan->join.ltime : plan->join.rtime;
}

int32_t lm_plan_join_part_keys(const lm_plan* plan, int32_t b, int32_t* out_cols) {
  if (!plan->interval) return 0;
  const lm_ijoin_spec* j = &plan->ijoin;
  int32_t n = 0;
  for (int32_t k = 0; k < j->nkeys && n < LM_PLAN_MAX_PART_KEYS; k++) {
    /* Both bare columns (of one type: the binder casts where they differ) of
     * the inputs themselves (not a window join's window_start). */
    const lm_expr *l = j->lkeys[k], *r = j->rkeys[k];
    if (l->kind != LM_EXPR_COLUMN || r->kind != LM_EXPR_COLUMN ||
        l->column >= plan->branches[0].in_ncols ||
        r->column >= plan->branches[1].in_ncols)
      continue;
    out_cols[n++] = b == 0 ? l->column : r->column;
  }
  return n;
}
