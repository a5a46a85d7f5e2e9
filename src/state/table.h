/*
 * table.h -- the keyed state table: one hash table from a tuple of key values
 * to a dense row id, the one every keyed operator builds on (the window
 * operator's windows, the session operator's key set, hop panes; joins and
 * tables next). It holds the keys, not the state: an operator keeps its
 * per-row state (aggregate states, session slots, counts) in its own arrays
 * indexed by the row ids the table hands out, and grows them to the table's
 * `cap` when it grows the table.
 *
 * Keys: nkeys columns of INT32/INT64/BOOL/TIMESTAMP (as int64), DOUBLE or
 * STRING, each value possibly NULL. GROUP BY semantics: NULL equals NULL,
 * -0.0 equals 0.0, every NaN equals every NaN (as DuckDB). STRING keys are
 * copied into the table's pool (or borrowed from a table that outlives it:
 * lm_state_table_copy_keys).
 *
 * Hashing: lm_state_hash_rows() over a batch's key columns gives each row the
 * hash the table stores for the row's keys (lm_state_table_hash_row() of the
 * stored keys gives the same value), so the router of thread-per-core
 * (rt/part.c) hashes once and the table probes with its hashes. Partitions:
 * lm_state_part_of() maps a hash to one of n partitions with its high half,
 * the table's index uses the low bits.
 *
 * Index: open addressing, linear probing, slots hold row id + 1 (0 empty), at
 * most 1/4 full while the index fits in cache, 1/2 above 64 Ki slots
 * (lm_state_table_must_grow). Rows are only appended; a table is emptied
 * whole (lm_state_table_reset), keeping its capacity.
 *
 * Snapshot: a row's keys are written and read in the checkpoint byte format
 * (state/state.h) by lm_state_table_put_keys / lm_state_table_get_keys: per
 * key column a u8 NULL flag and the value (i64, f64, or u32 length + bytes).
 *
 * Memory: lm_state_table_bytes() is what the table holds in the terms the
 * state bound (max_state_bytes, lm_state_budget) counts: per row its hash, its
 * share of the index and its keys, plus the key strings.
 *
 * Not thread-safe: one table belongs to one partition's operator, called from
 * the thread that runs it. A table no one changes may be read from any
 * thread (checkpoints write frozen tables while the operator runs on).
 */
#ifndef LM_STATE_TABLE_H
#define LM_STATE_TABLE_H

#include "laminar.h"
#include "state/state.h"
#include "util/pool.h"
#include "util/types.h"

#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

/* ---- hashing ------------------------------------------------------------------- */

/* The finalizer of splitmix64: a bijection of 64-bit words that spreads every
 * input bit over every output bit. The one mixer of the core's hash tables. */
static inline uint64_t lm_state_mix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

/* 1..8 bytes folded into one word with fixed-size loads (a variable-length
 * memcpy here was a library call and a store-forwarding stall: 23% of W1).
 * Injective for a given length: the two 4-byte loads overlap when r < 8. */
static inline uint64_t lm_state_tail_word(const uint8_t* q, int64_t r) {
  if (r >= 4) {
    uint32_t lo, hi;
    memcpy(&lo, q, 4);
    memcpy(&hi, q + r - 4, 4);
    return ((uint64_t)hi << 32) | lo;
  }
  return (uint64_t)q[0] | ((uint64_t)q[r / 2] << 8) | ((uint64_t)q[r - 1] << 16);
}

/* Equality of two strings; short ones (most keys) without a memcmp call. */
static inline bool lm_state_str_eq(lm_str a, lm_str b) {
  if (a.len != b.len) return false;
  if (a.len <= 8) {
    return a.len == 0 || lm_state_tail_word((const uint8_t*)a.ptr, a.len) ==
                             lm_state_tail_word((const uint8_t*)b.ptr, b.len);
  }
  return memcmp(a.ptr, b.ptr, (size_t)a.len) == 0;
}

/* GROUP BY treats -0.0 as 0.0 and all NaNs as one value (as DuckDB does). */
static inline double lm_state_canon_double(double d) {
  if (d == 0.0) return 0.0;
  if (isnan(d)) return NAN;
  return d;
}

/* The start of every key tuple's hash, and the hash of a NULL key value. */
#define LM_STATE_HASH_SEED 0x9E3779B97F4A7C15ULL
#define LM_STATE_NULL_HASH 0x5bd1e995ULL

