/*
 * file.c -- two-phase JSONL/CSV part-file sink (see file.h).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE  // O_CLOEXEC, fdatasync under -std=c17
#endif

#include "sink/file.h"

#include "sink/sink.h"
#include "connect/avro.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "expr/expr.h"
#include "store/fs.h"
#include "util/util.h"

#define EPOCH_DIGITS 20
#define FLUSH_BYTES (1u << 20)

struct lm_file_sink {
  lm_sink base; /* the engine's view (sink.h) */
  char* dir;    /* as given (messages) */
  char* real;   /* the directory opened, canonical */
  int dir_fd;   /* every entry is made, renamed and removed through it */
  lm_sink_format format;
  lm_schema schema;
  uint64_t committed;  /* highest committed epoch */
  uint64_t current;    /* epoch open for writes (0: none) */
  uint64_t last_begun; /* highest epoch begun */
  int fd;              /* staging file of `current`, -1 until the first row */
  bool header_done;    /* CSV header written for `current` */
  uint64_t file_len;   /* bytes of the staging file written for sure */
  char* buf;           /* formatted rows not yet written */
  size_t len, cap;
  bool nomem;
  /* Epochs sealed (closed for writes, graph stopped) and not yet synced:
   * only the checkpoint coordinator touches these, never the writer. */
  struct sealed_epoch* sealed;
  int32_t nsealed, cap_sealed;
  char last_error[sizeof(((laminar_error*)0)->message)]; /* the last failed write's */
  int32_t* key; /* framed formats: the key's columns (lm_file_sink_set_key) */
  int32_t nkey;
  /* LM_SINK_RECORDS_AVRO: the codecs of the row and of the key (NULL: no
   * key), made by lm_file_sink_set_key; a row's cells. */
  lm_avro *avro, *avro_key;
  int32_t* all; /* 0..ncols-1 */
  lm_avro_cell* cells;
};

/* A sealed epoch: its staging file and the rows still to write to it. */
typedef struct sealed_epoch {
  uint64_t epoch;
  int fd; /* -1: not created yet */
  uint64_t file_len;
  char* buf;
  size_t len;
} sealed_epoch;

static const char* ext(const lm_file_sink* s) {
  switch (s->format) {
    case LM_SINK_CSV: return "csv";
    case LM_SINK_RECORDS_JSON:
    case LM_SINK_RECORDS_CSV:
    case LM_SINK_RECORDS_RAW:
    case LM_SINK_RECORDS_AVRO: return "records";
    case LM_SINK_JSONL: break;
  }
  return "jsonl";
}

/* A part file's name in the directory (dir_fd), and its path for messages. */
static void part_name(const lm_file_sink* s, uint64_t epoch, bool staged, char* out,
                      size_t n) {
  snprintf(out, n, "%spart-%0*" PRIu64 ".%s%s", staged ? "." : "", EPOCH_DIGITS, epoch,
           ext(s), staged ? ".pending" : "");
}

static void part_path(const lm_file_sink* s, uint64_t epoch, bool staged, char* out,
                      size_t n) {
  char name[64];
  part_name(s, epoch, staged, name, sizeof name);
  snprintf(out, n, "%s/%s", s->dir, name);
}

static laminar_code io_fail(laminar_error* err, const char* what, const char* path,
                            int e) {
  return lm_error_set(err, LAMINAR_ERR_IO, "sink: %s '%s' failed: %s", what, path,
                      strerror(e));
}


/* Epoch of a directory entry named like a part file (staged or not), or 0. */
static uint64_t entry_epoch(const lm_file_sink* s, const char* name, bool* staged) {
  *staged = name[0] == '.';
  const char* p = name + (*staged ? 1 : 0);
  if (strncmp(p, "part-", 5) != 0) return 0;
  p += 5;
  uint64_t e = 0;
  for (int i = 0; i < EPOCH_DIGITS; i++) {
    if (p[i] < '0' || p[i] > '9') return 0;
    e = e * 10 + (uint64_t)(p[i] - '0');
  }
  p += EPOCH_DIGITS;
  char want[32];
  snprintf(want, sizeof want, ".%s%s", ext(s), *staged ? ".pending" : "");
  return strcmp(p, want) == 0 ? e : 0;
}

/* ---- formatting --------------------------------------------------------------- */

