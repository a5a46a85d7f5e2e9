/*
 * join_asof.c -- the ASOF join operator: two inputs (left, right), each row of
 * the left matched with the right row of equal keys nearest in time on one
 * side (op.h, lm_asof_spec, has the semantics and the streaming rules).
 *
 * State (one partition's, on its thread only):
 *  - the equality keys in a keyed state table (state/table.h): a key's row id
 *    g indexes `keys[g]`, the right rows of that key sorted by (time,
 *    arrival), and keys seen only on the left have an empty list;
 *  - the rows themselves, left and right, in two row stores
 *    (state/rowstore.h), so state stays bounded as rows are dropped;
 *  - the left rows waiting for their match to be final, sorted by (time,
 *    arrival): a release takes them in that order.
 *
 * A release (a left chunk, a right watermark) emits the left rows whose
 * match is final, joined, in one chunk; a left watermark or a release
 * prunes right rows no future left row can match. Snapshots write the waiting
 * left rows and the kept right rows, and a restore inserts them again.
 */
#include "op/op.h"

#include "op/internal.h"
#include "op/join.h"
#include "state/rowstore.h"
#include "state/table.h"
#include "util/pool.h"
#include "util/util.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

/* ==== the operator ===================================================================== */


/* A left row waiting for its match. */
typedef struct pending {
  int64_t ts;    /* time column value (the column's unit) */
  int64_t g;     /* key row id, -1: a NULL key (never matches) */
  uint32_t slot; /* in the left store */
} pending;

typedef struct asof_op {
  lm_op base;
  lm_asof_spec spec;
  lm_type* key_types;
  lm_eval_ctx* ctx;
  lm_state_table table;
  lm_timelist* keys; /* table.cap entries */
  int64_t nkeyrows;
  lm_rowstore left, right;
  pending* pend; /* [phead, npend) sorted by (ts, arrival) */
  int64_t phead, npend, pcap;
  int64_t right_rows; /* right rows kept, all keys */
  int64_t swept_rows; /* right_rows after the last sweep of all keys */
  int64_t wm[2];      /* inputs' watermarks, ms */
  int64_t out_wm;     /* forwarded to next, ms */
  int64_t late[2];
  /* Late side output (lm_op_join_set_late_sink), NULL: none; a chunk's late
   * rows (in the eval context's memory). */
  lm_op_sink_fn late_fn;
  void* late_arg;
  int64_t* late_rows;
  int64_t nlate;
  /* release scratch */
  pending* rel;
  int64_t rel_cap;
  /* The rows the chunk under way added (issue 20): a right chunk's (time,
   * key row, slot), a left chunk's waiting rows; taken back when it fails. */
  pending* jr;
  int64_t jr_cap, nj;
  int64_t* match; /* per released row: right slot, -1 none */
  lm_join_out o;  /* lcols + rcols */
  uint64_t* hashes;
  int64_t hash_cap;
  uint8_t* mark; /* compaction scratch */
  /* Copy-on-write checkpoints (asof_freeze): `held` while a frozen copy may
   * still read the state; `share` 2 while both the op and the checkpoint
   * hold it, each letting go takes one (the last frees it). */
  bool held;
  atomic_int share;
  int64_t thaws; /* copies made for a checkpoint still holding the state */
} asof_op;

static const lm_op_vtable asof_vtable;
static laminar_code asof_thaw(asof_op* j);

static bool is_asof(const lm_op* op) { return op != NULL && op->vt == &asof_vtable; }


static bool cmp_before(const asof_op* j) {
  return j->spec.cmp == LM_ASOF_GE || j->spec.cmp == LM_ASOF_GT;
}

/* ---- keys ---------------------------------------------------------------------------- */

/* The key row of row `row` (hash h) of the key columns, added when new. */
static laminar_code key_row(asof_op* j, uint64_t h, const lm_vec* keys, int64_t row,
                            int64_t* out) {
  void** arrays[] = {(void**)&j->keys};
  const size_t sizes[] = {sizeof *j->keys};
  return lm_join_key_row(&j->table, h, keys, row, arrays, sizes, 1, &j->nkeyrows, out);
}

/* Evaluate the side's key expressions over chunk `in`, hash them; *out_null
 * per row whether a key is NULL (then g -1). */
static laminar_code eval_keys(asof_op* j, int32_t side, const lm_chunk* in,
                              lm_vec* keys) {
  const lm_expr* const* ex = side == 0 ? j->spec.lkeys : j->spec.rkeys;
  for (int32_t k = 0; k < j->spec.nkeys; k++) {
    LM_TRY(lm_expr_eval(j->ctx, ex[k], in->cols, NULL, in->nrows, &keys[k]));
  }
  if (in->nrows > j->hash_cap) {
    uint64_t* h = lm_realloc(j->hashes, sizeof *h * (size_t)in->nrows);
    if (h == NULL) return LAMINAR_ERR_NOMEM;
    j->hashes = h;
    j->hash_cap = in->nrows;
  }
  lm_state_hash_rows(keys, j->spec.nkeys, NULL, in->nrows, j->hashes);
  return LAMINAR_OK;
}

static bool key_is_null(const asof_op* j, const lm_vec* keys, int64_t row) {
  for (int32_t k = 0; k < j->spec.nkeys; k++) {
    if (keys[k].nulls != NULL && keys[k].nulls[row]) return true;
  }
  return false;
}

static int64_t time_of(const lm_vec* v, int64_t row) {
  return ((const int64_t*)v->data)[row];
}

/* ---- right rows ---------------------------------------------------------------------- */


/* The least time a future or waiting left row can have (the column's unit). */
static int64_t left_floor(const asof_op* j) {
  int64_t p = lm_join_to_units(j->spec.time_type, j->wm[0]);
  if (j->npend > j->phead) {
    /* Sorted by time within the list. */
    if (j->pend[j->phead].ts < p) p = j->pend[j->phead].ts;
  }
  return p;
}

/* Drop the rows of kr no left row at or after time p can match. */
static void prune_key(asof_op* j, lm_timelist* kr, int64_t p) {
  int32_t drop = kr->head; /* rows [head, drop) go */
  const lm_asof_spec* sp = &j->spec;
  if (kr->n == kr->head || p == INT64_MIN) return;
  if (cmp_before(j)) {
    /* Keep the newest row usable by time p (<= p, or < p), and after. */
    int32_t last =
        sp->cmp == LM_ASOF_GE ? lm_timelist_upper(kr, p) : lm_timelist_lower(kr, p);
    drop = last - 1;
    if (drop < kr->head) drop = kr->head;
    if (sp->has_tolerance && drop < kr->n &&
        kr->ts[drop] < lm_join_sat_sub(p, sp->tolerance)) {
      drop++;
    }
  } else {
    drop = sp->cmp == LM_ASOF_LE ? lm_timelist_lower(kr, p) : lm_timelist_upper(kr, p);
  }
  for (int32_t i = kr->head; i < drop; i++) lm_rowstore_release(&j->right, kr->slot[i]);
  j->right_rows -= drop - kr->head;
  kr->head = drop;
  if (kr->head == kr->n) kr->head = kr->n = 0;
}

