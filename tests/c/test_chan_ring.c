/*
 * test_chan_ring.c -- white-box tests of the SPSC ring and lm_waiter
 * (src/chan/ring.h): single-threaded semantics, two-thread stress (run under
 * ASan+UBSan and TSan), and the waiter's wake and timeout paths.
 *
 * No timings are asserted except that a timed-out wait lasted at least its
 * timeout; cross-thread tests hand off with atomics, never sleeps.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE  // clock_gettime, sched_yield under -std=c17
#endif

#include "chan/ring.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <time.h>

#include "lm_test.h"

#define ITEM(i) ((void*)(uintptr_t)(i))
#define VALUE(p) ((uintptr_t)(p))

/* ---- single-threaded semantics ---------------------------------------------- */

static int test_create_validation(void) {
  static const uint32_t bad[] = {0, 1, 3, 5, 6, 12, 100, 1000, 0x80000001u, 0xFFFFFFFFu};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    lm_ring* r = (lm_ring*)&r;  // any non-NULL value: create must clear it
    CHECK_CODE(lm_ring_create(bad[i], &r), LAMINAR_ERR_CONFIG_VALUE,
               (laminar_error*)NULL);
    CHECK(r == NULL);
  }
  static const uint32_t good[] = {2, 4, 8, 64, 1024, 1u << 16};
  for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
    lm_ring* r = NULL;
    CHECK_CODE(lm_ring_create(good[i], &r), LAMINAR_OK, (laminar_error*)NULL);
    CHECK(r != NULL);
    EXPECT(lm_ring_capacity(r) == good[i]);
    EXPECT(lm_ring_size(r) == 0);
    lm_ring_destroy(r);
  }
  lm_ring_destroy(NULL);  // no-op
  return 0;
}

static int test_empty_full(void) {
  lm_ring* r;
  CHECK_CODE(lm_ring_create(4, &r), LAMINAR_OK, (laminar_error*)NULL);
  void* got = ITEM(999);
  EXPECT(!lm_ring_pop(r, &got));
  EXPECT(!lm_ring_peek(r, &got));
  EXPECT(VALUE(got) == 999);  // untouched on failure
  for (uintptr_t i = 1; i <= 4; i++) {
    CHECK(lm_ring_push(r, ITEM(i)));
    EXPECT(lm_ring_size(r) == i);
  }
  EXPECT(!lm_ring_push(r, ITEM(5)));  // full: refused, ring unchanged
  EXPECT(lm_ring_size(r) == 4);
  CHECK(lm_ring_pop(r, &got));
  EXPECT(VALUE(got) == 1);
  CHECK(lm_ring_push(r, ITEM(5)));  // one slot freed, one push fits
  EXPECT(!lm_ring_push(r, ITEM(6)));
  for (uintptr_t want = 2; want <= 5; want++) {
    CHECK(lm_ring_pop(r, &got));
    EXPECT(VALUE(got) == want);
  }
  EXPECT(!lm_ring_pop(r, &got));
  EXPECT(lm_ring_size(r) == 0);
  lm_ring_destroy(r);
  return 0;
}

static int test_null_item_and_peek(void) {
  lm_ring* r;
  CHECK_CODE(lm_ring_create(2, &r), LAMINAR_OK, (laminar_error*)NULL);
  CHECK(lm_ring_push(r, NULL));  // NULL is an item like any other
  CHECK(lm_ring_push(r, ITEM(7)));
  void* got = ITEM(1);
  CHECK(lm_ring_peek(r, &got));
  EXPECT(got == NULL);
  CHECK(lm_ring_peek(r, &got));  // peek does not consume
  EXPECT(got == NULL);
  EXPECT(lm_ring_size(r) == 2);
  CHECK(lm_ring_pop(r, &got));
  EXPECT(got == NULL);
  CHECK(lm_ring_peek(r, &got));
  EXPECT(VALUE(got) == 7);
  CHECK(lm_ring_pop(r, &got));
  EXPECT(VALUE(got) == 7);
  EXPECT(!lm_ring_peek(r, &got));
  lm_ring_destroy(r);
  return 0;
}