static void put(lm_file_sink* s, const char* p, size_t n) {
  if (s->len + n > s->cap) {
    size_t cap = s->cap ? s->cap : 1u << 16;
    while (cap < s->len + n) cap *= 2;
    char* nb = lm_realloc(s->buf, cap);
    if (nb == NULL) {
      s->nomem = true;
      return;
    }
    s->buf = nb;
    s->cap = cap;
  }
  memcpy(s->buf + s->len, p, n);
  s->len += n;
}
static void puts_(lm_file_sink* s, const char* p) { put(s, p, strlen(p)); }

static void json_string(lm_file_sink* s, const char* p, int64_t n) {
  put(s, "\"", 1);
  int64_t run = 0; /* bytes copied as they are */
  for (int64_t i = 0; i < n; i++) {
    unsigned char c = (unsigned char)p[i];
    if (c >= 0x20 && c != '"' && c != '\\') continue;
    put(s, p + run, (size_t)(i - run));
    char esc[8];
    switch (c) {
      case '"': puts_(s, "\\\""); break;
      case '\\': puts_(s, "\\\\"); break;
      case '\n': puts_(s, "\\n"); break;
      case '\r': puts_(s, "\\r"); break;
      case '\t': puts_(s, "\\t"); break;
      default: snprintf(esc, sizeof esc, "\\u%04x", c); puts_(s, esc);
    }
    run = i + 1;
  }
  put(s, p + run, (size_t)(n - run));
  put(s, "\"", 1);
}

static void csv_string(lm_file_sink* s, const char* p, int64_t n) {
  bool quote = n == 0; /* "" tells an empty string from NULL */
  for (int64_t i = 0; i < n && !quote; i++)
    quote = p[i] == ',' || p[i] == '"' || p[i] == '\n' || p[i] == '\r';
  if (!quote) {
    put(s, p, (size_t)n);
    return;
  }
  put(s, "\"", 1);
  int64_t run = 0;
  for (int64_t i = 0; i < n; i++) {
    if (p[i] != '"') continue;
    put(s, p + run, (size_t)(i + 1 - run)); /* the quote, then once more */
    run = i;
  }
  put(s, p + run, (size_t)(n - run));
  put(s, "\"", 1);
}

/* One value, formatted as text (strings excepted: the caller escapes them).
 * Returns false for a value to write as NULL. */
static bool scalar_text(const lm_vec* v, int64_t r, char* out, size_t cap, size_t* n) {
  switch (lm_type_kind(v->type)) {
    case LM_TYPE_DECIMAL: /* a number: "12.50" */
      *n = (size_t)lm_expr_format_decimal(lm_vec_dec_at(v, r), lm_type_scale(v->type),
                                          out, cap);
      return true;
    case LM_TYPE_BOOL:
      *n = (size_t)snprintf(out, cap, "%s",
                            ((const uint8_t*)v->data)[r] ? "true" : "false");
      return true;
    case LM_TYPE_INT32:
      *n = (size_t)snprintf(out, cap, "%" PRId32, ((const int32_t*)v->data)[r]);
      return true;
    case LM_TYPE_INT16:
    case LM_TYPE_INT8:
      *n = (size_t)snprintf(out, cap, "%" PRId64, lm_vec_int_at(v, r));
      return true;
    case LM_TYPE_INT64:
      *n = (size_t)snprintf(out, cap, "%" PRId64, ((const int64_t*)v->data)[r]);
      return true;
    case LM_TYPE_DOUBLE: {
      double d = ((const double*)v->data)[r];
      if (!isfinite(d)) return false;
      *n = (size_t)lm_expr_format_double(d, out, cap);
      return true;
    }
    case LM_TYPE_FLOAT: {
      float f = ((const float*)v->data)[r];
      if (!isfinite(f)) return false;
      *n = (size_t)lm_expr_format_real(f, out, cap);
      return true;
    }
    case LM_TYPE_TIMESTAMP:
      *n = (size_t)lm_expr_format_timestamp(((const int64_t*)v->data)[r], out, cap);
      return true;
    case LM_TYPE_DATE:
      *n = (size_t)lm_expr_format_date(((const int32_t*)v->data)[r], out, cap);
      return true;
    case LM_TYPE_TIME:
      *n = (size_t)lm_expr_format_time(((const int64_t*)v->data)[r], out, cap);
      return true;
    case LM_TYPE_STRING:
    case LM_TYPE_BINARY: /* the callers write them */
    case LM_TYPE_NULL: break;
  }
  return false;
}