static void sweep(asof_op* j) {
  int64_t p = left_floor(j);
  for (int64_t g = 0; g < j->table.n; g++) prune_key(j, &j->keys[g], p);
  j->swept_rows = j->right_rows;
}

/* ---- the match of a left row ----------------------------------------------------------- */

/* Whether right row `slot` is a delete of a temporal join's table (spec
 * tombstones: its last column, the changelog weight, is negative): the
 * version it starts is "no row". */
static bool is_tombstone(const asof_op* j, uint32_t slot) {
  if (!j->spec.tombstones) return false;
  int32_t wc = j->spec.rcols - 1;
  return !j->right.nulls[wc][slot] && ((const int64_t*)j->right.data[wc])[slot] < 0;
}

/* The matching right slot of left row time t in kr (-1: none), and whether
 * it is final under right watermark rw (the column's unit). */
static int64_t find_match(const asof_op* j, const lm_timelist* kr, int64_t t, int64_t rw,
                          bool* out_final) {
  const lm_asof_spec* sp = &j->spec;
  int64_t m = -1;
  if (cmp_before(j)) {
    /* Final once every right row <= t (< t) is in: rw > t (rw >= t). */
    *out_final = sp->cmp == LM_ASOF_GE ? rw > t : rw >= t;
    if (kr != NULL && kr->n > kr->head) {
      int32_t i =
          (sp->cmp == LM_ASOF_GE ? lm_timelist_upper(kr, t) : lm_timelist_lower(kr, t)) -
          1;
      if (i >= kr->head &&
          (!sp->has_tolerance || lm_join_sat_sub(t, kr->ts[i]) <= sp->tolerance) &&
          !is_tombstone(j, kr->slot[i]))
        m = kr->slot[i];
    }
    return m;
  }
  /* <= / <: the earliest right row at or after t (after: <); among equal
   * times the last to arrive. Final when that row is older than rw (no
   * earlier one can come), or when rw passes t + tolerance. */
  int64_t limit = sp->has_tolerance ? lm_join_sat_add(t, sp->tolerance) : INT64_MAX;
  *out_final = sp->has_tolerance && rw > limit;
  if (kr != NULL && kr->n > kr->head) {
    int32_t i =
        sp->cmp == LM_ASOF_LE ? lm_timelist_lower(kr, t) : lm_timelist_upper(kr, t);
    if (i < kr->n && kr->ts[i] <= limit) {
      int32_t last = lm_timelist_upper(kr, kr->ts[i]) - 1;
      m = kr->slot[last];
      if (kr->ts[i] < rw) *out_final = true;
    }
  }
  if (rw == INT64_MAX) *out_final = true;
  return m;
}

/* find_match for waiting row p: a row without a key (a NULL in it, or no
 * time) matches nothing, final at once. */
static int64_t match_of(const asof_op* j, const pending* p, int64_t rw, bool* out_final) {
  if (p->g < 0) {
    *out_final = true;
    return -1;
  }
  return find_match(j, &j->keys[p->g], p->ts, rw, out_final);
}

/* ---- release ----------------------------------------------------------------------------- */

static laminar_code reserve_out(asof_op* j, int64_t n) {
  LM_TRY(lm_join_out_reserve(&j->o, n));
  if (j->rel_cap >= j->o.cap) return LAMINAR_OK;
  pending* r = lm_realloc(j->rel, sizeof *r * (size_t)j->o.cap);
  if (r == NULL) return LAMINAR_ERR_NOMEM;
  j->rel = r;
  int64_t* m = lm_realloc(j->match, sizeof *m * (size_t)j->o.cap);
  if (m == NULL) return LAMINAR_ERR_NOMEM;
  j->match = m;
  j->rel_cap = j->o.cap;
  return LAMINAR_OK;
}

/* Gather column c of `st` at slots into rows [at, at + n) of output column
 * oc (slot -1: NULL); rows [0, at) are there already (fill_direct). */
static void gather(asof_op* j, const lm_rowstore* st, int32_t c, int32_t oc,
                   const int64_t* slots, const pending* rel, int64_t at, int64_t n) {
  int64_t w = lm_type_width(st->types[c]);
  if (!st->keep[c]) { /* no one reads it: zeros */
    j->o.vecs[oc] = (lm_vec){st->types[c], at + n, NULL, j->o.zeros};
    return;
  }
  char* dst = (char*)j->o.data[oc] + at * w;
  uint8_t* nl = j->o.nulls[oc] + at;
  const char* src = st->data[c];
  bool any_null = at > 0 && j->o.vecs[oc].nulls != NULL;
  if (at > 0 && !any_null) memset(j->o.nulls[oc], 0, (size_t)at);
  for (int64_t r = 0; r < n; r++) {
    int64_t s = slots != NULL ? slots[r] : (int64_t)rel[r].slot;
    if (s < 0 || st->nulls[c][s]) {
      nl[r] = 1;
      memset(dst + r * w, 0, (size_t)w);
      any_null = true;
    } else {
      nl[r] = 0;
      lm_copy_value(dst + r * w, src + s * w, w);
    }
  }
  j->o.vecs[oc].len = at + n;
  j->o.vecs[oc].data = j->o.data[oc];
  j->o.vecs[oc].nulls = any_null ? j->o.nulls[oc] : NULL;
}

/* Emit, in one chunk, a left chunk's rows joined at once (output rows
 * [0, nd): fill_direct) and the waiting rows rel[nd..nd + n) (matches in
 * j->match). Inner: the unmatched waiting rows are moved behind the matched
 * ones (swaps keep the matched ones' order). */
static laminar_code emit_released(asof_op* j, int64_t nd, int64_t n) {
  pending* rel = j->rel + nd;
  int64_t* match = j->match + nd;
  int64_t k = 0;
  if (!j->spec.left_outer) { /* inner: unmatched rows emit nothing */
    for (int64_t r = 0; r < n; r++) {
      if (match[r] < 0) continue;
      pending p = rel[k];
      int64_t m = match[k];
      rel[k] = rel[r];
      match[k++] = match[r];
      rel[r] = p;
      match[r] = m;
    }
  } else {
    k = n;
  }
  if (k > 0) {
    for (int32_t c = 0; c < j->spec.lcols; c++)
      gather(j, &j->left, c, c, NULL, rel, nd, k);
    for (int32_t c = 0; c < j->spec.rcols; c++)
      gather(j, &j->right, c, j->spec.lcols + c, match, NULL, nd, k);
  }
  if (nd + k == 0) return LAMINAR_OK;
  lm_chunk out = {nd + k, j->spec.lcols + j->spec.rcols, j->o.vecs, NULL};
  return lm_op_emit(&j->base, &out);
}

