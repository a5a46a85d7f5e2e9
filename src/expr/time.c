/*
 * time.c -- the proleptic Gregorian calendar and the kernels of EXTRACT /
 * date_part and date_trunc over TIMESTAMP (microseconds since 1970-01-01, no
 * zone), with DuckDB's part names, aliases and conventions: years before 1 AD
 * are astronomical (1 BC is year 0, so EXTRACT(year) of 44 BC is -43), weeks
 * are ISO weeks starting on Monday, decade / century / millennium truncation
 * divides the year toward zero. A date_trunc result outside the 64-bit range
 * is NULL.
 */
#include "expr/internal.h"

#include "util/util.h"

#define US_PER_SEC INT64_C(1000000)
#define US_PER_MIN (60 * US_PER_SEC)
#define US_PER_HOUR (60 * US_PER_MIN)
#define US_PER_DAY (24 * US_PER_HOUR)

/* ---- calendar ------------------------------------------------------------------- */

int64_t lm_floor_div(int64_t a, int64_t b) {
  int64_t q = a / b;
  return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}

/* Days since 1970-01-01 of a proleptic Gregorian date (Hinnant's method). */
int64_t lm_days_from_civil(int64_t y, int64_t m, int64_t d) {
  y -= m <= 2;
  int64_t era = lm_floor_div(y, 400);
  int64_t yoe = y - era * 400;
  int64_t doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1;
  int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + doe - 719468;
}

void lm_civil_from_days(int64_t days, int64_t* y, int64_t* m, int64_t* d) {
  int64_t z = days + 719468;
  int64_t era = lm_floor_div(z, 146097);
  int64_t doe = z - era * 146097;
  int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
  int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
  int64_t mp = (5 * doy + 2) / 153;
  *d = doy - (153 * mp + 2) / 5 + 1;
  *m = mp < 10 ? mp + 3 : mp - 9;
  *y = yoe + era * 400 + (*m <= 2);
}

/* ---- part names ------------------------------------------------------------------ */

static const struct {
  const char* name;
  lm_date_part part;
} k_parts[] = {
    {"year", LM_DP_YEAR},
    {"years", LM_DP_YEAR},
    {"y", LM_DP_YEAR},
    {"yr", LM_DP_YEAR},
    {"yrs", LM_DP_YEAR},
    {"quarter", LM_DP_QUARTER},
    {"quarters", LM_DP_QUARTER},
    {"month", LM_DP_MONTH},
    {"months", LM_DP_MONTH},
    {"mon", LM_DP_MONTH},
    {"mons", LM_DP_MONTH},
    {"week", LM_DP_WEEK},
    {"weeks", LM_DP_WEEK},
    {"w", LM_DP_WEEK},
    {"weekofyear", LM_DP_WEEK},
    {"day", LM_DP_DAY},
    {"days", LM_DP_DAY},
    {"d", LM_DP_DAY},
    {"dayofmonth", LM_DP_DAY},
    {"dow", LM_DP_DOW},
    {"dayofweek", LM_DP_DOW},
    {"weekday", LM_DP_DOW},
    {"isodow", LM_DP_ISODOW},
    {"doy", LM_DP_DOY},
    {"dayofyear", LM_DP_DOY},
    {"hour", LM_DP_HOUR},
    {"hours", LM_DP_HOUR},
    {"h", LM_DP_HOUR},
    {"hr", LM_DP_HOUR},
    {"hrs", LM_DP_HOUR},
    {"minute", LM_DP_MINUTE},
    {"minutes", LM_DP_MINUTE},
    {"m", LM_DP_MINUTE},
    {"min", LM_DP_MINUTE},
    {"mins", LM_DP_MINUTE},
    {"second", LM_DP_SECOND},
    {"seconds", LM_DP_SECOND},
    {"s", LM_DP_SECOND},
    {"sec", LM_DP_SECOND},
    {"secs", LM_DP_SECOND},
    {"millisecond", LM_DP_MILLISECOND},
    {"milliseconds", LM_DP_MILLISECOND},
    {"ms", LM_DP_MILLISECOND},
    {"msec", LM_DP_MILLISECOND},
    {"msecs", LM_DP_MILLISECOND},
    {"msecond", LM_DP_MILLISECOND},
    {"mseconds", LM_DP_MILLISECOND},
    {"microsecond", LM_DP_MICROSECOND},
    {"microseconds", LM_DP_MICROSECOND},
    {"us", LM_DP_MICROSECOND},
    {"usec", LM_DP_MICROSECOND},
    {"usecs", LM_DP_MICROSECOND},
    {"usecond", LM_DP_MICROSECOND},
    {"useconds", LM_DP_MICROSECOND},
    {"epoch", LM_DP_EPOCH},
    {"isoyear", LM_DP_ISOYEAR},
    {"yearweek", LM_DP_YEARWEEK},
    {"decade", LM_DP_DECADE},
    {"decades", LM_DP_DECADE},
    {"dec", LM_DP_DECADE},
    {"decs", LM_DP_DECADE},
    {"century", LM_DP_CENTURY},
    {"centuries", LM_DP_CENTURY},
    {"c", LM_DP_CENTURY},
    {"cent", LM_DP_CENTURY},
    {"millennium", LM_DP_MILLENNIUM},
    {"millennia", LM_DP_MILLENNIUM},
    {"millenium", LM_DP_MILLENNIUM},
    {"millenniums", LM_DP_MILLENNIUM},
    {"mil", LM_DP_MILLENNIUM},
    {"mils", LM_DP_MILLENNIUM},
    {"era", LM_DP_ERA},
    {"julian", LM_DP_JULIAN},
    {"timezone", LM_DP_TIMEZONE},
    {"timezone_hour", LM_DP_TIMEZONE},
    {"timezone_minute", LM_DP_TIMEZONE},
};

