/*
 * hop.c -- the hop operator (lm_op_hop_vtable): hopping windows with EMIT ON
 * WINDOW CLOSE, on panes (tumbling windows of gcd(size, hop), window_panes.c)
 * and closed by merging or sliding them. Rows go into panes by the window
 * operator's chunk path; the watermark closes windows here.
 *
 * Hopping windows by sliding: when every aggregate of a hopping
 * window on panes can slide (agg/slide.h), the windows closing one after the
 * other are built from one per-key-id state that each pane enters once and
 * leaves once, instead of from merges of their panes (window.c's shared
 * suffix/prefix merges, which remain for the other aggregates). Each closing
 * window then costs the groups of the panes it gains and loses plus its rows.
 *
 * The state covers panes [slide_lo, slide_hi). It stays exact while no pane
 * in it takes rows after it was added; a late row (within the allowed
 * lateness) into such a pane, a snapshot restore, or an error makes the next
 * window rebuild it from its panes. A DOUBLE sum that cancelled too much to
 * trust (agg/slide.h) rebuilds it too, then that window's fresh result stands.
 * Panes leave as windows move past them or, at the latest, when they are
 * recycled (lm_op_slide_drop_pane). Rows go out keyed by key id (the keys
 * the op's keyset holds), in the order the keys entered the window.
 *
 * Runs on the partition's thread; no locks.
 */
#include "op/internal.h"

#include <string.h>

/* Most panes per window that slide (each MIN/MAX queue holds as many). */
#define LM_SLIDE_MAX_PANES 1024
/* Most bytes the per-key-id state may take; beyond, windows merge panes. */
#define LM_SLIDE_MAX_BYTES ((int64_t)64 << 20)

laminar_code lm_op_slide_setup(window_op* op) {
  if (!op->panes || op->keyset == NULL) return LAMINAR_OK;
  int64_t panes = op->out_size / op->spec.size_ms;
  if (panes < 2 || panes > LM_SLIDE_MAX_PANES) return LAMINAR_OK;
  for (int32_t a = 0; a < op->spec.naggs; a++) {
    if (!lm_agg_slide_supported(op->spec.aggs[a].fn, op->keyset->aggs[a].arg_type)) {
      return LAMINAR_OK;
    }
  }
  op->slide = lm_calloc((size_t)op->spec.naggs + 1, sizeof(lm_agg_slide));
  if (op->slide == NULL) return LAMINAR_ERR_NOMEM;
  for (int32_t a = 0; a < op->spec.naggs; a++) {
    lm_agg_slide_init(&op->slide[a], &op->keyset->aggs[a], panes);
  }
  return LAMINAR_OK;
}

void lm_op_slide_free(window_op* op) {
  if (op->slide != NULL) {
    for (int32_t a = 0; a < op->spec.naggs; a++) lm_agg_slide_free(&op->slide[a]);
  }
  lm_free(op->slide);
  lm_free(op->slide_npanes);
  lm_free(op->slide_live);
  lm_free(op->slide_pos);
  op->slide = NULL;
  op->slide_npanes = NULL;
  op->slide_live = op->slide_pos = NULL;
  op->slide_nlive = op->slide_cap = 0;
  op->slide_valid = false;
}

void lm_op_slide_invalidate(window_op* op) { op->slide_valid = false; }

/* Room for every key id of the keyset; over the memory bound the op stops
 * sliding (op->slide NULL afterwards). */
static laminar_code slide_reserve(window_op* op) {
  int64_t need = op->keyset->t.n;
  if (need <= op->slide_cap) return LAMINAR_OK;
  int64_t per_key = 3 * (int64_t)sizeof(uint32_t);
  for (int32_t a = 0; a < op->spec.naggs; a++)
    per_key += lm_agg_slide_key_bytes(&op->slide[a]);
  int64_t ncap = op->slide_cap ? op->slide_cap * 2 : 64;
  while (ncap < need) ncap *= 2;
  if (ncap * per_key > LM_SLIDE_MAX_BYTES) {
    lm_op_slide_free(op);
    return LAMINAR_OK;
  }
  for (int32_t a = 0; a < op->spec.naggs; a++)
    LM_TRY(lm_agg_slide_reserve(&op->slide[a], ncap));
  LM_GROW_ARRAY(op->slide_npanes, ncap);
  LM_GROW_ARRAY(op->slide_live, ncap);
  LM_GROW_ARRAY(op->slide_pos, ncap);
  memset(op->slide_npanes + op->slide_cap, 0,
         sizeof(int32_t) * (size_t)(ncap - op->slide_cap));
  op->slide_cap = ncap;
  return LAMINAR_OK;
}

static int64_t pane_no(const window_op* op, const window* pane) {
  return lm_op_floor_div(pane->start, op->spec.size_ms);
}

static void add_pane(window_op* op, const window* pane) {
  for (int64_t g = 0; g < pane->t.n; g++) {
    uint32_t k = pane->kid[g];
    if (op->slide_npanes[k]++ == 0) {
      op->slide_pos[k] = (uint32_t)op->slide_nlive;
      op->slide_live[op->slide_nlive++] = k;
    }
  }
  int64_t no = pane_no(op, pane);
  for (int32_t a = 0; a < op->spec.naggs; a++) {
    lm_agg_slide_add(&op->slide[a], pane->kid, &pane->aggs[a], pane->t.n, no);
  }
}

/* A key leaving the window is reset (no residue of its sums carries over)
 * and swapped out of the live list. */
