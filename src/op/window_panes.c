/*
 * window_panes.c -- hopping windows with EMIT ON WINDOW CLOSE built from panes
 * (tumbling windows of gcd(size, hop)): a closing window is the merge of its
 * panes' groups, matched by key id, with suffix/prefix merges shared between
 * windows, or slid (op/hop.c). The window operator itself is in window.c, the
 * shared structs in internal.h (docs/ARCHITECTURE.md "Windows").
 */
#include "op/op.h"

#include "op/internal.h"

#include <string.h>

/* The group of `acc` with the keys of group g of pane `src`, added if new. */
laminar_code lm_op_acc_group(window_op* op, window* acc, const window* src, int64_t g,
                             uint32_t* out) {
  uint64_t h = src->t.hash[g];
  int64_t found = lm_state_table_find_row(&acc->t, h, &src->t, g);
  if (found >= 0) {
    *out = (uint32_t)found;
    return LAMINAR_OK;
  }
  uint32_t a;
  LM_TRY(lm_op_group_append(op, acc, h, &a));
  LM_TRY(lm_state_table_copy_keys(&acc->t, a, &src->t, g, true));
  *out = a;
  return LAMINAR_OK;
}

/* Fold pane `pane` (or a merge of panes) into `acc`: groups found by key id
 * (kmap, stamped with `pass`), new ones appended with their key id only (the
 * keys stay in the op's keyset, where emission reads them), then each
 * aggregate merged in one loop. */
static laminar_code acc_add_pane(window_op* op, window* acc, const window* pane,
                                 uint64_t pass) {
  uint32_t* dst = lm_eval_ctx_alloc(op->ctx, sizeof(uint32_t) * (size_t)(pane->t.n + 1));
  if (dst == NULL) return LAMINAR_ERR_NOMEM;
  LM_TRY(lm_op_window_reserve(op, acc, acc->t.n + pane->t.n));
  for (int64_t g = 0; g < pane->t.n; g++) {
    uint32_t k = pane->kid[g];
    if (op->kstamp[k] != pass) {
      op->kstamp[k] = pass;
      uint32_t a = (uint32_t)acc->t.n++;
      if (a >= acc->ninit) {
        for (int32_t f = 0; f < op->spec.naggs; f++)
          lm_agg_states_init_group(&acc->aggs[f], a);
      }
      acc->kid[a] = k; /* its keys: the keyset's group k */
      op->kmap[k] = a;
    }
    dst[g] = op->kmap[k];
  }
  for (int32_t f = 0; f < op->spec.naggs; f++) {
    LM_TRY(lm_agg_merge_many(&acc->aggs[f], dst, &pane->aggs[f], pane->t.n));
  }
  return LAMINAR_OK;
}

void lm_op_put_window_keys(window_op* op, int64_t ws, const uint32_t* kids, int64_t ng,
                           int64_t row) {
  lm_vec* v = op->dvecs;
  int64_t start, end;
  lm_op_window_bounds(op, ws, &start, &end);
  for (int64_t g = 0; g < ng; g++) {
    ((int64_t*)v[0].data)[row + g] = start;
    ((int64_t*)v[1].data)[row + g] = end;
    ((uint8_t*)v[0].nulls)[row + g] = 0;
    ((uint8_t*)v[1].nulls)[row + g] = 0;
  }
  for (int32_t c = 0; c < op->spec.nkeys; c++) { /* a gather loop per key type */
    const lm_state_keycol* ks = &op->keyset->t.keys[c];
    lm_vec* ov = &v[2 + c];
    uint8_t* on = (uint8_t*)ov->nulls + row;
    for (int64_t g = 0; g < ng; g++) on[g] = ks->nulls[kids[g]];
    switch (ks->type) {
      case LM_TYPE_BINARY:
      case LM_TYPE_STRING:
        for (int64_t g = 0; g < ng; g++) ((lm_str*)ov->data)[row + g] = ks->s[kids[g]];
        break;
      case LM_TYPE_DOUBLE:
        for (int64_t g = 0; g < ng; g++) ((double*)ov->data)[row + g] = ks->d[kids[g]];
        break;
      case LM_TYPE_DATE:
      case LM_TYPE_INT32:
      case LM_TYPE_INT16:
      case LM_TYPE_INT8:
      case LM_TYPE_FLOAT:
      case LM_TYPE_BOOL:
        for (int64_t g = 0; g < ng; g++)
          lm_state_table_put_value(ov, ks, kids[g], row + g);
        break;
      default:
        for (int64_t g = 0; g < ng; g++) ((int64_t*)ov->data)[row + g] = ks->i[kids[g]];
        break;
    }
  }
}

