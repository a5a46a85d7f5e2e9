/*
 * test_udf.c -- user-defined scalar functions through laminar.h
 * (laminar_function_register / laminar_function_drop), in the Release and the
 * ASan+UBSan builds:
 *  - a function in the select list, WHERE, GROUP BY keys, aggregate
 *    arguments and HAVING gives what the same arithmetic computed here gives,
 *    over seeded random batches with NULLs (LAMINAR_TEST_SEED replays);
 *  - NULL handling (NULL in -> NULL out, not passed; or passed with
 *    CALLED_ON_NULL), DETERMINISTIC constant calls made over one row;
 *  - VARCHAR, BOOLEAN, INT and TIMESTAMP arguments and results;
 *  - a callback error and every kind of bad result (released, wrong format,
 *    wrong length, invalid array, invalid UTF-8) fail the batch with 3010 /
 *    3011 naming the function and the stream; the batch is not applied, data
 *    before it stays, the stream goes on;
 *  - registration errors, replace/drop refused while a stream uses the
 *    function, destroy called exactly once, a durable reopen without the
 *    function fails naming it, laminar_query over a view calls it.
 */
#define _GNU_SOURCE  // mkdtemp, nftw under -std=c17 (lm_test_fs.h)
#include "arrow_build.h"
#include "laminar.h"
#include "lm_test.h"
#include "lm_test_fs.h"
#include "udf_util.h"

#include <math.h>
#include <stdatomic.h>

/* ---- the functions -------------------------------------------------------------- */

/* What a test's callback does; its counters. */
typedef enum mode {
  MODE_OK = 0,
  MODE_FAIL,          /* return 1 with a message */
  MODE_NOT_FILLED,    /* return 0, out left released */
  MODE_WRONG_FORMAT,  /* an int64 result for a double function */
  MODE_WRONG_LENGTH,  /* one row more */
  MODE_BAD_NULLCOUNT, /* null_count that disagrees with the bitmap */
  MODE_BAD_UTF8,      /* a string result with invalid UTF-8 */
  MODE_RESULT_REFUSED /* return LAMINAR_ERR_FUNCTION_RESULT with a message */
} mode;

typedef struct fn_state {
  double factor;
  mode mode;
  int64_t calls;
  int64_t rows;        /* rows passed over all calls */
  int64_t nulls_seen;  /* NULL argument values passed */
  int64_t last_length; /* args->length of the last call */
  int destroyed;       /* destroy calls */
} fn_state;

static void destroy_state(void* user) { ((fn_state*)user)->destroyed++; }

/* Count what the call got. */
static void note_call(fn_state* st, const struct ArrowArray* args) {
  st->calls++;
  st->rows += args->length;
  st->last_length = args->length;
  for (int64_t c = 0; c < args->n_children; c++) {
    const struct ArrowArray* a = args->children[c];
    const uint8_t* valid = a->buffers[0];
    for (int64_t r = 0; valid != NULL && r < a->length; r++) {
      if (!ArrowBitGet(valid, a->offset + r)) st->nulls_seen++;
    }
  }
}

/* scale(x DOUBLE) -> DOUBLE: x * factor; a NULL argument (CALLED_ON_NULL) gives
 * -1. Misbehaves as st->mode says. */
static int scale_fn(void* user, const struct ArrowArray* args,
                    const struct ArrowSchema* args_schema, struct ArrowArray* out,
                    struct ArrowSchema* out_schema, char* error, size_t cap) {
  fn_state* st = user;
  note_call(st, args);
  if (args_schema->n_children != 1 || strcmp(args_schema->children[0]->format, "g") != 0)
    return 2;
  if (st->mode == MODE_FAIL) {
    snprintf(error, cap, "scale refuses this batch");
    return 1;
  }
  if (st->mode == MODE_RESULT_REFUSED) {
    snprintf(error, cap, "value 3 does not fit its type");
    return LAMINAR_ERR_FUNCTION_RESULT;
  }
  if (st->mode == MODE_NOT_FILLED) return 0;
  const struct ArrowArray* x = args->children[0];
  const uint8_t* valid = x->buffers[0];
  const double* xs = x->buffers[1];
  int64_t n = args->length + (st->mode == MODE_WRONG_LENGTH);
  double* vals = malloc(sizeof(double) * (size_t)(n + 1));
  if (vals == NULL) return 3;
  for (int64_t r = 0; r < n; r++) {
    bool null =
        r >= args->length || (valid != NULL && !ArrowBitGet(valid, x->offset + r));
    vals[r] = null ? -1.0 : xs[x->offset + r] * st->factor;
  }
  enum ArrowType t =
      st->mode == MODE_WRONG_FORMAT ? NANOARROW_TYPE_INT64 : NANOARROW_TYPE_DOUBLE;
  int rc = make_array(t, n, vals, NULL, out, out_schema);
  free(vals);
  /* More NULLs than rows, and no validity bitmap to hold them. */
  if (rc == 0 && st->mode == MODE_BAD_NULLCOUNT) out->null_count = n + 1;
  return rc;
}

/* A BIGINT -> `type` function over every row: is_even (BOOLEAN) and
 * bucket (INT, n mod 3 of a non-negative n). */
static int bigint_map(void* user, const struct ArrowArray* args, enum ArrowType type,
                      struct ArrowArray* out, struct ArrowSchema* out_schema) {
  note_call(user, args);
  const struct ArrowArray* a = args->children[0];
  const int64_t* v = a->buffers[1];
  if (ArrowSchemaInitFromType(out_schema, type) != NANOARROW_OK) return 1;
  if (ArrowArrayInitFromType(out, type) != NANOARROW_OK) return 1;
  if (ArrowArrayStartAppending(out) != NANOARROW_OK) return 1;
  for (int64_t r = 0; r < a->length; r++) {
    int64_t x = v[a->offset + r];
    int64_t y = type == NANOARROW_TYPE_BOOL ? x % 2 == 0 : x % 3;
    if (ArrowArrayAppendInt(out, y) != NANOARROW_OK) return 1;
  }
  return ArrowArrayFinishBuildingDefault(out, NULL) != NANOARROW_OK;
}

static int is_even_fn(void* user, const struct ArrowArray* args,
                      const struct ArrowSchema* args_schema, struct ArrowArray* out,
                      struct ArrowSchema* out_schema, char* error, size_t cap) {
  (void)args_schema;
  (void)error;
  (void)cap;
  return bigint_map(user, args, NANOARROW_TYPE_BOOL, out, out_schema);
}

static int bucket_fn(void* user, const struct ArrowArray* args,
                     const struct ArrowSchema* args_schema, struct ArrowArray* out,
                     struct ArrowSchema* out_schema, char* error, size_t cap) {
  (void)args_schema;
  (void)error;
  (void)cap;
  return bigint_map(user, args, NANOARROW_TYPE_INT32, out, out_schema);
}

/* tag(s VARCHAR, n BIGINT) -> VARCHAR: "<s>#<n>" (NULL when n is 13); in
 * MODE_BAD_UTF8 every value is the byte 0xff. */
