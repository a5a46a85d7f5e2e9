/*
 * rt.h -- the runtime graph (sources -> streams -> subscribers) and the
 * reactor that drives it.
 *
 * DESIGN
 * ------
 * Producers push messages (a batch, or an explicit watermark) into their
 * source's queue (both sides of it: rt/source.h; chan/mpsc.h: single-producer
 * until the source handle is cloned, multi-producer after) and wake the
 * reactor. The reactor -- a thread started by lm_rt_start(), or the caller of
 * lm_rt_run_until_idle() -- is the only consumer of every source queue and the
 * only thread that touches stream watermarks and the producer side of
 * subscriber rings (SPSC, chan/ring.h). With `cores` = N > 1 there are N
 * reactors: reactor 0 drains the sources and runs every unkeyed stream, keyed
 * streams run one partition per reactor (part.c); an operator's state is
 * touched only by the reactor owning its partition. For each message the
 * reading streams' operator chains run; a stream's output
 * batch is built once (Arrow), then shared by reference with every
 * subscriber's ring and every downstream stream. Order: per source, messages
 * are processed in push order; a stream's output batches reach each
 * subscriber in the order they were produced.
 *
 * Back-pressure: a source message is only taken when every subscriber ring
 * has room for all the batches one message can produce (lm_rt_headroom), so
 * delivery never blocks mid-message and run_until_idle() can stop cleanly when
 * a consumer is slow. The threaded reactor then waits (parked) for room.
 *
 * Catalog changes (new streams, subscriptions, drops) never race with the
 * reactor: the control thread pauses it at a message boundary
 * (lm_rt_pause/resume), changes the graph, and resumes it.
 */
#ifndef LM_RT_H
#define LM_RT_H

#include "arrow/arrow.h"
#include "chan/mpsc.h"
#include "chan/ring.h"
#include "chan/wait.h"
#include "laminar.h"
#include "op/op.h"
#include "plan/planner.h"
#include "sql/plan.h"
#include "util/types.h"

#include <pthread.h>
#include <stdatomic.h>

typedef struct lm_stream_def lm_stream_def;

/* Most reactors (config key `cores`). */
#define LM_RT_MAX_CORES 64
/* Most messages one round takes from one source (the per-source task budget). */
#define LM_RT_ROUND_MSGS 64
/* Most rows one round takes from one source: a source of huge batches yields
 * to the others after this many (at least one message is always taken). */
#define LM_RT_ROUND_ROWS 262144

/* An output of one partition of a keyed stream in the current round: the
 * batch its chain emitted while processing round message `msg`. */
typedef struct lm_part_item {
  int32_t msg;
  lm_batch* batch;
} lm_part_item;

/* Rounds reactor 0 may have in flight (posted, not yet merged): the reactors
 * run up to this far apart instead of meeting at every round. */
#define LM_RT_ROUNDS_INFLIGHT 4

/* What one partition emitted during one round (a round slot). */
typedef struct lm_part_out {
  lm_part_item* items; /* in production order */
  int32_t n, cap;
  int32_t merged;    /* reactor 0: items already delivered */
  laminar_code rc;   /* first error of the partition in this round */
  int64_t late_rows; /* the partition's late-row count after the round */
  /* A join's partition (ASOF or interval): the watermark its join forwards
   * downstream after each round message (lm_op_join_out_watermark); reactor
   * 0 forwards the least over the partitions. */
  int64_t wm_after[LM_RT_ROUND_MSGS];
} lm_part_out;

/* One partition of a keyed stream (cores > 1, see part.c). Touched only by
 * the reactor that owns partition `index` while it runs a round, by reactor
 * 0 for a round slot whose round every reactor finished (merge), and while
 * the graph is paused (edits; no round is in flight then). */
typedef struct lm_stream_part {
  lm_stream_def* stream;
  int32_t index;
  lm_op* chain; /* parts[0].chain is the stream's `chain` */
  int64_t watermark_ms;
  int32_t cur_msg;  /* round message being processed */
  int32_t cur_slot; /* round slot being processed */
  lm_part_out out[LM_RT_ROUNDS_INFLIGHT];
  /* A keyed stream over several inputs (its nin > 0): the partition's own
   * branch chains (in_chains[b], NULL: none; they end in its chain) and
   * inputs' watermarks (in_wm[b]; its watermark is the least), and the
   * branch whose rows its chain is taking. */
  lm_op** in_chains;
  int64_t* in_wm;
  int32_t cur_in;
} lm_stream_part;

