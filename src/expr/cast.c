/*
 * cast.c -- CAST between the engine's types, following DuckDB (the project's
 * oracle) with TRY_CAST semantics: a value that cannot convert becomes NULL.
 *
 * Conversion table (from -> to):
 *   same type                  identity (zero-copy)
 *   INT32/INT64 <-> INT32/INT64/DOUBLE
 *                              exact; INT64 -> INT32 out of range -> NULL
 *   DOUBLE -> INT32/INT64      rounds to nearest, ties to even (what DuckDB
 *                              2.0 does: 2.5 -> 2, 3.5 -> 4); NaN, infinities
 *                              and out-of-range -> NULL
 *   BOOL -> numbers            false 0, true 1
 *   numbers -> BOOL            x != 0 (NaN is true, as in DuckDB)
 *   INT64 <-> TIMESTAMP        the integer is microseconds since the epoch
 *                              (DuckDB has no such cast; ours is documented)
 *   INT32 -> TIMESTAMP         as INT64; TIMESTAMP -> INT32 NULL if out of range
 *   DOUBLE <-> TIMESTAMP       microseconds, as DOUBLE -> INT64
 *   BOOL <-> TIMESTAMP         always NULL (no meaningful conversion)
 *   DATE -> TIMESTAMP          its midnight (NULL past the 64-bit range)
 *   TIMESTAMP -> DATE          the day it falls in (floor)
 *   DATE <-> numbers / BOOL    refused by the binder (as DuckDB); the kernel
 *                              still reads a number as days, for DATE +/- n
 *   anything -> STRING         DuckDB's text: integers in decimal, doubles in
 *                              shortest round-trip form ("1.5", "100.0",
 *                              "1e+20"), booleans "true"/"false", timestamps
 *                              "YYYY-MM-DD HH:MM:SS[.ffffff]"
 *   STRING -> numbers          see lm_expr_parse_int64 / _double below
 *   STRING -> BOOL             true/t/yes/y/1, false/f/no/n/0, any case
 *   STRING -> TIMESTAMP        see lm_expr_parse_timestamp below
 *   STRING -> DATE             see lm_expr_parse_date below
 *   SMALLINT / TINYINT         read as INT; to them: as to INT64, then NULL
 *                              outside their range
 *   REAL                       read as DOUBLE (exact), printed with the
 *                              fewest digits of the float; to it: integers
 *                              round once, the rest through DOUBLE, a finite
 *                              value past the float range NULL
 *   VARBINARY <-> STRING       DuckDB's blob text: bytes 0x20..0x7E but
 *                              '"', '\'' and '\\' as themselves, the rest as
 *                              \xHH (upper case); from text, \xHH (either
 *                              case of the digits) is a byte, other ASCII as
 *                              itself, a non-ASCII byte or a bad escape NULL
 *   VARBINARY <-> others       refused by the binder (as DuckDB)
 *   TIME <-> STRING            "HH:MM:SS[.ffffff]" (trailing zeros of the
 *                              fraction dropped); from text H[H]:MM[:SS[.f]],
 *                              fraction digits past 6 cut, 24:00:00 the end
 *                              of the day, anything else NULL
 *   TIMESTAMP -> TIME          its time of day; TIME <-> others refused by
 *                              the binder
 *   NULL (type) -> anything    all NULL
 */
#include "expr/internal.h"

#include "util/util.h"

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- calendar ------------------------------------------------------------------- */

static int days_in_month(int64_t y, int64_t m) {
  static const int dim[12] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  bool leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
  return m == 2 && leap ? 29 : dim[m - 1];
}

/* ---- formatting ------------------------------------------------------------------ */

/* Whether decimal `text` reads back as the float d, strictly inside its
 * rounding interval: a decimal exactly halfway to a neighbour is refused even
 * where ties-to-even would read it back, as DuckDB's shortest float text does
 * (37756352 prints "37756352.0", not "37756350.0"). A decimal of at most 9
 * digits is never within a double's precision of a midpoint unless equal. */
static bool reads_back_single(const char* text, double d) {
  double x = strtod(text, NULL);
  if ((double)(float)x != d) return false;
  float f = (float)d;
  double up = ((double)f + (double)nextafterf(f, INFINITY)) / 2;
  double down = ((double)f + (double)nextafterf(f, -INFINITY)) / 2;
  return x != up && x != down;
}

/* Whether digits[0..nd) x 10^(exp - nd + 1) reads back as d (> 0, normal, not
 * a power of two) by exact integer arithmetic: 1 yes, 0 no, -1 out of its
 * range (nd <= 17 digits, 10^-22 <= the last digit's weight <= 1, d in
 * [2^-17, 2^53)). With d = m x 2^e (m of 53 bits), the decimal V reads back
 * as d when it lies within half a unit of m, the tie going to an even m:
 * V x 2^(1-e) against (2m -+ 1), both sides scaled by 10^k, in 128 bits. */
static int digits_read_back_exact(const char* digits, int nd, int exp, double d) {
  int k = nd - 1 - exp, e;
  if (nd > 17 || k < 0 || k > 22) return -1;
  uint64_t m = (uint64_t)ldexp(frexp(d, &e), 53);
  e -= 53;
  if (e > 0 || 1 - e > 70 || m == UINT64_C(1) << 52) return -1;
  uint64_t v = 0;
  for (int i = 0; i < nd; i++) v = v * 10 + (uint64_t)(digits[i] - '0');
  lm_u128 p10 = 1;
  for (int i = 0; i < k; i++) p10 *= 10;
  lm_u128 x = (lm_u128)v << (1 - e);
  lm_u128 lo = (lm_u128)(2 * m - 1) * p10, hi = (lm_u128)(2 * m + 1) * p10;
  if (x == lo || x == hi) return (m & 1) == 0;
  return lo < x && x < hi;
}

/* Whether the p-digit decimal digits[0..nd) x 10^(exp - nd + 1) reads back as d
 * (as the float d when `single`). */
static bool digits_read_back(const char* digits, int nd, int exp, double d, bool single) {
  int exact = single ? -1 : digits_read_back_exact(digits, nd, exp, d);
  if (exact >= 0) return exact == 1;
  char text[48];
  int n = 0;
  text[n++] = digits[0];
  text[n++] = '.';
  for (int i = 1; i < nd; i++) text[n++] = digits[i];
  snprintf(text + n, sizeof text - (size_t)n, "e%d", exp);
  return single ? reads_back_single(text, d) : strtod(text, NULL) == d;
}

/* Whether digits[0..nd) (exponent exp) read back as d, or failing that a
 * neighbour one unit away in the last digit (then written to digits). */
