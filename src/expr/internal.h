/*
 * internal.h -- what the files of src/expr share and nothing else sees:
 * the "maybe constant" vector the kernels pass around, the CAST entry points,
 * the text formatters CAST uses, and counters tests use to check that the
 * evaluation context stops allocating in a steady state.
 */
#ifndef LM_EXPR_INTERNAL_H
#define LM_EXPR_INTERNAL_H

#include "expr/expr.h"

#include <stddef.h>

/* An intermediate result inside the evaluator. When `cst` is false, `v` is an
 * ordinary dense lm_vec of v.len rows. When `cst` is true the value is the same
 * for every one of the v.len logical rows and v.data / v.nulls hold ONE
 * element (v.nulls is NULL when that element is not null). Constants arise
 * from literals and from operators whose inputs are all constant; they let a
 * kernel run `column op literal` without broadcasting the literal, and they are
 * expanded to dense form only at the lm_expr_eval boundary. */
typedef struct lm_xvec {
  lm_vec v;
  bool cst;
} lm_xvec;

/* Evaluate `e` over sel[0..n) into an lm_xvec (eval.c). Same contract as
 * lm_expr_eval except that the result may be constant. */
laminar_code lm_expr_eval_x(lm_eval_ctx* ctx, const lm_expr* e, const lm_vec* in,
                            const uint32_t* sel, int64_t n, lm_xvec* out);

/* Expand a constant to a dense vector of out->len rows in ctx memory (no-op for a
 * dense one). */
laminar_code lm_expr_densify(lm_eval_ctx* ctx, const lm_xvec* x, lm_vec* out);

/* CAST the in->len values of the dense vector `in` to type `to` (cast.c).
 * Values that cannot convert become NULL (TRY_CAST semantics). Same type is
 * the identity (out aliases in). Result memory (data, nulls, string bytes)
 * comes from ctx. Returns LAMINAR_OK or LAMINAR_ERR_NOMEM. */
laminar_code lm_expr_cast(lm_eval_ctx* ctx, const lm_vec* in, lm_type to, lm_vec* out);

/* lm_expr_format_double / lm_expr_format_timestamp: in expr.h (file sinks use them). */

/* DECIMAL kernels (decimal.c). lm_expr_cast_decimal: lm_expr_cast where `to`
 * or in->type is a DECIMAL (same contract). lm_expr_arith_decimal: op (NEG with
 * b NULL, ADD, SUB, MUL, MOD) of decimal operands into `type`, NULL where the
 * result does not fit. lm_expr_compare_decimal: op (EQ .. GE) of two decimal
 * operands of any scales. */
laminar_code lm_expr_cast_decimal(lm_eval_ctx* ctx, const lm_vec* in, lm_type to,
                                  lm_vec* out);
laminar_code lm_expr_arith_decimal(lm_eval_ctx* ctx, lm_expr_op op, lm_type type,
                                   const lm_xvec* a, const lm_xvec* b, int64_t n,
                                   lm_xvec* out);
laminar_code lm_expr_compare_decimal(lm_eval_ctx* ctx, lm_expr_op op, const lm_xvec* a,
                                     const lm_xvec* b, int64_t n, lm_xvec* out);
/* The unscaled DECIMAL x at from_scale moved to to_scale (rounding half away
 * from zero when digits drop); false when it leaves 128 bits. */
bool lm_dec_rescale(lm_i128 x, int32_t from_scale, int32_t to_scale, lm_i128* out);
/* Whether |x| < 10^precision. */
bool lm_dec_fits(lm_i128 x, int32_t precision);
double lm_dec_to_double(lm_i128 x, int32_t scale);

/* Parsers used by CAST from VARCHAR; false when the text does not convert.
 * See cast.c for the accepted grammar (DuckDB's). */
bool lm_expr_parse_int64(lm_str s, int64_t* out);
bool lm_expr_parse_double(lm_str s, double* out);
bool lm_expr_parse_bool(lm_str s, bool* out);
bool lm_expr_parse_timestamp(lm_str s, int64_t* out);
bool lm_expr_parse_date(lm_str s, int32_t* out);

/* ---- scalar functions (func.c and the kernel files) ------------------------------ */

/* Evaluate an LM_XOP_FUNC call (func.c); same contract as lm_expr_eval_x. */
laminar_code lm_expr_eval_func(lm_eval_ctx* ctx, const lm_expr* e, const lm_vec* in,
                               const uint32_t* sel, int64_t n, lm_xvec* out);


/* One function call over a batch, as a kernel sees it. The arguments are
 * evaluated; for a strict function none is a constant NULL. A kernel computes
 * m rows (1 when every argument is constant; a constant argument is read at
 * index 0, see FARG) into `data` (m values of e->type, allocated), skipping or
 * ignoring rows where `nulls` is set, and makes a row NULL through
 * lm_fcall_nulls(). */
