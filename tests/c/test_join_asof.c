/*
 * test_join_asof.c -- ASOF JOIN through laminar.h: two sources a (left) and b
 * (right) of trade rows (symbol, price, volume = a row id, ts), each with its
 * own watermark delay, pushed in random batches and interleavings.
 *  - model: every ordering (>=, >, <=, <), inner and LEFT, with and without a
 *    tolerance, equals a brute-force model computed here (the nearest right
 *    row of equal symbol on the ordering's side, the last to arrive among
 *    equal times; NULL symbols never match);
 *  - held rows: the join's metrics show rows waiting and kept, and they fall
 *    back once the watermarks pass;
 *  - errors: no ordering condition, a type mismatch in ON, a non-time
 *    ordering column: their codes with line and column;
 *  - durable: a join (a file sink on it, and a window over it) on a durable
 *    database, copied mid-run as a crash leaves it, reopened and each source
 *    resumed from its offset, gives an uninterrupted run's output; with
 *    cores = 2 (each input routed by its key) the rows of cores = 1, also
 *    when the crash and the restart have different `cores`;
 *  - frozen checkpoint (white-box: the durable write hook runs the graph
 *    between the stall and the encoding): the join's state is frozen
 *    copy-on-write, copied before its first change, and the checkpoint holds
 *    the state at its barrier.
 */
/* lm_ctest: TIMEOUT 240 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE  // mkdtemp, scandir under -std=c17 (the shared test headers)
#endif

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "db/durable.h"
#include "db/internal.h"
#include "lm_test.h"
#include "lm_test_durable.h"
#include "join_util.h"
#include "views_util.h"

/* ==== the model test ================================================================== */

#define MAXROWS 400

typedef struct side {
  trade_row rows[MAXROWS];
  int64_t n;
  int64_t delay;
} side;

static const char* const SYMS[] = {"A", "B", "C", "D", "E", "F", "G"};

/* Rows whose disorder stays within the delay (none late), ids 1.., times
 * unique per symbol when `unique` (the right side: one match per time). */
static void gen_side(uint64_t* rng, side* s, int64_t n, int nsym, int64_t delay,
                     bool unique, int64_t id0) {
  s->n = 0;
  s->delay = delay;
  int64_t clock = (int64_t)(lm_test_rand(rng) % 20);
  for (int64_t i = 0; i < n; i++) {
    clock += (int64_t)(lm_test_rand(rng) % 5);
    int64_t ts = clock - (int64_t)(lm_test_rand(rng) % (uint64_t)(delay + 1));
    if (ts < 0) ts = 0;
    const char* sym =
        lm_test_rand(rng) % 12 == 0 ? NULL : SYMS[lm_test_rand(rng) % (uint64_t)nsym];
    bool dup = false;
    for (int64_t k = 0; unique && k < s->n && !dup; k++) {
      const trade_row* o = &s->rows[k];
      dup = o->ts == ts &&
            ((o->symbol == NULL && sym == NULL) ||
             (o->symbol != NULL && sym != NULL && strcmp(o->symbol, sym) == 0));
    }
    if (dup) continue;
    s->rows[s->n++] = (trade_row){
        sym, (double)(lm_test_rand(rng) % 1000) / 4.0, false, id0 + i, false, ts};
  }
}

typedef struct pair {
  int64_t tid, qid; /* qid -1: unmatched (LEFT) */
} pair;

static int cmp_pair(const void* x, const void* y) {
  const pair* a = x;
  const pair* b = y;
  if (a->tid != b->tid) return a->tid < b->tid ? -1 : 1;
  return a->qid < b->qid ? -1 : a->qid > b->qid;
}

/* The answer: per left row the right row of its symbol nearest in time on
 * the side `op` says (the last pushed among equal times), within `tol`. */
static int64_t model(const side* l, const side* r, const char* op, bool left_outer,
                     int64_t tol, pair* out) {
  int64_t n = 0;
  for (int64_t i = 0; i < l->n; i++) {
    const trade_row* t = &l->rows[i];
    int64_t best = -1, best_ts = 0;
    for (int64_t k = 0; t->symbol != NULL && k < r->n; k++) {
      const trade_row* q = &r->rows[k];
      if (q->symbol == NULL || strcmp(q->symbol, t->symbol) != 0) continue;
      bool ok = strcmp(op, ">=") == 0   ? t->ts >= q->ts
                : strcmp(op, ">") == 0  ? t->ts > q->ts
                : strcmp(op, "<=") == 0 ? t->ts <= q->ts
                                        : t->ts < q->ts;
      if (!ok || (tol >= 0 && llabs(t->ts - q->ts) > tol)) continue;
      bool before = op[0] == '>';
      bool better = best < 0 || (before ? q->ts >= best_ts : q->ts <= best_ts);
      if (better) {
        best = q->volume;
        best_ts = q->ts;
      }
    }
    if (best >= 0 || left_outer) out[n++] = (pair){t->volume, best};
  }
  qsort(out, (size_t)n, sizeof *out, cmp_pair);
  return n;
}


