/*
 * types.h -- the engine's value types and its columnar currency, `lm_vec`.
 *
 * Every operator works batch-at-a-time on lm_vec columns (DESIGN §2, ring 0).
 * A vector is a read-only view: it never owns its memory. Memory belongs to the
 * batch it was imported from (src/arrow), or to the evaluation context that
 * computed it (src/expr), and lives until that owner is released or reset.
 */
#ifndef LM_TYPES_H
#define LM_TYPES_H

#include <stdbool.h>
#include <stdint.h>

/* Logical types. Values are stable (they appear in snapshots). */
typedef enum lm_type {
  LM_TYPE_NULL = 0,      /* the type of a bare NULL literal before binding */
  LM_TYPE_BOOL = 1,      /* data: uint8_t per row, 0 or 1 */
  LM_TYPE_INT32 = 2,     /* data: int32_t per row */
  LM_TYPE_INT64 = 3,     /* data: int64_t per row */
  LM_TYPE_DOUBLE = 4,    /* data: double per row */
  LM_TYPE_STRING = 5,    /* data: lm_str per row (UTF-8, not NUL-terminated) */
  LM_TYPE_TIMESTAMP = 6, /* data: int64_t microseconds since the epoch, no zone */
  LM_TYPE_DATE = 7,      /* data: int32_t days since 1970-01-01 (Arrow date32) */
  LM_TYPE_INT16 = 8,     /* data: int16_t per row (SMALLINT) */
  LM_TYPE_INT8 = 9       /* data: int8_t per row (TINYINT) */
} lm_type;

/* A borrowed string: `len` bytes at `ptr` (ptr may be NULL when len is 0). */
typedef struct lm_str {
  const char* ptr;
  int64_t len;
} lm_str;

/* A column of `len` values of one type.
 * nulls: NULL when no value is null; otherwise one byte per row, 1 = NULL (the
 *        data slot of a null row holds an unspecified but initialized value).
 * data:  the values, laid out as the type says (see lm_type). */
typedef struct lm_vec {
  lm_type type;
  int64_t len;
  const uint8_t* nulls;
  const void* data;
} lm_vec;

/* A named column of a schema. */
typedef struct lm_field {
  char* name; /* owned by the schema */
  lm_type type;
  bool not_null;
} lm_field;

/* A row schema: an ordered list of fields (owned). */
typedef struct lm_schema {
  int32_t ncols;
  lm_field* fields;
} lm_schema;

/* Size in bytes of one value of `type` in an lm_vec's data. */
static inline int64_t lm_type_width(lm_type type) {
  switch (type) {
    case LM_TYPE_BOOL:
    case LM_TYPE_INT8: return 1;
    case LM_TYPE_INT16: return 2;
    case LM_TYPE_INT32:
    case LM_TYPE_DATE: return 4;
    case LM_TYPE_INT64:
    case LM_TYPE_TIMESTAMP:
    case LM_TYPE_DOUBLE: return 8;
    case LM_TYPE_STRING: return (int64_t)sizeof(lm_str);
    case LM_TYPE_NULL: return 1;
  }
  return 1;
}

/* Row `row` of a column stored as an integer (BOOL, INT8, INT16, INT32, DATE,
 * INT64, TIMESTAMP), widened to 64 bits. */
static inline int64_t lm_vec_int_at(const lm_vec* v, int64_t row) {
  switch (v->type) {
    case LM_TYPE_BOOL: return ((const uint8_t*)v->data)[row];
    case LM_TYPE_INT8: return ((const int8_t*)v->data)[row];
    case LM_TYPE_INT16: return ((const int16_t*)v->data)[row];
    case LM_TYPE_INT32:
    case LM_TYPE_DATE: return ((const int32_t*)v->data)[row];
    default: return ((const int64_t*)v->data)[row];
  }
}

/* Store x (a value of `type`, widened as lm_vec_int_at gives it) at `row` of
 * data laid out as `type` says. */
static inline void lm_vec_int_put(lm_type type, void* data, int64_t row, int64_t x) {
  switch (type) {
    case LM_TYPE_BOOL: ((uint8_t*)data)[row] = (uint8_t)x; break;
    case LM_TYPE_INT8: ((int8_t*)data)[row] = (int8_t)x; break;
    case LM_TYPE_INT16: ((int16_t*)data)[row] = (int16_t)x; break;
    case LM_TYPE_INT32:
    case LM_TYPE_DATE: ((int32_t*)data)[row] = (int32_t)x; break;
    default: ((int64_t*)data)[row] = x; break;
  }
}

/* SQL name of a type ("VARCHAR", "BIGINT", "INT", "DOUBLE", "BOOLEAN",
 * "TIMESTAMP", "DATE", "SMALLINT", "TINYINT", "NULL"). */
const char* lm_type_name(lm_type type);

/* Schema helpers (util/types.c). lm_schema_init_empty sets ncols=0, fields=NULL.
 * lm_schema_add copies `name`. lm_schema_copy deep-copies. lm_schema_free frees
 * the fields and resets to empty. lm_schema_find returns the index of a field
 * (case-insensitive) or -1. */
void lm_schema_init_empty(lm_schema* schema);
int lm_schema_add(lm_schema* schema, const char* name, lm_type type, bool not_null);
int lm_schema_copy(const lm_schema* src, lm_schema* dst);
void lm_schema_free(lm_schema* schema);
int32_t lm_schema_find(const lm_schema* schema, const char* name);

#endif /* LM_TYPES_H */
