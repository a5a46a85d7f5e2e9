/*
 * test_udtf.c -- table functions through laminar.h
 * (laminar_table_function_register / laminar_config_table_function_register,
 * SQL `FROM s, f(s.x)` / `CROSS JOIN LATERAL`), in the Release and the
 * ASan+UBSan builds. The function under test:
 *   explode(n BIGINT, s VARCHAR) -> TABLE(i BIGINT, piece VARCHAR)
 *     n rows per input row (i = 0..n-1, piece = s): zero rows for n <= 0,
 *     none for a NULL argument (not CALLED_ON_NULL)
 * over seeded random rows (LAMINAR_TEST_SEED replays), checked against
 * what the rows give computed here:
 *  - a tumbling window over its rows, GROUP BY an input column, cores 1, 2;
 *  - beside an interval JOIN (FROM a JOIN b ON ..., f(b.x) and CROSS JOIN
 *    LATERAL): over the join's rows, checked against a nested loop here;
 *  - a checkpoint and restart in the middle (the config registers it), and a
 *    reopen whose config lacks it (LDB-5002 naming it);
 *  - results that break the contract (parent index out of range or going
 *    down, a column of another type, a missing column) and a failing
 *    callback: 3011 / 3010 naming the stream and the function, nothing of
 *    the batch emitted, the stream going on;
 *  - registration errors, SHOW FUNCTIONS, DROP while used, a call as a
 *    scalar, the built-ins' argument errors and generate_series's step 0.
 */
#define _GNU_SOURCE  // mkdtemp, nftw under -std=c17 (lm_test_fs.h)
#include "arrow_build.h"
#include "laminar.h"
#include "lm_test.h"
#include "lm_test_fs.h"
#include "udf_util.h"

/* ---- the function ------------------------------------------------------------------ */

typedef enum tf_mode {
  TF_OK = 0,
  TF_FAIL,         /* returns 1 with a message */
  TF_PARENT_RANGE, /* the last output row names a parent past the call's rows */
  TF_PARENT_DOWN,  /* parents in descending order */
  TF_WRONG_TYPE,   /* column i as float64 */
  TF_MISSING_COL   /* no piece column */
} tf_mode;

typedef struct tf_user {
  tf_mode mode;
  int destroyed;
  int64_t calls;
} tf_user;

static void destroy_user(void* user) { ((tf_user*)user)->destroyed++; }

static int explode(void* user, const struct ArrowArray* args,
                   const struct ArrowSchema* args_schema, struct ArrowArray* out,
                   struct ArrowSchema* out_schema, char* error, size_t cap) {
  (void)args_schema;
  tf_user* u = user;
  u->calls++;
  if (u->mode == TF_FAIL) {
    snprintf(error, cap, "the model refused row 0");
    return 1;
  }
  int ncols = u->mode == TF_MISSING_COL ? 2 : 3;
  ArrowSchemaInit(out_schema);
  if (ArrowSchemaSetTypeStruct(out_schema, ncols) != NANOARROW_OK ||
      ArrowSchemaSetType(out_schema->children[0], NANOARROW_TYPE_INT64) != NANOARROW_OK ||
      ArrowSchemaSetName(out_schema->children[0], "_row") != NANOARROW_OK ||
      ArrowSchemaSetType(out_schema->children[1], u->mode == TF_WRONG_TYPE
                                                      ? NANOARROW_TYPE_DOUBLE
                                                      : NANOARROW_TYPE_INT64) !=
          NANOARROW_OK ||
      ArrowSchemaSetName(out_schema->children[1], "i") != NANOARROW_OK)
    return 1;
  if (ncols == 3 &&
      (ArrowSchemaSetType(out_schema->children[2], NANOARROW_TYPE_STRING) !=
           NANOARROW_OK ||
       ArrowSchemaSetName(out_schema->children[2], "piece") != NANOARROW_OK))
    return 1;
  if (ArrowArrayInitFromSchema(out, out_schema, NULL) != NANOARROW_OK ||
      ArrowArrayStartAppending(out) != NANOARROW_OK)
    return 1;
  const struct ArrowArray* na = args->children[0];
  const struct ArrowArray* sa = args->children[1];
  const int32_t* offs = (const int32_t*)sa->buffers[1] + sa->offset;
  const char* bytes = sa->buffers[2];
  int64_t len = args->length;
  for (int64_t k = 0; k < len; k++) {
    int64_t r = u->mode == TF_PARENT_DOWN ? len - 1 - k : k;
    int64_t n = ((const int64_t*)na->buffers[1])[na->offset + r];
    struct ArrowStringView s = {bytes + offs[r], offs[r + 1] - offs[r]};
    for (int64_t i = 0; i < n; i++) {
      int64_t parent = u->mode == TF_PARENT_RANGE && k == len - 1 ? len : r;
      int rc = ArrowArrayAppendInt(out->children[0], parent);
      if (rc == NANOARROW_OK) {
        rc = u->mode == TF_WRONG_TYPE
                 ? ArrowArrayAppendDouble(out->children[1], (double)i)
                 : ArrowArrayAppendInt(out->children[1], i);
      }
      if (rc == NANOARROW_OK && ncols == 3)
        rc = ArrowArrayAppendString(out->children[2], s);
      if (rc == NANOARROW_OK) rc = ArrowArrayFinishElement(out);
      if (rc != NANOARROW_OK) return 1;
    }
  }
  return ArrowArrayFinishBuildingDefault(out, NULL) != NANOARROW_OK;
}

