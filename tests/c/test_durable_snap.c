/*
 * test_durable_snap.c -- checkpoints that freeze window state copy-on-write
 * (issue 6 item 3, docs/DURABILITY.md "How it works"): the stall only marks
 * the open windows shared; the checkpoint encodes them after the graph goes
 * on, and the window operator copies a window it changes meanwhile.
 *
 * White-box where the API cannot place an event between the stall and the
 * encoding: a durable hook (lm_durable_set_write_hook) runs the graph there
 * (lm_rt_run_until_idle), so rows land in frozen windows and frozen windows
 * close while the checkpoint still holds them; lm_op_window_thaws() shows
 * that the copies happened. Every case ends with a restart that restores the
 * checkpoint, replays the WAL after it and finishes the input: the committed
 * output equals an uninterrupted run's (lm_test_durable.h), so the checkpoint
 * held exactly the state at its barrier (a row after it would come back twice
 * through the replay, a row before it would be lost). The pipeline has every
 * window kind: tumbling, cascaded, a view, hopping (panes), sessions, EMIT
 * CHANGES with COUNT(DISTINCT), late side output; sessions and the view are
 * copy-on-write too (their whole state held, copied at the first change).
 */
/* lm_ctest: TIMEOUT 240 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE  // mkdtemp under -std=c17
#endif

#include <errno.h>
#include <pthread.h>
#include <sys/stat.h>
#include <unistd.h>

#include "db/durable.h"
#include "db/internal.h"
#include "lm_test.h"
#include "op/view.h"
#include "lm_test_durable.h"
#include "util/util.h"

/* What the hook does inside a checkpoint, between the stall and the encoding. */
typedef struct hook_ctx {
  laminar_db* db;
  laminar_source* src;
  int64_t from, to; /* batches pushed and run there */
  int fault;        /* 0, or: fail the next allocation (1) / I/O (2) */
  int failed;       /* a push or run in the hook failed */
} hook_ctx;

static void in_checkpoint(void* arg) {
  hook_ctx* h = arg;
  laminar_error err;
  for (int64_t b = h->from; b < h->to; b++) {
    if (push_batch(h->src, b, &err) != LAMINAR_OK) h->failed = 1;
    /* The graph runs (this thread holds db->lock: the inner driver). */
    if (lm_rt_run_until_idle(&h->db->rt, &err) != LAMINAR_OK) h->failed = 1;
  }
#ifdef LAMINAR_FAULT_INJECTION
  if (h->fault == 1) lm_fault_alloc_set(1, false);
  if (h->fault == 2) lm_fault_io_set(1, EIO);
#endif
}

/* Copies made by the window operators (and, views true, the views) of the
 * database's streams; their groups (view rows) in *groups. */
static int64_t thaws_of(laminar_db* db, bool windows, bool views, int64_t* groups) {
  int64_t n = 0, gsum = 0;
  for (int32_t i = 0; i < db->graph.nstreams; i++) {
    int64_t g = 0;
    const lm_op* chain = db->graph.streams[i]->chain;
    if (windows) n += lm_op_window_thaws(chain, &g);
    gsum += g;
    g = 0;
    if (views && lm_op_view_of(chain) != NULL)
      n += lm_op_view_thaws(lm_op_view_of(chain), &g);
    gsum += g;
  }
  *groups = gsum;
  return n;
}

static int64_t thaws(laminar_db* db, int64_t* groups) {
  return thaws_of(db, true, true, groups);
}

/* Reopen dir (the checkpoint and the WAL after it), push the rest of the
 * input from the source's offset, finish, and compare with `want`. */
static int restart_and_compare(const char* dir, const char* want) {
  laminar_db* db;
  laminar_source* src;
  laminar_error err;
  int64_t off;
  CHECK(open_pipeline(dir, "sync", &db, &src) == 0);
  CHECK_CODE(laminar_source_offset(src, &off, &err), LAMINAR_OK, &err);
  CHECK(feed(db, src, off - 1, NBATCH, 11) == 0);
  return finish_and_compare(db, src, dir, want);
}

/* One case: a fresh durable pipeline, body(db, src, dir) on it (leaving both
 * open), close, then restart_and_compare() with the uninterrupted run. */
