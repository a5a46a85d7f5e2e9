/*
 * join.h -- what the two join operators share (op/join_asof.c,
 * op/join_interval.c): the output columns they fill and emit, time unit
 * conversion, the key rows of their keyed state table with the per-key
 * arrays beside it, and the bound of what one input chunk can add to their
 * state. Private to src/op. Runs on the partition's thread only.
 */
#ifndef LM_OP_JOIN_H
#define LM_OP_JOIN_H

#include "op/op.h"
#include "state/rowstore.h"
#include "state/table.h"

/* Output columns of a join, reused from chunk to chunk: vecs[c] points into
 * data[c] / nulls[c] (room for cap rows), or at `zeros` for a column no one
 * reads (need[c] 0). */
typedef struct lm_join_out {
  int32_t ncols;
  const uint8_t* need; /* NULL: all read */
  lm_vec* vecs;
  void** data;
  uint8_t** nulls;
  void* zeros; /* cap values of the widest type, all zero */
  int64_t cap;
} lm_join_out;

/* The columns of `schema` (types), need as lm_asof_spec.need. */
laminar_code lm_join_out_init(lm_join_out* o, const lm_schema* schema,
                              const uint8_t* need);
/* Room for n rows. */
laminar_code lm_join_out_reserve(lm_join_out* o, int64_t n);
void lm_join_out_free(lm_join_out* o);

/* Late rows of one side of a join, for its late side output: rows[0..n) of
 * chunk `in` (that side's columns, output columns [first, first +
 * in->ncols)), every other output column NULL, into o->vecs. */
laminar_code lm_join_one_side(lm_join_out* o, const lm_chunk* in, int32_t first,
                              const int64_t* rows, int64_t n);

/* A watermark (ms) in the unit of a time column of type `t` (µs for
 * TIMESTAMP), saturating; and a time of that unit in ms, rounded down. */
int64_t lm_join_to_units(lm_type t, int64_t ms);
int64_t lm_join_to_ms(lm_type t, int64_t units);
int64_t lm_join_sat_add(int64_t a, int64_t b);
int64_t lm_join_sat_sub(int64_t a, int64_t b);

/* The key row of row `row` (hash h) of the key columns in `t`, added when
 * new; `narrays` arrays of per-key entries (arrays[i] of sizes[i] bytes each,
 * *nalloc entries allocated) grow with the table, new entries zeroed. */
laminar_code lm_join_key_row(lm_state_table* t, uint64_t h, const lm_vec* keys,
                             int64_t row, void** const* arrays, const size_t* sizes,
                             int32_t narrays, int64_t* nalloc, int64_t* out);

/* Take back the key rows a failed chunk added (issue 20): rows n0.. of `t`
 * go, and with them their entries of the `nlists` per-key time lists
 * (lists[i][g], emptied and freed). Allocates nothing. */
void lm_join_keys_truncate(lm_state_table* t, lm_timelist* const* lists, int32_t nlists,
                           int64_t n0);

/* The most chunk `in` can add to a join's state when every row is held in
 * `st` under a new key of `key_types`, with all its strings, plus per_row
 * bytes of the operator's own per row (the bound is checked before the chunk
 * changes anything, so a batch near the bound may be refused whole). */
int64_t lm_join_chunk_bound(const lm_rowstore* st, const lm_type* key_types,
                            int32_t nkeys, int64_t per_row, const lm_chunk* in);

#endif /* LM_OP_JOIN_H */
