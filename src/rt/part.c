/*
 * part.c -- thread-per-core: keyed streams split into key-hash partitions,
 * one per reactor, run in rounds and merged on reactor 0.
 *
 * DESIGN
 * ------
 * With `cores = N` (N > 1) a stream that groups by plain columns of the
 * source it reads (a keyed stream) gets N copies of its operator chain,
 * "partition p" owned by reactor p. Everything else (map streams, views,
 * streams reading streams, windows without GROUP BY or with expression keys)
 * stays on reactor 0, as with one core. A window over a UNION ALL of sources
 * is keyed too when every branch puts a plain source column, uncast, at each
 * key's place: branch b's rows are routed by those columns of its source
 * (in_part_keys), which hash as the keys do; each partition runs its own
 * copy of the branch chains into its chain and keeps each input's watermark
 * (run_part_union, inputs_advance), as reactor.c does for an unpartitioned
 * union. A join (ASOF or interval) of two sources on plain key columns is
 * keyed the same way, each input routed by its own equality key columns
 * (lm_plan_part_source_col, lm_plan_join_part_keys): its head takes each
 * input's rows (as a dense chunk when it takes no selection: densify) and
 * each input's own watermark (part_join_watermark); what a partition's join
 * forwards downstream (lm_op_join_out_watermark) is noted per round message
 * (lm_part_out.wm_after) and the merge forwards the least over the
 * partitions.
 *
 * Reactor 0 drains the source queue. For a source with keyed readers it takes
 * a *round* of up to LM_RT_ROUND_MSGS messages (fewer when a subscriber has
 * less room, see below), computes the source watermark after each, publishes
 * the round (release store of round_seq) and wakes the workers. Every reactor
 * p then, for each message in order, routes it: the hashes of the GROUP BY
 * columns over the batch (the window operator's key hash, lm_op_hash_keys)
 * and the batch's row numbers sorted by partition (lm_op_part_of: the high 32
 * bits scaled to N, so the low bits the group tables use stay spread). Both
 * are computed once per message and round slot by whichever reactor claims
 * the message first (lm_round.hstate); a reactor finding it being hashed by
 * another hashes a later message meanwhile (then waits for it no longer than
 * hashing it itself would take), so two reactors reaching a round together
 * split the routing (a stream grouping by other columns than the first keyed
 * reader hashes and selects for itself). Reactor p hands its chain the whole
 * batch with partition p's rows as a selection (lm_chunk.sel: no copy of the
 * rows; the window operator reads them where they are) and the hashes by row
 * (lm_op_window_set_key_hashes), so nothing is hashed or gathered twice. The
 * routing reactor also evaluates the first keyed reader's computed aggregate
 * arguments over the whole batch (by row, into its context for the round
 * slot, lm_reactor.arg_ctx), which that reader's partitions take
 * (lm_op_window_set_args) instead of evaluating them over their rows.
 * Then it applies the message's watermark: the watermark is
 * broadcast, and each partition closes its own windows. What a partition's
 * chain emits is built into an Arrow batch on that reactor and kept, tagged
 * with the round message that produced it, in the round's slot. Reactor 0
 * runs partition 0 of the round itself right after posting it.
 *
 * Pipeline: up to LM_RT_ROUNDS_INFLIGHT rounds are in flight (posted, not yet
 * merged), each in its own slot (messages, watermarks, and per partition its
 * outputs). A worker runs the rounds in order and stores the last one it
 * finished (`done`, release); reactor 0 merges round r once every worker's
 * `done` >= r (acquire: that partition's state and outputs are visible), then
 * reuses the slot. So the reactors do not meet at a barrier every round: while
 * a worker is preempted, reactor 0 posts and runs the next rounds of its own.
 *
 * Merge: reactor 0 walks a finished round's messages in order. For each
 * message, each reader of the source in creation order either runs as usual
 * (unpartitioned) or gets its partitions' outputs for that message, one
 * batch per partition in partition order (no copy), which go to sinks,
 * subscribers and downstream streams like one-core outputs. Each key lives in
 * one partition, so its rows keep their order; a stream's watermark is
 * forwarded downstream only after all partitions' outputs for it were
 * delivered. One message yields at most N batches per stream, so the messages
 * of all rounds in flight, k, need k * N (+1 margin) free slots in every
 * blocking subscriber ring. When even one message does not fit so, the
 * partitions' outputs of a message are concatenated into one batch (a copy),
 * one round at a time, with k = fewest free slots - 1: the one-core rule.
 *
 * Threads: reactor 0 drains (waits for and merges) every round in flight
 * before it honours a pause, before it waits idle or blocked, and before it
 * stops; workers touch the graph only inside a round. So the graph is edited
 * (pause handshake, rt.h) only while every reactor is at the same message
 * boundary, and pausing reactor 0 is enough.
 * Inline (run_until_idle) the caller runs every partition in turn: the same
 * code, one thread.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE  // pthread_setaffinity_np, cpu_set_t
#endif
#include "rt/internal.h"

#include "op/op.h"
#include "util/util.h"

#include <sched.h>
#include <string.h>
#include <unistd.h>

#ifdef LAMINAR_HAVE_HWLOC
#include <hwloc.h>
#endif

/* A reactor waiting for a round (or reactor 0 for the workers) polls
 * LM_ROUND_SPINS times, then yields its CPU between polls until a time budget
 * is spent, then parks. The other side is working on the same round, so the
 * wait is short; parking would add a futex wake-up, and on a busy machine a
 * woken thread may wait a whole scheduler slice for a CPU (measured: W1 with
 * 2 reactors ran 2-3x slower than with 1 when both parked after ~256 polls).
 * sched_yield rather than pause: the machine may run more threads than cores
 * (producers, consumers, other programs). */
#define LM_ROUND_SPINS 64
#define LM_JOIN_BUDGET_NS 20000000 /* reactor 0 waiting for the workers */
#define LM_IDLE_BUDGET_NS 2000000  /* a worker waiting for the next round */
/* A reactor waits for another's routing of a message at most about as long
 * as routing it itself would take (its router started first): 10 ns a row
 * for the hash alone, half again with the partition sort and W1's shared
 * argument (instructions per row 46 -> 68). */
#define LM_HASH_WAIT_NS_PER_ROW 15

/* Poll ready(arg) the way above, without parking; true once it holds. */
static bool poll_briefly(bool (*ready)(void*), void* arg, int64_t budget_ns) {
  for (int i = 0; i < LM_ROUND_SPINS; i++) {
    if (ready(arg)) return true;
    lm_wait_cpu_relax();
  }
  int64_t until = lm_rt_now_ns() + budget_ns;
  for (uint32_t i = 1;; i++) {
    if (ready(arg)) return true;
    sched_yield();
    if ((i & 15) == 0 && lm_rt_now_ns() >= until) return ready(arg);
  }
}

/* ---- scratch ---------------------------------------------------------------- */

void lm_gather_buf_free(lm_gather_buf* g) {
  lm_free(g->hashes);
  lm_free(g->sel);
  lm_free(g->cols);
  lm_free(g->mem);
  memset(g, 0, sizeof *g);
}

static laminar_code gather_rows(lm_gather_buf* g, int64_t n) {
  if (n <= g->rows_cap) return LAMINAR_OK;
  int64_t cap = g->rows_cap ? g->rows_cap : 1024;
  while (cap < n) cap *= 2;
  uint64_t* h = lm_realloc(g->hashes, sizeof *h * (size_t)cap);
  if (h == NULL) return LAMINAR_ERR_NOMEM;
  g->hashes = h;
  uint32_t* sel = lm_realloc(g->sel, sizeof *sel * (size_t)cap);
  if (sel == NULL) return LAMINAR_ERR_NOMEM;
  g->sel = sel;
  g->rows_cap = cap;
  return LAMINAR_OK;
}

