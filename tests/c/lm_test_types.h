/*
 * lm_test_types.h -- the restart check the type tests share (issue 25 item
 * 1): a running aggregate keyed by a column of the type under test, fed six
 * batches, once uninterrupted and once with a checkpoint, a close and a
 * restart after the third batch; the changelogs after the restart must be
 * equal (the keys and MIN/MAX states came back from the snapshot). Values are
 * compared as text: utf8 as is, float32 as %.9g (every float reads back from
 * 9 digits), binary as "x" and hex, the rest as integers.
 */
#ifndef LM_TEST_TYPES_H
#define LM_TEST_TYPES_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE  // mkdtemp under -std=c17
#endif

#include "lm_test.h"
#include "lm_test_fs.h"
#include "nanoarrow/nanoarrow.h"

/* Push a built batch (array, schema: released here) into source `name`. */
static inline int lm_test_push_built(laminar_db* db, const char* name,
                                     struct ArrowArray* array, struct ArrowSchema* schema,
                                     laminar_error* err) {
  laminar_source* src = NULL;
  int rc = laminar_source_open(db, name, &src, err);
  if (rc == LAMINAR_OK) rc = laminar_source_push(src, array, schema, err);
  laminar_source_close(src);
  if (array->release != NULL) array->release(array);
  schema->release(schema);
  return rc;
}

/* Push a built batch (array, schema) the source must refuse with
 * LAMINAR_ERR_COLUMN_TYPE, whole (the array stays the caller's), naming
 * `column` and `type`; released here. 0, or 1 (a check failed). */
static inline int lm_test_push_refused(laminar_source* src, struct ArrowArray* array,
                                       struct ArrowSchema* schema, const char* column,
                                       const char* type, laminar_error* err) {
  CHECK_CODE(laminar_source_push(src, array, schema, err), LAMINAR_ERR_COLUMN_TYPE, err);
  CHECK(array->release != NULL); /* refused whole: still the caller's */
  CHECK(strstr(err->message, column) != NULL && strstr(err->message, type) != NULL);
  array->release(array);
  schema->release(schema);
  return 0;
}

/* Push batch `b` (0..5) of the test's input into its source. */
typedef int (*lm_test_push_batch)(laminar_db* db, int b, laminar_error* err);

/* One cell of row r as text at buf + at; returns the new length. */
static inline size_t lm_test_cell_text(const struct ArrowArrayView* v, const char* format,
                                       int64_t r, char* buf, size_t at, size_t cap) {
  if (ArrowArrayViewIsNull(v, r))
    return at + (size_t)snprintf(buf + at, cap - at, "null");
  if (strcmp(format, "u") == 0) {
    struct ArrowStringView s = ArrowArrayViewGetStringUnsafe(v, r);
    return at + (size_t)snprintf(buf + at, cap - at, "%.*s", (int)s.size_bytes, s.data);
  }
  if (strcmp(format, "f") == 0) {
    float f = v->buffer_views[1].data.as_float[v->offset + r];
    return at + (size_t)snprintf(buf + at, cap - at, "%.9g", (double)f);
  }
  if (strcmp(format, "z") == 0 || strcmp(format, "Z") == 0) {
    struct ArrowBufferView b = ArrowArrayViewGetBytesUnsafe(v, r);
    at += (size_t)snprintf(buf + at, cap - at, "x");
    for (int64_t i = 0; i < b.size_bytes; i++)
      at += (size_t)snprintf(buf + at, cap - at, "%02x", b.data.as_uint8[i]);
    return at;
  }
  return at + (size_t)snprintf(buf + at, cap - at, "%lld",
                               (long long)ArrowArrayViewGetIntUnsafe(v, r));
}

/* Rows of `sub`'s next batches as text "c0|c1|...;" appended to buf. */
static inline int lm_test_drain_text(laminar_subscription* sub, char* buf, size_t cap) {
  laminar_error err;
  for (;;) {
    struct ArrowArray out;
    struct ArrowSchema schema;
    CHECK_CODE(laminar_subscription_next(sub, 0, &out, &schema, &err), LAMINAR_OK, &err);
    if (out.release == NULL) return 0;
    struct ArrowArrayView view;
    struct ArrowError error;
    CHECK(ArrowArrayViewInitFromSchema(&view, &schema, &error) == NANOARROW_OK);
    CHECK(ArrowArrayViewSetArray(&view, &out, &error) == NANOARROW_OK);
    for (int64_t r = 0; r < out.length; r++) {
      size_t at = strlen(buf);
      for (int c = 0; c < out.n_children; c++) {
        at += (size_t)snprintf(buf + at, cap - at, c ? "|" : "");
        at = lm_test_cell_text(view.children[c], schema.children[c]->format, r, buf, at,
                               cap);
      }
      snprintf(buf + at, cap - at, ";");
    }
    ArrowArrayViewReset(&view);
    out.release(&out);
    schema.release(&schema);
  }
}

