/*
 * test_arrow_malformed.c -- malformed Arrow pushed through laminar_source_push
 * (and first checked by laminar_source_validate, which must give the push's
 * answer, word for word, taking nothing):
 * each crafted batch is refused whole with LDB-3001 naming its column, its
 * release runs exactly once (by its owner, after the refusal), and nothing of
 * it is ingested.
 *
 * Batches are crafted by hand, not with a builder: every buffer is a real
 * allocation of exactly the size its declared lengths and offsets imply
 * (memory-honest), so under ASan any read past what a batch declares is a
 * report. The cases that lie about memory itself (offsets or an offset far
 * past a 1-byte buffer, the crashes of issue 20) put that buffer at the end of
 * a mapping whose next page is unmapped: the push must refuse them, not fault.
 *
 * The source is t (s VARCHAR, v BIGINT, d VARCHAR); a pushed batch carries s
 * as utf8 (or large_utf8), v as int64 and d as dictionary<int32, utf8>. After
 * every case a valid batch is pushed and the view must hold exactly it.
 */
#ifndef _DEFAULT_SOURCE
#define _DEFAULT_SOURCE  // MAP_ANONYMOUS
#endif
#include "laminar.h"

#include "lm_test.h"
#include "views_util.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

/* ------------------------------------------------------------------------------
 * A crafted batch: a struct array of three columns whose buffers are owned by
 * one craft record, freed by the top-level release (which counts its calls).
 * ---------------------------------------------------------------------------- */

enum { COL_S, COL_V, COL_D, NCOLS };

typedef struct craft {
  struct ArrowArray cols[NCOLS];
  struct ArrowArray dict;
  struct ArrowArray* children[NCOLS];
  const void* top_buffers[1];
  const void* s_buffers[3];
  const void* v_buffers[2];
  const void* d_buffers[2];
  const void* dict_buffers[3];
  void* owned[16];
  int nowned;
  void* mapped; /* a mapping to unmap, or NULL */
  size_t mapped_len;
  int* releases;
} craft;

static void child_release(struct ArrowArray* a) { a->release = NULL; }

static void craft_release(struct ArrowArray* a) {
  craft* c = a->private_data;
  for (int i = 0; i < NCOLS; i++) {
    if (c->cols[i].release != NULL) c->cols[i].release(&c->cols[i]);
  }
  if (c->dict.release != NULL) c->dict.release(&c->dict);
  for (int i = 0; i < c->nowned; i++) free(c->owned[i]);
  if (c->mapped != NULL) munmap(c->mapped, c->mapped_len);
  (*c->releases)++;
  free(c);
  a->release = NULL;
}

/* A buffer of exactly `size` bytes owned by the craft (at least 1 allocated
 * byte so the pointer is real, as producers hand out for empty buffers). */
static void* own(craft* c, size_t size) {
  void* p = malloc(size > 0 ? size : 1);
  if (p != NULL) c->owned[c->nowned++] = p;
  return p;
}

/* `size` bytes that end a mapped page whose next page is not mapped: a read
 * one byte past them faults. */
