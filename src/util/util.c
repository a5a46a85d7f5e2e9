/*
 * util.c -- error filling and allocation helpers shared by every module.
 */
#include "util/util.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void lm_error_clear(laminar_error* err) {
  if (err == NULL) return;
  err->code = LAMINAR_OK;
  err->line = 0;
  err->column = 0;
  err->object[0] = '\0';
  err->column_name[0] = '\0';
  err->message[0] = '\0';
}

laminar_code lm_error_set(laminar_error* err, laminar_code code, const char* fmt, ...) {
  if (err == NULL) return code;
  lm_error_clear(err);
  err->code = code;
  int n = snprintf(err->message, sizeof err->message, "LDB-%04d: ", (int)code);
  if (n < 0) n = 0;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(err->message + n, sizeof err->message - (size_t)n, fmt, ap);
  va_end(ap);
  return code;
}

void lm_error_at(laminar_error* err, int32_t line, int32_t column) {
  if (err == NULL) return;
  err->line = line;
  err->column = column;
}

static void copy_name(char* dst, size_t cap, const char* src) {
  if (src == NULL) return;
  size_t n = strlen(src);
  if (n >= cap) n = cap - 1;
  memcpy(dst, src, n);
  dst[n] = '\0';
}

void lm_error_object(laminar_error* err, const char* object, const char* column_name) {
  if (err == NULL) return;
  copy_name(err->object, sizeof err->object, object);
  copy_name(err->column_name, sizeof err->column_name, column_name);
}

#ifdef LAMINAR_FAULT_INJECTION
/* Test builds only (RELIABILITY: fail the N-th allocation or I/O step, once
 * or from then on). One countdown of each kind for the process, counted by
 * the threads that joined: the test's thread (by setting one) and sink
 * threads (lm_fault_join: a sink's work runs there, sink/queue.c). The
 * reactor and background threads are untouched. */
static _Thread_local bool fault_joined;

void lm_fault_join(void) { fault_joined = true; }

/* Allocations. */
static atomic_int_fast64_t fault_countdown;
static atomic_bool fault_persistent;
static atomic_int_fast64_t fault_failures;

void lm_fault_alloc_set(int64_t nth, bool persistent) {
  atomic_store(&fault_countdown, 0); /* off while the rest is set */
  atomic_store(&fault_persistent, persistent);
  atomic_store(&fault_failures, 0);
  atomic_store(&fault_countdown, nth > 0 ? nth : 0);
  fault_joined = true;
}

int64_t lm_fault_alloc_failures(void) { return atomic_load(&fault_failures); }

int64_t lm_fault_alloc_remaining(void) { return atomic_load(&fault_countdown); }

/* The window operator's slice (0: its own). */
static atomic_int_fast64_t fault_slice_pairs;

void lm_fault_slice_pairs_set(int64_t pairs) {
  atomic_store(&fault_slice_pairs, pairs > 0 ? pairs : 0);
}

int64_t lm_fault_slice_pairs(int64_t normal) {
  int64_t pairs = atomic_load(&fault_slice_pairs);
  return pairs > 0 ? pairs : normal;
}

/* Whether this allocation fails: the countdown reached it (and stays at 1,
 * failing every later one, when persistent). */
static bool fault_now(void) {
  if (!fault_joined) return false;
  int_fast64_t c = atomic_load(&fault_countdown);
  while (c > 0) {
    int_fast64_t next = c > 1 ? c - 1 : atomic_load(&fault_persistent) ? 1 : 0;
    if (c == 1 && next == 1) break; /* persistent: every one fails from now */
    if (atomic_compare_exchange_weak(&fault_countdown, &c, next)) break;
  }
  if (c != 1) return false;
  atomic_fetch_add(&fault_failures, 1);
  return true;
}

/* I/O. */
static atomic_int_fast64_t io_countdown;
static atomic_int io_error;

void lm_fault_io_set(int64_t nth, int error) {
  atomic_store(&io_error, error);
  atomic_store(&io_countdown, nth > 0 ? nth : 0);
  fault_joined = true;
}

int64_t lm_fault_io_remaining(void) { return atomic_load(&io_countdown); }

int lm_fault_io(void) {
  if (!fault_joined) return 0;
  int_fast64_t c = atomic_load(&io_countdown);
  while (c > 0) {
    if (atomic_compare_exchange_weak(&io_countdown, &c, c - 1))
      return c == 1 ? atomic_load(&io_error) : 0;
  }
  return 0;
}

#define FAULT_NULL()              \
  do {                            \
    if (fault_now()) return NULL; \
  } while (0)