/* Growable scratch of one reactor: row hashes, its partition's row numbers
 * (a selection over the batch), concatenated columns (the merge). */
typedef struct lm_gather_buf {
  uint64_t* hashes;
  uint32_t* sel;
  int64_t rows_cap;
  lm_vec* cols;
  int32_t cols_cap;
  unsigned char* mem;
  size_t mem_cap;
} lm_gather_buf;

/* A message in a source ring. batch == NULL: an explicit watermark, or with
 * `idle` set a change of the source's idleness (laminar_source_set_idle:
 * 1 idle, -1 active again; watermark_ms INT64_MIN, never logged). */
typedef struct lm_msg {
  lm_batch* batch;
  int64_t watermark_ms;
  uint64_t seq; /* WAL sequence number (0: the source keeps no WAL) */
  int8_t idle;
} lm_msg;

/* What a push does when its source's queue is full (CREATE SOURCE ... WITH
 * (backpressure = '...'), config key `backpressure`). */
typedef enum lm_backpressure {
  LM_BP_BLOCK = 0,       /* wait for room (the source's wait strategy); default */
  LM_BP_DROP_OLDEST = 1, /* remove the oldest queued message, counted */
  LM_BP_REJECT = 2       /* fail the push with LAMINAR_ERR_QUEUE_FULL, counted */
} lm_backpressure;

/* Parse 'block' | 'drop_oldest' | 'reject' (case-insensitive). */
bool lm_backpressure_parse(const char* text, lm_backpressure* out);
const char* lm_backpressure_name(lm_backpressure bp);

