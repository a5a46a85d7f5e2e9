/*
 * test_types_date.c -- the DATE type through the public API (issue 25 item 1,
 * docs/SQL.md "Dates"): type errors refused at CREATE with their LDB code and
 * the line:column of the culprit; an Arrow date32 column pushed, computed on
 * and handed back as date32 (format "tdD"); another Arrow type pushed into a
 * DATE column refused whole; and DATE keys and MIN/MAX state kept through a
 * checkpoint and a restart of a durable database.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE  // mkdtemp under -std=c17
#endif

#include "lm_test_types.h"

/* ---- helpers ------------------------------------------------------------------------ */

static laminar_db* open_mem(void) {
  laminar_db* db = NULL;
  if (laminar_open(NULL, &db, NULL) != LAMINAR_OK) return NULL;
  return db;
}

/* A batch of columns k (utf8), d and e (date32; INT32_MIN = NULL). With
 * `d_type` other than DATE32 the d column is built as that type instead. */
static int build(const char* const* k, const int32_t* d, const int32_t* e, int64_t n,
                 enum ArrowType d_type, struct ArrowArray* array,
                 struct ArrowSchema* schema) {
  ArrowSchemaInit(schema);
  if (ArrowSchemaSetTypeStruct(schema, 3) != NANOARROW_OK) return 1;
  const char* names[3] = {"k", "d", "e"};
  enum ArrowType types[3] = {NANOARROW_TYPE_STRING, d_type, NANOARROW_TYPE_DATE32};
  for (int c = 0; c < 3; c++) {
    if (ArrowSchemaSetType(schema->children[c], types[c]) != NANOARROW_OK) return 1;
    if (ArrowSchemaSetName(schema->children[c], names[c]) != NANOARROW_OK) return 1;
  }
  struct ArrowError error;
  if (ArrowArrayInitFromSchema(array, schema, &error) != NANOARROW_OK) return 1;
  if (ArrowArrayStartAppending(array) != NANOARROW_OK) return 1;
  for (int64_t r = 0; r < n; r++) {
    struct ArrowStringView sv = ArrowCharView(k[r]);
    if (ArrowArrayAppendString(array->children[0], sv) != NANOARROW_OK) return 1;
    const int32_t v[2] = {d[r], e[r]};
    for (int c = 0; c < 2; c++) {
      struct ArrowArray* col = array->children[1 + c];
      int rc = v[c] == INT32_MIN ? ArrowArrayAppendNull(col, 1)
                                 : ArrowArrayAppendInt(col, v[c]);
      if (rc != NANOARROW_OK) return 1;
    }
    if (ArrowArrayFinishElement(array) != NANOARROW_OK) return 1;
  }
  return ArrowArrayFinishBuildingDefault(array, &error) != NANOARROW_OK;
}

static int push(laminar_db* db, const char* const* k, const int32_t* d, const int32_t* e,
                int64_t n, laminar_error* err) {
  struct ArrowArray array;
  struct ArrowSchema schema;
  if (build(k, d, e, n, NANOARROW_TYPE_DATE32, &array, &schema) != 0) return 1;
  return lm_test_push_built(db, "t", &array, &schema, err);
}

static const char* SOURCE = "CREATE SOURCE t (k VARCHAR, d DATE, e DATE);";

/* ---- type errors -------------------------------------------------------------------- */

/* Each statement fails with `code` at line 1, column `col`, the message
 * holding `needle`. */
static int refused(laminar_db* db, const char* sql, laminar_code code, int32_t col,
                   const char* needle) {
  laminar_error err;
  memset(&err, 0, sizeof err);
  int rc = laminar_execute(db, sql, &err);
  if (rc != (int)code || err.line != 1 || err.column != col ||
      strstr(err.message, needle) == NULL) {
    fprintf(stderr, "%s\n  -> %d at %d:%d: %s (want %d at 1:%d, '%s')\n", sql, rc,
            (int)err.line, (int)err.column, err.message, (int)code, (int)col, needle);
    return 1;
  }
  return 0;
}

