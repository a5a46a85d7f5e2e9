/*
 * source.c -- a source's queue, both sides: setup, the producer's enqueue
 * with back-pressure and the WAL-order lock, and the consumer's take (see
 * source.h).
 *
 * DESIGN
 * ------
 * Producers run this on their own threads: one push onto the source's queue
 * (chan/mpsc.h: a store while the source has one handle, a CAS after
 * laminar_source_clone) and a wake-up of the reactor. No lock is taken on
 * this path, except with a WAL or offsets to number (log and enqueue under
 * the source's log_mu, so queue order is WAL order). A full queue -- in slots,
 * or in bytes under max_queue_bytes -- gets the source's back-pressure
 * policy: block (wait with the source's wait strategy on its `room` waiter,
 * which the reactor notifies once per round it took messages in, and
 * laminar_stop / DROP SOURCE notify too), drop_oldest (take the head message
 * off the queue, counted; an explicit watermark's value is carried to the
 * reactor) or reject (refused, counted). The consumer -- the reactor, or the
 * caller of run_until_idle -- takes messages with lm_source_take.
 */
#include "rt/source.h"

#include "store/wal.h"
#include "util/util.h"

#include <stdio.h>
#include <string.h>

/* ---- setup and the consumer side ----------------------------------------------- */

bool lm_backpressure_parse(const char* text, lm_backpressure* out) {
  if (lm_streq_nocase(text, "block")) {
    *out = LM_BP_BLOCK;
  } else if (lm_streq_nocase(text, "drop_oldest")) {
    *out = LM_BP_DROP_OLDEST;
  } else if (lm_streq_nocase(text, "reject")) {
    *out = LM_BP_REJECT;
  } else {
    return false;
  }
  return true;
}

const char* lm_backpressure_name(lm_backpressure bp) {
  switch (bp) {
    case LM_BP_DROP_OLDEST: return "drop_oldest";
    case LM_BP_REJECT: return "reject";
    case LM_BP_BLOCK: break;
  }
  return "block";
}

laminar_code lm_source_def_init_queue(lm_source_def* def, uint32_t capacity,
                                      lm_backpressure bp, lm_wait wait) {
  def->backpressure = bp;
  def->wait = wait;
  atomic_init(&def->producers, 0);
  atomic_init(&def->dropped_batches, 0);
  atomic_init(&def->dropped_rows, 0);
  atomic_init(&def->rejected_batches, 0);
  atomic_init(&def->carried_watermark, INT64_MIN);
  atomic_init(&def->queued_bytes, 0);
  atomic_init(&def->align_wm, INT64_MIN);
  atomic_init(&def->align_limit, INT64_MAX);
  LM_TRY(lm_waiter_init(&def->room));
  if (pthread_mutex_init(&def->log_mu, NULL) != 0) {
    lm_waiter_destroy(&def->room);
    return LAMINAR_ERR_INTERNAL;
  }
  /* Created last: queue != NULL means the waiter and the lock exist too. */
  laminar_code rc = lm_mpsc_create(capacity, bp == LM_BP_DROP_OLDEST, &def->queue);
  if (rc != LAMINAR_OK) {
    pthread_mutex_destroy(&def->log_mu);
    lm_waiter_destroy(&def->room);
  }
  return rc;
}

bool lm_source_take(lm_source_def* src, bool steal, lm_msg** out) {
  void* item;
  if (!(steal ? lm_mpsc_steal(src->queue, &item) : lm_mpsc_pop(src->queue, &item))) {
    return false;
  }
  lm_msg* msg = item;
  if (msg->batch != NULL) {
    atomic_fetch_sub_explicit(&src->queued_bytes, msg->batch->bytes,
                              memory_order_relaxed);
  }
  *out = msg;
  return true;
}

void lm_msg_free(lm_msg* msg) {
  lm_batch_unref(msg->batch);
  lm_free(msg);
}

/* ---- the producer side: waits and refusals ------------------------------------- */

lm_push_wait lm_push_no_wait(void) { return (lm_push_wait){false, -1, 0}; }

lm_push_wait lm_push_wait_forever(void) { return (lm_push_wait){true, -1, -1}; }

