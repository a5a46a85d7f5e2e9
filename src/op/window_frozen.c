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
  /* Sessions: the op's session arrays as they were at the freeze, in an
   * op-shaped holder (what lm_op_session_snapshot reads), shared with the op
   * until it changes them (op->s_share, lm_op_session_thaw). */
  window_op* session;
  int32_t n;
  window* wins[];
} window_frozen;

/* Sessions have one state per operator, not per window: the freeze points a
 * holder at the arrays a snapshot reads (interned keys, slot bounds, keys and
 * flags, aggregate states) and marks them shared (s_share = 2) -- O(1). The
 * op copies them before its first change (lm_op_session_thaw) and goes on
 * with the copy; the arrays it does not snapshot (slot lists, parents,
 * stamps, first session per key) stay the op's. */

/* Free the session arrays c holds, and c. */
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

/* A holder of the op's session arrays as they are (nothing copied). */
static window_op* session_hold(const window_op* op) {
  window_op* c = lm_calloc(1, sizeof *c);
  if (c == NULL) return NULL;
  c->spec = op->spec;
  c->keyset = op->keyset;
  c->sagg = op->sagg;
  c->s_used = op->s_used;
  c->s_key = op->s_key;
  c->s_start = op->s_start;
  c->s_end = op->s_end;
  c->s_hw = op->s_hw;
  c->s_open = op->s_open;
  c->s_cap = op->s_cap;
  return c;
}

static laminar_code window_copy(window_op* op, window* dst, const window* src);

/* Copies of the op's session arrays, room for its s_cap slots: memcpy speed. */
#define COPY_SLOTS(field)                                                            \
  do {                                                                               \
    c->field = lm_malloc(sizeof(*c->field) * (size_t)(op->s_cap + 1));               \
    if (c->field == NULL) goto nomem;                                                \
    if (hw > 0) memcpy(c->field, op->field, sizeof(*c->field) * (size_t)hw);         \
  } while (0)

static laminar_code session_copy(window_op* op, window_op** out) {
  window_op* c = lm_calloc(1, sizeof *c);
  if (c == NULL) return LAMINAR_ERR_NOMEM;
  int64_t hw = op->s_hw;
  COPY_SLOTS(s_used);
  COPY_SLOTS(s_key);
  COPY_SLOTS(s_start);
  COPY_SLOTS(s_end);
  c->sagg = lm_calloc((size_t)op->spec.naggs + 1, sizeof(lm_agg_states));
  if (c->sagg == NULL || lm_op_window_new(op, &c->keyset) != LAMINAR_OK ||
      window_copy(op, c->keyset, op->keyset) != LAMINAR_OK) {
    goto nomem;
  }
  for (int32_t a = 0; a < op->spec.naggs; a++) {
    lm_agg_states_init(&c->sagg[a], &op->spec.aggs[a], op->sagg[a].arg_type);
    c->sagg[a].weighted = op->sagg[a].weighted;
    if (lm_agg_states_copy(&c->sagg[a], &op->sagg[a], hw) != LAMINAR_OK ||
        lm_agg_states_reserve(&c->sagg[a], op->s_cap) != LAMINAR_OK) {
      goto nomem;
    }
  }
  *out = c;
  return LAMINAR_OK;
nomem:
  session_copy_free(op, c);
  return LAMINAR_ERR_NOMEM;
}

#undef COPY_SLOTS

#define SWAP(field)           \
  do {                        \
    void* t_ = (void*)op->field; \
    op->field = c->field;     \
    c->field = t_;            \
  } while (0)

laminar_code lm_op_session_thaw(window_op* op) {
  if (!op->s_held) return LAMINAR_OK;
  if (atomic_load_explicit(&op->s_share, memory_order_acquire) != 2) {
    atomic_store_explicit(&op->s_share, 0, memory_order_relaxed); /* the writer is done */
    op->s_held = false;
    return LAMINAR_OK;
  }
  window_op* c;
  LM_TRY(session_copy(op, &c));
  op->s_held = false;
  SWAP(keyset);
  SWAP(sagg);
  SWAP(s_used);
  SWAP(s_key);
  SWAP(s_start);
  SWAP(s_end);
  op->thaws++;
  op->thawed_groups += op->s_open;
  /* acq_rel: pairs with the writer's let-go in window_write_frozen. 1: the
   * writer let go first, the originals (now in c) are ours to free. */
  if (atomic_fetch_sub_explicit(&op->s_share, 1, memory_order_acq_rel) == 1) {
    session_copy_free(op, c);
  } else {
    lm_free(c); /* the writer frees the originals through its holder */
  }
  return LAMINAR_OK;
}

#undef SWAP

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
    f->session = session_hold(op);
    if (f->session == NULL) {
      lm_free(f);
      return LAMINAR_ERR_NOMEM;
    }
    /* As windows: never still held by an earlier checkpoint. */
    atomic_store_explicit(&op->s_share, 2, memory_order_relaxed); /* published by the resume */
    op->s_held = true;
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
    /* acq_rel: pairs with the op's let-go in lm_op_session_thaw. 1: the op
     * let go first (it copied them): the held arrays are ours to free. */
    if (atomic_fetch_sub_explicit(&f->op->s_share, 1, memory_order_acq_rel) == 1) {
      session_copy_free(f->op, f->session);
    } else {
      lm_free(f->session);
    }
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
