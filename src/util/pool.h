/*
 * pool.h -- the one bump allocator of the core. Allocation is a pointer bump
 * in a chain of malloc'd chunks; everything is freed at once. Users: the
 * expression evaluation context (reset per batch), the SQL parser's arena,
 * plans (expression trees, names), and windows (copied key strings).
 *
 * lm_pool_reset() keeps memory for reuse: when the pool spilled over several
 * chunks since the last reset, they are replaced by one chunk big enough for
 * all of it, so a pool filled to a steady size and reset stops calling malloc.
 */
#ifndef LM_POOL_H
#define LM_POOL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct lm_pool_chunk lm_pool_chunk;

typedef struct lm_pool {
  lm_pool_chunk* head; /* current chunk (the largest); older chunks behind it */
  size_t used_bytes;   /* bytes handed out since the last reset, all chunks */
  size_t min_chunk;    /* first chunk size (0: the default, 4 KiB) */
  uint64_t mallocs;    /* chunks ever obtained from malloc (tests, metrics) */
} lm_pool;

void lm_pool_init(lm_pool* pool);
/* Like lm_pool_init, with the size of the first chunk. */
void lm_pool_init_sized(lm_pool* pool, size_t min_chunk);
/* 16-byte aligned (max_align_t) memory, NULL when out of memory; n == 0 gives a
 * valid unique pointer. */
void* lm_pool_alloc(lm_pool* pool, size_t n);
/* The same, zero-filled. */
void* lm_pool_calloc(lm_pool* pool, size_t n);
/* Room for allocations of n bytes in all (each counted rounded up to the
 * alignment) that then cannot fail: false when out of memory (the pool is
 * unchanged but for an empty chunk it may keep). */
bool lm_pool_reserve(lm_pool* pool, size_t n);
/* Copy n bytes; returns the copy (NULL when out of memory). */
char* lm_pool_copy(lm_pool* pool, const void* p, size_t n);
/* Forget every allocation, keeping (coalesced) memory for reuse. */
void lm_pool_reset(lm_pool* pool);
void lm_pool_free(lm_pool* pool);
/* Bytes of chunk memory currently held. */
size_t lm_pool_reserved(const lm_pool* pool);

#endif /* LM_POOL_H */
