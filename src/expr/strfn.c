/*
 * strfn.c -- kernels of the string functions (UPPER, LOWER, LENGTH, SUBSTRING,
 * TRIM / LTRIM / RTRIM, CONCAT, REPLACE, STARTS_WITH) and of LIKE / ILIKE.
 *
 * Strings are UTF-8 (validated when a batch is imported) and every position
 * or length counts characters (code points), as DuckDB's functions do.
 * Results that are a slice of an argument (SUBSTRING, TRIM) point into the
 * argument's bytes, without a copy; the others are written into one buffer
 * per batch from the evaluation context. Rows whose input is NULL are skipped.
 * Case mapping is Unicode's simple one-to-one mapping (casemap.h), the one
 * DuckDB's UPPER / LOWER use.
 */
#include "expr/casemap.h"
#include "expr/internal.h"

#include "util/util.h"

#include <string.h>

/* ---- UTF-8 ----------------------------------------------------------------------- */

/* Bytes of the UTF-8 character led by byte b (1 for a stray continuation byte). */
static inline int64_t utf8_width(unsigned char b) {
  return b < 0xC0 ? 1 : b < 0xE0 ? 2 : b < 0xF0 ? 3 : 4;
}

int64_t lm_utf8_decode(const char* s, int64_t len, int32_t* cp) {
  const unsigned char* u = (const unsigned char*)s;
  int64_t w = utf8_width(u[0]);
  if (w > len) w = 1;
  for (int64_t i = 1; i < w; i++) {
    if ((u[i] & 0xC0) != 0x80) w = 1;
  }
  switch (w) {
    case 2: *cp = ((u[0] & 0x1F) << 6) | (u[1] & 0x3F); break;
    case 3: *cp = ((u[0] & 0x0F) << 12) | ((u[1] & 0x3F) << 6) | (u[2] & 0x3F); break;
    case 4:
      *cp = ((u[0] & 0x07) << 18) | ((u[1] & 0x3F) << 12) | ((u[2] & 0x3F) << 6) |
            (u[3] & 0x3F);
      break;
    default: *cp = u[0]; break;
  }
  return w;
}

static int64_t utf8_encode(int32_t cp, char* out) {
  unsigned char* o = (unsigned char*)out;
  if (cp < 0x80) {
    o[0] = (unsigned char)cp;
    return 1;
  }
  if (cp < 0x800) {
    o[0] = (unsigned char)(0xC0 | (cp >> 6));
    o[1] = (unsigned char)(0x80 | (cp & 0x3F));
    return 2;
  }
  if (cp < 0x10000) {
    o[0] = (unsigned char)(0xE0 | (cp >> 12));
    o[1] = (unsigned char)(0x80 | ((cp >> 6) & 0x3F));
    o[2] = (unsigned char)(0x80 | (cp & 0x3F));
    return 3;
  }
  o[0] = (unsigned char)(0xF0 | (cp >> 18));
  o[1] = (unsigned char)(0x80 | ((cp >> 12) & 0x3F));
  o[2] = (unsigned char)(0x80 | ((cp >> 6) & 0x3F));
  o[3] = (unsigned char)(0x80 | (cp & 0x3F));
  return 4;
}

/* Characters in s (bytes that do not continue a character). */
static inline int64_t utf8_count(lm_str s) {
  const unsigned char* u = (const unsigned char*)s.ptr;
  int64_t n = 0;
  for (int64_t i = 0; i < s.len; i++) n += (u[i] & 0xC0) != 0x80;
  return n;
}

/* Byte offset of character `chars` of s (s.len when past the end). */
static inline int64_t utf8_offset(lm_str s, int64_t chars) {
  const unsigned char* u = (const unsigned char*)s.ptr;
  int64_t i = 0;
  for (; i < s.len && chars > 0; chars--) {
    i++;
    while (i < s.len && (u[i] & 0xC0) == 0x80) i++;
  }
  return i;
}

static bool is_ascii(lm_str s) {
  const unsigned char* u = (const unsigned char*)s.ptr;
  unsigned char acc = 0;
  for (int64_t i = 0; i < s.len; i++) acc |= u[i];
  return acc < 0x80;
}

