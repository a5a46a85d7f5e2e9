/*
 * keyed_window.c -- the window operator under per-key watermarks (CREATE
 * SOURCE ... WITH (watermark_key = 'col'), docs/SQL.md): each key's windows
 * close on that key's own watermark, so a quiet key is not made late by a
 * busy one.
 *
 * State: the key table (state/keywm.h: key -> largest event time) and, per
 * key, one window operator (window.c) over that key's rows alone, with the
 * watermark it was last given. A chunk's rows are sorted by key (stable, so
 * each key's rows keep their order) and each key's rows go to its operator
 * as a selection of the chunk, all or nothing: every key's operator
 * prepares its rows (everything that can fail, undone on failure) before
 * any commits them (lm_op_window_chunk_prepare / _commit / _abort), so a
 * failure for memory leaves every key as before the chunk -- the key table
 * excepted: keys it added and their largest event times stay, as the
 * source's own watermark counts a refused batch (a retry raises them to
 * the same values). Then each key seen gets its watermark
 * max(largest time - delay, the stream's watermark) -- after the chunk, as a
 * source applies its watermark after the batch that raised it, so a row is
 * never late against its own batch. A key's late rows are judged by its
 * operator against that key's watermark. The stream's watermark (the
 * source's: the least over its active keys, rt/reactor.c) closes every key's
 * windows it passes: a key that went quiet is closed by the others' progress.
 *
 * max_state_bytes: the keys' windows are charged to the stream's bound but
 * a chunk is not refused at it (not yet: each key's operator would check
 * its own share in its prepare); the key table itself is not charged.
 *
 * Bounded state: a key whose own watermark is not ahead of the stream's and
 * that has no open window is dropped (its operator destroyed, its late count
 * kept); if it comes back it starts at the stream's watermark, which is what
 * its windows would close on anyway.
 *
 * Thread-per-core: a stream over a keyed source is routed by the key column
 * alone (plan/planner.c), so each key lives in one partition's operator.
 * Runs on the thread that owns this partition; no locks.
 */
#include "op/op.h"

#include "state/keywm.h"
#include "util/util.h"

#include <string.h>

typedef struct kwin_op {
  lm_op base;
  lm_window_spec spec; /* of each key's window operator (borrowed from the plan) */
  int32_t key_col, ts_col;
  int64_t delay_ms;
  lm_keywm kw;
  lm_op** wins;      /* per key id: its window operator */
  int64_t* applied;  /* per key id: the watermark its operator was given */
  int64_t cap;       /* of wins, applied */
  int64_t watermark; /* the stream's */
  int64_t late_gone; /* late rows of dropped keys' operators */
  /* Scratch, per chunk: each row's key id, the rows sorted by key, per key
   * the count / offset of its rows, the keys seen in first-seen order. */
  uint32_t* kid;
  int64_t kid_cap;
  uint32_t* order;
  int64_t order_cap;
  int64_t* off;
  int64_t off_cap;
  uint32_t* seen;
  int64_t seen_cap;
} kwin_op;

static const lm_op_vtable kwin_vtable;

/* A key operator's output is the keyed operator's. */
static laminar_code kwin_forward(void* arg, const lm_chunk* chunk) {
  return lm_op_emit(&((kwin_op*)arg)->base, chunk);
}

static laminar_code grow_keys(kwin_op* op) {
  int64_t n = lm_keywm_count(&op->kw);
  if (n <= op->cap) return LAMINAR_OK;
  int64_t cap = op->cap > 0 ? op->cap : 16;
  while (cap < n) cap *= 2;
  LM_GROW_ARRAY(op->wins, cap);
  LM_GROW_ARRAY(op->applied, cap);
  LM_GROW_ARRAY(op->off, cap + 1);
  for (int64_t k = op->cap; k < cap; k++) {
    op->wins[k] = NULL;
    op->applied[k] = INT64_MIN;
    op->off[k] = -1;
  }
  op->off_cap = cap;
  op->cap = cap;
  return LAMINAR_OK;
}

/* Key k's window operator, made on its first rows: it starts at the stream's
 * watermark. */
static laminar_code key_window(kwin_op* op, int64_t k) {
  if (op->wins[k] != NULL) return LAMINAR_OK;
  lm_op* w;
  LM_TRY(lm_op_window_create(&op->spec, &op->base.out_schema, &w));
  w->sink = kwin_forward;
  w->sink_arg = op;
  /* Charged to the stream's bound, never refused there (file comment). */
  w->budget = op->base.budget;
  w->checks_bound = false;
  op->wins[k] = w;
  op->applied[k] = INT64_MIN;
  if (op->watermark != INT64_MIN) {
    LM_TRY(lm_op_chain_watermark(w, op->watermark));
    op->applied[k] = op->watermark;
  }
  return LAMINAR_OK;
}

