/*
 * table.c -- the keyed state table (state/table.h): key hashing, the
 * open-addressing index, key columns and their snapshot encoding.
 */
#include "state/table.h"

#include "util/util.h"

#include <stdlib.h>
#include <string.h>

/* ---- hashing ------------------------------------------------------------------- */

/* The hash of one key value: row r of column v. */
static inline uint64_t key_hash(const lm_vec* v, int64_t r) {
  if (v->nulls && v->nulls[r]) return LM_STATE_NULL_HASH;
  if (lm_type_is_bytes(v->type)) {
    lm_str s = ((const lm_str*)v->data)[r];
    return lm_state_hash_bytes(s.ptr, s.len);
  }
  if (v->type == LM_TYPE_DOUBLE) return lm_state_hash_double(((const double*)v->data)[r]);
  return lm_state_mix64((uint64_t)lm_state_vec_int(v, r));
}

void lm_state_hash_rows(const lm_vec* keys, int32_t nkeys, const uint32_t* sel, int64_t n,
                        uint64_t* h) {
  if (sel != NULL) {
    for (int64_t i = 0; i < n; i++) h[sel[i]] = LM_STATE_HASH_SEED;
    for (int32_t c = 0; c < nkeys; c++) {
      const lm_vec* v = &keys[c];
      if (v->nulls == NULL && lm_type_is_bytes(v->type)) { /* as below */
        const lm_str* s = v->data;
        for (int64_t i = 0; i < n; i++) {
          uint32_t r = sel[i];
          h[r] = lm_state_hash_combine(h[r], lm_state_hash_bytes(s[r].ptr, s[r].len));
        }
        continue;
      }
      for (int64_t i = 0; i < n; i++) {
        h[sel[i]] = lm_state_hash_combine(h[sel[i]], key_hash(v, sel[i]));
      }
    }
    return;
  }
  for (int64_t k = 0; k < n; k++) h[k] = LM_STATE_HASH_SEED;
  for (int32_t c = 0; c < nkeys; c++) {
    const lm_vec* v = &keys[c];
    if (v->nulls == NULL && lm_type_is_bytes(v->type)) { /* the common key: no branches */
      const lm_str* s = v->data;
      for (int64_t k = 0; k < n; k++) {
        h[k] = lm_state_hash_combine(h[k], lm_state_hash_bytes(s[k].ptr, s[k].len));
      }
      continue;
    }
    for (int64_t k = 0; k < n; k++) h[k] = lm_state_hash_combine(h[k], key_hash(v, k));
  }
}

uint64_t lm_state_table_hash_row(const lm_state_table* t, int64_t g) {
  uint64_t h = LM_STATE_HASH_SEED;
  for (int32_t c = 0; c < t->nkeys; c++) {
    const lm_state_keycol* kc = &t->keys[c];
    uint64_t kh;
    if (kc->nulls[g]) {
      kh = LM_STATE_NULL_HASH;
    } else if (lm_type_is_bytes(kc->type)) {
      kh = lm_state_hash_bytes(kc->s[g].ptr, kc->s[g].len);
    } else if (kc->type == LM_TYPE_DOUBLE) {
      kh = lm_state_hash_double(kc->d[g]);
    } else {
      kh = lm_state_mix64((uint64_t)kc->i[g]);
    }
    h = lm_state_hash_combine(h, kh);
  }
  return h;
}

/* ---- the table ----------------------------------------------------------------- */

laminar_code lm_state_table_init(lm_state_table* t, const lm_type* types, int32_t nkeys) {
  memset(t, 0, sizeof *t);
  lm_pool_init(&t->strings);
  t->keys = lm_calloc((size_t)nkeys + 1, sizeof(lm_state_keycol));
  t->index = lm_calloc(16, sizeof(uint32_t));
  if (t->keys == NULL || t->index == NULL) {
    lm_free(t->keys);
    lm_free(t->index);
    memset(t, 0, sizeof *t);
    return LAMINAR_ERR_NOMEM;
  }
  t->nkeys = nkeys;
  t->mask = 15;
  for (int32_t c = 0; c < nkeys; c++) t->keys[c].type = types[c];
  return LAMINAR_OK;
}

