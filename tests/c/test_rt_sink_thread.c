/*
 * test_rt_sink_thread.c -- sinks write on a thread of their own behind a
 * bounded queue (sink/queue.c, issue 26 item 5): a connector sink blocked in
 * its write does not stop the reactor from serving another stream's
 * subscriber; a full sink queue holds input (the headroom rule) and loses
 * nothing; exactly-once epochs still publish every row once.
 */
/* lm_ctest: LABELS unit concurrency TIMEOUT 120 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE  // usleep under -std=c17
#endif

#include <pthread.h>
#include <stdatomic.h>
#include <unistd.h>

#include "lm_test.h"
#include "lm_test_durable.h"
#include "lm_test_metrics.h"

static const char* TWO_SOURCES =
    "CREATE SOURCE trades (symbol VARCHAR NOT NULL, price DOUBLE, volume BIGINT, ts "
    "BIGINT);\n"
    "CREATE SOURCE quotes (symbol VARCHAR NOT NULL, price DOUBLE, volume BIGINT, ts "
    "BIGINT);\n"
    "CREATE STREAM t_out AS SELECT symbol, price FROM trades;\n"
    "CREATE STREAM q_out AS SELECT symbol, price FROM quotes;\n";

/* A connector sink whose write waits until `release` is set. */
typedef struct gate {
  atomic_int entered; /* writes begun */
  atomic_int release;
  atomic_int_fast64_t rows;           /* rows written */
  atomic_int_fast64_t committed_rows; /* rows of committed epochs */
  int64_t open_rows;                  /* rows of the epoch being written (sink thread) */
  int64_t sealed_rows;                /* rows pre-committed, not yet committed */
  atomic_int released;
} gate;

static int gate_write(void* u, struct ArrowArray* a, struct ArrowSchema* s) {
  gate* g = u;
  atomic_fetch_add(&g->entered, 1);
  while (!atomic_load(&g->release)) usleep(1000);
  atomic_fetch_add(&g->rows, a->length);
  g->open_rows += a->length;
  a->release(a);
  s->release(s);
  return 0;
}
static int gate_pre_commit(void* u, uint64_t e) {
  (void)e;
  gate* g = u;
  g->sealed_rows += g->open_rows;
  g->open_rows = 0;
  return 0;
}
static int gate_commit(void* u, uint64_t e) {
  (void)e;
  gate* g = u;
  atomic_fetch_add(&g->committed_rows, g->sealed_rows);
  g->sealed_rows = 0;
  return 0;
}
static void gate_release(void* u) { atomic_fetch_add(&((gate*)u)->released, 1); }

static laminar_sink_callbacks gate_callbacks(gate* g) {
  return (laminar_sink_callbacks){.user = g,
                                  .write = gate_write,
                                  .pre_commit = gate_pre_commit,
                                  .commit = gate_commit,
                                  .release = gate_release};
}

/* Wait up to ~10 s for *flag >= want. */
static bool wait_at_least(atomic_int* flag, int want) {
  for (int i = 0; i < 10000 && atomic_load(flag) < want; i++) usleep(1000);
  return atomic_load(flag) >= want;
}

static laminar_code open_two(const char* dir, const char* buffer_size, gate* g,
                             laminar_db** db, laminar_error* err) {
  laminar_config* c = durable_config(dir, "1 hour", "sync");
  if (c == NULL) return LAMINAR_ERR_NOMEM;
  laminar_code rc = buffer_size != NULL
                        ? laminar_config_set(c, "buffer_size", buffer_size, err)
                        : LAMINAR_OK;
  if (rc == LAMINAR_OK) rc = laminar_open(c, db, err);
  laminar_config_destroy(c);
  if (rc != LAMINAR_OK) return rc;
  rc = laminar_execute(*db, TWO_SOURCES, err);
  laminar_sink_callbacks cb = gate_callbacks(g);
  if (rc == LAMINAR_OK) rc = laminar_sink_register(*db, "gated", "t_out", &cb, err);
  return rc;
}

/* A sink blocked in its write: the reactor still serves q_out's subscriber;
 * once released, the sink writes every row and a checkpoint commits them. */
