/*
 * rows.c -- a one-batch ArrowArrayStream, used for the rows of SHOW and
 * DESCRIBE (laminar_query).
 */
#include "db/internal.h"

#include "util/util.h"

typedef struct rows_stream {
  lm_schema schema;
  lm_batch* batch; /* NULL once handed out */
} rows_stream;

static int rows_get_schema(struct ArrowArrayStream* st, struct ArrowSchema* out) {
  rows_stream* rs = st->private_data;
  return lm_arrow_schema_export(&rs->schema, out) == LAMINAR_OK ? 0 : 12; /* ENOMEM */
}

static int rows_get_next(struct ArrowArrayStream* st, struct ArrowArray* out) {
  rows_stream* rs = st->private_data;
  out->release = NULL;
  if (rs->batch == NULL) return 0; /* end of stream */
  if (lm_batch_export(rs->batch, out) != LAMINAR_OK) return 12;
  lm_batch_unref(rs->batch);
  rs->batch = NULL;
  return 0;
}

static const char* rows_last_error(struct ArrowArrayStream* st) {
  LM_UNUSED(st);
  return NULL;
}

static void rows_release(struct ArrowArrayStream* st) {
  rows_stream* rs = st->private_data;
  lm_batch_unref(rs->batch);
  lm_schema_free(&rs->schema);
  lm_free(rs);
  st->release = NULL;
  st->private_data = NULL;
}

laminar_code lm_rows_stream(const lm_schema* schema, lm_batch* batch,
                            struct ArrowArrayStream* out) {
  rows_stream* rs = lm_calloc(1, sizeof *rs);
  if (rs == NULL || lm_schema_copy(schema, &rs->schema) != 0) {
    lm_free(rs);
    lm_batch_unref(batch);
    return LAMINAR_ERR_NOMEM;
  }
  rs->batch = batch;
  out->get_schema = rows_get_schema;
  out->get_next = rows_get_next;
  out->get_last_error = rows_last_error;
  out->release = rows_release;
  out->private_data = rs;
  return LAMINAR_OK;
}
