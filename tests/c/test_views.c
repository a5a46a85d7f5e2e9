/*
 * test_views.c -- materialized views through laminar.h: insert-only and
 * changelog inputs (Z-set weights, retractions of absent rows counted),
 * ad-hoc SELECT with WHERE / ORDER BY ... NULLS FIRST|LAST / LIMIT / OFFSET,
 * cascades (streams and views over views), named sinks, EXPLAIN, ${VAR}
 * substitution, the errors of each with their codes and positions; and the
 * materialize operator's snapshot/restore (white-box, op/view.h).
 */
#include "lm_test.h"
#include "views_util.h"

#include "op/view.h"

/* ---- insert-only input ---------------------------------------------------------------- */

static int test_insert_only_view_and_select(void) {
  laminar_db* db;
  laminar_error err;
  CHECK(open_sql_db(&db,
                    "CREATE SOURCE t (k VARCHAR, v BIGINT);"
                    "CREATE MATERIALIZED VIEW big AS SELECT k, v, v * 10 AS v10 FROM t "
                    "WHERE v > 1 OR v IS NULL") == 0);
  laminar_source* src;
  CHECK_CODE(laminar_source_open(db, "t", &src, &err), LAMINAR_OK, &err);
  kv_row rows[] = {{"a", 1, 0, 0},  {"b", 5, 0, 0}, {"c", 3, 0, 0},
                   {NULL, 7, 0, 0}, {"d", 0, 1, 0}, {"b", 5, 0, 0}};
  CHECK(push_kv(src, rows, 6, 0, &err) == 0);
  CHECK_CODE(laminar_run_until_idle(db, &err), LAMINAR_OK, &err);
  /* A duplicate is held twice and read twice (bag semantics). */
  CHECK_TEXT(db, "SELECT k, v FROM big ORDER BY v DESC, k", "NULL,7;b,5;b,5;c,3;d,NULL");
  CHECK_TEXT(db, "SELECT k, v FROM big ORDER BY v DESC NULLS FIRST, k",
             "d,NULL;NULL,7;b,5;b,5;c,3");
  CHECK_TEXT(db, "SELECT k FROM big ORDER BY k NULLS FIRST", "NULL;b;b;c;d");
  CHECK_TEXT(db, "SELECT k FROM big ORDER BY k DESC", "d;c;b;b;NULL");
  CHECK_TEXT(db, "SELECT k AS name, v10 FROM big WHERE v10 < 60 ORDER BY name",
             "b,50;b,50;c,30");
  /* ORDER BY a position, an alias shadowing a column, a hidden expression. */
  CHECK_TEXT(db, "SELECT v, k FROM big WHERE k IS NOT NULL ORDER BY 2 DESC",
             "NULL,d;3,c;5,b;5,b");
  CHECK_TEXT(db, "SELECT k AS v, v AS k FROM big WHERE k <> 'b' ORDER BY v",
             "c,3;d,NULL");
  CHECK_TEXT(db, "SELECT k FROM big WHERE v IS NOT NULL ORDER BY -v", "NULL;b;b;c");
  /* LIMIT and OFFSET count a row held twice as two rows. */
  CHECK_TEXT(db, "SELECT k FROM big ORDER BY v DESC LIMIT 2 OFFSET 1", "b;b");
  CHECK_TEXT(db, "SELECT k FROM big ORDER BY v DESC LIMIT 1 OFFSET 2", "b");
  CHECK_TEXT(db, "SELECT k FROM big ORDER BY v OFFSET 4", "d"); /* NULLs last */
  CHECK_TEXT(db, "SELECT k FROM big ORDER BY v LIMIT 0", "");
  CHECK_TEXT(db, "SELECT k FROM big ORDER BY v LIMIT 3 OFFSET 100", "");
  CHECK_TEXT(db, "SELECT * FROM big WHERE k = 'c'", "c,3,30");
  CHECK_TEXT(db, "DESCRIBE big", "k,VARCHAR,YES;v,BIGINT,YES;v10,BIGINT,YES");
  CHECK_TEXT(db, "SHOW VIEWS", "big,t,filter -> project(3 columns)");
  CHECK_TEXT(db, "SHOW STREAMS", "");
  EXPECT(stream_metric(db, "big", "view_rows") == 4);
  EXPECT(stream_metric(db, "big", "retract_errors") == 0);
  /* SELECT in laminar_execute is checked, its rows dropped. */
  CHECK_CODE(laminar_execute(db, "SELECT k FROM big ORDER BY 1", &err), LAMINAR_OK, &err);
  laminar_source_close(src);
  laminar_close(db);
  return 0;
}

/* ---- changelog input -------------------------------------------------------------------- */

