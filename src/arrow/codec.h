/*
 * codec.h -- a batch as bytes, for the WAL (DESIGN §3 step 2): what a source
 * accepted, in the engine's own column form (after import: null bytes,
 * microsecond timestamps, dictionary columns resolved to strings), so that
 * replay after a crash feeds the operators exactly the values they saw.
 *
 * Layout (lm_state encoding): ncols u32, nrows i64, then per column its type
 * u8, a has-nulls u8, the null bytes when it has nulls, and the values:
 * fixed-width types as their bytes, strings as nrows + 1 offsets (u32: a
 * batch's strings stay under 4 GiB; the WAL bounds a record at 1 GiB) and the
 * concatenated UTF-8.
 */
#ifndef LM_ARROW_CODEC_H
#define LM_ARROW_CODEC_H

#include "arrow/arrow.h"
#include "state/state.h"

/* Bytes the encoding of `batch` takes. */
size_t lm_batch_encoded_size(const lm_batch* batch);

/* Write the encoding into dst (lm_batch_encoded_size bytes). */
void lm_batch_encode_to(const lm_batch* batch, uint8_t* dst);

/* Append the encoding of `batch` to w (check lm_state_writer_status). */
void lm_batch_encode(const lm_batch* batch, lm_state_writer* w);

/* Rebuild a batch of `schema` from an encoding. The reader may be at any
 * offset. LAMINAR_ERR_IO when the bytes are truncated, inconsistent or of
 * another schema (column count or types); LAMINAR_ERR_NOMEM. *out holds one
 * reference on success, NULL otherwise. */
laminar_code lm_batch_decode(const lm_schema* schema, lm_state_reader* r, lm_batch** out,
                             laminar_error* err);

#endif /* LM_ARROW_CODEC_H */
