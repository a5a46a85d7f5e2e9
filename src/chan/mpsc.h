/*
 * mpsc.h -- the bounded queue of `void*` behind every source (DESIGN §3 step 1,
 * issue 5): single-producer until lm_mpsc_set_multi(), then multi-producer,
 * with the queued items kept across the switch; single-consumer, or with
 * "stealing" producers when the source drops its oldest message on overflow.
 *
 * DESIGN
 * Who runs it: producers call push/push_n; the consumer (the reactor, or the
 * caller of laminar_run_until_idle) calls pop/pop_n. In single-producer mode
 * exactly one thread pushes at a time; lm_mpsc_set_multi() is called by that
 * producer (clone of the source handle), and every later producer gets the
 * queue through a happens-before edge (thread creation, a mutex): from then on
 * any number of threads may push at once. With `stealing` set at creation a
 * producer may also remove the oldest item (lm_mpsc_steal) while the consumer
 * pops: the consumer side then claims items with a CAS instead of a store.
 * What it waits on: nothing. Every call returns at once; a full push or an
 * empty pop returns false and the caller applies its wait strategy
 * (chan/wait.h) or back-pressure policy.
 * What order it guarantees: FIFO in the order positions were claimed; per
 * producer that is its push order, so each producer's items come out in the
 * order it pushed them (items of different producers interleave). push_n
 * claims one contiguous run: a batch of messages is never interleaved with
 * another producer's.
 *
 * The layout is Dmitry Vyukov's bounded queue: each slot carries a sequence
 * number saying whose turn it is (free for position p: seq == p; holding the
 * item of position p: seq == p + 1). Positions are 64-bit and never wrap.
 */
#ifndef LM_CHAN_MPSC_H
#define LM_CHAN_MPSC_H

#include "laminar.h"

#include <stdbool.h>
#include <stdint.h>

typedef struct lm_mpsc lm_mpsc;

/* Create a queue of up to `capacity` items (a power of two, >= 2, <= 2^24).
 * stealing: producers may call lm_mpsc_steal (drop_oldest sources); the pop
 *   path then costs one CAS per item instead of a plain store.
 * Ownership: *out is the caller's; free with lm_mpsc_destroy().
 * Returns: LAMINAR_OK; LAMINAR_ERR_CONFIG_VALUE for a bad capacity;
 *   LAMINAR_ERR_NOMEM. On failure *out is NULL.
 * Thread-safety: any thread; publish the queue to others by a happens-before edge. */
laminar_code lm_mpsc_create(uint32_t capacity, bool stealing, lm_mpsc** out);

/* Free the queue; queued items are not touched (drain them first). NULL is a
 * no-op. Thread-safety: once, when no thread can reach the queue. */
void lm_mpsc_destroy(lm_mpsc* q);

/* Switch to multi-producer mode for good. Idempotent.
 * Thread-safety: the one current producer (no push may run concurrently);
 *   hand the queue to new producers only after this returns. */
void lm_mpsc_set_multi(lm_mpsc* q);

/* True once lm_mpsc_set_multi() was called. Thread-safety: any producer. */
bool lm_mpsc_is_multi(const lm_mpsc* q);

/* Append `item`; false (queue unchanged) when full.
 * Thread-safety: the producer (single mode) or any producer (multi mode). */
bool lm_mpsc_push(lm_mpsc* q, void* item);

/* Append items[0..n) as one contiguous run, all or nothing: true when all n
 * were appended, false (nothing appended) when fewer than n slots are free.
 * n must be <= the capacity.
 * Thread-safety: as lm_mpsc_push. */
bool lm_mpsc_push_all(lm_mpsc* q, void* const* items, uint32_t n);

/* Remove the oldest item into *out; false when empty (nothing published at
 * the head yet: a producer may have claimed the slot and not yet written it).
 * Thread-safety: the consumer only. */
bool lm_mpsc_pop(lm_mpsc* q, void** out);

/* Remove the oldest item on a producer's behalf (drop_oldest back-pressure).
 * Only for queues created with stealing = true; false when empty.
 * Thread-safety: any producer, concurrently with the consumer and other producers. */
bool lm_mpsc_steal(lm_mpsc* q, void** out);

/* Items queued now, in [0, capacity]: a snapshot, exact when nobody moves.
 * Thread-safety: any thread. */
uint32_t lm_mpsc_size(const lm_mpsc* q);

/* The capacity given at creation. Thread-safety: any thread. */
uint32_t lm_mpsc_capacity(const lm_mpsc* q);

#endif /* LM_CHAN_MPSC_H */
