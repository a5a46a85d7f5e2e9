/*
 * view.c -- the materialize operator of a materialized view (view.h): a Z-set
 * of the view's rows, updated from insert-only or changelog input, forwarded
 * downstream as a changelog, copied out for ad-hoc SELECT, saved and restored
 * with checkpoints.
 *
 * State: each distinct row is encoded once into a byte string (below); the
 * keyed state layer's row set (state/rowset.h: one hash table over encoded
 * rows, with deletion, compaction, the state bound's accounting and
 * copy-on-write freezes) maps the row's bytes to its multiplicity.
 *
 * A chunk is applied all or nothing: rows are encoded and the table and the
 * buffer are grown for the worst case (every row new) before the first row
 * changes the state, so running out of memory leaves the view as it was.
 *
 * Runs on the thread that owns the partition (no locks); lm_op_view_copy()
 * is called by the control thread while the graph is paused. A checkpoint
 * freezes the state copy-on-write ("frozen views") and encodes it from its
 * own thread.
 */
#include "op/view.h"

#include "state/rowset.h"
#include "util/util.h"

#include <assert.h>
#include <string.h>

/* The encoding is stored in checkpoints as it is in memory. */
static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
              "row encoding assumes little-endian");

/* ==== row encoding =================================================================== */

/* A row is its columns in order, each a tag byte (0 = NULL, 1 = a value) and,
 * for a value: BOOL 1 byte, INT32 4, INT64/TIMESTAMP/DOUBLE 8 (the bits), STRING
 * a u32 length and the bytes. Equal rows have equal encodings, so the bytes
 * are the row's identity (DOUBLEs by their bits: a retraction carries the bits
 * of the row it retracts). */

/* Encoded size of row r of v; -1 for a string too long for its u32 length. */
static int64_t value_size(const lm_vec* v, int64_t r) {
  if (v->nulls != NULL && v->nulls[r]) return 1;
  if (!lm_type_is_bytes(v->type)) return 1 + lm_type_width(v->type);
  int64_t len = ((const lm_str*)v->data)[r].len;
  return len > (int64_t)UINT32_MAX ? -1 : 1 + 4 + len;
}

static uint8_t* encode_value(const lm_vec* v, int64_t r, uint8_t* p) {
  if (v->nulls != NULL && v->nulls[r]) {
    *p = 0;
    return p + 1;
  }
  *p++ = 1;
  if (lm_type_is_bytes(v->type)) {
    lm_str s = ((const lm_str*)v->data)[r];
    uint32_t len = (uint32_t)s.len;
    memcpy(p, &len, 4);
    if (len > 0) memcpy(p + 4, s.ptr, len);
    return p + 4 + len;
  }
  size_t w = (size_t)lm_type_width(v->type);
  memcpy(p, (const uint8_t*)v->data + (size_t)r * w, w);
  return p + w;
}

/* Encoded size of row r of columns cols[idx[0..n)] (idx NULL: cols[0..n)), or
 * -1 when a string is too long for its u32 length (4 GiB or more). */
static int64_t encoded_size(const lm_vec* cols, const int32_t* idx, int32_t n,
                            int64_t r) {
  int64_t size = 0;
  for (int32_t c = 0; c < n; c++) {
    int64_t one = value_size(&cols[idx != NULL ? idx[c] : c], r);
    if (one < 0) return -1;
    size += one;
  }
  return size;
}

/* Length of the encoded row at p[0..len) for `schema`, or -1 when the bytes
 * are not a row of it (checked on restore: decoding trusts what is stored). */
static int64_t row_check(const lm_schema* schema, const uint8_t* p, int64_t len) {
  int64_t pos = 0;
  for (int32_t c = 0; c < schema->ncols; c++) {
    if (pos >= len) return -1;
    uint8_t tag = p[pos++];
    if (tag == 0) continue;
    if (tag != 1) return -1;
    lm_type t = schema->fields[c].type;
    int64_t w = lm_type_width(t);
    if (lm_type_is_bytes(t)) {
      uint32_t n;
      if (len - pos < 4) return -1;
      memcpy(&n, p + pos, 4);
      w = 4 + (int64_t)n;
    }
    if (len - pos < w) return -1;
    if (t == LM_TYPE_BOOL && p[pos] > 1) return -1;
    pos += w;
  }
  return pos;
}

/* The hash of an encoded row (or a table's key): the state layer's. */
static inline uint64_t row_hash(const uint8_t* p, int64_t len) {
  return lm_state_rowset_hash(p, len);
}

/* ==== the operator ==================================================================== */

typedef struct view_op {
  lm_op base; /* out_schema: the columns, then _weight BIGINT */
  lm_schema columns;
  /* A table (lm_op_table_create): its primary key's column indexes and
   * their schema; nkey 0 for a view. */
  int32_t* key_cols;
  int32_t nkey;
  lm_schema key_schema;
  bool changelog; /* input chunks carry the weight as column columns.ncols */
  /* A table fed by a query (lm_op_table_create_fed): a delete takes only the
   * row it names, and a row with a NULL key is not applied. */
  bool fed;
  /* The rows: a view's identified by their whole encoding, a table's
   * (keyed) by their key's encoding, stored before the row's. */
  lm_state_rowset rows;
  int64_t retract_errors;
  lm_eval_ctx* ctx; /* per-chunk scratch */
  lm_vec* outs;     /* columns.ncols + 1 output vectors */
  /* Checkpoints freeze `rows` copy-on-write ("frozen views" below). */
  int64_t thaws; /* copies made so (lm_op_view_thaws) */
  int64_t thawed_rows;
  /* A batch that fans out (op.h, lm_op_txn): the rows its chunks applied
   * (encodings back to back in u_bytes, row i at [u_off[i], u_off[i + 1]),
   * the weight it applied u_eff[i]) and the retraction errors before it,
   * kept until it ends; an abort applies them back in reverse, in room
   * reserved with the chunks, so it allocates nothing. */
  bool held;
  uint8_t* u_bytes;
  int64_t* u_off; /* u_n + 1 */
  int64_t* u_eff;
  int64_t u_n, u_len, u_cap, u_bcap;
  int64_t u_errors;
  /* A table keyed by one integer column: the image its lookup joins probe
   * (a cache of `rows`, "the probe image" below); NULL otherwise. */
  struct table_image* image;
  /* A table's held batch: its changes (table_undo, their keys' bytes in
   * u_bytes at tu_off[i]) and the row buffer's size before it; an abort
   * takes them back newest first (table_txn_end), allocating nothing. */
  struct table_undo* tu;
  int64_t* tu_off;
  int64_t tu_n, tu_cap;
  int64_t t_nbytes0, t_dead0;
} view_op;

typedef struct table_image table_image;
static void image_clear(table_image* im);
static void image_touch(table_image* im, const lm_vec* key, int64_t n);

static const lm_op_vtable view_vtable;
static const lm_op_vtable table_vtable;

bool lm_op_view_is_changelog(const lm_schema* schema) {
  if (schema->ncols == 0) return false;
  const lm_field* last = &schema->fields[schema->ncols - 1];
  return last->type == LM_TYPE_INT64 && lm_streq_nocase(last->name, LM_WEIGHT_COLUMN);
}

/* Add weight w to row p[0..len) (hash h); returns the weight applied. */
static int64_t apply_row(view_op* v, uint64_t h, const uint8_t* p, int64_t len,
                         int64_t w) {
  return lm_state_rowset_add(&v->rows, h, p, len, w, &v->retract_errors);
}

laminar_code lm_op_gather(lm_eval_ctx* ctx, const lm_vec* in, const uint32_t* sel,
                          int64_t n, lm_vec* out) {
  size_t w = (size_t)lm_type_width(in->type);
  uint8_t* data = lm_eval_ctx_alloc(ctx, w * (size_t)(n ? n : 1));
  uint8_t* nulls = in->nulls ? lm_eval_ctx_alloc(ctx, (size_t)(n ? n : 1)) : NULL;
  if (data == NULL || (in->nulls != NULL && nulls == NULL)) return LAMINAR_ERR_NOMEM;
  const uint8_t* src = in->data;
  for (int64_t k = 0; k < n; k++) {
    memcpy(data + (size_t)k * w, src + (size_t)sel[k] * w, w);
    if (nulls != NULL) nulls[k] = in->nulls[sel[k]];
  }
  *out = (lm_vec){in->type, n, nulls, data};
  return LAMINAR_OK;
}

static laminar_code view_thaw(view_op* v);

/* The view's bytes for max_state_bytes: its live rows and their slots. */
static int64_t view_bytes(const view_op* v) { return lm_state_rowset_bytes(&v->rows); }

