/*
 * test_two_phase.c -- laminar_stream_two_phase through laminar.h: the rows it
 * reports; the partial SQL run in several databases over a split of the
 * input, in any order, and the final SQL over their rows give exactly the
 * stream's output (rendered and sorted); the expression printer round-trips
 * every kind of expression (CASE, IN, BETWEEN, LIKE ... ESCAPE, CAST,
 * IS NULL, NOT, quotes in strings and names, negative numbers, ||); streams
 * that do not decompose; errors.
 */
#include "lm_test.h"
#include "views_util.h"

#include <stdlib.h>

typedef struct two_phase {
  char partial[4096], partial_stream[128], partial_source[128];
  char final_sql[4096], final_stream[128], final_source[128];
  char keys[256]; /* "__k0,__k1" */
} two_phase;

static void copy_cell(struct ArrowArrayView* col, int64_t r, char* out, size_t cap) {
  struct ArrowStringView sv = ArrowArrayViewGetStringUnsafe(col, r);
  snprintf(out, cap, "%.*s", (int)sv.size_bytes, sv.data);
}

static laminar_code get_two_phase(laminar_db* db, const char* name, two_phase* tp,
                                  laminar_error* err) {
  memset(tp, 0, sizeof *tp);
  struct ArrowArrayStream st;
  laminar_code rc = laminar_stream_two_phase(db, name, &st, err);
  if (rc != LAMINAR_OK) return rc;
  result_view rv;
  if (one_batch_view(&st, &rv) != 0) rc = LAMINAR_ERR_INTERNAL;
  for (int64_t r = 0; rc == LAMINAR_OK && r < rv.array.length; r++) {
    char role[64], nm[128];
    copy_cell(rv.view.children[0], r, role, sizeof role);
    copy_cell(rv.view.children[1], r, nm, sizeof nm);
    if (strcmp(role, "partial") == 0) {
      snprintf(tp->partial_stream, sizeof tp->partial_stream, "%s", nm);
      copy_cell(rv.view.children[2], r, tp->partial, sizeof tp->partial);
    } else if (strcmp(role, "final") == 0) {
      snprintf(tp->final_stream, sizeof tp->final_stream, "%s", nm);
      copy_cell(rv.view.children[2], r, tp->final_sql, sizeof tp->final_sql);
    } else if (strcmp(role, "partial_source") == 0) {
      snprintf(tp->partial_source, sizeof tp->partial_source, "%s", nm);
    } else if (strcmp(role, "final_source") == 0) {
      snprintf(tp->final_source, sizeof tp->final_source, "%s", nm);
    } else if (strcmp(role, "key") == 0) {
      if (tp->keys[0] != '\0')
        strncat(tp->keys, ",", sizeof tp->keys - strlen(tp->keys) - 1);
      strncat(tp->keys, nm, sizeof tp->keys - strlen(tp->keys) - 1);
    }
  }
  one_batch_free(&st, &rv);
  return rc;
}

/* Close `src`'s windows, run `db` and move every batch of `sub` into `into`
 * (NULL: render rows into text instead, rows joined by ';'). 0 on success. */
static int drain(laminar_db* db, laminar_source* src, laminar_subscription* sub,
                 laminar_source* into, char* text, size_t cap) {
  laminar_error err;
  if (laminar_source_watermark(src, INT64_MAX, &err) != LAMINAR_OK) return 1;
  if (laminar_run_until_idle(db, &err) != LAMINAR_OK) return 1;
  for (;;) {
    result_view rv;
    memset(&rv, 0, sizeof rv);
    if (laminar_subscription_next(sub, 0, &rv.array, &rv.schema, &err) != LAMINAR_OK)
      return 1;
    if (rv.array.release == NULL) break;
    int rc = 0;
    if (into != NULL) {
      if (laminar_source_push(into, &rv.array, &rv.schema, &err) != LAMINAR_OK) {
        fprintf(stderr, "push: %s\n", err.message);
        rc = 1;
      }
    } else if (result_view_init(&rv) != 0) {
      rc = 1;
    } else {
      for (int64_t r = 0; r < rv.array.length; r++) {
        if (text[0] != '\0') strncat(text, ";", cap - strlen(text) - 1);
        render_row(&rv.schema, &rv.view, r, text, cap);
      }
      ArrowArrayViewReset(&rv.view);
    }
    if (rv.array.release != NULL) rv.array.release(&rv.array);
    rv.schema.release(&rv.schema);
    if (rc != 0) return rc;
  }
  return 0;
}

