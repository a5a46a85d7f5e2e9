/*
 * handles.c -- producer handles (laminar_source_*) and subscriptions
 * (laminar_subscribe, laminar_subscription_*).
 *
 * A push runs on the producer's thread: import + validation of the Arrow
 * batch (src/arrow), then one SPSC ring push and a wake-up of the reactor. No
 * lock is taken on this path.
 */
#define _POSIX_C_SOURCE 200809L /* nanosleep */

#include "db/internal.h"

#include "store/wal.h"

#include "util/util.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

/* ---- bookkeeping of open handles (under db->lock) ----------------------------- */

static laminar_code remember(void*** arr, int32_t* n, void* handle) {
  void** grown = lm_realloc(*arr, sizeof(void*) * (size_t)(*n + 1));
  if (grown == NULL) return LAMINAR_ERR_NOMEM;
  grown[(*n)++] = handle;
  *arr = grown;
  return LAMINAR_OK;
}

static void forget(void** arr, int32_t* n, const void* handle) {
  for (int32_t i = 0; i < *n; i++) {
    if (arr[i] == handle) {
      arr[i] = arr[--(*n)];
      return;
    }
  }
}

/* ---- sources ----------------------------------------------------------------------- */

laminar_code laminar_source_open(laminar_db* db, const char* name, laminar_source** out,
                                 laminar_error* err) {
  if (out != NULL) *out = NULL;
  if (db == NULL || db->magic != LM_MAGIC_DB || name == NULL || out == NULL) {
    return lm_error_set(err, LAMINAR_ERR_MISUSE, "laminar_source_open: invalid argument");
  }
  pthread_mutex_lock(&db->lock);
  laminar_code rc = LAMINAR_OK;
  lm_source_def* def = lm_db_find_source(db, name);
  laminar_source* src = NULL;
  if (def == NULL) {
    rc = lm_error_set(err, LAMINAR_ERR_SQL_UNKNOWN_OBJECT, "no source named '%s'", name);
    lm_error_object(err, name, NULL);
    goto done;
  }
  bool expected = false;
  /* acq_rel: exactly one handle wins the producer side of the SPSC ring. */
  if (!atomic_compare_exchange_strong_explicit(&def->has_producer, &expected, true,
                                               memory_order_acq_rel, memory_order_acquire)) {
    rc = lm_error_set(err, LAMINAR_ERR_STATE,
                      "source '%s' already has an open producer handle (this version "
                      "allows one producer per source)",
                      name);
    lm_error_object(err, name, NULL);
    goto done;
  }
  src = lm_calloc(1, sizeof *src);
  if (src == NULL || remember((void***)&db->sources, &db->nsources, src) != LAMINAR_OK) {
    atomic_store_explicit(&def->has_producer, false, memory_order_release);
    lm_free(src);
    rc = lm_error_set(err, LAMINAR_ERR_NOMEM, "out of memory");
    goto done;
  }
  src->magic = LM_MAGIC_SOURCE;
  src->db = db;
  src->def = def;
  atomic_fetch_add_explicit(&def->refs, 1, memory_order_relaxed);
  *out = src;
done:
  pthread_mutex_unlock(&db->lock);
  return rc;
}

static bool source_ok(const laminar_source* s) {
  return s != NULL && s->magic == LM_MAGIC_SOURCE;
}

static laminar_code queue_full(const lm_source_def* def, laminar_error* err) {
  return lm_error_set(err, LAMINAR_ERR_QUEUE_FULL,
                      "source '%s': queue full (%u batches); call laminar_run_until_idle() "
                      "or laminar_start() to drain it",
                      def->name, lm_ring_capacity(def->ring));
}

/* Whether a push must be refused now for lack of room: the queue is full and
 * nothing may wait for it to drain (no reactor, or a non-blocking push).
 * Checked before anything is logged, so a refused message leaves no trace. */