/* The hash of a byte string (a STRING key value). */
static inline uint64_t lm_state_hash_bytes(const char* p, int64_t len) {
  uint64_t h = 0x243F6A8885A308D3ULL ^ (uint64_t)len;
  int64_t k = 0;
  for (; k + 8 <= len; k += 8) {
    uint64_t w;
    memcpy(&w, p + k, 8);
    h = (h ^ w) * 0x9E3779B97F4A7C15ULL;
    h ^= h >> 32;
  }
  if (k < len) {
    h = (h ^ lm_state_tail_word((const uint8_t*)p + k, len - k)) * 0x9E3779B97F4A7C15ULL;
  }
  return lm_state_mix64(h);
}

/* The hash of a DOUBLE key value (canonical: -0.0 as 0.0, one NaN). */
static inline uint64_t lm_state_hash_double(double d) {
  d = lm_state_canon_double(d);
  uint64_t bits;
  memcpy(&bits, &d, 8);
  return lm_state_mix64(bits);
}

/* Fold key value hash k into tuple hash h (order matters). */
static inline uint64_t lm_state_hash_combine(uint64_t h, uint64_t k) {
  return (h ^ k) * 0x9E3779B97F4A7C15ULL + (h >> 17);
}

/* Hash every row's key tuple (nkeys columns): rows 0..n-1 into h[0..n) (sel
 * NULL), or rows sel[0..n) into h[sel[i]] (the other entries untouched).
 * Equals lm_state_table_hash_row() of the row once stored. */
void lm_state_hash_rows(const lm_vec* keys, int32_t nkeys, const uint32_t* sel, int64_t n,
                        uint64_t* h);

/* The partition (of n) a key hash belongs to: the high half of the hash scaled
 * to [0, n), so the low bits the index uses stay spread within a partition. */
static inline int32_t lm_state_part_of(uint64_t h, int32_t n) {
  return (int32_t)(((h >> 32) * (uint64_t)n) >> 32);
}

/* ---- the table ----------------------------------------------------------------- */

/* One key column of the table, by row id: the value in i (INT32, INT64, BOOL,
 * TIMESTAMP), d (DOUBLE) or s (STRING; bytes in the table's pool or
 * borrowed), and nulls[g] 1 where it is NULL (the value then 0). */
typedef struct lm_state_keycol {
  lm_type type;
  int64_t* i;
  double* d;
  lm_str* s;
  uint8_t* nulls;
} lm_state_keycol;

typedef struct lm_state_table {
  int32_t nkeys;
  int64_t n;             /* rows: ids 0 .. n-1 */
  int64_t cap;           /* room for rows in hash and keys */
  uint64_t* hash;        /* per row: its key hash */
  lm_state_keycol* keys; /* nkeys columns */
  uint32_t* index;       /* mask + 1 slots: row id + 1, 0 empty */
  uint32_t mask;
  lm_pool strings; /* copied STRING key bytes */
} lm_state_table;

/* An empty table for nkeys key columns of the given types (copied).
 * Ownership: the table owns its arrays; free with lm_state_table_free().
 * Returns LAMINAR_OK or LAMINAR_ERR_NOMEM (t then needs no free). */
laminar_code lm_state_table_init(lm_state_table* t, const lm_type* types, int32_t nkeys);
/* Free everything t holds (t itself is the caller's). A zeroed t is fine. */
void lm_state_table_free(lm_state_table* t);
/* Forget every row and key string, keeping the capacity. No allocation. */
void lm_state_table_reset(lm_state_table* t);

/* Room for `cap` rows (capacity doubles from 64, so appends cost amortized
 * O(1)); afterwards t->cap >= cap, the size the caller grows its per-row
 * state to. LAMINAR_ERR_NOMEM (past 2^30 rows too) leaves t as it was, its
 * rows valid. */
laminar_code lm_state_table_reserve(lm_state_table* t, int64_t cap);

/* Row g takes the keys of row `row` of `keys` (STRING bytes copied into the
 * pool). LAMINAR_ERR_NOMEM when the copy failed (g's keys then undefined). */
laminar_code lm_state_table_set_keys(lm_state_table* t, int64_t g, const lm_vec* keys,
                                     int64_t row);
/* Row a of `to` takes the keys of row g of `from` (same key types): STRING
 * bytes copied into to's pool, or borrowed when !copy (`from` must then
 * outlive the row). LAMINAR_ERR_NOMEM when a copy failed. */
laminar_code lm_state_table_copy_keys(lm_state_table* to, int64_t a,
                                      const lm_state_table* from, int64_t g, bool copy);