static int test_changelog_weights(void) {
  laminar_db* db;
  laminar_error err;
  CHECK(open_sql_db(&db,
                    "CREATE SOURCE cl (k VARCHAR, v BIGINT, _weight BIGINT);"
                    "CREATE MATERIALIZED VIEW mv AS SELECT k, v FROM cl") == 0);
  laminar_source* src;
  CHECK_CODE(laminar_source_open(db, "cl", &src, &err), LAMINAR_OK, &err);
  kv_row ins[] = {{"a", 1, 0, 3}, {"b", 2, 0, 1}, {"c", 0, 1, 1}, {"d", 4, 0, 0}};
  CHECK(push_kv(src, ins, 4, 1, &err) == 0);
  CHECK_CODE(laminar_run_until_idle(db, &err), LAMINAR_OK, &err);
  CHECK_TEXT(db, "SELECT * FROM mv ORDER BY k", "a,1;a,1;a,1;b,2;c,NULL");
  /* An update is -1 old, +1 new; weight 0 removes; a retraction of an
   * absent row (or more than is there) is clamped and counted. */
  kv_row upd[] = {{"b", 2, 0, -1},
                  {"b", 3, 0, 1},
                  {"a", 1, 0, -2},
                  {"zz", 9, 0, -1},
                  {"c", 0, 1, -5}};
  CHECK(push_kv(src, upd, 5, 1, &err) == 0);
  CHECK_CODE(laminar_run_until_idle(db, &err), LAMINAR_OK, &err);
  CHECK_TEXT(db, "SELECT * FROM mv ORDER BY k", "a,1;b,3");
  EXPECT(stream_metric(db, "mv", "retract_errors") == 2);
  EXPECT(stream_metric(db, "mv", "view_rows") == 2);
  /* LIMIT far below the row count takes the top-k path: with multiplicities. */
  kv_row many[24];
  static const char* names[24] = {"k00", "k01", "k02", "k03", "k04", "k05", "k06", "k07",
                                  "k08", "k09", "k10", "k11", "k12", "k13", "k14", "k15",
                                  "k16", "k17", "k18", "k19", "k20", "k21", "k22", "k23"};
  for (int i = 0; i < 24; i++)
    many[i] = (kv_row){names[i], 100 - (i * 7) % 24, 0, 1 + i % 3};
  CHECK(push_kv(src, many, 24, 1, &err) == 0);
  CHECK_CODE(laminar_run_until_idle(db, &err), LAMINAR_OK, &err);
  /* v 77 (k17) x3, 78 (k10) x2, 79 (k03) x1, 80 (k20) x3, ... */
  CHECK_TEXT(db, "SELECT k, v FROM mv WHERE v > 50 ORDER BY v LIMIT 4 OFFSET 1",
             "k17,77;k17,77;k10,78;k10,78");
  CHECK_TEXT(db, "SELECT k, v FROM mv WHERE v > 50 ORDER BY v LIMIT 3 OFFSET 4",
             "k10,78;k03,79;k20,80");
  CHECK_TEXT(db, "SELECT k FROM mv WHERE v > 50 ORDER BY v DESC LIMIT 1", "k00");
  laminar_source_close(src);
  laminar_close(db);
  return 0;
}

/* FIRST/LAST over a changelog (arrival order without a window): a retraction
 * removes the latest copy of an equal value, NULLs included. */
static int test_first_last_over_changelog(void) {
  laminar_db* db;
  laminar_error err;
  CHECK(open_sql_db(
            &db,
            "CREATE SOURCE cl (k VARCHAR, v BIGINT, _weight BIGINT);"
            "CREATE MATERIALIZED VIEW fl AS SELECT v, FIRST(k) AS f, LAST_VALUE(k) AS l"
            " FROM cl GROUP BY v") == 0);
  laminar_source* src;
  CHECK_CODE(laminar_source_open(db, "cl", &src, &err), LAMINAR_OK, &err);
  static const struct {
    kv_row rows[2];
    int n;
    const char* want;
  } steps[] = {
      {{{"A", 1, 0, 1}, {"B", 1, 0, 1}}, 2, "1,A,B"},
      {{{"A", 1, 0, 1}, {NULL, 1, 0, 1}}, 2, "1,A,NULL"},
      {{{NULL, 1, 0, -1}, {"A", 1, 0, -1}}, 2, "1,A,B"}, /* the second A goes */
      {{{"A", 1, 0, 2}, {"C", 2, 0, 1}}, 2, "1,A,A;2,C,C"},
      {{{"A", 1, 0, -2}, {"C", 2, 0, -1}}, 2, "1,A,B"}, /* both copies of the newest */
      {{{"A", 1, 0, -1}}, 1, "1,B,B"},
      {{{"B", 1, 0, -1}}, 1, ""},
  };
  for (size_t i = 0; i < sizeof steps / sizeof steps[0]; i++) {
    CHECK(push_kv(src, steps[i].rows, steps[i].n, 1, &err) == 0);
    CHECK_CODE(laminar_run_until_idle(db, &err), LAMINAR_OK, &err);
    CHECK_TEXT(db, "SELECT v, f, l FROM fl ORDER BY v", steps[i].want);
  }
  laminar_source_close(src);
  laminar_close(db);
  return 0;
}

/* A stream over a view gets the view's changes as a changelog; a view over
 * that stream, and one over the first view, follow every retraction. */
