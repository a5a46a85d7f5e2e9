/*
 * test_api.c -- the engine end to end through laminar.h: quick start, tumbling
 * windows against a brute-force reference, late rows, both drivers, catalog
 * statements and the error contract.
 */
#include "laminar.h"

#include "arrow_build.h"
#include "lm_test.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static const char* QUICKSTART_SQL =
    "CREATE SOURCE trades (symbol VARCHAR NOT NULL, price DOUBLE, volume BIGINT, ts "
    "BIGINT,\n"
    "                      WATERMARK FOR ts AS ts - INTERVAL '100' MILLISECOND);\n"
    "CREATE STREAM vwap AS\n"
    "  SELECT symbol, window_start, SUM(price * volume) / SUM(volume) AS vwap, COUNT(*) "
    "AS n\n"
    "  FROM trades GROUP BY symbol, tumble(ts, INTERVAL '1' SECOND)\n"
    "  EMIT ON WINDOW CLOSE;";

static int push_rows(laminar_source* src, const trade_row* rows, int64_t n, bool dict) {
  struct ArrowArray array;
  struct ArrowSchema schema;
  CHECK(build_trades(rows, n, dict, &array, &schema) == 0);
  laminar_error err;
  laminar_code rc = laminar_source_push(src, &array, &schema, &err);
  if (rc != LAMINAR_OK) fprintf(stderr, "push: %s\n", err.message);
  CHECK(rc == LAMINAR_OK);
  CHECK(array.release == NULL); /* moved into the core */
  schema.release(&schema);
  return 0;
}

/* ---- quick start ---------------------------------------------------------------- */

static int test_quickstart(void) {
  laminar_db* db;
  laminar_error err;
  CHECK_CODE(laminar_open(NULL, &db, &err), LAMINAR_OK, &err);
  CHECK_CODE(laminar_execute(db, QUICKSTART_SQL, &err), LAMINAR_OK, &err);
  laminar_source* src;
  laminar_subscription* sub;
  CHECK_CODE(laminar_source_open(db, "trades", &src, &err), LAMINAR_OK, &err);
  CHECK_CODE(laminar_subscribe(db, "vwap", &sub, &err), LAMINAR_OK, &err);
  trade_row rows[] = {
      {"AAPL", 10.0, false, 100, false, 1000},
      {"AAPL", 20.0, false, 300, false, 1500},
      {"MSFT", 5.0, false, 10, false, 1200},
      {"AAPL", 30.0, false, 100, false, 2100},
  };
  CHECK(push_rows(src, rows, 4, false) == 0);
  CHECK_CODE(laminar_run_until_idle(db, &err), LAMINAR_OK, &err);
  /* watermark = 2100 - 100 = 2000: window [1000, 2000) closed. */
  result_view rv = {0};
  CHECK_CODE(laminar_subscription_next(sub, 0, &rv.array, &rv.schema, &err), LAMINAR_OK,
             &err);
  CHECK(rv.array.release != NULL);
  CHECK(result_view_init(&rv) == 0);
  CHECK(rv.array.length == 2);
  int64_t c_sym = result_col_index(&rv, "symbol"), c_vwap = result_col_index(&rv, "vwap");
  int64_t c_n = result_col_index(&rv, "n"), c_ws = result_col_index(&rv, "window_start");
  CHECK(c_sym == 0 && c_ws == 1 && c_vwap == 2 && c_n == 3);
  for (int64_t r = 0; r < 2; r++) {
    struct ArrowStringView s = ArrowArrayViewGetStringUnsafe(rv.view.children[c_sym], r);
    double v = ArrowArrayViewGetDoubleUnsafe(rv.view.children[c_vwap], r);
    int64_t n = ArrowArrayViewGetIntUnsafe(rv.view.children[c_n], r);
    EXPECT(ArrowArrayViewGetIntUnsafe(rv.view.children[c_ws], r) == 1000);
    if (s.size_bytes == 4 && memcmp(s.data, "AAPL", 4) == 0) {
      EXPECT(fabs(v - (10.0 * 100 + 20.0 * 300) / 400.0) < 1e-9);
      EXPECT(n == 2);
    } else {
      EXPECT(s.size_bytes == 4 && memcmp(s.data, "MSFT", 4) == 0);
      EXPECT(fabs(v - 5.0) < 1e-9);
      EXPECT(n == 1);
    }
  }
  result_view_free(&rv);
  /* Nothing more until the watermark moves. */
  struct ArrowArray none;
  CHECK_CODE(laminar_subscription_next(sub, 0, &none, NULL, &err), LAMINAR_OK, &err);
  CHECK(none.release == NULL);
  CHECK_CODE(laminar_source_watermark(src, INT64_MAX, &err), LAMINAR_OK, &err);
  CHECK_CODE(laminar_run_until_idle(db, &err), LAMINAR_OK, &err);
  result_view rv2 = {0};
  CHECK_CODE(laminar_subscription_next(sub, 0, &rv2.array, &rv2.schema, &err), LAMINAR_OK,
             &err);
  CHECK(rv2.array.release != NULL && result_view_init(&rv2) == 0);
  CHECK(rv2.array.length == 1);
  EXPECT(ArrowArrayViewGetIntUnsafe(rv2.view.children[1], 0) == 2000);
  EXPECT(fabs(ArrowArrayViewGetDoubleUnsafe(rv2.view.children[2], 0) - 30.0) < 1e-9);
  result_view_free(&rv2);
  laminar_subscription_close(sub);
  laminar_source_close(src);
  CHECK_CODE(laminar_close(db), LAMINAR_OK, &err);
  return 0;
}

/* ---- windows against a brute-force reference ---------------------------------- */

typedef struct ref_row {
  int64_t ws;
  int sym; /* -1 = NULL */
  int64_t count_star, count_price, sum_volume, vol_count;
  double min_price, max_price, sum_price;
} ref_row;

static int cmp_ref(const void* a, const void* b) {
  const ref_row* x = a;
  const ref_row* y = b;
  if (x->ws != y->ws) return x->ws < y->ws ? -1 : 1;
  return (x->sym > y->sym) - (x->sym < y->sym);
}

static const char* SYMS[] = {"A", "BB", "CCC", "DDDD", "E5", "F66", "G777", "H8888"};

typedef struct run_result {
  ref_row* rows;
  int64_t n;
  int64_t late;
} run_result;

