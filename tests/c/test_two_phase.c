/*
 * test_two_phase.c -- laminar_stream_two_phase through laminar.h: the rows it
 * reports; the partial SQL run in several databases over a split of the
 * input, in any order, and the final SQL over their rows give exactly the
 * stream's output (rendered and sorted); the expression printer round-trips
 * every kind of expression (CASE, IN, BETWEEN, LIKE ... ESCAPE, CAST,
 * IS NULL, NOT, quotes in strings and names, negative numbers, ||); streams
 * that do not decompose; errors. User-defined aggregates (a plain-bytes
 * state and a heap state with serialize) split too: the partial emits their
 * serialized states, the final merges them, the same rows as the stream's.
 */
#include "lm_test.h"
#include "views_util.h"

#include <stdlib.h>

typedef struct two_phase {
  char partial[4096], partial_stream[128], partial_source[128];
  char final_sql[4096], final_stream[128], final_source[128];
  char keys[256]; /* "__k0,__k1" */
} two_phase;

static void copy_cell(struct ArrowArrayView* col, int64_t r, char* out, size_t cap) {
  struct ArrowStringView sv = ArrowArrayViewGetStringUnsafe(col, r);
  snprintf(out, cap, "%.*s", (int)sv.size_bytes, sv.data);
}

static laminar_code get_two_phase(laminar_db* db, const char* name, two_phase* tp,
                                  laminar_error* err) {
  memset(tp, 0, sizeof *tp);
  struct ArrowArrayStream st;
  laminar_code rc = laminar_stream_two_phase(db, name, &st, err);
  if (rc != LAMINAR_OK) return rc;
  result_view rv;
  if (one_batch_view(&st, &rv) != 0) rc = LAMINAR_ERR_INTERNAL;
  for (int64_t r = 0; rc == LAMINAR_OK && r < rv.array.length; r++) {
    char role[64], nm[128];
    copy_cell(rv.view.children[0], r, role, sizeof role);
    copy_cell(rv.view.children[1], r, nm, sizeof nm);
    if (strcmp(role, "partial") == 0) {
      snprintf(tp->partial_stream, sizeof tp->partial_stream, "%s", nm);
      copy_cell(rv.view.children[2], r, tp->partial, sizeof tp->partial);
    } else if (strcmp(role, "final") == 0) {
      snprintf(tp->final_stream, sizeof tp->final_stream, "%s", nm);
      copy_cell(rv.view.children[2], r, tp->final_sql, sizeof tp->final_sql);
    } else if (strcmp(role, "partial_source") == 0) {
      snprintf(tp->partial_source, sizeof tp->partial_source, "%s", nm);
    } else if (strcmp(role, "final_source") == 0) {
      snprintf(tp->final_source, sizeof tp->final_source, "%s", nm);
    } else if (strcmp(role, "key") == 0) {
      if (tp->keys[0] != '\0')
        strncat(tp->keys, ",", sizeof tp->keys - strlen(tp->keys) - 1);
      strncat(tp->keys, nm, sizeof tp->keys - strlen(tp->keys) - 1);
    }
  }
  one_batch_free(&st, &rv);
  return rc;
}

/* Close `src`'s windows, run `db` and move every batch of `sub` into `into`
 * (NULL: render rows into text instead, rows joined by ';'). 0 on success. */
