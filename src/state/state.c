/*
 * state.c -- snapshot encoding: little-endian fixed-width values and
 * length-prefixed byte strings.
 */
#include "state/state.h"

#include "util/util.h"

#include <string.h>

void lm_state_writer_init(lm_state_writer* w) { *w = (lm_state_writer){0}; }

void lm_state_writer_free(lm_state_writer* w) {
  lm_free(w->data);
  *w = (lm_state_writer){0};
}

/* Room for n more bytes; false (and failed) when the allocation fails. */
static bool grow(lm_state_writer* w, size_t n) {
  if (w->failed) return false;
  if (w->len + n > w->cap) {
    size_t cap = w->cap ? w->cap : 256;
    while (cap < w->len + n) cap *= 2;
    uint8_t* grown = lm_realloc(w->data, cap);
    if (grown == NULL) {
      w->failed = true;
      return false;
    }
    w->data = grown;
    w->cap = cap;
  }
  return true;
}

static void put(lm_state_writer* w, const void* p, size_t n) {
  if (!grow(w, n)) return;
  if (n) memcpy(w->data + w->len, p, n);
  w->len += n;
}

/* The engine runs on little-endian hosts (x86-64, aarch64); the static check
 * keeps a big-endian port from silently writing another format. */
_Static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "snapshot format is little-endian");

void lm_state_put_u8(lm_state_writer* w, uint8_t v) { put(w, &v, 1); }
void lm_state_put_u32(lm_state_writer* w, uint32_t v) { put(w, &v, 4); }
void lm_state_put_i64(lm_state_writer* w, int64_t v) { put(w, &v, 8); }
void lm_state_put_f64(lm_state_writer* w, double v) { put(w, &v, 8); }

void lm_state_put_bytes(lm_state_writer* w, const void* p, size_t n) {
  if (n > UINT32_MAX) {
    w->failed = true;
    return;
  }
  lm_state_put_u32(w, (uint32_t)n);
  put(w, p, n);
}

void lm_state_put_raw(lm_state_writer* w, const void* p, size_t n) { put(w, p, n); }

uint8_t* lm_state_reserve(lm_state_writer* w, size_t n) {
  if (!grow(w, n)) return NULL;
  uint8_t* p = w->data + w->len;
  w->len += n;
  return p;
}

laminar_code lm_state_writer_status(const lm_state_writer* w) {
  return w->failed ? LAMINAR_ERR_NOMEM : LAMINAR_OK;
}

void lm_state_reader_init(lm_state_reader* r, const void* data, size_t len) {
  *r = (lm_state_reader){data, len, 0, false};
}

static bool get(lm_state_reader* r, void* out, size_t n) {
  if (r->failed || r->len - r->pos < n) {
    r->failed = true;
    memset(out, 0, n);
    return false;
  }
  memcpy(out, r->data + r->pos, n);
  r->pos += n;
  return true;
}

uint8_t lm_state_get_u8(lm_state_reader* r) {
  uint8_t v;
  get(r, &v, 1);
  return v;
}
uint32_t lm_state_get_u32(lm_state_reader* r) {
  uint32_t v;
  get(r, &v, 4);
  return v;
}
int64_t lm_state_get_i64(lm_state_reader* r) {
  int64_t v;
  get(r, &v, 8);
  return v;
}
double lm_state_get_f64(lm_state_reader* r) {
  double v;
  get(r, &v, 8);
  return v;
}

lm_str lm_state_get_bytes(lm_state_reader* r) {
  uint32_t n = lm_state_get_u32(r);
  if (r->failed || r->len - r->pos < n) {
    r->failed = true;
    return (lm_str){NULL, 0};
  }
  lm_str s = {(const char*)r->data + r->pos, (int64_t)n};
  r->pos += n;
  return s;
}

const void* lm_state_get_raw(lm_state_reader* r, size_t n) {
  if (r->failed || r->len - r->pos < n) {
    r->failed = true;
    return NULL;
  }
  const void* p = r->data + r->pos;
  r->pos += n;
  return p;
}

laminar_code lm_state_reader_status(const lm_state_reader* r, const char* what,
                                    laminar_error* err) {
  if (!r->failed) return LAMINAR_OK;
  return lm_error_set(err, LAMINAR_ERR_IO, "corrupt state for %s at byte %zu of %zu", what,
                      r->pos, r->len);
}
