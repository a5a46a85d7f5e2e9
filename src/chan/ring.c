/*
 * ring.c -- the lock-free SPSC ring of `void*` and the lm_waiter park/notify
 * helper (interface and contracts in ring.h).
 *
 * DESIGN
 * Who runs it: one producer thread (push, push_n) and one consumer thread (pop,
 * pop_n, peek); size/capacity from anyone. What it waits on: nothing -- every
 * ring call is wait-free and a full/empty ring returns false at once; threads
 * that must block use lm_waiter (below) or spin, as the caller decides. What
 * order it guarantees: FIFO, and everything the producer wrote before a push
 * is visible to the consumer after the matching pop.
 *
 * Indices. `tail` (next slot to write) and `head` (next slot to read) are
 * free-running uint32_t counters; slot = index & mask. Since capacity <= 2^31
 * the fill level `tail - head` (mod 2^32) is always in [0, capacity], so
 * "empty" is tail == head and "full" is tail - head == capacity with no slot
 * wasted.
 *
 * Cache lines. The producer's line holds `tail` plus its private copy of the
 * consumer's `head` (`head_cache`); the consumer's line holds `head` plus its
 * `tail_cache`. Each side reads the other's line only when its cached copy says
 * full/empty, so in steady state each index line moves between cores about
 * once per lap instead of once per item (the classic SPSC false-sharing cost).
 * Each side also keeps its own copy of the mask so the hot path touches only
 * its own line and the slots.
 *
 * Memory order. Producer: write slot, then store-release `tail`. Consumer:
 * load-acquire `tail`, then read slot -- so the slot (and what the item points
 * to) is visible. Symmetrically the consumer reads a slot, then store-releases
 * `head`; the producer load-acquires `head` before overwriting that slot, so a
 * slot is never overwritten while the consumer may still be reading it. Each
 * side loads its own index relaxed (only it writes it).
 */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L  // clock_gettime, pthread_condattr_setclock
#endif

#include "chan/ring.h"

#include <assert.h>
#include <errno.h>
#include <sched.h>
#include <stdalign.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

/* ---- SPSC ring ---------------------------------------------------------------- */

struct lm_ring {
  /* Producer line. */
  /* writer: producer, release (pairs with the consumer's acquire loads of tail in
   * pop/pop_n/peek and lm_ring_size); reader: consumer, acquire on tail. */
  alignas(LM_CACHELINE) _Atomic uint32_t tail;
  uint32_t head_cache;  // producer-private: last `head` seen; head_cache <= head
  uint32_t prod_mask;   // producer-private copy of capacity - 1

  /* Consumer line. */
  /* writer: consumer, release (pairs with the producer's acquire loads of head in
   * push/push_n and lm_ring_size); reader: producer, acquire on head. */
  alignas(LM_CACHELINE) _Atomic uint32_t head;
  uint32_t tail_cache;  // consumer-private: last `tail` seen; tail_cache <= tail
  uint32_t cons_mask;   // consumer-private copy of capacity - 1

  /* Read-only after create. */
  alignas(LM_CACHELINE) uint32_t capacity;

  /* The slots, on lines of their own. Slot i is written by the producer only
   * while (i - head) < capacity and read by the consumer only while
   * (i - head) < (tail - head); the index release/acquire pairs order them. */
  alignas(LM_CACHELINE) void* slots[];
};

static_assert(offsetof(struct lm_ring, tail) % LM_CACHELINE == 0,
              "tail starts a cache line");
static_assert(offsetof(struct lm_ring, head) - offsetof(struct lm_ring, tail) >=
                  LM_CACHELINE,
              "producer and consumer indices on separate cache lines");
static_assert(offsetof(struct lm_ring, head) % LM_CACHELINE == 0,
              "head starts a cache line");
static_assert(offsetof(struct lm_ring, capacity) - offsetof(struct lm_ring, head) >=
                  LM_CACHELINE,
              "consumer line is not shared with the read-only fields");
static_assert(offsetof(struct lm_ring, slots) % LM_CACHELINE == 0 &&
                  offsetof(struct lm_ring, slots) - offsetof(struct lm_ring, capacity) >=
                      LM_CACHELINE,
              "slots start on their own cache line");

