/*
 * test_kafka.c -- the Kafka connectors' refusals through laminar.h, with no
 * broker needed (tests/python/test_kafka.py runs them against a real one):
 * every bad CREATE SOURCE / CREATE SINK ... WITH (connector = 'kafka', ...)
 * gets its code naming the object, an unreachable broker is LDB-5005 within
 * the timeout (not a hang), a library built without librdkafka says so with
 * LDB-1005, and nothing of a refused statement stays (the name is free).
 * Under ASan+UBSan this also covers the connectors' failure paths for leaks.
 * With LAMINAR_KAFKA_BOOTSTRAP set (a running broker, tests/kafka/broker.sh),
 * `round_trip` also runs rows through a Kafka sink and back through a Kafka
 * source, and `offsets_log_compacted` checks the source's offsets log stays
 * bounded over many checkpoints and survives a torn tail (skipped without:
 * the success paths under the sanitizers).
 * Against a broker the cases take over a minute (two restarts, a round
 * trip per checkpoint) under the sanitizers: */
/* lm_ctest: TIMEOUT 300 */
#include "lm_test_fs.h"  // first: its feature macros
#include "arrow_build.h"
#include "lm_test.h"
#include "lm_test_kafka.h"

#include <stdlib.h>

#include <stdio.h>
#include <string.h>
#include <time.h>

#define DDL                                                    \
  "CREATE SOURCE t (id BIGINT NOT NULL, k VARCHAR, v DOUBLE);" \
  "CREATE STREAM s AS SELECT id, k, v FROM t;"                 \
  "CREATE STREAM c AS SELECT k, COUNT(*) AS n FROM t GROUP BY k EMIT CHANGES;"

#define SINK "CREATE SINK out FROM s WITH (connector = 'kafka', "
#define NOWHERE "'bootstrap.servers' = '127.0.0.1:1', timeout = '1 second'"

#ifdef LAMINAR_HAVE_KAFKA
#define UNREACHABLE LAMINAR_ERR_CONNECTOR
#else
#define UNREACHABLE LAMINAR_ERR_SQL_UNSUPPORTED
#endif

static laminar_code open_durable(const char* dir, laminar_db** db, laminar_error* err) {
  laminar_config* c;
  if (laminar_config_create(&c) != LAMINAR_OK) return LAMINAR_ERR_NOMEM;
  laminar_code rc = laminar_config_set(c, "data_dir", dir, err);
  if (rc == LAMINAR_OK) rc = laminar_config_set(c, "checkpoint_interval", "1 hour", err);
  if (rc == LAMINAR_OK) rc = laminar_open(c, db, err);
  laminar_config_destroy(c);
  return rc;
}

static double seconds_since(const struct timespec* t0) {
  struct timespec t1;
  clock_gettime(CLOCK_MONOTONIC, &t1);
  return (double)(t1.tv_sec - t0->tv_sec) + (double)(t1.tv_nsec - t0->tv_nsec) / 1e9;
}

typedef struct bad_case {
  const char* sql;
  laminar_code want;
} bad_case;

/* Each statement fails with its code, its message naming `object`. */
static int expect_all(laminar_db* db, const bad_case* cases, const char* object) {
  for (const bad_case* c = cases; c->sql != NULL; c++) {
    laminar_error err;
    struct timespec t0;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    laminar_code rc = laminar_execute(db, c->sql, &err);
    if (rc != c->want) {
      fprintf(stderr, "%s\n  returned %d, want %d (%s)\n", c->sql, (int)rc, (int)c->want,
              rc != LAMINAR_OK ? err.message : "");
      return 1;
    }
    EXPECT(strstr(err.message, object) != NULL);
    EXPECT(seconds_since(&t0) < 20.0); /* a clear error, not a hang */
#ifndef LAMINAR_HAVE_KAFKA
    if (rc == LAMINAR_ERR_SQL_UNSUPPORTED) EXPECT(strstr(err.message, "without Kafka"));
#endif
  }
  return 0;
}

