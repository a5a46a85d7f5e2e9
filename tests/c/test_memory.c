/*
 * test_memory.c -- memory has a bound (issue 20 item 8): queues bounded in
 * bytes (max_queue_bytes) for sources and subscriptions under each policy,
 * keyed state bounded by max_state_bytes (LDB-3008), and a batch that fails
 * for memory (the bound, or an allocation failure) leaves the state as it
 * was, so a retry gives the uninterrupted answer.
 */
/* lm_ctest: TIMEOUT 1800 SHARDS 4 */
#define _POSIX_C_SOURCE 200809L
#include "lm_test.h"
#include "lm_test_metrics.h"
#include "views_util.h"
#include "util/util.h"

#include <inttypes.h>

/* n rows (k = "key<first + i % mod>" (mod 0: first + i), v = first + i);
 * changelog: into a changelog source, weighing 1, but a row of a key below
 * `known` weighs -1 (i even: retracts) or 2 (i odd). */
static int push_keys_weighted(laminar_source* src, int64_t first, int64_t n, int64_t mod,
                              bool changelog, int64_t known, laminar_error* err) {
  kv_row* rows = calloc((size_t)n, sizeof *rows);
  char* names = calloc((size_t)n, 24);
  if (rows == NULL || names == NULL) return 1;
  for (int64_t i = 0; i < n; i++) {
    int64_t key = first + (mod > 0 ? i % mod : i);
    snprintf(names + i * 24, 24, "key%" PRId64, key);
    rows[i] = (kv_row){names + i * 24, first + i, 0, key < known ? (i % 2 ? 2 : -1) : 1};
  }
  int rc = push_kv(src, rows, n, changelog, err);
  free(rows);
  free(names);
  return rc;
}

static int push_keys_mod(laminar_source* src, int64_t first, int64_t n, int64_t mod,
                         laminar_error* err) {
  return push_keys_weighted(src, first, n, mod, false, 0, err);
}

static int push_keys(laminar_source* src, int64_t first, int64_t n, laminar_error* err) {
  return push_keys_mod(src, first, n, 0, err);
}

static laminar_db* open_db(const char* key, const char* value) {
  laminar_config* cfg = NULL;
  laminar_db* db = NULL;
  laminar_error err;
  if (laminar_config_create(&cfg) != LAMINAR_OK) return NULL;
  if (key != NULL && laminar_config_set(cfg, key, value, &err) != LAMINAR_OK) {
    laminar_config_destroy(cfg);
    return NULL;
  }
  if (laminar_open(cfg, &db, &err) != LAMINAR_OK) db = NULL;
  laminar_config_destroy(cfg);
  return db;
}

/* A never-read subscriber stays within its max_queue_bytes: block holds the
 * pipeline (input stays queued at the source), drop drops (counted). */
static int test_subscriber_bytes(void) {
  for (int drop = 0; drop <= 1; drop++) {
    laminar_db* db = open_db(NULL, NULL);
    CHECK(db != NULL);
    laminar_error err;
    CHECK_CODE(laminar_execute(db,
                               "CREATE SOURCE t (k VARCHAR, v BIGINT);"
                               "CREATE STREAM s AS SELECT k, v FROM t",
                               &err),
               LAMINAR_OK, &err);
    laminar_subscription* sub;
    const char* opts = drop ? "max_queue_bytes = 100000, slow_subscriber = drop"
                            : "max_queue_bytes = '100000 B'";
    CHECK_CODE(laminar_subscribe_with(db, "s", opts, &sub, &err), LAMINAR_OK, &err);
    laminar_source* src;
    CHECK_CODE(laminar_source_open(db, "t", &src, &err), LAMINAR_OK, &err);
    for (int b = 0; b < 60; b++) CHECK(push_keys(src, b * 1000, 1000, &err) == 0);
    CHECK_CODE(laminar_run_until_idle(db, &err), LAMINAR_OK, &err);
    int64_t bytes = lm_test_metric(db, "subscription", "s", "queue_bytes");
    int64_t depth = lm_test_metric(db, "subscription", "s", "queue_depth");
    int64_t dropped = lm_test_metric(db, "subscription", "s", "dropped_batches");
    int64_t left = lm_test_metric(db, "source", "t", "queue_depth");
    printf("%s: subscriber holds %" PRId64 " bytes in %" PRId64
           " batches, dropped %" PRId64 ", source left %" PRId64 "\n",
           drop ? "drop" : "block", bytes, depth, dropped, left);
    CHECK(bytes > 0 && bytes <= 100000);
    CHECK(depth >= 2 && depth < 60);
    CHECK(lm_test_metric(db, "subscription", "s", "max_queue_bytes") == 100000);
    if (drop) {
      CHECK(dropped == 60 - depth && left == 0);
    } else {
      CHECK(dropped == 0 && left == 60 - depth); /* nothing lost: held at the source */
      /* Reading makes room and the rest flows. */
      struct ArrowArray a;
      int64_t got = 0;
      for (int i = 0; i < 200 && got < 60; i++) {
        CHECK_CODE(laminar_subscription_next(sub, 0, &a, NULL, &err), LAMINAR_OK, &err);
        if (a.release != NULL) {
          got++;
          a.release(&a);
        } else {
          CHECK_CODE(laminar_run_until_idle(db, &err), LAMINAR_OK, &err);
        }
      }
      CHECK(got == 60);
      CHECK(lm_test_metric(db, "subscription", "s", "queue_bytes") == 0);
    }
    laminar_source_close(src);
    laminar_subscription_close(sub);
    CHECK(laminar_close(db) == LAMINAR_OK);
  }
  return 0;
}

/* A source's queue bound in bytes under block (runtime not started: refused),
 * reject (refused, counted) and drop_oldest (the oldest go, counted). */
static int test_source_bytes(void) {
  const char* policies[] = {"block", "reject", "drop_oldest"};
  for (int p = 0; p < 3; p++) {
    laminar_db* db = open_db(NULL, NULL);
    CHECK(db != NULL);
    laminar_error err;
    char sql[256];
    snprintf(sql, sizeof sql,
             "CREATE SOURCE t (k VARCHAR, v BIGINT) WITH (max_queue_bytes = '64 KiB', "
             "backpressure = '%s')",
             policies[p]);
    CHECK_CODE(laminar_execute(db, sql, &err), LAMINAR_OK, &err);
    laminar_source* src;
    CHECK_CODE(laminar_source_open(db, "t", &src, &err), LAMINAR_OK, &err);
    int accepted = 0, refused = 0;
    for (int b = 0; b < 40; b++) {
      if (push_keys(src, b * 1000, 1000, &err) == 0) {
        accepted++;
      } else {
        CHECK(err.code == LAMINAR_ERR_QUEUE_FULL);
        CHECK(strstr(err.message, "max_queue_bytes") != NULL);
        refused++;
      }
    }
    int64_t bytes = lm_test_metric(db, "source", "t", "queue_bytes");
    int64_t depth = lm_test_metric(db, "source", "t", "queue_depth");
    printf("%s: accepted %d, refused %d, queued %" PRId64 " bytes in %" PRId64
           " batches\n",
           policies[p], accepted, refused, bytes, depth);
    CHECK(bytes > 0 && bytes <= 65536);
    CHECK(depth >= 1 && depth < 40);
    CHECK(lm_test_metric(db, "source", "t", "max_queue_bytes") == 65536);
    if (p == 2) {
      CHECK(refused == 0 &&
            lm_test_metric(db, "source", "t", "dropped_batches") == 40 - depth);
    } else {
      CHECK(refused == 40 - depth);
      if (p == 1) CHECK(lm_test_metric(db, "source", "t", "rejected_batches") == refused);
    }
    /* One batch larger than the bound still goes into an empty queue. */
    CHECK_CODE(laminar_run_until_idle(db, &err), LAMINAR_OK, &err);
    CHECK(push_keys(src, 0, 20000, &err) == 0);
    CHECK(lm_test_metric(db, "source", "t", "queue_bytes") > 65536);
    laminar_source_close(src);
    CHECK(laminar_close(db) == LAMINAR_OK);
  }
  return 0;
}

/* The view's groups, SUM(n) and SUM(s), as "groups,count,sum" (ad-hoc
 * SELECTs over a view take no aggregates: summed here). */
static int view_totals(laminar_db* db, char* out, size_t cap) {
  laminar_error err;
  size_t big = 16u << 20;
  char* text = malloc(big);
  if (text == NULL) return 1;
  if (query_text(db, "SELECT n, s FROM mv", text, big, &err) != LAMINAR_OK) {
    printf("query: %s\n", err.message);
    free(text);
    return 1;
  }
  int64_t groups = 0, n = 0, sum = 0;
  for (char* p = text; *p != '\0';) {
    long long a, b;
    if (sscanf(p, "%lld,%lld", &a, &b) != 2) break;
    groups++;
    n += a;
    sum += b;
    char* next = strchr(p, ';');
    if (next == NULL) break;
    p = next + 1;
  }
  free(text);
  snprintf(out, cap, "%" PRId64 ",%" PRId64 ",%" PRId64, groups, n, sum);
  return 0;
}

/* An endless key space meets max_state_bytes: LDB-3008 naming the stream, the
 * bound and the use; the failing batch is not applied (the view holds
 * exactly the batches before it, retried or not), and batches of known keys
 * still go in. For the stream's bound and the database's. */
