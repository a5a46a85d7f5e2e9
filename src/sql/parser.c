/*
 * parser.c -- recursive-descent parser: SQL text -> statement ASTs (ast.h),
 * plus the arena that owns them.
 *
 * Grammar (keywords case-insensitive; see ast.h for the tree each form makes):
 *
 *   stmt    := CREATE [OR REPLACE] SOURCE [IF NOT EXISTS] name
 *                ( coldef_or_watermark [, ...] ) [WITH ( option [, ...] )]
 *            | CREATE [OR REPLACE] TABLE [IF NOT EXISTS] name
 *                ( coldef [PRIMARY KEY] | watermark | PRIMARY KEY ( col [, ...] )
 *                  [, ...] ) [WITH ( option [, ...] )]
 *            | CREATE [OR REPLACE] TABLE [IF NOT EXISTS] name
 *                [( coldef [PRIMARY KEY] | PRIMARY KEY ( col [, ...] ) [, ...] )]
 *                [PRIMARY KEY ( col [, ...] )] AS query [emit] [WITH ( option, ... )]
 *            | INSERT INTO name (VALUES ( e [, ...] ) [, ...] | query)
 *            | DELETE FROM name [WHERE e]
 *            | CREATE [OR REPLACE] (STREAM | [MATERIALIZED] VIEW) [IF NOT EXISTS] name
 *                AS query [emit]
 *            | CREATE [OR REPLACE] SINK [IF NOT EXISTS] name FROM name
 *                  [INTO FILE (option [, ...]) | WITH (...)]
 *            | DROP (SOURCE|STREAM|VIEW|MATERIALIZED VIEW|SINK|FUNCTION) [IF EXISTS]
 *                  name
 *            | SHOW (SOURCES|STREAMS|VIEWS|MATERIALIZED VIEWS|SINKS|FUNCTIONS)
 *            | (DESCRIBE | DESC) name  |  EXPLAIN (stmt | name)  |  query [emit]
 *   query   := [WITH name AS ( query ) [, ...]] select [UNION ALL select ...]
 *   coldef  := name type [NOT NULL | NULL]
 *   watermark := WATERMARK FOR col [AS col [- INTERVAL ...]]
 *   option  := (name[.name]* | 'key') = ('str' | [-]number | TRUE | FALSE | INTERVAL .. |
 * ${V}) select  := SELECT [DISTINCT|ALL] item [, ...] FROM (name | ( query )) [[AS] alias]
 *              [[INNER|LEFT|RIGHT|FULL [OUTER]] JOIN input
 *                 [FOR SYSTEM_TIME AS OF e] [[AS] alias] ON e
 *               |[LEFT [OUTER]] ASOF [LEFT [OUTER]] JOIN name [[AS] alias]
 *                 [MATCH_CONDITION ( e )] ON e
 *               |(, | CROSS JOIN) [LATERAL] f ( e, ... ) [[AS] alias [( col, ... )]]]
 *              [(, | CROSS JOIN) [LATERAL] f ( e, ... ) ... after a JOIN]
 *   input   := name | tumble ( name , e , e ) | hop ( name , e , e , e )
 *              [WHERE e]
 *              [GROUP BY e, ...] [HAVING e]
 *              [ORDER BY e [ASC|DESC] [NULLS FIRST|LAST], ...] [LIMIT n] [OFFSET m]
 *   emit    := EMIT (ON WINDOW CLOSE | FINAL | CHANGES)
 *
 * Expressions by precedence climbing, lowest first: OR; AND; prefix NOT;
 * comparisons, IS [NOT] NULL, [NOT] BETWEEN, [NOT] IN, [NOT] LIKE | ILIKE [ESCAPE e];
 * ||; + -;
 * * / %; unary - +; primaries. All binary operators are left-associative.
 *
 * Not parsed in this version (LAMINAR_ERR_SQL_UNSUPPORTED at the token): CROSS,
 * NATURAL and comma joins, a join after a derived table, subqueries outside FROM, UNION without ALL,
 * INSERT with a column list.
 *
 * Recursion: every recursive path goes through parse_binary(), parse_unary()
 * or parse_statement(), which count depth and stop at LM_SQL_MAX_DEPTH with
 * LAMINAR_ERR_SQL_LIMIT; left-deep operator chains are built by loops, and
 * their tree height is checked as nodes are made (finish()), so no consumer
 * of the AST recurses deeper than LM_SQL_MAX_DEPTH either.
 */
#include <stdalign.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sql/lexer.h"
#include "sql/sql.h"
#include "util/pool.h"
#include "util/types.h"
#include "util/util.h"

/* ==== arena ========================================================================= */

/* The parse arena is the core's bump allocator (util/pool.h) handing out
 * zeroed memory; everything dies with lm_arena_destroy(). */
struct lm_arena {
  lm_pool pool;
};

#define ARENA_MIN_BLOCK ((size_t)8 * 1024)

laminar_code lm_arena_create(lm_arena** out) {
  *out = NULL;
  lm_arena* a = lm_calloc(1, sizeof *a);
  if (a == NULL) return LAMINAR_ERR_NOMEM;
  lm_pool_init_sized(&a->pool, ARENA_MIN_BLOCK);
  *out = a;
  return LAMINAR_OK;
}

void lm_arena_destroy(lm_arena* arena) {
  if (arena == NULL) return;
  lm_pool_free(&arena->pool);
  lm_free(arena);
}

void* lm_arena_alloc(lm_arena* arena, size_t n) {
  return lm_pool_calloc(&arena->pool, n);
}

char* lm_arena_strndup(lm_arena* arena, const char* s, size_t n) {
  if (n == SIZE_MAX) return NULL;
  char* out = lm_arena_alloc(arena, n + 1);
  if (out == NULL) return NULL;
  if (n > 0) memcpy(out, s, n);
  out[n] = '\0';
  return out;
}

/* ==== parser state and helpers ====================================================== */

typedef struct parser_cte {
  const char* name;
  struct lm_ast_select* select;
} parser_cte;

typedef struct parser {
  lm_arena* arena;
  laminar_error* err;
  lm_lexer lex;
  lm_token cur;      /* the lookahead token */
  size_t last_end;   /* byte offset just past the last consumed token */
  int32_t depth;     /* current recursion depth (enter/leave) */
  bool in_stmt;      /* the statement length limit applies */
  size_t stmt_start; /* offset of the statement being parsed */
  int32_t stmt_line, stmt_column;
  /* WITH name AS (query): the CTEs in scope, innermost last (a FROM name
   * matching one becomes a derived table). */
  struct parser_cte* ctes;
  size_t ncte, cte_cap;
} parser;

/* Error paths are kept out of line (noinline, cold) so their message buffers
 * do not swell the frames of the recursive functions that call them: the
 * stack used per nesting level decides how deep LM_SQL_MAX_DEPTH can be. */
#define COLD __attribute__((noinline, cold))
/* Rarely-taken branches of parse_primary() kept out of its frame likewise. */
#define NOINLINE __attribute__((noinline))

static COLD laminar_code nomem(parser* p) {
  return lm_error_set(p->err, LAMINAR_ERR_NOMEM, "out of memory while parsing SQL");
}

/* "'text'" of a token for messages, cut at 40 bytes (on a UTF-8 boundary). */
static COLD void describe(const lm_token* t, char* buf, size_t cap) {
  if (t->kind == LM_TOK_EOF) {
    snprintf(buf, cap, "end of input");
    return;
  }
  size_t n = t->len;
  bool cut = false;
  if (n > 40) {
    n = 40;
    while (n > 0 && ((unsigned char)t->text[n] & 0xC0) == 0x80) n--;
    cut = true;
  }
  snprintf(buf, cap, "'%.*s%s'", (int)n, t->text, cut ? "..." : "");
}

/* Fail with `code` at line:column; the message is the formatted detail. */
static COLD laminar_code fail_at(parser* p, laminar_code code, int32_t line,
                                 int32_t column, const char* fmt, ...)
    __attribute__((format(printf, 5, 6)));
static laminar_code fail_at(parser* p, laminar_code code, int32_t line, int32_t column,
                            const char* fmt, ...) {
  char detail[640];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(detail, sizeof detail, fmt, ap);
  va_end(ap);
  return lm_sql_error(p->err, code, line, column, "%s", detail);
}

/* "expected <what> but found <current token>" at the current token. */
static COLD laminar_code expected(parser* p, const char* what) {
  char found[64];
  describe(&p->cur, found, sizeof found);
  return fail_at(p, LAMINAR_ERR_SQL_SYNTAX, p->cur.line, p->cur.column,
                 "expected %s but found %s", what, found);
}

/* Consume the current token and lex the next one. */
static laminar_code advance(parser* p) {
  p->last_end = p->cur.offset + p->cur.len;
  LM_TRY(lm_lexer_next(&p->lex, &p->cur, p->err));
  if (p->in_stmt && p->cur.kind != LM_TOK_EOF && p->cur.kind != LM_TOK_SEMICOLON &&
      p->cur.offset + p->cur.len - p->stmt_start > LM_SQL_MAX_STMT_BYTES) {
    return fail_at(p, LAMINAR_ERR_SQL_LIMIT, p->stmt_line, p->stmt_column,
                   "statement is longer than %zu bytes", LM_SQL_MAX_STMT_BYTES);
  }
  return LAMINAR_OK;
}

static laminar_code enter(parser* p) {
  if (++p->depth > LM_SQL_MAX_DEPTH) {
    return fail_at(p, LAMINAR_ERR_SQL_LIMIT, p->cur.line, p->cur.column,
                   "statement nested deeper than %d levels", LM_SQL_MAX_DEPTH);
  }
  return LAMINAR_OK;
}

static void leave(parser* p) { p->depth--; }

static bool is_kw(const lm_token* t, const char* kw) {
  return t->kind == LM_TOK_IDENT && lm_strneq_nocase(t->text, t->len, kw);
}

/* Words that cannot be an unquoted name (column, table, alias): they start or
 * continue clauses, so `SELECT a FROM t` can tell an alias from a clause. */
static const char* const reserved_words[] = {
    "all",    "and",      "as",    "asc",      "between",  "by",    "case",   "cast",
    "create", "cross",    "desc",  "describe", "distinct", "drop",  "else",   "emit",
    "end",    "explain",  "false", "from",     "full",     "group", "having", "in",
    "inner",  "interval", "is",    "join",     "like",     "limit", "not",    "null",
    "on",     "or",       "order", "outer",    "select",   "show",  "then",   "true",
    "union",  "when",     "where", "with",     NULL};

static bool is_reserved(const lm_token* t) {
  if (t->kind != LM_TOK_IDENT) return false;
  for (const char* const* w = reserved_words; *w != NULL; w++) {
    if (lm_strneq_nocase(t->text, t->len, *w)) return true;
  }
  return false;
}

static laminar_code accept(parser* p, lm_tok_kind kind, bool* out) {
  *out = p->cur.kind == kind;
  return *out ? advance(p) : LAMINAR_OK;
}

static laminar_code accept_kw(parser* p, const char* kw, bool* out) {
  *out = is_kw(&p->cur, kw);
  return *out ? advance(p) : LAMINAR_OK;
}

static const char* tok_name(lm_tok_kind kind) {
  switch (kind) {
    case LM_TOK_LPAREN: return "'('";
    case LM_TOK_RPAREN: return "')'";
    case LM_TOK_COMMA: return "','";
    case LM_TOK_EQ: return "'='";
    case LM_TOK_DOT: return "'.'";
    case LM_TOK_MINUS: return "'-'";
    case LM_TOK_INTEGER: return "an integer";
    case LM_TOK_STRING: return "a string literal";
    default: return "a token";
  }
}

static laminar_code expect(parser* p, lm_tok_kind kind) {
  if (p->cur.kind != kind) return expected(p, tok_name(kind));
  return advance(p);
}

/* kw is given upper case, as it is shown in the message. */
static laminar_code expect_kw(parser* p, const char* kw) {
  if (!is_kw(&p->cur, kw)) {
    char what[48];
    snprintf(what, sizeof what, "'%s'", kw);
    return expected(p, what);
  }
  return advance(p);
}

/* Decoded text of token t, as an arena string. */
static laminar_code tok_string(parser* p, const lm_token* t, const char** out,
                               size_t* out_len) {
  char* s = lm_arena_alloc(p->arena, t->len + 1);
  if (s == NULL) return nomem(p);
  size_t n = lm_token_decode(t, s);
  *out = s;
  if (out_len != NULL) *out_len = n;
  return LAMINAR_OK;
}

