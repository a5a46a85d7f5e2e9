/*
 * internal.h -- what the window operator's files share (op/window.c: tumbling
 * and hopping windows, emission, snapshots; op/window_panes.c: hopping windows
 * merged from panes; op/hop.c: hopping windows by sliding; op/session.c:
 * session windows; op/window_frozen.c: checkpoints by copy-on-write): the state
 * structs and the group-table, row-buffer and key snapshot helpers. Private
 * to src/op. Runs on the partition's thread only.
 */
#ifndef LM_OP_INTERNAL_H
#define LM_OP_INTERNAL_H

#include "agg/slide.h"
#include "op/op.h"
#include "util/pool.h"
#include "util/util.h"

#include <math.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

/* ---- group keys and windows ------------------------------------------------ */

typedef struct key_store {
  lm_type type;
  int64_t* i;     /* INT32, INT64, BOOL, TIMESTAMP */
  double* d;      /* DOUBLE */
  lm_str* s;      /* STRING (bytes in the window's pool) */
  uint8_t* nulls;
} key_store;

typedef struct window {
  int64_t start;
  int64_t ngroups;
  int64_t cap;
  int64_t ninit;        /* groups [ngroups, ninit) have empty aggregate states ready */
  uint64_t* ghash;
  key_store* keys;
  lm_agg_states* aggs;
  uint32_t* table;      /* group id + 1; 0 = empty */
  uint32_t table_mask;  /* table size - 1 */
  lm_pool strings;
  /* Tracked groups (EMIT CHANGES or a changelog input), else NULL: */
  int64_t* nrows;       /* rows of the group (sum of weights) */
  uint8_t* live;        /* EMIT CHANGES: its current result was emitted (+1) */
  uint64_t* stamp;      /* the update pass that last touched it */
  uint32_t* kid;        /* panes: the group's key id in the op's keyset */
  uint64_t edit;        /* panes: the op's edit count when rows last went in */
  /* Checkpoints (copy-on-write): who holds the window. 0: the op alone;
   * 2: the op and a frozen checkpoint state being written (set in the
   * stall); 1: one of them let go. Whoever lets go last owns it: the op
   * recycles it, the checkpoint writer frees it. The op copies a window
   * held by a checkpoint before changing it (op/window.c, "frozen"). */
  _Atomic int32_t share;
  /* A copy made by blocks of groups (op/window_frozen.c), else NULL: its
   * groups and table slots are valid only in the blocks copied so far, the
   * rest is read from the frozen original it holds. */
  struct window_cow* cow;
  uint64_t jseq;        /* the chunk (window_op.jseq) that journaled it last */
} window;

