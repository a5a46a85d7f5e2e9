/*
 * test_union.c -- streams over several inputs (UNION ALL, issue 26) through
 * laminar.h: a top-level UNION ALL of two and three sources, a window over a
 * union in a derived table and in a CTE, a materialized view over a union,
 * per-input watermarks (the stream's is the least of its inputs', a row is
 * late by its own input's), the same answer whatever the interleaving of the
 * inputs, cores 1 and 2, type widening, and the errors of mismatched
 * branches.
 */
#include "arrow_build.h"
#include "lm_test.h"
#include "views_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Sources a, b, c: trades with watermark delays 100, 0 and 50 ms. */
static const char* SOURCES =
    "CREATE SOURCE a (symbol VARCHAR NOT NULL, price DOUBLE, volume BIGINT, ts BIGINT,\n"
    "  WATERMARK FOR ts AS ts - INTERVAL '100' MILLISECOND);\n"
    "CREATE SOURCE b (symbol VARCHAR NOT NULL, price DOUBLE, volume BIGINT, ts BIGINT,\n"
    "  WATERMARK FOR ts);\n"
    "CREATE SOURCE c (symbol VARCHAR NOT NULL, price DOUBLE, volume BIGINT, ts BIGINT,\n"
    "  WATERMARK FOR ts AS ts - INTERVAL '50' MILLISECOND);\n";

static int open_db(int cores, laminar_db** out) {
  return open_cores_db(cores, SOURCES, out);
}

/* Push one row (symbol, volume, ts) into source `name`. */
static int push1(laminar_db* db, const char* name, const char* sym, int64_t vol,
                 int64_t ts) {
  laminar_error err;
  laminar_source* src;
  CHECK_CODE(laminar_source_open(db, name, &src, &err), LAMINAR_OK, &err);
  trade_row row = {sym, 1.5, false, vol, false, ts};
  struct ArrowArray array;
  struct ArrowSchema schema;
  CHECK(build_trades(&row, 1, false, &array, &schema) == 0);
  laminar_code rc = laminar_source_push(src, &array, &schema, &err);
  if (array.release != NULL) array.release(&array);
  schema.release(&schema);
  laminar_source_close(src);
  CHECK_CODE(rc, LAMINAR_OK, &err);
  return 0;
}

static int cmp_str(const void* x, const void* y) {
  return strcmp(*(const char* const*)x, *(const char* const*)y);
}

/* Every row queued on sub rendered "c1,c2,...", sorted, joined by ';'. */
static int drain_sorted(laminar_subscription* sub, char* out, size_t cap) {
  char* rows[256];
  int n = 0;
  out[0] = '\0';
  for (;;) {
    result_view rv;
    memset(&rv, 0, sizeof rv);
    laminar_error err;
    CHECK_CODE(laminar_subscription_next(sub, 0, &rv.array, &rv.schema, &err), LAMINAR_OK,
               &err);
    if (rv.array.release == NULL) break;
    CHECK(result_view_init(&rv) == 0);
    for (int64_t r = 0; r < rv.array.length && n < 256; r++) {
      char line[256] = "";
      render_row(&rv.schema, &rv.view, r, line, sizeof line);
      rows[n] = malloc(strlen(line) + 1);
      CHECK(rows[n] != NULL);
      strcpy(rows[n++], line);
    }
    result_view_free(&rv);
  }
  qsort(rows, (size_t)n, sizeof rows[0], cmp_str);
  for (int i = 0; i < n; i++) {
    if (i > 0) strncat(out, ";", cap - strlen(out) - 1);
    strncat(out, rows[i], cap - strlen(out) - 1);
    free(rows[i]);
  }
  return 0;
}

/* A top-level UNION ALL of three sources: every row of each, projected and
 * filtered per branch, named by the first branch. */
