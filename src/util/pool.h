/*
 * pool.h -- a chunked bump allocator for bytes that live as long as some
 * owner (a window's copied key strings, a plan's names). Allocation is a
 * pointer bump; lm_pool_reset() keeps the largest chunk for reuse so a pool
 * that is filled and reset in a steady state stops calling malloc.
 */
#ifndef LM_POOL_H
#define LM_POOL_H

#include <stddef.h>
#include <stdint.h>

typedef struct lm_pool_chunk lm_pool_chunk;

typedef struct lm_pool {
  lm_pool_chunk* head;   /* current chunk; older chunks linked behind it */
  size_t used_bytes;     /* bytes handed out since the last reset */
} lm_pool;

void lm_pool_init(lm_pool* pool);
/* 8-byte aligned memory, NULL when out of memory. */
void* lm_pool_alloc(lm_pool* pool, size_t n);
/* Copy n bytes; returns the copy (NULL when out of memory; n == 0 gives a
 * valid non-NULL pointer). */
char* lm_pool_copy(lm_pool* pool, const void* p, size_t n);
void lm_pool_reset(lm_pool* pool);
void lm_pool_free(lm_pool* pool);

#endif /* LM_POOL_H */