typedef struct window_op {
  lm_op base;
  lm_window_spec spec;
  lm_eval_ctx* ctx;
  window** open;        /* sorted by start */
  int32_t nopen;
  int32_t cap_open;
  window** spare;       /* recycled windows */
  int32_t nspare;
  int64_t watermark;    /* last watermark seen (epoch ms); INT64_MIN before any */
  int64_t late_rows;
  /* Late side output (lm_op_window_set_late_sink): where late rows go, and
   * this chunk's late row numbers (NULL when there is no sink). */
  lm_op_sink_fn late_fn;
  void* late_arg;
  /* The next chunk's key hashes from the router (lm_op_window_set_key_hashes),
   * else NULL; taken (and cleared) by that chunk. */
  const uint64_t* in_hashes;
  const lm_vec* in_args;  /* likewise its aggregate arguments (lm_op_window_set_args) */
  uint32_t* late_sel;
  int64_t nlate;
  lm_vec* key_vecs;
  lm_vec* arg_vecs;
  bool* arg_pos;          /* this chunk: arg_vecs[a] is by position in the selection */
  lm_vec* ord_vecs;       /* FIRST / LAST: the event time of each row */
  lm_vec* out_vecs;
  bool track;           /* emit_changes or a changelog input: per-group nrows */
  uint64_t pass;        /* update passes so far (stamps touched groups) */
  const int64_t* weights; /* this chunk's row weights (changelog input), else NULL */
  /* Hopping windows (EMIT ON WINDOW CLOSE, insert-only input) run on panes:
   * tumbling windows of gcd(size, hop) (spec.size_ms and hop_ms then hold the
   * pane); a window [ws, ws + out_size) is the merge of its panes when it
   * closes, so a row is aggregated once, not once per window. */
  bool panes;
  window* acc;            /* panes: the window being built from its panes */
  uint32_t* kmap;         /* panes: key id -> group of acc, valid where kstamp == pass */
  uint64_t* kstamp;
  int64_t kmap_cap;
  int64_t out_size;       /* window size of the output (bounds) */
  int64_t out_hop;        /* panes: the hop between window starts */
  /* Panes: partial merges shared by overlapping windows. With B panes per
   * window and blocks of B panes aligned at multiples of B, a window starting
   * at pane p = bB + r is suf[r] (panes p .. bB + B - 1, merged) plus run
   * (panes bB + B .. p + B - 1). Each is valid while no pane it covers took
   * rows after it was built (pane edit counts). */
  uint64_t edits;         /* row updates into panes so far */
  window** suf;           /* B suffix merges of block suf_block */
  int64_t suf_block;      /* INT64_MIN: none */
  int64_t suf_from;       /* suf[suf_from .. B) are built */
  uint64_t suf_edit;      /* edits when built */
  window* run;            /* prefix merge of block run_block, panes up to run_last */
  int64_t run_block, run_last;
  uint64_t run_edit;
  /* Panes: the sliding window (op/hop.c, agg/slide.h) when every aggregate
   * slides: panes [slide_lo, slide_hi) added to per-key-id states, valid
   * while none of them took rows after slide_edit; the keys of at least one
   * of those panes (slide_npanes > 0) listed in slide_live (slide_pos: where). */
  lm_agg_slide* slide;    /* naggs, or NULL: windows merge their panes */
  bool slide_valid;
  bool slide_fresh;       /* rebuilt from the panes for the window being built */
  int64_t slide_lo, slide_hi;
  uint64_t slide_edit;
  int32_t* slide_npanes;  /* per key id */
  uint32_t* slide_live;
  uint32_t* slide_pos;
  int64_t slide_nlive, slide_cap;
  /* Rows built one group at a time (EMIT CHANGES deltas; closing windows of a
   * changelog input), out_schema's columns; op-owned, reused. */
  lm_vec* dvecs;
  int32_t dcols;          /* out_schema's column count (the chain frees the schema first) */
  int64_t dn, dcap;
  /* session windows (see "session windows" below) */
  window* keyset;         /* key interning only: key id = group id */
  lm_agg_states* sagg;    /* per aggregate, indexed by session slot */
  int64_t *s_start, *s_end;
  uint32_t* s_key;
  int32_t* s_next;        /* next session of the key (by start), or next free slot */
  int32_t* s_parent;      /* the slot a merged slot was folded into (itself if not) */
  uint8_t* s_used;
  int32_t s_cap, s_hw, s_free, s_open;
  int32_t* k_first;       /* per key id: its first open session, -1 if none */
  int64_t k_cap;
  /* session EMIT CHANGES: the chunk (op->pass) that last touched each slot
   * (created, grown, merged); slots touched by this chunk, for their +1 rows.
   * Every open session's row was emitted once the chunk that touched it is
   * done, so a slot touched first in a pass that did not create it retracts
   * its row (-1) before it changes. */
  uint64_t* s_stamp;
  int32_t* s_touched;
  int64_t s_ntouched;
  /* Session chunks are all or nothing (issue 20): a chunk first assigns its
   * rows to sessions, journaling every slot field it writes (bounds, list
   * links, parents) and the slots it takes (new sessions, and a copy of an
   * old session before another is merged into it, which takes the old one's
   * place: the old one's states stay as they were until the chunk is
   * applied, then it goes), reserves what its updates add, checks the
   * bound, and only then updates aggregates. A failure before that replays
   * the journal backwards and gives the slots back. From the chunk's eval
   * context (NULL outside a chunk): sj_made: slots taken (s: from the free
   * list, ~s: from the high-water mark; s_used 2 until applied); sj_old: old
   * slots replaced by copies; sj_where: slot (key for k_first) * 8 + field
   * (session.c), sj_was: the value before. */
  int32_t *sj_made, *sj_old;
  int64_t *sj_where, *sj_was;
  int64_t sj_nmade, sj_nold, sj_nlog, sj_cap;
  /* Checkpoints (copy-on-write, op/window_frozen.c): who holds the session
   * arrays a snapshot reads (keyset, sagg, s_start, s_end, s_key, s_used)
   * as they were at the freeze: 2: the op and a frozen checkpoint being
   * written (set in the stall); 1: one of them let go; whoever lets go last
   * frees them. s_held (the op's alone): the op's arrays are those, so it
   * copies them before changing them if the writer still reads them
   * (lm_op_session_thaw). */
  _Atomic int32_t s_share;
  bool s_held;
  /* Checkpoints: windows copied because a checkpoint still held them, and
   * their groups (lm_op_window_thaws). */
  int64_t thaws;
  int64_t thawed_groups;
  /* All-or-nothing chunks (issue 20): a chunk first adds the groups of all
   * its rows (journaled here: each window it touched with its group count
   * before, -1 if the chunk opened it; the keyset's count before), then
   * checks the state's bytes against the bound (lm_op_account), and only then
   * updates aggregates. A failure before the updates takes the groups back
   * (window_rollback), so the state is as before the chunk. */
  window** jwin;
  int64_t* jgroups;
  int32_t jn, jcap;
  uint64_t jseq;          /* chunks begun */
  int64_t jkeyset;        /* the keyset's groups before the chunk, -1: no keyset */
  int64_t per_group;      /* bytes a group of a window holds (accounting) */
} window_op;

