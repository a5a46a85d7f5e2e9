/*
 * queue.c -- a sink behind a bounded queue and a thread of its own (sink.h
 * lm_sink_queue_open), so the reactor never blocks on a sink's disk I/O or on
 * a connector's callback (and so on the Python GIL). Issue 26 item 5.
 *
 * DESIGN
 * ------
 * Producer: the thread driving the graph (reactor 0, or the caller of
 * run_until_idle / of WAL replay at open; never two at once), which queues a
 * reference to each output batch (write_batch) and, at a checkpoint barrier,
 * an epoch mark (mark_epoch: pre_commit, then begin of the next epoch). The
 * queue is an SPSC ring (chan/ring.h) of tagged pointers: a batch, or a mark
 * (low bit set). The reactor's headroom rule counts the ring's free slots
 * (room), so a full sink queue holds input as a full subscriber ring does;
 * the producer waits only if the ring is full anyway (a path that does not
 * check headroom: replay, a keyed stream's split publish).
 * Consumer: the sink thread, which pops items in order and runs the inner
 * sink's write / pre_commit + begin. It parks on `work` when the ring is empty.
 * Control steps (begin at CREATE, recover, sync, commit, pre_commit outside a
 * barrier, close) run on the caller's thread after waiting until the sink
 * thread finished every item queued before the call; every call into the
 * inner sink but sync holds call_mu, so a connector never sees two at once (`done` reaches the
 * `pushed` count read at the call; acquire/release on both): the inner sink
 * sees its steps in the same order as without the queue. sync runs while the
 * sink thread may write the next epoch, as it ran while the reactor did.
 * Errors: the first failed write is sticky (write_batch and drain return its
 * code, last_error its text: the reactor fails as when it wrote itself); a
 * failed mark is kept until the next sync or commit reports it (the
 * checkpoint then fails and publishes nothing).
 */
#include "sink/sink.h"

#include "chan/wait.h"
#include "util/util.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

typedef struct epoch_mark {
  uint64_t next_epoch;
} epoch_mark;

typedef struct sink_queue {
  lm_sink base;
  lm_sink* inner;
  lm_ring* ring;  /* of tagged items; producer: the graph's driver */
  lm_waiter work; /* the sink thread parks here; producer notifies */
  lm_waiter idle; /* waiters for `done` or room; the sink thread notifies */
  lm_wait wait;
  pthread_t thread;
  atomic_bool stop; /* writer: close (release); reader: sink thread */
  /* Items queued / finished. writer: producer / sink thread (release);
   * readers acquire, so a finished item's effects are visible. */
  atomic_uint_fast64_t pushed;
  atomic_uint_fast64_t done;
  /* Held around every call into `inner` but sync (which the inner sink
   * allows beside a write): a connector never sees two calls at once. */
  pthread_mutex_t call_mu;
  /* Errors: under err_mu (written by the sink thread, read by any). */
  pthread_mutex_t err_mu;
  laminar_code write_rc; /* sticky */
  char write_msg[sizeof(((laminar_error*)0)->message)];
  laminar_code mark_rc; /* until reported */
  laminar_error mark_err;
} sink_queue;

#define MARK_TAG ((uintptr_t)1)

/* ---- the sink thread ------------------------------------------------------------- */

static bool has_work_or_stop(void* arg) {
  sink_queue* q = arg;
  return lm_ring_size(q->ring) > 0 ||
         atomic_load_explicit(&q->stop, memory_order_acquire);
}

static void run_item(sink_queue* q, void* item) {
  laminar_error e;
  if (((uintptr_t)item & MARK_TAG) != 0) {
    epoch_mark* m = (epoch_mark*)((uintptr_t)item & ~MARK_TAG);
    pthread_mutex_lock(&q->call_mu);
    laminar_code rc = q->inner->vt->pre_commit(q->inner, &e);
    if (rc == LAMINAR_OK) rc = q->inner->vt->begin(q->inner, m->next_epoch, &e);
    pthread_mutex_unlock(&q->call_mu);
    lm_free(m);
    if (rc != LAMINAR_OK) {
      pthread_mutex_lock(&q->err_mu);
      if (q->mark_rc == LAMINAR_OK) {
        q->mark_rc = rc;
        q->mark_err = e;
      }
      pthread_mutex_unlock(&q->err_mu);
    }
    return;
  }
  lm_batch* batch = item;
  pthread_mutex_lock(&q->err_mu);
  bool failed = q->write_rc != LAMINAR_OK;
  pthread_mutex_unlock(&q->err_mu);
  if (!failed) {
    lm_error_clear(&e);
    pthread_mutex_lock(&q->call_mu);
    laminar_code rc = q->inner->vt->write(q->inner, batch->cols, batch->nrows, &e);
    pthread_mutex_unlock(&q->call_mu);
    if (rc != LAMINAR_OK) {
      pthread_mutex_lock(&q->err_mu);
      q->write_rc = rc;
      snprintf(q->write_msg, sizeof q->write_msg, "%s", e.message);
      pthread_mutex_unlock(&q->err_mu);
    }
  }
  lm_batch_unref(batch);
}