/* Before a chunk changes the state: the state the op's own (a checkpoint
 * may still read it), the scratch reset, dead bytes reclaimed. */
static laminar_code chunk_begin(view_op* v) {
  LM_TRY(view_thaw(v));
  lm_eval_ctx_reset(v->ctx);
  /* (not under a held batch's rows: their undo needs the room they left) */
  if (!v->held && v->u_n == 0) lm_state_rowset_compact(&v->rows);
  return LAMINAR_OK;
}

/* The end of a batch the view held (op.h): an abort applies its rows back
 * in reverse; either way they are forgotten. */
static laminar_code view_txn_end(void* a, void* b, bool commit) {
  (void)b;
  view_op* v = a;
  if (!commit) {
    for (int64_t i = v->u_n - 1; i >= 0; i--) {
      const uint8_t* p = v->u_bytes + v->u_off[i];
      int64_t len = v->u_off[i + 1] - v->u_off[i];
      apply_row(v, row_hash(p, len), p, len, -v->u_eff[i]);
    }
    v->retract_errors = v->u_errors;
    if (lm_op_bounded(&v->base)) (void)lm_op_account(&v->base, view_bytes(v), false);
  }
  v->held = false;
  v->u_n = 0;
  v->u_len = 0;
  return LAMINAR_OK;
}

/* Room for `bytes` more held bytes in u_bytes (a view's rows, a table's
 * keys), kept until the batch ends. */
static laminar_code hold_bytes(view_op* v, int64_t bytes) {
  if (v->u_len + bytes > v->u_bcap) {
    int64_t ncap = 2 * (v->u_len + bytes) + 64;
    LM_GROW_ARRAY(v->u_bytes, ncap);
    v->u_bcap = ncap;
  }
  return LAMINAR_OK;
}

/* A chunk of a batch that fans out: the view joins it (before any change),
 * and has room to keep the chunk's n rows of `bytes` encoded bytes. */
static laminar_code view_hold(view_op* v, int64_t n, int64_t bytes) {
  bool first;
  LM_TRY(lm_op_txn_join(&v->base, view_txn_end, &first));
  if (first) {
    v->held = true;
    v->u_n = 0;
    v->u_len = 0;
    v->u_errors = v->retract_errors;
  }
  if (v->u_n + n + 1 > v->u_cap) {
    int64_t ncap = 2 * (v->u_n + n + 1);
    LM_GROW_ARRAY(v->u_off, ncap);
    LM_GROW_ARRAY(v->u_eff, ncap);
    v->u_cap = ncap;
  }
  LM_TRY(hold_bytes(v, bytes));
  v->u_off[v->u_n] = v->u_len;
  return LAMINAR_OK;
}

static laminar_code view_on_chunk(lm_op* base, const lm_chunk* in) {
  view_op* v = (view_op*)base;
  int32_t ncols = v->columns.ncols;
  int64_t n = in->nrows;
  if (n == 0) return LAMINAR_OK;
  LM_TRY(chunk_begin(v));
  const lm_vec* wv = v->changelog ? &in->cols[ncols] : NULL;

  /* Encode every row first: sizes, then the bytes back to back. Room for
   * what goes on downstream (the rows that changed the view) too. */
  int64_t* offs = lm_eval_ctx_alloc(v->ctx, sizeof(int64_t) * (size_t)(n + 1));
  int64_t* eff = lm_eval_ctx_alloc(v->ctx, sizeof(int64_t) * (size_t)n);
  int64_t* moved = lm_eval_ctx_alloc(v->ctx, sizeof(int64_t) * (size_t)n);
  uint32_t* sel = lm_eval_ctx_alloc(v->ctx, sizeof(uint32_t) * (size_t)n);
  if (offs == NULL || eff == NULL || moved == NULL || sel == NULL)
    return LAMINAR_ERR_NOMEM;
  offs[0] = 0;
  for (int64_t r = 0; r < n; r++) {
    int64_t size = encoded_size(in->cols, NULL, ncols, r);
    if (size < 0) return LAMINAR_ERR_NOMEM; /* a string of 4 GiB or more */
    offs[r + 1] = offs[r] + size;
  }
  uint8_t* enc = lm_eval_ctx_alloc(v->ctx, (size_t)(offs[n] ? offs[n] : 1));
  if (enc == NULL) return LAMINAR_ERR_NOMEM;
  for (int64_t r = 0; r < n; r++) {
    uint8_t* p = enc + offs[r];
    for (int32_t c = 0; c < ncols; c++) p = encode_value(&in->cols[c], r, p);
  }
  /* Room for the worst case before the state changes: all or nothing. A
   * batch that fans out keeps the rows, and room to undo them all. */
  bool held = lm_op_txn_active(base);
  if (held) LM_TRY(view_hold(v, n, offs[n]));
  LM_TRY(lm_state_rowset_reserve(&v->rows, n + (held ? v->u_n : 0),
                                 offs[n] + (held ? v->u_len : 0)));

  bool pass = true; /* every row applied exactly its own weight */
  int64_t errors_before = v->retract_errors;
  for (int64_t r = 0; r < n; r++) {
    int64_t w = 1;
    if (wv != NULL) {
      if (wv->nulls != NULL && wv->nulls[r]) {
        v->retract_errors++; /* a delta without a weight: ignored */
        eff[r] = 0;
        pass = false;
        continue;
      }
      w = ((const int64_t*)wv->data)[r];
    }
    int64_t len = offs[r + 1] - offs[r];
    eff[r] =
        w == 0 ? 0 : apply_row(v, row_hash(enc + offs[r], len), enc + offs[r], len, w);
    if (eff[r] != w || w == 0) pass = false;
  }
  /* The bound (max_state_bytes), then what is downstream: a failure of
   * either takes the rows back in reverse (each applies the opposite of what
   * it did, within the room reserved), so the view is as before the chunk.
   * Behind a GROUP BY the bound was checked there: only accounted (op.h,
   * checks_bound). */
  laminar_code rc = LAMINAR_OK;
  if (lm_op_bounded(base) && lm_op_account(base, view_bytes(v), base->checks_bound) ==
                                 LAMINAR_ERR_MEMORY_LIMIT) {
    rc = LAMINAR_ERR_MEMORY_LIMIT;
  } else if (pass && wv != NULL) {
    rc = lm_op_emit(base, in); /* already columns + _weight */
  } else if (pass) {
    for (int32_t c = 0; c < ncols; c++) v->outs[c] = in->cols[c];
    v->outs[ncols] = (lm_vec){LM_TYPE_INT64, n, NULL, eff};
    lm_chunk out = {n, ncols + 1, v->outs, NULL};
    rc = lm_op_emit(base, &out);
  } else {
    /* Forward only the rows that changed the view, with what they changed. */
    int64_t m = 0;
    for (int64_t r = 0; r < n; r++) {
      if (eff[r] != 0) {
        sel[m] = (uint32_t)r;
        moved[m++] = eff[r];
      }
    }
    for (int32_t c = 0; c < ncols && m > 0 && rc == LAMINAR_OK; c++)
      rc = lm_op_gather(v->ctx, &in->cols[c], sel, m, &v->outs[c]);
    v->outs[ncols] = (lm_vec){LM_TYPE_INT64, m, NULL, moved};
    lm_chunk out = {m, ncols + 1, v->outs, NULL};
    if (rc == LAMINAR_OK && m > 0) rc = lm_op_emit(base, &out);
  }
  if (rc == LAMINAR_OK && held) { /* kept until the batch ends (reserved) */
    for (int64_t r = 0; r < n; r++) {
      if (eff[r] == 0) continue;
      int64_t len = offs[r + 1] - offs[r];
      memcpy(v->u_bytes + v->u_len, enc + offs[r], (size_t)len);
      v->u_eff[v->u_n] = eff[r];
      v->u_len += len;
      v->u_off[++v->u_n] = v->u_len;
    }
  }
  if (rc == LAMINAR_OK) return LAMINAR_OK;
  for (int64_t r = n - 1; r >= 0; r--) {
    int64_t len = offs[r + 1] - offs[r];
    if (eff[r] != 0)
      apply_row(v, row_hash(enc + offs[r], len), enc + offs[r], len, -eff[r]);
  }
  v->retract_errors = errors_before;
  if (lm_op_bounded(base)) lm_op_account(base, view_bytes(v), false);
  return rc;
}

/* ---- snapshot / restore -------------------------------------------------------------- */

/* A snapshot: the retraction errors, then the rows (lm_state_rowset_put:
 * the count, per row its weight and bytes). */