/* The row whose keys equal those of row g of `from` (same key types; hash
 * h), or -1 when none. */
int64_t lm_state_table_find_row(const lm_state_table* t, uint64_t h,
                                const lm_state_table* from, int64_t g);
/* Row `row` of an integer-like column (lm_vec_int_at). */
static inline int64_t lm_state_vec_int(const lm_vec* v, int64_t row) {
  return lm_vec_int_at(v, row);
}

/* Whether row g's keys equal row `row` of `keys`. (Inline, as the lookup:
 * one call per row of every keyed batch.) */
static inline bool lm_state_table_row_equals(const lm_state_table* t, int64_t g,
                                             const lm_vec* keys, int64_t row) {
  for (int32_t c = 0; c < t->nkeys; c++) {
    const lm_state_keycol* kc = &t->keys[c];
    const lm_vec* v = &keys[c];
    bool row_null = v->nulls && v->nulls[row];
    if (row_null || kc->nulls[g]) {
      if (row_null != (bool)kc->nulls[g]) return false;
      continue;
    }
    if (lm_type_is_bytes(kc->type)) {
      if (!lm_state_str_eq(kc->s[g], ((const lm_str*)v->data)[row])) return false;
    } else if (kc->type == LM_TYPE_DOUBLE) {
      double a = lm_state_canon_double(kc->d[g]);
      double b = lm_state_canon_double(((const double*)v->data)[row]);
      if (!(a == b || (isnan(a) && isnan(b)))) return false;
    } else if (kc->i[g] != lm_state_vec_int(v, row)) {
      return false;
    }
  }
  return true;
}

/* The row whose keys equal row `row` of the key columns `keys` (hash h, from
 * lm_state_hash_rows), or -1 when none. */
static inline int64_t lm_state_table_find(const lm_state_table* t, uint64_t h,
                                          const lm_vec* keys, int64_t row) {
  uint32_t slot = (uint32_t)h & t->mask;
  for (;;) {
    uint32_t e = t->index[slot];
    if (e == 0) return -1;
    uint32_t g = e - 1;
    if (t->hash[g] == h && lm_state_table_row_equals(t, g, keys, row)) return g;
    slot = (slot + 1) & t->mask;
  }
}
/* The row whose single key equals row `row` of column key (hash h), or -1:
 * the lookup of the common GROUP BY -- one key column of INT64, TIMESTAMP
 * (is_string false) or STRING (true) with no NULLs in the batch -- comparing
 * the value directly instead of lm_state_table_row_equals' loop over key
 * columns and types. The same answer as lm_state_table_find. Callers in a
 * loop that also stores uint32_t values pass a local copy of the table, so
 * its index fields stay in registers (a store could alias them). */
static inline int64_t lm_state_table_find1(const lm_state_table* t, bool is_string,
                                           uint64_t h, const lm_vec* key, int64_t row) {
  const lm_state_keycol* ks = &t->keys[0];
  uint32_t slot = (uint32_t)h & t->mask, e;
  while ((e = t->index[slot]) != 0) {
    uint32_t g = e - 1;
    if (t->hash[g] == h && !ks->nulls[g] &&
        (is_string ? lm_state_str_eq(ks->s[g], ((const lm_str*)key->data)[row])
                   : ks->i[g] == ((const int64_t*)key->data)[row]))
      return g;
    slot = (slot + 1) & t->mask;
  }
  return -1;
}
/* The hash of row g's stored keys; equals lm_state_hash_rows() of its source. */
uint64_t lm_state_table_hash_row(const lm_state_table* t, int64_t g);
/* Replace the index by one of nsize slots (a power of two above n) over rows
 * 0..n-1 by their hashes. LAMINAR_ERR_NOMEM leaves the old index. */
laminar_code lm_state_table_rebuild(lm_state_table* t, uint64_t nsize);
/* Forget rows n.. (n <= t->n; their key strings stay in the pool until a
 * reset) and rebuild the index in place. No allocation. */
void lm_state_table_truncate(lm_state_table* t, int64_t n);
/* Rebuild the index sized for the rows there are (after rows were written
 * without it: a restore). LAMINAR_ERR_NOMEM leaves the old index. */
laminar_code lm_state_table_reindex(lm_state_table* t);
/* Key value of row g, column c, into row `row` of output column ov (of the
 * key's type; STRING bytes borrowed from the table). */