/* Room for `ncols` column headers and `bytes` of column memory. */
static laminar_code gather_reserve(lm_gather_buf* g, int32_t ncols, size_t bytes) {
  if (ncols > g->cols_cap) {
    lm_vec* c = lm_realloc(g->cols, sizeof *c * (size_t)ncols);
    if (c == NULL) return LAMINAR_ERR_NOMEM;
    g->cols = c;
    g->cols_cap = ncols;
  }
  if (bytes > g->mem_cap) {
    size_t cap = g->mem_cap ? g->mem_cap : 65536;
    while (cap < bytes) cap *= 2;
    unsigned char* m = lm_realloc(g->mem, cap);
    if (m == NULL) return LAMINAR_ERR_NOMEM;
    g->mem = m;
    g->mem_cap = cap;
  }
  return LAMINAR_OK;
}

static size_t align16(size_t n) { return (n + 15) & ~(size_t)15; }

/* Concatenate batches b[0..k) (same schema) into g's columns. */
static laminar_code concat(lm_gather_buf* g, lm_batch* const* b, int32_t k, int32_t ncols,
                           lm_chunk* out) {
  int64_t total = 0;
  for (int32_t i = 0; i < k; i++) total += b[i]->nrows;
  size_t bytes = 0;
  for (int32_t c = 0; c < ncols; c++) {
    bytes += align16((size_t)(total * lm_type_width(b[0]->cols[c].type))) +
             align16((size_t)total);
  }
  LM_TRY(gather_reserve(g, ncols, bytes));
  unsigned char* p = g->mem;
  for (int32_t c = 0; c < ncols; c++) {
    int64_t w = lm_type_width(b[0]->cols[c].type);
    unsigned char* data = p;
    p += align16((size_t)(total * w));
    uint8_t* nulls = p;
    p += align16((size_t)total);
    bool any_null = false;
    int64_t at = 0;
    for (int32_t i = 0; i < k; i++) {
      const lm_vec* v = &b[i]->cols[c];
      int64_t n = b[i]->nrows;
      if (n == 0) continue;
      if (v->data != NULL) {
        memcpy(data + at * w, v->data, (size_t)(n * w));
      } else {
        memset(data + at * w, 0, (size_t)(n * w));
      }
      if (v->nulls != NULL) {
        memcpy(nulls + at, v->nulls, (size_t)n);
        any_null = true;
      } else {
        memset(nulls + at, 0, (size_t)n);
      }
      at += n;
    }
    g->cols[c] = (lm_vec){b[0]->cols[c].type, total, any_null ? nulls : NULL, data};
  }
  *out = (lm_chunk){total, ncols, g->cols, NULL};
  return LAMINAR_OK;
}

/* Rows in->sel[0..nrows) of `in` as a dense chunk in g's columns (strings as
 * views: their bytes stay in the batch); `in` itself when it has no
 * selection. For a head that takes no selection (an ASOF join). */
static laminar_code densify(lm_gather_buf* g, const lm_chunk* in, lm_chunk* out) {
  if (in->sel == NULL) {
    *out = *in;
    return LAMINAR_OK;
  }
  int64_t n = in->nrows;
  size_t bytes = 0;
  for (int32_t c = 0; c < in->ncols; c++) {
    bytes += align16((size_t)(n * lm_type_width(in->cols[c].type))) + align16((size_t)n);
  }
  LM_TRY(gather_reserve(g, in->ncols, bytes));
  unsigned char* p = g->mem;
  for (int32_t c = 0; c < in->ncols; c++) {
    const lm_vec* v = &in->cols[c];
    size_t w = (size_t)lm_type_width(v->type);
    unsigned char* data = p;
    p += align16(n * w);
    uint8_t* nulls = p;
    p += align16((size_t)n);
    const unsigned char* src = v->data;
    if (src != NULL) {
      for (int64_t k = 0; k < n; k++)
        memcpy(data + (size_t)k * w, src + in->sel[k] * w, w);
    } else {
      memset(data, 0, n * w);
    }
    if (v->nulls != NULL) {
      for (int64_t k = 0; k < n; k++) nulls[k] = v->nulls[in->sel[k]];
    }
    g->cols[c] = (lm_vec){v->type, n, v->nulls != NULL ? nulls : NULL, data};
  }
  *out = (lm_chunk){n, in->ncols, g->cols, NULL};
  return LAMINAR_OK;
}

/* ---- keyed streams ---------------------------------------------------------- */

/* The tail of partition p's chain: build its output once, on its reactor,
 * into the current round slot. */
static laminar_code part_sink(void* arg, const lm_chunk* chunk) {
  lm_stream_part* sp = arg;
  const lm_stream_def* s = sp->stream;
  if (s->nsinks == 0 && s->nsubs == 0 && s->nreaders == 0) return LAMINAR_OK;
  if (chunk->nrows == 0) return LAMINAR_OK;
  lm_part_out* o = &sp->out[sp->cur_slot];
  if (o->n == o->cap) {
    int32_t cap = o->cap ? o->cap * 2 : 8;
    lm_part_item* grown = lm_realloc(o->items, sizeof *grown * (size_t)cap);
    if (grown == NULL) return LAMINAR_ERR_NOMEM;
    o->items = grown;
    o->cap = cap;
  }
  lm_batch* batch;
  LM_TRY(lm_arrow_build(&s->out_schema, chunk->cols, chunk->nrows, &batch));
  o->items[o->n++] = (lm_part_item){sp->cur_msg, batch};
  return LAMINAR_OK;
}

laminar_code lm_stream_def_attach_rt(lm_stream_def* s) {
  /* The planner chose the partitions and their keys (plan/planner.c). */
  const lm_phys_plan* ph = &s->phys;
  s->nparts = 1;
  if (ph->nparts <= 1) {
    lm_stream_def_attach(s);
    return LAMINAR_OK;
  }
  /* Over a union: every branch routes its rows by the source columns it
   * puts at the keys' places, whose values (and so hashes) are the keys'. */
  int32_t nk = ph->npart_keys;
  int32_t nb = lm_plan_branched(&s->plan) ? s->plan.nbranches : 0;
  int32_t n = ph->nparts;
  int32_t* keys = lm_calloc((size_t)nk, sizeof *keys);
  int32_t* in_keys = nb > 0 ? lm_calloc((size_t)(nb * nk), sizeof *in_keys) : NULL;
  lm_stream_part* parts = lm_calloc((size_t)n, sizeof *parts);
  laminar_code rc = keys != NULL && parts != NULL && (nb == 0 || in_keys != NULL)
                        ? LAMINAR_OK
                        : LAMINAR_ERR_NOMEM;
  for (int32_t p = 1; p < n && rc == LAMINAR_OK; p++) {
    rc = lm_plan_build_chain(&s->plan, &parts[p].chain);
    if (rc == LAMINAR_OK) lm_op_chain_set_budget(parts[p].chain, &s->budget);
  }
  if (rc != LAMINAR_OK) {
    for (int32_t p = 1; parts != NULL && p < n; p++) lm_op_chain_destroy(parts[p].chain);
    lm_free(parts);
    lm_free(keys);
    lm_free(in_keys);
    return rc;
  }
  for (int32_t k = 0; k < nk; k++) keys[k] = ph->part_keys[k];
  for (int32_t b = 0; b < nb; b++) {
    if (s->plan.interval) { /* a join: each input by its own key columns */
      lm_plan_join_part_keys(&s->plan, b, in_keys + b * nk);
      continue;
    }
    for (int32_t k = 0; k < nk; k++)
      in_keys[b * nk + k] = lm_plan_part_source_col(&s->plan, ph, b, k);
  }
  if (nb > 0) memcpy(keys, in_keys, sizeof *keys * (size_t)nk); /* branch 0's */
  s->in_part_keys = in_keys;
  s->part_keys = keys;
  s->npart_keys = nk;
  s->parts = parts;
  s->parts[0].chain = s->chain;
  for (int32_t p = 0; p < n; p++) {
    lm_stream_part* sp = &s->parts[p];
    sp->stream = s;
    sp->index = p;
    sp->watermark_ms = INT64_MIN;
    lm_op* tail = sp->chain;
    while (tail->next != NULL) tail = tail->next;
    tail->sink = part_sink;
    tail->sink_arg = sp;
  }
  s->nparts = n;
  return LAMINAR_OK;
}

