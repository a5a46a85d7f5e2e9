/*
 * test_types_decimal.c -- DECIMAL(p,s) through the public API (issue 25 item 1,
 * docs/SQL.md "Decimals"): bad types and type errors refused at CREATE with
 * their LDB code and place; Arrow decimal128 columns pushed, computed on with
 * DuckDB's result types and rounding (the expected values are DuckDB's) and
 * handed back as decimal128 ("d:p,s"); overflow giving NULL; pushes of another
 * precision or of values past the precision refused whole; and DECIMAL keys
 * and SUM/MIN/MAX state kept through a checkpoint, a WAL replay and a restart.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE  // mkdtemp under -std=c17
#endif

#include "lm_test.h"
#include "lm_test_fs.h"
#include "nanoarrow/nanoarrow.h"

__extension__ typedef __int128 i128;
__extension__ typedef unsigned __int128 u128;

/* ---- helpers ------------------------------------------------------------------------ */

static laminar_db* open_mem(void) {
  laminar_db* db = NULL;
  if (laminar_open(NULL, &db, NULL) != LAMINAR_OK) return NULL;
  return db;
}

#define NOVAL ((i128)1 << 126) /* a NULL row */

/* A batch of k (utf8), a DECIMAL(ap, as), b DECIMAL(10,2), w DECIMAL(38,2), ts
 * (int64): unscaled values. */
static int build(const char* const* k, const i128* a, const i128* b, const i128* w,
                 int64_t n, int ap, int as, struct ArrowArray* array,
                 struct ArrowSchema* schema) {
  ArrowSchemaInit(schema);
  if (ArrowSchemaSetTypeStruct(schema, 5) != NANOARROW_OK) return 1;
  const char* names[5] = {"k", "a", "b", "w", "ts"};
  int prec[3] = {ap, 10, 38}, scale[3] = {as, 2, 2};
  if (ArrowSchemaSetType(schema->children[0], NANOARROW_TYPE_STRING)) return 1;
  for (int c = 0; c < 3; c++) {
    if (ArrowSchemaSetTypeDecimal(schema->children[1 + c], NANOARROW_TYPE_DECIMAL128,
                                  prec[c], scale[c]))
      return 1;
  }
  if (ArrowSchemaSetType(schema->children[4], NANOARROW_TYPE_INT64)) return 1;
  for (int c = 0; c < 5; c++) {
    if (ArrowSchemaSetName(schema->children[c], names[c]) != NANOARROW_OK) return 1;
  }
  struct ArrowError error;
  if (ArrowArrayInitFromSchema(array, schema, &error) != NANOARROW_OK) return 1;
  if (ArrowArrayStartAppending(array) != NANOARROW_OK) return 1;
  for (int64_t r = 0; r < n; r++) {
    struct ArrowStringView sv = ArrowCharView(k[r]);
    if (ArrowArrayAppendString(array->children[0], sv) != NANOARROW_OK) return 1;
    const i128 v[3] = {a[r], b[r], w[r]};
    for (int c = 0; c < 3; c++) {
      struct ArrowArray* col = array->children[1 + c];
      int rc;
      if (v[c] == NOVAL) {
        rc = ArrowArrayAppendNull(col, 1);
      } else {
        struct ArrowDecimal d;
        ArrowDecimalInit(&d, 128, prec[c], scale[c]);
        ArrowDecimalSetBytes(&d, (const uint8_t*)&v[c]);
        rc = ArrowArrayAppendDecimal(col, &d);
      }
      if (rc != NANOARROW_OK) return 1;
    }
    if (ArrowArrayAppendInt(array->children[4], r) != NANOARROW_OK) return 1;
    if (ArrowArrayFinishElement(array) != NANOARROW_OK) return 1;
  }
  return ArrowArrayFinishBuildingDefault(array, &error) != NANOARROW_OK;
}

static int push(laminar_db* db, const char* const* k, const i128* a, const i128* b,
                const i128* w, int64_t n, laminar_error* err) {
  struct ArrowArray array;
  struct ArrowSchema schema;
  if (build(k, a, b, w, n, 18, 4, &array, &schema) != 0) return 1;
  laminar_source* src = NULL;
  int rc = laminar_source_open(db, "t", &src, err);
  if (rc == LAMINAR_OK) rc = laminar_source_push(src, &array, &schema, err);
  laminar_source_close(src);
  if (array.release != NULL) array.release(&array);
  schema.release(&schema);
  return rc;
}

