/*
 * session.c -- the session operator: session windows, with its own vtable
 * (lm_op_session_vtable; lm_op_window_create makes one for a session spec).
 * It shares window_op and the window operator's input preparation, row
 * buffer and bound accounting (op/internal.h); its keys are interned in a
 * keyed state table (state/table.h).
 *
 * session(ts, gap): per key, a row at t opens the window [t, t + gap); windows
 * of one key that overlap merge into one session [first, last + gap). Keys are
 * interned in `keyset` (a window used only for its key table: key id = group
 * id); each open session is a slot with its bounds, its key and one group of
 * aggregate state in `sagg`; a key's open sessions form a list sorted by start
 * (they never overlap). Within a chunk rows are assigned slots first and the
 * aggregates updated in one pass: a row that bridges two sessions merges the
 * later one's state into the earlier (lm_agg_merge) and points it there
 * (`s_parent`), so rows of the chunk already assigned to it follow (the
 * earlier one, if open before the chunk, is first copied into a slot of the
 * chunk: all or nothing, op/internal.h). A session closes when the watermark reaches its end plus the allowed lateness; a row
 * is late when it joins no open session and its own window has closed.
 *
 * EMIT CHANGES: a session that a chunk creates, grows or merges into emits a
 * -1 row of its previous result (unless the chunk created it) before it
 * changes, and a +1 row of its new result after the chunk; a session merged
 * away by a bridging row emits only its -1. Closing emits nothing. The chunk
 * updates copies of the sessions it touches (slot_own), which take their
 * places only once its rows went downstream (session_apply).
 */
#include "op/op.h"

#include "op/internal.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

static void put_session_row(window_op* op, int32_t s, int64_t weight);
static laminar_code session_thaw(window_op* op);

/* The session fields a chunk's journal restores (op->sj_where: index * 8 +
 * field). */
enum { J_NEXT, J_FIRST, J_PARENT, J_START, J_END };

/* Journal field `f` of slot (key, for J_FIRST) i before its first write in
 * the chunk (jset). */
__attribute__((noinline)) static laminar_code journal_field(window_op* op, int f,
                                                            int64_t i) {
  int64_t was;
  switch (f) {
    case J_NEXT: was = op->s_next[i]; break;
    case J_FIRST: was = op->k_first[i]; break;
    case J_PARENT: was = op->s_parent[i]; break;
    case J_START: was = op->s_start[i]; break;
    default: was = op->s_end[i]; break;
  }
  if (op->sj_nlog == 8 * op->sj_cap) return LAMINAR_ERR_NOMEM; /* (at most 7 a row) */
  op->sj_where[op->sj_nlog] = i * 8 + f;
  op->sj_was[op->sj_nlog++] = was;
  return LAMINAR_OK;
}

/* Set field `f` of slot (key, for J_FIRST) i to v, journaled in a chunk:
 * only a slot's (key's) first write of each field in the chunk, whose old
 * value the undo restores (it replays backwards, so later writes of the
 * field need no entry), and none for a slot the chunk took (the undo gives
 * it back whole). The marks: the chunk's pass << 5 | the fields written. */
static inline laminar_code jset(window_op* op, int f, int64_t i, int64_t v) {
  if (op->sj_where != NULL) {
    uint64_t* mark = f == J_FIRST ? &op->k_jmark[i] : &op->s_jmark[i];
    uint64_t m = *mark;
    if ((m >> 5) != op->pass) m = op->pass << 5;
    if (!(m & (1u << f)) && (f == J_FIRST || op->s_used[i] != 2))
      LM_TRY(journal_field(op, f, i));
    *mark = m | (1u << f);
  }
  switch (f) {
    case J_NEXT: op->s_next[i] = (int32_t)v; break;
    case J_FIRST: op->k_first[i] = (int32_t)v; break;
    case J_PARENT: op->s_parent[i] = (int32_t)v; break;
    case J_START: op->s_start[i] = v; break;
    default: op->s_end[i] = v; break;
  }
  return LAMINAR_OK;
}

/* Point the link before a key's slot (prev, or the key's first if prev < 0)
 * at `to`. */
static laminar_code set_link(window_op* op, uint32_t kid, int32_t prev, int32_t to) {
  return prev < 0 ? jset(op, J_FIRST, kid, to) : jset(op, J_NEXT, prev, to);
}

/* A slot to fill (journaled in a chunk, and marked as the chunk's: s_used 2
 * until it is applied). */
