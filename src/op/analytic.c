/*
 * analytic.c -- the analytic operator: LAG, LEAD, ROW_NUMBER, RANK,
 * DENSE_RANK, FIRST_VALUE and LAST_VALUE OVER (PARTITION BY keys ORDER BY
 * the event time) over a stream (op.h, lm_analytic_spec).
 *
 * Rows wait in slots until the watermark passes them ("held"): a row whose
 * event time t < watermark can have no earlier peer still to come. A
 * watermark releases the held rows it passed, sorted by (event time, arrival
 * sequence); each released row takes its partition's next position and the
 * calls' values from its partition's state (a row count, the rank of the
 * last peer group, FIRST_VALUE's first value, LAG's last `offset` values in
 * a ring per call). A LEAD call fills a released row's result when the row
 * `offset` positions later is released; until the longest LEAD's rows are
 * there the row is "pending". Rows are emitted in event-time order, once per
 * watermark, then their slots are freed.
 *
 * Partitions are rows of a keyed state table (state/table.h); the op keeps
 * its per-partition state in arrays indexed by the table's row ids. Values
 * a row or partition keeps are lm_value (strings: an owned copy).
 */
#include "op/op.h"

#include "util/util.h"

#include <stdlib.h>
#include <string.h>

#define AN_SNAPSHOT_VERSION 1u

typedef struct an_op {
  lm_op base;
  lm_analytic_spec spec;
  lm_type* key_types;
  lm_eval_ctx* ctx;
  /* A row's values: the input columns [0, nin), the calls' arguments and
   * defaults [nin, res0), the calls' results [res0, nvals). */
  int32_t nin, res0, nvals;
  lm_type* vtypes;
  const lm_expr** extra; /* res0 - nin expressions evaluated into [nin, res0) */
  int32_t* arg_at;       /* per call: the value index of its argument, -1 none */
  int32_t order_at;      /* per window: the ORDER BY values' first index */
  int32_t* def_at;       /* per call: of its default, -1 none */
  /* Slots */
  int64_t cap_slots;
  int64_t nslots; /* high-water mark */
  lm_value* vals; /* cap_slots * nvals */
  int64_t* ts;    /* event time in the column's unit (micros for TIMESTAMP) */
  uint64_t* seq;  /* arrival order */
  uint32_t* part; /* partition (table row id) */
  int64_t* pos;   /* position in the partition once released (1-based) */
  int32_t* free_slots;
  int64_t nfree;
  int32_t* held; /* not yet released, in arrival order */
  int64_t nheld;
  int32_t* pend; /* released, not yet emitted, in release order */
  int64_t npend;
  /* Partitions */
  lm_state_table t;
  int64_t pcap;
  int64_t *p_count, *p_last_ts, *p_rank, *p_dense;
  int32_t nfirst, lag_slots, maxlead;
  int32_t* first_idx; /* per call: FIRST_VALUE's index in p_first, -1 */
  int32_t* lag_off;   /* per call: LAG's first ring entry in p_lag, -1 */
  lm_value* p_first;  /* pcap * nfirst */
  lm_value* p_lag;    /* pcap * lag_slots */
  int32_t* p_lead;    /* pcap * maxlead: slot of position q at q % maxlead */
  /* RANGE frames: per partition and call, the (time, value) of the rows a
   * later row's frame may still hold, by time */
  int32_t nrange;
  int32_t* range_idx;       /* per call: its index among the RANGE calls, -1 */
  struct an_deque* p_range; /* pcap * nrange */
  uint64_t next_seq;
  bool time_us; /* the time column is a TIMESTAMP (micros; watermarks are ms) */
  int64_t watermark;
  int64_t late_rows;
  int64_t str_bytes; /* owned string bytes (accounting) */
  lm_vec* keyv;      /* nkeys evaluated keys of a chunk */
  lm_vec* extrav;    /* evaluated extras of a chunk */
  lm_vec* outs;      /* out_schema's columns */
} an_op;

typedef struct an_deque {
  int64_t* ts;
  lm_value* v;
  int64_t head, n, cap; /* entries [head, n) */
} an_deque;

/* ---- values ---------------------------------------------------------------------- */

static void val_null(lm_value* v) {
  memset(v, 0, sizeof *v);
  v->is_null = true;
}

static void val_clear(an_op* op, lm_value* v) {
  if (v->s.ptr != NULL) {
    op->str_bytes -= v->s.len + 1;
    lm_free((void*)v->s.ptr);
  }
  val_null(v);
}

static laminar_code val_str(an_op* op, lm_value* v, const char* p, int64_t len) {
  char* c = lm_malloc((size_t)len + 1);
  if (c == NULL) return LAMINAR_ERR_NOMEM;
  if (len > 0) memcpy(c, p, (size_t)len);
  c[len] = '\0';
  v->s.ptr = c;
  v->s.len = len;
  op->str_bytes += len + 1;
  return LAMINAR_OK;
}

/* *v (cleared) takes row k of x. */
static laminar_code val_from_vec(an_op* op, lm_value* v, const lm_vec* x, int64_t k) {
  val_null(v);
  if (x->type == LM_TYPE_NULL || (x->nulls != NULL && x->nulls[k])) return LAMINAR_OK;
  v->is_null = false;
  switch (x->type) {
    case LM_TYPE_BOOL: v->b = ((const uint8_t*)x->data)[k] != 0; break;
    case LM_TYPE_DOUBLE: v->d = ((const double*)x->data)[k]; break;
    case LM_TYPE_BINARY:
    case LM_TYPE_STRING: {
      lm_str s = ((const lm_str*)x->data)[k];
      return val_str(op, v, s.ptr, s.len);
    }
    default: v->i = lm_vec_int_at(x, k); break;
  }
  return LAMINAR_OK;
}

/* *dst (cleared) takes a copy of *src. */
static laminar_code val_copy(an_op* op, lm_value* dst, const lm_value* src) {
  *dst = *src;
  dst->s.ptr = NULL;
  dst->s.len = 0;
  if (src->s.ptr != NULL) return val_str(op, dst, src->s.ptr, src->s.len);
  return LAMINAR_OK;
}

static void val_put(lm_state_writer* w, const lm_value* v, lm_type t) {
  lm_state_put_u8(w, v->is_null ? 1 : 0);
  if (v->is_null) return;
  switch (t) {
    case LM_TYPE_DOUBLE: lm_state_put_f64(w, v->d); break;
    case LM_TYPE_BINARY:
    case LM_TYPE_STRING: lm_state_put_bytes(w, v->s.ptr, (size_t)v->s.len); break;
    case LM_TYPE_BOOL: lm_state_put_i64(w, v->b ? 1 : 0); break;
    default: lm_state_put_i64(w, v->i); break;
  }
}

static laminar_code val_get(an_op* op, lm_state_reader* r, lm_value* v, lm_type t) {
  val_null(v);
  if (lm_state_get_u8(r) != 0) return LAMINAR_OK;
  v->is_null = false;
  switch (t) {
    case LM_TYPE_DOUBLE: v->d = lm_state_get_f64(r); break;
    case LM_TYPE_BINARY:
    case LM_TYPE_STRING: {
      lm_str s = lm_state_get_bytes(r);
      return val_str(op, v, s.ptr != NULL ? s.ptr : "", s.ptr != NULL ? s.len : 0);
    }
    case LM_TYPE_BOOL: v->b = lm_state_get_i64(r) != 0; break;
    default: v->i = lm_state_get_i64(r); break;
  }
  return LAMINAR_OK;
}

/* ---- slots and partitions ---------------------------------------------------------- */

static lm_value* row_vals(const an_op* op, int32_t slot) {
  return &op->vals[(int64_t)slot * op->nvals];
}

