/*
 * test_rt_cores.c -- thread-per-core (config `cores`) through laminar.h only,
 * run under ASan+UBSan and TSan.
 *
 * The proof: cores = 2, 4 producer threads on cloned handles of one source,
 * 3 subscribers of a keyed stream (EMIT CHANGES running COUNT / MAX grouped by
 * the plain columns p, k: two partitions) and 1 subscriber of a plain stream
 * (reactor 0). Producer p pushes rows (p, seq, k = seq % NK) for seq = 0, 1,
 * ... Each keyed subscriber checks every change row of key (p, k): +1 rows
 * have a strictly growing count and max(seq) == k + NK * (count - 1) (the
 * key's rows so far, each counted once, in order), every -1 row retracts the
 * key's previous +1 row, and the last count is the key's row count. The plain
 * subscriber checks every row once, in order per producer.
 * Also: the config errors, core_affinity, the per-reactor metrics, and a
 * window over a UNION ALL of two sources run as partitions while one
 * producer per source pushes concurrently (the cores = 1 inline totals).
 */
/* lm_ctest: LABELS unit concurrency TIMEOUT 300 */
#define _GNU_SOURCE /* clock_gettime */

#include "laminar.h"

#include "lm_test.h"
#include "lm_test_seq.h"
#include "lm_test_metrics.h"
#include "nanoarrow/nanoarrow.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* 10^7 rows in every build (about 8 s under TSan on 2 cores). */
#define PROOF_ROWS 10000000
#define DEADLINE_MS 240000

enum { NPROD = 4, NSUBS = 3, NK = 16, MAXP = 8 };

/* ---- readers ------------------------------------------------------------------------- */

typedef struct reader {
  laminar_subscription* sub;
  bool keyed;   /* the EMIT CHANGES stream (else the plain one) */
  int64_t want; /* plain: rows; keyed: rows counted over all keys */
  /* keyed: per key (p, k) the last +1 row's count and max; plain: next seq */
  int64_t cnt[MAXP][NK];
  int64_t mx[MAXP][NK];
  bool live[MAXP][NK]; /* a +1 row stands (not yet retracted) */
  int64_t next[MAXP];
  int64_t total; /* keyed: sum of the standing counts; plain: rows */
  int64_t batches;
  int rc;
} reader;

static const int64_t* col(const struct ArrowArray* a, int c) {
  return (const int64_t*)a->children[c]->buffers[1] + a->offset + a->children[c]->offset;
}

static int reader_batch(reader* r, const struct ArrowArray* a) {
  if (!r->keyed) {
    CHECK(a->n_children == 3);
    const int64_t *p = col(a, 0), *s = col(a, 1);
    for (int64_t i = 0; i < a->length; i++) {
      CHECK(p[i] >= 0 && p[i] < MAXP);
      if (s[i] != r->next[p[i]]) {
        fprintf(stderr, "plain: producer %lld seq %lld, want %lld\n", (long long)p[i],
                (long long)s[i], (long long)r->next[p[i]]);
        return 1;
      }
      r->next[p[i]]++;
      r->total++;
    }
    return 0;
  }
  /* p, k, c, m, _weight */
  CHECK(a->n_children == 5);
  const int64_t *p = col(a, 0), *k = col(a, 1), *c = col(a, 2), *m = col(a, 3),
                *w = col(a, 4);
  for (int64_t i = 0; i < a->length; i++) {
    CHECK(p[i] >= 0 && p[i] < MAXP && k[i] >= 0 && k[i] < NK);
    int64_t pi = p[i], ki = k[i];
    if (w[i] == -1) {
      /* retracts the key's standing row */
      if (!r->live[pi][ki] || r->cnt[pi][ki] != c[i] || r->mx[pi][ki] != m[i]) {
        fprintf(stderr, "keyed: bad retraction of (%lld, %lld) count %lld\n",
                (long long)pi, (long long)ki, (long long)c[i]);
        return 1;
      }
      r->live[pi][ki] = false;
      r->total -= c[i];
    } else {
      CHECK(w[i] == 1);
      if (r->live[pi][ki] || c[i] <= r->cnt[pi][ki] || m[i] != ki + NK * (c[i] - 1)) {
        fprintf(stderr, "keyed: (%lld, %lld) count %lld max %lld after count %lld\n",
                (long long)pi, (long long)ki, (long long)c[i], (long long)m[i],
                (long long)r->cnt[pi][ki]);
        return 1;
      }
      r->live[pi][ki] = true;
      r->cnt[pi][ki] = c[i];
      r->mx[pi][ki] = m[i];
      r->total += c[i];
    }
  }
  return 0;
}