static int tag_fn(void* user, const struct ArrowArray* args,
                  const struct ArrowSchema* args_schema, struct ArrowArray* out,
                  struct ArrowSchema* out_schema, char* error, size_t cap) {
  (void)args_schema;
  (void)error;
  (void)cap;
  fn_state* st = user;
  note_call(st, args);
  const struct ArrowArray* s = args->children[0];
  const struct ArrowArray* n = args->children[1];
  const int32_t* offs = s->buffers[1];
  const char* bytes = s->buffers[2];
  const int64_t* nv = n->buffers[1];
  if (ArrowSchemaInitFromType(out_schema, NANOARROW_TYPE_STRING) != NANOARROW_OK)
    return 1;
  if (ArrowArrayInitFromType(out, NANOARROW_TYPE_STRING) != NANOARROW_OK) return 1;
  if (ArrowArrayStartAppending(out) != NANOARROW_OK) return 1;
  for (int64_t r = 0; r < args->length; r++) {
    int64_t k = nv[n->offset + r];
    if (k == 13) {
      if (ArrowArrayAppendNull(out, 1) != NANOARROW_OK) return 1;
      continue;
    }
    char buf[128];
    int len = snprintf(buf, sizeof buf, "%.*s#%lld",
                       (int)(offs[s->offset + r + 1] - offs[s->offset + r]),
                       bytes + offs[s->offset + r], (long long)k);
    if (st->mode == MODE_BAD_UTF8) {
      buf[0] = (char)0xff;
      len = 1;
    }
    struct ArrowStringView sv = {buf, len};
    if (ArrowArrayAppendString(out, sv) != NANOARROW_OK) return 1;
  }
  return ArrowArrayFinishBuildingDefault(out, NULL) != NANOARROW_OK;
}

/* shift(ts TIMESTAMP) -> TIMESTAMP: one second later (microseconds). */
static int shift_fn(void* user, const struct ArrowArray* args,
                    const struct ArrowSchema* args_schema, struct ArrowArray* out,
                    struct ArrowSchema* out_schema, char* error, size_t cap) {
  (void)error;
  (void)cap;
  note_call(user, args);
  if (strcmp(args_schema->children[0]->format, "tsu:") != 0) return 2;
  const struct ArrowArray* a = args->children[0];
  const int64_t* v = a->buffers[1];
  ArrowSchemaInit(out_schema);
  if (ArrowSchemaSetTypeDateTime(out_schema, NANOARROW_TYPE_TIMESTAMP,
                                 NANOARROW_TIME_UNIT_MICRO, NULL) != NANOARROW_OK)
    return 1;
  if (ArrowArrayInitFromType(out, NANOARROW_TYPE_INT64) != NANOARROW_OK) return 1;
  if (ArrowArrayStartAppending(out) != NANOARROW_OK) return 1;
  for (int64_t r = 0; r < a->length; r++) {
    if (ArrowArrayAppendInt(out, v[a->offset + r] + 1000000) != NANOARROW_OK) return 1;
  }
  return ArrowArrayFinishBuildingDefault(out, NULL) != NANOARROW_OK;
}

/* ---- helpers ---------------------------------------------------------------------- */

static int reg_scale(laminar_db* db, fn_state* st, uint32_t flags, laminar_error* err) {
  const char* args[] = {"g"};
  return (int)laminar_function_register(db, "scale", args, 1, "g", scale_fn, st,
                                        destroy_state, flags, err);
}

/* ---- select list and WHERE over random rows ---------------------------------------- */

typedef struct expect_map {
  const trade_row* rows; /* the rows pushed, in order */
  int64_t n;
  int64_t next; /* the next kept row to match */
  double factor;
} expect_map;

/* Each output row: the next input row with an even volume; y = price * factor
 * or NULL for a NULL price; t = "<symbol>#<volume>". */
static int check_map_row(void* arg, const result_view* rv, int64_t r) {
  expect_map* x = arg;
  while (x->next < x->n && x->rows[x->next].volume % 2 != 0) x->next++;
  CHECK(x->next < x->n);
  const trade_row* t = &x->rows[x->next++];
  const struct ArrowArrayView* y = col(rv, "y");
  const struct ArrowArrayView* tag = col(rv, "t");
  CHECK(y != NULL && tag != NULL);
  CHECK(ArrowArrayViewIsNull(y, r) == t->price_null);
  if (!t->price_null) CHECK(ArrowArrayViewGetDoubleUnsafe(y, r) == t->price * x->factor);
  char want[128];
  snprintf(want, sizeof want, "%s#%lld", t->symbol, (long long)t->volume);
  struct ArrowStringView sv = ArrowArrayViewGetStringUnsafe(tag, r);
  CHECK(sv.size_bytes == (int64_t)strlen(want) &&
        memcmp(sv.data, want, strlen(want)) == 0);
  return 0;
}

static int test_select_where_random(void) {
  uint64_t rng = lm_test_seed() | 1;
  laminar_db* db;
  laminar_source* src;
  laminar_error err;
  CHECK(open_db(&db, &src) == 0);
  fn_state scale = {.factor = 2.5}, even = {0}, tag = {0};
  CHECK_CODE(reg_scale(db, &scale, LAMINAR_FUNCTION_DETERMINISTIC, &err), LAMINAR_OK,
             &err);
  const char* l[] = {"l"};
  const char* ul[] = {"u", "l"};
  CHECK_CODE(laminar_function_register(db, "is_even", l, 1, "b", is_even_fn, &even, NULL,
                                       0, &err),
             LAMINAR_OK, &err);
  CHECK_CODE(
      laminar_function_register(db, "TAG", ul, 2, "u", tag_fn, &tag, NULL, 0, &err),
      LAMINAR_OK, &err);
  CHECK_CODE(laminar_execute(db,
                             "CREATE STREAM s AS SELECT symbol, Scale(price) AS y, "
                             "tag(symbol, volume) AS t FROM trades WHERE is_even(volume)",
                             &err),
             LAMINAR_OK, &err);
  laminar_subscription* sub;
  CHECK_CODE(laminar_subscribe(db, "s", &sub, &err), LAMINAR_OK, &err);
  enum { N = 600 };
  static trade_row rows[N];
  random_rows(&rng, rows, N, 1000);
  int64_t pushed = 0;
  while (pushed < N) {
    int64_t len = (int64_t)(rng_next(&rng) % 97);
    if (len > N - pushed) len = N - pushed;
    CHECK(push_rows(src, rows + pushed, len) == 0); /* empty batches too */
    pushed += len;
  }
  CHECK_CODE(laminar_run_until_idle(db, &err), LAMINAR_OK, &err);
  expect_map x = {rows, N, 0, 2.5};
  int64_t got;
  CHECK(drain(sub, check_map_row, &x, &got) == 0);
  int64_t want = 0;
  for (int64_t r = 0; r < N; r++) want += rows[r].volume % 2 == 0;
  EXPECT(got == want);
  /* NULL in -> NULL out: scale never saw a NULL; is_even saw every row. */
  EXPECT(scale.nulls_seen == 0);
  EXPECT(even.rows == N);
  laminar_subscription_close(sub);
  laminar_source_close(src);
  CHECK_CODE(laminar_close(db), LAMINAR_OK, NULL);
  EXPECT(scale.destroyed == 1);
  return 0;
}

/* ---- NULL handling and constant calls --------------------------------------------- */

static int count_rows(void* arg, const result_view* rv, int64_t r) {
  (void)rv;
  (void)r;
  (*(int64_t*)arg)++;
  return 0;
}

typedef struct null_check {
  const trade_row* rows;
  int64_t next;
} null_check;

