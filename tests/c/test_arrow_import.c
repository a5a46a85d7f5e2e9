/*
 * test_arrow_import.c -- white-box tests of lm_arrow_import (src/arrow): the
 * accepted Arrow types and their lm_vec views, name matching, slices,
 * dictionary vs plain strings, release-exactly-once, and one case per class of
 * malformed input a buggy producer can push (each refused whole, the caller's
 * array left intact and releasable).
 */
#include <inttypes.h>
#include <math.h>
#include <stdbool.h>
#include <string.h>

#include "arrow/arrow.h"
#include "arrow/internal.h"
#include "lm_test.h"
#include "nanoarrow/nanoarrow.h"
#include "util/util.h"

/* CHECK_CODE's `(errp) ? ...` trips gcc's -Waddress on `&err`: pass it through
 * a function. */
static laminar_error* errp(laminar_error* err) { return err; }

/* ------------------------------------------------------------------------------
 * A counting producer: wraps an array's release to count calls.
 * ---------------------------------------------------------------------------- */

typedef struct counted {
  void (*inner)(struct ArrowArray*);
  void* inner_private;
  int* count;
} counted;

static void counted_release(struct ArrowArray* array) {
  counted* c = array->private_data;
  (*c->count)++;
  array->private_data = c->inner_private;
  array->release = c->inner;
  free(c);
  array->release(array);
}

static int count_releases(struct ArrowArray* array, int* count) {
  counted* c = malloc(sizeof *c);
  if (c == NULL) return 1;
  c->inner = array->release;
  c->inner_private = array->private_data;
  c->count = count;
  array->release = counted_release;
  array->private_data = c;
  return 0;
}

/* ------------------------------------------------------------------------------
 * Building pushed batches with nanoarrow
 * ---------------------------------------------------------------------------- */

/* Formats: an Arrow format string, or "dict" / "dictU" for dictionary<int32,
 * utf8 / large_utf8>. */
static int make_schema(struct ArrowSchema* s, int n, const char* const* names,
                       const char* const* formats) {
  ArrowSchemaInit(s);
  if (ArrowSchemaSetTypeStruct(s, n) != 0) return 1;
  for (int i = 0; i < n; i++) {
    struct ArrowSchema* c = s->children[i];
    if (strncmp(formats[i], "dict", 4) == 0) {
      if (ArrowSchemaSetFormat(c, "i") != 0 || ArrowSchemaAllocateDictionary(c) != 0) {
        return 1;
      }
      ArrowSchemaInit(c->dictionary);
      if (ArrowSchemaSetFormat(c->dictionary, formats[i][4] == 'U' ? "U" : "u") != 0) {
        return 1;
      }
    } else if (ArrowSchemaSetFormat(c, formats[i]) != 0) {
      return 1;
    }
    if (ArrowSchemaSetName(c, names[i]) != 0) return 1;
  }
  return 0;
}

static int append_str(struct ArrowArray* a, const char* s) {
  return s != NULL ? ArrowArrayAppendString(a, ArrowCharView(s))
                   : ArrowArrayAppendNull(a, 1);
}

/* The standard batch: 5 rows of (sym, price, qty, ts, ok, n) with some nulls. */
#define NROWS 5
static const char* const kSym[NROWS] = {"AAPL", NULL, "MSFT", "\xc3\xa9\xe2\x82\xac", ""};
static const double kPrice[NROWS] = {1.5, 2.5, 0, 4.5, -0.25};
static const int64_t kQty[NROWS] = {10, 20, 30, 0, -50};
static const int64_t kTs[NROWS] = {1000, 2000, 3000, 4000, -1};
static const int kOk[NROWS] = {1, 0, -1, 1, 0};  // -1: null
static const int32_t kN[NROWS] = {1, 0, 3, 4, 5};
static const bool kPriceNull[NROWS] = {0, 0, 1, 0, 0};
static const bool kQtyNull[NROWS] = {0, 0, 0, 1, 0};
static const bool kNNull[NROWS] = {0, 1, 0, 0, 0};
static const char* const kNames[6] = {"sym", "price", "qty", "ts", "ok", "n"};
enum { SYM, PRICE, QTY, TS, OK, N };

typedef struct fixture {
  lm_schema src;
  struct ArrowSchema schema;
  struct ArrowArray array;
  int releases;
} fixture;

static int build_trades(struct ArrowSchema* schema, struct ArrowArray* array,
                        const char* sym_format, const char* ts_format) {
  const char* formats[6] = {sym_format, "g", "l", ts_format, "b", "i"};
  array->release = NULL;
  if (make_schema(schema, 6, kNames, formats) != 0) return 1;
  if (ArrowArrayInitFromSchema(array, schema, NULL) != 0) return 1;
  if (ArrowArrayStartAppending(array) != 0) return 1;
  struct ArrowArray** c = array->children;
  bool dict = strncmp(sym_format, "dict", 4) == 0;
  if (dict) {
    for (int i = 0; i < NROWS; i++) {
      if (kSym[i] != NULL && append_str(c[SYM]->dictionary, kSym[i]) != 0) return 1;
    }
  }
  int dict_at = 0;
  for (int i = 0; i < NROWS; i++) {
    int rc = 0;
    if (dict) {
      rc |= kSym[i] != NULL ? ArrowArrayAppendInt(c[SYM], dict_at++)
                            : ArrowArrayAppendNull(c[SYM], 1);
    } else {
      rc |= append_str(c[SYM], kSym[i]);
    }
    rc |= kPriceNull[i] ? ArrowArrayAppendNull(c[PRICE], 1)
                        : ArrowArrayAppendDouble(c[PRICE], kPrice[i]);
    rc |= kQtyNull[i] ? ArrowArrayAppendNull(c[QTY], 1)
                      : ArrowArrayAppendInt(c[QTY], kQty[i]);
    rc |= ArrowArrayAppendInt(c[TS], kTs[i]);
    rc |=
        kOk[i] < 0 ? ArrowArrayAppendNull(c[OK], 1) : ArrowArrayAppendInt(c[OK], kOk[i]);
    rc |= kNNull[i] ? ArrowArrayAppendNull(c[N], 1) : ArrowArrayAppendInt(c[N], kN[i]);
    rc |= ArrowArrayFinishElement(array);
    if (rc != 0) return 1;
  }
  return ArrowArrayFinishBuildingDefault(array, NULL) != 0;
}

static int source_trades(lm_schema* src) {
  lm_schema_init_empty(src);
  int rc = 0;
  rc |= lm_schema_add(src, "sym", LM_TYPE_STRING, false);
  rc |= lm_schema_add(src, "price", LM_TYPE_DOUBLE, false);
  rc |= lm_schema_add(src, "qty", LM_TYPE_INT64, false);
  rc |= lm_schema_add(src, "ts", LM_TYPE_TIMESTAMP, false);
  rc |= lm_schema_add(src, "ok", LM_TYPE_BOOL, false);
  rc |= lm_schema_add(src, "n", LM_TYPE_INT32, false);
  return rc != 0;
}

static int fixture_init(fixture* f, const char* sym_format, const char* ts_format) {
  memset(f, 0, sizeof *f);
  if (source_trades(&f->src) != 0) return 1;
  if (build_trades(&f->schema, &f->array, sym_format, ts_format) != 0) return 1;
  return count_releases(&f->array, &f->releases);
}

/* Release what the caller still owns; the array must be released exactly once
 * over the fixture's life. */
static int fixture_done(fixture* f) {
  lm_arrow_release(&f->array);
  lm_arrow_schema_release(&f->schema);
  lm_schema_free(&f->src);
  return f->releases == 1 ? 0 : 1;
}

