/*
 * codec_compact.c -- the WAL's compact batch form (layout in codec.h; issue 6).
 *
 * Why: at W1's full speed (~55M rows/s on one core) the form of codec.c, 32-37
 * bytes a row, is ~2 GB/s of log, twice what this VM's disk takes, so
 * wal_mode = 'async' was disk-bound (docs/BENCHMARKS.md, "Durability
 * overhead"). Here W1 costs 14 bytes a row: symbols as 4 bytes and no lengths,
 * prices raw, volumes 2 bytes, timestamps none.
 *
 * Cost: the encoder runs on the pushing thread (the analysis outside the WAL's
 * lock, the fill under it), so both are plain loops over the column the
 * compiler vectorizes; they are compiled twice, for the x86-64 baseline and
 * for AVX2 (64-bit compares: min/max of int64 do not vectorize without them),
 * and the CPU picks, as crc32c.c does for its instruction. Integer columns of
 * other widths than 8 bytes are widened 512 rows at a time into a stack
 * buffer, so one 64-bit path serves every integer type.
 *
 * The decoder runs at recovery only and trusts nothing (the record's CRC
 * passed, but a bug or a forged file must not become a crash).
 */
#include <string.h>

#include "arrow/codec.h"
#include "util/util.h"

#define VERSION 1
#define KIND_RAW 0
#define KIND_FOR 1
#define KIND_DELTA 2
#define KIND_STR 3
#define CHUNK 512 /* rows widened at a time (4 KiB of int64 on the stack) */

#define HOT static inline __attribute__((always_inline))

static int64_t sub64(int64_t a, int64_t b) {
  return (int64_t)((uint64_t)a - (uint64_t)b);
}

static uint8_t width_of(uint64_t range) {
  return range == 0             ? 0
         : range <= 0xFFu       ? 1
         : range <= 0xFFFFu     ? 2
         : range <= 0xFFFFFFFFu ? 4
                                : 8;
}

static bool is_integer(lm_type t) {
  return t == LM_TYPE_BOOL || t == LM_TYPE_INT32 || t == LM_TYPE_INT64 ||
         t == LM_TYPE_TIMESTAMP || t == LM_TYPE_DATE;
}

/* ---- analysis ---------------------------------------------------------------------- */

/* Rows [start, start + n) of an integer column as int64: the column's own
 * memory for 8-byte types, else widened into tmp. */
HOT const int64_t* ints(const lm_vec* v, size_t start, size_t n, int64_t* tmp) {
  if (v->type == LM_TYPE_INT64 || v->type == LM_TYPE_TIMESTAMP)
    return (const int64_t*)v->data + start;
  if (v->type == LM_TYPE_INT32 || v->type == LM_TYPE_DATE) {
    const int32_t* p = (const int32_t*)v->data + start;
    for (size_t i = 0; i < n; i++) tmp[i] = p[i];
  } else {
    const uint8_t* p = (const uint8_t*)v->data + start;
    for (size_t i = 0; i < n; i++) tmp[i] = p[i];
  }
  return tmp;
}

typedef struct int_range {
  int64_t min, max;   /* of the values */
  int64_t dmin, dmax; /* of the steps value[r] - value[r-1] (mod 2^64) */
} int_range;

HOT void range_chunk(const int64_t* x, size_t n, int_range* r) {
  int64_t mn = r->min, mx = r->max, dmn = r->dmin, dmx = r->dmax;
  for (size_t i = 0; i < n; i++) {
    mn = x[i] < mn ? x[i] : mn;
    mx = x[i] > mx ? x[i] : mx;
  }
  for (size_t i = 1; i < n; i++) {
    int64_t d = sub64(x[i], x[i - 1]);
    dmn = d < dmn ? d : dmn;
    dmx = d > dmx ? d : dmx;
  }
  *r = (int_range){mn, mx, dmn, dmx};
}