/* ---- case mapping ---------------------------------------------------------------- */

static int32_t map_lookup(const lm_casemap_pair* map, int32_t n, int32_t cp) {
  int32_t lo = 0, hi = n;
  while (lo < hi) {
    int32_t mid = (lo + hi) / 2;
    if (map[mid].from < cp) {
      lo = mid + 1;
    } else {
      hi = mid;
    }
  }
  return lo < n && map[lo].from == cp ? map[lo].to : cp;
}

int32_t lm_unicode_upper(int32_t cp) {
  if (cp < 0x80) return cp >= 'a' && cp <= 'z' ? cp - 32 : cp;
  return map_lookup(k_upper_map, (int32_t)(sizeof k_upper_map / sizeof k_upper_map[0]),
                    cp);
}

int32_t lm_unicode_lower(int32_t cp) {
  if (cp < 0x80) return cp >= 'A' && cp <= 'Z' ? cp + 32 : cp;
  return map_lookup(k_lower_map, (int32_t)(sizeof k_lower_map / sizeof k_lower_map[0]),
                    cp);
}

/* Case-map s into out (room for 3 * s.len / 2 + 4 bytes); returns the length.
 * A simple mapping changes a character's width by at most one byte up
 * (2 -> 3 bytes) or down. */
static int64_t map_case(lm_str s, bool upper, char* out) {
  const unsigned char* u = (const unsigned char*)s.ptr;
  int64_t o = 0;
  for (int64_t i = 0; i < s.len;) {
    if (u[i] < 0x80) {
      unsigned char ch = u[i++];
      if (upper) {
        out[o++] = (char)(ch >= 'a' && ch <= 'z' ? ch - 32 : ch);
      } else {
        out[o++] = (char)(ch >= 'A' && ch <= 'Z' ? ch + 32 : ch);
      }
      continue;
    }
    int32_t cp;
    int64_t w = lm_utf8_decode(s.ptr + i, s.len - i, &cp);
    int32_t mapped = upper ? lm_unicode_upper(cp) : lm_unicode_lower(cp);
    if (mapped == cp) {
      memcpy(out + o, s.ptr + i, (size_t)w);
      o += w;
    } else {
      o += utf8_encode(mapped, out + o);
    }
    i += w;
  }
  return o;
}

static size_t case_room(int64_t len) { return (size_t)(len + len / 2 + 4); }

/* Sum of the lengths of string argument i over the non-null rows. */
static size_t total_len(const lm_fcall* c, int32_t i) {
  size_t total = 0;
  for (int64_t k = 0; k < c->m; k++) {
    if (!FNULL(c, k)) total += (size_t)FARG(c, lm_str, i, k).len;
  }
  return total;
}

laminar_code lm_fn_case(lm_fcall* c) {
  bool upper = c->e->fn == LM_FN_UPPER;
  lm_str* r = c->data;
  size_t total = total_len(c, 0);
  char* buf = lm_eval_ctx_alloc(c->ctx, case_room((int64_t)total));
  if (buf == NULL) return LAMINAR_ERR_NOMEM;
  for (int64_t k = 0; k < c->m; k++) {
    if (FNULL(c, k)) {
      r[k] = (lm_str){NULL, 0};
      continue;
    }
    lm_str s = FARG(c, lm_str, 0, k);
    int64_t len = map_case(s, upper, buf);
    r[k] = (lm_str){buf, len};
    buf += len;
  }
  return LAMINAR_OK;
}

/* ---- LENGTH, STARTS_WITH ---------------------------------------------------------- */

laminar_code lm_fn_length(lm_fcall* c) {
  if (c->args[0].v.type == LM_TYPE_BINARY) return lm_fn_octet_length(c);
  int64_t* r = c->data;
  const lm_str* s = c->args[0].v.data;
  for (int64_t k = 0; k < c->m; k++) r[k] = FNULL(c, k) ? 0 : utf8_count(s[k]);
  return LAMINAR_OK;
}

