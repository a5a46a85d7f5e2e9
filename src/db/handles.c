/*
 * handles.c -- producer handles (laminar_source_*) and subscriptions
 * (laminar_subscribe, laminar_subscription_*): the API shim.
 *
 * A push runs on the producer's thread: argument checks, the import and
 * validation of the Arrow batch (src/arrow), then the source queue's producer
 * side in rt/source.c (back-pressure, parking, deadlines, the WAL-order lock),
 * with the WAL append of db/durable handed to it as its log step.
 */
#include "db/internal.h"

#include "db/options.h"
#include "rt/source.h"

#include "util/util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
  if (def == NULL) def = lm_db_table_source(db, name); /* a table: its changelog */
  laminar_source* src = NULL;
  if (def == NULL &&
      (rc = lm_db_table_writable(db, name, "pushes", 0, 0, err)) != LAMINAR_OK)
    goto done;
  if (def == NULL) {
    rc = lm_error_set(err, LAMINAR_ERR_SQL_UNKNOWN_OBJECT, "no source named '%s'", name);
    lm_error_object(err, name, NULL);
    goto done;
  }
  if (lm_durable_read_only(db->dur)) { /* no producer: nothing is pushed or logged */
    rc = lm_durable_refuse_write(db->dur, "takes no pushes", err);
    lm_error_object(err, name, NULL);
    goto done;
  }
  int expected = 0;
  /* acq_rel: the first handle takes the producer side; the previous last
   * handle's pushes (released by its close) happen-before ours. */
  if (!atomic_compare_exchange_strong_explicit(
          &def->producers, &expected, 1, memory_order_acq_rel, memory_order_acquire)) {
    rc = lm_error_set(err, LAMINAR_ERR_STATE,
                      "source '%s' already has an open producer handle: clone it "
                      "(laminar_source_clone) for another producer thread",
                      name);
    lm_error_object(err, name, NULL);
    goto done;
  }
  src = lm_calloc(1, sizeof *src);
  if (src == NULL || remember((void***)&db->sources, &db->nsources, src) != LAMINAR_OK) {
    atomic_fetch_sub_explicit(&def->producers, 1, memory_order_acq_rel);
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

laminar_code laminar_source_clone(laminar_source* src, laminar_source** out,
                                  laminar_error* err) {
  if (out != NULL) *out = NULL;
  if (!source_ok(src) || out == NULL) {
    return lm_error_set(err, LAMINAR_ERR_MISUSE,
                        "laminar_source_clone: invalid argument");
  }
  laminar_db* db = src->db;
  lm_source_def* def = src->def;
  LM_TRY(lm_source_check_open(def, err));
  laminar_source* c = lm_calloc(1, sizeof *c);
  if (c == NULL) return lm_error_set(err, LAMINAR_ERR_NOMEM, "out of memory");
  pthread_mutex_lock(&db->lock);
  laminar_code rc = remember((void***)&db->sources, &db->nsources, c);
  if (rc == LAMINAR_OK) {
    /* The upgrade: the caller is the one producer of `src` (no push of its own
     * runs), and the clone reaches other threads only after this returns, so
     * every later push sees multi mode (chan/mpsc.h). Queued messages stay. */
    lm_mpsc_set_multi(def->queue);
    atomic_fetch_add_explicit(&def->producers, 1, memory_order_acq_rel);
    atomic_fetch_add_explicit(&def->refs, 1, memory_order_relaxed);
    c->magic = LM_MAGIC_SOURCE;
    c->db = db;
    c->def = def;
    *out = c;
  }
  pthread_mutex_unlock(&db->lock);
  if (rc != LAMINAR_OK) {
    lm_free(c);
    return lm_error_set(err, LAMINAR_ERR_NOMEM, "out of memory");
  }
  return LAMINAR_OK;
}

static lm_rt* source_rt(const laminar_source* src) { return &src->db->rt; }

/* lm_source_log's append for a WAL source: log msg (index i of the run),
 * handing it the array kept for the async writer when there is one. */
static laminar_code append_to_wal(void* arg, lm_source_def* def, lm_msg* msg, int64_t i,
                                  laminar_error* err) {
  lm_arrow_kept** kept = arg;
  lm_arrow_kept* mine = NULL;
  if (kept != NULL) {
    mine = kept[i];
    kept[i] = NULL; /* lm_durable_log's now */
  }
  return lm_durable_log(def, msg, mine, err);
}

/* How src's messages are made durable (rt/source.h): logged with a WAL,
 * numbered in a durable database without one, else neither. */
static lm_source_log source_log(const laminar_source* src, lm_arrow_kept** kept) {
  if (src->def->wal != NULL) return (lm_source_log){append_to_wal, kept, false};
  return (lm_source_log){NULL, NULL, src->db->dur != NULL};
}

/* Push arrays[0..n) described by one schema: import (validate) all, then log
 * and enqueue them in order (rt/source.c). All or nothing, except that a
 * source dropped or a runtime stopped while a run longer than the queue waits
 * for room leaves the first *out_pushed arrays ingested. */
static laminar_code push_many(laminar_source* src, struct ArrowArray* arrays, int64_t n,
                              const struct ArrowSchema* schema, const lm_push_wait* how,
                              int64_t* out_pushed, laminar_error* err) {
  if (out_pushed != NULL) *out_pushed = 0;
  if (!source_ok(src)) {
    return lm_error_set(err, LAMINAR_ERR_MISUSE, "invalid or closed source handle");
  }
  if (arrays == NULL || schema == NULL || n < 0 || n > (int64_t)UINT32_MAX) {
    return lm_error_set(err, LAMINAR_ERR_MISUSE,
                        "laminar_source_push: NULL array or schema, or a bad count");
  }
  if (n == 0) return LAMINAR_OK;
  lm_source_def* def = src->def;
  LM_TRY(lm_source_check_open(def, err));
  lm_source_log log = source_log(src, NULL);
  LM_TRY(lm_source_admit(source_rt(src), def, n, how, &log, err));
  lm_msg* one;
  lm_msg** msgs = n == 1 ? &one : lm_calloc((size_t)n, sizeof *msgs);
  if (msgs == NULL) return lm_error_set(err, LAMINAR_ERR_NOMEM, "out of memory");
  /* Async log, runtime not started (this thread runs the engine too, in
   * run_until_idle): the log's writer makes each record from the array,
   * kept for it (lm_durable_log). */
  bool keep = def->wal != NULL && !def->wal_sync &&
              !atomic_load_explicit(&src->db->rt.started, memory_order_relaxed);
  lm_arrow_kept* one_kept = NULL;
  lm_arrow_kept** kept = NULL;
  if (keep) {
    kept = n == 1 ? &one_kept : lm_calloc((size_t)n, sizeof *kept);
    if (kept == NULL) {
      if (msgs != &one) lm_free(msgs);
      return lm_error_set(err, LAMINAR_ERR_NOMEM, "out of memory");
    }
  }
  laminar_code rc = LAMINAR_OK;
  int64_t imported = 0, queued = 0;
  for (; imported < n; imported++) {
    lm_msg* msg = lm_malloc(sizeof *msg);
    if (msg == NULL) {
      rc = lm_error_set(err, LAMINAR_ERR_NOMEM, "out of memory");
      break;
    }
    /* Import moves the array only on success. */
    lm_batch* batch = NULL;
    rc = keep ? lm_arrow_import_kept(&def->schema, def->name, &arrays[imported], schema,
                                     &batch, &kept[imported], err)
              : lm_arrow_import(&def->schema, def->name, &arrays[imported], schema,
                                &batch, err);
    if (rc != LAMINAR_OK) {
      lm_free(msg);
      if (n > 1 && err != NULL) { /* say which array */
        char text[sizeof err->message];
        snprintf(text, sizeof text, "%.960s (array %lld of %lld)", err->message,
                 (long long)imported, (long long)n);
        memcpy(err->message, text, sizeof text);
      }
      break;
    }
    msg->batch = batch;
    msg->watermark_ms = INT64_MIN;
    msg->seq = 0;
    msg->idle = 0;
    msgs[imported] = msg;
  }
  if (rc == LAMINAR_OK) {
    log = source_log(src, kept);
    rc = lm_source_enqueue(source_rt(src), def, msgs, n, how, &log, &queued, err);
  }
  /* Give what did not go in back untouched: each batch holds its array as moved. */
  for (int64_t k = queued; k < imported; k++) {
    lm_arrow_move(&msgs[k]->batch->array, &arrays[k]);
    lm_msg_free(msgs[k]);
  }
  if (msgs != &one) lm_free(msgs);
  if (kept != NULL) {
    for (int64_t k = queued; k < imported; k++) lm_arrow_kept_free(kept[k]);
    if (kept != &one_kept) lm_free(kept);
  }
  if (out_pushed != NULL) *out_pushed = queued;
  return rc;
}

laminar_code lm_db_table_push(laminar_db* db, lm_source_def* def,
                              struct ArrowArray* array, const struct ArrowSchema* schema,
                              laminar_error* err) {
  int expected = 0;
  /* The producer side for this one push (acq_rel, as laminar_source_open). */
  if (!atomic_compare_exchange_strong_explicit(
          &def->producers, &expected, 1, memory_order_acq_rel, memory_order_acquire)) {
    lm_error_set(err, LAMINAR_ERR_STATE,
                 "table '%s' has an open producer handle: write through it (or close "
                 "it first)",
                 def->table);
    lm_error_object(err, def->table, NULL);
    return LAMINAR_ERR_STATE;
  }
  laminar_source src = {LM_MAGIC_SOURCE, db, def};
  /* As laminar_source_push: waits for room while the runtime runs, a full
   * queue is LAMINAR_ERR_QUEUE_FULL when it does not. */
  lm_push_wait how = lm_push_wait_forever();
  laminar_code rc = push_many(&src, array, 1, schema, &how, NULL, err);
  atomic_fetch_sub_explicit(&def->producers, 1, memory_order_acq_rel);
  return rc;
}

laminar_code laminar_source_push(laminar_source* src, struct ArrowArray* array,
                                 const struct ArrowSchema* schema, laminar_error* err) {
  lm_push_wait how = lm_push_wait_forever();
  return push_many(src, array, 1, schema, &how, NULL, err);
}

laminar_code laminar_source_try_push(laminar_source* src, struct ArrowArray* array,
                                     const struct ArrowSchema* schema,
                                     laminar_error* err) {
  lm_push_wait how = lm_push_no_wait();
  return push_many(src, array, 1, schema, &how, NULL, err);
}

laminar_code laminar_source_push_timeout(laminar_source* src, struct ArrowArray* array,
                                         const struct ArrowSchema* schema,
                                         int64_t timeout_ms, laminar_error* err) {
  lm_push_wait how = lm_push_wait_for(timeout_ms);
  return push_many(src, array, 1, schema, &how, NULL, err);
}

laminar_code laminar_source_push_batch(laminar_source* src, struct ArrowArray* arrays,
                                       int64_t n, const struct ArrowSchema* schema,
                                       int64_t* out_pushed, laminar_error* err) {
  lm_push_wait how = lm_push_wait_forever();
  return push_many(src, arrays, n, schema, &how, out_pushed, err);
}

/* The release of validate's borrowed copy: the producer's array is not ours. */
static void borrowed_release(struct ArrowArray* array) { array->release = NULL; }

laminar_code laminar_source_validate(laminar_source* src, const struct ArrowArray* array,
                                     const struct ArrowSchema* schema,
                                     laminar_error* err) {
  if (!source_ok(src) || array == NULL || schema == NULL) {
    return lm_error_set(
        err, LAMINAR_ERR_MISUSE,
        "laminar_source_validate: invalid handle, or NULL array or schema");
  }
  lm_source_def* def = src->def;
  LM_TRY(lm_source_check_open(def, err));
  /* The import a push makes, of a copy whose release does nothing: the
   * batch it builds views the producer's buffers and goes at once. */
  struct ArrowArray copy = *array;
  if (copy.release != NULL) copy.release = borrowed_release;
  lm_batch* batch = NULL;
  laminar_code rc = lm_arrow_import(&def->schema, def->name, &copy, schema, &batch, err);
  if (batch != NULL) lm_batch_unref(batch);
  return rc;
}

laminar_code laminar_source_push_batch_timeout(laminar_source* src,
                                               struct ArrowArray* arrays, int64_t n,
                                               const struct ArrowSchema* schema,
                                               int64_t timeout_ms, int64_t* out_pushed,
                                               laminar_error* err) {
  lm_push_wait how = lm_push_wait_for(timeout_ms);
  return push_many(src, arrays, n, schema, &how, out_pushed, err);
}

laminar_code laminar_source_free_slots(laminar_source* src, int64_t* out,
                                       laminar_error* err) {
  if (!source_ok(src) || out == NULL) {
    return lm_error_set(err, LAMINAR_ERR_MISUSE,
                        "laminar_source_free_slots: invalid argument");
  }
  *out = lm_source_free_slots(src->def);
  return LAMINAR_OK;
}

laminar_code laminar_source_has_capacity(laminar_source* src, int64_t n, int32_t* out,
                                         laminar_error* err) {
  int64_t free_slots;
  if (out == NULL || n < 0) {
    return lm_error_set(err, LAMINAR_ERR_MISUSE,
                        "laminar_source_has_capacity: invalid argument");
  }
  LM_TRY(laminar_source_free_slots(src, &free_slots, err));
  *out = free_slots >= n ? 1 : 0;
  return LAMINAR_OK;
}

/* Queue a message without a batch: an explicit watermark (idle 0, logged as
 * the source's records are), or a change of idleness (idle 1 / -1: not
 * logged, it takes no offset; a replay opens every source active). */
static laminar_code control_msg(laminar_source* src, int64_t watermark_ms, int8_t idle,
                                const lm_push_wait* how, laminar_error* err) {
  if (!source_ok(src)) {
    return lm_error_set(err, LAMINAR_ERR_MISUSE, "invalid or closed source handle");
  }
  lm_source_def* def = src->def;
  LM_TRY(lm_source_check_open(def, err));
  lm_msg* msg = lm_malloc(sizeof *msg);
  if (msg == NULL) return lm_error_set(err, LAMINAR_ERR_NOMEM, "out of memory");
  msg->batch = NULL;
  msg->watermark_ms = watermark_ms;
  msg->seq = 0;
  msg->idle = idle;
  lm_source_log log =
      idle != 0 ? (lm_source_log){NULL, NULL, false} : source_log(src, NULL);
  laminar_code rc = lm_source_enqueue(source_rt(src), def, &msg, 1, how, &log, NULL, err);
  if (rc != LAMINAR_OK) lm_free(msg);
  return rc;
}

static laminar_code watermark(laminar_source* src, int64_t watermark_ms,
                              const lm_push_wait* how, laminar_error* err) {
  return control_msg(src, watermark_ms, 0, how, err);
}

laminar_code laminar_source_set_idle(laminar_source* src, int32_t idle,
                                     laminar_error* err) {
  lm_push_wait how = lm_push_wait_forever();
  return control_msg(src, INT64_MIN, idle != 0 ? 1 : -1, &how, err);
}

laminar_code laminar_source_watermark(laminar_source* src, int64_t watermark_ms,
                                      laminar_error* err) {
  lm_push_wait how = lm_push_wait_forever();
  return watermark(src, watermark_ms, &how, err);
}

laminar_code laminar_source_watermark_timeout(laminar_source* src, int64_t watermark_ms,
                                              int64_t timeout_ms, laminar_error* err) {
  lm_push_wait how = lm_push_wait_for(timeout_ms);
  return watermark(src, watermark_ms, &how, err);
}

laminar_code laminar_source_offset(laminar_source* src, int64_t* out,
                                   laminar_error* err) {
  if (!source_ok(src) || out == NULL) {
    return lm_error_set(err, LAMINAR_ERR_MISUSE,
                        "laminar_source_offset: invalid argument");
  }
  *out = lm_source_next_offset(src->def, src->db->dur != NULL);
  return LAMINAR_OK;
}

static void source_free(laminar_source* src) {
  /* acq_rel: this handle's pushes happen-before a later open's (see open). */
  atomic_fetch_sub_explicit(&src->def->producers, 1, memory_order_acq_rel);
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

/* A subscription's options (LAMINAR_SCOPE_SUBSCRIPTION rows of the option
 * table); the database's settings until set. */
typedef struct sub_options {
  uint32_t buffer_size;
  bool drop_when_full;
  lm_wait wait;
  int64_t max_queue_bytes;
} sub_options;

static laminar_code set_sub_option(sub_options* o, const char* key, const char* value,
                                   laminar_error* err) {
  const lm_option* row;
  lm_option_value v;
  LM_TRY(lm_option_parse_text(LAMINAR_SCOPE_SUBSCRIPTION, key, value, &row, &v, err));
  switch (lm_option_row_id(row)) {
    case LM_OPT_BUFFER_SIZE: o->buffer_size = (uint32_t)v.i; break;
    case LM_OPT_SLOW_SUBSCRIBER: o->drop_when_full = v.i == 1; break; /* "block | drop" */
    case LM_OPT_WAIT_STRATEGY: o->wait = v.wait; break;
    case LM_OPT_MAX_QUEUE_BYTES: o->max_queue_bytes = v.i; break;
    default:
      return lm_error_set(err, LAMINAR_ERR_INTERNAL, "subscription option '%s'", key);
  }
  return LAMINAR_OK;
}

/* Copy the next `key = value` of "k = v, k = 'v'" into key/value; the rest
 * of the text after it, or NULL at the end. *out_ok false on a malformed item. */
static const char* next_option(const char* s, char* key, size_t kcap, char* value,
                               size_t vcap, bool* out_ok) {
  *out_ok = false;
  while (*s == ' ' || *s == '\t' || *s == ',') s++;
  if (*s == '\0') {
    *out_ok = true;
    return NULL;
  }
  size_t k = 0;
  while (*s != '\0' && *s != '=' && *s != ',') {
    if (k + 1 < kcap && *s != ' ' && *s != '\t') key[k++] = *s;
    s++;
  }
  key[k] = '\0';
  if (*s != '=' || k == 0) return NULL;
  s++;
  while (*s == ' ' || *s == '\t') s++;
  char quote = (*s == '\'' || *s == '"') ? *s++ : 0;
  size_t v = 0;
  while (*s != '\0' && (quote ? *s != quote : *s != ',')) {
    if (v + 1 < vcap) value[v++] = *s;
    s++;
  }
  if (quote) {
    if (*s != quote) return NULL;
    s++;
  }
  while (v > 0 && (value[v - 1] == ' ' || value[v - 1] == '\t')) v--;
  value[v] = '\0';
  *out_ok = true;
  return s;
}

/* laminar_subscribe_with()'s text form: "key = value, key = 'value'". */
static laminar_code parse_sub_options(const char* text, sub_options* o,
                                      laminar_error* err) {
  const char* s = text;
  while (s != NULL) {
    char key[64], value[64];
    bool ok;
    s = next_option(s, key, sizeof key, value, sizeof value, &ok);
    if (!ok) {
      return lm_error_set(err, LAMINAR_ERR_CONFIG_VALUE,
                          "subscription options: expected 'key = value, ...', got '%s'",
                          text);
    }
    if (s != NULL) LM_TRY(set_sub_option(o, key, value, err));
  }
  return LAMINAR_OK;
}

static laminar_code subscribe(laminar_db* db, const char* name, const sub_options* opts,
                              laminar_subscription** out, laminar_error* err);

laminar_code laminar_subscription_open(laminar_db* db, const char* name,
                                       const char* const* keys, const char* const* values,
                                       int32_t noptions, laminar_subscription** out,
                                       laminar_error* err) {
  if (out != NULL) *out = NULL;
  if (db == NULL || db->magic != LM_MAGIC_DB || name == NULL || out == NULL ||
      noptions < 0 || (noptions > 0 && (keys == NULL || values == NULL))) {
    return lm_error_set(err, LAMINAR_ERR_MISUSE,
                        "laminar_subscription_open: invalid argument");
  }
  sub_options opts = {db->buffer_size, db->slow_drop, db->wait, db->max_queue_bytes};
  for (int32_t i = 0; i < noptions; i++) {
    if (keys[i] == NULL || values[i] == NULL)
      return lm_error_set(err, LAMINAR_ERR_MISUSE,
                          "laminar_subscription_open: option %d has a NULL key or value",
                          (int)i);
    LM_TRY(set_sub_option(&opts, keys[i], values[i], err));
  }
  return subscribe(db, name, &opts, out, err);
}

laminar_code laminar_subscribe(laminar_db* db, const char* name,
                               laminar_subscription** out, laminar_error* err) {
  return laminar_subscription_open(db, name, NULL, NULL, 0, out, err);
}

laminar_code laminar_subscribe_with(laminar_db* db, const char* name, const char* options,
                                    laminar_subscription** out, laminar_error* err) {
  if (out != NULL) *out = NULL;
  if (db == NULL || db->magic != LM_MAGIC_DB || name == NULL || out == NULL) {
    return lm_error_set(err, LAMINAR_ERR_MISUSE,
                        "laminar_subscribe_with: invalid argument");
  }
  sub_options opts = {db->buffer_size, db->slow_drop, db->wait, db->max_queue_bytes};
  if (options != NULL) LM_TRY(parse_sub_options(options, &opts, err));
  return subscribe(db, name, &opts, out, err);
}

static laminar_code subscribe(laminar_db* db, const char* name, const sub_options* o,
                              laminar_subscription** out, laminar_error* err) {
  sub_options opts = *o;
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
      lm_sub_create(opts.buffer_size, &s->sub) != LAMINAR_OK) {
    goto nomem;
  }
  s->sub->drop_when_full = opts.drop_when_full;
  s->sub->wait = opts.wait;
  s->sub->max_bytes = opts.max_queue_bytes;
  if (remember((void***)&db->subs, &db->nsubs, s) != LAMINAR_OK) goto nomem;
  /* The reactor reads stream->subs: grow and publish it only while paused. */
  lm_rt_pause(&db->rt);
  lm_sub** grown =
      lm_realloc(stream->subs, sizeof(lm_sub*) * (size_t)(stream->nsubs + 1));
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
  return lm_ring_size(sub->ring) > 0 ||
         atomic_load_explicit(&sub->ended, memory_order_acquire);
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
  atomic_fetch_sub_explicit(&s->sub->bytes, batch->bytes, memory_order_relaxed);
  lm_batch_unref(batch);
  atomic_fetch_add_explicit(&s->delivered, 1, memory_order_relaxed);
  *out_got = true;
  return LAMINAR_OK;
}

laminar_code laminar_subscription_next(laminar_subscription* s, int64_t timeout_ms,
                                       struct ArrowArray* out,
                                       struct ArrowSchema* out_schema,
                                       laminar_error* err) {
  if (!sub_ok(s))
    return lm_error_set(err, LAMINAR_ERR_MISUSE, "invalid or closed subscription");
  if (out == NULL)
    return lm_error_set(err, LAMINAR_ERR_MISUSE,
                        "laminar_subscription_next: out is NULL");
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
      lm_error_set(
          err, LAMINAR_ERR_SUBSCRIPTION_CLOSED,
          "subscription to '%s' ended: the stream was dropped or the database closed",
          s->stream_name);
      lm_error_object(err, s->stream_name, NULL);
      return LAMINAR_ERR_SUBSCRIPTION_CLOSED;
    }
    if (timeout_ms == 0) return LAMINAR_OK;
    int64_t ns =
        timeout_ms < 0 || timeout_ms > INT64_MAX / 1000000 ? -1 : timeout_ms * 1000000;
    if (!lm_wait_until(&s->sub->wait, &s->sub->waiter, ns, sub_ready, s->sub)) {
      return LAMINAR_OK;
    }
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

laminar_code laminar_subscription_stream(laminar_subscription* s,
                                         struct ArrowArrayStream* out,
                                         laminar_error* err) {
  if (!sub_ok(s) || out == NULL) {
    return lm_error_set(err, LAMINAR_ERR_MISUSE,
                        "laminar_subscription_stream: invalid argument");
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
