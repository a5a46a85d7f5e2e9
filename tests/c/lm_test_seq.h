/*
 * lm_test_seq.h -- the producers' rows of the runtime tests (test_rt_mpsc.c,
 * test_rt_cores.c): int64 columns p (the producer), seq (its sequence number)
 * and optionally k = seq % nk (a key), built with nanoarrow, plus a monotonic
 * millisecond clock for their deadlines.
 */
#ifndef LM_TEST_SEQ_H
#define LM_TEST_SEQ_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* clock_gettime */
/* Up to `max` batches (max <= 4) of at most batch_rows rows each, rows *seq ..
 * end - 1 in order (lm_test_seq_batch), for one push or push_batch; *seq
 * advances past them and counts[i] holds batch i's rows. Returns how many
 * were built, or -1 (nothing left allocated) when building failed. */
static inline int lm_test_seq_batches(const struct ArrowSchema* schema, int64_t p,
                                      int64_t* seq, int64_t end, int64_t batch_rows,
                                      int max, int64_t nk, struct ArrowArray* arr,
                                      int64_t* counts) {
  int n = 0;
  for (; n < max && *seq < end; n++) {
    counts[n] = end - *seq < batch_rows ? end - *seq : batch_rows;
    if (lm_test_seq_batch(schema, p, *seq, counts[n], nk, &arr[n]) != 0) {
      for (int i = 0; i < n; i++) arr[i].release(&arr[i]);
      return -1;
    }
    *seq += counts[n];
  }
  return n;
}

#endif

#include <stdint.h>
#include <time.h>

#include "nanoarrow/nanoarrow.h"

static inline int64_t lm_test_now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* struct<p int64, seq int64> (ncols 2) or struct<p, seq, k int64> (ncols 3).
 * 0 on success. */
static inline int lm_test_seq_schema(struct ArrowSchema* out, int ncols) {
  static const char* names[] = {"p", "seq", "k"};
  ArrowSchemaInit(out);
  if (ArrowSchemaSetTypeStruct(out, ncols) != NANOARROW_OK) return 1;
  for (int i = 0; i < ncols; i++) {
    if (ArrowSchemaSetType(out->children[i], NANOARROW_TYPE_INT64) != NANOARROW_OK)
      return 1;
    if (ArrowSchemaSetName(out->children[i], names[i]) != NANOARROW_OK) return 1;
  }
  return 0;
}

/* n rows (p, first + i[, (first + i) % nk]) of a lm_test_seq_schema schema
 * (its column count decides whether k is there). 0 on success. */
static inline int lm_test_seq_batch(const struct ArrowSchema* schema, int64_t p,
                                    int64_t first, int64_t n, int64_t nk,
                                    struct ArrowArray* out) {
  struct ArrowError error;
  if (ArrowArrayInitFromSchema(out, schema, &error) != NANOARROW_OK) return 1;
  if (ArrowArrayStartAppending(out) != NANOARROW_OK) goto fail;
  for (int64_t c = 0; c < schema->n_children; c++) {
    struct ArrowBuffer* buf = ArrowArrayBuffer(out->children[c], 1);
    if (ArrowBufferReserve(buf, n * (int64_t)sizeof(int64_t)) != NANOARROW_OK) goto fail;
    for (int64_t i = 0; i < n; i++) {
      int64_t v = c == 0 ? p : c == 1 ? first + i : (first + i) % nk;
      ArrowBufferAppendUnsafe(buf, &v, sizeof v);
    }
    out->children[c]->length = n;
    out->children[c]->null_count = 0;
  }
  out->length = n;
  out->null_count = 0;
  if (ArrowArrayFinishBuildingDefault(out, &error) != NANOARROW_OK) goto fail;
  return 0;
fail:
  out->release(out);
  return 1;
}

/* Up to `max` batches (max <= 4) of at most batch_rows rows each, rows *seq ..
 * end - 1 in order (lm_test_seq_batch), for one push or push_batch; *seq
 * advances past them and counts[i] holds batch i's rows. Returns how many
 * were built, or -1 (nothing left allocated) when building failed. */
static inline int lm_test_seq_batches(const struct ArrowSchema* schema, int64_t p,
                                      int64_t* seq, int64_t end, int64_t batch_rows,
                                      int max, int64_t nk, struct ArrowArray* arr,
                                      int64_t* counts) {
  int n = 0;
  for (; n < max && *seq < end; n++) {
    counts[n] = end - *seq < batch_rows ? end - *seq : batch_rows;
    if (lm_test_seq_batch(schema, p, *seq, counts[n], nk, &arr[n]) != 0) {
      for (int i = 0; i < n; i++) arr[i].release(&arr[i]);
      return -1;
    }
    *seq += counts[n];
  }
  return n;
}

#endif