static laminar_code put_state(const lm_state_rowset_frozen* st, int64_t retract_errors,
                              lm_state_writer* w) {
  lm_state_put_i64(w, retract_errors);
  lm_state_rowset_put(st, w);
  return lm_state_writer_status(w);
}

static laminar_code view_snapshot(const lm_op* base, lm_state_writer* w) {
  view_op* v = (view_op*)base;
  lm_state_rowset_frozen st = lm_state_rowset_now(&v->rows);
  return put_state(&st, v->retract_errors, w);
}

/* ---- frozen views: checkpoints by copy-on-write ------------------------------------ */

/* The stall freezes the rows (lm_state_rowset_freeze: O(1), nothing
 * copied); the checkpoint encodes them from its own thread while the op
 * runs on, and the op copies them first if it changes them meanwhile
 * (view_thaw: a chunk, a restore). */

typedef struct view_frozen {
  lm_state_rowset_frozen st;
  int64_t retract_errors;
} view_frozen;

static laminar_code view_freeze(lm_op* base, void** out) {
  view_op* v = (view_op*)base;
  view_frozen* f = lm_malloc(sizeof *f);
  *out = f;
  if (f == NULL) return LAMINAR_ERR_NOMEM;
  /* Never still held by an earlier checkpoint: checkpoints write what they
   * froze before the next one begins (as windows, op/window_frozen.c). */
  f->st = lm_state_rowset_freeze(&v->rows);
  f->retract_errors = v->retract_errors;
  return LAMINAR_OK;
}

static laminar_code view_write_frozen(void* frozen, lm_state_writer* w) {
  view_frozen* f = frozen;
  laminar_code rc = w != NULL ? put_state(&f->st, f->retract_errors, w) : LAMINAR_OK;
  lm_state_rowset_release(&f->st);
  lm_free(f);
  return rc;
}

/* Make the rows the op's to change: copies when a checkpoint still reads
 * them. LAMINAR_ERR_NOMEM leaves the op as it was. */
static laminar_code view_thaw(view_op* v) {
  bool copied;
  LM_TRY(lm_state_rowset_thaw(&v->rows, &copied));
  if (copied) {
    v->thaws++;
    v->thawed_rows += v->rows.count;
  }
  return LAMINAR_OK;
}

static void clear_state(view_op* v) {
  lm_state_rowset_clear(&v->rows);
  v->retract_errors = 0;
  if (v->image != NULL) image_clear(v->image); /* the next lookup rebuilds it */
}

static laminar_code corrupt(laminar_error* err, const char* what) {
  return lm_error_set(err, LAMINAR_ERR_IO, "corrupt state: materialized view %s", what);
}

static laminar_code view_restore(lm_op* base, lm_state_reader* r, laminar_error* err) {
  view_op* v = (view_op*)base;
  if (view_thaw(v) != LAMINAR_OK) {
    return lm_error_set(err, LAMINAR_ERR_NOMEM, "out of memory restoring a view");
  }
  clear_state(v);
  int64_t errors = lm_state_get_i64(r);
  int64_t count = lm_state_get_i64(r);
  /* Each row takes at least 12 bytes (weight and length): bound the count
   * by what is left before reserving for it. */
  if (r->failed || errors < 0 || count < 0 || (uint64_t)count > (r->len - r->pos) / 12) {
    return corrupt(err, "header");
  }
  if (lm_state_rowset_reserve(&v->rows, count, 0) != LAMINAR_OK) {
    return lm_error_set(err, LAMINAR_ERR_NOMEM, "out of memory restoring a view");
  }
  for (int64_t k = 0; k < count; k++) {
    int64_t weight = lm_state_get_i64(r);
    lm_str row = lm_state_get_bytes(r);
    /* A table's row is its key's encoding then the row's, once (weight 1). */
    if (r->failed || weight <= 0 || (v->nkey > 0 && weight != 1))
      return corrupt(err, "row");
    const uint8_t* p = (const uint8_t*)row.ptr;
    int64_t klen = v->nkey > 0 ? row_check(&v->key_schema, p, row.len) : 0;
    if (klen < 0 || row_check(&v->columns, p + klen, row.len - klen) != row.len - klen)
      return corrupt(err, "row encoding");
    if (lm_state_rowset_reserve(&v->rows, 0, row.len) != LAMINAR_OK) {
      return lm_error_set(err, LAMINAR_ERR_NOMEM, "out of memory restoring a view");
    }
    bool found;
    int64_t id_len = v->nkey > 0 ? klen : row.len;
    uint64_t h = row_hash(p, id_len);
    int64_t i = lm_state_rowset_probe(&v->rows, h, p, id_len, &found);
    if (found) return corrupt(err, "duplicate row");
    lm_state_rowset_insert_at(&v->rows, i, h, p, row.len, klen, weight);
  }
  v->retract_errors = errors;
  return LAMINAR_OK;
}

/* ---- lifecycle ----------------------------------------------------------------------- */

static void view_destroy(lm_op* base) {
  view_op* v = (view_op*)base;
  lm_schema_free(&v->columns);
  lm_schema_free(&v->key_schema);
  lm_free(v->key_cols);
  lm_eval_ctx_destroy(v->ctx);
  lm_free(v->outs);
  lm_state_rowset_free(&v->rows);
  if (v->image != NULL) image_clear(v->image);
  lm_free(v->image);
  lm_free(v->u_bytes);
  lm_free(v->u_off);
  lm_free(v->u_eff);
  lm_free(v->tu);
  lm_free(v->tu_off);
  lm_free(v);
}

static const lm_op_vtable view_vtable = {
    .name = "materialize",
    .on_chunk = view_on_chunk,
    .on_watermark = NULL, /* a view holds no time-based state */
    .snapshot = view_snapshot,
    .restore = view_restore,
    .destroy = view_destroy,
    .freeze = view_freeze,
    .write_frozen = view_write_frozen,
};

laminar_code lm_op_view_create(const lm_schema* in_schema, lm_op** out) {
  *out = NULL;
  bool changelog = lm_op_view_is_changelog(in_schema);
  int32_t ncols = in_schema->ncols - (changelog ? 1 : 0);
  if (ncols <= 0) return LAMINAR_ERR_SCHEMA_INVALID;
  for (int32_t c = 0; c < ncols; c++) { /* the weight's name is reserved */
    if (lm_streq_nocase(in_schema->fields[c].name, LM_WEIGHT_COLUMN)) {
      return LAMINAR_ERR_SCHEMA_INVALID;
    }
  }
  view_op* v = lm_calloc(1, sizeof *v);
  if (v == NULL) return LAMINAR_ERR_NOMEM;
  v->base.vt = &view_vtable;
  v->changelog = changelog;
  lm_state_rowset_init(&v->rows, false);
  lm_schema_init_empty(&v->columns);
  bool ok = lm_eval_ctx_create(&v->ctx) == LAMINAR_OK &&
            (v->outs = lm_calloc((size_t)ncols + 1, sizeof(lm_vec))) != NULL;
  for (int32_t c = 0; ok && c < ncols; c++) {
    const lm_field* f = &in_schema->fields[c];
    ok = lm_schema_add(&v->columns, f->name, f->type, f->not_null) == 0;
  }
  ok = ok && lm_schema_copy(&v->columns, &v->base.out_schema) == 0 &&
       lm_schema_add(&v->base.out_schema, LM_WEIGHT_COLUMN, LM_TYPE_INT64, true) == 0;
  if (!ok) {
    lm_schema_free(&v->base.out_schema);
    view_destroy(&v->base);
    return LAMINAR_ERR_NOMEM;
  }
  *out = &v->base;
  return LAMINAR_OK;
}

lm_op* lm_op_view_of(const lm_op* chain) {
  if (chain == NULL) return NULL;
  while (chain->next != NULL) chain = chain->next;
  return chain->vt == &view_vtable || chain->vt == &table_vtable ? (lm_op*)chain : NULL;
}

const lm_schema* lm_op_view_columns(const lm_op* view) {
  return &((const view_op*)view)->columns;
}

int64_t lm_op_view_rows(const lm_op* view) { return ((const view_op*)view)->rows.count; }

int64_t lm_op_view_retract_errors(const lm_op* view) {
  return ((const view_op*)view)->retract_errors;
}

int64_t lm_op_view_thaws(const lm_op* view, int64_t* out_rows) {
  const view_op* v = (const view_op*)view;
  *out_rows = v->thawed_rows;
  return v->thaws;
}

/* ---- tables: the keyed form (lm_op_table_create) ------------------------------------ */