/* The declared columns: i BIGINT, piece VARCHAR (a struct schema). */
static int columns(struct ArrowSchema* s) {
  ArrowSchemaInit(s);
  if (ArrowSchemaSetTypeStruct(s, 2) != NANOARROW_OK ||
      ArrowSchemaSetType(s->children[0], NANOARROW_TYPE_INT64) != NANOARROW_OK ||
      ArrowSchemaSetName(s->children[0], "i") != NANOARROW_OK ||
      ArrowSchemaSetType(s->children[1], NANOARROW_TYPE_STRING) != NANOARROW_OK ||
      ArrowSchemaSetName(s->children[1], "piece") != NANOARROW_OK)
    return 1;
  return 0;
}

static const char* const k_args[] = {"l", "u"};

/* Register explode in db (or, db NULL, in cfg). */
static laminar_code register_explode(laminar_db* db, laminar_config* cfg, tf_user* u,
                                     laminar_error* err) {
  struct ArrowSchema cols;
  if (columns(&cols) != 0) return LAMINAR_ERR_NOMEM;
  laminar_code rc =
      db != NULL
          ? laminar_table_function_register(db, "explode", k_args, 2, &cols, explode, u,
                                            destroy_user, 0, err)
          : laminar_config_table_function_register(cfg, "explode", k_args, 2, &cols,
                                                   explode, u, destroy_user, 0, err);
  cols.release(&cols);
  return rc;
}

/* ---- what the rows give ---------------------------------------------------------- */

enum { NSYM = 4, NWIN = 64, N = 2000 };
static const char* const k_syms[NSYM] = {"AAPL", "MSFT", "ÄÖÜ", "x"};

/* Per symbol and 100 ms window: output rows and the sum of i. */
typedef struct expect {
  int64_t n[NSYM][NWIN], si[NSYM][NWIN];
  int64_t seen[NSYM][NWIN];
  int64_t rows;
} expect;

static int sym_index(const char* s, int64_t len) {
  for (int k = 0; k < NSYM; k++) {
    if ((int64_t)strlen(k_syms[k]) == len && memcmp(k_syms[k], s, (size_t)len) == 0)
      return k;
  }
  return -1;
}

/* Rows with ts r * 3, volume 0..99, symbol NULL one time in 9. */
static void make_rows(uint64_t seed, trade_row* rows, expect* e) {
  uint64_t rng = seed | 1;
  random_rows(&rng, rows, N, 0);
  memset(e, 0, sizeof *e);
  for (int64_t r = 0; r < N; r++) {
    rows[r].ts = r * 3;
    if (rng_next(&rng) % 9 == 0) rows[r].symbol = NULL;
    int64_t n = rows[r].volume % 4;
    if (rows[r].symbol == NULL || n == 0) continue;
    int k = sym_index(rows[r].symbol, (int64_t)strlen(rows[r].symbol));
    e->n[k][rows[r].ts / 100] += n;
    e->si[k][rows[r].ts / 100] += n * (n - 1) / 2;
  }
}

static const char* k_window_stream =
    "CREATE STREAM w AS SELECT symbol, window_start, COUNT(*) AS n, SUM(e.i) AS si, "
    "MIN(e.piece) AS mp FROM trades, explode(trades.volume % 4, symbol) AS e "
    "GROUP BY symbol, tumble(ts, INTERVAL '100' MILLISECOND) EMIT ON WINDOW CLOSE";

