/*
 * window.c -- the window operator: tumbling and hopping windows (hopping ones on
 * panes), GROUP BY without a window, EMIT ON WINDOW CLOSE and EMIT CHANGES, over
 * insert-only or changelog input; session windows are an operator of their
 * own in session.c,
 * checkpoints by copy-on-write in window_frozen.c, hopping windows built
 * from panes in window_panes.c, the shared structs in internal.h.
 *
 * State: the open windows, sorted by start. Each window owns a keyed state
 * table (state/table.h: group key -> group id, the keys in columnar arrays)
 * and one lm_agg_states per aggregate, indexed by group id. Closed windows are
 * recycled (their arrays keep their capacity), so a steady stream allocates
 * nothing once the first few windows have grown.
 *
 * A chunk is processed in four vectorized passes: evaluate key and argument
 * expressions; assign each row its windows (one for a tumbling window, up to
 * ceil(size / hop) for a hopping one, as (row, window) pairs; dropping and
 * counting rows whose windows have all closed); hash the keys of every row;
 * then, per window present in
 * the chunk, probe group ids for its rows and run each aggregate's update loop
 * over them. A watermark advance emits every window whose end it reached as one
 * chunk, windows in start order, groups in first-seen order, then recycles them.
 *
 * Runs on the thread that owns this partition; no locks.
 */
#include "op/op.h"

#include "op/internal.h"
#include "op/view.h"

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- group keys ------------------------------------------------------------ */

void lm_op_hash_keys(const lm_vec* keys, int32_t nkeys, const uint32_t* sel, int64_t n,
                     uint64_t* h) {
  lm_state_hash_rows(keys, nkeys, sel, n, h);
}

/* ---- windows ----------------------------------------------------------------- */

void lm_op_window_free(window_op* op, window* w) {
  if (w == NULL) return;
  if (w->cow != NULL) lm_op_window_cow_release(op, w);
  for (int32_t a = 0; a < op->spec.naggs; a++) lm_agg_states_free(&w->aggs[a]);
  lm_state_table_free(&w->t);
  lm_free(w->aggs);
  lm_free(w->nrows);
  lm_free(w->live);
  lm_free(w->stamp);
  lm_free(w->last);
  lm_free(w->kid);
  lm_free(w);
}

laminar_code lm_op_window_new(window_op* op, window** out) {
  window* w = lm_calloc(1, sizeof *w);
  if (w == NULL) return LAMINAR_ERR_NOMEM;
  w->aggs = lm_calloc((size_t)(op->spec.naggs + 1), sizeof(lm_agg_states));
  if (w->aggs == NULL ||
      lm_state_table_init(&w->t, op->key_types, op->spec.nkeys) != LAMINAR_OK) {
    lm_free(w->aggs);
    lm_free(w);
    return LAMINAR_ERR_NOMEM;
  }
  for (int32_t a = 0; a < op->spec.naggs; a++) {
    const lm_agg_spec* spec = &op->spec.aggs[a];
    lm_agg_states_init(&w->aggs[a], spec, spec->arg ? spec->arg->type : LM_TYPE_NULL);
    lm_agg_states_set_report(&w->aggs[a], &op->agg_report);
    if (op->spec.changelog) lm_agg_states_set_weighted(&w->aggs[a]);
  }
  *out = w;
  return LAMINAR_OK;
}

/* Empty a window, keeping its capacity. As many groups as it held get their
 * empty aggregate states here, in one block write per field (the next window
 * usually has about as many), instead of one group at a time as they come. */
void lm_op_window_reset(window_op* op, window* w) {
  for (int32_t a = 0; a < op->spec.naggs; a++) {
    lm_agg_states_clear(&w->aggs[a]);
    lm_agg_states_init_range(&w->aggs[a], 0, w->t.n);
  }
  if (w->t.n > w->ninit) w->ninit = w->t.n; /* [t.n, ninit) were untouched */
  lm_state_table_reset(&w->t);
}

void lm_op_window_recycle(window_op* op, window* w) {
  if (op->nspare == op->cap_open) { /* more windows than open slots (copies): one goes */
    lm_op_window_free(op, w);
    return;
  }
  lm_op_window_reset(op, w);
  op->spare[op->nspare++] = w;
}


laminar_code lm_op_window_reserve(window_op* op, window* w, int64_t cap) {
  if (cap <= w->cap) return LAMINAR_OK;
  LM_TRY(lm_state_table_reserve(&w->t, cap));
  int64_t ncap = w->t.cap;
  for (int32_t a = 0; a < op->spec.naggs; a++) {
    LM_TRY(lm_agg_states_reserve(&w->aggs[a], ncap));
  }
  if (op->track) {
    LM_GROW_ARRAY(w->nrows, ncap);
    LM_GROW_ARRAY(w->live, ncap);
    LM_GROW_ARRAY(w->stamp, ncap);
    if (op->spec.ttl_ms > 0) LM_GROW_ARRAY(w->last, ncap);
  }
  if (op->panes) LM_GROW_ARRAY(w->kid, ncap);
  w->cap = ncap;
  return LAMINAR_OK;
}

/* Append a new empty group; the caller fills its keys. */
laminar_code lm_op_group_append(window_op* op, window* w, uint64_t h, uint32_t* out_gid) {
  LM_TRY(lm_state_table_grow_index(&w->t));
  LM_TRY(lm_op_window_reserve(op, w, w->t.n + 1));
  uint32_t g = lm_state_table_push(&w->t, h);
  if (g >= w->ninit) {
    for (int32_t a = 0; a < op->spec.naggs; a++) lm_agg_states_init_group(&w->aggs[a], g);
  }
  if (op->track) {
    w->nrows[g] = 0;
    w->live[g] = 0;
    w->stamp[g] = 0;
    if (w->last != NULL) w->last[g] = INT64_MIN;
  }
  *out_gid = g;
  return LAMINAR_OK;
}

laminar_code lm_op_group_find_or_add(window_op* op, window* w, uint64_t h,
                                     const lm_vec* keys, int64_t row, uint32_t* out_gid) {
  int64_t found = lm_state_table_find(&w->t, h, keys, row);
  if (found >= 0) {
    *out_gid = (uint32_t)found;
    return LAMINAR_OK;
  }
  uint32_t g;
  LM_TRY(lm_op_group_append(op, w, h, &g));
  if (op->panes && w != op->keyset) {
    /* A pane's new group: its key id, and its keys borrowed from the keyset
     * (which keeps every key for the op's life). */
    uint32_t k;
    LM_TRY(lm_op_group_find_or_add(op, op->keyset, h, keys, row, &k));
    w->kid[g] = k;
    LM_TRY(lm_state_table_copy_keys(&w->t, g, &op->keyset->t, k, false));
    *out_gid = g;
    return LAMINAR_OK;
  }
  LM_TRY(lm_state_table_set_keys(&w->t, g, keys, row));
  *out_gid = g;
  return LAMINAR_OK;
}

/* The group of each row sel[j] of window w (hashes by row) into gids[j],
 * adding new groups. A single key column without NULLs (the common GROUP BY)
 * probes with lm_state_table_find1, comparing the value directly; new groups
 * and other key shapes go through lm_op_group_find_or_add. The same groups,
 * in the same order, either way. */
static laminar_code groups_find_or_add(window_op* op, window* w, const uint32_t* sel,
                                       int64_t m, const uint64_t* hashes,
                                       uint32_t* gids) {
  if (LM_UNLIKELY(w->cow != NULL))
    return lm_op_window_cow_groups(op, w, sel, m, hashes, gids);
  const lm_vec* key = &op->key_vecs[0];
  lm_type t = op->spec.nkeys == 1 ? key->type : LM_TYPE_NULL;
  bool fast = key->nulls == NULL &&
              (lm_type_is_bytes(t) || t == LM_TYPE_INT64 || t == LM_TYPE_TIMESTAMP);
  int64_t j = 0;
  while (fast && j < m) {
    /* Re-read after each slow call: adding a group may grow the table. A
     * copy: the stores to gids cannot alias its fields. */
    const lm_state_table tab = w->t;
    for (; j < m; j++) {
      int64_t g =
          lm_state_table_find1(&tab, lm_type_is_bytes(t), hashes[sel[j]], key, sel[j]);
      if (g < 0) break;
      gids[j] = (uint32_t)g;
    }
    if (j < m) {
      LM_TRY(
          lm_op_group_find_or_add(op, w, hashes[sel[j]], op->key_vecs, sel[j], &gids[j]));
      j++;
    }
  }
  for (; j < m; j++) {
    LM_TRY(
        lm_op_group_find_or_add(op, w, hashes[sel[j]], op->key_vecs, sel[j], &gids[j]));
  }
  return LAMINAR_OK;
}

laminar_code lm_op_groups_find_or_add(window_op* op, window* w, const uint32_t* sel,
                                      int64_t m, const uint64_t* hashes, uint32_t* gids) {
  return groups_find_or_add(op, w, sel, m, hashes, gids);
}

/* Room in kmap/kstamp for every key id of the keyset. */
laminar_code lm_op_kmap_reserve(window_op* op) {
  if (op->kmap_cap >= op->keyset->t.n) return LAMINAR_OK;
  int64_t ncap = op->keyset->t.n * 2;
  LM_GROW_ARRAY(op->kmap, ncap);
  LM_GROW_ARRAY(op->kstamp, ncap);
  memset(op->kstamp + op->kmap_cap, 0, sizeof(uint64_t) * (size_t)(ncap - op->kmap_cap));
  op->kmap_cap = ncap;
  return LAMINAR_OK;
}

/* groups_find_or_add for a pane: each row's key id from the keyset (one probe,
 * nearly always a hit), then its pane group by key id through kmap (stamped
 * with a fresh pass from the pane's groups), new groups appended with their
 * key id and keys borrowed from the keyset. Panes keep no hash table of their
 * own: with ~1 row per group and pane (hop's 100 ms panes), most rows open a
 * group, and a table insert plus a second probe for each cost more. */
static laminar_code pane_groups(window_op* op, window* pane, const uint32_t* sel,
                                int64_t m, const uint64_t* hashes, bool adding,
                                uint32_t* gids) {
  LM_TRY(groups_find_or_add(op, op->keyset, sel, m, hashes, gids)); /* key ids */
  if (adding) LM_TRY(lm_op_kmap_reserve(op));
  uint64_t pass = ++op->pass;
  uint32_t* kmap = op->kmap;
  uint64_t* kstamp = op->kstamp;
  for (int64_t g = 0; g < pane->t.n; g++) {
    kmap[pane->kid[g]] = (uint32_t)g;
    kstamp[pane->kid[g]] = pass;
  }
  int64_t first = pane->t.n; /* new groups from here: at most m, and the keyset's */
  int64_t most = pane->t.n + m < op->keyset->t.n ? pane->t.n + m : op->keyset->t.n;
  if (adding) LM_TRY(lm_op_window_reserve(op, pane, most)); /* else all there */
  for (int64_t j = 0; j < m; j++) {
    uint32_t k = gids[j];
    if (kstamp[k] != pass) {
      uint32_t g = (uint32_t)pane->t.n++;
      if (g >= pane->ninit) {
        for (int32_t a = 0; a < op->spec.naggs; a++)
          lm_agg_states_init_group(&pane->aggs[a], g);
      }
      pane->kid[g] = k;
      kstamp[k] = pass;
      kmap[k] = g;
    }
    gids[j] = kmap[k];
  }
  /* The new groups' hashes and keys (borrowed), a column at a time. */
  const window* ks = op->keyset;
  for (int64_t g = first; g < pane->t.n; g++) pane->t.hash[g] = ks->t.hash[pane->kid[g]];
  for (int32_t c = 0; c < op->spec.nkeys; c++) {
    lm_state_keycol* to = &pane->t.keys[c];
    const lm_state_keycol* from = &ks->t.keys[c];
    for (int64_t g = first; g < pane->t.n; g++) to->nulls[g] = from->nulls[pane->kid[g]];
    if (lm_type_is_bytes(to->type)) {
      for (int64_t g = first; g < pane->t.n; g++) to->s[g] = from->s[pane->kid[g]];
    } else if (to->type == LM_TYPE_DOUBLE) {
      for (int64_t g = first; g < pane->t.n; g++) to->d[g] = from->d[pane->kid[g]];
    } else {
      for (int64_t g = first; g < pane->t.n; g++) to->i[g] = from->i[pane->kid[g]];
    }
  }
  return LAMINAR_OK;
}

/* The index of the first open pane (or window) starting at or after `start`. */
int32_t lm_op_open_lower_bound(const window_op* op, int64_t start) {
  int32_t lo = 0, hi = op->nopen;
  while (lo < hi) {
    int32_t mid = (lo + hi) / 2;
    if (op->open[mid]->start < start) {
      lo = mid + 1;
    } else {
      hi = mid;
    }
  }
  return lo;
}