#define GROW_ARRAY(ptr, n)                                          \
  do {                                                              \
    void* grown_ = lm_realloc((ptr), sizeof(*(ptr)) * (size_t)(n)); \
    if (grown_ == NULL) return LAMINAR_ERR_NOMEM;                   \
    (ptr) = grown_;                                                 \
  } while (0)

static inline int64_t lm_op_floor_div(int64_t a, int64_t b) {
  int64_t q = a / b;
  return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}

/* The start of the newest window of `hop` holding t, floor(t / hop) * hop;
 * false when it lies before INT64_MIN (t less than a hop above it): no window
 * holding t can be represented. */
static inline bool lm_op_window_floor(int64_t t, int64_t hop, int64_t* out) {
  return !__builtin_mul_overflow(lm_op_floor_div(t, hop), hop, out);
}

/* Epoch ms of row k of the time column. */
static inline int64_t lm_op_time_ms(const lm_vec* t, int64_t k) {
  int64_t v = ((const int64_t*)t->data)[k];
  return t->type == LM_TYPE_TIMESTAMP ? lm_op_floor_div(v, 1000) : v;
}

/* Row k of the current chunk is late: count it, and keep it for the late
 * side output if there is one. */
static inline void lm_op_late_row(window_op* op, int64_t k) {
  op->late_rows++;
  if (op->late_sel != NULL) op->late_sel[op->nlate++] = (uint32_t)k;
}

/* ---- helpers defined in window.c --------------------------------------------- */

/* The bytes of keyed state the op holds now (max_state_bytes accounting):
 * groups of its open windows and keyset, their key strings and aggregate
 * states, and session slots. */
int64_t lm_op_window_bytes(const window_op* op);

/* Hash every row's key tuple: rows 0..n-1 into h[0..n) (sel NULL), or rows
 * sel[0..n) into h[sel[i]]. */
void lm_op_hash_keys(const lm_vec* keys, int32_t nkeys, const uint32_t* sel, int64_t n,
                     uint64_t* h);
/* Hash of a stored group's keys; equals lm_op_hash_keys() of the row it came from. */
uint64_t lm_op_hash_group(const window* w, int32_t nkeys, int64_t g);
/* The group of window w holding row `row`'s keys (hash h), added if new. */
laminar_code lm_op_group_find_or_add(window_op* op, window* w, uint64_t h, const lm_vec* keys,
                                     int64_t row, uint32_t* out_gid);