/* Emit every waiting left row whose match is final, in (time, arrival)
 * order, after the nd rows of a left chunk joined at once (fill_direct), in
 * one chunk. They leave the waiting ones only once it went through: a
 * failure leaves them waiting (issue 20), released again by the next call. */
static laminar_code release(asof_op* j, int64_t nd) {
  int64_t rw = lm_join_to_units(j->spec.time_type, j->wm[1]);
  int64_t n = 0;
  LM_TRY(reserve_out(j, nd + j->npend - j->phead));
  bool prefix = cmp_before(j); /* final is monotone in time: a prefix */
  for (int64_t i = j->phead; i < j->npend; i++) {
    pending* p = &j->pend[i];
    bool final;
    int64_t m = match_of(j, p, rw, &final);
    if (!final) {
      if (prefix) break;
      continue;
    }
    j->rel[nd + n] = *p;
    j->match[nd + n++] = m;
  }
  LM_TRY(emit_released(j, nd, n));
  if (n == 0) return LAMINAR_OK;
  for (int64_t r = 0; r < n; r++) lm_rowstore_release(&j->left, j->rel[nd + r].slot);
  if (prefix) {
    j->phead += n;
  } else { /* the same test again: nothing it reads changed */
    int64_t keep = j->phead;
    for (int64_t i = j->phead; i < j->npend; i++) {
      bool final;
      (void)match_of(j, &j->pend[i], rw, &final);
      if (!final) j->pend[keep++] = j->pend[i];
    }
    j->npend = keep;
  }
  if (j->phead == j->npend) j->phead = j->npend = 0;
  return LAMINAR_OK;
}

/* The watermark the join can promise downstream: no output row older. */
static laminar_code forward_watermark(asof_op* j) {
  int64_t w = j->wm[0];
  if (j->npend > j->phead) {
    int64_t p = lm_join_to_ms(j->spec.time_type, j->pend[j->phead].ts);
    if (p < w) w = p;
  }
  if (w <= j->out_wm) return LAMINAR_OK;
  j->out_wm = w;
  if (j->base.next != NULL) return lm_op_chain_watermark(j->base.next, w);
  return LAMINAR_OK;
}

/* What the join holds, in the terms of the state bound: its rows' kept
 * columns and strings, the keys, and per row its place in a list. */
static int64_t asof_bytes(const asof_op* j) {
  return lm_rowstore_bytes(&j->left) + lm_rowstore_bytes(&j->right) +
         lm_state_table_bytes(&j->table) + (j->npend - j->phead) * 24 +
         j->right_rows * 12;
}

static laminar_code account(asof_op* j) {
  if (!lm_op_bounded(&j->base)) return LAMINAR_OK;
  return lm_op_account(&j->base, asof_bytes(j), false);
}

/* The most chunk `in` of input `side` can add to asof_bytes: every row held
 * under a new key, with all its strings (the bound is checked before the
 * chunk changes anything, so a batch near the bound may be refused whole). */
static int64_t chunk_bound(const asof_op* j, int32_t side, const lm_chunk* in) {
  return lm_join_chunk_bound(side == 0 ? &j->left : &j->right, j->key_types,
                             j->spec.nkeys, 24, in);
}

/* Compact the stores' strings when mostly dead. */
static laminar_code compact(asof_op* j) {
  lm_rowstore* st[2] = {&j->left, &j->right};
  for (int side = 0; side < 2; side++) {
    lm_rowstore* s = st[side];
    if (!s->has_strings ||
        (int64_t)lm_pool_reserved(&s->strings) < 2 * s->str_live + (1 << 20))
      continue;
    uint8_t* mark = lm_realloc(j->mark, (size_t)(s->used ? s->used : 1));
    if (mark == NULL) return LAMINAR_ERR_NOMEM;
    j->mark = mark;
    memset(mark, 0, (size_t)s->used);
    if (side == 0) {
      for (int64_t i = j->phead; i < j->npend; i++) mark[j->pend[i].slot] = 1;
    } else {
      for (int64_t g = 0; g < j->table.n; g++) {
        const lm_timelist* kr = &j->keys[g];
        for (int32_t i = kr->head; i < kr->n; i++) mark[kr->slot[i]] = 1;
      }
    }
    LM_TRY(lm_rowstore_compact(s, mark));
  }
  return LAMINAR_OK;
}

/* ---- inputs ------------------------------------------------------------------------------ */

/* Room for chunk `in`'s late rows when they have a sink. */
static laminar_code late_begin(asof_op* j, const lm_chunk* in) {
  j->nlate = 0;
  j->late_rows = NULL;
  if (j->late_fn == NULL) return LAMINAR_OK;
  j->late_rows = lm_eval_ctx_alloc(j->ctx, sizeof(int64_t) * (size_t)(in->nrows + 1));
  return j->late_rows != NULL ? LAMINAR_OK : LAMINAR_ERR_NOMEM;
}

/* Row r of the chunk is late: counted, and kept for the late sink. */
static void late_row(asof_op* j, int32_t side, int64_t r) {
  j->late[side]++;
  if (j->late_rows != NULL) j->late_rows[j->nlate++] = r;
}

/* The chunk's late rows of `side` to the late sink: the joined row's
 * columns, the other side's NULL. */
static laminar_code late_deliver(asof_op* j, int32_t side, const lm_chunk* in) {
  if (j->nlate == 0) return LAMINAR_OK;
  LM_TRY(
      lm_join_one_side(&j->o, in, side == 0 ? 0 : j->spec.lcols, j->late_rows, j->nlate));
  lm_chunk late = {j->nlate, j->spec.lcols + j->spec.rcols, j->o.vecs, NULL};
  j->nlate = 0;
  return j->late_fn(j->late_arg, &late);
}

/* ---- a chunk: all or nothing (issue 20) --------------------------------------------------- */

/* Room to journal n rows of a chunk (j->jr). */
static laminar_code reserve_journal(asof_op* j, int64_t n) {
  j->nj = 0;
  if (n <= j->jr_cap) return LAMINAR_OK;
  LM_GROW_ARRAY(j->jr, n);
  j->jr_cap = n;
  return LAMINAR_OK;
}