static laminar_code slot_take(window_op* op, int32_t* out) {
  if (op->sj_made != NULL && op->sj_nmade == op->sj_cap) return LAMINAR_ERR_NOMEM;
  int32_t s;
  bool reused = op->s_free >= 0;
  if (reused) {
    s = op->s_free;
    op->s_free = op->s_next[s];
  } else {
    if (op->s_hw == op->s_cap) {
      int32_t ncap = op->s_cap ? op->s_cap * 2 : 64;
      LM_GROW_ARRAY(op->s_start, ncap);
      LM_GROW_ARRAY(op->s_end, ncap);
      LM_GROW_ARRAY(op->s_key, ncap);
      LM_GROW_ARRAY(op->s_next, ncap);
      LM_GROW_ARRAY(op->s_parent, ncap);
      LM_GROW_ARRAY(op->s_used, ncap);
      LM_GROW_ARRAY(op->s_stamp, ncap);
      LM_GROW_ARRAY(op->s_jmark, ncap);
      for (int32_t a = 0; a < op->spec.naggs; a++) {
        LM_TRY(lm_agg_states_reserve(&op->sagg[a], ncap));
      }
      op->s_cap = ncap;
    }
    s = op->s_hw++;
  }
  if (op->sj_made != NULL) op->sj_made[op->sj_nmade++] = reused ? s : ~s;
  op->s_parent[s] = s;
  op->s_used[s] = op->sj_made != NULL ? 2 : 1;
  op->s_stamp[s] = op->pass;
  op->s_jmark[s] = 0;
  op->s_open++;
  for (int32_t a = 0; a < op->spec.naggs; a++) lm_agg_states_init_group(&op->sagg[a], s);
  *out = s;
  return LAMINAR_OK;
}

/* EMIT CHANGES: slot s is about to change in this chunk (op->pass). The
 * first time, retract its emitted row and remember it for its +1. */
static inline laminar_code slot_touch(window_op* op, int32_t s) {
  if (op->s_touched == NULL || op->s_stamp[s] == op->pass) return LAMINAR_OK;
  op->s_stamp[s] = op->pass;
  LM_TRY(lm_op_rows_reserve(op, 1));
  put_session_row(op, s, -1);
  op->s_touched[op->s_ntouched++] = s;
  return LAMINAR_OK;
}

/* Session s of key kid (after prev) is about to take another's aggregate
 * states: a slot the chunk took takes them; one open before the chunk is
 * first copied into a slot of the chunk that takes its place (*out; s
 * points to it, and goes once the chunk is applied: op->sj_old), so its own
 * states stay as they were until then. */
__attribute__((noinline)) static laminar_code slot_own(window_op* op, uint32_t kid,
                                                       int32_t prev, int32_t s,
                                                       int32_t* out) {
  *out = s;
  if (op->s_used[s] == 2) return LAMINAR_OK;
  if (op->sj_nold == op->sj_cap) return LAMINAR_ERR_NOMEM; /* (at most one a row) */
  int32_t c;
  LM_TRY(slot_take(op, &c));
  op->s_start[c] = op->s_start[s];
  op->s_end[c] = op->s_end[s];
  op->s_key[c] = op->s_key[s];
  op->s_next[c] = op->s_next[s];
  for (int32_t a = 0; a < op->spec.naggs; a++) {
    LM_TRY(lm_agg_merge(&op->sagg[a], c, &op->sagg[a], s));
  }
  LM_TRY(set_link(op, kid, prev, c));
  LM_TRY(jset(op, J_PARENT, s, c));
  op->sj_old[op->sj_nold++] = s;
  if (op->s_touched != NULL) op->s_touched[op->s_ntouched++] = c; /* (s's -1 is out) */
  *out = c;
  return LAMINAR_OK;
}

static int32_t slot_find(const window_op* op, int32_t s) {
  while (op->s_parent[s] != s) s = op->s_parent[s];
  return s;
}

/* A fresh slot for key `kid`, [start, end), linked into the key's list. */
__attribute__((noinline)) static laminar_code slot_new(window_op* op, uint32_t kid,
                                                       int64_t start, int64_t end,
                                                       int32_t* out) {
  int32_t s;
  LM_TRY(slot_take(op, &s));
  op->s_start[s] = start;
  op->s_end[s] = end;
  op->s_key[s] = kid;
  /* Sorted insert into the key's list. */
  int32_t prev = -1, cur = op->k_first[kid];
  while (cur >= 0 && op->s_start[cur] < start) {
    prev = cur;
    cur = op->s_next[cur];
  }
  op->s_next[s] = cur;
  LM_TRY(set_link(op, kid, prev, s));
  if (op->s_touched != NULL) op->s_touched[op->s_ntouched++] = s;
  *out = s;
  return LAMINAR_OK;
}

static void slot_release(window_op* op, int32_t s) {
  for (int32_t a = 0; a < op->spec.naggs; a++) lm_agg_states_drop_group(&op->sagg[a], s);
  op->s_used[s] = 0;
  op->s_parent[s] = s;
  op->s_next[s] = op->s_free;
  op->s_free = s;
  op->s_open--;
}

/* Take slot s out of its key's list and release it. */
static void slot_unlink(window_op* op, int32_t s) {
  uint32_t kid = op->s_key[s];
  int32_t prev = -1, cur = op->k_first[kid];
  while (cur != s) {
    prev = cur;
    cur = op->s_next[cur];
  }
  if (prev < 0) {
    op->k_first[kid] = op->s_next[s];
  } else {
    op->s_next[prev] = op->s_next[s];
  }
  slot_release(op, s);
}