lm_date_part lm_date_part_find(lm_str name, bool trunc) {
  for (size_t i = 0; i < sizeof k_parts / sizeof k_parts[0]; i++) {
    if (!lm_strneq_nocase(name.ptr, (size_t)name.len, k_parts[i].name)) continue;
    lm_date_part p = k_parts[i].part;
    if (trunc && (p == LM_DP_ERA || p == LM_DP_TIMEZONE)) return 0;
    return p;
  }
  return 0;
}

/* ---- fields of one timestamp ------------------------------------------------------ */

typedef struct tm_fields {
  int64_t days; /* since the epoch */
  int64_t tod;  /* microseconds into the day */
  int64_t y, m, d;
} tm_fields;

static inline void split(int64_t us, tm_fields* f) {
  f->days = lm_floor_div(us, US_PER_DAY);
  f->tod = us % US_PER_DAY; /* no product: days * US_PER_DAY may not fit */
  if (f->tod < 0) f->tod += US_PER_DAY;
  lm_civil_from_days(f->days, &f->y, &f->m, &f->d);
}

/* ISO day of week, Monday 1 .. Sunday 7 (1970-01-01 was a Thursday). */
static inline int64_t iso_dow(int64_t days) {
  return days + 3 - 7 * lm_floor_div(days + 3, 7) + 1;
}

/* ISO year and week of a day. */
static void iso_week(int64_t days, int64_t* year, int64_t* week) {
  int64_t thursday = days - iso_dow(days) + 4;
  int64_t y, m, d;
  lm_civil_from_days(thursday, &y, &m, &d);
  *year = y;
  *week = (thursday - lm_days_from_civil(y, 1, 1)) / 7 + 1;
}

/* The Monday that starts ISO week 1 of ISO year y. */
static int64_t iso_year_start(int64_t y) {
  int64_t jan4 = lm_days_from_civil(y, 1, 4);
  return jan4 - iso_dow(jan4) + 1;
}

static int64_t part_int(lm_date_part p, int64_t us) {
  tm_fields f;
  split(us, &f);
  switch (p) {
    case LM_DP_YEAR: return f.y;
    case LM_DP_QUARTER: return (f.m - 1) / 3 + 1;
    case LM_DP_MONTH: return f.m;
    case LM_DP_DAY: return f.d;
    case LM_DP_DOW: return iso_dow(f.days) % 7;
    case LM_DP_ISODOW: return iso_dow(f.days);
    case LM_DP_DOY: return f.days - lm_days_from_civil(f.y, 1, 1) + 1;
    case LM_DP_HOUR: return f.tod / US_PER_HOUR;
    case LM_DP_MINUTE: return f.tod / US_PER_MIN % 60;
    case LM_DP_SECOND: return f.tod / US_PER_SEC % 60;
    case LM_DP_MILLISECOND: return f.tod % US_PER_MIN / 1000;
    case LM_DP_MICROSECOND: return f.tod % US_PER_MIN;
    case LM_DP_WEEK:
    case LM_DP_ISOYEAR:
    case LM_DP_YEARWEEK: {
      int64_t iy, wk;
      iso_week(f.days, &iy, &wk);
      /* DuckDB: the week takes the sign of years up to 0 (1 BC is year 0). */
      return p == LM_DP_WEEK      ? wk
             : p == LM_DP_ISOYEAR ? iy
                                  : iy * 100 + (iy <= 0 ? -wk : wk);
    }
    case LM_DP_DECADE: return f.y / 10;
    case LM_DP_CENTURY: return f.y > 0 ? (f.y - 1) / 100 + 1 : f.y / 100 - 1;
    case LM_DP_MILLENNIUM: return f.y > 0 ? (f.y - 1) / 1000 + 1 : f.y / 1000 - 1;
    case LM_DP_ERA: return f.y > 0;
    case LM_DP_TIMEZONE: return 0;
    case LM_DP_EPOCH:
    case LM_DP_JULIAN: break;
  }
  return 0;
}

