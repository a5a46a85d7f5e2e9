/*
 * test_chan_mpsc.c -- white-box tests of the source queue (src/chan/mpsc.h) and
 * the wait strategies (src/chan/wait.h): single-threaded semantics, the
 * single -> multi upgrade with items queued, 4 producers with per-producer
 * order, contiguous push_all runs, stealing producers racing the consumer
 * (every item taken exactly once), and the parser of strategy names. Run
 * under ASan+UBSan and TSan (scripts/test.sh).
 *
 * Items encode (producer << 40) | sequence, never 0.
 */
/* lm_ctest: LABELS unit concurrency TIMEOUT 120 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE  // sched_yield under -std=c17
#endif

#include "chan/mpsc.h"
#include "chan/wait.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>

#include "lm_test.h"

#define ITEM(p, s) ((void*)(uintptr_t)(((uint64_t)(p) << 40) | (uint64_t)(s)))
#define PRODUCER(x) ((uint64_t)(uintptr_t)(x) >> 40)
#define SEQ(x) ((uint64_t)(uintptr_t)(x) & ((UINT64_C(1) << 40) - 1))

#if defined(__SANITIZE_THREAD__) || defined(__SANITIZE_ADDRESS__)
#define PER_PRODUCER 50000
#else
#define PER_PRODUCER 1000000
#endif

/* ---- single-threaded semantics ---------------------------------------------- */

static int test_create_validation(void) {
  static const uint32_t bad[] = {0, 1, 3, 6, 100, (1u << 24) + 1, 1u << 25};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    lm_mpsc* q = (lm_mpsc*)&q;
    CHECK(lm_mpsc_create(bad[i], false, &q) == LAMINAR_ERR_CONFIG_VALUE);
    CHECK(q == NULL);
  }
  lm_mpsc* q;
  CHECK(lm_mpsc_create(1u << 24, false, &q) == LAMINAR_OK);
  EXPECT(lm_mpsc_capacity(q) == 1u << 24);
  lm_mpsc_destroy(q);
  lm_mpsc_destroy(NULL);
  return 0;
}

static int test_fifo_full_empty(void) {
  for (int multi = 0; multi < 2; multi++) {
    for (int stealing = 0; stealing < 2; stealing++) {
      lm_mpsc* q;
      CHECK(lm_mpsc_create(4, stealing, &q) == LAMINAR_OK);
      if (multi) lm_mpsc_set_multi(q);
      EXPECT(lm_mpsc_is_multi(q) == (multi != 0));
      void* got = ITEM(0, 999);
      EXPECT(!lm_mpsc_pop(q, &got));
      EXPECT(got == ITEM(0, 999));
      // Three laps: positions cross slot reuse several times.
      uint64_t next_in = 1, next_out = 1;
      for (int lap = 0; lap < 3; lap++) {
        while (lm_mpsc_size(q) < 4) CHECK(lm_mpsc_push(q, ITEM(0, next_in++)));
        EXPECT(!lm_mpsc_push(q, ITEM(0, 12345)));
        EXPECT(lm_mpsc_size(q) == 4);
        CHECK(lm_mpsc_pop(q, &got));
        EXPECT(SEQ(got) == next_out++);
        if (stealing) {
          CHECK(lm_mpsc_steal(q, &got));  // the oldest, as a pop would give
          EXPECT(SEQ(got) == next_out++);
        }
        while (lm_mpsc_pop(q, &got)) EXPECT(SEQ(got) == next_out++);
        EXPECT(lm_mpsc_size(q) == 0);
      }
      EXPECT(next_in == next_out);
      lm_mpsc_destroy(q);
    }
  }
  return 0;
}