static bool is_name_token(const lm_token* t) {
  return t->kind == LM_TOK_QIDENT || (t->kind == LM_TOK_IDENT && !is_reserved(t));
}

/* A name: an unreserved identifier (folded) or a "quoted" one (verbatim).
 * `what` names it in the error ("a source name"). */
static NOINLINE laminar_code parse_name(parser* p, const char* what, const char** out,
                                        int32_t* line, int32_t* column) {
  const lm_token t = p->cur;
  if (!is_name_token(&t)) {
    if (is_reserved(&t)) {
      char found[64];
      describe(&t, found, sizeof found);
      return fail_at(
          p, LAMINAR_ERR_SQL_SYNTAX, t.line, t.column,
          "expected %s but found the keyword %s (quote it as \"...\" to use it "
          "as a name)",
          what, found);
    }
    return expected(p, what);
  }
  if (t.kind == LM_TOK_QIDENT && t.len == 2) {
    return fail_at(p, LAMINAR_ERR_SQL_SYNTAX, t.line, t.column,
                   "a quoted identifier cannot be empty");
  }
  LM_TRY(tok_string(p, &t, out, NULL));
  if (line != NULL) *line = t.line;
  if (column != NULL) *column = t.column;
  return advance(p);
}

/* Grow an arena array to hold one more element: *arr has n used of *cap
 * elements of size elem; on growth the old array is abandoned to the arena
 * (total waste stays below the final size). */
static laminar_code grow_array(parser* p, void* arr, size_t n, size_t* cap, size_t elem,
                               void** out) {
  *out = arr;
  if (n < *cap) return LAMINAR_OK;
  size_t ncap = *cap == 0 ? 4 : *cap * 2;
  if (ncap > SIZE_MAX / elem) return nomem(p);
  void* grown = lm_arena_alloc(p->arena, ncap * elem);
  if (grown == NULL) return nomem(p);
  if (n > 0) memcpy(grown, arr, n * elem);
  *cap = ncap;
  *out = grown;
  return LAMINAR_OK;
}

#define PUSH(p, arr, n, cap, value)                                      \
  do {                                                                   \
    void* grown_;                                                        \
    LM_TRY(grow_array((p), (arr), (n), &(cap), sizeof *(arr), &grown_)); \
    (arr) = grown_;                                                      \
    (arr)[(n)++] = (value);                                              \
  } while (0)

/* ==== types and literals ============================================================ */

const char* lm_sql_type_name(lm_sql_type type) {
  if (((uint32_t)type & 0xffu) == LM_SQL_TYPE_DECIMAL) {
    return lm_type_name(lm_type_decimal((int32_t)(((uint32_t)type >> 8) & 0xffu),
                                        (int32_t)(((uint32_t)type >> 16) & 0xffu)));
  }
  switch (type) {
    case LM_SQL_TYPE_STRING: return "VARCHAR";
    case LM_SQL_TYPE_INT64: return "BIGINT";
    case LM_SQL_TYPE_INT32: return "INT";
    case LM_SQL_TYPE_DOUBLE: return "DOUBLE";
    case LM_SQL_TYPE_BOOL: return "BOOLEAN";
    case LM_SQL_TYPE_TIMESTAMP: return "TIMESTAMP";
    case LM_SQL_TYPE_DATE: return "DATE";
    case LM_SQL_TYPE_INT16: return "SMALLINT";
    case LM_SQL_TYPE_INT8: return "TINYINT";
    case LM_SQL_TYPE_FLOAT: return "REAL";
    case LM_SQL_TYPE_BINARY: return "VARBINARY";
    case LM_SQL_TYPE_TIME: return "TIME";
    case LM_SQL_TYPE_DECIMAL: break;
  }
  return "UNKNOWN";
}

static const struct {
  const char* word;
  lm_sql_type type;
} type_words[] = {
    {"varchar", LM_SQL_TYPE_STRING},   {"text", LM_SQL_TYPE_STRING},
    {"json", LM_SQL_TYPE_STRING},      {"string", LM_SQL_TYPE_STRING},
    {"bigint", LM_SQL_TYPE_INT64},     {"int8", LM_SQL_TYPE_INT64},
    {"long", LM_SQL_TYPE_INT64},       {"int", LM_SQL_TYPE_INT32},
    {"integer", LM_SQL_TYPE_INT32},    {"int4", LM_SQL_TYPE_INT32},
    {"double", LM_SQL_TYPE_DOUBLE},    {"float8", LM_SQL_TYPE_DOUBLE},
    {"float", LM_SQL_TYPE_DOUBLE},     {"boolean", LM_SQL_TYPE_BOOL},
    {"bool", LM_SQL_TYPE_BOOL},        {"timestamp", LM_SQL_TYPE_TIMESTAMP},
    {"date", LM_SQL_TYPE_DATE},        {"smallint", LM_SQL_TYPE_INT16},
    {"int2", LM_SQL_TYPE_INT16},       {"short", LM_SQL_TYPE_INT16},
    {"tinyint", LM_SQL_TYPE_INT8},     {"int1", LM_SQL_TYPE_INT8},
    {"decimal", LM_SQL_TYPE_DECIMAL},  {"numeric", LM_SQL_TYPE_DECIMAL},
    {"real", LM_SQL_TYPE_FLOAT},       {"float4", LM_SQL_TYPE_FLOAT},
    {"varbinary", LM_SQL_TYPE_BINARY}, {"blob", LM_SQL_TYPE_BINARY},
    {"bytea", LM_SQL_TYPE_BINARY},     {"binary", LM_SQL_TYPE_BINARY},
    {"time", LM_SQL_TYPE_TIME},
};

/* [(p[, s])] after DECIMAL / NUMERIC: the precision and scale into *out. */
static laminar_code parse_decimal_args(parser* p, const char* column_name,
                                       lm_sql_type* out) {
  int64_t prec = 18, scale = 3;
  bool got;
  LM_TRY(accept(p, LM_TOK_LPAREN, &got));
  if (got) {
    const lm_token at = p->cur;
    LM_TRY(expect(p, LM_TOK_INTEGER));
    prec = at.uval > 1000 ? 1000 : (int64_t)at.uval;
    scale = 0;
    LM_TRY(accept(p, LM_TOK_COMMA, &got));
    const lm_token st = p->cur;
    if (got) {
      LM_TRY(expect(p, LM_TOK_INTEGER));
      scale = st.uval > 1000 ? 1000 : (int64_t)st.uval;
    }
    if (prec < 1 || prec > LM_DECIMAL_MAX_PRECISION || scale < 0 || scale > prec) {
      laminar_code rc = fail_at(p, LAMINAR_ERR_UNKNOWN_TYPE, at.line, at.column,
                                "DECIMAL(%lld,%lld) is not a type: the precision is 1 "
                                "to 38 and the scale 0 to the precision",
                                (long long)prec, (long long)scale);
      lm_error_object(p->err, NULL, column_name);
      return rc;
    }
    LM_TRY(expect(p, LM_TOK_RPAREN));
  }
  *out = lm_sql_type_decimal((int32_t)prec, (int32_t)scale);
  return LAMINAR_OK;
}

/* type := VARCHAR[(n)] | TEXT | STRING | BIGINT | INT8 | LONG | INT | INTEGER |
 *         INT4 | DOUBLE [PRECISION] | FLOAT8 | FLOAT | BOOLEAN | BOOL |
 *         TIMESTAMP[(p)] | DATE | SMALLINT | INT2 | SHORT | TINYINT | INT1 |
 *         REAL | FLOAT4 | VARBINARY[(n)] | BLOB | BYTEA | BINARY[(n)] | TIME |
 *         (DECIMAL | NUMERIC)[(p[, s])], 1 <= p <= 38, 0 <= s <= p (DuckDB's
 *         defaults: DECIMAL is DECIMAL(18,3), DECIMAL(p) is DECIMAL(p,0)).
 *         `column_name` (NULL allowed) goes into the error. */
static NOINLINE laminar_code parse_type(parser* p, const char* column_name,
                                        lm_sql_type* out) {
  const lm_token t = p->cur;
  if (t.kind != LM_TOK_IDENT || is_reserved(&t)) {
    if (t.kind != LM_TOK_QIDENT) return expected(p, "a type name");
  }
  size_t n = sizeof type_words / sizeof type_words[0];
  size_t i = 0;
  if (t.kind == LM_TOK_IDENT) {
    while (i < n && !lm_strneq_nocase(t.text, t.len, type_words[i].word)) i++;
  } else {
    i = n;  // a "quoted" type name is never a type
  }
  if (i == n) {
    char found[64];
    describe(&t, found, sizeof found);
    laminar_code rc =
        fail_at(p, LAMINAR_ERR_UNKNOWN_TYPE, t.line, t.column,
                "%s is not a type (use VARCHAR, BIGINT, INT, DOUBLE, REAL, BOOLEAN, "
                "DECIMAL(p,s), TIMESTAMP or DATE)",
                found);
    lm_error_object(p->err, NULL, column_name);
    return rc;
  }
  *out = type_words[i].type;
  LM_TRY(advance(p));
  bool got;
  if (*out == LM_SQL_TYPE_DOUBLE && lm_strneq_nocase(t.text, t.len, "double")) {
    LM_TRY(accept_kw(p, "PRECISION", &got));
  }
  if (*out == LM_SQL_TYPE_DECIMAL) return parse_decimal_args(p, column_name, out);
  if (*out == LM_SQL_TYPE_STRING || *out == LM_SQL_TYPE_TIMESTAMP ||
      *out == LM_SQL_TYPE_BINARY) {
    LM_TRY(accept(p, LM_TOK_LPAREN, &got));  // VARCHAR(n), TIMESTAMP(p): n is ignored
    if (got) {
      LM_TRY(expect(p, LM_TOK_INTEGER));
      LM_TRY(expect(p, LM_TOK_RPAREN));
    }
  }
  return LAMINAR_OK;
}

/* INTERVAL 'n' unit | INTERVAL 'n unit ...' (lm_interval_text, util/util.h) |
 * INTERVAL n unit; the current token is INTERVAL. Makes a LITERAL INTERVAL with i = milliseconds. */
static laminar_code parse_interval(parser* p, lm_ast_expr** out);

/* ==== expressions =================================================================== */

static lm_ast_expr* new_expr(parser* p, lm_ast_expr_kind kind, int32_t line,
                             int32_t column) {
  lm_ast_expr* e = lm_arena_alloc(p->arena, sizeof *e);
  if (e == NULL) return NULL;
  e->kind = kind;
  e->line = line;
  e->column = column;
  e->height = 1;
  return e;
}

#define NEW_EXPR(var, kind, line, column)          \
  do {                                             \
    (var) = new_expr(p, (kind), (line), (column)); \
    if ((var) == NULL) return nomem(p);            \
  } while (0)

static int32_t max_height(int32_t h, const lm_ast_expr* e) {
  return (e != NULL && e->height > h) ? e->height : h;
}

/* Set e->height from its children and enforce LM_SQL_MAX_DEPTH on it. */
static laminar_code finish(parser* p, lm_ast_expr* e) {
  int32_t h = 0;
  h = max_height(h, e->left);
  h = max_height(h, e->right);
  h = max_height(h, e->operand);
  h = max_height(h, e->else_expr);
  for (size_t i = 0; i < e->nwhen; i++) {
    h = max_height(h, e->whens[i]);
    h = max_height(h, e->thens[i]);
  }
  for (size_t i = 0; i < e->nargs; i++) h = max_height(h, e->args[i]);
  for (size_t i = 0; i < e->nlist; i++) h = max_height(h, e->list[i]);
  e->height = h + 1;
  if (e->height > LM_SQL_MAX_DEPTH) {
    return fail_at(p, LAMINAR_ERR_SQL_LIMIT, e->line, e->column,
                   "expression nested deeper than %d levels", LM_SQL_MAX_DEPTH);
  }
  return LAMINAR_OK;
}

static laminar_code parse_expr(parser* p, lm_ast_expr** out);
static laminar_code parse_binary(parser* p, int min_prec, lm_ast_expr** out);
static laminar_code parse_select(parser* p, lm_ast_select** out);
static laminar_code parse_query(parser* p, lm_ast_select** out);

enum { PREC_OR = 1, PREC_AND, PREC_NOT, PREC_CMP, PREC_CONCAT, PREC_ADD, PREC_MUL };

