/*
 * test_quantile_aggs.c -- the order statistics and sketches through
 * laminar.h: a materialized view of median / quantile_cont / quantile_disc /
 * approx_quantile per key over a changelog source (random inserts and
 * retractions of rows held, NULLs, repeated values) equals the quantiles of
 * the rows held, sorted here, after every batch (approx_quantile within its
 * 1% of quantile_disc); the view survives a checkpoint and a restart (the
 * same bits after reopening, the same answers after more retractions); the
 * refusals: approx_count_distinct over a changelog, list / array_agg (no
 * LIST type), a fraction that is not a literal in [0, 1], median of a
 * string, and the two-phase split of a quantile.
 */
#include "lm_test_fs.h" /* first: _GNU_SOURCE */

#include "held_view_util.h"
#include "lm_test.h"
#include "lm_test_durable.h"
#include "views_util.h"

#include <math.h>
#include <stdlib.h>

static const char* SOURCE_SQL = "CREATE SOURCE t (k VARCHAR, v BIGINT, _weight BIGINT);";
static const char* VIEW_SQL =
    "CREATE MATERIALIZED VIEW m AS SELECT k, median(v) AS md, quantile_cont(v, 0.3) AS "
    "qc,"
    " quantile_disc(v, 0.75) AS qd, approx_quantile(v, 0.9) AS aq FROM t GROUP BY k";

static int cmp_i64(const void* a, const void* b) {
  int64_t x = *(const int64_t*)a, y = *(const int64_t*)b;
  return (x > y) - (x < y);
}

/* DuckDB's positions (docs/SQL.md): discrete max(1, n - floor(n - q n)) - 1,
 * continuous (n - 1) q interpolated. */
static int64_t disc(const int64_t* s, int64_t n, double q) {
  int64_t k = n - (int64_t)floor((double)n - q * (double)n);
  return s[(k < 1 ? 1 : k) - 1];
}

static double cont(const int64_t* s, int64_t n, double q) {
  double rn = (double)(n - 1) * q, lo = floor(rn), hi = ceil(rn);
  double a = (double)s[(int64_t)lo], b = (double)s[(int64_t)hi];
  return rn == lo ? a : a + (rn - lo) * (b - a);
}

/* Compare view m (one row per key holding a row) with the rows held. */
static int check_view(laminar_db* db, const held* h) {
  laminar_error err;
  struct ArrowArrayStream st;
  CHECK_CODE(laminar_query(db, "SELECT * FROM m", &st, &err), LAMINAR_OK, &err);
  result_view rv;
  memset(&rv, 0, sizeof rv);
  CHECK(st.get_schema(&st, &rv.schema) == 0);
  int seen[NKEYS] = {0}, bad = 0;
  static int64_t sorted[MAXHELD];
  for (;;) {
    CHECK(st.get_next(&st, &rv.array) == 0);
    if (rv.array.release == NULL) break;
    CHECK(result_view_init(&rv) == 0);
    for (int64_t r = 0; r < rv.array.length; r++) {
      int k = held_key(ArrowArrayViewGetStringUnsafe(rv.view.children[0], r));
      EXPECT(k >= 0 && !seen[k]);
      if (k < 0 || seen[k]) continue;
      seen[k] = 1;
      int64_t n = 0;
      for (int i = 0; i < h[k].n; i++) {
        if (!h[k].nul[i]) sorted[n++] = h[k].v[i];
      }
      qsort(sorted, (size_t)n, sizeof sorted[0], cmp_i64);
      double want[4] = {0};
      if (n > 0) {
        want[0] = cont(sorted, n, 0.5);
        want[1] = cont(sorted, n, 0.3);
        want[2] = (double)disc(sorted, n, 0.75);
        want[3] = (double)disc(sorted, n, 0.9);
      }
      for (int c = 0; c < 4; c++) {
        struct ArrowArrayView* col = rv.view.children[c + 1];
        int got_null = ArrowArrayViewIsNull(col, r);
        double got = c == 2 ? (double)ArrowArrayViewGetIntUnsafe(col, r)
                            : ArrowArrayViewGetDoubleUnsafe(col, r);
        int ok = got_null == (n == 0);
        if (ok && n > 0 && c < 3) ok = got == want[c];
        if (ok && n > 0 && c == 3)
          ok = fabs(got - want[c]) <= 0.01 * fabs(want[c]) * 1.000001;
        if (!ok && bad++ < 5) {
          fprintf(stderr, "key %s column %s: got %s%.17g, want %s%.17g\n", KEYS[k],
                  rv.schema.children[c + 1]->name, got_null ? "NULL " : "", got,
                  n == 0 ? "NULL " : "", want[c]);
        }
      }
    }
    ArrowArrayViewReset(&rv.view);
    rv.array.release(&rv.array);
  }
  rv.schema.release(&rv.schema);
  st.release(&st);
  for (int k = 0; k < NKEYS; k++) {
    if (seen[k] != (h[k].n > 0) && bad++ < 5)
      fprintf(stderr, "key %s: row %s, %d rows held\n", KEYS[k],
              seen[k] ? "present" : "missing", h[k].n);
  }
  return bad == 0 ? 0 : 1;
}

