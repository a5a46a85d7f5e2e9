/*
 * avro.c -- Avro binary records through Avro C (see avro.h).
 */
#include "connect/avro.h"

#include "util/util.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#ifdef LAMINAR_HAVE_AVRO

#include <avro.h>
#include <stdint.h>

struct lm_avro {
  avro_schema_t schema;
  avro_value_iface_t* iface;
  avro_value_t value; /* the record, reused */
  avro_reader_t reader;
  avro_writer_t writer;
  int32_t n;
  int32_t* field; /* per column: its field's index in the record (-1: none) */
  char* buf;      /* encoded records */
  size_t cap;
};

bool lm_avro_available(void) { return true; }

/* The Avro type of column type t (NULL: none). */
static const char* avro_type(lm_type t) {
  switch (t) {
    case LM_TYPE_INT64: return "\"long\"";
    case LM_TYPE_INT32:
    case LM_TYPE_INT16:
    case LM_TYPE_INT8: return "\"int\"";
    case LM_TYPE_DOUBLE: return "\"double\"";
    case LM_TYPE_BOOL: return "\"boolean\"";
    case LM_TYPE_STRING: return "\"string\"";
    case LM_TYPE_TIMESTAMP:
      return "{\"type\":\"long\",\"logicalType\":\"timestamp-micros\"}";
    case LM_TYPE_DATE: return "{\"type\":\"int\",\"logicalType\":\"date\"}";
    default: return NULL;
  }
}

/* The schema JSON of a record `name` of the columns (lm_malloc'ed; NULL with
 * why). */
static char* columns_json(const char* name, const lm_schema* schema, const int32_t* idx,
                          int32_t n, char* why, size_t cap) {
  size_t size = 64 + strlen(name);
  for (int32_t k = 0; k < n; k++) size += strlen(schema->fields[idx[k]].name) + 120;
  char* json = lm_malloc(size);
  if (json == NULL) {
    snprintf(why, cap, "out of memory");
    return NULL;
  }
  size_t at = (size_t)snprintf(json, size,
                               "{\"type\":\"record\",\"name\":\"%s\",\"fields\":[", name);
  for (int32_t k = 0; k < n; k++) {
    const lm_field* f = &schema->fields[idx[k]];
    const char* t = avro_type(f->type);
    if (t == NULL) {
      snprintf(why, cap, "column '%s' (%s) has no Avro type here", f->name,
               lm_type_name(f->type));
      lm_free(json);
      return NULL;
    }
    /* Every field may be null, NOT NULL or not: a source's schema and the
     * schema of a sink over a stream of the same columns (whose NOT NULL a
     * projection may lose) agree. */
    at += (size_t)snprintf(json + at, size - at,
                           "%s{\"name\":\"%s\",\"type\":[\"null\",%s]}", k > 0 ? "," : "",
                           f->name, t);
  }
  snprintf(json + at, size - at, "]}");
  return json;
}

lm_avro* lm_avro_new(const char* name, const lm_schema* schema, const int32_t* idx,
                     int32_t n, const char* json, char* why, size_t cap) {
  lm_avro* a = lm_calloc(1, sizeof *a);
  char* made = json == NULL ? columns_json(name, schema, idx, n, why, cap) : NULL;
  const char* text = json != NULL ? json : made;
  if (a == NULL || text == NULL) {
    if (a == NULL) snprintf(why, cap, "out of memory");
    lm_free(made);
    lm_free(a);
    return NULL;
  }
  a->n = n;
  bool ok = avro_schema_from_json_length(text, strlen(text), &a->schema) == 0;
  if (!ok) snprintf(why, cap, "Avro schema: %s", avro_strerror());
  lm_free(made);
  if (ok && !is_avro_record(a->schema)) {
    snprintf(why, cap, "the Avro schema is no record");
    ok = false;
  }
  if (ok) {
    a->field = lm_calloc((size_t)n + 1, sizeof *a->field);
    a->iface = avro_generic_class_from_schema(a->schema);
    a->reader = avro_reader_memory("", 0);
    a->writer = avro_writer_memory("", 0);
    ok = a->field != NULL && a->iface != NULL && a->reader != NULL && a->writer != NULL &&
         avro_generic_value_new(a->iface, &a->value) == 0;
    if (!ok) snprintf(why, cap, "Avro: %s", avro_strerror());
  }
  for (int32_t k = 0; ok && k < n; k++)
    a->field[k] =
        avro_schema_record_field_get_index(a->schema, schema->fields[idx[k]].name);
  if (!ok) {
    lm_avro_free(a);
    return NULL;
  }
  return a;
}