static int with_pipeline(int (*body)(laminar_db* db, laminar_source* src,
                                     const char* dir)) {
  char* want = reference_output();
  CHECK(want != NULL);
  char dir[64];
  CHECK(lm_test_mkdtemp(dir, sizeof dir, "lm_snap_") == 0);
  laminar_db* db;
  laminar_source* src;
  int rc = open_pipeline(dir, "sync", &db, &src);
  if (rc == 0) {
    rc = body(db, src, dir);
    laminar_source_close(src);
    if (laminar_close(db) != LAMINAR_OK) rc = 1;
  }
  if (rc == 0) rc = restart_and_compare(dir, want);
  free(want);
  remove_db(dir);
  return rc;
}

/* Rows keep arriving into the frozen windows while the checkpoint encodes
 * them, and windows it froze close (and are let go) meanwhile. */
static int rows_into_frozen_windows(laminar_db* db, laminar_source* src,
                                    const char* dir) {
  (void)dir;
  laminar_error err;
  CHECK(feed(db, src, 0, 14, 0) == 0);
  hook_ctx h = {.db = db, .src = src, .from = 14, .to = 18};
  lm_durable_set_write_hook(db->dur, in_checkpoint, &h);
  int64_t groups;
  CHECK(thaws(db, &groups) == 0);
  CHECK_CODE(laminar_checkpoint(db, &err), LAMINAR_OK, &err);
  CHECK(h.failed == 0);
  /* The open windows took rows while frozen: copied first, not changed; so
   * did the view (rows of windows that closed). */
  int64_t n = thaws(db, &groups);
  EXPECT(n > 0 && groups > 0);
  EXPECT(thaws_of(db, false, true, &groups) == 1 && groups > 0);
  /* A second checkpoint of the same windows, with rows again. */
  h.from = 18;
  h.to = 20;
  CHECK_CODE(laminar_checkpoint(db, &err), LAMINAR_OK, &err);
  CHECK(h.failed == 0);
  EXPECT(thaws(db, &groups) > n);
  lm_durable_set_write_hook(db->dur, NULL, NULL);
  /* Rows after the last checkpoint: in the WAL only. */
  CHECK(feed(db, src, 20, 23, 0) == 0);
  return 0;
}

static int test_rows_into_frozen_windows(void) {
  return with_pipeline(rows_into_frozen_windows);
}

static long file_size(const char* path) {
  struct stat st;
  return stat(path, &st) == 0 ? (long)st.st_size : -1;
}

/* Checkpoints with no change in between: each freezes windows the one before
 * let go of (never changed since), and writes the same state; rows after
 * them change the windows in place (the checkpoints are done with them). */
static int repeated_checkpoints(laminar_db* db, laminar_source* src, const char* dir) {
  laminar_error err;
  CHECK(feed(db, src, 0, 12, 0) == 0);
  for (int i = 0; i < 3; i++) CHECK_CODE(laminar_checkpoint(db, &err), LAMINAR_OK, &err);
  CHECK(lm_durable_last_epoch(db->dur) >= 3);
  /* The three files kept (checkpoint_keep 3): the same state, the same size. */
  char cdir[128], p[3][400];
  snprintf(cdir, sizeof cdir, "%s/checkpoints", dir);
  struct dirent** list;
  int nf = scandir(cdir, &list, NULL, alphasort), k = 0;
  for (int i = 0; i < nf; i++) {
    if (strncmp(list[i]->d_name, "ckpt-", 5) == 0 && k < 3)
      snprintf(p[k++], sizeof p[0], "%s/%s", cdir, list[i]->d_name);
    free(list[i]);
  }
  if (nf > 0) free(list);
  CHECK(k == 3);
  long size = file_size(p[0]);
  CHECK(size > 1000);
  EXPECT(file_size(p[1]) == size && file_size(p[2]) == size);
  int64_t groups;
  CHECK(feed(db, src, 12, 16, 0) == 0);
  EXPECT(thaws(db, &groups) == 0); /* nothing held them any more: no copies */
  return 0;
}

static int test_repeated_checkpoints(void) { return with_pipeline(repeated_checkpoints); }