static int drain(laminar_db* db, laminar_source* src, laminar_subscription* sub,
                 laminar_source* into, char* text, size_t cap) {
  laminar_error err;
  if (laminar_source_watermark(src, INT64_MAX, &err) != LAMINAR_OK) return 1;
  if (laminar_run_until_idle(db, &err) != LAMINAR_OK) return 1;
  for (;;) {
    result_view rv;
    memset(&rv, 0, sizeof rv);
    if (laminar_subscription_next(sub, 0, &rv.array, &rv.schema, &err) != LAMINAR_OK)
      return 1;
    if (rv.array.release == NULL) break;
    int rc = 0;
    if (into != NULL) {
      if (laminar_source_push(into, &rv.array, &rv.schema, &err) != LAMINAR_OK) {
        fprintf(stderr, "push: %s\n", err.message);
        rc = 1;
      }
    } else if (result_view_init(&rv) != 0) {
      rc = 1;
    } else {
      for (int64_t r = 0; r < rv.array.length; r++) {
        if (text[0] != '\0') strncat(text, ";", cap - strlen(text) - 1);
        render_row(&rv.schema, &rv.view, r, text, cap);
      }
      ArrowArrayViewReset(&rv.view);
    }
    if (rv.array.release != NULL) rv.array.release(&rv.array);
    rv.schema.release(&rv.schema);
    if (rc != 0) return rc;
  }
  return 0;
}

static int cmp_str(const void* a, const void* b) {
  return strcmp(*(char* const*)a, *(char* const*)b);
}

/* Sort the ';'-separated rows of text in place. */
static void sort_rows(char* text) {
  char* rows[4096];
  size_t n = 0;
  for (char* tok = strtok(text, ";"); tok != NULL && n < 4096; tok = strtok(NULL, ";")) {
    rows[n++] = tok;
  }
  qsort(rows, n, sizeof rows[0], cmp_str);
  char* out = malloc(strlen(text) + 65536);
  if (out == NULL) return;
  out[0] = '\0';
  for (size_t i = 0; i < n; i++) {
    if (i) strcat(out, ";");
    strcat(out, rows[i]);
  }
  strcpy(text, out);
  free(out);
}

#define NROWS 400
#define PARTS 3

static void make_rows(trade_row* rows) {
  static const char* const syms[] = {"A", "B", "it's", "D\"q", NULL, "ab%c", "a_c"};
  uint64_t state = 42;
  for (int i = 0; i < NROWS; i++) {
    uint64_t r = lm_test_rand(&state);
    rows[i].symbol = syms[r % 7];
    rows[i].price = (double)((r >> 8) % 2000) / 4.0 - 100.0;
    rows[i].price_null = (r >> 20) % 11 == 0;
    rows[i].volume = (int64_t)((r >> 24) % 50) - 5;
    rows[i].volume_null = (r >> 32) % 13 == 0;
    rows[i].ts = i * 37 - 3000 + (int64_t)((r >> 40) % 90);
  }
}

/* Push rows [i for i in order if i % PARTS == part] as batches of 17. */
static int push_part(laminar_source* src, const trade_row* rows, int part, bool reverse) {
  trade_row mine[NROWS];
  int64_t n = 0;
  for (int k = 0; k < NROWS; k++) {
    int i = reverse ? NROWS - 1 - k : k;
    if (i % PARTS == part) mine[n++] = rows[i];
  }
  for (int64_t at = 0; at < n; at += 17) {
    struct ArrowArray a;
    struct ArrowSchema s;
    int64_t len = n - at < 17 ? n - at : 17;
    if (build_trades(mine + at, len, at % 2 == 0, &a, &s) != 0) return 1;
    laminar_error err;
    laminar_code rc = laminar_source_push(src, &a, &s, &err);
    if (a.release != NULL) a.release(&a);
    s.release(&s);
    if (rc != LAMINAR_OK) {
      fprintf(stderr, "push: %s\n", err.message);
      return 1;
    }
  }
  return 0;
}

static const char* const SOURCE =
    "CREATE SOURCE \"Trades\" (symbol VARCHAR, price DOUBLE, volume BIGINT, ts BIGINT, "
    "WATERMARK FOR ts AS ts - INTERVAL '100' MILLISECOND);";

/* What every database of a check registers before its SQL (NULL: nothing). */
typedef laminar_code (*reg_fn)(laminar_db* db, laminar_error* err);

