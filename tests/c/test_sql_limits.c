/*
 * test_sql_limits.c -- the SQL front end and catalog at their size limits,
 * through laminar_execute()/laminar_query(): nesting far beyond LM_SQL_MAX_DEPTH
 * is refused with LDB-1008 (no stack overflow), a 10 MB statement either runs or
 * fails with a defined code, one beyond LM_SQL_MAX_STMT_BYTES is LDB-1008, and a
 * 5,000-column source is created, described and streamed from. Elapsed times are
 * printed for information only: no test asserts on time.
 */
/* lm_ctest: LABELS unit TIMEOUT 300 */
#include "laminar.h"

#include "arrow_build.h"
#include "lm_test.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static const char* TRADES_SQL =
    "CREATE SOURCE trades (symbol VARCHAR NOT NULL, price DOUBLE, volume BIGINT, ts "
    "BIGINT, "
    "WATERMARK FOR ts AS ts - INTERVAL '100' MILLISECOND)";

static double now_s(void) {
  struct timespec ts;
  timespec_get(&ts, TIME_UTC);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* A growable NUL-terminated string; `failed` latches an allocation failure. */
typedef struct sbuf {
  char* s;
  size_t len;
  size_t cap;
  int failed;
} sbuf;

static void sb_add(sbuf* b, const char* text, size_t n) {
  if (b->failed) return;
  if (b->len + n + 1 > b->cap) {
    size_t cap = b->cap ? b->cap : 1024;
    while (cap < b->len + n + 1) cap *= 2;
    char* grown = realloc(b->s, cap);
    if (grown == NULL) {
      b->failed = 1;
      return;
    }
    b->s = grown;
    b->cap = cap;
  }
  memcpy(b->s + b->len, text, n);
  b->len += n;
  b->s[b->len] = '\0';
}

static void sb_str(sbuf* b, const char* text) { sb_add(b, text, strlen(text)); }

/* `n` copies of `text`. */
static void sb_rep(sbuf* b, const char* text, size_t n) {
  size_t len = strlen(text);
  for (size_t i = 0; i < n; i++) sb_add(b, text, len);
}

/* Open a database holding `trades`. */
static int open_trades(laminar_db** db) {
  laminar_error err;
  CHECK_CODE(laminar_open(NULL, db, &err), LAMINAR_OK, &err);
  CHECK_CODE(laminar_execute(*db, TRADES_SQL, &err), LAMINAR_OK, &err);
  return 0;
}

/* Run `sql` and report code and time; *out_rc gets the code. */
static void timed_execute(laminar_db* db, const char* label, const char* sql,
                          laminar_error* err, laminar_code* out_rc) {
  double t0 = now_s();
  *out_rc = laminar_execute(db, sql, err);
  printf("%-28s %9zu bytes -> %d in %.3f s%s%.120s\n", label, strlen(sql), (int)*out_rc,
         now_s() - t0, *out_rc ? ": " : "", *out_rc ? err->message : "");
}

/* The number of rows a laminar_query() stream yields; -1 on a stream error. */
static int64_t count_rows(struct ArrowArrayStream* st) {
  int64_t rows = 0;
  for (;;) {
    struct ArrowArray a;
    if (st->get_next(st, &a) != 0) return -1;
    if (a.release == NULL) break;
    rows += a.length;
    a.release(&a);
  }
  return rows;
}

/* Push three trades (volume 0, 7919 * 5, 3; symbols "a", "bb", "ccc") into
 * `trades`, close every window, drive the graph and return the first result
 * batch of `sub` in *rv (rv->array.release NULL if none). */
static int push_and_collect(laminar_db* db, laminar_subscription* sub, result_view* rv) {
  laminar_error err;
  laminar_source* src;
  CHECK_CODE(laminar_source_open(db, "trades", &src, &err), LAMINAR_OK, &err);
  const trade_row rows[] = {
      {"a", 1.0, false, 0, false, 1000},
      {"bb", 2.0, false, 7919 * 5, false, 1001},
      {"ccc", 3.0, false, 3, false, 1002},
  };
  struct ArrowArray array;
  struct ArrowSchema schema;
  CHECK(build_trades(rows, 3, false, &array, &schema) == 0);
  laminar_code rc = laminar_source_push(src, &array, &schema, &err);
  schema.release(&schema);
  if (array.release != NULL) array.release(&array);
  CHECK_CODE(rc, LAMINAR_OK, &err);
  CHECK_CODE(laminar_source_watermark(src, INT64_MAX, &err), LAMINAR_OK, &err);
  laminar_source_close(src);
  double t0 = now_s();
  CHECK_CODE(laminar_run_until_idle(db, &err), LAMINAR_OK, &err);
  printf("  3 rows through it in %.3f s\n", now_s() - t0);
  memset(rv, 0, sizeof *rv);
  CHECK_CODE(laminar_subscription_next(sub, 0, &rv->array, &rv->schema, &err), LAMINAR_OK,
             &err);
  if (rv->array.release != NULL) CHECK(result_view_init(rv) == 0);
  return 0;
}

/* ---- nesting ------------------------------------------------------------------- */

/* Every shape of 10,000-deep nesting the grammar allows is refused with
 * LDB-1008, positioned, and leaves the catalog unchanged. */
static int test_deep_nesting(void) {
  enum { DEPTH = 10000 };
  laminar_db* db;
  if (open_trades(&db) != 0) return 1;
  static const struct {
    const char* label;
    const char* open;  /* repeated DEPTH times before the operand */
    const char* close; /* repeated DEPTH times after it */
  } shapes[] = {
      {"parentheses", "(", ")"},
      {"unary minus", "- ", ""},
      {"NOT", "NOT ", ""},
      {"function calls", "COALESCE(", ", 1)"},
      {"CAST", "CAST(", " AS DOUBLE)"},
      {"CASE", "CASE WHEN TRUE THEN ", " END"},
      {"right-nested +", "volume + (", ")"},
  };
  for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
    sbuf b = {0};
    sb_str(&b, "CREATE STREAM s AS SELECT ");
    sb_rep(&b, shapes[i].open, DEPTH);
    sb_str(&b, "volume");
    sb_rep(&b, shapes[i].close, DEPTH);
    sb_str(&b, " AS x FROM trades");
    CHECK(!b.failed);
    laminar_error err;
    laminar_code rc;
    timed_execute(db, shapes[i].label, b.s, &err, &rc);
    free(b.s);
    EXPECT(rc == LAMINAR_ERR_SQL_LIMIT);
    EXPECT(err.code == rc);
    EXPECT(err.line == 1 && err.column >= 1);
    EXPECT(strncmp(err.message, "LDB-1008", 8) == 0);
  }
  /* A left-deep chain (a + a + ... + a) is built by a loop in the parser, but its
   * tree is as tall as it is long: refused too, not recursed over later. */
  sbuf b = {0};
  sb_str(&b, "CREATE STREAM s AS SELECT volume");
  sb_rep(&b, " + volume", 100000);
  sb_str(&b, " AS x FROM trades WHERE ts > 0");
  sb_rep(&b, " AND ts > 0", 100000);
  CHECK(!b.failed);
  laminar_error err;
  laminar_code rc;
  timed_execute(db, "left-deep chains", b.s, &err, &rc);
  free(b.s);
  EXPECT(rc == LAMINAR_ERR_SQL_LIMIT);
  EXPECT(err.line == 1);
  /* Nothing was created by the refused statements. */
  CHECK_CODE(laminar_execute(db, "DESCRIBE s", &err), LAMINAR_ERR_SQL_UNKNOWN_OBJECT,
             &err);
  /* Just under the limit still works: 200 parentheses. */
  b = (sbuf){0};
  sb_str(&b, "CREATE STREAM s AS SELECT ");
  sb_rep(&b, "(", 200);
  sb_str(&b, "volume");
  sb_rep(&b, ")", 200);
  sb_str(&b, " AS x FROM trades");
  CHECK(!b.failed);
  timed_execute(db, "200 parentheses", b.s, &err, &rc);
  free(b.s);
  EXPECT(rc == LAMINAR_OK);
  CHECK_CODE(laminar_close(db), LAMINAR_OK, NULL);
  return 0;
}