static bool str_eq(lm_str s, const char* want) {
  return (int64_t)strlen(want) == s.len &&
         (s.len == 0 || memcmp(s.ptr, want, (size_t)s.len) == 0);
}

static bool is_null(const lm_vec* v, int64_t r) {
  return v->nulls != NULL && v->nulls[r];
}

/* The standard batch's values, viewed in source order (row `first` onward). */
static int check_trades(const lm_batch* b, int first, int nrows, int64_t ts_scale_num,
                        int64_t ts_scale_den) {
  CHECK(b->nrows == nrows && b->ncols == 6);
  const lm_vec* v = b->cols;
  for (int r = 0; r < nrows; r++) {
    int i = first + r;
    const lm_str* sym = v[SYM].data;
    if (kSym[i] == NULL) {
      CHECK(is_null(&v[SYM], r));
    } else {
      CHECK(!is_null(&v[SYM], r) && str_eq(sym[r], kSym[i]));
    }
    CHECK(is_null(&v[PRICE], r) == kPriceNull[i]);
    if (!kPriceNull[i]) CHECK(((const double*)v[PRICE].data)[r] == kPrice[i]);
    CHECK(is_null(&v[QTY], r) == kQtyNull[i]);
    if (!kQtyNull[i]) CHECK(((const int64_t*)v[QTY].data)[r] == kQty[i]);
    CHECK(!is_null(&v[TS], r));
    int64_t us = ((const int64_t*)v[TS].data)[r];
    int64_t want = kTs[i] * ts_scale_num;
    if (ts_scale_den > 1) want = (int64_t)floor((double)kTs[i] / (double)ts_scale_den);
    CHECK(us == want);
    CHECK(is_null(&v[OK], r) == (kOk[i] < 0));
    if (kOk[i] >= 0) CHECK(((const uint8_t*)v[OK].data)[r] == kOk[i]);
    CHECK(is_null(&v[N], r) == kNNull[i]);
    if (!kNNull[i]) CHECK(((const int32_t*)v[N].data)[r] == kN[i]);
  }
  CHECK(v[SYM].type == LM_TYPE_STRING && v[PRICE].type == LM_TYPE_DOUBLE);
  CHECK(v[QTY].type == LM_TYPE_INT64 && v[TS].type == LM_TYPE_TIMESTAMP);
  CHECK(v[OK].type == LM_TYPE_BOOL && v[N].type == LM_TYPE_INT32);
  for (int c = 0; c < 6; c++) CHECK(v[c].len == nrows);
  return 0;
}

/* ------------------------------------------------------------------------------
 * Accepted inputs
 * ---------------------------------------------------------------------------- */

static int test_types_and_values(void) {
  fixture f;
  CHECK(fixture_init(&f, "u", "tsu:") == 0);
  struct ArrowArray* price = f.array.children[PRICE];
  const void* price_data = price->buffers[1];
  lm_batch* b = NULL;
  laminar_error err;
  CHECK_CODE(lm_arrow_import(&f.src, "trades", &f.array, &f.schema, &b, &err), LAMINAR_OK,
             errp(&err));
  CHECK(f.array.release == NULL);  // moved
  CHECK(b != NULL && f.releases == 0);
  CHECK(check_trades(b, 0, NROWS, 1, 1) == 0);
  /* Zero-copy: fixed-width data points into the producer's buffer. */
  CHECK(b->cols[PRICE].data == price_data);
  /* Columns without nulls have no null array. */
  CHECK(b->cols[TS].nulls == NULL);
  lm_batch_unref(b);
  CHECK(f.releases == 1);
  return fixture_done(&f);
}

static int test_large_utf8(void) {
  fixture f;
  CHECK(fixture_init(&f, "U", "tsu:") == 0);
  lm_batch* b = NULL;
  laminar_error err;
  CHECK_CODE(lm_arrow_import(&f.src, "trades", &f.array, &f.schema, &b, &err), LAMINAR_OK,
             errp(&err));
  CHECK(check_trades(b, 0, NROWS, 1, 1) == 0);
  lm_batch_unref(b);
  return fixture_done(&f);
}

static int test_dictionary_equals_plain(void) {
  fixture plain, dict;
  CHECK(fixture_init(&plain, "u", "tsu:") == 0);
  CHECK(fixture_init(&dict, "dict", "tsu:") == 0);
  lm_batch *a = NULL, *b = NULL;
  laminar_error err;
  CHECK_CODE(lm_arrow_import(&plain.src, "t", &plain.array, &plain.schema, &a, &err),
             LAMINAR_OK, errp(&err));
  CHECK_CODE(lm_arrow_import(&dict.src, "t", &dict.array, &dict.schema, &b, &err),
             LAMINAR_OK, errp(&err));
  CHECK(check_trades(b, 0, NROWS, 1, 1) == 0);
  const lm_str* sa = a->cols[SYM].data;
  const lm_str* sb = b->cols[SYM].data;
  for (int r = 0; r < NROWS; r++) {
    CHECK(is_null(&a->cols[SYM], r) == is_null(&b->cols[SYM], r));
    if (is_null(&a->cols[SYM], r)) continue;
    CHECK(sa[r].len == sb[r].len);
    CHECK(sa[r].len == 0 || memcmp(sa[r].ptr, sb[r].ptr, (size_t)sa[r].len) == 0);
  }
  /* Dictionary views point into the dictionary's data buffer. */
  const char* ddata = b->array.children[SYM]->dictionary->buffers[2];
  CHECK(sb[0].ptr == ddata);
  lm_batch_unref(a);
  lm_batch_unref(b);
  CHECK(fixture_done(&plain) == 0);
  return fixture_done(&dict);
}

static int test_dictionary_large_values_and_null_value(void) {
  /* dictionary<int32, large_utf8> whose value 1 is NULL: rows using it are null. */
  const char* names[1] = {"s"};
  const char* formats[1] = {"dictU"};
  struct ArrowSchema schema;
  struct ArrowArray array;
  CHECK(make_schema(&schema, 1, names, formats) == 0);
  CHECK(ArrowArrayInitFromSchema(&array, &schema, NULL) == 0);
  CHECK(ArrowArrayStartAppending(&array) == 0);
  struct ArrowArray* c = array.children[0];
  CHECK(append_str(c->dictionary, "x") == 0 && append_str(c->dictionary, NULL) == 0);
  CHECK(append_str(c->dictionary, "zz") == 0);
  int32_t idx[4] = {2, 1, 0, 2};
  for (int i = 0; i < 4; i++) {
    CHECK(ArrowArrayAppendInt(c, idx[i]) == 0 && ArrowArrayFinishElement(&array) == 0);
  }
  CHECK(ArrowArrayFinishBuildingDefault(&array, NULL) == 0);
  lm_schema src;
  lm_schema_init_empty(&src);
  CHECK(lm_schema_add(&src, "S", LM_TYPE_STRING, false) == 0);
  lm_batch* b = NULL;
  laminar_error err;
  CHECK_CODE(lm_arrow_import(&src, "d", &array, &schema, &b, &err), LAMINAR_OK,
             errp(&err));
  const lm_str* s = b->cols[0].data;
  CHECK(b->cols[0].nulls != NULL);
  CHECK(!b->cols[0].nulls[0] && str_eq(s[0], "zz"));
  CHECK(b->cols[0].nulls[1]);
  CHECK(!b->cols[0].nulls[2] && str_eq(s[2], "x"));
  CHECK(!b->cols[0].nulls[3] && str_eq(s[3], "zz"));
  lm_batch_unref(b);
  /* The same with the column NOT NULL is a null violation. */
  lm_schema_free(&src);
  CHECK(lm_schema_add(&src, "s", LM_TYPE_STRING, true) == 0);
  lm_arrow_schema_release(&schema);
  CHECK(make_schema(&schema, 1, names, formats) == 0);
  CHECK(ArrowArrayInitFromSchema(&array, &schema, NULL) == 0);
  CHECK(ArrowArrayStartAppending(&array) == 0);
  c = array.children[0];
  CHECK(append_str(c->dictionary, NULL) == 0 && ArrowArrayAppendInt(c, 0) == 0);
  CHECK(ArrowArrayFinishElement(&array) == 0);
  CHECK(ArrowArrayFinishBuildingDefault(&array, NULL) == 0);
  CHECK_CODE(lm_arrow_import(&src, "d", &array, &schema, &b, &err),
             LAMINAR_ERR_NULL_VIOLATION, errp(&err));
  CHECK(array.release != NULL);
  lm_arrow_release(&array);
  lm_arrow_schema_release(&schema);
  lm_schema_free(&src);
  return 0;
}

