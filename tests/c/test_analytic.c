/*
 * test_analytic.c -- window functions over streams through laminar.h (issue 21
 * item 6): LAG, LEAD, ROW_NUMBER, RANK, DENSE_RANK, FIRST_VALUE and
 * LAST_VALUE OVER (PARTITION BY symbol ORDER BY ts) over seeded random rows
 * (NULL keys and values, ties on time, disorder within the watermark delay,
 * rows behind it) in random batches, checked row by row against a brute-force
 * model of the SQL definition (ties in arrival order); the same after a
 * checkpoint and a restart of a durable database; late rows counted; errors
 * with their codes and positions. The DuckDB comparison is
 * tests/python/test_analytic.py.
 */
#define _GNU_SOURCE  // mkdtemp, nftw under -std=c17
#include "arrow_build.h"
#include "lm_test.h"
#include "lm_test_fs.h"

#include <stdio.h>
#include <string.h>

#define NROWS 600
#define DELAY 100
#define NONE INT64_MIN /* a NULL value in the model */

static const char* SYMS[] = {"A", "B", "C", "D\xc3\xa9"};

static const char* AN_DDL =
    "CREATE SOURCE trades (symbol VARCHAR, price DOUBLE, volume BIGINT, ts BIGINT,\n"
    "  WATERMARK FOR ts AS ts - INTERVAL '100' MILLISECOND);\n"
    "CREATE STREAM a AS SELECT price AS id, symbol, volume, ts,\n"
    "  LAG(volume, 2, -7) OVER (PARTITION BY symbol ORDER BY ts) AS lag2,\n"
    "  LEAD(volume) OVER (PARTITION BY symbol ORDER BY ts) AS lead1,\n"
    "  ROW_NUMBER() OVER (PARTITION BY symbol ORDER BY ts) AS rn,\n"
    "  RANK() OVER (PARTITION BY symbol ORDER BY ts) AS rk,\n"
    "  DENSE_RANK() OVER (PARTITION BY symbol ORDER BY ts) AS dr,\n"
    "  FIRST_VALUE(volume) OVER (PARTITION BY symbol ORDER BY ts) AS fv,\n"
    "  LAST_VALUE(volume) OVER (PARTITION BY symbol ORDER BY ts) AS lv,\n"
    "  SUM(volume) OVER (PARTITION BY symbol ORDER BY ts ROWS BETWEEN 2 PRECEDING AND\n"
    "    CURRENT ROW) AS s3,\n"
    "  COUNT(*) OVER (PARTITION BY symbol ORDER BY ts RANGE BETWEEN INTERVAL '50'\n"
    "    MILLISECOND PRECEDING AND CURRENT ROW) AS c50,\n"
    "  MIN(symbol) OVER (PARTITION BY symbol ORDER BY ts RANGE BETWEEN INTERVAL '50'\n"
    "    MILLISECOND PRECEDING AND CURRENT ROW) AS mn\n"
    "FROM trades;\n";

/* The input: rows in arrival order, cut into batches. */
typedef struct input {
  int sym[NROWS]; /* index into SYMS, -1 NULL */
  int64_t vol[NROWS];
  int64_t ts[NROWS];
  bool late[NROWS];
  int64_t pos[NROWS]; /* kept rows: the position in the partition (model) */
  int nbatch;
  int batch_end[NROWS];
  int64_t nlate;
} input;

#define NOUT 9 /* lag2, lead1, rn, rk, dr, fv, lv, s3, c50 */
static const char* OUT_NAMES[NOUT] = {"lag2", "lead1", "rn", "rk", "dr",
                                      "fv",   "lv",    "s3", "c50"};

typedef struct result {
  int seen[NROWS];
  int64_t v[NROWS][NOUT];
} result;