static void* tail_of_mapping(craft* c, size_t size) {
  size_t page = (size_t)sysconf(_SC_PAGESIZE);
  uint8_t* m =
      mmap(NULL, 2 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (m == MAP_FAILED) return NULL;
  munmap(m + page, page);
  c->mapped = m;
  c->mapped_len = page;
  memset(m, 'a', page);
  return m + page - size;
}

static void leaf(struct ArrowArray* a, int64_t length, int64_t n_buffers,
                 const void** buffers) {
  memset(a, 0, sizeof *a);
  a->length = length;
  a->null_count = 0;
  a->n_buffers = n_buffers;
  a->buffers = buffers;
  a->release = child_release;
}

/* A valid batch of `rows` rows: s = "r0", "r1", ... (int32 or int64 offsets),
 * v = 10 * i, d = dictionary ["x", "yz"] indexed i % 2. 0 on success. */
static int craft_init(struct ArrowArray* out, int64_t rows, bool large, int* releases) {
  craft* c = calloc(1, sizeof *c);
  if (c == NULL) return 1;
  c->releases = releases;
  memset(out, 0, sizeof *out);
  out->private_data = c;
  out->release = craft_release;
  out->length = rows;
  out->n_buffers = 1;
  out->buffers = c->top_buffers;
  out->n_children = NCOLS;
  out->children = c->children;
  for (int i = 0; i < NCOLS; i++) c->children[i] = &c->cols[i];

  /* s */
  char* data = own(c, (size_t)rows * 8);
  size_t width = large ? 8 : 4;
  uint8_t* offsets = own(c, (size_t)(rows + 1) * width);
  if (data == NULL || offsets == NULL) return 1;
  int64_t at = 0;
  for (int64_t i = 0; i <= rows; i++) {
    if (large) {
      memcpy(offsets + i * 8, &at, 8);
    } else {
      int32_t at32 = (int32_t)at;
      memcpy(offsets + i * 4, &at32, 4);
    }
    if (i < rows) at += snprintf(data + at, 8, "r%d", (int)i);
  }
  c->s_buffers[1] = offsets;
  c->s_buffers[2] = data;
  leaf(&c->cols[COL_S], rows, 3, c->s_buffers);

  /* v */
  int64_t* v = own(c, (size_t)rows * 8);
  if (v == NULL) return 1;
  for (int64_t i = 0; i < rows; i++) v[i] = 10 * i;
  c->v_buffers[1] = v;
  leaf(&c->cols[COL_V], rows, 2, c->v_buffers);

  /* d and its dictionary */
  int32_t* idx = own(c, (size_t)rows * 4);
  int32_t* doff = own(c, 3 * 4);
  char* dval = own(c, 3);
  if (idx == NULL || doff == NULL || dval == NULL) return 1;
  for (int64_t i = 0; i < rows; i++) idx[i] = (int32_t)(i % 2);
  doff[0] = 0;
  doff[1] = 1;
  doff[2] = 3;
  memcpy(dval, "xyz", 3);
  c->dict_buffers[1] = doff;
  c->dict_buffers[2] = dval;
  leaf(&c->dict, 2, 3, c->dict_buffers);
  c->d_buffers[1] = idx;
  leaf(&c->cols[COL_D], rows, 2, c->d_buffers);
  c->cols[COL_D].dictionary = &c->dict;
  return 0;
}

static craft* craft_of(struct ArrowArray* a) { return a->private_data; }

/* The schema of a crafted batch: +s{s: u|U, v: l, d: i dictionary u}. */
static int craft_schema(struct ArrowSchema* s, bool large) {
  ArrowSchemaInit(s);
  if (ArrowSchemaSetTypeStruct(s, NCOLS) != NANOARROW_OK) return 1;
  const char* names[NCOLS] = {"s", "v", "d"};
  const char* formats[NCOLS] = {large ? "U" : "u", "l", "i"};
  for (int i = 0; i < NCOLS; i++) {
    if (ArrowSchemaSetFormat(s->children[i], formats[i]) != NANOARROW_OK) return 1;
    if (ArrowSchemaSetName(s->children[i], names[i]) != NANOARROW_OK) return 1;
  }
  if (ArrowSchemaAllocateDictionary(s->children[COL_D]) != NANOARROW_OK) return 1;
  ArrowSchemaInit(s->children[COL_D]->dictionary);
  return ArrowSchemaSetFormat(s->children[COL_D]->dictionary, "u") != NANOARROW_OK;
}

/* A metadata blob of exactly `size` bytes from `words` (int32s), owned by the
 * schema (nanoarrow's release frees it). */
static int set_metadata(struct ArrowSchema* s, const int32_t* words, size_t nwords) {
  char* blob = malloc(nwords * 4);
  if (blob == NULL) return 1;
  memcpy(blob, words, nwords * 4);
  if (s->metadata != NULL) free((void*)s->metadata);
  s->metadata = blob;
  return 0;
}

/* ------------------------------------------------------------------------------
 * The database and the expectation
 * ---------------------------------------------------------------------------- */

typedef struct env {
  laminar_db* db;
  laminar_source* src;
} env;

static int env_open(env* e) {
  laminar_error err;
  CHECK_CODE(laminar_open(NULL, &e->db, &err), LAMINAR_OK, &err);
  CHECK_CODE(laminar_execute(e->db,
                             "CREATE SOURCE t (s VARCHAR, v BIGINT, d VARCHAR);"
                             "CREATE MATERIALIZED VIEW mv AS SELECT s, v, d FROM t;"
                             "CREATE MATERIALIZED VIEW tot AS SELECT COUNT(*) AS n, "
                             "SUM(v) AS sv FROM t EMIT CHANGES",
                             &err),
             LAMINAR_OK, &err);
  CHECK_CODE(laminar_source_open(e->db, "t", &e->src, &err), LAMINAR_OK, &err);
  return 0;
}

static int env_close(env* e) {
  laminar_source_close(e->src);
  CHECK_CODE(laminar_close(e->db), LAMINAR_OK, NULL);
  return 0;
}

/* Push `array` into e's source and expect it accepted (moved into the core),
 * then, the runtime drained, `sql` to render as `want`. Takes the schema. */
static int push_accepted(env* e, struct ArrowArray* array, struct ArrowSchema* schema,
                         const char* sql, const char* want) {
  laminar_error err;
  /* Validate only: accepted, and not moved (still the caller's, as it was). */
  CHECK_CODE(laminar_source_validate(e->src, array, schema, &err), LAMINAR_OK, &err);
  CHECK(array->release != NULL);
  CHECK_CODE(laminar_source_push(e->src, array, schema, &err), LAMINAR_OK, &err);
  CHECK(array->release == NULL);
  schema->release(schema);
  CHECK_CODE(laminar_run_until_idle(e->db, &err), LAMINAR_OK, &err);
  char text[256];
  CHECK_CODE(query_text(e->db, sql, text, sizeof text, &err), LAMINAR_OK, &err);
  if (strcmp(text, want) != 0) {
    fprintf(stderr, "%s gives '%s', want '%s'\n", sql, text, want);
    return 1;
  }
  return 0;
}

#define VIEW_SQL "SELECT s, v, d FROM mv ORDER BY v"
#define VIEW_OF_TWO "r0,0,x;r1,10,yz" /* VIEW_SQL after the valid 2-row batch */

/* Push `array` (described by `schema`) and expect LDB-3001 naming `column`
 * (NULL: the batch as a whole), the array left to its owner and released once
 * by it; then a valid 2-row batch must be all the view holds. Takes both. */
static int expect_refused(const char* label, struct ArrowArray* array,
                          struct ArrowSchema* schema, const char* column, int* releases) {
  env e;
  CHECK(env_open(&e) == 0);
  laminar_error err;
  memset(&err, 0, sizeof err);
  /* Validate only gives the push's answer first, taking and ingesting nothing. */
  laminar_code vrc = laminar_source_validate(e.src, array, schema, &err);
  char vmsg[sizeof err.message];
  memcpy(vmsg, err.message, sizeof vmsg);
  CHECK(*releases == 0 && array->release != NULL);
  memset(&err, 0, sizeof err);
  laminar_code rc = laminar_source_push(e.src, array, schema, &err);
  if (vrc != rc || strcmp(vmsg, err.message) != 0) {
    fprintf(stderr, "%s: validate gave %d '%s', push %d '%s'\n", label, (int)vrc, vmsg,
            (int)rc, err.message);
    return 1;
  }
  if (rc != LAMINAR_ERR_ARROW_INVALID) {
    fprintf(stderr, "%s: push returned %d, want 3001 (%s)\n", label, (int)rc,
            err.message);
  }
  if (getenv("LM_TEST_VERBOSE") != NULL)
    fprintf(stderr, "  %s: %s\n", label, err.message);
  CHECK(rc == LAMINAR_ERR_ARROW_INVALID);
  CHECK(strncmp(err.message, "LDB-3001: ", 10) == 0);
  CHECK(strcmp(err.object, "t") == 0);
  if (column != NULL && strcmp(err.column_name, column) != 0) {
    fprintf(stderr, "%s: error names column '%s', want '%s' (%s)\n", label,
            err.column_name, column, err.message);
    return 1;
  }
  CHECK(*releases == 0);
  CHECK(array->release != NULL); /* refused: still the caller's */
  array->release(array);
  CHECK(*releases == 1);
  schema->release(schema);

  /* Nothing of it ingested: the view holds exactly the next valid batch. */
  struct ArrowArray good;
  struct ArrowSchema good_schema;
  int good_releases = 0;
  CHECK(craft_init(&good, 2, false, &good_releases) == 0);
  CHECK(craft_schema(&good_schema, false) == 0);
  if (push_accepted(&e, &good, &good_schema, VIEW_SQL, VIEW_OF_TWO) != 0) {
    fprintf(stderr, "%s: ingested something\n", label);
    return 1;
  }
  CHECK(env_close(&e) == 0);
  CHECK(good_releases == 1);
  return 0;
}

/* Craft a valid batch of `rows` rows and its schema, for a case to break. */
#define CRAFT(rows, large)                                    \
  struct ArrowArray array;                                    \
  struct ArrowSchema schema;                                  \
  int releases = 0;                                           \
  CHECK(craft_init(&array, (rows), (large), &releases) == 0); \
  CHECK(craft_schema(&schema, (large)) == 0);                 \
  craft* c = craft_of(&array);                                \
  (void)c

/* ------------------------------------------------------------------------------
 * Memory the batch lies about (issue 20's crashes): buffers at a mapping's end
 * ---------------------------------------------------------------------------- */

/* utf8 whose last offset is 2^31 - 1 over a 1-byte data buffer. */
static int test_utf8_offsets_past_one_byte(void) {
  CRAFT(1, false);
  int32_t* off = own(c, 8);
  CHECK(off != NULL);
  off[0] = 0;
  off[1] = INT32_MAX;
  c->s_buffers[1] = off;
  c->s_buffers[2] = tail_of_mapping(c, 1);
  CHECK(c->s_buffers[2] != NULL);
  return expect_refused("utf8 offsets 2^31-1 past 1 byte", &array, &schema, "s",
                        &releases);
}

/* large_utf8 whose last offset is 2^40 over a 1-byte data buffer. */
static int test_large_utf8_offsets_2_40(void) {
  CRAFT(1, true);
  int64_t* off = own(c, 16);
  CHECK(off != NULL);
  off[0] = 0;
  off[1] = (int64_t)1 << 40;
  c->s_buffers[1] = off;
  c->s_buffers[2] = tail_of_mapping(c, 1);
  CHECK(c->s_buffers[2] != NULL);
  return expect_refused("large_utf8 offsets 2^40 past 1 byte", &array, &schema, "s",
                        &releases);
}

/* A column offset of 2^40 with a validity bitmap of 1 byte (and data that
 * ends its mapping too). */
static int test_huge_offset_with_bitmap(void) {
  CRAFT(2, false);
  struct ArrowArray* v = &c->cols[COL_V];
  v->offset = (int64_t)1 << 40;
  v->null_count = -1;
  c->v_buffers[0] = tail_of_mapping(c, 1);
  CHECK(c->v_buffers[0] != NULL);
  return expect_refused("offset 2^40 with a 1-byte bitmap", &array, &schema, "v",
                        &releases);
}

/* The struct's own offset 2^40 with a 1-byte validity bitmap. */
static int test_struct_huge_offset_with_bitmap(void) {
  CRAFT(2, false);
  array.offset = (int64_t)1 << 40;
  array.null_count = -1;
  c->top_buffers[0] = tail_of_mapping(c, 1);
  CHECK(c->top_buffers[0] != NULL);
  return expect_refused("struct offset 2^40 with a 1-byte bitmap", &array, &schema, NULL,
                        &releases);
}

/* A 1-byte validity bitmap for 2^21 rows (the bitmap needs 256 KiB). A short
 * bitmap followed by mapped memory cannot be caught (laminar.h); one whose
 * declared end lies 256 KiB or more past its start, over unmapped pages, is. */
static int test_short_bitmap_many_rows(void) {
  int64_t rows = (int64_t)1 << 21;
  CRAFT(rows, false);
  c->v_buffers[0] = tail_of_mapping(c, 1);
  CHECK(c->v_buffers[0] != NULL);
  c->cols[COL_V].null_count = -1;
  return expect_refused("1-byte bitmap for 2^21 rows", &array, &schema, "v", &releases);
}

/* Dictionary values whose offsets run 1 MiB past their 3-byte buffer. */
static int test_dictionary_values_past_buffer(void) {
  CRAFT(2, false);
  int32_t* doff = own(c, 12);
  CHECK(doff != NULL);
  doff[0] = 0;
  doff[1] = 1;
  doff[2] = 1 << 20;
  c->dict_buffers[1] = doff;
  char* tail = tail_of_mapping(c, 3);
  CHECK(tail != NULL);
  memcpy(tail, "xyz", 3);
  c->dict_buffers[2] = tail;
  return expect_refused("dictionary values 1 MiB past 3 bytes", &array, &schema, "d",
                        &releases);
}

/* ------------------------------------------------------------------------------
 * Memory-honest batches that break the spec
 * ---------------------------------------------------------------------------- */

/* Offsets not monotone: value 1 would run past the buffer's end. */
static int test_utf8_offsets_not_monotone(void) {
  CRAFT(3, false);
  int32_t* off = (int32_t*)c->s_buffers[1];
  off[1] = 7; /* 0, 7, 4, 6: the buffer (implied size 6) has no byte 6 */
  return expect_refused("utf8 offsets not monotone", &array, &schema, "s", &releases);
}

/* An int32 offset of 2^31 wraps negative. */
static int test_utf8_offset_wraps_negative(void) {
  CRAFT(2, false);
  int32_t* off = (int32_t*)c->s_buffers[1];
  uint32_t wrapped = UINT32_C(1) << 31;
  memcpy(&off[2], &wrapped, 4);
  return expect_refused("utf8 offset 2^31 (negative)", &array, &schema, "s", &releases);
}

/* First offset after the last (all values "negative length"). */
static int test_utf8_first_offset_after_last(void) {
  CRAFT(2, false);
  int32_t* off = (int32_t*)c->s_buffers[1];
  off[0] = 4;
  off[1] = 4;
  off[2] = 2;
  return expect_refused("utf8 first offset > last", &array, &schema, "s", &releases);
}

/* Dictionary offsets not monotone: a value reaching past the data buffer. */
static int test_dictionary_offsets_not_monotone(void) {
  CRAFT(2, false);
  int32_t* doff = (int32_t*)c->dict_buffers[1];
  doff[1] = 5; /* 0, 5, 3 */
  return expect_refused("dictionary offsets not monotone", &array, &schema, "d",
                        &releases);
}

static int test_dictionary_index_past_end(void) {
  CRAFT(2, false);
  int32_t* idx = (int32_t*)c->d_buffers[1];
  idx[1] = 2; /* the dictionary has 2 values */
  return expect_refused("dictionary index == length", &array, &schema, "d", &releases);
}

static int test_dictionary_index_negative(void) {
  CRAFT(2, false);
  int32_t* idx = (int32_t*)c->d_buffers[1];
  idx[0] = -1;
  return expect_refused("dictionary index -1", &array, &schema, "d", &releases);
}

/* A dictionary longer than its offsets say: its length 3 needs 4 offsets. */
static int test_dictionary_length_past_offsets(void) {
  CRAFT(2, false);
  int32_t* doff = own(c, 16);
  CHECK(doff != NULL);
  doff[0] = 0;
  doff[1] = 1;
  doff[2] = 3;
  doff[3] = 2; /* the fourth offset goes backwards */
  c->dict_buffers[1] = doff;
  c->dict.length = 3;
  return expect_refused("dictionary offsets backwards at its end", &array, &schema, "d",
                        &releases);
}

/* Lengths, offsets and null counts that break the spec or overflow int64 in
 * the sizes they imply: one field of one array set per case. */
typedef enum { F_LENGTH, F_OFFSET, F_NULL_COUNT } header_field;
typedef struct header_case {
  const char* label;
  int array; /* COL_S, COL_V, COL_D, NCOLS: the dictionary, -1: the struct */
  header_field field;
  int64_t value;
  const char* column; /* the column the error must name (NULL: the batch) */
} header_case;

static const header_case kHeaderCases[] = {
    {"length -1", COL_V, F_LENGTH, -1, "v"},
    {"offset -1", COL_V, F_OFFSET, -1, "v"},
    {"offset + length overflow", COL_V, F_OFFSET, INT64_MAX - 1, "v"},
    /* offset + length = INT64_MAX - 1: fits, its bitmap's byte count too */
    {"offset + length just below INT64_MAX", COL_V, F_OFFSET, INT64_MAX - 3, "v"},
    /* offset + length fits int64, its byte size (x 8) does not */
    {"int64 buffer size overflow", COL_V, F_OFFSET, (int64_t)1 << 61, "v"},
    /* (offset + length + 1) x 4 overflows */
    {"utf8 offsets size overflow", COL_S, F_OFFSET, INT64_MAX / 4, "s"},
    {"dictionary offset overflow", NCOLS, F_OFFSET, INT64_MAX, "d"},
    {"dictionary length -3", NCOLS, F_LENGTH, -3, "d"},
    {"null_count -5", COL_V, F_NULL_COUNT, -5, "v"},
    {"null_count above length, no bitmap", COL_V, F_NULL_COUNT, 3, "v"},
    {"struct offset past its children", -1, F_OFFSET, 1, "s"},
    {"struct offset + length overflow", -1, F_OFFSET, INT64_MAX, NULL},
    {"struct length -1", -1, F_LENGTH, -1, NULL},
};

static int test_header_fields(void) {
  for (size_t i = 0; i < sizeof kHeaderCases / sizeof kHeaderCases[0]; i++) {
    const header_case* h = &kHeaderCases[i];
    CRAFT(2, false);
    struct ArrowArray* a = h->array < 0        ? &array
                           : h->array == NCOLS ? &c->dict
                                               : &c->cols[h->array];
    int64_t* field = h->field == F_LENGTH   ? &a->length
                     : h->field == F_OFFSET ? &a->offset
                                            : &a->null_count;
    *field = h->value;
    if (expect_refused(h->label, &array, &schema, h->column, &releases) != 0) return 1;
  }
  return 0;
}

static int test_null_count_above_length(void) {
  CRAFT(2, false);
  uint8_t* bitmap = own(c, 1);
  CHECK(bitmap != NULL);
  bitmap[0] = 0x00;
  c->v_buffers[0] = bitmap;
  c->cols[COL_V].null_count = 3;
  return expect_refused("null_count 3 > length 2", &array, &schema, "v", &releases);
}

static int test_invalid_utf8(void) {
  CRAFT(2, false);
  char* data = (char*)c->s_buffers[2];
  data[1] = (char)0xC3; /* "r0" -> "r\xC3": a lead byte with no continuation */
  return expect_refused("invalid utf8", &array, &schema, "s", &releases);
}

/* ------------------------------------------------------------------------------
 * Schema metadata (each blob exactly as long as its words)
 * ---------------------------------------------------------------------------- */

/* Garbage as a pair count: 0xAAAAAAAA is negative. */
static int test_metadata_garbage_count(void) {
  CRAFT(2, false);
  const int32_t words[] = {(int32_t)0xAAAAAAAAu};
  CHECK(set_metadata(&schema, words, 1) == 0);
  return expect_refused("metadata pair count garbage", &array, &schema, NULL, &releases);
}

/* A pair count no blob could hold, in a 4-byte blob: refused unread. */
static int test_metadata_count_too_large(void) {
  CRAFT(2, false);
  const int32_t words[] = {0x41414141};
  CHECK(set_metadata(&schema, words, 1) == 0);
  return expect_refused("metadata pair count 0x41414141", &array, &schema, NULL,
                        &releases);
}

static int test_metadata_negative_key_length(void) {
  CRAFT(2, false);
  const int32_t words[] = {1, -8, 0};
  CHECK(set_metadata(&schema, words, 3) == 0);
  return expect_refused("metadata key length -8", &array, &schema, NULL, &releases);
}

static int test_metadata_huge_value_length(void) {
  CRAFT(2, false);
  const int32_t words[] = {1, 4, 0x41414141, INT32_MAX};
  CHECK(set_metadata(&schema, words, 4) == 0);
  return expect_refused("metadata value length 2^31-1", &array, &schema, NULL, &releases);
}

/* On a column: the error names it. */
static int test_metadata_on_column(void) {
  CRAFT(2, false);
  const int32_t words[] = {2, 0, -1};
  CHECK(set_metadata(schema.children[COL_V], words, 3) == 0);
  return expect_refused("column metadata value length -1", &array, &schema, "v",
                        &releases);
}

/* On a dictionary's value type: the error names the column. */
static int test_metadata_on_dictionary(void) {
  CRAFT(2, false);
  const int32_t words[] = {-1};
  CHECK(set_metadata(schema.children[COL_D]->dictionary, words, 1) == 0);
  return expect_refused("dictionary metadata count -1", &array, &schema, "d", &releases);
}

/* Well-formed metadata (an extension name) is accepted as before. */
static int test_metadata_valid_accepted(void) {
  CRAFT(2, false);
  const char* key = "ARROW:extension:name";
  const char* value = "my.ext";
  size_t klen = strlen(key), vlen = strlen(value);
  size_t size = 4 + 4 + klen + 4 + vlen;
  char* blob = malloc(size);
  CHECK(blob != NULL);
  int32_t n = 1, k = (int32_t)klen, v = (int32_t)vlen;
  memcpy(blob, &n, 4);
  memcpy(blob + 4, &k, 4);
  memcpy(blob + 8, key, klen);
  memcpy(blob + 8 + klen, &v, 4);
  memcpy(blob + 12 + klen, value, vlen);
  schema.children[COL_V]->metadata = blob;
  env e;
  CHECK(env_open(&e) == 0);
  CHECK(push_accepted(&e, &array, &schema, VIEW_SQL, VIEW_OF_TWO) == 0);
  CHECK(env_close(&e) == 0);
  CHECK(releases == 1);
  return 0;
}

/* A valid batch of many rows (probed ranges) is accepted whole. */
static int test_wide_valid_accepted(void) {
  int64_t rows = 100000;
  CRAFT(rows, false);
  char want[128];
  snprintf(want, sizeof want, "%lld,%lld", (long long)rows,
           (long long)(10 * rows * (rows - 1) / 2));
  env e;
  CHECK(env_open(&e) == 0);
  CHECK(push_accepted(&e, &array, &schema, "SELECT n, sv FROM tot", want) == 0);
  CHECK(env_close(&e) == 0);
  CHECK(releases == 1);
  return 0;
}

static const lm_test_case cases[] = {
    {"utf8_offsets_past_one_byte", test_utf8_offsets_past_one_byte},
    {"large_utf8_offsets_2_40", test_large_utf8_offsets_2_40},
    {"huge_offset_with_bitmap", test_huge_offset_with_bitmap},
    {"struct_huge_offset_with_bitmap", test_struct_huge_offset_with_bitmap},
    {"short_bitmap_many_rows", test_short_bitmap_many_rows},
    {"dictionary_values_past_buffer", test_dictionary_values_past_buffer},
    {"utf8_offsets_not_monotone", test_utf8_offsets_not_monotone},
    {"utf8_offset_wraps_negative", test_utf8_offset_wraps_negative},
    {"utf8_first_offset_after_last", test_utf8_first_offset_after_last},
    {"dictionary_offsets_not_monotone", test_dictionary_offsets_not_monotone},
    {"dictionary_index_past_end", test_dictionary_index_past_end},
    {"dictionary_index_negative", test_dictionary_index_negative},
    {"dictionary_length_past_offsets", test_dictionary_length_past_offsets},
    {"header_fields", test_header_fields},
    {"null_count_above_length", test_null_count_above_length},
    {"invalid_utf8", test_invalid_utf8},
    {"metadata_garbage_count", test_metadata_garbage_count},
    {"metadata_count_too_large", test_metadata_count_too_large},
    {"metadata_negative_key_length", test_metadata_negative_key_length},
    {"metadata_huge_value_length", test_metadata_huge_value_length},
    {"metadata_on_column", test_metadata_on_column},
    {"metadata_on_dictionary", test_metadata_on_dictionary},
    {"metadata_valid_accepted", test_metadata_valid_accepted},
    {"wide_valid_accepted", test_wide_valid_accepted},
    {NULL, NULL},
};

int main(int argc, char** argv) { return lm_test_main(argc, argv, cases); }