/* CALLED_ON_NULL: y = -1 for a NULL price. */
static int check_null_row(void* arg, const result_view* rv, int64_t r) {
  null_check* x = arg;
  const trade_row* t = &x->rows[x->next++];
  const struct ArrowArrayView* y = col(rv, "y");
  CHECK(!ArrowArrayViewIsNull(y, r));
  CHECK(ArrowArrayViewGetDoubleUnsafe(y, r) == (t->price_null ? -1.0 : t->price * 2.0));
  return 0;
}

static int test_null_handling_and_constants(void) {
  laminar_db* db;
  laminar_source* src;
  laminar_error err;
  CHECK(open_db(&db, &src) == 0);
  fn_state st = {.factor = 2.0};
  CHECK_CODE(reg_scale(db, &st, LAMINAR_FUNCTION_CALLED_ON_NULL, &err), LAMINAR_OK, &err);
  CHECK_CODE(laminar_execute(
                 db, "CREATE STREAM s AS SELECT scale(price) AS y FROM trades", &err),
             LAMINAR_OK, &err);
  laminar_subscription* sub;
  CHECK_CODE(laminar_subscribe(db, "s", &sub, &err), LAMINAR_OK, &err);
  trade_row rows[6] = {{"a", 1.5, false, 1, false, 1},  {"a", 0, true, 2, false, 2},
                       {"a", 3.0, false, 3, false, 3},  {"a", 0, true, 4, false, 4},
                       {"a", -2.0, false, 5, false, 5}, {"a", 7.0, false, 6, false, 6}};
  CHECK(push_rows(src, rows, 6) == 0);
  CHECK_CODE(laminar_run_until_idle(db, &err), LAMINAR_OK, &err);
  null_check x = {rows, 0};
  int64_t got;
  CHECK(drain(sub, check_null_row, &x, &got) == 0);
  EXPECT(got == 6);
  EXPECT(st.nulls_seen == 2);
  laminar_subscription_close(sub);
  laminar_source_close(src);
  CHECK_CODE(laminar_close(db), LAMINAR_OK, NULL);

  /* Constant arguments: one row per chunk when DETERMINISTIC, every row
   * otherwise; a NULL constant without CALLED_ON_NULL: no call at all. */
  for (int det = 0; det < 3; det++) {
    CHECK(open_db(&db, &src) == 0);
    fn_state c = {.factor = 4.0};
    CHECK_CODE(reg_scale(db, &c, det == 1 ? LAMINAR_FUNCTION_DETERMINISTIC : 0, &err),
               LAMINAR_OK, &err);
    const char* sql = det == 2 ? "CREATE STREAM s AS SELECT volume, scale(NULL) AS y "
                                 "FROM trades"
                               : "CREATE STREAM s AS SELECT volume, scale(2) AS y "
                                 "FROM trades";
    CHECK_CODE(laminar_execute(db, sql, &err), LAMINAR_OK, &err);
    CHECK_CODE(laminar_subscribe(db, "s", &sub, &err), LAMINAR_OK, &err);
    CHECK(push_rows(src, rows, 6) == 0);
    CHECK_CODE(laminar_run_until_idle(db, &err), LAMINAR_OK, &err);
    int64_t n = 0;
    CHECK(drain(sub, count_rows, &n, &got) == 0);
    EXPECT(got == 6);
    EXPECT(c.calls == (det == 2 ? 0 : 1));
    EXPECT(c.last_length == (det == 1 ? 1 : det == 2 ? 0 : 6));
    laminar_subscription_close(sub);
    laminar_source_close(src);
    CHECK_CODE(laminar_close(db), LAMINAR_OK, NULL);
  }
  return 0;
}

/* ---- GROUP BY keys, aggregate arguments, HAVING ------------------------------------ */

/* Sums per (bucket, window) computed here. */
enum { WIN = 100, NB = 3, NWIN = 8 };

typedef struct group_want {
  double sum[NWIN][NB];
  int64_t count[NWIN][NB];
  int64_t seen;
} group_want;

static int check_group_row(void* arg, const result_view* rv, int64_t r) {
  group_want* w = arg;
  const struct ArrowArrayView* ws = col(rv, "window_start");
  const struct ArrowArrayView* b = col(rv, "b");
  const struct ArrowArrayView* total = col(rv, "total");
  CHECK(ws != NULL && b != NULL && total != NULL);
  int64_t win = ArrowArrayViewGetIntUnsafe(ws, r) / WIN;
  int64_t k = ArrowArrayViewGetIntUnsafe(b, r);
  CHECK(win >= 0 && win < NWIN && k >= 0 && k < NB);
  /* HAVING scale(SUM(price)) > 50 = SUM(price) * 0.5 > 50 */
  CHECK(w->sum[win][k] * 0.5 > 50.0);
  double got = ArrowArrayViewGetDoubleUnsafe(total, r);
  CHECK(fabs(got - w->sum[win][k] * 0.5) <= 1e-9 * fabs(got) + 1e-9);
  w->seen++;
  return 0;
}

static int test_group_by_aggregate_having(void) {
  uint64_t rng = (lm_test_seed() * 31) | 1;
  laminar_db* db;
  laminar_source* src;
  laminar_error err;
  CHECK(open_db(&db, &src) == 0);
  fn_state scale = {.factor = 0.5}, bucket = {0};
  CHECK_CODE(reg_scale(db, &scale, LAMINAR_FUNCTION_DETERMINISTIC, &err), LAMINAR_OK,
             &err);
  const char* l[] = {"l"};
  CHECK_CODE(laminar_function_register(db, "bucket", l, 1, "i", bucket_fn, &bucket, NULL,
                                       LAMINAR_FUNCTION_THREAD_SAFE, &err),
             LAMINAR_OK, &err);
  CHECK_CODE(
      laminar_execute(db,
                      "CREATE STREAM g AS SELECT window_start, bucket(volume) AS b, "
                      "SUM(scale(price)) AS total FROM trades "
                      "GROUP BY bucket(volume), tumble(ts, INTERVAL '100' "
                      "MILLISECOND) HAVING scale(SUM(price)) > 50 "
                      "EMIT ON WINDOW CLOSE",
                      &err),
      LAMINAR_OK, &err);
  laminar_subscription* sub;
  CHECK_CODE(laminar_subscribe(db, "g", &sub, &err), LAMINAR_OK, &err);
  enum { N = NWIN * WIN };
  static trade_row rows[N];
  random_rows(&rng, rows, N, 0);
  group_want w;
  memset(&w, 0, sizeof w);
  for (int64_t r = 0; r < N; r++) {
    if (rows[r].price_null) continue;
    w.sum[rows[r].ts / WIN][rows[r].volume % 3] += rows[r].price;
    w.count[rows[r].ts / WIN][rows[r].volume % 3]++;
  }
  for (int64_t at = 0; at < N; at += 50) CHECK(push_rows(src, rows + at, 50) == 0);
  CHECK_CODE(laminar_source_push_watermark(src, INT64_MAX, &err), LAMINAR_OK, &err);
  CHECK_CODE(laminar_run_until_idle(db, &err), LAMINAR_OK, &err);
  int64_t got;
  CHECK(drain(sub, check_group_row, &w, &got) == 0);
  int64_t want = 0;
  for (int i = 0; i < NWIN; i++)
    for (int k = 0; k < NB; k++) want += w.count[i][k] > 0 && w.sum[i][k] * 0.5 > 50.0;
  EXPECT(got == want && want > 0);
  laminar_subscription_close(sub);
  laminar_source_close(src);
  CHECK_CODE(laminar_close(db), LAMINAR_OK, NULL);
  return 0;
}