static int test_three_inputs(void) {
  laminar_db* db;
  CHECK(open_db(1, &db) == 0);
  laminar_error err;
  CHECK_CODE(
      laminar_execute(db,
                      "CREATE STREAM u AS SELECT symbol AS s, volume AS v FROM a\n"
                      "  UNION ALL SELECT symbol, volume * 10 FROM b WHERE volume > 1\n"
                      "  UNION ALL SELECT symbol, ts FROM c;",
                      &err),
      LAMINAR_OK, &err);
  laminar_subscription* sub;
  CHECK_CODE(laminar_subscribe(db, "u", &sub, &err), LAMINAR_OK, &err);
  CHECK(push1(db, "a", "A", 1, 100) == 0);
  CHECK(push1(db, "b", "B", 1, 100) == 0); /* filtered out by b's branch */
  CHECK(push1(db, "b", "B", 2, 120) == 0);
  CHECK(push1(db, "c", "C", 3, 130) == 0);
  CHECK_CODE(laminar_run_until_idle(db, &err), LAMINAR_OK, &err);
  char text[1024];
  CHECK(drain_sorted(sub, text, sizeof text) == 0);
  EXPECT(strcmp(text, "A,1;B,20;C,130") == 0);
  if (strcmp(text, "A,1;B,20;C,130") != 0) fprintf(stderr, "got %s\n", text);
  /* The union's columns: s, v. */
  struct ArrowSchema schema;
  struct ArrowArray array;
  laminar_subscription_close(sub);
  CHECK(push1(db, "a", "A", 4, 200) == 0);
  CHECK_CODE(laminar_subscribe(db, "u", &sub, &err), LAMINAR_OK, &err);
  CHECK(push1(db, "c", "C", 5, 210) == 0);
  CHECK_CODE(laminar_run_until_idle(db, &err), LAMINAR_OK, &err);
  CHECK_CODE(laminar_subscription_next(sub, 0, &array, &schema, &err), LAMINAR_OK, &err);
  CHECK(array.release != NULL);
  EXPECT(schema.n_children == 2 && strcmp(schema.children[0]->name, "s") == 0 &&
         strcmp(schema.children[1]->name, "v") == 0);
  array.release(&array);
  schema.release(&schema);
  laminar_subscription_close(sub);
  /* SHOW STREAMS: every input, and the branches in the plan's summary. */
  CHECK_CODE(query_text(db, "SHOW STREAMS", text, sizeof text, &err), LAMINAR_OK, &err);
  EXPECT(strstr(text,
                "u,a, b, c,union(a: project(2 columns), b: filter -> project(2 columns), "
                "c: project(2 columns)) -> project(2 columns)") != NULL);
  if (strstr(text, "u,a, b, c,union(") == NULL)
    fprintf(stderr, "SHOW STREAMS: %s\n", text);
  /* An input read by a union cannot be dropped. */
  CHECK_CODE(laminar_execute(db, "DROP SOURCE b;", &err), LAMINAR_ERR_SQL_DEPENDENCY,
             &err);
  EXPECT(strstr(err.message, "'u'") != NULL);
  CHECK_CODE(laminar_execute(db, "DROP STREAM u; DROP SOURCE b;", &err), LAMINAR_OK,
             &err);
  laminar_close(db);
  return lm_test_expect_failed_;
}

static const char* WINDOWED =
    "CREATE STREAM w AS SELECT symbol, window_start, COUNT(*) AS n, SUM(v) AS total\n"
    "  FROM (SELECT symbol, volume AS v, ts FROM a UNION ALL SELECT symbol, volume, ts "
    "FROM b)\n"
    "  GROUP BY symbol, tumble(ts, INTERVAL '1' SECOND) EMIT ON WINDOW CLOSE;";

/* The event order of the watermark case: (source, volume, ts). */
typedef struct ev {
  const char* src;
  int64_t vol, ts;
} ev;

