/*
 * test_options.c -- the option table through laminar.h (issue 26, item 6):
 * every scope (config, CREATE SOURCE / STREAM / SINK ... WITH, subscriptions)
 * refuses an unknown key with LDB-6001 and an ill-typed value with LDB-6002,
 * the message naming the key and the scope (and, for SQL, the object and the
 * value's line:column); the table's rows are complete, and the defaults it
 * documents are the ones a database uses (read back through laminar_metrics);
 * laminar_subscription_open applies its structured options as the text of the
 * laminar_subscribe_with alias does; laminar_close_v2 reports through
 * laminar_error.
 */
#define _POSIX_C_SOURCE 200809L
#include "lm_test.h"
#include "lm_test_metrics.h"

#include <stdbool.h>
#include <stdio.h>
#include <string.h>

static const char* scope_word(int32_t scope) {
  switch (scope) {
    case LAMINAR_SCOPE_DB: return "config";
    case LAMINAR_SCOPE_SOURCE: return "source";
    case LAMINAR_SCOPE_STREAM: return "stream";
    case LAMINAR_SCOPE_SUBSCRIPTION: return "subscription";
    default: return "sink";
  }
}

/* The message names the key and the scope ("... source option 'k' ..."). */
static bool names_key_and_scope(const laminar_error* err, const char* key,
                                int32_t scope) {
  char want[128];
  snprintf(want, sizeof want, "%s option '%s'", scope_word(scope), key);
  return strstr(err->message, want) != NULL;
}

/* The row of `key` in `scope`, or -1. */
static int32_t find_row(const char* key, int32_t scope) {
  for (int32_t i = 0; i < laminar_option_count(); i++) {
    const char* k;
    int32_t scopes;
    if (laminar_option_get(i, &k, &scopes, NULL, NULL, NULL) != LAMINAR_OK) return -1;
    if ((scopes & scope) != 0 && strcmp(k, key) == 0) return i;
  }
  return -1;
}

/* A default's value: a whole number with an optional KB/MB/GB suffix (1024s). */
static bool default_number(const char* text, int64_t* out) {
  char* end;
  long long v = strtoll(text, &end, 10);
  if (end == text) return false;
  while (*end == ' ') end++;
  int64_t mult = 1;
  if (strcmp(end, "KB") == 0)
    mult = 1024;
  else if (strcmp(end, "MB") == 0)
    mult = 1024 * 1024;
  else if (strcmp(end, "GB") == 0)
    mult = 1024LL * 1024 * 1024;
  else if (*end != '\0')
    return false;
  *out = (int64_t)v * mult;
  return true;
}

static int64_t default_of(const char* key, int32_t scope) {
  int32_t row = find_row(key, scope);
  const char* def = NULL;
  int64_t v = -1;
  if (row < 0 || laminar_option_get(row, NULL, NULL, NULL, &def, NULL) != LAMINAR_OK ||
      !default_number(def, &v)) {
    fprintf(stderr, "no numeric default for %s in scope %d\n", key, (int)scope);
    return -1;
  }
  return v;
}

static int test_table_rows(void) {
  int32_t n = laminar_option_count();
  CHECK(n > 0);
  int32_t seen = 0;
  for (int32_t i = 0; i < n; i++) {
    const char *key, *type, *def, *doc;
    int32_t scopes;
    CHECK_CODE(laminar_option_get(i, &key, &scopes, &type, &def, &doc), LAMINAR_OK, NULL);
    EXPECT(key != NULL && key[0] != '\0' && type != NULL && type[0] != '\0' &&
           def != NULL && doc != NULL && doc[0] != '\0');
    EXPECT(scopes != 0 && (scopes & ~31) == 0);
    seen |= scopes;
    /* One row per key and scope: a second would never be read. */
    for (int32_t j = 0; j < i; j++) {
      const char* other;
      int32_t other_scopes;
      CHECK_CODE(laminar_option_get(j, &other, &other_scopes, NULL, NULL, NULL),
                 LAMINAR_OK, NULL);
      EXPECT(strcmp(other, key) != 0 || (other_scopes & scopes) == 0);
    }
    /* "config KEY" defaults name a database option. */
    if (strncmp(def, "config ", 7) == 0) EXPECT(find_row(def + 7, LAMINAR_SCOPE_DB) >= 0);
  }
  EXPECT(seen == 31); /* every scope has options */
  CHECK_CODE(laminar_option_get(n, NULL, NULL, NULL, NULL, NULL), LAMINAR_ERR_MISUSE,
             NULL);
  CHECK_CODE(laminar_option_get(-1, NULL, NULL, NULL, NULL, NULL), LAMINAR_ERR_MISUSE,
             NULL);
  /* The options of the last waves are in it. */
  const char* recent[] = {"read_only", "sink_root", "max_queue_bytes", "max_state_bytes"};
  for (size_t i = 0; i < sizeof recent / sizeof recent[0]; i++)
    EXPECT(find_row(recent[i], LAMINAR_SCOPE_DB) >= 0);
  return 0;
}

