/*
 * udf.c -- user-defined scalar functions (laminar_function_register): the
 * function object and its declared types, the lists the registry and plans
 * keep, and the evaluation of a call over one chunk through the Arrow C Data
 * Interface.
 *
 * A call (lm_udf_eval) gets its arguments evaluated like any function's. It
 * exports the rows to pass as a struct array whose buffers live in the
 * evaluation context (fixed-width values zero-copy where no gather is needed;
 * null bytes and booleans packed into bitmaps; strings laid out with offsets),
 * calls the callback once, then validates the result the callee handed over
 * -- not released, the declared format, the rows' count, nanoarrow's full
 * validation, UTF-8 -- and copies it into context memory before releasing it.
 * So the callee's array never outlives the call, and a bad result is an
 * error naming the function, never a crash or a silent cast.
 *
 * NULLs: without LAMINAR_FUNCTION_CALLED_ON_NULL a row with a NULL argument
 * is NULL and is not passed (the rows passed are gathered); with it every row
 * is passed. DETERMINISTIC: a call over constant arguments is made over one
 * row and its value is a constant. Calls of a function without
 * LAMINAR_FUNCTION_THREAD_SAFE are serialized by the function's mutex (several
 * reactors may evaluate the same expression).
 */
#include "expr/internal.h"

#include "nanoarrow/nanoarrow.h"
#include "util/util.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#define UDF_MAX_ARGS 64

struct lm_udf {
  atomic_int_fast64_t refs; /* writer: any holder; acq_rel on unref */
  char* name;
  int32_t nargs;
  lm_type args[UDF_MAX_ARGS];
  lm_type result;
  laminar_function_callback fn;
  void* user;
  void (*destroy)(void* user);
  uint32_t flags;
  pthread_mutex_t mu; /* serializes calls unless THREAD_SAFE */
  /* An aggregate (laminar_aggregate_register): fn is NULL, these are set. */
  bool aggregate;
  int64_t state_size;
  laminar_aggregate_init a_init;
  laminar_aggregate_update a_update;
  laminar_aggregate_update a_retract;
  laminar_aggregate_merge a_merge;
  laminar_aggregate_finalize a_finalize;
  laminar_aggregate_serialize a_serialize;
  laminar_aggregate_deserialize a_deserialize;
  laminar_aggregate_destroy_state a_destroy_state;
  /* A table function (laminar_table_function_register): fn set, these too. */
  bool table;
  int32_t ncols;                 /* its output columns, 1 to UDF_MAX_ARGS */
  lm_type cols[UDF_MAX_ARGS];    /* their types */
  char* col_names[UDF_MAX_ARGS]; /* and names (owned) */
};

/* ---- types ---------------------------------------------------------------------- */

/* DECIMAL(p,s) of a decimal128 format "d:p,s" (or "d:p,s,128"), 1 <= p <= 38,
 * 0 <= s <= p; LM_TYPE_NULL for any other text. */
static lm_type decimal_of_format(const char* f) {
  if (strncmp(f, "d:", 2) != 0) return LM_TYPE_NULL;
  int p = 0, s = 0, bits = 128, used = 0;
  size_t len = strlen(f);
  int got = sscanf(f + 2, "%d,%d%n,%d%n", &p, &s, &used, &bits, &used);
  if (got < 2 || (size_t)used != len - 2 || bits != 128 || p < 1 ||
      p > LM_DECIMAL_MAX_PRECISION || s < 0 || s > p || f[2] < '0' || f[2] > '9')
    return LM_TYPE_NULL;
  return lm_type_decimal(p, s);
}

/* The engine type of an Arrow format the API accepts, or LM_TYPE_NULL. */
static lm_type type_of_format(const char* f, bool result) {
  if (f == NULL) return LM_TYPE_NULL;
  if (strcmp(f, "b") == 0) return LM_TYPE_BOOL;
  if (strcmp(f, "i") == 0) return LM_TYPE_INT32;
  if (strcmp(f, "l") == 0) return LM_TYPE_INT64;
  if (strcmp(f, "g") == 0) return LM_TYPE_DOUBLE;
  if (strcmp(f, "u") == 0 || (result && strcmp(f, "U") == 0)) return LM_TYPE_STRING;
  if (strcmp(f, "tsu:") == 0) return LM_TYPE_TIMESTAMP;
  if (strcmp(f, "tdD") == 0) return LM_TYPE_DATE;
  return decimal_of_format(f);
}

/* The longest format format_of writes, with its NUL ("d:38,38"). */
#define FORMAT_CAP 16

/* The format the core passes a type in, into buf (FORMAT_CAP bytes): a
 * DECIMAL(p,s) travels as decimal128 "d:p,s". Returns buf. */
static const char* format_of(lm_type t, char* buf) {
  const char* f = "n";
  switch (lm_type_kind(t)) {
    case LM_TYPE_BOOL: f = "b"; break;
    case LM_TYPE_INT32: f = "i"; break;
    case LM_TYPE_INT64: f = "l"; break;
    case LM_TYPE_DOUBLE: f = "g"; break;
    case LM_TYPE_STRING: f = "u"; break;
    case LM_TYPE_TIMESTAMP: f = "tsu:"; break;
    case LM_TYPE_DATE: f = "tdD"; break;
    case LM_TYPE_INT16: f = "s"; break; /* not a declared type: the binder casts */
    case LM_TYPE_INT8: f = "c"; break;
    case LM_TYPE_FLOAT: f = "f"; break; /* not a declared type either */
    case LM_TYPE_BINARY: f = "z"; break;
    case LM_TYPE_TIME: f = "ttu"; break;
    case LM_TYPE_DECIMAL:
      snprintf(buf, FORMAT_CAP, "d:%d,%d", (int)lm_type_precision(t),
               (int)lm_type_scale(t));
      return buf;
    case LM_TYPE_NULL: break;
  }
  snprintf(buf, FORMAT_CAP, "%s", f);
  return buf;
}

/* Whether the callee's result format fits return type t (a timestamp may
 * carry a time zone: values are UTC microseconds either way; a decimal's
 * precision and scale are the declared ones). */
static bool result_format_ok(const char* f, lm_type t) {
  if (f == NULL) return false;
  if (t == LM_TYPE_TIMESTAMP) return strncmp(f, "tsu:", 4) == 0;
  return type_of_format(f, true) == t;
}

static bool is_identifier(const char* s) {
  if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || *s == '_')) return false;
  for (s++; *s; s++) {
    if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || *s == '_' ||
          (*s >= '0' && *s <= '9')))
      return false;
  }
  return true;
}

/* ---- the function object ---------------------------------------------------------- */

static laminar_code create(const char* name, const char* const* arg_types, int32_t nargs,
                           const char* return_type, laminar_function_callback fn,
                           void* user, void (*destroy)(void* user), uint32_t flags,
                           lm_udf** out, laminar_error* err);