/* Run events through the windowed union; the output (sorted) and late count. */
static int run_windowed(int cores, const char* ddl, const ev* evs, int n, char* out,
                        size_t cap, int64_t* late) {
  laminar_db* db;
  CHECK(open_db(cores, &db) == 0);
  laminar_error err;
  /* With 2 cores a keyed stream over a partitions it; the union runs whole. */
  CHECK_CODE(
      laminar_execute(db,
                      "CREATE STREAM keyed AS SELECT symbol, COUNT(*) AS n FROM a\n"
                      "  GROUP BY symbol, tumble(ts, INTERVAL '1' SECOND);",
                      &err),
      LAMINAR_OK, &err);
  CHECK_CODE(laminar_execute(db, ddl, &err), LAMINAR_OK, &err);
  laminar_subscription* sub;
  CHECK_CODE(laminar_subscribe(db, "w", &sub, &err), LAMINAR_OK, &err);
  for (int i = 0; i < n; i++) {
    CHECK(push1(db, evs[i].src, "S", evs[i].vol, evs[i].ts) == 0);
    CHECK_CODE(laminar_run_until_idle(db, &err), LAMINAR_OK, &err);
  }
  CHECK(drain_sorted(sub, out, cap) == 0);
  CHECK_CODE(laminar_stream_late_rows(db, "w", late, &err), LAMINAR_OK, &err);
  laminar_subscription_close(sub);
  laminar_close(db);
  return 0;
}

/* The union's watermark is the least of its inputs' (an input that saw
 * nothing holds it back); a row is late by its own input's watermark, so
 * the answer does not depend on how the inputs interleave. */
static int test_window_watermarks(void) {
  /* a: 500, 2500 (a's watermark 2400), then 800: late for a (its window
   * [0, 1000) closed by a's watermark) although b has seen nothing. b: 900
   * (on time for b), 2300 (b's watermark 2300): the union's is 2300, so
   * [0, 1000) and [1000, 2000) close. */
  const ev order1[] = {{"a", 1, 500}, {"a", 2, 2500},  {"a", 4, 800},
                       {"b", 8, 900}, {"b", 16, 1500}, {"b", 32, 2300}};
  const ev order2[] = {{"b", 8, 900},   {"b", 16, 1500}, {"a", 1, 500},
                       {"b", 32, 2300}, {"a", 2, 2500},  {"a", 4, 800}};
  const char* want = "S,0,2,9;S,1000,1,16";
  for (int cores = 1; cores <= 2; cores++) {
    char text1[512], text2[512];
    int64_t late1 = -1, late2 = -1;
    CHECK(run_windowed(cores, WINDOWED, order1, 6, text1, sizeof text1, &late1) == 0);
    CHECK(run_windowed(cores, WINDOWED, order2, 6, text2, sizeof text2, &late2) == 0);
    if (strcmp(text1, want) != 0 || strcmp(text2, want) != 0) {
      fprintf(stderr, "cores=%d got '%s' and '%s', want '%s'\n", cores, text1, text2,
              want);
    }
    EXPECT(strcmp(text1, want) == 0);
    EXPECT(strcmp(text2, want) == 0);
    EXPECT(late1 == 1 && late2 == 1);
  }
  /* Nothing closes while one input has seen nothing. */
  const ev only_a[] = {{"a", 1, 500}, {"a", 2, 5000}};
  char text[512];
  int64_t late = -1;
  CHECK(run_windowed(1, WINDOWED, only_a, 2, text, sizeof text, &late) == 0);
  EXPECT(strcmp(text, "") == 0 && late == 0);
  return lm_test_expect_failed_;
}

/* Hop and session windows over the union (operators of their own) judge
 * lateness by each row's own input too: both orders give one answer, with
 * a's row at 800 late (a's watermark had passed its windows). */