/* Open a database with `reg`'s functions and declare `sql` in it. */
static int open_with(reg_fn reg, const char* sql, laminar_db** db) {
  laminar_error err;
  CHECK_CODE(laminar_open(NULL, db, &err), LAMINAR_OK, &err);
  if (reg != NULL) CHECK_CODE(reg(*db, &err), LAMINAR_OK, &err);
  CHECK_CODE(laminar_execute(*db, sql, &err), LAMINAR_OK, &err);
  return 0;
}

/* Run stream `name` of `streams` whole (input in order) and in two phases
 * (PARTS partial databases, the middle one fed in reverse); compare. */
static int check_split_with(const char* streams, const char* name, reg_fn reg,
                            two_phase* out_tp) {
  static trade_row rows[NROWS];
  make_rows(rows);
  char sql[8192];
  snprintf(sql, sizeof sql, "%s%s", SOURCE, streams);
  laminar_db* db;
  laminar_error err;
  CHECK(open_with(reg, sql, &db) == 0);
  two_phase tp;
  CHECK_CODE(get_two_phase(db, name, &tp, &err), LAMINAR_OK, &err);
  if (out_tp != NULL) *out_tp = tp;
  /* whole */
  static char want[65536], got[65536];
  want[0] = got[0] = '\0';
  laminar_source* src;
  laminar_subscription* sub;
  CHECK_CODE(laminar_source_open(db, "Trades", &src, &err), LAMINAR_OK, &err);
  CHECK_CODE(laminar_subscribe(db, name, &sub, &err), LAMINAR_OK, &err);
  for (int part = 0; part < 1; part++) {
    /* in time order, no row late: one part holding all rows */
    trade_row* sorted = rows;
    for (int64_t at = 0; at < NROWS; at += 50) {
      struct ArrowArray a;
      struct ArrowSchema s;
      CHECK(build_trades(sorted + at, 50, false, &a, &s) == 0);
      CHECK_CODE(laminar_source_push(src, &a, &s, &err), LAMINAR_OK, &err);
      s.release(&s);
    }
  }
  CHECK(drain(db, src, sub, NULL, want, sizeof want) == 0);
  int64_t late = -1;
  CHECK_CODE(laminar_stream_late_rows(db, name, &late, &err), LAMINAR_OK, &err);
  CHECK(late == 0);
  laminar_subscription_close(sub);
  laminar_source_close(src);
  /* two phases */
  laminar_db* fdb;
  laminar_source* fsrc;
  laminar_subscription* fsub;
  CHECK(open_with(reg, tp.final_sql, &fdb) == 0);
  CHECK_CODE(laminar_source_open(fdb, tp.final_source, &fsrc, &err), LAMINAR_OK, &err);
  CHECK_CODE(laminar_subscribe(fdb, tp.final_stream, &fsub, &err), LAMINAR_OK, &err);
  for (int part = 0; part < PARTS; part++) {
    laminar_db* pdb;
    CHECK(open_with(reg, tp.partial, &pdb) == 0);
    CHECK_CODE(laminar_source_open(pdb, tp.partial_source, &src, &err), LAMINAR_OK, &err);
    CHECK_CODE(laminar_subscribe(pdb, tp.partial_stream, &sub, &err), LAMINAR_OK, &err);
    CHECK(push_part(src, rows, part, part == 1) == 0);
    CHECK(drain(pdb, src, sub, fsrc, NULL, 0) == 0);
    CHECK_CODE(laminar_stream_late_rows(pdb, tp.partial_stream, &late, &err), LAMINAR_OK,
               &err);
    CHECK(late == 0);
    laminar_subscription_close(sub);
    laminar_source_close(src);
    laminar_close(pdb);
  }
  CHECK(drain(fdb, fsrc, fsub, NULL, got, sizeof got) == 0);
  laminar_subscription_close(fsub);
  laminar_source_close(fsrc);
  /* same columns */
  struct ArrowSchema a, b;
  CHECK_CODE(laminar_schema(db, name, &a, &err), LAMINAR_OK, &err);
  CHECK_CODE(laminar_schema(fdb, name, &b, &err), LAMINAR_OK, &err);
  CHECK(a.n_children == b.n_children);
  for (int64_t i = 0; i < a.n_children; i++) {
    EXPECT(strcmp(a.children[i]->name, b.children[i]->name) == 0);
    EXPECT(strcmp(a.children[i]->format, b.children[i]->format) == 0);
  }
  a.release(&a);
  b.release(&b);
  laminar_close(fdb);
  laminar_close(db);
  CHECK(want[0] != '\0');
  sort_rows(want);
  sort_rows(got);
  if (strcmp(want, got) != 0) {
    fprintf(stderr,
            "%s\n  whole     %.600s\n  two-phase %.600s\n  partial %s\n  final %s\n",
            name, want, got, tp.partial, tp.final_sql);
    return 1;
  }
  return 0;
}