/* Take every batch queued on sub into out[*n] as (tid, qid) pairs. */
static int take(laminar_subscription* sub, pair* out, int64_t* n, int64_t cap) {
  for (;;) {
    result_view rv;
    memset(&rv, 0, sizeof rv);
    laminar_error err;
    laminar_code rc = laminar_subscription_next(sub, 0, &rv.array, &rv.schema, &err);
    if (rc == LAMINAR_OK && rv.array.release == NULL) { /* none queued */
      result_view_free(&rv);
      return 0;
    }
    CHECK_CODE(rc, LAMINAR_OK, &err);
    CHECK(result_view_init(&rv) == 0);
    for (int64_t r = 0; r < rv.array.length; r++) {
      CHECK(*n < cap);
      struct ArrowArrayView* q = rv.view.children[1];
      out[*n].tid = ArrowArrayViewGetIntUnsafe(rv.view.children[0], r);
      out[*n].qid = ArrowArrayViewIsNull(q, r) ? -1 : ArrowArrayViewGetIntUnsafe(q, r);
      (*n)++;
    }
    result_view_free(&rv);
  }
}

/* One random case of ordering `op`, LEFT or inner, tolerance tol (-1: none). */
static int model_case(uint64_t* rng, const char* op, bool left_outer, int64_t tol) {
  static side l, r;
  static pair got[MAXROWS * 2], want[MAXROWS * 2];
  int nsym = 1 + (int)(lm_test_rand(rng) % 7);
  gen_side(rng, &l, (int64_t)(lm_test_rand(rng) % 200), nsym,
           (int64_t)(lm_test_rand(rng) % 20), false, 1);
  gen_side(rng, &r, (int64_t)(lm_test_rand(rng) % 300), nsym,
           (int64_t)(lm_test_rand(rng) % 30), true, 100000);
  laminar_db* db;
  laminar_error err;
  CHECK_CODE(laminar_open(NULL, &db, &err), LAMINAR_OK, &err);
  char sql[2048], cond[256];
  if (tol < 0) {
    snprintf(cond, sizeof cond, "t.ts %s q.ts", op);
  } else {
    snprintf(cond, sizeof cond, "t.ts %s q.ts AND %s <= INTERVAL '%lld' MILLISECOND", op,
             op[0] == '>' ? "t.ts - q.ts" : "q.ts - t.ts", (long long)tol);
  }
  snprintf(sql, sizeof sql,
           "CREATE SOURCE a (symbol VARCHAR, price DOUBLE, volume BIGINT, ts BIGINT,"
           "  WATERMARK FOR ts AS ts - INTERVAL '%lld' MILLISECOND);"
           "CREATE SOURCE b (symbol VARCHAR, price DOUBLE, volume BIGINT, ts BIGINT,"
           "  WATERMARK FOR ts AS ts - INTERVAL '%lld' MILLISECOND);"
           "CREATE STREAM j AS SELECT t.volume AS tid, q.volume AS qid FROM a t %s b q"
           "  MATCH_CONDITION(%s) ON t.symbol = q.symbol",
           (long long)l.delay, (long long)r.delay,
           left_outer ? "LEFT ASOF JOIN" : "ASOF JOIN", cond);
  CHECK_CODE(laminar_execute(db, sql, &err), LAMINAR_OK, &err);
  laminar_subscription* sub;
  CHECK_CODE(laminar_subscribe(db, "j", &sub, &err), LAMINAR_OK, &err);
  laminar_source* src[2];
  CHECK_CODE(laminar_source_open(db, "a", &src[0], &err), LAMINAR_OK, &err);
  CHECK_CODE(laminar_source_open(db, "b", &src[1], &err), LAMINAR_OK, &err);
  int64_t pos[2] = {0, 0}, ngot = 0;
  const side* sides[2] = {&l, &r};
  while (pos[0] < l.n || pos[1] < r.n) {
    int s = pos[0] >= l.n ? 1 : pos[1] >= r.n ? 0 : (int)(lm_test_rand(rng) % 2);
    int64_t k = 1 + (int64_t)(lm_test_rand(rng) % 12);
    if (k > sides[s]->n - pos[s]) k = sides[s]->n - pos[s];
    CHECK(push_rows(src[s], &sides[s]->rows[pos[s]], k) == 0);
    pos[s] += k;
    if (lm_test_rand(rng) % 3 == 0) {
      CHECK_CODE(laminar_run_until_idle(db, &err), LAMINAR_OK, &err);
      CHECK(take(sub, got, &ngot, MAXROWS * 2) == 0);
    }
  }
  for (int s = 0; s < 2; s++)
    CHECK_CODE(laminar_source_watermark(src[s], INT64_MAX, &err), LAMINAR_OK, &err);
  CHECK_CODE(laminar_run_until_idle(db, &err), LAMINAR_OK, &err);
  CHECK(take(sub, got, &ngot, MAXROWS * 2) == 0);
  /* Nothing is left behind once both watermarks are final. */
  EXPECT(stream_metric(db, "j", "join_left_rows") == 0);
  for (int s = 0; s < 2; s++) laminar_source_close(src[s]);
  laminar_subscription_close(sub);
  laminar_close(db);
  int64_t nwant = model(&l, &r, op, left_outer, tol, want);
  qsort(got, (size_t)ngot, sizeof *got, cmp_pair);
  bool same = ngot == nwant && memcmp(got, want, sizeof *got * (size_t)ngot) == 0;
  if (!same) {
    fprintf(stderr, "op %s left %d tol %lld: got %lld rows, want %lld\n", op,
            (int)left_outer, (long long)tol, (long long)ngot, (long long)nwant);
    for (int64_t i = 0; i < ngot || i < nwant; i++) {
      if (i < ngot && i < nwant && cmp_pair(&got[i], &want[i]) == 0) continue;
      fprintf(stderr, "  first difference at %lld: got (%lld,%lld) want (%lld,%lld)\n",
              (long long)i, i < ngot ? (long long)got[i].tid : -2LL,
              i < ngot ? (long long)got[i].qid : -2LL,
              i < nwant ? (long long)want[i].tid : -2LL,
              i < nwant ? (long long)want[i].qid : -2LL);
      break;
    }
  }
  CHECK(same);
  return 0;
}

