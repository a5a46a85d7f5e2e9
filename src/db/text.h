/*
 * text.h -- a growable NUL-terminated text buffer for the control plane
 * (EXPLAIN rows, ${VAR} substitution). An allocation failure sets `nomem`
 * and makes every later append a no-op, so callers check once at the end.
 */
#ifndef LM_DB_TEXT_H
#define LM_DB_TEXT_H

#include <stdbool.h>
#include <stddef.h>

typedef struct lm_text {
  char* p; /* NULL until the first append */
  size_t len, cap;
  bool nomem;
} lm_text;

void lm_text_put(lm_text* t, const char* p, size_t n);
void lm_text_printf(lm_text* t, const char* fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* The text (the caller frees it with lm_free; "" when nothing was appended),
 * or NULL after an allocation failure. The buffer is empty afterwards. */
char* lm_text_take(lm_text* t);

#endif /* LM_DB_TEXT_H */
