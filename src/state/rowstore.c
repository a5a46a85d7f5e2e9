/*
 * rowstore.c -- row storage and time-sorted slot lists for the joins (see
 * rowstore.h).
 */
#include "state/rowstore.h"

#include "util/util.h"

#include <string.h>


laminar_code lm_rowstore_init(lm_rowstore* s, const lm_schema* schema, int32_t first,
                              int32_t n, const uint8_t* need) {
  memset(s, 0, sizeof *s);
  lm_pool_init(&s->strings);
  s->ncols = n;
  s->types = lm_calloc((size_t)(n ? n : 1), sizeof *s->types);
  s->data = lm_calloc((size_t)(n ? n : 1), sizeof *s->data);
  s->nulls = lm_calloc((size_t)(n ? n : 1), sizeof *s->nulls);
  s->keep = lm_calloc((size_t)(n ? n : 1), 1);
  if (s->types == NULL || s->data == NULL || s->nulls == NULL || s->keep == NULL)
    return LAMINAR_ERR_NOMEM;
  for (int32_t c = 0; c < n; c++) {
    s->types[c] = schema->fields[first + c].type;
    s->keep[c] = need == NULL || need[first + c];
    if (lm_type_is_bytes(s->types[c]) && s->keep[c]) s->has_strings = true;
  }
  return LAMINAR_OK;
}

void lm_rowstore_free(lm_rowstore* s) {
  for (int32_t c = 0; c < s->ncols && s->data != NULL; c++) {
    lm_free(s->data[c]);
    lm_free(s->nulls[c]);
  }
  lm_free(s->data);
  lm_free(s->nulls);
  lm_free(s->types);
  lm_free(s->keep);
  lm_free(s->free_slots);
  lm_pool_free(&s->strings);
  memset(s, 0, sizeof *s);
}

laminar_code lm_rowstore_reserve(lm_rowstore* s, int64_t cap) {
  if (cap <= s->cap) return LAMINAR_OK;
  int64_t nc = s->cap ? s->cap : 256;
  while (nc < cap) nc *= 2;
  if (nc > ((int64_t)1 << 31)) return LAMINAR_ERR_NOMEM;
  for (int32_t c = 0; c < s->ncols; c++) {
    if (!s->keep[c]) continue;
    void* d = lm_realloc(s->data[c], (size_t)(nc * lm_type_width(s->types[c])));
    if (d == NULL) return LAMINAR_ERR_NOMEM;
    s->data[c] = d;
    uint8_t* nl = lm_realloc(s->nulls[c], (size_t)nc);
    if (nl == NULL) return LAMINAR_ERR_NOMEM;
    s->nulls[c] = nl;
  }
  uint32_t* f = lm_realloc(s->free_slots, sizeof *f * (size_t)nc);
  if (f == NULL) return LAMINAR_ERR_NOMEM;
  s->free_slots = f;
  s->cap = nc;
  return LAMINAR_OK;
}

/* A free slot (room reserved: lm_rowstore_reserve(used + 1)). */
uint32_t lm_rowstore_take(lm_rowstore* s) {
  s->live++;
  if (s->nfree > 0) return s->free_slots[--s->nfree];
  return (uint32_t)s->used++;
}

void lm_rowstore_release(lm_rowstore* s, uint32_t slot) {
  for (int32_t c = 0; s->has_strings && c < s->ncols; c++) {
    if (lm_type_is_bytes(s->types[c]) && s->keep[c] && !s->nulls[c][slot]) {
      s->str_live -= ((lm_str*)s->data[c])[slot].len;
    }
  }
  s->free_slots[s->nfree++] = slot;
  s->live--;
}

/* A put into `slot` failed at column `failed`: the strings of the columns
 * before it are given back and every string column of the slot is NULL, so
 * the slot is released as one that holds nothing. */
static laminar_code put_failed(lm_rowstore* s, uint32_t slot, int32_t failed) {
  for (int32_t c = 0; c < s->ncols; c++) {
    if (!lm_type_is_bytes(s->types[c]) || !s->keep[c]) continue;
    if (c < failed && !s->nulls[c][slot]) s->str_live -= ((lm_str*)s->data[c])[slot].len;
    s->nulls[c][slot] = 1;
  }
  return LAMINAR_ERR_NOMEM;
}