static int test_cascades_follow_retractions(void) {
  laminar_db* db;
  laminar_error err;
  CHECK(open_sql_db(&db,
                    "CREATE SOURCE cl (k VARCHAR, v BIGINT, _weight BIGINT);"
                    "CREATE MATERIALIZED VIEW mv AS SELECT k, v FROM cl WHERE v >= 0;"
                    "CREATE STREAM s AS SELECT k, v * 10 AS v10 FROM mv WHERE k <> 'x';"
                    "CREATE MATERIALIZED VIEW mv2 AS SELECT * FROM s;"
                    "CREATE MATERIALIZED VIEW keys AS SELECT k FROM mv") == 0);
  laminar_subscription* sub;
  CHECK_CODE(laminar_subscribe(db, "s", &sub, &err), LAMINAR_OK, &err);
  laminar_source* src;
  CHECK_CODE(laminar_source_open(db, "cl", &src, &err), LAMINAR_OK, &err);
  kv_row a[] = {
      {"a", 1, 0, 1}, {"a", 1, 0, 1}, {"b", 2, 0, 1}, {"x", 5, 0, 1}, {"n", -1, 0, 1}};
  CHECK(push_kv(src, a, 5, 1, &err) == 0);
  kv_row b[] = {{"a", 1, 0, -1}, {"b", 2, 0, -1}, {"q", 7, 0, -1}, {"c", 3, 0, 1}};
  CHECK(push_kv(src, b, 4, 1, &err) == 0);
  CHECK_CODE(laminar_run_until_idle(db, &err), LAMINAR_OK, &err);
  CHECK_TEXT(db, "SELECT * FROM mv ORDER BY k", "a,1;c,3;x,5");
  CHECK_TEXT(db, "SELECT * FROM mv2 ORDER BY k", "a,10;c,30");
  CHECK_TEXT(db, "SELECT k FROM keys ORDER BY k", "a;c;x");
  /* The stream's batches: its columns and _weight; the absent retraction of
   * q never reaches it (the view forwards only what it applied). */
  struct ArrowArray arr;
  struct ArrowSchema sch;
  char seen[1024] = "";
  for (;;) {
    CHECK_CODE(laminar_subscription_next(sub, 0, &arr, &sch, &err), LAMINAR_OK, &err);
    if (arr.release == NULL) break;
    result_view rv;
    memset(&rv, 0, sizeof rv);
    rv.array = arr;
    rv.schema = sch;
    CHECK(result_view_init(&rv) == 0);
    CHECK(strcmp(sch.children[2]->name, "_weight") == 0);
    for (int64_t r = 0; r < arr.length; r++) {
      if (seen[0] != '\0') strcat(seen, ";");
      render_row(&rv.schema, &rv.view, r, seen, sizeof seen);
    }
    result_view_free(&rv);
  }
  EXPECT(strcmp(seen, "a,10,1;a,10,1;b,20,1;a,10,-1;b,20,-1;c,30,1") == 0);
  if (strcmp(seen, "a,10,1;a,10,1;b,20,1;a,10,-1;b,20,-1;c,30,1") != 0) {
    fprintf(stderr, "stream s delivered '%s'\n", seen);
  }
  EXPECT(stream_metric(db, "mv", "retract_errors") == 1);
  EXPECT(stream_metric(db, "mv2", "retract_errors") == 0);
  /* Dropping in dependency order. */
  EXPECT(fails_at(db, false, "DROP MATERIALIZED VIEW mv", LAMINAR_ERR_SQL_DEPENDENCY, 1,
                  24));
  EXPECT(fails_at(db, false, "DROP STREAM mv2", LAMINAR_ERR_SQL_UNKNOWN_OBJECT, 1, 13));
  CHECK_CODE(laminar_execute(db,
                             "DROP VIEW mv2; DROP STREAM s; DROP MATERIALIZED VIEW keys;"
                             "DROP MATERIALIZED VIEW mv",
                             &err),
             LAMINAR_OK, &err);
  CHECK_TEXT(db, "SHOW VIEWS", "");
  laminar_subscription_close(sub);
  laminar_source_close(src);
  laminar_close(db);
  return 0;
}

/* A view over a tumbling aggregate: the windows as they close. */
static int test_view_over_window_stream(void) {
  laminar_db* db;
  laminar_error err;
  CHECK(open_sql_db(
            &db,
            "CREATE SOURCE t (k VARCHAR, v BIGINT);"
            "CREATE STREAM w AS SELECT k, window_start, SUM(v) AS total, COUNT(*) AS n "
            "FROM t GROUP BY k, tumble(v, INTERVAL '10' MILLISECOND);"
            "CREATE MATERIALIZED VIEW wv AS SELECT * FROM w") == 0);
  laminar_source* src;
  CHECK_CODE(laminar_source_open(db, "t", &src, &err), LAMINAR_OK, &err);
  kv_row rows[] = {{"a", 1, 0, 0}, {"a", 2, 0, 0}, {"b", 15, 0, 0}, {"a", 12, 0, 0}};
  CHECK(push_kv(src, rows, 4, 0, &err) == 0);
  CHECK_CODE(laminar_source_watermark(src, 10, &err), LAMINAR_OK, &err);
  CHECK_CODE(laminar_run_until_idle(db, &err), LAMINAR_OK, &err);
  CHECK_TEXT(db, "SELECT * FROM wv ORDER BY window_start, k", "a,0,3,2");
  CHECK_CODE(laminar_source_watermark(src, INT64_MAX, &err), LAMINAR_OK, &err);
  CHECK_CODE(laminar_run_until_idle(db, &err), LAMINAR_OK, &err);
  CHECK_TEXT(db, "SELECT * FROM wv ORDER BY window_start, k",
             "a,0,3,2;a,10,12,1;b,10,15,1");
  laminar_source_close(src);
  laminar_close(db);
  return 0;
}