laminar_code lm_udf_create(const char* name, const char* const* arg_types, int32_t nargs,
                           const char* return_type, laminar_function_callback fn,
                           void* user, void (*destroy)(void* user), uint32_t flags,
                           lm_udf** out, laminar_error* err) {
  *out = NULL;
  if (fn == NULL) {
    return lm_error_set(err, LAMINAR_ERR_MISUSE,
                        "laminar_function_register: function '%s': fn is NULL",
                        name ? name : "(null)");
  }
  return create(name, arg_types, nargs, return_type, fn, user, destroy, flags, out, err);
}

/* lm_udf_create's checks and allocation, fn NULL for an aggregate. */
static laminar_code create(const char* name, const char* const* arg_types, int32_t nargs,
                           const char* return_type, laminar_function_callback fn,
                           void* user, void (*destroy)(void* user), uint32_t flags,
                           lm_udf** out, laminar_error* err) {
  *out = NULL;
  if (name == NULL || !is_identifier(name) || strlen(name) > 120) {
    return lm_error_set(err, LAMINAR_ERR_MISUSE,
                        "laminar_function_register: the name must be an identifier "
                        "(letters, digits, '_'; at most 120 bytes)");
  }
  if (nargs < 0 || nargs > UDF_MAX_ARGS || (nargs > 0 && arg_types == NULL)) {
    return lm_error_set(err, LAMINAR_ERR_MISUSE,
                        "function '%s': nargs must be 0 to %d with arg_types set", name,
                        UDF_MAX_ARGS);
  }
  uint32_t known = LAMINAR_FUNCTION_DETERMINISTIC | LAMINAR_FUNCTION_CALLED_ON_NULL |
                   LAMINAR_FUNCTION_THREAD_SAFE;
  if ((flags & ~known) != 0) {
    return lm_error_set(err, LAMINAR_ERR_MISUSE, "function '%s': unknown flags 0x%x",
                        name, (unsigned)(flags & ~known));
  }
  lm_type args[UDF_MAX_ARGS];
  for (int32_t i = 0; i < nargs; i++) {
    args[i] = type_of_format(arg_types[i], false);
    if (args[i] == LM_TYPE_NULL) {
      return lm_error_set(err, LAMINAR_ERR_UNKNOWN_TYPE,
                          "function '%s': argument %d has type '%s'; use one of the "
                          "Arrow formats b, i, l, g, u, tsu:, tdD, d:p,s",
                          name, (int)i + 1, arg_types[i] ? arg_types[i] : "(null)");
    }
  }
  lm_type result = type_of_format(return_type, false);
  if (result == LM_TYPE_NULL) {
    return lm_error_set(err, LAMINAR_ERR_UNKNOWN_TYPE,
                        "function '%s': return type '%s'; use one of the Arrow formats "
                        "b, i, l, g, u, tsu:, tdD, d:p,s",
                        name, return_type ? return_type : "(null)");
  }
  lm_udf* f = lm_calloc(1, sizeof *f);
  char* copy = lm_strdup(name);
  if (f == NULL || copy == NULL || pthread_mutex_init(&f->mu, NULL) != 0) {
    lm_free(f);
    lm_free(copy);
    return lm_error_set(err, LAMINAR_ERR_NOMEM, "function '%s': out of memory", name);
  }
  atomic_init(&f->refs, 1);
  f->name = copy;
  f->nargs = nargs;
  memcpy(f->args, args, sizeof(lm_type) * (size_t)nargs);
  f->result = result;
  f->fn = fn;
  f->aggregate = fn == NULL;
  f->user = user;
  f->destroy = destroy;
  f->flags = flags;
  *out = f;
  return LAMINAR_OK;
}

void lm_udf_ref(lm_udf* f) {
  atomic_fetch_add_explicit(&f->refs, 1, memory_order_relaxed);
}

void lm_udf_unref(lm_udf* f) {
  if (f == NULL) return;
  /* acq_rel: the last holder sees every call made through the others. */
  if (atomic_fetch_sub_explicit(&f->refs, 1, memory_order_acq_rel) != 1) return;
  if (f->destroy != NULL) f->destroy(f->user);
  pthread_mutex_destroy(&f->mu);
  for (int32_t i = 0; i < f->ncols; i++) lm_free(f->col_names[i]);
  lm_free(f->name);
  lm_free(f);
}

const char* lm_udf_name(const lm_udf* f) { return f->name; }
void lm_udf_set_destroy(lm_udf* f, void (*destroy)(void* user)) { f->destroy = destroy; }
int32_t lm_udf_nargs(const lm_udf* f) { return f->nargs; }
lm_type lm_udf_arg_type(const lm_udf* f, int32_t i) { return f->args[i]; }
lm_type lm_udf_result(const lm_udf* f) { return f->result; }
bool lm_udf_deterministic(const lm_udf* f) {
  return (f->flags & LAMINAR_FUNCTION_DETERMINISTIC) != 0;
}

/* "DOUBLE, BIGINT" into buf. */
static void arg_list(const lm_udf* f, char* buf, size_t cap) {
  int at = 0;
  buf[0] = '\0';
  for (int32_t i = 0; i < f->nargs && at >= 0 && (size_t)at < cap; i++) {
    at += snprintf(buf + at, cap - (size_t)at, "%s%s", i ? ", " : "",
                   lm_type_name(f->args[i]));
  }
}

/* "TABLE(a BIGINT, b VARCHAR)": a table function's columns, into buf. */
static void table_list(const lm_udf* f, char* buf, size_t cap) {
  int at = snprintf(buf, cap, "TABLE(");
  for (int32_t i = 0; i < f->ncols && at >= 0 && (size_t)at < cap; i++) {
    at += snprintf(buf + at, cap - (size_t)at, "%s%s %s", i ? ", " : "", f->col_names[i],
                   lm_type_name(f->cols[i]));
  }
  if (at >= 0 && (size_t)at < cap) snprintf(buf + at, cap - (size_t)at, ")");
}

void lm_udf_usage(const lm_udf* f, char* buf, size_t cap) {
  char args[320], result[320];
  arg_list(f, args, sizeof args);
  if (f->table) {
    table_list(f, result, sizeof result);
  } else {
    snprintf(result, sizeof result, "%s", lm_type_name(f->result));
  }
  snprintf(buf, cap, "%s(%s) -> %s", f->name, args, result);
}

void lm_udf_describe(const lm_udf* f, char* args, size_t args_cap, char* result,
                     size_t result_cap, char* flags, size_t flags_cap) {
  arg_list(f, args, args_cap);
  if (f->table) {
    table_list(f, result, result_cap);
  } else {
    snprintf(result, result_cap, "%s", lm_type_name(f->result));
  }
  const char* kind =
      f->flags & LAMINAR_FUNCTION_DETERMINISTIC ? "deterministic" : "volatile";
  if (f->aggregate) kind = f->a_retract != NULL ? "aggregate, retractable" : "aggregate";
  if (f->table) kind = "table";
  snprintf(flags, flags_cap, "%s%s%s", kind,
           f->flags & LAMINAR_FUNCTION_CALLED_ON_NULL ? ", called on null" : "",
           f->flags & LAMINAR_FUNCTION_THREAD_SAFE ? ", thread-safe" : "");
}

