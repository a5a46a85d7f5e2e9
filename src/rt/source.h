/*
 * source.h -- the producer side of a source queue: enqueue, back-pressure
 * (block / drop_oldest / reject, max_queue_bytes), parking on a full queue,
 * push deadlines and the WAL-order lock (rt/source.c).
 *
 * The consumer side (lm_source_take, the reactor's notify of `room`) is in
 * the same module, so both halves of the queue's protocol read in one place
 * (STYLE §1.11). src/db/handles.c is the API shim over it: argument checks,
 * the Arrow import, and the log step (db/durable) handed in as a callback, so
 * rt/ never calls up into db/.
 */
#ifndef LM_RT_SOURCE_H
#define LM_RT_SOURCE_H

#include "rt/rt.h"

/* How a push may wait for room in a full block queue: not at all (try_push),
 * while the runtime runs (push), or until a deadline too (the _timeout
 * calls; timeout_ms is what the caller asked, for the message). */
typedef struct lm_push_wait {
  bool wait;
  int64_t deadline_ns; /* CLOCK_MONOTONIC (lm_rt_now_ns); -1: no deadline */
  int64_t timeout_ms;
} lm_push_wait;

/* Never wait / wait while the runtime runs / wait at most timeout_ms
 * (negative: no deadline) from now. */
lm_push_wait lm_push_no_wait(void);
lm_push_wait lm_push_wait_forever(void);
lm_push_wait lm_push_wait_for(int64_t timeout_ms);

/* How a source's messages are made durable on their way into the queue.
 * append != NULL (a WAL): each message is appended before it is queued, and
 * append + enqueue run as one step under the source's log_mu, so queue
 * order is WAL order when cloned producers push at once; append(arg, def,
 * msg, i, err) gets the message's index in the run and sets msg->seq. Else
 * with `numbered` (durable without a WAL) messages get the next offsets
 * (unlogged_seq) under log_mu; else nothing is taken. */
typedef struct lm_source_log {
  laminar_code (*append)(void* arg, lm_source_def* def, lm_msg* msg, int64_t i,
                         laminar_error* err);
  void* arg;
  bool numbered;
} lm_source_log;

/* LAMINAR_ERR_SOURCE_CLOSED naming def when it was dropped, else OK. */
laminar_code lm_source_check_open(const lm_source_def* def, laminar_error* err);

/* Before the Arrow import of a run of n batches: refuse at once what would be
 * refused anyway (reject, or a block queue that may not wait, facing a run
 * longer than the queue or -- without a log -- a full queue), so a refused
 * push costs no import. LAMINAR_ERR_QUEUE_FULL (reject counted) or OK. Any
 * producer thread. */
laminar_code lm_source_admit(lm_rt* rt, lm_source_def* def, int64_t n,
                             const lm_push_wait* how, const lm_source_log* log,
                             laminar_error* err);

/* Queue msgs[0..n) (batches, or one explicit watermark) in order, applying the
 * source's back-pressure policy to a full queue (`how` says whether and how
 * long to wait) and `log`, then wake the reactor. *out_queued (NULL allowed):
 * how many went in, a prefix; they are the queue's now and counted in the
 * source's pushed_* metrics, the rest is still the caller's. Refused
 * (QUEUE_FULL, PUSH_TIMEOUT, SOURCE_CLOSED, a log error): with a log nothing
 * of a message is logged unless it is queued. All or nothing, except that a
 * dropped source, a stopped runtime or a deadline met while a run longer than
 * the queue waits for room leaves a prefix queued. Producer threads. */
laminar_code lm_source_enqueue(lm_rt* rt, lm_source_def* def, lm_msg* const* msgs,
                               int64_t n, const lm_push_wait* how,
                               const lm_source_log* log, int64_t* out_queued,
                               laminar_error* err);

/* Whether def's alignment group holds its producers back now: its watermark
 * runs more than max_drift ahead of the group's slowest member (rt.h
 * align_limit). Pushes meet the back-pressure policy as on a full queue. */
bool lm_source_held_back(const lm_source_def* def);

/* Free slots of def's queue now (a hint: others push and the reactor pops);
 * 0 while the source is held back by its alignment group. */
int64_t lm_source_free_slots(const lm_source_def* def);

/* The offset the next message will get (laminar_source_offset): the WAL's
 * next sequence number, the next unlogged offset when `numbered`, else 0. */
int64_t lm_source_next_offset(lm_source_def* def, bool numbered);

#endif /* LM_RT_SOURCE_H */
