/*
 * lexer.h -- tokens of LaminarDB SQL, produced one at a time on demand by the
 * parser (parser.c). Private to src/sql.
 *
 * The lexer allocates nothing: a token points into the source text, and the
 * parser decodes identifier and string tokens (lm_token_decode) only when it
 * keeps them. Keywords are not a token kind of their own: they are IDENT
 * tokens the parser compares case-insensitively, so `select`, `SELECT` and
 * `Select` are the same word while "select" (quoted) is a plain name.
 *
 * Positions: offsets are bytes; line and column are 1-based, the column counts
 * UTF-8 characters (continuation bytes do not advance it), a tab is one column.
 */
#ifndef LM_SQL_LEXER_H
#define LM_SQL_LEXER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "laminar.h"

typedef enum lm_tok_kind {
  LM_TOK_EOF,
  LM_TOK_IDENT,    /* [A-Za-z_][A-Za-z0-9_]*, also every keyword */
  LM_TOK_QIDENT,   /* "quoted identifier" ("" escapes a quote) */
  LM_TOK_STRING,   /* 'string literal' ('' escapes a quote) */
  LM_TOK_INTEGER,  /* digits only; value in uval (at most 2^63, see int_is_min) */
  LM_TOK_DECIMAL,  /* digits with '.' and/or exponent; value in dval */
  LM_TOK_VARIABLE, /* ${name}; the name is text[2 .. len-1) */
  LM_TOK_PLUS,
  LM_TOK_MINUS,
  LM_TOK_STAR,
  LM_TOK_SLASH,
  LM_TOK_PERCENT,
  LM_TOK_EQ,
  LM_TOK_NE, /* <> or != */
  LM_TOK_LT,
  LM_TOK_LE,
  LM_TOK_GT,
  LM_TOK_GE,
  LM_TOK_CONCAT, /* || */
  LM_TOK_ARROW,  /* -> (json_extract) */
  LM_TOK_ARROW2, /* ->> (json_extract_string) */
  LM_TOK_LPAREN,
  LM_TOK_RPAREN,
  LM_TOK_COMMA,
  LM_TOK_DOT,
  LM_TOK_SEMICOLON
} lm_tok_kind;

typedef struct lm_token {
  lm_tok_kind kind;
  const char* text; /* points into the source; `len` bytes, quotes included */
  size_t offset;    /* of text in the source */
  size_t len;
  int32_t line, column;
  uint64_t uval;   /* INTEGER */
  bool int_is_min; /* INTEGER equal to 2^63: only valid negated (INT64_MIN) */
  double dval;     /* DECIMAL */
} lm_token;

typedef struct lm_lexer {
  const char* src;
  size_t len;
  size_t pos;
  int32_t line, column; /* of src[pos] */
} lm_lexer;

/* Start lexing src[0..len). The lexer borrows src for its lifetime. */
void lm_lexer_init(lm_lexer* lx, const char* src, size_t len);

/* Skip blanks and comments and read the next token into *out (LM_TOK_EOF at the
 * end, repeatedly). Returns LAMINAR_OK or LAMINAR_ERR_SQL_SYNTAX with err
 * positioned at the offending token: an unterminated string, quoted identifier
 * or block comment (at its opening), a character that starts no token, an
 * integer above 2^63, a malformed or infinite number, a bad ${...}. */
laminar_code lm_lexer_next(lm_lexer* lx, lm_token* out, laminar_error* err);

/* Decoded text of an IDENT (folded to lower case), QIDENT or STRING (quotes
 * removed, doubled quotes collapsed) or VARIABLE (the name between the braces)
 * token into dst, which must hold tok->len + 1 bytes. Returns the decoded length;
 * dst is NUL-terminated. */
size_t lm_token_decode(const lm_token* tok, char* dst);

/* Fill err with `code` and "<label> at line L, column C: <detail>", and
 * position it at line:column. Returns `code`. */
laminar_code lm_sql_error(laminar_error* err, laminar_code code, int32_t line,
                          int32_t column, const char* fmt, ...)
    __attribute__((format(printf, 5, 6)));

#endif /* LM_SQL_LEXER_H */