typedef struct lm_source_def {
  char* name;
  char* sql; /* the CREATE statement, for SHOW */
  /* The changelog of a table (CREATE TABLE): the table's name, NULL for a
   * source. Its schema is the table's columns then `_weight`. Set at CREATE. */
  char* table;
  lm_schema schema;
  int32_t wm_col; /* watermark column, -1 if none */
  int64_t wm_delay_ms;
  /* The watermark comes from explicit watermark messages only, not from the
   * batches' wm_col: a connector sends per-partition watermarks (their
   * minimum) itself (db/connector.c). Set at CREATE, before any push. */
  bool wm_external;
  /* Of lm_msg*: single-producer until the first clone of a handle, then
   * multi-producer (chan/mpsc.h); consumer: the reactor / run_until_idle. */
  lm_mpsc* queue;
  lm_backpressure backpressure; /* fixed at CREATE */
  /* Bound on the bytes of the queued batches (lm_batch.bytes), fixed at
   * CREATE (WITH (max_queue_bytes = ...), config key `max_queue_bytes`): a
   * push that would take queued_bytes past it meets the back-pressure policy
   * as a full queue does, unless the queue is empty (a larger batch is taken
   * alone, so nothing deadlocks). 0: no bound. */
  int64_t max_queue_bytes;
  /* Bytes of the batches queued now. writer: producers (add after a push),
   * the consumer and drop_oldest producers (subtract on taking one); relaxed:
   * a bound, not a synchronization. */
  atomic_int_fast64_t queued_bytes;
  lm_wait wait;           /* producers on a full queue; the reactor on empty ones */
  lm_waiter room;         /* producers blocked on a full queue park here;
                                the reactor notifies after taking messages */
  pthread_mutex_t log_mu; /* WAL + several producers: log and enqueue as one
                                step, so queue order is WAL order */
  int64_t lateness_ms;    /* WITH (allowed_lateness = ...): the default of its windows */
  atomic_int refs;        /* catalog + open producer handles */
  atomic_bool dropped;    /* writer: control; reader: producers (acquire) */
  /* Open producer handles (open: 0 -> 1 by CAS; clone: +1; close: -1).
   * writer: any producer/control thread (acq_rel RMW). */
  atomic_int producers;
  atomic_int_fast64_t pushed_batches; /* accepted pushes; writer: producers (relaxed) */
  atomic_int_fast64_t pushed_rows;
  /* Back-pressure counters; writer: producers (relaxed); reader: metrics. */
  atomic_int_fast64_t dropped_batches; /* drop_oldest: messages removed unread */
  atomic_int_fast64_t dropped_rows;
  atomic_int_fast64_t rejected_batches; /* reject: pushes refused for a full queue */
  /* The largest explicit watermark of a message dropped by drop_oldest: the
   * reactor applies it with the next message it takes. writer: producers
   * (CAS max); reader: the reactor. Relaxed: a lagging read only delays it. */
  atomic_int_fast64_t carried_watermark;
  struct lm_wal* wal; /* NULL unless durable (src/db/durable.c); producer side */
  /* Durable identity (src/db/durable.c): this incarnation of the name (a
   * DROP and CREATE makes another) and the fingerprint of its definition,
   * both recorded with its checkpointed position and its WAL. */
  uint64_t incarnation;
  uint64_t fingerprint;
  bool wal_sync; /* acknowledge a push after fdatasync */
  /* Durable without a WAL (wal_mode none): the offset of the last message
   * accepted, numbered as a WAL would (laminar_source_offset); from the
   * checkpoint's position at recovery. Under log_mu. */
  uint64_t unlogged_seq;
  /* WITH (idle_timeout = ...): taking no message for this long (the
   * reactor's clock, lm_rt_now_ns) makes the source idle; 0: never. Fixed
   * at CREATE. */
  int64_t idle_timeout_ms;
  /* Watermark alignment (WITH (alignment_group = 'g', max_drift = ...)),
   * fixed at CREATE: align_group NULL for none. A producer of a source whose
   * watermark (align_wm) is above align_limit -- its group's least watermark
   * over members not idle that have one, plus max_drift -- is held back as
   * by a full queue (source.c lm_source_held_back). Both written by the
   * graph driver (align_groups in rt/reactor.c, relaxed: a bound, not a synchronization),
   * read by producers; align_limit INT64_MAX: not held. */
  char* align_group;
  int64_t max_drift_ms;
  atomic_int_fast64_t align_wm;
  atomic_int_fast64_t align_limit;
  /* WITH (watermark_key = 'col'): per-key watermarks (docs/SQL.md), fixed at
   * CREATE; -1 none. Each key's watermark is its largest event time less
   * wm_delay_ms; the source's is the least over its keys that are not idle
   * (idle_timeout_ms > 0: a key whose largest event time is more than that
   * behind the source's largest), never behind an explicit watermark. */
  int32_t wm_key_col;
  /* reactor-only: the keys' event times (state/keywm.h), NULL without a key;
   * checkpointed with the source's position (db/durable.c). */
  struct lm_keywm* keys;
  /* A lookup join reads this source's rows (db/table.c): order_of is the
   * changelog source of the table it joins (NULL: none); order_noted and
   * order_self are that source's and this one's processed_seq when a point
   * of their order was last recorded (rt order_hook). Reactor 0 (it drains
   * both); set while the graph is paused. */
  struct lm_source_def* order_of;
  uint64_t order_noted, order_self;
  /* Some source's order_of is this one: a table's changelog (table also
   * set), or the input of a table fed by its query (db/table.c). */
  bool order_target;
  /* reactor-only */
  uint64_t processed_seq; /* last WAL record taken through the graph */
  int64_t max_ts_ms;
  int64_t watermark_ms;
  /* Idleness (source_idleness, rt/reactor.c): an idle source holds back no
   * reader's watermark. idle_next: what the messages taken last ask (0
   * nothing, 1 idle, 2 active: any batch or explicit watermark), applied
   * after they went through the graph; active_ns: when a message was last
   * taken (0: not yet looked at). Not checkpointed: a source opens active. */
  bool idle;
  int8_t idle_next;
  int64_t active_ns;
  lm_stream_def** readers;
  int32_t nreaders;
} lm_source_def;

/* A subscriber's queue. The reactor produces, the consumer thread consumes. */
typedef struct lm_sub {
  lm_ring* ring;     /* of lm_batch* */
  lm_waiter waiter;  /* consumer parks here; reactor notifies */
  atomic_bool ended; /* stream dropped / db closed: no more batches */
  /* Slow-subscriber policy, fixed at subscribe: false = block (the reactor
   * takes no input while this queue lacks headroom), true = drop (a batch
   * that does not fit is dropped for this subscriber and counted). */
  bool drop_when_full;
  lm_wait wait;                        /* how the consumer waits for a batch */
  atomic_int_fast64_t dropped_batches; /* writer: reactor (relaxed); reader: any */
  atomic_int_fast64_t dropped_rows;
  /* Bound on the bytes of the queued batches (lm_batch.bytes), fixed at
   * subscribe (max_queue_bytes; 0: none). A batch that would take `bytes`
   * past it is dropped (drop policy) or holds the reactor (block policy,
   * lm_rt_min_free) -- unless the queue is empty: a larger batch goes in
   * alone, so nothing deadlocks. */
  int64_t max_bytes;
  atomic_int_fast64_t bytes; /* queued now; writer: reactor (+), consumer (-) */
  int64_t last_bytes;        /* the last batch offered (reactor-only): the
                                 block policy's guess of the next one's size */
  /* A batch was pushed since the consumer was last notified (the publishing
   * thread's only: reactor 0 or the inline caller). Notifications are
   * deferred to the end of a round (lm_rt_notify_subscribers): a parked
   * consumer is woken once per round, not once per batch. */
  bool notify_pending;
} lm_sub;