static int reader_run(reader* r) {
  int64_t deadline = lm_test_now_ms() + DEADLINE_MS;
  while (r->total < r->want) {
    if (lm_test_now_ms() > deadline) {
      fprintf(stderr, "reader: timed out at %lld of %lld\n", (long long)r->total,
              (long long)r->want);
      return 1;
    }
    struct ArrowArray a;
    laminar_error err;
    CHECK_CODE(laminar_subscription_next(r->sub, 100, &a, NULL, &err), LAMINAR_OK, &err);
    if (a.release == NULL) continue;
    int bad = reader_batch(r, &a);
    a.release(&a);
    r->batches++;
    CHECK(bad == 0);
  }
  CHECK(r->total == r->want);
  return 0;
}

static void* reader_main(void* arg) {
  reader* r = arg;
  r->rc = reader_run(r);
  return NULL;
}

/* ---- producers ------------------------------------------------------------------------ */

typedef struct producer {
  laminar_source* src;
  int64_t id, rows, batch_rows;
  bool use_push_batch;
  int rc;
} producer;

static int producer_run(producer* p) {
  struct ArrowSchema schema;
  CHECK(lm_test_seq_schema(&schema, 3) == 0);
  int rc = 0;
  for (int64_t seq = 0; seq < p->rows && rc == 0;) {
    struct ArrowArray arr[4];
    int64_t counts[4];
    int n = lm_test_seq_batches(&schema, p->id, &seq, p->rows, p->batch_rows,
                                p->use_push_batch ? 4 : 1, NK, arr, counts);
    if (n < 0) {
      rc = 1;
      break;
    }
    laminar_error err;
    int64_t pushed = 0;
    laminar_code code =
        n == 1 ? laminar_source_push(p->src, &arr[0], &schema, &err)
               : laminar_source_push_batch(p->src, arr, n, &schema, &pushed, &err);
    if (code != LAMINAR_OK) {
      fprintf(stderr, "producer %lld: %s\n", (long long)p->id, err.message);
      for (int i = 0; i < n; i++) {
        if (arr[i].release != NULL) arr[i].release(&arr[i]);
      }
      rc = 1;
    }
  }
  schema.release(&schema);
  return rc;
}

static void* producer_main(void* arg) {
  producer* p = arg;
  p->rc = producer_run(p);
  return NULL;
}

/* ---- cases ---------------------------------------------------------------------------- */

static int open_cfg(const char* const* kv, laminar_db** out) {
  laminar_error err;
  laminar_config* cfg;
  CHECK_CODE(laminar_config_create(&cfg), LAMINAR_OK, NULL);
  for (int i = 0; kv[i] != NULL; i += 2) {
    laminar_code rc = laminar_config_set(cfg, kv[i], kv[i + 1], &err);
    if (rc != LAMINAR_OK) laminar_config_destroy(cfg);
    CHECK_CODE(rc, LAMINAR_OK, &err);
  }
  laminar_code rc = laminar_open(cfg, out, &err);
  laminar_config_destroy(cfg);
  CHECK_CODE(rc, LAMINAR_OK, &err);
  return 0;
}