static bool digits_settle(double d, int nd, char* digits, int exp, bool single) {
  if (digits_read_back(digits, nd, exp, d, single)) return true;
  for (int dir = 1; dir >= -1; dir -= 2) {
    char alt[24];
    memcpy(alt, digits, (size_t)nd);
    int i = nd - 1;
    /* add or subtract one unit in the last place, with carry / borrow */
    while (i >= 0 && alt[i] == (dir > 0 ? '9' : '0')) alt[i--] = dir > 0 ? '0' : '9';
    if (i < 0) continue; /* would change the number of digits: not needed */
    alt[i] = (char)(alt[i] + dir);
    if (alt[0] == '0') continue;
    if (digits_read_back(alt, nd, exp, d, single)) {
      memcpy(digits, alt, (size_t)nd);
      return true;
    }
  }
  return false;
}

/* A p-significant-digit decimal that reads back as d (> 0, finite), if one
 * exists: the correctly rounded one or a neighbour one unit away in the last
 * digit (needed where the rounding interval is lopsided, at powers of two).
 * Fills digits (p chars, no dot) and the exponent of the first digit. */
static bool digits_for(double d, int p, char* digits, int* exp, bool single) {
  char sci[40];
  snprintf(sci, sizeof sci, "%.*e", p - 1, d);
  int nd = 0;
  const char* q = sci;
  for (; *q != 'e'; q++) {
    if (*q != '.') digits[nd++] = *q;
  }
  *exp = atoi(q + 1);
  return digits_settle(d, nd, digits, *exp, single);
}

/* The correctly rounded p digits of d (p < 17) from its correctly rounded 17
 * (d17, exponent e17), when that rounding is sure: not when the digits cut
 * off are exactly half a unit (d17's own rounding may have made them so) nor
 * when rounding up carries into a new digit. */
static bool digits_from_17(const char* d17, int e17, int p, char* digits, int* exp) {
  bool half = d17[p] == '5', above = d17[p] > '5';
  for (int i = p + 1; i < 17; i++) {
    if (d17[i] != '0') above |= half, half = false;
  }
  if (half) return false;
  memcpy(digits, d17, (size_t)p);
  *exp = e17;
  if (!above) return true;
  int i = p - 1;
  while (i >= 0 && digits[i] == '9') digits[i--] = '0';
  if (i < 0) return false;
  digits[i]++;
  return true;
}

/* The fewest significant digits (15, 16 or 17) of a normal d > 0 that read
 * back, as the loop of digits_for would find them, from one formatting of
 * its 17 digits. */
static int shortest_digits(double d, char* digits, int* exp) {
  char sci[40], d17[20];
  snprintf(sci, sizeof sci, "%.16e", d);
  int nd = 0;
  const char* q = sci;
  for (; *q != 'e'; q++) {
    if (*q != '.') d17[nd++] = *q;
  }
  int e17 = atoi(q + 1);
  for (int p = 15; p <= 16; p++) {
    bool settled = digits_from_17(d17, e17, p, digits, exp)
                       ? digits_settle(d, p, digits, *exp, false)
                       : digits_for(d, p, digits, exp, false);
    if (settled) return p;
  }
  memcpy(digits, d17, 17);
  *exp = e17;
  return 17;
}

/* The shortest text reading back as d, or as the float d when `single`. */
static int format_shortest(double d, bool single, char* buf, size_t cap) {
  if (isnan(d)) return snprintf(buf, cap, "nan");
  if (isinf(d)) return snprintf(buf, cap, d > 0 ? "inf" : "-inf");
  bool neg = signbit(d);
  double a = fabs(d);
  char digits[24] = "0";
  int nd = 1, exp = 0;
  if (a != 0.0) {
    /* The fewest significant digits that read back. A normal double carries
     * more than 15 decimal digits, so when some p <= 15 digits read back, the
     * 15-digit rounding is those digits followed by zeros: one try covers
     * every p <= 15 (stripping the zeros), then 16, then 17 (always enough).
     * A subnormal has fewer digits, a float at most 9: search from 1. */
    if (single || a < DBL_MIN) {
      nd = 1;
      while (!digits_for(a, nd, digits, &exp, single)) nd++;
    } else {
      nd = shortest_digits(a, digits, &exp);
    }
    while (nd > 1 && digits[nd - 1] == '0') nd--;
  }
  char out[LM_EXPR_DOUBLE_TEXT_MAX];
  int n = 0;
  if (neg) out[n++] = '-';
  if (exp >= -4 && exp < 16) {
    if (exp >= 0) {
      for (int i = 0; i <= exp; i++) out[n++] = i < nd ? digits[i] : '0';
      out[n++] = '.';
      if (nd > exp + 1) {
        for (int i = exp + 1; i < nd; i++) out[n++] = digits[i];
      } else {
        out[n++] = '0';
      }
    } else {
      out[n++] = '0';
      out[n++] = '.';
      for (int i = 0; i < -exp - 1; i++) out[n++] = '0';
      for (int i = 0; i < nd; i++) out[n++] = digits[i];
    }
  } else {
    out[n++] = digits[0];
    if (nd > 1) {
      out[n++] = '.';
      for (int i = 1; i < nd; i++) out[n++] = digits[i];
    }
    n += snprintf(out + n, sizeof out - (size_t)n, "e%c%02d", exp < 0 ? '-' : '+',
                  abs(exp));
  }
  size_t len = (size_t)n < cap ? (size_t)n : cap;
  memcpy(buf, out, len);
  return (int)len;
}

int lm_expr_format_double(double d, char* buf, size_t cap) {
  return format_shortest(d, false, buf, cap);
}

int lm_expr_format_real(float f, char* buf, size_t cap) {
  return format_shortest((double)f, true, buf, cap);
}

int lm_expr_format_timestamp(int64_t us, char* buf, size_t cap) {
  int64_t secs = us / 1000000; /* floor division without overflow at INT64_MIN */
  int64_t frac = us % 1000000;
  if (frac < 0) {
    frac += 1000000;
    secs -= 1;
  }
  int64_t days = lm_floor_div(secs, 86400);
  int64_t rem = secs - days * 86400;
  int64_t y, m, d;
  lm_civil_from_days(days, &y, &m, &d);
  bool bc = y <= 0;
  char out[LM_EXPR_TIMESTAMP_TEXT_MAX + 16];
  int n = snprintf(out, sizeof out, "%04lld-%02lld-%02lld%s %02lld:%02lld:%02lld",
                   (long long)(bc ? 1 - y : y), (long long)m, (long long)d,
                   bc ? " (BC)" : "", (long long)(rem / 3600), (long long)(rem / 60 % 60),
                   (long long)(rem % 60));
  if (frac != 0) {
    char f[8];
    snprintf(f, sizeof f, "%06lld", (long long)frac);
    int len = 6;
    while (f[len - 1] == '0') len--;
    n += snprintf(out + n, sizeof out - (size_t)n, ".%.*s", len, f);
  }
  size_t len = (size_t)n < cap ? (size_t)n : cap;
  memcpy(buf, out, len);
  return (int)len;
}