void lm_avro_free(lm_avro* a) {
  if (a == NULL) return;
  if (a->value.iface != NULL) avro_value_decref(&a->value);
  if (a->iface != NULL) avro_value_iface_decref(a->iface);
  if (a->reader != NULL) avro_reader_free(a->reader);
  if (a->writer != NULL) avro_writer_free(a->writer);
  if (a->schema != NULL) avro_schema_decref(a->schema);
  lm_free(a->field);
  lm_free(a->buf);
  lm_free(a);
}

/* One field's value into a cell; false with *why. */
static bool cell_of(avro_value_t* v, lm_avro_cell* c, const char** why) {
  avro_value_t branch;
  if (avro_value_get_type(v) == AVRO_UNION) {
    if (avro_value_get_current_branch(v, &branch) != 0)
      return *why = "an Avro union without a branch", false;
    v = &branch;
  }
  *c = (lm_avro_cell){.kind = LM_AVRO_NULL};
  int32_t i32;
  int b;
  float f;
  const char* s;
  const void* bytes;
  size_t size;
  switch (avro_value_get_type(v)) {
    case AVRO_NULL: return true;
    case AVRO_INT32:
      avro_value_get_int(v, &i32);
      *c = (lm_avro_cell){.kind = LM_AVRO_INT, .i = i32, .d = i32};
      return true;
    case AVRO_INT64:
      avro_value_get_long(v, &c->i);
      c->kind = LM_AVRO_INT;
      c->d = (double)c->i;
      return true;
    case AVRO_FLOAT:
      avro_value_get_float(v, &f);
      *c = (lm_avro_cell){.kind = LM_AVRO_DOUBLE, .d = f};
      return true;
    case AVRO_DOUBLE:
      avro_value_get_double(v, &c->d);
      c->kind = LM_AVRO_DOUBLE;
      return true;
    case AVRO_BOOLEAN:
      avro_value_get_boolean(v, &b);
      *c = (lm_avro_cell){.kind = LM_AVRO_BOOL, .i = b != 0};
      return true;
    case AVRO_STRING:
      avro_value_get_string(v, &s, &size); /* size counts a closing NUL */
      *c = (lm_avro_cell){.kind = LM_AVRO_STR, .s = s, .len = size > 0 ? size - 1 : 0};
      if (!lm_utf8_valid((const uint8_t*)c->s, (int64_t)c->len))
        return *why = "an Avro string that is no UTF-8", false;
      return true;
    case AVRO_BYTES:
      avro_value_get_bytes(v, &bytes, &size);
      *c = (lm_avro_cell){.kind = LM_AVRO_STR, .s = bytes, .len = size};
      if (!lm_utf8_valid((const uint8_t*)c->s, (int64_t)c->len))
        return *why = "Avro bytes that are no UTF-8", false;
      return true;
    default: return *why = "a nested Avro value (record, array, map, ...)", false;
  }
}

/* ---- checking a record before Avro C reads it ------------------------------------ */

/* Avro C's reader leaks what it allocated for a string or bytes when the
 * input ends inside them, and trusts lengths; so every message is walked
 * over the schema first, allocating nothing: only a whole, well-formed
 * record reaches avro_value_read. */

/* A varint (zigzag long) at *p: false when it runs past `end` or 10 bytes. */
static bool walk_long(const uint8_t** p, const uint8_t* end, int64_t* out) {
  uint64_t v = 0;
  for (int shift = 0; shift < 70; shift += 7) {
    if (*p >= end) return false;
    uint8_t b = *(*p)++;
    v |= (uint64_t)(b & 0x7F) << shift;
    if ((b & 0x80) == 0) {
      *out = (int64_t)(v >> 1) ^ -(int64_t)(v & 1);
      return true;
    }
  }
  return false;
}

