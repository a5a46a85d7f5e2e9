/*
 * test_stats_aggs.c -- the statistical aggregates through laminar.h: a
 * materialized view of var/stddev/covar/corr/regr_* per key over a changelog
 * source (random inserts and retractions of rows held, NULLs, values on a
 * large offset where a sum of squares would cancel) equals a two-pass
 * computation in long double after every batch; the view's moments survive a
 * checkpoint and a restart (the same bits after reopening, the same answers
 * after more retractions); arg_min/arg_max over a changelog are refused.
 *
 * Tolerance: |got - want| <= rel * |want| + abs, rel = 1e-9 + 1e-12 * cond,
 * where spread is the key's largest |v - mean| (1 at least) and cond = the
 * largest |v| / spread (a retraction costs digits in proportion: values on
 * an offset of 1e9 with a spread of 1e3 keep about 10 of 16); abs is
 * rel * spread^2 for second moments, its root for deviations, rel * spread *
 * 10 for the intercept (|x| < 10) and 1e-6 + rel for the ratios (corr,
 * regr_r2, regr_slope). Where the rows a key holds have a constant x or y
 * the ratios (corr, regr_slope, regr_intercept, regr_r2) are NaN or NULL in
 * exact arithmetic but, after retractions, a ratio of rounding residues
 * (documented in docs/SQL.md): they are not compared there.
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
    "CREATE MATERIALIZED VIEW m AS SELECT k, var_pop(v) AS vp, var_samp(v) AS vs,"
    " stddev_samp(v) AS ss, stddev_pop(v) AS sp, covar_pop(v, v % 10) AS cp,"
    " covar_samp(v, v % 10) AS cs, corr(v, v % 10) AS c, regr_slope(v, v % 10) AS rs,"
    " regr_intercept(v, v % 10) AS ri, regr_r2(v, v % 10) AS r2,"
    " regr_count(v, v % 10) AS rc FROM t GROUP BY k";

#define NSTATS 11

/* What a key's row should hold: value and NULL flag per column (after k). */
typedef struct expect_row {
  long double val[NSTATS];
  int is_null[NSTATS];
  int is_nan[NSTATS];
  int degenerate; /* a constant x or y: the ratios are residues */
  long double spread;
  long double big; /* the largest |v| */
} expect_row;

static void two_pass(const held* h, expect_row* e) {
  memset(e, 0, sizeof *e);
  long double n = 0, sy = 0, sx = 0;
  for (int i = 0; i < h->n; i++) {
    if (h->nul[i]) continue;
    n++;
    sy += (long double)h->v[i];
    sx += (long double)(h->v[i] % 10);
  }
  long double my = n > 0 ? sy / n : 0, mx = n > 0 ? sx / n : 0;
  long double qy = 0, qx = 0, cxy = 0;
  e->spread = 1;
  for (int i = 0; i < h->n; i++) {
    if (h->nul[i]) continue;
    long double dy = (long double)h->v[i] - my, dx = (long double)(h->v[i] % 10) - mx;
    qy += dy * dy;
    qx += dx * dx;
    cxy += dy * dx;
    if (fabsl(dy) > e->spread) e->spread = fabsl(dy);
  }
  e->big = 1;
  for (int i = 0; i < h->n; i++) {
    long double a = fabsl((long double)h->v[i]);
    if (!h->nul[i] && a > e->big) e->big = a;
  }
  for (int c = 0; c < NSTATS - 1; c++) e->is_null[c] = n == 0;
  if (n == 0) {
    e->val[10] = 0;
    return;
  }
  long double vx = n > 1 ? qx / n : 0, vy = n > 1 ? qy / n : 0, cov = cxy / n;
  e->val[0] = qy / n;
  e->is_null[1] = e->is_null[2] = e->is_null[5] = n < 2;
  e->val[1] = n > 1 ? qy / (n - 1) : 0;
  e->val[2] = sqrtl(e->val[1]);
  e->val[3] = sqrtl(qy / n);
  e->val[4] = cov;
  e->val[5] = n > 1 ? cxy / (n - 1) : 0;
  e->degenerate = vx == 0 || vy == 0;
  e->is_nan[6] = vx == 0 || vy == 0;
  e->val[6] = e->is_nan[6] ? 0 : cov / (sqrtl(vx) * sqrtl(vy));
  e->is_nan[7] = vx == 0;
  e->val[7] = vx == 0 ? 0 : cov / vx;
  e->is_null[8] = vx == 0;
  e->val[8] = vx == 0 ? 0 : my - (cov / vx) * mx;
  e->is_null[9] = vx == 0;
  e->val[9] = vy == 0 ? 1 : e->val[6] * e->val[6];
  e->val[10] = n;
}