/* ---- large statements ----------------------------------------------------------- */

/* A code a 10 MB statement may legitimately end with. */
static int defined_big_code(laminar_code rc) {
  return rc == LAMINAR_OK || rc == LAMINAR_ERR_SQL_LIMIT || rc == LAMINAR_ERR_NOMEM;
}

static int test_large_statements(void) {
  enum { TEN_MB = 10 * 1024 * 1024 };
  laminar_db* db;
  if (open_trades(&db) != 0) return 1;
  laminar_error err;
  laminar_code rc;

  /* A 10 MB IN list. */
  sbuf b = {0};
  sb_str(&b,
         "CREATE STREAM in_list AS SELECT symbol, volume FROM trades WHERE volume IN (0");
  char num[32];
  for (long i = 1; b.len < TEN_MB && !b.failed; i++) {
    int n = snprintf(num, sizeof num, ", %ld", i * 7919);
    sb_add(&b, num, (size_t)n);
  }
  sb_str(&b, ")");
  CHECK(!b.failed);
  timed_execute(db, "10 MB IN list", b.s, &err, &rc);
  free(b.s);
  EXPECT(defined_big_code(rc));
  if (rc != LAMINAR_OK) EXPECT(err.code == rc);
  if (rc == LAMINAR_OK) {
    /* The list is evaluated right: 0 and 7919 * 5 are in it, 3 is not. */
    laminar_subscription* sub;
    CHECK_CODE(laminar_subscribe(db, "in_list", &sub, &err), LAMINAR_OK, &err);
    result_view rv;
    int failed = push_and_collect(db, sub, &rv);
    if (failed == 0) {
      EXPECT(rv.array.release != NULL && rv.array.length == 2);
      if (rv.array.release != NULL && rv.array.length == 2) {
        int64_t c = result_col_index(&rv, "volume");
        EXPECT(c >= 0 && ArrowArrayViewGetIntUnsafe(rv.view.children[c], 0) == 0);
        EXPECT(c >= 0 && ArrowArrayViewGetIntUnsafe(rv.view.children[c], 1) == 7919 * 5);
      }
    }
    result_view_free(&rv);
    laminar_subscription_close(sub);
    CHECK(failed == 0);
    CHECK_CODE(laminar_execute(db, "DROP STREAM in_list", &err), LAMINAR_OK, &err);
  }

  /* A 10 MB string literal. */
  b = (sbuf){0};
  sb_str(&b, "CREATE STREAM long_str AS SELECT symbol || '");
  sb_rep(&b, "0123456789abcdef", TEN_MB / 16);
  sb_str(&b, "' AS s FROM trades");
  CHECK(!b.failed);
  timed_execute(db, "10 MB string literal", b.s, &err, &rc);
  free(b.s);
  EXPECT(defined_big_code(rc));
  if (rc != LAMINAR_OK) EXPECT(err.code == rc);
  if (rc == LAMINAR_OK) {
    /* Each output value is the symbol followed by the whole literal. */
    laminar_subscription* sub;
    CHECK_CODE(laminar_subscribe(db, "long_str", &sub, &err), LAMINAR_OK, &err);
    result_view rv;
    int failed = push_and_collect(db, sub, &rv);
    if (failed == 0) {
      EXPECT(rv.array.release != NULL && rv.array.length == 3);
      if (rv.array.release != NULL && rv.array.length == 3) {
        struct ArrowStringView v = ArrowArrayViewGetStringUnsafe(rv.view.children[0], 2);
        EXPECT(v.size_bytes == 3 + TEN_MB / 16 * 16);
        EXPECT(v.size_bytes > 19 && memcmp(v.data, "ccc0123456789abcdef", 19) == 0);
      }
    }
    result_view_free(&rv);
    laminar_subscription_close(sub);
    CHECK(failed == 0);
  }

  /* 10 MB of comment and whitespace around a small statement. */
  b = (sbuf){0};
  sb_str(&b, "/* ");
  sb_rep(&b, "comment ", TEN_MB / 8);
  sb_str(&b, " */ SHOW STREAMS; ");
  sb_rep(&b, "-- line\n", TEN_MB / 8);
  CHECK(!b.failed);
  timed_execute(db, "10 MB of comments", b.s, &err, &rc);
  free(b.s);
  EXPECT(defined_big_code(rc));

  /* 100,000 tiny statements in one call. */
  b = (sbuf){0};
  sb_rep(&b, "SHOW SOURCES;", 100000);
  CHECK(!b.failed);
  timed_execute(db, "100000 statements", b.s, &err, &rc);
  free(b.s);
  EXPECT(rc == LAMINAR_OK);

  /* Beyond the per-statement limit (16 MB): refused with LDB-1008. */
  b = (sbuf){0};
  sb_str(&b, "CREATE STREAM too_long AS SELECT '");
  sb_rep(&b, "0123456789abcdef", (size_t)17 * 1024 * 1024 / 16);
  sb_str(&b, "' AS s FROM trades");
  CHECK(!b.failed);
  timed_execute(db, "17 MB string literal", b.s, &err, &rc);
  free(b.s);
  EXPECT(rc == LAMINAR_ERR_SQL_LIMIT);
  EXPECT(err.code == rc && err.line == 1);
  CHECK_CODE(laminar_execute(db, "DESCRIBE too_long", &err),
             LAMINAR_ERR_SQL_UNKNOWN_OBJECT, &err);
  CHECK_CODE(laminar_close(db), LAMINAR_OK, NULL);
  return 0;
}