int lm_expr_format_date(int32_t days, char* buf, size_t cap) {
  int64_t y, m, d;
  lm_civil_from_days(days, &y, &m, &d);
  bool bc = y <= 0;
  char out[LM_EXPR_DATE_TEXT_MAX + 8];
  int n = snprintf(out, sizeof out, "%04lld-%02lld-%02lld%s", (long long)(bc ? 1 - y : y),
                   (long long)m, (long long)d, bc ? " (BC)" : "");
  size_t len = (size_t)n < cap ? (size_t)n : cap;
  memcpy(buf, out, len);
  return (int)len;
}

/* ---- parsing --------------------------------------------------------------------- */

static bool is_space(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
}
static bool is_digit(char c) { return c >= '0' && c <= '9'; }

static void trim(const char** p, const char** end) {
  while (*p < *end && is_space(**p)) (*p)++;
  while (*end > *p && is_space((*end)[-1])) (*end)--;
}

static int digit_value(char c) {
  if (is_digit(c)) return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return 99;
}

/* Digits in `base` with single '_' allowed between two digits, starting at *p.
 * Advances *p past them; returns the number of digits, or -1 on a misplaced '_'. */
static int64_t scan_digits(const char** p, const char* end, int base) {
  int64_t count = 0;
  const char* q = *p;
  while (q < end) {
    if (digit_value(*q) < base) {
      count++;
      q++;
    } else if (*q == '_') {
      if (count == 0 || q + 1 >= end || digit_value(q[1]) >= base) return -1;
      q++;
    } else {
      break;
    }
  }
  *p = q;
  return count;
}

/* A decimal number: [+-] digits [. digits] [(e|E) [+-] digits], digits in
 * groups separated by single underscores, at least one mantissa digit. */
typedef struct dec_parts {
  bool neg;
  const char* ibeg; /* integer digits (may include '_') */
  const char* iend;
  const char* fbeg; /* fraction digits */
  const char* fend;
  int64_t nint; /* count of integer digits */
  int64_t exp;  /* decimal exponent, clamped to +-1e6 */
} dec_parts;

static bool scan_decimal(const char* p, const char* end, dec_parts* out) {
  out->neg = false;
  if (p < end && (*p == '+' || *p == '-')) out->neg = *p++ == '-';
  out->ibeg = p;
  int64_t ni = scan_digits(&p, end, 10);
  if (ni < 0) return false;
  out->iend = p;
  out->nint = ni;
  int64_t nf = 0;
  out->fbeg = out->fend = p;
  if (p < end && *p == '.') {
    p++;
    out->fbeg = p;
    nf = scan_digits(&p, end, 10);
    if (nf < 0) return false;
    out->fend = p;
  }
  if (ni + nf == 0) return false;
  out->exp = 0;
  if (p < end && (*p == 'e' || *p == 'E')) {
    p++;
    bool eneg = false;
    if (p < end && (*p == '+' || *p == '-')) eneg = *p++ == '-';
    const char* eb = p;
    if (scan_digits(&p, end, 10) <= 0) return false;
    int64_t e = 0;
    for (const char* q = eb; q < p; q++) {
      if (*q != '_' && e < 1000000) e = e * 10 + (*q - '0');
    }
    out->exp = eneg ? -e : e;
  }
  return p == end;
}

/* Integer of base 16 or 2 after a "0x"/"0b" prefix; no sign, <= INT64_MAX. */
static bool parse_radix(const char* p, const char* end, int base, int64_t* out) {
  const char* q = p;
  if (scan_digits(&q, end, base) <= 0 || q != end) return false;
  uint64_t v = 0;
  for (; p < end; p++) {
    if (*p == '_') continue;
    int d = digit_value(*p);
    if (v > ((uint64_t)INT64_MAX - (uint64_t)d) / (uint64_t)base) return false;
    v = v * (uint64_t)base + (uint64_t)d;
  }
  *out = (int64_t)v;
  return true;
}

/* DuckDB's text -> integer: surrounding whitespace ignored; decimal with
 * optional fraction and exponent, rounded half away from zero ("2.5" -> 3,
 * "15e-1" -> 2); "_" between digits; "0x.."/"0b.." (unsigned, no leading
 * whitespace). Out of INT64 range -> false. */
bool lm_expr_parse_int64(lm_str s, int64_t* out) {
  const char* p = s.ptr;
  const char* end = s.ptr + s.len;
  if (s.len <= 0) return false;
  if (end - p > 2 && p[0] == '0' &&
      (p[1] == 'x' || p[1] == 'X' || p[1] == 'b' || p[1] == 'B')) {
    int base = (p[1] | 0x20) == 'x' ? 16 : 2;
    const char* e2 = end;
    trim(&p, &e2);
    return parse_radix(p + 2, e2, base, out);
  }
  trim(&p, &end);
  dec_parts dp;
  if (!scan_decimal(p, end, &dp)) return false;
  /* Digit i of the mantissa (integer digits then fraction digits) has place
   * value 10^(point - 1 - i); the integer value takes digits i < point and
   * digit `point` decides rounding. */
  const uint64_t limit = (uint64_t)INT64_MAX + 1;
  int64_t point = dp.nint + dp.exp;
  uint64_t mag = 0;
  int round_digit = 0;
  int64_t i = 0;
  for (int part = 0; part < 2; part++) {
    const char* q = part == 0 ? dp.ibeg : dp.fbeg;
    const char* qe = part == 0 ? dp.iend : dp.fend;
    for (; q < qe && i <= point; q++) {
      if (*q == '_') continue;
      int d = *q - '0';
      if (i < point) {
        if (__builtin_mul_overflow(mag, (uint64_t)10, &mag) ||
            __builtin_add_overflow(mag, (uint64_t)d, &mag) || mag > limit) {
          return false;
        }
      } else {
        round_digit = d;
      }
      i++;
    }
  }
  for (; i < point && mag != 0; i++) { /* exponent beyond the digits */
    if (__builtin_mul_overflow(mag, (uint64_t)10, &mag) || mag > limit) return false;
  }
  if (round_digit >= 5) mag++;
  if (mag > (dp.neg ? limit : limit - 1)) return false;
  *out = dp.neg ? (int64_t)(0 - mag) : (int64_t)mag;
  return true;
}