/* Run the random workload through the engine and collect sorted result rows. */
static int run_engine(const trade_row* rows, int64_t n, const int64_t* cuts, int ncuts,
                      bool dict, bool threaded, run_result* out) {
  laminar_db* db;
  laminar_error err;
  CHECK_CODE(laminar_open(NULL, &db, &err), LAMINAR_OK, &err);
  CHECK_CODE(laminar_execute(
                 db,
                 "CREATE SOURCE t (symbol VARCHAR, price DOUBLE, volume BIGINT, "
                 "ts BIGINT, WATERMARK FOR ts AS ts - INTERVAL '50' MILLISECOND);"
                 "CREATE STREAM w AS SELECT window_start AS ws, symbol, COUNT(*) AS c,"
                 " COUNT(price) AS cp, SUM(volume) AS sv, MIN(price) AS mn,"
                 " MAX(price) AS mx, AVG(price) AS ap, window_end AS we"
                 " FROM t GROUP BY symbol, tumble(ts, INTERVAL '100' MILLISECOND)",
                 &err),
             LAMINAR_OK, &err);
  laminar_source* src;
  laminar_subscription* sub;
  CHECK_CODE(laminar_source_open(db, "t", &src, &err), LAMINAR_OK, &err);
  CHECK_CODE(laminar_subscribe(db, "w", &sub, &err), LAMINAR_OK, &err);
  if (threaded) CHECK_CODE(laminar_start(db, &err), LAMINAR_OK, &err);
  int64_t start = 0;
  for (int c = 0; c <= ncuts; c++) {
    int64_t end = c < ncuts ? cuts[c] : n;
    if (end > start) CHECK(push_rows(src, rows + start, end - start, dict) == 0);
    start = end;
  }
  CHECK_CODE(laminar_source_watermark(src, INT64_MAX, &err), LAMINAR_OK, &err);
  if (threaded) {
    CHECK_CODE(laminar_stop(db, &err), LAMINAR_OK, &err);
  } else {
    CHECK_CODE(laminar_run_until_idle(db, &err), LAMINAR_OK, &err);
  }
  int64_t cap = 1024, cnt = 0;
  ref_row* res = calloc((size_t)cap, sizeof(ref_row));
  CHECK(res != NULL);
  for (;;) {
    result_view rv = {0};
    CHECK_CODE(laminar_subscription_next(sub, 0, &rv.array, &rv.schema, &err), LAMINAR_OK,
               &err);
    if (rv.array.release == NULL) break;
    CHECK(result_view_init(&rv) == 0);
    CHECK(rv.schema.n_children == 9);
    for (int64_t r = 0; r < rv.array.length; r++) {
      if (cnt == cap) {
        cap *= 2;
        res = realloc(res, sizeof(ref_row) * (size_t)cap);
        CHECK(res != NULL);
      }
      ref_row* o = &res[cnt++];
      memset(o, 0, sizeof *o);
      struct ArrowArrayView** ch = rv.view.children;
      o->ws = ArrowArrayViewGetIntUnsafe(ch[0], r);
      EXPECT(ArrowArrayViewGetIntUnsafe(ch[8], r) == o->ws + 100);
      o->sym = -1;
      if (!ArrowArrayViewIsNull(ch[1], r)) {
        struct ArrowStringView s = ArrowArrayViewGetStringUnsafe(ch[1], r);
        for (int k = 0; k < 8; k++) {
          if ((int64_t)strlen(SYMS[k]) == s.size_bytes &&
              memcmp(SYMS[k], s.data, (size_t)s.size_bytes) == 0)
            o->sym = k;
        }
        EXPECT(o->sym >= 0);
      }
      o->count_star = ArrowArrayViewGetIntUnsafe(ch[2], r);
      o->count_price = ArrowArrayViewGetIntUnsafe(ch[3], r);
      o->sum_volume = ArrowArrayViewIsNull(ch[4], r)
                          ? INT64_MIN
                          : ArrowArrayViewGetIntUnsafe(ch[4], r);
      o->min_price =
          ArrowArrayViewIsNull(ch[5], r) ? NAN : ArrowArrayViewGetDoubleUnsafe(ch[5], r);
      o->max_price =
          ArrowArrayViewIsNull(ch[6], r) ? NAN : ArrowArrayViewGetDoubleUnsafe(ch[6], r);
      o->sum_price =
          ArrowArrayViewIsNull(ch[7], r) ? NAN : ArrowArrayViewGetDoubleUnsafe(ch[7], r);
    }
    result_view_free(&rv);
  }
  CHECK_CODE(laminar_stream_late_rows(db, "w", &out->late, &err), LAMINAR_OK, &err);
  laminar_subscription_close(sub);
  laminar_source_close(src);
  CHECK_CODE(laminar_close(db), LAMINAR_OK, &err);
  qsort(res, (size_t)cnt, sizeof(ref_row), cmp_ref);
  out->rows = res;
  out->n = cnt;
  return 0;
}

static int same_double(double a, double b) {
  if (isnan(a) || isnan(b)) return isnan(a) && isnan(b);
  return fabs(a - b) <= 1e-9 * fmax(1.0, fabs(b));
}