/* ---- errors -------------------------------------------------------------------------------- */

static int test_query_errors(void) {
  laminar_db* db;
  CHECK(open_sql_db(&db,
                    "CREATE SOURCE t (k VARCHAR, v BIGINT);"
                    "CREATE STREAM s AS SELECT k FROM t;"
                    "CREATE MATERIALIZED VIEW mv AS SELECT k, v FROM t") == 0);
  EXPECT(fails_at(db, true, "SELECT k FROM s", LAMINAR_ERR_SQL_NOT_MATERIALIZED, 1, 15));
  EXPECT(
      fails_at(db, true, "SELECT *\n  FROM t", LAMINAR_ERR_SQL_NOT_MATERIALIZED, 2, 8));
  EXPECT(fails_at(db, false, "SELECT k FROM t", LAMINAR_ERR_SQL_NOT_MATERIALIZED, 1, 15));
  EXPECT(fails_at(db, true, "SELECT k FROM nope", LAMINAR_ERR_SQL_UNKNOWN_OBJECT, 1, 15));
  EXPECT(fails_at(db, true, "SELECT zz FROM mv", LAMINAR_ERR_SQL_UNKNOWN_COLUMN, 1, 8));
  EXPECT(fails_at(db, true, "SELECT k FROM mv ORDER BY 3", LAMINAR_ERR_SQL_UNKNOWN_COLUMN,
                  1, 27));
  EXPECT(fails_at(db, true, "SELECT k FROM mv ORDER BY nope",
                  LAMINAR_ERR_SQL_UNKNOWN_COLUMN, 1, 27));
  EXPECT(
      fails_at(db, true, "SELECT count(*) FROM mv", LAMINAR_ERR_SQL_UNSUPPORTED, 1, 8));
  EXPECT(fails_at(db, true, "SELECT k FROM mv GROUP BY k", LAMINAR_ERR_SQL_UNSUPPORTED, 1,
                  27));
  EXPECT(fails_at(db, true, "SELECT k FROM mv EMIT CHANGES", LAMINAR_ERR_SQL_UNSUPPORTED,
                  1, 1));
  EXPECT(
      fails_at(db, true, "SELECT k FROM mv WHERE v", LAMINAR_ERR_TYPE_MISMATCH, 1, 24));
  EXPECT(fails_at(db, true, "SELECT k FROM mv LIMIT -1", LAMINAR_ERR_SQL_SYNTAX, 1, 24));
  EXPECT(fails_at(db, true, "SELECT k FROM mv ORDER BY k NULLS", LAMINAR_ERR_SQL_SYNTAX,
                  1, 34));
  EXPECT(fails_at(db, true, "SELECT k FROM mv OFFSET x", LAMINAR_ERR_SQL_SYNTAX, 1, 25));
  EXPECT(fails_at(db, false, "CREATE VIEW v AS SELECT k FROM t",
                  LAMINAR_ERR_SQL_UNSUPPORTED, 1, 1));
  EXPECT(fails_at(db, false, "CREATE MATERIALIZED VIEW mv AS SELECT k FROM t",
                  LAMINAR_ERR_SQL_DUPLICATE_OBJECT, 1, 26));
  EXPECT(fails_at(db, false, "CREATE MATERIALIZED VIEW o AS SELECT k FROM t ORDER BY k",
                  LAMINAR_ERR_SQL_UNSUPPORTED, 1, 56));
  /* Over a changelog: the weight is the engine's; sessions cannot take retractions yet. */
  EXPECT(fails_at(db, false, "CREATE STREAM x AS SELECT k, _weight FROM mv",
                  LAMINAR_ERR_SQL_UNSUPPORTED, 1, 1));
  EXPECT(fails_at(db, false, "CREATE MATERIALIZED VIEW x AS SELECT 1 AS _weight FROM t",
                  LAMINAR_ERR_SCHEMA_INVALID, 1, 1));
  EXPECT(fails_at(
      db, false,
      "CREATE MATERIALIZED VIEW x AS SELECT k, CAST(v AS BIGINT) AS _weight, 1 AS "
      "_weight FROM t",
      LAMINAR_ERR_SCHEMA_INVALID, 1, 1));
  EXPECT(fails_at(db, false,
                  "CREATE STREAM x AS SELECT k, LAST(v) FROM mv\n"
                  "  GROUP BY k, session(v, INTERVAL '1' SECOND)",
                  LAMINAR_ERR_SQL_UNSUPPORTED, 2, 15));
  EXPECT(fails_at(db, false, "DROP MATERIALIZED VIEW s", LAMINAR_ERR_SQL_UNKNOWN_OBJECT,
                  1, 24));
  EXPECT(fails_at(db, true, "EXPLAIN nope", LAMINAR_ERR_SQL_UNKNOWN_OBJECT, 1, 9));
  EXPECT(fails_at(db, true, "EXPLAIN DROP STREAM s", LAMINAR_ERR_SQL_UNSUPPORTED, 1, 9));
  EXPECT(fails_at(db, true, "EXPLAIN SELECT k FROM s", LAMINAR_ERR_SQL_NOT_MATERIALIZED,
                  1, 23));
  laminar_close(db);
  return 0;
}