/* ---- other types ---------------------------------------------------------------------- */

static int check_ts_row(void* arg, const result_view* rv, int64_t r) {
  (void)arg;
  const struct ArrowArrayView* t = col(rv, "t");
  const struct ArrowArrayView* ts = col(rv, "ts");
  CHECK(ArrowArrayViewGetIntUnsafe(t, r) ==
        ArrowArrayViewGetIntUnsafe(ts, r) * 1000 + 1000000);
  return 0;
}

static int test_timestamp_types(void) {
  laminar_db* db;
  laminar_source* src;
  laminar_error err;
  CHECK(open_db(&db, &src) == 0);
  fn_state st = {0};
  const char* ts[] = {"tsu:"};
  CHECK_CODE(
      laminar_function_register(db, "shift", ts, 1, "tsu:", shift_fn, &st, NULL, 0, &err),
      LAMINAR_OK, &err);
  /* A BIGINT column cast to TIMESTAMP for the argument. */
  CHECK_CODE(laminar_execute(db,
                             "CREATE STREAM s AS SELECT ts, shift(CAST(ts * 1000 AS "
                             "TIMESTAMP)) AS t FROM trades",
                             &err),
             LAMINAR_OK, &err);
  laminar_subscription* sub;
  CHECK_CODE(laminar_subscribe(db, "s", &sub, &err), LAMINAR_OK, &err);
  trade_row rows[3] = {{"a", 1, false, 1, false, 1000},
                       {"b", 2, false, 2, false, 2000},
                       {"c", 3, false, 3, false, 3000}};
  CHECK(push_rows(src, rows, 3) == 0);
  CHECK_CODE(laminar_run_until_idle(db, &err), LAMINAR_OK, &err);
  int64_t got;
  CHECK(drain(sub, check_ts_row, NULL, &got) == 0);
  EXPECT(got == 3);
  laminar_subscription_close(sub);
  laminar_source_close(src);
  CHECK_CODE(laminar_close(db), LAMINAR_OK, NULL);
  return 0;
}

/* ---- DECIMAL ----------------------------------------------------------------------- */

__extension__ typedef __int128 i128;

/* What dec_fn returns for each row: x * mul + add (unscaled), as decimal128
 * of precision/scale (the declared ones unless a test misbehaves). */
typedef struct dec_state {
  const char* want_format; /* the argument's format the call must get */
  i128 mul, add;
  int precision, scale;
  i128 force; /* non-zero: every value is this (past the precision) */
  int64_t calls;
} dec_state;

static int dec_fn(void* user, const struct ArrowArray* args,
                  const struct ArrowSchema* args_schema, struct ArrowArray* out,
                  struct ArrowSchema* out_schema, char* error, size_t cap) {
  dec_state* st = user;
  st->calls++;
  if (strcmp(args_schema->children[0]->format, st->want_format) != 0) {
    snprintf(error, cap, "argument format '%s', want '%s'",
             args_schema->children[0]->format, st->want_format);
    return 1;
  }
  const struct ArrowArray* a = args->children[0];
  const uint8_t* v = (const uint8_t*)a->buffers[1] + 16 * a->offset;
  const uint8_t* valid = a->buffers[0];
  ArrowSchemaInit(out_schema);
  if (ArrowSchemaSetTypeDecimal(out_schema, NANOARROW_TYPE_DECIMAL128, st->precision,
                                st->scale) != NANOARROW_OK)
    return 1;
  if (ArrowArrayInitFromSchema(out, out_schema, NULL) != NANOARROW_OK) return 1;
  if (ArrowArrayStartAppending(out) != NANOARROW_OK) return 1;
  for (int64_t r = 0; r < a->length; r++) {
    if (valid != NULL && !ArrowBitGet(valid, a->offset + r)) {
      if (ArrowArrayAppendNull(out, 1) != NANOARROW_OK) return 1;
      continue;
    }
    i128 x;
    memcpy(&x, v + 16 * r, 16);
    i128 y = st->force != 0 ? st->force : x * st->mul + st->add;
    struct ArrowDecimal d;
    ArrowDecimalInit(&d, 128, st->precision, st->scale);
    ArrowDecimalSetBytes(&d, (const uint8_t*)&y);
    if (ArrowArrayAppendDecimal(out, &d) != NANOARROW_OK) return 1;
  }
  return ArrowArrayFinishBuildingDefault(out, NULL) != NANOARROW_OK;
}

static i128 dec_at(const struct ArrowArrayView* v, int64_t r) {
  struct ArrowDecimal d;
  ArrowDecimalInit(&d, 128, v->layout.element_size_bits[1] == 128 ? 38 : 18, 0);
  ArrowArrayViewGetDecimalUnsafe(v, r, &d);
  i128 x;
  memcpy(&x, d.words, 16);
  return x;
}

/* a = widen(volume) = volume.00 -> volume.005 (DECIMAL(20,3), wide);
 * b = narrow(a) = -a (DECIMAL(12,3)); c = widen(price) rounded to cents,
 * NULL where price is. */
static int check_dec_row(void* arg, const result_view* rv, int64_t r) {
  int64_t* nulls = arg;
  const struct ArrowArrayView* vol = col(rv, "volume");
  const struct ArrowArrayView* price = col(rv, "price");
  const struct ArrowArrayView* a = col(rv, "a");
  const struct ArrowArrayView* b = col(rv, "b");
  const struct ArrowArrayView* c = col(rv, "c");
  CHECK(a->storage_type == NANOARROW_TYPE_DECIMAL128 &&
        b->storage_type == NANOARROW_TYPE_DECIMAL128);
  i128 want = (i128)ArrowArrayViewGetIntUnsafe(vol, r) * 1000 + 5;
  CHECK(dec_at(a, r) == want);
  CHECK(dec_at(b, r) == -want);
  CHECK(ArrowArrayViewIsNull(c, r) == ArrowArrayViewIsNull(price, r));
  if (ArrowArrayViewIsNull(c, r)) {
    (*nulls)++;
    return 0;
  }
  double p = ArrowArrayViewGetDoubleUnsafe(price, r);
  CHECK(dec_at(c, r) == (i128)llround(p * 100) * 10 + 5);
  return 0;
}

/* DECIMAL arguments and results of scalar functions: decimal128 "d:p,s" both
 * ways, narrow (p <= 18) and wide values, a BIGINT and a DECIMAL of another
 * scale cast to the parameter's type, NULLs not passed; a result of another
 * scale or past the precision is LDB-3011 naming the function. */