/* A table holds one row per primary key. Its input is a changelog of the
 * table's columns and `_weight`: a weight > 0 (or NULL) upserts the row, a
 * weight <= 0 deletes the row of that key (the other values are ignored).
 * Each change goes out as a proper changelog: an upsert over a different row
 * is (old, -1) then (new, +1), an upsert of the row already there is
 * nothing, a delete of a key not there is nothing. Rows of one chunk apply in
 * order, so a later row sees an earlier one's effect. */

/* Decode n encoded rows rows[k] of `columns` into out[] vectors whose memory
 * comes from ctx; strings are views of the encoded rows, which must outlive
 * the vectors' use (the chunk being processed). */
/* Decode the encoded row p of `columns` into row r of the column arrays
 * data[c] / nulls[c] (1 for a NULL, then any_null[c] set when given).
 * STRING values are views of p, or copies in `strings` when given. False
 * when a copy ran out of memory. */
static bool decode_row(const lm_schema* columns, const uint8_t* p, int64_t r,
                       uint8_t* const* data, uint8_t* const* nulls, bool* any_null,
                       lm_pool* strings) {
  for (int32_t c = 0; c < columns->ncols; c++) {
    lm_type t = columns->fields[c].type;
    size_t w = (size_t)lm_type_width(t);
    uint8_t* at = data[c] + (size_t)r * w;
    nulls[c][r] = *p++ == 0;
    if (nulls[c][r]) {
      if (any_null != NULL) any_null[c] = true;
      memset(at, 0, w);
      continue;
    }
    if (lm_type_is_bytes(t)) {
      uint32_t len;
      memcpy(&len, p, 4);
      const char* bytes = (const char*)p + 4; /* a view of the row */
      if (strings != NULL && (bytes = lm_pool_copy(strings, bytes, len)) == NULL)
        return false;
      lm_str str = {bytes, (int64_t)len};
      memcpy(at, &str, sizeof str);
      p += 4 + len;
    } else {
      memcpy(at, p, w);
      p += w;
    }
  }
  return true;
}

static laminar_code decode_into(lm_eval_ctx* ctx, const lm_schema* columns,
                                const uint8_t* const* rows, int64_t n, lm_vec* out) {
  int32_t ncols = columns->ncols;
  uint8_t** data = lm_eval_ctx_alloc(ctx, sizeof(uint8_t*) * (size_t)(ncols ? ncols : 1));
  uint8_t** nulls =
      lm_eval_ctx_alloc(ctx, sizeof(uint8_t*) * (size_t)(ncols ? ncols : 1));
  if (data == NULL || nulls == NULL) return LAMINAR_ERR_NOMEM;
  for (int32_t c = 0; c < ncols; c++) {
    size_t w = (size_t)lm_type_width(columns->fields[c].type);
    data[c] = lm_eval_ctx_alloc(ctx, w * (size_t)(n ? n : 1));
    nulls[c] = lm_eval_ctx_alloc(ctx, (size_t)(n ? n : 1));
    if (data[c] == NULL || nulls[c] == NULL) return LAMINAR_ERR_NOMEM;
    out[c] = (lm_vec){columns->fields[c].type, n, nulls[c], data[c]};
  }
  for (int64_t r = 0; r < n; r++)
    (void)decode_row(columns, rows[r], r, data, nulls, NULL, NULL);
  return LAMINAR_OK;
}

/* ---- the probe image of a table: what lookup joins read ---------------------------- */

/* A lookup join probes its table once per input row. The rowset answers with
 * the row's encoding: a key to encode and hash per row, a 40-byte slot and
 * the row's bytes to miss the cache on, a row to decode. For a table keyed
 * by one integer column the probe reads a columnar image instead: per
 * position each column's value (an array per column) and a state byte. A key
 * finds its position by a subtraction when the keys are dense (their span at
 * most twice the rows plus 64: positions in key order) or in a flat
 * open-addressing array of (key, position) pairs otherwise, and a match
 * gathers each column's value column by column, decoding nothing (issue 21:
 * W1's stream against a 10^6-row table).
 *
 * The image is a cache of the rowset, which stays the table's state
 * (changelog, checkpoints, ad-hoc SELECT). The first lookup after it went
 * missing or stale builds it (image_build). A table chunk marks the keys it
 * writes before it changes anything (image_touch; a chunk taken back leaves
 * its marks, which are merely conservative): a marked position, or any key
 * the image has no position for once a key was added without one, is looked
 * up in the rowset. When the marks exceed an eighth of the image (plus
 * 1,024), the next lookup rebuilds it: O(1) amortized per write. Out of
 * memory, a lookup reads the rowset alone. It is a second copy of the
 * table that max_state_bytes does not count, so a table under a state
 * bound (lm_op_bounded) has none: its lookups read the rowset. Owner thread
 * of the table (lookups and writes run there). */

enum { IMG_ABSENT = 0, IMG_LIVE = 1, IMG_STALE = 2 };

typedef struct image_slot {
  int64_t key;
  int64_t pos1; /* position + 1; 0: an empty slot */
} image_slot;

struct table_image {
  bool valid;
  bool dense; /* a key's position is key - base */
  int64_t base;
  int64_t npos;   /* positions */
  uint8_t* state; /* per position: IMG_ABSENT, IMG_LIVE or IMG_STALE */
  int32_t ncols;
  uint8_t** data;    /* per column: npos values */
  uint8_t** nulls;   /* per column: npos NULL flags, or NULL when none is NULL */
  image_slot* slots; /* not dense: mask + 1 slots, at most half full */
  uint64_t mask;
  lm_pool strings; /* the STRING values' bytes */
  int64_t rows;    /* live positions when built */
  int64_t marks;   /* positions marked, and keys written without a position */
  int64_t missing; /* keys written without a position */
};

/* Key types the image serves: the integer ones (values as lm_vec_int_at). */
static bool image_key_type(lm_type t) {
  switch (t) {
    case LM_TYPE_INT8:
    case LM_TYPE_INT16:
    case LM_TYPE_INT32:
    case LM_TYPE_DATE:
    case LM_TYPE_INT64:
    case LM_TYPE_TIMESTAMP: return true;
    default: return false;
  }
}

static table_image* image_new(void) {
  table_image* im = lm_calloc(1, sizeof *im);
  if (im != NULL) lm_pool_init(&im->strings);
  return im;
}

/* Free what the image holds; it is then not valid (the struct stays). */
static void image_clear(table_image* im) {
  for (int32_t c = 0; c < im->ncols; c++) {
    if (im->data != NULL) lm_free(im->data[c]);
    if (im->nulls != NULL) lm_free(im->nulls[c]);
  }
  lm_free(im->data);
  lm_free(im->nulls);
  lm_free(im->state);
  lm_free(im->slots);
  lm_pool_free(&im->strings);
  memset(im, 0, sizeof *im);
  lm_pool_init(&im->strings);
}

/* The position of key k: dense, any key in the span (its state says whether
 * a row is there); else the position of its pair, or -1. */
static inline int64_t image_locate(const table_image* im, int64_t k) {
  if (im->dense) {
    uint64_t d = (uint64_t)k - (uint64_t)im->base;
    return d < (uint64_t)im->npos ? (int64_t)d : -1;
  }
  for (uint64_t i = lm_state_mix64((uint64_t)k) & im->mask;; i = (i + 1) & im->mask) {
    const image_slot* s = &im->slots[i];
    if (s->pos1 == 0) return -1;
    if (s->key == k) return s->pos1 - 1;
  }
}

/* The key of a table entry's encoding (its key's first) of type t; false for
 * a NULL key. */
static bool entry_key(lm_type t, const uint8_t* p, int64_t* out) {
  if (p[0] == 0) return false;
  int64_t raw = 0; /* little-endian (static_assert above): the value's bytes first */
  size_t w = (size_t)lm_type_width(t);
  memcpy(&raw, p + 1, w < sizeof raw ? w : sizeof raw); /* (integer types: w <= 8) */
  lm_vec one = {t, 1, NULL, &raw};
  *out = lm_vec_int_at(&one, 0);
  return true;
}

/* (Re)build table v's image from its rows. LAMINAR_ERR_NOMEM leaves it not
 * valid (lookups then read the rowset). Cache-conscious: the slots are read
 * in order (their rows' bytes prefetched) into a list of keys and rows, and
 * the rows are decoded in the order of their positions (dense: key order),
 * so the columns are written front to back; a 10^6-row table built three
 * times faster so than slot by slot. Not inlined: the lookup's cold path. */