/* ---- named sinks ---------------------------------------------------------------------------- */

static int test_named_sinks(void) {
  laminar_db* db;
  laminar_error err;
  CHECK(open_sql_db(&db,
                    "CREATE SOURCE t (k VARCHAR, v BIGINT);"
                    "CREATE MATERIALIZED VIEW mv AS SELECT k, v FROM t WHERE v > 0;"
                    "CREATE STREAM s AS SELECT k FROM t;"
                    "CREATE SINK out FROM mv; CREATE SINK raw FROM s") == 0);
  CHECK_TEXT(db, "SHOW SINKS", "out,mv,subscribe;raw,s,subscribe");
  laminar_subscription* sub;
  CHECK_CODE(laminar_subscribe(db, "out", &sub, &err), LAMINAR_OK, &err);
  struct ArrowSchema schema;
  CHECK_CODE(laminar_schema(db, "OUT", &schema, &err), LAMINAR_OK, &err);
  EXPECT(schema.n_children == 3 && strcmp(schema.children[2]->name, "_weight") == 0);
  schema.release(&schema);
  laminar_source* src;
  CHECK_CODE(laminar_source_open(db, "t", &src, &err), LAMINAR_OK, &err);
  kv_row rows[] = {{"a", 1, 0, 0}, {"b", -1, 0, 0}};
  CHECK(push_kv(src, rows, 2, 0, &err) == 0);
  CHECK_CODE(laminar_run_until_idle(db, &err), LAMINAR_OK, &err);
  struct ArrowArray arr;
  CHECK_CODE(laminar_subscription_next(sub, 0, &arr, NULL, &err), LAMINAR_OK, &err);
  CHECK(arr.release != NULL);
  EXPECT(arr.length == 1 && arr.n_children == 3);
  arr.release(&arr);
  EXPECT(fails_at(db, false, "DROP MATERIALIZED VIEW mv", LAMINAR_ERR_SQL_DEPENDENCY, 1,
                  24));
  EXPECT(fails_at(db, false, "CREATE SINK out FROM s", LAMINAR_ERR_SQL_DUPLICATE_OBJECT,
                  1, 13));
  EXPECT(fails_at(db, false, "CREATE SINK o2 FROM t", LAMINAR_ERR_SQL_UNKNOWN_OBJECT, 1,
                  21));
  EXPECT(fails_at(db, false, "CREATE SINK o2 FROM s WITH (x = 1)", LAMINAR_ERR_CONFIG_KEY,
                  1, 33));
  CHECK_CODE(laminar_execute(db, "CREATE SINK IF NOT EXISTS out FROM s", &err),
             LAMINAR_OK, &err);
  CHECK_CODE(laminar_execute(db, "DROP SINK out; DROP SINK raw", &err), LAMINAR_OK, &err);
  CHECK_TEXT(db, "SHOW SINKS", "");
  laminar_subscription* gone;
  CHECK_CODE(laminar_subscribe(db, "out", &gone, &err), LAMINAR_ERR_SQL_UNKNOWN_OBJECT,
             &err);
  /* The subscription taken through the sink stays on the view. */
  kv_row more[] = {{"c", 3, 0, 0}};
  CHECK(push_kv(src, more, 1, 0, &err) == 0);
  CHECK_CODE(laminar_run_until_idle(db, &err), LAMINAR_OK, &err);
  CHECK_CODE(laminar_subscription_next(sub, 0, &arr, NULL, &err), LAMINAR_OK, &err);
  EXPECT(arr.release != NULL && arr.length == 1);
  if (arr.release != NULL) arr.release(&arr);
  CHECK_CODE(laminar_execute(db, "DROP MATERIALIZED VIEW mv", &err), LAMINAR_OK, &err);
  CHECK_CODE(laminar_subscription_next(sub, 0, &arr, NULL, &err),
             LAMINAR_ERR_SUBSCRIPTION_CLOSED, &err);
  laminar_subscription_close(sub);
  laminar_source_close(src);
  laminar_close(db);
  return 0;
}

/* ---- EXPLAIN ----------------------------------------------------------------------------- */