static int test_sink_refusals(void) {
  char dir[256];
  CHECK(lm_test_mkdtemp(dir, sizeof dir, "lm_kafka_") == 0);
  laminar_db* db;
  laminar_error err;
  CHECK_CODE(open_durable(dir, &db, &err), LAMINAR_OK, &err);
  CHECK_CODE(laminar_execute(db, DDL, &err), LAMINAR_OK, &err);
  static const bad_case cases[] = {
      {SINK "topic = 'x')", LAMINAR_ERR_CONFIG_VALUE}, /* no bootstrap.servers */
      {SINK NOWHERE ")", LAMINAR_ERR_CONFIG_VALUE},    /* no topic */
      {SINK NOWHERE ", topic = 'x', delivery = 'twice')", LAMINAR_ERR_CONFIG_VALUE},
      {SINK NOWHERE ", topic = 'x', colour = 'red')", LAMINAR_ERR_CONFIG_KEY},
      {SINK NOWHERE ", topic = 'x', path = '/tmp/x')", LAMINAR_ERR_CONFIG_CONFLICT},
      {SINK NOWHERE ", topic = 'x', key = 'nope')", LAMINAR_ERR_SQL_UNKNOWN_COLUMN},
      /* upsert-json: of a changelog, keyed, a Kafka sink's only. */
      {SINK NOWHERE ", topic = 'x', format = 'upsert-json', key = 'k')",
       LAMINAR_ERR_CONFIG_VALUE},
      {"CREATE SINK out FROM c WITH (connector = 'kafka', " NOWHERE
       ", topic = 'x', format = 'upsert-json')",
       LAMINAR_ERR_CONFIG_VALUE},
      {"CREATE SINK out FROM c INTO FILE (path = '/tmp/x', format = 'upsert-json')",
       LAMINAR_ERR_CONFIG_VALUE},
      {SINK NOWHERE ", topic = 'x', key = 'k')", UNREACHABLE},
      {SINK NOWHERE ", topic = 'x', delivery = 'at_least_once', format = 'csv')",
       UNREACHABLE},
      {NULL, LAMINAR_OK}};
  int rc = expect_all(db, cases, "'out'");
  /* Nothing stayed: the name is free for an endpoint. */
  if (rc == 0)
    CHECK_CODE(laminar_execute(db, "CREATE SINK out FROM s", &err), LAMINAR_OK, &err);
  laminar_close(db);
  lm_test_rmtree(dir);
  return rc;
}

static int test_sink_needs_durability(void) {
  laminar_db* db;
  laminar_error err;
  CHECK_CODE(laminar_open(NULL, &db, &err), LAMINAR_OK, &err);
  CHECK_CODE(laminar_execute(db, DDL, &err), LAMINAR_OK, &err);
  laminar_code rc = laminar_execute(db, SINK NOWHERE ", topic = 'x')", &err);
#ifdef LAMINAR_HAVE_KAFKA
  EXPECT(rc == LAMINAR_ERR_CONFIG_CONFLICT);
  EXPECT(strstr(err.message, "data_dir") != NULL);
#else
  EXPECT(rc == LAMINAR_ERR_SQL_UNSUPPORTED);
#endif
  laminar_close(db);
  return 0;
}

#define SOURCE "CREATE SOURCE src (id BIGINT, ts BIGINT) WITH (connector = 'kafka', "

static int test_source_refusals(void) {
  laminar_db* db;
  laminar_error err;
  CHECK_CODE(laminar_open(NULL, &db, &err), LAMINAR_OK, &err);
  static const bad_case cases[] = {
      {SOURCE "topic = 'x')", LAMINAR_ERR_CONFIG_VALUE},
      {SOURCE NOWHERE ")", LAMINAR_ERR_CONFIG_VALUE},
      {SOURCE NOWHERE ", topic = 'x', startup = 'yesterday')", LAMINAR_ERR_CONFIG_VALUE},
      {SOURCE NOWHERE ", topic = 'x', startup = 'timestamp:x')",
       LAMINAR_ERR_CONFIG_VALUE},
      {SOURCE NOWHERE ", topic = 'x', format = 'xml')", LAMINAR_ERR_CONFIG_VALUE},
      {SOURCE NOWHERE ", topic = 'x', topic_pattern = 'x.*')", LAMINAR_ERR_CONFIG_VALUE},
      {SOURCE NOWHERE ", topic = 'x', event_time = 'nope')",
       LAMINAR_ERR_SQL_UNKNOWN_COLUMN},
      /* upsert-json: a changelog source only (its last column _weight). */
      {SOURCE NOWHERE ", topic = 'x', format = 'upsert-json')",
#ifdef LAMINAR_HAVE_KAFKA
       LAMINAR_ERR_CONFIG_VALUE},
#else
       LAMINAR_ERR_SQL_UNSUPPORTED},
#endif
      {SOURCE NOWHERE ", topic = 'x', 'kafka.no.such.property' = '1')",
#ifdef LAMINAR_HAVE_KAFKA
       LAMINAR_ERR_CONFIG_VALUE},
#else
       LAMINAR_ERR_SQL_UNSUPPORTED},
#endif
      {SOURCE NOWHERE
       ", topic = 'x', startup = 'timestamp:5', idle_timeout = '1 second')",
       UNREACHABLE},
      {NULL, LAMINAR_OK}};
  int rc = expect_all(db, cases, "'src'");
  /* Nothing stayed: the name is free. */
  if (rc == 0)
    CHECK_CODE(laminar_execute(db, "CREATE SOURCE src (id BIGINT)", &err), LAMINAR_OK,
               &err);
  laminar_close(db);
  return rc;
}


