/*
 * ast.h -- the abstract syntax tree the SQL parser (parser.c) produces and the
 * binder (binder.c) and catalog (src/db) consume.
 *
 * Every node lives in the lm_arena passed to lm_sql_parse() and dies with it;
 * nothing here is freed on its own. Strings are NUL-terminated arena copies:
 * unquoted identifiers are folded to lower case, "quoted" ones are kept as
 * written (with "" unescaped). Every node records the 1-based line and column
 * of its first token so later phases can point errors at it.
 *
 * Shape guarantees the parser keeps (consumers may rely on them):
 *  - no expression tree is deeper than LM_SQL_MAX_DEPTH nodes, so recursive
 *    walks over it are bounded;
 *  - a unary minus/plus directly on a numeric or INTERVAL literal is folded
 *    into the literal ("-5" is LITERAL INT -5, never UNARY NEG over 5); other
 *    operands keep the UNARY node;
 *  - parentheses leave no node of their own.
 */
#ifndef LM_SQL_AST_H
#define LM_SQL_AST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Deepest expression nesting (and expression tree height) the parser accepts;
 * deeper input fails with LAMINAR_ERR_SQL_LIMIT. */
#define LM_SQL_MAX_DEPTH 1000
/* Longest single statement, in bytes of source text (LAMINAR_ERR_SQL_LIMIT). */
#define LM_SQL_MAX_STMT_BYTES ((size_t)16 * 1024 * 1024)

/* Column types a statement can name. VARCHAR/TEXT/STRING/VARCHAR(n) -> STRING;
 * BIGINT/INT8/LONG -> INT64; INT/INTEGER/INT4 -> INT32;
 * DOUBLE/DOUBLE PRECISION/FLOAT8/FLOAT -> DOUBLE; BOOLEAN/BOOL -> BOOL;
 * TIMESTAMP[(p)] -> TIMESTAMP; DATE -> DATE; SMALLINT/INT2/SHORT -> INT16;
 * TINYINT/INT1 -> INT8; DECIMAL/NUMERIC[(p[,s])] -> DECIMAL, its value
 * lm_sql_type_decimal(p, s) (bare DECIMAL is DECIMAL(18,3), as DuckDB);
 * REAL/FLOAT4 -> FLOAT; VARBINARY/BLOB/BYTEA/BINARY -> BINARY; TIME -> TIME. */
typedef enum lm_sql_type {
  LM_SQL_TYPE_STRING = 1,
  LM_SQL_TYPE_INT64,
  LM_SQL_TYPE_INT32,
  LM_SQL_TYPE_DOUBLE,
  LM_SQL_TYPE_BOOL,
  LM_SQL_TYPE_TIMESTAMP,
  LM_SQL_TYPE_DATE,
  LM_SQL_TYPE_INT16,
  LM_SQL_TYPE_INT8,
  /* With the precision in bits 8..15 and the scale in bits 16..23, as lm_type's
   * LM_TYPE_DECIMAL (util/types.h): lm_bind_sql_type maps one to the other. */
  LM_SQL_TYPE_DECIMAL = 10,
  LM_SQL_TYPE_FLOAT = 11,
  LM_SQL_TYPE_BINARY = 12,
  LM_SQL_TYPE_TIME = 13
} lm_sql_type;

static inline lm_sql_type lm_sql_type_decimal(int32_t precision, int32_t scale) {
  return (lm_sql_type)((uint32_t)LM_SQL_TYPE_DECIMAL | ((uint32_t)precision << 8) |
                       ((uint32_t)scale << 16));
}

/* Canonical SQL spelling of a type ("VARCHAR", "BIGINT", "INT", "DOUBLE",
 * "BOOLEAN", "TIMESTAMP", "DATE", "SMALLINT", "TINYINT", "DECIMAL(18,4)"); "UNKNOWN" for a value outside the enum. Static text. */
const char* lm_sql_type_name(lm_sql_type type);

