/*
 * test_rt_concurrency.c -- the threaded runtime through laminar.h only: one
 * producer, several blocking subscribers, a slow subscriber behind a tiny
 * buffer (block back-pressure), subscribe/close churn and CREATE/DROP STREAM
 * while the reactor runs. Meant to run clean under ASan+UBSan and TSan.
 *
 * Every row carries a sequence number (BIGINT column `seq`), pushed 0, 1, 2, ...
 * in batches of 1..3 rows; a subscriber must see a gap-free, duplicate-free,
 * increasing run of them (from 0 when it subscribed before the first push,
 * from wherever it joined otherwise).
 */
/* lm_ctest: LABELS unit concurrency TIMEOUT 120 */
#define _POSIX_C_SOURCE 200809L /* clock_gettime, nanosleep */

#include "laminar.h"

#include "arrow_build.h"
#include "lm_test.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

/* Generous: each case finishes in well under a second natively; the deadlines
 * only turn a hang (a lost wakeup, a stuck reactor) into a failure. */
#define DEADLINE_MS 20000

static int64_t now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void sleep_us(long us) {
  struct timespec ts = {us / 1000000, (us % 1000000) * 1000};
  nanosleep(&ts, NULL);
}

/* ---- batches of sequence numbers ------------------------------------------------ */

/* The schema of every pushed batch: struct<seq: int64>. 0 on success. */
static int seq_schema(struct ArrowSchema* out) {
  ArrowSchemaInit(out);
  if (ArrowSchemaSetTypeStruct(out, 1) != NANOARROW_OK) return 1;
  if (ArrowSchemaSetType(out->children[0], NANOARROW_TYPE_INT64) != NANOARROW_OK)
    return 1;
  if (ArrowSchemaSetName(out->children[0], "seq") != NANOARROW_OK) return 1;
  return 0;
}

/* A batch of `n` rows seq = first, first+1, ... 0 on success. */
static int seq_batch(const struct ArrowSchema* schema, int64_t first, int64_t n,
                     struct ArrowArray* out) {
  struct ArrowError error;
  if (ArrowArrayInitFromSchema(out, schema, &error) != NANOARROW_OK) return 1;
  if (ArrowArrayStartAppending(out) != NANOARROW_OK) goto fail;
  for (int64_t i = 0; i < n; i++) {
    if (ArrowArrayAppendInt(out->children[0], first + i) != NANOARROW_OK) goto fail;
    if (ArrowArrayFinishElement(out) != NANOARROW_OK) goto fail;
  }
  if (ArrowArrayFinishBuildingDefault(out, &error) != NANOARROW_OK) goto fail;
  return 0;
fail:
  out->release(out);
  return 1;
}

/* Rows in batch number i: 1, 2, 3, 1, 2, 3, ... */
static int64_t rows_of_batch(int64_t i) { return 1 + i % 3; }

/* Total rows of batches [0, nbatches). */
static int64_t rows_of_batches(int64_t nbatches) {
  int64_t total = 0;
  for (int64_t i = 0; i < nbatches; i++) total += rows_of_batch(i);
  return total;
}

/* What a subscriber has seen so far. */
typedef struct seq_reader {
  int64_t next; /* the seq expected next; -1: take the first one seen */
  int64_t rows;
  int64_t batches;
} seq_reader;

/* Check one result batch (struct<seq: int64>, or with more columns: `seq` is
 * the first) against the reader's expectation and advance it. 0 when in order. */
static int seq_check_batch(seq_reader* rd, const struct ArrowArray* a) {
  CHECK(a->n_children >= 1);
  const struct ArrowArray* col = a->children[0];
  CHECK(col->n_buffers == 2);
  CHECK(col->null_count == 0);
  const int64_t* v = (const int64_t*)col->buffers[1];
  int64_t off = a->offset + col->offset;
  CHECK(a->length > 0);
  for (int64_t k = 0; k < a->length; k++) {
    int64_t got = v[off + k];
    if (rd->next < 0) rd->next = got;
    if (got != rd->next) {
      fprintf(stderr, "out of order: got seq %lld, want %lld (after %lld rows)\n",
              (long long)got, (long long)rd->next, (long long)rd->rows);
      return 1;
    }
    rd->next++;
    rd->rows++;
  }
  rd->batches++;
  return 0;
}

