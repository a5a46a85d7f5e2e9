/*
 * test_rt_mpsc.c -- the streaming runtime of issue 5 through laminar.h only:
 * cloned sources (SPSC -> MPSC upgrade) with 4 producer threads and 3
 * broadcast subscribers, clone-during-push, back-pressure policies (block,
 * drop_oldest, reject) with their counters, slow-subscriber drop, wait
 * strategies (park idle CPU, spin delivering), push_batch and has_capacity,
 * and the errors of the new options. Run under ASan+UBSan and TSan.
 *
 * Rows are (p BIGINT, seq BIGINT): producer p pushes seq 0, 1, 2, ... Every
 * subscriber checks that each producer's rows arrive in order; with block
 * back-pressure also gap-free and complete (exactly once).
 */
/* lm_ctest: LABELS unit concurrency TIMEOUT 300 */
#define _GNU_SOURCE /* getrusage, clock_gettime, nanosleep */

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
#include <string.h>
#include <sys/resource.h>
#include <time.h>

/* The 4 x 3 proof: 10^7 rows (issue 5) in every build -- batches of ~1,000
 * rows keep it to a few seconds even under TSan (3.5 s measured). */
#define PROOF_ROWS 10000000
#if defined(__SANITIZE_THREAD__) || defined(__SANITIZE_ADDRESS__)
#define BIG_ROWS 200000 /* the other cases, sized by it: sanitizers are ~20x slower */
#else
#define BIG_ROWS 10000000
#endif
#define DEADLINE_MS 120000

enum { NPROD = 4, NSUBS = 3, MAXP = 8 };

/* ---- a checking reader --------------------------------------------------------------- */

typedef struct reader {
  laminar_subscription* sub;
  int64_t next[MAXP]; /* next seq expected per producer */
  int64_t rows;
  int64_t want_rows; /* stop at this many (-1: until *stop) */
  bool gaps_ok;      /* drop_oldest / drop subscriber: increasing, not gap-free */
  atomic_bool* stop;
  atomic_int_fast64_t progress;
  int rc;
} reader;

static int reader_batch(reader* r, const struct ArrowArray* a) {
  CHECK(a->n_children == 2);
  const int64_t* p = (const int64_t*)a->children[0]->buffers[1];
  const int64_t* s = (const int64_t*)a->children[1]->buffers[1];
  int64_t po = a->offset + a->children[0]->offset,
          so = a->offset + a->children[1]->offset;
  for (int64_t k = 0; k < a->length; k++) {
    int64_t pid = p[po + k], seq = s[so + k];
    CHECK(pid >= 0 && pid < MAXP);
    bool ok = r->gaps_ok ? seq >= r->next[pid] : seq == r->next[pid];
    if (!ok) {
      fprintf(stderr, "producer %lld: got seq %lld, want %s%lld\n", (long long)pid,
              (long long)seq, r->gaps_ok ? ">= " : "", (long long)r->next[pid]);
      return 1;
    }
    r->next[pid] = seq + 1;
    r->rows++;
  }
  return 0;
}

/* One next() call; *got says whether a batch came. */
static int reader_step(reader* r, int64_t timeout_ms, bool* got) {
  struct ArrowArray a;
  laminar_error err;
  *got = false;
  CHECK_CODE(laminar_subscription_next(r->sub, timeout_ms, &a, NULL, &err), LAMINAR_OK,
             &err);
  if (a.release == NULL) return 0;
  int bad = reader_batch(r, &a);
  a.release(&a);
  *got = true;
  atomic_store_explicit(&r->progress, r->rows, memory_order_relaxed);
  return bad;
}

static int reader_run(reader* r) {
  int64_t deadline = lm_test_now_ms() + DEADLINE_MS;
  for (;;) {
    if (r->want_rows >= 0 && r->rows >= r->want_rows) break;
    if (r->stop != NULL && atomic_load(r->stop)) {
      bool got = true;
      while (got) CHECK(reader_step(r, 0, &got) == 0);  // drain
      break;
    }
    if (lm_test_now_ms() > deadline) {
      fprintf(stderr, "reader: timed out at %lld rows\n", (long long)r->rows);
      return 1;
    }
    bool got;
    CHECK(reader_step(r, 100, &got) == 0);
  }
  if (r->want_rows >= 0) CHECK(r->rows == r->want_rows);
  return 0;
}

static void* reader_main(void* arg) {
  reader* r = arg;
  r->rc = reader_run(r);
  return NULL;
}

/* ---- a producer thread ---------------------------------------------------------------- */

typedef struct producer {
  laminar_source* src;
  int64_t id;
  int64_t first; /* first seq it pushes */
  int64_t rows;  /* rows to push */
  int64_t batch_rows;
  bool use_push_batch; /* 4 batches per laminar_source_push_batch call */
  laminar_code allow;  /* a code counted instead of failing (reject: QUEUE_FULL) */
  int64_t ok_rows, refused_rows, refused_batches;
  int rc;
} producer;