/* Room for `more` slots beyond the high-water mark, held and pending. */
static laminar_code slots_reserve(an_op* op, int64_t more) {
  int64_t need = op->nslots + more;
  if (need <= op->cap_slots) return LAMINAR_OK;
  int64_t cap = op->cap_slots ? op->cap_slots : 64;
  while (cap < need) cap *= 2;
  if (cap > INT32_MAX) return LAMINAR_ERR_NOMEM;
  LM_GROW_ARRAY(op->vals, cap * op->nvals);
  LM_GROW_ARRAY(op->ts, cap);
  LM_GROW_ARRAY(op->seq, cap);
  LM_GROW_ARRAY(op->part, cap);
  LM_GROW_ARRAY(op->pos, cap);
  LM_GROW_ARRAY(op->free_slots, cap);
  LM_GROW_ARRAY(op->held, cap);
  LM_GROW_ARRAY(op->pend, cap);
  op->cap_slots = cap;
  return LAMINAR_OK;
}

/* A slot for a new row, its values NULL (room reserved). */
static int32_t slot_take(an_op* op) {
  int32_t s = op->nfree > 0 ? op->free_slots[--op->nfree] : (int32_t)op->nslots++;
  lm_value* v = row_vals(op, s);
  for (int32_t i = 0; i < op->nvals; i++) val_null(&v[i]);
  return s;
}

static void slot_free(an_op* op, int32_t s) {
  lm_value* v = row_vals(op, s);
  for (int32_t i = 0; i < op->nvals; i++) val_clear(op, &v[i]);
  op->free_slots[op->nfree++] = s;
}

static laminar_code parts_grow_to(an_op* op, int64_t cap);

/* Per-partition arrays as large as the table's capacity. */
static laminar_code parts_grow(an_op* op) { return parts_grow_to(op, op->t.cap); }

static void part_init(an_op* op, int64_t g) {
  op->p_count[g] = 0;
  op->p_last_ts[g] = INT64_MIN;
  op->p_rank[g] = 0;
  op->p_dense[g] = 0;
  for (int32_t i = 0; i < op->nfirst; i++) val_null(&op->p_first[g * op->nfirst + i]);
  for (int32_t i = 0; i < op->lag_slots; i++) val_null(&op->p_lag[g * op->lag_slots + i]);
  for (int32_t i = 0; i < op->nrange; i++)
    op->p_range[g * op->nrange + i] = (an_deque){NULL, NULL, 0, 0, 0};
}

/* ---- aggregates over frames ------------------------------------------------------- */

typedef struct an_acc {
  int64_t n;            /* values counted (rows for COUNT(*)) */
  lm_i128 is;           /* SUM / AVG of integers */
  double ds;            /* SUM / AVG of doubles */
  const lm_value* best; /* MIN / MAX */
} an_acc;

static bool val_less(const lm_value* a, const lm_value* b, lm_type t) {
  switch (t) {
    case LM_TYPE_DOUBLE: return a->d < b->d;
    case LM_TYPE_BOOL: return !a->b && b->b;
    case LM_TYPE_BINARY:
    case LM_TYPE_STRING: {
      int64_t n = a->s.len < b->s.len ? a->s.len : b->s.len;
      int c = n > 0 ? memcmp(a->s.ptr, b->s.ptr, (size_t)n) : 0;
      return c < 0 || (c == 0 && a->s.len < b->s.len);
    }
    default: return a->i < b->i;
  }
}

/* Add one row of the frame (v: its argument, NULL for COUNT(*)). */
static void acc_add(const lm_analytic_call* c, lm_type t, an_acc* a, const lm_value* v) {
  if (c->agg == LM_AGG_COUNT_STAR) {
    a->n++;
    return;
  }
  if (v->is_null) return;
  a->n++;
  switch (c->agg) {
    case LM_AGG_SUM:
    case LM_AGG_AVG:
      if (t == LM_TYPE_DOUBLE) {
        a->ds += v->d;
      } else {
        a->is += v->i;
      }
      break;
    case LM_AGG_MIN:
      if (a->best == NULL || val_less(v, a->best, t)) a->best = v;
      break;
    case LM_AGG_MAX:
      if (a->best == NULL || val_less(a->best, v, t)) a->best = v;
      break;
    default: break;
  }
}

static laminar_code acc_result(an_op* op, const lm_analytic_call* c, lm_type t,
                               const an_acc* a, lm_value* out) {
  val_clear(op, out);
  if (c->agg == LM_AGG_COUNT_STAR || c->agg == LM_AGG_COUNT) {
    out->is_null = false;
    out->i = a->n;
    return LAMINAR_OK;
  }
  if (a->n == 0) return LAMINAR_OK;
  switch (c->agg) {
    case LM_AGG_SUM:
      if (t == LM_TYPE_DOUBLE) {
        out->is_null = false;
        out->d = a->ds;
      } else if (a->is >= INT64_MIN && a->is <= INT64_MAX) {
        out->is_null = false; /* a total outside BIGINT is NULL, as GROUP BY's */
        out->i = (int64_t)a->is;
      }
      return LAMINAR_OK;
    case LM_AGG_AVG:
      out->is_null = false;
      out->d = (t == LM_TYPE_DOUBLE ? a->ds : (double)a->is) / (double)a->n;
      return LAMINAR_OK;
    default: return val_copy(op, out, a->best);
  }
}

static laminar_code deque_push(an_op* op, an_deque* q, int64_t ts, const lm_value* v) {
  if (q->n == q->cap) {
    if (q->head > 0) { /* slide the live entries down first */
      memmove(q->ts, q->ts + q->head, sizeof(int64_t) * (size_t)(q->n - q->head));
      memmove(q->v, q->v + q->head, sizeof(lm_value) * (size_t)(q->n - q->head));
      q->n -= q->head;
      q->head = 0;
    }
    if (q->n == q->cap) {
      int64_t cap = q->cap ? q->cap * 2 : 8;
      LM_GROW_ARRAY(q->ts, cap);
      LM_GROW_ARRAY(q->v, cap);
      q->cap = cap;
    }
  }
  q->ts[q->n] = ts;
  LM_TRY(val_copy(op, &q->v[q->n], v));
  q->n++;
  return LAMINAR_OK;
}

static void deque_free(an_op* op, an_deque* q) {
  for (int64_t i = q->head; i < q->n; i++) val_clear(op, &q->v[i]);
  lm_free(q->ts);
  lm_free(q->v);
  *q = (an_deque){NULL, NULL, 0, 0, 0};
}

/* The RANGE calls of released row s (after every row of its release went
 * into the deques): entries before its frame go, then the frame
 * [t - offset, t] is aggregated. Rows come in time order per partition. */
static laminar_code an_compute_range(an_op* op, int32_t s) {
  lm_value* v = row_vals(op, s);
  int64_t g = op->part[s], t = op->ts[s];
  for (int32_t c = 0; c < op->spec.ncalls; c++) {
    const lm_analytic_call* call = &op->spec.calls[c];
    if (call->fn != LM_AN_AGG_RANGE) continue;
    an_deque* q = &op->p_range[g * op->nrange + op->range_idx[c]];
    int64_t lo, width = call->offset;
    if (op->time_us && __builtin_mul_overflow(width, 1000, &width)) width = INT64_MAX;
    if (__builtin_sub_overflow(t, width, &lo)) lo = INT64_MIN;
    while (q->head < q->n && q->ts[q->head] < lo) val_clear(op, &q->v[q->head++]);
    an_acc a = {0};
    lm_type at = op->arg_at[c] >= 0 ? op->vtypes[op->arg_at[c]] : LM_TYPE_INT64;
    for (int64_t i = q->head; i < q->n && q->ts[i] <= t; i++)
      acc_add(call, at, &a, &q->v[i]);
    LM_TRY(acc_result(op, call, at, &a, &v[op->res0 + c]));
  }
  return LAMINAR_OK;
}

/* A new partition row (room reserved in the table first). */
static laminar_code part_add(an_op* op, uint64_t h, uint32_t* out) {
  LM_TRY(lm_state_table_reserve(&op->t, op->t.n + 1));
  LM_TRY(parts_grow(op));
  LM_TRY(lm_state_table_grow_index(&op->t));
  *out = lm_state_table_push(&op->t, h);
  part_init(op, *out);
  return LAMINAR_OK;
}