/* One laminar_subscription_next(); checks what it returns. *out_rc gets the
 * code, *out_got whether a batch came. 0 unless something is wrong. */
static int seq_take(laminar_subscription* sub, int64_t timeout_ms, seq_reader* rd,
                    laminar_code* out_rc, bool* out_got) {
  struct ArrowArray arr;
  laminar_error err;
  *out_got = false;
  laminar_code rc = laminar_subscription_next(sub, timeout_ms, &arr, NULL, &err);
  *out_rc = rc;
  if (rc != LAMINAR_OK) {
    CHECK(rc == LAMINAR_ERR_SUBSCRIPTION_CLOSED);
    return 0;
  }
  if (arr.release == NULL) return 0;
  int bad = seq_check_batch(rd, &arr);
  arr.release(&arr);
  CHECK(arr.release == NULL);
  *out_got = true;
  return bad;
}

/* ---- threads ----------------------------------------------------------------------- */

/* A producer pushing batches of seq numbers. It stops after `nbatches`, or
 * earlier when `stop` is set (nbatches < 0: only then). */
typedef struct producer {
  laminar_source* src;
  int64_t nbatches;
  long pause_us; /* sleep between pushes (0: none) */
  atomic_bool stop;
  atomic_int_fast64_t pushed; /* batches pushed so far */
  atomic_int_fast64_t pushed_rows;
  atomic_bool done;
  laminar_code fail_code; /* the code of the push that failed, if one did */
  /* for the back-pressure check: rows the consumer had when the last push returned */
  const atomic_int_fast64_t* consumer_rows;
  int64_t consumer_rows_at_end;
  int rc;
} producer;

static int producer_run(producer* p) {
  struct ArrowSchema schema;
  CHECK(seq_schema(&schema) == 0);
  int64_t seq = 0;
  int rc = 0;
  for (int64_t i = 0; p->nbatches < 0 || i < p->nbatches; i++) {
    if (atomic_load(&p->stop)) break;
    struct ArrowArray arr;
    int64_t n = rows_of_batch(i);
    if (seq_batch(&schema, seq, n, &arr) != 0) {
      fprintf(stderr, "producer: cannot build batch %lld\n", (long long)i);
      rc = 1;
      break;
    }
    laminar_error err;
    laminar_code code = laminar_source_push(p->src, &arr, &schema, &err);
    if (code != LAMINAR_OK) {
      fprintf(stderr, "producer: push %lld returned %d: %s\n", (long long)i, (int)code,
              err.message);
      if (arr.release != NULL) arr.release(&arr);
      p->fail_code = code;
      rc = 1;
      break;
    }
    if (arr.release != NULL) {
      fprintf(stderr, "producer: a pushed array was not moved\n");
      rc = 1;
      break;
    }
    seq += n;
    atomic_store(&p->pushed_rows, seq);
    atomic_store(&p->pushed, i + 1);
    if (p->pause_us > 0) sleep_us(p->pause_us);
  }
  if (p->consumer_rows != NULL) p->consumer_rows_at_end = atomic_load(p->consumer_rows);
  schema.release(&schema);
  atomic_store(&p->done, true);
  return rc;
}

static void* producer_main(void* arg) {
  producer* p = arg;
  p->rc = producer_run(p);
  atomic_store(&p->done, true);
  return NULL;
}

/* A consumer reading one subscription until it has `want_rows` rows (or, with
 * want_rows < 0, until `want_from` -- another thread's count -- is final and
 * reached; see final_rows), the subscription ends, or the deadline passes. */
typedef struct consumer {
  laminar_subscription* sub;
  int64_t want_rows;
  const atomic_int_fast64_t* final_rows; /* -1 until known */
  long pause_us;                         /* sleep after each batch (slow reader) */
  int64_t timeout_ms;                    /* per next() call */
  seq_reader rd;
  atomic_int_fast64_t rows; /* published progress */
  int rc;
} consumer;

