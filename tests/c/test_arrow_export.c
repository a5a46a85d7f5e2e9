/*
 * test_arrow_export.c -- white-box tests of the outgoing half of src/arrow:
 * lm_arrow_build (lm_vec columns -> nanoarrow struct array + views),
 * lm_batch_export (zero-copy export with release callbacks), schema export,
 * batch reference counting and the move/release helpers.
 */
#include <pthread.h>
#include <stdbool.h>
#include <string.h>

#include "arrow/arrow.h"
#include "lm_test.h"
#include "nanoarrow/nanoarrow.h"
#include "util/util.h"

/* CHECK_CODE's `(errp) ? ...` trips gcc's -Waddress on `&err`: pass it through
 * a function. */
static laminar_error* errp(laminar_error* err) { return err; }

/* ------------------------------------------------------------------------------
 * Helpers
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

/* nanoarrow FULL validation of `array` against `schema`; prints why not. */
static int validate_full(const struct ArrowSchema* schema,
                         const struct ArrowArray* array) {
  struct ArrowArrayView view;
  struct ArrowError e;
  e.message[0] = '\0';
  if (ArrowArrayViewInitFromSchema(&view, schema, &e) != 0) {
    fprintf(stderr, "view: %s\n", e.message);
    return 1;
  }
  int rc = ArrowArrayViewSetArray(&view, array, &e) != 0 ||
           ArrowArrayViewValidate(&view, NANOARROW_VALIDATION_LEVEL_FULL, &e) != 0;
  if (rc) fprintf(stderr, "validate: %s\n", e.message);
  ArrowArrayViewReset(&view);
  return rc;
}

static bool is_null(const lm_vec* v, int64_t r) {
  return v->nulls != NULL && v->nulls[r];
}

/* Same length, same nulls, same non-null values. */
static bool vec_equal(const lm_vec* a, const lm_vec* b) {
  if (a->type != b->type || a->len != b->len) return false;
  for (int64_t r = 0; r < a->len; r++) {
    if (is_null(a, r) != is_null(b, r)) return false;
    if (is_null(a, r)) continue;
    switch (a->type) {
      case LM_TYPE_STRING: {
        lm_str x = ((const lm_str*)a->data)[r], y = ((const lm_str*)b->data)[r];
        if (x.len != y.len || (x.len > 0 && memcmp(x.ptr, y.ptr, (size_t)x.len) != 0)) {
          return false;
        }
        break;
      }
      default: {
        int64_t w = lm_type_width(a->type);
        if (memcmp((const uint8_t*)a->data + r * w, (const uint8_t*)b->data + r * w,
                   (size_t)w) != 0) {
          return false;
        }
      }
    }
  }
  return true;
}

/* A schema with every type, and 7 rows of computed columns with some nulls. */
#define NROWS 7
static const uint8_t kBool[NROWS] = {1, 0, 1, 1, 0, 0, 1};
static const int32_t kInt[NROWS] = {1, -2, 3, INT32_MAX, INT32_MIN, 0, 7};
static const int64_t kBig[NROWS] = {10, 20, -30, INT64_MAX, INT64_MIN, 0, 70};
static const double kDbl[NROWS] = {0.5, -1.25, 1e300, -0.0, 3.0, 4.0, 5.5};
static const int64_t kTs[NROWS] = {0, -1, 1700000000000000, 5, 6, 7, -8000000};
static const uint8_t kNulls[NROWS] = {0, 1, 0, 0, 1, 0, 0};

typedef struct columns {
  lm_schema schema;
  lm_vec cols[6];
  lm_str strs[NROWS];
} columns;