static int test_type_errors_name_the_place(void) {
  laminar_db* db = open_mem();
  CHECK(db != NULL);
  laminar_error err;
  CHECK_CODE(laminar_execute(db, SOURCE, &err), LAMINAR_OK, &err);
  int bad = 0;
  /* columns:     1234567890123456789012345678901234567890 */
  bad |= refused(db, "CREATE STREAM s AS SELECT SUM(d) FROM t EMIT CHANGES",
                 LAMINAR_ERR_TYPE_MISMATCH, 27, "sum() needs a number, got DATE");
  bad |= refused(db, "CREATE STREAM s AS SELECT AVG(e) FROM t EMIT CHANGES",
                 LAMINAR_ERR_TYPE_MISMATCH, 27, "got DATE");
  bad |= refused(db, "CREATE STREAM s AS SELECT CAST(d AS INT) FROM t",
                 LAMINAR_ERR_TYPE_MISMATCH, 27, "cannot CAST DATE to INT");
  bad |= refused(db, "CREATE STREAM s AS SELECT CAST(1.5 AS DATE) FROM t",
                 LAMINAR_ERR_TYPE_MISMATCH, 27, "cannot CAST DOUBLE to DATE");
  bad |= refused(db, "CREATE STREAM s AS SELECT d FROM t WHERE d = 3",
                 LAMINAR_ERR_TYPE_MISMATCH, 42, "cannot compare DATE with INT");
  bad |= refused(db, "CREATE STREAM s AS SELECT d + e FROM t", LAMINAR_ERR_TYPE_MISMATCH,
                 27, "cannot apply '+' to DATE and DATE");
  bad |= refused(db, "CREATE STREAM s AS SELECT d * 2 FROM t", LAMINAR_ERR_TYPE_MISMATCH,
                 27, "cannot apply '*' to DATE and INT");
  bad |= refused(db, "CREATE STREAM s AS SELECT -d FROM t", LAMINAR_ERR_TYPE_MISMATCH, 27,
                 "unary '-' needs a number, got DATE");
  bad |= refused(db, "CREATE STREAM s AS SELECT d FROM t WHERE d IN ('x', k)",
                 LAMINAR_ERR_TYPE_MISMATCH, 53, "cannot compare DATE with VARCHAR");
  bad |= refused(db, "CREATE SOURCE u (d DATETIME)", LAMINAR_ERR_UNKNOWN_TYPE, 20,
                 "TIMESTAMP or DATE");
  CHECK(bad == 0);
  /* a DATE is not an event-time column */
  CHECK(refused(db, "CREATE SOURCE w (d DATE, WATERMARK FOR d AS d)",
                LAMINAR_ERR_TYPE_MISMATCH, 40, "column 'd' must be BIGINT") == 0);
  laminar_close(db);
  return 0;
}

/* ---- Arrow in and out ------------------------------------------------------------- */

static int test_date32_in_and_out(void) {
  laminar_db* db = open_mem();
  CHECK(db != NULL);
  laminar_error err;
  CHECK_CODE(laminar_execute(db, SOURCE, &err), LAMINAR_OK, &err);
  CHECK_CODE(laminar_execute(db,
                             "CREATE STREAM s AS SELECT k, d + 1 AS d1, e - d AS days, "
                             "CAST(d AS VARCHAR) AS txt, d < e AS lt FROM t",
                             &err),
             LAMINAR_OK, &err);
  laminar_subscription* sub = NULL;
  CHECK_CODE(laminar_subscribe(db, "s", &sub, &err), LAMINAR_OK, &err);
  const char* k[3] = {"a", "b", "c"};
  const int32_t d[3] = {20454, INT32_MIN, -719162};  // 2026-01-01, NULL, 0001-01-01
  const int32_t e[3] = {20455, 0, -719162};
  CHECK_CODE(push(db, k, d, e, 3, &err), LAMINAR_OK, &err);
  CHECK_CODE(laminar_run_until_idle(db, &err), LAMINAR_OK, &err);
  struct ArrowArray out;
  struct ArrowSchema schema;
  CHECK_CODE(laminar_subscription_next(sub, 0, &out, &schema, &err), LAMINAR_OK, &err);
  CHECK(out.release != NULL && out.length == 3);
  CHECK(strcmp(schema.children[1]->format, "tdD") == 0);  // date32
  CHECK(strcmp(schema.children[2]->format, "l") == 0);    // DATE - DATE: BIGINT days
  struct ArrowArrayView view;
  struct ArrowError error;
  CHECK(ArrowArrayViewInitFromSchema(&view, &schema, &error) == NANOARROW_OK);
  CHECK(ArrowArrayViewSetArray(&view, &out, &error) == NANOARROW_OK);
  const struct ArrowArrayView* d1 = view.children[1];
  EXPECT(ArrowArrayViewGetIntUnsafe(d1, 0) == 20455);
  EXPECT(ArrowArrayViewIsNull(d1, 1));
  EXPECT(ArrowArrayViewGetIntUnsafe(d1, 2) == -719161);
  EXPECT(ArrowArrayViewGetIntUnsafe(view.children[2], 0) == 1);
  EXPECT(ArrowArrayViewGetIntUnsafe(view.children[2], 2) == 0);
  struct ArrowStringView t0 = ArrowArrayViewGetStringUnsafe(view.children[3], 0);
  struct ArrowStringView t2 = ArrowArrayViewGetStringUnsafe(view.children[3], 2);
  EXPECT(t0.size_bytes == 10 && memcmp(t0.data, "2026-01-01", 10) == 0);
  EXPECT(t2.size_bytes == 10 && memcmp(t2.data, "0001-01-01", 10) == 0);
  EXPECT(ArrowArrayViewGetIntUnsafe(view.children[4], 0) == 1);
  EXPECT(ArrowArrayViewGetIntUnsafe(view.children[4], 2) == 0);
  ArrowArrayViewReset(&view);
  out.release(&out);
  schema.release(&schema);
  laminar_subscription_close(sub);
  laminar_close(db);
  return lm_test_expect_failed_;
}

