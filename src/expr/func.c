/*
 * func.c -- the scalar function registry: names and aliases, argument counts,
 * the type rule of every function (lm_func_bind), and the evaluation of an
 * LM_XOP_FUNC call (argument evaluation, NULL handling, dispatch to the
 * kernels of math.c, strfn.c and time.c).
 *
 * Type rules follow DuckDB, the oracle: ABS and ROUND keep an integer type,
 * FLOOR / CEIL / SQRT / POWER / LN / EXP / LOG10 compute in DOUBLE, string
 * functions take VARCHAR (no implicit cast of a non-string column, as in
 * DuckDB; a string *literal* converts to the wanted type), CONCAT casts every
 * argument to VARCHAR. Dispatch happens once per batch, never per row.
 */
#include "expr/internal.h"

#include "util/util.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

struct lm_func_def {
  const char* name;
  lm_func_id fn;
  int8_t min_args;
  int8_t max_args; /* -1: any number >= min_args */
  const char* usage;
};

static const lm_func_def k_funcs[] = {
    {"abs", LM_FN_ABS, 1, 1, "abs(number)"},
    {"round", LM_FN_ROUND, 1, 2, "round(number [, digits])"},
    {"floor", LM_FN_FLOOR, 1, 1, "floor(number)"},
    {"ceil", LM_FN_CEIL, 1, 1, "ceil(number)"},
    {"ceiling", LM_FN_CEIL, 1, 1, "ceiling(number)"},
    {"sqrt", LM_FN_SQRT, 1, 1, "sqrt(number)"},
    {"power", LM_FN_POWER, 2, 2, "power(base, exponent)"},
    {"pow", LM_FN_POWER, 2, 2, "pow(base, exponent)"},
    {"ln", LM_FN_LN, 1, 1, "ln(number)"},
    {"exp", LM_FN_EXP, 1, 1, "exp(number)"},
    {"log10", LM_FN_LOG10, 1, 1, "log10(number)"},
    {"upper", LM_FN_UPPER, 1, 1, "upper(string)"},
    {"ucase", LM_FN_UPPER, 1, 1, "ucase(string)"},
    {"lower", LM_FN_LOWER, 1, 1, "lower(string)"},
    {"lcase", LM_FN_LOWER, 1, 1, "lcase(string)"},
    {"length", LM_FN_LENGTH, 1, 1, "length(string)"},
    {"char_length", LM_FN_LENGTH, 1, 1, "char_length(string)"},
    {"character_length", LM_FN_LENGTH, 1, 1, "character_length(string)"},
    {"octet_length", LM_FN_OCTET_LENGTH, 1, 1, "octet_length(string or blob)"},
    {"substring", LM_FN_SUBSTRING, 2, 3, "substring(string, start [, length])"},
    {"substr", LM_FN_SUBSTRING, 2, 3, "substr(string, start [, length])"},
    {"trim", LM_FN_TRIM, 1, 2, "trim(string [, characters])"},
    {"ltrim", LM_FN_LTRIM, 1, 2, "ltrim(string [, characters])"},
    {"rtrim", LM_FN_RTRIM, 1, 2, "rtrim(string [, characters])"},
    {"concat", LM_FN_CONCAT, 1, -1, "concat(value, ...)"},
    {"replace", LM_FN_REPLACE, 3, 3, "replace(string, from, to)"},
    {"starts_with", LM_FN_STARTS_WITH, 2, 2, "starts_with(string, prefix)"},
    {"date_part", LM_FN_DATE_PART, 2, 2, "date_part('part', timestamp)"},
    {"datepart", LM_FN_DATE_PART, 2, 2, "datepart('part', timestamp)"},
    {"date_trunc", LM_FN_DATE_TRUNC, 2, 2, "date_trunc('unit', timestamp)"},
    {"datetrunc", LM_FN_DATE_TRUNC, 2, 2, "datetrunc('unit', timestamp)"},
    {"json_extract", LM_FN_JSON_EXTRACT, 2, 2, "json_extract(json, path)"},
    {"json_extract_path", LM_FN_JSON_EXTRACT, 2, 2, "json_extract_path(json, path)"},
    {"json_extract_string", LM_FN_JSON_EXTRACT_STRING, 2, 2,
     "json_extract_string(json, path)"},
    {"json_extract_path_text", LM_FN_JSON_EXTRACT_STRING, 2, 2,
     "json_extract_path_text(json, path)"},
    {"json_valid", LM_FN_JSON_VALID, 1, 1, "json_valid(json)"},
    {"json_type", LM_FN_JSON_TYPE, 1, 2, "json_type(json [, path])"},
    {"json_array_length", LM_FN_JSON_ARRAY_LENGTH, 1, 2,
     "json_array_length(json [, path])"},
    /* Reached through syntax only (LIKE / ILIKE); not found by name. */
    {"like", LM_FN_LIKE, 2, 3, "s LIKE pattern [ESCAPE 'c']"},
    {"ilike", LM_FN_ILIKE, 2, 3, "s ILIKE pattern [ESCAPE 'c']"},
};