static int check_window_row(void* arg, const result_view* rv, int64_t r) {
  expect* e = arg;
  struct ArrowStringView sym = ArrowArrayViewGetStringUnsafe(col(rv, "symbol"), r);
  struct ArrowStringView mp = ArrowArrayViewGetStringUnsafe(col(rv, "mp"), r);
  int k = sym_index(sym.data, sym.size_bytes);
  int64_t w = ArrowArrayViewGetIntUnsafe(col(rv, "window_start"), r) / 100;
  CHECK(k >= 0 && w >= 0 && w < NWIN);
  CHECK(mp.size_bytes == sym.size_bytes &&
        memcmp(mp.data, sym.data, (size_t)sym.size_bytes) == 0);
  int64_t n = ArrowArrayViewGetIntUnsafe(col(rv, "n"), r);
  int64_t si = ArrowArrayViewGetIntUnsafe(col(rv, "si"), r);
  if (n != e->n[k][w] || si != e->si[k][w]) {
    fprintf(stderr, "%s window %lld: n %lld si %lld, expected %lld %lld\n", k_syms[k],
            (long long)w, (long long)n, (long long)si, (long long)e->n[k][w],
            (long long)e->si[k][w]);
    return 1;
  }
  e->seen[k][w]++;
  e->rows++;
  return 0;
}

/* Every expected (symbol, window) seen exactly once. */
static int all_seen(const expect* e) {
  for (int k = 0; k < NSYM; k++) {
    for (int w = 0; w < NWIN; w++) CHECK(e->seen[k][w] == (e->n[k][w] > 0 ? 1 : 0));
  }
  return 0;
}

/* ---- windows, cores 1 and 2 ----------------------------------------------------- */

static int run_window(int cores, uint64_t seed) {
  laminar_config* cfg;
  laminar_error err;
  CHECK_CODE(laminar_config_create(&cfg), LAMINAR_OK, NULL);
  CHECK_CODE(laminar_config_set(cfg, "cores", cores == 1 ? "1" : "2", &err), LAMINAR_OK,
             &err);
  tf_user u = {0};
  CHECK_CODE(register_explode(NULL, cfg, &u, &err), LAMINAR_OK, &err);
  laminar_db* db;
  CHECK_CODE(laminar_open(cfg, &db, &err), LAMINAR_OK, &err);
  laminar_config_destroy(cfg);
  CHECK_CODE(laminar_execute(db, k_source, &err), LAMINAR_OK, &err);
  CHECK_CODE(laminar_execute(db, k_window_stream, &err), LAMINAR_OK, &err);
  laminar_subscription* sub;
  CHECK_CODE(laminar_subscribe(db, "w", &sub, &err), LAMINAR_OK, &err);
  laminar_source* src;
  CHECK_CODE(laminar_source_open(db, "trades", &src, &err), LAMINAR_OK, &err);
  static trade_row rows[N];
  static expect e;
  make_rows(seed, rows, &e);
  for (int64_t at = 0; at < N; at += 100) CHECK(push_rows(src, rows + at, 100) == 0);
  CHECK_CODE(laminar_source_push_watermark(src, INT64_MAX, &err), LAMINAR_OK, &err);
  CHECK_CODE(laminar_run_until_idle(db, &err), LAMINAR_OK, &err);
  int64_t got;
  CHECK(drain(sub, check_window_row, &e, &got) == 0);
  CHECK(all_seen(&e) == 0);
  EXPECT(got > 0 && u.calls > 0);
  laminar_subscription_close(sub);
  laminar_source_close(src);
  CHECK_CODE(laminar_close(db), LAMINAR_OK, NULL);
  EXPECT(u.destroyed == 1);
  return 0;
}

static int test_window_cores(void) {
  uint64_t seed = lm_test_seed();
  CHECK(run_window(1, seed) == 0);
  CHECK(run_window(2, seed) == 0);
  return 0;
}

/* ---- checkpoint and restart -------------------------------------------------------- */

