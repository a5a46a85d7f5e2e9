/*
 * chain.c -- driving a chain of operators: chunk and watermark propagation,
 * snapshot/restore in order, teardown.
 */
#include "op/op.h"

#include "util/util.h"

#include <inttypes.h>

laminar_code lm_op_emit(lm_op* op, const lm_chunk* chunk) {
  if (chunk->nrows == 0) return LAMINAR_OK;
  op->rows_out += chunk->nrows;
  if (op->next != NULL) return lm_op_chain_chunk(op->next, chunk);
  if (op->sink != NULL) return op->sink(op->sink_arg, chunk);
  return LAMINAR_OK;
}

laminar_code lm_op_chain_chunk(lm_op* head, const lm_chunk* chunk) {
  /* Selections go only to heads that honour them (op.h, lm_chunk). */
  if (LM_NEVER(chunk->sel != NULL && !head->vt->takes_sel)) return LAMINAR_ERR_INTERNAL;
  if (LM_NEVER(head->vt->on_chunk == NULL))
    return LAMINAR_ERR_INTERNAL; /* several inputs */
  head->rows_in += chunk->nrows;
  return head->vt->on_chunk(head, chunk);
}

laminar_code lm_op_chain_watermark(lm_op* head, int64_t watermark_ms) {
  /* A multi-input head takes each input's own watermark and forwards what it
   * can promise itself (lm_op_chain_input_watermark): the least of the
   * inputs' is not its to pass on. */
  if (lm_op_multi_input(head)) return LAMINAR_OK;
  for (lm_op* op = head; op != NULL; op = op->next) {
    if (op->vt->on_watermark != NULL) LM_TRY(op->vt->on_watermark(op, watermark_ms));
  }
  return LAMINAR_OK;
}

laminar_code lm_op_chain_input_chunk(lm_op* head, int32_t input, const lm_chunk* chunk) {
  if (LM_NEVER(!lm_op_multi_input(head) || input < 0 || input >= head->vt->ninputs ||
               (chunk->sel != NULL && !head->vt->takes_sel))) {
    return LAMINAR_ERR_INTERNAL;
  }
  head->rows_in += chunk->nrows;
  return head->vt->on_input_chunk(head, input, chunk);
}