/* Find the open window starting at `start`, creating it in sorted position. */
static laminar_code window_get(window_op* op, int64_t start, window** out) {
  int32_t lo = lm_op_open_lower_bound(op, start);
  if (lo < op->nopen && op->open[lo]->start == start) {
    /* acquire: pairs with the checkpoint writer's release when it lets go */
    if (LM_UNLIKELY(atomic_load_explicit(&op->open[lo]->share, memory_order_acquire) !=
                    0)) {
      LM_TRY(lm_op_window_thaw(op, lo));
    }
    *out = op->open[lo];
    return LAMINAR_OK;
  }
  if (op->nopen == op->cap_open) {
    int32_t ncap = op->cap_open ? op->cap_open * 2 : 8;
    LM_GROW_ARRAY(op->open, ncap);
    LM_GROW_ARRAY(op->spare, ncap);
    op->cap_open = ncap;
  }
  window* w;
  if (op->nspare > 0) {
    w = op->spare[--op->nspare];
  } else {
    LM_TRY(lm_op_window_new(op, &w));
  }
  w->start = start;
  memmove(&op->open[lo + 1], &op->open[lo], sizeof(window*) * (size_t)(op->nopen - lo));
  op->open[lo] = w;
  op->nopen++;
  *out = w;
  return LAMINAR_OK;
}

/* ---- rows built one group at a time ------------------------------------------ */

/* Room for `more` rows in the op's row buffer. */
laminar_code lm_op_rows_reserve(window_op* op, int64_t more) {
  if (op->dn + more <= op->dcap) return LAMINAR_OK;
  int64_t ncap = op->dcap ? op->dcap * 2 : 256;
  while (ncap < op->dn + more) ncap *= 2;
  for (int32_t c = 0; c < op->dcols; c++) {
    lm_vec* v = &op->dvecs[c];
    void* data = lm_realloc((void*)v->data, (size_t)(lm_type_width(v->type) * ncap));
    if (data == NULL) return LAMINAR_ERR_NOMEM;
    v->data = data;
    uint8_t* nulls = lm_realloc((void*)v->nulls, (size_t)ncap);
    if (nulls == NULL) return LAMINAR_ERR_NOMEM;
    v->nulls = nulls;
  }
  op->dcap = ncap;
  return LAMINAR_OK;
}

/* Window bounds in the output's unit (micros for a TIMESTAMP time column). */
void lm_op_window_bounds(const window_op* op, int64_t ws, int64_t* start, int64_t* end) {
  int64_t scale = op->spec.time_type == LM_TYPE_TIMESTAMP ? 1000 : 1;
  int64_t e;
  *start = ws * scale;
  if (__builtin_add_overflow(ws, op->out_size, &e) ||
      __builtin_mul_overflow(e, scale, end)) {
    *end = INT64_MAX;
  }
}

/* Append group g of window w as one row (reserved by the caller): bounds, keys,
 * the aggregates' current results, and `weight` when emitting changes. The row
 * borrows key and MIN/MAX strings from the window until it is recycled. */
static void put_row(window_op* op, const window* w, const lm_agg_states* aggs, int64_t ag,
                    int64_t g, int64_t weight) {
  const lm_window_spec* spec = &op->spec;
  int64_t row = op->dn++;
  lm_vec* v = op->dvecs;
  int64_t start, end;
  lm_op_window_bounds(op, w->start, &start, &end);
  ((int64_t*)v[0].data)[row] = start;
  ((int64_t*)v[1].data)[row] = end;
  ((uint8_t*)v[0].nulls)[row] = spec->global;
  ((uint8_t*)v[1].nulls)[row] = spec->global;
  for (int32_t c = 0; c < spec->nkeys; c++)
    lm_state_table_put_value(&v[2 + c], &w->t.keys[c], g, row);
  for (int32_t a = 0; a < spec->naggs; a++) {
    lm_vec* ov = &v[2 + spec->nkeys + a];
    lm_agg_finalize(&aggs[a], ag, 1, (char*)ov->data + lm_type_width(ov->type) * row,
                    (uint8_t*)ov->nulls + row);
  }
  if (spec->emit_changes) {
    lm_vec* wv = &v[2 + spec->nkeys + spec->naggs];
    ((int64_t*)wv->data)[row] = weight;
    ((uint8_t*)wv->nulls)[row] = 0;
  }
}

static void put_group_row(window_op* op, const window* w, int64_t g, int64_t weight) {
  put_row(op, w, w->aggs, g, g, weight);
}

/* Emit the buffered rows as one chunk and empty the buffer. */
laminar_code lm_op_rows_flush(window_op* op) {
  if (op->dn == 0) return LAMINAR_OK;
  laminar_code failed = lm_op_window_agg_failed(op);
  if (failed != LAMINAR_OK) {
    op->dn = 0;
    return failed;
  }
  int32_t ncols = op->base.out_schema.ncols;
  for (int32_t c = 0; c < ncols; c++) op->dvecs[c].len = op->dn;
  lm_chunk out = {op->dn, ncols, op->dvecs, NULL};
  op->dn = 0;
  return lm_op_emit(&op->base, &out);
}

/* ---- chunk processing ------------------------------------------------------- */


/* Rows of a chunk assigned at once: bounds the (row, window) pairs held.
 * Fault-injection builds let a test make it small (util.h). */
#ifdef LAMINAR_FAULT_INJECTION
#define PAIRS_PER_SLICE lm_fault_slice_pairs(65536)
#else
#define PAIRS_PER_SLICE 65536
#endif

/* When the window (or pane) starting at ws stops taking rows: its end plus the
 * allowed lateness; a pane's, when the last window containing it closes. */
int64_t lm_op_window_close_time(const window_op* op, int64_t ws) {
  int64_t base = ws, size = op->spec.size_ms, close;
  if (op->panes) {
    /* Representable: rows whose windows are not never make a pane. */
    if (!lm_op_window_floor(ws, op->out_hop, &base)) base = INT64_MIN;
    size = op->out_size;
  }
  if (__builtin_add_overflow(base, size, &close) ||
      __builtin_add_overflow(close, op->spec.lateness_ms, &close)) {
    return INT64_MAX;
  }
  return close;
}

/* Per-chunk scratch of the window assignment (from the eval context). */
typedef struct assign_scratch {
  int64_t* starts;  /* distinct window starts of the slice */
  int64_t* counts;  /* rows per window, then the bucket cursor */
  int64_t* offsets; /* nwin + 1 */
  uint32_t* prow;   /* (row, window) pairs */
  int32_t* pwin;
  uint32_t* sel; /* rows bucketed by window, arrival order within one */
  /* With aggregate arguments by position (window_op.arg_pos), each pair's
   * row's position in the chunk's selection, and those bucketed like sel;
   * else NULL. */
  uint32_t* ppos;
  uint32_t* spos;
  int32_t* cache; /* local window indices of the last row's windows */
  /* The slice's rows bucketed by window (sel or prow) and their positions
   * (spos or ppos): what update_windows bucketed last. */
  const uint32_t* bsel;
  const uint32_t* bpos;
  bool sorted; /* the pairs are in window order already (rows in time order) */
  /* ON WINDOW CLOSE: the chunk whose late rows go to the late stream before
   * the first update (NULL with EMIT CHANGES: after its rows). */
  const lm_chunk* late_in;
} assign_scratch;

/* The local index of window `start` in this slice, adding it if new. */
static int32_t local_window(assign_scratch* s, int32_t* nwin, int64_t start) {
  for (int32_t i = *nwin - 1; i >= 0; i--) {
    if (s->starts[i] == start) return i;
  }
  s->starts[*nwin] = start;
  s->counts[*nwin] = 0;
  return (*nwin)++;
}

/* The first position from i on (up to end) whose row's time t is not in
 * [q, q + span): the run of rows in one tumbling window. Out of line, so the
 * loop keeps q and span in registers (inlined, they were reloaded per row). */
__attribute__((noinline)) static int64_t scan_window(const int64_t* ts, int64_t i,
                                                     int64_t end, int64_t q,
                                                     uint64_t span) {
  while (i < end && (uint64_t)ts[i] - (uint64_t)q < span) i++;
  return i;
}

/* scan_window over the rows sel[i..end). */
__attribute__((noinline)) static int64_t scan_window_sel(const int64_t* ts,
                                                         const uint32_t* sel, int64_t i,
                                                         int64_t end, int64_t q,
                                                         uint64_t span) {
  while (i < end && (uint64_t)ts[sel[i]] - (uint64_t)q < span) i++;
  return i;
}

/* Pass 1 over the chunk's rows at positions [i0, i1) (row i, or sel[i] with a
 * selection): the windows of each row as (row, window) pairs; rows none of
 * whose windows is open are dropped and counted. Windows start at multiples
 * of `hop` (== size for tumbling ones); a row at t is in every window with
 * start in (t - size, t]. Consecutive rows in the same hop (the common case)
 * reuse the last row's window list. Returns the pair count. With `ppos`
 * (s->ppos), each pair's position i too. Always inlined into assign_windows
 * with sel and ppos NULL or not, so the loop without a selection does not
 * test for one per row. */
__attribute__((always_inline)) static inline int64_t assign_rows(
    window_op* op, const lm_chunk* in, const uint32_t* sel, uint32_t* ppos, int64_t i0,
    int64_t i1, assign_scratch* s, int32_t* out_nwin) {
#define ROW(i) (sel != NULL ? (int64_t)sel[i] : (int64_t)(i))
#define POS(np, i)                              \
  do {                                          \
    if (ppos != NULL) ppos[np] = (uint32_t)(i); \
  } while (0)
  const lm_window_spec* spec = &op->spec;
  const lm_vec* tcol = &in->cols[spec->time_col];
  int64_t size = spec->size_ms, hop = spec->hop_ms;
  int64_t late_wm = lm_op_window_late_wm(op);
  int64_t np = 0;
  int32_t nwin = 0;
  int64_t cache_q = 0;
  int32_t cache_n = -1; /* open windows of hop cache_q, newest first; -1: none yet */
  if (spec->global) {   /* GROUP BY without a window: every row in the one window */
    if (i1 > i0) local_window(s, &nwin, 0);
    for (int64_t i = i0; i < i1; i++) {
      POS(np, i);
      s->prow[np] = (uint32_t)ROW(i);
      s->pwin[np++] = 0;
    }
    if (nwin > 0) s->counts[0] += np;
    s->sorted = true;
    *out_nwin = nwin;
    return np;
  }
  /* Rows per window are counted in a register while the window repeats (a
   * counter in memory made each row wait for the previous row's store). */
  int32_t run_w = -1;
  int64_t run_n = 0;
  bool sorted = true;
  uint64_t fast_span =
      hop >= size ? (uint64_t)size : 0; /* rows at q .. q + size: one window */
  /* Every row has its time in ms (no NULL, not TIMESTAMP). */
  bool plain = tcol->nulls == NULL && tcol->type != LM_TYPE_TIMESTAMP;
  for (int64_t i = i0; i < i1; i++) {
    int64_t k = ROW(i);
    if (tcol->nulls && tcol->nulls[k]) {
      lm_op_late_row(op, k); /* no event time: cannot be placed in a window */
      continue;
    }
    int64_t t = lm_op_time_ms(tcol, k);
    /* Tumbling windows: a row in the last row's window, which is open. */
    if (cache_n == 1 && s->cache[0] == run_w &&
        (uint64_t)t - (uint64_t)cache_q < (uint64_t)fast_span) {
      int64_t i2 = i + 1;
      if (plain) { /* and the rows after it, while they stay in that window */
        i2 = sel != NULL ? scan_window_sel(tcol->data, sel, i2, i1, cache_q, fast_span)
                         : scan_window(tcol->data, i2, i1, cache_q, fast_span);
      }
      for (int64_t j = i; j < i2; j++) {
        POS(np, j);
        s->prow[np] = (uint32_t)ROW(j);
        s->pwin[np++] = run_w;
      }
      run_n += i2 - i;
      i = i2 - 1;
      continue;
    }
    int64_t q = cache_q, out_q;
    if (!(cache_n >= 0 && t >= cache_q &&
          (uint64_t)t - (uint64_t)cache_q < (uint64_t)hop) &&
        (!lm_op_window_floor(t, hop, &q) ||
         (op->panes && !lm_op_window_floor(t, op->out_hop, &out_q)))) {
      lm_op_late_row(op, k); /* its windows would start before INT64_MIN */
      continue;
    }
    if (cache_n < 0 || q != cache_q) {
      cache_q = q;
      cache_n = 0;
      int64_t ws = q;
      for (int32_t j = 0; j < LM_MAX_WINDOWS_PER_ROW; j++) {
        int64_t we, close;
        if (__builtin_add_overflow(ws, size, &we)) we = INT64_MAX;
        close = lm_op_window_close_time(op, ws);
        /* Older windows are in the row's hop only while start > q - size. */
        if (close <= late_wm || we <= q) break;
        s->cache[cache_n++] = local_window(s, &nwin, ws);
        if (__builtin_sub_overflow(ws, hop, &ws)) break;
      }
    }
    /* Windows containing t: start > t - size, i.e. the first ceil((size - (t - q)) / hop). */
    int64_t off = t - q;
    int64_t n_t = off >= size ? 0 : hop >= size ? 1 : 1 + (size - off - 1) / hop;
    int64_t use = n_t < cache_n ? n_t : cache_n;
    if (use == 0) {
      if (n_t > 0) lm_op_late_row(op, k); /* every window of the row has closed */
      continue;
    }
    for (int64_t j = 0; j < use; j++) {
      int32_t w = s->cache[j];
      POS(np, i);
      s->prow[np] = (uint32_t)k;
      s->pwin[np] = w;
      np++;
      if (w != run_w) {
        if (run_w >= 0) s->counts[run_w] += run_n;
        sorted &= w > run_w;
        run_w = w;
        run_n = 0;
      }
      run_n++;
    }
  }
  if (run_w >= 0) s->counts[run_w] += run_n;
  s->sorted = sorted;
  *out_nwin = nwin;
  return np;
#undef POS
#undef ROW
}

