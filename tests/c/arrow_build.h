/*
 * arrow_build.h -- test helpers that build Arrow C Data Interface batches with
 * nanoarrow, so C tests can push realistic data through laminar.h.
 */
#ifndef LM_TEST_ARROW_BUILD_H
#define LM_TEST_ARROW_BUILD_H

#include "laminar.h"
#include "nanoarrow/nanoarrow.h"

#include <stdbool.h>
#include <stdint.h>

/* One trade row; NULLs via the flags. */
typedef struct trade_row {
  const char* symbol; /* NULL = SQL NULL */
  double price;
  bool price_null;
  int64_t volume;
  bool volume_null;
  int64_t ts;
} trade_row;

/* Build a struct batch (symbol utf8, price float64, volume int64, ts int64)
 * from rows. With `dict` the symbol column is dictionary<int32, utf8>. Returns
 * 0 on success. */
static inline int build_trades(const trade_row* rows, int64_t n, bool dict,
                               struct ArrowArray* out_array,
                               struct ArrowSchema* out_schema) {
  struct ArrowSchema* s = out_schema;
  ArrowSchemaInit(s);
  if (ArrowSchemaSetTypeStruct(s, 4) != NANOARROW_OK) return 1;
  const char* names[4] = {"symbol", "price", "volume", "ts"};
  enum ArrowType types[4] = {NANOARROW_TYPE_STRING, NANOARROW_TYPE_DOUBLE,
                             NANOARROW_TYPE_INT64, NANOARROW_TYPE_INT64};
  for (int i = 0; i < 4; i++) {
    if (i == 0 && dict) {
      if (ArrowSchemaSetType(s->children[0], NANOARROW_TYPE_INT32) != NANOARROW_OK)
        return 1;
      if (ArrowSchemaAllocateDictionary(s->children[0]) != NANOARROW_OK) return 1;
      if (ArrowSchemaInitFromType(s->children[0]->dictionary, NANOARROW_TYPE_STRING) !=
          NANOARROW_OK) {
        return 1;
      }
    } else if (ArrowSchemaSetType(s->children[i], types[i]) != NANOARROW_OK) {
      return 1;
    }
    if (ArrowSchemaSetName(s->children[i], names[i]) != NANOARROW_OK) return 1;
  }
  struct ArrowError error;
  if (ArrowArrayInitFromSchema(out_array, s, &error) != NANOARROW_OK) return 1;
  if (ArrowArrayStartAppending(out_array) != NANOARROW_OK) return 1;
  struct ArrowArray* sym = out_array->children[0];
  /* Dictionary: one entry per distinct symbol in order of appearance. */
  const char* dict_values[256];
  int32_t ndict = 0;
  for (int64_t r = 0; r < n; r++) {
    const trade_row* t = &rows[r];
    if (t->symbol == NULL) {
      if (ArrowArrayAppendNull(sym, 1) != NANOARROW_OK) return 1;
    } else if (dict) {
      int32_t idx = -1;
      for (int32_t d = 0; d < ndict; d++) {
        if (strcmp(dict_values[d], t->symbol) == 0) idx = d;
      }
      if (idx < 0) {
        if (ndict == 256) return 1;
        idx = ndict;
        dict_values[ndict++] = t->symbol;
        struct ArrowStringView sv = {t->symbol, (int64_t)strlen(t->symbol)};
        if (ArrowArrayAppendString(sym->dictionary, sv) != NANOARROW_OK) return 1;
      }
      if (ArrowArrayAppendInt(sym, idx) != NANOARROW_OK) return 1;
    } else {
      struct ArrowStringView sv = {t->symbol, (int64_t)strlen(t->symbol)};
      if (ArrowArrayAppendString(sym, sv) != NANOARROW_OK) return 1;
    }
    int rc = t->price_null ? ArrowArrayAppendNull(out_array->children[1], 1)
                           : ArrowArrayAppendDouble(out_array->children[1], t->price);
    if (rc != NANOARROW_OK) return 1;
    rc = t->volume_null ? ArrowArrayAppendNull(out_array->children[2], 1)
                        : ArrowArrayAppendInt(out_array->children[2], t->volume);
    if (rc != NANOARROW_OK) return 1;
    if (ArrowArrayAppendInt(out_array->children[3], t->ts) != NANOARROW_OK) return 1;
    if (ArrowArrayFinishElement(out_array) != NANOARROW_OK) return 1;
  }
  if (ArrowArrayFinishBuildingDefault(out_array, &error) != NANOARROW_OK) return 1;
  return 0;
}

/* Read helpers over an output struct array + schema through nanoarrow views. */
typedef struct result_view {
  struct ArrowArrayView view;
  struct ArrowSchema schema;
  struct ArrowArray array;
} result_view;

static inline int result_view_init(result_view* rv) {
  struct ArrowError error;
  if (ArrowArrayViewInitFromSchema(&rv->view, &rv->schema, &error) != NANOARROW_OK)
    return 1;
  if (ArrowArrayViewSetArray(&rv->view, &rv->array, &error) != NANOARROW_OK) return 1;
  if (ArrowArrayViewValidate(&rv->view, NANOARROW_VALIDATION_LEVEL_FULL, &error) !=
      NANOARROW_OK) {
    return 1;
  }
  return 0;
}

static inline int64_t result_col_index(const result_view* rv, const char* name) {
  for (int64_t i = 0; i < rv->schema.n_children; i++) {
    if (strcmp(rv->schema.children[i]->name, name) == 0) return i;
  }
  return -1;
}

static inline void result_view_free(result_view* rv) {
  ArrowArrayViewReset(&rv->view);
  if (rv->array.release) rv->array.release(&rv->array);
  if (rv->schema.release) rv->schema.release(&rv->schema);
}

#endif /* LM_TEST_ARROW_BUILD_H */