typedef enum lm_ast_expr_kind {
  LM_AST_LITERAL, /* lit + b/i/d/s */
  LM_AST_COLUMN,  /* table (NULL if unqualified) . name */
  LM_AST_UNARY,   /* op (NOT, NEG, PLUS) over left */
  LM_AST_BINARY,  /* left op right */
  LM_AST_IS_NULL, /* left IS [NOT] NULL (negated = IS NOT NULL) */
  LM_AST_BETWEEN, /* left [NOT] BETWEEN list[0] AND list[1] (nlist == 2) */
  LM_AST_IN,      /* left [NOT] IN (list[0..nlist)) */
  LM_AST_LIKE,    /* left [NOT] LIKE|ILIKE right [ESCAPE list[0]] */
  LM_AST_CASE, /* CASE [operand] WHEN whens[i] THEN thens[i] ... [ELSE else_expr] END */
  LM_AST_CAST, /* CAST(left AS cast_type) and TRY_CAST (same semantics: a value
                  that does not convert is NULL) */
  LM_AST_FUNCTION, /* fname(args) / fname(*) (star) / fname(DISTINCT args) */
  LM_AST_STAR,     /* '*' or 't.*' in a select list (table set for the latter) */
  LM_AST_VARIABLE  /* ${name}: a substitution variable, name in `name` */
} lm_ast_expr_kind;

typedef enum lm_ast_lit_kind {
  LM_LIT_NULL,
  LM_LIT_BOOL,    /* b */
  LM_LIT_INT,     /* i */
  LM_LIT_DOUBLE,  /* d */
  LM_LIT_STRING,  /* s (NUL-terminated, '' unescaped), slen bytes */
  LM_LIT_INTERVAL /* i = length in milliseconds */
} lm_ast_lit_kind;

typedef enum lm_ast_op {
  LM_OP_ADD,
  LM_OP_SUB,
  LM_OP_MUL,
  LM_OP_DIV,
  LM_OP_MOD,
  LM_OP_EQ,
  LM_OP_NE, /* both <> and != */
  LM_OP_LT,
  LM_OP_LE,
  LM_OP_GT,
  LM_OP_GE,
  LM_OP_AND,
  LM_OP_OR,
  LM_OP_CONCAT,
  LM_OP_NOT, /* unary */
  LM_OP_NEG, /* unary '-' */
  LM_OP_PLUS /* unary '+' */
} lm_ast_op;

struct lm_ast_over;

typedef struct lm_ast_expr {
  lm_ast_expr_kind kind;
  int32_t line, column; /* first token, 1-based */
  int32_t height;       /* 1 + height of the deepest child (a leaf is 1) */

  /* LITERAL */
  lm_ast_lit_kind lit;
  bool b;
  int64_t i;
  double d;
  const char* s;
  size_t slen;

  /* COLUMN (also STAR's optional table, VARIABLE's name) */
  const char* table; /* NULL if unqualified */
  const char* name;

  /* UNARY / BINARY (unary uses left) */
  lm_ast_op op;
  struct lm_ast_expr *left, *right;

  /* IS_NULL / BETWEEN / IN / LIKE: operand in left; BETWEEN bounds in
   * list[0], list[1]; IN values in list; LIKE pattern in right and its
   * ESCAPE, if any, in list[0] (nlist == 1). */
  bool negated;
  bool ilike; /* LIKE: ILIKE (case-insensitive) */

  /* CASE */
  struct lm_ast_expr* operand; /* NULL for a searched CASE */
  struct lm_ast_expr** whens;
  struct lm_ast_expr** thens;
  size_t nwhen;                  /* >= 1 */
  struct lm_ast_expr* else_expr; /* NULL if no ELSE */

  /* CAST (operand in left) */
  lm_sql_type cast_type;

  /* FUNCTION */
  const char* fname; /* lower-cased unless written "quoted" */
  struct lm_ast_expr** args;
  size_t nargs; /* 0 for f() and f(*) */
  bool distinct;
  bool star; /* f(*) */
  /* FUNCTION: its OVER (...) clause (an analytic call), NULL without one */
  struct lm_ast_over* over;

  /* general list (BETWEEN bounds, IN values) */
  struct lm_ast_expr** list;
  size_t nlist;
} lm_ast_expr;