static int64_t assign_windows(window_op* op, const lm_chunk* in, const uint32_t* sel,
                              int64_t i0, int64_t i1, assign_scratch* s,
                              int32_t* out_nwin) {
  if (sel == NULL) return assign_rows(op, in, NULL, NULL, i0, i1, s, out_nwin);
  if (s->ppos == NULL) return assign_rows(op, in, sel, NULL, i0, i1, s, out_nwin);
  return assign_rows(op, in, sel, s->ppos, i0, i1, s, out_nwin);
}

/* ---- all-or-nothing chunks and the state bound (issue 20) --------------------- */

/* Bytes window w holds: its groups (hash, table share, keys, tracking), key
 * strings and aggregate states. */
static int64_t window_bytes(const window_op* op, const window* w) {
  int64_t b = w->t.n * op->per_group + (int64_t)w->t.strings.used_bytes;
  for (int32_t a = 0; a < op->spec.naggs; a++)
    b += lm_agg_states_bytes(&w->aggs[a], w->t.n);
  return b;
}

int64_t lm_op_window_bytes(const window_op* op) {
  int64_t b = 0;
  for (int32_t i = 0; i < op->nopen; i++) b += window_bytes(op, op->open[i]);
  if (op->keyset != NULL) b += window_bytes(op, op->keyset);
  /* Sessions: a slot's start, end, key, next, parent, used, stamp; a key's
   * first session (none in a window operator). */
  b += (int64_t)op->s_hw * 41 + op->k_cap * 4;
  for (int32_t a = 0; op->sagg != NULL && a < op->spec.naggs; a++) {
    b += lm_agg_states_bytes(&op->sagg[a], op->s_hw);
  }
  return b;
}

/* Start a chunk's journal (see window_op.jwin). */
void lm_op_window_journal_begin(window_op* op) {
  op->jseq++;
  op->bk_need = 0;
  if (op->held) return; /* the batch's earlier chunks stay journaled and saved */
  op->jn = 0;
  op->jkeyset = op->keyset != NULL ? op->keyset->t.n : -1;
  op->bk_n = 0;
  op->bk_pass = op->pass;
}

/* Room for one more journal entry (before the window it is for changes). */
static laminar_code journal_reserve(window_op* op) {
  if (op->jn < op->jcap) return LAMINAR_OK;
  int32_t ncap = op->jcap ? op->jcap * 2 : 16;
  LM_GROW_ARRAY(op->jwin, ncap);
  LM_GROW_ARRAY(op->jgroups, ncap);
  if (op->spec.emit_changes) {
    LM_GROW_ARRAY(op->jshadow, ncap);
    memset(&op->jshadow[op->jcap], 0, sizeof(window_shadow) * (size_t)(ncap - op->jcap));
  }
  op->jcap = ncap;
  return LAMINAR_OK;
}

/* Window w is about to take groups in this chunk (opened: by it). Needs room
 * (journal_reserve). */
static void journal(window_op* op, window* w, bool opened) {
  if (w->jseq == op->jseq) return;
  w->jseq = op->jseq;
  w->jidx = op->jn;
  op->jwin[op->jn] = w;
  op->jgroups[op->jn++] = opened ? -1 : w->t.n;
}

/* Take window w back to its first g0 groups: the later ones (added by a
 * failed chunk, aggregates not yet updated) hold empty states, kept ready
 * for reuse; the table is rebuilt in place (panes keep none). */
void lm_op_window_truncate(window_op* op, window* w, int64_t g0) {
  if (w->t.n <= g0) return;
  if (w->t.n > w->ninit) w->ninit = w->t.n;
  if (op->panes && w != op->keyset) {
    w->t.n = g0; /* (no index) */
    return;
  }
  lm_state_table_truncate(&w->t, g0);
}

/* Undo the groups and windows the chunk added (before any aggregate was
 * updated): the state is as before it. LAMINAR_OK, or the code of a copy a
 * checkpoint's window needed and could not get (then the chunk is partly
 * applied: the caller says so). */
static laminar_code window_rollback(window_op* op) {
  laminar_code rc = LAMINAR_OK;
  for (int32_t j = op->jn - 1; j >= 0; j--) {
    window* w = op->jwin[j];
    int32_t at = lm_op_open_lower_bound(op, w->start);
    if (at >= op->nopen || op->open[at] != w) continue; /* not open: nothing to undo */
    if (op->jgroups[j] < 0) { /* opened by the chunk: closed again, unseen */
      memmove(&op->open[at], &op->open[at + 1],
              sizeof(window*) * (size_t)(op->nopen - at - 1));
      op->nopen--;
      lm_op_window_let_go(op, w);
      continue;
    }
    if (w->cow != NULL) { /* a checkpoint's copy by blocks: whole first */
      laminar_code crc = lm_op_window_cow_settle(op, at);
      if (crc != LAMINAR_OK) {
        rc = crc;
        continue;
      }
      w = op->open[at];
    }
    lm_op_window_truncate(op, w, op->jgroups[j]);
  }
  if (op->jkeyset >= 0) lm_op_window_truncate(op, op->keyset, op->jkeyset);
  op->jn = 0;
  return rc;
}

/* Bring the op's charge to its bytes now (check: refuse growth past the
 * bound); nothing to do without a bound. */
/* Bytes the updates of the chunk being prepared (op->jseq) may add to value
 * sets (COUNT(DISTINCT), quantiles, MIN/MAX over a changelog): counted when
 * the bound is checked, before those updates. */
static int64_t window_pending_bytes(const window_op* op) {
  int64_t b = 0;
  for (int32_t a = 0; a < op->spec.naggs; a++) {
    for (int32_t i = 0; i < op->nopen; i++)
      b += lm_agg_states_pending_bytes(&op->open[i]->aggs[a], op->jseq);
    if (op->keyset != NULL)
      b += lm_agg_states_pending_bytes(&op->keyset->aggs[a], op->jseq);
    if (op->sagg != NULL) b += lm_agg_states_pending_bytes(&op->sagg[a], op->jseq);
  }
  return b;
}

laminar_code lm_op_window_account(window_op* op, bool check) {
  if (!lm_op_bounded(&op->base)) return LAMINAR_OK;
  int64_t pending = check ? window_pending_bytes(op) : 0;
  return lm_op_account(&op->base, lm_op_window_bytes(op) + pending, check);
}

/* The chunk's groups are in: charge their bytes to the bound. */
static laminar_code window_check_bound(window_op* op) {
  return lm_op_window_account(op, op->base.checks_bound);
}

/* The windows the chunk's first pass journaled made whole (a checkpoint's
 * copy by blocks completed), so that its second pass finds every group
 * without copying anything. */
static laminar_code window_settle(window_op* op) {
  for (int32_t j = 0; j < op->jn; j++) {
    int32_t at = lm_op_open_lower_bound(op, op->jwin[j]->start);
    if (at < op->nopen && op->open[at] == op->jwin[j] && op->jwin[j]->cow != NULL) {
      LM_TRY(lm_op_window_cow_settle(op, at));
      op->jwin[j] = op->open[at];
      op->jwin[j]->jseq = op->jseq;
      op->jwin[j]->jidx = j;
    }
  }
  return LAMINAR_OK;
}

/* A chunk failed before its aggregate updates (rc): take its groups back and
 * say so where the caller reports errors. */
static laminar_code window_fail_clean(window_op* op, laminar_code rc) {
  laminar_code urc = window_rollback(op);
  if (urc != LAMINAR_OK) {
    return lm_state_budget_fail(op->base.budget, urc,
                                "out of memory undoing a failed batch: its groups stay, "
                                "without values");
  }
  if (rc == LAMINAR_ERR_NOMEM) {
    lm_state_budget_fail(op->base.budget, rc,
                         "out of memory adding the batch's groups; the batch was not "
                         "applied (state unchanged)");
  }
  return rc;
}

/* ---- EMIT CHANGES: the chunk's copies of its groups (issue 20) ------------------ */

/* The copy of group g of window w (journaled by this chunk): made on its
 * first touch, its states encoded and decoded (bit for bit), its row count
 * and emitted flag copied. */
static laminar_code shadow_entry(window_op* op, window* w, uint32_t g, uint32_t* out) {
  window_shadow* sh = &op->jshadow[w->jidx];
  if ((int64_t)g < sh->nentry && sh->entry[g] != 0) {
    *out = sh->entry[g] - 1;
    return LAMINAR_OK;
  }
  if ((int64_t)g >= sh->nentry) {
    int64_t ncap = sh->nentry ? sh->nentry : 64;
    while (ncap <= (int64_t)g) ncap *= 2;
    LM_GROW_ARRAY(sh->entry, ncap);
    memset(&sh->entry[sh->nentry], 0, sizeof(uint32_t) * (size_t)(ncap - sh->nentry));
    sh->nentry = ncap;
  }
  if (sh->w == NULL) LM_TRY(lm_op_window_new(op, &sh->w));
  window* c = sh->w;
  int64_t e = sh->n;
  LM_TRY(lm_op_window_reserve(op, c, e + 1));
  if (e >= sh->ngroup) {
    LM_GROW_ARRAY(sh->group, c->cap);
    sh->ngroup = c->cap;
  }
  /* Through the states' snapshot encoding (not flat: strings, value sets,
   * runs), updated again at the commit. */
  for (int32_t a = 0; a < op->spec.naggs; a++) {
    lm_agg_states* to = &c->aggs[a];
    const lm_agg_states* from = &w->aggs[a];
    to->seq = from->seq; /* FIRST/LAST runs: later arrivals stay later */
    op->sh_buf.len = 0;
    op->sh_buf.failed = false;
    lm_agg_snapshot_group(from, g, &op->sh_buf);
    LM_TRY(lm_state_writer_status(&op->sh_buf));
    lm_agg_states_init_group(to, e);
    lm_state_reader r;
    lm_state_reader_init(&r, op->sh_buf.data, op->sh_buf.len);
    LM_TRY(lm_agg_restore_group(to, e, &r));
    if (LM_NEVER(lm_state_reader_status(&r, "window", NULL) != LAMINAR_OK))
      return LAMINAR_ERR_INTERNAL;
  }
  c->nrows[e] = w->nrows[g];
  c->live[e] = w->live[g];
  sh->group[e] = g;
  sh->entry[g] = (uint32_t)e + 1;
  sh->n++;
  *out = (uint32_t)e;
  return LAMINAR_OK;
}

/* Forget the chunk's copies (their memory kept for the next chunk). */
static void shadow_end(window_op* op) {
  if (op->jshadow == NULL) return;
  for (int32_t j = 0; j < op->jn; j++) {
    window_shadow* sh = &op->jshadow[j];
    for (int64_t e = 0; e < sh->n; e++) sh->entry[sh->group[e]] = 0;
    sh->n = 0;
    for (int32_t a = 0; sh->w != NULL && a < op->spec.naggs; a++)
      lm_agg_states_clear(&sh->w->aggs[a]);
  }
}

static void shadow_free(window_op* op) {
  for (int32_t j = 0; op->jshadow != NULL && j < op->jcap; j++) {
    lm_op_window_free(op, op->jshadow[j].w);
    lm_free(op->jshadow[j].group);
    lm_free(op->jshadow[j].entry);
  }
  lm_free(op->jshadow);
  lm_state_writer_free(&op->sh_buf);
  lm_op_window_free(op, op->bk);
  lm_free(op->bk_win);
  lm_free(op->bk_group);
}

/* ---- EMIT CHANGES in place: the chunk's backups of flat groups (issue 20) ------ */

/* Whether the op's EMIT CHANGES chunks update in place with backups: every
 * aggregate's states flat and built in (by the aggregates' functions and
 * types, so known once; w: any window of the op). */
static bool changes_in_place(window_op* op, const window* w) {
  if (op->flat < 0) {
    op->flat = 1;
    for (int32_t a = 0; a < op->spec.naggs && op->flat; a++)
      op->flat = lm_agg_states_flat(&w->aggs[a]) && w->aggs[a].fn != LM_AGG_UDAF;
  }
  return op->flat != 0;
}

/* Room for n backups in the chunk (before its first update). */
static laminar_code backup_reserve(window_op* op, int64_t n) {
  if (n <= op->bk_cap) return LAMINAR_OK;
  if (op->bk == NULL) LM_TRY(lm_op_window_new(op, &op->bk));
  LM_TRY(lm_op_window_reserve(op, op->bk, n));
  LM_GROW_ARRAY(op->bk_win, n);
  LM_GROW_ARRAY(op->bk_group, n);
  op->bk_cap = n;
  return LAMINAR_OK;
}

/* Save group g of window w before its first update in the chunk (reserved:
 * allocates nothing). */
static laminar_code backup_group(window_op* op, window* w, uint32_t g) {
  int64_t e = op->bk_n;
  if (LM_NEVER(e >= op->bk_cap)) return LAMINAR_ERR_INTERNAL;
  window* b = op->bk;
  for (int32_t a = 0; a < op->spec.naggs; a++)
    lm_agg_copy_group(&b->aggs[a], e, &w->aggs[a], g);
  if (w->nrows != NULL) { /* tracked (EMIT CHANGES, a changelog input) */
    b->nrows[e] = w->nrows[g];
    b->live[e] = w->live[g];
  }
  if (w->last != NULL) b->last[e] = w->last[g];
  op->bk_win[e] = w;
  op->bk_group[e] = g;
  op->bk_n = e + 1;
  return LAMINAR_OK;
}

/* A failure after in-place updates: every group updated gets its slots back
 * (allocates nothing, cannot fail); the groups the chunk added stay for
 * window_rollback, their states empty again. */
