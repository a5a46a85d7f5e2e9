/*
 * json.c -- JSON held as VARCHAR text: json_extract (->), json_extract_string
 * (->>), json_valid, json_type and json_array_length, with DuckDB's paths and
 * results as the oracle (docs/SQL.md "JSON").
 *
 * A document is validated whole (RFC 8259: one value, blanks around it,
 * strings of valid escapes and UTF-8, surrogates in pairs, nesting up to
 * 1000) before a path is followed; an invalid document or path gives NULL
 * (the house rule for run-time faults; DuckDB raises). A value is written
 * back minified as DuckDB's yyjson writes it: no blanks, strings re-escaped
 * (quote, backslash, \b \f \n \r \t, other control characters as \u00XX,
 * everything else raw), integers in canonical form, other numbers in their
 * shortest round-trip form (plain from 1e-6 up to below 1e21, else with an
 * exponent; a ".0" when integral), numbers out of range (integers past 64
 * bits, doubles past the double range) as written.
 */
#include "expr/internal.h"

#include "util/util.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define JSON_MAX_DEPTH 1000

/* ---- validation ----------------------------------------------------------------- */

typedef struct jspan {
  const char* p;
  const char* end;
} jspan;

static const char* skip_ws(const char* p, const char* end) {
  while (p < end && (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r')) p++;
  return p;
}

static int hex4(const char* p, const char* end) {
  if (end - p < 4) return -1;
  int v = 0;
  for (int i = 0; i < 4; i++) {
    char c = p[i];
    int d = c >= '0' && c <= '9'   ? c - '0'
            : c >= 'a' && c <= 'f' ? c - 'a' + 10
            : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                   : -1;
    if (d < 0) return -1;
    v = v * 16 + d;
  }
  return v;
}

/* Length of the UTF-8 sequence at p (valid, shortest form, no surrogates),
 * 0 when invalid. */
static int utf8_len(const unsigned char* p, const unsigned char* end) {
  unsigned c = p[0];
  if (c < 0x80) return 1;
  int n = c >= 0xf0 && c <= 0xf4 ? 4 : c >= 0xe0 ? 3 : c >= 0xc2 && c < 0xe0 ? 2 : 0;
  if (n == 0 || end - p < n) return 0;
  for (int i = 1; i < n; i++)
    if ((p[i] & 0xc0) != 0x80) return 0;
  if (n == 3 && c == 0xe0 && p[1] < 0xa0) return 0;  /* overlong */
  if (n == 3 && c == 0xed && p[1] >= 0xa0) return 0; /* surrogate */
  if (n == 4 && c == 0xf0 && p[1] < 0x90) return 0;  /* overlong */
  if (n == 4 && c == 0xf4 && p[1] >= 0x90) return 0; /* past U+10FFFF */
  return n;
}

/* The end of the string starting at p (on its opening quote), NULL when
 * invalid. */
static const char* skip_string(const char* p, const char* end) {
  p++;
  while (p < end) {
    unsigned char c = (unsigned char)*p;
    if (c == '"') return p + 1;
    if (c < 0x20) return NULL;
    if (c == '\\') {
      if (end - p < 2) return NULL;
      char e = p[1];
      if (e == 'u') {
        int u = hex4(p + 2, end);
        if (u < 0) return NULL;
        p += 6;
        if (u >= 0xdc00 && u <= 0xdfff) return NULL; /* a lone low surrogate */
        if (u >= 0xd800 && u <= 0xdbff) {            /* a low one must follow */
          if (end - p < 6 || p[0] != '\\' || p[1] != 'u') return NULL;
          int lo = hex4(p + 2, end);
          if (lo < 0xdc00 || lo > 0xdfff) return NULL;
          p += 6;
        }
        continue;
      }
      if (strchr("\"\\/bfnrt", e) == NULL || e == '\0') return NULL;
      p += 2;
      continue;
    }
    int n = utf8_len((const unsigned char*)p, (const unsigned char*)end);
    if (n == 0) return NULL;
    p += n;
  }
  return NULL;
}

static const char* skip_number(const char* p, const char* end) {
  if (p < end && *p == '-') p++;
  if (p >= end) return NULL;
  if (*p == '0') {
    p++;
  } else if (*p >= '1' && *p <= '9') {
    while (p < end && *p >= '0' && *p <= '9') p++;
  } else {
    return NULL;
  }
  if (p < end && *p == '.') {
    p++;
    if (p >= end || *p < '0' || *p > '9') return NULL;
    while (p < end && *p >= '0' && *p <= '9') p++;
  }
  if (p < end && (*p == 'e' || *p == 'E')) {
    p++;
    if (p < end && (*p == '+' || *p == '-')) p++;
    if (p >= end || *p < '0' || *p > '9') return NULL;
    while (p < end && *p >= '0' && *p <= '9') p++;
  }
  return p;
}

static const char* skip_word(const char* p, const char* end, const char* w) {
  size_t n = strlen(w);
  if ((size_t)(end - p) < n || memcmp(p, w, n) != 0) return NULL;
  return p + n;
}

/* The end of the value starting at p (blanks skipped first), NULL when
 * invalid. */
static const char* skip_value(const char* p, const char* end, int depth) {
  p = skip_ws(p, end);
  if (p >= end || depth > JSON_MAX_DEPTH) return NULL;
  switch (*p) {
    case '"': return skip_string(p, end);
    case 't': return skip_word(p, end, "true");
    case 'f': return skip_word(p, end, "false");
    case 'n': return skip_word(p, end, "null");
    case '{':
    case '[': {
      bool obj = *p == '{';
      char close = obj ? '}' : ']';
      p = skip_ws(p + 1, end);
      if (p < end && *p == close) return p + 1;
      for (;;) {
        if (obj) {
          p = skip_ws(p, end);
          if (p >= end || *p != '"' || (p = skip_string(p, end)) == NULL) return NULL;
          p = skip_ws(p, end);
          if (p >= end || *p != ':') return NULL;
          p++;
        }
        if ((p = skip_value(p, end, depth + 1)) == NULL) return NULL;
        p = skip_ws(p, end);
        if (p >= end) return NULL;
        if (*p == close) return p + 1;
        if (*p != ',') return NULL;
        p++;
      }
    }
    default: return skip_number(p, end);
  }
}

/* Whether s is one valid JSON document; its value's span in *root. */
static bool json_doc(lm_str s, jspan* root) {
  const char* p = s.ptr;
  const char* end = s.ptr + s.len;
  const char* start = skip_ws(p, end);
  const char* after = skip_value(start, end, 0);
  if (after == NULL || skip_ws(after, end) != end) return false;
  *root = (jspan){start, after};
  return true;
}

/* ---- paths ----------------------------------------------------------------------- */

typedef struct jstep {
  bool is_index;
  bool pointer;  /* a JSON-pointer token: an index in an array, a key in an object */
  int64_t index; /* negative: from the end (-1 the last) */
  const char* key;
  int64_t klen;
} jstep;

typedef struct jpath {
  jstep* steps;
  int32_t n;
} jpath;

/* Parse a path: "$" then .key, ."key" and [i] / [-i] / [#-i] steps; a JSON
 * pointer "/a/0" (~0 ~1 kept as written: decoded when compared); "" is the
 * root; anything else one key. Steps in ctx memory. 0 ok, 1 invalid, 2 a
 * wildcard (not supported). */
static int parse_path(lm_eval_ctx* ctx, lm_str s, jpath* out) {
  out->n = 0;
  out->steps = lm_eval_ctx_alloc(ctx, sizeof(jstep) * (size_t)(s.len + 1));
  if (out->steps == NULL) return -1;
  const char* p = s.ptr;
  const char* end = s.ptr + s.len;
  if (s.len == 0) return 0;
  if (*p == '/') {
    while (p < end) {
      const char* q = ++p;
      while (q < end && *q != '/') q++;
      jstep* st = &out->steps[out->n++];
      *st = (jstep){.pointer = true, .key = p, .klen = q - p, .index = -1};
      bool digits = q > p && (q - p == 1 || *p != '0');
      int64_t v = 0;
      for (const char* d = p; digits && d < q; d++) {
        if (*d < '0' || *d > '9' || v > (INT64_MAX - 9) / 10) digits = false;
        v = v * 10 + (*d - '0');
      }
      st->index = digits ? v : -1;
      p = q;
    }
    return 0;
  }
  if (*p != '$') {
    out->steps[out->n++] = (jstep){.key = p, .klen = s.len};
    return 0;
  }
  p++;
  while (p < end) {
    jstep* st = &out->steps[out->n++];
    memset(st, 0, sizeof *st);
    if (*p == '.') {
      p++;
      if (p < end && *p == '"') {
        const char* q = memchr(p + 1, '"', (size_t)(end - p - 1));
        if (q == NULL || q == p + 1) return 1;
        st->key = p + 1;
        st->klen = q - p - 1;
        p = q + 1;
        continue;
      }
      const char* q = p;
      while (q < end && *q != '.' && *q != '[') {
        if (*q == '*') return 2;
        if (*q == ' ' || *q == '"') return 1;
        q++;
      }
      if (q == p) return 1;
      st->key = p;
      st->klen = q - p;
      p = q;
    } else if (*p == '[') {
      p++;
      bool from_end = false;
      if (p < end && *p == '*') return 2;
      if (p < end && *p == '#') {
        p++;
        from_end = true;
        if (p >= end || *p != '-') return 1;
      }
      bool neg = p < end && *p == '-';
      if (neg) p++;
      int64_t v = 0;
      const char* d0 = p;
      while (p < end && *p >= '0' && *p <= '9') {
        if (v > (INT64_MAX - 9) / 10) return 1;
        v = v * 10 + (*p++ - '0');
      }
      if (p == d0 || p >= end || *p != ']') return 1;
      p++;
      if (from_end && !neg) return 1;
      st->is_index = true;
      st->index = neg ? -v : v;
      if (neg && v == 0) return 1;
    } else {
      return 1;
    }
  }
  return 0;
}

/* ---- strings ----------------------------------------------------------------------- */

static size_t put_utf8(uint32_t cp, char* out) {
  if (cp < 0x80) {
    out[0] = (char)cp;
    return 1;
  }
  if (cp < 0x800) {
    out[0] = (char)(0xc0 | (cp >> 6));
    out[1] = (char)(0x80 | (cp & 0x3f));
    return 2;
  }
  if (cp < 0x10000) {
    out[0] = (char)(0xe0 | (cp >> 12));
    out[1] = (char)(0x80 | ((cp >> 6) & 0x3f));
    out[2] = (char)(0x80 | (cp & 0x3f));
    return 3;
  }
  out[0] = (char)(0xf0 | (cp >> 18));
  out[1] = (char)(0x80 | ((cp >> 12) & 0x3f));
  out[2] = (char)(0x80 | ((cp >> 6) & 0x3f));
  out[3] = (char)(0x80 | (cp & 0x3f));
  return 4;
}

/* Decode the (valid) string value whose opening quote is at p into out (room
 * for its length); the decoded length. */
static size_t unescape(const char* p, char* out) {
  size_t o = 0;
  p++;
  while (*p != '"') {
    if (*p != '\\') {
      out[o++] = *p++;
      continue;
    }
    char e = p[1];
    if (e != 'u') {
      static const char from[] = "\"\\/bfnrt", to[] = "\"\\/\b\f\n\r\t";
      out[o++] = to[strchr(from, e) - from];
      p += 2;
      continue;
    }
    uint32_t cp = (uint32_t)hex4(p + 2, p + 6);
    p += 6;
    if (cp >= 0xd800 && cp <= 0xdbff) {
      uint32_t lo = (uint32_t)hex4(p + 2, p + 6);
      cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
      p += 6;
    }
    o += put_utf8(cp, out + o);
  }
  return o;
}

/* Whether the JSON string at p (quoted, valid) decodes to key[0..klen); a
 * JSON-pointer token compares with ~1 as '/' and ~0 as '~'. */
static bool key_equals(const char* p, const jstep* st, char* scratch) {
  size_t n = unescape(p, scratch);
  if (!st->pointer) return (int64_t)n == st->klen && memcmp(scratch, st->key, n) == 0;
  size_t i = 0;
  for (int64_t k = 0; k < st->klen; k++) {
    char c = st->key[k];
    if (c == '~' && k + 1 < st->klen &&
        (st->key[k + 1] == '0' || st->key[k + 1] == '1')) {
      c = st->key[++k] == '0' ? '~' : '/';
    }
    if (i >= n || scratch[i++] != c) return false;
  }
  return i == n;
}

/* ---- following a path ------------------------------------------------------------ */

/* The value at step st of the (valid) value v; false when there is none.
 * scratch: room for the document's length (key decoding). */
static bool follow(jspan v, const jstep* st, char* scratch, jspan* out) {
  const char* end = v.end;
  const char* p = v.p;
  if (*p == '{' && !st->is_index) {
    p = skip_ws(p + 1, end);
    while (*p == '"') {
      const char* k = p;
      p = skip_ws(skip_string(p, end), end) + 1; /* past ':' */
      p = skip_ws(p, end);
      const char* after = skip_value(p, end, 0);
      if (key_equals(k, st, scratch)) {
        *out = (jspan){p, after};
        return true;
      }
      p = skip_ws(after, end);
      if (*p == ',') p = skip_ws(p + 1, end);
    }
    return false;
  }
  if (*p != '[' || (!st->is_index && !(st->pointer && st->index >= 0))) return false;
  int64_t want = st->index;
  if (want < 0) { /* from the end: count first */
    int64_t n = 0;
    const char* q = skip_ws(p + 1, end);
    while (*q != ']') {
      q = skip_ws(skip_value(q, end, 0), end);
      if (*q == ',') q++;
      n++;
    }
    want += n;
    if (want < 0) return false;
  }
  p = skip_ws(p + 1, end);
  for (int64_t i = 0; *p != ']'; i++) {
    const char* after = skip_value(p, end, 0);
    if (i == want) {
      *out = (jspan){skip_ws(p, end), after};
      return true;
    }
    p = skip_ws(after, end);
    if (*p == ',') p = skip_ws(p + 1, end);
  }
  return false;
}

/* ---- writing values back ---------------------------------------------------------- */

typedef struct jbuf {
  char* p;
  size_t len, cap;
  bool failed;
} jbuf;

static char* room(jbuf* b, size_t n) {
  if (b->failed) return NULL;
  if (b->len + n > b->cap) {
    size_t cap = b->cap ? b->cap : 256;
    while (cap < b->len + n) cap *= 2;
    char* q = lm_realloc(b->p, cap);
    if (q == NULL) {
      b->failed = true;
      return NULL;
    }
    b->p = q;
    b->cap = cap;
  }
  char* at = b->p + b->len;
  b->len += n;
  return at;
}

static void put(jbuf* b, const char* s, size_t n) {
  char* at = room(b, n);
  if (at != NULL && n > 0) memcpy(at, s, n);
}

/* A double in the shortest form that reads back the same: plain digits for
 * exponents -6..20, else d[.ddd]e[-]x; ".0" on a plain integral value. */
static void put_double(jbuf* b, double v) {
  char buf[40];
  for (int prec = 1; prec <= 17; prec++) {
    snprintf(buf, sizeof buf, "%.*e", prec - 1, v);
    if (strtod(buf, NULL) == v) break;
  }
  const char* s = buf;
  char out[64];
  size_t o = 0;
  if (*s == '-') out[o++] = *s++;
  char digits[20];
  size_t nd = 0;
  for (; *s != 'e'; s++)
    if (*s != '.') digits[nd++] = *s;
  int exp = atoi(s + 1);
  while (nd > 1 && digits[nd - 1] == '0') nd--;
  if (exp >= -6 && exp <= 20) {
    if (exp < 0) {
      out[o++] = '0';
      out[o++] = '.';
      for (int i = -1; i > exp; i--) out[o++] = '0';
      for (size_t i = 0; i < nd; i++) out[o++] = digits[i];
    } else {
      for (int i = 0; i <= exp; i++) out[o++] = (size_t)i < nd ? digits[i] : '0';
      out[o++] = '.';
      if ((size_t)exp + 1 >= nd) {
        out[o++] = '0';
      } else {
        for (size_t i = (size_t)exp + 1; i < nd; i++) out[o++] = digits[i];
      }
    }
  } else {
    out[o++] = digits[0];
    if (nd > 1) {
      out[o++] = '.';
      for (size_t i = 1; i < nd; i++) out[o++] = digits[i];
    }
    o += (size_t)snprintf(out + o, sizeof out - o, "e%d", exp);
  }
  put(b, out, o);
}

/* What the (valid) number p..end reads as: an integer within 64 bits
 * (signed when negative, *i; else *u), a finite double (*d), or neither
 * (an integer past 64 bits, a double past the range: kept as written). */
typedef enum { JNUM_INT, JNUM_UINT, JNUM_DOUBLE, JNUM_RAW } jnum_kind;

static jnum_kind read_number(const char* p, const char* end, long long* i,
                             unsigned long long* u, double* d) {
  bool integral = true;
  for (const char* q = p; q < end; q++)
    if (*q == '.' || *q == 'e' || *q == 'E') integral = false;
  char tmp[64];
  size_t n = (size_t)(end - p);
  if (n >= sizeof tmp) return JNUM_RAW; /* no double or 64-bit integer is that long */
  memcpy(tmp, p, n);
  tmp[n] = '\0';
  errno = 0;
  if (integral && *p == '-') {
    *i = strtoll(tmp, NULL, 10);
    return errno == 0 ? JNUM_INT : JNUM_RAW;
  }
  if (integral) {
    *u = strtoull(tmp, NULL, 10);
    return errno == 0 ? JNUM_UINT : JNUM_RAW;
  }
  *d = strtod(tmp, NULL);
  return isinf(*d) ? JNUM_RAW : JNUM_DOUBLE;
}

static void put_number(jbuf* b, const char* p, const char* end) {
  long long i;
  unsigned long long u;
  double d;
  char tmp[32];
  switch (read_number(p, end, &i, &u, &d)) {
    case JNUM_INT: put(b, tmp, (size_t)snprintf(tmp, sizeof tmp, "%lld", i)); return;
    case JNUM_UINT: put(b, tmp, (size_t)snprintf(tmp, sizeof tmp, "%llu", u)); return;
    case JNUM_DOUBLE: put_double(b, d); return;
    case JNUM_RAW: put(b, p, (size_t)(end - p)); return;
  }
}

/* The decoded string at p written back escaped. */
static void put_string(jbuf* b, const char* p, char* scratch) {
  size_t n = unescape(p, scratch);
  put(b, "\"", 1);
  for (size_t i = 0; i < n; i++) {
    unsigned char c = (unsigned char)scratch[i];
    const char* esc = c == '"'    ? "\\\""
                      : c == '\\' ? "\\\\"
                      : c == '\b' ? "\\b"
                      : c == '\f' ? "\\f"
                      : c == '\n' ? "\\n"
                      : c == '\r' ? "\\r"
                      : c == '\t' ? "\\t"
                                  : NULL;
    if (esc != NULL) {
      put(b, esc, 2);
    } else if (c < 0x20) {
      char u[8];
      snprintf(u, sizeof u, "\\u%04X", c);
      put(b, u, 6);
    } else {
      put(b, (const char*)&scratch[i], 1);
    }
  }
  put(b, "\"", 1);
}

/* The (valid) value v minified. */
static void put_value(jbuf* b, jspan v, char* scratch) {
  const char* p = skip_ws(v.p, v.end);
  switch (*p) {
    case '"': put_string(b, p, scratch); return;
    case 't': put(b, "true", 4); return;
    case 'f': put(b, "false", 5); return;
    case 'n': put(b, "null", 4); return;
    case '{':
    case '[': {
      bool obj = *p == '{';
      put(b, p, 1);
      p = skip_ws(p + 1, v.end);
      bool first = true;
      while (*p != (obj ? '}' : ']')) {
        if (!first) put(b, ",", 1);
        first = false;
        if (obj) {
          put_string(b, p, scratch);
          put(b, ":", 1);
          p = skip_ws(skip_ws(skip_string(p, v.end), v.end) + 1, v.end);
        }
        const char* after = skip_value(p, v.end, 0);
        put_value(b, (jspan){p, after}, scratch);
        p = skip_ws(after, v.end);
        if (*p == ',') p = skip_ws(p + 1, v.end);
      }
      put(b, obj ? "}" : "]", 1);
      return;
    }
    default: put_number(b, p, skip_number(p, v.end)); return;
  }
}

/* ---- the functions --------------------------------------------------------------- */

/* The value of row k's document at its path: 1, 0 (the row NULL: an invalid
 * document or path, or no value there), or -1 out of memory. scratch: room
 * for the longest document. */
static int locate(lm_fcall* c, int64_t k, bool has_path, const jpath* cst_path,
                  char* scratch, jspan* out) {
  jspan v;
  if (!json_doc(FARG(c, lm_str, 0, k), &v)) return 0;
  jpath path = {NULL, 0};
  jstep one;
  if (!has_path) {
  } else if (cst_path != NULL) {
    path = *cst_path;
  } else if (c->args[1].v.type == LM_TYPE_STRING) {
    int bad = parse_path(c->ctx, FARG(c, lm_str, 1, k), &path);
    if (bad != 0) return bad < 0 ? -1 : 0;
  } else {
    one = (jstep){.is_index = true, .index = FARG(c, int64_t, 1, k)};
    path = (jpath){&one, 1};
  }
  for (int32_t i = 0; i < path.n; i++) {
    if (!follow(v, &path.steps[i], scratch, &v)) return 0;
  }
  *out = v;
  return 1;
}

laminar_code lm_fn_json(lm_fcall* c) {
  lm_func_id fn = c->e->fn;
  bool has_path = c->nargs > 1;
  jpath cst;
  jpath* cst_path = NULL;
  if (has_path && c->args[1].cst && c->args[1].v.type == LM_TYPE_STRING &&
      !(c->nulls != NULL && c->args[1].v.nulls != NULL && c->args[1].v.nulls[0])) {
    int bad = parse_path(c->ctx, FARG(c, lm_str, 1, 0), &cst);
    if (bad < 0) return LAMINAR_ERR_NOMEM;
    if (bad == 0) cst_path = &cst;
  }
  uint8_t* nulls = NULL;
  size_t longest = 0;
  for (int64_t k = 0; k < c->m; k++)
    if (!FNULL(c, k) && (size_t)FARG(c, lm_str, 0, k).len > longest)
      longest = (size_t)FARG(c, lm_str, 0, k).len;
  char* scratch = lm_eval_ctx_alloc(c->ctx, longest + 1);
  if (scratch == NULL) return LAMINAR_ERR_NOMEM;
  jbuf b = {0};
  int64_t* offs = NULL;
  bool text = fn == LM_FN_JSON_EXTRACT || fn == LM_FN_JSON_EXTRACT_STRING ||
              fn == LM_FN_JSON_TYPE;
  if (text) {
    offs = lm_eval_ctx_alloc(c->ctx, sizeof(int64_t) * (size_t)(c->m + 1));
    if (offs == NULL) return LAMINAR_ERR_NOMEM;
  }
  /* A constant path that does not parse: every row NULL. */
  bool bad_path = has_path && cst_path == NULL && c->args[1].cst &&
                  c->args[1].v.type == LM_TYPE_STRING;
  for (int64_t k = 0; k < c->m; k++) {
    if (text) offs[k] = (int64_t)b.len;
    if (FNULL(c, k)) continue;
    if (fn == LM_FN_JSON_VALID) {
      jspan v;
      ((uint8_t*)c->data)[k] = json_doc(FARG(c, lm_str, 0, k), &v);
      continue;
    }
    jspan v;
    int found = bad_path ? 0 : locate(c, k, has_path, cst_path, scratch, &v);
    if (found < 0) {
      lm_free(b.p);
      return LAMINAR_ERR_NOMEM;
    }
    if (found == 0) {
      if (nulls == NULL && (nulls = lm_fcall_nulls(c)) == NULL) {
        lm_free(b.p);
        return LAMINAR_ERR_NOMEM;
      }
      nulls[k] = 1;
      continue;
    }
    const char* p = skip_ws(v.p, v.end);
    if (fn == LM_FN_JSON_ARRAY_LENGTH) {
      int64_t n = 0;
      if (*p == '[') {
        const char* q = skip_ws(p + 1, v.end);
        while (*q != ']') {
          q = skip_ws(skip_value(q, v.end, 0), v.end);
          if (*q == ',') q++;
          n++;
        }
      }
      ((int64_t*)c->data)[k] = n;
    } else if (fn == LM_FN_JSON_TYPE) {
      const char* t = "DOUBLE";
      if (*p == '{') t = "OBJECT";
      if (*p == '[') t = "ARRAY";
      if (*p == '"') t = "VARCHAR";
      if (*p == 't' || *p == 'f') t = "BOOLEAN";
      if (*p == 'n') t = "NULL";
      if (*p == '-' || (*p >= '0' && *p <= '9')) {
        long long i;
        unsigned long long u;
        double d;
        jnum_kind kind = read_number(p, skip_number(p, v.end), &i, &u, &d);
        if (kind == JNUM_INT) t = "BIGINT";
        if (kind == JNUM_UINT) t = "UBIGINT";
      }
      put(&b, t, strlen(t));
    } else if (fn == LM_FN_JSON_EXTRACT_STRING && *p == '"') {
      char* at = room(&b, (size_t)(v.end - p));
      if (at != NULL) b.len -= (size_t)(v.end - p) - unescape(p, at);
    } else if (fn == LM_FN_JSON_EXTRACT_STRING && *p == 'n') {
      if (nulls == NULL && (nulls = lm_fcall_nulls(c)) == NULL) {
        lm_free(b.p);
        return LAMINAR_ERR_NOMEM;
      }
      nulls[k] = 1;
    } else {
      put_value(&b, v, scratch);
    }
  }
  if (b.failed) {
    lm_free(b.p);
    return LAMINAR_ERR_NOMEM;
  }
  if (text) {
    offs[c->m] = (int64_t)b.len;
    char* all = lm_eval_ctx_alloc(c->ctx, b.len ? b.len : 1);
    if (all == NULL) {
      lm_free(b.p);
      return LAMINAR_ERR_NOMEM;
    }
    if (b.len > 0) memcpy(all, b.p, b.len);
    lm_str* r = c->data;
    for (int64_t k = 0; k < c->m; k++)
      r[k] = (lm_str){all + offs[k], offs[k + 1] - offs[k]};
  }
  lm_free(b.p);
  return LAMINAR_OK;
}

int lm_json_path_check(const char* s, int64_t len) {
  lm_eval_ctx* ctx;
  if (lm_eval_ctx_create(&ctx) != LAMINAR_OK) return -1;
  jpath p;
  int rc = parse_path(ctx, (lm_str){s, len}, &p);
  lm_eval_ctx_destroy(ctx);
  return rc;
}