laminar_code lm_op_chain_input_watermark(lm_op* head, int32_t input,
                                         int64_t watermark_ms) {
  if (LM_NEVER(!lm_op_multi_input(head) || input < 0 || input >= head->vt->ninputs)) {
    return LAMINAR_ERR_INTERNAL;
  }
  return head->vt->on_input_watermark(head, input, watermark_ms);
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

/* One operator's part of a frozen chain: held by the operator (frozen), or
 * its snapshot taken in the stall (bytes). */
typedef struct frozen_part {
  const lm_op_vtable* vt;
  void* frozen;
  lm_state_writer bytes;
} frozen_part;

struct lm_op_frozen {
  int32_t n;
  frozen_part parts[];
};

laminar_code lm_op_chain_freeze(lm_op* head, lm_op_frozen** out) {
  *out = NULL;
  int32_t n = 0;
  for (const lm_op* op = head; op != NULL; op = op->next) n++;
  lm_op_frozen* f = lm_calloc(1, sizeof *f + sizeof(frozen_part) * (size_t)n);
  if (f == NULL) return LAMINAR_ERR_NOMEM;
  laminar_code rc = LAMINAR_OK;
  for (lm_op* op = head; op != NULL && rc == LAMINAR_OK; op = op->next) {
    frozen_part* p = &f->parts[f->n++];
    p->vt = op->vt;
    lm_state_writer_init(&p->bytes);
    if (op->vt->freeze != NULL) rc = op->vt->freeze(op, &p->frozen);
    if (rc == LAMINAR_OK && p->frozen == NULL && op->vt->snapshot != NULL) {
      rc = op->vt->snapshot(op, &p->bytes);
      if (rc == LAMINAR_OK) rc = lm_state_writer_status(&p->bytes);
    }
  }
  if (rc != LAMINAR_OK) {
    lm_op_chain_write_frozen(f, NULL);
    return rc;
  }
  *out = f;
  return LAMINAR_OK;
}

laminar_code lm_op_chain_write_frozen(lm_op_frozen* f, lm_state_writer* w) {
  if (f == NULL) return LAMINAR_OK;
  laminar_code rc = LAMINAR_OK;
  for (int32_t i = 0; i < f->n; i++) {
    frozen_part* p = &f->parts[i];
    if (p->frozen != NULL) {
      laminar_code r = p->vt->write_frozen(p->frozen, rc == LAMINAR_OK ? w : NULL);
      if (rc == LAMINAR_OK) rc = r;
    } else if (w != NULL && rc == LAMINAR_OK) {
      lm_state_put_raw(w, p->bytes.data, p->bytes.len);
    }
    lm_state_writer_free(&p->bytes);
  }
  lm_free(f);
  if (rc == LAMINAR_OK && w != NULL) rc = lm_state_writer_status(w);
  return rc;
}

laminar_code lm_op_chain_restore_part(lm_op* head, lm_state_reader* r,
                                      const lm_op_part_filter* f, laminar_error* err) {
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

laminar_code lm_op_account(lm_op* op, int64_t bytes, bool check) {
  if (op->budget == NULL || bytes == op->charged) return LAMINAR_OK;
  if (bytes < op->charged) {
    lm_state_release(op->budget, op->charged - bytes);
  } else if (check) {
    LM_TRY(lm_state_charge(op->budget, bytes - op->charged));
  } else {
    lm_state_budget* b = op->budget;
    for (lm_state_budget* p = b; p != NULL; p = p->parent) {
      atomic_fetch_add_explicit(&p->used, bytes - op->charged, memory_order_relaxed);
    }
  }
  op->charged = bytes;
  return LAMINAR_OK;
}

laminar_code lm_op_release_failed(lm_op* op, laminar_code rc, int64_t watermark,
                                  const char* what) {
  if (rc != LAMINAR_ERR_NOMEM) return rc;
  return lm_state_budget_fail(
      op->budget, rc,
      "out of memory releasing %s at watermark %" PRId64
      "; nothing of them was emitted, they are released at the "
      "next watermark advance (the input that moved it was applied)",
      what, watermark);
}

void lm_op_chain_set_budget(lm_op* head, lm_state_budget* b) {
  bool first = true;
  for (lm_op* op = head; op != NULL; op = op->next) {
    op->budget = b;
    op->checks_bound = first && op->vt->snapshot != NULL;
    if (op->vt->snapshot != NULL) first = false;
  }
}

void lm_op_chain_set_txn(lm_op* head, lm_op_txn* t) {
  for (lm_op* op = head; op != NULL; op = op->next) op->txn = t;
}

/* ---- a source batch's commit list (op.h) ---------------------------------------- */

void lm_op_txn_begin(lm_op_txn* t, bool active) {
  t->seq++;
  t->n = 0;
  t->active = active;
}

laminar_code lm_op_txn_add(lm_op_txn* t, lm_op_txn_end_fn end, void* a, void* b) {
  if (t->n == t->cap) {
    int32_t ncap = t->cap ? t->cap * 2 : 8;
    LM_GROW_ARRAY(t->entries, ncap);
    t->cap = ncap;
  }
  t->entries[t->n++] = (lm_op_txn_entry){end, a, b};
  return LAMINAR_OK;
}

laminar_code lm_op_txn_end(lm_op_txn* t, bool commit) {
  return lm_op_txn_end_part(t, commit ? t->n : 0);
}

laminar_code lm_op_txn_end_part(lm_op_txn* t, int32_t keep) {
  for (int32_t i = t->n - 1; i >= keep; i--)
    (void)t->entries[i].end(t->entries[i].a, t->entries[i].b, false);
  laminar_code first = LAMINAR_OK;
  for (int32_t i = 0; i < keep && i < t->n; i++) {
    laminar_code rc = t->entries[i].end(t->entries[i].a, t->entries[i].b, true);
    if (first == LAMINAR_OK) first = rc;
  }
  t->n = 0;
  t->active = false;
  return first;
}

void lm_op_txn_free(lm_op_txn* t) {
  lm_free(t->entries);
  *t = (lm_op_txn){0};
}

laminar_code lm_op_txn_join(lm_op* op, lm_op_txn_end_fn end, bool* out_first) {
  *out_first = false;
  if (op->txn_seq == op->txn->seq) return LAMINAR_OK; /* joined this batch */
  LM_TRY(lm_op_txn_add(op->txn, end, op, NULL));
  op->txn_seq = op->txn->seq;
  *out_first = true;
  return LAMINAR_OK;
}

void lm_op_chain_destroy(lm_op* head) {
  while (head != NULL) {
    lm_op* next = head->next;
    lm_state_release(head->budget, head->charged);
    lm_schema_free(&head->out_schema);
    head->vt->destroy(head);
    head = next;
  }
}
