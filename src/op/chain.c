/*
 * chain.c -- driving a chain of operators: chunk and watermark propagation,
 * snapshot/restore in order, teardown.
 */
#include "op/op.h"

#include "util/util.h"

laminar_code lm_op_emit(lm_op* op, const lm_chunk* chunk) {
  if (chunk->nrows == 0) return LAMINAR_OK;
  op->rows_out += chunk->nrows;
  if (op->next != NULL) return lm_op_chain_chunk(op->next, chunk);
  if (op->sink != NULL) return op->sink(op->sink_arg, chunk);
  return LAMINAR_OK;
}

laminar_code lm_op_chain_chunk(lm_op* head, const lm_chunk* chunk) {
  head->rows_in += chunk->nrows;
  return head->vt->on_chunk(head, chunk);
}

laminar_code lm_op_chain_watermark(lm_op* head, int64_t watermark_ms) {
  for (lm_op* op = head; op != NULL; op = op->next) {
    if (op->vt->on_watermark != NULL) LM_TRY(op->vt->on_watermark(op, watermark_ms));
  }
  return LAMINAR_OK;
}

laminar_code lm_op_chain_snapshot(const lm_op* head, lm_state_writer* w) {
  for (const lm_op* op = head; op != NULL; op = op->next) {
    if (op->vt->snapshot != NULL) LM_TRY(op->vt->snapshot(op, w));
  }
  return lm_state_writer_status(w);
}

laminar_code lm_op_chain_restore(lm_op* head, lm_state_reader* r, laminar_error* err) {
  for (lm_op* op = head; op != NULL; op = op->next) {
    if (op->vt->restore != NULL) LM_TRY(op->vt->restore(op, r, err));
  }
  return lm_state_reader_status(r, "operator chain", err);
}

laminar_code lm_op_chain_restore_part(lm_op* head, lm_state_reader* r, const lm_op_part_filter* f,
                                      laminar_error* err) {
  for (lm_op* op = head; op != NULL; op = op->next) {
    if (op->vt->restore_part != NULL) {
      LM_TRY(op->vt->restore_part(op, r, f, err));
    } else if (op->vt->restore != NULL) {
      if (f->merge)
        return lm_error_set(err, LAMINAR_ERR_INTERNAL, "%s: state of one partition only",
                            op->vt->name);
      LM_TRY(op->vt->restore(op, r, err));
    }
  }
  return lm_state_reader_status(r, "operator chain", err);
}

void lm_op_chain_destroy(lm_op* head) {
  while (head != NULL) {
    lm_op* next = head->next;
    lm_schema_free(&head->out_schema);
    head->vt->destroy(head);
    head = next;
  }
}
