/*
 * test_durable_union.c -- a stream over two sources (UNION ALL, a window
 * over it, a view and a file sink) on a durable database, through
 * laminar.h: the directory copied mid-run as a crash leaves it, reopened,
 * each source resumed from its own laminar_source_offset, gives the output
 * of an uninterrupted run -- with the union in the checkpoint (its inputs'
 * watermarks restored), created after the newest checkpoint (the replay
 * gates it per source: each source's records after ITS start), and with the
 * newest checkpoint deleted (the quiet fallback to the older one), cores 1
 * and 2. The replay runs one source after the other; per-input lateness
 * makes that equal to the live interleaving.
 */
/* lm_ctest: TIMEOUT 240 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE  // mkdtemp, scandir under -std=c17 (the shared test headers)
#endif

#include <string.h>
#include <unistd.h>

#include "lm_test.h"
#include "lm_test_durable.h"
#include "views_util.h"

#define NB 30  /* batches per source */
#define CUT 24 /* the crash copy: after batch CUT-1 of each source */

static const char* SOURCES =
    "CREATE SOURCE a (symbol VARCHAR NOT NULL, price DOUBLE, volume BIGINT, ts BIGINT,\n"
    "  WATERMARK FOR ts AS ts - INTERVAL '100' MILLISECOND);\n"
    "CREATE SOURCE b (symbol VARCHAR NOT NULL, price DOUBLE, volume BIGINT, ts BIGINT,\n"
    "  WATERMARK FOR ts AS ts - INTERVAL '30' MILLISECOND);\n";

static const char* UNION_SQL =
    "CREATE STREAM u AS SELECT symbol, window_start, COUNT(*) AS n, SUM(v) AS total\n"
    "  FROM (SELECT symbol, volume AS v, ts FROM a UNION ALL\n"
    "        SELECT symbol, volume * 100, ts FROM b WHERE volume > 1)\n"
    "  GROUP BY symbol, tumble(ts, INTERVAL '500' MILLISECOND);\n"
    "CREATE MATERIALIZED VIEW big AS SELECT symbol, window_start, n, total FROM u WHERE "
    "n >= 11;\n"
    "CREATE SINK u_out FROM u INTO FILE (path = '%s/u', format = 'jsonl')";

static const char* const U_DIRS[] = {"u"};

typedef struct run {
  laminar_db* db;
  laminar_source* src[2];
  const char* dir;
  int cores;
  int64_t create
      [2]; /* the union created when a and b have these many batches ({0,0}: at open) */
  int64_t next[2]; /* the next batch of each source */
} run;

static int create_union(run* r) {
  char sql[1024], sinks[128];
  snprintf(sql, sizeof sql, UNION_SQL, sinks_dir(r->dir, sinks, sizeof sinks));
  laminar_error err;
  CHECK_CODE(laminar_execute(r->db, sql, &err), LAMINAR_OK, &err);
  return 0;
}

static int open_run(run* r) {
  laminar_error err;
  laminar_config* c = durable_config_cores(r->dir, "1 hour", "sync", r->cores);
  CHECK(c != NULL);
  laminar_code rc = laminar_open(c, &r->db, &err);
  laminar_config_destroy(c);
  CHECK_CODE(rc, LAMINAR_OK, &err);
  CHECK_CODE(laminar_execute(r->db, SOURCES, &err), LAMINAR_OK, &err);
  if (r->create[0] == 0) CHECK(create_union(r) == 0);
  CHECK_CODE(laminar_source_open(r->db, "a", &r->src[0], &err), LAMINAR_OK, &err);
  CHECK_CODE(laminar_source_open(r->db, "b", &r->src[1], &err), LAMINAR_OK, &err);
  return 0;
}

/* Push until each source's next batch reaches its bound, interleaved (a
 * batch of a, a batch of b), running inline, a checkpoint after every
 * 10th batch of a (epochs 1, 2 at a's 10, 20); a late union is created when
 * both reach its start. */
static int feed_to(run* r, int64_t upto_a, int64_t upto_b) {
  laminar_error err;
  while (r->next[0] < upto_a || r->next[1] < upto_b) {
    for (int s = 0; s < 2; s++) {
      if (r->next[s] >= (s == 0 ? upto_a : upto_b)) continue;
      CHECK(push_two_sources(r->src[s], s, r->next[s]) == 0);
      r->next[s]++;
      CHECK_CODE(laminar_run_until_idle(r->db, &err), LAMINAR_OK, &err);
      if (s == 0 && r->next[0] % 10 == 0)
        CHECK_CODE(laminar_checkpoint(r->db, &err), LAMINAR_OK, &err);
      if (r->create[0] > 0 && r->next[0] == r->create[0] && r->next[1] == r->create[1])
        CHECK(create_union(r) == 0);
    }
  }
  return 0;
}

/* To the end of both inputs, the final watermarks, a checkpoint; the
 * committed sink output and the view's rows, then closed. NULL on failure. */
