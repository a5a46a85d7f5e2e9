/*
 * op.h -- the operators of a stream's pipeline and the chain that drives them.
 *
 * A stream is a chain of operators (DESIGN §3 step 3): data flows as lm_chunk
 * (a set of lm_vec columns, borrowed for the duration of one call) and
 * watermarks flow behind it, in order. Each operator processes a chunk, emits
 * zero or more chunks to the next stage through lm_op_emit(), and handles
 * watermark advances (the window operator closes windows on them). All calls
 * for one operator instance come from one thread (the reactor that owns its
 * partition, or the caller of laminar_run_until_idle), so operators hold no
 * locks. Every stateful operator implements snapshot and restore (DESIGN §4)
 * and is instantiated once per partition.
 *
 * Time: watermarks and window bounds are epoch milliseconds here; a TIMESTAMP
 * time column (microseconds) is converted by the window operator.
 */
#ifndef LM_OP_H
#define LM_OP_H

#include "agg/agg.h"
#include "expr/expr.h"
#include "laminar.h"
#include "state/state.h"
#include "state/table.h"
#include "util/types.h"

#include <stdint.h>

/* Borrowed columns; valid only during the call receiving it. sel NULL: the
 * chunk is rows 0..nrows-1 of the columns. Else it is the rows sel[0..nrows)
 * (ascending) of longer columns, the others not its own: thread-per-core
 * hands each partition's chain the whole pushed batch and its rows instead
 * of a gathered copy (rt/part.c). Only a chain's input carries a selection,
 * and only to a head operator whose vtable says it honours one (takes_sel);
 * what operators emit is dense. */
typedef struct lm_chunk {
  int64_t nrows;
  int32_t ncols;
  const lm_vec* cols;
  const uint32_t* sel;
} lm_chunk;

typedef struct lm_op lm_op;
typedef struct lm_op_part_filter lm_op_part_filter; /* below */

/* Where the last operator of a chain delivers: the stream's output. */
typedef laminar_code (*lm_op_sink_fn)(void* arg, const lm_chunk* chunk);

/* ---- a source batch's commit list: all readers or none (issue 20) --------- */
/*
 * A batch that fans out (its source, or a stream on its way, has several
 * readers) goes through each reader in turn; a failure in a later one must
 * leave the earlier ones as before the batch too. While such a batch is under
 * way (`active`, set by the runtime that runs it: rt/reactor.c process_msg)
 * the operators that change state in place keep what undoes it, and register
 * here, before their first change, an entry whose `end` the runtime calls
 * once every reader took the batch (commit: forget the undo, or do what was
 * held back: the stream's publication to sinks and subscribers) or once one
 * failed (abort, in reverse order: undo; allocates nothing, cannot fail). A
 * batch that does not fan out runs with `active` false: operators undo their
 * own chunk's failure and forget the rest at its end, as before. One list per
 * database (lm_graph), used by the thread that runs unpartitioned streams.
 */
typedef laminar_code (*lm_op_txn_end_fn)(void* a, void* b, bool commit);
typedef struct lm_op_txn_entry {
  lm_op_txn_end_fn end;
  void* a;
  void* b;
} lm_op_txn_entry;
typedef struct lm_op_txn {
  bool active;  /* a batch that fans out is under way */
  uint64_t seq; /* batches begun (an operator joins once per batch) */
  /* Set by an operator that failed for memory after it applied the batch
   * for good (a keyed window's close after its commits): the batch is in
   * the state, so it is not voided (rt.h void_hook). Cleared by the
   * runtime before each message; writer and reader: the thread running the
   * chain. */
  bool applied;
  lm_op_txn_entry* entries;
  int32_t n, cap;
} lm_op_txn;

/* Begin a batch (no entries yet); active: it fans out. */
void lm_op_txn_begin(lm_op_txn* t, bool active);
/* Register an entry (the batch active). LAMINAR_ERR_NOMEM: not registered
 * (the caller has changed nothing yet, or what it changed is undone by an
 * entry registered before). */
laminar_code lm_op_txn_add(lm_op_txn* t, lm_op_txn_end_fn end, void* a, void* b);
/* End the batch: commit runs every entry in order (the first failure is
 * returned, the later ones still run), abort in reverse order. The list is
 * empty and inactive afterwards. */
laminar_code lm_op_txn_end(lm_op_txn* t, bool commit);
/* End the batch keeping the entries before `keep` (committed, in order) and
 * undoing the others (first, in reverse): the readers before a failed one
 * keep the batch when the failure is the reader's own (a function's error
 * fails its stream; the others go on), not one a retry may cure. */
laminar_code lm_op_txn_end_part(lm_op_txn* t, int32_t keep);
void lm_op_txn_free(lm_op_txn* t);