static int test_windows_vs_reference(void) {
  uint64_t rng = lm_test_seed();
  const int64_t n = 20000;
  trade_row* rows = calloc((size_t)n, sizeof(trade_row));
  CHECK(rows != NULL);
  int64_t ts = 1700000000000LL;
  for (int64_t i = 0; i < n; i++) {
    uint64_t z = lm_test_rand(&rng);
    trade_row* t = &rows[i];
    t->symbol = (z % 17 == 0) ? NULL : SYMS[z % 8];
    t->price_null = (z >> 8) % 13 == 0;
    t->price = 100.0 + (double)((z >> 16) % 10000) / 100.0;
    t->volume_null = (z >> 32) % 11 == 0;
    t->volume = 1 + (int64_t)((z >> 40) % 1000);
    /* Mostly increasing with jitter inside the 50 ms delay; an empty stretch. */
    if (i == n / 2) ts += 5000;
    ts += (int64_t)((z >> 50) % 3);
    t->ts = ts - (int64_t)((z >> 56) % 40);
  }
  /* Reference: brute force over (window, symbol). */
  ref_row* ref = calloc((size_t)n, sizeof(ref_row));
  int64_t nref = 0;
  for (int64_t i = 0; i < n; i++) {
    const trade_row* t = &rows[i];
    int64_t ws = t->ts - (t->ts % 100);
    int sym = -1;
    for (int k = 0; k < 8 && t->symbol; k++) {
      if (strcmp(SYMS[k], t->symbol) == 0) sym = k;
    }
    ref_row* g = NULL;
    for (int64_t j = nref - 1; j >= 0 && j >= nref - 64; j--) {
      if (ref[j].ws == ws && ref[j].sym == sym) g = &ref[j];
    }
    if (g == NULL) {
      for (int64_t j = 0; j < nref; j++) {
        if (ref[j].ws == ws && ref[j].sym == sym) g = &ref[j];
      }
    }
    if (g == NULL) {
      g = &ref[nref++];
      memset(g, 0, sizeof *g);
      g->ws = ws;
      g->sym = sym;
      g->min_price = NAN;
      g->max_price = NAN;
    }
    g->count_star++;
    if (!t->price_null) {
      g->count_price++;
      g->sum_price += t->price;
      if (isnan(g->min_price) || t->price < g->min_price) g->min_price = t->price;
      if (isnan(g->max_price) || t->price > g->max_price) g->max_price = t->price;
    }
    if (!t->volume_null) {
      g->sum_volume += t->volume;
      g->vol_count++;
    }
  }
  for (int64_t j = 0; j < nref; j++) {
    ref[j].sum_price =
        ref[j].count_price ? ref[j].sum_price / (double)ref[j].count_price : NAN;
    if (ref[j].vol_count == 0) ref[j].sum_volume = INT64_MIN;
  }
  qsort(ref, (size_t)nref, sizeof(ref_row), cmp_ref);

  int64_t cuts[64];
  int ncuts = 0;
  for (int64_t at = 0; ncuts < 64;) {
    at += 1 + (int64_t)(lm_test_rand(&rng) % 1500);
    if (at >= n) break;
    cuts[ncuts++] = at;
  }
  for (int mode = 0; mode < 3; mode++) {
    run_result got = {0};
    CHECK(run_engine(rows, n, cuts, ncuts, mode == 1, mode == 2, &got) == 0);
    EXPECT(got.late == 0);
    EXPECT(got.n == nref);
    for (int64_t j = 0; j < got.n && j < nref; j++) {
      ref_row* a = &got.rows[j];
      ref_row* e = &ref[j];
      if (a->ws != e->ws || a->sym != e->sym || a->count_star != e->count_star ||
          a->count_price != e->count_price || a->sum_volume != e->sum_volume ||
          !same_double(a->min_price, e->min_price) ||
          !same_double(a->max_price, e->max_price) ||
          !same_double(a->sum_price, e->sum_price)) {
        fprintf(stderr,
                "mode %d row %lld differs: ws %lld/%lld sym %d/%d count %lld/%lld\n",
                mode, (long long)j, (long long)a->ws, (long long)e->ws, a->sym, e->sym,
                (long long)a->count_star, (long long)e->count_star);
        free(got.rows);
        free(ref);
        free(rows);
        return 1;
      }
    }
    free(got.rows);
  }
  free(ref);
  free(rows);
  return 0;
}

/* ---- late rows ---------------------------------------------------------------------- */

static int test_late_rows_dropped_and_counted(void) {
  laminar_db* db;
  laminar_error err;
  CHECK_CODE(laminar_open(NULL, &db, &err), LAMINAR_OK, &err);
  CHECK_CODE(laminar_execute(db, QUICKSTART_SQL, &err), LAMINAR_OK, &err);
  laminar_source* src;
  laminar_subscription* sub;
  CHECK_CODE(laminar_source_open(db, "trades", &src, &err), LAMINAR_OK, &err);
  CHECK_CODE(laminar_subscribe(db, "vwap", &sub, &err), LAMINAR_OK, &err);
  trade_row a[] = {{"X", 1.0, false, 1, false, 5000}};
  CHECK(push_rows(src, a, 1, false) == 0);
  /* watermark 4900: window [3000,4000) is closed, [4000,5000) still open. */
  trade_row late[] = {{"X", 2.0, false, 1, false, 3500},
                      {"X", 3.0, false, 1, false, 4950}};
  CHECK(push_rows(src, late, 2, false) == 0);
  CHECK_CODE(laminar_source_watermark(src, INT64_MAX, &err), LAMINAR_OK, &err);
  CHECK_CODE(laminar_run_until_idle(db, &err), LAMINAR_OK, &err);
  int64_t nlate = -1;
  CHECK_CODE(laminar_stream_late_rows(db, "vwap", &nlate, &err), LAMINAR_OK, &err);
  EXPECT(nlate == 1);
  int64_t total_rows = 0;
  for (;;) {
    struct ArrowArray arr;
    CHECK_CODE(laminar_subscription_next(sub, 0, &arr, NULL, &err), LAMINAR_OK, &err);
    if (arr.release == NULL) break;
    total_rows += arr.length;
    arr.release(&arr);
  }
  EXPECT(total_rows == 2); /* windows 4000 and 5000 */
  CHECK_CODE(laminar_stream_late_rows(db, "nope", &nlate, &err),
             LAMINAR_ERR_SQL_UNKNOWN_OBJECT, &err);
  laminar_subscription_close(sub);
  laminar_source_close(src);
  laminar_close(db);
  return 0;
}

/* ---- plain streams, cascades, catalog ---------------------------------------------- */