/* FIFO across many laps of a small ring, with a varying fill level. */
static int test_fifo_wraparound(void) {
  lm_ring* r;
  CHECK_CODE(lm_ring_create(8, &r), LAMINAR_OK, (laminar_error*)NULL);
  uintptr_t next_in = 0, next_out = 0;
  for (int round = 0; round < 5000; round++) {
    int pushes = 1 + round % 8, pops = 1 + (round * 5) % 8;
    for (int k = 0; k < pushes; k++) {
      if (!lm_ring_push(r, ITEM(next_in))) {
        CHECK(lm_ring_size(r) == 8);
        break;
      }
      next_in++;
    }
    for (int k = 0; k < pops; k++) {
      void* got;
      if (!lm_ring_pop(r, &got)) {
        CHECK(next_out == next_in);
        break;
      }
      CHECK(VALUE(got) == next_out);
      next_out++;
    }
    CHECK(lm_ring_size(r) == next_in - next_out);
  }
  CHECK(next_out > 8 * 100);  // many laps
  lm_ring_destroy(r);
  return 0;
}

/* The free-running uint32_t indices cross 2^32: full/empty and FIFO still hold,
 * for single and batch calls (batches split across the array's end). */
static int test_index_wrap_2_32(void) {
  lm_ring* r;
  CHECK_CODE(lm_ring_create(8, &r), LAMINAR_OK, (laminar_error*)NULL);
  lm_ring_test_rebase(r, UINT32_MAX - 2);
  for (uintptr_t i = 0; i < 8; i++) CHECK(lm_ring_push(r, ITEM(i)));
  EXPECT(!lm_ring_push(r, ITEM(8)));
  EXPECT(lm_ring_size(r) == 8);
  void* got;
  for (uintptr_t i = 0; i < 8; i++) {
    CHECK(lm_ring_pop(r, &got));
    CHECK(VALUE(got) == i);
  }
  EXPECT(!lm_ring_pop(r, &got));
  EXPECT(lm_ring_size(r) == 0);

  lm_ring_test_rebase(r, UINT32_MAX - 4);
  void* in[8];
  void* out[8];
  for (uintptr_t i = 0; i < 8; i++) in[i] = ITEM(100 + i);
  CHECK(lm_ring_push_n(r, in, 8) == 8);
  CHECK(lm_ring_push_n(r, in, 1) == 0);
  CHECK(lm_ring_pop_n(r, out, 8) == 8);
  for (uintptr_t i = 0; i < 8; i++) CHECK(VALUE(out[i]) == 100 + i);
  CHECK(lm_ring_pop_n(r, out, 8) == 0);
  lm_ring_destroy(r);
  return 0;
}

static int test_batch_partial(void) {
  lm_ring* r;
  CHECK_CODE(lm_ring_create(8, &r), LAMINAR_OK, (laminar_error*)NULL);
  void* in[16];
  void* out[16];
  for (uintptr_t i = 0; i < 16; i++) in[i] = ITEM(i + 1);

  CHECK(lm_ring_push_n(r, in, 0) == 0);
  CHECK(lm_ring_pop_n(r, out, 4) == 0);      // empty
  CHECK(lm_ring_push_n(r, in, 5) == 5);      // items 1..5
  CHECK(lm_ring_push_n(r, in + 5, 5) == 3);  // partial: 6..8 fit
  CHECK(lm_ring_push_n(r, in + 8, 4) == 0);  // full
  CHECK(lm_ring_size(r) == 8);
  CHECK(lm_ring_pop_n(r, out, 0) == 0);
  CHECK(lm_ring_pop_n(r, out, 3) == 3);  // 1..3
  for (uintptr_t i = 0; i < 3; i++) CHECK(VALUE(out[i]) == i + 1);
  // head is at slot 3; 6 items pushed now wrap past the end of the array.
  CHECK(lm_ring_push_n(r, in + 8, 6) == 3);  // 9..11
  CHECK(lm_ring_pop_n(r, out, 16) == 8);     // partial: 4..11
  for (uintptr_t i = 0; i < 8; i++) CHECK(VALUE(out[i]) == i + 4);
  CHECK(lm_ring_size(r) == 0);

  // Mixed single and batch calls keep one FIFO order.
  CHECK(lm_ring_push(r, ITEM(50)));
  CHECK(lm_ring_push_n(r, in, 2) == 2);
  CHECK(lm_ring_push(r, ITEM(51)));
  void* got;
  CHECK(lm_ring_pop(r, &got) && VALUE(got) == 50);
  CHECK(lm_ring_pop_n(r, out, 2) == 2 && VALUE(out[0]) == 1 && VALUE(out[1]) == 2);
  CHECK(lm_ring_peek(r, &got) && VALUE(got) == 51);
  CHECK(lm_ring_pop_n(r, out, 2) == 1 && VALUE(out[0]) == 51);
  lm_ring_destroy(r);
  return 0;
}

