/*
 * bench_kafka.c -- the Kafka source and sink against a real broker (issue 24
 * "Speed"), each figure as a ratio to librdkafka's own consume rate of the
 * same topic in the same run.
 *
 *   bench_kafka BOOTSTRAP [N] [REPS] [json|csv|both]
 *
 * (a local broker: `scripts/kafka.sh start` prints BOOTSTRAP; bench/run.sh starts one
 * of its own with tests/kafka/broker.sh)
 *
 * Data: N (default 10^6) W1 trades of the limit_vwap.c spec (event i: z =
 * splitmix64_mix((i+1)*0x9E3779B97F4A7C15), symbol 'S%03d' % (z%100), volume
 * 1+(z>>8)%1000, price 100+((z>>24)%100000)/1000.0, ts 1700000000000+i) as JSON
 * objects (and, with csv or both, the default, as CSV lines into a second
 * topic), event i to partition i % 4 of a fresh 4-partition topic (written
 * once, not timed). Then for each format, REPS times (default 3, medians
 * printed):
 *   bare:    a librdkafka consumer assigned the 4 partitions from their start
 *            that only touches each payload (sums its first byte): the limit
 *            for any Kafka source on this machine;
 *   source:  CREATE SOURCE ... WITH (connector = 'kafka') on an in-memory
 *            database with laminar_start, timed from the CREATE until its
 *            pushed_rows metric reaches N (consume + JSON decode + push);
 *   e2e:     the same source into W1 (1-second tumbling VWAP per symbol) into
 *            an exactly-once Kafka sink on a durable database (wal_mode none,
 *            checkpoints by hand), timed until every row is in and a last
 *            checkpoint published the windows.
 * Prints each rate in events/s and source/bare and e2e/bare (the issue's
 * targets: >= 0.5 and >= 0.3), and for bench/run.sh the lines
 * `RESULT kafka_<format>_<bare|source|e2e> X M rows/s [ratio R]`; the JSON
 * topic's name (`kafka: json topic NAME`) is what bench/bench_kafka.py reads.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE  // mkdtemp, nanosleep under -std=c17
#endif

#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../tests/c/lm_test_metrics.h" /* lm_test_metric */
#include "laminar.h"

#ifdef LAMINAR_HAVE_KAFKA
#include <librdkafka/rdkafka.h>

