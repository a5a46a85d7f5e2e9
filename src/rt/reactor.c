/*
 * reactor.c -- processing of source messages through the stream graph, the
 * reactor thread, the pause handshake and subscriber queues (see rt.h DESIGN).
 */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L  // clock_gettime
#endif
#include "rt/internal.h"

#include "sink/sink.h"
#include "state/keywm.h"
#include "store/wal.h"
#include "util/util.h"

#include <string.h>
#include <time.h>

/* ---- subscriber queues ------------------------------------------------------ */

laminar_code lm_sub_create(uint32_t capacity, lm_sub** out) {
  *out = NULL;
  lm_sub* sub = lm_calloc(1, sizeof *sub);
  if (sub == NULL) return LAMINAR_ERR_NOMEM;
  laminar_code rc = lm_ring_create(capacity, &sub->ring);
  if (rc != LAMINAR_OK) {
    lm_free(sub);
    return rc;
  }
  rc = lm_waiter_init(&sub->waiter);
  if (rc != LAMINAR_OK) {
    lm_ring_destroy(sub->ring);
    lm_free(sub);
    return rc;
  }
  atomic_init(&sub->ended, false);
  sub->drop_when_full = false;
  sub->wait = lm_wait_default();
  atomic_init(&sub->dropped_batches, 0);
  atomic_init(&sub->dropped_rows, 0);
  atomic_init(&sub->bytes, 0);
  sub->max_bytes = 0;
  sub->last_bytes = 0;
  *out = sub;
  return LAMINAR_OK;
}

void lm_sub_destroy(lm_sub* sub) {
  if (sub == NULL) return;
  void* item;
  while (lm_ring_pop(sub->ring, &item)) lm_batch_unref(item);
  lm_ring_destroy(sub->ring);
  lm_waiter_destroy(&sub->waiter);
  lm_free(sub);
}

/* ---- graph bookkeeping ------------------------------------------------------ */

laminar_code lm_graph_add_reader(lm_stream_def*** readers, int32_t* n, lm_stream_def* s) {
  lm_stream_def** grown = lm_realloc(*readers, sizeof(lm_stream_def*) * (size_t)(*n + 1));
  if (grown == NULL) return LAMINAR_ERR_NOMEM;
  grown[(*n)++] = s;
  *readers = grown;
  return LAMINAR_OK;
}

void lm_graph_remove_reader(lm_stream_def** readers, int32_t* n, const lm_stream_def* s) {
  for (int32_t i = 0; i < *n; i++) {
    if (readers[i] == s) {
      memmove(&readers[i], &readers[i + 1],
              sizeof(lm_stream_def*) * (size_t)(*n - i - 1));
      (*n)--;
      return;
    }
  }
}

void lm_source_def_unref(lm_source_def* def) {
  if (def == NULL) return;
  /* acq_rel: the last owner sees every write made by the others. */
  if (atomic_fetch_sub_explicit(&def->refs, 1, memory_order_acq_rel) != 1) return;
  if (def->queue != NULL) {
    void* item;
    while (lm_mpsc_pop(def->queue, &item)) lm_msg_free(item);
    lm_mpsc_destroy(def->queue);
    pthread_mutex_destroy(&def->log_mu);
    lm_waiter_destroy(&def->room);
  }
  lm_wal_close(def->wal, NULL); /* flushes what is appended */
  lm_schema_free(&def->schema);
  lm_free(def->readers);
  lm_free(def->align_group);
  if (def->keys != NULL) lm_keywm_free(def->keys);
  lm_free(def->keys);
  lm_free(def->table);
  lm_free(def->name);
  lm_free(def->sql);
  lm_free(def);
}

void lm_stream_def_free(lm_stream_def* def) {
  if (def == NULL) return;
  lm_stream_def_free_parts(def);
  for (int32_t b = 0; def->in_chains != NULL && b < def->nin; b++) {
    lm_op_chain_destroy(def->in_chains[b]);
  }
  lm_free(def->in_chains);
  lm_free(def->in_defs);
  lm_free(def->in_wm);
  lm_free(def->in_idle);
  lm_free(def->in_start);
  lm_op_chain_destroy(def->chain);
  lm_plan_free(&def->plan);
  lm_schema_free(&def->out_schema);
  lm_free(def->subs);
  lm_free(def->readers);
  lm_free(def->sinks);
  lm_free(def->name);
  lm_free(def->sql);
  lm_free(def);
}

/* ---- processing (reactor thread or run_until_idle caller) -------------------- */

#define stream_chunk lm_rt_stream_chunk
#define stream_watermark lm_rt_stream_watermark

/* Whether `add` more bytes on top of `queued` pass the bound `max`. An empty
 * queue takes any one batch. */
static bool over_bytes(int64_t queued, int64_t add, int64_t max) {
  return queued > 0 && add > max - queued;
}

/* Hand a built batch to the subscribers of s. */
static laminar_code stream_share(lm_stream_def* s, lm_batch* batch) {
  for (int32_t i = 0; i < s->nsubs; i++) {
    lm_sub* sub = s->subs[i];
    sub->last_bytes = batch->bytes;
    /* Over the byte bound (and not empty): the drop policy drops it; the
     * block policy lets it in -- the reactor took this message only after
     * lm_rt_min_free found room for a batch like the last one. */
    bool over = sub->max_bytes > 0 && sub->drop_when_full &&
                over_bytes(atomic_load_explicit(&sub->bytes, memory_order_relaxed),
                           batch->bytes, sub->max_bytes);
    lm_batch_ref(batch);
    if (over || !lm_ring_push(sub->ring, batch)) {
      lm_batch_unref(batch);
      if (sub->drop_when_full) {
        /* The drop policy: this subscriber misses the batch, counted. */
        atomic_fetch_add_explicit(&sub->dropped_batches, 1, memory_order_relaxed);
        atomic_fetch_add_explicit(&sub->dropped_rows, batch->nrows, memory_order_relaxed);
        continue;
      }
      /* A blocking subscriber's headroom was checked before the message was
       * taken (rt.h): a full ring here is a broken invariant. */
      return LAMINAR_ERR_INTERNAL;
    }
    atomic_fetch_add_explicit(&sub->bytes, batch->bytes, memory_order_relaxed);
    sub->notify_pending = true; /* woken at the end of the round */
  }
  return LAMINAR_OK;
}

/* Feed the streams reading s (cascades) with a built batch. First of all
 * that a batch goes to: a reader's failure (its own chain as before the
 * batch) fails s's batch with nothing published, and s's chain takes it
 * back (docs/ARCHITECTURE.md, "Out of memory inside stream processing"). */
