/*
 * test_watermarks.c -- watermarks beyond one source (issue 26 item 1), through
 * laminar.h: idle inputs (laminar_source_set_idle and WITH (idle_timeout)):
 * an idle input of a UNION ALL holds back no window, all inputs idle hold the
 * watermark, a returning input's rows behind it are late, a stream over an
 * idle source is idle for a union reading it, cores 1 and 2, and a restart
 * (idleness is checkpointed: the reopened source is still idle, and the
 * answer is the uninterrupted run's).
 */
#include "lm_test_fs.h" /* first: its feature macro */

#include "arrow_build.h"
#include "lm_test.h"
#include "lm_test_metrics.h"
#include "views_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* a and b: trades with watermark delay 0; u counts the union's rows per
 * one-second window. */
static const char* DDL =
    "CREATE SOURCE a (symbol VARCHAR NOT NULL, price DOUBLE, volume BIGINT, ts BIGINT,\n"
    "  WATERMARK FOR ts)%s;\n"
    "CREATE SOURCE b (symbol VARCHAR NOT NULL, price DOUBLE, volume BIGINT, ts BIGINT,\n"
    "  WATERMARK FOR ts)%s;\n"
    "CREATE STREAM u AS SELECT window_start, COUNT(*) AS n, SUM(v) AS total\n"
    "  FROM (SELECT volume AS v, ts FROM a UNION ALL SELECT volume, ts FROM b)\n"
    "  GROUP BY tumble(ts, INTERVAL '1' SECOND) EMIT ON WINDOW CLOSE;\n";

typedef struct fixture {
  laminar_db* db;
  laminar_source* a;
  laminar_source* b;
  laminar_subscription* sub;
} fixture;

/* Open a database (cores, optional data_dir) with DDL (a_with / b_with: the
 * sources' WITH clauses) plus `extra`, both source handles and a
 * subscription to u. */
static int fx_open(fixture* f, int cores, const char* dir, const char* a_with,
                   const char* b_with, const char* extra) {
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
  char sql[2048];
  snprintf(sql, sizeof sql, DDL, a_with, b_with);
  CHECK_CODE(laminar_execute(f->db, sql, &err), LAMINAR_OK, &err);
  if (extra != NULL) CHECK_CODE(laminar_execute(f->db, extra, &err), LAMINAR_OK, &err);
  CHECK_CODE(laminar_source_open(f->db, "a", &f->a, &err), LAMINAR_OK, &err);
  CHECK_CODE(laminar_source_open(f->db, "b", &f->b, &err), LAMINAR_OK, &err);
  CHECK_CODE(laminar_subscribe(f->db, "u", &f->sub, &err), LAMINAR_OK, &err);
  return 0;
}

static void fx_close(fixture* f) {
  laminar_subscription_close(f->sub);
  laminar_source_close(f->a);
  laminar_source_close(f->b);
  laminar_close(f->db);
}

/* Push one row (volume, ts) and run the graph. */
static int put(fixture* f, laminar_source* src, int64_t vol, int64_t ts) {
  laminar_error err;
  trade_row row = {"S", 1.0, false, vol, false, ts};
  struct ArrowArray array;
  struct ArrowSchema schema;
  CHECK(build_trades(&row, 1, false, &array, &schema) == 0);
  laminar_code rc = laminar_source_push(src, &array, &schema, &err);
  if (array.release != NULL) array.release(&array);
  schema.release(&schema);
  CHECK_CODE(rc, LAMINAR_OK, &err);
  CHECK_CODE(laminar_run_until_idle(f->db, &err), LAMINAR_OK, &err);
  return 0;
}

static int set_idle(fixture* f, laminar_source* src, int idle) {
  laminar_error err;
  CHECK_CODE(laminar_source_set_idle(src, idle, &err), LAMINAR_OK, &err);
  CHECK_CODE(laminar_run_until_idle(f->db, &err), LAMINAR_OK, &err);
  return 0;
}

static int64_t late_rows(fixture* f) {
  laminar_error err;
  int64_t n = -1;
  if (laminar_stream_late_rows(f->db, "u", &n, &err) != LAMINAR_OK) return -1;
  return n;
}

static const char* ALIGNED =
    " WITH (alignment_group = 'g', max_drift = INTERVAL '1' SECOND, buffer_size = 8)";