/* Room for key ids < n in k_first. */
static laminar_code keys_grow(window_op* op, int64_t n) {
  int64_t ncap = op->k_cap ? op->k_cap * 2 : 64;
  while (ncap < n) ncap *= 2;
  LM_GROW_ARRAY(op->k_first, ncap);
  LM_GROW_ARRAY(op->k_jmark, ncap);
  for (int64_t k = op->k_cap; k < ncap; k++) op->k_first[k] = -1, op->k_jmark[k] = 0;
  op->k_cap = ncap;
  return LAMINAR_OK;
}

static inline laminar_code keys_reserve(window_op* op, int64_t n) {
  return n <= op->k_cap ? LAMINAR_OK : keys_grow(op, n);
}

/* The slot row k at time t joins (merging the sessions it bridges), or -1 if
 * the row is late. Merged-away slots are appended to `dead`. */
static laminar_code session_assign(window_op* op, uint32_t kid, int64_t t, int32_t* dead,
                                   int64_t* ndead, int32_t* out) {
  int64_t lo = t, hi;
  if (__builtin_add_overflow(t, op->spec.size_ms, &hi)) hi = INT64_MAX;
  int32_t survivor = -1, sprev = -1, prev = -1, cur = op->k_first[kid];
  while (cur >= 0 && op->s_start[cur] < hi) {
    int32_t next = op->s_next[cur];
    if (op->s_end[cur] > lo) { /* overlaps [lo, hi) */
      LM_TRY(slot_touch(op, cur));
      if (survivor < 0) {
        /* EMIT CHANGES: a session open before the chunk is copied into a
         * slot of the chunk that takes its place, so that the chunk is
         * undone whole when its rows fail downstream (session_apply). */
        if (op->s_touched != NULL) LM_TRY(slot_own(op, kid, prev, cur, &cur));
        survivor = cur;
        sprev = prev;
        if (lo < op->s_start[cur]) LM_TRY(jset(op, J_START, cur, lo));
        if (hi > op->s_end[cur]) LM_TRY(jset(op, J_END, cur, hi));
        prev = cur;
      } else { /* a bridge: fold cur into the survivor (the chunk's own) */
        LM_TRY(slot_own(op, kid, sprev, survivor, &survivor));
        prev = survivor;
        for (int32_t a = 0; a < op->spec.naggs; a++) {
          LM_TRY(lm_agg_merge(&op->sagg[a], survivor, &op->sagg[a], cur));
        }
        if (op->s_end[cur] > op->s_end[survivor]) {
          LM_TRY(jset(op, J_END, survivor, op->s_end[cur]));
        }
        LM_TRY(jset(op, J_PARENT, cur, survivor));
        LM_TRY(set_link(op, kid, prev, next));
        dead[(*ndead)++] = cur;
      }
    } else {
      prev = cur;
    }
    cur = next;
  }
  if (survivor >= 0) {
    *out = survivor;
    return LAMINAR_OK;
  }
  int64_t close;
  if (__builtin_add_overflow(hi, op->spec.lateness_ms, &close)) close = INT64_MAX;
  if (close <= lm_op_window_late_wm(op)) {
    *out = -1;
    return LAMINAR_OK;
  }
  return slot_new(op, kid, lo, hi, out);
}

/* A chunk failed before its aggregate updates: the fields it wrote are
 * restored (backwards), the slots it took go back (in reverse, so the free
 * list and the high-water mark are as before); the old slots' aggregate
 * states were never changed. No allocation. */
static void session_undo(window_op* op) {
  for (int64_t i = op->sj_nlog - 1; i >= 0; i--) {
    int64_t at = op->sj_where[i] / 8, was = op->sj_was[i];
    switch (op->sj_where[i] % 8) {
      case J_NEXT: op->s_next[at] = (int32_t)was; break;
      case J_FIRST: op->k_first[at] = (int32_t)was; break;
      case J_PARENT: op->s_parent[at] = (int32_t)was; break;
      case J_START: op->s_start[at] = was; break;
      default: op->s_end[at] = was; break;
    }
  }
  for (int64_t i = op->sj_nmade - 1; i >= 0; i--) {
    int32_t s = op->sj_made[i] >= 0 ? op->sj_made[i] : ~op->sj_made[i];
    for (int32_t a = 0; a < op->spec.naggs; a++)
      lm_agg_states_drop_group(&op->sagg[a], s);
    op->s_used[s] = 0;
    op->s_parent[s] = s;
    op->s_open--;
    if (op->sj_made[i] >= 0) {
      op->s_next[s] = op->s_free;
      op->s_free = s;
    } else {
      op->s_hw--; /* (s was the last) */
    }
  }
}

