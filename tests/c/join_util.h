/*
 * join_util.h -- what the join tests share (test_join_asof.c,
 * test_join_interval.c): an error at its line and column, and a crash in the
 * middle of two sources feeding a join (file sinks on the join and on a window
 * over it), reopened and resumed from each source's offset (at the same or
 * another `cores`, both streams then one partition per reactor), compared
 * with an uninterrupted run's output.
 */
#ifndef LM_TEST_JOIN_UTIL_H
#define LM_TEST_JOIN_UTIL_H

#include <stdlib.h>
#include <string.h>

#include "lm_test.h"
#include "lm_test_durable.h"
#include "lm_test_metrics.h"
#include "views_util.h"

/* Push rows[0..n) to src as one batch (build_trades' columns). */
static int push_rows(laminar_source* src, const trade_row* rows, int64_t n) {
  struct ArrowArray array;
  struct ArrowSchema schema;
  CHECK(build_trades(rows, n, false, &array, &schema) == 0);
  laminar_error err;
  laminar_code rc = laminar_source_push(src, &array, &schema, &err);
  if (array.release != NULL) array.release(&array);
  schema.release(&schema);
  CHECK_CODE(rc, LAMINAR_OK, &err);
  return 0;
}

/* CREATE STREAM e AS <select> fails with `code` at the first `at` in select. */
static int expect_error(laminar_db* db, const char* select, laminar_code code,
                        const char* at) {
  char sql[1024];
  const char* prefix = "CREATE STREAM e AS ";
  snprintf(sql, sizeof sql, "%s%s", prefix, select);
  laminar_error err;
  CHECK_CODE(laminar_execute(db, sql, &err), code, &err);
  int32_t col = (int32_t)(strlen(prefix) + (size_t)(strstr(select, at) - select) + 1);
  if (err.line != 1 || err.column != col) {
    fprintf(stderr, "%s: at %d:%d, want 1:%d (%s)\n", select, (int)err.line,
            (int)err.column, (int)col, err.message);
    return 1;
  }
  return 0;
}

/* ==== durable: a crash mid-stream ======================================================= */

#define NB 30  /* batches per source */
#define CUT 24 /* the crash copy: after batch CUT-1 of each source */

static const char* SOURCES =
    "CREATE SOURCE a (symbol VARCHAR NOT NULL, price DOUBLE, volume BIGINT, ts BIGINT,\n"
    "  WATERMARK FOR ts AS ts - INTERVAL '100' MILLISECOND);\n"
    "CREATE SOURCE b (symbol VARCHAR NOT NULL, price DOUBLE, volume BIGINT, ts BIGINT,\n"
    "  WATERMARK FOR ts AS ts - INTERVAL '30' MILLISECOND);\n";


static const char* const J_DIRS[] = {"j", "w"};

typedef struct run {
  const char* join_sql; /* the streams and sinks: two %s for the sinks' directory */
  laminar_db* db;
  laminar_source* src[2];
  const char* dir;
  int cores;
  int64_t next[2];
  bool no_checkpoints; /* feed_to takes none */
} run;

static int open_run(run* r) {
  laminar_error err;
  laminar_config* c = durable_config_cores(r->dir, "1 hour", "sync", r->cores);
  CHECK(c != NULL);
  laminar_code rc = laminar_open(c, &r->db, &err);
  laminar_config_destroy(c);
  CHECK_CODE(rc, LAMINAR_OK, &err);
  char sql[2048], sinks[128];
  sinks_dir(r->dir, sinks, sizeof sinks);
  CHECK_CODE(laminar_execute(r->db, SOURCES, &err), LAMINAR_OK, &err);
  snprintf(sql, sizeof sql, r->join_sql, sinks, sinks);
  CHECK_CODE(laminar_execute(r->db, sql, &err), LAMINAR_OK, &err);
  CHECK_CODE(laminar_source_open(r->db, "a", &r->src[0], &err), LAMINAR_OK, &err);
  CHECK_CODE(laminar_source_open(r->db, "b", &r->src[1], &err), LAMINAR_OK, &err);
  return 0;
}

/* Push until each source reaches its bound, b two batches behind a (its
 * quotes then hold a's trades back), running inline, a checkpoint after
 * every 10th batch of a. */
