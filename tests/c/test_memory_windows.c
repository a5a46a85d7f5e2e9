/*
 * test_memory_windows.c -- a batch (or a watermark advance) that fails for
 * memory leaves every window operator and everything downstream as before
 * it (issue 20 item 8, docs/ARCHITECTURE.md "Out of memory inside stream
 * processing"): session windows with EMIT CHANGES, hopping windows on panes
 * closed by the watermark, late rows sent to a late side output. Each case
 * runs step B with its nth allocation failing, n = 1, 2, ... until B runs
 * without a failure: a failure leaves the views, the streams' groups and
 * their subscribers as before B, and the retry gives the unfaulted output.
 * Also the temporal filter (WHERE v > WATERMARK() - ...): its rows and its
 * retractions.
 * (The same loops as tests/c/test_memory.c's fault_chain_*, kept apart for
 * that file's ASan time.)
 */
/* lm_ctest: TIMEOUT 900 SHARDS 2 */
#define _POSIX_C_SOURCE 200809L
#include "lm_test.h"
#include "views_util.h"
#include "util/util.h"

#include <inttypes.h>
#include <stdlib.h>

#ifdef LAMINAR_FAULT_INJECTION

/* Rows of a (k, v) batch: key "key<j>" at v = t for each (j, t) pair. */
static int push_pairs(laminar_source* src, const int64_t* keys, const int64_t* ts,
                      int64_t n, laminar_error* err) {
  kv_row* rows = calloc((size_t)n, sizeof *rows);
  char* names = calloc((size_t)n, 24);
  if (rows == NULL || names == NULL) return 1;
  for (int64_t i = 0; i < n; i++) {
    snprintf(names + i * 24, 24, "key%" PRId64, keys[i]);
    rows[i] = (kv_row){names + i * 24, ts[i], 0, 1};
  }
  int rc = push_kv(src, rows, n, false, err);
  free(rows);
  free(names);
  return rc;
}

enum { NKEYS = 300 };

/* Batch A: keys 0 .. NKEYS-1 at v = 5000, 6000 and 6000 + j % 300 (sessions
 * of 600 ms: two per key, [5000, 5600) and [6000, 6600 + j % 300)); the
 * watermark after it is 5299 (a delay of 1 s). */
static int push_a(laminar_source* src, laminar_error* err) {
  int64_t keys[3 * NKEYS], ts[3 * NKEYS];
  for (int64_t j = 0; j < NKEYS; j++) {
    keys[3 * j] = keys[3 * j + 1] = keys[3 * j + 2] = j;
    ts[3 * j] = 5000;
    ts[3 * j + 1] = 6000;
    ts[3 * j + 2] = 6000 + j % 300;
  }
  return push_pairs(src, keys, ts, 3 * NKEYS, err);
}

/* Batch B: for keys below NKEYS/2 a row at 5500 (its session of 600 ms
 * bridges the two), for the others a row at 5300 (grows the first); new
 * keys NKEYS .. 2*NKEYS-1 at 7000 + j; rows at 100 and 200 are late for
 * every window. */
static int push_b(laminar_source* src, laminar_error* err) {
  int64_t keys[2 * NKEYS + 2], ts[2 * NKEYS + 2];
  int64_t n = 0;
  for (int64_t j = 0; j < NKEYS; j++) {
    keys[n] = j;
    ts[n++] = j < NKEYS / 2 ? 5500 : 5300;
  }
  for (int64_t j = NKEYS; j < 2 * NKEYS; j++) {
    keys[n] = j;
    ts[n++] = 7000 + j;
  }
  keys[n] = 7;
  ts[n++] = 100;
  keys[n] = NKEYS + 3;
  ts[n++] = 200;
  return push_pairs(src, keys, ts, n, err);
}

/* One case: the SQL (source t, then streams and views), the queries whose
 * text must come back unchanged, the streams subscribed to, the streams
 * whose state_groups must stay, and whether step B is a push of batch B
 * (else B goes in unfaulted and step B is the watermark that closes its
 * windows). */