static laminar_code stream_feed(lm_stream_def* s, lm_batch* batch) {
  laminar_code rc = LAMINAR_OK;
  if (s->nreaders > 0) {
    lm_chunk down = {batch->nrows, batch->ncols, batch->cols, NULL};
    for (int32_t i = 0; i < s->nreaders && rc == LAMINAR_OK; i++) {
      rc = stream_chunk(s->readers[i], s, &down);
    }
  }
  return rc;
}

/* Sink of a stream's chain: build the Arrow batch once, hand a reference to
 * each subscriber and feed downstream streams from the same buffers. */
/* Hand `batch` (borrowed) to each sink of s: a reference on a queued sink's
 * queue (its thread writes it), else written here. */
static laminar_code stream_sinks(lm_stream_def* s, lm_batch* batch) {
  for (int32_t i = 0; i < s->nsinks; i++) {
    lm_sink* k = s->sinks[i];
    LM_TRY(k->vt->write_batch != NULL ? k->vt->write_batch(k, batch)
                                      : k->vt->write(k, batch->cols, batch->nrows, NULL));
  }
  return LAMINAR_OK;
}

/* The end of a source batch that fans out (op.h, lm_op_txn) for a stream's
 * batch held back: published to sinks and subscribers at the commit, dropped
 * at the abort. */
static laminar_code publish_end(void* a, void* b, bool commit) {
  lm_stream_def* s = a;
  lm_batch* batch = b;
  laminar_code rc = LAMINAR_OK;
  if (commit) rc = stream_sinks(s, batch);
  if (commit && rc == LAMINAR_OK) rc = stream_share(s, batch);
  lm_batch_unref(batch);
  return rc;
}

static laminar_code stream_deliver(void* arg, const lm_chunk* chunk) {
  lm_stream_def* s = arg;
  if (s->nsinks == 0 && s->nsubs == 0 && s->nreaders == 0) return LAMINAR_OK;
  lm_batch* batch;
  LM_TRY(lm_arrow_build(&s->out_schema, chunk->cols, chunk->nrows, &batch));
  laminar_code rc = stream_feed(s, batch);
  lm_op_txn* txn = s->chain->txn;
  if (rc == LAMINAR_OK && txn != NULL && txn->active) {
    /* All readers or none: published once every reader took the batch. */
    if (s->nsinks == 0 && s->nsubs == 0) {
      lm_batch_unref(batch);
      return LAMINAR_OK;
    }
    rc = lm_op_txn_add(txn, publish_end, s, batch);
    if (rc != LAMINAR_OK) lm_batch_unref(batch);
    return rc;
  }
  if (rc == LAMINAR_OK) rc = stream_sinks(s, batch);
  if (rc == LAMINAR_OK) rc = stream_share(s, batch);
  lm_batch_unref(batch);
  return rc;
}

laminar_code lm_rt_stream_publish(lm_stream_def* s, lm_batch* batch) {
  LM_TRY(stream_feed(s, batch));
  LM_TRY(stream_sinks(s, batch));
  return stream_share(s, batch);
}

laminar_code lm_rt_drain_sinks(const lm_graph* g) {
  laminar_code first = LAMINAR_OK;
  for (int32_t i = 0; i < g->nstreams; i++) {
    const lm_stream_def* s = g->streams[i];
    for (int32_t j = 0; j < s->nsinks; j++) {
      lm_sink* k = s->sinks[j];
      laminar_code rc = k->vt->drain != NULL ? k->vt->drain(k) : LAMINAR_OK;
      if (first == LAMINAR_OK) first = rc;
    }
  }
  return first;
}

void lm_stream_def_attach(lm_stream_def* s) {
  lm_op* tail = s->chain;
  while (tail->next != NULL) tail = tail->next;
  tail->sink = stream_deliver;
  tail->sink_arg = s;
}

/* Sink of a branch's chain: its rows into the stream's chain, their
 * lateness judged by their own input's watermark (op.h). */
laminar_code lm_rt_input_chunk(lm_op* chain, int64_t in_wm, const lm_chunk* chunk) {
  lm_op_window_set_late_floor(chain, in_wm);
  laminar_code rc = lm_op_chain_chunk(chain, chunk);
  lm_op_window_set_late_floor(chain, INT64_MIN);
  return rc;
}

static laminar_code branch_deliver(void* arg, const lm_chunk* chunk) {
  lm_stream_def* s = arg;
  /* A join: branch b is the join's input b. */
  if (lm_op_multi_input(s->chain))
    return lm_op_chain_input_chunk(s->chain, s->cur_in, chunk);
  return lm_rt_input_chunk(s->chain, s->in_wm[s->cur_in], chunk);
}

laminar_code lm_rt_stream_chunk(lm_stream_def* s, const void* from,
                                const lm_chunk* chunk) {
  laminar_code rc = LAMINAR_OK;
  if (s->nin == 0) {
    rc = lm_op_chain_chunk(s->chain, chunk);
  } else {
    for (int32_t b = 0; b < s->nin && rc == LAMINAR_OK; b++) {
      if (s->in_defs[b] != from) continue;
      s->cur_in = b;
      rc = s->in_chains[b] != NULL ? lm_op_chain_chunk(s->in_chains[b], chunk)
                                   : branch_deliver(s, chunk);
    }
  }
  atomic_store_explicit(&s->late_rows, lm_stream_part_late_rows(s->chain),
                        memory_order_relaxed);
  return rc;
}

laminar_code lm_stream_take_late(void* arg, const lm_chunk* chunk) {
  return stream_chunk(arg, NULL, chunk);
}

laminar_code lm_rt_stream_watermark(lm_stream_def* s, const void* from,
                                    int64_t watermark_ms) {
  if (s->nin > 0) {
    /* Each input holds its own; the stream's is the least of the active
     * ones (an idle input holds nothing back; all idle: no advance). */
    int64_t least = INT64_MAX;
    bool join = lm_op_multi_input(s->chain);
    bool active = false;
    for (int32_t b = 0; b < s->nin; b++) {
      if (s->in_defs[b] == from && watermark_ms > s->in_wm[b]) {
        s->in_wm[b] = watermark_ms;
        /* A join takes each input's own watermark, idle or not (op.h). */
        if (join) LM_TRY(lm_op_chain_input_watermark(s->chain, b, watermark_ms));
      }
      if (s->in_idle[b]) continue;
      active = true;
      if (s->in_wm[b] < least) least = s->in_wm[b];
    }
    if (!active) return LAMINAR_OK;
    watermark_ms = least;
    /* What it emits may be older than its inputs' watermarks (a left row
     * waiting for the right side): downstream follows what it forwards. */
    int64_t out_wm = lm_op_join_out_watermark(s->chain);
    if (join && out_wm < watermark_ms) watermark_ms = out_wm;
  }
  if (watermark_ms <= s->watermark_ms) return LAMINAR_OK;
  s->watermark_ms = watermark_ms;
  LM_TRY(lm_op_chain_watermark(s->chain, watermark_ms));
  if (s->late != NULL) LM_TRY(lm_rt_stream_watermark(s->late, s, watermark_ms));
  for (int32_t i = 0; i < s->nreaders; i++) {
    LM_TRY(lm_rt_stream_watermark(s->readers[i], s, watermark_ms));
  }
  return LAMINAR_OK;
}