static int consumer_run(consumer* c) {
  int64_t deadline = now_ms() + DEADLINE_MS;
  for (;;) {
    int64_t want = c->want_rows;
    if (want < 0 && c->final_rows != NULL) want = atomic_load(c->final_rows);
    if (want >= 0 && c->rd.rows >= want) break;
    if (now_ms() > deadline) {
      fprintf(stderr, "consumer: timed out with %lld rows (want %lld)\n",
              (long long)c->rd.rows, (long long)want);
      return 1;
    }
    laminar_code rc;
    bool got;
    CHECK(seq_take(c->sub, c->timeout_ms, &c->rd, &rc, &got) == 0);
    CHECK(rc == LAMINAR_OK);
    if (got) {
      atomic_store(&c->rows, c->rd.rows);
      if (c->pause_us > 0) sleep_us(c->pause_us);
    }
  }
  CHECK(c->want_rows < 0 || c->rd.rows == c->want_rows);
  /* Nothing beyond what was pushed. */
  laminar_code rc;
  bool got;
  CHECK(seq_take(c->sub, 0, &c->rd, &rc, &got) == 0);
  CHECK(!got);
  return 0;
}

static void* consumer_main(void* arg) {
  consumer* c = arg;
  c->rc = consumer_run(c);
  return NULL;
}

/* ---- helpers for the cases ---------------------------------------------------------- */

/* A database with source `s (seq BIGINT NOT NULL)` and stream `all_rows` =
 * SELECT * FROM s; buffer_size from `buffer_size` (NULL: default). */
static int open_seq_db(const char* buffer_size, laminar_db** out) {
  laminar_error err;
  laminar_config* cfg = NULL;
  CHECK_CODE(laminar_config_create(&cfg), LAMINAR_OK, NULL);
  if (buffer_size != NULL) {
    laminar_code rc = laminar_config_set(cfg, "buffer_size", buffer_size, &err);
    if (rc != LAMINAR_OK) laminar_config_destroy(cfg);
    CHECK_CODE(rc, LAMINAR_OK, &err);
  }
  laminar_code rc = laminar_open(cfg, out, &err);
  laminar_config_destroy(cfg);
  CHECK_CODE(rc, LAMINAR_OK, &err);
  rc = laminar_execute(*out,
                       "CREATE SOURCE s (seq BIGINT NOT NULL);"
                       "CREATE STREAM all_rows AS SELECT * FROM s;",
                       &err);
  if (rc != LAMINAR_OK) laminar_close(*out);
  CHECK_CODE(rc, LAMINAR_OK, &err);
  return 0;
}

/* ---- (a) one producer, three blocking subscribers ----------------------------------- */

enum { FANOUT_BATCHES = 2000, FANOUT_SUBS = 3 };

static int test_fanout_three_subscribers(void) {
  laminar_db* db;
  laminar_error err;
  CHECK(open_seq_db(NULL, &db) == 0);
  producer p = {0};
  consumer c[FANOUT_SUBS];
  memset(c, 0, sizeof c);
  CHECK_CODE(laminar_source_open(db, "s", &p.src, &err), LAMINAR_OK, &err);
  p.nbatches = FANOUT_BATCHES;
  int64_t total = rows_of_batches(FANOUT_BATCHES);
  for (int i = 0; i < FANOUT_SUBS; i++) {
    CHECK_CODE(laminar_subscribe(db, "all_rows", &c[i].sub, &err), LAMINAR_OK, &err);
    c[i].want_rows = total;
    c[i].timeout_ms = 200; /* blocking, bounded so the deadline is checked */
    c[i].rd.next = 0;
  }
  CHECK_CODE(laminar_start(db, &err), LAMINAR_OK, &err);
  pthread_t tp, tc[FANOUT_SUBS];
  for (int i = 0; i < FANOUT_SUBS; i++) {
    CHECK(pthread_create(&tc[i], NULL, consumer_main, &c[i]) == 0);
  }
  CHECK(pthread_create(&tp, NULL, producer_main, &p) == 0);
  for (int i = 0; i < FANOUT_SUBS; i++) pthread_join(tc[i], NULL);
  /* Stopping releases a producer stuck in push if a consumer gave up. */
  laminar_code stop_rc = laminar_stop(db, &err);
  pthread_join(tp, NULL);
  EXPECT(stop_rc == LAMINAR_OK);
  EXPECT(p.rc == 0);
  EXPECT(atomic_load(&p.pushed) == FANOUT_BATCHES);
  for (int i = 0; i < FANOUT_SUBS; i++) {
    EXPECT(c[i].rc == 0);
    EXPECT(c[i].rd.rows == total);
    EXPECT(c[i].rd.next == total);
  }
  /* After stop, the subscriptions are still readable and hold nothing more. */
  for (int i = 0; i < FANOUT_SUBS; i++) {
    laminar_code rc;
    bool got;
    CHECK(seq_take(c[i].sub, 0, &c[i].rd, &rc, &got) == 0);
    EXPECT(rc == LAMINAR_OK && !got);
  }
  CHECK_CODE(laminar_close(db), LAMINAR_OK,
             NULL); /* closes the source and subscriptions */
  return 0;
}