void lm_state_table_put_value(lm_vec* ov, const lm_state_keycol* kc, int64_t g,
                              int64_t row);

/* Whether appending a row rebuilds the index first (the caller may need to
 * know: a copy-on-write table copies its index before). The load factor is
 * at most 1/4 while the index fits in cache: a probe that passes its first
 * slot is a mispredicted branch (at 1/2, a quarter of W1's lookups; at 1/4
 * one in eight, W1 8% faster). Larger indexes miss the cache on every probe
 * anyway, and the next slot is usually in the same line: at most 1/2 there,
 * to keep them at 8 bytes a row. */
static inline bool lm_state_table_must_grow(const lm_state_table* t) {
  uint64_t size = (uint64_t)t->mask + 1;
  uint64_t per_row = size <= 65536 ? 4 : 2;
  return (uint64_t)(t->n + 1) * per_row > size;
}

/* Grow the index if one more row needs it. LAMINAR_ERR_NOMEM leaves t as it was. */
static inline laminar_code lm_state_table_grow_index(lm_state_table* t) {
  if (!lm_state_table_must_grow(t)) return LAMINAR_OK;
  return lm_state_table_rebuild(t, ((uint64_t)t->mask + 1) * 2);
}

/* Row g into the index under hash h (a free slot exists: must_grow). */
static inline void lm_state_table_index_insert(lm_state_table* t, uint64_t h,
                                               uint32_t g) {
  uint32_t slot = (uint32_t)h & t->mask;
  while (t->index[slot] != 0) slot = (slot + 1) & t->mask;
  t->index[slot] = g + 1;
}

/* Append a row with hash h to the index: room reserved (lm_state_table_reserve
 * n + 1) and the index grown (lm_state_table_grow_index) by the caller, who
 * then fills its keys. Returns the new row id. Cannot fail. */
static inline uint32_t lm_state_table_push(lm_state_table* t, uint64_t h) {
  uint32_t g = (uint32_t)t->n++;
  t->hash[g] = h;
  lm_state_table_index_insert(t, h, g);
  return g;
}

/* ---- copies (copy-on-write freezes) --------------------------------------------
 * A checkpoint freezes a table by holding it as it is while the operator
 * goes on with a copy (the operator keeps who holds what). The copy may be
 * made whole or a block at a time (rows and index slots as the copy's first
 * touch needs them): */

/* Rows [lo, lo + n) of src (hashes and keys) into the same rows of dst (room
 * reserved, same key types): STRING bytes copied into dst's pool, or
 * borrowed when !copy_strings. LAMINAR_ERR_NOMEM when a copy failed. */
laminar_code lm_state_table_copy_rows(lm_state_table* dst, const lm_state_table* src,
                                      int64_t lo, int64_t n, bool copy_strings);
/* dst's index as large as src's (its content then undefined: copy it with
 * lm_state_table_copy_index). LAMINAR_ERR_NOMEM leaves dst's index. */
laminar_code lm_state_table_index_like(lm_state_table* dst, const lm_state_table* src);
/* Index slots [lo, lo + n) of src into dst's (as large: index_like). */
void lm_state_table_copy_index(lm_state_table* dst, const lm_state_table* src, int64_t lo,
                               int64_t n);
/* dst (empty, any size) becomes a copy of src's rows and index. */
laminar_code lm_state_table_copy(lm_state_table* dst, const lm_state_table* src,
                                 bool copy_strings);

/* ---- snapshot --------------------------------------------------------------------- */

/* Write row g's keys into a snapshot. Reads only: any thread, t unchanged. */
void lm_state_table_put_keys(const lm_state_table* t, int64_t g, lm_state_writer* w);
/* Read keys written by lm_state_table_put_keys into row g (g < cap; rows up
 * to n need not include g) and set its hash. A short or bad input sets
 * r->failed (values then undefined); LAMINAR_ERR_NOMEM when a string copy
 * failed. Does not touch the index: lm_state_table_reindex() after. */
laminar_code lm_state_table_get_keys(lm_state_table* t, int64_t g, lm_state_reader* r);

/* Bytes the table holds for the state bound: per row 16 for its hash and
 * index share and its keys (a NULL flag and a value each), plus key strings. */
int64_t lm_state_table_bytes(const lm_state_table* t);
/* The per-row part of lm_state_table_bytes for these key types. */
int64_t lm_state_table_row_bytes(const lm_type* types, int32_t nkeys);

#endif /* LM_STATE_TABLE_H */
