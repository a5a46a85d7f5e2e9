/*
 * binder.h -- semantic analysis: AST of CREATE STREAM -> typed lm_plan.
 */
#ifndef LM_SQL_BINDER_H
#define LM_SQL_BINDER_H

#include "laminar.h"
#include "sql/ast.h"
#include "sql/plan.h"

/* Bind the SELECT of a CREATE STREAM statement against the catalog (through
 * `lookup`) and the user-defined functions `funcs` (NULL: none). On success *out is a complete plan (free with lm_plan_free).
 * Errors carry the line:column of the offending expression:
 * 1002 unknown input, 1003 unknown column, 1005 unsupported construct,
 * 1006 grouping errors, 2001 type errors. On failure *out is left empty. */
laminar_code lm_bind_stream(const lm_stmt* stmt, lm_plan_lookup_fn lookup,
                            void* lookup_arg, const lm_udf_list* funcs, lm_plan* out,
                            laminar_error* err);

/* lm_bind_stream with the tables a lookup join may read (`tables`, called
 * with lookup_arg; NULL: none, and a plain JOIN is refused). Lookup-join
 * errors: 1002 no such table, 1005 a JOIN of something that is not a table
 * (or FOR SYSTEM_TIME AS OF), 1021 an ON that is not one equality per key
 * column, 2001 a key of another type than the table's. */
laminar_code lm_bind_stream_tables(const lm_stmt* stmt, lm_plan_lookup_fn lookup,
                                   lm_plan_table_fn tables, void* lookup_arg,
                                   const lm_udf_list* funcs, lm_plan* out,
                                   laminar_error* err);

/* True when expression `e` calls an aggregate function anywhere in it: a
 * built-in one or a user-defined one of `funcs` (NULL: built-ins only). */
bool lm_bind_has_aggregate(const lm_udf_list* funcs, const lm_ast_expr* e);
/* The binder's structural equality of expressions (how a select item matches
 * a GROUP BY key; column qualifiers are ignored). */
bool lm_bind_ast_equal(const lm_ast_expr* x, const lm_ast_expr* y);
/* `e` is a call of an aggregate (COUNT, SUM, ...) / of a window function
 * (tumble, hop, slide, session) itself. */
bool lm_bind_is_aggregate_call(const lm_ast_expr* e);
bool lm_bind_is_window_call(const lm_ast_expr* e);
/* An operator as SQL spells it ("+", "<>", "AND", "||"); static text. */
const char* lm_bind_op_text(lm_ast_op op);

/* Whether a select list (or QUALIFY) calls a window function (OVER). */
bool lm_bind_select_is_analytic(const lm_ast_select* sel);

/* Map a SQL type of the AST to the engine's logical type. */
lm_type lm_bind_sql_type(lm_sql_type type);

#endif /* LM_SQL_BINDER_H */