static bool walk_skip(const uint8_t** p, const uint8_t* end, int64_t n) {
  if (n < 0 || n > end - *p) return false;
  *p += n;
  return true;
}

/* One value of schema `s` at *p (depth: how deep in the schema). */
static bool walk(avro_schema_t s, const uint8_t** p, const uint8_t* end, int depth) {
  int64_t n;
  if (depth > 64) return false; /* a recursive schema: bounded */
  switch (avro_typeof(s)) {
    case AVRO_NULL: return true;
    case AVRO_BOOLEAN: return walk_skip(p, end, 1);
    case AVRO_INT32:
    case AVRO_INT64:
    case AVRO_ENUM: return walk_long(p, end, &n);
    case AVRO_FLOAT: return walk_skip(p, end, 4);
    case AVRO_DOUBLE: return walk_skip(p, end, 8);
    case AVRO_STRING:
    case AVRO_BYTES: return walk_long(p, end, &n) && walk_skip(p, end, n);
    case AVRO_FIXED: return walk_skip(p, end, avro_schema_fixed_size(s));
    case AVRO_RECORD:
      for (size_t i = 0; i < avro_schema_record_size(s); i++)
        if (!walk(avro_schema_record_field_get_by_index(s, (int)i), p, end, depth + 1))
          return false;
      return true;
    case AVRO_UNION:
      return walk_long(p, end, &n) && n >= 0 && (size_t)n < avro_schema_union_size(s) &&
             walk(avro_schema_union_branch(s, (int)n), p, end, depth + 1);
    case AVRO_ARRAY:
    case AVRO_MAP:
      for (;;) { /* blocks: a count (negative: then its byte size), the items */
        if (!walk_long(p, end, &n)) return false;
        if (n == 0) return true;
        int64_t bytes;
        if (n < 0 && (n == INT64_MIN || !walk_long(p, end, &bytes))) return false;
        for (int64_t i = 0; i < (n < 0 ? -n : n); i++) {
          const uint8_t* at = *p;
          if (avro_typeof(s) == AVRO_MAP && !walk_long(p, end, &bytes)) return false;
          if (avro_typeof(s) == AVRO_MAP && !walk_skip(p, end, bytes)) return false;
          avro_schema_t item = avro_typeof(s) == AVRO_MAP ? avro_schema_map_values(s)
                                                          : avro_schema_array_items(s);
          if (!walk(item, p, end, depth + 1)) return false;
          if (*p == at) return false; /* items of no bytes: a count is no bound */
        }
      }
    case AVRO_LINK: return walk(avro_schema_link_target(s), p, end, depth + 1);
    default: return false;
  }
}

bool lm_avro_decode(lm_avro* a, const void* p, size_t len, lm_avro_cell* out,
                    const char** why) {
  const uint8_t* at = p;
  const uint8_t* end = at + len;
  if (!walk(a->schema, &at, end, 0))
    return *why = "not an Avro record of the schema", false;
  if (at != end) return *why = "bytes after the Avro record", false;
  avro_value_reset(&a->value);
  avro_reader_memory_set_source(a->reader, p, (int64_t)len);
  if (avro_value_read(a->reader, &a->value) != 0)
    return *why = "not an Avro record of the schema", false;
  for (int32_t k = 0; k < a->n; k++) {
    avro_value_t f;
    out[k] = (lm_avro_cell){.kind = LM_AVRO_NULL};
    if (a->field[k] < 0) continue;
    if (avro_value_get_by_index(&a->value, (size_t)a->field[k], &f, NULL) != 0 ||
        !cell_of(&f, &out[k], why))
      return false;
  }
  return true;
}

