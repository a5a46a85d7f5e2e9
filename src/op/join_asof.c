/*
 * join_asof.c -- the ASOF join operator: two inputs (left, right), each row of
 * the left matched with the right row of equal keys nearest in time on one
 * side (op.h, lm_asof_spec, has the semantics and the streaming rules).
 *
 * State (one partition's, on its thread only):
 *  - the equality keys in a keyed state table (state/table.h): a key's row id
 *    g indexes `keys[g]`, the right rows of that key sorted by (time,
 *    arrival), and keys seen only on the left have an empty list;
 *  - the rows themselves, left and right, in two row stores (columnar
 *    arrays by slot, freed slots reused; STRING bytes in a pool compacted
 *    when it holds twice what live rows use), so state stays bounded as
 *    rows are dropped;
 *  - the left rows waiting for their match to be final, sorted by (time,
 *    arrival): a release takes them in that order.
 *
 * A release (a left chunk, a right watermark) emits the left rows whose
 * match is final, joined, in one chunk; a left watermark or a release
 * prunes right rows no future left row can match. Snapshots write the waiting
 * left rows and the kept right rows, and a restore inserts them again.
 */
#include "op/op.h"

#include "state/table.h"
#include "util/pool.h"
#include "util/util.h"

#include <stdlib.h>
#include <string.h>

/* ==== row stores ====================================================================== */

typedef struct rowstore {
  int32_t ncols;
  lm_type* types;
  uint8_t* keep;   /* per column: held (the plan reads it), else never stored */
  int64_t cap;     /* slots allocated */
  int64_t used;    /* slots ever handed out (high-water mark) */
  int64_t live;    /* slots in use */
  void** data;     /* per column: cap values of the type's width */
  uint8_t** nulls; /* per column: cap flags */
  uint32_t* free_slots;
  int64_t nfree;
  lm_pool strings;
  int64_t str_live; /* STRING bytes live rows use */
  bool has_strings;
} rowstore;

static laminar_code store_init(rowstore* s, const lm_schema* schema, int32_t first,
                               int32_t n, const uint8_t* need) {
  memset(s, 0, sizeof *s);
  lm_pool_init(&s->strings);
  s->ncols = n;
  s->types = lm_calloc((size_t)(n ? n : 1), sizeof *s->types);
  s->data = lm_calloc((size_t)(n ? n : 1), sizeof *s->data);
  s->nulls = lm_calloc((size_t)(n ? n : 1), sizeof *s->nulls);
  s->keep = lm_calloc((size_t)(n ? n : 1), 1);
  if (s->types == NULL || s->data == NULL || s->nulls == NULL || s->keep == NULL)
    return LAMINAR_ERR_NOMEM;
  for (int32_t c = 0; c < n; c++) {
    s->types[c] = schema->fields[first + c].type;
    s->keep[c] = need == NULL || need[first + c];
    if (s->types[c] == LM_TYPE_STRING && s->keep[c]) s->has_strings = true;
  }
  return LAMINAR_OK;
}

static void store_free(rowstore* s) {
  for (int32_t c = 0; c < s->ncols && s->data != NULL; c++) {
    lm_free(s->data[c]);
    lm_free(s->nulls[c]);
  }
  lm_free(s->data);
  lm_free(s->nulls);
  lm_free(s->types);
  lm_free(s->keep);
  lm_free(s->free_slots);
  lm_pool_free(&s->strings);
  memset(s, 0, sizeof *s);
}

static laminar_code store_reserve(rowstore* s, int64_t cap) {
  if (cap <= s->cap) return LAMINAR_OK;
  int64_t nc = s->cap ? s->cap : 256;
  while (nc < cap) nc *= 2;
  if (nc > ((int64_t)1 << 31)) return LAMINAR_ERR_NOMEM;
  for (int32_t c = 0; c < s->ncols; c++) {
    if (!s->keep[c]) continue;
    void* d = lm_realloc(s->data[c], (size_t)(nc * lm_type_width(s->types[c])));
    if (d == NULL) return LAMINAR_ERR_NOMEM;
    s->data[c] = d;
    uint8_t* nl = lm_realloc(s->nulls[c], (size_t)nc);
    if (nl == NULL) return LAMINAR_ERR_NOMEM;
    s->nulls[c] = nl;
  }
  uint32_t* f = lm_realloc(s->free_slots, sizeof *f * (size_t)nc);
  if (f == NULL) return LAMINAR_ERR_NOMEM;
  s->free_slots = f;
  s->cap = nc;
  return LAMINAR_OK;
}

/* A free slot (room reserved: store_reserve(used + 1)). */
static uint32_t store_take(rowstore* s) {
  s->live++;
  if (s->nfree > 0) return s->free_slots[--s->nfree];
  return (uint32_t)s->used++;
}

