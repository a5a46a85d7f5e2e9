/*
 * expr.h -- bound scalar expressions and their vectorized evaluation.
 *
 * The binder (src/sql) turns SQL expressions into lm_expr trees whose types are
 * resolved and whose operands are already of the types each operator expects
 * (the binder inserts LM_XOP_CAST nodes), so every kernel here handles one
 * concrete type combination. Evaluation is batch-at-a-time over a selection
 * vector: no allocation per row; scratch memory comes from an lm_eval_ctx that
 * is reset between batches.
 *
 * NULL semantics are standard SQL three-valued logic. Results follow DuckDB
 * (the project's oracle) where DuckDB returns a value: `/` by zero gives
 * +-inf or NaN, math functions return IEEE NaN / inf. Where DuckDB raises an
 * error at run time the row gets NULL instead, since a continuous query cannot
 * abort on one bad row: modulo by zero, integer overflow, a CAST that cannot
 * convert (DuckDB's TRY() semantics). docs/SQL.md lists every rule.
 *
 * Scalar functions (ABS, ROUND, UPPER, SUBSTRING, date_trunc, ...) are
 * LM_XOP_FUNC calls whose `fn` names the kernel; the binder finds them by name
 * in the registry below (func.c), which also holds their type rules.
 */
#ifndef LM_EXPR_H
#define LM_EXPR_H

#include "laminar.h"
#include "util/types.h"

typedef enum lm_expr_kind {
  LM_EXPR_COLUMN = 1,  /* input column `column` */
  LM_EXPR_LITERAL = 2, /* constant `lit` of type `type` */
  LM_EXPR_CALL = 3     /* operator `op` over args[0..nargs) */
} lm_expr_kind;

/* Operators and the operand types the binder guarantees. "num" = INT32, INT64
 * or DOUBLE (both args the same type; mixed operands are cast to the wider one
 * by the binder, as in DuckDB: INT op INT stays INT and overflows at 32 bits).
 * Result types in brackets. */
typedef enum lm_expr_op {
  LM_XOP_NEG = 1, /* num [same] */
  LM_XOP_NOT,     /* BOOL [BOOL] */
  LM_XOP_ADD,     /* num,num [same]; TIMESTAMP,INT64 (micros) [TIMESTAMP] */
  LM_XOP_SUB,     /* num,num [same]; TIMESTAMP,INT64 [TIMESTAMP];
                         TIMESTAMP,TIMESTAMP [INT64 micros] */
  LM_XOP_MUL,     /* num,num [same] */
  LM_XOP_DIV,     /* DOUBLE,DOUBLE [DOUBLE]; x/0 -> +inf, -inf or NaN (DuckDB) */
  LM_XOP_MOD,     /* num,num [same]; x%0 -> NULL; sign of the dividend */
  LM_XOP_EQ,      /* T,T [BOOL] for any T (both the same type) */
  LM_XOP_NE,
  LM_XOP_LT,
  LM_XOP_LE,
  LM_XOP_GT,
  LM_XOP_GE,
  LM_XOP_AND,         /* BOOL,BOOL [BOOL] three-valued */
  LM_XOP_OR,          /* BOOL,BOOL [BOOL] three-valued */
  LM_XOP_IS_NULL,     /* any [BOOL, never NULL] */
  LM_XOP_IS_NOT_NULL, /* any [BOOL, never NULL] */
  LM_XOP_CASE,        /* args: when1, then1, ..., whenN, thenN [, else] (has_else);
                         whens BOOL, thens/else all of `type` */
  LM_XOP_CAST,        /* any -> `type` (see cast.c for the conversion table) */
  LM_XOP_CONCAT,      /* STRING,STRING [STRING] */
  LM_XOP_COALESCE,    /* T... [T] first non-NULL */
  LM_XOP_FUNC         /* scalar function `fn` (lm_func_id) over args, see func.c */
} lm_expr_op;

/* The scalar functions (kernels in math.c, strfn.c, time.c). Argument and
 * result types are those lm_func_bind() chose; "int" = INT32 or INT64. */
