/*
 * types.c -- names of the logical types and the small schema helpers.
 */
#include "util/types.h"

#include "util/decimal_names.h"
#include "util/util.h"

#include <stdlib.h>
#include <string.h>

const char* lm_type_name(lm_type type) {
  switch (lm_type_kind(type)) {
    case LM_TYPE_BOOL: return "BOOLEAN";
    case LM_TYPE_INT32: return "INT";
    case LM_TYPE_INT64: return "BIGINT";
    case LM_TYPE_DOUBLE: return "DOUBLE";
    case LM_TYPE_STRING: return "VARCHAR";
    case LM_TYPE_TIMESTAMP: return "TIMESTAMP";
    case LM_TYPE_DATE: return "DATE";
    case LM_TYPE_INT16: return "SMALLINT";
    case LM_TYPE_INT8: return "TINYINT";
    case LM_TYPE_FLOAT: return "REAL";
    case LM_TYPE_BINARY: return "VARBINARY";
    case LM_TYPE_TIME: return "TIME";
    case LM_TYPE_DECIMAL: {
      int32_t p = lm_type_precision(type), s = lm_type_scale(type);
      const char* name =
          p <= LM_DECIMAL_MAX_PRECISION && s <= p ? lm_decimal_names[p][s] : NULL;
      return name != NULL ? name : "DECIMAL";
    }
    case LM_TYPE_NULL: return "NULL";
  }
  return "?";
}

void lm_schema_init_empty(lm_schema* schema) {
  schema->ncols = 0;
  schema->fields = NULL;
}

/* Returns 0, or -1 when out of memory (schema unchanged). */
int lm_schema_add(lm_schema* schema, const char* name, lm_type type, bool not_null) {
  char* copy = lm_strdup(name);
  if (copy == NULL) return -1;
  lm_field* grown =
      lm_realloc(schema->fields, sizeof(lm_field) * (size_t)(schema->ncols + 1));
  if (grown == NULL) {
    lm_free(copy);
    return -1;
  }
  schema->fields = grown;
  schema->fields[schema->ncols] = (lm_field){copy, type, not_null};
  schema->ncols++;
  return 0;
}

int lm_schema_copy(const lm_schema* src, lm_schema* dst) {
  lm_schema_init_empty(dst);
  for (int32_t i = 0; i < src->ncols; i++) {
    const lm_field* f = &src->fields[i];
    if (lm_schema_add(dst, f->name, f->type, f->not_null) != 0) {
      lm_schema_free(dst);
      return -1;
    }
  }
  return 0;
}

void lm_schema_free(lm_schema* schema) {
  for (int32_t i = 0; i < schema->ncols; i++) lm_free(schema->fields[i].name);
  lm_free(schema->fields);
  lm_schema_init_empty(schema);
}

int32_t lm_schema_find(const lm_schema* schema, const char* name) {
  for (int32_t i = 0; i < schema->ncols; i++) {
    if (lm_streq_nocase(schema->fields[i].name, name)) return i;
  }
  return -1;
}
