/*
 * export.c -- Arrow out of the core: building result batches from lm_vec
 * columns, reference counting of batches, zero-copy export of a batch as a
 * struct ArrowArray, export of a row schema as a struct ArrowSchema, and the
 * move/release helpers (STYLE §1.5).
 *
 * Exported arrays (CDataInterface.rst, "Release callback semantics -- for
 * producers"): every node of an exported tree (the struct, each column, each
 * dictionary) has its own private block holding one batch reference, its
 * buffers array and the structs of its children. A node's release releases its
 * live children, frees its block, drops its reference and marks itself
 * released. So a consumer may release only the top (the normal case), or move
 * a child out before releasing the top (the spec's "moving child arrays"), and
 * the buffers stay alive either way. Nothing in a block points into the
 * ArrowArray struct that owns it, so the struct may be moved bitwise.
 * Release callbacks may run on any thread: the batch refcount is atomic.
 */
#include <errno.h>
#include <stdalign.h>
#include <stddef.h>
#include <string.h>

#include "arrow/arrow.h"
#include "arrow/internal.h"
#include "util/util.h"

/* ------------------------------------------------------------------------------
 * Move / release helpers
 * ---------------------------------------------------------------------------- */

void lm_arrow_move(struct ArrowArray* src, struct ArrowArray* dst) {
  LM_ASSERT(src != dst);
  memcpy(dst, src, sizeof *dst);
  src->release = NULL;
}

void lm_arrow_release(struct ArrowArray* array) {
  if (array == NULL || array->release == NULL) return;
  array->release(array);
  LM_ASSERT(array->release == NULL);
}

void lm_arrow_schema_release(struct ArrowSchema* schema) {
  if (schema == NULL || schema->release == NULL) return;
  schema->release(schema);
  LM_ASSERT(schema->release == NULL);
}

/* ------------------------------------------------------------------------------
 * Reference counting
 * ---------------------------------------------------------------------------- */

void lm_batch_ref(lm_batch* batch) {
  /* Relaxed: the caller already holds a reference, so the batch cannot be freed
   * concurrently; no data is published by taking a reference. */
  atomic_fetch_add_explicit(&batch->refs, 1, memory_order_relaxed);
}

void lm_batch_unref(lm_batch* batch) {
  if (batch == NULL) return;
  /* acq_rel: the release half orders this holder's reads of the batch before
   * its decrement; the acquire half, on the decrement that reaches zero,
   * synchronizes with every other holder's release-decrement, so the free
   * below happens after all their reads (pairs with itself on other threads). */
  if (atomic_fetch_sub_explicit(&batch->refs, 1, memory_order_acq_rel) != 1) return;
  lm_arrow_release(&batch->array);
  lm_free(batch->owned);  // holds the lm_batch itself: touch nothing after this
}

/* ------------------------------------------------------------------------------
 * Schema export
 * ---------------------------------------------------------------------------- */

static enum ArrowType arrow_type_of(lm_type type) {
  switch (lm_type_kind(type)) {
    case LM_TYPE_BOOL: return NANOARROW_TYPE_BOOL;
    case LM_TYPE_INT32: return NANOARROW_TYPE_INT32;
    case LM_TYPE_INT64: return NANOARROW_TYPE_INT64;
    case LM_TYPE_DOUBLE: return NANOARROW_TYPE_DOUBLE;
    case LM_TYPE_STRING: return NANOARROW_TYPE_STRING;
    case LM_TYPE_TIMESTAMP: return NANOARROW_TYPE_TIMESTAMP;
    case LM_TYPE_DATE: return NANOARROW_TYPE_DATE32;
    case LM_TYPE_INT16: return NANOARROW_TYPE_INT16;
    case LM_TYPE_INT8: return NANOARROW_TYPE_INT8;
    case LM_TYPE_FLOAT: return NANOARROW_TYPE_FLOAT;
    case LM_TYPE_BINARY: return NANOARROW_TYPE_BINARY;
    case LM_TYPE_TIME: return NANOARROW_TYPE_TIME64;
    case LM_TYPE_DECIMAL: return NANOARROW_TYPE_DECIMAL128;
    case LM_TYPE_NULL: return NANOARROW_TYPE_NA;
  }
  return NANOARROW_TYPE_NA;
}

