/*
 * pipeline.c -- laminar_pipeline_state: one row per part of the running
 * pipeline (the runtime, each source, stream / view, subscription and
 * reactor) saying what it is doing now, read with the graph paused.
 */
#include "db/internal.h"

#include <string.h>

#include "arrow/arrow.h"
#include "util/util.h"

enum { PCOLS = 8 };

typedef struct prow {
  const char* kind;
  const char* name;
  const char* state;
  const char* input;       /* NULL: none */
  int64_t watermark_ms;    /* INT64_MIN: none */
  int64_t depth, capacity; /* -1: none */
  int32_t partitions;      /* 0: none */
} prow;

/* Room a blocking subscriber needs before the reactor takes input (rt.h). */
static bool sub_blocks(const lm_sub* sub) {
  if (sub->drop_when_full) return false;
  return lm_ring_capacity(sub->ring) - lm_ring_size(sub->ring) < 2;
}

static bool stream_blocked(const lm_stream_def* s) {
  for (int32_t j = 0; j < s->nsubs; j++) {
    if (sub_blocks(s->subs[j])) return true;
  }
  return false;
}

/* idle | active | waiting (for run_until_idle) | blocked (a subscriber) | full */
static const char* input_state(bool queued, bool full, bool running, bool blocked) {
  if (!queued) return "idle";
  if (blocked) return "blocked";
  if (full) return "full";
  return running ? "active" : "waiting";
}

/* The source a stream reads, through upstream streams. */
static const lm_source_def* root_source(laminar_db* db, const lm_stream_def* s) {
  for (int depth = 0; depth < 1024 && s != NULL; depth++) {
    if (s->plan.input_is_source) return lm_db_find_source(db, s->plan.input);
    s = lm_db_find_stream(db, s->plan.input);
  }
  return NULL;
}

static int32_t collect(laminar_db* db, prow* rows) {
  lm_graph* g = &db->graph;
  bool running = db->rt.started;
  bool any_blocked = false;
  for (int32_t i = 0; i < g->nstreams; i++)
    any_blocked = any_blocked || stream_blocked(g->streams[i]);
  int64_t queued = 0;
  for (int32_t i = 0; i < g->nsources; i++)
    queued += (int64_t)lm_mpsc_size(g->sources[i]->queue);
  int32_t n = 0;
  const char* rt_state = db->rt.error != LAMINAR_OK ? "failed"
                         : !running                 ? "stopped"
                         : any_blocked && queued    ? "blocked"
                         : queued                   ? "active"
                                                    : "idle";
  rows[n++] = (prow){"runtime", "", rt_state, NULL, INT64_MIN, queued, -1, db->rt.ncores};
  for (int32_t i = 0; i < g->nsources; i++) {
    const lm_source_def* s = g->sources[i];
    int64_t depth = (int64_t)lm_mpsc_size(s->queue),
            cap = (int64_t)lm_mpsc_capacity(s->queue);
    rows[n++] = (prow){"source",
                       s->name,
                       input_state(depth > 0, depth >= cap, running, any_blocked),
                       NULL,
                       s->watermark_ms,
                       depth,
                       cap,
                       0};
  }
  for (int32_t i = 0; i < g->nstreams; i++) {
    const lm_stream_def* s = g->streams[i];
    const lm_source_def* src = root_source(db, s);
    int64_t depth = 0, cap = -1;
    for (int32_t j = 0; j < s->nsubs; j++) { /* the fullest subscriber */
      int64_t d = (int64_t)lm_ring_size(s->subs[j]->ring);
      if (cap < 0 || d > depth) {
        depth = d;
        cap = (int64_t)lm_ring_capacity(s->subs[j]->ring);
      }
    }
    bool in = src != NULL && lm_mpsc_size(src->queue) > 0;
    const char* state =
        stream_blocked(s) ? "blocked" : input_state(in, false, running, any_blocked);
    rows[n++] = (prow){lm_db_is_view(s) ? "materialized view" : "stream",
                       s->name,
                       state,
                       lm_plan_inputs(&s->plan),
                       s->watermark_ms,
                       cap < 0 ? -1 : depth,
                       cap,
                       s->nparts};
  }
  for (int32_t i = 0; i < db->nsubs; i++) {
    const laminar_subscription* sub = db->subs[i];
    if (sub->stream == NULL) continue;
    int64_t depth = (int64_t)lm_ring_size(sub->sub->ring);
    int64_t cap = (int64_t)lm_ring_capacity(sub->sub->ring);
    const char* state = depth >= cap
                            ? (sub->sub->drop_when_full ? "full_dropping" : "full")
                        : sub_blocks(sub->sub) ? "blocking"
                        : depth > 0            ? "lagging"
                                               : "caught_up";
    rows[n++] = (prow){"subscription",
                       sub->stream_name,
                       state,
                       sub->stream_name,
                       INT64_MIN,
                       depth,
                       cap,
                       0};
  }
  for (int32_t i = 0; i < db->rt.ncores; i++) {
    rows[n++] = (prow){"reactor",
                       lm_rt_reactor_name(i),
                       running ? "running" : "stopped",
                       NULL,
                       INT64_MIN,
                       -1,
                       -1,
                       0};
  }
  return n;
}

