/*
 * keywm.c -- per-key event time for per-key watermarks (keywm.h).
 */
#include "state/keywm.h"

#include "util/util.h"

#include <string.h>

laminar_code lm_keywm_init(lm_keywm* kw, lm_type key_type) {
  memset(kw, 0, sizeof *kw);
  return lm_state_table_init(&kw->t, &key_type, 1);
}

void lm_keywm_free(lm_keywm* kw) {
  lm_state_table_free(&kw->t);
  lm_free(kw->max_ts);
  lm_free(kw->hashes);
  memset(kw, 0, sizeof *kw);
}

int64_t lm_keywm_time_ms(const lm_vec* ts, int64_t row) {
  if (ts->nulls != NULL && ts->nulls[row]) return INT64_MIN;
  if (ts->type == LM_TYPE_INT32) return ((const int32_t*)ts->data)[row];
  int64_t v = ((const int64_t*)ts->data)[row];
  if (ts->type == LM_TYPE_TIMESTAMP) v = v / 1000 - (v % 1000 < 0 ? 1 : 0);
  return v;
}

/* Room for `cap` keys in the table and max_ts. */
static laminar_code reserve(lm_keywm* kw, int64_t cap) {
  LM_TRY(lm_state_table_reserve(&kw->t, cap));
  if (kw->t.cap > kw->cap) {
    LM_GROW_ARRAY(kw->max_ts, kw->t.cap);
    kw->cap = kw->t.cap;
  }
  return LAMINAR_OK;
}

/* Append key `row` of `key` (hash h) with no time yet: its id. */
static laminar_code add_key(lm_keywm* kw, uint64_t h, const lm_vec* key, int64_t row,
                            uint32_t* out) {
  LM_TRY(lm_state_table_grow_index(&kw->t));
  LM_TRY(reserve(kw, kw->t.n + 1));
  uint32_t k = lm_state_table_push(&kw->t, h);
  laminar_code rc = lm_state_table_set_keys(&kw->t, k, key, row);
  if (rc != LAMINAR_OK) {
    lm_state_table_truncate(&kw->t, k);
    return rc;
  }
  kw->max_ts[k] = INT64_MIN;
  *out = k;
  return LAMINAR_OK;
}

laminar_code lm_keywm_observe(lm_keywm* kw, const lm_vec* key, const lm_vec* ts,
                              const uint32_t* sel, int64_t n, uint32_t* kid,
                              int64_t* out_added) {
  if (out_added != NULL) *out_added = 0;
  if (n == 0) return LAMINAR_OK;
  int64_t len = sel != NULL ? (int64_t)sel[n - 1] + 1 : n;
  if (len > kw->hcap) {
    LM_GROW_ARRAY(kw->hashes, len);
    kw->hcap = len;
  }
  lm_state_hash_rows(key, 1, sel, n, kw->hashes);
  for (int64_t j = 0; j < n; j++) {
    int64_t r = sel != NULL ? sel[j] : j;
    uint64_t h = kw->hashes[r];
    int64_t found = lm_state_table_find(&kw->t, h, key, r);
    uint32_t k;
    if (found >= 0) {
      k = (uint32_t)found;
    } else {
      LM_TRY(add_key(kw, h, key, r, &k));
      if (out_added != NULL) (*out_added)++;
    }
    if (kid != NULL) kid[r] = k;
    int64_t t = lm_keywm_time_ms(ts, r);
    if (t > kw->max_ts[k]) kw->max_ts[k] = t;
  }
  return LAMINAR_OK;
}

laminar_code lm_keywm_compact(lm_keywm* kw, const bool* keep, uint32_t* remap) {
  lm_keywm nk;
  lm_type type = kw->t.keys[0].type;
  LM_TRY(lm_keywm_init(&nk, type));
  int64_t kept = 0;
  for (int64_t k = 0; k < kw->t.n; k++) kept += keep[k] ? 1 : 0;
  laminar_code rc = reserve(&nk, kept > 0 ? kept : 1);
  for (int64_t k = 0; k < kw->t.n && rc == LAMINAR_OK; k++) {
    if (!keep[k]) continue;
    rc = lm_state_table_grow_index(&nk.t);
    if (rc != LAMINAR_OK) break;
    uint32_t g = lm_state_table_push(&nk.t, kw->t.hash[k]);
    rc = lm_state_table_copy_keys(&nk.t, g, &kw->t, k, true);
    nk.max_ts[g] = kw->max_ts[k];
  }
  if (rc != LAMINAR_OK) {
    lm_keywm_free(&nk);
    return rc;
  }
  if (remap != NULL) {
    uint32_t next = 0;
    for (int64_t k = 0; k < kw->t.n; k++) remap[k] = keep[k] ? next++ : UINT32_MAX;
  }
  nk.hashes = kw->hashes; /* scratch carried over */
  nk.hcap = kw->hcap;
  kw->hashes = NULL;
  lm_keywm_free(kw);
  *kw = nk;
  return LAMINAR_OK;
}

void lm_keywm_put_one(const lm_keywm* kw, int64_t k, lm_state_writer* w) {
  lm_state_table_put_keys(&kw->t, k, w);
  lm_state_put_i64(w, kw->max_ts[k]);
}

void lm_keywm_put(const lm_keywm* kw, lm_state_writer* w) {
  lm_state_put_i64(w, kw->t.n);
  for (int64_t k = 0; k < kw->t.n; k++) lm_keywm_put_one(kw, k, w);
}

laminar_code lm_keywm_get_one(lm_keywm* kw, lm_state_reader* r, uint32_t* out) {
  LM_TRY(lm_state_table_grow_index(&kw->t));
  LM_TRY(reserve(kw, kw->t.n + 1));
  int64_t g = kw->t.n;
  laminar_code rc = lm_state_table_get_keys(&kw->t, g, r);
  if (rc != LAMINAR_OK || r->failed) return rc;
  kw->max_ts[g] = lm_state_get_i64(r);
  (void)lm_state_table_push(&kw->t, kw->t.hash[g]);
  *out = (uint32_t)g;
  return LAMINAR_OK;
}

laminar_code lm_keywm_get(lm_keywm* kw, lm_state_reader* r) {
  int64_t n = lm_state_get_i64(r);
  if (n < 0 || n > ((int64_t)1 << 30)) {
    r->failed = true;
    return LAMINAR_OK;
  }
  for (int64_t k = 0; k < n && !r->failed; k++) {
    uint32_t g;
    LM_TRY(lm_keywm_get_one(kw, r, &g));
  }
  return LAMINAR_OK;
}