typedef enum lm_func_id {
  LM_FN_ABS = 1,   /* int|DOUBLE [same]; ABS(INT_MIN) -> NULL */
  LM_FN_ROUND,     /* x [, int digits]: int [same] half away from zero;
                        DOUBLE [DOUBLE]; integer overflow -> NULL */
  LM_FN_FLOOR,     /* DOUBLE [DOUBLE] */
  LM_FN_CEIL,      /* DOUBLE [DOUBLE] */
  LM_FN_SQRT,      /* DOUBLE [DOUBLE]; IEEE (sqrt(-1) = NaN) */
  LM_FN_POWER,     /* DOUBLE,DOUBLE [DOUBLE] */
  LM_FN_LN,        /* DOUBLE [DOUBLE]; ln(0) = -inf, ln(-1) = NaN */
  LM_FN_EXP,       /* DOUBLE [DOUBLE] */
  LM_FN_LOG10,     /* DOUBLE [DOUBLE] */
  LM_FN_UPPER,     /* STRING [STRING]; Unicode simple case mapping */
  LM_FN_LOWER,     /* STRING [STRING] */
  LM_FN_LENGTH,    /* STRING [INT64] characters (code points); BINARY: bytes */
  LM_FN_SUBSTRING, /* STRING, INT64 start [, INT64 count] [STRING], in characters */
  LM_FN_TRIM,      /* STRING [, STRING chars] [STRING]; default: spaces */
  LM_FN_LTRIM,
  LM_FN_RTRIM,
  LM_FN_CONCAT,      /* STRING... [STRING]; NULL arguments are skipped */
  LM_FN_REPLACE,     /* STRING, STRING from, STRING to [STRING] */
  LM_FN_STARTS_WITH, /* STRING, STRING [BOOL] */
  LM_FN_LIKE,        /* STRING, STRING pattern [BOOL]; fn_arg = escape char or -1 */
  LM_FN_ILIKE,       /* as LIKE, case-insensitive (simple lower-case mapping) */
  LM_FN_DATE_PART,   /* TIMESTAMP [INT64 or DOUBLE]; fn_arg = lm_date_part */
  LM_FN_DATE_TRUNC,  /* TIMESTAMP [TIMESTAMP]; fn_arg = lm_date_part */
  /* JSON as VARCHAR text (json.c); a path is a VARCHAR or an integer index */
  LM_FN_JSON_EXTRACT,        /* STRING, path [STRING]: the value as JSON text (->) */
  LM_FN_JSON_EXTRACT_STRING, /* STRING, path [STRING]: a string's text (->>) */
  LM_FN_JSON_VALID,          /* STRING [BOOL] */
  LM_FN_JSON_TYPE,           /* STRING [, path] [STRING]: DuckDB's type names */
  LM_FN_JSON_ARRAY_LENGTH,   /* STRING [, path] [INT64]: 0 for a non-array */
  LM_FN_UDF,         /* a user-defined function `udf` (udf.c): its declared types */
  LM_FN_OCTET_LENGTH /* STRING or BINARY [INT64] bytes */
} lm_func_id;

/* Fields of EXTRACT / date_part and units of date_trunc (time.c). */
typedef enum lm_date_part {
  LM_DP_YEAR = 1,
  LM_DP_QUARTER,
  LM_DP_MONTH,
  LM_DP_WEEK, /* ISO week */
  LM_DP_DAY,
  LM_DP_DOW,    /* Sunday 0 .. Saturday 6 */
  LM_DP_ISODOW, /* Monday 1 .. Sunday 7 */
  LM_DP_DOY,
  LM_DP_HOUR,
  LM_DP_MINUTE,
  LM_DP_SECOND,
  LM_DP_MILLISECOND, /* seconds * 1000 + milliseconds, as DuckDB */
  LM_DP_MICROSECOND, /* seconds * 1000000 + microseconds */
  LM_DP_EPOCH,       /* seconds since the epoch, DOUBLE */
  LM_DP_ISOYEAR,
  LM_DP_YEARWEEK, /* isoyear * 100 + week */
  LM_DP_DECADE,
  LM_DP_CENTURY,
  LM_DP_MILLENNIUM,
  LM_DP_ERA,
  LM_DP_JULIAN,  /* Julian day with the day's fraction, DOUBLE */
  LM_DP_TIMEZONE /* always 0 (TIMESTAMP has no zone) */
} lm_date_part;