static const char* DDL =
    "CREATE SOURCE t (p BIGINT NOT NULL, seq BIGINT NOT NULL, k BIGINT NOT NULL);"
    "CREATE STREAM keyed AS SELECT p, k, COUNT(*) AS c, MAX(seq) AS m FROM t "
    "GROUP BY p, k EMIT CHANGES;"
    "CREATE STREAM plain AS SELECT p, seq, k FROM t;";

static int test_four_producers_three_subscribers(bool affinity) {
  laminar_db* db;
  laminar_error err;
  const char* cfg[] = {
      "cores", "2", "buffer_size", "1024", "core_affinity", affinity ? "true" : "false",
      NULL};
  CHECK(open_cfg(cfg, &db) == 0);
  CHECK_CODE(laminar_execute(db, DDL, &err), LAMINAR_OK, &err);
  EXPECT(lm_test_metric(db, "stream", "keyed", "partitions") == 2);
  EXPECT(lm_test_metric(db, "stream", "plain", "partitions") == 1);
  int64_t rows = affinity ? PROOF_ROWS / 10 : PROOF_ROWS;
  int64_t per = rows / NPROD;
  reader* rd = calloc(NSUBS + 1, sizeof *rd);
  CHECK(rd != NULL);
  for (int i = 0; i <= NSUBS; i++) {
    rd[i].keyed = i < NSUBS;
    rd[i].want = per * NPROD;
    CHECK_CODE(laminar_subscribe(db, rd[i].keyed ? "keyed" : "plain", &rd[i].sub, &err),
               LAMINAR_OK, &err);
  }
  CHECK_CODE(laminar_start(db, &err), LAMINAR_OK, &err);
  pthread_t tr[NSUBS + 1], tp[NPROD];
  for (int i = 0; i <= NSUBS; i++)
    CHECK(pthread_create(&tr[i], NULL, reader_main, &rd[i]) == 0);
  producer pr[NPROD];
  memset(pr, 0, sizeof pr);
  CHECK_CODE(laminar_source_open(db, "t", &pr[0].src, &err), LAMINAR_OK, &err);
  for (int i = 1; i < NPROD; i++) {
    CHECK_CODE(laminar_source_clone(pr[0].src, &pr[i].src, &err), LAMINAR_OK, &err);
  }
  int64_t t0 = lm_test_now_ms();
  for (int i = 0; i < NPROD; i++) {
    pr[i].id = i;
    pr[i].rows = per;
    pr[i].batch_rows = i % 2 ? 1000 : 997;
    pr[i].use_push_batch = i >= 2;
    CHECK(pthread_create(&tp[i], NULL, producer_main, &pr[i]) == 0);
  }
  for (int i = 0; i < NPROD; i++) pthread_join(tp[i], NULL);
  for (int i = 0; i <= NSUBS; i++) pthread_join(tr[i], NULL);
  int64_t ms = lm_test_now_ms() - t0;
  CHECK_CODE(laminar_stop(db, &err), LAMINAR_OK, &err);
  for (int i = 0; i < NPROD; i++) EXPECT(pr[i].rc == 0);
  for (int i = 0; i <= NSUBS; i++) {
    EXPECT(rd[i].rc == 0);
    EXPECT(rd[i].total == per * NPROD);
    for (int p = 0; p < NPROD; p++) {
      if (!rd[i].keyed) EXPECT(rd[i].next[p] == per);
      for (int k = 0; rd[i].keyed && k < NK; k++) {
        EXPECT(rd[i].cnt[p][k] == per / NK + (k < per % NK ? 1 : 0));
      }
    }
  }
  /* Both reactors took rows of the keyed stream (16 x 4 keys spread by hash). */
  int64_t r0 = lm_test_metric(db, "reactor", "0", "rows");
  int64_t r1 = lm_test_metric(db, "reactor", "1", "rows");
  EXPECT(r0 > 0 && r1 > 0 && r0 + r1 == per * NPROD);
  EXPECT(lm_test_metric(db, "reactor", "1", "rounds") > 0);
  EXPECT(lm_test_metric(db, "stream", "keyed", "state_groups") == NPROD * NK);
  printf(
      "cores=2 affinity=%d rows=%lld producers=%d keyed subscribers=%d: every row once, "
      "per-key order held; reactor rows %lld / %lld; %lld ms\n",
      affinity, (long long)(per * NPROD), NPROD, NSUBS, (long long)r0, (long long)r1,
      (long long)ms);
  for (int i = 0; i <= NSUBS; i++) laminar_subscription_close(rd[i].sub);
  for (int i = 0; i < NPROD; i++) laminar_source_close(pr[i].src);
  free(rd);
  laminar_close(db);
  return 0;
}

