/*
 * expire.c -- the temporal filter (op.h lm_expire_spec): `WHERE ts >
 * WATERMARK() - INTERVAL h` keeps a stream or view to a sliding horizon of
 * event time, as Materialize's temporal filters over mz_now() do over
 * processing time. A row is emitted with its weight when it arrives, held,
 * and retracted (its weight negated) once the watermark reaches its time
 * plus h, so the rows emitted up to any watermark W sum to the input rows
 * with ts > W - h: what the batch query with W in place of WATERMARK()
 * returns. A row whose time plus h the watermark already reached is late:
 * counted, and handed to the late output when the stream has one. A row
 * whose time is NULL never passes (the comparison is NULL).
 *
 * State (one partition's thread): the held rows in a row store (state/
 * rowstore.h) and their slots in one list sorted by expiry (time plus h, in
 * the time column's unit; + 1 for `>=`), a prefix of which each watermark
 * advance retracts. Out-of-order rows are inserted where they belong.
 *
 * All or nothing (issue 20): a chunk's rows are put in the store first
 * (room reserved, taken back on a failure), emitted, and only then listed
 * (room reserved before: cannot fail); a watermark's retractions are emitted
 * before their rows leave, so a failure leaves them held, retracted at the
 * next advance.
 */
#include "op/op.h"

#include "op/join.h"
#include "state/rowstore.h"
#include "util/util.h"

#include <string.h>

#define EXPIRE_SNAP_TAG 0x54464C54u /* "TFLT" */

typedef struct expire_op {
  lm_op base;
  lm_expire_spec spec;
  lm_rowstore rows; /* the input's columns (a changelog's weight among them) */
  lm_timelist due;  /* held slots by expiry */
  int64_t wm;       /* the watermark, in the time column's unit (INT64_MIN: none) */
  int64_t late_rows;
  lm_op_sink_fn late_fn;
  void* late_arg;
  lm_join_out out; /* emitted columns: the input's [+ _weight] */
  uint32_t* keep;  /* a chunk's rows: kept ones, then (from the back) late ones */
  uint32_t* slots; /* the kept rows' slots */
  int64_t* expiry; /* the kept rows' expiries */
  int64_t scratch; /* rows the three arrays above hold */
  uint8_t* mark;   /* string compaction, a batch's undo: slots marked */
  int64_t mark_cap;
  /* A batch that fans out (op.h lm_op_txn): the slots its chunks added, and
   * the late rows before it, taken back if a later reader fails. */
  uint32_t* u_slots;
  int64_t u_n, u_cap, u_late;
} expire_op;

static bool is_expire(const lm_op* op);

/* Expiry of a row at time t: the least watermark (same unit) that drops it. */
static int64_t expiry_of(const expire_op* e, int64_t t) {
  return lm_join_sat_add(lm_join_sat_add(t, e->spec.horizon), e->spec.inclusive ? 1 : 0);
}

/* The weight column the operator emits: the input's, or its own (last). */
static int32_t weight_out(const expire_op* e) {
  return e->spec.weight_col >= 0 ? e->spec.weight_col : e->spec.in_ncols;
}

static laminar_code scratch_reserve(expire_op* e, int64_t n) {
  if (n <= e->scratch) return LAMINAR_OK;
  int64_t nc = e->scratch ? e->scratch : 256;
  while (nc < n) nc *= 2;
  uint32_t* k = lm_realloc(e->keep, sizeof *k * (size_t)nc);
  if (k == NULL) return LAMINAR_ERR_NOMEM;
  e->keep = k;
  uint32_t* s = lm_realloc(e->slots, sizeof *s * (size_t)nc);
  if (s == NULL) return LAMINAR_ERR_NOMEM;
  e->slots = s;
  int64_t* x = lm_realloc(e->expiry, sizeof *x * (size_t)nc);
  if (x == NULL) return LAMINAR_ERR_NOMEM;
  e->expiry = x;
  e->scratch = nc;
  return LAMINAR_OK;
}

