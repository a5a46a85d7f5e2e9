/*
 * bench_checkpoint.c -- what a checkpoint costs the running graph (issue 6):
 * open windows hold N groups (a string key and four aggregates); a checkpoint
 * is taken and timed as a whole and for its stall, the time the graph stays
 * stopped while operator state is frozen (the windows are marked
 * copy-on-write; the rest -- encoding, writing, flushing, renaming,
 * publishing -- runs with the graph going again). In the same round: the
 * stall as it was before copy-on-write (every chain serialized with the graph
 * stopped, lm_op_chain_snapshot), the encoding after the stall, and the
 * first-touch copy: one row pushed into the frozen window while the
 * checkpoint holds it (a durable hook between stall and encoding) makes the
 * reactor copy the whole window before it changes it; timed against the same
 * push after the checkpoint (no copy). Then the same for session windows
 * (the whole session state held, copied by the reactor at its first change)
 * and a materialized view of N rows (its table and row bytes held, copied
 * at the first change). A window is copied by blocks of 4096 groups (the
 * blocks a row meets): the one-row touch copies a few blocks; a second push
 * in the hook, a chunk of 8192 rows with keys spread over every group
 * (`spread_chunk_held`), meets every block of the window -- the worst a
 * chunk can do -- timed against the same chunk before the checkpoint.
 * Then a small pipeline with a sync WAL and a JSONL file sink (1000 keys,
 * windows closing into the sink every round): 40 rounds of push, run and
 * checkpoint, printing the median and largest stall — the part of a
 * checkpoint that is not the state copy (sink epochs, WAL flushes) must not
 * wait on the disk while the graph is stopped.
 * Last, the running graph: a W1 pipeline (VWAP per symbol, 1 s tumbling)
 * on cores = 2, started, fed 8192-row batches as fast as one producer can
 * push, with a checkpoint every 100 ms: throughput against no checkpoints,
 * with in-band barriers and with the pause they replaced (every reactor
 * stopped at one message boundary, lm_durable_set_pause), three rounds each,
 * and per checkpoint the time from request to the barrier's completion and
 * the longest pause of one reactor.
 *
 *   bench_checkpoint [max groups, default 4000000] [threaded rows, default 4000000]
 *
 * Links the static library to read the stall (src/db/durable.h).
 */
#define _POSIX_C_SOURCE 200809L

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "arrow/arrow.h"
#include "bench_push.h"
#include "db/durable.h"
#include "db/internal.h"
#include "op/op.h"
#include "state/state.h"
#include "util/util.h"

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static void check(laminar_code rc, const laminar_error* err, const char* what) {
  if (rc == LAMINAR_OK) return;
  fprintf(stderr, "bench_checkpoint: %s: %s\n", what, err ? err->message : "");
  exit(1);
}

/* Push n rows with keys "key-<(first + i * stride) % mod>" at time `at`. */
static void push_spread(laminar_source* src, const lm_schema* schema, int64_t first,
                        int64_t n, int64_t stride, int64_t mod, int64_t at) {
  char* text = malloc((size_t)n * 16);
  lm_str* keys = malloc((size_t)n * sizeof *keys);
  double* v = malloc((size_t)n * sizeof *v);
  int64_t* ts = malloc((size_t)n * sizeof *ts);
  for (int64_t i = 0; i < n; i++) {
    int len =
        snprintf(text + 16 * i, 16, "key-%lld", (long long)((first + i * stride) % mod));
    keys[i] = (lm_str){text + 16 * i, len};
    v[i] = (double)(i % 1000);
    ts[i] = at;
  }
  lm_vec cols[3] = {{LM_TYPE_STRING, n, NULL, keys},
                    {LM_TYPE_DOUBLE, n, NULL, v},
                    {LM_TYPE_INT64, n, NULL, ts}};
  bench_push_cols(src, schema, cols, n);
  free(text);
  free(keys);
  free(v);
  free(ts);
}