static int make_columns(columns* c) {
  static const char* const words[NROWS] = {
      "alpha", "", "\xc3\xa9t\xc3\xa9", "d", "x", "longer string value", "g"};
  lm_schema_init_empty(&c->schema);
  int rc = 0;
  rc |= lm_schema_add(&c->schema, "b", LM_TYPE_BOOL, false);
  rc |= lm_schema_add(&c->schema, "i", LM_TYPE_INT32, false);
  rc |= lm_schema_add(&c->schema, "l", LM_TYPE_INT64, true);
  rc |= lm_schema_add(&c->schema, "d", LM_TYPE_DOUBLE, false);
  rc |= lm_schema_add(&c->schema, "s", LM_TYPE_STRING, false);
  rc |= lm_schema_add(&c->schema, "t", LM_TYPE_TIMESTAMP, false);
  for (int r = 0; r < NROWS; r++) {
    c->strs[r].ptr = words[r];
    c->strs[r].len = (int64_t)strlen(words[r]);
  }
  c->cols[0] = (lm_vec){LM_TYPE_BOOL, NROWS, kNulls, kBool};
  c->cols[1] = (lm_vec){LM_TYPE_INT32, NROWS, NULL, kInt};
  c->cols[2] = (lm_vec){LM_TYPE_INT64, NROWS, NULL, kBig};
  c->cols[3] = (lm_vec){LM_TYPE_DOUBLE, NROWS, kNulls, kDbl};
  c->cols[4] = (lm_vec){LM_TYPE_STRING, NROWS, kNulls, c->strs};
  c->cols[5] = (lm_vec){LM_TYPE_TIMESTAMP, NROWS, NULL, kTs};
  return rc != 0;
}

/* ------------------------------------------------------------------------------
 * Schema export
 * ---------------------------------------------------------------------------- */

static int test_schema_export_formats(void) {
  columns c;
  CHECK(make_columns(&c) == 0);
  struct ArrowSchema s;
  CHECK(lm_arrow_schema_export(&c.schema, &s) == LAMINAR_OK);
  CHECK(s.release != NULL && strcmp(s.format, "+s") == 0 && s.n_children == 6);
  CHECK((s.flags & ARROW_FLAG_NULLABLE) == 0);
  static const char* const formats[6] = {"b", "i", "l", "g", "u", "tsu:"};
  for (int i = 0; i < 6; i++) {
    const struct ArrowSchema* ch = s.children[i];
    CHECK(strcmp(ch->format, formats[i]) == 0);
    CHECK(strcmp(ch->name, c.schema.fields[i].name) == 0);
    CHECK(ch->dictionary == NULL && ch->n_children == 0);
    bool nullable = (ch->flags & ARROW_FLAG_NULLABLE) != 0;
    CHECK(nullable == !c.schema.fields[i].not_null);
  }
  struct ArrowSchemaView view;
  CHECK(ArrowSchemaViewInit(&view, &s, NULL) == 0 && view.type == NANOARROW_TYPE_STRUCT);
  lm_arrow_schema_release(&s);
  CHECK(s.release == NULL);
  lm_arrow_schema_release(&s);  // released: a no-op
  lm_schema_free(&c.schema);

  /* No columns at all is still a valid struct schema. */
  lm_schema empty;
  lm_schema_init_empty(&empty);
  CHECK(lm_arrow_schema_export(&empty, &s) == LAMINAR_OK);
  CHECK(strcmp(s.format, "+s") == 0 && s.n_children == 0);
  lm_arrow_schema_release(&s);
  return 0;
}

/* ------------------------------------------------------------------------------
 * Build
 * ---------------------------------------------------------------------------- */

static int test_build_values(void) {
  columns c;
  CHECK(make_columns(&c) == 0);
  lm_batch* b = NULL;
  CHECK(lm_arrow_build(&c.schema, c.cols, NROWS, &b) == LAMINAR_OK);
  CHECK(b->nrows == NROWS && b->ncols == 6);
  for (int i = 0; i < 6; i++) CHECK(vec_equal(&b->cols[i], &c.cols[i]));
  /* Validity bitmaps only where there are nulls. */
  struct ArrowArray* a = &b->array;
  CHECK(a->length == NROWS && a->n_children == 6 && a->null_count == 0);
  CHECK(a->children[0]->buffers[0] != NULL && a->children[0]->null_count == 2);
  CHECK(a->children[1]->buffers[0] == NULL && a->children[1]->null_count == 0);
  /* Views point into the built buffers: fixed width in place, strings into the
   * utf8 data buffer. */
  CHECK(b->cols[2].data == a->children[2]->buffers[1]);
  CHECK(((const lm_str*)b->cols[4].data)[0].ptr == a->children[4]->buffers[2]);
  /* The bool child is a bitmap: 1,0,1,1,0,0,1 -> 0b1001101. */
  CHECK(((const uint8_t*)a->children[0]->buffers[1])[0] == 0x4D);
  struct ArrowSchema s;
  CHECK(lm_arrow_schema_export(&c.schema, &s) == LAMINAR_OK);
  CHECK(validate_full(&s, a) == 0);
  lm_arrow_schema_release(&s);
  lm_batch_unref(b);
  lm_schema_free(&c.schema);
  return 0;
}