typedef struct fcase {
  const char* sql;
  const char* views[2];
  const char* subs[2];
  const char* groups[2];
  bool close;
} fcase;

static const char* SRC =
    "CREATE SOURCE t (k VARCHAR, v BIGINT, WATERMARK FOR v AS v - INTERVAL '1' SECOND);";

static const fcase CASES[] = {
    /* 0: session windows, EMIT CHANGES, into a view and a subscriber */
    {"CREATE STREAM g AS SELECT k, window_start AS ws, COUNT(*) AS n, SUM(v) AS s, "
     "MIN(v) AS lo, MAX(k) AS mk FROM t GROUP BY k, session(v, INTERVAL '0.6' SECOND) "
     "EMIT CHANGES;"
     "CREATE MATERIALIZED VIEW mv AS SELECT k, ws, n, s, lo, mk FROM g",
     {"SELECT * FROM mv ORDER BY k, ws, n", NULL},
     {"g", NULL},
     {"g", NULL},
     false},
    /* 1: session windows, EMIT CHANGES, COUNT(DISTINCT): states encoded */
    {"CREATE MATERIALIZED VIEW mv AS SELECT k, window_start AS ws, "
     "COUNT(DISTINCT v % 7) AS n, SUM(v) AS s, FIRST_VALUE(k) AS mk FROM t "
     "GROUP BY k, session(v, INTERVAL '0.6' SECOND) EMIT CHANGES",
     {"SELECT * FROM mv ORDER BY k, ws, n", NULL},
     {"mv", NULL},
     {"mv", NULL},
     false},
    /* 2: session windows with a late side output */
    {"CREATE STREAM g AS SELECT k, window_start AS ws, COUNT(*) AS n, SUM(v) AS s "
     "FROM t GROUP BY k, session(v, INTERVAL '0.6' SECOND) "
     "WITH (late_output = 'gl');"
     "CREATE MATERIALIZED VIEW mv AS SELECT k, ws, n, s FROM g;"
     "CREATE MATERIALIZED VIEW lv AS SELECT k, v FROM gl",
     {"SELECT * FROM mv ORDER BY k, ws", "SELECT * FROM lv ORDER BY k, v"},
     {"g", "gl"},
     {"g", NULL},
     false},
    /* 3: tumbling windows with a late side output, both read by views */
    {"CREATE STREAM g AS SELECT k, window_start AS ws, COUNT(*) AS n, SUM(v) AS s "
     "FROM t GROUP BY k, tumble(v, INTERVAL '1' SECOND) WITH (late_output = 'gl');"
     "CREATE MATERIALIZED VIEW mv AS SELECT k, ws, n, s FROM g;"
     "CREATE MATERIALIZED VIEW lv AS SELECT k, v FROM gl",
     {"SELECT * FROM mv ORDER BY k, ws", "SELECT * FROM lv ORDER BY k, v"},
     {"g", "gl"},
     {"g", NULL},
     false},
    /* 4: hopping windows on panes (sliding aggregates) closed into a view */
    {"CREATE MATERIALIZED VIEW mv AS SELECT k, window_start AS ws, COUNT(*) AS n, "
     "SUM(v) AS s, MIN(v) AS lo FROM t "
     "GROUP BY k, hop(v, INTERVAL '3' SECOND, INTERVAL '1' SECOND) EMIT ON WINDOW CLOSE",
     {"SELECT * FROM mv ORDER BY k, ws", NULL},
     {"mv", NULL},
     {"mv", NULL},
     true},
    /* 5: hopping windows on panes, merged (strings, COUNT(DISTINCT)): a result
     * borrows the merged state's strings */
    {"CREATE MATERIALIZED VIEW mv AS SELECT k, window_start AS ws, COUNT(*) AS n, "
     "COUNT(DISTINCT v % 7) AS d, MAX(k) AS mk, MIN(k) AS lk FROM t "
     "GROUP BY k, hop(v, INTERVAL '4' SECOND, INTERVAL '1' SECOND) EMIT ON WINDOW CLOSE",
     {"SELECT * FROM mv ORDER BY k, ws", NULL},
     {"mv", NULL},
     {"mv", NULL},
     true},
    /* 6: a temporal filter (rows held to a horizon; 100 and 200 behind it) into
     * a GROUP BY view and a stream: B's rows go in whole or not at all (the
     * view's groups are not compared: a key B added stays, empty, after an
     * abort, until the GROUP BY compacts its emptied groups) */
    {"CREATE MATERIALIZED VIEW mv AS SELECT k, v "
     "FROM t WHERE v > WATERMARK() - INTERVAL '2' SECOND;"
     "CREATE STREAM r AS SELECT k, v FROM t WHERE v > WATERMARK() - INTERVAL '2' SECOND",
     {"SELECT * FROM mv ORDER BY k, v", NULL},
     {"r", NULL},
     {NULL, NULL},
     false},
    /* 7: B in, then the watermark that retracts every row held (one stream:
     * each stream takes a watermark on its own) */
    {"CREATE MATERIALIZED VIEW mv AS SELECT k, COUNT(*) AS n, SUM(v) AS s, MAX(k) AS mk "
     "FROM t WHERE v >= WATERMARK() - INTERVAL '2' SECOND GROUP BY k",
     {"SELECT * FROM mv ORDER BY k", NULL},
     {"mv", NULL},
     {"mv", NULL},
     true},
    /* 8: a GROUP BY over the temporal filter, one reader: B whole or not at all */
    {"CREATE MATERIALIZED VIEW mv AS SELECT k, COUNT(*) AS n, SUM(v) AS s, MIN(v) AS lo, "
     "MAX(k) AS mk FROM t WHERE v > WATERMARK() - INTERVAL '2' SECOND GROUP BY k",
     {"SELECT * FROM mv ORDER BY k", NULL},
     {"mv", NULL},
     {NULL, NULL},
     false},
};