__attribute__((noinline)) static laminar_code image_build(const view_op* v,
                                                          table_image* im) {
  image_clear(im);
  const lm_state_rowset* rs = &v->rows;
  lm_type kt = v->key_schema.fields[0].type;
  int32_t ncols = v->columns.ncols;
  size_t cnt = (size_t)(rs->count ? rs->count : 1);
  int64_t* keys = lm_malloc(sizeof(int64_t) * cnt);
  const uint8_t** rows = lm_malloc(sizeof(uint8_t*) * cnt);
  const uint8_t** at_pos = NULL; /* dense: per position its row, NULL none */
  bool* any_null = lm_calloc((size_t)(ncols ? ncols : 1), sizeof(bool));
  bool ok = keys != NULL && rows != NULL && any_null != NULL;
  enum { AHEAD = 16 };
  int64_t n = 0, lo = INT64_MAX, hi = INT64_MIN, k;
  for (int64_t i = 0; ok && i < rs->cap; i++) {
    if (i + AHEAD < rs->cap && rs->slots[i + AHEAD].weight != 0)
      __builtin_prefetch(rs->bytes + rs->slots[i + AHEAD].off);
    const lm_state_rowset_slot* s = &rs->slots[i];
    if (s->weight == 0 || !entry_key(kt, rs->bytes + s->off, &k)) continue;
    keys[n] = k;
    rows[n++] = rs->bytes + s->off + s->klen;
    lo = k < lo ? k : lo;
    hi = k > hi ? k : hi;
  }
  uint64_t span = n > 0 ? (uint64_t)hi - (uint64_t)lo : 0;
  im->dense = n == 0 || span < (uint64_t)n * 2 + 64;
  im->base = n > 0 ? lo : 0;
  im->npos = n == 0 ? 0 : im->dense ? (int64_t)span + 1 : n;
  size_t np = (size_t)(im->npos ? im->npos : 1);
  im->ncols = ncols;
  im->state = lm_calloc(np, 1);
  im->data = lm_calloc((size_t)(ncols ? ncols : 1), sizeof *im->data);
  im->nulls = lm_calloc((size_t)(ncols ? ncols : 1), sizeof *im->nulls);
  ok = ok && im->state != NULL && im->data != NULL && im->nulls != NULL;
  for (int32_t c = 0; ok && c < ncols; c++) {
    im->data[c] = lm_malloc(np * (size_t)lm_type_width(v->columns.fields[c].type));
    im->nulls[c] = lm_malloc(np);
    ok = im->data[c] != NULL && im->nulls[c] != NULL;
  }
  if (ok && im->dense) {
    at_pos = lm_calloc(np, sizeof *at_pos);
    ok = at_pos != NULL;
    for (int64_t e = 0; ok && e < n; e++) at_pos[keys[e] - lo] = rows[e];
  } else if (ok) {
    uint64_t size = 16;
    while (size < (uint64_t)n * 2) size *= 2;
    im->slots = lm_calloc((size_t)size, sizeof *im->slots);
    im->mask = size - 1;
    ok = im->slots != NULL;
  }
  /* Position p holds the row of key base + p (dense) or list entry p. */
  for (int64_t p = 0; ok && p < im->npos; p++) {
    int64_t ahead = p + AHEAD;
    if (ahead < im->npos) {
      const uint8_t* ra = im->dense ? at_pos[ahead] : rows[ahead];
      if (ra != NULL) __builtin_prefetch(ra);
      if (!im->dense)
        __builtin_prefetch(&im->slots[lm_state_mix64((uint64_t)keys[ahead]) & im->mask]);
    }
    const uint8_t* row = im->dense ? at_pos[p] : rows[p];
    if (row == NULL) continue; /* a key the span lacks */
    if (!im->dense) {
      uint64_t j = lm_state_mix64((uint64_t)keys[p]) & im->mask;
      while (im->slots[j].pos1 != 0) j = (j + 1) & im->mask;
      im->slots[j] = (image_slot){keys[p], p + 1};
    }
    ok = decode_row(&v->columns, row, p, im->data, im->nulls, any_null, &im->strings);
    im->state[p] = IMG_LIVE;
  }
  for (int32_t c = 0; ok && c < ncols; c++) {
    if (any_null[c]) continue;
    lm_free(im->nulls[c]); /* no NULL: none to gather */
    im->nulls[c] = NULL;
  }
  lm_free(any_null);
  lm_free(keys);
  lm_free(rows);
  lm_free(at_pos);
  if (!ok) {
    image_clear(im);
    return LAMINAR_ERR_NOMEM;
  }
  im->rows = n;
  im->valid = true;
  return LAMINAR_OK;
}

/* A table chunk is about to write the keys key[0..n): mark them. */
static void image_touch(table_image* im, const lm_vec* key, int64_t n) {
  if (!im->valid) return;
  for (int64_t r = 0; r < n; r++) {
    if (key->nulls != NULL && key->nulls[r]) continue; /* a NULL key never matches */
    int64_t p = image_locate(im, lm_vec_int_at(key, r));
    if (p < 0) {
      im->missing++;
      im->marks++;
    } else if (im->state[p] != IMG_STALE) {
      im->state[p] = IMG_STALE;
      im->marks++;
    }
  }
}

/* Column values at positions pos[0..n) (-1: NULL) into data / nulls; w bytes
 * a value (a constant where inlined, so each copy is one load and store). */
static inline __attribute__((always_inline)) void gather_w(const uint8_t* src,
                                                           const uint8_t* src_nulls,
                                                           size_t w, const int64_t* pos,
                                                           int64_t n, uint8_t* data,
                                                           uint8_t* nulls) {
  for (int64_t r = 0; r < n; r++) {
    int64_t p = pos[r];
    if (p < 0) {
      memset(data + (size_t)r * w, 0, w);
      nulls[r] = 1;
    } else {
      memcpy(data + (size_t)r * w, src + (size_t)p * w, w);
      nulls[r] = src_nulls != NULL ? src_nulls[p] : 0;
    }
  }
}

static void gather_column(const uint8_t* src, const uint8_t* src_nulls, size_t w,
                          const int64_t* pos, int64_t n, uint8_t* data, uint8_t* nulls) {
  switch (w) {
    case 1: gather_w(src, src_nulls, 1, pos, n, data, nulls); break;
    case 2: gather_w(src, src_nulls, 2, pos, n, data, nulls); break;
    case 4: gather_w(src, src_nulls, 4, pos, n, data, nulls); break;
    case 8: gather_w(src, src_nulls, 8, pos, n, data, nulls); break;
    case 16: gather_w(src, src_nulls, 16, pos, n, data, nulls); break;
    default: gather_w(src, src_nulls, w, pos, n, data, nulls); break;
  }
}

/* Whether row r of `in` has a NULL in a key column of table v. */
static bool key_is_null(const view_op* v, const lm_chunk* in, int64_t r) {
  for (int32_t k = 0; k < v->nkey; k++) {
    const lm_vec* c = &in->cols[v->key_cols[k]];
    if (c->nulls != NULL && c->nulls[r]) return true;
  }
  return false;
}

/* A change table_on_chunk made to its rows: a key inserted, or the slot a
 * key had before it was replaced or removed. */
typedef enum { TABLE_INSERTED, TABLE_REPLACED, TABLE_REMOVED } table_change;

typedef struct table_undo {
  table_change kind;
  const uint8_t* key;
  int64_t klen;
  uint64_t hash;
  lm_state_rowset_slot old;
} table_undo;

/* Take the changes undo[0..n) back, newest first: the rows' bytes appended
 * since (nbytes0, dead0) are forgotten, the old ones are still in the
 * buffer (compaction runs only at a chunk's start). Allocates nothing. */
static void table_take_back(lm_state_rowset* rs, const table_undo* undo, int64_t n,
                            int64_t nbytes0, int64_t dead0) {
  for (int64_t j = n - 1; j >= 0; j--) {
    const table_undo* u = &undo[j];
    bool found;
    int64_t i = lm_state_rowset_probe(rs, u->hash, u->key, u->klen, &found);
    if (u->kind == TABLE_INSERTED) {
      lm_state_rowset_remove_at(rs, i);
    } else if (u->kind == TABLE_REPLACED) {
      rs->slots[i] = u->old;
    } else {
      rs->slots[i] = u->old; /* the empty slot its probe ends at */
      rs->count++;
    }
  }
  rs->nbytes = nbytes0;
  rs->dead = dead0;
}

/* The end of a batch the table held (op.h, lm_op_txn): an abort takes its
 * changes back newest first (their keys' bytes kept in u_bytes) and the
 * retraction errors; either way they are forgotten. */
