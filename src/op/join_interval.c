/*
 * join_interval.c -- the interval join operator: two inputs (left, right),
 * each pair of rows of equal keys whose times lie within a bound of each
 * other (or, a window join, in one tumbling or hopping window) joined,
 * INNER / LEFT / RIGHT / FULL (op.h, lm_ijoin_spec, has the semantics and
 * streaming rules).
 *
 * State (one partition's, on its thread only):
 *  - the equality keys in a keyed state table (state/table.h): a key's row id
 *    g indexes lists[side][g], that side's held rows of the key sorted by
 *    (time, arrival) (state/rowstore.h lm_timelist);
 *  - the rows of each side in a row store (state/rowstore.h), and per slot
 *    the sum of the weights of the rows it matched (the number of matches
 *    over insert-only inputs; an outer side's rows whose sum is 0 are emitted
 *    NULL-padded when they are dropped).
 *
 * Over changelog inputs (lm_ijoin_spec.weighted) each pair is emitted with
 * the product of its rows' weights, so a `-1` row retracts the pairs its
 * `+1` made: the pairs are the Z-set join of the two inputs.
 *
 * A chunk of one side probes the other side's rows of its keys in the time
 * range its rows can match, emits the pairs the residual keeps (one chunk),
 * and holds its rows while the other side's watermark allows a match. A
 * watermark of one side drops the other side's rows it can no longer match
 * (a prefix of each key's time-sorted list), emitting an outer side's
 * unmatched ones. A window join instead holds both sides' rows until the
 * least of the watermarks closes their last window, joining each window as
 * it closes (windows up to win_done are joined; it is the least of the
 * watermarks, so a restore finds it again). Snapshots write each side's
 * rows (time, matched flag, columns); a restore reads them back into the
 * stores and rebuilds the keys from the key columns.
 */
#include "op/op.h"

#include "op/join.h"
#include "state/rowstore.h"
#include "state/table.h"
#include "util/util.h"

#include <stdlib.h>
#include <string.h>

#define IJ_SNAP_TAG 0x494A4F4Eu /* "IJON" */
#define IJ_MAX_KEYS 64

typedef struct side_state {
  lm_rowstore rows;
  int64_t* matched;    /* per slot (rows.cap): its matches' summed weights */
  int64_t matched_cap; /* slots `matched` has room for (behind rows.cap after a
                        * failed growth) */
  int64_t held;        /* rows held, all keys */
  int64_t min_ts;      /* no held row is older (INT64_MAX: none), to skip sweeps */
} side_state;

typedef struct ijoin_op {
  lm_op base;
  lm_ijoin_spec spec;
  lm_type* key_types;
  lm_eval_ctx* ctx;
  lm_state_table table;
  lm_timelist* lists[2]; /* per side, nlists entries (>= table.cap) */
  int64_t nlists;
  side_state side[2];
  int64_t wm[2]; /* inputs' watermarks, ms */
  int64_t out_wm;
  int64_t late[2];
  /* scratch: pairs (a: row of the chunk or slot of its side, b: slot of the
   * other side, -1 NULL) and per chunk row its slot (-1: not held) and state */
  int64_t *pa, *pb;
  int64_t* pw;   /* a window join: each pair's window start (NO_WINDOW: NULL) */
  int64_t* pneg; /* all -1: the NULL side of padded rows */
  uint32_t* psel;
  int64_t pcap;
  int64_t* rowslot;
  uint8_t* rowstate; /* 0 for output, 2 late or of weight 0 / NULL */
  int64_t* rowmatch; /* its matches' summed weights */
  int64_t* rowkey;   /* its key row when held */
  int64_t rcap;
  /* A changelog chunk's weights added to held rows (consolidate): the slot
   * and its weight before, to put back when the chunk fails (issue 20). */
  uint32_t* cons_slot;
  int64_t* cons_old;
  int64_t ncons;
  int64_t npairs; /* candidate pairs of the chunk under way (side_rows) */
  /* A batch that fans out (op.h, lm_op_txn): what its chunks changed, kept
   * until it ends (an abort takes it back, hold_end): the key rows, late
   * rows and least times before it, and per change an entry. */
  bool held;
  int64_t h_keys0, h_late0[2], h_min_ts0[2];
  struct hold_entry* hu;
  int64_t hn, hcap;
  uint64_t* hashes;
  lm_join_out o;         /* lcols + rcols */
  lm_join_out in_buf[2]; /* a routed chunk's rows (lm_chunk.sel) made dense, per side */
  uint8_t* mark;         /* compaction scratch */
  /* A window join: windows ending at or before win_done (units) are joined;
   * closing scratch: per side the (slot, window) of rows an outer side may
   * emit unmatched, and per (key, window) joined the ends of its pairs and
   * of those rows (grp, 3 per entry). */
  int64_t win_done;
  int64_t *cs[2], *cw[2];
  int64_t ccap[2];
  int64_t* grp;
  int64_t gcap;
  /* Late side output (lm_op_ijoin_set_late_sink), NULL: none. */
  lm_op_sink_fn late_fn;
  void* late_arg;
} ijoin_op;

#define NO_WINDOW INT64_MIN /* a joined row of no window: window columns NULL */

static const lm_op_vtable ijoin_vtable;

static bool is_ijoin(const lm_op* op) { return op != NULL && op->vt == &ijoin_vtable; }

/* ---- time ------------------------------------------------------------------------------ */


static int64_t window_units(const ijoin_op* j) {
  return lm_join_to_units(j->spec.time_type, j->spec.window_ms);
}

static int64_t slide_units(const ijoin_op* j) {
  int64_t ms = j->spec.slide_ms > 0 ? j->spec.slide_ms : j->spec.window_ms;
  return lm_join_to_units(j->spec.time_type, ms);
}

/* The start of the last window holding t (floor to a multiple of the slide). */
static int64_t last_window(const ijoin_op* j, int64_t t) {
  int64_t w = slide_units(j);
  int64_t m = t % w;
  return lm_join_sat_sub(t, m < 0 ? m + w : m);
}

/* The start of the first window holding t: the least multiple of the slide
 * past t - size (past last_window(t) when t falls in no window). */
static int64_t first_window(const ijoin_op* j, int64_t t) {
  return lm_join_sat_add(last_window(j, lm_join_sat_sub(t, window_units(j))),
                         slide_units(j));
}

/* The times [*lo, *hi] of the other side a row of `side` at time t matches
 * (an interval join). */
static void match_range(const ijoin_op* j, int32_t side, int64_t t, int64_t* lo,
                        int64_t* hi) {
  if (side == 0) {
    *lo = lm_join_sat_add(t, j->spec.lo);
    *hi = lm_join_sat_add(t, j->spec.hi);
  } else {
    *lo = lm_join_sat_add(t, -j->spec.hi);
    *hi = lm_join_sat_add(t, -j->spec.lo);
  }
}

/* Whether a row of `side` at t can still match a future row of the other
 * side, whose watermark (ms) is wm: some time >= wm lies in its range. */
static bool can_match(const ijoin_op* j, int32_t side, int64_t t, int64_t wm) {
  if (wm == INT64_MAX) return false;
  int64_t lo, hi;
  match_range(j, side, t, &lo, &hi);
  return hi >= lm_join_to_units(j->spec.time_type, wm);
}

/* ---- scratch and output ------------------------------------------------------------------ */

static laminar_code reserve_pairs(ijoin_op* j, int64_t n) {
  if (n <= j->pcap) return LAMINAR_OK;
  int64_t nc = j->pcap ? j->pcap : 256;
  while (nc < n) nc *= 2;
  int64_t* a = lm_realloc(j->pa, sizeof *a * (size_t)nc);
  if (a == NULL) return LAMINAR_ERR_NOMEM;
  j->pa = a;
  int64_t* b = lm_realloc(j->pb, sizeof *b * (size_t)nc);
  if (b == NULL) return LAMINAR_ERR_NOMEM;
  j->pb = b;
  uint32_t* s = lm_realloc(j->psel, sizeof *s * (size_t)nc);
  if (s == NULL) return LAMINAR_ERR_NOMEM;
  j->psel = s;
  int64_t* w = lm_realloc(j->pw, sizeof *w * (size_t)nc);
  if (w == NULL) return LAMINAR_ERR_NOMEM;
  j->pw = w;
  int64_t* neg = lm_realloc(j->pneg, sizeof *neg * (size_t)nc);
  if (neg == NULL) return LAMINAR_ERR_NOMEM;
  for (int64_t k = j->pcap; k < nc; k++) neg[k] = -1;
  j->pneg = neg;
  j->pcap = nc;
  return LAMINAR_OK;
}


