/*
 * vars.c -- `${NAME}` substitution variables (vars.h): the variable set, the
 * textual substitution run before parsing, and the mapping of error positions
 * back to the text the caller wrote.
 */
#include "db/vars.h"

#include "db/internal.h"
#include "db/text.h"
#include "util/util.h"

#include <stdio.h>
#include <string.h>

/* ==== the variable set ============================================================= */

static bool name_start(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}

static bool name_char(char c) {
  return name_start(c) || (c >= '0' && c <= '9') || c == '.';
}

static int32_t find(const lm_vars* vars, const char* name, size_t len) {
  for (int32_t i = 0; i < vars->n; i++) {
    if (strlen(vars->names[i]) == len && memcmp(vars->names[i], name, len) == 0) return i;
  }
  return -1;
}

laminar_code lm_vars_set(lm_vars* vars, const char* name, const char* value,
                         laminar_error* err) {
  size_t len = strlen(name);
  bool ok = len > 0 && name_start(name[0]);
  for (size_t i = 1; ok && i < len; i++) ok = name_char(name[i]);
  if (!ok) {
    return lm_error_set(err, LAMINAR_ERR_CONFIG_KEY,
                        "config key 'var.%s': a variable name is a letter or '_', then "
                        "letters, digits, '_' or '.'",
                        name);
  }
  char* copy = lm_strdup(value);
  if (copy == NULL) return lm_error_set(err, LAMINAR_ERR_NOMEM, "out of memory");
  int32_t at = find(vars, name, len);
  if (at >= 0) {
    lm_free(vars->values[at]);
    vars->values[at] = copy;
    return LAMINAR_OK;
  }
  char* name_copy = lm_strdup(name);
  char** names = lm_realloc(vars->names, sizeof(char*) * (size_t)(vars->n + 1));
  if (names != NULL) vars->names = names;
  char** values = lm_realloc(vars->values, sizeof(char*) * (size_t)(vars->n + 1));
  if (values != NULL) vars->values = values;
  if (name_copy == NULL || names == NULL || values == NULL) {
    lm_free(name_copy);
    lm_free(copy);
    return lm_error_set(err, LAMINAR_ERR_NOMEM, "out of memory");
  }
  vars->names[vars->n] = name_copy;
  vars->values[vars->n] = copy;
  vars->n++;
  return LAMINAR_OK;
}

laminar_code lm_vars_copy(const lm_vars* src, lm_vars* dst) {
  memset(dst, 0, sizeof *dst);
  for (int32_t i = 0; i < src->n; i++) {
    if (lm_vars_set(dst, src->names[i], src->values[i], NULL) != LAMINAR_OK) {
      lm_vars_free(dst);
      return LAMINAR_ERR_NOMEM;
    }
  }
  return LAMINAR_OK;
}

void lm_vars_free(lm_vars* vars) {
  for (int32_t i = 0; i < vars->n; i++) {
    lm_free(vars->names[i]);
    lm_free(vars->values[i]);
  }
  lm_free(vars->names);
  lm_free(vars->values);
  memset(vars, 0, sizeof *vars);
}

/* ==== substitution ================================================================= */

static bool add_span(lm_subst* s, size_t* cap, lm_subst_span span) {
  if (s->nspans == *cap) {
    size_t ncap = *cap ? *cap * 2 : 8;
    lm_subst_span* grown = lm_realloc(s->spans, sizeof *grown * ncap);
    if (grown == NULL) return false;
    s->spans = grown;
    *cap = ncap;
  }
  s->spans[s->nspans++] = span;
  return true;
}

/* 1-based line and column (in UTF-8 characters) of byte `off` of `text`. */
static void position_of(const char* text, size_t off, int32_t* line, int32_t* column) {
  int32_t l = 1, c = 1;
  for (size_t i = 0; i < off && text[i] != '\0'; i++) {
    unsigned char ch = (unsigned char)text[i];
    if (ch == '\n') {
      l++;
      c = 1;
    } else if ((ch & 0xC0) != 0x80) {
      c++;
    }
  }
  *line = l;
  *column = c;
}

/* Byte offset of 1-based (line, column) in `text` (its end when past it). */
static size_t offset_of(const char* text, int32_t line, int32_t column) {
  int32_t l = 1, c = 1;
  size_t i = 0;
  for (; text[i] != '\0'; i++) {
    if (l == line && c == column) return i;
    unsigned char ch = (unsigned char)text[i];
    if (ch == '\n') {
      if (l == line) return i; /* the column is past the end of the line */
      l++;
      c = 1;
    } else if ((ch & 0xC0) != 0x80) {
      c++;
    }
  }
  return i;
}

/* Where the lexer would be: inside a comment nothing is substituted. */
typedef enum scan_state {
  S_TEXT,
  S_SQUOTE,
  S_DQUOTE,
  S_LINE_COMMENT,
  S_BLOCK_COMMENT
} scan_state;