/* A VARBINARY value as a quoted string of its blob text (CAST(b AS VARCHAR):
 * printable ASCII but '"', '\'' and '\\' as itself, other bytes \xHH), the
 * backslash doubled in JSON. The text holds no '"', so one quoting suits CSV. */
static void blob_string(lm_file_sink* s, lm_str b, bool csv) {
  static const char hex[] = "0123456789ABCDEF";
  put(s, "\"", 1);
  for (int64_t k = 0; k < b.len; k++) {
    uint8_t c = (uint8_t)b.ptr[k];
    if (c >= 0x20 && c <= 0x7e && c != '"' && c != '\'' && c != '\\') {
      put(s, (const char*)&b.ptr[k], 1);
      continue;
    }
    char esc[5] = {'\\', 'x', hex[c >> 4], hex[c & 15], 0};
    if (!csv) put(s, "\\", 1);
    put(s, esc, 4);
  }
  put(s, "\"", 1);
}

/* The cells idx[0..n) of row r (all columns when idx is NULL): a JSON object,
 * or CSV fields without the line break. */
static void format_cells(lm_file_sink* s, const lm_vec* cols, int64_t r,
                         const int32_t* idx, int32_t n, bool csv) {
  const lm_schema* sc = &s->schema;
  char num[64];
  if (!csv) put(s, "{", 1);
  for (int32_t i = 0; i < n; i++) {
    int32_t c = idx != NULL ? idx[i] : i;
    const lm_vec* v = &cols[c];
    if (i > 0) put(s, ",", 1);
    if (!csv) {
      json_string(s, sc->fields[c].name, (int64_t)strlen(sc->fields[c].name));
      put(s, ":", 1);
    }
    bool null = v->nulls != NULL && v->nulls[r];
    if (!null && v->type == LM_TYPE_BINARY) {
      blob_string(s, ((const lm_str*)v->data)[r], csv);
      continue;
    }
    if (!null && v->type == LM_TYPE_STRING) {
      lm_str str = ((const lm_str*)v->data)[r];
      if (csv)
        csv_string(s, str.ptr, str.len);
      else
        json_string(s, str.ptr, str.len);
      continue;
    }
    size_t len = 0;
    if (!null && scalar_text(v, r, num, sizeof num, &len)) {
      if (!csv && (v->type == LM_TYPE_TIMESTAMP || v->type == LM_TYPE_DATE ||
                   v->type == LM_TYPE_TIME))
        json_string(s, num, (int64_t)len);
      else
        put(s, num, len);
    } else if (!csv) {
      puts_(s, "null");
    }
  }
  if (!csv) put(s, "}", 1);
}

/* A record of the framed formats: 4 bytes of length (little endian), then
 * the cells. */
static void framed_cells(lm_file_sink* s, const lm_vec* cols, int64_t r,
                         const int32_t* idx, int32_t n, bool csv) {
  size_t at = s->len;
  put(s, "\0\0\0\0", 4);
  if (n > 0) format_cells(s, cols, r, idx, n, csv);
  if (s->nomem) return;
  uint32_t len = (uint32_t)(s->len - at - 4);
  for (int i = 0; i < 4; i++) s->buf[at + (size_t)i] = (char)((len >> (8 * i)) & 0xff);
}

/* A record of LM_SINK_RECORDS_RAW: 4 bytes of length, then cell (c, r) as
 * it is: a string's bytes, another value's text (NULL, or c < 0: nothing). */
static void framed_raw(lm_file_sink* s, const lm_vec* cols, int64_t r, int32_t c) {
  const lm_vec* v = c >= 0 ? &cols[c] : NULL;
  const char* p = NULL;
  size_t n = 0;
  char num[64];
  if (v != NULL && !(v->nulls != NULL && v->nulls[r])) {
    if (lm_type_is_bytes(v->type)) {
      lm_str str = ((const lm_str*)v->data)[r];
      p = str.ptr;
      n = (size_t)str.len;
    } else if (scalar_text(v, r, num, sizeof num, &n)) {
      p = num;
    }
  }
  char len[4];
  for (int i = 0; i < 4; i++) len[i] = (char)((n >> (8 * i)) & 0xff);
  put(s, len, 4);
  if (n > 0) put(s, p, n);
}

/* The raw value column: the first one not in the key. */
static int32_t raw_value_col(const lm_file_sink* s) {
  for (int32_t c = 0; c < s->schema.ncols; c++) {
    bool in_key = false;
    for (int32_t k = 0; k < s->nkey; k++) in_key |= s->key[k] == c;
    if (!in_key) return c;
  }
  return -1;
}