static int cmp_str(const void* a, const void* b) {
  return strcmp(*(char* const*)a, *(char* const*)b);
}

/* Sort the ';'-separated rows of text in place. */
static void sort_rows(char* text) {
  char* rows[4096];
  size_t n = 0;
  for (char* tok = strtok(text, ";"); tok != NULL && n < 4096; tok = strtok(NULL, ";")) {
    rows[n++] = tok;
  }
  qsort(rows, n, sizeof rows[0], cmp_str);
  char* out = malloc(strlen(text) + 65536);
  if (out == NULL) return;
  out[0] = '\0';
  for (size_t i = 0; i < n; i++) {
    if (i) strcat(out, ";");
    strcat(out, rows[i]);
  }
  strcpy(text, out);
  free(out);
}

#define NROWS 400
#define PARTS 3

static void make_rows(trade_row* rows) {
  static const char* const syms[] = {"A", "B", "it's", "D\"q", NULL, "ab%c", "a_c"};
  uint64_t state = 42;
  for (int i = 0; i < NROWS; i++) {
    uint64_t r = lm_test_rand(&state);
    rows[i].symbol = syms[r % 7];
    rows[i].price = (double)((r >> 8) % 2000) / 4.0 - 100.0;
    rows[i].price_null = (r >> 20) % 11 == 0;
    rows[i].volume = (int64_t)((r >> 24) % 50) - 5;
    rows[i].volume_null = (r >> 32) % 13 == 0;
    rows[i].ts = i * 37 - 3000 + (int64_t)((r >> 40) % 90);
  }
}

/* Push rows [i for i in order if i % PARTS == part] as batches of 17. */
static int push_part(laminar_source* src, const trade_row* rows, int part, bool reverse) {
  trade_row mine[NROWS];
  int64_t n = 0;
  for (int k = 0; k < NROWS; k++) {
    int i = reverse ? NROWS - 1 - k : k;
    if (i % PARTS == part) mine[n++] = rows[i];
  }
  for (int64_t at = 0; at < n; at += 17) {
    struct ArrowArray a;
    struct ArrowSchema s;
    int64_t len = n - at < 17 ? n - at : 17;
    if (build_trades(mine + at, len, at % 2 == 0, &a, &s) != 0) return 1;
    laminar_error err;
    laminar_code rc = laminar_source_push(src, &a, &s, &err);
    if (a.release != NULL) a.release(&a);
    s.release(&s);
    if (rc != LAMINAR_OK) {
      fprintf(stderr, "push: %s\n", err.message);
      return 1;
    }
  }
  return 0;
}

static const char* const SOURCE =
    "CREATE SOURCE \"Trades\" (symbol VARCHAR, price DOUBLE, volume BIGINT, ts BIGINT, "
    "WATERMARK FOR ts AS ts - INTERVAL '100' MILLISECOND);";

/* Run stream `name` of `streams` whole (input in order) and in two phases
 * (PARTS partial databases, the middle one fed in reverse); compare. */