/* Column c of rows rows[0..n) of `cols` (by row) or of the store (by slot,
 * from_store) into output column c. */
static void gather(expire_op* e, int32_t c, const lm_vec* cols, bool from_store,
                   const uint32_t* rows, int64_t n) {
  lm_type t = e->out.vecs[c].type;
  int64_t w = lm_type_width(t);
  const char* src = from_store ? e->rows.data[c] : cols[c].data;
  const uint8_t* sn = from_store ? e->rows.nulls[c] : cols[c].nulls;
  char* dst = e->out.data[c];
  uint8_t* nl = e->out.nulls[c];
  bool any_null = false;
  for (int64_t i = 0; i < n; i++) {
    int64_t r = rows[i];
    nl[i] = sn != NULL && sn[r];
    any_null |= nl[i];
    lm_copy_value(dst + i * w, src + r * w, w);
  }
  e->out.vecs[c] = (lm_vec){t, n, any_null ? nl : NULL, dst};
}

/* The emitted weight column: the input's (negated for retractions) or
 * `sign` for every row. */
static void fill_weights(expire_op* e, int64_t n, int64_t sign) {
  int32_t wc = weight_out(e);
  int64_t* wd = e->out.data[wc];
  for (int64_t i = 0; i < n; i++) {
    int64_t v = 1;
    if (e->spec.weight_col >= 0) v = ((const int64_t*)e->out.vecs[wc].data)[i];
    wd[i] = sign * v;
  }
  e->out.vecs[wc] = (lm_vec){LM_TYPE_INT64, n, NULL, wd};
}

static int64_t expire_bytes(const expire_op* e) {
  return lm_rowstore_bytes(&e->rows) + (int64_t)e->rows.live * 12;
}

static laminar_code account(expire_op* e) {
  return lm_op_account(&e->base, expire_bytes(e), false);
}

/* Hand the late rows (keep[n - nlate .. n), from the back) to the late output. */
static laminar_code emit_late(expire_op* e, const lm_chunk* in, int64_t nlate) {
  e->late_rows += nlate;
  if (nlate == 0 || e->late_fn == NULL) return LAMINAR_OK;
  const uint32_t* rows = e->keep + (in->nrows - nlate);
  for (int32_t c = 0; c < e->spec.in_ncols; c++)
    gather(e, c, in->cols, false, rows, nlate);
  lm_chunk late = {nlate, e->spec.in_ncols, e->out.vecs, NULL};
  return e->late_fn(e->late_arg, &late);
}

static laminar_code mark_reserve(expire_op* e, int64_t n) {
  if (n <= e->mark_cap) return LAMINAR_OK;
  uint8_t* m = lm_realloc(e->mark, (size_t)n);
  if (m == NULL) return LAMINAR_ERR_NOMEM;
  e->mark = m;
  e->mark_cap = n;
  return LAMINAR_OK;
}

/* The end of a batch that fans out: an abort takes the rows its chunks
 * added out of the list and the store (the room to mark them was reserved:
 * nothing allocated); either way they are forgotten. */
static laminar_code expire_txn_end(void* a, void* b, bool commit) {
  (void)b;
  expire_op* e = a;
  if (!commit && e->u_n > 0) {
    memset(e->mark, 0, (size_t)e->rows.used);
    for (int64_t i = 0; i < e->u_n; i++) e->mark[e->u_slots[i]] = 1;
    int32_t k = e->due.head;
    for (int32_t i = e->due.head; i < e->due.n; i++) {
      if (e->mark[e->due.slot[i]]) continue;
      e->due.ts[k] = e->due.ts[i];
      e->due.slot[k++] = e->due.slot[i];
    }
    e->due.n = k;
    for (int64_t i = 0; i < e->u_n; i++) lm_rowstore_release(&e->rows, e->u_slots[i]);
    if (lm_op_bounded(&e->base)) (void)lm_op_account(&e->base, expire_bytes(e), false);
  }
  if (!commit) e->late_rows = e->u_late;
  e->u_n = 0;
  return LAMINAR_OK;
}