/* Every group of window w (built from panes: keys by key id) as rows
 * (columnar) into the row buffer. */
static laminar_code put_window_rows(window_op* op, const window* w) {
  int64_t ng = w->t.n;
  if (ng == 0) return LAMINAR_OK;
  LM_TRY(lm_op_rows_reserve(op, ng));
  int64_t row = op->dn;
  lm_vec* v = op->dvecs;
  lm_op_put_window_keys(op, w->start, w->kid, ng, row);
  for (int32_t a = 0; a < op->spec.naggs; a++) {
    lm_vec* ov = &v[2 + op->spec.nkeys + a];
    lm_agg_finalize(&w->aggs[a], 0, ng, (char*)ov->data + lm_type_width(ov->type) * row,
                    (uint8_t*)ov->nulls + row);
  }
  op->dn += ng;
  return LAMINAR_OK;
}

/* The string results of rows from .. dn of the row buffer copied into the
 * eval context: they borrowed the merged state, which the next window
 * reuses, and go out with the windows after it. */
static laminar_code own_strings(window_op* op, int64_t from) {
  for (int32_t a = 0; a < op->spec.naggs; a++) {
    lm_vec* ov = &op->dvecs[2 + op->spec.nkeys + a];
    if (!lm_type_is_bytes(ov->type)) continue;
    lm_str* v = (lm_str*)ov->data;
    int64_t bytes = 0;
    for (int64_t r = from; r < op->dn; r++) bytes += v[r].len;
    if (bytes == 0) continue;
    char* to = lm_eval_ctx_alloc(op->ctx, (size_t)bytes);
    if (to == NULL) return LAMINAR_ERR_NOMEM;
    for (int64_t r = from; r < op->dn; r++) {
      if (v[r].len == 0) continue;
      memcpy(to, v[r].ptr, (size_t)v[r].len);
      v[r].ptr = to;
      to += v[r].len;
    }
  }
  return LAMINAR_OK;
}

/* Map the key ids of dst's groups to them for merge pass `pass`. */
static void acc_restamp(window_op* op, const window* dst, uint64_t pass) {
  for (int64_t g = 0; g < dst->t.n; g++) {
    op->kmap[dst->kid[g]] = (uint32_t)g;
    op->kstamp[dst->kid[g]] = pass;
  }
}

/* Merge the open panes starting in [lo, hi) into dst (its groups kept), in start order. */
static laminar_code merge_panes_into(window_op* op, window* dst, int64_t lo, int64_t hi) {
  uint64_t pass = ++op->pass;
  acc_restamp(op, dst, pass);
  for (int32_t i = lm_op_open_lower_bound(op, lo);
       i < op->nopen && op->open[i]->start < hi; i++) {
    LM_TRY(acc_add_pane(op, dst, op->open[i], pass));
  }
  return LAMINAR_OK;
}

static laminar_code merge_panes(window_op* op, window* dst, int64_t lo, int64_t hi) {
  lm_op_window_reset(op, dst);
  return merge_panes_into(op, dst, lo, hi);
}

/* Whether an open pane starting in [lo, hi) took rows after edit count `since`. */
bool lm_op_panes_edited(const window_op* op, int64_t lo, int64_t hi, uint64_t since) {
  for (int32_t i = lm_op_open_lower_bound(op, lo);
       i < op->nopen && op->open[i]->start < hi; i++) {
    if (op->open[i]->edit > since) return true;
  }
  return false;
}

/* Panes per window for shared merges, or 0 where merging a window's panes
 * directly costs as little (B < 3) or the B suffix merges would hold too much. */