static const char* SOURCE =
    "CREATE SOURCE t (k VARCHAR, a DECIMAL(18,4), b NUMERIC(10,2), w DECIMAL(38,2), "
    "ts BIGINT, WATERMARK FOR ts AS ts);";

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

/* ---- type errors -------------------------------------------------------------------- */

static int test_type_errors_name_the_place(void) {
  laminar_db* db = open_mem();
  CHECK(db != NULL);
  laminar_error err;
  CHECK_CODE(laminar_execute(db, SOURCE, &err), LAMINAR_OK, &err);
  int bad = 0;
  /* columns:     1234567890123456789012345678901234567890 */
  bad |= refused(db, "CREATE SOURCE u (x DECIMAL(39,2))", LAMINAR_ERR_UNKNOWN_TYPE, 28,
                 "DECIMAL(39,2) is not a type");
  bad |= refused(db, "CREATE SOURCE u (x DECIMAL(5,6))", LAMINAR_ERR_UNKNOWN_TYPE, 28,
                 "the scale 0 to the precision");
  bad |= refused(db, "CREATE STREAM s AS SELECT CAST(a AS DATE) FROM t",
                 LAMINAR_ERR_TYPE_MISMATCH, 27, "cannot CAST DECIMAL(18,4) to DATE");
  bad |= refused(db,
                 "CREATE STREAM s AS SELECT CAST(w AS DECIMAL(38,20)) * "
                 "CAST(w AS DECIMAL(38,19)) FROM t",
                 LAMINAR_ERR_TYPE_MISMATCH, 27, "needs scale 39");
  bad |= refused(db, "CREATE STREAM s AS SELECT CAST(a AS DECIMAL(38,37)) * a FROM t",
                 LAMINAR_ERR_TYPE_MISMATCH, 27, "needs scale 41");
  bad |=
      refused(db, "CREATE STREAM s AS SELECT w, COUNT(*) FROM t GROUP BY w EMIT CHANGES",
              LAMINAR_ERR_TYPE_MISMATCH, 55, "GROUP BY key of DECIMAL(38,2)");
  bad |= refused(
      db, "CREATE STREAM s AS SELECT LAG(a) OVER (PARTITION BY k ORDER BY ts) FROM t",
      LAMINAR_ERR_TYPE_MISMATCH, 27, "its column 'w' is DECIMAL(38,2)");
  bad |= refused(db, "CREATE STREAM s AS SELECT ARG_MAX(k, w) FROM t EMIT CHANGES",
                 LAMINAR_ERR_TYPE_MISMATCH, 27, "arg_max of DECIMAL(38,2)");
  bad |= refused(db,
                 "CREATE STREAM s AS SELECT APPROX_COUNT_DISTINCT(w) FROM t EMIT CHANGES",
                 LAMINAR_ERR_TYPE_MISMATCH, 27, "approx_count_distinct of DECIMAL(38,2)");
  bad |= refused(db, "CREATE STREAM s AS SELECT MAX(w) FROM t EMIT CHANGES",
                 LAMINAR_ERR_TYPE_MISMATCH, 27, "max of DECIMAL(38,2)");
  CHECK(bad == 0);
  laminar_close(db);
  return 0;
}

/* ---- Arrow in and out, arithmetic and casts ----------------------------------------- */

/* Column c of row r of `view` as text: strings as they are, decimals through
 * their digits. */
static void cell_text(const struct ArrowArrayView* v, const struct ArrowSchema* s,
                      int64_t r, char* buf, size_t cap) {
  if (ArrowArrayViewIsNull(v, r)) {
    snprintf(buf, cap, "null");
  } else if (s->format[0] == 'u') {
    struct ArrowStringView sv = ArrowArrayViewGetStringUnsafe(v, r);
    snprintf(buf, cap, "%.*s", (int)sv.size_bytes, sv.data);
  } else if (s->format[0] == 'b') {
    snprintf(buf, cap, "%s", ArrowArrayViewGetIntUnsafe(v, r) ? "true" : "false");
  } else {
    snprintf(buf, cap, "%lld", (long long)ArrowArrayViewGetIntUnsafe(v, r));
  }
}

