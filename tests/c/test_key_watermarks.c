/*
 * test_key_watermarks.c -- per-key watermarks (CREATE SOURCE ... WITH
 * (watermark_key = 'col')), through laminar.h: the option's errors (codes and
 * positions), a quiet key's windows closing on its own watermark while a busy
 * key runs ahead (cores 1 and 2), the key-count metrics, and a snapshot
 * round trip: a seeded run checkpointed, closed and reopened (also on another
 * number of cores) equals the uninterrupted run.
 */
#include "lm_test_fs.h" /* first: its feature macro */

#include "arrow_build.h"
#include "lm_test.h"
#include "lm_test_metrics.h"
#include "views_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* trades keyed by symbol (delay 0, or 20 ms for the random run); w counts
 * each symbol's rows and volume per 100 ms window. */
static const char* DDL =
    "CREATE SOURCE t (symbol VARCHAR, price DOUBLE, volume BIGINT, ts BIGINT,\n"
    "  WATERMARK FOR ts AS ts - INTERVAL '%d' MILLISECOND)\n"
    "  WITH (watermark_key = 'symbol'%s);\n"
    "CREATE STREAM w AS SELECT symbol, window_start, COUNT(*) AS n, SUM(volume) AS v\n"
    "  FROM t GROUP BY symbol, tumble(ts, INTERVAL '100' MILLISECOND)\n"
    "  EMIT ON WINDOW CLOSE;\n";

typedef struct fixture {
  laminar_db* db;
  laminar_source* t;
  laminar_subscription* sub;
} fixture;

static int fx_open(fixture* f, int cores, const char* dir, int delay, const char* with) {
  laminar_error err;
  laminar_config* cfg;
  CHECK_CODE(laminar_config_create(&cfg), LAMINAR_OK, NULL);
  char buf[16];
  snprintf(buf, sizeof buf, "%d", cores);
  laminar_code rc = laminar_config_set(cfg, "cores", buf, &err);
  if (rc == LAMINAR_OK && dir != NULL)
    rc = laminar_config_set(cfg, "data_dir", dir, &err);
  if (rc == LAMINAR_OK && dir != NULL)
    rc = laminar_config_set(cfg, "checkpoint_interval", "1 hour", &err);
  if (rc == LAMINAR_OK && dir != NULL)
    rc = laminar_config_set(cfg, "wal_mode", "sync", &err);
  if (rc == LAMINAR_OK) rc = laminar_open(cfg, &f->db, &err);
  laminar_config_destroy(cfg);
  CHECK_CODE(rc, LAMINAR_OK, &err);
  char sql[1024];
  snprintf(sql, sizeof sql, DDL, delay, with);
  CHECK_CODE(laminar_execute(f->db, sql, &err), LAMINAR_OK, &err);
  CHECK_CODE(laminar_source_open(f->db, "t", &f->t, &err), LAMINAR_OK, &err);
  CHECK_CODE(laminar_subscribe(f->db, "w", &f->sub, &err), LAMINAR_OK, &err);
  return 0;
}

static void fx_close(fixture* f) {
  laminar_subscription_close(f->sub);
  laminar_source_close(f->t);
  laminar_close(f->db);
}

/* Push rows (symbol, volume, ts) as one batch and run the graph. */
static int put(fixture* f, const trade_row* rows, int64_t n) {
  laminar_error err;
  struct ArrowArray array;
  struct ArrowSchema schema;
  CHECK(build_trades(rows, n, false, &array, &schema) == 0);
  laminar_code rc = laminar_source_push(f->t, &array, &schema, &err);
  if (array.release != NULL) array.release(&array);
  schema.release(&schema);
  CHECK_CODE(rc, LAMINAR_OK, &err);
  CHECK_CODE(laminar_run_until_idle(f->db, &err), LAMINAR_OK, &err);
  return 0;
}

static int put1(fixture* f, const char* symbol, int64_t volume, int64_t ts) {
  trade_row row = {symbol, 1.0, false, volume, false, ts};
  return put(f, &row, 1);
}

