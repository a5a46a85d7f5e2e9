/*
 * metrics.c -- laminar_metrics: the counters of every source, stream and
 * subscription as rows (kind, name, metric, value), read with the graph
 * paused for the counters only the reactor writes.
 */
#include "db/internal.h"

#include <string.h>

#include "arrow/arrow.h"
#include "connect/kafka_source.h"
#include "op/view.h"
#include "rt/source.h"
#include "store/wal.h"
#include "util/util.h"

typedef struct rows {
  lm_str* kind;
  lm_str* name;
  lm_str* metric;
  int64_t* value;
  int64_t n, cap;
  bool nomem;
} rows;

static lm_str text(const char* s) { return (lm_str){s, (int64_t)strlen(s)}; }

static void add(rows* r, const char* kind, const char* name, const char* metric,
                int64_t v) {
  if (r->nomem) return;
  if (r->n == r->cap) {
    int64_t cap = r->cap ? r->cap * 2 : 64;
    lm_str* k = lm_realloc(r->kind, sizeof *k * (size_t)cap);
    if (k != NULL) r->kind = k;
    lm_str* nm = lm_realloc(r->name, sizeof *nm * (size_t)cap);
    if (nm != NULL) r->name = nm;
    lm_str* m = lm_realloc(r->metric, sizeof *m * (size_t)cap);
    if (m != NULL) r->metric = m;
    int64_t* val = lm_realloc(r->value, sizeof *val * (size_t)cap);
    if (val != NULL) r->value = val;
    if (k == NULL || nm == NULL || m == NULL || val == NULL) {
      r->nomem = true;
      return;
    }
    r->cap = cap;
  }
  r->kind[r->n] = text(kind);
  r->name[r->n] = text(name);
  r->metric[r->n] = text(metric);
  r->value[r->n] = v;
  r->n++;
}

