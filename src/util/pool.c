/*
 * pool.c -- chunked bump allocator (see pool.h).
 */
#include "util/pool.h"

#include "util/util.h"

#include <stdalign.h>
#include <string.h>

#define POOL_ALIGN ((size_t)alignof(max_align_t))
#define POOL_DEFAULT_CHUNK ((size_t)4096)

struct lm_pool_chunk {
  lm_pool_chunk* prev;
  size_t cap;  /* bytes in data[] */
  size_t used; /* bytes handed out from data[] */
  max_align_t data[];
};

void lm_pool_init_sized(lm_pool* pool, size_t min_chunk) {
  *pool = (lm_pool){NULL, 0, min_chunk, 0};
}

void lm_pool_init(lm_pool* pool) { lm_pool_init_sized(pool, 0); }

static lm_pool_chunk* chunk_new(lm_pool* pool, size_t cap, lm_pool_chunk* prev) {
  if (cap > SIZE_MAX - sizeof(lm_pool_chunk)) return NULL;
  lm_pool_chunk* c = lm_malloc(sizeof *c + cap);
  if (c == NULL) return NULL;
  c->prev = prev;
  c->cap = cap;
  c->used = 0;
  pool->mallocs++;
  return c;
}

/* Smallest power-of-two multiple of `base` >= n (n itself on overflow). */
static size_t chunk_size_for(size_t base, size_t n) {
  size_t cap = base;
  while (cap < n) {
    if (cap > SIZE_MAX / 2) return n;
    cap *= 2;
  }
  return cap;
}

/* A head chunk with n bytes free (a new one if needed); NULL when out of memory. */
static lm_pool_chunk* room_for(lm_pool* pool, size_t n) {
  lm_pool_chunk* c = pool->head;
  if (LM_UNLIKELY(c == NULL || c->cap - c->used < n)) {
    size_t base = pool->min_chunk ? pool->min_chunk : POOL_DEFAULT_CHUNK;
    size_t want = c ? c->cap * 2 : base;
    if (want < n) want = chunk_size_for(base, n);
    c = chunk_new(pool, want, c);
    if (c == NULL) return NULL;
    pool->head = c;
  }
  return c;
}

void* lm_pool_alloc(lm_pool* pool, size_t n) {
  if (n > SIZE_MAX - POOL_ALIGN) return NULL;
  n = n == 0 ? POOL_ALIGN : (n + POOL_ALIGN - 1) & ~(POOL_ALIGN - 1);
  lm_pool_chunk* c = room_for(pool, n);
  if (c == NULL) return NULL;
  void* p = (char*)c->data + c->used;
  c->used += n;
  pool->used_bytes += n;
  return p;
}

bool lm_pool_reserve(lm_pool* pool, size_t n) { return room_for(pool, n) != NULL; }

void* lm_pool_calloc(lm_pool* pool, size_t n) {
  void* p = lm_pool_alloc(pool, n);
  if (p != NULL) memset(p, 0, n);
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
  if (c->prev != NULL) {
    /* Spilled over several chunks: keep one that fits everything. */
    size_t need = pool->used_bytes;
    for (lm_pool_chunk* old = c->prev; old != NULL;) {
      lm_pool_chunk* prev = old->prev;
      lm_free(old);
      old = prev;
    }
    c->prev = NULL;
    if (c->cap < need) {
      lm_pool_chunk* big = chunk_new(pool, chunk_size_for(c->cap, need), NULL);
      if (big != NULL) { /* else keep the largest we have */
        lm_free(c);
        c = big;
      }
    }
    pool->head = c;
  }
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
  pool->head = NULL;
  pool->used_bytes = 0;
}

size_t lm_pool_reserved(const lm_pool* pool) {
  size_t total = 0;
  for (const lm_pool_chunk* c = pool->head; c != NULL; c = c->prev) total += c->cap;
  return total;
}