typedef struct lm_op_vtable {
  const char* name; /* "map", "window" (EXPLAIN and errors) */
  /* A chunk may carry a selection (lm_chunk.sel) only if takes_sel. */
  laminar_code (*on_chunk)(lm_op* op, const lm_chunk* in);
  bool takes_sel;
  /* Called when the input watermark advanced to `watermark_ms`; the chain
   * forwards it to the next operator after this returns. */
  laminar_code (*on_watermark)(lm_op* op, int64_t watermark_ms);
  laminar_code (*snapshot)(const lm_op* op, lm_state_writer* w);
  laminar_code (*restore)(lm_op* op, lm_state_reader* r, laminar_error* err);
  /* Keyed state only (NULL otherwise): restore the part of a snapshot that
   * `f` selects (see lm_op_part_filter). */
  laminar_code (*restore_part)(lm_op* op, lm_state_reader* r, const lm_op_part_filter* f,
                               laminar_error* err);
  void (*destroy)(lm_op* op);
  /* Checkpoints without copying the state in the stall (optional, NULL:
   * snapshot() runs in the stall). freeze: with the chain stopped, hold the
   * state as it is in *out, in time independent of its size (*out NULL: not
   * for this state; snapshot() it then). The op runs on and leaves what is
   * held unchanged (copy-on-write). write_frozen: from any thread, while the
   * op runs, write what snapshot() would have written at the freeze (w NULL:
   * nothing), and let go of it; exactly once per frozen state. */
  laminar_code (*freeze)(lm_op* op, void** out);
  laminar_code (*write_frozen)(void* frozen, lm_state_writer* w);
  /* Multi-input operators (a join): ninputs > 1 and the two calls below; 0
   * (or 1) and NULL for single-input operators, whose input is on_chunk /
   * on_watermark. Such an operator heads its chain: the runtime hands it
   * input i's chunks and input i's OWN watermark (not the least of the
   * inputs'), and the operator forwards to `next` (lm_op_chain_watermark of
   * op->next) the watermark it can guarantee for what it emits. */
  int32_t ninputs;
  laminar_code (*on_input_chunk)(lm_op* op, int32_t input, const lm_chunk* in);
  laminar_code (*on_input_watermark)(lm_op* op, int32_t input, int64_t watermark_ms);
} lm_op_vtable;

/* Common header of every operator (first member of each concrete struct). */
struct lm_op {
  const lm_op_vtable* vt;
  lm_schema out_schema; /* columns of the chunks this operator emits */
  lm_op* next;          /* next operator, or NULL: deliver to sink */
  lm_op_sink_fn sink;
  void* sink_arg;
  int64_t rows_in;
  int64_t rows_out;
  /* Keyed state's bound (max_state_bytes): the stream's budget (NULL: none
   * accounted) and the bytes this operator charged to it (lm_op_account). */
  lm_state_budget* budget;
  int64_t charged;
  /* The chain's first stateful operator refuses a batch past the bound
   * before it changes anything; later ones (a view's rows behind a GROUP BY)
   * only account: the batch was accepted upstream, and refusing it there
   * would leave it half applied. */
  bool checks_bound;
  /* The database's batch commit list (NULL: none, e.g. a partition's chain
   * on a worker reactor) and the batch this op last joined (lm_op_txn.seq). */
  lm_op_txn* txn;
  uint64_t txn_seq;
};

/* Whether op runs inside a batch that fans out (op.h, lm_op_txn). */
static inline bool lm_op_txn_active(const lm_op* op) {
  return op->txn != NULL && op->txn->active;
}
/* op joins the batch under way, once per batch: end(op, NULL, commit) is
 * registered (lm_op_txn_add). out_first: this call joined (the op's first
 * chunk of the batch). */
laminar_code lm_op_txn_join(lm_op* op, lm_op_txn_end_fn end, bool* out_first);
/* Every operator of the chain uses the commit list t. */
void lm_op_chain_set_txn(lm_op* head, lm_op_txn* t);

/* Set op's keyed state to `bytes` in its budget: charge the growth (or give
 * back the shrink) since the last call. With `check`, growth past a bound is
 * refused: LAMINAR_ERR_MEMORY_LIMIT, nothing charged, the budget holds the
 * message, and the caller undoes the growth; without, it is charged as it is
 * (state already there: restored, or grown where it cannot be undone). */
laminar_code lm_op_account(lm_op* op, int64_t bytes, bool check);

/* A watermark's release failed with rc (issue 20): out of memory is
 * recorded on op's stream as nothing of `what` emitted, released again at
 * the next watermark advance. Returns rc. */
laminar_code lm_op_release_failed(lm_op* op, laminar_code rc, int64_t watermark,
                                  const char* what);
/* Whether op's state has a bound to keep (its stream's or the database's):
 * without one, operators skip the accounting. */
static inline bool lm_op_bounded(const lm_op* op) {
  return op->budget != NULL && (op->budget->limit > 0 || (op->budget->parent != NULL &&
                                                          op->budget->parent->limit > 0));
}
/* Every operator of the chain charges `b` (the stream's budget). */
void lm_op_chain_set_budget(lm_op* head, lm_state_budget* b);

