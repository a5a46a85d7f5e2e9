/*
 * window_frozen.c -- checkpoints of the window operator by copy-on-write
 * (op/op.h freeze / write_frozen; docs/DURABILITY.md "How it works"): the
 * stall freezes the op's state, the checkpoint's thread encodes it while the
 * op runs on, and the op copies what a checkpoint still holds before
 * changing it. Shared structs in op/internal.h.
 */
#include "op/op.h"

#include "op/internal.h"

#include <stdatomic.h>
#include <string.h>

/* ---- frozen windows: checkpoints by copy-on-write ---------------------------------- */

/* A checkpoint's stall freezes the op (window_freeze): it notes the
 * watermark, the late count and the open windows, and marks each window
 * shared (share = 2) -- O(open windows), nothing copied. The checkpoint then
 * writes the windows from its own thread while this op runs on: before the
 * op changes a shared window (rows into it) it copies it (window_thaw: bulk
 * copies of its arrays, its strings into the copy's pool) and goes on with
 * the copy; a shared window that closes is let go, not recycled. Windows the
 * writer is done with (share 1) are the op's again, uncopied. */

typedef struct window_frozen {
  window_op* op;
  int64_t watermark;
  int64_t late_rows;
  /* Sessions: no copy-on-write; their state (interned keys, slots) copied in
   * bulk in the stall into this op-shaped holder, encoded after it. */
  window_op* session;
  int32_t n;
  window* wins[];
} window_frozen;

static void session_copy_free(window_op* op, window_op* c) {
  if (c == NULL) return;
  lm_op_window_free(op, c->keyset);
  for (int32_t a = 0; c->sagg != NULL && a < op->spec.naggs; a++) lm_agg_states_free(&c->sagg[a]);
  lm_free(c->sagg);
  lm_free(c->s_used);
  lm_free(c->s_key);
  lm_free(c->s_start);
  lm_free(c->s_end);
  lm_free(c);
}

static laminar_code keys_copy(window_op* op, window* dst, const window* src);

/* What lm_op_session_snapshot reads of op, copied: memcpy speed, no encoding. */
#define COPY_SLOTS(field)                                                            \
  do {                                                                               \
    c->field = lm_malloc(sizeof(*c->field) * (size_t)(hw + 1));                      \
    if (c->field == NULL) goto nomem;                                                \
    if (hw > 0) memcpy(c->field, op->field, sizeof(*c->field) * (size_t)hw);         \
  } while (0)

static laminar_code session_copy(window_op* op, window_op** out) {
  window_op* c = lm_malloc(sizeof *c);
  if (c == NULL) return LAMINAR_ERR_NOMEM;
  *c = *op; /* spec and counts; every array it reads is replaced below */
  c->keyset = NULL;
  c->sagg = NULL;
  c->s_used = NULL;
  c->s_key = NULL;
  c->s_start = c->s_end = NULL;
  int64_t hw = op->s_hw;
  COPY_SLOTS(s_used);
  COPY_SLOTS(s_key);
  COPY_SLOTS(s_start);
  COPY_SLOTS(s_end);
  c->sagg = lm_calloc((size_t)op->spec.naggs + 1, sizeof(lm_agg_states));
  if (c->sagg == NULL || lm_op_window_new(op, &c->keyset) != LAMINAR_OK) goto nomem;
  /* The interned keys only (what the snapshot reads of the keyset). */
  if (lm_op_window_reserve(op, c->keyset, op->keyset->ngroups + 1) != LAMINAR_OK ||
      keys_copy(op, c->keyset, op->keyset) != LAMINAR_OK) {
    goto nomem;
  }
  c->keyset->ngroups = op->keyset->ngroups;
  for (int32_t a = 0; a < op->spec.naggs; a++) {
    lm_agg_states_init(&c->sagg[a], &op->spec.aggs[a], op->sagg[a].arg_type);
    c->sagg[a].weighted = op->sagg[a].weighted;
    if (lm_agg_states_copy(&c->sagg[a], &op->sagg[a], hw) != LAMINAR_OK) goto nomem;
  }
  *out = c;
  return LAMINAR_OK;
nomem:
  session_copy_free(op, c);
  return LAMINAR_ERR_NOMEM;
}

#undef COPY_SLOTS

/* A window to fill: a recycled one, or a new one. */
static laminar_code window_take(window_op* op, window** out) {
  if (op->nspare > 0) {
    *out = op->spare[--op->nspare];
    return LAMINAR_OK;
  }
  return lm_op_window_new(op, out);
}

/* The keys of src's groups into dst (room reserved): strings into dst's pool,
 * a pane's borrowed from the op's keyset as they are. */
static laminar_code keys_copy(window_op* op, window* dst, const window* src) {
  int64_t n = src->ngroups;
  for (int32_t c = 0; c < op->spec.nkeys && n > 0; c++) {
    key_store* to = &dst->keys[c];
    const key_store* from = &src->keys[c];
    memcpy(to->nulls, from->nulls, (size_t)n);
    if (to->type == LM_TYPE_STRING) {
      memcpy(to->s, from->s, sizeof(lm_str) * (size_t)n);
      for (int64_t g = 0; !op->panes && g < n; g++) {
        if (to->s[g].ptr == NULL) continue;
        to->s[g].ptr = lm_pool_copy(&dst->strings, from->s[g].ptr, (size_t)from->s[g].len);
        if (to->s[g].ptr == NULL) return LAMINAR_ERR_NOMEM;
      }
    } else if (to->type == LM_TYPE_DOUBLE) {
      memcpy(to->d, from->d, sizeof(double) * (size_t)n);
    } else {
      memcpy(to->i, from->i, sizeof(int64_t) * (size_t)n);
    }
  }
  return LAMINAR_OK;
}