static int feed_to(run* r, int64_t upto) {
  laminar_error err;
  while (r->next[0] < upto || r->next[1] < upto) {
    for (int s = 0; s < 2; s++) {
      if (r->next[s] >= upto ||
          (s == 1 && r->next[1] + 2 > r->next[0] && r->next[0] < upto))
        continue;
      CHECK(push_two_sources(r->src[s], s, r->next[s]) == 0);
      r->next[s]++;
      CHECK_CODE(laminar_run_until_idle(r->db, &err), LAMINAR_OK, &err);
      if (s == 0 && r->next[0] % 10 == 0 && !r->no_checkpoints)
        CHECK_CODE(laminar_checkpoint(r->db, &err), LAMINAR_OK, &err);
    }
  }
  return 0;
}

static char* finish_run(run* r) {
  laminar_error err;
  if (feed_to(r, NB) != 0) return NULL;
  for (int s = 0; s < 2; s++)
    if (laminar_source_watermark(r->src[s], INT64_MAX, &err) != LAMINAR_OK) return NULL;
  if (laminar_run_until_idle(r->db, &err) != LAMINAR_OK ||
      laminar_checkpoint(r->db, &err) != LAMINAR_OK) {
    fprintf(stderr, "finish: %s\n", err.message);
    return NULL;
  }
  for (int s = 0; s < 2; s++) laminar_source_close(r->src[s]);
  laminar_close(r->db);
  return sinks_output(r->dir, J_DIRS, 2);
}

static char* reference(const char* join_sql, int cores) {
  char dir[64];
  if (lm_test_mkdtemp(dir, sizeof dir, "lm_join_ref_") != 0) return NULL;
  run r = {.join_sql = join_sql, .dir = dir, .cores = cores};
  char* out = open_run(&r) == 0 && feed_to(&r, CUT) == 0 ? finish_run(&r) : NULL;
  remove_db(dir);
  return out;
}

/* Crash r (a copy of its files as they are, then a close), restart at `to`
 * cores, each source resumed from its offset (where r stood: sync WAL),
 * finish: the output equals `want`. Another `to`: the checkpoint's join
 * state is split (or merged) by key hash among the new partitions. */
static int crash_resume_compare(run* r, const char* want, int to) {
  char copy[80];
  snprintf(copy, sizeof copy, "%s_c", r->dir);
  CHECK(copy_db(r->dir, copy) == 0);
  for (int s = 0; s < 2; s++) laminar_source_close(r->src[s]);
  CHECK_CODE(laminar_close(r->db), LAMINAR_OK, NULL);
  CHECK(restore_db(copy, r->dir) == 0);

  run again = {.join_sql = r->join_sql, .dir = r->dir, .cores = to};
  CHECK(open_run(&again) == 0); /* the stored streams, already there */
  /* Both streams key by the join's key: one partition per reactor. */
  CHECK(lm_test_metric(again.db, "stream", "j", "partitions") == to);
  CHECK(lm_test_metric(again.db, "stream", "w", "partitions") == to);
  laminar_error err;
  for (int s = 0; s < 2; s++) {
    int64_t offset;
    CHECK_CODE(laminar_source_offset(again.src[s], &offset, &err), LAMINAR_OK, &err);
    again.next[s] = offset - 1;
    CHECK(again.next[s] == r->next[s]);
  }
  char* got = finish_run(&again);
  CHECK(got != NULL);
  int failed = strcmp(got, want) != 0;
  if (failed)
    fprintf(stderr, "cores %d -> %d\n--- got\n%s--- want\n%s", r->cores, to, got, want);
  free(got);
  remove_db(r->dir);
  return failed;
}

/* A crash at `from` cores after batch CUT-1, restarted at `to`. */
static int crash_and_resume_at(const char* join_sql, const char* want, int from, int to) {
  char dir[64];
  CHECK(lm_test_mkdtemp(dir, sizeof dir, "lm_join_") == 0);
  run r = {.join_sql = join_sql, .dir = dir, .cores = from};
  CHECK(open_run(&r) == 0 && feed_to(&r, CUT) == 0);
  return crash_resume_compare(&r, want, to);
}

static int crash_and_resume(const char* join_sql, int cores) {
  char* want = reference(join_sql, cores);
  CHECK(want != NULL);
  CHECK(strstr(want, "\"qp\"") != NULL && strstr(want, "\"window_start\"") != NULL);
  int failed = crash_and_resume_at(join_sql, want, cores, cores);
  free(want);
  return failed;
}

#endif /* LM_TEST_JOIN_UTIL_H */
