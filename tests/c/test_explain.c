/*
 * test_explain.c -- EXPLAIN's two sections through laminar.h (issue 26,
 * item 2): the logical plan the binder made (inputs, branches, filter, keys,
 * aggregates, window, output schema) and the physical plan the planner chose
 * (each branch's operator, the chain each partition runs, the partitioning
 * -- partitions and hash keys, or why the stream runs whole -- and the
 * two-phase split), for a union under a window, a keyed stream partitioned
 * across two cores, the same with one core, a late side output and an
 * EXPLAIN CREATE that builds nothing.
 */
#include "lm_test.h"
#include "views_util.h"

#include <stdio.h>
#include <string.h>

static const char* PIPELINE =
    "CREATE SOURCE a (symbol VARCHAR, v BIGINT, ts BIGINT,\n"
    "  WATERMARK FOR ts AS ts - INTERVAL '10' MILLISECOND);\n"
    "CREATE SOURCE b (symbol VARCHAR, v BIGINT, ts BIGINT, WATERMARK FOR ts);\n"
    /* a window over a union: each branch routes its rows by its own symbol
     * column, one chain per partition when cores > 1 */
    "CREATE STREAM u AS SELECT symbol, COUNT(*) AS n, AVG(v) AS av\n"
    "  FROM (SELECT symbol, v, ts FROM a UNION ALL SELECT symbol, v, ts FROM b\n"
    "        WHERE v > 0)\n"
    "  GROUP BY symbol, tumble(ts, INTERVAL '1' SECOND);\n"
    /* a keyed window over one source: partitioned when cores > 1 */
    "CREATE STREAM k AS SELECT symbol, window_start, SUM(v) AS s, MAX(v) AS hi FROM a\n"
    "  GROUP BY symbol, tumble(ts, INTERVAL '1' SECOND);\n"
    /* a late side output keeps its stream whole */
    "CREATE STREAM l AS SELECT symbol, COUNT(*) AS n FROM b\n"
    "  GROUP BY symbol, tumble(ts, INTERVAL '1' SECOND) WITH (late_output = TRUE);\n";

static int open_db(int cores, laminar_db** out) {
  return open_cores_db(cores, PIPELINE, out);
}

static int test_union_window_partitioned(void) {
  laminar_db* db;
  CHECK(open_db(2, &db) == 0);
  CHECK_TEXT(
      db, "EXPLAIN u",
      "1,  source,a (symbol VARCHAR, v BIGINT, ts BIGINT); watermark ts - 10 "
      "ms,push,2,logical;"
      "2,  project,symbol, v, ts,1,6,logical;"
      "3,  source,b (symbol VARCHAR, v BIGINT, ts BIGINT); watermark ts - 0 "
      "ms,push,4,logical;"
      "4,  filter,WHERE (v > CAST(0 AS BIGINT)),3,5,logical;"
      "5,  project,symbol, v, ts,4,6,logical;"
      "6,union all,a, b; each input's own watermark, the least of them the "
      "union's,2, 5,7,logical;"
      "7,window_aggregate,tumble(ts, 1000 ms) GROUP BY symbol; aggregates count(*), "
      "avg(v); EMIT ON WINDOW CLOSE,6,8,logical;"
      "8,project,symbol, count(*) AS n, avg(v) AS av,7,9,logical;"
      "9,output,u (symbol VARCHAR, n BIGINT, av DOUBLE),8,(none yet),logical;"
      "10,branch,a: map (to the union's columns),a,12,physical;"
      "11,branch,b: map (to the union's columns),b,12,physical;"
      "12,chain,window -> map; one per partition (2),10, 11,(none yet),physical;"
      "13,partitioning,2 partitions by hash of symbol (cores = 2),12,,physical;"
      "14,two_phase,not split: it reads several inputs (UNION ALL) or a derived "
      "table,12,,physical");
  CHECK_TEXT(
      db, "EXPLAIN k",
      "1,source,a (symbol VARCHAR, v BIGINT, ts BIGINT); watermark ts - 10 "
      "ms,push,2,logical;"
      "2,window_aggregate,tumble(ts, 1000 ms) GROUP BY symbol; aggregates sum(v), "
      "max(v); EMIT ON WINDOW CLOSE,1,3,logical;"
      "3,project,symbol, window_start, sum(v) AS s, max(v) AS hi,2,4,logical;"
      "4,output,k (symbol VARCHAR, window_start BIGINT, s BIGINT, hi BIGINT),3,(none "
      "yet),logical;"
      "5,chain,window -> map; one per partition (2),a,(none yet),physical;"
      "6,partitioning,2 partitions by hash of symbol (cores = 2),5,,physical;"
      "7,two_phase,split: partial per window and key: sum(v) as sum, max(v) as max; "
      "final combines them by sum, max,5,,physical");
  CHECK_TEXT(
      db, "EXPLAIN l",
      "1,source,b (symbol VARCHAR, v BIGINT, ts BIGINT); watermark ts - 0 "
      "ms,push,2,logical;"
      "2,window_aggregate,tumble(ts, 1000 ms) GROUP BY symbol; aggregates count(*); "
      "EMIT ON WINDOW CLOSE; late rows to l_late,1,3,logical;"
      "3,project,symbol, count(*) AS n,2,4,logical;"
      "4,output,l (symbol VARCHAR, n BIGINT),3,(none yet),logical;"
      "5,chain,window -> map; one instance, on reactor 0,b,(none yet),physical;"
      "6,partitioning,unpartitioned: a late side output (the window hands late rows "
      "to one stream),5,,physical;"
      "7,two_phase,split: partial per window and key: count(*) as count; final "
      "combines them by sum,5,,physical");
  CHECK_TEXT(
      db, "EXPLAIN l_late",
      "1,source,b (symbol VARCHAR, v BIGINT, ts BIGINT); watermark ts - 0 "
      "ms,push,2,logical;"
      "2,late_rows,the rows of b that stream l's window counts as late,1,3,logical;"
      "3,output,l_late (symbol VARCHAR, v BIGINT, ts BIGINT),2,(none yet),logical;"
      "4,chain,map; one instance, on reactor 0,b,(none yet),physical;"
      "5,partitioning,unpartitioned: no GROUP BY (no keyed state),4,,physical;"
      "6,two_phase,not split: it has no GROUP BY window (its rows need no merging: "
      "any split of its input works, see laminar_stream_partitioning),4,,physical");
  laminar_close(db);
  return 0;
}