static void collect(laminar_db* db, rows* r) {
  lm_graph* g = &db->graph;
  for (int32_t i = 0; i < g->nsources; i++) {
    lm_source_def* s = g->sources[i];
    add(r, "source", s->name, "pushed_batches",
        (int64_t)atomic_load_explicit(&s->pushed_batches, memory_order_relaxed));
    add(r, "source", s->name, "pushed_rows",
        (int64_t)atomic_load_explicit(&s->pushed_rows, memory_order_relaxed));
    add(r, "source", s->name, "queue_depth", (int64_t)lm_mpsc_size(s->queue));
    add(r, "source", s->name, "queue_capacity", (int64_t)lm_mpsc_capacity(s->queue));
    add(r, "source", s->name, "queue_bytes",
        (int64_t)atomic_load_explicit(&s->queued_bytes, memory_order_relaxed));
    add(r, "source", s->name, "max_queue_bytes", s->max_queue_bytes);
    add(r, "source", s->name, "dropped_batches",
        (int64_t)atomic_load_explicit(&s->dropped_batches, memory_order_relaxed));
    add(r, "source", s->name, "dropped_rows",
        (int64_t)atomic_load_explicit(&s->dropped_rows, memory_order_relaxed));
    add(r, "source", s->name, "rejected_batches",
        (int64_t)atomic_load_explicit(&s->rejected_batches, memory_order_relaxed));
    add(r, "source", s->name, "producers",
        (int64_t)atomic_load_explicit(&s->producers, memory_order_relaxed));
    add(r, "source", s->name, "watermark_ms", s->watermark_ms);
    /* 1 while idle: its readers' watermarks do not wait for it. */
    add(r, "source", s->name, "watermark_idle", s->idle ? 1 : 0);
    /* Per-key watermarks: the keys the source's watermark is the least over. */
    if (s->wm_key_col >= 0)
      add(r, "source", s->name, "watermark_keys", lm_rt_source_keys(s));
    if (s->align_group != NULL) {
      add(r, "source", s->name, "alignment_held", lm_source_held_back(s) ? 1 : 0);
    }
    if (s->wal != NULL) {
      add(r, "source", s->name, "wal_next_offset", (int64_t)lm_wal_next_seq(s->wal));
      add(r, "source", s->name, "processed_offset", (int64_t)s->processed_seq);
    }
  }
  for (int32_t i = 0; i < g->nstreams; i++) {
    lm_stream_def* s = g->streams[i];
    int64_t rows_in, rows_out, bytes;
    lm_stream_rows(s, &rows_in, &rows_out);
    if (lm_stream_state_bytes(s, &bytes) != LAMINAR_OK) r->nomem = true;
    add(r, "stream", s->name, "rows_in", rows_in);
    add(r, "stream", s->name, "rows_out", rows_out);
    add(r, "stream", s->name, "late_rows", lm_stream_late_rows(s));
    add(r, "stream", s->name, "state_groups", lm_stream_state_rows(s));
    add(r, "stream", s->name, "state_bytes", bytes);
    /* What the bound (max_state_bytes) counts; 0 while no bound applies. */
    add(r, "stream", s->name, "accounted_state_bytes",
        (int64_t)atomic_load_explicit(&s->budget.used, memory_order_relaxed));
    add(r, "stream", s->name, "max_state_bytes", s->budget.limit);
    add(r, "stream", s->name, "partitions", s->nparts);
    add(r, "stream", s->name, "watermark_ms", s->watermark_ms);
    add(r, "stream", s->name, "subscribers", s->nsubs);
    if (lm_op_multi_input(s->chain)) { /* a join: the rows and bytes it holds */
      int64_t rows[2] = {0, 0}, bytes[2] = {0, 0};
      for (int32_t p = 0; p < (s->nparts > 1 ? s->nparts : 1); p++) {
        int64_t r2[2], b2[2];
        lm_op_join_held(lm_stream_part_chain(s, p), r2, b2);
        for (int i = 0; i < 2; i++) {
          rows[i] += r2[i];
          bytes[i] += b2[i];
        }
      }
      add(r, "stream", s->name, "join_left_rows", rows[0]);
      add(r, "stream", s->name, "join_right_rows", rows[1]);
      add(r, "stream", s->name, "join_left_bytes", bytes[0]);
      add(r, "stream", s->name, "join_right_bytes", bytes[1]);
    }
    if (lm_op_is_analytic(s->chain)) { /* window functions: rows not yet emitted */
      int64_t held = 0;
      for (int32_t p = 0; p < (s->nparts > 1 ? s->nparts : 1); p++)
        held += lm_op_analytic_held_rows(lm_stream_part_chain(s, p));
      add(r, "stream", s->name, "held_rows", held);
    }
    if (s->plan.keyed_wm) { /* per-key watermarks: the keys with state or a watermark */
      int64_t keys = 0;
      for (int32_t p = 0; p < (s->nparts > 1 ? s->nparts : 1); p++)
        keys += lm_op_keyed_window_keys(lm_stream_part_chain(s, p));
      add(r, "stream", s->name, "watermark_keys", keys);
    }
    const lm_op* view = lm_op_view_of(s->chain);
    if (view != NULL) {
      add(r, "stream", s->name, "view_rows", lm_op_view_rows(view));
      add(r, "stream", s->name, "retract_errors", lm_op_view_retract_errors(view));
    }
  }
  for (int32_t i = 0; i < db->nsubs; i++) {
    laminar_subscription* sub = db->subs[i];
    if (sub->stream == NULL) continue;
    add(r, "subscription", sub->stream_name, "delivered_batches",
        (int64_t)atomic_load_explicit(&sub->delivered, memory_order_relaxed));
    add(r, "subscription", sub->stream_name, "queue_depth",
        (int64_t)lm_ring_size(sub->sub->ring));
    add(r, "subscription", sub->stream_name, "queue_bytes",
        (int64_t)atomic_load_explicit(&sub->sub->bytes, memory_order_relaxed));
    add(r, "subscription", sub->stream_name, "max_queue_bytes", sub->sub->max_bytes);
    add(r, "subscription", sub->stream_name, "dropped_batches",
        (int64_t)atomic_load_explicit(&sub->sub->dropped_batches, memory_order_relaxed));
    add(r, "subscription", sub->stream_name, "dropped_rows",
        (int64_t)atomic_load_explicit(&sub->sub->dropped_rows, memory_order_relaxed));
  }
  /* The reactors ("0" .. "N-1"; config `cores`). Reactor 0 drains the
   * sources and runs the unpartitioned streams and the merge; every reactor
   * runs its partition of the keyed streams (rows, rounds). */
  int64_t running = db->rt.started_ns != 0 ? lm_rt_now_ns() - db->rt.started_ns : 0;
  for (int32_t i = 0; i < db->rt.ncores; i++) {
    const lm_reactor* rx = &db->rt.reactors[i];
    const char* nm = lm_rt_reactor_name(i);
    int64_t busy = (int64_t)atomic_load_explicit(i == 0 ? &db->rt.busy_ns : &rx->busy_ns,
                                                 memory_order_relaxed);
    if (i == 0) {
      add(r, "reactor", nm, "messages",
          (int64_t)atomic_load_explicit(&db->rt.messages, memory_order_relaxed));
    }
    add(r, "reactor", nm, "busy_ns", busy);
    add(r, "reactor", nm, "running_ns", running);
    add(r, "reactor", nm, "busy_pct", running > 0 ? busy * 100 / running : 0);
    add(r, "reactor", nm, "rounds",
        (int64_t)atomic_load_explicit(&rx->rounds, memory_order_relaxed));
    add(r, "reactor", nm, "rows",
        (int64_t)atomic_load_explicit(&rx->rows, memory_order_relaxed));
    add(r, "reactor", nm, "cpu", atomic_load_explicit(&rx->cpu, memory_order_relaxed));
  }
  /* Kafka consumers (docs/KAFKA.md): records skipped, and whether the
   * consumer stopped on an error (its source gets nothing more). */
  for (int32_t i = 0; i < db->nconsumers; i++) {
    struct lm_kafka_source* k = db->consumers[i];
    if (lm_kafka_source_signaled(k)) continue; /* dropped */
    bool failed = false;
    add(r, "source", lm_kafka_source_name(k), "kafka_bad_records",
        lm_kafka_source_bad(k, NULL, 0, &failed));
    add(r, "source", lm_kafka_source_name(k), "kafka_failed", failed ? 1 : 0);
  }
  if (db->dur != NULL) {
    add(r, "database", "", "last_checkpoint", (int64_t)lm_durable_last_epoch(db->dur));
    add(r, "database", "", "last_checkpoint_stall_ns", lm_durable_last_stall_ns(db->dur));
    add(r, "database", "", "last_checkpoint_barrier_ns",
        lm_durable_last_barrier_ns(db->dur));
  }
}