struct lm_stream_def {
  char* name;
  char* sql;
  lm_plan plan;      /* logical (sql/plan.h) */
  lm_phys_plan phys; /* the planner's choices (plan/planner.h) */
  lm_op* chain;      /* partition 0 */
  lm_schema out_schema;
  lm_sub** subs; /* changed only while the reactor is paused */
  int32_t nsubs;
  lm_stream_def** readers; /* downstream streams */
  int32_t nreaders;
  int64_t watermark_ms; /* reactor-only; with inputs: the least of in_wm */
  /* Several inputs (plan.branches: UNION ALL, a derived table); nin 0: one
   * input whose chunks go to `chain` as they are. Input b is in_defs[b] (an
   * lm_source_def* or lm_stream_def*, which lists this stream as a reader
   * once however many branches read it); its chunks run through
   * in_chains[b] (NULL: none) into `chain`, and in_wm[b] is its watermark
   * (reactor-only). A chunk from an input runs every branch reading it. */
  int32_t nin;
  const void** in_defs;
  lm_op** in_chains;
  int64_t* in_wm;
  /* in_idle[b]: input b is idle (a source declared idle, or a stream all of
   * whose inputs are); its in_wm does not count in the least. idle: every
   * input of this stream is (its readers skip it in turn). Reactor-only. */
  bool* in_idle;
  bool idle;
  int32_t cur_in; /* the branch whose rows `chain` is taking (reactor-only) */
  atomic_int_fast64_t late_rows; /* writer: reactor; reader: any (relaxed) */
  struct lm_sink** sinks; /* exactly-once sinks on the output; changed while paused */
  int32_t nsinks;
  /* Late side output (CREATE STREAM ... WITH (late_output = ...)): `late` is
   * the stream its window operator hands late input rows to; that stream's
   * `late_of` points back. The late stream reads nothing itself (sql NULL:
   * its parent's statement creates it), follows its parent's watermark and
   * is created and dropped with it. */
  lm_stream_def* late;
  lm_stream_def* late_of;
  /* Durable identity (src/db/durable.c): this incarnation of the name, the
   * fingerprint of its plan (its statement and its inputs'), recorded with
   * its checkpointed state; start_seq: its root source's position when it
   * was created -- WAL replay feeds it the records after that only. */
  uint64_t incarnation;
  uint64_t fingerprint;
  uint64_t start_seq;
  /* With inputs (nin > 0): in_start[b] is the position of input b's root
   * source when the stream was created (start_seq is input 0's); NULL
   * without durability's need of it. Replay gates work per root source. */
  uint64_t* in_start;
  /* Its keyed state's bound (WITH (max_state_bytes = ...)), charged by every
   * partition's chain, the database's as parent; it also carries the text
   * of a failure its operators recorded (op.h lm_op_account). */
  lm_state_budget budget;
  /* Thread-per-core (part.c): a keyed stream (phys.nparts > 1) runs as
   * `nparts` partitions, rows routed by the hash of the GROUP BY columns
   * `part_keys` (source column indexes). nparts 1: everything else. */
  int32_t nparts;
  lm_stream_part* parts;
  int32_t* part_keys;
  int32_t npart_keys;
  /* A keyed stream over several inputs (every branch reads a source and
   * passes each GROUP BY column through unchanged): branch b's rows are
   * routed by its source's columns in_part_keys[b * npart_keys ..], the
   * columns its projection puts at the keys' places (part_keys: branch 0's). */
  int32_t* in_part_keys;
};

/* Keys a source with per-key watermarks tracks now (0 without). Reactor
 * state: read it with the reactor paused or stopped (metrics do). */
int64_t lm_rt_source_keys(const lm_source_def* src);