static int test_timestamp_units(void) {
  static const struct {
    const char* format;
    int64_t num, den;
  } units[] = {{"tss:", 1000000, 1},
               {"tsm:", 1000, 1},
               {"tsu:", 1, 1},
               {"tsn:", 1, 1000},
               {"tsm:Europe/Paris", 1000, 1}};
  for (size_t u = 0; u < sizeof units / sizeof units[0]; u++) {
    fixture f;
    CHECK(fixture_init(&f, "u", units[u].format) == 0);
    lm_batch* b = NULL;
    laminar_error err;
    CHECK_CODE(lm_arrow_import(&f.src, "t", &f.array, &f.schema, &b, &err), LAMINAR_OK,
               errp(&err));
    CHECK(check_trades(b, 0, NROWS, units[u].num, units[u].den) == 0);
    lm_batch_unref(b);
    CHECK(fixture_done(&f) == 0);
  }
  return 0;
}

static int test_nanoseconds_floor(void) {
  /* ns -> us rounds toward -inf: -1 -> -1, -1000 -> -1, -1001 -> -2, 1999 -> 1. */
  const char* names[1] = {"t"};
  const char* formats[1] = {"tsn:UTC"};
  struct ArrowSchema schema;
  struct ArrowArray array;
  CHECK(make_schema(&schema, 1, names, formats) == 0);
  CHECK(ArrowArrayInitFromSchema(&array, &schema, NULL) == 0);
  CHECK(ArrowArrayStartAppending(&array) == 0);
  const int64_t in[6] = {-1, -1000, -1001, 1999, 0, INT64_MIN};
  const int64_t want[6] = {-1, -1, -2, 1, 0, INT64_MIN / 1000 - 1};
  for (int i = 0; i < 6; i++) {
    CHECK(ArrowArrayAppendInt(array.children[0], in[i]) == 0);
    CHECK(ArrowArrayFinishElement(&array) == 0);
  }
  CHECK(ArrowArrayFinishBuildingDefault(&array, NULL) == 0);
  lm_schema src;
  lm_schema_init_empty(&src);
  CHECK(lm_schema_add(&src, "t", LM_TYPE_TIMESTAMP, true) == 0);
  lm_batch* b = NULL;
  laminar_error err;
  CHECK_CODE(lm_arrow_import(&src, "t", &array, &schema, &b, &err), LAMINAR_OK,
             errp(&err));
  for (int i = 0; i < 6; i++) CHECK(((const int64_t*)b->cols[0].data)[i] == want[i]);
  lm_batch_unref(b);
  lm_arrow_schema_release(&schema);
  lm_schema_free(&src);
  return 0;
}

static int test_any_order_any_case(void) {
  /* Source declares the columns in another order and case than pushed. */
  fixture f;
  CHECK(fixture_init(&f, "u", "tsu:") == 0);
  lm_schema src;
  lm_schema_init_empty(&src);
  CHECK(lm_schema_add(&src, "N", LM_TYPE_INT32, false) == 0);
  CHECK(lm_schema_add(&src, "Ok", LM_TYPE_BOOL, false) == 0);
  CHECK(lm_schema_add(&src, "TS", LM_TYPE_TIMESTAMP, false) == 0);
  CHECK(lm_schema_add(&src, "qty", LM_TYPE_INT64, false) == 0);
  CHECK(lm_schema_add(&src, "PRICE", LM_TYPE_DOUBLE, false) == 0);
  CHECK(lm_schema_add(&src, "Sym", LM_TYPE_STRING, false) == 0);
  lm_batch* b = NULL;
  laminar_error err;
  CHECK_CODE(lm_arrow_import(&src, "t", &f.array, &f.schema, &b, &err), LAMINAR_OK,
             errp(&err));
  CHECK(b->ncols == 6);
  CHECK(b->cols[0].type == LM_TYPE_INT32 && ((const int32_t*)b->cols[0].data)[2] == 3);
  CHECK(b->cols[5].type == LM_TYPE_STRING &&
        str_eq(((const lm_str*)b->cols[5].data)[0], "AAPL"));
  CHECK(b->cols[4].type == LM_TYPE_DOUBLE && ((const double*)b->cols[4].data)[3] == 4.5);
  lm_batch_unref(b);
  lm_schema_free(&src);
  return fixture_done(&f);
}

static int test_sliced_struct_offset(void) {
  /* Struct offset 1, length 3: rows 1..3 of every column. */
  for (int dict = 0; dict < 2; dict++) {
    fixture f;
    CHECK(fixture_init(&f, dict ? "dict" : "u", "tsm:") == 0);
    f.array.offset = 1;
    f.array.length = 3;
    lm_batch* b = NULL;
    laminar_error err;
    CHECK_CODE(lm_arrow_import(&f.src, "t", &f.array, &f.schema, &b, &err), LAMINAR_OK,
               errp(&err));
    CHECK(check_trades(b, 1, 3, 1000, 1) == 0);
    lm_batch_unref(b);
    CHECK(fixture_done(&f) == 0);
  }
  return 0;
}

static int test_sliced_child_offsets(void) {
  /* Each child sliced by one (offset 1, length 4), null counts unknown (-1). */
  fixture f;
  CHECK(fixture_init(&f, "u", "tsu:") == 0);
  for (int c = 0; c < 6; c++) {
    f.array.children[c]->offset = 1;
    f.array.children[c]->length = 4;
    f.array.children[c]->null_count = -1;
  }
  f.array.length = 4;
  f.array.null_count = -1;
  lm_batch* b = NULL;
  laminar_error err;
  CHECK_CODE(lm_arrow_import(&f.src, "t", &f.array, &f.schema, &b, &err), LAMINAR_OK,
             errp(&err));
  CHECK(check_trades(b, 1, 4, 1, 1) == 0);
  /* Slice past the only null of 'n' (row 1): no null array for it. */
  lm_batch_unref(b);
  CHECK(fixture_done(&f) == 0);

  CHECK(fixture_init(&f, "u", "tsu:") == 0);
  struct ArrowArray* n = f.array.children[N];
  n->offset = 2;
  n->length = 3;
  n->null_count = 0;
  f.array.length = 3;
  for (int c = 0; c < 6; c++) {
    if (c != N) f.array.children[c]->length = 5;
  }
  CHECK_CODE(lm_arrow_import(&f.src, "t", &f.array, &f.schema, &b, &err), LAMINAR_OK,
             errp(&err));
  CHECK(b->cols[N].nulls == NULL);
  CHECK(((const int32_t*)b->cols[N].data)[0] == 3);
  lm_batch_unref(b);
  return fixture_done(&f);
}