static char* finish_run(run* r) {
  laminar_error err;
  char view[16384];
  if (feed_to(r, NB, NB) != 0) return NULL;
  for (int s = 0; s < 2; s++)
    if (laminar_source_watermark(r->src[s], INT64_MAX, &err) != LAMINAR_OK) return NULL;
  if (laminar_run_until_idle(r->db, &err) != LAMINAR_OK ||
      laminar_checkpoint(r->db, &err) != LAMINAR_OK ||
      query_text(r->db, "SELECT * FROM big ORDER BY symbol, window_start", view,
                 sizeof view, &err) != LAMINAR_OK) {
    fprintf(stderr, "finish: %s\n", err.message);
    return NULL;
  }
  for (int s = 0; s < 2; s++) laminar_source_close(r->src[s]);
  laminar_close(r->db);
  char* out = sinks_output(r->dir, U_DIRS, 1);
  size_t n = strlen(out) + strlen(view) + 16;
  char* all = malloc(n);
  snprintf(all, n, "%s--- big\n%s\n", out, view);
  free(out);
  return all;
}

/* Open and feed to CUT (a late union: a and b to its start first). */
static int run_to_cut(run* r) {
  CHECK(open_run(r) == 0);
  if (r->create[0] > 0) CHECK(feed_to(r, r->create[0], r->create[1]) == 0);
  CHECK(feed_to(r, CUT, CUT) == 0);
  return 0;
}

/* The uninterrupted run's output. */
static char* reference(int cores, const int64_t create[2]) {
  char dir[64];
  if (lm_test_mkdtemp(dir, sizeof dir, "lm_dun_ref_") != 0) return NULL;
  run r = {.dir = dir, .cores = cores, .create = {create[0], create[1]}};
  char* out = run_to_cut(&r) == 0 ? finish_run(&r) : NULL;
  remove_db(dir);
  return out;
}

/* Run to CUT, copy the directory as a crash leaves it, close; put the copy
 * back (without the newest checkpoint when `lose_newest`), reopen, resume
 * each source from its offset, finish: equal to the reference. */
static int crash_and_resume(int cores, int64_t create_a, int64_t create_b,
                            bool lose_newest) {
  const int64_t create[2] = {create_a, create_b};
  char* want = reference(cores, create);
  CHECK(want != NULL);
  /* Rows from the sink and from the view, b's volumes (x100) among them. */
  CHECK(strstr(want, "\"window_start\"") != NULL && strstr(want, "--- big\n\n") == NULL);
  char dir[64], copy[80];
  CHECK(lm_test_mkdtemp(dir, sizeof dir, "lm_dun_") == 0);
  run r = {.dir = dir, .cores = cores, .create = {create_a, create_b}};
  CHECK(run_to_cut(&r) == 0);
  snprintf(copy, sizeof copy, "%s_c", dir);
  CHECK(copy_db(dir, copy) == 0);
  for (int s = 0; s < 2; s++) laminar_source_close(r.src[s]);
  CHECK_CODE(laminar_close(r.db), LAMINAR_OK, NULL);
  CHECK(restore_db(copy, dir) == 0);
  if (lose_newest) {
    char file[600];
    snprintf(file, sizeof file, "%s/checkpoints/ckpt-%020llu.bin", dir, 2ull);
    CHECK(unlink(file) == 0);
  }

  run again = {.dir = dir, .cores = cores};
  CHECK(open_run(&again) == 0); /* creates the union: the stored one, already there */
  laminar_error err;
  for (int s = 0; s < 2; s++) {
    int64_t offset;
    CHECK_CODE(laminar_source_offset(again.src[s], &offset, &err), LAMINAR_OK, &err);
    EXPECT(offset == CUT + 1); /* the next record's sequence number */
    again.next[s] = offset - 1;
  }
  char* got = finish_run(&again);
  CHECK(got != NULL);
  int failed = strcmp(got, want) != 0;
  if (failed)
    fprintf(stderr, "cores=%d create=%lld,%lld lose_newest=%d\n--- got\n%s--- want\n%s",
            cores, (long long)create_a, (long long)create_b, lose_newest, got, want);
  free(got);
  free(want);
  remove_db(dir);
  return failed;
}

/* The union from the start: in both checkpoints, its inputs' watermarks too. */
static int test_in_checkpoint(void) {
  return crash_and_resume(1, 0, 0, false) | crash_and_resume(2, 0, 0, false);
}

/* Created after the newest checkpoint (epoch 2 at a's 20), at a different
 * position of each source: gated per source in the replay. */
static int test_created_after_checkpoint(void) {
  return crash_and_resume(1, 22, 21, false) | crash_and_resume(2, 22, 21, false);
}

/* The newest checkpoint deleted: the fallback to epoch 1, its published
 * epochs replayed quietly; the union in both, created between them (gated
 * from the older one), and after both. */
static int test_newest_checkpoint_lost(void) {
  return crash_and_resume(1, 0, 0, true) | crash_and_resume(2, 0, 0, true) |
         crash_and_resume(1, 13, 11, true) | crash_and_resume(2, 13, 11, true) |
         crash_and_resume(1, 22, 21, true);
}

static const lm_test_case cases[] = {
    {"in_checkpoint", test_in_checkpoint},
    {"created_after_checkpoint", test_created_after_checkpoint},
    {"newest_checkpoint_lost", test_newest_checkpoint_lost},
    {NULL, NULL},
};

int main(int argc, char** argv) { return lm_test_main(argc, argv, cases); }