/* Deliver a chunk to the next stage (next operator or sink). */
laminar_code lm_op_emit(lm_op* op, const lm_chunk* chunk);

/* Push a chunk / watermark into a chain starting at `head`. */
laminar_code lm_op_chain_chunk(lm_op* head, const lm_chunk* chunk);
laminar_code lm_op_chain_watermark(lm_op* head, int64_t watermark_ms);
/* Multi-input heads (lm_op_vtable.ninputs > 1): a chunk / watermark of input
 * `input` into the chain headed by `head`. LAMINAR_ERR_INTERNAL for a head
 * with one input or an input out of range. */
laminar_code lm_op_chain_input_chunk(lm_op* head, int32_t input, const lm_chunk* chunk);
laminar_code lm_op_chain_input_watermark(lm_op* head, int32_t input,
                                         int64_t watermark_ms);
/* Whether the chain's head takes several inputs. */
static inline bool lm_op_multi_input(const lm_op* head) {
  return head != NULL && head->vt->ninputs > 1;
}
/* Snapshot / restore every operator of a chain, in order. */
laminar_code lm_op_chain_snapshot(const lm_op* head, lm_state_writer* w);
laminar_code lm_op_chain_restore(lm_op* head, lm_state_reader* r, laminar_error* err);
/* A checkpoint in two steps: freeze the chain's state (the chain stopped:
 * frozen where the operator can, snapshot into memory where not), then write
 * it, from any thread while the chain runs on, as lm_op_chain_snapshot()
 * would have at the freeze. lm_op_chain_write_frozen always frees `f`
 * (w NULL: only that). */
typedef struct lm_op_frozen lm_op_frozen;
laminar_code lm_op_chain_freeze(lm_op* head, lm_op_frozen** out);
laminar_code lm_op_chain_write_frozen(lm_op_frozen* f, lm_state_writer* w);

/* Thread-per-core (rt/part.c) routes a row of a keyed stream to partition
 * lm_op_part_of(hash of its GROUP BY keys, nparts): lm_state_part_of, the
 * partition of the keyed state tables (state/table.h). */
static inline int32_t lm_op_part_of(uint64_t h, int32_t n) {
  return lm_state_part_of(h, n);
}

/* Restoring partition `part` of `nparts` from a checkpoint taken with another
 * number of partitions: each old partition's snapshot is restored in turn,
 * keeping only the groups whose key hash falls in `part` (lm_op_part_of);
 * `merge` adds them to the state already restored (the old partitions' keys
 * are disjoint) instead of replacing it; `late` adds the snapshot's late-row
 * count (exactly one new partition takes each old one's, so the total stays). */
struct lm_op_part_filter {
  int32_t nparts;
  int32_t part;
  bool merge;
  bool late;
};

/* lm_op_chain_restore through `f`. Operators without keyed state restore as
 * usual (a merge into such state is LAMINAR_ERR_INTERNAL: not partitioned). */
laminar_code lm_op_chain_restore_part(lm_op* head, lm_state_reader* r,
                                      const lm_op_part_filter* f, laminar_error* err);

/* Destroy a whole chain (NULL allowed). */
void lm_op_chain_destroy(lm_op* head);

/* ---- map: filter + project (stateless) ---------------------------------- */

/* Keep rows where `filter` is TRUE (NULL: keep all), then compute `exprs`
 * (nexprs columns named by out_schema). The operator takes ownership of
 * nothing: the expression trees must outlive it (they live in the plan). */
laminar_code lm_op_map_create(const lm_expr* filter, const lm_expr* const* exprs,
                              int32_t nexprs, const lm_schema* out_schema, lm_op** out);

/* ---- lateral: a table function joined to each input row (lateral.c) ------ */

/* FROM input, f(args): each input row joined with the rows f makes of it.
 * Emits out_schema: the input's in_ncols columns (the parent row's values),
 * then f's columns, then (weight_col >= 0) the parent row's weight. The spec's pointers must outlive the operator (they live
 * in the plan, which holds a reference to fn). */
typedef struct lm_lateral_spec {
  lm_udf* fn;                 /* the table function (lm_udf_is_table) */
  const lm_expr* const* args; /* its arguments, over the input row */
  int32_t nargs;
  int32_t in_ncols;
  /* A changelog input's _weight column (its last), emitted after f's
   * columns so that each joined row carries its parent row's weight and the
   * output is a changelog too; -1 for an input that is not one. */
  int32_t weight_col;
} lm_lateral_spec;

laminar_code lm_op_lateral_create(const lm_lateral_spec* spec,
                                  const lm_schema* out_schema, lm_op** out);
/* What the operator does to one chunk, for a caller with rows of its own (a
 * SELECT over a view): the rows sel[0..n) (sel NULL: 0..n-1) of the input
 * columns `cols` through spec's function: *out_m joined rows into out[0..
 * in_ncols + the function's columns [+ 1, the weight]) (dense, ctx memory), *out_parent the
 * input row (of cols) of each. A failure is the function's
 * (lm_expr_udf_failed, its text in ctx) or LAMINAR_ERR_NOMEM. */
