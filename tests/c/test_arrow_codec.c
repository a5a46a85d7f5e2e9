/*
 * test_arrow_codec.c -- the WAL's batch encodings (src/arrow/codec.h), the
 * first form and the compact one: random batches of every type (NULLs, empty
 * and non-ASCII strings) round-trip value for value; the compact form picks
 * the width and kind each column's range calls for, at every width boundary,
 * with steps that overflow int64; every truncation, every flipped byte and a
 * schema that differs are refused with LAMINAR_ERR_IO (or, for a flip, give
 * another valid batch), without leaks or reads out of bounds.
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

static const char* const WORDS[] = {"",
                                    "a",
                                    "M\xc3\xbcnchen",
                                    "\xe6\x9d\xb1\xe4\xba\xac",
                                    "with,comma",
                                    "0123456789abcdef0123456789"};

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
  return memcmp((const char*)a->data + r * w, (const char*)b->data + r * w, (size_t)w) ==
         0;
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
      for (int64_t row = 0; row < n; row++)
        bad += !same_value(&c.v[k], &back->cols[k], row);
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

/* ---- the compact form -------------------------------------------------------------- */

/* Encode `batch` compact into a buffer of exactly plan.size bytes (ASan sees
 * any write past it); the caller frees *out. */
static size_t encode_compact(const lm_batch* batch, lm_batch_plan* plan, uint8_t** out) {
  *out = NULL;
  if (!lm_batch_plan_compact(batch, plan)) return 0;
  *out = malloc(plan->size > 0 ? plan->size : 1);
  lm_batch_encode_compact(plan, *out);
  return plan->size;
}

/* Decode and compare with `want` (all columns, all rows); 0 when equal. */
static int compact_same(const lm_schema* schema, const lm_vec* want, int32_t ncols,
                        int64_t n, const uint8_t* enc, size_t len) {
  lm_state_reader r;
  lm_state_reader_init(&r, enc, len);
  lm_batch* back;
  laminar_error err;
  CHECK_CODE(lm_batch_decode_compact(schema, &r, &back, &err), LAMINAR_OK, &err);
  CHECK(r.pos == len && back->nrows == n && back->ncols == ncols);
  int bad = 0;
  for (int32_t k = 0; k < ncols; k++) {
    bool want_nulls = false;
    for (int64_t row = 0; want[k].nulls != NULL && row < n; row++)
      want_nulls |= want[k].nulls[row];
    EXPECT((back->cols[k].nulls != NULL) == want_nulls); /* no bitmap without a NULL */
    for (int64_t row = 0; row < n; row++)
      bad += !same_value(&want[k], &back->cols[k], row);
  }
  lm_batch_unref(back);
  EXPECT(bad == 0);
  return bad != 0;
}

static int test_compact_roundtrip(void) {
  rng_state = lm_test_seed() | 1;
  /* around the encoder's 512-row chunks, where a step crosses from one to the next */
  static const int64_t sizes[] = {0, 1, 2, 7, 511, 512, 513, 1000, 1024, 1025, 3000};
  for (size_t si = 0; si < sizeof sizes / sizeof sizes[0]; si++) {
    int64_t n = sizes[si];
    cols6 c;
    make(&c, n);
    if (c.nulls[4] != NULL)
      memset(c.nulls[4], 0, (size_t)(n > 0 ? n : 1)); /* NULL-free bytes */
    lm_batch* batch;
    CHECK_CODE(lm_arrow_build(&c.schema, c.v, n, &batch), LAMINAR_OK, NULL);
    lm_batch_plan plan;
    uint8_t* enc;
    size_t len = encode_compact(batch, &plan, &enc);
    CHECK(len > 0);
    EXPECT(len < lm_batch_encoded_size(batch) ||
           n < 8); /* 4 bytes a column more at most */
    EXPECT(!plan.cols[4].nulls && plan.cols[4].kind == 3);
    int bad = compact_same(&c.schema, batch->cols, 6, n, enc, len);

    /* Every cut fails cleanly. */
    lm_batch* back;
    laminar_error err;
    for (size_t cut = 0; cut < len; cut += (len > 4000 ? 89 : 1)) {
      lm_state_reader r;
      lm_state_reader_init(&r, enc, cut);
      CHECK_CODE(lm_batch_decode_compact(&c.schema, &r, &back, &err), LAMINAR_ERR_IO,
                 &err);
      CHECK(back == NULL);
    }
    /* Another schema: a column's type changed, or a column more. */
    c.schema.fields[1].type = LM_TYPE_INT64;
    lm_state_reader r;
    lm_state_reader_init(&r, enc, len);
    CHECK_CODE(lm_batch_decode_compact(&c.schema, &r, &back, &err), LAMINAR_ERR_IO, &err);
    CHECK(strstr(err.message, "column type differs") != NULL);
    c.schema.fields[1].type = LM_TYPE_INT32;
    lm_schema_add(&c.schema, "extra", LM_TYPE_INT32, false);
    lm_state_reader_init(&r, enc, len);
    CHECK_CODE(lm_batch_decode_compact(&c.schema, &r, &back, &err), LAMINAR_ERR_IO, &err);
    CHECK(strstr(err.message, "column count differs") != NULL);
    free(enc);
    lm_batch_plan_free(&plan);
    lm_batch_unref(batch);
    unmake(&c);
    if (bad) return 1;
  }
  return 0;
}