static int test_config_errors(void) {
  laminar_config* cfg;
  laminar_error err;
  CHECK_CODE(laminar_config_create(&cfg), LAMINAR_OK, NULL);
  static const char* bad_cores[] = {"0", "65", "two", "-1", "2x", ""};
  for (size_t i = 0; i < sizeof bad_cores / sizeof *bad_cores; i++) {
    EXPECT(laminar_config_set(cfg, "cores", bad_cores[i], &err) ==
           LAMINAR_ERR_CONFIG_VALUE);
    EXPECT(strstr(err.message, "LDB-6002") == err.message);
  }
  EXPECT(laminar_config_set(cfg, "core_affinity", "maybe", &err) ==
         LAMINAR_ERR_CONFIG_VALUE);
  EXPECT(laminar_config_set(cfg, "cores", "64", &err) == LAMINAR_OK);
  EXPECT(laminar_config_set(cfg, "cores", "2", &err) == LAMINAR_OK);
  laminar_config_destroy(cfg);
  return 0;
}

/* Windows with a watermark: cores = 1 and cores = 3 inline give the same rows
 * (sum of every column checked), late rows summed over partitions. */
static int window_totals(const char* cores, int64_t out[4]) {
  laminar_db* db;
  laminar_error err;
  const char* cfg[] = {"cores", cores, NULL};
  CHECK(open_cfg(cfg, &db) == 0);
  CHECK_CODE(
      laminar_execute(
          db,
          "CREATE SOURCE t (p BIGINT NOT NULL, seq BIGINT NOT NULL, k BIGINT "
          "NOT NULL, WATERMARK FOR seq AS seq - INTERVAL '0' SECOND);"
          "CREATE STREAM w AS SELECT window_start, k, COUNT(*) AS c, SUM(p) AS s FROM t "
          "GROUP BY tumble(seq, INTERVAL '1' SECOND), k;",
          &err),
      LAMINAR_OK, &err);
  laminar_subscription* sub;
  CHECK_CODE(laminar_subscribe(db, "w", &sub, &err), LAMINAR_OK, &err);
  laminar_source* src;
  CHECK_CODE(laminar_source_open(db, "t", &src, &err), LAMINAR_OK, &err);
  struct ArrowSchema schema;
  CHECK(lm_test_seq_schema(&schema, 3) == 0);
  memset(out, 0, sizeof(int64_t) * 4);
  for (int64_t b = 0; b < 40; b++) {
    struct ArrowArray arr;
    /* seq jumps back by 1500 every 8th batch: some rows are late */
    int64_t first = b * 500 - (b % 8 == 7 ? 1500 : 0);
    CHECK(lm_test_seq_batch(&schema, b % 3, first, 500, NK, &arr) == 0);
    CHECK_CODE(laminar_source_push(src, &arr, &schema, &err), LAMINAR_OK, &err);
    CHECK_CODE(laminar_run_until_idle(db, &err), LAMINAR_OK, &err);
    for (;;) {
      struct ArrowArray a;
      CHECK_CODE(laminar_subscription_next(sub, 0, &a, NULL, &err), LAMINAR_OK, &err);
      if (a.release == NULL) break;
      /* window_start, k, c, s */
      CHECK(a.n_children == 4);
      for (int64_t i = 0; i < a.length; i++) {
        out[0] += col(&a, 1)[i] * 1000003 + col(&a, 0)[i];
        out[1] += col(&a, 2)[i];
        out[2] += col(&a, 3)[i];
      }
      a.release(&a);
    }
  }
  schema.release(&schema);
  out[3] = lm_test_metric(db, "stream", "w", "late_rows");
  laminar_source_close(src);
  laminar_subscription_close(sub);
  laminar_close(db);
  return 0;
}

