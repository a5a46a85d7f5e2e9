/*
 * cast.c -- CAST between the engine's types (DuckDB's conversions; a value
 * that cannot convert gives NULL, like DuckDB's TRY_CAST).
 */
#include "expr/expr.h"

#include "util/util.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

laminar_code lm_expr_cast(lm_eval_ctx* ctx, const lm_vec* in, lm_type to, lm_vec* out);

static int64_t floor_div(int64_t a, int64_t b) {
  int64_t q = a / b;
  return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}

/* Shortest text that reads back as the same double; integral values get ".0". */
static int format_double(double d, char* buf, size_t cap) {
  if (isnan(d)) return snprintf(buf, cap, "nan");
  if (isinf(d)) return snprintf(buf, cap, d > 0 ? "inf" : "-inf");
  int n = 0;
  for (int prec = 1; prec <= 17; prec++) {
    n = snprintf(buf, cap, "%.*g", prec, d);
    if (strtod(buf, NULL) == d) break;
  }
  if (strpbrk(buf, ".e") == NULL) n += snprintf(buf + n, cap - (size_t)n, ".0");
  return n;
}

static int format_timestamp(int64_t us, char* buf, size_t cap) {
  int64_t secs = floor_div(us, 1000000);
  int64_t frac = us - secs * 1000000;
  int64_t days = floor_div(secs, 86400);
  int64_t rem = secs - days * 86400;
  /* civil-from-days (proleptic Gregorian), Howard Hinnant's algorithm */
  int64_t z = days + 719468;
  int64_t era = floor_div(z, 146097);
  int64_t doe = z - era * 146097;
  int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
  int64_t y = yoe + era * 400;
  int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
  int64_t mp = (5 * doy + 2) / 153;
  int64_t dd = doy - (153 * mp + 2) / 5 + 1;
  int64_t mm = mp < 10 ? mp + 3 : mp - 9;
  if (mm <= 2) y++;
  int n = snprintf(buf, cap, "%04lld-%02lld-%02lld %02lld:%02lld:%02lld", (long long)y,
                   (long long)mm, (long long)dd, (long long)(rem / 3600),
                   (long long)(rem / 60 % 60), (long long)(rem % 60));
  if (frac) {
    char f[8];
    snprintf(f, sizeof f, "%06lld", (long long)frac);
    int len = 6;
    while (len > 0 && f[len - 1] == '0') len--;
    n += snprintf(buf + n, cap - (size_t)n, ".%.*s", len, f);
  }
  return n;
}

static int64_t days_from_civil(int64_t y, int64_t m, int64_t d) {
  y -= m <= 2;
  int64_t era = floor_div(y, 400);
  int64_t yoe = y - era * 400;
  int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + doe - 719468;
}

/* Copy a counted string to a NUL-terminated, space-trimmed buffer. */
static bool trimmed(lm_str s, char* buf, size_t cap) {
  const char* p = s.ptr;
  int64_t len = s.len;
  while (len > 0 && isspace((unsigned char)*p)) {
    p++;
    len--;
  }
  while (len > 0 && isspace((unsigned char)p[len - 1])) len--;
  if (len <= 0 || (size_t)len >= cap) return false;
  memcpy(buf, p, (size_t)len);
  buf[len] = '\0';
  return true;
}

static bool parse_int(lm_str s, int64_t* out) {
  char buf[64];
  if (!trimmed(s, buf, sizeof buf)) return false;
  char* end;
  errno = 0;
  long long v = strtoll(buf, &end, 10);
  if (errno != 0 || *end != '\0') return false;
  *out = v;
  return true;
}

static bool parse_double(lm_str s, double* out) {
  char buf[128];
  if (!trimmed(s, buf, sizeof buf)) return false;
  char* end;
  errno = 0;
  double v = strtod(buf, &end);
  if (*end != '\0' || errno == ERANGE) return false;
  *out = v;
  return true;
}

static bool parse_bool(lm_str s, bool* out) {
  char buf[16];
  if (!trimmed(s, buf, sizeof buf)) return false;
  for (char* p = buf; *p; p++) *p = (char)tolower((unsigned char)*p);
  if (!strcmp(buf, "true") || !strcmp(buf, "t") || !strcmp(buf, "1")) {
    *out = true;
    return true;
  }
  if (!strcmp(buf, "false") || !strcmp(buf, "f") || !strcmp(buf, "0")) {
    *out = false;
    return true;
  }
  return false;
}

/* 'YYYY-MM-DD[( |T)HH:MM:SS[.ffffff]]' -> micros. */
static bool parse_timestamp(lm_str s, int64_t* out) {
  char buf[64];
  if (!trimmed(s, buf, sizeof buf)) return false;
  int y, mo, d, h = 0, mi = 0, sec = 0, consumed = 0;
  if (sscanf(buf, "%4d-%2d-%2d%n", &y, &mo, &d, &consumed) != 3) return false;
  const char* p = buf + consumed;
  int64_t frac = 0;
  if (*p == ' ' || *p == 'T') {
    int c2 = 0;
    if (sscanf(p + 1, "%2d:%2d:%2d%n", &h, &mi, &sec, &c2) != 3) return false;
    p += 1 + c2;
    if (*p == '.') {
      p++;
      int digits = 0;
      while (isdigit((unsigned char)*p)) {
        if (digits < 6) {
          frac = frac * 10 + (*p - '0');
          digits++;
        }
        p++;
      }
      while (digits++ < 6) frac *= 10;
    }
  }
  if (*p != '\0' || mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || sec > 59) {
    return false;
  }
  int64_t days = days_from_civil(y, mo, d);
  *out = ((days * 86400 + h * 3600 + mi * 60 + sec) * 1000000) + frac;
  return true;
}