/* A literal value. For STRING, s points at bytes owned by whoever built the tree. */
typedef struct lm_value {
  bool is_null;
  bool b;
  int64_t i; /* INT32, INT64, TIMESTAMP (micros) */
  double d;
  lm_str s;
} lm_value;

typedef struct lm_udf lm_udf;

typedef struct lm_expr {
  lm_expr_kind kind;
  lm_type type;          /* result type */
  int32_t column;        /* COLUMN */
  lm_value lit;          /* LITERAL */
  lm_expr_op op;         /* CALL */
  lm_func_id fn;         /* CALL FUNC */
  int32_t fn_arg;        /* CALL FUNC: a bound constant (LIKE escape, date part) */
  const lm_udf* udf;     /* CALL FUNC LM_FN_UDF: the function (a reference held by
                            the plan, lm_udf_list) */
  bool has_else;         /* CALL CASE */
  int32_t nargs;         /* CALL */
  struct lm_expr** args; /* CALL */
} lm_expr;

/* ---- the function registry (func.c) ------------------------------------------------ */

/* A scalar function known by name; opaque to the binder. */
typedef struct lm_func_def lm_func_def;

/* The function called `name` (case-insensitive; aliases such as POW, CEILING,
 * SUBSTR included), or NULL when there is none. */
const lm_func_def* lm_func_find(const char* name);

/* The entry of a function id, including those reached through syntax only
 * (LIKE, ILIKE); NULL if none. */
const lm_func_def* lm_func_by_id(lm_func_id fn);

/* Canonical lower-case name of `f` (static text). */
const char* lm_func_name(const lm_func_def* f);

/* The outcome of typing one call (lm_func_bind). */
typedef struct lm_func_binding {
  lm_func_id fn;
  lm_type result;
  int32_t fn_arg;    /* see lm_func_id */
  int32_t bad_arg;   /* on failure: index of the argument at fault, -1 for the call */
  char message[200]; /* on failure: what is wrong, without position */
} lm_func_binding;

/* Type a call of `f` over the bound arguments args[0..nargs) and write to
 * want[i] the type argument i must be cast to (the binder inserts the casts;
 * a string literal may be cast to a number or TIMESTAMP, as DuckDB's string
 * literals are). Constant arguments (date part names) are read from literals.
 * Returns LAMINAR_OK, LAMINAR_ERR_SQL_FUNCTION_ARGS (wrong argument count, or
 * a constant argument that is invalid or not constant) or
 * LAMINAR_ERR_TYPE_MISMATCH, with out->message and out->bad_arg set. */
laminar_code lm_func_bind(const lm_func_def* f, const lm_expr* const* args, int32_t nargs,
                          lm_type* want, lm_func_binding* out);

/* The date part / date_trunc unit named `name` (DuckDB's names and aliases,
 * case-insensitive), or 0. For date_trunc (`trunc` true) only units that
 * truncate are accepted. */
lm_date_part lm_date_part_find(lm_str name, bool trunc);

/* ---- user-defined scalar functions (udf.c) ----------------------------------------- */

/* A registered function (laminar_function_register): its name, declared
 * types, callback and flags. Immutable after creation and refcounted: the
 * database's registry holds one reference and each plan that calls it one
 * (so a stream keeps its function alive), the last unref calls the user's
 * destroy. Calls are evaluated by lm_expr_eval like any function; a failure
 * is LAMINAR_ERR_FUNCTION_FAILED or LAMINAR_ERR_FUNCTION_RESULT with the text
 * in lm_eval_ctx_error(). */
laminar_code lm_udf_create(const char* name, const char* const* arg_types, int32_t nargs,
                           const char* return_type, laminar_function_callback fn,
                           void* user, void (*destroy)(void* user), uint32_t flags,
                           lm_udf** out, laminar_error* err);
void lm_udf_ref(lm_udf* f);
void lm_udf_unref(lm_udf* f); /* NULL: no-op */
const char* lm_udf_name(const lm_udf* f);
/* SHOW FUNCTIONS text: the argument types ("DOUBLE, BIGINT"), the result type
 * and the flags ("deterministic, called on null"), each NUL-terminated. */
