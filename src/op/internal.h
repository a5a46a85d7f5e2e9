/*
 * internal.h -- what the window operator's files share (op/window.c: tumbling
 * windows, emission, snapshots; op/window_panes.c: hopping windows merged
 * from panes; op/hop.c: the hop operator, hopping windows by sliding;
 * op/session.c: the session operator; op/window_frozen.c: checkpoints by
 * copy-on-write): the state structs and the group, window and row-buffer
 * helpers. A window's groups are rows of a keyed state table (state/table.h),
 * which holds their keys, hashes and index and encodes the keys in snapshots.
 * Private to src/op. Runs on the partition's thread only.
 */
#ifndef LM_OP_INTERNAL_H
#define LM_OP_INTERNAL_H

#include "agg/slide.h"
#include "op/op.h"
#include "state/table.h"
#include "util/pool.h"
#include "util/util.h"

#include <math.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

/* ---- windows ------------------------------------------------------------------ */

typedef struct window {
  int64_t start;
  /* The window's groups: their keys, hashes and index (state/table.h); the
   * group id is the table's row id. */
  lm_state_table t;
  int64_t cap;   /* room for groups in the arrays below (<= t.cap) */
  int64_t ninit; /* groups [t.n, ninit) have empty aggregate states ready */
  lm_agg_states* aggs;
  /* Tracked groups (EMIT CHANGES or a changelog input), else NULL: */
  int64_t* nrows;  /* rows of the group (sum of weights) */
  uint8_t* live;   /* EMIT CHANGES: its current result was emitted (+1) */
  uint64_t* stamp; /* the update pass that last touched it */
  int64_t* last;   /* state_ttl: its largest event time (ms), INT64_MIN: none */
  uint32_t* kid;   /* panes: the group's key id in the op's keyset */
  uint64_t edit;   /* panes: the op's edit count when rows last went in */
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
  uint64_t jseq; /* the chunk (window_op.jseq) that journaled it last */
  int32_t jidx;  /* its place in that chunk's journal (window_op.jwin) */
} window;

/* EMIT CHANGES chunks (issue 20): the chunk's copy of the groups it touches
 * in one journaled window, updated in place of the window's own until
 * everything downstream took the chunk's rows. Entry e is group group[e] of
 * the window (entry[g] = e + 1; 0: none), its aggregate states in w->aggs,
 * its row count and emitted flag in w->nrows and w->live (w's table unused). */
typedef struct window_shadow {
  window* w;
  uint32_t* group;
  uint32_t* entry;
  int64_t n;
  int64_t ngroup; /* room in group */
  int64_t nentry; /* room in entry */
} window_shadow;