laminar_code lm_stream_def_set_inputs(lm_stream_def* s, const void* const* in_defs,
                                      const int64_t* in_wm) {
  const lm_plan* plan = &s->plan;
  if (!lm_plan_branched(plan)) return LAMINAR_OK;
  int32_t n = plan->nbranches;
  s->in_defs = lm_calloc((size_t)n, sizeof *s->in_defs);
  s->in_chains = lm_calloc((size_t)n, sizeof *s->in_chains);
  s->in_wm = lm_calloc((size_t)n, sizeof *s->in_wm);
  s->in_idle = lm_calloc((size_t)n, sizeof *s->in_idle);
  if (s->in_defs == NULL || s->in_chains == NULL || s->in_wm == NULL ||
      s->in_idle == NULL)
    return LAMINAR_ERR_NOMEM;
  s->nin = n;
  /* The least over the active inputs (over all when every one is idle). */
  int64_t least = INT64_MAX, least_all = INT64_MAX;
  s->idle = true;
  for (int32_t b = 0; b < n; b++) {
    s->in_defs[b] = in_defs[b];
    s->in_wm[b] = in_wm[b];
    s->in_idle[b] = plan->branches[b].input_is_source
                        ? ((const lm_source_def*)in_defs[b])->idle
                        : ((const lm_stream_def*)in_defs[b])->idle;
    if (!s->in_idle[b]) s->idle = false;
    if (in_wm[b] < least_all) least_all = in_wm[b];
    if (!s->in_idle[b] && in_wm[b] < least) least = in_wm[b];
    LM_TRY(lm_plan_build_branch(plan, b, &s->in_chains[b]));
    if (s->in_chains[b] != NULL) {
      lm_op_chain_set_txn(s->in_chains[b], s->chain->txn);
      s->in_chains[b]->sink = branch_deliver;
      s->in_chains[b]->sink_arg = s;
    }
  }
  if (s->nparts > 1) LM_TRY(lm_stream_parts_set_inputs(s));
  lm_stream_def_start_at(s, s->idle ? least_all : least);
  /* A join takes each input's own watermark, in every partition. */
  for (int32_t p = 0; p < (s->nparts > 1 ? s->nparts : 1); p++) {
    lm_op* chain = lm_stream_part_chain(s, p);
    if (!lm_op_multi_input(chain)) break;
    for (int32_t b = 0; b < n; b++) {
      if (in_wm[b] != INT64_MIN) LM_TRY(lm_op_chain_input_watermark(chain, b, in_wm[b]));
    }
    if (s->nparts > 1) s->parts[p].watermark_ms = lm_op_join_out_watermark(chain);
  }
  return LAMINAR_OK;
}

/* Largest event time (epoch ms) in the batch's watermark column, or INT64_MIN. */
static int64_t batch_max_ts(const lm_source_def* src, const lm_batch* batch) {
  const lm_vec* v = &batch->cols[src->wm_col];
  int64_t best = INT64_MIN;
  if (v->type == LM_TYPE_INT32) {
    const int32_t* x = v->data;
    for (int64_t k = 0; k < v->len; k++) {
      if ((!v->nulls || !v->nulls[k]) && x[k] > best) best = x[k];
    }
    return best;
  }
  const int64_t* x = v->data;
  for (int64_t k = 0; k < v->len; k++) {
    if ((!v->nulls || !v->nulls[k]) && x[k] > best) best = x[k];
  }
  if (best != INT64_MIN && v->type == LM_TYPE_TIMESTAMP) {
    best = best / 1000 - (best % 1000 < 0 ? 1 : 0);
  }
  return best;
}

/* Per-key watermarks (rt.h wm_key_col): take the batch's rows into the
 * source's key table and return the least largest event time over the keys
 * that are not idle (INT64_MIN: none). Idle keys (idle_timeout_ms > 0: their
 * largest time more than that behind the source's largest) leave the table:
 * they hold nothing back, and a key that comes back starts anew. All in
 * event time, so a replay of the same input decides the same. */
static laminar_code batch_keys_least(lm_source_def* src, const lm_batch* batch,
                                     int64_t* out) {
  *out = INT64_MIN;
  if (src->keys == NULL) {
    src->keys = lm_calloc(1, sizeof *src->keys);
    if (src->keys == NULL) return LAMINAR_ERR_NOMEM;
    laminar_code rc = lm_keywm_init(src->keys, src->schema.fields[src->wm_key_col].type);
    if (rc != LAMINAR_OK) {
      lm_free(src->keys);
      src->keys = NULL;
      return rc;
    }
  }
  lm_keywm* kw = src->keys;
  LM_TRY(lm_keywm_observe(kw, &batch->cols[src->wm_key_col], &batch->cols[src->wm_col],
                          NULL, batch->nrows, NULL, NULL));
  int64_t n = lm_keywm_count(kw), top = INT64_MIN, least = INT64_MAX;
  for (int64_t k = 0; k < n; k++) {
    if (kw->max_ts[k] > top) top = kw->max_ts[k];
  }
  int64_t idle = 0;
  for (int64_t k = 0; k < n; k++) {
    int64_t t = kw->max_ts[k];
    if (t == INT64_MIN) continue; /* no time yet: holds nothing */
    if (src->idle_timeout_ms > 0 && top - t > src->idle_timeout_ms) {
      idle++;
      continue;
    }
    if (t < least) least = t;
  }
  if (least != INT64_MAX) *out = least;
  if (idle > 0) {
    bool* keep = lm_malloc((size_t)n * sizeof *keep);
    if (keep == NULL) return LAMINAR_OK; /* kept for now: idle keys count in no least */
    for (int64_t k = 0; k < n; k++) {
      int64_t t = kw->max_ts[k];
      keep[k] =
          t == INT64_MIN || src->idle_timeout_ms <= 0 || top - t <= src->idle_timeout_ms;
    }
    (void)lm_keywm_compact(kw, keep, NULL); /* NOMEM: compacted later */
    lm_free(keep);
  }
  return LAMINAR_OK;
}