laminar_code lm_fn_octet_length(lm_fcall* c) {
  int64_t* r = c->data;
  const lm_str* s = c->args[0].v.data;
  for (int64_t k = 0; k < c->m; k++) r[k] = FNULL(c, k) ? 0 : s[k].len;
  return LAMINAR_OK;
}

laminar_code lm_fn_starts_with(lm_fcall* c) {
  uint8_t* r = c->data;
  for (int64_t k = 0; k < c->m; k++) {
    lm_str s = FARG(c, lm_str, 0, k), p = FARG(c, lm_str, 1, k);
    r[k] = !FNULL(c, k) && p.len <= s.len &&
           (p.len == 0 || memcmp(s.ptr, p.ptr, (size_t)p.len) == 0);
  }
  return LAMINAR_OK;
}

/* ---- SUBSTRING ------------------------------------------------------------------- */

/* DuckDB refuses offsets and lengths outside about +-2^32; such rows are NULL. */
#define SUBSTR_LIMIT ((int64_t)4294967295)

/* The characters [from, to) of s clamped to the string (0-based, any values). */
static lm_str char_slice(lm_str s, int64_t from, int64_t to) {
  if (from < 0) from = 0;
  if (to <= from) return (lm_str){s.ptr, 0};
  if (is_ascii(s)) {
    if (from >= s.len) return (lm_str){s.ptr, 0};
    if (to > s.len) to = s.len;
    return (lm_str){s.ptr + from, to - from};
  }
  int64_t b = utf8_offset(s, from);
  lm_str rest = {s.ptr + b, s.len - b};
  int64_t e = utf8_offset(rest, to - from);
  return (lm_str){rest.ptr, e};
}

laminar_code lm_fn_substring(lm_fcall* c) {
  lm_str* r = c->data;
  bool has_count = c->nargs == 3;
  uint8_t* nl = NULL;
  for (int64_t k = 0; k < c->m; k++) {
    r[k] = (lm_str){NULL, 0};
    if (FNULL(c, k)) continue;
    lm_str s = FARG(c, lm_str, 0, k);
    int64_t start = FARG(c, int64_t, 1, k);
    int64_t count = has_count ? FARG(c, int64_t, 2, k) : 0;
    if (start > SUBSTR_LIMIT || start < -SUBSTR_LIMIT - 1 || count > SUBSTR_LIMIT ||
        count < -SUBSTR_LIMIT - 1) {
      if (nl == NULL && (nl = lm_fcall_nulls(c)) == NULL) return LAMINAR_ERR_NOMEM;
      nl[k] = 1;
      continue;
    }
    /* 1-based start; 0 is the position before the first character; a
     * negative start counts from the end (-1 is the last character). */
    int64_t begin = start > 0 ? start - 1 : start == 0 ? -1 : utf8_count(s) + start;
    int64_t from, to;
    if (!has_count) {
      from = begin;
      to = INT64_MAX;
    } else if (count >= 0) {
      from = begin;
      to = begin + count;
    } else { /* a negative count takes the characters before the start */
      from = begin + count;
      to = begin;
    }
    r[k] = char_slice(s, from, to);
  }
  return LAMINAR_OK;
}

/* ---- TRIM ---------------------------------------------------------------------- */

/* Whether the character at s[i..] (w bytes) is one of `set`. */
static bool in_set(const char* ch, int64_t w, lm_str set) {
  for (int64_t i = 0; i + w <= set.len;) {
    int64_t sw = utf8_width((unsigned char)set.ptr[i]);
    if (sw == w && memcmp(set.ptr + i, ch, (size_t)w) == 0) return true;
    i += sw;
  }
  return false;
}

/* Width of the character that ends at s[end - 1]. */
static int64_t last_char_width(const char* s, int64_t end) {
  int64_t w = 1;
  while (w < end && w < 4 && ((unsigned char)s[end - w] & 0xC0) == 0x80) w++;
  return w;
}