/* Row `row` of cols (the input's columns, ncols of them) into `slot`. */
laminar_code lm_rowstore_put(lm_rowstore* s, uint32_t slot, const lm_vec* cols,
                             int64_t row) {
  for (int32_t c = 0; c < s->ncols; c++) {
    if (!s->keep[c]) continue;
    const lm_vec* v = &cols[c];
    bool null = v->nulls != NULL && v->nulls[row];
    s->nulls[c][slot] = null;
    int64_t w = lm_type_width(s->types[c]);
    if (lm_type_is_bytes(s->types[c])) {
      lm_str x = null ? (lm_str){NULL, 0} : ((const lm_str*)v->data)[row];
      if (x.len > 0) {
        char* p = lm_pool_copy(&s->strings, x.ptr, (size_t)x.len);
        if (p == NULL) return put_failed(s, slot, c);
        x.ptr = p;
        s->str_live += x.len;
      }
      ((lm_str*)s->data[c])[slot] = x;
    } else if (null) {
      memset((char*)s->data[c] + slot * w, 0, (size_t)w);
    } else {
      lm_copy_value((char*)s->data[c] + slot * w, (const char*)v->data + row * w, w);
    }
  }
  return LAMINAR_OK;
}

/* Move live strings to a fresh pool when the old one is mostly dead bytes:
 * freed rows' strings are otherwise only reclaimed by a reset. */
laminar_code lm_rowstore_compact(lm_rowstore* s, const uint8_t* live_mark) {
  if (!s->has_strings) return LAMINAR_OK;
  int64_t held = (int64_t)lm_pool_reserved(&s->strings);
  if (held < 2 * s->str_live + (1 << 20)) return LAMINAR_OK;
  lm_pool fresh;
  lm_pool_init(&fresh);
  for (int64_t slot = 0; slot < s->used; slot++) {
    if (!live_mark[slot]) continue;
    for (int32_t c = 0; c < s->ncols; c++) {
      if (!lm_type_is_bytes(s->types[c]) || !s->keep[c] || s->nulls[c][slot]) continue;
      lm_str* x = &((lm_str*)s->data[c])[slot];
      if (x->len == 0) continue;
      char* p = lm_pool_copy(&fresh, x->ptr, (size_t)x->len);
      if (p == NULL) {
        lm_pool_free(&fresh);
        return LAMINAR_ERR_NOMEM;
      }
      x->ptr = p;
    }
  }
  lm_pool_free(&s->strings);
  s->strings = fresh;
  return LAMINAR_OK;
}

int64_t lm_rowstore_bytes(const lm_rowstore* s) {
  int64_t per = 0;
  for (int32_t c = 0; c < s->ncols; c++)
    if (s->keep[c]) per += lm_type_width(s->types[c]) + 1;
  return s->live * per + s->str_live;
}