static int test_explain(void) {
  laminar_db* db;
  CHECK(open_sql_db(
            &db,
            "CREATE SOURCE trades (symbol VARCHAR, price DOUBLE, volume BIGINT, ts "
            "BIGINT, WATERMARK FOR ts AS ts - INTERVAL '100' MILLISECOND);"
            "CREATE STREAM vwap AS SELECT symbol, window_start, SUM(price * volume) / "
            "SUM(volume) AS vwap FROM trades WHERE price > 0 GROUP BY symbol, "
            "tumble(ts, INTERVAL '1' SECOND) HAVING COUNT(*) > 1;"
            "CREATE MATERIALIZED VIEW last AS SELECT symbol, vwap FROM vwap;"
            "CREATE SINK feed FROM last") == 0);
  /* One row per operator: id, operator, details, input -> output, section:
   * the logical plan's rows, then the physical plan's. */
  CHECK_TEXT(
      db, "EXPLAIN vwap",
      "1,source,trades (symbol VARCHAR, price DOUBLE, volume BIGINT, ts BIGINT); "
      "watermark ts - 100 ms,push,2,logical;"
      "2,window_aggregate,tumble(ts, 1000 ms) GROUP BY symbol; aggregates "
      "sum((price * CAST(volume AS DOUBLE))), sum(volume), count(*); WHERE (price > "
      "CAST(0 AS DOUBLE)); EMIT ON WINDOW CLOSE,1,3,logical;"
      "3,filter,HAVING (count(*) > CAST(1 AS BIGINT)),2,4,logical;"
      "4,project,symbol, window_start, (sum((price * CAST(volume AS DOUBLE))) / "
      "CAST(sum(volume) AS DOUBLE)) AS vwap,3,5,logical;"
      "5,output,vwap (symbol VARCHAR, window_start BIGINT, vwap DOUBLE),4,"
      "materialized view last,logical;"
      /* The physical section: the planner's operators and choices. */
      "6,chain,window -> map; one instance, on reactor 0,trades,materialized view "
      "last,physical;"
      "7,partitioning,unpartitioned: cores = 1,6,,physical;"
      "8,two_phase,split: partial per window and key: sum((price * CAST(volume AS "
      "DOUBLE))) as sum, sum(volume) as sum, count(*) as count; final combines them by "
      "sum, sum, sum,6,,physical");
  CHECK_TEXT(
      db, "EXPLAIN last",
      "1,stream,vwap (symbol VARCHAR, window_start BIGINT, vwap DOUBLE); EXPLAIN vwap "
      "shows its plan,,2,logical;"
      "2,project,symbol, vwap,1,3,logical;"
      "3,materialize,Z-set of the rows: each input row adds 1; forwards the changes it "
      "applied (_weight),2,4,logical;"
      "4,output,last (symbol VARCHAR, vwap DOUBLE),3,sink feed,logical;"
      "5,chain,map -> materialize; one instance, on reactor 0,vwap,sink feed,physical;"
      "6,partitioning,unpartitioned: no GROUP BY (no keyed state),5,,physical;"
      "7,two_phase,not split: it is a materialized view,5,,physical");
  CHECK_TEXT(
      db,
      "EXPLAIN CREATE STREAM x AS SELECT symbol, vwap * 2 AS v2 FROM last "
      "WHERE symbol = 'A'",
      "1,materialized view,last (symbol VARCHAR, vwap DOUBLE, _weight BIGINT NOT NULL), "
      "a changelog; EXPLAIN last shows its plan,,2,logical;"
      "2,filter,WHERE (symbol = 'A'),1,3,logical;"
      "3,project,symbol, (vwap * CAST(2 AS DOUBLE)) AS v2, _weight,2,4,logical;"
      "4,output,x (symbol VARCHAR, v2 DOUBLE, _weight BIGINT),3,"
      "(not created: EXPLAIN only),logical;"
      "5,chain,map; one instance, on reactor 0,last,(not created: EXPLAIN only),"
      "physical;"
      "6,partitioning,unpartitioned: no GROUP BY (no keyed state),5,,physical;"
      "7,two_phase,not split: it has no GROUP BY window (its rows need no merging: any "
      "split of its input works, see laminar_stream_partitioning),5,,physical");
  CHECK_TEXT(db,
             "EXPLAIN SELECT symbol FROM last WHERE vwap > 1 ORDER BY vwap DESC LIMIT 3",
             "1,scan,last (symbol VARCHAR, vwap DOUBLE),materialized view,2,logical;"
             "2,filter,WHERE (vwap > CAST(1 AS DOUBLE)),1,3,logical;"
             "3,project,symbol, vwap,2,4,logical;"
             "4,sort,ORDER BY vwap DESC,3,5,logical;"
             "5,limit,LIMIT 3 OFFSET 0 (rows a view holds k times count k times),4,6,"
             "logical;"
             "6,output,result (symbol VARCHAR),5,laminar_query,logical;"
             "7,query,once over a snapshot of last's rows; in the caller's thread,"
             "materialized view,laminar_query,physical");
  /* Nothing was created by EXPLAIN. */
  CHECK_TEXT(db, "SHOW STREAMS",
             "vwap,trades,window_aggregate(tumble 1000 ms on column 3, 1 "
             "keys, 3 aggregates, filtered) -> project(3 columns, having)");
  laminar_close(db);
  return 0;
}

/* ---- ${VAR} substitution ----------------------------------------------------------------- */