static int test_unknown_null_count_without_bitmap(void) {
  fixture f;
  CHECK(fixture_init(&f, "u", "tsu:") == 0);
  struct ArrowArray* ts = f.array.children[TS];
  CHECK(ts->buffers[0] == NULL);
  ts->null_count = -1;
  lm_batch* b = NULL;
  laminar_error err;
  CHECK_CODE(lm_arrow_import(&f.src, "t", &f.array, &f.schema, &b, &err), LAMINAR_OK,
             errp(&err));
  CHECK(b->cols[TS].nulls == NULL);
  lm_batch_unref(b);
  return fixture_done(&f);
}

static int test_bool_unaligned_bits(void) {
  /* 20 booleans, viewed from bit offset 3 (not a byte boundary). */
  const char* names[1] = {"b"};
  const char* formats[1] = {"b"};
  struct ArrowSchema schema;
  struct ArrowArray array;
  CHECK(make_schema(&schema, 1, names, formats) == 0);
  CHECK(ArrowArrayInitFromSchema(&array, &schema, NULL) == 0);
  CHECK(ArrowArrayStartAppending(&array) == 0);
  for (int i = 0; i < 20; i++) {
    int rc = i % 7 == 0 ? ArrowArrayAppendNull(array.children[0], 1)
                        : ArrowArrayAppendInt(array.children[0], i % 3 == 0);
    CHECK(rc == 0 && ArrowArrayFinishElement(&array) == 0);
  }
  CHECK(ArrowArrayFinishBuildingDefault(&array, NULL) == 0);
  array.offset = 3;
  array.length = 17;
  lm_schema src;
  lm_schema_init_empty(&src);
  CHECK(lm_schema_add(&src, "b", LM_TYPE_BOOL, false) == 0);
  lm_batch* b = NULL;
  laminar_error err;
  CHECK_CODE(lm_arrow_import(&src, "t", &array, &schema, &b, &err), LAMINAR_OK,
             errp(&err));
  for (int r = 0; r < 17; r++) {
    int i = r + 3;
    CHECK(is_null(&b->cols[0], r) == (i % 7 == 0));
    if (i % 7 != 0) CHECK(((const uint8_t*)b->cols[0].data)[r] == (i % 3 == 0));
  }
  lm_batch_unref(b);
  lm_arrow_schema_release(&schema);
  lm_schema_free(&src);
  return 0;
}

static int test_empty_batch(void) {
  const char* names[2] = {"s", "v"};
  const char* formats[2] = {"u", "l"};
  struct ArrowSchema schema;
  struct ArrowArray array;
  CHECK(make_schema(&schema, 2, names, formats) == 0);
  CHECK(ArrowArrayInitFromSchema(&array, &schema, NULL) == 0);
  CHECK(ArrowArrayStartAppending(&array) == 0);
  CHECK(ArrowArrayFinishBuildingDefault(&array, NULL) == 0);
  lm_schema src;
  lm_schema_init_empty(&src);
  CHECK(lm_schema_add(&src, "s", LM_TYPE_STRING, true) == 0);
  CHECK(lm_schema_add(&src, "v", LM_TYPE_INT64, true) == 0);
  lm_batch* b = NULL;
  laminar_error err;
  CHECK_CODE(lm_arrow_import(&src, "t", &array, &schema, &b, &err), LAMINAR_OK,
             errp(&err));
  CHECK(b->nrows == 0 && b->cols[0].len == 0 && b->cols[1].len == 0);
  lm_batch_unref(b);
  lm_arrow_schema_release(&schema);
  lm_schema_free(&src);
  return 0;
}

static int test_release_exactly_once(void) {
  fixture f;
  CHECK(fixture_init(&f, "dict", "tsn:") == 0);
  lm_batch* b = NULL;
  laminar_error err;
  CHECK_CODE(lm_arrow_import(&f.src, "t", &f.array, &f.schema, &b, &err), LAMINAR_OK,
             errp(&err));
  lm_batch_ref(b);
  lm_batch_ref(b);
  lm_batch_unref(b);
  lm_batch_unref(b);
  CHECK(f.releases == 0);  // one reference left
  lm_batch_unref(b);
  CHECK(f.releases == 1);
  lm_batch_unref(NULL);  // no-op
  return fixture_done(&f);
}

/* ------------------------------------------------------------------------------
 * Refused inputs: each returns its code, names what is wrong, moves nothing
 * and releases nothing.
 * ---------------------------------------------------------------------------- */

static int expect_refused(fixture* f, laminar_code code, const char* column,
                          const char* needle) {
  lm_batch* b = (lm_batch*)&b;  // poison: must come back NULL
  laminar_error err;
  lm_error_clear(errp(&err));
  laminar_code rc =
      lm_arrow_import(&f->src, "trades", &f->array, &f->schema, &b, errp(&err));
  if (rc != code) {
    fprintf(stderr, "import returned %d, want %d: %s\n", (int)rc, (int)code, err.message);
    if (rc == LAMINAR_OK) lm_batch_unref(b);
    return 1;
  }
  if (getenv("LM_TEST_VERBOSE") != NULL) fprintf(stderr, "  %s\n", err.message);
  CHECK(b == NULL);
  CHECK(err.code == code);
  char prefix[32];
  snprintf(prefix, sizeof prefix, "LDB-%04d: ", (int)code);
  CHECK(strncmp(err.message, prefix, strlen(prefix)) == 0);
  CHECK(strstr(err.message, "source 'trades'") != NULL);
  CHECK(strcmp(err.object, "trades") == 0);
  if (column != NULL) {
    char want[160];
    snprintf(want, sizeof want, "column '%s'", column);
    if (strstr(err.message, want) == NULL || strcmp(err.column_name, column) != 0) {
      fprintf(stderr, "message lacks %s: %s\n", want, err.message);
      return 1;
    }
  }
  if (needle != NULL && strstr(err.message, needle) == NULL) {
    fprintf(stderr, "message lacks '%s': %s\n", needle, err.message);
    return 1;
  }
  CHECK(f->array.release != NULL);  // untouched, still the caller's
  CHECK(f->releases == 0);
  return 0;
}

/* A refused import of a mutated fixture, the mutation undone, then proof that
 * the same array now imports and releases exactly once. */
#define REFUSE(f, code, column, needle)                       \
  do {                                                        \
    int r_ = expect_refused((f), (code), (column), (needle)); \
    if (r_ != 0) return r_;                                   \
  } while (0)

static int import_then_done(fixture* f) {
  lm_batch* b = NULL;
  laminar_error err;
  CHECK_CODE(lm_arrow_import(&f->src, "trades", &f->array, &f->schema, &b, &err),
             LAMINAR_OK, errp(&err));
  lm_batch_unref(b);
  return fixture_done(f);
}

/* The array kept for the async WAL's writer (lm_arrow_import_kept): a second
 * view has the same values as the batch's, also once that batch is gone,
 * for every kind of column (views made, dictionaries resolved, timestamps
 * scaled, a sliced struct); the producer's release runs once, after the last
 * of the batch, the kept handle and the second view let go, in any order. */
