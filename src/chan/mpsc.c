/*
 * mpsc.c -- the source queue: bounded, single- then multi-producer, single
 * consumer with optional stealing producers (contracts and DESIGN in mpsc.h).
 *
 * Slots. Slot i holds {seq, item}. For position p (slot p & mask):
 *   seq == p          the slot is free for the producer of position p;
 *   seq == p + 1      it holds the item of position p, ready for the consumer;
 *   seq == p + cap    freed by the consumer of p, free for position p + cap.
 * Initially seq[i] = i. A producer claims position p (a plain store of `tail`
 * in single mode, a CAS in multi mode), writes the item, then store-releases
 * seq = p + 1; the consumer load-acquires seq == p + 1 before reading the
 * item, and store-releases seq = p + cap after reading it, which the next
 * lap's producer load-acquires before overwriting. Those two pairs order every
 * item access; `tail` and `head` only hand out positions.
 *
 * Single -> multi. In single mode the one producer owns `tail` (load relaxed,
 * store release, no RMW). lm_mpsc_set_multi() sets `multi`; the caller is that
 * producer and publishes the queue to the new producers afterwards, so every
 * later push of every producer sees multi == true and claims with a CAS, while
 * the items already queued stay where they are: the upgrade moves nothing.
 *
 * Stealing. A drop_oldest producer removes the head item like a consumer. The
 * consumer and stealers then claim `head` with a CAS, so two of them never
 * take the same position. A slot claimed by a stealer but not yet freed looks
 * "full" to producers and "empty" to the consumer for that moment: both retry.
 */
#include "chan/mpsc.h"

#include "util/util.h"

#include <stdalign.h>
#include <stdatomic.h>
#include <stddef.h>

typedef struct cell {
  /* writer: the producer of the position (release) and its consumer (release);
   * reader: both, acquire. See the file comment. */
  _Atomic uint64_t seq;
  void* item; /* written before seq = p + 1, read after it (acquire) */
} cell;

struct lm_mpsc {
  /* Next position to claim. writer: producers (single: the producer's store;
   * multi: CAS); reader: producers, lm_mpsc_size. */
  alignas(LM_CACHELINE) _Atomic uint64_t tail;
  /* Next position to read. writer: the consumer (store) or, with stealing, the
   * consumer and stealers (CAS); reader: them and lm_mpsc_size. */
  alignas(LM_CACHELINE) _Atomic uint64_t head;
  /* Read-only after create, except `multi` (set once by the single producer). */
  alignas(LM_CACHELINE) uint64_t mask;
  uint32_t capacity;
  bool stealing;
  /* writer: the single producer, once; reader: producers. Relaxed: the handoff
   * of the queue to a new producer is the happens-before edge (mpsc.h). */
  atomic_bool multi;
  alignas(LM_CACHELINE) cell cells[];
};

laminar_code lm_mpsc_create(uint32_t capacity, bool stealing, lm_mpsc** out) {
  *out = NULL;
  if (capacity < 2 || capacity > (1u << 24) || (capacity & (capacity - 1)) != 0) {
    return LAMINAR_ERR_CONFIG_VALUE;
  }
  lm_mpsc* q = lm_alloc_aligned(sizeof *q + (size_t)capacity * sizeof(cell));
  if (q == NULL) return LAMINAR_ERR_NOMEM;
  atomic_init(&q->tail, 0);
  atomic_init(&q->head, 0);
  q->mask = capacity - 1;
  q->capacity = capacity;
  q->stealing = stealing;
  atomic_init(&q->multi, false);
  for (uint32_t i = 0; i < capacity; i++) {
    atomic_init(&q->cells[i].seq, i);
    q->cells[i].item = NULL;
  }
  *out = q;
  return LAMINAR_OK;
}

void lm_mpsc_destroy(lm_mpsc* q) { lm_free(q); }

void lm_mpsc_set_multi(lm_mpsc* q) {
  atomic_store_explicit(&q->multi, true, memory_order_relaxed);
}

bool lm_mpsc_is_multi(const lm_mpsc* q) {
  return atomic_load_explicit(&q->multi, memory_order_relaxed);
}

uint32_t lm_mpsc_capacity(const lm_mpsc* q) { return q->capacity; }

uint32_t lm_mpsc_size(const lm_mpsc* q) {
  // head first: tail only grows, so a later tail load is >= the tail of the
  // moment head was read, and tail - head cannot go negative except when
  // stealers and the consumer race ahead; clamp both ways.
  uint64_t h = atomic_load_explicit(&q->head, memory_order_acquire);
  uint64_t t = atomic_load_explicit(&q->tail, memory_order_acquire);
  if (t <= h) return 0;
  uint64_t n = t - h;
  return n > q->capacity ? q->capacity : (uint32_t)n;
}