static int test_variables(void) {
  laminar_config* cfg;
  laminar_error err;
  CHECK_CODE(laminar_config_create(&cfg), LAMINAR_OK, NULL);
  CHECK_CODE(laminar_config_set(cfg, "var.T", "t", &err), LAMINAR_OK, &err);
  CHECK_CODE(laminar_config_set(cfg, "VAR.lim", "1", &err), LAMINAR_OK, &err);
  CHECK_CODE(laminar_config_set(cfg, "var.lim", "2", &err), LAMINAR_OK,
             &err); /* replaces */
  CHECK_CODE(laminar_config_set(cfg, "var.view.name", "mv", &err), LAMINAR_OK, &err);
  CHECK_CODE(laminar_config_set(cfg, "var.BAD", "m v", &err), LAMINAR_OK, &err);
  CHECK_CODE(laminar_config_set(cfg, "var.1x", "1", &err), LAMINAR_ERR_CONFIG_KEY, &err);
  CHECK_CODE(laminar_config_set(cfg, "var.a-b", "1", &err), LAMINAR_ERR_CONFIG_KEY, &err);
  CHECK_CODE(laminar_config_set(cfg, "var.", "1", &err), LAMINAR_ERR_CONFIG_KEY, &err);
  laminar_db* db;
  CHECK_CODE(laminar_open(cfg, &db, &err), LAMINAR_OK, &err);
  laminar_config_destroy(cfg); /* the database keeps its own copy */
  CHECK_CODE(laminar_execute(db,
                             "CREATE SOURCE ${T} (k VARCHAR, v BIGINT); -- ${NOT_SET}\n"
                             "CREATE MATERIALIZED VIEW ${view.name} AS /* ${NOR} */ "
                             "SELECT k, v FROM ${T} WHERE k <> '${T}'",
                             &err),
             LAMINAR_OK, &err);
  laminar_source* src;
  CHECK_CODE(laminar_source_open(db, "t", &src, &err), LAMINAR_OK, &err);
  kv_row rows[] = {{"a", 1, 0, 0}, {"t", 2, 0, 0}, {"b", 3, 0, 0}, {"c", 4, 0, 0}};
  CHECK(push_kv(src, rows, 4, 0, &err) == 0);
  CHECK_CODE(laminar_run_until_idle(db, &err), LAMINAR_OK, &err);
  CHECK_TEXT(db, "SELECT k, '$${T}' AS lit FROM ${view.name} ORDER BY k LIMIT ${lim}",
             "a,${T};b,${T}");
  CHECK_TEXT(db, "SELECT k AS \"${T}_name\" FROM mv WHERE k = 'a'", "a");
  /* Positions are the caller's text, not the substituted one. */
  EXPECT(fails_at(db, true, "SELECT k\nFROM mv WHERE k = ${NOPE}",
                  LAMINAR_ERR_SQL_UNDEFINED_VARIABLE, 2, 19));
  EXPECT(fails_at(db, true, "SELECT k FROM ${view.name} WHERE zz = 1",
                  LAMINAR_ERR_SQL_UNKNOWN_COLUMN, 1, 34));
  EXPECT(fails_at(db, true, "SELECT '${lim}${lim}${lim}', zz FROM mv",
                  LAMINAR_ERR_SQL_UNKNOWN_COLUMN, 1, 30));
  EXPECT(fails_at(db, true, "SELECT k FROM ${BAD} WHERE k = 'a'",
                  LAMINAR_ERR_SQL_UNKNOWN_OBJECT, 1, 15)); /* inside a value: its ${ */
  EXPECT(fails_at(db, false, "CREATE STREAM s2 AS SELECT k FROM ${T}\n  WHERE ${T} ==",
                  LAMINAR_ERR_SQL_SYNTAX, 2, 15));
  EXPECT(fails_at(db, true, "SELECT ${ bad} FROM mv", LAMINAR_ERR_SQL_SYNTAX, 1, 8));
  laminar_source_close(src);
  laminar_close(db);
  return 0;
}

/* ---- the materialize operator: snapshot / restore (white-box) ---------------------------- */

/* Feed the operator one chunk of (k, v, w) rows; k NULL = SQL NULL. */
static laminar_code feed(lm_op* op, const char* const* k, const int64_t* v,
                         const int64_t* w, int64_t n) {
  lm_str ks[16];
  uint8_t knull[16];
  for (int64_t i = 0; i < n; i++) {
    ks[i] = (lm_str){k[i], k[i] ? (int64_t)strlen(k[i]) : 0};
    knull[i] = k[i] == NULL;
  }
  lm_vec cols[3] = {{LM_TYPE_STRING, n, knull, ks},
                    {LM_TYPE_INT64, n, NULL, v},
                    {LM_TYPE_INT64, n, NULL, w}};
  lm_chunk chunk = {n, 3, cols, NULL};
  return lm_op_chain_chunk(op, &chunk);
}

/* The operator's rows as sorted "k:v*weight" text. */
static void content(const lm_op* op, char* out, size_t cap) {
  lm_view_rows rows;
  out[0] = '\0';
  if (lm_op_view_copy(op, &rows) != LAMINAR_OK) return;
  if (lm_view_rows_decode(lm_op_view_columns(op), &rows) == LAMINAR_OK) {
    char items[64][48];
    int64_t n = rows.nrows < 64 ? rows.nrows : 64;
    for (int64_t r = 0; r < n; r++) {
      const lm_str* ks = rows.cols[0].data;
      bool null = rows.cols[0].nulls != NULL && rows.cols[0].nulls[r];
      snprintf(items[r], sizeof items[r], "%.*s:%lld*%lld", null ? 4 : (int)ks[r].len,
               null ? "NULL" : ks[r].ptr,
               (long long)((const int64_t*)rows.cols[1].data)[r],
               (long long)rows.weights[r]);
    }
    qsort(items, (size_t)n, sizeof items[0], (int (*)(const void*, const void*))strcmp);
    for (int64_t r = 0; r < n; r++) {
      strncat(out, items[r], cap - strlen(out) - 1);
      strncat(out, " ", cap - strlen(out) - 1);
    }
  }
  lm_view_rows_free(&rows);
}