static int test_kept_view_again(void) {
  static const struct {
    const char *sym, *ts;
    int64_t num, den;
    bool sliced;
  } kinds[] = {{"u", "tsu:", 1, 1, false},
               {"dict", "tsm:", 1000, 1, false},
               {"U", "tsn:", 1, 1000, false},
               {"dictU", "tss:", 1000000, 1, true}};
  for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++) {
    for (int order = 0; order < 3; order++) {
      fixture f;
      CHECK(fixture_init(&f, kinds[i].sym, kinds[i].ts) == 0);
      int first = 0, nrows = NROWS;
      if (kinds[i].sliced) {
        f.array.offset = first = 1;
        f.array.length = nrows = 3;
      }
      lm_batch *b = NULL, *again = NULL;
      lm_arrow_kept* k = NULL;
      laminar_error err;
      CHECK_CODE(lm_arrow_import_kept(&f.src, "t", &f.array, &f.schema, &b, &k, &err),
                 LAMINAR_OK, errp(&err));
      CHECK(k != NULL && f.array.release == NULL);
      lm_arrow_kept_share(k, b);
      CHECK(check_trades(b, first, nrows, kinds[i].num, kinds[i].den) == 0);
      if (order == 0) { /* the engine first, then the writer: as the WAL does */
        lm_batch_unref(b);
        CHECK(f.releases == 0);
        CHECK_CODE(lm_arrow_kept_view(k, &again, &err), LAMINAR_OK, errp(&err));
        lm_arrow_kept_free(k);
        CHECK(check_trades(again, first, nrows, kinds[i].num, kinds[i].den) == 0);
        CHECK(f.releases == 0);
        lm_batch_unref(again);
      } else { /* the writer while the engine still holds the batch */
        CHECK_CODE(lm_arrow_kept_view(k, &again, &err), LAMINAR_OK, errp(&err));
        CHECK(again != b && again->cols[SYM].data != b->cols[SYM].data);
        lm_arrow_kept_free(k);
        lm_batch_unref(order == 1 ? again : b);
        CHECK(f.releases == 0);
        lm_batch* last = order == 1 ? b : again;
        CHECK(check_trades(last, first, nrows, kinds[i].num, kinds[i].den) == 0);
        lm_batch_unref(last);
      }
      CHECK(fixture_done(&f) == 0); /* released exactly once */
    }
  }
  return 0;
}

/* A kept handle never shared (the push failed before its record) lets go of
 * nothing of the batch's; a share undone (the record could not be appended)
 * gives the batch the producer's very array back, to hand back to the
 * caller untouched; a refused import keeps nothing. */
static int test_kept_unshared_and_refused(void) {
  fixture f;
  CHECK(fixture_init(&f, "u", "tsu:") == 0);
  lm_batch* b = NULL;
  lm_arrow_kept* k = NULL;
  laminar_error err;
  CHECK_CODE(lm_arrow_import_kept(&f.src, "t", &f.array, &f.schema, &b, &k, &err),
             LAMINAR_OK, errp(&err));
  lm_arrow_kept_free(k);
  lm_arrow_kept_free(NULL);
  CHECK(f.releases == 0 && check_trades(b, 0, NROWS, 1, 1) == 0);
  lm_batch_unref(b);
  CHECK(fixture_done(&f) == 0);

  CHECK(fixture_init(&f, "dict", "tsm:") == 0);
  void (*release)(struct ArrowArray*) = f.array.release;
  void* private_data = f.array.private_data;
  CHECK_CODE(lm_arrow_import_kept(&f.src, "t", &f.array, &f.schema, &b, &k, &err),
             LAMINAR_OK, errp(&err));
  lm_arrow_kept_share(k, b);
  CHECK(b->array.release != release);
  lm_arrow_kept_unshare(k, b);
  CHECK(b->array.release == release && b->array.private_data == private_data);
  lm_arrow_kept_free(k);
  CHECK(f.releases == 0 && check_trades(b, 0, NROWS, 1000, 1) == 0);
  lm_arrow_move(&b->array, &f.array); /* handed back, as a failed push does */
  lm_batch_unref(b);
  CHECK(f.releases == 0 && f.array.release == release);
  CHECK(fixture_done(&f) == 0);

  CHECK(fixture_init(&f, "u", "tsu:") == 0);
  f.array.children[PRICE]->length = 2; /* shorter than the struct */
  k = (lm_arrow_kept*)&k;              /* poison: must come back NULL */
  CHECK_CODE(lm_arrow_import_kept(&f.src, "t", &f.array, &f.schema, &b, &k, &err),
             LAMINAR_ERR_ARROW_INVALID, errp(&err));
  CHECK(k == NULL && b == NULL && f.array.release != NULL && f.releases == 0);
  f.array.children[PRICE]->length = NROWS;
  return import_then_done(&f);
}

static int test_refuse_released_array(void) {
  fixture f;
  CHECK(fixture_init(&f, "u", "tsu:") == 0);
  void (*release)(struct ArrowArray*) = f.array.release;
  f.array.release = NULL;
  lm_batch* b = NULL;
  laminar_error err;
  CHECK_CODE(lm_arrow_import(&f.src, "trades", &f.array, &f.schema, &b, &err),
             LAMINAR_ERR_ARROW_RELEASED, errp(&err));
  CHECK(b == NULL && f.releases == 0);
  f.array.release = release;
  return import_then_done(&f);
}

static int test_refuse_released_schema(void) {
  fixture f;
  CHECK(fixture_init(&f, "u", "tsu:") == 0);
  void (*release)(struct ArrowSchema*) = f.schema.release;
  f.schema.release = NULL;
  REFUSE(&f, LAMINAR_ERR_ARROW_RELEASED, NULL, "schema is released");
  f.schema.release = release;
  return import_then_done(&f);
}

static int test_refuse_bad_format(void) {
  fixture f;
  CHECK(fixture_init(&f, "u", "tsu:") == 0);
  CHECK(ArrowSchemaSetFormat(f.schema.children[PRICE], "zz") == 0);
  REFUSE(&f, LAMINAR_ERR_ARROW_INVALID, "price", "format");
  CHECK(ArrowSchemaSetFormat(f.schema.children[PRICE], "g") == 0);
  return import_then_done(&f);
}

static int test_refuse_not_a_struct(void) {
  fixture f;
  CHECK(fixture_init(&f, "u", "tsu:") == 0);
  struct ArrowSchema* top = &f.schema;
  CHECK(ArrowSchemaSetFormat(top, "+l") == 0);  // a list needs exactly one child
  REFUSE(&f, LAMINAR_ERR_ARROW_INVALID, NULL, "pushed schema");
  CHECK(ArrowSchemaSetFormat(top, "+s") == 0);
  /* Schema children pointer NULL with n_children > 0. */
  struct ArrowSchema** children = top->children;
  top->children = NULL;
  REFUSE(&f, LAMINAR_ERR_ARROW_INVALID, NULL, "schema");
  top->children = children;
  return import_then_done(&f);
}

static int test_refuse_wrong_n_buffers(void) {
  fixture f;
  CHECK(fixture_init(&f, "u", "tsu:") == 0);
  f.array.children[QTY]->n_buffers = 3;  // int64 has 2
  REFUSE(&f, LAMINAR_ERR_ARROW_INVALID, "qty", "buffers");
  f.array.children[QTY]->n_buffers = 1;
  REFUSE(&f, LAMINAR_ERR_ARROW_INVALID, "qty", "buffers");
  f.array.children[QTY]->n_buffers = 2;
  f.array.children[SYM]->n_buffers = 2;  // utf8 has 3
  REFUSE(&f, LAMINAR_ERR_ARROW_INVALID, "sym", "buffers");
  f.array.children[SYM]->n_buffers = 3;
  f.array.n_buffers = 0;  // struct has 1
  REFUSE(&f, LAMINAR_ERR_ARROW_INVALID, NULL, "struct array");
  f.array.n_buffers = 1;
  return import_then_done(&f);
}