typedef struct window_op {
  lm_op base;
  lm_window_spec spec;
  lm_type* key_types; /* spec.nkeys: the GROUP BY keys' types (tables' key columns) */
  lm_eval_ctx* ctx;
  /* Where user-defined aggregates' states report (ctx: op->ctx). */
  lm_agg_report agg_report;
  window** open; /* sorted by start */
  int32_t nopen;
  int32_t cap_open;
  window** spare; /* recycled windows */
  int32_t nspare;
  int64_t watermark; /* last watermark seen (epoch ms); INT64_MIN before any */
  /* The watermark of the input the current chunk came from, when the stream
   * has several (lm_op_window_set_late_floor): a row is late when its
   * windows closed by it, though they are still open here. INT64_MIN: none. */
  int64_t late_floor;
  int64_t late_rows;
  /* Late side output (lm_op_window_set_late_sink): where late rows go, and
   * this chunk's late row numbers (NULL when there is no sink). */
  lm_op_sink_fn late_fn;
  void* late_arg;
  /* The next chunk's key hashes from the router (lm_op_window_set_key_hashes),
   * else NULL; taken (and cleared) by that chunk. */
  const uint64_t* in_hashes;
  const lm_vec* in_args; /* likewise its aggregate arguments (lm_op_window_set_args) */
  uint32_t* late_sel;
  int64_t nlate;
  lm_vec* key_vecs;
  lm_vec* arg_vecs;
  bool* arg_pos;    /* this chunk: arg_vecs[a] is by position in the selection */
  lm_vec* ord_vecs; /* FIRST / LAST: the event time of each row */
  lm_vec* out_vecs;
  bool track;             /* emit_changes or a changelog input: per-group nrows */
  uint64_t pass;          /* update passes so far (stamps touched groups) */
  const int64_t* weights; /* this chunk's row weights (changelog input), else NULL */
  /* Hopping windows (EMIT ON WINDOW CLOSE, insert-only input) run on panes:
   * tumbling windows of gcd(size, hop) (spec.size_ms and hop_ms then hold the
   * pane); a window [ws, ws + out_size) is the merge of its panes when it
   * closes, so a row is aggregated once, not once per window. */
  bool panes;
  window* acc;    /* panes: the window being built from its panes */
  uint32_t* kmap; /* panes: key id -> group of acc, valid where kstamp == pass */
  uint64_t* kstamp;
  int64_t kmap_cap;
  int64_t out_size; /* window size of the output (bounds) */
  int64_t out_hop;  /* panes: the hop between window starts */
  /* Panes: partial merges shared by overlapping windows. With B panes per
   * window and blocks of B panes aligned at multiples of B, a window starting
   * at pane p = bB + r is suf[r] (panes p .. bB + B - 1, merged) plus run
   * (panes bB + B .. p + B - 1). Each is valid while no pane it covers took
   * rows after it was built (pane edit counts). */
  uint64_t edits;    /* row updates into panes so far */
  window** suf;      /* B suffix merges of block suf_block */
  int64_t suf_block; /* INT64_MIN: none */
  int64_t suf_from;  /* suf[suf_from .. B) are built */
  uint64_t suf_edit; /* edits when built */
  window* run;       /* prefix merge of block run_block, panes up to run_last */
  int64_t run_block, run_last;
  uint64_t run_edit;
  /* Panes: closing windows failed (close_failed) at an advance from
   * close_prev; the next advance closes the windows after close_prev. */
  bool close_failed;
  int64_t close_prev;
  /* Panes: the sliding window (op/hop.c, agg/slide.h) when every aggregate
   * slides: panes [slide_lo, slide_hi) added to per-key-id states, valid
   * while none of them took rows after slide_edit; the keys of at least one
   * of those panes (slide_npanes > 0) listed in slide_live (slide_pos: where). */
  lm_agg_slide* slide; /* naggs, or NULL: windows merge their panes */
  bool slide_valid;
  bool slide_fresh; /* rebuilt from the panes for the window being built */
  int64_t slide_lo, slide_hi;
  uint64_t slide_edit;
  int32_t* slide_npanes; /* per key id */
  uint32_t* slide_live;
  uint32_t* slide_pos;
  int64_t slide_nlive, slide_cap;
  /* Rows built one group at a time (EMIT CHANGES deltas; closing windows of a
   * changelog input), out_schema's columns; op-owned, reused. */
  lm_vec* dvecs;
  int32_t dcols; /* out_schema's column count (the chain frees the schema first) */
  int64_t dn, dcap;
  /* session windows (see "session windows" below) */
  window* keyset;      /* key interning only: key id = group id */
  lm_agg_states* sagg; /* per aggregate, indexed by session slot */
  int64_t *s_start, *s_end;
  uint32_t* s_key;
  int32_t* s_next;   /* next session of the key (by start), or next free slot */
  int32_t* s_parent; /* the slot a merged slot was folded into (itself if not) */
  uint8_t* s_used;
  int32_t s_cap, s_hw, s_free, s_open;
  int32_t* k_first; /* per key id: its first open session, -1 if none */
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
   * old session before another is merged into it -- with EMIT CHANGES,
   * before it changes at all --, which takes the old one's place: the old
   * one's states stay as they were until the chunk is applied, then it
   * goes), reserves what its updates add, checks the bound, and only then
   * updates aggregates. A failure before that (with EMIT CHANGES, before
   * its rows and late rows went downstream) replays the journal backwards
   * and gives the slots back. From the chunk's eval
   * context (NULL outside a chunk): sj_made: slots taken (s: from the free
   * list, ~s: from the high-water mark; s_used 2 until applied); sj_old: old
   * slots replaced by copies; sj_where: slot (key for k_first) * 8 + field
   * (session.c), sj_was: the value before. */
  int32_t *sj_made, *sj_old;
  int64_t *sj_where, *sj_was;
  int64_t sj_nmade, sj_nold, sj_nlog, sj_cap;
  uint64_t* s_jmark; /* per slot: the pass << 5 | fields journaled in it */
  uint64_t* k_jmark; /* per key id, likewise for k_first */
  /* Checkpoints (copy-on-write, op/window_frozen.c): who holds the session
   * arrays a snapshot reads (keyset, sagg, s_start, s_end, s_key, s_used)
   * as they were at the freeze: 2: the op and a frozen checkpoint being
   * written (set in the stall); 1: one of them let go; whoever lets go last
   * frees them. s_held (the op's alone): the op's arrays are those, so it
   * copies them before changing them if the writer still reads them
   * (session_thaw). */
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
  uint64_t jseq;   /* chunks begun */
  int64_t jkeyset; /* the keyset's groups before the chunk, -1: no keyset */
  /* EMIT CHANGES, flat states (op->flat: every aggregate's states are
   * fixed-width, lm_agg_states_flat, and built in): a chunk updates the
   * groups in place, each group's slots (states, row count, emitted flag,
   * last event time) saved in `bk` before its first update in the chunk
   * (entry e: group bk_group[e] of window bk_win[e]; a group is saved when
   * its stamp is not above bk_pass, the update pass the chunk began at),
   * room reserved with the chunk's rows, so saving cannot fail. A failure
   * downstream copies the slots back (allocating nothing); success forgets
   * them. */
  window* bk;
  bool held;       /* a batch that fans out holds the journal and backups (op.h) */
  int64_t bk_need; /* EMIT ON WINDOW CLOSE, held: (row, window) pairs to save */
  window** bk_win;
  uint32_t* bk_group;
  int64_t bk_n, bk_cap;
  uint64_t bk_pass;
  /* EMIT CHANGES, other states (strings, value sets, runs, user-defined
   * aggregates): a chunk updates copies of the groups it touches (jshadow[j]
   * for jwin[j], the states encoded and decoded) and builds its rows from
   * them; only once they went through everything downstream (the rest of
   * the chain, the stream's output) does it update the windows (prepared:
   * cannot fail). A failure before that takes the groups back: the chain is
   * as before the chunk. */
  window_shadow* jshadow; /* jcap */
  int8_t flat; /* every aggregate's states are flat: 1 yes, 0 no, -1 not known yet */
  lm_state_writer sh_buf; /* a group's states encoded on their way to its copy */
  int64_t per_group;      /* bytes a group of a window holds (accounting) */
  /* state_ttl (spec.ttl_ms > 0): this chunk's event-time column, and the
   * groups forgotten so far (window_expire in window.c). */
  const lm_vec* ttl_times;
  int64_t expired;
  /* Rows the op took, and their count at forget_retracted's last look (a
   * changelog's emptied groups, window.c). */
  int64_t chunk_rows, forget_seen;
} window_op;