static laminar_code table_txn_end(void* a, void* b, bool commit) {
  (void)b;
  view_op* v = a;
  if (!commit) {
    for (int64_t i = 0; i < v->tu_n; i++) v->tu[i].key = v->u_bytes + v->tu_off[i];
    table_take_back(&v->rows, v->tu, v->tu_n, v->t_nbytes0, v->t_dead0);
    v->retract_errors = v->u_errors;
    /* A lookup later in the batch may have rebuilt the probe image from the
     * rows taken back: the next lookup rebuilds it. */
    if (v->image != NULL) image_clear(v->image);
    if (lm_op_bounded(&v->base)) (void)lm_op_account(&v->base, view_bytes(v), false);
  }
  v->held = false;
  v->tu_n = 0;
  v->u_len = 0;
  return LAMINAR_OK;
}

/* A chunk of a batch that fans out: the table joins it (before any change)
 * and has room to keep the chunk's n changes, their keys of `bytes` bytes. */
static laminar_code table_hold(view_op* v, int64_t n, int64_t bytes) {
  bool first;
  LM_TRY(lm_op_txn_join(&v->base, table_txn_end, &first));
  if (first) {
    v->held = true;
    v->tu_n = 0;
    v->u_len = 0;
    v->u_errors = v->retract_errors;
    v->t_nbytes0 = v->rows.nbytes;
    v->t_dead0 = v->rows.dead;
  }
  if (v->tu_n + n > v->tu_cap) {
    int64_t ncap = 2 * (v->tu_n + n);
    LM_GROW_ARRAY(v->tu, ncap);
    LM_GROW_ARRAY(v->tu_off, ncap);
    v->tu_cap = ncap;
  }
  LM_TRY(hold_bytes(v, bytes));
  return LAMINAR_OK;
}

static laminar_code table_chunk(lm_op* base, const lm_chunk* in) {
  view_op* v = (view_op*)base;
  int32_t ncols = v->columns.ncols;
  int64_t n = in->nrows;
  if (n == 0) return LAMINAR_OK;
  LM_TRY(chunk_begin(v));
  /* The keys it writes are the probe image's to read in the rowset from now
   * on (marked before any change: a chunk taken back leaves marks that are
   * merely conservative). */
  if (v->image != NULL) image_touch(v->image, &in->cols[v->key_cols[0]], n);
  const lm_vec* wv = v->changelog ? &in->cols[ncols] : NULL; /* NULL: all upserts */

  /* Each row encoded as key then row, back to back. */
  int64_t* offs = lm_eval_ctx_alloc(v->ctx, sizeof(int64_t) * (size_t)(n + 1));
  int64_t* klens = lm_eval_ctx_alloc(v->ctx, sizeof(int64_t) * (size_t)n);
  if (offs == NULL || klens == NULL) return LAMINAR_ERR_NOMEM;
  offs[0] = 0;
  for (int64_t r = 0; r < n; r++) {
    klens[r] = encoded_size(in->cols, v->key_cols, v->nkey, r);
    int64_t size = encoded_size(in->cols, NULL, ncols, r);
    if (klens[r] < 0 || size < 0) return LAMINAR_ERR_NOMEM; /* a string of 4 GiB+ */
    offs[r + 1] = offs[r] + klens[r] + size;
  }
  uint8_t* enc = lm_eval_ctx_alloc(v->ctx, (size_t)(offs[n] ? offs[n] : 1));
  /* Output: at most two rows per input row (old -1, new +1). */
  const uint8_t** outs = lm_eval_ctx_alloc(v->ctx, sizeof(uint8_t*) * (size_t)(2 * n));
  int64_t* weights = lm_eval_ctx_alloc(v->ctx, sizeof(int64_t) * (size_t)(2 * n));
  /* Old rows copied out: at most what the state and this chunk hold. */
  uint8_t* old = lm_eval_ctx_alloc(v->ctx, (size_t)(v->rows.nbytes + offs[n] + 1));
  /* What each row changed, to take it back (at most one entry a row). */
  table_undo* undo = lm_eval_ctx_alloc(v->ctx, sizeof(table_undo) * (size_t)n);
  if (enc == NULL || outs == NULL || weights == NULL || old == NULL || undo == NULL)
    return LAMINAR_ERR_NOMEM;
  for (int64_t r = 0; r < n; r++) {
    uint8_t* p = enc + offs[r];
    for (int32_t k = 0; k < v->nkey; k++)
      p = encode_value(&in->cols[v->key_cols[k]], r, p);
    for (int32_t c = 0; c < ncols; c++) p = encode_value(&in->cols[c], r, p);
  }
  /* Room for the worst case before the state changes (every row new); a
   * batch that fans out keeps the changes, and room to take them all back. */
  bool held = lm_op_txn_active(base);
  if (held) LM_TRY(table_hold(v, n, offs[n]));
  LM_TRY(lm_state_rowset_reserve(&v->rows, n, offs[n]));

  lm_state_rowset* rs = &v->rows;
  int64_t m = 0, old_pos = 0, nundo = 0;
  int64_t nbytes0 = rs->nbytes, dead0 = rs->dead;
  for (int64_t r = 0; r < n; r++) {
    const uint8_t* p = enc + offs[r];
    int64_t len = offs[r + 1] - offs[r], klen = klens[r];
    bool upsert = wv == NULL || (wv->nulls != NULL && wv->nulls[r]) ||
                  ((const int64_t*)wv->data)[r] > 0;
    if (v->fed && key_is_null(v, in, r)) {
      v->retract_errors++; /* a fed row without a key: not applied, counted */
      continue;
    }
    uint64_t h = row_hash(p, klen);
    bool found;
    int64_t i = lm_state_rowset_probe(rs, h, p, klen, &found);
    if (found) {
      const lm_state_rowset_slot* s = &rs->slots[i];
      const uint8_t* at = lm_state_rowset_data(rs, i);
      bool same = s->len == len && memcmp(at, p, (size_t)len) == 0;
      if (upsert && same) continue;             /* the same row again */
      if (!upsert && !same && v->fed) continue; /* retracts a row no longer held */
      /* The old row goes out: copied, as its bytes may be reused below. */
      int64_t olen = s->len - s->klen;
      uint8_t* copy = old + old_pos;
      memcpy(copy, at + s->klen, (size_t)olen);
      old_pos += olen;
      outs[m] = copy;
      weights[m++] = -1;
      undo[nundo++] =
          (table_undo){upsert ? TABLE_REPLACED : TABLE_REMOVED, p, klen, h, *s};
      if (!upsert) {
        lm_state_rowset_remove_at(rs, i);
        continue;
      }
      lm_state_rowset_replace_at(rs, i, p, len); /* room reserved above */
    } else {
      if (!upsert) continue; /* no row of that key */
      lm_state_rowset_insert_at(rs, i, h, p, len, klen, 1);
      undo[nundo++] = (table_undo){TABLE_INSERTED, p, klen, h, {0}};
    }
    outs[m] = p + klen;
    weights[m++] = 1;
  }
  /* The bound, then what is downstream: a failure of either takes the rows
   * back (issue 20), so the table is as before the chunk. */
  laminar_code rc = LAMINAR_OK;
  if (lm_op_bounded(base)) rc = lm_op_account(base, view_bytes(v), false);
  if (rc == LAMINAR_OK && m > 0) {
    rc = decode_into(v->ctx, &v->columns, outs, m, v->outs);
    v->outs[ncols] = (lm_vec){LM_TYPE_INT64, m, NULL, weights};
    lm_chunk out = {m, ncols + 1, v->outs, NULL};
    if (rc == LAMINAR_OK) rc = lm_op_emit(base, &out);
  }
  if (rc == LAMINAR_OK && held) { /* kept until the batch ends (reserved) */
    for (int64_t u = 0; u < nundo; u++) {
      memcpy(v->u_bytes + v->u_len, undo[u].key, (size_t)undo[u].klen);
      v->tu_off[v->tu_n] = v->u_len;
      v->tu[v->tu_n++] = undo[u];
      v->u_len += undo[u].klen;
    }
  }
  if (rc == LAMINAR_OK) return LAMINAR_OK;
  table_take_back(rs, undo, nundo, nbytes0, dead0);
  if (lm_op_bounded(base)) lm_op_account(base, view_bytes(v), false);
  return rc;
}

static laminar_code table_on_chunk(lm_op* base, const lm_chunk* in) {
  laminar_code rc = table_chunk(base, in);
  if (rc == LAMINAR_ERR_NOMEM) {
    lm_state_budget_fail(base->budget, rc,
                         "out of memory; the batch was not applied (table unchanged)");
  }
  return rc;
}