/* One bound of a window frame (ROWS / RANGE BETWEEN start AND end). */
typedef enum lm_ast_frame_bound {
  LM_FRAME_UNBOUNDED_PRECEDING = 1,
  LM_FRAME_PRECEDING, /* offset PRECEDING (offset: an integer or INTERVAL literal) */
  LM_FRAME_CURRENT_ROW,
  LM_FRAME_FOLLOWING, /* offset FOLLOWING */
  LM_FRAME_UNBOUNDED_FOLLOWING
} lm_ast_frame_bound;

/* OVER ( [PARTITION BY exprs] [ORDER BY items] [ROWS|RANGE frame] ). A frame
 * written as `ROWS start` alone has end CURRENT ROW. */
typedef struct lm_ast_over {
  struct lm_ast_expr** partition;
  size_t npartition;
  struct lm_ast_order_item* order;
  size_t norder;
  bool has_frame;
  bool rows; /* ROWS (else RANGE) */
  lm_ast_frame_bound start, end;
  struct lm_ast_expr *start_offset, *end_offset; /* NULL unless (N) PRECEDING/FOLLOWING */
  int32_t line, column;                          /* of OVER */
  int32_t frame_line, frame_column;              /* of ROWS / RANGE */
} lm_ast_over;

typedef struct lm_ast_select_item {
  lm_ast_expr* expr;
  const char* alias; /* NULL if none */
} lm_ast_select_item;

typedef struct lm_ast_order_item {
  lm_ast_expr* expr;
  bool desc;
  bool nulls_first; /* NULLS FIRST; without NULLS ..., NULLs sort last (DuckDB) */
} lm_ast_order_item;

/* The type of a join: which sides keep their unmatched rows. */
typedef enum lm_ast_join_type {
  LM_JOIN_INNER = 0, /* [INNER] JOIN */
  LM_JOIN_LEFT,      /* LEFT [OUTER] JOIN */
  LM_JOIN_RIGHT,     /* RIGHT [OUTER] JOIN */
  LM_JOIN_FULL       /* FULL [OUTER] JOIN */
} lm_ast_join_type;

/* A join after FROM's first input (the left side) with `right`:
 *  - `[INNER | LEFT | RIGHT | FULL [OUTER]] JOIN right [alias] ON on`;
 *  - `[LEFT] ASOF JOIN right [alias] [MATCH_CONDITION ( match )] ON on`
 *    (asof; type INNER or LEFT). match NULL: DuckDB's spelling, the ordering
 *    comparison is a conjunct of `on` (the binder finds it).
 * The ON expression is kept whole: the binder splits its conjuncts into
 * equality keys, time bounds and a residual filter. A side written as a
 * window table function, `tumble(input, time, size)` / `hop(input, time,
 * size, slide)`, has that call (a FUNCTION node whose args[0] is a COLUMN
 * naming the input) in the select's from_window / the join's right_window;
 * `right` (or the select's `from`) is then the input's name. */
typedef struct lm_ast_join {
  lm_ast_join_type type;
  bool asof;       /* ASOF JOIN */
  bool left_outer; /* type == LM_JOIN_LEFT (the ASOF join reads it) */
  /* A join that is not ASOF reads a table or a stream: `plain` (set for
   * every non-ASOF join); as_of: the FOR SYSTEM_TIME AS OF expression of a
   * lookup join of a table (temporal join), NULL without one. */
  bool plain;
  struct lm_ast_expr* as_of;
  int32_t line, column;    /* of the join's first word */
  const char* right;       /* the right input's name */
  const char* right_alias; /* NULL if none */
  int32_t right_line, right_column;
  struct lm_ast_expr* right_window; /* tumble(...) / hop(...) around it, or NULL */
  struct lm_ast_expr* match;        /* MATCH_CONDITION's expression, NULL if none */
  struct lm_ast_expr* on;           /* ON's expression */
} lm_ast_join;