static int test_refuse_null_buffer(void) {
  fixture f;
  CHECK(fixture_init(&f, "u", "tsu:") == 0);
  const void** bufs = f.array.children[QTY]->buffers;
  const void* data = bufs[1];
  bufs[1] = NULL;  // int64 values missing with length 5
  REFUSE(&f, LAMINAR_ERR_ARROW_INVALID, "qty", NULL);
  bufs[1] = data;
  /* The buffers array itself NULL. */
  const void** ok_bufs = f.array.children[OK]->buffers;
  f.array.children[OK]->buffers = NULL;
  REFUSE(&f, LAMINAR_ERR_ARROW_INVALID, "ok", "buffers array is NULL");
  f.array.children[OK]->buffers = ok_bufs;
  return import_then_done(&f);
}

static int test_refuse_short_child(void) {
  fixture f;
  CHECK(fixture_init(&f, "u", "tsu:") == 0);
  f.array.children[N]->length = 4;  // shorter than the struct
  REFUSE(&f, LAMINAR_ERR_ARROW_INVALID, "n", "shorter");
  f.array.children[N]->length = 5;
  f.array.offset = 1;  // struct offset + length beyond the children
  REFUSE(&f, LAMINAR_ERR_ARROW_INVALID, NULL, NULL);
  f.array.offset = 0;
  return import_then_done(&f);
}

static int test_refuse_offsets_beyond_data(void) {
  fixture f;
  CHECK(fixture_init(&f, "u", "tsu:") == 0);
  const void** bufs = f.array.children[SYM]->buffers;
  const void* data = bufs[2];
  bufs[2] = NULL;  // offsets say 11 bytes, the data buffer is absent
  REFUSE(&f, LAMINAR_ERR_ARROW_INVALID, "sym", "buffer 2");
  bufs[2] = data;
  int32_t* offsets = (int32_t*)bufs[1];
  offsets[0] = -3;  // first offset before the data
  REFUSE(&f, LAMINAR_ERR_ARROW_INVALID, "sym", "first offset");
  offsets[0] = 0;
  int32_t last = offsets[NROWS];
  offsets[NROWS] = -1;
  REFUSE(&f, LAMINAR_ERR_ARROW_INVALID, "sym", "last offset");
  offsets[NROWS] = last;
  return import_then_done(&f);
}

static int test_refuse_non_monotone_offsets(void) {
  fixture f;
  CHECK(fixture_init(&f, "u", "tsu:") == 0);
  int32_t* offsets = (int32_t*)f.array.children[SYM]->buffers[1];
  int32_t save = offsets[2];
  offsets[2] = 1;  // [0, 4, 1, 8, ...]
  REFUSE(&f, LAMINAR_ERR_ARROW_INVALID, "sym", "Expected element size >= 0");
  offsets[2] = save;
  return import_then_done(&f);
}

static int test_refuse_negative_length_offset(void) {
  fixture f;
  CHECK(fixture_init(&f, "u", "tsu:") == 0);
  f.array.length = -1;
  REFUSE(&f, LAMINAR_ERR_ARROW_INVALID, NULL, "length");
  f.array.length = NROWS;
  f.array.children[PRICE]->offset = -2;
  REFUSE(&f, LAMINAR_ERR_ARROW_INVALID, "price", "offset");
  f.array.children[PRICE]->offset = 0;
  f.array.children[PRICE]->length = -5;
  REFUSE(&f, LAMINAR_ERR_ARROW_INVALID, "price", "length");
  f.array.children[PRICE]->length = NROWS;
  f.array.offset = INT64_MAX;  // offset + length overflows
  REFUSE(&f, LAMINAR_ERR_ARROW_INVALID, NULL, NULL);
  f.array.offset = 0;
  return import_then_done(&f);
}

static int test_refuse_wrong_null_count(void) {
  fixture f;
  CHECK(fixture_init(&f, "u", "tsu:") == 0);
  struct ArrowArray* price = f.array.children[PRICE];
  CHECK(price->null_count == 1);
  price->null_count = 0;  // the bitmap says 1
  REFUSE(&f, LAMINAR_ERR_ARROW_INVALID, "price", "null_count is 0");
  price->null_count = 3;
  REFUSE(&f, LAMINAR_ERR_ARROW_INVALID, "price", "null_count is 3");
  price->null_count = -7;
  REFUSE(&f, LAMINAR_ERR_ARROW_INVALID, "price", "null_count");
  price->null_count = -1;  // unknown: fine, computed
  lm_batch* b = NULL;
  laminar_error err;
  CHECK_CODE(lm_arrow_import(&f.src, "trades", &f.array, &f.schema, &b, &err), LAMINAR_OK,
             errp(&err));
  CHECK(b->cols[PRICE].nulls != NULL && b->cols[PRICE].nulls[2] == 1);
  lm_batch_unref(b);
  return fixture_done(&f);
}

static int test_refuse_null_count_without_bitmap(void) {
  fixture f;
  CHECK(fixture_init(&f, "u", "tsu:") == 0);
  struct ArrowArray* ts = f.array.children[TS];
  CHECK(ts->buffers[0] == NULL);
  ts->null_count = 2;
  REFUSE(&f, LAMINAR_ERR_ARROW_INVALID, "ts", "no validity bitmap");
  ts->null_count = 0;
  return import_then_done(&f);
}

static int test_refuse_invalid_utf8(void) {
  static const char* bad[] = {
      "\xff",              // never valid
      "\xc0\x80",          // overlong NUL
      "\xed\xa0\x80",      // surrogate U+D800
      "\xf4\x90\x80\x80",  // > U+10FFFF
      "\xe2\x82",          // truncated
      "abcdefgh\x80",      // stray continuation after an ASCII run
  };
  for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
    for (int dict = 0; dict < 2; dict++) {
      const char* names[1] = {"s"};
      const char* formats[1] = {dict ? "dict" : "u"};
      fixture f;
      memset(&f, 0, sizeof f);
      lm_schema_init_empty(&f.src);
      CHECK(lm_schema_add(&f.src, "s", LM_TYPE_STRING, false) == 0);
      CHECK(make_schema(&f.schema, 1, names, formats) == 0);
      CHECK(ArrowArrayInitFromSchema(&f.array, &f.schema, NULL) == 0);
      CHECK(ArrowArrayStartAppending(&f.array) == 0);
      struct ArrowArray* c = f.array.children[0];
      struct ArrowArray* values = dict ? c->dictionary : c;
      CHECK(append_str(values, "ok") == 0 && append_str(values, bad[k]) == 0);
      if (dict) CHECK(ArrowArrayAppendInt(c, 0) == 0 && ArrowArrayAppendInt(c, 0) == 0);
      f.array.length = 2;
      CHECK(ArrowArrayFinishBuildingDefault(&f.array, NULL) == 0);
      CHECK(count_releases(&f.array, &f.releases) == 0);
      REFUSE(&f, LAMINAR_ERR_ARROW_INVALID, "s", "UTF-8");
      CHECK(fixture_done(&f) == 0);
    }
  }
  /* A broken value is found and named by its row. */
  fixture f;
  CHECK(fixture_init(&f, "u", "tsu:") == 0);
  struct ArrowArray* sym = f.array.children[SYM];
  uint8_t* data = (uint8_t*)sym->buffers[2];
  int32_t* offsets = (int32_t*)sym->buffers[1];
  data[5] = 0xFF;  // row 2 is "MSFT": break it
  REFUSE(&f, LAMINAR_ERR_ARROW_INVALID, "sym", "invalid UTF-8 in value 2");
  data[5] = 'S';
  /* Invalid bytes under a null slot are not looked at: make null row 1 cover
   * "AAPL" (row 0 becomes empty) and break those bytes. */
  CHECK(offsets[1] == 4 && offsets[2] == 4);
  offsets[1] = 0;
  data[0] = 0xFF;
  return import_then_done(&f);
}