static int test_state_bound(void) {
  for (int on_db = 0; on_db <= 1; on_db++) {
    laminar_db* db = on_db ? open_db("max_state_bytes", "1MB") : open_db(NULL, NULL);
    CHECK(db != NULL);
    laminar_error err;
    CHECK_CODE(
        laminar_execute(db,
                        on_db ? "CREATE SOURCE t (k VARCHAR, v BIGINT);"
                                "CREATE MATERIALIZED VIEW mv AS SELECT k, COUNT(*) "
                                "AS n, SUM(v) AS s FROM t GROUP BY k EMIT CHANGES"
                              : "CREATE SOURCE t (k VARCHAR, v BIGINT);"
                                "CREATE MATERIALIZED VIEW mv AS SELECT k, COUNT(*) "
                                "AS n, SUM(v) AS s FROM t GROUP BY k EMIT CHANGES "
                                "WITH (max_state_bytes = 1048576)",
                        &err),
        LAMINAR_OK, &err);
    laminar_source* src;
    CHECK_CODE(laminar_source_open(db, "t", &src, &err), LAMINAR_OK, &err);
    int64_t b = 0, sum = 0;
    laminar_code rc = LAMINAR_OK;
    for (; b < 1000; b++) {
      CHECK(push_keys(src, b * 1000, 1000, &err) == 0);
      rc = laminar_run_until_idle(db, &err);
      if (rc != LAMINAR_OK) break;
      for (int64_t i = 0; i < 1000; i++) sum += b * 1000 + i;
    }
    printf("%s bound hit after %" PRId64 " batches: %s\n", on_db ? "database" : "stream",
           b, err.message);
    CHECK(rc == LAMINAR_ERR_MEMORY_LIMIT && b > 0 && b < 1000);
    CHECK(strstr(err.message, "mv") != NULL &&
          strstr(err.message, "max_state_bytes") != NULL);
    CHECK(strstr(err.message, "1048576") != NULL &&
          strstr(err.message, "in use") != NULL);
    /* The groups stay within the bound; the view's rows behind them are
     * accounted after the GROUP BY accepted a batch, so the last accepted
     * batch's rows (1000, under 100 bytes each) may pass it. */
    int64_t used = stream_metric(db, "mv", "accounted_state_bytes");
    CHECK(used > 0 && used <= 1048576 + 1000 * 100);
    char want[128], got[128];
    snprintf(want, sizeof want, "%" PRId64 ",%" PRId64 ",%" PRId64, b * 1000, b * 1000,
             sum);
    CHECK(view_totals(db, got, sizeof got) == 0);
    printf("view after the refused batch: %s (want %s)\n", got, want);
    CHECK(strcmp(got, want) == 0);
    /* The retry is refused the same way and still changes nothing. */
    CHECK(push_keys(src, b * 1000, 1000, &err) == 0);
    CHECK(laminar_run_until_idle(db, &err) == LAMINAR_ERR_MEMORY_LIMIT);
    CHECK(view_totals(db, got, sizeof got) == 0 && strcmp(got, want) == 0);
    /* Known keys add no state: accepted. */
    CHECK(push_keys(src, 0, 1000, &err) == 0);
    CHECK_CODE(laminar_run_until_idle(db, &err), LAMINAR_OK, &err);
    for (int64_t i = 0; i < 1000; i++) sum += i;
    snprintf(want, sizeof want, "%" PRId64 ",%" PRId64 ",%" PRId64, b * 1000,
             b * 1000 + 1000, sum);
    CHECK(view_totals(db, got, sizeof got) == 0 && strcmp(got, want) == 0);
    laminar_source_close(src);
    CHECK(laminar_close(db) == LAMINAR_OK);
  }
  return 0;
}

/* The rows out of `sub` until it is empty: how many with a weight >= 0 (all
 * without _weight), and their sums of n, s, lo (each if present) and of
 * mk's string bytes. */
static int drain_totals(laminar_subscription* sub, int64_t* nout, int64_t total[4]) {
  laminar_error err;
  *nout = 0;
  for (int c = 0; c < 4; c++) total[c] = 0;
  for (;;) {
    result_view rv;
    memset(&rv, 0, sizeof rv);
    CHECK_CODE(laminar_subscription_next(sub, 0, &rv.array, &rv.schema, &err), LAMINAR_OK,
               &err);
    if (rv.array.release == NULL) break;
    CHECK(result_view_init(&rv) == 0);
    int64_t w = result_col_index(&rv, "_weight");
    int64_t cols[3] = {result_col_index(&rv, "n"), result_col_index(&rv, "s"),
                       result_col_index(&rv, "lo")};
    int64_t mk = result_col_index(&rv, "mk");
    for (int64_t r = 0; r < rv.array.length; r++) {
      if (w >= 0 && ArrowArrayViewGetIntUnsafe(rv.view.children[w], r) < 0) continue;
      (*nout)++;
      for (int c = 0; c < 3; c++) {
        if (cols[c] >= 0)
          total[c] += ArrowArrayViewGetIntUnsafe(rv.view.children[cols[c]], r);
      }
      if (mk >= 0)
        total[3] += ArrowArrayViewGetStringUnsafe(rv.view.children[mk], r).size_bytes;
    }
    result_view_free(&rv);
  }
  return 0;
}

/* A view without GROUP BY holds rows: a batch past its bound is taken back
 * whole. Session windows too: the batch that would pass the bound is refused
 * and leaves the sessions as they were (their count, and the rows they hold
 * when they close), retried or not. */
static int test_view_and_session_bounds(void) {
  laminar_db* db = open_db(NULL, NULL);
  CHECK(db != NULL);
  laminar_error err;
  CHECK_CODE(
      laminar_execute(db,
                      "CREATE SOURCE t (k VARCHAR, v BIGINT, WATERMARK FOR v AS v);"
                      "CREATE MATERIALIZED VIEW rows_mv AS SELECT k, v FROM t "
                      "WITH (max_state_bytes = 100000);"
                      "CREATE STREAM ss AS SELECT k, COUNT(*) AS n FROM t "
                      "GROUP BY k, session(v, INTERVAL '1' HOUR) EMIT ON WINDOW CLOSE "
                      "WITH (max_state_bytes = '3 MB')",
                      &err),
      LAMINAR_OK, &err);
  laminar_source* src;
  CHECK_CODE(laminar_source_open(db, "t", &src, &err), LAMINAR_OK, &err);
  int64_t b = 0;
  laminar_code rc = LAMINAR_OK;
  for (; b < 100 && rc == LAMINAR_OK; b++) {
    CHECK(push_keys(src, b * 1000, 1000, &err) == 0);
    rc = laminar_run_until_idle(db, &err);
  }
  printf("after %" PRId64 " batches: %s\n", b, err.message);
  CHECK(rc == LAMINAR_ERR_MEMORY_LIMIT);
  CHECK(strstr(err.message, "'rows_mv'") != NULL);
  char* text = malloc(1u << 22);
  CHECK(text != NULL);
  CHECK(query_text(db, "SELECT k FROM rows_mv", text, 1u << 22, &err) == LAMINAR_OK);
  int64_t rows = 1;
  for (const char* p = text; *p != '\0'; p++) rows += *p == ';';
  free(text);
  printf("rows_mv holds %" PRId64 " rows\n", rows);
  CHECK(rows == (b - 1) * 1000); /* the refused batch left none */
  CHECK(stream_metric(db, "rows_mv", "accounted_state_bytes") <= 100000);
  /* The sessions: keep going without the view until their bound. */
  CHECK_CODE(laminar_execute(db, "DROP MATERIALIZED VIEW rows_mv", &err), LAMINAR_OK,
             &err);
  laminar_subscription* sub;
  CHECK_CODE(laminar_subscribe(db, "ss", &sub, &err), LAMINAR_OK, &err);
  int64_t accepted = stream_metric(db, "ss", "state_groups"), groups = accepted;
  rc = LAMINAR_OK;
  for (; b < 400; b++) {
    groups = stream_metric(db, "ss", "state_groups");
    CHECK(push_keys(src, b * 1000, 1000, &err) == 0);
    rc = laminar_run_until_idle(db, &err);
    if (rc != LAMINAR_OK) break;
  }
  printf("sessions after %" PRId64 " batches: %s\n", b, err.message);
  CHECK(rc == LAMINAR_ERR_MEMORY_LIMIT && strstr(err.message, "'ss'") != NULL);
  CHECK(strstr(err.message, "not applied") != NULL);
  CHECK(stream_metric(db, "ss", "state_groups") ==
        groups); /* the refused batch left none */
  CHECK(push_keys(src, b * 1000, 1000, &err) == 0);
  CHECK(laminar_run_until_idle(db, &err) == LAMINAR_ERR_MEMORY_LIMIT);
  printf("retried: %s\n", err.message);
  CHECK(strstr(err.message, "not applied") != NULL);
  CHECK(stream_metric(db, "ss", "state_groups") == groups);
  /* Closed, the sessions hold exactly the rows of the accepted batches. */
  CHECK_CODE(laminar_source_watermark(src, INT64_MAX, &err), LAMINAR_OK, &err);
  CHECK_CODE(laminar_run_until_idle(db, &err), LAMINAR_OK, &err);
  int64_t nsess, sums[4];
  CHECK(drain_totals(sub, &nsess, sums) == 0);
  int64_t nrows = sums[0];
  laminar_subscription_close(sub);
  printf("sessions closed: %" PRId64 " holding %" PRId64
         " rows (before the sessions' loop: "
         "%" PRId64 ")\n",
         nsess, nrows, accepted);
  CHECK(nsess == groups && nrows == groups);
  laminar_source_close(src);
  CHECK(laminar_close(db) == LAMINAR_OK);
  return 0;
}

#ifdef LAMINAR_FAULT_INJECTION
/* The window operator's slice for the big batches (lm_fault_slice_pairs_set):
 * 1/64 of its own (65536), so a batch of several slices is 64 times smaller
 * and failing each of its allocations in turn stays quick. */
#define SLICE_PAIRS 1024

/* n rows k = "key<first + i % mod>" (mod 0: first + i), v = base + i * step
 * % vmod (vmod 0: base + i * step); changelog: weighing 1. */