static int test_other_types_into_a_date_column_are_refused(void) {
  laminar_db* db = open_mem();
  CHECK(db != NULL);
  laminar_error err;
  CHECK_CODE(laminar_execute(db, SOURCE, &err), LAMINAR_OK, &err);
  laminar_source* src = NULL;
  CHECK_CODE(laminar_source_open(db, "t", &src, &err), LAMINAR_OK, &err);
  const enum ArrowType wrong[3] = {NANOARROW_TYPE_INT32, NANOARROW_TYPE_DATE64,
                                   NANOARROW_TYPE_INT64};
  const char* k[1] = {"a"};
  const int32_t d[1] = {1}, e[1] = {2};
  for (int i = 0; i < 3; i++) {
    struct ArrowArray array;
    struct ArrowSchema schema;
    CHECK(build(k, d, e, 1, wrong[i], &array, &schema) == 0);
    CHECK(lm_test_push_refused(src, &array, &schema, "'d'", "DATE", &err) == 0);
  }
  laminar_source_close(src);
  laminar_close(db);
  return 0;
}

/* ---- snapshots ---------------------------------------------------------------------- */

static const char* RUNNING =
    "CREATE STREAM s AS SELECT k, d, MIN(e) AS lo, MAX(e) AS hi, COUNT(*) AS n "
    "FROM t GROUP BY k, d EMIT CHANGES;";

/* Batch b of the input: DATE keys around the epoch and far from it, NULLs. */
static int push_batch(laminar_db* db, int b, laminar_error* err) {
  const char* k[4] = {"a", "b", "a", "c"};
  int32_t d[4], e[4];
  for (int r = 0; r < 4; r++) {
    d[r] = (r == 3) ? INT32_MIN : (int32_t)((b * 7 + r) % 3) * 100000 - 100000;
    e[r] = (b + r) % 5 == 0 ? INT32_MIN : (int32_t)(b * 1000 - r * 37) - 2000;
  }
  return push(db, k, d, e, 4, err);
}

/* DATE keys and MIN/MAX through a checkpoint and a restart */
static int test_date_state_survives_a_restart(void) {
  static char want[8192];
  CHECK(lm_test_restart_equal("lm_date_", SOURCE, RUNNING, push_batch, want,
                              sizeof want) == 0);
  /* a changelog row of a key far before the epoch: its MIN survived */
  CHECK(strstr(want, "|-100000|") != NULL);
  return 0;
}

int main(int argc, char** argv) {
  static const lm_test_case cases[] = {
      {"type_errors_name_the_place", test_type_errors_name_the_place},
      {"date32_in_and_out", test_date32_in_and_out},
      {"other_types_into_a_date_column_are_refused",
       test_other_types_into_a_date_column_are_refused},
      {"date_state_survives_a_restart", test_date_state_survives_a_restart},
      {NULL, NULL}};
  return lm_test_main(argc, argv, cases);
}
