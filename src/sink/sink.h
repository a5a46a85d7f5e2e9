/*
 * sink.h -- what the engine asks of an exactly-once sink: the two-phase epoch
 * protocol of file.h, behind one interface, so the checkpoint coordinator
 * (db/durable.c) and the reactor drive file sinks and callback sinks (a
 * connector written by the application, laminar_sink_callbacks) alike.
 *
 * write   rows of the open epoch           (reactor; the graph's thread)
 * begin   open epoch e                     (coordinator, graph stopped)
 * pre_commit  close the open epoch for writes    (coordinator, graph stopped)
 * sync    make the epochs closed by pre_commit durable as staged data
 *         (coordinator, graph running; NULL: pre_commit already did)
 * commit  publish epoch e (idempotent)     (coordinator, after the checkpoint)
 * recover commit staged epochs <= c, drop later ones (open, before replay)
 */
#ifndef LM_SINK_H
#define LM_SINK_H

#include "laminar.h"
#include "util/types.h"

#include <stdint.h>

typedef struct lm_sink lm_sink;

typedef struct lm_sink_vt {
  laminar_code (*write)(lm_sink* s, const lm_vec* cols, int64_t nrows, laminar_error* err);
  laminar_code (*begin)(lm_sink* s, uint64_t epoch, laminar_error* err);
  laminar_code (*pre_commit)(lm_sink* s, laminar_error* err);
  laminar_code (*sync)(lm_sink* s, laminar_error* err);
  laminar_code (*commit)(lm_sink* s, uint64_t epoch, laminar_error* err);
  laminar_code (*recover)(lm_sink* s, uint64_t checkpointed_epoch, laminar_error* err);
  void (*close)(lm_sink* s);
  /* The message of the sink's last failed write (rows reach a sink from
   * ring 0, which passes no laminar_error), or NULL/"". NULL: none kept. */
  const char* (*last_error)(lm_sink* s);
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

/* From now on, closing the sink calls release(user) (attachment succeeded). */
void lm_callback_sink_own(lm_sink* sink, void (*release)(void* user));

#endif /* LM_SINK_H */