static int test_checkpoint_restart(void) {
  char dir[128];
  CHECK(lm_test_mkdtemp(dir, sizeof dir, "lm_test_udtf_") == 0);
  laminar_config* cfg;
  laminar_error err;
  CHECK(durable_config(dir, &cfg) == 0);
  tf_user u = {0};
  CHECK_CODE(register_explode(NULL, cfg, &u, &err), LAMINAR_OK, &err);
  laminar_db* db;
  CHECK_CODE(laminar_open(cfg, &db, &err), LAMINAR_OK, &err);
  CHECK_CODE(laminar_execute(db, k_source, &err), LAMINAR_OK, &err);
  CHECK_CODE(laminar_execute(db, k_window_stream, &err), LAMINAR_OK, &err);
  static trade_row rows[N];
  static expect e;
  make_rows(lm_test_seed() * 7, rows, &e);
  laminar_source* src;
  CHECK_CODE(laminar_source_open(db, "trades", &src, &err), LAMINAR_OK, &err);
  /* Half, a checkpoint in the middle of a window, then rows only in the WAL. */
  CHECK(push_rows(src, rows, N / 2 + 17) == 0);
  CHECK_CODE(laminar_run_until_idle(db, &err), LAMINAR_OK, &err);
  CHECK_CODE(laminar_checkpoint(db, &err), LAMINAR_OK, &err);
  CHECK(push_rows(src, rows + N / 2 + 17, 20) == 0);
  laminar_source_close(src);
  CHECK_CODE(laminar_close(db), LAMINAR_OK, NULL);

  /* Without the function the stored stream does not bind: a clear refusal. */
  laminar_config* bare;
  CHECK(durable_config(dir, &bare) == 0);
  memset(&err, 0, sizeof err);
  CHECK_CODE(laminar_open(bare, &db, &err), LAMINAR_ERR_RECOVERY, &err);
  EXPECT(strstr(err.message, "explode") != NULL);
  laminar_config_destroy(bare);

  CHECK_CODE(laminar_open(cfg, &db, &err), LAMINAR_OK, &err);
  laminar_subscription* sub;
  CHECK_CODE(laminar_subscribe(db, "w", &sub, &err), LAMINAR_OK, &err);
  CHECK_CODE(laminar_source_open(db, "trades", &src, &err), LAMINAR_OK, &err);
  CHECK(push_rows(src, rows + N / 2 + 37, N - N / 2 - 37) == 0);
  CHECK_CODE(laminar_source_push_watermark(src, INT64_MAX, &err), LAMINAR_OK, &err);
  CHECK_CODE(laminar_run_until_idle(db, &err), LAMINAR_OK, &err);
  int64_t got;
  CHECK(drain(sub, check_window_row, &e, &got) == 0);
  /* Windows that closed before the restart were emitted then: every window
   * read now is whole and right, and the last ones are there. */
  int64_t last = (N - 1) * 3 / 100, in_last = 0;
  for (int k = 0; k < NSYM; k++) {
    EXPECT(e.seen[k][last] == (e.n[k][last] > 0 ? 1 : 0));
    in_last += e.seen[k][last];
  }
  EXPECT(got > 0 && in_last > 0);
  laminar_subscription_close(sub);
  laminar_source_close(src);
  CHECK_CODE(laminar_close(db), LAMINAR_OK, NULL);
  laminar_config_destroy(cfg);
  EXPECT(u.destroyed == 1);
  lm_test_rmtree(dir);
  return 0;
}

/* Count rows only. */
static int check_nothing(void* arg, const result_view* rv, int64_t r) {
  (void)arg;
  (void)rv;
  (void)r;
  return 0;
}

/* ---- contract breaches and failures --------------------------------------------------- */

static const char* k_plain_stream =
    "CREATE STREAM bad AS SELECT ts, e.i, e.piece FROM trades CROSS JOIN LATERAL "
    "explode(volume, symbol) AS e";