static int test_decimal_types(void) {
  laminar_db* db;
  laminar_source* src;
  laminar_error err;
  CHECK(open_db(&db, &src) == 0);
  dec_state widen = {"d:10,2", 10, 5, 20, 3, 0, 0};
  dec_state narrow = {"d:20,3", -1, 0, 12, 3, 0, 0};
  const char* d10[] = {"d:10,2"};
  const char* d20[] = {"d:20,3"};
  CHECK_CODE(laminar_function_register(db, "widen", d10, 1, "d:20,3", dec_fn, &widen,
                                       NULL, 0, &err),
             LAMINAR_OK, &err);
  CHECK_CODE(laminar_function_register(db, "narrow", d20, 1, "d:12,3", dec_fn, &narrow,
                                       NULL, 0, &err),
             LAMINAR_OK, &err);
  CHECK_CODE(
      laminar_execute(db,
                      "CREATE STREAM s AS SELECT volume, price, widen(volume) AS a, "
                      "narrow(widen(volume)) AS b, "
                      "widen(CAST(price AS DECIMAL(12,4))) AS c FROM trades",
                      &err),
      LAMINAR_OK, &err);
  laminar_subscription* sub;
  CHECK_CODE(laminar_subscribe(db, "s", &sub, &err), LAMINAR_OK, &err);
  uint64_t rng = lm_test_seed() | 1;
  trade_row rows[300];
  random_rows(&rng, rows, 300, 0);
  CHECK(push_rows(src, rows, 300) == 0);
  CHECK_CODE(laminar_run_until_idle(db, &err), LAMINAR_OK, &err);
  int64_t got, nulls = 0;
  CHECK(drain(sub, check_dec_row, &nulls, &got) == 0);
  EXPECT(got == 300 && nulls > 0);
  /* A result of another scale, then one past the declared precision. */
  narrow.scale = 2;
  CHECK(push_rows(src, rows, 10) == 0);
  CHECK_CODE(laminar_run_until_idle(db, &err), LAMINAR_ERR_FUNCTION_RESULT, &err);
  EXPECT(strstr(err.message, "function 'narrow' returned an invalid result") != NULL &&
         strstr(err.message, "'d:12,3'") != NULL);
  laminar_subscription_close(sub);
  laminar_source_close(src);
  CHECK_CODE(laminar_close(db), LAMINAR_OK, NULL);

  CHECK(open_db(&db, &src) == 0);
  narrow.scale = 3;
  narrow.force = (i128)1000000000000000; /* 16 digits, DECIMAL(12,3) holds 12 */
  CHECK_CODE(laminar_function_register(db, "widen", d10, 1, "d:20,3", dec_fn, &widen,
                                       NULL, 0, &err),
             LAMINAR_OK, &err);
  CHECK_CODE(laminar_function_register(db, "narrow", d20, 1, "d:12,3", dec_fn, &narrow,
                                       NULL, 0, &err),
             LAMINAR_OK, &err);
  CHECK_CODE(
      laminar_execute(
          db, "CREATE STREAM s AS SELECT narrow(widen(volume)) AS b FROM trades", &err),
      LAMINAR_OK, &err);
  CHECK(push_rows(src, rows, 10) == 0);
  CHECK_CODE(laminar_run_until_idle(db, &err), LAMINAR_ERR_FUNCTION_RESULT, &err);
  EXPECT(strstr(err.message, "function 'narrow' returned an invalid array") != NULL &&
         strstr(err.message, "more than 12 digits") != NULL);
  /* A DOUBLE column is not a DECIMAL argument (a number literal is). */
  CHECK_CODE(laminar_execute(
                 db, "CREATE STREAM t AS SELECT widen(price) AS x FROM trades", &err),
             LAMINAR_ERR_TYPE_MISMATCH, &err);
  CHECK_CODE(
      laminar_execute(db, "CREATE STREAM t AS SELECT widen(1.5) AS x FROM trades", &err),
      LAMINAR_OK, &err);
  laminar_source_close(src);
  CHECK_CODE(laminar_close(db), LAMINAR_OK, NULL);
  return 0;
}

/* ---- failures at run time ------------------------------------------------------------- */

static int sum_total(void* arg, const result_view* rv, int64_t r) {
  const struct ArrowArrayView* t = col(rv, "total");
  *(double*)arg += ArrowArrayViewGetDoubleUnsafe(t, r);
  return 0;
}

/* Every bad mode fails its batch with its code; the batches around it are
 * applied (map stream: rows delivered; window stream: in the sum). */
static int test_runtime_failures(void) {
  static const struct {
    mode mode;
    laminar_code code;
    const char* text;
  } cases[] = {
      {MODE_FAIL, LAMINAR_ERR_FUNCTION_FAILED, "function 'scale' failed: scale refuses"},
      {MODE_RESULT_REFUSED, LAMINAR_ERR_FUNCTION_RESULT,
       "function 'scale' returned an invalid result: value 3 does not fit"},
      {MODE_NOT_FILLED, LAMINAR_ERR_FUNCTION_RESULT, "released"},
      {MODE_WRONG_FORMAT, LAMINAR_ERR_FUNCTION_RESULT, "format 'l'"},
      {MODE_WRONG_LENGTH, LAMINAR_ERR_FUNCTION_RESULT, "returned 4 rows for 3"},
      {MODE_BAD_NULLCOUNT, LAMINAR_ERR_FUNCTION_RESULT, "invalid array"},
  };
  trade_row rows[3] = {{"a", 1.0, false, 1, false, 10},
                       {"b", 2.0, false, 2, false, 20},
                       {"c", 4.0, false, 3, false, 30}};
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    for (int windowed = 0; windowed < 2; windowed++) {
      laminar_db* db;
      laminar_source* src;
      laminar_error err;
      CHECK(open_db(&db, &src) == 0);
      fn_state st = {.factor = 1.0};
      CHECK_CODE(reg_scale(db, &st, 0, &err), LAMINAR_OK, &err);
      CHECK_CODE(
          laminar_execute(db,
                          windowed ? "CREATE STREAM q AS SELECT SUM(scale(price)) AS "
                                     "total FROM trades GROUP BY tumble(ts, "
                                     "INTERVAL '1' SECOND) EMIT ON WINDOW CLOSE"
                                   : "CREATE STREAM q AS SELECT scale(price) AS "
                                     "total FROM trades",
                          &err),
          LAMINAR_OK, &err);
      laminar_subscription* sub;
      CHECK_CODE(laminar_subscribe(db, "q", &sub, &err), LAMINAR_OK, &err);
      CHECK(push_rows(src, rows, 3) == 0); /* applied: 7 */
      CHECK_CODE(laminar_run_until_idle(db, &err), LAMINAR_OK, &err);
      st.mode = cases[i].mode;
      CHECK(push_rows(src, rows, 3) == 0); /* fails: not applied */
      memset(&err, 0, sizeof err);
      CHECK_CODE(laminar_run_until_idle(db, &err), cases[i].code, &err);
      EXPECT(strstr(err.message, cases[i].text) != NULL);
      EXPECT(strstr(err.message, "stream 'q'") != NULL);
      EXPECT(strcmp(err.object, "q") == 0);
      char prefix[16];
      snprintf(prefix, sizeof prefix, "LDB-%d: ", (int)cases[i].code);
      EXPECT(strncmp(err.message, prefix, strlen(prefix)) == 0);
      st.mode = MODE_OK;
      CHECK(push_rows(src, rows, 3) == 0); /* applied again: 7 */
      CHECK_CODE(laminar_source_push_watermark(src, INT64_MAX, &err), LAMINAR_OK, &err);
      CHECK_CODE(laminar_run_until_idle(db, &err), LAMINAR_OK, &err);
      double total = 0;
      int64_t got;
      CHECK(drain(sub, sum_total, &total, &got) == 0);
      EXPECT(total == 14.0);
      EXPECT(got == (windowed ? 1 : 6));
      laminar_subscription_close(sub);
      laminar_source_close(src);
      CHECK_CODE(laminar_close(db), LAMINAR_OK, NULL);
    }
  }
  /* Invalid UTF-8 in a string result. */
  laminar_db* db;
  laminar_source* src;
  laminar_error err;
  CHECK(open_db(&db, &src) == 0);
  fn_state st = {.mode = MODE_BAD_UTF8};
  const char* ul[] = {"u", "l"};
  CHECK_CODE(laminar_function_register(db, "tag", ul, 2, "u", tag_fn, &st, NULL, 0, &err),
             LAMINAR_OK, &err);
  CHECK_CODE(laminar_execute(
                 db, "CREATE STREAM q AS SELECT tag(symbol, volume) FROM trades", &err),
             LAMINAR_OK, &err);
  CHECK(push_rows(src, rows, 3) == 0);
  CHECK_CODE(laminar_run_until_idle(db, &err), LAMINAR_ERR_FUNCTION_RESULT, &err);
  EXPECT(strstr(err.message, "UTF-8") != NULL && strstr(err.message, "'tag'") != NULL);
  laminar_source_close(src);
  CHECK_CODE(laminar_close(db), LAMINAR_OK, NULL);
  return 0;
}

