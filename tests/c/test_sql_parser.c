/*
 * test_sql_parser.c -- white-box tests of the SQL front end (src/sql/lexer.c,
 * parser.c): every statement form parses to the expected tree, operator
 * precedence, identifiers and comments, exact error positions, the depth and
 * size limits, and a seeded mutation run that must never crash.
 */
#include <stdalign.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>

#include "lm_test.h"
#include "sql/sql.h"
#include "util/util.h"

/* ---- helpers ---------------------------------------------------------------------- */

/* Parse `sql` into a fresh arena; the caller destroys *arena. */
static laminar_code parse(const char* sql, lm_arena** arena, lm_stmt*** stmts, size_t* n,
                          laminar_error* err) {
  if (lm_arena_create(arena) != LAMINAR_OK) return LAMINAR_ERR_NOMEM;
  lm_error_clear(err);
  return lm_sql_parse(*arena, sql, stmts, n, err);
}

/* Parse exactly one statement; NULL (and a printed reason) otherwise. */
static lm_stmt* parse_one(const char* sql, lm_arena** arena) {
  lm_stmt** stmts = NULL;
  size_t n = 0;
  laminar_error err;
  laminar_code rc = parse(sql, arena, &stmts, &n, &err);
  if (rc != LAMINAR_OK) {
    fprintf(stderr, "parse failed (%d): %s\n  sql: %s\n", (int)rc, err.message, sql);
    return NULL;
  }
  if (n != 1) {
    fprintf(stderr, "expected 1 statement, got %zu\n  sql: %s\n", n, sql);
    return NULL;
  }
  return stmts[0];
}

typedef struct strbuf {
  char buf[4096];
  size_t len;
} strbuf;