/* Output columns of `side` for n rows: idx[k] a row of chunk `in` (in != NULL)
 * or a slot of the side's store, -1 NULL. */
static void fill_side(ijoin_op* j, int32_t side, const lm_chunk* in, const int64_t* idx,
                      int64_t n) {
  const lm_rowstore* st = &j->side[side].rows;
  int32_t first = side == 0 ? 0 : j->spec.lcols;
  for (int32_t c = 0; c < st->ncols; c++) {
    int32_t oc = first + c;
    lm_type type = j->o.vecs[oc].type;
    if (!st->keep[c]) { /* no one reads it: zeros */
      j->o.vecs[oc] = (lm_vec){type, n, NULL, j->o.zeros};
      continue;
    }
    int64_t w = lm_type_width(type);
    const char* src =
        in != NULL ? (const char*)in->cols[c].data : (const char*)st->data[c];
    const uint8_t* snl = in != NULL ? in->cols[c].nulls : st->nulls[c];
    char* dst = j->o.data[oc];
    uint8_t* nl = j->o.nulls[oc];
    bool any_null = false;
    for (int64_t k = 0; k < n; k++) {
      int64_t s = idx[k];
      if (s < 0 || (snl != NULL && snl[s])) {
        nl[k] = 1;
        memset(dst + k * w, 0, (size_t)w);
        any_null = true;
      } else {
        nl[k] = 0;
        lm_copy_value(dst + k * w, src + s * w, w);
      }
    }
    j->o.vecs[oc] = (lm_vec){type, n, any_null ? nl : NULL, dst};
  }
}

/* The weight of row idx of `side` (a row of chunk `in`, or a slot of the
 * side's store when in is NULL): its _weight, 1 for an insert-only side or
 * idx -1 (a NULL-padded side), 0 for a NULL weight. */
static int64_t row_weight(const ijoin_op* j, int32_t side, const lm_chunk* in,
                          int64_t idx) {
  int32_t wc = side == 0 ? j->spec.lweight : j->spec.rweight;
  if (!j->spec.weighted || wc < 0 || idx < 0) return 1;
  const lm_rowstore* st = &j->side[side].rows;
  const int64_t* w = in != NULL ? in->cols[wc].data : (const int64_t*)st->data[wc];
  const uint8_t* nl = in != NULL ? in->cols[wc].nulls : st->nulls[wc];
  return nl != NULL && nl[idx] ? 0 : w[idx];
}

/* Whether row r of chunk `in` (side s) equals slot `slot` of the side's
 * store in every column the store keeps but the weight (values bitwise, NULL
 * equal to NULL): the same row of a changelog. */
static bool same_row(const ijoin_op* j, int32_t s, const lm_chunk* in, int64_t r,
                     uint32_t slot) {
  const lm_rowstore* st = &j->side[s].rows;
  int32_t wc = s == 0 ? j->spec.lweight : j->spec.rweight;
  for (int32_t c = 0; c < st->ncols; c++) {
    if (!st->keep[c] || c == wc) continue;
    const lm_vec* v = &in->cols[c];
    bool na = v->nulls != NULL && v->nulls[r];
    bool nb = st->nulls[c] != NULL && st->nulls[c][slot];
    if (na != nb) return false;
    if (na) continue;
    if (lm_type_is_bytes(st->types[c])) {
      const lm_str* x = (const lm_str*)v->data + r;
      const lm_str* y = (const lm_str*)st->data[c] + slot;
      if (x->len != y->len || (x->len > 0 && memcmp(x->ptr, y->ptr, (size_t)x->len) != 0))
        return false;
      continue;
    }
    int64_t w = lm_type_width(st->types[c]);
    if (memcmp((const char*)v->data + r * w, (const char*)st->data[c] + slot * w,
               (size_t)w) != 0)
      return false;
  }
  return true;
}

/* A changelog row of `side` (chunk row r at time t, key row g) that a held
 * row equals: its weight added to that row's (a `-1` cancels its `+1`), so
 * the held rows stay one per distinct row and the pairs a retraction makes
 * retract pairs already emitted. False when no held row equals it. */
static bool consolidate(ijoin_op* j, int32_t side, const lm_chunk* in, int64_t r,
                        int64_t g, int64_t t) {
  int32_t wc = side == 0 ? j->spec.lweight : j->spec.rweight;
  if (!j->spec.weighted || wc < 0) return false;
  const lm_timelist* kl = &j->lists[side][g];
  int32_t end = lm_timelist_upper(kl, t);
  for (int32_t i = lm_timelist_lower(kl, t); i < end; i++) {
    uint32_t slot = kl->slot[i];
    if (!same_row(j, side, in, r, slot)) continue;
    int64_t* w = (int64_t*)j->side[side].rows.data[wc] + slot;
    j->cons_slot[j->ncons] = slot; /* journaled (issue 20) */
    j->cons_old[j->ncons++] = *w;
    *w = lm_join_sat_add(*w, row_weight(j, side, in, r));
    return true;
  }
  return false;
}

/* The joined rows' weights (the last output column of a join over a
 * changelog): the products of their sides' (saturating). */
static void fill_weight(ijoin_op* j, int32_t side, const lm_chunk* in,
                        const int64_t* idx_a, const int64_t* idx_b, int64_t n) {
  if (!j->spec.weighted) return;
  int32_t oc = j->o.ncols - 1;
  if (j->o.need != NULL && !j->o.need[oc]) {
    j->o.vecs[oc] = (lm_vec){LM_TYPE_INT64, n, NULL, j->o.zeros};
    return;
  }
  int64_t* dst = j->o.data[oc];
  for (int64_t k = 0; k < n; k++) {
    int64_t a = row_weight(j, side, in, idx_a[k]);
    int64_t b = row_weight(j, 1 - side, NULL, idx_b[k]);
    if (__builtin_mul_overflow(a, b, &dst[k]))
      dst[k] = (a < 0) != (b < 0) ? INT64_MIN : INT64_MAX;
  }
  j->o.vecs[oc] = (lm_vec){LM_TYPE_INT64, n, NULL, dst};
}

/* A window join: the window_start and window_end columns of `side` for n
 * joined rows, from their windows (pw): NULL where the side is NULL (idx -1)
 * or the row is of no window. */
static void fill_windows(ijoin_op* j, int32_t side, const int64_t* idx, int64_t n) {
  int32_t oc = side == 0 ? j->spec.lwin : j->spec.lcols + j->spec.rwin;
  int64_t size = window_units(j);
  for (int32_t c = oc; c <= oc + 1; c++) {
    if (j->o.need != NULL && !j->o.need[c]) continue; /* zeros: no one reads it */
    int64_t* dst = j->o.data[c];
    uint8_t* nl = j->o.nulls[c];
    bool any_null = false;
    for (int64_t k = 0; k < n; k++) {
      bool none = idx[k] < 0 || j->pw[k] == NO_WINDOW;
      nl[k] = none;
      any_null = any_null || none;
      dst[k] = none ? 0 : c == oc ? j->pw[k] : lm_join_sat_add(j->pw[k], size);
    }
    j->o.vecs[c] = (lm_vec){j->o.vecs[c].type, n, any_null ? nl : NULL, dst};
  }
}

/* The output columns of n joined rows: side `side` from idx_a (chunk rows of
 * `in`, or slots when in is NULL), the other from slots idx_b (-1: NULL),
 * and their weights. */
static laminar_code fill_rows(ijoin_op* j, int32_t side, const lm_chunk* in,
                              const int64_t* idx_a, const int64_t* idx_b, int64_t n) {
  LM_TRY(lm_join_out_reserve(&j->o, n));
  fill_side(j, side, in, idx_a, n);
  fill_side(j, 1 - side, NULL, idx_b, n);
  fill_weight(j, side, in, idx_a, idx_b, n);
  if (j->spec.window_ms > 0) {
    fill_windows(j, side, idx_a, n);
    fill_windows(j, 1 - side, idx_b, n);
  }
  return LAMINAR_OK;
}

/* Emit n rows as fill_rows fills them. */
static laminar_code emit_rows(ijoin_op* j, int32_t side, const lm_chunk* in,
                              const int64_t* idx_a, const int64_t* idx_b, int64_t n) {
  if (n == 0) return LAMINAR_OK;
  LM_TRY(fill_rows(j, side, in, idx_a, idx_b, n));
  lm_chunk out = {n, j->o.ncols, j->o.vecs, NULL};
  return lm_op_emit(&j->base, &out);
}