typedef struct lm_graph {
  lm_source_def** sources;
  int32_t nsources;
  lm_stream_def** streams; /* in creation order: upstream before downstream */
  int32_t nstreams;
  /* The commit list of the source batch under way (op.h, lm_op_txn): every
   * unpartitioned chain's operators and publications register on it. */
  lm_op_txn txn;
} lm_graph;

struct lm_rt;

/* Reactor `index` of a database with `cores` reactors. Reactor 0 is the
 * runtime's own thread (or the run_until_idle caller); reactors 1..N-1 are
 * workers that run their partition of every keyed stream, one round at a time. */
typedef struct lm_reactor {
  struct lm_rt* rt;
  int32_t index;
  pthread_t thread;
  bool running;              /* worker thread started (control) */
  lm_waiter wake;            /* a worker parks here between rounds */
  atomic_uint_fast64_t done; /* last round it finished; writer: the worker (release) */
  lm_gather_buf scratch;
  /* Values this reactor computed for the messages it routed in round slot
   * k (lm_round.args), and the round they are of: reset when it first routes
   * a message of a later round in that slot (every reactor finished the
   * earlier one: reactor 0 reused the slot). */
  lm_eval_ctx* arg_ctx[LM_RT_ROUNDS_INFLIGHT];
  uint64_t arg_seq[LM_RT_ROUNDS_INFLIGHT];
  /* Metrics; writer: the reactor (relaxed); reader: laminar_metrics. */
  atomic_int_fast64_t busy_ns;
  atomic_int_fast64_t rounds;
  atomic_int_fast64_t rows;
  atomic_int cpu; /* pinned CPU, -1 if not pinned; writer: the reactor (relaxed) */
} lm_reactor;

/* An in-band checkpoint barrier (lm_rt_barrier). The thread driving the
 * graph (reactor 0, or the caller when the runtime is not started) is the
 * only consumer of every source queue, so the barrier's position in each
 * source is where that consumer stands when it takes the request: no marker
 * is pushed into a queue (the checkpoint thread never becomes a second
 * producer of an SPSC ring). From there the barrier travels in the round
 * sequence, the reactors' own input: each reactor reaches it after the
 * rounds posted before it, and reactor 0's merge reaches it after merging
 * them. `step` runs at each point, on the thread that reached it:
 *   INJECT  the driver, at the barrier's position in every source queue:
 *           streams whose input is processed right away (not through rounds)
 *           are aligned here;
 *   PART    reactor `part`, between the rounds before and after the
 *           barrier: its partition of every keyed stream is aligned here;
 *   MERGED  the driver, once every round before the barrier is merged:
 *           streams fed by the merge (readers of a partitioned source that
 *           are not partitioned, streams reading keyed streams) are aligned
 *           here -- each partition's output past the barrier waits in its
 *           round slot until every partition reached the barrier.
 * No reactor waits for another at a barrier: a slow one delays only MERGED. */
typedef enum lm_barrier_step {
  LM_BARRIER_INJECT = 0,
  LM_BARRIER_PART = 1,
  LM_BARRIER_MERGED = 2
} lm_barrier_step;

typedef struct lm_barrier {
  void (*step)(void* arg, lm_barrier_step step, int32_t part);
  void* arg;
  /* Set by the runtime. done: under rt->pause_mu. stall_ns: the longest
   * single step (a reactor's pause for the barrier); writer: any reactor
   * (CAS max, relaxed: read after done). */
  bool done;
  atomic_int_fast64_t stall_ns;
} lm_barrier;

/* A round reactor 0 hands to every reactor: messages of one source and the
 * source watermark after each (INT64_MIN: no advance). Written by reactor 0
 * before round_seq publishes it; read-only until every reactor finished it.
 * A barrier round (barrier != NULL) has no source and no messages. */