/* ---- two-thread stress ---------------------------------------------------------- */

/* 10^7 items take ~0.5 s under ASan on 2 cores; TSan instruments every access
 * at ~10x that cost, so its build (which exists to find races, not to count
 * items) runs 2*10^6 to stay within the test time budget. */
#if defined(__SANITIZE_THREAD__)
enum { STRESS_ITEMS = 2000000, BATCH_ITEMS = 1000000 };
#else
enum { STRESS_ITEMS = 10000000, BATCH_ITEMS = 2000000 };
#endif

typedef struct stress_ctx {
  lm_ring* ring;
  uint64_t seed;
  uintptr_t count;  // items 1..count
} stress_ctx;

static void* producer_single(void* p) {
  stress_ctx* c = p;
  for (uintptr_t i = 1; i <= c->count; i++) {
    while (!lm_ring_push(c->ring, ITEM(i))) sched_yield();
  }
  return NULL;
}

static int test_stress_spsc(void) {
  stress_ctx c = {.count = STRESS_ITEMS};
  CHECK_CODE(lm_ring_create(1024, &c.ring), LAMINAR_OK, (laminar_error*)NULL);
  pthread_t th;
  CHECK(pthread_create(&th, NULL, producer_single, &c) == 0);
  uintptr_t expect = 1, received = 0;
  int bad = 0;
  while (received < c.count) {
    void* got;
    if (!lm_ring_pop(c.ring, &got)) {
      sched_yield();
      continue;
    }
    if (VALUE(got) != expect && !bad) {
      fprintf(stderr, "got %zu, want %zu\n", (size_t)VALUE(got), (size_t)expect);
      bad = 1;
    }
    expect = VALUE(got) + 1;
    received++;
  }
  pthread_join(th, NULL);
  void* extra;
  EXPECT(!lm_ring_pop(c.ring, &extra));  // exactly count items came through
  EXPECT(received == STRESS_ITEMS);
  EXPECT(!bad);
  lm_ring_destroy(c.ring);
  return 0;
}

/* Random batch sizes on both ends, with peeks, over a small ring. */
static void* producer_batch(void* p) {
  stress_ctx* c = p;
  uint64_t rng = c->seed;
  void* buf[97];
  uintptr_t next = 1;
  while (next <= c->count) {
    uint32_t want = 1 + (uint32_t)(lm_test_rand(&rng) % 97);
    if (want > c->count - next + 1) want = (uint32_t)(c->count - next + 1);
    for (uint32_t k = 0; k < want; k++) buf[k] = ITEM(next + k);
    uint32_t done = 0;
    while (done < want) {
      uint32_t n = want - done == 1 ? (uint32_t)lm_ring_push(c->ring, buf[done])
                                    : lm_ring_push_n(c->ring, buf + done, want - done);
      if (n == 0) sched_yield();
      done += n;
    }
    next += want;
  }
  return NULL;
}