/* A table function joined to each row of FROM's input:
 *   FROM input [alias], [LATERAL] f(args) [[AS] alias [(col, ...)]]
 *   FROM input [alias] CROSS JOIN [LATERAL] f(args) [[AS] alias [(col, ...)]]
 * call is the FUNCTION node f(args); cols (ncols, 0 without a list) rename
 * f's columns in order. */
typedef struct lm_ast_lateral {
  struct lm_ast_expr* call;
  const char* alias; /* NULL if none */
  const char** cols;
  size_t ncols;
} lm_ast_lateral;

typedef struct lm_ast_select {
  bool distinct;
  /* SELECT DISTINCT ON (exprs): the exprs (ndistinct_on >= 1, distinct set);
   * NULL for a plain DISTINCT or none. */
  struct lm_ast_expr** distinct_on;
  size_t ndistinct_on;
  lm_ast_select_item* items;
  size_t nitems; /* >= 1 */
  /* FROM name; for a derived table (FROM (query) [alias], or a CTE named in
   * FROM) the alias or CTE name ("subquery" without one) and from_select. */
  const char* from;
  const char* from_alias; /* NULL if none */
  int32_t from_line, from_column;
  struct lm_ast_select* from_select; /* the derived table's query, NULL for a name */
  /* FROM tumble(name, time, size) / hop(...): the call, NULL for a plain name
   * (only as a join's side, see lm_ast_join) */
  struct lm_ast_expr* from_window;
  lm_ast_join* join;       /* FROM name [alias] [ASOF] JOIN ...; NULL without a join */
  lm_ast_lateral* lateral; /* FROM name [alias], f(...) ...; NULL without one */
  /* `this UNION ALL union_next`: the next branch of a set, NULL if none. The
   * first select of a set stands for the whole set; every branch is a
   * select of its own (its ORDER BY / LIMIT belong to it). */
  struct lm_ast_select* union_next;
  lm_ast_expr* where; /* NULL if none */
  lm_ast_expr** group_by;
  size_t ngroup;
  lm_ast_expr* having;  /* NULL if none */
  lm_ast_expr* qualify; /* QUALIFY: a filter over analytic results, NULL if none */
  lm_ast_order_item* order_by;
  size_t norder;
  int64_t limit;  /* -1 none */
  int64_t offset; /* OFFSET m; 0 none */
} lm_ast_select;

/* EMIT clause of a continuous query. EMIT FINAL is parsed as ON_WINDOW_CLOSE. */
typedef enum lm_emit_mode {
  LM_EMIT_DEFAULT = 0,
  LM_EMIT_ON_WINDOW_CLOSE,
  LM_EMIT_CHANGES
} lm_emit_mode;

typedef struct lm_ast_column_def {
  const char* name;
  lm_sql_type type;
  bool not_null;
  int32_t line, column; /* of the column name */
} lm_ast_column_def;

/* One `key = value` of a WITH (...) clause. The key is lower-cased when written
 * as an identifier (dotted names joined with '.'), verbatim when written as a
 * 'string'. The value is a LITERAL (string, int, double, bool, interval) or a
 * VARIABLE. */
typedef struct lm_ast_option {
  const char* key;
  lm_ast_expr* value;
} lm_ast_option;