static int push_rows(laminar_source* src, int64_t n, int64_t first, int64_t mod,
                     int64_t base, int64_t step, int64_t vmod, bool changelog,
                     laminar_error* err) {
  kv_row* rows = calloc((size_t)n, sizeof *rows);
  char* names = calloc((size_t)n, 24);
  if (rows == NULL || names == NULL) return 1;
  for (int64_t i = 0; i < n; i++) {
    snprintf(names + i * 24, 24, "key%" PRId64, first + (mod > 0 ? i % mod : i));
    rows[i] =
        (kv_row){names + i * 24, base + (vmod > 0 ? i * step % vmod : i * step), 0, 1};
  }
  int rc = push_kv(src, rows, n, changelog, err);
  free(rows);
  free(names);
  return rc;
}

/* n rows k = "key<i>", v = i + shift (changelog: weighing 1). */
static int push_keys_at(laminar_source* src, int64_t n, int64_t shift, bool changelog,
                        laminar_error* err) {
  return push_rows(src, n, 0, 0, shift, 1, 0, changelog, err);
}

/* The groups of a GROUP BY (no output built while nobody reads it) after
 * batch A, then batch B run with its nth allocation failing: a failure
 * leaves the state as after A (state_groups), and B retried gives the
 * unfaulted totals, read through a view downstream at the end. */
static int fault_run(int64_t nth, int64_t variant, char* out, size_t cap,
                     bool* out_failed) {
  laminar_db* db = open_db(NULL, NULL);
  CHECK(db != NULL);
  laminar_error err;
  const char* sql[] = {
      "CREATE SOURCE t (k VARCHAR, v BIGINT);"
      "CREATE STREAM g AS SELECT k, COUNT(*) AS n, SUM(v) AS s, MIN(v) AS lo FROM t "
      "GROUP BY k "
      "EMIT CHANGES",
      "CREATE SOURCE t (k VARCHAR, v BIGINT, WATERMARK FOR v AS v - INTERVAL '1' HOUR);"
      "CREATE STREAM g AS SELECT k, COUNT(*) AS n, SUM(v) AS s, MIN(v) AS lo FROM t "
      "GROUP BY k, hop(v, INTERVAL '2' SECOND, INTERVAL '4' SECOND) EMIT ON WINDOW CLOSE",
      "CREATE SOURCE t (k VARCHAR, v BIGINT);"
      "CREATE STREAM g AS SELECT k, COUNT(DISTINCT v) AS n, SUM(v) AS s, MIN(v) AS lo, "
      "MAX(k) AS mk FROM t GROUP BY k EMIT CHANGES",
      "CREATE SOURCE t (k VARCHAR, v BIGINT, WATERMARK FOR v AS v - INTERVAL '1' HOUR);"
      "CREATE STREAM g AS SELECT k, COUNT(*) AS n, SUM(v) AS s, MIN(v) AS lo FROM t "
      "GROUP BY k, session(v, INTERVAL '0.6' SECOND) EMIT ON WINDOW CLOSE",
      "CREATE SOURCE t (k VARCHAR, v BIGINT, WATERMARK FOR v AS v - INTERVAL '1' HOUR);"
      "CREATE STREAM g AS SELECT k, COUNT(*) AS n, SUM(v) AS s, MIN(v) AS lo, MAX(k) AS "
      "mk "
      "FROM t GROUP BY k, session(v, INTERVAL '0.6' SECOND) EMIT CHANGES",
      "CREATE SOURCE t (k VARCHAR, v BIGINT, _weight BIGINT);"
      "CREATE STREAM g AS SELECT k, COUNT(DISTINCT v) AS n, SUM(v) AS s, MIN(v) AS lo, "
      "LAST(k) AS mk FROM t GROUP BY k EMIT CHANGES",
      "CREATE SOURCE t (k VARCHAR, v BIGINT, WATERMARK FOR v AS v - INTERVAL '1' HOUR);"
      "CREATE STREAM g AS SELECT k, COUNT(DISTINCT v) AS n, SUM(v) AS s, MIN(v) AS lo, "
      "MAX(k) AS mk FROM t "
      "GROUP BY k, hop(v, INTERVAL '8' SECOND, INTERVAL '1' SECOND) EMIT CHANGES"};
  /* Variant 2: variant 0 with a batch B of more rows than one pass of the
   * window operator takes (SLICE_PAIRS here): its groups go in by a first
   * pass over all.
   * Variant 3: aggregates that allocate as they update (COUNT(DISTINCT), MAX
   * of strings). */
  /* Variants 4 and 5: session windows (ON WINDOW CLOSE, EMIT CHANGES); A
   * opens three sessions of each of keys 0..999 ([j, j + 600), [j + 1000, ..),
   * [j + 2000, ..)), B's row of key j < 1000 (at j + 500) bridges the first
   * two, keys 1000..1999 are new. */
  /* Variant 6: a changelog input (weighted states: value entries, runs),
   * B retracting some of A's rows and adding others twice. */
  /* Variants 7 to 10 (issue 20): B of more (row, window) pairs than one
   * pass of the window operator takes (SLICE_PAIRS here), with aggregates
   * that allocate as they update: 7 is variant 3, 8 hopping windows with
   * EMIT CHANGES (8 windows a row, 600 rows: 5 slices of 128), 9 variant 6
   * (changelog), 10 variant 5 (sessions, EMIT CHANGES, 6000 keys). */
  bool big = variant >= 7;
  lm_fault_slice_pairs_set(variant == 2 || big ? SLICE_PAIRS : 0);
  if (big) variant = variant == 7 ? 3 : variant == 8 ? 7 : variant == 9 ? 6 : 5;
  bool session = variant == 4 || variant == 5;
  bool changelog = variant == 6;
  const char* text = variant == 2   ? sql[0]
                     : variant == 3 ? sql[2]
                                    : sql[variant - (variant > 3)];
  CHECK_CODE(laminar_execute(db, text, &err), LAMINAR_OK, &err);
  /* Big: 6000 rows of keys 1500 .. 6499 (3500 new: the groups outgrow A's
   * room), six slices (the later ones need more room: COUNT(DISTINCT) of new
   * values; the last revisits keys of the first). */
  int64_t nb = variant == 2 || big ? 6000 : 5000, mod = variant == 2 || big ? 5000 : 0;
  if (variant == 7) { /* 8 windows a row: 4800 pairs, of 100 keys */
    nb = 600;
    mod = 100;
  }
  int64_t nkeys = session ? (big ? 6000 : 2000) : 6500;
  laminar_source* src;
  CHECK_CODE(laminar_source_open(db, "t", &src, &err), LAMINAR_OK, &err);
  /* Hopping windows (8 a row): A and the rows read back over the first 1600
   * keys only, which hold B's (1500 .. 1599). */
  int64_t na = variant == 7 ? 1600 : 3000;
  if (variant == 7) nkeys = 1600;
  CHECK(push_keys_weighted(src, 0, na, session ? 1000 : 0, changelog, 0, &err) == 0);
  CHECK_CODE(laminar_run_until_idle(db, &err), LAMINAR_OK, &err);
  int64_t groups_a = stream_metric(db, "g", "state_groups");
  /* B: 1500 known keys, 3500 new (sessions: as above). */
  CHECK((session ? push_keys_at(src, nkeys, 500, false, &err)
                 : push_keys_weighted(src, 1500, nb, mod, changelog, 3000, &err)) == 0);
  lm_fault_alloc_set(nth, false);
  laminar_code rc = laminar_run_until_idle(db, &err);
  bool failed = lm_fault_alloc_failures() > 0;
  lm_fault_alloc_set(0, false);
  *out_failed = failed;
  if (rc != LAMINAR_OK) {
    if (rc != LAMINAR_ERR_NOMEM || strstr(err.message, "'g'") == NULL ||
        strstr(err.message, "not applied") == NULL) {
      printf("allocation %" PRId64 ": %s\n", nth, err.message);
      CHECK(0);
    }
    CHECK(stream_metric(db, "g", "state_groups") == groups_a); /* unchanged */
    /* the retry */
    CHECK((session ? push_keys_at(src, nkeys, 500, false, &err)
                   : push_keys_weighted(src, 1500, nb, mod, changelog, 3000, &err)) == 0);
    CHECK_CODE(laminar_run_until_idle(db, &err), LAMINAR_OK, &err);
  }
  int64_t groups = stream_metric(db, "g", "state_groups");
  /* The results: variant 0 emits every key's row (+1) again when one more
   * row (v = its number) of each key goes in; variant 1 emits its windows when the
   * watermark passes them. Summed over the rows out (+1 rows only). */
  laminar_subscription* sub;
  CHECK_CODE(laminar_subscribe(db, "g", &sub, &err), LAMINAR_OK, &err);
  if (variant == 5) { /* every key's last session grows (its +1 row) */
    CHECK(push_keys_at(src, nkeys, 2000, false, &err) == 0);
  } else if (variant != 1 && variant != 4) { /* EMIT CHANGES */
    CHECK(push_keys_at(src, nkeys, 0, changelog, &err) == 0);
  } else {
    CHECK_CODE(laminar_source_watermark(src, INT64_MAX, &err), LAMINAR_OK, &err);
  }
  CHECK_CODE(laminar_run_until_idle(db, &err), LAMINAR_OK, &err);
  int64_t nout, total[4];
  CHECK(drain_totals(sub, &nout, total) == 0);
  laminar_subscription_close(sub);
  snprintf(out, cap,
           "groups=%" PRId64 " rows=%" PRId64 " n=%" PRId64 " s=%" PRId64 " lo=%" PRId64
           " mk=%" PRId64,
           groups, nout, total[0], total[1], total[2], total[3]);
  laminar_source_close(src);
  CHECK(laminar_close(db) == LAMINAR_OK);
  return 0;
}

/* A run of one variant with its nth allocation failing (0: none): its
 * output into out, and whether an allocation failed. */
