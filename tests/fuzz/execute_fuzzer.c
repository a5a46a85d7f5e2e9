/*
 * execute_fuzzer.c -- libFuzzer target for the catalog path of the C API: the
 * input is SQL text run by laminar_execute() on a fresh database that already
 * holds the quick-start source `trades`. Then SHOW STREAMS (via laminar_query)
 * lists what the input created; each stream gets a subscription, DESCRIBE and
 * laminar_schema(); two small batches with awkward values (NULL, NaN, INT64
 * extremes, empty strings, plain and dictionary strings) are pushed into
 * `trades`, every window is closed, the graph is driven inline and every result
 * batch is validated; finally laminar_close(). Any return code from the input is
 * fine; a crash, leak, sanitizer report, invalid Arrow output or a broken error
 * contract (code mismatch, missing "LDB-NNNN" prefix, LDB-9999) aborts.
 *
 * The body is lm_fuzz_execute(), callable without libFuzzer: tests/c/
 * test_fuzz_replay.c #includes this file and replays tests/fuzz/corpora/execute/
 * through it. LLVMFuzzerTestOneInput is defined only with -DLM_LIBFUZZER (see
 * tests/fuzz/README.md). Needs tests/c/ on the include path (arrow_build.h).
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arrow_build.h"
#include "laminar.h"

/* The database every input starts from. */
static const char LM_FUZZ_EXECUTE_SETUP[] =
    "CREATE SOURCE trades (symbol VARCHAR NOT NULL, price DOUBLE, volume BIGINT, ts "
    "BIGINT, "
    "WATERMARK FOR ts AS ts - INTERVAL '100' MILLISECOND)";

/* Streams followed per input, and result batches drained per subscription. */
#define LM_FUZZ_MAX_STREAMS 32
#define LM_FUZZ_MAX_BATCHES 256

/* Report the failed invariant's line (the stack comes from the sanitizer's
 * abort handler or the debugger) and abort. */
#define LM_FUZZ_FAIL()                                                             \
  do {                                                                             \
    fprintf(stderr, "%s:%d: execute fuzz invariant failed\n", __FILE__, __LINE__); \
    abort();                                                                       \
  } while (0)

/* Abort unless a failed call's error follows the laminar.h contract. */
static void lm_fuzz_check_error(laminar_code rc, const laminar_error* err) {
  if (rc == LAMINAR_OK) return;
  if (rc == LAMINAR_ERR_INTERNAL || rc == LAMINAR_ERR_MISUSE) LM_FUZZ_FAIL();
  if (strcmp(laminar_errstr(rc), "unknown error code") == 0) LM_FUZZ_FAIL();
  if (err->code != rc) LM_FUZZ_FAIL();
  if (memchr(err->message, '\0', sizeof err->message) == NULL) LM_FUZZ_FAIL();
  char prefix[16];
  snprintf(prefix, sizeof prefix, "LDB-%04d", (int)rc);
  if (strncmp(err->message, prefix, strlen(prefix)) != 0) LM_FUZZ_FAIL();
}

/* Drain and validate a row stream from laminar_query(); releases it. With
 * `names`, copies column 0 of every row (SHOW STREAMS: the stream name) into
 * names[*n_names] up to LM_FUZZ_MAX_STREAMS (each malloc'd). */
static void lm_fuzz_drain_rows(struct ArrowArrayStream* st, char** names, int* n_names) {
  struct ArrowSchema schema;
  if (st->get_schema(st, &schema) != 0) LM_FUZZ_FAIL();
  for (;;) {
    struct ArrowArray array;
    if (st->get_next(st, &array) != 0) LM_FUZZ_FAIL();
    if (array.release == NULL) break;
    struct ArrowArrayView view;
    struct ArrowError error;
    if (ArrowArrayViewInitFromSchema(&view, &schema, &error) != NANOARROW_OK ||
        ArrowArrayViewSetArray(&view, &array, &error) != NANOARROW_OK ||
        ArrowArrayViewValidate(&view, NANOARROW_VALIDATION_LEVEL_FULL, &error) !=
            NANOARROW_OK) {
      LM_FUZZ_FAIL();
    }
    if (names != NULL) {
      if (view.n_children < 1) LM_FUZZ_FAIL();
      for (int64_t i = 0; i < view.length && *n_names < LM_FUZZ_MAX_STREAMS; i++) {
        struct ArrowStringView sv = ArrowArrayViewGetStringUnsafe(view.children[0], i);
        char* name = malloc((size_t)sv.size_bytes + 1);
        if (name == NULL) LM_FUZZ_FAIL();
        memcpy(name, sv.data, (size_t)sv.size_bytes);
        name[sv.size_bytes] = '\0';
        names[(*n_names)++] = name;
      }
    }
    ArrowArrayViewReset(&view);
    array.release(&array);
  }
  schema.release(&schema);
  st->release(st);
}

/* Push one batch of awkward trades into `src`; any return code is fine. */
static void lm_fuzz_push(laminar_source* src, bool dict, int64_t ts0) {
  const trade_row rows[] = {
      {"AAPL", 10.0, false, 100, false, ts0},
      {"MSFT", 0.0, true, 0, true, ts0 + 250},
      {"", -0.0, false, INT64_MAX, false, ts0 + 400},
      {"AAPL", NAN, false, INT64_MIN, false, ts0 + 999},
      {"b\xC3\xA9", 1e308, false, -1, false, ts0 + 1000},
      {"MSFT", -1.5, false, 7, false, ts0 + 1600},
  };
  struct ArrowArray array = {0};
  struct ArrowSchema schema = {0};
  laminar_error err;
  if (build_trades(rows, (int64_t)(sizeof rows / sizeof rows[0]), dict, &array,
                   &schema) != 0) {
    LM_FUZZ_FAIL();
  }
  laminar_code rc = laminar_source_push(src, &array, &schema, &err);
  lm_fuzz_check_error(rc, &err);
  if (rc == LAMINAR_OK && array.release != NULL)
    LM_FUZZ_FAIL(); /* must have been moved */
  if (array.release != NULL) array.release(&array);
  schema.release(&schema);
}