typedef struct lm_round {
  lm_barrier* barrier;
  lm_source_def* src;
  lm_msg* msgs[LM_RT_ROUND_MSGS];
  int64_t wms[LM_RT_ROUND_MSGS];
  int32_t n;
  bool split; /* publish each partition's batch (else concatenate) */
  /* An idleness change of src (one message, no data, wms[0] INT64_MIN): each
   * partitioned union reading src takes the least of its active inputs now
   * (lm_rt_run_idleness), not at the next advance of an input. */
  bool rewm;
  /* Key hashes of the messages' rows over the GROUP BY columns of `hkeys`
   * (the first keyed reader; readers grouping alike share them), computed
   * once per message by whichever reactor claims it: message j's rows from
   * hashes + hoff[j]; hstate[j] 0 unclaimed, 1 being hashed, 2 ready
   * (release by the hasher, acquire by the others). Sized and reset by
   * reactor 0 before the post; hkeys NULL: each reactor hashes for itself.
   * With the hashes the hasher sorts the message's row numbers by partition
   * (ascending within each): partition p's rows of message j are
   * rows + hoff[j] + poff[j * (ncores + 1) + p], up to the next offset.
   * And it evaluates hkeys' computed aggregate arguments over the whole
   * batch, by row (in its own context, lm_reactor.arg_ctx): message j's are
   * args[j * nargs + a] for aggregate a (data NULL: not shared, each
   * partition's operator evaluates it), so no partition evaluates them over
   * its rows again (a gather of their inputs each). */
  const lm_stream_def* hkeys;
  uint64_t* hashes;
  uint32_t* rows;
  int64_t hcap;
  int64_t* poff; /* LM_RT_ROUND_MSGS * (ncores + 1) */
  lm_vec* args;
  int32_t nargs, acap; /* hkeys' aggregates; room for acap per message */
  int64_t hoff[LM_RT_ROUND_MSGS];
  atomic_int hstate[LM_RT_ROUND_MSGS];
} lm_round;

typedef struct lm_rt {
  lm_graph* graph;
  /* Thread-per-core (fixed at open): reactors[0..ncores). */
  int32_t ncores;
  bool affinity; /* pin reactor i to CPU i mod online CPUs */
  lm_reactor* reactors;
  /* Round r lives in rounds[r % LM_RT_ROUNDS_INFLIGHT] from its post until
   * its merge; rounds posted..merged+1 are in flight. */
  lm_round rounds[LM_RT_ROUNDS_INFLIGHT];
  atomic_uint_fast64_t round_seq; /* last posted round; writer: reactor 0 (release) */
  uint64_t merged;                /* last merged round (reactor 0) */
  int32_t inflight_msgs;          /* messages of posted, unmerged rounds (reactor 0) */
  int32_t align_nsources;         /* graph's sources at the last alignment (reactor 0) */
  atomic_bool stop_workers;
  lm_waiter joined;        /* reactor 0 waits here for the workers' rounds */
  lm_gather_buf merge_buf; /* reactor 0: concatenation of partition outputs */
  void* topology;          /* hwloc topology when built with hwloc and pinned */
  pthread_t thread;
  atomic_bool started; /* writer: control; reader: producers (push back-pressure) */
  atomic_bool stop;    /* writer: control; reader: reactor */
  lm_waiter wake;      /* reactor parks here; producers notify */
  /* pause handshake (control <-> reactor) */
  pthread_mutex_t pause_mu;
  pthread_cond_t pause_cv;
  atomic_bool pause_req;
  bool paused; /* under pause_mu */
  /* In-band barriers: a request (writer: control, release; taken by reactor
   * 0 with an acquire exchange) and the barrier rounds posted, not merged
   * (reactor 0). Completion is signalled on pause_cv (b->done). */
  _Atomic(lm_barrier*) barrier_req;
  int32_t barriers_open;
  atomic_uint_fast64_t barriers_taken; /* writer: reactor 0 (relaxed); tests read it */
  /* Tests: runs on reactor `part` before each round it runs (a barrier
   * round or a data round); it may hold that reactor back. */
  void (*round_hook)(void* arg, int32_t part, bool barrier);
  void* round_hook_arg;
  /* Durability (db/durable.c): called on reactor 0 when an idleness change
   * of `src` has been applied (source_idleness), every message taken before
   * it through the graph: the sources' processed_seq are the point in the
   * input where it took effect. NULL: none. Set before the runtime starts. */
  void (*idle_hook)(void* arg, const lm_source_def* src, bool idle);
  void* idle_hook_arg;
  /* Durability (db/durable.c): called on reactor 0 before a logged message
   * of `src` is taken where it takes over from the other side of a lookup
   * join: src a source a lookup join reads (src->order_of its table's
   * changelog) after that table took messages, or a table's changelog after
   * a source joining it did. The sources' processed_seq are the point, so
   * that the WAL replay takes the two in the live order. NULL: none. Set
   * before the runtime starts. */
  void (*order_hook)(void* arg, const lm_source_def* src);
  void* order_hook_arg;
  /* Durability (db/durable.c): called on the thread driving the graph when
   * the batch of logged message `seq` of `src` failed for memory in its
   * chunk phase (out of memory, or past max_state_bytes: not applied, so its
   * producer may push it again), before the failure is reported: it logs a
   * VOID naming the record, so a replay does not apply it either. A
   * failure of the hook (the VOID not logged) fails the message with its
   * code instead. Not called for a failure in the watermark close after
   * the batch (the batch was applied), nor for sources run in rounds
   * (cores > 1 with a keyed reader: a round is not all or nothing). NULL:
   * none. Set before the runtime starts. */
  laminar_code (*void_hook)(void* arg, const lm_source_def* src, uint64_t seq);
  void* void_hook_arg;
  /* Counters (issue 5 observability). writer: the thread driving the graph
   * (relaxed); reader: laminar_metrics. busy_ns: time in rounds that took
   * messages, on the reactor thread; started_ns: CLOCK_MONOTONIC at
   * lm_rt_start (0 when stopped; written by control under db->lock). */
  atomic_int_fast64_t messages;
  atomic_int_fast64_t busy_ns;
  int64_t started_ns;
  /* first error raised on the reactor thread, reported by laminar_stop() */
  laminar_code error;
  laminar_error error_detail;
} lm_rt;