void lm_stream_def_start_at(lm_stream_def* s, int64_t watermark_ms) {
  s->watermark_ms = watermark_ms;
  if (watermark_ms == INT64_MIN) return;
  /* Empty state: emits nothing. */
  if (s->nparts <= 1) {
    lm_op_chain_watermark(s->chain, watermark_ms);
    return;
  }
  lm_stream_def_sync_inputs(s);
  for (int32_t p = 0; p < s->nparts; p++) {
    s->parts[p].watermark_ms = watermark_ms;
    lm_op_chain_watermark(s->parts[p].chain, watermark_ms);
  }
}

/* Sink of a partition's branch chain: its rows into the partition's chain,
 * their lateness judged by their own input's watermark (as branch_deliver
 * in reactor.c). */
static laminar_code part_branch_deliver(void* arg, const lm_chunk* chunk) {
  lm_stream_part* sp = arg;
  /* A join: branch b is the join's input b (as branch_deliver). */
  if (lm_op_multi_input(sp->chain))
    return lm_op_chain_input_chunk(sp->chain, sp->cur_in, chunk);
  return lm_rt_input_chunk(sp->chain, sp->in_wm[sp->cur_in], chunk);
}

laminar_code lm_stream_parts_set_inputs(lm_stream_def* s) {
  for (int32_t p = 0; p < s->nparts; p++) {
    lm_stream_part* sp = &s->parts[p];
    sp->in_chains = lm_calloc((size_t)s->nin, sizeof *sp->in_chains);
    sp->in_wm = lm_calloc((size_t)s->nin, sizeof *sp->in_wm);
    if (sp->in_chains == NULL || sp->in_wm == NULL) return LAMINAR_ERR_NOMEM;
    for (int32_t b = 0; b < s->nin; b++) {
      sp->in_wm[b] = s->in_wm[b];
      LM_TRY(lm_plan_build_branch(&s->plan, b, &sp->in_chains[b]));
      if (sp->in_chains[b] != NULL) {
        sp->in_chains[b]->sink = part_branch_deliver;
        sp->in_chains[b]->sink_arg = sp;
      }
    }
  }
  return LAMINAR_OK;
}

void lm_stream_def_sync_inputs(lm_stream_def* s) {
  for (int32_t p = 0; s->nparts > 1 && p < s->nparts; p++) {
    for (int32_t b = 0; s->parts[p].in_wm != NULL && b < s->nin; b++)
      s->parts[p].in_wm[b] = s->in_wm[b];
  }
}

void lm_stream_def_free_parts(lm_stream_def* s) {
  for (int32_t p = 0; s->parts != NULL && p < s->nparts; p++) {
    lm_stream_part* sp = &s->parts[p];
    for (int32_t b = 0; sp->in_chains != NULL && b < s->nin; b++)
      lm_op_chain_destroy(sp->in_chains[b]);
    lm_free(sp->in_chains);
    lm_free(sp->in_wm);
    if (p > 0) lm_op_chain_destroy(sp->chain); /* parts[0].chain is s->chain */
    for (int32_t k = 0; k < LM_RT_ROUNDS_INFLIGHT; k++) {
      for (int32_t i = 0; i < sp->out[k].n; i++)
        lm_batch_unref(sp->out[k].items[i].batch);
      lm_free(sp->out[k].items);
    }
  }
  lm_free(s->parts);
  lm_free(s->part_keys);
  lm_free(s->in_part_keys);
  s->parts = NULL;
  s->part_keys = NULL;
  s->in_part_keys = NULL;
}

lm_op* lm_stream_part_chain(const lm_stream_def* s, int32_t p) {
  return s->nparts > 1 ? s->parts[p].chain : s->chain;
}

int64_t lm_stream_part_late_rows(const lm_op* chain) {
  return lm_op_window_late_rows(chain) + lm_op_join_late_rows(chain);
}

int64_t lm_stream_late_rows(const lm_stream_def* s) {
  if (s->nparts <= 1) return lm_stream_part_late_rows(s->chain);
  int64_t n = 0;
  for (int32_t p = 0; p < s->nparts; p++)
    n += lm_stream_part_late_rows(s->parts[p].chain);
  return n;
}

int64_t lm_stream_state_rows(const lm_stream_def* s) {
  if (s->nparts <= 1) return lm_op_window_state_rows(s->chain);
  int64_t n = 0;
  for (int32_t p = 0; p < s->nparts; p++) n += lm_op_window_state_rows(s->parts[p].chain);
  return n;
}

void lm_stream_rows(const lm_stream_def* s, int64_t* rows_in, int64_t* rows_out) {
  *rows_in = 0;
  *rows_out = 0;
  for (int32_t p = 0; p < (s->nparts > 1 ? s->nparts : 1); p++) {
    const lm_op* head = lm_stream_part_chain(s, p);
    const lm_op* tail = head;
    while (tail->next != NULL) tail = tail->next;
    *rows_in += head->rows_in;
    *rows_out += tail->rows_out;
  }
}

laminar_code lm_stream_state_bytes(const lm_stream_def* s, int64_t* out) {
  *out = 0;
  for (int32_t p = 0; p < (s->nparts > 1 ? s->nparts : 1); p++) {
    lm_state_writer w;
    lm_state_writer_init(&w);
    laminar_code rc = lm_op_chain_snapshot(lm_stream_part_chain(s, p), &w);
    if (rc == LAMINAR_OK) rc = lm_state_writer_status(&w);
    *out += (int64_t)w.len;
    lm_state_writer_free(&w);
    LM_TRY(rc);
  }
  return LAMINAR_OK;
}

bool lm_rt_source_partitioned(const lm_source_def* src) {
  for (int32_t i = 0; i < src->nreaders; i++) {
    if (src->readers[i]->nparts > 1) return true;
  }
  return false;
}

/* ---- one reactor's share of a round ----------------------------------------- */

static bool same_keys(const lm_stream_def* a, const lm_stream_def* b) {
  return a != NULL && a->npart_keys == b->npart_keys &&
         memcmp(a->part_keys, b->part_keys, sizeof(int32_t) * (size_t)a->npart_keys) == 0;
}

/* Hash source columns cols[0..n) (a keyed stream's GROUP BY columns) over
 * every row of `batch`. */
static laminar_code hash_keys(const int32_t* cols, int32_t n, const lm_batch* batch,
                              uint64_t* h) {
  lm_vec keys[16] = {0};
  lm_vec* kv = n <= 16 ? keys : lm_malloc(sizeof *kv * (size_t)n);
  if (kv == NULL) return LAMINAR_ERR_NOMEM;
  for (int32_t k = 0; k < n; k++) kv[k] = batch->cols[cols[k]];
  lm_op_hash_keys(kv, n, NULL, batch->nrows, h);
  if (kv != keys) lm_free(kv);
  return LAMINAR_OK;
}

/* Claim message j of the round for hashing (it has rows, nobody did). */
static bool hash_claim(lm_round* rd, int32_t j) {
  const lm_batch* b = rd->msgs[j]->batch;
  int unclaimed = 0;
  return b != NULL && b->nrows > 0 &&
         atomic_load_explicit(&rd->hstate[j], memory_order_relaxed) == 0 &&
         atomic_compare_exchange_strong_explicit(
             &rd->hstate[j], &unclaimed, 1, memory_order_relaxed, memory_order_relaxed);
}

/* Sort rows 0..n-1 by the partition of their key hash (h, by row) into
 * rows[0..n), ascending within a partition: partition p's are
 * rows[off[p] .. off[p + 1]). Done once per message by its hasher, so no
 * reactor scans the others' rows to find its own. tmp: room for n rows. */