/* A record of LM_SINK_RECORDS_AVRO: 4 bytes of length, then the Avro record
 * of the columns idx[0..n) of row r (codec a; NULL: an empty record). */
static void framed_avro(lm_file_sink* s, lm_avro* a, const lm_vec* cols, int64_t r,
                        const int32_t* idx, int32_t n) {
  const char* out = NULL;
  size_t len = 0;
  for (int32_t k = 0; a != NULL && k < n; k++) {
    const lm_vec* v = &cols[idx[k]];
    lm_avro_cell* c = &s->cells[k];
    *c = (lm_avro_cell){.kind = LM_AVRO_NULL};
    if (v->nulls != NULL && v->nulls[r]) continue;
    switch (v->type) {
      case LM_TYPE_STRING: {
        lm_str str = ((const lm_str*)v->data)[r];
        *c = (lm_avro_cell){.kind = LM_AVRO_STR, .s = str.ptr, .len = (size_t)str.len};
        break;
      }
      case LM_TYPE_DOUBLE:
        *c = (lm_avro_cell){.kind = LM_AVRO_DOUBLE, .d = ((const double*)v->data)[r]};
        break;
      case LM_TYPE_BOOL:
        *c = (lm_avro_cell){.kind = LM_AVRO_BOOL, .i = ((const uint8_t*)v->data)[r]};
        break;
      case LM_TYPE_DATE:
        *c = (lm_avro_cell){.kind = LM_AVRO_INT, .i = ((const int32_t*)v->data)[r]};
        break;
      case LM_TYPE_TIMESTAMP:
        *c = (lm_avro_cell){.kind = LM_AVRO_INT, .i = ((const int64_t*)v->data)[r]};
        break;
      default: *c = (lm_avro_cell){.kind = LM_AVRO_INT, .i = lm_vec_int_at(v, r)};
    }
  }
  const char* why;
  if (a != NULL && !lm_avro_encode(a, s->cells, &out, &len, &why)) {
    s->nomem = true; /* the schema is the columns': only out of memory fails */
    return;
  }
  char head[4];
  for (int i = 0; i < 4; i++) head[i] = (char)((len >> (8 * i)) & 0xff);
  put(s, head, 4);
  if (len > 0) put(s, out, len);
}

static void format_rows(lm_file_sink* s, const lm_vec* cols, int64_t nrows) {
  const lm_schema* sc = &s->schema;
  if (s->format == LM_SINK_RECORDS_AVRO) {
    for (int64_t r = 0; r < nrows && !s->nomem; r++) {
      framed_avro(s, s->avro_key, cols, r, s->key, s->nkey);
      framed_avro(s, s->avro, cols, r, s->all, sc->ncols);
    }
    return;
  }
  if (s->format == LM_SINK_RECORDS_RAW) {
    int32_t value = raw_value_col(s);
    for (int64_t r = 0; r < nrows && !s->nomem; r++) {
      framed_raw(s, cols, r, s->nkey > 0 ? s->key[0] : -1);
      framed_raw(s, cols, r, value);
    }
    return;
  }
  bool framed = s->format == LM_SINK_RECORDS_JSON || s->format == LM_SINK_RECORDS_CSV;
  bool csv = s->format == LM_SINK_CSV || s->format == LM_SINK_RECORDS_CSV;
  if (csv && !framed && !s->header_done) {
    for (int32_t c = 0; c < sc->ncols; c++) {
      if (c > 0) put(s, ",", 1);
      csv_string(s, sc->fields[c].name, (int64_t)strlen(sc->fields[c].name));
    }
    put(s, "\n", 1);
    s->header_done = true;
  }
  for (int64_t r = 0; r < nrows && !s->nomem; r++) {
    if (framed) {
      framed_cells(s, cols, r, s->key, s->nkey, csv);
      framed_cells(s, cols, r, NULL, sc->ncols, csv);
    } else {
      format_cells(s, cols, r, NULL, sc->ncols, csv);
      put(s, "\n", 1);
    }
  }
}

/* ---- staging file ------------------------------------------------------------------- */


/* Append buf[0..*len) to epoch's staging file at *file_len (created on the
 * first write), then empty it. At the known end: a write that failed halfway
 * is overwritten by the next attempt, and cut off before the flush. */