laminar_code lm_arrow_schema_export(const lm_schema* schema, struct ArrowSchema* out) {
  ArrowSchemaInit(out);
  if (ArrowSchemaSetTypeStruct(out, schema->ncols) != NANOARROW_OK) goto fail;
  out->flags = 0;  // a batch's rows are never null as a whole
  for (int32_t i = 0; i < schema->ncols; i++) {
    const lm_field* f = &schema->fields[i];
    struct ArrowSchema* child = out->children[i];
    int rc = f->type == LM_TYPE_TIMESTAMP || f->type == LM_TYPE_TIME
                 ? ArrowSchemaSetTypeDateTime(child, arrow_type_of(f->type),
                                              NANOARROW_TIME_UNIT_MICRO, NULL)
             : lm_type_is_decimal(f->type)
                 ? ArrowSchemaSetTypeDecimal(child, NANOARROW_TYPE_DECIMAL128,
                                             lm_type_precision(f->type),
                                             lm_type_scale(f->type))
                 : ArrowSchemaSetType(child, arrow_type_of(f->type));
    if (rc != NANOARROW_OK || ArrowSchemaSetName(child, f->name) != NANOARROW_OK) {
      goto fail;
    }
    child->flags = f->not_null ? 0 : ARROW_FLAG_NULLABLE;
  }
  return LAMINAR_OK;
fail:
  lm_arrow_schema_release(out);
  return LAMINAR_ERR_NOMEM;
}

/* ------------------------------------------------------------------------------
 * Build
 * ---------------------------------------------------------------------------- */

/* Append `nrows` values of `col` to the nanoarrow child array `child` (already
 * started) of SQL type `type`: validity only if some row is null. A column of
 * NULL type (a bare NULL literal) fills any typed column with nulls. Returns 0
 * or an errno code. */
