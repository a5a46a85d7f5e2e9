/*
 * sql.h -- the interface of the SQL front end: the arena that owns parse
 * results and lm_sql_parse(), text -> list of statement ASTs (ast.h).
 *
 * Ring 2 (control) code: allocation is fine, nothing here is on a hot path.
 * No global state: everything a parse needs lives on the caller's stack or in
 * the caller's arena, so any number of threads may parse at once with their
 * own arenas.
 */
#ifndef LM_SQL_H
#define LM_SQL_H

#include <stddef.h>

#include "laminar.h"
#include "sql/ast.h"

/* A bump allocator: allocations are zeroed, aligned for any type, and freed
 * all at once by lm_arena_destroy(). One thread at a time. */
typedef struct lm_arena lm_arena;

/* Returns LAMINAR_OK or LAMINAR_ERR_NOMEM (then *out is NULL). */
laminar_code lm_arena_create(lm_arena** out);
/* Frees the arena and everything allocated in it; NULL is allowed. */
void lm_arena_destroy(lm_arena* arena);
/* n zeroed bytes (n == 0 gives a valid unique pointer); NULL when out of memory. */
void* lm_arena_alloc(lm_arena* arena, size_t n);
/* Copy of s[0..n) plus a NUL; NULL when out of memory. */
char* lm_arena_strndup(lm_arena* arena, const char* s, size_t n);

/* Parse all ';'-separated statements of the NUL-terminated `sql`. Empty
 * statements (";;", a trailing ';', only comments) are skipped.
 *
 * On success *out is an array of *out_count statements, allocated in `arena`
 * together with everything they point to (zero statements: *out may be NULL).
 * Statement text spans are byte offsets into `sql`.
 *
 * Returns LAMINAR_OK or, with err->line/err->column (1-based; the column counts
 * UTF-8 characters) naming the offending token:
 *   LAMINAR_ERR_SQL_SYNTAX      the text does not parse
 *                               ("LDB-1001: syntax error at line 2, column 14:
 *                                expected ')' but found 'FROM'");
 *   LAMINAR_ERR_SQL_UNSUPPORTED valid SQL this version does not parse (JOIN,
 *                               subqueries);
 *   LAMINAR_ERR_SQL_LIMIT       nesting deeper than LM_SQL_MAX_DEPTH or a
 *                               statement longer than LM_SQL_MAX_STMT_BYTES;
 *   LAMINAR_ERR_UNKNOWN_TYPE    a column or CAST type SQL does not know;
 *   LAMINAR_ERR_NOMEM;  LAMINAR_ERR_MISUSE for NULL arguments.
 * On failure *out is NULL and *out_count 0; whatever was allocated stays in
 * the arena until it is destroyed. Thread-safety: any thread, one arena per
 * thread. Recursion is bounded by LM_SQL_MAX_DEPTH whatever the input; at that
 * depth the parser needs about 350 KB of stack in an optimized build (about
 * 700 KB at -O0), so do not parse on small-stack threads. */
laminar_code lm_sql_parse(lm_arena* arena, const char* sql, lm_stmt*** out,
                          size_t* out_count, laminar_error* err);

#endif /* LM_SQL_H */