static int check_split(const char* streams, const char* name) {
  static trade_row rows[NROWS];
  make_rows(rows);
  char sql[8192];
  snprintf(sql, sizeof sql, "%s%s", SOURCE, streams);
  laminar_db* db;
  laminar_error err;
  CHECK_CODE(laminar_open(NULL, &db, &err), LAMINAR_OK, &err);
  CHECK_CODE(laminar_execute(db, sql, &err), LAMINAR_OK, &err);
  two_phase tp;
  CHECK_CODE(get_two_phase(db, name, &tp, &err), LAMINAR_OK, &err);
  /* whole */
  static char want[65536], got[65536];
  want[0] = got[0] = '\0';
  laminar_source* src;
  laminar_subscription* sub;
  CHECK_CODE(laminar_source_open(db, "Trades", &src, &err), LAMINAR_OK, &err);
  CHECK_CODE(laminar_subscribe(db, name, &sub, &err), LAMINAR_OK, &err);
  for (int part = 0; part < 1; part++) {
    /* in time order, no row late: one part holding all rows */
    trade_row* sorted = rows;
    for (int64_t at = 0; at < NROWS; at += 50) {
      struct ArrowArray a;
      struct ArrowSchema s;
      CHECK(build_trades(sorted + at, 50, false, &a, &s) == 0);
      CHECK_CODE(laminar_source_push(src, &a, &s, &err), LAMINAR_OK, &err);
      s.release(&s);
    }
  }
  CHECK(drain(db, src, sub, NULL, want, sizeof want) == 0);
  int64_t late = -1;
  CHECK_CODE(laminar_stream_late_rows(db, name, &late, &err), LAMINAR_OK, &err);
  CHECK(late == 0);
  laminar_subscription_close(sub);
  laminar_source_close(src);
  /* two phases */
  laminar_db* fdb;
  laminar_source* fsrc;
  laminar_subscription* fsub;
  CHECK_CODE(laminar_open(NULL, &fdb, &err), LAMINAR_OK, &err);
  CHECK_CODE(laminar_execute(fdb, tp.final_sql, &err), LAMINAR_OK, &err);
  CHECK_CODE(laminar_source_open(fdb, tp.final_source, &fsrc, &err), LAMINAR_OK, &err);
  CHECK_CODE(laminar_subscribe(fdb, tp.final_stream, &fsub, &err), LAMINAR_OK, &err);
  for (int part = 0; part < PARTS; part++) {
    laminar_db* pdb;
    CHECK_CODE(laminar_open(NULL, &pdb, &err), LAMINAR_OK, &err);
    CHECK_CODE(laminar_execute(pdb, tp.partial, &err), LAMINAR_OK, &err);
    CHECK_CODE(laminar_source_open(pdb, tp.partial_source, &src, &err), LAMINAR_OK, &err);
    CHECK_CODE(laminar_subscribe(pdb, tp.partial_stream, &sub, &err), LAMINAR_OK, &err);
    CHECK(push_part(src, rows, part, part == 1) == 0);
    CHECK(drain(pdb, src, sub, fsrc, NULL, 0) == 0);
    CHECK_CODE(laminar_stream_late_rows(pdb, tp.partial_stream, &late, &err), LAMINAR_OK,
               &err);
    CHECK(late == 0);
    laminar_subscription_close(sub);
    laminar_source_close(src);
    laminar_close(pdb);
  }
  CHECK(drain(fdb, fsrc, fsub, NULL, got, sizeof got) == 0);
  laminar_subscription_close(fsub);
  laminar_source_close(fsrc);
  /* same columns */
  struct ArrowSchema a, b;
  CHECK_CODE(laminar_schema(db, name, &a, &err), LAMINAR_OK, &err);
  CHECK_CODE(laminar_schema(fdb, name, &b, &err), LAMINAR_OK, &err);
  CHECK(a.n_children == b.n_children);
  for (int64_t i = 0; i < a.n_children; i++) {
    EXPECT(strcmp(a.children[i]->name, b.children[i]->name) == 0);
    EXPECT(strcmp(a.children[i]->format, b.children[i]->format) == 0);
  }
  a.release(&a);
  b.release(&b);
  laminar_close(fdb);
  laminar_close(db);
  CHECK(want[0] != '\0');
  sort_rows(want);
  sort_rows(got);
  if (strcmp(want, got) != 0) {
    fprintf(stderr,
            "%s\n  whole     %.600s\n  two-phase %.600s\n  partial %s\n  final %s\n",
            name, want, got, tp.partial, tp.final_sql);
    return 1;
  }
  return 0;
}

static int test_vwap(void) {
  return check_split(
      "CREATE STREAM vwap AS SELECT symbol, window_start, window_end, "
      "SUM(price * volume) / SUM(volume) AS vwap, COUNT(*) AS n, COUNT(price) AS np, "
      "AVG(volume) AS av, MIN(price) AS lo, MAX(symbol) AS hi FROM \"Trades\" "
      "GROUP BY symbol, tumble(ts, INTERVAL '1' SECOND) EMIT ON WINDOW CLOSE;",
      "vwap");
}

static int test_hop_having(void) {
  return check_split(
      "CREATE STREAM \"Hop\" AS SELECT window_end, symbol, SUM(volume) AS v, "
      "MAX(price) - MIN(price) AS spread FROM \"Trades\" WHERE volume > 0 "
      "GROUP BY symbol, hop(ts, INTERVAL '3' SECOND, INTERVAL '1' SECOND) "
      "HAVING COUNT(*) >= 2 AND SUM(volume) > 10;",
      "Hop");
}

/* Every expression kind in the key, the WHERE, the aggregates' arguments and
 * the select list, through an upstream projection. */