static int expect_failure(tf_mode mode, laminar_code want, const char* text) {
  laminar_db* db;
  laminar_source* src;
  laminar_error err;
  CHECK(open_db(&db, &src) == 0);
  tf_user u = {.mode = mode};
  CHECK_CODE(register_explode(db, NULL, &u, &err), LAMINAR_OK, &err);
  CHECK_CODE(laminar_execute(db, k_plain_stream, &err), LAMINAR_OK, &err);
  laminar_subscription* sub;
  CHECK_CODE(laminar_subscribe(db, "bad", &sub, &err), LAMINAR_OK, &err);
  trade_row rows[3] = {{"a", 1.5, false, 2, false, 10},
                       {"b", 2.0, false, 0, false, 20},
                       {"c", 3.0, false, 3, false, 30}};
  CHECK(push_rows(src, rows, 3) == 0);
  memset(&err, 0, sizeof err);
  CHECK_CODE(laminar_run_until_idle(db, &err), want, &err);
  EXPECT(strstr(err.message, "stream 'bad'") != NULL);
  if (strstr(err.message, text) == NULL)
    EXPECT(!fprintf(stderr, "message: %s\nwanted: %s\n", err.message, text));
  int64_t got;
  CHECK(drain(sub, check_nothing, NULL, &got) == 0);
  EXPECT(got == 0); /* nothing of the failed batch */
  /* The stream goes on: the next batch is processed. */
  u.mode = TF_OK;
  CHECK(push_rows(src, rows, 3) == 0);
  CHECK_CODE(laminar_run_until_idle(db, &err), LAMINAR_OK, &err);
  CHECK(drain(sub, check_nothing, NULL, &got) == 0);
  EXPECT(got == 5);
  laminar_subscription_close(sub);
  laminar_source_close(src);
  CHECK_CODE(laminar_close(db), LAMINAR_OK, NULL);
  EXPECT(u.destroyed == 1);
  return 0;
}

static int test_runtime_failures(void) {
  CHECK(expect_failure(TF_FAIL, LAMINAR_ERR_FUNCTION_FAILED,
                       "function 'explode' failed: the model refused row 0") == 0);
  CHECK(expect_failure(TF_PARENT_RANGE, LAMINAR_ERR_FUNCTION_RESULT,
                       "function 'explode' returned an invalid result: parent row 3 at "
                       "output row 2 is out of range (the call had 3 rows)") == 0);
  CHECK(expect_failure(TF_PARENT_DOWN, LAMINAR_ERR_FUNCTION_RESULT,
                       "parent rows must not go down: 0 after 2 at output row 3") == 0);
  CHECK(expect_failure(TF_WRONG_TYPE, LAMINAR_ERR_FUNCTION_RESULT,
                       "function 'explode' column 'i' returned an invalid result: it "
                       "returned format 'g', declared 'l' (BIGINT)") == 0);
  CHECK(expect_failure(TF_MISSING_COL, LAMINAR_ERR_FUNCTION_RESULT,
                       "with 2 columns; declared a struct") == 0);
  return 0;
}

/* ---- registration, catalog, SQL errors ------------------------------------------------ */

static int exec_fails(laminar_db* db, const char* sql, laminar_code want,
                      const char* text) {
  laminar_error err;
  memset(&err, 0, sizeof err);
  CHECK_CODE(laminar_execute(db, sql, &err), want, &err);
  if (strstr(err.message, text) == NULL) {
    fprintf(stderr, "message: %s\nwanted: %s\n", err.message, text);
    return 1;
  }
  return 0;
}