static void bucket_rows(const uint64_t* h, int64_t n, int32_t nparts, uint32_t* rows,
                        uint32_t* tmp, int64_t* off) {
  if (nparts == 2) {
    /* One branch-free pass: partition 0's rows in place (row k goes to
     * k - b, b counting 1's rows so far), 1's aside; four rows a step. */
    int64_t b = 0, k = 0;
    for (; k + 4 <= n; k += 4) {
      for (int64_t u = 0; u < 4; u++) {
        rows[k + u - b] = (uint32_t)(k + u);
        tmp[b] = (uint32_t)(k + u);
        b += lm_op_part_of(h[k + u], 2);
      }
    }
    for (; k < n; k++) {
      rows[k - b] = (uint32_t)k;
      tmp[b] = (uint32_t)k;
      b += lm_op_part_of(h[k], 2);
    }
    int64_t a = n - b;
    memcpy(rows + a, tmp, sizeof *rows * (size_t)b);
    off[0] = 0;
    off[1] = a;
    off[2] = n;
    return;
  }
  int64_t cur[LM_RT_MAX_CORES] = {0};
  for (int64_t k = 0; k < n; k++) cur[lm_op_part_of(h[k], nparts)]++;
  off[0] = 0;
  for (int32_t p = 0; p < nparts; p++) {
    off[p + 1] = off[p] + cur[p];
    cur[p] = off[p];
  }
  for (int64_t k = 0; k < n; k++) rows[cur[lm_op_part_of(h[k], nparts)]++] = (uint32_t)k;
}

/* The computed aggregate arguments of hkeys over message j's batch, by row,
 * into rd->args (in reactor r's context for round `seq`); an argument that
 * is a plain column, or that fails to evaluate (out of memory), is left to
 * the operators (data NULL). */
static void eval_shared_args(lm_round* rd, int32_t j, lm_reactor* r, uint64_t seq) {
  lm_vec* out = rd->args + (int64_t)j * rd->nargs;
  memset(out, 0, sizeof *out * (size_t)rd->nargs);
  int32_t slot = (int32_t)(seq % LM_RT_ROUNDS_INFLIGHT);
  if (r->arg_ctx[slot] == NULL && lm_eval_ctx_create(&r->arg_ctx[slot]) != LAMINAR_OK) {
    return;
  }
  if (r->arg_seq[slot] != seq) { /* its earlier round is merged: its values are free */
    lm_eval_ctx_reset(r->arg_ctx[slot]);
    r->arg_seq[slot] = seq;
  }
  const lm_window_spec* w = &rd->hkeys->plan.window;
  const lm_batch* batch = rd->msgs[j]->batch;
  for (int32_t a = 0; a < rd->nargs; a++) {
    const lm_expr* e = w->aggs[a].arg;
    if (e == NULL || e->kind == LM_EXPR_COLUMN) continue;
    if (lm_expr_eval(r->arg_ctx[slot], e, batch->cols, NULL, batch->nrows, &out[a]) !=
        LAMINAR_OK) {
      out[a] = (lm_vec){0};
    }
  }
}

/* Hash claimed message j of round `seq` into the round's array, sort its
 * rows by partition, evaluate the shared arguments, and publish it all (r:
 * the hasher). On failure it stays claimed: the others route it for
 * themselves. */
static void hash_shared(lm_round* rd, int32_t j, lm_reactor* r, uint64_t seq) {
  const lm_batch* batch = rd->msgs[j]->batch;
  uint64_t* h = rd->hashes + rd->hoff[j];
  lm_gather_buf* g = &r->scratch;
  if (gather_rows(g, batch->nrows) == LAMINAR_OK &&
      hash_keys(rd->hkeys->part_keys, rd->hkeys->npart_keys, batch, h) == LAMINAR_OK) {
    int32_t n = rd->hkeys->nparts;
    bucket_rows(h, batch->nrows, n, rd->rows + rd->hoff[j], g->sel,
                rd->poff + (int64_t)j * (n + 1));
    if (rd->nargs > 0) eval_shared_args(rd, j, r, seq);
    atomic_store_explicit(&rd->hstate[j], 2, memory_order_release);
  }
}

/* Message j of round rd, whose shared hashes another reactor computes. */
typedef struct hash_wait {
  lm_round* rd;
  int32_t j;
} hash_wait;

static bool hashes_ready(void* arg) {
  const hash_wait* w = arg;
  return atomic_load_explicit(&w->rd->hstate[w->j], memory_order_acquire) == 2;
}

/* Whether the round's shared hashes and partition rows of message j serve
 * stream s (it groups like them) and are ready (acquire), routing j here if
 * no reactor claimed it yet. A reactor that finds j being hashed by another
 * hashes a later message meanwhile, which it needs too; if j is still not
 * ready then, its hasher is at work (it started first) or preempted: wait at
 * most about as long as hashing j takes, then route j for itself (false). */
static bool shared_route(lm_round* rd, int32_t j, const lm_stream_def* s, lm_reactor* r,
                         uint64_t seq) {
  if (rd->hkeys == NULL || !same_keys(rd->hkeys, s)) return false;
  if (atomic_load_explicit(&rd->hstate[j], memory_order_acquire) == 2) return true;
  if (hash_claim(rd, j)) {
    hash_shared(rd, j, r, seq);
  } else {
    for (int32_t k = j + 1; k < rd->n; k++) {
      if (hash_claim(rd, k)) {
        hash_shared(rd, k, r, seq);
        break;
      }
    }
  }
  hash_wait w = {rd, j};
  int64_t budget_ns = rd->msgs[j]->batch->nrows * LM_HASH_WAIT_NS_PER_ROW;
  return poll_briefly(hashes_ready, &w, budget_ns);
}

/* Reactor r's share of message j of round `seq` for stream s: *out is the
 * whole batch with the rows of r's partition as its selection (none when
 * every row is r's), *out_h the key hashes by row, *out_args the shared
 * aggregate arguments when they are s's (else NULL). No copy of the rows:
 * the chain's window operator reads them where they are (lm_chunk.sel). From
 * the round's shared routing when it serves s, else hashed and selected here
 * (r's scratch). keys: the source columns to route by (a branch of a union;
 * never shared), NULL for s's part_keys. */
static laminar_code route_msg(lm_rt* rt, lm_round* rd, int32_t j, uint64_t seq,
                              const lm_stream_def* s, const int32_t* keys, lm_reactor* r,
                              const uint64_t** out_h, const lm_vec** out_args,
                              lm_chunk* out) {
  const lm_batch* batch = rd->msgs[j]->batch;
  int64_t n = batch->nrows;
  int32_t p = r->index;
  const uint32_t* rows;
  int64_t m;
  *out_args = NULL;
  if (keys == NULL && shared_route(rd, j, s, r, seq)) {
    const int64_t* off = rd->poff + (int64_t)j * (rt->ncores + 1);
    *out_h = rd->hashes + rd->hoff[j];
    if (s == rd->hkeys && rd->nargs > 0) *out_args = rd->args + (int64_t)j * rd->nargs;
    rows = rd->rows + rd->hoff[j] + off[p];
    m = off[p + 1] - off[p];
  } else {
    lm_gather_buf* g = &r->scratch;
    LM_TRY(gather_rows(g, n));
    LM_TRY(
        hash_keys(keys != NULL ? keys : s->part_keys, s->npart_keys, batch, g->hashes));
    const uint64_t* h = g->hashes;
    uint32_t* sel = g->sel;
    m = 0;
    for (int64_t k = 0; k < n; k++) { /* branch-free: write always, keep if ours */
      sel[m] = (uint32_t)k;
      m += lm_op_part_of(h[k], rt->ncores) == p;
    }
    *out_h = h;
    rows = sel;
  }
  *out = (lm_chunk){m, batch->ncols, batch->cols, m < n ? rows : NULL};
  return LAMINAR_OK;
}

/* Raise the watermarks in_wm[b] of keyed union s's inputs that are `from`
 * to wm; the least over its active inputs (an idle one holds nothing back,
 * as in reactor.c; all idle: INT64_MIN, no advance). s->in_idle is written
 * by reactor 0 with no round in flight (an idleness change drains first). */
static int64_t inputs_advance(const lm_stream_def* s, int64_t* in_wm, const void* from,
                              int64_t wm) {
  int64_t least = INT64_MAX;
  bool active = false;
  for (int32_t b = 0; b < s->nin; b++) {
    if (s->in_defs[b] == from && wm > in_wm[b]) in_wm[b] = wm;
    if (s->in_idle != NULL && s->in_idle[b]) continue;
    active = true;
    if (in_wm[b] < least) least = in_wm[b];
  }
  return active ? least : INT64_MIN;
}

