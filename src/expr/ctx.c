/*
 * ctx.c -- the evaluation context: a bump arena of malloc'd chunks that holds
 * every intermediate and result vector of a batch.
 *
 * Allocation is a pointer bump. When a chunk is full a bigger one is chained
 * in front (older chunks stay alive: earlier results point into them). Reset
 * frees the chain and, when the batch needed more than one chunk, replaces it
 * with a single chunk big enough for the whole batch, so a context that sees
 * batches of a steady size stops calling malloc after the first reset.
 */
#include "expr/internal.h"

#include "util/util.h"

#define CTX_MIN_CHUNK ((size_t)64 * 1024)
#define CTX_ALIGN ((size_t)16)

typedef struct ctx_chunk {
  struct ctx_chunk* prev; /* older chunk, or NULL */
  size_t cap;             /* bytes in data[] */
  size_t used;            /* bytes handed out from data[] */
  max_align_t data[];
} ctx_chunk;

struct lm_eval_ctx {
  ctx_chunk* head;      /* current chunk (the largest); older ones behind it */
  size_t batch_bytes;   /* bytes handed out since the last reset, all chunks */
  uint64_t mallocs;     /* chunks ever obtained from malloc */
};

laminar_code lm_eval_ctx_create(lm_eval_ctx** out) {
  *out = lm_calloc(1, sizeof(lm_eval_ctx));
  return *out ? LAMINAR_OK : LAMINAR_ERR_NOMEM;
}

static ctx_chunk* chunk_new(lm_eval_ctx* ctx, size_t cap, ctx_chunk* prev) {
  if (cap > SIZE_MAX - sizeof(ctx_chunk)) return NULL;
  ctx_chunk* c = lm_malloc(sizeof(ctx_chunk) + cap);
  if (c == NULL) return NULL;
  c->prev = prev;
  c->cap = cap;
  c->used = 0;
  ctx->mallocs++;
  return c;
}

/* Smallest power of two >= n, at least CTX_MIN_CHUNK (n itself on overflow). */
static size_t chunk_size_for(size_t n) {
  size_t cap = CTX_MIN_CHUNK;
  while (cap < n) {
    if (cap > SIZE_MAX / 2) return n;
    cap *= 2;
  }
  return cap;
}

void* lm_eval_ctx_alloc(lm_eval_ctx* ctx, size_t bytes) {
  if (bytes > SIZE_MAX - CTX_ALIGN) return NULL;
  bytes = bytes == 0 ? CTX_ALIGN : (bytes + CTX_ALIGN - 1) & ~(CTX_ALIGN - 1);
  ctx_chunk* c = ctx->head;
  if (LM_UNLIKELY(c == NULL || c->cap - c->used < bytes)) {
    size_t want = c ? c->cap * 2 : CTX_MIN_CHUNK;
    if (want < bytes) want = chunk_size_for(bytes);
    c = chunk_new(ctx, want, c);
    if (c == NULL) return NULL;
    ctx->head = c;
  }
  void* p = (unsigned char*)c->data + c->used;
  c->used += bytes;
  ctx->batch_bytes += bytes;
  return p;
}

void lm_eval_ctx_reset(lm_eval_ctx* ctx) {
  ctx_chunk* c = ctx->head;
  if (c == NULL) return;
  if (c->prev != NULL) {
    /* The batch spilled over several chunks: keep one that fits it all. */
    size_t need = ctx->batch_bytes;
    ctx_chunk* old = c;
    while (old != NULL) {
      ctx_chunk* prev = old->prev;
      if (old != c) lm_free(old);
      old = prev;
    }
    c->prev = NULL;
    if (c->cap < need) {
      ctx_chunk* big = chunk_new(ctx, chunk_size_for(need), NULL);
      if (big != NULL) { /* else keep the largest we have */
        lm_free(c);
        c = big;
      }
    }
    ctx->head = c;
  }
  c->used = 0;
  ctx->batch_bytes = 0;
}

void lm_eval_ctx_destroy(lm_eval_ctx* ctx) {
  if (ctx == NULL) return;
  ctx_chunk* c = ctx->head;
  while (c != NULL) {
    ctx_chunk* prev = c->prev;
    lm_free(c);
    c = prev;
  }
  lm_free(ctx);
}

uint64_t lm_eval_ctx_mallocs(const lm_eval_ctx* ctx) { return ctx->mallocs; }

size_t lm_eval_ctx_reserved(const lm_eval_ctx* ctx) {
  size_t total = 0;
  for (const ctx_chunk* c = ctx->head; c != NULL; c = c->prev) total += c->cap;
  return total;
}