#define NPART 4

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static uint64_t mix(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

static rd_kafka_t* client(const char* bootstrap, rd_kafka_type_t type,
                          const char* const* kv) {
  char errstr[512];
  rd_kafka_conf_t* conf = rd_kafka_conf_new();
  rd_kafka_conf_set(conf, "bootstrap.servers", bootstrap, errstr, sizeof errstr);
  for (; kv != NULL && kv[0] != NULL; kv += 2)
    if (rd_kafka_conf_set(conf, kv[0], kv[1], errstr, sizeof errstr) != RD_KAFKA_CONF_OK)
      fprintf(stderr, "%s: %s\n", kv[0], errstr);
  rd_kafka_t* rk = rd_kafka_new(type, conf, errstr, sizeof errstr);
  if (rk == NULL) {
    fprintf(stderr, "kafka client: %s\n", errstr);
    exit(1);
  }
  return rk;
}

static void create_topic(const char* bootstrap, const char* name, int partitions) {
  char errstr[512];
  rd_kafka_t* rk = client(bootstrap, RD_KAFKA_PRODUCER, NULL);
  rd_kafka_NewTopic_t* nt =
      rd_kafka_NewTopic_new(name, partitions, 1, errstr, sizeof errstr);
  rd_kafka_queue_t* q = rd_kafka_queue_new(rk);
  rd_kafka_CreateTopics(rk, &nt, 1, NULL, q);
  rd_kafka_event_t* ev = rd_kafka_queue_poll(q, 30000);
  if (ev != NULL) rd_kafka_event_destroy(ev);
  rd_kafka_queue_destroy(q);
  rd_kafka_NewTopic_destroy(nt);
  rd_kafka_destroy(rk);
}

static void write_input(const char* bootstrap, const char* topic, int64_t n, bool csv) {
  static const char* const kv[] = {
      "linger.ms", "20", "batch.size", "1000000", "queue.buffering.max.messages",
      "1000000",   NULL};
  rd_kafka_t* rk = client(bootstrap, RD_KAFKA_PRODUCER, kv);
  rd_kafka_topic_t* t = rd_kafka_topic_new(rk, topic, NULL);
  char buf[160];
  for (int64_t i = 0; i < n; i++) {
    uint64_t z = mix((uint64_t)(i + 1) * 0x9E3779B97F4A7C15ULL);
    int len = snprintf(
        buf, sizeof buf,
        csv ? "S%03d,%.3f,%d,%" PRId64
            : "{\"symbol\":\"S%03d\",\"price\":%.3f,\"volume\":%d,\"ts\":%" PRId64 "}",
        (int)(z % 100), 100.0 + (double)((z >> 24) % 100000) / 1000.0,
        (int)(1 + (z >> 8) % 1000), INT64_C(1700000000000) + i);
    while (rd_kafka_produce(t, (int32_t)(i % NPART), RD_KAFKA_MSG_F_COPY, buf,
                            (size_t)len, NULL, 0, NULL) != 0)
      rd_kafka_poll(rk, 10);
    rd_kafka_poll(rk, 0);
  }
  rd_kafka_flush(rk, 120000);
  rd_kafka_topic_destroy(t);
  rd_kafka_destroy(rk);
}

/* The bare consumer: seconds to read n messages. */
static double bare(const char* bootstrap, const char* topic, int64_t n) {
  static const char* const kv[] = {"group.id", "bench-bare", "enable.auto.commit",
                                   "false", NULL};
  rd_kafka_t* rk = client(bootstrap, RD_KAFKA_CONSUMER, kv);
  rd_kafka_topic_partition_list_t* l = rd_kafka_topic_partition_list_new(NPART);
  for (int p = 0; p < NPART; p++)
    rd_kafka_topic_partition_list_add(l, topic, p)->offset = RD_KAFKA_OFFSET_BEGINNING;
  double t0 = now_s();
  rd_kafka_assign(rk, l);
  rd_kafka_topic_partition_list_destroy(l);
  int64_t got = 0;
  uint64_t touch = 0;
  while (got < n) {
    rd_kafka_message_t* m = rd_kafka_consumer_poll(rk, 100);
    if (m == NULL) continue;
    if (m->err == RD_KAFKA_RESP_ERR_NO_ERROR) {
      got++;
      if (m->len > 0) touch += ((const unsigned char*)m->payload)[0];
    }
    rd_kafka_message_destroy(m);
  }
  double took = now_s() - t0;
  rd_kafka_consumer_close(rk);
  rd_kafka_destroy(rk);
  if (touch == 0) fprintf(stderr, "bare: no payload\n");
  return took;
}

static void check(laminar_code rc, const laminar_error* err, const char* what) {
  if (rc == LAMINAR_OK) return;
  fprintf(stderr, "%s: %s\n", what, err->message);
  exit(1);
}

/* Our source (and with `e2e`, W1 and an exactly-once sink): seconds. */
static double ours(const char* bootstrap, const char* topic, int64_t n, bool csv,
                   bool e2e, int rep) {
  laminar_db* db;
  laminar_error err;
  char dir[64] = "";
  laminar_config* c = NULL;
  if (e2e) {
    snprintf(dir, sizeof dir, "/tmp/bench_kafka_XXXXXX");
    if (mkdtemp(dir) == NULL) exit(1);
    laminar_config_create(&c);
    check(laminar_config_set(c, "data_dir", dir, &err), &err, "data_dir");
    check(laminar_config_set(c, "checkpoint_interval", "1 hour", &err), &err, "interval");
    check(laminar_config_set(c, "wal_mode", "none", &err), &err, "wal_mode");
  }
  check(laminar_open(c, &db, &err), &err, "open");
  laminar_config_destroy(c);
  char out[96], sql[2048];
  snprintf(out, sizeof out, "%s-out-%d", topic, rep);
  if (e2e) create_topic(bootstrap, out, 1);
  int len = snprintf(
      sql, sizeof sql,
      "CREATE SOURCE trades (symbol VARCHAR NOT NULL, price DOUBLE, volume BIGINT, ts "
      "BIGINT, WATERMARK FOR ts AS ts) WITH (connector = 'kafka', 'bootstrap.servers' = "
      "'%s', topic = '%s', format = '%s', partition_discovery_interval = 'none');",
      bootstrap, topic, csv ? "csv" : "json");
  if (e2e)
    snprintf(
        sql + len, sizeof sql - (size_t)len,
        "CREATE STREAM w1 AS SELECT window_start, symbol, SUM(price * volume) / "
        "SUM(volume) AS vwap, COUNT(*) AS trades, MAX(price) AS hi, MIN(price) AS lo "
        "FROM trades GROUP BY symbol, tumble(ts, INTERVAL '1' SECOND) EMIT ON WINDOW "
        "CLOSE;"
        "CREATE SINK out FROM w1 WITH (connector = 'kafka', 'bootstrap.servers' = "
        "'%s', topic = '%s', key = 'symbol', transactional_id = '%s');",
        bootstrap, out, out);
  check(laminar_start(db, &err), &err, "start");
  double t0 = now_s();
  check(laminar_execute(db, sql, &err), &err, "create");
  struct timespec tick = {0, 5 * 1000 * 1000};
  while (lm_test_metric(db, "source", "trades", "pushed_rows") < n)
    nanosleep(&tick, NULL);
  double in = now_s() - t0;
  if (e2e) check(laminar_checkpoint(db, &err), &err, "checkpoint");
  double took = now_s() - t0;
  if (e2e)
    printf("kafka: e2e: every row in after %.3f s, last checkpoint %.3f s\n", in,
           took - in);
  check(laminar_close_v2(db, &err), &err, "close");
  if (e2e) {
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", dir);
  }
  return took;
}

static int cmp_double(const void* a, const void* b) {
  double x = *(const double*)a, y = *(const double*)b;
  return x < y ? -1 : x > y;
}

static double median(double* v, int n) {
  qsort(v, (size_t)n, sizeof *v, cmp_double);
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* bare, source and e2e over one topic of `format`, `reps` times: medians. */
static void run_format(const char* bootstrap, int64_t n, int reps, bool csv) {
  const char* fmt = csv ? "csv" : "json";
  char topic[96];
  snprintf(topic, sizeof topic, "bench-w1-%s-%ld-%d", fmt, (long)time(NULL),
           (int)getpid());
  create_topic(bootstrap, topic, NPART);
  double t0 = now_s();
  write_input(bootstrap, topic, n, csv);
  printf("kafka: %" PRId64 " W1 trades (%s) into %s, %d partitions, in %.1f s\n", n, fmt,
         topic, NPART, now_s() - t0);
  printf("kafka: %s topic %s\n", fmt, topic);
  double b[20], s[20], e[20];
  for (int r = 0; r < reps; r++) {
    b[r] = bare(bootstrap, topic, n);
    s[r] = ours(bootstrap, topic, n, csv, false, r);
    e[r] = ours(bootstrap, topic, n, csv, true, r);
    printf("kafka: %s rep %d: bare %.3f s, source %.3f s, e2e %.3f s\n", fmt, r, b[r],
           s[r], e[r]);
    fflush(stdout);
  }
  double mb = median(b, reps), ms = median(s, reps), me = median(e, reps);
  printf("kafka: %s: bare librdkafka consume   %12.0f events/s\n", fmt, (double)n / mb);
  printf(
      "kafka: %s: source consume+decode     %12.0f events/s  ratio %.2f (target >= "
      "0.5)\n",
      fmt, (double)n / ms, mb / ms);
  printf(
      "kafka: %s: end to end W1, EO sink    %12.0f events/s  ratio %.2f (target >= "
      "0.3)\n",
      fmt, (double)n / me, mb / me);
  printf("RESULT kafka_%s_bare %.3f M rows/s\n", fmt, (double)n / mb / 1e6);
  printf("RESULT kafka_%s_source %.3f M rows/s ratio %.2f\n", fmt, (double)n / ms / 1e6,
         mb / ms);
  printf("RESULT kafka_%s_e2e %.3f M rows/s ratio %.2f\n", fmt, (double)n / me / 1e6,
         mb / me);
  fflush(stdout);
}

int main(int argc, char** argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: bench_kafka BOOTSTRAP [N] [REPS] [json|csv|both]\n");
    return 2;
  }
  const char* bootstrap = argv[1];
  int64_t n = argc > 2 ? (int64_t)strtod(argv[2], NULL) : 1000000;
  int reps = argc > 3 ? atoi(argv[3]) : 3;
  const char* which = argc > 4 ? argv[4] : "both";
  bool json = strcmp(which, "json") == 0 || strcmp(which, "both") == 0;
  bool csv = strcmp(which, "csv") == 0 || strcmp(which, "both") == 0;
  if (n <= 0 || reps <= 0 || reps > 20 || (!json && !csv)) return 2;
  if (json) run_format(bootstrap, n, reps, false);
  if (csv) run_format(bootstrap, n, reps, true);
  return 0;
}

#else
int main(void) {
  fprintf(stderr, "bench_kafka: built without Kafka (librdkafka)\n");
  return 2;
}
#endif