/* ---- state ------------------------------------------------------------------------------- */

/* The key row of row `row` (hash h) of the key columns, added when new. */
static laminar_code key_row(ijoin_op* j, uint64_t h, const lm_vec* keys, int64_t row,
                            int64_t* out) {
  void** arrays[] = {(void**)&j->lists[0], (void**)&j->lists[1]};
  const size_t sizes[] = {sizeof(lm_timelist), sizeof(lm_timelist)};
  return lm_join_key_row(&j->table, h, keys, row, arrays, sizes, 2, &j->nlists, out);
}

static laminar_code reserve_side(ijoin_op* j, int32_t side, int64_t more) {
  side_state* ss = &j->side[side];
  LM_TRY(lm_rowstore_reserve(&ss->rows, ss->rows.used + more));
  if (ss->rows.cap > ss->matched_cap || ss->matched == NULL) {
    int64_t nc = ss->rows.cap ? ss->rows.cap : 1;
    int64_t* m = lm_realloc(ss->matched, sizeof *m * (size_t)nc);
    if (m == NULL) return LAMINAR_ERR_NOMEM;
    ss->matched = m;
    ss->matched_cap = nc;
  }
  return LAMINAR_OK;
}

/* Hold slot `slot` (time t) of `side` under key row g. */
static laminar_code hold(ijoin_op* j, int32_t side, int64_t g, int64_t t, uint32_t slot) {
  side_state* ss = &j->side[side];
  LM_TRY(lm_timelist_insert(&j->lists[side][g], t, slot));
  ss->held++;
  if (t < ss->min_ts) ss->min_ts = t;
  return LAMINAR_OK;
}

/* Evaluate the side's key expressions over cols (n rows) and hash them. */
static laminar_code eval_keys(ijoin_op* j, int32_t side, const lm_vec* cols,
                              const uint32_t* sel, int64_t n, lm_vec* keys) {
  const lm_expr* const* ex = side == 0 ? j->spec.lkeys : j->spec.rkeys;
  for (int32_t k = 0; k < j->spec.nkeys; k++)
    LM_TRY(lm_expr_eval(j->ctx, ex[k], cols, sel, n, &keys[k]));
  if (n > j->rcap) {
    int64_t nc = j->rcap ? j->rcap : 256;
    while (nc < n) nc *= 2;
    LM_GROW_ARRAY(j->hashes, nc);
    LM_GROW_ARRAY(j->rowslot, nc);
    LM_GROW_ARRAY(j->rowstate, nc);
    LM_GROW_ARRAY(j->rowmatch, nc);
    LM_GROW_ARRAY(j->rowkey, nc);
    LM_GROW_ARRAY(j->cons_slot, nc);
    LM_GROW_ARRAY(j->cons_old, nc);
    j->rcap = nc;
  }
  lm_state_hash_rows(keys, j->spec.nkeys, NULL, n, j->hashes);
  return LAMINAR_OK;
}

static bool key_is_null(const ijoin_op* j, const lm_vec* keys, int64_t row) {
  for (int32_t k = 0; k < j->spec.nkeys; k++) {
    if (keys[k].nulls != NULL && keys[k].nulls[row]) return true;
  }
  return false;
}

/* ---- a chunk of one side ---------------------------------------------------------------- */

/* ---- a batch that fans out (op.h, lm_op_txn) -------------------------------------------- */

static laminar_code account(ijoin_op* j);

/* A change a held batch made: a row held (slot of `side` under key row g at
 * time v), a weight consolidated (slot's weight was v), matches counted
 * (v added to slot's). */
typedef enum { HOLD_ROW, HOLD_WEIGHT, HOLD_MATCH } hold_kind;
typedef struct hold_entry {
  uint8_t kind, side;
  uint32_t slot;
  int64_t g, v;
} hold_entry;

/* The end of a batch the join held: an abort takes its changes back, newest
 * first (allocating nothing), so the join is as before the batch; either
 * way they are forgotten. */
static laminar_code hold_end(void* a, void* b, bool commit) {
  (void)b;
  ijoin_op* j = a;
  for (int64_t k = commit ? -1 : j->hn - 1; k >= 0; k--) {
    const hold_entry* e = &j->hu[k];
    side_state* ss = &j->side[e->side];
    if (e->kind == HOLD_MATCH) {
      ss->matched[e->slot] -= e->v;
    } else if (e->kind == HOLD_WEIGHT) {
      int32_t wc = e->side == 0 ? j->spec.lweight : j->spec.rweight;
      ((int64_t*)ss->rows.data[wc])[e->slot] = e->v;
    } else {
      lm_timelist_remove(&j->lists[e->side][e->g], e->v, e->slot);
      lm_rowstore_release(&ss->rows, e->slot);
      ss->held--;
    }
  }
  if (!commit) {
    for (int32_t s = 0; s < 2; s++) {
      j->late[s] = j->h_late0[s];
      j->side[s].min_ts = j->h_min_ts0[s];
    }
    lm_timelist* lists[] = {j->lists[0], j->lists[1]};
    lm_join_keys_truncate(&j->table, lists, 2, j->h_keys0);
    (void)account(j);
  }
  j->held = false;
  j->hn = 0;
  return LAMINAR_OK;
}

/* The late rows of chunk `in` of side s (rowstate 3) to the late sink, if
 * any: the joined row's columns, the other side's (and windows) NULL. Run
 * once the chunk's output went downstream: it reuses the output columns. */
static laminar_code deliver_late(ijoin_op* j, int32_t s, const lm_chunk* in) {
  if (j->late_fn == NULL) return LAMINAR_OK;
  int64_t n = 0;
  LM_TRY(reserve_pairs(j, in->nrows));
  for (int64_t r = 0; r < in->nrows; r++) {
    if (j->rowstate[r] != 3) continue;
    j->pw[n] = NO_WINDOW;
    j->pa[n++] = r;
  }
  if (n == 0) return LAMINAR_OK;
  LM_TRY(fill_rows(j, s, in, j->pa, j->pneg, n));
  lm_chunk late = {n, j->o.ncols, j->o.vecs, NULL};
  return j->late_fn(j->late_arg, &late);
}

/* A chunk of a batch that fans out: the join joins it before any change. */
static laminar_code hold_begin(ijoin_op* j) {
  if (!lm_op_txn_active(&j->base)) return LAMINAR_OK;
  bool first;
  LM_TRY(lm_op_txn_join(&j->base, hold_end, &first));
  if (first) {
    j->held = true;
    j->hn = 0;
    j->h_keys0 = j->table.n;
    for (int32_t s = 0; s < 2; s++) {
      j->h_late0[s] = j->late[s];
      j->h_min_ts0[s] = j->side[s].min_ts;
    }
  }
  return LAMINAR_OK;
}

/* Room for n more entries (before the chunk's changes are final). */
static laminar_code hold_reserve(ijoin_op* j, int64_t n) {
  if (!j->held || j->hn + n <= j->hcap) return LAMINAR_OK;
  int64_t nc = 2 * (j->hn + n);
  LM_GROW_ARRAY(j->hu, nc);
  j->hcap = nc;
  return LAMINAR_OK;
}

/* What a chunk of one side changed so far (side_undo takes it back): the
 * key rows and late count and least time before it, the chunk rows gone
 * through (their rowslot / rowkey set), the pairs whose matches are
 * counted. */
typedef struct side_mark {
  int64_t keys0, late0, min_ts0;
  int64_t rows; /* chunk rows [0, rows) processed */
  int64_t np;   /* pairs pa/pb[0, np) counted in the other side's matches */
} side_mark;

/* Probe and hold the rows of chunk `in` of side s (keys evaluated, tv its
 * time column): the candidate pairs into pa/pb[0, j->npairs), each row's
 * slot and key row when held (rowslot, rowkey). */
