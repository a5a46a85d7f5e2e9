/*
 * views_util.h -- helpers of the materialized-view tests: push rows of a
 * (k VARCHAR, v BIGINT[, _weight BIGINT]) source and render laminar_query
 * results as text ("a,1;b,NULL") so cases compare whole results at once.
 */
#ifndef LM_TEST_VIEWS_UTIL_H
#define LM_TEST_VIEWS_UTIL_H

#include "arrow_build.h"
#include "laminar.h"

#include <stdio.h>
#include <string.h>

/* One row of a (k, v[, _weight]) batch; k NULL = SQL NULL, v_null for v. */
typedef struct kv_row {
  const char* k;
  int64_t v;
  int v_null;
  int64_t w; /* used when the source has _weight */
} kv_row;

/* Build and push rows; with_weight adds the _weight column. 0 on success. */
static inline int push_kv(laminar_source* src, const kv_row* rows, int64_t n,
                          int with_weight, laminar_error* err) {
  struct ArrowSchema s;
  struct ArrowArray a;
  int ncols = with_weight ? 3 : 2;
  ArrowSchemaInit(&s);
  if (ArrowSchemaSetTypeStruct(&s, ncols) != NANOARROW_OK) return 1;
  const char* names[3] = {"k", "v", "_weight"};
  enum ArrowType types[3] = {NANOARROW_TYPE_STRING, NANOARROW_TYPE_INT64,
                             NANOARROW_TYPE_INT64};
  for (int i = 0; i < ncols; i++) {
    if (ArrowSchemaSetType(s.children[i], types[i]) != NANOARROW_OK) return 1;
    if (ArrowSchemaSetName(s.children[i], names[i]) != NANOARROW_OK) return 1;
  }
  struct ArrowError error;
  if (ArrowArrayInitFromSchema(&a, &s, &error) != NANOARROW_OK) return 1;
  if (ArrowArrayStartAppending(&a) != NANOARROW_OK) return 1;
  for (int64_t r = 0; r < n; r++) {
    int rc = rows[r].k == NULL
                 ? ArrowArrayAppendNull(a.children[0], 1)
                 : ArrowArrayAppendString(a.children[0], ArrowCharView(rows[r].k));
    rc = rc ? rc
            : (rows[r].v_null ? ArrowArrayAppendNull(a.children[1], 1)
                              : ArrowArrayAppendInt(a.children[1], rows[r].v));
    if (with_weight && rc == 0) rc = ArrowArrayAppendInt(a.children[2], rows[r].w);
    if (rc == 0) rc = ArrowArrayFinishElement(&a);
    if (rc != NANOARROW_OK) return 1;
  }
  if (ArrowArrayFinishBuildingDefault(&a, &error) != NANOARROW_OK) return 1;
  laminar_code code = laminar_source_push(src, &a, &s, err);
  if (a.release != NULL) a.release(&a);
  s.release(&s);
  return code == LAMINAR_OK ? 0 : 1;
}

/* Append row r of a struct array (viewed) as "c1,c2,..." to out. */
static inline void render_row(const struct ArrowSchema* schema,
                              struct ArrowArrayView* view, int64_t r, char* out,
                              size_t cap) {
  for (int64_t c = 0; c < schema->n_children; c++) {
    size_t len = strlen(out);
    const char* sep = c > 0 ? "," : "";
    struct ArrowArrayView* col = view->children[c];
    const char* fmt = schema->children[c]->format;
    if (ArrowArrayViewIsNull(col, r)) {
      snprintf(out + len, cap - len, "%sNULL", sep);
    } else if (strcmp(fmt, "u") == 0) {
      struct ArrowStringView sv = ArrowArrayViewGetStringUnsafe(col, r);
      snprintf(out + len, cap - len, "%s%.*s", sep, (int)sv.size_bytes, sv.data);
    } else if (strcmp(fmt, "g") == 0) {
      snprintf(out + len, cap - len, "%s%g", sep, ArrowArrayViewGetDoubleUnsafe(col, r));
    } else {
      snprintf(out + len, cap - len, "%s%lld", sep,
               (long long)ArrowArrayViewGetIntUnsafe(col, r));
    }
  }
}