static NOINLINE laminar_code parse_interval(parser* p, lm_ast_expr** out) {
  const lm_token kw = p->cur;
  LM_TRY(advance(p));
  const lm_token v = p->cur;
  bool is_int = false;
  int64_t iv = 0;
  double dv = 0;
  int64_t unit_ms = 0;
  bool have_unit = false;
  bool overflow = false;
  int64_t ms = 0;
  if (v.kind == LM_TOK_STRING) {
    const char* s = NULL;
    size_t n = 0;
    LM_TRY(tok_string(p, &v, &s, &n));
    lm_interval_text it;
    if (!lm_interval_parse_text(s, n, &it)) {
      char found[64];
      describe(&v, found, sizeof found);
      return fail_at(p, LAMINAR_ERR_SQL_SYNTAX, v.line, v.column,
                     "invalid INTERVAL value %s: %s at character %zu (write e.g. "
                     "INTERVAL '5' SECOND, INTERVAL '5 seconds', INTERVAL '100ms' or "
                     "INTERVAL '1h 30m')",
                     found, it.why, it.bad + 1);
    }
    if (it.bare) {
      is_int = it.is_int;
      iv = it.iv;
      dv = it.dv;
    } else {
      have_unit = true;
      is_int = it.is_int;
      overflow = it.is_int ? it.overflow : !(it.dms > -9.0e18 && it.dms < 9.0e18);
      ms = it.ms;
      dv = it.dms;  // rounded below
    }
  } else if (v.kind == LM_TOK_INTEGER && !v.int_is_min) {
    is_int = true;
    iv = (int64_t)v.uval;
  } else if (v.kind == LM_TOK_DECIMAL) {
    dv = v.dval;
  } else {
    return expected(p, "an interval quantity such as '1'");
  }
  LM_TRY(advance(p));
  if (!have_unit) {
    const lm_token u = p->cur;
    if (u.kind != LM_TOK_IDENT) {
      return expected(p, "an interval unit (MILLISECOND, SECOND, MINUTE, HOUR or DAY)");
    }
    if (!lm_interval_unit(u.text, u.len, &unit_ms)) {
      char found[64];
      describe(&u, found, sizeof found);
      return fail_at(
          p, LAMINAR_ERR_SQL_SYNTAX, u.line, u.column,
          "unknown interval unit %s (use MILLISECOND, SECOND, MINUTE, HOUR or DAY)",
          found);
    }
    LM_TRY(advance(p));
    if (is_int) {
      overflow = __builtin_mul_overflow(iv, unit_ms, &ms);
    } else {
      dv *= (double)unit_ms;
      overflow = !(dv > -9.0e18 && dv < 9.0e18);  // also rejects NaN
    }
  }
  if (!is_int && !overflow) {
    /* round half away from zero, without libm */
    ms = dv >= 0 ? (int64_t)(dv + 0.5) : -(int64_t)(-dv + 0.5);
  }
  if (overflow) {
    return fail_at(p, LAMINAR_ERR_SQL_SYNTAX, v.line, v.column,
                   "INTERVAL is out of range (at most about 292 million years)");
  }
  lm_ast_expr* e;
  NEW_EXPR(e, LM_AST_LITERAL, kw.line, kw.column);
  e->lit = LM_LIT_INTERVAL;
  e->i = ms;
  *out = e;
  return LAMINAR_OK;
}

static laminar_code parse_special_call(parser* p, const lm_token* name_tok,
                                       lm_ast_expr* e, bool* handled);
static laminar_code parse_expr_list(parser* p, lm_ast_expr*** out, size_t* out_n);
static laminar_code parse_order_items(parser* p, lm_ast_order_item** out, size_t* n);

/* ---- OVER (...) of an analytic call ---------------------------------------------- */

/* One bound of a frame: UNBOUNDED PRECEDING|FOLLOWING, CURRENT ROW, or
 * <offset> PRECEDING|FOLLOWING (offset: any expression; the binder wants a
 * literal). */
static NOINLINE laminar_code parse_frame_bound(parser* p, lm_ast_frame_bound* out,
                                               lm_ast_expr** offset) {
  bool got;
  *offset = NULL;
  LM_TRY(accept_kw(p, "UNBOUNDED", &got));
  if (got) {
    LM_TRY(accept_kw(p, "PRECEDING", &got));
    if (got) {
      *out = LM_FRAME_UNBOUNDED_PRECEDING;
      return LAMINAR_OK;
    }
    if (!is_kw(&p->cur, "FOLLOWING")) return expected(p, "PRECEDING or FOLLOWING");
    *out = LM_FRAME_UNBOUNDED_FOLLOWING;
    return advance(p);
  }
  LM_TRY(accept_kw(p, "CURRENT", &got));
  if (got) {
    if (!is_kw(&p->cur, "ROW")) return expected(p, "ROW after CURRENT");
    *out = LM_FRAME_CURRENT_ROW;
    return advance(p);
  }
  LM_TRY(parse_binary(p, 0, offset));
  LM_TRY(accept_kw(p, "PRECEDING", &got));
  if (got) {
    *out = LM_FRAME_PRECEDING;
    return LAMINAR_OK;
  }
  if (!is_kw(&p->cur, "FOLLOWING")) return expected(p, "PRECEDING or FOLLOWING");
  *out = LM_FRAME_FOLLOWING;
  return advance(p);
}

/* OVER ( [PARTITION BY expr, ...] [ORDER BY expr [ASC|DESC] [NULLS ...], ...]
 *        [(ROWS|RANGE) (BETWEEN bound AND bound | bound)] ): the current token
 * is OVER. A named window (OVER w) is not supported. */
static NOINLINE laminar_code parse_over(parser* p, lm_ast_expr* e) {
  lm_ast_over* o = lm_arena_alloc(p->arena, sizeof *o);
  if (o == NULL) return nomem(p);
  memset(o, 0, sizeof *o);
  o->line = p->cur.line;
  o->column = p->cur.column;
  LM_TRY(advance(p));
  if (p->cur.kind != LM_TOK_LPAREN) {
    return fail_at(p, LAMINAR_ERR_SQL_UNSUPPORTED, p->cur.line, p->cur.column,
                   "named windows (OVER name) are not supported: write OVER (...)");
  }
  LM_TRY(advance(p));
  LM_TRY(enter(p));
  bool got;
  LM_TRY(accept_kw(p, "PARTITION", &got));
  if (got) {
    LM_TRY(expect_kw(p, "BY"));
    LM_TRY(parse_expr_list(p, &o->partition, &o->npartition));
  }
  LM_TRY(accept_kw(p, "ORDER", &got));
  if (got) {
    LM_TRY(expect_kw(p, "BY"));
    LM_TRY(parse_order_items(p, &o->order, &o->norder));
  }
  if (is_kw(&p->cur, "ROWS") || is_kw(&p->cur, "RANGE")) {
    o->has_frame = true;
    o->rows = is_kw(&p->cur, "ROWS");
    o->frame_line = p->cur.line;
    o->frame_column = p->cur.column;
    LM_TRY(advance(p));
    LM_TRY(accept_kw(p, "BETWEEN", &got));
    LM_TRY(parse_frame_bound(p, &o->start, &o->start_offset));
    if (got) {
      LM_TRY(expect_kw(p, "AND"));
      LM_TRY(parse_frame_bound(p, &o->end, &o->end_offset));
    } else {
      o->end = LM_FRAME_CURRENT_ROW;
    }
  }
  leave(p);
  LM_TRY(expect(p, LM_TOK_RPAREN));
  e->over = o;
  return LAMINAR_OK;
}

/* f( [* | [DISTINCT|ALL] expr [, expr]*] ): the current token is '('. */
static NOINLINE laminar_code parse_call(parser* p, const lm_token* name_tok,
                                        lm_ast_expr** out) {
  lm_ast_expr* e;
  NEW_EXPR(e, LM_AST_FUNCTION, name_tok->line, name_tok->column);
  LM_TRY(tok_string(p, name_tok, &e->fname, NULL));
  LM_TRY(advance(p));
  bool got;
  LM_TRY(parse_special_call(p, name_tok, e, &got));
  if (got) {
    LM_TRY(finish(p, e));
    *out = e;
    return LAMINAR_OK;
  }
  LM_TRY(accept(p, LM_TOK_STAR, &got));
  if (got) {
    e->star = true;
  } else if (p->cur.kind != LM_TOK_RPAREN) {
    LM_TRY(accept_kw(p, "DISTINCT", &e->distinct));
    if (!e->distinct) LM_TRY(accept_kw(p, "ALL", &got));
    size_t cap = 0;
    do {
      lm_ast_expr* arg;
      LM_TRY(parse_expr(p, &arg));
      PUSH(p, e->args, e->nargs, cap, arg);
      LM_TRY(accept(p, LM_TOK_COMMA, &got));
    } while (got);
  }
  LM_TRY(expect(p, LM_TOK_RPAREN));
  if (is_kw(&p->cur, "OVER")) LM_TRY(parse_over(p, e));
  if (is_kw(&p->cur, "FILTER")) {
    return fail_at(p, LAMINAR_ERR_SQL_UNSUPPORTED, p->cur.line, p->cur.column,
                   "%.*s clauses are not supported yet", (int)p->cur.len, p->cur.text);
  }
  LM_TRY(finish(p, e));
  *out = e;
  return LAMINAR_OK;
}

/* Append `arg` to the arguments of call e. */
static laminar_code add_arg(parser* p, lm_ast_expr* e, size_t* cap, lm_ast_expr* arg) {
  PUSH(p, e->args, e->nargs, *cap, arg);
  return LAMINAR_OK;
}

/* Append `first`, then ", expr" as long as commas follow. */
static laminar_code add_args(parser* p, lm_ast_expr* e, size_t* cap, lm_ast_expr* first) {
  LM_TRY(add_arg(p, e, cap, first));
  for (;;) {
    bool got;
    LM_TRY(accept(p, LM_TOK_COMMA, &got));
    if (!got) return LAMINAR_OK;
    lm_ast_expr* arg;
    LM_TRY(parse_expr(p, &arg));
    LM_TRY(add_arg(p, e, cap, arg));
  }
}

/* A string literal node holding `text` (static or arena memory). */
static laminar_code word_literal(parser* p, const lm_token* t, lm_ast_expr** out) {
  lm_ast_expr* w;
  NEW_EXPR(w, LM_AST_LITERAL, t->line, t->column);
  w->lit = LM_LIT_STRING;
  LM_TRY(tok_string(p, t, &w->s, &w->slen));
  *out = w;
  return LAMINAR_OK;
}

/* The SQL-standard call forms with keywords inside the parentheses, rewritten
 * into plain calls (the current token follows '('; on *handled the closing
 * ')' is consumed and e is complete):
 *   TRY_CAST(x AS type)                       -> CAST node (same semantics)
 *   SUBSTRING(s FROM a [FOR n]) | (s FOR n)   -> substring(s, a [, n]) / (s, 1, n)
 *   TRIM([LEADING|TRAILING|BOTH] [chars] FROM s) -> ltrim/rtrim/trim(s [, chars])
 *   EXTRACT(field FROM ts)                    -> date_part('field', ts)
 * Other calls, and SUBSTRING / TRIM written with commas, are left alone. */