/* On the reactor: the failure is laminar_stop()'s error; later batches flow. */
static int test_reactor_failure(void) {
  laminar_db* db;
  laminar_source* src;
  laminar_error err;
  CHECK(open_db(&db, &src) == 0);
  fn_state st = {.factor = 1.0, .mode = MODE_FAIL};
  CHECK_CODE(reg_scale(db, &st, 0, &err), LAMINAR_OK, &err);
  CHECK_CODE(laminar_execute(
                 db, "CREATE STREAM q AS SELECT scale(price) AS total FROM trades", &err),
             LAMINAR_OK, &err);
  laminar_subscription* sub;
  CHECK_CODE(laminar_subscribe(db, "q", &sub, &err), LAMINAR_OK, &err);
  trade_row rows[2] = {{"a", 1.0, false, 1, false, 10}, {"b", 2.0, false, 2, false, 20}};
  CHECK_CODE(laminar_start(db, &err), LAMINAR_OK, &err);
  CHECK(push_rows(src, rows, 2) == 0);
  CHECK_CODE(laminar_stop(db, &err), LAMINAR_ERR_FUNCTION_FAILED, &err);
  EXPECT(strstr(err.message, "function 'scale' failed") != NULL);
  st.mode = MODE_OK;
  CHECK_CODE(laminar_start(db, &err), LAMINAR_OK, &err);
  CHECK(push_rows(src, rows, 2) == 0);
  CHECK_CODE(laminar_stop(db, &err), LAMINAR_OK, &err);
  double total = 0;
  int64_t got;
  CHECK(drain(sub, sum_total, &total, &got) == 0);
  EXPECT(got == 2 && total == 3.0);
  laminar_subscription_close(sub);
  laminar_source_close(src);
  CHECK_CODE(laminar_close(db), LAMINAR_OK, NULL);
  return 0;
}

/* ---- registration and lifecycle ---------------------------------------------------- */

static int test_registration_errors(void) {
  laminar_db* db;
  laminar_error err;
  CHECK(open_db(&db, NULL) == 0);
  fn_state st = {.factor = 1.0};
  const char* g[] = {"g"};
  const char* bad[] = {"d:39,2"}; /* past DECIMAL's 38 digits */
  CHECK_CODE(laminar_function_register(db, "upper", g, 1, "g", scale_fn, &st,
                                       destroy_state, 0, &err),
             LAMINAR_ERR_SQL_DUPLICATE_OBJECT, &err);
  CHECK_CODE(laminar_function_register(db, "sum", g, 1, "g", scale_fn, &st, destroy_state,
                                       0, &err),
             LAMINAR_ERR_SQL_DUPLICATE_OBJECT, &err);
  CHECK_CODE(laminar_function_register(db, "f", bad, 1, "g", scale_fn, &st, destroy_state,
                                       0, &err),
             LAMINAR_ERR_UNKNOWN_TYPE, &err);
  EXPECT(strstr(err.message, "argument 1") != NULL);
  CHECK_CODE(laminar_function_register(db, "f", g, 1, "x", scale_fn, &st, destroy_state,
                                       0, &err),
             LAMINAR_ERR_UNKNOWN_TYPE, &err);
  /* decimal128 only, scale within precision, the whole text a format. */
  static const char* const bad_decimals[] = {"d:10,2,64", "d:10,11", "d:0,0",
                                             "d:10",      "d:10,2x", "d:-1,0"};
  for (size_t i = 0; i < sizeof bad_decimals / sizeof *bad_decimals; i++) {
    CHECK_CODE(laminar_function_register(db, "f", g, 1, bad_decimals[i], scale_fn, &st,
                                         destroy_state, 0, &err),
               LAMINAR_ERR_UNKNOWN_TYPE, &err);
    EXPECT(strstr(err.message, "d:p,s") != NULL);
  }
  CHECK_CODE(laminar_function_register(db, "no space", g, 1, "g", scale_fn, &st,
                                       destroy_state, 0, &err),
             LAMINAR_ERR_MISUSE, &err);
  CHECK_CODE(
      laminar_function_register(db, "f", g, 1, "g", NULL, &st, destroy_state, 0, &err),
      LAMINAR_ERR_MISUSE, &err);
  CHECK_CODE(laminar_function_register(db, "f", g, 65, "g", scale_fn, &st, destroy_state,
                                       0, &err),
             LAMINAR_ERR_MISUSE, &err);
  CHECK_CODE(laminar_function_register(db, "f", g, 1, "g", scale_fn, &st, destroy_state,
                                       64, &err),
             LAMINAR_ERR_MISUSE, &err);
  CHECK_CODE(laminar_function_register(NULL, "f", g, 1, "g", scale_fn, &st, destroy_state,
                                       0, &err),
             LAMINAR_ERR_MISUSE, &err);
  EXPECT(st.destroyed == 0); /* failed registrations leave `user` to the caller */

  /* Binding: unknown name, argument count, argument type. */
  CHECK_CODE(
      laminar_execute(db, "CREATE STREAM s AS SELECT nofn(price) FROM trades", &err),
      LAMINAR_ERR_SQL_UNKNOWN_FUNCTION, &err);
  EXPECT(strstr(err.message, "'nofn'") != NULL && err.line == 1 && err.column == 27);
  CHECK_CODE(reg_scale(db, &st, 0, &err), LAMINAR_OK, &err);
  CHECK_CODE(
      laminar_execute(db, "CREATE STREAM s AS SELECT scale(price, 1) FROM trades", &err),
      LAMINAR_ERR_SQL_FUNCTION_ARGS, &err);
  EXPECT(strstr(err.message, "scale(DOUBLE) -> DOUBLE") != NULL);
  CHECK_CODE(
      laminar_execute(db, "CREATE STREAM s AS SELECT scale(symbol) FROM trades", &err),
      LAMINAR_ERR_TYPE_MISMATCH, &err);
  CHECK_CODE(laminar_function_drop(db, "nofn", &err), LAMINAR_ERR_SQL_UNKNOWN_FUNCTION,
             &err);
  CHECK_CODE(laminar_function_drop(db, NULL, &err), LAMINAR_ERR_MISUSE, &err);
  CHECK_CODE(laminar_close(db), LAMINAR_OK, NULL);
  EXPECT(st.destroyed == 1);
  return 0;
}