/* Every DB-scope row is accepted by laminar_config_set with its own default
 * (when it has one), and refused with LDB-6002 for a value of no type. */
static int test_config_scope(void) {
  laminar_config* c;
  CHECK_CODE(laminar_config_create(&c), LAMINAR_OK, NULL);
  laminar_error err;
  int checked = 0;
  for (int32_t i = 0; i < laminar_option_count(); i++) {
    const char *key, *def;
    int32_t scopes;
    CHECK_CODE(laminar_option_get(i, &key, &scopes, NULL, &def, NULL), LAMINAR_OK, NULL);
    if ((scopes & LAMINAR_SCOPE_DB) == 0) continue;
    char k[64];
    snprintf(k, sizeof k, "%s", strcmp(key, "var.NAME") == 0 ? "var.X" : key);
    if (def[0] != '\0') {
      err.code = LAMINAR_OK;
      EXPECT(laminar_config_set(c, k, def, &err) == LAMINAR_OK);
      if (err.code != LAMINAR_OK) fprintf(stderr, "%s = '%s': %s\n", k, def, err.message);
    }
    /* Text options take any text; the rest refuse a value of no type. */
    laminar_code rc = laminar_config_set(c, k, "?not a value?", &err);
    if (rc != LAMINAR_OK) {
      EXPECT(rc == LAMINAR_ERR_CONFIG_VALUE);
      EXPECT(names_key_and_scope(&err, key, LAMINAR_SCOPE_DB));
      checked++;
    }
  }
  EXPECT(checked >= 10);
  CHECK_CODE(laminar_config_set(c, "no_such_key", "1", &err), LAMINAR_ERR_CONFIG_KEY,
             &err);
  EXPECT(names_key_and_scope(&err, "no_such_key", LAMINAR_SCOPE_DB));
  EXPECT(strstr(err.message, "buffer_size") != NULL); /* the known keys are listed */
  /* A key of another scope only is unknown here. */
  CHECK_CODE(laminar_config_set(c, "late_output", "true", &err), LAMINAR_ERR_CONFIG_KEY,
             &err);
  laminar_config_destroy(c);
  return 0;
}

static laminar_db* open_db(laminar_config* c) {
  laminar_db* db = NULL;
  laminar_error err;
  if (laminar_open(c, &db, &err) != LAMINAR_OK)
    fprintf(stderr, "open: %s\n", err.message);
  return db;
}

static const char* SRC =
    "CREATE SOURCE t (k VARCHAR, v BIGINT, ts BIGINT, WATERMARK FOR ts AS ts)";

/* `sql` fails with `code`, the message naming key and scope, at the line:column
 * where the text `value` (the option's value) starts. */