/* ---- lists ------------------------------------------------------------------------ */

lm_udf* lm_udf_list_find(const lm_udf_list* l, const char* name) {
  for (int32_t i = 0; i < l->n; i++) {
    if (lm_streq_nocase(l->items[i]->name, name)) return l->items[i];
  }
  return NULL;
}

bool lm_udf_list_has(const lm_udf_list* l, const lm_udf* f) {
  for (int32_t i = 0; i < l->n; i++) {
    if (l->items[i] == f) return true;
  }
  return false;
}

laminar_code lm_udf_list_add(lm_udf_list* l, lm_udf* f, bool replace) {
  if (replace) {
    for (int32_t i = 0; i < l->n; i++) {
      if (lm_streq_nocase(l->items[i]->name, f->name)) {
        lm_udf* old = l->items[i];
        lm_udf_ref(f);
        l->items[i] = f;
        lm_udf_unref(old);
        return LAMINAR_OK;
      }
    }
  }
  lm_udf** grown = lm_realloc(l->items, sizeof(lm_udf*) * (size_t)(l->n + 1));
  if (grown == NULL) return LAMINAR_ERR_NOMEM;
  l->items = grown;
  lm_udf_ref(f);
  l->items[l->n++] = f;
  return LAMINAR_OK;
}

bool lm_udf_list_remove(lm_udf_list* l, const char* name) {
  for (int32_t i = 0; i < l->n; i++) {
    if (lm_streq_nocase(l->items[i]->name, name)) {
      lm_udf* old = l->items[i];
      memmove(&l->items[i], &l->items[i + 1], sizeof(lm_udf*) * (size_t)(l->n - i - 1));
      l->n--;
      lm_udf_unref(old);
      return true;
    }
  }
  return false;
}

void lm_udf_list_free(lm_udf_list* l) {
  for (int32_t i = 0; i < l->n; i++) lm_udf_unref(l->items[i]);
  lm_free(l->items);
  l->items = NULL;
  l->n = 0;
}

/* ---- export of the arguments ---------------------------------------------------- */

/* Release callbacks of what the core passes: the memory is the context's, so
 * releasing only marks the struct released (a consumer that imports it may
 * release it; the core does not rely on either). */
static void release_array(struct ArrowArray* a) { a->release = NULL; }
static void release_schema(struct ArrowSchema* s) { s->release = NULL; }

/* One argument's values, rows sel[0..m) of v (sel NULL: rows 0..m-1), as a
 * child array in ctx memory. */
static laminar_code export_arg(lm_eval_ctx* ctx, const lm_vec* v, const uint32_t* sel,
                               int64_t m, struct ArrowArray* a) {
  memset(a, 0, sizeof *a);
  a->length = m;
  a->release = release_array;
  const void** bufs = lm_eval_ctx_alloc(ctx, sizeof(void*) * 3);
  if (bufs == NULL) return LAMINAR_ERR_NOMEM;
  bufs[0] = bufs[1] = bufs[2] = NULL;
  a->buffers = bufs;
  a->n_buffers = v->type == LM_TYPE_STRING ? 3 : 2;
  size_t bitmap = (size_t)((m + 7) / 8 + 1);
  if (v->nulls != NULL) {
    uint8_t* valid = lm_eval_ctx_alloc(ctx, bitmap);
    if (valid == NULL) return LAMINAR_ERR_NOMEM;
    memset(valid, 0, bitmap);
    int64_t nulls = 0;
    for (int64_t k = 0; k < m; k++) {
      uint8_t is_null = v->nulls[sel ? sel[k] : k];
      nulls += is_null;
      if (!is_null) valid[k >> 3] |= (uint8_t)(1u << (k & 7));
    }
    a->null_count = nulls;
    if (nulls > 0) bufs[0] = valid;
  }
  if (v->type == LM_TYPE_BOOL) {
    uint8_t* bits = lm_eval_ctx_alloc(ctx, bitmap);
    if (bits == NULL) return LAMINAR_ERR_NOMEM;
    memset(bits, 0, bitmap);
    const uint8_t* d = v->data;
    for (int64_t k = 0; k < m; k++) {
      if (d[sel ? sel[k] : k]) bits[k >> 3] |= (uint8_t)(1u << (k & 7));
    }
    bufs[1] = bits;
    return LAMINAR_OK;
  }
  if (v->type == LM_TYPE_STRING) {
    const lm_str* s = v->data;
    int64_t total = 0;
    for (int64_t k = 0; k < m; k++) total += s[sel ? sel[k] : k].len;
    if (total > INT32_MAX) return LAMINAR_ERR_NOMEM; /* a chunk's strings past 2 GiB */
    int32_t* offs = lm_eval_ctx_alloc(ctx, sizeof(int32_t) * (size_t)(m + 1));
    char* bytes = lm_eval_ctx_alloc(ctx, (size_t)(total ? total : 1));
    if (offs == NULL || bytes == NULL) return LAMINAR_ERR_NOMEM;
    int32_t at = 0;
    for (int64_t k = 0; k < m; k++) {
      offs[k] = at;
      lm_str x = s[sel ? sel[k] : k];
      if (x.len > 0) memcpy(bytes + at, x.ptr, (size_t)x.len);
      at += (int32_t)x.len;
    }
    offs[m] = at;
    bufs[1] = offs;
    bufs[2] = bytes;
    return LAMINAR_OK;
  }
  if (lm_type_is_decimal(v->type) && !lm_type_is_wide(v->type)) {
    /* DECIMAL(p <= 18) is an int64 per row in the engine, decimal128 in Arrow. */
    uint8_t* d = lm_eval_ctx_alloc(ctx, 16 * (size_t)(m ? m : 1));
    if (d == NULL) return LAMINAR_ERR_NOMEM;
    const int64_t* from = v->data;
    for (int64_t k = 0; k < m; k++) {
      lm_i128 x = from[sel ? sel[k] : k];
      memcpy(d + 16 * k, &x, 16);
    }
    bufs[1] = d;
    return LAMINAR_OK;
  }
  if (sel == NULL) {
    bufs[1] = v->data; /* fixed width: the engine's layout is Arrow's */
    return LAMINAR_OK;
  }
  size_t w = (size_t)lm_type_width(v->type);
  uint8_t* d = lm_eval_ctx_alloc(ctx, w * (size_t)(m ? m : 1));
  if (d == NULL) return LAMINAR_ERR_NOMEM;
  const uint8_t* from = v->data;
  for (int64_t k = 0; k < m; k++) memcpy(d + (size_t)k * w, from + (size_t)sel[k] * w, w);
  bufs[1] = d;
  return LAMINAR_OK;
}

