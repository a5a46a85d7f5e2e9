/*
 * lateral.c -- the table function operator: `FROM s, f(s.x, ...)` /
 * `FROM s CROSS JOIN LATERAL f(...)`. For each chunk it evaluates the
 * function's arguments over the input rows, calls the function once over the
 * whole chunk (expr/udf.c lm_udtf_eval: one Arrow struct array in, the output
 * columns and each output row's parent row out), and emits the joined rows:
 * the parent's columns gathered by the parent index, then the function's
 * columns, then -- over a changelog (EMIT CHANGES, a view) -- the parent's
 * _weight, so that every joined row weighs what its parent row does. An
 * input row with no output row joins nothing (CROSS JOIN).
 *
 * Stateless (no snapshot); the time column is one of the parent's, so
 * watermarks pass through unchanged and windows downstream see each output
 * row at its parent's time. A failed call emits nothing of the chunk: the
 * error goes to the stream's budget as a scalar function's does (map.c).
 * Memory comes from the operator's evaluation context, reset per chunk.
 * Runs on the thread that owns the stream's partition.
 */
#include "op/op.h"

#include "op/view.h"
#include "util/util.h"

typedef struct lateral_op {
  lm_op base;
  lm_lateral_spec spec;
  lm_eval_ctx* ctx;
  lm_vec* outs; /* spec.in_ncols + the function's columns */
} lateral_op;

laminar_code lm_op_lateral_apply(lm_eval_ctx* ctx, const lm_lateral_spec* spec,
                                 const lm_vec* cols, const uint32_t* sel, int64_t n,
                                 lm_vec* out, const uint32_t** out_parent,
                                 int64_t* out_m) {
  *out_m = 0;
  *out_parent = NULL;
  if (n == 0) return LAMINAR_OK;
  lm_vec* args =
      lm_eval_ctx_alloc(ctx, sizeof(lm_vec) * (size_t)(spec->nargs ? spec->nargs : 1));
  if (args == NULL) return LAMINAR_ERR_NOMEM;
  for (int32_t i = 0; i < spec->nargs; i++)
    LM_TRY(lm_expr_eval(ctx, spec->args[i], cols, sel, n, &args[i]));
  const uint32_t* parent;
  int64_t m;
  LM_TRY(lm_udtf_eval(ctx, spec->fn, args, n, out + spec->in_ncols, &parent, &m));
  if (m == 0) return LAMINAR_OK;
  if (sel != NULL) { /* parents are positions in the selection */
    uint32_t* rows = lm_eval_ctx_alloc(ctx, sizeof(uint32_t) * (size_t)m);
    if (rows == NULL) return LAMINAR_ERR_NOMEM;
    for (int64_t k = 0; k < m; k++) rows[k] = sel[parent[k]];
    parent = rows;
  }
  for (int32_t c = 0; c < spec->in_ncols; c++)
    LM_TRY(lm_op_gather(ctx, &cols[c], parent, m, &out[c]));
  if (spec->weight_col >= 0) {
    int32_t at = spec->in_ncols + lm_udtf_ncols(spec->fn);
    LM_TRY(lm_op_gather(ctx, &cols[spec->weight_col], parent, m, &out[at]));
  }
  *out_parent = parent;
  *out_m = m;
  return LAMINAR_OK;
}

static laminar_code lateral_on_chunk(lm_op* base, const lm_chunk* in) {
  lateral_op* op = (lateral_op*)base;
  lm_eval_ctx_reset(op->ctx);
  const uint32_t* parent;
  int64_t m;
  laminar_code rc = lm_op_lateral_apply(op->ctx, &op->spec, in->cols, in->sel, in->nrows,
                                        op->outs, &parent, &m);
  if (rc != LAMINAR_OK) {
    /* A user-defined function's text is recorded for the stream's error
     * (nothing was emitted), as map.c does. */
    if (lm_expr_udf_failed(rc))
      lm_state_budget_fail(op->base.budget, rc, "%s", lm_eval_ctx_error(op->ctx));
    return rc;
  }
  if (m == 0) return LAMINAR_OK;
  lm_chunk out = {m, op->base.out_schema.ncols, op->outs, NULL};
  return lm_op_emit(base, &out);
}

static void lateral_destroy(lm_op* base) {
  lateral_op* op = (lateral_op*)base;
  lm_eval_ctx_destroy(op->ctx);
  lm_free(op->outs);
  lm_free(op);
}

static const lm_op_vtable lateral_vtable = {
    .name = "lateral",
    .on_chunk = lateral_on_chunk,
    .takes_sel = true, /* a partition's rows of the pushed batch (rt/part.c) */
    .on_watermark = NULL,
    .snapshot = NULL, /* stateless */
    .restore = NULL,
    .destroy = lateral_destroy,
};

laminar_code lm_op_lateral_create(const lm_lateral_spec* spec,
                                  const lm_schema* out_schema, lm_op** out) {
  *out = NULL;
  if (out_schema->ncols !=
      spec->in_ncols + lm_udtf_ncols(spec->fn) + (spec->weight_col >= 0))
    return LAMINAR_ERR_INTERNAL;
  lateral_op* op = lm_calloc(1, sizeof *op);
  if (op == NULL) return LAMINAR_ERR_NOMEM;
  op->base.vt = &lateral_vtable;
  op->spec = *spec;
  op->outs = lm_calloc((size_t)out_schema->ncols, sizeof(lm_vec));
  if (op->outs == NULL || lm_eval_ctx_create(&op->ctx) != LAMINAR_OK ||
      lm_schema_copy(out_schema, &op->base.out_schema) != 0) {
    lm_schema_free(&op->base.out_schema);
    lateral_destroy(&op->base);
    return LAMINAR_ERR_NOMEM;
  }
  *out = &op->base;
  return LAMINAR_OK;
}