static int test_windows_equal(void) {
  int64_t one[4], three[4];
  CHECK(window_totals("1", one) == 0);
  CHECK(window_totals("3", three) == 0);
  EXPECT(one[1] > 0 && one[3] > 0);
  for (int i = 0; i < 4; i++) EXPECT(one[i] == three[i]);
  return 0;
}

/* Idle with 2 reactors after a burst of work: under 5% of a core over 1 s (the
 * worker polls ~2 ms after its last round, then sleeps). */
static int test_idle_cpu(void) {
  laminar_db* db;
  laminar_error err;
  const char* cfg[] = {"cores", "2", NULL};
  CHECK(open_cfg(cfg, &db) == 0);
  CHECK_CODE(laminar_execute(db, DDL, &err), LAMINAR_OK, &err);
  laminar_source* src;
  CHECK_CODE(laminar_source_open(db, "t", &src, &err), LAMINAR_OK, &err);
  CHECK_CODE(laminar_start(db, &err), LAMINAR_OK, &err);
  struct ArrowSchema schema;
  CHECK(lm_test_seq_schema(&schema, 3) == 0);
  for (int b = 0; b < 20; b++) {
    struct ArrowArray arr;
    CHECK(lm_test_seq_batch(&schema, 0, b * 1000, 1000, NK, &arr) == 0);
    CHECK_CODE(laminar_source_push(src, &arr, &schema, &err), LAMINAR_OK, &err);
  }
  schema.release(&schema);
  /* Idle means the burst is done: both streams have taken every row (under
   * TSan on a loaded machine that can take seconds, not a fixed settle). */
  struct timespec tick = {0, 10000000};
  for (int i = 0; i < 2000 && (lm_test_metric(db, "stream", "keyed", "rows_in") < 20000 ||
                               lm_test_metric(db, "stream", "plain", "rows_in") < 20000);
       i++)
    nanosleep(&tick, NULL);
  EXPECT(lm_test_metric(db, "stream", "keyed", "rows_in") == 20000);
  EXPECT(lm_test_metric(db, "stream", "plain", "rows_in") == 20000);
  struct timespec settle = {0, 100000000}; /* past the workers' ~2 ms of polling */
  nanosleep(&settle, NULL);
  EXPECT(lm_test_metric(db, "reactor", "1", "rounds") > 0);
  EXPECT(lm_test_idle_cpu_share("cores=2") < 0.05);
  laminar_source_close(src);
  CHECK_CODE(laminar_close(db), LAMINAR_OK, NULL);
  return 0;
}

/* Catalog changes while 2 reactors run rounds: create a keyed stream,
 * subscribe, read metrics and pipeline state, drop it, again and again, with a
 * producer pushing all along (the pause drains the rounds in flight; under
 * TSan this checks the hand-over of partition state and outputs). */
typedef struct churn_producer {
  laminar_source* src;
  atomic_bool* stop;
  int64_t pushed;
  int rc;
} churn_producer;

static void* churn_producer_main(void* arg) {
  churn_producer* c = arg;
  struct ArrowSchema schema;
  if (lm_test_seq_schema(&schema, 3) != 0) {
    c->rc = 1;
    return NULL;
  }
  while (!atomic_load(c->stop)) {
    struct ArrowArray arr;
    laminar_error err;
    if (lm_test_seq_batch(&schema, 0, c->pushed, 500, NK, &arr) != 0) {
      c->rc = 1;
      break;
    }
    if (laminar_source_push(c->src, &arr, &schema, &err) != LAMINAR_OK) {
      fprintf(stderr, "churn push: %s\n", err.message);
      arr.release(&arr);
      c->rc = 1;
      break;
    }
    c->pushed += 500;
  }
  schema.release(&schema);
  return NULL;
}