laminar_code lm_ring_create(uint32_t capacity, lm_ring** out) {
  *out = NULL;
  // A power of two >= 2; every such uint32_t is <= 2^31, which keeps tail - head
  // unambiguous modulo 2^32.
  if (capacity < 2 || (capacity & (capacity - 1)) != 0) return LAMINAR_ERR_CONFIG_VALUE;
#if SIZE_MAX <= UINT32_MAX  // only a 32-bit size_t can overflow the byte count
  if ((size_t)capacity > (SIZE_MAX - sizeof(struct lm_ring)) / sizeof(void*)) {
    return LAMINAR_ERR_NOMEM;
  }
#endif
  size_t bytes = sizeof(struct lm_ring) + (size_t)capacity * sizeof(void*);
  lm_ring* r = lm_alloc_aligned(bytes);
  if (r == NULL) return LAMINAR_ERR_NOMEM;
  // Not yet shared: plain initialization; publication is the caller's handoff.
  atomic_init(&r->tail, 0);
  atomic_init(&r->head, 0);
  r->head_cache = 0;
  r->tail_cache = 0;
  r->prod_mask = capacity - 1;
  r->cons_mask = capacity - 1;
  r->capacity = capacity;
  *out = r;
  return LAMINAR_OK;
}

void lm_ring_destroy(lm_ring* r) { lm_free(r); }

uint32_t lm_ring_capacity(const lm_ring* r) { return r->capacity; }

uint32_t lm_ring_size(const lm_ring* r) {
  // Load head first. Acquire on head (pairs with the consumer's release store)
  // makes everything the consumer saw before storing it -- including a tail at
  // least this large -- visible, so the later tail load cannot be older and
  // tail - head never goes "negative". Acquire on tail pairs with the producer's
  // release store. tail may have run ahead of the head we read by more than the
  // capacity if both ends moved in between: clamp.
  uint32_t h = atomic_load_explicit(&r->head, memory_order_acquire);
  uint32_t t = atomic_load_explicit(&r->tail, memory_order_acquire);
  uint32_t n = t - h;
  return n > r->capacity ? r->capacity : n;
}

bool lm_ring_push(lm_ring* r, void* item) {
  // Own index: only this thread writes tail, relaxed is exact.
  uint32_t t = atomic_load_explicit(&r->tail, memory_order_relaxed);
  uint32_t cap = r->prod_mask + 1;
  if (LM_UNLIKELY(t - r->head_cache == cap)) {
    // Looks full: refresh. Acquire pairs with the consumer's release store of head
    // in pop/pop_n, so its reads of the slots we are about to reuse are done.
    r->head_cache = atomic_load_explicit(&r->head, memory_order_acquire);
    if (t - r->head_cache == cap) return false;
  }
  r->slots[t & r->prod_mask] = item;
  // Release pairs with the consumer's acquire load of tail: the slot write (and
  // whatever `item` points to) happens-before the consumer reads it.
  atomic_store_explicit(&r->tail, t + 1, memory_order_release);
  return true;
}

uint32_t lm_ring_push_n(lm_ring* r, void* const* items, uint32_t n) {
  // Own index, relaxed (see lm_ring_push).
  uint32_t t = atomic_load_explicit(&r->tail, memory_order_relaxed);
  uint32_t cap = r->prod_mask + 1;
  uint32_t room = cap - (t - r->head_cache);
  if (room < n) {
    // Acquire pairs with the consumer's release store of head (see lm_ring_push).
    r->head_cache = atomic_load_explicit(&r->head, memory_order_acquire);
    room = cap - (t - r->head_cache);
  }
  if (n > room) n = room;
  if (n == 0) return 0;
  uint32_t at = t & r->prod_mask;
  uint32_t first = cap - at < n ? cap - at : n;  // up to the end of the array
  memcpy(&r->slots[at], items, (size_t)first * sizeof(void*));
  memcpy(&r->slots[0], items + first, (size_t)(n - first) * sizeof(void*));
  // Release pairs with the consumer's acquire load of tail: one store publishes
  // all n slots.
  atomic_store_explicit(&r->tail, t + n, memory_order_release);
  return n;
}