/* Reactor r's share of message j of round `seq` for keyed stream s over a
 * union: for each branch reading the round's source, the rows of r's
 * partition (routed by that branch's key columns) through the partition's
 * branch chain into its chain, judged late by that input's watermark. The
 * rows taken. */
static int64_t run_part_union(lm_rt* rt, lm_round* rd, int32_t j, uint64_t seq,
                              lm_stream_def* s, lm_reactor* r) {
  lm_stream_part* sp = &s->parts[r->index];
  lm_part_out* o = &sp->out[(int32_t)(seq % LM_RT_ROUNDS_INFLIGHT)];
  int64_t rows = 0;
  for (int32_t b = 0; b < s->nin && o->rc == LAMINAR_OK; b++) {
    if (s->in_defs[b] != rd->src) continue;
    const uint64_t* h;
    const lm_vec* args;
    lm_chunk sub;
    o->rc = route_msg(rt, rd, j, seq, s, s->in_part_keys + (int64_t)b * s->npart_keys, r,
                      &h, &args, &sub);
    if (o->rc != LAMINAR_OK || sub.nrows == 0) continue;
    rows += sub.nrows;
    sp->cur_in = b;
    if (lm_op_multi_input(sp->chain) && !sp->chain->vt->takes_sel) {
      /* A join that takes no selection (ASOF): input b, dense. */
      lm_chunk dense;
      o->rc = densify(&r->scratch, &sub, &dense);
      if (o->rc == LAMINAR_OK) o->rc = part_branch_deliver(sp, &dense);
      continue;
    }
    /* The branch's projection moves rows: its output is not hashed by row. */
    o->rc = sp->in_chains[b] != NULL ? lm_op_chain_chunk(sp->in_chains[b], &sub)
                                     : part_branch_deliver(sp, &sub);
  }
  return rows;
}

/* Partition sp of join s (ASOF or interval) takes watermark wm of source
 * `from` on each of its inputs reading it (each input's own, as reactor.c's
 * join does); sp->watermark_ms becomes what the join forwards downstream
 * (lm_op_join_out_watermark: held back by the rows it still holds). */
static laminar_code part_join_watermark(lm_stream_def* s, lm_stream_part* sp,
                                        const void* from, int64_t wm) {
  for (int32_t b = 0; b < s->nin; b++) {
    if (s->in_defs[b] == from && wm > sp->in_wm[b]) {
      sp->in_wm[b] = wm;
      LM_TRY(lm_op_chain_input_watermark(sp->chain, b, wm));
    }
  }
  int64_t out = lm_op_join_out_watermark(sp->chain);
  if (out > sp->watermark_ms) sp->watermark_ms = out;
  return LAMINAR_OK;
}

/* Reactor r's partition of round `seq` (its slot). */
static void run_part(lm_rt* rt, lm_reactor* r, uint64_t seq) {
  int32_t slot = (int32_t)(seq % LM_RT_ROUNDS_INFLIGHT);
  lm_round* rd = &rt->rounds[slot];
  if (rt->round_hook != NULL)
    rt->round_hook(rt->round_hook_arg, r->index, rd->barrier != NULL);
  if (rd->barrier != NULL) { /* this reactor's partitions are aligned here */
    lm_rt_barrier_step(rd->barrier, LM_BARRIER_PART, r->index);
    return;
  }
  const lm_source_def* src = rd->src;
  int32_t p = r->index;
  int64_t rows = 0;
  for (int32_t i = 0; i < src->nreaders; i++) {
    lm_stream_def* s = src->readers[i];
    if (s->nparts > 1) s->parts[p].cur_slot = slot;
  }
  for (int32_t j = 0; j < rd->n; j++) {
    const lm_batch* batch = rd->msgs[j]->batch;
    if (batch != NULL && batch->nrows > 0) {
      const lm_stream_def* prev = NULL;
      const uint64_t* h = NULL;
      const lm_vec* args = NULL;
      lm_chunk sub = {0, 0, NULL, NULL};
      laminar_code sel_rc = LAMINAR_OK;
      for (int32_t i = 0; i < src->nreaders; i++) {
        lm_stream_def* s = src->readers[i];
        if (s->nparts <= 1) continue;
        lm_stream_part* sp = &s->parts[p];
        lm_part_out* o = &sp->out[slot];
        sp->cur_msg = j;
        if (s->nin > 0) {
          rows += run_part_union(rt, rd, j, seq, s, r);
          continue;
        }
        if (!same_keys(prev, s)) { /* streams grouping alike share one routing */
          sel_rc = route_msg(rt, rd, j, seq, s, NULL, r, &h, &args, &sub);
          prev = s;
        } else {
          args = NULL; /* routed for an earlier stream: its arguments are not s's */
        }
        if (sel_rc != LAMINAR_OK) {
          if (o->rc == LAMINAR_OK) o->rc = sel_rc;
          prev = NULL;
          continue;
        }
        if (sub.nrows == 0 || o->rc != LAMINAR_OK) continue;
        rows += sub.nrows;
        lm_op_window_set_key_hashes(sp->chain, h); /* no second hash pass */
        lm_op_window_set_args(sp->chain, args);    /* nor argument evaluation */
        o->rc = lm_op_chain_chunk(sp->chain, &sub);
      }
    }
    int64_t wm = rd->wms[j];
    for (int32_t i = 0; (wm != INT64_MIN || rd->rewm) && i < src->nreaders; i++) {
      lm_stream_def* s = src->readers[i];
      if (s->nparts <= 1 || (rd->rewm && s->nin == 0)) continue;
      lm_stream_part* sp = &s->parts[p];
      lm_part_out* o = &sp->out[slot];
      sp->cur_msg = j;
      if (lm_op_multi_input(sp->chain)) {
        if (o->rc == LAMINAR_OK) o->rc = part_join_watermark(s, sp, src, wm);
        continue;
      }
      /* Over a union: the inputs from src advance, the least of all counts
       * (an idleness round: the least over the inputs now active). */
      int64_t least = s->nin > 0 ? inputs_advance(s, sp->in_wm, src, wm) : wm;
      if (least <= sp->watermark_ms || o->rc != LAMINAR_OK) continue;
      sp->watermark_ms = least;
      o->rc = lm_op_chain_watermark(sp->chain, least);
    }
    for (int32_t i = 0; i < src->nreaders; i++) { /* what the merge may forward */
      lm_stream_def* s = src->readers[i];
      if (s->nparts > 1 && lm_op_multi_input(s->chain))
        s->parts[p].out[slot].wm_after[j] = s->parts[p].watermark_ms;
    }
  }
  for (int32_t i = 0; i < src->nreaders; i++) {
    lm_stream_def* s = src->readers[i];
    if (s->nparts > 1)
      s->parts[p].out[slot].late_rows = lm_stream_part_late_rows(s->parts[p].chain);
  }
  atomic_fetch_add_explicit(&r->rows, rows, memory_order_relaxed);
  atomic_fetch_add_explicit(&r->rounds, 1, memory_order_relaxed);
}

/* ---- merge (reactor 0) ------------------------------------------------------- */

/* Publish batches b[0..k) of stream s as one batch (concatenated if k > 1). */
static laminar_code publish_as_one(lm_rt* rt, lm_stream_def* s, lm_batch* const* b,
                                   int32_t k) {
  if (k == 0) return LAMINAR_OK;
  if (k == 1) return lm_rt_stream_publish(s, b[0]);
  lm_chunk all;
  lm_batch* merged = NULL;
  laminar_code rc = concat(&rt->merge_buf, b, k, s->out_schema.ncols, &all);
  if (rc == LAMINAR_OK) rc = lm_arrow_build(&s->out_schema, all.cols, all.nrows, &merged);
  if (rc == LAMINAR_OK) rc = lm_rt_stream_publish(s, merged);
  lm_batch_unref(merged);
  return rc;
}

/* Deliver the partition outputs of stream s for round message j: one batch per
 * partition that emitted (`split`: no copy), or all of them as one batch. */