/* ---- wide schemas --------------------------------------------------------------- */

static int test_wide_source(void) {
  enum { NCOLS = 5000 };
  static const char* const types[] = {"BIGINT", "DOUBLE", "VARCHAR", "INT", "BOOLEAN"};
  laminar_db* db;
  laminar_error err;
  CHECK_CODE(laminar_open(NULL, &db, &err), LAMINAR_OK, &err);
  sbuf b = {0};
  sb_str(&b, "CREATE SOURCE wide (");
  char col[64];
  for (int i = 0; i < NCOLS; i++) {
    int n = snprintf(col, sizeof col, "%sc%d %s%s", i ? ", " : "", i, types[i % 5],
                     i % 7 == 0 ? " NOT NULL" : "");
    sb_add(&b, col, (size_t)n);
  }
  sb_str(&b, ", WATERMARK FOR c0 AS c0 - INTERVAL '1' SECOND)");
  CHECK(!b.failed);
  laminar_code rc;
  timed_execute(db, "CREATE SOURCE 5000 columns", b.s, &err, &rc);
  free(b.s);
  CHECK(rc == LAMINAR_OK);

  /* DESCRIBE: one row per column, in declaration order. */
  struct ArrowArrayStream st;
  double t0 = now_s();
  CHECK_CODE(laminar_query(db, "DESCRIBE wide", &st, &err), LAMINAR_OK, &err);
  int64_t rows = count_rows(&st);
  st.release(&st);
  printf("DESCRIBE wide: %lld rows in %.3f s\n", (long long)rows, now_s() - t0);
  CHECK(rows == NCOLS);

  /* A stream of every column, and one of many expressions over them. */
  timed_execute(db, "CREATE STREAM SELECT *",
                "CREATE STREAM all_cols AS SELECT * FROM wide", &err, &rc);
  CHECK(rc == LAMINAR_OK);
  CHECK_CODE(laminar_query(db, "DESCRIBE all_cols", &st, &err), LAMINAR_OK, &err);
  rows = count_rows(&st);
  st.release(&st);
  CHECK(rows == NCOLS);

  b = (sbuf){0};
  sb_str(&b, "CREATE STREAM sums AS SELECT window_start");
  for (int i = 0; i < NCOLS; i += 5) {
    int n =
        snprintf(col, sizeof col, ", SUM(c%d) AS s%d, MAX(c%d) AS m%d", i, i, i + 2, i);
    sb_add(&b, col, (size_t)n);
  }
  sb_str(&b, " FROM wide GROUP BY tumble(c0, INTERVAL '1' SECOND)");
  CHECK(!b.failed);
  timed_execute(db, "CREATE STREAM 2000 aggregates", b.s, &err, &rc);
  free(b.s);
  CHECK(rc == LAMINAR_OK);
  CHECK_CODE(laminar_query(db, "DESCRIBE sums", &st, &err), LAMINAR_OK, &err);
  rows = count_rows(&st);
  st.release(&st);
  CHECK(rows == 1 + 2 * (NCOLS / 5));

  /* SHOW SOURCES formats all 5000 column declarations into one cell. */
  CHECK_CODE(laminar_query(db, "SHOW SOURCES", &st, &err), LAMINAR_OK, &err);
  rows = count_rows(&st);
  st.release(&st);
  CHECK(rows == 1);
  CHECK_CODE(laminar_query(db, "SHOW STREAMS", &st, &err), LAMINAR_OK, &err);
  rows = count_rows(&st);
  st.release(&st);
  CHECK(rows == 2);

  /* A duplicate among 5000 columns is still found. */
  b = (sbuf){0};
  sb_str(&b, "CREATE SOURCE wide2 (");
  for (int i = 0; i < NCOLS; i++) {
    int n =
        snprintf(col, sizeof col, "%sc%d BIGINT", i ? ", " : "", i == NCOLS - 1 ? 17 : i);
    sb_add(&b, col, (size_t)n);
  }
  sb_str(&b, ")");
  CHECK(!b.failed);
  timed_execute(db, "5000 columns, one duplicate", b.s, &err, &rc);
  free(b.s);
  EXPECT(rc == LAMINAR_ERR_SCHEMA_INVALID || rc == LAMINAR_ERR_SQL_DUPLICATE_OBJECT);
  EXPECT(err.code == rc);

  CHECK_CODE(laminar_execute(
                 db, "DROP STREAM sums; DROP STREAM all_cols; DROP SOURCE wide", &err),
             LAMINAR_OK, &err);
  CHECK_CODE(laminar_close(db), LAMINAR_OK, NULL);
  return 0;
}

static const lm_test_case cases[] = {
    {"deep_nesting", test_deep_nesting},
    {"large_statements", test_large_statements},
    {"wide_source", test_wide_source},
    {NULL, NULL},
};

int main(int argc, char** argv) { return lm_test_main(argc, argv, cases); }