static laminar_code side_rows(ijoin_op* j, int32_t s, const lm_chunk* in,
                              const lm_vec* keys, const lm_vec* tv, int64_t wm_self,
                              side_mark* m) {
  int32_t o = 1 - s;
  int64_t np = 0;
  for (int64_t r = 0; r < in->nrows; r++) {
    m->rows = r + 1;
    j->rowslot[r] = -1;
    j->rowstate[r] = 0;
    j->rowmatch[r] = 0;
    if (row_weight(j, s, in, r) == 0) { /* changes nothing */
      j->rowstate[r] = 2;
      continue;
    }
    if (tv->nulls != NULL && tv->nulls[r]) continue; /* no time: matches nothing */
    int64_t t = ((const int64_t*)tv->data)[r];
    if (t < wm_self) {
      j->late[s]++;
      j->rowstate[r] = 3;
      continue;
    }
    if (key_is_null(j, keys, r)) continue; /* a NULL key never matches */
    int64_t g = lm_state_table_find(&j->table, j->hashes[r], keys, r);
    bool windowed = j->spec.window_ms > 0; /* joined when the window closes */
    if (g >= 0 && !windowed) {
      const lm_timelist* kl = &j->lists[o][g];
      int64_t lo, hi;
      match_range(j, s, t, &lo, &hi);
      int32_t i = lm_timelist_lower(kl, lo);
      int32_t end = lm_timelist_upper(kl, hi);
      if (end > i) {
        LM_TRY(reserve_pairs(j, np + (end - i)));
        for (; i < end; i++) {
          if (row_weight(j, o, NULL, kl->slot[i]) == 0) continue; /* cancelled */
          j->pa[np] = r;
          j->pb[np++] = kl->slot[i];
        }
      }
    }
    if (!windowed && !can_match(j, s, t, j->wm[o])) continue;
    if (g >= 0 && consolidate(j, s, in, r, g, t)) {
      j->rowstate[r] = 2; /* its held twin stands for it */
      continue;
    }
    if (g < 0) LM_TRY(key_row(j, j->hashes[r], keys, r, &g));
    uint32_t slot = lm_rowstore_take(&j->side[s].rows);
    laminar_code rc = lm_rowstore_put(&j->side[s].rows, slot, in->cols, r);
    if (rc == LAMINAR_OK) rc = hold(j, s, g, t, slot);
    if (rc != LAMINAR_OK) {
      lm_rowstore_release(&j->side[s].rows, slot);
      return rc;
    }
    j->side[s].matched[slot] = 0;
    j->rowslot[r] = slot;
    j->rowkey[r] = g;
  }
  j->npairs = np;
  return LAMINAR_OK;
}

/* The pairs side_rows found (the residual decides which are matches, their
 * matches counted), then an outer side's rows of the chunk that matched
 * nothing and are not held, NULL-padded, emitted as one chunk. */
static laminar_code side_emit(ijoin_op* j, int32_t s, const lm_chunk* in,
                              const lm_vec* tv, side_mark* m) {
  int32_t o = 1 - s;
  int64_t np = j->npairs, nk = np;
  if (np > 0) {
    LM_TRY(fill_rows(j, s, in, j->pa, j->pb, np));
    if (j->spec.residual != NULL) {
      LM_TRY(lm_expr_filter(j->ctx, j->spec.residual, j->o.vecs, NULL, np, j->psel, &nk));
      for (int64_t k = 0; k < nk; k++) {
        j->pa[k] = j->pa[j->psel[k]];
        j->pb[k] = j->pb[j->psel[k]];
      }
    }
  }
  bool keep = s == 0 ? j->spec.keep_left : j->spec.keep_right;
  LM_TRY(reserve_pairs(j, nk + (keep ? in->nrows : 0)));
  LM_TRY(hold_reserve(j, m->rows + j->ncons + nk)); /* side_keep's */
  for (int64_t k = 0; k < nk; k++) {
    int64_t r = j->pa[k];
    int64_t wo = row_weight(j, o, NULL, j->pb[k]);
    j->side[o].matched[j->pb[k]] += row_weight(j, s, in, r);
    j->rowmatch[r] += wo;
    if (j->rowslot[r] >= 0) j->side[s].matched[j->rowslot[r]] += wo;
  }
  m->np = nk;
  /* An outer side's rows that matched nothing and are not held: now (of a
   * window join, once per window of the row). */
  int64_t n = nk;
  for (int64_t r = 0; keep && r < in->nrows; r++) {
    if (j->rowstate[r] != 0 || j->rowmatch[r] != 0 || j->rowslot[r] >= 0) continue;
    if (j->spec.window_ms <= 0 || (tv->nulls != NULL && tv->nulls[r])) {
      j->pw[n] = NO_WINDOW;
      j->pa[n] = r;
      j->pb[n++] = -1;
      continue;
    }
    int64_t t = ((const int64_t*)tv->data)[r];
    for (int64_t w = first_window(j, t), last = last_window(j, t); w <= last;) {
      LM_TRY(reserve_pairs(j, n + 1));
      j->pw[n] = w;
      j->pa[n] = r;
      j->pb[n++] = -1;
      int64_t next = lm_join_sat_add(w, slide_units(j));
      if (next <= w) break;
      w = next;
    }
  }
  if (n == 0) return LAMINAR_OK;
  if (nk == np && n == np) { /* the pairs as filled */
    lm_chunk out = {np, j->o.ncols, j->o.vecs, NULL};
    return lm_op_emit(&j->base, &out);
  }
  return emit_rows(j, s, in, j->pa, j->pb, n);
}

/* A chunk of side s of a held batch went through: what it changed is kept
 * (room reserved by side_emit) until the batch ends. */
static void side_keep(ijoin_op* j, int32_t s, const lm_chunk* in, const lm_vec* tv,
                      const side_mark* m) {
  for (int64_t r = 0; r < m->rows; r++) {
    if (j->rowslot[r] < 0) continue;
    j->hu[j->hn++] = (hold_entry){HOLD_ROW, (uint8_t)s, (uint32_t)j->rowslot[r],
                                  j->rowkey[r], ((const int64_t*)tv->data)[r]};
  }
  for (int64_t k = 0; k < j->ncons; k++)
    j->hu[j->hn++] =
        (hold_entry){HOLD_WEIGHT, (uint8_t)s, j->cons_slot[k], 0, j->cons_old[k]};
  for (int64_t k = 0; k < m->np; k++)
    j->hu[j->hn++] = (hold_entry){HOLD_MATCH, (uint8_t)(1 - s), (uint32_t)j->pb[k], 0,
                                  row_weight(j, s, in, j->pa[k])};
}

/* A chunk of side s failed: the other side's matches it counted, the
 * weights it consolidated, the rows it held (newest first), its key rows
 * and late rows go back. Allocates nothing. */
static void side_undo(ijoin_op* j, int32_t s, const lm_chunk* in, const lm_vec* tv,
                      const side_mark* m) {
  side_state* ss = &j->side[s];
  for (int64_t k = 0; k < m->np; k++)
    j->side[1 - s].matched[j->pb[k]] -= row_weight(j, s, in, j->pa[k]);
  int32_t wc = s == 0 ? j->spec.lweight : j->spec.rweight;
  for (int64_t k = j->ncons - 1; k >= 0; k--)
    ((int64_t*)ss->rows.data[wc])[j->cons_slot[k]] = j->cons_old[k];
  j->ncons = 0;
  for (int64_t r = m->rows - 1; r >= 0; r--) {
    if (j->rowslot[r] < 0) continue;
    uint32_t slot = (uint32_t)j->rowslot[r];
    lm_timelist_remove(&j->lists[s][j->rowkey[r]], ((const int64_t*)tv->data)[r], slot);
    lm_rowstore_release(&ss->rows, slot);
    ss->held--;
  }
  ss->min_ts = m->min_ts0;
  j->late[s] = m->late0;
  lm_timelist* lists[] = {j->lists[0], j->lists[1]};
  lm_join_keys_truncate(&j->table, lists, 2, m->keys0);
}

/* Probe, emit the pairs, hold the rows that can still match, and emit an
 * outer side's rows that cannot (and matched nothing). */
/* Thread-per-core hands a partition the whole batch with its rows as a
 * selection (op.h lm_chunk): those rows of side s's columns, dense, in
 * *out (valid until the next call for that side). */
static laminar_code densify(ijoin_op* j, int32_t s, const lm_chunk* in, lm_chunk* out) {
  lm_join_out* b = &j->in_buf[s];
  LM_TRY(lm_join_out_reserve(b, in->nrows));
  for (int32_t c = 0; c < b->ncols; c++) {
    lm_type type = b->vecs[c].type;
    if (b->need != NULL && !b->need[c]) { /* never read */
      b->vecs[c] = (lm_vec){type, in->nrows, NULL, b->zeros};
      continue;
    }
    int64_t w = lm_type_width(type);
    const char* src = in->cols[c].data;
    const uint8_t* snl = in->cols[c].nulls;
    char* dst = b->data[c];
    for (int64_t k = 0; k < in->nrows; k++) {
      lm_copy_value(dst + k * w, src + (int64_t)in->sel[k] * w, w);
      if (snl != NULL) b->nulls[c][k] = snl[in->sel[k]];
    }
    b->vecs[c] = (lm_vec){type, in->nrows, snl != NULL ? b->nulls[c] : NULL, dst};
  }
  *out = (lm_chunk){in->nrows, b->ncols, b->vecs, NULL};
  return LAMINAR_OK;
}

