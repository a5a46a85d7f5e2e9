/*
 * kafka_source.c -- the Kafka consumer feeding a source (see kafka_source.h).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE  // fdatasync, O_CLOEXEC under -std=c17
#endif

#include "connect/kafka_source.h"

#include "connect/avro.h"
#include "util/util.h"

#ifdef LAMINAR_HAVE_KAFKA

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <librdkafka/rdkafka.h>
#include <math.h>
#include <pthread.h>
#include <regex.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "arrow/arrow.h"
#include "nanoarrow/nanoarrow.h"
#include "store/fs.h"

#define BATCH_ROWS 4096
#define BATCH_NS (50 * 1000 * 1000)

typedef struct part_state {
  int32_t topic; /* its topic: an index of lm_kafka_source.topics */
  int32_t id;
  int64_t next;    /* next offset to read (-1: not known yet) */
  int64_t max_ts;  /* largest event time delivered, ms (INT64_MIN: none) */
  bool eof;        /* at the end of what the partition holds */
  int64_t last_ns; /* when it last delivered (or was assigned) */
  bool joined;     /* found by a metadata refresh while running: holds the
                      watermark back only from its first record on */
  int64_t resume;  /* upsert-json after a restart: the records before this
                      offset only rebuild the keys' rows (-1: none) */
} part_state;

/* upsert-json: every key's current value (the message's bytes), to retract
 * it when the key gets a new value or a tombstone. Open addressing; a
 * deleted key keeps its slot with no value. */
typedef struct upsert_slot {
  char* key;   /* NULL: an empty slot */
  char* value; /* NULL: no row */
  uint32_t kl, vl;
  uint32_t hash;
} upsert_slot;

/* The positions a push left (every partition's next offset after it), kept
 * from the push until a durable checkpoint covers it: then committed to the
 * group. */
typedef struct pending_push {
  struct pending_push* next;
  int64_t seq; /* the push's sequence number (laminar_source_offset) */
  int32_t n;
  struct {
    int32_t topic, id;
    int64_t next;
  } at[];
} pending_push;

/* The columns a dead-letter source may have (kafka_source.h). */
enum {
  DL_TOPIC,
  DL_PARTITION,
  DL_OFFSET,
  DL_TIMESTAMP,
  DL_KEY,
  DL_PAYLOAD,
  DL_REASON,
  DL_NCOLS
};
static const char* const DL_NAMES[DL_NCOLS] = {
    "_topic", "_partition", "_offset", "_timestamp", "_key", "payload", "reason"};

/* One decoded cell. */
typedef enum cell_kind { C_NULL, C_INT, C_DOUBLE, C_STR, C_BOOL } cell_kind;
typedef struct cell {
  cell_kind kind;
  int64_t i;
  double d;
  size_t at, len;  /* C_STR: in the row's scratch text ... */
  const char* ptr; /* ... or, when not NULL, these bytes of the message */
} cell;

/* Members of a JSON object whose column is remembered from the message
 * before (messages of a topic usually list the same members in order). */
#define HINTS 64

struct lm_kafka_source {
  laminar_db* db;
  char* name;
  char* topic; /* the topic, or with `pattern` the regular expression */
  bool pattern;
  regex_t re; /* pattern */
  /* The topics read (one, or those matching the pattern): names and their
   * hashes (the offsets log names a pattern's topics by them). */
  char** topics;
  uint32_t* topic_hash;
  int32_t ntopics, cap_topics;
  char* offsets_log;
  bool csv;
  lm_avro* avro;       /* format 'avro': the codec of the data columns */
  int32_t* avro_idx;   /* those columns */
  bool avro_confluent; /* records after Confluent's 5-byte prefix */
  int32_t navro;
  lm_avro_cell* avro_cells;
  bool raw; /* format 'raw': the payload into column raw_col */
  int32_t raw_col;
  bool upsert; /* format 'upsert-json': a changelog source (kafka_source.h) */
  upsert_slot* slots;
  size_t nslots, used;
  int32_t event_time;
  int64_t wm_delay_ms;
  int64_t idle_ms; /* -1: a partition never goes idle */
  lm_kafka_startup startup;
  int64_t startup_ms;
  int64_t timeout_ms;
  int64_t discovery_ms; /* metadata refresh period (<= 0: none) */
  lm_schema schema;
  struct ArrowSchema arrow_schema;
  int32_t meta_partition, meta_offset, meta_timestamp, meta_key, meta_topic, meta_headers,
      meta_weight; /* -1: absent; _weight only with upsert */
  /* Bad records: stop at the first (bad_fail), or rows of the dead-letter
   * source `dl_name` (NULL: skipped), batched in dl_arr and pushed before the
   * batch they came with. dl_col: its columns' indices, -1 when absent. */
  bool bad_fail;
  char* dl_name;
  lm_schema dl_schema;
  struct ArrowSchema dl_arrow_schema;
  struct ArrowArray dl_arr;
  int32_t dl_col[DL_NCOLS];
  rd_kafka_t* rk;
  rd_kafka_topic_t* rkt; /* the topic's handle of rk (metadata requests) */
  part_state* parts;
  int32_t nparts, cap_parts;
  pthread_t thread;
  bool started;
  atomic_bool stop;
  /* Group commits: the last covered sequence number a checkpoint reported
   * (any thread), the pushes since the last commit (the thread's). */
  _Atomic int64_t covered;
  int64_t committed;
  pending_push *pending, *pending_tail;
  /* Decoding scratch. */
  cell* cells;
  uint32_t* col_len;   /* each column name's length */
  int32_t hint[HINTS]; /* the column of the object's k-th member last time
                          (-1: no column, -2: not known) */
  char* text;
  size_t text_len, text_cap;
  /* Bad records, and what stopped the thread: under mu. */
  pthread_mutex_t mu;
  int64_t bad;
  char bad_reason[256];
  char failure[512];
};

/* ---- decoding --------------------------------------------------------------------- */

static bool text_put(lm_kafka_source* s, const char* p, size_t n) {
  if (s->text_len + n > s->text_cap) {
    size_t cap = s->text_cap ? s->text_cap : 4096;
    while (cap < s->text_len + n) cap *= 2;
    char* grown = lm_realloc(s->text, cap);
    if (grown == NULL) return false;
    s->text = grown;
    s->text_cap = cap;
  }
  memcpy(s->text + s->text_len, p, n);
  s->text_len += n;
  return true;
}