/* Push rows [first, first + n) with distinct keys "key-<i>" at time `at`. */
static void push_keys(laminar_source* src, const lm_schema* schema, int64_t first,
                      int64_t n, int64_t at) {
  push_spread(src, schema, first, n, 1, INT64_MAX, at);
}

static int cmp_i64(const void* a, const void* b) {
  int64_t x = *(const int64_t*)a, y = *(const int64_t*)b;
  return (x > y) - (x < y);
}

/* A durable database in a fresh temp dir (written to dir): checkpoints on
 * demand, the given WAL mode and reactors. */
static laminar_db* open_durable(char* dir, const char* wal_mode, const char* cores) {
  if (mkdtemp(dir) == NULL) exit(1);
  laminar_config* c;
  laminar_error err;
  laminar_db* db;
  check(laminar_config_create(&c), NULL, "config");
  check(laminar_config_set(c, "data_dir", dir, &err), &err, "data_dir");
  check(laminar_config_set(c, "checkpoint_interval", "1 hour", &err), &err, "interval");
  check(laminar_config_set(c, "wal_mode", wal_mode, &err), &err, "wal_mode");
  check(laminar_config_set(c, "cores", cores, &err), &err, "cores");
  check(laminar_open(c, &db, &err), &err, "open");
  laminar_config_destroy(c);
  return db;
}

/* Close what open_durable() opened and remove its directory. */
static void close_durable(laminar_db* db, laminar_source* src, const char* dir) {
  laminar_source_close(src);
  laminar_close(db);
  char cmd[128];
  snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
  if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", dir);
}

/* Stalls of checkpoints with a sync WAL and a file sink taking rows. */
static void sink_stalls(const lm_schema* schema) {
  char dir[] = "/tmp/lm_bench_ckpt_XXXXXX";
  laminar_db* db = open_durable(dir, "sync", "1");
  laminar_error err;
  laminar_source* src;
  char ddl[512];
  snprintf(ddl, sizeof ddl,
           "CREATE SOURCE t (k VARCHAR, v DOUBLE, ts BIGINT, WATERMARK FOR ts AS ts);"
           "CREATE STREAM s AS SELECT k, COUNT(*) AS n, SUM(v) AS total FROM t"
           " GROUP BY k, tumble(ts, INTERVAL '1' SECOND);"
           "CREATE SINK out FROM s INTO FILE (path = '%s-out', format = 'jsonl')",
           dir); /* beside the data directory: a sink in it is refused */
  check(laminar_execute(db, ddl, &err), &err, "DDL");
  check(laminar_source_open(db, "t", &src, &err), &err, "source");
  enum { ROUNDS = 40, KEYS = 1000 };
  int64_t stalls[ROUNDS];
  for (int r = 0; r < ROUNDS; r++) {
    push_keys(src, schema, 0, KEYS, 1000 * (int64_t)(r + 1));
    check(laminar_source_watermark(src, 1000 * (int64_t)(r + 2), &err), &err,
          "watermark");
    check(laminar_run_until_idle(db, &err), &err, "run");
    check(laminar_checkpoint(db, &err), &err, "checkpoint");
    stalls[r] = lm_durable_last_stall_ns(db->dur);
  }
  qsort(stalls, ROUNDS, sizeof stalls[0], cmp_i64);
  printf(
      "RESULT checkpoint_stall sink=jsonl wal=sync keys=%d rounds=%d median=%.1f us "
      "max=%.1f us\n",
      KEYS, ROUNDS, (double)stalls[ROUNDS / 2] / 1e3, (double)stalls[ROUNDS - 1] / 1e3);
  close_durable(db, src, dir);
  char out[64];
  snprintf(out, sizeof out, "%s-out", dir);
  close_durable(NULL, NULL, out);
}

/* The durable hook: one row into the frozen state, run, timed; then a
 * chunk of SPREAD rows whose keys are spread over all groups (every block
 * of a window copied by blocks), run, timed. */
enum { SPREAD = 8192 };

typedef struct touch_ctx {
  laminar_db* db;
  laminar_source* src;
  const lm_schema* schema;
  int64_t groups;
  double seconds, spread;
} touch_ctx;