/* One integer column of `type` with n values from gen(i); the plan's kind and
 * width must be as given, the size as the layout says, the round trip exact. */
typedef int64_t (*gen_fn)(int64_t i, int64_t n);
static int int_case(const char* what, lm_type type, int64_t n, gen_fn gen, int kind,
                    int width) {
  lm_schema schema;
  lm_schema_init_empty(&schema);
  lm_schema_add(&schema, "x", type, false);
  int64_t w = lm_type_width(type);
  uint8_t* data = calloc((size_t)(n > 0 ? n : 1), (size_t)w);
  for (int64_t i = 0; i < n; i++) {
    int64_t v = gen(i, n);
    if (type == LM_TYPE_INT32) {
      int32_t v32 = (int32_t)v;
      memcpy(data + 4 * i, &v32, 4);
    } else if (type == LM_TYPE_BOOL) {
      data[i] = (uint8_t)(v & 1);
    } else {
      memcpy(data + 8 * i, &v, 8);
    }
  }
  lm_vec v = {.type = type, .len = n, .nulls = NULL, .data = data};
  lm_batch* batch;
  CHECK_CODE(lm_arrow_build(&schema, &v, n, &batch), LAMINAR_OK, NULL);
  lm_batch_plan plan;
  uint8_t* enc;
  size_t len = encode_compact(batch, &plan, &enc);
  size_t want =
      9 + 4 +
      (kind == 2 ? 16 + (size_t)(n - 1) * (size_t)width : 8 + (size_t)n * (size_t)width);
  if (plan.cols[0].kind != kind || plan.cols[0].width != width || len != want)
    fprintf(stderr, "%s: kind %d width %d size %zu, expected kind %d width %d size %zu\n",
            what, plan.cols[0].kind, plan.cols[0].width, len, kind, width, want);
  int bad = plan.cols[0].kind != kind || plan.cols[0].width != width || len != want;
  bad |= compact_same(&schema, &v, 1, n, enc, len);
  free(enc);
  lm_batch_plan_free(&plan);
  lm_batch_unref(batch);
  free(data);
  lm_schema_free(&schema);
  return bad;
}

static int64_t g_range;
static int64_t g_base;
/* base, base + range, then random values within (never beyond) the range
 * (range -1: the whole 64-bit range) */
static int64_t gen_range(int64_t i, int64_t n) {
  (void)n;
  if (g_range == -1)
    return (int64_t)((uint64_t)g_base + (i == 0 ? 0 : i == 1 ? UINT64_MAX : rnd()));
  uint64_t off = i == 0   ? 0
                 : i == 1 ? (uint64_t)g_range
                          : rnd() % ((uint64_t)g_range + 1);
  return (int64_t)((uint64_t)g_base + off);
}
static int64_t gen_const(int64_t i, int64_t n) { return (void)i, (void)n, g_base; }
static int64_t gen_ms(int64_t i, int64_t n) { return (void)n, 1700000000000 + i; }
static int64_t gen_step(int64_t i, int64_t n) { /* wraps around int64 several times */
  return (void)n, (int64_t)((uint64_t)g_base + (uint64_t)i * (uint64_t)g_range);
}
static int64_t gen_extremes(int64_t i, int64_t n) {
  return (void)n, i % 2 ? INT64_MAX : INT64_MIN;
}
static int64_t gen_jitter(int64_t i, int64_t n) { /* +1000 steps, each off by up to 3 */
  return (void)n, g_base + i * 1000 + (int64_t)(rnd() % 4);
}