static int test_expression_printer(void) {
  return check_split(
      "CREATE STREAM pre AS SELECT symbol AS \"Sym\", price, volume, ts FROM \"Trades\" "
      "WHERE (price BETWEEN -50.5 AND 400 OR price IS NULL) AND NOT (volume IN (3, 4)) "
      "AND symbol NOT LIKE 'ab!%c' ESCAPE '!';"
      "CREATE STREAM x AS SELECT CASE WHEN \"Sym\" IS NULL THEN 'none' ELSE \"Sym\" || "
      "'''s' "
      "END AS label, window_start, "
      "SUM(CASE volume WHEN 1 THEN -1 WHEN -2 THEN 2 ELSE volume END) AS s, "
      "COUNT(CAST(price AS BIGINT)) AS c, MIN(-price) AS m, "
      "CAST(SUM(volume) AS DOUBLE) * -1.5e3 AS scaled, "
      "COUNT(*) AS \"N\"\"q\" FROM pre "
      "GROUP BY CASE WHEN \"Sym\" IS NULL THEN 'none' ELSE \"Sym\" || '''s' END, "
      "tumble(ts, 2000);",
      "x");
}

static int test_refused_and_errors(void) {
  laminar_db* db;
  laminar_error err;
  CHECK_CODE(laminar_open(NULL, &db, &err), LAMINAR_OK, &err);
  char sql[2048];
  snprintf(
      sql, sizeof sql,
      "%sCREATE STREAM d AS SELECT symbol, COUNT(DISTINCT price) AS n FROM \"Trades\" "
      "GROUP BY symbol, tumble(ts, INTERVAL '1' SECOND);"
      "CREATE STREAM l AS SELECT symbol, LAST_VALUE(price) AS p FROM \"Trades\" "
      "GROUP BY symbol, tumble(ts, INTERVAL '1' SECOND);"
      "CREATE STREAM s AS SELECT symbol, COUNT(*) AS n FROM \"Trades\" "
      "GROUP BY symbol, session(ts, INTERVAL '1' SECOND);"
      "CREATE STREAM p AS SELECT symbol, price FROM \"Trades\";"
      "CREATE MATERIALIZED VIEW v AS SELECT symbol, COUNT(*) AS n FROM \"Trades\" "
      "GROUP BY symbol, tumble(ts, INTERVAL '1' SECOND);",
      SOURCE);
  CHECK_CODE(laminar_execute(db, sql, &err), LAMINAR_OK, &err);
  static const char* const refused[][2] = {{"d", "DISTINCT"},
                                           {"l", "last_value() does not decompose"},
                                           {"s", "session windows"},
                                           {"p", "no GROUP BY window"}};
  struct ArrowArrayStream st;
  for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++) {
    CHECK_CODE(laminar_stream_two_phase(db, refused[i][0], &st, &err),
               LAMINAR_ERR_SQL_UNSUPPORTED, &err);
    EXPECT(strncmp(err.message, "LDB-1005", 8) == 0);
    EXPECT(strstr(err.message, refused[i][1]) != NULL);
    EXPECT(strcmp(err.object, refused[i][0]) == 0);
    EXPECT(st.release == NULL);
  }
  laminar_code rc = laminar_stream_two_phase(db, "v", &st, &err);
  EXPECT(rc == LAMINAR_ERR_SQL_UNSUPPORTED || rc == LAMINAR_ERR_SQL_UNKNOWN_OBJECT);
  CHECK_CODE(laminar_stream_two_phase(db, "nope", &st, &err),
             LAMINAR_ERR_SQL_UNKNOWN_OBJECT, &err);
  EXPECT(strcmp(err.object, "nope") == 0);
  CHECK_CODE(laminar_stream_two_phase(db, "Trades", &st, &err),
             LAMINAR_ERR_SQL_UNKNOWN_OBJECT, &err);
  CHECK_CODE(laminar_stream_two_phase(db, NULL, &st, &err), LAMINAR_ERR_MISUSE, &err);
  CHECK_CODE(laminar_stream_two_phase(db, "d", NULL, &err), LAMINAR_ERR_MISUSE, &err);
  CHECK_CODE(laminar_stream_two_phase(NULL, "d", &st, &err), LAMINAR_ERR_MISUSE, &err);
  laminar_close(db);
  return 0;
}

static const lm_test_case cases[] = {{"vwap", test_vwap},
                                     {"hop_having", test_hop_having},
                                     {"expression_printer", test_expression_printer},
                                     {"refused_and_errors", test_refused_and_errors},
                                     {NULL, NULL}};

int main(int argc, char** argv) { return lm_test_main(argc, argv, cases); }
