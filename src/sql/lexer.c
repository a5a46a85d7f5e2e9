/*
 * lexer.c -- turns SQL text into tokens, one per call, for the parser.
 *
 * Recognised: blanks; `-- line` and `/ * block * /` comments (not nested; an
 * unterminated block comment is an error at its opening); identifiers;
 * "quoted identifiers" and 'strings' (a doubled quote escapes one; they may
 * span lines; unterminated is an error at the opening quote); integers (up to
 * 2^63, the magnitude of INT64_MIN) and decimals with optional exponent;
 * ${VAR} substitution variables; the operators + - * / % = <> != < <= > >= ||
 * and the punctuation ( ) , . ;
 */
#include "sql/lexer.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/util.h"

/* ---- errors ----------------------------------------------------------------------- */

static const char* code_label(laminar_code code) {
  switch (code) {
    case LAMINAR_ERR_SQL_SYNTAX: return "syntax error";
    case LAMINAR_ERR_SQL_UNSUPPORTED: return "unsupported";
    case LAMINAR_ERR_SQL_LIMIT: return "limit exceeded";
    case LAMINAR_ERR_UNKNOWN_TYPE: return "unknown type";
    default: return "error";
  }
}

laminar_code lm_sql_error(laminar_error* err, laminar_code code, int32_t line,
                          int32_t column, const char* fmt, ...) {
  char detail[768];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(detail, sizeof detail, fmt, ap);
  va_end(ap);
  lm_error_set(err, code, "%s at line %d, column %d: %s", code_label(code), (int)line,
               (int)column, detail);
  lm_error_at(err, line, column);
  return code;
}

/* ---- character classes (ASCII only, locale independent) ------------------------- */

static bool is_digit(char c) { return c >= '0' && c <= '9'; }
static bool is_ident_start(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}
static bool is_ident_char(char c) { return is_ident_start(c) || is_digit(c); }
static bool is_blank(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}

/* ---- cursor ----------------------------------------------------------------------- */

void lm_lexer_init(lm_lexer* lx, const char* src, size_t len) {
  lx->src = src;
  lx->len = len;
  lx->pos = 0;
  lx->line = 1;
  lx->column = 1;
}

static char peek_at(const lm_lexer* lx, size_t ahead) {
  return lx->pos + ahead < lx->len ? lx->src[lx->pos + ahead] : '\0';
}

/* Consume one byte, keeping line and column (in characters) up to date. */
static void bump(lm_lexer* lx) {
  unsigned char c = (unsigned char)lx->src[lx->pos++];
  if (c == '\n') {
    lx->line++;
    lx->column = 1;
  } else if ((c & 0xC0) != 0x80 && lx->column < INT32_MAX) {
    lx->column++;
  }
}

/* Skip blanks and comments. Fails only on an unterminated block comment. */
static laminar_code skip_blanks(lm_lexer* lx, laminar_error* err) {
  for (;;) {
    char c = peek_at(lx, 0);
    if (is_blank(c)) {
      bump(lx);
    } else if (c == '-' && peek_at(lx, 1) == '-') {
      while (lx->pos < lx->len && lx->src[lx->pos] != '\n') bump(lx);
    } else if (c == '/' && peek_at(lx, 1) == '*') {
      int32_t line = lx->line, column = lx->column;
      bump(lx);
      bump(lx);
      for (;;) {
        if (lx->pos >= lx->len) {
          return lm_sql_error(err, LAMINAR_ERR_SQL_SYNTAX, line, column,
                              "unterminated comment: '/*' without '*/'");
        }
        if (lx->src[lx->pos] == '*' && peek_at(lx, 1) == '/') {
          bump(lx);
          bump(lx);
          break;
        }
        bump(lx);
      }
    } else {
      return LAMINAR_OK;
    }
  }
}

/* ---- token readers ---------------------------------------------------------------- */

/* A quoted token: lx->pos is at the opening quote `q`. */
static laminar_code read_quoted(lm_lexer* lx, lm_token* tok, char q, laminar_error* err) {
  bump(lx);
  for (;;) {
    if (lx->pos >= lx->len) {
      return lm_sql_error(
          err, LAMINAR_ERR_SQL_SYNTAX, tok->line, tok->column,
          q == '\'' ? "unterminated string literal" : "unterminated quoted identifier");
    }
    if (lx->src[lx->pos] == q) {
      bump(lx);
      if (peek_at(lx, 0) != q) break;  // a doubled quote stands for one
    }
    bump(lx);
  }
  tok->kind = q == '\'' ? LM_TOK_STRING : LM_TOK_QIDENT;
  return LAMINAR_OK;
}