int64_t lm_op_shared_panes(const window_op* op) {
  int64_t b = op->out_size / op->spec.size_ms;
  return b >= 3 && b <= 4096 ? b : 0;
}

/* The window starting at ws from shared merges (see window_op: suf and run),
 * in *out (the caller emits it, then resets it); *out NULL where not shared.
 * Groups come in the order of their first pane and panes merge in start
 * order, as when a window's panes are merged one by one. */
static laminar_code shared_window(window_op* op, int64_t ws, window** out) {
  *out = NULL;
  int64_t nb = lm_op_shared_panes(op), pane = op->spec.size_ms;
  if (nb == 0) return LAMINAR_OK;
  int64_t p = lm_op_floor_div(ws, pane), b = lm_op_floor_div(p, nb), bn;
  int64_t base, next,
      end; /* ms: block b's start, block b + 1's start, the window's end */
  if (__builtin_mul_overflow(b, nb, &bn) || __builtin_mul_overflow(bn, pane, &base) ||
      __builtin_add_overflow(base, nb * pane, &next) ||
      __builtin_add_overflow(next, nb * pane, &end)) {
    return LAMINAR_OK; /* at the ends of the time range: merge directly */
  }
  int64_t r = p - bn;
  end = ws + op->out_size;
  if (op->suf == NULL) {
    op->suf = lm_calloc((size_t)nb, sizeof(window*));
    if (op->suf == NULL) return LAMINAR_ERR_NOMEM;
  }
  /* suf[i]: panes base + i * pane .. next, merged; rebuilt from r down when stale. */
  if (op->suf_block != b || op->suf_from > r ||
      lm_op_panes_edited(op, ws, next, op->suf_edit)) {
    for (int64_t i = nb - 1; i >= r; i--) {
      if (op->suf[i] == NULL) LM_TRY(lm_op_window_new(op, &op->suf[i]));
      window* d = op->suf[i];
      LM_TRY(merge_panes(op, d, base + i * pane, base + (i + 1) * pane));
      if (i + 1 < nb) {
        uint64_t pass = op->pass; /* d's groups are stamped with it */
        LM_TRY(acc_add_pane(op, d, op->suf[i + 1], pass));
      }
    }
    op->suf_block = b;
    op->suf_edit = op->edits;
  }
  op->suf_from = r + 1; /* suf[r] becomes this window below */
  window* w = op->suf[r];
  if (r > 0) { /* plus run: panes next .. end, extended pane by pane */
    if (op->run == NULL) LM_TRY(lm_op_window_new(op, &op->run));
    int64_t last = p + nb - 1; /* the window's last pane */
    if (op->run_block != b + 1 || op->run_last > last ||
        lm_op_panes_edited(op, next, (op->run_last + 1) * pane, op->run_edit)) {
      lm_op_window_reset(op, op->run);
      op->run_block = b + 1;
      op->run_last = (b + 1) * nb - 1;
    }
    LM_TRY(merge_panes_into(op, op->run, (op->run_last + 1) * pane, end));
    op->run_last = last;
    op->run_edit = op->edits;
    uint64_t pass = ++op->pass;
    acc_restamp(op, w, pass);
    LM_TRY(acc_add_pane(op, w, op->run, pass));
  }
  *out = w;
  return LAMINAR_OK;
}

/* The watermark went from `prev` to op->watermark: every window that closed in
 * between and holds a row (it overlaps an open pane) is built (by sliding,
 * op/hop.c: groups in the order their keys entered; else from its panes:
 * groups in the order of their first pane), in start order, and they are
 * emitted as one chunk; only once it went through are the panes no window
 * needs any more recycled. A failure leaves the panes and downstream as
 * before: the caller closes the same windows at the next advance. */