/* Push one row (volume, ts) with `how`: 0 try_push, else push_timeout with
 * timeout_ms; the code (the array released either way). */
static laminar_code push_how(laminar_source* src, int64_t ts, int how, int64_t timeout_ms,
                             laminar_error* err) {
  trade_row row = {"S", 1.0, false, 1, false, ts};
  struct ArrowArray array;
  struct ArrowSchema schema;
  if (build_trades(&row, 1, false, &array, &schema) != 0) return LAMINAR_ERR_INTERNAL;
  laminar_code rc =
      how == 0 ? laminar_source_try_push(src, &array, &schema, err)
               : laminar_source_push_timeout(src, &array, &schema, timeout_ms, err);
  if (array.release != NULL) array.release(&array);
  schema.release(&schema);
  return rc;
}

static int64_t free_slots(laminar_source* src) {
  laminar_error err;
  int64_t n = -1;
  if (laminar_source_free_slots(src, &n, &err) != LAMINAR_OK) return -1;
  return n;
}

/* A keyed stream over b, so that with 2 cores b's messages run as rounds
 * over the partitions (the union itself runs whole). */
static const char* KEYED_B =
    "CREATE STREAM kb AS SELECT symbol, COUNT(*) AS n FROM b\n"
    "  GROUP BY symbol, tumble(ts, INTERVAL '1' SECOND);";

/* laminar_source_set_idle: b quiet holds the union's windows open until it is
 * declared idle; then a alone closes them; b's rows behind that watermark
 * are late when it returns, and it holds the union back again from its own
 * watermark on (no regress). All inputs idle: no advance. */
static int test_idle_api(void) {
  for (int cores = 1; cores <= 2; cores++) {
    fixture f;
    CHECK(fx_open(&f, cores, NULL, "", "", KEYED_B) == 0);
    char got[512] = "";
    CHECK(put(&f, f.b, 1, 100) == 0);  /* b's watermark 100 */
    CHECK(put(&f, f.a, 2, 500) == 0);  /* a's 500 */
    CHECK(put(&f, f.a, 4, 2500) == 0); /* a's 2500; the union's 100 */
    CHECK(take_text(f.sub, got, sizeof got) == 0);
    EXPECT_TEXT(got, "");
    EXPECT(lm_test_metric(f.db, "source", "b", "watermark_idle") == 0);
    CHECK(set_idle(&f, f.b, 1) == 0); /* the union follows a: 2500 */
    EXPECT(lm_test_metric(f.db, "source", "b", "watermark_idle") == 1);
    CHECK(take_text(f.sub, got, sizeof got) == 0);
    EXPECT_TEXT(got, "0,2,3;");
    /* b is back with a row of [0, 1000): closed, late; and one of [2000,
     * 3000), still open. b's watermark 2700 does not take the union below
     * 2500 (no regress), and holds it from there until both pass 3000. */
    CHECK(put(&f, f.b, 8, 700) == 0);
    CHECK(put(&f, f.b, 16, 2700) == 0);
    EXPECT(late_rows(&f) == 1);
    CHECK(put(&f, f.a, 32, 3500) == 0); /* a 3500, b 2700: 2700 */
    got[0] = '\0';
    CHECK(take_text(f.sub, got, sizeof got) == 0);
    EXPECT_TEXT(got, "");
    CHECK(put(&f, f.b, 64, 3100) == 0); /* least 3100: [2000, 3000) closes */
    CHECK(take_text(f.sub, got, sizeof got) == 0);
    EXPECT_TEXT(got, "2000,2,20;");
    /* Both idle: no advance ([3000, 4000) stays open); a's next row makes it
     * active, and the union follows it alone. */
    CHECK(set_idle(&f, f.b, 1) == 0);
    CHECK(set_idle(&f, f.a, 1) == 0);
    got[0] = '\0';
    CHECK(take_text(f.sub, got, sizeof got) == 0);
    EXPECT_TEXT(got, "");
    CHECK(put(&f, f.a, 128, 4100) == 0);
    CHECK(take_text(f.sub, got, sizeof got) == 0);
    EXPECT_TEXT(got, "3000,2,96;");
    /* Declared active again: b (at 3100) holds the union once more. */
    CHECK(set_idle(&f, f.b, 0) == 0);
    CHECK(put(&f, f.a, 256, 5500) == 0);
    got[0] = '\0';
    CHECK(take_text(f.sub, got, sizeof got) == 0);
    EXPECT_TEXT(got, "");
    EXPECT(late_rows(&f) == 1);
    fx_close(&f);
  }
  return lm_test_expect_failed_;
}