static void backups_restore(window_op* op) {
  const window* b = op->bk;
  for (int64_t e = op->bk_n - 1; e >= 0; e--) {
    window* w = op->bk_win[e];
    uint32_t g = op->bk_group[e];
    for (int32_t a = 0; a < op->spec.naggs; a++)
      lm_agg_copy_group(&w->aggs[a], g, &b->aggs[a], e);
    if (w->nrows != NULL) {
      w->nrows[g] = b->nrows[e];
      w->live[g] = b->live[e];
    }
    if (w->last != NULL) w->last[g] = b->last[e];
    if (op->panes) w->edit = ++op->edits; /* shared merges over it are stale now */
  }
  op->bk_n = 0;
}

/* The end of a batch the op held (op.h, lm_op_txn): commit forgets the
 * backups and the journal; abort restores the groups and takes back the
 * groups and windows the batch added (allocating nothing), so the op is as
 * before the batch. */
static laminar_code window_txn_end(void* a, void* b, bool commit) {
  (void)b;
  window_op* op = a;
  op->held = false;
  if (!commit) {
    backups_restore(op);
    laminar_code rc = window_rollback(op);
    if (rc != LAMINAR_OK) {
      lm_state_budget_fail(op->base.budget, rc,
                           "out of memory undoing a failed batch: its groups stay, "
                           "without values");
    }
    (void)lm_op_window_account(op, false);
  }
  op->bk_n = 0;
  op->jn = 0;
  return LAMINAR_OK;
}

/* Whether the op holds a batch that fans out (op.h): its states flat and
 * built in (saved slot by slot), not on panes. */
static laminar_code holds_batches(window_op* op, bool* out) {
  *out = false;
  if (op->panes) return LAMINAR_OK;
  if (op->flat < 0) { /* known once, from any window's states */
    window* w;
    LM_TRY(lm_op_window_new(op, &w));
    changes_in_place(op, w);
    lm_op_window_free(op, w);
  }
  *out = op->flat > 0;
  return LAMINAR_OK;
}

/* A chunk of a batch that fans out: the op joins it (before any change) and
 * holds its journal and backups until the batch ends. */
static laminar_code window_join(window_op* op) {
  if (!lm_op_txn_active(&op->base) || op->held) return LAMINAR_OK;
  bool holds, first;
  LM_TRY(holds_batches(op, &holds));
  if (!holds) return LAMINAR_OK;
  return lm_op_txn_join(&op->base, window_txn_end, &first);
}

/* How update_windows runs: GROUPS adds the slice's groups and prepares its
 * updates only (the first pass over a chunk of several slices: what the
 * slices prepare adds up, lm_agg_states_prepare by the chunk's jseq);
 * CHECKED adds them, prepares, checks the bound, then updates (a chunk of one
 * slice); UPDATE finds the groups (all there, their windows the op's own:
 * window_settle) and updates, allocating nothing. With EMIT CHANGES,
 * CHECKED and UPDATE build the chunk's rows: over flat states they update
 * the groups in place, each saved first (change_window); over others they
 * update the chunk's copies (shadow_window), and COMMIT finds the groups and
 * updates the windows (after the rows went downstream), allocating nothing. */
typedef enum update_mode {
  UPDATE_GROUPS,
  UPDATE_CHECKED,
  UPDATE,
  UPDATE_COMMIT
} update_mode;

static laminar_code commit_windows(window_op* op, assign_scratch* s, int32_t nwin,
                                   window** wins, const uint32_t* gids);

/* The argument rows of aggregate a for window i's rows (sel: bucketed). */
static const uint32_t* arg_rows(const window_op* op, int32_t a, const assign_scratch* s,
                                int32_t i, const uint32_t* wsel) {
  return op->spec.aggs[a].order == NULL && op->arg_pos[a] ? s->bpos + s->offsets[i]
                                                          : wsel;
}

/* Update aggregate a of `aggs` at groups g[j] with window i's rows. */
static laminar_code update_agg(window_op* op, lm_agg_states* aggs, int32_t a,
                               const assign_scratch* s, int32_t i, const uint32_t* wsel,
                               const uint32_t* g, int64_t m) {
  const lm_window_spec* spec = &op->spec;
  const lm_vec* arg = spec->aggs[a].arg ? &op->arg_vecs[a] : NULL;
  if (op->weights != NULL) {
    const lm_vec* ord = spec->aggs[a].order != NULL ? &op->ord_vecs[a] : NULL;
    return lm_agg_update_weighted_ordered(&aggs[a], arg, ord, wsel, g, op->weights, m);
  }
  if (spec->aggs[a].order != NULL)
    return lm_agg_update_ordered(&aggs[a], arg, &op->ord_vecs[a], wsel, g, m);
  /* A computed argument over a selection is by position (arg_pos). */
  return lm_agg_update(&aggs[a], arg, arg_rows(op, a, s, i, wsel), g, m);
}

/* EMIT CHANGES, window i of the slice: its groups' -1 rows, the rows into
 * their copies, their +1 rows (the windows themselves unchanged). */
static laminar_code shadow_window(window_op* op, assign_scratch* s, int32_t i, window* w,
                                  const uint32_t* wg, uint32_t* touched) {
  const lm_window_spec* spec = &op->spec;
  const uint32_t* wsel = s->bsel + s->offsets[i];
  int64_t m = s->offsets[i + 1] - s->offsets[i];
  uint32_t* eg = lm_eval_ctx_alloc(op->ctx, sizeof(uint32_t) * (size_t)(m ? m : 1));
  if (eg == NULL) return LAMINAR_ERR_NOMEM;
  window* c = NULL;
  uint64_t pass = ++op->pass;
  int64_t nt = 0;
  for (int64_t j = 0; j < m; j++) {
    LM_TRY(shadow_entry(op, w, wg[j], &eg[j]));
    if (w->stamp[wg[j]] != pass) {
      w->stamp[wg[j]] = pass;
      touched[nt++] = eg[j];
    }
  }
  c = op->jshadow[w->jidx].w;
  const uint32_t* group = op->jshadow[w->jidx].group;
  LM_TRY(lm_op_rows_reserve(op, 2 * nt)); /* reserved already: no allocation */
  /* Without aggregates (SELECT DISTINCT) a row does not change while its
   * group lives: only a group's birth and death are deltas. */
  for (int64_t k = 0; k < nt && spec->naggs > 0; k++) {
    if (c->live[touched[k]]) put_row(op, w, c->aggs, touched[k], group[touched[k]], -1);
  }
  for (int32_t a = 0; a < spec->naggs; a++) {
    const lm_vec* arg = spec->aggs[a].arg ? &op->arg_vecs[a] : NULL;
    const lm_vec* ord = spec->aggs[a].order != NULL ? &op->ord_vecs[a] : NULL;
    LM_TRY(lm_agg_states_prepare(&c->aggs[a], arg, ord, arg_rows(op, a, s, i, wsel), m,
                                 op->jseq));
    LM_TRY(update_agg(op, c->aggs, a, s, i, wsel, eg, m));
  }
  for (int64_t j = 0; j < m; j++)
    c->nrows[eg[j]] += op->weights ? op->weights[wsel[j]] : 1;
  for (int64_t k = 0; k < nt; k++) {
    uint32_t e = touched[k];
    bool was = c->live[e] != 0;
    c->live[e] = c->nrows[e] > 0;
    if (spec->naggs == 0) {
      if (was != (c->live[e] != 0)) put_row(op, w, c->aggs, e, group[e], was ? -1 : +1);
    } else if (c->live[e]) {
      put_row(op, w, c->aggs, e, group[e], +1);
    }
  }
  return LAMINAR_OK;
}

/* Groups gids[j] took rows sel[j]: each keeps the largest event time of its
 * rows (a row without one refreshes nothing). */
static void ttl_touch(const lm_vec* times, int64_t* last, const uint32_t* sel,
                      const uint32_t* gids, int64_t m) {
  for (int64_t j = 0; j < m; j++) {
    if (times->nulls != NULL && times->nulls[sel[j]]) continue;
    int64_t t = lm_op_time_ms(times, sel[j]);
    if (t > last[gids[j]]) last[gids[j]] = t;
  }
}

/* EMIT CHANGES in place, window i of the slice: its groups saved on their
 * first touch in the chunk, their -1 rows, the rows into the groups, their
 * +1 rows. */
static laminar_code change_window(window_op* op, assign_scratch* s, int32_t i, window* w,
                                  const uint32_t* wg, uint32_t* touched) {
  const lm_window_spec* spec = &op->spec;
  const uint32_t* wsel = s->bsel + s->offsets[i];
  int64_t m = s->offsets[i + 1] - s->offsets[i];
  uint64_t pass = ++op->pass;
  int64_t nt = 0, e0 = op->bk_n, e = e0;
  for (int64_t j = 0; j < m; j++) {
    uint32_t g = wg[j];
    if (w->stamp[g] != pass) {
      if (w->stamp[g] <= op->bk_pass) { /* first touch in the chunk: saved below */
        if (LM_NEVER(e >= op->bk_cap)) return LAMINAR_ERR_INTERNAL;
        op->bk_win[e] = w;
        op->bk_group[e++] = g;
      }
      w->stamp[g] = pass;
      touched[nt++] = g;
    }
  }
  /* Their slots, a field at a time (reserved: allocates nothing). */
  const uint32_t* saved = op->bk_group + e0;
  window* b = op->bk;
  for (int32_t a = 0; a < spec->naggs; a++)
    lm_agg_gather_groups(&b->aggs[a], e0, &w->aggs[a], saved, e - e0);
  for (int64_t k = 0; k < e - e0; k++) {
    b->nrows[e0 + k] = w->nrows[saved[k]];
    b->live[e0 + k] = w->live[saved[k]];
  }
  for (int64_t k = 0; w->last != NULL && k < e - e0; k++)
    b->last[e0 + k] = w->last[saved[k]];
  op->bk_n = e;
  LM_TRY(lm_op_rows_reserve(op, 2 * nt)); /* reserved already: no allocation */
  /* Without aggregates (SELECT DISTINCT) a row does not change while its
   * group lives: only a group's birth and death are deltas. */
  for (int64_t k = 0; k < nt && spec->naggs > 0; k++) {
    if (w->live[touched[k]]) put_group_row(op, w, touched[k], -1);
  }
  if (op->panes) w->edit = ++op->edits; /* shared merges over it are stale now */
  for (int32_t a = 0; a < spec->naggs; a++)
    LM_TRY(update_agg(op, w->aggs, a, s, i, wsel, wg, m)); /* prepared: cannot fail */
  for (int64_t j = 0; j < m; j++)
    w->nrows[wg[j]] += op->weights ? op->weights[wsel[j]] : 1;
  if (op->ttl_times != NULL) ttl_touch(op->ttl_times, w->last, wsel, wg, m);
  for (int64_t k = 0; k < nt; k++) {
    uint32_t g = touched[k];
    bool was = w->live[g] != 0;
    w->live[g] = w->nrows[g] > 0;
    if (spec->naggs == 0) {
      if (was != (w->live[g] != 0)) put_group_row(op, w, g, was ? -1 : +1);
    } else if (w->live[g]) {
      put_group_row(op, w, g, +1);
    }
  }
  return LAMINAR_OK;
}

/* Passes 3 and 4 over the pairs of one slice: bucket rows by window (a
 * counting sort keeps arrival order), then find (add) the group ids of every
 * window's rows, and only then run each aggregate's update loop per window:
 * all that can fail for memory comes before the first update. gids: room for
 * np. A failure before the updates leaves what window_rollback undoes. */