static const char* skip_ws(const char* p, const char* end) {
  while (p < end && (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r')) p++;
  return p;
}

static int hexval(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

/* A JSON string at *pp (after its opening quote) into the scratch text. */
static bool json_string(lm_kafka_source* s, const char** pp, const char* end, size_t* at,
                        size_t* len) {
  const char* p = *pp;
  *at = s->text_len;
  while (p < end && *p != '"') {
    if (*p != '\\') {
      const char* run = p;
      while (p < end && *p != '"' && *p != '\\') p++;
      if (!text_put(s, run, (size_t)(p - run))) return false;
      continue;
    }
    if (++p >= end) return false;
    char c = *p++, out;
    switch (c) {
      case '"': out = '"'; break;
      case '\\': out = '\\'; break;
      case '/': out = '/'; break;
      case 'b': out = '\b'; break;
      case 'f': out = '\f'; break;
      case 'n': out = '\n'; break;
      case 'r': out = '\r'; break;
      case 't': out = '\t'; break;
      case 'u': {
        if (end - p < 4) return false;
        int v = 0;
        for (int k = 0; k < 4; k++) {
          int h = hexval(p[k]);
          if (h < 0) return false;
          v = v * 16 + h;
        }
        p += 4;
        char u[3];
        size_t n;
        if (v >= 0xD800 && v <= 0xDFFF) return false; /* surrogates: not taken */
        if (v < 0x80) {
          u[0] = (char)v;
          n = 1;
        } else if (v < 0x800) {
          u[0] = (char)(0xC0 | (v >> 6));
          u[1] = (char)(0x80 | (v & 0x3F));
          n = 2;
        } else {
          u[0] = (char)(0xE0 | (v >> 12));
          u[1] = (char)(0x80 | ((v >> 6) & 0x3F));
          u[2] = (char)(0x80 | (v & 0x3F));
          n = 3;
        }
        if (!text_put(s, u, n)) return false;
        continue;
      }
      default: return false;
    }
    if (!text_put(s, &out, 1)) return false;
  }
  if (p >= end) return false;
  *pp = p + 1;
  *len = s->text_len - *at;
  return true;
}

/* The powers of ten a double holds exactly. */
static const double POW10[23] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,
                                 1e8,  1e9,  1e10, 1e11, 1e12, 1e13, 1e14, 1e15,
                                 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};

/* The common shapes of a number, -?D+(.D+)?([eE][+-]?D+)?, without strtoll
 * and strtod: an integer of up to 18 digits, or a value whose significant
 * digits make an integer m <= 2^53 scaled by 10^e, |e| <= 22: m and 10^e
 * are exact doubles, so one multiplication or division rounds once, as
 * strtod does (Clinger's fast path). False for any other text: the caller
 * asks the C library, which decides. */
static bool fast_number(const char* p, size_t n, cell* out) {
  const char *q = p, *end = p + n;
  bool neg = q < end && *q == '-';
  q += neg;
  uint64_t m = 0;
  int nd = 0, scale = 0;
  bool integral = true;
  const char* d0 = q;
  for (; q < end && (unsigned)(*q - '0') < 10; q++) {
    if (nd == 19) return false;
    m = m * 10 + (uint64_t)(*q - '0');
    nd += m != 0;
  }
  if (q == d0) return false;
  if (q < end && *q == '.') {
    integral = false;
    const char* f0 = ++q;
    for (; q < end && (unsigned)(*q - '0') < 10; q++, scale--) {
      if (nd == 19) return false;
      m = m * 10 + (uint64_t)(*q - '0');
      nd += m != 0;
    }
    if (q == f0) return false;
  }
  if (q < end && (*q == 'e' || *q == 'E')) {
    integral = false;
    q++;
    bool eneg = q < end && *q == '-';
    q += q < end && (*q == '-' || *q == '+');
    const char* e0 = q;
    int e = 0;
    for (; q < end && (unsigned)(*q - '0') < 10 && q - e0 < 4; q++)
      e = e * 10 + (*q - '0');
    if (q == e0) return false;
    scale += eneg ? -e : e;
  }
  if (q != end) return false;
  if (integral) {
    if (nd > 18) return false;
    int64_t v = neg ? -(int64_t)m : (int64_t)m;
    *out = (cell){.kind = C_INT, .i = v, .d = (double)v};
    return true;
  }
  double d;
  if (m == 0)
    d = 0.0;
  else if (m > (UINT64_C(1) << 53) || scale < -22 || scale > 22)
    return false;
  else
    d = scale >= 0 ? (double)m * POW10[scale] : (double)m / POW10[-scale];
  *out = (cell){.kind = C_DOUBLE, .d = neg ? -d : d};
  return true;
}

/* A number: C_INT when written without fraction or exponent (and in range). */
static bool parse_number(const char* p, size_t n, cell* out) {
  if (fast_number(p, n, out)) return true;
  char buf[64];
  if (n == 0 || n >= sizeof buf) return false;
  memcpy(buf, p, n);
  buf[n] = '\0';
  char* e;
  bool integral = strpbrk(buf, ".eE") == NULL;
  errno = 0;
  if (integral) {
    long long v = strtoll(buf, &e, 10);
    if (*e == '\0' && errno == 0) {
      out->kind = C_INT;
      out->i = v;
      out->d = (double)v;
      return true;
    }
  }
  errno = 0;
  double d = strtod(buf, &e);
  if (*e != '\0' || errno != 0 || !isfinite(d)) return false;
  out->kind = C_DOUBLE;
  out->d = d;
  return true;
}

static int32_t column_of(const lm_kafka_source* s, const char* name, size_t n) {
  for (int32_t c = 0; c < s->schema.ncols; c++)
    if ((s->col_len != NULL ? s->col_len[c] : strlen(s->schema.fields[c].name)) == n &&
        memcmp(s->schema.fields[c].name, name, n) == 0)
      return c;
  return -1;
}

/* A flat JSON object into cells; false with *why on a bad record. */
static bool decode_json(lm_kafka_source* s, const char* p, size_t n, const char** why) {
  const char* end = p + n;
  p = skip_ws(p, end);
  if (p >= end || *p != '{') return *why = "not a JSON object", false;
  p = skip_ws(p + 1, end);
  if (p < end && *p == '}') return true;
  for (int32_t member = 0;; member++) {
    if (p >= end || *p != '"') return *why = "a member without a quoted name", false;
    const char* name = ++p;
    while (p < end && *p != '"' && *p != '\\') p++;
    int32_t col;
    if (p < end && *p == '"') { /* no escapes: the name as it is */
      size_t klen = (size_t)(p++ - name);
      int32_t h = member < HINTS ? s->hint[member] : -1;
      if (h >= 0 && s->col_len[h] == klen &&
          memcmp(s->schema.fields[h].name, name, klen) == 0)
        col = h;
      else if ((col = column_of(s, name, klen)), member < HINTS)
        s->hint[member] = col;
    } else {
      p = name;
      size_t kat, klen;
      if (!json_string(s, &p, end, &kat, &klen)) return *why = "a bad string", false;
      col = column_of(s, s->text + kat, klen);
    }
    p = skip_ws(p, end);
    if (p >= end || *p != ':') return *why = "':' expected", false;
    p = skip_ws(p + 1, end);
    if (p >= end) return *why = "a value expected", false;
    cell v = {.kind = C_NULL};
    if (*p == '"') {
      const char* str = ++p;
      while (p < end && *p != '"' && *p != '\\') p++;
      if (p < end && *p == '"') { /* no escapes: the bytes of the message */
        v.ptr = str;
        v.len = (size_t)(p++ - str);
      } else {
        p = str;
        if (!json_string(s, &p, end, &v.at, &v.len)) return *why = "a bad string", false;
      }
      v.kind = C_STR;
    } else if (*p == '{' || *p == '[') {
      return *why = "a nested object or array", false;
    } else {
      const char* start = p;
      while (p < end && *p != ',' && *p != '}' && *p != ' ' && *p != '\t' && *p != '\n' &&
             *p != '\r')
        p++;
      size_t len = (size_t)(p - start);
      if (len == 4 && memcmp(start, "null", 4) == 0) {
        v.kind = C_NULL;
      } else if (len == 4 && memcmp(start, "true", 4) == 0) {
        v.kind = C_BOOL;
        v.i = 1;
      } else if (len == 5 && memcmp(start, "false", 5) == 0) {
        v.kind = C_BOOL;
        v.i = 0;
      } else if (!parse_number(start, len, &v)) {
        return *why = "a bad value", false;
      }
    }
    if (col >= 0) s->cells[col] = v;
    p = skip_ws(p, end);
    if (p < end && *p == ',') {
      p = skip_ws(p + 1, end);
      continue;
    }
    if (p < end && *p == '}') return true;
    return *why = "',' or '}' expected", false;
  }
}

static bool is_meta(const lm_kafka_source* s, int32_t c) {
  return c == s->meta_partition || c == s->meta_offset || c == s->meta_timestamp ||
         c == s->meta_key || c == s->meta_topic || c == s->meta_headers ||
         c == s->meta_weight;
}

/* The next column CSV fields fill (metadata columns are not in the message). */
static int32_t next_data_col(const lm_kafka_source* s, int32_t c) {
  while (c < s->schema.ncols && is_meta(s, c)) c++;
  return c;
}

/* CSV fields in column order, metadata columns left out (RFC 4180 quoting; an
 * empty unquoted field is NULL). Values are typed by their column. */
static bool decode_csv(lm_kafka_source* s, const char* p, size_t n, const char** why) {
  const char* end = p + n;
  while (end > p && (end[-1] == '\n' || end[-1] == '\r')) end--;
  int32_t col = next_data_col(s, 0);
  for (;;) {
    if (col >= s->schema.ncols) return *why = "more fields than columns", false;
    cell v = {.kind = C_NULL};
    size_t at = s->text_len;
    const char* field; /* the field's text: in the message, or (quoted) the scratch's */
    bool quoted = p < end && *p == '"';
    if (quoted) {
      p++;
      for (;;) {
        if (p >= end) return *why = "an unterminated quote", false;
        if (*p == '"') {
          if (p + 1 < end && p[1] == '"') {
            if (!text_put(s, "\"", 1)) return *why = "out of memory", false;
            p += 2;
            continue;
          }
          p++;
          break;
        }
        if (!text_put(s, p, 1)) return *why = "out of memory", false;
        p++;
      }
    }
    size_t len = s->text_len - at;
    field = s->text + at;
    if (!quoted) {
      field = p;
      while (p < end && *p != ',') p++;
      len = (size_t)(p - field);
    }
    if (quoted || len > 0) {
      lm_type t = s->schema.fields[col].type;
      if (t == LM_TYPE_STRING) {
        v.kind = C_STR;
        v.at = at;
        v.len = len;
        v.ptr = quoted ? NULL : field;
      } else if (t == LM_TYPE_BOOL) {
        bool yes = len == 4 && memcmp(field, "true", 4) == 0;
        bool no = len == 5 && memcmp(field, "false", 5) == 0;
        if (!yes && !no) return *why = "a bad boolean", false;
        v.kind = C_BOOL;
        v.i = yes;
      } else if (!parse_number(field, len, &v)) {
        return *why = "a bad number", false;
      }
    }
    s->cells[col] = v;
    col = next_data_col(s, col + 1);
    if (p >= end) break;
    p++; /* the comma */
  }
  if (col != s->schema.ncols) return *why = "fewer fields than columns", false;
  return true;
}

/* Bytes p[0..n) as a JSON string (quoted, escaped) into the scratch text;
 * false when they are no UTF-8 (or out of memory). */
static bool json_put_string(lm_kafka_source* s, const char* p, size_t n) {
  if (!lm_utf8_valid((const uint8_t*)p, (int64_t)n)) return false;
  if (!text_put(s, "\"", 1)) return false;
  for (size_t i = 0; i < n;) {
    size_t run = i;
    while (run < n && p[run] != '"' && p[run] != '\\' && (unsigned char)p[run] >= 0x20)
      run++;
    if (run > i && !text_put(s, p + i, run - i)) return false;
    if (run == n) break;
    char esc[8];
    unsigned char c = (unsigned char)p[run];
    int k = c == '"' || c == '\\' ? snprintf(esc, sizeof esc, "\\%c", c)
                                  : snprintf(esc, sizeof esc, "\\u%04x", c);
    if (!text_put(s, esc, (size_t)k)) return false;
    i = run + 1;
  }
  return text_put(s, "\"", 1);
}

/* The message's headers as a JSON object {"name":"value",...} in their order
 * (a header without a value: null; a name twice: twice) into the scratch
 * text: *out a C_STR cell. False with *why when a name or value is no UTF-8. */
static bool decode_headers(lm_kafka_source* s, const rd_kafka_message_t* m, cell* out,
                           const char** why) {
  size_t at = s->text_len;
  rd_kafka_headers_t* h = NULL;
  bool ok = text_put(s, "{", 1);
  if (ok && rd_kafka_message_headers(m, &h) == RD_KAFKA_RESP_ERR_NO_ERROR) {
    const char* name;
    const void* value;
    size_t len;
    for (size_t i = 0; ok && rd_kafka_header_get_all(h, i, &name, &value, &len) ==
                                 RD_KAFKA_RESP_ERR_NO_ERROR;
         i++) {
      ok = (i == 0 || text_put(s, ",", 1)) && json_put_string(s, name, strlen(name)) &&
           text_put(s, ":", 1) &&
           (value == NULL ? text_put(s, "null", 4) : json_put_string(s, value, len));
    }
  }
  if (ok) ok = text_put(s, "}", 1);
  if (!ok) return *why = "a header that is no UTF-8", false;
  *out = (cell){.kind = C_STR, .at = at, .len = s->text_len - at};
  return true;
}

/* format 'raw': the payload, as it is, into the value column. */
static bool decode_raw(lm_kafka_source* s, const char* p, size_t n, const char** why) {
  if (!lm_utf8_valid((const uint8_t*)p, (int64_t)n))
    return *why = "a payload that is no UTF-8 (format 'raw' reads it into VARCHAR)",
           false;
  s->cells[s->raw_col] = (cell){.kind = C_STR, .ptr = p, .len = n};
  return true;
}

/* format 'avro': one Avro record of the data columns. */
static bool decode_avro(lm_kafka_source* s, const char* p, size_t n, const char** why) {
  if (s->avro_confluent && (n < 5 || p[0] != 0))
    return *why = "no Confluent wire prefix (a zero byte and a 4-byte schema id)", false;
  if (s->avro_confluent) p += 5, n -= 5;
  if (!lm_avro_decode(s->avro, p, n, s->avro_cells, why)) return false;
  for (int32_t k = 0; k < s->navro; k++) {
    const lm_avro_cell* a = &s->avro_cells[k];
    cell* v = &s->cells[s->avro_idx[k]];
    switch (a->kind) {
      case LM_AVRO_NULL: *v = (cell){.kind = C_NULL}; break;
      case LM_AVRO_INT: *v = (cell){.kind = C_INT, .i = a->i, .d = a->d}; break;
      case LM_AVRO_DOUBLE: *v = (cell){.kind = C_DOUBLE, .d = a->d}; break;
      case LM_AVRO_BOOL: *v = (cell){.kind = C_BOOL, .i = a->i}; break;
      case LM_AVRO_STR:
        *v = (cell){.kind = C_STR, .at = s->text_len, .len = a->len};
        if (!text_put(s, a->s, a->len)) return *why = "out of memory", false;
        break;
    }
  }
  return true;
}

/* Check the cells fit the columns. */
static bool check_cells(const lm_kafka_source* s, const char** why) {
  for (int32_t c = 0; c < s->schema.ncols; c++) {
    const cell* v = &s->cells[c];
    const lm_field* f = &s->schema.fields[c];
    bool ok = true;
    switch (v->kind) {
      case C_NULL: ok = !f->not_null; break;
      case C_INT:
        ok = f->type == LM_TYPE_INT64 || f->type == LM_TYPE_TIMESTAMP ||
             f->type == LM_TYPE_DOUBLE ||
             ((f->type == LM_TYPE_INT32 || f->type == LM_TYPE_DATE) &&
              v->i >= INT32_MIN && v->i <= INT32_MAX) ||
             (f->type == LM_TYPE_INT16 && v->i >= INT16_MIN && v->i <= INT16_MAX) ||
             (f->type == LM_TYPE_INT8 && v->i >= INT8_MIN && v->i <= INT8_MAX);
        break;
      case C_DOUBLE: ok = f->type == LM_TYPE_DOUBLE; break;
      case C_STR: ok = f->type == LM_TYPE_STRING; break;
      case C_BOOL: ok = f->type == LM_TYPE_BOOL; break;
    }
    if (!ok) {
      *why =
          v->kind == C_NULL ? "NULL in a NOT NULL column" : "a value of the wrong type";
      return false;
    }
  }
  return true;
}

static ArrowErrorCode append_row(lm_kafka_source* s, struct ArrowArray* arr) {
  for (int32_t c = 0; c < s->schema.ncols; c++) {
    struct ArrowArray* child = arr->children[c];
    const cell* v = &s->cells[c];
    ArrowErrorCode rc;
    switch (v->kind) {
      case C_NULL: rc = ArrowArrayAppendNull(child, 1); break;
      case C_STR: {
        struct ArrowStringView sv = {v->ptr != NULL ? v->ptr : s->text + v->at,
                                     (int64_t)v->len};
        rc = ArrowArrayAppendString(child, sv);
        break;
      }
      case C_DOUBLE: rc = ArrowArrayAppendDouble(child, v->d); break;
      case C_INT:
        rc = s->schema.fields[c].type == LM_TYPE_DOUBLE
                 ? ArrowArrayAppendDouble(child, v->d)
                 : ArrowArrayAppendInt(child, v->i);
        break;
      case C_BOOL: rc = ArrowArrayAppendInt(child, v->i); break;
      default: rc = EINVAL;
    }
    if (rc != NANOARROW_OK) return rc;
  }
  return ArrowArrayFinishElement(arr);
}

static void fail(lm_kafka_source* s, const char* what, const char* detail) {
  pthread_mutex_lock(&s->mu);
  if (s->failure[0] == '\0')
    snprintf(s->failure, sizeof s->failure, "%s: %.400s", what, detail);
  pthread_mutex_unlock(&s->mu);
}

/* A dead-letter text cell: bytes p[0..n), each byte that is not part of
 * valid UTF-8 written as the text \xNN. */
static ArrowErrorCode dl_append_text(struct ArrowArray* child, const char* p, size_t n) {
  if (p == NULL) return ArrowArrayAppendNull(child, 1);
  if (lm_utf8_valid((const uint8_t*)p, (int64_t)n))
    return ArrowArrayAppendString(child, (struct ArrowStringView){p, (int64_t)n});
  char* text = lm_malloc(n * 4 + 1);
  if (text == NULL) return ENOMEM;
  size_t len = 0;
  for (size_t i = 0; i < n;) {
    unsigned char c = (unsigned char)p[i];
    /* The length of the UTF-8 sequence at i, 0: none. */
    size_t k = c < 0x80         ? 1
               : (c >> 5) == 6  ? 2
               : (c >> 4) == 14 ? 3
               : (c >> 3) == 30 ? 4
                                : 0;
    if (k > 0 && (i + k > n || !lm_utf8_valid((const uint8_t*)p + i, (int64_t)k))) k = 0;
    if (k == 0) {
      len += (size_t)snprintf(text + len, 5, "\\x%02x", c);
      i++;
    } else {
      memcpy(text + len, p + i, k);
      len += k;
      i += k;
    }
  }
  ArrowErrorCode rc =
      ArrowArrayAppendString(child, (struct ArrowStringView){text, (int64_t)len});
  lm_free(text);
  return rc;
}

/* A bad record's row of the dead-letter source. */
static ArrowErrorCode dead_letter(lm_kafka_source* s, const rd_kafka_message_t* m,
                                  const char* why) {
  struct ArrowArray* a = &s->dl_arr;
  rd_kafka_timestamp_type_t tt;
  int64_t ts = rd_kafka_message_timestamp(m, &tt);
  for (int32_t k = 0; k < DL_NCOLS; k++) {
    int32_t c = s->dl_col[k];
    if (c < 0) continue;
    struct ArrowArray* child = a->children[c];
    const char* topic = m->rkt != NULL ? rd_kafka_topic_name(m->rkt) : NULL;
    ArrowErrorCode rc;
    switch (k) {
      case DL_TOPIC: rc = dl_append_text(child, topic, topic ? strlen(topic) : 0); break;
      case DL_PARTITION: rc = ArrowArrayAppendInt(child, m->partition); break;
      case DL_OFFSET: rc = ArrowArrayAppendInt(child, m->offset); break;
      case DL_TIMESTAMP:
        rc = ArrowArrayAppendInt(
            child, s->dl_schema.fields[c].type == LM_TYPE_TIMESTAMP ? ts * 1000 : ts);
        break;
      case DL_KEY: rc = dl_append_text(child, m->key, m->key_len); break;
      case DL_PAYLOAD: rc = dl_append_text(child, m->payload, m->len); break;
      default: rc = dl_append_text(child, why, strlen(why)); break;
    }
    if (rc != NANOARROW_OK) return rc;
  }
  return ArrowArrayFinishElement(a);
}

/* A bad record: counted, its reason kept; then a row of the dead-letter
 * source, or with bad_records = 'fail' the consumer's stop. */
static void note_bad(lm_kafka_source* s, const rd_kafka_message_t* m, const char* why) {
  char reason[256];
  snprintf(reason, sizeof reason, "partition %d offset %" PRId64 ": %s",
           (int)m->partition, (int64_t)m->offset, why);
  pthread_mutex_lock(&s->mu);
  s->bad++;
  snprintf(s->bad_reason, sizeof s->bad_reason, "%s", reason);
  pthread_mutex_unlock(&s->mu);
  if (s->bad_fail)
    fail(s, "a bad record (bad_records = 'fail')", reason);
  else if (s->dl_name != NULL && dead_letter(s, m, why) != NANOARROW_OK)
    fail(s, "cannot build a dead-letter row", "out of memory");
}

static part_state* part_of(lm_kafka_source* s, int32_t topic, int32_t id) {
  for (int32_t i = 0; i < s->nparts; i++)
    if (s->parts[i].id == id && s->parts[i].topic == topic) return &s->parts[i];
  return NULL;
}

/* FNV-1a: a pattern's topic in the offsets log. */
static uint32_t name_hash(const char* name) {
  uint32_t h = 2166136261u;
  for (const unsigned char* p = (const unsigned char*)name; *p != '\0'; p++)
    h = (h ^ *p) * 16777619u;
  return h;
}

/* The index of topic `name` in s->topics (-1: not read). */
static int32_t topic_index(const lm_kafka_source* s, const char* name) {
  if (s->ntopics == 1) return strcmp(s->topics[0], name) == 0 ? 0 : -1;
  for (int32_t t = 0; t < s->ntopics; t++)
    if (strcmp(s->topics[t], name) == 0) return t;
  return -1;
}

/* One message (of partition `ps`, NULL: not known): a row of `arr`, or a
 * bad record (noted). arr NULL: only whether it decodes, nothing appended. */
static bool decode_row(lm_kafka_source* s, const rd_kafka_message_t* m, part_state* ps,
                       const char* payload, size_t len, int64_t weight,
                       struct ArrowArray* arr) {
  s->text_len = 0;
  for (int32_t c = 0; c < s->schema.ncols; c++) s->cells[c] = (cell){.kind = C_NULL};
  const char* why = NULL;
  bool ok = s->raw    ? payload == NULL || decode_raw(s, payload, len, &why)
            : s->avro ? payload != NULL && decode_avro(s, payload, len, &why)
                      : payload != NULL && (s->csv ? decode_csv(s, payload, len, &why)
                                                   : decode_json(s, payload, len, &why));
  if (payload == NULL && !s->raw) why = "no payload";
  if (ok && s->meta_weight >= 0)
    s->cells[s->meta_weight] = (cell){.kind = C_INT, .i = weight};
  rd_kafka_timestamp_type_t tt;
  int64_t ts = s->meta_timestamp >= 0 || s->event_time == -2
                   ? rd_kafka_message_timestamp(m, &tt)
                   : INT64_MIN;
  if (ok && s->meta_partition >= 0)
    s->cells[s->meta_partition] = (cell){.kind = C_INT, .i = m->partition};
  if (ok && s->meta_offset >= 0)
    s->cells[s->meta_offset] = (cell){.kind = C_INT, .i = m->offset};
  if (ok && s->meta_timestamp >= 0)
    s->cells[s->meta_timestamp] = (cell){
        .kind = C_INT,
        .i = s->schema.fields[s->meta_timestamp].type == LM_TYPE_TIMESTAMP ? ts * 1000
                                                                           : ts};
  int32_t topic = ps != NULL ? ps->topic : topic_index(s, rd_kafka_topic_name(m->rkt));
  if (ok && s->meta_topic >= 0 && topic >= 0) {
    const char* name = s->topics[topic];
    s->cells[s->meta_topic] =
        (cell){.kind = C_STR, .at = s->text_len, .len = strlen(name)};
    ok = text_put(s, name, strlen(name));
    if (!ok) why = "out of memory";
  }
  if (ok && s->meta_key >= 0) {
    cell k = {.kind = C_NULL};
    if (m->key != NULL) k = (cell){.kind = C_STR, .ptr = m->key, .len = m->key_len};
    s->cells[s->meta_key] = k;
  }
  if (ok && s->meta_headers >= 0)
    ok = decode_headers(s, m, &s->cells[s->meta_headers], &why);
  if (ok) ok = check_cells(s, &why);
  if (ok && arr == NULL) return true; /* a check only (decode_upsert) */
  if (ok && append_row(s, arr) != NANOARROW_OK) {
    ok = false;
    why = "out of memory";
  }
  if (!ok) {
    note_bad(s, m, why != NULL ? why : "does not decode");
    return false;
  }
  if (ps == NULL) ps = part_of(s, topic, m->partition);
  if (ps != NULL && s->event_time != -1) {
    int64_t et = ts;
    if (s->event_time >= 0) {
      const cell* v = &s->cells[s->event_time];
      et = v->kind == C_INT ? v->i : INT64_MIN;
      if (et != INT64_MIN && s->schema.fields[s->event_time].type == LM_TYPE_TIMESTAMP)
        et /= 1000;
    }
    if (et > ps->max_ts) ps->max_ts = et;
  }
  return true;
}

/* Where a partition stands for the offsets log and the group: its next
 * offset, never behind a resume offset it is still rebuilding up to. */
static int64_t position(const part_state* p) {
  return p->next > p->resume ? p->next : p->resume;
}

/* ---- upsert-json: the keys' rows ------------------------------------------------- */

static uint32_t bytes_hash(const char* p, size_t n) {
  uint32_t h = 2166136261u;
  for (size_t i = 0; i < n; i++) h = (h ^ (unsigned char)p[i]) * 16777619u;
  return h;
}

/* The slot of key (an empty one where it would go when absent); NULL out of
 * memory (the table grows at half full). */
static upsert_slot* slot_of(lm_kafka_source* s, const char* key, uint32_t kl) {
  if ((s->used + 1) * 2 > s->nslots) {
    size_t n = s->nslots ? s->nslots * 2 : 1024;
    upsert_slot* grown = lm_calloc(n, sizeof *grown);
    if (grown == NULL) return NULL;
    for (size_t i = 0; i < s->nslots; i++) {
      if (s->slots[i].key == NULL) continue;
      size_t j = s->slots[i].hash & (n - 1);
      while (grown[j].key != NULL) j = (j + 1) & (n - 1);
      grown[j] = s->slots[i];
    }
    lm_free(s->slots);
    s->slots = grown;
    s->nslots = n;
  }
  uint32_t h = bytes_hash(key, kl);
  size_t j = h & (s->nslots - 1);
  while (s->slots[j].key != NULL && !(s->slots[j].hash == h && s->slots[j].kl == kl &&
                                      memcmp(s->slots[j].key, key, kl) == 0))
    j = (j + 1) & (s->nslots - 1);
  s->slots[j].hash = h;
  return &s->slots[j];
}

/* Set the slot's value (NULL: none); false out of memory. */
static bool slot_set(lm_kafka_source* s, upsert_slot* slot, const char* key, uint32_t kl,
                     const char* value, uint32_t vl) {
  if (slot->key == NULL) {
    slot->key = lm_malloc(kl + 1u);
    if (slot->key == NULL) return false;
    memcpy(slot->key, key, kl);
    slot->kl = kl;
    s->used++;
  }
  lm_free(slot->value);
  slot->value = NULL;
  slot->vl = 0;
  if (value == NULL) return true;
  slot->value = lm_malloc(vl + 1u);
  if (slot->value == NULL) return false;
  memcpy(slot->value, value, vl);
  slot->vl = vl;
  return true;
}

/* An upsert record: its key's row retracted (-1, the old value decoded) if
 * it has one, then the new value inserted (+1) unless it is a tombstone.
 * Below the partition's resume offset only the keys' rows change (the rows
 * the checkpoint holds). */
static bool decode_upsert(lm_kafka_source* s, const rd_kafka_message_t* m, part_state* ps,
                          struct ArrowArray* arr) {
  if (m->key == NULL || m->key_len == 0) {
    note_bad(s, m, "an upsert record without a key");
    return false;
  }
  upsert_slot* slot = slot_of(s, m->key, (uint32_t)m->key_len);
  bool rebuild = ps != NULL && ps->resume >= 0 && m->offset < ps->resume;
  bool ok = slot != NULL;
  /* The new value must decode before the old one is retracted: a bad record
   * changes nothing (the key keeps its row, downstream and here). */
  if (ok && !rebuild && slot->value != NULL && m->payload != NULL)
    ok = decode_row(s, m, ps, m->payload, m->len, 1, NULL);
  if (ok && !rebuild && slot->value != NULL)
    ok = decode_row(s, m, ps, slot->value, slot->vl, -1, arr);
  if (ok && !rebuild && m->payload != NULL)
    ok = decode_row(s, m, ps, m->payload, m->len, 1, arr);
  if (slot != NULL && (ok || rebuild) &&
      !slot_set(s, slot, m->key, (uint32_t)m->key_len, m->payload, (uint32_t)m->len))
    slot = NULL;
  if (slot == NULL) note_bad(s, m, "out of memory");
  return ok && slot != NULL;
}

/* One message: rows of `arr` (one; upsert-json: a retraction and an insert),
 * or a bad record. */
static bool decode_message(lm_kafka_source* s, const rd_kafka_message_t* m,
                           part_state* ps, struct ArrowArray* arr) {
  if (s->upsert) return decode_upsert(s, m, ps, arr);
  return decode_row(s, m, ps, m->payload, m->len, 0, arr);
}

/* ---- the offsets log ------------------------------------------------------------- */

/* Record: u64 seq, u32 n, n x (i32 partition, i64 next offset); native order
 * (the file is this machine's). With topic_pattern, n has LOG_TOPICS set and
 * each entry starts with its topic's name_hash (u32). With LOG_WM set (every
 * record written now), each entry ends with the partition's largest event
 * time (i64, INT64_MIN: none): a restart resumes the partitions' watermarks
 * too, else windows the last push's watermark did not close before a crash
 * would wait for records that already came. */
#define LOG_TOPICS 0x80000000u
#define LOG_WM 0x40000000u
static bool log_append(lm_kafka_source* s, int64_t seq) {
  int fd = open(s->offsets_log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) return false;
  size_t each = s->pattern ? 24 : 20;
  size_t n = 12 + (size_t)s->nparts * each;
  unsigned char* rec = lm_malloc(n);
  bool ok = rec != NULL;
  if (ok) {
    uint64_t q = (uint64_t)seq;
    uint32_t k = (uint32_t)s->nparts | (s->pattern ? LOG_TOPICS : 0) | LOG_WM;
    memcpy(rec, &q, 8);
    memcpy(rec + 8, &k, 4);
    for (int32_t i = 0; i < s->nparts; i++) {
      unsigned char* e = rec + 12 + (size_t)i * each;
      if (s->pattern) memcpy(e, &s->topic_hash[s->parts[i].topic], 4), e += 4;
      memcpy(e, &s->parts[i].id, 4);
      int64_t at = position(&s->parts[i]);
      memcpy(e + 4, &at, 8);
      memcpy(e + 12, &s->parts[i].max_ts, 8);
    }
    ok = write(fd, rec, n) == (ssize_t)n && fdatasync(fd) == 0;
  }
  lm_free(rec);
  close(fd);
  return ok;
}

/* The whole log in memory (*len bytes); NULL with *len 0 when it is absent,
 * empty or unreadable, or out of memory. */
static unsigned char* log_read(const char* path, size_t* len) {
  *len = 0;
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return NULL;
  off_t size = lseek(fd, 0, SEEK_END);
  unsigned char* buf = size > 0 ? lm_malloc((size_t)size) : NULL;
  size_t got = 0;
  while (buf != NULL && got < (size_t)size) {
    ssize_t r = pread(fd, buf + got, (size_t)size - got, (off_t)got);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) break;
    got += (size_t)r;
  }
  close(fd);
  if (buf != NULL && got == 0) {
    lm_free(buf);
    buf = NULL;
  }
  *len = got;
  return buf;
}

/* The size of the whole record at buf[at..len) (its seq, entry count, entry
 * size and flags out), 0: none there (the end, or a torn or damaged tail). */
static size_t log_record(const unsigned char* buf, size_t len, size_t at, int64_t* seq,
                         uint32_t* n, size_t* each, uint32_t* flags) {
  if (len - at < 12) return 0;
  uint64_t q;
  uint32_t k;
  memcpy(&q, buf + at, 8);
  memcpy(&k, buf + at + 8, 4);
  *flags = k & (LOG_TOPICS | LOG_WM);
  *each = 12 + ((k & LOG_TOPICS) ? 4 : 0) + ((k & LOG_WM) ? 8 : 0);
  k &= ~(LOG_TOPICS | LOG_WM);
  if (k > 1u << 20 || (len - at - 12) / *each < k) return 0;
  *seq = (int64_t)q;
  *n = k;
  return 12 + (size_t)k * *each;
}

/* The start of the last whole record (in file order) whose seq < `below`
 * (len: none), and in *end where the whole records end. */
static size_t log_last_below(const unsigned char* buf, size_t len, int64_t below,
                             size_t* end) {
  size_t at = 0, last = len;
  for (;;) {
    int64_t q;
    uint32_t n, flags;
    size_t each, size = log_record(buf, len, at, &q, &n, &each, &flags);
    if (size == 0) break;
    if (q < below) last = at;
    at += size;
  }
  *end = at;
  return last;
}

/* Replace the log by buf[0..n) crash-safely (as src/store/idlelog.c prunes):
 * a temporary file written and fdatasync'ed, renamed over the log, the
 * directory flushed. A crash leaves the old log or the new one whole. False
 * (the log as it was) on an I/O error. */
static bool log_replace(const lm_kafka_source* s, const unsigned char* buf, size_t n) {
  char tmp[4200], dir[4200];
  if (snprintf(tmp, sizeof tmp, "%s.tmp", s->offsets_log) >= (int)sizeof tmp)
    return false;
  snprintf(dir, sizeof dir, "%s", s->offsets_log);
  char* slash = strrchr(dir, '/');
  if (slash != NULL)
    *slash = '\0';
  else
    snprintf(dir, sizeof dir, ".");
  int fd = lm_fs_create_excl(tmp);
  int e = fd < 0 ? errno : 0;
  if (e == 0 && n > 0) e = lm_fs_write_all(fd, buf, n);
  if (e == 0 && fdatasync(fd) != 0) e = errno;
  if (fd >= 0) close(fd);
  if (e == 0 && rename(tmp, s->offsets_log) != 0) e = errno;
  if (e != 0) {
    unlink(tmp);
    return false;
  }
  return lm_fs_fsync_dir(dir) == 0;
}

/* Compact the log down to the last whole record whose seq < `below` and,
 * with `after`, the whole records after it (none qualifies: every whole
 * record with `after`, none without); a torn tail goes either way. Nothing
 * is rewritten when nothing would change. */
static void log_compact(lm_kafka_source* s, int64_t below, bool after) {
  size_t len, end;
  unsigned char* buf = log_read(s->offsets_log, &len);
  if (buf == NULL) return;
  size_t from = log_last_below(buf, len, below, &end);
  size_t to = end;
  if (from == len) from = after ? 0 : end;
  if (!after && from < end) {
    int64_t q;
    uint32_t n, flags;
    size_t each;
    to = from + log_record(buf, len, from, &q, &n, &each, &flags);
  }
  if (from > 0 || to < len) (void)log_replace(s, buf + from, to - from);
  lm_free(buf);
}

/* The positions (and event times) of the last record whose seq < `offset`
 * into s->parts (a torn tail is ignored); then the log holds that record
 * only: the later ones tell of pushes the recovered state does not hold (new
 * pushes reuse their sequence numbers), and new records must not follow a
 * torn tail. */
static void log_resume(lm_kafka_source* s, int64_t offset) {
  size_t len, end;
  unsigned char* buf = log_read(s->offsets_log, &len);
  if (buf == NULL) return;
  size_t at = log_last_below(buf, len, offset, &end);
  int64_t q;
  uint32_t k, flags;
  size_t each;
  if (at < len && log_record(buf, len, at, &q, &k, &each, &flags) > 0) {
    bool topics = (flags & LOG_TOPICS) != 0, wm = (flags & LOG_WM) != 0;
    for (uint32_t i = 0; i < k; i++) {
      const unsigned char* e = buf + at + 12 + (size_t)i * each;
      uint32_t hash = 0;
      int32_t id;
      int64_t next, max_ts = INT64_MIN;
      if (topics) memcpy(&hash, e, 4), e += 4;
      memcpy(&id, e, 4);
      memcpy(&next, e + 4, 8);
      if (wm) memcpy(&max_ts, e + 12, 8);
      for (int32_t t = 0; t < s->ntopics; t++) {
        if (topics ? s->topic_hash[t] != hash : t != 0) continue;
        part_state* ps = part_of(s, t, id);
        if (ps != NULL) ps->next = next, ps->max_ts = max_ts;
      }
    }
  }
  lm_free(buf);
  log_compact(s, offset, false);
}

/* ---- the thread ---------------------------------------------------------------------- */

static int64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static bool stopping(lm_kafka_source* s) {
  return atomic_load_explicit(&s->stop, memory_order_acquire);
}

/* Assign every partition at its position, or where `startup` says. */
static bool assign(lm_kafka_source* s) {
  rd_kafka_topic_partition_list_t* l = rd_kafka_topic_partition_list_new(s->nparts);
  for (int32_t i = 0; i < s->nparts; i++) {
    rd_kafka_topic_partition_t* tp = rd_kafka_topic_partition_list_add(
        l, s->topics[s->parts[i].topic], s->parts[i].id);
    if (s->parts[i].next >= 0 && s->upsert) { /* rebuild the keys' rows first */
      s->parts[i].resume = s->parts[i].next;
      tp->offset = RD_KAFKA_OFFSET_BEGINNING;
    } else if (s->parts[i].next >= 0)
      tp->offset = s->parts[i].next;
    else if (s->startup == LM_KAFKA_LATEST)
      tp->offset = RD_KAFKA_OFFSET_END;
    else if (s->startup == LM_KAFKA_GROUP)
      tp->offset = RD_KAFKA_OFFSET_STORED;
    else if (s->startup == LM_KAFKA_TIMESTAMP)
      tp->offset = s->startup_ms;
    else
      tp->offset = RD_KAFKA_OFFSET_BEGINNING;
  }
  rd_kafka_resp_err_t e = RD_KAFKA_RESP_ERR_NO_ERROR;
  if (s->startup == LM_KAFKA_TIMESTAMP) {
    /* offsets_for_times replaces the timestamps of the partitions without a
     * position by offsets; the others keep theirs (asked with -1... so ask
     * only for those). */
    rd_kafka_topic_partition_list_t* q = rd_kafka_topic_partition_list_new(s->nparts);
    for (int32_t i = 0; i < s->nparts; i++)
      if (s->parts[i].next < 0)
        rd_kafka_topic_partition_list_add(q, s->topics[s->parts[i].topic], s->parts[i].id)
            ->offset = s->startup_ms;
    if (q->cnt > 0) e = rd_kafka_offsets_for_times(s->rk, q, (int)s->timeout_ms);
    for (int32_t i = 0; e == RD_KAFKA_RESP_ERR_NO_ERROR && i < q->cnt; i++) {
      rd_kafka_topic_partition_t* tp =
          rd_kafka_topic_partition_list_find(l, q->elems[i].topic, q->elems[i].partition);
      if (tp != NULL) tp->offset = q->elems[i].offset;
    }
    rd_kafka_topic_partition_list_destroy(q);
  }
  if (e == RD_KAFKA_RESP_ERR_NO_ERROR) e = rd_kafka_assign(s->rk, l);
  rd_kafka_topic_partition_list_destroy(l);
  if (e != RD_KAFKA_RESP_ERR_NO_ERROR)
    fail(s, "Kafka assign failed", rd_kafka_err2str(e));
  return e == RD_KAFKA_RESP_ERR_NO_ERROR;
}

static int64_t now_ns(void);

/* The watermark the partitions allow (INT64_MIN: none yet): the least of
 * their event times, partitions idle (at their end for idle_ms) left out;
 * when all are idle, the least of those that delivered anything. */
static int64_t watermark(const lm_kafka_source* s) {
  int64_t wm = INT64_MAX;
  bool any = false;
  int64_t now = now_ns();
  for (int pass = 0; pass < 2 && !any; pass++) {
    for (int32_t i = 0; i < s->nparts; i++) {
      const part_state* p = &s->parts[i];
      bool idle = p->eof && s->idle_ms >= 0 && now - p->last_ns >= s->idle_ms * 1000000;
      if (p->joined && p->max_ts == INT64_MIN) continue; /* none of its records yet */
      if (pass == 0 ? idle : p->max_ts == INT64_MIN) continue;
      any = true;
      if (p->max_ts < wm) wm = p->max_ts;
    }
  }
  if (!any || wm == INT64_MAX || wm == INT64_MIN) return INT64_MIN;
  int64_t out;
  return __builtin_sub_overflow(wm, s->wm_delay_ms, &out) ? INT64_MIN : out;
}

/* Push the batch (moved on success), waiting while the queue is full. */
static bool push(lm_kafka_source* s, laminar_source* src, struct ArrowArray* arr,
                 struct ArrowSchema* schema) {
  laminar_error e;
  for (;;) {
    laminar_code rc = laminar_source_push_timeout(src, arr, schema, 100, &e);
    if (rc == LAMINAR_OK) return true;
    if (rc != LAMINAR_ERR_PUSH_TIMEOUT && rc != LAMINAR_ERR_QUEUE_FULL) {
      fail(s, "push failed", e.message);
      return false;
    }
    if (stopping(s)) return false;
    if (rc == LAMINAR_ERR_QUEUE_FULL) {
      struct timespec ts = {0, 10 * 1000 * 1000};
      nanosleep(&ts, NULL);
    }
  }
}

/* Remember the positions after push `seq` (out of memory: that push's
 * positions are never committed to the group, a later one's are). */
static void remember(lm_kafka_source* s, int64_t seq) {
  pending_push* p = lm_malloc(sizeof *p + (size_t)s->nparts * sizeof p->at[0]);
  if (p == NULL) return;
  p->next = NULL;
  p->seq = seq;
  p->n = s->nparts;
  for (int32_t i = 0; i < s->nparts; i++) {
    p->at[i].topic = s->parts[i].topic;
    p->at[i].id = s->parts[i].id;
    p->at[i].next = position(&s->parts[i]);
  }
  if (s->pending_tail != NULL)
    s->pending_tail->next = p;
  else
    s->pending = p;
  s->pending_tail = p;
}

/* Commit to the group the positions of the last push a checkpoint covers
 * (asynchronously: a commit that fails, the broker away, is superseded by
 * the next checkpoint's). */
static void commit_covered(lm_kafka_source* s) {
  int64_t covered = atomic_load_explicit(&s->covered, memory_order_acquire);
  if (covered <= s->committed) return;
  s->committed = covered;
  /* The records before the last one the checkpoint covers are never read
   * again: recovery resumes at that one or a later one. */
  if (s->offsets_log != NULL) log_compact(s, covered + 1, true);
  pending_push* last = NULL;
  while (s->pending != NULL && s->pending->seq <= covered) {
    pending_push* p = s->pending;
    s->pending = p->next;
    lm_free(last);
    last = p;
  }
  if (s->pending == NULL) s->pending_tail = NULL;
  if (last == NULL) return;
  rd_kafka_topic_partition_list_t* l = rd_kafka_topic_partition_list_new(last->n);
  for (int32_t i = 0; i < last->n; i++)
    if (last->at[i].next >= 0)
      rd_kafka_topic_partition_list_add(l, s->topics[last->at[i].topic], last->at[i].id)
          ->offset = last->at[i].next;
  if (l->cnt > 0) (void)rd_kafka_commit(s->rk, l, 1);
  rd_kafka_topic_partition_list_destroy(l);
  lm_free(last);
}

static bool new_batch(lm_kafka_source* s, struct ArrowArray* arr,
                      struct ArrowSchema* schema);

/* Push the dead-letter rows of the batch (before the batch itself and its
 * offsets record: a crash between them delivers them again at most). */
static bool flush_dead_letters(lm_kafka_source* s, laminar_source* dl) {
  if (dl == NULL || s->dl_arr.length == 0) return true;
  if (ArrowArrayFinishBuildingDefault(&s->dl_arr, NULL) != NANOARROW_OK) {
    fail(s, "building a dead-letter batch failed", "out of memory");
    return false;
  }
  return push(s, dl, &s->dl_arr, &s->dl_arrow_schema) &&
         new_batch(s, &s->dl_arr, &s->dl_arrow_schema);
}

static bool flush(lm_kafka_source* s, laminar_source* src, laminar_source* dl,
                  struct ArrowArray* arr, int64_t* last_wm) {
  if (!flush_dead_letters(s, dl)) return false;
  if (arr->length > 0) {
    if (ArrowArrayFinishBuildingDefault(arr, NULL) != NANOARROW_OK) {
      fail(s, "building a batch failed", "out of memory");
      return false;
    }
    laminar_error e;
    int64_t seq = 0;
    if (s->offsets_log != NULL && laminar_source_offset(src, &seq, &e) == LAMINAR_OK &&
        !log_append(s, seq)) {
      fail(s, "cannot write the offsets log", strerror(errno));
      return false;
    }
    if (s->offsets_log != NULL) remember(s, seq);
    if (!push(s, src, arr, &s->arrow_schema)) return false;
  }
  int64_t wm = s->event_time != -1 ? watermark(s) : INT64_MIN;
  if (wm != INT64_MIN && wm > *last_wm) {
    laminar_error e;
    laminar_code rc;
    while ((rc = laminar_source_push_watermark_timeout(src, wm, 100, &e)) != LAMINAR_OK) {
      if (stopping(s) || (rc != LAMINAR_ERR_PUSH_TIMEOUT && rc != LAMINAR_ERR_QUEUE_FULL))
        return rc == LAMINAR_OK;
    }
    *last_wm = wm;
  }
  return true;
}

static bool new_batch(lm_kafka_source* s, struct ArrowArray* arr,
                      struct ArrowSchema* schema) {
  (void)s;
  if (arr->release != NULL) arr->release(arr);
  if (ArrowArrayInitFromSchema(arr, schema, NULL) != NANOARROW_OK) return false;
  return ArrowArrayStartAppending(arr) == NANOARROW_OK;
}

static rd_kafka_resp_err_t topic_metadata(lm_kafka_source* s, int timeout_ms,
                                          const struct rd_kafka_metadata** md);
static int32_t add_topics(lm_kafka_source* s, const struct rd_kafka_metadata* md,
                          bool joined);

/* A metadata refresh (partition_discovery_interval): the partitions the
 * topic gained since (with topic_pattern, also the partitions of topics
 * that match since) are assigned at their earliest offset, each holding the
 * watermark back from its first record on. A refresh that fails (the broker
 * away) is tried again a period later. */
static void discover(lm_kafka_source* s) {
  const struct rd_kafka_metadata* md;
  int wait = s->timeout_ms < 2000 ? (int)s->timeout_ms : 2000;
  int32_t before = s->nparts;
  if (topic_metadata(s, wait, &md) == RD_KAFKA_RESP_ERR_NO_ERROR &&
      add_topics(s, md, true) > 0) {
    rd_kafka_topic_partition_list_t* l =
        rd_kafka_topic_partition_list_new(s->nparts - before);
    for (int32_t i = before; i < s->nparts; i++)
      rd_kafka_topic_partition_list_add(l, s->topics[s->parts[i].topic], s->parts[i].id)
          ->offset = RD_KAFKA_OFFSET_BEGINNING;
    rd_kafka_error_t* e = rd_kafka_incremental_assign(s->rk, l);
    if (e != NULL) {
      fail(s, "Kafka assign failed", rd_kafka_error_string(e));
      rd_kafka_error_destroy(e);
    }
    rd_kafka_topic_partition_list_destroy(l);
  }
  if (md != NULL) rd_kafka_metadata_destroy(md);
}

static void* consume(void* arg) {
  lm_kafka_source* s = arg;
  laminar_source* src = NULL;
  laminar_error e;
  if (laminar_source_open(s->db, s->name, &src, &e) != LAMINAR_OK) {
    fail(s, "cannot open the source", e.message);
    return NULL;
  }
  laminar_source* dl = NULL;
  if (s->dl_name != NULL &&
      laminar_source_open(s->db, s->dl_name, &dl, &e) != LAMINAR_OK) {
    fail(s, "cannot open the dead-letter source", e.message);
    laminar_source_close(src);
    return NULL;
  }
  int64_t offset = 0;
  if (s->offsets_log != NULL && laminar_source_offset(src, &offset, &e) == LAMINAR_OK)
    log_resume(s, offset);
  struct ArrowArray arr = {0};
  int64_t last_wm = INT64_MIN;
  for (int32_t i = 0; i < s->nparts; i++) s->parts[i].last_ns = now_ns();
  rd_kafka_queue_t* q = rd_kafka_queue_get_consumer(s->rk);
  rd_kafka_message_t** msgs = lm_malloc(BATCH_ROWS * sizeof *msgs);
  if (q == NULL || msgs == NULL) fail(s, "cannot start consuming", "out of memory");
  if (q != NULL && msgs != NULL && !stopping(s) && assign(s) &&
      new_batch(s, &arr, &s->arrow_schema) &&
      (dl == NULL || new_batch(s, &s->dl_arr, &s->dl_arrow_schema))) {
    int64_t started = now_ns(), discovered = started;
    bool stop = false;
    while (!stop && !stopping(s)) {
      commit_covered(s);
      int64_t now = now_ns();
      if (s->discovery_ms > 0 && now - discovered >= s->discovery_ms * 1000000) {
        discover(s);
        discovered = now_ns();
      }
      /* Up to what the batch has room for, in one call (one lock of the
       * queue for them all): returns when that many came or after 20 ms. */
      int64_t room = BATCH_ROWS - arr.length - s->dl_arr.length;
      ssize_t got =
          rd_kafka_consume_batch_queue(q, 20, msgs, (size_t)(room > 0 ? room : 1));
      now = now_ns(); /* one clock read per call (a measured cost per message) */
      rd_kafka_topic_t* last_rkt = NULL;
      int32_t last_id = -1;
      part_state* ps = NULL;
      for (ssize_t k = 0; k < got; k++) {
        rd_kafka_message_t* m = msgs[k];
        if (!stop && (m->rkt != last_rkt || m->partition != last_id)) {
          last_rkt = m->rkt;
          last_id = m->partition;
          ps = m->rkt != NULL
                   ? part_of(s, topic_index(s, rd_kafka_topic_name(m->rkt)), m->partition)
                   : NULL;
        }
        if (stop) {
          /* bad_records = 'fail': nothing after the bad record */
        } else if (m->err == RD_KAFKA_RESP_ERR__PARTITION_EOF) {
          if (ps != NULL) ps->eof = true;
        } else if (m->err != RD_KAFKA_RESP_ERR_NO_ERROR) {
          if (rd_kafka_message_errstr(m) != NULL &&
              m->err != RD_KAFKA_RESP_ERR__TRANSPORT &&
              m->err != RD_KAFKA_RESP_ERR__ALL_BROKERS_DOWN) {
            fail(s, "Kafka", rd_kafka_message_errstr(m));
          }
        } else if (!decode_message(s, m, ps, &arr) && s->bad_fail) {
          stop = true; /* bad_records = 'fail': the consumer stops here */
        } else if (ps != NULL) {
          ps->next = m->offset + 1;
          ps->eof = false;
          ps->last_ns = now;
        }
        rd_kafka_message_destroy(m);
      }
      if (stop) break;
      bool due = arr.length + s->dl_arr.length >= BATCH_ROWS || now - started >= BATCH_NS;
      if (!due) continue;
      if (!flush(s, src, dl, &arr, &last_wm)) break;
      if (!new_batch(s, &arr, &s->arrow_schema)) break;
      started = now_ns();
    }
  }
  lm_free(msgs);
  if (q != NULL) rd_kafka_queue_destroy(q);
  if (arr.release != NULL) arr.release(&arr);
  if (s->dl_arr.release != NULL) s->dl_arr.release(&s->dl_arr);
  laminar_source_close(dl);
  laminar_source_close(src);
  return NULL;
}

/* ---- starting and stopping ------------------------------------------------------- */

static void source_free(lm_kafka_source* s) {
  while (s->pending != NULL) {
    pending_push* p = s->pending;
    s->pending = p->next;
    lm_free(p);
  }
  if (s->rkt != NULL) rd_kafka_topic_destroy(s->rkt);
  if (s->rk != NULL) {
    rd_kafka_consumer_close(s->rk);
    rd_kafka_destroy(s->rk);
  }
  if (s->arrow_schema.release != NULL) s->arrow_schema.release(&s->arrow_schema);
  lm_schema_free(&s->schema);
  if (s->dl_arrow_schema.release != NULL) s->dl_arrow_schema.release(&s->dl_arrow_schema);
  lm_schema_free(&s->dl_schema);
  lm_free(s->dl_name);
  lm_avro_free(s->avro);
  lm_free(s->avro_idx);
  lm_free(s->avro_cells);
  pthread_mutex_destroy(&s->mu);
  lm_free(s->parts);
  lm_free(s->cells);
  lm_free(s->col_len);
  lm_free(s->text);
  lm_free(s->name);
  lm_free(s->topic);
  for (int32_t t = 0; t < s->ntopics; t++) lm_free(s->topics[t]);
  lm_free(s->topics);
  lm_free(s->topic_hash);
  for (size_t i = 0; i < s->nslots; i++) {
    lm_free(s->slots[i].key);
    lm_free(s->slots[i].value);
  }
  lm_free(s->slots);
  if (s->pattern) regfree(&s->re);
  lm_free(s->offsets_log);
  lm_free(s);
}

static laminar_code conf_set(const lm_kafka_source* s, rd_kafka_conf_t* conf,
                             const char* key, const char* value, laminar_error* err) {
  char errstr[512];
  if (rd_kafka_conf_set(conf, key, value, errstr, sizeof errstr) == RD_KAFKA_CONF_OK)
    return LAMINAR_OK;
  return lm_error_set(err, LAMINAR_ERR_CONFIG_VALUE,
                      "source '%s': Kafka property '%s': %s", s->name, key, errstr);
}

static laminar_code broker_fail(const lm_kafka_source* s, laminar_error* err,
                                const char* what, const char* reason) {
  return lm_error_set(err, LAMINAR_ERR_CONNECTOR,
                      "source '%s': Kafka %s (topic '%s') failed: %s", s->name, what,
                      s->topic, reason);
}

/* Add the partitions of `mt` that s->parts does not hold yet (next offset
 * not known, no event time); `joined`: found while running. The number
 * added, or -1 out of memory. */
static int32_t add_partitions(lm_kafka_source* s, int32_t topic,
                              const struct rd_kafka_metadata_topic* mt, bool joined) {
  int32_t added = 0;
  for (int i = 0; i < mt->partition_cnt; i++) {
    if (part_of(s, topic, mt->partitions[i].id) != NULL) continue;
    if (s->nparts == s->cap_parts) {
      int32_t cap = s->cap_parts > 0 ? s->cap_parts * 2 : mt->partition_cnt + 1;
      part_state* grown = lm_realloc(s->parts, (size_t)cap * sizeof *grown);
      if (grown == NULL) return -1;
      s->parts = grown;
      s->cap_parts = cap;
    }
    s->parts[s->nparts++] = (part_state){.topic = topic,
                                         .id = mt->partitions[i].id,
                                         .next = -1,
                                         .max_ts = INT64_MIN,
                                         .last_ns = now_ns(),
                                         .joined = joined,
                                         .resume = -1};
    added++;
  }
  return added;
}

/* The index of topic `name` in s->topics, added when new (-1: out of
 * memory). */
static int32_t topic_add(lm_kafka_source* s, const char* name) {
  int32_t t = topic_index(s, name);
  if (t >= 0) return t;
  if (s->ntopics == s->cap_topics) {
    int32_t cap = s->cap_topics > 0 ? s->cap_topics * 2 : 4;
    char** names = lm_realloc(s->topics, (size_t)cap * sizeof *names);
    if (names == NULL) return -1;
    s->topics = names;
    uint32_t* hashes = lm_realloc(s->topic_hash, (size_t)cap * sizeof *hashes);
    if (hashes == NULL) return -1;
    s->topic_hash = hashes;
    s->cap_topics = cap;
  }
  char* copy = lm_strdup(name);
  if (copy == NULL) return -1;
  s->topics[s->ntopics] = copy;
  s->topic_hash[s->ntopics] = name_hash(name);
  return s->ntopics++;
}

/* The partitions of the topics of `md` the source reads (its topic, or
 * those matching its pattern but Kafka's internal "__" ones) that s->parts
 * does not hold yet: the number added, or -1 out of memory. */
static int32_t add_topics(lm_kafka_source* s, const struct rd_kafka_metadata* md,
                          bool joined) {
  int32_t added = 0;
  for (int i = 0; i < md->topic_cnt; i++) {
    const struct rd_kafka_metadata_topic* mt = &md->topics[i];
    if (mt->err != RD_KAFKA_RESP_ERR_NO_ERROR) continue;
    if (s->pattern ? strncmp(mt->topic, "__", 2) == 0 ||
                         regexec(&s->re, mt->topic, 0, NULL, 0) != 0
                   : strcmp(mt->topic, s->topic) != 0)
      continue;
    int32_t t = topic_add(s, mt->topic);
    int32_t n = t >= 0 ? add_partitions(s, t, mt, joined) : -1;
    if (n < 0) return -1;
    added += n;
  }
  return added;
}

/* The topic's metadata, or with a pattern every topic's (*md: destroy with
 * rd_kafka_metadata_destroy). */
static rd_kafka_resp_err_t topic_metadata(lm_kafka_source* s, int timeout_ms,
                                          const struct rd_kafka_metadata** md) {
  *md = NULL;
  rd_kafka_resp_err_t e =
      rd_kafka_metadata(s->rk, s->pattern ? 1 : 0, s->rkt, md, timeout_ms);
  if (s->pattern) return e;
  if (e == RD_KAFKA_RESP_ERR_NO_ERROR && (*md)->topic_cnt != 1)
    e = RD_KAFKA_RESP_ERR__UNKNOWN_TOPIC;
  if (e == RD_KAFKA_RESP_ERR_NO_ERROR) e = (*md)->topics[0].err;
  return e;
}

/* The topic's partitions into s->parts. */
static laminar_code read_partitions(lm_kafka_source* s, laminar_error* err) {
  if (!s->pattern) s->rkt = rd_kafka_topic_new(s->rk, s->topic, NULL);
  if (!s->pattern && s->rkt == NULL)
    return broker_fail(s, err, "topic", rd_kafka_err2str(rd_kafka_last_error()));
  const struct rd_kafka_metadata* md;
  rd_kafka_resp_err_t e = topic_metadata(s, (int)s->timeout_ms, &md);
  laminar_code rc = LAMINAR_OK;
  if (e == RD_KAFKA_RESP_ERR__TRANSPORT || e == RD_KAFKA_RESP_ERR__TIMED_OUT) {
    char why[300];
    snprintf(why, sizeof why, "no broker answered within %" PRId64 " ms (%s)",
             s->timeout_ms, rd_kafka_err2str(e));
    rc = broker_fail(s, err, "connect", why);
  } else if (e != RD_KAFKA_RESP_ERR_NO_ERROR) {
    rc = broker_fail(s, err, "topic metadata", rd_kafka_err2str(e));
  } else if (add_topics(s, md, false) < 0) {
    rc = lm_error_set(err, LAMINAR_ERR_NOMEM, "out of memory");
  }
  if (md != NULL) rd_kafka_metadata_destroy(md);
  return rc;
}

laminar_code lm_kafka_source_start(laminar_db* db, const lm_kafka_source_config* c,
                                   const lm_schema* schema, lm_kafka_source** out,
                                   laminar_error* err) {
  *out = NULL;
  lm_kafka_source* s = lm_calloc(1, sizeof *s);
  if (s == NULL) return lm_error_set(err, LAMINAR_ERR_NOMEM, "out of memory");
  pthread_mutex_init(&s->mu, NULL);
  atomic_init(&s->stop, false);
  atomic_init(&s->covered, -1);
  s->committed = -1;
  s->db = db;
  s->csv = c->csv && !c->upsert;
  s->event_time = c->event_time;
  s->wm_delay_ms = c->wm_delay_ms;
  s->idle_ms = c->idle_timeout_ms;
  s->startup = c->startup;
  s->startup_ms = c->startup_ms;
  s->timeout_ms = c->timeout_ms > 0 ? c->timeout_ms : 30000;
  s->discovery_ms = c->discovery_ms;
  s->name = lm_strdup(c->name);
  s->topic = lm_strdup(c->topic_pattern != NULL ? c->topic_pattern : c->topic);
  s->offsets_log = c->offsets_log != NULL ? lm_strdup(c->offsets_log) : NULL;
  laminar_code rc = LAMINAR_OK;
  if (s->topic != NULL && c->topic_pattern != NULL) {
    int e = regcomp(&s->re, c->topic_pattern, REG_EXTENDED | REG_NOSUB);
    if (e != 0) {
      char why[200];
      regerror(e, &s->re, why, sizeof why);
      rc = lm_error_set(err, LAMINAR_ERR_CONFIG_VALUE,
                        "source '%s': topic_pattern '%s' is no regular expression: %s",
                        c->name, c->topic_pattern, why);
    }
    s->pattern = e == 0;
  }
  if (rc == LAMINAR_OK && (s->name == NULL || s->topic == NULL ||
                           (c->offsets_log != NULL && s->offsets_log == NULL) ||
                           lm_schema_copy(schema, &s->schema) != 0))
    rc = lm_error_set(err, LAMINAR_ERR_NOMEM, "out of memory");
  for (int32_t k = 0; k < HINTS; k++) s->hint[k] = -1;
  if (rc == LAMINAR_OK) {
    s->cells = lm_calloc((size_t)s->schema.ncols + 1, sizeof *s->cells);
    s->col_len = lm_calloc((size_t)s->schema.ncols + 1, sizeof *s->col_len);
    for (int32_t col = 0; s->col_len != NULL && col < s->schema.ncols; col++)
      s->col_len[col] = (uint32_t)strlen(s->schema.fields[col].name);
    if (s->cells == NULL || s->col_len == NULL ||
        lm_arrow_schema_export(&s->schema, &s->arrow_schema) != LAMINAR_OK)
      rc = lm_error_set(err, LAMINAR_ERR_NOMEM, "out of memory");
  }
  s->meta_partition = column_of(s, "_partition", 10);
  s->meta_offset = column_of(s, "_offset", 7);
  s->meta_timestamp = column_of(s, "_timestamp", 10);
  s->meta_key = column_of(s, "_key", 4);
  s->meta_topic = column_of(s, "_topic", 6);
  s->meta_headers = column_of(s, "_headers", 8);
  s->upsert = c->upsert;
  s->meta_weight = c->upsert ? s->schema.ncols - 1 : -1;
  s->raw = c->raw && !c->upsert;
  s->bad_fail = c->bad_fail;
  if (rc == LAMINAR_OK && s->meta_headers >= 0 &&
      s->schema.fields[s->meta_headers].type != LM_TYPE_STRING)
    rc = lm_error_set(err, LAMINAR_ERR_CONFIG_VALUE,
                      "source '%s': metadata column _headers must be VARCHAR (a JSON "
                      "object of the message's headers)",
                      c->name);
  s->raw_col = -1;
  for (int32_t col = 0; s->raw && col < s->schema.ncols; col++)
    if (!is_meta(s, col)) s->raw_col = s->raw_col == -1 ? col : -2;
  if (rc == LAMINAR_OK && s->raw &&
      (s->raw_col < 0 || s->schema.fields[s->raw_col].type != LM_TYPE_STRING))
    rc = lm_error_set(err, LAMINAR_ERR_CONFIG_VALUE,
                      "source '%s': format 'raw' needs one VARCHAR column for the "
                      "payload besides the metadata columns (_key, _partition, ...)",
                      c->name);
  s->avro_confluent = c->avro_confluent;
  if (rc == LAMINAR_OK && c->avro && !c->upsert) {
    s->avro_idx = lm_calloc((size_t)s->schema.ncols + 1, sizeof *s->avro_idx);
    s->avro_cells = lm_calloc((size_t)s->schema.ncols + 1, sizeof *s->avro_cells);
    if (s->avro_idx == NULL || s->avro_cells == NULL)
      rc = lm_error_set(err, LAMINAR_ERR_NOMEM, "out of memory");
    for (int32_t col = 0; rc == LAMINAR_OK && col < s->schema.ncols; col++)
      if (!is_meta(s, col)) s->avro_idx[s->navro++] = col;
    char why[300];
    if (rc == LAMINAR_OK &&
        (s->avro = lm_avro_new("row", &s->schema, s->avro_idx, s->navro, c->avro_schema,
                               why, sizeof why)) == NULL)
      rc = lm_error_set(
          err,
          lm_avro_available() ? LAMINAR_ERR_CONFIG_VALUE : LAMINAR_ERR_SQL_UNSUPPORTED,
          "source '%s': format 'avro': %s", c->name, why);
  }
  for (int32_t k = 0; k < DL_NCOLS; k++) s->dl_col[k] = -1;
  if (rc == LAMINAR_OK && c->dead_letter != NULL) {
    s->dl_name = lm_strdup(c->dead_letter);
    if (s->dl_name == NULL || lm_schema_copy(c->dead_letter_schema, &s->dl_schema) != 0 ||
        lm_arrow_schema_export(&s->dl_schema, &s->dl_arrow_schema) != LAMINAR_OK)
      rc = lm_error_set(err, LAMINAR_ERR_NOMEM, "out of memory");
    for (int32_t k = 0; rc == LAMINAR_OK && k < DL_NCOLS; k++)
      s->dl_col[k] = lm_schema_find(&s->dl_schema, DL_NAMES[k]);
  }
  if (rc == LAMINAR_OK && c->upsert &&
      (s->schema.ncols < 2 ||
       strcmp(s->schema.fields[s->meta_weight].name, "_weight") != 0 ||
       s->schema.fields[s->meta_weight].type != LM_TYPE_INT64))
    rc =
        lm_error_set(err, LAMINAR_ERR_CONFIG_VALUE,
                     "source '%s': format 'upsert-json' needs a changelog source: a last "
                     "column _weight BIGINT",
                     c->name);
  rd_kafka_conf_t* conf = rd_kafka_conf_new();
  char group[300];
  snprintf(group, sizeof group, "laminardb.%s", c->name);
  char ms[32];
  snprintf(ms, sizeof ms, "%" PRId64, s->timeout_ms);
  if (rc == LAMINAR_OK) rc = conf_set(s, conf, "bootstrap.servers", c->brokers, err);
  if (rc == LAMINAR_OK)
    rc = conf_set(s, conf, "group.id", c->group_id != NULL ? c->group_id : group, err);
  if (rc == LAMINAR_OK) rc = conf_set(s, conf, "enable.auto.commit", "false", err);
  if (rc == LAMINAR_OK) rc = conf_set(s, conf, "enable.partition.eof", "true", err);
  if (rc == LAMINAR_OK) rc = conf_set(s, conf, "isolation.level", "read_committed", err);
  if (rc == LAMINAR_OK) rc = conf_set(s, conf, "log_level", "3", err);
  if (rc == LAMINAR_OK)
    rc = conf_set(s, conf, "socket.connection.setup.timeout.ms", ms, err);
  for (int32_t i = 0; rc == LAMINAR_OK && i < c->nconf; i++)
    rc = conf_set(s, conf, c->conf_keys[i], c->conf_values[i], err);
  if (rc == LAMINAR_OK) {
    char errstr[512];
    s->rk = rd_kafka_new(RD_KAFKA_CONSUMER, conf, errstr, sizeof errstr);
    if (s->rk == NULL) rc = broker_fail(s, err, "consumer", errstr);
    conf = s->rk == NULL ? conf : NULL;
  }
  if (conf != NULL) rd_kafka_conf_destroy(conf);
  if (rc == LAMINAR_OK) rc = read_partitions(s, err);
  if (rc == LAMINAR_OK && pthread_create(&s->thread, NULL, consume, s) != 0)
    rc = lm_error_set(err, LAMINAR_ERR_INTERNAL, "source '%s': cannot start its consumer",
                      c->name);
  if (rc != LAMINAR_OK) {
    source_free(s);
    return rc;
  }
  s->started = true;
  *out = s;
  return LAMINAR_OK;
}

void lm_kafka_source_signal(lm_kafka_source* s) {
  atomic_store_explicit(&s->stop, true, memory_order_release);
}

bool lm_kafka_source_signaled(lm_kafka_source* s) { return stopping(s); }

void lm_kafka_source_checkpointed(lm_kafka_source* s, int64_t covered) {
  int64_t was = atomic_load_explicit(&s->covered, memory_order_relaxed);
  while (covered > was &&
         !atomic_compare_exchange_weak_explicit(
             &s->covered, &was, covered, memory_order_release, memory_order_relaxed)) {
  }
}

void lm_kafka_source_stop(lm_kafka_source* s) {
  if (s == NULL) return;
  atomic_store_explicit(&s->stop, true, memory_order_release);
  if (s->started) pthread_join(s->thread, NULL);
  source_free(s);
}

const char* lm_kafka_source_name(const lm_kafka_source* s) { return s->name; }

const char* lm_kafka_source_dead_letter(const lm_kafka_source* s) { return s->dl_name; }

int64_t lm_kafka_source_bad(lm_kafka_source* s, char* reason, size_t cap, bool* failed) {
  pthread_mutex_lock(&s->mu);
  int64_t n = s->bad;
  *failed = s->failure[0] != '\0';
  if (reason != NULL && cap > 0)
    snprintf(reason, cap, "%s", s->failure[0] != '\0' ? s->failure : s->bad_reason);
  pthread_mutex_unlock(&s->mu);
  return n;
}

#else /* !LAMINAR_HAVE_KAFKA */

laminar_code lm_kafka_source_start(laminar_db* db, const lm_kafka_source_config* c,
                                   const lm_schema* schema, lm_kafka_source** out,
                                   laminar_error* err) {
  (void)db, (void)schema;
  *out = NULL;
  return lm_error_set(err, LAMINAR_ERR_SQL_UNSUPPORTED,
                      "source '%s': connector 'kafka': LaminarDB was built without Kafka "
                      "(librdkafka); rebuild with librdkafka-dev installed",
                      c->name);
}

void lm_kafka_source_stop(lm_kafka_source* s) { (void)s; }

void lm_kafka_source_signal(lm_kafka_source* s) { (void)s; }

void lm_kafka_source_checkpointed(lm_kafka_source* s, int64_t covered) {
  (void)s, (void)covered;
}

bool lm_kafka_source_signaled(lm_kafka_source* s) {
  (void)s;
  return true;
}

const char* lm_kafka_source_name(const lm_kafka_source* s) {
  (void)s;
  return "";
}

const char* lm_kafka_source_dead_letter(const lm_kafka_source* s) {
  (void)s;
  return NULL;
}

int64_t lm_kafka_source_bad(lm_kafka_source* s, char* reason, size_t cap, bool* failed) {
  (void)s;
  *failed = false;
  if (reason != NULL && cap > 0) reason[0] = '\0';
  return 0;
}

#endif