/* trades -> exactly-once sink -> topic -> source -> subscription. */
static int test_round_trip(void) {
  const char* bootstrap = getenv("LAMINAR_KAFKA_BOOTSTRAP");
#ifndef LAMINAR_HAVE_KAFKA
  (void)bootstrap;
  return lm_test_skip("built without librdkafka (the refusal cases check LDB-1005)");
#else
  if (bootstrap == NULL || bootstrap[0] == '\0')
    return lm_test_skip(
        "no broker: LAMINAR_KAFKA_BOOTSTRAP is unset (scripts/test.sh starts one)");
  char dir[256], sql[1024], topic[64];
  CHECK(lm_test_mkdtemp(dir, sizeof dir, "lm_kafka_") == 0);
  snprintf(topic, sizeof topic, "c-%s",
           strrchr(dir, '_') + 1); /* mkdtemp's random part */
  CHECK(lm_test_kafka_create_topic(bootstrap, topic, 2) == 0);
  laminar_db* db;
  laminar_error err;
  CHECK_CODE(open_durable(dir, &db, &err), LAMINAR_OK, &err);
  snprintf(
      sql, sizeof sql,
      "CREATE SOURCE trades (symbol VARCHAR, price DOUBLE, volume BIGINT, ts BIGINT);"
      "CREATE STREAM big AS SELECT * FROM trades WHERE volume > 1;"
      "CREATE SINK out FROM big WITH (connector = 'kafka', 'bootstrap.servers' = "
      "'%s', topic = '%s', key = 'symbol');"
      "CREATE SOURCE back (symbol VARCHAR, price DOUBLE, volume BIGINT, ts BIGINT, "
      "_partition INT) WITH (connector = 'kafka', 'bootstrap.servers' = '%s', "
      "topic = '%s');"
      "CREATE STREAM seen AS SELECT * FROM back;",
      bootstrap, topic, bootstrap, topic);
  CHECK_CODE(laminar_execute(db, sql, &err), LAMINAR_OK, &err);
  laminar_subscription* sub;
  CHECK_CODE(laminar_subscribe(db, "seen", &sub, &err), LAMINAR_OK, &err);
  const trade_row rows[] = {{"A", 1.5, false, 10, false, 1},
                            {"B", 2.5, false, 1, false, 2},
                            {"C", 3.5, false, 30, false, 3},
                            {NULL, 0, true, 40, false, 4}};
  struct ArrowArray arr;
  struct ArrowSchema schema;
  CHECK(build_trades(rows, 4, false, &arr, &schema) == 0);
  laminar_source* src;
  CHECK_CODE(laminar_source_open(db, "trades", &src, &err), LAMINAR_OK, &err);
  CHECK_CODE(laminar_source_push(src, &arr, &schema, &err), LAMINAR_OK, &err);
  schema.release(&schema);
  laminar_source_close(src);
  CHECK_CODE(laminar_run_until_idle(db, &err), LAMINAR_OK, &err);
  CHECK_CODE(laminar_checkpoint(db, &err), LAMINAR_OK, &err); /* publishes 3 rows */
  CHECK_CODE(laminar_start(db, &err), LAMINAR_OK, &err); /* the source feeds `seen` */
  int64_t seen = 0;
  struct timespec t0;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  while (seen < 3 && seconds_since(&t0) < 30.0) {
    struct ArrowArray out;
    struct ArrowSchema out_schema;
    CHECK_CODE(laminar_subscription_next(sub, 200, &out, &out_schema, &err), LAMINAR_OK,
               &err);
    if (out.release == NULL) continue;
    seen += out.length;
    out.release(&out);
    out_schema.release(&out_schema);
  }
  EXPECT(seen == 3);
  laminar_subscription_close(sub);
  CHECK_CODE(laminar_close_v2(db, &err), LAMINAR_OK, &err);
  lm_test_rmtree(dir);
  return 0;
#endif
}

#ifdef LAMINAR_HAVE_KAFKA
/* Read `sub` until `want` rows came, then until nothing came for 1.5 s: the
 * ids (column 0, BIGINT) appended to ids[*n] (cap entries). */
static int drain_ids(laminar_subscription* sub, int64_t want, int64_t* ids, int64_t* n,
                     int64_t cap) {
  struct timespec t0, last;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  last = t0;
  int64_t start = *n;
  while (seconds_since(&t0) < 60.0) {
    if (*n - start >= want && seconds_since(&last) > 1.5) break;
    struct ArrowArray out;
    struct ArrowSchema out_schema;
    laminar_error err;
    CHECK_CODE(laminar_subscription_next(sub, 100, &out, &out_schema, &err), LAMINAR_OK,
               &err);
    if (out.release == NULL) continue;
    const int64_t* v = (const int64_t*)out.children[0]->buffers[1];
    for (int64_t i = 0; i < out.length; i++)
      if (*n < cap) ids[(*n)++] = v[out.children[0]->offset + i];
    out.release(&out);
    out_schema.release(&out_schema);
    clock_gettime(CLOCK_MONOTONIC, &last);
  }
  return 0;
}

