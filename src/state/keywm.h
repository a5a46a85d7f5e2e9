/*
 * keywm.h -- per-key event time: the table behind per-key watermarks
 * (CREATE SOURCE ... WITH (watermark_key = 'col'), docs/SQL.md). One keyed
 * state table (table.h) of the key column's values -> a dense key id, and per
 * key the largest event time seen (epoch ms; NULL times ignored).
 *
 * Two owners use it: the source (rt/reactor.c: the source's watermark is the
 * least over its keys) and the keyed window operator (op/keyed_window.c:
 * each key's windows close on that key's own watermark), each with its own
 * table, on the thread that runs it. Not thread-safe.
 *
 * Keys are only appended; lm_keywm_compact() drops the ones the owner no
 * longer needs (a key that went quiet), renumbering the rest in order.
 */
#ifndef LM_STATE_KEYWM_H
#define LM_STATE_KEYWM_H

#include "laminar.h"
#include "state/state.h"
#include "state/table.h"
#include "util/types.h"

#include <stdbool.h>
#include <stdint.h>

typedef struct lm_keywm {
  lm_state_table t; /* one key column */
  int64_t* max_ts;  /* per key id: largest event time (ms), INT64_MIN none */
  int64_t cap;      /* of max_ts */
  uint64_t* hashes; /* scratch: per row of the last observed chunk */
  int64_t hcap;
} lm_keywm;

/* An empty table for keys of type key_type. LAMINAR_ERR_NOMEM (kw then needs
 * no free). */
laminar_code lm_keywm_init(lm_keywm* kw, lm_type key_type);
/* Free what kw holds (a zeroed kw is fine). */
void lm_keywm_free(lm_keywm* kw);
/* Number of keys held. */
static inline int64_t lm_keywm_count(const lm_keywm* kw) { return kw->t.n; }

/* Event time of row `row` of `ts` (BIGINT / INT ms, TIMESTAMP us floored to
 * ms), or INT64_MIN when NULL. */
int64_t lm_keywm_time_ms(const lm_vec* ts, int64_t row);

/* The rows 0..n-1 (sel NULL) or sel[0..n) of columns `key` and `ts`: each
 * row's key id into kid[row] (kid NULL: not wanted; indexed like the columns),
 * adding new keys (max_ts INT64_MIN), then each key's max_ts raised by its
 * rows' times. `*out_added` (may be NULL) counts the keys added.
 * LAMINAR_ERR_NOMEM may leave some keys added (with no time yet); nothing
 * else changed. */
laminar_code lm_keywm_observe(lm_keywm* kw, const lm_vec* key, const lm_vec* ts,
                              const uint32_t* sel, int64_t n, uint32_t* kid,
                              int64_t* out_added);

/* Keep the keys with keep[k] true (k < count), renumbered in order; remap[k]
 * (may be NULL) is k's new id or UINT32_MAX. LAMINAR_ERR_NOMEM leaves kw as
 * it was. */
laminar_code lm_keywm_compact(lm_keywm* kw, const bool* keep, uint32_t* remap);

/* Snapshot: count, then per key its key value and max_ts. */
void lm_keywm_put(const lm_keywm* kw, lm_state_writer* w);
/* Read what lm_keywm_put wrote into an empty kw (r->failed on a short or bad
 * input: kw then holds what was read). LAMINAR_ERR_NOMEM. */
laminar_code lm_keywm_get(lm_keywm* kw, lm_state_reader* r);
/* Read one key written by lm_keywm_put (after its count) into key id *out
 * (appended). Lets an owner interleave its own per-key state. */
laminar_code lm_keywm_get_one(lm_keywm* kw, lm_state_reader* r, uint32_t* out);
/* Write key k as lm_keywm_put does for each key. */
void lm_keywm_put_one(const lm_keywm* kw, int64_t k, lm_state_writer* w);

#endif /* LM_STATE_KEYWM_H */