laminar_code lm_op_lateral_apply(lm_eval_ctx* ctx, const lm_lateral_spec* spec,
                                 const lm_vec* cols, const uint32_t* sel, int64_t n,
                                 lm_vec* out, const uint32_t** out_parent,
                                 int64_t* out_m);

/* ---- temporal filter: rows kept to a horizon of event time (expire.c) ------ */

/* WHERE t > WATERMARK() - h (or >=): each input row with t kept is emitted
 * with its weight when it arrives while the watermark is below t + h (for
 * >=: at most t + h), and retracted (weight negated) when the watermark
 * passes that, so the emitted rows sum, at any watermark W, to the input's
 * rows with t > W - h. Rows the watermark already passed are late (counted,
 * handed to the late sink); rows with a NULL time never pass. Emits the
 * input's columns, then _weight (BIGINT) unless the input is a changelog
 * (weight_col >= 0), whose weight column is emitted (negated on retraction)
 * where it is. */
typedef struct lm_expire_spec {
  int32_t time_col; /* input column: BIGINT (ms) or TIMESTAMP (µs) */
  lm_type time_type;
  int64_t horizon; /* h, in the time column's unit (may be negative) */
  bool inclusive;  /* >=: kept while W <= t + h; >: while W < t + h */
  int32_t in_ncols;
  int32_t weight_col; /* a changelog input's _weight column, or -1 */
} lm_expire_spec;

/* in_schema: the input's columns (in_ncols); out_schema: what it emits. */
laminar_code lm_op_expire_create(const lm_expire_spec* spec, const lm_schema* in_schema,
                                 const lm_schema* out_schema, lm_op** out);
bool lm_op_is_expire(const lm_op* op);
/* Late rows (input columns, arrival order) go to fn(arg, rows) from now on. */
void lm_op_expire_set_late_sink(lm_op* op, lm_op_sink_fn fn, void* arg);
int64_t lm_op_expire_late_rows(const lm_op* op);
/* Rows held (emitted, not yet retracted). */
int64_t lm_op_expire_held(const lm_op* op);

/* ---- window: tumbling / hopping window hash aggregation ------------------ */

/* Window aggregation over windows [start, start + size_ms) on time column
 * `time_col` (BIGINT epoch ms or TIMESTAMP) grouped by `keys`. Tumbling
 * windows start at multiples of size_ms; hopping windows (hop_ms < size_ms or
 * any hop_ms != size_ms) start at multiples of hop_ms, and a row belongs to
 * every window that contains it.
 * Emits, when the watermark reaches a window's end plus lateness_ms, one row
 * per (window, key) seen: window_start, window_end (the time column's type),
 * the keys, then the aggregates, windows in ascending start order and keys in
 * first-seen order. A row none of whose windows is still open is dropped and
 * counted in lm_op_window_late_rows() (a hopping row whose older windows have
 * closed still counts in the open ones). out_schema must list those columns
 * (plus `_weight` with emit_changes). */
typedef struct lm_window_spec {
  const lm_expr* filter; /* WHERE: rows where it is not TRUE are skipped; NULL = all */
  int32_t time_col;
  lm_type time_type;
  int64_t size_ms;
  int64_t hop_ms; /* hop/slide: distance between window starts (0 or size_ms: tumble) */
  int64_t lateness_ms; /* allowed lateness: a window closes when the watermark reaches
                            * end + lateness_ms; rows are late only after that */
  const lm_expr* const* keys;
  int32_t nkeys;
  const lm_agg_spec* aggs;
  int32_t naggs;
  /* EMIT CHANGES: after each chunk, every group it changed emits a -1 row of its
   * previous result (if it had one) and a +1 row of its new one (if it still
   * has rows), in a trailing `_weight` BIGINT column; closing a window emits
   * nothing more (its last result stands). */
  bool emit_changes;
  /* session(ts, gap): per key, rows closer than size_ms (the gap) form one
   * session [first, last + gap); hop_ms unused. */
  bool session;
  /* GROUP BY without a window: one window that never closes (time_col unused;
   * window_start / window_end are NULL). */
  bool global;
  /* Changelog input: column weight_col (BIGINT) weighs each row (+1 insert,
   * -1 retract; NULL and 0 rows are skipped); aggregates must be retractable. */
  bool changelog;
  int32_t weight_col;
  /* WITH (state_ttl = ...), global only (0: none): a group whose largest
   * event time (input column ttl_col, BIGINT ms or TIMESTAMP) plus ttl_ms is
   * at or below the watermark is forgotten when the watermark gets there,
   * its last row retracted (-1); a later row of its key starts it afresh. */
  int64_t ttl_ms;
  int32_t ttl_col;
} lm_window_spec;

/* Most windows a hopping window may put one row in (the binder refuses more). */
#define LM_MAX_WINDOWS_PER_ROW 1024