static int expect_sql(laminar_db* db, const char* sql, laminar_code code, const char* key,
                      int32_t scope, const char* object, const char* value) {
  const char* at_value = strstr(sql, value);
  CHECK(at_value != NULL);
  int32_t line = 1, column = 1;
  for (const char* p = sql; p < at_value; p++) {
    column = *p == '\n' ? 1 : column + 1;
    line += *p == '\n';
  }
  laminar_error err;
  CHECK_CODE(laminar_execute(db, sql, &err), code, &err);
  EXPECT(names_key_and_scope(&err, key, scope));
  EXPECT(err.line == line && err.column == column);
  EXPECT(strcmp(err.object, object) == 0);
  char at[64];
  snprintf(at, sizeof at, "line %d, column %d", (int)line, (int)column);
  EXPECT(strstr(err.message, at) != NULL);
  if (err.line != line || err.column != column) fprintf(stderr, "%s\n", err.message);
  return 0;
}

static int test_source_scope(void) {
  laminar_db* db = open_db(NULL);
  CHECK(db != NULL);
  CHECK(expect_sql(db, "CREATE SOURCE a (k VARCHAR, ts BIGINT) WITH (bogus = 1)",
                   LAMINAR_ERR_CONFIG_KEY, "bogus", LAMINAR_SCOPE_SOURCE, "a",
                   "1)") == 0);
  CHECK(expect_sql(db,
                   "CREATE SOURCE a (k VARCHAR, ts BIGINT)\nWITH (buffer_size = 1000)",
                   LAMINAR_ERR_CONFIG_VALUE, "buffer_size", LAMINAR_SCOPE_SOURCE, "a",
                   "1000") == 0);
  CHECK(expect_sql(db,
                   "CREATE SOURCE a (k VARCHAR, ts BIGINT) WITH (backpressure = 'wait')",
                   LAMINAR_ERR_CONFIG_VALUE, "backpressure", LAMINAR_SCOPE_SOURCE, "a",
                   "'wait'") == 0);
  CHECK(expect_sql(db,
                   "CREATE SOURCE a (k VARCHAR, ts BIGINT) WITH (max_queue_bytes = TRUE)",
                   LAMINAR_ERR_CONFIG_VALUE, "max_queue_bytes", LAMINAR_SCOPE_SOURCE, "a",
                   "TRUE") == 0);
  /* A stream's option is not a source's. */
  CHECK(expect_sql(db, "CREATE SOURCE a (k VARCHAR, ts BIGINT) WITH (late_output = TRUE)",
                   LAMINAR_ERR_CONFIG_KEY, "late_output", LAMINAR_SCOPE_SOURCE, "a",
                   "TRUE") == 0);
  laminar_error err;
  /* Nothing was created by the failures. */
  CHECK_CODE(laminar_execute(db, "CREATE SOURCE a (k VARCHAR, ts BIGINT)", &err),
             LAMINAR_OK, &err);
  laminar_close(db);
  return 0;
}

static int test_stream_scope(void) {
  laminar_db* db = open_db(NULL);
  CHECK(db != NULL);
  laminar_error err;
  CHECK_CODE(laminar_execute(db, SRC, &err), LAMINAR_OK, &err);
  const char* head =
      "CREATE STREAM s AS SELECT k, COUNT(*) AS n FROM t GROUP BY k, "
      "tumble(ts, INTERVAL '1' SECOND) WITH (";
  char sql[512];
  snprintf(sql, sizeof sql, "%swal_mode = 'sync')", head);
  CHECK(expect_sql(db, sql, LAMINAR_ERR_CONFIG_KEY, "wal_mode", LAMINAR_SCOPE_STREAM, "s",
                   "'sync'") == 0);
  snprintf(sql, sizeof sql, "%sallowed_lateness = 'soon')", head);
  CHECK(expect_sql(db, sql, LAMINAR_ERR_CONFIG_VALUE, "allowed_lateness",
                   LAMINAR_SCOPE_STREAM, "s", "'soon'") == 0);
  snprintf(sql, sizeof sql, "%smax_state_bytes = 'lots')", head);
  CHECK(expect_sql(db, sql, LAMINAR_ERR_CONFIG_VALUE, "max_state_bytes",
                   LAMINAR_SCOPE_STREAM, "s", "'lots'") == 0);
  /* EXPLAIN checks the same table. */
  snprintf(sql, sizeof sql, "EXPLAIN %sbogus = 1)", head);
  struct ArrowArrayStream out;
  CHECK_CODE(laminar_query(db, sql, &out, &err), LAMINAR_ERR_CONFIG_KEY, &err);
  EXPECT(names_key_and_scope(&err, "bogus", LAMINAR_SCOPE_STREAM));
  EXPECT(err.line == 1 && err.column == (int32_t)(strstr(sql, "1)") - sql) + 1);
  /* Well-typed options still apply. */
  snprintf(sql, sizeof sql,
           "%sallowed_lateness = INTERVAL '5' SECOND, max_state_bytes = '1MB')", head);
  CHECK_CODE(laminar_execute(db, sql, &err), LAMINAR_OK, &err);
  EXPECT(lm_test_metric(db, "stream", "s", "max_state_bytes") == 1024 * 1024);
  laminar_close(db);
  return 0;
}