static int test_model(void) {
  uint64_t rng = lm_test_seed();
  static const char* const ops[] = {">=", ">", "<=", "<"};
  for (int i = 0; i < 48; i++) {
    int64_t tol = i % 3 == 2 ? (int64_t)(lm_test_rand(&rng) % 8) : -1;
    CHECK(model_case(&rng, ops[i % 4], (i / 4) % 2 == 1, tol) == 0);
  }
  return 0;
}

/* ==== rows held ======================================================================= */

static int test_rows_held(void) {
  laminar_db* db;
  laminar_error err;
  CHECK_CODE(laminar_open(NULL, &db, &err), LAMINAR_OK, &err);
  CHECK_CODE(
      laminar_execute(
          db,
          "CREATE SOURCE a (symbol VARCHAR, price DOUBLE, volume BIGINT, ts BIGINT,"
          "  WATERMARK FOR ts);"
          "CREATE SOURCE b (symbol VARCHAR, price DOUBLE, volume BIGINT, ts BIGINT,"
          "  WATERMARK FOR ts);"
          "CREATE STREAM j AS SELECT t.volume, q.volume AS qv FROM a t ASOF JOIN b q"
          "  MATCH_CONDITION(t.ts >= q.ts) ON t.symbol = q.symbol;"
          "EXPLAIN j",
          &err),
      LAMINAR_OK, &err);
  laminar_source *a, *b;
  CHECK_CODE(laminar_source_open(db, "a", &a, &err), LAMINAR_OK, &err);
  CHECK_CODE(laminar_source_open(db, "b", &b, &err), LAMINAR_OK, &err);
  trade_row q[3] = {{"X", 1, false, 1, false, 10},
                    {"X", 1, false, 2, false, 20},
                    {"Y", 1, false, 3, false, 30}};
  trade_row t[2] = {{"X", 1, false, 7, false, 40}, {"X", 1, false, 8, false, 50}};
  CHECK(push_rows(b, q, 3) == 0);
  CHECK(push_rows(a, t, 2) == 0);
  CHECK_CODE(laminar_run_until_idle(db, &err), LAMINAR_OK, &err);
  /* The right watermark (30) holds both trades; every quote is kept. */
  EXPECT(stream_metric(db, "j", "join_left_rows") == 2);
  EXPECT(stream_metric(db, "j", "join_right_rows") == 3);
  CHECK_CODE(laminar_source_watermark(b, 100, &err), LAMINAR_OK, &err);
  CHECK_CODE(laminar_run_until_idle(db, &err), LAMINAR_OK, &err);
  EXPECT(stream_metric(db, "j", "join_left_rows") == 0);
  /* The left watermark (50) leaves X's newest quote and Y's. */
  CHECK_CODE(laminar_source_watermark(a, 60, &err), LAMINAR_OK, &err);
  CHECK_CODE(laminar_run_until_idle(db, &err), LAMINAR_OK, &err);
  EXPECT(stream_metric(db, "j", "join_right_rows") == 2);
  char text[2048];
  CHECK_CODE(query_text(db, "EXPLAIN j", text, sizeof text, &err), LAMINAR_OK, &err);
  EXPECT(strstr(text, "asof join") != NULL);
  EXPECT(strstr(text, "MATCH_CONDITION(a.ts >= b.ts)") != NULL);
  laminar_source_close(a);
  laminar_source_close(b);
  laminar_close(db);
  return 0;
}