laminar_code lm_op_window_create(const lm_window_spec* spec, const lm_schema* out_schema,
                                 lm_op** out);
int64_t lm_op_window_late_rows(const lm_op* op);
/* Late side output: from now on, each chunk's late rows (those counted in
 * lm_op_window_late_rows(), in arrival order) go to fn(arg, rows) as one chunk
 * with the window operator's input columns, after the chunk is applied. `op`
 * is the head of a windowed chain (no-op for other chains); fn NULL: none. */
void lm_op_window_set_late_sink(lm_op* op, lm_op_sink_fn fn, void* arg);
/* Several inputs (UNION ALL): the next chunks come from an input whose own
 * watermark is `watermark_ms`; a row is late when its windows closed by that
 * watermark, even while the op's (the least of its inputs') keeps them open,
 * so which rows count does not depend on how the inputs interleave.
 * INT64_MIN: judge by the op's watermark alone. No-op for other operators. */
void lm_op_window_set_late_floor(lm_op* op, int64_t watermark_ms);
/* Windows this op copied before changing them because a checkpoint was
 * still writing them (copy-on-write), and (out_groups) their groups in all. */
int64_t lm_op_window_thaws(const lm_op* op, int64_t* out_groups);
/* Thread-per-core: the router already hashed the GROUP BY keys of the next
 * chunk `op` (the head of a windowed chain) receives -- h[r] is the key hash
 * (lm_op_hash_keys) of row r of the chunk's columns, indexed like them (with
 * a selection, by row number: only the selected rows' entries are read) --
 * so the operator uses them instead of hashing again. Holds for that one
 * chunk only; h must outlive the call. */
void lm_op_window_set_key_hashes(lm_op* op, const uint64_t* h);
/* Thread-per-core, likewise: the router already evaluated the aggregate
 * arguments of `op`'s own spec over the next chunk's columns -- args[a] is
 * aggregate a's argument, by row like the columns, or data NULL where the
 * operator is to evaluate it (NULL args: all). For that one chunk only. */
void lm_op_window_set_args(lm_op* op, const lm_vec* args);
/* Number of groups currently held (all open windows). */
int64_t lm_op_window_state_rows(const lm_op* op);
/* A chunk into a tumbling or hopping window operator (not EMIT CHANGES, not
 * a session) in two steps, so that an owner of several (the keyed window)
 * applies a batch to all of them or none: prepare does everything that can
 * fail -- its rows' groups and windows added, what the updates will add
 * reserved, its late rows counted and sent -- and on failure leaves the op
 * as before the chunk (the error recorded as lm_op_window_on_chunk's);
 * then exactly one of commit (the aggregate updates: allocates nothing,
 * fails only for a user-defined aggregate) or abort (the groups and windows
 * taken back, allocating nothing) before the op's next chunk. The chunk's
 * columns and selection must stay valid until then. */
laminar_code lm_op_window_chunk_prepare(lm_op* op, const lm_chunk* in);
laminar_code lm_op_window_chunk_commit(lm_op* op);
void lm_op_window_chunk_abort(lm_op* op);

/* ---- keyed window: per-key watermarks (keyed_window.c) ----------------------- */

/* A tumbling or hopping window (spec as lm_op_window_create's; not session,
 * EMIT CHANGES, global or changelog: LAMINAR_ERR_INTERNAL) whose windows close
 * per key of input column key_col (of type key_type): key k's windows close
 * when max(k's largest event time in column ts_col less delay_ms, the
 * operator's watermark) reaches their end (plus lateness), and k's rows are
 * late against that. Output as the window operator's; keys' windows in the
 * order their watermarks close them. lm_op_window_late_rows and
 * lm_op_window_state_rows count over its keys. */
laminar_code lm_op_keyed_window_create(const lm_window_spec* spec,
                                       const lm_schema* out_schema, int32_t key_col,
                                       int32_t ts_col, lm_type key_type, int64_t delay_ms,
                                       lm_op** out);
bool lm_op_is_keyed_window(const lm_op* op);
/* Keys the operator tracks now (0 for other operators). */
int64_t lm_op_keyed_window_keys(const lm_op* op);
int64_t lm_op_keyed_window_late_rows(const lm_op* op);
int64_t lm_op_keyed_window_state_rows(const lm_op* op);

/* ---- lookup join: a stream's rows against a table (join_lookup.c) ---------- */

/* `FROM s [LEFT] JOIN t ON s.x = t.k ...` where t is a table (CREATE TABLE):
 * each input row is matched, when it is processed, with the table's row of
 * the key its lkeys give (the table's content at that moment: processing
 * time). One input; the table is read in place (lm_op_lookup_set_table), on
 * the same thread (tables and the streams joining them run on reactor 0).
 * Output: the input's columns then the table's (lcols + rcols); an inner
 * join drops rows without a match, LEFT pads them with NULLs. A NULL key
 * never matches. Stateless: snapshots hold nothing. */