/* The unscaled x of scale `scale` as text ("-0.0100"). */
static void fmt_dec(i128 x, int scale, char* buf, size_t cap) {
  char d[64];
  int n = 0;
  u128 u = x < 0 ? -(u128)x : (u128)x;
  do {
    d[n++] = (char)('0' + (int)(u % 10));
    u /= 10;
  } while (u != 0 || n <= scale);
  size_t at = 0;
  if (x < 0 && at + 1 < cap) buf[at++] = '-';
  for (int i = n - 1; i >= 0 && at + 2 < cap; i--) {
    buf[at++] = d[i];
    if (i == scale && scale > 0) buf[at++] = '.';
  }
  buf[at] = '\0';
}

static int test_decimal128_in_and_out(void) {
  laminar_db* db = open_mem();
  CHECK(db != NULL);
  laminar_error err;
  CHECK_CODE(laminar_execute(db, SOURCE, &err), LAMINAR_OK, &err);
  /* The types DuckDB gives each (typeof): a + b DECIMAL(19,4), a * b
   * DECIMAL(18,6), a - 1 DECIMAL(19,4), -b DECIMAL(10,2), w + w DECIMAL(38,2),
   * b % 3 DECIMAL(12,2). */
  CHECK_CODE(
      laminar_execute(
          db,
          "CREATE STREAM s AS SELECT a + b AS add, a * b AS mul, a - 1 AS sub1, "
          "-b AS neg, w + w AS ww, b % 3 AS mod3, "
          "CAST(a AS VARCHAR) AS txt, CAST(b AS INT) AS i, "
          "CAST(CAST(a AS DOUBLE) * 2 AS VARCHAR) AS dbl, "
          "CAST(a AS DECIMAL(5,1)) AS narrow, "
          "CAST(CAST(k AS DECIMAL(6,2)) AS VARCHAR) AS parsed, "
          "a > b AS gt, a = b AS eq, b < 2 AS lt_int, a <> 1.5 AS ne_dbl, a / b AS q "
          "FROM t",
          &err),
      LAMINAR_OK, &err);
  laminar_subscription* sub = NULL;
  CHECK_CODE(laminar_subscribe(db, "s", &sub, &err), LAMINAR_OK, &err);
  const char* k[4] = {"1.255", " -1.255e1 ", "abc", "12345.5"};
  /* a = 1.5, -2.5, NULL, 123456.7891; b = 1.50, 2.49, 3.00, -0.01;
   * w = 1.00, 10^36 - 0.01 (the largest: w + w overflows), 0, -5.55 */
  i128 big = 1;
  for (int i = 0; i < 38; i++) big *= 10;
  const i128 a[4] = {15000, -25000, NOVAL, 1234567891};
  const i128 b[4] = {150, 249, 300, -1};
  const i128 w[4] = {100, big - 1, 0, -555};
  CHECK_CODE(push(db, k, a, b, w, 4, &err), LAMINAR_OK, &err);
  CHECK_CODE(laminar_run_until_idle(db, &err), LAMINAR_OK, &err);
  struct ArrowArray out;
  struct ArrowSchema schema;
  CHECK_CODE(laminar_subscription_next(sub, 0, &out, &schema, &err), LAMINAR_OK, &err);
  CHECK(out.release != NULL && out.length == 4);
  const char* formats[6] = {"d:19,4", "d:18,6", "d:19,4", "d:10,2", "d:38,2", "d:12,2"};
  for (int c = 0; c < 6; c++) {
    if (strcmp(schema.children[c]->format, formats[c]) != 0) {
      fprintf(stderr, "column %d: format %s, want %s\n", c, schema.children[c]->format,
              formats[c]);
      return 1;
    }
  }
  EXPECT(strcmp(schema.children[15]->format, "g") == 0); /* '/': DOUBLE as DuckDB */
  struct ArrowArrayView view;
  struct ArrowError error;
  CHECK(ArrowArrayViewInitFromSchema(&view, &schema, &error) == NANOARROW_OK);
  CHECK(ArrowArrayViewSetArray(&view, &out, &error) == NANOARROW_OK);
  /* the decimal columns as text through a round trip of the unscaled value */
  static const char* want[4][15] = {
      {"3.0000", "2.250000", "0.5000", "-1.50", "2.00", "1.50", "1.5000", "2", "3.0",
       "1.5", "1.26", "false", "true", "true", "false"},
      {"-0.0100", "-6.225000", "-3.5000", "-2.49", "null", "2.49", "-2.5000", "2", "-5.0",
       "-2.5", "-12.55", "false", "false", "false", "true"},
      {"null", "null", "null", "-3.00", "0.00", "0.00", "null", "3", "null", "null",
       "null", "null", "null", "false", "null"},
      {"123456.7791", "-1234.567891", "123455.7891", "0.01", "-11.10", "-0.01",
       "123456.7891", "0", "246913.5782", "null", "null", "true", "false", "true",
       "true"}};
  for (int64_t r = 0; r < 4; r++) {
    for (int c = 0; c < 15; c++) {
      char got[96];
      const struct ArrowArrayView* v = view.children[c];
      if (schema.children[c]->format[0] == 'd' && !ArrowArrayViewIsNull(v, r)) {
        i128 x;
        memcpy(&x, v->buffer_views[1].data.as_uint8 + 16 * r, 16);
        fmt_dec(x, atoi(strchr(schema.children[c]->format, ',') + 1), got, sizeof got);
      } else {
        cell_text(v, schema.children[c], r, got, sizeof got);
      }
      if (strcmp(got, want[r][c]) != 0) {
        fprintf(stderr, "row %d column %s: got %s, want %s\n", (int)r,
                schema.children[c]->name, got, want[r][c]);
        lm_test_expect_failed_ = 1;
      }
    }
  }
  ArrowArrayViewReset(&view);
  out.release(&out);
  schema.release(&schema);
  laminar_subscription_close(sub);
  laminar_close(db);
  return lm_test_expect_failed_;
}

