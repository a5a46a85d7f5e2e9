/*
 * view.c -- the materialize operator of a materialized view (view.h): a Z-set
 * of the view's rows, updated from insert-only or changelog input, forwarded
 * downstream as a changelog, copied out for ad-hoc SELECT, saved and restored
 * with checkpoints.
 *
 * State: each distinct row is encoded once into a byte string (below) kept in
 * one growable buffer; an open-addressing hash table (linear probing, at most
 * half full, backward-shift deletion so there are no tombstones) maps the
 * row's bytes to its multiplicity. Rows that leave the view leave dead bytes
 * behind, reclaimed by compaction once they are more than half the buffer.
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

#include "util/util.h"

#include <assert.h>
#include <stdatomic.h>
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
  if (v->type != LM_TYPE_STRING) return 1 + lm_type_width(v->type);
  int64_t len = ((const lm_str*)v->data)[r].len;
  return len > (int64_t)UINT32_MAX ? -1 : 1 + 4 + len;
}

static uint8_t* encode_value(const lm_vec* v, int64_t r, uint8_t* p) {
  if (v->nulls != NULL && v->nulls[r]) {
    *p = 0;
    return p + 1;
  }
  *p++ = 1;
  if (v->type == LM_TYPE_STRING) {
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
    if (t == LM_TYPE_STRING) {
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

/* A 64-bit hash of the encoded row, eight bytes at a time. */
static uint64_t row_hash(const uint8_t* p, int64_t len) {
  uint64_t h = 0x243f6a8885a308d3ull ^ (uint64_t)len;
  while (len >= 8) {
    uint64_t k;
    memcpy(&k, p, 8);
    h = (h ^ k) * 0x9fb21c651e98df25ull;
    h ^= h >> 31;
    p += 8;
    len -= 8;
  }
  uint64_t k = 0;
  if (len > 0) memcpy(&k, p, (size_t)len);
  h = (h ^ k) * 0xd6e8feb86659fd93ull;
  h ^= h >> 32;
  h *= 0x9fb21c651e98df25ull;
  return h ^ (h >> 29);
}

/* ==== the operator ==================================================================== */

/* One distinct row: its hash, multiplicity (0 = empty slot) and bytes. A
 * table's (keyed) slot holds its key's encoding then the row's: klen bytes of
 * key, hashed and compared alone; a view's klen is 0 and the whole row is
 * its identity. */
typedef struct slot {
  uint64_t hash;
  int64_t weight;
  int64_t off;
  int64_t len;
  int64_t klen;
} slot;

typedef struct view_op {
  lm_op base; /* out_schema: the columns, then _weight BIGINT */
  lm_schema columns;
  /* A table (lm_op_table_create): its primary key's column indexes and
   * their schema; nkey 0 for a view. */
  int32_t* key_cols;
  int32_t nkey;
  lm_schema key_schema;
  bool changelog; /* input chunks carry the weight as column columns.ncols */
  slot* slots;
  int64_t cap;   /* slots (a power of two, or 0) */
  int64_t count; /* rows in the view */
  uint8_t* bytes;
  int64_t nbytes; /* used, live and dead */
  int64_t bytes_cap;
  int64_t dead; /* bytes of rows that left */
  int64_t retract_errors;
  lm_eval_ctx* ctx; /* per-chunk scratch */
  lm_vec* outs;     /* columns.ncols + 1 output vectors */
  /* Checkpoints (copy-on-write, "frozen views" below): who holds `slots` and
   * `bytes` as they were at the freeze. 2: the op and a frozen checkpoint
   * being written (set in the stall); 1: one of them let go; whoever lets
   * go last frees them. held (the op's alone): the op's slots and bytes are
   * those, so it copies them before changing them if the writer still
   * reads them. */
  _Atomic int32_t share;
  bool held;
  int64_t thaws; /* copies made so (lm_op_view_thaws) */
  int64_t thawed_rows;
} view_op;

static const lm_op_vtable view_vtable;
static const lm_op_vtable table_vtable;