static laminar_code update_windows(window_op* op, assign_scratch* s, int64_t np,
                                   int32_t nwin, const uint64_t* hashes, uint32_t* gids,
                                   uint32_t* touched, window** wins, update_mode mode,
                                   int64_t* io_touch, bool* out_updating) {
  const lm_window_spec* spec = &op->spec;
  s->offsets[0] = 0;
  for (int32_t i = 0; i < nwin; i++) s->offsets[i + 1] = s->offsets[i] + s->counts[i];
  const uint32_t* sel = s->prow; /* already bucketed when sorted */
  const uint32_t* pos = s->ppos;
  if (!s->sorted) {
    for (int32_t i = 0; i < nwin; i++) s->counts[i] = s->offsets[i];
    if (pos != NULL) {
      for (int64_t p = 0; p < np; p++) {
        int64_t at = s->counts[s->pwin[p]]++;
        s->sel[at] = s->prow[p];
        s->spos[at] = s->ppos[p];
      }
      pos = s->spos;
    } else {
      for (int64_t p = 0; p < np; p++) s->sel[s->counts[s->pwin[p]]++] = s->prow[p];
    }
    sel = s->sel;
  }
  s->bsel = sel;
  s->bpos = pos;
  bool adding = mode == UPDATE_GROUPS || mode == UPDATE_CHECKED;
  for (int32_t i = 0; i < nwin; i++) {
    if (adding) LM_TRY(journal_reserve(op));
    int32_t before = op->nopen;
    LM_TRY(window_get(op, s->starts[i], &wins[i]));
    if (adding) journal(op, wins[i], op->nopen != before);
    const uint32_t* wsel = sel + s->offsets[i];
    int64_t m = s->offsets[i + 1] - s->offsets[i];
    uint32_t* wg = gids + s->offsets[i];
    if (op->panes) {
      LM_TRY(pane_groups(op, wins[i], wsel, m, hashes, adding, wg));
    } else {
      LM_TRY(groups_find_or_add(op, wins[i], wsel, m, hashes, wg));
    }
    /* Groups the updates may touch: EMIT CHANGES rows to reserve (two each). */
    *io_touch += m < wins[i]->t.n ? m : wins[i]->t.n;
    /* What the updates copy or add (strings, value entries, runs): room now,
     * for the whole chunk (prepared in its first pass when it has several
     * slices). */
    for (int32_t a = 0; adding && a < spec->naggs; a++) {
      const lm_vec* arg = spec->aggs[a].arg ? &op->arg_vecs[a] : NULL;
      const lm_vec* ord = spec->aggs[a].order != NULL ? &op->ord_vecs[a] : NULL;
      LM_TRY(lm_agg_states_prepare(&wins[i]->aggs[a], arg, ord,
                                   arg_rows(op, a, s, i, wsel), m, op->jseq));
    }
  }
  if (mode == UPDATE_GROUPS) {
    op->bk_need += s->offsets[nwin]; /* pairs of the slice (held: each saved) */
    return LAMINAR_OK;
  }
  bool in_place = spec->emit_changes && nwin > 0 && changes_in_place(op, wins[0]);
  if (mode == UPDATE_CHECKED) {
    LM_TRY(window_check_bound(op));
    if (spec->emit_changes) LM_TRY(lm_op_rows_reserve(op, 2 * *io_touch));
    if (in_place) LM_TRY(backup_reserve(op, op->bk_n + *io_touch));
    if (op->held && !spec->emit_changes)
      LM_TRY(backup_reserve(op, op->bk_n + s->offsets[nwin]));
  }
  if (mode == UPDATE_COMMIT || !spec->emit_changes) {
    /* The late rows to the late stream before the first update (a chunk of
     * several slices: after its first pass, window_chunk). */
    if (s->late_in != NULL) LM_TRY(lm_op_late_deliver(op, s->late_in));
    /* from here on a failure leaves the chunk partly applied (prepared: none can) */
    *out_updating = true;
    return commit_windows(op, s, nwin, wins, gids);
  }
  for (int32_t i = 0; i < nwin; i++) {
    uint32_t* wg = gids + s->offsets[i];
    LM_TRY(in_place ? change_window(op, s, i, wins[i], wg, touched)
                    : shadow_window(op, s, i, wins[i], wg, touched));
  }
  return LAMINAR_OK;
}

/* Update the slice's windows with their rows (prepared: no allocation), and
 * with EMIT CHANGES take each touched group's row count and emitted flag
 * from its copy. */
static laminar_code commit_windows(window_op* op, assign_scratch* s, int32_t nwin,
                                   window** wins, const uint32_t* gids) {
  const lm_window_spec* spec = &op->spec;
  for (int32_t i = 0; i < nwin; i++) {
    window* w = wins[i];
    const uint32_t* wsel = s->bsel + s->offsets[i];
    int64_t m = s->offsets[i + 1] - s->offsets[i];
    const uint32_t* wg = gids + s->offsets[i];
    if (op->panes) w->edit = ++op->edits; /* shared merges over it are stale now */
    /* Held by a batch that fans out: each pair's group saved (reserved;
     * restored in reverse, so a group's first save wins). */
    for (int64_t j = 0; op->held && !spec->emit_changes && j < m; j++)
      LM_TRY(backup_group(op, w, wg[j]));
    for (int32_t a = 0; a < spec->naggs; a++)
      LM_TRY(update_agg(op, w->aggs, a, s, i, wsel, wg, m)); /* prepared: cannot fail */
    if (!op->track) continue;
    if (op->ttl_times != NULL) ttl_touch(op->ttl_times, w->last, wsel, wg, m);
    if (spec->emit_changes) {
      const window_shadow* sh = &op->jshadow[w->jidx];
      for (int64_t j = 0; j < m; j++) {
        uint32_t e = sh->entry[wg[j]] - 1;
        w->nrows[wg[j]] = sh->w->nrows[e];
        w->live[wg[j]] = sh->w->live[e];
      }
    } else {
      for (int64_t j = 0; j < m; j++)
        w->nrows[wg[j]] += op->weights ? op->weights[wsel[j]] : 1;
    }
  }
  return LAMINAR_OK;
}

/* ---- late side output ---------------------------------------------------------- */

/* Room for this chunk's late row numbers when late rows have a sink. */
static laminar_code late_begin(window_op* op, int64_t n) {
  op->nlate = 0;
  op->late_sel = NULL;
  if (op->late_fn == NULL) return LAMINAR_OK;
  op->late_sel = lm_eval_ctx_alloc(op->ctx, sizeof(uint32_t) * (size_t)n);
  return op->late_sel != NULL ? LAMINAR_OK : LAMINAR_ERR_NOMEM;
}

/* Hand this chunk's late rows, every input column, to the late sink. */
laminar_code lm_op_late_deliver(window_op* op, const lm_chunk* in) {
  int64_t m = op->nlate;
  const uint32_t* rows = op->late_sel;
  op->late_sel = NULL;
  op->nlate = 0;
  if (m == 0) return LAMINAR_OK;
  lm_vec* cols = lm_eval_ctx_alloc(op->ctx, sizeof(lm_vec) * (size_t)in->ncols);
  if (cols == NULL) return LAMINAR_ERR_NOMEM;
  for (int32_t c = 0; c < in->ncols; c++) {
    LM_TRY(lm_op_gather(op->ctx, &in->cols[c], rows, m, &cols[c]));
  }
  lm_chunk late = {m, in->ncols, cols, NULL};
  return op->late_fn(op->late_arg, &late);
}

/* The values of `e` for the rows of `in`, indexed like its columns (row r at
 * r): without a selection, over every row (a column reference zero-copy);
 * with one, a column reference is the column itself and a computed
 * expression is evaluated over the selected rows only and each value placed
 * at its row (the other entries are never read). */
static laminar_code eval_rows(window_op* op, const lm_expr* e, const lm_chunk* in,
                              lm_vec* out) {
  const uint32_t* sel = in->sel;
  if (sel == NULL) return lm_expr_eval(op->ctx, e, in->cols, NULL, in->nrows, out);
  int64_t span = (int64_t)sel[in->nrows - 1] + 1; /* rows 0 .. the last selected */
  if (e->kind == LM_EXPR_COLUMN)
    return lm_expr_eval(op->ctx, e, in->cols, NULL, span, out);
  lm_vec dense;
  LM_TRY(lm_expr_eval(op->ctx, e, in->cols, sel, in->nrows, &dense));
  size_t w = (size_t)lm_type_width(dense.type);
  uint8_t* data = lm_eval_ctx_alloc(op->ctx, w * (size_t)span);
  uint8_t* nulls = dense.nulls != NULL ? lm_eval_ctx_alloc(op->ctx, (size_t)span) : NULL;
  if (data == NULL || (dense.nulls != NULL && nulls == NULL)) return LAMINAR_ERR_NOMEM;
  const uint8_t* from = dense.data;
  int64_t n = in->nrows;
  switch (w) {
    case 8:
      for (int64_t i = 0; i < n; i++) memcpy(data + (size_t)sel[i] * 8, from + i * 8, 8);
      break;
    case 16:
      for (int64_t i = 0; i < n; i++)
        memcpy(data + (size_t)sel[i] * 16, from + i * 16, 16);
      break;
    default:
      for (int64_t i = 0; i < n; i++) {
        memcpy(data + (size_t)sel[i] * w, from + (size_t)i * w, w);
      }
      break;
  }
  if (nulls != NULL) {
    for (int64_t i = 0; i < n; i++) nulls[sel[i]] = dense.nulls[i];
  }
  *out = (lm_vec){dense.type, span, nulls, data};
  return LAMINAR_OK;
}

static laminar_code window_chunk(window_op* op, const lm_chunk* in);

/* A user-defined aggregate's finalize failed since the last check: its
 * code, the failure recorded for the stream (the rows are not emitted). */
laminar_code lm_op_window_agg_failed(window_op* op) {
  laminar_code rc = lm_agg_report_take(&op->agg_report);
  if (rc != LAMINAR_OK) {
    lm_state_budget_fail(op->base.budget, rc, "%s; the results were not emitted",
                         op->agg_report.text);
  }
  return rc;
}

/* A chunk; a failure names the stream and says what it left (issue 20). */
laminar_code lm_op_window_chunk_failed(window_op* op, laminar_code rc) {
  if (lm_expr_udf_failed(rc) && op->agg_report.text[0] != '\0') {
    /* a user-defined aggregate's update or merge */
    lm_state_budget_fail(op->base.budget, rc,
                         "%s; this batch is partly applied to the stream's state",
                         op->agg_report.text);
    op->agg_report.text[0] = '\0';
  }
  if (rc == LAMINAR_ERR_NOMEM) { /* unless a more precise text is recorded */
    lm_state_budget_fail(op->base.budget, rc,
                         "out of memory; the batch was not applied "
                         "(state unchanged)");
  }
  return rc;
}

/* Closing windows failed (rc): say what it left (issue 20). */
laminar_code lm_op_window_close_failed(window_op* op, laminar_code rc) {
  if (rc == LAMINAR_ERR_NOMEM) {
    lm_state_budget_fail(op->base.budget, rc,
                         "out of memory closing windows at watermark %" PRId64
                         "; nothing of them was emitted, they close at the next "
                         "watermark advance (the input that moved it was applied)",
                         op->watermark);
  }
  return rc;
}

laminar_code lm_op_window_on_chunk(lm_op* base, const lm_chunk* in) {
  window_op* op = (window_op*)base;
  return lm_op_window_chunk_failed(op, window_chunk(op, in));
}

static laminar_code prepare_rows(window_op* op, const lm_chunk* in, lm_chunk* out_rows,
                                 const uint64_t** out_given, bool* out_by_pos);

laminar_code lm_op_window_prepare(window_op* op, const lm_chunk* in, lm_chunk* out_rows,
                                  const uint64_t** out_given, bool* out_by_pos) {
  laminar_code rc = prepare_rows(op, in, out_rows, out_given, out_by_pos);
  if (lm_expr_udf_failed(rc)) { /* raised before any state changed */
    lm_state_budget_fail(op->base.budget, rc, "%s; the batch was not applied",
                         lm_eval_ctx_error(op->ctx));
  }
  return rc;
}

static laminar_code prepare_rows(window_op* op, const lm_chunk* in, lm_chunk* out_rows,
                                 const uint64_t** out_given, bool* out_by_pos) {
  const lm_window_spec* spec = &op->spec;
  const uint64_t* given = op->in_hashes; /* the router's, for this chunk only */
  const lm_vec* given_args = op->in_args;
  op->in_hashes = NULL;
  op->in_args = NULL;
  *out_rows = *in;
  out_rows->nrows = 0;
  *out_given = given;
  *out_by_pos = false;
  if (in->nrows == 0) return LAMINAR_OK;
  op->chunk_rows += in->nrows;
  lm_eval_ctx_reset(op->ctx);
  /* The rows to aggregate: the chunk's (all, or its selection), less those
   * WHERE does not keep and a changelog's rows weighing NULL or 0. From here
   * on rows are named by their row number in the columns. */
  lm_chunk rows = *in;
  if (spec->filter != NULL) {
    uint32_t* kept = lm_eval_ctx_alloc(op->ctx, sizeof(uint32_t) * (size_t)rows.nrows);
    if (kept == NULL) return LAMINAR_ERR_NOMEM;
    int64_t nkept = 0;
    LM_TRY(lm_expr_filter(op->ctx, spec->filter, in->cols, in->sel, in->nrows, kept,
                          &nkept));
    if (in->sel != NULL || nkept < in->nrows) rows.sel = kept;
    rows.nrows = nkept;
  }
  op->weights = NULL;
  if (spec->changelog) {
    const lm_vec* wv = &in->cols[spec->weight_col];
    const int64_t* wd = wv->data;
    uint32_t* live =
        lm_eval_ctx_alloc(op->ctx, sizeof(uint32_t) * (size_t)(rows.nrows + 1));
    if (live == NULL) return LAMINAR_ERR_NOMEM;
    int64_t m = 0;
    for (int64_t i = 0; i < rows.nrows; i++) { /* in place is safe: m <= i */
      uint32_t r = rows.sel != NULL ? rows.sel[i] : (uint32_t)i;
      live[m] = r;
      m += !(wv->nulls && wv->nulls[r]) && wd[r] != 0;
    }
    if (rows.sel != NULL || m < rows.nrows) rows.sel = live;
    rows.nrows = m;
    op->weights = wd;
  }
  int64_t n = rows.nrows;
  if (n == 0) return LAMINAR_OK;
  LM_TRY(late_begin(op, n));
  for (int32_t c = 0; c < spec->nkeys; c++) {
    LM_TRY(eval_rows(op, spec->keys[c], &rows, &op->key_vecs[c]));
  }
  /* A computed argument over a selection, in a window (not session) update
   * that takes no order and no weights, is evaluated over the selected rows
   * and read by position (arg_pos: each pair carries its row's position),
   * not placed at its rows. */
  bool by_pos = false;
  for (int32_t a = 0; a < spec->naggs; a++) {
    const lm_expr* arg = spec->aggs[a].arg;
    bool given_arg = given_args != NULL && given_args[a].data != NULL; /* by row */
    op->arg_pos[a] = rows.sel != NULL && arg != NULL && arg->kind != LM_EXPR_COLUMN &&
                     spec->aggs[a].order == NULL && op->weights == NULL &&
                     op->base.vt != &lm_op_session_vtable && !given_arg;
    by_pos |= op->arg_pos[a];
    if (given_arg) {
      op->arg_vecs[a] = given_args[a];
    } else if (op->arg_pos[a]) {
      LM_TRY(lm_expr_eval(op->ctx, arg, in->cols, rows.sel, n, &op->arg_vecs[a]));
    } else if (arg != NULL) {
      LM_TRY(eval_rows(op, arg, &rows, &op->arg_vecs[a]));
    }
    if (spec->aggs[a].order != NULL) {
      LM_TRY(eval_rows(op, spec->aggs[a].order, &rows, &op->ord_vecs[a]));
    }
  }
  *out_rows = rows;
  *out_by_pos = by_pos;
  return LAMINAR_OK;
}