static bool refuse_full(const laminar_source* src, bool wait) {
  const lm_source_def* def = src->def;
  return lm_ring_size(def->ring) >= lm_ring_capacity(def->ring) &&
         (!wait || !src->db->rt.started);
}

/* Enqueue a message; in threaded mode wait for room (block back-pressure). */
static laminar_code enqueue(laminar_source* src, lm_msg* msg, laminar_error* err) {
  lm_source_def* def = src->def;
  while (!lm_ring_push(def->ring, msg)) {
    if (!src->db->rt.started) {
      return queue_full(def, err);
    }
    if (atomic_load_explicit(&def->dropped, memory_order_acquire)) {
      return lm_error_set(err, LAMINAR_ERR_SOURCE_CLOSED, "source '%s' was dropped",
                          def->name);
    }
    lm_rt_notify(&src->db->rt);
    struct timespec ts = {0, 20000};
    nanosleep(&ts, NULL);
  }
  lm_rt_notify(&src->db->rt);
  return LAMINAR_OK;
}

/* laminar_source_push (wait: block for room while the reactor runs) and
 * laminar_source_try_push (never wait). */
static laminar_code push(laminar_source* src, struct ArrowArray* array,
                         const struct ArrowSchema* schema, bool wait, laminar_error* err) {
  if (!source_ok(src)) {
    return lm_error_set(err, LAMINAR_ERR_MISUSE, "invalid or closed source handle");
  }
  if (array == NULL || schema == NULL) {
    return lm_error_set(err, LAMINAR_ERR_MISUSE, "laminar_source_push: NULL array or schema");
  }
  lm_source_def* def = src->def;
  if (atomic_load_explicit(&def->dropped, memory_order_acquire)) {
    lm_error_set(err, LAMINAR_ERR_SOURCE_CLOSED, "source '%s' was dropped", def->name);
    lm_error_object(err, def->name, NULL);
    return LAMINAR_ERR_SOURCE_CLOSED;
  }
  if (refuse_full(src, wait)) return queue_full(def, err);
  lm_msg* msg = lm_malloc(sizeof *msg);
  if (msg == NULL) return lm_error_set(err, LAMINAR_ERR_NOMEM, "out of memory");
  /* Import moves the array only on success. */
  lm_batch* batch = NULL;
  laminar_code rc = lm_arrow_import(&def->schema, def->name, array, schema, &batch, err);
  if (rc != LAMINAR_OK) {
    lm_free(msg);
    return rc;
  }
  msg->batch = batch;
  msg->watermark_ms = INT64_MIN;
  msg->seq = 0;
  int64_t nrows = batch->nrows; /* once queued, the batch is the reactor's */
  /* Logged before it is queued: what the reactor takes is in the WAL. */
  if (def->wal != NULL) rc = lm_durable_log(def, msg, err);
  if (rc == LAMINAR_OK) rc = enqueue(src, msg, err);
  if (rc == LAMINAR_OK) {
    atomic_fetch_add_explicit(&def->pushed_batches, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&def->pushed_rows, nrows, memory_order_relaxed);
  }
  if (rc != LAMINAR_OK) {
    /* Give the array back untouched: the batch holds it as moved. */
    lm_arrow_move(&batch->array, array);
    lm_batch_unref(batch);
    lm_free(msg);
  }
  return rc;
}

laminar_code laminar_source_push(laminar_source* src, struct ArrowArray* array,
                                 const struct ArrowSchema* schema, laminar_error* err) {
  return push(src, array, schema, true, err);
}

laminar_code laminar_source_try_push(laminar_source* src, struct ArrowArray* array,
                                     const struct ArrowSchema* schema, laminar_error* err) {
  return push(src, array, schema, false, err);
}

laminar_code laminar_source_free_slots(laminar_source* src, int64_t* out, laminar_error* err) {
  if (!source_ok(src) || out == NULL) {
    return lm_error_set(err, LAMINAR_ERR_MISUSE, "laminar_source_free_slots: invalid argument");
  }
  const lm_ring* ring = src->def->ring;
  *out = (int64_t)lm_ring_capacity(ring) - (int64_t)lm_ring_size(ring);
  return LAMINAR_OK;
}