static int test_push_all_is_all_or_nothing(void) {
  lm_mpsc* q;
  CHECK(lm_mpsc_create(8, false, &q) == LAMINAR_OK);
  void* items[9];
  for (int i = 0; i < 9; i++) items[i] = ITEM(0, i + 1);
  EXPECT(!lm_mpsc_push_all(q, items, 9));  // more than the capacity: never
  CHECK(lm_mpsc_push_all(q, items, 5));
  EXPECT(!lm_mpsc_push_all(q, items + 5, 4));  // 3 free: nothing goes in
  EXPECT(lm_mpsc_size(q) == 5);
  CHECK(lm_mpsc_push_all(q, items + 5, 3));
  EXPECT(lm_mpsc_push_all(q, items, 0));
  void* got;
  for (uint64_t i = 1; i <= 8; i++) {
    CHECK(lm_mpsc_pop(q, &got));
    EXPECT(SEQ(got) == i);
  }
  // Wraps the end of the slot array in one run.
  CHECK(lm_mpsc_push_all(q, items, 3));
  CHECK(lm_mpsc_push_all(q, items, 7) == false);
  for (int i = 0; i < 3; i++) CHECK(lm_mpsc_pop(q, &got));
  CHECK(lm_mpsc_push_all(q, items, 8));
  for (uint64_t i = 1; i <= 8; i++) {
    CHECK(lm_mpsc_pop(q, &got));
    EXPECT(SEQ(got) == i);
  }
  lm_mpsc_destroy(q);
  return 0;
}

/* ---- threads ---------------------------------------------------------------------- */

typedef struct prod {
  lm_mpsc* q;
  int id;
  uint64_t n;
  uint32_t run; /* items per push_all (1: lm_mpsc_push) */
  bool steal;   /* also steal (drop_oldest): on a full queue take the head */
  atomic_uint_fast64_t stolen; /* items this producer took off the queue */
  uint64_t* seen;              /* with steal: per-producer counts of what it took */
  atomic_bool* go;
} prod;

static void* prod_main(void* arg) {
  prod* p = arg;
  while (!atomic_load_explicit(p->go, memory_order_acquire)) sched_yield();
  void* items[64];
  uint64_t s = 1;
  while (s <= p->n) {
    uint32_t k = p->run;
    if (s + k - 1 > p->n) k = (uint32_t)(p->n - s + 1);
    for (uint32_t i = 0; i < k; i++) items[i] = ITEM(p->id, s + i);
    bool ok = k == 1 ? lm_mpsc_push(p->q, items[0]) : lm_mpsc_push_all(p->q, items, k);
    if (ok) {
      s += k;
      continue;
    }
    if (p->steal) {
      void* got;
      if (lm_mpsc_steal(p->q, &got)) {
        atomic_fetch_add_explicit(&p->stolen, 1, memory_order_relaxed);
        p->seen[PRODUCER(got)]++;
      }
    } else {
      sched_yield();
    }
  }
  return NULL;
}

enum { NPROD = 4 };

/* Consume until every producer's last item was taken by someone; check
 * per-producer order of what the consumer got (with runs: contiguity too). */
static int consume(lm_mpsc* q, prod* ps, int np, uint64_t total, uint32_t run,
                   uint64_t* out_got, uint64_t* counts) {
  uint64_t last[NPROD + 1] = {0};
  uint64_t got_n = 0;
  uint64_t run_left = 0, run_prod = 0, run_next = 0;
  for (;;) {
    void* x;
    if (!lm_mpsc_pop(q, &x)) {
      uint64_t stolen = 0;
      for (int i = 0; i < np; i++) stolen += atomic_load(&ps[i].stolen);
      if (got_n + stolen == total && lm_mpsc_size(q) == 0) break;
      sched_yield();
      continue;
    }
    uint64_t p = PRODUCER(x), s = SEQ(x);
    CHECK(p >= 1 && p <= (uint64_t)np);
    if (s <= last[p]) {
      fprintf(stderr, "producer %llu: seq %llu after %llu\n", (unsigned long long)p,
              (unsigned long long)s, (unsigned long long)last[p]);
      return 1;
    }
    if (run > 1 && !ps[0].steal) {
      // A run of push_all is contiguous: no other producer's item inside it.
      if (run_left > 0) {
        CHECK(p == run_prod && s == run_next);
        run_left--;
        run_next++;
      }
      if (run_left == 0 && (s - 1) % run == 0) {
        run_prod = p;
        run_next = s + 1;
        run_left = run - 1;
        if (s + run - 1 > ps[p - 1].n) run_left = ps[p - 1].n - s;
      }
    }
    if (!ps[0].steal) CHECK(s == last[p] + 1);  // nothing lost without stealing
    last[p] = s;
    counts[p]++;
    got_n++;
  }
  *out_got = got_n;
  return 0;
}

