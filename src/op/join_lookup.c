/*
 * join_lookup.c -- the lookup join operator (op.h lm_lookup_spec): each input
 * row joined with its table's row of the key the row gives, read from the
 * table's operator in place (op/view.h lm_op_table_lookup) when the chunk is
 * processed.
 *
 * No state of its own: what a row matches is the table's content when the
 * row is processed, which the table's own operator holds and checkpoints.
 * Runs on the thread that owns the stream and the table (reactor 0).
 */
#include "op/op.h"

#include "op/view.h"
#include "util/util.h"

#include <string.h>

typedef struct lookup_op {
  lm_op base; /* out_schema: the input's columns, then the table's */
  lm_lookup_spec spec;
  const lm_op* table; /* the table's operator; NULL: nothing matches */
  lm_eval_ctx* ctx;   /* per-chunk scratch */
  lm_vec* keys;       /* nkeys evaluated keys */
  lm_vec* outs;       /* lcols + rcols output vectors */
} lookup_op;

static const lm_op_vtable lookup_vtable;

static laminar_code lookup_on_chunk(lm_op* base, const lm_chunk* in) {
  lookup_op* j = (lookup_op*)base;
  int64_t n = in->nrows;
  if (n == 0) return LAMINAR_OK;
  int32_t lcols = j->spec.lcols, rcols = j->spec.rcols;
  lm_eval_ctx_reset(j->ctx);
  uint8_t* found = lm_eval_ctx_alloc(j->ctx, (size_t)n);
  if (found == NULL) return LAMINAR_ERR_NOMEM;
  lm_vec* right = j->outs + lcols;
  if (j->table != NULL) {
    for (int32_t k = 0; k < j->spec.nkeys; k++)
      LM_TRY(lm_expr_eval(j->ctx, j->spec.lkeys[k], in->cols, NULL, n, &j->keys[k]));
    LM_TRY(lm_op_table_lookup(j->table, j->ctx, j->keys, n, right, found));
  } else {
    memset(found, 0, (size_t)n);
  }
  int64_t m = 0;
  for (int64_t r = 0; r < n; r++) m += found[r];
  if (j->table == NULL || (m < n && j->spec.left_outer)) {
    /* Rows without a match padded with NULLs (all of them without a table). */
    for (int32_t c = 0; j->table == NULL && c < rcols; c++) {
      lm_type t = base->out_schema.fields[lcols + c].type;
      uint8_t* data = lm_eval_ctx_alloc(j->ctx, (size_t)lm_type_width(t) * (size_t)n);
      uint8_t* nulls = lm_eval_ctx_alloc(j->ctx, (size_t)n);
      if (data == NULL || nulls == NULL) return LAMINAR_ERR_NOMEM;
      memset(data, 0, (size_t)lm_type_width(t) * (size_t)n);
      memset(nulls, 1, (size_t)n);
      right[c] = (lm_vec){t, n, nulls, data};
    }
  }
  if (j->spec.left_outer || m == n) {
    for (int32_t c = 0; c < lcols; c++) j->outs[c] = in->cols[c];
    lm_chunk out = {n, lcols + rcols, j->outs, NULL};
    return lm_op_emit(base, &out);
  }
  if (m == 0) return LAMINAR_OK;
  /* Inner: only the matched rows. */
  uint32_t* sel = lm_eval_ctx_alloc(j->ctx, sizeof(uint32_t) * (size_t)m);
  if (sel == NULL) return LAMINAR_ERR_NOMEM;
  for (int64_t r = 0, k = 0; r < n; r++)
    if (found[r]) sel[k++] = (uint32_t)r;
  for (int32_t c = 0; c < lcols + rcols; c++) {
    lm_vec whole = c < lcols ? in->cols[c] : right[c - lcols];
    LM_TRY(lm_op_gather(j->ctx, &whole, sel, m, &j->outs[c]));
  }
  lm_chunk out = {m, lcols + rcols, j->outs, NULL};
  return lm_op_emit(base, &out);
}

static laminar_code lookup_snapshot(const lm_op* base, lm_state_writer* w) {
  LM_UNUSED(base);
  return lm_state_writer_status(w); /* nothing held */
}

static laminar_code lookup_restore(lm_op* base, lm_state_reader* r, laminar_error* err) {
  LM_UNUSED(base);
  LM_UNUSED(r);
  LM_UNUSED(err);
  return LAMINAR_OK;
}

static void lookup_destroy(lm_op* base) {
  lookup_op* j = (lookup_op*)base;
  lm_eval_ctx_destroy(j->ctx);
  lm_free(j->keys);
  lm_free(j->outs);
  lm_schema_free(&j->base.out_schema);
  lm_free(j);
}

static const lm_op_vtable lookup_vtable = {
    .name = "lookup_join",
    .on_chunk = lookup_on_chunk,
    .on_watermark = NULL, /* no time-based state: the watermark passes */
    .snapshot = lookup_snapshot,
    .restore = lookup_restore,
    .destroy = lookup_destroy,
};

laminar_code lm_op_lookup_create(const lm_lookup_spec* spec, const lm_schema* out_schema,
                                 lm_op** out) {
  *out = NULL;
  lookup_op* j = lm_calloc(1, sizeof *j);
  if (j == NULL) return LAMINAR_ERR_NOMEM;
  j->base.vt = &lookup_vtable;
  j->spec = *spec;
  lm_schema_init_empty(&j->base.out_schema);
  bool ok =
      lm_eval_ctx_create(&j->ctx) == LAMINAR_OK &&
      (j->keys = lm_calloc((size_t)(spec->nkeys ? spec->nkeys : 1), sizeof(lm_vec))) !=
          NULL &&
      (j->outs = lm_calloc((size_t)(spec->lcols + spec->rcols + 1), sizeof(lm_vec))) !=
          NULL &&
      lm_schema_copy(out_schema, &j->base.out_schema) == 0;
  if (!ok) {
    lookup_destroy(&j->base);
    return LAMINAR_ERR_NOMEM;
  }
  *out = &j->base;
  return LAMINAR_OK;
}

void lm_op_lookup_set_table(lm_op* op, const lm_op* table) {
  ((lookup_op*)op)->table = table;
}

bool lm_op_is_lookup(const lm_op* op) { return op != NULL && op->vt == &lookup_vtable; }