static int make_op(lm_op** out) {
  lm_schema s;
  lm_schema_init_empty(&s);
  CHECK(lm_schema_add(&s, "k", LM_TYPE_STRING, false) == 0);
  CHECK(lm_schema_add(&s, "v", LM_TYPE_INT64, false) == 0);
  CHECK(lm_schema_add(&s, "_weight", LM_TYPE_INT64, true) == 0);
  CHECK(lm_op_view_is_changelog(&s));
  laminar_code rc = lm_op_view_create(&s, out);
  lm_schema_free(&s);
  CHECK_CODE(rc, LAMINAR_OK, NULL);
  return 0;
}

static int test_operator_snapshot_restore(void) {
  lm_op* op;
  CHECK(make_op(&op) == 0);
  /* Enough distinct rows to grow the table and, after removals, compact
   * (over 64 KiB of dead rows). */
  static char keys[2048][40]; /* 128 chunks of 16 */
  const char* k[16];
  int64_t v[16], w[16];
  for (int round = 0; round < 2; round++) {
    for (int base = 0; base < 2048; base += 16) {
      for (int i = 0; i < 16; i++) {
        snprintf(keys[base + i], sizeof keys[0], "key-%04d-%s", base + i,
                 "padding-padding-padding");
        k[i] = (base + i) % 97 == 0 ? NULL : keys[base + i];
        v[i] = base + i;
        w[i] = round == 0 ? 2 : -2 + ((base + i) % 50 == 0 ? 1 : 0);
      }
      CHECK_CODE(feed(op, k, v, w, 16), LAMINAR_OK, NULL);
    }
  }
  char before[4096], after[4096];
  content(op, before, sizeof before);
  EXPECT(lm_op_view_rows(op) == 41 &&
         lm_op_view_retract_errors(op) == 0); /* v % 50 == 0 */
  const char* k2[] = {"zz", "key-0050-padding-padding-padding", "new"};
  int64_t v2[] = {1, 50, 7}, w2[] = {-1, -5, 1};
  CHECK_CODE(feed(op, k2, v2, w2, 3), LAMINAR_OK, NULL);
  EXPECT(lm_op_view_retract_errors(op) == 2);
  content(op, before, sizeof before);

  lm_state_writer wr;
  lm_state_writer_init(&wr);
  CHECK_CODE(lm_op_chain_snapshot(op, &wr), LAMINAR_OK, NULL);
  lm_op* back;
  CHECK(make_op(&back) == 0);
  lm_state_reader rd;
  lm_state_reader_init(&rd, wr.data, wr.len);
  laminar_error err;
  CHECK_CODE(lm_op_chain_restore(back, &rd, &err), LAMINAR_OK, &err);
  content(back, after, sizeof after);
  EXPECT(strcmp(before, after) == 0);
  EXPECT(lm_op_view_rows(back) == lm_op_view_rows(op));
  EXPECT(lm_op_view_retract_errors(back) == 2);
  /* Every truncation is refused; every flipped byte is refused or restores
   * something consistent -- never a read out of bounds (ASan). */
  for (size_t len = 0; len < wr.len; len++) {
    lm_state_reader_init(&rd, wr.data, len);
    EXPECT(lm_op_chain_restore(back, &rd, &err) != LAMINAR_OK);
  }
  for (size_t at = 0; at < wr.len; at++) {
    wr.data[at] ^= 0x5a;
    lm_state_reader_init(&rd, wr.data, wr.len);
    if (lm_op_chain_restore(back, &rd, &err) == LAMINAR_OK)
      content(back, after, sizeof after);
    wr.data[at] ^= 0x5a;
  }
  /* A restored view goes on applying changes. */
  lm_state_reader_init(&rd, wr.data, wr.len);
  CHECK_CODE(lm_op_chain_restore(back, &rd, &err), LAMINAR_OK, &err);
  const char* k3[] = {"new"};
  int64_t v3[] = {7}, w3[] = {-1};
  CHECK_CODE(feed(back, k3, v3, w3, 1), LAMINAR_OK, NULL);
  content(back, after, sizeof after);
  EXPECT(strstr(after, "new:") == NULL && strstr(before, "new:7*1") != NULL);
  lm_state_writer_free(&wr);
  lm_op_chain_destroy(op);
  lm_op_chain_destroy(back);
  return 0;
}

static const lm_test_case cases[] = {
    {"insert_only_view_and_select", test_insert_only_view_and_select},
    {"changelog_weights", test_changelog_weights},
    {"cascades_follow_retractions", test_cascades_follow_retractions},
    {"first_last_over_changelog", test_first_last_over_changelog},
    {"view_over_window_stream", test_view_over_window_stream},
    {"query_errors", test_query_errors},
    {"named_sinks", test_named_sinks},
    {"explain", test_explain},
    {"variables", test_variables},
    {"operator_snapshot_restore", test_operator_snapshot_restore},
    {NULL, NULL}};

int main(int argc, char** argv) { return lm_test_main(argc, argv, cases); }