/* Key k's own watermark: its largest event time less the delay. */
static int64_t key_watermark(const kwin_op* op, int64_t k) {
  int64_t t = op->kw.max_ts[k], wm;
  if (t == INT64_MIN || __builtin_sub_overflow(t, op->delay_ms, &wm)) return INT64_MIN;
  return wm;
}

/* Give key k's operator max(its own watermark, the stream's) if that rose. */
static laminar_code advance_key(kwin_op* op, int64_t k) {
  int64_t wm = key_watermark(op, k);
  if (op->watermark > wm) wm = op->watermark;
  if (op->wins[k] == NULL || wm <= op->applied[k]) return LAMINAR_OK;
  op->applied[k] = wm;
  return lm_op_chain_watermark(op->wins[k], wm);
}

static laminar_code kwin_chunk(kwin_op* op, const lm_chunk* in, bool* out_applied) {
  int64_t n = in->nrows;
  if (n == 0) return LAMINAR_OK;
  int64_t len = in->sel != NULL ? (int64_t)in->sel[n - 1] + 1 : n;
  if (len > op->kid_cap) {
    LM_GROW_ARRAY(op->kid, len);
    op->kid_cap = len;
  }
  if (n > op->order_cap) {
    LM_GROW_ARRAY(op->order, n);
    op->order_cap = n;
  }
  /* The keys' largest times rise now; their operators get the watermark
   * after the rows (below). */
  LM_TRY(lm_keywm_observe(&op->kw, &in->cols[op->key_col], &in->cols[op->ts_col], in->sel,
                          n, op->kid, NULL));
  LM_TRY(grow_keys(op));
  if (op->cap > op->seen_cap) {
    LM_GROW_ARRAY(op->seen, op->cap);
    op->seen_cap = op->cap;
  }
  /* Count each key's rows (off[k] -1: not seen in this chunk). */
  int64_t nseen = 0;
  for (int64_t j = 0; j < n; j++) {
    uint32_t k = op->kid[in->sel != NULL ? in->sel[j] : j];
    if (op->off[k] < 0) {
      op->off[k] = 0;
      op->seen[nseen++] = k;
    }
    op->off[k]++;
  }
  int64_t at = 0;
  for (int64_t i = 0; i < nseen; i++) { /* counts -> start offsets */
    int64_t c = op->off[op->seen[i]];
    op->off[op->seen[i]] = at;
    at += c;
  }
  for (int64_t j = 0; j < n; j++) {
    uint32_t r = in->sel != NULL ? in->sel[j] : (uint32_t)j;
    op->order[op->off[op->kid[r]]++] = r;
  }
  /* All or nothing (issue 20): every key's rows are prepared (groups added,
   * updates reserved: lm_op_window_chunk_prepare) before any key's are
   * committed; a key that fails takes the prepared ones back. Each key's
   * chunk reads op->order and in->cols, unchanged until the commits. */
  laminar_code rc = LAMINAR_OK;
  int64_t prepared = 0; /* seen[0 .. prepared) are */
  at = 0;
  for (int64_t i = 0; i < nseen; i++) {
    uint32_t k = op->seen[i];
    int64_t end = op->off[k];
    op->off[k] = -1; /* for every key seen, whatever failed */
    if (rc == LAMINAR_OK) rc = key_window(op, k);
    if (rc == LAMINAR_OK) {
      lm_chunk sub = {end - at, in->ncols, in->cols, &op->order[at]};
      rc = lm_op_window_chunk_prepare(op->wins[k], &sub);
      if (rc == LAMINAR_OK) prepared = i + 1;
    }
    at = end;
  }
  if (rc != LAMINAR_OK) {
    for (int64_t i = 0; i < prepared; i++)
      lm_op_window_chunk_abort(op->wins[op->seen[i]]);
    return rc;
  }
  for (int64_t i = 0; i < nseen; i++) { /* each prepared one is committed */
    laminar_code crc = lm_op_window_chunk_commit(op->wins[op->seen[i]]);
    if (rc == LAMINAR_OK) rc = crc;
  }
  /* The keys' watermarks: the batch is applied whatever fails here (a
   * failed close emits nothing, its windows close at the next advance), so
   * the runtime must not void it. */
  for (int64_t i = 0; i < nseen && rc == LAMINAR_OK; i++)
    rc = advance_key(op, op->seen[i]);
  *out_applied = true;
  if (rc != LAMINAR_OK && op->base.txn != NULL) op->base.txn->applied = true;
  return rc;
}