#define NFUNCS (sizeof k_funcs / sizeof k_funcs[0])

const lm_func_def* lm_func_find(const char* name) {
  if (name == NULL) return NULL;
  for (size_t i = 0; i < NFUNCS; i++) {
    if (k_funcs[i].fn == LM_FN_LIKE || k_funcs[i].fn == LM_FN_ILIKE) continue;
    if (lm_streq_nocase(name, k_funcs[i].name)) return &k_funcs[i];
  }
  return NULL;
}

const lm_func_def* lm_func_by_id(lm_func_id fn) {
  for (size_t i = 0; i < NFUNCS; i++) {
    if (k_funcs[i].fn == fn) return &k_funcs[i];
  }
  return NULL;
}

const char* lm_func_name(const lm_func_def* f) { return f->name; }

/* ---- type rules ------------------------------------------------------------------ */

__attribute__((format(printf, 4, 5))) static laminar_code bind_fail(
    lm_func_binding* out, laminar_code code, int32_t arg, const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(out->message, sizeof out->message, fmt, ap);
  va_end(ap);
  out->bad_arg = arg;
  return code;
}

static bool is_str_literal(const lm_expr* a) {
  return a->kind == LM_EXPR_LITERAL && a->type == LM_TYPE_STRING && !a->lit.is_null;
}

static bool is_small_int(lm_type t) { return t == LM_TYPE_INT16 || t == LM_TYPE_INT8; }

/* (A DECIMAL argument converts to DOUBLE: abs, round and the rest compute on
 * it as a DOUBLE, docs/SQL.md "Decimals".) */
static bool is_numeric(lm_type t) {
  return t == LM_TYPE_INT32 || t == LM_TYPE_INT64 || t == LM_TYPE_DOUBLE ||
         t == LM_TYPE_FLOAT || is_small_int(t) || lm_type_is_decimal(t);
}

/* Whether a DECIMAL parameter (a user-defined function's) takes argument a:
 * any DECIMAL, an integer or a number literal, cast as CAST does. */
static bool decimal_takes(const lm_expr* a) {
  return lm_type_is_decimal(a->type) || a->type == LM_TYPE_INT32 ||
         a->type == LM_TYPE_INT64 || is_small_int(a->type) ||
         (a->type == LM_TYPE_DOUBLE && a->kind == LM_EXPR_LITERAL);
}

/* Argument i must convert to `to`: a value of that type, a NULL, a string
 * literal (parsed when evaluated, as DuckDB's string literals), -- for a
 * numeric `to` -- any number, or -- for a TIMESTAMP -- a DATE. */
