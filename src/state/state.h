/*
 * state.h -- the byte encoding every stateful operator uses for snapshot and
 * restore (DESIGN §4): a growable little-endian writer and a bounds-checked
 * reader. A reader never trusts its input: a truncated or corrupt snapshot
 * gives LAMINAR_ERR_IO ("corrupt state"), never a read past the end.
 */
#ifndef LM_STATE_H
#define LM_STATE_H

#include "laminar.h"
#include "util/types.h"

#include <stddef.h>
#include <stdint.h>

typedef struct lm_state_writer {
  uint8_t* data;
  size_t len;
  size_t cap;
  bool failed;   /* an allocation failed: the content is incomplete */
} lm_state_writer;

typedef struct lm_state_reader {
  const uint8_t* data;
  size_t len;
  size_t pos;
  bool failed;   /* a read ran past the end or found a bad value */
} lm_state_reader;

void lm_state_writer_init(lm_state_writer* w);
void lm_state_writer_free(lm_state_writer* w);
void lm_state_put_u8(lm_state_writer* w, uint8_t v);
void lm_state_put_u32(lm_state_writer* w, uint32_t v);
void lm_state_put_i64(lm_state_writer* w, int64_t v);
void lm_state_put_f64(lm_state_writer* w, double v);
void lm_state_put_bytes(lm_state_writer* w, const void* p, size_t n); /* u32 len + bytes */
void lm_state_put_raw(lm_state_writer* w, const void* p, size_t n);   /* bytes, no length */
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

#endif /* LM_STATE_H */