static int64_t an_bytes(const an_op* op) {
  int64_t live = op->nslots - op->nfree;
  int64_t per_part = 32 + (int64_t)sizeof(lm_value) * (op->nfirst + op->lag_slots) +
                     4 * (int64_t)op->maxlead;
  int64_t ranged = 0;
  for (int64_t i = 0; i < op->t.n * op->nrange; i++)
    ranged += op->p_range[i].cap * (int64_t)(sizeof(lm_value) + 8);
  return live * ((int64_t)sizeof(lm_value) * op->nvals + 36) + op->str_bytes + ranged +
         lm_state_table_bytes(&op->t) + op->t.n * per_part;
}

/* ---- input ---------------------------------------------------------------------- */

static int64_t floor_div(int64_t a, int64_t b) {
  int64_t q = a / b;
  return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}

static void an_part_forget(an_op* op, int64_t g);
static laminar_code an_add_rows(an_op* op, const lm_chunk* in, const uint32_t* sel,
                                const int64_t* tms, const uint64_t* h, int64_t m);

static laminar_code an_on_chunk(lm_op* base, const lm_chunk* in) {
  an_op* op = (an_op*)base;
  int64_t late0 = op->late_rows;
  lm_eval_ctx_reset(op->ctx);
  int64_t n = in->nrows;
  uint32_t* sel = lm_eval_ctx_alloc(op->ctx, sizeof(uint32_t) * (size_t)(n ? n : 1));
  if (sel == NULL) return LAMINAR_ERR_NOMEM;
  int64_t m = n;
  if (op->spec.filter != NULL) {
    LM_TRY(lm_expr_filter(op->ctx, op->spec.filter, in->cols, in->sel, n, sel, &m));
  } else {
    for (int64_t k = 0; k < n; k++) sel[k] = in->sel != NULL ? in->sel[k] : (uint32_t)k;
  }
  /* Rows behind the watermark (or without an event time) are late. */
  const lm_vec* tv = op->spec.time_col >= 0 ? &in->cols[op->spec.time_col] : NULL;
  int64_t* tms = lm_eval_ctx_alloc(op->ctx, sizeof(int64_t) * (size_t)(m ? m : 1));
  if (tms == NULL) return LAMINAR_ERR_NOMEM;
  int64_t kept = 0;
  for (int64_t j = 0; j < m; j++) {
    uint32_t k = sel[j];
    if (tv == NULL) { /* per window: no lateness of its own */
      tms[kept] = 0;
      sel[kept++] = k;
      continue;
    }
    if (tv->nulls != NULL && tv->nulls[k]) {
      op->late_rows++;
      continue;
    }
    int64_t t = lm_state_vec_int(tv, k);
    int64_t ms = op->time_us ? floor_div(t, 1000) : t;
    if (op->watermark != INT64_MIN && ms < op->watermark) {
      op->late_rows++;
      continue;
    }
    tms[kept] = t;
    sel[kept++] = k;
  }
  if (kept == 0) return LAMINAR_OK;
  m = kept;
  for (int32_t i = 0; i < op->spec.nkeys; i++) {
    LM_TRY(lm_expr_eval(op->ctx, op->spec.keys[i], in->cols, sel, m, &op->keyv[i]));
  }
  for (int32_t i = 0; i < op->res0 - op->nin; i++) {
    LM_TRY(lm_expr_eval(op->ctx, op->extra[i], in->cols, sel, m, &op->extrav[i]));
  }
  uint64_t* h = lm_eval_ctx_alloc(op->ctx, sizeof(uint64_t) * (size_t)m);
  if (h == NULL) return LAMINAR_ERR_NOMEM;
  lm_state_hash_rows(op->keyv, op->spec.nkeys, NULL, m, h);
  /* All or nothing (issue 20): rows and partitions added past a failure or
   * the state bound are taken back, and the late rows counted uncounted. */
  int64_t held0 = op->nheld, parts0 = op->t.n;
  uint64_t seq0 = op->next_seq;
  laminar_code rc = slots_reserve(op, m);
  if (rc == LAMINAR_OK) rc = an_add_rows(op, in, sel, tms, h, m);
  if (rc == LAMINAR_OK && lm_op_bounded(base))
    rc = lm_op_account(base, an_bytes(op), base->checks_bound);
  if (rc != LAMINAR_OK) {
    for (int64_t i = held0; i < op->nheld; i++) slot_free(op, op->held[i]);
    op->nheld = held0;
    for (int64_t g = parts0; g < op->t.n; g++) an_part_forget(op, g);
    if (op->t.n > parts0) lm_state_table_truncate(&op->t, parts0);
    op->next_seq = seq0;
    op->late_rows = late0;
    return rc;
  }
  base->rows_in += m;
  return LAMINAR_OK;
}

/* Rows sel[0..m) of `in` (event times tms, key hashes h) into held slots
 * (room reserved), their partitions added if new. */
static laminar_code an_add_rows(an_op* op, const lm_chunk* in, const uint32_t* sel,
                                const int64_t* tms, const uint64_t* h, int64_t m) {
  for (int64_t j = 0; j < m; j++) {
    int64_t g = lm_state_table_find(&op->t, h[j], op->keyv, j);
    if (g < 0) {
      uint32_t ng;
      LM_TRY(part_add(op, h[j], &ng));
      g = ng;
      LM_TRY(lm_state_table_set_keys(&op->t, g, op->keyv, j));
    }
    int32_t s = slot_take(op);
    op->held[op->nheld++] = s;
    op->ts[s] = tms[j];
    op->seq[s] = op->next_seq++;
    op->part[s] = (uint32_t)g;
    op->pos[s] = 0;
    lm_value* v = row_vals(op, s);
    for (int32_t c = 0; c < op->nin; c++) {
      LM_TRY(val_from_vec(op, &v[c], &in->cols[c], sel[j]));
    }
    for (int32_t i = 0; i < op->res0 - op->nin; i++) {
      LM_TRY(val_from_vec(op, &v[op->nin + i], &op->extrav[i], j));
    }
  }
  return LAMINAR_OK;
}

/* ---- release ---------------------------------------------------------------------- */

typedef struct an_release an_release;

typedef struct an_key {
  int64_t ts;
  uint64_t seq;
  int32_t slot;
} an_key;

static int an_key_cmp(const void* a, const void* b) {
  const an_key* x = a;
  const an_key* y = b;
  if (x->ts != y->ts) return x->ts < y->ts ? -1 : 1;
  if (x->seq != y->seq) return x->seq < y->seq ? -1 : 1;
  return 0;
}

/* ---- all-or-nothing release (issue 20) -------------------------------------------- */

/* A release is built on shadows: each partition it touches is copied to a
 * partition row past the table's (t.n + i), its released rows point there
 * while their values are computed, and the LEAD values it fills into rows
 * of earlier releases are journaled (the old value kept). Only once the
 * rows went downstream are the shadows moved over their partitions and the
 * old values freed (nothing allocated); a failure before that forgets the
 * shadows and puts the journaled values back, so the operator is as
 * before and the rows are released again at the next watermark advance. */
typedef struct an_undo {
  lm_value* at;
  lm_value old;
} an_undo;

struct an_release {
  int64_t nparts;  /* t.n: shadow i is partition row nparts + i */
  int32_t* shadow; /* per partition: its shadow row, -1 */
  int64_t* orig;   /* per shadow: its partition */
  int64_t nshadow;
  an_undo* undo; /* LEAD values filled */
  int64_t nundo, cap_undo;
};