/* A chunk of side s (all or nothing); *applied: whether it went in (false:
 * the join is as before it). */
static laminar_code side_chunk(ijoin_op* j, int32_t s, const lm_chunk* routed,
                               bool* applied) {
  *applied = false;
  lm_chunk dense;
  const lm_chunk* in = routed;
  if (routed->sel != NULL) {
    LM_TRY(densify(j, s, routed, &dense));
    in = &dense;
  }
  lm_vec keys[IJ_MAX_KEYS];
  LM_TRY(eval_keys(j, s, in->cols, NULL, in->nrows, keys));
  const lm_vec* tv = &in->cols[s == 0 ? j->spec.ltime : j->spec.rtime];
  int64_t wm_self = lm_join_to_units(j->spec.time_type, j->wm[s]);
  LM_TRY(reserve_side(j, s, in->nrows));
  /* All or nothing (issue 20): what the rows change is journaled (the rows
   * held, rowslot / rowkey; the weights consolidated; the matches counted)
   * and the pairs and an outer side's rows that cannot match go downstream
   * as one chunk; a failure anywhere takes it all back (side_undo). */
  LM_TRY(hold_begin(j));
  side_mark m = {j->table.n, j->late[s], j->side[s].min_ts, 0, 0};
  j->ncons = 0;
  laminar_code rc = side_rows(j, s, in, keys, tv, wm_self, &m);
  if (rc == LAMINAR_OK) rc = side_emit(j, s, in, tv, &m);
  if (rc != LAMINAR_OK) {
    lm_eval_ctx_reset(j->ctx);
    side_undo(j, s, in, tv, &m);
    return rc;
  }
  if (j->held) side_keep(j, s, in, tv, &m);
  *applied = true;
  /* The late rows once the chunk's output went downstream (they reuse its
   * columns); a failure of the late output leaves the chunk applied, as a
   * window's late rows do (a held batch's abort still takes it back). */
  rc = deliver_late(j, s, in);
  lm_eval_ctx_reset(j->ctx);
  return rc;
}

/* ---- watermarks ---------------------------------------------------------------------------- */

/* Drop the rows of `side` no row of the other side at or after its
 * watermark can match, emitting an outer side's unmatched ones. They are
 * dropped only once those went through (issue 20): a failure leaves them
 * held, evicted again at the next watermark advance. */
static laminar_code evict(ijoin_op* j, int32_t side) {
  side_state* ss = &j->side[side];
  int64_t wm = j->wm[1 - side];
  if (ss->held == 0 || can_match(j, side, ss->min_ts, wm)) return LAMINAR_OK;
  bool keep = side == 0 ? j->spec.keep_left : j->spec.keep_right;
  /* 1. the unmatched rows of an outer side that go, emitted */
  int64_t m = 0;
  for (int64_t g = 0; keep && g < j->table.n; g++) {
    const lm_timelist* kl = &j->lists[side][g];
    for (int32_t i = kl->head; i < kl->n && !can_match(j, side, kl->ts[i], wm); i++) {
      if (ss->matched[kl->slot[i]] != 0 || row_weight(j, side, NULL, kl->slot[i]) == 0)
        continue; /* matched (its pairs' weights sum to non-zero) or weighs nothing */
      LM_TRY(reserve_pairs(j, m + 1));
      j->pb[m++] = kl->slot[i];
    }
  }
  LM_TRY(emit_rows(j, side, NULL, j->pb, j->pneg, m));
  /* 2. they went through: every row that goes is dropped (nothing fails) */
  int64_t min_ts = INT64_MAX;
  for (int64_t g = 0; g < j->table.n; g++) {
    lm_timelist* kl = &j->lists[side][g];
    int32_t i = kl->head;
    while (i < kl->n && !can_match(j, side, kl->ts[i], wm))
      lm_rowstore_release(&ss->rows, kl->slot[i++]);
    ss->held -= i - kl->head;
    kl->head = i;
    if (kl->head == kl->n) kl->head = kl->n = 0;
    if (kl->n > kl->head && kl->ts[kl->head] < min_ts) min_ts = kl->ts[kl->head];
  }
  ss->min_ts = min_ts;
  return LAMINAR_OK;
}

/* Room for n entries of an int64 scratch array (*cap entries now). */
static laminar_code grow(int64_t** a, int64_t* cap, int64_t n) {
  if (n <= *cap) return LAMINAR_OK;
  int64_t nc = *cap ? *cap : 256;
  while (nc < n) nc *= 2;
  int64_t* p = lm_realloc(*a, sizeof *p * (size_t)nc);
  if (p == NULL) return LAMINAR_ERR_NOMEM;
  *a = p;
  *cap = nc;
  return LAMINAR_OK;
}

/* Room for n closing candidates of side s. */
static laminar_code reserve_cands(ijoin_op* j, int32_t s, int64_t n) {
  if (n <= j->ccap[s]) return LAMINAR_OK;
  int64_t cap = j->ccap[s];
  LM_TRY(grow(&j->cs[s], &cap, n));
  cap = j->ccap[s];
  LM_TRY(grow(&j->cw[s], &cap, n));
  j->ccap[s] = cap;
  return LAMINAR_OK;
}

/* Window w (start, units) of key row g: its pairs into pa/pb/pw from *np,
 * the rows an outer side may emit unmatched into cs/cw from nc[s], and the
 * ends of both as one more group. */
static laminar_code gather_window(ijoin_op* j, int64_t g, int64_t w, int64_t* np,
                                  int64_t nc[2], int64_t* ng) {
  const lm_timelist* l[2] = {&j->lists[0][g], &j->lists[1][g]};
  int64_t we = lm_join_sat_add(w, window_units(j));
  int32_t at[2], end[2];
  for (int s = 0; s < 2; s++) {
    at[s] = lm_timelist_lower(l[s], w);
    end[s] = lm_timelist_lower(l[s], we);
  }
  int64_t most = (int64_t)(end[0] - at[0]) * (end[1] - at[1]);
  if (most > 0) {
    LM_TRY(reserve_pairs(j, *np + most));
    for (int32_t a = at[0]; a < end[0]; a++) {
      if (row_weight(j, 0, NULL, l[0]->slot[a]) == 0) continue; /* cancelled */
      for (int32_t b = at[1]; b < end[1]; b++) {
        if (row_weight(j, 1, NULL, l[1]->slot[b]) == 0) continue;
        j->pa[*np] = l[0]->slot[a];
        j->pb[*np] = l[1]->slot[b];
        j->pw[(*np)++] = w;
      }
    }
  }
  for (int32_t s = 0; s < 2; s++) {
    if (!(s == 0 ? j->spec.keep_left : j->spec.keep_right)) continue;
    LM_TRY(reserve_cands(j, s, nc[s] + (end[s] - at[s])));
    for (int32_t i = at[s]; i < end[s]; i++) {
      if (row_weight(j, s, NULL, l[s]->slot[i]) == 0) continue;
      j->cs[s][nc[s]] = l[s]->slot[i];
      j->cw[s][nc[s]++] = w;
    }
  }
  LM_TRY(grow(&j->grp, &j->gcap, 3 * (*ng + 1)));
  j->grp[3 * *ng] = *np;
  j->grp[3 * *ng + 1] = nc[0];
  j->grp[3 * *ng + 2] = nc[1];
  (*ng)++;
  return LAMINAR_OK;
}

/* The pairs of ng groups (pa/pb/pw[0..np)) the residual keeps, marked per
 * window: each outer side's candidates (cs/cw[s], up to each group's end) that matched
 * nothing in their window are compacted to the front (*nun[s] of them), and
 * the marks cleared again (a row of several windows starts each unmatched).
 * *nk: the kept pairs, compacted to the front of pa/pb/pw, their output
 * columns filled (o) when none was dropped. */