laminar_code laminar_source_watermark(laminar_source* src, int64_t watermark_ms,
                                      laminar_error* err) {
  if (!source_ok(src)) {
    return lm_error_set(err, LAMINAR_ERR_MISUSE, "invalid or closed source handle");
  }
  if (atomic_load_explicit(&src->def->dropped, memory_order_acquire)) {
    return lm_error_set(err, LAMINAR_ERR_SOURCE_CLOSED, "source '%s' was dropped",
                        src->def->name);
  }
  lm_msg* msg = lm_malloc(sizeof *msg);
  if (msg == NULL) return lm_error_set(err, LAMINAR_ERR_NOMEM, "out of memory");
  msg->batch = NULL;
  msg->watermark_ms = watermark_ms;
  msg->seq = 0;
  laminar_code rc = LAMINAR_OK;
  if (refuse_full(src, true)) rc = queue_full(src->def, err); /* before it is logged */
  if (rc == LAMINAR_OK && src->def->wal != NULL) rc = lm_durable_log(src->def, msg, err);
  if (rc == LAMINAR_OK) rc = enqueue(src, msg, err);
  if (rc != LAMINAR_OK) lm_free(msg);
  return rc;
}

laminar_code laminar_source_offset(laminar_source* src, int64_t* out, laminar_error* err) {
  if (!source_ok(src) || out == NULL) {
    return lm_error_set(err, LAMINAR_ERR_MISUSE, "laminar_source_offset: invalid argument");
  }
  *out = src->def->wal != NULL ? (int64_t)lm_wal_next_seq(src->def->wal) : 0;
  return LAMINAR_OK;
}

static void source_free(laminar_source* src) {
  atomic_store_explicit(&src->def->has_producer, false, memory_order_release);
  lm_source_def_unref(src->def);
  src->magic = LM_MAGIC_DEAD;
  lm_free(src);
}

void laminar_source_close(laminar_source* src) {
  if (!source_ok(src)) return;
  laminar_db* db = src->db;
  pthread_mutex_lock(&db->lock);
  forget((void**)db->sources, &db->nsources, src);
  source_free(src);
  pthread_mutex_unlock(&db->lock);
}

/* ---- subscriptions ------------------------------------------------------------------ */

laminar_code laminar_subscribe(laminar_db* db, const char* name, laminar_subscription** out,
                               laminar_error* err) {
  if (out != NULL) *out = NULL;
  if (db == NULL || db->magic != LM_MAGIC_DB || name == NULL || out == NULL) {
    return lm_error_set(err, LAMINAR_ERR_MISUSE, "laminar_subscribe: invalid argument");
  }
  pthread_mutex_lock(&db->lock);
  laminar_code rc = LAMINAR_OK;
  laminar_subscription* s = NULL;
  lm_stream_def* stream = lm_db_find_output(db, name); /* a stream, view or sink */
  if (stream == NULL) {
    rc = lm_error_set(err, LAMINAR_ERR_SQL_UNKNOWN_OBJECT,
                      "no stream, materialized view or sink named '%s'", name);
    lm_error_object(err, name, NULL);
    goto done;
  }
  s = lm_calloc(1, sizeof *s);
  if (s == NULL) goto nomem;
  /* The stream's or view's own spelling, or the sink's name as given. */
  s->stream_name = lm_strdup(lm_streq_nocase(stream->name, name) ? stream->name : name);
  if (s->stream_name == NULL || lm_schema_copy(&stream->out_schema, &s->schema) != 0 ||
      lm_sub_create(db->buffer_size, &s->sub) != LAMINAR_OK) {
    goto nomem;
  }
  if (remember((void***)&db->subs, &db->nsubs, s) != LAMINAR_OK) goto nomem;
  /* The reactor reads stream->subs: grow and publish it only while paused. */
  lm_rt_pause(&db->rt);
  lm_sub** grown = lm_realloc(stream->subs, sizeof(lm_sub*) * (size_t)(stream->nsubs + 1));
  if (grown != NULL) {
    stream->subs = grown;
    stream->subs[stream->nsubs++] = s->sub;
  }
  lm_rt_resume(&db->rt);
  if (grown == NULL) {
    forget((void**)db->subs, &db->nsubs, s);
    goto nomem;
  }
  s->magic = LM_MAGIC_SUB;
  s->db = db;
  s->stream = stream;
  *out = s;
  goto done;
nomem:
  if (s != NULL) {
    lm_sub_destroy(s->sub);
    lm_schema_free(&s->schema);
    lm_free(s->stream_name);
    lm_free(s);
  }
  rc = lm_error_set(err, LAMINAR_ERR_NOMEM, "out of memory");
done:
  pthread_mutex_unlock(&db->lock);
  return rc;
}

