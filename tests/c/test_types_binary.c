/*
 * test_types_binary.c -- the VARBINARY / BLOB / BYTEA type through the public
 * API (issue 25 item 1, docs/SQL.md "Types"): Arrow binary and large_binary
 * columns pushed, compared bytewise, concatenated, measured (length,
 * octet_length), cast to and from DuckDB's blob text and handed back as
 * binary ("z"); a utf8 column pushed into a BLOB column refused whole; casts
 * to numbers refused at CREATE; and BLOB keys with MIN/MAX state kept through
 * a checkpoint and a restart of a durable database.
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

/* A value of build(): `len` bytes at `p`; p NULL = NULL. */
typedef struct blob {
  const char* p;
  int64_t len;
} blob;

/* A batch of columns k (utf8), x and y (binary). With `x_type` other than
 * BINARY the x column is built as that type instead. */
static int build(const char* const* k, const blob* x, const blob* y, int64_t n,
                 enum ArrowType x_type, struct ArrowArray* array,
                 struct ArrowSchema* schema) {
  ArrowSchemaInit(schema);
  if (ArrowSchemaSetTypeStruct(schema, 3) != NANOARROW_OK) return 1;
  const char* names[3] = {"k", "x", "y"};
  enum ArrowType types[3] = {NANOARROW_TYPE_STRING, x_type, NANOARROW_TYPE_LARGE_BINARY};
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
    const blob v[2] = {x[r], y[r]};
    for (int c = 0; c < 2; c++) {
      struct ArrowArray* col = array->children[1 + c];
      struct ArrowBufferView bv;
      bv.data.as_char = v[c].p;
      bv.size_bytes = v[c].len;
      int rc = v[c].p == NULL ? ArrowArrayAppendNull(col, 1)
               : (c == 0 && x_type == NANOARROW_TYPE_INT32)
                   ? ArrowArrayAppendInt(col, 1)
                   : ArrowArrayAppendBytes(col, bv);
      if (rc != NANOARROW_OK) return 1;
    }
    if (ArrowArrayFinishElement(array) != NANOARROW_OK) return 1;
  }
  return ArrowArrayFinishBuildingDefault(array, &error) != NANOARROW_OK;
}

static int push(laminar_db* db, const char* const* k, const blob* x, const blob* y,
                int64_t n, laminar_error* err) {
  struct ArrowArray array;
  struct ArrowSchema schema;
  if (build(k, x, y, n, NANOARROW_TYPE_BINARY, &array, &schema) != 0) return 1;
  return lm_test_push_built(db, "t", &array, &schema, err);
}

static const char* SOURCE = "CREATE SOURCE t (k VARCHAR, x BLOB, y BYTEA);";

static bool bytes_are(const struct ArrowArrayView* v, int64_t r, const char* want,
                      size_t len) {
  struct ArrowBufferView b = ArrowArrayViewGetBytesUnsafe(v, r);
  return b.size_bytes == (int64_t)len &&
         (len == 0 || memcmp(b.data.data, want, len) == 0);
}

/* ---- type errors -------------------------------------------------------------------- */

static int test_blob_casts_to_numbers_are_refused(void) {
  laminar_db* db = open_mem();
  CHECK(db != NULL);
  laminar_error err;
  CHECK_CODE(laminar_execute(db, SOURCE, &err), LAMINAR_OK, &err);
  const char* bad[3] = {"CREATE STREAM s AS SELECT CAST(x AS INT) FROM t",
                        "CREATE STREAM s AS SELECT CAST(1 AS BLOB) FROM t",
                        "CREATE STREAM s AS SELECT upper(x) FROM t"};
  const char* needle[3] = {"cannot CAST VARBINARY to INT", "cannot CAST INT to VARBINARY",
                           "got VARBINARY"};
  for (int i = 0; i < 3; i++) {
    CHECK_CODE(laminar_execute(db, bad[i], &err), LAMINAR_ERR_TYPE_MISMATCH, &err);
    CHECK(err.line == 1 && err.column >= 27);
    CHECK(strstr(err.message, needle[i]) != NULL);
  }
  laminar_close(db);
  return 0;
}

/* ---- Arrow in and out ------------------------------------------------------------- */