/* The struct array of the call and its schema, in ctx memory. */
static laminar_code export_args(lm_eval_ctx* ctx, const lm_udf* f, const lm_vec* vals,
                                const uint32_t* sel, int64_t m, struct ArrowArray* arr,
                                struct ArrowSchema* sch) {
  int32_t n = f->nargs;
  size_t slots = (size_t)(n ? n : 1);
  struct ArrowArray* kids = lm_eval_ctx_alloc(ctx, sizeof *kids * slots);
  struct ArrowArray** kidp = lm_eval_ctx_alloc(ctx, sizeof *kidp * slots);
  struct ArrowSchema* skids = lm_eval_ctx_alloc(ctx, sizeof *skids * slots);
  struct ArrowSchema** skidp = lm_eval_ctx_alloc(ctx, sizeof *skidp * slots);
  const void** top = lm_eval_ctx_alloc(ctx, sizeof(void*));
  char* names = lm_eval_ctx_alloc(ctx, 16 * slots);
  char* formats = lm_eval_ctx_alloc(ctx, FORMAT_CAP * slots);
  if (kids == NULL || kidp == NULL || skids == NULL || skidp == NULL || top == NULL ||
      names == NULL || formats == NULL)
    return LAMINAR_ERR_NOMEM;
  for (int32_t i = 0; i < n; i++) {
    LM_TRY(export_arg(ctx, &vals[i], sel, m, &kids[i]));
    kidp[i] = &kids[i];
    snprintf(names + 16 * i, 16, "arg%d", (int)i);
    skids[i] =
        (struct ArrowSchema){.format = format_of(f->args[i], formats + FORMAT_CAP * i),
                             .name = names + 16 * i,
                             .flags = ARROW_FLAG_NULLABLE,
                             .release = release_schema};
    skidp[i] = &skids[i];
  }
  top[0] = NULL;
  *arr = (struct ArrowArray){.length = m,
                             .n_buffers = 1,
                             .n_children = n,
                             .buffers = top,
                             .children = n ? kidp : NULL,
                             .release = release_array};
  *sch = (struct ArrowSchema){.format = "+s",
                              .name = "",
                              .n_children = n,
                              .children = n ? skidp : NULL,
                              .release = release_schema};
  return LAMINAR_OK;
}

/* ---- import of the result -------------------------------------------------------- */

/* Check the callee's result and copy its m rows into `data` / `nulls` at
 * positions pos[k] (pos NULL: k). On failure the text is in ctx. */
static laminar_code import_result(lm_eval_ctx* ctx, const char* name, lm_type t,
                                  const struct ArrowArray* out,
                                  const struct ArrowSchema* out_schema, int64_t m,
                                  const uint32_t* pos, void* data, uint8_t* nulls) {
  const char* why = NULL;
  char buf[300], fmt[FORMAT_CAP];
  if (out->release == NULL || out_schema->release == NULL) {
    why = "its result array or schema is released (not filled)";
  } else if (!result_format_ok(out_schema->format, t)) {
    snprintf(buf, sizeof buf, "it returned format '%.40s', declared '%s' (%s)",
             out_schema->format ? out_schema->format : "(null)", format_of(t, fmt),
             lm_type_name(t));
    why = buf;
  } else if (out->length != m) {
    snprintf(buf, sizeof buf, "it returned %lld rows for %lld", (long long)out->length,
             (long long)m);
    why = buf;
  }
  if (why != NULL) {
    lm_eval_ctx_set_error(ctx, "function '%s' returned an invalid result: %s", name, why);
    return LAMINAR_ERR_FUNCTION_RESULT;
  }
  struct ArrowError na;
  na.message[0] = '\0';
  struct ArrowArrayView view;
  bool ok = ArrowArrayViewInitFromSchema(&view, out_schema, &na) == NANOARROW_OK;
  if (ok) {
    ok = ArrowArrayViewSetArray(&view, out, &na) == NANOARROW_OK &&
         ArrowArrayViewValidate(&view, NANOARROW_VALIDATION_LEVEL_FULL, &na) ==
             NANOARROW_OK;
  }
  if (!ok) {
    ArrowArrayViewReset(&view);
    lm_eval_ctx_set_error(ctx, "function '%s' returned an invalid array: %s", name,
                          na.message);
    return LAMINAR_ERR_FUNCTION_RESULT;
  }
  laminar_code rc = LAMINAR_OK;
  size_t w = (size_t)lm_type_width(t);
  if (pos == NULL && t != LM_TYPE_BOOL && t != LM_TYPE_STRING && !lm_type_is_decimal(t)) {
    /* Fixed width in place: the engine's layout is Arrow's. */
    memcpy(data, view.buffer_views[1].data.as_uint8 + (size_t)view.offset * w,
           (size_t)m * w);
    const uint8_t* valid = view.buffer_views[0].data.as_uint8;
    for (int64_t k = 0; k < m; k++) {
      nulls[k] = valid != NULL && !ArrowBitGet(valid, view.offset + k);
    }
    ArrowArrayViewReset(&view);
    return LAMINAR_OK;
  }
  for (int64_t k = 0; k < m && rc == LAMINAR_OK; k++) {
    int64_t at = pos ? pos[k] : k;
    bool is_null = ArrowArrayViewIsNull(&view, k);
    nulls[at] = is_null;
    uint8_t* slot = (uint8_t*)data + (size_t)at * w;
    if (is_null) {
      memset(slot, 0, w);
      continue;
    }
    switch (lm_type_kind(t)) {
      case LM_TYPE_BOOL: *slot = ArrowArrayViewGetIntUnsafe(&view, k) != 0; break;
      case LM_TYPE_INT16:
      case LM_TYPE_INT8:
        lm_vec_int_put(t, slot, 0, ArrowArrayViewGetIntUnsafe(&view, k));
        break;
      case LM_TYPE_INT32:
      case LM_TYPE_DATE: {
        int32_t x = (int32_t)ArrowArrayViewGetIntUnsafe(&view, k);
        memcpy(slot, &x, 4);
        break;
      }
      case LM_TYPE_INT64:
      case LM_TYPE_TIME:
      case LM_TYPE_TIMESTAMP: {
        int64_t x = ArrowArrayViewGetIntUnsafe(&view, k);
        memcpy(slot, &x, 8);
        break;
      }
      case LM_TYPE_DOUBLE: {
        double x = ArrowArrayViewGetDoubleUnsafe(&view, k);
        memcpy(slot, &x, 8);
        break;
      }
      case LM_TYPE_FLOAT: {
        float x = (float)ArrowArrayViewGetDoubleUnsafe(&view, k);
        memcpy(slot, &x, 4);
        break;
      }
      case LM_TYPE_STRING: {
        struct ArrowStringView sv = ArrowArrayViewGetStringUnsafe(&view, k);
        if (!lm_utf8_valid((const uint8_t*)sv.data, sv.size_bytes)) {
          lm_eval_ctx_set_error(ctx,
                                "function '%s' returned an invalid array: invalid "
                                "UTF-8 in value %lld",
                                name, (long long)k);
          rc = LAMINAR_ERR_FUNCTION_RESULT;
          break;
        }
        char* copy = lm_eval_ctx_alloc(ctx, (size_t)(sv.size_bytes ? sv.size_bytes : 1));
        if (copy == NULL) {
          rc = LAMINAR_ERR_NOMEM;
          break;
        }
        if (sv.size_bytes > 0) memcpy(copy, sv.data, (size_t)sv.size_bytes);
        lm_str s = {copy, sv.size_bytes};
        memcpy(slot, &s, sizeof s);
        break;
      }
      case LM_TYPE_DECIMAL: {
        /* decimal128, checked to fit the declared precision (Arrow does not
         * promise it), narrowed to int64 up to 18 digits (util/types.h). */
        lm_i128 x;
        memcpy(&x, view.buffer_views[1].data.as_uint8 + 16 * (size_t)(view.offset + k),
               16);
        if (!lm_dec_fits(x, lm_type_precision(t))) {
          lm_eval_ctx_set_error(ctx,
                                "function '%s' returned an invalid array: value %lld has "
                                "more than %d digits, past its type %s",
                                name, (long long)k, (int)lm_type_precision(t),
                                lm_type_name(t));
          rc = LAMINAR_ERR_FUNCTION_RESULT;
          break;
        }
        if (lm_type_is_wide(t)) {
          memcpy(slot, &x, 16);
        } else {
          int64_t narrow = (int64_t)x;
          memcpy(slot, &narrow, 8);
        }
        break;
      }
      case LM_TYPE_BINARY: /* not a declared type: never a result */
      case LM_TYPE_NULL: break;
    }
  }
  ArrowArrayViewReset(&view);
  return rc;
}