void lm_state_table_free(lm_state_table* t) {
  for (int32_t c = 0; t->keys != NULL && c < t->nkeys; c++) {
    lm_free(t->keys[c].i);
    lm_free(t->keys[c].d);
    lm_free(t->keys[c].s);
    lm_free(t->keys[c].nulls);
  }
  lm_free(t->keys);
  lm_free(t->hash);
  lm_free(t->index);
  lm_pool_free(&t->strings);
  memset(t, 0, sizeof *t);
}

void lm_state_table_reset(lm_state_table* t) {
  memset(t->index, 0, sizeof(uint32_t) * ((size_t)t->mask + 1));
  lm_pool_reset(&t->strings);
  t->n = 0;
}

#define GROW(ptr, n)                                                \
  do {                                                              \
    void* grown_ = lm_realloc((ptr), sizeof(*(ptr)) * (size_t)(n)); \
    if (grown_ == NULL) return LAMINAR_ERR_NOMEM;                   \
    (ptr) = grown_;                                                 \
  } while (0)

laminar_code lm_state_table_reserve(lm_state_table* t, int64_t cap) {
  if (cap <= t->cap) return LAMINAR_OK;
  int64_t ncap = t->cap ? t->cap * 2 : 64;
  while (ncap < cap) ncap *= 2;
  if (ncap > (int64_t)UINT32_MAX / 4) return LAMINAR_ERR_NOMEM;
  GROW(t->hash, ncap);
  for (int32_t c = 0; c < t->nkeys; c++) {
    lm_state_keycol* kc = &t->keys[c];
    GROW(kc->nulls, ncap);
    if (lm_type_is_bytes(kc->type)) {
      GROW(kc->s, ncap);
    } else if (kc->type == LM_TYPE_DOUBLE) {
      GROW(kc->d, ncap);
    } else {
      GROW(kc->i, ncap);
    }
  }
  t->cap = ncap;
  return LAMINAR_OK;
}

static bool rows_equal(const lm_state_table* a, int64_t ga, const lm_state_table* b,
                       int64_t gb) {
  for (int32_t c = 0; c < a->nkeys; c++) {
    const lm_state_keycol *x = &a->keys[c], *y = &b->keys[c];
    if (x->nulls[ga] || y->nulls[gb]) {
      if (x->nulls[ga] != y->nulls[gb]) return false;
      continue;
    }
    if (lm_type_is_bytes(x->type)) {
      if (!lm_state_str_eq(x->s[ga], y->s[gb])) return false;
    } else if (x->type == LM_TYPE_DOUBLE) {
      double p = lm_state_canon_double(x->d[ga]), q = lm_state_canon_double(y->d[gb]);
      if (!(p == q || (isnan(p) && isnan(q)))) return false;
    } else if (x->i[ga] != y->i[gb]) {
      return false;
    }
  }
  return true;
}

int64_t lm_state_table_find_row(const lm_state_table* t, uint64_t h,
                                const lm_state_table* from, int64_t g) {
  for (uint32_t slot = (uint32_t)h & t->mask; t->index[slot] != 0;
       slot = (slot + 1) & t->mask) {
    uint32_t a = t->index[slot] - 1;
    if (t->hash[a] == h && rows_equal(t, a, from, g)) return a;
  }
  return -1;
}

/* Inserts prefetch the slot a few rows ahead: a big index misses the cache on
 * nearly every insert. */
laminar_code lm_state_table_rebuild(lm_state_table* t, uint64_t nsize) {
  uint32_t* fresh = lm_calloc((size_t)nsize, sizeof(uint32_t));
  if (fresh == NULL) return LAMINAR_ERR_NOMEM;
  lm_free(t->index);
  t->index = fresh;
  t->mask = (uint32_t)(nsize - 1);
  enum { AHEAD = 8 };
  for (int64_t g = 0; g < t->n; g++) {
    if (g + AHEAD < t->n)
      __builtin_prefetch(&t->index[(uint32_t)t->hash[g + AHEAD] & t->mask], 1);
    lm_state_table_index_insert(t, t->hash[g], (uint32_t)g);
  }
  return LAMINAR_OK;
}