static int test_replace_and_drop(void) {
  laminar_db* db;
  laminar_error err;
  CHECK(open_db(&db, NULL) == 0);
  fn_state a = {.factor = 1.0}, b = {.factor = 2.0}, c = {.factor = 3.0};
  CHECK_CODE(reg_scale(db, &a, 0, &err), LAMINAR_OK, &err);
  CHECK_CODE(reg_scale(db, &b, 0, &err), LAMINAR_OK, &err); /* unused: replaced */
  EXPECT(a.destroyed == 1 && b.destroyed == 0);
  CHECK_CODE(
      laminar_execute(db,
                      "CREATE MATERIALIZED VIEW v AS SELECT symbol, scale(price) AS "
                      "y FROM trades",
                      &err),
      LAMINAR_OK, &err);
  CHECK_CODE(reg_scale(db, &c, 0, &err), LAMINAR_ERR_SQL_DEPENDENCY, &err);
  EXPECT(strstr(err.message, "view 'v'") != NULL && c.destroyed == 0);
  CHECK_CODE(laminar_function_drop(db, "SCALE", &err), LAMINAR_ERR_SQL_DEPENDENCY, &err);
  EXPECT(strstr(err.message, "'v'") != NULL);
  CHECK_CODE(laminar_execute(db, "DROP FUNCTION scale", &err), LAMINAR_ERR_SQL_DEPENDENCY,
             &err);
  EXPECT(err.line == 1 && err.column == 15);

  /* SHOW FUNCTIONS: one row per function, with the stream that uses it. */
  struct ArrowArrayStream st;
  result_view rv;
  CHECK_CODE(laminar_query(db, "SHOW FUNCTIONS", &st, &err), LAMINAR_OK, &err);
  CHECK(st.get_schema(&st, &rv.schema) == 0 && st.get_next(&st, &rv.array) == 0);
  CHECK(result_view_init(&rv) == 0);
  CHECK(rv.array.length == 1);
  static const char* const want[] = {"scale", "DOUBLE", "DOUBLE", "volatile", "v"};
  for (int c = 0; c < 5; c++) {
    struct ArrowStringView sv = ArrowArrayViewGetStringUnsafe(rv.view.children[c], 0);
    EXPECT(sv.size_bytes == (int64_t)strlen(want[c]) &&
           memcmp(sv.data, want[c], strlen(want[c])) == 0);
  }
  result_view_free(&rv);
  st.release(&st);

  /* laminar_query over the view calls functions too. */
  laminar_source* src;
  CHECK_CODE(laminar_source_open(db, "trades", &src, &err), LAMINAR_OK, &err);
  trade_row rows[2] = {{"a", 1.5, false, 1, false, 10}, {"b", 2.0, false, 2, false, 20}};
  CHECK(push_rows(src, rows, 2) == 0);
  CHECK_CODE(laminar_run_until_idle(db, &err), LAMINAR_OK, &err);
  CHECK_CODE(
      laminar_query(db, "SELECT symbol, scale(y) AS z FROM v ORDER BY symbol", &st, &err),
      LAMINAR_OK, &err);
  CHECK(st.get_schema(&st, &rv.schema) == 0 && st.get_next(&st, &rv.array) == 0);
  CHECK(result_view_init(&rv) == 0);
  EXPECT(rv.array.length == 2);
  EXPECT(ArrowArrayViewGetDoubleUnsafe(rv.view.children[1], 0) == 1.5 * 2 * 2);
  EXPECT(ArrowArrayViewGetDoubleUnsafe(rv.view.children[1], 1) == 2.0 * 2 * 2);
  result_view_free(&rv);
  st.release(&st);
  b.mode = MODE_FAIL;
  CHECK_CODE(laminar_query(db, "SELECT scale(y) FROM v", &st, &err),
             LAMINAR_ERR_FUNCTION_FAILED, &err);
  EXPECT(strstr(err.message, "function 'scale' failed") != NULL);
  laminar_source_close(src);

  CHECK_CODE(laminar_execute(db, "DROP MATERIALIZED VIEW v", &err), LAMINAR_OK, &err);
  EXPECT(b.destroyed == 0);
  CHECK_CODE(
      laminar_execute(db, "DROP FUNCTION IF EXISTS nofn; DROP FUNCTION scale", &err),
      LAMINAR_OK, &err);
  EXPECT(b.destroyed == 1);
  CHECK_CODE(laminar_execute(db, "DROP FUNCTION scale", &err),
             LAMINAR_ERR_SQL_UNKNOWN_FUNCTION, &err);
  CHECK_CODE(
      laminar_execute(db, "CREATE STREAM s AS SELECT scale(price) FROM trades", &err),
      LAMINAR_ERR_SQL_UNKNOWN_FUNCTION, &err);
  CHECK_CODE(laminar_close(db), LAMINAR_OK, NULL);
  EXPECT(a.destroyed == 1 && b.destroyed == 1 && c.destroyed == 0);
  return 0;
}

/* A durable database whose stream calls a function: reopened without it,
 * laminar_open fails naming the function; with it in the config, the stored
 * stream binds, the WAL replay runs through it, and the stream goes on. */
static int test_durable_reopen_with_config_function(void) {
  char dir[128];
  CHECK(lm_test_mkdtemp(dir, sizeof dir, "lm_test_udf_") == 0);
  laminar_config* cfg;
  laminar_error err;
  CHECK(durable_config(dir, &cfg) == 0);
  laminar_db* db;
  CHECK_CODE(laminar_open(cfg, &db, &err), LAMINAR_OK, &err);
  fn_state st = {.factor = 2.0};
  CHECK_CODE(laminar_execute(db, k_source, &err), LAMINAR_OK, &err);
  CHECK_CODE(reg_scale(db, &st, 0, &err), LAMINAR_OK, &err);
  CHECK_CODE(
      laminar_execute(db,
                      "CREATE MATERIALIZED VIEW v AS SELECT symbol, scale(price) AS "
                      "y FROM trades",
                      &err),
      LAMINAR_OK, &err);
  laminar_source* src;
  CHECK_CODE(laminar_source_open(db, "trades", &src, &err), LAMINAR_OK, &err);
  trade_row rows[2] = {{"a", 1.5, false, 1, false, 10}, {"b", 2.0, false, 2, false, 20}};
  CHECK(push_rows(src, rows, 1) == 0);
  CHECK_CODE(laminar_run_until_idle(db, &err), LAMINAR_OK, &err);
  CHECK_CODE(laminar_checkpoint(db, &err), LAMINAR_OK, &err);
  CHECK(push_rows(src, rows + 1, 1) == 0); /* in the WAL only */
  laminar_source_close(src);
  CHECK_CODE(laminar_close(db), LAMINAR_OK, NULL);
  EXPECT(st.destroyed == 1);

  memset(&err, 0, sizeof err);
  CHECK_CODE(laminar_open(cfg, &db, &err), LAMINAR_ERR_RECOVERY, &err);
  EXPECT(strstr(err.message,
                "catalog.sql does not run: LDB-1101: unknown function "
                "'scale'") != NULL);

  fn_state again = {.factor = 2.0};
  const char* g[] = {"g"};
  CHECK_CODE(laminar_config_function_register(cfg, "scale", g, 1, "g", scale_fn, &again,
                                              destroy_state, 0, &err),
             LAMINAR_OK, &err);
  CHECK_CODE(laminar_config_function_register(NULL, "scale", g, 1, "g", scale_fn, &again,
                                              destroy_state, 0, &err),
             LAMINAR_ERR_MISUSE, &err);
  CHECK_CODE(laminar_open(cfg, &db, &err), LAMINAR_OK, &err);
  EXPECT(again.rows == 1); /* the WAL's row went through it */
  CHECK_CODE(laminar_source_open(db, "trades", &src, &err), LAMINAR_OK, &err);
  trade_row more = {"c", 4.0, false, 3, false, 30};
  CHECK(push_rows(src, &more, 1) == 0);
  CHECK_CODE(laminar_run_until_idle(db, &err), LAMINAR_OK, &err);
  struct ArrowArrayStream out;
  CHECK_CODE(laminar_query(db, "SELECT y FROM v ORDER BY y", &out, &err), LAMINAR_OK,
             &err);
  result_view rv;
  CHECK(out.get_schema(&out, &rv.schema) == 0 && out.get_next(&out, &rv.array) == 0);
  CHECK(result_view_init(&rv) == 0);
  EXPECT(rv.array.length == 3);
  for (int64_t r = 0; r < rv.array.length && r < 3; r++) {
    static const double want[3] = {3.0, 4.0, 8.0};
    EXPECT(ArrowArrayViewGetDoubleUnsafe(rv.view.children[0], r) == want[r]);
  }
  result_view_free(&rv);
  out.release(&out);
  laminar_source_close(src);
  CHECK_CODE(laminar_close(db), LAMINAR_OK, NULL);
  EXPECT(again.destroyed == 0); /* the config still holds it */

  /* A function that fails on the WAL's rows at replay: those batches are not
   * applied (as a live failure leaves them), and the database opens. */
  fn_state failing = {.factor = 2.0, .mode = MODE_FAIL};
  CHECK_CODE(laminar_config_function_register(cfg, "scale", g, 1, "g", scale_fn, &failing,
                                              destroy_state, 0, &err),
             LAMINAR_OK, &err);
  EXPECT(again.destroyed == 1); /* replaced in the config, no database holds it */
  CHECK_CODE(laminar_open(cfg, &db, &err), LAMINAR_OK, &err);
  EXPECT(failing.calls > 0);
  CHECK_CODE(laminar_query(db, "SELECT y FROM v", &out, &err), LAMINAR_OK, &err);
  out.release(&out);
  CHECK_CODE(laminar_close(db), LAMINAR_OK, NULL);
  laminar_config_destroy(cfg);
  EXPECT(failing.destroyed == 1);
  lm_test_rmtree(dir);
  return 0;
}