static void store_release(rowstore* s, uint32_t slot) {
  for (int32_t c = 0; s->has_strings && c < s->ncols; c++) {
    if (s->types[c] == LM_TYPE_STRING && s->keep[c] && !s->nulls[c][slot]) {
      s->str_live -= ((lm_str*)s->data[c])[slot].len;
    }
  }
  s->free_slots[s->nfree++] = slot;
  s->live--;
}

/* Row `row` of cols (the input's columns, ncols of them) into `slot`. */
static laminar_code store_put(rowstore* s, uint32_t slot, const lm_vec* cols,
                              int64_t row) {
  for (int32_t c = 0; c < s->ncols; c++) {
    if (!s->keep[c]) continue;
    const lm_vec* v = &cols[c];
    bool null = v->nulls != NULL && v->nulls[row];
    s->nulls[c][slot] = null;
    int64_t w = lm_type_width(s->types[c]);
    if (s->types[c] == LM_TYPE_STRING) {
      lm_str x = null ? (lm_str){NULL, 0} : ((const lm_str*)v->data)[row];
      if (x.len > 0) {
        char* p = lm_pool_copy(&s->strings, x.ptr, (size_t)x.len);
        if (p == NULL) return LAMINAR_ERR_NOMEM;
        x.ptr = p;
        s->str_live += x.len;
      }
      ((lm_str*)s->data[c])[slot] = x;
    } else if (null) {
      memset((char*)s->data[c] + slot * w, 0, (size_t)w);
    } else {
      memcpy((char*)s->data[c] + slot * w, (const char*)v->data + row * w, (size_t)w);
    }
  }
  return LAMINAR_OK;
}

/* Move live strings to a fresh pool when the old one is mostly dead bytes:
 * freed rows' strings are otherwise only reclaimed by a reset. */
static laminar_code store_compact(rowstore* s, const uint8_t* live_mark) {
  if (!s->has_strings) return LAMINAR_OK;
  int64_t held = (int64_t)lm_pool_reserved(&s->strings);
  if (held < 2 * s->str_live + (1 << 20)) return LAMINAR_OK;
  lm_pool fresh;
  lm_pool_init(&fresh);
  for (int64_t slot = 0; slot < s->used; slot++) {
    if (!live_mark[slot]) continue;
    for (int32_t c = 0; c < s->ncols; c++) {
      if (s->types[c] != LM_TYPE_STRING || !s->keep[c] || s->nulls[c][slot]) continue;
      lm_str* x = &((lm_str*)s->data[c])[slot];
      if (x->len == 0) continue;
      char* p = lm_pool_copy(&fresh, x->ptr, (size_t)x->len);
      if (p == NULL) {
        lm_pool_free(&fresh);
        return LAMINAR_ERR_NOMEM;
      }
      x->ptr = p;
    }
  }
  lm_pool_free(&s->strings);
  s->strings = fresh;
  return LAMINAR_OK;
}

static int64_t store_bytes(const rowstore* s) {
  int64_t per = 0;
  for (int32_t c = 0; c < s->ncols; c++)
    if (s->keep[c]) per += lm_type_width(s->types[c]) + 1;
  return s->live * per + s->str_live;
}

/* ==== the operator ===================================================================== */

/* The right rows of one key, sorted by (time, arrival): [head, n) of the arrays. */
typedef struct keyrows {
  int64_t* ts;
  uint32_t* slot;
  int32_t head, n, cap;
} keyrows;

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
  keyrows* keys; /* table.cap entries */
  int64_t nkeyrows;
  rowstore left, right;
  pending* pend; /* [phead, npend) sorted by (ts, arrival) */
  int64_t phead, npend, pcap;
  int64_t right_rows; /* right rows kept, all keys */
  int64_t swept_rows; /* right_rows after the last sweep of all keys */
  int64_t wm[2];      /* inputs' watermarks, ms */
  int64_t out_wm;     /* forwarded to next, ms */
  int64_t late[2];
  /* release scratch */
  pending* rel;
  int64_t rel_cap;
  int64_t* match; /* per released row: right slot, -1 none */
  void* zeros;    /* out_cap values of the widest type, all zero */
  lm_vec* out;    /* lcols + rcols */
  void** out_data;
  uint8_t** out_nulls;
  int64_t out_cap;
  uint64_t* hashes;
  int64_t hash_cap;
  uint8_t* mark; /* compaction scratch */
} asof_op;

static const lm_op_vtable asof_vtable;

static bool is_asof(const lm_op* op) { return op != NULL && op->vt == &asof_vtable; }

/* A watermark (ms) in the time column's unit, saturating. */
static int64_t to_units(const asof_op* j, int64_t ms) {
  if (j->spec.time_type != LM_TYPE_TIMESTAMP) return ms;
  if (ms >= INT64_MAX / 1000) return INT64_MAX;
  if (ms <= INT64_MIN / 1000) return INT64_MIN;
  return ms * 1000;
}