static int test_other_decimals_are_refused(void) {
  laminar_db* db = open_mem();
  CHECK(db != NULL);
  laminar_error err;
  CHECK_CODE(laminar_execute(db, SOURCE, &err), LAMINAR_OK, &err);
  laminar_source* src = NULL;
  CHECK_CODE(laminar_source_open(db, "t", &src, &err), LAMINAR_OK, &err);
  const char* k[1] = {"a"};
  const i128 b[1] = {1}, w[1] = {1};
  /* another scale, another precision, then a value of 19 digits in DECIMAL(18,4) */
  const int prec[3] = {18, 17, 18}, scale[3] = {3, 4, 4};
  i128 nineteen = 1;
  for (int i = 0; i < 18; i++) nineteen *= 10;
  const i128 a[3] = {1, 1, nineteen};
  for (int i = 0; i < 3; i++) {
    struct ArrowArray array;
    struct ArrowSchema schema;
    CHECK(build(k, &a[i], b, w, 1, prec[i], scale[i], &array, &schema) == 0);
    CHECK_CODE(laminar_source_push(src, &array, &schema, &err), LAMINAR_ERR_COLUMN_TYPE,
               &err);
    CHECK(array.release != NULL);  // refused whole: still the caller's
    CHECK(strstr(err.message, "'a'") != NULL &&
          strstr(err.message, "DECIMAL(18,4)") != NULL);
    if (i < 2)
      CHECK(strstr(err.message, i == 0 ? "decimal128(18, 3)" : "decimal128(17, 4)"));
    array.release(&array);
    schema.release(&schema);
  }
  laminar_source_close(src);
  laminar_close(db);
  return 0;
}

/* ---- functions ------------------------------------------------------------------------ */