/* A chunk of a batch that fans out: join it (before any change) with room
 * to undo k more rows. */
static laminar_code expire_hold(expire_op* e, int64_t k) {
  bool first;
  LM_TRY(lm_op_txn_join(&e->base, expire_txn_end, &first));
  if (first) {
    e->u_n = 0;
    e->u_late = e->late_rows;
  }
  if (e->u_n + k > e->u_cap) {
    int64_t nc = 2 * (e->u_n + k);
    uint32_t* u = lm_realloc(e->u_slots, sizeof *u * (size_t)nc);
    if (u == NULL) return LAMINAR_ERR_NOMEM;
    e->u_slots = u;
    e->u_cap = nc;
  }
  return mark_reserve(e, e->rows.used + k);
}

static laminar_code expire_chunk(lm_op* op, const lm_chunk* in) {
  expire_op* e = (expire_op*)op;
  int64_t n = in->nrows;
  if (n == 0) return LAMINAR_OK;
  if (e->base.checks_bound && lm_op_bounded(op)) {
    int64_t bound = lm_join_chunk_bound(&e->rows, NULL, 0, 12, in);
    LM_TRY(lm_op_account(op, expire_bytes(e) + bound, true));
  }
  LM_TRY(scratch_reserve(e, n));
  LM_TRY(lm_join_out_reserve(&e->out, n));
  const lm_vec* tv = &in->cols[e->spec.time_col];
  const lm_vec* wv = e->spec.weight_col >= 0 ? &in->cols[e->spec.weight_col] : NULL;
  const int64_t* ts = tv->data;
  int64_t k = 0, nlate = 0;
  for (int64_t r = 0; r < n; r++) {
    if (tv->nulls != NULL && tv->nulls[r]) continue; /* NULL > x: not kept */
    if (wv != NULL &&
        ((wv->nulls != NULL && wv->nulls[r]) || ((const int64_t*)wv->data)[r] == 0))
      continue; /* a changelog row that weighs nothing */
    int64_t x = expiry_of(e, ts[r]);
    if (e->wm != INT64_MIN && e->wm >= x) {
      e->keep[n - ++nlate] = (uint32_t)r; /* late: from the back */
      continue;
    }
    e->expiry[k] = x;
    e->keep[k++] = (uint32_t)r;
  }
  bool held = lm_op_txn_active(op);
  if (held) LM_TRY(expire_hold(e, k));
  if (k > 0) {
    LM_TRY(lm_rowstore_reserve(&e->rows, e->rows.used + k));
    LM_TRY(lm_timelist_reserve(&e->due, k));
    laminar_code rc = LAMINAR_OK;
    int64_t put = 0;
    for (; put < k && rc == LAMINAR_OK; put++) {
      e->slots[put] = lm_rowstore_take(&e->rows);
      rc = lm_rowstore_put(&e->rows, e->slots[put], in->cols, e->keep[put]);
    }
    if (rc == LAMINAR_OK) {
      for (int32_t c = 0; c < e->spec.in_ncols; c++)
        gather(e, c, in->cols, false, e->keep, k);
      fill_weights(e, k, 1);
      lm_chunk out = {k, e->base.out_schema.ncols, e->out.vecs, NULL};
      rc = lm_op_emit(op, &out);
    }
    if (rc != LAMINAR_OK) { /* the rows were never held */
      for (int64_t i = 0; i < put; i++) lm_rowstore_release(&e->rows, e->slots[i]);
      return rc;
    }
    for (int64_t i = 0; i < k; i++)
      (void)lm_timelist_insert(&e->due, e->expiry[i], e->slots[i]); /* room reserved */
    if (held) {
      memcpy(e->u_slots + e->u_n, e->slots, sizeof *e->slots * (size_t)k);
      e->u_n += k;
    }
  }
  laminar_code rc = emit_late(e, in, nlate);
  laminar_code ra = account(e);
  return rc != LAMINAR_OK ? rc : ra;
}