static int test_build_empty_and_prefix(void) {
  columns c;
  CHECK(make_columns(&c) == 0);
  lm_batch* b = NULL;
  CHECK(lm_arrow_build(&c.schema, c.cols, 0, &b) == LAMINAR_OK);
  CHECK(b->nrows == 0 && b->array.length == 0);
  for (int i = 0; i < 6; i++) CHECK(b->cols[i].len == 0 && b->cols[i].nulls == NULL);
  struct ArrowSchema s;
  CHECK(lm_arrow_schema_export(&c.schema, &s) == LAMINAR_OK);
  CHECK(validate_full(&s, &b->array) == 0);
  lm_batch_unref(b);
  /* The first row only: no nulls there, so no validity bitmaps at all. */
  CHECK(lm_arrow_build(&c.schema, c.cols, 1, &b) == LAMINAR_OK);
  for (int i = 0; i < 6; i++) {
    CHECK(b->cols[i].nulls == NULL && b->array.children[i]->buffers[0] == NULL);
  }
  CHECK(((const int32_t*)b->cols[1].data)[0] == 1);
  CHECK(validate_full(&s, &b->array) == 0);
  lm_batch_unref(b);
  lm_arrow_schema_release(&s);
  lm_schema_free(&c.schema);
  return 0;
}

static int test_build_null_type(void) {
  /* A column of SQL NULL type builds as Arrow's null type ("n"): every row null. */
  lm_schema schema;
  lm_schema_init_empty(&schema);
  CHECK(lm_schema_add(&schema, "nothing", LM_TYPE_NULL, false) == 0);
  CHECK(lm_schema_add(&schema, "v", LM_TYPE_INT32, false) == 0);
  uint8_t junk[3] = {0, 0, 0};
  lm_vec cols[2] = {{LM_TYPE_NULL, 3, NULL, junk}, {LM_TYPE_INT32, 3, NULL, kInt}};
  lm_batch* b = NULL;
  CHECK(lm_arrow_build(&schema, cols, 3, &b) == LAMINAR_OK);
  CHECK(b->cols[0].type == LM_TYPE_NULL && b->cols[0].data != NULL);
  for (int r = 0; r < 3; r++) CHECK(is_null(&b->cols[0], r));
  CHECK(b->array.children[0]->null_count == 3);
  struct ArrowSchema s;
  CHECK(lm_arrow_schema_export(&schema, &s) == LAMINAR_OK);
  CHECK(strcmp(s.children[0]->format, "n") == 0);
  struct ArrowArray out;
  CHECK(lm_batch_export(b, &out) == LAMINAR_OK);
  CHECK(validate_full(&s, &out) == 0);
  lm_arrow_release(&out);
  lm_batch_unref(b);
  lm_arrow_schema_release(&s);
  /* A NULL-typed vector under a typed column: all nulls of that type. */
  schema.fields[0].type = LM_TYPE_STRING;
  CHECK(lm_arrow_build(&schema, cols, 3, &b) == LAMINAR_OK);
  CHECK(b->cols[0].type == LM_TYPE_STRING && b->cols[0].nulls != NULL);
  for (int r = 0; r < 3; r++) CHECK(is_null(&b->cols[0], r));
  CHECK(lm_arrow_schema_export(&schema, &s) == LAMINAR_OK);
  CHECK(validate_full(&s, &b->array) == 0);
  lm_batch_unref(b);
  lm_arrow_schema_release(&s);
  lm_schema_free(&schema);
  return 0;
}

/* ------------------------------------------------------------------------------
 * Export
 * ---------------------------------------------------------------------------- */