/* abs, round, floor, ceil keep a DECIMAL (the values are DuckDB's). */
static int test_functions_keep_decimal(void) {
  laminar_db* db = open_mem();
  CHECK(db != NULL);
  laminar_error err;
  CHECK_CODE(laminar_execute(db, SOURCE, &err), LAMINAR_OK, &err);
  CHECK_CODE(laminar_execute(
                 db,
                 "CREATE STREAM s AS SELECT CAST(abs(b) AS VARCHAR) AS ab, "
                 "CAST(round(a, 1) AS VARCHAR) AS r1, CAST(floor(a) AS VARCHAR) AS fl, "
                 "CAST(ceil(a) AS VARCHAR) AS ce, CAST(round(w) AS VARCHAR) AS rw, "
                 "CAST(round(b) AS VARCHAR) AS rb, round(w) AS rw_type FROM t",
                 &err),
             LAMINAR_OK, &err);
  laminar_subscription* sub = NULL;
  CHECK_CODE(laminar_subscribe(db, "s", &sub, &err), LAMINAR_OK, &err);
  i128 big = 1;
  for (int i = 0; i < 38; i++) big *= 10;
  const char* k[2] = {"x", "y"};
  const i128 a[2] = {-25000, 12500}, b[2] = {-249, 50}, w[2] = {big - 1, -1};
  CHECK_CODE(push(db, k, a, b, w, 2, &err), LAMINAR_OK, &err);
  CHECK_CODE(laminar_run_until_idle(db, &err), LAMINAR_OK, &err);
  struct ArrowArray out;
  struct ArrowSchema schema;
  CHECK_CODE(laminar_subscription_next(sub, 0, &out, &schema, &err), LAMINAR_OK, &err);
  CHECK(out.release != NULL && out.length == 2);
  EXPECT(strcmp(schema.children[6]->format, "d:38,0") == 0);
  struct ArrowArrayView view;
  struct ArrowError error;
  CHECK(ArrowArrayViewInitFromSchema(&view, &schema, &error) == NANOARROW_OK);
  CHECK(ArrowArrayViewSetArray(&view, &out, &error) == NANOARROW_OK);
  static const char* want[2][6] = {
      {"2.49", "-2.5", "-3", "-2", "1000000000000000000000000000000000000", "-2"},
      {"0.50", "1.3", "1", "2", "0", "1"}};
  for (int64_t r = 0; r < 2; r++) {
    for (int c = 0; c < 6; c++) {
      char got[96];
      cell_text(view.children[c], schema.children[c], r, got, sizeof got);
      if (strcmp(got, want[r][c]) != 0) {
        fprintf(stderr, "row %d %s: got %s, want %s\n", (int)r, schema.children[c]->name,
                got, want[r][c]);
        lm_test_expect_failed_ = 1;
      }
    }
  }
  ArrowArrayViewReset(&view);
  out.release(&out);
  schema.release(&schema);
  laminar_subscription_close(sub);
  laminar_close(db);
  return lm_test_expect_failed_;
}

/* ---- tables ------------------------------------------------------------------------- */

/* INSERT into a DECIMAL key of a table ('1.255' rounds, 2 and 0.5 convert),
 * then a lookup join on it. */
static int test_table_insert_and_lookup_join(void) {
  laminar_db* db = open_mem();
  CHECK(db != NULL);
  laminar_error err;
  CHECK_CODE(laminar_execute(db, SOURCE, &err), LAMINAR_OK, &err);
  CHECK_CODE(
      laminar_execute(db,
                      "CREATE TABLE ref (id DECIMAL(10,2) PRIMARY KEY, name VARCHAR);"
                      "INSERT INTO ref VALUES ('1.255', 'x'), (2, 'y'), (0.5, 'z');"
                      "CREATE STREAM s AS SELECT k, r.name FROM t JOIN ref r "
                      "ON t.b = r.id;",
                      &err),
      LAMINAR_OK, &err);
  CHECK(refused(db, "INSERT INTO ref VALUES ('123456789.5', 'big')",
                LAMINAR_ERR_TYPE_MISMATCH, 25, "DECIMAL(10,2)") == 0);
  laminar_subscription* sub = NULL;
  CHECK_CODE(laminar_subscribe(db, "s", &sub, &err), LAMINAR_OK, &err);
  CHECK_CODE(laminar_run_until_idle(db, &err), LAMINAR_OK, &err);
  const char* k[4] = {"p", "q", "r", "s"};
  const i128 a[4] = {0, 0, 0, 0}, w[4] = {0, 0, 0, 0};
  const i128 b[4] = {126, 200, 50, 125};
  CHECK_CODE(push(db, k, a, b, w, 4, &err), LAMINAR_OK, &err);
  CHECK_CODE(laminar_run_until_idle(db, &err), LAMINAR_OK, &err);
  struct ArrowArray out;
  struct ArrowSchema schema;
  CHECK_CODE(laminar_subscription_next(sub, 0, &out, &schema, &err), LAMINAR_OK, &err);
  CHECK(out.release != NULL && out.length == 3);
  struct ArrowArrayView view;
  struct ArrowError error;
  CHECK(ArrowArrayViewInitFromSchema(&view, &schema, &error) == NANOARROW_OK);
  CHECK(ArrowArrayViewSetArray(&view, &out, &error) == NANOARROW_OK);
  char got[64] = "";
  for (int64_t r = 0; r < 3; r++) {
    char kk[8], nn[8];
    cell_text(view.children[0], schema.children[0], r, kk, sizeof kk);
    cell_text(view.children[1], schema.children[1], r, nn, sizeof nn);
    size_t at = strlen(got);
    snprintf(got + at, sizeof got - at, "%s=%s;", kk, nn);
  }
  EXPECT(strcmp(got, "p=x;q=y;r=z;") == 0);
  if (strcmp(got, "p=x;q=y;r=z;") != 0) fprintf(stderr, "got %s\n", got);
  ArrowArrayViewReset(&view);
  out.release(&out);
  schema.release(&schema);
  laminar_subscription_close(sub);
  laminar_close(db);
  return lm_test_expect_failed_;
}