/* Consumer side: true when at least one item is queued at head `h`, refreshing
 * tail_cache from the producer's line only when the cached copy says empty. */
static inline bool consumer_has_item(lm_ring* r, uint32_t h) {
  if (LM_LIKELY(r->tail_cache != h)) return true;
  // Acquire pairs with the producer's release store of tail in push/push_n: the
  // slots below the loaded tail are fully written.
  r->tail_cache = atomic_load_explicit(&r->tail, memory_order_acquire);
  return r->tail_cache != h;
}

bool lm_ring_pop(lm_ring* r, void** out) {
  // Own index: only this thread writes head, relaxed is exact.
  uint32_t h = atomic_load_explicit(&r->head, memory_order_relaxed);
  if (!consumer_has_item(r, h)) return false;
  *out = r->slots[h & r->cons_mask];
  // Release pairs with the producer's acquire load of head: our read of the slot
  // happens-before the producer overwrites it.
  atomic_store_explicit(&r->head, h + 1, memory_order_release);
  return true;
}

bool lm_ring_peek(lm_ring* r, void** out) {
  // Own index, relaxed (see lm_ring_pop). No store: the slot stays ours.
  uint32_t h = atomic_load_explicit(&r->head, memory_order_relaxed);
  if (!consumer_has_item(r, h)) return false;
  *out = r->slots[h & r->cons_mask];
  return true;
}

uint32_t lm_ring_pop_n(lm_ring* r, void** out, uint32_t max) {
  // Own index, relaxed (see lm_ring_pop).
  uint32_t h = atomic_load_explicit(&r->head, memory_order_relaxed);
  uint32_t avail = r->tail_cache - h;
  if (avail < max) {
    // Acquire pairs with the producer's release store of tail (see
    // consumer_has_item).
    r->tail_cache = atomic_load_explicit(&r->tail, memory_order_acquire);
    avail = r->tail_cache - h;
  }
  uint32_t n = max < avail ? max : avail;
  if (n == 0) return 0;
  uint32_t cap = r->cons_mask + 1;
  uint32_t at = h & r->cons_mask;
  uint32_t first = cap - at < n ? cap - at : n;
  memcpy(out, &r->slots[at], (size_t)first * sizeof(void*));
  memcpy(out + first, &r->slots[0], (size_t)(n - first) * sizeof(void*));
  // Release pairs with the producer's acquire load of head: our reads of these n
  // slots happen-before the producer reuses them.
  atomic_store_explicit(&r->head, h + n, memory_order_release);
  return n;
}

void lm_ring_test_rebase(lm_ring* r, uint32_t index) {
  // Single-threaded by contract: relaxed stores, caches reset to match.
  LM_ASSERT(lm_ring_size(r) == 0);
  atomic_store_explicit(&r->tail, index, memory_order_relaxed);
  atomic_store_explicit(&r->head, index, memory_order_relaxed);
  r->head_cache = index;
  r->tail_cache = index;
}

/* ---- waiter --------------------------------------------------------------------- */

/*
 * The lost-wakeup argument.
 *
 * A waiter W parks; a notifier N first makes the condition true (a ring push, a
 * flag store: any atomic store, release is enough) and then calls notify. The
 * danger is the store-buffer race: W checks ready() (false), N stores and checks
 * `sleepers` (0, no wake), W sleeps forever. Two seq_cst fences exclude it:
 *
 *   W: lock mu; sleepers += 1; FENCE_W; ready()?      ... cond_wait (unlocks mu)
 *   N: store condition;        FENCE_N; sleepers > 0? -> lock mu; broadcast
 *
 * The fences are totally ordered in S (C17 7.17.3, the seq_cst fence rules).
 * If FENCE_W comes first, N's load of `sleepers` after FENCE_N sees W's
 * increment (or a later value, which still counts W: W only decrements on its
 * way out), so N takes the broadcast path. If FENCE_N comes first, W's ready()
 * after FENCE_W sees N's store and W does not sleep. Either way no wakeup is
 * lost.
 *
 * The broadcast path locks `mu`. W increments and checks ready() with `mu` held
 * and holds it until cond_wait releases it atomically, so N's lock succeeds only
 * when W is parked (the broadcast wakes it) or has left. After a wakeup W
 * re-checks ready() under `mu`, acquired after N's unlock, so it sees N's store.
 *
 * When nobody sleeps, notify is FENCE_N plus one relaxed load (on x86 one full
 * barrier and one mov): no lock, no syscall, no write to a shared line.
 */

