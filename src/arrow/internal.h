/*
 * internal.h -- private to src/arrow: the column-view builder shared by import
 * (pushed, validated arrays) and build (arrays the core made itself).
 *
 * Both paths end in lm_arrow_wrap(): given a struct array whose layout is already
 * known to be sound, it computes every lm_vec view in one allocation and moves
 * the array into a new lm_batch. Import validates first; build trusts its own
 * nanoarrow output. Keeping one conversion routine means a pushed array and a
 * built one with the same values give identical views.
 */
#ifndef LM_ARROW_INTERNAL_H
#define LM_ARROW_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>

#include "arrow/arrow.h"
#include "nanoarrow/nanoarrow.h"

/* How to view one column of a struct array. Filled by import (after validation)
 * or by build. All pointers are borrowed from the struct array being wrapped. */
typedef struct lm_arrow_colsrc {
  const char* name;               /* column name, for error messages */
  lm_type type;                   /* the SQL type the view has */
  bool not_null;                  /* reject any NULL in the viewed rows */
  const struct ArrowArray* array; /* the column (a child of the struct) */
  int64_t offset;                 /* element offset of row 0: child + struct offset */
  enum ArrowType storage;         /* storage of the values: BOOL, INT32, INT64 (also
                                     TIMESTAMP), DOUBLE, STRING, LARGE_STRING; for a
                                     dictionary column the index type (INT32) */
  enum ArrowTimeUnit unit;        /* TIMESTAMP only */
  bool may_have_nulls;            /* validity bitmap present with nulls somewhere */
  const struct ArrowArray* dict;  /* dictionary values, or NULL if not encoded */
  enum ArrowType dict_storage;    /* STRING or LARGE_STRING */
  bool dict_may_have_nulls;       /* the dictionary has null values */
} lm_arrow_colsrc;

/* Build the lm_vec views of `ncols` columns of `nrows` rows and wrap `array`
 * (a struct array whose columns `cols` describes, in the batch's column order)
 * into a new batch with one reference.
 * Conversions (null bytes, bool bytes, string views, timestamp units) go into a
 * single allocation that also holds the lm_batch and its cols array; fixed-width
 * values are viewed in place.
 * Returns LAMINAR_OK (array moved into (*out)->array), LAMINAR_ERR_NOMEM,
 * LAMINAR_ERR_NULL_VIOLATION (a not_null column has a NULL) or
 * LAMINAR_ERR_COLUMN_TYPE (a timestamp overflows microseconds); errors name
 * `source_name` and the column. On failure `array` is untouched. */
laminar_code lm_arrow_wrap(struct ArrowArray* array, const lm_arrow_colsrc* cols,
                           int32_t ncols, int64_t nrows, const char* source_name,
                           lm_batch** out, laminar_error* err);

/* Column-name comparisons lm_arrow_import has made on the calling thread so
 * far: a test's measure that matching a push's columns costs O(columns). */
int64_t lm_arrow_name_compares(void);

#endif /* LM_ARROW_INTERNAL_H */
