/*
 * state.c -- snapshot encoding: little-endian fixed-width values and
 * length-prefixed byte strings; and the bound on keyed state (lm_state_budget).
 */
#include "state/state.h"

#include "util/util.h"

#include <stdarg.h>
#include <stdio.h>
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
_Static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
               "snapshot format is little-endian");

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
  return lm_error_set(err, LAMINAR_ERR_IO, "corrupt state for %s at byte %zu of %zu",
                      what, r->pos, r->len);
}

/* ---- the bound on keyed state ------------------------------------------------- */

void lm_state_budget_init(lm_state_budget* b, const char* name, int64_t limit,
                          lm_state_budget* parent) {
  b->name = name;
  b->limit = limit;
  atomic_init(&b->used, 0);
  b->parent = parent;
  atomic_init(&b->failed, 0);
  b->fail_code = LAMINAR_OK;
  b->message[0] = '\0';
}

/* Add bytes to one budget unless that passes its limit; *out_used: the use
 * seen (before the add). */
static bool charge_one(lm_state_budget* b, int64_t bytes, int64_t* out_used) {
  int64_t was = atomic_fetch_add_explicit(&b->used, bytes, memory_order_relaxed);
  *out_used = was;
  if (b->limit > 0 && was + bytes > b->limit) {
    atomic_fetch_sub_explicit(&b->used, bytes, memory_order_relaxed);
    return false;
  }
  return true;
}

laminar_code lm_state_charge(lm_state_budget* b, int64_t bytes) {
  if (b == NULL || bytes <= 0) return LAMINAR_OK;
  int64_t used;
  if (!charge_one(b, bytes, &used)) {
    return lm_state_budget_fail(
        b, LAMINAR_ERR_MEMORY_LIMIT,
        "keyed state would grow by %lld bytes past max_state_bytes "
        "%lld (in use: %lld bytes); the batch was not applied",
        (long long)bytes, (long long)b->limit, (long long)used);
  }
  if (b->parent != NULL && !charge_one(b->parent, bytes, &used)) {
    atomic_fetch_sub_explicit(&b->used, bytes, memory_order_relaxed);
    return lm_state_budget_fail(
        b, LAMINAR_ERR_MEMORY_LIMIT,
        "keyed state would grow by %lld bytes past the database's "
        "max_state_bytes %lld (in use by all streams: %lld bytes); "
        "the batch was not applied",
        (long long)bytes, (long long)b->parent->limit, (long long)used);
  }
  return LAMINAR_OK;
}

void lm_state_release(lm_state_budget* b, int64_t bytes) {
  if (b == NULL || bytes <= 0) return;
  atomic_fetch_sub_explicit(&b->used, bytes, memory_order_relaxed);
  if (b->parent != NULL)
    atomic_fetch_sub_explicit(&b->parent->used, bytes, memory_order_relaxed);
}

laminar_code lm_state_budget_fail(lm_state_budget* b, laminar_code code, const char* fmt,
                                  ...) {
  if (b == NULL) return code;
  int expected = 0;
  if (!atomic_compare_exchange_strong_explicit(
          &b->failed, &expected, 1, memory_order_acq_rel, memory_order_relaxed)) {
    return code;
  }
  int at =
      snprintf(b->message, sizeof b->message, "stream '%s': ", b->name ? b->name : "?");
  va_list ap;
  va_start(ap, fmt);
  if (at > 0 && (size_t)at < sizeof b->message) {
    vsnprintf(b->message + at, sizeof b->message - (size_t)at, fmt, ap);
  }
  va_end(ap);
  b->fail_code = code;
  atomic_store_explicit(&b->failed, 2, memory_order_release);
  return code;
}

bool lm_state_budget_error(lm_state_budget* b, laminar_code code, laminar_error* err) {
  if (b == NULL || atomic_load_explicit(&b->failed, memory_order_acquire) != 2)
    return false;
  if (b->fail_code != code) return false;
  lm_error_set(err, code, "%s", b->message);
  lm_error_object(err, b->name, NULL);
  atomic_store_explicit(&b->failed, 0, memory_order_release);
  return true;
}