/* A number: lx->pos is at a digit, or at '.' followed by a digit. */
static laminar_code read_number(lm_lexer* lx, lm_token* tok, laminar_error* err) {
  bool decimal = false;
  while (is_digit(peek_at(lx, 0))) bump(lx);
  if (peek_at(lx, 0) == '.') {
    decimal = true;
    bump(lx);
    while (is_digit(peek_at(lx, 0))) bump(lx);
  }
  char e = peek_at(lx, 0);
  if (e == 'e' || e == 'E') {
    size_t sign = (peek_at(lx, 1) == '+' || peek_at(lx, 1) == '-') ? 1 : 0;
    if (is_digit(peek_at(lx, 1 + sign))) {
      decimal = true;
      bump(lx);
      if (sign) bump(lx);
      while (is_digit(peek_at(lx, 0))) bump(lx);
    }
  }
  size_t len = lx->pos - tok->offset;
  if (is_ident_char(peek_at(lx, 0)) || peek_at(lx, 0) == '.') {
    return lm_sql_error(err, LAMINAR_ERR_SQL_SYNTAX, tok->line, tok->column,
                        "malformed number '%.*s%c'", (int)(len > 64 ? 64 : len),
                        tok->text, peek_at(lx, 0));
  }
  if (!decimal) {
    const uint64_t limit = (uint64_t)1 << 63;
    uint64_t v = 0;
    for (size_t i = 0; i < len; i++) {
      uint64_t d = (uint64_t)(tok->text[i] - '0');
      if (v > (limit - d) / 10) {
        return lm_sql_error(err, LAMINAR_ERR_SQL_SYNTAX, tok->line, tok->column,
                            "integer '%.*s%s' is out of range for BIGINT",
                            (int)(len > 40 ? 40 : len), tok->text, len > 40 ? "..." : "");
      }
      v = v * 10 + d;
    }
    tok->kind = LM_TOK_INTEGER;
    tok->uval = v;
    tok->int_is_min = v == limit;
    return LAMINAR_OK;
  }
  /* strtod needs a terminated copy of exactly this token (it would read on into
   * "0x..." hex or past the end); numbers longer than the buffer are rare
   * enough to pay for a heap copy. */
  char small[128];
  char* buf = small;
  if (len >= sizeof small) {
    buf = lm_malloc(len + 1);
    if (buf == NULL) return lm_error_set(err, LAMINAR_ERR_NOMEM, "out of memory");
  }
  memcpy(buf, tok->text, len);
  buf[len] = '\0';
  double d = strtod(buf, NULL);
  if (buf != small) lm_free(buf);
  if (!isfinite(d)) {
    return lm_sql_error(err, LAMINAR_ERR_SQL_SYNTAX, tok->line, tok->column,
                        "number '%.*s%s' is out of range for DOUBLE",
                        (int)(len > 40 ? 40 : len), tok->text, len > 40 ? "..." : "");
  }
  tok->kind = LM_TOK_DECIMAL;
  tok->dval = d;
  return LAMINAR_OK;
}

/* ${name}: lx->pos is at '$'. */
static laminar_code read_variable(lm_lexer* lx, lm_token* tok, laminar_error* err) {
  if (peek_at(lx, 1) != '{' || !is_ident_start(peek_at(lx, 2))) {
    return lm_sql_error(err, LAMINAR_ERR_SQL_SYNTAX, tok->line, tok->column,
                        "expected '${NAME}' after '$'");
  }
  bump(lx);
  bump(lx);
  while (is_ident_char(peek_at(lx, 0)) || peek_at(lx, 0) == '.') bump(lx);
  if (peek_at(lx, 0) != '}') {
    return lm_sql_error(err, LAMINAR_ERR_SQL_SYNTAX, tok->line, tok->column,
                        "unterminated variable: expected '}' to close '${'");
  }
  bump(lx);
  tok->kind = LM_TOK_VARIABLE;
  return LAMINAR_OK;
}

