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
  LM_TYPE_INT8 = 9,      /* data: int8_t per row (TINYINT) */
  /* DECIMAL(p,s), 1 <= p <= 38, 0 <= s <= p: the unscaled integer (the value
   * times 10^s), int64_t per row when p <= 18, lm_i128 (Arrow decimal128's
   * layout) when p > 18. A column's lm_type value is lm_type_decimal(p, s):
   * this kind in the low byte, p and s above it, so the precision and scale
   * travel wherever a type does (fields, bound expressions, key and state
   * types, snapshots of types) and never per row. Test with lm_type_is_decimal
   * or switch on lm_type_kind(): a switch on the raw value never meets this
   * enumerator. */
  LM_TYPE_DECIMAL = 10,
  /* REAL / FLOAT4: data: float per row (Arrow float32). Arithmetic runs in
   * double and rounds back (exact for + - * / %), comparisons widen to DOUBLE.
   * Everywhere a value is only ordered, compared, hashed or kept (keys, MIN /
   * MAX / FIRST / LAST, state snapshots, ORDER BY) it travels as its integer
   * image: lm_vec_int_at gives lm_f32_key(value), an integer in [0, 2^32)
   * ordered as the floats are (NaN last, -0.0 equal to 0.0, as DuckDB), and
   * lm_vec_int_put stores the float back. */
  LM_TYPE_FLOAT = 11,
  /* VARBINARY / BLOB / BYTEA: data: lm_str per row, any bytes (Arrow binary).
   * Stored, hashed, compared (bytewise) and kept in state as a VARCHAR is:
   * the paths that hold strings test lm_type_is_bytes. */
  LM_TYPE_BINARY = 12,
  /* TIME: data: int64_t microseconds since midnight, 0 .. 86400000000 (Arrow
   * time64[us]); an integer everywhere it is only kept or ordered */
  LM_TYPE_TIME = 13
} lm_type;

/* A type stored as lm_str per row: VARCHAR (UTF-8) or VARBINARY (bytes). */
static inline bool lm_type_is_bytes(lm_type type) {
  return type == LM_TYPE_STRING || type == LM_TYPE_BINARY;
}

/* 128-bit integers (GCC and Clang), for DECIMAL(p > 18) values and exact sums. */
__extension__ typedef __int128 lm_i128;
__extension__ typedef unsigned __int128 lm_u128;

/* Most digits a DECIMAL holds, and most a 64-bit one does. */
#define LM_DECIMAL_MAX_PRECISION 38
#define LM_DECIMAL_MAX_PRECISION64 18

/* The type DECIMAL(p, s) (1 <= p <= 38, 0 <= s <= p: the caller checks). */
static inline lm_type lm_type_decimal(int32_t precision, int32_t scale) {
  return (lm_type)((uint32_t)LM_TYPE_DECIMAL | ((uint32_t)precision << 8) |
                   ((uint32_t)scale << 16));
}
/* The kind of a type: the type itself, or LM_TYPE_DECIMAL for any DECIMAL(p,s). */
static inline lm_type lm_type_kind(lm_type type) {
  return (lm_type)((uint32_t)type & 0xffu);
}
static inline bool lm_type_is_decimal(lm_type type) {
  return lm_type_kind(type) == LM_TYPE_DECIMAL;
}
/* Precision and scale of a DECIMAL type (0 for other types). */
static inline int32_t lm_type_precision(lm_type type) {
  return lm_type_is_decimal(type) ? (int32_t)(((uint32_t)type >> 8) & 0xffu) : 0;
}
static inline int32_t lm_type_scale(lm_type type) {
  return lm_type_is_decimal(type) ? (int32_t)(((uint32_t)type >> 16) & 0xffu) : 0;
}
/* A DECIMAL stored as lm_i128 per row (precision above 18). */
static inline bool lm_type_is_wide(lm_type type) {
  return lm_type_is_decimal(type) && lm_type_precision(type) > LM_DECIMAL_MAX_PRECISION64;
}