static int64_t late_rows(fixture* f) {
  laminar_error err;
  int64_t n = -1;
  if (laminar_stream_late_rows(f->db, "w", &n, &err) != LAMINAR_OK) return -1;
  return n;
}

/* Each error with its code and the position of what is wrong. */
static int test_option_errors(void) {
  laminar_db* db;
  laminar_error err;
  CHECK_CODE(laminar_open(NULL, &db, &err), LAMINAR_OK, &err);
  static const struct {
    const char* sql;
    laminar_code code;
    int32_t line, column;
    const char* says;
  } cases[] = {
      {"CREATE SOURCE x (a BIGINT, ts BIGINT, WATERMARK FOR ts)\n"
       "  WITH (watermark_key = 'b');",
       LAMINAR_ERR_SQL_UNKNOWN_COLUMN, 2, 25, "names no column 'b'"},
      {"CREATE SOURCE x (a BIGINT, ts BIGINT) WITH (watermark_key = 'a');",
       LAMINAR_ERR_CONFIG_CONFLICT, 1, 61, "needs a watermark column"},
      {"CREATE SOURCE x (a BIGINT, ts BIGINT, WATERMARK FOR ts) "
       "WITH (watermark_key = 'ts');",
       LAMINAR_ERR_CONFIG_CONFLICT, 1, 79, "the watermark column itself"},
      {"CREATE SOURCE x (a DOUBLE, ts BIGINT, WATERMARK FOR ts) "
       "WITH (watermark_key = 'a');",
       LAMINAR_ERR_CONFIG_CONFLICT, 1, 79, "not DOUBLE"},
      {"CREATE SOURCE x (a BIGINT, ts BIGINT, WATERMARK FOR ts) "
       "WITH (watermark_key = '');",
       LAMINAR_ERR_CONFIG_VALUE, 1, 79, "watermark_key"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    memset(&err, 0, sizeof err);
    EXPECT(laminar_execute(db, cases[i].sql, &err) == cases[i].code);
    if (strstr(err.message, cases[i].says) == NULL || err.line != cases[i].line ||
        err.column != cases[i].column)
      fprintf(stderr, "case %zu: %s (at %d:%d)\n", i, err.message, (int)err.line,
              (int)err.column);
    EXPECT(strstr(err.message, cases[i].says) != NULL);
    EXPECT(err.line == cases[i].line && err.column == cases[i].column);
  }
  /* Nothing was created: the name is free. */
  CHECK_CODE(laminar_execute(db,
                             "CREATE SOURCE x (k VARCHAR, v BIGINT, ts BIGINT,\n"
                             "  WATERMARK FOR ts) WITH (watermark_key = 'k');",
                             &err),
             LAMINAR_OK, &err);
  static const struct {
    const char* sql;
    laminar_code code;
    const char* says;
  } streams[] = {
      {"CREATE STREAM e AS SELECT window_start, COUNT(*) AS n FROM x\n"
       "  GROUP BY tumble(ts, INTERVAL '10' MILLISECOND) EMIT ON WINDOW CLOSE;",
       LAMINAR_ERR_SQL_GROUPING, "GROUP BY must contain the column 'k'"},
      {"CREATE STREAM e AS SELECT k, window_start, COUNT(*) AS n FROM x\n"
       "  GROUP BY k, session(ts, INTERVAL '10' MILLISECOND);",
       LAMINAR_ERR_SQL_UNSUPPORTED, "session windows"},
      {"CREATE STREAM e AS SELECT k, window_start, COUNT(*) AS n FROM x\n"
       "  GROUP BY k, tumble(ts, INTERVAL '10' MILLISECOND) EMIT CHANGES;",
       LAMINAR_ERR_SQL_UNSUPPORTED, "EMIT CHANGES"},
      {"CREATE STREAM e AS SELECT k, COUNT(*) AS n FROM x\n  GROUP BY k;",
       LAMINAR_ERR_SQL_UNSUPPORTED, "without a window"},
  };
  for (size_t i = 0; i < sizeof streams / sizeof streams[0]; i++) {
    memset(&err, 0, sizeof err);
    EXPECT(laminar_execute(db, streams[i].sql, &err) == streams[i].code);
    if (strstr(err.message, streams[i].says) == NULL)
      fprintf(stderr, "stream case %zu: %s\n", i, err.message);
    EXPECT(strstr(err.message, streams[i].says) != NULL);
    EXPECT(err.line == 2 && err.column == 12); /* at the GROUP BY */
  }
  laminar_close(db);
  return lm_test_expect_failed_;
}

/* A quiet symbol is not made late by a busy one; the source's watermark is
 * the least over the symbols, and the metrics count them. */
static int test_quiet_key(void) {
  for (int cores = 1; cores <= 2; cores++) {
    fixture f;
    char got[512] = "";
    CHECK(fx_open(&f, cores, NULL, 0, "") == 0);
    CHECK(put1(&f, "A", 1, 10) == 0);
    CHECK(put1(&f, "B", 2, 20) == 0);
    CHECK(put1(&f, "A", 4, 450) == 0); /* A's watermark 450 closes A's [0, 100) */
    CHECK(take_text(f.sub, got, sizeof got) == 0);
    EXPECT_TEXT(got, "A,0,1,1;");
    EXPECT(lm_test_metric(f.db, "source", "t", "watermark_ms") == 20);
    EXPECT(lm_test_metric(f.db, "source", "t", "watermark_keys") == 2);
    CHECK(put1(&f, "B", 8, 90) == 0);  /* on time for B (a single watermark: late) */
    CHECK(put1(&f, "A", 16, 50) == 0); /* late for A */
    CHECK(put1(&f, "B", 32, 300) == 0);
    CHECK(take_text(f.sub, got, sizeof got) == 0);
    EXPECT_TEXT(got, "A,0,1,1;B,0,2,10;");
    EXPECT(late_rows(&f) == 1);
    EXPECT(lm_test_metric(f.db, "stream", "w", "watermark_keys") >= 1);
    fx_close(&f);
  }
  return lm_test_expect_failed_;
}

/* ---- the snapshot round trip -------------------------------------------------- */

#define NROWS 240
#define NSYM 6

static uint64_t rng_next(uint64_t* s) {
  *s = *s * 6364136223846793005ULL + 1442695040888963407ULL;
  return *s >> 33;
}

/* Seeded rows: symbols with their own skews, some rows out of order. */
static void make_rows(uint64_t seed, trade_row* rows) {
  static const char* const syms[NSYM] = {"A", "B", "C", "D", "E", "F"};
  int64_t clock[NSYM] = {0}, skew[NSYM];
  uint64_t s = seed;
  for (int k = 0; k < NSYM; k++) skew[k] = (int64_t)(rng_next(&s) % 3) * 400;
  for (int i = 0; i < NROWS; i++) {
    int k = (int)(rng_next(&s) % (uint64_t)(1 + rng_next(&s) % NSYM));
    clock[k] += (int64_t)(rng_next(&s) % 30);
    int64_t behind = rng_next(&s) % 5 == 0 ? (int64_t)(rng_next(&s) % 150) : 0;
    int64_t ts = clock[k] + skew[k] - behind;
    rows[i] = (trade_row){
        syms[k], 1.0, false, (int64_t)(rng_next(&s) % 100), false, ts < 0 ? 0 : ts};
  }
}

/* Sort the ';'-separated lines of s and drop repeats (a replay after a
 * restart may emit a window again to a new subscription). */
static int cmp_str(const void* a, const void* b) {
  return strcmp(*(const char* const*)a, *(const char* const*)b);
}

static void sort_lines(char* s, char* out, size_t cap) {
  char* items[4096];
  int n = 0;
  for (char* tok = strtok(s, ";"); tok != NULL && n < 4096; tok = strtok(NULL, ";"))
    items[n++] = tok;
  qsort(items, (size_t)n, sizeof items[0], cmp_str);
  out[0] = '\0';
  for (int i = 0; i < n; i++) {
    if (i > 0 && strcmp(items[i], items[i - 1]) == 0) continue;
    size_t len = strlen(out);
    snprintf(out + len, cap - len, "%s;", items[i]);
  }
}

/* Push rows[from, to) in batches of 1 to 8. */
static int put_range(fixture* f, const trade_row* rows, int from, int to, uint64_t* s) {
  while (from < to) {
    int n = 1 + (int)(rng_next(s) % 8);
    if (n > to - from) n = to - from;
    CHECK(put(f, rows + from, n) == 0);
    from += n;
  }
  return 0;
}

static int test_snapshot_round_trip(void) {
  uint64_t seed = lm_test_seed();
  printf("LAMINAR_TEST_SEED=%llu\n", (unsigned long long)seed);
  static trade_row rows[NROWS];
  make_rows(seed, rows);
  static const int cores[][2] = {{1, 1}, {2, 2}, {2, 1}, {1, 3}};
  for (size_t c = 0; c < sizeof cores / sizeof cores[0]; c++) {
    static char want[1 << 16], got[1 << 16], a[1 << 16], b[1 << 16];
    const char* with = c % 2 == 0 ? "" : ", idle_timeout = '300 ms'";
    /* The uninterrupted run. */
    fixture f;
    uint64_t s = seed;
    a[0] = '\0';
    CHECK(fx_open(&f, cores[c][0], NULL, 20, with) == 0);
    /* Batches cut where the other run stops (a batch's rows are judged
     * against the watermark before it: batch bounds matter). */
    CHECK(put_range(&f, rows, 0, NROWS / 3, &s) == 0);
    CHECK(put_range(&f, rows, NROWS / 3, NROWS / 2, &s) == 0);
    CHECK(put_range(&f, rows, NROWS / 2, NROWS, &s) == 0);
    CHECK(take_text(f.sub, a, sizeof a) == 0);
    int64_t late = late_rows(&f);
    int64_t wm = lm_test_metric(f.db, "source", "t", "watermark_ms");
    fx_close(&f);
    sort_lines(a, want, sizeof want);
    /* Checkpointed at a third, closed at a half, reopened on other cores. */
    char dir[256];
    CHECK(lm_test_mkdtemp(dir, sizeof dir, "lm_keywm_") == 0);
    s = seed;
    b[0] = '\0';
    laminar_error err;
    CHECK(fx_open(&f, cores[c][0], dir, 20, with) == 0);
    CHECK(put_range(&f, rows, 0, NROWS / 3, &s) == 0);
    CHECK_CODE(laminar_checkpoint(f.db, &err), LAMINAR_OK, &err);
    CHECK(put_range(&f, rows, NROWS / 3, NROWS / 2, &s) == 0);
    CHECK(take_text(f.sub, b, sizeof b) == 0);
    fx_close(&f);
    CHECK(fx_open(&f, cores[c][1], dir, 20, with) == 0);
    CHECK(put_range(&f, rows, NROWS / 2, NROWS, &s) == 0);
    CHECK(take_text(f.sub, b, sizeof b) == 0);
    EXPECT(late_rows(&f) == late);
    EXPECT(lm_test_metric(f.db, "source", "t", "watermark_ms") == wm);
    fx_close(&f);
    lm_test_rmtree(dir);
    sort_lines(b, got, sizeof got);
    if (strcmp(got, want) != 0)
      fprintf(stderr, "cores %d -> %d: got %s\nwant %s\n", cores[c][0], cores[c][1], got,
              want);
    EXPECT(strcmp(got, want) == 0);
    EXPECT(strlen(want) > 0);
  }
  return lm_test_expect_failed_;
}

int main(int argc, char** argv) {
  static const lm_test_case cases[] = {{"option_errors", test_option_errors},
                                       {"quiet_key", test_quiet_key},
                                       {"snapshot_round_trip", test_snapshot_round_trip},
                                       {NULL, NULL}};
  return lm_test_main(argc, argv, cases);
}