/* Room for `cap` partition rows. */
static laminar_code parts_grow_to(an_op* op, int64_t cap) {
  if (cap <= op->pcap) return LAMINAR_OK;
  LM_GROW_ARRAY(op->p_count, cap);
  LM_GROW_ARRAY(op->p_last_ts, cap);
  LM_GROW_ARRAY(op->p_rank, cap);
  LM_GROW_ARRAY(op->p_dense, cap);
  if (op->nfirst > 0) LM_GROW_ARRAY(op->p_first, cap * op->nfirst);
  if (op->lag_slots > 0) LM_GROW_ARRAY(op->p_lag, cap * op->lag_slots);
  if (op->maxlead > 0) LM_GROW_ARRAY(op->p_lead, cap * op->maxlead);
  if (op->nrange > 0) LM_GROW_ARRAY(op->p_range, cap * op->nrange);
  op->pcap = cap;
  return LAMINAR_OK;
}

/* Partition row dst takes partition g's counters and LEAD slots. */
static void part_copy_plain(an_op* op, int64_t dst, int64_t g) {
  op->p_count[dst] = op->p_count[g];
  op->p_last_ts[dst] = op->p_last_ts[g];
  op->p_rank[dst] = op->p_rank[g];
  op->p_dense[dst] = op->p_dense[g];
  if (op->maxlead > 0)
    memcpy(&op->p_lead[dst * op->maxlead], &op->p_lead[g * op->maxlead],
           sizeof(int32_t) * (size_t)op->maxlead);
}

/* Partition row dst (free) takes a deep copy of partition g. */
static laminar_code part_copy(an_op* op, int64_t dst, int64_t g) {
  part_init(op, dst);
  part_copy_plain(op, dst, g);
  for (int32_t i = 0; i < op->nfirst; i++)
    LM_TRY(val_copy(op, &op->p_first[dst * op->nfirst + i],
                    &op->p_first[g * op->nfirst + i]));
  for (int32_t i = 0; i < op->lag_slots; i++)
    LM_TRY(val_copy(op, &op->p_lag[dst * op->lag_slots + i],
                    &op->p_lag[g * op->lag_slots + i]));
  for (int32_t i = 0; i < op->nrange; i++) {
    const an_deque* q = &op->p_range[g * op->nrange + i];
    for (int64_t e = q->head; e < q->n; e++)
      LM_TRY(deque_push(op, &op->p_range[dst * op->nrange + i], q->ts[e], &q->v[e]));
  }
  return LAMINAR_OK;
}

/* Partition g's current row during a release: its shadow, if any. */
static int64_t rel_part(const an_release* r, int64_t g) {
  return g < r->nparts && r->shadow[g] >= 0 ? r->nparts + r->shadow[g] : g;
}

/* Shadows for the partitions of rows rel[0..nrel), the rows pointed at
 * them. Nothing changed on failure. */
static laminar_code rel_begin(an_op* op, an_release* r, const an_key* rel, int64_t nrel) {
  r->nparts = op->t.n;
  r->nshadow = 0;
  r->nundo = 0;
  r->shadow = lm_eval_ctx_alloc(op->ctx, sizeof(int32_t) * (size_t)(r->nparts + 1));
  r->orig = lm_eval_ctx_alloc(op->ctx, sizeof(int64_t) * (size_t)(nrel + 1));
  int32_t nlead = 0;
  for (int32_t c = 0; c < op->spec.ncalls; c++)
    nlead += op->spec.calls[c].fn == LM_AN_LEAD && op->spec.calls[c].offset > 0;
  r->cap_undo = nrel * nlead;
  r->undo = lm_eval_ctx_alloc(op->ctx, sizeof(an_undo) * (size_t)(r->cap_undo + 1));
  if (r->shadow == NULL || r->orig == NULL || r->undo == NULL) return LAMINAR_ERR_NOMEM;
  for (int64_t g = 0; g < r->nparts; g++) r->shadow[g] = -1;
  for (int64_t i = 0; i < nrel; i++) {
    int64_t g = op->part[rel[i].slot];
    if (r->shadow[g] < 0) {
      r->shadow[g] = (int32_t)r->nshadow;
      r->orig[r->nshadow++] = g;
    }
  }
  laminar_code rc = parts_grow_to(op, r->nparts + r->nshadow);
  int64_t copied = 0;
  while (rc == LAMINAR_OK && copied < r->nshadow) {
    rc = part_copy(op, r->nparts + copied, r->orig[copied]);
    copied++;
  }
  if (rc != LAMINAR_OK) {
    for (int64_t i = 0; i < copied; i++) an_part_forget(op, r->nparts + i);
    r->nshadow = 0;
    return rc;
  }
  for (int64_t i = 0; i < nrel; i++) {
    int32_t s = rel[i].slot;
    op->part[s] = (uint32_t)rel_part(r, op->part[s]);
  }
  return LAMINAR_OK;
}

/* *res (a LEAD value) takes a copy of *v, its old value journaled. */
static laminar_code rel_fill(an_op* op, an_release* r, lm_value* res, const lm_value* v) {
  an_undo* u = &r->undo[r->nundo++]; /* room: one per released row and LEAD call */
  u->at = res;
  u->old = *res;
  val_null(res);
  return val_copy(op, res, v);
}

/* The release failed: the journal backwards, the shadows forgotten, the
 * rows rel[0..nrel) held again with their partitions. */
static void rel_undo(an_op* op, an_release* r, const an_key* rel, int64_t nrel) {
  for (int64_t i = r->nundo; i-- > 0;) {
    val_clear(op, r->undo[i].at);
    *r->undo[i].at = r->undo[i].old;
  }
  for (int64_t i = 0; i < nrel; i++) {
    int32_t s = rel[i].slot;
    if (op->part[s] >= r->nparts)
      op->part[s] = (uint32_t)r->orig[op->part[s] - r->nparts];
    op->pos[s] = 0;
  }
  for (int64_t i = 0; i < r->nshadow; i++) an_part_forget(op, r->nparts + i);
}

/* The release went through: the shadows take their partitions' places, the
 * journaled old values go. Allocates nothing. */
static void rel_commit(an_op* op, an_release* r, const an_key* rel, int64_t nrel) {
  for (int64_t i = 0; i < r->nundo; i++) val_clear(op, &r->undo[i].old);
  for (int64_t i = 0; i < r->nshadow; i++) {
    int64_t g = r->orig[i], d = r->nparts + i;
    an_part_forget(op, g);
    part_copy_plain(op, g, d);
    for (int32_t k = 0; k < op->nfirst; k++)
      op->p_first[g * op->nfirst + k] = op->p_first[d * op->nfirst + k];
    for (int32_t k = 0; k < op->lag_slots; k++)
      op->p_lag[g * op->lag_slots + k] = op->p_lag[d * op->lag_slots + k];
    for (int32_t k = 0; k < op->nrange; k++)
      op->p_range[g * op->nrange + k] = op->p_range[d * op->nrange + k];
    part_init(op, d); /* moved: nothing of it freed */
  }
  for (int64_t i = 0; i < nrel; i++) {
    int32_t s = rel[i].slot;
    if (op->part[s] >= r->nparts)
      op->part[s] = (uint32_t)r->orig[op->part[s] - r->nparts];
  }
}

/* The calls' values of released row `s` (position q in partition g);
 * last_peer: the slot of the last row of its peer group. */