static const lm_op_vtable table_vtable = {
    .name = "table",
    .on_chunk = table_on_chunk,
    .on_watermark = NULL,
    .snapshot = view_snapshot,
    .restore = view_restore,
    .destroy = view_destroy,
    .freeze = view_freeze,
    .write_frozen = view_write_frozen,
};

static laminar_code table_create(const lm_schema* in_schema, const int32_t* key_cols,
                                 int32_t nkey, bool fed, lm_op** out) {
  *out = NULL;
  bool changelog = lm_op_view_is_changelog(in_schema);
  if ((!changelog && !fed) || nkey <= 0) return LAMINAR_ERR_SCHEMA_INVALID;
  for (int32_t k = 0; k < nkey; k++) {
    if (key_cols[k] < 0 || key_cols[k] >= in_schema->ncols - (changelog ? 1 : 0))
      return LAMINAR_ERR_SCHEMA_INVALID;
  }
  LM_TRY(lm_op_view_create(in_schema, out));
  view_op* v = (view_op*)*out;
  v->base.vt = &table_vtable;
  v->fed = fed;
  lm_state_rowset_init(&v->rows, true); /* empty still: nothing to free */
  v->key_cols = lm_malloc(sizeof(int32_t) * (size_t)nkey);
  bool ok = v->key_cols != NULL;
  for (int32_t k = 0; ok && k < nkey; k++) {
    const lm_field* f = &in_schema->fields[key_cols[k]];
    v->key_cols[k] = key_cols[k];
    ok = lm_schema_add(&v->key_schema, f->name, f->type, f->not_null) == 0;
  }
  if (ok && nkey == 1 && image_key_type(in_schema->fields[key_cols[0]].type)) {
    ok = (v->image = image_new()) != NULL;
  }
  if (!ok) {
    lm_schema_free(&v->base.out_schema);
    view_destroy(&v->base);
    *out = NULL;
    return LAMINAR_ERR_NOMEM;
  }
  v->nkey = nkey;
  return LAMINAR_OK;
}

laminar_code lm_op_table_create(const lm_schema* in_schema, const int32_t* key_cols,
                                int32_t nkey, lm_op** out) {
  return table_create(in_schema, key_cols, nkey, false, out);
}

laminar_code lm_op_table_create_fed(const lm_schema* in_schema, const int32_t* key_cols,
                                    int32_t nkey, lm_op** out) {
  return table_create(in_schema, key_cols, nkey, true, out);
}

bool lm_op_table_is_fed(const lm_op* op) {
  return lm_op_is_table(op) && ((const view_op*)op)->fed;
}

bool lm_op_is_table(const lm_op* op) { return op != NULL && op->vt == &table_vtable; }

/* Probe the rowset for rows sel[0..ns) of keys (sel NULL: rows 0..ns-1):
 * the matched rows' encodings rows[0..*out_m) and their input rows at[]. */
static laminar_code probe_rowset(const view_op* v, lm_eval_ctx* ctx, const lm_vec* keys,
                                 const uint32_t* sel, int64_t ns, const uint8_t** rows,
                                 uint32_t* at, int64_t* out_m) {
  int32_t nkey = v->nkey;
  size_t cnt = (size_t)(ns ? ns : 1);
  int64_t* offs = lm_eval_ctx_alloc(ctx, sizeof(int64_t) * (cnt + 1));
  uint64_t* hashes = lm_eval_ctx_alloc(ctx, sizeof(uint64_t) * cnt);
  if (offs == NULL || hashes == NULL) return LAMINAR_ERR_NOMEM;
  /* Pass 1: every key encoded back to back and hashed; a NULL key (or an
   * empty table) gets an empty encoding and is not looked up. */
  offs[0] = 0;
  for (int64_t i = 0; i < ns; i++) {
    int64_t r = sel != NULL ? sel[i] : i;
    bool null_key = v->rows.count == 0;
    for (int32_t k = 0; k < nkey; k++)
      null_key |= keys[k].nulls != NULL && keys[k].nulls[r];
    int64_t klen = null_key ? 0 : encoded_size(keys, NULL, nkey, r);
    if (klen < 0) return LAMINAR_ERR_NOMEM;
    offs[i + 1] = offs[i] + klen;
  }
  uint8_t* enc = lm_eval_ctx_alloc(ctx, (size_t)(offs[ns] ? offs[ns] : 1));
  if (enc == NULL) return LAMINAR_ERR_NOMEM;
  for (int64_t i = 0; i < ns; i++) {
    if (offs[i + 1] == offs[i]) continue;
    int64_t r = sel != NULL ? sel[i] : i;
    uint8_t* p = enc + offs[i];
    for (int32_t k = 0; k < nkey; k++) p = encode_value(&keys[k], r, p);
    hashes[i] = row_hash(enc + offs[i], offs[i + 1] - offs[i]);
  }
  /* Pass 2: probe, with the slot of a row PREFETCH rows ahead already asked
   * for -- a large table's slots and rows are cache misses (on this machine a
   * 10^6-row table's lookups took half the time with the prefetches). */
  enum { PREFETCH = 16 };
  int64_t m = 0;
  for (int64_t i = 0; i < ns; i++) {
    int64_t ahead = i + PREFETCH;
    if (ahead < ns && offs[ahead + 1] != offs[ahead])
      lm_state_rowset_prefetch(&v->rows, hashes[ahead], 0);
    /* Halfway there its slot is in cache: ask for the row's bytes too. */
    int64_t half = i + PREFETCH / 2;
    if (half < ns && offs[half + 1] != offs[half])
      lm_state_rowset_prefetch(&v->rows, hashes[half], 1);
    int64_t klen = offs[i + 1] - offs[i];
    if (klen == 0) continue;
    const lm_state_rowset_slot* sl =
        lm_state_rowset_find(&v->rows, hashes[i], enc + offs[i], klen);
    if (sl == NULL) continue;
    rows[m] = v->rows.bytes + sl->off + sl->klen;
    at[m++] = (uint32_t)(sel != NULL ? sel[i] : i);
  }
  *out_m = m;
  return LAMINAR_OK;
}

/* The lookup of n keys in the rowset alone (a table without an image). */
static laminar_code lookup_rowset(const view_op* v, lm_eval_ctx* ctx, const lm_vec* keys,
                                  int64_t n, lm_vec* out_cols, uint8_t* found) {
  size_t cnt = (size_t)(n ? n : 1);
  const uint8_t** rows = lm_eval_ctx_alloc(ctx, sizeof(uint8_t*) * cnt);
  uint32_t* at = lm_eval_ctx_alloc(ctx, sizeof(uint32_t) * cnt);
  if (rows == NULL || at == NULL) return LAMINAR_ERR_NOMEM;
  int64_t m;
  LM_TRY(probe_rowset(v, ctx, keys, NULL, n, rows, at, &m));
  memset(found, 0, cnt);
  for (int64_t j = 0; j < m; j++) found[at[j]] = 1;
  /* The matched rows decoded in order, then spread to their input rows. */
  LM_TRY(decode_into(ctx, &v->columns, rows, m, out_cols));
  if (m == n) return LAMINAR_OK;
  for (int32_t c = 0; c < v->columns.ncols; c++) {
    size_t w = (size_t)lm_type_width(out_cols[c].type);
    uint8_t* data = lm_eval_ctx_alloc(ctx, w * cnt);
    uint8_t* nulls = lm_eval_ctx_alloc(ctx, cnt);
    if (data == NULL || nulls == NULL) return LAMINAR_ERR_NOMEM;
    memset(data, 0, w * cnt);
    for (int64_t r = 0, j = 0; r < n; r++) {
      nulls[r] = !found[r] || out_cols[c].nulls[j];
      if (found[r])
        memcpy(data + (size_t)r * w, (const uint8_t*)out_cols[c].data + j * w, w);
      j += found[r];
    }
    out_cols[c] = (lm_vec){out_cols[c].type, n, nulls, data};
  }
  return LAMINAR_OK;
}