static int test_refuse_dictionary_index(void) {
  fixture f;
  CHECK(fixture_init(&f, "dict", "tsu:") == 0);
  struct ArrowArray* sym = f.array.children[SYM];
  int32_t* idx = (int32_t*)sym->buffers[1];
  int32_t save = idx[2];
  idx[2] = 4;  // dictionary has 4 values
  REFUSE(&f, LAMINAR_ERR_ARROW_INVALID, "sym", "dictionary index");
  idx[2] = -1;
  REFUSE(&f, LAMINAR_ERR_ARROW_INVALID, "sym", "dictionary index");
  idx[2] = save;
  idx[1] = 99;  // row 1 is null: its index is never looked at
  struct ArrowArray* dictionary = sym->dictionary;
  sym->dictionary = NULL;  // dictionary member missing
  REFUSE(&f, LAMINAR_ERR_ARROW_INVALID, "sym", "dictionary");
  sym->dictionary = dictionary;
  return import_then_done(&f);
}

static int test_refuse_missing_column(void) {
  fixture f;
  CHECK(fixture_init(&f, "u", "tsu:") == 0);
  CHECK(lm_schema_add(&f.src, "venue", LM_TYPE_STRING, false) == 0);
  REFUSE(&f, LAMINAR_ERR_SCHEMA_MISMATCH, "venue", "missing");
  lm_schema_free(&f.src);
  CHECK(source_trades(&f.src) == 0);
  return import_then_done(&f);
}

static int test_refuse_extra_column(void) {
  fixture f;
  CHECK(fixture_init(&f, "u", "tsu:") == 0);
  lm_schema_free(&f.src);
  lm_schema_init_empty(&f.src);
  for (int c = 0; c < 5; c++) {  // no 'n'
    lm_type types[5] = {LM_TYPE_STRING, LM_TYPE_DOUBLE, LM_TYPE_INT64, LM_TYPE_TIMESTAMP,
                        LM_TYPE_BOOL};
    CHECK(lm_schema_add(&f.src, kNames[c], types[c], false) == 0);
  }
  REFUSE(&f, LAMINAR_ERR_SCHEMA_MISMATCH, "n", "not a column of the source");
  lm_schema_free(&f.src);
  CHECK(source_trades(&f.src) == 0);
  /* The same name twice (case-insensitive) is refused too. */
  CHECK(ArrowSchemaSetName(f.schema.children[QTY], "PRICE") == 0);
  REFUSE(&f, LAMINAR_ERR_SCHEMA_MISMATCH, "price", "more than once");
  CHECK(ArrowSchemaSetName(f.schema.children[QTY], "qty") == 0);
  return import_then_done(&f);
}

static int test_refuse_wrong_type(void) {
  fixture f;
  CHECK(fixture_init(&f, "u", "tsu:") == 0);
  f.src.fields[PRICE].type = LM_TYPE_INT64;
  REFUSE(&f, LAMINAR_ERR_COLUMN_TYPE, "price",
         "LDB-3004: source 'trades': column 'price' expects BIGINT, got double");
  f.src.fields[PRICE].type = LM_TYPE_DOUBLE;
  f.src.fields[SYM].type = LM_TYPE_DOUBLE;
  REFUSE(&f, LAMINAR_ERR_COLUMN_TYPE, "sym", "expects DOUBLE, got utf8");
  f.src.fields[SYM].type = LM_TYPE_STRING;
  f.src.fields[N].type = LM_TYPE_INT64;  // int32 does not widen
  REFUSE(&f, LAMINAR_ERR_COLUMN_TYPE, "n", "expects BIGINT, got int32");
  f.src.fields[N].type = LM_TYPE_INT32;
  f.src.fields[TS].type = LM_TYPE_INT64;
  REFUSE(&f, LAMINAR_ERR_COLUMN_TYPE, "ts", "got timestamp[us]");
  f.src.fields[TS].type = LM_TYPE_TIMESTAMP;
  return import_then_done(&f);
}

static int test_refuse_dictionary_wrong_index_type(void) {
  const char* names[1] = {"s"};
  const char* formats[1] = {"dict"};
  fixture f;
  memset(&f, 0, sizeof f);
  lm_schema_init_empty(&f.src);
  CHECK(lm_schema_add(&f.src, "s", LM_TYPE_STRING, false) == 0);
  CHECK(make_schema(&f.schema, 1, names, formats) == 0);
  CHECK(ArrowArrayInitFromSchema(&f.array, &f.schema, NULL) == 0);
  CHECK(ArrowArrayStartAppending(&f.array) == 0);
  CHECK(ArrowArrayFinishBuildingDefault(&f.array, NULL) == 0);
  CHECK(count_releases(&f.array, &f.releases) == 0);
  CHECK(ArrowSchemaSetFormat(f.schema.children[0], "c") == 0);  // int8 indices
  REFUSE(&f, LAMINAR_ERR_COLUMN_TYPE, "s", "dictionary<values=utf8, indices=int8>");
  CHECK(ArrowSchemaSetFormat(f.schema.children[0], "i") == 0);
  CHECK(ArrowSchemaSetFormat(f.schema.children[0]->dictionary, "l") == 0);
  REFUSE(&f, LAMINAR_ERR_COLUMN_TYPE, "s", "dictionary<values=int64, indices=int32>");
  CHECK(ArrowSchemaSetFormat(f.schema.children[0]->dictionary, "u") == 0);
  return import_then_done(&f);
}

static int test_refuse_null_in_not_null(void) {
  fixture f;
  CHECK(fixture_init(&f, "u", "tsu:") == 0);
  f.src.fields[QTY].not_null = true;
  REFUSE(&f, LAMINAR_ERR_NULL_VIOLATION, "qty", "row 3");
  f.src.fields[QTY].not_null = false;
  f.src.fields[TS].not_null = true;  // ts has no nulls: fine
  return import_then_done(&f);
}

static int test_refuse_struct_nulls(void) {
  fixture f;
  CHECK(fixture_init(&f, "u", "tsu:") == 0);
  uint8_t bits = 0x1D;  // rows 0,2,3,4 valid; row 1 null
  const void** bufs = f.array.buffers;
  bufs[0] = &bits;
  f.array.null_count = 1;
  REFUSE(&f, LAMINAR_ERR_ARROW_INVALID, NULL, "top-level null");
  bits = 0x1F;  // all valid: accepted
  f.array.null_count = 0;
  lm_batch* b = NULL;
  laminar_error err;
  CHECK_CODE(lm_arrow_import(&f.src, "trades", &f.array, &f.schema, &b, &err), LAMINAR_OK,
             errp(&err));
  b->array.buffers[0] = NULL;  // `bits` dies with this frame: forget it
  lm_batch_unref(b);
  return fixture_done(&f);
}

static int test_refuse_children_shape(void) {
  fixture f;
  CHECK(fixture_init(&f, "u", "tsu:") == 0);
  f.array.n_children = 5;
  REFUSE(&f, LAMINAR_ERR_ARROW_INVALID, NULL, "children");
  f.array.n_children = 6;
  struct ArrowArray* child = f.array.children[OK];
  f.array.children[OK] = NULL;
  REFUSE(&f, LAMINAR_ERR_ARROW_INVALID, NULL, "child 4 is NULL");
  f.array.children[OK] = child;
  child->n_children = 1;  // a bool has no children
  REFUSE(&f, LAMINAR_ERR_ARROW_INVALID, "ok", "children");
  child->n_children = 0;
  return import_then_done(&f);
}