static bool sub_ok(const laminar_subscription* s) {
  return s != NULL && s->magic == LM_MAGIC_SUB;
}

static bool sub_ready(void* arg) {
  lm_sub* sub = arg;
  return lm_ring_size(sub->ring) > 0 || atomic_load_explicit(&sub->ended, memory_order_acquire);
}

/* Pop one batch into out/out_schema. true if one was there. */
static laminar_code pop_batch(laminar_subscription* s, struct ArrowArray* out,
                              struct ArrowSchema* out_schema, bool* out_got) {
  void* item;
  *out_got = false;
  /* Export first, take the batch off the queue after: when an export fails
   * (out of memory) the batch stays queued for the next call. */
  if (!lm_ring_peek(s->sub->ring, &item)) return LAMINAR_OK;
  lm_batch* batch = item;
  if (out_schema != NULL) LM_TRY(lm_arrow_schema_export(&s->schema, out_schema));
  laminar_code rc = lm_batch_export(batch, out);
  if (rc != LAMINAR_OK) {
    if (out_schema != NULL) out_schema->release(out_schema);
    return rc;
  }
  lm_ring_pop(s->sub->ring, &item);
  lm_batch_unref(batch);
  atomic_fetch_add_explicit(&s->delivered, 1, memory_order_relaxed);
  *out_got = true;
  return LAMINAR_OK;
}

laminar_code laminar_subscription_next(laminar_subscription* s, int64_t timeout_ms,
                                       struct ArrowArray* out, struct ArrowSchema* out_schema,
                                       laminar_error* err) {
  if (!sub_ok(s)) return lm_error_set(err, LAMINAR_ERR_MISUSE, "invalid or closed subscription");
  if (out == NULL) return lm_error_set(err, LAMINAR_ERR_MISUSE, "laminar_subscription_next: out is NULL");
  out->release = NULL;
  if (out_schema != NULL) out_schema->release = NULL;
  bool got;
  for (;;) {
    laminar_code rc = pop_batch(s, out, out_schema, &got);
    if (rc != LAMINAR_OK) return lm_error_set(err, rc, "cannot export a result batch");
    if (got) return LAMINAR_OK;
    if (atomic_load_explicit(&s->sub->ended, memory_order_acquire)) {
      /* ended was set after the last push: one more pop decides. */
      rc = pop_batch(s, out, out_schema, &got);
      if (rc != LAMINAR_OK) return lm_error_set(err, rc, "cannot export a result batch");
      if (got) return LAMINAR_OK;
      lm_error_set(err, LAMINAR_ERR_SUBSCRIPTION_CLOSED,
                   "subscription to '%s' ended: the stream was dropped or the database closed",
                   s->stream_name);
      lm_error_object(err, s->stream_name, NULL);
      return LAMINAR_ERR_SUBSCRIPTION_CLOSED;
    }
    if (timeout_ms == 0) return LAMINAR_OK;
    int64_t ns = timeout_ms < 0 ? -1 : timeout_ms * 1000000;
    if (!lm_waiter_wait(&s->sub->waiter, ns, sub_ready, s->sub)) return LAMINAR_OK;
  }
}