/* ---- a call ------------------------------------------------------------------------ */

/* Serialize the calls of a function not declared thread-safe. */
static void enter(lm_udf* f) {
  if ((f->flags & LAMINAR_FUNCTION_THREAD_SAFE) == 0) pthread_mutex_lock(&f->mu);
}
static void leave(lm_udf* f) {
  if ((f->flags & LAMINAR_FUNCTION_THREAD_SAFE) == 0) pthread_mutex_unlock(&f->mu);
}

/* The text of a callback that returned `status` (non-zero) into ctx; `what`
 * names an aggregate's callback (NULL for a scalar function).
 * LAMINAR_ERR_FUNCTION_RESULT when the callback returned that code (it found
 * its own result invalid: a host binding's value that does not fit the
 * declared type), LAMINAR_ERR_FUNCTION_FAILED otherwise. */
static laminar_code failed(lm_eval_ctx* ctx, const lm_udf* f, const char* what,
                           int status, char* msg, size_t cap) {
  msg[cap - 1] = '\0';
  char in[32] = "";
  if (what != NULL) snprintf(in, sizeof in, " in %s", what);
  if (status == LAMINAR_ERR_FUNCTION_RESULT) {
    lm_eval_ctx_set_error(ctx, "function '%s' returned an invalid result%s: %s", f->name,
                          in, msg[0] != '\0' ? msg : "(no message)");
    return LAMINAR_ERR_FUNCTION_RESULT;
  }
  if (msg[0] != '\0') {
    lm_eval_ctx_set_error(ctx, "function '%s' failed%s: %s", f->name, in, msg);
  } else {
    lm_eval_ctx_set_error(ctx, "function '%s' failed%s (its callback returned %d)",
                          f->name, in, status);
  }
  return LAMINAR_ERR_FUNCTION_FAILED;
}

/* A result-returning callback's outcome: its failure, or its m rows checked
 * and copied (import_result); out and out_schema released either way. */
static laminar_code take_result(lm_eval_ctx* ctx, const lm_udf* f, const char* what,
                                int status, char* msg, size_t cap, struct ArrowArray* out,
                                struct ArrowSchema* out_schema, int64_t m,
                                const uint32_t* pos, void* data, uint8_t* nulls) {
  laminar_code rc;
  if (status != 0) {
    rc = failed(ctx, f, what, status, msg, cap);
  } else {
    rc = import_result(ctx, f->name, f->result, out, out_schema, m, pos, data, nulls);
  }
  if (out->release != NULL) out->release(out);
  if (out_schema->release != NULL) out_schema->release(out_schema);
  return rc;
}

/* Rows sel[0..m) of vals (sel NULL: 0..m-1) through f's callback, once:
 * *status is its return value, out / out_schema what it filled (zeroed
 * first; the caller releases them), msg (cap bytes) its text. */
static laminar_code invoke(lm_eval_ctx* ctx, lm_udf* f, const lm_vec* vals,
                           const uint32_t* sel, int64_t m, struct ArrowArray* out,
                           struct ArrowSchema* out_schema, char* msg, size_t cap,
                           int* status) {
  memset(out, 0, sizeof *out);
  memset(out_schema, 0, sizeof *out_schema);
  msg[0] = '\0';
  struct ArrowArray arr;
  struct ArrowSchema sch;
  LM_TRY(export_args(ctx, f, vals, sel, m, &arr, &sch));
  enter(f);
  *status = f->fn(f->user, &arr, &sch, out, out_schema, msg, cap);
  leave(f);
  return LAMINAR_OK;
}

static laminar_code call(lm_eval_ctx* ctx, lm_udf* f, const lm_vec* vals,
                         const uint32_t* sel, int64_t m, const uint32_t* pos, void* data,
                         uint8_t* nulls) {
  struct ArrowArray out;
  struct ArrowSchema out_schema;
  char msg[400];
  int status;
  LM_TRY(invoke(ctx, f, vals, sel, m, &out, &out_schema, msg, sizeof msg, &status));
  return take_result(ctx, f, NULL, status, msg, sizeof msg, &out, &out_schema, m, pos,
                     data, nulls);
}

/* The rows of vals (m each) a call passes: all (*out_sel NULL, *out_k m), or,
 * unless f is CALLED_ON_NULL, those without a NULL argument. */
static laminar_code passed_rows(lm_eval_ctx* ctx, const lm_udf* f, const lm_vec* vals,
                                int64_t m, const uint32_t** out_sel, int64_t* out_k) {
  *out_sel = NULL;
  *out_k = m;
  if ((f->flags & LAMINAR_FUNCTION_CALLED_ON_NULL) != 0) return LAMINAR_OK;
  bool any = false;
  for (int32_t i = 0; i < f->nargs && !any; i++) any = vals[i].nulls != NULL;
  if (!any) return LAMINAR_OK;
  uint32_t* rows = lm_eval_ctx_alloc(ctx, sizeof(uint32_t) * (size_t)(m ? m : 1));
  if (rows == NULL) return LAMINAR_ERR_NOMEM;
  int64_t k = 0;
  for (int64_t r = 0; r < m; r++) {
    bool null = false;
    for (int32_t i = 0; i < f->nargs; i++) null |= vals[i].nulls && vals[i].nulls[r];
    if (!null) rows[k++] = (uint32_t)r;
  }
  *out_sel = rows;
  *out_k = k;
  return LAMINAR_OK;
}