static uint64_t rng_next(uint64_t* s) {
  *s += 0x9e3779b97f4a7c15ull;
  uint64_t z = *s;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

static void positions(input* in);

static void make_input(uint64_t seed, input* in) {
  uint64_t s = seed;
  int64_t base = 1000;
  memset(in, 0, sizeof *in);
  for (int i = 0; i < NROWS; i++) {
    base += (int64_t)(rng_next(&s) % 4);
    in->sym[i] = (int)(rng_next(&s) % 5) - 1;
    in->vol[i] = rng_next(&s) % 6 == 0 ? NONE : (int64_t)(rng_next(&s) % 50);
    in->ts[i] = base + (int64_t)(rng_next(&s) % DELAY);
    if (rng_next(&s) % 40 == 0) in->ts[i] -= 3 * DELAY; /* behind, mostly late */
  }
  int at = 0;
  while (at < NROWS) {
    int size = 1 + (int)(rng_next(&s) % 60);
    at = at + size > NROWS ? NROWS : at + size;
    in->batch_end[in->nbatch++] = at;
  }
  /* Late: behind the watermark of the batches before the row's. */
  int64_t wm = INT64_MIN, top = INT64_MIN;
  at = 0;
  for (int b = 0; b < in->nbatch; b++) {
    for (int i = at; i < in->batch_end[b]; i++) {
      in->late[i] = wm != INT64_MIN && in->ts[i] < wm;
      in->nlate += in->late[i];
      if (in->ts[i] > top) top = in->ts[i];
    }
    at = in->batch_end[b];
    if (top - DELAY > wm) wm = top - DELAY;
  }
  positions(in);
}

/* Row j comes before row i in i's partition: (ts, arrival) order. */
static bool before(const input* in, int j, int i) {
  return in->ts[j] < in->ts[i] || (in->ts[j] == in->ts[i] && j < i);
}

/* Every kept row's position in its partition: 1 + the rows before it. */
static void positions(input* in) {
  for (int i = 0; i < NROWS; i++) {
    in->pos[i] = 1;
    for (int j = 0; j < NROWS; j++) {
      if (!in->late[i] && !in->late[j] && in->sym[j] == in->sym[i] && before(in, j, i))
        in->pos[i]++;
    }
  }
}

/* The kept row of i's partition at position p (1-based), -1 if none. */
static int at_position(const input* in, int i, int64_t p) {
  for (int j = 0; j < NROWS; j++) {
    if (!in->late[j] && in->sym[j] == in->sym[i] && in->pos[j] == p) return j;
  }
  return -1;
}

/* The model: every function's value for kept row i, by the SQL definition. */
static void model(const input* in, int i, int64_t out[NOUT]) {
  int64_t pos = 1, rank = 1, dense = 1, last = i;
  for (int j = 0; j < NROWS; j++) {
    if (in->late[j] || in->sym[j] != in->sym[i] || j == i) continue;
    if (before(in, j, i)) pos++;
    if (in->ts[j] < in->ts[i]) {
      rank++;
      bool first_of_ts = true; /* count distinct earlier times once */
      for (int k = 0; k < j; k++) {
        if (!in->late[k] && in->sym[k] == in->sym[i] && in->ts[k] == in->ts[j])
          first_of_ts = false;
      }
      dense += first_of_ts;
    }
    if (in->ts[j] == in->ts[i] && j > last) last = j;
  }
  int lag = pos > 2 ? at_position(in, i, pos - 2) : -1;
  int lead = at_position(in, i, pos + 1);
  int first = at_position(in, i, 1);
  out[0] = lag >= 0 ? in->vol[lag] : -7;
  out[1] = lead >= 0 ? in->vol[lead] : NONE;
  out[2] = pos;
  out[3] = rank;
  out[4] = dense;
  out[5] = in->vol[first];
  out[6] = in->vol[last];
  /* SUM over the row and the two before it; COUNT(*) over [t - 50, t]. */
  int64_t sum = 0, nsum = 0, c50 = 0;
  for (int64_t p = pos - 2 < 1 ? 1 : pos - 2; p <= pos; p++) {
    int j = at_position(in, i, p);
    if (in->vol[j] != NONE) {
      sum += in->vol[j];
      nsum++;
    }
  }
  for (int j = 0; j < NROWS; j++) {
    if (!in->late[j] && in->sym[j] == in->sym[i] && in->ts[j] <= in->ts[i] &&
        in->ts[j] >= in->ts[i] - 50)
      c50++;
  }
  out[7] = nsum > 0 ? sum : NONE;
  out[8] = c50;
}

static int push_batch(laminar_source* src, const input* in, int lo, int hi) {
  trade_row rows[NROWS];
  for (int i = lo; i < hi; i++) {
    rows[i - lo] = (trade_row){
        in->sym[i] < 0 ? NULL : SYMS[in->sym[i]], (double)i,          false,
        in->vol[i] == NONE ? 0 : in->vol[i],      in->vol[i] == NONE, in->ts[i]};
  }
  struct ArrowArray array;
  struct ArrowSchema schema;
  CHECK(build_trades(rows, hi - lo, lo % 2 == 1, &array, &schema) == 0);
  laminar_error err;
  CHECK_CODE(laminar_source_push(src, &array, &schema, &err), LAMINAR_OK, &err);
  schema.release(&schema);
  return 0;
}

/* Record the rows of one output array (id, ..., the NOUT columns). */
static int take_rows(result* res, struct ArrowArray* array, struct ArrowSchema* schema) {
  result_view rv = {.array = *array, .schema = *schema};
  array->release = NULL;
  schema->release = NULL;
  int rc = result_view_init(&rv);
  int64_t id_col = result_col_index(&rv, "id");
  int64_t cols[NOUT];
  for (int c = 0; c < NOUT; c++) {
    cols[c] = result_col_index(&rv, OUT_NAMES[c]);
    if (cols[c] < 0) rc = 1;
  }
  int64_t sym_col = result_col_index(&rv, "symbol"), mn_col = result_col_index(&rv, "mn");
  if (sym_col < 0 || mn_col < 0) rc = 1;
  for (int64_t r = 0; rc == 0 && id_col >= 0 && r < rv.array.length; r++) {
    int id = (int)ArrowArrayViewGetDoubleUnsafe(rv.view.children[id_col], r);
    if (id < 0 || id >= NROWS) {
      rc = 1;
      break;
    }
    /* MIN(symbol) over a frame of one partition: the partition's symbol. */
    const struct ArrowArrayView* sv = rv.view.children[sym_col];
    const struct ArrowArrayView* mv = rv.view.children[mn_col];
    if (ArrowArrayViewIsNull(sv, r) != ArrowArrayViewIsNull(mv, r)) rc = 1;
    if (!ArrowArrayViewIsNull(sv, r)) {
      struct ArrowStringView a = ArrowArrayViewGetStringUnsafe(sv, r);
      struct ArrowStringView b = ArrowArrayViewGetStringUnsafe(mv, r);
      if (a.size_bytes != b.size_bytes ||
          memcmp(a.data, b.data, (size_t)a.size_bytes) != 0)
        rc = 1;
    }
    res->seen[id]++;
    for (int c = 0; c < NOUT; c++) {
      const struct ArrowArrayView* v = rv.view.children[cols[c]];
      res->v[id][c] =
          ArrowArrayViewIsNull(v, r) ? NONE : ArrowArrayViewGetIntUnsafe(v, r);
    }
  }
  if (id_col < 0) rc = 1;
  result_view_free(&rv);
  return rc;
}

/* Every batch queued on sub to take(arg, ...), which owns it. */
typedef int (*take_fn)(void* arg, struct ArrowArray* array, struct ArrowSchema* schema);

static int drain_with(laminar_subscription* sub, take_fn take, void* arg) {
  for (;;) {
    struct ArrowArray array;
    struct ArrowSchema schema;
    laminar_error err;
    CHECK_CODE(laminar_subscription_next(sub, 0, &array, &schema, &err), LAMINAR_OK,
               &err);
    if (array.release == NULL) return 0;
    CHECK(take(arg, &array, &schema) == 0);
  }
}

static int take_result(void* arg, struct ArrowArray* array, struct ArrowSchema* schema) {
  return take_rows(arg, array, schema);
}

static int drain(laminar_subscription* sub, result* res) {
  return drain_with(sub, take_result, res);
}

/* Every kept row once, with the model's values; no late row. */
static int check_result(const input* in, const result* res, uint64_t seed) {
  for (int i = 0; i < NROWS; i++) {
    if (in->late[i]) {
      CHECK(res->seen[i] == 0);
      continue;
    }
    if (res->seen[i] != 1) {
      fprintf(stderr, "row %d seen %d times (seed %llu)\n", i, res->seen[i],
              (unsigned long long)seed);
      return 1;
    }
    int64_t want[NOUT];
    model(in, i, want);
    for (int c = 0; c < NOUT; c++) {
      if (res->v[i][c] != want[c]) {
        fprintf(stderr, "row %d %s: got %lld, want %lld (seed %llu)\n", i, OUT_NAMES[c],
                (long long)res->v[i][c], (long long)want[c], (unsigned long long)seed);
        return 1;
      }
    }
  }
  return 0;
}

static input g_in;
static result g_res;

/* In memory: every function equals the model; late rows counted. */
static int test_functions_match_model(void) {
  uint64_t seed = lm_test_seed();
  for (uint64_t round = 0; round < 4; round++) {
    make_input(seed + round, &g_in);
    memset(&g_res, 0, sizeof g_res);
    laminar_db* db;
    laminar_error err;
    CHECK_CODE(laminar_open(NULL, &db, &err), LAMINAR_OK, &err);
    CHECK_CODE(laminar_execute(db, AN_DDL, &err), LAMINAR_OK, &err);
    laminar_subscription* sub;
    CHECK_CODE(laminar_subscribe(db, "a", &sub, &err), LAMINAR_OK, &err);
    laminar_source* src;
    CHECK_CODE(laminar_source_open(db, "trades", &src, &err), LAMINAR_OK, &err);
    int at = 0;
    for (int b = 0; b < g_in.nbatch; b++) {
      CHECK(push_batch(src, &g_in, at, g_in.batch_end[b]) == 0);
      at = g_in.batch_end[b];
      if (b % 3 == 0) {
        CHECK_CODE(laminar_run_until_idle(db, &err), LAMINAR_OK, &err);
        CHECK(drain(sub, &g_res) == 0);
      }
    }
    CHECK_CODE(laminar_source_watermark(src, INT64_MAX, &err), LAMINAR_OK, &err);
    CHECK_CODE(laminar_run_until_idle(db, &err), LAMINAR_OK, &err);
    CHECK(drain(sub, &g_res) == 0);
    int64_t late = -1;
    CHECK_CODE(laminar_stream_late_rows(db, "a", &late, &err), LAMINAR_OK, &err);
    EXPECT(late == g_in.nlate);
    CHECK(check_result(&g_in, &g_res, seed + round) == 0);
    laminar_subscription_close(sub);
    laminar_source_close(src);
    laminar_close(db);
  }
  return 0;
}

static laminar_code open_dir(const char* dir, const char* cores, laminar_db** db,
                             laminar_error* err) {
  laminar_config* cfg;
  laminar_code rc = laminar_config_create(&cfg);
  if (rc != LAMINAR_OK) return rc;
  if ((rc = laminar_config_set(cfg, "data_dir", dir, err)) == LAMINAR_OK &&
      (rc = laminar_config_set(cfg, "wal_mode", "sync", err)) == LAMINAR_OK &&
      (rc = laminar_config_set(cfg, "checkpoint_interval", "1 hour", err)) ==
          LAMINAR_OK &&
      (rc = laminar_config_set(cfg, "cores", cores, err)) == LAMINAR_OK)
    rc = laminar_open(cfg, db, err);
  laminar_config_destroy(cfg);
  return rc;
}

/* Read the materialized view's rows into g_res. */
static int read_view(laminar_db* db) {
  struct ArrowArrayStream st;
  laminar_error err;
  CHECK_CODE(laminar_query(db, "SELECT * FROM av", &st, &err), LAMINAR_OK, &err);
  int rc = 0;
  for (;;) {
    struct ArrowSchema schema;
    struct ArrowArray array;
    if (st.get_schema(&st, &schema) != 0) {
      rc = 1;
      break;
    }
    if (st.get_next(&st, &array) != 0) {
      schema.release(&schema);
      rc = 1;
      break;
    }
    if (array.release == NULL) {
      schema.release(&schema);
      break;
    }
    if (take_rows(&g_res, &array, &schema) != 0) rc = 1;
  }
  st.release(&st);
  return rc;
}

/* Checkpoint in the middle, close, reopen (the snapshot restored, the WAL
 * after it replayed), go on: the uninterrupted answer. With 2 cores the
 * stream is routed by PARTITION BY; a restart with another number of cores
 * splits or merges the saved partitions. */
static int restart_with(const char* before, const char* after) {
  uint64_t seed = lm_test_seed();
  make_input(seed + 100, &g_in);
  memset(&g_res, 0, sizeof g_res);
  char dir[256];
  CHECK(lm_test_mkdtemp(dir, sizeof dir, "analytic") == 0);
  char ddl[2048];
  snprintf(ddl, sizeof ddl, "%sCREATE MATERIALIZED VIEW av AS SELECT * FROM a;", AN_DDL);
  laminar_db* db;
  laminar_error err;
  CHECK_CODE(open_dir(dir, before, &db, &err), LAMINAR_OK, &err);
  CHECK_CODE(laminar_execute(db, ddl, &err), LAMINAR_OK, &err);
  laminar_source* src;
  CHECK_CODE(laminar_source_open(db, "trades", &src, &err), LAMINAR_OK, &err);
  int half = g_in.nbatch / 2, at = 0;
  for (int b = 0; b < half; b++) {
    CHECK(push_batch(src, &g_in, at, g_in.batch_end[b]) == 0);
    at = g_in.batch_end[b];
    CHECK_CODE(laminar_run_until_idle(db, &err), LAMINAR_OK, &err);
    if (b == half / 2) CHECK_CODE(laminar_checkpoint(db, &err), LAMINAR_OK, &err);
  }
  laminar_source_close(src);
  CHECK_CODE(laminar_close_v2(db, &err), LAMINAR_OK, &err);
  CHECK_CODE(open_dir(dir, after, &db, &err), LAMINAR_OK, &err);
  CHECK_CODE(laminar_source_open(db, "trades", &src, &err), LAMINAR_OK, &err);
  for (int b = half; b < g_in.nbatch; b++) {
    CHECK(push_batch(src, &g_in, at, g_in.batch_end[b]) == 0);
    at = g_in.batch_end[b];
    CHECK_CODE(laminar_run_until_idle(db, &err), LAMINAR_OK, &err);
  }
  CHECK_CODE(laminar_source_watermark(src, INT64_MAX, &err), LAMINAR_OK, &err);
  CHECK_CODE(laminar_run_until_idle(db, &err), LAMINAR_OK, &err);
  CHECK(read_view(db) == 0);
  int64_t late = -1;
  CHECK_CODE(laminar_stream_late_rows(db, "a", &late, &err), LAMINAR_OK, &err);
  EXPECT(late == g_in.nlate);
  laminar_source_close(src);
  laminar_close(db);
  lm_test_rmtree(dir);
  return check_result(&g_in, &g_res, seed + 100);
}

static int test_restart_gives_the_same_answer(void) {
  static const char* const cores[][2] = {{"1", "1"}, {"2", "2"}, {"2", "1"}, {"1", "2"}};
  for (size_t i = 0; i < sizeof cores / sizeof cores[0]; i++) {
    fprintf(stderr, "cores %s then %s\n", cores[i][0], cores[i][1]);
    CHECK(restart_with(cores[i][0], cores[i][1]) == 0);
  }
  return 0;
}

/* Errors: their codes and where they point. */
static int test_errors(void) {
  laminar_db* db;
  laminar_error err;
  CHECK_CODE(laminar_open(NULL, &db, &err), LAMINAR_OK, &err);
  CHECK_CODE(laminar_execute(db, AN_DDL, &err), LAMINAR_OK, &err);
  static const struct {
    const char* sql;
    laminar_code code;
    int32_t line, column;
  } cases[] = {
      {"CREATE STREAM e AS SELECT LAG(volume) OVER (ORDER BY price) FROM trades",
       LAMINAR_ERR_SQL_UNSUPPORTED, 1, 54},
      {"CREATE STREAM e AS SELECT RANK() OVER (PARTITION BY symbol\n"
       "  ORDER BY ts RANGE BETWEEN 5 PRECEDING AND CURRENT ROW) FROM trades",
       LAMINAR_ERR_SQL_UNSUPPORTED, 0, 0},
      {"CREATE STREAM e AS SELECT LAST_VALUE(volume) OVER (PARTITION BY symbol\n"
       "  ORDER BY ts ROWS BETWEEN 1 PRECEDING AND CURRENT ROW) FROM trades",
       LAMINAR_ERR_SQL_UNSUPPORTED, 2, 15},
      {"CREATE STREAM e AS SELECT LEAD(volume, 1.5) OVER (ORDER BY ts) FROM trades",
       LAMINAR_ERR_SQL_FUNCTION_ARGS, 1, 40},
      {"CREATE STREAM e AS SELECT symbol FROM trades WHERE LAG(volume) OVER (ORDER BY "
       "ts) > 1",
       LAMINAR_ERR_SQL_UNSUPPORTED, 1, 52},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    laminar_code rc = laminar_execute(db, cases[i].sql, &err);
    if (cases[i].line == 0) { /* RANK ignores its frame, as in DuckDB */
      CHECK_CODE(rc, LAMINAR_OK, &err);
      CHECK_CODE(laminar_execute(db, "DROP STREAM e", &err), LAMINAR_OK, &err);
      continue;
    }
    if (rc != cases[i].code || err.line != cases[i].line ||
        err.column != cases[i].column) {
      fprintf(stderr, "case %zu: code %d at %d:%d (%s)\n", i, (int)rc, (int)err.line,
              (int)err.column, err.message);
      return 1;
    }
  }
  laminar_close(db);
  return 0;
}

/* ---- Top-N per window ------------------------------------------------------------ */

#define TOP_SIZE 50
#define MAXWIN 512

static const char* TOP_DDL =
    "CREATE SOURCE trades (symbol VARCHAR, price DOUBLE, volume BIGINT, ts BIGINT,\n"
    "  WATERMARK FOR ts AS ts - INTERVAL '100' MILLISECOND);\n"
    "CREATE STREAM w AS SELECT symbol, window_start, SUM(volume) AS sv FROM trades\n"
    "  GROUP BY symbol, tumble(ts, INTERVAL '50' MILLISECOND);\n"
    "CREATE STREAM top AS SELECT * FROM (SELECT window_start, symbol, sv,\n"
    "  ROW_NUMBER() OVER (PARTITION BY window_start ORDER BY sv DESC, symbol) AS rn\n"
    "  FROM w) WHERE rn <= 2;\n";

static int64_t floor50(int64_t t) {
  return t >= 0 ? t / 50 * 50 : -((-t + 49) / 50) * 50;
}

/* The model's window sums: sum[w][s] (NONE: no value), has[w][s]; s = symbol + 1
 * (0: NULL); windows from w0. */
typedef struct top_model {
  int64_t w0;
  int64_t sum[MAXWIN][5];
  bool has[MAXWIN][5];
  int64_t got_rn[MAXWIN][5]; /* the stream's rn, 0: not emitted */
} top_model;

static top_model g_top;

/* Symbol order: A < B < C < D..., NULL last (index 0 sorts after the others). */
static int sym_rank(int s) { return s == 0 ? 99 : s; }

/* Whether (window w) group a comes before group b: sv DESC NULLS LAST, symbol. */
static bool top_before(const top_model* m, int64_t w, int a, int b) {
  int64_t x = m->sum[w][a], y = m->sum[w][b];
  if (x != y) {
    if (x == NONE || y == NONE) return y == NONE;
    return x > y;
  }
  return sym_rank(a) < sym_rank(b);
}

/* The rn of each row of one output batch into m->got_rn. */
static int top_rows(void* arg, struct ArrowArray* array, struct ArrowSchema* schema) {
  top_model* m = arg;
  {
    result_view rv = {.array = *array, .schema = *schema};
    array->release = NULL;
    schema->release = NULL;
    CHECK(result_view_init(&rv) == 0);
    int64_t ws = result_col_index(&rv, "window_start"),
            sy = result_col_index(&rv, "symbol"), rn = result_col_index(&rv, "rn");
    CHECK(ws >= 0 && sy >= 0 && rn >= 0);
    for (int64_t r = 0; r < rv.array.length; r++) {
      int64_t w = (ArrowArrayViewGetIntUnsafe(rv.view.children[ws], r) - m->w0) / 50;
      int s = 0;
      if (!ArrowArrayViewIsNull(rv.view.children[sy], r)) {
        struct ArrowStringView v = ArrowArrayViewGetStringUnsafe(rv.view.children[sy], r);
        for (int k = 0; k < 4; k++) {
          if ((size_t)v.size_bytes == strlen(SYMS[k]) &&
              memcmp(v.data, SYMS[k], (size_t)v.size_bytes) == 0)
            s = k + 1;
        }
        CHECK(s > 0);
      }
      CHECK(w >= 0 && w < MAXWIN && m->got_rn[w][s] == 0);
      m->got_rn[w][s] = ArrowArrayViewGetIntUnsafe(rv.view.children[rn], r);
    }
    result_view_free(&rv);
  }
  return 0;
}

/* The two largest window sums per window, ranked; the window stream's own
 * late rows (a window closed) left out. */
static int test_top_n_per_window(void) {
  uint64_t seed = lm_test_seed();
  make_input(seed + 200, &g_in);
  top_model* m = &g_top;
  memset(m, 0, sizeof *m);
  m->w0 = INT64_MAX;
  for (int i = 0; i < NROWS; i++)
    if (floor50(g_in.ts[i]) < m->w0) m->w0 = floor50(g_in.ts[i]);
  int64_t wm = INT64_MIN, top = INT64_MIN;
  int at = 0;
  for (int b = 0; b < g_in.nbatch; b++) {
    for (int i = at; i < g_in.batch_end[b]; i++) {
      int64_t w = (floor50(g_in.ts[i]) - m->w0) / 50;
      CHECK(w < MAXWIN);
      if (wm != INT64_MIN && floor50(g_in.ts[i]) + 50 <= wm) continue; /* late */
      int s = g_in.sym[i] + 1;
      if (!m->has[w][s]) m->sum[w][s] = NONE;
      m->has[w][s] = true;
      if (g_in.vol[i] != NONE)
        m->sum[w][s] = (m->sum[w][s] == NONE ? 0 : m->sum[w][s]) + g_in.vol[i];
    }
    for (int i = at; i < g_in.batch_end[b]; i++)
      if (g_in.ts[i] > top) top = g_in.ts[i];
    at = g_in.batch_end[b];
    if (top - DELAY > wm) wm = top - DELAY;
  }
  laminar_db* db;
  laminar_error err;
  CHECK_CODE(laminar_open(NULL, &db, &err), LAMINAR_OK, &err);
  CHECK_CODE(laminar_execute(db, TOP_DDL, &err), LAMINAR_OK, &err);
  laminar_subscription* sub;
  CHECK_CODE(laminar_subscribe(db, "top", &sub, &err), LAMINAR_OK, &err);
  laminar_source* src;
  CHECK_CODE(laminar_source_open(db, "trades", &src, &err), LAMINAR_OK, &err);
  at = 0;
  for (int b = 0; b < g_in.nbatch; b++) {
    CHECK(push_batch(src, &g_in, at, g_in.batch_end[b]) == 0);
    at = g_in.batch_end[b];
    CHECK_CODE(laminar_run_until_idle(db, &err), LAMINAR_OK, &err);
    CHECK(drain_with(sub, top_rows, m) == 0);
  }
  CHECK_CODE(laminar_source_watermark(src, INT64_MAX, &err), LAMINAR_OK, &err);
  CHECK_CODE(laminar_run_until_idle(db, &err), LAMINAR_OK, &err);
  CHECK(drain_with(sub, top_rows, m) == 0);
  for (int64_t w = 0; w < MAXWIN; w++) {
    for (int s = 0; s < 5; s++) {
      int64_t rank = 0;
      if (m->has[w][s]) {
        rank = 1;
        for (int o = 0; o < 5; o++)
          if (o != s && m->has[w][o] && top_before(m, w, o, s)) rank++;
      }
      int64_t want = rank <= 2 ? rank : 0;
      if (m->got_rn[w][s] != want) {
        fprintf(stderr, "window %lld symbol %d: rn %lld, want %lld (seed %llu)\n",
                (long long)(m->w0 + w * 50), s, (long long)m->got_rn[w][s],
                (long long)want, (unsigned long long)seed + 200);
        return 1;
      }
    }
  }
  laminar_subscription_close(sub);
  laminar_source_close(src);
  laminar_close(db);
  return 0;
}

static const lm_test_case cases[] = {
    {"functions_match_model", test_functions_match_model},
    {"restart_gives_the_same_answer", test_restart_gives_the_same_answer},
    {"top_n_per_window", test_top_n_per_window},
    {"errors", test_errors},
    {NULL, NULL},
};

int main(int argc, char** argv) { return lm_test_main(argc, argv, cases); }