/* Take waiting row (ts, slot) out of the list (the others keep their order). */
static void pend_remove(asof_op* j, int64_t ts, uint32_t slot) {
  int64_t lo = j->phead, hi = j->npend;
  while (lo < hi) {
    int64_t mid = lo + (hi - lo) / 2;
    if (j->pend[mid].ts < ts)
      lo = mid + 1;
    else
      hi = mid;
  }
  for (int64_t i = lo; i < j->npend && j->pend[i].ts == ts; i++) {
    if (j->pend[i].slot != slot) continue;
    memmove(j->pend + i, j->pend + i + 1, sizeof *j->pend * (size_t)(j->npend - i - 1));
    j->npend--;
    if (j->phead == j->npend) j->phead = j->npend = 0;
    return;
  }
}

/* A chunk of input `side` failed: the rows it added (journaled, newest
 * first) and the key rows it added (those from keys0) go. Allocates
 * nothing; the join is as before the chunk. */
static void chunk_undo(asof_op* j, int32_t side, int64_t keys0) {
  for (int64_t k = j->nj - 1; k >= 0; k--) {
    const pending* e = &j->jr[k];
    if (side == 1) {
      lm_timelist_remove(&j->keys[e->g], e->ts, e->slot);
      lm_rowstore_release(&j->right, e->slot);
      j->right_rows--;
    } else {
      pend_remove(j, e->ts, e->slot);
      lm_rowstore_release(&j->left, e->slot);
    }
  }
  j->nj = 0;
  lm_timelist* lists[] = {j->keys};
  lm_join_keys_truncate(&j->table, lists, 1, keys0);
}

/* Insert the rows of a right chunk, each journaled once in. `check_late`:
 * drop rows older than the right watermark (not on restore). The keys it
 * grew are pruned only once every row is in (nothing fails after). */
static laminar_code right_rows(asof_op* j, const lm_chunk* in, bool check_late) {
  lm_vec keys[64];
  LM_TRY(reserve_journal(j, in->nrows));
  LM_TRY(eval_keys(j, 1, in, keys));
  LM_TRY(late_begin(j, in));
  const lm_vec* tv = &in->cols[j->spec.rtime];
  int64_t rw = lm_join_to_units(j->spec.time_type, j->wm[1]);
  LM_TRY(lm_rowstore_reserve(&j->right, j->right.used + in->nrows));
  for (int64_t r = 0; r < in->nrows; r++) {
    if (tv->nulls != NULL && tv->nulls[r]) continue; /* no time: never matches */
    int64_t t = time_of(tv, r);
    if (check_late && t < rw) {
      late_row(j, 1, r);
      continue;
    }
    if (key_is_null(j, keys, r)) continue;
    int64_t g;
    LM_TRY(key_row(j, j->hashes[r], keys, r, &g));
    uint32_t slot = lm_rowstore_take(&j->right);
    laminar_code rc = lm_rowstore_put(&j->right, slot, in->cols, r);
    if (rc == LAMINAR_OK) rc = lm_timelist_insert(&j->keys[g], t, slot);
    if (rc != LAMINAR_OK) {
      lm_rowstore_release(&j->right, slot);
      return rc;
    }
    j->jr[j->nj++] = (pending){t, g, slot};
    j->right_rows++;
  }
  int64_t p = left_floor(j);
  for (int64_t k = 0; k < j->nj; k++) {
    lm_timelist* kr = &j->keys[j->jr[k].g];
    if (kr->n - kr->head > 8) prune_key(j, kr, p); /* amortized */
  }
  return LAMINAR_OK;
}

static laminar_code pend_push(asof_op* j, pending p) {
  if (j->phead > 0 && (j->npend == j->pcap || j->phead >= j->npend / 2)) {
    memmove(j->pend, j->pend + j->phead, sizeof *j->pend * (size_t)(j->npend - j->phead));
    j->npend -= j->phead;
    j->phead = 0;
  }
  if (j->npend == j->pcap) {
    int64_t nc = j->pcap ? j->pcap * 2 : 256;
    pending* q = lm_realloc(j->pend, sizeof *q * (size_t)nc);
    if (q == NULL) return LAMINAR_ERR_NOMEM;
    j->pend = q;
    j->pcap = nc;
  }
  /* Upper bound on time: after the equal times that came before. */
  int64_t at = j->npend;
  if (at > j->phead && j->pend[at - 1].ts > p.ts) {
    int64_t lo = j->phead, hi = j->npend;
    while (lo < hi) {
      int64_t mid = lo + (hi - lo) / 2;
      if (j->pend[mid].ts <= p.ts)
        lo = mid + 1;
      else
        hi = mid;
    }
    at = lo;
    memmove(j->pend + at + 1, j->pend + at, sizeof *j->pend * (size_t)(j->npend - at));
  }
  j->pend[at] = p;
  j->npend++;
  return LAMINAR_OK;
}

static int cmp_direct(const void* x, const void* y) {
  const pending* a = x;
  const pending* b = y;
  if (a->ts != b->ts) return a->ts < b->ts ? -1 : 1;
  return a->g < b->g ? -1 : a->g > b->g;
}

/* Left rows of chunk `in` joined at once into output rows [0, n) (emitted
 * with the release: emit_released): rel[k].g is the row, match[k] the right
 * slot (-1 none), sorted here by (time, row). */
static void fill_direct(asof_op* j, const lm_chunk* in, int64_t n, bool sorted) {
  if (n == 0) return;
  if (!sorted) {
    for (int64_t k = 0; k < n; k++) j->rel[k].slot = (uint32_t)j->match[k] + 1;
    qsort(j->rel, (size_t)n, sizeof *j->rel, cmp_direct);
    for (int64_t k = 0; k < n; k++) j->match[k] = (int64_t)j->rel[k].slot - 1;
  }
  for (int32_t c = 0; c < j->spec.lcols; c++) {
    const lm_vec* v = &in->cols[c];
    if (!j->left.keep[c]) {
      j->o.vecs[c] = (lm_vec){v->type, n, NULL, j->o.zeros};
      continue;
    }
    int64_t w = lm_type_width(v->type);
    char* dst = j->o.data[c];
    const char* src = v->data;
    for (int64_t k = 0; k < n; k++) lm_copy_value(dst + k * w, src + j->rel[k].g * w, w);
    uint8_t* nl = NULL;
    if (v->nulls != NULL) {
      nl = j->o.nulls[c];
      for (int64_t k = 0; k < n; k++) nl[k] = v->nulls[j->rel[k].g];
    }
    j->o.vecs[c] = (lm_vec){v->type, n, nl, dst};
  }
  for (int32_t c = 0; c < j->spec.rcols; c++)
    gather(j, &j->right, c, j->spec.lcols + c, j->match, NULL, 0, n);
}

/* Take a left chunk: late rows counted and dropped; with >= / > a row whose
 * match is final already (the right watermark past it) is joined at once,
 * from the chunk (the common case when quotes lead: nothing held), into the
 * first *out_nd output rows (emitted by release); the others wait, each
 * journaled once in. `live` false (a restore): every row waits, none is
 * late. */