void lm_state_table_truncate(lm_state_table* t, int64_t n) {
  t->n = n;
  memset(t->index, 0, sizeof(uint32_t) * ((size_t)t->mask + 1));
  for (int64_t g = 0; g < n; g++) lm_state_table_index_insert(t, t->hash[g], (uint32_t)g);
}

laminar_code lm_state_table_reindex(lm_state_table* t) {
  uint64_t size = 64;
  while (size < (uint64_t)(t->n + 1) * 2) size *= 2;
  return lm_state_table_rebuild(t, size);
}

laminar_code lm_state_table_set_keys(lm_state_table* t, int64_t g, const lm_vec* keys,
                                     int64_t row) {
  for (int32_t c = 0; c < t->nkeys; c++) {
    lm_state_keycol* kc = &t->keys[c];
    const lm_vec* v = &keys[c];
    bool is_null = v->nulls && v->nulls[row];
    kc->nulls[g] = is_null;
    if (lm_type_is_bytes(kc->type)) {
      lm_str s = is_null ? (lm_str){NULL, 0} : ((const lm_str*)v->data)[row];
      char* copy = lm_pool_copy(&t->strings, s.ptr, (size_t)s.len);
      if (copy == NULL) return LAMINAR_ERR_NOMEM;
      kc->s[g] = (lm_str){copy, s.len};
    } else if (kc->type == LM_TYPE_DOUBLE) {
      kc->d[g] = is_null ? 0.0 : ((const double*)v->data)[row];
    } else {
      kc->i[g] = is_null ? 0 : lm_state_vec_int(v, row);
    }
  }
  return LAMINAR_OK;
}

laminar_code lm_state_table_copy_keys(lm_state_table* to, int64_t a,
                                      const lm_state_table* from, int64_t g, bool copy) {
  for (int32_t c = 0; c < to->nkeys; c++) {
    lm_state_keycol* kc = &to->keys[c];
    const lm_state_keycol* src = &from->keys[c];
    kc->nulls[a] = src->nulls[g];
    if (lm_type_is_bytes(kc->type)) {
      kc->s[a] = src->s[g];
      if (copy) {
        kc->s[a].ptr = lm_pool_copy(&to->strings, src->s[g].ptr, (size_t)src->s[g].len);
        if (kc->s[a].ptr == NULL && src->s[g].len > 0) return LAMINAR_ERR_NOMEM;
      }
    } else if (kc->type == LM_TYPE_DOUBLE) {
      kc->d[a] = src->d[g];
    } else {
      kc->i[a] = src->i[g];
    }
  }
  return LAMINAR_OK;
}

void lm_state_table_put_value(lm_vec* ov, const lm_state_keycol* kc, int64_t g,
                              int64_t row) {
  ((uint8_t*)ov->nulls)[row] = kc->nulls[g];
  switch (kc->type) {
    case LM_TYPE_BINARY:
    case LM_TYPE_STRING: ((lm_str*)ov->data)[row] = kc->s[g]; break;
    case LM_TYPE_DOUBLE: ((double*)ov->data)[row] = kc->d[g]; break;
    default: lm_vec_int_put(kc->type, (void*)ov->data, row, kc->i[g]); break;
  }
}

/* ---- copies -------------------------------------------------------------------- */

laminar_code lm_state_table_copy_rows(lm_state_table* dst, const lm_state_table* src,
                                      int64_t lo, int64_t n, bool copy_strings) {
  if (n <= 0) return LAMINAR_OK;
  memcpy(dst->hash + lo, src->hash + lo, sizeof(uint64_t) * (size_t)n);
  for (int32_t c = 0; c < dst->nkeys; c++) {
    lm_state_keycol* to = &dst->keys[c];
    const lm_state_keycol* from = &src->keys[c];
    memcpy(to->nulls + lo, from->nulls + lo, (size_t)n);
    if (lm_type_is_bytes(to->type)) {
      memcpy(to->s + lo, from->s + lo, sizeof(lm_str) * (size_t)n);
      for (int64_t g = lo; copy_strings && g < lo + n; g++) {
        if (to->s[g].ptr == NULL) continue;
        to->s[g].ptr =
            lm_pool_copy(&dst->strings, from->s[g].ptr, (size_t)from->s[g].len);
        if (to->s[g].ptr == NULL) return LAMINAR_ERR_NOMEM;
      }
    } else if (to->type == LM_TYPE_DOUBLE) {
      memcpy(to->d + lo, from->d + lo, sizeof(double) * (size_t)n);
    } else {
      memcpy(to->i + lo, from->i + lo, sizeof(int64_t) * (size_t)n);
    }
  }
  return LAMINAR_OK;
}