/* The relative tolerance of e's row (see the file comment). */
static long double rel_tolerance(const expect_row* e) {
  return 1e-9L + 1e-12L * (e->big / e->spread);
}

/* Absolute tolerance of column c (see the file comment). */
static long double tolerance(int c, const expect_row* e) {
  long double rel = rel_tolerance(e), sq = rel * e->spread * e->spread;
  switch (c) {
    case 0:
    case 1:
    case 4:
    case 5: return sq;
    case 2:
    case 3: return sqrtl(sq);
    case 8: return rel * e->spread * 10;
    default: return 1e-6L + rel;
  }
}

/* Compare view m (one row per key holding a row) with two_pass over `h`. */
static int check_view(laminar_db* db, const held* h) {
  laminar_error err;
  struct ArrowArrayStream st;
  CHECK_CODE(laminar_query(db, "SELECT * FROM m", &st, &err), LAMINAR_OK, &err);
  result_view rv;
  memset(&rv, 0, sizeof rv);
  CHECK(st.get_schema(&st, &rv.schema) == 0);
  int seen[NKEYS] = {0}, bad = 0;
  for (;;) {
    CHECK(st.get_next(&st, &rv.array) == 0);
    if (rv.array.release == NULL) break;
    CHECK(result_view_init(&rv) == 0);
    for (int64_t r = 0; r < rv.array.length; r++) {
      int k = held_key(ArrowArrayViewGetStringUnsafe(rv.view.children[0], r));
      EXPECT(k >= 0 && !seen[k]);
      if (k < 0 || seen[k]) continue;
      seen[k] = 1;
      expect_row e;
      two_pass(&h[k], &e);
      for (int c = 0; c < NSTATS; c++) {
        struct ArrowArrayView* col = rv.view.children[c + 1];
        int got_null = ArrowArrayViewIsNull(col, r);
        long double got = c == NSTATS - 1
                              ? (long double)ArrowArrayViewGetIntUnsafe(col, r)
                              : (long double)ArrowArrayViewGetDoubleUnsafe(col, r);
        if (e.degenerate && c >= 6 && c <= 9) continue;
        int ok = got_null == e.is_null[c];
        if (ok && !got_null && e.is_nan[c]) ok = isnan((double)got);
        if (ok && !got_null && !e.is_nan[c])
          ok = fabsl(got - e.val[c]) <=
               rel_tolerance(&e) * fabsl(e.val[c]) + tolerance(c, &e);
        if (!ok && bad++ < 5) {
          fprintf(stderr, "key %s column %s: got %s%.17Lg, want %s%.17Lg%s\n", KEYS[k],
                  rv.schema.children[c + 1]->name, got_null ? "NULL " : "", got,
                  e.is_null[c] ? "NULL " : "", e.val[c], e.is_nan[c] ? " (NaN)" : "");
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

static int test_retractions_match_two_pass(void) {
  uint64_t rng = lm_test_seed();
  /* values within 1000 of 0, then of 1e9 (naive sums of squares cancel) */
  CHECK(held_run(SOURCE_SQL, VIEW_SQL, &rng, -1000, 2001, 60, check_view) == 0);
  CHECK(held_run(SOURCE_SQL, VIEW_SQL, &rng, 1000000000 - 1000, 2001, 60, check_view) ==
        0);
  return 0;
}

static int test_restart_keeps_moments(void) {
  uint64_t rng = lm_test_seed() ^ 0x5eed;
  CHECK(held_restart(SOURCE_SQL, VIEW_SQL, &rng, 12345 - 1000, 2001, check_view) == 0);
  return 0;
}

static int test_arg_min_refused_over_changelog(void) {
  laminar_db* db;
  laminar_error err;
  CHECK_CODE(laminar_open(NULL, &db, &err), LAMINAR_OK, &err);
  CHECK_CODE(laminar_execute(db, SOURCE_SQL, &err), LAMINAR_OK, &err);
  CHECK_CODE(laminar_execute(db,
                             "CREATE MATERIALIZED VIEW m AS SELECT k, arg_max(k, v) AS a "
                             "FROM t GROUP BY k",
                             &err),
             LAMINAR_ERR_SQL_UNSUPPORTED, &err);
  EXPECT(strstr(err.message, "arg_max") != NULL);
  CHECK_CODE(laminar_execute(db, VIEW_SQL, &err), LAMINAR_OK,
             &err); /* the name is free */
  laminar_close(db);
  return 0;
}

int main(int argc, char** argv) {
  static const lm_test_case cases[] = {
      {"retractions_match_two_pass", test_retractions_match_two_pass},
      {"restart_keeps_moments", test_restart_keeps_moments},
      {"arg_min_refused_over_changelog", test_arg_min_refused_over_changelog},
      {NULL, NULL},
  };
  return lm_test_main(argc, argv, cases);
}