static int test_compact_widths(void) {
  rng_state = lm_test_seed() | 1;
  int bad = 0;
  static const struct {
    int64_t range;
    int width;
  } bounds[] = {{0xFF, 1},       {0x100, 2},         {0xFFFF, 2}, {0x10000, 4},
                {0xFFFFFFFF, 4}, {0x100000000LL, 8}, {-1, 8}};
  static const int64_t bases[] = {0, -5, INT64_MIN, INT64_MAX - 0x100000000LL,
                                  1700000000000};
  for (size_t b = 0; b < sizeof bases / sizeof bases[0]; b++) {
    g_base = bases[b];
    for (size_t k = 0; k < sizeof bounds / sizeof bounds[0]; k++) {
      g_range = bounds[k].range;
      bad |= int_case("range", LM_TYPE_INT64, 1000, gen_range, 1, bounds[k].width);
      bad |= int_case("range ts", LM_TYPE_TIMESTAMP, 700, gen_range, 1, bounds[k].width);
    }
    bad |= int_case("constant", LM_TYPE_INT64, 1000, gen_const, 1, 0);
    bad |= int_case("one row", LM_TYPE_INT64, 1, gen_const, 1, 0);
    bad |= int_case("jitter", LM_TYPE_INT64, 1500, gen_jitter, 2, 1);
  }
  bad |= int_case("no rows", LM_TYPE_INT64, 0, gen_const, 1, 0);
  bad |= int_case("+1 ms", LM_TYPE_TIMESTAMP, 8192, gen_ms, 2, 0);
  /* Steps of +-(2^64 - 1) wrap to -1 and +1: one byte a row. */
  bad |= int_case("extremes", LM_TYPE_INT64, 1000, gen_extremes, 2, 1);
  /* Steps of 2^62 + 3 overflow int64 every few rows: one step, width 0. */
  g_base = INT64_MAX - 7;
  g_range = (int64_t)((1ull << 62) + 3);
  bad |= int_case("wrapping steps", LM_TYPE_INT64, 1000, gen_step, 2, 0);
  g_range = -2;
  bad |= int_case("falling", LM_TYPE_INT64, 1000, gen_step, 2, 0);
  /* Other integer widths go through the same 64-bit path. */
  g_base = INT32_MIN;
  g_range = 0xFFFF;
  bad |= int_case("int32 range", LM_TYPE_INT32, 1000, gen_range, 1, 2);
  g_range = 0xFFFFFFFF;
  bad |= int_case("int32 full", LM_TYPE_INT32, 1000, gen_range, 1, 4);
  g_base = 0;
  g_range = 1;
  bad |= int_case("bool", LM_TYPE_BOOL, 1000, gen_range, 1, 1);
  bad |= int_case("bool constant", LM_TYPE_BOOL, 600, gen_const, 1, 0);
  EXPECT(bad == 0);
  return bad;
}

/* Strings: lengths packed, the bytes copied at once when back to back. */
static int test_compact_strings(void) {
  rng_state = lm_test_seed() | 1;
  lm_schema schema;
  lm_schema_init_empty(&schema);
  lm_schema_add(&schema, "s", LM_TYPE_STRING, false);
  enum { N = 1200 };
  static char pool[N * 4 + 70000];
  for (size_t i = 0; i < sizeof pool; i++) pool[i] = (char)('A' + i % 26);
  lm_str* s = calloc(N, sizeof *s);
  uint8_t* nulls = calloc(N, 1);
  int bad = 0;
  for (int shape = 0; shape < 5; shape++) {
    int64_t at = 0;
    for (int64_t i = 0; i < N; i++) {
      int64_t len = shape == 0   ? 4
                    : shape == 1 ? 0
                    : shape == 2 ? (int64_t)(rnd() % 9)
                                 : 3;
      if (shape == 4 && i == 7) len = 70000; /* lengths need 4 bytes */
      s[i] = (lm_str){pool + at, len};
      at += shape == 3 ? len + 1 : len; /* shape 3: a gap after each string */
      nulls[i] = shape == 2 && rnd() % 5 == 0;
    }
    static const int widths[] = {0, 0, 1, 0, 4};
    lm_vec v = {
        .type = LM_TYPE_STRING, .len = N, .nulls = shape == 2 ? nulls : NULL, .data = s};
    lm_batch* batch;
    CHECK_CODE(lm_arrow_build(&schema, &v, N, &batch), LAMINAR_OK, NULL);
    lm_batch_plan plan;
    uint8_t* enc;
    size_t len = encode_compact(batch, &plan, &enc);
    EXPECT(plan.cols[0].width == widths[shape]);
    EXPECT(plan.cols[0].nulls == (shape == 2));
    bad |= plan.cols[0].width != widths[shape];
    bad |= compact_same(&schema, &v, 1, N, enc, len);
    /* the batch's own views (after import) and this shape's views: both (the
     * batch's NULL rows hold empty strings, so only shapes without NULLs) */
    lm_batch_plan plan2;
    uint8_t* enc2;
    lm_batch view = *batch;
    view.cols = &v;
    size_t len2 = encode_compact(&view, &plan2, &enc2);
    EXPECT(plan2.cols[0].contiguous == (shape != 3));
    bad |= compact_same(&schema, &v, 1, N, enc2, len2);
    if (shape != 2) {
      EXPECT(len2 == len && memcmp(enc, enc2, len) == 0);
      bad |= len2 != len || memcmp(enc, enc2, len) != 0;
    }
    free(enc2);
    lm_batch_plan_free(&plan2);
    free(enc);
    lm_batch_plan_free(&plan);
    lm_batch_unref(batch);
  }
  free(s);
  free(nulls);
  lm_schema_free(&schema);
  return bad;
}