static double push_and_run(laminar_db* db, laminar_source* src, const lm_schema* schema,
                           int64_t n, int64_t groups) {
  push_spread(src, schema, 0, n, groups / n > 0 ? groups / n : 1, groups, 1000);
  laminar_error err;
  double t0 = now_s();
  check(lm_rt_run_until_idle(&db->rt, &err), &err, "run");
  return now_s() - t0;
}

static double push_one_and_run(laminar_db* db, laminar_source* src,
                               const lm_schema* schema) {
  return push_and_run(db, src, schema, 1, 1);
}

static void touch_frozen(void* arg) {
  touch_ctx* t = arg;
  t->seconds = push_one_and_run(t->db, t->src, t->schema);
  t->spread = push_and_run(t->db, t->src, t->schema, SPREAD, t->groups);
}

/* The stall before copy-on-write: every chain serialized, graph stopped. */
static double serialize_all(laminar_db* db) {
  double t0 = now_s();
  for (int32_t i = 0; i < db->graph.nstreams; i++) {
    lm_state_writer w;
    lm_state_writer_init(&w);
    check(lm_op_chain_snapshot(db->graph.streams[i]->chain, &w), NULL, "snapshot");
    lm_state_writer_free(&w);
  }
  return now_s() - t0;
}

/* What a round holds: open windows, open sessions, or a view's rows. */
typedef enum round_kind { ROUND_WINDOW, ROUND_SESSION, ROUND_VIEW } round_kind;

/* One round: `groups` open groups (sessions, view rows) of `kind`, one
 * checkpoint, with the first-touch copy through the hook: one row pushed
 * and run between the stall and the encoding, timed against the same push
 * after the checkpoint (no copy). */
static void round_of(const lm_schema* schema, int64_t groups, round_kind kind) {
  char dir[] = "/tmp/lm_bench_ckpt_XXXXXX";
  laminar_db* db = open_durable(dir, "none", "1");
  laminar_error err;
  laminar_source* src;
  char ddl[512];
  static const char* const aggs =
      "SELECT k, COUNT(*) AS n, SUM(v) AS total, MIN(v) AS lo,"
      " MAX(v) AS hi FROM t GROUP BY k";
  snprintf(
      ddl, sizeof ddl,
      "CREATE SOURCE t (k VARCHAR, v DOUBLE, ts BIGINT, WATERMARK FOR ts AS ts);%s",
      kind == ROUND_VIEW ? "CREATE MATERIALIZED VIEW s AS SELECT k, v, ts FROM t" : "");
  check(laminar_execute(db, ddl, &err), &err, "DDL");
  if (kind != ROUND_VIEW) {
    snprintf(ddl, sizeof ddl, "CREATE STREAM s AS %s, %s", aggs,
             kind == ROUND_WINDOW ? "tumble(ts, INTERVAL '1' DAY)"
                                  : "session(ts, INTERVAL '1' DAY)");
    check(laminar_execute(db, ddl, &err), &err, "DDL");
  }
  check(laminar_source_open(db, "t", &src, &err), &err, "source");
  for (int64_t at = 0; at < groups; at += 65536) {
    push_keys(src, schema, at, groups - at < 65536 ? groups - at : 65536, 1000);
    check(laminar_run_until_idle(db, &err), &err, "run");
  }
  double before = serialize_all(db);
  double plain_spread = push_and_run(db, src, schema, SPREAD, groups); /* nothing held */
  touch_ctx touch = {db, src, schema, groups, 0, 0};
  lm_durable_set_write_hook(db->dur, touch_frozen, &touch);
  double t0 = now_s();
  check(laminar_checkpoint(db, &err), &err, "checkpoint");
  double total = now_s() - t0;
  lm_durable_set_write_hook(db->dur, NULL, NULL);
  double stall = (double)lm_durable_last_stall_ns(db->dur) * 1e-9;
  double encode = (double)lm_durable_last_write_ns(db->dur) * 1e-9;
  double plain = push_one_and_run(db, src, schema); /* no checkpoint holds it now */
  static const char* const names[] = {"checkpoint", "checkpoint_session",
                                      "checkpoint_view"};
  printf(
      "RESULT %s groups=%lld total=%.3f s stall=%.6f s (before COW: %.3f s, %.0f "
      "ns/group) encode=%.3f s first_touch_copy=%.6f s (%.1f ns/group; same push "
      "unheld %.6f s) spread_chunk_held=%.3f s (unheld %.3f s)\n",
      names[kind], (long long)groups, total, stall, before, before * 1e9 / (double)groups,
      encode, touch.seconds, (touch.seconds - plain) * 1e9 / (double)groups, plain,
      touch.spread, plain_spread);
  fflush(stdout);
  close_durable(db, src, dir);
}