static int test_filter_project_and_cascade(void) {
  laminar_db* db;
  laminar_error err;
  CHECK_CODE(laminar_open(NULL, &db, &err), LAMINAR_OK, &err);
  CHECK_CODE(laminar_execute(
                 db,
                 "create source trades (symbol varchar, price double, volume bigint, "
                 "ts bigint, watermark for ts as ts);\n"
                 "create stream big as select symbol, price * volume as notional, ts "
                 "from trades where volume > 500 and symbol is not null;\n"
                 "/* streams read streams */ create stream bars as select symbol, "
                 "window_start, sum(notional) as total, count(*) as n from big "
                 "group by symbol, tumble(ts, interval '1' second);",
                 &err),
             LAMINAR_OK, &err);
  laminar_source* src;
  laminar_subscription *s1, *s2;
  CHECK_CODE(laminar_source_open(db, "trades", &src, &err), LAMINAR_OK, &err);
  CHECK_CODE(laminar_subscribe(db, "big", &s1, &err), LAMINAR_OK, &err);
  CHECK_CODE(laminar_subscribe(db, "bars", &s2, &err), LAMINAR_OK, &err);
  trade_row rows[] = {
      {"A", 2.0, false, 600, false, 100},  {"A", 3.0, false, 100, false, 200},
      {NULL, 3.0, false, 900, false, 300}, {"B", 1.5, false, 1000, false, 400},
      {"A", 1.0, false, 501, false, 1100}, {"A", 1.0, true, 700, false, 1200},
  };
  CHECK(push_rows(src, rows, 6, true) == 0);
  CHECK_CODE(laminar_source_watermark(src, INT64_MAX, &err), LAMINAR_OK, &err);
  CHECK_CODE(laminar_run_until_idle(db, &err), LAMINAR_OK, &err);
  result_view rv = {0};
  CHECK_CODE(laminar_subscription_next(s1, 0, &rv.array, &rv.schema, &err), LAMINAR_OK,
             &err);
  CHECK(rv.array.release != NULL && result_view_init(&rv) == 0);
  CHECK(rv.array.length == 4);
  EXPECT(ArrowArrayViewGetDoubleUnsafe(rv.view.children[1], 0) == 1200.0);
  EXPECT(ArrowArrayViewGetDoubleUnsafe(rv.view.children[1], 1) == 1500.0);
  EXPECT(ArrowArrayViewGetDoubleUnsafe(rv.view.children[1], 2) == 501.0);
  EXPECT(ArrowArrayViewIsNull(rv.view.children[1], 3)); /* NULL * 700 */
  result_view_free(&rv);
  int64_t bars = 0;
  for (;;) {
    struct ArrowArray arr;
    CHECK_CODE(laminar_subscription_next(s2, 0, &arr, NULL, &err), LAMINAR_OK, &err);
    if (arr.release == NULL) break;
    bars += arr.length;
    arr.release(&arr);
  }
  EXPECT(bars == 3); /* (A,0) (B,0) (A,1000) */
  /* DROP with dependents is refused; dropping the leaf ends its subscription. */
  CHECK_CODE(laminar_execute(db, "DROP STREAM big", &err), LAMINAR_ERR_SQL_DEPENDENCY,
             &err);
  CHECK_CODE(laminar_execute(db, "DROP SOURCE trades", &err), LAMINAR_ERR_SQL_DEPENDENCY,
             &err);
  CHECK_CODE(laminar_execute(db, "DROP STREAM bars", &err), LAMINAR_OK, &err);
  struct ArrowArray arr;
  CHECK_CODE(laminar_subscription_next(s2, 10, &arr, NULL, &err),
             LAMINAR_ERR_SUBSCRIPTION_CLOSED, &err);
  CHECK_CODE(laminar_execute(db, "DROP STREAM IF EXISTS bars; DROP STREAM big", &err),
             LAMINAR_OK, &err);
  CHECK_CODE(laminar_execute(db, "DROP STREAM big", &err), LAMINAR_ERR_SQL_UNKNOWN_OBJECT,
             &err);
  CHECK_CODE(laminar_execute(db, "DROP SOURCE trades", &err), LAMINAR_OK, &err);
  /* The open producer handle now reports the source closed. */
  struct ArrowArray a2;
  struct ArrowSchema sc2;
  CHECK(build_trades(rows, 1, false, &a2, &sc2) == 0);
  CHECK_CODE(laminar_source_push(src, &a2, &sc2, &err), LAMINAR_ERR_SOURCE_CLOSED, &err);
  CHECK(a2.release != NULL);
  a2.release(&a2);
  sc2.release(&sc2);
  laminar_subscription_close(s1);
  laminar_subscription_close(s2);
  laminar_source_close(src);
  laminar_close(db);
  return 0;
}

static int read_string_cell(struct ArrowArrayStream* st, int64_t col, int64_t row,
                            char* out, size_t cap, int64_t* out_rows) {
  struct ArrowSchema schema;
  struct ArrowArray array;
  CHECK(st->get_schema(st, &schema) == 0);
  CHECK(st->get_next(st, &array) == 0);
  CHECK(array.release != NULL);
  result_view rv = {.schema = schema, .array = array};
  CHECK(result_view_init(&rv) == 0);
  *out_rows = array.length;
  out[0] = '\0';
  if (row < array.length) {
    struct ArrowStringView s = ArrowArrayViewGetStringUnsafe(rv.view.children[col], row);
    size_t n = (size_t)s.size_bytes < cap - 1 ? (size_t)s.size_bytes : cap - 1;
    memcpy(out, s.data, n);
    out[n] = '\0';
  }
  result_view_free(&rv);
  struct ArrowArray end;
  CHECK(st->get_next(st, &end) == 0 && end.release == NULL);
  st->release(st);
  return 0;
}

static int test_show_describe_schema(void) {
  laminar_db* db;
  laminar_error err;
  CHECK_CODE(laminar_open(NULL, &db, &err), LAMINAR_OK, &err);
  CHECK_CODE(laminar_execute(db, QUICKSTART_SQL, &err), LAMINAR_OK, &err);
  struct ArrowArrayStream st;
  char cell[256];
  int64_t nrows;
  CHECK_CODE(laminar_query(db, "SHOW SOURCES", &st, &err), LAMINAR_OK, &err);
  CHECK(read_string_cell(&st, 0, 0, cell, sizeof cell, &nrows) == 0);
  EXPECT(nrows == 1 && strcmp(cell, "trades") == 0);
  CHECK_CODE(laminar_query(db, "show streams", &st, &err), LAMINAR_OK, &err);
  CHECK(read_string_cell(&st, 1, 0, cell, sizeof cell, &nrows) == 0);
  EXPECT(nrows == 1 && strcmp(cell, "trades") == 0);
  CHECK_CODE(laminar_query(db, "DESCRIBE trades", &st, &err), LAMINAR_OK, &err);
  CHECK(read_string_cell(&st, 1, 1, cell, sizeof cell, &nrows) == 0);
  EXPECT(nrows == 4 && strcmp(cell, "DOUBLE") == 0);
  CHECK_CODE(laminar_query(db, "DESCRIBE vwap", &st, &err), LAMINAR_OK, &err);
  CHECK(read_string_cell(&st, 0, 2, cell, sizeof cell, &nrows) == 0);
  EXPECT(nrows == 4 && strcmp(cell, "vwap") == 0);
  CHECK_CODE(laminar_query(db, "DESCRIBE nothing", &st, &err),
             LAMINAR_ERR_SQL_UNKNOWN_OBJECT, &err);
  CHECK_CODE(laminar_query(db, "DROP STREAM vwap", &st, &err),
             LAMINAR_ERR_SQL_UNSUPPORTED, &err);
  struct ArrowSchema schema;
  CHECK_CODE(laminar_schema(db, "vwap", &schema, &err), LAMINAR_OK, &err);
  EXPECT(schema.n_children == 4);
  EXPECT(strcmp(schema.children[2]->format, "g") == 0);
  EXPECT(strcmp(schema.children[1]->format, "l") == 0);
  schema.release(&schema);
  CHECK_CODE(laminar_schema(db, "zzz", &schema, &err), LAMINAR_ERR_SQL_UNKNOWN_OBJECT,
             &err);
  laminar_close(db);
  return 0;
}