static laminar_code match_windows(ijoin_op* j, int64_t np, int64_t ng, int64_t nun[2],
                                  int64_t* nk) {
  *nk = np;
  if (np > 0) {
    LM_TRY(fill_rows(j, 0, NULL, j->pa, j->pb, np));
    if (j->spec.residual != NULL)
      LM_TRY(lm_expr_filter(j->ctx, j->spec.residual, j->o.vecs, NULL, np, j->psel, nk));
  }
  bool all = *nk == np;
  int64_t k = 0;
  int64_t from[2] = {0, 0};
  nun[0] = nun[1] = 0;
  for (int64_t gi = 0; gi < ng; gi++) {
    int64_t pend = j->grp[3 * gi], k0 = k;
    for (; k < *nk && (all ? k : (int64_t)j->psel[k]) < pend; k++) {
      int64_t p = all ? k : j->psel[k];
      j->side[0].matched[j->pa[p]] += row_weight(j, 1, NULL, j->pb[p]);
      j->side[1].matched[j->pb[p]] += row_weight(j, 0, NULL, j->pa[p]);
    }
    for (int32_t s = 0; s < 2; s++) {
      int64_t cend = j->grp[3 * gi + 1 + s];
      for (int64_t c = from[s]; c < cend; c++) {
        if (j->side[s].matched[j->cs[s][c]] != 0) continue;
        j->cs[s][nun[s]] = j->cs[s][c];
        j->cw[s][nun[s]++] = j->cw[s][c];
      }
      from[s] = cend;
    }
    for (int64_t q = k0; q < k; q++) {
      int64_t p = all ? q : j->psel[q];
      j->side[0].matched[j->pa[p]] = 0;
      j->side[1].matched[j->pb[p]] = 0;
    }
  }
  for (int64_t q = 0; !all && q < *nk; q++) {
    j->pa[q] = j->pa[j->psel[q]];
    j->pb[q] = j->pb[j->psel[q]];
    j->pw[q] = j->pw[j->psel[q]];
  }
  return LAMINAR_OK;
}

/* The first window, of key row g's rows at or after `from` (units), that
 * starts at or after `from`: its start, or INT64_MAX when no row is left. */
static int64_t next_window(const ijoin_op* j, int64_t g, int64_t from) {
  int64_t t1 = INT64_MAX;
  for (int s = 0; s < 2; s++) {
    const lm_timelist* l = &j->lists[s][g];
    int32_t i = lm_timelist_lower(l, from);
    if (i < l->n && l->ts[i] < t1) t1 = l->ts[i];
  }
  if (t1 == INT64_MAX) return INT64_MAX;
  int64_t w = first_window(j, t1);
  return w < from ? from : w;
}

/* A window join: the windows both watermarks have closed since the last call
 * (ending after win_done, at or before the least of them), key by key and in
 * time order: every pair of their rows, then an outer side's rows that
 * matched nothing in a window, NULL-padded, once per window (the left
 * side's, then the right's), in one chunk; the rows whose last window closed
 * are dropped only once it went through (issue 20): a failure leaves every
 * window as it was (win_done too), closed again at the next watermark
 * advance. */
static laminar_code close_windows(ijoin_op* j) {
  int64_t least = j->wm[0] < j->wm[1] ? j->wm[0] : j->wm[1];
  if (least == INT64_MIN) return LAMINAR_OK;
  int64_t close = lm_join_to_units(j->spec.time_type, least);
  int64_t size = window_units(j), slide = slide_units(j);
  int64_t from = j->win_done == INT64_MIN ? INT64_MIN : first_window(j, j->win_done);
  bool work = false;
  for (int32_t s = 0; s < 2; s++) { /* no held row's window closes: nothing to do */
    if (j->side[s].held == 0) continue;
    int64_t w = first_window(j, j->side[s].min_ts);
    work = work || lm_join_sat_add(w < from ? from : w, size) <= close;
  }
  if (!work) {
    j->win_done = close;
    return LAMINAR_OK;
  }
  /* 1. the pairs and outer candidates of every closed window */
  int64_t np = 0, ng = 0, nc[2] = {0, 0};
  for (int64_t g = 0; g < j->table.n; g++) {
    for (int64_t w = next_window(j, g, from);
         w != INT64_MAX && lm_join_sat_add(w, size) <= close;) {
      LM_TRY(gather_window(j, g, w, &np, nc, &ng));
      int64_t next = lm_join_sat_add(w, slide);
      if (next <= w) break;
      w = next_window(j, g, next);
    }
  }
  /* 2. the matches (match_windows leaves no mark behind); the pairs, then
   * an outer side's rows that matched nothing in a window, as one chunk:
   * (slot, NULL) on the left, (NULL, slot) on the right */
  int64_t nun[2] = {0, 0}, nk = 0;
  laminar_code rc = match_windows(j, np, ng, nun, &nk);
  int64_t m = nk + nun[0] + nun[1];
  if (rc == LAMINAR_OK) rc = reserve_pairs(j, m);
  if (rc == LAMINAR_OK && m > 0 && nk == np && m == np) { /* the pairs as filled */
    lm_chunk out = {np, j->o.ncols, j->o.vecs, NULL};
    rc = lm_op_emit(&j->base, &out);
  } else if (rc == LAMINAR_OK && m > 0) {
    int64_t k = nk;
    for (int32_t s = 0; s < 2; s++) {
      for (int64_t q = 0; q < nun[s]; q++, k++) {
        j->pa[k] = s == 0 ? j->cs[s][q] : -1;
        j->pb[k] = s == 0 ? -1 : j->cs[s][q];
        j->pw[k] = j->cw[s][q];
      }
    }
    rc = emit_rows(j, 0, NULL, j->pa, j->pb, m);
  }
  lm_eval_ctx_reset(j->ctx);
  LM_TRY(rc); /* the windows stay as they were */
  /* 3. it went through: the rows whose last window closed go (nothing fails) */
  for (int32_t s = 0; s < 2; s++) {
    side_state* ss = &j->side[s];
    int64_t min_ts = INT64_MAX;
    for (int64_t g = 0; g < j->table.n; g++) {
      lm_timelist* kl = &j->lists[s][g];
      int32_t i = kl->head;
      while (i < kl->n && lm_join_sat_add(last_window(j, kl->ts[i]), size) <= close)
        lm_rowstore_release(&ss->rows, kl->slot[i++]);
      ss->held -= i - kl->head;
      kl->head = i;
      if (kl->head == kl->n) kl->head = kl->n = 0;
      if (kl->n > kl->head && kl->ts[kl->head] < min_ts) min_ts = kl->ts[kl->head];
    }
    ss->min_ts = min_ts;
  }
  j->win_done = close;
  return LAMINAR_OK;
}

/* The watermark the join can promise downstream, in the left time's terms:
 * no row it emits later has an older left time. */
static laminar_code forward_watermark(ijoin_op* j) {
  int64_t w = j->wm[0];
  int64_t rw = j->wm[1];
  if (j->spec.window_ms > 0) {
    /* Windows not closed by both watermarks start at or after this one's. */
    int64_t least = w < rw ? w : rw;
    if (least != INT64_MAX && least != INT64_MIN) {
      w = lm_join_to_ms(j->spec.time_type,
                        first_window(j, lm_join_to_units(j->spec.time_type, least)));
    } else {
      w = least;
    }
  } else if (rw != INT64_MAX) {
    int64_t u = lm_join_to_units(j->spec.time_type, rw);
    int64_t bound = lm_join_to_ms(j->spec.time_type, lm_join_sat_add(u, -j->spec.hi));
    if (bound < w) w = bound;
  }
  if (w <= j->out_wm) return LAMINAR_OK;
  j->out_wm = w;
  if (j->base.next != NULL) return lm_op_chain_watermark(j->base.next, w);
  return LAMINAR_OK;
}

/* ---- memory -------------------------------------------------------------------------------- */

/* What the join holds, in the terms of the state bound: its rows' kept
 * columns and strings, the keys, and per row its place in a list and its
 * matches' summed weights. */
static int64_t side_bytes(const ijoin_op* j, int32_t side) {
  return lm_rowstore_bytes(&j->side[side].rows) + j->side[side].held * 20;
}

static int64_t ijoin_bytes(const ijoin_op* j) {
  return side_bytes(j, 0) + side_bytes(j, 1) + lm_state_table_bytes(&j->table);
}

static laminar_code account(ijoin_op* j) {
  if (!lm_op_bounded(&j->base)) return LAMINAR_OK;
  return lm_op_account(&j->base, ijoin_bytes(j), false);
}

/* The most chunk `in` of input `side` can add to ijoin_bytes: every row held
 * under a new key, with all its strings. */