static laminar_code merge_msg(lm_rt* rt, lm_stream_def* s, int32_t slot, int32_t j,
                              bool split) {
  lm_batch* found[2 * LM_RT_MAX_CORES];
  lm_batch** b = found;
  int32_t cap = 2 * LM_RT_MAX_CORES, k = 0;
  laminar_code rc = LAMINAR_OK;
  for (int32_t p = 0; p < s->nparts && rc == LAMINAR_OK; p++) {
    lm_part_out* o = &s->parts[p].out[slot];
    while (o->merged < o->n && o->items[o->merged].msg == j) {
      if (k == cap) { /* more than two outputs per partition: rare, grow */
        lm_batch** grown = lm_malloc(sizeof *grown * (size_t)cap * 2);
        if (grown == NULL) {
          rc = LAMINAR_ERR_NOMEM;
          break;
        }
        memcpy(grown, b, sizeof *b * (size_t)k);
        if (b != found) lm_free(b);
        b = grown;
        cap *= 2;
      }
      b[k++] = o->items[o->merged++].batch;
    }
    if (split && rc == LAMINAR_OK) {
      rc = publish_as_one(rt, s, b, k);
      k = 0;
    }
  }
  if (rc == LAMINAR_OK) rc = publish_as_one(rt, s, b, k);
  if (b != found) lm_free(b);
  return rc;
}

/* After merging round slot `slot` of src: drop the slot's output batches
 * (delivered or not, after an error), reset it, collect the partitions'
 * errors and late rows. */
static laminar_code end_round(lm_source_def* src, int32_t slot) {
  laminar_code rc = LAMINAR_OK;
  for (int32_t i = 0; i < src->nreaders; i++) {
    lm_stream_def* s = src->readers[i];
    if (s->nparts <= 1) continue;
    int64_t late = 0;
    for (int32_t p = 0; p < s->nparts; p++) {
      lm_part_out* o = &s->parts[p].out[slot];
      /* Publishing borrowed the partition's reference: drop every item's. */
      for (int32_t k = 0; k < o->n; k++) lm_batch_unref(o->items[k].batch);
      o->n = 0;
      o->merged = 0;
      if (rc == LAMINAR_OK) rc = o->rc;
      o->rc = LAMINAR_OK;
      late += o->late_rows;
    }
    atomic_store_explicit(&s->late_rows, late, memory_order_relaxed);
  }
  return rc;
}

/* Round `seq`, which every reactor finished: deliver it message by message in
 * the one-core order, free its messages, release its slot. */
static laminar_code merge_round(lm_rt* rt, uint64_t seq) {
  int32_t slot = (int32_t)(seq % LM_RT_ROUNDS_INFLIGHT);
  lm_round* rd = &rt->rounds[slot];
  if (rd->barrier != NULL) { /* every round before it is merged: MERGED, done */
    lm_barrier* b = rd->barrier;
    lm_rt_barrier_step(b, LM_BARRIER_MERGED, 0);
    rd->barrier = NULL;
    rt->barriers_open--;
    rt->merged = seq;
    lm_rt_barrier_done(rt, b);
    return LAMINAR_OK;
  }
  lm_source_def* src = rd->src;
  laminar_code rc = LAMINAR_OK;
  for (int32_t j = 0; j < rd->n; j++) {
    lm_msg* msg = rd->msgs[j];
    if (rc == LAMINAR_OK) {
      lm_chunk chunk = {0, 0, NULL, NULL};
      if (msg->batch != NULL) {
        chunk = (lm_chunk){msg->batch->nrows, msg->batch->ncols, msg->batch->cols, NULL};
      }
      for (int32_t i = 0; i < src->nreaders && rc == LAMINAR_OK; i++) {
        lm_stream_def* s = src->readers[i];
        if (s->nparts > 1) {
          rc = merge_msg(rt, s, slot, j, rd->split);
        } else if (msg->batch != NULL) {
          rc = lm_rt_stream_chunk(s, src, &chunk);
        }
      }
      int64_t wm = rd->wms[j];
      for (int32_t i = 0;
           (wm != INT64_MIN || rd->rewm) && i < src->nreaders && rc == LAMINAR_OK; i++) {
        lm_stream_def* s = src->readers[i];
        if (rd->rewm && (s->nparts <= 1 || s->nin == 0)) continue; /* done already */
        if (s->nparts <= 1) {
          rc = lm_rt_stream_watermark(s, src, wm);
          continue;
        }
        /* Over a union: the least of its inputs', as each partition saw; a
         * join: the least of what its partitions forwarded. */
        int64_t least = s->nin > 0 ? inputs_advance(s, s->in_wm, src, wm) : wm;
        if (lm_op_multi_input(s->chain)) { /* a join: what every partition promised */
          least = INT64_MAX;
          for (int32_t p = 0; p < s->nparts; p++) {
            int64_t pw = s->parts[p].out[slot].wm_after[j];
            if (pw < least) least = pw;
          }
        }
        if (least > s->watermark_ms) {
          /* Every partition closed its windows for it above: forward it. */
          s->watermark_ms = least;
          for (int32_t d = 0; d < s->nreaders && rc == LAMINAR_OK; d++) {
            rc = lm_rt_stream_watermark(s->readers[d], s, least);
          }
        }
      }
    }
    lm_msg_free(msg);
    rd->msgs[j] = NULL;
  }
  laminar_code prc = end_round(src, slot);
  rt->inflight_msgs -= rd->n;
  rd->n = 0;
  rd->rewm = false;
  rt->merged = seq;
  lm_rt_notify_subscribers(rt->graph);
  return rc != LAMINAR_OK ? rc : prc;
}

static bool workers_threaded(const lm_rt* rt) {
  return rt->ncores > 1 && rt->reactors[1].running;
}

/* Every worker finished round merged + 1. */
static bool oldest_done(void* arg) {
  lm_rt* rt = arg;
  uint64_t seq = rt->merged + 1;
  for (int32_t w = 1; w < rt->ncores; w++) {
    if (atomic_load_explicit(&rt->reactors[w].done, memory_order_acquire) < seq)
      return false;
  }
  return true;
}

/* Merge the rounds in flight that every reactor finished; with `wait`, wait
 * for the oldest first (and merge at least it). */
static laminar_code merge_ready(lm_rt* rt, bool wait) {
  laminar_code rc = LAMINAR_OK;
  uint64_t posted = atomic_load_explicit(&rt->round_seq, memory_order_relaxed);
  if (wait && rt->merged < posted && !poll_briefly(oldest_done, rt, LM_JOIN_BUDGET_NS)) {
    while (!lm_waiter_wait(&rt->joined, 10000000, oldest_done, rt)) {
    }
  }
  while (rt->merged < posted && oldest_done(rt)) {
    laminar_code mrc = merge_round(rt, rt->merged + 1);
    if (rc == LAMINAR_OK) rc = mrc;
  }
  return rc;
}

laminar_code lm_rt_drain(lm_rt* rt) {
  laminar_code rc = LAMINAR_OK;
  while (rt->merged < atomic_load_explicit(&rt->round_seq, memory_order_relaxed)) {
    laminar_code mrc = merge_ready(rt, true);
    if (rc == LAMINAR_OK) rc = mrc;
  }
  lm_rt_notify_subscribers(rt->graph);
  return rc;
}

/* Room and reset for the shared key hashes and partition rows of round rd
 * (before its post). */