enum { WAITER_SPINS = 100 };  // sched_yield rounds before parking

static int64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

laminar_code lm_waiter_init(lm_waiter* w) {
  pthread_condattr_t attr;
  if (pthread_condattr_init(&attr) != 0) return LAMINAR_ERR_INTERNAL;
  laminar_code rc = LAMINAR_ERR_INTERNAL;
  // CLOCK_MONOTONIC: timeouts must not jump with wall-clock changes.
  if (pthread_condattr_setclock(&attr, CLOCK_MONOTONIC) != 0) goto done;
  if (pthread_mutex_init(&w->mu, NULL) != 0) goto done;
  if (pthread_cond_init(&w->cv, &attr) != 0) {
    pthread_mutex_destroy(&w->mu);
    goto done;
  }
  atomic_init(&w->sleepers, 0);
  rc = LAMINAR_OK;
done:
  pthread_condattr_destroy(&attr);
  return rc;
}

void lm_waiter_destroy(lm_waiter* w) {
  pthread_cond_destroy(&w->cv);
  pthread_mutex_destroy(&w->mu);
}

bool lm_waiter_wait(lm_waiter* w, int64_t timeout_ns, bool (*ready)(void*), void* arg) {
  if (ready(arg)) return true;
  if (timeout_ns == 0) return false;
  bool forever = timeout_ns < 0;
  int64_t deadline = 0;
  if (!forever) {
    int64_t start = now_ns();
    // A deadline past INT64_MAX ns (~292 years) is no deadline; avoids overflow.
    if (timeout_ns > INT64_MAX - start) {
      forever = true;
    } else {
      deadline = start + timeout_ns;
    }
  }

  // Phase 1: poll. A producer a few microseconds behind is caught here without
  // the two futex syscalls of a park/wake.
  for (int i = 0; i < WAITER_SPINS; i++) {
    sched_yield();
    if (ready(arg)) return true;
    if (!forever && now_ns() >= deadline) return false;
  }

  // Phase 2: park (see the lost-wakeup argument above).
  struct timespec ts = {0, 0};
  if (!forever) {
    ts.tv_sec = (time_t)(deadline / 1000000000);
    ts.tv_nsec = (long)(deadline % 1000000000);
  }
  pthread_mutex_lock(&w->mu);
  // Relaxed RMW: its ordering against notify comes from the fence below; other
  // waiters' RMWs on it are serialized by mu.
  atomic_fetch_add_explicit(&w->sleepers, 1, memory_order_relaxed);
  // FENCE_W, pairs with FENCE_N in lm_waiter_notify.
  atomic_thread_fence(memory_order_seq_cst);
  bool ok;
  for (;;) {
    ok = ready(arg);
    if (ok) break;
    int rc = forever ? pthread_cond_wait(&w->cv, &w->mu)
                     : pthread_cond_timedwait(&w->cv, &w->mu, &ts);
    if (rc == ETIMEDOUT) {
      ok = ready(arg);  // a notify that raced with the timeout still counts
      break;
    }
  }
  // Relaxed: only notifiers read it, and a stale nonzero just costs them a lock.
  atomic_fetch_sub_explicit(&w->sleepers, 1, memory_order_relaxed);
  pthread_mutex_unlock(&w->mu);
  return ok;
}

void lm_waiter_notify(lm_waiter* w) {
  // FENCE_N, pairs with FENCE_W in lm_waiter_wait: orders the caller's earlier
  // store of the condition before this load of sleepers.
  atomic_thread_fence(memory_order_seq_cst);
  // Relaxed: the fence pair gives the ordering; see the argument above.
  if (atomic_load_explicit(&w->sleepers, memory_order_relaxed) == 0) return;
  pthread_mutex_lock(&w->mu);
  pthread_cond_broadcast(&w->cv);
  pthread_mutex_unlock(&w->mu);
}