/* ==== errors ========================================================================== */


static int test_errors(void) {
  laminar_db* db;
  laminar_error err;
  CHECK_CODE(laminar_open(NULL, &db, &err), LAMINAR_OK, &err);
  CHECK_CODE(
      laminar_execute(
          db,
          "CREATE SOURCE a (symbol VARCHAR, price DOUBLE, volume BIGINT, ts BIGINT,"
          "  WATERMARK FOR ts);"
          "CREATE SOURCE b (symbol VARCHAR, price DOUBLE, volume BIGINT, ts BIGINT,"
          "  WATERMARK FOR ts);",
          &err),
      LAMINAR_OK, &err);
  CHECK(expect_error(db, "SELECT t.ts FROM a t ASOF JOIN b q ON t.symbol = q.symbol",
                     LAMINAR_ERR_SQL_JOIN_CONDITION, "ASOF") == 0);
  CHECK(expect_error(db,
                     "SELECT t.ts FROM a t ASOF JOIN b q "
                     "ON t.price = q.symbol AND t.ts >= q.ts",
                     LAMINAR_ERR_TYPE_MISMATCH, "t.price") == 0);
  CHECK(expect_error(db,
                     "SELECT t.ts FROM a t ASOF JOIN b q "
                     "MATCH_CONDITION(t.price >= q.price) ON t.symbol = q.symbol",
                     LAMINAR_ERR_TYPE_MISMATCH, "t.price") == 0);
  CHECK(expect_error(
            db,
            "SELECT t.ts FROM a t ASOF JOIN b q "
            "MATCH_CONDITION(t.ts >= q.ts AND t.ts <= q.ts) ON t.symbol = q.symbol",
            LAMINAR_ERR_SQL_JOIN_CONDITION, "t.ts <=") == 0);
  /* Nothing was created by the failures. */
  CHECK_CODE(laminar_execute(db,
                             "CREATE STREAM e AS SELECT t.ts FROM a t ASOF JOIN b q "
                             "MATCH_CONDITION(t.ts >= q.ts) ON t.symbol = q.symbol",
                             &err),
             LAMINAR_OK, &err);
  laminar_close(db);
  return 0;
}

/* ==== durable: a crash mid-stream ======================================================= */

static const char* JOIN_SQL =
    "CREATE STREAM j AS SELECT t.symbol, t.ts, t.volume, q.price AS qp, q.ts AS qts\n"
    "  FROM a t LEFT ASOF JOIN b q MATCH_CONDITION(t.ts >= q.ts) ON t.symbol = "
    "q.symbol;\n"
    "CREATE STREAM w AS SELECT t.symbol, window_start, COUNT(*) AS n, SUM(q.volume) AS "
    "v\n"
    "  FROM a t ASOF JOIN b q ON t.symbol = q.symbol AND t.ts >= q.ts\n"
    "  GROUP BY t.symbol, tumble(t.ts, INTERVAL '500' MILLISECOND);\n"
    "CREATE SINK j_out FROM j INTO FILE (path = '%s/j', format = 'jsonl');\n"
    "CREATE SINK w_out FROM w INTO FILE (path = '%s/w', format = 'jsonl')";