laminar_code lm_state_table_index_like(lm_state_table* dst, const lm_state_table* src) {
  if (dst->mask == src->mask) return LAMINAR_OK;
  uint32_t* index = lm_realloc(dst->index, sizeof(uint32_t) * ((size_t)src->mask + 1));
  if (index == NULL) return LAMINAR_ERR_NOMEM;
  dst->index = index;
  dst->mask = src->mask;
  return LAMINAR_OK;
}

void lm_state_table_copy_index(lm_state_table* dst, const lm_state_table* src, int64_t lo,
                               int64_t n) {
  memcpy(dst->index + lo, src->index + lo, sizeof(uint32_t) * (size_t)n);
}

laminar_code lm_state_table_copy(lm_state_table* dst, const lm_state_table* src,
                                 bool copy_strings) {
  LM_TRY(lm_state_table_reserve(dst, src->n > 0 ? src->n : 1));
  LM_TRY(lm_state_table_index_like(dst, src));
  lm_state_table_copy_index(dst, src, 0, (int64_t)src->mask + 1);
  LM_TRY(lm_state_table_copy_rows(dst, src, 0, src->n, copy_strings));
  dst->n = src->n;
  return LAMINAR_OK;
}

/* ---- snapshot ------------------------------------------------------------------ */

void lm_state_table_put_keys(const lm_state_table* t, int64_t g, lm_state_writer* w) {
  for (int32_t c = 0; c < t->nkeys; c++) {
    const lm_state_keycol* kc = &t->keys[c];
    lm_state_put_u8(w, kc->nulls[g]);
    if (lm_type_is_bytes(kc->type)) {
      lm_state_put_bytes(w, kc->s[g].ptr, (size_t)kc->s[g].len);
    } else if (kc->type == LM_TYPE_DOUBLE) {
      lm_state_put_f64(w, kc->d[g]);
    } else {
      lm_state_put_i64(w, kc->i[g]);
    }
  }
}

laminar_code lm_state_table_get_keys(lm_state_table* t, int64_t g, lm_state_reader* r) {
  for (int32_t c = 0; c < t->nkeys; c++) {
    lm_state_keycol* kc = &t->keys[c];
    kc->nulls[g] = lm_state_get_u8(r) ? 1 : 0;
    if (lm_type_is_bytes(kc->type)) {
      lm_str s = lm_state_get_bytes(r);
      char* copy = lm_pool_copy(&t->strings, s.ptr, (size_t)s.len);
      if (copy == NULL) return LAMINAR_ERR_NOMEM;
      kc->s[g] = (lm_str){copy, s.len};
    } else if (kc->type == LM_TYPE_DOUBLE) {
      kc->d[g] = lm_state_get_f64(r);
    } else {
      kc->i[g] = lm_state_get_i64(r);
    }
  }
  t->hash[g] = lm_state_table_hash_row(t, g);
  return LAMINAR_OK;
}

/* ---- memory -------------------------------------------------------------------- */

/* A key value's bytes: its NULL flag and its value. */
static int64_t key_bytes(lm_type type) {
  return 1 + (lm_type_is_bytes(type) ? (int64_t)sizeof(lm_str) : 8);
}

int64_t lm_state_table_row_bytes(const lm_type* types, int32_t nkeys) {
  int64_t b = 16; /* the hash and the index's share of the row */
  for (int32_t c = 0; c < nkeys; c++) b += key_bytes(types[c]);
  return b;
}

int64_t lm_state_table_bytes(const lm_state_table* t) {
  int64_t b = 16;
  for (int32_t c = 0; c < t->nkeys; c++) b += key_bytes(t->keys[c].type);
  return t->n * b + (int64_t)t->strings.used_bytes;
}