static NOINLINE laminar_code parse_special_call(parser* p, const lm_token* name_tok,
                                                lm_ast_expr* e, bool* handled) {
  *handled = false;
  bool got;
  size_t cap = 0;
  if (is_kw(name_tok, "TRY_CAST")) {
    e->kind = LM_AST_CAST;
    e->fname = NULL;
    LM_TRY(parse_expr(p, &e->left));
    LM_TRY(expect_kw(p, "AS"));
    LM_TRY(parse_type(p, NULL, &e->cast_type));
  } else if (is_kw(name_tok, "EXTRACT")) {
    const lm_token f = p->cur;
    if (f.kind != LM_TOK_IDENT && f.kind != LM_TOK_QIDENT && f.kind != LM_TOK_STRING) {
      return expected(p, "a date part such as YEAR");
    }
    lm_ast_expr *field = NULL, *ts = NULL;
    LM_TRY(word_literal(p, &f, &field));
    LM_TRY(advance(p));
    LM_TRY(expect_kw(p, "FROM"));
    LM_TRY(parse_expr(p, &ts));
    e->fname = "date_part";
    LM_TRY(add_arg(p, e, &cap, field));
    LM_TRY(add_arg(p, e, &cap, ts));
  } else if (is_kw(name_tok, "SUBSTRING")) {
    if (p->cur.kind == LM_TOK_RPAREN) return LAMINAR_OK;
    lm_ast_expr* s;
    LM_TRY(parse_expr(p, &s));
    if (!is_kw(&p->cur, "FROM") && !is_kw(&p->cur, "FOR")) {
      /* substring(s, a [, n]): the generic path, with s already parsed. */
      LM_TRY(add_args(p, e, &cap, s));
    } else {
      lm_ast_expr *from = NULL, *count = NULL;
      LM_TRY(accept_kw(p, "FROM", &got));
      if (got) LM_TRY(parse_expr(p, &from));
      LM_TRY(accept_kw(p, "FOR", &got));
      if (got) LM_TRY(parse_expr(p, &count));
      if (from == NULL) {
        NEW_EXPR(from, LM_AST_LITERAL, count->line, count->column);
        from->lit = LM_LIT_INT;
        from->i = 1;
      }
      LM_TRY(add_arg(p, e, &cap, s));
      LM_TRY(add_arg(p, e, &cap, from));
      if (count != NULL) LM_TRY(add_arg(p, e, &cap, count));
    }
  } else if (is_kw(name_tok, "TRIM")) {
    if (p->cur.kind == LM_TOK_RPAREN) return LAMINAR_OK;
    const char* fname = "trim";
    bool side = false;
    if (is_kw(&p->cur, "LEADING") || is_kw(&p->cur, "TRAILING") ||
        is_kw(&p->cur, "BOTH")) {
      fname = is_kw(&p->cur, "LEADING")    ? "ltrim"
              : is_kw(&p->cur, "TRAILING") ? "rtrim"
                                           : "trim";
      side = true;
      LM_TRY(advance(p));
    }
    lm_ast_expr *chars = NULL, *s = NULL;
    LM_TRY(accept_kw(p, "FROM", &got));
    if (!got) {
      lm_ast_expr* first;
      LM_TRY(parse_expr(p, &first));
      LM_TRY(accept_kw(p, "FROM", &got));
      if (got) {
        chars = first;
      } else if (side) {
        return expected(p, "FROM");
      } else {
        /* trim(s [, chars]): the generic path, with s already parsed. */
        LM_TRY(add_args(p, e, &cap, first));
        LM_TRY(expect(p, LM_TOK_RPAREN));
        *handled = true;
        return LAMINAR_OK;
      }
    }
    LM_TRY(parse_expr(p, &s));
    e->fname = fname;
    LM_TRY(add_arg(p, e, &cap, s));
    if (chars != NULL) LM_TRY(add_arg(p, e, &cap, chars));
  } else {
    return LAMINAR_OK;
  }
  LM_TRY(expect(p, LM_TOK_RPAREN));
  *handled = true;
  return LAMINAR_OK;
}

/* CASE [operand] WHEN w THEN t ... [ELSE e] END: the current token is CASE. */
static NOINLINE laminar_code parse_case(parser* p, lm_ast_expr** out) {
  lm_ast_expr* e;
  NEW_EXPR(e, LM_AST_CASE, p->cur.line, p->cur.column);
  LM_TRY(advance(p));
  if (!is_kw(&p->cur, "WHEN")) LM_TRY(parse_expr(p, &e->operand));
  size_t wcap = 0, tcap = 0, nthen = 0;
  bool got;
  for (;;) {
    LM_TRY(accept_kw(p, "WHEN", &got));
    if (!got) break;
    lm_ast_expr *w, *t;
    LM_TRY(parse_expr(p, &w));
    LM_TRY(expect_kw(p, "THEN"));
    LM_TRY(parse_expr(p, &t));
    PUSH(p, e->whens, e->nwhen, wcap, w);
    PUSH(p, e->thens, nthen, tcap, t);
  }
  if (e->nwhen == 0) return expected(p, "'WHEN'");
  LM_TRY(accept_kw(p, "ELSE", &got));
  if (got) LM_TRY(parse_expr(p, &e->else_expr));
  LM_TRY(expect_kw(p, "END"));
  LM_TRY(finish(p, e));
  *out = e;
  return LAMINAR_OK;
}

/* CAST(expr AS type): the current token is CAST. */
static NOINLINE laminar_code parse_cast(parser* p, lm_ast_expr** out) {
  lm_ast_expr* e;
  NEW_EXPR(e, LM_AST_CAST, p->cur.line, p->cur.column);
  LM_TRY(advance(p));
  LM_TRY(expect(p, LM_TOK_LPAREN));
  LM_TRY(parse_expr(p, &e->left));
  LM_TRY(expect_kw(p, "AS"));
  LM_TRY(parse_type(p, NULL, &e->cast_type));
  LM_TRY(expect(p, LM_TOK_RPAREN));
  LM_TRY(finish(p, e));
  *out = e;
  return LAMINAR_OK;
}

/* Whether the token after the current one is a string literal (so that
 * `DATE '2026-01-02'` is a typed literal while `date` alone is a name). */
static bool next_is_string(const parser* p) {
  lm_lexer lx = p->lex; /* a copy: the real lexer does not move */
  lm_token t;
  laminar_error scratch;
  return lm_lexer_next(&lx, &t, &scratch) == LAMINAR_OK && t.kind == LM_TOK_STRING;
}

/* DATE 'text' | TIMESTAMP 'text', the current token being the type word: as
 * CAST('text' AS type), as in DuckDB (text that does not convert is NULL, see
 * "Runtime faults" in docs/SQL.md). */
static NOINLINE laminar_code parse_typed_literal(parser* p, lm_sql_type type,
                                                 lm_ast_expr** out) {
  lm_ast_expr* e;
  NEW_EXPR(e, LM_AST_CAST, p->cur.line, p->cur.column);
  e->cast_type = type;
  LM_TRY(advance(p));
  const lm_token t = p->cur;
  lm_ast_expr* lit;
  NEW_EXPR(lit, LM_AST_LITERAL, t.line, t.column);
  lit->lit = LM_LIT_STRING;
  LM_TRY(tok_string(p, &t, &lit->s, &lit->slen));
  e->left = lit;
  LM_TRY(advance(p));
  LM_TRY(finish(p, e));
  *out = e;
  return LAMINAR_OK;
}

/* Literals, names, t.name, t.* and function calls (the leaves of parse_primary). */
static NOINLINE laminar_code parse_leaf(parser* p, lm_ast_expr** out) {
  const lm_token t = p->cur;
  lm_ast_expr* e;
  switch (t.kind) {
    case LM_TOK_INTEGER:
      if (t.int_is_min) {
        return fail_at(p, LAMINAR_ERR_SQL_SYNTAX, t.line, t.column,
                       "integer '%.*s' is out of range for BIGINT", (int)t.len, t.text);
      }
      NEW_EXPR(e, LM_AST_LITERAL, t.line, t.column);
      e->lit = LM_LIT_INT;
      e->i = (int64_t)t.uval;
      *out = e;
      return advance(p);
    case LM_TOK_DECIMAL:
      NEW_EXPR(e, LM_AST_LITERAL, t.line, t.column);
      e->lit = LM_LIT_DOUBLE;
      e->d = t.dval;
      *out = e;
      return advance(p);
    case LM_TOK_STRING:
      NEW_EXPR(e, LM_AST_LITERAL, t.line, t.column);
      e->lit = LM_LIT_STRING;
      LM_TRY(tok_string(p, &t, &e->s, &e->slen));
      *out = e;
      return advance(p);
    case LM_TOK_VARIABLE:
      NEW_EXPR(e, LM_AST_VARIABLE, t.line, t.column);
      LM_TRY(tok_string(p, &t, &e->name, NULL));
      *out = e;
      return advance(p);
    case LM_TOK_IDENT:
      if (is_kw(&t, "TRUE") || is_kw(&t, "FALSE") || is_kw(&t, "NULL")) {
        NEW_EXPR(e, LM_AST_LITERAL, t.line, t.column);
        e->lit = is_kw(&t, "NULL") ? LM_LIT_NULL : LM_LIT_BOOL;
        e->b = is_kw(&t, "TRUE");
        *out = e;
        return advance(p);
      }
      if (is_kw(&t, "INTERVAL")) return parse_interval(p, out);
      if ((is_kw(&t, "DATE") || is_kw(&t, "TIMESTAMP")) && next_is_string(p)) {
        return parse_typed_literal(
            p, is_kw(&t, "DATE") ? LM_SQL_TYPE_DATE : LM_SQL_TYPE_TIMESTAMP, out);
      }
      if (is_reserved(&t)) return expected(p, "an expression");
      break;
    case LM_TOK_QIDENT: break;
    default: return expected(p, "an expression");
  }
  /* A name: column, t.column, t.*, or function call. */
  if (t.kind == LM_TOK_QIDENT && t.len == 2) {
    return fail_at(p, LAMINAR_ERR_SQL_SYNTAX, t.line, t.column,
                   "a quoted identifier cannot be empty");
  }
  LM_TRY(advance(p));
  if (p->cur.kind == LM_TOK_LPAREN) return parse_call(p, &t, out);
  bool dot;
  LM_TRY(accept(p, LM_TOK_DOT, &dot));
  if (dot && p->cur.kind == LM_TOK_STAR) {
    NEW_EXPR(e, LM_AST_STAR, t.line, t.column);
    LM_TRY(tok_string(p, &t, &e->table, NULL));
    *out = e;
    return advance(p);
  }
  NEW_EXPR(e, LM_AST_COLUMN, t.line, t.column);
  if (dot) {
    LM_TRY(tok_string(p, &t, &e->table, NULL));
    LM_TRY(parse_name(p, "a column name", &e->name, NULL, NULL));
  } else {
    LM_TRY(tok_string(p, &t, &e->name, NULL));
  }
  *out = e;
  return LAMINAR_OK;
}

/* primary := ( expr ) | CASE ... | CAST(...) | leaf. The recursive cases stay
 * in this small frame; everything else is in parse_leaf(). */
static laminar_code parse_primary(parser* p, lm_ast_expr** out) {
  if (p->cur.kind == LM_TOK_LPAREN) {
    LM_TRY(advance(p));
    if (is_kw(&p->cur, "SELECT")) {
      return fail_at(p, LAMINAR_ERR_SQL_UNSUPPORTED, p->cur.line, p->cur.column,
                     "subqueries are not supported yet");
    }
    LM_TRY(parse_expr(p, out));
    return expect(p, LM_TOK_RPAREN);
  }
  if (is_kw(&p->cur, "CASE")) return parse_case(p, out);
  if (is_kw(&p->cur, "CAST")) return parse_cast(p, out);
  return parse_leaf(p, out);
}

/* [- | +]* primary. A sign directly on a numeric or INTERVAL literal is folded
 * into it; -9223372036854775808 is read as INT64_MIN. */
static laminar_code parse_unary(parser* p, lm_ast_expr** out) {
  if (p->cur.kind != LM_TOK_MINUS && p->cur.kind != LM_TOK_PLUS)
    return parse_primary(p, out);
  const int32_t line = p->cur.line, column = p->cur.column;
  const bool neg = p->cur.kind == LM_TOK_MINUS;
  LM_TRY(advance(p));
  lm_ast_expr* e;
  if (neg && p->cur.kind == LM_TOK_INTEGER && p->cur.int_is_min) {
    NEW_EXPR(e, LM_AST_LITERAL, line, column);
    e->lit = LM_LIT_INT;
    e->i = INT64_MIN;
    *out = e;
    return advance(p);
  }
  lm_ast_expr* x;
  LM_TRY(enter(p));
  LM_TRY(parse_unary(p, &x));
  leave(p);
  if (x->kind == LM_AST_LITERAL &&
      ((x->lit == LM_LIT_DOUBLE) ||
       ((x->lit == LM_LIT_INT || x->lit == LM_LIT_INTERVAL) && x->i != INT64_MIN))) {
    if (neg) {
      x->i = -x->i;
      x->d = -x->d;
    }
    x->line = line;
    x->column = column;
    *out = x;
    return LAMINAR_OK;
  }
  NEW_EXPR(e, LM_AST_UNARY, line, column);
  e->op = neg ? LM_OP_NEG : LM_OP_PLUS;
  e->left = x;
  LM_TRY(finish(p, e));
  *out = e;
  return LAMINAR_OK;
}