int64_t lm_rt_source_keys(const lm_source_def* src) {
  return src->keys != NULL ? lm_keywm_count(src->keys) : 0;
}

/* Lookup joins under a WAL (rt.h order_hook): before a logged message of a
 * source a lookup join reads, when its table took messages since the last
 * point, or of a table's changelog, when a source joining it took messages
 * since: a point where the one takes over from the other, recorded before
 * the message is taken. Between two points only one of them moves. */
static void order_point(lm_rt* rt, lm_source_def* src) {
  bool turn = false;
  if (src->order_of != NULL) {
    turn = src->order_of->processed_seq != src->order_noted;
  } else if (src->table != NULL || src->order_target) {
    for (int32_t i = 0; !turn && i < rt->graph->nsources; i++) {
      const lm_source_def* s = rt->graph->sources[i];
      turn = s->order_of == src && s->processed_seq != s->order_self;
    }
  }
  if (!turn) return;
  if (rt->order_hook != NULL) rt->order_hook(rt->order_hook_arg, src);
  for (int32_t i = 0; i < rt->graph->nsources; i++) {
    lm_source_def* s = rt->graph->sources[i];
    if (s->order_of == NULL || (s != src && s->order_of != src)) continue;
    s->order_noted = s->order_of->processed_seq;
    s->order_self = s->processed_seq;
  }
}

int64_t lm_rt_msg_advance(lm_rt* rt, lm_source_def* src, const lm_msg* msg) {
  if (msg->seq != 0) order_point(rt, src);
  int64_t wm = src->watermark_ms;
  /* An explicit watermark a drop_oldest producer removed unread still counts
   * (relaxed: see carried_watermark in rt.h). */
  int64_t carried = atomic_load_explicit(&src->carried_watermark, memory_order_relaxed);
  if (carried > wm) wm = carried;
  if (msg->seq > src->processed_seq) src->processed_seq = msg->seq;
  /* Data or a watermark makes the source active; a marker says (rt.h). */
  src->idle_next = msg->batch == NULL && msg->idle > 0 ? 1 : 2;
  if (msg->batch != NULL) {
    if (src->wm_col >= 0 && src->wm_key_col >= 0 && !src->wm_external) {
      int64_t least = INT64_MIN, cand;
      int64_t mx = batch_max_ts(src, msg->batch);
      if (mx > src->max_ts_ms) src->max_ts_ms = mx;
      /* Out of memory: no advance from this batch (a later one catches up). */
      if (batch_keys_least(src, msg->batch, &least) == LAMINAR_OK && least != INT64_MIN &&
          !__builtin_sub_overflow(least, src->wm_delay_ms, &cand) && cand > wm)
        wm = cand;
    } else if (src->wm_col >= 0 && !src->wm_external) {
      int64_t mx = batch_max_ts(src, msg->batch);
      if (mx > src->max_ts_ms) src->max_ts_ms = mx;
      if (src->max_ts_ms != INT64_MIN) {
        int64_t cand;
        if (__builtin_sub_overflow(src->max_ts_ms, src->wm_delay_ms, &cand))
          cand = INT64_MIN;
        if (cand > wm) wm = cand;
      }
    }
  } else if (msg->watermark_ms > wm) {
    wm = msg->watermark_ms;
  }
  if (wm <= src->watermark_ms) return INT64_MIN;
  /* Applied after the batch went through the streams (the caller's order). */
  src->watermark_ms = wm;
  if (src->align_group != NULL) {
    atomic_store_explicit(&src->align_wm, wm, memory_order_relaxed);
  }
  return wm;
}

/* Whether a batch of a stream with these readers reaches more than one
 * reader on its way (the stream's own, or a stream's downstream). */
static bool fans_out(lm_stream_def* const* readers, int32_t n) {
  if (n > 1) return true;
  return n == 1 && fans_out(readers[0]->readers, readers[0]->nreaders);
}

static laminar_code process_msg(lm_rt* rt, lm_source_def* src, lm_msg* msg) {
  laminar_code rc = LAMINAR_OK;
  int64_t wm = lm_rt_msg_advance(rt, src, msg);
  if (msg->batch != NULL) {
    lm_batch* batch = msg->batch;
    lm_chunk chunk = {batch->nrows, batch->ncols, batch->cols, NULL};
    /* All readers or none (op.h, lm_op_txn): a batch that fans out is
     * committed once every reader took it, or undone in all of them. The
     * unpartitioned path only (one reactor). */
    lm_op_txn* txn = &rt->graph->txn;
    txn->applied = false;
    bool spread = fans_out(src->readers, src->nreaders);
    bool fan = rt->ncores <= 1 && spread;
    if (fan) lm_op_txn_begin(txn, true);
    int32_t kept = 0; /* entries of the readers that took the batch */
    for (int32_t i = 0; i < src->nreaders && rc == LAMINAR_OK; i++) {
      rc = stream_chunk(src->readers[i], src, &chunk);
      if (rc == LAMINAR_OK) kept = txn->n;
    }
    if (fan) {
      /* Out of memory (or past a state bound): no reader keeps the batch, so
       * it can be pushed again. Any other failure is the failing stream's
       * own: the readers before it keep the batch, as they would alone. */
      bool memory = rc == LAMINAR_ERR_NOMEM || rc == LAMINAR_ERR_MEMORY_LIMIT;
      laminar_code erc = lm_op_txn_end_part(txn, rc == LAMINAR_OK ? txn->n
                                                 : memory         ? 0
                                                                  : kept);
      if (rc == LAMINAR_OK) rc = erc;
    }
    /* Not applied (one reader, or all of them undone), and its producer may
     * push it again: with a WAL its record must not be replayed either
     * (rt.h void_hook). */
    if ((rc == LAMINAR_ERR_NOMEM || rc == LAMINAR_ERR_MEMORY_LIMIT) && msg->seq != 0 &&
        rt->void_hook != NULL && (fan || !spread) && !txn->applied) {
      laminar_code vrc = rt->void_hook(rt->void_hook_arg, src, msg->seq);
      if (vrc != LAMINAR_OK) rc = vrc;
    }
    lm_batch_unref(batch);
  }
  lm_free(msg);
  if (rc == LAMINAR_OK && wm != INT64_MIN) {
    for (int32_t i = 0; i < src->nreaders && rc == LAMINAR_OK; i++) {
      rc = lm_rt_stream_watermark(src->readers[i], src, wm);
    }
  }
  return rc;
}