static int test_hop_session_watermarks(void) {
  static const char* const DDLS[] = {
      "CREATE STREAM w AS SELECT symbol, window_start, COUNT(*) AS n, SUM(v) AS total\n"
      "  FROM (SELECT symbol, volume AS v, ts FROM a UNION ALL SELECT symbol, volume, ts "
      "FROM b)\n"
      "  GROUP BY symbol, hop(ts, INTERVAL '1' SECOND, INTERVAL '500' MILLISECOND);",
      "CREATE STREAM w AS SELECT symbol, window_start, COUNT(*) AS n, SUM(v) AS total\n"
      "  FROM (SELECT symbol, volume AS v, ts FROM a UNION ALL SELECT symbol, volume, ts "
      "FROM b)\n"
      "  GROUP BY symbol, session(ts, INTERVAL '300' MILLISECOND);",
  };
  const ev order1[] = {{"a", 1, 500}, {"a", 2, 2500},  {"a", 4, 800},
                       {"b", 8, 900}, {"b", 16, 1500}, {"b", 32, 2300}};
  const ev order2[] = {{"b", 8, 900},   {"b", 16, 1500}, {"a", 1, 500},
                       {"b", 32, 2300}, {"a", 2, 2500},  {"a", 4, 800}};
  for (size_t d = 0; d < sizeof DDLS / sizeof DDLS[0]; d++) {
    for (int cores = 1; cores <= 2; cores++) {
      char text1[512], text2[512];
      int64_t late1 = -1, late2 = -1;
      CHECK(run_windowed(cores, DDLS[d], order1, 6, text1, sizeof text1, &late1) == 0);
      CHECK(run_windowed(cores, DDLS[d], order2, 6, text2, sizeof text2, &late2) == 0);
      if (strcmp(text1, text2) != 0 || late1 != 1 || late2 != 1)
        fprintf(stderr, "%s, cores=%d: '%s' (late %lld) and '%s' (late %lld)\n",
                d == 0 ? "hop" : "session", cores, text1, (long long)late1, text2,
                (long long)late2);
      EXPECT(strcmp(text1, text2) == 0 && text1[0] != '\0');
      EXPECT(late1 == 1 && late2 == 1);
    }
  }
  return lm_test_expect_failed_;
}

/* WITH u AS (... UNION ALL ...): the same window over a CTE of three inputs. */
static int test_cte_three(void) {
  const char* ddl =
      "CREATE STREAM w AS WITH u AS (SELECT symbol, volume AS v, ts FROM a\n"
      "  UNION ALL SELECT symbol, volume, ts FROM b UNION ALL SELECT symbol, volume, ts "
      "FROM c)\n"
      "  SELECT symbol, window_start, COUNT(*) AS n, SUM(v) AS total FROM u\n"
      "  GROUP BY symbol, tumble(ts, INTERVAL '1' SECOND);";
  /* c's watermark (delay 50): 1450 after 1500. */
  const ev evs[] = {{"a", 1, 100},   {"b", 2, 200},   {"c", 4, 300}, {"a", 8, 1200},
                    {"b", 16, 1300}, {"c", 32, 1500}, {"c", 64, 600}};
  char text[512];
  int64_t late = -1;
  CHECK(run_windowed(1, ddl, evs, 7, text, sizeof text, &late) == 0);
  /* Watermarks a 1100, b 1300, c 1450: [0, 1000) closed; c's 600 is late by c's. */
  EXPECT(strcmp(text, "S,0,3,7") == 0);
  if (strcmp(text, "S,0,3,7") != 0) fprintf(stderr, "got '%s'\n", text);
  EXPECT(late == 1);
  return lm_test_expect_failed_;
}

/* A materialized view over a union, read with laminar_query. */
static int test_view_over_union(void) {
  laminar_db* db;
  CHECK(open_db(1, &db) == 0);
  laminar_error err;
  CHECK_CODE(
      laminar_execute(db,
                      "CREATE MATERIALIZED VIEW v AS SELECT symbol, volume FROM a\n"
                      "  UNION ALL SELECT symbol, volume FROM b;",
                      &err),
      LAMINAR_OK, &err);
  CHECK(push1(db, "a", "A", 1, 100) == 0);
  CHECK(push1(db, "b", "B", 2, 100) == 0);
  CHECK(push1(db, "b", "A", 1, 100) == 0);
  CHECK_CODE(laminar_run_until_idle(db, &err), LAMINAR_OK, &err);
  char text[512];
  CHECK_CODE(query_text(db, "SELECT symbol, volume FROM v ORDER BY symbol, volume", text,
                        sizeof text, &err),
             LAMINAR_OK, &err);
  EXPECT(strcmp(text, "A,1;A,1;B,2") == 0);
  if (strcmp(text, "A,1;A,1;B,2") != 0) fprintf(stderr, "got '%s'\n", text);
  laminar_close(db);
  return lm_test_expect_failed_;
}