static laminar_code want_arg_of(const char* name, const char* usage,
                                const lm_expr* const* args, int32_t i, lm_type to,
                                const char* what, lm_type* want, lm_func_binding* out) {
  lm_type t = args[i]->type;
  bool ok = t == to || t == LM_TYPE_NULL ||
            (to != LM_TYPE_STRING && is_str_literal(args[i])) ||
            (to == LM_TYPE_DOUBLE && is_numeric(t)) ||
            (to == LM_TYPE_INT64 && (t == LM_TYPE_INT32 || is_small_int(t))) ||
            (to == LM_TYPE_INT32 && is_small_int(t)) ||
            (to == LM_TYPE_TIMESTAMP && t == LM_TYPE_DATE) || /* its midnight */
            (lm_type_is_decimal(to) && decimal_takes(args[i]));
  if (!ok) {
    return bind_fail(out, LAMINAR_ERR_TYPE_MISMATCH, i,
                     "%s() needs %s as argument %d, got %s (usage: %s)", name, what,
                     (int)i + 1, lm_type_name(t), usage);
  }
  want[i] = to;
  return LAMINAR_OK;
}

static laminar_code want_arg(const lm_func_def* f, const lm_expr* const* args, int32_t i,
                             lm_type to, const char* what, lm_type* want,
                             lm_func_binding* out) {
  return want_arg_of(f->name, f->usage, args, i, to, what, want, out);
}

/* want_arg for arguments from..nargs-1. */
static laminar_code want_all(const lm_func_def* f, const lm_expr* const* args,
                             int32_t from, int32_t nargs, lm_type to, const char* what,
                             lm_type* want, lm_func_binding* out) {
  for (int32_t i = from; i < nargs; i++)
    LM_TRY(want_arg(f, args, i, to, what, want, out));
  return LAMINAR_OK;
}

/* The first argument of date_part / date_trunc: a string literal naming a part
 * (NULL literal: the result is NULL, fn_arg 0). */
static laminar_code bind_part(const lm_func_def* f, const lm_expr* a, bool trunc,
                              lm_func_binding* out) {
  if (a->kind == LM_EXPR_LITERAL && a->lit.is_null) {
    out->fn_arg = 0;
    return LAMINAR_OK;
  }
  if (!is_str_literal(a)) {
    return bind_fail(out, LAMINAR_ERR_SQL_FUNCTION_ARGS, 0,
                     "%s() needs a constant string naming the %s, such as 'hour'",
                     f->name, trunc ? "unit" : "part");
  }
  lm_date_part p = lm_date_part_find(a->lit.s, trunc);
  if (p == 0) {
    return bind_fail(out, LAMINAR_ERR_SQL_FUNCTION_ARGS, 0,
                     "%s(): '%.*s' is not a %s (use e.g. year, month, day, hour, minute, "
                     "second%s)",
                     f->name, (int)(a->lit.s.len > 40 ? 40 : a->lit.s.len), a->lit.s.ptr,
                     trunc ? "date_trunc unit" : "date part",
                     trunc ? "" : ", epoch, dow");
  }
  out->fn_arg = (int32_t)p;
  return LAMINAR_OK;
}


/* A JSON path: a VARCHAR (a literal must parse, and wildcards are not
 * supported) or an integer (an array index). */
static laminar_code bind_json_path(const lm_func_def* f, const lm_expr* const* args,
                                   lm_type* want, lm_func_binding* out) {
  lm_type t = args[1]->type;
  if (t == LM_TYPE_INT64 || t == LM_TYPE_INT32 || is_small_int(t)) {
    want[1] = LM_TYPE_INT64;
    return LAMINAR_OK;
  }
  LM_TRY(want_arg(f, args, 1, LM_TYPE_STRING, "a VARCHAR path or an integer index", want,
                  out));
  if (!is_str_literal(args[1])) return LAMINAR_OK;
  const lm_str* s = &args[1]->lit.s;
  int bad = lm_json_path_check(s->ptr, s->len);
  if (bad == 2)
    return bind_fail(out, LAMINAR_ERR_SQL_UNSUPPORTED, 1,
                     "%s(): JSON path wildcards (* and [*]) are not supported", f->name);
  if (bad != 0)
    return bind_fail(out, LAMINAR_ERR_SQL_FUNCTION_ARGS, 1,
                     "%s(): '%.*s' is not a JSON path ('$.key', '$.a[0]', '$.\"k\"', "
                     "'/a/0' or a key)",
                     f->name, (int)(s->len > 200 ? 200 : s->len), s->ptr);
  return LAMINAR_OK;
}