static laminar_code left_rows(asof_op* j, const lm_chunk* in, bool live,
                              int64_t* out_nd) {
  lm_vec keys[64];
  *out_nd = 0;
  LM_TRY(reserve_journal(j, in->nrows));
  LM_TRY(eval_keys(j, 0, in, keys));
  LM_TRY(late_begin(j, in));
  const lm_vec* tv = &in->cols[j->spec.ltime];
  int64_t lw = lm_join_to_units(j->spec.time_type, j->wm[0]);
  int64_t rw = lm_join_to_units(j->spec.time_type, j->wm[1]);
  bool direct = live && cmp_before(j);
  int64_t final_below =
      j->spec.cmp == LM_ASOF_GE ? rw : lm_join_sat_add(rw, 1); /* t < it */
  LM_TRY(lm_rowstore_reserve(&j->left, j->left.used + in->nrows));
  /* Output room for the rows joined at once and every row the release may
   * take (the waiting ones and the chunk's): release reserves no more, so
   * what fill_direct wrote stays where it is. */
  if (live) LM_TRY(reserve_out(j, in->nrows + j->npend - j->phead));
  int64_t nd = 0;
  bool sorted = true;
  for (int64_t r = 0; r < in->nrows; r++) {
    bool no_time = tv->nulls != NULL && tv->nulls[r];
    int64_t t = no_time ? INT64_MIN : time_of(tv, r);
    if (live && !no_time && t < lw) {
      late_row(j, 0, r);
      continue;
    }
    if (no_time && !j->spec.left_outer) continue;
    bool null_key = no_time || key_is_null(j, keys, r);
    if (direct && (null_key || t < final_below)) {
      int64_t m = -1;
      if (!null_key) {
        int64_t g = lm_state_table_find(&j->table, j->hashes[r], keys, r);
        bool final;
        if (g >= 0) m = find_match(j, &j->keys[g], t, rw, &final);
      }
      if (m < 0 && !j->spec.left_outer) continue;
      if (nd > 0 && (j->rel[nd - 1].ts > t)) sorted = false;
      j->rel[nd] = (pending){t, r, 0};
      j->match[nd++] = m;
      continue;
    }
    int64_t g = -1;
    if (!null_key) LM_TRY(key_row(j, j->hashes[r], keys, r, &g));
    uint32_t slot = lm_rowstore_take(&j->left);
    /* A row without a key or time matches nothing: released at once. */
    laminar_code rc = lm_rowstore_put(&j->left, slot, in->cols, r);
    if (rc == LAMINAR_OK) rc = pend_push(j, (pending){t, g, slot});
    if (rc != LAMINAR_OK) {
      lm_rowstore_release(&j->left, slot);
      return rc;
    }
    j->jr[j->nj++] = (pending){t, g, slot};
  }
  fill_direct(j, in, nd, sorted);
  *out_nd = nd;
  return LAMINAR_OK;
}

static laminar_code asof_on_input_chunk(lm_op* op, int32_t input, const lm_chunk* in) {
  asof_op* j = (asof_op*)op;
  LM_TRY(asof_thaw(j)); /* a checkpoint may still read the state */
  /* The first stateful operator of its chain refuses a batch that could take
   * the state past its bound, before it changes anything (op.h). */
  if (j->base.checks_bound && lm_op_bounded(op))
    LM_TRY(lm_op_account(op, asof_bytes(j) + chunk_bound(j, input, in), true));
  /* All or nothing (issue 20): compacted before the first change; the rows
   * go in journaled, and the left chunk's output (its rows joined at once and
   * the waiting rows it releases) goes downstream as one chunk, so a failure
   * anywhere takes the chunk's rows and key rows back (chunk_undo). */
  LM_TRY(compact(j));
  int64_t keys0 = j->table.n, late0 = j->late[input];
  laminar_code rc;
  if (input == 1) {
    rc = right_rows(j, in, true);
  } else {
    int64_t nd = 0;
    rc = left_rows(j, in, true, &nd);
    if (rc == LAMINAR_OK) rc = release(j, nd);
  }
  if (rc != LAMINAR_OK) {
    lm_eval_ctx_reset(j->ctx);
    j->nlate = 0;
    chunk_undo(j, input, keys0);
    j->late[input] = late0;
    (void)account(j);
    if (rc == LAMINAR_ERR_NOMEM)
      lm_state_budget_fail(op->budget, rc,
                           "out of memory in the ASOF join; the batch was not applied "
                           "(join unchanged)");
    return rc;
  }
  j->nj = 0;
  /* The late rows once the chunk's output went downstream (they reuse its
   * columns); a failure of the late output leaves the chunk applied, as a
   * window's late rows do. */
  rc = late_deliver(j, input, in);
  lm_eval_ctx_reset(j->ctx);
  if (rc != LAMINAR_OK && op->txn != NULL) op->txn->applied = true; /* not voided */
  laminar_code ra = account(j);
  return rc != LAMINAR_OK ? rc : ra;
}

static laminar_code asof_on_input_watermark(lm_op* op, int32_t input, int64_t wm) {
  asof_op* j = (asof_op*)op;
  if (wm <= j->wm[input]) return LAMINAR_OK;
  LM_TRY(asof_thaw(j));
  j->wm[input] = wm;
  if (input == 1) {
    laminar_code rc = release(j, 0);
    lm_op_release_failed(op, rc, wm, "ASOF join rows");
    LM_TRY(rc);
  }
  /* Keys pruned on their own inserts; the quiet ones when a left watermark
   * may free rows (more rows kept than keys) or the rows doubled. */
  if ((input == 0 && j->right_rows > j->table.n) ||
      j->right_rows > 2 * j->swept_rows + 1024)
    sweep(j);
  LM_TRY(compact(j));
  LM_TRY(account(j));
  return forward_watermark(j);
}

/* ---- snapshot ---------------------------------------------------------------------------- */

#define ASOF_SNAP_TAG 0x41534F46u /* "ASOF" */


static laminar_code asof_snapshot(const lm_op* op, lm_state_writer* w) {
  const asof_op* j = (const asof_op*)op;
  lm_state_put_u32(w, ASOF_SNAP_TAG);
  for (int i = 0; i < 2; i++) {
    lm_state_put_i64(w, j->wm[i]);
    lm_state_put_i64(w, j->late[i]);
  }
  lm_state_put_i64(w, j->out_wm);
  /* Right rows by key: the key once, then the rows (time, columns). */
  int64_t groups = 0;
  for (int64_t g = 0; g < j->table.n; g++) groups += j->keys[g].n > j->keys[g].head;
  lm_state_put_i64(w, groups);
  for (int64_t g = 0; g < j->table.n; g++) {
    const lm_timelist* kr = &j->keys[g];
    if (kr->n == kr->head) continue;
    lm_state_table_put_keys(&j->table, g, w);
    lm_state_put_i64(w, kr->n - kr->head);
    for (int32_t i = kr->head; i < kr->n; i++) {
      lm_state_put_i64(w, kr->ts[i]);
      lm_rowstore_write_row(&j->right, kr->slot[i], w);
    }
  }
  /* Waiting left rows, in order: restored through the key expressions. */
  lm_state_put_i64(w, j->npend - j->phead);
  for (int64_t i = j->phead; i < j->npend; i++)
    lm_rowstore_write_row(&j->left, j->pend[i].slot, w);
  return lm_state_writer_status(w);
}