laminar_code lm_vars_substitute(const lm_vars* vars, const char* sql, lm_subst* out,
                                laminar_error* err) {
  memset(out, 0, sizeof *out);
  if (strchr(sql, '$') == NULL) return LAMINAR_OK;
  lm_text b = {0};
  size_t span_cap = 0;
  scan_state st = S_TEXT;
  size_t i = 0, copied = 0; /* sql[copied, i) is pending verbatim output */
  laminar_code rc = LAMINAR_OK;
  while (sql[i] != '\0') {
    char c = sql[i], n = sql[i + 1];
    switch (st) {
      case S_LINE_COMMENT:
        if (c == '\n') st = S_TEXT;
        i++;
        continue;
      case S_BLOCK_COMMENT:
        if (c == '*' && n == '/') {
          st = S_TEXT;
          i += 2;
        } else {
          i++;
        }
        continue;
      case S_SQUOTE:
        if (c == '\'') st = S_TEXT; /* '' re-enters at once: the escape needs no case */
        break;
      case S_DQUOTE:
        if (c == '"') st = S_TEXT;
        break;
      case S_TEXT:
        if (c == '-' && n == '-') {
          st = S_LINE_COMMENT;
          i += 2;
          continue;
        }
        if (c == '/' && n == '*') {
          st = S_BLOCK_COMMENT;
          i += 2;
          continue;
        }
        if (c == '\'') st = S_SQUOTE;
        if (c == '"') st = S_DQUOTE;
        break;
    }
    if (c == '$' && n == '$' && sql[i + 2] == '{') { /* $${ -> ${ */
      lm_text_put(&b, sql + copied, i - copied);
      if (!b.nomem && !add_span(out, &span_cap, (lm_subst_span){b.len, 2, i, 3}))
        b.nomem = true;
      lm_text_put(&b, "${", 2);
      i += 3;
      copied = i;
      continue;
    }
    if (c == '$' && n == '{' && name_start(sql[i + 2])) {
      size_t end = i + 2;
      while (name_char(sql[end])) end++;
      if (sql[end] == '}') {
        int32_t at = find(vars, sql + i + 2, end - i - 2);
        if (at < 0) {
          int32_t line, column;
          position_of(sql, i, &line, &column);
          rc = lm_error_set(
              err, LAMINAR_ERR_SQL_UNDEFINED_VARIABLE,
              "undefined variable ${%.*s} at line %d, column %d (set it with "
              "the config key 'var.%.*s')",
              (int)(end - i - 2), sql + i + 2, (int)line, (int)column, (int)(end - i - 2),
              sql + i + 2);
          lm_error_at(err, line, column);
          break;
        }
        lm_text_put(&b, sql + copied, i - copied);
        size_t vlen = strlen(vars->values[at]);
        if (!b.nomem &&
            !add_span(out, &span_cap, (lm_subst_span){b.len, vlen, i, end + 1 - i})) {
          b.nomem = true;
        }
        lm_text_put(&b, vars->values[at], vlen);
        i = end + 1;
        copied = i;
        continue;
      }
    }
    i++;
  }
  if (rc == LAMINAR_OK) {
    lm_text_put(&b, sql + copied, i - copied);
    if (b.nomem) rc = lm_error_set(err, LAMINAR_ERR_NOMEM, "out of memory");
  }
  char* text = lm_text_take(&b);
  if (rc != LAMINAR_OK || text == NULL) {
    lm_free(text);
    lm_subst_free(out);
    return rc;
  }
  out->text = text;
  return LAMINAR_OK;
}

void lm_subst_fix_error(const lm_subst* subst, const char* sql, laminar_error* err) {
  if (subst->text == NULL || err == NULL || err->line <= 0 || err->column <= 0) return;
  size_t off = offset_of(subst->text, err->line, err->column);
  size_t orig = off;
  for (size_t k = 0; k < subst->nspans; k++) {
    const lm_subst_span* s = &subst->spans[k];
    if (off < s->new_off) break;
    if (off < s->new_off + s->new_len) {
      orig = s->orig_off; /* inside a value: blame its ${ */
      break;
    }
    orig = s->orig_off + s->orig_len + (off - s->new_off - s->new_len);
  }
  int32_t line, column;
  position_of(sql, orig, &line, &column);
  char old_pos[64], new_pos[64];
  snprintf(old_pos, sizeof old_pos, "line %d, column %d", (int)err->line,
           (int)err->column);
  snprintf(new_pos, sizeof new_pos, "line %d, column %d", (int)line, (int)column);
  char* at = strstr(err->message, old_pos);
  if (at != NULL) {
    char rest[sizeof err->message];
    snprintf(rest, sizeof rest, "%s", at + strlen(old_pos));
    size_t head = (size_t)(at - err->message);
    snprintf(at, sizeof err->message - head, "%s%s", new_pos, rest);
  }
  err->line = line;
  err->column = column;
}

void lm_subst_free(lm_subst* subst) {
  lm_free(subst->text);
  lm_free(subst->spans);
  memset(subst, 0, sizeof *subst);
}

/* ==== the entry points' SQL path ================================================== */

laminar_code lm_db_execute_sql(laminar_db* db, const char* sql,
                               struct ArrowArrayStream* out_rows, laminar_error* err) {
  lm_subst subst;
  LM_TRY(lm_vars_substitute(&db->vars, sql, &subst, err));
  laminar_code rc =
      lm_db_execute_locked(db, subst.text != NULL ? subst.text : sql, out_rows, err);
  if (rc != LAMINAR_OK) lm_subst_fix_error(&subst, sql, err);
  lm_subst_free(&subst);
  return rc;
}