static int producer_run(producer* p) {
  struct ArrowSchema schema;
  CHECK(lm_test_seq_schema(&schema, 2) == 0);
  int64_t seq = p->first, end = p->first + p->rows;
  int rc = 0;
  while (seq < end && rc == 0) {
    struct ArrowArray arr[4];
    int64_t counts[4];
    int n = lm_test_seq_batches(&schema, p->id, &seq, end, p->batch_rows,
                                p->use_push_batch ? 4 : 1, 0, arr, counts);
    if (n < 0) {
      rc = 1;
      break;
    }
    laminar_error err;
    int64_t pushed = 0;
    laminar_code code =
        n == 1 ? laminar_source_push(p->src, &arr[0], &schema, &err)
               : laminar_source_push_batch(p->src, arr, n, &schema, &pushed, &err);
    int64_t rows = 0;
    for (int i = 0; i < n; i++) rows += counts[i];
    if (code == LAMINAR_OK) {
      p->ok_rows += rows;
      for (int i = 0; i < n; i++) {
        if (arr[i].release != NULL) rc = 1;  // must have been moved
      }
    } else if (code == p->allow) {
      p->refused_rows += rows;
      p->refused_batches += n;
      for (int i = 0; i < n; i++) arr[i].release(&arr[i]);
    } else {
      fprintf(stderr, "producer %lld: push returned %d: %s\n", (long long)p->id,
              (int)code, err.message);
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

/* ---- helpers ---------------------------------------------------------------------------- */

/* A database with the config pairs (NULL-terminated key, value list) and
 * source t (p, seq) WITH (with_opts) and stream s = SELECT p, seq FROM t. */
static int open_db(const char* const* config, const char* with_opts, laminar_db** out) {
  laminar_error err;
  laminar_config* cfg;
  CHECK_CODE(laminar_config_create(&cfg), LAMINAR_OK, NULL);
  for (int i = 0; config != NULL && config[i] != NULL; i += 2) {
    laminar_code rc = laminar_config_set(cfg, config[i], config[i + 1], &err);
    if (rc != LAMINAR_OK) laminar_config_destroy(cfg);
    CHECK_CODE(rc, LAMINAR_OK, &err);
  }
  laminar_code rc = laminar_open(cfg, out, &err);
  laminar_config_destroy(cfg);
  CHECK_CODE(rc, LAMINAR_OK, &err);
  char sql[512];
  snprintf(sql, sizeof sql,
           "CREATE SOURCE t (p BIGINT NOT NULL, seq BIGINT NOT NULL)%s%s%s;"
           "CREATE STREAM s AS SELECT p, seq FROM t;",
           with_opts ? " WITH (" : "", with_opts ? with_opts : "", with_opts ? ")" : "");
  rc = laminar_execute(*out, sql, &err);
  if (rc != LAMINAR_OK) laminar_close(*out);
  CHECK_CODE(rc, LAMINAR_OK, &err);
  return 0;
}

/* Push one batch (p, first .. first+n-1) on src; returns the push's code. */
static laminar_code push_rows(laminar_source* src, int64_t p, int64_t first, int64_t n,
                              laminar_error* err) {
  struct ArrowSchema schema;
  struct ArrowArray arr;
  if (lm_test_seq_schema(&schema, 2) != 0) return LAMINAR_ERR_INTERNAL;
  if (lm_test_seq_batch(&schema, p, first, n, 0, &arr) != 0) {
    schema.release(&schema);
    return LAMINAR_ERR_INTERNAL;
  }
  laminar_code rc = laminar_source_push(src, &arr, &schema, err);
  if (arr.release != NULL) arr.release(&arr);
  schema.release(&schema);
  return rc;
}

/* ---- 4 producers on cloned sources x 3 subscribers ----------------------------------- */

/* The proof: producer 0 pushes its first rows alone (the SPSC phase,
 * with the reactor running), then clones the handle three times; the four
 * handles push from four threads (two with push_batch) while three
 * subscribers read. Every subscriber gets every row exactly once, in order
 * per producer. */
static int test_four_producers_three_subscribers(void) {
  laminar_db* db;
  laminar_error err;
  static const char* cfg[] = {"buffer_size", "1024", NULL};
  CHECK(open_db(cfg, NULL, &db) == 0);
  reader rd[NSUBS];
  memset(rd, 0, sizeof rd);
  int64_t per = PROOF_ROWS / NPROD, spsc_rows = 5000;
  for (int i = 0; i < NSUBS; i++) {
    CHECK_CODE(laminar_subscribe(db, "s", &rd[i].sub, &err), LAMINAR_OK, &err);
    rd[i].want_rows = per * NPROD;
  }
  CHECK_CODE(laminar_start(db, &err), LAMINAR_OK, &err);
  pthread_t tr[NSUBS], tp[NPROD];
  for (int i = 0; i < NSUBS; i++)
    CHECK(pthread_create(&tr[i], NULL, reader_main, &rd[i]) == 0);
  producer pr[NPROD];
  memset(pr, 0, sizeof pr);
  CHECK_CODE(laminar_source_open(db, "t", &pr[0].src, &err), LAMINAR_OK, &err);
  // SPSC phase: producer 0 alone, batches of 100 rows.
  for (int64_t s = 0; s < spsc_rows; s += 100) {
    CHECK_CODE(push_rows(pr[0].src, 0, s, 100, &err), LAMINAR_OK, &err);
  }
  for (int i = 1; i < NPROD; i++) {
    CHECK_CODE(laminar_source_clone(pr[0].src, &pr[i].src, &err), LAMINAR_OK, &err);
  }
  EXPECT(lm_test_metric(db, "source", "t", "producers") == NPROD);
  for (int i = 0; i < NPROD; i++) {
    pr[i].id = i;
    pr[i].first = i == 0 ? spsc_rows : 0;
    pr[i].rows = i == 0 ? per - spsc_rows : per;
    pr[i].batch_rows = i % 2 ? 1000 : 997;
    pr[i].use_push_batch = i >= 2;
    CHECK(pthread_create(&tp[i], NULL, producer_main, &pr[i]) == 0);
  }
  for (int i = 0; i < NPROD; i++) pthread_join(tp[i], NULL);
  for (int i = 0; i < NSUBS; i++) pthread_join(tr[i], NULL);
  CHECK_CODE(laminar_stop(db, &err), LAMINAR_OK, &err);
  for (int i = 0; i < NPROD; i++) EXPECT(pr[i].rc == 0);
  for (int i = 0; i < NSUBS; i++) {
    EXPECT(rd[i].rc == 0);
    EXPECT(rd[i].rows == per * NPROD);
    for (int p = 0; p < NPROD; p++) EXPECT(rd[i].next[p] == per);
  }
  EXPECT(lm_test_metric(db, "source", "t", "pushed_rows") == per * NPROD);
  int64_t batches = spsc_rows / 100;
  for (int i = 0; i < NPROD; i++) {
    batches += (pr[i].rows + pr[i].batch_rows - 1) / pr[i].batch_rows;
  }
  EXPECT(lm_test_metric(db, "reactor", "0", "messages") == batches);
  EXPECT(lm_test_metric(db, "reactor", "0", "busy_ns") > 0);
  EXPECT(lm_test_metric(db, "source", "t", "dropped_batches") == 0);
  printf("rows=%lld producers=%d subscribers=%d lost=0 dup=0 out_of_order=0\n",
         (long long)(per * NPROD), NPROD, NSUBS);
  for (int i = 1; i < NPROD; i++) laminar_source_close(pr[i].src);
  EXPECT(lm_test_metric(db, "source", "t", "producers") == 1);
  CHECK_CODE(laminar_close(db), LAMINAR_OK, NULL);
  return 0;
}

/* Inline: what the single producer queued before the first clone comes first,
 * in order; then each handle's messages in its own order; a second open is
 * refused while any handle is open and allowed after all are closed. */
static int test_clone_keeps_queued(void) {
  laminar_db* db;
  laminar_error err;
  CHECK(open_db(NULL, NULL, &db) == 0);
  reader rd = {0};
  CHECK_CODE(laminar_subscribe(db, "s", &rd.sub, &err), LAMINAR_OK, &err);
  laminar_source *a, *b, *c;
  CHECK_CODE(laminar_source_open(db, "t", &a, &err), LAMINAR_OK, &err);
  for (int64_t s = 0; s < 30; s += 3)
    CHECK_CODE(push_rows(a, 0, s, 3, &err), LAMINAR_OK, &err);
  CHECK_CODE(laminar_source_clone(a, &b, &err), LAMINAR_OK, &err);
  CHECK_CODE(laminar_source_clone(b, &c, &err), LAMINAR_OK, &err);  // a clone of a clone
  CHECK_CODE(laminar_source_open(db, "t", &(laminar_source*){NULL}, &err),
             LAMINAR_ERR_STATE, &err);
  EXPECT(strstr(err.message, "laminar_source_clone") != NULL);
  for (int64_t s = 0; s < 10; s++) {
    CHECK_CODE(push_rows(b, 1, s, 1, &err), LAMINAR_OK, &err);
    CHECK_CODE(push_rows(a, 0, 30 + s, 1, &err), LAMINAR_OK, &err);
    CHECK_CODE(push_rows(c, 2, s, 1, &err), LAMINAR_OK, &err);
  }
  CHECK_CODE(laminar_run_until_idle(db, &err), LAMINAR_OK, &err);
  // The first batch out is the first SPSC-phase push.
  struct ArrowArray first;
  CHECK_CODE(laminar_subscription_next(rd.sub, 0, &first, NULL, &err), LAMINAR_OK, &err);
  CHECK(first.release != NULL && first.length == 3);
  CHECK(reader_batch(&rd, &first) == 0);
  first.release(&first);
  bool got = true;
  while (got) CHECK(reader_step(&rd, 0, &got) == 0);
  EXPECT(rd.rows == 60);
  EXPECT(rd.next[0] == 40 && rd.next[1] == 10 && rd.next[2] == 10);
  // The inline driver counts the messages it took; no reactor ran.
  EXPECT(lm_test_metric(db, "reactor", "0", "messages") == 40);
  EXPECT(lm_test_metric(db, "reactor", "0", "running_ns") == 0);
  EXPECT(lm_test_metric(db, "reactor", "0", "busy_pct") == 0);
  laminar_source_close(a);  // the original may close first; clones go on
  CHECK_CODE(push_rows(c, 2, 10, 1, &err), LAMINAR_OK, &err);
  laminar_source_close(b);
  laminar_source_close(c);
  laminar_source* again;
  CHECK_CODE(laminar_source_open(db, "t", &again, &err), LAMINAR_OK, &err);
  CHECK_CODE(push_rows(again, 0, 40, 1, &err), LAMINAR_OK, &err);
  CHECK_CODE(laminar_run_until_idle(db, &err), LAMINAR_OK, &err);
  got = true;
  while (got) CHECK(reader_step(&rd, 0, &got) == 0);
  EXPECT(rd.rows == 62);
  // Misuse and a dropped source.
  CHECK_CODE(laminar_source_clone(NULL, &b, &err), LAMINAR_ERR_MISUSE, &err);
  CHECK_CODE(laminar_source_clone(again, NULL, &err), LAMINAR_ERR_MISUSE, &err);
  CHECK_CODE(laminar_execute(db, "DROP STREAM s; DROP SOURCE t", &err), LAMINAR_OK, &err);
  b = (laminar_source*)&b;
  CHECK_CODE(laminar_source_clone(again, &b, &err), LAMINAR_ERR_SOURCE_CLOSED, &err);
  CHECK(b == NULL);
  CHECK_CODE(laminar_close(db), LAMINAR_OK, NULL);
  return 0;
}

/* Clone and close the original's clones 1000 times while two clones push
 * from their threads: nothing is lost or reordered. */
typedef struct churn {
  laminar_source* src;
  atomic_bool* stop;
  int rc;
} churn;

static void* churn_main(void* arg) {
  churn* c = arg;
  for (int i = 0; i < 1000 && !atomic_load(c->stop); i++) {
    laminar_source* k;
    laminar_error err;
    if (laminar_source_clone(c->src, &k, &err) != LAMINAR_OK) {
      fprintf(stderr, "clone %d: %s\n", i, err.message);
      c->rc = 1;
      return NULL;
    }
    if (i % 10 == 0 && push_rows(k, 3, i / 10, 1, &err) != LAMINAR_OK) c->rc = 1;
    laminar_source_close(k);
  }
  return NULL;
}

static int test_clone_during_push(void) {
  laminar_db* db;
  laminar_error err;
  static const char* cfg[] = {"buffer_size", "64", NULL};
  CHECK(open_db(cfg, NULL, &db) == 0);
  reader rd = {0};
  atomic_bool stop = false;
  CHECK_CODE(laminar_subscribe(db, "s", &rd.sub, &err), LAMINAR_OK, &err);
  rd.want_rows = -1;
  rd.stop = &stop;
  laminar_source* orig;
  CHECK_CODE(laminar_source_open(db, "t", &orig, &err), LAMINAR_OK, &err);
  producer pr[2];
  memset(pr, 0, sizeof pr);
  for (int i = 0; i < 2; i++) {
    CHECK_CODE(laminar_source_clone(orig, &pr[i].src, &err), LAMINAR_OK, &err);
    pr[i].id = i + 1;
    pr[i].rows = BIG_ROWS / 100;
    pr[i].batch_rows = 7;
  }
  CHECK_CODE(laminar_start(db, &err), LAMINAR_OK, &err);
  pthread_t tr, tp[2], tc;
  CHECK(pthread_create(&tr, NULL, reader_main, &rd) == 0);
  for (int i = 0; i < 2; i++)
    CHECK(pthread_create(&tp[i], NULL, producer_main, &pr[i]) == 0);
  churn ch = {orig, &(atomic_bool){false}, 0};
  CHECK(pthread_create(&tc, NULL, churn_main, &ch) == 0);
  for (int i = 0; i < 2; i++) pthread_join(tp[i], NULL);
  pthread_join(tc, NULL);
  CHECK_CODE(laminar_stop(db, &err), LAMINAR_OK, &err);  // everything queued is delivered
  atomic_store(&stop, true);
  pthread_join(tr, NULL);
  EXPECT(ch.rc == 0);
  EXPECT(pr[0].rc == 0 && pr[1].rc == 0);
  EXPECT(rd.rc == 0);
  EXPECT(rd.next[1] == BIG_ROWS / 100 && rd.next[2] == BIG_ROWS / 100 &&
         rd.next[3] == 100);
  EXPECT(rd.rows == 2 * (BIG_ROWS / 100) + 100);
  CHECK_CODE(laminar_close(db), LAMINAR_OK, NULL);
  return 0;
}

/* ---- back-pressure policies ---------------------------------------------------------- */

/* Inline, deterministic: buffer 4, 10 one-row pushes. */
static int test_drop_oldest_and_reject_inline(void) {
  for (int policy = 0; policy < 3; policy++) {
    static const char* names[] = {"'drop_oldest'", "'reject'", "'block'"};
    char with[128];
    snprintf(with, sizeof with, "buffer_size = 4, backpressure = %s", names[policy]);
    laminar_db* db;
    laminar_error err;
    CHECK(open_db(NULL, with, &db) == 0);
    reader rd = {0};
    rd.gaps_ok = true;
    CHECK_CODE(laminar_subscribe(db, "s", &rd.sub, &err), LAMINAR_OK, &err);
    laminar_source* src;
    CHECK_CODE(laminar_source_open(db, "t", &src, &err), LAMINAR_OK, &err);
    int ok = 0, full = 0;
    for (int64_t s = 0; s < 10; s++) {
      laminar_code rc = push_rows(src, 0, s, 1, &err);
      CHECK(rc == LAMINAR_OK || rc == LAMINAR_ERR_QUEUE_FULL);
      if (rc == LAMINAR_OK) ok++;
      if (rc == LAMINAR_ERR_QUEUE_FULL) {
        full++;
        EXPECT(strstr(err.message, "source 't'") != NULL);
        EXPECT(strcmp(err.object, "t") == 0);
      }
    }
    int32_t room = -1;
    CHECK_CODE(laminar_source_has_capacity(src, 1, &room, &err), LAMINAR_OK, &err);
    EXPECT(room == 0);
    CHECK_CODE(laminar_source_has_capacity(src, 0, &room, &err), LAMINAR_OK, &err);
    EXPECT(room == 1);
    CHECK_CODE(laminar_source_has_capacity(src, -1, &room, &err), LAMINAR_ERR_MISUSE,
               &err);
    int64_t dropped = lm_test_metric(db, "source", "t", "dropped_batches");
    int64_t rejected = lm_test_metric(db, "source", "t", "rejected_batches");
    if (policy == 0) {
      EXPECT(ok == 10 && full == 0 && dropped == 6 && rejected == 0);
      EXPECT(lm_test_metric(db, "source", "t", "dropped_rows") == 6);
    } else {
      // reject: counted; block without a reactor: refused, not counted
      EXPECT(ok == 4 && full == 6 && dropped == 0 && rejected == (policy == 1 ? 6 : 0));
    }
    EXPECT(lm_test_metric(db, "source", "t", "pushed_batches") == ok);
    CHECK_CODE(laminar_run_until_idle(db, &err), LAMINAR_OK, &err);
    bool got = true;
    while (got) CHECK(reader_step(&rd, 0, &got) == 0);
    EXPECT(rd.rows == 4);
    // drop_oldest kept the newest four, the others the oldest four.
    EXPECT(rd.next[0] == (policy == 0 ? 10 : 4));
    CHECK_CODE(laminar_source_has_capacity(src, 4, &room, &err), LAMINAR_OK, &err);
    EXPECT(room == 1);
    CHECK_CODE(laminar_close(db), LAMINAR_OK, NULL);
  }
  return 0;
}

/* A watermark message dropped by drop_oldest still advances the watermark. */
static int test_drop_oldest_keeps_watermark(void) {
  laminar_db* db;
  laminar_error err;
  CHECK_CODE(laminar_open(NULL, &db, &err), LAMINAR_OK, &err);
  CHECK_CODE(laminar_execute(db,
                             "CREATE SOURCE t (p BIGINT, seq BIGINT, ts BIGINT) WITH "
                             "(buffer_size = 2, backpressure = 'drop_oldest');"
                             "CREATE STREAM w AS SELECT p, COUNT(*) AS n FROM t "
                             "GROUP BY p, tumble(ts, INTERVAL '1' SECOND)",
                             &err),
             LAMINAR_OK, &err);
  laminar_source* src;
  CHECK_CODE(laminar_source_open(db, "t", &src, &err), LAMINAR_OK, &err);
  CHECK_CODE(laminar_source_watermark(src, 5000, &err), LAMINAR_OK, &err);
  CHECK_CODE(laminar_source_watermark(src, 6000, &err), LAMINAR_OK, &err);
  CHECK_CODE(laminar_source_watermark(src, 7000, &err), LAMINAR_OK, &err);  // drops 5000
  CHECK_CODE(laminar_source_watermark(src, 100, &err), LAMINAR_OK, &err);   // drops 6000
  EXPECT(lm_test_metric(db, "source", "t", "dropped_batches") ==
         0);  // watermarks: not batches
  CHECK_CODE(laminar_run_until_idle(db, &err), LAMINAR_OK, &err);
  EXPECT(lm_test_metric(db, "source", "t", "watermark_ms") == 7000);
  CHECK_CODE(laminar_close(db), LAMINAR_OK, NULL);
  return 0;
}

/* Threaded: 4 cloned producers against a slow reader. drop_oldest: every
 * row pushed is delivered or counted dropped; reject: accepted + refused =
 * attempted and the reader gets exactly the accepted rows. */
static int run_policy_threaded(const char* policy) {
  bool drop = strcmp(policy, "drop_oldest") == 0;
  char with[128];
  snprintf(with, sizeof with, "buffer_size = 8, backpressure = '%s'", policy);
  laminar_db* db;
  laminar_error err;
  CHECK(open_db(NULL, with, &db) == 0);
  reader rd = {0};
  atomic_bool stop = false;
  rd.want_rows = -1;
  rd.stop = &stop;
  rd.gaps_ok = true;
  CHECK_CODE(laminar_subscribe(db, "s", &rd.sub, &err), LAMINAR_OK, &err);
  producer pr[NPROD];
  memset(pr, 0, sizeof pr);
  CHECK_CODE(laminar_source_open(db, "t", &pr[0].src, &err), LAMINAR_OK, &err);
  for (int i = 1; i < NPROD; i++) {
    CHECK_CODE(laminar_source_clone(pr[0].src, &pr[i].src, &err), LAMINAR_OK, &err);
  }
  CHECK_CODE(laminar_start(db, &err), LAMINAR_OK, &err);
  pthread_t tr, tp[NPROD];
  CHECK(pthread_create(&tr, NULL, reader_main, &rd) == 0);
  for (int i = 0; i < NPROD; i++) {
    pr[i].id = i;
    pr[i].rows = BIG_ROWS / 200;
    pr[i].batch_rows = 5;
    pr[i].use_push_batch = i == 3;
    pr[i].allow = drop ? LAMINAR_OK : LAMINAR_ERR_QUEUE_FULL;
    CHECK(pthread_create(&tp[i], NULL, producer_main, &pr[i]) == 0);
  }
  for (int i = 0; i < NPROD; i++) pthread_join(tp[i], NULL);
  CHECK_CODE(laminar_stop(db, &err), LAMINAR_OK, &err);
  atomic_store(&stop, true);
  pthread_join(tr, NULL);
  EXPECT(rd.rc == 0);
  int64_t ok_rows = 0, refused = 0, refused_rows = 0, attempted = 0;
  for (int i = 0; i < NPROD; i++) {
    EXPECT(pr[i].rc == 0);
    ok_rows += pr[i].ok_rows;
    refused += pr[i].refused_batches;
    refused_rows += pr[i].refused_rows;
    attempted += pr[i].rows;
  }
  int64_t dropped_rows = lm_test_metric(db, "source", "t", "dropped_rows");
  int64_t rejected = lm_test_metric(db, "source", "t", "rejected_batches");
  EXPECT(lm_test_metric(db, "source", "t", "pushed_rows") == ok_rows);
  if (drop) {
    EXPECT(ok_rows == attempted && refused == 0 && rejected == 0);
    EXPECT(rd.rows + dropped_rows == ok_rows);
  } else {
    EXPECT(dropped_rows == 0 && rejected == refused);
    EXPECT(rd.rows == ok_rows);
    EXPECT(ok_rows + refused_rows == attempted);
  }
  printf("%s: attempted=%lld delivered=%lld dropped_rows=%lld rejected_batches=%lld\n",
         policy, (long long)attempted, (long long)rd.rows, (long long)dropped_rows,
         (long long)rejected);
  CHECK_CODE(laminar_close(db), LAMINAR_OK, NULL);
  return 0;
}

static int test_drop_oldest_threaded(void) { return run_policy_threaded("drop_oldest"); }

static int test_reject_threaded(void) { return run_policy_threaded("reject"); }

/* ---- subscribers -------------------------------------------------------------------- */

/* A 'drop' subscriber that never reads does not hold the pipeline: the
 * blocking subscriber gets everything, the dropping one its first two
 * batches, and its counter the rest. */
static int test_slow_subscriber_drop(void) {
  laminar_db* db;
  laminar_error err;
  CHECK(open_db(NULL, NULL, &db) == 0);
  reader fast = {0}, slow = {0};
  CHECK_CODE(laminar_subscribe(db, "s", &fast.sub, &err), LAMINAR_OK, &err);
  CHECK_CODE(laminar_subscribe_with(db, "s", "buffer_size = 2, slow_subscriber = 'drop'",
                                    &slow.sub, &err),
             LAMINAR_OK, &err);
  laminar_source* src;
  CHECK_CODE(laminar_source_open(db, "t", &src, &err), LAMINAR_OK, &err);
  for (int64_t s = 0; s < 50; s++)
    CHECK_CODE(push_rows(src, 0, s, 1, &err), LAMINAR_OK, &err);
  CHECK_CODE(laminar_run_until_idle(db, &err), LAMINAR_OK, &err);  // not held by `slow`
  bool got = true;
  while (got) CHECK(reader_step(&fast, 0, &got) == 0);
  EXPECT(fast.rows == 50);
  EXPECT(lm_test_metric(db, "subscription", "s", "dropped_batches") == 48);
  EXPECT(lm_test_metric(db, "subscription", "s", "dropped_rows") == 48);
  slow.gaps_ok = true;
  got = true;
  while (got) CHECK(reader_step(&slow, 0, &got) == 0);
  EXPECT(slow.rows == 2 && slow.next[0] == 2);
  // Bad options: nothing subscribed.
  laminar_subscription* bad = NULL;
  CHECK_CODE(laminar_subscribe_with(db, "s", "slow_subscriber = 'sometimes'", &bad, &err),
             LAMINAR_ERR_CONFIG_VALUE, &err);
  CHECK(bad == NULL);
  CHECK_CODE(laminar_subscribe_with(db, "s", "colour = 'blue'", &bad, &err),
             LAMINAR_ERR_CONFIG_KEY, &err);
  EXPECT(strstr(err.message, "colour") != NULL);
  CHECK_CODE(laminar_subscribe_with(db, "s", "buffer_size = 3", &bad, &err),
             LAMINAR_ERR_CONFIG_VALUE, &err);
  CHECK_CODE(
      laminar_subscribe_with(db, "s", "wait_strategy = 'spin_yield(x)'", &bad, &err),
      LAMINAR_ERR_CONFIG_VALUE, &err);
  CHECK_CODE(laminar_subscribe_with(db, "s", "buffer_size", &bad, &err),
             LAMINAR_ERR_CONFIG_VALUE, &err);
  CHECK_CODE(laminar_subscribe_with(db, "s", "wait_strategy = 'park", &bad, &err),
             LAMINAR_ERR_CONFIG_VALUE, &err);
  CHECK_CODE(laminar_subscribe_with(db, "s", "", &bad, &err), LAMINAR_OK, &err);
  laminar_subscription_close(bad);
  CHECK_CODE(laminar_close(db), LAMINAR_OK, NULL);
  return 0;
}

/* spin and spin_yield on both ends deliver like park. */
static int test_spin_strategies_deliver(void) {
  static const char* strategies[] = {"spin", "spin_yield(10)", "park"};
  for (int i = 0; i < 3; i++) {
    char with[96], opts[96];
    snprintf(with, sizeof with, "wait_strategy = '%s', buffer_size = 4", strategies[i]);
    snprintf(opts, sizeof opts, "wait_strategy = %s", strategies[i]);
    laminar_db* db;
    laminar_error err;
    CHECK(open_db(NULL, with, &db) == 0);
    reader rd = {0};
    CHECK_CODE(laminar_subscribe_with(db, "s", opts, &rd.sub, &err), LAMINAR_OK, &err);
    rd.want_rows = 2000;
    laminar_source* src;
    CHECK_CODE(laminar_source_open(db, "t", &src, &err), LAMINAR_OK, &err);
    CHECK_CODE(laminar_start(db, &err), LAMINAR_OK, &err);
    pthread_t tr;
    CHECK(pthread_create(&tr, NULL, reader_main, &rd) == 0);
    for (int64_t s = 0; s < 2000; s += 2) {  // buffer 4: block back-pressure all the way
      CHECK_CODE(push_rows(src, 0, s, 2, &err), LAMINAR_OK, &err);
    }
    pthread_join(tr, NULL);
    EXPECT(rd.rc == 0 && rd.rows == 2000);
    CHECK_CODE(laminar_close(db), LAMINAR_OK, NULL);
  }
  return 0;
}

/* ---- park: no CPU while idle ---------------------------------------------------------- */

typedef struct blocked_reader {
  laminar_subscription* sub;
  laminar_code rc;
} blocked_reader;

static void* blocked_main(void* arg) {
  blocked_reader* b = arg;
  struct ArrowArray a;
  b->rc = laminar_subscription_next(b->sub, -1, &a, NULL, NULL);  // until the db closes
  if (b->rc == LAMINAR_OK && a.release != NULL) a.release(&a);
  return NULL;
}

/* With park (the default), a started database with an idle reactor and a
 * consumer blocked in next(-1) uses < 5% of one CPU over 1 s (issue 5). */
static int test_park_idle_cpu(void) {
  laminar_db* db;
  laminar_error err;
  static const char* cfg[] = {"wait_strategy", "park", NULL};
  CHECK(open_db(cfg, NULL, &db) == 0);
  blocked_reader b = {0};
  CHECK_CODE(laminar_subscribe(db, "s", &b.sub, &err), LAMINAR_OK, &err);
  laminar_source* src;
  CHECK_CODE(laminar_source_open(db, "t", &src, &err), LAMINAR_OK, &err);
  CHECK_CODE(laminar_start(db, &err), LAMINAR_OK, &err);
  pthread_t t;
  CHECK(pthread_create(&t, NULL, blocked_main, &b) == 0);
  struct timespec settle = {0, 100000000};  // let both threads reach their park
  nanosleep(&settle, NULL);
  EXPECT(lm_test_idle_cpu_share("park") < 0.05);
  EXPECT(lm_test_metric(db, "reactor", "0", "running_ns") >= 1000000000);
  EXPECT(lm_test_metric(db, "reactor", "0", "busy_pct") < 5);  // idle
  // Then a push wakes the parked reactor and the parked consumer.
  CHECK_CODE(push_rows(src, 0, 0, 1, &err), LAMINAR_OK, &err);
  pthread_join(t, NULL);
  EXPECT(b.rc == LAMINAR_OK);
  CHECK_CODE(laminar_close(db), LAMINAR_OK, NULL);
  return 0;
}

/* ---- push_batch ------------------------------------------------------------------------- */

static int test_push_batch(void) {
  laminar_db* db;
  laminar_error err;
  CHECK(open_db(NULL, "buffer_size = 8, backpressure = 'reject'", &db) == 0);
  reader rd = {0};
  CHECK_CODE(laminar_subscribe(db, "s", &rd.sub, &err), LAMINAR_OK, &err);
  laminar_source* src;
  CHECK_CODE(laminar_source_open(db, "t", &src, &err), LAMINAR_OK, &err);
  struct ArrowSchema schema;
  CHECK(lm_test_seq_schema(&schema, 2) == 0);
  struct ArrowArray arr[10];
  for (int i = 0; i < 6; i++)
    CHECK(lm_test_seq_batch(&schema, 0, i * 2, 2, 0, &arr[i]) == 0);
  // Array 3 is broken (a negative length): nothing of the call is ingested.
  arr[3].length = -1;
  int64_t pushed = -1;
  CHECK_CODE(laminar_source_push_batch(src, arr, 6, &schema, &pushed, &err),
             LAMINAR_ERR_ARROW_INVALID, &err);
  EXPECT(pushed == 0);
  EXPECT(strstr(err.message, "array 3 of 6") != NULL);
  for (int i = 0; i < 6; i++) EXPECT(arr[i].release != NULL);  // all still ours
  EXPECT(lm_test_metric(db, "source", "t", "pushed_batches") == 0);
  arr[3].length = 2;
  CHECK_CODE(laminar_source_push_batch(src, arr, 6, &schema, &pushed, &err), LAMINAR_OK,
             &err);
  EXPECT(pushed == 6);
  for (int i = 0; i < 6; i++) EXPECT(arr[i].release == NULL);
  // 2 free slots: a run of 3 is rejected whole, counted as 3.
  for (int i = 0; i < 3; i++)
    CHECK(lm_test_seq_batch(&schema, 0, 12 + i * 2, 2, 0, &arr[i]) == 0);
  CHECK_CODE(laminar_source_push_batch(src, arr, 3, &schema, &pushed, &err),
             LAMINAR_ERR_QUEUE_FULL, &err);
  EXPECT(pushed == 0 && arr[0].release != NULL && arr[2].release != NULL);
  EXPECT(lm_test_metric(db, "source", "t", "rejected_batches") == 3);
  CHECK_CODE(laminar_source_push_batch(src, arr, 2, &schema, NULL, &err), LAMINAR_OK,
             &err);
  arr[2].release(&arr[2]);
  // More than the queue holds can never fit a reject source.
  for (int i = 0; i < 9; i++)
    CHECK(lm_test_seq_batch(&schema, 0, 100, 1, 0, &arr[i]) == 0);
  CHECK_CODE(laminar_run_until_idle(db, &err), LAMINAR_OK, &err);
  CHECK_CODE(laminar_source_push_batch(src, arr, 9, &schema, &pushed, &err),
             LAMINAR_ERR_QUEUE_FULL, &err);
  for (int i = 0; i < 9; i++) arr[i].release(&arr[i]);
  CHECK_CODE(laminar_source_push_batch(src, arr, 0, &schema, &pushed, &err), LAMINAR_OK,
             &err);
  CHECK_CODE(laminar_source_push_batch(src, NULL, 1, &schema, &pushed, &err),
             LAMINAR_ERR_MISUSE, &err);
  CHECK_CODE(laminar_source_push_batch(src, arr, -1, &schema, &pushed, &err),
             LAMINAR_ERR_MISUSE, &err);
  schema.release(&schema);
  bool got = true;
  while (got) CHECK(reader_step(&rd, 0, &got) == 0);
  EXPECT(rd.rows == 16 && rd.next[0] == 16);
  CHECK_CODE(laminar_close(db), LAMINAR_OK, NULL);
  return 0;
}

/* ---- option errors ------------------------------------------------------------------------ */

static int test_option_errors(void) {
  laminar_db* db;
  laminar_error err;
  CHECK_CODE(laminar_open(NULL, &db, &err), LAMINAR_OK, &err);
  CHECK_CODE(laminar_execute(
                 db, "CREATE SOURCE a (x BIGINT) WITH (backpressure = 'sideways')", &err),
             LAMINAR_ERR_CONFIG_VALUE, &err);
  EXPECT(err.line == 1 && err.column == 49);  // the value
  EXPECT(strstr(err.message, "drop_oldest") != NULL);
  CHECK_CODE(laminar_execute(
                 db, "CREATE SOURCE a (x BIGINT) WITH (wait_strategy = 'nap')", &err),
             LAMINAR_ERR_CONFIG_VALUE, &err);
  CHECK_CODE(
      laminar_execute(db, "CREATE SOURCE a (x BIGINT) WITH (wait_strategy = 3)", &err),
      LAMINAR_ERR_CONFIG_VALUE, &err);
  CHECK_CODE(laminar_execute(
                 db, "CREATE SOURCE a (x BIGINT) WITH (backpressur = 'block')", &err),
             LAMINAR_ERR_CONFIG_KEY, &err);
  CHECK_CODE(laminar_execute(db,
                             "CREATE SOURCE a (x BIGINT) WITH (backpressure = 'Reject', "
                             "wait_strategy = 'spin_yield(5)')",
                             &err),
             LAMINAR_OK, &err);
  CHECK_CODE(laminar_close(db), LAMINAR_OK, NULL);
  laminar_config* cfg;
  CHECK_CODE(laminar_config_create(&cfg), LAMINAR_OK, NULL);
  CHECK_CODE(laminar_config_set(cfg, "backpressure", "later", &err),
             LAMINAR_ERR_CONFIG_VALUE, &err);
  CHECK_CODE(laminar_config_set(cfg, "wait_strategy", "snooze", &err),
             LAMINAR_ERR_CONFIG_VALUE, &err);
  CHECK_CODE(laminar_config_set(cfg, "slow_subscriber", "maybe", &err),
             LAMINAR_ERR_CONFIG_VALUE, &err);
  CHECK_CODE(laminar_config_set(cfg, "backpressure", "drop_oldest", &err), LAMINAR_OK,
             &err);
  CHECK_CODE(laminar_config_set(cfg, "slow_subscriber", "drop", &err), LAMINAR_OK, &err);
  CHECK_CODE(laminar_open(cfg, &db, &err), LAMINAR_OK, &err);
  laminar_config_destroy(cfg);
  // The config's defaults reach new sources and subscriptions.
  CHECK_CODE(
      laminar_execute(db,
                      "CREATE SOURCE t (p BIGINT, seq BIGINT) WITH (buffer_size = 2);"
                      "CREATE STREAM s AS SELECT p, seq FROM t",
                      &err),
      LAMINAR_OK, &err);
  laminar_subscription* sub;
  CHECK_CODE(laminar_subscribe_with(db, "s", "buffer_size = 2", &sub, &err), LAMINAR_OK,
             &err);
  laminar_source* src;
  CHECK_CODE(laminar_source_open(db, "t", &src, &err), LAMINAR_OK, &err);
  for (int64_t s = 0; s < 5; s++)
    CHECK_CODE(push_rows(src, 0, s, 1, &err), LAMINAR_OK, &err);
  EXPECT(lm_test_metric(db, "source", "t", "dropped_batches") == 3);
  CHECK_CODE(laminar_run_until_idle(db, &err), LAMINAR_OK, &err);
  for (int64_t s = 0; s < 3; s++)
    CHECK_CODE(push_rows(src, 0, s, 1, &err), LAMINAR_OK, &err);
  CHECK_CODE(laminar_run_until_idle(db, &err), LAMINAR_OK, &err);
  EXPECT(lm_test_metric(db, "subscription", "s", "dropped_batches") == 2);
  CHECK_CODE(laminar_close(db), LAMINAR_OK, NULL);
  return 0;
}

static const lm_test_case cases[] = {
    {"four_producers_three_subscribers", test_four_producers_three_subscribers},
    {"clone_keeps_queued", test_clone_keeps_queued},
    {"clone_during_push", test_clone_during_push},
    {"drop_oldest_and_reject_inline", test_drop_oldest_and_reject_inline},
    {"drop_oldest_keeps_watermark", test_drop_oldest_keeps_watermark},
    {"drop_oldest_threaded", test_drop_oldest_threaded},
    {"reject_threaded", test_reject_threaded},
    {"slow_subscriber_drop", test_slow_subscriber_drop},
    {"spin_strategies_deliver", test_spin_strategies_deliver},
    {"park_idle_cpu", test_park_idle_cpu},
    {"push_batch", test_push_batch},
    {"option_errors", test_option_errors},
    {NULL, NULL}};

int main(int argc, char** argv) { return lm_test_main(argc, argv, cases); }