laminar_code laminar_metrics(laminar_db* db, struct ArrowArrayStream* out,
                             laminar_error* err) {
  if (db == NULL || db->magic != LM_MAGIC_DB || out == NULL)
    return lm_error_set(err, LAMINAR_ERR_MISUSE, "laminar_metrics: invalid argument");
  out->release = NULL;
  rows r = {0};
  lm_schema schema;
  lm_schema_init_empty(&schema);
  bool ok = lm_schema_add(&schema, "kind", LM_TYPE_STRING, true) == 0 &&
            lm_schema_add(&schema, "name", LM_TYPE_STRING, true) == 0 &&
            lm_schema_add(&schema, "metric", LM_TYPE_STRING, true) == 0 &&
            lm_schema_add(&schema, "value", LM_TYPE_INT64, true) == 0;
  laminar_code rc = ok ? LAMINAR_OK : LAMINAR_ERR_NOMEM;
  pthread_mutex_lock(&db->lock);
  if (rc == LAMINAR_OK) {
    lm_rt_pause(&db->rt); /* the reactor's own counters hold still */
    collect(db, &r);
    lm_rt_resume(&db->rt);
    if (r.nomem) rc = LAMINAR_ERR_NOMEM;
  }
  if (rc == LAMINAR_OK) {
    /* Built while the names are alive (under the lock): the batch copies them. */
    lm_vec cols[4] = {{LM_TYPE_STRING, r.n, NULL, r.kind},
                      {LM_TYPE_STRING, r.n, NULL, r.name},
                      {LM_TYPE_STRING, r.n, NULL, r.metric},
                      {LM_TYPE_INT64, r.n, NULL, r.value}};
    lm_batch* batch;
    rc = lm_arrow_build(&schema, cols, r.n, &batch);
    if (rc == LAMINAR_OK) rc = lm_rows_stream(&schema, batch, out);
  }
  pthread_mutex_unlock(&db->lock);
  lm_schema_free(&schema);
  lm_free(r.kind);
  lm_free(r.name);
  lm_free(r.metric);
  lm_free(r.value);
  return rc == LAMINAR_OK ? LAMINAR_OK
                          : lm_error_set(err, rc, "laminar_metrics: out of memory");
}