laminar_code lm_fn_trim(lm_fcall* c) {
  lm_str* r = c->data;
  bool left = c->e->fn != LM_FN_RTRIM, right = c->e->fn != LM_FN_LTRIM;
  static const lm_str k_space = {" ", 1};
  for (int64_t k = 0; k < c->m; k++) {
    r[k] = (lm_str){NULL, 0};
    if (FNULL(c, k)) continue;
    lm_str s = FARG(c, lm_str, 0, k);
    lm_str set = c->nargs == 2 ? FARG(c, lm_str, 1, k) : k_space;
    int64_t b = 0, e = s.len;
    if (set.len == 1) { /* one ASCII character: a byte loop */
      char ch = set.ptr[0];
      if (left) {
        while (b < e && s.ptr[b] == ch) b++;
      }
      if (right) {
        while (e > b && s.ptr[e - 1] == ch) e--;
      }
    } else if (set.len > 0) {
      if (left) {
        while (b < e) {
          int64_t w = utf8_width((unsigned char)s.ptr[b]);
          if (b + w > e || !in_set(s.ptr + b, w, set)) break;
          b += w;
        }
      }
      if (right) {
        while (e > b) {
          int64_t w = last_char_width(s.ptr + b, e - b);
          if (!in_set(s.ptr + e - w, w, set)) break;
          e -= w;
        }
      }
    }
    r[k] = (lm_str){s.ptr + b, e - b};
  }
  return LAMINAR_OK;
}

/* ---- CONCAT, REPLACE ------------------------------------------------------------- */

/* Whether argument i is NULL at row k (CONCAT sees unmerged nulls). */
static inline bool arg_null(const lm_fcall* c, int32_t i, int64_t k) {
  const lm_xvec* a = &c->args[i];
  return a->v.nulls != NULL && a->v.nulls[a->cst ? 0 : k];
}

laminar_code lm_fn_concat(lm_fcall* c) {
  lm_str* r = c->data;
  size_t total = 0;
  for (int32_t i = 0; i < c->nargs; i++) {
    for (int64_t k = 0; k < c->m; k++) {
      if (!arg_null(c, i, k)) total += (size_t)FARG(c, lm_str, i, k).len;
    }
  }
  char* buf = lm_eval_ctx_alloc(c->ctx, total ? total : 1);
  if (buf == NULL) return LAMINAR_ERR_NOMEM;
  for (int64_t k = 0; k < c->m; k++) {
    char* start = buf;
    for (int32_t i = 0; i < c->nargs; i++) {
      if (arg_null(c, i, k)) continue;
      lm_str s = FARG(c, lm_str, i, k);
      if (s.len > 0) memcpy(buf, s.ptr, (size_t)s.len);
      buf += s.len;
    }
    r[k] = (lm_str){start, buf - start};
  }
  return LAMINAR_OK;
}

/* First occurrence of needle (len > 0) in hay at or after byte `from`; -1 if none. */
static int64_t find(lm_str hay, int64_t from, lm_str needle) {
  const char first = needle.ptr[0];
  for (int64_t i = from; i + needle.len <= hay.len; i++) {
    const char* p = memchr(hay.ptr + i, first, (size_t)(hay.len - needle.len - i + 1));
    if (p == NULL) return -1;
    i = p - hay.ptr;
    if (memcmp(p, needle.ptr, (size_t)needle.len) == 0) return i;
  }
  return -1;
}

static int64_t count_matches(lm_str s, lm_str from) {
  int64_t n = 0;
  for (int64_t i = find(s, 0, from); i >= 0; i = find(s, i + from.len, from)) n++;
  return n;
}