void lm_udf_describe(const lm_udf* f, char* args, size_t args_cap, char* result,
                     size_t result_cap, char* flags, size_t flags_cap);
/* Its SQL usage text ("fx(DOUBLE, BIGINT) -> DOUBLE", a table function's
 * "-> TABLE(i BIGINT, s VARCHAR)") into buf. */
void lm_udf_usage(const lm_udf* f, char* buf, size_t cap);
/* Set (or clear: NULL) what the last unref calls; before f is shared. */
void lm_udf_set_destroy(lm_udf* f, void (*destroy)(void* user));

/* Type a call of `f` as lm_func_bind types a built-in's (want[i]: the
 * declared argument types; casts as for built-ins). */
laminar_code lm_udf_bind(const lm_udf* f, const lm_expr* const* args, int32_t nargs,
                         lm_type* want, lm_func_binding* out);

/* ---- user-defined aggregates (udf.c; the state machinery is agg/udaf.c) ---------- */

typedef struct lm_eval_ctx lm_eval_ctx;

/* laminar_aggregate_register's callbacks. */
typedef struct lm_udaf_callbacks {
  int64_t state_size;
  laminar_aggregate_init init;
  laminar_aggregate_update update;
  laminar_aggregate_update retract;
  laminar_aggregate_merge merge;
  laminar_aggregate_finalize finalize;
  laminar_aggregate_serialize serialize;
  laminar_aggregate_deserialize deserialize;
  laminar_aggregate_destroy_state destroy_state;
} lm_udaf_callbacks;

/* An aggregate function object (lm_udf_is_aggregate), checked as
 * laminar_aggregate_register documents; refcounted and listed as a scalar
 * function is. */
laminar_code lm_udaf_create(const char* name, const char* const* arg_types, int32_t nargs,
                            const char* return_type, const lm_udaf_callbacks* cb,
                            void* user, void (*destroy)(void* user), uint32_t flags,
                            lm_udf** out, laminar_error* err);
bool lm_udf_is_aggregate(const lm_udf* f);
/* Its declared return type. */
lm_type lm_udf_result_type(const lm_udf* f);
int64_t lm_udaf_state_size(const lm_udf* f);
bool lm_udaf_retractable(const lm_udf* f); /* has a retract callback */
/* Its states point at memory of their own: copies go through serialize. */
bool lm_udaf_owns_memory(const lm_udf* f);
/* A new group's state (zeroed, then init). */
void lm_udaf_init_state(lm_udf* f, void* state);
void lm_udaf_destroy_state(lm_udf* f, void* state);
/* Update (or retract) the states of groups gids[j] with the rows sel[j] (sel
 * NULL: j) of the nargs argument vectors, j < m; rows with a NULL argument
 * skipped unless CALLED_ON_NULL. Scratch memory from ctx. A failure is
 * LAMINAR_ERR_FUNCTION_FAILED with the text in lm_eval_ctx_error(ctx). */
laminar_code lm_udaf_update(lm_eval_ctx* ctx, lm_udf* f, bool retract, void* states,
                            const lm_vec* args, const uint32_t* sel, const uint32_t* gids,
                            int64_t m);
laminar_code lm_udaf_merge(lm_eval_ctx* ctx, lm_udf* f, void* state, const void* other);
/* The results of n consecutive states into data / nulls (n values each);
 * LAMINAR_ERR_FUNCTION_FAILED or LAMINAR_ERR_FUNCTION_RESULT with the text in
 * ctx. */
laminar_code lm_udaf_finalize(lm_eval_ctx* ctx, lm_udf* f, const void* states, int64_t n,
                              void* data, uint8_t* nulls);
/* The state's encoding: its length, written to buf if it fits cap; negative
 * on failure. Without serialize: the state's bytes. */
int64_t lm_udaf_serialize(lm_udf* f, const void* state, void* buf, int64_t cap);
/* The state from its encoding (LAMINAR_ERR_FUNCTION_FAILED, or
 * LAMINAR_ERR_RECOVERY for plain bytes of the wrong length). */