static int test_refuse_misaligned_buffer(void) {
  fixture f;
  CHECK(fixture_init(&f, "u", "tsu:") == 0);
  const void** bufs = f.array.children[QTY]->buffers;
  const void* data = bufs[1];
  bufs[1] = (const uint8_t*)data + 1;
  REFUSE(&f, LAMINAR_ERR_ARROW_INVALID, "qty", "aligned");
  bufs[1] = data;
  return import_then_done(&f);
}

static int test_refuse_timestamp_overflow(void) {
  fixture f;
  CHECK(fixture_init(&f, "u", "tss:") == 0);
  int64_t* ts = (int64_t*)f.array.children[TS]->buffers[1];
  int64_t save = ts[4];
  ts[4] = INT64_MAX / 1000;  // seconds -> microseconds overflows
  REFUSE(&f, LAMINAR_ERR_COLUMN_TYPE, "ts", "overflows");
  ts[4] = save;
  return import_then_done(&f);
}

static int test_refuse_misuse(void) {
  fixture f;
  CHECK(fixture_init(&f, "u", "tsu:") == 0);
  lm_batch* b = NULL;
  laminar_error err;
  CHECK_CODE(lm_arrow_import(&f.src, "t", &f.array, NULL, &b, &err), LAMINAR_ERR_MISUSE,
             errp(&err));
  CHECK_CODE(lm_arrow_import(&f.src, "t", NULL, &f.schema, &b, &err), LAMINAR_ERR_MISUSE,
             errp(&err));
  CHECK(f.array.release != NULL);
  /* err may be NULL. */
  f.src.fields[N].type = LM_TYPE_BOOL;
  CHECK(lm_arrow_import(&f.src, "t", &f.array, &f.schema, &b, NULL) ==
        LAMINAR_ERR_COLUMN_TYPE);
  f.src.fields[N].type = LM_TYPE_INT32;
  return import_then_done(&f);
}

/* Matching a push's columns to the source's by name costs O(columns): the
 * comparisons made stay within a small multiple of the column count, with the
 * columns in the source's order, reversed and shuffled (a scan of the source
 * per column makes ~n^2/4 of them: 4M here, and 0.6 s of CPU per 1-row push at
 * 16k columns; bench/bench_wide_push.c times it). Names differ in case. */
static int test_wide_match_linear(void) {
  enum { WIDE = 4096 };
  lm_schema src;
  lm_schema_init_empty(&src);
  char name[32];
  for (int i = 0; i < WIDE; i++) {
    snprintf(name, sizeof name, "Col_%d", i);
    CHECK(lm_schema_add(&src, name, LM_TYPE_INT64, false) == 0);
  }
  static int order[WIDE];
  uint64_t x = lm_test_seed() | 1;
  for (int variant = 0; variant < 3; variant++) {
    for (int i = 0; i < WIDE; i++) order[i] = variant == 1 ? WIDE - 1 - i : i;
    for (int i = WIDE - 1; variant == 2 && i > 0; i--) {
      x ^= x << 13, x ^= x >> 7, x ^= x << 17;  // xorshift64
      int k = (int)(x % (uint64_t)(i + 1)), t = order[i];
      order[i] = order[k];
      order[k] = t;
    }
    struct ArrowSchema schema;
    struct ArrowArray array;
    ArrowSchemaInit(&schema);
    CHECK(ArrowSchemaSetTypeStruct(&schema, WIDE) == 0);
    for (int i = 0; i < WIDE; i++) {
      snprintf(name, sizeof name, "COL_%d", order[i]);
      CHECK(ArrowSchemaSetType(schema.children[i], NANOARROW_TYPE_INT64) == 0);
      CHECK(ArrowSchemaSetName(schema.children[i], name) == 0);
    }
    CHECK(ArrowArrayInitFromSchema(&array, &schema, NULL) == 0);
    CHECK(ArrowArrayStartAppending(&array) == 0);
    for (int i = 0; i < WIDE; i++)
      CHECK(ArrowArrayAppendInt(array.children[i], order[i]) == 0);
    CHECK(ArrowArrayFinishElement(&array) == 0);
    CHECK(ArrowArrayFinishBuildingDefault(&array, NULL) == 0);
    int64_t before = lm_arrow_name_compares();
    lm_batch* b = NULL;
    laminar_error err;
    CHECK_CODE(lm_arrow_import(&src, "wide", &array, &schema, &b, &err), LAMINAR_OK,
               errp(&err));
    int64_t compares = lm_arrow_name_compares() - before;
    fprintf(stderr, "  variant %d: %" PRId64 " name comparisons for %d columns\n",
            variant, compares, WIDE);
    EXPECT(compares >= WIDE);
    EXPECT(compares <= 4 * WIDE);
    CHECK(b->ncols == WIDE);
    for (int j = 0; j < WIDE; j++) CHECK(((const int64_t*)b->cols[j].data)[0] == j);
    lm_batch_unref(b);
    lm_arrow_schema_release(&schema);
  }
  lm_schema_free(&src);
  return 0;
}

int main(int argc, char** argv) {
  static const lm_test_case cases[] = {
      {"types_and_values", test_types_and_values},
      {"large_utf8", test_large_utf8},
      {"dictionary_equals_plain", test_dictionary_equals_plain},
      {"dictionary_large_values_and_null_value",
       test_dictionary_large_values_and_null_value},
      {"timestamp_units", test_timestamp_units},
      {"nanoseconds_floor", test_nanoseconds_floor},
      {"any_order_any_case", test_any_order_any_case},
      {"sliced_struct_offset", test_sliced_struct_offset},
      {"sliced_child_offsets", test_sliced_child_offsets},
      {"unknown_null_count_without_bitmap", test_unknown_null_count_without_bitmap},
      {"bool_unaligned_bits", test_bool_unaligned_bits},
      {"empty_batch", test_empty_batch},
      {"release_exactly_once", test_release_exactly_once},
      {"kept_view_again", test_kept_view_again},
      {"kept_unshared_and_refused", test_kept_unshared_and_refused},
      {"refuse_released_array", test_refuse_released_array},
      {"refuse_released_schema", test_refuse_released_schema},
      {"refuse_bad_format", test_refuse_bad_format},
      {"refuse_not_a_struct", test_refuse_not_a_struct},
      {"refuse_wrong_n_buffers", test_refuse_wrong_n_buffers},
      {"refuse_null_buffer", test_refuse_null_buffer},
      {"refuse_short_child", test_refuse_short_child},
      {"refuse_offsets_beyond_data", test_refuse_offsets_beyond_data},
      {"refuse_non_monotone_offsets", test_refuse_non_monotone_offsets},
      {"refuse_negative_length_offset", test_refuse_negative_length_offset},
      {"refuse_wrong_null_count", test_refuse_wrong_null_count},
      {"refuse_null_count_without_bitmap", test_refuse_null_count_without_bitmap},
      {"refuse_invalid_utf8", test_refuse_invalid_utf8},
      {"refuse_dictionary_index", test_refuse_dictionary_index},
      {"refuse_missing_column", test_refuse_missing_column},
      {"refuse_extra_column", test_refuse_extra_column},
      {"refuse_wrong_type", test_refuse_wrong_type},
      {"refuse_dictionary_wrong_index_type", test_refuse_dictionary_wrong_index_type},
      {"refuse_null_in_not_null", test_refuse_null_in_not_null},
      {"refuse_struct_nulls", test_refuse_struct_nulls},
      {"refuse_children_shape", test_refuse_children_shape},
      {"refuse_misaligned_buffer", test_refuse_misaligned_buffer},
      {"refuse_timestamp_overflow", test_refuse_timestamp_overflow},
      {"refuse_misuse", test_refuse_misuse},
      {"wide_match_linear", test_wide_match_linear},
      {NULL, NULL}};
  return lm_test_main(argc, argv, cases);
}