/* A stream over an idle source is idle for a union reading it: the union of
 * a and (a filtered stream of b) closes on a's watermark while b is idle. */
static int test_idle_through_stream(void) {
  fixture f;
  laminar_error err;
  CHECK(fx_open(&f, 1, NULL, "", "", NULL) == 0);
  CHECK_CODE(
      laminar_execute(f.db,
                      "CREATE STREAM bf AS SELECT volume, ts FROM b WHERE volume > 0;\n"
                      "CREATE STREAM u2 AS SELECT window_start, COUNT(*) AS n\n"
                      "  FROM (SELECT volume, ts FROM a UNION ALL SELECT volume, ts "
                      "FROM bf)\n"
                      "  GROUP BY tumble(ts, INTERVAL '1' SECOND);",
                      &err),
      LAMINAR_OK, &err);
  laminar_subscription* sub2;
  CHECK_CODE(laminar_subscribe(f.db, "u2", &sub2, &err), LAMINAR_OK, &err);
  CHECK(put(&f, f.b, 1, 100) == 0);
  CHECK(put(&f, f.a, 2, 2500) == 0);
  struct ArrowArray array;
  struct ArrowSchema schema;
  CHECK_CODE(laminar_subscription_next(sub2, 0, &array, &schema, &err), LAMINAR_OK, &err);
  EXPECT(array.release == NULL); /* held by bf (b at 100) */
  CHECK(set_idle(&f, f.b, 1) == 0);
  CHECK_CODE(laminar_subscription_next(sub2, 0, &array, &schema, &err), LAMINAR_OK, &err);
  EXPECT(array.release != NULL && array.length == 1);
  if (array.release != NULL) {
    array.release(&array);
    schema.release(&schema);
  }
  laminar_subscription_close(sub2);
  fx_close(&f);
  return lm_test_expect_failed_;
}

/* WITH (idle_timeout = '1 ms') on b: after b took nothing for 1 ms of the
 * reactor's clock (run_until_idle looks at each round), a alone closes the
 * union's windows. The option is refused where it is not a duration. */
static int test_idle_timeout(void) {
  fixture f;
  CHECK(fx_open(&f, 1, NULL, "", " WITH (idle_timeout = '1 ms')", NULL) == 0);
  char got[512] = "";
  CHECK(put(&f, f.b, 1, 100) == 0);
  CHECK(put(&f, f.a, 2, 500) == 0);
  CHECK(put(&f, f.a, 4, 2500) == 0);
  /* Drive the graph until b's timeout passed (bounded: 5 s of wall time). */
  struct timespec t0, t;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  for (;;) {
    laminar_error err;
    CHECK_CODE(laminar_run_until_idle(f.db, &err), LAMINAR_OK, &err);
    CHECK(take_text(f.sub, got, sizeof got) == 0);
    clock_gettime(CLOCK_MONOTONIC, &t);
    if (got[0] != '\0' || t.tv_sec - t0.tv_sec > 5) break;
  }
  EXPECT_TEXT(got, "0,2,3;");
  /* b's next row is late for [0, 1000) and makes it active again. */
  CHECK(put(&f, f.b, 8, 900) == 0);
  EXPECT(late_rows(&f) == 1);
  fx_close(&f);
  laminar_db* db;
  laminar_error err;
  CHECK_CODE(laminar_open(NULL, &db, &err), LAMINAR_OK, &err);
  EXPECT(laminar_execute(db, "CREATE SOURCE x (ts BIGINT) WITH (idle_timeout = 'soon');",
                         &err) == LAMINAR_ERR_CONFIG_VALUE);
  EXPECT(strstr(err.message, "idle_timeout") != NULL);
  laminar_close(db);
  return lm_test_expect_failed_;
}

/* The reactor thread applies idle_timeout too (it looks at least every 50
 * ms while idle): b's timeout of 20 ms lets a alone close the window, which
 * a subscriber waiting up to 10 s receives; 2 cores (b's rounds, merged
 * before the change is applied). */