static int test_round_trip(void) {
  columns c;
  CHECK(make_columns(&c) == 0);
  c.schema.fields[2].not_null = true;  // 'l' has no nulls
  lm_batch* b = NULL;
  CHECK(lm_arrow_build(&c.schema, c.cols, NROWS, &b) == LAMINAR_OK);
  struct ArrowArray out;
  struct ArrowSchema s;
  CHECK(lm_batch_export(b, &out) == LAMINAR_OK);
  CHECK(lm_arrow_schema_export(&c.schema, &s) == LAMINAR_OK);
  CHECK(out.release != NULL && out.length == NROWS && out.n_children == 6);
  CHECK(validate_full(&s, &out) == 0);
  /* Zero-copy: the exported buffers are the batch's. */
  CHECK(out.children[3]->buffers[1] == b->array.children[3]->buffers[1]);

  lm_batch* back = NULL;
  laminar_error err;
  CHECK_CODE(lm_arrow_import(&c.schema, "rt", &out, &s, &back, &err), LAMINAR_OK,
             errp(&err));
  CHECK(out.release == NULL);  // moved into `back`
  lm_batch_unref(b);           // `back` keeps the buffers alive on its own
  CHECK(back->nrows == NROWS);
  for (int i = 0; i < 6; i++) CHECK(vec_equal(&back->cols[i], &c.cols[i]));
  lm_batch_unref(back);
  lm_arrow_schema_release(&s);
  lm_schema_free(&c.schema);
  return 0;
}

/* A pushed batch: dictionary<int32, utf8> 'k' and int64 'v', 6 rows, with a
 * counting release. */
static int pushed_batch(struct ArrowSchema* s, struct ArrowArray* a, int* releases) {
  ArrowSchemaInit(s);
  if (ArrowSchemaSetTypeStruct(s, 2) != 0) return 1;
  struct ArrowSchema* k = s->children[0];
  if (ArrowSchemaSetFormat(k, "i") != 0 || ArrowSchemaSetName(k, "k") != 0) return 1;
  if (ArrowSchemaAllocateDictionary(k) != 0) return 1;
  ArrowSchemaInit(k->dictionary);
  if (ArrowSchemaSetFormat(k->dictionary, "u") != 0) return 1;
  if (ArrowSchemaSetFormat(s->children[1], "l") != 0) return 1;
  if (ArrowSchemaSetName(s->children[1], "v") != 0) return 1;
  if (ArrowArrayInitFromSchema(a, s, NULL) != 0 || ArrowArrayStartAppending(a) != 0)
    return 1;
  struct ArrowArray* kc = a->children[0];
  static const char* const words[3] = {"red", "green", "blue"};
  for (int i = 0; i < 3; i++) {
    if (ArrowArrayAppendString(kc->dictionary, ArrowCharView(words[i])) != 0) return 1;
  }
  for (int r = 0; r < 6; r++) {
    int rc = r == 4 ? ArrowArrayAppendNull(kc, 1) : ArrowArrayAppendInt(kc, r % 3);
    rc |= ArrowArrayAppendInt(a->children[1], r * 100);
    rc |= ArrowArrayFinishElement(a);
    if (rc != 0) return 1;
  }
  if (ArrowArrayFinishBuildingDefault(a, NULL) != 0) return 1;
  return count_releases(a, releases);
}

static int source_kv(lm_schema* src) {
  lm_schema_init_empty(src);
  return lm_schema_add(src, "k", LM_TYPE_STRING, false) != 0 ||
         lm_schema_add(src, "v", LM_TYPE_INT64, true) != 0;
}