lm_push_wait lm_push_wait_for(int64_t timeout_ms) {
  if (timeout_ms < 0) return lm_push_wait_forever();
  int64_t ms = timeout_ms > INT64_MAX / 2000000 ? INT64_MAX / 2000000 : timeout_ms;
  return (lm_push_wait){true, lm_rt_now_ns() + ms * 1000000, timeout_ms};
}

laminar_code lm_source_check_open(const lm_source_def* def, laminar_error* err) {
  if (!atomic_load_explicit(&def->dropped, memory_order_acquire)) return LAMINAR_OK;
  lm_error_set(err, LAMINAR_ERR_SOURCE_CLOSED, "source '%s' was dropped", def->name);
  lm_error_object(err, def->name, NULL);
  return LAMINAR_ERR_SOURCE_CLOSED;
}

bool lm_source_held_back(const lm_source_def* def) {
  if (def->align_group == NULL) return false;
  return atomic_load_explicit(&def->align_wm, memory_order_relaxed) >
         atomic_load_explicit(&def->align_limit, memory_order_relaxed);
}

static laminar_code queue_full(const lm_source_def* def, laminar_error* err) {
  if (lm_source_held_back(def)) {
    long long wm = (long long)atomic_load_explicit(&def->align_wm, memory_order_relaxed);
    long long limit =
        (long long)atomic_load_explicit(&def->align_limit, memory_order_relaxed);
    lm_error_set(err, LAMINAR_ERR_QUEUE_FULL,
                 "source '%s': held back by its alignment group '%s': its watermark %lld "
                 "is more than max_drift %lld ms ahead of the group's slowest member "
                 "(%lld); push again once the others caught up",
                 def->name, def->align_group, wm, (long long)def->max_drift_ms,
                 limit - (long long)def->max_drift_ms);
    lm_error_object(err, def->name, NULL);
    return LAMINAR_ERR_QUEUE_FULL;
  }
  long long queued =
      (long long)atomic_load_explicit(&def->queued_bytes, memory_order_relaxed);
  if (def->backpressure == LM_BP_REJECT) {
    lm_error_set(
        err, LAMINAR_ERR_QUEUE_FULL,
        "source '%s': queue full (%u of %u messages, %lld of max_queue_bytes %lld "
        "bytes), push rejected (backpressure = 'reject')",
        def->name, lm_mpsc_size(def->queue), lm_mpsc_capacity(def->queue), queued,
        (long long)def->max_queue_bytes);
  } else {
    lm_error_set(
        err, LAMINAR_ERR_QUEUE_FULL,
        "source '%s': queue full (%u of %u messages, %lld of max_queue_bytes %lld "
        "bytes); call laminar_run_until_idle() or laminar_start() to drain it",
        def->name, lm_mpsc_size(def->queue), lm_mpsc_capacity(def->queue), queued,
        (long long)def->max_queue_bytes);
  }
  lm_error_object(err, def->name, NULL);
  return LAMINAR_ERR_QUEUE_FULL;
}

static laminar_code push_timeout(const lm_source_def* def, const lm_push_wait* how,
                                 laminar_error* err) {
  if (lm_source_held_back(def)) {
    lm_error_set(err, LAMINAR_ERR_PUSH_TIMEOUT,
                 "source '%s': held back by its alignment group '%s' (more than "
                 "max_drift %lld ms ahead of its slowest member) for %lld ms; "
                 "nothing ingested",
                 def->name, def->align_group, (long long)def->max_drift_ms,
                 (long long)how->timeout_ms);
  } else {
    lm_error_set(err, LAMINAR_ERR_PUSH_TIMEOUT,
                 "source '%s': no room in its queue (%u messages) within %lld ms; "
                 "nothing ingested",
                 def->name, lm_mpsc_capacity(def->queue), (long long)how->timeout_ms);
  }
  lm_error_object(err, def->name, NULL);
  return LAMINAR_ERR_PUSH_TIMEOUT;
}

static bool runtime_started(const lm_rt* rt) {
  return atomic_load_explicit(&rt->started, memory_order_acquire);
}

/* What a push does about a full queue. */
typedef enum full_action { FULL_WAIT, FULL_REFUSE, FULL_REJECT, FULL_DROP } full_action;