/* First index in [head, n) of kr whose time is > t (upper bound). */
int32_t lm_timelist_upper(const lm_timelist* kr, int64_t t) {
  int32_t lo = kr->head, hi = kr->n;
  if (hi > lo && kr->ts[hi - 1] <= t) return hi; /* in-order arrivals */
  while (lo < hi) {
    int32_t mid = lo + (hi - lo) / 2;
    if (kr->ts[mid] <= t)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo;
}

/* First index in [head, n) whose time is >= t (lower bound). */
int32_t lm_timelist_lower(const lm_timelist* kr, int64_t t) {
  int32_t lo = kr->head, hi = kr->n;
  while (lo < hi) {
    int32_t mid = lo + (hi - lo) / 2;
    if (kr->ts[mid] < t)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo;
}

/* Move the entries [head, n) to the front. */
static void timelist_shift(lm_timelist* kr) {
  if (kr->head == 0) return;
  int32_t live = kr->n - kr->head;
  memmove(kr->ts, kr->ts + kr->head, sizeof *kr->ts * (size_t)live);
  memmove(kr->slot, kr->slot + kr->head, sizeof *kr->slot * (size_t)live);
  kr->head = 0;
  kr->n = live;
}

/* Room for nc entries (> cap). */
static laminar_code timelist_grow(lm_timelist* kr, int64_t nc) {
  if (nc > INT32_MAX) return LAMINAR_ERR_NOMEM;
  int64_t* ts = lm_realloc(kr->ts, sizeof *ts * (size_t)nc);
  if (ts == NULL) return LAMINAR_ERR_NOMEM;
  kr->ts = ts;
  uint32_t* sl = lm_realloc(kr->slot, sizeof *sl * (size_t)nc);
  if (sl == NULL) return LAMINAR_ERR_NOMEM;
  kr->slot = sl;
  kr->cap = (int32_t)nc;
  return LAMINAR_OK;
}

laminar_code lm_timelist_reserve(lm_timelist* kr, int32_t extra) {
  if ((int64_t)kr->n + extra <= kr->cap) return LAMINAR_OK;
  timelist_shift(kr); /* first take back the room of the entries dropped */
  if ((int64_t)kr->n + extra <= kr->cap) return LAMINAR_OK;
  int64_t nc = kr->cap ? kr->cap : 4;
  while (nc < (int64_t)kr->n + extra) nc *= 2;
  return timelist_grow(kr, nc);
}

laminar_code lm_timelist_insert(lm_timelist* kr, int64_t t, uint32_t slot) {
  if (kr->head > 0 && (kr->n == kr->cap || kr->head >= kr->n / 2)) timelist_shift(kr);
  if (kr->n == kr->cap) LM_TRY(timelist_grow(kr, kr->cap ? (int64_t)kr->cap * 2 : 4));
  int32_t at = lm_timelist_upper(kr, t);
  if (at < kr->n) {
    memmove(kr->ts + at + 1, kr->ts + at, sizeof *kr->ts * (size_t)(kr->n - at));
    memmove(kr->slot + at + 1, kr->slot + at, sizeof *kr->slot * (size_t)(kr->n - at));
  }
  kr->ts[at] = t;
  kr->slot[at] = slot;
  kr->n++;
  return LAMINAR_OK;
}

void lm_rowstore_write_row(const lm_rowstore* s, uint32_t slot, lm_state_writer* w) {
  for (int32_t c = 0; c < s->ncols; c++) {
    bool null = !s->keep[c] || s->nulls[c][slot]; /* not held: NULL */
    lm_state_put_u8(w, null);
    if (null) continue;
    switch (s->types[c]) {
      case LM_TYPE_BINARY:
      case LM_TYPE_STRING: {
        lm_str x = ((const lm_str*)s->data[c])[slot];
        lm_state_put_bytes(w, x.ptr, (size_t)x.len);
        break;
      }
      case LM_TYPE_DOUBLE: lm_state_put_f64(w, ((const double*)s->data[c])[slot]); break;
      case LM_TYPE_NULL: lm_state_put_i64(w, ((const uint8_t*)s->data[c])[slot]); break;
      default: {
        lm_vec v = {s->types[c], slot + 1, NULL, s->data[c]};
        if (lm_type_is_wide(v.type)) { /* DECIMAL(p > 18): low, then high half */
          lm_i128 x = lm_vec_dec_at(&v, slot);
          lm_state_put_i64(w, (int64_t)(uint64_t)x);
          lm_state_put_i64(w, (int64_t)(uint64_t)((lm_u128)x >> 64));
          break;
        }
        lm_state_put_i64(w, lm_vec_int_at(&v, slot));
        break;
      }
    }
  }
}

/* Read one row written by lm_rowstore_write_row into `slot` of st. */
laminar_code lm_rowstore_read_row(lm_rowstore* st, uint32_t slot, lm_state_reader* r) {
  for (int32_t c = 0; c < st->ncols; c++) {
    bool null = lm_state_get_u8(r) != 0;
    if (!st->keep[c]) { /* not held: written as NULL */
      if (!null) return LAMINAR_ERR_RECOVERY;
      continue;
    }
    st->nulls[c][slot] = null;
    int64_t w = lm_type_width(st->types[c]);
    char* d = (char*)st->data[c] + slot * w;
    if (null) {
      memset(d, 0, (size_t)w);
      continue;
    }
    switch (st->types[c]) {
      case LM_TYPE_BINARY:
      case LM_TYPE_STRING: {
        lm_str x = lm_state_get_bytes(r);
        if (x.len > 0) {
          char* p = lm_pool_copy(&st->strings, x.ptr, (size_t)x.len);
          if (p == NULL) return LAMINAR_ERR_NOMEM;
          x.ptr = p;
          st->str_live += x.len;
        }
        memcpy(d, &x, sizeof x);
        break;
      }
      case LM_TYPE_DOUBLE: {
        double v = lm_state_get_f64(r);
        memcpy(d, &v, 8);
        break;
      }
      case LM_TYPE_NULL: *(uint8_t*)d = (uint8_t)lm_state_get_i64(r); break;
      default:
        if (lm_type_is_wide(st->types[c])) {
          uint64_t lo = (uint64_t)lm_state_get_i64(r), hi = (uint64_t)lm_state_get_i64(r);
          lm_vec_dec_put(st->types[c], d, 0, (lm_i128)(((lm_u128)hi << 64) | lo));
          break;
        }
        lm_vec_int_put(st->types[c], d, 0, lm_state_get_i64(r));
        break;
    }
  }
  return r->failed ? LAMINAR_ERR_RECOVERY : LAMINAR_OK;
}

void lm_timelist_remove(lm_timelist* kr, int64_t t, uint32_t slot) {
  int32_t end = lm_timelist_upper(kr, t);
  for (int32_t i = lm_timelist_lower(kr, t); i < end; i++) {
    if (kr->slot[i] != slot) continue;
    memmove(kr->ts + i, kr->ts + i + 1, sizeof *kr->ts * (size_t)(kr->n - i - 1));
    memmove(kr->slot + i, kr->slot + i + 1, sizeof *kr->slot * (size_t)(kr->n - i - 1));
    kr->n--;
    if (kr->head == kr->n) kr->head = kr->n = 0;
    return;
  }
}

void lm_timelist_free(lm_timelist* kr) {
  lm_free(kr->ts);
  lm_free(kr->slot);
  memset(kr, 0, sizeof *kr);
}