static int cmp_text(const void* a, const void* b) { return strcmp(a, b); }

static long file_size(const char* path) {
  FILE* f = fopen(path, "rb");
  if (f == NULL) return -1;
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fclose(f);
  return n;
}

/* Produce ids [from, from + n) as JSON to both partitions, read them back
 * through `sub`: exactly those, each once. */
static int round_ids(const char* bootstrap, const char* topic, laminar_subscription* sub,
                     int64_t from, int64_t n) {
  char text[16][32];
  const char* values[16];
  int32_t parts[16];
  CHECK(n <= 16);
  for (int64_t i = 0; i < n; i++) {
    snprintf(text[i], sizeof text[i], "{\"id\": %lld}", (long long)(from + i));
    values[i] = text[i];
    parts[i] = (int32_t)(i % 2);
  }
  CHECK(lm_test_kafka_produce(bootstrap, topic, parts, NULL, values, (size_t)n) == 0);
  int64_t ids[64], got = 0;
  CHECK(drain_ids(sub, n, ids, &got, 64) == 0);
  if (got != n)
    fprintf(stderr, "ids from %lld: got %lld rows, want %lld\n", (long long)from,
            (long long)got, (long long)n);
  EXPECT(got == n);
  for (int64_t i = 0; i < got; i++) {
    EXPECT(ids[i] >= from && ids[i] < from + n);
    for (int64_t j = 0; j < i; j++) EXPECT(ids[i] != ids[j]);
  }
  return 0;
}

static laminar_code open_sync(const char* dir, laminar_db** db, laminar_error* err) {
  laminar_config* c;
  if (laminar_config_create(&c) != LAMINAR_OK) return LAMINAR_ERR_NOMEM;
  laminar_code rc = laminar_config_set(c, "data_dir", dir, err);
  if (rc == LAMINAR_OK) rc = laminar_config_set(c, "checkpoint_interval", "1 hour", err);
  if (rc == LAMINAR_OK) rc = laminar_config_set(c, "wal_mode", "sync", err);
  if (rc == LAMINAR_OK) rc = laminar_open(c, db, err);
  laminar_config_destroy(c);
  return rc;
}
#endif

/* The source's offsets log (data_dir/sources/kafka-<source>.offsets) stays
 * bounded over many checkpoints (compacted at each), and a torn tail left by
 * a crash neither loses nor repeats a record, across two restarts. */
static int test_offsets_log_compacted(void) {
#ifndef LAMINAR_HAVE_KAFKA
  return lm_test_skip("built without librdkafka (the refusal cases check LDB-1005)");
#else
  const char* bootstrap = lm_test_kafka_bootstrap();
  if (bootstrap == NULL)
    return lm_test_skip(
        "no broker: LAMINAR_KAFKA_BOOTSTRAP is unset (scripts/test.sh starts one)");
  char dir[256], sql[1024], topic[64], log[512];
  CHECK(lm_test_mkdtemp(dir, sizeof dir, "lm_kafka_") == 0);
  snprintf(topic, sizeof topic, "o-%s", strrchr(dir, '_') + 1);
  snprintf(log, sizeof log, "%s/sources/kafka-t.offsets", dir);
  CHECK(lm_test_kafka_create_topic(bootstrap, topic, 2) == 0);
  laminar_db* db;
  laminar_error err;
  CHECK_CODE(open_sync(dir, &db, &err), LAMINAR_OK, &err);
  snprintf(sql, sizeof sql,
           "CREATE SOURCE t (id BIGINT) WITH (connector = 'kafka', "
           "'bootstrap.servers' = '%s', topic = '%s');"
           "CREATE STREAM seen AS SELECT id FROM t;",
           bootstrap, topic);
  CHECK_CODE(laminar_execute(db, sql, &err), LAMINAR_OK, &err);
  laminar_subscription* sub;
  CHECK_CODE(laminar_subscribe(db, "seen", &sub, &err), LAMINAR_OK, &err);
  CHECK_CODE(laminar_start(db, &err), LAMINAR_OK, &err);
  /* A record: 12 bytes and 20 per partition. After a checkpoint that covers
   * every push so far, the log holds the last record only. */
  const long bound = 12 + 2 * 20;
  int64_t id = 0;
  long largest = 0;
  for (int round = 0; round < 12; round++, id += 4) {
    CHECK(round_ids(bootstrap, topic, sub, id, 4) == 0);
    CHECK_CODE(laminar_checkpoint(db, &err), LAMINAR_OK, &err);
    struct timespec t0;
    clock_gettime(CLOCK_MONOTONIC, &t0); /* the consumer compacts after it */
    while (file_size(log) > bound && seconds_since(&t0) < 5.0) {
      struct timespec ts = {0, 20 * 1000 * 1000};
      nanosleep(&ts, NULL);
    }
    long size = file_size(log);
    if (size > largest) largest = size;
    if (getenv("LM_TEST_VERBOSE") != NULL)
      fprintf(stderr, "round %d: %ld\n", round, size);
  }
  fprintf(stderr, "offsets log: at most %ld bytes after a checkpoint (bound %ld)\n",
          largest, bound);
  EXPECT(largest > 0 && largest <= bound);
  laminar_subscription_close(sub);
  CHECK_CODE(laminar_close_v2(db, &err), LAMINAR_OK, &err);
  /* A torn tail: the first bytes of a record the crash cut short. */
  FILE* f = fopen(log, "ab");
  CHECK(f != NULL);
  static const unsigned char torn[7] = {0x21, 0, 0, 0, 0, 0, 0};
  CHECK(fwrite(torn, 1, sizeof torn, f) == sizeof torn);
  fclose(f);
  for (int restart = 0; restart < 2; restart++, id += 6) {
    CHECK_CODE(open_sync(dir, &db, &err), LAMINAR_OK, &err);
    CHECK_CODE(laminar_subscribe(db, "seen", &sub, &err), LAMINAR_OK, &err);
    CHECK_CODE(laminar_start(db, &err), LAMINAR_OK, &err);
    CHECK(round_ids(bootstrap, topic, sub, id, 6) == 0); /* only the new ones */
    laminar_subscription_close(sub);
    CHECK_CODE(laminar_close_v2(db, &err), LAMINAR_OK, &err);
    EXPECT(file_size(log) % (12 + 2 * 20) == 0); /* whole records only */
  }
  lm_test_rmtree(dir);
  return 0;
#endif
}