static bool word_eq(const char* p, const char* end, const char* w) {
  return lm_strneq_nocase(p, (size_t)(end - p), w);
}

/* DuckDB's text -> double: surrounding whitespace ignored; the decimal grammar
 * of lm_expr_parse_int64 (no hex); "inf", "infinity", "nan" with optional sign,
 * any case. Overflow gives +-inf, underflow 0 (as DuckDB). Numbers longer than
 * 1000 characters are not accepted. */
bool lm_expr_parse_double(lm_str s, double* out) {
  const char* p = s.ptr;
  const char* end = s.ptr + s.len;
  if (s.len <= 0) return false;
  trim(&p, &end);
  const char* w = p;
  bool neg = false;
  if (w < end && (*w == '+' || *w == '-')) neg = *w++ == '-';
  if (word_eq(w, end, "inf") || word_eq(w, end, "infinity")) {
    *out = neg ? -INFINITY : INFINITY;
    return true;
  }
  if (word_eq(w, end, "nan")) {
    *out = NAN;
    return true;
  }
  dec_parts dp;
  if (!scan_decimal(p, end, &dp)) return false;
  char buf[1024];
  if (end - p >= (ptrdiff_t)sizeof buf) return false;
  size_t n = 0;
  for (const char* q = p; q < end; q++) {
    if (*q != '_') buf[n++] = *q;
  }
  buf[n] = '\0';
  *out = strtod(buf, NULL);
  return true;
}

/* DuckDB's text -> boolean (no whitespace trimming, as DuckDB). */
bool lm_expr_parse_bool(lm_str s, bool* out) {
  static const char* const yes[] = {"true", "t", "yes", "y", "1"};
  static const char* const no[] = {"false", "f", "no", "n", "0"};
  if (s.len <= 0 || s.len > 5) return false;
  for (size_t i = 0; i < sizeof yes / sizeof yes[0]; i++) {
    if (lm_strneq_nocase(s.ptr, (size_t)s.len, yes[i])) {
      *out = true;
      return true;
    }
    if (lm_strneq_nocase(s.ptr, (size_t)s.len, no[i])) {
      *out = false;
      return true;
    }
  }
  return false;
}

/* 1..maxd decimal digits at *p into *v. */
static bool take_num(const char** p, const char* end, int maxd, int64_t* v) {
  int nd = 0;
  *v = 0;
  while (*p < end && is_digit(**p) && nd < maxd) {
    *v = *v * 10 + (**p - '0');
    (*p)++;
    nd++;
  }
  return nd > 0 && !(*p < end && is_digit(**p));
}

/* DuckDB's text -> timestamp:
 *   [ws][-]Y..Y(-|/)M[M](same sep)D[D][ (BC)] [( +|T)H[H]:M[M][:S[S][.f*]][Z]] [ws]
 * Year 1..6 digits; years before 1 AD either as " (BC)" after the date (the
 * form CAST(ts AS VARCHAR) writes; not with year 0 or a sign) or as an
 * astronomical year, 0 or with a minus sign (0000 is 1 BC, -0001 is 2 BC); the date is validated (no Feb 30); 24:00[:00]
 * means midnight of the next day; fraction digits past microseconds are
 * truncated; "Z" is accepted; numeric zone offsets are not (NULL). */
bool lm_expr_parse_timestamp(lm_str s, int64_t* out) {
  const char* p = s.ptr;
  const char* end = s.ptr + s.len;
  if (s.len <= 0) return false;
  while (p < end && is_space(*p)) p++;
  int64_t y, mo, d, h = 0, mi = 0, sec = 0, frac = 0;
  bool minus = p < end && *p == '-';
  if (minus) p++;
  if (!take_num(&p, end, 6, &y) || p >= end || (*p != '-' && *p != '/')) return false;
  char sep = *p++;
  if (!take_num(&p, end, 2, &mo) || p >= end || *p++ != sep) return false;
  if (!take_num(&p, end, 2, &d)) return false;
  if (minus) {
    y = -y; /* an astronomical year: -0001 is 2 BC */
  } else if (y >= 1 && end - p >= 5 && memcmp(p, " (BC)", 5) == 0) {
    p += 5;
    y = 1 - y; /* 1 BC is year 0 */
  }
  if (mo < 1 || mo > 12 || d < 1 || d > days_in_month(y, mo)) return false;
  if (p < end) {
    if (*p == 'T') {
      p++;
    } else if (*p == ' ') {
      while (p < end && *p == ' ') p++;
    } else {
      return false;
    }
    if (!take_num(&p, end, 2, &h) || p >= end || *p++ != ':') return false;
    if (!take_num(&p, end, 2, &mi)) return false;
    if (p < end && *p == ':') {
      p++;
      if (!take_num(&p, end, 2, &sec)) return false;
      if (p < end && *p == '.') {
        p++;
        int digits = 0;
        while (p < end && is_digit(*p)) {
          if (digits < 6) {
            frac = frac * 10 + (*p - '0');
            digits++;
          }
          p++;
        }
        for (; digits < 6; digits++) frac *= 10;
      }
    }
    if (p < end && *p == 'Z') p++;
    while (p < end && is_space(*p)) p++;
    if (p != end) return false;
    if (h == 24) {
      if (mi != 0 || sec != 0 || frac != 0) return false;
    } else if (h > 23) {
      return false;
    }
    if (mi > 59 || sec > 59) return false;
  }
  int64_t days = lm_days_from_civil(y, mo, d);
  /* In 128 bits: the whole seconds alone may pass INT64_MIN while the value
   * with its fraction does not (the earliest timestamps). */
  __extension__ __int128 v =
      (__int128)(days * 86400 + h * 3600 + mi * 60 + sec) * 1000000 + frac;
  if (v < INT64_MIN || v > INT64_MAX) return false;
  *out = (int64_t)v;
  return true;
}

/* DuckDB's text -> date: lm_expr_parse_timestamp's grammar; a time of day is
 * dropped ("2026-01-02 10:30" is 2026-01-02), as DuckDB does. */
bool lm_expr_parse_date(lm_str s, int32_t* out) {
  int64_t us;
  if (!lm_expr_parse_timestamp(s, &us)) return false;
  *out = (int32_t)lm_floor_div(us, LM_US_PER_DAY); /* |days| < 2^27: fits */
  return true;
}

/* ---- the CAST kernel -------------------------------------------------------------- */

/* The slot data of vector v, typed. */
#define DATA(T, v) ((const T*)(v)->data)