static full_action on_full(const lm_rt* rt, const lm_source_def* def, bool wait) {
  switch (def->backpressure) {
    case LM_BP_DROP_OLDEST: return FULL_DROP;
    case LM_BP_REJECT: return FULL_REJECT;
    case LM_BP_BLOCK: break;
  }
  return wait && runtime_started(rt) ? FULL_WAIT : FULL_REFUSE;
}

/* Whether `bytes` more would take the queue past max_queue_bytes (an empty
 * queue takes any one run, so nothing deadlocks; a watermark weighs nothing). */
static bool over_queue_bytes(const lm_source_def* def, int64_t bytes) {
  if (def->max_queue_bytes <= 0 || bytes <= 0) return false;
  int64_t queued = atomic_load_explicit(&def->queued_bytes, memory_order_relaxed);
  return queued > 0 && bytes > def->max_queue_bytes - queued;
}

/* Whether the queue lacks room for `n` messages of `bytes` bytes (0: not
 * known yet), in slots or under max_queue_bytes. */
static bool lacks_room(const lm_source_def* def, uint32_t n, int64_t bytes) {
  return lm_mpsc_capacity(def->queue) - lm_mpsc_size(def->queue) < n ||
         over_queue_bytes(def, bytes) || lm_source_held_back(def);
}

typedef struct room_wait {
  const lm_rt* rt;
  const lm_source_def* def;
  uint32_t need;
  int64_t bytes;
} room_wait;

/* Ready for a producer blocked on a full queue: room for its run (slots and
 * bytes), or a reason to give up (dropped source, stopped runtime). */
static bool room_or_abort(void* arg) {
  const room_wait* w = arg;
  return !lacks_room(w->def, w->need, w->bytes) ||
         atomic_load_explicit(&w->def->dropped, memory_order_acquire) ||
         !runtime_started(w->rt);
}

/* drop_oldest: take the oldest queued message off the queue and count it. An
 * explicit watermark is not lost: its value is carried to the reactor. */
static void drop_oldest(lm_source_def* def) {
  lm_msg* msg;
  if (!lm_source_take(def, true, &msg)) return; /* drained meanwhile: room now */
  if (msg->batch != NULL) {
    atomic_fetch_add_explicit(&def->dropped_batches, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&def->dropped_rows, msg->batch->nrows,
                              memory_order_relaxed);
  } else {
    int64_t cur = atomic_load_explicit(&def->carried_watermark, memory_order_relaxed);
    while (msg->watermark_ms > cur &&
           !atomic_compare_exchange_weak_explicit(&def->carried_watermark, &cur,
                                                  msg->watermark_ms, memory_order_relaxed,
                                                  memory_order_relaxed)) {
    }
  }
  lm_msg_free(msg);
}

/* One wait of a producer blocked on a full queue for room for `need`
 * messages of `bytes` bytes: at most 10 ms (a missed notification costs
 * little) and not past the deadline. LAMINAR_ERR_PUSH_TIMEOUT once the
 * deadline has passed. */
static laminar_code wait_room(lm_rt* rt, lm_source_def* def, uint32_t need, int64_t bytes,
                              const lm_push_wait* how, laminar_error* err) {
  int64_t slice = 10000000;
  if (how->deadline_ns >= 0) {
    int64_t left = how->deadline_ns - lm_rt_now_ns();
    if (left <= 0) return push_timeout(def, how, err);
    if (left < slice) slice = left;
  }
  lm_rt_notify(rt);
  room_wait w = {rt, def, need, bytes};
  lm_wait_until(&def->wait, &def->room, slice, room_or_abort, &w);
  return LAMINAR_OK;
}

/* Whether `n` messages of `bytes` bytes (0: not known yet) may go on the
 * queue, checked before anything is logged: refused (reject, or a block
 * queue that may not wait) when the queue lacks room (slots or bytes). With
 * `here`, a block queue that may wait waits here for the room (until the
 * runtime stops, the source is dropped or the deadline passes); without, it
 * is left to enqueue_run. Exact under def->log_mu (only the reactor moves
 * the queue then, and only makes room): the WAL path waits here, so a push
 * that gives up has logged nothing. */