/* A chunk under way: what its passes share (window_chunk, or a chunk split
 * in two by lm_op_window_chunk_prepare / _commit). */
typedef struct chunk_run {
  lm_chunk in; /* the chunk (its columns and selection borrowed from the caller) */
  lm_chunk rows;
  int64_t n, slice;
  bool several; /* a first pass adds every group before any update */
  bool hashed, updating;
  assign_scratch s;
  uint64_t* own; /* the keys' hashes when the router gave none */
  const uint64_t* hashes;
  uint32_t* gids;
  uint32_t* touched;
  window** wins;
  int64_t late_before, nlate_before;
  int64_t touch;    /* groups the chunk's updates may touch (rows to reserve) */
  int32_t nwin_one; /* one slice: its windows */
} chunk_run;

/* Set up chunk `in` into r (r->n 0: nothing to aggregate): its rows, its
 * scratch, the op's journal begun. `split`: in two passes even in one
 * slice. A failure here changed nothing. */
static laminar_code chunk_setup(window_op* op, const lm_chunk* in, bool split,
                                chunk_run* r) {
  const lm_window_spec* spec = &op->spec;
  const uint64_t* given;
  bool by_pos;
  r->n = 0;
  LM_TRY(lm_op_window_prepare(op, in, &r->rows, &given, &by_pos));
  int64_t n = r->rows.nrows;
  if (n == 0) return LAMINAR_OK;
  r->in = *in;
  int64_t per = 1 + (spec->size_ms - 1) / spec->hop_ms; /* most windows of one row */
  if (per > LM_MAX_WINDOWS_PER_ROW) per = LM_MAX_WINDOWS_PER_ROW;
  int64_t slice = PAIRS_PER_SLICE / per;
  if (slice < 1) slice = 1;
  if (slice > n) slice = n;
  size_t npairs = (size_t)(slice * per);
  const lm_chunk* rows = &r->rows;
  int64_t span = rows->sel != NULL ? (int64_t)rows->sel[n - 1] + 1 : n; /* rows < span */
  r->s = (assign_scratch){
      .starts = lm_eval_ctx_alloc(op->ctx, sizeof(int64_t) * npairs),
      .counts = lm_eval_ctx_alloc(op->ctx, sizeof(int64_t) * npairs),
      .offsets = lm_eval_ctx_alloc(op->ctx, sizeof(int64_t) * (npairs + 1)),
      .prow = lm_eval_ctx_alloc(op->ctx, sizeof(uint32_t) * npairs),
      .pwin = lm_eval_ctx_alloc(op->ctx, sizeof(int32_t) * npairs),
      .sel = lm_eval_ctx_alloc(op->ctx, sizeof(uint32_t) * npairs),
      .cache = lm_eval_ctx_alloc(op->ctx, sizeof(int32_t) * (size_t)per),
      .ppos = by_pos ? lm_eval_ctx_alloc(op->ctx, sizeof(uint32_t) * npairs) : NULL,
      .spos = by_pos ? lm_eval_ctx_alloc(op->ctx, sizeof(uint32_t) * npairs) : NULL,
      .late_in = spec->emit_changes || op->late_fn == NULL ? NULL : &r->in,
  };
  assign_scratch* sc = &r->s;
  r->own = given ? NULL : lm_eval_ctx_alloc(op->ctx, sizeof(uint64_t) * (size_t)span);
  r->hashes = given ? given : r->own;
  r->gids = lm_eval_ctx_alloc(op->ctx, sizeof(uint32_t) * npairs);
  r->touched = lm_eval_ctx_alloc(op->ctx, sizeof(uint32_t) * (size_t)slice);
  r->wins = lm_eval_ctx_alloc(op->ctx, sizeof(window*) * npairs);
  if (!sc->starts || !sc->counts || !sc->offsets || !sc->prow || !sc->pwin || !sc->sel ||
      !sc->cache || !r->hashes || !r->gids || !r->touched || !r->wins ||
      (by_pos && (!sc->ppos || !sc->spos))) {
    return LAMINAR_ERR_NOMEM;
  }
  /* All or nothing (issue 20): every group of the chunk is added and the
   * bound checked before the first aggregate update. A chunk of several
   * slices adds them in a first pass over its slices (late rows counted
   * again by the second). With EMIT CHANGES over flat states the groups
   * are updated in place, each saved before its first update (restored if
   * downstream fails); over others the updates go into copies of the groups
   * first, their rows downstream, and only then into the windows (a third
   * pass over the slices, or the one slice's again). */
  LM_TRY(window_join(op));
  lm_op_window_journal_begin(op);
  if (op->base.txn_seq != 0 && lm_op_txn_active(&op->base) &&
      op->base.txn_seq == op->base.txn->seq)
    op->held = true; /* joined: from here on the batch's (window_txn_end) */
  LM_TRY(lm_op_window_account(op, false));
  op->ttl_times = spec->ttl_ms > 0 ? &rows->cols[spec->ttl_col] : NULL;
  r->late_before = op->late_rows;
  r->nlate_before = op->nlate;
  r->several = slice < n || split;
  r->hashed = r->updating = false;
  r->touch = 0;
  r->nwin_one = 0;
  r->n = n;
  r->slice = slice;
  return LAMINAR_OK;
}

/* Passes first..last of chunk r: 0 (several slices only) adds every slice's
 * groups and checks what can fail; 1 updates (EMIT CHANGES: the copies);
 * 2 (EMIT CHANGES) hands the rows downstream and updates the windows. */
static laminar_code chunk_passes(window_op* op, chunk_run* r, int first, int last) {
  const lm_window_spec* spec = &op->spec;
  const lm_chunk* in = &r->in;
  assign_scratch* s = &r->s;
  int64_t n = r->n, slice = r->slice;
  laminar_code rc = LAMINAR_OK;
  for (int pass = first; pass <= last && rc == LAMINAR_OK; pass++) {
    if (pass == 2) {
      if (!spec->emit_changes) break;
      /* Everything downstream takes the chunk's rows, and the late sink its
       * late rows, before the windows change. */
      rc = lm_op_rows_flush(op);
      if (rc == LAMINAR_OK) rc = lm_op_late_deliver(op, in);
      if (rc != LAMINAR_OK) break;
      if (op->flat > 0) break; /* updated in place already */
      if (!r->several) {
        r->updating = true;
        rc = r->nwin_one > 0 ? commit_windows(op, s, r->nwin_one, r->wins, r->gids)
                             : LAMINAR_OK;
        break;
      }
    }
    update_mode mode = pass == 0    ? UPDATE_GROUPS
                       : pass == 2  ? UPDATE_COMMIT
                       : r->several ? UPDATE
                                    : UPDATE_CHECKED;
    int64_t late_done = op->late_rows;
    for (int64_t i0 = 0; i0 < n && rc == LAMINAR_OK; i0 += slice) {
      int64_t i1 = i0 + slice < n ? i0 + slice : n;
      int32_t nwin;
      int64_t np = assign_windows(op, &r->rows, r->rows.sel, i0, i1, s, &nwin);
      if (np == 0) continue;
      if (!r->hashed &&
          r->own != NULL) { /* hash the rows' keys (once; not if all late) */
        lm_op_hash_keys(op->key_vecs, spec->nkeys, r->rows.sel, n, r->own);
        r->hashed = true;
      }
      int64_t counted = 0; /* pass 1 of several: counted in pass 0 */
      r->nwin_one = nwin;
      rc = update_windows(op, s, np, nwin, r->hashes, r->gids, r->touched, r->wins, mode,
                          mode == UPDATE || mode == UPDATE_COMMIT ? &counted : &r->touch,
                          &r->updating);
    }
    if (pass == 0) {
      int64_t nlate = op->nlate; /* (the second pass counts them again) */
      op->late_rows = r->late_before;
      op->nlate = r->nlate_before;
      if (rc == LAMINAR_OK) rc = window_settle(op);
      if (rc == LAMINAR_OK) rc = window_check_bound(op);
      if (rc == LAMINAR_OK && spec->emit_changes)
        rc = lm_op_rows_reserve(op, 2 * r->touch);
      if (rc == LAMINAR_OK && spec->emit_changes && op->jn > 0 &&
          changes_in_place(op, op->jwin[0]))
        rc = backup_reserve(op, op->bk_n + r->touch);
      if (rc == LAMINAR_OK && op->held && !spec->emit_changes)
        rc = backup_reserve(op, op->bk_n + op->bk_need);
      if (rc == LAMINAR_OK && s->late_in != NULL) { /* before the first update */
        op->nlate = nlate;
        rc = lm_op_late_deliver(op, in);
      }
    }
    if (pass == 2) op->late_rows = late_done; /* counted by pass 1 */
  }
  return rc;
}

/* The end of chunk r after its passes (rc): a failure before any update
 * takes it back whole; one during the updates says what it left. */
static laminar_code chunk_finish(window_op* op, chunk_run* r, laminar_code rc) {
  /* Every row late (no update): their late rows, as before an update. */
  if (rc == LAMINAR_OK && !r->updating && r->s.late_in != NULL)
    rc = lm_op_late_deliver(op, &r->in);
  shadow_end(op);
  if (rc != LAMINAR_OK && !r->updating) {
    backups_restore(op); /* in-place updates undone (allocates nothing) */
    op->late_rows = r->late_before;
    op->nlate = r->nlate_before;
    op->late_sel = NULL;
    op->dn = 0; /* no EMIT CHANGES row of it went on */
    return window_fail_clean(op, rc);
  }
  if (rc != LAMINAR_OK && lm_expr_udf_failed(rc) && op->agg_report.text[0] != '\0') {
    lm_state_budget_fail(op->base.budget, rc,
                         "%s; this batch is partly applied to the stream's state",
                         op->agg_report.text);
    op->agg_report.text[0] = '\0';
    return rc;
  }
  if (rc != LAMINAR_OK) {
    return lm_state_budget_fail(op->base.budget, rc,
                                "%s while updating aggregates: this batch is partly "
                                "applied to the stream's state",
                                laminar_errstr(rc));
  }
  /* What the updates added (MIN/MAX strings, distinct values) is in use now. */
  /* (Rows and late rows went before.) */
  return lm_op_window_account(op, false);
}

static laminar_code window_chunk(window_op* op, const lm_chunk* in) {
  chunk_run r;
  LM_TRY(chunk_setup(op, in, false, &r));
  if (r.n == 0) return LAMINAR_OK;
  laminar_code rc = chunk_passes(op, &r, r.several ? 0 : 1, 2);
  return chunk_finish(op, &r, rc);
}

laminar_code lm_op_window_chunk_prepare(lm_op* base, const lm_chunk* in) {
  window_op* op = (window_op*)base;
  op->pending = NULL;
  if (LM_NEVER(op->spec.emit_changes || op->spec.session)) return LAMINAR_ERR_INTERNAL;
  chunk_run r;
  laminar_code rc = chunk_setup(op, in, true, &r);
  if (rc != LAMINAR_OK || r.n == 0) return lm_op_window_chunk_failed(op, rc);
  /* Kept until the commit, in the op's own arena (reset by its next chunk). */
  chunk_run* p = lm_eval_ctx_alloc(op->ctx, sizeof *p);
  if (p == NULL)
    return lm_op_window_chunk_failed(op, chunk_finish(op, &r, LAMINAR_ERR_NOMEM));
  *p = r;
  if (p->s.late_in != NULL) p->s.late_in = &p->in;
  rc = chunk_passes(op, p, 0, 0);
  if (rc != LAMINAR_OK) return lm_op_window_chunk_failed(op, chunk_finish(op, p, rc));
  op->pending = p;
  return LAMINAR_OK;
}

laminar_code lm_op_window_chunk_commit(lm_op* base) {
  window_op* op = (window_op*)base;
  chunk_run* p = op->pending;
  op->pending = NULL;
  if (p == NULL) return LAMINAR_OK;
  base->rows_in += p->in.nrows;
  return lm_op_window_chunk_failed(op, chunk_finish(op, p, chunk_passes(op, p, 1, 2)));
}

void lm_op_window_chunk_abort(lm_op* base) {
  window_op* op = (window_op*)base;
  chunk_run* p = op->pending;
  op->pending = NULL;
  if (p == NULL) return;
  (void)chunk_finish(op, p, LAMINAR_ERR_NOMEM);
  (void)lm_op_window_account(op, false); /* its charge as before the chunk */
}

/* ---- emission ------------------------------------------------------------------- */

/* Recycle the first nclose open windows. */
void lm_op_window_drop_closed(window_op* op, int32_t nclose) {
  if (nclose == 0) return; /* (open may still be NULL) */
  for (int32_t i = 0; i < nclose; i++) lm_op_window_let_go(op, op->open[i]);
  memmove(&op->open[0], &op->open[nclose],
          sizeof(window*) * (size_t)(op->nopen - nclose));
  op->nopen -= nclose;
}