/* Choose FOR or DELTA for an integer column; returns the bytes of its values. */
HOT size_t plan_ints(const lm_vec* v, size_t n, lm_col_plan* p) {
  int_range r = {INT64_MAX, INT64_MIN, INT64_MAX, INT64_MIN};
  int64_t tmp[CHUNK], prev = 0;
  for (size_t start = 0; start < n; start += CHUNK) {
    size_t m = n - start < CHUNK ? n - start : CHUNK;
    const int64_t* x = ints(v, start, m, tmp);
    if (start > 0) { /* the step across the chunk boundary */
      int64_t d = sub64(x[0], prev);
      r.dmin = d < r.dmin ? d : r.dmin;
      r.dmax = d > r.dmax ? d : r.dmax;
    }
    range_chunk(x, m, &r);
    prev = x[m - 1];
  }
  if (n == 0) r.min = r.max = 0;
  p->kind = KIND_FOR;
  p->width = width_of((uint64_t)r.max - (uint64_t)r.min);
  p->base = r.min;
  size_t size = 8 + n * p->width;
  if (n >= 2) {
    uint8_t wd = width_of((uint64_t)r.dmax - (uint64_t)r.dmin);
    size_t dsize = 16 + (n - 1) * wd;
    if (dsize < size) {
      int64_t first = 0;
      memcpy(&first, ints(v, 0, 1, tmp), 8);
      p->kind = KIND_DELTA;
      p->width = wd;
      p->base = first;
      p->step = r.dmin;
      size = dsize;
    }
  }
  return size;
}

HOT size_t plan_strings(const lm_vec* v, size_t n, lm_col_plan* p) {
  const lm_str* s = v->data;
  int64_t mn = INT64_MAX, mx = INT64_MIN;
  uint64_t total = 0;
  for (size_t i = 0; i < n; i++) {
    int64_t len = s[i].len;
    mn = len < mn ? len : mn;
    mx = len > mx ? len : mx;
    total += (uint64_t)len;
  }
  /* Imported strings are views into the producer's one bytes buffer: when
   * each starts where the previous ends, one copy moves them all. */
  uintptr_t gaps = 0;
  for (size_t i = 1; i < n; i++)
    gaps |= ((uintptr_t)s[i - 1].ptr + (uintptr_t)s[i - 1].len) ^ (uintptr_t)s[i].ptr;
  if (n == 0) mn = mx = 0;
  p->kind = KIND_STR;
  p->width = width_of((uint64_t)mx - (uint64_t)mn);
  p->base = mn;
  p->total = total;
  p->contiguous = gaps == 0;
  return 16 + n * p->width + total;
}

HOT bool any_null(const uint8_t* nulls, size_t n) {
  uint8_t any = 0;
  for (size_t i = 0; i < n; i++) any |= nulls[i];
  return any != 0;
}

HOT size_t plan_batch(const lm_batch* batch, lm_col_plan* cols) {
  size_t n = (size_t)batch->nrows, size = 9;
  for (int32_t c = 0; c < batch->ncols; c++) {
    const lm_vec* v = &batch->cols[c];
    lm_col_plan* p = &cols[c];
    *p = (lm_col_plan){0};
    size += 4;
    p->nulls = v->nulls != NULL && any_null(v->nulls, n);
    if (p->nulls) size += (n + 7) / 8;
    if (is_integer(v->type)) {
      size += plan_ints(v, n, p);
    } else if (lm_type_is_bytes(v->type)) {
      size += plan_strings(v, n, p);
    } else { /* DOUBLE (and the NULL type): as in memory */
      p->kind = KIND_RAW;
      p->width = (uint8_t)lm_type_width(v->type);
      size += n * p->width;
    }
  }
  return size;
}

#ifdef __x86_64__
__attribute__((target("avx2"))) static size_t plan_batch_avx2(const lm_batch* batch,
                                                              lm_col_plan* cols) {
  return plan_batch(batch, cols);
}
#endif

static size_t plan_batch_any(const lm_batch* batch, lm_col_plan* cols) {
  return plan_batch(batch, cols);
}