static laminar_code write_staged(const lm_file_sink* s, uint64_t epoch, int* fd,
                                 uint64_t* file_len, const char* buf, size_t* len,
                                 laminar_error* err) {
  if (*len == 0) return LAMINAR_OK;
  char path[4096], name[64];
  part_path(s, epoch, true, path, sizeof path);
  if (*fd < 0) {
    part_name(s, epoch, true, name, sizeof name);
    /* A stale or planted entry is replaced, never followed. */
    *fd = lm_fs_create_excl_at(s->dir_fd, name);
    if (*fd < 0) return io_fail(err, "create", path, errno);
  }
  int e = lm_fs_pwrite_all(*fd, buf, *len, *file_len);
  if (e != 0) return io_fail(err, "write", path, e);
  *file_len += *len;
  *len = 0;
  return LAMINAR_OK;
}

static laminar_code flush_buf(lm_file_sink* s, laminar_error* err) {
  return write_staged(s, s->current, &s->fd, &s->file_len, s->buf, &s->len, err);
}

static void end_epoch(lm_file_sink* s) {
  if (s->fd >= 0) close(s->fd);
  s->fd = -1;
  s->len = 0;
  s->file_len = 0;
  s->current = 0;
  s->header_done = false;
}

static void drop_sealed(lm_file_sink* s, int32_t i) {
  if (s->sealed[i].fd >= 0) close(s->sealed[i].fd);
  lm_free(s->sealed[i].buf);
  memmove(&s->sealed[i], &s->sealed[i + 1],
          (size_t)(s->nsealed - i - 1) * sizeof *s->sealed);
  s->nsealed--;
}

/* ---- the protocol -------------------------------------------------------------------- */

/* ---- the engine's view (sink.h) ---------------------------------------------------- */

static laminar_code vt_write(lm_sink* b, const lm_vec* cols, int64_t n,
                             laminar_error* err) {
  return lm_file_sink_write((lm_file_sink*)b, cols, n, err);
}
static laminar_code vt_begin(lm_sink* b, uint64_t epoch, laminar_error* err) {
  return lm_file_sink_begin((lm_file_sink*)b, epoch, err);
}
static laminar_code vt_pre_commit(lm_sink* b, laminar_error* err) {
  return lm_file_sink_seal((lm_file_sink*)b, err);
}
static laminar_code vt_sync(lm_sink* b, laminar_error* err) {
  return lm_file_sink_sync((lm_file_sink*)b, err);
}
static laminar_code vt_commit(lm_sink* b, uint64_t epoch, laminar_error* err) {
  return lm_file_sink_commit((lm_file_sink*)b, epoch, err);
}
static laminar_code vt_recover(lm_sink* b, uint64_t epoch, laminar_error* err) {
  return lm_file_sink_recover((lm_file_sink*)b, epoch, err);
}
static void vt_close(lm_sink* b) { lm_file_sink_close((lm_file_sink*)b); }
static const char* vt_last_error(lm_sink* b) { return ((lm_file_sink*)b)->last_error; }

static const lm_sink_vt FILE_VT = {.write = vt_write,
                                   .begin = vt_begin,
                                   .pre_commit = vt_pre_commit,
                                   .sync = vt_sync,
                                   .commit = vt_commit,
                                   .recover = vt_recover,
                                   .close = vt_close,
                                   .last_error = vt_last_error};

lm_sink* lm_file_sink_base(lm_file_sink* sink) { return &sink->base; }

/* ---- a sink of a read-only database (sink.h) ------------------------------------ */

static laminar_code discard_write(lm_sink* b, const lm_vec* cols, int64_t n,
                                  laminar_error* err) {
  (void)b, (void)cols, (void)n, (void)err;
  return LAMINAR_OK;
}
static laminar_code discard_epoch(lm_sink* b, uint64_t epoch, laminar_error* err) {
  (void)b, (void)epoch, (void)err;
  return LAMINAR_OK;
}
static laminar_code discard_step(lm_sink* b, laminar_error* err) {
  (void)b, (void)err;
  return LAMINAR_OK;
}
static void discard_close(lm_sink* b) { lm_free(b); }

static const lm_sink_vt DISCARD_VT = {.write = discard_write,
                                      .begin = discard_epoch,
                                      .pre_commit = discard_step,
                                      .sync = NULL,
                                      .commit = discard_epoch,
                                      .recover = discard_epoch,
                                      .close = discard_close};