typedef int (*fault_run_fn)(int64_t nth, int64_t variant, char* out, size_t cap,
                            bool* out_failed);

/* run(variant) with its nth allocation failing, n = 1, 2, ... until one runs
 * without a failure: each gives the unfaulted output. */
static int fault_each(fault_run_fn run, int64_t variant) {
  char want[512], got[512];
  bool failed;
  CHECK(run(0, variant, want, sizeof want, &failed) == 0);
  printf("variant %" PRId64 " unfaulted: %s\n", variant, want);
  int64_t faults = 0;
  for (int64_t nth = 1; nth < 100000; nth++) {
    CHECK(run(nth, variant, got, sizeof got, &failed) == 0);
    if (!failed) break;
    faults++;
    if (strcmp(got, want) != 0) {
      printf("allocation %" PRId64 " failing: %s\n", nth, got);
      CHECK(0);
    }
  }
  lm_fault_slice_pairs_set(0);
  printf("variant %" PRId64 ": %" PRId64 " allocations failed in turn\n", variant,
         faults);
  CHECK(faults > 3);
  return 0;
}

/* fault_run of each of variants first .. last (fault_each). */
static int fault_variants(int64_t first, int64_t last) {
  for (int64_t variant = first; variant <= last; variant++)
    CHECK(fault_each(fault_run, variant) == 0);
  return 0;
}

/* FNV-1a of the text of `sql`'s rows (a view's whole content). */
static int query_hash(laminar_db* db, const char* sql, uint64_t* out) {
  size_t big = 16u << 20;
  char* text = malloc(big);
  CHECK(text != NULL);
  laminar_error err;
  laminar_code rc = query_text(db, sql, text, big, &err);
  if (rc != LAMINAR_OK) printf("query: %s\n", err.message);
  uint64_t h = 14695981039346656037ull;
  for (const char* p = text; *p != '\0'; p++) h = (h ^ (uint8_t)*p) * 1099511628211ull;
  free(text);
  CHECK(rc == LAMINAR_OK);
  *out = h;
  return 0;
}

/* The chain behind a stream's state (issue 20): a materialized view behind
 * the aggregation, read by a subscriber. After batch A, batch B runs with
 * its nth allocation failing: a failure leaves the view's content as after
 * A and emits nothing; B pushed again gives the unfaulted view and rows. */
static int chain_run(int64_t nth, int64_t variant, char* out, size_t cap,
                     bool* out_failed) {
  laminar_db* db = open_db(NULL, NULL);
  CHECK(db != NULL);
  laminar_error err;
  const char* src_sql =
      "CREATE SOURCE t (k VARCHAR, v BIGINT, WATERMARK FOR v AS v - INTERVAL '1' HOUR);";
  const char* sql[] = {
      /* 0: GROUP BY + view */
      "CREATE MATERIALIZED VIEW mv AS SELECT k, COUNT(*) AS n, SUM(v) AS s, MIN(v) AS lo "
      "FROM t GROUP BY k EMIT CHANGES",
      /* 1: string results, COUNT(DISTINCT), HAVING */
      "CREATE MATERIALIZED VIEW mv AS SELECT k, COUNT(DISTINCT v % 7) AS n, SUM(v) AS s, "
      "MAX(k) AS mk FROM t GROUP BY k HAVING COUNT(*) > 0 EMIT CHANGES",
      /* 2: hopping windows, EMIT CHANGES: a big B (600 rows x 8 windows, five
       * slices) */
      "CREATE MATERIALIZED VIEW mv AS SELECT k, window_start AS ws, COUNT(*) AS n, "
      "SUM(v) AS s, MIN(v) AS lo FROM t "
      "GROUP BY k, hop(v, INTERVAL '8' SECOND, INTERVAL '1' SECOND) EMIT CHANGES",
      /* 3: GROUP BY + view, a big B (6000 rows of 5000 keys, six slices) */
      "CREATE MATERIALIZED VIEW mv AS SELECT k, COUNT(DISTINCT v) AS n, SUM(v) AS s, "
      "MAX(k) AS mk FROM t GROUP BY k EMIT CHANGES",
      /* 4: tumbling windows closed by the watermark into a view */
      "CREATE MATERIALIZED VIEW mv AS SELECT k, window_start AS ws, COUNT(*) AS n, "
      "SUM(v) AS s, MIN(v) AS lo, MAX(k) AS mk FROM t "
      "GROUP BY k, tumble(v, INTERVAL '1' SECOND) EMIT ON WINDOW CLOSE",
      /* 5: session windows closed by the watermark into a view */
      "CREATE MATERIALIZED VIEW mv AS SELECT k, window_start AS ws, COUNT(*) AS n, "
      "SUM(v) AS s, MIN(v) AS lo FROM t "
      "GROUP BY k, session(v, INTERVAL '0.6' SECOND) EMIT ON WINDOW CLOSE",
      /* 6: a cascade: a view reading a stream's changes */
      "CREATE STREAM g AS SELECT k, COUNT(*) AS n, SUM(v) AS s, MAX(k) AS mk FROM t "
      "GROUP BY k EMIT CHANGES;"
      "CREATE MATERIALIZED VIEW mv AS SELECT k, n, s, mk FROM g WHERE n > 0",
      /* 7: the analytic operator released by the watermark into a view (LAG,
       * LEAD of rows pending from an earlier release, strings, frames) */
      "CREATE STREAM g AS SELECT k, v, LAG(k) OVER (PARTITION BY k ORDER BY v) AS pk, "
      "LEAD(v) OVER (PARTITION BY k ORDER BY v) AS nv, "
      "ROW_NUMBER() OVER (PARTITION BY k ORDER BY v) AS rn, "
      "FIRST_VALUE(k) OVER (PARTITION BY k ORDER BY v) AS fk, "
      "SUM(v) OVER (PARTITION BY k ORDER BY v ROWS BETWEEN 2 PRECEDING AND CURRENT ROW) "
      "AS s3, MIN(k) OVER (PARTITION BY k ORDER BY v RANGE BETWEEN INTERVAL '2' SECOND "
      "PRECEDING AND CURRENT ROW) AS mk FROM t;"
      "CREATE MATERIALIZED VIEW mv AS SELECT k, COUNT(*) AS n, SUM(v + nv + rn + s3) AS "
      "s, "
      "MIN(v) AS lo, MAX(pk || fk || mk) AS mk FROM g GROUP BY k EMIT CHANGES",
      /* 8: a table's changelog (upserts over rows, deletes, new keys) into a
       * view reading it (B pushed to the table's source with weights) */
      "CREATE TABLE tb (k VARCHAR PRIMARY KEY, v BIGINT);"
      "CREATE MATERIALIZED VIEW mv AS SELECT k, v, v * 2 AS s FROM tb WHERE v >= 0",
  };
  const char* order[] = {
      "SELECT * FROM mv ORDER BY k",     "SELECT * FROM mv ORDER BY k",
      "SELECT * FROM mv ORDER BY k, ws", "SELECT * FROM mv ORDER BY k",
      "SELECT * FROM mv ORDER BY k, ws", "SELECT * FROM mv ORDER BY k, ws",
      "SELECT * FROM mv ORDER BY k, n",  "SELECT * FROM mv ORDER BY k",
      "SELECT * FROM mv ORDER BY k"};
  /* 4, 5: B goes in unfaulted; the watermark closing every window fails
   * instead, and is retried by the next one. */
  bool close = variant == 4 || variant == 5 || variant == 7;
  const char* stream = variant == 6 || variant == 7 ? "g" : variant == 8 ? "tb" : "mv";
  bool table = variant == 8;
  char text[1024];
  snprintf(text, sizeof text, "%s%s", src_sql, sql[variant]);
  CHECK_CODE(laminar_execute(db, text, &err), LAMINAR_OK, &err);
  laminar_subscription* sub;
  CHECK_CODE(laminar_subscribe(db, "mv", &sub, &err), LAMINAR_OK, &err);
  laminar_source* src;
  CHECK_CODE(laminar_source_open(db, table ? "tb$changes" : "t", &src, &err), LAMINAR_OK,
             &err);
  int64_t nb = 5000, mod = 0;
  lm_fault_slice_pairs_set(variant == 2 || variant == 3 ? SLICE_PAIRS : 0);
  if (variant == 2) {
    nb = 600;
    mod = 100;
  } else if (variant == 3) {
    nb = 6000;
    mod = 5000;
  }
  /* 7: A is keys 0 .. 99 (v = key), a watermark at 50 releases half of
   * them; B is keys 25 .. 74, two rows each (v 25 .. 124: those before 50
   * are late), so its partitions hold released rows (LEAD pending) or held
   * ones. */
  int64_t na = variant == 7 ? 100 : 3000, first = variant == 7 ? 25 : 1500;
  if (variant == 7) {
    nb = 100;
    mod = 50;
  }
  /* 8: B's rows of A's keys (1500 .. 2999) delete them (even rows) or
   * replace them (odd), the others are new. */
  CHECK(push_keys_weighted(src, 0, na, 0, table, 0, &err) == 0);
  CHECK_CODE(laminar_run_until_idle(db, &err), LAMINAR_OK, &err);
  int64_t nout_a, tot_a[4];
  CHECK(drain_totals(sub, &nout_a, tot_a) == 0);
  uint64_t view_a;
  CHECK(query_hash(db, order[variant], &view_a) == 0);
  if (variant == 7) { /* an earlier release: A's rows before 50 */
    CHECK_CODE(laminar_source_watermark(src, 50, &err), LAMINAR_OK, &err);
    CHECK_CODE(laminar_run_until_idle(db, &err), LAMINAR_OK, &err);
  }
  if (close) {
    CHECK(push_keys_weighted(src, first, nb, mod, table, table ? 3000 : 0, &err) == 0);
    CHECK_CODE(laminar_run_until_idle(db, &err), LAMINAR_OK, &err);
    CHECK(drain_totals(sub, &nout_a, tot_a) == 0);
    CHECK(query_hash(db, order[variant], &view_a) == 0);
  }
  int64_t groups_a = stream_metric(db, stream, "state_groups");
  if (close) {
    CHECK_CODE(laminar_source_watermark(src, 100000, &err), LAMINAR_OK, &err);
  } else {
    CHECK(push_keys_weighted(src, first, nb, mod, table, table ? 3000 : 0, &err) == 0);
  }
  lm_fault_alloc_set(nth, false);
  laminar_code rc = laminar_run_until_idle(db, &err);
  *out_failed = lm_fault_alloc_failures() > 0;
  lm_fault_alloc_set(0, false);
  if (rc != LAMINAR_OK) {
    char quoted[8];
    snprintf(quoted, sizeof quoted, "'%s'", stream);
    if (rc != LAMINAR_ERR_NOMEM || strstr(err.message, quoted) == NULL ||
        strstr(err.message, close ? "at the next watermark advance" : "not applied") ==
            NULL) {
      printf("allocation %" PRId64 ": %s\n", nth, err.message);
      CHECK(0);
    }
    /* As before B: the view, the stream's groups, nothing emitted. */
    if (getenv("LM_CHAIN_DEBUG") != NULL)
      printf("allocation %" PRId64 ": %s\n", nth, err.message);
    uint64_t view;
    CHECK(query_hash(db, order[variant], &view) == 0);
    int64_t nout, tot[4];
    CHECK(drain_totals(sub, &nout, tot) == 0);
    if (view != view_a || nout != 0 ||
        stream_metric(db, stream, "state_groups") != groups_a) {
      printf("allocation %" PRId64 " (%s): the view %s, %" PRId64
             " rows emitted, groups %" PRId64 " (before %" PRId64 ")\n",
             nth, err.message, view == view_a ? "unchanged" : "changed", nout,
             stream_metric(db, stream, "state_groups"), groups_a);
      CHECK(0);
    }
    if (!close)
      CHECK(push_keys_weighted(src, first, nb, mod, table, table ? 3000 : 0, &err) ==
            0); /* the retry */
    CHECK_CODE(laminar_run_until_idle(db, &err), LAMINAR_OK, &err);
  }
  if (close) { /* the retry of a failed close; nothing to close unfaulted */
    CHECK_CODE(laminar_source_watermark(src, 100001, &err), LAMINAR_OK, &err);
    CHECK_CODE(laminar_run_until_idle(db, &err), LAMINAR_OK, &err);
  }
  int64_t nout, tot[4];
  CHECK(drain_totals(sub, &nout, tot) == 0);
  uint64_t view;
  CHECK(query_hash(db, order[variant], &view) == 0);
  snprintf(out, cap,
           "view=%016" PRIx64 " groups=%" PRId64 " rows=%" PRId64 "+%" PRId64
           " n=%" PRId64 " s=%" PRId64 " lo=%" PRId64 " mk=%" PRId64,
           view, stream_metric(db, stream, "state_groups"), nout_a, nout,
           tot_a[0] + tot[0], tot_a[1] + tot[1], tot_a[2] + tot[2], tot_a[3] + tot[3]);
  laminar_subscription_close(sub);
  laminar_source_close(src);
  CHECK(laminar_close(db) == LAMINAR_OK);
  return 0;
}