/* Keep the rows of left chunk *ch (columns cols over data / nulls, ours)
 * whose key hash routes to f's partition (as rt/part.c routes a left row:
 * NULL keys too), in place. */
static laminar_code filter_left(asof_op* j, lm_chunk* ch, lm_vec* cols, void** data,
                                uint8_t** nulls, const lm_op_part_filter* f) {
  if (f->nparts <= 1) return LAMINAR_OK;
  lm_vec keys[64];
  LM_TRY(eval_keys(j, 0, ch, keys));
  int64_t m = 0;
  for (int64_t row = 0; row < ch->nrows; row++) {
    if (lm_op_part_of(j->hashes[row], f->nparts) != f->part) continue;
    for (int32_t c = 0; c < ch->ncols; c++) {
      size_t w = (size_t)lm_type_width(cols[c].type);
      memmove((char*)data[c] + (size_t)m * w, (char*)data[c] + (size_t)row * w, w);
      nulls[c][m] = nulls[c][row];
    }
    m++;
  }
  for (int32_t c = 0; c < ch->ncols; c++) cols[c].len = m;
  ch->nrows = m;
  lm_eval_ctx_reset(j->ctx);
  return LAMINAR_OK;
}

/* Read n rows of `types` into columns (one chunk), then insert them (left
 * rows: those of f's partition). */
static laminar_code restore_rows(asof_op* j, int32_t side, lm_state_reader* r, int64_t n,
                                 const lm_op_part_filter* f) {
  const lm_rowstore* st = side == 0 ? &j->left : &j->right;
  int32_t ncols = st->ncols;
  if (n < 0 || n > (int64_t)1 << 31) return LAMINAR_ERR_RECOVERY;
  if (n == 0) return LAMINAR_OK;
  lm_vec* cols = lm_calloc((size_t)ncols, sizeof *cols);
  void** data = lm_calloc((size_t)ncols, sizeof *data);
  uint8_t** nulls = lm_calloc((size_t)ncols, sizeof *nulls);
  laminar_code rc = cols && data && nulls ? LAMINAR_OK : LAMINAR_ERR_NOMEM;
  for (int32_t c = 0; rc == LAMINAR_OK && c < ncols; c++) {
    data[c] = lm_calloc((size_t)n, (size_t)lm_type_width(st->types[c]));
    nulls[c] = lm_calloc((size_t)n, 1);
    if (data[c] == NULL || nulls[c] == NULL) rc = LAMINAR_ERR_NOMEM;
    cols[c] = (lm_vec){st->types[c], n, nulls[c], data[c]};
  }
  for (int64_t row = 0; rc == LAMINAR_OK && row < n; row++) {
    for (int32_t c = 0; c < ncols; c++) {
      nulls[c][row] = lm_state_get_u8(r);
      if (nulls[c][row]) continue;
      switch (st->types[c]) {
        case LM_TYPE_BINARY:
        case LM_TYPE_STRING: ((lm_str*)data[c])[row] = lm_state_get_bytes(r); break;
        case LM_TYPE_DOUBLE: ((double*)data[c])[row] = lm_state_get_f64(r); break;
        case LM_TYPE_NULL: ((uint8_t*)data[c])[row] = (uint8_t)lm_state_get_i64(r); break;
        default:
          if (lm_type_is_wide(st->types[c])) { /* as lm_rowstore_write_row wrote it */
            uint64_t lo = (uint64_t)lm_state_get_i64(r),
                     hi = (uint64_t)lm_state_get_i64(r);
            lm_vec_dec_put(st->types[c], data[c], row,
                           (lm_i128)(((lm_u128)hi << 64) | lo));
            break;
          }
          lm_vec_int_put(st->types[c], data[c], row, lm_state_get_i64(r));
          break;
      }
    }
    if (r->failed) rc = LAMINAR_ERR_RECOVERY;
  }
  lm_chunk ch = {n, ncols, cols, NULL};
  if (rc == LAMINAR_OK && side == 0) rc = filter_left(j, &ch, cols, data, nulls, f);
  if (rc == LAMINAR_OK) {
    int64_t nd;
    rc = side == 0 ? left_rows(j, &ch, false, &nd) : right_rows(j, &ch, false);
    lm_eval_ctx_reset(j->ctx);
  }
  for (int32_t c = 0; c < ncols && data != NULL && nulls != NULL; c++) {
    lm_free(data[c]);
    lm_free(nulls[c]);
  }
  lm_free(cols);
  lm_free(data);
  lm_free(nulls);
  return rc;
}


/* The right rows of a snapshot: per key group its keys, then its rows; the
 * groups of f's partition are kept (added to those there are). */
static laminar_code restore_right(asof_op* j, lm_state_reader* r,
                                  const lm_op_part_filter* f) {
  int64_t groups = lm_state_get_i64(r);
  if (groups < 0 || groups > ((int64_t)1 << 30) || r->failed) return LAMINAR_ERR_RECOVERY;
  lm_state_table* t = &j->table;
  for (int64_t k = 0; k < groups; k++) {
    LM_TRY(lm_state_table_reserve(t, t->n + 1));
    if (t->cap > j->nkeyrows) {
      lm_timelist* kk = lm_realloc(j->keys, sizeof *kk * (size_t)t->cap);
      if (kk == NULL) return LAMINAR_ERR_NOMEM;
      memset(kk + j->nkeyrows, 0, sizeof *kk * (size_t)(t->cap - j->nkeyrows));
      j->keys = kk;
      j->nkeyrows = t->cap;
    }
    int64_t g = t->n;
    LM_TRY(lm_state_table_get_keys(t, g, r));
    t->n++;
    int64_t n = lm_state_get_i64(r);
    if (n < 0 || n > ((int64_t)1 << 31) || r->failed) return LAMINAR_ERR_RECOVERY;
    LM_TRY(lm_rowstore_reserve(&j->right, j->right.used + n));
    bool mine = f->nparts <= 1 || lm_op_part_of(t->hash[g], f->nparts) == f->part;
    if (!mine) t->n--; /* another partition's: read past, its slot reused */
    for (int64_t i = 0; i < n; i++) {
      int64_t ts = lm_state_get_i64(r);
      uint32_t slot = lm_rowstore_take(&j->right);
      LM_TRY(lm_rowstore_read_row(&j->right, slot, r));
      if (!mine) {
        lm_rowstore_release(&j->right, slot);
        continue;
      }
      LM_TRY(lm_timelist_insert(&j->keys[g], ts, slot));
      j->right_rows++;
    }
  }
  return lm_state_table_reindex(t);
}