/* The watermark a row's lateness is judged by: the op's, or its input's if
 * that is later (late_floor). */
static inline int64_t lm_op_window_late_wm(const window_op* op) {
  return op->late_floor > op->watermark ? op->late_floor : op->watermark;
}

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

/* The group of window w holding row `row`'s keys (hash h), added if new. */
laminar_code lm_op_group_find_or_add(window_op* op, window* w, uint64_t h,
                                     const lm_vec* keys, int64_t row, uint32_t* out_gid);
/* The groups of rows sel[0..m) of window w (hashes by row) into gids[j],
 * added if new, in row order: lm_op_group_find_or_add for a batch, with the
 * direct probe of one key column without NULLs (lm_state_table_find1). */
laminar_code lm_op_groups_find_or_add(window_op* op, window* w, const uint32_t* sel,
                                      int64_t m, const uint64_t* hashes, uint32_t* gids);
/* A new empty window (or LAMINAR_ERR_NOMEM); room for `cap` groups in w. */
laminar_code lm_op_window_new(window_op* op, window** out);
void lm_op_window_free(window_op* op, window* w);
/* Empty w and keep it for reuse (or free it when the op has spares enough). */
void lm_op_window_recycle(window_op* op, window* w);
laminar_code lm_op_window_reserve(window_op* op, window* w, int64_t cap);
/* Room for `more` rows in the op's row buffer; emit (and empty) the buffer. */
laminar_code lm_op_rows_reserve(window_op* op, int64_t more);
laminar_code lm_op_rows_flush(window_op* op);
/* Closing windows (or sessions) at the op's watermark failed with rc:
 * records what it left for the error (nothing emitted, still open). */