static int test_durable(void) {
  return crash_and_resume(JOIN_SQL, 1) | crash_and_resume(JOIN_SQL, 2);
}


/* cores = 2 (uninterrupted, or a crash resumed at 1, 2 or 3 cores) gives
 * the rows of cores = 1 (each sink's lines sorted: partitions emit in their
 * own order). */
static int test_durable_cores_change(void) {
  char* want = reference(JOIN_SQL, 1);
  CHECK(want != NULL);
  char* two = reference(JOIN_SQL, 2);
  CHECK(two != NULL);
  int failed = strcmp(two, want) != 0;
  if (failed) fprintf(stderr, "cores 2\n--- got\n%s--- want\n%s", two, want);
  free(two);
  failed |= crash_and_resume_at(JOIN_SQL, want, 1, 2) |
            crash_and_resume_at(JOIN_SQL, want, 2, 1) |
            crash_and_resume_at(JOIN_SQL, want, 2, 3);
  free(want);
  return failed;
}

/* Inside a checkpoint, between the stall and the encoding (the durable
 * write hook): batches [from, to) of the left source (trades whose match
 * waits for the right side: they go into the join's state) and one of the
 * right, pushed and run. */
typedef struct hook_ctx {
  run* r;
  int64_t from, to;
  int failed;
} hook_ctx;

static void in_checkpoint(void* arg) {
  hook_ctx* h = arg;
  laminar_error err;
  for (int64_t b = h->from; b < h->to; b++) {
    if (push_two_sources(h->r->src[0], 0, b) != 0) h->failed = 1;
    h->r->next[0] = b + 1;
    if (b == h->from) {
      if (push_two_sources(h->r->src[1], 1, h->r->next[1]) != 0) h->failed = 1;
      h->r->next[1]++;
    }
    /* The graph runs (this thread holds db->lock: the inner driver). */
    if (lm_rt_run_until_idle(&h->r->db->rt, &err) != LAMINAR_OK) h->failed = 1;
  }
}

/* Copies the joins of the database made for a checkpoint holding them. */
static int64_t join_thaws(laminar_db* db) {
  int64_t n = 0;
  for (int32_t i = 0; i < db->graph.nstreams; i++) {
    const lm_stream_def* s = db->graph.streams[i];
    for (int32_t p = 0; p < (s->nparts > 1 ? s->nparts : 1); p++)
      n += lm_op_asof_thaws(lm_stream_part_chain(s, p));
  }
  return n;
}

/* A checkpoint freezes the join's state copy-on-write: rows pushed into it
 * between the stall and the encoding make the join copy its state first (it
 * does not change what the checkpoint reads), and a crash after more rows
 * (in the WAL only) restarts from that checkpoint to the uninterrupted
 * answer: a row after the barrier in the checkpoint would come back twice
 * through the replay. */
static int frozen_at(const char* want, int cores) {
  char dir[64];
  laminar_error err;
  CHECK(lm_test_mkdtemp(dir, sizeof dir, "lm_asof_fz_") == 0);
  run r = {.join_sql = JOIN_SQL, .dir = dir, .cores = cores};
  CHECK(open_run(&r) == 0 && feed_to(&r, 14) == 0);
  hook_ctx h = {.r = &r, .from = 14, .to = 18};
  lm_durable_set_write_hook(r.db->dur, in_checkpoint, &h);
  CHECK(join_thaws(r.db) == 0);
  CHECK_CODE(laminar_checkpoint(r.db, &err), LAMINAR_OK, &err);
  CHECK(h.failed == 0);
  EXPECT(join_thaws(r.db) > 0);
  lm_durable_set_write_hook(r.db->dur, NULL, NULL);
  r.no_checkpoints = true; /* the rest is in the WAL only */
  CHECK(feed_to(&r, 21) == 0);
  return crash_resume_compare(&r, want, cores);
}

static int test_frozen_checkpoint(void) {
  char* want = reference(JOIN_SQL, 1);
  CHECK(want != NULL);
  int failed = frozen_at(want, 1) | frozen_at(want, 2);
  free(want);
  return failed;
}

static const lm_test_case cases[] = {
    {"model", test_model},
    {"rows_held", test_rows_held},
    {"errors", test_errors},
    {"durable", test_durable},
    {"durable_cores_change", test_durable_cores_change},
    {"frozen_checkpoint", test_frozen_checkpoint},
    {NULL, NULL},
};

int main(int argc, char** argv) { return lm_test_main(argc, argv, cases); }