/* ---- (b) a slow subscriber behind buffer_size=4: block back-pressure --------------- */

enum { SLOW_BATCHES = 300 };

static int test_slow_subscriber_backpressure(void) {
  laminar_db* db;
  laminar_error err;
  CHECK(open_seq_db("4", &db) == 0);
  producer p = {0};
  consumer c = {0};
  CHECK_CODE(laminar_source_open(db, "s", &p.src, &err), LAMINAR_OK, &err);
  CHECK_CODE(laminar_subscribe(db, "all_rows", &c.sub, &err), LAMINAR_OK, &err);
  int64_t total = rows_of_batches(SLOW_BATCHES);
  p.nbatches = SLOW_BATCHES;
  p.consumer_rows = &c.rows;
  c.want_rows = total;
  c.timeout_ms = 200;
  c.pause_us = 2000; /* ~0.6 s in all: much slower than the producer */
  c.rd.next = 0;
  CHECK_CODE(laminar_start(db, &err), LAMINAR_OK, &err);
  pthread_t tp, tc;
  CHECK(pthread_create(&tp, NULL, producer_main, &p) == 0);
  CHECK(pthread_create(&tc, NULL, consumer_main, &c) == 0);
  pthread_join(tc, NULL);
  laminar_code stop_rc = laminar_stop(db, &err);
  pthread_join(tp, NULL);
  EXPECT(stop_rc == LAMINAR_OK);
  EXPECT(p.rc == 0);
  EXPECT(c.rc == 0);
  /* Nothing lost, nothing reordered, the producer finished. */
  EXPECT(atomic_load(&p.pushed) == SLOW_BATCHES);
  EXPECT(c.rd.rows == total);
  EXPECT(c.rd.batches == SLOW_BATCHES); /* SELECT * keeps batch boundaries */
  /* The producer was held back: when its last push returned, at most the source
   * ring (4), the subscriber ring (4), one message inside the reactor and one
   * batch inside the reader were not yet counted by the reader -- at most 10
   * batches of at most 3 rows. Without back-pressure it would have finished
   * ~0.6 s ahead of the reader. */
  EXPECT(p.consumer_rows_at_end >= total - 10 * 3);
  if (p.consumer_rows_at_end < total - 10 * 3) {
    fprintf(stderr, "producer finished when the reader had %lld of %lld rows\n",
            (long long)p.consumer_rows_at_end, (long long)total);
  }
  CHECK_CODE(laminar_close(db), LAMINAR_OK, NULL);
  return 0;
}

/* (b') buffer_size=4 with two streams on the source: a subscriber ring of 4
 * must still receive results. A headroom rule that grows with the number of
 * streams (it once was 2 * streams + 2 free slots per subscriber ring) asks
 * more of a ring of 4 than it has, and the reactor never takes the message;
 * the bounded wait turns such a stall into a failure instead of a hang. */
