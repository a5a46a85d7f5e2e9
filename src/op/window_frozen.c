/*
 * window_frozen.c -- checkpoints of the window operator by copy-on-write
 * (op/op.h freeze / write_frozen; docs/DURABILITY.md "How it works"): the
 * stall freezes the op's state, the checkpoint's thread encodes it while the
 * op runs on, and the op copies what a checkpoint still holds before
 * changing it. Shared structs in op/internal.h; the session operator's
 * copy-on-write is in op/session.c.
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
  int32_t n;
  window* wins[];
} window_frozen;


/* A window to fill: a recycled one, or a new one. */
static laminar_code window_take(window_op* op, window** out) {
  if (op->nspare > 0) {
    *out = op->spare[--op->nspare];
    return LAMINAR_OK;
  }
  return lm_op_window_new(op, out);
}

/* ---- first-touch copies by blocks of groups ------------------------------------ */

/* Copying a frozen window whole before its first change pauses the reactor
 * for the whole window (~0.5 s at 6.4M groups). A window of flat aggregate
 * states (lm_agg_states_flat: no value sets, strings or run stacks shared by
 * groups), without tracking or panes and of more than two blocks, is copied
 * by blocks instead: the copy gets the original's size and group count but
 * no content; a row's lookup first copies the table blocks its probe crosses
 * and the group blocks of the groups it meets (hashes, keys, aggregate
 * states), so the groups it returns -- and only they are updated -- are
 * whole. Each chunk into the window also copies a few more blocks, so the
 * copy completes; whatever else reads the window (emission, a restore into
 * it) completes it first (lm_op_window_cow_settle), a snapshot reads each
 * block from where it is (lm_op_window_cow_group_src). The copy holds the
 * original (as the checkpoint writer does, window->share) until it is whole.
 * A checkpoint that freezes a copy still partial encodes it through its
 * original, and the op's next change copies it whole (never a copy of a
 * copy). */

enum {
  GBLOCK_SHIFT = 12, /* 4096 groups a block */
  TBLOCK_SHIFT = 12, /* 4096 table slots (16 KiB) a block */
  COW_STEP = 2,      /* blocks copied ahead by each chunk into a partial copy */
};

struct window_cow {
  window* src;      /* the frozen original, read only */
  int64_t ngb, ntb; /* group blocks (of src's groups), table blocks */
  int64_t left;     /* blocks not copied yet */
  int64_t next;     /* the next block to copy ahead (group blocks, then table) */
  uint8_t done[];   /* ngb group blocks, then ntb table blocks: 1 when copied */
};

static bool cow_by_blocks(const window_op* op, const window* w) {
  if (op->track || op->panes || w->t.n <= (2 << GBLOCK_SHIFT)) return false;
  for (int32_t a = 0; a < op->spec.naggs; a++) {
    if (!lm_agg_states_flat(&w->aggs[a])) return false;
  }
  return true;
}

const window* lm_op_window_cow_group_src(const window* w, int64_t g) {
  const struct window_cow* cow = w->cow;
  if (g >= cow->src->t.n || cow->done[g >> GBLOCK_SHIFT]) return w;
  return cow->src;
}

/* Groups [lo, lo + n) of `from` into the same groups of dst (room reserved):
 * hashes, keys, flat aggregate states. */
static laminar_code groups_copy_range(window_op* op, window* dst, const window* from,
                                      int64_t lo, int64_t n) {
  if (n <= 0) return LAMINAR_OK;
  LM_TRY(lm_state_table_copy_rows(&dst->t, &from->t, lo, n, !op->panes));
  for (int32_t a = 0; a < op->spec.naggs; a++) {
    lm_agg_states_copy_range(&dst->aggs[a], &from->aggs[a], lo, n);
  }
  return LAMINAR_OK;
}

static laminar_code cow_copy_block(window_op* op, window* c, int64_t b) {
  struct window_cow* cow = c->cow;
  const window* src = cow->src;
  if (b < cow->ngb) {
    int64_t lo = b << GBLOCK_SHIFT;
    int64_t n = src->t.n - lo < (1 << GBLOCK_SHIFT) ? src->t.n - lo : (1 << GBLOCK_SHIFT);
    LM_TRY(groups_copy_range(op, c, src, lo, n));
    op->thawed_groups += n;
  } else {
    int64_t lo = (b - cow->ngb) << TBLOCK_SHIFT, tsize = (int64_t)src->t.mask + 1;
    int64_t n = tsize - lo < (1 << TBLOCK_SHIFT) ? tsize - lo : (1 << TBLOCK_SHIFT);
    lm_state_table_copy_index(&c->t, &src->t, lo, n);
  }
  cow->done[b] = 1;
  cow->left--;
  return LAMINAR_OK;
}