laminar_code lm_op_table_lookup(const lm_op* table, lm_eval_ctx* ctx, const lm_vec* keys,
                                int64_t n, lm_vec* out_cols, uint8_t* found) {
  const view_op* v = (const view_op*)table;
  /* The cache the lookup may rebuild; none under a state bound. */
  table_image* im = lm_op_bounded(table) ? NULL : v->image;
  if (im != NULL && v->rows.count > 0 && (!im->valid || im->marks * 8 > im->rows + 1024))
    (void)image_build(v, im); /* out of memory: the rowset alone */
  if (im == NULL || !im->valid || v->rows.count == 0)
    return lookup_rowset(v, ctx, keys, n, out_cols, found);
  size_t cnt = (size_t)(n ? n : 1);
  int32_t ncols = v->columns.ncols;
  int64_t* pos = lm_eval_ctx_alloc(ctx, sizeof(int64_t) * cnt);
  uint32_t* slow = lm_eval_ctx_alloc(ctx, sizeof(uint32_t) * cnt);
  uint8_t** data = lm_eval_ctx_alloc(ctx, sizeof(uint8_t*) * (size_t)(ncols ? ncols : 1));
  uint8_t** nulls =
      lm_eval_ctx_alloc(ctx, sizeof(uint8_t*) * (size_t)(ncols ? ncols : 1));
  if (pos == NULL || slow == NULL || data == NULL || nulls == NULL)
    return LAMINAR_ERR_NOMEM;
  /* Each key's position: live (gathered below), marked or not there while
   * keys were added without one (the rowset's to answer), or none. A sparse
   * image's pair of the key AHEAD rows on is asked for in advance. */
  enum { AHEAD = 16 };
  const lm_vec* kv = &keys[0];
  int64_t ns = 0;
  for (int64_t r = 0; r < n; r++) {
    if (!im->dense && r + AHEAD < n) {
      uint64_t h = lm_state_mix64((uint64_t)lm_vec_int_at(kv, r + AHEAD));
      __builtin_prefetch(&im->slots[h & im->mask]);
    }
    pos[r] = -1;
    found[r] = 0;
    if (kv->nulls != NULL && kv->nulls[r]) continue; /* a NULL key matches nothing */
    int64_t p = image_locate(im, lm_vec_int_at(kv, r));
    uint8_t st = p >= 0 ? im->state[p] : IMG_ABSENT;
    if (st == IMG_LIVE) {
      pos[r] = p;
      found[r] = 1;
    } else if (st == IMG_STALE || (p < 0 && im->missing > 0)) {
      slow[ns++] = (uint32_t)r;
    }
  }
  /* The values, column by column. */
  for (int32_t c = 0; c < ncols; c++) {
    lm_type t = v->columns.fields[c].type;
    size_t w = (size_t)lm_type_width(t);
    data[c] = lm_eval_ctx_alloc(ctx, w * cnt);
    nulls[c] = lm_eval_ctx_alloc(ctx, cnt);
    if (data[c] == NULL || nulls[c] == NULL) return LAMINAR_ERR_NOMEM;
    gather_column(im->data[c], im->nulls[c], w, pos, n, data[c], nulls[c]);
    out_cols[c] = (lm_vec){t, n, nulls[c], data[c]};
  }
  if (ns == 0) return LAMINAR_OK;
  /* The rest from the rowset, decoded, then put in their rows. */
  const uint8_t** rows = lm_eval_ctx_alloc(ctx, sizeof(uint8_t*) * (size_t)ns);
  uint32_t* at = lm_eval_ctx_alloc(ctx, sizeof(uint32_t) * (size_t)ns);
  lm_vec* got = lm_eval_ctx_alloc(ctx, sizeof(lm_vec) * (size_t)(ncols ? ncols : 1));
  if (rows == NULL || at == NULL || got == NULL) return LAMINAR_ERR_NOMEM;
  int64_t m;
  LM_TRY(probe_rowset(v, ctx, keys, slow, ns, rows, at, &m));
  LM_TRY(decode_into(ctx, &v->columns, rows, m, got));
  for (int32_t c = 0; c < ncols; c++) {
    size_t w = (size_t)lm_type_width(got[c].type);
    for (int64_t j = 0; j < m; j++) {
      memcpy(data[c] + (size_t)at[j] * w, (const uint8_t*)got[c].data + (size_t)j * w, w);
      nulls[c][at[j]] = got[c].nulls[j];
    }
  }
  for (int64_t j = 0; j < m; j++) found[at[j]] = 1;
  return LAMINAR_OK;
}

const int32_t* lm_op_table_keys(const lm_op* op, int32_t* out_n) {
  const view_op* v = (const view_op*)op;
  *out_n = v->nkey;
  return v->key_cols;
}

/* ---- copies for ad-hoc queries ------------------------------------------------------- */

laminar_code lm_op_view_copy(const lm_op* base, lm_view_rows* out) {
  const view_op* v = (const view_op*)base;
  memset(out, 0, sizeof *out);
  const lm_state_rowset* rs = &v->rows;
  int64_t n = rs->count;
  int64_t live = rs->nbytes - rs->dead;
  out->bytes = lm_malloc((size_t)(live ? live : 1));
  out->offsets = lm_malloc(sizeof(int64_t) * (size_t)(n + 1));
  out->weights = lm_malloc(sizeof(int64_t) * (size_t)(n ? n : 1));
  if (out->bytes == NULL || out->offsets == NULL || out->weights == NULL) {
    lm_view_rows_free(out);
    return LAMINAR_ERR_NOMEM;
  }
  int64_t k = 0, pos = 0;
  out->offsets[0] = 0;
  for (int64_t i = 0; i < rs->cap; i++) {
    const lm_state_rowset_slot* s = &rs->slots[i];
    if (s->weight == 0) continue;
    int64_t len = s->len - s->klen; /* a table's key prefix stays behind */
    memcpy(out->bytes + pos, rs->bytes + s->off + s->klen, (size_t)len);
    pos += len;
    out->weights[k] = s->weight;
    out->offsets[++k] = pos;
  }
  out->nrows = n;
  out->ncols = v->columns.ncols;
  return LAMINAR_OK;
}

laminar_code lm_view_rows_decode(const lm_schema* columns, lm_view_rows* rows) {
  int64_t n = rows->nrows;
  int32_t ncols = columns->ncols;
  /* One block: per column the values (8-byte aligned) then the null bytes. */
  size_t total = 0;
  for (int32_t c = 0; c < ncols; c++) {
    size_t w = (size_t)lm_type_width(columns->fields[c].type);
    total += ((w * (size_t)n + 7) & ~(size_t)7) + (((size_t)n + 7) & ~(size_t)7);
  }
  rows->cols = lm_calloc((size_t)(ncols ? ncols : 1), sizeof(lm_vec));
  rows->mem = lm_malloc(total ? total : 1);
  if (rows->cols == NULL || rows->mem == NULL) return LAMINAR_ERR_NOMEM;
  uint8_t* at = rows->mem;
  uint8_t** data = lm_calloc((size_t)(ncols ? ncols : 1), sizeof(uint8_t*));
  uint8_t** nulls = lm_calloc((size_t)(ncols ? ncols : 1), sizeof(uint8_t*));
  if (data == NULL || nulls == NULL) {
    lm_free(data);
    lm_free(nulls);
    return LAMINAR_ERR_NOMEM;
  }
  for (int32_t c = 0; c < ncols; c++) {
    size_t w = (size_t)lm_type_width(columns->fields[c].type);
    data[c] = at;
    at += (w * (size_t)n + 7) & ~(size_t)7;
    nulls[c] = at;
    at += ((size_t)n + 7) & ~(size_t)7;
  }
  bool* any_null = lm_calloc((size_t)(ncols ? ncols : 1), sizeof(bool));
  if (any_null == NULL) {
    lm_free(data);
    lm_free(nulls);
    return LAMINAR_ERR_NOMEM;
  }
  for (int64_t r = 0; r < n; r++) {
    const uint8_t* p = rows->bytes + rows->offsets[r];
    for (int32_t c = 0; c < ncols; c++) {
      lm_type t = columns->fields[c].type;
      size_t w = (size_t)lm_type_width(t);
      uint8_t* slot_at = data[c] + (size_t)r * w;
      if (*p++ == 0) {
        nulls[c][r] = 1;
        any_null[c] = true;
        memset(slot_at, 0, w);
        continue;
      }
      nulls[c][r] = 0;
      if (lm_type_is_bytes(t)) {
        uint32_t len;
        memcpy(&len, p, 4);
        lm_str s = {(const char*)p + 4, (int64_t)len};
        memcpy(slot_at, &s, sizeof s);
        p += 4 + len;
      } else {
        memcpy(slot_at, p, w);
        p += w;
      }
    }
  }
  for (int32_t c = 0; c < ncols; c++) {
    rows->cols[c] =
        (lm_vec){columns->fields[c].type, n, any_null[c] ? nulls[c] : NULL, data[c]};
  }
  rows->ncols = ncols;
  lm_free(data);
  lm_free(nulls);
  lm_free(any_null);
  return LAMINAR_OK;
}

void lm_view_rows_free(lm_view_rows* rows) {
  lm_free(rows->cols);
  lm_free(rows->weights);
  lm_free(rows->bytes);
  lm_free(rows->offsets);
  lm_free(rows->mem);
  memset(rows, 0, sizeof *rows);
}