static void sb_add(strbuf* sb, const char* fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void sb_add(strbuf* sb, const char* fmt, ...) {
  if (sb->len >= sizeof sb->buf) return;
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(sb->buf + sb->len, sizeof sb->buf - sb->len, fmt, ap);
  va_end(ap);
  if (n > 0) sb->len += (size_t)n;
  if (sb->len > sizeof sb->buf) sb->len = sizeof sb->buf;
}

static const char* op_sym(lm_ast_op op) {
  static const char* const syms[] = {"+",  "-",  "*",   "/",   "%",  "=",
                                     "<>", "<",  "<=",  ">",   ">=", "and",
                                     "or", "||", "not", "neg", "pos"};
  return (size_t)op < sizeof syms / sizeof syms[0] ? syms[op] : "?";
}

/* S-expression of an expression tree, for compact shape assertions. */
static void dump(strbuf* sb, const lm_ast_expr* e) {
  if (e == NULL) {
    sb_add(sb, "<null>");
    return;
  }
  switch (e->kind) {
    case LM_AST_LITERAL:
      switch (e->lit) {
        case LM_LIT_NULL: sb_add(sb, "NULL"); break;
        case LM_LIT_BOOL: sb_add(sb, e->b ? "TRUE" : "FALSE"); break;
        case LM_LIT_INT: sb_add(sb, "%lld", (long long)e->i); break;
        case LM_LIT_DOUBLE: sb_add(sb, "%gd", e->d); break;
        case LM_LIT_STRING: sb_add(sb, "'%s'", e->s); break;
        case LM_LIT_INTERVAL: sb_add(sb, "%lldms", (long long)e->i); break;
      }
      break;
    case LM_AST_COLUMN:
      if (e->table) sb_add(sb, "%s.", e->table);
      sb_add(sb, "%s", e->name);
      break;
    case LM_AST_UNARY:
      sb_add(sb, "(%s ", op_sym(e->op));
      dump(sb, e->left);
      sb_add(sb, ")");
      break;
    case LM_AST_BINARY:
      sb_add(sb, "(%s ", op_sym(e->op));
      dump(sb, e->left);
      sb_add(sb, " ");
      dump(sb, e->right);
      sb_add(sb, ")");
      break;
    case LM_AST_IS_NULL:
      sb_add(sb, e->negated ? "(notnull " : "(isnull ");
      dump(sb, e->left);
      sb_add(sb, ")");
      break;
    case LM_AST_BETWEEN:
    case LM_AST_IN:
      sb_add(sb, "(%s%s ", e->negated ? "not" : "",
             e->kind == LM_AST_IN ? "in" : "between");
      dump(sb, e->left);
      for (size_t i = 0; i < e->nlist; i++) {
        sb_add(sb, " ");
        dump(sb, e->list[i]);
      }
      sb_add(sb, ")");
      break;
    case LM_AST_LIKE:
      sb_add(sb, "(%slike ", e->negated ? "not" : "");
      dump(sb, e->left);
      sb_add(sb, " ");
      dump(sb, e->right);
      sb_add(sb, ")");
      break;
    case LM_AST_CASE:
      sb_add(sb, "(case");
      if (e->operand) {
        sb_add(sb, " ");
        dump(sb, e->operand);
      }
      for (size_t i = 0; i < e->nwhen; i++) {
        sb_add(sb, " (when ");
        dump(sb, e->whens[i]);
        sb_add(sb, " ");
        dump(sb, e->thens[i]);
        sb_add(sb, ")");
      }
      if (e->else_expr) {
        sb_add(sb, " (else ");
        dump(sb, e->else_expr);
        sb_add(sb, ")");
      }
      sb_add(sb, ")");
      break;
    case LM_AST_CAST:
      sb_add(sb, "(cast ");
      dump(sb, e->left);
      sb_add(sb, " %s)", lm_sql_type_name(e->cast_type));
      break;
    case LM_AST_FUNCTION:
      sb_add(sb, "%s(%s", e->fname, e->distinct ? "distinct " : "");
      if (e->star) sb_add(sb, "*");
      for (size_t i = 0; i < e->nargs; i++) {
        if (i) sb_add(sb, ", ");
        dump(sb, e->args[i]);
      }
      sb_add(sb, ")");
      break;
    case LM_AST_STAR:
      if (e->table) sb_add(sb, "%s.", e->table);
      sb_add(sb, "*");
      break;
    case LM_AST_VARIABLE: sb_add(sb, "${%s}", e->name); break;
  }
}

/* Parse "SELECT <expr> FROM t" and compare the dump of the expression. */
static int expr_is(const char* expr, const char* want) {
  char sql[1024];
  snprintf(sql, sizeof sql, "SELECT %s FROM t", expr);
  lm_arena* arena = NULL;
  lm_stmt* s = parse_one(sql, &arena);
  int ok = 0;
  if (s != NULL && s->kind == LM_STMT_SELECT && s->select->nitems == 1) {
    strbuf sb = {{0}, 0};
    dump(&sb, s->select->items[0].expr);
    ok = strcmp(sb.buf, want) == 0;
    if (!ok) fprintf(stderr, "expr %s\n  got  %s\n  want %s\n", expr, sb.buf, want);
  }
  lm_arena_destroy(arena);
  return ok;
}

/* Expect `sql` to fail with `code` at line:column and a message containing
 * `needle` (NULL = any). */
static int fails_at(const char* sql, laminar_code code, int32_t line, int32_t column,
                    const char* needle) {
  lm_arena* arena = NULL;
  lm_stmt** stmts = (lm_stmt**)&arena;  // poisoned: must be reset to NULL
  size_t n = 99;
  laminar_error err;
  laminar_code rc = parse(sql, &arena, &stmts, &n, &err);
  int ok = rc == code && err.code == code && err.line == line && err.column == column &&
           stmts == NULL && n == 0 &&
           (needle == NULL || strstr(err.message, needle) != NULL);
  char prefix[16];
  snprintf(prefix, sizeof prefix, "LDB-%04d: ", (int)code);
  if (strncmp(err.message, prefix, strlen(prefix)) != 0) ok = 0;
  if (!ok) {
    fprintf(stderr,
            "sql: %s\n  got  %d at %d:%d \"%s\"\n  want %d at %d:%d containing \"%s\"\n",
            sql, (int)rc, (int)err.line, (int)err.column, err.message, (int)code,
            (int)line, (int)column, needle ? needle : "");
  }
  lm_arena_destroy(arena);
  return ok;
}

/* CHECK_CODE wants a pointer; passing &local directly trips -Waddress. */
static const laminar_error* errp(const laminar_error* e) { return e; }

static bool streq(const char* a, const char* b) {
  return a != NULL && b != NULL && strcmp(a, b) == 0;
}

/* ---- the DESIGN §1 quick start ---------------------------------------------------- */

static const char quickstart[] =
    "\n"
    "  CREATE SOURCE trades (symbol VARCHAR NOT NULL, price DOUBLE, volume BIGINT, ts "
    "BIGINT,\n"
    "                        WATERMARK FOR ts AS ts - INTERVAL '100' MILLISECOND);\n"
    "  CREATE STREAM vwap AS\n"
    "    SELECT symbol, window_start, SUM(price * volume) / SUM(volume) AS vwap, "
    "COUNT(*) AS n\n"
    "    FROM trades GROUP BY symbol, tumble(ts, INTERVAL '1' SECOND)\n"
    "    EMIT ON WINDOW CLOSE;\n";

static int test_quickstart(void) {
  lm_arena* arena;
  lm_stmt** st;
  size_t n;
  laminar_error err;
  CHECK_CODE(parse(quickstart, &arena, &st, &n, &err), LAMINAR_OK, errp(&err));
  CHECK(n == 2);

  const lm_stmt* src = st[0];
  CHECK(src->kind == LM_STMT_CREATE_SOURCE);
  EXPECT(src->object == LM_OBJ_SOURCE);
  EXPECT(streq(src->name, "trades"));
  EXPECT(src->line == 2 && src->column == 3);
  EXPECT(src->name_line == 2 && src->name_column == 17);
  CHECK(src->ncolumns == 4);
  EXPECT(streq(src->columns[0].name, "symbol") &&
         src->columns[0].type == LM_SQL_TYPE_STRING && src->columns[0].not_null);
  EXPECT(streq(src->columns[1].name, "price") &&
         src->columns[1].type == LM_SQL_TYPE_DOUBLE && !src->columns[1].not_null);
  EXPECT(streq(src->columns[2].name, "volume") &&
         src->columns[2].type == LM_SQL_TYPE_INT64);
  EXPECT(streq(src->columns[3].name, "ts") && src->columns[3].type == LM_SQL_TYPE_INT64);
  EXPECT(src->columns[3].line == 2 && src->columns[3].column == 79);
  EXPECT(src->has_watermark && streq(src->watermark_column, "ts"));
  EXPECT(src->watermark_delay_ms == 100);
  EXPECT(src->wm_line == 3 && src->wm_column == 39);
  EXPECT(src->noptions == 0);
  /* The span runs from CREATE to the closing ')', without the ';'. */
  EXPECT(strncmp(quickstart + src->text_offset, "CREATE SOURCE trades", 20) == 0);
  EXPECT(quickstart[src->text_offset + src->text_len - 1] == ')');
  EXPECT(quickstart[src->text_offset + src->text_len] == ';');

  const lm_stmt* s = st[1];
  CHECK(s->kind == LM_STMT_CREATE_STREAM);
  EXPECT(s->object == LM_OBJ_STREAM && !s->materialized);
  EXPECT(streq(s->name, "vwap"));
  EXPECT(s->line == 4 && s->column == 3);
  EXPECT(s->emit == LM_EMIT_ON_WINDOW_CLOSE);
  EXPECT(strncmp(quickstart + s->text_offset, "CREATE STREAM vwap", 18) == 0);
  EXPECT(s->text_offset + s->text_len == sizeof quickstart - 3);  // before ";\n"
  const lm_ast_select* sel = s->select;
  CHECK(sel != NULL && sel->nitems == 4);
  EXPECT(streq(sel->from, "trades") && sel->from_alias == NULL);
  EXPECT(sel->from_line == 6 && sel->from_column == 10);
  strbuf sb = {{0}, 0};
  for (size_t i = 0; i < sel->nitems; i++) {
    dump(&sb, sel->items[i].expr);
    sb_add(&sb, "%s%s;", sel->items[i].alias ? " AS " : "",
           sel->items[i].alias ? sel->items[i].alias : "");
  }
  EXPECT(strcmp(sb.buf,
                "symbol;window_start;(/ sum((* price volume)) sum(volume)) AS vwap;"
                "count(*) AS n;") == 0);
  CHECK(sel->ngroup == 2);
  sb.len = 0;
  sb.buf[0] = '\0';
  dump(&sb, sel->group_by[0]);
  sb_add(&sb, ";");
  dump(&sb, sel->group_by[1]);
  EXPECT(strcmp(sb.buf, "symbol;tumble(ts, 1000ms)") == 0);
  EXPECT(sel->group_by[1]->line == 6 && sel->group_by[1]->column == 34);
  EXPECT(sel->where == NULL && sel->having == NULL && sel->norder == 0 &&
         sel->limit == -1);
  EXPECT(!sel->distinct);
  lm_arena_destroy(arena);
  return 0;
}

/* ---- CREATE SOURCE ---------------------------------------------------------------- */

static int test_create_source_types(void) {
  static const struct {
    const char* name;
    lm_sql_type type;
  } cases[] = {
      {"VARCHAR", LM_SQL_TYPE_STRING},      {"varchar(20)", LM_SQL_TYPE_STRING},
      {"TEXT", LM_SQL_TYPE_STRING},         {"String", LM_SQL_TYPE_STRING},
      {"BIGINT", LM_SQL_TYPE_INT64},        {"INT8", LM_SQL_TYPE_INT64},
      {"LONG", LM_SQL_TYPE_INT64},          {"INT", LM_SQL_TYPE_INT32},
      {"INTEGER", LM_SQL_TYPE_INT32},       {"int4", LM_SQL_TYPE_INT32},
      {"DOUBLE", LM_SQL_TYPE_DOUBLE},       {"DOUBLE PRECISION", LM_SQL_TYPE_DOUBLE},
      {"FLOAT8", LM_SQL_TYPE_DOUBLE},       {"FLOAT", LM_SQL_TYPE_DOUBLE},
      {"BOOLEAN", LM_SQL_TYPE_BOOL},        {"bool", LM_SQL_TYPE_BOOL},
      {"TIMESTAMP", LM_SQL_TYPE_TIMESTAMP}, {"TIMESTAMP(3)", LM_SQL_TYPE_TIMESTAMP},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    char sql[128];
    snprintf(sql, sizeof sql, "CREATE SOURCE s (c %s NOT NULL, d %s NULL, e %s)",
             cases[i].name, cases[i].name, cases[i].name);
    lm_arena* arena;
    lm_stmt* s = parse_one(sql, &arena);
    CHECK(s != NULL);
    CHECK(s->ncolumns == 3);
    EXPECT(s->columns[0].type == cases[i].type && s->columns[0].not_null);
    EXPECT(s->columns[1].type == cases[i].type && !s->columns[1].not_null);
    EXPECT(s->columns[2].type == cases[i].type && !s->columns[2].not_null);
    EXPECT(!s->has_watermark && s->watermark_column == NULL);
    lm_arena_destroy(arena);
  }
  EXPECT(strcmp(lm_sql_type_name(LM_SQL_TYPE_STRING), "VARCHAR") == 0);
  EXPECT(strcmp(lm_sql_type_name(LM_SQL_TYPE_INT64), "BIGINT") == 0);
  EXPECT(strcmp(lm_sql_type_name(LM_SQL_TYPE_INT32), "INT") == 0);
  EXPECT(strcmp(lm_sql_type_name(LM_SQL_TYPE_DOUBLE), "DOUBLE") == 0);
  EXPECT(strcmp(lm_sql_type_name(LM_SQL_TYPE_BOOL), "BOOLEAN") == 0);
  EXPECT(strcmp(lm_sql_type_name(LM_SQL_TYPE_TIMESTAMP), "TIMESTAMP") == 0);
  return 0;
}

static int test_create_source_options(void) {
  lm_arena* arena;
  lm_stmt* s = parse_one(
      "create or replace source if not exists \"Ticks\" (\n"
      "  watermark for ts, ts timestamp, v double)\n"
      "with (buffer_size = 1024, 'connector' = 'kafka', kafka.Topic = 'x''y', lag = "
      "INTERVAL "
      "'2 minutes', ratio = -0.5, on_error = ${MODE}, strict = true)",
      &arena);
  CHECK(s != NULL);
  EXPECT(s->kind == LM_STMT_CREATE_SOURCE && s->or_replace && s->if_not_exists);
  EXPECT(streq(s->name, "Ticks"));
  CHECK(s->ncolumns == 2);
  EXPECT(streq(s->columns[0].name, "ts") && s->columns[0].type == LM_SQL_TYPE_TIMESTAMP);
  EXPECT(s->has_watermark && streq(s->watermark_column, "ts") &&
         s->watermark_delay_ms == 0);
  EXPECT(s->wm_line == 2 && s->wm_column == 17);
  CHECK(s->noptions == 7);
  EXPECT(streq(s->options[0].key, "buffer_size"));
  EXPECT(s->options[0].value->lit == LM_LIT_INT && s->options[0].value->i == 1024);
  EXPECT(s->options[0].value->line == 3 && s->options[0].value->column == 21);
  EXPECT(streq(s->options[1].key, "connector") && streq(s->options[1].value->s, "kafka"));
  EXPECT(streq(s->options[2].key, "kafka.topic") && streq(s->options[2].value->s, "x'y"));
  EXPECT(s->options[2].value->slen == 3);
  EXPECT(streq(s->options[3].key, "lag") && s->options[3].value->lit == LM_LIT_INTERVAL &&
         s->options[3].value->i == 120000);
  EXPECT(s->options[4].value->lit == LM_LIT_DOUBLE && s->options[4].value->d == -0.5);
  EXPECT(s->options[5].value->kind == LM_AST_VARIABLE &&
         streq(s->options[5].value->name, "MODE"));
  EXPECT(s->options[6].value->lit == LM_LIT_BOOL && s->options[6].value->b);
  lm_arena_destroy(arena);

  /* Watermark in the middle, other units, string-form interval. */
  s = parse_one(
      "CREATE SOURCE a (x INT, WATERMARK FOR t AS t - INTERVAL '5 seconds', t BIGINT)",
      &arena);
  CHECK(s != NULL);
  EXPECT(s->ncolumns == 2 && s->watermark_delay_ms == 5000);
  lm_arena_destroy(arena);
  s = parse_one("CREATE SOURCE a (t BIGINT, WATERMARK FOR t AS t - INTERVAL '2' HOURS)",
                &arena);
  CHECK(s != NULL);
  EXPECT(s->watermark_delay_ms == 7200000);
  lm_arena_destroy(arena);
  s = parse_one("CREATE SOURCE a (t BIGINT, WATERMARK FOR t AS t)", &arena);
  CHECK(s != NULL);
  EXPECT(s->has_watermark && s->watermark_delay_ms == 0);
  lm_arena_destroy(arena);
  return 0;
}

/* ---- CREATE STREAM / VIEW / SINK, SELECT ------------------------------------------ */

static int test_create_stream_forms(void) {
  lm_arena* arena;
  lm_stmt* s = parse_one(
      "CREATE MATERIALIZED VIEW IF NOT EXISTS mv AS SELECT DISTINCT t.a AS x, b y, t.*, "
      "* "
      "FROM src AS t WHERE a > 1 GROUP BY a, b HAVING COUNT(DISTINCT b) > 2 "
      "ORDER BY x DESC, y ASC, a LIMIT 10 EMIT CHANGES",
      &arena);
  CHECK(s != NULL);
  EXPECT(s->kind == LM_STMT_CREATE_STREAM && s->object == LM_OBJ_VIEW && s->materialized);
  EXPECT(s->if_not_exists && !s->or_replace && streq(s->name, "mv"));
  EXPECT(s->emit == LM_EMIT_CHANGES);
  const lm_ast_select* q = s->select;
  CHECK(q != NULL && q->nitems == 4);
  EXPECT(q->distinct);
  EXPECT(q->items[0].expr->kind == LM_AST_COLUMN && streq(q->items[0].expr->table, "t") &&
         streq(q->items[0].expr->name, "a") && streq(q->items[0].alias, "x"));
  EXPECT(streq(q->items[1].alias, "y"));
  EXPECT(q->items[2].expr->kind == LM_AST_STAR && streq(q->items[2].expr->table, "t"));
  EXPECT(q->items[3].expr->kind == LM_AST_STAR && q->items[3].expr->table == NULL &&
         q->items[3].alias == NULL);
  EXPECT(streq(q->from, "src") && streq(q->from_alias, "t"));
  CHECK(q->where != NULL && q->ngroup == 2 && q->having != NULL);
  strbuf sb = {{0}, 0};
  dump(&sb, q->having);
  EXPECT(strcmp(sb.buf, "(> count(distinct b) 2)") == 0);
  CHECK(q->norder == 3);
  EXPECT(q->order_by[0].desc && !q->order_by[1].desc && !q->order_by[2].desc);
  EXPECT(q->limit == 10);
  lm_arena_destroy(arena);

  s = parse_one("create view v as select a from s emit final", &arena);
  CHECK(s != NULL);
  EXPECT(s->kind == LM_STMT_CREATE_STREAM && s->object == LM_OBJ_VIEW &&
         !s->materialized);
  EXPECT(s->emit == LM_EMIT_ON_WINDOW_CLOSE);
  lm_arena_destroy(arena);

  s = parse_one("CREATE OR REPLACE STREAM s2 AS SELECT a FROM s1 f", &arena);
  CHECK(s != NULL);
  EXPECT(s->or_replace && s->emit == LM_EMIT_DEFAULT &&
         streq(s->select->from_alias, "f"));
  lm_arena_destroy(arena);

  s = parse_one("CREATE SINK out1 FROM vwap WITH (path = '/tmp/x')", &arena);
  CHECK(s != NULL);
  EXPECT(s->kind == LM_STMT_CREATE_SINK && s->object == LM_OBJ_SINK);
  EXPECT(streq(s->name, "out1") && streq(s->sink_from, "vwap"));
  EXPECT(s->sink_from_line == 1 && s->sink_from_column == 23);
  EXPECT(s->noptions == 1 && streq(s->options[0].value->s, "/tmp/x"));
  lm_arena_destroy(arena);

  s = parse_one("SELECT * FROM trades", &arena);
  CHECK(s != NULL);
  EXPECT(s->kind == LM_STMT_SELECT && s->select->nitems == 1 && s->name == NULL);
  lm_arena_destroy(arena);
  return 0;
}

/* ---- DROP / SHOW / DESCRIBE / EXPLAIN --------------------------------------------- */

static int test_drop_show_describe_explain(void) {
  static const struct {
    const char* sql;
    lm_stmt_kind kind;
    lm_object_kind object;
    bool materialized, if_exists;
    const char* name;
  } cases[] = {
      {"DROP SOURCE trades", LM_STMT_DROP, LM_OBJ_SOURCE, false, false, "trades"},
      {"drop stream if exists vwap", LM_STMT_DROP, LM_OBJ_STREAM, false, true, "vwap"},
      {"DROP VIEW v", LM_STMT_DROP, LM_OBJ_VIEW, false, false, "v"},
      {"DROP MATERIALIZED VIEW IF EXISTS \"V v\"", LM_STMT_DROP, LM_OBJ_VIEW, true, true,
       "V v"},
      {"DROP SINK k", LM_STMT_DROP, LM_OBJ_SINK, false, false, "k"},
      {"SHOW SOURCES", LM_STMT_SHOW, LM_OBJ_SOURCE, false, false, NULL},
      {"show streams", LM_STMT_SHOW, LM_OBJ_STREAM, false, false, NULL},
      {"SHOW VIEWS", LM_STMT_SHOW, LM_OBJ_VIEW, false, false, NULL},
      {"SHOW MATERIALIZED VIEWS", LM_STMT_SHOW, LM_OBJ_VIEW, true, false, NULL},
      {"SHOW SINKS", LM_STMT_SHOW, LM_OBJ_SINK, false, false, NULL},
      {"DESCRIBE trades", LM_STMT_DESCRIBE, 0, false, false, "trades"},
      {"desc Trades", LM_STMT_DESCRIBE, 0, false, false, "trades"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    lm_arena* arena;
    lm_stmt* s = parse_one(cases[i].sql, &arena);
    CHECK(s != NULL);
    EXPECT(s->kind == cases[i].kind);
    EXPECT(s->object == cases[i].object);
    EXPECT(s->materialized == cases[i].materialized);
    EXPECT(s->if_exists == cases[i].if_exists);
    EXPECT(cases[i].name == NULL ? s->name == NULL : streq(s->name, cases[i].name));
    EXPECT(s->text_offset == 0 && s->text_len == strlen(cases[i].sql));
    lm_arena_destroy(arena);
  }
  lm_arena* arena;
  lm_stmt* s = parse_one("EXPLAIN  CREATE STREAM x AS SELECT a FROM b", &arena);
  CHECK(s != NULL);
  EXPECT(s->kind == LM_STMT_EXPLAIN);
  CHECK(s->inner != NULL);
  EXPECT(s->inner->kind == LM_STMT_CREATE_STREAM && streq(s->inner->name, "x"));
  EXPECT(s->inner->line == 1 && s->inner->column == 10 && s->inner->text_offset == 9);
  EXPECT(s->text_len == 43 && s->inner->text_len == 34);
  lm_arena_destroy(arena);
  return 0;
}

/* ---- expressions ------------------------------------------------------------------ */

static int test_precedence(void) {
  EXPECT(expr_is("a + b * c", "(+ a (* b c))"));
  EXPECT(expr_is("a * b + c", "(+ (* a b) c)"));
  EXPECT(expr_is("a - b - c", "(- (- a b) c)"));
  EXPECT(expr_is("a / b % c", "(% (/ a b) c)"));
  EXPECT(expr_is("NOT a = b", "(not (= a b))"));
  EXPECT(expr_is("a OR b AND c", "(or a (and b c))"));
  EXPECT(expr_is("a AND b OR c", "(or (and a b) c)"));
  EXPECT(expr_is("NOT a AND b", "(and (not a) b)"));
  EXPECT(expr_is("NOT NOT a", "(not (not a))"));
  EXPECT(expr_is("-x * y", "(* (neg x) y)"));
  EXPECT(expr_is("- - x", "(neg (neg x))"));
  EXPECT(expr_is("+x", "(pos x)"));
  EXPECT(expr_is("a || b = c", "(= (|| a b) c)"));
  EXPECT(expr_is("a || b + c", "(|| a (+ b c))"));
  EXPECT(expr_is("(a + b) * c", "(* (+ a b) c)"));
  EXPECT(expr_is("a < b = c >= d", "(>= (= (< a b) c) d)"));
  EXPECT(expr_is("a <> b AND c != d", "(and (<> a b) (<> c d))"));
  EXPECT(expr_is("a <= b OR a > b", "(or (<= a b) (> a b))"));
  EXPECT(expr_is("a BETWEEN 1 AND 2 AND b", "(and (between a 1 2) b)"));
  EXPECT(expr_is("a NOT BETWEEN b + 1 AND c * 2", "(notbetween a (+ b 1) (* c 2))"));
  EXPECT(expr_is("a IS NULL OR b IS NOT NULL", "(or (isnull a) (notnull b))"));
  EXPECT(expr_is("a + 1 IS NULL", "(isnull (+ a 1))"));
  EXPECT(expr_is("NOT a IS NULL", "(not (isnull a))"));
  EXPECT(expr_is("a IN (1, 2, b + 3)", "(in a 1 2 (+ b 3))"));
  EXPECT(expr_is("a NOT IN ('x')", "(notin a 'x')"));
  EXPECT(expr_is("s LIKE 'a%' AND s NOT LIKE '%b' || c",
                 "(and (like s 'a%') (notlike s (|| '%b' c)))"));
  EXPECT(expr_is("a = NOT b", "(= a (not b))"));
  return 0;
}

static int test_expression_forms(void) {
  EXPECT(expr_is("42", "42"));
  EXPECT(expr_is("-42", "-42"));
  EXPECT(expr_is("- 9223372036854775808", "-9223372036854775808"));
  EXPECT(expr_is("9223372036854775807", "9223372036854775807"));
  EXPECT(expr_is("1.5", "1.5d"));
  EXPECT(expr_is(".5", "0.5d"));
  EXPECT(expr_is("1e3", "1000d"));
  EXPECT(expr_is("2.5E-1", "0.25d"));
  EXPECT(expr_is("-1.5", "-1.5d"));
  EXPECT(expr_is("+7", "7"));
  EXPECT(expr_is("'it''s'", "'it's'"));
  EXPECT(expr_is("''", "''"));
  EXPECT(expr_is("TRUE", "TRUE"));
  EXPECT(expr_is("false", "FALSE"));
  EXPECT(expr_is("Null", "NULL"));
  EXPECT(expr_is("INTERVAL '1' SECOND", "1000ms"));
  EXPECT(expr_is("INTERVAL '1 second'", "1000ms"));
  EXPECT(expr_is("INTERVAL ' 3  minutes '", "180000ms"));
  EXPECT(expr_is("interval '250' milliseconds", "250ms"));
  EXPECT(expr_is("INTERVAL '1.5' SECONDS", "1500ms"));
  EXPECT(expr_is("INTERVAL 2 DAY", "172800000ms"));
  EXPECT(expr_is("INTERVAL '1' HOUR", "3600000ms"));
  EXPECT(expr_is("-INTERVAL '1' MINUTE", "-60000ms"));
  EXPECT(expr_is("ts - INTERVAL '1' MINUTE", "(- ts 60000ms)"));  // binary, not folded
  EXPECT(expr_is("t.a", "t.a"));
  EXPECT(expr_is("T.\"A b\"", "t.A b"));
  EXPECT(expr_is("f()", "f()"));
  EXPECT(expr_is("COUNT(*)", "count(*)"));
  EXPECT(expr_is("Count(DISTINCT x)", "count(distinct x)"));
  EXPECT(expr_is("sum(ALL x)", "sum(x)"));
  EXPECT(expr_is("coalesce(a, b, 'z')", "coalesce(a, b, 'z')"));
  EXPECT(expr_is("\"MyFn\"(1)", "MyFn(1)"));
  EXPECT(expr_is("CASE WHEN a > 1 THEN 'x' WHEN a > 0 THEN 'y' ELSE 'z' END",
                 "(case (when (> a 1) 'x') (when (> a 0) 'y') (else 'z'))"));
  EXPECT(expr_is("CASE a WHEN 1 THEN 2 END", "(case a (when 1 2))"));
  EXPECT(expr_is("CAST(a AS DOUBLE PRECISION)", "(cast a DOUBLE)"));
  EXPECT(expr_is("cast(a + 1 as varchar(10)) || 'x'", "(|| (cast (+ a 1) VARCHAR) 'x')"));
  EXPECT(expr_is("${LIMIT_X} + 1", "(+ ${LIMIT_X} 1)"));
  EXPECT(expr_is("left(s, 2)", "left(s, 2)"));
  EXPECT(expr_is("((((a))))", "a"));

  /* Positions: the first token of each node. */
  lm_arena* arena;
  lm_stmt* s = parse_one("SELECT\n  -x * y, NOT b, -5\nFROM t", &arena);
  CHECK(s != NULL);
  const lm_ast_expr* m = s->select->items[0].expr;
  EXPECT(m->kind == LM_AST_BINARY && m->line == 2 && m->column == 3);
  EXPECT(m->left->line == 2 && m->left->column == 3 && m->left->left->column == 4);
  EXPECT(m->right->column == 8);
  EXPECT(s->select->items[1].expr->column == 11);
  EXPECT(s->select->items[2].expr->column == 18 && s->select->items[2].expr->i == -5);
  EXPECT(m->height == 3);
  lm_arena_destroy(arena);
  return 0;
}

/* The compact interval forms users write (issue 26): the unit inside the quotes,
 * with or without a blank, abbreviated, and several terms summed; a malformed one
 * fails at the literal with what is wrong and where inside it. */
static int test_interval_compact(void) {
  EXPECT(expr_is("INTERVAL '100ms'", "100ms"));
  EXPECT(expr_is("INTERVAL '1s'", "1000ms"));
  EXPECT(expr_is("INTERVAL '5 minutes'", "300000ms"));
  EXPECT(expr_is("INTERVAL '5min'", "300000ms"));
  EXPECT(expr_is("INTERVAL '5m'", "300000ms"));
  EXPECT(expr_is("INTERVAL '2h'", "7200000ms"));
  EXPECT(expr_is("INTERVAL '2 hrs'", "7200000ms"));
  EXPECT(expr_is("INTERVAL '1 day'", "86400000ms"));
  EXPECT(expr_is("INTERVAL '3d'", "259200000ms"));
  EXPECT(expr_is("INTERVAL '250 msec'", "250ms"));
  EXPECT(expr_is("INTERVAL '10 SECS'", "10000ms"));
  EXPECT(expr_is("INTERVAL '1.5s'", "1500ms"));
  EXPECT(expr_is("INTERVAL '0.5 ms'", "1ms"));  // rounded half away from zero
  EXPECT(expr_is("INTERVAL '1h30m'", "5400000ms"));
  EXPECT(expr_is("INTERVAL '1 hour 30 minutes'", "5400000ms"));
  EXPECT(expr_is("INTERVAL ' 1m 0.5s '", "60500ms"));
  EXPECT(expr_is("INTERVAL '-2s'", "-2000ms"));
  EXPECT(expr_is("INTERVAL '1' s", "1000ms"));  // abbreviations after the quotes too
  EXPECT(expr_is("INTERVAL 100 ms", "100ms"));
  EXPECT(expr_is("INTERVAL '9223372036854775807ms'", "9223372036854775807ms"));

  const laminar_code SYN = LAMINAR_ERR_SQL_SYNTAX;
  EXPECT(
      fails_at("SELECT INTERVAL '100 fortnights' FROM t", SYN, 1, 17,
               "unknown unit (use ms, s, min, h, d or their full names) at character 5"));
  EXPECT(fails_at("SELECT INTERVAL '1h30' FROM t", SYN, 1, 17, "expected a unit"));
  EXPECT(fails_at("SELECT INTERVAL 'ms' FROM t", SYN, 1, 17,
                  "expected a number at character 1"));
  EXPECT(fails_at("SELECT\n  INTERVAL '1s x' FROM t", SYN, 2, 12,
                  "expected a number at character 4"));
  EXPECT(fails_at("SELECT INTERVAL '1.2.3s' FROM t", SYN, 1, 17, "expected a number"));
  EXPECT(fails_at("SELECT INTERVAL '' FROM t", SYN, 1, 17, "it is empty"));
  EXPECT(fails_at("SELECT INTERVAL '9223372036854775807ms 1ms' FROM t", SYN, 1, 17,
                  "out of range"));
  EXPECT(fails_at("SELECT INTERVAL '1e300 d' FROM t", SYN, 1, 17, NULL));
  return 0;
}

static int test_case_insensitive_keywords(void) {
  lm_arena* arena;
  lm_stmt* s = parse_one(
      "cReAtE sTrEaM Out aS sElEcT Sym, cOuNt(*) As N fRoM Trades WhErE pRiCe BeTwEeN 1 "
      "aNd 2 "
      "gRoUp By sym HaViNg n > 1 eMiT oN wInDoW cLoSe",
      &arena);
  CHECK(s != NULL);
  EXPECT(s->kind == LM_STMT_CREATE_STREAM && streq(s->name, "out"));
  EXPECT(streq(s->select->items[0].expr->name, "sym") &&
         streq(s->select->items[1].alias, "n"));
  EXPECT(streq(s->select->from, "trades") && s->select->where->kind == LM_AST_BETWEEN);
  EXPECT(s->emit == LM_EMIT_ON_WINDOW_CLOSE);
  lm_arena_destroy(arena);
  return 0;
}

static int test_quoted_identifiers(void) {
  lm_arena* arena;
  lm_stmt* s = parse_one(
      "CREATE SOURCE \"My Source\" (\"first name\" VARCHAR, \"say \"\"hi\"\"\" INT, "
      "\"from\" INT, "
      "\"Mixed\" BIGINT)",
      &arena);
  CHECK(s != NULL);
  EXPECT(streq(s->name, "My Source"));
  CHECK(s->ncolumns == 4);
  EXPECT(streq(s->columns[0].name, "first name"));
  EXPECT(streq(s->columns[1].name, "say \"hi\""));
  EXPECT(streq(s->columns[2].name, "from"));
  EXPECT(streq(s->columns[3].name, "Mixed"));
  lm_arena_destroy(arena);
  /* Quoted names are never keywords. */
  s = parse_one("SELECT \"select\" \"as\", \"x\"\"y\" FROM \"where\"", &arena);
  CHECK(s != NULL);
  EXPECT(streq(s->select->items[0].expr->name, "select") &&
         streq(s->select->items[0].alias, "as"));
  EXPECT(streq(s->select->items[1].expr->name, "x\"y"));
  EXPECT(streq(s->select->from, "where"));
  lm_arena_destroy(arena);
  /* A string spanning lines keeps its newline; positions after it count on. */
  s = parse_one("SELECT 'a\nb' AS x,\n  y FROM t", &arena);
  CHECK(s != NULL);
  EXPECT(streq(s->select->items[0].expr->s, "a\nb") &&
         s->select->items[0].expr->slen == 3);
  EXPECT(s->select->items[1].expr->line == 3 && s->select->items[1].expr->column == 3);
  lm_arena_destroy(arena);
  return 0;
}

static int test_comments_and_empty(void) {
  const char* sql =
      "-- leading comment\n"
      "/* block\n   comment */ SELECT a /* inline */, -- trailing\n"
      "  b FROM t; -- after\n"
      ";;\n"
      "/* only a comment */ ;\n"
      "SHOW STREAMS -- no semicolon at the end";
  lm_arena* arena;
  lm_stmt** st;
  size_t n;
  laminar_error err;
  CHECK_CODE(parse(sql, &arena, &st, &n, &err), LAMINAR_OK, errp(&err));
  CHECK(n == 2);
  EXPECT(st[0]->kind == LM_STMT_SELECT && st[0]->line == 3 && st[0]->column == 15);
  EXPECT(st[0]->select->nitems == 2);
  EXPECT(st[0]->select->items[1].expr->line == 4 &&
         st[0]->select->items[1].expr->column == 3);
  EXPECT(strncmp(sql + st[0]->text_offset,
                 "SELECT a /* inline */, -- trailing\n  b FROM t",
                 st[0]->text_len) == 0 &&
         st[0]->text_len == 45);
  EXPECT(st[1]->kind == LM_STMT_SHOW && st[1]->line == 7);
  EXPECT(st[1]->text_len == 12);
  lm_arena_destroy(arena);

  static const char* const empties[] = {"",
                                        ";",
                                        ";;;",
                                        "   \n\t ",
                                        "-- just a comment",
                                        "/* c */",
                                        "/**/;/* c */; -- x\n;",
                                        "--\n--"};
  for (size_t i = 0; i < sizeof empties / sizeof empties[0]; i++) {
    st = (lm_stmt**)&arena;
    n = 7;
    CHECK_CODE(parse(empties[i], &arena, &st, &n, &err), LAMINAR_OK, errp(&err));
    EXPECT(n == 0);
    lm_arena_destroy(arena);
  }
  /* Bad arguments. */
  CHECK(lm_arena_create(&arena) == LAMINAR_OK);
  EXPECT(lm_sql_parse(arena, NULL, &st, &n, &err) == LAMINAR_ERR_MISUSE);
  EXPECT(lm_sql_parse(NULL, "SHOW SOURCES", &st, &n, NULL) == LAMINAR_ERR_MISUSE);
  lm_arena_destroy(arena);
  return 0;
}

/* ---- errors ----------------------------------------------------------------------- */

static int test_errors(void) {
  const laminar_code SYN = LAMINAR_ERR_SQL_SYNTAX;
  /* Missing ')' on line 3. */
  EXPECT(
      fails_at("SELECT a,\n  f(b\n  FROM t", SYN, 3, 3, "expected ')' but found 'FROM'"));
  EXPECT(fails_at("CREATE SOURCE s (a INT,\n b INT\n", SYN, 3, 1,
                  "expected ',' or ')' but found end of input"));
  /* Unterminated string at its opening quote, unterminated comment / identifier. */
  EXPECT(fails_at("SELECT a FROM t\nWHERE b = 'abc", SYN, 2, 11, "unterminated string"));
  EXPECT(
      fails_at("SELECT a FROM t /* never\n closed", SYN, 1, 17, "unterminated comment"));
  EXPECT(fails_at("SELECT \"abc FROM t", SYN, 1, 8, "unterminated quoted identifier"));
  EXPECT(fails_at("SELECT a FROM t WHERE x = 'it''s", SYN, 1, 27, "unterminated string"));
  /* Unknown type at the type name. */
  EXPECT(fails_at("CREATE SOURCE s (a INT,\n    b FOO NOT NULL)",
                  LAMINAR_ERR_UNKNOWN_TYPE, 2, 7, "'FOO' is not a type"));
  EXPECT(fails_at("SELECT CAST(a AS uuid) FROM t", LAMINAR_ERR_UNKNOWN_TYPE, 1, 18,
                  "'uuid'"));
  EXPECT(fails_at("CREATE SOURCE s (a \"INT\")", LAMINAR_ERR_UNKNOWN_TYPE, 1, 20, NULL));
  EXPECT(fails_at("CREATE SOURCE s (a NULL)", SYN, 1, 20, "expected a type name"));
  /* Integer overflow at the literal. */
  EXPECT(fails_at("SELECT 1 + 99999999999999999999 FROM t", SYN, 1, 12, "out of range"));
  EXPECT(fails_at("SELECT 9223372036854775808 FROM t", SYN, 1, 8, "out of range"));
  EXPECT(fails_at("SELECT 1e999 FROM t", SYN, 1, 8, "out of range"));
  EXPECT(fails_at("SELECT 12abc FROM t", SYN, 1, 8, "malformed number"));
  /* Stray token after a statement. */
  EXPECT(fails_at("SHOW SOURCES extra", SYN, 1, 14, "expected ';'"));
  EXPECT(fails_at("SELECT a FROM t;\nSELECT b FROM t u v", SYN, 2, 19, "found 'v'"));
  EXPECT(fails_at("DROP STREAM s)", SYN, 1, 14, "found ')'"));
  /* SELECT with no FROM. */
  EXPECT(fails_at("SELECT 1", SYN, 1, 9, "expected 'FROM' but found end of input"));
  EXPECT(fails_at("SELECT 1;", SYN, 1, 9, "expected 'FROM' but found ';'"));
  EXPECT(fails_at("SELECT FROM t", SYN, 1, 8, "expected an expression but found 'FROM'"));
  /* Assorted. */
  EXPECT(fails_at("FROB x", SYN, 1, 1, "expected a statement"));
  EXPECT(fails_at("CREATE TABLE t (a INT)", SYN, 1, 16, "PRIMARY KEY"));
  EXPECT(fails_at("SELECT a FROM t CROSS JOIN u", LAMINAR_ERR_SQL_UNSUPPORTED, 1, 17,
                  "join"));
  EXPECT(fails_at("SELECT a FROM t FULL ASOF JOIN u ON a = b",
                  LAMINAR_ERR_SQL_UNSUPPORTED, 1, 17, "ASOF JOIN is inner or LEFT"));
  EXPECT(fails_at("SELECT a FROM tumble(t, ts, INTERVAL '1' SECOND)",
                  LAMINAR_ERR_SQL_UNSUPPORTED, 1, 15, "window join"));
  EXPECT(fails_at("SELECT a FROM t, u", LAMINAR_ERR_SQL_UNSUPPORTED, 1, 16, "join"));
  /* FROM ( query ) parses (a derived table); UNION without ALL does not. */
  EXPECT(fails_at("SELECT a FROM (SELECT 1)", LAMINAR_ERR_SQL_SYNTAX, 1, 24, "FROM"));
  EXPECT(fails_at("SELECT a FROM t UNION SELECT a FROM u", LAMINAR_ERR_SQL_UNSUPPORTED, 1,
                  23, "UNION ALL"));
  EXPECT(fails_at("SELECT a FROM (SELECT a FROM t UNION ALL SELECT a FROM u",
                  LAMINAR_ERR_SQL_SYNTAX, 1, 57, NULL));
  EXPECT(fails_at("SELECT a IN (SELECT b FROM t) FROM t", LAMINAR_ERR_SQL_UNSUPPORTED, 1,
                  14, NULL));
  EXPECT(fails_at("SELECT a FROM select", SYN, 1, 15, "keyword 'select'"));
  EXPECT(fails_at("SELECT a ? b FROM t", SYN, 1, 10, "unexpected character '?'"));
  EXPECT(fails_at("SELECT \xC3\xA9 FROM t", SYN, 1, 8, "byte 0xC3"));
  EXPECT(fails_at("SELECT '\xC3\xA9\xC3\xA9', ? FROM t", SYN, 1, 14,
                  "'?'"));  // columns count chars
  EXPECT(fails_at("SELECT a NOT b FROM t", SYN, 1, 14, "BETWEEN, IN or LIKE"));
  EXPECT(fails_at("SELECT a IS 1 FROM t", SYN, 1, 13, "expected 'NULL'"));
  EXPECT(fails_at("SELECT a BETWEEN 1 OR 2 FROM t", SYN, 1, 20, "expected 'AND'"));
  EXPECT(fails_at("SELECT CASE END FROM t", SYN, 1, 13, "expected an expression"));
  EXPECT(fails_at("SELECT CASE a END FROM t", SYN, 1, 15, "expected 'WHEN'"));
  EXPECT(fails_at("SELECT CASE WHEN a THEN b FROM t", SYN, 1, 27, "expected 'END'"));
  EXPECT(fails_at("SELECT INTERVAL '1' WEEK FROM t", SYN, 1, 21,
                  "unknown interval unit 'WEEK'"));
  EXPECT(fails_at("SELECT INTERVAL 'abc' FROM t", SYN, 1, 17, "invalid INTERVAL value"));
  EXPECT(
      fails_at("SELECT INTERVAL '1 fortnight' FROM t", SYN, 1, 17, "invalid INTERVAL"));
  EXPECT(fails_at("SELECT INTERVAL '1' FROM t", SYN, 1, 21, "interval unit"));
  EXPECT(fails_at("SELECT a FROM t LIMIT x", SYN, 1, 23, "after LIMIT"));
  EXPECT(fails_at("SELECT a FROM t EMIT SOON", SYN, 1, 22, "after EMIT"));
  EXPECT(fails_at("SELECT ${ FROM t", SYN, 1, 8, "${NAME}"));
  EXPECT(fails_at("SELECT ${X FROM t", SYN, 1, 8, "unterminated variable"));
  EXPECT(fails_at("SELECT \"\" FROM t", SYN, 1, 8, "cannot be empty"));
  EXPECT(fails_at("CREATE SOURCE s ()", SYN, 1, 18, "expected a column name"));
  EXPECT(
      fails_at("CREATE SOURCE s (WATERMARK FOR t)", SYN, 1, 17, "at least one column"));
  EXPECT(fails_at("CREATE SOURCE s (t INT, WATERMARK FOR t, WATERMARK FOR t)", SYN, 1, 42,
                  "only one WATERMARK"));
  EXPECT(fails_at("CREATE SOURCE s (t INT, WATERMARK FOR t AS u - INTERVAL '1' SECOND)",
                  LAMINAR_ERR_SQL_UNSUPPORTED, 1, 44, "not based on 'u'"));
  EXPECT(fails_at("CREATE SOURCE s (t INT, WATERMARK FOR t AS t - 5)", SYN, 1, 48,
                  "expected 'INTERVAL'"));
  EXPECT(fails_at("CREATE SOURCE s (t INT) WITH (a = b)", SYN, 1, 35, "option value"));
  EXPECT(fails_at("CREATE SOURCE s (t INT) WITH (a = -x)", SYN, 1, 35, "option value"));
  EXPECT(fails_at("CREATE STREAM s SELECT a FROM t", SYN, 1, 17, "expected 'AS'"));
  EXPECT(
      fails_at("CREATE MATERIALIZED STREAM s AS SELECT a FROM t", SYN, 1, 21, "'VIEW'"));
  EXPECT(fails_at("DROP TABEL t", SYN, 1, 6, "SOURCE, TABLE, STREAM"));
  EXPECT(fails_at("SHOW TABELS", SYN, 1, 6, "SOURCES, TABLES, STREAMS"));
  EXPECT(fails_at("DESCRIBE", SYN, 1, 9, "expected a name but found end of input"));
  EXPECT(fails_at("SELECT a FROM t WHERE (a = 1", SYN, 1, 29, "expected ')'"));
  EXPECT(fails_at("SELECT a FROM t;\n\n  SELECT 'x", SYN, 3, 10, "unterminated string"));
  /* The message carries the code and position words. */
  lm_arena* arena;
  lm_stmt** st;
  size_t n;
  laminar_error err;
  CHECK(parse("SELECT a FROM t\nWHERE (b FROM", &arena, &st, &n, &err) == SYN);
  EXPECT(
      strcmp(
          err.message,
          "LDB-1001: syntax error at line 2, column 10: expected ')' but found 'FROM'") ==
      0);
  lm_arena_destroy(arena);
  /* NULL err is allowed. */
  CHECK(lm_arena_create(&arena) == LAMINAR_OK);
  EXPECT(lm_sql_parse(arena, "SELECT", &st, &n, NULL) == SYN);
  lm_arena_destroy(arena);
  return 0;
}

/* ---- limits ----------------------------------------------------------------------- */

static char* repeat_sql(const char* head, const char* unit, size_t times,
                        const char* tail) {
  size_t hl = strlen(head), ul = strlen(unit), tl = strlen(tail);
  char* s = malloc(hl + ul * times + tl + 1);
  if (s == NULL) return NULL;
  memcpy(s, head, hl);
  for (size_t i = 0; i < times; i++) memcpy(s + hl + i * ul, unit, ul);
  memcpy(s + hl + ul * times, tail, tl + 1);
  return s;
}

static laminar_code parse_code(const char* sql, laminar_error* err) {
  lm_arena* arena;
  lm_stmt** st;
  size_t n;
  laminar_code rc = parse(sql, &arena, &st, &n, err);
  lm_arena_destroy(arena);
  return rc;
}

static int test_depth_limit(void) {
  laminar_error err;
  /* 100000 '(' fail fast with a position, no stack overflow. */
  char* s = repeat_sql("SELECT ", "(", 100000, "1");
  CHECK(s != NULL);
  EXPECT(parse_code(s, &err) == LAMINAR_ERR_SQL_LIMIT);
  EXPECT(err.line == 1 && err.column > 7 && err.column < 1100);
  EXPECT(strstr(err.message, "LDB-1008: limit exceeded at line 1") == err.message);
  free(s);
  /* Moderate nesting is fine. */
  char* open = repeat_sql("SELECT ", "(", 300, "1");
  char* both = open ? repeat_sql(open, ")", 300, " FROM t") : NULL;
  CHECK(both != NULL);
  EXPECT(parse_code(both, &err) == LAMINAR_OK);
  free(open);
  free(both);
  /* Prefix operators recurse too. */
  static const char* const units[] = {"NOT ", "+",          "- ",   "-(",
                                      "f(",   "CASE WHEN ", "CAST("};
  for (size_t i = 0; i < sizeof units / sizeof units[0]; i++) {
    s = repeat_sql("SELECT ", units[i], 50000, "x");
    CHECK(s != NULL);
    EXPECT(parse_code(s, &err) == LAMINAR_ERR_SQL_LIMIT);
    free(s);
  }
  s = repeat_sql("", "EXPLAIN ", 5000, "SHOW SOURCES");
  CHECK(s != NULL);
  EXPECT(parse_code(s, &err) == LAMINAR_ERR_SQL_LIMIT);
  free(s);
  /* Long left-deep chains are built by loops but their height is bounded. */
  s = repeat_sql("SELECT 1", " + 1", 100000, " FROM t");
  CHECK(s != NULL);
  EXPECT(parse_code(s, &err) == LAMINAR_ERR_SQL_LIMIT);
  EXPECT(err.line == 1 && err.column == 8);
  free(s);
  s = repeat_sql("SELECT 1", " + 1", 500, " FROM t");
  CHECK(s != NULL);
  EXPECT(parse_code(s, &err) == LAMINAR_OK);
  free(s);
  /* Wide lists are not deep. */
  s = repeat_sql("SELECT a IN (0", ", 1", 100000, ") FROM t");
  CHECK(s != NULL);
  EXPECT(parse_code(s, &err) == LAMINAR_OK);
  free(s);
  return 0;
}

static int test_size_limit(void) {
  laminar_error err;
  size_t big = LM_SQL_MAX_STMT_BYTES + 16;
  char* s = repeat_sql("SHOW SOURCES;\nSELECT a FROM t WHERE b = '", "x", big, "'");
  CHECK(s != NULL);
  EXPECT(parse_code(s, &err) == LAMINAR_ERR_SQL_LIMIT);
  EXPECT(err.line == 2 && err.column == 1);
  free(s);
  /* A large statement under the limit parses. */
  s = repeat_sql("SELECT a FROM t WHERE b = '", "x", (size_t)1 << 20, "'");
  CHECK(s != NULL);
  lm_arena* arena;
  lm_stmt** st;
  size_t n;
  CHECK_CODE(parse(s, &arena, &st, &n, &err), LAMINAR_OK, errp(&err));
  EXPECT(n == 1 && st[0]->select->where->right->slen == ((size_t)1 << 20));
  lm_arena_destroy(arena);
  free(s);
  return 0;
}

/* ---- arena ------------------------------------------------------------------------ */

static int test_arena(void) {
  lm_arena* a;
  CHECK(lm_arena_create(&a) == LAMINAR_OK);
  char* prev = NULL;
  for (size_t i = 0; i < 5000; i++) {
    size_t n = (i * 37) % 300;
    unsigned char* p = lm_arena_alloc(a, n);
    CHECK(p != NULL);
    CHECK(((uintptr_t)p % alignof(max_align_t)) == 0);
    for (size_t k = 0; k < n; k++) CHECK(p[k] == 0);  // zeroed
    memset(p, 0xAB, n);
    CHECK((char*)p != prev);
    prev = (char*)p;
  }
  unsigned char* huge = lm_arena_alloc(a, (size_t)3 << 20);
  CHECK(huge != NULL && huge[((size_t)3 << 20) - 1] == 0);
  char* small = lm_arena_alloc(a, 8);  // still served after the oversized block
  CHECK(small != NULL);
  char* d = lm_arena_strndup(a, "hello world", 5);
  CHECK(d != NULL && strcmp(d, "hello") == 0);
  d = lm_arena_strndup(a, "", 0);
  CHECK(d != NULL && d[0] == '\0');
  CHECK(lm_arena_alloc(a, SIZE_MAX) == NULL);
  lm_arena_destroy(a);
  lm_arena_destroy(NULL);
  return 0;
}

/* ---- randomized mutation ---------------------------------------------------------- */

static const char* const seeds[] = {
    quickstart,
    "CREATE SOURCE s (a INT NOT NULL, b VARCHAR(3), c DOUBLE PRECISION, t TIMESTAMP, "
    "WATERMARK FOR t AS t - INTERVAL '5 seconds') WITH (k = 'v', n = 3, i = INTERVAL '1' "
    "DAY)",
    "CREATE MATERIALIZED VIEW IF NOT EXISTS v AS SELECT DISTINCT t.a x, COUNT(DISTINCT "
    "b), "
    "CASE a WHEN 1 THEN 'one' ELSE \"o\"\"k\" END FROM s t WHERE a BETWEEN -1 AND 2.5e3 "
    "AND b "
    "NOT IN (1, 2) OR c LIKE 'x%' GROUP BY a HAVING SUM(a) > ${MIN} ORDER BY x DESC "
    "LIMIT 5 "
    "EMIT CHANGES;",
    "EXPLAIN SELECT CAST(a AS BIGINT) || 'x', -a * +b % 3, a IS NOT NULL FROM s; DROP "
    "MATERIALIZED VIEW IF EXISTS v; SHOW STREAMS; DESC s; CREATE SINK k FROM v",
    "/* c */ SELECT a -- x\n FROM t WHERE NOT (a <> 1 OR b != 2 AND c <= 3 OR d >= 4);;",
};

static int test_random_mutations(void) {
  uint64_t rng = lm_test_seed();
  static const char alphabet[] = "()'\";,.-*/+=<>|!$%{}_ \n\taAzZ09eE\xC3\xA9";
  char buf[1024];
  size_t ok = 0, failed = 0;
  for (int iter = 0; iter < 20000; iter++) {
    const char* base = seeds[lm_test_rand(&rng) % (sizeof seeds / sizeof seeds[0])];
    size_t len = strlen(base);
    if (len >= sizeof buf - 64) len = sizeof buf - 64;
    memcpy(buf, base, len);
    int edits = 1 + (int)(lm_test_rand(&rng) % 4);
    for (int k = 0; k < edits; k++) {
      uint64_t r = lm_test_rand(&rng);
      size_t pos = len ? (size_t)(r >> 8) % len : 0;
      switch (r % 4) {
        case 0:  // delete
          if (len > 0) {
            memmove(buf + pos, buf + pos + 1, len - pos - 1);
            len--;
          }
          break;
        case 1:  // insert
          if (len < sizeof buf - 2) {
            memmove(buf + pos + 1, buf + pos, len - pos);
            buf[pos] = alphabet[(r >> 40) % (sizeof alphabet - 1)];
            len++;
          }
          break;
        case 2: {  // swap
          size_t other = len ? (size_t)(r >> 32) % len : 0;
          if (len > 0) {
            char t = buf[pos];
            buf[pos] = buf[other];
            buf[other] = t;
          }
          break;
        }
        default:  // overwrite with a random byte
          if (len > 0) buf[pos] = (char)(1 + (r >> 48) % 255);
          break;
      }
    }
    buf[len] = '\0';
    lm_arena* arena;
    lm_stmt** st;
    size_t n;
    laminar_error err;
    laminar_code rc = parse(buf, &arena, &st, &n, &err);
    if (rc == LAMINAR_OK) {
      ok++;
      for (size_t i = 0; i < n; i++) {
        CHECK(st[i] != NULL && st[i]->line >= 1 && st[i]->column >= 1);
        CHECK(st[i]->text_offset + st[i]->text_len <= len);
      }
    } else {
      failed++;
      int area = (int)rc / 1000;
      if (!((area == 1 || rc == LAMINAR_ERR_UNKNOWN_TYPE) && err.line >= 1 &&
            err.column >= 1 && err.code == rc && strncmp(err.message, "LDB-", 4) == 0)) {
        fprintf(stderr, "bad failure %d at %d:%d for: %s\n", (int)rc, (int)err.line,
                (int)err.column, buf);
        lm_arena_destroy(arena);
        return 1;
      }
    }
    lm_arena_destroy(arena);
  }
  printf("  mutations: %zu parsed, %zu rejected\n", ok, failed);
  CHECK(ok > 0 && failed > 0);
  return 0;
}

int main(int argc, char** argv) {
  static const lm_test_case cases[] = {
      {"quickstart", test_quickstart},
      {"create_source_types", test_create_source_types},
      {"create_source_options", test_create_source_options},
      {"create_stream_forms", test_create_stream_forms},
      {"drop_show_describe_explain", test_drop_show_describe_explain},
      {"precedence", test_precedence},
      {"expression_forms", test_expression_forms},
      {"interval_compact", test_interval_compact},
      {"case_insensitive_keywords", test_case_insensitive_keywords},
      {"quoted_identifiers", test_quoted_identifiers},
      {"comments_and_empty", test_comments_and_empty},
      {"errors", test_errors},
      {"depth_limit", test_depth_limit},
      {"size_limit", test_size_limit},
      {"arena", test_arena},
      {"random_mutations", test_random_mutations},
      {NULL, NULL},
  };
  return lm_test_main(argc, argv, cases);
}