/* Claim `n` consecutive free positions starting at the tail; false if they are
 * not all free. *out_pos gets the first. */
static bool claim(lm_mpsc* q, uint32_t n, uint64_t* out_pos) {
  bool multi = atomic_load_explicit(&q->multi, memory_order_relaxed);
  // Relaxed: a producer's view of tail is validated by the slot sequence
  // numbers (acquire) below and, in multi mode, by the CAS.
  uint64_t pos = atomic_load_explicit(&q->tail, memory_order_relaxed);
  for (;;) {
    uint32_t free_run = 0;
    bool stale = false;
    for (; free_run < n; free_run++) {
      uint64_t p = pos + free_run;
      // Acquire pairs with the consumer's release store of seq = p (freed):
      // its read of the old item happens-before our overwrite.
      uint64_t seq =
          atomic_load_explicit(&q->cells[p & q->mask].seq, memory_order_acquire);
      if (seq == p) continue;
      // seq > p: another producer already filled p, our tail is stale (multi).
      stale = (int64_t)(seq - p) > 0;
      break;
    }
    if (free_run == n) {
      if (!multi) {
        // Single producer: tail is ours. Release: lm_mpsc_size readers.
        atomic_store_explicit(&q->tail, pos + n, memory_order_release);
        *out_pos = pos;
        return true;
      }
      // The CAS makes the run ours; on failure pos is reloaded.
      if (atomic_compare_exchange_weak_explicit(
              &q->tail, &pos, pos + n, memory_order_relaxed, memory_order_relaxed)) {
        *out_pos = pos;
        return true;
      }
      continue;
    }
    if (!stale || !multi) return false;  // full (or a stealer's slot in flight)
    pos = atomic_load_explicit(&q->tail, memory_order_relaxed);
  }
}

static void publish(lm_mpsc* q, uint64_t pos, void* const* items, uint32_t n) {
  for (uint32_t i = 0; i < n; i++) {
    cell* c = &q->cells[(pos + i) & q->mask];
    c->item = items[i];
    // Release pairs with the consumer's acquire load of seq: the item (and what
    // it points to) is visible once seq says "full".
    atomic_store_explicit(&c->seq, pos + i + 1, memory_order_release);
  }
}

bool lm_mpsc_push(lm_mpsc* q, void* item) {
  uint64_t pos;
  if (!claim(q, 1, &pos)) return false;
  publish(q, pos, &item, 1);
  return true;
}

bool lm_mpsc_push_all(lm_mpsc* q, void* const* items, uint32_t n) {
  if (n == 0) return true;
  if (n > q->capacity) return false;
  uint64_t pos;
  if (!claim(q, n, &pos)) return false;
  publish(q, pos, items, n);
  return true;
}

/* Take the head item: the consumer (claim_with_cas false: plain store, it is
 * the only one moving head) or, on a stealing queue, anyone (CAS). */
static bool take(lm_mpsc* q, void** out, bool claim_with_cas) {
  uint64_t pos = atomic_load_explicit(&q->head, memory_order_relaxed);
  for (;;) {
    cell* c = &q->cells[pos & q->mask];
    // Acquire pairs with the producer's release store of seq = pos + 1.
    uint64_t seq = atomic_load_explicit(&c->seq, memory_order_acquire);
    int64_t diff = (int64_t)(seq - (pos + 1));
    if (diff < 0) return false;  // not yet published: empty
    if (diff > 0) {              // someone else took pos (stealing only)
      pos = atomic_load_explicit(&q->head, memory_order_relaxed);
      continue;
    }
    if (!claim_with_cas) {
      // Release: lm_mpsc_size readers; the slot itself is ordered by seq.
      atomic_store_explicit(&q->head, pos + 1, memory_order_release);
    } else if (!atomic_compare_exchange_weak_explicit(
                   &q->head, &pos, pos + 1, memory_order_relaxed, memory_order_relaxed)) {
      continue;
    }
    *out = c->item;
    // Release pairs with the next lap's producer acquire in claim(): our read of
    // the item happens-before it is overwritten.
    atomic_store_explicit(&c->seq, pos + q->mask + 1, memory_order_release);
    return true;
  }
}

bool lm_mpsc_pop(lm_mpsc* q, void** out) { return take(q, out, q->stealing); }

bool lm_mpsc_steal(lm_mpsc* q, void** out) {
  LM_ASSERT(q->stealing);
  return take(q, out, true);
}