laminar_code lm_rt_init(lm_rt* rt, lm_graph* graph);
/* Set the number of reactors (1..LM_RT_MAX_CORES) and pinning, once, right
 * after lm_rt_init. */
laminar_code lm_rt_configure(lm_rt* rt, int32_t cores, bool affinity);
void lm_rt_destroy(lm_rt* rt);

/* Start the reactor thread. LAMINAR_ERR_STATE if started. */
laminar_code lm_rt_start(lm_rt* rt, laminar_error* err);
/* Ask it to finish the queued messages, then join. No-op when not started. */
laminar_code lm_rt_stop(lm_rt* rt, laminar_error* err);
/* Pause the reactor at a message boundary / let it go on (no-ops when not
 * started). Control thread only, nested calls not allowed. */
void lm_rt_pause(lm_rt* rt);
void lm_rt_resume(lm_rt* rt);
/* CLOCK_MONOTONIC in nanoseconds. */
int64_t lm_rt_now_ns(void);

/* Take barrier b through the graph (see lm_barrier) and return once every
 * source, reactor and the merge passed it. Started: reactor 0 takes it at its
 * next message boundary, and this waits; not started: the caller drives it
 * (nothing is in flight between inline runs). Control thread, with the graph
 * not edited meanwhile (db->lock). */
void lm_rt_barrier(lm_rt* rt, lm_barrier* b);
/* For each stream of the graph (by index), whether the barrier aligns it at
 * the merge (MERGED) rather than at the injection (INJECT). */
void lm_rt_barrier_points(const lm_rt* rt, bool* at_merge);
/* Tests: fn(arg, part, barrier) runs on reactor `part` before each round it
 * runs (cores > 1), a barrier round or not; it may hold that reactor back.
 * Set while the runtime is stopped. */
/* Make source src idle (or active again) for its readers now: each marks
 * the input and recomputes its watermark over its active inputs (emitting
 * what that closes; partitioned unions as an idleness round). The graph
 * driver's thread, nothing in flight; also WAL replay, where a logged change
 * is applied at its point in the input. No hook call. */
laminar_code lm_rt_apply_idleness(lm_rt* rt, lm_source_def* src, bool idle);

void lm_rt_set_round_hook(lm_rt* rt, void (*fn)(void* arg, int32_t part, bool barrier),
                          void* arg);

/* Wake the reactor after a push (cheap when it is not parked). */
void lm_rt_notify(lm_rt* rt);

/* Take one message through the graph now, in the calling thread (WAL replay
 * at open, before any reactor runs): through every partition of its keyed
 * readers, as the reactors route live pushes. Consumes msg. */
laminar_code lm_rt_process_now(lm_rt* rt, lm_source_def* src, lm_msg* msg);

/* The error of a failed message: the detail a stream recorded for code rc
 * (lm_state_budget_fail), else "stream processing failed<where>: ...". */
laminar_code lm_rt_processing_error(const lm_graph* g, laminar_code rc, const char* where,
                                    laminar_error* err);

/* Wait until every queued sink of the graph wrote what was queued to it
 * (sink.h drain): the first failed write's code, else OK. Not on a sink
 * thread. */