/* Round half away from zero into int64; false when out of range or NaN. */
static bool double_to_int(double d, int64_t lo, int64_t hi, int64_t* out) {
  if (isnan(d)) return false;
  double r = round(d);
  if (r < (double)lo || r >= -(double)lo) return false; /* 2^63 is not representable */
  if (r > (double)hi) return false;
  *out = (int64_t)r;
  return true;
}

static int64_t get_int(const lm_vec* v, int64_t k) {
  switch (v->type) {
    case LM_TYPE_INT32: return ((const int32_t*)v->data)[k];
    case LM_TYPE_BOOL: return ((const uint8_t*)v->data)[k];
    default: return ((const int64_t*)v->data)[k];
  }
}

laminar_code lm_expr_cast(lm_eval_ctx* ctx, const lm_vec* in, lm_type to, lm_vec* out) {
  int64_t n = in->len;
  if (in->type == to) {
    *out = *in;
    return LAMINAR_OK;
  }
  size_t cnt = (size_t)(n ? n : 1);
  void* data = lm_eval_ctx_alloc(ctx, (size_t)lm_type_width(to) * cnt);
  uint8_t* nulls = lm_eval_ctx_alloc(ctx, cnt);
  if (data == NULL || nulls == NULL) return LAMINAR_ERR_NOMEM;
  memset(nulls, 0, cnt);
  memset(data, 0, (size_t)lm_type_width(to) * cnt);
  bool any_null = false;
  for (int64_t k = 0; k < n; k++) {
    if (in->nulls && in->nulls[k]) {
      nulls[k] = 1;
      any_null = true;
      continue;
    }
    bool ok = true;
    int64_t iv = 0;
    double dv = 0;
    bool bv = false;
    /* Read the input into one of iv / dv / bv / a string, then write `to`. */
    switch (to) {
      case LM_TYPE_STRING: {
        char buf[64];
        int len;
        switch (in->type) {
          case LM_TYPE_BOOL:
            len = snprintf(buf, sizeof buf, "%s", ((const uint8_t*)in->data)[k] ? "true" : "false");
            break;
          case LM_TYPE_DOUBLE: len = format_double(((const double*)in->data)[k], buf, sizeof buf); break;
          case LM_TYPE_TIMESTAMP:
            len = format_timestamp(((const int64_t*)in->data)[k], buf, sizeof buf);
            break;
          default: len = snprintf(buf, sizeof buf, "%lld", (long long)get_int(in, k)); break;
        }
        char* copy = lm_eval_ctx_alloc(ctx, (size_t)len);
        if (copy == NULL) return LAMINAR_ERR_NOMEM;
        memcpy(copy, buf, (size_t)len);
        ((lm_str*)data)[k] = (lm_str){copy, len};
        continue;
      }
      case LM_TYPE_DOUBLE:
        if (in->type == LM_TYPE_STRING) {
          ok = parse_double(((const lm_str*)in->data)[k], &dv);
        } else {
          dv = (double)get_int(in, k);
        }
        if (ok) ((double*)data)[k] = dv;
        break;
      case LM_TYPE_BOOL:
        if (in->type == LM_TYPE_STRING) {
          ok = parse_bool(((const lm_str*)in->data)[k], &bv);
        } else if (in->type == LM_TYPE_DOUBLE) {
          bv = ((const double*)in->data)[k] != 0.0;
        } else if (in->type == LM_TYPE_TIMESTAMP) {
          ok = false;
        } else {
          bv = get_int(in, k) != 0;
        }
        if (ok) ((uint8_t*)data)[k] = bv;
        break;
      case LM_TYPE_INT32:
      case LM_TYPE_INT64:
      case LM_TYPE_TIMESTAMP: {
        int64_t lo = to == LM_TYPE_INT32 ? INT32_MIN : INT64_MIN;
        int64_t hi = to == LM_TYPE_INT32 ? INT32_MAX : INT64_MAX;
        if (in->type == LM_TYPE_STRING) {
          lm_str s = ((const lm_str*)in->data)[k];
          if (to == LM_TYPE_TIMESTAMP) {
            ok = parse_timestamp(s, &iv);
          } else {
            ok = parse_int(s, &iv);
          }
        } else if (in->type == LM_TYPE_DOUBLE) {
          ok = double_to_int(((const double*)in->data)[k], lo, hi, &iv);
        } else if (in->type == LM_TYPE_BOOL && to == LM_TYPE_TIMESTAMP) {
          ok = false;
        } else {
          iv = get_int(in, k);
        }
        ok = ok && iv >= lo && iv <= hi;
        if (ok) {
          if (to == LM_TYPE_INT32) {
            ((int32_t*)data)[k] = (int32_t)iv;
          } else {
            ((int64_t*)data)[k] = iv;
          }
        }
        break;
      }
      case LM_TYPE_NULL: ok = false; break;
    }
    if (!ok) {
      nulls[k] = 1;
      any_null = true;
    }
  }
  *out = (lm_vec){to, n, any_null ? nulls : NULL, data};
  return LAMINAR_OK;
}