/* A checkpoint that fails after the stall -- out of memory encoding the
 * frozen state, or an I/O error writing it -- lets go of the frozen windows
 * (no leak: the sanitizer build), reports the code, and leaves the database
 * usable: the next checkpoint and a restart give the uninterrupted output. */
#ifdef LAMINAR_FAULT_INJECTION
static int failing_checkpoint(laminar_db* db, laminar_source* src, const char* dir) {
  (void)dir;
  laminar_error err;
  CHECK(feed(db, src, 0, 10, 0) == 0);
  CHECK_CODE(laminar_checkpoint(db, &err), LAMINAR_OK, &err);
  hook_ctx h = {.db = db, .src = src, .from = 10, .to = 12, .fault = 1};
  lm_durable_set_write_hook(db->dur, in_checkpoint, &h);
  CHECK_CODE(laminar_checkpoint(db, &err), LAMINAR_ERR_NOMEM, &err);
  lm_fault_alloc_set(0, false);
  h.from = 12;
  h.to = 14;
  h.fault = 2;
  CHECK_CODE(laminar_checkpoint(db, &err), LAMINAR_ERR_IO, &err);
  lm_fault_io_set(0, 0);
  CHECK(h.failed == 0);
  lm_durable_set_write_hook(db->dur, NULL, NULL);
  CHECK(feed(db, src, 14, 17, 0) == 0);
  CHECK_CODE(laminar_checkpoint(db, &err), LAMINAR_OK, &err);
  CHECK(feed(db, src, 17, 19, 0) == 0);
  return 0;
}
#endif

static int test_failing_checkpoint(void) {
#ifndef LAMINAR_FAULT_INJECTION
  return lm_test_skip(
      "built without LAMINAR_FAULT_INJECTION (scripts/test.sh step 2 has it)");
#else
  return with_pipeline(failing_checkpoint);
#endif
}

/* The reactor thread pushes rows into windows while another thread takes
 * checkpoints back to back (copies on the reactor, encoding and freeing on
 * the checkpoint thread; this file runs under TSan). Then a restart from the
 * last of them plus the WAL finishes the input. */
typedef struct ckpt_loop {
  laminar_db* db;
  _Atomic int stop;
  _Atomic int taken;
  int failed;
} ckpt_loop;

static void* checkpoints(void* arg) {
  ckpt_loop* c = arg;
  while (!atomic_load_explicit(&c->stop, memory_order_acquire)) {
    laminar_error err;
    if (laminar_checkpoint(c->db, &err) == LAMINAR_OK) {
      atomic_fetch_add_explicit(&c->taken, 1, memory_order_release);
    } else {
      fprintf(stderr, "checkpoint: %s\n", err.message);
      c->failed++;
    }
  }
  return NULL;
}

/* Stops the checkpoint loop once it has taken one checkpoint at least: a
 * barrier completes when every reactor has passed it, which on a loaded
 * machine can take longer than the pushes (up to 20 s here). */
static void stop_after_one(ckpt_loop* c, pthread_t t) {
  for (int i = 0; i < 20000 && atomic_load_explicit(&c->taken, memory_order_acquire) == 0;
       i++)
    usleep(1000);
  atomic_store_explicit(&c->stop, 1, memory_order_release);
  pthread_join(t, NULL);
}

/* Holds the frozen windows a little longer: the reactor meets them. */
static void linger(void* arg) {
  (void)arg;
  usleep(1000);
}

static int threaded_checkpoints(laminar_db* db, laminar_source* src, const char* dir) {
  (void)dir;
  laminar_error err;
  lm_durable_set_write_hook(db->dur, linger, NULL);
  CHECK_CODE(laminar_start(db, &err), LAMINAR_OK, &err);
  ckpt_loop c = {.db = db};
  pthread_t t;
  CHECK(pthread_create(&t, NULL, checkpoints, &c) == 0);
  for (int64_t b = 0; b < 30; b++) {
    CHECK_CODE(push_batch(src, b, &err), LAMINAR_OK, &err);
    if (b % 3 == 0) usleep(2000);
  }
  stop_after_one(&c, t);
  CHECK_CODE(laminar_stop(db, &err), LAMINAR_OK, &err);
  EXPECT(c.taken > 0 && c.failed == 0);
  int64_t groups, n = thaws(db, &groups); /* timing decides how many */
  printf("threaded_checkpoints: checkpoints=%d window copies=%lld (%lld groups)\n",
         atomic_load(&c.taken), (long long)n, (long long)groups);
  return 0;
}