void lm_rt_notify_subscribers(const lm_graph* g) {
  for (int32_t i = 0; i < g->nstreams; i++) {
    const lm_stream_def* s = g->streams[i];
    for (int32_t j = 0; j < s->nsubs; j++) {
      lm_sub* sub = s->subs[j];
      if (!sub->notify_pending) continue;
      sub->notify_pending = false;
      lm_waiter_notify(&sub->waiter);
    }
  }
}

laminar_code lm_rt_process_now(lm_rt* rt, lm_source_def* src, lm_msg* msg) {
  /* Keyed readers: the message goes through their partitions as a round of
   * one, as the reactor would route it (lm_rt_run_msg drains: it notifies). */
  if (rt->ncores > 1 && lm_rt_source_partitioned(src)) return lm_rt_run_msg(rt, src, msg);
  laminar_code rc = process_msg(rt, src, msg);
  lm_rt_notify_subscribers(rt->graph);
  /* Replay: each record's sink writes are done before the next is taken, so
   * a failed write names its record. */
  laminar_code drc = lm_rt_drain_sinks(rt->graph);
  return rc != LAMINAR_OK ? rc : drc;
}

/* Room every subscriber ring must have before a source message is taken.
 * One message makes each stream emit at most one batch: a map stream emits on
 * its (single) input chunk, a window stream only when the watermark advances,
 * and by induction no stream receives more than one chunk per message. Two
 * slots leave a margin and still fit the smallest queue (buffer_size 2). */
#define LM_SUB_HEADROOM 2u

uint32_t lm_rt_min_free(const lm_graph* g) {
  uint32_t least = UINT32_MAX;
  for (int32_t i = 0; i < g->nstreams; i++) {
    const lm_stream_def* s = g->streams[i];
    for (int32_t j = 0; j < s->nsubs; j++) {
      const lm_sub* sub = s->subs[j];
      if (sub->drop_when_full) continue; /* never holds the pipeline */
      const lm_ring* r = sub->ring;
      uint32_t room = (uint32_t)(lm_ring_capacity(r) - lm_ring_size(r));
      /* The byte bound, in batches like the last one: room for k more such
       * batches counts as k + 1 slots (the count's own margin of one), so
       * the headroom of 2 means one batch fits. An empty queue takes any. */
      int64_t queued = atomic_load_explicit(&sub->bytes, memory_order_relaxed);
      if (sub->max_bytes > 0 && queued > 0) {
        int64_t per = sub->last_bytes > 0 ? sub->last_bytes : 1;
        int64_t fit = queued >= sub->max_bytes ? 0 : (sub->max_bytes - queued) / per + 1;
        if (fit < (int64_t)room) room = (uint32_t)fit;
      }
      if (room < least) least = room;
    }
    /* A queued sink's queue holds input as a subscriber ring does. */
    for (int32_t j = 0; j < s->nsinks; j++) {
      const lm_sink* k = s->sinks[j];
      if (k->vt->room == NULL) continue;
      uint32_t room = k->vt->room(k);
      if (room < least) least = room;
    }
  }
  return least;
}

static bool have_headroom(const lm_graph* g) {
  return lm_rt_min_free(g) >= LM_SUB_HEADROOM;
}

/* Input `from` of stream s became idle / active: recompute s's watermark
 * over its active inputs, and pass s's own idleness (all of its inputs idle)
 * on to its readers when it changed. */
static laminar_code input_idleness(lm_stream_def* s, const void* from, bool idle) {
  bool all = idle;
  if (s->nin > 0) {
    all = true;
    for (int32_t b = 0; b < s->nin; b++) {
      if (s->in_defs[b] == from) s->in_idle[b] = idle;
      all = all && s->in_idle[b];
    }
    /* The least of the active inputs may have risen (all idle: it stays).
     * A keyed union's partitions run in rounds only (part.c): source_idleness
     * runs them an idleness round (lm_rt_run_idleness) after this. */
    if (s->nparts <= 1) LM_TRY(lm_rt_stream_watermark(s, from, INT64_MIN));
  }
  if (all == s->idle) return LAMINAR_OK;
  s->idle = all;
  for (int32_t i = 0; i < s->nreaders; i++) {
    LM_TRY(input_idleness(s->readers[i], s, all));
  }
  return LAMINAR_OK;
}

/* After a round's messages of src (`taken` of them): apply what they asked of
 * its idleness (idle_next: a laminar_source_set_idle marker, or data making
 * it active again), else its idle_timeout -- nothing taken for that long on
 * the reactor's clock, its queue empty. A change goes to every reader
 * (input_idleness) at a message boundary with nothing in flight, and only
 * with subscriber headroom (closing windows emits): else it waits for a
 * later round. */
static laminar_code source_idleness(lm_rt* rt, lm_source_def* src, int taken) {
  bool idle = src->idle;
  if (src->idle_next != 0) idle = src->idle_next == 1;
  if (src->idle_timeout_ms > 0) {
    int64_t now = lm_rt_now_ns();
    if (taken > 0 || src->active_ns == 0) {
      src->active_ns = now;
    } else if (!idle && lm_mpsc_size(src->queue) == 0 &&
               (now - src->active_ns) / 1000000 >= src->idle_timeout_ms) {
      idle = true;
    }
  }
  if (idle == src->idle) {
    src->idle_next = 0;
    return LAMINAR_OK;
  }
  if (rt->ncores > 1) LM_TRY(lm_rt_drain(rt));
  if (!have_headroom(rt->graph)) return LAMINAR_OK; /* idle_next kept: retried */
  src->idle_next = 0;
  LM_TRY(lm_rt_apply_idleness(rt, src, idle));
  /* Durable: where in the input it took effect (WAL replay applies it there). */
  if (rt->idle_hook != NULL) rt->idle_hook(rt->idle_hook_arg, src, idle);
  return LAMINAR_OK;
}

laminar_code lm_rt_apply_idleness(lm_rt* rt, lm_source_def* src, bool idle) {
  if (src->idle == idle) return LAMINAR_OK;
  src->idle = idle;
  bool keyed_union = false;
  for (int32_t i = 0; i < src->nreaders; i++) {
    LM_TRY(input_idleness(src->readers[i], src, idle));
    keyed_union =
        keyed_union || (src->readers[i]->nparts > 1 && src->readers[i]->nin > 0);
  }
  /* A partitioned union takes the change now, not at the next advance. */
  if (keyed_union && rt->ncores > 1) LM_TRY(lm_rt_run_idleness(rt, src));
  return LAMINAR_OK;
}

/* Watermark alignment (rt.h lm_source_def.align_group): each aligned
 * source's limit is its group's least watermark -- over members that are
 * not idle and have one -- plus its max_drift. Run after a round in which
 * an aligned source's watermark or idleness changed, or a source came or
 * went; a risen limit wakes the source's held producers. */