/* Binary operator of the current token and its precedence; 0 if none. */
static int infix_op(const lm_token* t, lm_ast_op* op) {
  switch (t->kind) {
    case LM_TOK_EQ: *op = LM_OP_EQ; return PREC_CMP;
    case LM_TOK_NE: *op = LM_OP_NE; return PREC_CMP;
    case LM_TOK_LT: *op = LM_OP_LT; return PREC_CMP;
    case LM_TOK_LE: *op = LM_OP_LE; return PREC_CMP;
    case LM_TOK_GT: *op = LM_OP_GT; return PREC_CMP;
    case LM_TOK_GE: *op = LM_OP_GE; return PREC_CMP;
    case LM_TOK_CONCAT: *op = LM_OP_CONCAT; return PREC_CONCAT;
    case LM_TOK_PLUS: *op = LM_OP_ADD; return PREC_ADD;
    case LM_TOK_MINUS: *op = LM_OP_SUB; return PREC_ADD;
    case LM_TOK_STAR: *op = LM_OP_MUL; return PREC_MUL;
    case LM_TOK_SLASH: *op = LM_OP_DIV; return PREC_MUL;
    case LM_TOK_PERCENT: *op = LM_OP_MOD; return PREC_MUL;
    case LM_TOK_IDENT:
      if (is_kw(t, "OR")) {
        *op = LM_OP_OR;
        return PREC_OR;
      }
      if (is_kw(t, "AND")) {
        *op = LM_OP_AND;
        return PREC_AND;
      }
      return 0;
    default: return 0;
  }
}

/* The postfix predicates after `left`: IS [NOT] NULL, [NOT] BETWEEN, [NOT] IN,
 * [NOT] LIKE. The current token is IS, NOT, BETWEEN, IN or LIKE. */
static NOINLINE laminar_code parse_predicate(parser* p, lm_ast_expr* left,
                                             lm_ast_expr** out) {
  lm_ast_expr* e;
  bool got;
  if (is_kw(&p->cur, "IS")) {
    NEW_EXPR(e, LM_AST_IS_NULL, left->line, left->column);
    e->left = left;
    LM_TRY(advance(p));
    LM_TRY(accept_kw(p, "NOT", &e->negated));
    LM_TRY(expect_kw(p, "NULL"));
    LM_TRY(finish(p, e));
    *out = e;
    return LAMINAR_OK;
  }
  bool negated;
  LM_TRY(accept_kw(p, "NOT", &negated));
  if (is_kw(&p->cur, "BETWEEN")) {
    NEW_EXPR(e, LM_AST_BETWEEN, left->line, left->column);
    LM_TRY(advance(p));
    e->list = lm_arena_alloc(p->arena, 2 * sizeof *e->list);
    if (e->list == NULL) return nomem(p);
    LM_TRY(parse_binary(p, PREC_CONCAT, &e->list[0]));
    LM_TRY(expect_kw(p, "AND"));
    LM_TRY(parse_binary(p, PREC_CONCAT, &e->list[1]));
    e->nlist = 2;
  } else if (is_kw(&p->cur, "IN")) {
    NEW_EXPR(e, LM_AST_IN, left->line, left->column);
    LM_TRY(advance(p));
    LM_TRY(expect(p, LM_TOK_LPAREN));
    if (is_kw(&p->cur, "SELECT")) {
      return fail_at(p, LAMINAR_ERR_SQL_UNSUPPORTED, p->cur.line, p->cur.column,
                     "subqueries are not supported yet");
    }
    size_t cap = 0;
    do {
      lm_ast_expr* v;
      LM_TRY(parse_expr(p, &v));
      PUSH(p, e->list, e->nlist, cap, v);
      LM_TRY(accept(p, LM_TOK_COMMA, &got));
    } while (got);
    LM_TRY(expect(p, LM_TOK_RPAREN));
  } else if (is_kw(&p->cur, "LIKE") || is_kw(&p->cur, "ILIKE")) {
    NEW_EXPR(e, LM_AST_LIKE, left->line, left->column);
    e->ilike = is_kw(&p->cur, "ILIKE");
    LM_TRY(advance(p));
    LM_TRY(parse_binary(p, PREC_CONCAT, &e->right));
    LM_TRY(accept_kw(p, "ESCAPE", &got));
    if (got) {
      e->list = lm_arena_alloc(p->arena, sizeof *e->list);
      if (e->list == NULL) return nomem(p);
      LM_TRY(parse_binary(p, PREC_CONCAT, &e->list[0]));
      e->nlist = 1;
    }
  } else {
    return expected(p, "BETWEEN, IN or LIKE/ILIKE after NOT");
  }
  e->left = left;
  e->negated = negated;
  LM_TRY(finish(p, e));
  *out = e;
  return LAMINAR_OK;
}

static bool at_predicate(const lm_token* t) {
  return is_kw(t, "IS") || is_kw(t, "NOT") || is_kw(t, "BETWEEN") || is_kw(t, "IN") ||
         is_kw(t, "LIKE") || is_kw(t, "ILIKE");
}

/* An expression whose operators all bind at least as tightly as min_prec. A
 * prefix NOT takes a comparison-level operand (NOT a = b is NOT (a = b)). */
static laminar_code parse_binary_inner(parser* p, int min_prec, lm_ast_expr** out) {
  lm_ast_expr* left;
  if (is_kw(&p->cur, "NOT")) {
    lm_ast_expr* e;
    NEW_EXPR(e, LM_AST_UNARY, p->cur.line, p->cur.column);
    e->op = LM_OP_NOT;
    LM_TRY(advance(p));
    LM_TRY(parse_binary(p, PREC_CMP, &e->left));
    LM_TRY(finish(p, e));
    left = e;
  } else {
    LM_TRY(parse_unary(p, &left));
  }
  for (;;) {
    if (min_prec <= PREC_CMP && at_predicate(&p->cur)) {
      LM_TRY(parse_predicate(p, left, &left));
      continue;
    }
    if ((p->cur.kind == LM_TOK_ARROW || p->cur.kind == LM_TOK_ARROW2) &&
        PREC_CONCAT >= min_prec) {
      /* j -> path is json_extract(j, path), j ->> path json_extract_string:
       * at the level of || (PostgreSQL's; DuckDB binds them below =). */
      bool text = p->cur.kind == LM_TOK_ARROW2;
      LM_TRY(advance(p));
      lm_ast_expr* e;
      NEW_EXPR(e, LM_AST_FUNCTION, left->line, left->column);
      e->fname = text ? "json_extract_string" : "json_extract";
      e->args = lm_arena_alloc(p->arena, 2 * sizeof *e->args);
      if (e->args == NULL) return nomem(p);
      e->args[0] = left;
      LM_TRY(parse_binary(p, PREC_CONCAT + 1, &e->args[1]));
      e->nargs = 2;
      LM_TRY(finish(p, e));
      left = e;
      continue;
    }
    lm_ast_op op;
    int prec = infix_op(&p->cur, &op);
    if (prec == 0 || prec < min_prec) break;
    LM_TRY(advance(p));
    lm_ast_expr* e;
    NEW_EXPR(e, LM_AST_BINARY, left->line, left->column);
    e->op = op;
    e->left = left;
    LM_TRY(parse_binary(p, prec + 1, &e->right));
    LM_TRY(finish(p, e));
    left = e;
  }
  *out = left;
  return LAMINAR_OK;
}

static laminar_code parse_binary(parser* p, int min_prec, lm_ast_expr** out) {
  LM_TRY(enter(p));
  LM_TRY(parse_binary_inner(p, min_prec, out));
  leave(p);
  return LAMINAR_OK;
}

static laminar_code parse_expr(parser* p, lm_ast_expr** out) {
  return parse_binary(p, PREC_OR, out);
}

/* ==== SELECT ======================================================================== */

static bool is_join_word(const lm_token* t) {
  static const char* const words[] = {"join",  "inner", "left",    "right", "full",
                                      "cross", "outer", "natural", "asof",  NULL};
  for (const char* const* w = words; *w != NULL; w++) {
    if (is_kw(t, *w)) return true;
  }
  return t->kind == LM_TOK_COMMA;
}

/* Optional alias: AS name, or a bare name that is no keyword (nor, when
 * `from`, a join word). */
static laminar_code parse_alias(parser* p, bool from, const char** out) {
  bool as;
  LM_TRY(accept_kw(p, "AS", &as));
  if (as) return parse_name(p, "an alias", out, NULL, NULL);
  if (is_name_token(&p->cur) &&
      !(from && (is_join_word(&p->cur) || is_kw(&p->cur, "OFFSET") ||
                 is_kw(&p->cur, "QUALIFY")))) {
    return parse_name(p, "an alias", out, NULL, NULL);
  }
  *out = NULL;
  return LAMINAR_OK;
}

/* Parse a comma-separated list of expressions into an arena array. */
static laminar_code parse_expr_list(parser* p, lm_ast_expr*** out, size_t* out_n) {
  size_t cap = 0;
  bool got;
  *out = NULL;
  *out_n = 0;
  do {
    lm_ast_expr* e;
    LM_TRY(parse_expr(p, &e));
    PUSH(p, *out, *out_n, cap, e);
    LM_TRY(accept(p, LM_TOK_COMMA, &got));
  } while (got);
  return LAMINAR_OK;
}

/* [NULLS (FIRST | LAST)] after an ORDER BY item. */
static laminar_code parse_nulls_order(parser* p, bool* out_first) {
  bool got;
  LM_TRY(accept_kw(p, "NULLS", &got));
  if (!got) return LAMINAR_OK;
  LM_TRY(accept_kw(p, "FIRST", out_first));
  if (*out_first) return LAMINAR_OK;
  if (!is_kw(&p->cur, "LAST")) return expected(p, "FIRST or LAST after NULLS");
  return advance(p);
}

/* expr [ASC|DESC] [NULLS FIRST|LAST] [, ...] after ORDER BY. */
static laminar_code parse_order_items(parser* p, lm_ast_order_item** out, size_t* n) {
  size_t cap = 0;
  bool got;
  do {
    lm_ast_order_item item = {NULL, false, false};
    LM_TRY(parse_expr(p, &item.expr));
    LM_TRY(accept_kw(p, "DESC", &item.desc));
    if (!item.desc) LM_TRY(accept_kw(p, "ASC", &got));
    LM_TRY(parse_nulls_order(p, &item.nulls_first));
    PUSH(p, *out, *n, cap, item);
    LM_TRY(accept(p, LM_TOK_COMMA, &got));
  } while (got);
  return LAMINAR_OK;
}

/* One input of a FROM clause: `name` or a window table function over it,
 * `tumble(name, time, size)` / `hop(name, time, size, slide)` (*out_window the
 * call, else NULL). */
static laminar_code parse_from_input(parser* p, const char* what, const char** out_name,
                                     int32_t* out_line, int32_t* out_column,
                                     lm_ast_expr** out_window) {
  lm_token name_tok = p->cur;
  *out_window = NULL;
  LM_TRY(parse_name(p, what, out_name, out_line, out_column));
  if (p->cur.kind != LM_TOK_LPAREN ||
      !(lm_streq_nocase(*out_name, "tumble") || lm_streq_nocase(*out_name, "hop")))
    return LAMINAR_OK;
  lm_ast_expr* call;
  LM_TRY(parse_call(p, &name_tok, &call));
  if (call->nargs < 1 || call->args[0]->kind != LM_AST_COLUMN ||
      call->args[0]->table != NULL) {
    return fail_at(p, LAMINAR_ERR_SQL_SYNTAX, call->line, call->column,
                   "%s(...) in FROM takes a source or stream name first: %s(input, "
                   "time_column, INTERVAL ...)",
                   call->fname, call->fname);
  }
  *out_name = call->args[0]->name;
  *out_line = call->args[0]->line;
  *out_column = call->args[0]->column;
  *out_window = call;
  return LAMINAR_OK;
}

/* A join after FROM's first input, the current token at its first word:
 *   [INNER | LEFT [OUTER] | RIGHT [OUTER] | FULL [OUTER]] JOIN input [[AS] alias]
 *     ON e
 *   [LEFT [OUTER]] ASOF [LEFT [OUTER]] JOIN name [[AS] alias]
 *     [MATCH_CONDITION ( e )] ON e
 * (LEFT before ASOF as Snowflake, after as DuckDB). CROSS, NATURAL, comma
 * joins and ASOF with RIGHT / FULL are LAMINAR_ERR_SQL_UNSUPPORTED at the
 * token. */