/* View the one batch of a one-batch table stream (laminar_stream_partitioning,
 * laminar_stream_two_phase): 0 on success; release with one_batch_free(). */
static inline int one_batch_view(struct ArrowArrayStream* st, result_view* rv) {
  memset(rv, 0, sizeof *rv);
  if (st->get_schema(st, &rv->schema) != 0 || st->get_next(st, &rv->array) != 0 ||
      rv->array.release == NULL || result_view_init(rv) != 0) {
    return 1;
  }
  return 0;
}

/* Release what one_batch_view() took, and the stream. */
static inline void one_batch_free(struct ArrowArrayStream* st, result_view* rv) {
  ArrowArrayViewReset(&rv->view);
  if (rv->array.release != NULL) rv->array.release(&rv->array);
  if (rv->schema.release != NULL) rv->schema.release(&rv->schema);
  st->release(st);
}

/* Run `sql` through laminar_query and render every row, rows joined by ';'.
 * Returns the call's code (the stream is released either way). */
static inline laminar_code query_text(laminar_db* db, const char* sql, char* out,
                                      size_t cap, laminar_error* err) {
  out[0] = '\0';
  struct ArrowArrayStream st;
  laminar_code rc = laminar_query(db, sql, &st, err);
  if (rc != LAMINAR_OK) return rc;
  result_view rv;
  memset(&rv, 0, sizeof rv);
  /* A stream reports failure as an errno: ENOMEM (12) when out of memory. */
  int e = st.get_schema(&st, &rv.schema);
  if (e != 0) rc = e == 12 ? LAMINAR_ERR_NOMEM : LAMINAR_ERR_INTERNAL;
  size_t len = 0; /* of out: each row rendered at its end (linear in the text) */
  while (rc == LAMINAR_OK) {
    e = st.get_next(&st, &rv.array);
    if (e != 0) rc = e == 12 ? LAMINAR_ERR_NOMEM : LAMINAR_ERR_INTERNAL;
    if (rc != LAMINAR_OK || rv.array.release == NULL) break;
    if (result_view_init(&rv) != 0) rc = LAMINAR_ERR_INTERNAL;
    for (int64_t r = 0; rc == LAMINAR_OK && r < rv.array.length; r++) {
      if (len > 0 && len + 1 < cap) {
        out[len++] = ';';
        out[len] = '\0';
      }
      render_row(&rv.schema, &rv.view, r, out + len, cap - len);
      len += strlen(out + len);
    }
    ArrowArrayViewReset(&rv.view);
    rv.array.release(&rv.array);
  }
  if (rv.schema.release != NULL) rv.schema.release(&rv.schema);
  st.release(&st);
  return rc;
}

/* Append every row queued on `sub` now to out as "v1,v2,...;" (render_row),
 * in the order they were emitted; 0 on success. */
static inline int take_text(laminar_subscription* sub, char* out, size_t cap) {
  for (;;) {
    result_view rv;
    memset(&rv, 0, sizeof rv);
    laminar_error err;
    CHECK_CODE(laminar_subscription_next(sub, 0, &rv.array, &rv.schema, &err), LAMINAR_OK,
               &err);
    if (rv.array.release == NULL) return 0;
    CHECK(result_view_init(&rv) == 0);
    for (int64_t r = 0; r < rv.array.length; r++) {
      char line[128] = "";
      render_row(&rv.schema, &rv.view, r, line, sizeof line);
      size_t len = strlen(out);
      snprintf(out + len, cap - len, "%s;", line);
    }
    result_view_free(&rv);
  }
}

/* An expecting check of two strings that prints both when they differ. */
#define EXPECT_TEXT(got, want)                                                   \
  do {                                                                           \
    if (strcmp((got), (want)) != 0)                                              \
      fprintf(stderr, "%s:%d: got '%s', want '%s'\n", __FILE__, __LINE__, (got), \
              (want));                                                           \
    EXPECT(strcmp((got), (want)) == 0);                                          \
  } while (0)

/* Open an in-memory database of `cores` reactors and run `sql` in it; 0 on
 * success. */
