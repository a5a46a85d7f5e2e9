/*
 * test_source_timeout.c -- laminar_source_push_timeout,
 * laminar_source_push_batch_timeout and laminar_source_watermark_timeout: a push blocked on a full queue (block
 * back-pressure, a started runtime, a subscriber nobody reads) gives up after
 * its timeout with LAMINAR_ERR_PUSH_TIMEOUT, leaves the array the caller's and
 * ingests (and, with a WAL, logs) nothing; once the queue drains the same
 * array goes in. Sources that never wait answer as laminar_source_push().
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE  // mkdtemp under -std=c17
#endif

#include "lm_test.h"
#include "lm_test_fs.h"
#include "lm_test_metrics.h"
#include "arrow_build.h"
#include "db/internal.h"

#include <pthread.h>
#include <sched.h>
#include <string.h>

static const char* DDL =
    "CREATE SOURCE trades (symbol VARCHAR NOT NULL, price DOUBLE, volume BIGINT, ts "
    "BIGINT);\n"
    "CREATE STREAM rows_out AS SELECT symbol, volume FROM trades;\n";

/* Open a database with 2-slot queues: durable with a sync WAL in `dir`, or in
 * memory when dir is NULL. */
static laminar_code open_small(const char* dir, const char* backpressure, laminar_db** db,
                               laminar_error* err) {
  laminar_config* c = NULL;
  laminar_code rc = laminar_config_create(&c);
  if (rc != LAMINAR_OK) return rc;
  rc = laminar_config_set(c, "buffer_size", "2", err);
  if (rc == LAMINAR_OK) rc = laminar_config_set(c, "backpressure", backpressure, err);
  if (rc == LAMINAR_OK && dir != NULL) {
    rc = laminar_config_set(c, "data_dir", dir, err);
    if (rc == LAMINAR_OK)
      rc = laminar_config_set(c, "checkpoint_interval", "1 hour", err);
    if (rc == LAMINAR_OK) rc = laminar_config_set(c, "wal_mode", "sync", err);
  }
  if (rc == LAMINAR_OK) rc = laminar_open(c, db, err);
  laminar_config_destroy(c);
  return rc;
}

static int one_row(int64_t volume, struct ArrowArray* array, struct ArrowSchema* schema) {
  trade_row row = {"A", 1.0, false, volume, false, 1000 + volume};
  return build_trades(&row, 1, false, array, schema);
}

static int64_t offset_of(laminar_source* src) {
  int64_t off = -1;
  laminar_error err;
  if (laminar_source_offset(src, &off, &err) != LAMINAR_OK) return -1;
  return off;
}

/* Push with a timeout until one times out (the queues are full): returns the
 * number of pushes that went in, or -1. The timed-out array is in *array. */
static int64_t fill(laminar_source* src, struct ArrowArray* array,
                    struct ArrowSchema* schema) {
  laminar_error err;
  for (int64_t ok = 0; ok < 64; ok++) {
    if (one_row(ok, array, schema) != 0) return -1;
    laminar_code rc = laminar_source_push_timeout(src, array, schema, 200, &err);
    if (rc == LAMINAR_ERR_PUSH_TIMEOUT) {
      if (array->release == NULL || strncmp(err.message, "LDB-3009: ", 10) != 0 ||
          strstr(err.message, "'trades'") == NULL || strcmp(err.object, "trades") != 0) {
        fprintf(stderr, "bad timeout: %s\n", err.message);
        return -1;
      }
      return ok;
    }
    schema->release(schema);
    if (rc != LAMINAR_OK || array->release != NULL) {
      fprintf(stderr, "push %lld: %s\n", (long long)ok, lm_test_errmsg(&err));
      return -1;
    }
  }
  return -1; /* never filled up */
}

/* A block database (open_small) with the DDL, a producer handle, a
 * subscription to rows_out and the runtime started: 0, or 1 (a CHECK failed). */
static int start_blocked(const char* dir, laminar_db** db, laminar_source** src,
                         laminar_subscription** sub) {
  laminar_error err;
  CHECK_CODE(open_small(dir, "block", db, &err), LAMINAR_OK, &err);
  CHECK_CODE(laminar_execute(*db, DDL, &err), LAMINAR_OK, &err);
  CHECK_CODE(laminar_source_open(*db, "trades", src, &err), LAMINAR_OK, &err);
  CHECK_CODE(laminar_subscribe(*db, "rows_out", sub, &err), LAMINAR_OK, &err);
  CHECK_CODE(laminar_start(*db, &err), LAMINAR_OK, &err);
  return 0;
}