/* Take every queued result batch of `sub` and validate it. */
static void lm_fuzz_drain_sub(laminar_subscription* sub) {
  for (int i = 0; i < LM_FUZZ_MAX_BATCHES; i++) {
    result_view rv;
    memset(&rv, 0, sizeof rv);
    laminar_error err;
    laminar_code rc = laminar_subscription_next(sub, 0, &rv.array, &rv.schema, &err);
    lm_fuzz_check_error(rc, &err);
    if (rc != LAMINAR_OK || rv.array.release == NULL) return;
    if (rv.schema.release == NULL) LM_FUZZ_FAIL();
    if (result_view_init(&rv) != 0) LM_FUZZ_FAIL();
    result_view_free(&rv);
  }
}

/* Run `data` as SQL on a fresh database (see the top of this file) and abort()
 * on any broken contract. Always returns 0 (libFuzzer's "keep going"). */
int lm_fuzz_execute(const uint8_t* data, size_t size);

int lm_fuzz_execute(const uint8_t* data, size_t size) {
  char* sql = malloc(size + 1);
  if (sql == NULL) return 0;
  if (size > 0) memcpy(sql, data, size);
  sql[size] = '\0';

  laminar_db* db = NULL;
  laminar_error err;
  if (laminar_open(NULL, &db, &err) != LAMINAR_OK) LM_FUZZ_FAIL();
  if (laminar_execute(db, LM_FUZZ_EXECUTE_SETUP, &err) != LAMINAR_OK) LM_FUZZ_FAIL();

  laminar_code rc = laminar_execute(db, sql, &err);
  lm_fuzz_check_error(rc, &err);
  /* laminar_execute(): a failing statement's error names its line:column. */
  if ((rc / 1000 == 1 || rc / 1000 == 2) && (err.line < 1 || err.column < 1))
    LM_FUZZ_FAIL();

  /* The input as a query too: only a lone SHOW/DESCRIBE may return rows. */
  struct ArrowArrayStream st;
  rc = laminar_query(db, sql, &st, &err);
  lm_fuzz_check_error(rc, &err);
  if (rc == LAMINAR_OK) lm_fuzz_drain_rows(&st, NULL, NULL);

  char* names[LM_FUZZ_MAX_STREAMS];
  int n_names = 0;
  if (laminar_query(db, "SHOW STREAMS", &st, &err) != LAMINAR_OK) LM_FUZZ_FAIL();
  lm_fuzz_drain_rows(&st, names, &n_names);

  laminar_subscription* subs[LM_FUZZ_MAX_STREAMS];
  int n_subs = 0;
  for (int i = 0; i < n_names; i++) {
    /* DESCRIBE takes an identifier: quote the name, doubling inner quotes. */
    size_t len = strlen(names[i]);
    char* q = malloc(len * 2 + 16);
    if (q == NULL) LM_FUZZ_FAIL();
    memcpy(q, "DESCRIBE \"", 10);
    size_t k = 10;
    for (size_t j = 0; j < len; j++) {
      if (names[i][j] == '"') q[k++] = '"';
      q[k++] = names[i][j];
    }
    q[k++] = '"';
    q[k] = '\0';
    if (laminar_query(db, q, &st, &err) != LAMINAR_OK) LM_FUZZ_FAIL();
    lm_fuzz_drain_rows(&st, NULL, NULL);
    free(q);

    struct ArrowSchema schema;
    if (laminar_schema(db, names[i], &schema, &err) != LAMINAR_OK) LM_FUZZ_FAIL();
    schema.release(&schema);

    if (laminar_subscribe(db, names[i], &subs[n_subs], &err) != LAMINAR_OK)
      LM_FUZZ_FAIL();
    n_subs++;
  }

  laminar_source* src = NULL;
  rc = laminar_source_open(db, "trades", &src, &err);
  lm_fuzz_check_error(rc, &err);
  if (rc == LAMINAR_OK) {
    lm_fuzz_push(src, false, 1000);
    lm_fuzz_push(src, true, 2500);
    lm_fuzz_check_error(laminar_source_watermark(src, INT64_MAX, &err), &err);
  }
  for (int round = 0; round < 4; round++) {
    /* A full subscriber queue leaves input queued: drain and drive again. */
    if (laminar_run_until_idle(db, &err) != LAMINAR_OK) LM_FUZZ_FAIL();
    for (int i = 0; i < n_subs; i++) lm_fuzz_drain_sub(subs[i]);
  }
  for (int i = 0; i < n_names; i++) {
    int64_t late = -1;
    if (laminar_stream_late_rows(db, names[i], &late, &err) != LAMINAR_OK || late < 0)
      LM_FUZZ_FAIL();
  }

  laminar_source_close(src);
  for (int i = 0; i < n_subs; i++) laminar_subscription_close(subs[i]);
  for (int i = 0; i < n_names; i++) free(names[i]);
  if (laminar_close(db) != LAMINAR_OK) LM_FUZZ_FAIL();
  free(sql);
  return 0;
}

#ifdef LM_LIBFUZZER
int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return lm_fuzz_execute(data, size);
}
#endif