/* -- ArrowArrayStream over a subscription: yields what is queued, never waits -- */

static int sub_stream_get_schema(struct ArrowArrayStream* st, struct ArrowSchema* out) {
  laminar_subscription* s = st->private_data;
  return lm_arrow_schema_export(&s->schema, out) == LAMINAR_OK ? 0 : 12; /* ENOMEM */
}

static int sub_stream_get_next(struct ArrowArrayStream* st, struct ArrowArray* out) {
  laminar_subscription* s = st->private_data;
  out->release = NULL;
  bool got;
  if (pop_batch(s, out, NULL, &got) != LAMINAR_OK) {
    snprintf(s->stream_error, sizeof s->stream_error, "out of memory exporting a batch");
    return 12;
  }
  return 0;
}

static const char* sub_stream_last_error(struct ArrowArrayStream* st) {
  laminar_subscription* s = st->private_data;
  return s->stream_error[0] ? s->stream_error : NULL;
}

static void sub_stream_release(struct ArrowArrayStream* st) {
  st->release = NULL;
  st->private_data = NULL;
}

laminar_code laminar_subscription_stream(laminar_subscription* s, struct ArrowArrayStream* out,
                                         laminar_error* err) {
  if (!sub_ok(s) || out == NULL) {
    return lm_error_set(err, LAMINAR_ERR_MISUSE, "laminar_subscription_stream: invalid argument");
  }
  out->get_schema = sub_stream_get_schema;
  out->get_next = sub_stream_get_next;
  out->get_last_error = sub_stream_last_error;
  out->release = sub_stream_release;
  out->private_data = s;
  return LAMINAR_OK;
}

static void sub_free(laminar_db* db, laminar_subscription* s) {
  if (s->stream != NULL) {
    lm_stream_def* stream = s->stream;
    lm_rt_pause(&db->rt);
    for (int32_t i = 0; i < stream->nsubs; i++) {
      if (stream->subs[i] == s->sub) {
        stream->subs[i] = stream->subs[--stream->nsubs];
        break;
      }
    }
    lm_rt_resume(&db->rt);
  }
  lm_sub_destroy(s->sub);
  lm_schema_free(&s->schema);
  lm_free(s->stream_name);
  s->magic = LM_MAGIC_DEAD;
  lm_free(s);
}

void laminar_subscription_close(laminar_subscription* s) {
  if (!sub_ok(s)) return;
  laminar_db* db = s->db;
  pthread_mutex_lock(&db->lock);
  forget((void**)db->subs, &db->nsubs, s);
  sub_free(db, s);
  pthread_mutex_unlock(&db->lock);
}

/* A dropped stream: its subscriptions end (reactor paused by the caller). */
void lm_db_detach_stream_subs(laminar_db* db, lm_stream_def* stream) {
  for (int32_t i = 0; i < db->nsubs; i++) {
    laminar_subscription* s = db->subs[i];
    if (s->stream == stream) {
      s->stream = NULL;
      atomic_store_explicit(&s->sub->ended, true, memory_order_release);
      lm_waiter_notify(&s->sub->waiter);
    }
  }
  stream->nsubs = 0;
}

void lm_db_free_handles(laminar_db* db) {
  for (int32_t i = 0; i < db->nsubs; i++) {
    db->subs[i]->stream = NULL; /* the catalog is about to go */
    sub_free(db, db->subs[i]);
  }
  lm_free(db->subs);
  db->subs = NULL;
  db->nsubs = 0;
  for (int32_t i = 0; i < db->nsources; i++) source_free(db->sources[i]);
  lm_free(db->sources);
  db->sources = NULL;
  db->nsources = 0;
}