static laminar_code kwin_on_chunk(lm_op* base, const lm_chunk* in) {
  kwin_op* op = (kwin_op*)base;
  bool applied = false;
  laminar_code rc = kwin_chunk(op, in, &applied);
  /* Out of memory before the commits (the key table, a key's operator):
   * nothing applied. A key's window records its own text first (the first
   * text wins). */
  if (rc == LAMINAR_ERR_NOMEM && !applied)
    lm_state_budget_fail(op->base.budget, rc,
                         "out of memory; the batch was not applied (state unchanged)");
  return rc;
}

/* Drop the keys that hold nothing the stream's watermark would not close:
 * own watermark not ahead of it, no open window. */
static laminar_code kwin_prune(kwin_op* op) {
  int64_t n = lm_keywm_count(&op->kw), gone = 0;
  for (int64_t k = 0; k < n; k++) {
    if (key_watermark(op, k) <= op->watermark &&
        (op->wins[k] == NULL || lm_op_window_state_rows(op->wins[k]) == 0))
      gone++;
  }
  if (gone == 0 || gone * 4 < n) return LAMINAR_OK; /* amortized: a quarter at least */
  bool* keep = lm_malloc((size_t)n * sizeof *keep);
  uint32_t* remap = lm_malloc((size_t)n * sizeof *remap);
  laminar_code rc = keep != NULL && remap != NULL ? LAMINAR_OK : LAMINAR_ERR_NOMEM;
  for (int64_t k = 0; k < n && rc == LAMINAR_OK; k++) {
    keep[k] = !(key_watermark(op, k) <= op->watermark &&
                (op->wins[k] == NULL || lm_op_window_state_rows(op->wins[k]) == 0));
  }
  if (rc == LAMINAR_OK) rc = lm_keywm_compact(&op->kw, keep, remap);
  if (rc == LAMINAR_OK) {
    for (int64_t k = 0; k < n; k++) {
      if (remap[k] == UINT32_MAX) {
        if (op->wins[k] != NULL) {
          op->late_gone += lm_op_window_late_rows(op->wins[k]);
          lm_op_chain_destroy(op->wins[k]);
        }
        continue;
      }
      op->wins[remap[k]] = op->wins[k];
      op->applied[remap[k]] = op->applied[k];
    }
    for (int64_t k = lm_keywm_count(&op->kw); k < n; k++) {
      op->wins[k] = NULL;
      op->applied[k] = INT64_MIN;
    }
  }
  lm_free(keep);
  lm_free(remap);
  return rc == LAMINAR_ERR_NOMEM ? LAMINAR_OK : rc; /* pruned later */
}

static laminar_code kwin_on_watermark(lm_op* base, int64_t watermark_ms) {
  kwin_op* op = (kwin_op*)base;
  if (watermark_ms <= op->watermark) return LAMINAR_OK;
  op->watermark = watermark_ms;
  int64_t n = lm_keywm_count(&op->kw);
  for (int64_t k = 0; k < n; k++) LM_TRY(advance_key(op, k));
  return kwin_prune(op);
}

/* ---- snapshot ---------------------------------------------------------------------- */

static laminar_code kwin_snapshot(const lm_op* base, lm_state_writer* w) {
  const kwin_op* op = (const kwin_op*)base;
  lm_state_put_i64(w, op->watermark);
  lm_state_put_i64(w, op->late_gone);
  int64_t n = lm_keywm_count(&op->kw);
  lm_state_put_i64(w, n);
  for (int64_t k = 0; k < n; k++) {
    lm_keywm_put_one(&op->kw, k, w);
    lm_state_put_i64(w, op->applied[k]);
    lm_state_writer sub;
    lm_state_writer_init(&sub);
    laminar_code rc =
        op->wins[k] != NULL ? op->wins[k]->vt->snapshot(op->wins[k], &sub) : LAMINAR_OK;
    if (rc == LAMINAR_OK) rc = lm_state_writer_status(&sub);
    lm_state_put_bytes(w, sub.data, sub.len);
    lm_state_writer_free(&sub);
    LM_TRY(rc);
  }
  return lm_state_writer_status(w);
}

static void kwin_clear(kwin_op* op) {
  for (int64_t k = 0; k < op->cap; k++) {
    lm_op_chain_destroy(op->wins[k]);
    op->wins[k] = NULL;
    op->applied[k] = INT64_MIN;
  }
  lm_type type = op->kw.t.keys[0].type;
  lm_keywm_free(&op->kw);
  (void)lm_keywm_init(&op->kw, type); /* NOMEM: the restore fails on it below */
  op->watermark = INT64_MIN;
  op->late_gone = 0;
}