/* Storage a constant NULL result points at. */
static const uint8_t k_null_one = 1;
static const lm_str k_zero_slot[1];

laminar_code lm_udf_eval(lm_eval_ctx* ctx, const lm_expr* e, const lm_xvec* args,
                         int64_t n, lm_xvec* out) {
  lm_udf* f = (lm_udf*)e->udf;
  bool strict = (f->flags & LAMINAR_FUNCTION_CALLED_ON_NULL) == 0;
  bool all_cst = true, any_null_cst = false;
  for (int32_t i = 0; i < e->nargs; i++) {
    all_cst &= args[i].cst;
    any_null_cst |= args[i].cst && args[i].v.nulls != NULL && args[i].v.nulls[0];
  }
  if (strict && any_null_cst) {
    out->v = (lm_vec){e->type, n, &k_null_one, k_zero_slot};
    out->cst = true;
    return LAMINAR_OK;
  }
  /* Constant arguments of a deterministic function: one row. */
  bool one = all_cst && (f->flags & LAMINAR_FUNCTION_DETERMINISTIC) != 0;
  int64_t m = one ? 1 : n;
  lm_vec* vals =
      lm_eval_ctx_alloc(ctx, sizeof(lm_vec) * (size_t)(e->nargs ? e->nargs : 1));
  void* data =
      lm_eval_ctx_alloc(ctx, (size_t)lm_type_width(e->type) * (size_t)(m ? m : 1));
  uint8_t* nulls = lm_eval_ctx_alloc(ctx, (size_t)(m ? m : 1));
  if (vals == NULL || data == NULL || nulls == NULL) return LAMINAR_ERR_NOMEM;
  for (int32_t i = 0; i < e->nargs; i++) {
    if (one) {
      vals[i] = args[i].v;
      vals[i].len = 1;
    } else {
      LM_TRY(lm_expr_densify(ctx, &args[i], &vals[i]));
    }
  }
  memset(nulls, 1, (size_t)(m ? m : 1));
  memset(data, 0, (size_t)lm_type_width(e->type) * (size_t)(m ? m : 1));
  const uint32_t* sel;
  int64_t k;
  LM_TRY(passed_rows(ctx, f, vals, m, &sel, &k));
  if (k > 0) LM_TRY(call(ctx, f, vals, sel, k, sel, data, nulls));
  uint8_t anynull = 0;
  for (int64_t r = 0; r < m; r++) anynull |= nulls[r];
  out->v = (lm_vec){e->type, n, anynull ? nulls : NULL, data};
  out->cst = one;
  return LAMINAR_OK;
}

/* ---- aggregate functions (laminar_aggregate_register) ------------------------------ */

laminar_code lm_udaf_create(const char* name, const char* const* arg_types, int32_t nargs,
                            const char* return_type, const lm_udaf_callbacks* cb,
                            void* user, void (*destroy)(void* user), uint32_t flags,
                            lm_udf** out, laminar_error* err) {
  *out = NULL;
  const char* nm = name ? name : "(null)";
  if (cb->update == NULL || cb->merge == NULL || cb->finalize == NULL) {
    return lm_error_set(err, LAMINAR_ERR_MISUSE,
                        "aggregate '%s': update, merge and finalize are required", nm);
  }
  if (nargs < 1 || nargs > 2) {
    return lm_error_set(err, LAMINAR_ERR_MISUSE,
                        "aggregate '%s': nargs must be 1 or 2, got %d", nm, (int)nargs);
  }
  if (cb->state_size < 1 || cb->state_size > 65536) {
    return lm_error_set(err, LAMINAR_ERR_MISUSE,
                        "aggregate '%s': state_size must be 1 to 65536, got %lld", nm,
                        (long long)cb->state_size);
  }
  if ((cb->serialize == NULL) != (cb->deserialize == NULL) ||
      (cb->destroy_state != NULL && cb->serialize == NULL)) {
    return lm_error_set(err, LAMINAR_ERR_MISUSE,
                        "aggregate '%s': serialize and deserialize go together, and "
                        "destroy_state needs them",
                        nm);
  }
  if ((flags & LAMINAR_FUNCTION_DETERMINISTIC) != 0) {
    return lm_error_set(err, LAMINAR_ERR_MISUSE,
                        "aggregate '%s': unknown flags 0x%x (an aggregate takes "
                        "CALLED_ON_NULL and THREAD_SAFE)",
                        nm, (unsigned)LAMINAR_FUNCTION_DETERMINISTIC);
  }
  LM_TRY(
      create(name, arg_types, nargs, return_type, NULL, user, destroy, flags, out, err));
  lm_udf* f = *out;
  f->state_size = cb->state_size;
  f->a_init = cb->init;
  f->a_update = cb->update;
  f->a_retract = cb->retract;
  f->a_merge = cb->merge;
  f->a_finalize = cb->finalize;
  f->a_serialize = cb->serialize;
  f->a_deserialize = cb->deserialize;
  f->a_destroy_state = cb->destroy_state;
  return LAMINAR_OK;
}

bool lm_udf_is_aggregate(const lm_udf* f) { return f->aggregate; }
lm_type lm_udf_result_type(const lm_udf* f) { return f->result; }
int64_t lm_udaf_state_size(const lm_udf* f) { return f->state_size; }
bool lm_udaf_retractable(const lm_udf* f) { return f->a_retract != NULL; }
bool lm_udaf_owns_memory(const lm_udf* f) { return f->a_serialize != NULL; }

void lm_udaf_init_state(lm_udf* f, void* state) {
  memset(state, 0, (size_t)f->state_size);
  if (f->a_init == NULL) return;
  enter(f);
  f->a_init(f->user, state);
  leave(f);
}

void lm_udaf_destroy_state(lm_udf* f, void* state) {
  if (f->a_destroy_state == NULL) return;
  enter(f);
  f->a_destroy_state(f->user, state);
  leave(f);
}

laminar_code lm_udaf_update(lm_eval_ctx* ctx, lm_udf* f, bool retract, void* states,
                            const lm_vec* args, const uint32_t* sel, const uint32_t* gids,
                            int64_t m) {
  if (m == 0) return LAMINAR_OK;
  /* Rows with a NULL argument are skipped unless CALLED_ON_NULL. */
  bool strict = (f->flags & LAMINAR_FUNCTION_CALLED_ON_NULL) == 0;
  bool any = false;
  for (int32_t i = 0; strict && i < f->nargs; i++) any |= args[i].nulls != NULL;
  const uint32_t* rows = sel;
  const uint32_t* groups = gids;
  int64_t k = m;
  if (any) {
    uint32_t* r = lm_eval_ctx_alloc(ctx, sizeof(uint32_t) * (size_t)m);
    uint32_t* g = lm_eval_ctx_alloc(ctx, sizeof(uint32_t) * (size_t)m);
    if (r == NULL || g == NULL) return LAMINAR_ERR_NOMEM;
    k = 0;
    for (int64_t j = 0; j < m; j++) {
      uint32_t row = sel ? sel[j] : (uint32_t)j;
      bool null = false;
      for (int32_t i = 0; i < f->nargs; i++) null |= args[i].nulls && args[i].nulls[row];
      if (null) continue;
      r[k] = row;
      g[k++] = gids[j];
    }
    rows = r;
    groups = g;
    if (k == 0) return LAMINAR_OK;
  }
  struct ArrowArray arr;
  struct ArrowSchema sch;
  LM_TRY(export_args(ctx, f, args, rows, k, &arr, &sch));
  char msg[400];
  msg[0] = '\0';
  laminar_aggregate_update cb = retract ? f->a_retract : f->a_update;
  enter(f);
  int status = cb(f->user, states, groups, &arr, &sch, msg, sizeof msg);
  leave(f);
  if (status != 0)
    return failed(ctx, f, retract ? "retract" : "update", status, msg, sizeof msg);
  return LAMINAR_OK;
}