laminar_code lm_lexer_next(lm_lexer* lx, lm_token* tok, laminar_error* err) {
  memset(tok, 0, sizeof *tok);
  LM_TRY(skip_blanks(lx, err));
  tok->offset = lx->pos;
  tok->text = lx->src + lx->pos;
  tok->line = lx->line;
  tok->column = lx->column;
  laminar_code rc = LAMINAR_OK;
  char c = peek_at(lx, 0), n = peek_at(lx, 1);
  if (lx->pos >= lx->len) {
    tok->kind = LM_TOK_EOF;
  } else if (is_ident_start(c)) {
    while (is_ident_char(peek_at(lx, 0))) bump(lx);
    tok->kind = LM_TOK_IDENT;
  } else if (is_digit(c) || (c == '.' && is_digit(n))) {
    rc = read_number(lx, tok, err);
  } else if (c == '\'' || c == '"') {
    rc = read_quoted(lx, tok, c, err);
  } else if (c == '$') {
    rc = read_variable(lx, tok, err);
  } else {
    /* Operators and punctuation: two-character forms first. */
    lm_tok_kind kind;
    size_t width = 2;
    if (c == '<' && n == '>')
      kind = LM_TOK_NE;
    else if (c == '!' && n == '=')
      kind = LM_TOK_NE;
    else if (c == '<' && n == '=')
      kind = LM_TOK_LE;
    else if (c == '>' && n == '=')
      kind = LM_TOK_GE;
    else if (c == '|' && n == '|')
      kind = LM_TOK_CONCAT;
    else if (c == '-' && n == '>') {
      kind = LM_TOK_ARROW;
      if (peek_at(lx, 2) == '>') {
        kind = LM_TOK_ARROW2;
        width = 3;
      }
    } else {
      width = 1;
      switch (c) {
        case '+': kind = LM_TOK_PLUS; break;
        case '-': kind = LM_TOK_MINUS; break;
        case '*': kind = LM_TOK_STAR; break;
        case '/': kind = LM_TOK_SLASH; break;
        case '%': kind = LM_TOK_PERCENT; break;
        case '=': kind = LM_TOK_EQ; break;
        case '<': kind = LM_TOK_LT; break;
        case '>': kind = LM_TOK_GT; break;
        case '(': kind = LM_TOK_LPAREN; break;
        case ')': kind = LM_TOK_RPAREN; break;
        case ',': kind = LM_TOK_COMMA; break;
        case '.': kind = LM_TOK_DOT; break;
        case ';': kind = LM_TOK_SEMICOLON; break;
        default: {
          unsigned char u = (unsigned char)c;
          if (u >= 0x20 && u < 0x7F) {
            return lm_sql_error(err, LAMINAR_ERR_SQL_SYNTAX, tok->line, tok->column,
                                "unexpected character '%c'", c);
          }
          return lm_sql_error(err, LAMINAR_ERR_SQL_SYNTAX, tok->line, tok->column,
                              "unexpected character (byte 0x%02X) outside a string or "
                              "quoted identifier",
                              (unsigned)u);
        }
      }
    }
    tok->kind = kind;
    for (size_t i = 0; i < width; i++) bump(lx);
  }
  tok->len = lx->pos - tok->offset;
  return rc;
}

/* ---- decoding --------------------------------------------------------------------- */

size_t lm_token_decode(const lm_token* tok, char* dst) {
  size_t n = 0;
  switch (tok->kind) {
    case LM_TOK_IDENT:
      for (size_t i = 0; i < tok->len; i++) {
        char c = tok->text[i];
        dst[n++] = (c >= 'A' && c <= 'Z') ? (char)(c - 'A' + 'a') : c;
      }
      break;
    case LM_TOK_QIDENT:
    case LM_TOK_STRING: {
      char q = tok->text[0];
      for (size_t i = 1; i + 1 < tok->len; i++) {
        dst[n++] = tok->text[i];
        if (tok->text[i] == q) i++;  // skip the second of a doubled quote
      }
      break;
    }
    case LM_TOK_VARIABLE:
      for (size_t i = 2; i + 1 < tok->len; i++) dst[n++] = tok->text[i];
      break;
    default:
      memcpy(dst, tok->text, tok->len);
      n = tok->len;
      break;
  }
  dst[n] = '\0';
  return n;
}
