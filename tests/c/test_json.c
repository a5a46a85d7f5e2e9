/*
 * test_json.c -- JSON text through laminar.h: -> and ->> in a stream's
 * WHERE, projection and GROUP BY, json_type / json_array_length /
 * json_valid, invalid documents and missing paths as NULL, and the
 * refusals with their codes and positions. The Python side compares every
 * function with DuckDB over generated documents (tests/python/test_json.py).
 */
#include "lm_test.h"
#include "views_util.h"

/* Source t (k JSON, v BIGINT): k holds the JSON text, v the event time. */
static const char* DDL =
    "CREATE SOURCE t (k JSON, v BIGINT, WATERMARK FOR v AS v);\n"
    "CREATE STREAM trades AS SELECT k ->> 'sym' AS sym, k -> '$.px' AS px,\n"
    "  json_array_length(k, '$.tags') AS ntags, k -> '$.tags' ->> -1 AS last_tag\n"
    "  FROM t WHERE k ->> '$.type' = 'trade';\n"
    "CREATE STREAM kinds AS SELECT json_type(k) AS t, json_valid(k) AS ok, COUNT(*) AS "
    "n\n"
    "  FROM t GROUP BY json_type(k), json_valid(k), tumble(v, 100);\n";

static int test_stream(void) {
  laminar_db* db;
  laminar_error err;
  CHECK(open_sql_db(&db, DDL) == 0);
  laminar_source* src;
  laminar_subscription *trades, *kinds;
  CHECK_CODE(laminar_source_open(db, "t", &src, &err), LAMINAR_OK, &err);
  CHECK_CODE(laminar_subscribe(db, "trades", &trades, &err), LAMINAR_OK, &err);
  CHECK_CODE(laminar_subscribe(db, "kinds", &kinds, &err), LAMINAR_OK, &err);
  const kv_row rows[] = {
      {"{\"type\": \"trade\", \"sym\": \"A\\u00e9\", \"px\": 1.50, \"tags\": [1, \"x\"]}",
       1, 0, 0},
      {"{\"type\":\"quote\",\"sym\":\"B\"}", 2, 0, 0},
      {"{\"type\":\"trade\",\"sym\":\"C\",\"px\":1E2}", 3, 0, 0},
      {"{\"type\":\"trade\"", 4, 0, 0}, /* truncated: every function NULL */
      {"[1,2]", 5, 0, 0},
      {NULL, 6, 0, 0},
  };
  CHECK(push_kv(src, rows, 6, 0, &err) == 0);
  CHECK_CODE(laminar_source_watermark(src, 1000, &err), LAMINAR_OK, &err);
  CHECK_CODE(laminar_run_until_idle(db, &err), LAMINAR_OK, &err);
  char got[1024] = "";
  CHECK(take_text(trades, got, sizeof got) == 0);
  EXPECT_TEXT(got, "Aé,1.5,2,x;C,100.0,NULL,NULL;");
  got[0] = '\0';
  CHECK(take_text(kinds, got, sizeof got) == 0);
  EXPECT_TEXT(got, "OBJECT,1,3;NULL,0,1;ARRAY,1,1;NULL,NULL,1;");
  laminar_subscription_close(trades);
  laminar_subscription_close(kinds);
  laminar_source_close(src);
  laminar_close(db);
  return lm_test_expect_failed_;
}

static int test_refusals(void) {
  laminar_db* db;
  CHECK(open_sql_db(&db, DDL) == 0);
  EXPECT(fails_at(db, false, "CREATE STREAM e AS SELECT k -> '$[*]' FROM t",
                  LAMINAR_ERR_SQL_UNSUPPORTED, 1, 32));
  EXPECT(fails_at(db, false, "CREATE STREAM e AS SELECT json_extract(k, '$.') FROM t",
                  LAMINAR_ERR_SQL_FUNCTION_ARGS, 1, 43));
  EXPECT(fails_at(db, false, "CREATE STREAM e AS SELECT v ->> 'a' FROM t",
                  LAMINAR_ERR_TYPE_MISMATCH, 1, 27));
  laminar_close(db);
  return lm_test_expect_failed_;
}

int main(int argc, char** argv) {
  static const lm_test_case cases[] = {
      {"stream", test_stream},
      {"refusals", test_refusals},
      {NULL, NULL},
  };
  return lm_test_main(argc, argv, cases);
}