/* Whether converting a non-null `from` value to `to` can give NULL. */
static bool cast_can_fail(lm_type from, lm_type to) {
  switch (to) {
    case LM_TYPE_STRING: return false;
    case LM_TYPE_DOUBLE: return from == LM_TYPE_STRING;
    case LM_TYPE_BOOL: return from == LM_TYPE_STRING || from == LM_TYPE_TIMESTAMP;
    case LM_TYPE_INT64: return from == LM_TYPE_STRING || from == LM_TYPE_DOUBLE;
    case LM_TYPE_TIMESTAMP:
      return from == LM_TYPE_STRING || from == LM_TYPE_DOUBLE || from == LM_TYPE_BOOL ||
             from == LM_TYPE_DATE;
    case LM_TYPE_INT32: return from != LM_TYPE_BOOL && from != LM_TYPE_DATE;
    case LM_TYPE_DATE: return from != LM_TYPE_INT32 && from != LM_TYPE_TIMESTAMP;
    case LM_TYPE_INT16:
    case LM_TYPE_INT8:
    case LM_TYPE_TIME:                /* cast_time: only from NULL here */
    case LM_TYPE_FLOAT:               /* cast_real: only from NULL here */
    case LM_TYPE_BINARY: return true; /* cast_binary: only from NULL here */
    case LM_TYPE_DECIMAL:             /* lm_expr_cast_decimal: never here */
    case LM_TYPE_NULL: return true;
  }
  return true;
}

/* Round to nearest, ties to even, into [lo, hi]; false for NaN / out of range. */
static inline bool double_to_i64(double x, double lo, double hi_excl, int64_t* out) {
  double r = nearbyint(x);
  if (!(r >= lo && r < hi_excl)) return false; /* also rejects NaN */
  *out = (int64_t)r;
  return true;
}

static laminar_code cast_to_string(lm_eval_ctx* ctx, const lm_vec* in, lm_str* r) {
  int64_t n = in->len;
  size_t width = in->type == LM_TYPE_DOUBLE      ? LM_EXPR_DOUBLE_TEXT_MAX
                 : in->type == LM_TYPE_TIMESTAMP ? LM_EXPR_TIMESTAMP_TEXT_MAX
                 : in->type == LM_TYPE_DATE      ? LM_EXPR_DATE_TEXT_MAX
                                                 : 24;
  char* slab = lm_eval_ctx_alloc(ctx, width * (size_t)n);
  if (slab == NULL) return LAMINAR_ERR_NOMEM;
  char* w = slab;
  for (int64_t k = 0; k < n; k++) {
    if (in->nulls != NULL && in->nulls[k]) {
      r[k] = (lm_str){NULL, 0};
      continue;
    }
    int len;
    switch (in->type) {
      case LM_TYPE_BOOL:
        len = DATA(uint8_t, in)[k] ? 4 : 5;
        memcpy(w, DATA(uint8_t, in)[k] ? "true" : "false", (size_t)len);
        break;
      case LM_TYPE_INT32:
        len = snprintf(w, width, "%d", (int)DATA(int32_t, in)[k]);
        break;
      case LM_TYPE_INT64:
        len = snprintf(w, width, "%lld", (long long)DATA(int64_t, in)[k]);
        break;
      case LM_TYPE_DOUBLE:
        len = lm_expr_format_double(DATA(double, in)[k], w, width);
        break;
      case LM_TYPE_TIMESTAMP:
        len = lm_expr_format_timestamp(DATA(int64_t, in)[k], w, width);
        break;
      case LM_TYPE_DATE: len = lm_expr_format_date(DATA(int32_t, in)[k], w, width); break;
      default: len = 0; break;
    }
    r[k] = (lm_str){w, len};
    w += len;
  }
  return LAMINAR_OK;
}

/* STRING -> non-string: parse each non-null row, marking failures in nl. */
static void cast_from_string(const lm_vec* in, lm_type to, void* data, uint8_t* nl) {
  const lm_str* s = DATA(lm_str, in);
  for (int64_t k = 0; k < in->len; k++) {
    bool ok = false;
    if (!nl[k]) {
      switch (to) {
        case LM_TYPE_BOOL: {
          bool b = false;
          ok = lm_expr_parse_bool(s[k], &b);
          ((uint8_t*)data)[k] = ok && b;
          break;
        }
        case LM_TYPE_INT32: {
          int64_t v = 0;
          ok = lm_expr_parse_int64(s[k], &v) && v >= INT32_MIN && v <= INT32_MAX;
          ((int32_t*)data)[k] = ok ? (int32_t)v : 0;
          break;
        }
        case LM_TYPE_DATE: {
          int32_t v = 0;
          ok = lm_expr_parse_date(s[k], &v);
          ((int32_t*)data)[k] = ok ? v : 0;
          break;
        }
        case LM_TYPE_INT64:
        case LM_TYPE_TIMESTAMP: {
          int64_t v = 0;
          ok = to == LM_TYPE_INT64 ? lm_expr_parse_int64(s[k], &v)
                                   : lm_expr_parse_timestamp(s[k], &v);
          ((int64_t*)data)[k] = ok ? v : 0;
          break;
        }
        case LM_TYPE_DOUBLE: {
          double v = 0;
          ok = lm_expr_parse_double(s[k], &v);
          ((double*)data)[k] = ok ? v : 0;
          break;
        }
        default: break;
      }
    }
    nl[k] = !ok;
  }
}

/* Loop over all rows converting with EXPR (uses `x`, the source value). */
#define CONVERT(ST, DT, EXPR)             \
  do {                                    \
    const ST* src_ = (const ST*)in->data; \
    DT* dst_ = (DT*)data;                 \
    for (int64_t k = 0; k < n; k++) {     \
      ST x = src_[k];                     \
      dst_[k] = (DT)(EXPR);               \
    }                                     \
  } while (0)

/* Loop converting with a check: OK_EXPR decides, VAL_EXPR gives the value. */
#define CONVERT_CHECKED(ST, DT, OK_EXPR, VAL_EXPR) \
  do {                                             \
    const ST* src_ = (const ST*)in->data;          \
    DT* dst_ = (DT*)data;                          \
    for (int64_t k = 0; k < n; k++) {              \
      ST x = src_[k];                              \
      bool ok_ = (OK_EXPR);                        \
      dst_[k] = ok_ ? (DT)(VAL_EXPR) : (DT)0;      \
      nl[k] |= (uint8_t)!ok_;                      \
    }                                              \
  } while (0)

/* SMALLINT / TINYINT (storage types, docs/SQL.md "Types"): from them, widen
 * to INT and cast that; to them, cast to BIGINT and narrow, NULL outside the
 * range. */