static int test_stress_batch(void) {
  stress_ctx c = {.count = BATCH_ITEMS, .seed = lm_test_seed()};
  CHECK_CODE(lm_ring_create(64, &c.ring), LAMINAR_OK, (laminar_error*)NULL);
  pthread_t th;
  CHECK(pthread_create(&th, NULL, producer_batch, &c) == 0);
  uint64_t rng = c.seed ^ 0x5bd1e995u;
  uintptr_t expect = 1;
  int bad = 0;
  void* buf[131];
  while (expect <= c.count) {
    uint32_t max = 1 + (uint32_t)(lm_test_rand(&rng) % 131);
    if (max % 7 == 0) {  // a peek must show the next item, then pop it
      void* a;
      void* b;
      if (!lm_ring_peek(c.ring, &a)) {
        sched_yield();
        continue;
      }
      if (!lm_ring_pop(c.ring, &b) || a != b) bad = 1;
      if (VALUE(b) != expect) bad = 1;
      expect++;
      continue;
    }
    uint32_t n = lm_ring_pop_n(c.ring, buf, max);
    if (n == 0) sched_yield();
    for (uint32_t k = 0; k < n; k++) {
      if (VALUE(buf[k]) != expect && !bad) {
        fprintf(stderr, "got %zu, want %zu\n", (size_t)VALUE(buf[k]), (size_t)expect);
        bad = 1;
      }
      expect++;
    }
  }
  pthread_join(th, NULL);
  EXPECT(lm_ring_pop_n(c.ring, buf, 1) == 0);
  EXPECT(expect == (uintptr_t)BATCH_ITEMS + 1);
  EXPECT(!bad);
  lm_ring_destroy(c.ring);
  return 0;
}

/* ---- waiter --------------------------------------------------------------------- */

static bool ring_nonempty(void* p) { return lm_ring_size(p) > 0; }
static bool ring_has_room(void* p) {
  const lm_ring* r = p;
  return lm_ring_size(r) < lm_ring_capacity(r);
}

static int64_t mono_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

typedef struct wake_ctx {
  lm_ring* ring;
  lm_waiter* waiter;
} wake_ctx;

/* Waits until the consumer is parked on the condition variable (white-box read
 * of `sleepers`), then pushes and notifies: exercises the park/wake path. */
static void* push_when_parked(void* p) {
  wake_ctx* c = p;
  while (atomic_load_explicit(&c->waiter->sleepers, memory_order_acquire) == 0) {
    sched_yield();
  }
  while (!lm_ring_push(c->ring, ITEM(42))) sched_yield();
  lm_waiter_notify(c->waiter);
  return NULL;
}

static int test_waiter_wakes(void) {
  lm_ring* r;
  lm_waiter w;
  CHECK_CODE(lm_ring_create(4, &r), LAMINAR_OK, (laminar_error*)NULL);
  CHECK_CODE(lm_waiter_init(&w), LAMINAR_OK, (laminar_error*)NULL);
  lm_waiter_notify(&w);  // nobody waiting: a no-op
  wake_ctx c = {r, &w};
  for (int round = 0; round < 20; round++) {
    pthread_t th;
    CHECK(pthread_create(&th, NULL, push_when_parked, &c) == 0);
    // A generous timeout: a lost wakeup shows as a failure, not a hang.
    bool ok = lm_waiter_wait(&w, 10 * 1000000000LL, ring_nonempty, r);
    pthread_join(th, NULL);
    CHECK(ok);
    void* got;
    CHECK(lm_ring_pop(r, &got));
    CHECK(VALUE(got) == 42);
  }
  // Forever (-1), and a timeout whose deadline would overflow, with the same
  // handoff.
  static const int64_t unbounded[] = {-1, INT64_MAX};
  for (size_t i = 0; i < 2; i++) {
    pthread_t th;
    CHECK(pthread_create(&th, NULL, push_when_parked, &c) == 0);
    EXPECT(lm_waiter_wait(&w, unbounded[i], ring_nonempty, r));
    pthread_join(th, NULL);
    void* got;
    CHECK(lm_ring_pop(r, &got));
  }
  EXPECT(atomic_load(&w.sleepers) == 0);
  lm_waiter_destroy(&w);
  lm_ring_destroy(r);
  return 0;
}

