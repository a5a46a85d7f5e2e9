/*
 * test_late_output.c -- late side outputs through laminar.h (issue 4):
 * CREATE STREAM ... WITH (late_output = ...) on tumbling, hopping and session
 * windows delivers exactly the rows the stream counts as late, with its
 * input's columns, to a stream one can subscribe to and read from; names that
 * clash and bad options fail with their codes; DROP goes with the stream.
 * Durability (catalog, checkpoint, WAL replay into a file sink on the late
 * output) is covered by test_durable and tests/crash through
 * lm_test_durable.h.
 */
#include "arrow_build.h"
#include "lm_test.h"

#include <stdio.h>
#include <string.h>

static const char* LATE_DDL =
    "CREATE SOURCE trades (symbol VARCHAR NOT NULL, price DOUBLE, volume BIGINT, ts "
    "BIGINT,\n"
    "  WATERMARK FOR ts AS ts - INTERVAL '100' MILLISECOND);\n"
    "CREATE STREAM bars AS SELECT symbol, window_start, COUNT(*) AS n FROM trades\n"
    "  GROUP BY symbol, tumble(ts, INTERVAL '1' SECOND) WITH (late_output = true);\n"
    "CREATE STREAM hops AS SELECT symbol, window_start, COUNT(*) AS n FROM trades\n"
    "  GROUP BY symbol, hop(ts, INTERVAL '2' SECOND, INTERVAL '500' MILLISECOND)\n"
    "  WITH (late_output = 'hops_late');\n"
    "CREATE STREAM sess AS SELECT symbol, window_start, COUNT(*) AS n FROM trades\n"
    "  WHERE volume < 100 GROUP BY symbol, session(ts, INTERVAL '70' MILLISECOND)\n"
    "  WITH (allowed_lateness = INTERVAL '50' MILLISECOND, late_output = 'sess_late');\n";

/* Push rows (volume = id) with times ts[0..n). */
static int push(laminar_source* src, const int64_t* ids, const int64_t* ts, int n) {
  trade_row rows[16];
  for (int i = 0; i < n; i++)
    rows[i] = (trade_row){"A", 1.0, false, ids[i], false, ts[i]};
  struct ArrowArray array;
  struct ArrowSchema schema;
  CHECK(build_trades(rows, n, false, &array, &schema) == 0);
  laminar_error err;
  CHECK_CODE(laminar_source_push(src, &array, &schema, &err), LAMINAR_OK, &err);
  schema.release(&schema);
  return 0;
}

/* Every row queued on `sub` as "volume@ts" joined by spaces (the late rows'
 * ids and times), checking the input's four columns came through. */
static int drain_ids(laminar_subscription* sub, char* out, size_t cap) {
  size_t len = 0;
  out[0] = '\0';
  for (;;) {
    struct ArrowArray array;
    struct ArrowSchema schema;
    laminar_error err;
    CHECK_CODE(laminar_subscription_next(sub, 0, &array, &schema, &err), LAMINAR_OK,
               &err);
    if (array.release == NULL) return 0;
    struct ArrowArrayView view;
    struct ArrowError aerr;
    CHECK(ArrowArrayViewInitFromSchema(&view, &schema, &aerr) == NANOARROW_OK);
    CHECK(ArrowArrayViewSetArray(&view, &array, &aerr) == NANOARROW_OK);
    CHECK(schema.n_children == 4 && strcmp(schema.children[0]->name, "symbol") == 0 &&
          strcmp(schema.children[3]->name, "ts") == 0);
    for (int64_t r = 0; r < array.length; r++) {
      struct ArrowStringView sym = ArrowArrayViewGetStringUnsafe(view.children[0], r);
      CHECK(sym.size_bytes == 1 && sym.data[0] == 'A');
      int n = snprintf(out + len, cap - len, "%s%lld@%lld", len ? " " : "",
                       (long long)ArrowArrayViewGetIntUnsafe(view.children[2], r),
                       (long long)ArrowArrayViewGetIntUnsafe(view.children[3], r));
      CHECK(n > 0 && (size_t)n < cap - len);
      len += (size_t)n;
    }
    ArrowArrayViewReset(&view);
    array.release(&array);
    schema.release(&schema);
  }
}

static int64_t late_rows(laminar_db* db, const char* stream) {
  int64_t n = -1;
  laminar_error err;
  if (laminar_stream_late_rows(db, stream, &n, &err) != LAMINAR_OK) return -1;
  return n;
}

/* Tumble, hop and session each send exactly their late rows to their side
 * output, and the counter agrees; a stream reading a late output gets them. */
