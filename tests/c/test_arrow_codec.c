/*
 * test_arrow_codec.c -- the WAL's batch encoding (src/arrow/codec.h): random
 * batches of every type (NULLs, empty and non-ASCII strings) round-trip value
 * for value; every truncation of an encoding and a schema that differs are
 * refused with LAMINAR_ERR_IO, without leaks or reads out of bounds.
 */
#include "arrow/codec.h"
#include "util/util.h"

#include "lm_test.h"

static uint64_t rng_state;
static uint64_t rnd(void) {
  rng_state ^= rng_state << 13;
  rng_state ^= rng_state >> 7;
  rng_state ^= rng_state << 17;
  return rng_state;
}

typedef struct cols6 {
  lm_schema schema;
  lm_vec v[6];
  uint8_t* nulls[6];
  uint8_t* b;
  int32_t* i;
  int64_t* l;
  double* d;
  lm_str* s;
  int64_t* ts;
} cols6;

static const char* const WORDS[] = {"", "a", "M\xc3\xbcnchen", "\xe6\x9d\xb1\xe4\xba\xac",
                                    "with,comma", "0123456789abcdef0123456789"};

static void make(cols6* c, int64_t n) {
  memset(c, 0, sizeof *c);
  lm_schema_init_empty(&c->schema);
  static const lm_type types[6] = {LM_TYPE_BOOL,   LM_TYPE_INT32,  LM_TYPE_INT64,
                                   LM_TYPE_DOUBLE, LM_TYPE_STRING, LM_TYPE_TIMESTAMP};
  static const char* names[6] = {"b", "i", "l", "d", "s", "ts"};
  for (int k = 0; k < 6; k++) lm_schema_add(&c->schema, names[k], types[k], false);
  size_t m = (size_t)(n > 0 ? n : 1);
  c->b = calloc(m, 1);
  c->i = calloc(m, 4);
  c->l = calloc(m, 8);
  c->d = calloc(m, 8);
  c->s = calloc(m, sizeof(lm_str));
  c->ts = calloc(m, 8);
  for (int64_t r = 0; r < n; r++) {
    c->b[r] = rnd() & 1;
    c->i[r] = (int32_t)rnd();
    c->l[r] = (int64_t)rnd();
    c->d[r] = (double)(int64_t)rnd() / 7.0;
    const char* w = WORDS[rnd() % 6];
    c->s[r] = (lm_str){w, (int64_t)strlen(w)};
    c->ts[r] = (int64_t)(rnd() % 4000000000000000ull);
  }
  void* data[6] = {c->b, c->i, c->l, c->d, c->s, c->ts};
  for (int k = 0; k < 6; k++) {
    if (k % 2 == 0) { /* every other column has NULLs */
      c->nulls[k] = calloc(m, 1);
      for (int64_t r = 0; r < n; r++) c->nulls[k][r] = rnd() % 4 == 0;
    }
    c->v[k] = (lm_vec){.type = types[k], .len = n, .nulls = c->nulls[k], .data = data[k]};
  }
}

static void unmake(cols6* c) {
  for (int k = 0; k < 6; k++) free(c->nulls[k]);
  free(c->b);
  free(c->i);
  free(c->l);
  free(c->d);
  free(c->s);
  free(c->ts);
  lm_schema_free(&c->schema);
}

static bool same_value(const lm_vec* a, const lm_vec* b, int64_t r) {
  bool na = a->nulls != NULL && a->nulls[r], nb = b->nulls != NULL && b->nulls[r];
  if (na || nb) return na == nb;
  if (a->type == LM_TYPE_STRING) {
    lm_str x = ((const lm_str*)a->data)[r], y = ((const lm_str*)b->data)[r];
    return x.len == y.len && (x.len == 0 || memcmp(x.ptr, y.ptr, (size_t)x.len) == 0);
  }
  int64_t w = lm_type_width(a->type);
  return memcmp((const char*)a->data + r * w, (const char*)b->data + r * w, (size_t)w) == 0;
}

static int test_roundtrip(void) {
  rng_state = lm_test_seed() | 1;
  static const int64_t sizes[] = {0, 1, 7, 1000};
  for (size_t si = 0; si < sizeof sizes / sizeof sizes[0]; si++) {
    int64_t n = sizes[si];
    cols6 c;
    make(&c, n);
    lm_batch* batch;
    CHECK_CODE(lm_arrow_build(&c.schema, c.v, n, &batch), LAMINAR_OK, NULL);
    lm_state_writer w;
    lm_state_writer_init(&w);
    lm_batch_encode(batch, &w);
    CHECK_CODE(lm_state_writer_status(&w), LAMINAR_OK, NULL);
    lm_state_reader r;
    lm_state_reader_init(&r, w.data, w.len);
    lm_batch* back;
    laminar_error err;
    CHECK_CODE(lm_batch_decode(&c.schema, &r, &back, &err), LAMINAR_OK, &err);
    CHECK(r.pos == w.len && back->nrows == n && back->ncols == 6);
    int bad = 0;
    for (int k = 0; k < 6; k++)
      for (int64_t row = 0; row < n; row++) bad += !same_value(&c.v[k], &back->cols[k], row);
    EXPECT(bad == 0);
    lm_batch_unref(back);

    /* Every cut of the encoding fails cleanly. */
    for (size_t cut = 0; cut < w.len; cut += (w.len > 4000 ? 97 : 1)) {
      lm_state_reader_init(&r, w.data, cut);
      CHECK_CODE(lm_batch_decode(&c.schema, &r, &back, &err), LAMINAR_ERR_IO, &err);
      CHECK(back == NULL);
    }
    /* Another schema: a column's type changed. */
    c.schema.fields[1].type = LM_TYPE_INT64;
    lm_state_reader_init(&r, w.data, w.len);
    CHECK_CODE(lm_batch_decode(&c.schema, &r, &back, &err), LAMINAR_ERR_IO, &err);
    CHECK(strstr(err.message, "column type differs") != NULL);
    lm_state_writer_free(&w);
    lm_batch_unref(batch);
    unmake(&c);
    if (bad) return 1;
  }
  return 0;
}

static const lm_test_case cases[] = {{"roundtrip", test_roundtrip}, {NULL, NULL}};

int main(int argc, char** argv) { return lm_test_main(argc, argv, cases); }
