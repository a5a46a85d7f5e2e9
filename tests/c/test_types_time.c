/*
 * test_types_time.c -- the TIME type through the public API (issue 25 item 1,
 * docs/SQL.md "Types"): an Arrow time64[us] column pushed, compared, cast to
 * text and handed back as time64[us] ("ttu"); time32 and time64[ns] pushed
 * into a TIME column refused whole; casts to numbers refused at CREATE; and
 * TIME keys with MIN/MAX state kept through a checkpoint and a restart.
 */
#include "lm_test_types.h"

/* ---- helpers ------------------------------------------------------------------------ */

#define NUL_T INT64_MIN /* NULL in build() */

/* A batch of columns k (utf8), x and y (time64[us]). With `x_type` other than
 * TIME64 (or `x_unit` other than micro) the x column is built as that. */
static int build(const char* const* k, const int64_t* x, const int64_t* y, int64_t n,
                 enum ArrowType x_type, enum ArrowTimeUnit x_unit,
                 struct ArrowArray* array, struct ArrowSchema* schema) {
  ArrowSchemaInit(schema);
  if (ArrowSchemaSetTypeStruct(schema, 3) != NANOARROW_OK) return 1;
  if (ArrowSchemaSetType(schema->children[0], NANOARROW_TYPE_STRING) != NANOARROW_OK ||
      ArrowSchemaSetTypeDateTime(schema->children[1], x_type, x_unit, NULL) !=
          NANOARROW_OK ||
      ArrowSchemaSetTypeDateTime(schema->children[2], NANOARROW_TYPE_TIME64,
                                 NANOARROW_TIME_UNIT_MICRO, NULL) != NANOARROW_OK)
    return 1;
  const char* names[3] = {"k", "x", "y"};
  for (int c = 0; c < 3; c++) {
    if (ArrowSchemaSetName(schema->children[c], names[c]) != NANOARROW_OK) return 1;
  }
  struct ArrowError error;
  if (ArrowArrayInitFromSchema(array, schema, &error) != NANOARROW_OK) return 1;
  if (ArrowArrayStartAppending(array) != NANOARROW_OK) return 1;
  for (int64_t r = 0; r < n; r++) {
    struct ArrowStringView sv = ArrowCharView(k[r]);
    if (ArrowArrayAppendString(array->children[0], sv) != NANOARROW_OK) return 1;
    const int64_t v[2] = {x[r], y[r]};
    for (int c = 0; c < 2; c++) {
      struct ArrowArray* col = array->children[1 + c];
      int rc =
          v[c] == NUL_T ? ArrowArrayAppendNull(col, 1) : ArrowArrayAppendInt(col, v[c]);
      if (rc != NANOARROW_OK) return 1;
    }
    if (ArrowArrayFinishElement(array) != NANOARROW_OK) return 1;
  }
  return ArrowArrayFinishBuildingDefault(array, &error) != NANOARROW_OK;
}

static int push(laminar_db* db, const char* const* k, const int64_t* x, const int64_t* y,
                int64_t n, laminar_error* err) {
  struct ArrowArray array;
  struct ArrowSchema schema;
  if (build(k, x, y, n, NANOARROW_TYPE_TIME64, NANOARROW_TIME_UNIT_MICRO, &array,
            &schema) != 0)
    return 1;
  return lm_test_push_built(db, "t", &array, &schema, err);
}

static laminar_db* open_mem(void) {
  laminar_db* db = NULL;
  if (laminar_open(NULL, &db, NULL) != LAMINAR_OK) return NULL;
  return db;
}

static const char* SOURCE = "CREATE SOURCE t (k VARCHAR, x TIME, y TIME);";
static const int64_t DAY = 86400000000LL;

/* ---- tests -------------------------------------------------------------------------- */

static int test_time_casts_to_numbers_are_refused(void) {
  laminar_db* db = open_mem();
  CHECK(db != NULL);
  laminar_error err;
  CHECK_CODE(laminar_execute(db, SOURCE, &err), LAMINAR_OK, &err);
  CHECK_CODE(
      laminar_execute(db, "CREATE STREAM s AS SELECT CAST(x AS BIGINT) FROM t", &err),
      LAMINAR_ERR_TYPE_MISMATCH, &err);
  CHECK(err.line == 1 && err.column == 27);
  CHECK(strstr(err.message, "cannot CAST TIME to BIGINT") != NULL);
  CHECK_CODE(laminar_execute(db, "CREATE STREAM s AS SELECT x FROM t WHERE x < 5", &err),
             LAMINAR_ERR_TYPE_MISMATCH, &err);
  CHECK(strstr(err.message, "cannot compare TIME with INT") != NULL);
  laminar_close(db);
  return 0;
}