bool lm_op_view_is_changelog(const lm_schema* schema) {
  if (schema->ncols == 0) return false;
  const lm_field* last = &schema->fields[schema->ncols - 1];
  return last->type == LM_TYPE_INT64 && lm_streq_nocase(last->name, LM_WEIGHT_COLUMN);
}

/* Grow the table so `extra` more rows keep it at most half full. Nothing
 * changes on failure. */
static laminar_code reserve_slots(view_op* v, int64_t extra) {
  int64_t need = v->count + extra;
  if (need <= v->cap / 2) return LAMINAR_OK;
  int64_t cap = v->cap ? v->cap : 16;
  while (cap / 2 < need) {
    if (cap > INT64_MAX / 4 / (int64_t)sizeof(slot)) return LAMINAR_ERR_NOMEM;
    cap *= 2;
  }
  slot* grown = lm_calloc((size_t)cap, sizeof(slot));
  if (grown == NULL) return LAMINAR_ERR_NOMEM;
  uint64_t mask = (uint64_t)cap - 1;
  for (int64_t i = 0; i < v->cap; i++) {
    if (v->slots[i].weight == 0) continue;
    uint64_t j = v->slots[i].hash & mask;
    while (grown[j].weight != 0) j = (j + 1) & mask;
    grown[j] = v->slots[i];
  }
  lm_free(v->slots);
  v->slots = grown;
  v->cap = cap;
  return LAMINAR_OK;
}

static laminar_code reserve_bytes(view_op* v, int64_t extra) {
  if (extra > INT64_MAX / 4 - v->nbytes) return LAMINAR_ERR_NOMEM;
  int64_t need = v->nbytes + extra;
  if (need <= v->bytes_cap) return LAMINAR_OK;
  int64_t cap = v->bytes_cap ? v->bytes_cap : 4096;
  while (cap < need) cap *= 2;
  uint8_t* grown = lm_realloc(v->bytes, (size_t)cap);
  if (grown == NULL) return LAMINAR_ERR_NOMEM;
  v->bytes = grown;
  v->bytes_cap = cap;
  return LAMINAR_OK;
}

/* Rewrite the buffer with the live rows only, when dead rows are most of it.
 * Best effort: without memory for the new buffer the old one stays. */
static void maybe_compact(view_op* v) {
  if (v->dead < 65536 || v->dead * 2 < v->nbytes) return;
  int64_t live = v->nbytes - v->dead;
  int64_t cap = live + live / 2 + 4096;
  uint8_t* fresh = lm_malloc((size_t)cap);
  if (fresh == NULL) return;
  int64_t pos = 0;
  for (int64_t i = 0; i < v->cap; i++) {
    slot* s = &v->slots[i];
    if (s->weight == 0) continue;
    memcpy(fresh + pos, v->bytes + s->off, (size_t)s->len);
    s->off = pos;
    pos += s->len;
  }
  lm_free(v->bytes);
  v->bytes = fresh;
  v->bytes_cap = cap;
  v->nbytes = pos;
  v->dead = 0;
}

/* The slot whose identity is p[0..len) with hash h -- a view's whole row, a
 * table's key (the first klen bytes of its slot) -- or the empty slot where
 * it goes (*found false). The table must have an empty slot. */
static int64_t probe(const view_op* v, uint64_t h, const uint8_t* p, int64_t len,
                     bool* found) {
  uint64_t mask = (uint64_t)v->cap - 1;
  uint64_t i = h & mask;
  for (;;) {
    const slot* s = &v->slots[i];
    if (s->weight == 0) {
      *found = false;
      return (int64_t)i;
    }
    int64_t id_len = v->nkey > 0 ? s->klen : s->len;
    if (s->hash == h && id_len == len && memcmp(v->bytes + s->off, p, (size_t)len) == 0) {
      *found = true;
      return (int64_t)i;
    }
    i = (i + 1) & mask;
  }
}