laminar_code lm_op_window_close_failed(window_op* op, laminar_code rc);
/* The index of the first open pane (or window) starting at or after `start`. */
int32_t lm_op_open_lower_bound(const window_op* op, int64_t start);
/* Whether an open pane starting in [lo, hi) took rows after edit count `since`. */
bool lm_op_panes_edited(const window_op* op, int64_t lo, int64_t hi, uint64_t since);
/* Bounds of the window starting at ws and the keys of key ids kids[g] (the
 * keyset's), g < ng, into the row buffer's rows row .. row + ng (reserved). */
void lm_op_put_window_keys(window_op* op, int64_t ws, const uint32_t* kids, int64_t ng,
                           int64_t row);
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
laminar_code lm_op_window_cow_groups(window_op* op, window* w, const uint32_t* sel,
                                     int64_t m, const uint64_t* hashes, uint32_t* gids);
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


/* Recycle the first nclose open windows. */
void lm_op_window_drop_closed(window_op* op, int32_t nclose);
/* Append a new empty group to w (hash h); the caller fills its keys. */
laminar_code lm_op_group_append(window_op* op, window* w, uint64_t h, uint32_t* out_gid);
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

/* ---- the window operator's parts the session operator shares (window.c) ---------- */

/* The session operator (session.c): session windows, on window_op; created
 * by lm_op_window_create for a session spec, which calls lm_op_session_init
 * (the session state: aggregate states by slot, the key set). */
extern const lm_op_vtable lm_op_session_vtable;
laminar_code lm_op_session_init(window_op* op);
/* The hop operator (hop.c): hopping windows on panes, created by
 * lm_op_window_create for a spec whose windows overlap (and emit on close);
 * it shares the window operator's chunk path, snapshot and restore. */
extern const lm_op_vtable lm_op_hop_vtable;
laminar_code lm_op_window_on_chunk(lm_op* base, const lm_chunk* in);
laminar_code lm_op_window_snapshot(const lm_op* base, lm_state_writer* w);
laminar_code lm_op_window_restore(lm_op* base, lm_state_reader* r, laminar_error* err);
laminar_code lm_op_window_restore_part(lm_op* base, lm_state_reader* r,
                                       const lm_op_part_filter* f, laminar_error* err);
/* The filter of a restore of the whole state (one partition, as many). */
extern const lm_op_part_filter lm_op_part_whole;
/* A chunk's rows to aggregate (*out_rows: nrows 0 when none): WHERE and a
 * changelog's zero weights applied, late rows begun, keys and arguments
 * evaluated into op's vectors; *out_given: the router's key hashes (or
 * NULL); *out_by_pos: arguments read by position (window updates only). */
laminar_code lm_op_window_prepare(window_op* op, const lm_chunk* in, lm_chunk* out_rows,
                                  const uint64_t** out_given, bool* out_by_pos);
/* A chunk's code, a NOMEM recorded for the error the caller reports. */
laminar_code lm_op_window_chunk_failed(window_op* op, laminar_code rc);
/* Take a user-defined aggregate's finalize failure (LAMINAR_OK: none), recording
 * it for the stream. Called before a chunk of results is emitted. */
laminar_code lm_op_window_agg_failed(window_op* op);
/* Start a chunk's journal (window_op.jwin); take window w back to its first
 * g0 groups (undo). */
void lm_op_window_journal_begin(window_op* op);
void lm_op_window_truncate(window_op* op, window* w, int64_t g0);
/* Charge the op's bytes to its budget (lm_op_account). */
laminar_code lm_op_window_account(window_op* op, bool check);
/* Hand the chunk's late rows to the late side output, if any (once: they
 * are forgotten). */
laminar_code lm_op_late_deliver(window_op* op, const lm_chunk* in);
/* A snapshot's watermark and late count, restored as `f` says (the state
 * cleared unless merging). */
void lm_op_window_restore_head(window_op* op, lm_state_reader* r,
                               const lm_op_part_filter* f);
void lm_op_window_destroy(lm_op* base);

#endif /* LM_OP_INTERNAL_H */