laminar_code lm_discard_sink_create(lm_sink** out, laminar_error* err) {
  *out = lm_calloc(1, sizeof **out);
  if (*out == NULL) return lm_error_set(err, LAMINAR_ERR_NOMEM, "sink: out of memory");
  (*out)->vt = &DISCARD_VT;
  return LAMINAR_OK;
}

/* A directory stream over the sink's directory (its own descriptor, so
 * closedir leaves dir_fd open), or NULL with errno. */
static DIR* open_entries(const lm_file_sink* s) {
  int fd = openat(s->dir_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return NULL;
  DIR* d = fdopendir(fd);
  if (d == NULL) {
    int e = errno;
    close(fd);
    errno = e;
  }
  return d;
}

laminar_code lm_file_sink_open(const char* dir, lm_sink_format format,
                               const lm_schema* schema, lm_file_sink** out,
                               laminar_error* err) {
  *out = NULL;
  /* The path is resolved (a symlinked directory is taken where it leads)
   * and the directory opened once, by its canonical name, with
   * O_NOFOLLOW: where the descriptor is (lm_file_sink_real) is what the
   * caller checks, and every file goes through it, so a symlink swapped
   * into the path later leads nowhere. */
  char canon[4096];
  int re = lm_fs_resolve(dir, canon, sizeof canon);
  if (re != 0) return io_fail(err, "resolve", dir, re);
  if (mkdir(canon, 0755) != 0 && errno != EEXIST)
    return io_fail(err, "mkdir", dir, errno);
  lm_file_sink* s = lm_calloc(1, sizeof *s);
  if (s == NULL) return lm_error_set(err, LAMINAR_ERR_NOMEM, "sink: out of memory");
  s->base.vt = &FILE_VT;
  s->fd = -1;
  s->dir_fd = -1;
  s->format = format;
  s->dir = lm_strdup(dir);
  s->dir_fd = lm_fs_open_dir(canon, canon, sizeof canon);
  if (s->dir_fd < 0) {
    laminar_code rc = io_fail(err, "open directory", dir, errno);
    lm_file_sink_close(s);
    return rc;
  }
  s->real = lm_strdup(canon);
  if (s->dir == NULL || s->real == NULL || lm_schema_copy(schema, &s->schema) != 0) {
    lm_file_sink_close(s);
    return lm_error_set(err, LAMINAR_ERR_NOMEM, "sink: out of memory");
  }
  DIR* d = open_entries(s);
  if (d == NULL) {
    laminar_code rc = io_fail(err, "opendir", dir, errno);
    lm_file_sink_close(s);
    return rc;
  }
  struct dirent* e;
  while ((e = readdir(d)) != NULL) {
    bool staged;
    uint64_t epoch = entry_epoch(s, e->d_name, &staged);
    if (!staged && epoch > s->committed) s->committed = epoch;
  }
  closedir(d);
  *out = s;
  return LAMINAR_OK;
}

void lm_file_sink_close(lm_file_sink* s) {
  if (s == NULL) return;
  if (s->fd >= 0) {
    /* The open epoch's staging file: no checkpoint covers it (one seals the
     * epoch first), so its rows go with the sink, as a restart would drop
     * them -- a sink created again on this path must not publish them. */
    close(s->fd);
    char name[64];
    part_name(s, s->current, true, name, sizeof name);
    unlinkat(s->dir_fd, name, 0);
  }
  while (s->nsealed > 0) drop_sealed(s, 0);
  if (s->dir_fd >= 0) close(s->dir_fd);
  lm_free(s->sealed);
  lm_schema_free(&s->schema);
  lm_avro_free(s->avro);
  lm_avro_free(s->avro_key);
  lm_free(s->all);
  lm_free(s->cells);
  lm_free(s->buf);
  lm_free(s->dir);
  lm_free(s->real);
  lm_free(s->key);
  lm_free(s);
}

laminar_code lm_file_sink_set_key(lm_file_sink* s, const int32_t* cols, int32_t n,
                                  laminar_error* err) {
  int32_t* key = lm_calloc((size_t)n + 1, sizeof *key);
  if (key == NULL) return lm_error_set(err, LAMINAR_ERR_NOMEM, "sink: out of memory");
  if (n > 0) memcpy(key, cols, (size_t)n * sizeof *key);
  lm_free(s->key);
  s->key = key;
  s->nkey = n;
  if (s->format != LM_SINK_RECORDS_AVRO) return LAMINAR_OK;
  int32_t ncols = s->schema.ncols;
  char why[300] = "out of memory";
  s->all = lm_calloc((size_t)ncols + 1, sizeof *s->all);
  s->cells = lm_calloc((size_t)ncols + 1, sizeof *s->cells);
  for (int32_t c = 0; s->all != NULL && c < ncols; c++) s->all[c] = c;
  if (s->all != NULL && s->cells != NULL)
    s->avro = lm_avro_new("row", &s->schema, s->all, ncols, NULL, why, sizeof why);
  if (s->avro != NULL && n > 0)
    s->avro_key = lm_avro_new("key", &s->schema, key, n, NULL, why, sizeof why);
  if (s->avro == NULL || (n > 0 && s->avro_key == NULL))
    return lm_error_set(
        err, lm_avro_available() ? LAMINAR_ERR_CONFIG_VALUE : LAMINAR_ERR_SQL_UNSUPPORTED,
        "sink: format 'avro': %s", why);
  return LAMINAR_OK;
}

const char* lm_file_sink_real(const lm_file_sink* s) { return s->real; }

uint64_t lm_file_sink_committed_epoch(const lm_file_sink* s) { return s->committed; }

laminar_code lm_file_sink_begin(lm_file_sink* s, uint64_t epoch, laminar_error* err) {
  if (s->current != 0 || epoch <= s->committed || epoch <= s->last_begun)
    return lm_error_set(err, LAMINAR_ERR_STATE,
                        "sink '%s': cannot begin epoch %" PRIu64 " (open %" PRIu64
                        ", last begun %" PRIu64 ", committed %" PRIu64 ")",
                        s->dir, epoch, s->current, s->last_begun, s->committed);
  s->current = epoch;
  s->last_begun = epoch;
  return LAMINAR_OK;
}

laminar_code lm_file_sink_write(lm_file_sink* s, const lm_vec* cols, int64_t nrows,
                                laminar_error* err) {
  if (s->current == 0)
    return lm_error_set(err, LAMINAR_ERR_STATE, "sink '%s': write outside an open epoch",
                        s->dir);
  format_rows(s, cols, nrows);
  laminar_error e;
  laminar_code rc = LAMINAR_OK;
  if (s->nomem) {
    s->nomem = false;
    rc = lm_error_set(&e, LAMINAR_ERR_NOMEM, "sink '%s': out of memory", s->dir);
  } else if (s->len >= FLUSH_BYTES) {
    rc = flush_buf(s, &e);
  }
  if (rc != LAMINAR_OK) {
    snprintf(s->last_error, sizeof s->last_error, "%s", e.message);
    if (err != NULL) *err = e;
  }
  return rc;
}

laminar_code lm_file_sink_seal(lm_file_sink* s, laminar_error* err) {
  if (s->current == 0)
    return lm_error_set(err, LAMINAR_ERR_STATE, "sink '%s': no epoch to pre-commit",
                        s->dir);
  if (s->nsealed == s->cap_sealed) {
    int32_t cap = s->cap_sealed ? s->cap_sealed * 2 : 4;
    sealed_epoch* grown = lm_realloc(s->sealed, (size_t)cap * sizeof *grown);
    if (grown == NULL)
      return lm_error_set(err, LAMINAR_ERR_NOMEM, "sink '%s': out of memory", s->dir);
    s->sealed = grown;
    s->cap_sealed = cap;
  }
  s->sealed[s->nsealed++] = (sealed_epoch){.epoch = s->current,
                                           .fd = s->fd,
                                           .file_len = s->file_len,
                                           .buf = s->buf,
                                           .len = s->len};
  /* The next epoch starts with a buffer of its own. */
  s->fd = -1;
  s->buf = NULL;
  s->len = s->cap = 0;
  s->file_len = 0;
  s->current = 0;
  s->header_done = false;
  return LAMINAR_OK;
}

/* Write what is left of sealed epoch k, cut and flush its file, close it. */
/* Write what is left of sealed epoch k, cut and flush its file, close it. */
static laminar_code sync_one(lm_file_sink* s, sealed_epoch* k, laminar_error* err) {
  LM_TRY(write_staged(s, k->epoch, &k->fd, &k->file_len, k->buf, &k->len, err));
  if (k->fd < 0) return LAMINAR_OK; /* no row: no file */
  int e = lm_fault_io();
  if (e == 0 && ftruncate(k->fd, (off_t)k->file_len) != 0) e = errno;
  if (e == 0 && fdatasync(k->fd) != 0) e = errno;
  if (e != 0) {
    char path[4096];
    part_path(s, k->epoch, true, path, sizeof path);
    return io_fail(err, "fdatasync", path, e);
  }
  close(k->fd);
  k->fd = -1;
  return LAMINAR_OK;
}

laminar_code lm_file_sink_sync(lm_file_sink* s, laminar_error* err) {
  /* Oldest first; a failure keeps that epoch and the later ones sealed, with
   * what was written, for the next attempt. */
  while (s->nsealed > 0) {
    LM_TRY(sync_one(s, &s->sealed[0], err));
    drop_sealed(s, 0);
  }
  return LAMINAR_OK;
}

laminar_code lm_file_sink_pre_commit(lm_file_sink* s, laminar_error* err) {
  LM_TRY(lm_file_sink_seal(s, err));
  return lm_file_sink_sync(s, err);
}

/* Index of sealed epoch `epoch`, or -1. */
static int32_t find_sealed(const lm_file_sink* s, uint64_t epoch) {
  for (int32_t i = 0; i < s->nsealed; i++)
    if (s->sealed[i].epoch == epoch) return i;
  return -1;
}

laminar_code lm_file_sink_commit(lm_file_sink* s, uint64_t epoch, laminar_error* err) {
  if (epoch == s->current || find_sealed(s, epoch) >= 0)
    return lm_error_set(err, LAMINAR_ERR_STATE,
                        "sink '%s': epoch %" PRIu64
                        " committed before it was pre-committed",
                        s->dir, epoch);
  char from[4096], to[64], from_name[64];
  part_path(s, epoch, true, from, sizeof from);
  part_name(s, epoch, true, from_name, sizeof from_name);
  part_name(s, epoch, false, to, sizeof to);
  int e = lm_fault_io();
  if (e != 0) return io_fail(err, "rename", from, e);
  if (renameat(s->dir_fd, from_name, s->dir_fd, to) != 0) {
    if (errno != ENOENT) return io_fail(err, "rename", from, errno);
    /* Nothing staged: an empty epoch, or committed already. */
  } else if ((e = lm_fs_fsync_dir_fd(s->dir_fd)) != 0) {
    return io_fail(err, "fsync", s->dir, e);
  }
  if (epoch > s->committed) s->committed = epoch;
  return LAMINAR_OK;
}

laminar_code lm_file_sink_rollback(lm_file_sink* s, uint64_t epoch, laminar_error* err) {
  if (epoch == s->current) end_epoch(s);
  int32_t k = find_sealed(s, epoch);
  if (k >= 0) drop_sealed(s, k);
  char path[4096], name[64];
  part_path(s, epoch, true, path, sizeof path);
  part_name(s, epoch, true, name, sizeof name);
  if (unlinkat(s->dir_fd, name, 0) != 0 && errno != ENOENT)
    return io_fail(err, "unlink", path, errno);
  return LAMINAR_OK;
}

laminar_code lm_file_sink_recover(lm_file_sink* s, uint64_t checkpointed_epoch,
                                  laminar_error* err) {
  if (s->current != 0) end_epoch(s);
  while (s->nsealed > 0) drop_sealed(s, 0);
  DIR* d = open_entries(s);
  if (d == NULL) return io_fail(err, "opendir", s->dir, errno);
  /* Collect first: renaming while reading a directory is unspecified. */
  uint64_t staged_epochs[256];
  size_t n = 0;
  bool more = false;
  struct dirent* e;
  while ((e = readdir(d)) != NULL) {
    bool staged;
    uint64_t epoch = entry_epoch(s, e->d_name, &staged);
    if (epoch == 0 || !staged) continue;
    if (n == sizeof staged_epochs / sizeof staged_epochs[0]) {
      more = true;
      break;
    }
    staged_epochs[n++] = epoch;
  }
  closedir(d);
  for (size_t i = 0; i < n; i++) {
    if (staged_epochs[i] <= checkpointed_epoch)
      LM_TRY(lm_file_sink_commit(s, staged_epochs[i], err));
    else
      LM_TRY(lm_file_sink_rollback(s, staged_epochs[i], err));
  }
  /* More than a directory-full of staged epochs: go round again. */
  return more ? lm_file_sink_recover(s, checkpointed_epoch, err) : LAMINAR_OK;
}