/* The ESCAPE of LIKE: a string literal of at most one character (UTF-8). */
static laminar_code bind_escape(const lm_expr* a, lm_func_binding* out) {
  if (a->kind == LM_EXPR_LITERAL && a->lit.is_null) {
    out->fn_arg = -2; /* ESCAPE NULL: every result is NULL, as in DuckDB */
    return LAMINAR_OK;
  }
  if (!is_str_literal(a)) {
    return bind_fail(out, LAMINAR_ERR_SQL_FUNCTION_ARGS, 2,
                     "ESCAPE needs a constant string of at most one character");
  }
  lm_str s = a->lit.s;
  if (s.len == 0) {
    out->fn_arg = -1;
    return LAMINAR_OK;
  }
  int32_t cp;
  int64_t used = lm_utf8_decode(s.ptr, s.len, &cp);
  if (used != s.len) {
    return bind_fail(out, LAMINAR_ERR_SQL_FUNCTION_ARGS, 2,
                     "ESCAPE must be empty or one character, got '%.*s'",
                     (int)(s.len > 20 ? 20 : s.len), s.ptr);
  }
  out->fn_arg = cp;
  return LAMINAR_OK;
}

laminar_code lm_func_bind(const lm_func_def* f, const lm_expr* const* args, int32_t nargs,
                          lm_type* want, lm_func_binding* out) {
  memset(out, 0, sizeof *out);
  out->fn = f->fn;
  out->bad_arg = -1;
  if (nargs < f->min_args || (f->max_args >= 0 && nargs > f->max_args)) {
    if (f->min_args == f->max_args) {
      return bind_fail(out, LAMINAR_ERR_SQL_FUNCTION_ARGS, -1,
                       "%s() takes %d argument%s, got %d (usage: %s)", f->name,
                       (int)f->min_args, f->min_args == 1 ? "" : "s", (int)nargs,
                       f->usage);
    }
    if (f->max_args < 0) {
      return bind_fail(out, LAMINAR_ERR_SQL_FUNCTION_ARGS, -1,
                       "%s() takes at least %d argument%s, got %d (usage: %s)", f->name,
                       (int)f->min_args, f->min_args == 1 ? "" : "s", (int)nargs,
                       f->usage);
    }
    return bind_fail(out, LAMINAR_ERR_SQL_FUNCTION_ARGS, -1,
                     "%s() takes %d to %d arguments, got %d (usage: %s)", f->name,
                     (int)f->min_args, (int)f->max_args, (int)nargs, f->usage);
  }
  for (int32_t i = 0; i < nargs; i++) want[i] = args[i]->type;
  lm_type t0 = args[0]->type;
  switch (f->fn) {
    case LM_FN_ABS:
    case LM_FN_ROUND: {
      /* A DECIMAL stays one, as DuckDB: abs(x) its type, round(x, d) for a
       * constant d its precision with scale min(d, s) (0 for d <= 0). */
      bool const_d = nargs == 1 ||
                     (args[1]->kind == LM_EXPR_LITERAL && !args[1]->lit.is_null &&
                      (args[1]->type == LM_TYPE_INT32 || args[1]->type == LM_TYPE_INT64));
      if (lm_type_is_decimal(t0) && (f->fn == LM_FN_ABS || const_d)) {
        int64_t d = nargs == 2 ? args[1]->lit.i : 0, s = lm_type_scale(t0);
        out->result = f->fn == LM_FN_ABS ? t0
                                         : lm_type_decimal(lm_type_precision(t0),
                                                           (int32_t)(d >= s  ? s
                                                                     : d > 0 ? d
                                                                             : 0));
        if (nargs == 2)
          LM_TRY(want_arg(f, args, 1, LM_TYPE_INT64, "an integer", want, out));
        return LAMINAR_OK;
      }
      /* Integers keep their type (INT stays INT, BIGINT stays BIGINT). */
      lm_type rt = t0 == LM_TYPE_INT32 || t0 == LM_TYPE_INT64 ? t0
                   : is_small_int(t0)                         ? LM_TYPE_INT32
                   : t0 == LM_TYPE_NULL                       ? LM_TYPE_INT64
                                                              : LM_TYPE_DOUBLE;
      LM_TRY(want_arg(f, args, 0, rt, "a number", want, out));
      if (nargs == 2)
        LM_TRY(want_arg(f, args, 1, LM_TYPE_INT64, "an integer", want, out));
      out->result = rt;
      return LAMINAR_OK;
    }
    case LM_FN_FLOOR:
    case LM_FN_CEIL:
      if (lm_type_is_decimal(t0)) { /* DECIMAL(p, 0), as DuckDB */
        out->result = lm_type_decimal(lm_type_precision(t0), 0);
        return LAMINAR_OK;
      }
      /* fall through */
    case LM_FN_SQRT:
    case LM_FN_LN:
    case LM_FN_EXP:
    case LM_FN_LOG10:
    case LM_FN_POWER:
      LM_TRY(want_all(f, args, 0, nargs, LM_TYPE_DOUBLE, "a number", want, out));
      out->result = LM_TYPE_DOUBLE;
      return LAMINAR_OK;
    case LM_FN_OCTET_LENGTH:
      if (t0 == LM_TYPE_BINARY) { /* its bytes; a VARCHAR's too */
        want[0] = LM_TYPE_BINARY;
        out->result = LM_TYPE_INT64;
        return LAMINAR_OK;
      }
      LM_TRY(want_all(f, args, 0, nargs, LM_TYPE_STRING, "VARCHAR or BLOB", want, out));
      out->result = LM_TYPE_INT64;
      return LAMINAR_OK;
    case LM_FN_UPPER:
    case LM_FN_LOWER:
    case LM_FN_TRIM:
    case LM_FN_LTRIM:
    case LM_FN_RTRIM:
    case LM_FN_REPLACE:
    case LM_FN_LENGTH:
      if (f->fn == LM_FN_LENGTH && t0 == LM_TYPE_BINARY) { /* its bytes */
        want[0] = LM_TYPE_BINARY;
        out->result = LM_TYPE_INT64;
        return LAMINAR_OK;
      }
      /* fall through */
    case LM_FN_STARTS_WITH:
      LM_TRY(want_all(f, args, 0, nargs, LM_TYPE_STRING, "VARCHAR", want, out));
      out->result = f->fn == LM_FN_LENGTH        ? LM_TYPE_INT64
                    : f->fn == LM_FN_STARTS_WITH ? LM_TYPE_BOOL
                                                 : LM_TYPE_STRING;
      return LAMINAR_OK;
    case LM_FN_SUBSTRING:
      LM_TRY(want_arg(f, args, 0, LM_TYPE_STRING, "VARCHAR", want, out));
      LM_TRY(want_all(f, args, 1, nargs, LM_TYPE_INT64, "an integer", want, out));
      out->result = LM_TYPE_STRING;
      return LAMINAR_OK;
    case LM_FN_CONCAT:
      for (int32_t i = 0; i < nargs; i++) want[i] = LM_TYPE_STRING;
      out->result = LM_TYPE_STRING;
      return LAMINAR_OK;
    case LM_FN_LIKE:
    case LM_FN_ILIKE:
      LM_TRY(want_arg(f, args, 0, LM_TYPE_STRING, "VARCHAR", want, out));
      LM_TRY(want_arg(f, args, 1, LM_TYPE_STRING, "a VARCHAR pattern", want, out));
      out->fn_arg = -1;
      if (nargs == 3) {
        LM_TRY(bind_escape(args[2], out));
        want[2] = LM_TYPE_STRING;
      }
      if (is_str_literal(args[1]) && !lm_like_pattern_ok(args[1]->lit.s, out->fn_arg)) {
        return bind_fail(out, LAMINAR_ERR_SQL_FUNCTION_ARGS, 1,
                         "a LIKE pattern must not end with its ESCAPE character");
      }
      out->result = LM_TYPE_BOOL;
      return LAMINAR_OK;
    case LM_FN_DATE_PART:
    case LM_FN_DATE_TRUNC: {
      bool trunc = f->fn == LM_FN_DATE_TRUNC;
      LM_TRY(bind_part(f, args[0], trunc, out));
      want[0] = LM_TYPE_STRING;
      LM_TRY(want_arg(f, args, 1, LM_TYPE_TIMESTAMP, "a TIMESTAMP", want, out));
      out->result = trunc ? LM_TYPE_TIMESTAMP
                    : (out->fn_arg == LM_DP_EPOCH || out->fn_arg == LM_DP_JULIAN)
                        ? LM_TYPE_DOUBLE
                        : LM_TYPE_INT64;
      return LAMINAR_OK;
    }
    case LM_FN_JSON_EXTRACT:
    case LM_FN_JSON_EXTRACT_STRING:
    case LM_FN_JSON_VALID:
    case LM_FN_JSON_TYPE:
    case LM_FN_JSON_ARRAY_LENGTH:
      LM_TRY(want_arg(f, args, 0, LM_TYPE_STRING, "VARCHAR (JSON text)", want, out));
      if (nargs == 2) LM_TRY(bind_json_path(f, args, want, out));
      out->result = f->fn == LM_FN_JSON_VALID          ? LM_TYPE_BOOL
                    : f->fn == LM_FN_JSON_ARRAY_LENGTH ? LM_TYPE_INT64
                                                       : LM_TYPE_STRING;
      return LAMINAR_OK;
    case LM_FN_UDF: break; /* not in the table: lm_udf_bind */
  }
  return bind_fail(out, LAMINAR_ERR_INTERNAL, -1, "unknown function id %d", (int)f->fn);
}