static laminar_code an_compute(an_op* op, an_release* r, int32_t s, int32_t last_peer) {
  int64_t g = op->part[s];
  int64_t q = ++op->p_count[g];
  op->pos[s] = q;
  if (q == 1 || op->ts[s] != op->p_last_ts[g]) {
    op->p_rank[g] = q;
    op->p_dense[g]++;
    op->p_last_ts[g] = op->ts[s];
  }
  lm_value* v = row_vals(op, s);
  for (int32_t c = 0; c < op->spec.ncalls; c++) {
    const lm_analytic_call* call = &op->spec.calls[c];
    lm_value* res = &v[op->res0 + c];
    const lm_value* arg = op->arg_at[c] >= 0 ? &v[op->arg_at[c]] : NULL;
    val_clear(op, res);
    switch (call->fn) {
      case LM_AN_ROW_NUMBER:
      case LM_AN_RANK:
      case LM_AN_DENSE_RANK:
        res->is_null = false;
        res->i = call->fn == LM_AN_ROW_NUMBER ? q
                 : call->fn == LM_AN_RANK     ? op->p_rank[g]
                                              : op->p_dense[g];
        break;
      case LM_AN_FIRST_VALUE: {
        lm_value* f = &op->p_first[g * op->nfirst + op->first_idx[c]];
        if (q == 1) LM_TRY(val_copy(op, f, arg));
        LM_TRY(val_copy(op, res, f));
        break;
      }
      case LM_AN_LAST_VALUE: {
        const lm_value* src =
            call->rows_frame ? arg : &row_vals(op, last_peer)[op->arg_at[c]];
        LM_TRY(val_copy(op, res, src));
        break;
      }
      case LM_AN_LAG: {
        int64_t k = call->offset;
        if (k == 0) {
          LM_TRY(val_copy(op, res, arg));
          break;
        }
        /* Entry q % k holds position q - k's value (if q > k). */
        lm_value* e = &op->p_lag[g * op->lag_slots + op->lag_off[c] + q % k];
        if (q > k) {
          *res = *e; /* moved */
          val_null(e);
        } else if (op->def_at[c] >= 0) {
          LM_TRY(val_copy(op, res, &v[op->def_at[c]]));
        }
        LM_TRY(val_copy(op, e, arg));
        break;
      }
      case LM_AN_LEAD: {
        int64_t k = call->offset;
        if (k == 0) {
          LM_TRY(val_copy(op, res, arg));
        } else if (op->def_at[c] >= 0) {
          LM_TRY(val_copy(op, res, &v[op->def_at[c]])); /* until filled */
        }
        break;
      }
      case LM_AN_AGG_ROWS: {
        /* Positions q - k .. q - 1 are in the ring at p % k, then the row. */
        static const lm_value none = {.is_null = true};
        const lm_value* self = arg != NULL ? arg : &none;
        lm_type at = arg != NULL ? op->vtypes[op->arg_at[c]] : LM_TYPE_INT64;
        int64_t k = call->offset;
        an_acc a = {0};
        lm_value* ring = k > 0 ? &op->p_lag[g * op->lag_slots + op->lag_off[c]] : NULL;
        for (int64_t p = q - k < 1 ? 1 : q - k; p < q; p++)
          acc_add(call, at, &a, &ring[p % k]);
        acc_add(call, at, &a, self);
        LM_TRY(acc_result(op, call, at, &a, res));
        if (k > 0) {
          val_clear(op, &ring[q % k]);
          LM_TRY(val_copy(op, &ring[q % k], self));
        }
        break;
      }
      case LM_AN_AGG_RANGE: {
        static const lm_value none = {.is_null = true};
        an_deque* dq = &op->p_range[g * op->nrange + op->range_idx[c]];
        LM_TRY(deque_push(op, dq, op->ts[s], arg != NULL ? arg : &none));
        break; /* the value: an_compute_range, once the release is in */
      }
    }
  }
  if (op->maxlead == 0) return LAMINAR_OK;
  /* This row is what LEAD(x, k) of position q - k reads. */
  for (int32_t c = 0; c < op->spec.ncalls; c++) {
    const lm_analytic_call* call = &op->spec.calls[c];
    if (call->fn != LM_AN_LEAD || call->offset == 0 || q - call->offset < 1) continue;
    int64_t p = q - call->offset;
    int32_t t = op->p_lead[g * op->maxlead + p % op->maxlead];
    LM_TRY(rel_fill(op, r, &row_vals(op, t)[op->res0 + c], &v[op->arg_at[c]]));
  }
  op->p_lead[g * op->maxlead + q % op->maxlead] = s;
  return LAMINAR_OK;
}

/* Build the output columns of rows slots[0..n) and emit them. */
static laminar_code an_emit(an_op* op, const int32_t* slots, int64_t n) {
  if (n == 0) return LAMINAR_OK;
  int32_t ncols = op->base.out_schema.ncols;
  for (int32_t c = 0; c < ncols; c++) {
    int32_t vi = c < op->nin ? c : op->res0 + (c - op->nin);
    lm_type t = op->vtypes[vi];
    lm_vec* o = &op->outs[c];
    uint8_t* nulls = lm_eval_ctx_alloc(op->ctx, (size_t)n);
    size_t w = lm_type_is_bytes(t) ? sizeof(lm_str)
               : t == LM_TYPE_BOOL ? 1
                                   : (size_t)lm_type_width(t);
    void* data = lm_eval_ctx_alloc(op->ctx, w * (size_t)n);
    if (nulls == NULL || data == NULL) return LAMINAR_ERR_NOMEM;
    for (int64_t r = 0; r < n; r++) {
      const lm_value* v = &row_vals(op, slots[r])[vi];
      nulls[r] = v->is_null ? 1 : 0;
      switch (t) {
        case LM_TYPE_BOOL: ((uint8_t*)data)[r] = v->b ? 1 : 0; break;
        case LM_TYPE_DOUBLE: ((double*)data)[r] = v->d; break;
        case LM_TYPE_BINARY:
        case LM_TYPE_STRING:
          ((lm_str*)data)[r] = v->s.ptr != NULL ? v->s : (lm_str){"", 0};
          break;
        default: lm_vec_int_put(t, data, r, v->i); break;
      }
    }
    *o = (lm_vec){.type = t, .len = n, .nulls = nulls, .data = data};
  }
  op->base.rows_out += n;
  lm_chunk out = {n, ncols, op->outs, NULL};
  return lm_op_emit(&op->base, &out);
}

static laminar_code an_release_windows(an_op* op);

static laminar_code an_release_rows(an_op* op, bool final, int64_t wm);

static laminar_code an_on_watermark(lm_op* base, int64_t wm) {
  an_op* op = (an_op*)base;
  if (wm <= op->watermark) return LAMINAR_OK;
  op->watermark = wm;
  laminar_code rc = op->spec.time_col < 0 ? an_release_windows(op)
                                          : an_release_rows(op, wm == INT64_MAX, wm);
  return lm_op_release_failed(base, rc, wm, "analytic rows");
}

/* The held rows the watermark passed (all when final) are computed, and
 * those whose LEAD values are all known emitted with the pending ones. */