/* dst (empty) becomes a copy of src: table, hashes, keys (strings into dst's
 * pool; a pane's stay borrowed from the op's keyset), aggregates, tracking. */
static laminar_code window_copy(window_op* op, window* dst, const window* src) {
  int64_t n = src->ngroups;
  LM_TRY(lm_op_window_reserve(op, dst, n > 0 ? n : 1));
  size_t tsize = (size_t)src->table_mask + 1;
  if (dst->table_mask != src->table_mask) {
    uint32_t* table = lm_realloc(dst->table, sizeof(uint32_t) * tsize);
    if (table == NULL) return LAMINAR_ERR_NOMEM;
    dst->table = table;
    dst->table_mask = src->table_mask;
  }
  memcpy(dst->table, src->table, sizeof(uint32_t) * tsize);
  if (n > 0) memcpy(dst->ghash, src->ghash, sizeof(uint64_t) * (size_t)n);
  LM_TRY(keys_copy(op, dst, src));
  for (int32_t a = 0; a < op->spec.naggs; a++) {
    LM_TRY(lm_agg_states_copy(&dst->aggs[a], &src->aggs[a], n));
  }
  if (op->track && n > 0) {
    memcpy(dst->nrows, src->nrows, sizeof(int64_t) * (size_t)n);
    memcpy(dst->live, src->live, (size_t)n);
    memcpy(dst->stamp, src->stamp, sizeof(uint64_t) * (size_t)n);
  }
  if (op->panes && n > 0) memcpy(dst->kid, src->kid, sizeof(uint32_t) * (size_t)n);
  dst->start = src->start;
  dst->ngroups = n;
  dst->edit = src->edit;
  return LAMINAR_OK;
}

void lm_op_window_let_go(window_op* op, window* w) {
  /* acq_rel: the writer's reads of w happen before the op reuses it, and
   * the op's last writes before the writer frees it. */
  if (atomic_load_explicit(&w->share, memory_order_acquire) == 2 &&
      atomic_fetch_sub_explicit(&w->share, 1, memory_order_acq_rel) == 2) {
    return; /* the checkpoint writer still reads it: it frees it */
  }
  atomic_store_explicit(&w->share, 0, memory_order_relaxed);
  lm_op_window_recycle(op, w);
}

/* Make open window i the op's to change: a copy when a checkpoint still
 * reads it. */
laminar_code lm_op_window_thaw(window_op* op, int32_t i) {
  window* w = op->open[i];
  if (atomic_load_explicit(&w->share, memory_order_acquire) == 2) {
    window* copy;
    LM_TRY(window_take(op, &copy));
    laminar_code rc = window_copy(op, copy, w);
    if (rc != LAMINAR_OK) {
      /* Groups the copy overwrote get their empty states back in the reset. */
      copy->ngroups = w->ngroups < copy->cap ? w->ngroups : copy->cap;
      lm_op_window_recycle(op, copy);
      return rc;
    }
    op->open[i] = copy;
    op->thaws++;
    op->thawed_groups += copy->ngroups;
    lm_op_window_let_go(op, w);
    return LAMINAR_OK;
  }
  atomic_store_explicit(&w->share, 0, memory_order_relaxed); /* the writer is done with it */
  return LAMINAR_OK;
}

laminar_code lm_op_window_freeze(lm_op* base, void** out) {
  window_op* op = (window_op*)base;
  *out = NULL;
  window_frozen* f = lm_malloc(sizeof *f + sizeof(window*) * (size_t)(op->nopen + 1));
  if (f == NULL) return LAMINAR_ERR_NOMEM;
  f->op = op;
  f->watermark = op->watermark;
  f->late_rows = op->late_rows;
  f->session = NULL;
  f->n = 0;
  if (op->spec.session) {
    laminar_code rc = session_copy(op, &f->session);
    if (rc != LAMINAR_OK) {
      lm_free(f);
      return rc;
    }
    *out = f;
    return LAMINAR_OK;
  }
  f->n = op->nopen;
  for (int32_t i = 0; i < op->nopen; i++) {
    window* w = op->open[i];
    /* A window still held by an earlier checkpoint cannot be: checkpoints
     * write what they froze before the next one begins. */
    atomic_store_explicit(&w->share, 2, memory_order_relaxed); /* published by the resume */
    f->wins[i] = w;
  }
  *out = f;
  return LAMINAR_OK;
}

laminar_code lm_op_window_write_frozen(void* frozen, lm_state_writer* w) {
  window_frozen* f = frozen;
  if (f->session != NULL) {
    if (w != NULL) {
      lm_state_put_i64(w, f->watermark);
      lm_state_put_i64(w, f->late_rows);
      lm_op_session_snapshot(f->session, w);
    }
    session_copy_free(f->op, f->session);
    lm_free(f);
    return w != NULL ? lm_state_writer_status(w) : LAMINAR_OK;
  }
  if (w != NULL) {
    lm_state_put_i64(w, f->watermark);
    lm_state_put_i64(w, f->late_rows);
    lm_state_put_u32(w, (uint32_t)f->n);
  }
  /* Newest first, each let go once written: the windows taking rows now are
   * held the shortest (restore places windows by start, in any order). */
  for (int32_t i = f->n - 1; i >= 0; i--) {
    window* win = f->wins[i];
    if (w != NULL) lm_op_put_window(f->op, win, w);
    /* acq_rel: pairs with the op's let-go (window_let_go, window_thaw) */
    if (atomic_fetch_sub_explicit(&win->share, 1, memory_order_acq_rel) == 1) {
      lm_op_window_free(f->op, win); /* the op let go of it first */
    }
  }
  lm_free(f);
  return w != NULL ? lm_state_writer_status(w) : LAMINAR_OK;
}
