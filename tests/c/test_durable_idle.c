/*
 * test_durable_idle.c -- idle.log, the log of idleness changes in data_dir
 * (docs/DURABILITY.md), through laminar.h: it stays small across many
 * checkpoints with idleness flipping between them (each checkpoint prunes
 * what no restorable checkpoint needs); a torn tail (the file cut inside
 * its last record) is ignored and cut at open, so the changes logged after
 * it are read at the next restart; a restart after many prunes gives the
 * answer of a run without one.
 */
#include "lm_test_fs.h" /* first: its feature macro */

#include "arrow_build.h"
#include "lm_test.h"
#include "views_util.h"

#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Sources a and b (watermark delay 0) into a union counted per second. */
static const char* UNION_DDL =
    "CREATE SOURCE a (symbol VARCHAR NOT NULL, price DOUBLE, volume BIGINT, ts BIGINT,\n"
    "  WATERMARK FOR ts);\n"
    "CREATE SOURCE b (symbol VARCHAR NOT NULL, price DOUBLE, volume BIGINT, ts BIGINT,\n"
    "  WATERMARK FOR ts);\n"
    "CREATE STREAM u AS SELECT window_start, COUNT(*) AS n, SUM(v) AS total\n"
    "  FROM (SELECT volume AS v, ts FROM a UNION ALL SELECT volume, ts FROM b)\n"
    "  GROUP BY tumble(ts, INTERVAL '1' SECOND) EMIT ON WINDOW CLOSE;\n";

typedef struct db_handles {
  laminar_db* db;
  laminar_source* src[2]; /* a, b */
  laminar_subscription* sub;
} db_handles;

/* A durable database in dir (wal_mode sync, checkpoints by call) with the
 * union, both sources open and u subscribed. */
static int open_union(db_handles* h, const char* dir) {
  laminar_error err;
  laminar_config* cfg;
  CHECK_CODE(laminar_config_create(&cfg), LAMINAR_OK, NULL);
  const char* kv[][2] = {
      {"data_dir", dir}, {"checkpoint_interval", "1 hour"}, {"wal_mode", "sync"}};
  laminar_code rc = LAMINAR_OK;
  for (size_t i = 0; i < 3 && rc == LAMINAR_OK; i++)
    rc = laminar_config_set(cfg, kv[i][0], kv[i][1], &err);
  if (rc == LAMINAR_OK) rc = laminar_open(cfg, &h->db, &err);
  laminar_config_destroy(cfg);
  CHECK_CODE(rc, LAMINAR_OK, &err);
  CHECK_CODE(laminar_execute(h->db, UNION_DDL, &err), LAMINAR_OK, &err);
  CHECK_CODE(laminar_source_open(h->db, "a", &h->src[0], &err), LAMINAR_OK, &err);
  CHECK_CODE(laminar_source_open(h->db, "b", &h->src[1], &err), LAMINAR_OK, &err);
  CHECK_CODE(laminar_subscribe(h->db, "u", &h->sub, &err), LAMINAR_OK, &err);
  return 0;
}

static void close_union(db_handles* h) {
  laminar_subscription_close(h->sub);
  laminar_source_close(h->src[0]);
  laminar_source_close(h->src[1]);
  laminar_close(h->db);
}

/* One row (volume, ts) into source s (0 a, 1 b), then a run. */
static int push_row(db_handles* h, int s, int64_t vol, int64_t ts) {
  laminar_error err;
  trade_row row = {"S", 1.0, false, vol, false, ts};
  struct ArrowArray array;
  struct ArrowSchema schema;
  CHECK(build_trades(&row, 1, false, &array, &schema) == 0);
  laminar_code rc = laminar_source_push(h->src[s], &array, &schema, &err);
  if (array.release != NULL) array.release(&array);
  schema.release(&schema);
  CHECK_CODE(rc, LAMINAR_OK, &err);
  CHECK_CODE(laminar_run_until_idle(h->db, &err), LAMINAR_OK, &err);
  return 0;
}

static int idle_b(db_handles* h, bool idle) {
  laminar_error err;
  CHECK_CODE(laminar_source_set_idle(h->src[1], idle, &err), LAMINAR_OK, &err);
  CHECK_CODE(laminar_run_until_idle(h->db, &err), LAMINAR_OK, &err);
  return 0;
}

static int checkpoint(db_handles* h) {
  laminar_error err;
  CHECK_CODE(laminar_checkpoint(h->db, &err), LAMINAR_OK, &err);
  return 0;
}

/* Size of dir/idle.log, -1 when missing. */
static int64_t log_size(const char* dir) {
  char path[512];
  snprintf(path, sizeof path, "%s/idle.log", dir);
  struct stat st;
  return stat(path, &st) == 0 ? (int64_t)st.st_size : -1;
}

/* 150 checkpoints, b's idleness flipping before each: the log holds at most
 * the records since the checkpoint before the last (two here), not one per
 * change ever made. */