static int check_split(const char* streams, const char* name) {
  return check_split_with(streams, name, NULL, NULL);
}

static int test_vwap(void) {
  return check_split(
      "CREATE STREAM vwap AS SELECT symbol, window_start, window_end, "
      "SUM(price * volume) / SUM(volume) AS vwap, COUNT(*) AS n, COUNT(price) AS np, "
      "AVG(volume) AS av, MIN(price) AS lo, MAX(symbol) AS hi FROM \"Trades\" "
      "GROUP BY symbol, tumble(ts, INTERVAL '1' SECOND) EMIT ON WINDOW CLOSE;",
      "vwap");
}

static int test_hop_having(void) {
  return check_split(
      "CREATE STREAM \"Hop\" AS SELECT window_end, symbol, SUM(volume) AS v, "
      "MAX(price) - MIN(price) AS spread FROM \"Trades\" WHERE volume > 0 "
      "GROUP BY symbol, hop(ts, INTERVAL '3' SECOND, INTERVAL '1' SECOND) "
      "HAVING COUNT(*) >= 2 AND SUM(volume) > 10;",
      "Hop");
}

/* Every expression kind in the key, the WHERE, the aggregates' arguments and
 * the select list, through an upstream projection. */
static int test_expression_printer(void) {
  return check_split(
      "CREATE STREAM pre AS SELECT symbol AS \"Sym\", price, volume, ts FROM \"Trades\" "
      "WHERE (price BETWEEN -50.5 AND 400 OR price IS NULL) AND NOT (volume IN (3, 4)) "
      "AND symbol NOT LIKE 'ab!%c' ESCAPE '!';"
      "CREATE STREAM x AS SELECT CASE WHEN \"Sym\" IS NULL THEN 'none' ELSE \"Sym\" || "
      "'''s' "
      "END AS label, window_start, "
      "SUM(CASE volume WHEN 1 THEN -1 WHEN -2 THEN 2 ELSE volume END) AS s, "
      "COUNT(CAST(price AS BIGINT)) AS c, MIN(-price) AS m, "
      "CAST(SUM(volume) AS DOUBLE) * -1.5e3 AS scaled, "
      "COUNT(*) AS \"N\"\"q\" FROM pre "
      "GROUP BY CASE WHEN \"Sym\" IS NULL THEN 'none' ELSE \"Sym\" || '''s' END, "
      "tumble(ts, 2000);",
      "x");
}

