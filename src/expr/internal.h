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

/* Text forms used by CAST(x AS VARCHAR); each writes at most `cap` bytes
 * (no NUL terminator is guaranteed) and returns the length.
 *   double:    shortest round-trip digits, fixed notation when the decimal
 *              exponent is in [-4, 16) with ".0" on integral values, else
 *              "d[.ddd]e+XX" (at least two exponent digits); "nan", "inf",
 *              "-inf" (what DuckDB prints).
 *   timestamp: "YYYY-MM-DD HH:MM:SS[.ffffff]" with trailing zeros of the
 *              fraction dropped; years before 1 print as "YYYY-MM-DD (BC) ...". */
#define LM_EXPR_DOUBLE_TEXT_MAX 32
#define LM_EXPR_TIMESTAMP_TEXT_MAX 48
int lm_expr_format_double(double d, char* buf, size_t cap);
int lm_expr_format_timestamp(int64_t micros, char* buf, size_t cap);

/* Parsers used by CAST from VARCHAR; false when the text does not convert.
 * See cast.c for the accepted grammar (DuckDB's). */
bool lm_expr_parse_int64(lm_str s, int64_t* out);
bool lm_expr_parse_double(lm_str s, double* out);
bool lm_expr_parse_bool(lm_str s, bool* out);
bool lm_expr_parse_timestamp(lm_str s, int64_t* out);

/* Context statistics (ctx.c): chunks obtained from malloc over the context's
 * life, and bytes currently reserved. */
uint64_t lm_eval_ctx_mallocs(const lm_eval_ctx* ctx);
size_t lm_eval_ctx_reserved(const lm_eval_ctx* ctx);

#endif /* LM_EXPR_INTERNAL_H */