typedef struct lm_lookup_spec {
  bool left_outer;
  int32_t lcols, rcols;
  int32_t nkeys;               /* the table's primary-key columns */
  const lm_expr* const* lkeys; /* over the input's columns, in the key's order */
} lm_lookup_spec;

/* out_schema: the input's columns then the table's. The expressions stay the
 * caller's (the plan's pool) and must outlive the operator. LAMINAR_OK or
 * LAMINAR_ERR_NOMEM. */
laminar_code lm_op_lookup_create(const lm_lookup_spec* spec, const lm_schema* out_schema,
                                 lm_op** out);
/* Point the lookup at the table's operator (op/view.h lm_op_table_create),
 * before the first chunk; NULL: nothing matches. Control thread. */
void lm_op_lookup_set_table(lm_op* op, const lm_op* table);
/* Whether `op` is a lookup join's operator. */
bool lm_op_is_lookup(const lm_op* op);

/* ---- asof join: two inputs (join_asof.c) ------------------------------------ */

/* The ordering condition of an ASOF join: left time <cmp> right time. */
typedef enum lm_asof_cmp {
  LM_ASOF_GE = 1, /* t.ts >= q.ts: the latest right row at or before */
  LM_ASOF_GT = 2, /* t.ts >  q.ts: the latest right row strictly before */
  LM_ASOF_LE = 3, /* t.ts <= q.ts: the earliest right row at or after */
  LM_ASOF_LT = 4  /* t.ts <  q.ts: the earliest right row strictly after */
} lm_asof_cmp;

/* `left [LEFT] ASOF JOIN right MATCH_CONDITION(left.time cmp right.time)
 * ON lkeys[i] = rkeys[i] ...`. Input 0 is the left side (lcols columns),
 * input 1 the right (rcols); each row of the left is matched with the one
 * right row of equal keys (no key NULL) nearest in time on cmp's side
 * (within `tolerance` time units when has_tolerance); among right rows of
 * equal time the last to arrive. Output: the left row's columns then the
 * right row's (all NULL for an unmatched left row of a LEFT join; an
 * unmatched row of an inner join is dropped).
 *
 * Streaming (watermarks mean: no more rows older than it): a right row older
 * than the right watermark, or a left row older than the left one, is late:
 * dropped and counted. A left row waits until its match is final: for
 * >= / > until the right watermark passes its time (>=: > time; >: >= time);
 * for <= / < until a right row at or after it (after: <) is older than the
 * right watermark, or the right watermark passes time + tolerance. Each
 * release emits the left rows it frees in event-time order (arrival order
 * among equal times). Right rows a future left row can no longer match (by
 * the least of the left watermark and the waiting left rows' times) are
 * dropped: per key, for >= / > the newest one at or before that bound and
 * those after, for <= / < those at or after it. The operator forwards
 * min(left watermark, oldest waiting left row) to `next`. */
typedef struct lm_asof_spec {
  bool left_outer;
  lm_asof_cmp cmp;
  int32_t nkeys;
  const lm_expr* const* lkeys; /* over the left input's columns */
  const lm_expr* const* rkeys; /* over the right's; of the same types as lkeys */
  int32_t ltime, rtime;        /* time columns (BIGINT ms or TIMESTAMP, both alike) */
  lm_type time_type;
  bool has_tolerance;
  int64_t tolerance; /* in the time column's unit (ms, or µs for TIMESTAMP) */
  int32_t lcols, rcols;
  /* Which output columns the rest of the plan reads (lcols + rcols flags; NULL:
   * all): the join keeps only those of the rows it holds, and emits the others
   * as unspecified values (zeros). */
  const uint8_t* need;
  /* A temporal join (FOR SYSTEM_TIME AS OF): the right input is a table's
   * changelog, its last column the weight (held: need flags it). A right row
   * of negative weight (a delete) is a version of "no row": a left row whose
   * match it is stays unmatched. Only with cmp LM_ASOF_GE. */
  bool tombstones;
} lm_asof_spec;

/* out_schema: the left input's columns then the right's (lcols + rcols). The
 * spec's expressions are borrowed (they live in the plan). */
laminar_code lm_op_asof_create(const lm_asof_spec* spec, const lm_schema* out_schema,
                               lm_op** out);
/* Rows held: left rows waiting, right rows kept (for metrics and tests). */
void lm_op_asof_held(const lm_op* op, int64_t* out_left, int64_t* out_right);
/* The watermark the join forwarded last (INT64_MAX for another operator). */
int64_t lm_op_asof_out_watermark(const lm_op* op);
/* Late rows dropped so far (left + right). */
int64_t lm_op_asof_late_rows(const lm_op* op);
/* Copies of its state the join made before changing it while a checkpoint
 * still held it (copy-on-write freeze; tests). 0 for another operator. */
int64_t lm_op_asof_thaws(const lm_op* op);

/* ---- interval join: two inputs, a time bound (join_interval.c) ------------- */