laminar_code lm_udaf_merge(lm_eval_ctx* ctx, lm_udf* f, void* state, const void* other) {
  char msg[400];
  msg[0] = '\0';
  enter(f);
  int status = f->a_merge(f->user, state, other, msg, sizeof msg);
  leave(f);
  if (status != 0) return failed(ctx, f, "merge", status, msg, sizeof msg);
  return LAMINAR_OK;
}

laminar_code lm_udaf_finalize(lm_eval_ctx* ctx, lm_udf* f, const void* states, int64_t n,
                              void* data, uint8_t* nulls) {
  if (n == 0) return LAMINAR_OK;
  struct ArrowArray out;
  struct ArrowSchema out_schema;
  memset(&out, 0, sizeof out);
  memset(&out_schema, 0, sizeof out_schema);
  char msg[400];
  msg[0] = '\0';
  enter(f);
  int status = f->a_finalize(f->user, states, n, &out, &out_schema, msg, sizeof msg);
  leave(f);
  return take_result(ctx, f, "finalize", status, msg, sizeof msg, &out, &out_schema, n,
                     NULL, data, nulls);
}

int64_t lm_udaf_serialize(lm_udf* f, const void* state, void* buf, int64_t cap) {
  if (f->a_serialize == NULL) {
    if (cap >= f->state_size) memcpy(buf, state, (size_t)f->state_size);
    return f->state_size;
  }
  enter(f);
  int64_t n = f->a_serialize(f->user, state, buf, cap);
  leave(f);
  return n;
}

laminar_code lm_udaf_deserialize(lm_udf* f, void* state, const void* buf, int64_t len) {
  memset(state, 0, (size_t)f->state_size);
  if (f->a_deserialize == NULL) {
    if (len != f->state_size) return LAMINAR_ERR_RECOVERY;
    memcpy(state, buf, (size_t)len);
    return LAMINAR_OK;
  }
  enter(f);
  int status = f->a_deserialize(f->user, state, buf, len);
  leave(f);
  return status == 0 ? LAMINAR_OK : LAMINAR_ERR_FUNCTION_FAILED;
}

/* ---- table functions (laminar_table_function_register) ------------------------------ */

laminar_code lm_udtf_create(const char* name, const char* const* arg_types, int32_t nargs,
                            const struct ArrowSchema* columns,
                            laminar_function_callback fn, void* user,
                            void (*destroy)(void* user), uint32_t flags, lm_udf** out,
                            laminar_error* err) {
  *out = NULL;
  const char* nm = name ? name : "(null)";
  if (fn == NULL) {
    return lm_error_set(err, LAMINAR_ERR_MISUSE,
                        "laminar_table_function_register: function '%s': fn is NULL", nm);
  }
  if (columns == NULL || columns->release == NULL || columns->format == NULL ||
      strcmp(columns->format, "+s") != 0 || columns->n_children < 1 ||
      columns->n_children > UDF_MAX_ARGS || columns->children == NULL) {
    return lm_error_set(err, LAMINAR_ERR_MISUSE,
                        "table function '%s': columns must be a struct schema (\"+s\", "
                        "not released) of 1 to %d columns",
                        nm, UDF_MAX_ARGS);
  }
  int32_t ncols = (int32_t)columns->n_children;
  lm_type types[UDF_MAX_ARGS];
  for (int32_t i = 0; i < ncols; i++) {
    const struct ArrowSchema* c = columns->children[i];
    if (c == NULL || c->name == NULL || !is_identifier(c->name) ||
        strlen(c->name) > 120) {
      return lm_error_set(err, LAMINAR_ERR_MISUSE,
                          "table function '%s': column %d has no name, or one that is "
                          "not an identifier",
                          nm, (int)i + 1);
    }
    types[i] = type_of_format(c->format, false);
    if (types[i] == LM_TYPE_NULL) {
      return lm_error_set(err, LAMINAR_ERR_UNKNOWN_TYPE,
                          "table function '%s': column '%s' has type '%s'; use one of "
                          "the Arrow formats b, i, l, g, u, tsu:, tdD, d:p,s",
                          nm, c->name, c->format ? c->format : "(null)");
    }
    for (int32_t j = 0; j < i; j++) {
      if (lm_streq_nocase(columns->children[j]->name, c->name)) {
        return lm_error_set(err, LAMINAR_ERR_MISUSE,
                            "table function '%s': two columns are named '%s'", nm,
                            c->name);
      }
    }
  }
  /* The scalar checks (name, arguments, flags); the result type is unused. */
  LM_TRY(create(name, arg_types, nargs, "l", fn, user, destroy, flags, out, err));
  lm_udf* f = *out;
  f->table = true;
  for (int32_t i = 0; i < ncols; i++) {
    f->col_names[i] = lm_strdup(columns->children[i]->name);
    f->cols[i] = types[i];
    if (f->col_names[i] == NULL) {
      f->ncols = i;
      lm_udf_set_destroy(f, NULL);
      lm_udf_unref(f);
      *out = NULL;
      return lm_error_set(err, LAMINAR_ERR_NOMEM, "function '%s': out of memory", nm);
    }
  }
  f->ncols = ncols;
  return LAMINAR_OK;
}

bool lm_udf_is_table(const lm_udf* f) { return f->table; }
int32_t lm_udtf_ncols(const lm_udf* f) { return f->ncols; }
lm_type lm_udtf_col_type(const lm_udf* f, int32_t i) { return f->cols[i]; }
const char* lm_udtf_col_name(const lm_udf* f, int32_t i) { return f->col_names[i]; }

/* The parent-index column (child 0 of a table function's result): int32 or
 * int64 without NULLs, each value in [0, k) and not below the one before,
 * into parent[0..m) mapped through sel (the passed rows' input rows; NULL:
 * the same). On failure the text is in ctx. */
