/*
 * sink.h -- what the engine asks of an exactly-once sink: the two-phase epoch
 * protocol of file.h, behind one interface, so the checkpoint coordinator
 * (db/durable.c) and the reactor drive file sinks and callback sinks (a
 * connector written by the application, laminar_sink_callbacks) alike.
 *
 * write   rows of the open epoch           (the sink's thread, behind its queue:
 *                                          sink/queue.c; the graph's thread
 *                                          for a sink without one)
 * begin   open epoch e                     (coordinator, graph stopped)
 * pre_commit  close the open epoch for writes    (coordinator, graph stopped)
 * sync    make the epochs closed by pre_commit durable as staged data
 *         (coordinator, graph running; NULL: pre_commit already did)
 * commit  publish epoch e (idempotent)     (coordinator, after the checkpoint)
 * recover commit staged epochs <= c, drop later ones (open, before replay)
 */
#ifndef LM_SINK_H
#define LM_SINK_H

#include "arrow/arrow.h"
#include "laminar.h"
#include "util/types.h"

#include <stdint.h>

typedef struct lm_sink lm_sink;

typedef struct lm_sink_vt {
  laminar_code (*write)(lm_sink* s, const lm_vec* cols, int64_t nrows,
                        laminar_error* err);
  laminar_code (*begin)(lm_sink* s, uint64_t epoch, laminar_error* err);
  laminar_code (*pre_commit)(lm_sink* s, laminar_error* err);
  laminar_code (*sync)(lm_sink* s, laminar_error* err);
  laminar_code (*commit)(lm_sink* s, uint64_t epoch, laminar_error* err);
  laminar_code (*recover)(lm_sink* s, uint64_t checkpointed_epoch, laminar_error* err);
  void (*close)(lm_sink* s);
  /* The message of the sink's last failed write (rows reach a sink from
   * ring 0, which passes no laminar_error), or NULL/"". NULL: none kept. */
  const char* (*last_error)(lm_sink* s);
  /* A sink behind a queue and its own thread (sink/queue.c; NULL for the
   * others), so the reactor never waits on a sink's I/O or callback:
   * write_batch  queue a reference to a built batch (reactor);
   * mark_epoch   queue "pre_commit, then begin(next_epoch)" behind the rows
   *              queued so far (the checkpoint barrier, on the reactor);
   *              its failure is reported by the next sync / commit;
   * drain        wait until everything queued is done; the first failed
   *              write's code, else OK (run_until_idle, laminar_stop);
   * room         free slots of its queue (the reactor's headroom rule). */
  laminar_code (*write_batch)(lm_sink* s, lm_batch* batch);
  laminar_code (*mark_epoch)(lm_sink* s, uint64_t next_epoch);
  laminar_code (*drain)(lm_sink* s);
  uint32_t (*room)(const lm_sink* s);
} lm_sink_vt;

struct lm_sink {
  const lm_sink_vt* vt;
};

/* A sink whose protocol steps are the application's callbacks (copied). Rows
 * reach `write` as an Arrow struct array of `schema` (moved to the callee). */
laminar_code lm_callback_sink_create(const char* name, const lm_schema* schema,
                                     const laminar_sink_callbacks* cb, lm_sink** out,
                                     laminar_error* err);

/* A sink that takes every step and writes nothing: a file sink of a
 * read_only database (the catalog names it; the replay's rows go nowhere).
 * sink/file.c. */
laminar_code lm_discard_sink_create(lm_sink** out, laminar_error* err);

/* Put `inner` behind a bounded queue of `capacity` items (a power of two,
 * >= 2; a database gives its buffer_size, as to a subscriber ring) drained by a thread of its own, which runs its write, pre_commit and
 * begin in queue order; the other steps run on the caller's thread once what
 * was queued before them is done. Takes `inner` (closed with the result, or
 * on failure). */
laminar_code lm_sink_queue_open(lm_sink* inner, uint32_t capacity, lm_sink** out,
                                laminar_error* err);
/* The sink behind a queue (`s` itself when it has none). */
lm_sink* lm_sink_queue_inner(lm_sink* s);

/* From now on, closing the sink calls release(user) (attachment succeeded). */
void lm_callback_sink_own(lm_sink* sink, void (*release)(void* user));

#endif /* LM_SINK_H */