static void share_hashes(lm_round* rd, int32_t ncores) {
  rd->hkeys = NULL;
  if (rd->barrier != NULL) return;
  const lm_stream_def* first = NULL;
  for (int32_t i = 0; i < rd->src->nreaders && first == NULL; i++) {
    const lm_stream_def* s = rd->src->readers[i];
    if (s->nparts > 1 && s->nin == 0) first = s; /* a union's branches route apart */
  }
  int64_t total = 0;
  for (int32_t j = 0; j < rd->n; j++) {
    rd->hoff[j] = total;
    if (rd->msgs[j]->batch != NULL) total += rd->msgs[j]->batch->nrows;
    atomic_store_explicit(&rd->hstate[j], 0, memory_order_relaxed);
  }
  if (first == NULL) return;
  /* On failure each reactor routes for itself. */
  if (rd->poff == NULL) {
    rd->poff = lm_malloc(sizeof *rd->poff * LM_RT_ROUND_MSGS * (size_t)(ncores + 1));
    if (rd->poff == NULL) return;
  }
  if (total > rd->hcap) {
    uint64_t* h = lm_realloc(rd->hashes, sizeof *h * (size_t)total);
    if (h == NULL) return;
    rd->hashes = h;
    uint32_t* rows = lm_realloc(rd->rows, sizeof *rows * (size_t)total);
    if (rows == NULL) return;
    rd->rows = rows;
    rd->hcap = total;
  }
  rd->hkeys = first;
  /* Its computed aggregate arguments are shared too (else: none to share, or
   * no room, and each partition evaluates them). */
  const lm_window_spec* w = &first->plan.window;
  rd->nargs = 0;
  bool computed = false;
  for (int32_t a = 0; a < w->naggs; a++) {
    computed |= w->aggs[a].arg != NULL && w->aggs[a].arg->kind != LM_EXPR_COLUMN;
  }
  if (!computed) return;
  if (w->naggs > rd->acap) {
    lm_vec* args =
        lm_realloc(rd->args, sizeof *args * LM_RT_ROUND_MSGS * (size_t)w->naggs);
    if (args == NULL) return;
    rd->args = args;
    rd->acap = w->naggs;
  }
  rd->nargs = w->naggs;
}

/* Publish round `seq`, filled in its slot (release: its contents), and run
 * partition 0 of it here; inline (not `threaded`), every partition. */
static void post_round(lm_rt* rt, uint64_t seq, bool threaded) {
  share_hashes(&rt->rounds[seq % LM_RT_ROUNDS_INFLIGHT], rt->ncores);
  atomic_store_explicit(&rt->round_seq, seq, memory_order_release);
  if (threaded) {
    for (int32_t w = 1; w < rt->ncores; w++) lm_waiter_notify(&rt->reactors[w].wake);
    run_part(rt, &rt->reactors[0], seq);
  } else {
    for (int32_t p = 0; p < rt->ncores; p++) run_part(rt, &rt->reactors[p], seq);
    for (int32_t w = 1; w < rt->ncores; w++) {
      atomic_store_explicit(&rt->reactors[w].done, seq, memory_order_relaxed);
    }
  }
}

laminar_code lm_rt_merge_finished(lm_rt* rt) { return merge_ready(rt, false); }

laminar_code lm_rt_post_barrier(lm_rt* rt, lm_barrier* b) {
  laminar_code rc = LAMINAR_OK;
  uint64_t posted;
  while ((posted = atomic_load_explicit(&rt->round_seq, memory_order_relaxed)) -
             rt->merged >=
         LM_RT_ROUNDS_INFLIGHT) { /* every slot in flight: the oldest first */
    laminar_code mrc = merge_ready(rt, true);
    if (rc == LAMINAR_OK) rc = mrc;
  }
  uint64_t seq = posted + 1;
  lm_round* rd = &rt->rounds[seq % LM_RT_ROUNDS_INFLIGHT];
  rd->barrier = b;
  rd->src = NULL;
  rd->n = 0;
  rd->split = false;
  rt->barriers_open++;
  post_round(rt, seq, workers_threaded(rt));
  return rc;
}

/* A round of one message (its watermark wm; rewm: an idleness round), run
 * through every partition here and merged. */
static laminar_code run_one(lm_rt* rt, lm_source_def* src, lm_msg* msg, int64_t wm,
                            bool rewm) {
  uint64_t seq = atomic_load_explicit(&rt->round_seq, memory_order_relaxed) + 1;
  lm_round* rd = &rt->rounds[seq % LM_RT_ROUNDS_INFLIGHT];
  /* Nothing in flight and nobody else on the graph: one message at most N
   * batches per stream, each published as built when subscribers have room. */
  uint32_t room = lm_rt_min_free(rt->graph);
  rd->src = src;
  rd->split = room > 1 && (room - 1) / (uint32_t)rt->ncores >= 1;
  rd->n = 1;
  rd->msgs[0] = msg;
  rd->wms[0] = wm;
  rd->rewm = rewm;
  rt->inflight_msgs += 1;
  post_round(rt, seq, false);
  return lm_rt_drain(rt);
}

laminar_code lm_rt_run_msg(lm_rt* rt, lm_source_def* src, lm_msg* msg) {
  return run_one(rt, src, msg, lm_rt_msg_advance(src, msg), false);
}

laminar_code lm_rt_run_idleness(lm_rt* rt, lm_source_def* src) {
  lm_msg* msg = lm_calloc(1, sizeof *msg);
  if (msg == NULL) return LAMINAR_ERR_NOMEM;
  msg->watermark_ms = INT64_MIN;
  /* No input advances: only the idle flags changed. */
  return run_one(rt, src, msg, INT64_MIN, true);
}

laminar_code lm_rt_run_round(lm_rt* rt, lm_source_def* src, int64_t* out_taken,
                             bool* out_blocked) {
  *out_taken = 0;
  *out_blocked = false;
  laminar_code rc = merge_ready(rt, false);
  bool threaded = workers_threaded(rt);
  while (rc == LAMINAR_OK && lm_mpsc_size(src->queue) > 0) {
    /* A checkpoint asks for a barrier: reactor 0 takes it at its loop top,
     * after this round rather than after a whole run of rounds. */
    if (atomic_load_explicit(&rt->barrier_req, memory_order_relaxed) != NULL) break;
    uint64_t posted = atomic_load_explicit(&rt->round_seq, memory_order_relaxed);
    if (posted - rt->merged >= LM_RT_ROUNDS_INFLIGHT) { /* every slot in flight */
      rc = merge_ready(rt, true);
      continue;
    }
    /* Each partition's output for a message is published as its own batch
     * when every blocking subscriber has room for N per message (no copy),
     * else the partitions' outputs are concatenated into one (the one-core
     * headroom). Messages of rounds in flight hold their share already. */
    uint32_t room = lm_rt_min_free(rt->graph);
    uint32_t n = (uint32_t)rt->ncores, held = (uint32_t)rt->inflight_msgs;
    bool split = room > 1 && (room - 1) / n >= held + 1;
    uint32_t fit = split ? (room - 1) / n : room > 1 ? room - 1 : 0;
    if (!split &&
        held > 0) { /* concatenated rounds never mix with split ones in flight */
      rc = merge_ready(rt, true);
      continue;
    }
    uint32_t budget = fit > held ? fit - held : 0;
    if (budget > LM_RT_ROUND_MSGS) budget = LM_RT_ROUND_MSGS;
    if (budget == 0) {
      if (rt->merged < posted) { /* in-flight rounds may free room once merged */
        rc = merge_ready(rt, true);
        continue;
      }
      *out_blocked = true;
      break;
    }
    uint64_t seq = posted + 1;
    lm_round* rd = &rt->rounds[seq % LM_RT_ROUNDS_INFLIGHT];
    rd->src = src;
    rd->split = split;
    rd->n = 0;
    int64_t rows = 0;
    while ((uint32_t)rd->n < budget && rows < LM_RT_ROUND_ROWS) {
      lm_msg* msg;
      if (!lm_source_take(src, false, &msg)) break;
      if (msg->batch != NULL) rows += msg->batch->nrows;
      rd->wms[rd->n] = lm_rt_msg_advance(src, msg);
      rd->msgs[rd->n++] = msg;
    }
    if (rd->n == 0) break;
    *out_taken += rd->n;
    rt->inflight_msgs += rd->n;
    post_round(rt, seq, threaded);
    rc = merge_ready(rt, false);
    if (*out_taken >= LM_RT_ROUND_MSGS * LM_RT_ROUNDS_INFLIGHT)
      break; /* let other sources in */
  }
  /* Nothing more to overlap with (queue emptied, blocked or an error): finish
   * what is in flight, so its results reach the subscribers now. A source
   * that had nothing queued leaves other sources' rounds be (the reactor
   * drains before it waits idle): reactor 0 does not wait for the workers
   * just because one of several sources is quiet. */
  if (rc != LAMINAR_OK || *out_blocked ||
      (*out_taken > 0 && lm_mpsc_size(src->queue) == 0)) {
    /* ... but not behind a barrier round: its merge waits for the slowest
     * reactor, this one goes on (the reactor loop merges it once finished). */
    bool behind_barrier = rc == LAMINAR_OK && !*out_blocked && rt->barriers_open > 0;
    laminar_code drc = behind_barrier ? merge_ready(rt, false) : lm_rt_drain(rt);
    if (rc == LAMINAR_OK) rc = drc;
  }
  return rc;
}

