/*
 * arrow.h -- the core's Arrow layer (on nanoarrow's C library): import and
 * validate pushed arrays, expose them as lm_vec columns, build result arrays,
 * and export them to consumers with correct release callbacks.
 *
 * The unit is the refcounted `lm_batch`: an Arrow struct array owned by the core
 * plus one lm_vec view per column. Fixed-width columns are viewed zero-copy; the
 * few conversions the engine needs (validity bitmap -> null bytes, boolean
 * bitmap -> bytes, string offsets -> lm_str views into the producer's bytes,
 * dictionary lookups, non-microsecond timestamps -> microseconds) are computed
 * once at import into memory the batch owns. The producer's buffers stay alive,
 * untouched, until the last reference to the batch (and to an lm_arrow_kept
 * sharing its array) is dropped.
 *
 * Threads: a batch is immutable after creation; lm_batch_ref/unref and the
 * release callbacks of exported arrays may run on any thread (atomic refcount).
 */
#ifndef LM_ARROW_H
#define LM_ARROW_H

#include "laminar.h"
#include "util/types.h"

#include <stdatomic.h>

typedef struct lm_batch {
  atomic_int_fast64_t refs; /* writer: any ref holder; acq_rel on unref */
  int64_t nrows;
  int32_t ncols;
  lm_vec* cols;            /* ncols views, each of length nrows */
  struct ArrowArray array; /* the owned struct array (moved in or built) */
  void* owned;             /* conversion memory owned by the batch */
  /* What the batch holds, in bytes, for queue bounds (max_queue_bytes): per
   * column its values (lm_type_width each), a null byte per row where it has
   * NULLs, and a string column's bytes. Set at creation, read-only after. */
  int64_t bytes;
} lm_batch;

/* Import one pushed batch for a source whose columns are `source_schema`.
 * Checks, in order, each failure returning without side effects (the caller's
 * array untouched, still the caller's):
 *  - array/schema released                    -> LAMINAR_ERR_ARROW_RELEASED
 *  - schema not a struct ("+s"), unparseable  -> LAMINAR_ERR_ARROW_INVALID
 *  - a source column missing / an unknown extra column (matched by name,
 *    case-insensitive, any order)             -> LAMINAR_ERR_SCHEMA_MISMATCH
 *  - a column's Arrow type does not fit its SQL type -> LAMINAR_ERR_COLUMN_TYPE
 *      BOOL<-"b"; INT32<-"i"; INT64<-"l"; DOUBLE<-"g"; STRING<-"u","U", or
 *      dictionary with int32 indices over "u"/"U"; TIMESTAMP<-"tss:","tsm:",
 *      "tsu:","tsn:" (any timezone string accepted, values taken as UTC)
 *  - schema metadata malformed (a negative count or length, or more than
 *    64 MiB in all)                          -> LAMINAR_ERR_ARROW_INVALID
 *  - the array fails nanoarrow full validation (buffer count/sizes, offsets
 *    monotone and in bounds, null_count, UTF-8, dictionary indices in range),
 *    a buffer's implied byte size overflows int64 or wraps the address space,
 *    a long implied slice is not mapped memory, or top-level struct nulls
 *                                            -> LAMINAR_ERR_ARROW_INVALID
 *  - a NULL in a NOT NULL column             -> LAMINAR_ERR_NULL_VIOLATION
 * Errors name `source_name` and the column (err->object, err->column_name), e.g.
 * "LDB-3004: source 'trades': column 'price' expects DOUBLE, got utf8".
 * On LAMINAR_OK: *array has been moved into the batch (array->release == NULL),
 * *out holds one reference, its columns are in source_schema order.
 * Also: a NULL argument -> LAMINAR_ERR_MISUSE; misaligned fixed-width, offset or
 * index buffers -> LAMINAR_ERR_ARROW_INVALID; a s/ms timestamp that overflows
 * microseconds -> LAMINAR_ERR_COLUMN_TYPE. A non-zero offset of the struct
 * array is honoured (added to each column's own offset, as Arrow specifies);
 * null_count -1 ("unknown") is accepted and computed. On failure *out is NULL. */