static void asof_clear(asof_op* j) {
  for (int64_t g = 0; g < j->nkeyrows; g++) {
    lm_timelist_free(&j->keys[g]);
  }
  lm_state_table_reset(&j->table);
  j->phead = j->npend = 0;
  j->right_rows = j->swept_rows = 0;
}

/* Restore a snapshot, or with f the part of it whose keys route to f's
 * partition (op.h lm_op_part_filter: a checkpoint taken with another number
 * of partitions), merged into the state there is when f->merge. */
static laminar_code asof_restore_part(lm_op* op, lm_state_reader* r,
                                      const lm_op_part_filter* f, laminar_error* err) {
  asof_op* j = (asof_op*)op;
  LM_TRY(asof_thaw(j));
  if (lm_state_get_u32(r) != ASOF_SNAP_TAG) {
    return lm_error_set(err, LAMINAR_ERR_RECOVERY,
                        "asof join: snapshot is not an ASOF join's");
  }
  int64_t had_wm[2] = {j->wm[0], j->wm[1]}, had_late[2] = {j->late[0], j->late[1]};
  int64_t had_out = j->out_wm;
  if (!f->merge) {
    asof_clear(j);
    had_late[0] = had_late[1] = 0;
    had_wm[0] = had_wm[1] = had_out = INT64_MAX;
  }
  /* Insert with the watermarks at their oldest: nothing is late or pruned. */
  int64_t wm[2], late[2];
  for (int i = 0; i < 2; i++) {
    wm[i] = lm_state_get_i64(r);
    late[i] = lm_state_get_i64(r);
    j->wm[i] = INT64_MIN;
  }
  int64_t out_wm = lm_state_get_i64(r);
  laminar_code rc = restore_right(j, r, f);
  if (rc == LAMINAR_OK) rc = restore_rows(j, 0, r, lm_state_get_i64(r), f);
  if (rc == LAMINAR_OK && r->failed) rc = LAMINAR_ERR_RECOVERY;
  if (rc != LAMINAR_OK) {
    asof_clear(j);
    return lm_error_set(err, rc, "asof join: cannot restore its state%s",
                        rc == LAMINAR_ERR_RECOVERY ? " (snapshot damaged)" : "");
  }
  /* Merged partitions saw the same watermarks at the barrier: the least. */
  for (int i = 0; i < 2; i++) {
    j->wm[i] = wm[i] < had_wm[i] ? wm[i] : had_wm[i];
    j->late[i] = had_late[i] + (f->late ? late[i] : 0);
  }
  j->out_wm = out_wm < had_out ? out_wm : had_out;
  j->swept_rows = j->right_rows;
  return account(j);
}

static laminar_code asof_restore(lm_op* op, lm_state_reader* r, laminar_error* err) {
  return asof_restore_part(op, r, &lm_op_part_whole, err);
}

/* Free the join's state: keys, their right rows, both row stores, the
 * waiting left rows (what a snapshot reads; not the scratch). */
static void state_free(asof_op* j) {
  for (int64_t g = 0; g < j->nkeyrows; g++) lm_timelist_free(&j->keys[g]);
  lm_free(j->keys);
  lm_state_table_free(&j->table);
  lm_rowstore_free(&j->left);
  lm_rowstore_free(&j->right);
  lm_free(j->pend);
}

/* ---- checkpoints by copy-on-write ----------------------------------------------------------- */

/* The freeze points a holder (an op-shaped shell: what asof_snapshot reads)
 * at the join's state as it is -- the key table, the right rows by key, the
 * row stores, the waiting left rows -- and marks it shared (share = 2): O(1)
 * in the stall. Before its first change while the checkpoint still holds it,
 * the op makes its own copy (asof_thaw: encoded and restored, as a restart
 * would, so the copy is the restore path's tested state) and goes on with
 * it; a checkpoint written before that costs no copy. Whoever lets go last
 * frees the held state. The op outlives its frozen states (the durable layer
 * writes or drops them before a stream goes). */

/* Exchange the state fields (state_free's) of a and b. */
static void swap_state(asof_op* a, asof_op* b) {
  asof_op t = *a;
  a->table = b->table;
  a->keys = b->keys;
  a->nkeyrows = b->nkeyrows;
  a->left = b->left;
  a->right = b->right;
  a->pend = b->pend;
  a->phead = b->phead;
  a->npend = b->npend;
  a->pcap = b->pcap;
  a->right_rows = b->right_rows;
  a->swept_rows = b->swept_rows;
  b->table = t.table;
  b->keys = t.keys;
  b->nkeyrows = t.nkeyrows;
  b->left = t.left;
  b->right = t.right;
  b->pend = t.pend;
  b->phead = t.phead;
  b->npend = t.npend;
  b->pcap = t.pcap;
  b->right_rows = t.right_rows;
  b->swept_rows = t.swept_rows;
}

/* Before the op changes its state: if a checkpoint still holds it, go on
 * with a copy (the holder keeps the original); else take it back. */
static laminar_code asof_thaw(asof_op* j) {
  if (!j->held) return LAMINAR_OK;
  if (atomic_load_explicit(&j->share, memory_order_acquire) != 2) {
    atomic_store_explicit(&j->share, 0, memory_order_relaxed); /* the writer is done */
    j->held = false;
    return LAMINAR_OK;
  }
  lm_op* copy;
  LM_TRY(lm_op_asof_create(&j->spec, &j->base.out_schema, &copy));
  lm_state_writer w;
  lm_state_writer_init(&w);
  laminar_code rc = asof_snapshot(&j->base, &w);
  if (rc == LAMINAR_OK) {
    lm_state_reader r;
    lm_state_reader_init(&r, w.data, w.len);
    rc = asof_restore(copy, &r, NULL);
  }
  lm_state_writer_free(&w);
  if (rc != LAMINAR_OK) {
    lm_op_chain_destroy(copy);
    return rc;
  }
  asof_op* c = (asof_op*)copy;
  swap_state(j, c); /* j goes on with the copy; c has the originals */
  j->held = false;
  j->thaws++;
  /* acq_rel: pairs with the writer's let-go. 1: it let go first, the
   * originals are ours to free (with c); else the writer frees them. */
  if (atomic_fetch_sub_explicit(&j->share, 1, memory_order_acq_rel) != 1) {
    asof_op empty = {0};
    swap_state(c, &empty);
  }
  lm_op_chain_destroy(copy);
  return LAMINAR_OK;
}