laminar_code lm_udf_bind(const lm_udf* f, const lm_expr* const* args, int32_t nargs,
                         lm_type* want, lm_func_binding* out) {
  memset(out, 0, sizeof *out);
  out->fn = LM_FN_UDF;
  out->bad_arg = -1;
  char usage[160];
  lm_udf_usage(f, usage, sizeof usage);
  if (nargs != lm_udf_nargs(f)) {
    return bind_fail(out, LAMINAR_ERR_SQL_FUNCTION_ARGS, -1,
                     "%s() takes %d argument%s, got %d (usage: %s)", lm_udf_name(f),
                     (int)lm_udf_nargs(f), lm_udf_nargs(f) == 1 ? "" : "s", (int)nargs,
                     usage);
  }
  for (int32_t i = 0; i < nargs; i++) {
    lm_type t = lm_udf_arg_type(f, i);
    LM_TRY(want_arg_of(lm_udf_name(f), usage, args, i, t, lm_type_name(t), want, out));
  }
  out->result = lm_udf_result(f);
  return LAMINAR_OK;
}

/* ---- evaluation ------------------------------------------------------------------- */

uint8_t* lm_fcall_nulls(lm_fcall* c) {
  if (c->owned) return (uint8_t*)c->nulls;
  uint8_t* nl = lm_eval_ctx_alloc(c->ctx, (size_t)(c->m ? c->m : 1));
  if (nl == NULL) return NULL;
  if (c->nulls != NULL) {
    memcpy(nl, c->nulls, (size_t)c->m);
  } else {
    memset(nl, 0, (size_t)c->m);
  }
  c->nulls = nl;
  c->owned = true;
  return nl;
}

