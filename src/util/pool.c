/*
 * pool.c -- chunked bump allocator (see pool.h).
 */
#include "util/pool.h"

#include "util/util.h"

#include <string.h>

struct lm_pool_chunk {
  lm_pool_chunk* prev;
  size_t cap;
  size_t used;
  /* data follows, 8-byte aligned */
  max_align_t data[];
};

void lm_pool_init(lm_pool* pool) { *pool = (lm_pool){NULL, 0}; }

void* lm_pool_alloc(lm_pool* pool, size_t n) {
  n = (n + 7) & ~(size_t)7;
  if (n == 0) n = 8;
  lm_pool_chunk* c = pool->head;
  if (c == NULL || c->cap - c->used < n) {
    size_t cap = c ? c->cap * 2 : 4096;
    while (cap < n) cap *= 2;
    lm_pool_chunk* fresh = lm_malloc(sizeof *fresh + cap);
    if (fresh == NULL) return NULL;
    fresh->prev = c;
    fresh->cap = cap;
    fresh->used = 0;
    pool->head = c = fresh;
  }
  void* p = (char*)c->data + c->used;
  c->used += n;
  pool->used_bytes += n;
  return p;
}

char* lm_pool_copy(lm_pool* pool, const void* p, size_t n) {
  char* out = lm_pool_alloc(pool, n);
  if (out != NULL && n > 0) memcpy(out, p, n);
  return out;
}

void lm_pool_reset(lm_pool* pool) {
  lm_pool_chunk* c = pool->head;
  if (c == NULL) return;
  /* Keep the newest (largest) chunk, free the older ones. */
  lm_pool_chunk* old = c->prev;
  while (old != NULL) {
    lm_pool_chunk* prev = old->prev;
    lm_free(old);
    old = prev;
  }
  c->prev = NULL;
  c->used = 0;
  pool->used_bytes = 0;
}

void lm_pool_free(lm_pool* pool) {
  lm_pool_chunk* c = pool->head;
  while (c != NULL) {
    lm_pool_chunk* prev = c->prev;
    lm_free(c);
    c = prev;
  }
  lm_pool_init(pool);
}