/* ---- errors -------------------------------------------------------------------------- */

static int test_sql_errors_have_positions(void) {
  laminar_db* db;
  laminar_error err;
  laminar_subscription* sub_unused = NULL;
  CHECK_CODE(laminar_open(NULL, &db, &err), LAMINAR_OK, &err);
  CHECK_CODE(
      laminar_execute(db, "CREATE SOURCE t (a BIGINT, b VARCHAR, ts BIGINT);", &err),
      LAMINAR_OK, &err);
  CHECK_CODE(laminar_execute(db, "CREATE STREAM s AS\nSELECT a +\nFROM t", &err),
             LAMINAR_ERR_SQL_SYNTAX, &err);
  EXPECT(err.line == 3 && err.column == 1);
  EXPECT(strncmp(err.message, "LDB-1001", 8) == 0);
  CHECK_CODE(laminar_execute(db, "CREATE STREAM s AS SELECT a FROM nowhere", &err),
             LAMINAR_ERR_SQL_UNKNOWN_OBJECT, &err);
  EXPECT(err.line == 1 && err.column == 34);
  CHECK_CODE(laminar_execute(db, "CREATE STREAM s AS\n  SELECT a, zz FROM t", &err),
             LAMINAR_ERR_SQL_UNKNOWN_COLUMN, &err);
  EXPECT(err.line == 2 && err.column == 13 && strcmp(err.column_name, "zz") == 0);
  CHECK_CODE(laminar_execute(db, "CREATE STREAM s AS SELECT a + b FROM t", &err),
             LAMINAR_ERR_TYPE_MISMATCH, &err);
  CHECK_CODE(
      laminar_execute(db,
                      "CREATE STREAM s AS SELECT b, a, COUNT(*) FROM t GROUP BY b, "
                      "tumble(ts, INTERVAL '1' SECOND)",
                      &err),
      LAMINAR_ERR_SQL_GROUPING, &err);
  EXPECT(err.column == 30);
  CHECK_CODE(laminar_execute(db, "CREATE SOURCE t (x BIGINT)", &err),
             LAMINAR_ERR_SQL_DUPLICATE_OBJECT, &err);
  CHECK_CODE(laminar_execute(db, "CREATE SOURCE IF NOT EXISTS t (x BIGINT)", &err),
             LAMINAR_OK, &err);
  CHECK_CODE(laminar_execute(db, "CREATE SOURCE u (x FLOAT16)", &err),
             LAMINAR_ERR_UNKNOWN_TYPE, &err);
  CHECK_CODE(laminar_execute(db, "CREATE SOURCE u (x BIGINT, x BIGINT)", &err),
             LAMINAR_ERR_SCHEMA_INVALID, &err);
  CHECK_CODE(
      laminar_execute(db, "CREATE SOURCE u (x BIGINT) WITH (colour = 'red')", &err),
      LAMINAR_ERR_CONFIG_KEY, &err);
  CHECK_CODE(
      laminar_execute(db, "CREATE SOURCE u (x BIGINT) WITH (buffer_size = 3)", &err),
      LAMINAR_ERR_CONFIG_VALUE, &err);
  CHECK_CODE(laminar_execute(db, "CREATE STREAM s AS SELECT a FROM t EMIT CHANGES", &err),
             LAMINAR_ERR_SQL_UNSUPPORTED, &err);
  /* A syntax error anywhere applies nothing; a later statement's semantic error
   * leaves the statements before it applied. */
  CHECK_CODE(
      laminar_execute(
          db, "CREATE STREAM ok AS SELECT a FROM t; CREATE STREAM bad AS SELECT", &err),
      LAMINAR_ERR_SQL_SYNTAX, &err);
  CHECK_CODE(laminar_subscribe(db, "ok", &sub_unused, &err),
             LAMINAR_ERR_SQL_UNKNOWN_OBJECT, &err);
  CHECK_CODE(
      laminar_execute(
          db,
          "CREATE STREAM ok AS SELECT a FROM t;\nCREATE STREAM bad AS SELECT q FROM t",
          &err),
      LAMINAR_ERR_SQL_UNKNOWN_COLUMN, &err);
  EXPECT(err.line == 2 && err.column == 29);
  laminar_subscription* sub;
  CHECK_CODE(laminar_subscribe(db, "ok", &sub, &err), LAMINAR_OK, &err);
  laminar_subscription_close(sub);
  CHECK_CODE(laminar_subscribe(db, "t", &sub, &err), LAMINAR_ERR_SQL_UNKNOWN_OBJECT,
             &err);
  laminar_close(db);
  return 0;
}

static int count_output_rows(laminar_subscription* sub) {
  int rows = 0;
  laminar_error err;
  for (;;) {
    struct ArrowArray arr;
    if (laminar_subscription_next(sub, 0, &arr, NULL, &err) != LAMINAR_OK) return -1;
    if (arr.release == NULL) return rows;
    rows += (int)arr.length;
    arr.release(&arr);
  }
}