static int test_time64_in_and_out(void) {
  laminar_db* db = open_mem();
  CHECK(db != NULL);
  laminar_error err;
  CHECK_CODE(laminar_execute(db, SOURCE, &err), LAMINAR_OK, &err);
  CHECK_CODE(
      laminar_execute(db,
                      "CREATE STREAM s AS SELECT k, x, CAST(x AS VARCHAR) AS txt, "
                      "x < y AS lt, x = '12:00' AS noon, CAST(k AS TIME) AS kt FROM t",
                      &err),
      LAMINAR_OK, &err);
  laminar_subscription* sub = NULL;
  CHECK_CODE(laminar_subscribe(db, "s", &sub, &err), LAMINAR_OK, &err);
  const char* k[3] = {"1:02:03.5", "24:00:00", "12:60"};
  const int64_t x[3] = {DAY - 1, NUL_T, 43200000000LL};
  const int64_t y[3] = {0, 5, 43200000001LL};
  CHECK_CODE(push(db, k, x, y, 3, &err), LAMINAR_OK, &err);
  CHECK_CODE(laminar_run_until_idle(db, &err), LAMINAR_OK, &err);
  struct ArrowArray out;
  struct ArrowSchema schema;
  CHECK_CODE(laminar_subscription_next(sub, 0, &out, &schema, &err), LAMINAR_OK, &err);
  CHECK(out.release != NULL && out.length == 3);
  const char* want_format[6] = {"u", "ttu", "u", "b", "b", "ttu"};
  for (int c = 0; c < 6; c++)
    CHECK(strcmp(schema.children[c]->format, want_format[c]) == 0);
  struct ArrowArrayView view;
  struct ArrowError error;
  CHECK(ArrowArrayViewInitFromSchema(&view, &schema, &error) == NANOARROW_OK);
  CHECK(ArrowArrayViewSetArray(&view, &out, &error) == NANOARROW_OK);
  struct ArrowArrayView** v = view.children;
  EXPECT(ArrowArrayViewGetIntUnsafe(v[1], 0) == DAY - 1);
  struct ArrowStringView t0 = ArrowArrayViewGetStringUnsafe(v[2], 0);
  EXPECT(t0.size_bytes == 15 && memcmp(t0.data, "23:59:59.999999", 15) == 0);
  struct ArrowStringView t2 = ArrowArrayViewGetStringUnsafe(v[2], 2);
  EXPECT(t2.size_bytes == 8 && memcmp(t2.data, "12:00:00", 8) == 0);
  EXPECT(ArrowArrayViewIsNull(v[2], 1) && ArrowArrayViewIsNull(v[3], 1));
  EXPECT(ArrowArrayViewGetIntUnsafe(v[3], 0) == 0);
  EXPECT(ArrowArrayViewGetIntUnsafe(v[3], 2) == 1);
  EXPECT(ArrowArrayViewGetIntUnsafe(v[4], 2) == 1);
  EXPECT(ArrowArrayViewGetIntUnsafe(v[5], 0) == 3723500000LL);
  EXPECT(ArrowArrayViewGetIntUnsafe(v[5], 1) == DAY);  // 24:00:00, as DuckDB
  EXPECT(ArrowArrayViewIsNull(v[5], 2));               // minute 60
  ArrowArrayViewReset(&view);
  out.release(&out);
  schema.release(&schema);
  laminar_subscription_close(sub);
  laminar_close(db);
  return lm_test_expect_failed_;
}

static int test_other_units_into_a_time_column_are_refused(void) {
  laminar_db* db = open_mem();
  CHECK(db != NULL);
  laminar_error err;
  CHECK_CODE(laminar_execute(db, SOURCE, &err), LAMINAR_OK, &err);
  laminar_source* src = NULL;
  CHECK_CODE(laminar_source_open(db, "t", &src, &err), LAMINAR_OK, &err);
  const enum ArrowType types[2] = {NANOARROW_TYPE_TIME64, NANOARROW_TYPE_TIME32};
  const enum ArrowTimeUnit units[2] = {NANOARROW_TIME_UNIT_NANO,
                                       NANOARROW_TIME_UNIT_MILLI};
  const char* k[1] = {"a"};
  const int64_t x[1] = {1}, y[1] = {2};
  for (int i = 0; i < 2; i++) {
    struct ArrowArray array;
    struct ArrowSchema schema;
    CHECK(build(k, x, y, 1, types[i], units[i], &array, &schema) == 0);
    CHECK(lm_test_push_refused(src, &array, &schema, "'x'", "TIME", &err) == 0);
  }
  laminar_source_close(src);
  laminar_close(db);
  return 0;
}

static const char* RUNNING =
    "CREATE STREAM s AS SELECT k, x, MIN(y) AS lo, MAX(y) AS hi, COUNT(*) AS n "
    "FROM t GROUP BY k, x EMIT CHANGES;";

/* Batch b of the input: TIME keys at midnight, the end of the day and
 * between, NULLs; values across the day. */
static int push_batch(laminar_db* db, int b, laminar_error* err) {
  const char* k[4] = {"a", "b", "a", "c"};
  const int64_t keys[4] = {0, DAY - 1, 43200000000LL, 1};
  int64_t x[4], y[4];
  for (int r = 0; r < 4; r++) {
    x[r] = (r == 3) ? NUL_T : keys[(b * 7 + r) % 4];
    y[r] = (b + r) % 5 == 0 ? NUL_T : ((int64_t)(b * 1000 + r * 37) * 12345678) % DAY;
  }
  return push(db, k, x, y, 4, err);
}

/* TIME keys and MIN/MAX through a checkpoint and a restart */
static int test_time_state_survives_a_restart(void) {
  static char want[8192];
  CHECK(lm_test_restart_equal("lm_time_", SOURCE, RUNNING, push_batch, want,
                              sizeof want) == 0);
  CHECK(strstr(want, "|86399999999|") != NULL && strstr(want, "|0|") != NULL);
  return 0;
}

int main(int argc, char** argv) {
  static const lm_test_case cases[] = {
      {"time_casts_to_numbers_are_refused", test_time_casts_to_numbers_are_refused},
      {"time64_in_and_out", test_time64_in_and_out},
      {"other_units_into_a_time_column_are_refused",
       test_other_units_into_a_time_column_are_refused},
      {"time_state_survives_a_restart", test_time_state_survives_a_restart},
      {NULL, NULL}};
  return lm_test_main(argc, argv, cases);
}