static int timeout_case(bool durable) {
  char dir[64];
  if (durable) CHECK(lm_test_mkdtemp(dir, sizeof dir, "lm_pto_") == 0);
  laminar_error err;
  laminar_db* db;
  laminar_source* src;
  laminar_subscription* sub; /* never read while filling: it holds the reactor */
  struct ArrowArray array;
  struct ArrowSchema schema;
  CHECK(start_blocked(durable ? dir : NULL, &db, &src, &sub) == 0);
  int64_t ok = fill(src, &array, &schema);
  CHECK(ok >= 2 && ok <= 8); /* 2 source slots + 2 subscriber slots + in hand */
  int64_t off = offset_of(src);
  if (durable) CHECK(off == ok + 1); /* the timed-out push was not logged */
  /* 0: no wait at all; the watermark times out the same way, unlogged. */
  CHECK_CODE(laminar_source_push_timeout(src, &array, &schema, 0, &err),
             LAMINAR_ERR_PUSH_TIMEOUT, &err);
  CHECK(array.release != NULL);
  CHECK_CODE(laminar_source_watermark_timeout(src, 5000, 30, &err),
             LAMINAR_ERR_PUSH_TIMEOUT, &err);
  CHECK(offset_of(src) == off);
  EXPECT(lm_test_metric(db, "source", "trades", "pushed_batches") == ok);

  /* The reader comes back: the same array goes in, then a watermark. */
  laminar_subscription_close(sub);
  CHECK_CODE(laminar_source_push_timeout(src, &array, &schema, 10000, &err), LAMINAR_OK,
             &err);
  CHECK(array.release == NULL);
  schema.release(&schema);
  CHECK_CODE(laminar_source_watermark_timeout(src, 5000, -1, &err), LAMINAR_OK, &err);
  CHECK_CODE(laminar_stop(db, &err), LAMINAR_OK, &err);
  EXPECT(lm_test_metric(db, "source", "trades", "pushed_batches") == ok + 1);
  EXPECT(lm_test_metric(db, "stream", "rows_out", "rows_in") == ok + 1);
  if (durable) EXPECT(offset_of(src) == ok + 3);

  /* Stopped runtime: a block source does not wait, timeout or not. */
  for (int i = 0; i < 2; i++) {
    CHECK(one_row(100 + i, &array, &schema) == 0);
    CHECK_CODE(laminar_source_push_timeout(src, &array, &schema, 10000, &err), LAMINAR_OK,
               &err);
    schema.release(&schema);
  }
  CHECK(one_row(102, &array, &schema) == 0);
  CHECK_CODE(laminar_source_push_timeout(src, &array, &schema, 10000, &err),
             LAMINAR_ERR_QUEUE_FULL, &err);
  CHECK(array.release != NULL);
  array.release(&array);
  schema.release(&schema);
  CHECK_CODE(laminar_source_watermark_timeout(src, 6000, 10000, &err),
             LAMINAR_ERR_QUEUE_FULL, &err);
  laminar_source_close(src);
  CHECK_CODE(laminar_close(db), LAMINAR_OK, NULL);
  if (durable) lm_test_rmdir(dir);
  return 0;
}

/* laminar_source_push_batch_timeout: a run that fits the queue is all or
 * nothing within the timeout -- a timed-out call ingests and logs none of
 * its arrays and leaves them all the caller's --; once the queue drains the
 * same arrays go in, in order. */
static int batch_timeout_case(bool durable) {
  char dir[64];
  if (durable) CHECK(lm_test_mkdtemp(dir, sizeof dir, "lm_pbt_") == 0);
  laminar_error err;
  laminar_db* db;
  laminar_source* src;
  laminar_subscription* sub;
  struct ArrowArray one;
  struct ArrowSchema one_schema;
  CHECK(start_blocked(durable ? dir : NULL, &db, &src, &sub) == 0);
  int64_t ok = fill(src, &one, &one_schema);
  CHECK(ok >= 2 && ok <= 8);
  one.release(&one);
  one_schema.release(&one_schema);
  int64_t off = offset_of(src);
  struct ArrowArray arrays[2];
  struct ArrowSchema schemas[2];
  for (int i = 0; i < 2; i++) CHECK(one_row(200 + i, &arrays[i], &schemas[i]) == 0);
  int64_t pushed = -1;
  CHECK_CODE(
      laminar_source_push_batch_timeout(src, arrays, 2, &schemas[0], 150, &pushed, &err),
      LAMINAR_ERR_PUSH_TIMEOUT, &err);
  CHECK(pushed == 0);
  CHECK(arrays[0].release != NULL && arrays[1].release != NULL);
  CHECK(offset_of(src) == off); /* nothing logged */
  EXPECT(lm_test_metric(db, "source", "trades", "pushed_batches") == ok);
  laminar_subscription_close(sub);
  CHECK_CODE(
      laminar_source_push_batch_timeout(src, arrays, 2, &schemas[0], -1, &pushed, &err),
      LAMINAR_OK, &err);
  CHECK(pushed == 2 && arrays[0].release == NULL && arrays[1].release == NULL);
  for (int i = 0; i < 2; i++) schemas[i].release(&schemas[i]);
  CHECK_CODE(laminar_stop(db, &err), LAMINAR_OK, &err);
  EXPECT(lm_test_metric(db, "stream", "rows_out", "rows_in") == ok + 2);
  if (durable) EXPECT(offset_of(src) == ok + 3);
  laminar_source_close(src);
  CHECK_CODE(laminar_close(db), LAMINAR_OK, NULL);
  if (durable) lm_test_rmdir(dir);
  return 0;
}