static int test_retractions_match_sorted(void) {
  uint64_t rng = lm_test_seed();
  /* values in [-20, 20] (many repeats), then in [-1e6, 1e6] (few) */
  CHECK(held_run(SOURCE_SQL, VIEW_SQL, &rng, -20, 41, 60, check_view) == 0);
  CHECK(held_run(SOURCE_SQL, VIEW_SQL, &rng, -1000000, 2000001, 60, check_view) == 0);
  return 0;
}

static int test_restart_keeps_the_values(void) {
  uint64_t rng = lm_test_seed() ^ 0x5eed;
  CHECK(held_restart(SOURCE_SQL, VIEW_SQL, &rng, -50, 101, check_view) == 0);
  return 0;
}

/* `sql` fails with `code` and a message naming `what`; the name m stays free. */
static int refused(laminar_db* db, const char* sql, laminar_code code, const char* what) {
  laminar_error err;
  CHECK_CODE(laminar_execute(db, sql, &err), code, &err);
  EXPECT(strstr(err.message, what) != NULL);
  if (strstr(err.message, what) == NULL) fprintf(stderr, "message: %s\n", err.message);
  return 0;
}

static int test_refusals(void) {
  laminar_db* db;
  laminar_error err;
  CHECK_CODE(laminar_open(NULL, &db, &err), LAMINAR_OK, &err);
  CHECK_CODE(laminar_execute(db, SOURCE_SQL, &err), LAMINAR_OK, &err);
  CHECK_CODE(laminar_execute(db,
                             "CREATE SOURCE s (k VARCHAR, v BIGINT, ts BIGINT,"
                             " WATERMARK FOR ts AS ts)",
                             &err),
             LAMINAR_OK, &err);
  CHECK(refused(db,
                "CREATE MATERIALIZED VIEW m AS SELECT k, approx_count_distinct(v) AS d "
                "FROM t GROUP BY k",
                LAMINAR_ERR_SQL_UNSUPPORTED, "approx_count_distinct") == 0);
  CHECK(refused(db, "CREATE STREAM m AS SELECT k, list(v) AS l FROM s GROUP BY k",
                LAMINAR_ERR_SQL_UNSUPPORTED, "no LIST type") == 0);
  CHECK(refused(db, "CREATE STREAM m AS SELECT k, array_agg(v) AS l FROM s GROUP BY k",
                LAMINAR_ERR_SQL_UNSUPPORTED, "array_agg") == 0);
  CHECK(refused(db,
                "CREATE STREAM m AS SELECT k, string_agg(k, ',') AS l FROM s GROUP BY k",
                LAMINAR_ERR_SQL_UNSUPPORTED, "string_agg") == 0);
  CHECK(refused(db,
                "CREATE STREAM m AS SELECT k, quantile_cont(v, v) AS q FROM s GROUP BY k",
                LAMINAR_ERR_SQL_FUNCTION_ARGS, "between 0 and 1") == 0);
  CHECK(
      refused(db,
              "CREATE STREAM m AS SELECT k, approx_quantile(v, 2) AS q FROM s GROUP BY k",
              LAMINAR_ERR_SQL_FUNCTION_ARGS, "between 0 and 1") == 0);
  CHECK(refused(db, "CREATE STREAM m AS SELECT median(k) AS q FROM s GROUP BY v",
                LAMINAR_ERR_TYPE_MISMATCH, "median") == 0);
  CHECK_CODE(laminar_execute(db,
                             "CREATE STREAM m AS SELECT k, median(v) AS q FROM s "
                             "GROUP BY k, tumble(ts, INTERVAL '1' SECOND)",
                             &err),
             LAMINAR_OK, &err);
  struct ArrowArrayStream out;
  CHECK_CODE(laminar_stream_two_phase(db, "m", &out, &err), LAMINAR_ERR_SQL_UNSUPPORTED,
             &err);
  EXPECT(strstr(err.message, "median() does not decompose") != NULL);
  laminar_close(db);
  return 0;
}

int main(int argc, char** argv) {
  static const lm_test_case cases[] = {
      {"retractions_match_sorted", test_retractions_match_sorted},
      {"restart_keeps_the_values", test_restart_keeps_the_values},
      {"refusals", test_refusals},
      {NULL, NULL},
  };
  return lm_test_main(argc, argv, cases);
}