/* The order-preserving integer image of a REAL (see LM_TYPE_FLOAT): every NaN
 * is the largest value, -0.0 is 0.0; otherwise a < b as floats exactly when
 * lm_f32_key(a) < lm_f32_key(b). */
static inline int64_t lm_f32_key(float f) {
  uint32_t u;
  if (f != f) {
    u = 0x7fc00000u;
  } else if (f == 0.0f) {
    u = 0;
  } else {
    __builtin_memcpy(&u, &f, 4);
  }
  return (int64_t)((u & 0x80000000u) ? ~u : (u | 0x80000000u));
}
/* The REAL whose image is `key` (the inverse of lm_f32_key on its range). */
static inline float lm_f32_of_key(int64_t key) {
  uint32_t k = (uint32_t)key;
  uint32_t u = (k & 0x80000000u) ? (k & 0x7fffffffu) : ~k;
  float f;
  __builtin_memcpy(&f, &u, 4);
  return f;
}

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
  switch (lm_type_kind(type)) {
    case LM_TYPE_BOOL:
    case LM_TYPE_INT8: return 1;
    case LM_TYPE_INT16: return 2;
    case LM_TYPE_INT32:
    case LM_TYPE_FLOAT:
    case LM_TYPE_DATE: return 4;
    case LM_TYPE_INT64:
    case LM_TYPE_TIMESTAMP:
    case LM_TYPE_TIME:
    case LM_TYPE_DOUBLE: return 8;
    case LM_TYPE_STRING:
    case LM_TYPE_BINARY: return (int64_t)sizeof(lm_str);
    case LM_TYPE_DECIMAL: return lm_type_is_wide(type) ? 16 : 8;
    case LM_TYPE_NULL: return 1;
  }
  return 1;
}

/* Row `row` of a column stored as an integer (BOOL, INT8, INT16, INT32, DATE,
 * INT64, TIMESTAMP, DECIMAL(p <= 18)), widened to 64 bits; of a REAL column,
 * its order-preserving image lm_f32_key. */
static inline int64_t lm_vec_int_at(const lm_vec* v, int64_t row) {
  switch (v->type) {
    case LM_TYPE_BOOL: return ((const uint8_t*)v->data)[row];
    case LM_TYPE_INT8: return ((const int8_t*)v->data)[row];
    case LM_TYPE_INT16: return ((const int16_t*)v->data)[row];
    case LM_TYPE_INT32:
    case LM_TYPE_DATE: return ((const int32_t*)v->data)[row];
    case LM_TYPE_FLOAT: return lm_f32_key(((const float*)v->data)[row]);
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
    case LM_TYPE_FLOAT: ((float*)data)[row] = lm_f32_of_key(x); break;
    default: ((int64_t*)data)[row] = x; break;
  }
}

/* Row `row` of a DECIMAL column (either width) as a 128-bit unscaled value. */
static inline lm_i128 lm_vec_dec_at(const lm_vec* v, int64_t row) {
  if (lm_type_is_wide(v->type)) {
    lm_i128 x;
    __builtin_memcpy(&x, (const char*)v->data + 16 * row, 16);
    return x;
  }
  return ((const int64_t*)v->data)[row];
}
/* Store the unscaled value x (in range for `type`) at `row` of DECIMAL data. */
static inline void lm_vec_dec_put(lm_type type, void* data, int64_t row, lm_i128 x) {
  if (lm_type_is_wide(type)) {
    __builtin_memcpy((char*)data + 16 * row, &x, 16);
  } else {
    ((int64_t*)data)[row] = (int64_t)x;
  }
}

/* SQL name of a type ("VARCHAR", "BIGINT", "INT", "DOUBLE", "BOOLEAN",
 * "TIMESTAMP", "DATE", "SMALLINT", "TINYINT", "DECIMAL(18,4)", "REAL", "VARBINARY",
 * "TIME", "NULL").
 * Static text. */
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