static int test_tiny_buffer_two_streams(void) {
  laminar_db* db;
  laminar_error err;
  CHECK(open_seq_db("4", &db) == 0);
  CHECK_CODE(laminar_execute(
                 db, "CREATE STREAM evens AS SELECT seq FROM s WHERE seq % 2 = 0", &err),
             LAMINAR_OK, &err);
  laminar_source* src;
  laminar_subscription* sub;
  CHECK_CODE(laminar_source_open(db, "s", &src, &err), LAMINAR_OK, &err);
  CHECK_CODE(laminar_subscribe(db, "all_rows", &sub, &err), LAMINAR_OK, &err);
  CHECK_CODE(laminar_start(db, &err), LAMINAR_OK, &err);
  struct ArrowSchema schema;
  struct ArrowArray arr;
  CHECK(seq_schema(&schema) == 0);
  CHECK(seq_batch(&schema, 0, 3, &arr) == 0);
  laminar_code rc = laminar_source_push(src, &arr, &schema, &err);
  schema.release(&schema);
  if (rc != LAMINAR_OK && arr.release != NULL) arr.release(&arr);
  CHECK_CODE(rc, LAMINAR_OK, &err);
  seq_reader rd = {0, 0, 0};
  laminar_code next_rc;
  bool got;
  CHECK(seq_take(sub, 3000, &rd, &next_rc, &got) == 0);
  EXPECT(next_rc == LAMINAR_OK);
  EXPECT(got);
  EXPECT(rd.rows == 3);
  CHECK_CODE(laminar_close(db), LAMINAR_OK, NULL);
  return 0;
}

/* ---- shared set-up of (c) and (d): producer + a long-lived checked reader ----------- */

typedef struct live_rig {
  laminar_db* db;
  producer p;
  consumer c;
  atomic_int_fast64_t final_rows; /* -1 until the producer has stopped */
  pthread_t tp, tc;
} live_rig;

/* Open the db, start the runtime, a paced producer and a reader on all_rows. */
static int rig_start(live_rig* r) {
  laminar_error err;
  memset(r, 0, sizeof *r);
  atomic_init(&r->final_rows, -1);
  CHECK(open_seq_db("1024", &r->db) == 0);
  CHECK_CODE(laminar_source_open(r->db, "s", &r->p.src, &err), LAMINAR_OK, &err);
  CHECK_CODE(laminar_subscribe(r->db, "all_rows", &r->c.sub, &err), LAMINAR_OK, &err);
  r->p.nbatches = 200000; /* a cap; the control loop ends it through `stop` */
  r->p.pause_us = 50;
  r->c.want_rows = -1;
  r->c.final_rows = &r->final_rows;
  r->c.timeout_ms = 50;
  r->c.rd.next = 0;
  CHECK_CODE(laminar_start(r->db, &err), LAMINAR_OK, &err);
  CHECK(pthread_create(&r->tp, NULL, producer_main, &r->p) == 0);
  CHECK(pthread_create(&r->tc, NULL, consumer_main, &r->c) == 0);
  return 0;
}

/* Stop the producer, let the reader catch up, stop, check, close. */
static int rig_finish(live_rig* r) {
  laminar_error err;
  atomic_store(&r->p.stop, true);
  pthread_join(r->tp, NULL);
  atomic_store(&r->final_rows, atomic_load(&r->p.pushed_rows));
  pthread_join(r->tc, NULL);
  EXPECT(laminar_stop(r->db, &err) == LAMINAR_OK);
  EXPECT(r->p.rc == 0);
  EXPECT(r->c.rc == 0);
  EXPECT(atomic_load(&r->p.pushed) > 0);
  EXPECT(r->c.rd.rows == atomic_load(&r->p.pushed_rows));
  CHECK_CODE(laminar_close(r->db), LAMINAR_OK, NULL);
  return 0;
}

/* Read a joined-late subscription for up to `ms` ms or until it has `batches`
 * batches; the rows must be one gap-free run from wherever it joined. */
static int read_some(laminar_subscription* sub, int64_t ms, int64_t batches,
                     seq_reader* rd, laminar_code* out_rc) {
  int64_t deadline = now_ms() + ms;
  *out_rc = LAMINAR_OK;
  while (rd->batches < batches && now_ms() < deadline) {
    bool got;
    CHECK(seq_take(sub, 5, rd, out_rc, &got) == 0);
    if (*out_rc != LAMINAR_OK) break;
  }
  return 0;
}

/* ---- (c) subscribe / close churn while the reactor runs and the producer pushes ---- */

enum { CHURN_ITERATIONS = 200 };

typedef struct churn_ctl {
  laminar_db* db;
  int64_t batches_seen;
  int rc;
} churn_ctl;