static inline int open_cores_db(int cores, const char* sql, laminar_db** out) {
  laminar_error err;
  laminar_config* cfg;
  CHECK_CODE(laminar_config_create(&cfg), LAMINAR_OK, NULL);
  char buf[16];
  snprintf(buf, sizeof buf, "%d", cores);
  laminar_code rc = laminar_config_set(cfg, "cores", buf, &err);
  if (rc == LAMINAR_OK) rc = laminar_open(cfg, out, &err);
  laminar_config_destroy(cfg);
  CHECK_CODE(rc, LAMINAR_OK, &err);
  CHECK_CODE(laminar_execute(*out, sql, &err), LAMINAR_OK, &err);
  return 0;
}

/* Fail the case unless query_text(db, sql) renders exactly `want`. */
#define CHECK_TEXT(db, sql, want)                                                       \
  do {                                                                                  \
    char got_[8192];                                                                    \
    laminar_error qerr_;                                                                \
    CHECK_CODE(query_text((db), (sql), got_, sizeof got_, &qerr_), LAMINAR_OK, &qerr_); \
    if (strcmp(got_, (want)) != 0) {                                                    \
      fprintf(stderr, "%s:%d: %s\n  got  '%s'\n  want '%s'\n", __FILE__, __LINE__,      \
              (sql), got_, (want));                                                     \
      return 1;                                                                         \
    }                                                                                   \
  } while (0)

/* The value of metric (kind "stream", name, metric) from laminar_metrics, or
 * INT64_MIN when absent. */
static inline int64_t stream_metric(laminar_db* db, const char* name,
                                    const char* metric) {
  char text[8192];
  laminar_error err;
  struct ArrowArrayStream st;
  if (laminar_metrics(db, &st, &err) != LAMINAR_OK) return INT64_MIN;
  result_view rv;
  memset(&rv, 0, sizeof rv);
  int64_t value = INT64_MIN;
  if (st.get_schema(&st, &rv.schema) == 0 && st.get_next(&st, &rv.array) == 0 &&
      rv.array.release != NULL && result_view_init(&rv) == 0) {
    for (int64_t r = 0; r < rv.array.length; r++) {
      text[0] = '\0';
      render_row(&rv.schema, &rv.view, r, text, sizeof text);
      char want[512];
      snprintf(want, sizeof want, "stream,%s,%s,", name, metric);
      if (strncmp(text, want, strlen(want)) == 0) {
        value = ArrowArrayViewGetIntUnsafe(rv.view.children[3], r);
      }
    }
  }
  result_view_free(&rv);
  st.release(&st);
  return value;
}

/* Expect `sql` (execute or query) to fail with `code` at line:column. */
static inline int fails_at(laminar_db* db, bool query, const char* sql, laminar_code code,
                           int line, int column) {
  laminar_error err;
  struct ArrowArrayStream st;
  laminar_code rc =
      query ? laminar_query(db, sql, &st, &err) : laminar_execute(db, sql, &err);
  if (rc == LAMINAR_OK && query) st.release(&st);
  if (rc != code || err.line != line || err.column != column) {
    fprintf(stderr, "'%s': got %d at %d:%d (%s), want %d at %d:%d\n", sql, (int)rc,
            (int)err.line, (int)err.column, rc ? err.message : "", (int)code, line,
            column);
    return 0;
  }
  char pos[64];
  snprintf(pos, sizeof pos, "line %d, column %d", line, column);
  if (strstr(err.message, pos) == NULL) {
    fprintf(stderr, "'%s': message '%s' lacks '%s'\n", sql, err.message, pos);
    return 0;
  }
  return 1;
}

/* Open an in-memory database and run `sql` in it; 0 on success. */
static inline int open_sql_db(laminar_db** db, const char* sql) {
  laminar_error err;
  CHECK_CODE(laminar_open(NULL, db, &err), LAMINAR_OK, &err);
  CHECK_CODE(laminar_execute(*db, sql, &err), LAMINAR_OK, &err);
  return 0;
}

#endif /* LM_TEST_VIEWS_UTIL_H */