static laminar_code parse_join(parser* p, lm_ast_join** out) {
  lm_ast_join* j = lm_arena_alloc(p->arena, sizeof *j);
  if (j == NULL) return nomem(p);
  j->line = p->cur.line;
  j->column = p->cur.column;
  bool got;
  static const char* const types[] = {"INNER", "LEFT", "RIGHT", "FULL"};
  for (int i = 0; i < 4; i++) {
    LM_TRY(accept_kw(p, types[i], &got));
    if (got) {
      j->type = (lm_ast_join_type)i;
      if (i > 0) LM_TRY(accept_kw(p, "OUTER", &got));
      break;
    }
  }
  LM_TRY(accept_kw(p, "ASOF", &j->asof));
  if (j->asof && j->type == LM_JOIN_INNER) { /* DuckDB's spelling: ASOF LEFT JOIN */
    LM_TRY(accept_kw(p, "LEFT", &got));
    if (got) {
      j->type = LM_JOIN_LEFT;
      LM_TRY(accept_kw(p, "OUTER", &got));
    }
  }
  if (j->asof && (j->type == LM_JOIN_RIGHT || j->type == LM_JOIN_FULL)) {
    return fail_at(p, LAMINAR_ERR_SQL_UNSUPPORTED, j->line, j->column,
                   "ASOF JOIN is inner or LEFT: FROM a [LEFT] ASOF JOIN b "
                   "MATCH_CONDITION(a.ts >= b.ts) ON a.k = b.k");
  }
  if (!is_kw(&p->cur, "JOIN")) {
    return fail_at(p, LAMINAR_ERR_SQL_UNSUPPORTED, p->cur.line, p->cur.column,
                   "this join is not supported: FROM a [INNER | LEFT | RIGHT | FULL] "
                   "JOIN b ON ..., or FROM a [LEFT] ASOF JOIN b ...");
  }
  j->left_outer = j->type == LM_JOIN_LEFT;
  LM_TRY(advance(p));
  if (j->asof) {
    LM_TRY(parse_name(p, "a source or stream name after ASOF JOIN", &j->right,
                      &j->right_line, &j->right_column));
  } else {
    j->plain = true;
    LM_TRY(parse_from_input(p, "a source, stream or table name after JOIN", &j->right,
                            &j->right_line, &j->right_column, &j->right_window));
    if (is_kw(&p->cur, "FOR")) { /* a temporal join of a table */
      LM_TRY(advance(p));
      LM_TRY(expect_kw(p, "SYSTEM_TIME"));
      LM_TRY(expect_kw(p, "AS"));
      LM_TRY(expect_kw(p, "OF"));
      LM_TRY(parse_expr(p, &j->as_of));
    }
  }
  if (!is_kw(&p->cur, "MATCH_CONDITION") && !is_kw(&p->cur, "ON")) {
    LM_TRY(parse_alias(p, true, &j->right_alias));
  }
  if (j->asof) {
    LM_TRY(accept_kw(p, "MATCH_CONDITION", &got));
    if (got) {
      LM_TRY(expect(p, LM_TOK_LPAREN));
      LM_TRY(parse_expr(p, &j->match));
      LM_TRY(expect(p, LM_TOK_RPAREN));
    }
  }
  LM_TRY(expect_kw(p, "ON"));
  LM_TRY(parse_expr(p, &j->on));
  *out = j;
  return LAMINAR_OK;
}

/* A table function after FROM's input, the current token after the comma or
 * CROSS JOIN: [LATERAL] f(args) [[AS] alias [(col, ...)]]. */
static laminar_code parse_lateral(parser* p, const lm_token* join_tok,
                                  lm_ast_lateral** out) {
  lm_ast_lateral* l = lm_arena_alloc(p->arena, sizeof *l);
  if (l == NULL) return nomem(p);
  bool got;
  LM_TRY(accept_kw(p, "LATERAL", &got));
  lm_token name_tok = p->cur;
  const char* name;
  LM_TRY(parse_name(p, "a table function call (f(x, ...)) after FROM input,", &name, NULL,
                    NULL));
  if (p->cur.kind != LM_TOK_LPAREN) {
    return fail_at(p, LAMINAR_ERR_SQL_UNSUPPORTED, join_tok->line, join_tok->column,
                   "FROM a, b (a comma or CROSS JOIN) takes a table function call "
                   "after the input: FROM a, f(a.x) or FROM a CROSS JOIN LATERAL "
                   "f(a.x); to join two inputs use JOIN ... ON");
  }
  LM_TRY(parse_call(p, &name_tok, &l->call));
  LM_TRY(parse_alias(p, true, &l->alias));
  if (l->alias != NULL && p->cur.kind == LM_TOK_LPAREN) {
    LM_TRY(advance(p));
    size_t cap = 0;
    do {
      const char* col;
      LM_TRY(parse_name(p, "a column alias", &col, NULL, NULL));
      PUSH(p, l->cols, l->ncols, cap, col);
      LM_TRY(accept(p, LM_TOK_COMMA, &got));
    } while (got);
    LM_TRY(expect(p, LM_TOK_RPAREN));
  }
  *out = l;
  return LAMINAR_OK;
}

static laminar_code parse_select(parser* p, lm_ast_select** out) {
  lm_ast_select* s = lm_arena_alloc(p->arena, sizeof *s);
  if (s == NULL) return nomem(p);
  s->limit = -1;
  LM_TRY(expect_kw(p, "SELECT"));
  bool got;
  LM_TRY(accept_kw(p, "DISTINCT", &s->distinct));
  if (!s->distinct) LM_TRY(accept_kw(p, "ALL", &got));
  if (s->distinct) LM_TRY(accept_kw(p, "ON", &got));
  if (s->distinct && got) { /* DISTINCT ON (expr, ...) */
    LM_TRY(expect(p, LM_TOK_LPAREN));
    LM_TRY(parse_expr_list(p, &s->distinct_on, &s->ndistinct_on));
    LM_TRY(expect(p, LM_TOK_RPAREN));
  }

  size_t cap = 0;
  do {
    lm_ast_select_item item = {NULL, NULL};
    if (p->cur.kind == LM_TOK_STAR) {
      NEW_EXPR(item.expr, LM_AST_STAR, p->cur.line, p->cur.column);
      LM_TRY(advance(p));
    } else {
      LM_TRY(parse_expr(p, &item.expr));
      if (item.expr->kind != LM_AST_STAR) LM_TRY(parse_alias(p, false, &item.alias));
    }
    PUSH(p, s->items, s->nitems, cap, item);
    LM_TRY(accept(p, LM_TOK_COMMA, &got));
  } while (got);

  LM_TRY(expect_kw(p, "FROM"));
  if (p->cur.kind == LM_TOK_LPAREN) {
    /* A derived table: FROM ( query ) [alias] */
    s->from = "subquery";
    s->from_line = p->cur.line;
    s->from_column = p->cur.column;
    LM_TRY(advance(p));
    LM_TRY(enter(p));
    LM_TRY(parse_query(p, &s->from_select));
    leave(p);
    LM_TRY(expect(p, LM_TOK_RPAREN));
    LM_TRY(parse_alias(p, true, &s->from_alias));
    if (s->from_alias != NULL) s->from = s->from_alias;
  } else {
    LM_TRY(parse_from_input(p, "a source or stream name", &s->from, &s->from_line,
                            &s->from_column, &s->from_window));
    LM_TRY(parse_alias(p, true, &s->from_alias));
    for (size_t i = p->ncte; i-- > 0;) { /* a CTE in scope, innermost first */
      if (lm_streq_nocase(p->ctes[i].name, s->from)) {
        s->from_select = p->ctes[i].select;
        break;
      }
    }
  }
  lm_token join_tok = p->cur;
  if (p->cur.kind == LM_TOK_COMMA) { /* FROM a, f(...) */
    LM_TRY(advance(p));
    LM_TRY(parse_lateral(p, &join_tok, &s->lateral));
  } else if (is_kw(&p->cur, "CROSS")) { /* FROM a CROSS JOIN [LATERAL] f(...) */
    LM_TRY(advance(p));
    LM_TRY(expect_kw(p, "JOIN"));
    LM_TRY(parse_lateral(p, &join_tok, &s->lateral));
  }
  if (s->from_select == NULL && is_join_word(&p->cur) && p->cur.kind != LM_TOK_COMMA &&
      !is_kw(&p->cur, "CROSS") && !is_kw(&p->cur, "NATURAL")) {
    LM_TRY(parse_join(p, &s->join));
    /* FROM a JOIN b ON ..., f(...) (or CROSS JOIN [LATERAL] f(...)): the
     * function over the join's rows */
    join_tok = p->cur;
    if (s->lateral == NULL && p->cur.kind == LM_TOK_COMMA) {
      LM_TRY(advance(p));
      LM_TRY(parse_lateral(p, &join_tok, &s->lateral));
    } else if (s->lateral == NULL && is_kw(&p->cur, "CROSS")) {
      LM_TRY(advance(p));
      LM_TRY(expect_kw(p, "JOIN"));
      LM_TRY(parse_lateral(p, &join_tok, &s->lateral));
    }
  }
  if (s->from_window != NULL && s->join == NULL) {
    return fail_at(p, LAMINAR_ERR_SQL_UNSUPPORTED, s->from_window->line,
                   s->from_window->column,
                   "%s(...) in FROM is a side of a window join (FROM tumble(a, ts, "
                   "size) JOIN tumble(b, ts, size) ON ...); to aggregate over windows, "
                   "GROUP BY %s(ts, ...)",
                   s->from_window->fname, s->from_window->fname);
  }
  if (is_join_word(&p->cur)) {
    return fail_at(p, LAMINAR_ERR_SQL_UNSUPPORTED, p->cur.line, p->cur.column,
                   "this join is not supported: FROM takes one input or one join of "
                   "two named inputs (a JOIN b ON ...); join in a stream of its own "
                   "and read that stream");
  }

  LM_TRY(accept_kw(p, "WHERE", &got));
  if (got) LM_TRY(parse_expr(p, &s->where));
  LM_TRY(accept_kw(p, "GROUP", &got));
  if (got) {
    LM_TRY(expect_kw(p, "BY"));
    LM_TRY(parse_expr_list(p, &s->group_by, &s->ngroup));
  }
  LM_TRY(accept_kw(p, "HAVING", &got));
  if (got) LM_TRY(parse_expr(p, &s->having));
  LM_TRY(accept_kw(p, "QUALIFY", &got));
  if (got) LM_TRY(parse_expr(p, &s->qualify));
  LM_TRY(accept_kw(p, "ORDER", &got));
  if (got) {
    LM_TRY(expect_kw(p, "BY"));
    LM_TRY(parse_order_items(p, &s->order_by, &s->norder));
  }
  LM_TRY(accept_kw(p, "LIMIT", &got));
  if (got) {
    if (p->cur.kind != LM_TOK_INTEGER || p->cur.int_is_min) {
      return expected(p, "a row count (an integer) after LIMIT");
    }
    s->limit = (int64_t)p->cur.uval;
    LM_TRY(advance(p));
  }
  LM_TRY(accept_kw(p, "OFFSET", &got));
  if (got) {
    if (p->cur.kind != LM_TOK_INTEGER || p->cur.int_is_min) {
      return expected(p, "a row count (an integer) after OFFSET");
    }
    s->offset = (int64_t)p->cur.uval;
    LM_TRY(advance(p));
  }
  *out = s;
  return LAMINAR_OK;
}

/* [WITH name AS ( query ) [, ...]] select [UNION ALL select ...]: the first
 * select stands for the set (lm_ast_select.union_next); the CTEs are in
 * scope for the rest of this query only. */
static laminar_code parse_query(parser* p, lm_ast_select** out) {
  size_t outer_ncte = p->ncte;
  if (is_kw(&p->cur, "WITH")) {
    LM_TRY(advance(p));
    bool more;
    do {
      const char* name;
      int32_t line, column;
      LM_TRY(parse_name(p, "a name for the WITH query", &name, &line, &column));
      LM_TRY(expect_kw(p, "AS"));
      LM_TRY(expect(p, LM_TOK_LPAREN));
      lm_ast_select* q;
      LM_TRY(enter(p));
      LM_TRY(parse_query(p, &q));
      leave(p);
      LM_TRY(expect(p, LM_TOK_RPAREN));
      PUSH(p, p->ctes, p->ncte, p->cte_cap, ((parser_cte){name, q}));
      LM_TRY(accept(p, LM_TOK_COMMA, &more));
    } while (more);
  }
  LM_TRY(parse_select(p, out));
  lm_ast_select* last = *out;
  while (is_kw(&p->cur, "UNION")) {
    LM_TRY(advance(p));
    if (!is_kw(&p->cur, "ALL")) {
      return fail_at(
          p, LAMINAR_ERR_SQL_UNSUPPORTED, p->cur.line, p->cur.column,
          "UNION without ALL (removing duplicates) is not supported on streams: "
          "write UNION ALL");
    }
    LM_TRY(advance(p));
    LM_TRY(parse_select(p, &last->union_next));
    last = last->union_next;
  }
  p->ncte = outer_ncte;
  return LAMINAR_OK;
}