laminar_code laminar_pipeline_state(laminar_db* db, struct ArrowArrayStream* out,
                                    laminar_error* err) {
  if (db == NULL || db->magic != LM_MAGIC_DB || out == NULL)
    return lm_error_set(err, LAMINAR_ERR_MISUSE,
                        "laminar_pipeline_state: invalid argument");
  out->release = NULL;
  static const char* const names[PCOLS] = {
      "kind",         "name",        "state",          "input",
      "watermark_ms", "queue_depth", "queue_capacity", "partitions"};
  static const lm_type types[PCOLS] = {LM_TYPE_STRING, LM_TYPE_STRING, LM_TYPE_STRING,
                                       LM_TYPE_STRING, LM_TYPE_INT64,  LM_TYPE_INT64,
                                       LM_TYPE_INT64,  LM_TYPE_INT64};
  lm_schema schema;
  lm_schema_init_empty(&schema);
  laminar_code rc = LAMINAR_OK;
  for (int c = 0; c < PCOLS && rc == LAMINAR_OK; c++) {
    if (lm_schema_add(&schema, names[c], types[c], c < 3) != 0) rc = LAMINAR_ERR_NOMEM;
  }
  pthread_mutex_lock(&db->lock);
  int32_t cap = 1 + db->graph.nsources + db->graph.nstreams + db->nsubs + db->rt.ncores;
  prow* rows = lm_calloc((size_t)cap, sizeof *rows);
  lm_str* str = lm_calloc((size_t)cap * 4, sizeof *str);
  int64_t* num = lm_calloc((size_t)cap * 4, sizeof *num);
  uint8_t* nulls = lm_calloc((size_t)cap * 5, 1);
  if (rows == NULL || str == NULL || num == NULL || nulls == NULL) rc = LAMINAR_ERR_NOMEM;
  if (rc == LAMINAR_OK) {
    lm_rt_pause(&db->rt); /* reactor-only fields hold still */
    int32_t n = collect(db, rows);
    lm_rt_resume(&db->rt);
    /* Built while the names are alive (under the lock): the batch copies them. */
    lm_vec cols[PCOLS];
    for (int c = 0; c < PCOLS; c++) {
      bool text = types[c] == LM_TYPE_STRING;
      uint8_t* nl = c >= 3 ? nulls + (size_t)cap * (size_t)(c - 3) : NULL;
      void* data = text ? (void*)(str + (size_t)cap * (size_t)c)
                        : (void*)(num + (size_t)cap * (size_t)(c - 4));
      for (int32_t r = 0; r < n; r++) {
        const prow* p = &rows[r];
        if (text) {
          const char* v = c == 0   ? p->kind
                          : c == 1 ? p->name
                          : c == 2 ? p->state
                                   : p->input;
          ((lm_str*)data)[r] = (lm_str){v ? v : "", v ? (int64_t)strlen(v) : 0};
          if (nl != NULL) nl[r] = v == NULL;
        } else {
          int64_t v = c == 4   ? p->watermark_ms
                      : c == 5 ? p->depth
                      : c == 6 ? p->capacity
                               : p->partitions;
          bool none = c == 4 ? v == INT64_MIN : c == 7 ? v == 0 : v < 0;
          ((int64_t*)data)[r] = none ? 0 : v;
          nl[r] = none;
        }
      }
      cols[c] = (lm_vec){types[c], n, nl, data};
    }
    lm_batch* batch;
    rc = lm_arrow_build(&schema, cols, n, &batch);
    if (rc == LAMINAR_OK) rc = lm_rows_stream(&schema, batch, out);
  }
  pthread_mutex_unlock(&db->lock);
  lm_schema_free(&schema);
  lm_free(rows);
  lm_free(str);
  lm_free(num);
  lm_free(nulls);
  return rc == LAMINAR_OK
             ? LAMINAR_OK
             : lm_error_set(err, rc, "laminar_pipeline_state: out of memory");
}