static laminar_code an_release_rows(an_op* op, bool final, int64_t wm) {
  lm_eval_ctx_reset(op->ctx);
  /* The held rows the watermark passed, by (event time, arrival). */
  an_key* rel = lm_eval_ctx_alloc(op->ctx, sizeof(an_key) * (size_t)(op->nheld + 1));
  if (rel == NULL) return LAMINAR_ERR_NOMEM;
  int64_t nrel = 0;
  for (int64_t i = 0; i < op->nheld; i++) {
    int32_t s = op->held[i];
    int64_t ms = op->time_us ? floor_div(op->ts[s], 1000) : op->ts[s];
    if (final || ms < wm) rel[nrel++] = (an_key){op->ts[s], op->seq[s], s};
  }
  if (nrel == 0 && op->npend == 0) return LAMINAR_OK;
  qsort(rel, (size_t)nrel, sizeof *rel, an_key_cmp);
  /* LAST_VALUE over RANGE: each row's last peer (same partition, same time:
   * all released together). Walk backwards, per partition. */
  int32_t* last_peer = lm_eval_ctx_alloc(op->ctx, sizeof(int32_t) * (size_t)(nrel + 1));
  int32_t* peer_slot =
      lm_eval_ctx_alloc(op->ctx, sizeof(int32_t) * (size_t)(op->t.n + 1));
  int32_t* out =
      lm_eval_ctx_alloc(op->ctx, sizeof(int32_t) * (size_t)(op->npend + nrel + 1));
  if (last_peer == NULL || peer_slot == NULL || out == NULL) return LAMINAR_ERR_NOMEM;
  for (int64_t g = 0; g < op->t.n; g++) peer_slot[g] = -1;
  for (int64_t i = nrel; i-- > 0;) {
    int32_t s = rel[i].slot;
    int32_t* p = &peer_slot[op->part[s]];
    if (*p < 0 || op->ts[*p] != op->ts[s]) *p = s;
    last_peer[i] = *p;
  }
  an_release r;
  LM_TRY(rel_begin(op, &r, rel, nrel));
  int64_t npend0 = op->npend;
  laminar_code rc = LAMINAR_OK;
  for (int64_t i = 0; rc == LAMINAR_OK && i < nrel; i++) {
    rc = an_compute(op, &r, rel[i].slot, last_peer[i]);
    op->pend[op->npend++] = rel[i].slot;
  }
  for (int64_t i = 0; rc == LAMINAR_OK && op->nrange > 0 && i < nrel; i++)
    rc = an_compute_range(op, rel[i].slot);
  /* Emit the rows whose LEAD values are all known. */
  int64_t nout = 0;
  for (int64_t i = 0; rc == LAMINAR_OK && i < op->npend; i++) {
    int32_t s = op->pend[i];
    if (final || op->p_count[rel_part(&r, op->part[s])] - op->pos[s] >= op->maxlead)
      out[nout++] = s;
  }
  if (rc == LAMINAR_OK) rc = an_emit(op, out, nout);
  if (rc != LAMINAR_OK) {
    op->npend = npend0;
    rel_undo(op, &r, rel, nrel);
    return rc;
  }
  rel_commit(op, &r, rel, nrel);
  /* The released rows leave the held ones, the emitted ones go. */
  int64_t keep = 0;
  for (int64_t i = 0; i < op->nheld; i++) {
    int32_t s = op->held[i];
    int64_t ms = op->time_us ? floor_div(op->ts[s], 1000) : op->ts[s];
    if (!(final || ms < wm)) op->held[keep++] = s;
  }
  op->nheld = keep;
  keep = 0;
  for (int64_t i = 0, o = 0; i < op->npend; i++) {
    int32_t s = op->pend[i];
    if (o < nout && out[o] == s) {
      o++;
      slot_free(op, s);
    } else {
      op->pend[keep++] = s;
    }
  }
  op->npend = keep;
  if (lm_op_bounded(&op->base)) return lm_op_account(&op->base, an_bytes(op), false);
  return LAMINAR_OK;
}

/* ---- per window (Top-N) ------------------------------------------------------------ */

/* Order of rows a and b of one release: partition, then ORDER BY, then
 * arrival. *peer: equal on the ORDER BY values. */
static int win_cmp(const an_op* op, int32_t a, int32_t b, bool* peer) {
  *peer = false;
  if (op->part[a] != op->part[b]) return op->part[a] < op->part[b] ? -1 : 1;
  const lm_value* va = row_vals(op, a);
  const lm_value* vb = row_vals(op, b);
  for (int32_t i = 0; i < op->spec.norder; i++) {
    const lm_value* x = &va[op->order_at + i];
    const lm_value* y = &vb[op->order_at + i];
    if (x->is_null || y->is_null) {
      if (x->is_null && y->is_null) continue;
      bool first = op->spec.nulls_first[i];
      return (x->is_null == first) ? -1 : 1;
    }
    lm_type t = op->vtypes[op->order_at + i];
    int c = val_less(x, y, t) ? -1 : val_less(y, x, t) ? 1 : 0;
    if (c != 0) return op->spec.desc[i] ? -c : c;
  }
  *peer = true;
  return op->seq[a] < op->seq[b] ? -1 : op->seq[a] > op->seq[b] ? 1 : 0;
}

/* Merge sort of slots[0..n) by win_cmp (tmp: n scratch entries). */
static void win_sort(const an_op* op, int32_t* slots, int32_t* tmp, int64_t n) {
  if (n < 2) return;
  int64_t h = n / 2;
  win_sort(op, slots, tmp, h);
  win_sort(op, slots + h, tmp, n - h);
  int64_t i = 0, j = h, k = 0;
  bool peer;
  while (i < h && j < n) {
    tmp[k++] = win_cmp(op, slots[j], slots[i], &peer) < 0 ? slots[j++] : slots[i++];
  }
  while (i < h) tmp[k++] = slots[i++];
  while (j < n) tmp[k++] = slots[j++];
  memcpy(slots, tmp, sizeof(int32_t) * (size_t)n);
}

/* Release every held row, ranked in its partition; forget the partitions. */
static laminar_code an_release_windows(an_op* op) {
  int64_t n = op->nheld;
  if (n == 0) return LAMINAR_OK;
  lm_eval_ctx_reset(op->ctx);
  int32_t* tmp = lm_eval_ctx_alloc(op->ctx, sizeof(int32_t) * (size_t)n);
  if (tmp == NULL) return LAMINAR_ERR_NOMEM;
  win_sort(op, op->held, tmp, n);
  int64_t rn = 0, rank = 0, dense = 0;
  for (int64_t i = 0; i < n; i++) {
    int32_t s = op->held[i];
    bool peer = false;
    bool same = i > 0 && op->part[op->held[i - 1]] == op->part[s];
    if (same) win_cmp(op, op->held[i - 1], s, &peer);
    rn = same ? rn + 1 : 1;
    if (!peer) {
      rank = rn;
      dense = same ? dense + 1 : 1;
    }
    lm_value* v = row_vals(op, s);
    for (int32_t c = 0; c < op->spec.ncalls; c++) {
      const lm_analytic_call* call = &op->spec.calls[c];
      lm_value* res = &v[op->res0 + c];
      val_clear(op, res);
      res->is_null = false;
      res->i = call->fn == LM_AN_ROW_NUMBER ? rn : call->fn == LM_AN_RANK ? rank : dense;
    }
  }
  /* Dropped only once they went through (issue 20): on a failure they stay
   * held, ranked again at the next watermark advance. */
  LM_TRY(an_emit(op, op->held, n));
  for (int64_t i = 0; i < n; i++) slot_free(op, op->held[i]);
  op->nheld = 0;
  lm_state_table_reset(&op->t);
  if (lm_op_bounded(&op->base)) return lm_op_account(&op->base, an_bytes(op), false);
  return LAMINAR_OK;
}

/* ---- snapshot ---------------------------------------------------------------------- */

static void put_row(const an_op* op, int32_t s, int32_t nv, lm_state_writer* w) {
  lm_state_put_i64(w, op->ts[s]);
  lm_state_put_i64(w, (int64_t)op->seq[s]);
  lm_state_put_u32(w, op->part[s]);
  lm_state_put_i64(w, op->pos[s]);
  const lm_value* v = row_vals(op, s);
  for (int32_t i = 0; i < nv; i++) val_put(w, &v[i], op->vtypes[i]);
}

static laminar_code an_snapshot(const lm_op* base, lm_state_writer* w) {
  const an_op* op = (const an_op*)base;
  lm_state_put_u32(w, AN_SNAPSHOT_VERSION);
  lm_state_put_i64(w, op->watermark);
  lm_state_put_i64(w, op->late_rows);
  lm_state_put_i64(w, (int64_t)op->next_seq);
  lm_state_put_i64(w, op->t.n);
  for (int64_t g = 0; g < op->t.n; g++) {
    lm_state_table_put_keys(&op->t, g, w);
    lm_state_put_i64(w, op->p_count[g]);
    lm_state_put_i64(w, op->p_last_ts[g]);
    lm_state_put_i64(w, op->p_rank[g]);
    lm_state_put_i64(w, op->p_dense[g]);
    for (int32_t c = 0; c < op->spec.ncalls; c++) {
      const lm_analytic_call* call = &op->spec.calls[c];
      lm_type t = op->vtypes[op->arg_at[c] >= 0 ? op->arg_at[c] : 0];
      if (op->first_idx[c] >= 0)
        val_put(w, &op->p_first[g * op->nfirst + op->first_idx[c]], t);
      for (int64_t k = 0; op->lag_off[c] >= 0 && k < call->offset; k++)
        val_put(w, &op->p_lag[g * op->lag_slots + op->lag_off[c] + k], t);
      if (op->range_idx[c] >= 0) {
        const an_deque* q = &op->p_range[g * op->nrange + op->range_idx[c]];
        lm_state_put_i64(w, q->n - q->head);
        for (int64_t i = q->head; i < q->n; i++) {
          lm_state_put_i64(w, q->ts[i]);
          val_put(w, &q->v[i], t);
        }
      }
    }
  }
  lm_state_put_i64(w, op->nheld);
  for (int64_t i = 0; i < op->nheld; i++) put_row(op, op->held[i], op->res0, w);
  lm_state_put_i64(w, op->npend);
  for (int64_t i = 0; i < op->npend; i++) put_row(op, op->pend[i], op->nvals, w);
  return lm_state_writer_status(w);
}

