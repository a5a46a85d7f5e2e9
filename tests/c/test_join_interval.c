/*
 * test_join_interval.c -- interval joins through laminar.h (the semantics
 * against DuckDB are tests/python/test_join_interval.py):
 *  - errors: no time bound (on either end or one), a type mismatch in ON,
 *    bounds over two pairs of time columns, a CROSS join: their codes with
 *    line and column, and nothing created by a failure;
 *  - held rows: the join's metrics show each side's rows and bytes held,
 *    and both fall to zero once the watermarks pass;
 *  - durable: a FULL interval join and a window over an inner one (file
 *    sinks on both) on a durable database, copied mid-run as a crash leaves
 *    it, reopened and each source resumed from its offset, give an
 *    uninterrupted run's output, on one reactor and on two.
 */
/* lm_ctest: TIMEOUT 240 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE  // mkdtemp, scandir under -std=c17 (the shared test headers)
#endif

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "join_util.h"
#include "lm_test.h"

static const char* AB =
    "CREATE SOURCE a (symbol VARCHAR, price DOUBLE, volume BIGINT, ts BIGINT, t2 BIGINT,"
    "  WATERMARK FOR ts);"
    "CREATE SOURCE b (symbol VARCHAR, price DOUBLE, volume BIGINT, ts BIGINT, t2 BIGINT,"
    "  WATERMARK FOR ts);";

static int test_errors(void) {
  laminar_db* db;
  laminar_error err;
  CHECK_CODE(laminar_open(NULL, &db, &err), LAMINAR_OK, &err);
  CHECK_CODE(laminar_execute(db, AB, &err), LAMINAR_OK, &err);
  CHECK(expect_error(db, "SELECT t.ts FROM a t JOIN b q ON t.symbol = q.symbol",
                     LAMINAR_ERR_SQL_UNBOUNDED_JOIN, "JOIN") == 0);
  CHECK(expect_error(db,
                     "SELECT t.ts FROM a t LEFT JOIN b q ON t.symbol = q.symbol "
                     "AND q.ts <= t.ts + INTERVAL '1' SECOND",
                     LAMINAR_ERR_SQL_UNBOUNDED_JOIN, "LEFT") == 0);
  CHECK_CODE(laminar_execute(db,
                             "CREATE STREAM e AS SELECT t.ts FROM a t FULL JOIN b q "
                             "ON q.ts >= t.ts",
                             &err),
             LAMINAR_ERR_SQL_UNBOUNDED_JOIN, &err);
  CHECK(strstr(err.message, "upper end") != NULL);
  CHECK(expect_error(db,
                     "SELECT t.ts FROM a t JOIN b q ON t.price = q.symbol "
                     "AND q.ts BETWEEN t.ts AND t.ts + 5",
                     LAMINAR_ERR_TYPE_MISMATCH, "t.price") == 0);
  CHECK(expect_error(db,
                     "SELECT t.ts FROM a t JOIN b q ON q.ts >= t.ts "
                     "AND q.t2 <= t.t2 + 5",
                     LAMINAR_ERR_SQL_JOIN_CONDITION, "q.t2 <=") == 0);
  CHECK(expect_error(db, "SELECT t.ts FROM a t CROSS JOIN b q",
                     LAMINAR_ERR_SQL_UNSUPPORTED, "CROSS") == 0);
  /* Nothing was created by the failures. */
  CHECK_CODE(laminar_execute(db,
                             "CREATE STREAM e AS SELECT t.ts FROM a t RIGHT JOIN b q "
                             "ON t.symbol = q.symbol AND q.ts BETWEEN t.ts AND t.ts + 5",
                             &err),
             LAMINAR_OK, &err);
  laminar_close(db);
  return 0;
}

/* Each side's rows and bytes held (join_left_rows, join_left_bytes, ...). */
static void held(laminar_db* db, int64_t out[4]) {
  static const char* const names[] = {"join_left_rows", "join_left_bytes",
                                      "join_right_rows", "join_right_bytes"};
  for (int i = 0; i < 4; i++) out[i] = stream_metric(db, "j", names[i]);
}