/* FNV-1a over text, into *h. */
static void hash_text(const char* text, uint64_t* h) {
  for (const char* p = text; *p != '\0'; p++) *h = (*h ^ (uint8_t)*p) * 1099511628211ull;
}

static int cmp_text(const void* a, const void* b) {
  return strcmp(*(char* const*)a, *(char* const*)b);
}

/* The hash of every query's text, and of every row queued on the
 * subscriptions (drained, as a set of rows), into *views and *rows; *nrows rows. */
static int observe(laminar_db* db, const fcase* c, laminar_subscription** subs,
                   uint64_t* views, uint64_t* rows, int64_t* nrows) {
  size_t big = 4u << 20;
  char* text = malloc(big);
  CHECK(text != NULL);
  *views = 14695981039346656037ull;
  for (int i = 0; i < 2 && c->views[i] != NULL; i++) {
    laminar_error err;
    laminar_code rc = query_text(db, c->views[i], text, big, &err);
    if (rc != LAMINAR_OK) printf("query: %s\n", err.message);
    if (getenv("LM_FAULT_VIEWS") != NULL) printf("%s: %.600s\n", c->views[i], text);
    CHECK(rc == LAMINAR_OK);
    hash_text(text, views);
    hash_text("|", views);
  }
  *nrows = 0;
  for (int i = 0; i < 2 && subs[i] != NULL; i++) {
    text[0] = '\0';
    CHECK(take_text(subs[i], text, big) == 0);
    /* As a set: windows may close at a later watermark advance after a
     * failure (the input that moved the watermark was applied). */
    char* lines[1 << 14];
    int64_t n = 0;
    for (char* p = strtok(text, ";"); p != NULL && n < (1 << 14); p = strtok(NULL, ";"))
      lines[n++] = p;
    qsort(lines, (size_t)n, sizeof *lines, cmp_text);
    for (int64_t j = 0; j < n; j++) {
      hash_text(lines[j], rows);
      hash_text(";", rows);
    }
    *nrows += n;
    hash_text("|", rows);
  }
  free(text);
  return 0;
}