laminar_code lm_fn_replace(lm_fcall* c) {
  lm_str* r = c->data;
  size_t total = 0;
  for (int64_t k = 0; k < c->m; k++) {
    if (FNULL(c, k)) continue;
    lm_str s = FARG(c, lm_str, 0, k), from = FARG(c, lm_str, 1, k),
           to = FARG(c, lm_str, 2, k);
    total += (size_t)s.len;
    if (from.len > 0 && to.len > from.len) {
      total += (size_t)(count_matches(s, from) * (to.len - from.len));
    }
  }
  char* buf = lm_eval_ctx_alloc(c->ctx, total ? total : 1);
  if (buf == NULL) return LAMINAR_ERR_NOMEM;
  for (int64_t k = 0; k < c->m; k++) {
    r[k] = (lm_str){NULL, 0};
    if (FNULL(c, k)) continue;
    lm_str s = FARG(c, lm_str, 0, k), from = FARG(c, lm_str, 1, k),
           to = FARG(c, lm_str, 2, k);
    if (from.len == 0) { /* nothing to replace: the input as it is */
      r[k] = s;
      continue;
    }
    char* start = buf;
    int64_t done = 0;
    for (int64_t i = find(s, 0, from); i >= 0; i = find(s, done, from)) {
      memcpy(buf, s.ptr + done, (size_t)(i - done));
      buf += i - done;
      if (to.len > 0) memcpy(buf, to.ptr, (size_t)to.len);
      buf += to.len;
      done = i + from.len;
    }
    if (s.len > done) memcpy(buf, s.ptr + done, (size_t)(s.len - done));
    buf += s.len - done;
    r[k] = (lm_str){start, buf - start};
  }
  return LAMINAR_OK;
}

/* ---- LIKE / ILIKE ------------------------------------------------------------------ */

/* The shape of a pattern without '_' or escapes: '%' only at either end.
 * EXACT 'abc', PREFIX 'abc%', SUFFIX '%abc', CONTAINS '%abc%' (the literal is
 * the middle part; a lone '%' or '%%' is CONTAINS of ""). GENERAL otherwise. */
typedef enum like_shape {
  LIKE_GENERAL,
  LIKE_EXACT,
  LIKE_PREFIX,
  LIKE_SUFFIX,
  LIKE_CONTAINS
} like_shape;

static like_shape classify(lm_str p, int32_t escape, lm_str* lit) {
  if (escape >= 0) return LIKE_GENERAL;
  int64_t b = 0, e = p.len;
  bool lead = false, trail = false;
  while (b < e && p.ptr[b] == '%') {
    b++;
    lead = true;
  }
  while (e > b && p.ptr[e - 1] == '%') {
    e--;
    trail = true;
  }
  for (int64_t i = b; i < e; i++) {
    if (p.ptr[i] == '%' || p.ptr[i] == '_') return LIKE_GENERAL;
  }
  *lit = (lm_str){p.ptr + b, e - b};
  if (lead && trail) return LIKE_CONTAINS;
  if (lead) return LIKE_SUFFIX;
  if (trail) return LIKE_PREFIX;
  return LIKE_EXACT;
}

/* Whether pattern p is well formed: it does not end with the escape character
 * (DuckDB raises an error for that one). */
bool lm_like_pattern_ok(lm_str p, int32_t escape) {
  if (escape < 0) return true;
  for (int64_t i = 0; i < p.len;) {
    int32_t cp;
    int64_t w = lm_utf8_decode(p.ptr + i, p.len - i, &cp);
    if (cp == escape) {
      if (i + w >= p.len) return false;
      i += w;
      w = utf8_width((unsigned char)p.ptr[i]);
    }
    i += w;
  }
  return true;
}

/* Match s against the well-formed pattern p ('%' any run, '_' one character,
 * `escape` (a code point, -1 for none) makes the next pattern character
 * literal). Iterative, backtracking to the last '%' only: O(|s| * |p|) at
 * worst, no recursion. */
static bool like_match(lm_str s, lm_str p, int32_t escape) {
  int64_t si = 0, pi = 0, star_p = -1, star_s = 0;
  for (;;) {
    if (pi < p.len) {
      unsigned char pc = (unsigned char)p.ptr[pi];
      int32_t pcp = pc;
      int64_t pw = 1;
      if (pc >= 0x80) pw = lm_utf8_decode(p.ptr + pi, p.len - pi, &pcp);
      if (pcp == escape) {
        int64_t lw = utf8_width((unsigned char)p.ptr[pi + pw]);
        if (pi + pw + lw > p.len) lw = p.len - pi - pw;
        if (si + lw <= s.len && memcmp(s.ptr + si, p.ptr + pi + pw, (size_t)lw) == 0) {
          si += lw;
          pi += pw + lw;
          continue;
        }
      } else if (pc == '%') {
        while (pi < p.len && p.ptr[pi] == '%') pi++;
        if (pi == p.len) return true; /* a trailing '%' matches the rest */
        star_p = pi;
        star_s = si;
        continue;
      } else if (pc == '_') {
        if (si < s.len) {
          si += utf8_width((unsigned char)s.ptr[si]);
          pi++;
          continue;
        }
      } else if (si < s.len && pc == (unsigned char)s.ptr[si]) {
        si++;
        pi++;
        continue;
      }
    } else if (si == s.len) {
      return true;
    }
    /* Mismatch, or the pattern ended first: the last '%' takes one more
     * character of s, or there is no match. */
    if (star_p < 0 || star_s >= s.len) return false;
    star_s += utf8_width((unsigned char)s.ptr[star_s]);
    si = star_s;
    pi = star_p;
  }
}