/* The chunk's journal off (slots restored from a snapshot are not). */
static void journal_end(window_op* op) {
  op->sj_made = op->sj_old = NULL;
  op->sj_where = op->sj_was = NULL;
  op->sj_nmade = op->sj_nold = op->sj_nlog = op->sj_cap = 0;
  op->s_touched = NULL;
}

static laminar_code session_chunk(window_op* op, const lm_chunk* in,
                                  const uint64_t* given, int32_t* dead, int64_t* ndead,
                                  bool* out_updating);

static laminar_code session_apply(window_op* op, const lm_chunk* in,
                                  const uint64_t* given, bool* out_applied) {
  *out_applied = false;
  int64_t n = in->nrows;
  int32_t* dead = lm_eval_ctx_alloc(op->ctx, sizeof(int32_t) * (size_t)n);
  if (dead == NULL) return LAMINAR_ERR_NOMEM;
  LM_TRY(session_thaw(op)); /* a checkpoint may still read the state */
  /* The journal: a row takes at most one slot (new, or a copy of an old
   * one), and writes at most seven fields. */
  op->pass++;
  op->sj_cap = n;
  op->sj_made = lm_eval_ctx_alloc(op->ctx, sizeof(int32_t) * (size_t)n);
  op->sj_old = lm_eval_ctx_alloc(op->ctx, sizeof(int32_t) * (size_t)n);
  op->sj_was = lm_eval_ctx_alloc(op->ctx, sizeof(int64_t) * (size_t)(8 * n));
  op->sj_where = lm_eval_ctx_alloc(op->ctx, sizeof(int64_t) * (size_t)(8 * n));
  if (!op->sj_made || !op->sj_old || !op->sj_was || !op->sj_where) {
    journal_end(op);
    return LAMINAR_ERR_NOMEM;
  }
  op->sj_nmade = op->sj_nold = op->sj_nlog = 0;
  int64_t ndead = 0;
  bool updating = false;
  laminar_code rc = session_chunk(op, in, given, dead, &ndead, &updating);
  /* EMIT CHANGES: the chunk updated slots of its own only (copies of the
   * sessions it touched, new ones): the +1 rows of those still open (their
   * room reserved) go downstream, and the late rows to the late stream,
   * before the chunk is applied; a failure there undoes it like one
   * before the updates. */
  bool changes = op->s_touched != NULL;
  if (rc == LAMINAR_OK && changes) {
    for (int64_t i = 0; i < op->s_ntouched; i++) {
      int32_t s = op->s_touched[i];
      if (op->s_parent[s] == s) put_session_row(op, s, +1);
    }
    rc = lm_op_rows_flush(op);
    if (rc == LAMINAR_OK) rc = lm_op_late_deliver(op, in);
  }
  if (rc != LAMINAR_OK && (!updating || changes)) {
    op->dn = 0;
    session_undo(op);
    journal_end(op);
    return rc;
  }
  if (rc != LAMINAR_OK) { /* (prepared: cannot happen) */
    lm_state_budget_fail(op->base.budget, rc,
                         "%s while updating a session window's aggregates: this batch is "
                         "partly applied",
                         laminar_errstr(rc));
  }
  /* Applied: the chunk's slots are the op's now; the merged-away and
   * replaced slots go (after the rows out: their -1 rows borrowed their
   * strings). */
  for (int64_t i = 0; i < op->sj_nmade; i++) {
    op->s_used[op->sj_made[i] >= 0 ? op->sj_made[i] : ~op->sj_made[i]] = 1;
  }
  for (int64_t i = 0; i < op->sj_nold; i++) slot_release(op, op->sj_old[i]);
  for (int64_t i = 0; i < ndead; i++) slot_release(op, dead[i]);
  journal_end(op);
  *out_applied = true;
  return rc;
}

/* The chunk: slots assigned (journaled; merges into slots of the chunk
 * only), room for the aggregate updates (lm_agg_states_prepare), the bound
 * checked, EMIT CHANGES rows reserved; only then (*out_updating) the
 * updates, which cannot fail. */