static void align_groups(lm_rt* rt) {
  const lm_graph* g = rt->graph;
  rt->align_nsources = g->nsources;
  for (int32_t i = 0; i < g->nsources; i++) {
    lm_source_def* src = g->sources[i];
    if (src->align_group == NULL) continue;
    /* The group's slowest member that counts: not idle, with a watermark. */
    int64_t least = INT64_MAX;
    for (int32_t j = 0; j < g->nsources; j++) {
      const lm_source_def* m = g->sources[j];
      if (m->align_group == NULL || strcmp(m->align_group, src->align_group) != 0 ||
          m->idle || m->watermark_ms == INT64_MIN)
        continue;
      if (m->watermark_ms < least) least = m->watermark_ms;
    }
    int64_t limit;
    if (least == INT64_MAX || __builtin_add_overflow(least, src->max_drift_ms, &limit))
      limit = INT64_MAX;
    int64_t was =
        atomic_exchange_explicit(&src->align_limit, limit, memory_order_relaxed);
    /* Held producers park on `room`: wake them to look again. */
    if (limit > was) lm_waiter_notify(&src->room);
  }
}

/* Process up to `budget` messages per source, round robin. *out_progress
 * tells whether any message was processed; *out_blocked whether a full
 * subscriber stopped progress. */
static laminar_code process_round(lm_rt* rt, int budget, bool* out_progress,
                                  bool* out_blocked) {
  lm_graph* g = rt->graph;
  *out_progress = false;
  *out_blocked = false;
  int64_t total = 0;
  laminar_code round_rc = LAMINAR_OK;
  /* A source created or dropped: the alignment groups change. */
  bool realign = g->nsources != rt->align_nsources;
  for (int32_t i = 0; i < g->nsources; i++) {
    lm_source_def* src = g->sources[i];
    int taken = 0, limit = budget;
    laminar_code rc = LAMINAR_OK;
    int64_t wm_before = src->watermark_ms;
    bool idle_before = src->idle;
    if (rt->ncores > 1 && lm_rt_source_partitioned(src)) {
      /* Keyed streams: a round over every reactor (part.c). */
      int64_t n = 0;
      bool blocked = false;
      rc = lm_rt_run_round(rt, src, &n, &blocked);
      taken = (int)n;
      if (n > 0) *out_progress = true;
      if (blocked) *out_blocked = true;
      limit = 0; /* skip the one-core loop below */
    }
    for (; taken < limit && rc == LAMINAR_OK; taken++) {
      if (lm_mpsc_size(src->queue) == 0) break;
      if (!have_headroom(g)) {
        *out_blocked = true;
        break;
      }
      /* Not a peek-then-pop: a drop_oldest producer may take the head first. */
      lm_msg* item;
      if (!lm_source_take(src, false, &item)) break;
      *out_progress = true;
      rc = process_msg(rt, src, item);
    }
    if (rc == LAMINAR_OK && (src->idle_next != 0 || src->idle_timeout_ms > 0)) {
      rc = source_idleness(rt, src, taken);
    }
    if (src->align_group != NULL &&
        (src->watermark_ms != wm_before || src->idle != idle_before))
      realign = true;
    /* Producers blocked on a full queue: one notify per round, not per message
     * (a fence and a load when none is parked). */
    if (taken > 0) lm_waiter_notify(&src->room);
    total += taken;
    if (rc != LAMINAR_OK || *out_blocked) {
      round_rc = rc;
      break;
    }
  }
  if (realign) align_groups(rt);
  if (total > 0) atomic_fetch_add_explicit(&rt->messages, total, memory_order_relaxed);
  lm_rt_notify_subscribers(g);
  return round_rc;
}

laminar_code lm_rt_run_until_idle(lm_rt* rt, laminar_error* err) {
  if (rt->started) {
    return lm_error_set(err, LAMINAR_ERR_STATE,
                        "run_until_idle is not allowed while the runtime is started");
  }
  for (;;) {
    bool progress, blocked;
    laminar_code rc = process_round(rt, 64, &progress, &blocked);
    laminar_code drc =
        progress && !blocked && rc == LAMINAR_OK ? LAMINAR_OK : lm_rt_drain(rt);
    if (rc == LAMINAR_OK) rc = drc;
    if (rc == LAMINAR_OK && (!progress || blocked)) {
      /* Inline, the sinks' queued writes are done when this returns (same
       * input, same output); a sink queue that held input has room again. */
      rc = lm_rt_drain_sinks(rt->graph);
      if (rc == LAMINAR_OK && blocked && have_headroom(rt->graph)) continue;
    }
    if (rc != LAMINAR_OK) {
      return lm_rt_processing_error(rt->graph, rc, "", err);
    }
    if (!progress || blocked) return LAMINAR_OK;
  }
}

/* ---- the reactor thread ------------------------------------------------------- */

static bool any_input_or_request(void* arg) {
  lm_rt* rt = arg;
  if (atomic_load_explicit(&rt->stop, memory_order_acquire) ||
      atomic_load_explicit(&rt->pause_req, memory_order_acquire) ||
      atomic_load_explicit(&rt->barrier_req, memory_order_acquire) != NULL) {
    return true;
  }
  for (int32_t i = 0; i < rt->graph->nsources; i++) {
    if (lm_mpsc_size(rt->graph->sources[i]->queue) > 0) return true;
  }
  return false;
}

static bool never_ready(void* arg) {
  LM_UNUSED(arg);
  return false;
}

static void record_error(lm_rt* rt, laminar_code rc);

static void honour_pause(lm_rt* rt) {
  /* acquire: pairs with the release store in lm_rt_pause(). */
  if (!atomic_load_explicit(&rt->pause_req, memory_order_acquire)) return;
  /* Every reactor at the same message boundary: no round in flight. */
  record_error(rt, lm_rt_drain(rt));
  pthread_mutex_lock(&rt->pause_mu);
  rt->paused = true;
  pthread_cond_broadcast(&rt->pause_cv);
  while (atomic_load_explicit(&rt->pause_req, memory_order_acquire)) {
    pthread_cond_wait(&rt->pause_cv, &rt->pause_mu);
  }
  rt->paused = false;
  pthread_mutex_unlock(&rt->pause_mu);
}

/* ---- in-band barriers (rt.h lm_barrier) ------------------------------------------ */

void lm_rt_barrier_step(lm_barrier* b, lm_barrier_step step, int32_t part) {
  int64_t t0 = lm_rt_now_ns();
  b->step(b->arg, step, part);
  int64_t dt = lm_rt_now_ns() - t0;
  int_fast64_t seen = atomic_load_explicit(&b->stall_ns, memory_order_relaxed);
  while (dt > seen &&
         !atomic_compare_exchange_weak_explicit(
             &b->stall_ns, &seen, dt, memory_order_relaxed, memory_order_relaxed)) {
  }
}