static int test_bounded(void) {
  char dir[256];
  CHECK(lm_test_mkdtemp(dir, sizeof dir, "lm_idle_bounded_") == 0);
  db_handles h;
  CHECK(open_union(&h, dir) == 0);
  CHECK(idle_b(&h, true) == 0);
  int64_t one = log_size(dir); /* one record */
  CHECK(one > 8);
  int64_t most = 0;
  for (int i = 0; i < 150; i++) {
    if (i > 0) CHECK(idle_b(&h, i % 2 == 0) == 0);
    CHECK(push_row(&h, 0, 1, 100 + i * 10) == 0);
    CHECK(checkpoint(&h) == 0);
    int64_t size = log_size(dir);
    if (size > most) most = size;
  }
  if (most > 3 * one)
    fprintf(stderr, "idle.log grew to %lld bytes (one record: %lld)\n", (long long)most,
            (long long)one);
  EXPECT(most <= 3 * one);
  char tmp[512];
  snprintf(tmp, sizeof tmp, "%s/idle.log.tmp", dir);
  EXPECT(access(tmp, F_OK) != 0); /* renamed over the log each time */
  close_union(&h);
  lm_test_rmtree(dir);
  return lm_test_expect_failed_;
}

/* The log cut inside its last record (a crash mid-append): the open ignores
 * that record and cuts it off, so a change logged after the reopen is read
 * by the next one -- b idle again, a alone closes the union's window. */
static int test_torn_tail(void) {
  char dir[256];
  CHECK(lm_test_mkdtemp(dir, sizeof dir, "lm_idle_torn_") == 0);
  db_handles h;
  char got[512] = "";
  CHECK(open_union(&h, dir) == 0);
  CHECK(push_row(&h, 1, 1, 100) == 0);
  CHECK(push_row(&h, 0, 2, 500) == 0);
  CHECK(checkpoint(&h) == 0);
  CHECK(idle_b(&h, true) == 0);
  close_union(&h);
  int64_t size = log_size(dir);
  CHECK(size > 8);
  char path[512];
  snprintf(path, sizeof path, "%s/idle.log", dir);
  CHECK(truncate(path, size - 3) == 0); /* the record's CRC torn */

  CHECK(open_union(&h, dir) == 0); /* the torn change ignored: b active */
  EXPECT(log_size(dir) == 0);      /* and cut off */
  CHECK(push_row(&h, 0, 4, 1500) == 0);
  CHECK(take_text(h.sub, got, sizeof got) == 0);
  EXPECT_TEXT(got, ""); /* b's 100 holds the union */
  CHECK(idle_b(&h, true) == 0);
  CHECK(take_text(h.sub, got, sizeof got) == 0);
  EXPECT_TEXT(got, "0,2,3;");
  close_union(&h);

  CHECK(open_union(&h, dir) == 0); /* the change after the cut is read */
  got[0] = '\0';
  CHECK(push_row(&h, 0, 8, 2500) == 0);
  CHECK(take_text(h.sub, got, sizeof got) == 0);
  EXPECT_TEXT(got, "1000,1,4;");
  close_union(&h);
  lm_test_rmtree(dir);
  return lm_test_expect_failed_;
}

/* Steps first .. last of a run: a's row each step, b's (700 ms behind) while
 * b is active, b's idleness flipping every sixth step, a checkpoint every
 * eighth; everything u gives appended to out. */
static int steps(db_handles* h, int first, int last, bool* b_idle, char* out,
                 size_t cap) {
  for (int i = first; i <= last; i++) {
    CHECK(push_row(h, 0, i + 1, 200 * (int64_t)i) == 0);
    if (!*b_idle) CHECK(push_row(h, 1, 100 + i, 200 * (int64_t)i - 700) == 0);
    if (i % 6 == 3) {
      *b_idle = !*b_idle;
      CHECK(idle_b(h, *b_idle) == 0);
    }
    if (i % 8 == 7) CHECK(checkpoint(h) == 0);
    CHECK(take_text(h->sub, out, cap) == 0);
  }
  return 0;
}

/* A restart after 6 checkpoints (each pruning the log) and an idleness change
 * since the last: the output over both runs is the uninterrupted run's. */
static int test_replay_after_prune(void) {
  static char whole[8192], parts[8192];
  whole[0] = parts[0] = '\0';
  char dir[256];
  db_handles h;
  bool idle = false;
  CHECK(lm_test_mkdtemp(dir, sizeof dir, "lm_idle_whole_") == 0);
  CHECK(open_union(&h, dir) == 0);
  CHECK(steps(&h, 0, 70, &idle, whole, sizeof whole) == 0);
  close_union(&h);
  lm_test_rmtree(dir);

  idle = false;
  CHECK(lm_test_mkdtemp(dir, sizeof dir, "lm_idle_parts_") == 0);
  CHECK(open_union(&h, dir) == 0);
  CHECK(steps(&h, 0, 52, &idle, parts, sizeof parts) == 0); /* flips at 51 */
  close_union(&h);
  CHECK(open_union(&h, dir) == 0);
  CHECK(steps(&h, 53, 70, &idle, parts, sizeof parts) == 0);
  close_union(&h);
  lm_test_rmtree(dir);
  CHECK(strlen(whole) > 40); /* windows closed, with b idle and not */
  EXPECT_TEXT(parts, whole);
  return lm_test_expect_failed_;
}

int main(int argc, char** argv) {
  static const lm_test_case cases[] = {
      {"bounded", test_bounded},
      {"torn_tail", test_torn_tail},
      {"replay_after_prune", test_replay_after_prune},
      {NULL, NULL},
  };
  return lm_test_main(argc, argv, cases);
}