static int build_column(struct ArrowArray* child, lm_type type, const lm_vec* col,
                        int64_t nrows) {
  if (col->type == LM_TYPE_NULL && type != LM_TYPE_NULL) {
    return ArrowArrayAppendNull(child, nrows);
  }
  LM_ASSERT(col->type == type);
  int64_t null_count = 0;
  if (col->nulls != NULL && col->type != LM_TYPE_NULL) {
    for (int64_t r = 0; r < nrows; r++) null_count += col->nulls[r] != 0;
  }
  if (null_count > 0) {
    struct ArrowBitmap* validity = ArrowArrayValidityBitmap(child);
    NANOARROW_RETURN_NOT_OK(ArrowBitmapReserve(validity, nrows));
    for (int64_t r = 0; r < nrows; r++) {
      ArrowBitmapAppendUnsafe(validity, col->nulls[r] == 0, 1);
    }
  }

  if (col->type == LM_TYPE_NULL) {  // Arrow's null type: no buffers, all rows null
    child->length = nrows;
    child->null_count = nrows;
    return NANOARROW_OK;
  }
  struct ArrowBuffer* data = ArrowArrayBuffer(child, 1);
  switch (lm_type_kind(col->type)) {
    case LM_TYPE_BOOL: {
      int64_t bytes = (nrows + 7) / 8;
      NANOARROW_RETURN_NOT_OK(ArrowBufferReserve(data, bytes));
      if (bytes > 0) memset(data->data, 0, (size_t)bytes);
      const uint8_t* in = col->data;
      for (int64_t r = 0; r < nrows; r++) {
        if (in[r] != 0) ArrowBitSet(data->data, r);
      }
      data->size_bytes = bytes;
      break;
    }
    case LM_TYPE_INT8:
    case LM_TYPE_INT16:
    case LM_TYPE_INT32:
    case LM_TYPE_FLOAT:
    case LM_TYPE_DATE:
    case LM_TYPE_INT64:
    case LM_TYPE_DOUBLE:
    case LM_TYPE_TIMESTAMP:
    case LM_TYPE_TIME:
      if (nrows > 0) {
        NANOARROW_RETURN_NOT_OK(
            ArrowBufferAppend(data, col->data, nrows * lm_type_width(col->type)));
      }
      break;
    case LM_TYPE_BINARY:
    case LM_TYPE_STRING: {
      /* data is buffer 1 for the offsets here; the bytes are buffer 2. */
      const lm_str* in = col->data;
      struct ArrowBuffer* bytes = ArrowArrayBuffer(child, 2);
      int64_t total = 0;
      for (int64_t r = 0; r < nrows; r++) {
        if (col->nulls == NULL || col->nulls[r] == 0) total += in[r].len;
      }
      if (total > INT32_MAX) return EOVERFLOW;  // utf8 offsets are int32
      NANOARROW_RETURN_NOT_OK(ArrowBufferReserve(data, nrows * (int64_t)sizeof(int32_t)));
      NANOARROW_RETURN_NOT_OK(ArrowBufferReserve(bytes, total));
      int32_t end = 0;
      for (int64_t r = 0; r < nrows; r++) {
        if ((col->nulls == NULL || col->nulls[r] == 0) && in[r].len > 0) {
          ArrowBufferAppendUnsafe(bytes, in[r].ptr, in[r].len);
          end += (int32_t)in[r].len;
        }
        ArrowBufferAppendUnsafe(data, &end, sizeof end);
      }
      break;
    }
    case LM_TYPE_DECIMAL:
      /* decimal128: 16 bytes a value, little-endian two's complement */
      if (lm_type_is_wide(col->type)) {
        if (nrows > 0)
          NANOARROW_RETURN_NOT_OK(ArrowBufferAppend(data, col->data, nrows * 16));
      } else {
        NANOARROW_RETURN_NOT_OK(ArrowBufferReserve(data, nrows * 16));
        for (int64_t r = 0; r < nrows; r++) {
          lm_i128 x = ((const int64_t*)col->data)[r];
          ArrowBufferAppendUnsafe(data, &x, 16);
        }
      }
      break;
    case LM_TYPE_NULL: break;  // handled above
  }
  child->length = nrows;
  child->null_count = null_count;
  return NANOARROW_OK;
}

laminar_code lm_arrow_build(const lm_schema* schema, const lm_vec* cols, int64_t nrows,
                            lm_batch** out) {
  *out = NULL;
  struct ArrowSchema arrow_schema;
  LM_TRY(lm_arrow_schema_export(schema, &arrow_schema));
  struct ArrowArray array;
  array.release = NULL;
  laminar_code rc = LAMINAR_ERR_NOMEM;
  lm_arrow_colsrc* srcs = lm_calloc((size_t)schema->ncols, sizeof(lm_arrow_colsrc));
  if (srcs == NULL) goto done;
  if (ArrowArrayInitFromSchema(&array, &arrow_schema, NULL) != NANOARROW_OK) goto done;
  if (ArrowArrayStartAppending(&array) != NANOARROW_OK) goto done;
  for (int32_t i = 0; i < schema->ncols; i++) {
    LM_ASSERT(cols[i].len >= nrows);
    if (build_column(array.children[i], schema->fields[i].type, &cols[i], nrows) !=
        NANOARROW_OK) {
      goto done;
    }
  }
  array.length = nrows;
  array.null_count = 0;
  if (ArrowArrayFinishBuildingDefault(&array, NULL) != NANOARROW_OK) goto done;

  for (int32_t i = 0; i < schema->ncols; i++) {
    const struct ArrowArray* child = array.children[i];
    lm_arrow_colsrc* s = &srcs[i];
    s->name = schema->fields[i].name;
    s->type = schema->fields[i].type;
    s->array = child;
    s->storage =
        s->type == LM_TYPE_TIMESTAMP ? NANOARROW_TYPE_INT64 : arrow_type_of(s->type);
    s->unit = NANOARROW_TIME_UNIT_MICRO;
    s->may_have_nulls = child->null_count > 0;
  }
  /* Only NOMEM can come back: no not_null flags, no unit conversion. */
  rc = lm_arrow_wrap(&array, srcs, schema->ncols, nrows, "", out, NULL);

done:
  lm_arrow_release(&array);  // no-op when moved into the batch
  lm_arrow_schema_release(&arrow_schema);
  lm_free(srcs);
  return rc;
}