/* All readers or none (issue 20): source t read by a running GROUP BY with
 * EMIT CHANGES (stream g, a subscriber on it), a materialized view of some
 * of its rows (mv) and tumbling windows closed on the watermark into a view
 * (wv), in that order. After batch A, batch B runs with its nth allocation
 * failing (the later readers' too, after the first took B): a failure
 * leaves every reader as after A and publishes nothing; B pushed again, then
 * a watermark closing every window, gives the unfaulted answer in all.
 * variant 1: a big B, assigned in several slices by both windows. */
static int fanout_run(int64_t nth, int64_t variant, char* out, size_t cap,
                      bool* out_failed) {
  laminar_db* db = open_db(NULL, NULL);
  CHECK(db != NULL);
  laminar_error err;
  CHECK_CODE(
      laminar_execute(
          db,
          "CREATE SOURCE t (k VARCHAR, v BIGINT, "
          "WATERMARK FOR v AS v - INTERVAL '1' HOUR);"
          "CREATE STREAM g AS SELECT k, COUNT(*) AS n, SUM(v) AS s, MIN(v) AS lo "
          "FROM t GROUP BY k EMIT CHANGES;"
          "CREATE MATERIALIZED VIEW mv AS SELECT k, v FROM t WHERE v % 3 = 0;"
          "CREATE MATERIALIZED VIEW wv AS SELECT k, window_start AS ws, COUNT(*) AS n, "
          "SUM(v) AS s FROM t GROUP BY k, tumble(v, INTERVAL '1' SECOND) "
          "EMIT ON WINDOW CLOSE",
          &err),
      LAMINAR_OK, &err);
  laminar_subscription* sub;
  CHECK_CODE(laminar_subscribe(db, "g", &sub, &err), LAMINAR_OK, &err);
  laminar_source* src;
  CHECK_CODE(laminar_source_open(db, "t", &src, &err), LAMINAR_OK, &err);
  int64_t nb = variant == 1 ? 2500 : 3000, mod = variant == 1 ? 2000 : 0;
  lm_fault_slice_pairs_set(variant == 1 ? SLICE_PAIRS : 0);
  CHECK(push_keys_mod(src, 0, 3000, 0, &err) == 0);
  CHECK_CODE(laminar_run_until_idle(db, &err), LAMINAR_OK, &err);
  int64_t nout_a, tot_a[4];
  CHECK(drain_totals(sub, &nout_a, tot_a) == 0);
  uint64_t mv_a, wv_a;
  CHECK(query_hash(db, "SELECT * FROM mv ORDER BY k, v", &mv_a) == 0);
  int64_t g_a = stream_metric(db, "g", "state_groups");
  int64_t w_a = stream_metric(db, "wv", "state_groups");
  CHECK(push_keys_mod(src, 1500, nb, mod, &err) == 0);
  lm_fault_alloc_set(nth, false);
  laminar_code rc = laminar_run_until_idle(db, &err);
  *out_failed = lm_fault_alloc_failures() > 0;
  lm_fault_alloc_set(0, false);
  if (rc != LAMINAR_OK) {
    if (rc != LAMINAR_ERR_NOMEM) {
      printf("allocation %" PRId64 ": %s\n", nth, err.message);
      CHECK(0);
    }
    /* As after A in every reader: nothing emitted, the view, the groups. */
    uint64_t mv;
    CHECK(query_hash(db, "SELECT * FROM mv ORDER BY k, v", &mv) == 0);
    int64_t nout, tot[4];
    CHECK(drain_totals(sub, &nout, tot) == 0);
    if (mv != mv_a || nout != 0 || stream_metric(db, "g", "state_groups") != g_a ||
        stream_metric(db, "wv", "state_groups") != w_a) {
      printf("allocation %" PRId64 " (%s): mv %s, %" PRId64
             " rows emitted, groups g %" PRId64 " (before %" PRId64 "), wv %" PRId64
             " (before %" PRId64 ")\n",
             nth, err.message, mv == mv_a ? "unchanged" : "changed", nout,
             stream_metric(db, "g", "state_groups"), g_a,
             stream_metric(db, "wv", "state_groups"), w_a);
      CHECK(0);
    }
    CHECK(push_keys_mod(src, 1500, nb, mod, &err) == 0); /* the retry */
    CHECK_CODE(laminar_run_until_idle(db, &err), LAMINAR_OK, &err);
  }
  CHECK_CODE(laminar_source_watermark(src, INT64_C(1) << 40, &err), LAMINAR_OK, &err);
  CHECK_CODE(laminar_run_until_idle(db, &err), LAMINAR_OK, &err);
  int64_t nout, tot[4];
  CHECK(drain_totals(sub, &nout, tot) == 0);
  uint64_t mv, wv;
  CHECK(query_hash(db, "SELECT * FROM mv ORDER BY k, v", &mv) == 0);
  CHECK(query_hash(db, "SELECT * FROM wv ORDER BY k, ws", &wv) == 0);
  (void)wv_a;
  snprintf(out, cap,
           "mv=%016" PRIx64 " wv=%016" PRIx64 " groups=%" PRId64 " rows=%" PRId64
           "+%" PRId64 " n=%" PRId64 " s=%" PRId64 " lo=%" PRId64,
           mv, wv, stream_metric(db, "g", "state_groups"), nout_a, nout,
           tot_a[0] + tot[0], tot_a[1] + tot[1], tot_a[2] + tot[2]);
  laminar_subscription_close(sub);
  laminar_source_close(src);
  CHECK(laminar_close(db) == LAMINAR_OK);
  return 0;
}

/* A join's release (issue 20): left rows of a (keys 150 .. 349) wait for
 * b's watermark (b: keys 0 .. 299); the watermark that releases them runs
 * with its nth allocation failing: a failure leaves the view behind the join
 * as before, emits nothing, and the next watermark advance releases them.
 * Variant 0: LEFT ASOF with >= (a prefix of the waiting rows), 1: inner ASOF
 * with <= (unmatched rows dropped), 2: a LEFT interval join (the left rows
 * b's watermark evicts, the unmatched ones emitted NULL-padded), 3: a FULL
 * window join (a's watermark first, then b's closes the windows: pairs and
 * both sides' unmatched rows), 4: variant 3 over hopping windows (100 ms
 * every 50 ms: a row in two windows, its pairs and unmatched rows in each). */