static int test_rejected_push_keeps_earlier_data(void) {
  laminar_db* db;
  laminar_error err;
  CHECK_CODE(laminar_open(NULL, &db, &err), LAMINAR_OK, &err);
  CHECK_CODE(laminar_execute(db, QUICKSTART_SQL, &err), LAMINAR_OK, &err);
  CHECK_CODE(laminar_execute(db, "CREATE STREAM raw AS SELECT * FROM trades", &err),
             LAMINAR_OK, &err);
  laminar_source* src;
  laminar_subscription* sub;
  CHECK_CODE(laminar_source_open(db, "trades", &src, &err), LAMINAR_OK, &err);
  CHECK_CODE(laminar_subscribe(db, "raw", &sub, &err), LAMINAR_OK, &err);
  trade_row good[] = {{"A", 1.0, false, 1, false, 10}, {"B", 2.0, false, 2, false, 20}};
  CHECK(push_rows(src, good, 2, false) == 0);
  /* NULL symbol into NOT NULL: refused whole, still the caller's. */
  trade_row bad[] = {{"C", 1.0, false, 1, false, 30}, {NULL, 1.0, false, 1, false, 40}};
  struct ArrowArray array;
  struct ArrowSchema schema;
  CHECK(build_trades(bad, 2, false, &array, &schema) == 0);
  CHECK_CODE(laminar_source_push(src, &array, &schema, &err), LAMINAR_ERR_NULL_VIOLATION,
             &err);
  EXPECT(strcmp(err.column_name, "symbol") == 0);
  EXPECT(array.release != NULL);
  /* Wrong type: rename a column's format. */
  const char* saved = schema.children[1]->format;
  schema.children[1]->format = "l";
  CHECK_CODE(laminar_source_push(src, &array, &schema, &err), LAMINAR_ERR_COLUMN_TYPE,
             &err);
  EXPECT(strcmp(err.column_name, "price") == 0);
  schema.children[1]->format = saved;
  /* Malformed: non-monotone string offsets (checked before NULLs). */
  int32_t* offsets = (int32_t*)array.children[0]->buffers[1];
  int32_t keep = offsets[1];
  offsets[1] = offsets[2] + 7;
  CHECK_CODE(laminar_source_push(src, &array, &schema, &err), LAMINAR_ERR_ARROW_INVALID,
             &err);
  EXPECT(strcmp(err.column_name, "symbol") == 0);
  offsets[1] = keep;
  /* Released array. */
  struct ArrowArray released = {0};
  CHECK_CODE(laminar_source_push(src, &released, &schema, &err),
             LAMINAR_ERR_ARROW_RELEASED, &err);
  array.release(&array);
  schema.release(&schema);
  CHECK_CODE(laminar_run_until_idle(db, &err), LAMINAR_OK, &err);
  EXPECT(count_output_rows(sub) == 2);
  laminar_subscription_close(sub);
  laminar_source_close(src);
  laminar_close(db);
  return 0;
}

static int test_misuse_and_config(void) {
  laminar_error err;
  laminar_db* db = NULL;
  CHECK_CODE(laminar_open(NULL, NULL, &err), LAMINAR_ERR_MISUSE, &err);
  CHECK_CODE(laminar_execute(NULL, "SHOW SOURCES", &err), LAMINAR_ERR_MISUSE, &err);
  CHECK_CODE(laminar_close(NULL), LAMINAR_OK, &err);
  laminar_source_close(NULL);
  laminar_subscription_close(NULL);
  laminar_config_destroy(NULL);
  laminar_config* cfg;
  CHECK_CODE(laminar_config_create(&cfg), LAMINAR_OK, &err);
  CHECK_CODE(laminar_config_set(cfg, "buffer_size", "100", &err),
             LAMINAR_ERR_CONFIG_VALUE, &err);
  CHECK_CODE(laminar_config_set(cfg, "nope", "1", &err), LAMINAR_ERR_CONFIG_KEY, &err);
  CHECK_CODE(laminar_config_set(cfg, "buffer_size", "4", &err), LAMINAR_OK, &err);
  CHECK_CODE(laminar_open(cfg, &db, &err), LAMINAR_OK, &err);
  laminar_config_destroy(cfg);
  CHECK_CODE(laminar_execute(db, QUICKSTART_SQL, &err), LAMINAR_OK, &err);
  laminar_source* src;
  laminar_source* src2;
  CHECK_CODE(laminar_source_open(db, "trades", &src, &err), LAMINAR_OK, &err);
  CHECK_CODE(laminar_source_open(db, "trades", &src2, &err), LAMINAR_ERR_STATE, &err);
  CHECK_CODE(laminar_source_open(db, "vwap", &src2, &err), LAMINAR_ERR_SQL_UNKNOWN_OBJECT,
             &err);
  /* Queue of 4: the fifth push without a driver is refused, nothing lost. */
  trade_row r[] = {{"A", 1.0, false, 1, false, 10}};
  for (int i = 0; i < 4; i++) CHECK(push_rows(src, r, 1, false) == 0);
  struct ArrowArray array;
  struct ArrowSchema schema;
  CHECK(build_trades(r, 1, false, &array, &schema) == 0);
  CHECK_CODE(laminar_source_push(src, &array, &schema, &err), LAMINAR_ERR_QUEUE_FULL,
             &err);
  CHECK(array.release != NULL);
  CHECK_CODE(laminar_run_until_idle(db, &err), LAMINAR_OK, &err);
  CHECK_CODE(laminar_source_push(src, &array, &schema, &err), LAMINAR_OK, &err);
  schema.release(&schema);
  CHECK_CODE(laminar_start(db, &err), LAMINAR_OK, &err);
  CHECK_CODE(laminar_start(db, &err), LAMINAR_ERR_STATE, &err);
  CHECK_CODE(laminar_run_until_idle(db, &err), LAMINAR_ERR_STATE, &err);
  CHECK_CODE(laminar_stop(db, &err), LAMINAR_OK, &err);
  CHECK_CODE(laminar_stop(db, &err), LAMINAR_OK, &err);
  EXPECT(strcmp(laminar_errstr(LAMINAR_ERR_SQL_SYNTAX), "SQL syntax error") == 0);
  laminar_source_close(src);
  laminar_close(db);
  return 0;
}