static laminar_code cast_small_int(lm_eval_ctx* ctx, const lm_vec* in, lm_type to,
                                   lm_vec* out) {
  int64_t n = in->len;
  size_t cnt = (size_t)n;
  if (in->type == LM_TYPE_INT16 || in->type == LM_TYPE_INT8) {
    int32_t* wide = lm_eval_ctx_alloc(ctx, 4 * cnt);
    if (wide == NULL) return LAMINAR_ERR_NOMEM;
    for (int64_t k = 0; k < n; k++) wide[k] = (int32_t)lm_vec_int_at(in, k);
    lm_vec w = {LM_TYPE_INT32, n, in->nulls, wide};
    return lm_expr_cast(ctx, &w, to, out);
  }
  lm_vec w;
  LM_TRY(lm_expr_cast(ctx, in, LM_TYPE_INT64, &w));
  int64_t lo = to == LM_TYPE_INT16 ? INT16_MIN : INT8_MIN;
  int64_t hi = to == LM_TYPE_INT16 ? INT16_MAX : INT8_MAX;
  void* data = lm_eval_ctx_alloc(ctx, (size_t)lm_type_width(to) * cnt);
  uint8_t* nl = lm_eval_ctx_alloc(ctx, cnt);
  if (data == NULL || nl == NULL) return LAMINAR_ERR_NOMEM;
  uint8_t any = 0;
  for (int64_t k = 0; k < n; k++) {
    int64_t x = ((const int64_t*)w.data)[k];
    nl[k] = (uint8_t)((w.nulls != NULL && w.nulls[k]) || x < lo || x > hi);
    any |= nl[k];
    lm_vec_int_put(to, data, k, nl[k] ? 0 : x);
  }
  *out = (lm_vec){to, n, any ? nl : NULL, data};
  return LAMINAR_OK;
}

/* ---- TIME ----------------------------------------------------------------------- */

#define US_PER_DAY ((int64_t)86400000000)

int lm_expr_format_time(int64_t us, char* out, size_t cap) {
  char buf[24];
  int64_t secs = us / 1000000, frac = us % 1000000;
  int n = snprintf(buf, 24, "%02lld:%02lld:%02lld", (long long)(secs / 3600),
                   (long long)(secs / 60 % 60), (long long)(secs % 60));
  if (frac != 0) {
    char f[8];
    snprintf(f, sizeof f, "%06lld", (long long)frac);
    int len = 6;
    while (f[len - 1] == '0') len--;
    n += snprintf(buf + n, (size_t)(24 - n), ".%.*s", len, f);
  }
  size_t len = (size_t)n < cap ? (size_t)n : cap;
  memcpy(out, buf, len);
  return (int)len;
}

/* Two digits (one allowed for the hour) at *p, advancing; -1 when not there. */
static int64_t time_field(const char** p, const char* end, bool one_ok) {
  const char* q = *p;
  int64_t v = 0;
  int n = 0;
  while (q < end && *q >= '0' && *q <= '9' && n < 2) {
    v = v * 10 + (*q++ - '0');
    n++;
  }
  if (n == 0 || (n == 1 && !one_ok)) return -1;
  *p = q;
  return v;
}

/* DuckDB's text -> TIME: H[H]:MM[:SS[.fraction]], no blanks; false otherwise. */
static bool parse_time(lm_str s, int64_t* out) {
  const char* p = s.ptr;
  const char* end = s.ptr + s.len;
  int64_t h = time_field(&p, end, true), m = -1, sec = 0, frac = 0;
  if (h < 0 || p >= end || *p++ != ':') return false;
  m = time_field(&p, end, false);
  if (m < 0) return false;
  if (p < end && *p == ':') {
    p++;
    sec = time_field(&p, end, false);
    if (sec < 0) return false;
    if (p < end && *p == '.') {
      p++;
      int digits = 0;
      while (p < end && *p >= '0' && *p <= '9') {
        if (digits < 6) frac = frac * 10 + (*p - '0');
        digits++;
        p++;
      }
      if (digits == 0) return false;
      for (int d = digits; d < 6; d++) frac *= 10;
    }
  }
  if (p != end || m > 59 || sec > 59) return false;
  int64_t us = ((h * 60 + m) * 60 + sec) * 1000000 + frac;
  if (us > US_PER_DAY || (h > 23 && us != US_PER_DAY)) return false;
  *out = us;
  return true;
}

/* TIME to and from VARCHAR, and TIMESTAMP to TIME (the binder refuses the
 * rest; `in` or `to` is LM_TYPE_TIME, neither is NULL). */
static laminar_code cast_time(lm_eval_ctx* ctx, const lm_vec* in, lm_type to,
                              lm_vec* out) {
  int64_t n = in->len;
  size_t cnt = (size_t)n;
  if (in->type == LM_TYPE_TIME && to == LM_TYPE_STRING) {
    lm_str* r = lm_eval_ctx_alloc(ctx, sizeof(lm_str) * cnt);
    char* w = lm_eval_ctx_alloc(ctx, 24 * cnt);
    if (r == NULL || w == NULL) return LAMINAR_ERR_NOMEM;
    for (int64_t k = 0; k < n; k++) {
      bool null = in->nulls != NULL && in->nulls[k];
      int len = null ? 0 : lm_expr_format_time(DATA(int64_t, in)[k], w, 24);
      r[k] = (lm_str){null ? NULL : w, len};
      w += len;
    }
    *out = (lm_vec){LM_TYPE_STRING, n, in->nulls, r};
    return LAMINAR_OK;
  }
  if (to != LM_TYPE_TIME) return LAMINAR_ERR_INTERNAL;
  int64_t* data = lm_eval_ctx_alloc(ctx, 8 * cnt);
  uint8_t* nl = lm_eval_ctx_alloc(ctx, cnt);
  if (data == NULL || nl == NULL) return LAMINAR_ERR_NOMEM;
  uint8_t any = 0;
  for (int64_t k = 0; k < n; k++) {
    nl[k] = in->nulls != NULL && in->nulls[k];
    data[k] = 0;
    if (nl[k]) {
      any = 1;
    } else if (in->type == LM_TYPE_STRING) {
      nl[k] = !parse_time(DATA(lm_str, in)[k], &data[k]);
      any |= nl[k];
    } else if (in->type == LM_TYPE_TIMESTAMP) {
      int64_t t = DATA(int64_t, in)[k] % US_PER_DAY;
      data[k] = t < 0 ? t + US_PER_DAY : t;
    } else {
      return LAMINAR_ERR_INTERNAL;
    }
  }
  *out = (lm_vec){LM_TYPE_TIME, n, any ? nl : NULL, data};
  return LAMINAR_OK;
}