static int test_blocked_sink_keeps_reactor(void) {
  char dir[64];
  CHECK(lm_test_mkdtemp(dir, sizeof dir, "lm_sinkq_") == 0);
  gate g = {0};
  laminar_db* db;
  laminar_error err;
  CHECK_CODE(open_two(dir, NULL, &g, &db, &err), LAMINAR_OK, &err);
  laminar_subscription* sub;
  CHECK_CODE(laminar_subscribe(db, "q_out", &sub, &err), LAMINAR_OK, &err);
  laminar_source *trades, *quotes;
  CHECK_CODE(laminar_source_open(db, "trades", &trades, &err), LAMINAR_OK, &err);
  CHECK_CODE(laminar_source_open(db, "quotes", &quotes, &err), LAMINAR_OK, &err);
  CHECK_CODE(laminar_start(db, &err), LAMINAR_OK, &err);
  CHECK_CODE(push_batch(trades, 0, &err), LAMINAR_OK, &err);
  CHECK(wait_at_least(&g.entered, 1)); /* the sink is inside its write now */
  CHECK_CODE(push_batch(quotes, 1, &err), LAMINAR_OK, &err);
  struct ArrowArray out;
  laminar_code rc = laminar_subscription_next(sub, 5000, &out, NULL, &err);
  bool served = rc == LAMINAR_OK && out.release != NULL;
  atomic_store(&g.release, 1); /* let the sink go whatever happened */
  EXPECT(served);
  if (served) {
    EXPECT(out.length == ROWS);
    out.release(&out);
  }
  CHECK_CODE(push_batch(trades, 2, &err), LAMINAR_OK, &err);
  CHECK_CODE(laminar_stop(db, &err), LAMINAR_OK, &err); /* the sink's queue is written */
  EXPECT(atomic_load(&g.rows) == 2 * ROWS);
  CHECK_CODE(laminar_checkpoint(db, &err), LAMINAR_OK, &err);
  EXPECT(atomic_load(&g.committed_rows) == 2 * ROWS);
  laminar_subscription_close(sub);
  laminar_source_close(trades);
  laminar_source_close(quotes);
  CHECK_CODE(laminar_close(db), LAMINAR_OK, NULL);
  EXPECT(atomic_load(&g.released) == 1);
  remove_db(dir);
  return 0;
}

/* buffer_size 4: with the sink blocked in its first write, the reactor takes
 * trades messages while the sink queue keeps the headroom of 2 free slots,
 * so exactly 1 (in the write) + 3 (queued) are taken and the rest is held in
 * the source queue; released, every accepted row is written once. */
static int test_full_sink_queue_holds_input(void) {
  char dir[64];
  CHECK(lm_test_mkdtemp(dir, sizeof dir, "lm_sinkq_") == 0);
  gate g = {0};
  laminar_db* db;
  laminar_error err;
  CHECK_CODE(open_two(dir, "4", &g, &db, &err), LAMINAR_OK, &err);
  laminar_source* trades;
  CHECK_CODE(laminar_source_open(db, "trades", &trades, &err), LAMINAR_OK, &err);
  CHECK_CODE(laminar_start(db, &err), LAMINAR_OK, &err);
  int64_t accepted = 0;
  for (int64_t b = 0; b < 12; b++) {
    laminar_code rc = LAMINAR_OK;
    struct ArrowArray array;
    struct ArrowSchema schema;
    CHECK(trades_batch(b, &array, &schema) == 0);
    rc = laminar_source_push_timeout(trades, &array, &schema, 200, &err);
    if (array.release != NULL) array.release(&array);
    schema.release(&schema);
    if (rc == LAMINAR_OK) accepted++;
    EXPECT(rc == LAMINAR_OK || rc == LAMINAR_ERR_PUSH_TIMEOUT);
  }
  CHECK(wait_at_least(&g.entered, 1));
  int64_t taken = -1;
  for (int i = 0; i < 5000; i++) { /* settle: the reactor polls for room */
    taken = lm_test_metric(db, "source", "trades", "pushed_batches") -
            lm_test_metric(db, "source", "trades", "queue_depth");
    if (taken >= 4) break;
    usleep(1000);
  }
  usleep(50000); /* a reactor that ignored the bound would take more meanwhile */
  taken = lm_test_metric(db, "source", "trades", "pushed_batches") -
          lm_test_metric(db, "source", "trades", "queue_depth");
  printf("accepted=%lld taken_while_blocked=%lld\n", (long long)accepted,
         (long long)taken);
  EXPECT(taken == 4);
  EXPECT(accepted == 8); /* 4 taken + a source queue of 4 */
  atomic_store(&g.release, 1);
  CHECK_CODE(laminar_stop(db, &err), LAMINAR_OK, &err);
  EXPECT(atomic_load(&g.rows) == accepted * ROWS);
  CHECK_CODE(laminar_checkpoint(db, &err), LAMINAR_OK, &err);
  EXPECT(atomic_load(&g.committed_rows) == accepted * ROWS);
  laminar_source_close(trades);
  CHECK_CODE(laminar_close(db), LAMINAR_OK, NULL);
  remove_db(dir);
  return 0;
}

int main(int argc, char** argv) {
  static const lm_test_case cases[] = {
      {"blocked_sink_keeps_reactor", test_blocked_sink_keeps_reactor},
      {"full_sink_queue_holds_input", test_full_sink_queue_holds_input},
      {NULL, NULL},
  };
  return lm_test_main(argc, argv, cases);
}