static int test_tumble_hop_session(void) {
  laminar_db* db;
  laminar_error err;
  CHECK_CODE(laminar_open(NULL, &db, &err), LAMINAR_OK, &err);
  CHECK_CODE(laminar_execute(db, LATE_DDL, &err), LAMINAR_OK, &err);
  /* A late output is a stream like any other: here, read by a plain stream. */
  CHECK_CODE(laminar_execute(db,
                             "CREATE STREAM late_big AS SELECT volume, ts FROM bars_late "
                             "WHERE volume >= 11",
                             &err),
             LAMINAR_OK, &err);
  laminar_subscription *bl, *hl, *sl, *big;
  CHECK_CODE(laminar_subscribe(db, "bars_late", &bl, &err), LAMINAR_OK, &err);
  CHECK_CODE(laminar_subscribe(db, "hops_late", &hl, &err), LAMINAR_OK, &err);
  CHECK_CODE(laminar_subscribe(db, "sess_late", &sl, &err), LAMINAR_OK, &err);
  CHECK_CODE(laminar_subscribe(db, "late_big", &big, &err), LAMINAR_OK, &err);
  laminar_source* src;
  CHECK_CODE(laminar_source_open(db, "trades", &src, &err), LAMINAR_OK, &err);
  const int64_t ids1[] = {1, 2, 3, 4, 5}, ts1[] = {1000, 1500, 2000, 2500, 3000};
  CHECK(push(src, ids1, ts1, 5) == 0); /* watermark 2900 after this batch */
  /* 10 at 500: every window and session of it has closed. 11 at 1950: its
   * tumble window [1000, 2000) has closed, its hop window [1500, 3500) not,
   * its session [1950, 2020) closed at 2070 (allowed lateness 50). 12 and 13
   * are in time; 100 is filtered out by sess's WHERE (not late there). */
  const int64_t ids2[] = {10, 11, 12, 13, 100}, ts2[] = {500, 1950, 2890, 2840, 10};
  CHECK(push(src, ids2, ts2, 5) == 0);
  CHECK_CODE(laminar_run_until_idle(db, &err), LAMINAR_OK, &err);
  char got[1024];
  CHECK(drain_ids(bl, got, sizeof got) == 0);
  EXPECT(strcmp(got, "10@500 11@1950 100@10") == 0);
  CHECK(drain_ids(hl, got, sizeof got) == 0);
  EXPECT(strcmp(got, "10@500 100@10") == 0);
  CHECK(drain_ids(sl, got, sizeof got) == 0);
  EXPECT(strcmp(got, "10@500 11@1950") == 0);
  EXPECT(late_rows(db, "bars") == 3 && late_rows(db, "hops") == 2 &&
         late_rows(db, "sess") == 2);
  EXPECT(late_rows(db, "bars_late") == 0);
  /* late_big: the downstream stream over bars_late, projecting two columns. */
  struct ArrowArray a;
  struct ArrowSchema s;
  CHECK_CODE(laminar_subscription_next(big, 0, &a, &s, &err), LAMINAR_OK, &err);
  CHECK(a.release != NULL);
  EXPECT(a.length == 2 && s.n_children == 2);
  a.release(&a);
  s.release(&s);
  laminar_subscription_close(bl);
  laminar_subscription_close(hl);
  laminar_subscription_close(sl);
  laminar_subscription_close(big);
  laminar_source_close(src);
  laminar_close(db);
  return 0;
}

