/*
 * ring.h -- the lock-free single-producer single-consumer ring of `void*`
 * (DESIGN §2, ring 0) and `lm_waiter`, the small park/notify helper for the
 * threads on either end of a ring that must block.
 *
 * DESIGN
 * Who runs it: exactly one producer thread calls push/push_n and exactly one
 * consumer thread calls pop/pop_n/peek; the two may be the same thread (the
 * inline driver `laminar_run_until_idle`). Which threads they are may change
 * over time only across a happens-before edge (a mutex, a thread join, a
 * release/acquire handoff) -- never two producers or two consumers at once.
 * lm_ring_size/lm_ring_capacity may be called from any thread.
 * What it waits on: nothing. Every call is wait-free: no locks, no syscalls, no
 * allocation after lm_ring_create. A full push or an empty pop returns false and
 * the caller chooses its wait strategy (spin, yield, lm_waiter, drop, reject).
 * What order it guarantees: FIFO. Items come out in the order they went in; an
 * item popped was fully written by the producer before the push returned
 * (release/acquire on the indices), so the consumer may read what it points to.
 *
 * lm_waiter: a mutex + condition variable with an atomic count of sleepers, so
 * that notify costs one fence and one load when nobody sleeps. See ring.c for
 * the lost-wakeup argument.
 */
#ifndef LM_CHAN_RING_H
#define LM_CHAN_RING_H

#include "util/util.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

/* ---- SPSC ring ---------------------------------------------------------------- */

/* A bounded single-producer single-consumer queue of `void*`. The ring never
 * owns, reads or frees the items; it moves pointers. Destroy with
 * lm_ring_destroy(). */
typedef struct lm_ring lm_ring;

/* Create a ring holding up to `capacity` items.
 * capacity: a power of two, >= 2 (so at most 2^31).
 * Ownership: *out is the caller's; free with lm_ring_destroy().
 * Returns: LAMINAR_OK; LAMINAR_ERR_CONFIG_VALUE for a capacity that is not a
 *   power of two or is < 2; LAMINAR_ERR_NOMEM. On failure *out is NULL.
 * Thread-safety: any thread; the ring is published to its producer and consumer
 *   by whatever hands them the pointer (thread creation, a mutex, a release). */
laminar_code lm_ring_create(uint32_t capacity, lm_ring** out);

/* Free the ring. Items still queued are not touched: drain them first if they
 * own anything. NULL is a no-op.
 * Thread-safety: once, when neither end can touch the ring any more. */
void lm_ring_destroy(lm_ring* r);

/* Append `item` (any value, NULL included). Returns false, and leaves the ring
 * unchanged, when it is full.
 * Thread-safety: the producer thread only. */
bool lm_ring_push(lm_ring* r, void* item);

/* Remove the oldest item into *out. Returns false, leaving *out unchanged, when
 * the ring is empty.
 * Thread-safety: the consumer thread only. */
bool lm_ring_pop(lm_ring* r, void** out);

/* Like lm_ring_pop but leaves the item queued: the next pop returns the same
 * item. Returns false, leaving *out unchanged, when the ring is empty.
 * Thread-safety: the consumer thread only. */
bool lm_ring_peek(lm_ring* r, void** out);

/* Number of queued items, in [0, capacity]. Exact when called from the producer
 * or consumer with the other end idle; otherwise an approximation (both ends may
 * move during the call) that is stale as soon as it returns. The consumer may
 * rely on "size > 0 means a pop will succeed", the producer on "size < capacity
 * means a push will succeed".
 * Thread-safety: any thread. */
uint32_t lm_ring_size(const lm_ring* r);

/* The capacity given to lm_ring_create. Thread-safety: any thread. */
uint32_t lm_ring_capacity(const lm_ring* r);

/* Append up to `n` items from items[0..n) in order; returns how many were
 * appended (a prefix of `items`; 0 when full). One release store publishes them
 * all, so batches amortize the index traffic.
 * Thread-safety: the producer thread only. */
uint32_t lm_ring_push_n(lm_ring* r, void* const* items, uint32_t n);

/* Remove up to `max` of the oldest items into out[0..max) in FIFO order;
 * returns how many were removed (0 when empty).
 * Thread-safety: the consumer thread only. */
uint32_t lm_ring_pop_n(lm_ring* r, void** out, uint32_t max);

/* Test hook: move both indices of an EMPTY ring to `index`, so tests can cross
 * the 2^32 wrap of the free-running counters without 2^32 operations. The ring
 * must be empty and neither end may be using it concurrently.
 * Thread-safety: the only thread touching `r`. */
void lm_ring_test_rebase(lm_ring* r, uint32_t index);

/* ---- waiter --------------------------------------------------------------------- */

/* A place for one or more threads to block until a condition holds, and for
 * other threads to wake them. Embedded by value; the fields are private to
 * ring.c. Initialize with lm_waiter_init, free with lm_waiter_destroy. */
typedef struct lm_waiter {
  pthread_mutex_t mu; /* guards the check-then-park step of lm_waiter_wait */
  pthread_cond_t cv;  /* CLOCK_MONOTONIC; waiters park here */
  /* Threads inside the parking phase of lm_waiter_wait.
   * writer: waiters (RMW under mu); reader: notifiers, after a seq_cst fence. */
  atomic_uint sleepers;
} lm_waiter;

/* Prepare `w` for use.
 * Returns: LAMINAR_OK; LAMINAR_ERR_INTERNAL if pthread refuses to create the
 *   mutex or condition variable (then nothing needs destroying).
 * Thread-safety: before `w` is shared. */
laminar_code lm_waiter_init(lm_waiter* w);

/* Free what lm_waiter_init set up. No thread may be waiting.
 * Thread-safety: when no other thread can touch `w`. */
void lm_waiter_destroy(lm_waiter* w);

/* Block until ready(arg) returns true or `timeout_ns` nanoseconds pass
 * (-1: no limit; 0: check once). It first polls ready() with sched_yield() about
 * 100 times, then parks on the condition variable, re-checking ready() under
 * the mutex so a notify cannot be lost between the check and the sleep.
 * ready: must be cheap, must not block, must not call lm_waiter_* on `w`; it
 *   may be called from this thread with `w`'s mutex held. For the no-lost-wakeup
 *   promise it must read the condition with atomic loads (acquire or stronger)
 *   of state the notifier changed before calling lm_waiter_notify.
 * Returns: true when ready() returned true, false on timeout.
 * Thread-safety: any thread; several threads may wait on one waiter. */
bool lm_waiter_wait(lm_waiter* w, int64_t timeout_ns, bool (*ready)(void*), void* arg);

/* Wake every thread waiting on `w` so it re-checks its condition. Call after
 * making the condition true (after the push, the flag store). When nobody is
 * parked this costs one seq_cst fence and one atomic load: no lock, no syscall.
 * Thread-safety: any thread. */
void lm_waiter_notify(lm_waiter* w);

#endif /* LM_CHAN_RING_H */