laminar_code lm_udaf_deserialize(lm_udf* f, void* state, const void* buf, int64_t len);

/* ---- table functions (udf.c; the operator is op/lateral.c) ------------------------ */

/* A table function object (lm_udf_is_table): one input row -> zero or more
 * output rows of `columns` (a struct ArrowSchema, borrowed: names and formats
 * copied), checked as laminar_table_function_register documents; refcounted
 * and listed as a scalar function is. */
laminar_code lm_udtf_create(const char* name, const char* const* arg_types, int32_t nargs,
                            const struct ArrowSchema* columns,
                            laminar_function_callback fn, void* user,
                            void (*destroy)(void* user), uint32_t flags, lm_udf** out,
                            laminar_error* err);
bool lm_udf_is_table(const lm_udf* f);
int32_t lm_udtf_ncols(const lm_udf* f);
lm_type lm_udtf_col_type(const lm_udf* f, int32_t i);
const char* lm_udtf_col_name(const lm_udf* f, int32_t i);
/* Call table function f over n rows of its evaluated arguments (args: dense
 * vectors of n rows, cast to the declared types). Rows with a NULL argument
 * give no rows unless CALLED_ON_NULL. Out: *out_m output rows, cols[0..ncols)
 * their columns (dense, ctx memory), *out_parent the input row (< n) of each,
 * ascending. LAMINAR_ERR_FUNCTION_FAILED / LAMINAR_ERR_FUNCTION_RESULT with the
 * text in lm_eval_ctx_error(ctx), or LAMINAR_ERR_NOMEM. */
laminar_code lm_udtf_eval(lm_eval_ctx* ctx, lm_udf* f, const lm_vec* args, int64_t n,
                          lm_vec* cols, const uint32_t** out_parent, int64_t* out_m);
/* The built-in table function `name` taking nargs arguments (generate_series,
 * range, string_split_to_rows) as a new object (one reference) whose column is
 * named `column` (NULL: the function's name), or NULL when there is none of
 * that name (*out_known false) or of that many arguments (*out_known true),
 * or no memory. udtf_builtin.c. */
lm_udf* lm_udtf_builtin(const char* name, int32_t nargs, const char* column,
                        bool* out_known);

/* A set of functions, each held by one reference: the database's registry
 * (names unique, case-insensitive) and the functions a plan calls. Not
 * thread-safe: the catalog's lock guards the database's. */
typedef struct lm_udf_list {
  lm_udf** items;
  int32_t n;
} lm_udf_list;

/* The function named `name` (case-insensitive) or NULL. */
lm_udf* lm_udf_list_find(const lm_udf_list* l, const char* name);
/* Whether l holds f itself. */
bool lm_udf_list_has(const lm_udf_list* l, const lm_udf* f);
/* Add a reference to f (kept after a function of the same name, which is
 * dropped, if `replace`; appended otherwise). LAMINAR_ERR_NOMEM. */
laminar_code lm_udf_list_add(lm_udf_list* l, lm_udf* f, bool replace);
/* Drop the function named `name`; false when there is none. */
bool lm_udf_list_remove(lm_udf_list* l, const char* name);
/* Drop every reference and free the list (left empty). */
void lm_udf_list_free(lm_udf_list* l);

/* Scratch memory for evaluation. Results of lm_expr_eval stay valid until the
 * next lm_eval_ctx_reset. Grows to the largest batch seen, then reuses. */
typedef struct lm_eval_ctx lm_eval_ctx;
laminar_code lm_eval_ctx_create(lm_eval_ctx** out);
void lm_eval_ctx_reset(lm_eval_ctx* ctx);
void lm_eval_ctx_destroy(lm_eval_ctx* ctx);
/* Scratch allocation from the context (8-byte aligned; NULL when out of memory). */
void* lm_eval_ctx_alloc(lm_eval_ctx* ctx, size_t bytes);
/* The text of the last evaluation failure that has one (a user-defined
 * function's, "function 'fx' failed: ..."); "" when none. */
const char* lm_eval_ctx_error(const lm_eval_ctx* ctx);
/* Whether `rc` is a failure of a user-defined function (its text in
 * lm_eval_ctx_error). */