/* Merge the null arrays of the dense arguments over m rows. */
static laminar_code merge_arg_nulls(lm_fcall* c) {
  c->nulls = NULL;
  c->owned = false;
  for (int32_t i = 0; i < c->nargs; i++) {
    const lm_xvec* a = &c->args[i];
    if (a->cst || a->v.nulls == NULL) continue;
    if (c->nulls == NULL) {
      c->nulls = a->v.nulls;
      continue;
    }
    uint8_t* nl = lm_fcall_nulls(c);
    if (nl == NULL) return LAMINAR_ERR_NOMEM;
    for (int64_t k = 0; k < c->m; k++) nl[k] |= a->v.nulls[k];
  }
  return LAMINAR_OK;
}

static laminar_code run_kernel(lm_fcall* c) {
  switch (c->e->fn) {
    case LM_FN_ABS:
    case LM_FN_ROUND:
    case LM_FN_FLOOR:
    case LM_FN_CEIL:
    case LM_FN_SQRT:
    case LM_FN_POWER:
    case LM_FN_LN:
    case LM_FN_EXP:
    case LM_FN_LOG10: return lm_fn_math(c);
    case LM_FN_UPPER:
    case LM_FN_LOWER: return lm_fn_case(c);
    case LM_FN_LENGTH: return lm_fn_length(c);
    case LM_FN_OCTET_LENGTH: return lm_fn_octet_length(c);
    case LM_FN_SUBSTRING: return lm_fn_substring(c);
    case LM_FN_TRIM:
    case LM_FN_LTRIM:
    case LM_FN_RTRIM: return lm_fn_trim(c);
    case LM_FN_CONCAT: return lm_fn_concat(c);
    case LM_FN_REPLACE: return lm_fn_replace(c);
    case LM_FN_STARTS_WITH: return lm_fn_starts_with(c);
    case LM_FN_LIKE:
    case LM_FN_ILIKE: return lm_fn_like(c);
    case LM_FN_DATE_PART: return lm_fn_date_part(c);
    case LM_FN_DATE_TRUNC: return lm_fn_date_trunc(c);
    case LM_FN_JSON_EXTRACT:
    case LM_FN_JSON_EXTRACT_STRING:
    case LM_FN_JSON_VALID:
    case LM_FN_JSON_TYPE:
    case LM_FN_JSON_ARRAY_LENGTH: return lm_fn_json(c);
    case LM_FN_UDF: break; /* lm_udf_eval */
  }
  return LAMINAR_ERR_INTERNAL;
}