/* Whether byte b of a VARBINARY prints as itself in its text. */
static bool blob_plain(uint8_t b) {
  return b >= 0x20 && b <= 0x7e && b != '"' && b != '\'' && b != '\\';
}

static int hex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

/* The bytes of blob text s into out (at most s.len bytes); false for a bad
 * escape or a non-ASCII byte (DuckDB raises there; TRY_CAST gives NULL). */
static bool blob_parse(lm_str s, uint8_t* out, int64_t* len) {
  int64_t n = 0;
  for (int64_t k = 0; k < s.len; k++) {
    uint8_t c = (uint8_t)s.ptr[k];
    if (c >= 0x80) return false;
    if (c == '\\') {
      if (k + 3 >= s.len || s.ptr[k + 1] != 'x') return false;
      int hi = hex_digit(s.ptr[k + 2]), lo = hex_digit(s.ptr[k + 3]);
      if (hi < 0 || lo < 0) return false;
      out[n++] = (uint8_t)(hi * 16 + lo);
      k += 3;
    } else {
      out[n++] = c;
    }
  }
  *len = n;
  return true;
}

/* VARBINARY to and from VARCHAR (the only casts the binder lets through;
 * `in` or `to` is LM_TYPE_BINARY, neither is NULL). */
static laminar_code cast_binary(lm_eval_ctx* ctx, const lm_vec* in, lm_type to,
                                lm_vec* out) {
  int64_t n = in->len;
  size_t cnt = (size_t)n;
  if (!lm_type_is_bytes(in->type) || !lm_type_is_bytes(to)) return LAMINAR_ERR_INTERNAL;
  const lm_str* s = in->data;
  lm_str* r = lm_eval_ctx_alloc(ctx, sizeof(lm_str) * cnt);
  uint8_t* nl = lm_eval_ctx_alloc(ctx, cnt);
  if (r == NULL || nl == NULL) return LAMINAR_ERR_NOMEM;
  size_t total = 0;
  for (int64_t k = 0; k < n; k++) {
    if (in->nulls == NULL || !in->nulls[k]) total += (size_t)s[k].len;
  }
  /* text: at most 4 characters a byte; bytes: at most one a character */
  char* w = lm_eval_ctx_alloc(ctx, (to == LM_TYPE_STRING ? 4 : 1) * total + 1);
  if (w == NULL) return LAMINAR_ERR_NOMEM;
  uint8_t any = 0;
  for (int64_t k = 0; k < n; k++) {
    r[k] = (lm_str){NULL, 0};
    nl[k] = in->nulls != NULL && in->nulls[k];
    if (nl[k]) {
      any = 1;
      continue;
    }
    int64_t len = 0;
    if (to == LM_TYPE_STRING) {
      static const char hex[] = "0123456789ABCDEF";
      for (int64_t i = 0; i < s[k].len; i++) {
        uint8_t b = (uint8_t)s[k].ptr[i];
        if (blob_plain(b)) {
          w[len++] = (char)b;
        } else {
          w[len++] = '\\';
          w[len++] = 'x';
          w[len++] = hex[b >> 4];
          w[len++] = hex[b & 15];
        }
      }
    } else if (!blob_parse(s[k], (uint8_t*)w, &len)) {
      nl[k] = 1;
      any = 1;
      continue;
    }
    r[k] = (lm_str){w, len};
    w += len;
  }
  *out = (lm_vec){to, n, any ? nl : NULL, r};
  return LAMINAR_OK;
}

/* REAL (a storage type, docs/SQL.md "Types"): from it, widen to DOUBLE and
 * cast that, except to VARCHAR (the float's own shortest digits); to it, see
 * the table at the top. `in` or `to` is LM_TYPE_FLOAT, neither is NULL. */
static laminar_code cast_real(lm_eval_ctx* ctx, const lm_vec* in, lm_type to,
                              lm_vec* out) {
  int64_t n = in->len;
  size_t cnt = (size_t)n;
  if (in->type == LM_TYPE_FLOAT) {
    const float* f = in->data;
    if (to == LM_TYPE_STRING) {
      lm_str* r = lm_eval_ctx_alloc(ctx, sizeof(lm_str) * cnt);
      char* w = lm_eval_ctx_alloc(ctx, LM_EXPR_DOUBLE_TEXT_MAX * cnt);
      if (r == NULL || w == NULL) return LAMINAR_ERR_NOMEM;
      for (int64_t k = 0; k < n; k++) {
        bool null = in->nulls != NULL && in->nulls[k];
        int len = null ? 0 : lm_expr_format_real(f[k], w, LM_EXPR_DOUBLE_TEXT_MAX);
        r[k] = (lm_str){null ? NULL : w, len};
        w += len;
      }
      *out = (lm_vec){LM_TYPE_STRING, n, in->nulls, r};
      return LAMINAR_OK;
    }
    double* wide = lm_eval_ctx_alloc(ctx, 8 * cnt);
    if (wide == NULL) return LAMINAR_ERR_NOMEM;
    for (int64_t k = 0; k < n; k++) wide[k] = (double)f[k];
    lm_vec w = {LM_TYPE_DOUBLE, n, in->nulls, wide};
    return lm_expr_cast(ctx, &w, to, out);
  }
  float* data = lm_eval_ctx_alloc(ctx, 4 * cnt);
  uint8_t* nl = lm_eval_ctx_alloc(ctx, cnt);
  if (data == NULL || nl == NULL) return LAMINAR_ERR_NOMEM;
  bool integer = in->type == LM_TYPE_BOOL || in->type == LM_TYPE_INT8 ||
                 in->type == LM_TYPE_INT16 || in->type == LM_TYPE_INT32 ||
                 in->type == LM_TYPE_INT64;
  lm_vec d = *in;
  if (!integer) LM_TRY(lm_expr_cast(ctx, in, LM_TYPE_DOUBLE, &d));
  uint8_t any = 0;
  for (int64_t k = 0; k < n; k++) {
    bool null = d.nulls != NULL && d.nulls[k];
    float x = 0.0f;
    if (!null && integer) {
      x = (float)lm_vec_int_at(&d, k); /* one rounding, as DuckDB */
    } else if (!null) {
      double v = DATA(double, &d)[k];
      x = (float)v;
      null = isinf(x) && !isinf(v); /* finite, past the float range */
      if (null) x = 0.0f;
    }
    data[k] = x;
    nl[k] = (uint8_t)null;
    any |= nl[k];
  }
  *out = (lm_vec){LM_TYPE_FLOAT, n, any ? nl : NULL, data};
  return LAMINAR_OK;
}