/* A window option on a stream without a window: LDB-6003 from the option
 * table's surface, naming the stream and the value's line:column, in CREATE
 * and in EXPLAIN CREATE alike. */
static int test_stream_scope_conflict(void) {
  laminar_db* db = open_db(NULL);
  CHECK(db != NULL);
  laminar_error err;
  CHECK_CODE(laminar_execute(db, SRC, &err), LAMINAR_OK, &err);
  static const char* const cases[][2] = {
      {"CREATE STREAM m AS SELECT k FROM t WITH (late_output = TRUE)", "TRUE)"},
      {"CREATE STREAM m AS SELECT k FROM t\nWITH (allowed_lateness = 5)", "5)"},
      {"CREATE STREAM m AS SELECT k, COUNT(*) AS n FROM t GROUP BY k "
       "WITH (max_state_bytes = 0, late_output = 'x')",
       "'x')"}};
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    const char* sql = cases[i][0];
    const char* at = strstr(sql, cases[i][1]);
    int32_t line = 1, column = 1;
    for (const char* p = sql; p < at; p++) {
      column = *p == '\n' ? 1 : column + 1;
      line += *p == '\n';
    }
    CHECK_CODE(laminar_execute(db, sql, &err), LAMINAR_ERR_CONFIG_CONFLICT, &err);
    EXPECT(strstr(err.message, "needs a window") != NULL);
    EXPECT(strcmp(err.object, "m") == 0);
    EXPECT(err.line == line && err.column == column);
    char explain[512];
    snprintf(explain, sizeof explain, "EXPLAIN %s", sql);
    struct ArrowArrayStream out;
    CHECK_CODE(laminar_query(db, explain, &out, &err), LAMINAR_ERR_CONFIG_CONFLICT, &err);
    EXPECT(strcmp(err.object, "m") == 0);
    EXPECT(err.line == line && err.column == (line == 1 ? column + 8 : column));
  }
  laminar_close(db);
  return 0;
}

static int test_sink_scope(void) {
  laminar_db* db = open_db(NULL);
  CHECK(db != NULL);
  laminar_error err;
  CHECK_CODE(laminar_execute(db, SRC, &err), LAMINAR_OK, &err);
  CHECK_CODE(laminar_execute(db, "CREATE STREAM s AS SELECT k, v FROM t", &err),
             LAMINAR_OK, &err);
  CHECK(expect_sql(db, "CREATE SINK o FROM s INTO FILE (path = '/tmp', fmt = 'csv')",
                   LAMINAR_ERR_CONFIG_KEY, "fmt", LAMINAR_SCOPE_SINK, "o", "'csv'") == 0);
  CHECK(expect_sql(db, "CREATE SINK o FROM s INTO FILE (path = '/tmp', format = 'xml')",
                   LAMINAR_ERR_CONFIG_VALUE, "format", LAMINAR_SCOPE_SINK, "o",
                   "'xml'") == 0);
  CHECK(expect_sql(db, "CREATE SINK o FROM s INTO FILE (path = 7)",
                   LAMINAR_ERR_CONFIG_VALUE, "path", LAMINAR_SCOPE_SINK, "o", "7)") == 0);
  laminar_close(db);
  return 0;
}