/* `left [INNER | LEFT | RIGHT | FULL] JOIN right ON lkeys[i] = rkeys[i] ...
 * AND lo <= right.time - left.time <= hi [AND residual]`. Input 0 is the left
 * side (lcols columns), input 1 the right (rcols). A pair of rows of equal
 * keys (no key NULL) whose times (both non-NULL) are within the bound and
 * for which `residual` (over the joined row: the left columns then the
 * right's; NULL: none) is TRUE is emitted as soon as both rows are in, the
 * left row's columns then the right's. keep_left (LEFT / FULL): a left row
 * that never matched is emitted once, the right columns NULL, when the
 * right watermark proves no match can come (right watermark > its time +
 * hi), or at once when it cannot match (a NULL key or time); keep_right
 * likewise for right rows (left watermark > time - lo).
 *
 * Streaming: a row older than its own input's watermark is late: dropped
 * and counted. Each side's rows are held until the other side's watermark
 * proves no match can come (then dropped), so the state is bounded by the
 * watermarks and the bound. The operator forwards, in the left time's terms,
 * min(left watermark, right watermark - hi) to `next`: no row it emits later
 * has an older left time.
 *
 * window_ms > 0 (a window join): instead of the bound, both rows lie in one
 * window [start, start + window_ms) of their times, start a multiple of
 * slide_ms (tumbling when slide_ms = window_ms, hopping when smaller: a row
 * is in each of its windows), and a window is joined when it closes on both
 * sides (both watermarks reach its end): its pairs, then an outer side's rows
 * that matched nothing in it, one chunk for all the windows an advance
 * closes; a row is dropped once its last window closed and that chunk went
 * through. Each side's columns lwin and lwin + 1 (rwin likewise),
 * window_start and window_end, are set to the window of the joined row (NULL
 * for a row of no window: a NULL time). The forwarded watermark is the start
 * of the first window the least of the two watermarks has not closed.
 *
 * Late rows go to the late sink when one is set (lm_op_ijoin_set_late_sink),
 * as joined rows whose other side is NULL (window columns NULL). */
typedef struct lm_ijoin_spec {
  bool keep_left, keep_right;
  int32_t nkeys;
  const lm_expr* const* lkeys; /* over the left input's columns */
  const lm_expr* const* rkeys; /* over the right's; of the same types as lkeys */
  int32_t ltime, rtime;        /* time columns (BIGINT ms or TIMESTAMP, both alike) */
  lm_type time_type;
  int64_t lo, hi;     /* right time - left time in [lo, hi], the time column's unit */
  int64_t window_ms;  /* > 0: window join (lo, hi unused) */
  int64_t slide_ms;   /* its windows' slide (= window_ms: tumbling) */
  int32_t lwin, rwin; /* its sides' window_start columns (window_end next) */
  /* > 0: a join without a time bound that WITH (state_ttl = ...) allows:
   * [lo, hi] is [-ttl, +ttl] over the inputs' watermark columns (set by
   * the catalog, db/catalog.c lm_db_join_ttl), so each side's rows go once
   * the other side's watermark is ttl past them. */
  int64_t ttl_ms;
  const lm_expr* residual; /* over the joined row; NULL: none */
  int32_t lcols, rcols;
  /* Changelog inputs: the column of a side's weight (_weight, within the
   * side; -1: the side is insert-only), and whether any side is one. Then
   * the joined row ends in one more column, its weight: the product of its
   * sides' (a NULL-padded side counts 1). A row of weight 0 or NULL changes
   * nothing; a row is matched while the weights of its pairs sum to non-zero
   * (an outer side's row is emitted NULL-padded, with its weight, when it
   * is dropped unmatched), so `-1` rows retract the pairs their `+1` made. */
  int32_t lweight, rweight;
  bool weighted;
  /* Which output columns the rest of the plan reads (NULL: all), as
   * lm_asof_spec.need; the keys' and times' columns are always held. */
  const uint8_t* need;
} lm_ijoin_spec;

laminar_code lm_op_ijoin_create(const lm_ijoin_spec* spec, const lm_schema* out_schema,
                                lm_op** out);
/* Rows and bytes held per side; late rows; the watermark forwarded last
 * (INT64_MAX for another operator). Through lm_op_join_* below. */
void lm_op_ijoin_held(const lm_op* op, int64_t out_rows[2], int64_t out_bytes[2]);
int64_t lm_op_ijoin_late_rows(const lm_op* op);
int64_t lm_op_ijoin_out_watermark(const lm_op* op);
/* Hand the join's late rows to fn(arg, rows) (a late side output), in the
 * joined row's columns, the other side's NULL; no effect on another operator. */
void lm_op_ijoin_set_late_sink(lm_op* op, lm_op_sink_fn fn, void* arg);

/* ---- joins: what both join operators report ----------------------------------- */

/* Rows and bytes a join holds per side (left [0], right [1]): the ASOF join's
 * waiting left rows and kept right rows, the interval join's rows of each
 * side. Zeros for another operator. */