#else
#define FAULT_NULL() ((void)0)
#endif

void* lm_malloc(size_t n) {
  FAULT_NULL();
  return malloc(n ? n : 1);
}
void* lm_calloc(size_t count, size_t size) {
  FAULT_NULL();
  return calloc(count ? count : 1, size ? size : 1);
}
void* lm_realloc(void* p, size_t n) {
  FAULT_NULL();
  return realloc(p, n ? n : 1);
}

void* lm_alloc_aligned(size_t n) {
  FAULT_NULL();
  size_t rounded = (n + LM_CACHELINE - 1) & ~(size_t)(LM_CACHELINE - 1);
  if (rounded == 0) rounded = LM_CACHELINE;
  void* p = aligned_alloc(LM_CACHELINE, rounded);
  if (p != NULL) memset(p, 0, rounded);
  return p;
}

void* lm_malloc_aligned(size_t align, size_t n) {
  FAULT_NULL();
  size_t rounded = (n + align - 1) & ~(align - 1);
  return aligned_alloc(align, rounded ? rounded : align);
}

char* lm_strdup(const char* s) {
  FAULT_NULL();
  size_t n = strlen(s) + 1;
  char* out = malloc(n);
  if (out != NULL) memcpy(out, s, n);
  return out;
}

void lm_free(void* p) { free(p); }

bool lm_streq_nocase(const char* a, const char* b) {
  for (;; a++, b++) {
    int ca = tolower((unsigned char)*a), cb = tolower((unsigned char)*b);
    if (ca != cb) return false;
    if (ca == 0) return true;
  }
}

bool lm_strneq_nocase(const char* a, size_t alen, const char* b) {
  for (size_t i = 0; i < alen; i++) {
    if (b[i] == '\0') return false;
    if (tolower((unsigned char)a[i]) != tolower((unsigned char)b[i])) return false;
  }
  return b[alen] == '\0';
}

bool lm_parse_bytes(const char* text, int64_t* out) {
  const char* p = text;
  while (*p == ' ') p++;
  if (*p < '0' || *p > '9') return false;
  int64_t v = 0;
  for (; *p >= '0' && *p <= '9'; p++) {
    if (__builtin_mul_overflow(v, 10, &v) || __builtin_add_overflow(v, *p - '0', &v)) {
      return false;
    }
  }
  while (*p == ' ') p++;
  static const struct {
    const char* unit;
    int shift;
  } units[] = {
      {"", 0},     {"b", 0},  {"kb", 10}, {"kib", 10}, {"k", 10}, {"mb", 20},
      {"mib", 20}, {"m", 20}, {"gb", 30}, {"gib", 30}, {"g", 30},
  };
  size_t len = strlen(p);
  while (len > 0 && p[len - 1] == ' ') len--;
  for (size_t i = 0; i < sizeof units / sizeof units[0]; i++) {
    if (strlen(units[i].unit) != len || !lm_strneq_nocase(p, len, units[i].unit))
      continue;
    if (v > (INT64_MAX >> units[i].shift)) return false;
    *out = v << units[i].shift;
    return true;
  }
  return false;
}

/* RFC 3629: no overlongs, no surrogates, at most U+10FFFF. ASCII runs are
 * skipped eight bytes at a time. */
bool lm_utf8_valid(const uint8_t* s, int64_t n) {
  int64_t i = 0;
  while (i < n) {
    if (n - i >= 8) {
      uint64_t word;
      memcpy(&word, s + i, 8);
      if ((word & 0x8080808080808080ULL) == 0) {
        i += 8;
        continue;
      }
    }
    uint8_t c = s[i];
    if (c < 0x80) {
      i++;
      continue;
    }
    int64_t need;
    uint8_t lo = 0x80, hi = 0xBF;  // allowed range of the second byte
    if (c >= 0xC2 && c <= 0xDF) {
      need = 1;
    } else if (c >= 0xE0 && c <= 0xEF) {
      need = 2;
      if (c == 0xE0) lo = 0xA0;  // overlong
      if (c == 0xED) hi = 0x9F;  // surrogates
    } else if (c >= 0xF0 && c <= 0xF4) {
      need = 3;
      if (c == 0xF0) lo = 0x90;  // overlong
      if (c == 0xF4) hi = 0x8F;  // > U+10FFFF
    } else {
      return false;
    }
    if (n - i <= need) return false;
    if (s[i + 1] < lo || s[i + 1] > hi) return false;
    for (int64_t k = 2; k <= need; k++) {
      if ((s[i + k] & 0xC0) != 0x80) return false;
    }
    i += need + 1;
  }
  return true;
}