/* ---- the running graph: checkpoints every 100 ms on cores = 2 ------------------------ */

enum { BATCH = 8192, MAX_CKPTS = 4096 };

typedef struct ckpt_timer {
  laminar_db* db;
  atomic_int stop;
  int n;
  int64_t barrier_ns[MAX_CKPTS], stall_ns[MAX_CKPTS];
} ckpt_timer;

static void* every_100ms(void* arg) {
  ckpt_timer* t = arg;
  while (!atomic_load(&t->stop) && t->n < MAX_CKPTS) {
    nanosleep(&(struct timespec){0, 100000000}, NULL);
    if (atomic_load(&t->stop)) break;
    laminar_error err;
    check(laminar_checkpoint(t->db, &err), &err, "checkpoint");
    t->barrier_ns[t->n] = lm_durable_last_barrier_ns(t->db->dur);
    t->stall_ns[t->n] = lm_durable_last_stall_ns(t->db->dur);
    t->n++;
  }
  return NULL;
}

/* W1's input (shared/bench/README.md), batch b of BATCH rows. */
typedef struct w1_data {
  lm_schema schema;
  char sym[100][8];
  lm_str syms[BATCH];
  double price[BATCH];
  int64_t volume[BATCH];
  int64_t ts[BATCH];
} w1_data;

static uint64_t mix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

static void w1_init(w1_data* d) {
  lm_schema_init_empty(&d->schema);
  lm_schema_add(&d->schema, "symbol", LM_TYPE_STRING, false);
  lm_schema_add(&d->schema, "price", LM_TYPE_DOUBLE, false);
  lm_schema_add(&d->schema, "volume", LM_TYPE_INT64, false);
  lm_schema_add(&d->schema, "ts", LM_TYPE_INT64, false);
  for (int i = 0; i < 100; i++) snprintf(d->sym[i], sizeof d->sym[i], "S%03d", i);
  for (int64_t i = 0; i < BATCH; i++) {
    uint64_t z = mix64((uint64_t)(i + 1) * 0x9E3779B97F4A7C15ULL);
    d->syms[i] = (lm_str){d->sym[z % 100], 4};
    d->volume[i] = 1 + (int64_t)((z >> 8) % 1000);
    d->price[i] = 100 + (double)((z >> 24) % 100000) / 1000.0;
  }
}

static void w1_push(laminar_source* src, w1_data* d, int64_t b) {
  for (int64_t i = 0; i < BATCH; i++) d->ts[i] = 1700000000000LL + b * BATCH + i;
  lm_vec cols[4] = {{LM_TYPE_STRING, BATCH, NULL, d->syms},
                    {LM_TYPE_DOUBLE, BATCH, NULL, d->price},
                    {LM_TYPE_INT64, BATCH, NULL, d->volume},
                    {LM_TYPE_INT64, BATCH, NULL, d->ts}};
  bench_push_cols(src, &d->schema, cols, BATCH);
}