static int test_refused_and_errors(void) {
  laminar_db* db;
  laminar_error err;
  CHECK_CODE(laminar_open(NULL, &db, &err), LAMINAR_OK, &err);
  char sql[2048];
  snprintf(
      sql, sizeof sql,
      "%sCREATE STREAM d AS SELECT symbol, COUNT(DISTINCT price) AS n FROM \"Trades\" "
      "GROUP BY symbol, tumble(ts, INTERVAL '1' SECOND);"
      "CREATE STREAM l AS SELECT symbol, LAST_VALUE(price) AS p FROM \"Trades\" "
      "GROUP BY symbol, tumble(ts, INTERVAL '1' SECOND);"
      "CREATE STREAM s AS SELECT symbol, COUNT(*) AS n FROM \"Trades\" "
      "GROUP BY symbol, session(ts, INTERVAL '1' SECOND);"
      "CREATE STREAM p AS SELECT symbol, price FROM \"Trades\";"
      "CREATE MATERIALIZED VIEW v AS SELECT symbol, COUNT(*) AS n FROM \"Trades\" "
      "GROUP BY symbol, tumble(ts, INTERVAL '1' SECOND);",
      SOURCE);
  CHECK_CODE(laminar_execute(db, sql, &err), LAMINAR_OK, &err);
  static const char* const refused[][2] = {{"d", "DISTINCT"},
                                           {"l", "last_value() does not decompose"},
                                           {"s", "session windows"},
                                           {"p", "no GROUP BY window"}};
  struct ArrowArrayStream st;
  for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++) {
    CHECK_CODE(laminar_stream_two_phase(db, refused[i][0], &st, &err),
               LAMINAR_ERR_SQL_UNSUPPORTED, &err);
    EXPECT(strncmp(err.message, "LDB-1005", 8) == 0);
    EXPECT(strstr(err.message, refused[i][1]) != NULL);
    EXPECT(strcmp(err.object, refused[i][0]) == 0);
    EXPECT(st.release == NULL);
  }
  laminar_code rc = laminar_stream_two_phase(db, "v", &st, &err);
  EXPECT(rc == LAMINAR_ERR_SQL_UNSUPPORTED || rc == LAMINAR_ERR_SQL_UNKNOWN_OBJECT);
  CHECK_CODE(laminar_stream_two_phase(db, "nope", &st, &err),
             LAMINAR_ERR_SQL_UNKNOWN_OBJECT, &err);
  EXPECT(strcmp(err.object, "nope") == 0);
  CHECK_CODE(laminar_stream_two_phase(db, "Trades", &st, &err),
             LAMINAR_ERR_SQL_UNKNOWN_OBJECT, &err);
  CHECK_CODE(laminar_stream_two_phase(db, NULL, &st, &err), LAMINAR_ERR_MISUSE, &err);
  CHECK_CODE(laminar_stream_two_phase(db, "d", NULL, &err), LAMINAR_ERR_MISUSE, &err);
  CHECK_CODE(laminar_stream_two_phase(NULL, "d", &st, &err), LAMINAR_ERR_MISUSE, &err);
  laminar_close(db);
  return 0;
}

/* ---- user-defined aggregates ------------------------------------------------------ */

/* sumsq(x): SUM(x * x) in a plain-bytes state (copied as its bytes). */
static int sq_update(void* user, void* states, const uint32_t* groups,
                     const struct ArrowArray* args, const struct ArrowSchema* schema,
                     char* error, size_t cap) {
  (void)user, (void)schema, (void)error, (void)cap;
  const struct ArrowArray* x = args->children[0];
  for (int64_t r = 0; r < args->length; r++) {
    double v = ((const double*)x->buffers[1])[x->offset + r];
    ((double*)states)[groups[r]] += v * v;
  }
  return 0;
}

static int sq_merge(void* user, void* state, const void* other, char* error, size_t cap) {
  (void)user, (void)error, (void)cap;
  *(double*)state += *(const double*)other;
  return 0;
}

/* n doubles into out (none NULL). */
static int doubles_out(const double* v, int64_t n, struct ArrowArray* out,
                       struct ArrowSchema* out_schema) {
  if (ArrowSchemaInitFromType(out_schema, NANOARROW_TYPE_DOUBLE) != NANOARROW_OK ||
      ArrowArrayInitFromType(out, NANOARROW_TYPE_DOUBLE) != NANOARROW_OK ||
      ArrowArrayStartAppending(out) != NANOARROW_OK)
    return 1;
  for (int64_t k = 0; k < n; k++) {
    if (ArrowArrayAppendDouble(out, v[k]) != NANOARROW_OK) return 1;
  }
  return ArrowArrayFinishBuildingDefault(out, NULL) != NANOARROW_OK;
}