/* Set v (a field, or the branch of its union) to cell c. */
static bool set_cell(avro_value_t* v, const lm_avro_cell* c, const char** why) {
  avro_value_t branch;
  if (avro_value_get_type(v) == AVRO_UNION) {
    avro_schema_t u = avro_value_get_schema(v);
    int want = -1;
    for (size_t b = 0; b < avro_schema_union_size(u) && want < 0; b++) {
      bool is_null = is_avro_null(avro_schema_union_branch(u, (int)b));
      if (is_null == (c->kind == LM_AVRO_NULL)) want = (int)b;
    }
    if (want < 0 || avro_value_set_branch(v, want, &branch) != 0)
      return *why = "a value the Avro union has no branch for", false;
    v = &branch;
  }
  int rc = 0;
  switch (avro_value_get_type(v)) {
    case AVRO_NULL: rc = c->kind == LM_AVRO_NULL ? avro_value_set_null(v) : EINVAL; break;
    case AVRO_INT32: rc = avro_value_set_int(v, (int32_t)c->i); break;
    case AVRO_INT64: rc = avro_value_set_long(v, c->i); break;
    case AVRO_FLOAT: rc = avro_value_set_float(v, (float)c->d); break;
    case AVRO_DOUBLE: rc = avro_value_set_double(v, c->d); break;
    case AVRO_BOOLEAN: rc = avro_value_set_boolean(v, (int)c->i); break;
    case AVRO_STRING: {
      /* set_string_len wants the closing NUL counted and present. */
      char* copy = lm_malloc(c->len + 1);
      if (copy == NULL) return *why = "out of memory", false;
      if (c->len > 0) memcpy(copy, c->s, c->len);
      copy[c->len] = '\0';
      rc = avro_value_set_string_len(v, copy, c->len + 1);
      lm_free(copy);
      break;
    }
    default: rc = EINVAL;
  }
  if (rc == 0 && c->kind == LM_AVRO_NULL && avro_value_get_type(v) != AVRO_NULL)
    rc = EINVAL;
  if (rc != 0) return *why = "NULL where the Avro schema allows none", false;
  return true;
}

bool lm_avro_encode(lm_avro* a, const lm_avro_cell* cells, const char** out, size_t* len,
                    const char** why) {
  avro_value_reset(&a->value);
  for (int32_t k = 0; k < a->n; k++) {
    avro_value_t f;
    if (a->field[k] < 0) continue;
    if (avro_value_get_by_index(&a->value, (size_t)a->field[k], &f, NULL) != 0 ||
        !set_cell(&f, &cells[k], why))
      return false;
  }
  size_t size;
  if (avro_value_sizeof(&a->value, &size) != 0)
    return *why = "a record that does not encode", false;
  if (size > a->cap) {
    char* grown = lm_realloc(a->buf, size);
    if (grown == NULL) return *why = "out of memory", false;
    a->buf = grown;
    a->cap = size;
  }
  avro_writer_memory_set_dest(a->writer, a->buf, (int64_t)size);
  if (avro_value_write(a->writer, &a->value) != 0)
    return *why = "a record that does not encode", false;
  *out = a->buf;
  *len = size;
  return true;
}

#else /* !LAMINAR_HAVE_AVRO */

bool lm_avro_available(void) { return false; }

lm_avro* lm_avro_new(const char* name, const lm_schema* schema, const int32_t* idx,
                     int32_t n, const char* json, char* why, size_t cap) {
  (void)name, (void)schema, (void)idx, (void)n, (void)json;
  snprintf(why, cap,
           "LaminarDB was built without Avro (Avro C); rebuild with libavro-dev");
  return NULL;
}

void lm_avro_free(lm_avro* a) { (void)a; }

bool lm_avro_decode(lm_avro* a, const void* p, size_t len, lm_avro_cell* out,
                    const char** why) {
  (void)a, (void)p, (void)len, (void)out;
  *why = "built without Avro";
  return false;
}

bool lm_avro_encode(lm_avro* a, const lm_avro_cell* cells, const char** out, size_t* len,
                    const char** why) {
  (void)a, (void)cells, (void)out, (void)len;
  *why = "built without Avro";
  return false;
}

#endif