static int test_export_keeps_layout(void) {
  /* A sliced dictionary batch exports as-is: same offsets, same buffers, the
   * dictionary kept, and it still passes FULL validation. */
  struct ArrowSchema s;
  struct ArrowArray a;
  int releases = 0;
  CHECK(pushed_batch(&s, &a, &releases) == 0);
  a.offset = 1;
  a.length = 4;
  a.children[0]->offset = 1;  // child rows 1..5; struct rows 1..4 of those
  a.children[0]->length = 5;
  a.children[0]->null_count = -1;
  const void* kbuf = a.children[0]->buffers[1];
  lm_schema src;
  CHECK(source_kv(&src) == 0);
  lm_batch* b = NULL;
  laminar_error err;
  CHECK_CODE(lm_arrow_import(&src, "kv", &a, &s, &b, &err), LAMINAR_OK, errp(&err));
  /* Row r of the batch is child row r + 2: k = (r+2)%3 (row 4 null), v = (r+1)*100. */
  const lm_str* k = b->cols[0].data;
  CHECK(b->nrows == 4 && strncmp(k[0].ptr, "blue", 4) == 0 && k[0].len == 4);
  CHECK(is_null(&b->cols[0], 2) && ((const int64_t*)b->cols[1].data)[0] == 100);

  struct ArrowArray out;
  CHECK(lm_batch_export(b, &out) == LAMINAR_OK);
  CHECK(out.offset == 1 && out.length == 4);
  CHECK(out.children[0]->offset == 1 && out.children[0]->length == 5);
  CHECK(out.children[0]->buffers[1] == kbuf);
  CHECK(out.children[0]->dictionary != NULL && out.children[0]->dictionary->length == 3);
  CHECK(validate_full(&s, &out) == 0);
  /* Re-import of the export gives the same views. */
  lm_batch* back = NULL;
  CHECK_CODE(lm_arrow_import(&src, "kv", &out, &s, &back, &err), LAMINAR_OK, errp(&err));
  for (int i = 0; i < 2; i++) CHECK(vec_equal(&back->cols[i], &b->cols[i]));
  lm_batch_unref(b);
  CHECK(releases == 0);  // `back` holds the export, which holds the batch
  lm_batch_unref(back);
  CHECK(releases == 1);
  lm_arrow_schema_release(&s);
  lm_schema_free(&src);
  return 0;
}

static int test_refcount_many_exports(void) {
  /* Three exports released in every order; the producer's release runs once,
   * after the last holder lets go. */
  static const int orders[6][3] = {{0, 1, 2}, {0, 2, 1}, {1, 0, 2},
                                   {1, 2, 0}, {2, 0, 1}, {2, 1, 0}};
  for (int o = 0; o < 6; o++) {
    struct ArrowSchema s;
    struct ArrowArray a;
    int releases = 0;
    CHECK(pushed_batch(&s, &a, &releases) == 0);
    lm_schema src;
    CHECK(source_kv(&src) == 0);
    lm_batch* b = NULL;
    laminar_error err;
    CHECK_CODE(lm_arrow_import(&src, "kv", &a, &s, &b, &err), LAMINAR_OK, errp(&err));
    struct ArrowArray out[3];
    for (int i = 0; i < 3; i++) CHECK(lm_batch_export(b, &out[i]) == LAMINAR_OK);
    CHECK(atomic_load(&b->refs) > 3);
    lm_batch_unref(b);  // the exports alone keep it alive
    for (int i = 0; i < 3; i++) {
      CHECK(releases == 0);
      struct ArrowArray* x = &out[orders[o][i]];
      CHECK(validate_full(&s, x) == 0);
      lm_arrow_release(x);
      CHECK(x->release == NULL);
    }
    CHECK(releases == 1);
    lm_arrow_schema_release(&s);
    lm_schema_free(&src);
  }
  return 0;
}

/* Exports of one batch released concurrently from several threads. */
#define THREADS 4
#define PER_THREAD 64

static void* release_all(void* arg) {
  struct ArrowArray* arrays = arg;
  for (int i = 0; i < PER_THREAD; i++) lm_arrow_release(&arrays[i]);
  return NULL;
}

static int test_release_on_many_threads(void) {
  struct ArrowSchema s;
  struct ArrowArray a;
  int releases = 0;
  CHECK(pushed_batch(&s, &a, &releases) == 0);
  lm_schema src;
  CHECK(source_kv(&src) == 0);
  lm_batch* b = NULL;
  laminar_error err;
  CHECK_CODE(lm_arrow_import(&src, "kv", &a, &s, &b, &err), LAMINAR_OK, errp(&err));
  static struct ArrowArray out[THREADS][PER_THREAD];
  for (int t = 0; t < THREADS; t++) {
    for (int i = 0; i < PER_THREAD; i++)
      CHECK(lm_batch_export(b, &out[t][i]) == LAMINAR_OK);
  }
  lm_batch_unref(b);
  pthread_t threads[THREADS];
  for (int t = 0; t < THREADS; t++) {
    CHECK(pthread_create(&threads[t], NULL, release_all, out[t]) == 0);
  }
  for (int t = 0; t < THREADS; t++) CHECK(pthread_join(threads[t], NULL) == 0);
  CHECK(releases == 1);
  lm_arrow_schema_release(&s);
  lm_schema_free(&src);
  return 0;
}