typedef struct lm_fcall {
  lm_eval_ctx* ctx;
  const lm_expr* e;
  const lm_xvec* args;
  int32_t nargs;
  int64_t m;
  const uint8_t* nulls; /* merged argument nulls over m rows; NULL: none */
  bool owned;           /* nulls is writable context memory */
  void* data;
} lm_fcall;

/* Row k of argument i's values as type T (index 0 for a constant). */
#define FARG(c, T, i, k) (((const T*)(c)->args[i].v.data)[(c)->args[i].cst ? 0 : (k)])
/* Whether row k of the call is NULL on input. */
#define FNULL(c, k) ((c)->nulls != NULL && (c)->nulls[k])

/* A writable null array of m rows for the call (allocated on first use,
 * holding the input nulls); NULL when out of memory. */
uint8_t* lm_fcall_nulls(lm_fcall* c);

laminar_code lm_fn_math_decimal(lm_fcall* c); /* decimal.c: ABS ROUND FLOOR CEIL of a
                                                 DECIMAL, into a DECIMAL */
laminar_code lm_fn_math(lm_fcall* c); /* math.c: ABS ROUND FLOOR CEIL SQRT POWER LN
                                                EXP LOG10 */
laminar_code lm_fn_case(lm_fcall* c); /* strfn.c: UPPER LOWER */
laminar_code lm_fn_length(lm_fcall* c);
laminar_code lm_fn_octet_length(lm_fcall* c);
laminar_code lm_fn_substring(lm_fcall* c);
laminar_code lm_fn_trim(lm_fcall* c); /* TRIM LTRIM RTRIM */
laminar_code lm_fn_concat(lm_fcall* c);
laminar_code lm_fn_replace(lm_fcall* c);
laminar_code lm_fn_starts_with(lm_fcall* c);
laminar_code lm_fn_like(lm_fcall* c); /* LIKE ILIKE */
laminar_code lm_fn_json(lm_fcall* c); /* json.c: the LM_FN_JSON_* functions */
/* Whether a JSON path parses: 0 yes, 1 no, 2 a wildcard; -1 out of memory. */
int lm_json_path_check(const char* s, int64_t len);
laminar_code lm_fn_date_part(lm_fcall* c); /* time.c */
laminar_code lm_fn_date_trunc(lm_fcall* c);

/* ---- UTF-8 and case mapping (strfn.c) ----------------------------------------------- */

/* Decode one UTF-8 character from s[0..len) (len > 0) into *cp; returns the
 * bytes used (1..4). Input is valid UTF-8 (checked at import); a stray byte
 * decodes as itself and uses 1 byte. */
int64_t lm_utf8_decode(const char* s, int64_t len, int32_t* cp);
/* Whether a LIKE pattern is well formed: it does not end with the escape
 * character (code point; -1 for no escape). */
bool lm_like_pattern_ok(lm_str p, int32_t escape);
/* Unicode simple case mappings (casemap.h tables); identity when none. */
int32_t lm_unicode_upper(int32_t cp);
int32_t lm_unicode_lower(int32_t cp);

/* ---- calendar (time.c) ----------------------------------------------------------- */

/* Days since 1970-01-01 of a proleptic Gregorian date and back. */
int64_t lm_days_from_civil(int64_t y, int64_t m, int64_t d);
void lm_civil_from_days(int64_t days, int64_t* y, int64_t* m, int64_t* d);
/* Floor division (b > 0). */
int64_t lm_floor_div(int64_t a, int64_t b);
/* Microseconds in a day: a DATE's day number times this is its midnight. */
#define LM_US_PER_DAY INT64_C(86400000000)

/* Record the text of an evaluation failure (lm_eval_ctx_error). */
#define LM_EVAL_ERROR_MAX 512
void lm_eval_ctx_set_error(lm_eval_ctx* ctx, const char* fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Evaluate a call of a user-defined function (udf.c) over its evaluated
 * arguments args[0..e->nargs), each of n logical rows; same contract as
 * lm_expr_eval_x. */
laminar_code lm_udf_eval(lm_eval_ctx* ctx, const lm_expr* e, const lm_xvec* args,
                         int64_t n, lm_xvec* out);

/* A user-defined function's declared types (udf.c); its usage text is
 * lm_udf_usage (expr.h). */
int32_t lm_udf_nargs(const lm_udf* f);
lm_type lm_udf_arg_type(const lm_udf* f, int32_t i);
lm_type lm_udf_result(const lm_udf* f);
bool lm_udf_deterministic(const lm_udf* f);

/* Context statistics (ctx.c): chunks obtained from malloc over the context's
 * life, and bytes currently reserved. */
uint64_t lm_eval_ctx_mallocs(const lm_eval_ctx* ctx);
size_t lm_eval_ctx_reserved(const lm_eval_ctx* ctx);

#endif /* LM_EXPR_INTERNAL_H */