/* A new empty window (or LAMINAR_ERR_NOMEM); room for `cap` groups in w. */
laminar_code lm_op_window_new(window_op* op, window** out);
void lm_op_window_free(window_op* op, window* w);
/* Empty w and keep it for reuse (or free it when the op has spares enough). */
void lm_op_window_recycle(window_op* op, window* w);
laminar_code lm_op_window_reserve(window_op* op, window* w, int64_t cap);
/* Replace w's hash table by one of nsize slots (a power of two) over its groups. */
laminar_code lm_op_table_rebuild(window* w, uint64_t nsize);
/* Whether adding a group to w grows (rebuilds) its table first. */
bool lm_op_table_must_grow(const window* w);
/* Group g's keys into output column ov at `row`. */
void lm_op_put_key(lm_vec* ov, const key_store* ks, int64_t g, int64_t row);
/* Room for `more` rows in the op's row buffer; emit (and empty) the buffer. */
laminar_code lm_op_rows_reserve(window_op* op, int64_t more);
laminar_code lm_op_rows_flush(window_op* op);
/* The index of the first open pane (or window) starting at or after `start`. */
int32_t lm_op_open_lower_bound(const window_op* op, int64_t start);
/* Whether an open pane starting in [lo, hi) took rows after edit count `since`. */
bool lm_op_panes_edited(const window_op* op, int64_t lo, int64_t hi, uint64_t since);
/* Bounds of the window starting at ws and the keys of key ids kids[g] (the
 * keyset's), g < ng, into the row buffer's rows row .. row + ng (reserved). */
void lm_op_put_window_keys(window_op* op, int64_t ws, const uint32_t* kids, int64_t ng,
                           int64_t row);
/* Write / read group g's keys in a snapshot (read: g reserved; sets no hash). */
void lm_op_put_group_keys(const window_op* op, const window* win, int64_t g,
                          lm_state_writer* w);
laminar_code lm_op_get_group_keys(window_op* op, window* win, int64_t g, lm_state_reader* r);
/* One window of a snapshot of tumbling, hopping and global windows (after
 * the op's watermark, late count and window count). Reads the window only. */
void lm_op_put_window(const window_op* op, const window* win, lm_state_writer* w);

/* ---- checkpoints by copy-on-write (window_frozen.c) ---------------------------- */

/* A checkpoint may hold windows (w->share): the op copies one before
 * changing it (thaw: open window i becomes the op's to change) and lets go
 * of it instead of recycling it. */
laminar_code lm_op_window_thaw(window_op* op, int32_t i);
void lm_op_window_let_go(window_op* op, window* w);
/* A window copied by blocks (w->cow): the window that holds group g's data
 * (w, or its frozen original); groups_find_or_add for it, copying the blocks
 * each row's probe meets first; open window i made whole (before emission,
 * a restore into it). */
const window* lm_op_window_cow_group_src(const window* w, int64_t g);
laminar_code lm_op_window_cow_groups(window_op* op, window* w, const uint32_t* sel, int64_t m,
                                     const uint64_t* hashes, uint32_t* gids);
laminar_code lm_op_window_cow_settle(window_op* op, int32_t i);
/* Free w's copy-by-blocks state and let go of its original (any thread:
 * the last holder frees it). */
void lm_op_window_cow_release(window_op* op, window* w);
/* The op's freeze / write_frozen (op/op.h). */
laminar_code lm_op_window_freeze(lm_op* base, void** out);
laminar_code lm_op_window_write_frozen(void* frozen, lm_state_writer* w);

/* ---- hopping windows by sliding (hop.c) ---------------------------------------- */

/* Set up the sliding window if the op runs on panes, every aggregate slides
 * and a window has 2..LM_SLIDE_MAX_PANES panes (else op->slide stays NULL). */
laminar_code lm_op_slide_setup(window_op* op);
/* Append the rows of the window starting at ws (slid to from the last one,
 * or rebuilt from its panes) to the row buffer; *out_done false when the op
 * stopped sliding (too many keys) and the window must be merged from panes. */
laminar_code lm_op_slide_put_rows(window_op* op, int64_t ws, bool* out_done);
/* Pane `pane` is about to be recycled: it leaves the sliding window. */
void lm_op_slide_drop_pane(window_op* op, const window* pane);
/* Forget the sliding window (the next window is rebuilt from its panes). */
void lm_op_slide_invalidate(window_op* op);
void lm_op_slide_free(window_op* op);

/* ---- helpers shared by window.c and window_panes.c ------------------------------ */

/* 1..8 bytes folded into one word with fixed-size loads (a variable-length
 * memcpy here was a library call and a store-forwarding stall: 23% of W1).
 * Injective for a given length: the two 4-byte loads overlap when r < 8. */