static int64_t chunk_bound(const ijoin_op* j, int32_t side, const lm_chunk* in) {
  return lm_join_chunk_bound(&j->side[side].rows, j->key_types, j->spec.nkeys, 20, in);
}

/* Compact a store's strings when mostly dead. */
static laminar_code compact(ijoin_op* j) {
  for (int32_t side = 0; side < 2; side++) {
    lm_rowstore* s = &j->side[side].rows;
    if (!s->has_strings ||
        (int64_t)lm_pool_reserved(&s->strings) < 2 * s->str_live + (1 << 20))
      continue;
    uint8_t* mark = lm_realloc(j->mark, (size_t)(s->used ? s->used : 1));
    if (mark == NULL) return LAMINAR_ERR_NOMEM;
    j->mark = mark;
    memset(mark, 0, (size_t)s->used);
    for (int64_t g = 0; g < j->table.n; g++) {
      const lm_timelist* kl = &j->lists[side][g];
      for (int32_t i = kl->head; i < kl->n; i++) mark[kl->slot[i]] = 1;
    }
    LM_TRY(lm_rowstore_compact(s, mark));
  }
  return LAMINAR_OK;
}

/* ---- inputs -------------------------------------------------------------------------------- */

static laminar_code ijoin_on_input_chunk(lm_op* op, int32_t input, const lm_chunk* in) {
  ijoin_op* j = (ijoin_op*)op;
  /* The first stateful operator of its chain refuses a batch that could take
   * the state past its bound, before it changes anything (op.h). */
  if (j->base.checks_bound && lm_op_bounded(op))
    LM_TRY(lm_op_account(op, ijoin_bytes(j) + chunk_bound(j, input, in), true));
  bool applied;
  laminar_code rc = side_chunk(j, input, in, &applied);
  if (rc != LAMINAR_OK) {
    (void)account(j); /* as before the chunk, unless only its late rows failed */
    if (rc == LAMINAR_ERR_NOMEM && !applied)
      lm_state_budget_fail(op->budget, rc,
                           "out of memory in the join; the batch was not applied "
                           "(join unchanged)");
    /* Only the late output failed: the batch is in the join (unless a held
     * batch's abort takes it back), so the runtime must not void it. */
    if (applied && !j->held && op->txn != NULL) op->txn->applied = true;
    return rc;
  }
  return account(j);
}

static laminar_code ijoin_on_input_watermark(lm_op* op, int32_t input, int64_t wm) {
  ijoin_op* j = (ijoin_op*)op;
  if (wm <= j->wm[input]) return LAMINAR_OK;
  j->wm[input] = wm;
  laminar_code rc = j->spec.window_ms > 0 ? close_windows(j) : evict(j, 1 - input);
  lm_op_release_failed(
      op, rc, wm, j->spec.window_ms > 0 ? "window join windows" : "interval join rows");
  LM_TRY(rc);
  LM_TRY(compact(j));
  LM_TRY(account(j));
  return forward_watermark(j);
}

/* ---- snapshot ------------------------------------------------------------------------------ */

static laminar_code ijoin_snapshot(const lm_op* op, lm_state_writer* w) {
  const ijoin_op* j = (const ijoin_op*)op;
  lm_state_put_u32(w, IJ_SNAP_TAG);
  for (int i = 0; i < 2; i++) {
    lm_state_put_i64(w, j->wm[i]);
    lm_state_put_i64(w, j->late[i]);
  }
  lm_state_put_i64(w, j->out_wm);
  /* Each side's rows: time, matched, columns (keys rebuilt from them). */
  for (int32_t side = 0; side < 2; side++) {
    const side_state* ss = &j->side[side];
    lm_state_put_i64(w, ss->held);
    for (int64_t g = 0; g < j->table.n; g++) {
      const lm_timelist* kl = &j->lists[side][g];
      for (int32_t i = kl->head; i < kl->n; i++) {
        lm_state_put_i64(w, kl->ts[i]);
        /* over insert-only inputs whether it matched, as before weights */
        if (j->spec.weighted)
          lm_state_put_i64(w, ss->matched[kl->slot[i]]);
        else
          lm_state_put_u8(w, ss->matched[kl->slot[i]] != 0);
        lm_rowstore_write_row(&ss->rows, kl->slot[i], w);
      }
    }
  }
  return lm_state_writer_status(w);
}

static void ijoin_clear(ijoin_op* j) {
  for (int32_t s = 0; s < 2; s++) {
    for (int64_t g = 0; g < j->nlists; g++) lm_timelist_free(&j->lists[s][g]);
    j->side[s].held = 0;
    j->side[s].min_ts = INT64_MAX;
  }
  lm_state_table_reset(&j->table);
}

typedef struct held_row {
  uint32_t slot;
  int64_t ts;
} held_row;

static int cmp_slot(const void* x, const void* y) {
  const held_row* a = x;
  const held_row* b = y;
  return a->slot < b->slot ? -1 : a->slot > b->slot;
}

/* Read one side's rows of a snapshot into its store, then key and hold them;
 * with `f`, only those whose key hash falls in partition f->part of
 * f->nparts (the others are let go). */
static laminar_code restore_side(ijoin_op* j, int32_t side, lm_state_reader* r,
                                 const lm_op_part_filter* f) {
  side_state* ss = &j->side[side];
  int64_t n = lm_state_get_i64(r);
  if (n < 0 || n > ((int64_t)1 << 31) || r->failed) return LAMINAR_ERR_RECOVERY;
  if (n == 0) return LAMINAR_OK;
  LM_TRY(reserve_side(j, side, n));
  held_row* rows = lm_malloc(sizeof *rows * (size_t)n);
  uint32_t* sel = lm_malloc(sizeof *sel * (size_t)n);
  lm_vec* cols = lm_calloc((size_t)(ss->rows.ncols ? ss->rows.ncols : 1), sizeof *cols);
  laminar_code rc = rows && sel && cols ? LAMINAR_OK : LAMINAR_ERR_NOMEM;
  for (int64_t i = 0; rc == LAMINAR_OK && i < n; i++) {
    rows[i].ts = lm_state_get_i64(r);
    int64_t m = j->spec.weighted ? lm_state_get_i64(r) : lm_state_get_u8(r) != 0;
    rows[i].slot = lm_rowstore_take(&ss->rows);
    ss->matched[rows[i].slot] = m;
    rc = lm_rowstore_read_row(&ss->rows, rows[i].slot, r);
  }
  /* The key columns as the store holds them, at the rows' slots (ascending). */
  if (rc == LAMINAR_OK) {
    qsort(rows, (size_t)n, sizeof *rows, cmp_slot);
    for (int64_t i = 0; i < n; i++) sel[i] = rows[i].slot;
    for (int32_t c = 0; c < ss->rows.ncols; c++) {
      cols[c] =
          (lm_vec){ss->rows.types[c], ss->rows.used, ss->rows.nulls[c], ss->rows.data[c]};
    }
  }
  lm_vec keys[IJ_MAX_KEYS];
  if (rc == LAMINAR_OK) rc = eval_keys(j, side, cols, sel, n, keys);
  for (int64_t i = 0; rc == LAMINAR_OK && i < n; i++) {
    if (f != NULL && lm_op_part_of(j->hashes[i], f->nparts) != f->part) {
      lm_rowstore_release(&ss->rows, rows[i].slot);
      continue;
    }
    int64_t g;
    rc = key_row(j, j->hashes[i], keys, i, &g);
    if (rc == LAMINAR_OK) rc = hold(j, side, g, rows[i].ts, rows[i].slot);
  }
  lm_eval_ctx_reset(j->ctx);
  lm_free(cols);
  lm_free(sel);
  lm_free(rows);
  return rc;
}

static laminar_code reset_stores(ijoin_op* j) {
  for (int32_t s = 0; s < 2; s++) {
    lm_rowstore_free(&j->side[s].rows);
    int32_t first = s == 0 ? 0 : j->spec.lcols;
    int32_t n = s == 0 ? j->spec.lcols : j->spec.rcols;
    LM_TRY(
        lm_rowstore_init(&j->side[s].rows, &j->base.out_schema, first, n, j->spec.need));
  }
  return LAMINAR_OK;
}

/* A snapshot into the join: whole (f NULL), or the part of an old
 * partition's that falls in f->part, added to what is restored (f->merge). */