/* [EMIT (ON WINDOW CLOSE | FINAL | CHANGES)] */
static laminar_code parse_emit(parser* p, lm_emit_mode* out) {
  bool got;
  *out = LM_EMIT_DEFAULT;
  LM_TRY(accept_kw(p, "EMIT", &got));
  if (!got) return LAMINAR_OK;
  LM_TRY(accept_kw(p, "ON", &got));
  if (got) {
    LM_TRY(expect_kw(p, "WINDOW"));
    LM_TRY(expect_kw(p, "CLOSE"));
    *out = LM_EMIT_ON_WINDOW_CLOSE;
    return LAMINAR_OK;
  }
  LM_TRY(accept_kw(p, "FINAL", &got));
  if (got) {
    *out = LM_EMIT_ON_WINDOW_CLOSE;
    return LAMINAR_OK;
  }
  LM_TRY(accept_kw(p, "CHANGES", &got));
  if (got) {
    *out = LM_EMIT_CHANGES;
    return LAMINAR_OK;
  }
  return expected(p, "ON WINDOW CLOSE, FINAL or CHANGES after EMIT");
}

/* ==== statements ==================================================================== */

/* Option value: 'str' | [+|-]number | TRUE | FALSE | INTERVAL ... | ${VAR}. */
static laminar_code parse_option_value(parser* p, lm_ast_expr** out) {
  const lm_token t = p->cur;
  bool ok = t.kind == LM_TOK_STRING || t.kind == LM_TOK_INTEGER ||
            t.kind == LM_TOK_DECIMAL || t.kind == LM_TOK_VARIABLE ||
            t.kind == LM_TOK_MINUS || t.kind == LM_TOK_PLUS || is_kw(&t, "TRUE") ||
            is_kw(&t, "FALSE") || is_kw(&t, "INTERVAL");
  if (!ok) return expected(p, "an option value (a string, number or INTERVAL)");
  LM_TRY(parse_unary(p, out));
  if ((*out)->kind != LM_AST_LITERAL && (*out)->kind != LM_AST_VARIABLE) {
    return fail_at(p, LAMINAR_ERR_SQL_SYNTAX, t.line, t.column,
                   "an option value must be a string, number or INTERVAL");
  }
  return LAMINAR_OK;
}

/* WITH ( key = value [, ...] ) — the current token is WITH. */
static laminar_code parse_options(parser* p, lm_stmt* s) {
  LM_TRY(advance(p));
  LM_TRY(expect(p, LM_TOK_LPAREN));
  size_t cap = 0;
  bool got;
  do {
    lm_ast_option opt = {NULL, NULL};
    if (p->cur.kind == LM_TOK_STRING) {
      LM_TRY(tok_string(p, &p->cur, &opt.key, NULL));
      LM_TRY(advance(p));
    } else {
      /* name[.name]*, folded and joined with '.' */
      const char* key;
      LM_TRY(parse_name(p, "an option name", &key, NULL, NULL));
      size_t len = strlen(key);
      for (;;) {
        LM_TRY(accept(p, LM_TOK_DOT, &got));
        if (!got) break;
        const char* part;
        LM_TRY(parse_name(p, "an option name", &part, NULL, NULL));
        size_t plen = strlen(part);
        char* joined = lm_arena_alloc(p->arena, len + plen + 2);
        if (joined == NULL) return nomem(p);
        memcpy(joined, key, len);
        joined[len] = '.';
        memcpy(joined + len + 1, part, plen + 1);
        key = joined;
        len += plen + 1;
      }
      opt.key = key;
    }
    LM_TRY(expect(p, LM_TOK_EQ));
    LM_TRY(parse_option_value(p, &opt.value));
    PUSH(p, s->options, s->noptions, cap, opt);
    LM_TRY(accept(p, LM_TOK_COMMA, &got));
  } while (got);
  return expect(p, LM_TOK_RPAREN);
}

/* WATERMARK FOR col [AS col [- INTERVAL ...]] — the current token is WATERMARK. */
static laminar_code parse_watermark(parser* p, lm_stmt* s) {
  if (s->has_watermark) {
    return fail_at(p, LAMINAR_ERR_SQL_SYNTAX, p->cur.line, p->cur.column,
                   "a source can have only one WATERMARK clause");
  }
  LM_TRY(advance(p));
  LM_TRY(expect_kw(p, "FOR"));
  LM_TRY(parse_name(p, "the watermark column", &s->watermark_column, &s->wm_line,
                    &s->wm_column));
  s->has_watermark = true;
  s->watermark_delay_ms = 0;
  bool got;
  LM_TRY(accept_kw(p, "AS", &got));
  if (!got) return LAMINAR_OK;
  const lm_token col = p->cur;
  const char* again;
  LM_TRY(parse_name(p, "the watermark column", &again, NULL, NULL));
  if (strcmp(again, s->watermark_column) != 0) {
    return fail_at(p, LAMINAR_ERR_SQL_UNSUPPORTED, col.line, col.column,
                   "the watermark must be '%s' or '%s - INTERVAL ...', not based on '%s'",
                   s->watermark_column, s->watermark_column, again);
  }
  LM_TRY(accept(p, LM_TOK_MINUS, &got));
  if (!got) return LAMINAR_OK;
  if (!is_kw(&p->cur, "INTERVAL")) return expected(p, "'INTERVAL'");
  const lm_token at = p->cur;
  lm_ast_expr* delay;
  LM_TRY(parse_interval(p, &delay));
  if (delay->i < 0) {
    return fail_at(p, LAMINAR_ERR_SQL_SYNTAX, at.line, at.column,
                   "the watermark delay cannot be negative");
  }
  s->watermark_delay_ms = delay->i;
  return LAMINAR_OK;
}

/* One more column of CREATE TABLE's primary key (a name given twice, or a
 * second PRIMARY KEY clause, is a syntax error). */
static laminar_code add_key_column(parser* p, lm_stmt* s, const char* name, int32_t line,
                                   int32_t column) {
  for (size_t i = 0; i < s->npkey; i++) {
    if (strcmp(s->pkey[i], name) == 0) {
      return fail_at(p, LAMINAR_ERR_SQL_SYNTAX, line, column,
                     "column '%s' is in the primary key twice", name);
    }
  }
  size_t n = s->npkey + 1;
  const char** names = lm_arena_alloc(p->arena, n * sizeof *names);
  int32_t* lines = lm_arena_alloc(p->arena, n * sizeof *lines);
  int32_t* cols = lm_arena_alloc(p->arena, n * sizeof *cols);
  if (names == NULL || lines == NULL || cols == NULL) return nomem(p);
  for (size_t i = 0; i < s->npkey; i++) {
    names[i] = s->pkey[i];
    lines[i] = s->pkey_line[i];
    cols[i] = s->pkey_column[i];
  }
  names[s->npkey] = name;
  lines[s->npkey] = line;
  cols[s->npkey] = column;
  s->pkey = names;
  s->pkey_line = lines;
  s->pkey_column = cols;
  s->npkey = n;
  return LAMINAR_OK;
}

/* PRIMARY KEY ( col [, ...] ) inside CREATE TABLE's parentheses. */
static laminar_code parse_primary_key(parser* p, lm_stmt* s) {
  if (s->npkey > 0) {
    return fail_at(p, LAMINAR_ERR_SQL_SYNTAX, p->cur.line, p->cur.column,
                   "a table can have only one PRIMARY KEY");
  }
  LM_TRY(advance(p));
  LM_TRY(expect_kw(p, "KEY"));
  LM_TRY(expect(p, LM_TOK_LPAREN));
  bool got;
  do {
    const char* name;
    int32_t line, column;
    LM_TRY(parse_name(p, "a key column", &name, &line, &column));
    LM_TRY(add_key_column(p, s, name, line, column));
    LM_TRY(accept(p, LM_TOK_COMMA, &got));
  } while (got);
  return expect(p, LM_TOK_RPAREN);
}

/* INSERT INTO name VALUES ( e [, ...] ) [, ( ... ) ...] */
static laminar_code parse_insert(parser* p, lm_stmt* s) {
  s->kind = LM_STMT_INSERT;
  s->object = LM_OBJ_TABLE;
  LM_TRY(advance(p));  // INSERT
  LM_TRY(expect_kw(p, "INTO"));
  LM_TRY(parse_name(p, "a table name", &s->name, &s->name_line, &s->name_column));
  if (is_kw(&p->cur, "SELECT") || is_kw(&p->cur, "WITH")) {
    LM_TRY(parse_query(p, &s->select)); /* INSERT INTO name SELECT ... */
    if (is_kw(&p->cur, "EMIT")) {
      return fail_at(p, LAMINAR_ERR_SQL_UNSUPPORTED, p->cur.line, p->cur.column,
                     "INSERT INTO ... SELECT runs once over the current rows: it takes "
                     "no EMIT (a table fed continuously is CREATE TABLE ... AS SELECT)");
    }
    return LAMINAR_OK;
  }
  if (!is_kw(&p->cur, "VALUES")) {
    if (p->cur.kind == LM_TOK_LPAREN) {
      return fail_at(p, LAMINAR_ERR_SQL_UNSUPPORTED, p->cur.line, p->cur.column,
                     "INSERT INTO takes VALUES (...) or a SELECT in this version (no "
                     "column list)");
    }
    return expected(p, "VALUES or SELECT");
  }
  LM_TRY(advance(p));
  size_t cap = 0, count = 0;
  bool more;
  do {
    LM_TRY(expect(p, LM_TOK_LPAREN));
    lm_ast_expr** row;
    size_t n;
    LM_TRY(parse_expr_list(p, &row, &n));
    if (s->nrows == 0) {
      s->nvalues = n;
    } else if (n != s->nvalues) {
      return fail_at(p, LAMINAR_ERR_SQL_SYNTAX, row[0]->line, row[0]->column,
                     "every VALUES row needs %zu values, this one has %zu", s->nvalues,
                     n);
    }
    for (size_t i = 0; i < n; i++) PUSH(p, s->values, count, cap, row[i]);
    s->nrows++;
    LM_TRY(expect(p, LM_TOK_RPAREN));
    LM_TRY(accept(p, LM_TOK_COMMA, &more));
  } while (more);
  return LAMINAR_OK;
}

/* DELETE FROM name [WHERE e] */
static laminar_code parse_delete(parser* p, lm_stmt* s) {
  s->kind = LM_STMT_DELETE;
  s->object = LM_OBJ_TABLE;
  LM_TRY(advance(p));  // DELETE
  LM_TRY(expect_kw(p, "FROM"));
  LM_TRY(parse_name(p, "a table name", &s->name, &s->name_line, &s->name_column));
  bool got;
  LM_TRY(accept_kw(p, "WHERE", &got));
  if (got) LM_TRY(parse_expr(p, &s->where));
  return LAMINAR_OK;
}

/* ( coldef | watermark [, ...] ) [WITH (...)] after CREATE SOURCE name. */
static laminar_code parse_source_body(parser* p, lm_stmt* s) {
  const lm_token open = p->cur;
  LM_TRY(expect(p, LM_TOK_LPAREN));
  size_t cap = 0;
  bool got;
  do {
    if (is_kw(&p->cur, "WATERMARK")) {
      LM_TRY(parse_watermark(p, s));
    } else if (s->kind == LM_STMT_CREATE_TABLE && is_kw(&p->cur, "PRIMARY")) {
      LM_TRY(parse_primary_key(p, s));
    } else {
      lm_ast_column_def col = {NULL, LM_SQL_TYPE_STRING, false, 0, 0};
      LM_TRY(
          parse_name(p, "a column name or WATERMARK", &col.name, &col.line, &col.column));
      LM_TRY(parse_type(p, col.name, &col.type));
      LM_TRY(accept_kw(p, "NOT", &got));
      if (got) {
        LM_TRY(expect_kw(p, "NULL"));
        col.not_null = true;
      } else {
        LM_TRY(accept_kw(p, "NULL", &got));
      }
      PUSH(p, s->columns, s->ncolumns, cap, col);
      if (s->kind == LM_STMT_CREATE_TABLE && is_kw(&p->cur, "PRIMARY")) {
        /* k BIGINT PRIMARY KEY: the key is that one column */
        const lm_token at = p->cur;
        LM_TRY(advance(p));
        LM_TRY(expect_kw(p, "KEY"));
        LM_TRY(add_key_column(p, s, col.name, at.line, at.column));
      }
    }
    LM_TRY(accept(p, LM_TOK_COMMA, &got));
  } while (got);
  if (p->cur.kind != LM_TOK_RPAREN) {
    return expected(p, "',' or ')'");
  }
  if (s->ncolumns == 0) {
    return fail_at(p, LAMINAR_ERR_SQL_SYNTAX, open.line, open.column,
                   "%s '%s' needs at least one column",
                   s->kind == LM_STMT_CREATE_TABLE ? "table" : "source", s->name);
  }
  LM_TRY(advance(p));
  if (s->kind == LM_STMT_CREATE_TABLE && s->npkey == 0 && !is_kw(&p->cur, "AS") &&
      !is_kw(&p->cur, "PRIMARY")) {
    return fail_at(p, LAMINAR_ERR_SQL_SYNTAX, open.line, open.column,
                   "table '%s' needs a PRIMARY KEY (col [, ...])", s->name);
  }
  if (is_kw(&p->cur, "WITH")) LM_TRY(parse_options(p, s));
  return LAMINAR_OK;
}