/* Flip each byte of small encodings (four masks) and cut them at every length:
 * an error or a valid batch, never a crash, a leak or a read out of bounds
 * (the ASan build runs this too). */
static int test_compact_corrupt(void) {
  rng_state = lm_test_seed() | 1;
  static const int64_t sizes[] = {0, 3, 20};
  int refused = 0, accepted = 0;
  for (size_t si = 0; si < sizeof sizes / sizeof sizes[0]; si++) {
    int64_t n = sizes[si];
    cols6 c;
    make(&c, n);
    lm_batch* batch;
    CHECK_CODE(lm_arrow_build(&c.schema, c.v, n, &batch), LAMINAR_OK, NULL);
    lm_batch_plan plan;
    uint8_t* enc;
    size_t len = encode_compact(batch, &plan, &enc);
    uint8_t* copy = malloc(len);
    static const uint8_t masks[] = {0x01, 0x10, 0x80, 0xFF};
    for (size_t at = 0; at < len; at++) {
      for (size_t m = 0; m < sizeof masks; m++) {
        memcpy(copy, enc, len);
        copy[at] ^= masks[m];
        lm_state_reader r;
        lm_state_reader_init(&r, copy, len);
        lm_batch* back;
        laminar_error err;
        laminar_code rc = lm_batch_decode_compact(&c.schema, &r, &back, &err);
        if (rc == LAMINAR_OK) {
          accepted++;
          CHECK(back->ncols == 6 && back->nrows <= LM_BATCH_COMPACT_MAX_ROWS);
          for (int64_t row = 0; row < back->nrows; row++) {
            uint8_t b = ((const uint8_t*)back->cols[0].data)[row];
            CHECK(b <= 1); /* BOOLEAN stays 0 or 1 */
          }
          lm_batch_unref(back);
        } else {
          CHECK(rc == LAMINAR_ERR_IO && back == NULL);
          CHECK(strstr(err.message, "logged batch (compact)") != NULL);
          refused++;
        }
      }
    }
    for (size_t cut = 0; cut < len; cut++) {
      memcpy(copy, enc, cut);
      lm_state_reader r;
      lm_state_reader_init(&r, copy, cut);
      lm_batch* back;
      CHECK_CODE(lm_batch_decode_compact(&c.schema, &r, &back, NULL), LAMINAR_ERR_IO,
                 NULL);
    }
    free(copy);
    free(enc);
    lm_batch_plan_free(&plan);
    lm_batch_unref(batch);
    unmake(&c);
  }
  fprintf(stderr, "flipped: %d refused, %d decoded to another valid batch\n", refused,
          accepted);
  EXPECT(refused > 0);
  return 0;
}

/* More rows than the compact form takes, or more columns than the plan holds inline. */
static int test_compact_limits(void) {
  lm_schema schema;
  lm_schema_init_empty(&schema);
  lm_vec v[12];
  int64_t vals[3] = {1, 2, 3};
  for (int k = 0; k < 12; k++) {
    char name[8];
    snprintf(name, sizeof name, "c%d", k);
    lm_schema_add(&schema, name, LM_TYPE_INT64, false);
    v[k] = (lm_vec){.type = LM_TYPE_INT64, .len = 3, .nulls = NULL, .data = vals};
  }
  lm_batch* batch;
  CHECK_CODE(lm_arrow_build(&schema, v, 3, &batch), LAMINAR_OK, NULL);
  lm_batch_plan plan;
  uint8_t* enc;
  size_t len = encode_compact(batch, &plan, &enc);
  CHECK(len > 0 && plan.cols != plan.small);
  int bad = compact_same(&schema, v, 12, 3, enc, len);
  free(enc);
  lm_batch_plan_free(&plan);
  lm_batch big = *batch;
  big.nrows = LM_BATCH_COMPACT_MAX_ROWS + 1; /* only the count is read before refusing */
  EXPECT(!lm_batch_plan_compact(&big, &plan));
  lm_batch_unref(batch);
  lm_schema_free(&schema);
  return bad;
}

static const lm_test_case cases[] = {{"roundtrip", test_roundtrip},
                                     {"compact_roundtrip", test_compact_roundtrip},
                                     {"compact_widths", test_compact_widths},
                                     {"compact_strings", test_compact_strings},
                                     {"compact_corrupt", test_compact_corrupt},
                                     {"compact_limits", test_compact_limits},
                                     {NULL, NULL}};

int main(int argc, char** argv) { return lm_test_main(argc, argv, cases); }