static inline uint64_t tail_word(const uint8_t* q, int64_t r) {
  if (r >= 4) {
    uint32_t lo, hi;
    memcpy(&lo, q, 4);
    memcpy(&hi, q + r - 4, 4);
    return ((uint64_t)hi << 32) | lo;
  }
  return (uint64_t)q[0] | ((uint64_t)q[r / 2] << 8) | ((uint64_t)q[r - 1] << 16);
}

/* Equality of two strings; short ones (most group keys) without a memcmp call. */
static inline bool str_eq(lm_str a, lm_str b) {
  if (a.len != b.len) return false;
  if (a.len <= 8) return a.len == 0 || tail_word((const uint8_t*)a.ptr, a.len) ==
                                          tail_word((const uint8_t*)b.ptr, b.len);
  return memcmp(a.ptr, b.ptr, (size_t)a.len) == 0;
}

/* GROUP BY treats -0.0 as 0.0 and all NaNs as one value (as DuckDB does). */
static inline double canon_double(double d) {
  if (d == 0.0) return 0.0;
  if (isnan(d)) return NAN;
  return d;
}

/* Recycle the first nclose open windows. */
void lm_op_window_drop_closed(window_op* op, int32_t nclose);
/* Append a new empty group to w (hash h); the caller fills its keys. */
laminar_code lm_op_group_append(window_op* op, window* w, uint64_t h, uint32_t* out_gid);
/* Group a of `to` takes the keys of group g of `from`: strings copied into
 * to's pool, or borrowed (`from` outlives `to`'s group). */
laminar_code lm_op_group_keys_from(const window_op* op, window* to, int64_t a, const window* from,
                                   int64_t g, bool copy);
/* Room in kmap/kstamp for every key id of the keyset. */
laminar_code lm_op_kmap_reserve(window_op* op);
/* Window bounds in the output's unit (micros for a TIMESTAMP time column). */
void lm_op_window_bounds(const window_op* op, int64_t ws, int64_t* start, int64_t* end);
/* When the window (or pane) starting at ws stops taking rows. */
int64_t lm_op_window_close_time(const window_op* op, int64_t ws);
/* Empty a window, keeping its capacity. */
void lm_op_window_reset(window_op* op, window* w);

/* ---- hopping windows from panes (window_panes.c) --------------------------------- */

/* The group of `acc` with the keys of group g of pane `src`, added if new. */
laminar_code lm_op_acc_group(window_op* op, window* acc, const window* src, int64_t g,
                             uint32_t* out);
/* Emit the windows the watermark's advance from `prev` closed, built from
 * their panes (or slid), and recycle the panes no window needs any more. */
laminar_code lm_op_panes_on_watermark(window_op* op, int64_t prev);
/* Panes per window for shared merges, or 0 (merging directly costs as little). */
int64_t lm_op_shared_panes(const window_op* op);

/* ---- session windows (session.c) ---------------------------------------------- */

/* One chunk (n > 0 rows, with or without a selection) into the sessions;
 * `given`: the rows' key hashes from the router (indexed by row number), or
 * NULL to hash here. All or nothing: checks the bound (max_state_bytes)
 * before it commits; on a failure before that (*out_applied false) the
 * slots are as before it (the keys it added to the keyset, its late rows
 * and EMIT CHANGES rows are the caller's to take back); a failure handing
 * on its EMIT CHANGES rows comes after (*out_applied true). */
laminar_code lm_op_session_chunk(window_op* op, const lm_chunk* in, const uint64_t* given,
                                  bool* out_applied);
/* Emit and free the sessions closed by op->watermark. */
laminar_code lm_op_session_watermark(window_op* op);
void lm_op_session_snapshot(const window_op* op, lm_state_writer* w);
/* Restore the sessions of the keys `f` keeps (op/op.h). */
laminar_code lm_op_session_restore(window_op* op, lm_state_reader* r, const lm_op_part_filter* f);
/* Forget every session and key (after a failed restore; the op's own
 * arrays: lm_op_session_thaw first). */
void lm_op_session_clear(window_op* op);
/* Make the session state the op's to change: a copy of the arrays a frozen
 * checkpoint still reads (op->s_share 2), else nothing. Before every change.
 * LAMINAR_ERR_NOMEM leaves the op as it was. (window_frozen.c) */
laminar_code lm_op_session_thaw(window_op* op);

#endif /* LM_OP_INTERNAL_H */