static laminar_code refuse_early(lm_rt* rt, lm_source_def* def, uint32_t n, int64_t bytes,
                                 const lm_push_wait* how, bool here, laminar_error* err) {
  while (lacks_room(def, n, bytes)) {
    LM_TRY(lm_source_check_open(def, err));
    full_action act = on_full(rt, def, how->wait);
    if (act == FULL_REJECT) {
      atomic_fetch_add_explicit(&def->rejected_batches, n, memory_order_relaxed);
    }
    if (act == FULL_REJECT || act == FULL_REFUSE) return queue_full(def, err);
    if (act == FULL_DROP || !here) return LAMINAR_OK;
    LM_TRY(wait_room(rt, def, n, bytes, how, err));
  }
  return LAMINAR_OK;
}

laminar_code lm_source_admit(lm_rt* rt, lm_source_def* def, int64_t n,
                             const lm_push_wait* how, const lm_source_log* log,
                             laminar_error* err) {
  uint32_t cap = lm_mpsc_capacity(def->queue);
  full_action act = on_full(rt, def, how->wait);
  /* A run that can never fit is refused before any work by reject (and by a
   * push that may not wait): it would be refused anyway. */
  if (n > (int64_t)cap && act != FULL_WAIT && act != FULL_DROP) {
    if (act == FULL_REJECT) {
      atomic_fetch_add_explicit(&def->rejected_batches, n, memory_order_relaxed);
    }
    return queue_full(def, err);
  }
  /* A full queue that neither waits nor drops refuses before the import's
   * work (the log path checks under its lock instead, before logging). */
  if (log->append != NULL) return LAMINAR_OK;
  return refuse_early(rt, def, n > (int64_t)cap ? cap : (uint32_t)n, 0, how, false, err);
}

/* ---- the producer side: enqueue ------------------------------------------------- */

static int64_t msg_bytes(const lm_msg* msg) {
  return msg->batch != NULL ? msg->batch->bytes : 0;
}

/* Enqueue msgs[0..n) (n <= capacity) as one contiguous run, applying the
 * source's back-pressure policy to a full queue. `align`: a source held back
 * by its alignment group counts as full (the log path checked that under
 * its lock before logging, and does not look again). */
static laminar_code enqueue_run(lm_rt* rt, lm_source_def* def, lm_msg* const* msgs,
                                uint32_t n, const lm_push_wait* how, bool align,
                                laminar_error* err) {
  int64_t bytes = 0;
  for (uint32_t i = 0; i < n; i++) bytes += msg_bytes(msgs[i]);
  /* The byte bound and the alignment hold count as fullness: the same
   * policies apply (drop_oldest is refused with alignment at CREATE). */
  while ((align && lm_source_held_back(def)) || over_queue_bytes(def, bytes) ||
         !lm_mpsc_push_all(def->queue, (void* const*)msgs, n)) {
    LM_TRY(lm_source_check_open(def, err));
    switch (on_full(rt, def, how->wait)) {
      case FULL_DROP: drop_oldest(def); continue;
      case FULL_REJECT:
        atomic_fetch_add_explicit(&def->rejected_batches, n, memory_order_relaxed);
        return queue_full(def, err);
      case FULL_REFUSE: return queue_full(def, err);
      case FULL_WAIT: break;
    }
    /* Block back-pressure: the reactor notifies `room` after taking messages. */
    LM_TRY(wait_room(rt, def, n, bytes, how, err));
  }
  /* After the push: the consumer may take (and subtract) them first, so the
   * count may dip below zero for a moment; it is a bound, not an invariant. */
  atomic_fetch_add_explicit(&def->queued_bytes, bytes, memory_order_relaxed);
  lm_rt_notify(rt);
  return LAMINAR_OK;
}

/* The log path: under log_mu, each message waits for its room, is appended,
 * then queued. Under the lock only the reactor moves the queue (a WAL source
 * never drops), so room seen stays, and a message that gives up (stopped
 * runtime, dropped source, deadline) has logged nothing. */