static laminar_code kwin_restore_part(lm_op* base, lm_state_reader* r,
                                      const lm_op_part_filter* f, laminar_error* err) {
  kwin_op* op = (kwin_op*)base;
  if (f == NULL || !f->merge) kwin_clear(op);
  if (op->kw.t.keys == NULL) return lm_error_set(err, LAMINAR_ERR_NOMEM, "out of memory");
  int64_t wm = lm_state_get_i64(r), late = lm_state_get_i64(r), n = lm_state_get_i64(r);
  if (wm > op->watermark) op->watermark = wm;
  if (f == NULL || f->late) op->late_gone += late;
  if (n < 0 || n > ((int64_t)1 << 30)) r->failed = true;
  for (int64_t i = 0; i < n && !r->failed; i++) {
    uint32_t k;
    laminar_code rc = lm_keywm_get_one(&op->kw, r, &k);
    int64_t applied = lm_state_get_i64(r);
    lm_str blob = lm_state_get_bytes(r);
    if (rc != LAMINAR_OK) return lm_error_set(err, rc, "out of memory");
    if (r->failed) break;
    if (f != NULL && lm_op_part_of(op->kw.t.hash[k], f->nparts) != f->part) {
      lm_state_table_truncate(&op->kw.t, k); /* another partition's key */
      continue;
    }
    if ((rc = grow_keys(op)) != LAMINAR_OK || (rc = key_window(op, k)) != LAMINAR_OK)
      return lm_error_set(err, rc, "out of memory");
    op->applied[k] = applied;
    if (blob.len > 0) {
      lm_state_reader sub;
      lm_state_reader_init(&sub, blob.ptr, (size_t)blob.len);
      LM_TRY(op->wins[k]->vt->restore(op->wins[k], &sub, err));
    }
  }
  return lm_state_reader_status(r, "keyed window state", err);
}

static laminar_code kwin_restore(lm_op* base, lm_state_reader* r, laminar_error* err) {
  return kwin_restore_part(base, r, NULL, err);
}

static void kwin_destroy(lm_op* base) {
  kwin_op* op = (kwin_op*)base;
  for (int64_t k = 0; k < op->cap; k++) lm_op_chain_destroy(op->wins[k]);
  lm_keywm_free(&op->kw);
  lm_free(op->wins);
  lm_free(op->applied);
  lm_free(op->kid);
  lm_free(op->order);
  lm_free(op->off);
  lm_free(op->seen);
  lm_schema_free(&op->base.out_schema);
  lm_free(op);
}

static const lm_op_vtable kwin_vtable = {
    .name = "keyed_window",
    .on_chunk = kwin_on_chunk,
    .takes_sel = true,
    .on_watermark = kwin_on_watermark,
    .snapshot = kwin_snapshot,
    .restore = kwin_restore,
    .restore_part = kwin_restore_part,
    .destroy = kwin_destroy,
};

laminar_code lm_op_keyed_window_create(const lm_window_spec* spec,
                                       const lm_schema* out_schema, int32_t key_col,
                                       int32_t ts_col, lm_type key_type, int64_t delay_ms,
                                       lm_op** out) {
  *out = NULL;
  if (spec->session || spec->global || spec->emit_changes || spec->changelog)
    return LAMINAR_ERR_INTERNAL;
  kwin_op* op = lm_calloc(1, sizeof *op);
  if (op == NULL) return LAMINAR_ERR_NOMEM;
  op->base.vt = &kwin_vtable;
  op->spec = *spec;
  op->key_col = key_col;
  op->ts_col = ts_col;
  op->delay_ms = delay_ms;
  op->watermark = INT64_MIN;
  if (lm_keywm_init(&op->kw, key_type) != LAMINAR_OK ||
      lm_schema_copy(out_schema, &op->base.out_schema) != 0) {
    kwin_destroy(&op->base);
    return LAMINAR_ERR_NOMEM;
  }
  *out = &op->base;
  return LAMINAR_OK;
}

bool lm_op_is_keyed_window(const lm_op* op) {
  return op != NULL && op->vt == &kwin_vtable;
}

int64_t lm_op_keyed_window_keys(const lm_op* op) {
  return lm_op_is_keyed_window(op) ? lm_keywm_count(&((const kwin_op*)op)->kw) : 0;
}

int64_t lm_op_keyed_window_late_rows(const lm_op* base) {
  const kwin_op* op = (const kwin_op*)base;
  int64_t n = op->late_gone;
  for (int64_t k = 0; k < op->cap; k++) {
    if (op->wins[k] != NULL) n += lm_op_window_late_rows(op->wins[k]);
  }
  return n;
}

int64_t lm_op_keyed_window_state_rows(const lm_op* base) {
  const kwin_op* op = (const kwin_op*)base;
  int64_t n = 0;
  for (int64_t k = 0; k < op->cap; k++) {
    if (op->wins[k] != NULL) n += lm_op_window_state_rows(op->wins[k]);
  }
  return n;
}
