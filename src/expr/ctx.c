/*
 * ctx.c -- the evaluation context: the lm_pool that holds every intermediate
 * and result vector of a batch. Reset per batch by the operator that owns it;
 * the pool coalesces its chunks on reset, so a context that sees batches of a
 * steady size stops calling malloc after the first reset.
 */
#include "expr/internal.h"

#include "util/pool.h"
#include "util/util.h"

#include <stdarg.h>
#include <stdio.h>

#define CTX_MIN_CHUNK ((size_t)64 * 1024)

struct lm_eval_ctx {
  lm_pool pool;
  char error[LM_EVAL_ERROR_MAX]; /* lm_eval_ctx_error */
};

laminar_code lm_eval_ctx_create(lm_eval_ctx** out) {
  *out = lm_calloc(1, sizeof(lm_eval_ctx));
  if (*out == NULL) return LAMINAR_ERR_NOMEM;
  lm_pool_init_sized(&(*out)->pool, CTX_MIN_CHUNK);
  return LAMINAR_OK;
}

void* lm_eval_ctx_alloc(lm_eval_ctx* ctx, size_t bytes) {
  return lm_pool_alloc(&ctx->pool, bytes);
}

void lm_eval_ctx_reset(lm_eval_ctx* ctx) { lm_pool_reset(&ctx->pool); }

const char* lm_eval_ctx_error(const lm_eval_ctx* ctx) { return ctx->error; }

void lm_eval_ctx_set_error(lm_eval_ctx* ctx, const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(ctx->error, sizeof ctx->error, fmt, ap);
  va_end(ap);
}

void lm_eval_ctx_destroy(lm_eval_ctx* ctx) {
  if (ctx == NULL) return;
  lm_pool_free(&ctx->pool);
  lm_free(ctx);
}

uint64_t lm_eval_ctx_mallocs(const lm_eval_ctx* ctx) { return ctx->pool.mallocs; }

size_t lm_eval_ctx_reserved(const lm_eval_ctx* ctx) {
  return lm_pool_reserved(&ctx->pool);
}