bool lm_batch_plan_compact(const lm_batch* batch, lm_batch_plan* out) {
  *out = (lm_batch_plan){.batch = batch};
  if (batch->nrows > LM_BATCH_COMPACT_MAX_ROWS) return false;
  out->cols = out->small;
  if (batch->ncols > 8) {
    out->cols = lm_malloc((size_t)batch->ncols * sizeof *out->cols);
    if (out->cols == NULL) return false;
  }
#ifdef __x86_64__
  if (__builtin_cpu_supports("avx2")) {
    out->size = plan_batch_avx2(batch, out->cols);
    return true;
  }
#endif
  out->size = plan_batch_any(batch, out->cols);
  return true;
}

void lm_batch_plan_free(lm_batch_plan* plan) {
  if (plan->cols != plan->small) lm_free(plan->cols);
  plan->cols = NULL;
}

/* ---- encoding ---------------------------------------------------------------------- */

HOT uint8_t* put64(uint8_t* dst, uint64_t v) {
  memcpy(dst, &v, 8);
  return dst + 8;
}

/* Store n offsets in `w` bytes each (little-endian host: the low bytes). */
HOT uint8_t* store(const uint64_t* off, size_t n, uint8_t w, uint8_t* dst) {
  switch (w) {
    case 0: break;
    case 1:
      for (size_t i = 0; i < n; i++) dst[i] = (uint8_t)off[i];
      break;
    case 2:
      for (size_t i = 0; i < n; i++) {
        uint16_t t = (uint16_t)off[i];
        memcpy(dst + 2 * i, &t, 2);
      }
      break;
    case 4:
      for (size_t i = 0; i < n; i++) {
        uint32_t t = (uint32_t)off[i];
        memcpy(dst + 4 * i, &t, 4);
      }
      break;
    default: memcpy(dst, off, 8 * n); break;
  }
  return dst + n * w;
}

HOT uint8_t* encode_ints(const lm_vec* v, const lm_col_plan* p, size_t n, uint8_t* dst) {
  dst = put64(dst, (uint64_t)p->base);
  if (p->kind == KIND_DELTA) dst = put64(dst, (uint64_t)p->step);
  if (p->width == 0) return dst;
  int64_t tmp[CHUNK];
  uint64_t off[CHUNK];
  uint64_t base = (uint64_t)p->base, step = (uint64_t)p->step, prev = 0;
  for (size_t start = 0; start < n; start += CHUNK) {
    size_t m = n - start < CHUNK ? n - start : CHUNK;
    const int64_t* x = ints(v, start, m, tmp);
    if (p->kind == KIND_FOR) {
      for (size_t i = 0; i < m; i++) off[i] = (uint64_t)x[i] - base;
      dst = store(off, m, p->width, dst);
      continue;
    }
    off[0] = (uint64_t)x[0] - prev - step; /* the first row of all has no step */
    for (size_t i = 1; i < m; i++) off[i] = (uint64_t)x[i] - (uint64_t)x[i - 1] - step;
    dst =
        start == 0 ? store(off + 1, m - 1, p->width, dst) : store(off, m, p->width, dst);
    prev = (uint64_t)x[m - 1];
  }
  return dst;
}

HOT uint8_t* encode_strings(const lm_vec* v, const lm_col_plan* p, size_t n,
                            uint8_t* dst) {
  const lm_str* s = v->data;
  dst = put64(dst, p->total);
  dst = put64(dst, (uint64_t)p->base);
  uint64_t off[CHUNK], base = (uint64_t)p->base;
  for (size_t start = 0; start < n && p->width > 0; start += CHUNK) {
    size_t m = n - start < CHUNK ? n - start : CHUNK;
    for (size_t i = 0; i < m; i++) off[i] = (uint64_t)s[start + i].len - base;
    dst = store(off, m, p->width, dst);
  }
  if (p->contiguous) {
    if (p->total > 0) memcpy(dst, s[0].ptr, p->total);
    return dst + p->total;
  }
  for (size_t i = 0; i < n; i++) {
    if (s[i].len > 0) memcpy(dst, s[i].ptr, (size_t)s[i].len);
    dst += s[i].len;
  }
  return dst;
}

