/*
 * test_types_real.c -- the REAL / FLOAT4 type through the public API (issue 25
 * item 1, docs/SQL.md "Types"): an Arrow float32 column pushed, computed on
 * (REAL op REAL stays REAL, float-rounded; REAL meets DOUBLE as DOUBLE; text
 * with the float's own shortest digits) and handed back as float32 ("f");
 * another Arrow type pushed into a REAL column refused whole; REAL to
 * TIMESTAMP refused at CREATE; and REAL keys (NaN, -0.0 = 0.0) and MIN/MAX
 * state kept through a checkpoint and a restart of a durable database.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE  // mkdtemp under -std=c17
#endif

#include <math.h>

#include "lm_test_types.h"

/* ---- helpers ------------------------------------------------------------------------ */

static laminar_db* open_mem(void) {
  laminar_db* db = NULL;
  if (laminar_open(NULL, &db, NULL) != LAMINAR_OK) return NULL;
  return db;
}

/* NULL in the float columns of build(). */
#define NUL_F 12345.0f

/* A batch of columns k (utf8), x and y (float32; NUL_F = NULL). With `x_type`
 * other than FLOAT the x column is built as that type instead. */
static int build(const char* const* k, const float* x, const float* y, int64_t n,
                 enum ArrowType x_type, struct ArrowArray* array,
                 struct ArrowSchema* schema) {
  ArrowSchemaInit(schema);
  if (ArrowSchemaSetTypeStruct(schema, 3) != NANOARROW_OK) return 1;
  const char* names[3] = {"k", "x", "y"};
  enum ArrowType types[3] = {NANOARROW_TYPE_STRING, x_type, NANOARROW_TYPE_FLOAT};
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
    const float v[2] = {x[r], y[r]};
    for (int c = 0; c < 2; c++) {
      struct ArrowArray* col = array->children[1 + c];
      int rc = v[c] == NUL_F ? ArrowArrayAppendNull(col, 1)
               : (c == 0 && x_type == NANOARROW_TYPE_INT32)
                   ? ArrowArrayAppendInt(col, (int64_t)v[c])
                   : ArrowArrayAppendDouble(col, (double)v[c]);
      if (rc != NANOARROW_OK) return 1;
    }
    if (ArrowArrayFinishElement(array) != NANOARROW_OK) return 1;
  }
  return ArrowArrayFinishBuildingDefault(array, &error) != NANOARROW_OK;
}

static int push(laminar_db* db, const char* const* k, const float* x, const float* y,
                int64_t n, laminar_error* err) {
  struct ArrowArray array;
  struct ArrowSchema schema;
  if (build(k, x, y, n, NANOARROW_TYPE_FLOAT, &array, &schema) != 0) return 1;
  return lm_test_push_built(db, "t", &array, &schema, err);
}

static const char* SOURCE = "CREATE SOURCE t (k VARCHAR, x REAL, y FLOAT4);";

/* Row r of a float32 view's values. */
static float f32_at(const struct ArrowArrayView* v, int64_t r) {
  return v->buffer_views[1].data.as_float[v->offset + r];
}

static bool str_is(const struct ArrowArrayView* v, int64_t r, const char* want) {
  struct ArrowStringView s = ArrowArrayViewGetStringUnsafe(v, r);
  return s.size_bytes == (int64_t)strlen(want) && memcmp(s.data, want, strlen(want)) == 0;
}

/* ---- type errors -------------------------------------------------------------------- */

static int test_real_to_timestamp_is_refused(void) {
  laminar_db* db = open_mem();
  CHECK(db != NULL);
  laminar_error err;
  CHECK_CODE(laminar_execute(db, SOURCE, &err), LAMINAR_OK, &err);
  CHECK_CODE(
      laminar_execute(db, "CREATE STREAM s AS SELECT CAST(x AS TIMESTAMP) FROM t", &err),
      LAMINAR_ERR_TYPE_MISMATCH, &err);
  CHECK(err.line == 1 && err.column == 27);
  CHECK(strstr(err.message, "cannot CAST REAL to TIMESTAMP") != NULL);
  CHECK_CODE(laminar_execute(db, "DESCRIBE t", &err), LAMINAR_OK, &err);
  laminar_close(db);
  return 0;
}

/* ---- Arrow in and out ------------------------------------------------------------- */

