/*
 * callback.c -- a sink whose protocol steps are the application's callbacks
 * (laminar_sink_callbacks; see sink.h).
 */
#include "sink/sink.h"

#include <inttypes.h>
#include <string.h>

#include "arrow/arrow.h"
#include "util/util.h"

typedef struct callback_sink {
  lm_sink base;
  char* name;
  lm_schema schema;
  laminar_sink_callbacks cb;
  uint64_t current; /* open epoch, 0: none */
} callback_sink;

static laminar_code failed(const callback_sink* s, const char* step, int rc,
                           laminar_error* err) {
  laminar_code code =
      lm_error_set(err, LAMINAR_ERR_IO, "sink '%s': %s failed (connector returned %d)",
                   s->name, step, rc);
  lm_error_object(err, s->name, NULL);
  return code;
}

static laminar_code cb_write(lm_sink* base, const lm_vec* cols, int64_t nrows,
                             laminar_error* err) {
  callback_sink* s = (callback_sink*)base;
  if (nrows == 0 || s->cb.write == NULL) return LAMINAR_OK;
  lm_batch* batch;
  LM_TRY(lm_arrow_build(&s->schema, cols, nrows, &batch));
  struct ArrowArray array;
  struct ArrowSchema schema;
  laminar_code rc = lm_batch_export(batch, &array);
  lm_batch_unref(batch);
  if (rc != LAMINAR_OK) return lm_error_set(err, rc, "sink '%s': out of memory", s->name);
  rc = lm_arrow_schema_export(&s->schema, &schema);
  if (rc != LAMINAR_OK) {
    array.release(&array);
    return lm_error_set(err, rc, "sink '%s': out of memory", s->name);
  }
  /* Both are the connector's from here, whatever it returns. */
  int r = s->cb.write(s->cb.user, &array, &schema);
  return r == 0 ? LAMINAR_OK : failed(s, "write", r, err);
}

static laminar_code cb_begin(lm_sink* base, uint64_t epoch, laminar_error* err) {
  callback_sink* s = (callback_sink*)base;
  int r = s->cb.begin_epoch != NULL ? s->cb.begin_epoch(s->cb.user, epoch) : 0;
  if (r != 0) return failed(s, "begin_epoch", r, err);
  s->current = epoch;
  return LAMINAR_OK;
}

static laminar_code cb_pre_commit(lm_sink* base, laminar_error* err) {
  callback_sink* s = (callback_sink*)base;
  if (s->current == 0)
    return lm_error_set(err, LAMINAR_ERR_STATE, "sink '%s': no epoch to pre-commit",
                        s->name);
  int r = s->cb.pre_commit != NULL ? s->cb.pre_commit(s->cb.user, s->current) : 0;
  if (r != 0) return failed(s, "pre_commit", r, err);
  s->current = 0;
  return LAMINAR_OK;
}

static laminar_code cb_commit(lm_sink* base, uint64_t epoch, laminar_error* err) {
  callback_sink* s = (callback_sink*)base;
  int r = s->cb.commit != NULL ? s->cb.commit(s->cb.user, epoch) : 0;
  return r == 0 ? LAMINAR_OK : failed(s, "commit", r, err);
}

static laminar_code cb_recover(lm_sink* base, uint64_t checkpointed, laminar_error* err) {
  callback_sink* s = (callback_sink*)base;
  s->current = 0;
  int r = s->cb.recover != NULL ? s->cb.recover(s->cb.user, checkpointed) : 0;
  return r == 0 ? LAMINAR_OK : failed(s, "recover", r, err);
}

static void cb_close(lm_sink* base) {
  callback_sink* s = (callback_sink*)base;
  /* An epoch still open was never pre-committed: the connector drops it. */
  if (s->current != 0 && s->cb.rollback != NULL)
    (void)s->cb.rollback(s->cb.user, s->current);
  if (s->cb.release != NULL) s->cb.release(s->cb.user);
  lm_schema_free(&s->schema);
  lm_free(s->name);
  lm_free(s);
}

/* The connector's pre_commit runs with the graph stopped (it may not be
 * safe against a concurrent write of the next epoch): no separate sync. */
static const lm_sink_vt CALLBACK_VT = {.write = cb_write,
                                       .begin = cb_begin,
                                       .pre_commit = cb_pre_commit,
                                       .sync = NULL,
                                       .commit = cb_commit,
                                       .recover = cb_recover,
                                       .close = cb_close};

laminar_code lm_callback_sink_create(const char* name, const lm_schema* schema,
                                     const laminar_sink_callbacks* cb, lm_sink** out,
                                     laminar_error* err) {
  *out = NULL;
  callback_sink* s = lm_calloc(1, sizeof *s);
  if (s == NULL) return lm_error_set(err, LAMINAR_ERR_NOMEM, "out of memory");
  s->base.vt = &CALLBACK_VT;
  s->cb = *cb;
  s->name = lm_strdup(name);
  if (s->name == NULL || lm_schema_copy(schema, &s->schema) != 0) {
    lm_free(s->name);
    lm_schema_free(&s->schema);
    lm_free(s);
    return lm_error_set(err, LAMINAR_ERR_NOMEM, "out of memory");
  }
  *out = &s->base;
  return LAMINAR_OK;
}

void lm_callback_sink_own(lm_sink* base, void (*release)(void* user)) {
  ((callback_sink*)lm_sink_queue_inner(base))->cb.release = release;
}
