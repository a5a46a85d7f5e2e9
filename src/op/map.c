/*
 * map.c -- the stateless filter + project operator.
 *
 * One pass per chunk: the filter (if any) produces a selection vector, then
 * each output expression is evaluated over the selected rows only. All
 * intermediate memory comes from the operator's evaluation context, reset at
 * the start of each chunk: no allocation per row, none per chunk once the
 * context has grown to the largest chunk.
 */
#include "op/op.h"

#include "util/util.h"

typedef struct map_op {
  lm_op base;
  const lm_expr* filter;
  const lm_expr* const* exprs;
  int32_t nexprs;
  lm_eval_ctx* ctx;
  lm_vec* outs;
} map_op;

/* A failed evaluation: a user-defined function's text is recorded for the
 * stream's error (nothing was emitted). */
static laminar_code eval_failed(map_op* op, laminar_code rc) {
  if (lm_expr_udf_failed(rc))
    lm_state_budget_fail(op->base.budget, rc, "%s", lm_eval_ctx_error(op->ctx));
  return rc;
}

static laminar_code map_on_chunk(lm_op* base, const lm_chunk* in) {
  map_op* op = (map_op*)base;
  lm_eval_ctx_reset(op->ctx);
  const uint32_t* sel = in->sel; /* the chunk's own selection, if any */
  int64_t n = in->nrows;
  laminar_code rc;
  if (op->filter != NULL) {
    uint32_t* kept = lm_eval_ctx_alloc(op->ctx, sizeof(uint32_t) * (size_t)(n ? n : 1));
    if (kept == NULL) return LAMINAR_ERR_NOMEM;
    rc = lm_expr_filter(op->ctx, op->filter, in->cols, sel, n, kept, &n);
    if (rc != LAMINAR_OK) return eval_failed(op, rc);
    if (n == 0) return LAMINAR_OK;
    if (sel != NULL || n < in->nrows) sel = kept;
  }
  for (int32_t i = 0; i < op->nexprs; i++) {
    rc = lm_expr_eval(op->ctx, op->exprs[i], in->cols, sel, n, &op->outs[i]);
    if (rc != LAMINAR_OK) return eval_failed(op, rc);
  }
  lm_chunk out = {n, op->nexprs, op->outs, NULL};
  return lm_op_emit(base, &out);
}

static void map_destroy(lm_op* base) {
  map_op* op = (map_op*)base;
  lm_eval_ctx_destroy(op->ctx);
  lm_free(op->outs);
  lm_free(op);
}

static const lm_op_vtable map_vtable = {
    .name = "map",
    .on_chunk = map_on_chunk,
    .takes_sel = true,
    .on_watermark = NULL,
    .snapshot = NULL, /* stateless: nothing to save */
    .restore = NULL,
    .destroy = map_destroy,
};

laminar_code lm_op_map_create(const lm_expr* filter, const lm_expr* const* exprs,
                              int32_t nexprs, const lm_schema* out_schema, lm_op** out) {
  *out = NULL;
  map_op* op = lm_calloc(1, sizeof *op);
  if (op == NULL) return LAMINAR_ERR_NOMEM;
  op->base.vt = &map_vtable;
  op->filter = filter;
  op->exprs = exprs;
  op->nexprs = nexprs;
  op->outs = lm_calloc((size_t)(nexprs ? nexprs : 1), sizeof(lm_vec));
  if (op->outs == NULL || lm_eval_ctx_create(&op->ctx) != LAMINAR_OK ||
      lm_schema_copy(out_schema, &op->base.out_schema) != 0) {
    lm_schema_free(&op->base.out_schema);
    map_destroy(&op->base);
    return LAMINAR_ERR_NOMEM;
  }
  *out = &op->base;
  return LAMINAR_OK;
}