/* ---- snapshots and the WAL ------------------------------------------------------------ */

static const char* RUNNING =
    "CREATE STREAM s AS SELECT b, CAST(SUM(a) AS VARCHAR) AS total, "
    "CAST(MIN(a) AS VARCHAR) AS lo, CAST(MAX(a) AS VARCHAR) AS hi, "
    "SUM(a) AS raw, SUM(w) AS wide, COUNT(*) AS n FROM t GROUP BY b EMIT CHANGES;";

/* Batch i of the input: DECIMAL keys b, values of a near +-10^14, NULLs. */
static int push_batch(laminar_db* db, int i, laminar_error* err) {
  const char* k[4] = {"a", "b", "a", "c"};
  i128 a[4], b[4], w[4];
  for (int r = 0; r < 4; r++) {
    b[r] = (i == 1 && r == 3) ? NOVAL : (i128)((i * 7 + r) % 3) * 125 - 250;
    a[r] =
        (i + r) % 5 == 0 ? NOVAL : (i128)(i * 1000003 - r * 37) * 100000000 + 12345 * r;
    w[r] = (i128)(i * 1000 + r) * 1000000000000000000 + r;
  }
  return push(db, k, a, b, w, 4, err);
}

static int drain_keys(laminar_subscription* sub, char* buf, size_t cap) {
  /* the key column b is a DECIMAL(10,2): read its unscaled value */
  laminar_error err;
  for (;;) {
    struct ArrowArray out;
    struct ArrowSchema schema;
    CHECK_CODE(laminar_subscription_next(sub, 0, &out, &schema, &err), LAMINAR_OK, &err);
    if (out.release == NULL) return 0;
    CHECK(strcmp(schema.children[0]->format, "d:10,2") == 0);
    CHECK(strcmp(schema.children[4]->format, "d:38,4") == 0); /* SUM: DuckDB's type */
    CHECK(strcmp(schema.children[5]->format, "d:38,2") == 0);
    struct ArrowArrayView view;
    struct ArrowError error;
    CHECK(ArrowArrayViewInitFromSchema(&view, &schema, &error) == NANOARROW_OK);
    CHECK(ArrowArrayViewSetArray(&view, &out, &error) == NANOARROW_OK);
    for (int64_t r = 0; r < out.length; r++) {
      size_t at = strlen(buf);
      for (int c = 0; c < out.n_children; c++) {
        char cell[96];
        if (schema.children[c]->format[0] == 'd' &&
            !ArrowArrayViewIsNull(view.children[c], r)) {
          i128 x;
          memcpy(&x, view.children[c]->buffer_views[1].data.as_uint8 + 16 * r, 16);
          fmt_dec(x, atoi(strchr(schema.children[c]->format, ',') + 1), cell,
                  sizeof cell);
        } else {
          cell_text(view.children[c], schema.children[c], r, cell, sizeof cell);
        }
        at += (size_t)snprintf(buf + at, cap - at, "%s%s", c ? "|" : "", cell);
      }
      snprintf(buf + at, cap - at, ";");
    }
    ArrowArrayViewReset(&view);
    out.release(&out);
    schema.release(&schema);
  }
}

/* The EMIT CHANGES output of batches [4, 7): one run, or a checkpoint after
 * batch 2, batch 3 logged in the WAL only, a close and a restart. The
 * restarted run's changelog equals the uninterrupted one's: the DECIMAL keys
 * and sums came back from the snapshot and the replayed WAL record. */