static laminar_code expire_on_chunk(lm_op* op, const lm_chunk* in) {
  laminar_code rc = expire_chunk(op, in);
  if (rc == LAMINAR_ERR_NOMEM) /* unless a more precise text is recorded */
    lm_state_budget_fail(op->budget, rc,
                         "out of memory; the batch was not applied "
                         "(state unchanged)");
  return rc;
}

/* Move the live rows' strings to a fresh pool when the old one is mostly
 * dead bytes (rows retracted): the state stays bounded by what is held. */
static laminar_code compact(expire_op* e) {
  lm_rowstore* s = &e->rows;
  if (!s->has_strings ||
      (int64_t)lm_pool_reserved(&s->strings) < 2 * s->str_live + (1 << 20))
    return LAMINAR_OK;
  LM_TRY(mark_reserve(e, s->used ? s->used : 1));
  memset(e->mark, 0, (size_t)s->used);
  for (int32_t i = e->due.head; i < e->due.n; i++) e->mark[e->due.slot[i]] = 1;
  return lm_rowstore_compact(s, e->mark);
}

static laminar_code expire_on_watermark(lm_op* op, int64_t watermark_ms) {
  expire_op* e = (expire_op*)op;
  int64_t w = lm_join_to_units(e->spec.time_type, watermark_ms);
  if (e->wm != INT64_MIN && w <= e->wm) return LAMINAR_OK;
  e->wm = w;
  int32_t end = lm_timelist_upper(&e->due, w);
  int64_t m = end - e->due.head;
  if (m == 0) return LAMINAR_OK;
  laminar_code rc = lm_join_out_reserve(&e->out, m);
  if (rc == LAMINAR_OK) {
    const uint32_t* slots = e->due.slot + e->due.head;
    for (int32_t c = 0; c < e->spec.in_ncols; c++) gather(e, c, NULL, true, slots, m);
    fill_weights(e, m, -1);
    lm_chunk out = {m, e->base.out_schema.ncols, e->out.vecs, NULL};
    rc = lm_op_emit(op, &out);
  }
  if (rc ==
      LAMINAR_ERR_NOMEM) { /* what failed downstream undid its chunk: say what it is */
    laminar_error dropped;
    (void)lm_state_budget_error(op->budget, rc, &dropped);
  }
  if (rc != LAMINAR_OK) return lm_op_release_failed(op, rc, watermark_ms, "expired rows");
  for (int32_t i = e->due.head; i < end; i++)
    lm_rowstore_release(&e->rows, e->due.slot[i]);
  e->due.head = end;
  LM_TRY(compact(e));
  return account(e);
}

/* ---- snapshot ------------------------------------------------------------------------ */

static laminar_code expire_snapshot(const lm_op* op, lm_state_writer* w) {
  const expire_op* e = (const expire_op*)op;
  lm_state_put_u32(w, EXPIRE_SNAP_TAG);
  lm_state_put_i64(w, e->wm);
  lm_state_put_i64(w, e->late_rows);
  lm_state_put_i64(w, e->due.n - e->due.head);
  for (int32_t i = e->due.head; i < e->due.n; i++) {
    lm_state_put_i64(w, e->due.ts[i]);
    lm_rowstore_write_row(&e->rows, e->due.slot[i], w);
  }
  return lm_state_writer_status(w);
}

static void expire_clear(expire_op* e) {
  for (int32_t i = e->due.head; i < e->due.n; i++)
    lm_rowstore_release(&e->rows, e->due.slot[i]);
  e->due.head = e->due.n = 0;
}