/* Empty slot i, shifting later rows of its probe run back (no tombstones). */
static void remove_slot(view_op* v, int64_t i) {
  uint64_t mask = (uint64_t)v->cap - 1;
  uint64_t hole = (uint64_t)i;
  uint64_t j = hole;
  for (;;) {
    j = (j + 1) & mask;
    if (v->slots[j].weight == 0) break;
    uint64_t home = v->slots[j].hash & mask;
    /* The row at j may fill the hole unless its home lies cyclically in (hole, j]. */
    if (((j - home) & mask) >= ((j - hole) & mask)) {
      v->slots[hole] = v->slots[j];
      hole = j;
    }
  }
  v->slots[hole].weight = 0;
}

/* Add weight w to row p[0..len) (hash h); returns the weight applied. */
static int64_t apply_row(view_op* v, uint64_t h, const uint8_t* p, int64_t len,
                         int64_t w) {
  bool found;
  int64_t i = probe(v, h, p, len, &found);
  int64_t old = found ? v->slots[i].weight : 0;
  int64_t now;
  if (__builtin_add_overflow(old, w, &now)) now = INT64_MAX; /* only w > 0 overflows */
  if (now < 0) {
    v->retract_errors++; /* a retraction of a row that is not (or not so often) there */
    now = 0;
  }
  if (now == old) return 0;
  if (!found) {
    memcpy(v->bytes + v->nbytes, p, (size_t)len); /* room reserved by the caller */
    v->slots[i] = (slot){h, now, v->nbytes, len, 0};
    v->nbytes += len;
    v->count++;
  } else if (now == 0) {
    v->dead += v->slots[i].len;
    remove_slot(v, i);
    v->count--;
  } else {
    v->slots[i].weight = now;
  }
  return now - old;
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
static int64_t view_bytes(const view_op* v) {
  return v->nbytes - v->dead + v->count * (int64_t)(2 * sizeof(slot));
}

/* Before a chunk changes the state: the state the op's own (a checkpoint
 * may still read it), the scratch reset, dead bytes reclaimed. */
static laminar_code chunk_begin(view_op* v) {
  LM_TRY(view_thaw(v));
  lm_eval_ctx_reset(v->ctx);
  maybe_compact(v);
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
  /* Room for the worst case before the state changes: all or nothing. */
  LM_TRY(reserve_slots(v, n));
  LM_TRY(reserve_bytes(v, offs[n]));

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
  if (rc == LAMINAR_OK) return LAMINAR_OK;
  for (int64_t r = n - 1; r >= 0; r--) {
    int64_t len = offs[r + 1] - offs[r];
    if (eff[r] != 0) apply_row(v, row_hash(enc + offs[r], len), enc + offs[r], len, -eff[r]);
  }
  v->retract_errors = errors_before;
  if (lm_op_bounded(base)) lm_op_account(base, view_bytes(v), false);
  return rc;
}

/* ---- snapshot / restore -------------------------------------------------------------- */

/* The state a snapshot holds: the table, the row bytes, the counts. */
typedef struct view_state {
  const slot* slots;
  int64_t cap;
  int64_t count;
  const uint8_t* bytes;
  int64_t retract_errors;
} view_state;

static view_state state_of(const view_op* v) {
  return (view_state){v->slots, v->cap, v->count, v->bytes, v->retract_errors};
}

static laminar_code put_state(const view_state* st, lm_state_writer* w) {
  lm_state_put_i64(w, st->retract_errors);
  lm_state_put_i64(w, st->count);
  for (int64_t i = 0; i < st->cap; i++) {
    const slot* s = &st->slots[i];
    if (s->weight == 0) continue;
    lm_state_put_i64(w, s->weight);
    lm_state_put_bytes(w, st->bytes + s->off, (size_t)s->len);
  }
  return lm_state_writer_status(w);
}

static laminar_code view_snapshot(const lm_op* base, lm_state_writer* w) {
  view_state st = state_of((const view_op*)base);
  return put_state(&st, w);
}

/* ---- frozen views: checkpoints by copy-on-write ------------------------------------ */

/* The stall notes the table and the row bytes as they are and marks them
 * shared (share = 2) -- O(1), nothing copied; the checkpoint encodes them
 * from its own thread while the op runs on. Before the op changes them
 * (view_thaw: a chunk, a restore) it copies both (two memcpys) and goes on
 * with the copies; if the writer is done first (share 1), they are the op's
 * again, uncopied. */

typedef struct view_frozen {
  view_op* v;
  view_state st;
} view_frozen;

static laminar_code view_freeze(lm_op* base, void** out) {
  view_op* v = (view_op*)base;
  view_frozen* f = lm_malloc(sizeof *f);
  *out = f;
  if (f == NULL) return LAMINAR_ERR_NOMEM;
  f->v = v;
  f->st = state_of(v);
  /* Never still held by an earlier checkpoint: checkpoints write what they
   * froze before the next one begins (as windows, op/window_frozen.c). */
  atomic_store_explicit(&v->share, 2, memory_order_relaxed); /* published by the resume */
  v->held = true;
  return LAMINAR_OK;
}

static laminar_code view_write_frozen(void* frozen, lm_state_writer* w) {
  view_frozen* f = frozen;
  laminar_code rc = w != NULL ? put_state(&f->st, w) : LAMINAR_OK;
  /* acq_rel: pairs with view_thaw's. 1: the op let go first (it copied). */
  if (atomic_fetch_sub_explicit(&f->v->share, 1, memory_order_acq_rel) == 1) {
    lm_free((void*)f->st.slots);
    lm_free((void*)f->st.bytes);
  }
  lm_free(f);
  return rc;
}

/* Make the table and the row bytes the op's to change: copies when a
 * checkpoint still reads them. LAMINAR_ERR_NOMEM leaves the op as it was. */
static laminar_code view_thaw(view_op* v) {
  if (!v->held) return LAMINAR_OK;
  if (atomic_load_explicit(&v->share, memory_order_acquire) != 2) {
    atomic_store_explicit(&v->share, 0, memory_order_relaxed); /* the writer is done */
    v->held = false;
    return LAMINAR_OK;
  }
  slot* slots = v->cap > 0 ? lm_malloc(sizeof(slot) * (size_t)v->cap) : NULL;
  uint8_t* bytes = v->bytes_cap > 0 ? lm_malloc((size_t)v->bytes_cap) : NULL;
  if ((v->cap > 0 && slots == NULL) || (v->bytes_cap > 0 && bytes == NULL)) {
    lm_free(slots);
    lm_free(bytes);
    return LAMINAR_ERR_NOMEM;
  }
  if (v->cap > 0) memcpy(slots, v->slots, sizeof(slot) * (size_t)v->cap);
  if (v->nbytes > 0) memcpy(bytes, v->bytes, (size_t)v->nbytes);
  slot* old_slots = v->slots;
  uint8_t* old_bytes = v->bytes;
  v->slots = slots;
  v->bytes = bytes;
  v->held = false;
  v->thaws++;
  v->thawed_rows += v->count;
  /* acq_rel: pairs with view_write_frozen's. 1: the writer let go first. */
  if (atomic_fetch_sub_explicit(&v->share, 1, memory_order_acq_rel) == 1) {
    lm_free(old_slots);
    lm_free(old_bytes);
  }
  return LAMINAR_OK;
}

static void clear_state(view_op* v) {
  if (v->slots != NULL) memset(v->slots, 0, sizeof(slot) * (size_t)v->cap);
  v->count = 0;
  v->nbytes = 0;
  v->dead = 0;
  v->retract_errors = 0;
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
  if (reserve_slots(v, count) != LAMINAR_OK) {
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
    if (reserve_bytes(v, row.len) != LAMINAR_OK) {
      return lm_error_set(err, LAMINAR_ERR_NOMEM, "out of memory restoring a view");
    }
    bool found;
    uint64_t h = row_hash(p, v->nkey > 0 ? klen : row.len);
    int64_t i = probe(v, h, p, v->nkey > 0 ? klen : row.len, &found);
    if (found) return corrupt(err, "duplicate row");
    if (row.len > 0) memcpy(v->bytes + v->nbytes, p, (size_t)row.len);
    v->slots[i] = (slot){h, weight, v->nbytes, row.len, klen};
    v->nbytes += row.len;
    v->count++;
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
  lm_free(v->slots);
  lm_free(v->bytes);
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

int64_t lm_op_view_rows(const lm_op* view) { return ((const view_op*)view)->count; }

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
static laminar_code decode_into(lm_eval_ctx* ctx, const lm_schema* columns,
                                const uint8_t* const* rows, int64_t n, lm_vec* out) {
  int32_t ncols = columns->ncols;
  for (int32_t c = 0; c < ncols; c++) {
    size_t w = (size_t)lm_type_width(columns->fields[c].type);
    uint8_t* data = lm_eval_ctx_alloc(ctx, w * (size_t)(n ? n : 1));
    uint8_t* nulls = lm_eval_ctx_alloc(ctx, (size_t)(n ? n : 1));
    if (data == NULL || nulls == NULL) return LAMINAR_ERR_NOMEM;
    memset(nulls, 0, (size_t)(n ? n : 1));
    out[c] = (lm_vec){columns->fields[c].type, n, nulls, data};
  }
  for (int64_t r = 0; r < n; r++) {
    const uint8_t* p = rows[r];
    for (int32_t c = 0; c < ncols; c++) {
      lm_type t = columns->fields[c].type;
      size_t w = (size_t)lm_type_width(t);
      uint8_t* at = (uint8_t*)out[c].data + (size_t)r * w;
      if (*p++ == 0) {
        ((uint8_t*)out[c].nulls)[r] = 1;
        memset(at, 0, w);
        continue;
      }
      if (t == LM_TYPE_STRING) {
        uint32_t len;
        memcpy(&len, p, 4);
        lm_str str = {(const char*)p + 4, (int64_t)len}; /* a view of the row */
        memcpy(at, &str, sizeof str);
        p += 4 + len;
      } else {
        memcpy(at, p, w);
        p += w;
      }
    }
  }
  return LAMINAR_OK;
}

static laminar_code table_on_chunk(lm_op* base, const lm_chunk* in) {
  view_op* v = (view_op*)base;
  int32_t ncols = v->columns.ncols;
  int64_t n = in->nrows;
  if (n == 0) return LAMINAR_OK;
  LM_TRY(chunk_begin(v));
  const lm_vec* wv = &in->cols[ncols];

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
  uint8_t* old = lm_eval_ctx_alloc(v->ctx, (size_t)(v->nbytes + offs[n] + 1));
  if (enc == NULL || outs == NULL || weights == NULL || old == NULL)
    return LAMINAR_ERR_NOMEM;
  for (int64_t r = 0; r < n; r++) {
    uint8_t* p = enc + offs[r];
    for (int32_t k = 0; k < v->nkey; k++)
      p = encode_value(&in->cols[v->key_cols[k]], r, p);
    for (int32_t c = 0; c < ncols; c++) p = encode_value(&in->cols[c], r, p);
  }
  /* Room for the worst case before the state changes (every row new). */
  LM_TRY(reserve_slots(v, n));
  LM_TRY(reserve_bytes(v, offs[n]));

  int64_t m = 0, old_pos = 0;
  for (int64_t r = 0; r < n; r++) {
    const uint8_t* p = enc + offs[r];
    int64_t len = offs[r + 1] - offs[r], klen = klens[r];
    bool upsert =
        (wv->nulls != NULL && wv->nulls[r]) || ((const int64_t*)wv->data)[r] > 0;
    uint64_t h = row_hash(p, klen);
    bool found;
    int64_t i = probe(v, h, p, klen, &found);
    if (found) {
      slot* s = &v->slots[i];
      if (upsert && s->len == len && memcmp(v->bytes + s->off, p, (size_t)len) == 0)
        continue; /* the same row again */
      /* The old row goes out: copied, as its bytes may be reused below. */
      int64_t olen = s->len - s->klen;
      uint8_t* copy = old + old_pos;
      memcpy(copy, v->bytes + s->off + s->klen, (size_t)olen);
      old_pos += olen;
      outs[m] = copy;
      weights[m++] = -1;
      v->dead += s->len;
      if (!upsert) {
        remove_slot(v, i);
        v->count--;
        continue;
      }
      memcpy(v->bytes + v->nbytes, p, (size_t)len); /* room reserved above */
      s->off = v->nbytes;
      s->len = len;
      v->nbytes += len;
    } else {
      if (!upsert) continue; /* no row of that key */
      memcpy(v->bytes + v->nbytes, p, (size_t)len);
      v->slots[i] = (slot){h, 1, v->nbytes, len, klen};
      v->nbytes += len;
      v->count++;
    }
    outs[m] = p + klen;
    weights[m++] = 1;
  }
  if (lm_op_bounded(base)) LM_TRY(lm_op_account(base, view_bytes(v), false));
  if (m == 0) return LAMINAR_OK;
  LM_TRY(decode_into(v->ctx, &v->columns, outs, m, v->outs));
  v->outs[ncols] = (lm_vec){LM_TYPE_INT64, m, NULL, weights};
  lm_chunk out = {m, ncols + 1, v->outs, NULL};
  return lm_op_emit(base, &out);
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

laminar_code lm_op_table_create(const lm_schema* in_schema, const int32_t* key_cols,
                                int32_t nkey, lm_op** out) {
  *out = NULL;
  if (!lm_op_view_is_changelog(in_schema) || nkey <= 0) return LAMINAR_ERR_SCHEMA_INVALID;
  for (int32_t k = 0; k < nkey; k++) {
    if (key_cols[k] < 0 || key_cols[k] >= in_schema->ncols - 1)
      return LAMINAR_ERR_SCHEMA_INVALID;
  }
  LM_TRY(lm_op_view_create(in_schema, out));
  view_op* v = (view_op*)*out;
  v->base.vt = &table_vtable;
  v->key_cols = lm_malloc(sizeof(int32_t) * (size_t)nkey);
  bool ok = v->key_cols != NULL;
  for (int32_t k = 0; ok && k < nkey; k++) {
    const lm_field* f = &in_schema->fields[key_cols[k]];
    v->key_cols[k] = key_cols[k];
    ok = lm_schema_add(&v->key_schema, f->name, f->type, f->not_null) == 0;
  }
  /* Output rows: at most two per input row. */
  if (!ok) {
    lm_schema_free(&v->base.out_schema);
    view_destroy(&v->base);
    *out = NULL;
    return LAMINAR_ERR_NOMEM;
  }
  v->nkey = nkey;
  return LAMINAR_OK;
}

bool lm_op_is_table(const lm_op* op) { return op != NULL && op->vt == &table_vtable; }

laminar_code lm_op_table_lookup(const lm_op* table, lm_eval_ctx* ctx, const lm_vec* keys,
                                int64_t n, lm_vec* out_cols, uint8_t* found) {
  const view_op* v = (const view_op*)table;
  int32_t nkey = v->nkey;
  size_t cnt = (size_t)(n ? n : 1);
  const uint8_t** rows = lm_eval_ctx_alloc(ctx, sizeof(uint8_t*) * cnt);
  int64_t* offs = lm_eval_ctx_alloc(ctx, sizeof(int64_t) * (cnt + 1));
  uint64_t* hashes = lm_eval_ctx_alloc(ctx, sizeof(uint64_t) * cnt);
  if (rows == NULL || offs == NULL || hashes == NULL) return LAMINAR_ERR_NOMEM;
  /* Pass 1: every key encoded back to back and hashed; a NULL key (or an
   * empty table) gets an empty encoding and is not looked up. */
  memset(found, 0, cnt);
  offs[0] = 0;
  for (int64_t r = 0; r < n; r++) {
    bool null_key = v->count == 0;
    for (int32_t k = 0; k < nkey; k++)
      null_key |= keys[k].nulls != NULL && keys[k].nulls[r];
    int64_t klen = null_key ? 0 : encoded_size(keys, NULL, nkey, r);
    if (klen < 0) return LAMINAR_ERR_NOMEM;
    offs[r + 1] = offs[r] + klen;
  }
  uint8_t* enc = lm_eval_ctx_alloc(ctx, (size_t)(offs[n] ? offs[n] : 1));
  if (enc == NULL) return LAMINAR_ERR_NOMEM;
  for (int64_t r = 0; r < n; r++) {
    if (offs[r + 1] == offs[r]) continue;
    uint8_t* p = enc + offs[r];
    for (int32_t k = 0; k < nkey; k++) p = encode_value(&keys[k], r, p);
    hashes[r] = row_hash(enc + offs[r], offs[r + 1] - offs[r]);
  }
  /* Pass 2: probe, with the slot of a row PREFETCH rows ahead already asked
   * for -- a large table's slots and rows are cache misses (on this machine a
   * 10^6-row table's lookups took half the time with the prefetches). */
  enum { PREFETCH = 16 };
  uint64_t mask = (uint64_t)v->cap - 1;
  int64_t m = 0;
  for (int64_t r = 0; r < n; r++) {
    int64_t ahead = r + PREFETCH;
    if (ahead < n && offs[ahead + 1] != offs[ahead])
      __builtin_prefetch(&v->slots[hashes[ahead] & mask]);
    /* Halfway there its slot is in cache: ask for the row's bytes too. */
    int64_t half = r + PREFETCH / 2;
    if (half < n && offs[half + 1] != offs[half]) {
      const slot* ps = &v->slots[hashes[half] & mask];
      if (ps->weight != 0) __builtin_prefetch(v->bytes + ps->off);
    }
    int64_t klen = offs[r + 1] - offs[r];
    if (klen == 0) continue;
    bool hit;
    int64_t i = probe(v, hashes[r], enc + offs[r], klen, &hit);
    if (!hit) continue;
    const slot* sl = &v->slots[i];
    rows[m++] = v->bytes + sl->off + sl->klen;
    found[r] = 1;
  }
  /* The matched rows decoded in order, then spread to their input rows. */
  LM_TRY(decode_into(ctx, &v->columns, rows, m, out_cols));
  if (m == n) return LAMINAR_OK;
  for (int32_t c = 0; c < v->columns.ncols; c++) {
    size_t w = (size_t)lm_type_width(out_cols[c].type);
    uint8_t* data = lm_eval_ctx_alloc(ctx, w * (size_t)(n ? n : 1));
    uint8_t* nulls = lm_eval_ctx_alloc(ctx, (size_t)(n ? n : 1));
    if (data == NULL || nulls == NULL) return LAMINAR_ERR_NOMEM;
    memset(data, 0, w * (size_t)(n ? n : 1));
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

const int32_t* lm_op_table_keys(const lm_op* op, int32_t* out_n) {
  const view_op* v = (const view_op*)op;
  *out_n = v->nkey;
  return v->key_cols;
}

/* ---- copies for ad-hoc queries ------------------------------------------------------- */

laminar_code lm_op_view_copy(const lm_op* base, lm_view_rows* out) {
  const view_op* v = (const view_op*)base;
  memset(out, 0, sizeof *out);
  int64_t n = v->count;
  int64_t live = v->nbytes - v->dead;
  out->bytes = lm_malloc((size_t)(live ? live : 1));
  out->offsets = lm_malloc(sizeof(int64_t) * (size_t)(n + 1));
  out->weights = lm_malloc(sizeof(int64_t) * (size_t)(n ? n : 1));
  if (out->bytes == NULL || out->offsets == NULL || out->weights == NULL) {
    lm_view_rows_free(out);
    return LAMINAR_ERR_NOMEM;
  }
  int64_t k = 0, pos = 0;
  out->offsets[0] = 0;
  for (int64_t i = 0; i < v->cap; i++) {
    const slot* s = &v->slots[i];
    if (s->weight == 0) continue;
    int64_t len = s->len - s->klen; /* a table's key prefix stays behind */
    memcpy(out->bytes + pos, v->bytes + s->off + s->klen, (size_t)len);
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
      if (t == LM_TYPE_STRING) {
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
