/*
 * state.h -- the byte encoding every stateful operator uses for snapshot and
 * restore (DESIGN §4): a growable little-endian writer and a bounds-checked
 * reader. A reader never trusts its input: a truncated or corrupt snapshot
 * gives LAMINAR_ERR_IO ("corrupt state"), never a read past the end. Also the
 * bound on keyed state (lm_state_budget: a stream's max_state_bytes charged
 * against the database's).
 */
#ifndef LM_STATE_H
#define LM_STATE_H

#include "laminar.h"
#include "util/types.h"

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

typedef struct lm_state_writer {
  uint8_t* data;
  size_t len;
  size_t cap;
  bool failed; /* an allocation failed: the content is incomplete */
} lm_state_writer;

typedef struct lm_state_reader {
  const uint8_t* data;
  size_t len;
  size_t pos;
  bool failed; /* a read ran past the end or found a bad value */
} lm_state_reader;

void lm_state_writer_init(lm_state_writer* w);
void lm_state_writer_free(lm_state_writer* w);
void lm_state_put_u8(lm_state_writer* w, uint8_t v);
void lm_state_put_u32(lm_state_writer* w, uint32_t v);
void lm_state_put_i64(lm_state_writer* w, int64_t v);
void lm_state_put_f64(lm_state_writer* w, double v);
void lm_state_put_bytes(lm_state_writer* w, const void* p,
                        size_t n);                                  /* u32 len + bytes */
void lm_state_put_raw(lm_state_writer* w, const void* p, size_t n); /* bytes, no length */
/* Append n bytes to be written by the caller; NULL (and failed) on OOM. */
uint8_t* lm_state_reserve(lm_state_writer* w, size_t n);
/* LAMINAR_OK, or LAMINAR_ERR_NOMEM when any put failed. */
laminar_code lm_state_writer_status(const lm_state_writer* w);

void lm_state_reader_init(lm_state_reader* r, const void* data, size_t len);
uint8_t lm_state_get_u8(lm_state_reader* r);
uint32_t lm_state_get_u32(lm_state_reader* r);
int64_t lm_state_get_i64(lm_state_reader* r);
double lm_state_get_f64(lm_state_reader* r);
/* Borrowed view into the reader's data (valid as long as the data). */
lm_str lm_state_get_bytes(lm_state_reader* r);
/* Borrowed view of the next n bytes (no length prefix); NULL when fewer remain. */
const void* lm_state_get_raw(lm_state_reader* r, size_t n);
/* LAMINAR_OK, or LAMINAR_ERR_IO (message names `what`) when a read failed. */
laminar_code lm_state_reader_status(const lm_state_reader* r, const char* what,
                                    laminar_error* err);

/* ---- the bound on keyed state (max_state_bytes, issue 20) ---------------------- */

/* What a stream's keyed state (window groups, sessions, hop panes, view rows)
 * may hold, in bytes as the operators account it (lm_op: group counts times
 * their per-group size, plus key and value strings), and what it holds now.
 * One per stream (every partition's chain charges it) with the database's as
 * parent; one per database. Operators charge growth before they commit it and
 * release what they free; a refused charge changes nothing. */
typedef struct lm_state_budget {
  const char* name;               /* the stream's (borrowed); NULL for the database's */
  int64_t limit;                  /* bytes; 0: no bound of its own */
  atomic_int_fast64_t used;       /* writer: any partition's reactor (atomic RMW) */
  struct lm_state_budget* parent; /* the database's, or NULL */
  /* The failure of the last refused charge or failed update, for the error
   * the caller reports (lm_state_budget_error): written by the failing
   * reactor while `failed` is 1 (claimed by a 0 -> 1 CAS), read by the
   * thread that reports the error after the reactors stopped or merged. */
  atomic_int failed;
  laminar_code fail_code;
  char message[320];
} lm_state_budget;

void lm_state_budget_init(lm_state_budget* b, const char* name, int64_t limit,
                          lm_state_budget* parent);
/* Charge `bytes` (>= 0) to b and its parent. LAMINAR_ERR_MEMORY_LIMIT when
 * either would pass its limit: nothing is charged and b records the message
 * (naming the stream, the bound and the use). NULL b: LAMINAR_OK. */
laminar_code lm_state_charge(lm_state_budget* b, int64_t bytes);
/* Give back `bytes` charged before. NULL b: no-op. */
void lm_state_release(lm_state_budget* b, int64_t bytes);
/* Record a failure of b's stream (printf-style text after "stream 'name': ")
 * for the caller's error, unless one is recorded already. Returns `code`. */
laminar_code lm_state_budget_fail(lm_state_budget* b, laminar_code code, const char* fmt,
                                  ...) __attribute__((format(printf, 3, 4)));
/* If b recorded a failure with `code`, copy it into err (code, message, the
 * stream as object), forget it and return true. */
bool lm_state_budget_error(lm_state_budget* b, laminar_code code, laminar_error* err);

#endif /* LM_STATE_H */