static bool fast_match(like_shape shape, lm_str s, lm_str lit) {
  switch (shape) {
    case LIKE_EXACT:
      return s.len == lit.len &&
             (lit.len == 0 || memcmp(s.ptr, lit.ptr, (size_t)lit.len) == 0);
    case LIKE_PREFIX:
      return s.len >= lit.len &&
             (lit.len == 0 || memcmp(s.ptr, lit.ptr, (size_t)lit.len) == 0);
    case LIKE_SUFFIX:
      return s.len >= lit.len && (lit.len == 0 || memcmp(s.ptr + s.len - lit.len, lit.ptr,
                                                         (size_t)lit.len) == 0);
    case LIKE_CONTAINS: return lit.len == 0 || find(s, 0, lit) >= 0;
    case LIKE_GENERAL: break;
  }
  return false;
}

laminar_code lm_fn_like(lm_fcall* c) {
  uint8_t* r = c->data;
  int32_t escape = c->e->fn_arg;
  bool fold = c->e->fn == LM_FN_ILIKE;
  bool const_pattern = c->args[1].cst;
  char* sbuf = NULL;
  size_t sroom = 0;
  lm_str pat = {NULL, 0}, lit = {NULL, 0};
  like_shape shape = LIKE_GENERAL;
  bool pat_checked = false;
  if (const_pattern) {
    pat = FARG(c, lm_str, 1, 0);
    if (fold) {
      char* pb = lm_eval_ctx_alloc(c->ctx, case_room(pat.len));
      if (pb == NULL) return LAMINAR_ERR_NOMEM;
      pat = (lm_str){pb, map_case(pat, false, pb)};
    }
    shape = classify(pat, escape, &lit);
  }
  uint8_t* nl = NULL;
  for (int64_t k = 0; k < c->m; k++) {
    r[k] = 0;
    if (FNULL(c, k)) continue;
    lm_str s = FARG(c, lm_str, 0, k);
    lm_str p = pat;
    if (fold) {
      if (case_room(s.len) > sroom) {
        sroom = case_room(s.len) * 2;
        sbuf = lm_eval_ctx_alloc(c->ctx, sroom);
        if (sbuf == NULL) return LAMINAR_ERR_NOMEM;
      }
      s = (lm_str){sbuf, map_case(s, false, sbuf)};
    }
    if (!const_pattern) {
      p = FARG(c, lm_str, 1, k);
      if (fold) {
        char* pb = lm_eval_ctx_alloc(c->ctx, case_room(p.len));
        if (pb == NULL) return LAMINAR_ERR_NOMEM;
        p = (lm_str){pb, map_case(p, false, pb)};
      }
    }
    if (shape != LIKE_GENERAL) {
      r[k] = fast_match(shape, s, lit);
      continue;
    }
    if ((!const_pattern || !pat_checked) && !lm_like_pattern_ok(p, escape)) {
      /* The pattern ends with the escape: DuckDB raises, the row is NULL. */
      if (nl == NULL && (nl = lm_fcall_nulls(c)) == NULL) return LAMINAR_ERR_NOMEM;
      nl[k] = 1;
      continue;
    }
    pat_checked = true;
    r[k] = like_match(s, p, escape);
  }
  return LAMINAR_OK;
}