static void sub_pane(window_op* op, const window* pane) {
  int64_t no = pane_no(op, pane);
  for (int32_t a = 0; a < op->spec.naggs; a++) {
    lm_agg_slide_sub(&op->slide[a], pane->kid, &pane->aggs[a], pane->t.n, no);
  }
  for (int64_t g = 0; g < pane->t.n; g++) {
    uint32_t k = pane->kid[g];
    if (--op->slide_npanes[k] > 0) continue;
    for (int32_t a = 0; a < op->spec.naggs; a++) lm_agg_slide_reset_key(&op->slide[a], k);
    uint32_t last = op->slide_live[--op->slide_nlive];
    op->slide_live[op->slide_pos[k]] = last;
    op->slide_pos[last] = op->slide_pos[k];
  }
}

/* Make the state cover the panes of window [ws, ws + out_size): slide from
 * the last window, or rebuild from the panes when that is not exact. */
static laminar_code slide_to(window_op* op, int64_t ws) {
  LM_TRY(slide_reserve(op));
  if (op->slide == NULL) return LAMINAR_OK;
  int64_t we;
  if (__builtin_add_overflow(ws, op->out_size, &we)) we = INT64_MAX;
  bool rebuild = !op->slide_valid || ws < op->slide_lo ||
                 lm_op_panes_edited(op, op->slide_lo, op->slide_hi, op->slide_edit);
  if (rebuild) {
    for (int64_t j = 0; j < op->slide_nlive; j++) {
      uint32_t k = op->slide_live[j];
      op->slide_npanes[k] = 0;
      for (int32_t a = 0; a < op->spec.naggs; a++)
        lm_agg_slide_reset_key(&op->slide[a], k);
    }
    op->slide_nlive = 0;
    op->slide_lo = op->slide_hi = ws;
  }
  int64_t cut = ws < op->slide_hi ? ws : op->slide_hi; /* panes before ws leave */
  for (int32_t i = lm_op_open_lower_bound(op, op->slide_lo);
       i < op->nopen && op->open[i]->start < cut; i++) {
    sub_pane(op, op->open[i]);
  }
  int64_t from = op->slide_hi > ws ? op->slide_hi : ws; /* panes up to we enter */
  for (int32_t i = lm_op_open_lower_bound(op, from);
       i < op->nopen && op->open[i]->start < we; i++) {
    add_pane(op, op->open[i]);
  }
  op->slide_lo = ws;
  op->slide_hi = we;
  op->slide_edit = op->edits;
  op->slide_valid = true;
  op->slide_fresh = rebuild;
  return LAMINAR_OK;
}

void lm_op_slide_drop_pane(window_op* op, const window* pane) {
  if (op->slide == NULL || !op->slide_valid || pane->start < op->slide_lo ||
      pane->start >= op->slide_hi) {
    return;
  }
  if (pane->edit > op->slide_edit) { /* it changed since it entered: rebuild */
    op->slide_valid = false;
    return;
  }
  sub_pane(op, pane);
  if (__builtin_add_overflow(pane->start, op->spec.size_ms, &op->slide_lo)) {
    op->slide_lo = INT64_MAX;
  }
}

laminar_code lm_op_slide_put_rows(window_op* op, int64_t ws, bool* out_done) {
  *out_done = false;
  for (;;) {
    LM_TRY(slide_to(op, ws));
    if (op->slide == NULL) return LAMINAR_OK; /* too many keys: merge panes */
    int64_t ng = op->slide_nlive;
    *out_done = true;
    if (ng == 0) return LAMINAR_OK;
    LM_TRY(lm_op_rows_reserve(op, ng));
    int64_t row = op->dn;
    lm_op_put_window_keys(op, ws, op->slide_live, ng, row);
    bool unsafe = false;
    for (int32_t a = 0; a < op->spec.naggs; a++) {
      lm_vec* ov = &op->dvecs[2 + op->spec.nkeys + a];
      lm_agg_slide_finalize(&op->slide[a], op->slide_live, ng,
                            (char*)ov->data + lm_type_width(ov->type) * row,
                            (uint8_t*)ov->nulls + row, &unsafe);
    }
    if (!unsafe || op->slide_fresh) {
      op->dn += ng;
      return LAMINAR_OK;
    }
    op->slide_valid = false; /* a sum cancelled: this window from its panes */
  }
}

/* ---- the operator ---------------------------------------------------------------- */

/* Close the windows the watermark completes (from panes), then give the
 * recycled panes' bytes back to the bound. When closing fails, nothing of
 * them went out and their panes stay: the next advance closes them too
 * (from the watermark the failed one started at). */
static laminar_code hop_on_watermark(lm_op* base, int64_t watermark_ms) {
  window_op* op = (window_op*)base;
  laminar_code rc = LAMINAR_OK;
  if (watermark_ms > op->watermark) {
    int64_t prev = op->close_failed ? op->close_prev : op->watermark;
    op->watermark = watermark_ms;
    rc = lm_op_panes_on_watermark(op, prev);
    op->close_failed = rc != LAMINAR_OK;
    op->close_prev = prev;
    rc = lm_op_window_close_failed(op, rc);
  }
  lm_op_window_account(op, false);
  return rc;
}

const lm_op_vtable lm_op_hop_vtable = {
    .name = "hop",
    .on_chunk = lm_op_window_on_chunk,
    .takes_sel = true,
    .on_watermark = hop_on_watermark,
    .snapshot = lm_op_window_snapshot,
    .restore = lm_op_window_restore,
    .restore_part = lm_op_window_restore_part,
    .destroy = lm_op_window_destroy,
    .freeze = lm_op_window_freeze,
    .write_frozen = lm_op_window_write_frozen,
};