static int run_producers(uint32_t capacity, uint32_t run, bool steal,
                         uint64_t per_producer) {
  lm_mpsc* q;
  CHECK(lm_mpsc_create(capacity, steal, &q) == LAMINAR_OK);
  lm_mpsc_set_multi(q);
  atomic_bool go = false;
  static uint64_t seen[NPROD][NPROD + 1];
  memset(seen, 0, sizeof seen);
  prod ps[NPROD];
  pthread_t th[NPROD];
  uint64_t total = 0;
  for (int i = 0; i < NPROD; i++) {
    ps[i] = (prod){.q = q,
                   .id = i + 1,
                   .n = per_producer,
                   .run = run,
                   .steal = steal,
                   .seen = seen[i],
                   .go = &go};
    atomic_init(&ps[i].stolen, 0);
    total += ps[i].n;
  }
  for (int i = 0; i < NPROD; i++)
    CHECK(pthread_create(&th[i], NULL, prod_main, &ps[i]) == 0);
  atomic_store(&go, true);
  uint64_t counts[NPROD + 1] = {0};
  uint64_t got = 0;
  int bad = consume(q, ps, NPROD, total, run, &got, counts);
  for (int i = 0; i < NPROD; i++) pthread_join(th[i], NULL);
  lm_mpsc_destroy(q);
  if (bad) return 1;
  uint64_t stolen = 0;
  for (int i = 0; i < NPROD; i++) {
    stolen += atomic_load(&ps[i].stolen);
    for (int p = 1; p <= NPROD; p++) counts[p] += seen[i][p];
  }
  EXPECT(got + stolen == total);
  for (int p = 1; p <= NPROD; p++) EXPECT(counts[p] == ps[p - 1].n);
  if (!steal) EXPECT(stolen == 0);
  return 0;
}

static int test_four_producers_order(void) {
  return run_producers(1024, 1, false, PER_PRODUCER);
}

static int test_four_producers_runs_contiguous(void) {
  return run_producers(1024, 8, false, PER_PRODUCER);
}

/* Capacity 2: producers meet a full queue all the time (fewer items: each
 * push mostly waits for the consumer). */
static int test_four_producers_tiny_queue(void) {
  return run_producers(2, 1, false, PER_PRODUCER / 50);
}

static int test_stealing_producers_exactly_once(void) {
  return run_producers(16, 1, true, PER_PRODUCER / 4);
}

/* The upgrade keeps what the single producer queued: its items come first,
 * in order, before anything pushed after the upgrade. */
static int test_upgrade_keeps_queued(void) {
  lm_mpsc* q;
  CHECK(lm_mpsc_create(64, false, &q) == LAMINAR_OK);
  for (uint64_t s = 1; s <= 40; s++) CHECK(lm_mpsc_push(q, ITEM(1, s)));
  void* got;
  for (uint64_t s = 1; s <= 10; s++) {
    CHECK(lm_mpsc_pop(q, &got));
    CHECK(SEQ(got) == s);
  }
  lm_mpsc_set_multi(q);
  lm_mpsc_set_multi(q);  // idempotent
  CHECK(lm_mpsc_push(q, ITEM(2, 1)));
  CHECK(lm_mpsc_push(q, ITEM(1, 41)));
  for (uint64_t s = 11; s <= 40; s++) {
    CHECK(lm_mpsc_pop(q, &got));
    CHECK(PRODUCER(got) == 1 && SEQ(got) == s);
  }
  CHECK(lm_mpsc_pop(q, &got) && got == ITEM(2, 1));
  CHECK(lm_mpsc_pop(q, &got) && got == ITEM(1, 41));
  CHECK(!lm_mpsc_pop(q, &got));
  lm_mpsc_destroy(q);
  return 0;
}

/* ---- wait strategies ------------------------------------------------------------ */