/* Closing windows of a changelog input: groups whose rows were all retracted
 * are left out, so rows go out one group at a time. */
static laminar_code close_tracked(window_op* op, int32_t nclose, int64_t total) {
  LM_TRY(lm_op_rows_reserve(op, total));
  for (int32_t i = 0; i < nclose; i++) {
    const window* w = op->open[i];
    for (int64_t g = 0; g < w->t.n; g++) {
      if (w->nrows[g] > 0) put_group_row(op, w, g, +1);
    }
  }
  laminar_code rc = lm_op_window_agg_failed(op); /* a failed finalize: results lost */
  if (rc == LAMINAR_OK) {
    rc = lm_op_rows_flush(op);
    if (rc != LAMINAR_OK) return rc; /* downstream as before them: the next advance */
  }
  op->dn = 0;
  lm_op_window_drop_closed(op, nclose);
  return rc;
}


static laminar_code window_on_watermark_apply(window_op* op, int64_t watermark_ms);

/* ---- state_ttl: forgetting idle groups (GROUP BY without a window) ------------ */

/* Whether group g holds anything: rows, or a result its readers hold. A
 * forgotten group holds nothing until a row of its key comes again. */
static bool ttl_held(const window* w, int64_t g) {
  return w->nrows[g] != 0 || w->live[g] != 0;
}

/* The one window of a GROUP BY without a window, without its forgotten
 * groups: each other group copied (keys, aggregate states through their
 * snapshot form, tracking) in order into a fresh window that replaces it.
 * On failure the old window stays, unchanged. */
static laminar_code ttl_compact(window_op* op) {
  const window* w = op->open[0];
  window* nw;
  if (op->nspare > 0) {
    nw = op->spare[--op->nspare];
  } else {
    LM_TRY(lm_op_window_new(op, &nw));
  }
  nw->start = w->start;
  lm_state_writer sw;
  lm_state_writer_init(&sw);
  laminar_code rc = LAMINAR_OK;
  for (int64_t g = 0; g < w->t.n && rc == LAMINAR_OK; g++) {
    if (!ttl_held(w, g)) continue;
    uint32_t h;
    rc = lm_op_group_append(op, nw, w->t.hash[g], &h);
    if (rc == LAMINAR_OK) rc = lm_state_table_copy_keys(&nw->t, h, &w->t, g, true);
    sw.len = 0;
    for (int32_t a = 0; rc == LAMINAR_OK && a < op->spec.naggs; a++)
      lm_agg_snapshot_group(&w->aggs[a], g, &sw);
    if (rc == LAMINAR_OK) rc = lm_state_writer_status(&sw);
    lm_state_reader r;
    lm_state_reader_init(&r, sw.data, sw.len);
    for (int32_t a = 0; rc == LAMINAR_OK && a < op->spec.naggs; a++)
      rc = lm_agg_restore_group(&nw->aggs[a], h, &r);
    if (rc == LAMINAR_OK && r.failed) rc = LAMINAR_ERR_INTERNAL;
    if (rc != LAMINAR_OK) break;
    nw->nrows[h] = w->nrows[g];
    nw->live[h] = w->live[g];
    if (op->spec.ttl_ms > 0) nw->last[h] = w->last[g];
  }
  lm_state_writer_free(&sw);
  if (rc != LAMINAR_OK) {
    lm_op_window_recycle(op, nw);
    return rc;
  }
  lm_op_window_let_go(op, op->open[0]);
  op->open[0] = nw;
  return LAMINAR_OK;
}

/* state_ttl, at a watermark: every group whose largest event time is
 * ttl_ms or more behind it retracts its row (EMIT CHANGES: -1 of the row
 * last emitted) and is forgotten (its aggregates empty, as a new group's).
 * Forgotten groups keep their slot, so a key coming back finds it, until
 * they are half the window's groups: then the window is compacted. Driven
 * by the watermark alone, so a replay forgets the same groups. */
static laminar_code window_expire(window_op* op) {
  const lm_window_spec* spec = &op->spec;
  int64_t horizon;
  if (spec->ttl_ms <= 0 || op->nopen == 0 ||
      __builtin_sub_overflow(op->watermark, spec->ttl_ms, &horizon)) {
    return LAMINAR_OK;
  }
  const window* w = op->open[0];
  int64_t nexp = 0, nfree = 0;
  for (int64_t g = 0; g < w->t.n; g++) {
    if (!ttl_held(w, g)) {
      nfree++;
    } else if (w->last[g] <= horizon) {
      nexp++;
    }
  }
  if (nexp == 0) return LAMINAR_OK;
  LM_TRY(lm_op_window_cow_settle(op, 0)); /* the op's own to change */
  window* own = op->open[0];
  LM_TRY(lm_op_rows_reserve(op, nexp));
  for (int64_t g = 0; g < own->t.n; g++) {
    if (ttl_held(own, g) && own->last[g] <= horizon && own->live[g])
      put_group_row(op, own, g, -1);
  }
  /* The rows borrow the group's strings: out before the states go. */
  laminar_code rc = lm_op_rows_flush(op);
  for (int64_t g = 0; g < own->t.n; g++) {
    if (!ttl_held(own, g) || own->last[g] > horizon) continue;
    for (int32_t a = 0; a < spec->naggs; a++) {
      lm_agg_states_drop_group(&own->aggs[a], g);
      lm_agg_states_init_group(&own->aggs[a], g);
    }
    own->nrows[g] = 0;
    own->live[g] = 0;
    own->last[g] = INT64_MIN;
  }
  op->expired += nexp;
  nfree += nexp;
  if (rc == LAMINAR_OK && 2 * nfree >= own->t.n) rc = ttl_compact(op);
  return rc;
}

/* GROUP BY without a window over a changelog: a group whose rows were all
 * retracted (and whose row its readers no longer hold) is gone from the
 * answer; once such groups are half the window's, it is compacted without
 * them, so the state follows what the input holds (a temporal filter's
 * horizon, a view's rows), not every key it ever had. */
static laminar_code forget_retracted(window_op* op) {
  if (!op->spec.changelog || op->nopen == 0 || !op->spec.emit_changes) return LAMINAR_OK;
  const window* w = op->open[0];
  /* A look at every group once the rows since the last look are half their
   * number: O(1) a row. */
  if (w->t.n < 64 || 2 * (op->chunk_rows - op->forget_seen) < w->t.n) return LAMINAR_OK;
  op->forget_seen = op->chunk_rows;
  int64_t nfree = 0;
  for (int64_t g = 0; g < w->t.n; g++) nfree += !ttl_held(w, g);
  return 2 * nfree >= w->t.n ? ttl_compact(op) : LAMINAR_OK;
}

/* Close windows, then give their bytes back to the bound. */
static laminar_code window_on_watermark(lm_op* base, int64_t watermark_ms) {
  window_op* op = (window_op*)base;
  laminar_code rc =
      lm_op_window_close_failed(op, window_on_watermark_apply(op, watermark_ms));
  lm_op_window_account(op, false);
  return rc;
}

static laminar_code window_on_watermark_apply(window_op* op, int64_t watermark_ms) {
  if (watermark_ms <= op->watermark) return LAMINAR_OK;
  op->watermark = watermark_ms;
  const lm_window_spec* spec = &op->spec;
  if (spec->global) { /* the one window never closes */
    LM_TRY(window_expire(op));
    (void)forget_retracted(op); /* out of memory: tried again at a later look */
    return LAMINAR_OK;
  }
  int32_t nclose = 0;
  int64_t total = 0;
  while (nclose < op->nopen) {
    int64_t we;
    if (__builtin_add_overflow(op->open[nclose]->start, spec->size_ms, &we))
      we = INT64_MAX;
    if (__builtin_add_overflow(we, spec->lateness_ms, &we)) we = INT64_MAX;
    if (we > watermark_ms) break;
    total += op->open[nclose]->t.n;
    nclose++;
  }
  if (nclose == 0) return LAMINAR_OK;
  if (spec->emit_changes) { /* every result was emitted as it changed */
    lm_op_window_drop_closed(op, nclose);
    return LAMINAR_OK;
  }
  if (op->track) return close_tracked(op, nclose, total);
  for (int32_t i = 0; i < nclose; i++) {
    if (op->open[i]->cow != NULL) LM_TRY(lm_op_window_cow_settle(op, i));
  }

  lm_eval_ctx_reset(op->ctx);
  int32_t ncols = 2 + spec->nkeys + spec->naggs;
  int64_t cap = total ? total : 1;
  for (int32_t c = 0; c < ncols; c++) {
    lm_type type = op->base.out_schema.fields[c].type;
    void* data = lm_eval_ctx_alloc(op->ctx, (size_t)(lm_type_width(type) * cap));
    uint8_t* nulls = lm_eval_ctx_alloc(op->ctx, (size_t)cap);
    if (data == NULL || nulls == NULL) return LAMINAR_ERR_NOMEM;
    memset(nulls, 0, (size_t)cap);
    op->out_vecs[c] = (lm_vec){type, total, nulls, data};
  }
  bool* any_null = lm_eval_ctx_alloc(op->ctx, sizeof(bool) * (size_t)ncols);
  if (any_null == NULL) return LAMINAR_ERR_NOMEM;
  memset(any_null, 0, sizeof(bool) * (size_t)ncols);

  int64_t row = 0;
  for (int32_t i = 0; i < nclose; i++) {
    window* w = op->open[i];
    int64_t ng = w->t.n;
    int64_t start, end;
    lm_op_window_bounds(op, w->start, &start, &end); /* not panes: out_size is the size */
    for (int64_t g = 0; g < ng; g++) {
      ((int64_t*)op->out_vecs[0].data)[row + g] = start;
      ((int64_t*)op->out_vecs[1].data)[row + g] = end;
    }
    for (int32_t c = 0; c < spec->nkeys; c++) {
      const lm_state_keycol* ks = &w->t.keys[c];
      lm_vec* ov = &op->out_vecs[2 + c];
      uint8_t* on = (uint8_t*)ov->nulls + row;
      for (int64_t g = 0; g < ng; g++) {
        on[g] = ks->nulls[g];
        any_null[2 + c] |= ks->nulls[g];
        switch (ks->type) {
          case LM_TYPE_BINARY:
          case LM_TYPE_STRING: ((lm_str*)ov->data)[row + g] = ks->s[g]; break;
          case LM_TYPE_DOUBLE: ((double*)ov->data)[row + g] = ks->d[g]; break;
          default: lm_vec_int_put(ks->type, (void*)ov->data, row + g, ks->i[g]); break;
        }
      }
    }
    for (int32_t a = 0; a < spec->naggs; a++) {
      lm_vec* ov = &op->out_vecs[2 + spec->nkeys + a];
      char* data = (char*)ov->data + lm_type_width(ov->type) * row;
      any_null[2 + spec->nkeys + a] |=
          lm_agg_finalize(&w->aggs[a], 0, ng, data, (uint8_t*)ov->nulls + row);
    }
    row += ng;
  }
  for (int32_t c = 0; c < ncols; c++) {
    if (!any_null[c]) op->out_vecs[c].nulls = NULL;
  }
  lm_chunk out = {total, ncols, op->out_vecs, NULL};
  /* Emit before recycling: the chunk borrows the windows' key strings. */
  laminar_code rc = lm_op_window_agg_failed(op);
  if (rc != LAMINAR_OK) { /* a user-defined finalize failed: their results are lost */
    lm_op_window_drop_closed(op, nclose);
    return rc;
  }
  rc = lm_op_emit(&op->base, &out);
  /* Downstream as before them when it failed: they stay open, closed by the
   * next advance (rows for them are late all the same). */
  if (rc == LAMINAR_OK) lm_op_window_drop_closed(op, nclose);
  return rc;
}

/* ---- snapshot / restore ----------------------------------------------------- */

void lm_op_put_window(const window_op* op, const window* win, lm_state_writer* w) {
  lm_state_put_i64(w, win->start);
  lm_state_put_i64(w, win->t.n);
  for (int64_t g = 0; g < win->t.n; g++) {
    /* A copy by blocks reads the blocks it has not copied from its original. */
    const window* from = win->cow != NULL ? lm_op_window_cow_group_src(win, g) : win;
    lm_state_table_put_keys(&from->t, g, w);
    for (int32_t a = 0; a < op->spec.naggs; a++)
      lm_agg_snapshot_group(&from->aggs[a], g, w);
    if (op->track) {
      lm_state_put_i64(w, from->nrows[g]);
      lm_state_put_u8(w, from->live[g]);
      if (op->spec.ttl_ms > 0) lm_state_put_i64(w, from->last[g]);
    }
  }
}

laminar_code lm_op_window_snapshot(const lm_op* base, lm_state_writer* w) {
  const window_op* op = (const window_op*)base;
  lm_state_put_i64(w, op->watermark);
  lm_state_put_i64(w, op->late_rows);
  lm_state_put_u32(w, (uint32_t)op->nopen);
  for (int32_t i = 0; i < op->nopen; i++) lm_op_put_window(op, op->open[i], w);
  return lm_state_writer_status(w);
}

static void window_clear_all(window_op* op) {
  for (int32_t i = 0; i < op->nopen; i++) lm_op_window_let_go(op, op->open[i]);
  op->nopen = 0;
  op->suf_block = op->run_block = INT64_MIN; /* shared merges: none */
  lm_op_slide_invalidate(op);
}