void lm_op_join_held(const lm_op* op, int64_t out_rows[2], int64_t out_bytes[2]);
/* The watermark a join forwarded last (INT64_MAX for another operator). */
int64_t lm_op_join_out_watermark(const lm_op* op);
/* Late rows a join dropped so far, both sides (0 for another operator). */
int64_t lm_op_join_late_rows(const lm_op* op);
/* Hand a join's late rows (behind their own input's watermark) to fn(arg,
 * rows) (a late side output) as joined rows whose other side is NULL: an
 * ASOF or temporal join's, or an interval or window join's
 * (lm_op_ijoin_set_late_sink). No effect on another operator. */
void lm_op_join_set_late_sink(lm_op* op, lm_op_sink_fn fn, void* arg);

/* Hash every row's key tuple: rows 0..n-1 into h[0..n) (sel NULL), or rows
 * sel[0..n) into h[sel[i]]. The window operators' group hash; the
 * thread-per-core router (rt/part.c) routes rows by it. */
void lm_op_hash_keys(const lm_vec* keys, int32_t nkeys, const uint32_t* sel, int64_t n,
                     uint64_t* h);

/* ---- analytic: window functions over event time (op/analytic.c) ---------- */

typedef enum lm_analytic_fn {
  LM_AN_ROW_NUMBER = 1,
  LM_AN_RANK,
  LM_AN_DENSE_RANK,
  LM_AN_LAG,         /* arg, offset, def */
  LM_AN_LEAD,        /* arg, offset, def */
  LM_AN_FIRST_VALUE, /* arg */
  LM_AN_LAST_VALUE,  /* arg; rows_frame: the current row's, else its last peer's */
  /* Aggregate `agg` (COUNT_STAR, COUNT, SUM, AVG, MIN, MAX) of arg over a frame
   * ending at the current row: */
  LM_AN_AGG_ROWS, /* the row and the `offset` rows before it (ROWS n PRECEDING) */
  LM_AN_AGG_RANGE /* the rows with event time in [t - offset ms, t] (RANGE) */
} lm_analytic_fn;

typedef struct lm_analytic_call {
  lm_analytic_fn fn;
  const lm_expr* arg; /* over the input row; NULL for the ranking functions */
  const lm_expr* def; /* LAG / LEAD default (of the result type), NULL: NULL */
  int64_t offset;     /* LAG / LEAD */
  bool rows_frame;    /* LAST_VALUE: ROWS frame (the row itself ends it) */
  lm_agg_fn agg;      /* LM_AN_AGG_*: the aggregate (SUM of BIGINT / DOUBLE args) */
  lm_type type;       /* result type */
} lm_analytic_call;

/* Analytic functions OVER (PARTITION BY keys ORDER BY the event time):
 * rows (those `filter` keeps) are held until the watermark passes them
 * (event time < watermark; the final watermark INT64_MAX releases all),
 * then released in event-time order, ties in arrival order, and each gets
 * the calls' values over the rows of its partition released before it and
 * with it. A row with LEAD calls is emitted once the rows it reads are
 * released (or the final watermark shows there are none). A row whose event
 * time is already behind the watermark when it arrives (or NULL) is dropped
 * and counted (lm_op_window_late_rows). Emits the input columns, then one
 * column per call; out_schema lists them. */
/* Per window (time_col < 0; Top-N over a windowed stream, whose rows of one
 * window arrive together when it closes, before the watermark that closed
 * it): every row held is released at the next watermark advance, ordered in
 * its partition by `order` (ties in arrival order); the partitions (which
 * must hold a window bound, so a partition is whole in one release) and
 * their state are forgotten after each release. Ranking calls only. */
typedef struct lm_analytic_spec {
  const lm_expr* filter;
  int32_t time_col;            /* BIGINT epoch ms or TIMESTAMP; -1: per window */
  const lm_expr* const* order; /* per window: ORDER BY expressions */
  const bool* desc;            /* norder: DESC */
  const bool* nulls_first;     /* norder: NULLS FIRST (else NULLs sort last) */
  int32_t norder;
  const lm_expr* const* keys;
  int32_t nkeys;
  const lm_analytic_call* calls;
  int32_t ncalls;
  int32_t in_ncols;
  const lm_type* in_types; /* in_ncols */
} lm_analytic_spec;

laminar_code lm_op_analytic_create(const lm_analytic_spec* spec,
                                   const lm_schema* out_schema, lm_op** out);
/* Whether op is an analytic operator; its late-row count, the rows it holds
 * (waiting for the watermark or for LEAD's rows) and its partitions (0 for
 * another operator). */
bool lm_op_is_analytic(const lm_op* op);
int64_t lm_op_analytic_late_rows(const lm_op* op);
int64_t lm_op_analytic_held_rows(const lm_op* op);
int64_t lm_op_analytic_partitions(const lm_op* op);

#endif /* LM_OP_H */