static int test_wait_parse(void) {
  lm_wait w;
  char buf[32];
  static const struct {
    const char* text;
    lm_wait_kind kind;
    uint32_t spins;
    const char* canon;
  } good[] = {
      {"spin", LM_WAIT_SPIN, 100, "spin"},
      {"PARK", LM_WAIT_PARK, 100, "park"},
      {"spin_yield", LM_WAIT_SPIN_YIELD, 100, "spin_yield(100)"},
      {" spin_yield( 7 ) ", LM_WAIT_SPIN_YIELD, 7, "spin_yield(7)"},
      {"Spin_Yield(0)", LM_WAIT_SPIN_YIELD, 0, "spin_yield(0)"},
      {"spin_yield(100000000)", LM_WAIT_SPIN_YIELD, 100000000, "spin_yield(100000000)"}};
  for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
    CHECK(lm_wait_parse(good[i].text, &w));
    EXPECT(w.kind == good[i].kind && w.spins == good[i].spins);
    lm_wait_format(&w, buf, sizeof buf);
    EXPECT(strcmp(buf, good[i].canon) == 0);
  }
  static const char* bad[] = {"",
                              "spinner",
                              "spin_yield(",
                              "spin_yield()",
                              "spin_yield(-1)",
                              "spin_yield(100000001)",
                              "spin_yield(3)x",
                              "sleep",
                              "spin yield",
                              "park(3)"};
  w = lm_wait_default();
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    EXPECT(!lm_wait_parse(bad[i], &w));
    EXPECT(w.kind == LM_WAIT_PARK);  // unchanged on failure
  }
  EXPECT(!lm_wait_parse(NULL, &w));
  lm_wait spin = {LM_WAIT_SPIN, 0}, sy = {LM_WAIT_SPIN_YIELD, 5},
          sy9 = {LM_WAIT_SPIN_YIELD, 9};
  EXPECT(lm_wait_eager(lm_wait_default(), sy).kind == LM_WAIT_SPIN_YIELD);
  EXPECT(lm_wait_eager(sy, spin).kind == LM_WAIT_SPIN);
  EXPECT(lm_wait_eager(sy, sy9).spins == 9);
  return 0;
}

typedef struct flag_arg {
  atomic_bool flag;
  lm_waiter w;
} flag_arg;

static bool flag_ready(void* arg) {
  return atomic_load_explicit(&((flag_arg*)arg)->flag, memory_order_acquire);
}

static void* set_flag(void* arg) {
  flag_arg* f = arg;
  for (int i = 0; i < 1000; i++) sched_yield();
  atomic_store_explicit(&f->flag, true, memory_order_release);
  lm_waiter_notify(&f->w);
  return NULL;
}

/* Every strategy returns true once another thread sets the flag, and false
 * after a short timeout when nobody does. */
static int test_wait_strategies_wake_and_time_out(void) {
  static const char* names[] = {"spin", "spin_yield(10)", "park"};
  for (size_t i = 0; i < 3; i++) {
    lm_wait how;
    CHECK(lm_wait_parse(names[i], &how));
    flag_arg f;
    atomic_init(&f.flag, false);
    CHECK(lm_waiter_init(&f.w) == LAMINAR_OK);
    EXPECT(!lm_wait_until(&how, &f.w, 0, flag_ready, &f));
    EXPECT(!lm_wait_until(&how, &f.w, 2000000, flag_ready, &f));  // 2 ms, nobody sets it
    pthread_t t;
    CHECK(pthread_create(&t, NULL, set_flag, &f) == 0);
    EXPECT(lm_wait_until(&how, &f.w, -1, flag_ready, &f));
    pthread_join(t, NULL);
    lm_waiter_destroy(&f.w);
  }
  return 0;
}

static const lm_test_case cases[] = {
    {"create_validation", test_create_validation},
    {"fifo_full_empty", test_fifo_full_empty},
    {"push_all_is_all_or_nothing", test_push_all_is_all_or_nothing},
    {"upgrade_keeps_queued", test_upgrade_keeps_queued},
    {"four_producers_order", test_four_producers_order},
    {"four_producers_runs_contiguous", test_four_producers_runs_contiguous},
    {"four_producers_tiny_queue", test_four_producers_tiny_queue},
    {"stealing_producers_exactly_once", test_stealing_producers_exactly_once},
    {"wait_parse", test_wait_parse},
    {"wait_strategies_wake_and_time_out", test_wait_strategies_wake_and_time_out},
    {NULL, NULL}};

int main(int argc, char** argv) { return lm_test_main(argc, argv, cases); }