const lm_op_part_filter lm_op_part_whole = {
    .nparts = 1, .part = 0, .merge = false, .late = true};

void lm_op_window_restore_head(window_op* op, lm_state_reader* r,
                               const lm_op_part_filter* f) {
  if (f->merge) {
    op->suf_block = op->run_block =
        INT64_MIN;              /* shared merges: rebuilt over the added groups */
    lm_op_slide_invalidate(op); /* and the sliding state */
  } else {
    window_clear_all(op);
    op->watermark = INT64_MIN;
    op->late_rows = 0;
  }
  int64_t wm = lm_state_get_i64(r), late = lm_state_get_i64(r);
  /* Merged partitions: the least of theirs. A window after an ASOF join sees
   * its partition's own (held back by the left rows it holds), and rows an
   * old partition has yet to emit must not be late in the merged one. */
  if (!f->merge || wm < op->watermark) op->watermark = wm;
  if (f->late) op->late_rows += late;
}

/* Restore the groups of a snapshot that `f` keeps (lm_op_part_filter): all
 * of them, replacing the state, for a checkpoint of as many partitions. */
laminar_code lm_op_window_restore_part(lm_op* base, lm_state_reader* r,
                                       const lm_op_part_filter* f, laminar_error* err) {
  window_op* op = (window_op*)base;
  lm_op_window_restore_head(op, r, f);
  uint32_t nopen = lm_state_get_u32(r);
  for (uint32_t i = 0; i < nopen && !r->failed; i++) {
    int64_t start = lm_state_get_i64(r);
    int64_t ngroups = lm_state_get_i64(r);
    if (r->failed || ngroups < 0 || (uint64_t)ngroups > r->len) break;
    window* win;
    LM_TRY(window_get(op, start, &win));
    if (win->cow != NULL) { /* a copy by blocks: whole before groups go in */
      int32_t at = lm_op_open_lower_bound(op, start);
      LM_TRY(lm_op_window_cow_settle(op, at));
      win = op->open[at];
    }
    if (win->t.n != 0 && !f->merge) {
      r->failed = true; /* two windows with one start: not a snapshot of ours */
      break;
    }
    int64_t first = win->t.n, g = first;
    LM_TRY(lm_op_window_reserve(op, win, first + ngroups));
    for (int64_t j = 0; j < ngroups && !r->failed; j++) {
      LM_TRY(lm_state_table_get_keys(&win->t, g, r));
      for (int32_t a = 0; a < op->spec.naggs; a++) {
        lm_agg_states_init_group(&win->aggs[a], g);
        LM_TRY(lm_agg_restore_group(&win->aggs[a], g, r));
      }
      if (op->track) {
        win->nrows[g] = lm_state_get_i64(r);
        win->live[g] = lm_state_get_u8(r) ? 1 : 0;
        win->stamp[g] = 0;
        if (op->spec.ttl_ms > 0) win->last[g] = lm_state_get_i64(r);
      }
      if (lm_op_part_of(win->t.hash[g], f->nparts) == f->part) {
        g++;
      } else { /* another partition's group: its slot is reused, left empty */
        for (int32_t a = 0; a < op->spec.naggs; a++) {
          lm_agg_states_drop_group(&win->aggs[a], g);
          lm_agg_states_init_group(&win->aggs[a], g);
        }
      }
    }
    /* One table sized for all the groups, filled once (not grown and rehashed
     * as they come). */
    win->t.n = g;
    LM_TRY(lm_state_table_reindex(&win->t));
    for (int64_t k = first; op->panes && k < g; k++) {
      LM_TRY(lm_op_acc_group(op, op->keyset, win, k, &win->kid[k]));
    }
  }
  laminar_code rc = lm_state_reader_status(r, "window aggregate", err);
  if (rc != LAMINAR_OK) window_clear_all(op);
  return rc;
}

laminar_code lm_op_window_restore(lm_op* base, lm_state_reader* r, laminar_error* err) {
  return lm_op_window_restore_part(base, r, &lm_op_part_whole, err);
}

/* ---- lifecycle ------------------------------------------------------------------- */

void lm_op_window_destroy(lm_op* base) {
  window_op* op = (window_op*)base;
  for (int32_t i = 0; i < op->nopen; i++) lm_op_window_free(op, op->open[i]);
  for (int32_t i = 0; i < op->nspare; i++) lm_op_window_free(op, op->spare[i]);
  lm_free(op->open);
  lm_free(op->spare);
  shadow_free(op);
  lm_free(op->jwin);
  lm_free(op->jgroups);
  lm_eval_ctx_destroy(op->ctx);
  lm_free(op->key_vecs);
  lm_free(op->key_types);
  lm_free(op->arg_vecs);
  lm_free(op->arg_pos);
  lm_free(op->ord_vecs);
  lm_free(op->out_vecs);
  if (op->dvecs != NULL) {
    for (int32_t c = 0; c < op->dcols; c++) {
      lm_free((void*)op->dvecs[c].data);
      lm_free((void*)op->dvecs[c].nulls);
    }
  }
  lm_free(op->dvecs);
  lm_op_window_free(op, op->keyset);
  lm_op_window_free(op, op->acc);
  lm_op_window_free(op, op->run);
  for (int64_t i = 0; op->suf != NULL && i < lm_op_shared_panes(op); i++) {
    lm_op_window_free(op, op->suf[i]);
  }
  lm_free(op->suf);
  lm_op_slide_free(op);
  if (op->sagg != NULL) {
    for (int32_t a = 0; a < op->spec.naggs; a++) lm_agg_states_free(&op->sagg[a]);
  }
  lm_free(op->sagg);
  lm_free(op->s_start);
  lm_free(op->s_end);
  lm_free(op->s_key);
  lm_free(op->s_next);
  lm_free(op->s_parent);
  lm_free(op->s_used);
  lm_free(op->s_stamp);
  lm_free(op->s_jmark);
  lm_free(op->k_jmark);
  lm_free(op->k_first);
  lm_free(op->kmap);
  lm_free(op->kstamp);
  lm_free(op);
}

static const lm_op_vtable window_vtable = {
    .name = "window",
    .on_chunk = lm_op_window_on_chunk,
    .takes_sel = true,
    .on_watermark = window_on_watermark,
    .snapshot = lm_op_window_snapshot,
    .restore = lm_op_window_restore,
    .restore_part = lm_op_window_restore_part,
    .destroy = lm_op_window_destroy,
    .freeze = lm_op_window_freeze,
    .write_frozen = lm_op_window_write_frozen,
};

laminar_code lm_op_window_create(const lm_window_spec* spec, const lm_schema* out_schema,
                                 lm_op** out) {
  *out = NULL;
  if ((spec->size_ms <= 0 && !spec->global) ||
      out_schema->ncols != 2 + spec->nkeys + spec->naggs + (spec->emit_changes ? 1 : 0)) {
    return LAMINAR_ERR_INTERNAL;
  }
  window_op* op = lm_calloc(1, sizeof *op);
  if (op == NULL) return LAMINAR_ERR_NOMEM;
  op->base.vt = spec->session ? &lm_op_session_vtable : &window_vtable;
  op->spec = *spec;
  op->key_types = lm_calloc((size_t)spec->nkeys + 1, sizeof(lm_type));
  if (op->key_types == NULL) {
    lm_free(op);
    return LAMINAR_ERR_NOMEM;
  }
  for (int32_t c = 0; c < spec->nkeys; c++) op->key_types[c] = spec->keys[c]->type;
  if (op->spec.global) op->spec.size_ms = op->spec.hop_ms = 1;
  if (op->spec.hop_ms <= 0) op->spec.hop_ms = spec->size_ms;
  op->out_size = op->spec.size_ms;
  op->out_hop = op->spec.hop_ms;
  /* Panes when windows overlap (hop < size); a larger hop leaves gaps, and each
   * row is in one window at most. */
  /* STRING_AGG keeps arrival order, which merging panes would lose: its
   * hopping windows take each row into each of its windows instead. */
  bool arrival_order = false;
  for (int32_t a = 0; a < spec->naggs; a++)
    arrival_order |= spec->aggs[a].fn == LM_AGG_STRING_AGG;
  if (op->spec.hop_ms < op->spec.size_ms && !spec->global && !spec->session &&
      !spec->emit_changes && !spec->changelog && !arrival_order) {
    int64_t a = op->spec.size_ms, b = op->spec.hop_ms;
    while (b != 0) {
      int64_t t = a % b;
      a = b;
      b = t;
    }
    op->panes = true;
    op->spec.size_ms = op->spec.hop_ms = a; /* the pane: gcd(size, hop) */
    op->base.vt = &lm_op_hop_vtable;
  }
  bool keyset_ok = !op->panes || (lm_op_window_new(op, &op->keyset) == LAMINAR_OK &&
                                  lm_op_slide_setup(op) == LAMINAR_OK);
  op->watermark = INT64_MIN;
  op->late_floor = INT64_MIN;
  op->suf_block = op->run_block = INT64_MIN;
  op->track = spec->emit_changes || spec->changelog;
  op->flat = -1;
  /* A group's bytes: its row of the table (hash, index share, keys),
   * tracking, a pane's key id. */
  op->per_group = lm_state_table_row_bytes(op->key_types, spec->nkeys) +
                  (op->track ? 17 : 0) + (op->panes ? 4 : 0) + (spec->ttl_ms > 0 ? 8 : 0);
  op->key_vecs = lm_calloc((size_t)spec->nkeys + 1, sizeof(lm_vec));
  op->arg_vecs = lm_calloc((size_t)spec->naggs + 1, sizeof(lm_vec));
  op->ord_vecs = lm_calloc((size_t)spec->naggs + 1, sizeof(lm_vec));
  op->arg_pos = lm_calloc((size_t)spec->naggs + 1, sizeof(bool));
  op->out_vecs = lm_calloc((size_t)out_schema->ncols, sizeof(lm_vec));
  op->dvecs = lm_calloc((size_t)out_schema->ncols, sizeof(lm_vec));
  if (op->dvecs != NULL) {
    op->dcols = out_schema->ncols;
    for (int32_t c = 0; c < out_schema->ncols; c++)
      op->dvecs[c].type = out_schema->fields[c].type;
  }
  op->s_free = -1;
  bool session_ok = !spec->session || lm_op_session_init(op) == LAMINAR_OK;
  if (op->key_vecs == NULL || op->arg_vecs == NULL || op->ord_vecs == NULL ||
      op->arg_pos == NULL || op->out_vecs == NULL || op->dvecs == NULL || !session_ok ||
      !keyset_ok || lm_eval_ctx_create(&op->ctx) != LAMINAR_OK ||
      lm_schema_copy(out_schema, &op->base.out_schema) != 0) {
    lm_schema_free(&op->base.out_schema);
    lm_op_window_destroy(&op->base);
    return LAMINAR_ERR_NOMEM;
  }
  op->agg_report.ctx = op->ctx;
  *out = &op->base;
  return LAMINAR_OK;
}

/* A window, session or hop operator (they share window_op). */
static bool is_window(const lm_op* op) {
  return op->vt == &window_vtable || op->vt == &lm_op_session_vtable ||
         op->vt == &lm_op_hop_vtable;
}

int64_t lm_op_window_late_rows(const lm_op* op) {
  if (lm_op_is_expire(op))
    return lm_op_expire_late_rows(op) + lm_op_window_late_rows(op->next);
  if (lm_op_is_analytic(op)) return lm_op_analytic_late_rows(op);
  if (lm_op_is_keyed_window(op)) return lm_op_keyed_window_late_rows(op);
  return is_window(op) ? ((const window_op*)op)->late_rows : 0;
}

int64_t lm_op_window_thaws(const lm_op* base, int64_t* out_groups) {
  if (!is_window(base)) {
    *out_groups = 0;
    return 0;
  }
  const window_op* op = (const window_op*)base;
  *out_groups = op->thawed_groups;
  return op->thaws;
}

int64_t lm_op_window_state_rows(const lm_op* op) {
  if (lm_op_is_expire(op))
    return lm_op_expire_held(op) + lm_op_window_state_rows(op->next);
  if (lm_op_is_analytic(op)) return lm_op_analytic_partitions(op);
  if (lm_op_is_keyed_window(op)) return lm_op_keyed_window_state_rows(op);
  if (!is_window(op)) return 0;
  const window_op* w = (const window_op*)op;
  if (op->vt == &lm_op_session_vtable) return w->s_open;
  int64_t n = 0;
  for (int32_t i = 0; i < w->nopen; i++) n += w->open[i]->t.n;
  return n;
}

void lm_op_window_set_key_hashes(lm_op* base, const uint64_t* h) {
  if (base != NULL && is_window(base)) ((window_op*)base)->in_hashes = h;
}

void lm_op_window_set_args(lm_op* base, const lm_vec* args) {
  if (base != NULL && is_window(base)) ((window_op*)base)->in_args = args;
}

void lm_op_window_set_late_floor(lm_op* base, int64_t watermark_ms) {
  if (base != NULL && is_window(base)) ((window_op*)base)->late_floor = watermark_ms;
}

void lm_op_window_set_late_sink(lm_op* base, lm_op_sink_fn fn, void* arg) {
  if (lm_op_is_expire(base)) { /* a temporal filter's late rows: behind its horizon */
    lm_op_expire_set_late_sink(base, fn, arg);
    return;
  }
  if (base == NULL || !is_window(base)) return;
  window_op* op = (window_op*)base;
  op->late_fn = fn;
  op->late_arg = arg;
}