typedef enum lm_stmt_kind {
  LM_STMT_CREATE_SOURCE,
  LM_STMT_CREATE_STREAM, /* also CREATE [MATERIALIZED] VIEW (see object, materialized) */
  LM_STMT_CREATE_SINK,
  LM_STMT_DROP,
  LM_STMT_SHOW,
  LM_STMT_DESCRIBE,
  LM_STMT_EXPLAIN,
  LM_STMT_SELECT,       /* a bare SELECT */
  LM_STMT_CREATE_TABLE, /* CREATE TABLE name (columns, PRIMARY KEY (...)); with
                           `select`: ... AS query (a table fed by it) */
  LM_STMT_INSERT,       /* INSERT INTO name VALUES (...), ... or (`select`) a query */
  LM_STMT_DELETE        /* DELETE FROM name [WHERE ...] */
} lm_stmt_kind;

typedef enum lm_object_kind {
  LM_OBJ_SOURCE = 1,
  LM_OBJ_STREAM,
  LM_OBJ_VIEW,
  LM_OBJ_SINK,
  LM_OBJ_FUNCTION, /* a user-defined function (DROP FUNCTION, SHOW FUNCTIONS) */
  LM_OBJ_TABLE     /* a table with a primary key (CREATE/DROP TABLE, SHOW TABLES) */
} lm_object_kind;

typedef struct lm_stmt {
  lm_stmt_kind kind;
  int32_t line, column; /* first token of the statement */
  size_t text_offset;   /* byte span of the statement in the parsed text, */
  size_t text_len;      /* first token to last token, without the ';' */

  const char* name; /* object created/dropped/described; NULL for SHOW, SELECT */
  int32_t name_line, name_column;
  bool if_not_exists, or_replace, if_exists;
  bool materialized; /* CREATE/DROP/SHOW MATERIALIZED VIEW(S) */
  /* Made by the catalog for a table's parts (its changelog source and its
   * stream), never by the parser: DROP may take a table's parts. */
  bool internal;
  /* Made by the catalog: the view of a table fed by its query (CREATE TABLE
   * ... AS), whose columns and key the original statement declares. */
  bool table_fed;
  /* CREATE SOURCE: SOURCE; CREATE STREAM: STREAM; CREATE [MATERIALIZED] VIEW:
   * VIEW; CREATE SINK: SINK; DROP / SHOW: the target kind. 0 otherwise. */
  lm_object_kind object;

  /* CREATE SOURCE (options also for CREATE SINK) */
  lm_ast_column_def* columns;
  size_t ncolumns;              /* >= 1 for CREATE SOURCE */
  const char* watermark_column; /* NULL without a WATERMARK clause */
  int64_t watermark_delay_ms;   /* `col - INTERVAL ...`; 0 for `WATERMARK FOR col` */
  bool has_watermark;
  int32_t wm_line, wm_column; /* of the column name after WATERMARK FOR */
  lm_ast_option* options;
  size_t noptions;

  /* CREATE STREAM / VIEW / SELECT; also CREATE TABLE ... AS and INSERT INTO
   * ... SELECT (NULL for VALUES) */
  lm_ast_select* select;
  lm_emit_mode emit;
  int32_t emit_line, emit_column; /* of EMIT (CREATE STREAM / VIEW), 0 without one */

  /* CREATE SINK name FROM sink_from [INTO FILE (options) | WITH (options)] */
  const char* sink_from;
  int32_t sink_from_line, sink_from_column;
  bool sink_into_file;

  /* CREATE TABLE (columns, watermark and options as CREATE SOURCE's): the
   * PRIMARY KEY's column names, in order, and where each is written. */
  const char** pkey;
  int32_t* pkey_line;
  int32_t* pkey_column;
  size_t npkey; /* >= 1 for CREATE TABLE */

  /* INSERT INTO name VALUES: nrows rows of nvalues expressions each, row r's
   * in values[r * nvalues .. (r + 1) * nvalues). */
  struct lm_ast_expr** values;
  size_t nrows, nvalues;
  /* DELETE FROM name [WHERE where] */
  struct lm_ast_expr* where;

  /* EXPLAIN: the statement explained, or NULL for EXPLAIN name (in `name`) */
  struct lm_stmt* inner;
} lm_stmt;

#endif /* LM_SQL_AST_H */