HOT void encode_batch(const lm_batch_plan* plan, uint8_t* dst) {
  const lm_batch* batch = plan->batch;
  size_t n = (size_t)batch->nrows;
  uint32_t ncols = (uint32_t)batch->ncols, nrows = (uint32_t)n;
  *dst++ = VERSION;
  memcpy(dst, &ncols, 4);
  memcpy(dst + 4, &nrows, 4);
  dst += 8;
  for (int32_t c = 0; c < batch->ncols; c++) {
    const lm_vec* v = &batch->cols[c];
    const lm_col_plan* p = &plan->cols[c];
    dst[0] = (uint8_t)lm_type_kind(v->type); /* a DECIMAL's p, s: in the schema */
    dst[1] = p->nulls;
    dst[2] = p->kind;
    dst[3] = p->width;
    dst += 4;
    if (p->nulls) {
      size_t bytes = (n + 7) / 8;
      memset(dst, 0, bytes);
      for (size_t i = 0; i < n; i++)
        dst[i >> 3] |= (uint8_t)((v->nulls[i] != 0) << (i & 7));
      dst += bytes;
    }
    if (p->kind == KIND_FOR || p->kind == KIND_DELTA) {
      dst = encode_ints(v, p, n, dst);
    } else if (p->kind == KIND_STR) {
      dst = encode_strings(v, p, n, dst);
    } else if (n > 0) {
      memcpy(dst, v->data, n * p->width);
      dst += n * p->width;
    }
  }
}

#ifdef __x86_64__
__attribute__((target("avx2"))) static void encode_batch_avx2(const lm_batch_plan* plan,
                                                              uint8_t* dst) {
  encode_batch(plan, dst);
}
#endif

static void encode_batch_any(const lm_batch_plan* plan, uint8_t* dst) {
  encode_batch(plan, dst);
}

void lm_batch_encode_compact(const lm_batch_plan* plan, uint8_t* dst) {
#ifdef __x86_64__
  if (__builtin_cpu_supports("avx2")) {
    encode_batch_avx2(plan, dst);
    return;
  }
#endif
  encode_batch_any(plan, dst);
}

/* ---- decoding ---------------------------------------------------------------------- */

static laminar_code corrupt(laminar_error* err, const lm_state_reader* r, uint32_t col,
                            const char* what) {
  return lm_error_set(err, LAMINAR_ERR_IO,
                      "logged batch (compact): column %u: %s at byte %zu of %zu", col,
                      what, r->pos, r->len);
}

/* n packed values of `w` bytes at p, widened to u64. */
static void unpack(const uint8_t* p, size_t n, uint8_t w, uint64_t* out) {
  switch (w) {
    case 0: memset(out, 0, n * 8); break;
    case 1:
      for (size_t i = 0; i < n; i++) out[i] = p[i];
      break;
    case 2:
      for (size_t i = 0; i < n; i++) {
        uint16_t t;
        memcpy(&t, p + 2 * i, 2);
        out[i] = t;
      }
      break;
    case 4:
      for (size_t i = 0; i < n; i++) {
        uint32_t t;
        memcpy(&t, p + 4 * i, 4);
        out[i] = t;
      }
      break;
    default: memcpy(out, p, n * 8); break;
  }
}

/* Values [start, start + n) of an integer column from their u64 form; false
 * when a BOOL is neither 0 nor 1. */
static bool put_ints(lm_type type, void* data, size_t start, const uint64_t* x,
                     size_t n) {
  if (type == LM_TYPE_INT64 || type == LM_TYPE_TIMESTAMP) {
    memcpy((int64_t*)data + start, x, n * 8);
    return true;
  }
  if (type == LM_TYPE_INT32 || type == LM_TYPE_DATE) {
    int32_t* d = (int32_t*)data + start;
    for (size_t i = 0; i < n; i++) d[i] = (int32_t)(uint32_t)x[i]; /* the low 32 bits */
    return true;
  }
  uint8_t* d = (uint8_t*)data + start;
  uint64_t bad = 0;
  for (size_t i = 0; i < n; i++) {
    bad |= x[i] >> 1;
    d[i] = (uint8_t)x[i];
  }
  return bad == 0;
}