laminar_code lm_expr_cast(lm_eval_ctx* ctx, const lm_vec* in, lm_type to, lm_vec* out) {
  int64_t n = in->len;
  lm_type from = in->type;
  if (from == to) {
    *out = *in;
    return LAMINAR_OK;
  }
  if (from != LM_TYPE_NULL && to != LM_TYPE_NULL &&
      (from == LM_TYPE_FLOAT || to == LM_TYPE_FLOAT)) {
    return cast_real(ctx, in, to, out);
  }
  if (from != LM_TYPE_NULL && to != LM_TYPE_NULL &&
      (from == LM_TYPE_TIME || to == LM_TYPE_TIME)) {
    return cast_time(ctx, in, to, out);
  }
  if (from != LM_TYPE_NULL && to != LM_TYPE_NULL &&
      (from == LM_TYPE_BINARY || to == LM_TYPE_BINARY)) {
    return cast_binary(ctx, in, to, out);
  }
  if (lm_type_is_decimal(from) || lm_type_is_decimal(to)) {
    return lm_expr_cast_decimal(ctx, in, to, out);
  }
  if (from != LM_TYPE_NULL && to != LM_TYPE_NULL &&
      (from == LM_TYPE_INT16 || from == LM_TYPE_INT8 || to == LM_TYPE_INT16 ||
       to == LM_TYPE_INT8)) {
    return cast_small_int(ctx, in, to, out);
  }
  size_t cnt = (size_t)n;
  void* data = lm_eval_ctx_alloc(ctx, (size_t)lm_type_width(to) * cnt);
  if (data == NULL) return LAMINAR_ERR_NOMEM;
  bool can_fail = from == LM_TYPE_NULL || cast_can_fail(from, to);
  uint8_t* nl = NULL;
  if (can_fail) {
    nl = lm_eval_ctx_alloc(ctx, cnt);
    if (nl == NULL) return LAMINAR_ERR_NOMEM;
    if (in->nulls != NULL) {
      memcpy(nl, in->nulls, cnt);
    } else {
      memset(nl, 0, cnt);
    }
  }
  *out = (lm_vec){to, n, can_fail ? nl : in->nulls, data};

  if (from == LM_TYPE_NULL || to == LM_TYPE_NULL ||
      (from == LM_TYPE_BOOL && to == LM_TYPE_TIMESTAMP) ||
      (from == LM_TYPE_TIMESTAMP && to == LM_TYPE_BOOL)) {
    memset(data, 0, (size_t)lm_type_width(to) * cnt);
    memset(nl, 1, cnt);
    return LAMINAR_OK;
  }
  if (to == LM_TYPE_STRING) return cast_to_string(ctx, in, (lm_str*)data);
  if (from == LM_TYPE_STRING) {
    cast_from_string(in, to, data, nl);
  } else {
    switch (to) {
      case LM_TYPE_BOOL:
        switch (from) {
          case LM_TYPE_INT32: CONVERT(int32_t, uint8_t, x != 0); break;
          case LM_TYPE_INT64: CONVERT(int64_t, uint8_t, x != 0); break;
          case LM_TYPE_DOUBLE: CONVERT(double, uint8_t, x != 0.0); break;
          default: return LAMINAR_ERR_INTERNAL;
        }
        break;
      case LM_TYPE_DATE:
        switch (from) {
          case LM_TYPE_TIMESTAMP:
            CONVERT(int64_t, int32_t, lm_floor_div(x, LM_US_PER_DAY));
            break;
          case LM_TYPE_INT32: memcpy(data, in->data, 4 * cnt); break;
          case LM_TYPE_INT64:
            CONVERT_CHECKED(int64_t, int32_t, x >= INT32_MIN && x <= INT32_MAX, x);
            break;
          default: return LAMINAR_ERR_INTERNAL;
        }
        break;
      case LM_TYPE_INT32:
        switch (from) {
          case LM_TYPE_BOOL: CONVERT(uint8_t, int32_t, x != 0); break;
          case LM_TYPE_DATE: memcpy(data, in->data, 4 * cnt); break;
          case LM_TYPE_INT64:
          case LM_TYPE_TIMESTAMP:
            CONVERT_CHECKED(int64_t, int32_t, x >= INT32_MIN && x <= INT32_MAX, x);
            break;
          case LM_TYPE_DOUBLE: {
            int64_t v = 0;
            CONVERT_CHECKED(double, int32_t,
                            double_to_i64(x, -2147483648.0, 2147483648.0, &v), v);
            break;
          }
          default: return LAMINAR_ERR_INTERNAL;
        }
        break;
      case LM_TYPE_INT64:
      case LM_TYPE_TIMESTAMP:
        switch (from) {
          case LM_TYPE_BOOL: CONVERT(uint8_t, int64_t, x != 0); break;
          case LM_TYPE_INT32: CONVERT(int32_t, int64_t, x); break;
          case LM_TYPE_INT64:
          case LM_TYPE_TIMESTAMP: memcpy(data, in->data, 8 * cnt); break;
          case LM_TYPE_DATE:
            if (to == LM_TYPE_INT64) {
              CONVERT(int32_t, int64_t, x);
            } else {
              /* |days| < 2^31 times 86.4e9 can pass 2^63: check in 128 bits */
              CONVERT_CHECKED(
                  int32_t, int64_t,
                  (__extension__(__int128) x * LM_US_PER_DAY) >= INT64_MIN &&
                      (__extension__(__int128) x * LM_US_PER_DAY) <= INT64_MAX,
                  (int64_t)x * LM_US_PER_DAY);
            }
            break;
          case LM_TYPE_DOUBLE: {
            int64_t v = 0;
            CONVERT_CHECKED(
                double, int64_t,
                double_to_i64(x, -9223372036854775808.0, 9223372036854775808.0, &v), v);
            break;
          }
          default: return LAMINAR_ERR_INTERNAL;
        }
        break;
      case LM_TYPE_DOUBLE:
        switch (from) {
          case LM_TYPE_BOOL: CONVERT(uint8_t, double, x != 0); break;
          case LM_TYPE_INT32: CONVERT(int32_t, double, x); break;
          case LM_TYPE_INT64:
          case LM_TYPE_TIMESTAMP: CONVERT(int64_t, double, x); break;
          default: return LAMINAR_ERR_INTERNAL;
        }
        break;
      default: return LAMINAR_ERR_INTERNAL;
    }
  }
  if (nl != NULL) {
    /* Drop the null array when nothing failed and nothing was null. */
    uint8_t any = 0;
    for (int64_t k = 0; k < n; k++) any |= nl[k];
    if (!any) out->nulls = NULL;
  }
  return LAMINAR_OK;
}