/* A checkpoint's frozen join: the op, and a shell holding its state. */
typedef struct asof_frozen {
  asof_op* op;
  asof_op shell;
} asof_frozen;

static laminar_code asof_freeze(lm_op* op, void** out) {
  asof_op* j = (asof_op*)op;
  *out = NULL;
  LM_TRY(asof_thaw(j)); /* an earlier checkpoint's hold: settled first */
  asof_frozen* f = lm_malloc(sizeof *f);
  if (f == NULL) return LAMINAR_ERR_NOMEM;
  f->op = j;
  memcpy(&f->shell, j, sizeof f->shell); /* the state's pointers; wm, late, out_wm */
  atomic_store_explicit(&j->share, 2, memory_order_relaxed); /* published by the resume */
  j->held = true;
  *out = f;
  return LAMINAR_OK;
}

static laminar_code asof_write_frozen(void* frozen, lm_state_writer* w) {
  asof_frozen* f = frozen;
  laminar_code rc = w != NULL ? asof_snapshot(&f->shell.base, w) : LAMINAR_OK;
  /* acq_rel: pairs with the op's let-go in asof_thaw. 1: the op let go
   * first (it copied the state): the held one is ours to free. */
  if (atomic_fetch_sub_explicit(&f->op->share, 1, memory_order_acq_rel) == 1)
    state_free(&f->shell);
  lm_free(f);
  return rc;
}

/* ---- lifecycle ----------------------------------------------------------------------------- */

static void asof_destroy(lm_op* op) {
  asof_op* j = (asof_op*)op;
  /* Still shared with a checkpoint not yet written: its writer frees it. */
  bool writer_frees =
      j->held && atomic_fetch_sub_explicit(&j->share, 1, memory_order_acq_rel) == 2;
  if (!writer_frees) state_free(j);
  lm_join_out_free(&j->o);
  lm_free(j->rel);
  lm_free(j->jr);
  lm_free(j->match);
  lm_free(j->hashes);
  lm_free(j->mark);
  lm_free(j->key_types);
  lm_eval_ctx_destroy(j->ctx);
  lm_free(j);
}

static const lm_op_vtable asof_vtable = {
    .name = "asof_join",
    .on_chunk = NULL,
    .takes_sel = false,
    .on_watermark = NULL, /* inputs' watermarks: on_input_watermark */
    .snapshot = asof_snapshot,
    .restore = asof_restore,
    .restore_part = asof_restore_part,
    .destroy = asof_destroy,
    .freeze = asof_freeze,
    .write_frozen = asof_write_frozen,
    .ninputs = 2,
    .on_input_chunk = asof_on_input_chunk,
    .on_input_watermark = asof_on_input_watermark,
};

laminar_code lm_op_asof_create(const lm_asof_spec* spec, const lm_schema* out_schema,
                               lm_op** out) {
  *out = NULL;
  if (spec->nkeys > 64 || out_schema->ncols != spec->lcols + spec->rcols)
    return LAMINAR_ERR_INTERNAL;
  asof_op* j = lm_calloc(1, sizeof *j);
  if (j == NULL) return LAMINAR_ERR_NOMEM;
  j->base.vt = &asof_vtable;
  j->spec = *spec;
  j->wm[0] = j->wm[1] = j->out_wm = INT64_MIN;
  j->key_types = lm_calloc((size_t)(spec->nkeys ? spec->nkeys : 1), sizeof(lm_type));
  laminar_code rc = j->key_types != NULL ? LAMINAR_OK : LAMINAR_ERR_NOMEM;
  for (int32_t k = 0; rc == LAMINAR_OK && k < spec->nkeys; k++)
    j->key_types[k] = spec->lkeys[k]->type;
  if (rc == LAMINAR_OK) rc = lm_join_out_init(&j->o, out_schema, spec->need);
  if (rc == LAMINAR_OK) rc = lm_eval_ctx_create(&j->ctx);
  if (rc == LAMINAR_OK) rc = lm_state_table_init(&j->table, j->key_types, spec->nkeys);
  if (rc == LAMINAR_OK)
    rc = lm_rowstore_init(&j->left, out_schema, 0, spec->lcols, spec->need);
  if (rc == LAMINAR_OK)
    rc = lm_rowstore_init(&j->right, out_schema, spec->lcols, spec->rcols, spec->need);
  if (rc == LAMINAR_OK && lm_schema_copy(out_schema, &j->base.out_schema) != 0)
    rc = LAMINAR_ERR_NOMEM;
  if (rc != LAMINAR_OK) {
    lm_schema_free(&j->base.out_schema);
    asof_destroy(&j->base);
    return rc;
  }
  *out = &j->base;
  return LAMINAR_OK;
}

void lm_op_asof_held(const lm_op* op, int64_t* out_left, int64_t* out_right) {
  *out_left = *out_right = 0;
  if (!is_asof(op)) return;
  const asof_op* j = (const asof_op*)op;
  *out_left = j->npend - j->phead;
  *out_right = j->right_rows;
}

int64_t lm_op_asof_late_rows(const lm_op* op) {
  if (!is_asof(op)) return 0;
  const asof_op* j = (const asof_op*)op;
  return j->late[0] + j->late[1];
}

int64_t lm_op_asof_out_watermark(const lm_op* op) {
  return is_asof(op) ? ((const asof_op*)op)->out_wm : INT64_MAX;
}

int64_t lm_op_asof_thaws(const lm_op* op) {
  return is_asof(op) ? ((const asof_op*)op)->thaws : 0;
}

/* ---- both joins ---------------------------------------------------------------------------- */

void lm_op_join_held(const lm_op* op, int64_t out_rows[2], int64_t out_bytes[2]) {
  if (!is_asof(op)) {
    lm_op_ijoin_held(op, out_rows, out_bytes);
    return;
  }
  const asof_op* j = (const asof_op*)op;
  lm_op_asof_held(op, &out_rows[0], &out_rows[1]);
  out_bytes[0] = lm_rowstore_bytes(&j->left) + (j->npend - j->phead) * 24;
  out_bytes[1] = lm_rowstore_bytes(&j->right) + j->right_rows * 12;
}

int64_t lm_op_join_out_watermark(const lm_op* op) {
  return is_asof(op) ? lm_op_asof_out_watermark(op) : lm_op_ijoin_out_watermark(op);
}

void lm_op_join_set_late_sink(lm_op* op, lm_op_sink_fn fn, void* arg) {
  if (!is_asof(op)) {
    lm_op_ijoin_set_late_sink(op, fn, arg);
    return;
  }
  asof_op* j = (asof_op*)op;
  j->late_fn = fn;
  j->late_arg = arg;
}

int64_t lm_op_join_late_rows(const lm_op* op) {
  return lm_op_asof_late_rows(op) + lm_op_ijoin_late_rows(op);
}