/* Threaded driver with a consumer blocking in next(): results arrive. */
static int test_threaded_blocking_next(void) {
  laminar_db* db;
  laminar_error err;
  CHECK_CODE(laminar_open(NULL, &db, &err), LAMINAR_OK, &err);
  CHECK_CODE(laminar_execute(db, QUICKSTART_SQL, &err), LAMINAR_OK, &err);
  laminar_source* src;
  laminar_subscription* sub;
  CHECK_CODE(laminar_source_open(db, "trades", &src, &err), LAMINAR_OK, &err);
  CHECK_CODE(laminar_subscribe(db, "vwap", &sub, &err), LAMINAR_OK, &err);
  CHECK_CODE(laminar_start(db, &err), LAMINAR_OK, &err);
  trade_row r[] = {{"A", 1.0, false, 1, false, 10}, {"A", 1.0, false, 1, false, 3000}};
  CHECK(push_rows(src, r, 2, false) == 0);
  struct ArrowArray arr;
  CHECK_CODE(laminar_subscription_next(sub, 10000, &arr, NULL, &err), LAMINAR_OK, &err);
  CHECK(arr.release != NULL);
  EXPECT(arr.length == 1);
  arr.release(&arr);
  /* Subscribing while the reactor runs works too. */
  laminar_subscription* late_sub;
  CHECK_CODE(laminar_subscribe(db, "vwap", &late_sub, &err), LAMINAR_OK, &err);
  CHECK_CODE(laminar_source_watermark(src, INT64_MAX, &err), LAMINAR_OK, &err);
  CHECK_CODE(laminar_subscription_next(late_sub, 10000, &arr, NULL, &err), LAMINAR_OK,
             &err);
  CHECK(arr.release != NULL);
  arr.release(&arr);
  laminar_subscription_close(late_sub);
  CHECK_CODE(laminar_close(db), LAMINAR_OK, &err); /* closes src and sub too */
  return 0;
}

static int test_stream_interface(void) {
  laminar_db* db;
  laminar_error err;
  CHECK_CODE(laminar_open(NULL, &db, &err), LAMINAR_OK, &err);
  CHECK_CODE(laminar_execute(db, QUICKSTART_SQL, &err), LAMINAR_OK, &err);
  CHECK_CODE(
      laminar_execute(db, "CREATE STREAM raw AS SELECT symbol, price FROM trades", &err),
      LAMINAR_OK, &err);
  laminar_source* src;
  laminar_subscription* sub;
  CHECK_CODE(laminar_source_open(db, "trades", &src, &err), LAMINAR_OK, &err);
  CHECK_CODE(laminar_subscribe(db, "raw", &sub, &err), LAMINAR_OK, &err);
  trade_row r[] = {{"A", 1.0, false, 1, false, 10}, {"B", 2.0, false, 1, false, 20}};
  CHECK(push_rows(src, r, 2, false) == 0);
  CHECK(push_rows(src, r, 1, true) == 0);
  CHECK_CODE(laminar_run_until_idle(db, &err), LAMINAR_OK, &err);
  struct ArrowArrayStream st;
  CHECK_CODE(laminar_subscription_stream(sub, &st, &err), LAMINAR_OK, &err);
  struct ArrowSchema schema;
  CHECK(st.get_schema(&st, &schema) == 0);
  EXPECT(schema.n_children == 2);
  schema.release(&schema);
  int64_t rows = 0;
  for (;;) {
    struct ArrowArray arr;
    CHECK(st.get_next(&st, &arr) == 0);
    if (arr.release == NULL) break;
    rows += arr.length;
    arr.release(&arr);
  }
  EXPECT(rows == 3);
  st.release(&st);
  laminar_subscription_close(sub);
  laminar_source_close(src);
  laminar_close(db);
  return 0;
}


/* ---- TIMESTAMP event time ----------------------------------------------------------- */

/* A batch (k utf8, t timestamp[unit]) built with nanoarrow. */
static int build_events(const char* const* keys, const int64_t* times, int64_t n,
                        enum ArrowTimeUnit unit, struct ArrowArray* array,
                        struct ArrowSchema* schema) {
  ArrowSchemaInit(schema);
  CHECK(ArrowSchemaSetTypeStruct(schema, 2) == NANOARROW_OK);
  CHECK(ArrowSchemaSetType(schema->children[0], NANOARROW_TYPE_STRING) == NANOARROW_OK);
  CHECK(ArrowSchemaSetName(schema->children[0], "k") == NANOARROW_OK);
  CHECK(ArrowSchemaSetTypeDateTime(schema->children[1], NANOARROW_TYPE_TIMESTAMP, unit,
                                   NULL) == NANOARROW_OK);
  CHECK(ArrowSchemaSetName(schema->children[1], "t") == NANOARROW_OK);
  CHECK(ArrowArrayInitFromSchema(array, schema, NULL) == NANOARROW_OK);
  CHECK(ArrowArrayStartAppending(array) == NANOARROW_OK);
  for (int64_t i = 0; i < n; i++) {
    struct ArrowStringView sv = {keys[i], (int64_t)strlen(keys[i])};
    CHECK(ArrowArrayAppendString(array->children[0], sv) == NANOARROW_OK);
    CHECK(ArrowArrayAppendInt(array->children[1], times[i]) == NANOARROW_OK);
    CHECK(ArrowArrayFinishElement(array) == NANOARROW_OK);
  }
  CHECK(ArrowArrayFinishBuildingDefault(array, NULL) == NANOARROW_OK);
  return 0;
}