static int test_batch_timeout_in_memory(void) { return batch_timeout_case(false); }
static int test_batch_timeout_sync_wal(void) { return batch_timeout_case(true); }

static int test_timeout_in_memory(void) { return timeout_case(false); }
static int test_timeout_sync_wal(void) { return timeout_case(true); }

/* A laminar_source_push (no time limit) on a thread of its own. */
typedef struct blocked_push {
  laminar_source* src;
  laminar_code rc;
  bool moved;
} blocked_push;

static void* push_without_limit(void* arg) {
  blocked_push* p = arg;
  struct ArrowArray array;
  struct ArrowSchema schema;
  p->rc = LAMINAR_ERR_INTERNAL;
  if (one_row(999, &array, &schema) != 0) return NULL;
  laminar_error err;
  p->rc = laminar_source_push(p->src, &array, &schema, &err);
  p->moved = array.release == NULL;
  if (array.release != NULL) array.release(&array);
  schema.release(&schema);
  return NULL;
}

/* With a WAL, a blocked push whose runtime stops under it returns
 * LAMINAR_ERR_QUEUE_FULL and has logged nothing: it waits for room before
 * its record is written. (White-box: the source's `room` waiter shows the
 * producer parked in the wait before the runtime is stopped.) */
static int test_stop_under_a_blocked_wal_push(void) {
  char dir[64];
  CHECK(lm_test_mkdtemp(dir, sizeof dir, "lm_pto_") == 0);
  laminar_error err;
  laminar_db* db;
  laminar_source* src;
  laminar_subscription* sub;
  struct ArrowArray array;
  struct ArrowSchema schema;
  CHECK(start_blocked(dir, &db, &src, &sub) == 0);
  int64_t ok = fill(src, &array, &schema);
  CHECK(ok >= 2);
  array.release(&array);
  schema.release(&schema);
  int64_t off = offset_of(src);
  CHECK(off == ok + 1);

  blocked_push p = {src, LAMINAR_OK, false};
  pthread_t thread;
  CHECK(pthread_create(&thread, NULL, push_without_limit, &p) == 0);
  lm_source_def* def = lm_db_find_source(db, "trades");
  /* Parked (park strategy: after its polls it sleeps on `room`); bounded. */
  bool parked = false;
  for (long i = 0; i < 200000000L && !parked; i++) {
    parked = atomic_load(&def->room.sleepers) > 0;
    if (!parked) sched_yield();
  }
  EXPECT(parked);
  CHECK_CODE(laminar_stop(db, &err), LAMINAR_OK, &err); /* ~1 s: nobody reads */
  CHECK(pthread_join(thread, NULL) == 0);
  EXPECT(p.rc == LAMINAR_ERR_QUEUE_FULL);
  EXPECT(!p.moved);
  EXPECT(offset_of(src) == off); /* not logged: a restart will not replay it */
  laminar_subscription_close(sub);
  laminar_source_close(src);
  CHECK_CODE(laminar_close(db), LAMINAR_OK, NULL);
  lm_test_rmdir(dir);
  return 0;
}

/* reject never waits: a timeout changes nothing, the refusal is counted. */
static int test_reject_answers_as_push(void) {
  laminar_error err;
  laminar_db* db;
  CHECK_CODE(open_small(NULL, "reject", &db, &err), LAMINAR_OK, &err);
  CHECK_CODE(laminar_execute(db, DDL, &err), LAMINAR_OK, &err);
  laminar_source* src;
  CHECK_CODE(laminar_source_open(db, "trades", &src, &err), LAMINAR_OK, &err);
  struct ArrowArray array;
  struct ArrowSchema schema;
  for (int i = 0; i < 3; i++) {
    CHECK(one_row(i, &array, &schema) == 0);
    laminar_code rc = laminar_source_push_timeout(src, &array, &schema, 10000, &err);
    CHECK_CODE(rc, i < 2 ? LAMINAR_OK : LAMINAR_ERR_QUEUE_FULL, &err);
    if (array.release != NULL) array.release(&array);
    schema.release(&schema);
  }
  EXPECT(lm_test_metric(db, "source", "trades", "rejected_batches") == 1);
  CHECK_CODE(laminar_source_push_timeout(NULL, &array, &schema, 1, &err),
             LAMINAR_ERR_MISUSE, &err);
  CHECK_CODE(laminar_source_watermark_timeout(NULL, 1, 1, &err), LAMINAR_ERR_MISUSE,
             &err);
  laminar_source_close(src);
  CHECK_CODE(laminar_close(db), LAMINAR_OK, NULL);
  return 0;
}

static const lm_test_case cases[] = {
    {"timeout_in_memory", test_timeout_in_memory},
    {"timeout_sync_wal", test_timeout_sync_wal},
    {"batch_timeout_in_memory", test_batch_timeout_in_memory},
    {"batch_timeout_sync_wal", test_batch_timeout_sync_wal},
    {"stop_under_a_blocked_wal_push", test_stop_under_a_blocked_wal_push},
    {"reject_answers_as_push", test_reject_answers_as_push},
    {NULL, NULL},
};

int main(int argc, char** argv) { return lm_test_main(argc, argv, cases); }