/* ---- worker reactors ------------------------------------------------------------ */

const char* lm_rt_reactor_name(int32_t index) {
  static const char* const names[LM_RT_MAX_CORES] = {
      "0",  "1",  "2",  "3",  "4",  "5",  "6",  "7",  "8",  "9",  "10", "11", "12",
      "13", "14", "15", "16", "17", "18", "19", "20", "21", "22", "23", "24", "25",
      "26", "27", "28", "29", "30", "31", "32", "33", "34", "35", "36", "37", "38",
      "39", "40", "41", "42", "43", "44", "45", "46", "47", "48", "49", "50", "51",
      "52", "53", "54", "55", "56", "57", "58", "59", "60", "61", "62", "63"};
  return index >= 0 && index < LM_RT_MAX_CORES ? names[index] : "?";
}

void lm_rt_pin_self(lm_rt* rt, lm_reactor* r) {
  atomic_store_explicit(&r->cpu, -1, memory_order_relaxed);
  if (!rt->affinity) return;
  long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
  if (ncpu < 1) return;
  int cpu = (int)(r->index % ncpu);
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  if (pthread_setaffinity_np(pthread_self(), sizeof set, &set) != 0) return;
  atomic_store_explicit(&r->cpu, cpu, memory_order_relaxed);
#ifdef LAMINAR_HAVE_HWLOC
  /* State this reactor allocates from now on comes from its CPU's NUMA node
   * (one node: nothing to bind). */
  hwloc_topology_t topo = rt->topology;
  if (topo != NULL && hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_NUMANODE) > 1) {
    hwloc_obj_t pu = hwloc_get_pu_obj_by_os_index(topo, (unsigned)cpu);
    if (pu != NULL && pu->nodeset != NULL) {
      hwloc_set_membind(topo, pu->nodeset, HWLOC_MEMBIND_BIND,
                        HWLOC_MEMBIND_THREAD | HWLOC_MEMBIND_BYNODESET);
    }
  }
#endif
}

static bool worker_ready(void* arg) {
  lm_reactor* r = arg;
  return atomic_load_explicit(&r->rt->stop_workers, memory_order_acquire) ||
         atomic_load_explicit(&r->rt->round_seq, memory_order_acquire) >
             atomic_load_explicit(&r->done, memory_order_relaxed);
}

static void* worker_main(void* arg) {
  lm_reactor* r = arg;
  lm_rt* rt = r->rt;
  lm_rt_pin_self(rt, r);
  for (;;) {
    if (!poll_briefly(worker_ready, r, LM_IDLE_BUDGET_NS)) {
      /* Idle: sleep until a round or stop (no more polling: no CPU). */
      while (!lm_waiter_wait(&r->wake, 50000000, worker_ready, r)) {
      }
    }
    uint64_t posted = atomic_load_explicit(&rt->round_seq, memory_order_acquire);
    uint64_t done = atomic_load_explicit(&r->done, memory_order_relaxed);
    if (done >= posted) {
      /* Stop only with nothing left: reactor 0 drained before stopping us. */
      if (atomic_load_explicit(&rt->stop_workers, memory_order_acquire)) break;
      continue;
    }
    /* Rounds in order; each posted round's slot stays put until all finished it. */
    int64_t t0 = lm_rt_now_ns();
    for (uint64_t seq = done + 1; seq <= posted; seq++) {
      run_part(rt, r, seq);
      atomic_store_explicit(&r->done, seq, memory_order_release);
      lm_waiter_notify(&rt->joined);
    }
    atomic_fetch_add_explicit(&r->busy_ns, lm_rt_now_ns() - t0, memory_order_relaxed);
  }
  return NULL;
}

laminar_code lm_rt_workers_start(lm_rt* rt) {
  atomic_store_explicit(&rt->stop_workers, false, memory_order_release);
  uint64_t seq = atomic_load_explicit(&rt->round_seq, memory_order_relaxed);
  for (int32_t w = 1; w < rt->ncores; w++) {
    lm_reactor* r = &rt->reactors[w];
    atomic_store_explicit(&r->done, seq, memory_order_relaxed); /* nothing in flight */
    if (pthread_create(&r->thread, NULL, worker_main, r) != 0) {
      lm_rt_workers_stop(rt);
      return LAMINAR_ERR_INTERNAL;
    }
    r->running = true;
  }
  return LAMINAR_OK;
}

void lm_rt_workers_stop(lm_rt* rt) {
  atomic_store_explicit(&rt->stop_workers, true, memory_order_release);
  for (int32_t w = 1; w < rt->ncores; w++) {
    lm_reactor* r = &rt->reactors[w];
    if (!r->running) continue;
    lm_waiter_notify(&r->wake);
    pthread_join(r->thread, NULL);
    r->running = false;
  }
}

laminar_code lm_rt_configure(lm_rt* rt, int32_t cores, bool affinity) {
  if (cores < 1 || cores > LM_RT_MAX_CORES) return LAMINAR_ERR_MISUSE;
  if (rt->started) return LAMINAR_ERR_STATE;
  lm_reactor* rs = lm_calloc((size_t)cores, sizeof *rs);
  if (rs == NULL) return LAMINAR_ERR_NOMEM;
  for (int32_t i = 0; i < cores; i++) {
    rs[i].rt = rt;
    rs[i].index = i;
    atomic_init(&rs[i].cpu, -1);
    atomic_init(&rs[i].done, 0);
    atomic_init(&rs[i].busy_ns, 0);
    atomic_init(&rs[i].rounds, 0);
    atomic_init(&rs[i].rows, 0);
    if (lm_waiter_init(&rs[i].wake) != LAMINAR_OK) {
      for (int32_t k = 0; k < i; k++) lm_waiter_destroy(&rs[k].wake);
      lm_free(rs);
      return LAMINAR_ERR_NOMEM;
    }
  }
  lm_rt_reactors_free(rt);
  rt->reactors = rs;
  rt->ncores = cores;
  rt->affinity = affinity;
#ifdef LAMINAR_HAVE_HWLOC
  if (affinity) {
    hwloc_topology_t topo;
    if (hwloc_topology_init(&topo) == 0) {
      if (hwloc_topology_load(topo) == 0) {
        rt->topology = topo;
      } else {
        hwloc_topology_destroy(topo);
      }
    }
  }
#endif
  return LAMINAR_OK;
}

void lm_rt_reactors_free(lm_rt* rt) {
  for (int32_t k = 0; k < LM_RT_ROUNDS_INFLIGHT; k++) {
    lm_free(rt->rounds[k].hashes);
    lm_free(rt->rounds[k].rows);
    lm_free(rt->rounds[k].poff);
    lm_free(rt->rounds[k].args);
    rt->rounds[k].args = NULL;
    rt->rounds[k].acap = 0;
    rt->rounds[k].nargs = 0;
    rt->rounds[k].hashes = NULL;
    rt->rounds[k].rows = NULL;
    rt->rounds[k].poff = NULL;
    rt->rounds[k].hcap = 0;
  }
  for (int32_t i = 0; i < rt->ncores; i++) {
    lm_waiter_destroy(&rt->reactors[i].wake);
    lm_gather_buf_free(&rt->reactors[i].scratch);
    for (int32_t k = 0; k < LM_RT_ROUNDS_INFLIGHT; k++) {
      lm_eval_ctx_destroy(rt->reactors[i].arg_ctx[k]);
    }
  }
  lm_free(rt->reactors);
  rt->reactors = NULL;
  lm_gather_buf_free(&rt->merge_buf);
#ifdef LAMINAR_HAVE_HWLOC
  if (rt->topology != NULL) hwloc_topology_destroy(rt->topology);
#endif
  rt->topology = NULL;
}