/* Case `c` with the nth allocation of step B failing (0: none): the output
 * (views, rows out) into out, and whether an allocation failed. */
static int run_case(const fcase* c, int64_t nth, char* out, size_t cap,
                    bool* out_failed) {
  laminar_error err;
  laminar_db* db;
  CHECK_CODE(laminar_open(NULL, &db, &err), LAMINAR_OK, &err);
  char sql[2048];
  snprintf(sql, sizeof sql, "%s%s", SRC, c->sql);
  CHECK_CODE(laminar_execute(db, sql, &err), LAMINAR_OK, &err);
  laminar_subscription* subs[3] = {NULL, NULL, NULL};
  for (int i = 0; i < 2 && c->subs[i] != NULL; i++)
    CHECK_CODE(laminar_subscribe(db, c->subs[i], &subs[i], &err), LAMINAR_OK, &err);
  laminar_source* src;
  CHECK_CODE(laminar_source_open(db, "t", &src, &err), LAMINAR_OK, &err);
  uint64_t rows = 14695981039346656037ull, views_a, views;
  int64_t nrows_a, nrows, nout;
  CHECK(push_a(src, &err) == 0);
  CHECK_CODE(laminar_run_until_idle(db, &err), LAMINAR_OK, &err);
  if (c->close) {
    CHECK(push_b(src, &err) == 0);
    CHECK_CODE(laminar_run_until_idle(db, &err), LAMINAR_OK, &err);
  }
  CHECK(observe(db, c, subs, &views_a, &rows, &nrows_a) == 0);
  int64_t groups_a[2];
  for (int i = 0; i < 2 && c->groups[i] != NULL; i++)
    groups_a[i] = stream_metric(db, c->groups[i], "state_groups");
  if (c->close) {
    CHECK_CODE(laminar_source_watermark(src, 100000, &err), LAMINAR_OK, &err);
  } else {
    CHECK(push_b(src, &err) == 0);
  }
  lm_fault_alloc_set(nth, false);
  laminar_code rc = laminar_run_until_idle(db, &err);
  *out_failed = lm_fault_alloc_failures() > 0;
  lm_fault_alloc_set(0, false);
  if (rc != LAMINAR_OK) {
    /* B's push failed (not applied), or B went in and closing the windows
     * its watermark closes failed: they close at the next advance, and B
     * must not be pushed again. */
    bool closing = strstr(err.message, "at the next watermark advance") != NULL;
    if (getenv("LM_FAULT_DEBUG") != NULL)
      printf("allocation %" PRId64 ": %s\n", nth, err.message);
    if (rc != LAMINAR_ERR_NOMEM ||
        (!closing && (c->close || strstr(err.message, "not applied") == NULL))) {
      printf("allocation %" PRId64 ": %s\n", nth, err.message);
      CHECK(0);
    }
    if (closing && !c->close) { /* B is in: the next advance closes them */
      CHECK_CODE(laminar_run_until_idle(db, &err), LAMINAR_OK, &err);
      goto closed;
    }
    /* As before B: the views, the streams' groups, nothing emitted. */
    uint64_t ignored = 0;
    CHECK(observe(db, c, subs, &views, &ignored, &nout) == 0);
    bool same = views == views_a && nout == 0;
    for (int i = 0; i < 2 && c->groups[i] != NULL; i++)
      same &= stream_metric(db, c->groups[i], "state_groups") == groups_a[i];
    if (!same) {
      printf("allocation %" PRId64 " (%s): the views %s, %" PRId64
             " rows emitted, groups %" PRId64 " (before %" PRId64 ")\n",
             nth, err.message, views == views_a ? "unchanged" : "changed", nout,
             stream_metric(db, c->groups[0], "state_groups"), groups_a[0]);
      CHECK(0);
    }
    if (!c->close) CHECK(push_b(src, &err) == 0); /* the retry */
    CHECK_CODE(laminar_run_until_idle(db, &err), LAMINAR_OK, &err);
  }
closed:
  /* Everything closes. */
  CHECK_CODE(laminar_source_watermark(src, 200000, &err), LAMINAR_OK, &err);
  CHECK_CODE(laminar_run_until_idle(db, &err), LAMINAR_OK, &err);
  CHECK(observe(db, c, subs, &views, &rows, &nrows) == 0);
  snprintf(out, cap,
           "views=%016" PRIx64 " rows=%016" PRIx64 " nrows=%" PRId64 "+%" PRId64, views,
           rows, nrows_a, nrows);
  for (int i = 0; subs[i] != NULL; i++) laminar_subscription_close(subs[i]);
  laminar_source_close(src);
  CHECK(laminar_close(db) == LAMINAR_OK);
  return 0;
}