static int push_ab(laminar_source* src, const char* sym, int64_t ts, int64_t id) {
  trade_row r = {sym, 1.0, false, id, false, ts};
  return push_rows(src, &r, 1);
}

static int test_rows_held(void) {
  laminar_db* db;
  laminar_error err;
  CHECK_CODE(laminar_open(NULL, &db, &err), LAMINAR_OK, &err);
  CHECK_CODE(
      laminar_execute(
          db,
          "CREATE SOURCE a (symbol VARCHAR, price DOUBLE, volume BIGINT, ts BIGINT,"
          "  WATERMARK FOR ts);"
          "CREATE SOURCE b (symbol VARCHAR, price DOUBLE, volume BIGINT, ts BIGINT,"
          "  WATERMARK FOR ts);"
          "CREATE STREAM j AS SELECT t.symbol, t.ts, q.ts AS qts FROM a t FULL JOIN "
          "b q ON t.symbol = q.symbol AND q.ts BETWEEN t.ts - 10 AND t.ts + 10",
          &err),
      LAMINAR_OK, &err);
  laminar_source *a, *b;
  CHECK_CODE(laminar_source_open(db, "a", &a, &err), LAMINAR_OK, &err);
  CHECK_CODE(laminar_source_open(db, "b", &b, &err), LAMINAR_OK, &err);
  for (int64_t i = 0; i < 20; i++) {
    CHECK(push_ab(a, i % 2 ? "x" : "y", 100 + i, i) == 0);
    CHECK(push_ab(b, i % 3 ? "x" : "z", 100 + i, 100 + i) == 0);
  }
  CHECK_CODE(laminar_run_until_idle(db, &err), LAMINAR_OK, &err);
  int64_t h[4];
  held(db, h);
  /* Watermarks at 119: every row of the last 10 ms on both sides is held. */
  EXPECT(h[0] >= 10 && h[2] >= 10 && h[1] > 0 && h[3] > 0);
  CHECK_CODE(laminar_source_watermark(a, INT64_MAX, &err), LAMINAR_OK, &err);
  CHECK_CODE(laminar_source_watermark(b, INT64_MAX, &err), LAMINAR_OK, &err);
  CHECK_CODE(laminar_run_until_idle(db, &err), LAMINAR_OK, &err);
  held(db, h);
  EXPECT(h[0] == 0 && h[1] == 0 && h[2] == 0 && h[3] == 0);
  laminar_source_close(a);
  laminar_source_close(b);
  laminar_close(db);
  return 0;
}

static const char* JOIN_SQL =
    "CREATE STREAM j AS SELECT t.symbol, t.ts, t.volume, q.price AS qp, q.ts AS qts\n"
    "  FROM a t FULL JOIN b q ON t.symbol = q.symbol\n"
    "  AND q.ts BETWEEN t.ts - INTERVAL '20' MILLISECOND AND t.ts + INTERVAL '10' "
    "MILLISECOND;\n"
    "CREATE STREAM w AS SELECT t.symbol, window_start, COUNT(*) AS n, SUM(q.volume) AS "
    "v\n"
    "  FROM a t JOIN b q ON t.symbol = q.symbol AND t.ts >= q.ts - 5 AND t.ts < q.ts + "
    "15\n"
    "  GROUP BY t.symbol, tumble(t.ts, INTERVAL '500' MILLISECOND);\n"
    "CREATE SINK j_out FROM j INTO FILE (path = '%s/j', format = 'jsonl');\n"
    "CREATE SINK w_out FROM w INTO FILE (path = '%s/w', format = 'jsonl')";

static int test_durable(void) {
  return crash_and_resume(JOIN_SQL, 1) | crash_and_resume(JOIN_SQL, 2);
}

static const lm_test_case cases[] = {
    {"errors", test_errors},
    {"rows_held", test_rows_held},
    {"durable", test_durable},
    {NULL, NULL},
};

int main(int argc, char** argv) { return lm_test_main(argc, argv, cases); }