static laminar_code import_parents(lm_eval_ctx* ctx, const lm_udf* f,
                                   const struct ArrowArray* a,
                                   const struct ArrowSchema* s, int64_t m, int64_t k,
                                   const uint32_t* sel, uint32_t* parent) {
  char why[200] = "";
  struct ArrowError na;
  na.message[0] = '\0';
  struct ArrowArrayView view;
  bool ok =
      s->format != NULL && (strcmp(s->format, "i") == 0 || strcmp(s->format, "l") == 0);
  if (!ok) {
    snprintf(why, sizeof why,
             "its parent-row column (child 0) has format '%.40s', not 'i' "
             "or 'l'",
             s->format ? s->format : "(null)");
  } else if (a->release == NULL || a->length != m) {
    snprintf(why, sizeof why, "its parent-row column has %lld rows for %lld",
             (long long)a->length, (long long)m);
    ok = false;
  }
  bool viewed = false;
  if (ok) {
    viewed = true;
    ok = ArrowArrayViewInitFromSchema(&view, s, &na) == NANOARROW_OK &&
         ArrowArrayViewSetArray(&view, a, &na) == NANOARROW_OK &&
         ArrowArrayViewValidate(&view, NANOARROW_VALIDATION_LEVEL_FULL, &na) ==
             NANOARROW_OK;
    if (!ok)
      snprintf(why, sizeof why, "its parent-row column is invalid: %.150s", na.message);
  }
  int64_t prev = 0;
  for (int64_t r = 0; ok && r < m; r++) {
    if (ArrowArrayViewIsNull(&view, r)) {
      snprintf(why, sizeof why, "its parent-row column is NULL at output row %lld",
               (long long)r);
      ok = false;
      break;
    }
    int64_t p = ArrowArrayViewGetIntUnsafe(&view, r);
    if (p < 0 || p >= k) {
      snprintf(why, sizeof why,
               "parent row %lld at output row %lld is out of range (the call had %lld "
               "rows)",
               (long long)p, (long long)r, (long long)k);
      ok = false;
    } else if (p < prev) {
      snprintf(why, sizeof why,
               "parent rows must not go down: %lld after %lld at output row %lld",
               (long long)p, (long long)prev, (long long)r);
      ok = false;
    } else {
      parent[r] = sel ? sel[p] : (uint32_t)p;
      prev = p;
    }
  }
  if (viewed) ArrowArrayViewReset(&view);
  if (ok) return LAMINAR_OK;
  lm_eval_ctx_set_error(ctx, "function '%s' returned an invalid result: %s", f->name,
                        why);
  return LAMINAR_ERR_FUNCTION_RESULT;
}

/* A table function's result: the struct checked, the parents and columns
 * copied into ctx memory. */
static laminar_code import_table(lm_eval_ctx* ctx, const lm_udf* f,
                                 const struct ArrowArray* out,
                                 const struct ArrowSchema* sch, int64_t k,
                                 const uint32_t* sel, lm_vec* cols,
                                 const uint32_t** out_parent, int64_t* out_m) {
  char why[300] = "";
  if (out->release == NULL || sch->release == NULL) {
    snprintf(why, sizeof why, "its result array or schema is released (not filled)");
  } else if (sch->format == NULL || strcmp(sch->format, "+s") != 0 ||
             sch->n_children != f->ncols + 1 || out->n_children != f->ncols + 1 ||
             out->children == NULL || sch->children == NULL) {
    snprintf(
        why, sizeof why,
        "it returned format '%.40s' with %lld columns; declared a struct (\"+s\") of "
        "the parent-row column then %d column%s",
        sch->format ? sch->format : "(null)", (long long)sch->n_children, (int)f->ncols,
        f->ncols == 1 ? "" : "s");
  } else if (out->length < 0 || out->length > INT32_MAX || out->offset != 0 ||
             (out->n_buffers > 0 && out->buffers != NULL && out->buffers[0] != NULL &&
              out->null_count != 0)) {
    snprintf(why, sizeof why,
             "its struct array has offset %lld, length %lld or NULL rows (offset 0, no "
             "NULL rows)",
             (long long)out->offset, (long long)out->length);
  }
  if (why[0] != '\0') {
    lm_eval_ctx_set_error(ctx, "function '%s' returned an invalid result: %s", f->name,
                          why);
    return LAMINAR_ERR_FUNCTION_RESULT;
  }
  for (int64_t c = 0; c <= f->ncols; c++) {
    if (out->children[c] == NULL || sch->children[c] == NULL) {
      lm_eval_ctx_set_error(ctx,
                            "function '%s' returned an invalid result: child %lld "
                            "is NULL",
                            f->name, (long long)c);
      return LAMINAR_ERR_FUNCTION_RESULT;
    }
  }
  int64_t m = out->length;
  size_t rows = (size_t)(m ? m : 1);
  uint32_t* parent = lm_eval_ctx_alloc(ctx, sizeof(uint32_t) * rows);
  if (parent == NULL) return LAMINAR_ERR_NOMEM;
  LM_TRY(import_parents(ctx, f, out->children[0], sch->children[0], m, k, sel, parent));
  for (int32_t c = 0; c < f->ncols; c++) {
    lm_type t = f->cols[c];
    void* data = lm_eval_ctx_alloc(ctx, (size_t)lm_type_width(t) * rows);
    uint8_t* nulls = lm_eval_ctx_alloc(ctx, rows);
    if (data == NULL || nulls == NULL) return LAMINAR_ERR_NOMEM;
    char what[300];
    snprintf(what, sizeof what, "%s' column '%s", f->name, f->col_names[c]);
    LM_TRY(import_result(ctx, what, t, out->children[c + 1], sch->children[c + 1], m,
                         NULL, data, nulls));
    uint8_t any = 0;
    for (int64_t r = 0; r < m; r++) any |= nulls[r];
    cols[c] = (lm_vec){t, m, any ? nulls : NULL, data};
  }
  *out_parent = parent;
  *out_m = m;
  return LAMINAR_OK;
}

laminar_code lm_udtf_eval(lm_eval_ctx* ctx, lm_udf* f, const lm_vec* args, int64_t n,
                          lm_vec* cols, const uint32_t** out_parent, int64_t* out_m) {
  *out_parent = NULL;
  *out_m = 0;
  for (int32_t c = 0; c < f->ncols; c++) cols[c] = (lm_vec){f->cols[c], 0, NULL, NULL};
  const uint32_t* sel;
  int64_t k;
  LM_TRY(passed_rows(ctx, f, args, n, &sel, &k));
  if (k == 0) return LAMINAR_OK;
  struct ArrowArray out;
  struct ArrowSchema out_schema;
  char msg[400];
  int status;
  LM_TRY(invoke(ctx, f, args, sel, k, &out, &out_schema, msg, sizeof msg, &status));
  laminar_code rc;
  if (status != 0) {
    rc = failed(ctx, f, NULL, status, msg, sizeof msg);
  } else {
    rc = import_table(ctx, f, &out, &out_schema, k, sel, cols, out_parent, out_m);
  }
  if (out.release != NULL) out.release(&out);
  if (out_schema.release != NULL) out_schema.release(&out_schema);
  return rc;
}