/* CREATE TABLE name [( columns )] [PRIMARY KEY ( col [, ...] )] AS query
 * [emit] [WITH ( option [, ...] )]: a table fed by its query. The key is in
 * the column list or after the name, in one of the two. */
static laminar_code parse_table_query(parser* p, lm_stmt* s) {
  if (p->cur.kind == LM_TOK_LPAREN) {
    LM_TRY(parse_source_body(p, s));
    if (!is_kw(&p->cur, "AS") && !is_kw(&p->cur, "PRIMARY"))
      return LAMINAR_OK; /* a table written by INSERT */
    if (s->noptions > 0) {
      return fail_at(p, LAMINAR_ERR_SQL_SYNTAX, s->options[0].value->line,
                     s->options[0].value->column,
                     "table '%s': the WITH (...) of CREATE TABLE ... AS goes after its "
                     "query",
                     s->name);
    }
    if (s->has_watermark) {
      return fail_at(p, LAMINAR_ERR_SQL_UNSUPPORTED, s->wm_line, s->wm_column,
                     "table '%s': a table fed by a query takes no WATERMARK (its rows "
                     "come from the query, in its input's time)",
                     s->name);
    }
  }
  if (is_kw(&p->cur, "PRIMARY")) {
    if (s->npkey > 0) {
      return fail_at(p, LAMINAR_ERR_SQL_SYNTAX, p->cur.line, p->cur.column,
                     "a table can have only one PRIMARY KEY");
    }
    LM_TRY(parse_primary_key(p, s));
  }
  if (!is_kw(&p->cur, "AS")) {
    return expected(p, s->ncolumns > 0 ? "AS" : "'(', PRIMARY KEY or AS");
  }
  if (s->npkey == 0) {
    return fail_at(p, LAMINAR_ERR_SQL_SYNTAX, p->cur.line, p->cur.column,
                   "table '%s' needs a PRIMARY KEY: in its column list or as "
                   "CREATE TABLE %s PRIMARY KEY (col [, ...]) AS SELECT ...",
                   s->name, s->name);
  }
  LM_TRY(advance(p)); /* AS */
  LM_TRY(parse_query(p, &s->select));
  if (is_kw(&p->cur, "EMIT")) {
    s->emit_line = p->cur.line;
    s->emit_column = p->cur.column;
  }
  LM_TRY(parse_emit(p, &s->emit));
  if (is_kw(&p->cur, "WITH")) LM_TRY(parse_options(p, s));
  return LAMINAR_OK;
}

/* IF NOT EXISTS */
static laminar_code parse_if_not_exists(parser* p, bool* out) {
  LM_TRY(accept_kw(p, "IF", out));
  if (!*out) return LAMINAR_OK;
  LM_TRY(expect_kw(p, "NOT"));
  return expect_kw(p, "EXISTS");
}

static laminar_code parse_create(parser* p, lm_stmt* s) {
  LM_TRY(advance(p));  // CREATE
  bool got;
  LM_TRY(accept_kw(p, "OR", &got));
  if (got) {
    LM_TRY(expect_kw(p, "REPLACE"));
    s->or_replace = true;
  }
  const lm_token what = p->cur;
  if (is_kw(&what, "SOURCE")) {
    s->kind = LM_STMT_CREATE_SOURCE;
    s->object = LM_OBJ_SOURCE;
  } else if (is_kw(&what, "STREAM")) {
    s->kind = LM_STMT_CREATE_STREAM;
    s->object = LM_OBJ_STREAM;
  } else if (is_kw(&what, "MATERIALIZED")) {
    LM_TRY(advance(p));
    if (!is_kw(&p->cur, "VIEW")) return expected(p, "'VIEW'");
    s->kind = LM_STMT_CREATE_STREAM;
    s->object = LM_OBJ_VIEW;
    s->materialized = true;
  } else if (is_kw(&what, "VIEW")) {
    s->kind = LM_STMT_CREATE_STREAM;
    s->object = LM_OBJ_VIEW;
  } else if (is_kw(&what, "SINK")) {
    s->kind = LM_STMT_CREATE_SINK;
    s->object = LM_OBJ_SINK;
  } else if (is_kw(&what, "TABLE")) {
    s->kind = LM_STMT_CREATE_TABLE;
    s->object = LM_OBJ_TABLE;
  } else {
    return expected(p, "SOURCE, TABLE, STREAM, MATERIALIZED VIEW or SINK after CREATE");
  }
  LM_TRY(advance(p));
  LM_TRY(parse_if_not_exists(p, &s->if_not_exists));
  LM_TRY(parse_name(p, "a name", &s->name, &s->name_line, &s->name_column));
  switch (s->kind) {
    case LM_STMT_CREATE_SOURCE: return parse_source_body(p, s);
    case LM_STMT_CREATE_TABLE: return parse_table_query(p, s);
    case LM_STMT_CREATE_SINK:
      LM_TRY(expect_kw(p, "FROM"));
      LM_TRY(parse_name(p, "a stream name", &s->sink_from, &s->sink_from_line,
                        &s->sink_from_column));
      if (is_kw(&p->cur, "INTO")) {
        LM_TRY(advance(p));
        if (!is_kw(&p->cur, "FILE")) return expected(p, "FILE after INTO");
        s->sink_into_file = true;
        return parse_options(
            p, s); /* FILE ( key = value, ... ): FILE stands where WITH does */
      }
      if (is_kw(&p->cur, "WITH")) LM_TRY(parse_options(p, s));
      return LAMINAR_OK;
    default:
      LM_TRY(expect_kw(p, "AS"));
      LM_TRY(parse_query(p, &s->select));
      if (is_kw(&p->cur, "EMIT")) {
        s->emit_line = p->cur.line;
        s->emit_column = p->cur.column;
      }
      LM_TRY(parse_emit(p, &s->emit));
      if (is_kw(&p->cur, "WITH"))
        LM_TRY(parse_options(p, s)); /* WITH (allowed_lateness = ..) */
      return LAMINAR_OK;
  }
}

/* The object word after DROP: SOURCE | STREAM | VIEW | MATERIALIZED VIEW | SINK |
 * FUNCTION, or its plural after SHOW. */
static laminar_code parse_object_kind(parser* p, bool plural, lm_stmt* s) {
  static const struct {
    const char* one;
    const char* many;
    lm_object_kind kind;
  } words[] = {
      {"SOURCE", "SOURCES", LM_OBJ_SOURCE}, {"STREAM", "STREAMS", LM_OBJ_STREAM},
      {"VIEW", "VIEWS", LM_OBJ_VIEW},       {"SINK", "SINKS", LM_OBJ_SINK},
      {"TABLE", "TABLES", LM_OBJ_TABLE},    {"FUNCTION", "FUNCTIONS", LM_OBJ_FUNCTION}};
  bool got;
  LM_TRY(accept_kw(p, "MATERIALIZED", &got));
  if (got) {
    LM_TRY(expect_kw(p, plural ? "VIEWS" : "VIEW"));
    s->object = LM_OBJ_VIEW;
    s->materialized = true;
    return LAMINAR_OK;
  }
  for (size_t i = 0; i < sizeof words / sizeof words[0]; i++) {
    if (is_kw(&p->cur, plural ? words[i].many : words[i].one)) {
      s->object = words[i].kind;
      return advance(p);
    }
  }
  return expected(p, plural ? "SOURCES, TABLES, STREAMS, VIEWS, SINKS or FUNCTIONS"
                            : "SOURCE, TABLE, STREAM, VIEW, MATERIALIZED VIEW, SINK or "
                              "FUNCTION");
}

static laminar_code parse_statement(parser* p, lm_stmt** out);

static laminar_code parse_statement_inner(parser* p, lm_stmt* s) {
  const lm_token t = p->cur;
  bool got;
  if (is_kw(&t, "CREATE")) return parse_create(p, s);
  if (is_kw(&t, "DROP")) {
    s->kind = LM_STMT_DROP;
    LM_TRY(advance(p));
    LM_TRY(parse_object_kind(p, false, s));
    LM_TRY(accept_kw(p, "IF", &got));
    if (got) {
      LM_TRY(expect_kw(p, "EXISTS"));
      s->if_exists = true;
    }
    return parse_name(p, "a name", &s->name, &s->name_line, &s->name_column);
  }
  if (is_kw(&t, "INSERT")) return parse_insert(p, s);
  if (is_kw(&t, "DELETE")) return parse_delete(p, s);
  if (is_kw(&t, "SHOW")) {
    s->kind = LM_STMT_SHOW;
    LM_TRY(advance(p));
    return parse_object_kind(p, true, s);
  }
  if (is_kw(&t, "DESCRIBE") || is_kw(&t, "DESC")) {
    s->kind = LM_STMT_DESCRIBE;
    LM_TRY(advance(p));
    return parse_name(p, "a name", &s->name, &s->name_line, &s->name_column);
  }
  if (is_kw(&t, "EXPLAIN")) {
    s->kind = LM_STMT_EXPLAIN;
    LM_TRY(advance(p));
    /* EXPLAIN name (a stream or view; statement words are reserved) */
    if (is_name_token(&p->cur)) {
      return parse_name(p, "a stream or view name", &s->name, &s->name_line,
                        &s->name_column);
    }
    return parse_statement(p, &s->inner);
  }
  if (is_kw(&t, "SELECT") || is_kw(&t, "WITH")) {
    s->kind = LM_STMT_SELECT;
    LM_TRY(parse_query(p, &s->select));
    return parse_emit(p, &s->emit);
  }
  return expected(p,
                  "a statement (CREATE, DROP, INSERT, DELETE, SHOW, DESCRIBE, EXPLAIN or "
                  "SELECT)");
}

static laminar_code parse_statement(parser* p, lm_stmt** out) {
  LM_TRY(enter(p));
  lm_stmt* s = lm_arena_alloc(p->arena, sizeof *s);
  if (s == NULL) return nomem(p);
  s->line = p->cur.line;
  s->column = p->cur.column;
  s->text_offset = p->cur.offset;
  LM_TRY(parse_statement_inner(p, s));
  s->text_len = p->last_end - s->text_offset;
  leave(p);
  *out = s;
  return LAMINAR_OK;
}

/* ==== entry point =================================================================== */

laminar_code lm_sql_parse(lm_arena* arena, const char* sql, lm_stmt*** out,
                          size_t* out_count, laminar_error* err) {
  if (out != NULL) *out = NULL;
  if (out_count != NULL) *out_count = 0;
  if (arena == NULL || sql == NULL || out == NULL || out_count == NULL) {
    return lm_error_set(err, LAMINAR_ERR_MISUSE, "lm_sql_parse: NULL argument");
  }
  parser p;
  memset(&p, 0, sizeof p);
  p.arena = arena;
  p.err = err;
  lm_lexer_init(&p.lex, sql, strlen(sql));
  LM_TRY(lm_lexer_next(&p.lex, &p.cur, err));

  lm_stmt** stmts = NULL;
  size_t n = 0, cap = 0;
  for (;;) {
    while (p.cur.kind == LM_TOK_SEMICOLON) LM_TRY(advance(&p));
    if (p.cur.kind == LM_TOK_EOF) break;
    p.in_stmt = true;
    p.stmt_start = p.cur.offset;
    p.stmt_line = p.cur.line;
    p.stmt_column = p.cur.column;
    lm_stmt* s = NULL;
    LM_TRY(parse_statement(&p, &s));
    p.in_stmt = false;
    PUSH(&p, stmts, n, cap, s);
    if (p.cur.kind != LM_TOK_SEMICOLON && p.cur.kind != LM_TOK_EOF) {
      return expected(&p, "';' or the end of the statement");
    }
  }
  *out = stmts;
  *out_count = n;
  return LAMINAR_OK;
}