static int join_run(int64_t nth, int64_t variant, char* out, size_t cap,
                    bool* out_failed) {
  laminar_db* db = open_db(NULL, NULL);
  CHECK(db != NULL);
  laminar_error err;
  char sql[1024];
  snprintf(sql, sizeof sql,
           "CREATE SOURCE a (k VARCHAR, v BIGINT, WATERMARK FOR v AS v - INTERVAL '1' "
           "HOUR);"
           "CREATE SOURCE b (k VARCHAR, v BIGINT, WATERMARK FOR v AS v - INTERVAL '1' "
           "HOUR);"
           "CREATE STREAM j AS SELECT t.k AS k, t.v AS v, q.v AS qv, q.k AS qk FROM %s t "
           "%s %s q %s;"
           "CREATE MATERIALIZED VIEW mv AS SELECT k, COUNT(*) AS n, "
           "SUM(COALESCE(v, 0) + COALESCE(qv, 0)) AS s, MIN(v) AS lo, MAX(qk) AS mk "
           "FROM j GROUP BY k EMIT CHANGES",
           variant == 3   ? "tumble(a, v, INTERVAL '0.1' SECOND)"
           : variant == 4 ? "hop(a, v, INTERVAL '0.1' SECOND, INTERVAL '0.05' SECOND)"
                          : "a",
           variant == 0   ? "LEFT ASOF JOIN"
           : variant == 1 ? "ASOF JOIN"
           : variant == 2 ? "LEFT JOIN"
                          : "FULL JOIN",
           variant == 3   ? "tumble(b, v, INTERVAL '0.1' SECOND)"
           : variant == 4 ? "hop(b, v, INTERVAL '0.1' SECOND, INTERVAL '0.05' SECOND)"
                          : "b",
           variant == 0   ? "MATCH_CONDITION(t.v >= q.v) ON t.k = q.k"
           : variant == 1 ? "MATCH_CONDITION(t.v <= q.v) ON t.k = q.k"
           : variant == 2 ? "ON t.k = q.k AND q.v BETWEEN t.v - 10 AND t.v + 10"
                          : "ON t.window_start = q.window_start AND t.k = q.k");
  CHECK_CODE(laminar_execute(db, sql, &err), LAMINAR_OK, &err);
  laminar_subscription* sub;
  CHECK_CODE(laminar_subscribe(db, "mv", &sub, &err), LAMINAR_OK, &err);
  laminar_source *a, *b;
  CHECK_CODE(laminar_source_open(db, "a", &a, &err), LAMINAR_OK, &err);
  CHECK_CODE(laminar_source_open(db, "b", &b, &err), LAMINAR_OK, &err);
  CHECK(push_keys_mod(b, 0, 300, 0, &err) == 0);
  CHECK(push_keys_mod(a, 150, 400, 200, &err) == 0);
  CHECK_CODE(laminar_run_until_idle(db, &err), LAMINAR_OK, &err);
  int64_t nout_a, tot_a[4];
  CHECK(drain_totals(sub, &nout_a, tot_a) == 0);
  uint64_t view_a;
  CHECK(query_hash(db, "SELECT * FROM mv ORDER BY k", &view_a) == 0);
  if (variant >= 3) { /* closes nothing yet: b's watermark is behind */
    CHECK_CODE(laminar_source_watermark(a, 100000, &err), LAMINAR_OK, &err);
    CHECK_CODE(laminar_run_until_idle(db, &err), LAMINAR_OK, &err);
  }
  CHECK_CODE(laminar_source_watermark(b, 100000, &err), LAMINAR_OK, &err);
  lm_fault_alloc_set(nth, false);
  laminar_code rc = laminar_run_until_idle(db, &err);
  *out_failed = lm_fault_alloc_failures() > 0;
  lm_fault_alloc_set(0, false);
  if (rc != LAMINAR_OK) {
    if (rc != LAMINAR_ERR_NOMEM || strstr(err.message, "'j'") == NULL ||
        strstr(err.message, "at the next watermark advance") == NULL) {
      printf("allocation %" PRId64 ": %s\n", nth, err.message);
      CHECK(0);
    }
    uint64_t view;
    CHECK(query_hash(db, "SELECT * FROM mv ORDER BY k", &view) == 0);
    int64_t nout, tot[4];
    CHECK(drain_totals(sub, &nout, tot) == 0);
    if (view != view_a || nout != 0) {
      printf("allocation %" PRId64 " (%s): the view %s, %" PRId64 " rows emitted\n", nth,
             err.message, view == view_a ? "unchanged" : "changed", nout);
      CHECK(0);
    }
  }
  /* the retry of a failed release; nothing left to release unfaulted */
  CHECK_CODE(laminar_source_watermark(b, 100001, &err), LAMINAR_OK, &err);
  CHECK_CODE(laminar_run_until_idle(db, &err), LAMINAR_OK, &err);
  int64_t nout, tot[4];
  CHECK(drain_totals(sub, &nout, tot) == 0);
  uint64_t view;
  CHECK(query_hash(db, "SELECT * FROM mv ORDER BY k", &view) == 0);
  snprintf(out, cap,
           "view=%016" PRIx64 " rows=%" PRId64 "+%" PRId64 " n=%" PRId64 " s=%" PRId64
           " lo=%" PRId64 " mk=%" PRId64,
           view, nout_a, nout, tot_a[0] + tot[0], tot_a[1] + tot[1], tot_a[2] + tot[2],
           tot_a[3] + tot[3]);
  laminar_subscription_close(sub);
  laminar_source_close(a);
  laminar_source_close(b);
  CHECK(laminar_close(db) == LAMINAR_OK);
  return 0;
}

/* n rows of keys key<first + i % mod>, v (the event time) = base + i * 7 %
 * 2000: one batch of a keyed source. */
static int push_keyed(laminar_source* src, int64_t first, int64_t n, int64_t mod,
                      int64_t base, laminar_error* err) {
  return push_rows(src, n, first, mod, base, 7, 2000, false, err);
}

/* Windows under per-key watermarks (watermark_key, op/keyed_window.c): A
 * over keys 0..19, then B over keys 10..39 (20 new) with its nth
 * allocation failing, pushed again after a failure, then a watermark closing
 * every window. A failure leaves every key as before B (no key's rows of it
 * applied), so the closed windows equal the unfaulted run's. Variant 0:
 * tumbling windows with a string MAX; 1: hopping windows (panes). */
static int keyed_run(int64_t nth, int64_t variant, char* out, size_t cap,
                     bool* out_failed) {
  laminar_db* db = open_db(NULL, NULL);
  CHECK(db != NULL);
  laminar_error err;
  const char* sql[] = {
      "CREATE SOURCE t (k VARCHAR, v BIGINT, WATERMARK FOR v AS v - INTERVAL '1' SECOND)"
      " WITH (watermark_key = 'k');"
      "CREATE STREAM g AS SELECT k, window_start, COUNT(*) AS n, SUM(v) AS s, MIN(v) AS "
      "lo, MAX(k) AS mk FROM t GROUP BY k, tumble(v, INTERVAL '1' SECOND)",
      "CREATE SOURCE t (k VARCHAR, v BIGINT, WATERMARK FOR v AS v - INTERVAL '1' SECOND)"
      " WITH (watermark_key = 'k');"
      "CREATE STREAM g AS SELECT k, window_start, COUNT(*) AS n, SUM(v) AS s, MIN(v) AS "
      "lo FROM t GROUP BY k, hop(v, INTERVAL '500' MILLISECOND, INTERVAL '1' SECOND)"};
  CHECK_CODE(laminar_execute(db, sql[variant], &err), LAMINAR_OK, &err);
  laminar_subscription* sub;
  CHECK_CODE(laminar_subscribe(db, "g", &sub, &err), LAMINAR_OK, &err);
  laminar_source* src;
  CHECK_CODE(laminar_source_open(db, "t", &src, &err), LAMINAR_OK, &err);
  CHECK(push_keyed(src, 0, 60, 20, 0, &err) == 0);
  CHECK_CODE(laminar_run_until_idle(db, &err), LAMINAR_OK, &err);
  CHECK(push_keyed(src, 10, 90, 30, 2000, &err) == 0);
  lm_fault_alloc_set(nth, false);
  laminar_code rc = laminar_run_until_idle(db, &err);
  *out_failed = lm_fault_alloc_failures() > 0;
  lm_fault_alloc_set(0, false);
  /* Not applied: pushed again. A key's close after the batch went in
   * (applied): its windows close at the next advance, nothing to push. */
  bool retry = rc != LAMINAR_OK && strstr(err.message, "not applied") != NULL;
  if (rc != LAMINAR_OK && (rc != LAMINAR_ERR_NOMEM ||
                           (!retry && strstr(err.message, "was applied") == NULL))) {
    printf("allocation %" PRId64 ": %s\n", nth, err.message);
    CHECK(0);
  }
  if (retry) {
    CHECK(push_keyed(src, 10, 90, 30, 2000, &err) == 0);
    CHECK_CODE(laminar_run_until_idle(db, &err), LAMINAR_OK, &err);
  }
  CHECK_CODE(laminar_source_watermark(src, INT64_MAX, &err), LAMINAR_OK, &err);
  CHECK_CODE(laminar_run_until_idle(db, &err), LAMINAR_OK, &err);
  int64_t nout, total[4];
  CHECK(drain_totals(sub, &nout, total) == 0);
  laminar_subscription_close(sub);
  snprintf(out, cap,
           "rows=%" PRId64 " n=%" PRId64 " s=%" PRId64 " lo=%" PRId64 " mk=%" PRId64,
           nout, total[0], total[1], total[2], total[3]);
  laminar_source_close(src);
  CHECK(laminar_close(db) == LAMINAR_OK);
  return 0;
}

static int test_fault_keyed_windows(void) {
  CHECK(fault_each(keyed_run, 0) == 0);
  return fault_each(keyed_run, 1);
}