static int sq_finalize(void* user, const void* states, int64_t n, struct ArrowArray* out,
                       struct ArrowSchema* out_schema, char* error, size_t cap) {
  (void)user, (void)error, (void)cap;
  return doubles_out(states, n, out, out_schema);
}

/* span(x): MAX(x) - MIN(x) in a heap state {lo, hi} (NULL: no row yet),
 * carried through serialize / deserialize. */
typedef struct span {
  double lo, hi;
} span;

static int span_update(void* user, void* states, const uint32_t* groups,
                       const struct ArrowArray* args, const struct ArrowSchema* schema,
                       char* error, size_t cap) {
  (void)user, (void)schema;
  const struct ArrowArray* x = args->children[0];
  for (int64_t r = 0; r < args->length; r++) {
    double v = ((const double*)x->buffers[1])[x->offset + r];
    span** sp = (span**)states + groups[r];
    if (*sp == NULL) {
      *sp = malloc(sizeof(span));
      if (*sp == NULL) return snprintf(error, cap, "out of memory") > 0;
      **sp = (span){v, v};
    }
    if (v < (*sp)->lo) (*sp)->lo = v;
    if (v > (*sp)->hi) (*sp)->hi = v;
  }
  return 0;
}

static int span_merge(void* user, void* state, const void* other, char* error,
                      size_t cap) {
  (void)user;
  span** a = state;
  const span* b = *(span* const*)other;
  if (b == NULL) return 0;
  if (*a == NULL) {
    *a = malloc(sizeof(span));
    if (*a == NULL) return snprintf(error, cap, "out of memory") > 0;
    **a = *b;
    return 0;
  }
  if (b->lo < (*a)->lo) (*a)->lo = b->lo;
  if (b->hi > (*a)->hi) (*a)->hi = b->hi;
  return 0;
}

static int span_finalize(void* user, const void* states, int64_t n,
                         struct ArrowArray* out, struct ArrowSchema* out_schema,
                         char* error, size_t cap) {
  (void)user, (void)error, (void)cap;
  double* v = malloc(sizeof(double) * (size_t)(n ? n : 1));
  if (v == NULL) return 1;
  for (int64_t k = 0; k < n; k++) {
    const span* s = ((span* const*)states)[k];
    v[k] = s == NULL ? -1.0 : s->hi - s->lo;
  }
  int rc = doubles_out(v, n, out, out_schema);
  free(v);
  return rc;
}

static int64_t span_serialize(void* user, const void* state, void* buf, int64_t cap) {
  (void)user;
  const span* s = *(span* const*)state;
  int64_t need = s == NULL ? 0 : (int64_t)sizeof(span);
  if (s != NULL && need <= cap) memcpy(buf, s, sizeof(span));
  return need;
}

static int span_deserialize(void* user, void* state, const void* buf, int64_t len) {
  (void)user;
  span** sp = state;
  *sp = NULL;
  if (len == 0) return 0;
  if (len != (int64_t)sizeof(span)) return 1;
  *sp = malloc(sizeof(span));
  if (*sp == NULL) return 1;
  memcpy(*sp, buf, sizeof(span));
  return 0;
}

static void span_destroy(void* user, void* state) {
  (void)user;
  free(*(span**)state);
  *(span**)state = NULL;
}