static int churn_run(churn_ctl* ctl) {
  laminar_error err;
  for (int i = 0; i < CHURN_ITERATIONS; i++) {
    laminar_subscription* sub;
    CHECK_CODE(laminar_subscribe(ctl->db, "all_rows", &sub, &err), LAMINAR_OK, &err);
    seq_reader rd = {-1, 0, 0};
    laminar_code rc;
    /* Read a little from most of them; close some with batches still queued. */
    int ok = read_some(sub, i % 4 == 0 ? 0 : 2, 1 + i % 3, &rd, &rc);
    if (i % 5 == 0) sleep_us(300); /* let results pile up unread */
    laminar_subscription_close(sub);
    CHECK(ok == 0);
    CHECK(rc == LAMINAR_OK);
    ctl->batches_seen += rd.batches;
    /* Misuse paths on the live db stay errors, not crashes. */
    if (i % 50 == 0) {
      laminar_subscription* none;
      CHECK_CODE(laminar_subscribe(ctl->db, "no_such_stream", &none, &err),
                 LAMINAR_ERR_SQL_UNKNOWN_OBJECT, &err);
      CHECK(none == NULL);
    }
  }
  return 0;
}

static void* churn_main(void* arg) {
  churn_ctl* ctl = arg;
  ctl->rc = churn_run(ctl);
  return NULL;
}

static int test_subscribe_close_churn(void) {
  live_rig r;
  CHECK(rig_start(&r) == 0);
  churn_ctl ctl = {r.db, 0, 0};
  pthread_t t;
  CHECK(pthread_create(&t, NULL, churn_main, &ctl) == 0);
  pthread_join(t, NULL);
  EXPECT(ctl.rc == 0);
  /* Churned subscriptions did receive data (the producer ran throughout). */
  EXPECT(ctl.batches_seen > 0);
  return rig_finish(&r);
}

/* ---- (d) CREATE STREAM / DROP STREAM while running ----------------------------------- */

enum { DDL_ITERATIONS = 40 };

typedef struct ddl_ctl {
  laminar_db* db;
  int64_t batches_seen;
  int rc;
} ddl_ctl;

static int ddl_run(ddl_ctl* ctl) {
  laminar_error err;
  char sql[256], name[32], down[32];
  for (int i = 0; i < DDL_ITERATIONS; i++) {
    snprintf(name, sizeof name, "tmp%d", i);
    snprintf(down, sizeof down, "tmp%d_down", i);
    /* A stream on the source and a cascaded one on it. */
    snprintf(sql, sizeof sql,
             "CREATE STREAM %s AS SELECT seq, seq * 2 AS twice FROM s;"
             "CREATE STREAM %s AS SELECT seq FROM %s WHERE twice >= 0;",
             name, down, name);
    CHECK_CODE(laminar_execute(ctl->db, sql, &err), LAMINAR_OK, &err);
    laminar_subscription* sub;
    CHECK_CODE(laminar_subscribe(ctl->db, down, &sub, &err), LAMINAR_OK, &err);
    seq_reader rd = {-1, 0, 0};
    laminar_code rc;
    int ok = read_some(sub, 2000, 1 + i % 2, &rd, &rc);
    /* The upstream one cannot go while the cascade reads it. */
    snprintf(sql, sizeof sql, "DROP STREAM %s", name);
    laminar_code drop_up = laminar_execute(ctl->db, sql, &err);
    snprintf(sql, sizeof sql, "DROP STREAM %s", down);
    laminar_code drop_down = laminar_execute(ctl->db, sql, &err);
    /* After the drop the subscription ends once drained; what it holds is still
     * a gap-free continuation. */
    int64_t deadline = now_ms() + 2000;
    while (ok == 0 && rc == LAMINAR_OK && now_ms() < deadline) {
      bool got;
      ok = seq_take(sub, 5, &rd, &rc, &got);
    }
    laminar_subscription_close(sub);
    CHECK(ok == 0);
    EXPECT(drop_up == LAMINAR_ERR_SQL_DEPENDENCY);
    CHECK_CODE(drop_down, LAMINAR_OK, &err);
    CHECK(rc == LAMINAR_ERR_SUBSCRIPTION_CLOSED);
    snprintf(sql, sizeof sql, "DROP STREAM %s", name);
    CHECK_CODE(laminar_execute(ctl->db, sql, &err), LAMINAR_OK, &err);
    ctl->batches_seen += rd.batches;
    if (i % 10 == 0) {
      /* Catalog reads while the reactor runs. */
      struct ArrowArrayStream st;
      CHECK_CODE(laminar_query(ctl->db, "SHOW STREAMS", &st, &err), LAMINAR_OK, &err);
      struct ArrowArray a;
      CHECK(st.get_next(&st, &a) == 0);
      CHECK(a.release != NULL);
      EXPECT(a.length == 1); /* only all_rows between iterations */
      a.release(&a);
      st.release(&st);
      int64_t late = -1;
      CHECK_CODE(laminar_stream_late_rows(ctl->db, "all_rows", &late, &err), LAMINAR_OK,
                 &err);
      EXPECT(late == 0);
    }
  }
  return 0;
}

