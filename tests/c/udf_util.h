/*
 * udf_util.h -- what the user-defined function tests (test_udf.c, test_udaf.c)
 * share: the trades source, pushing rows, seeded random rows, reading a
 * subscription row by row, and building a callback's result array.
 */
#ifndef LM_TEST_UDF_UTIL_H
#define LM_TEST_UDF_UTIL_H

#include "arrow_build.h"
#include "laminar.h"
#include "lm_test.h"

/* Fill `out` (a float64 or int64 array of n rows from vals / nulls) through
 * nanoarrow. */
static inline int make_array(enum ArrowType type, int64_t n, const double* vals,
                             const uint8_t* nulls, struct ArrowArray* out,
                             struct ArrowSchema* out_schema) {
  if (ArrowSchemaInitFromType(out_schema, type) != NANOARROW_OK) return 1;
  if (ArrowArrayInitFromType(out, type) != NANOARROW_OK) return 1;
  if (ArrowArrayStartAppending(out) != NANOARROW_OK) return 1;
  for (int64_t r = 0; r < n; r++) {
    int rc;
    if (nulls != NULL && nulls[r]) {
      rc = ArrowArrayAppendNull(out, 1);
    } else if (type == NANOARROW_TYPE_DOUBLE) {
      rc = ArrowArrayAppendDouble(out, vals[r]);
    } else {
      rc = ArrowArrayAppendInt(out, (int64_t)vals[r]);
    }
    if (rc != NANOARROW_OK) return 1;
  }
  return ArrowArrayFinishBuildingDefault(out, NULL) != NANOARROW_OK;
}

static const char* k_source =
    "CREATE SOURCE trades (symbol VARCHAR, price DOUBLE, volume BIGINT, ts BIGINT, "
    "WATERMARK FOR ts AS ts - INTERVAL '0' SECOND);";

static inline int open_db(laminar_db** db, laminar_source** src) {
  laminar_error err;
  CHECK_CODE(laminar_open(NULL, db, &err), LAMINAR_OK, &err);
  CHECK_CODE(laminar_execute(*db, k_source, &err), LAMINAR_OK, &err);
  if (src != NULL)
    CHECK_CODE(laminar_source_open(*db, "trades", src, &err), LAMINAR_OK, &err);
  return 0;
}

static inline int push_rows(laminar_source* src, const trade_row* rows, int64_t n) {
  struct ArrowArray arr;
  struct ArrowSchema sch;
  CHECK(build_trades(rows, n, false, &arr, &sch) == 0);
  laminar_error err;
  laminar_code rc = laminar_source_push(src, &arr, &sch, &err);
  if (arr.release) arr.release(&arr);
  sch.release(&sch);
  CHECK_CODE(rc, LAMINAR_OK, &err);
  return 0;
}

/* A config for a durable database in dir: checkpoints when asked, a
 * synchronous WAL. */
static inline int durable_config(const char* dir, laminar_config** cfg) {
  laminar_error err;
  CHECK_CODE(laminar_config_create(cfg), LAMINAR_OK, NULL);
  CHECK_CODE(laminar_config_set(*cfg, "data_dir", dir, &err), LAMINAR_OK, &err);
  CHECK_CODE(laminar_config_set(*cfg, "checkpoint_interval", "10 min", &err), LAMINAR_OK,
             &err);
  CHECK_CODE(laminar_config_set(*cfg, "wal_mode", "sync", &err), LAMINAR_OK, &err);
  return 0;
}

static inline uint64_t rng_next(uint64_t* s) {
  *s ^= *s << 13;
  *s ^= *s >> 7;
  *s ^= *s << 17;
  return *s;
}

/* Random rows: volume 0..99, price NULL one time in 5, ts ascending from t0. */
static inline void random_rows(uint64_t* rng, trade_row* rows, int64_t n, int64_t t0) {
  static const char* const syms[] = {"AAPL", "MSFT", "ÄÖÜ", "x"};
  for (int64_t r = 0; r < n; r++) {
    rows[r] = (trade_row){.symbol = syms[rng_next(rng) % 4],
                          .price = (double)(rng_next(rng) % 10000) / 100.0,
                          .price_null = rng_next(rng) % 5 == 0,
                          .volume = (int64_t)(rng_next(rng) % 100),
                          .ts = t0 + r};
  }
}

/* Read every batch queued on sub into a result callback. */
typedef int (*row_fn)(void* arg, const result_view* rv, int64_t r);

static inline int drain(laminar_subscription* sub, row_fn fn, void* arg,
                        int64_t* out_rows) {
  laminar_error err;
  *out_rows = 0;
  for (;;) {
    result_view rv;
    memset(&rv, 0, sizeof rv);
    CHECK_CODE(laminar_subscription_next(sub, 0, &rv.array, &rv.schema, &err), LAMINAR_OK,
               &err);
    if (rv.array.release == NULL) return 0;
    CHECK(result_view_init(&rv) == 0);
    for (int64_t r = 0; r < rv.array.length; r++) {
      int bad = fn(arg, &rv, r);
      if (bad) {
        result_view_free(&rv);
        return 1;
      }
    }
    *out_rows += rv.array.length;
    result_view_free(&rv);
  }
}

static inline const struct ArrowArrayView* col(const result_view* rv, const char* name) {
  int64_t i = result_col_index(rv, name);
  return i < 0 ? NULL : rv->view.children[i];
}

#endif /* LM_TEST_UDF_UTIL_H */
