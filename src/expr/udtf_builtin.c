/*
 * udtf_builtin.c -- the built-in table functions, written against the same
 * callback interface as a user's (laminar_table_function_register), so that
 * they go through the one path of export, call and checked import (udf.c):
 *   generate_series(start, stop [, step])  BIGINT rows start, start+step, ...
 *                                          up to stop inclusive (DuckDB's)
 *   range(start, stop [, step])            the same, stop excluded
 *   string_split_to_rows(s, sep)           the pieces of s between seps, one
 *                                          row each (DuckDB's
 *                                          unnest(string_split(s, sep)); an
 *                                          empty sep splits into characters)
 * Each object is made per binding (lm_udtf_builtin) and held by the plan.
 * The callbacks are thread-safe (no state) and run on the evaluating thread.
 */
#include "expr/expr.h"

#include "nanoarrow/nanoarrow.h"
#include "util/util.h"

#include <stdio.h>
#include <string.h>

/* generate_series's user pointer: the stop is included. */
static const int k_inclusive = 1;

/* Rows one call may produce: past it the call fails rather than take the
 * memory of an unbounded series. */
#define SERIES_MAX_ROWS (1 << 24)

/* out / out_schema: a struct of the parent-row column ("i") and one column
 * of `type` named `name` (the core reads columns by position), ready to
 * append. */
static int start_result(const char* name, enum ArrowType type, struct ArrowArray* out,
                        struct ArrowSchema* out_schema) {
  ArrowSchemaInit(out_schema);
  if (ArrowSchemaSetTypeStruct(out_schema, 2) != NANOARROW_OK ||
      ArrowSchemaSetType(out_schema->children[0], NANOARROW_TYPE_INT32) != NANOARROW_OK ||
      ArrowSchemaSetName(out_schema->children[0], "_row") != NANOARROW_OK ||
      ArrowSchemaSetType(out_schema->children[1], type) != NANOARROW_OK ||
      ArrowSchemaSetName(out_schema->children[1], name) != NANOARROW_OK)
    return 1;
  if (ArrowArrayInitFromSchema(out, out_schema, NULL) != NANOARROW_OK) return 1;
  return ArrowArrayStartAppending(out) != NANOARROW_OK;
}

static int append_row(struct ArrowArray* out, int64_t parent) {
  return ArrowArrayAppendInt(out->children[0], parent) != NANOARROW_OK ||
         ArrowArrayFinishElement(out) != NANOARROW_OK;
}

static int64_t i64_at(const struct ArrowArray* a, int64_t r) {
  return ((const int64_t*)a->buffers[1])[a->offset + r];
}

/* user: non-NULL for generate_series (stop included). */
static int series(void* user, const struct ArrowArray* args,
                  const struct ArrowSchema* args_schema, struct ArrowArray* out,
                  struct ArrowSchema* out_schema, char* error, size_t error_cap) {
  bool inclusive = user != NULL;
  const char* fname = inclusive ? "generate_series" : "range";
  (void)args_schema;
  if (start_result("value", NANOARROW_TYPE_INT64, out, out_schema) != 0) return 1;
  int64_t made = 0;
  for (int64_t r = 0; r < args->length; r++) {
    int64_t a = i64_at(args->children[0], r), b = i64_at(args->children[1], r);
    int64_t step = args->n_children > 2 ? i64_at(args->children[2], r) : 1;
    if (step == 0) {
      snprintf(error, error_cap, "%s(%lld, %lld, 0): the step must not be 0", fname,
               (long long)a, (long long)b);
      return 1;
    }
    for (int64_t v = a;
         step > 0 ? (inclusive ? v <= b : v < b) : (inclusive ? v >= b : v > b);) {
      if (++made > SERIES_MAX_ROWS) {
        snprintf(error, error_cap,
                 "%s(%lld, %lld, %lld) and the chunk's other rows make more than %d "
                 "rows",
                 fname, (long long)a, (long long)b, (long long)step, SERIES_MAX_ROWS);
        return 1;
      }
      if (ArrowArrayAppendInt(out->children[1], v) != NANOARROW_OK ||
          append_row(out, r) != 0)
        return 1;
      if (__builtin_add_overflow(v, step, &v)) break;
    }
  }
  return ArrowArrayFinishBuildingDefault(out, NULL) != NANOARROW_OK;
}

