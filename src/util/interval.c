/*
 * interval.c -- durations in text: the one table of time units, read by SQL
 * INTERVAL literals (sql/parser.c), and by options and config values
 * (checkpoint_interval, wal_flush_interval: db/durable.c, db/options.c), so
 * every spelling means the same everywhere.
 */
#include "util/util.h"

#include <stdlib.h>
#include <string.h>

/* The spellings of date_part below day, as DuckDB's. */
bool lm_interval_unit(const char* s, size_t n, int64_t* out) {
  static const struct {
    const char* word;
    int64_t ms;
  } units[] = {
      {"millisecond", 1}, {"milliseconds", 1}, {"ms", 1},         {"msec", 1},
      {"msecs", 1},       {"second", 1000},    {"seconds", 1000}, {"s", 1000},
      {"sec", 1000},      {"secs", 1000},      {"minute", 60000}, {"minutes", 60000},
      {"m", 60000},       {"min", 60000},      {"mins", 60000},   {"hour", 3600000},
      {"hours", 3600000}, {"h", 3600000},      {"hr", 3600000},   {"hrs", 3600000},
      {"day", 86400000},  {"days", 86400000},  {"d", 86400000}};
  for (size_t i = 0; i < sizeof units / sizeof units[0]; i++) {
    if (lm_strneq_nocase(s, n, units[i].word)) {
      *out = units[i].ms;
      return true;
    }
  }
  return false;
}

/* Parse the quantity of an interval, "[+|-]digits[.digits]", from s[0..n) into
 * either an exact integer (*is_int) or a double. */
static bool interval_number(const char* s, size_t n, bool* is_int, int64_t* iv,
                            double* dv) {
  size_t i = 0;
  bool neg = false;
  if (i < n && (s[i] == '+' || s[i] == '-')) neg = s[i++] == '-';
  size_t digits = 0, frac = 0;
  uint64_t v = 0;
  bool big = false;
  while (i < n && s[i] >= '0' && s[i] <= '9') {
    if (v > (UINT64_C(1) << 62)) big = true;
    v = big ? v : v * 10 + (uint64_t)(s[i] - '0');
    i++;
    digits++;
  }
  if (i < n && s[i] == '.') {
    i++;
    while (i < n && s[i] >= '0' && s[i] <= '9') {
      i++;
      frac++;
    }
  }
  if (i != n || digits + frac == 0) return false;
  if (frac == 0 && !big) {
    *is_int = true;
    *iv = neg ? -(int64_t)v : (int64_t)v;
    return true;
  }
  char buf[64];
  if (n >= sizeof buf) return false;
  memcpy(buf, s, n);
  buf[n] = '\0';
  *is_int = false;
  *dv = strtod(buf, NULL);
  return true;
}


bool lm_interval_parse_text(const char* s, size_t n, lm_interval_text* it) {
  *it = (lm_interval_text){.is_int = true};
  size_t i = 0;
  while (i < n && s[i] == ' ') i++;
  if (i == n) {
    it->bad = 0;
    it->why = "it is empty";
    return false;
  }
  for (size_t terms = 0; i < n; terms++) {
    size_t a = i;
    if (i < n && (s[i] == '+' || s[i] == '-')) i++;
    while (i < n && ((s[i] >= '0' && s[i] <= '9') || s[i] == '.')) i++;
    bool is_int = false;
    int64_t iv = 0;
    double dv = 0;
    if (!interval_number(s + a, i - a, &is_int, &iv, &dv)) {
      it->bad = a;
      it->why = "expected a number";
      return false;
    }
    while (i < n && s[i] == ' ') i++;
    size_t c = i;
    while (i < n && ((s[i] | 0x20) >= 'a' && (s[i] | 0x20) <= 'z')) i++;
    if (c == i) {
      if (i == n && terms == 0) { /* 'n': the unit follows the literal */
        it->bare = true;
        it->is_int = is_int;
        it->iv = iv;
        it->dv = dv;
        return true;
      }
      it->bad = c;
      it->why = "expected a unit (ms, s, min, h, d or their full names)";
      return false;
    }
    int64_t unit_ms = 0;
    if (!lm_interval_unit(s + c, i - c, &unit_ms)) {
      it->bad = c;
      it->why = "unknown unit (use ms, s, min, h, d or their full names)";
      return false;
    }
    while (i < n && s[i] == ' ') i++;
    double term = (is_int ? (double)iv : dv) * (double)unit_ms;
    it->dms += term;
    if (is_int && it->is_int) {
      int64_t t;
      it->overflow = it->overflow || __builtin_mul_overflow(iv, unit_ms, &t) ||
                     __builtin_add_overflow(it->ms, t, &it->ms);
    }
    it->is_int = it->is_int && is_int;
  }
  return true;
}

bool lm_interval_parse_ms(const char* text, int64_t* out_ms) {
  size_t n = strlen(text);
  while (n > 0 && text[n - 1] == ' ') n--;
  while (n > 0 && *text == ' ') {
    text++;
    n--;
  }
  if (lm_strneq_nocase(text, n, "none") || lm_strneq_nocase(text, n, "off")) {
    *out_ms = -1;
    return true;
  }
  lm_interval_text it;
  if (!lm_interval_parse_text(text, n, &it)) return false;
  double ms; /* a bare quantity is milliseconds */
  if (it.is_int && (it.bare || !it.overflow)) {
    int64_t v = it.bare ? it.iv : it.ms;
    if (v < 0 || v > INT64_C(1000000000000000)) return false;
    *out_ms = v;
    return true;
  }
  ms = it.bare ? (it.is_int ? (double)it.iv : it.dv) : it.dms;
  if (!(ms >= 0) || ms > 1e15) return false; /* (NaN too) */
  *out_ms = (int64_t)(ms + 0.5);
  return true;
}