static int run_pipeline(const char* dir, bool restart, char* tail, size_t cap) {
  laminar_config* cfg = NULL;
  laminar_error err;
  CHECK_CODE(laminar_config_create(&cfg), LAMINAR_OK, NULL);
  CHECK_CODE(laminar_config_set(cfg, "data_dir", dir, &err), LAMINAR_OK, &err);
  CHECK_CODE(laminar_config_set(cfg, "checkpoint_interval", "1 hour", &err), LAMINAR_OK,
             &err);
  CHECK_CODE(laminar_config_set(cfg, "wal_mode", "sync", &err), LAMINAR_OK, &err);
  laminar_db* db = NULL;
  CHECK_CODE(laminar_open(cfg, &db, &err), LAMINAR_OK, &err);
  CHECK_CODE(laminar_execute(db, SOURCE, &err), LAMINAR_OK, &err);
  CHECK_CODE(laminar_execute(db, RUNNING, &err), LAMINAR_OK, &err);
  laminar_subscription* sub = NULL;
  CHECK_CODE(laminar_subscribe(db, "s", &sub, &err), LAMINAR_OK, &err);
  static char scratch[32768];
  scratch[0] = '\0';
  for (int i = 0; i < 4; i++) {
    if (i == 3 && restart) CHECK_CODE(laminar_checkpoint(db, &err), LAMINAR_OK, &err);
    CHECK_CODE(push_batch(db, i, &err), LAMINAR_OK, &err);
    CHECK_CODE(laminar_run_until_idle(db, &err), LAMINAR_OK, &err);
  }
  if (restart) {
    laminar_subscription_close(sub);
    CHECK_CODE(laminar_close(db), LAMINAR_OK, NULL);
    CHECK_CODE(laminar_open(cfg, &db, &err), LAMINAR_OK, &err);
    CHECK_CODE(laminar_subscribe(db, "s", &sub, &err), LAMINAR_OK, &err);
    CHECK_CODE(laminar_run_until_idle(db, &err), LAMINAR_OK, &err);
  }
  CHECK(drain_keys(sub, scratch, sizeof scratch) == 0);
  for (int i = 4; i < 7; i++) {
    CHECK_CODE(push_batch(db, i, &err), LAMINAR_OK, &err);
    CHECK_CODE(laminar_run_until_idle(db, &err), LAMINAR_OK, &err);
  }
  tail[0] = '\0';
  CHECK(drain_keys(sub, tail, cap) == 0);
  laminar_subscription_close(sub);
  CHECK_CODE(laminar_close(db), LAMINAR_OK, NULL);
  laminar_config_destroy(cfg);
  return 0;
}

static int test_decimal_state_survives_a_restart(void) {
  char dir1[64], dir2[64];
  CHECK(lm_test_mkdtemp(dir1, sizeof dir1, "lm_dec_") == 0);
  CHECK(lm_test_mkdtemp(dir2, sizeof dir2, "lm_dec_") == 0);
  static char want[32768], got[32768];
  int rc = run_pipeline(dir1, false, want, sizeof want);
  if (rc == 0) rc = run_pipeline(dir2, true, got, sizeof got);
  lm_test_rmtree(dir1);
  lm_test_rmtree(dir2);
  CHECK(rc == 0);
  CHECK(strlen(want) > 0);
  if (strcmp(want, got) != 0) {
    fprintf(stderr, "uninterrupted: %s\nrestarted:     %s\n", want, got);
    return 1;
  }
  /* a negative DECIMAL key */
  CHECK(strstr(want, "-1.25|") != NULL);
  return 0;
}

int main(int argc, char** argv) {
  static const lm_test_case cases[] = {
      {"type_errors_name_the_place", test_type_errors_name_the_place},
      {"decimal128_in_and_out", test_decimal128_in_and_out},
      {"other_decimals_are_refused", test_other_decimals_are_refused},
      {"functions_keep_decimal", test_functions_keep_decimal},
      {"table_insert_and_lookup_join", test_table_insert_and_lookup_join},
      {"decimal_state_survives_a_restart", test_decimal_state_survives_a_restart},
      {NULL, NULL}};
  return lm_test_main(argc, argv, cases);
}