static inline bool lm_expr_udf_failed(laminar_code rc) {
  return rc == LAMINAR_ERR_FUNCTION_FAILED || rc == LAMINAR_ERR_FUNCTION_RESULT;
}

/* Evaluate `e` over the rows sel[0..nsel) of the input columns `in` (each of
 * the same length; `sel` ascending; NULL sel means rows 0..nsel-1). The result
 * is dense: out->len == nsel and position k holds the value for row sel[k].
 * Column references with sel == NULL are returned zero-copy (out aliases the
 * input). Returns LAMINAR_OK, LAMINAR_ERR_NOMEM, or a user-defined function's
 * failure (lm_expr_udf_failed; the text in lm_eval_ctx_error). */
laminar_code lm_expr_eval(lm_eval_ctx* ctx, const lm_expr* e, const lm_vec* in,
                          const uint32_t* sel, int64_t nsel, lm_vec* out);

/* Evaluate predicate `pred` (BOOL) over sel and write the rows where it is TRUE
 * (not FALSE, not NULL) to out_sel (caller-provided, room for nsel entries;
 * may equal `sel`), ascending; their count to *out_n. */
laminar_code lm_expr_filter(lm_eval_ctx* ctx, const lm_expr* pred, const lm_vec* in,
                            const uint32_t* sel, int64_t nsel, uint32_t* out_sel,
                            int64_t* out_n);

/* True when `e` has the same value for every row: literals and calls over
 * them, except calls of a user-defined function that is not deterministic. */
bool lm_expr_is_constant(const lm_expr* e);

/* Text forms used by CAST(x AS VARCHAR) and by file sinks; each writes at most `cap` bytes
 * (no NUL terminator is guaranteed) and returns the length.
 *   double:    shortest round-trip digits, fixed notation when the decimal
 *              exponent is in [-4, 16) with ".0" on integral values, else
 *              "d[.ddd]e+XX" (at least two exponent digits); "nan", "inf",
 *              "-inf" (what DuckDB prints).
 *   timestamp: "YYYY-MM-DD HH:MM:SS[.ffffff]" with trailing zeros of the
 *              fraction dropped; years before 1 print as "YYYY-MM-DD (BC) ...".
 *   date:      "YYYY-MM-DD", years before 1 as "YYYY-MM-DD (BC)". */
#define LM_EXPR_DOUBLE_TEXT_MAX 32
#define LM_EXPR_TIMESTAMP_TEXT_MAX 48
#define LM_EXPR_DATE_TEXT_MAX 24
/* Text of the unscaled DECIMAL x of scale `scale` ("-12.50", fixed scale, as
 * DuckDB) into buf (cap bytes, NUL-terminated, truncated to fit); returns its
 * length. LM_EXPR_DECIMAL_TEXT_MAX bytes always suffice (decimal.c). */
#define LM_EXPR_DECIMAL_TEXT_MAX 48
int lm_expr_format_decimal(lm_i128 x, int32_t scale, char* buf, size_t cap);
/* Text (DuckDB's grammar: blanks, sign, digits with '_', point, exponent) and
 * DOUBLE (DuckDB's rounding) to the unscaled value of DECIMAL(p, s), rounding
 * half away from zero; false when it does not convert or fit (decimal.c). */
bool lm_dec_parse(lm_str s, int32_t precision, int32_t scale, lm_i128* out);
bool lm_dec_from_double(double d, int32_t precision, int32_t scale, lm_i128* out);
int lm_expr_format_double(double d, char* buf, size_t cap);
/* A REAL as DuckDB prints it: the double grammar above with the fewest digits
 * that read back as the same float ("0.1", "0.33333334"). */
int lm_expr_format_real(float f, char* buf, size_t cap);
int lm_expr_format_timestamp(int64_t micros, char* buf, size_t cap);
int lm_expr_format_date(int32_t days, char* buf, size_t cap);
/* A TIME of `us` microseconds since midnight (0 .. 86400000000) as DuckDB
 * prints it, "HH:MM:SS[.ffffff]" without trailing zeros (at most 24 bytes). */
int lm_expr_format_time(int64_t us, char* buf, size_t cap);

#endif /* LM_EXPR_H */