static laminar_code restore_into(ijoin_op* j, lm_state_reader* r,
                                 const lm_op_part_filter* f, laminar_error* err) {
  if (lm_state_get_u32(r) != IJ_SNAP_TAG) {
    return lm_error_set(err, LAMINAR_ERR_RECOVERY,
                        "interval join: snapshot is not an interval join's");
  }
  bool merge = f != NULL && f->merge;
  laminar_code rc = LAMINAR_OK;
  if (!merge) {
    ijoin_clear(j);
    rc = reset_stores(j);
    j->late[0] = j->late[1] = 0;
  }
  int64_t late[2];
  for (int i = 0; i < 2; i++) {
    j->wm[i] = lm_state_get_i64(r); /* every partition saw the inputs' */
    late[i] = lm_state_get_i64(r);
    /* Each old partition's late rows go to exactly one new one. */
    if (f == NULL || f->late) j->late[i] += late[i];
  }
  int64_t out_wm = lm_state_get_i64(r);
  if (!merge || out_wm < j->out_wm) j->out_wm = out_wm;
  /* A window join closed every window the least of the watermarks ended. */
  int64_t least = j->wm[0] < j->wm[1] ? j->wm[0] : j->wm[1];
  j->win_done =
      least == INT64_MIN ? INT64_MIN : lm_join_to_units(j->spec.time_type, least);
  if (rc == LAMINAR_OK) rc = restore_side(j, 0, r, f);
  if (rc == LAMINAR_OK) rc = restore_side(j, 1, r, f);
  if (rc == LAMINAR_OK && r->failed) rc = LAMINAR_ERR_RECOVERY;
  if (rc != LAMINAR_OK) {
    ijoin_clear(j);
    reset_stores(j);
    j->wm[0] = j->wm[1] = j->out_wm = j->win_done = INT64_MIN;
    j->late[0] = j->late[1] = 0;
    return lm_error_set(err, rc, "interval join: cannot restore its state%s",
                        rc == LAMINAR_ERR_RECOVERY ? " (snapshot damaged)" : "");
  }
  return account(j);
}

static laminar_code ijoin_restore(lm_op* op, lm_state_reader* r, laminar_error* err) {
  return restore_into((ijoin_op*)op, r, NULL, err);
}

static laminar_code ijoin_restore_part(lm_op* op, lm_state_reader* r,
                                       const lm_op_part_filter* f, laminar_error* err) {
  return restore_into((ijoin_op*)op, r, f, err);
}

/* ---- lifecycle ----------------------------------------------------------------------------- */

static void ijoin_destroy(lm_op* op) {
  ijoin_op* j = (ijoin_op*)op;
  if (j->lists[0] != NULL && j->lists[1] != NULL) ijoin_clear(j);
  lm_free(j->lists[0]);
  lm_free(j->lists[1]);
  lm_state_table_free(&j->table);
  for (int32_t s = 0; s < 2; s++) {
    lm_rowstore_free(&j->side[s].rows);
    lm_free(j->side[s].matched);
  }
  lm_join_out_free(&j->o);
  lm_join_out_free(&j->in_buf[0]);
  lm_join_out_free(&j->in_buf[1]);
  lm_free(j->pa);
  lm_free(j->pb);
  lm_free(j->pneg);
  lm_free(j->psel);
  lm_free(j->pw);
  lm_free(j->grp);
  for (int32_t s = 0; s < 2; s++) {
    lm_free(j->cs[s]);
    lm_free(j->cw[s]);
  }
  lm_free(j->rowslot);
  lm_free(j->rowstate);
  lm_free(j->rowmatch);
  lm_free(j->rowkey);
  lm_free(j->hu);
  lm_free(j->cons_slot);
  lm_free(j->cons_old);
  lm_free(j->hashes);
  lm_free(j->mark);
  lm_free(j->key_types);
  lm_eval_ctx_destroy(j->ctx);
  lm_free(j);
}

/* The dense copy of side s's routed rows: that side's columns. */
static laminar_code init_in_buf(ijoin_op* j, int32_t s, const lm_schema* out_schema) {
  int32_t first = s == 0 ? 0 : j->spec.lcols;
  int32_t n = s == 0 ? j->spec.lcols : j->spec.rcols;
  lm_schema side;
  lm_schema_init_empty(&side);
  laminar_code rc = LAMINAR_OK;
  for (int32_t c = 0; rc == LAMINAR_OK && c < n; c++) {
    const lm_field* f = &out_schema->fields[first + c];
    if (lm_schema_add(&side, f->name, f->type, false) != 0) rc = LAMINAR_ERR_NOMEM;
  }
  if (rc == LAMINAR_OK)
    rc = lm_join_out_init(&j->in_buf[s], &side,
                          j->spec.need != NULL ? j->spec.need + first : NULL);
  lm_schema_free(&side);
  return rc;
}

static const lm_op_vtable ijoin_vtable = {
    .name = "interval_join",
    .on_chunk = NULL,
    .takes_sel = true,    /* a routed chunk's rows are made dense (densify) */
    .on_watermark = NULL, /* inputs' watermarks: on_input_watermark */
    .snapshot = ijoin_snapshot,
    .restore = ijoin_restore,
    .restore_part = ijoin_restore_part,
    .destroy = ijoin_destroy,
    .ninputs = 2,
    .on_input_chunk = ijoin_on_input_chunk,
    .on_input_watermark = ijoin_on_input_watermark,
};

laminar_code lm_op_ijoin_create(const lm_ijoin_spec* spec, const lm_schema* out_schema,
                                lm_op** out) {
  *out = NULL;
  if (spec->nkeys > IJ_MAX_KEYS ||
      out_schema->ncols != spec->lcols + spec->rcols + (spec->weighted ? 1 : 0))
    return LAMINAR_ERR_INTERNAL;
  ijoin_op* j = lm_calloc(1, sizeof *j);
  if (j == NULL) return LAMINAR_ERR_NOMEM;
  j->base.vt = &ijoin_vtable;
  j->spec = *spec;
  j->wm[0] = j->wm[1] = j->out_wm = j->win_done = INT64_MIN;
  j->side[0].min_ts = j->side[1].min_ts = INT64_MAX;
  j->key_types = lm_calloc((size_t)(spec->nkeys ? spec->nkeys : 1), sizeof(lm_type));
  laminar_code rc = j->key_types != NULL ? LAMINAR_OK : LAMINAR_ERR_NOMEM;
  for (int32_t k = 0; rc == LAMINAR_OK && k < spec->nkeys; k++)
    j->key_types[k] = spec->lkeys[k]->type;
  if (rc == LAMINAR_OK) rc = lm_join_out_init(&j->o, out_schema, spec->need);
  for (int32_t s = 0; rc == LAMINAR_OK && s < 2; s++) rc = init_in_buf(j, s, out_schema);
  if (rc == LAMINAR_OK && lm_schema_copy(out_schema, &j->base.out_schema) != 0)
    rc = LAMINAR_ERR_NOMEM;
  if (rc == LAMINAR_OK) rc = lm_eval_ctx_create(&j->ctx);
  if (rc == LAMINAR_OK) rc = lm_state_table_init(&j->table, j->key_types, spec->nkeys);
  if (rc == LAMINAR_OK) rc = reset_stores(j);
  if (rc != LAMINAR_OK) {
    lm_schema_free(&j->base.out_schema);
    ijoin_destroy(&j->base);
    return rc;
  }
  *out = &j->base;
  return LAMINAR_OK;
}

void lm_op_ijoin_held(const lm_op* op, int64_t out_rows[2], int64_t out_bytes[2]) {
  for (int s = 0; s < 2; s++) out_rows[s] = out_bytes[s] = 0;
  if (!is_ijoin(op)) return;
  const ijoin_op* j = (const ijoin_op*)op;
  for (int32_t s = 0; s < 2; s++) {
    out_rows[s] = j->side[s].held;
    out_bytes[s] = side_bytes(j, s);
  }
}

int64_t lm_op_ijoin_late_rows(const lm_op* op) {
  if (!is_ijoin(op)) return 0;
  const ijoin_op* j = (const ijoin_op*)op;
  return j->late[0] + j->late[1];
}

int64_t lm_op_ijoin_out_watermark(const lm_op* op) {
  return is_ijoin(op) ? ((const ijoin_op*)op)->out_wm : INT64_MAX;
}

void lm_op_ijoin_set_late_sink(lm_op* op, lm_op_sink_fn fn, void* arg) {
  if (!is_ijoin(op)) return;
  ijoin_op* j = (ijoin_op*)op;
  j->late_fn = fn;
  j->late_arg = arg;
}