/* Storage a constant NULL result points at. */
static const uint8_t k_null_one = 1;
static const lm_str k_zero_slot[1];

laminar_code lm_expr_eval_func(lm_eval_ctx* ctx, const lm_expr* e, const lm_vec* in,
                               const uint32_t* sel, int64_t n, lm_xvec* out) {
  lm_xvec* args =
      lm_eval_ctx_alloc(ctx, sizeof(lm_xvec) * (size_t)(e->nargs ? e->nargs : 1));
  if (args == NULL) return LAMINAR_ERR_NOMEM;
  bool all_cst = true, any_null_cst = false;
  for (int32_t i = 0; i < e->nargs; i++) {
    LM_TRY(lm_expr_eval_x(ctx, e->args[i], in, sel, n, &args[i]));
    all_cst &= args[i].cst;
    any_null_cst |= args[i].cst && args[i].v.nulls != NULL && args[i].v.nulls[0];
  }
  if (e->fn == LM_FN_UDF) return lm_udf_eval(ctx, e, args, n, out);
  bool strict = e->fn != LM_FN_CONCAT;
  bool null_part =
      (e->fn == LM_FN_DATE_PART || e->fn == LM_FN_DATE_TRUNC) && e->fn_arg == 0;
  bool null_escape = (e->fn == LM_FN_LIKE || e->fn == LM_FN_ILIKE) && e->fn_arg == -2;
  if ((strict && any_null_cst) || null_part || null_escape) {
    out->v = (lm_vec){e->type, n, &k_null_one, k_zero_slot};
    out->cst = true;
    return LAMINAR_OK;
  }
  lm_fcall c = {
      .ctx = ctx, .e = e, .args = args, .nargs = e->nargs, .m = all_cst ? 1 : n};
  c.data =
      lm_eval_ctx_alloc(ctx, (size_t)lm_type_width(e->type) * (size_t)(c.m ? c.m : 1));
  if (c.data == NULL) return LAMINAR_ERR_NOMEM;
  if (strict) LM_TRY(merge_arg_nulls(&c));
  LM_TRY(run_kernel(&c));
  const uint8_t* nulls = c.nulls;
  if (c.owned) {
    uint8_t any = 0;
    for (int64_t k = 0; k < c.m; k++) any |= c.nulls[k];
    if (!any) nulls = NULL;
  }
  out->v = (lm_vec){e->type, n, nulls, c.data};
  out->cst = all_cst;
  return LAMINAR_OK;
}