/* The EMIT CHANGES output of `running` over batches [0, 6) after the last
 * batch: one run, or a checkpoint after batch 2, a close and a restart
 * before batch 3. */
static inline int lm_test_run_pipeline(const char* dir, bool restart, const char* source,
                                       const char* running, lm_test_push_batch push,
                                       char* tail, size_t cap) {
  laminar_config* cfg = NULL;
  laminar_error err;
  CHECK_CODE(laminar_config_create(&cfg), LAMINAR_OK, NULL);
  CHECK_CODE(laminar_config_set(cfg, "data_dir", dir, &err), LAMINAR_OK, &err);
  CHECK_CODE(laminar_config_set(cfg, "checkpoint_interval", "1 hour", &err), LAMINAR_OK,
             &err);
  laminar_db* db = NULL;
  CHECK_CODE(laminar_open(cfg, &db, &err), LAMINAR_OK, &err);
  CHECK_CODE(laminar_execute(db, source, &err), LAMINAR_OK, &err);
  CHECK_CODE(laminar_execute(db, running, &err), LAMINAR_OK, &err);
  laminar_subscription* sub = NULL;
  CHECK_CODE(laminar_subscribe(db, "s", &sub, &err), LAMINAR_OK, &err);
  static char scratch[8192];
  scratch[0] = '\0';
  for (int b = 0; b < 3; b++) {
    CHECK_CODE(push(db, b, &err), LAMINAR_OK, &err);
    CHECK_CODE(laminar_run_until_idle(db, &err), LAMINAR_OK, &err);
  }
  CHECK(lm_test_drain_text(sub, scratch, sizeof scratch) == 0);
  if (restart) {
    CHECK_CODE(laminar_checkpoint(db, &err), LAMINAR_OK, &err);
    laminar_subscription_close(sub);
    CHECK_CODE(laminar_close(db), LAMINAR_OK, NULL);
    CHECK_CODE(laminar_open(cfg, &db, &err), LAMINAR_OK, &err);
    CHECK_CODE(laminar_subscribe(db, "s", &sub, &err), LAMINAR_OK, &err);
  }
  for (int b = 3; b < 6; b++) {
    CHECK_CODE(push(db, b, &err), LAMINAR_OK, &err);
    CHECK_CODE(laminar_run_until_idle(db, &err), LAMINAR_OK, &err);
  }
  tail[0] = '\0';
  CHECK(lm_test_drain_text(sub, tail, cap) == 0);
  laminar_subscription_close(sub);
  CHECK_CODE(laminar_close(db), LAMINAR_OK, NULL);
  laminar_config_destroy(cfg);
  return 0;
}

/* Both runs in scratch directories `prefix`XXXXXX; 0 when the restarted
 * changelog equals the uninterrupted one (left in want, non-empty). */
static inline int lm_test_restart_equal(const char* prefix, const char* source,
                                        const char* running, lm_test_push_batch push,
                                        char* want, size_t cap) {
  char dir1[64], dir2[64];
  CHECK(lm_test_mkdtemp(dir1, sizeof dir1, prefix) == 0);
  CHECK(lm_test_mkdtemp(dir2, sizeof dir2, prefix) == 0);
  static char got[8192];
  int rc = lm_test_run_pipeline(dir1, false, source, running, push, want, cap);
  if (rc == 0)
    rc = lm_test_run_pipeline(dir2, true, source, running, push, got, sizeof got);
  lm_test_rmtree(dir1);
  lm_test_rmtree(dir2);
  CHECK(rc == 0);
  CHECK(strlen(want) > 0);
  if (strcmp(want, got) != 0) {
    fprintf(stderr, "uninterrupted: %s\nrestarted:     %s\n", want, got);
    return 1;
  }
  return 0;
}

#endif /* LM_TEST_TYPES_H */