static laminar_code session_chunk(window_op* op, const lm_chunk* in,
                                  const uint64_t* given, int32_t* dead, int64_t* ndead,
                                  bool* out_updating) {
  const lm_window_spec* spec = &op->spec;
  int64_t n = in->nrows;
  const lm_vec* tcol = &in->cols[spec->time_col];
  int64_t span = in->sel != NULL ? (int64_t)in->sel[n - 1] + 1 : n; /* rows < span */
  uint64_t* own =
      given ? NULL : lm_eval_ctx_alloc(op->ctx, sizeof(uint64_t) * (size_t)span);
  const uint64_t* hashes = given ? given : own;
  uint32_t* sel = lm_eval_ctx_alloc(op->ctx, sizeof(uint32_t) * (size_t)n);
  uint32_t* gids = lm_eval_ctx_alloc(op->ctx, sizeof(uint32_t) * (size_t)n);
  if (!hashes || !sel || !gids) return LAMINAR_ERR_NOMEM;
  if (own != NULL) lm_op_hash_keys(op->key_vecs, spec->nkeys, in->sel, n, own);
  int64_t m = 0;
  if (spec->emit_changes) {
    op->s_ntouched = 0;
    /* (a row touches at most two sessions and takes at most one slot) */
    op->s_touched = lm_eval_ctx_alloc(op->ctx, sizeof(int32_t) * (size_t)(3 * n));
    if (op->s_touched == NULL) return LAMINAR_ERR_NOMEM;
  }
  /* The chunk's rows by position: its selection, or 0..n-1 (one loop for
   * both; testing for a selection in it, per row, measured slower). */
  const uint32_t* rows = in->sel;
  if (rows == NULL) {
    uint32_t* all = lm_eval_ctx_alloc(op->ctx, sizeof(uint32_t) * (size_t)n);
    if (all == NULL) return LAMINAR_ERR_NOMEM;
    for (int64_t i = 0; i < n; i++) all[i] = (uint32_t)i;
    rows = all;
  }
  /* The key ids of the rows with a time, in one batch and in row order (the
   * direct probe of lm_op_groups_find_or_add: a lookup a row cost about 100
   * instructions, half of the operator's time). */
  const uint32_t* timed = rows;
  int64_t ntimed = n;
  if (tcol->nulls != NULL) {
    uint32_t* t = lm_eval_ctx_alloc(op->ctx, sizeof(uint32_t) * (size_t)n);
    if (t == NULL) return LAMINAR_ERR_NOMEM;
    ntimed = 0;
    for (int64_t i = 0; i < n; i++) {
      if (!tcol->nulls[rows[i]]) t[ntimed++] = rows[i];
    }
    timed = t;
  }
  uint32_t* kids = lm_eval_ctx_alloc(op->ctx, sizeof(uint32_t) * (size_t)n);
  if (kids == NULL) return LAMINAR_ERR_NOMEM;
  LM_TRY(lm_op_groups_find_or_add(op, op->keyset, timed, ntimed, hashes, kids));
  LM_TRY(keys_reserve(op, op->keyset->t.n));
  int64_t next_kid = 0;
  for (int64_t i = 0; i < n; i++) {
    int64_t k = rows[i];
    if (tcol->nulls && tcol->nulls[k]) {
      lm_op_late_row(op, k);
      continue;
    }
    uint32_t kid = kids[next_kid++];
    int32_t s;
    LM_TRY(session_assign(op, kid, lm_op_time_ms(tcol, k), dead, ndead, &s));
    if (s < 0) {
      lm_op_late_row(op, k);
      continue;
    }
    sel[m] = (uint32_t)k;
    gids[m++] = (uint32_t)s;
  }
  for (int64_t j = 0; j < m; j++) gids[j] = (uint32_t)slot_find(op, (int32_t)gids[j]);
  for (int32_t a = 0; a < spec->naggs; a++) {
    const lm_vec* arg = spec->aggs[a].arg ? &op->arg_vecs[a] : NULL;
    const lm_vec* ord = spec->aggs[a].order ? &op->ord_vecs[a] : NULL;
    LM_TRY(lm_agg_states_prepare(&op->sagg[a], arg, ord, sel, m, op->jseq));
  }
  LM_TRY(lm_op_window_account(op, op->base.checks_bound));
  if (op->s_touched != NULL) LM_TRY(lm_op_rows_reserve(op, op->s_ntouched));
  /* ON WINDOW CLOSE: the late rows go to the late stream before the first
   * update (EMIT CHANGES: after the rows, session_apply). */
  if (op->s_touched == NULL) LM_TRY(lm_op_late_deliver(op, in));
  *out_updating = true;
  for (int32_t a = 0; a < spec->naggs; a++) {
    const lm_vec* arg = spec->aggs[a].arg ? &op->arg_vecs[a] : NULL;
    const lm_vec* ord = spec->aggs[a].order ? &op->ord_vecs[a] : NULL;
    LM_TRY(lm_agg_update_ordered(&op->sagg[a], arg, ord, sel, gids, m));
  }
  return LAMINAR_OK;
}

typedef struct closing_session {
  int64_t start;
  uint32_t key;
  int32_t slot;
} closing_session;

static int cmp_session(const void* x, const void* y) {
  const closing_session *a = x, *b = y;
  if (a->start != b->start) return a->start < b->start ? -1 : 1;
  return (a->key > b->key) - (a->key < b->key);
}

/* One output row for session slot s (reserved by the caller); `weight` in
 * the trailing _weight column with EMIT CHANGES. */