static int test_registration_and_sql_errors(void) {
  laminar_db* db;
  laminar_error err;
  CHECK(open_db(&db, NULL) == 0);
  tf_user u = {0};
  struct ArrowSchema cols;
  CHECK(columns(&cols) == 0);
  CHECK_CODE(laminar_table_function_register(db, "t1", k_args, 2, &cols, NULL, &u, NULL,
                                             0, &err),
             LAMINAR_ERR_MISUSE, &err); /* no fn */
  CHECK_CODE(laminar_table_function_register(db, "t1", k_args, 2, NULL, explode, &u, NULL,
                                             0, &err),
             LAMINAR_ERR_MISUSE, &err); /* no columns */
  CHECK_CODE(laminar_table_function_register(db, "t1", k_args, 2, cols.children[0],
                                             explode, &u, NULL, 0, &err),
             LAMINAR_ERR_MISUSE, &err); /* not a struct */
  CHECK_CODE(laminar_table_function_register(db, "generate_series", k_args, 2, &cols,
                                             explode, &u, destroy_user, 0, &err),
             LAMINAR_ERR_SQL_DUPLICATE_OBJECT, &err);
  CHECK_CODE(laminar_table_function_register(db, "t1", k_args, 2, &cols, explode, &u,
                                             NULL, 0x100, &err),
             LAMINAR_ERR_MISUSE, &err); /* unknown flags */
  CHECK(ArrowSchemaSetName(cols.children[1], "i") == NANOARROW_OK);
  CHECK_CODE(laminar_table_function_register(db, "t1", k_args, 2, &cols, explode, &u,
                                             NULL, 0, &err),
             LAMINAR_ERR_MISUSE, &err); /* two columns named i */
  CHECK(ArrowSchemaSetName(cols.children[1], "piece") == NANOARROW_OK);
  CHECK(ArrowSchemaSetFormat(cols.children[1], "w:4") == NANOARROW_OK);
  CHECK_CODE(laminar_table_function_register(db, "t1", k_args, 2, &cols, explode, &u,
                                             NULL, 0, &err),
             LAMINAR_ERR_UNKNOWN_TYPE, &err);
  EXPECT(strstr(err.message, "column 'piece'") != NULL);
  cols.release(&cols);
  EXPECT(u.destroyed == 0); /* failed registrations keep `user` the caller's */
  CHECK_CODE(register_explode(db, NULL, &u, &err), LAMINAR_OK, &err);

  /* SQL: the argument count and types, a scalar use, unknown names, aliases. */
  CHECK(exec_fails(db, "CREATE STREAM s1 AS SELECT * FROM trades, explode(volume)",
                   LAMINAR_ERR_SQL_FUNCTION_ARGS,
                   "explode() takes 2 arguments, got 1") == 0);
  CHECK(exec_fails(
            db, "CREATE STREAM s1 AS SELECT explode(volume, symbol) AS x FROM trades",
            LAMINAR_ERR_SQL_UNKNOWN_FUNCTION, "'explode' is a table function") == 0);
  CHECK(exec_fails(db, "CREATE STREAM s1 AS SELECT * FROM trades, nosuch(volume)",
                   LAMINAR_ERR_SQL_UNKNOWN_FUNCTION,
                   "unknown table function 'nosuch'") == 0);
  CHECK(exec_fails(db, "CREATE STREAM s1 AS SELECT * FROM trades, abs(volume)",
                   LAMINAR_ERR_SQL_UNKNOWN_FUNCTION,
                   "unknown table function 'abs'") == 0);
  CHECK(exec_fails(db,
                   "CREATE STREAM s1 AS SELECT * FROM trades, explode(volume, symbol) "
                   "AS e(a, b, c)",
                   LAMINAR_ERR_SQL_FUNCTION_ARGS,
                   "has 2 columns, and its alias e names 3") == 0);
  CHECK(exec_fails(db,
                   "CREATE STREAM s1 AS SELECT * FROM trades, generate_series(volume)",
                   LAMINAR_ERR_SQL_FUNCTION_ARGS,
                   "generate_series() takes 2 or 3 arguments, got 1") == 0);
  CHECK(exec_fails(db,
                   "CREATE STREAM s1 AS SELECT * FROM trades, explode(SUM(volume), "
                   "symbol)",
                   LAMINAR_ERR_SQL_GROUPING, "an aggregate in the arguments") == 0);
  CHECK(exec_fails(db, "CREATE STREAM s1 AS SELECT * FROM trades, trades",
                   LAMINAR_ERR_SQL_UNSUPPORTED, "takes a table function call") == 0);
  CHECK(exec_fails(db, "CREATE STREAM s1 AS SELECT e.nope FROM trades, explode(1, 'a') e",
                   LAMINAR_ERR_SQL_UNKNOWN_COLUMN, "no column 'nope'") == 0);

  /* DROP refused while a stream uses it. */
  CHECK_CODE(laminar_execute(db,
                             "CREATE STREAM s2 AS SELECT symbol, e.i AS n FROM trades "
                             "CROSS JOIN LATERAL explode(volume, symbol) AS e(i)",
                             &err),
             LAMINAR_OK, &err);
  CHECK_CODE(laminar_function_drop(db, "explode", &err), LAMINAR_ERR_SQL_DEPENDENCY,
             &err);
  CHECK_CODE(laminar_execute(db, "DROP STREAM s2", &err), LAMINAR_OK, &err);
  CHECK_CODE(laminar_function_drop(db, "explode", &err), LAMINAR_OK, &err);
  EXPECT(u.destroyed == 1);
  CHECK_CODE(laminar_close(db), LAMINAR_OK, NULL);
  return 0;
}

/* generate_series(1, 3, 0): the step must not be 0 (LDB-3010, as DuckDB
 * refuses it), and the next batch goes on. */