/* laminar_query over several views: a UNION ALL of SELECTs over views (the
 * ORDER BY and LIMIT after the last branch are the set's, column types
 * widen), a derived table over such a union, a view over a stream that
 * reads a union, and a FROM that is no view named in the error. */
static int test_query_union_of_views(void) {
  laminar_db* db;
  CHECK(open_db(1, &db) == 0);
  laminar_error err;
  CHECK_CODE(laminar_execute(
                 db,
                 "CREATE STREAM u AS SELECT symbol, volume FROM a UNION ALL\n"
                 "  SELECT symbol, volume FROM b;\n"
                 "CREATE MATERIALIZED VIEW vu AS SELECT symbol, volume FROM u;\n"
                 "CREATE MATERIALIZED VIEW va AS SELECT symbol, volume FROM a;\n"
                 "CREATE MATERIALIZED VIEW vb AS SELECT symbol, price FROM b;\n"
                 "CREATE MATERIALIZED VIEW vc AS SELECT symbol, COUNT(*) AS n FROM c\n"
                 "  GROUP BY symbol;",
                 &err),
             LAMINAR_OK, &err);
  CHECK(push1(db, "a", "A", 1, 100) == 0);
  CHECK(push1(db, "a", "A", 1, 110) == 0);
  CHECK(push1(db, "a", "C", 7, 120) == 0);
  CHECK(push1(db, "b", "B", 2, 100) == 0);
  CHECK(push1(db, "c", "C", 4, 100) == 0);
  CHECK(push1(db, "c", "C", 5, 130) == 0);
  CHECK_CODE(laminar_run_until_idle(db, &err), LAMINAR_OK, &err);
  static const struct {
    const char* sql;
    const char* want;
  } cases[] = {
      {"SELECT symbol, volume FROM vu ORDER BY symbol, volume", "A,1;A,1;B,2;C,7"},
      /* BIGINT and DOUBLE meet in DOUBLE; a row held twice is two rows. */
      {"SELECT symbol, volume FROM va UNION ALL SELECT symbol, price FROM vb\n"
       "  ORDER BY symbol, volume",
       "A,1;A,1;B,1.5;C,7"},
      {"SELECT symbol, volume * 10 AS x FROM va WHERE volume > 1 UNION ALL\n"
       "  SELECT symbol, n FROM vc UNION ALL SELECT symbol, volume FROM vu\n"
       "  ORDER BY 2 DESC, symbol LIMIT 3 OFFSET 1",
       "C,7;B,2;C,2"},
      {"SELECT lower(symbol) AS s, n FROM (SELECT symbol, volume AS n FROM va\n"
       "  UNION ALL SELECT symbol, n FROM vc) WHERE n < 5 ORDER BY s, n",
       "a,1;a,1;c,2"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    char text[512];
    laminar_code rc = query_text(db, cases[i].sql, text, sizeof text, &err);
    EXPECT(rc == LAMINAR_OK);
    if (rc != LAMINAR_OK) {
      fprintf(stderr, "case %zu: %s\n", i, err.message);
    } else if (strcmp(text, cases[i].want) != 0) {
      fprintf(stderr, "case %zu: got '%s', want '%s'\n", i, text, cases[i].want);
      EXPECT(false);
    }
  }
  struct ArrowArrayStream st;
  laminar_code rc = laminar_query(
      db, "SELECT symbol FROM va UNION ALL SELECT symbol FROM u", &st, &err);
  EXPECT(rc == LAMINAR_ERR_SQL_NOT_MATERIALIZED && strstr(err.message, "'u'") != NULL);
  if (rc == LAMINAR_OK) st.release(&st);
  rc = laminar_query(db,
                     "SELECT symbol FROM va UNION ALL SELECT symbol FROM vb\n"
                     "  ORDER BY lower(symbol)",
                     &st, &err);
  EXPECT(rc == LAMINAR_ERR_SQL_UNKNOWN_COLUMN &&
         strstr(err.message, "UNION ALL") != NULL);
  if (rc == LAMINAR_OK) st.release(&st);
  laminar_close(db);
  return lm_test_expect_failed_;
}

/* Columns meet in the wider type: BIGINT and DOUBLE make DOUBLE. */
static int test_widening(void) {
  laminar_db* db;
  CHECK(open_db(1, &db) == 0);
  laminar_error err;
  CHECK_CODE(laminar_execute(db,
                             "CREATE STREAM u AS SELECT volume AS x FROM a UNION ALL\n"
                             "  SELECT price FROM b;",
                             &err),
             LAMINAR_OK, &err);
  laminar_subscription* sub;
  CHECK_CODE(laminar_subscribe(db, "u", &sub, &err), LAMINAR_OK, &err);
  CHECK(push1(db, "a", "A", 3, 100) == 0);
  CHECK(push1(db, "b", "B", 3, 100) == 0);
  CHECK_CODE(laminar_run_until_idle(db, &err), LAMINAR_OK, &err);
  char text[256];
  CHECK(drain_sorted(sub, text, sizeof text) == 0);
  EXPECT(strcmp(text, "1.5;3") == 0);
  if (strcmp(text, "1.5;3") != 0) fprintf(stderr, "got '%s'\n", text);
  laminar_subscription_close(sub);
  laminar_close(db);
  return lm_test_expect_failed_;
}

/* Branches that do not fit together fail with their code, at their place. */
static int test_errors(void) {
  laminar_db* db;
  CHECK(open_db(1, &db) == 0);
  laminar_error err;
  static const struct {
    const char* sql;
    laminar_code code;
    const char* needle;
  } cases[] = {
      {"CREATE STREAM e AS SELECT symbol, ts FROM a UNION ALL SELECT symbol FROM b;",
       LAMINAR_ERR_TYPE_MISMATCH, "has 1 columns"},
      {"CREATE STREAM e AS SELECT symbol FROM a UNION ALL SELECT ts FROM b;",
       LAMINAR_ERR_TYPE_MISMATCH, "'symbol'"},
      {"CREATE STREAM e AS SELECT symbol FROM a UNION SELECT symbol FROM b;",
       LAMINAR_ERR_SQL_UNSUPPORTED, "UNION ALL"},
      {"CREATE STREAM e AS SELECT symbol FROM a UNION ALL SELECT symbol FROM nope;",
       LAMINAR_ERR_SQL_UNKNOWN_OBJECT, "'nope'"},
      {"CREATE STREAM e AS SELECT symbol FROM a UNION ALL SELECT symbol FROM b\n"
       "  GROUP BY symbol, tumble(ts, INTERVAL '1' SECOND);",
       LAMINAR_ERR_SQL_UNSUPPORTED, "aggregate over it"},
      /* b's watermark column ts goes to position 3, a's to 2. */
      {"CREATE STREAM e AS SELECT symbol, COUNT(*) AS n FROM (SELECT symbol, ts, volume\n"
       "  FROM a UNION ALL SELECT symbol, volume, ts FROM b)\n"
       "  GROUP BY symbol, tumble(ts, INTERVAL '1' SECOND);",
       LAMINAR_ERR_SQL_GROUPING, "watermark column 'ts'"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    laminar_code rc = laminar_execute(db, cases[i].sql, &err);
    if (rc != cases[i].code || strstr(err.message, cases[i].needle) == NULL) {
      fprintf(stderr, "case %zu: code %d (%s), want %d and '%s'\n", i, (int)rc,
              err.message, (int)cases[i].code, cases[i].needle);
    }
    EXPECT(rc == cases[i].code);
    EXPECT(strstr(err.message, cases[i].needle) != NULL);
  }
  /* Nothing was created. */
  CHECK_CODE(laminar_execute(db, "DROP STREAM e;", &err), LAMINAR_ERR_SQL_UNKNOWN_OBJECT,
             &err);
  laminar_close(db);
  return lm_test_expect_failed_;
}

/* A union reading the same source twice and a stream; a stream over a union
 * stream (a cascade), following the union's watermark (the least). */
static int test_cascade_and_self(void) {
  laminar_db* db;
  CHECK(open_db(1, &db) == 0);
  laminar_error err;
  CHECK_CODE(laminar_execute(db,
                             "CREATE STREAM big AS SELECT symbol, volume, ts FROM c\n"
                             "  WHERE volume > 10;\n"
                             "CREATE STREAM u AS SELECT symbol, volume, ts FROM a\n"
                             "  UNION ALL SELECT symbol, volume + 100, ts FROM a\n"
                             "  UNION ALL SELECT symbol, volume, ts FROM big;\n"
                             "CREATE STREAM per_sec AS SELECT symbol, window_start,\n"
                             "  SUM(volume) AS total FROM u\n"
                             "  GROUP BY symbol, tumble(ts, INTERVAL '1' SECOND);",
                             &err),
             LAMINAR_OK, &err);
  laminar_subscription *su, *sw;
  CHECK_CODE(laminar_subscribe(db, "u", &su, &err), LAMINAR_OK, &err);
  CHECK_CODE(laminar_subscribe(db, "per_sec", &sw, &err), LAMINAR_OK, &err);
  CHECK(push1(db, "a", "A", 1, 100) == 0);
  CHECK(push1(db, "c", "A", 5, 200) == 0); /* filtered out by big */
  CHECK(push1(db, "c", "A", 20, 300) == 0);
  CHECK(push1(db, "a", "A", 2, 1500) == 0); /* a's watermark 1400; c's 250: no close */
  CHECK_CODE(laminar_run_until_idle(db, &err), LAMINAR_OK, &err);
  char text[512];
  CHECK(drain_sorted(su, text, sizeof text) == 0);
  EXPECT(strcmp(text, "A,1,100;A,101,100;A,102,1500;A,2,1500;A,20,300") == 0);
  if (strcmp(text, "A,1,100;A,101,100;A,102,1500;A,2,1500;A,20,300") != 0) {
    fprintf(stderr, "union got '%s'\n", text);
  }
  CHECK(drain_sorted(sw, text, sizeof text) == 0);
  EXPECT(strcmp(text, "") == 0);
  /* c's watermark passes 1000 (big follows c): the union's is 1400. */
  CHECK(push1(db, "c", "A", 3, 1450) == 0);
  CHECK_CODE(laminar_run_until_idle(db, &err), LAMINAR_OK, &err);
  CHECK(drain_sorted(sw, text, sizeof text) == 0);
  EXPECT(strcmp(text, "A,0,122") == 0);
  if (strcmp(text, "A,0,122") != 0) fprintf(stderr, "per_sec got '%s'\n", text);
  laminar_subscription_close(su);
  laminar_subscription_close(sw);
  CHECK_CODE(laminar_execute(db, "DROP STREAM big;", &err), LAMINAR_ERR_SQL_DEPENDENCY,
             &err);
  CHECK_CODE(
      laminar_execute(db, "DROP STREAM per_sec; DROP STREAM u; DROP STREAM big;", &err),
      LAMINAR_OK, &err);
  laminar_close(db);
  return lm_test_expect_failed_;
}

/* A window over a union with a late side output: the late rows, by their
 * own input's watermark, with the union's columns. */
static int test_late_output(void) {
  laminar_db* db;
  CHECK(open_db(1, &db) == 0);
  laminar_error err;
  CHECK_CODE(
      laminar_execute(db,
                      "CREATE STREAM w AS SELECT symbol, window_start, COUNT(*) AS n\n"
                      "  FROM (SELECT symbol, ts, volume AS v FROM a UNION ALL\n"
                      "        SELECT symbol, ts, volume FROM b)\n"
                      "  GROUP BY symbol, tumble(ts, INTERVAL '1' SECOND)\n"
                      "  WITH (late_output = 'w_late');",
                      &err),
      LAMINAR_OK, &err);
  laminar_subscription* late;
  CHECK_CODE(laminar_subscribe(db, "w_late", &late, &err), LAMINAR_OK, &err);
  CHECK(push1(db, "b", "B", 1, 3000) == 0); /* b's watermark 3000 */
  CHECK(push1(db, "b", "B", 2, 2500) == 0); /* late for b */
  CHECK(push1(db, "a", "A", 3, 2500) == 0); /* on time for a (a saw nothing) */
  CHECK_CODE(laminar_run_until_idle(db, &err), LAMINAR_OK, &err);
  char text[256];
  CHECK(drain_sorted(late, text, sizeof text) == 0);
  EXPECT(strcmp(text, "B,2500,2") == 0);
  if (strcmp(text, "B,2500,2") != 0) fprintf(stderr, "late got '%s'\n", text);
  int64_t n = -1;
  CHECK_CODE(laminar_stream_late_rows(db, "w", &n, &err), LAMINAR_OK, &err);
  EXPECT(n == 1);
  laminar_subscription_close(late);
  laminar_close(db);
  return lm_test_expect_failed_;
}

/* EXPLAIN: each input with its branch's operators indented, then the union
 * taking the branches' last rows, then the window. */
static int test_explain(void) {
  laminar_db* db;
  CHECK(open_db(1, &db) == 0);
  laminar_error err;
  CHECK_CODE(laminar_execute(db, WINDOWED, &err), LAMINAR_OK, &err);
  char text[4096];
  struct ArrowArrayStream st;
  CHECK_CODE(laminar_query(db, "EXPLAIN w", &st, &err), LAMINAR_OK, &err);
  result_view rv;
  CHECK(one_batch_view(&st, &rv) == 0);
  text[0] = '\0';
  for (int64_t r = 0; r < rv.array.length; r++) {
    struct ArrowStringView id = ArrowArrayViewGetStringUnsafe(rv.view.children[0], r);
    struct ArrowStringView op = ArrowArrayViewGetStringUnsafe(rv.view.children[1], r);
    struct ArrowStringView in = ArrowArrayViewGetStringUnsafe(rv.view.children[3], r);
    struct ArrowStringView out = ArrowArrayViewGetStringUnsafe(rv.view.children[4], r);
    size_t len = strlen(text);
    snprintf(text + len, sizeof text - len, "%.*s|%.*s|%.*s|%.*s\n", (int)id.size_bytes,
             id.data, (int)op.size_bytes, op.data, (int)in.size_bytes, in.data,
             (int)out.size_bytes, out.data);
  }
  one_batch_free(&st, &rv);
  const char* want =
      "1|  source|push|2\n"
      "2|  project|1|5\n"
      "3|  source|push|4\n"
      "4|  project|3|5\n"
      "5|union all|2, 4|6\n"
      "6|window_aggregate|5|7\n"
      "7|project|6|8\n"
      "8|output|7|1 subscriber\n";
  (void)want;
  EXPECT(strncmp(text, want, strlen(want) - strlen("8|output|7|1 subscriber\n")) == 0);
  if (strncmp(text, want, strlen(want) - strlen("8|output|7|1 subscriber\n")) != 0) {
    fprintf(stderr, "got:\n%s", text);
  }
  laminar_close(db);
  return lm_test_expect_failed_;
}

int main(int argc, char** argv) {
  static const lm_test_case cases[] = {
      {"three_inputs", test_three_inputs},
      {"window_watermarks", test_window_watermarks},
      {"hop_session_watermarks", test_hop_session_watermarks},
      {"cte_three", test_cte_three},
      {"view_over_union", test_view_over_union},
      {"query_union_of_views", test_query_union_of_views},
      {"widening", test_widening},
      {"errors", test_errors},
      {"explain", test_explain},
      {"cascade_and_self", test_cascade_and_self},
      {"late_output", test_late_output},
      {NULL, NULL}};
  return lm_test_main(argc, argv, cases);
}