static void put_session_row(window_op* op, int32_t s, int64_t weight) {
  const lm_window_spec* spec = &op->spec;
  int64_t row = op->dn++;
  lm_vec* v = op->dvecs;
  int64_t scale = spec->time_type == LM_TYPE_TIMESTAMP ? 1000 : 1, start, end;
  if (__builtin_mul_overflow(op->s_start[s], scale, &start)) start = INT64_MIN;
  if (__builtin_mul_overflow(op->s_end[s], scale, &end)) end = INT64_MAX;
  ((int64_t*)v[0].data)[row] = start;
  ((int64_t*)v[1].data)[row] = end;
  ((uint8_t*)v[0].nulls)[row] = 0;
  ((uint8_t*)v[1].nulls)[row] = 0;
  for (int32_t c = 0; c < spec->nkeys; c++) {
    lm_state_table_put_value(&v[2 + c], &op->keyset->t.keys[c], op->s_key[s], row);
  }
  for (int32_t a = 0; a < spec->naggs; a++) {
    lm_vec* ov = &v[2 + spec->nkeys + a];
    lm_agg_finalize(&op->sagg[a], s, 1, (char*)ov->data + lm_type_width(ov->type) * row,
                    (uint8_t*)ov->nulls + row);
  }
  if (spec->emit_changes) {
    lm_vec* wv = &v[2 + spec->nkeys + spec->naggs];
    ((int64_t*)wv->data)[row] = weight;
    ((uint8_t*)wv->nulls)[row] = 0;
  }
}

/* Emit every session whose end plus lateness the watermark reached, by start
 * then key, and free their slots. */
static laminar_code session_close(window_op* op) {
  int32_t nclose = 0;
  for (int32_t s = 0; s < op->s_hw; s++) {
    int64_t close;
    if (!op->s_used[s]) continue;
    if (__builtin_add_overflow(op->s_end[s], op->spec.lateness_ms, &close))
      close = INT64_MAX;
    if (close <= op->watermark) nclose++;
  }
  if (nclose == 0) return LAMINAR_OK;
  LM_TRY(session_thaw(op));
  lm_eval_ctx_reset(op->ctx);
  closing_session* closing = lm_eval_ctx_alloc(op->ctx, sizeof *closing * (size_t)nclose);
  if (closing == NULL) return LAMINAR_ERR_NOMEM;
  LM_TRY(lm_op_rows_reserve(op, nclose));
  int32_t k = 0;
  for (int32_t s = 0; s < op->s_hw; s++) {
    int64_t close;
    if (!op->s_used[s]) continue;
    if (__builtin_add_overflow(op->s_end[s], op->spec.lateness_ms, &close))
      close = INT64_MAX;
    if (close <= op->watermark)
      closing[k++] = (closing_session){op->s_start[s], op->s_key[s], s};
  }
  qsort(closing, (size_t)nclose, sizeof *closing, cmp_session);
  /* EMIT CHANGES: a session's last +1 stands; closing emits nothing. */
  for (int32_t i = 0; i < nclose && !op->spec.emit_changes; i++) {
    put_session_row(op, closing[i].slot, +1);
  }
  LM_TRY(lm_op_rows_flush(op)); /* downstream as before when it fails: they stay open */
  for (int32_t i = 0; i < nclose; i++) {
    slot_unlink(op, closing[i].slot);
  }
  if (op->s_open == 0) { /* nothing open: drop replaced MIN/MAX strings */
    for (int32_t a = 0; a < op->spec.naggs; a++) lm_agg_states_clear(&op->sagg[a]);
  }
  return LAMINAR_OK;
}

static void session_put(const window_op* op, lm_state_writer* w) {
  const window* ks = op->keyset;
  lm_state_put_i64(w, ks->t.n);
  for (int64_t g = 0; g < ks->t.n; g++) lm_state_table_put_keys(&ks->t, g, w);
  lm_state_put_u32(w, (uint32_t)op->s_open);
  for (int32_t s = 0; s < op->s_hw; s++) {
    if (!op->s_used[s]) continue;
    lm_state_put_u32(w, op->s_key[s]);
    lm_state_put_i64(w, op->s_start[s]);
    lm_state_put_i64(w, op->s_end[s]);
    for (int32_t a = 0; a < op->spec.naggs; a++)
      lm_agg_snapshot_group(&op->sagg[a], s, w);
  }
}

/* Forget every session and key (after a failed restore; the op's own
 * arrays: session_thaw first). */
static void session_clear(window_op* op) {
  lm_state_table_reset(&op->keyset->t);
  for (int64_t k = 0; k < op->k_cap; k++) op->k_first[k] = -1;
  op->s_hw = op->s_open = 0;
  op->s_free = -1;
  for (int32_t a = 0; a < op->spec.naggs; a++) lm_agg_states_clear(&op->sagg[a]);
}