static int test_idle_timeout_threaded(void) {
  fixture f;
  CHECK(fx_open(&f, 2, NULL, "", " WITH (idle_timeout = '20 ms')", KEYED_B) == 0);
  laminar_error err;
  CHECK(put(&f, f.b, 1, 100) == 0);
  CHECK_CODE(laminar_start(f.db, &err), LAMINAR_OK, &err);
  CHECK_CODE(push_how(f.a, 500, 1, -1, &err), LAMINAR_OK, &err);
  CHECK_CODE(push_how(f.a, 2500, 1, -1, &err), LAMINAR_OK, &err);
  struct ArrowArray array;
  struct ArrowSchema schema;
  CHECK_CODE(laminar_subscription_next(f.sub, 10000, &array, &schema, &err), LAMINAR_OK,
             &err);
  EXPECT(array.release != NULL && array.length == 1);
  if (array.release != NULL) {
    array.release(&array);
    schema.release(&schema);
  }
  CHECK_CODE(laminar_stop(f.db, &err), LAMINAR_OK, &err);
  fx_close(&f);
  return lm_test_expect_failed_;
}

/* A restart: idleness is checkpointed (and logged where it changes). The
 * run before the close closed [0, 1000) with b idle; after the reopen b is
 * still idle, so a alone moves the union, and the answer over both runs is
 * the one a single run gives. */
static int test_idle_restart(void) {
  char dir[256];
  CHECK(lm_test_mkdtemp(dir, sizeof dir, "lm_wm_restart_") == 0);
  fixture f;
  char got[512] = "";
  CHECK(fx_open(&f, 1, dir, "", "", NULL) == 0);
  CHECK(put(&f, f.b, 1, 100) == 0);
  CHECK(put(&f, f.a, 2, 500) == 0);
  CHECK(put(&f, f.a, 4, 1500) == 0);
  CHECK(set_idle(&f, f.b, 1) == 0); /* the union at a's 1500 */
  CHECK(put(&f, f.a, 8, 1600) == 0);
  CHECK(take_text(f.sub, got, sizeof got) == 0);
  EXPECT_TEXT(got, "0,2,3;");
  laminar_error err;
  CHECK_CODE(laminar_checkpoint(f.db, &err), LAMINAR_OK, &err);
  CHECK(put(&f, f.a, 16, 1700) == 0); /* after the checkpoint: replayed */
  fx_close(&f);
  CHECK(fx_open(&f, 1, dir, "", "", NULL) == 0);
  got[0] = '\0';
  CHECK(put(&f, f.a, 32, 3500) == 0); /* b still idle: the union at a's 3500 */
  CHECK(take_text(f.sub, got, sizeof got) == 0);
  EXPECT_TEXT(got, "1000,3,28;");
  CHECK(put(&f, f.b, 64, 3200) == 0); /* b back, its window still open */
  CHECK(take_text(f.sub, got, sizeof got) == 0);
  EXPECT_TEXT(got, "1000,3,28;");
  EXPECT(late_rows(&f) == 0);
  fx_close(&f);
  lm_test_rmtree(dir);
  return lm_test_expect_failed_;
}

/* Alignment groups, inline: a runs more than max_drift (1 s) ahead of b, the
 * group's slowest: its pushes are refused as by a full queue (LDB-3006
 * naming the group, no free slots), b's are not; b catching up, or b
 * declared idle, releases a. */