static void* ddl_main(void* arg) {
  ddl_ctl* ctl = arg;
  ctl->rc = ddl_run(ctl);
  return NULL;
}

static int test_create_drop_while_running(void) {
  live_rig r;
  CHECK(rig_start(&r) == 0);
  ddl_ctl ctl = {r.db, 0, 0};
  pthread_t t;
  CHECK(pthread_create(&t, NULL, ddl_main, &ctl) == 0);
  pthread_join(t, NULL);
  EXPECT(ctl.rc == 0);
  EXPECT(ctl.batches_seen >= DDL_ITERATIONS);
  return rig_finish(&r);
}

/* (d') DROP SOURCE while its producer is pushing: pushes end with
 * LAMINAR_ERR_SOURCE_CLOSED, nothing crashes, the handle closes cleanly. */
static int test_drop_source_while_pushing(void) {
  laminar_db* db;
  laminar_error err;
  CHECK(open_seq_db("4", &db) == 0);
  CHECK_CODE(laminar_execute(db, "CREATE SOURCE side (seq BIGINT NOT NULL)", &err),
             LAMINAR_OK, &err);
  producer p = {0};
  CHECK_CODE(laminar_source_open(db, "side", &p.src, &err), LAMINAR_OK, &err);
  p.nbatches = -1; /* until the push fails */
  CHECK_CODE(laminar_start(db, &err), LAMINAR_OK, &err);
  pthread_t tp;
  CHECK(pthread_create(&tp, NULL, producer_main, &p) == 0);
  int64_t deadline = now_ms() + DEADLINE_MS;
  while (atomic_load(&p.pushed) < 50 && !atomic_load(&p.done) && now_ms() < deadline) {
    sleep_us(100);
  }
  CHECK_CODE(laminar_execute(db, "DROP SOURCE side", &err), LAMINAR_OK, &err);
  while (!atomic_load(&p.done) && now_ms() < deadline) sleep_us(100);
  bool finished = atomic_load(&p.done);
  if (!finished) atomic_store(&p.stop, true);
  pthread_join(tp, NULL);
  EXPECT(finished);
  EXPECT(p.rc == 1); /* it stopped on a failed push (printed above) */
  EXPECT(p.fail_code == LAMINAR_ERR_SOURCE_CLOSED);
  EXPECT(atomic_load(&p.pushed) >= 50);
  CHECK_CODE(laminar_stop(db, &err), LAMINAR_OK, &err);
  laminar_source_close(p.src);
  CHECK_CODE(laminar_close(db), LAMINAR_OK, NULL);
  return 0;
}

static const lm_test_case cases[] = {
    {"fanout_three_subscribers", test_fanout_three_subscribers},
    {"slow_subscriber_backpressure", test_slow_subscriber_backpressure},
    {"tiny_buffer_two_streams", test_tiny_buffer_two_streams},
    {"subscribe_close_churn", test_subscribe_close_churn},
    {"create_drop_while_running", test_create_drop_while_running},
    {"drop_source_while_pushing", test_drop_source_while_pushing},
    {NULL, NULL},
};

int main(int argc, char** argv) { return lm_test_main(argc, argv, cases); }