/* format = 'raw' with _key and _headers, and bad_records = '<source>': a
 * payload that is no UTF-8 becomes a row of the dead-letter source, the others
 * rows of the source with their headers as JSON (under the sanitizers too). */
static int test_raw_headers_dead_letter(void) {
#ifndef LAMINAR_HAVE_KAFKA
  return lm_test_skip("built without librdkafka (the refusal cases check LDB-1005)");
#else
  const char* bootstrap = lm_test_kafka_bootstrap();
  if (bootstrap == NULL)
    return lm_test_skip(
        "no broker: LAMINAR_KAFKA_BOOTSTRAP is unset (scripts/test.sh starts one)");
  char dir[256], sql[1024], topic[64];
  CHECK(lm_test_mkdtemp(dir, sizeof dir, "lm_kafka_") == 0);
  snprintf(topic, sizeof topic, "r-%s", strrchr(dir, '_') + 1);
  CHECK(lm_test_kafka_create_topic(bootstrap, topic, 1) == 0);
  static const char* const values[] = {"one", "\xff\xfe", "three"};
  rd_kafka_t* rk = lm_test_kafka_client(bootstrap, RD_KAFKA_PRODUCER, NULL);
  CHECK(rk != NULL);
  for (int i = 0; i < 3; i++) {
    char key[8];
    snprintf(key, sizeof key, "k%d", i);
    CHECK(rd_kafka_producev(rk, RD_KAFKA_V_TOPIC(topic), RD_KAFKA_V_PARTITION(0),
                            RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
                            RD_KAFKA_V_VALUE((void*)values[i], strlen(values[i])),
                            RD_KAFKA_V_KEY(key, strlen(key)),
                            RD_KAFKA_V_HEADER("h", "v\"1", 3),
                            RD_KAFKA_V_HEADER("n", NULL, 0),
                            RD_KAFKA_V_END) == RD_KAFKA_RESP_ERR_NO_ERROR);
  }
  CHECK(rd_kafka_flush(rk, 30000) == RD_KAFKA_RESP_ERR_NO_ERROR);
  rd_kafka_destroy(rk);
  laminar_db* db;
  laminar_error err;
  CHECK_CODE(laminar_open(NULL, &db, &err), LAMINAR_OK, &err);
  snprintf(sql, sizeof sql,
           "CREATE SOURCE bad (_offset BIGINT, _key VARCHAR, payload VARCHAR, "
           "reason VARCHAR);"
           "CREATE SOURCE t (line VARCHAR, _key VARCHAR, _headers VARCHAR) WITH ("
           "connector = 'kafka', 'bootstrap.servers' = '%s', topic = '%s', "
           "format = 'raw', bad_records = 'bad');"
           "CREATE STREAM s AS SELECT line || '|' || _key || '|' || _headers AS x FROM t;"
           "CREATE STREAM d AS SELECT _key || '|' || payload AS x FROM bad;",
           bootstrap, topic);
  CHECK_CODE(laminar_execute(db, sql, &err), LAMINAR_OK, &err);
  laminar_subscription *sub, *dead;
  CHECK_CODE(laminar_subscribe(db, "s", &sub, &err), LAMINAR_OK, &err);
  CHECK_CODE(laminar_subscribe(db, "d", &dead, &err), LAMINAR_OK, &err);
  CHECK_CODE(laminar_start(db, &err), LAMINAR_OK, &err);
  char got[4][128] = {{0}};
  int n = 0, nd = 0;
  struct timespec t0;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  while ((n < 2 || nd < 1) && seconds_since(&t0) < 30.0) {
    for (int which = 0; which < 2; which++) {
      struct ArrowArray out;
      struct ArrowSchema out_schema;
      CHECK_CODE(
          laminar_subscription_next(which == 0 ? sub : dead, 50, &out, &out_schema, &err),
          LAMINAR_OK, &err);
      if (out.release == NULL) continue;
      const int32_t* off = (const int32_t*)out.children[0]->buffers[1];
      const char* data = (const char*)out.children[0]->buffers[2];
      for (int64_t i = 0; i < out.length; i++) {
        int64_t r = out.children[0]->offset + i;
        int at = which == 0 ? n++ : 3 + nd++;
        if (at < 4)
          snprintf(got[at], sizeof got[at], "%.*s", (int)(off[r + 1] - off[r]),
                   data + off[r]);
      }
      out.release(&out);
      out_schema.release(&out_schema);
    }
  }
  EXPECT(n == 2 && nd == 1);
  EXPECT(strcmp(got[0], "one|k0|{\"h\":\"v\\\"1\",\"n\":null}") == 0);
  EXPECT(strcmp(got[1], "three|k2|{\"h\":\"v\\\"1\",\"n\":null}") == 0);
  EXPECT(strcmp(got[3], "k1|\\xff\\xfe") == 0);
  for (int i = 0; i < 4; i++)
    if (got[i][0] != '\0') fprintf(stderr, "row %d: %s\n", i, got[i]);
  laminar_subscription_close(sub);
  laminar_subscription_close(dead);
  CHECK_CODE(laminar_close_v2(db, &err), LAMINAR_OK, &err);
  lm_test_rmtree(dir);
  return 0;
#endif
}