/* The copy is whole: let go of the original. */
static void cow_finish(window_op* op, window* c) {
  window* src = c->cow->src;
  lm_free(c->cow);
  c->cow = NULL;
  lm_op_window_let_go(op, src);
}

static laminar_code cow_complete(window_op* op, window* c) {
  for (int64_t b = 0; b < c->cow->ngb + c->cow->ntb; b++) {
    if (!c->cow->done[b]) LM_TRY(cow_copy_block(op, c, b));
  }
  cow_finish(op, c);
  return LAMINAR_OK;
}

/* Open window i (held by a checkpoint, whole) becomes a copy by blocks. */
static laminar_code cow_start(window_op* op, int32_t i) {
  window* w = op->open[i];
  int64_t tsize = (int64_t)w->t.mask + 1;
  int64_t ngb = (w->t.n + (1 << GBLOCK_SHIFT) - 1) >> GBLOCK_SHIFT;
  int64_t ntb = (tsize + (1 << TBLOCK_SHIFT) - 1) >> TBLOCK_SHIFT;
  struct window_cow* cow = lm_calloc(1, sizeof *cow + (size_t)(ngb + ntb));
  if (cow == NULL) return LAMINAR_ERR_NOMEM;
  window* c = NULL;
  laminar_code rc = window_take(op, &c);
  if (rc == LAMINAR_OK) rc = lm_op_window_reserve(op, c, w->t.n);
  if (rc == LAMINAR_OK) rc = lm_state_table_index_like(&c->t, &w->t);
  if (rc != LAMINAR_OK) {
    lm_free(cow);
    if (c != NULL) lm_op_window_recycle(op, c);
    return rc;
  }
  *cow = (struct window_cow){.src = w, .ngb = ngb, .ntb = ntb, .left = ngb + ntb};
  c->cow = cow;
  c->start = w->start;
  c->t.n = w->t.n;
  c->edit = w->edit;
  op->open[i] = c;
  op->thaws++;
  return LAMINAR_OK;
}

laminar_code lm_op_window_cow_groups(window_op* op, window* w, const uint32_t* sel,
                                     int64_t m, const uint64_t* hashes, uint32_t* gids) {
  for (int64_t j = 0; j < m; j++) {
    uint32_t r = sel[j];
    struct window_cow* cow = w->cow;
    if (cow != NULL) {
      /* Every table slot the probe reads and every group it compares. */
      uint32_t slot = (uint32_t)hashes[r] & w->t.mask;
      for (;;) {
        int64_t t = cow->ngb + (slot >> TBLOCK_SHIFT);
        if (!cow->done[t]) LM_TRY(cow_copy_block(op, w, t));
        uint32_t e = w->t.index[slot];
        if (e == 0) break;
        int64_t g = e - 1;
        if (g < cow->src->t.n && !cow->done[g >> GBLOCK_SHIFT]) {
          LM_TRY(cow_copy_block(op, w, g >> GBLOCK_SHIFT));
        }
        slot = (slot + 1) & w->t.mask;
      }
      /* A new group would rebuild the table from every group's hash. */
      if (lm_state_table_must_grow(&w->t)) LM_TRY(cow_complete(op, w));
    }
    LM_TRY(lm_op_group_find_or_add(op, w, hashes[r], op->key_vecs, r, &gids[j]));
  }
  for (int32_t k = 0; w->cow != NULL && k < COW_STEP; k++) { /* a few blocks ahead */
    struct window_cow* cow = w->cow;
    while (cow->next < cow->ngb + cow->ntb && cow->done[cow->next]) cow->next++;
    if (cow->next < cow->ngb + cow->ntb) LM_TRY(cow_copy_block(op, w, cow->next));
  }
  if (w->cow != NULL && w->cow->left == 0) cow_finish(op, w);
  return LAMINAR_OK;
}

laminar_code lm_op_window_cow_settle(window_op* op, int32_t i) {
  /* acquire: pairs with the checkpoint writer's release when it lets go */
  if (atomic_load_explicit(&op->open[i]->share, memory_order_acquire) != 0) {
    LM_TRY(lm_op_window_thaw(op, i)); /* held: copied whole (or the writer is done) */
  }
  if (op->open[i]->cow != NULL) LM_TRY(cow_complete(op, op->open[i]));
  return LAMINAR_OK;
}

void lm_op_window_cow_release(window_op* op, window* w) {
  window* src = w->cow->src;
  lm_free(w->cow);
  w->cow = NULL;
  /* acq_rel: pairs with the writer's let-go of src (window_write_frozen) */
  if (atomic_fetch_sub_explicit(&src->share, 1, memory_order_acq_rel) == 1) {
    lm_op_window_free(op, src);
  }
}

/* dst (empty) becomes a whole copy of c, a copy by blocks: each block from
 * c or, not copied yet, from c's original. */