static int test_exported_struct_survives_move(void) {
  columns c;
  CHECK(make_columns(&c) == 0);
  lm_batch* b = NULL;
  CHECK(lm_arrow_build(&c.schema, c.cols, NROWS, &b) == LAMINAR_OK);
  struct ArrowArray first, moved;
  CHECK(lm_batch_export(b, &first) == LAMINAR_OK);
  lm_batch_unref(b);
  lm_arrow_move(&first, &moved);
  CHECK(first.release == NULL && moved.release != NULL);
  lm_arrow_release(&first);  // released: a no-op
  struct ArrowSchema s;
  CHECK(lm_arrow_schema_export(&c.schema, &s) == LAMINAR_OK);
  CHECK(validate_full(&s, &moved) == 0);
  lm_arrow_release(&moved);  // frees everything (ASan checks)
  lm_arrow_schema_release(&s);
  lm_schema_free(&c.schema);
  return 0;
}

static int test_child_moved_out(void) {
  /* The spec lets a consumer move a child out and release the parent: the
   * child stays valid on its own until released. */
  struct ArrowSchema s;
  struct ArrowArray a;
  int releases = 0;
  CHECK(pushed_batch(&s, &a, &releases) == 0);
  lm_schema src;
  CHECK(source_kv(&src) == 0);
  lm_batch* b = NULL;
  laminar_error err;
  CHECK_CODE(lm_arrow_import(&src, "kv", &a, &s, &b, &err), LAMINAR_OK, errp(&err));
  struct ArrowArray out, k;
  CHECK(lm_batch_export(b, &out) == LAMINAR_OK);
  lm_batch_unref(b);
  lm_arrow_move(out.children[0], &k);
  lm_arrow_release(&out);
  CHECK(releases == 0);
  CHECK(validate_full(s.children[0], &k) == 0);
  CHECK(k.dictionary != NULL && k.dictionary->length == 3);
  const int32_t* idx = k.buffers[1];
  CHECK(idx[5] == 2);
  lm_arrow_release(&k);
  CHECK(releases == 1);
  lm_arrow_schema_release(&s);
  lm_schema_free(&src);
  return 0;
}

static int test_move_release_helpers(void) {
  int releases = 0;
  struct ArrowSchema s;
  struct ArrowArray a, b;
  CHECK(pushed_batch(&s, &a, &releases) == 0);
  lm_arrow_move(&a, &b);
  CHECK(a.release == NULL && b.release != NULL && b.length == 6);
  lm_arrow_release(&a);
  CHECK(releases == 0);
  lm_arrow_release(&b);
  CHECK(releases == 1 && b.release == NULL);
  lm_arrow_release(&b);
  lm_arrow_release(NULL);
  CHECK(releases == 1);
  lm_arrow_schema_release(&s);
  lm_arrow_schema_release(NULL);
  return 0;
}

int main(int argc, char** argv) {
  static const lm_test_case cases[] = {
      {"schema_export_formats", test_schema_export_formats},
      {"build_values", test_build_values},
      {"build_empty_and_prefix", test_build_empty_and_prefix},
      {"build_null_type", test_build_null_type},
      {"round_trip", test_round_trip},
      {"export_keeps_layout", test_export_keeps_layout},
      {"refcount_many_exports", test_refcount_many_exports},
      {"release_on_many_threads", test_release_on_many_threads},
      {"exported_struct_survives_move", test_exported_struct_survives_move},
      {"child_moved_out", test_child_moved_out},
      {"move_release_helpers", test_move_release_helpers},
      {NULL, NULL}};
  return lm_test_main(argc, argv, cases);
}