/* format = 'avro': rows through an Avro sink and back through an Avro
 * source, NULLs included, and a truncated Avro record to the dead-letter
 * source (Avro C's paths under the sanitizers too). */
static int test_avro_round_trip(void) {
#ifndef LAMINAR_HAVE_KAFKA
  return lm_test_skip("built without librdkafka (the refusal cases check LDB-1005)");
#else
  const char* bootstrap = lm_test_kafka_bootstrap();
  if (bootstrap == NULL)
    return lm_test_skip(
        "no broker: LAMINAR_KAFKA_BOOTSTRAP is unset (scripts/test.sh starts one)");
  char dir[256], sql[2048], topic[64];
  CHECK(lm_test_mkdtemp(dir, sizeof dir, "lm_kafka_") == 0);
  snprintf(topic, sizeof topic, "a-%s", strrchr(dir, '_') + 1);
  CHECK(lm_test_kafka_create_topic(bootstrap, topic, 1) == 0);
  laminar_db* db;
  laminar_error err;
  CHECK_CODE(open_durable(dir, &db, &err), LAMINAR_OK, &err);
  snprintf(
      sql, sizeof sql,
      "CREATE SOURCE trades (symbol VARCHAR, price DOUBLE, volume BIGINT, ts BIGINT);"
      "CREATE STREAM s AS SELECT * FROM trades;"
      "CREATE SINK out FROM s WITH (connector = 'kafka', 'bootstrap.servers' = "
      "'%s', topic = '%s', format = 'avro', key = 'symbol');",
      bootstrap, topic);
  laminar_code rc = laminar_execute(db, sql, &err);
  if (rc == LAMINAR_ERR_SQL_UNSUPPORTED && strstr(err.message, "without Avro") != NULL) {
    laminar_close_v2(db, &err); /* a build without Avro C says so */
    lm_test_rmtree(dir);
    return lm_test_skip("built without Avro C (libavro-dev)");
  }
  CHECK_CODE(rc, LAMINAR_OK, &err);
  const trade_row rows[] = {{"A", 1.5, false, 10, false, 1},
                            {"B", 2.5, true, 20, false, 2},
                            {NULL, 3.5, false, 30, false, 3}};
  struct ArrowArray arr;
  struct ArrowSchema schema;
  CHECK(build_trades(rows, 3, false, &arr, &schema) == 0);
  laminar_source* src;
  CHECK_CODE(laminar_source_open(db, "trades", &src, &err), LAMINAR_OK, &err);
  CHECK_CODE(laminar_source_push(src, &arr, &schema, &err), LAMINAR_OK, &err);
  schema.release(&schema);
  laminar_source_close(src);
  CHECK_CODE(laminar_run_until_idle(db, &err), LAMINAR_OK, &err);
  CHECK_CODE(laminar_checkpoint(db, &err), LAMINAR_OK, &err);
  CHECK_CODE(laminar_close_v2(db, &err), LAMINAR_OK, &err);
  static const char* const truncated[] = {"\x02\x02"};
  static const int32_t part0[] = {0};
  CHECK(lm_test_kafka_produce(bootstrap, topic, part0, NULL, truncated, 1) == 0);
  CHECK_CODE(laminar_open(NULL, &db, &err), LAMINAR_OK, &err);
  snprintf(sql, sizeof sql,
           "CREATE SOURCE bad (_offset BIGINT, reason VARCHAR);"
           "CREATE SOURCE back (symbol VARCHAR, price DOUBLE, volume BIGINT, ts BIGINT) "
           "WITH (connector = 'kafka', 'bootstrap.servers' = '%s', topic = '%s', "
           "format = 'avro', bad_records = 'bad');"
           "CREATE STREAM seen AS SELECT coalesce(symbol, '-') || '|' || "
           "coalesce(CAST(price AS VARCHAR), '-') || '|' || CAST(volume AS VARCHAR) || "
           "'|' || CAST(ts AS VARCHAR) AS x FROM back;"
           "CREATE STREAM d AS SELECT CAST(_offset AS VARCHAR) || '|' || reason AS x "
           "FROM bad;",
           bootstrap, topic);
  CHECK_CODE(laminar_execute(db, sql, &err), LAMINAR_OK, &err);
  laminar_subscription *sub, *dead;
  CHECK_CODE(laminar_subscribe(db, "seen", &sub, &err), LAMINAR_OK, &err);
  CHECK_CODE(laminar_subscribe(db, "d", &dead, &err), LAMINAR_OK, &err);
  CHECK_CODE(laminar_start(db, &err), LAMINAR_OK, &err);
  char got[4][128] = {{0}};
  int n = 0, nd = 0;
  struct timespec t0;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  while ((n < 3 || nd < 1) && seconds_since(&t0) < 30.0) {
    for (int which = 0; which < 2; which++) {
      struct ArrowArray out;
      struct ArrowSchema out_schema;
      CHECK_CODE(
          laminar_subscription_next(which == 0 ? sub : dead, 50, &out, &out_schema, &err),
          LAMINAR_OK, &err);
      if (out.release == NULL) continue;
      const int32_t* off = (const int32_t*)out.children[0]->buffers[1];
      const char* data = (const char*)out.children[0]->buffers[2];
      for (int64_t i = 0; i < out.length; i++) {
        int64_t r = out.children[0]->offset + i;
        int at = which == 0 ? n++ : 3 + nd++;
        if (at < 4)
          snprintf(got[at], sizeof got[at], "%.*s", (int)(off[r + 1] - off[r]),
                   data + off[r]);
      }
      out.release(&out);
      out_schema.release(&out_schema);
    }
  }
  for (int i = 0; i < 4; i++) fprintf(stderr, "row %d: %s\n", i, got[i]);
  EXPECT(n == 3 && nd == 1);
  qsort(got, 3, sizeof got[0], cmp_text);
  EXPECT(strcmp(got[0], "-|3.5|30|3") == 0);
  EXPECT(strcmp(got[1], "A|1.5|10|1") == 0);
  EXPECT(strcmp(got[2], "B|-|20|2") == 0);
  const char* bar = strchr(got[3], '|'); /* the offset (transaction markers take some) */
  EXPECT(bar != NULL && strcmp(bar, "|not an Avro record of the schema") == 0);
  laminar_subscription_close(sub);
  laminar_subscription_close(dead);
  CHECK_CODE(laminar_close_v2(db, &err), LAMINAR_OK, &err);
  lm_test_rmtree(dir);
  return 0;
#endif
}