static struct ArrowStringView str_at(const struct ArrowArray* a, int64_t r) {
  const int32_t* offs = (const int32_t*)a->buffers[1] + a->offset;
  return (struct ArrowStringView){(const char*)a->buffers[2] + offs[r],
                                  offs[r + 1] - offs[r]};
}

/* Bytes of the UTF-8 character starting with byte c (valid input). */
static int64_t utf8_len(unsigned char c) {
  return c < 0x80 ? 1 : c < 0xE0 ? 2 : c < 0xF0 ? 3 : 4;
}

static int split(void* user, const struct ArrowArray* args,
                 const struct ArrowSchema* args_schema, struct ArrowArray* out,
                 struct ArrowSchema* out_schema, char* error, size_t error_cap) {
  (void)user;
  (void)error;
  (void)error_cap;
  (void)args_schema;
  if (start_result("value", NANOARROW_TYPE_STRING, out, out_schema) != 0) return 1;
  for (int64_t r = 0; r < args->length; r++) {
    struct ArrowStringView s = str_at(args->children[0], r);
    struct ArrowStringView sep = str_at(args->children[1], r);
    int64_t at = 0;
    for (;;) {
      int64_t end = s.size_bytes;
      int64_t next = end;
      if (sep.size_bytes == 0) { /* one character per row ('' is one empty row) */
        end = at + (at < s.size_bytes ? utf8_len((unsigned char)s.data[at]) : 0);
        next = end;
      } else {
        for (int64_t i = at; i + sep.size_bytes <= s.size_bytes; i++) {
          if (memcmp(s.data + i, sep.data, (size_t)sep.size_bytes) == 0) {
            end = i;
            next = i + sep.size_bytes;
            break;
          }
        }
      }
      struct ArrowStringView piece = {s.data + at, end - at};
      if (ArrowArrayAppendString(out->children[1], piece) != NANOARROW_OK ||
          append_row(out, r) != 0)
        return 1;
      if (end >= s.size_bytes) break;
      at = next;
    }
  }
  return ArrowArrayFinishBuildingDefault(out, NULL) != NANOARROW_OK;
}

lm_udf* lm_udtf_builtin(const char* name, int32_t nargs, const char* column,
                        bool* out_known) {
  static const char* const l3[] = {"l", "l", "l"};
  static const char* const u2[] = {"u", "u"};
  bool gs = lm_streq_nocase(name, "generate_series");
  bool rg = lm_streq_nocase(name, "range");
  bool sp = lm_streq_nocase(name, "string_split_to_rows");
  *out_known = gs || rg || sp;
  if (!*out_known || (sp && nargs != 2) || (!sp && (nargs < 2 || nargs > 3))) return NULL;
  const char* canon = gs ? "generate_series" : rg ? "range" : "string_split_to_rows";
  struct ArrowSchema cols;
  ArrowSchemaInit(&cols);
  lm_udf* f = NULL;
  if (ArrowSchemaSetTypeStruct(&cols, 1) == NANOARROW_OK &&
      ArrowSchemaSetType(cols.children[0], sp ? NANOARROW_TYPE_STRING
                                              : NANOARROW_TYPE_INT64) == NANOARROW_OK &&
      ArrowSchemaSetName(cols.children[0], column ? column : canon) == NANOARROW_OK) {
    uint32_t flags = LAMINAR_FUNCTION_DETERMINISTIC | LAMINAR_FUNCTION_THREAD_SAFE;
    if (lm_udtf_create(canon, sp ? u2 : l3, nargs, &cols, sp ? split : series,
                       gs ? (void*)&k_inclusive : NULL, NULL, flags, &f,
                       NULL) != LAMINAR_OK)
      f = NULL;
  }
  if (cols.release != NULL) cols.release(&cols);
  return f;
}