/* The text alias and the structured call apply the same options. */
static int test_subscription_scope(void) {
  laminar_config* c;
  CHECK_CODE(laminar_config_create(&c), LAMINAR_OK, NULL);
  laminar_error err;
  CHECK_CODE(laminar_config_set(c, "max_queue_bytes", "1MB", &err), LAMINAR_OK, &err);
  laminar_db* db = open_db(c);
  laminar_config_destroy(c);
  CHECK(db != NULL);
  CHECK_CODE(laminar_execute(db, SRC, &err), LAMINAR_OK, &err);
  CHECK_CODE(laminar_execute(db, "CREATE STREAM s AS SELECT k, v FROM t", &err),
             LAMINAR_OK, &err);
  laminar_subscription* sub = (laminar_subscription*)&err; /* must be reset to NULL */
  const char* bad_key[] = {"buffer_size", "backpressure"};
  const char* bad_key_values[] = {"64", "reject"};
  CHECK_CODE(laminar_subscription_open(db, "s", bad_key, bad_key_values, 2, &sub, &err),
             LAMINAR_ERR_CONFIG_KEY, &err);
  EXPECT(sub == NULL &&
         names_key_and_scope(&err, "backpressure", LAMINAR_SCOPE_SUBSCRIPTION));
  const char* keys[] = {"max_queue_bytes", "wait_strategy"};
  const char* bad_values[] = {"2MB", "spin_yield(x)"};
  CHECK_CODE(laminar_subscription_open(db, "s", keys, bad_values, 2, &sub, &err),
             LAMINAR_ERR_CONFIG_VALUE, &err);
  EXPECT(names_key_and_scope(&err, "wait_strategy", LAMINAR_SCOPE_SUBSCRIPTION));
  CHECK_CODE(laminar_subscribe_with(db, "s", "slow_subscriber = 'sometimes'", &sub, &err),
             LAMINAR_ERR_CONFIG_VALUE, &err);
  EXPECT(names_key_and_scope(&err, "slow_subscriber", LAMINAR_SCOPE_SUBSCRIPTION));
  CHECK_CODE(laminar_subscribe_with(db, "s", "nope = 1", &sub, &err),
             LAMINAR_ERR_CONFIG_KEY, &err);
  EXPECT(names_key_and_scope(&err, "nope", LAMINAR_SCOPE_SUBSCRIPTION));
  CHECK_CODE(laminar_subscription_open(db, "s", NULL, NULL, 1, &sub, &err),
             LAMINAR_ERR_MISUSE, &err);
  /* Applied: the structured call, the text alias, and the defaults. */
  const char* good[] = {"2MB", "spin_yield(10)"};
  laminar_subscription *a, *b, *d;
  CHECK_CODE(laminar_subscription_open(db, "s", keys, good, 2, &a, &err), LAMINAR_OK,
             &err);
  CHECK_CODE(laminar_subscribe_with(db, "s", "max_queue_bytes = '3MB'", &b, &err),
             LAMINAR_OK, &err);
  CHECK_CODE(laminar_subscribe(db, "s", &d, &err), LAMINAR_OK, &err);
  /* The metric rows of one stream's subscriptions come in subscription order:
   * read them as the sum and the max (2 + 3 + 1 MB; the default is the
   * config's 1MB, as the table says: "config max_queue_bytes"). */
  struct ArrowArrayStream st;
  CHECK_CODE(laminar_metrics(db, &st, &err), LAMINAR_OK, &err);
  struct ArrowSchema schema;
  struct ArrowArray array;
  CHECK(st.get_schema(&st, &schema) == 0);
  int64_t sum = 0, n = 0;
  while (st.get_next(&st, &array) == 0 && array.release != NULL) {
    struct ArrowArrayView view;
    struct ArrowError aerr;
    CHECK(ArrowArrayViewInitFromSchema(&view, &schema, &aerr) == NANOARROW_OK);
    CHECK(ArrowArrayViewSetArray(&view, &array, &aerr) == NANOARROW_OK);
    for (int64_t r = 0; r < array.length; r++) {
      struct ArrowStringView k = ArrowArrayViewGetStringUnsafe(view.children[0], r);
      struct ArrowStringView m = ArrowArrayViewGetStringUnsafe(view.children[2], r);
      if (k.size_bytes == 12 && memcmp(k.data, "subscription", 12) == 0 &&
          m.size_bytes == 15 && memcmp(m.data, "max_queue_bytes", 15) == 0) {
        sum += ArrowArrayViewGetIntUnsafe(view.children[3], r);
        n++;
      }
    }
    ArrowArrayViewReset(&view);
    array.release(&array);
  }
  schema.release(&schema);
  st.release(&st);
  EXPECT(n == 3);
  EXPECT(sum == (2 + 3 + 1) * 1024 * 1024);
  laminar_subscription_close(a);
  laminar_subscription_close(b);
  laminar_subscription_close(d);
  laminar_close(db);
  return 0;
}