static int test_alignment_inline(void) {
  fixture f;
  CHECK(fx_open(&f, 1, NULL, ALIGNED, ALIGNED, NULL) == 0);
  laminar_error err;
  CHECK(put(&f, f.a, 1, 0) == 0);
  CHECK(put(&f, f.b, 1, 0) == 0);
  CHECK(put(&f, f.a, 1, 1000) == 0); /* 1000 - 0: within the drift */
  EXPECT(free_slots(f.a) == 8);
  CHECK_CODE(push_how(f.a, 1500, 0, 0, &err), LAMINAR_OK, &err);
  CHECK_CODE(laminar_run_until_idle(f.db, &err), LAMINAR_OK, &err);
  /* a at 1500, b at 0: held back. */
  EXPECT(free_slots(f.a) == 0);
  EXPECT(lm_test_metric(f.db, "source", "a", "alignment_held") == 1);
  EXPECT(lm_test_metric(f.db, "source", "b", "alignment_held") == 0);
  int32_t room = -1;
  CHECK_CODE(laminar_source_has_capacity(f.a, 1, &room, &err), LAMINAR_OK, &err);
  EXPECT(room == 0);
  EXPECT(push_how(f.a, 1600, 0, 0, &err) == LAMINAR_ERR_QUEUE_FULL);
  EXPECT(strstr(err.message, "alignment group 'g'") != NULL &&
         strstr(err.message, "'a'") != NULL);
  EXPECT(push_how(f.a, 1600, 1, 0, &err) == LAMINAR_ERR_QUEUE_FULL);
  EXPECT(free_slots(f.b) == 8); /* b is the slowest: never held */
  /* b catches up to 600: the group's least 600, a's limit 1600. */
  CHECK(put(&f, f.b, 1, 600) == 0);
  EXPECT(free_slots(f.a) == 8);
  CHECK_CODE(push_how(f.a, 2000, 0, 0, &err), LAMINAR_OK, &err);
  CHECK_CODE(laminar_run_until_idle(f.db, &err), LAMINAR_OK, &err);
  EXPECT(free_slots(f.a) == 0); /* 2000 > 600 + 1000 */
  /* b idle: it no longer counts; a alone is never ahead of itself. */
  CHECK(set_idle(&f, f.b, 1) == 0);
  EXPECT(free_slots(f.a) == 8);
  CHECK(put(&f, f.a, 1, 5000) == 0);
  EXPECT(free_slots(f.a) == 8);
  /* b back (a row at 700 makes it active): a is held again. */
  CHECK(put(&f, f.b, 1, 700) == 0);
  EXPECT(free_slots(f.a) == 0);
  fx_close(&f);
  return lm_test_expect_failed_;
}

/* With the reactor running, a held source's push waits (bounded: LDB-3009
 * with nothing ingested) and goes through once the slower member advanced. */
static int test_alignment_threaded(void) {
  fixture f;
  CHECK(fx_open(&f, 1, NULL, ALIGNED, ALIGNED, NULL) == 0);
  laminar_error err;
  CHECK(put(&f, f.b, 1, 0) == 0);
  CHECK(put(&f, f.a, 1, 2000) == 0); /* a at 2000, b at 0: held */
  CHECK_CODE(laminar_start(f.db, &err), LAMINAR_OK, &err);
  EXPECT(push_how(f.a, 2100, 1, 50, &err) == LAMINAR_ERR_PUSH_TIMEOUT);
  EXPECT(strstr(err.message, "alignment group 'g'") != NULL);
  EXPECT(push_how(f.a, 2100, 0, 0, &err) == LAMINAR_ERR_QUEUE_FULL);
  /* b advances to 1500: a's limit 2500; the waiting push goes through. */
  CHECK_CODE(push_how(f.b, 1500, 1, -1, &err), LAMINAR_OK, &err);
  CHECK_CODE(push_how(f.a, 2100, 1, 10000, &err), LAMINAR_OK, &err);
  CHECK_CODE(laminar_stop(f.db, &err), LAMINAR_OK, &err);
  /* The options go together, and not with drop_oldest (LDB-6003). */
  laminar_db* db;
  CHECK_CODE(laminar_open(NULL, &db, &err), LAMINAR_OK, &err);
  EXPECT(laminar_execute(db, "CREATE SOURCE x (ts BIGINT) WITH (alignment_group = 'g');",
                         &err) == LAMINAR_ERR_CONFIG_CONFLICT);
  EXPECT(strstr(err.message, "max_drift") != NULL);
  EXPECT(laminar_execute(db,
                         "CREATE SOURCE x (ts BIGINT) WITH (alignment_group = 'g',\n"
                         "  max_drift = 10, backpressure = 'drop_oldest');",
                         &err) == LAMINAR_ERR_CONFIG_CONFLICT);
  EXPECT(strstr(err.message, "drop_oldest") != NULL);
  laminar_close(db);
  fx_close(&f);
  return lm_test_expect_failed_;
}

int main(int argc, char** argv) {
  static const lm_test_case cases[] = {
      {"idle_api", test_idle_api},
      {"idle_through_stream", test_idle_through_stream},
      {"idle_timeout", test_idle_timeout},
      {"idle_timeout_threaded", test_idle_timeout_threaded},
      {"idle_restart", test_idle_restart},
      {"alignment_inline", test_alignment_inline},
      {"alignment_threaded", test_alignment_threaded},
      {NULL, NULL}};
  return lm_test_main(argc, argv, cases);
}