/* A time (the column's unit) in ms, rounded down. */
static int64_t to_ms(const asof_op* j, int64_t t) {
  if (j->spec.time_type != LM_TYPE_TIMESTAMP) return t;
  return t / 1000 - (t % 1000 < 0 ? 1 : 0);
}

static int64_t sat_add(int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_add_overflow(a, b, &r)) return b > 0 ? INT64_MAX : INT64_MIN;
  return r;
}

static int64_t sat_sub(int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_sub_overflow(a, b, &r)) return b > 0 ? INT64_MIN : INT64_MAX;
  return r;
}

static bool cmp_before(const asof_op* j) {
  return j->spec.cmp == LM_ASOF_GE || j->spec.cmp == LM_ASOF_GT;
}

/* ---- keys ---------------------------------------------------------------------------- */

/* The key row of row `row` (hash h) of the key columns, added when new. */
static laminar_code key_row(asof_op* j, uint64_t h, const lm_vec* keys, int64_t row,
                            int64_t* out) {
  lm_state_table* t = &j->table;
  int64_t g = lm_state_table_find(t, h, keys, row);
  if (g < 0) {
    LM_TRY(lm_state_table_reserve(t, t->n + 1));
    if (t->cap > j->nkeyrows) {
      keyrows* k = lm_realloc(j->keys, sizeof *k * (size_t)t->cap);
      if (k == NULL) return LAMINAR_ERR_NOMEM;
      memset(k + j->nkeyrows, 0, sizeof *k * (size_t)(t->cap - j->nkeyrows));
      j->keys = k;
      j->nkeyrows = t->cap;
    }
    LM_TRY(lm_state_table_grow_index(t));
    g = lm_state_table_push(t, h);
    LM_TRY(lm_state_table_set_keys(t, g, keys, row));
  }
  *out = g;
  return LAMINAR_OK;
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

/* First index in [head, n) of kr whose time is > t (upper bound). */
static int32_t upper(const keyrows* kr, int64_t t) {
  int32_t lo = kr->head, hi = kr->n;
  if (hi > lo && kr->ts[hi - 1] <= t) return hi; /* in-order arrivals */
  while (lo < hi) {
    int32_t mid = lo + (hi - lo) / 2;
    if (kr->ts[mid] <= t)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo;
}

/* First index in [head, n) whose time is >= t (lower bound). */
static int32_t lower(const keyrows* kr, int64_t t) {
  int32_t lo = kr->head, hi = kr->n;
  while (lo < hi) {
    int32_t mid = lo + (hi - lo) / 2;
    if (kr->ts[mid] < t)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo;
}

static laminar_code keyrows_insert(keyrows* kr, int64_t t, uint32_t slot) {
  if (kr->head > 0 && (kr->n == kr->cap || kr->head >= kr->n / 2)) {
    int32_t live = kr->n - kr->head;
    memmove(kr->ts, kr->ts + kr->head, sizeof *kr->ts * (size_t)live);
    memmove(kr->slot, kr->slot + kr->head, sizeof *kr->slot * (size_t)live);
    kr->head = 0;
    kr->n = live;
  }
  if (kr->n == kr->cap) {
    int32_t nc = kr->cap ? kr->cap * 2 : 4;
    int64_t* ts = lm_realloc(kr->ts, sizeof *ts * (size_t)nc);
    if (ts == NULL) return LAMINAR_ERR_NOMEM;
    kr->ts = ts;
    uint32_t* sl = lm_realloc(kr->slot, sizeof *sl * (size_t)nc);
    if (sl == NULL) return LAMINAR_ERR_NOMEM;
    kr->slot = sl;
    kr->cap = nc;
  }
  int32_t at = upper(kr, t);
  if (at < kr->n) {
    memmove(kr->ts + at + 1, kr->ts + at, sizeof *kr->ts * (size_t)(kr->n - at));
    memmove(kr->slot + at + 1, kr->slot + at, sizeof *kr->slot * (size_t)(kr->n - at));
  }
  kr->ts[at] = t;
  kr->slot[at] = slot;
  kr->n++;
  return LAMINAR_OK;
}

/* The least time a future or waiting left row can have (the column's unit). */
static int64_t left_floor(const asof_op* j) {
  int64_t p = to_units(j, j->wm[0]);
  if (j->npend > j->phead) {
    /* Sorted by time within the list. */
    if (j->pend[j->phead].ts < p) p = j->pend[j->phead].ts;
  }
  return p;
}

/* Drop the rows of kr no left row at or after time p can match. */
static void prune_key(asof_op* j, keyrows* kr, int64_t p) {
  int32_t drop = kr->head; /* rows [head, drop) go */
  const lm_asof_spec* sp = &j->spec;
  if (kr->n == kr->head || p == INT64_MIN) return;
  if (cmp_before(j)) {
    /* Keep the newest row usable by time p (<= p, or < p), and after. */
    int32_t last = sp->cmp == LM_ASOF_GE ? upper(kr, p) : lower(kr, p);
    drop = last - 1;
    if (drop < kr->head) drop = kr->head;
    if (sp->has_tolerance && drop < kr->n && kr->ts[drop] < sat_sub(p, sp->tolerance)) {
      drop++;
    }
  } else {
    drop = sp->cmp == LM_ASOF_LE ? lower(kr, p) : upper(kr, p);
  }
  for (int32_t i = kr->head; i < drop; i++) store_release(&j->right, kr->slot[i]);
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

/* The matching right slot of left row time t in kr (-1: none), and whether
 * it is final under right watermark rw (the column's unit). */
static int64_t find_match(const asof_op* j, const keyrows* kr, int64_t t, int64_t rw,
                          bool* out_final) {
  const lm_asof_spec* sp = &j->spec;
  int64_t m = -1;
  if (cmp_before(j)) {
    /* Final once every right row <= t (< t) is in: rw > t (rw >= t). */
    *out_final = sp->cmp == LM_ASOF_GE ? rw > t : rw >= t;
    if (kr != NULL && kr->n > kr->head) {
      int32_t i = (sp->cmp == LM_ASOF_GE ? upper(kr, t) : lower(kr, t)) - 1;
      if (i >= kr->head && (!sp->has_tolerance || sat_sub(t, kr->ts[i]) <= sp->tolerance))
        m = kr->slot[i];
    }
    return m;
  }
  /* <= / <: the earliest right row at or after t (after: <); among equal
   * times the last to arrive. Final when that row is older than rw (no
   * earlier one can come), or when rw passes t + tolerance. */
  int64_t limit = sp->has_tolerance ? sat_add(t, sp->tolerance) : INT64_MAX;
  *out_final = sp->has_tolerance && rw > limit;
  if (kr != NULL && kr->n > kr->head) {
    int32_t i = sp->cmp == LM_ASOF_LE ? lower(kr, t) : upper(kr, t);
    if (i < kr->n && kr->ts[i] <= limit) {
      int32_t last = upper(kr, kr->ts[i]) - 1;
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
  if (n <= j->out_cap) return LAMINAR_OK;
  int64_t nc = j->out_cap ? j->out_cap : 256;
  while (nc < n) nc *= 2;
  int32_t ncols = j->spec.lcols + j->spec.rcols;
  for (int32_t c = 0; c < ncols; c++) {
    if (j->spec.need != NULL && !j->spec.need[c]) continue;
    void* d = lm_realloc(j->out_data[c], (size_t)(nc * lm_type_width(j->out[c].type)));
    if (d == NULL) return LAMINAR_ERR_NOMEM;
    j->out_data[c] = d;
    uint8_t* nl = lm_realloc(j->out_nulls[c], (size_t)nc);
    if (nl == NULL) return LAMINAR_ERR_NOMEM;
    j->out_nulls[c] = nl;
  }
  pending* r = lm_realloc(j->rel, sizeof *r * (size_t)nc);
  if (r == NULL) return LAMINAR_ERR_NOMEM;
  j->rel = r;
  int64_t* m = lm_realloc(j->match, sizeof *m * (size_t)nc);
  if (m == NULL) return LAMINAR_ERR_NOMEM;
  j->match = m;
  void* z = lm_calloc((size_t)nc, sizeof(lm_str));
  if (z == NULL) return LAMINAR_ERR_NOMEM;
  lm_free(j->zeros);
  j->zeros = z;
  j->out_cap = nc;
  return LAMINAR_OK;
}

/* Gather column c of `st` at slots into output column oc (slot -1: NULL). */
static void gather(asof_op* j, const rowstore* st, int32_t c, int32_t oc,
                   const int64_t* slots, const pending* rel, int64_t n) {
  int64_t w = lm_type_width(st->types[c]);
  if (!st->keep[c]) { /* no one reads it: zeros */
    j->out[oc] = (lm_vec){st->types[c], n, NULL, j->zeros};
    return;
  }
  char* dst = j->out_data[oc];
  uint8_t* nl = j->out_nulls[oc];
  const char* src = st->data[c];
  bool any_null = false;
  for (int64_t r = 0; r < n; r++) {
    int64_t s = slots != NULL ? slots[r] : (int64_t)rel[r].slot;
    if (s < 0 || st->nulls[c][s]) {
      nl[r] = 1;
      memset(dst + r * w, 0, (size_t)w);
      any_null = true;
    } else {
      nl[r] = 0;
      memcpy(dst + r * w, src + s * w, (size_t)w);
    }
  }
  j->out[oc].len = n;
  j->out[oc].data = dst;
  j->out[oc].nulls = any_null ? nl : NULL;
}

/* Emit the rows rel[0..n) (matches in j->match), then let their left slots go. */
static laminar_code emit_released(asof_op* j, int64_t n) {
  if (n == 0) return LAMINAR_OK;
  int64_t k = 0;
  if (!j->spec.left_outer) { /* inner: unmatched rows go */
    for (int64_t r = 0; r < n; r++) {
      if (j->match[r] < 0) {
        store_release(&j->left, j->rel[r].slot);
        continue;
      }
      j->rel[k] = j->rel[r];
      j->match[k++] = j->match[r];
    }
  } else {
    k = n;
  }
  laminar_code rc = LAMINAR_OK;
  if (k > 0) {
    for (int32_t c = 0; c < j->spec.lcols; c++)
      gather(j, &j->left, c, c, NULL, j->rel, k);
    for (int32_t c = 0; c < j->spec.rcols; c++)
      gather(j, &j->right, c, j->spec.lcols + c, j->match, NULL, k);
    lm_chunk out = {k, j->spec.lcols + j->spec.rcols, j->out, NULL};
    rc = lm_op_emit(&j->base, &out);
    for (int64_t r = 0; r < k; r++) store_release(&j->left, j->rel[r].slot);
  }
  return rc;
}

/* Emit every waiting left row whose match is final, in (time, arrival) order. */
static laminar_code release(asof_op* j) {
  int64_t rw = to_units(j, j->wm[1]);
  int64_t n = 0;
  LM_TRY(reserve_out(j, j->npend - j->phead));
  if (cmp_before(j)) {
    /* Final is monotone in time: a prefix. */
    while (j->phead < j->npend) {
      pending* p = &j->pend[j->phead];
      bool final;
      int64_t m = match_of(j, p, rw, &final);
      if (!final) break;
      j->rel[n] = *p;
      j->match[n++] = m;
      j->phead++;
    }
    if (j->phead == j->npend) j->phead = j->npend = 0;
  } else {
    int64_t keep = j->phead;
    for (int64_t i = j->phead; i < j->npend; i++) {
      pending* p = &j->pend[i];
      bool final;
      int64_t m = match_of(j, p, rw, &final);
      if (final) {
        j->rel[n] = *p;
        j->match[n++] = m;
      } else {
        j->pend[keep++] = *p;
      }
    }
    j->npend = keep;
    if (j->phead == j->npend) j->phead = j->npend = 0;
  }
  return emit_released(j, n);
}

/* The watermark the join can promise downstream: no output row older. */
static laminar_code forward_watermark(asof_op* j) {
  int64_t w = j->wm[0];
  if (j->npend > j->phead) {
    int64_t p = to_ms(j, j->pend[j->phead].ts);
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
  return store_bytes(&j->left) + store_bytes(&j->right) +
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
  const rowstore* st = side == 0 ? &j->left : &j->right;
  int64_t per = 24 + lm_state_table_row_bytes(j->key_types, j->spec.nkeys);
  for (int32_t c = 0; c < st->ncols; c++)
    if (st->keep[c]) per += lm_type_width(st->types[c]) + 1;
  int64_t bytes = per * in->nrows;
  for (int32_t c = 0; c < in->ncols; c++) {
    const lm_vec* v = &in->cols[c];
    if (v->type != LM_TYPE_STRING) continue;
    const lm_str* x = v->data;
    for (int64_t r = 0; r < in->nrows; r++) bytes += 2 * x[r].len; /* row and key */
  }
  return bytes;
}

/* Compact the stores' strings when mostly dead. */
static laminar_code compact(asof_op* j) {
  rowstore* st[2] = {&j->left, &j->right};
  for (int side = 0; side < 2; side++) {
    rowstore* s = st[side];
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
        const keyrows* kr = &j->keys[g];
        for (int32_t i = kr->head; i < kr->n; i++) mark[kr->slot[i]] = 1;
      }
    }
    LM_TRY(store_compact(s, mark));
  }
  return LAMINAR_OK;
}

/* ---- inputs ------------------------------------------------------------------------------ */

/* Insert the rows of a right chunk. `check_late`: drop rows older than the
 * right watermark (not on restore). */
static laminar_code right_rows(asof_op* j, const lm_chunk* in, bool check_late) {
  lm_vec keys[64];
  LM_TRY(eval_keys(j, 1, in, keys));
  const lm_vec* tv = &in->cols[j->spec.rtime];
  int64_t rw = to_units(j, j->wm[1]);
  int64_t p = left_floor(j);
  LM_TRY(store_reserve(&j->right, j->right.used + in->nrows));
  for (int64_t r = 0; r < in->nrows; r++) {
    if (tv->nulls != NULL && tv->nulls[r]) continue; /* no time: never matches */
    int64_t t = time_of(tv, r);
    if (check_late && t < rw) {
      j->late[1]++;
      continue;
    }
    if (key_is_null(j, keys, r)) continue;
    int64_t g;
    LM_TRY(key_row(j, j->hashes[r], keys, r, &g));
    uint32_t slot = store_take(&j->right);
    LM_TRY(store_put(&j->right, slot, in->cols, r));
    keyrows* kr = &j->keys[g];
    LM_TRY(keyrows_insert(kr, t, slot));
    j->right_rows++;
    if (kr->n - kr->head > 8) prune_key(j, kr, p); /* amortized */
  }
  lm_eval_ctx_reset(j->ctx);
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

/* Emit left rows of chunk `in` joined at once: rel[k].g is the row, match[k]
 * the right slot (-1 none), sorted here by (time, row). */
static laminar_code emit_direct(asof_op* j, const lm_chunk* in, int64_t n, bool sorted) {
  if (n == 0) return LAMINAR_OK;
  if (!sorted) {
    for (int64_t k = 0; k < n; k++) j->rel[k].slot = (uint32_t)j->match[k] + 1;
    qsort(j->rel, (size_t)n, sizeof *j->rel, cmp_direct);
    for (int64_t k = 0; k < n; k++) j->match[k] = (int64_t)j->rel[k].slot - 1;
  }
  for (int32_t c = 0; c < j->spec.lcols; c++) {
    const lm_vec* v = &in->cols[c];
    if (!j->left.keep[c]) {
      j->out[c] = (lm_vec){v->type, n, NULL, j->zeros};
      continue;
    }
    int64_t w = lm_type_width(v->type);
    char* dst = j->out_data[c];
    const char* src = v->data;
    for (int64_t k = 0; k < n; k++) memcpy(dst + k * w, src + j->rel[k].g * w, (size_t)w);
    uint8_t* nl = NULL;
    if (v->nulls != NULL) {
      nl = j->out_nulls[c];
      for (int64_t k = 0; k < n; k++) nl[k] = v->nulls[j->rel[k].g];
    }
    j->out[c] = (lm_vec){v->type, n, nl, dst};
  }
  for (int32_t c = 0; c < j->spec.rcols; c++)
    gather(j, &j->right, c, j->spec.lcols + c, j->match, NULL, n);
  lm_chunk out = {n, j->spec.lcols + j->spec.rcols, j->out, NULL};
  return lm_op_emit(&j->base, &out);
}

/* Take a left chunk: late rows counted and dropped; with >= / > a row whose
 * match is final already (the right watermark past it) is joined and emitted
 * at once, from the chunk (the common case when quotes lead: nothing held);
 * the others wait. `live` false (a restore): every row waits, none is late. */
static laminar_code left_rows(asof_op* j, const lm_chunk* in, bool live) {
  lm_vec keys[64];
  LM_TRY(eval_keys(j, 0, in, keys));
  const lm_vec* tv = &in->cols[j->spec.ltime];
  int64_t lw = to_units(j, j->wm[0]);
  int64_t rw = to_units(j, j->wm[1]);
  bool direct = live && cmp_before(j);
  int64_t final_below = j->spec.cmp == LM_ASOF_GE ? rw : sat_add(rw, 1); /* t < it */
  LM_TRY(store_reserve(&j->left, j->left.used + in->nrows));
  if (direct) LM_TRY(reserve_out(j, in->nrows));
  int64_t nd = 0;
  bool sorted = true;
  for (int64_t r = 0; r < in->nrows; r++) {
    bool no_time = tv->nulls != NULL && tv->nulls[r];
    int64_t t = no_time ? INT64_MIN : time_of(tv, r);
    if (live && !no_time && t < lw) {
      j->late[0]++;
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
    uint32_t slot = store_take(&j->left);
    LM_TRY(store_put(&j->left, slot, in->cols, r));
    /* A row without a key or time matches nothing: released at once. */
    LM_TRY(pend_push(j, (pending){t, g, slot}));
  }
  laminar_code rc = emit_direct(j, in, nd, sorted);
  lm_eval_ctx_reset(j->ctx);
  return rc;
}

static laminar_code asof_on_input_chunk(lm_op* op, int32_t input, const lm_chunk* in) {
  asof_op* j = (asof_op*)op;
  /* The first stateful operator of its chain refuses a batch that could take
   * the state past its bound, before it changes anything (op.h). */
  if (j->base.checks_bound && lm_op_bounded(op))
    LM_TRY(lm_op_account(op, asof_bytes(j) + chunk_bound(j, input, in), true));
  if (input == 1) {
    LM_TRY(right_rows(j, in, true));
  } else {
    LM_TRY(left_rows(j, in, true));
    LM_TRY(release(j));
  }
  LM_TRY(compact(j));
  return account(j);
}

static laminar_code asof_on_input_watermark(lm_op* op, int32_t input, int64_t wm) {
  asof_op* j = (asof_op*)op;
  if (wm <= j->wm[input]) return LAMINAR_OK;
  j->wm[input] = wm;
  if (input == 1) LM_TRY(release(j));
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

static void put_row(const rowstore* s, uint32_t slot, lm_state_writer* w) {
  for (int32_t c = 0; c < s->ncols; c++) {
    bool null = !s->keep[c] || s->nulls[c][slot]; /* not held: NULL */
    lm_state_put_u8(w, null);
    if (null) continue;
    switch (s->types[c]) {
      case LM_TYPE_STRING: {
        lm_str x = ((const lm_str*)s->data[c])[slot];
        lm_state_put_bytes(w, x.ptr, (size_t)x.len);
        break;
      }
      case LM_TYPE_DOUBLE: lm_state_put_f64(w, ((const double*)s->data[c])[slot]); break;
      case LM_TYPE_NULL: lm_state_put_i64(w, ((const uint8_t*)s->data[c])[slot]); break;
      default: {
        lm_vec v = {s->types[c], slot + 1, NULL, s->data[c]};
        lm_state_put_i64(w, lm_vec_int_at(&v, slot));
        break;
      }
    }
  }
}

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
    const keyrows* kr = &j->keys[g];
    if (kr->n == kr->head) continue;
    lm_state_table_put_keys(&j->table, g, w);
    lm_state_put_i64(w, kr->n - kr->head);
    for (int32_t i = kr->head; i < kr->n; i++) {
      lm_state_put_i64(w, kr->ts[i]);
      put_row(&j->right, kr->slot[i], w);
    }
  }
  /* Waiting left rows, in order: restored through the key expressions. */
  lm_state_put_i64(w, j->npend - j->phead);
  for (int64_t i = j->phead; i < j->npend; i++) put_row(&j->left, j->pend[i].slot, w);
  return lm_state_writer_status(w);
}

/* Read n rows of `types` into columns (one chunk), then insert them. */
static laminar_code restore_rows(asof_op* j, int32_t side, lm_state_reader* r,
                                 int64_t n) {
  const rowstore* st = side == 0 ? &j->left : &j->right;
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
        case LM_TYPE_STRING: ((lm_str*)data[c])[row] = lm_state_get_bytes(r); break;
        case LM_TYPE_DOUBLE: ((double*)data[c])[row] = lm_state_get_f64(r); break;
        case LM_TYPE_NULL: ((uint8_t*)data[c])[row] = (uint8_t)lm_state_get_i64(r); break;
        default: lm_vec_int_put(st->types[c], data[c], row, lm_state_get_i64(r)); break;
      }
    }
    if (r->failed) rc = LAMINAR_ERR_RECOVERY;
  }
  if (rc == LAMINAR_OK) {
    lm_chunk ch = {n, ncols, cols, NULL};
    rc = side == 0 ? left_rows(j, &ch, false) : right_rows(j, &ch, false);
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

/* Read one row written by put_row into `slot` of st. */
static laminar_code get_row(rowstore* st, uint32_t slot, lm_state_reader* r) {
  for (int32_t c = 0; c < st->ncols; c++) {
    bool null = lm_state_get_u8(r) != 0;
    if (!st->keep[c]) { /* not held: written as NULL */
      if (!null) return LAMINAR_ERR_RECOVERY;
      continue;
    }
    st->nulls[c][slot] = null;
    int64_t w = lm_type_width(st->types[c]);
    char* d = (char*)st->data[c] + slot * w;
    if (null) {
      memset(d, 0, (size_t)w);
      continue;
    }
    switch (st->types[c]) {
      case LM_TYPE_STRING: {
        lm_str x = lm_state_get_bytes(r);
        if (x.len > 0) {
          char* p = lm_pool_copy(&st->strings, x.ptr, (size_t)x.len);
          if (p == NULL) return LAMINAR_ERR_NOMEM;
          x.ptr = p;
          st->str_live += x.len;
        }
        memcpy(d, &x, sizeof x);
        break;
      }
      case LM_TYPE_DOUBLE: {
        double v = lm_state_get_f64(r);
        memcpy(d, &v, 8);
        break;
      }
      case LM_TYPE_NULL: *(uint8_t*)d = (uint8_t)lm_state_get_i64(r); break;
      default: lm_vec_int_put(st->types[c], d, 0, lm_state_get_i64(r)); break;
    }
  }
  return r->failed ? LAMINAR_ERR_RECOVERY : LAMINAR_OK;
}

/* The right rows of a snapshot: per key group its keys, then its rows. */
static laminar_code restore_right(asof_op* j, lm_state_reader* r) {
  int64_t groups = lm_state_get_i64(r);
  if (groups < 0 || groups > ((int64_t)1 << 30) || r->failed) return LAMINAR_ERR_RECOVERY;
  lm_state_table* t = &j->table;
  for (int64_t k = 0; k < groups; k++) {
    LM_TRY(lm_state_table_reserve(t, t->n + 1));
    if (t->cap > j->nkeyrows) {
      keyrows* kk = lm_realloc(j->keys, sizeof *kk * (size_t)t->cap);
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
    LM_TRY(store_reserve(&j->right, j->right.used + n));
    for (int64_t i = 0; i < n; i++) {
      int64_t ts = lm_state_get_i64(r);
      uint32_t slot = store_take(&j->right);
      LM_TRY(get_row(&j->right, slot, r));
      LM_TRY(keyrows_insert(&j->keys[g], ts, slot));
      j->right_rows++;
    }
  }
  return lm_state_table_reindex(t);
}

static void asof_clear(asof_op* j) {
  for (int64_t g = 0; g < j->nkeyrows; g++) {
    lm_free(j->keys[g].ts);
    lm_free(j->keys[g].slot);
    memset(&j->keys[g], 0, sizeof j->keys[g]);
  }
  lm_state_table_reset(&j->table);
  j->phead = j->npend = 0;
  j->right_rows = j->swept_rows = 0;
}

static laminar_code asof_restore(lm_op* op, lm_state_reader* r, laminar_error* err) {
  asof_op* j = (asof_op*)op;
  if (lm_state_get_u32(r) != ASOF_SNAP_TAG) {
    return lm_error_set(err, LAMINAR_ERR_RECOVERY,
                        "asof join: snapshot is not an ASOF join's");
  }
  asof_clear(j);
  /* Insert with the watermarks at their oldest: nothing is late or pruned. */
  int64_t wm[2], late[2];
  for (int i = 0; i < 2; i++) {
    wm[i] = lm_state_get_i64(r);
    late[i] = lm_state_get_i64(r);
    j->wm[i] = INT64_MIN;
  }
  int64_t out_wm = lm_state_get_i64(r);
  laminar_code rc = restore_right(j, r);
  if (rc == LAMINAR_OK) rc = restore_rows(j, 0, r, lm_state_get_i64(r));
  if (rc == LAMINAR_OK && r->failed) rc = LAMINAR_ERR_RECOVERY;
  if (rc != LAMINAR_OK) {
    asof_clear(j);
    return lm_error_set(err, rc, "asof join: cannot restore its state%s",
                        rc == LAMINAR_ERR_RECOVERY ? " (snapshot damaged)" : "");
  }
  for (int i = 0; i < 2; i++) {
    j->wm[i] = wm[i];
    j->late[i] = late[i];
  }
  j->out_wm = out_wm;
  j->swept_rows = j->right_rows;
  return account(j);
}

/* ---- lifecycle ----------------------------------------------------------------------------- */

static void asof_destroy(lm_op* op) {
  asof_op* j = (asof_op*)op;
  asof_clear(j);
  lm_free(j->keys);
  lm_state_table_free(&j->table);
  store_free(&j->left);
  store_free(&j->right);
  int32_t ncols = j->spec.lcols + j->spec.rcols;
  for (int32_t c = 0; c < ncols && j->out_data != NULL; c++) {
    lm_free(j->out_data[c]);
    lm_free(j->out_nulls[c]);
  }
  lm_free(j->out_data);
  lm_free(j->out_nulls);
  lm_free(j->out);
  lm_free(j->pend);
  lm_free(j->rel);
  lm_free(j->match);
  lm_free(j->zeros);
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
    .destroy = asof_destroy,
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
  int32_t ncols = spec->lcols + spec->rcols;
  j->key_types = lm_calloc((size_t)(spec->nkeys ? spec->nkeys : 1), sizeof(lm_type));
  j->out = lm_calloc((size_t)ncols, sizeof *j->out);
  j->out_data = lm_calloc((size_t)ncols, sizeof *j->out_data);
  j->out_nulls = lm_calloc((size_t)ncols, sizeof *j->out_nulls);
  laminar_code rc = j->key_types && j->out && j->out_data && j->out_nulls
                        ? LAMINAR_OK
                        : LAMINAR_ERR_NOMEM;
  for (int32_t k = 0; rc == LAMINAR_OK && k < spec->nkeys; k++)
    j->key_types[k] = spec->lkeys[k]->type;
  for (int32_t c = 0; rc == LAMINAR_OK && c < ncols; c++)
    j->out[c].type = out_schema->fields[c].type;
  if (rc == LAMINAR_OK) rc = lm_eval_ctx_create(&j->ctx);
  if (rc == LAMINAR_OK) rc = lm_state_table_init(&j->table, j->key_types, spec->nkeys);
  if (rc == LAMINAR_OK) rc = store_init(&j->left, out_schema, 0, spec->lcols, spec->need);
  if (rc == LAMINAR_OK)
    rc = store_init(&j->right, out_schema, spec->lcols, spec->rcols, spec->need);
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
