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
 * NULL semantics are standard SQL three-valued logic. Runtime faults give NULL
 * rather than aborting a continuous query: division or modulo by zero, integer
 * overflow, a CAST that cannot convert (DuckDB's TRY() semantics).
 */
#ifndef LM_EXPR_H
#define LM_EXPR_H

#include "laminar.h"
#include "util/types.h"

typedef enum lm_expr_kind {
  LM_EXPR_COLUMN = 1,   /* input column `column` */
  LM_EXPR_LITERAL = 2,  /* constant `lit` of type `type` */
  LM_EXPR_CALL = 3      /* operator `op` over args[0..nargs) */
} lm_expr_kind;

/* Operators and the operand types the binder guarantees. "num" = INT64 or
 * DOUBLE (both args the same type; INT32 is cast to INT64 by the binder).
 * Result types in brackets. */
typedef enum lm_expr_op {
  LM_XOP_NEG = 1,     /* num [same] */
  LM_XOP_NOT,         /* BOOL [BOOL] */
  LM_XOP_ADD,         /* num,num [same]; TIMESTAMP,INT64 (micros) [TIMESTAMP] */
  LM_XOP_SUB,         /* num,num [same]; TIMESTAMP,INT64 [TIMESTAMP];
                         TIMESTAMP,TIMESTAMP [INT64 micros] */
  LM_XOP_MUL,         /* num,num [same] */
  LM_XOP_DIV,         /* DOUBLE,DOUBLE [DOUBLE]; x/0 -> NULL */
  LM_XOP_MOD,         /* num,num [same]; x%0 -> NULL; sign of the dividend */
  LM_XOP_EQ,          /* T,T [BOOL] for any T (both the same type) */
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
  LM_XOP_COALESCE     /* T... [T] first non-NULL */
} lm_expr_op;

/* A literal value. For STRING, s points at bytes owned by whoever built the tree. */
typedef struct lm_value {
  bool is_null;
  bool b;
  int64_t i;   /* INT32, INT64, TIMESTAMP (micros) */
  double d;
  lm_str s;
} lm_value;

typedef struct lm_expr {
  lm_expr_kind kind;
  lm_type type;            /* result type */
  int32_t column;          /* COLUMN */
  lm_value lit;            /* LITERAL */
  lm_expr_op op;           /* CALL */
  bool has_else;           /* CALL CASE */
  int32_t nargs;           /* CALL */
  struct lm_expr** args;   /* CALL */
} lm_expr;

/* Scratch memory for evaluation. Results of lm_expr_eval stay valid until the
 * next lm_eval_ctx_reset. Grows to the largest batch seen, then reuses. */
typedef struct lm_eval_ctx lm_eval_ctx;
laminar_code lm_eval_ctx_create(lm_eval_ctx** out);
void lm_eval_ctx_reset(lm_eval_ctx* ctx);
void lm_eval_ctx_destroy(lm_eval_ctx* ctx);
/* Scratch allocation from the context (8-byte aligned; NULL when out of memory). */
void* lm_eval_ctx_alloc(lm_eval_ctx* ctx, size_t bytes);

/* Evaluate `e` over the rows sel[0..nsel) of the input columns `in` (each of
 * the same length; `sel` ascending; NULL sel means rows 0..nsel-1). The result
 * is dense: out->len == nsel and position k holds the value for row sel[k].
 * Column references with sel == NULL are returned zero-copy (out aliases the
 * input). Returns LAMINAR_OK or LAMINAR_ERR_NOMEM. */
laminar_code lm_expr_eval(lm_eval_ctx* ctx, const lm_expr* e, const lm_vec* in,
                          const uint32_t* sel, int64_t nsel, lm_vec* out);

/* Evaluate predicate `pred` (BOOL) over sel and write the rows where it is TRUE
 * (not FALSE, not NULL) to out_sel (caller-provided, room for nsel entries;
 * may equal `sel`), ascending; their count to *out_n. */
laminar_code lm_expr_filter(lm_eval_ctx* ctx, const lm_expr* pred, const lm_vec* in,
                            const uint32_t* sel, int64_t nsel, uint32_t* out_sel,
                            int64_t* out_n);

/* True when `e` (or any sub-expression) is not a pure function of its row
 * (none are in this version); used by the planner for constant folding. */
bool lm_expr_is_constant(const lm_expr* e);

#endif /* LM_EXPR_H */