static int test_catalog_churn(void) {
  laminar_db* db;
  laminar_error err;
  const char* cfg[] = {"cores", "2", "buffer_size", "64", NULL};
  CHECK(open_cfg(cfg, &db) == 0);
  CHECK_CODE(laminar_execute(db, DDL, &err), LAMINAR_OK, &err);
  laminar_subscription* keep;
  CHECK_CODE(laminar_subscribe_with(db, "keyed", "slow_subscriber = 'drop'", &keep, &err),
             LAMINAR_OK, &err);
  atomic_bool stop;
  atomic_init(&stop, false);
  churn_producer c = {.stop = &stop};
  CHECK_CODE(laminar_source_open(db, "t", &c.src, &err), LAMINAR_OK, &err);
  CHECK_CODE(laminar_start(db, &err), LAMINAR_OK, &err);
  pthread_t tp;
  CHECK(pthread_create(&tp, NULL, churn_producer_main, &c) == 0);
  for (int i = 0; i < 30; i++) {
    CHECK_CODE(laminar_execute(db,
                               "CREATE STREAM extra AS SELECT k, p, SUM(seq) AS s FROM t "
                               "GROUP BY k, p EMIT CHANGES",
                               &err),
               LAMINAR_OK, &err);
    laminar_subscription* sub;
    CHECK_CODE(
        laminar_subscribe_with(db, "extra", "slow_subscriber = 'drop'", &sub, &err),
        LAMINAR_OK, &err);
    EXPECT(lm_test_metric(db, "stream", "extra", "partitions") == 2);
    struct ArrowArrayStream st;
    CHECK_CODE(laminar_pipeline_state(db, &st, &err), LAMINAR_OK, &err);
    st.release(&st);
    struct ArrowArray a;
    CHECK_CODE(laminar_subscription_next(sub, 5, &a, NULL, &err), LAMINAR_OK, &err);
    if (a.release != NULL) a.release(&a);
    laminar_subscription_close(sub);
    CHECK_CODE(laminar_execute(db, "DROP STREAM extra", &err), LAMINAR_OK, &err);
  }
  atomic_store(&stop, true);
  pthread_join(tp, NULL);
  EXPECT(c.rc == 0);
  CHECK_CODE(laminar_stop(db, &err), LAMINAR_OK, &err);
  EXPECT(lm_test_metric(db, "stream", "keyed", "rows_in") == c.pushed);
  printf("catalog churn: 30 create/subscribe/drop cycles, %lld rows pushed meanwhile\n",
         (long long)c.pushed);
  laminar_subscription_close(keep);
  laminar_source_close(c.src);
  CHECK_CODE(laminar_close(db), LAMINAR_OK, NULL);
  return 0;
}

/* A window over the UNION ALL of two sources, keyed by k (one partition per
 * reactor, each input routed by its own k): its totals (rows, sums, a
 * checksum of (window, k) pairs) with `cores` reactors, threaded with one
 * producer per source pushing concurrently (cores > 1), or inline. */