static int test_builtin_step_zero(void) {
  laminar_db* db;
  laminar_source* src;
  laminar_error err;
  CHECK(open_db(&db, &src) == 0);
  CHECK_CODE(laminar_execute(db,
                             "CREATE STREAM g AS SELECT ts, x FROM trades, "
                             "generate_series(1, volume, volume - 2) AS s(x)",
                             &err),
             LAMINAR_OK, &err);
  laminar_subscription* sub;
  CHECK_CODE(laminar_subscribe(db, "g", &sub, &err), LAMINAR_OK, &err);
  trade_row bad = {"a", 1.0, false, 2, false, 10};
  CHECK(push_rows(src, &bad, 1) == 0);
  memset(&err, 0, sizeof err);
  CHECK_CODE(laminar_run_until_idle(db, &err), LAMINAR_ERR_FUNCTION_FAILED, &err);
  EXPECT(strstr(err.message, "generate_series(1, 2, 0): the step must not be 0") != NULL);
  trade_row good = {"a", 1.0, false, 7, false, 20}; /* 1, 6 */
  CHECK(push_rows(src, &good, 1) == 0);
  CHECK_CODE(laminar_run_until_idle(db, &err), LAMINAR_OK, &err);
  int64_t got;
  CHECK(drain(sub, check_nothing, NULL, &got) == 0);
  EXPECT(got == 2);
  laminar_subscription_close(sub);
  laminar_source_close(src);
  CHECK_CODE(laminar_close(db), LAMINAR_OK, NULL);
  return 0;
}

/* ---- beside a JOIN ---------------------------------------------------------------- */

/* Per symbol: joined rows the function made, their sum of i, and of the
 * trade's volume (a parent column passing through). */
typedef struct join_expect {
  int64_t rows[NSYM], si[NSYM], tv[NSYM];
} join_expect;

static int add_join_row(void* arg, const result_view* rv, int64_t r) {
  join_expect* got = arg;
  struct ArrowStringView sym = ArrowArrayViewGetStringUnsafe(col(rv, "symbol"), r);
  struct ArrowStringView piece = ArrowArrayViewGetStringUnsafe(col(rv, "piece"), r);
  int k = sym_index(sym.data, sym.size_bytes);
  CHECK(k >= 0);
  CHECK(piece.size_bytes == sym.size_bytes &&
        memcmp(piece.data, sym.data, (size_t)sym.size_bytes) == 0);
  got->rows[k]++;
  got->si[k] += ArrowArrayViewGetIntUnsafe(col(rv, "i"), r);
  got->tv[k] += ArrowArrayViewGetIntUnsafe(col(rv, "tv"), r);
  return 0;
}

/* Trades and quotes (one of each per ts; a quote's symbol differs one time in
 * 4), both spellings of the call; the rows equal a nested loop's. */