/* ------------------------------------------------------------------------------
 * Batch export
 * ---------------------------------------------------------------------------- */

/* The private block of one exported node: this header, then (in this order, so
 * each part stays aligned) struct ArrowArray child_structs[n_children], struct
 * ArrowArray dictionary (if any), struct ArrowArray* children[n_children],
 * const void* buffers[n_buffers]. The child structs live here; their own
 * bookkeeping lives in their own blocks. */
typedef struct export_block {
  lm_batch* batch;  // one reference, dropped by this node's release
} export_block;

#define BLOCK_HEADER \
  ((sizeof(export_block) + alignof(max_align_t) - 1) & ~(alignof(max_align_t) - 1))

static void export_release(struct ArrowArray* array) {
  if (array == NULL || array->release == NULL) return;
  for (int64_t i = 0; i < array->n_children; i++) {
    lm_arrow_release(array->children[i]);  // skips children moved out (released)
  }
  lm_arrow_release(array->dictionary);
  export_block* block = array->private_data;
  lm_batch* batch = block->batch;
  lm_free(block);
  array->private_data = NULL;
  array->release = NULL;
  lm_batch_unref(batch);
}

/* Export node `src` of `batch`'s array into `dst` (and its subtree). On failure
 * dst is left released and every reference taken is dropped. */
static laminar_code export_node(const struct ArrowArray* src, struct ArrowArray* dst,
                                lm_batch* batch) {
  dst->release = NULL;
  size_t nbuf = (size_t)src->n_buffers, nchild = (size_t)src->n_children;
  size_t ndict = src->dictionary != NULL ? 1 : 0;
  size_t size = BLOCK_HEADER + nbuf * sizeof(void*) +
                nchild * sizeof(struct ArrowArray*) +
                (nchild + ndict) * sizeof(struct ArrowArray);
  uint8_t* mem = lm_malloc(size);
  if (mem == NULL) return LAMINAR_ERR_NOMEM;
  export_block* block = (export_block*)mem;
  struct ArrowArray* structs = (struct ArrowArray*)(mem + BLOCK_HEADER);
  struct ArrowArray** children = (struct ArrowArray**)(structs + nchild + ndict);
  const void** buffers = (const void**)(children + nchild);

  block->batch = batch;
  lm_batch_ref(batch);
  if (nbuf > 0) memcpy(buffers, src->buffers, nbuf * sizeof(void*));
  for (size_t i = 0; i < nchild + ndict; i++) structs[i].release = NULL;
  for (size_t i = 0; i < nchild; i++) children[i] = &structs[i];

  dst->length = src->length;
  dst->null_count = src->null_count;
  dst->offset = src->offset;
  dst->n_buffers = src->n_buffers;
  dst->n_children = src->n_children;
  dst->buffers = buffers;
  dst->children = nchild > 0 ? children : NULL;
  dst->dictionary = ndict ? &structs[nchild] : NULL;
  dst->private_data = block;
  dst->release = export_release;

  for (size_t i = 0; i < nchild; i++) {
    if (export_node(src->children[i], &structs[i], batch) != LAMINAR_OK) {
      export_release(dst);
      return LAMINAR_ERR_NOMEM;
    }
  }
  if (ndict && export_node(src->dictionary, dst->dictionary, batch) != LAMINAR_OK) {
    export_release(dst);
    return LAMINAR_ERR_NOMEM;
  }
  return LAMINAR_OK;
}

laminar_code lm_batch_export(lm_batch* batch, struct ArrowArray* out) {
  return export_node(&batch->array, out, batch);
}