laminar_code lm_fn_date_part(lm_fcall* c) {
  lm_date_part p = (lm_date_part)c->e->fn_arg;
  const int64_t* x = c->args[1].v.data;
  int64_t m = c->m;
  if (p == LM_DP_EPOCH) {
    double* r = c->data;
    for (int64_t k = 0; k < m; k++) r[k] = (double)x[c->args[1].cst ? 0 : k] / 1e6;
    return LAMINAR_OK;
  }
  if (p == LM_DP_JULIAN) {
    double* r = c->data;
    for (int64_t k = 0; k < m; k++) {
      tm_fields f;
      split(x[c->args[1].cst ? 0 : k], &f);
      r[k] = (double)(f.days + 2440588) + (double)f.tod / (double)US_PER_DAY;
    }
    return LAMINAR_OK;
  }
  int64_t* r = c->data;
  for (int64_t k = 0; k < m; k++) r[k] = part_int(p, x[c->args[1].cst ? 0 : k]);
  return LAMINAR_OK;
}

/* Start of the unit containing us; false when it leaves the 64-bit range. */
static bool trunc_one(lm_date_part p, int64_t us, int64_t* out) {
  tm_fields f;
  split(us, &f);
  int64_t step = 0, days;
  switch (p) {
    case LM_DP_MICROSECOND: *out = us; return true;
    case LM_DP_MILLISECOND: step = 1000; break;
    case LM_DP_SECOND:
    case LM_DP_EPOCH: step = US_PER_SEC; break;
    case LM_DP_MINUTE: step = US_PER_MIN; break;
    case LM_DP_HOUR: step = US_PER_HOUR; break;
    default: break;
  }
  if (step != 0) return !__builtin_sub_overflow(us, f.tod % step, out);
  switch (p) {
    case LM_DP_DAY:
    case LM_DP_DOW:
    case LM_DP_ISODOW:
    case LM_DP_DOY:
    case LM_DP_JULIAN: days = f.days; break;
    case LM_DP_WEEK:
    case LM_DP_YEARWEEK: days = f.days - iso_dow(f.days) + 1; break;
    case LM_DP_ISOYEAR: {
      int64_t iy, wk;
      iso_week(f.days, &iy, &wk);
      days = iso_year_start(iy);
      break;
    }
    case LM_DP_MONTH: days = lm_days_from_civil(f.y, f.m, 1); break;
    case LM_DP_QUARTER: days = lm_days_from_civil(f.y, (f.m - 1) / 3 * 3 + 1, 1); break;
    case LM_DP_YEAR: days = lm_days_from_civil(f.y, 1, 1); break;
    case LM_DP_DECADE: days = lm_days_from_civil(f.y / 10 * 10, 1, 1); break;
    case LM_DP_CENTURY: days = lm_days_from_civil(f.y / 100 * 100, 1, 1); break;
    case LM_DP_MILLENNIUM: days = lm_days_from_civil(f.y / 1000 * 1000, 1, 1); break;
    default: return false;
  }
  return !__builtin_mul_overflow(days, US_PER_DAY, out);
}

laminar_code lm_fn_date_trunc(lm_fcall* c) {
  lm_date_part p = (lm_date_part)c->e->fn_arg;
  const int64_t* x = c->args[1].v.data;
  int64_t* r = c->data;
  uint8_t* nl = NULL;
  for (int64_t k = 0; k < c->m; k++) {
    r[k] = 0;
    if (FNULL(c, k)) continue;
    if (!trunc_one(p, x[c->args[1].cst ? 0 : k], &r[k])) {
      if (nl == NULL && (nl = lm_fcall_nulls(c)) == NULL) return LAMINAR_ERR_NOMEM;
      nl[k] = 1;
      r[k] = 0;
    }
  }
  return LAMINAR_OK;
}