/* FOR (count = n) or DELTA (count = n - 1 offsets after the first value). */
static laminar_code decode_ints(lm_state_reader* r, uint32_t col, uint8_t kind, uint8_t w,
                                lm_type type, size_t n, void* data, laminar_error* err) {
  uint64_t base = (uint64_t)lm_state_get_i64(r);
  uint64_t step = kind == KIND_DELTA ? (uint64_t)lm_state_get_i64(r) : 0;
  if (kind == KIND_DELTA && n == 0)
    return corrupt(err, r, col, "delta form without rows");
  size_t count = kind == KIND_DELTA ? n - 1 : n;
  const uint8_t* p = lm_state_get_raw(r, count * w);
  if (p == NULL) return corrupt(err, r, col, "truncated values");
  uint64_t x[CHUNK], off[CHUNK];
  uint64_t acc = base;
  for (size_t start = 0; start < n; start += CHUNK) {
    size_t m = n - start < CHUNK ? n - start : CHUNK;
    if (kind == KIND_FOR) {
      unpack(p + start * w, m, w, off);
      for (size_t i = 0; i < m; i++) x[i] = base + off[i];
    } else {
      /* offset k belongs to row k + 1: row 0 is the first value itself */
      size_t first = start == 0 ? 1 : 0;
      unpack(p + (start + first - 1) * w, m - first, w, off + first);
      x[0] = acc;
      for (size_t i = first; i < m; i++) {
        acc += step + off[i];
        x[i] = acc;
      }
    }
    if (!put_ints(type, data, start, x, m))
      return corrupt(err, r, col, "BOOLEAN not 0 or 1");
  }
  return LAMINAR_OK;
}

static laminar_code decode_strings(lm_state_reader* r, uint32_t col, uint8_t w, size_t n,
                                   lm_str* s, laminar_error* err) {
  uint64_t total = (uint64_t)lm_state_get_i64(r);
  uint64_t base = (uint64_t)lm_state_get_i64(r);
  const uint8_t* lens = lm_state_get_raw(r, n * w);
  if (lens == NULL) return corrupt(err, r, col, "truncated string lengths");
  if (total > r->len - r->pos) return corrupt(err, r, col, "string bytes past the end");
  const char* chars = lm_state_get_raw(r, (size_t)total);
  if (chars == NULL) return corrupt(err, r, col, "truncated string bytes");
  uint64_t off[CHUNK], used = 0;
  for (size_t start = 0; start < n; start += CHUNK) {
    size_t m = n - start < CHUNK ? n - start : CHUNK;
    unpack(lens + start * w, m, w, off);
    for (size_t i = 0; i < m; i++) {
      uint64_t len = base + off[i];
      if (len > total - used)
        return corrupt(err, r, col, "string lengths exceed the total");
      s[start + i] = (lm_str){chars + used, (int64_t)len};
      used += len;
    }
  }
  if (used != total)
    return corrupt(err, r, col, "string lengths do not add up to the total");
  return LAMINAR_OK;
}