/* One core: the same logical plan (test above), one instance of the chain. */
static int test_one_core(void) {
  laminar_db* db;
  CHECK(open_db(1, &db) == 0);
  char got[8192];
  laminar_error err;
  CHECK_CODE(query_text(db, "EXPLAIN k", got, sizeof got, &err), LAMINAR_OK, &err);
  const char* physical = strstr(got, "5,chain,");
  CHECK(physical != NULL);
  EXPECT(strcmp(physical,
                "5,chain,window -> map; one instance, on reactor 0,a,(none yet),physical;"
                "6,partitioning,unpartitioned: cores = 1,5,,physical;"
                "7,two_phase,split: partial per window and key: sum(v) as sum, max(v) "
                "as max; final combines them by sum, max,5,,physical") == 0);
  laminar_close(db);
  return lm_test_expect_failed_;
}

static int test_explain_create(void) {
  laminar_db* db;
  CHECK(open_db(2, &db) == 0);
  CHECK_TEXT(
      db,
      "EXPLAIN CREATE STREAM x AS SELECT symbol, MIN(v) AS lo FROM a "
      "WHERE v > 1 GROUP BY symbol, session(ts, INTERVAL '1' SECOND)",
      "1,source,a (symbol VARCHAR, v BIGINT, ts BIGINT); watermark ts - 10 "
      "ms,push,2,logical;"
      "2,window_aggregate,session(ts, 1000 ms) GROUP BY symbol; aggregates min(v); "
      "WHERE (v > CAST(1 AS BIGINT)); EMIT ON WINDOW CLOSE,1,3,logical;"
      "3,project,symbol, min(v) AS lo,2,4,logical;"
      "4,output,x (symbol VARCHAR, lo BIGINT),3,(not created: EXPLAIN only),logical;"
      "5,chain,session -> map; one per partition (2),a,(not created: EXPLAIN "
      "only),physical;"
      "6,partitioning,2 partitions by hash of symbol (cores = 2),5,,physical;"
      "7,two_phase,not split: session windows do not decompose (a session spans rows "
      "a split may put in different parts),5,,physical");
  /* Nothing was created. */
  CHECK_TEXT(db, "SHOW STREAMS",
             "u,a, b,union(a: project(3 columns), b: filter -> project(3 columns)) -> "
             "window_aggregate(tumble 1000 ms on column 2, 1 keys, 2 aggregates) -> "
             "project(3 columns);"
             "k,a,window_aggregate(tumble 1000 ms on column 2, 1 keys, 2 aggregates) -> "
             "project(4 columns);"
             "l,b,window_aggregate(tumble 1000 ms on column 2, 1 keys, 1 aggregates) -> "
             "project(2 columns);"
             "l_late,b,late rows of l");
  laminar_close(db);
  return 0;
}

int main(int argc, char** argv) {
  static const lm_test_case cases[] = {
      {"union_window_partitioned", test_union_window_partitioned},
      {"one_core", test_one_core},
      {"explain_create", test_explain_create},
      {NULL, NULL}};
  return lm_test_main(argc, argv, cases);
}
