/*
 * test_distinct_on.c -- SELECT DISTINCT ON through laminar.h: in a stream
 * (per window the key's first row by event time, or its last with ORDER BY
 * time DESC; without a window its first by arrival), in a materialized
 * view, and in an ad-hoc SELECT over a view (DISTINCT and DISTINCT ON after
 * the ORDER BY, LIMIT counting distinct rows); the refusals with their codes
 * and positions. The Python side compares with DuckDB
 * (tests/python/test_distinct.py).
 */
#include "lm_test.h"
#include "views_util.h"

/* Source t (k, v) with v as the event time (watermark v), a tumbling window
 * of 10 per key: first and last row of each key, and a view of each key's
 * first row by arrival. */
static const char* DDL =
    "CREATE SOURCE t (k VARCHAR, v BIGINT, WATERMARK FOR v AS v);\n"
    "CREATE STREAM first_w AS SELECT DISTINCT ON (k) window_start, k, v FROM t\n"
    "  GROUP BY tumble(v, 10);\n"
    "CREATE STREAM last_w AS SELECT DISTINCT ON (k) window_start, k, v FROM t\n"
    "  GROUP BY tumble(v, 10) ORDER BY k, v DESC;\n"
    "CREATE MATERIALIZED VIEW firsts AS SELECT DISTINCT ON (k) * FROM t;\n";

static int test_streams_and_view(void) {
  laminar_db* db;
  laminar_error err;
  CHECK(open_sql_db(&db, DDL) == 0);
  laminar_source* src;
  laminar_subscription *first, *last;
  CHECK_CODE(laminar_source_open(db, "t", &src, &err), LAMINAR_OK, &err);
  CHECK_CODE(laminar_subscribe(db, "first_w", &first, &err), LAMINAR_OK, &err);
  CHECK_CODE(laminar_subscribe(db, "last_w", &last, &err), LAMINAR_OK, &err);
  /* Out of order within the window (the watermark is the largest v so far,
   * so rows behind it are late: push in time order per window). */
  const kv_row rows[] = {{"a", 3, 0, 0}, {"b", 4, 0, 0}, {"a", 5, 0, 0},
                         {"a", 8, 0, 0}, {"b", 9, 0, 0}, {"a", 12, 0, 0}};
  CHECK(push_kv(src, rows, 6, 0, &err) == 0);
  CHECK_CODE(laminar_source_watermark(src, 100, &err), LAMINAR_OK, &err);
  CHECK_CODE(laminar_run_until_idle(db, &err), LAMINAR_OK, &err);
  char got[512] = "";
  CHECK(take_text(first, got, sizeof got) == 0);
  EXPECT_TEXT(got, "0,a,3;0,b,4;10,a,12;");
  got[0] = '\0';
  CHECK(take_text(last, got, sizeof got) == 0);
  EXPECT_TEXT(got, "0,a,8;0,b,9;10,a,12;");
  CHECK_TEXT(db, "SELECT * FROM firsts ORDER BY k", "a,3;b,4");
  /* Ad-hoc over the view: DISTINCT, DISTINCT ON with ORDER BY and LIMIT. */
  CHECK_TEXT(db, "SELECT DISTINCT v % 2 AS m FROM firsts ORDER BY m", "0;1");
  CHECK_TEXT(db, "SELECT DISTINCT ON (v % 2) k FROM firsts ORDER BY v % 2, k DESC",
             "b;a");
  CHECK_TEXT(db, "SELECT DISTINCT 1 AS one FROM firsts LIMIT 5", "1");
  laminar_subscription_close(first);
  laminar_subscription_close(last);
  laminar_source_close(src);
  laminar_close(db);
  return lm_test_expect_failed_;
}

static int test_refusals(void) {
  laminar_db* db;
  CHECK(open_sql_db(&db, DDL) == 0);
  /* ORDER BY another column than the keys and the window's time */
  EXPECT(fails_at(db, false,
                  "CREATE STREAM e AS SELECT DISTINCT ON (k) k FROM t GROUP BY tumble(v, "
                  "10) ORDER BY k, k || 'x'",
                  LAMINAR_ERR_SQL_UNSUPPORTED, 1, 87));
  /* without a window, any ORDER BY past the keys */
  EXPECT(fails_at(db, false,
                  "CREATE STREAM e AS SELECT DISTINCT ON (k) k FROM t ORDER BY v",
                  LAMINAR_ERR_SQL_UNSUPPORTED, 1, 61));
  /* an ad-hoc DISTINCT ordered by a column it does not return */
  EXPECT(fails_at(db, true, "SELECT DISTINCT k FROM firsts ORDER BY v",
                  LAMINAR_ERR_SQL_GROUPING, 1, 40));
  laminar_close(db);
  return lm_test_expect_failed_;
}

int main(int argc, char** argv) {
  static const lm_test_case cases[] = {
      {"streams_and_view", test_streams_and_view},
      {"refusals", test_refusals},
      {NULL, NULL},
  };
  return lm_test_main(argc, argv, cases);
}
