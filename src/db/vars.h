/*
 * vars.h -- `${NAME}` substitution variables: the set a config carries
 * (`var.NAME` keys) and a database keeps, and the textual substitution that
 * laminar_execute() and laminar_query() run on their SQL before parsing.
 *
 * Rules (docs/SQL.md, "Variables"): `${NAME}` is replaced by the variable's
 * value, verbatim, wherever it stands -- in statement text, inside 'string
 * literals' and "quoted identifiers" -- except inside comments. `$${` writes
 * a literal `${`. Values are not scanned again (no recursive expansion). A
 * `${NAME}` with no such variable is LAMINAR_ERR_SQL_UNDEFINED_VARIABLE at its
 * line:column. Names are case-sensitive: a letter or '_', then letters,
 * digits, '_' or '.'.
 *
 * Control-plane code (ring 2): called under db->lock, allocates freely.
 */
#ifndef LM_DB_VARS_H
#define LM_DB_VARS_H

#include "laminar.h"

#include <stddef.h>
#include <stdint.h>

typedef struct lm_vars {
  char** names;
  char** values;
  int32_t n;
} lm_vars;

/* Set (or replace) variable `name`. Both strings are copied.
 * Returns LAMINAR_OK; LAMINAR_ERR_CONFIG_KEY for an invalid name;
 * LAMINAR_ERR_NOMEM. On failure the set is unchanged. */
laminar_code lm_vars_set(lm_vars* vars, const char* name, const char* value,
                         laminar_error* err);
/* Deep copy into an empty `dst`. LAMINAR_OK or LAMINAR_ERR_NOMEM (dst empty). */
laminar_code lm_vars_copy(const lm_vars* src, lm_vars* dst);
void lm_vars_free(lm_vars* vars);

/* One replaced piece: text[new_off, +new_len) stands where the original had
 * sql[orig_off, +orig_len). */
typedef struct lm_subst_span {
  size_t new_off, new_len;
  size_t orig_off, orig_len;
} lm_subst_span;

/* A substituted SQL text and the way back to the original's positions. */
typedef struct lm_subst {
  char* text;           /* NULL: nothing to replace, use the original */
  lm_subst_span* spans; /* in text order */
  size_t nspans;
} lm_subst;

/* Substitute the variables of `sql` into out->text (NULL when the text holds
 * no '$'). Returns LAMINAR_OK; LAMINAR_ERR_SQL_UNDEFINED_VARIABLE naming the
 * variable and its line:column; LAMINAR_ERR_NOMEM. On failure *out is empty. */
laminar_code lm_vars_substitute(const lm_vars* vars, const char* sql, lm_subst* out,
                                laminar_error* err);

/* An error raised on out->text: move its line:column (err->line/column and
 * the "line L, column C" of its message) back to the original `sql`; a
 * position inside a substituted value points at its `${`. */
void lm_subst_fix_error(const lm_subst* subst, const char* sql, laminar_error* err);
void lm_subst_free(lm_subst* subst);

#endif /* LM_DB_VARS_H */