void lm_rt_barrier_done(lm_rt* rt, lm_barrier* b) {
  pthread_mutex_lock(&rt->pause_mu);
  b->done = true; /* the requester may free b once it sees this */
  pthread_cond_broadcast(&rt->pause_cv);
  pthread_mutex_unlock(&rt->pause_mu);
}

/* At the driver's position in every source queue: INJECT, then the rounds
 * carry it (one core: nothing else to align, done at once). */
static laminar_code barrier_inject(lm_rt* rt, lm_barrier* b) {
  lm_rt_barrier_step(b, LM_BARRIER_INJECT, 0);
  if (rt->ncores > 1) return lm_rt_post_barrier(rt, b);
  lm_rt_barrier_step(b, LM_BARRIER_MERGED, 0);
  lm_rt_barrier_done(rt, b);
  return LAMINAR_OK;
}

/* Reactor 0 at a message boundary: take a requested barrier; merge finished
 * rounds while one is open, so it completes even while only sources without
 * rounds keep this reactor busy. */
static laminar_code honour_barrier(lm_rt* rt) {
  laminar_code rc = LAMINAR_OK;
  if (atomic_load_explicit(&rt->barrier_req, memory_order_relaxed) != NULL) {
    lm_barrier* b =
        atomic_exchange_explicit(&rt->barrier_req, NULL, memory_order_acquire);
    if (b != NULL) {
      atomic_fetch_add_explicit(&rt->barriers_taken, 1, memory_order_relaxed);
      rc = barrier_inject(rt, b);
    }
  }
  if (rt->barriers_open > 0) {
    laminar_code mrc = lm_rt_merge_finished(rt);
    if (rc == LAMINAR_OK) rc = mrc;
  }
  return rc;
}

void lm_rt_barrier(lm_rt* rt, lm_barrier* b) {
  b->done = false;
  atomic_init(&b->stall_ns, 0);
  if (!rt->started) {
    /* The caller drives the graph: between inline runs nothing is in flight.
     * A stream error met on the way stays with the stream (as inline runs
     * report it); the barrier itself completes. */
    (void)barrier_inject(rt, b);
    (void)lm_rt_drain(rt);
    return;
  }
  pthread_mutex_lock(&rt->pause_mu);
  atomic_store_explicit(&rt->barrier_req, b, memory_order_release);
  lm_waiter_notify(&rt->wake);
  while (!b->done) pthread_cond_wait(&rt->pause_cv, &rt->pause_mu);
  pthread_mutex_unlock(&rt->pause_mu);
}

/* Mark stream s and everything it feeds (readers, late side output). */
static void mark_points(const lm_graph* g, const lm_stream_def* s, bool merged,
                        bool* at_merge) {
  for (int32_t i = 0; i < g->nstreams; i++) {
    if (g->streams[i] == s) at_merge[i] = merged;
  }
  for (int32_t i = 0; i < s->nreaders; i++)
    mark_points(g, s->readers[i], merged, at_merge);
  if (s->late != NULL) mark_points(g, s->late, merged, at_merge);
}

void lm_rt_barrier_points(const lm_rt* rt, bool* at_merge) {
  const lm_graph* g = rt->graph;
  for (int32_t i = 0; i < g->nstreams; i++) at_merge[i] = false;
  for (int32_t i = 0; i < g->nsources; i++) {
    const lm_source_def* src = g->sources[i];
    /* A source runs in rounds when it has a keyed reader (process_round). */
    bool merged = rt->ncores > 1 && lm_rt_source_partitioned(src);
    for (int32_t k = 0; k < src->nreaders; k++)
      mark_points(g, src->readers[k], merged, at_merge);
  }
}

laminar_code lm_rt_processing_error(const lm_graph* g, laminar_code rc, const char* where,
                                    laminar_error* err) {
  bool found = false;
  for (int32_t i = 0; i < g->nstreams && !found; i++) {
    found = lm_state_budget_error(&g->streams[i]->budget, rc, err);
  }
  /* Texts recorded by this failure for other streams (or with another code)
   * are dropped, so none is reported with a later failure. */
  for (int32_t i = 0; i < g->nstreams; i++) {
    lm_state_budget* b = &g->streams[i]->budget;
    if (atomic_load_explicit(&b->failed, memory_order_acquire) == 2) {
      atomic_store_explicit(&b->failed, 0, memory_order_relaxed);
    }
  }
  if (found) return rc;
  return lm_error_set(err, rc, "stream processing failed%s: %s", where,
                      laminar_errstr(rc));
}

/* Keep the first error raised on the reactor thread for laminar_stop(). */
static void record_error(lm_rt* rt, laminar_code rc) {
  if (rc == LAMINAR_OK || rt->error != LAMINAR_OK) return;
  rt->error = rc;
  lm_rt_processing_error(rt->graph, rc, " on the reactor", &rt->error_detail);
}

/* laminar_stop: how long a full blocking subscriber may go without room before
 * the rest of the input is left queued (its reader is gone). */
#define STOP_PATIENCE_NS (1000 * 1000000LL)