static int test_threaded_checkpoints(void) { return with_pipeline(threaded_checkpoints); }

/* ---- every aggregate state through a copy and a frozen encoding ---------------- */

/* String MIN/MAX, COUNT(DISTINCT) of strings and integers, FIRST/LAST, SUM,
 * AVG in tumbling windows; a global EMIT CHANGES aggregate; and one over its
 * changelog (weighted states: value multisets, FIRST/LAST run stacks). */
static const char* AGG_DDL =
    "CREATE SOURCE trades (symbol VARCHAR NOT NULL, price DOUBLE, volume BIGINT, ts "
    "BIGINT,\n"
    "  WATERMARK FOR ts AS ts - INTERVAL '100' MILLISECOND);\n"
    "CREATE STREAM agg AS SELECT volume, window_start, MIN(symbol) AS mn, MAX(symbol) AS "
    "mx,\n"
    "  COUNT(DISTINCT symbol) AS ds, FIRST_VALUE(symbol) AS fs, LAST_VALUE(price) AS "
    "lp,\n"
    "  SUM(volume) AS sv, AVG(price) AS ap FROM trades\n"
    "  GROUP BY volume, tumble(ts, INTERVAL '3' SECOND);\n"
    "CREATE STREAM run AS SELECT symbol, COUNT(*) AS n, MIN(price) AS lo,\n"
    "  COUNT(DISTINCT volume) AS dv FROM trades GROUP BY symbol EMIT CHANGES;\n"
    "CREATE STREAM over AS SELECT dv, COUNT(*) AS c, MIN(symbol) AS ms, MAX(lo) AS hl,\n"
    "  FIRST_VALUE(symbol) AS fs, LAST_VALUE(n) AS ln, COUNT(DISTINCT symbol) AS dsy\n"
    "  FROM run GROUP BY dv EMIT CHANGES;\n";

static const char* const AGG_SINKS[] = {"agg", "run", "over"};

static int agg_open(const char* dir, laminar_db** db, laminar_source** src) {
  laminar_error err;
  char sql[1024], sinks[128];
  size_t len = 0;
  for (int i = 0; i < 3; i++)
    len += (size_t)snprintf(
        sql + len, sizeof sql - len,
        "CREATE SINK %s_out FROM %s INTO FILE (path = '%s/%s', format = "
        "'jsonl');\n",
        AGG_SINKS[i], AGG_SINKS[i], sinks_dir(dir, sinks, sizeof sinks), AGG_SINKS[i]);
  CHECK_CODE(open_db(dir, "sync", db, &err), LAMINAR_OK, &err);
  CHECK_CODE(laminar_execute(*db, AGG_DDL, &err), LAMINAR_OK, &err);
  CHECK_CODE(laminar_execute(*db, sql, &err), LAMINAR_OK, &err);
  CHECK_CODE(laminar_source_open(*db, "trades", src, &err), LAMINAR_OK, &err);
  return 0;
}

/* The three sinks' committed rows, sorted per sink; removes the directory. */
static char* agg_output(const char* dir) {
  size_t len = 0;
  char* all = NULL;
  for (int i = 0; i < 3; i++) {
    char* part = sink_dir_output(dir, AGG_SINKS[i]);
    size_t lp = strlen(part);
    all = realloc(all, len + lp + 1);
    memcpy(all + len, part, lp + 1);
    len += lp;
    free(part);
    char p[128];
    snprintf(p, sizeof p, "%s/%s", dir, AGG_SINKS[i]);
    lm_test_rmdir(p);
  }
  remove_db(dir);
  return all;
}

/* The input with checkpoints (rows into frozen windows through the hook
 * when `frozen`) and a restart after batch 20, or uninterrupted. */