/* mode 0: no checkpoints; 1: in-band barriers; 2: the pause. Rows/s. */
static double threaded_run(w1_data* d, int64_t rows, int mode, ckpt_timer* t) {
  char dir[] = "/tmp/lm_bench_ckpt_XXXXXX";
  laminar_db* db = open_durable(dir, "none", "2");
  laminar_error err;
  check(laminar_execute(
            db,
            "CREATE SOURCE trades (symbol VARCHAR NOT NULL, price DOUBLE, volume BIGINT,"
            " ts BIGINT, WATERMARK FOR ts AS ts) WITH (buffer_size = 64);"
            "CREATE STREAM w1 AS SELECT symbol, window_start,"
            " SUM(price * volume) / SUM(volume) AS vwap, COUNT(*) AS trades,"
            " MAX(price) AS hi, MIN(price) AS lo"
            " FROM trades GROUP BY symbol, tumble(ts, INTERVAL '1' SECOND)",
            &err),
        &err, "DDL");
  laminar_source* src;
  check(laminar_source_open(db, "trades", &src, &err), &err, "source");
  lm_durable_set_pause(db->dur, mode == 2);
  check(laminar_start(db, &err), &err, "start");
  memset(t, 0, sizeof *t);
  t->db = db;
  pthread_t th;
  if (mode != 0 && pthread_create(&th, NULL, every_100ms, t) != 0) exit(1);
  double t0 = now_s();
  for (int64_t b = 0; b * BATCH < rows; b++) w1_push(src, d, b);
  check(laminar_stop(db, &err), &err, "stop"); /* every pushed row processed */
  double secs = now_s() - t0;
  atomic_store(&t->stop, 1);
  if (mode != 0) pthread_join(th, NULL);
  close_durable(db, src, dir);
  return (double)((rows + BATCH - 1) / BATCH * BATCH) / secs;
}

static void threaded_checkpoints(int64_t rows) {
  static w1_data d;
  static ckpt_timer t;
  w1_init(&d);
  static const char* const names[] = {"off", "barrier", "pause"};
  for (int round = 0; round < 3; round++) {
    for (int mode = 0; mode < 3; mode++) {
      double rate = threaded_run(&d, rows, mode, &t);
      if (mode == 0) {
        printf(
            "RESULT checkpoint_threaded mode=off cores=2 rows=%lld rate=%.2f Mrows/s\n",
            (long long)rows, rate / 1e6);
      } else if (t.n > 0) {
        qsort(t.barrier_ns, (size_t)t.n, sizeof t.barrier_ns[0], cmp_i64);
        qsort(t.stall_ns, (size_t)t.n, sizeof t.stall_ns[0], cmp_i64);
        printf(
            "RESULT checkpoint_threaded mode=%s cores=2 rows=%lld rate=%.2f Mrows/s "
            "checkpoints=%d request_to_done median=%.1f us max=%.1f us "
            "reactor_pause median=%.1f us max=%.1f us\n",
            names[mode], (long long)rows, rate / 1e6, t.n,
            (double)t.barrier_ns[t.n / 2] / 1e3, (double)t.barrier_ns[t.n - 1] / 1e3,
            (double)t.stall_ns[t.n / 2] / 1e3, (double)t.stall_ns[t.n - 1] / 1e3);
      } else {
        printf(
            "RESULT checkpoint_threaded mode=%s cores=2 rows=%lld rate=%.2f Mrows/s "
            "checkpoints=0 (the run was shorter than 100 ms)\n",
            names[mode], (long long)rows, rate / 1e6);
      }
      fflush(stdout);
    }
  }
  lm_schema_free(&d.schema);
}

int main(int argc, char** argv) {
  int64_t max = argc > 1 ? (int64_t)strtod(argv[1], NULL) : 4000000;
  lm_schema schema;
  lm_schema_init_empty(&schema);
  lm_schema_add(&schema, "k", LM_TYPE_STRING, false);
  lm_schema_add(&schema, "v", LM_TYPE_DOUBLE, false);
  lm_schema_add(&schema, "ts", LM_TYPE_INT64, false);
  for (int k = ROUND_WINDOW; k <= ROUND_VIEW; k++) {
    for (int64_t groups = 100000; groups <= max; groups *= 4)
      round_of(&schema, groups, k);
  }
  sink_stalls(&schema);
  lm_schema_free(&schema);
  threaded_checkpoints(argc > 2 ? (int64_t)strtod(argv[2], NULL) : 4000000);
  return 0;
}
