/*
 * codec.c -- batch encoding for the WAL (see codec.h).
 */
#include "arrow/codec.h"

#include <string.h>

#include "util/util.h"

size_t lm_batch_encoded_size(const lm_batch* batch) {
  size_t n = (size_t)batch->nrows, size = 4 + 8;
  for (int32_t c = 0; c < batch->ncols; c++) {
    const lm_vec* v = &batch->cols[c];
    size += 2 + (v->nulls != NULL ? n : 0);
    if (!lm_type_is_bytes(v->type)) {
      size += n * (size_t)lm_type_width(v->type);
      continue;
    }
    size += (n + 1) * 4;
    const lm_str* s = v->data;
    for (size_t i = 0; i < n; i++) size += (size_t)s[i].len;
  }
  return size;
}

/* The lm_state encoding (host order = little-endian, state.c checks it). */
void lm_batch_encode_to(const lm_batch* batch, uint8_t* dst) {
  int64_t n = batch->nrows;
  uint32_t ncols = (uint32_t)batch->ncols;
  memcpy(dst, &ncols, 4);
  memcpy(dst + 4, &n, 8);
  dst += 12;
  for (int32_t c = 0; c < batch->ncols; c++) {
    const lm_vec* v = &batch->cols[c];
    *dst++ = (uint8_t)lm_type_kind(v->type); /* a DECIMAL's p, s: in the schema */
    *dst++ = v->nulls != NULL;
    if (v->nulls != NULL) {
      memcpy(dst, v->nulls, (size_t)n);
      dst += n;
    }
    if (!lm_type_is_bytes(v->type)) {
      size_t bytes = (size_t)(n * lm_type_width(v->type));
      if (bytes > 0) memcpy(dst, v->data, bytes);
      dst += bytes;
      continue;
    }
    const lm_str* s = v->data;
    uint32_t total = 0; /* < 4 GiB: callers bound a record (the WAL's limit is 1 GiB) */
    memcpy(dst, &total, 4);
    for (int64_t i = 0; i < n; i++) {
      total += (uint32_t)s[i].len;
      memcpy(dst + 4 * (i + 1), &total, 4);
    }
    dst += 4 * (n + 1);
    for (int64_t i = 0; i < n; i++) {
      if (s[i].len > 0) memcpy(dst, s[i].ptr, (size_t)s[i].len);
      dst += s[i].len;
    }
  }
}

void lm_batch_encode(const lm_batch* batch, lm_state_writer* w) {
  size_t size = lm_batch_encoded_size(batch);
  uint8_t* dst = lm_state_reserve(w, size);
  if (dst != NULL) lm_batch_encode_to(batch, dst);
}

static laminar_code corrupt(laminar_error* err, const lm_state_reader* r,
                            const char* what) {
  return lm_error_set(err, LAMINAR_ERR_IO, "logged batch: %s at byte %zu of %zu", what,
                      r->pos, r->len);
}

laminar_code lm_batch_decode(const lm_schema* schema, lm_state_reader* r, lm_batch** out,
                             laminar_error* err) {
  *out = NULL;
  uint32_t ncols = lm_state_get_u32(r);
  int64_t n = lm_state_get_i64(r);
  if (r->failed) return corrupt(err, r, "truncated header");
  if (ncols != (uint32_t)schema->ncols) return corrupt(err, r, "column count differs");
  if (n < 0 || (uint64_t)n > r->len) return corrupt(err, r, "bad row count");
  lm_vec* cols = lm_calloc(ncols > 0 ? ncols : 1, sizeof *cols);
  void** owned = lm_calloc(ncols > 0 ? ncols : 1, sizeof *owned);
  laminar_code rc = LAMINAR_OK;
  if (cols == NULL || owned == NULL)
    rc = lm_error_set(err, LAMINAR_ERR_NOMEM, "out of memory");
  for (uint32_t c = 0; c < ncols && rc == LAMINAR_OK; c++) {
    uint8_t kind = lm_state_get_u8(r);
    uint8_t has_nulls = lm_state_get_u8(r);
    lm_type type = schema->fields[c].type;
    if (r->failed || kind != (uint8_t)lm_type_kind(type) || has_nulls > 1) {
      rc = corrupt(err, r, "column type differs");
      break;
    }
    lm_vec* v = &cols[c];
    *v = (lm_vec){.type = type, .len = n};
    if (has_nulls) v->nulls = lm_state_get_raw(r, (size_t)n);
    int64_t width = lm_type_width(type);
    /* Values are copied to aligned memory: the log's bytes carry no alignment. */
    size_t bytes = (size_t)(n * width);
    owned[c] = lm_malloc(bytes > 0 ? bytes : 1);
    if (owned[c] == NULL) {
      rc = lm_error_set(err, LAMINAR_ERR_NOMEM, "out of memory");
      break;
    }
    v->data = owned[c];
    if (!lm_type_is_bytes(type)) {
      const void* p = lm_state_get_raw(r, bytes);
      if (p == NULL) {
        rc = corrupt(err, r, "truncated values");
        break;
      }
      memcpy(owned[c], p, bytes);
      continue;
    }
    const uint8_t* offs = lm_state_get_raw(r, (size_t)(n + 1) * 4);
    if (offs == NULL) {
      rc = corrupt(err, r, "truncated string offsets");
      break;
    }
    uint32_t prev, last;
    memcpy(&prev, offs, 4);
    memcpy(&last, offs + 4 * n, 4);
    const char* chars = prev == 0 ? lm_state_get_raw(r, (size_t)last) : NULL;
    if (chars == NULL) {
      rc = corrupt(err, r, "bad string data");
      break;
    }
    lm_str* s = owned[c];
    for (int64_t i = 0; i < n; i++) {
      uint32_t next;
      memcpy(&next, offs + 4 * (i + 1), 4);
      if (next < prev || next > last) {
        rc = corrupt(err, r, "string offsets out of order");
        break;
      }
      s[i] = (lm_str){chars + prev, (int64_t)(next - prev)};
      prev = next;
    }
  }
  if (rc == LAMINAR_OK && r->failed) rc = corrupt(err, r, "truncated");
  if (rc == LAMINAR_OK && lm_arrow_build(schema, cols, n, out) != LAMINAR_OK)
    rc = lm_error_set(err, LAMINAR_ERR_NOMEM, "out of memory");
  for (uint32_t c = 0; owned != NULL && c < ncols; c++) lm_free(owned[c]);
  lm_free(owned);
  lm_free(cols);
  return rc;
}