static char* agg_run(bool frozen, bool restart) {
  char dir[64];
  if (lm_test_mkdtemp(dir, sizeof dir, "lm_snap_agg_") != 0) return NULL;
  laminar_db* db;
  laminar_source* src;
  laminar_error err;
  int64_t off = 1;
  if (agg_open(dir, &db, &src) != 0) return NULL;
  if (restart) {
    if (feed(db, src, 0, 12, 0) != 0) return NULL;
    hook_ctx h = {.db = db, .src = src, .from = 12, .to = 16};
    lm_durable_set_write_hook(db->dur, frozen ? in_checkpoint : NULL, &h);
    if (laminar_checkpoint(db, &err) != LAMINAR_OK || h.failed) return NULL;
    int64_t groups;
    if (frozen && thaws(db, &groups) < 3) return NULL; /* each stream copied its window */
    lm_durable_set_write_hook(db->dur, NULL, NULL);
    if (feed(db, src, frozen ? 16 : 12, 20, 0) != 0) return NULL;
    laminar_source_close(src);
    if (laminar_close(db) != LAMINAR_OK || agg_open(dir, &db, &src) != 0) return NULL;
    if (laminar_source_offset(src, &off, &err) != LAMINAR_OK || off != 21) return NULL;
  }
  if (feed(db, src, off - 1, NBATCH, 0) != 0 || finish(db, src) != 0) return NULL;
  laminar_source_close(src);
  if (laminar_close(db) != LAMINAR_OK) return NULL;
  return agg_output(dir);
}

static int test_every_aggregate_state(void) {
  char* want = agg_run(false, false);
  char* got = agg_run(true, true);
  CHECK(want != NULL && got != NULL);
  CHECK(strlen(want) > 1000);
  int rc = strcmp(got, want) == 0 ? 0 : 1;
  if (rc) fprintf(stderr, "--- got\n%s--- want\n%s", got, want);
  free(got);
  free(want);
  return rc;
}

/* ---- a big window copied by blocks, on the reactor, under checkpoints ------------ */

/* One window of up to 20,000 groups (numeric aggregates: copied by blocks of
 * 4096 groups at the first touch); every fourth batch has two rows, so some
 * touches copy a few blocks only. */
static const char* BIG_DDL =
    "CREATE SOURCE trades (symbol VARCHAR NOT NULL, price DOUBLE, volume BIGINT, ts "
    "BIGINT,\n"
    "  WATERMARK FOR ts AS ts - INTERVAL '100' MILLISECOND);\n"
    "CREATE STREAM big AS SELECT symbol, window_start, COUNT(*) AS n, SUM(volume) AS v,\n"
    "  MIN(price) AS lo, MAX(price) AS hi FROM trades\n"
    "  GROUP BY symbol, tumble(ts, INTERVAL '1' HOUR);\n";

enum { BIG_ROWS = 1000, BIG_NBATCH = 60 };

static int push_big(laminar_source* src, int64_t b, laminar_error* err) {
  static trade_row rows[BIG_ROWS];
  static char names[BIG_ROWS][16];
  int64_t n = b % 4 == 3 ? 2 : BIG_ROWS;
  for (int64_t i = 0; i < n; i++) {
    /* A short batch's rows take keys the batch before had. */
    int64_t at = n < BIG_ROWS ? (b - 1) * BIG_ROWS + i * 400 : b * BIG_ROWS + i;
    snprintf(names[i], sizeof names[i], "s%lld", (long long)(at * 7919 % 20000));
    rows[i] = (trade_row){names[i], (double)(at % 97), false, at % 13, false, b * 10};
  }
  struct ArrowArray array;
  struct ArrowSchema schema;
  if (build_trades(rows, n, false, &array, &schema) != 0) return -1;
  laminar_code rc = laminar_source_push(src, &array, &schema, err);
  if (array.release != NULL) array.release(&array);
  schema.release(&schema);
  return (int)rc;
}

static int big_open(const char* dir, laminar_db** db, laminar_source** src) {
  laminar_error err;
  char sql[256], sinks[128];
  snprintf(sql, sizeof sql,
           "CREATE SINK big_out FROM big INTO FILE (path = '%s/big', format = "
           "'jsonl')",
           sinks_dir(dir, sinks, sizeof sinks));
  CHECK_CODE(open_db(dir, "sync", db, &err), LAMINAR_OK, &err);
  CHECK_CODE(laminar_execute(*db, BIG_DDL, &err), LAMINAR_OK, &err);
  CHECK_CODE(laminar_execute(*db, sql, &err), LAMINAR_OK, &err);
  CHECK_CODE(laminar_source_open(*db, "trades", src, &err), LAMINAR_OK, &err);
  return 0;
}