/* Free partition g's values (before it is cut from the table). */
static void an_part_forget(an_op* op, int64_t g) {
  for (int32_t i = 0; i < op->nfirst; i++)
    val_clear(op, &op->p_first[g * op->nfirst + i]);
  for (int32_t i = 0; i < op->lag_slots; i++)
    val_clear(op, &op->p_lag[g * op->lag_slots + i]);
  for (int32_t i = 0; i < op->nrange; i++)
    deque_free(op, &op->p_range[g * op->nrange + i]);
}

/* Forget every row and partition. */
static void an_clear(an_op* op) {
  for (int64_t i = 0; i < op->nheld; i++) slot_free(op, op->held[i]);
  for (int64_t i = 0; i < op->npend; i++) slot_free(op, op->pend[i]);
  op->nheld = op->npend = 0;
  for (int64_t g = 0; g < op->t.n; g++) an_part_forget(op, g);
  if (op->t.index != NULL) lm_state_table_reset(&op->t);
  op->nslots = 0;
  op->nfree = 0;
}

/* A row of a snapshot into a new slot, appended to the pending or held rows;
 * its partition mapped by map[0..np) (a row of a partition left out goes). */
static laminar_code get_row(an_op* op, lm_state_reader* r, int32_t nv, bool pending,
                            const int64_t* map, int64_t np) {
  LM_TRY(slots_reserve(op, 1));
  int32_t s = slot_take(op);
  if (pending) {
    op->pend[op->npend++] = s;
  } else {
    op->held[op->nheld++] = s;
  }
  op->ts[s] = lm_state_get_i64(r);
  op->seq[s] = (uint64_t)lm_state_get_i64(r);
  uint32_t old = lm_state_get_u32(r);
  op->part[s] = 0;
  op->pos[s] = lm_state_get_i64(r);
  lm_value* v = row_vals(op, s);
  for (int32_t i = 0; i < nv; i++) LM_TRY(val_get(op, r, &v[i], op->vtypes[i]));
  if ((int64_t)old >= np || op->pos[s] < 0) return LAMINAR_ERR_RECOVERY;
  if (map[old] < 0) {
    if (pending) {
      op->npend--;
    } else {
      op->nheld--;
    }
    slot_free(op, s);
    return LAMINAR_OK;
  }
  op->part[s] = (uint32_t)map[old];
  if (pending && op->maxlead > 0 && op->pos[s] > 0)
    op->p_lead[op->part[s] * (int64_t)op->maxlead + op->pos[s] % op->maxlead] = s;
  return LAMINAR_OK;
}

/* Read a snapshot into the op, keeping the partitions `f` selects (and the
 * rows in them) after those already there (f->merge); (*map)[old] is each
 * snapshot partition's row in the op, -1 when left out (the caller frees). */
static laminar_code an_restore_body(an_op* op, lm_state_reader* r,
                                    const lm_op_part_filter* f, int64_t** map) {
  if (lm_state_get_u32(r) != AN_SNAPSHOT_VERSION) return LAMINAR_ERR_RECOVERY;
  op->watermark = lm_state_get_i64(r);
  int64_t late = lm_state_get_i64(r);
  if (f->late) op->late_rows += late;
  uint64_t seq = (uint64_t)lm_state_get_i64(r);
  if (seq > op->next_seq) op->next_seq = seq;
  int64_t np = lm_state_get_i64(r);
  if (np < 0 || np > INT32_MAX) return LAMINAR_ERR_RECOVERY;
  *map = lm_calloc((size_t)np + 1, sizeof(int64_t));
  if (*map == NULL) return LAMINAR_ERR_NOMEM;
  for (int64_t old = 0; old < np; old++) {
    int64_t g = op->t.n;
    LM_TRY(lm_state_table_reserve(&op->t, g + 1));
    LM_TRY(parts_grow(op));
    LM_TRY(lm_state_table_get_keys(&op->t, g, r));
    bool keep = f->nparts <= 1 || lm_op_part_of(op->t.hash[g], f->nparts) == f->part;
    (*map)[old] = keep ? g : -1;
    op->t.n = g + 1; /* a partition left out is read here, then forgotten */
    part_init(op, g);
    op->p_count[g] = lm_state_get_i64(r);
    op->p_last_ts[g] = lm_state_get_i64(r);
    op->p_rank[g] = lm_state_get_i64(r);
    op->p_dense[g] = lm_state_get_i64(r);
    for (int32_t c = 0; c < op->spec.ncalls; c++) {
      const lm_analytic_call* call = &op->spec.calls[c];
      lm_type t = op->vtypes[op->arg_at[c] >= 0 ? op->arg_at[c] : 0];
      if (op->first_idx[c] >= 0)
        LM_TRY(val_get(op, r, &op->p_first[g * op->nfirst + op->first_idx[c]], t));
      for (int64_t k = 0; op->lag_off[c] >= 0 && k < call->offset; k++)
        LM_TRY(val_get(op, r, &op->p_lag[g * op->lag_slots + op->lag_off[c] + k], t));
      if (op->range_idx[c] >= 0) {
        an_deque* q = &op->p_range[g * op->nrange + op->range_idx[c]];
        int64_t n = lm_state_get_i64(r);
        if (n < 0 || n > INT32_MAX) return LAMINAR_ERR_RECOVERY;
        for (int64_t i = 0; i < n; i++) {
          int64_t ts = lm_state_get_i64(r);
          lm_value val;
          LM_TRY(val_get(op, r, &val, t));
          laminar_code rc = deque_push(op, q, ts, &val);
          val_clear(op, &val);
          LM_TRY(rc);
        }
      }
    }
    if (lm_state_reader_status(r, "analytic", NULL) != LAMINAR_OK)
      return LAMINAR_ERR_RECOVERY;
    if (!keep) { /* forgotten: its row is taken by the next (the index is
                  * rebuilt once all are read) */
      an_part_forget(op, g);
      op->t.n = g;
    }
  }
  LM_TRY(lm_state_table_reindex(&op->t));
  int64_t nh = lm_state_get_i64(r);
  if (nh < 0 || nh > INT32_MAX) return LAMINAR_ERR_RECOVERY;
  for (int64_t i = 0; i < nh; i++) LM_TRY(get_row(op, r, op->res0, false, *map, np));
  int64_t npd = lm_state_get_i64(r);
  if (npd < 0 || npd > INT32_MAX) return LAMINAR_ERR_RECOVERY;
  for (int64_t i = 0; i < npd; i++) LM_TRY(get_row(op, r, op->nvals, true, *map, np));
  return LAMINAR_OK;
}