static int test_beside_join(void) {
  static const char* const streams[] = {
      "CREATE STREAM j AS SELECT t.symbol, t.volume AS tv, e.i, e.piece FROM trades t "
      "JOIN quotes q ON t.symbol = q.symbol AND q.ts BETWEEN t.ts AND t.ts, "
      "explode(q.volume % 4, t.symbol) AS e",
      "CREATE STREAM j AS SELECT q.symbol, t.volume AS tv, i, piece FROM trades AS t "
      "INNER JOIN quotes AS q ON t.symbol = q.symbol AND q.ts BETWEEN t.ts - INTERVAL "
      "'1' "
      "MILLISECOND AND t.ts CROSS JOIN LATERAL explode(q.volume % 4, q.symbol)"};
  uint64_t seed = lm_test_seed();
  static trade_row trades[N], quotes[N];
  static expect unused;
  make_rows(seed, trades, &unused);
  uint64_t rng = seed * 7 + 1;
  random_rows(&rng, quotes, N, 0);
  join_expect want = {0};
  for (int64_t r = 0; r < N; r++) {
    quotes[r].ts = trades[r].ts;
    quotes[r].symbol = rng_next(&rng) % 4 == 0 ? k_syms[r % NSYM] : trades[r].symbol;
    /* the nested loop: quotes within [t.ts - 1, t.ts] of the same symbol */
    for (int64_t x = 0; x <= r; x++) {
      if (trades[r].symbol == NULL || quotes[x].symbol == NULL ||
          strcmp(trades[r].symbol, quotes[x].symbol) != 0 ||
          quotes[x].ts < trades[r].ts - 1)
        continue;
      int k = sym_index(trades[r].symbol, (int64_t)strlen(trades[r].symbol));
      int64_t n = quotes[x].volume % 4;
      want.rows[k] += n;
      want.si[k] += n * (n - 1) / 2;
      want.tv[k] += n * trades[r].volume;
    }
  }
  for (int s = 0; s < 2; s++) {
    laminar_db* db;
    laminar_error err;
    tf_user u = {0};
    CHECK(open_db(&db, NULL) == 0);
    CHECK_CODE(register_explode(db, NULL, &u, &err), LAMINAR_OK, &err);
    CHECK_CODE(
        laminar_execute(db,
                        "CREATE SOURCE quotes (symbol VARCHAR, price DOUBLE, volume "
                        "BIGINT, ts BIGINT, WATERMARK FOR ts AS ts)",
                        &err),
        LAMINAR_OK, &err);
    CHECK_CODE(laminar_execute(db, streams[s], &err), LAMINAR_OK, &err);
    laminar_subscription* sub;
    CHECK_CODE(laminar_subscribe(db, "j", &sub, &err), LAMINAR_OK, &err);
    laminar_source *ts, *qs;
    CHECK_CODE(laminar_source_open(db, "trades", &ts, &err), LAMINAR_OK, &err);
    CHECK_CODE(laminar_source_open(db, "quotes", &qs, &err), LAMINAR_OK, &err);
    for (int64_t at = 0; at < N; at += 100) {
      CHECK(push_rows(ts, trades + at, 100) == 0);
      CHECK(push_rows(qs, quotes + at, 100) == 0);
      CHECK_CODE(laminar_run_until_idle(db, &err), LAMINAR_OK, &err);
    }
    CHECK_CODE(laminar_source_push_watermark(ts, INT64_MAX, &err), LAMINAR_OK, &err);
    CHECK_CODE(laminar_source_push_watermark(qs, INT64_MAX, &err), LAMINAR_OK, &err);
    CHECK_CODE(laminar_run_until_idle(db, &err), LAMINAR_OK, &err);
    join_expect got = {0};
    int64_t n;
    CHECK(drain(sub, add_join_row, &got, &n) == 0);
    for (int k = 0; k < NSYM; k++) {
      if (got.rows[k] != want.rows[k] || got.si[k] != want.si[k] ||
          got.tv[k] != want.tv[k])
        EXPECT(!fprintf(
            stderr, "stream %d %s: rows %lld si %lld tv %lld, want %lld %lld %lld\n", s,
            k_syms[k], (long long)got.rows[k], (long long)got.si[k], (long long)got.tv[k],
            (long long)want.rows[k], (long long)want.si[k], (long long)want.tv[k]));
    }
    EXPECT(n > 0 && u.calls > 0);
    /* names: f's columns by its alias, a name both sides and f have refused */
    CHECK(exec_fails(
              db,
              "CREATE STREAM x AS SELECT e.nope FROM trades t JOIN quotes q ON "
              "t.symbol = q.symbol AND q.ts BETWEEN t.ts AND t.ts, explode(1, 'a') e",
              LAMINAR_ERR_SQL_UNKNOWN_COLUMN,
              "no column 'nope' in table function 'explode'") == 0);
    CHECK(exec_fails(db,
                     "CREATE STREAM x AS SELECT volume FROM trades t JOIN quotes q ON "
                     "t.symbol = q.symbol AND q.ts BETWEEN t.ts AND t.ts, "
                     "explode(1, 'a') AS e(volume)",
                     LAMINAR_ERR_SQL_UNKNOWN_COLUMN, "qualify it") == 0);
    laminar_subscription_close(sub);
    laminar_source_close(ts);
    laminar_source_close(qs);
    CHECK_CODE(laminar_close(db), LAMINAR_OK, NULL);
  }
  return 0;
}

int main(int argc, char** argv) {
  static const lm_test_case cases[] = {
      {"window_cores", test_window_cores},
      {"beside_join", test_beside_join},
      {"checkpoint_restart", test_checkpoint_restart},
      {"runtime_failures", test_runtime_failures},
      {"registration_and_sql_errors", test_registration_and_sql_errors},
      {"builtin_step_zero", test_builtin_step_zero},
      {NULL, NULL}};
  return lm_test_main(argc, argv, cases);
}