static int test_binary_in_and_out(void) {
  laminar_db* db = open_mem();
  CHECK(db != NULL);
  laminar_error err;
  CHECK_CODE(laminar_execute(db, SOURCE, &err), LAMINAR_OK, &err);
  CHECK_CODE(laminar_execute(db,
                             "CREATE STREAM s AS SELECT k, x || y AS xy, length(x) AS n, "
                             "octet_length(y) AS m, CAST(x AS VARCHAR) AS txt, "
                             "x < y AS lt, x = CAST('\\xAAb' AS BLOB) AS eq, "
                             "CAST(k AS BLOB) AS kb FROM t",
                             &err),
             LAMINAR_OK, &err);
  laminar_subscription* sub = NULL;
  CHECK_CODE(laminar_subscribe(db, "s", &sub, &err), LAMINAR_OK, &err);
  const char* k[3] = {"a", "\\x00\\x41", "\\q"};
  const blob x[3] = {{"\xaa"
                      "b",
                      2},
                     {NULL, 0},
                     {"\0\"'\\\x7f", 5}};
  const blob y[3] = {{"\xab", 1}, {"", 0}, {"\0", 1}};
  CHECK_CODE(push(db, k, x, y, 3, &err), LAMINAR_OK, &err);
  CHECK_CODE(laminar_run_until_idle(db, &err), LAMINAR_OK, &err);
  struct ArrowArray out;
  struct ArrowSchema schema;
  CHECK_CODE(laminar_subscription_next(sub, 0, &out, &schema, &err), LAMINAR_OK, &err);
  CHECK(out.release != NULL && out.length == 3);
  const char* want_format[8] = {"u", "z", "l", "l", "u", "b", "b", "z"};
  for (int c = 0; c < 8; c++)
    CHECK(strcmp(schema.children[c]->format, want_format[c]) == 0);
  struct ArrowArrayView view;
  struct ArrowError error;
  CHECK(ArrowArrayViewInitFromSchema(&view, &schema, &error) == NANOARROW_OK);
  CHECK(ArrowArrayViewSetArray(&view, &out, &error) == NANOARROW_OK);
  struct ArrowArrayView** v = view.children;
  EXPECT(bytes_are(v[1], 0,
                   "\xaa"
                   "b\xab",
                   3));
  EXPECT(ArrowArrayViewIsNull(v[1], 1) && ArrowArrayViewIsNull(v[2], 1));
  EXPECT(bytes_are(v[1], 2, "\0\"'\\\x7f\0", 6));
  EXPECT(ArrowArrayViewGetIntUnsafe(v[2], 0) == 2);
  EXPECT(ArrowArrayViewGetIntUnsafe(v[2], 2) == 5);
  EXPECT(ArrowArrayViewGetIntUnsafe(v[3], 1) == 0);
  EXPECT(bytes_are(v[4], 0, "\\xAAb", 5));
  EXPECT(bytes_are(v[4], 2, "\\x00\\x22\\x27\\x5C\\x7F", 20));
  /* bytewise and unsigned: 0xAA 'b' < 0xAB; "\0..." > "\0" (longer) */
  EXPECT(ArrowArrayViewGetIntUnsafe(v[5], 0) == 1);
  EXPECT(ArrowArrayViewGetIntUnsafe(v[5], 2) == 0);
  EXPECT(ArrowArrayViewGetIntUnsafe(v[6], 0) == 1);
  EXPECT(ArrowArrayViewGetIntUnsafe(v[6], 2) == 0);
  /* text to blob: \xHH escapes; a bad escape is NULL */
  EXPECT(bytes_are(v[7], 0, "a", 1));
  EXPECT(bytes_are(v[7], 1, "\0A", 2));
  EXPECT(ArrowArrayViewIsNull(v[7], 2));
  ArrowArrayViewReset(&view);
  out.release(&out);
  schema.release(&schema);
  laminar_subscription_close(sub);
  laminar_close(db);
  return lm_test_expect_failed_;
}

static int test_other_types_into_a_blob_column_are_refused(void) {
  laminar_db* db = open_mem();
  CHECK(db != NULL);
  laminar_error err;
  CHECK_CODE(laminar_execute(db, SOURCE, &err), LAMINAR_OK, &err);
  laminar_source* src = NULL;
  CHECK_CODE(laminar_source_open(db, "t", &src, &err), LAMINAR_OK, &err);
  const enum ArrowType wrong[2] = {NANOARROW_TYPE_STRING, NANOARROW_TYPE_INT32};
  const char* k[1] = {"a"};
  const blob x[1] = {{"1", 1}}, y[1] = {{"2", 1}};
  for (int i = 0; i < 2; i++) {
    struct ArrowArray array;
    struct ArrowSchema schema;
    CHECK(build(k, x, y, 1, wrong[i], &array, &schema) == 0);
    CHECK(lm_test_push_refused(src, &array, &schema, "'x'", "VARBINARY", &err) == 0);
  }
  laminar_source_close(src);
  laminar_close(db);
  return 0;
}

/* ---- snapshots ---------------------------------------------------------------------- */

static const char* RUNNING =
    "CREATE STREAM s AS SELECT k, x, MIN(y) AS lo, MAX(y) AS hi, COUNT(*) AS n "
    "FROM t GROUP BY k, x EMIT CHANGES;";

/* Batch b of the input: BLOB keys with zero bytes, high bytes and the empty
 * one, NULLs; values of all lengths. */
static int push_batch(laminar_db* db, int b, laminar_error* err) {
  const char* k[4] = {"a", "b", "a", "c"};
  static const blob keys[5] = {
      {"\0", 1}, {"\0\0", 2}, {"", 0}, {"\xff\x01", 2}, {"ab", 2}};
  static const char bytes[] = "\x80\x00zq\xfe\x7f\x01\x02";
  blob x[4], y[4];
  for (int r = 0; r < 4; r++) {
    x[r] = (r == 3) ? (blob){NULL, 0} : keys[(b * 7 + r) % 5];
    y[r] =
        (b + r) % 5 == 0 ? (blob){NULL, 0} : (blob){bytes + (b + r) % 4, (b * 3 + r) % 5};
  }
  return push(db, k, x, y, 4, err);
}

/* BLOB keys and MIN/MAX through a checkpoint and a restart */
static int test_blob_state_survives_a_restart(void) {
  static char want[8192];
  CHECK(lm_test_restart_equal("lm_blob_", SOURCE, RUNNING, push_batch, want,
                              sizeof want) == 0);
  /* the keys with zero bytes and the empty key are groups of their own */
  CHECK(strstr(want, "|x00|") != NULL && strstr(want, "|x0000|") != NULL);
  CHECK(strstr(want, "|x|") != NULL && strstr(want, "|xff01|") != NULL);
  return 0;
}

int main(int argc, char** argv) {
  static const lm_test_case cases[] = {
      {"blob_casts_to_numbers_are_refused", test_blob_casts_to_numbers_are_refused},
      {"binary_in_and_out", test_binary_in_and_out},
      {"other_types_into_a_blob_column_are_refused",
       test_other_types_into_a_blob_column_are_refused},
      {"blob_state_survives_a_restart", test_blob_state_survives_a_restart},
      {NULL, NULL}};
  return lm_test_main(argc, argv, cases);
}