static int test_waiter_timeout(void) {
  lm_ring* r;
  lm_waiter w;
  CHECK_CODE(lm_ring_create(4, &r), LAMINAR_OK, (laminar_error*)NULL);
  CHECK_CODE(lm_waiter_init(&w), LAMINAR_OK, (laminar_error*)NULL);
  EXPECT(!lm_waiter_wait(&w, 0, ring_nonempty, r));  // check once
  // Short timeouts end in the spin phase, longer ones in the timed park.
  static const int64_t timeouts[] = {1000, 200000, 20000000};
  for (size_t i = 0; i < sizeof timeouts / sizeof timeouts[0]; i++) {
    int64_t t0 = mono_ns();
    EXPECT(!lm_waiter_wait(&w, timeouts[i], ring_nonempty, r));
    EXPECT(mono_ns() - t0 >= timeouts[i]);
  }
  CHECK(lm_ring_push(r, ITEM(1)));
  EXPECT(lm_waiter_wait(&w, 0, ring_nonempty, r));  // already ready
  EXPECT(lm_waiter_wait(&w, 1000, ring_nonempty, r));
  EXPECT(atomic_load(&w.sleepers) == 0);
  lm_waiter_destroy(&w);
  lm_ring_destroy(r);
  return 0;
}

/* Both ends block through waiters on a 2-slot ring: every item crosses a
 * potential park, so a lost wakeup would show as a timed-out wait. */
enum { PINGPONG_ITEMS = 100000 };

typedef struct pingpong_ctx {
  lm_ring* ring;
  lm_waiter not_empty;
  lm_waiter not_full;
  atomic_int failed;
} pingpong_ctx;

static void* pingpong_producer(void* p) {
  pingpong_ctx* c = p;
  for (uintptr_t i = 1; i <= PINGPONG_ITEMS; i++) {
    while (!lm_ring_push(c->ring, ITEM(i))) {
      if (!lm_waiter_wait(&c->not_full, 10 * 1000000000LL, ring_has_room, c->ring)) {
        atomic_store(&c->failed, 1);
        return NULL;
      }
    }
    lm_waiter_notify(&c->not_empty);
  }
  return NULL;
}

static int test_waiter_pingpong(void) {
  pingpong_ctx c;
  CHECK_CODE(lm_ring_create(2, &c.ring), LAMINAR_OK, (laminar_error*)NULL);
  CHECK_CODE(lm_waiter_init(&c.not_empty), LAMINAR_OK, (laminar_error*)NULL);
  CHECK_CODE(lm_waiter_init(&c.not_full), LAMINAR_OK, (laminar_error*)NULL);
  atomic_init(&c.failed, 0);
  pthread_t th;
  CHECK(pthread_create(&th, NULL, pingpong_producer, &c) == 0);
  uintptr_t expect = 1;
  bool timed_out = false, order_ok = true;
  while (expect <= PINGPONG_ITEMS && !atomic_load(&c.failed)) {
    void* got;
    if (!lm_ring_pop(c.ring, &got)) {
      if (!lm_waiter_wait(&c.not_empty, 10 * 1000000000LL, ring_nonempty, c.ring)) {
        timed_out = true;
        break;
      }
      continue;
    }
    lm_waiter_notify(&c.not_full);
    if (VALUE(got) != expect) order_ok = false;
    expect++;
  }
  pthread_join(th, NULL);
  EXPECT(!timed_out);
  EXPECT(!atomic_load(&c.failed));
  EXPECT(order_ok);
  EXPECT(expect == (uintptr_t)PINGPONG_ITEMS + 1);
  lm_waiter_destroy(&c.not_empty);
  lm_waiter_destroy(&c.not_full);
  lm_ring_destroy(c.ring);
  return 0;
}

int main(int argc, char** argv) {
  static const lm_test_case cases[] = {
      {"create_validation", test_create_validation},
      {"empty_full", test_empty_full},
      {"null_item_and_peek", test_null_item_and_peek},
      {"fifo_wraparound", test_fifo_wraparound},
      {"index_wrap_2_32", test_index_wrap_2_32},
      {"batch_partial", test_batch_partial},
      {"stress_spsc", test_stress_spsc},
      {"stress_batch", test_stress_batch},
      {"waiter_wakes", test_waiter_wakes},
      {"waiter_timeout", test_waiter_timeout},
      {"waiter_pingpong", test_waiter_pingpong},
      {NULL, NULL},
  };
  return lm_test_main(argc, argv, cases);
}