laminar_code lm_rt_drain_sinks(const lm_graph* g);

/* Drive the graph inline until no queued message can be processed, and the
 * sinks' queued writes are done. Not while started. */
laminar_code lm_rt_run_until_idle(lm_rt* rt, laminar_error* err);

/* Subscriber queues. */
laminar_code lm_sub_create(uint32_t capacity, lm_sub** out);

/* Set up a new source's queue, waiter and lock (control thread, before the
 * source is published). On failure nothing needs undoing but the def itself
 * (lm_source_def_unref copes with a def whose queue is NULL). */
laminar_code lm_source_def_init_queue(lm_source_def* def, uint32_t capacity,
                                      lm_backpressure bp, lm_wait wait);
/* Take the oldest message off src's queue (the consumer: pop; a drop_oldest
 * producer: steal), keeping queued_bytes. False when empty. */
bool lm_source_take(lm_source_def* src, bool steal, lm_msg** out);
/* Free a message taken off a source queue without processing it. */
void lm_msg_free(lm_msg* msg);
/* Frees queued batches. The sub must be detached from its stream. */
void lm_sub_destroy(lm_sub* sub);

/* Graph edits (control thread, reactor paused or not started). */
void lm_source_def_unref(lm_source_def* def);
void lm_stream_def_free(lm_stream_def* def);
/* Sink fn of a window operator's late rows (lm_op_window_set_late_sink): runs
 * them through late stream `arg` (an lm_stream_def*) like an input chunk. */
laminar_code lm_stream_take_late(void* arg, const lm_chunk* chunk);
/* Point the last operator of a new stream's chain at the stream's output
 * (subscribers and downstream streams). Once, before the stream is published. */
void lm_stream_def_attach(lm_stream_def* s);
/* Make `s` (whose chain is built, not yet attached) a keyed stream of
 * s->phys.nparts partitions when the planner chose more than one
 * (lm_plan_physical: windowed over a source, or over a union whose every
 * branch reads a source and passes each GROUP BY column through unchanged;
 * GROUP BY plain columns only, not a materialized view, cores > 1).
 * Otherwise it is attached as usual. Control thread, before the stream is
 * published. */
laminar_code lm_stream_def_attach_rt(lm_stream_def* s);
/* "0" .. "63": reactor names in metrics and pipeline state. */
const char* lm_rt_reactor_name(int32_t index);
/* A new stream starts at its input's watermark (all its partitions). */
void lm_stream_def_start_at(lm_stream_def* s, int64_t watermark_ms);
/* Set up the inputs of a stream whose plan has branches with operators or
 * several inputs (lm_stream_def.nin; else nothing to do): in_defs[b] is
 * what branch b reads. Each branch's chain is built and pointed at the
 * stream's chain, and the stream's watermark starts at the least of its
 * inputs' (an input that saw nothing holds it at INT64_MIN). Control
 * thread, after lm_stream_def_attach_rt. */
laminar_code lm_stream_def_set_inputs(lm_stream_def* s, const void* const* in_defs,
                                      const int64_t* in_wm);
/* Copy a keyed stream's inputs' watermarks (in_wm, set while the graph does
 * not run: a restore, a replay gate) to each of its partitions. */
void lm_stream_def_sync_inputs(lm_stream_def* s);
/* The chain of partition p (< nparts; p 0: `chain`, also of an unpartitioned stream). */
lm_op* lm_stream_part_chain(const lm_stream_def* s, int32_t p);
/* Late rows of a stream over all its partitions. */
int64_t lm_stream_late_rows(const lm_stream_def* s);
/* Late rows one chain's window or join dropped so far. */
int64_t lm_stream_part_late_rows(const lm_op* chain);
/* Groups held by a stream over all its partitions. */
int64_t lm_stream_state_rows(const lm_stream_def* s);
/* Rows into its first operator / out of its last, over all its partitions. */
void lm_stream_rows(const lm_stream_def* s, int64_t* rows_in, int64_t* rows_out);
/* Bytes its operator state encodes to (a snapshot of every partition,
 * O(state)). Graph paused or not running. */
laminar_code lm_stream_state_bytes(const lm_stream_def* s, int64_t* out);
laminar_code lm_graph_add_reader(lm_stream_def*** readers, int32_t* n, lm_stream_def* s);
void lm_graph_remove_reader(lm_stream_def** readers, int32_t* n, const lm_stream_def* s);

#endif /* LM_RT_H */