static laminar_code window_copy_through(window_op* op, window* dst, const window* c) {
  const struct window_cow* cow = c->cow;
  const window* src = cow->src;
  int64_t n = c->t.n, tsize = (int64_t)c->t.mask + 1;
  LM_TRY(lm_op_window_reserve(op, dst, n > 0 ? n : 1));
  LM_TRY(lm_state_table_index_like(&dst->t, &c->t));
  for (int64_t t = 0; t < cow->ntb; t++) {
    int64_t lo = t << TBLOCK_SHIFT;
    int64_t len = tsize - lo < (1 << TBLOCK_SHIFT) ? tsize - lo : (1 << TBLOCK_SHIFT);
    const window* from = cow->done[cow->ngb + t] ? c : src;
    lm_state_table_copy_index(&dst->t, &from->t, lo, len);
  }
  for (int64_t lo = 0; lo < n; lo += 1 << GBLOCK_SHIFT) {
    int64_t hi = n - lo < (1 << GBLOCK_SHIFT) ? n : lo + (1 << GBLOCK_SHIFT);
    /* Of a block not copied, the original's groups from it, new ones from c. */
    int64_t mid = lo;
    if (lm_op_window_cow_group_src(c, lo) == src) mid = hi < src->t.n ? hi : src->t.n;
    LM_TRY(groups_copy_range(op, dst, src, lo, mid - lo));
    LM_TRY(groups_copy_range(op, dst, c, mid, hi - mid));
  }
  dst->start = c->start;
  dst->t.n = n;
  dst->edit = c->edit;
  return LAMINAR_OK;
}

/* dst (empty) takes src's groups' table: index, hashes and keys (strings
 * into dst's pool; a pane's stay borrowed from the op's keyset). */
static laminar_code groups_copy(window_op* op, window* dst, const window* src) {
  LM_TRY(lm_op_window_reserve(op, dst, src->t.n > 0 ? src->t.n : 1));
  return lm_state_table_copy(&dst->t, &src->t, !op->panes);
}

static laminar_code window_copy(window_op* op, window* dst, const window* src) {
  if (src->cow != NULL) return window_copy_through(op, dst, src);
  int64_t n = src->t.n;
  LM_TRY(groups_copy(op, dst, src));
  for (int32_t a = 0; a < op->spec.naggs; a++) {
    LM_TRY(lm_agg_states_copy(&dst->aggs[a], &src->aggs[a], n));
  }
  if (op->track && n > 0) {
    memcpy(dst->nrows, src->nrows, sizeof(int64_t) * (size_t)n);
    memcpy(dst->live, src->live, (size_t)n);
    memcpy(dst->stamp, src->stamp, sizeof(uint64_t) * (size_t)n);
    if (src->last != NULL) memcpy(dst->last, src->last, sizeof(int64_t) * (size_t)n);
  }
  if (op->panes && n > 0) memcpy(dst->kid, src->kid, sizeof(uint32_t) * (size_t)n);
  dst->start = src->start;
  dst->t.n = n;
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
  if (w->cow != NULL) { /* a copy by blocks: let go of its original too */
    window* src = w->cow->src;
    lm_free(w->cow);
    w->cow = NULL;
    lm_op_window_let_go(op, src);
  }
  lm_op_window_recycle(op, w);
}

/* Make open window i the op's to change: a copy when a checkpoint still
 * reads it. */
laminar_code lm_op_window_thaw(window_op* op, int32_t i) {
  window* w = op->open[i];
  if (atomic_load_explicit(&w->share, memory_order_acquire) == 2) {
    if (w->cow == NULL && cow_by_blocks(op, w)) return cow_start(op, i);
    window* copy;
    LM_TRY(window_take(op, &copy));
    laminar_code rc = window_copy(op, copy, w);
    if (rc != LAMINAR_OK) {
      /* Groups the copy overwrote get their empty states back in the reset. */
      copy->t.n = w->t.n < copy->cap ? w->t.n : copy->cap;
      lm_op_window_recycle(op, copy);
      return rc;
    }
    op->open[i] = copy;
    op->thaws++;
    op->thawed_groups += copy->t.n;
    lm_op_window_let_go(op, w);
    return LAMINAR_OK;
  }
  atomic_store_explicit(&w->share, 0,
                        memory_order_relaxed); /* the writer is done with it */
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
  f->n = op->nopen;
  for (int32_t i = 0; i < op->nopen; i++) {
    window* w = op->open[i];
    /* A window still held by an earlier checkpoint cannot be: checkpoints
     * write what they froze before the next one begins. */
    atomic_store_explicit(&w->share, 2,
                          memory_order_relaxed); /* published by the resume */
    f->wins[i] = w;
  }
  *out = f;
  return LAMINAR_OK;
}

laminar_code lm_op_window_write_frozen(void* frozen, lm_state_writer* w) {
  window_frozen* f = frozen;
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