/* What a join holds (stream j's metrics): rows and bytes per side, late
 * rows, into out. */
static void join_state(laminar_db* db, char* out, size_t cap) {
  snprintf(
      out, cap,
      "held=%" PRId64 "/%" PRId64 " bytes=%" PRId64 "/%" PRId64 " late=%" PRId64,
      stream_metric(db, "j", "join_left_rows"), stream_metric(db, "j", "join_right_rows"),
      stream_metric(db, "j", "join_left_bytes"),
      stream_metric(db, "j", "join_right_bytes"), stream_metric(db, "j", "late_rows"));
}

/* A join's chunk (issue 20): after A (b: keys 0 .. 249; a: keys 150 .. 349
 * waiting; b's watermark at 300), chunk B runs with its nth allocation
 * failing: a failure leaves the join (its rows, bytes, late rows) and the
 * view behind it as after A and emits nothing; B pushed again, then
 * watermarks releasing everything, gives the unfaulted answer.
 * Variant 0: LEFT ASOF with >=, B a right chunk (late rows, new keys, rows
 * for waiting ones); 1: the same join, B a left chunk (rows joined at once,
 * rows waiting); 2: inner ASOF with <=, B a left chunk whose rows with a
 * final match are released with it; 3: a LEFT interval join, B a left chunk
 * (pairs, rows that cannot match emitted NULL-padded, rows held); 4: a FULL
 * interval join, B a right chunk (late rows, pairs, rows held); 5: variant 4
 * with B a left chunk that fans out: a second reader of a, a view mv2 (a
 * GROUP BY with COUNT(DISTINCT) and strings), takes it after the join (all
 * readers or none, op.h lm_op_txn: its failure leaves the join as before
 * too); mv over flat states (it holds a batch). */
static int join_chunk_run(int64_t nth, int64_t variant, char* out, size_t cap,
                          bool* out_failed) {
  laminar_db* db = open_db(NULL, NULL);
  CHECK(db != NULL);
  laminar_error err;
  static const char* const joins[][2] = {
      {"LEFT ASOF JOIN", "MATCH_CONDITION(t.v >= q.v) ON t.k = q.k"},
      {"LEFT ASOF JOIN", "MATCH_CONDITION(t.v >= q.v) ON t.k = q.k"},
      {"ASOF JOIN", "MATCH_CONDITION(t.v <= q.v) ON t.k = q.k"},
      {"LEFT JOIN", "ON t.k = q.k AND q.v BETWEEN t.v - 10 AND t.v + 10"},
      {"FULL JOIN", "ON t.k = q.k AND q.v BETWEEN t.v - 10 AND t.v + 10"},
      {"FULL JOIN", "ON t.k = q.k AND q.v BETWEEN t.v - 10 AND t.v + 10"}};
  bool fan = variant == 5;
  char sql[1536];
  snprintf(sql, sizeof sql,
           "CREATE SOURCE a (k VARCHAR, v BIGINT, WATERMARK FOR v AS v - INTERVAL '1' "
           "HOUR);"
           "CREATE SOURCE b (k VARCHAR, v BIGINT, WATERMARK FOR v AS v - INTERVAL '1' "
           "HOUR);"
           "CREATE STREAM j AS SELECT t.k AS k, t.v AS v, q.v AS qv, q.k AS qk FROM a t "
           "%s b q %s;"
           "CREATE MATERIALIZED VIEW mv AS SELECT k, COUNT(*) AS n, "
           "SUM(COALESCE(v, 0) + COALESCE(qv, 0)) AS s, MIN(v) AS lo%s "
           "FROM j GROUP BY k EMIT CHANGES%s",
           joins[variant][0], joins[variant][1], fan ? "" : ", MAX(qk) AS mk",
           fan ? ";CREATE MATERIALIZED VIEW mv2 AS SELECT k, COUNT(DISTINCT v) AS n, "
                 "MAX(k) AS mk FROM a GROUP BY k EMIT CHANGES"
               : "");
  CHECK_CODE(laminar_execute(db, sql, &err), LAMINAR_OK, &err);
  laminar_subscription* sub;
  CHECK_CODE(laminar_subscribe(db, "mv", &sub, &err), LAMINAR_OK, &err);
  laminar_source *a, *b;
  CHECK_CODE(laminar_source_open(db, "a", &a, &err), LAMINAR_OK, &err);
  CHECK_CODE(laminar_source_open(db, "b", &b, &err), LAMINAR_OK, &err);
  CHECK(push_keys_mod(b, 0, 250, 0, &err) == 0);
  CHECK(push_keys_mod(a, 150, 400, 200, &err) == 0);
  CHECK_CODE(laminar_run_until_idle(db, &err), LAMINAR_OK, &err);
  CHECK_CODE(laminar_source_watermark(b, 300, &err), LAMINAR_OK, &err);
  CHECK_CODE(laminar_run_until_idle(db, &err), LAMINAR_OK, &err);
  int64_t nout_a, tot_a[4];
  CHECK(drain_totals(sub, &nout_a, tot_a) == 0);
  uint64_t view_a, view2_a = 0;
  CHECK(query_hash(db, "SELECT * FROM mv ORDER BY k", &view_a) == 0);
  if (fan) CHECK(query_hash(db, "SELECT * FROM mv2 ORDER BY k", &view2_a) == 0);
  char join_a[256], join_b[256];
  join_state(db, join_a, sizeof join_a);
  bool right = variant == 0 || variant == 4;
  uint64_t view2 = 0;
  /* B: right, keys 150 .. 349 at 150 .. 549 (those before 300 late); left,
   * keys 200 .. 499 at their number. */
  CHECK((right ? push_keys_mod(b, 150, 400, 200, &err)
               : push_keys_mod(a, 200, 300, 0, &err)) == 0);
  lm_fault_alloc_set(nth, false);
  laminar_code rc = laminar_run_until_idle(db, &err);
  *out_failed = lm_fault_alloc_failures() > 0;
  lm_fault_alloc_set(0, false);
  if (rc != LAMINAR_OK) {
    if (rc != LAMINAR_ERR_NOMEM || strstr(err.message, "not applied") == NULL) {
      printf("allocation %" PRId64 ": %s\n", nth, err.message);
      CHECK(0);
    }
    uint64_t view;
    CHECK(query_hash(db, "SELECT * FROM mv ORDER BY k", &view) == 0);
    int64_t nout, tot[4];
    CHECK(drain_totals(sub, &nout, tot) == 0);
    join_state(db, join_b, sizeof join_b);
    if (fan) CHECK(query_hash(db, "SELECT * FROM mv2 ORDER BY k", &view2) == 0);
    if (view != view_a || nout != 0 || strcmp(join_a, join_b) != 0 || view2 != view2_a) {
      printf("allocation %" PRId64 " (%s): the view %s, %" PRId64
             " rows emitted, join %s (before %s), mv2 %s\n",
             nth, err.message, view == view_a ? "unchanged" : "changed", nout, join_b,
             join_a, view2 == view2_a ? "unchanged" : "changed");
      CHECK(0);
    }
    CHECK((right ? push_keys_mod(b, 150, 400, 200, &err)
                 : push_keys_mod(a, 200, 300, 0, &err)) == 0); /* the retry */
    CHECK_CODE(laminar_run_until_idle(db, &err), LAMINAR_OK, &err);
  }
  join_state(db, join_b, sizeof join_b);
  CHECK_CODE(laminar_source_watermark(a, 100000, &err), LAMINAR_OK, &err);
  CHECK_CODE(laminar_source_watermark(b, 100000, &err), LAMINAR_OK, &err);
  CHECK_CODE(laminar_run_until_idle(db, &err), LAMINAR_OK, &err);
  int64_t nout, tot[4];
  CHECK(drain_totals(sub, &nout, tot) == 0);
  uint64_t view;
  CHECK(query_hash(db, "SELECT * FROM mv ORDER BY k", &view) == 0);
  if (fan) CHECK(query_hash(db, "SELECT * FROM mv2 ORDER BY k", &view2) == 0);
  snprintf(out, cap,
           "view=%016" PRIx64 " mv2=%016" PRIx64 " rows=%" PRId64 "+%" PRId64
           " n=%" PRId64 " s=%" PRId64 " lo=%" PRId64 " mk=%" PRId64 " after B: %s",
           view, view2, nout_a, nout, tot_a[0] + tot[0], tot_a[1] + tot[1],
           tot_a[2] + tot[2], tot_a[3] + tot[3], join_b);
  laminar_subscription_close(sub);
  laminar_source_close(a);
  laminar_source_close(b);
  CHECK(laminar_close(db) == LAMINAR_OK);
  return 0;
}

static int test_fault_asof_chunk(void) {
  for (int64_t variant = 0; variant <= 2; variant++)
    CHECK(fault_each(join_chunk_run, variant) == 0);
  return 0;
}

static int test_fault_interval_chunk(void) {
  CHECK(fault_each(join_chunk_run, 3) == 0);
  return fault_each(join_chunk_run, 4);
}

static int test_fault_fanout_join(void) { return fault_each(join_chunk_run, 5); }

/* A table in a batch that fans out (issue 20, all readers or none): source
 * t feeds a table (tb, CREATE TABLE ... AS, a view mv of its rows behind it
 * with a subscriber) and then a GROUP BY with COUNT(DISTINCT) and strings
 * (mv2). After A (keys 0 .. 2999), B (keys 1500 .. 4499: A's replaced, new
 * ones) runs with its nth allocation failing (mv2's too, after the table
 * took B): a failure leaves the table, both views and the subscriber as
 * after A; B pushed again gives the unfaulted answer. */