static laminar_code enqueue_logged(lm_rt* rt, lm_source_def* def, lm_msg* const* msgs,
                                   int64_t n, const lm_push_wait* how,
                                   const lm_source_log* log, int64_t* queued,
                                   laminar_error* err) {
  uint32_t cap = lm_mpsc_capacity(def->queue);
  int64_t bytes = 0;
  for (int64_t k = 0; k < n; k++) bytes += msg_bytes(msgs[k]);
  /* A run that fits the queue waits here for room for all of it, so a
   * bounded wait that gives up has logged and queued none of it. */
  laminar_code rc = refuse_early(rt, def, n > (int64_t)cap ? cap : (uint32_t)n, bytes,
                                 how, n <= (int64_t)cap, err);
  while (*queued < n && rc == LAMINAR_OK) {
    lm_msg* msg = msgs[*queued];
    rc = refuse_early(rt, def, 1, msg_bytes(msg), how, true, err);
    if (rc == LAMINAR_OK) rc = log->append(log->arg, def, msg, *queued, err);
    if (rc == LAMINAR_OK) rc = enqueue_run(rt, def, &msg, 1, how, false, err);
    if (rc == LAMINAR_OK) (*queued)++;
  }
  return rc;
}

/* Without a log: runs of up to the queue's capacity, numbered when asked
 * (the offsets a checkpoint records and a producer resumes from). */
static laminar_code enqueue_plain(lm_rt* rt, lm_source_def* def, lm_msg* const* msgs,
                                  int64_t n, const lm_push_wait* how, bool numbered,
                                  int64_t* queued, laminar_error* err) {
  uint32_t cap = lm_mpsc_capacity(def->queue);
  laminar_code rc = LAMINAR_OK;
  while (*queued < n && rc == LAMINAR_OK) {
    uint32_t run = n - *queued > (int64_t)cap ? cap : (uint32_t)(n - *queued);
    for (uint32_t k = 0; numbered && k < run; k++) {
      msgs[*queued + k]->seq = def->unlogged_seq + 1 + k;
    }
    rc = enqueue_run(rt, def, &msgs[*queued], run, how, true, err);
    if (rc == LAMINAR_OK) {
      *queued += run;
      if (numbered) def->unlogged_seq += run;
    }
  }
  return rc;
}

laminar_code lm_source_enqueue(lm_rt* rt, lm_source_def* def, lm_msg* const* msgs,
                               int64_t n, const lm_push_wait* how,
                               const lm_source_log* log, int64_t* out_queued,
                               laminar_error* err) {
  /* Counted before: once queued, a message is the consumer's (or a
   * drop_oldest producer's) and may be freed at any moment. */
  int64_t batches = 0, rows = 0;
  for (int64_t k = 0; k < n; k++) {
    if (msgs[k]->batch == NULL) continue; /* an explicit watermark */
    batches++;
    rows += msgs[k]->batch->nrows;
  }
  int64_t queued = 0;
  laminar_code rc;
  /* Log (or number) and enqueue as one step under log_mu, so queue order is
   * WAL order when cloned producers push at once. */
  bool locked = log->append != NULL || log->numbered;
  /* An unlogged message of a WAL source (a change of idleness) takes the
   * lock too: under it only the reactor may move the queue (enqueue_logged). */
  if (def->wal != NULL) locked = true;
  if (locked) pthread_mutex_lock(&def->log_mu);
  if (log->append != NULL) {
    rc = enqueue_logged(rt, def, msgs, n, how, log, &queued, err);
  } else {
    rc = enqueue_plain(rt, def, msgs, n, how, log->numbered, &queued, err);
  }
  if (locked) pthread_mutex_unlock(&def->log_mu);
  for (int64_t k = queued; k < n; k++) { /* what did not go in is still the caller's */
    if (msgs[k]->batch == NULL) continue;
    batches--;
    rows -= msgs[k]->batch->nrows;
  }
  if (batches > 0) {
    atomic_fetch_add_explicit(&def->pushed_batches, batches, memory_order_relaxed);
    atomic_fetch_add_explicit(&def->pushed_rows, rows, memory_order_relaxed);
  }
  if (out_queued != NULL) *out_queued = queued;
  return rc;
}

int64_t lm_source_free_slots(const lm_source_def* def) {
  if (lm_source_held_back(def)) return 0;
  return (int64_t)lm_mpsc_capacity(def->queue) - (int64_t)lm_mpsc_size(def->queue);
}

int64_t lm_source_next_offset(lm_source_def* def, bool numbered) {
  if (def->wal != NULL) return (int64_t)lm_wal_next_seq(def->wal);
  if (!numbered) return 0;
  pthread_mutex_lock(&def->log_mu);
  int64_t next = (int64_t)def->unlogged_seq + 1;
  pthread_mutex_unlock(&def->log_mu);
  return next;
}