/* Restore the sessions of the keys `f` keeps (op/op.h). */
static laminar_code session_get(window_op* op, lm_state_reader* r,
                                const lm_op_part_filter* f) {
  LM_TRY(session_thaw(op));
  if (!f->merge) session_clear(op);
  window* ks = op->keyset;
  int64_t nkeys = lm_state_get_i64(r);
  if (r->failed || nkeys < 0 || (uint64_t)nkeys > r->len) {
    r->failed = true;
    return LAMINAR_OK;
  }
  int64_t first = ks->t.n;
  LM_TRY(lm_op_window_reserve(op, ks, first + nkeys));
  LM_TRY(keys_reserve(op, first + nkeys));
  /* The snapshot's key ids -> ours (UINT32_MAX: another partition's key). */
  uint32_t* kids = lm_malloc(sizeof *kids * (size_t)(nkeys + 1));
  if (kids == NULL) return LAMINAR_ERR_NOMEM;
  int64_t g = first;
  for (int64_t j = 0; j < nkeys && !r->failed; j++) {
    laminar_code rc = lm_state_table_get_keys(&ks->t, g, r);
    if (rc != LAMINAR_OK) {
      lm_free(kids);
      return rc;
    }
    kids[j] =
        lm_op_part_of(ks->t.hash[g], f->nparts) == f->part ? (uint32_t)g++ : UINT32_MAX;
  }
  ks->t.n = g;
  laminar_code rc = lm_state_table_reindex(&ks->t);
  uint32_t nsess = lm_state_get_u32(r);
  for (uint32_t i = 0; i < nsess && !r->failed && rc == LAMINAR_OK; i++) {
    uint32_t kid = lm_state_get_u32(r);
    int64_t start = lm_state_get_i64(r), end = lm_state_get_i64(r);
    if (r->failed || kid >= (uint64_t)nkeys || end <= start) {
      r->failed = true;
      break;
    }
    /* Another partition's session is read into a slot of its own and freed. */
    bool keep = kids[kid] != UINT32_MAX;
    int32_t s;
    rc = slot_new(op, keep ? kids[kid] : 0, start, end, &s);
    for (int32_t a = 0; a < op->spec.naggs && rc == LAMINAR_OK; a++) {
      rc = lm_agg_restore_group(&op->sagg[a], s, r);
    }
    if (rc == LAMINAR_OK && !keep) slot_unlink(op, s);
  }
  lm_free(kids);
  return rc;
}

/* ---- checkpoints by copy-on-write ------------------------------------------------ */

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
  for (int32_t a = 0; c->sagg != NULL && a < op->spec.naggs; a++)
    lm_agg_states_free(&c->sagg[a]);
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

