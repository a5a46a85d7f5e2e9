/*
 * join.c -- what the two join operators share (see join.h).
 */
#include "op/join.h"

#include "util/util.h"

#include <string.h>

laminar_code lm_join_out_init(lm_join_out* o, const lm_schema* schema,
                              const uint8_t* need) {
  memset(o, 0, sizeof *o);
  o->ncols = schema->ncols;
  o->need = need;
  size_t n = (size_t)(o->ncols ? o->ncols : 1);
  o->vecs = lm_calloc(n, sizeof *o->vecs);
  o->data = lm_calloc(n, sizeof *o->data);
  o->nulls = lm_calloc(n, sizeof *o->nulls);
  if (o->vecs == NULL || o->data == NULL || o->nulls == NULL) return LAMINAR_ERR_NOMEM;
  for (int32_t c = 0; c < o->ncols; c++) o->vecs[c].type = schema->fields[c].type;
  return LAMINAR_OK;
}

laminar_code lm_join_out_reserve(lm_join_out* o, int64_t n) {
  if (n <= o->cap) return LAMINAR_OK;
  int64_t nc = o->cap ? o->cap : 256;
  while (nc < n) nc *= 2;
  for (int32_t c = 0; c < o->ncols; c++) {
    if (o->need != NULL && !o->need[c]) continue;
    void* d = lm_realloc(o->data[c], (size_t)(nc * lm_type_width(o->vecs[c].type)));
    if (d == NULL) return LAMINAR_ERR_NOMEM;
    o->data[c] = d;
    uint8_t* nl = lm_realloc(o->nulls[c], (size_t)nc);
    if (nl == NULL) return LAMINAR_ERR_NOMEM;
    o->nulls[c] = nl;
  }
  void* z = lm_calloc((size_t)nc, sizeof(lm_str));
  if (z == NULL) return LAMINAR_ERR_NOMEM;
  lm_free(o->zeros);
  o->zeros = z;
  o->cap = nc;
  return LAMINAR_OK;
}

void lm_join_out_free(lm_join_out* o) {
  for (int32_t c = 0; c < o->ncols && o->data != NULL && o->nulls != NULL; c++) {
    lm_free(o->data[c]);
    lm_free(o->nulls[c]);
  }
  lm_free(o->data);
  lm_free(o->nulls);
  lm_free(o->vecs);
  lm_free(o->zeros);
  memset(o, 0, sizeof *o);
}

laminar_code lm_join_one_side(lm_join_out* o, const lm_chunk* in, int32_t first,
                              const int64_t* rows, int64_t n) {
  LM_TRY(lm_join_out_reserve(o, n));
  for (int32_t c = 0; c < o->ncols; c++) {
    lm_type type = o->vecs[c].type;
    if (o->need != NULL && !o->need[c]) { /* no one reads it: zeros */
      o->vecs[c] = (lm_vec){type, n, NULL, o->zeros};
      continue;
    }
    int64_t w = lm_type_width(type);
    char* dst = o->data[c];
    uint8_t* nl = o->nulls[c];
    bool mine = c >= first && c < first + in->ncols;
    const lm_vec* v = mine ? &in->cols[c - first] : NULL;
    bool any_null = false;
    for (int64_t k = 0; k < n; k++) {
      bool null = !mine || (v->nulls != NULL && v->nulls[rows[k]]);
      nl[k] = null;
      any_null = any_null || null;
      if (null)
        memset(dst + k * w, 0, (size_t)w);
      else
        lm_copy_value(dst + k * w, (const char*)v->data + rows[k] * w, w);
    }
    o->vecs[c] = (lm_vec){type, n, any_null ? nl : NULL, dst};
  }
  return LAMINAR_OK;
}

int64_t lm_join_to_units(lm_type t, int64_t ms) {
  if (t != LM_TYPE_TIMESTAMP) return ms;
  if (ms >= INT64_MAX / 1000) return INT64_MAX;
  if (ms <= INT64_MIN / 1000) return INT64_MIN;
  return ms * 1000;
}

int64_t lm_join_to_ms(lm_type t, int64_t u) {
  if (t != LM_TYPE_TIMESTAMP || u == INT64_MAX || u == INT64_MIN) return u;
  return u / 1000 - (u % 1000 < 0 ? 1 : 0);
}

int64_t lm_join_sat_add(int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_add_overflow(a, b, &r)) return b > 0 ? INT64_MAX : INT64_MIN;
  return r;
}

int64_t lm_join_sat_sub(int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_sub_overflow(a, b, &r)) return b > 0 ? INT64_MIN : INT64_MAX;
  return r;
}

laminar_code lm_join_key_row(lm_state_table* t, uint64_t h, const lm_vec* keys,
                             int64_t row, void** const* arrays, const size_t* sizes,
                             int32_t narrays, int64_t* nalloc, int64_t* out) {
  int64_t g = lm_state_table_find(t, h, keys, row);
  if (g < 0) {
    LM_TRY(lm_state_table_reserve(t, t->n + 1));
    if (t->cap > *nalloc) {
      for (int32_t i = 0; i < narrays; i++) {
        char* a = lm_realloc(*arrays[i], sizes[i] * (size_t)t->cap);
        if (a == NULL) return LAMINAR_ERR_NOMEM;
        memset(a + sizes[i] * (size_t)*nalloc, 0, sizes[i] * (size_t)(t->cap - *nalloc));
        *arrays[i] = a;
      }
      *nalloc = t->cap;
    }
    LM_TRY(lm_state_table_grow_index(t));
    g = lm_state_table_push(t, h);
    LM_TRY(lm_state_table_set_keys(t, g, keys, row));
  }
  *out = g;
  return LAMINAR_OK;
}

void lm_join_keys_truncate(lm_state_table* t, lm_timelist* const* lists, int32_t nlists,
                           int64_t n0) {
  if (t->n <= n0) return;
  for (int32_t i = 0; i < nlists; i++)
    for (int64_t g = n0; g < t->n; g++) lm_timelist_free(&lists[i][g]);
  lm_state_table_truncate(t, n0);
}

int64_t lm_join_chunk_bound(const lm_rowstore* st, const lm_type* key_types,
                            int32_t nkeys, int64_t per_row, const lm_chunk* in) {
  int64_t per = per_row + lm_state_table_row_bytes(key_types, nkeys);
  for (int32_t c = 0; c < st->ncols; c++)
    if (st->keep[c]) per += lm_type_width(st->types[c]) + 1;
  int64_t bytes = per * in->nrows;
  for (int32_t c = 0; c < in->ncols; c++) {
    const lm_vec* v = &in->cols[c];
    if (!lm_type_is_bytes(v->type)) continue;
    const lm_str* x = v->data;
    for (int64_t r = 0; r < in->nrows; r++) bytes += 2 * x[r].len; /* row and key */
  }
  return bytes;
}