/* Names that clash, bad values, options without a window; DROP rules. */
static int test_errors_and_drop(void) {
  laminar_db* db;
  laminar_error err;
  CHECK_CODE(laminar_open(NULL, &db, &err), LAMINAR_OK, &err);
  CHECK_CODE(laminar_execute(db, LATE_DDL, &err), LAMINAR_OK, &err);
  const char* win =
      "CREATE STREAM w AS SELECT symbol, COUNT(*) AS n FROM trades GROUP BY symbol, "
      "tumble(ts, INTERVAL '1' SECOND) ";
  char sql[512];
  /* The default name of w's late output, and a named one, taken already. */
  CHECK_CODE(laminar_execute(db, "CREATE STREAM w_late AS SELECT * FROM trades", &err),
             LAMINAR_OK, &err);
  snprintf(sql, sizeof sql, "%sWITH (late_output = true)", win);
  CHECK_CODE(laminar_execute(db, sql, &err), LAMINAR_ERR_SQL_DUPLICATE_OBJECT, &err);
  EXPECT(strstr(err.message, "w_late") != NULL && err.line == 1 && err.column > 90);
  snprintf(sql, sizeof sql, "%sWITH (late_output = 'TRADES')", win);
  CHECK_CODE(laminar_execute(db, sql, &err), LAMINAR_ERR_SQL_DUPLICATE_OBJECT, &err);
  snprintf(sql, sizeof sql, "%sWITH (late_output = 'w')", win);
  CHECK_CODE(laminar_execute(db, sql, &err), LAMINAR_ERR_SQL_DUPLICATE_OBJECT, &err);
  snprintf(sql, sizeof sql, "%sWITH (late_output = 7)", win);
  CHECK_CODE(laminar_execute(db, sql, &err), LAMINAR_ERR_CONFIG_VALUE, &err);
  snprintf(sql, sizeof sql, "%sWITH (late_output = '')", win);
  CHECK_CODE(laminar_execute(db, sql, &err), LAMINAR_ERR_CONFIG_VALUE, &err);
  snprintf(sql, sizeof sql, "%sWITH (late_outputs = true)", win);
  CHECK_CODE(laminar_execute(db, sql, &err), LAMINAR_ERR_CONFIG_KEY, &err);
  CHECK_CODE(
      laminar_execute(
          db, "CREATE STREAM p AS SELECT * FROM trades WITH (late_output = true)", &err),
      LAMINAR_ERR_CONFIG_CONFLICT, &err);
  CHECK_CODE(
      laminar_execute(db,
                      "CREATE STREAM r AS SELECT symbol, COUNT(*) AS n FROM trades GROUP "
                      "BY symbol WITH (late_output = 'r_late')",
                      &err),
      LAMINAR_ERR_CONFIG_CONFLICT, &err);
  /* Nothing half-made: the failed statements left no stream behind. */
  laminar_subscription* sub;
  CHECK_CODE(laminar_subscribe(db, "w", &sub, &err), LAMINAR_ERR_SQL_UNKNOWN_OBJECT,
             &err);
  CHECK_CODE(laminar_subscribe(db, "r_late", &sub, &err), LAMINAR_ERR_SQL_UNKNOWN_OBJECT,
             &err);
  /* late_output = false: none. */
  snprintf(sql, sizeof sql, "%sWITH (late_output = false)", win);
  CHECK_CODE(laminar_execute(db, sql, &err), LAMINAR_OK, &err);

  /* A late output goes with its stream, never alone. */
  CHECK_CODE(laminar_execute(db, "DROP STREAM bars_late", &err),
             LAMINAR_ERR_SQL_DEPENDENCY, &err);
  EXPECT(strstr(err.message, "bars") != NULL);
  CHECK_CODE(laminar_execute(db, "CREATE STREAM x AS SELECT ts FROM hops_late", &err),
             LAMINAR_OK, &err);
  CHECK_CODE(laminar_execute(db, "DROP STREAM hops", &err), LAMINAR_ERR_SQL_DEPENDENCY,
             &err);
  EXPECT(strstr(err.message, "'x'") != NULL);
  CHECK_CODE(laminar_execute(db, "DROP STREAM x", &err), LAMINAR_OK, &err);
  CHECK_CODE(laminar_subscribe(db, "bars_late", &sub, &err), LAMINAR_OK, &err);
  CHECK_CODE(laminar_execute(db, "DROP STREAM bars; DROP STREAM hops", &err), LAMINAR_OK,
             &err);
  struct ArrowArray a;
  CHECK_CODE(laminar_subscription_next(sub, 0, &a, NULL, &err),
             LAMINAR_ERR_SUBSCRIPTION_CLOSED, &err);
  laminar_subscription_close(sub);
  CHECK_CODE(laminar_subscribe(db, "hops_late", &sub, &err),
             LAMINAR_ERR_SQL_UNKNOWN_OBJECT, &err);
  /* The names are free again. */
  CHECK_CODE(laminar_execute(
                 db,
                 "CREATE STREAM bars AS SELECT symbol, COUNT(*) AS n FROM trades GROUP "
                 "BY symbol, tumble(ts, INTERVAL '1' SECOND) "
                 "WITH (late_output = 'hops_late')",
                 &err),
             LAMINAR_OK, &err);
  laminar_close(db);
  return 0;
}

static const lm_test_case cases[] = {
    {"tumble_hop_session", test_tumble_hop_session},
    {"errors_and_drop", test_errors_and_drop},
    {NULL, NULL},
};

int main(int argc, char** argv) { return lm_test_main(argc, argv, cases); }