static laminar_code register_udafs(laminar_db* db, laminar_error* err) {
  static const char* const g[] = {"g"};
  laminar_code rc = laminar_aggregate_register(
      db, "sumsq", g, 1, "g", sizeof(double), NULL, sq_update, NULL, sq_merge,
      sq_finalize, NULL, NULL, NULL, NULL, NULL, 0, err);
  if (rc != LAMINAR_OK) return rc;
  return laminar_aggregate_register(
      db, "span", g, 1, "g", sizeof(span*), NULL, span_update, NULL, span_merge,
      span_finalize, span_serialize, span_deserialize, span_destroy, NULL, NULL, 0, err);
}

/* Both aggregates beside the built-ins computing the same (in the same row),
 * in an expression and in HAVING, over tumbling and hopping windows. */
static int test_udaf_split(void) {
  two_phase tp;
  CHECK(check_split_with(
            "CREATE STREAM u AS SELECT symbol, window_start, sumsq(price) AS sq, "
            "SUM(price * price) AS b_sq, span(price) * 2 AS sp2, "
            "(MAX(price) - MIN(price)) * 2 AS b_sp2, COUNT(*) AS n FROM \"Trades\" "
            "GROUP BY symbol, tumble(ts, INTERVAL '1' SECOND) HAVING span(price) >= 0;",
            "u", register_udafs, &tp) == 0);
  /* the partial ships the states; the final merges them */
  EXPECT(strstr(tp.partial, "__udaf_partial('sumsq', \"price\") AS \"__a0\"") != NULL);
  EXPECT(strstr(tp.partial, "__udaf_partial('span', \"price\")") != NULL);
  EXPECT(strstr(tp.final_sql, "__udaf_merge('sumsq', \"__a0\")") != NULL);
  EXPECT(strstr(tp.final_sql, "__udaf_merge('span', ") != NULL);
  CHECK(check_split_with(
            "CREATE STREAM h AS SELECT symbol, window_end, sumsq(price) AS sq, "
            "SUM(price * price) AS b_sq, span(volume) AS sp FROM \"Trades\" "
            "GROUP BY symbol, hop(ts, INTERVAL '500' MILLISECOND, INTERVAL '2' SECOND);",
            "h", register_udafs, NULL) == 0);
  /* a state column that is no state: an error naming the function */
  laminar_db* db;
  laminar_error err;
  CHECK(open_with(register_udafs,
                  "CREATE SOURCE p (k VARCHAR, v BIGINT); CREATE STREAM f AS SELECT k, "
                  "__udaf_merge('span', CAST(v AS VARCHAR)) AS s FROM p GROUP BY k",
                  &db) == 0);
  CHECK_CODE(laminar_execute(db,
                             "CREATE STREAM g AS SELECT k, __udaf_merge('nope', 'x') "
                             "AS s FROM p GROUP BY k",
                             &err),
             LAMINAR_ERR_SQL_UNKNOWN_FUNCTION, &err);
  EXPECT(strstr(err.message, "'nope'") != NULL);
  laminar_source* src;
  CHECK_CODE(laminar_source_open(db, "p", &src, &err), LAMINAR_OK, &err);
  kv_row bad[] = {{"a", 1234, 0, 0}}; /* "1234": 3 bytes, not a span */
  CHECK(push_kv(src, bad, 1, 0, &err) == 0);
  memset(&err, 0, sizeof err);
  CHECK_CODE(laminar_run_until_idle(db, &err), LAMINAR_ERR_FUNCTION_FAILED, &err);
  EXPECT(strstr(err.message, "function 'span'") != NULL);
  EXPECT(strstr(err.message, "does not deserialize") != NULL);
  laminar_source_close(src);
  laminar_close(db);
  return 0;
}

static const lm_test_case cases[] = {{"vwap", test_vwap},
                                     {"udaf_split", test_udaf_split},
                                     {"hop_having", test_hop_having},
                                     {"expression_printer", test_expression_printer},
                                     {"refused_and_errors", test_refused_and_errors},
                                     {NULL, NULL}};

int main(int argc, char** argv) { return lm_test_main(argc, argv, cases); }