laminar_code lm_batch_decode_compact(const lm_schema* schema, lm_state_reader* r,
                                     lm_batch** out, laminar_error* err) {
  *out = NULL;
  uint8_t version = lm_state_get_u8(r);
  uint32_t ncols = lm_state_get_u32(r);
  uint32_t nrows = lm_state_get_u32(r);
  if (r->failed) return corrupt(err, r, 0, "truncated header");
  if (version != VERSION) return corrupt(err, r, 0, "unknown version");
  if (ncols != (uint32_t)schema->ncols) return corrupt(err, r, 0, "column count differs");
  if (nrows > LM_BATCH_COMPACT_MAX_ROWS) return corrupt(err, r, 0, "bad row count");
  size_t n = nrows;
  lm_vec* cols = lm_calloc(ncols > 0 ? ncols : 1, sizeof *cols);
  void** owned =
      lm_calloc(2 * (size_t)ncols + 1, sizeof *owned); /* data, nulls per column */
  laminar_code rc = LAMINAR_OK;
  if (cols == NULL || owned == NULL)
    rc = lm_error_set(err, LAMINAR_ERR_NOMEM, "out of memory");
  for (uint32_t c = 0; c < ncols && rc == LAMINAR_OK; c++) {
    uint8_t type = lm_state_get_u8(r), flags = lm_state_get_u8(r);
    uint8_t kind = lm_state_get_u8(r), w = lm_state_get_u8(r);
    lm_type want = schema->fields[c].type;
    if (r->failed) {
      rc = corrupt(err, r, c, "truncated column header");
    } else if (type != (uint8_t)lm_type_kind(want)) {
      rc = corrupt(err, r, c, "column type differs");
    } else if (flags > 1 ||
               !(w == 0 || w == 1 || w == 2 || w == 4 || w == 8 || w == 16)) {
      rc = corrupt(err, r, c, "bad flags or width");
    } else if (!(kind == KIND_STR ? lm_type_is_bytes(want)
                 : kind == KIND_RAW
                     ? !lm_type_is_bytes(want) && w == lm_type_width(want)
                     : (kind == KIND_FOR || kind == KIND_DELTA) && is_integer(want))) {
      rc = corrupt(err, r, c, "encoding does not fit the column's type");
    }
    if (rc != LAMINAR_OK) break;
    lm_vec* v = &cols[c];
    *v = (lm_vec){.type = want, .len = (int64_t)n};
    if (flags & 1) {
      const uint8_t* bits = lm_state_get_raw(r, (n + 7) / 8);
      uint8_t* nulls = owned[2 * c + 1] = lm_malloc(n > 0 ? n : 1);
      if (bits == NULL) {
        rc = corrupt(err, r, c, "truncated null bitmap");
        break;
      }
      if (nulls == NULL) {
        rc = lm_error_set(err, LAMINAR_ERR_NOMEM, "out of memory");
        break;
      }
      for (size_t i = 0; i < n; i++) nulls[i] = (bits[i >> 3] >> (i & 7)) & 1;
      v->nulls = nulls;
    }
    /* Values go to aligned memory: the log's bytes carry no alignment. */
    size_t bytes = n * (size_t)lm_type_width(want);
    void* data = owned[2 * c] = lm_malloc(bytes > 0 ? bytes : 1);
    if (data == NULL) {
      rc = lm_error_set(err, LAMINAR_ERR_NOMEM, "out of memory");
      break;
    }
    v->data = data;
    if (kind == KIND_RAW) {
      const uint8_t* p = lm_state_get_raw(r, bytes);
      if (p == NULL) {
        rc = corrupt(err, r, c, "truncated values");
      } else if (bytes > 0) {
        memcpy(data, p, bytes);
        for (size_t i = 0; want == LM_TYPE_BOOL && i < n && rc == LAMINAR_OK; i++)
          if (p[i] > 1) rc = corrupt(err, r, c, "BOOLEAN not 0 or 1");
      }
    } else if (kind == KIND_STR) {
      rc = decode_strings(r, c, w, n, data, err);
    } else {
      rc = decode_ints(r, c, kind, w, want, n, data, err);
    }
  }
  if (rc == LAMINAR_OK && lm_arrow_build(schema, cols, (int64_t)n, out) != LAMINAR_OK)
    rc = lm_error_set(err, LAMINAR_ERR_NOMEM, "out of memory");
  for (size_t i = 0; owned != NULL && i < 2 * (size_t)ncols; i++) lm_free(owned[i]);
  lm_free(owned);
  lm_free(cols);
  return rc;
}