#define UNION_ROWS 200000
static int union_totals(const char* cores, bool threaded, int64_t out[3]) {
  laminar_db* db;
  laminar_error err;
  const char* cfg[] = {"cores", cores, "buffer_size", "4096", NULL};
  CHECK(open_cfg(cfg, &db) == 0);
  CHECK_CODE(
      laminar_execute(
          db,
          "CREATE SOURCE t0 (p BIGINT NOT NULL, seq BIGINT NOT NULL, k BIGINT NOT NULL,"
          "  WATERMARK FOR seq AS seq - INTERVAL '0' SECOND);"
          "CREATE SOURCE t1 (p BIGINT NOT NULL, seq BIGINT NOT NULL, k BIGINT NOT NULL,"
          "  WATERMARK FOR seq AS seq - INTERVAL '0' SECOND);"
          "CREATE STREAM w AS SELECT window_start, k, COUNT(*) AS c, SUM(p) AS s FROM"
          "  (SELECT p, seq, k FROM t0 UNION ALL SELECT p * 7, seq, k FROM t1)"
          "  GROUP BY tumble(seq, INTERVAL '1' SECOND), k;",
          &err),
      LAMINAR_OK, &err);
  EXPECT(lm_test_metric(db, "stream", "w", "partitions") == atoi(cores));
  laminar_subscription* sub;
  CHECK_CODE(laminar_subscribe(db, "w", &sub, &err), LAMINAR_OK, &err);
  producer pr[2] = {0};
  pthread_t tp[2];
  for (int i = 0; i < 2; i++) {
    CHECK_CODE(laminar_source_open(db, i == 0 ? "t0" : "t1", &pr[i].src, &err),
               LAMINAR_OK, &err);
    pr[i].id = i + 1;
    pr[i].rows = UNION_ROWS;
    pr[i].batch_rows = 1000 + 337 * i;
  }
  if (threaded) {
    CHECK_CODE(laminar_start(db, &err), LAMINAR_OK, &err);
    for (int i = 0; i < 2; i++)
      CHECK(pthread_create(&tp[i], NULL, producer_main, &pr[i]) == 0);
    for (int i = 0; i < 2; i++) CHECK(pthread_join(tp[i], NULL) == 0);
  } else {
    for (int i = 0; i < 2; i++) {
      producer_main(&pr[i]);
      CHECK_CODE(laminar_run_until_idle(db, &err), LAMINAR_OK, &err);
    }
  }
  for (int i = 0; i < 2; i++) {
    CHECK(pr[i].rc == 0);
    CHECK_CODE(laminar_source_watermark(pr[i].src, INT64_MAX, &err), LAMINAR_OK, &err);
  }
  if (threaded) {
    CHECK_CODE(laminar_stop(db, &err), LAMINAR_OK, &err);
  } else {
    CHECK_CODE(laminar_run_until_idle(db, &err), LAMINAR_OK, &err);
  }
  memset(out, 0, sizeof(int64_t) * 3);
  for (;;) {
    struct ArrowArray a;
    CHECK_CODE(laminar_subscription_next(sub, 0, &a, NULL, &err), LAMINAR_OK, &err);
    if (a.release == NULL) break;
    CHECK(a.n_children == 4); /* window_start, k, c, s */
    for (int64_t i = 0; i < a.length; i++) {
      out[0] += col(&a, 1)[i] * 1000003 + col(&a, 0)[i];
      out[1] += col(&a, 2)[i];
      out[2] += col(&a, 3)[i];
    }
    a.release(&a);
  }
  EXPECT(lm_test_metric(db, "stream", "w", "late_rows") == 0);
  for (int i = 0; i < 2; i++) laminar_source_close(pr[i].src);
  laminar_subscription_close(sub);
  laminar_close(db);
  return 0;
}

static int test_union_threaded(void) {
  int64_t one[3], two[3];
  CHECK(union_totals("1", false, one) == 0);
  CHECK(union_totals("2", true, two) == 0);
  EXPECT(one[1] == 2 * UNION_ROWS);
  for (int i = 0; i < 3; i++) EXPECT(one[i] == two[i]);
  return 0;
}

static int test_proof(void) { return test_four_producers_three_subscribers(false); }
static int test_proof_pinned(void) { return test_four_producers_three_subscribers(true); }

static const lm_test_case cases[] = {{"config_errors", test_config_errors},
                                     {"windows_equal", test_windows_equal},
                                     {"four_producers_three_subscribers", test_proof},
                                     {"pinned", test_proof_pinned},
                                     {"idle_cpu", test_idle_cpu},
                                     {"catalog_churn", test_catalog_churn},
                                     {"union_threaded", test_union_threaded},
                                     {NULL, NULL}};

int main(int argc, char** argv) { return lm_test_main(argc, argv, cases); }