static int fanout_table_run(int64_t nth, int64_t variant, char* out, size_t cap,
                            bool* out_failed) {
  (void)variant;
  laminar_db* db = open_db(NULL, NULL);
  CHECK(db != NULL);
  laminar_error err;
  CHECK_CODE(
      laminar_execute(db,
                      "CREATE SOURCE t (k VARCHAR, v BIGINT);"
                      "CREATE TABLE tb PRIMARY KEY (k) AS SELECT k, v FROM t;"
                      "CREATE MATERIALIZED VIEW mv AS SELECT k, v, v * 2 AS s FROM tb "
                      "WHERE v >= 0;"
                      "CREATE MATERIALIZED VIEW mv2 AS SELECT k, COUNT(DISTINCT v) AS "
                      "n, MAX(k) AS mk FROM t GROUP BY k EMIT CHANGES",
                      &err),
      LAMINAR_OK, &err);
  laminar_subscription* sub;
  CHECK_CODE(laminar_subscribe(db, "mv", &sub, &err), LAMINAR_OK, &err);
  laminar_source* src;
  CHECK_CODE(laminar_source_open(db, "t", &src, &err), LAMINAR_OK, &err);
  CHECK(push_keys_mod(src, 0, 3000, 0, &err) == 0);
  CHECK_CODE(laminar_run_until_idle(db, &err), LAMINAR_OK, &err);
  int64_t nout_a, tot_a[4];
  CHECK(drain_totals(sub, &nout_a, tot_a) == 0);
  const char* q[] = {"SELECT * FROM tb ORDER BY k", "SELECT * FROM mv ORDER BY k",
                     "SELECT * FROM mv2 ORDER BY k"};
  uint64_t h_a[3], h[3];
  for (int i = 0; i < 3; i++) CHECK(query_hash(db, q[i], &h_a[i]) == 0);
  CHECK(push_keys_mod(src, 1500, 3000, 0, &err) == 0);
  lm_fault_alloc_set(nth, false);
  laminar_code rc = laminar_run_until_idle(db, &err);
  *out_failed = lm_fault_alloc_failures() > 0;
  lm_fault_alloc_set(0, false);
  if (rc != LAMINAR_OK) {
    if (rc != LAMINAR_ERR_NOMEM || strstr(err.message, "not applied") == NULL) {
      printf("allocation %" PRId64 ": %s\n", nth, err.message);
      CHECK(0);
    }
    int64_t nout, tot[4];
    CHECK(drain_totals(sub, &nout, tot) == 0);
    for (int i = 0; i < 3; i++) CHECK(query_hash(db, q[i], &h[i]) == 0);
    if (nout != 0 || h[0] != h_a[0] || h[1] != h_a[1] || h[2] != h_a[2]) {
      printf("allocation %" PRId64 " (%s): %" PRId64
             " rows emitted; table %s, mv %s, mv2 %s\n",
             nth, err.message, nout, h[0] == h_a[0] ? "unchanged" : "changed",
             h[1] == h_a[1] ? "unchanged" : "changed",
             h[2] == h_a[2] ? "unchanged" : "changed");
      CHECK(0);
    }
    CHECK(push_keys_mod(src, 1500, 3000, 0, &err) == 0); /* retry */
    CHECK_CODE(laminar_run_until_idle(db, &err), LAMINAR_OK, &err);
  }
  int64_t nout, tot[4];
  CHECK(drain_totals(sub, &nout, tot) == 0);
  for (int i = 0; i < 3; i++) CHECK(query_hash(db, q[i], &h[i]) == 0);
  snprintf(out, cap,
           "tb=%016" PRIx64 " mv=%016" PRIx64 " mv2=%016" PRIx64 " rows=%" PRId64
           "+%" PRId64 " s=%" PRId64,
           h[0], h[1], h[2], nout_a, nout, tot_a[1] + tot[1]);
  laminar_subscription_close(sub);
  laminar_source_close(src);
  CHECK(laminar_close(db) == LAMINAR_OK);
  return 0;
}

static int test_fault_fanout_table(void) { return fault_each(fanout_table_run, 0); }

static int test_fault_fanout_readers(void) { return fault_each(fanout_run, 0); }
static int test_fault_fanout_big(void) { return fault_each(fanout_run, 1); }
static int test_fault_asof_release(void) {
  CHECK(fault_each(join_run, 0) == 0);
  return fault_each(join_run, 1);
}

static int test_fault_interval_evict(void) { return fault_each(join_run, 2); }
static int test_fault_window_join_close(void) {
  CHECK(fault_each(join_run, 3) == 0);
  return fault_each(join_run, 4);
}

static int chain_variant(int64_t variant) { return fault_each(chain_run, variant); }

static int test_fault_chain_group_view(void) { return chain_variant(0); }
static int test_fault_chain_strings_distinct(void) { return chain_variant(1); }
static int test_fault_chain_big_hop(void) { return chain_variant(2); }
static int test_fault_chain_big_group(void) { return chain_variant(3); }
static int test_fault_chain_window_close(void) { return chain_variant(4); }
static int test_fault_chain_session_close(void) { return chain_variant(5); }
static int test_fault_chain_cascade(void) { return chain_variant(6); }
static int test_fault_chain_analytic(void) { return chain_variant(7); }
static int test_fault_chain_table(void) { return chain_variant(8); }

static int test_fault_batch_all_or_nothing(void) { return fault_variants(0, 6); }

/* Batches of more (row, window) pairs than the window operator assigns at
 * once (issue 20): all or nothing at every allocation, with strings and
 * COUNT(DISTINCT) (GROUP BY, hopping windows with EMIT CHANGES), a
 * changelog input, and session windows. */
static int test_fault_big_distinct(void) { return fault_variants(7, 7); }
static int test_fault_big_hop(void) { return fault_variants(8, 8); }
static int test_fault_big_changelog(void) { return fault_variants(9, 9); }
static int test_fault_big_session(void) { return fault_variants(10, 10); }
#else
static int test_fault_batch_all_or_nothing(void) {
  return lm_test_skip(
      "built without LAMINAR_FAULT_INJECTION (scripts/test.sh step 2 has it)");
}

static int test_fault_big_distinct(void) { return test_fault_batch_all_or_nothing(); }
static int test_fault_big_hop(void) { return test_fault_batch_all_or_nothing(); }
static int test_fault_big_changelog(void) { return test_fault_batch_all_or_nothing(); }
static int test_fault_big_session(void) { return test_fault_batch_all_or_nothing(); }
static int test_fault_chain_group_view(void) { return test_fault_batch_all_or_nothing(); }
static int test_fault_chain_strings_distinct(void) {
  return test_fault_batch_all_or_nothing();
}
static int test_fault_chain_big_hop(void) { return test_fault_batch_all_or_nothing(); }
static int test_fault_chain_big_group(void) { return test_fault_batch_all_or_nothing(); }
static int test_fault_chain_window_close(void) {
  return test_fault_batch_all_or_nothing();
}
static int test_fault_chain_session_close(void) {
  return test_fault_batch_all_or_nothing();
}
static int test_fault_chain_cascade(void) { return test_fault_batch_all_or_nothing(); }
static int test_fault_fanout_readers(void) { return test_fault_batch_all_or_nothing(); }
static int test_fault_fanout_big(void) { return test_fault_batch_all_or_nothing(); }
static int test_fault_chain_analytic(void) { return test_fault_batch_all_or_nothing(); }
static int test_fault_chain_table(void) { return test_fault_batch_all_or_nothing(); }
static int test_fault_asof_release(void) { return test_fault_batch_all_or_nothing(); }
static int test_fault_interval_evict(void) { return test_fault_batch_all_or_nothing(); }
static int test_fault_keyed_windows(void) { return test_fault_batch_all_or_nothing(); }
static int test_fault_window_join_close(void) {
  return test_fault_batch_all_or_nothing();
}
static int test_fault_asof_chunk(void) { return test_fault_batch_all_or_nothing(); }
static int test_fault_interval_chunk(void) { return test_fault_batch_all_or_nothing(); }
static int test_fault_fanout_join(void) { return test_fault_batch_all_or_nothing(); }
static int test_fault_fanout_table(void) { return test_fault_batch_all_or_nothing(); }
#endif

static const lm_test_case cases[] = {
    {"subscriber_bytes", test_subscriber_bytes},
    {"source_bytes", test_source_bytes},
    {"state_bound", test_state_bound},
    {"view_and_session_bounds", test_view_and_session_bounds},
    {"fault_batch_all_or_nothing", test_fault_batch_all_or_nothing},
    {"fault_big_distinct", test_fault_big_distinct},
    {"fault_big_hop", test_fault_big_hop},
    {"fault_big_changelog", test_fault_big_changelog},
    {"fault_big_session", test_fault_big_session},
    {"fault_chain_group_view", test_fault_chain_group_view},
    {"fault_chain_strings_distinct", test_fault_chain_strings_distinct},
    {"fault_chain_big_hop", test_fault_chain_big_hop},
    {"fault_chain_big_group", test_fault_chain_big_group},
    {"fault_chain_window_close", test_fault_chain_window_close},
    {"fault_chain_session_close", test_fault_chain_session_close},
    {"fault_chain_cascade", test_fault_chain_cascade},
    {"fault_fanout_readers", test_fault_fanout_readers},
    {"fault_fanout_big", test_fault_fanout_big},
    {"fault_chain_analytic", test_fault_chain_analytic},
    {"fault_chain_table", test_fault_chain_table},
    {"fault_asof_release", test_fault_asof_release},
    {"fault_interval_evict", test_fault_interval_evict},
    {"fault_keyed_windows", test_fault_keyed_windows},
    {"fault_window_join_close", test_fault_window_join_close},
    {"fault_asof_chunk", test_fault_asof_chunk},
    {"fault_interval_chunk", test_fault_interval_chunk},
    {"fault_fanout_join", test_fault_fanout_join},
    {"fault_fanout_table", test_fault_fanout_table},
    {NULL, NULL}};

int main(int argc, char** argv) { return lm_test_main(argc, argv, cases); }