static void* reactor_main(void* arg) {
  lm_rt* rt = arg;
  lm_rt_pin_self(rt, &rt->reactors[0]);
  for (;;) {
    honour_pause(rt);
    record_error(rt, honour_barrier(rt));
    bool progress = false, blocked = false;
    int64_t t0 = lm_rt_now_ns();
    laminar_code rc = process_round(rt, 64, &progress, &blocked);
    if (progress) {
      atomic_fetch_add_explicit(&rt->busy_ns, lm_rt_now_ns() - t0, memory_order_relaxed);
    }
    record_error(rt, rc);
    if (progress && !blocked) continue;
    /* A barrier asked for: take it first (not after a drain). */
    if (!blocked && atomic_load_explicit(&rt->barrier_req, memory_order_relaxed) != NULL)
      continue;
    if (atomic_load_explicit(&rt->stop, memory_order_acquire)) {
      /* Finish everything queued before the stop (a push may also have landed
       * between the round and the request). A full blocking subscriber is
       * waited for while its reader makes room; only after STOP_PATIENCE_NS
       * without any progress does the rest stay queued (nobody reads). */
      int64_t last_progress = lm_rt_now_ns();
      for (;;) {
        rc = process_round(rt, 64, &progress, &blocked);
        record_error(rt, rc);
        if (rc != LAMINAR_OK || (!progress && !blocked)) break;
        if (progress) last_progress = lm_rt_now_ns();
        if (!blocked) continue;
        if (lm_rt_now_ns() - last_progress > STOP_PATIENCE_NS) break;
        record_error(rt, lm_rt_drain(rt));
        lm_waiter_wait(&rt->wake, 200000, never_ready, NULL);
      }
      record_error(rt, honour_barrier(
                           rt)); /* none can be asked now (db->lock); never strand one */
      record_error(rt, lm_rt_drain(rt));
      break;
    }
    if (!blocked && rt->barriers_open > 0) {
      /* A barrier round in flight: its merge waits for the slowest reactor,
       * reactor 0 does not. Merge what is finished, look for input soon. */
      record_error(rt, lm_rt_merge_finished(rt));
      if (rt->barriers_open > 0) {
        lm_waiter_wait(&rt->wake, 1000000, any_input_or_request, rt);
        continue;
      }
    }
    record_error(rt, lm_rt_drain(rt)); /* nothing left in flight while waiting */
    if (blocked) {
      /* A subscriber is full: poll for room at a low rate. */
      lm_waiter_wait(&rt->wake, 200000, never_ready, NULL);
    } else {
      /* Idle: wait the way the most eager source asks (spin sources get a
       * spinning reactor); at most 50 ms, then look again. */
      lm_wait how = lm_wait_default();
      for (int32_t i = 0; i < rt->graph->nsources; i++) {
        how = lm_wait_eager(how, rt->graph->sources[i]->wait);
      }
      lm_wait_until(&how, &rt->wake, 50000000, any_input_or_request, rt);
    }
  }
  return NULL;
}

laminar_code lm_rt_init(lm_rt* rt, lm_graph* graph) {
  memset(rt, 0, sizeof *rt);
  rt->graph = graph;
  atomic_init(&rt->messages, 0);
  atomic_init(&rt->busy_ns, 0);
  atomic_init(&rt->stop, false);
  atomic_init(&rt->pause_req, false);
  atomic_init(&rt->barrier_req, NULL);
  atomic_init(&rt->barriers_taken, 0);
  atomic_init(&rt->round_seq, 0);
  atomic_init(&rt->stop_workers, false);
  LM_TRY(lm_waiter_init(&rt->wake));
  laminar_code rc = lm_waiter_init(&rt->joined);
  if (rc != LAMINAR_OK) {
    lm_waiter_destroy(&rt->wake);
    return rc;
  }
  if (pthread_mutex_init(&rt->pause_mu, NULL) != 0) {
    lm_waiter_destroy(&rt->joined);
    lm_waiter_destroy(&rt->wake);
    return LAMINAR_ERR_INTERNAL;
  }
  if (pthread_cond_init(&rt->pause_cv, NULL) != 0) {
    pthread_mutex_destroy(&rt->pause_mu);
    lm_waiter_destroy(&rt->joined);
    lm_waiter_destroy(&rt->wake);
    return LAMINAR_ERR_INTERNAL;
  }
  rc = lm_rt_configure(rt, 1, false);
  if (rc != LAMINAR_OK) lm_rt_destroy(rt);
  return rc;
}

void lm_rt_destroy(lm_rt* rt) {
  lm_rt_reactors_free(rt);
  lm_waiter_destroy(&rt->joined);
  lm_waiter_destroy(&rt->wake);
  pthread_mutex_destroy(&rt->pause_mu);
  pthread_cond_destroy(&rt->pause_cv);
}

laminar_code lm_rt_start(lm_rt* rt, laminar_error* err) {
  if (rt->started)
    return lm_error_set(err, LAMINAR_ERR_STATE, "the runtime is already started");
  atomic_store_explicit(&rt->stop, false, memory_order_release);
  rt->error = LAMINAR_OK;
  rt->started_ns = lm_rt_now_ns();
  if (lm_rt_workers_start(rt) != LAMINAR_OK) {
    rt->started_ns = 0;
    return lm_error_set(err, LAMINAR_ERR_INTERNAL, "cannot start the reactor threads");
  }
  if (pthread_create(&rt->thread, NULL, reactor_main, rt) != 0) {
    lm_rt_workers_stop(rt);
    rt->started_ns = 0;
    return lm_error_set(err, LAMINAR_ERR_INTERNAL, "cannot start the reactor thread");
  }
  rt->started = true;
  return LAMINAR_OK;
}

laminar_code lm_rt_stop(lm_rt* rt, laminar_error* err) {
  if (!rt->started) return LAMINAR_OK;
  atomic_store_explicit(&rt->stop, true, memory_order_release);
  lm_waiter_notify(&rt->wake);
  pthread_join(rt->thread, NULL);
  lm_rt_workers_stop(rt);
  /* What the reactor queued for the sinks is written before stop returns. */
  laminar_code drc = lm_rt_drain_sinks(rt->graph);
  if (drc != LAMINAR_OK && rt->error == LAMINAR_OK) {
    rt->error = lm_rt_processing_error(rt->graph, drc, "", &rt->error_detail);
  }
  rt->started = false;
  rt->started_ns = 0;
  /* Producers blocked on a full queue see `started` false and give up. */
  for (int32_t i = 0; i < rt->graph->nsources; i++) {
    lm_waiter_notify(&rt->graph->sources[i]->room);
  }
  if (rt->error != LAMINAR_OK) {
    if (err != NULL) *err = rt->error_detail;
    laminar_code rc = rt->error;
    rt->error = LAMINAR_OK;
    return rc;
  }
  return LAMINAR_OK;
}

void lm_rt_pause(lm_rt* rt) {
  if (!rt->started) return;
  pthread_mutex_lock(&rt->pause_mu);
  /* release: the reactor's acquire load sees the request. */
  atomic_store_explicit(&rt->pause_req, true, memory_order_release);
  lm_waiter_notify(&rt->wake);
  while (!rt->paused) pthread_cond_wait(&rt->pause_cv, &rt->pause_mu);
  pthread_mutex_unlock(&rt->pause_mu);
}

void lm_rt_resume(lm_rt* rt) {
  if (!rt->started) return;
  pthread_mutex_lock(&rt->pause_mu);
  atomic_store_explicit(&rt->pause_req, false, memory_order_release);
  pthread_cond_broadcast(&rt->pause_cv);
  pthread_mutex_unlock(&rt->pause_mu);
}

void lm_rt_set_round_hook(lm_rt* rt, void (*fn)(void* arg, int32_t part, bool barrier),
                          void* arg) {
  rt->round_hook = fn;
  rt->round_hook_arg = arg;
}

void lm_rt_notify(lm_rt* rt) { lm_waiter_notify(&rt->wake); }

int64_t lm_rt_now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}