/* Case `which` with each allocation of step B failing in turn: each gives
 * the unfaulted output. */
static int fault_case(int which) {
  const fcase* c = &CASES[which];
  char want[256], got[256];
  bool failed;
  CHECK(run_case(c, 0, want, sizeof want, &failed) == 0);
  printf("case %d unfaulted: %s\n", which, want);
  int64_t faults = 0;
  /* LM_FAULT_FROM=n starts at the nth allocation (debugging a failure). */
  int64_t from = getenv("LM_FAULT_FROM") != NULL ? atoll(getenv("LM_FAULT_FROM")) : 1;
  for (int64_t nth = from > 0 ? from : 1; nth < 100000; nth++) {
    CHECK(run_case(c, nth, got, sizeof got, &failed) == 0);
    if (!failed) break;
    faults++;
    if (strcmp(got, want) != 0) {
      printf("allocation %" PRId64 " failing: %s\n", nth, got);
      CHECK(0);
    }
  }
  printf("case %d: %" PRId64 " allocations failed in turn\n", which, faults);
  CHECK(faults > 3);
  return 0;
}

static int test_session_changes(void) { return fault_case(0); }
static int test_session_changes_distinct(void) { return fault_case(1); }
static int test_late_session(void) { return fault_case(2); }
static int test_late_tumble(void) { return fault_case(3); }
static int test_hop_close_slide(void) { return fault_case(4); }
static int test_hop_close_strings(void) { return fault_case(5); }
static int test_temporal_rows(void) { return fault_case(6); }
static int test_temporal_retract(void) { return fault_case(7); }
static int test_temporal_group(void) { return fault_case(8); }
#else
static int skip(void) {
  return lm_test_skip(
      "built without LAMINAR_FAULT_INJECTION (scripts/test.sh step 2 has it)");
}
static int test_session_changes(void) { return skip(); }
static int test_session_changes_distinct(void) { return skip(); }
static int test_late_session(void) { return skip(); }
static int test_late_tumble(void) { return skip(); }
static int test_hop_close_slide(void) { return skip(); }
static int test_hop_close_strings(void) { return skip(); }
static int test_temporal_rows(void) { return skip(); }
static int test_temporal_retract(void) { return skip(); }
static int test_temporal_group(void) { return skip(); }
#endif

static const lm_test_case cases[] = {
    {"session_changes", test_session_changes},
    {"session_changes_distinct", test_session_changes_distinct},
    {"late_session", test_late_session},
    {"late_tumble", test_late_tumble},
    {"hop_close_slide", test_hop_close_slide},
    {"hop_close_strings", test_hop_close_strings},
    {"temporal_rows", test_temporal_rows},
    {"temporal_retract", test_temporal_retract},
    {"temporal_group", test_temporal_group},
    {NULL, NULL}};

int main(int argc, char** argv) {
  setvbuf(stdout, NULL, _IONBF, 0); /* (a failed check aborts under ASan) */
  return lm_test_main(argc, argv, cases);
}