static int test_timestamp_windows(void) {
  laminar_db* db;
  laminar_error err;
  CHECK_CODE(laminar_open(NULL, &db, &err), LAMINAR_OK, &err);
  CHECK_CODE(laminar_execute(
                 db,
                 "CREATE SOURCE e (k VARCHAR, t TIMESTAMP,"
                 " WATERMARK FOR t AS t - INTERVAL '2' MINUTE);"
                 "CREATE STREAM m AS SELECT k, window_start, window_end, COUNT(*) AS c"
                 " FROM e GROUP BY k, tumble(t, INTERVAL '1' MINUTE)",
                 &err),
             LAMINAR_OK, &err);
  laminar_source* src;
  laminar_subscription* sub;
  CHECK_CODE(laminar_source_open(db, "e", &src, &err), LAMINAR_OK, &err);
  CHECK_CODE(laminar_subscribe(db, "m", &sub, &err), LAMINAR_OK, &err);
  /* 2023-11-14 22:13:20 UTC = 1700000000 s; the same instants in s, ms and ns. */
  const char* keys[] = {"a", "a", "b"};
  const int64_t secs[] = {1700000000, 1700000010, 1700000059};
  enum ArrowTimeUnit units[] = {NANOARROW_TIME_UNIT_SECOND, NANOARROW_TIME_UNIT_MILLI,
                                NANOARROW_TIME_UNIT_NANO};
  int64_t scale[] = {1, 1000, 1000000000};
  for (int u = 0; u < 3; u++) {
    int64_t times[3];
    for (int i = 0; i < 3; i++) times[i] = secs[i] * scale[u];
    struct ArrowArray array;
    struct ArrowSchema schema;
    CHECK(build_events(keys, times, 3, units[u], &array, &schema) == 0);
    CHECK_CODE(laminar_source_push(src, &array, &schema, &err), LAMINAR_OK, &err);
    schema.release(&schema);
  }
  CHECK_CODE(laminar_source_watermark(src, INT64_MAX, &err), LAMINAR_OK, &err);
  CHECK_CODE(laminar_run_until_idle(db, &err), LAMINAR_OK, &err);
  result_view rv = {0};
  CHECK_CODE(laminar_subscription_next(sub, 0, &rv.array, &rv.schema, &err), LAMINAR_OK,
             &err);
  CHECK(rv.array.release != NULL && result_view_init(&rv) == 0);
  EXPECT(strcmp(rv.schema.children[1]->format, "tsu:") == 0);
  /* 1700000000 s lies in the minute starting 1699999980 s; 1700000059 in the next. */
  CHECK(rv.array.length == 2);
  int64_t ws0 = ArrowArrayViewGetIntUnsafe(rv.view.children[1], 0);
  int64_t we0 = ArrowArrayViewGetIntUnsafe(rv.view.children[2], 0);
  EXPECT(ws0 == 1699999980LL * 1000000);
  EXPECT(we0 == 1700000040LL * 1000000);
  EXPECT(ArrowArrayViewGetIntUnsafe(rv.view.children[3], 0) ==
         6); /* a: 2 rows x 3 units */
  EXPECT(ArrowArrayViewGetIntUnsafe(rv.view.children[1], 1) == 1700000040LL * 1000000);
  EXPECT(ArrowArrayViewGetIntUnsafe(rv.view.children[3], 1) == 3);
  result_view_free(&rv);
  laminar_close(db);
  return 0;
}

/* The smallest queues (buffer_size = 2) with a cascade of streams, each with a
 * subscriber: one message yields at most one batch per stream, so inline runs
 * always progress once the consumers have drained their queues. */
static int test_smallest_queues_progress(void) {
  laminar_config* cfg;
  laminar_error err;
  laminar_db* db;
  CHECK_CODE(laminar_config_create(&cfg), LAMINAR_OK, &err);
  CHECK_CODE(laminar_config_set(cfg, "buffer_size", "2", &err), LAMINAR_OK, &err);
  CHECK_CODE(laminar_open(cfg, &db, &err), LAMINAR_OK, &err);
  laminar_config_destroy(cfg);
  CHECK_CODE(laminar_execute(
                 db,
                 "CREATE SOURCE trades (symbol VARCHAR, price DOUBLE, volume BIGINT,"
                 " ts BIGINT, WATERMARK FOR ts AS ts);"
                 "CREATE STREAM m1 AS SELECT symbol, ts, volume FROM trades;"
                 "CREATE STREAM w1 AS SELECT symbol, window_start AS ws, SUM(volume) AS v"
                 " FROM m1 GROUP BY symbol, tumble(ts, INTERVAL '10' MILLISECOND);"
                 "CREATE STREAM m2 AS SELECT symbol, ws, v * 2 AS v2 FROM w1;"
                 "CREATE STREAM w2 AS SELECT window_start, COUNT(*) AS n FROM m2"
                 " GROUP BY tumble(ws, INTERVAL '100' MILLISECOND)",
                 &err),
             LAMINAR_OK, &err);
  const char* names[] = {"m1", "w1", "m2", "w2"};
  laminar_subscription* subs[4];
  for (int i = 0; i < 4; i++)
    CHECK_CODE(laminar_subscribe(db, names[i], &subs[i], &err), LAMINAR_OK, &err);
  laminar_source* src;
  CHECK_CODE(laminar_source_open(db, "trades", &src, &err), LAMINAR_OK, &err);
  int64_t rows[4] = {0, 0, 0, 0};
  /* 50 batches, then the final watermark; after each step drain every queue. */
  for (int b = 0; b <= 50; b++) {
    if (b < 50) {
      trade_row r[] = {{"A", 1.0, false, 1, false, b * 7},
                       {"B", 1.0, false, 2, false, b * 7 + 3}};
      CHECK(push_rows(src, r, 2, false) == 0);
    } else {
      CHECK_CODE(laminar_source_watermark(src, INT64_MAX, &err), LAMINAR_OK, &err);
    }
    CHECK_CODE(laminar_run_until_idle(db, &err), LAMINAR_OK, &err);
    for (int i = 0; i < 4; i++) {
      for (;;) {
        struct ArrowArray arr;
        CHECK_CODE(laminar_subscription_next(subs[i], 0, &arr, NULL, &err), LAMINAR_OK,
                   &err);
        if (arr.release == NULL) break;
        rows[i] += arr.length;
        arr.release(&arr);
      }
    }
  }
  EXPECT(rows[0] == 100);
  EXPECT(rows[1] == rows[2] && rows[1] > 0);
  EXPECT(rows[3] == 4); /* ts 0..346: windows of 100 ms on ws */
  laminar_close(db);
  return 0;
}

int main(int argc, char** argv) {
  static const lm_test_case cases[] = {
      {"quickstart", test_quickstart},
      {"windows_vs_reference", test_windows_vs_reference},
      {"late_rows_dropped_and_counted", test_late_rows_dropped_and_counted},
      {"filter_project_and_cascade", test_filter_project_and_cascade},
      {"show_describe_schema", test_show_describe_schema},
      {"sql_errors_have_positions", test_sql_errors_have_positions},
      {"rejected_push_keeps_earlier_data", test_rejected_push_keeps_earlier_data},
      {"misuse_and_config", test_misuse_and_config},
      {"threaded_blocking_next", test_threaded_blocking_next},
      {"stream_interface", test_stream_interface},
      {"timestamp_windows", test_timestamp_windows},
      {"smallest_queues_progress", test_smallest_queues_progress},
      {NULL, NULL},
  };
  return lm_test_main(argc, argv, cases);
}