/* The defaults the table documents are the ones a database uses. */
static int test_defaults(void) {
  laminar_db* db = open_db(NULL);
  CHECK(db != NULL);
  laminar_error err;
  CHECK_CODE(laminar_execute(db, SRC, &err), LAMINAR_OK, &err);
  CHECK_CODE(
      laminar_execute(db,
                      "CREATE STREAM s AS SELECT k, COUNT(*) AS n FROM t GROUP BY k, "
                      "tumble(ts, INTERVAL '1' SECOND)",
                      &err),
      LAMINAR_OK, &err);
  EXPECT(lm_test_metric(db, "source", "t", "queue_capacity") ==
         default_of("buffer_size", LAMINAR_SCOPE_DB));
  EXPECT(lm_test_metric(db, "source", "t", "max_queue_bytes") ==
         default_of("max_queue_bytes", LAMINAR_SCOPE_DB));
  EXPECT(lm_test_metric(db, "stream", "s", "max_state_bytes") ==
         default_of("max_state_bytes", LAMINAR_SCOPE_STREAM));
  /* cores: reactors "0" .. "N-1". */
  int64_t cores = default_of("cores", LAMINAR_SCOPE_DB);
  CHECK(cores >= 1);
  char last[32], past[32];
  snprintf(last, sizeof last, "%lld", (long long)(cores - 1));
  snprintf(past, sizeof past, "%lld", (long long)cores);
  EXPECT(lm_test_metric(db, "reactor", last, "rounds") >= 0);
  EXPECT(lm_test_metric(db, "reactor", past, "rounds") == -1);
  laminar_close(db);

  /* "config KEY": a source follows the database's setting. */
  laminar_config* c;
  CHECK_CODE(laminar_config_create(&c), LAMINAR_OK, NULL);
  CHECK_CODE(laminar_config_set(c, "buffer_size", "256", &err), LAMINAR_OK, &err);
  CHECK_CODE(laminar_config_set(c, "max_queue_bytes", "64KB", &err), LAMINAR_OK, &err);
  db = open_db(c);
  laminar_config_destroy(c);
  CHECK(db != NULL);
  CHECK_CODE(laminar_execute(db, SRC, &err), LAMINAR_OK, &err);
  CHECK_CODE(laminar_execute(db,
                             "CREATE SOURCE u (k VARCHAR) WITH (buffer_size = '1024', "
                             "max_queue_bytes = 100)",
                             &err),
             LAMINAR_OK, &err);
  const char* def;
  CHECK_CODE(laminar_option_get(find_row("buffer_size", LAMINAR_SCOPE_SOURCE), NULL, NULL,
                                NULL, &def, NULL),
             LAMINAR_OK, NULL);
  EXPECT(strcmp(def, "config buffer_size") == 0);
  EXPECT(lm_test_metric(db, "source", "t", "queue_capacity") == 256);
  EXPECT(lm_test_metric(db, "source", "t", "max_queue_bytes") == 64 * 1024);
  EXPECT(lm_test_metric(db, "source", "u", "queue_capacity") == 1024);
  EXPECT(lm_test_metric(db, "source", "u", "max_queue_bytes") == 100);
  laminar_close(db);
  return 0;
}