laminar_code lm_op_panes_on_watermark(window_op* op, int64_t prev) {
  int64_t wm = op->watermark, hop = op->out_hop, size = op->out_size;
  int64_t per = 1 + (size - 1) / hop;
  lm_eval_ctx_reset(op->ctx);
  int64_t* starts =
      lm_eval_ctx_alloc(op->ctx, sizeof(int64_t) * (size_t)(op->nopen * per + 1));
  int64_t* mine = lm_eval_ctx_alloc(op->ctx, sizeof(int64_t) * (size_t)per);
  if (starts == NULL || mine == NULL) return LAMINAR_ERR_NOMEM;
  /* The windows of each open pane, newest first, taken in start order: pane
   * starts ascend and so do both ends of their window ranges, so the list
   * comes out sorted and without repeats (no sort: it was 2% of hop). */
  int64_t nstarts = 0, last = 0;
  bool seen = false; /* `last`: the newest window looked at */
  for (int32_t i = 0; i < op->nopen; i++) {
    int64_t p = op->open[i]->start;
    int64_t ws, n = 0;
    if (!lm_op_window_floor(p, hop, &ws))
      ws = INT64_MIN; /* not reached: see window_close */
    for (int64_t j = 0; j < per; j++) {
      int64_t end;
      if (__builtin_add_overflow(ws, size, &end)) end = INT64_MAX;
      if (end <= p) break; /* older windows end before the pane */
      mine[n++] = ws;
      if (__builtin_sub_overflow(ws, hop, &ws)) break;
    }
    for (int64_t j = n - 1; j >= 0; j--) {
      if (seen && mine[j] <= last) continue; /* a window of an earlier pane */
      seen = true;
      last = mine[j];
      int64_t end, close;
      if (__builtin_add_overflow(mine[j], size, &end)) end = INT64_MAX;
      if (__builtin_add_overflow(end, op->spec.lateness_ms, &close)) close = INT64_MAX;
      if (close <= wm && close > prev) starts[nstarts++] = mine[j];
    }
  }
  LM_TRY(lm_op_kmap_reserve(op));
  if (op->acc == NULL) LM_TRY(lm_op_window_new(op, &op->acc));
  window* acc = op->acc;
  laminar_code rc = LAMINAR_OK;
  /* The windows closed by this watermark go out as one chunk; a string
   * result borrows the merged state (reset between windows): copied. */
  bool hold = true;
  for (int32_t a = 0; a < op->spec.naggs; a++) {
    lm_agg_fn fn = op->spec.aggs[a].fn;
    if (lm_type_is_bytes(op->spec.aggs[a].result_type) && fn != LM_AGG_COUNT_DISTINCT)
      hold = false;
  }
  for (int64_t k = 0; k < nstarts && rc == LAMINAR_OK; k++) {
    if (k > 0 && starts[k] == starts[k - 1]) continue;
    int64_t ws = starts[k], we, row = op->dn;
    if (__builtin_add_overflow(ws, size, &we)) we = INT64_MAX;
    if (op->slide != NULL) { /* every aggregate slides */
      bool done;
      rc = lm_op_slide_put_rows(op, ws, &done);
      if (rc == LAMINAR_OK && done && !hold) rc = own_strings(op, row);
      if (rc != LAMINAR_OK || done) continue;
    }
    window* built = NULL;
    rc = shared_window(op, ws, &built);
    if (rc == LAMINAR_OK && built == NULL) { /* no sharing: merge its panes */
      rc = merge_panes(op, acc, ws, we);
      built = acc;
    }
    if (rc == LAMINAR_OK) {
      built->start = ws;
      rc = put_window_rows(op, built);
      if (rc == LAMINAR_OK && !hold) rc = own_strings(op, row);
    }
    lm_op_window_reset(op, built != NULL ? built : acc);
  }
  if (rc == LAMINAR_OK) rc = lm_op_rows_flush(op);
  if (rc != LAMINAR_OK) {
    op->dn = 0; /* held rows may borrow what a failed merge left */
    /* What a failed build left half made is rebuilt from the panes. */
    lm_op_slide_invalidate(op);
    op->suf_block = op->run_block = INT64_MIN;
    return rc;
  }
  int32_t nclose = 0;
  while (nclose < op->nopen &&
         lm_op_window_close_time(op, op->open[nclose]->start) <= wm) {
    lm_op_slide_drop_pane(op, op->open[nclose++]);
  }
  lm_op_window_drop_closed(op, nclose);
  return rc;
}
