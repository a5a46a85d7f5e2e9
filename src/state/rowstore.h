/*
 * rowstore.h -- row storage for operators that hold whole input rows (the
 * joins, op/join_asof.c and op/join_interval.c; the temporal filter,
 * op/expire.c): a columnar store of rows by
 * slot, freed slots reused, STRING bytes in a pool compacted when it holds
 * twice what live rows use, so the state stays bounded as rows are dropped;
 * and the time-sorted slot list (per key) the joins search by time.
 *
 * Snapshot: lm_rowstore_write_row / lm_rowstore_read_row encode one row in the
 * checkpoint byte format (state/state.h): per column a u8 NULL flag and the
 * value (a column the store does not keep is written as NULL).
 *
 * Not thread-safe: one operator instance (one partition's thread) owns each.
 */
#ifndef LM_STATE_ROWSTORE_H
#define LM_STATE_ROWSTORE_H

#include "laminar.h"
#include "state/state.h"
#include "util/pool.h"
#include "util/types.h"

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

/* Copy one value of width w (lm_type_width: 1, 4, 8 or 16 bytes) with a
 * fixed-size copy the compiler inlines: the joins copy values a row at a
 * time, and a memcpy call of a run-time size per value dominated the row
 * store's put and the joins' gathers (callgrind, bench/bench_asof.py). */
static inline void lm_copy_value(char* dst, const char* src, int64_t w) {
  switch (w) {
    case 8: memcpy(dst, src, 8); break;
    case 16: memcpy(dst, src, 16); break;
    case 4: memcpy(dst, src, 4); break;
    case 1: *dst = *src; break;
    default: memcpy(dst, src, (size_t)w); break;
  }
}

typedef struct lm_rowstore {
  int32_t ncols;
  lm_type* types;
  uint8_t* keep;   /* per column: held (the plan reads it), else never stored */
  int64_t cap;     /* slots allocated */
  int64_t used;    /* slots ever handed out (high-water mark) */
  int64_t live;    /* slots in use */
  void** data;     /* per column: cap values of the type's width */
  uint8_t** nulls; /* per column: cap flags */
  uint32_t* free_slots;
  int64_t nfree;
  lm_pool strings;
  int64_t str_live; /* STRING bytes live rows use */
  bool has_strings;
} lm_rowstore;

/* Columns [first, first + n) of `schema`; `need` (NULL: all) flags, by the
 * schema's column, those to keep: the others are never stored. */
laminar_code lm_rowstore_init(lm_rowstore* s, const lm_schema* schema, int32_t first,
                              int32_t n, const uint8_t* need);
void lm_rowstore_free(lm_rowstore* s);
/* Room for `cap` slots (LAMINAR_ERR_NOMEM past 2^31). */
laminar_code lm_rowstore_reserve(lm_rowstore* s, int64_t cap);
/* A free slot (room reserved: lm_rowstore_reserve(used + 1)). */
uint32_t lm_rowstore_take(lm_rowstore* s);
void lm_rowstore_release(lm_rowstore* s, uint32_t slot);
/* Row `row` of cols (the input's columns) into `slot`. LAMINAR_ERR_NOMEM
 * leaves the slot holding nothing (its strings NULL): release the slot. */
laminar_code lm_rowstore_put(lm_rowstore* s, uint32_t slot, const lm_vec* cols,
                             int64_t row);
/* Move live strings (live_mark[slot] set) to a fresh pool when the old one is
 * mostly dead bytes. */
laminar_code lm_rowstore_compact(lm_rowstore* s, const uint8_t* live_mark);
/* Bytes the live rows use (kept columns, NULL flags, strings). */
int64_t lm_rowstore_bytes(const lm_rowstore* s);
void lm_rowstore_write_row(const lm_rowstore* s, uint32_t slot, lm_state_writer* w);
/* Read one row written by lm_rowstore_write_row into `slot`. */
laminar_code lm_rowstore_read_row(lm_rowstore* st, uint32_t slot, lm_state_reader* r);

/* Slots sorted by (time, arrival): [head, n) of the arrays. */
typedef struct lm_timelist {
  int64_t* ts;
  uint32_t* slot;
  int32_t head, n, cap;
} lm_timelist;

/* First index in [head, n) whose time is > t (upper bound) / >= t (lower). */
int32_t lm_timelist_upper(const lm_timelist* kr, int64_t t);
int32_t lm_timelist_lower(const lm_timelist* kr, int64_t t);
/* Room for `extra` more entries: that many inserts cannot fail. */
laminar_code lm_timelist_reserve(lm_timelist* kr, int32_t extra);
/* Insert (t, slot) after the entries of equal time. */
laminar_code lm_timelist_insert(lm_timelist* kr, int64_t t, uint32_t slot);
/* Take out the entry (t, slot) (none: nothing happens); the others keep
 * their order. Allocates nothing: how a failed chunk's rows are taken back. */
void lm_timelist_remove(lm_timelist* kr, int64_t t, uint32_t slot);
/* Free the arrays and empty the list. */
void lm_timelist_free(lm_timelist* kr);

#endif /* LM_STATE_ROWSTORE_H */