/* format = 'avro' over random bytes (seeded, printed; some made of a valid
 * record's prefix): every message is a row or a dead letter, none is lost,
 * nothing crashes or leaks (under the sanitizers). */
static int test_avro_random_bytes(void) {
#ifndef LAMINAR_HAVE_KAFKA
  return lm_test_skip("built without librdkafka (the refusal cases check LDB-1005)");
#else
  const char* bootstrap = lm_test_kafka_bootstrap();
  if (bootstrap == NULL)
    return lm_test_skip(
        "no broker: LAMINAR_KAFKA_BOOTSTRAP is unset (scripts/test.sh starts one)");
  char dir[256], sql[1024], topic[64];
  CHECK(lm_test_mkdtemp(dir, sizeof dir, "lm_kafka_") == 0);
  snprintf(topic, sizeof topic, "z-%s", strrchr(dir, '_') + 1);
  CHECK(lm_test_kafka_create_topic(bootstrap, topic, 1) == 0);
  uint64_t state = lm_test_seed();
  enum { N = 300 };
  static char text[N][48];
  const char* values[N];
  int32_t parts[N];
  /* A valid record of (s VARCHAR, v BIGINT): "\x02\x06abc\x02\x54". */
  static const char valid[] =
      "\x02\x06"
      "abc"
      "\x02\x54";
  for (int i = 0; i < N; i++) {
    size_t len = 1 + lm_test_rand(&state) % 40;
    bool from_valid = lm_test_rand(&state) % 3 == 0;
    if (from_valid && lm_test_rand(&state) % 2 == 0) len = sizeof valid - 1; /* whole */
    for (size_t k = 0; k < len; k++) {
      char c = (char)(1 + lm_test_rand(&state) % 255); /* no NUL: strlen */
      text[i][k] = from_valid && k < sizeof valid - 1 ? valid[k] : c;
    }
    text[i][len] = '\0';
    values[i] = text[i];
    parts[i] = 0;
  }
  CHECK(lm_test_kafka_produce(bootstrap, topic, parts, NULL, values, N) == 0);
  laminar_db* db;
  laminar_error err;
  CHECK_CODE(laminar_open(NULL, &db, &err), LAMINAR_OK, &err);
  snprintf(sql, sizeof sql,
           "CREATE SOURCE bad (_offset BIGINT, payload VARCHAR, reason VARCHAR);"
           "CREATE SOURCE t (s VARCHAR, v BIGINT, _offset BIGINT) WITH (connector = "
           "'kafka', 'bootstrap.servers' = '%s', topic = '%s', format = 'avro', "
           "bad_records = 'bad');"
           "CREATE STREAM a AS SELECT _offset FROM t;"
           "CREATE STREAM b AS SELECT _offset FROM bad;",
           bootstrap, topic);
  laminar_code rc = laminar_execute(db, sql, &err);
  if (rc == LAMINAR_ERR_SQL_UNSUPPORTED && strstr(err.message, "without Avro") != NULL) {
    laminar_close_v2(db, &err);
    lm_test_rmtree(dir);
    return lm_test_skip("built without Avro C (libavro-dev)");
  }
  CHECK_CODE(rc, LAMINAR_OK, &err);
  laminar_subscription *sa, *sb;
  CHECK_CODE(laminar_subscribe(db, "a", &sa, &err), LAMINAR_OK, &err);
  CHECK_CODE(laminar_subscribe(db, "b", &sb, &err), LAMINAR_OK, &err);
  CHECK_CODE(laminar_start(db, &err), LAMINAR_OK, &err);
  static bool seen[N];
  int64_t rows = 0, dead = 0, dup = 0;
  struct timespec t0;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  while (rows + dead < N && seconds_since(&t0) < 60.0) {
    for (int which = 0; which < 2; which++) {
      struct ArrowArray out;
      struct ArrowSchema out_schema;
      CHECK_CODE(
          laminar_subscription_next(which == 0 ? sa : sb, 50, &out, &out_schema, &err),
          LAMINAR_OK, &err);
      if (out.release == NULL) continue;
      const int64_t* off = (const int64_t*)out.children[0]->buffers[1];
      for (int64_t i = 0; i < out.length; i++) {
        int64_t o = off[out.children[0]->offset + i];
        if (o >= 0 && o < N && seen[o]) dup++;
        if (o >= 0 && o < N) seen[o] = true;
      }
      *(which == 0 ? &rows : &dead) += out.length;
      out.release(&out);
      out_schema.release(&out_schema);
    }
  }
  fprintf(stderr, "random Avro: %lld rows, %lld dead letters\n", (long long)rows,
          (long long)dead);
  EXPECT(rows + dead == N);
  EXPECT(dup == 0);
  EXPECT(dead > 0 && rows > 0);
  laminar_subscription_close(sa);
  laminar_subscription_close(sb);
  CHECK_CODE(laminar_close_v2(db, &err), LAMINAR_OK, &err);
  lm_test_rmtree(dir);
  return 0;
#endif
}

static const lm_test_case cases[] = {
    {"round_trip", test_round_trip},
    {"offsets_log_compacted", test_offsets_log_compacted},
    {"raw_headers_dead_letter", test_raw_headers_dead_letter},
    {"avro_round_trip", test_avro_round_trip},
    {"avro_random_bytes", test_avro_random_bytes},
    {"sink_refusals", test_sink_refusals},
    {"sink_needs_durability", test_sink_needs_durability},
    {"source_refusals", test_source_refusals},
    {NULL, NULL}};

int main(int argc, char** argv) { return lm_test_main(argc, argv, cases); }