static int test_float32_in_and_out(void) {
  laminar_db* db = open_mem();
  CHECK(db != NULL);
  laminar_error err;
  CHECK_CODE(laminar_execute(db, SOURCE, &err), LAMINAR_OK, &err);
  CHECK_CODE(laminar_execute(db,
                             "CREATE STREAM s AS SELECT k, x + y AS a, x * 3 AS b, "
                             "x / y AS c, x + CAST(y AS DOUBLE) AS d, "
                             "CAST(x AS VARCHAR) AS txt, x < y AS lt, -x AS neg FROM t",
                             &err),
             LAMINAR_OK, &err);
  laminar_subscription* sub = NULL;
  CHECK_CODE(laminar_subscribe(db, "s", &sub, &err), LAMINAR_OK, &err);
  const char* k[4] = {"a", "b", "c", "d"};
  const float x[4] = {0.1f, NUL_F, 3e38f, 1.0f};
  const float y[4] = {0.2f, 1.0f, 3e38f, 3.0f};
  CHECK_CODE(push(db, k, x, y, 4, &err), LAMINAR_OK, &err);
  CHECK_CODE(laminar_run_until_idle(db, &err), LAMINAR_OK, &err);
  struct ArrowArray out;
  struct ArrowSchema schema;
  CHECK_CODE(laminar_subscription_next(sub, 0, &out, &schema, &err), LAMINAR_OK, &err);
  CHECK(out.release != NULL && out.length == 4);
  const char* want_format[8] = {"u", "f", "f", "f", "g", "u", "b", "f"};
  for (int c = 0; c < 8; c++)
    CHECK(strcmp(schema.children[c]->format, want_format[c]) == 0);
  struct ArrowArrayView view;
  struct ArrowError error;
  CHECK(ArrowArrayViewInitFromSchema(&view, &schema, &error) == NANOARROW_OK);
  CHECK(ArrowArrayViewSetArray(&view, &out, &error) == NANOARROW_OK);
  struct ArrowArrayView** v = view.children;
  /* float arithmetic: 0.1f + 0.2f rounds to float (not the double sum) */
  volatile float fx = 0.1f, fy = 0.2f;
  EXPECT(f32_at(v[1], 0) == fx + fy);
  EXPECT(f32_at(v[2], 0) == fx * 3.0f);
  EXPECT(f32_at(v[3], 3) == 1.0f / 3.0f);
  EXPECT(ArrowArrayViewIsNull(v[1], 1) && ArrowArrayViewIsNull(v[5], 1));
  /* past the float range: inf, as IEEE and DuckDB */
  EXPECT(isinf(f32_at(v[1], 2)) && f32_at(v[1], 2) > 0);
  /* REAL + DOUBLE is DOUBLE: the float 0.1 widened, plus 0.2f widened */
  EXPECT(ArrowArrayViewGetDoubleUnsafe(v[4], 0) == (double)0.1f + (double)0.2f);
  EXPECT(str_is(v[5], 0, "0.1"));
  EXPECT(str_is(v[5], 2, "3e+38"));
  EXPECT(str_is(v[5], 3, "1.0"));
  EXPECT(ArrowArrayViewGetIntUnsafe(v[6], 0) == 1);
  EXPECT(ArrowArrayViewGetIntUnsafe(v[6], 2) == 0);
  EXPECT(f32_at(v[7], 0) == -0.1f);
  ArrowArrayViewReset(&view);
  out.release(&out);
  schema.release(&schema);
  laminar_subscription_close(sub);
  laminar_close(db);
  return lm_test_expect_failed_;
}

static int test_other_types_into_a_real_column_are_refused(void) {
  laminar_db* db = open_mem();
  CHECK(db != NULL);
  laminar_error err;
  CHECK_CODE(laminar_execute(db, SOURCE, &err), LAMINAR_OK, &err);
  laminar_source* src = NULL;
  CHECK_CODE(laminar_source_open(db, "t", &src, &err), LAMINAR_OK, &err);
  const enum ArrowType wrong[3] = {NANOARROW_TYPE_DOUBLE, NANOARROW_TYPE_INT32,
                                   NANOARROW_TYPE_HALF_FLOAT};
  const char* k[1] = {"a"};
  const float x[1] = {1}, y[1] = {2};
  for (int i = 0; i < 2; i++) {
    struct ArrowArray array;
    struct ArrowSchema schema;
    CHECK(build(k, x, y, 1, wrong[i], &array, &schema) == 0);
    CHECK(lm_test_push_refused(src, &array, &schema, "'x'", "REAL", &err) == 0);
  }
  (void)wrong[2];
  laminar_source_close(src);
  laminar_close(db);
  return 0;
}

/* ---- snapshots ---------------------------------------------------------------------- */

static const char* RUNNING =
    "CREATE STREAM s AS SELECT k, x, MIN(y) AS lo, MAX(y) AS hi, COUNT(*) AS n "
    "FROM t GROUP BY k, x EMIT CHANGES;";

/* Batch b of the input: REAL keys negative, NaN, -0.0 and 0.0 (one group),
 * NULLs; values of both signs and tiny and huge magnitudes. */
static int push_batch(laminar_db* db, int b, laminar_error* err) {
  const char* k[4] = {"a", "b", "a", "c"};
  const float keys[5] = {-2.5f, NAN, -0.0f, 0.0f, 1e30f};
  float x[4], y[4];
  for (int r = 0; r < 4; r++) {
    x[r] = (r == 3) ? NUL_F : keys[(b * 7 + r) % 5];
    y[r] = (b + r) % 5 == 0 ? NUL_F : (float)(b * 1000 - r * 37 - 2000) * 1.5e-3f;
    if ((b + r) % 4 == 1) y[r] = -y[r] * 1e35f;
  }
  return push(db, k, x, y, 4, err);
}

/* REAL keys and MIN/MAX through a checkpoint and a restart */
static int test_real_state_survives_a_restart(void) {
  static char want[8192];
  CHECK(lm_test_restart_equal("lm_real_", SOURCE, RUNNING, push_batch, want,
                              sizeof want) == 0);
  /* -0.0 and 0.0 are one group (printed 0), NaN a group of its own */
  CHECK(strstr(want, "|-0|") == NULL && strstr(want, "|0|") != NULL);
  CHECK(strstr(want, "|nan|") != NULL && strstr(want, "|-2.5|") != NULL);
  return 0;
}

int main(int argc, char** argv) {
  static const lm_test_case cases[] = {
      {"real_to_timestamp_is_refused", test_real_to_timestamp_is_refused},
      {"float32_in_and_out", test_float32_in_and_out},
      {"other_types_into_a_real_column_are_refused",
       test_other_types_into_a_real_column_are_refused},
      {"real_state_survives_a_restart", test_real_state_survives_a_restart},
      {NULL, NULL}};
  return lm_test_main(argc, argv, cases);
}