static int test_close_v2(void) {
  laminar_error err;
  err.code = LAMINAR_OK;
  CHECK_CODE(laminar_close_v2(NULL, &err), LAMINAR_OK, &err);
  EXPECT(err.code == LAMINAR_OK);
  laminar_db* db = open_db(NULL);
  CHECK(db != NULL);
  /* A handle that is not a database is refused, with the detail. */
  CHECK_CODE(laminar_close_v2((laminar_db*)&err, &err), LAMINAR_ERR_MISUSE, &err);
  EXPECT(err.code == LAMINAR_ERR_MISUSE &&
         strstr(err.message, "LDB-9002") == err.message);
  CHECK_CODE(laminar_close_v2(db, &err), LAMINAR_OK, &err);
  return 0;
}

/* laminar_open reads its const config and leaves it as it was: a second open
 * with the same config gets the same settings. */
static int test_open_keeps_config(void) {
  laminar_config* c;
  CHECK_CODE(laminar_config_create(&c), LAMINAR_OK, NULL);
  laminar_error err;
  CHECK_CODE(laminar_config_set(c, "buffer_size", "512", &err), LAMINAR_OK, &err);
  for (int i = 0; i < 2; i++) {
    laminar_db* db = open_db(c);
    CHECK(db != NULL);
    CHECK_CODE(laminar_execute(db, SRC, &err), LAMINAR_OK, &err);
    EXPECT(lm_test_metric(db, "source", "t", "queue_capacity") == 512);
    CHECK_CODE(laminar_close_v2(db, &err), LAMINAR_OK, &err);
  }
  laminar_config_destroy(c);
  return 0;
}

/* The STYLE names and their aliases do the same thing. */
static int test_aliases(void) {
  laminar_db* db = open_db(NULL);
  CHECK(db != NULL);
  laminar_error err;
  CHECK_CODE(
      laminar_execute(db, "CREATE SOURCE t (k VARCHAR) WITH (buffer_size = 4)", &err),
      LAMINAR_OK, &err);
  laminar_source* src;
  CHECK_CODE(laminar_source_open(db, "t", &src, &err), LAMINAR_OK, &err);
  int64_t free_slots;
  int32_t room;
  CHECK_CODE(laminar_source_push_watermark(src, 10, &err), LAMINAR_OK, &err);
  CHECK_CODE(laminar_source_watermark(src, 20, &err), LAMINAR_OK, &err);
  CHECK_CODE(laminar_source_push_watermark_timeout(src, 30, 0, &err), LAMINAR_OK, &err);
  CHECK_CODE(laminar_source_free_slots(src, &free_slots, &err), LAMINAR_OK, &err);
  EXPECT(free_slots == 1);
  CHECK_CODE(laminar_source_has_capacity(src, 1, &room, &err), LAMINAR_OK, &err);
  EXPECT(room == 1);
  CHECK_CODE(laminar_source_has_capacity(src, 2, &room, &err), LAMINAR_OK, &err);
  EXPECT(room == 0);
  CHECK_CODE(laminar_source_watermark_timeout(src, 40, 0, &err), LAMINAR_OK, &err);
  /* Full, no runtime: both names answer as a push does. */
  CHECK_CODE(laminar_source_push_watermark_timeout(src, 50, 0, &err),
             LAMINAR_ERR_QUEUE_FULL, &err);
  CHECK_CODE(laminar_source_watermark(src, 50, &err), LAMINAR_ERR_QUEUE_FULL, &err);
  EXPECT(lm_test_metric(db, "source", "t", "queue_depth") == 4);
  laminar_source_close(src);
  laminar_close(db);
  return 0;
}

int main(int argc, char** argv) {
  static const lm_test_case cases[] = {
      {"table_rows", test_table_rows},
      {"config_scope", test_config_scope},
      {"source_scope", test_source_scope},
      {"stream_scope", test_stream_scope},
      {"stream_scope_conflict", test_stream_scope_conflict},
      {"sink_scope", test_sink_scope},
      {"subscription_scope", test_subscription_scope},
      {"defaults", test_defaults},
      {"close_v2", test_close_v2},
      {"open_keeps_config", test_open_keeps_config},
      {"aliases", test_aliases},
      {NULL, NULL}};
  return lm_test_main(argc, argv, cases);
}
