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

/* ---- the compact form (codec_compact.c) -------------------------------------------
 *
 * The WAL's form for source batches since issue 6 (record type 3): about a
 * third of the bytes of the form above on W1's batches, chosen per batch and
 * column from one analysis pass (min/max), no hashing, no per-row branches.
 * Little-endian, byte-aligned (the decoder copies into aligned memory):
 *
 *   u8 version (1) | u32 ncols | u32 nrows (<= LM_BATCH_COMPACT_MAX_ROWS)
 *   per column: u8 type | u8 flags (bit 0: a null bitmap follows) | u8 kind |
 *               u8 width (bytes a packed value takes: 0, 1, 2, 4 or 8)
 *     [null bitmap: ceil(nrows / 8) bytes, bit r % 8 of byte r / 8 set = row r NULL;
 *      present only when some row is NULL]
 *     kind RAW (0):   nrows * the type's width bytes, as in memory (DOUBLE; any type)
 *     kind FOR (1):   i64 base, nrows packed u<width> offsets: value = base + offset
 *     kind DELTA (2): i64 first value, i64 smallest step, (nrows - 1) packed
 *                     u<width> offsets: value[r] = value[r-1] + smallest step + offset
 *     kind STR (3):   u64 total bytes, i64 base length, nrows packed u<width>
 *                     length offsets (length = base + offset), then the bytes
 * FOR and DELTA (integer types: BOOL, INT32, INT64, TIMESTAMP) compute in
 * 64-bit two's complement modulo 2^64, so any steps (even ones that overflow
 * int64) come back exactly; the encoder picks the smaller of the two, width 0
 * when all offsets are 0 (W1's ts, +1 each row, costs nothing a row). Values
 * of NULL rows are kept as they were, like the form above. */

/* Batches with more rows are logged in the form above (bounds what a corrupt
 * row count can make the decoder allocate). */
#define LM_BATCH_COMPACT_MAX_ROWS (1 << 22)

/* What the analysis chose for one column (filled by lm_batch_plan_compact). */
typedef struct lm_col_plan {
  uint8_t kind;    /* RAW, FOR, DELTA, STR (see above) */
  uint8_t width;   /* bytes a packed value takes */
  bool nulls;      /* write a null bitmap */
  bool contiguous; /* STR: the strings lie back to back in memory (one copy) */
  int64_t base;    /* FOR: the base; DELTA: the first value; STR: the base length */
  int64_t step;    /* DELTA: the smallest step */
  uint64_t total;  /* STR: bytes of all strings */
} lm_col_plan;

/* The analysis of one batch: its encoded size, and per column the choice.
 * Lives where lm_batch_plan_compact put it (cols may point into it): not to
 * be copied. */
typedef struct lm_batch_plan {
  const lm_batch* batch; /* borrowed: must outlive the plan */
  size_t size;           /* bytes lm_batch_encode_compact writes */
  lm_col_plan* cols;     /* `small` for up to 8 columns, else allocated */
  lm_col_plan small[8];
} lm_batch_plan;

/* Analyse `batch` for the compact form (one pass over each column). False,
 * with nothing to free, when the batch is over LM_BATCH_COMPACT_MAX_ROWS rows
 * or the plan's memory cannot be had: log the form above then. Any thread;
 * the batch is only read. */
bool lm_batch_plan_compact(const lm_batch* batch, lm_batch_plan* out);

/* Write the compact form (plan->size bytes, any alignment) into dst. */
void lm_batch_encode_compact(const lm_batch_plan* plan, uint8_t* dst);

/* Free what the plan holds (not the batch). */
void lm_batch_plan_free(lm_batch_plan* plan);

/* Rebuild a batch of `schema` from the compact form, as lm_batch_decode does
 * from the form above: every count, width, kind, length and total is checked
 * against the schema and the bytes present, so corrupt input gives
 * LAMINAR_ERR_IO ("logged batch (compact): ... at byte ...") and never a
 * read or write out of bounds; LAMINAR_ERR_NOMEM. *out holds one reference on
 * success, NULL otherwise. */
laminar_code lm_batch_decode_compact(const lm_schema* schema, lm_state_reader* r,
                                     lm_batch** out, laminar_error* err);

#endif /* LM_ARROW_CODEC_H */