static laminar_code expire_restore(lm_op* op, lm_state_reader* r, laminar_error* err) {
  expire_op* e = (expire_op*)op;
  expire_clear(e);
  if (lm_state_get_u32(r) != EXPIRE_SNAP_TAG) {
    return lm_error_set(err, LAMINAR_ERR_RECOVERY,
                        "temporal filter: the snapshot is not a temporal filter's");
  }
  int64_t wm = lm_state_get_i64(r), late = lm_state_get_i64(r);
  int64_t n = lm_state_get_i64(r);
  laminar_code rc =
      r->failed || n < 0 || n > INT32_MAX ? LAMINAR_ERR_RECOVERY : LAMINAR_OK;
  if (rc == LAMINAR_OK) rc = lm_rowstore_reserve(&e->rows, n);
  if (rc == LAMINAR_OK) rc = lm_timelist_reserve(&e->due, n);
  for (int64_t i = 0; i < n && rc == LAMINAR_OK; i++) {
    int64_t x = lm_state_get_i64(r);
    uint32_t slot = lm_rowstore_take(&e->rows);
    rc = lm_rowstore_read_row(&e->rows, slot, r);
    if (rc == LAMINAR_OK) rc = lm_timelist_insert(&e->due, x, slot);
    if (rc != LAMINAR_OK) lm_rowstore_release(&e->rows, slot);
  }
  if (rc == LAMINAR_OK && r->failed) rc = LAMINAR_ERR_RECOVERY;
  if (rc != LAMINAR_OK) {
    expire_clear(e);
    return lm_error_set(err, rc, "temporal filter: cannot restore its rows%s",
                        rc == LAMINAR_ERR_RECOVERY ? " (snapshot damaged)" : "");
  }
  e->wm = wm;
  e->late_rows = late;
  return account(e);
}

static void expire_destroy(lm_op* op) {
  expire_op* e = (expire_op*)op;
  lm_rowstore_free(&e->rows);
  lm_timelist_free(&e->due);
  lm_join_out_free(&e->out);
  lm_free(e->keep);
  lm_free(e->slots);
  lm_free(e->expiry);
  lm_free(e->mark);
  lm_free(e->u_slots);
  lm_schema_free(&op->out_schema);
  lm_free(e);
}

static const lm_op_vtable expire_vtable = {
    .name = "temporal_filter",
    .on_chunk = expire_on_chunk,
    .on_watermark = expire_on_watermark,
    .snapshot = expire_snapshot,
    .restore = expire_restore,
    .destroy = expire_destroy,
};

static bool is_expire(const lm_op* op) { return op != NULL && op->vt == &expire_vtable; }

laminar_code lm_op_expire_create(const lm_expire_spec* spec, const lm_schema* in_schema,
                                 const lm_schema* out_schema, lm_op** out) {
  /* in_schema's first in_ncols columns are the input's */
  *out = NULL;
  expire_op* e = lm_calloc(1, sizeof *e);
  if (e == NULL) return LAMINAR_ERR_NOMEM;
  e->base.vt = &expire_vtable;
  e->spec = *spec;
  e->wm = INT64_MIN;
  laminar_code rc = lm_schema_copy(out_schema, &e->base.out_schema) != 0
                        ? LAMINAR_ERR_NOMEM
                        : LAMINAR_OK;
  if (rc == LAMINAR_OK)
    rc = lm_rowstore_init(&e->rows, in_schema, 0, spec->in_ncols, NULL);
  if (rc == LAMINAR_OK) rc = lm_join_out_init(&e->out, out_schema, NULL);
  if (rc != LAMINAR_OK) {
    expire_destroy(&e->base);
    return rc;
  }
  *out = &e->base;
  return LAMINAR_OK;
}

bool lm_op_is_expire(const lm_op* op) { return is_expire(op); }

void lm_op_expire_set_late_sink(lm_op* op, lm_op_sink_fn fn, void* arg) {
  if (!is_expire(op)) return;
  ((expire_op*)op)->late_fn = fn;
  ((expire_op*)op)->late_arg = arg;
}

int64_t lm_op_expire_late_rows(const lm_op* op) {
  return is_expire(op) ? ((const expire_op*)op)->late_rows : 0;
}

int64_t lm_op_expire_held(const lm_op* op) {
  return is_expire(op) ? ((const expire_op*)op)->rows.live : 0;
}