static void* sink_thread(void* arg) {
  sink_queue* q = arg;
  lm_fault_join(); /* test builds: its writes and allocations count as the test's */
  for (;;) {
    void* item;
    if (!lm_ring_pop(q->ring, &item)) {
      /* stop is set after the last push: one more pop decides. */
      if (atomic_load_explicit(&q->stop, memory_order_acquire)) {
        if (!lm_ring_pop(q->ring, &item)) break;
      } else {
        lm_wait_until(&q->wait, &q->work, 50000000, has_work_or_stop, q);
        continue;
      }
    }
    run_item(q, item);
    atomic_fetch_add_explicit(&q->done, 1, memory_order_release);
    lm_waiter_notify(&q->idle);
  }
  return NULL;
}

/* ---- waiting for the sink thread ------------------------------------------------ */

typedef struct done_wait {
  sink_queue* q;
  uint64_t target;
} done_wait;

static bool done_reached(void* arg) {
  const done_wait* w = arg;
  return atomic_load_explicit(&w->q->done, memory_order_acquire) >= w->target;
}

/* Wait until every item queued before this call is done. */
static void wait_done(sink_queue* q) {
  done_wait w = {q, atomic_load_explicit(&q->pushed, memory_order_acquire)};
  while (!done_reached(&w)) lm_wait_until(&q->wait, &q->idle, 50000000, done_reached, &w);
}

static bool has_room(void* arg) {
  const sink_queue* q = arg;
  return lm_ring_size(q->ring) < lm_ring_capacity(q->ring);
}

static void push_item(sink_queue* q, void* item) {
  while (!lm_ring_push(q->ring, item)) {
    lm_waiter_notify(&q->work);
    lm_wait_until(&q->wait, &q->idle, 50000000, has_room, q);
  }
  atomic_fetch_add_explicit(&q->pushed, 1, memory_order_release);
  lm_waiter_notify(&q->work);
}

/* The mark's failure, once (cleared), else OK. */
static laminar_code take_mark_error(sink_queue* q, laminar_error* err) {
  pthread_mutex_lock(&q->err_mu);
  laminar_code rc = q->mark_rc;
  if (rc != LAMINAR_OK && err != NULL) *err = q->mark_err;
  q->mark_rc = LAMINAR_OK;
  pthread_mutex_unlock(&q->err_mu);
  return rc;
}

static laminar_code write_error(sink_queue* q) {
  pthread_mutex_lock(&q->err_mu);
  laminar_code rc = q->write_rc;
  pthread_mutex_unlock(&q->err_mu);
  return rc;
}

/* ---- the lm_sink interface -------------------------------------------------------- */

static laminar_code q_write_batch(lm_sink* base, lm_batch* batch) {
  sink_queue* q = (sink_queue*)base;
  LM_TRY(write_error(q));
  lm_batch_ref(batch);
  push_item(q, batch);
  return LAMINAR_OK;
}

static laminar_code q_mark_epoch(lm_sink* base, uint64_t next_epoch) {
  sink_queue* q = (sink_queue*)base;
  epoch_mark* m = lm_malloc(sizeof *m);
  if (m == NULL) return LAMINAR_ERR_NOMEM;
  m->next_epoch = next_epoch;
  push_item(q, (void*)((uintptr_t)m | MARK_TAG));
  return LAMINAR_OK;
}

static laminar_code q_drain(lm_sink* base) {
  sink_queue* q = (sink_queue*)base;
  wait_done(q);
  return write_error(q);
}

static uint32_t q_room(const lm_sink* base) {
  const sink_queue* q = (const sink_queue*)base;
  return lm_ring_capacity(q->ring) - lm_ring_size(q->ring);
}

/* Rows come as batches (write_batch); a direct write of columns is queued
 * nowhere: it runs in order on the caller's thread. */
static laminar_code q_write(lm_sink* base, const lm_vec* cols, int64_t nrows,
                            laminar_error* err) {
  sink_queue* q = (sink_queue*)base;
  wait_done(q);
  pthread_mutex_lock(&q->call_mu);
  laminar_code rc = q->inner->vt->write(q->inner, cols, nrows, err);
  pthread_mutex_unlock(&q->call_mu);
  return rc;
}

static laminar_code q_begin(lm_sink* base, uint64_t epoch, laminar_error* err) {
  sink_queue* q = (sink_queue*)base;
  wait_done(q);
  pthread_mutex_lock(&q->call_mu);
  laminar_code rc = q->inner->vt->begin(q->inner, epoch, err);
  pthread_mutex_unlock(&q->call_mu);
  return rc;
}

static laminar_code q_pre_commit(lm_sink* base, laminar_error* err) {
  sink_queue* q = (sink_queue*)base;
  wait_done(q);
  pthread_mutex_lock(&q->call_mu);
  laminar_code rc = q->inner->vt->pre_commit(q->inner, err);
  pthread_mutex_unlock(&q->call_mu);
  return rc;
}