/* Copies of the op's session arrays, room for its s_cap slots: memcpy speed. */
#define COPY_SLOTS(field)                                                    \
  do {                                                                       \
    c->field = lm_malloc(sizeof(*c->field) * (size_t)(op->s_cap + 1));       \
    if (c->field == NULL) goto nomem;                                        \
    if (hw > 0) memcpy(c->field, op->field, sizeof(*c->field) * (size_t)hw); \
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
  /* The keyset interns keys only: its aggregate and tracking arrays are
   * never read, so the table, hashes and keys are all it needs. */
  if (c->sagg == NULL || lm_op_window_new(op, &c->keyset) != LAMINAR_OK ||
      lm_op_window_reserve(op, c->keyset, op->keyset->t.n + 1) != LAMINAR_OK ||
      lm_state_table_copy(&c->keyset->t, &op->keyset->t, true) != LAMINAR_OK) {
    goto nomem;
  }
  for (int32_t a = 0; a < op->spec.naggs; a++) {
    lm_agg_states_init(&c->sagg[a], &op->spec.aggs[a], op->sagg[a].arg_type);
    lm_agg_states_set_report(&c->sagg[a], &op->agg_report);
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

#define SWAP(field)              \
  do {                           \
    void* t_ = (void*)op->field; \
    op->field = c->field;        \
    c->field = t_;               \
  } while (0)

static laminar_code session_thaw(window_op* op) {
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
  /* acq_rel: pairs with the writer's let-go in session_write_frozen. 1: the
   * writer let go first, the originals (now in c) are ours to free. */
  if (atomic_fetch_sub_explicit(&op->s_share, 1, memory_order_acq_rel) == 1) {
    session_copy_free(op, c);
  } else {
    lm_free(c); /* the writer frees the originals through its holder */
  }
  return LAMINAR_OK;
}

#undef SWAP

/* A checkpoint's frozen sessions: the op's session arrays as they were at the
 * freeze, in an op-shaped holder (what session_put reads), shared with the op
 * until it changes them (op->s_share, session_thaw). */
typedef struct session_frozen {
  window_op* op;
  int64_t watermark;
  int64_t late_rows;
  window_op* held;
} session_frozen;

static laminar_code session_freeze(lm_op* base, void** out) {
  window_op* op = (window_op*)base;
  *out = NULL;
  session_frozen* f = lm_malloc(sizeof *f);
  if (f == NULL) return LAMINAR_ERR_NOMEM;
  *f = (session_frozen){.op = op, .watermark = op->watermark, .late_rows = op->late_rows};
  f->held = session_hold(op);
  if (f->held == NULL) {
    lm_free(f);
    return LAMINAR_ERR_NOMEM;
  }
  /* As windows: never still held by an earlier checkpoint. */
  atomic_store_explicit(&op->s_share, 2,
                        memory_order_relaxed); /* published by the resume */
  op->s_held = true;
  *out = f;
  return LAMINAR_OK;
}

static laminar_code session_write_frozen(void* frozen, lm_state_writer* w) {
  session_frozen* f = frozen;
  if (w != NULL) {
    lm_state_put_i64(w, f->watermark);
    lm_state_put_i64(w, f->late_rows);
    session_put(f->held, w);
  }
  /* acq_rel: pairs with the op's let-go in session_thaw. 1: the op let go
   * first (it copied them): the held arrays are ours to free. */
  if (atomic_fetch_sub_explicit(&f->op->s_share, 1, memory_order_acq_rel) == 1) {
    session_copy_free(f->op, f->held);
  } else {
    lm_free(f->held);
  }
  lm_free(f);
  return w != NULL ? lm_state_writer_status(w) : LAMINAR_OK;
}

/* ---- the operator ---------------------------------------------------------------- */

static laminar_code session_on_chunk(lm_op* base, const lm_chunk* in) {
  window_op* op = (window_op*)base;
  lm_chunk rows;
  const uint64_t* given;
  bool by_pos;
  laminar_code rc = lm_op_window_prepare(op, in, &rows, &given, &by_pos);
  if (rc == LAMINAR_OK && rows.nrows > 0) {
    /* All or nothing (issue 20): the sessions are as before a chunk that
     * fails (session_apply); its new keys, late rows and rows out go back
     * here. */
    lm_op_window_journal_begin(op);
    rc = lm_op_window_account(op, false);
    int64_t late_before = op->late_rows, nlate_before = op->nlate;
    bool applied = false;
    if (rc == LAMINAR_OK) rc = session_apply(op, &rows, given, &applied);
    if (rc != LAMINAR_OK && !applied) {
      op->late_rows = late_before;
      op->nlate = nlate_before;
      op->dn = 0; /* no EMIT CHANGES row of it was handed on */
      lm_op_window_truncate(op, op->keyset, op->jkeyset);
      lm_op_window_account(op, false);
      if (rc == LAMINAR_ERR_NOMEM) {
        lm_state_budget_fail(
            op->base.budget, rc,
            "out of memory in a session window; the batch was not applied "
            "(state unchanged)");
      }
      return rc;
    }
    lm_op_window_account(op, false);
  }
  return lm_op_window_chunk_failed(op, rc);
}

/* Close the sessions the watermark reached, then give their bytes back to
 * the bound. */
static laminar_code session_on_watermark(lm_op* base, int64_t watermark_ms) {
  window_op* op = (window_op*)base;
  laminar_code rc = LAMINAR_OK;
  if (watermark_ms > op->watermark) {
    op->watermark = watermark_ms;
    rc = lm_op_window_close_failed(op, session_close(op));
  }
  lm_op_window_account(op, false);
  return rc;
}

static laminar_code session_snapshot(const lm_op* base, lm_state_writer* w) {
  const window_op* op = (const window_op*)base;
  lm_state_put_i64(w, op->watermark);
  lm_state_put_i64(w, op->late_rows);
  session_put(op, w);
  return lm_state_writer_status(w);
}

static laminar_code session_restore_part(lm_op* base, lm_state_reader* r,
                                         const lm_op_part_filter* f, laminar_error* err) {
  window_op* op = (window_op*)base;
  lm_op_window_restore_head(op, r, f);
  LM_TRY(session_get(op, r, f));
  laminar_code rc = lm_state_reader_status(r, "session window aggregate", err);
  if (rc != LAMINAR_OK) session_clear(op);
  return rc;
}

static laminar_code session_restore(lm_op* base, lm_state_reader* r, laminar_error* err) {
  return session_restore_part(base, r, &lm_op_part_whole, err);
}

laminar_code lm_op_session_init(window_op* op) {
  op->sagg = lm_calloc((size_t)op->spec.naggs + 1, sizeof(lm_agg_states));
  if (op->sagg == NULL) return LAMINAR_ERR_NOMEM;
  for (int32_t a = 0; a < op->spec.naggs; a++) {
    const lm_agg_spec* as = &op->spec.aggs[a];
    lm_agg_states_init(&op->sagg[a], as, as->arg ? as->arg->type : LM_TYPE_NULL);
    lm_agg_states_set_report(&op->sagg[a], &op->agg_report);
  }
  return lm_op_window_new(op, &op->keyset);
}

const lm_op_vtable lm_op_session_vtable = {
    .name = "session",
    .on_chunk = session_on_chunk,
    .takes_sel = true,
    .on_watermark = session_on_watermark,
    .snapshot = session_snapshot,
    .restore = session_restore,
    .restore_part = session_restore_part,
    .destroy = lm_op_window_destroy,
    .freeze = session_freeze,
    .write_frozen = session_write_frozen,
};