/* Push batches [from, BIG_NBATCH), finish, close; the committed output
 * (sorted lines; the directory removed). */
static char* big_finish(const char* dir, laminar_db* db, laminar_source* src,
                        int64_t from) {
  laminar_error err;
  for (int64_t b = from; b < BIG_NBATCH; b++) {
    if (push_big(src, b, &err) != LAMINAR_OK) return NULL;
    if (laminar_run_until_idle(db, &err) != LAMINAR_OK) return NULL;
  }
  if (finish(db, src) != 0) return NULL;
  laminar_source_close(src);
  if (laminar_close(db) != LAMINAR_OK) return NULL;
  char* out = sink_dir_output(dir, "big");
  char p[128];
  snprintf(p, sizeof p, "%s/big", dir);
  lm_test_rmdir(p);
  remove_db(dir);
  return out;
}

/* The reactor puts rows into the big window while another thread takes
 * checkpoints back to back (each held 1 ms by the hook): frozen windows are
 * copied by blocks on the reactor while encoded on the checkpoint thread
 * (this file runs under TSan). A restart from the last checkpoint plus the
 * WAL finishes the input and equals the uninterrupted run. */
static int test_big_window_by_blocks(void) {
  char dir[64];
  laminar_db* db;
  laminar_source* src;
  laminar_error err;
  CHECK(lm_test_mkdtemp(dir, sizeof dir, "lm_snap_big_") == 0);
  CHECK(big_open(dir, &db, &src) == 0);
  char* want = big_finish(dir, db, src, 0);
  CHECK(want != NULL && strlen(want) > 100000);

  CHECK(lm_test_mkdtemp(dir, sizeof dir, "lm_snap_big_") == 0);
  CHECK(big_open(dir, &db, &src) == 0);
  lm_durable_set_write_hook(db->dur, linger, NULL);
  CHECK_CODE(laminar_start(db, &err), LAMINAR_OK, &err);
  ckpt_loop c = {.db = db};
  pthread_t t;
  CHECK(pthread_create(&t, NULL, checkpoints, &c) == 0);
  for (int64_t b = 0; b < 40; b++) CHECK_CODE(push_big(src, b, &err), LAMINAR_OK, &err);
  stop_after_one(&c, t);
  CHECK_CODE(laminar_stop(db, &err), LAMINAR_OK, &err);
  lm_durable_set_write_hook(db->dur, NULL, NULL);
  EXPECT(c.taken > 0 && c.failed == 0);
  int64_t groups, n = thaws(db, &groups); /* timing decides how many */
  printf("big_window_by_blocks: checkpoints=%d window copies=%lld (%lld groups copied)\n",
         atomic_load(&c.taken), (long long)n, (long long)groups);
  laminar_source_close(src);
  CHECK(laminar_close(db) == LAMINAR_OK);

  int64_t off;
  CHECK(big_open(dir, &db, &src) == 0);
  CHECK_CODE(laminar_source_offset(src, &off, &err), LAMINAR_OK, &err);
  CHECK(off == 41);
  char* got = big_finish(dir, db, src, off - 1);
  CHECK(got != NULL);
  int rc = strcmp(got, want) == 0 ? 0 : 1;
  if (rc) fprintf(stderr, "big_window_by_blocks: the restarted output differs\n");
  free(got);
  free(want);
  return rc;
}

static const lm_test_case cases[] = {
    {"rows_into_frozen_windows", test_rows_into_frozen_windows},
    {"repeated_checkpoints", test_repeated_checkpoints},
    {"failing_checkpoint", test_failing_checkpoint},
    {"threaded_checkpoints", test_threaded_checkpoints},
    {"every_aggregate_state", test_every_aggregate_state},
    {"big_window_by_blocks", test_big_window_by_blocks},
    {NULL, NULL},
};

int main(int argc, char** argv) { return lm_test_main(argc, argv, cases); }