laminar_code lm_arrow_import(const lm_schema* source_schema, const char* source_name,
                             struct ArrowArray* array, const struct ArrowSchema* schema,
                             lm_batch** out, laminar_error* err);

/* A pushed array kept for a second look: the async WAL's writer makes a
 * source batch's log record after the engine let go of it (DURABILITY "Batch
 * records"). It keeps the producer's array, not the batch's views, which are
 * most of a batch's memory and which the engine's next import then reuses
 * while they are in cache. */
typedef struct lm_arrow_kept lm_arrow_kept;

/* lm_arrow_import, and when it succeeds also *kept: what it takes to view the
 * same array again (NULL on failure). The array stays the batch's until
 * lm_arrow_kept_share. */
laminar_code lm_arrow_import_kept(const lm_schema* source_schema, const char* source_name,
                                  struct ArrowArray* array,
                                  const struct ArrowSchema* schema, lm_batch** out,
                                  lm_arrow_kept** kept, laminar_error* err);

/* Share `batch`'s array (the one `kept` was imported with) between the batch
 * and `kept`: the producer's release runs once both let go. Once per kept. */
void lm_arrow_kept_share(lm_arrow_kept* kept, lm_batch* batch);

/* Undo lm_arrow_kept_share while nothing but `batch` and `kept` holds the
 * array (no view of it was made): the batch owns the producer's array again,
 * as imported, and `kept` is as before the share. */
void lm_arrow_kept_unshare(lm_arrow_kept* kept, lm_batch* batch);

/* A new batch (one reference) with views of its own of the kept array: the
 * same values as the imported batch's, also after that batch is gone. Needs
 * lm_arrow_kept_share first. Thread-safe against the batch's users.
 * LAMINAR_ERR_NOMEM. */
laminar_code lm_arrow_kept_view(lm_arrow_kept* kept, lm_batch** out, laminar_error* err);

/* Let go of `kept` (NULL: no-op). */
void lm_arrow_kept_free(lm_arrow_kept* kept);

/* Build a batch from computed columns: copies `nrows` values of each cols[i]
 * (types as in `schema`, dense, nulls honoured) into new nanoarrow buffers.
 * *out holds one reference. Returns LAMINAR_OK or LAMINAR_ERR_NOMEM. */
laminar_code lm_arrow_build(const lm_schema* schema, const lm_vec* cols, int64_t nrows,
                            lm_batch** out);

/* Reference counting. unref of the last reference releases the array and frees
 * the batch. unref(NULL) is a no-op. */
void lm_batch_ref(lm_batch* batch);
void lm_batch_unref(lm_batch* batch);

/* Export a batch to a consumer as a struct ArrowArray sharing the batch's
 * buffers (no copy): takes one reference, dropped by out->release. The exported
 * array's layout is the batch's internal array (e.g. a pushed dictionary column
 * stays a dictionary column). Every node of the exported tree holds its own
 * reference, so a consumer may also move a child out and release the parent
 * (CDataInterface "moving child arrays"). Returns LAMINAR_OK or
 * LAMINAR_ERR_NOMEM (out left released). */
laminar_code lm_batch_export(lm_batch* batch, struct ArrowArray* out);

/* Export the Arrow schema of `schema` as a struct ("+s") schema: BOOL "b",
 * INT32 "i", INT64 "l", DOUBLE "g", STRING "u", TIMESTAMP "tsu:"; nullable flag
 * unless not_null. Returns LAMINAR_OK or LAMINAR_ERR_NOMEM. */
laminar_code lm_arrow_schema_export(const lm_schema* schema, struct ArrowSchema* out);

/* Move helpers (STYLE §1.5): bitwise move with the source marked released, and
 * release-then-check. */
void lm_arrow_move(struct ArrowArray* src, struct ArrowArray* dst);
void lm_arrow_release(struct ArrowArray* array);
void lm_arrow_schema_release(struct ArrowSchema* schema);

#endif /* LM_ARROW_H */