/* cores = 2, a keyed window whose aggregate argument calls the function: the
 * reactors evaluate it concurrently, and a function not declared thread-safe
 * is never entered twice at once; the sums are right. */
typedef struct guarded {
  atomic_int inside;
  atomic_int overlaps;
  atomic_llong rows;
} guarded;

static int guarded_fn(void* user, const struct ArrowArray* args,
                      const struct ArrowSchema* args_schema, struct ArrowArray* out,
                      struct ArrowSchema* out_schema, char* error, size_t cap) {
  (void)args_schema;
  (void)error;
  (void)cap;
  guarded* g = user;
  if (atomic_fetch_add(&g->inside, 1) != 0) atomic_fetch_add(&g->overlaps, 1);
  atomic_fetch_add(&g->rows, args->length);
  const struct ArrowArray* x = args->children[0];
  const double* xs = x->buffers[1];
  double* vals = malloc(sizeof(double) * (size_t)(x->length + 1));
  int rc = vals == NULL;
  for (int64_t r = 0; rc == 0 && r < x->length; r++) {
    vals[r] = xs[x->offset + r] * 3.0;
    for (volatile int spin = 0; spin < 200; spin++) {
    }
  }
  if (rc == 0)
    rc = make_array(NANOARROW_TYPE_DOUBLE, x->length, vals, NULL, out, out_schema);
  free(vals);
  atomic_fetch_sub(&g->inside, 1);
  return rc;
}

static int test_cores_serialize_calls(void) {
  laminar_config* cfg;
  laminar_error err;
  CHECK_CODE(laminar_config_create(&cfg), LAMINAR_OK, NULL);
  CHECK_CODE(laminar_config_set(cfg, "cores", "2", &err), LAMINAR_OK, &err);
  guarded g;
  atomic_init(&g.inside, 0);
  atomic_init(&g.overlaps, 0);
  atomic_init(&g.rows, 0);
  const char* dbl[] = {"g"};
  CHECK_CODE(laminar_config_function_register(cfg, "triple", dbl, 1, "g", guarded_fn, &g,
                                              NULL, 0, &err),
             LAMINAR_OK, &err);
  laminar_db* db;
  CHECK_CODE(laminar_open(cfg, &db, &err), LAMINAR_OK, &err);
  laminar_config_destroy(cfg);
  CHECK_CODE(laminar_execute(db, k_source, &err), LAMINAR_OK, &err);
  CHECK_CODE(
      laminar_execute(db,
                      "CREATE STREAM w AS SELECT symbol, SUM(triple(price)) AS total "
                      "FROM trades GROUP BY symbol, tumble(ts, INTERVAL '1' SECOND) "
                      "EMIT ON WINDOW CLOSE",
                      &err),
      LAMINAR_OK, &err);
  laminar_subscription* sub;
  CHECK_CODE(laminar_subscribe(db, "w", &sub, &err), LAMINAR_OK, &err);
  laminar_source* src;
  CHECK_CODE(laminar_source_open(db, "trades", &src, &err), LAMINAR_OK, &err);
  CHECK_CODE(laminar_start(db, &err), LAMINAR_OK, &err);
  enum { BATCHES = 40, ROWS = 256 };
  static const char* const syms[] = {"a", "b", "c", "d", "e", "f", "g", "h"};
  static trade_row rows[ROWS];
  double want = 0;
  for (int b = 0; b < BATCHES; b++) {
    for (int r = 0; r < ROWS; r++) {
      rows[r] =
          (trade_row){syms[(r * 7 + b) % 8], (double)(r % 13), false, 1, false, b * 10};
      want += 3.0 * (double)(r % 13);
    }
    CHECK(push_rows(src, rows, ROWS) == 0);
  }
  CHECK_CODE(laminar_source_push_watermark(src, INT64_MAX, &err), LAMINAR_OK, &err);
  CHECK_CODE(laminar_stop(db, &err), LAMINAR_OK, &err);
  double total = 0;
  int64_t got;
  CHECK(drain(sub, sum_total, &total, &got) == 0);
  EXPECT(got == 8);
  EXPECT(total == want);
  EXPECT(atomic_load(&g.overlaps) == 0);
  EXPECT(atomic_load(&g.rows) >= (long long)BATCHES * ROWS);
  laminar_subscription_close(sub);
  laminar_source_close(src);
  CHECK_CODE(laminar_close(db), LAMINAR_OK, NULL);
  return 0;
}

int main(int argc, char** argv) {
  static const lm_test_case cases[] = {
      {"select_where_random", test_select_where_random},
      {"null_handling_and_constants", test_null_handling_and_constants},
      {"group_by_aggregate_having", test_group_by_aggregate_having},
      {"timestamp_types", test_timestamp_types},
      {"decimal_types", test_decimal_types},
      {"runtime_failures", test_runtime_failures},
      {"reactor_failure", test_reactor_failure},
      {"registration_errors", test_registration_errors},
      {"replace_and_drop", test_replace_and_drop},
      {"durable_reopen_with_config_function", test_durable_reopen_with_config_function},
      {"cores_serialize_calls", test_cores_serialize_calls},
      {NULL, NULL}};
  return lm_test_main(argc, argv, cases);
}
