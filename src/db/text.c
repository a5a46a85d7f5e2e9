/*
 * text.c -- the growable text buffer of text.h.
 */
#include "db/text.h"

#include "util/util.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* Room for n more bytes and the NUL. */
static bool reserve(lm_text* t, size_t n) {
  if (t->nomem) return false;
  if (t->len + n + 1 <= t->cap) return true;
  size_t cap = t->cap ? t->cap : 128;
  while (cap < t->len + n + 1) cap *= 2;
  char* grown = lm_realloc(t->p, cap);
  if (grown == NULL) {
    t->nomem = true;
    return false;
  }
  t->p = grown;
  t->cap = cap;
  return true;
}

void lm_text_put(lm_text* t, const char* p, size_t n) {
  if (!reserve(t, n)) return;
  if (n > 0) memcpy(t->p + t->len, p, n);
  t->len += n;
  t->p[t->len] = '\0';
}

void lm_text_printf(lm_text* t, const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(NULL, 0, fmt, ap);
  va_end(ap);
  if (n < 0 || !reserve(t, (size_t)n)) return;
  va_start(ap, fmt);
  vsnprintf(t->p + t->len, t->cap - t->len, fmt, ap);
  va_end(ap);
  t->len += (size_t)n;
}

char* lm_text_take(lm_text* t) {
  if (t->p == NULL) lm_text_put(t, "", 0);
  char* p = t->nomem ? NULL : t->p;
  if (p == NULL) lm_free(t->p);
  memset(t, 0, sizeof *t);
  return p;
}