static laminar_code q_sync(lm_sink* base, laminar_error* err) {
  sink_queue* q = (sink_queue*)base;
  wait_done(q);
  LM_TRY(take_mark_error(q, err));
  return q->inner->vt->sync != NULL ? q->inner->vt->sync(q->inner, err) : LAMINAR_OK;
}

static laminar_code q_commit(lm_sink* base, uint64_t epoch, laminar_error* err) {
  sink_queue* q = (sink_queue*)base;
  wait_done(q);
  LM_TRY(take_mark_error(q, err));
  pthread_mutex_lock(&q->call_mu);
  laminar_code rc = q->inner->vt->commit(q->inner, epoch, err);
  pthread_mutex_unlock(&q->call_mu);
  return rc;
}

static laminar_code q_recover(lm_sink* base, uint64_t checkpointed, laminar_error* err) {
  sink_queue* q = (sink_queue*)base;
  wait_done(q);
  (void)take_mark_error(q, NULL); /* what recovery undoes */
  pthread_mutex_lock(&q->call_mu);
  laminar_code rc = q->inner->vt->recover(q->inner, checkpointed, err);
  pthread_mutex_unlock(&q->call_mu);
  return rc;
}

static const char* q_last_error(lm_sink* base) {
  sink_queue* q = (sink_queue*)base;
  if (write_error(q) != LAMINAR_OK) return q->write_msg; /* sticky: no longer written */
  if (q->inner->vt->last_error == NULL) return NULL;
  pthread_mutex_lock(&q->call_mu);
  const char* text = q->inner->vt->last_error(q->inner);
  pthread_mutex_unlock(&q->call_mu);
  return text;
}

static void q_close(lm_sink* base) {
  sink_queue* q = (sink_queue*)base;
  atomic_store_explicit(&q->stop, true, memory_order_release);
  lm_waiter_notify(&q->work);
  pthread_join(q->thread, NULL); /* runs what is queued first */
  q->inner->vt->close(q->inner);
  lm_ring_destroy(q->ring);
  lm_waiter_destroy(&q->work);
  lm_waiter_destroy(&q->idle);
  pthread_mutex_destroy(&q->err_mu);
  pthread_mutex_destroy(&q->call_mu);
  lm_free(q);
}

static const lm_sink_vt QUEUE_VT = {.write = q_write,
                                    .begin = q_begin,
                                    .pre_commit = q_pre_commit,
                                    .sync = q_sync,
                                    .commit = q_commit,
                                    .recover = q_recover,
                                    .close = q_close,
                                    .last_error = q_last_error,
                                    .write_batch = q_write_batch,
                                    .mark_epoch = q_mark_epoch,
                                    .drain = q_drain,
                                    .room = q_room};

laminar_code lm_sink_queue_open(lm_sink* inner, uint32_t capacity, lm_sink** out,
                                laminar_error* err) {
  *out = NULL;
  sink_queue* q = lm_calloc(1, sizeof *q);
  if (q == NULL || lm_ring_create(capacity, &q->ring) != LAMINAR_OK) {
    lm_free(q);
    inner->vt->close(inner);
    return lm_error_set(err, LAMINAR_ERR_NOMEM, "out of memory");
  }
  q->base.vt = &QUEUE_VT;
  q->inner = inner;
  q->wait = lm_wait_default();
  atomic_init(&q->stop, false);
  atomic_init(&q->pushed, 0);
  atomic_init(&q->done, 0);
  laminar_code rc = lm_waiter_init(&q->work);
  if (rc == LAMINAR_OK && (rc = lm_waiter_init(&q->idle)) != LAMINAR_OK) {
    lm_waiter_destroy(&q->work);
  }
  if (rc == LAMINAR_OK && pthread_mutex_init(&q->err_mu, NULL) != 0) {
    lm_waiter_destroy(&q->work);
    lm_waiter_destroy(&q->idle);
    rc = LAMINAR_ERR_INTERNAL;
  }
  if (rc == LAMINAR_OK && pthread_mutex_init(&q->call_mu, NULL) != 0) {
    pthread_mutex_destroy(&q->err_mu);
    lm_waiter_destroy(&q->work);
    lm_waiter_destroy(&q->idle);
    rc = LAMINAR_ERR_INTERNAL;
  }
  if (rc == LAMINAR_OK && pthread_create(&q->thread, NULL, sink_thread, q) != 0) {
    pthread_mutex_destroy(&q->call_mu);
    pthread_mutex_destroy(&q->err_mu);
    lm_waiter_destroy(&q->work);
    lm_waiter_destroy(&q->idle);
    rc = LAMINAR_ERR_INTERNAL;
  }
  if (rc != LAMINAR_OK) {
    lm_ring_destroy(q->ring);
    lm_free(q);
    inner->vt->close(inner);
    return lm_error_set(err, rc, "cannot start a sink thread");
  }
  *out = &q->base;
  return LAMINAR_OK;
}

lm_sink* lm_sink_queue_inner(lm_sink* s) {
  return s->vt == &QUEUE_VT ? ((sink_queue*)s)->inner : s;
}