static laminar_code an_restore_part(lm_op* base, lm_state_reader* r,
                                    const lm_op_part_filter* f, laminar_error* err) {
  an_op* op = (an_op*)base;
  if (!f->merge) {
    an_clear(op);
    op->late_rows = 0;
    op->next_seq = 0;
  }
  int64_t* map = NULL;
  laminar_code rc = an_restore_body(op, r, f, &map);
  lm_free(map);
  if (rc == LAMINAR_OK) rc = lm_state_reader_status(r, "analytic", err);
  if (rc != LAMINAR_OK) {
    an_clear(op);
    if (rc == LAMINAR_ERR_NOMEM) return lm_error_set(err, rc, "out of memory");
    if (err != NULL && err->code == LAMINAR_OK)
      lm_error_set(err, LAMINAR_ERR_RECOVERY, "analytic operator state does not restore");
    return LAMINAR_ERR_RECOVERY;
  }
  if (lm_op_bounded(base)) lm_op_account(base, an_bytes(op), false);
  return LAMINAR_OK;
}

static laminar_code an_restore(lm_op* base, lm_state_reader* r, laminar_error* err) {
  static const lm_op_part_filter whole = {
      .nparts = 1, .part = 0, .merge = false, .late = true};
  return an_restore_part(base, r, &whole, err);
}

/* ---- lifecycle ---------------------------------------------------------------------- */

static void an_destroy(lm_op* base) {
  an_op* op = (an_op*)base;
  an_clear(op);
  lm_state_table_free(&op->t);
  lm_eval_ctx_destroy(op->ctx);
  lm_free(op->key_types);
  lm_free(op->vtypes);
  lm_free(op->extra);
  lm_free(op->arg_at);
  lm_free(op->def_at);
  lm_free(op->first_idx);
  lm_free(op->lag_off);
  lm_free(op->vals);
  lm_free(op->ts);
  lm_free(op->seq);
  lm_free(op->part);
  lm_free(op->pos);
  lm_free(op->free_slots);
  lm_free(op->held);
  lm_free(op->pend);
  lm_free(op->p_count);
  lm_free(op->p_last_ts);
  lm_free(op->p_rank);
  lm_free(op->p_dense);
  lm_free(op->p_first);
  lm_free(op->p_lag);
  lm_free(op->p_lead);
  lm_free(op->p_range);
  lm_free(op->range_idx);
  lm_free(op->keyv);
  lm_free(op->extrav);
  lm_free(op->outs);
  lm_schema_free(&op->base.out_schema);
  lm_free(op);
}

static const lm_op_vtable analytic_vtable = {
    .name = "analytic",
    .on_chunk = an_on_chunk,
    .takes_sel = true,
    .on_watermark = an_on_watermark,
    .snapshot = an_snapshot,
    .restore = an_restore,
    .restore_part = an_restore_part,
    .destroy = an_destroy,
};

bool lm_op_is_analytic(const lm_op* op) {
  return op != NULL && op->vt == &analytic_vtable;
}

int64_t lm_op_analytic_late_rows(const lm_op* op) {
  return lm_op_is_analytic(op) ? ((const an_op*)op)->late_rows : 0;
}

int64_t lm_op_analytic_partitions(const lm_op* op) {
  return lm_op_is_analytic(op) ? ((const an_op*)op)->t.n : 0;
}

int64_t lm_op_analytic_held_rows(const lm_op* op) {
  return lm_op_is_analytic(op) ? ((const an_op*)op)->nheld + ((const an_op*)op)->npend
                               : 0;
}

/* Where each call's argument and default go among a row's values. */
static laminar_code an_layout(an_op* op) {
  const lm_analytic_spec* sp = &op->spec;
  int32_t nc = sp->ncalls;
  op->nin = sp->in_ncols;
  op->arg_at = lm_calloc((size_t)nc + 1, sizeof(int32_t));
  op->def_at = lm_calloc((size_t)nc + 1, sizeof(int32_t));
  op->first_idx = lm_calloc((size_t)nc + 1, sizeof(int32_t));
  op->lag_off = lm_calloc((size_t)nc + 1, sizeof(int32_t));
  op->range_idx = lm_calloc((size_t)nc + 1, sizeof(int32_t));
  op->extra = lm_calloc((size_t)nc * 2 + (size_t)sp->norder + 1, sizeof(lm_expr*));
  if (op->arg_at == NULL || op->def_at == NULL || op->first_idx == NULL ||
      op->lag_off == NULL || op->extra == NULL || op->range_idx == NULL)
    return LAMINAR_ERR_NOMEM;
  int32_t k = op->nin;
  for (int32_t c = 0; c < nc; c++) {
    const lm_analytic_call* call = &sp->calls[c];
    op->arg_at[c] = op->def_at[c] = op->first_idx[c] = op->lag_off[c] = -1;
    op->range_idx[c] = call->fn == LM_AN_AGG_RANGE ? op->nrange++ : -1;
    if (call->arg != NULL) {
      op->extra[k - op->nin] = call->arg;
      op->arg_at[c] = k++;
    }
    if (call->def != NULL) {
      op->extra[k - op->nin] = call->def;
      op->def_at[c] = k++;
    }
    if (call->fn == LM_AN_FIRST_VALUE) op->first_idx[c] = op->nfirst++;
    if ((call->fn == LM_AN_LAG || call->fn == LM_AN_AGG_ROWS) && call->offset > 0) {
      op->lag_off[c] = op->lag_slots;
      op->lag_slots += (int32_t)call->offset;
    }
    if (call->fn == LM_AN_LEAD && call->offset > op->maxlead)
      op->maxlead = (int32_t)call->offset;
  }
  op->order_at = k;
  for (int32_t i = 0; i < sp->norder; i++) op->extra[k++ - op->nin] = sp->order[i];
  op->res0 = k;
  op->nvals = k + nc;
  op->vtypes = lm_calloc((size_t)op->nvals + 1, sizeof(lm_type));
  if (op->vtypes == NULL) return LAMINAR_ERR_NOMEM;
  for (int32_t c = 0; c < op->nin; c++) op->vtypes[c] = sp->in_types[c];
  for (int32_t i = op->nin; i < op->res0; i++)
    op->vtypes[i] = op->extra[i - op->nin]->type;
  for (int32_t c = 0; c < nc; c++) op->vtypes[op->res0 + c] = sp->calls[c].type;
  return LAMINAR_OK;
}

laminar_code lm_op_analytic_create(const lm_analytic_spec* spec,
                                   const lm_schema* out_schema, lm_op** out) {
  *out = NULL;
  an_op* op = lm_calloc(1, sizeof *op);
  if (op == NULL) return LAMINAR_ERR_NOMEM;
  op->base.vt = &analytic_vtable;
  op->spec = *spec;
  op->watermark = INT64_MIN;
  op->time_us =
      spec->time_col >= 0 && spec->in_types[spec->time_col] == LM_TYPE_TIMESTAMP;
  int32_t nk = spec->nkeys;
  op->key_types = lm_calloc((size_t)nk + 1, sizeof(lm_type));
  op->keyv = lm_calloc((size_t)nk + 1, sizeof(lm_vec));
  op->extrav =
      lm_calloc((size_t)spec->ncalls * 2 + (size_t)spec->norder + 1, sizeof(lm_vec));
  op->outs = lm_calloc((size_t)out_schema->ncols + 1, sizeof(lm_vec));
  laminar_code rc =
      op->key_types != NULL && op->keyv != NULL && op->extrav != NULL && op->outs != NULL
          ? LAMINAR_OK
          : LAMINAR_ERR_NOMEM;
  for (int32_t i = 0; rc == LAMINAR_OK && i < nk; i++)
    op->key_types[i] = spec->keys[i]->type;
  if (rc == LAMINAR_OK) rc = an_layout(op);
  if (rc == LAMINAR_OK) rc = lm_state_table_init(&op->t, op->key_types, nk);
  if (rc == LAMINAR_OK) rc = lm_eval_ctx_create(&op->ctx);
  if (rc == LAMINAR_OK && lm_schema_copy(out_schema, &op->base.out_schema) != 0)
    rc = LAMINAR_ERR_NOMEM;
  if (rc != LAMINAR_OK) {
    an_destroy(&op->base);
    return rc;
  }
  *out = &op->base;
  return LAMINAR_OK;
}
