/*
 * bench_mpsc.c -- throughput of the runtime's queues between threads (issue 5):
 *   mpsc       2 producers -> 1 consumer on the source queue (src/chan/mpsc.h) in
 *              multi-producer mode: single lm_mpsc_push / lm_mpsc_pop, and runs of
 *              32 with lm_mpsc_push_all (one CAS per run). Target >= 20M items/s.
 *   broadcast  1 producer -> 3 subscribers, one SPSC ring each (src/chan/ring.h),
 *              as the reactor fans a stream's batches out: every item goes to all
 *              three (lm_ring_push_n / lm_ring_pop_n, 64 per call). Target >= 20M
 *              items/s received by each subscriber.
 * Each figure is the median of 3 runs. Consumers check per-producer order and
 * that nothing is lost. All threads busy-poll (pause, sched_yield after a long
 * miss streak), so the number measures the queue, not a wait strategy; on a
 * machine with fewer cores than threads they time-share.
 *
 * Usage: bench_mpsc [items per run (default 5e7)]
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE  // sched_yield
#endif

#include "chan/mpsc.h"
#include "chan/ring.h"
#include "chan/wait.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum { RUNS = 3, RUN = 32, FAN = 3, BATCH = 64, YIELD_AFTER = 256 };

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void backoff(uint32_t* misses) {
  if (++*misses % YIELD_AFTER == 0) {
    sched_yield();
  } else {
    lm_wait_cpu_relax();
  }
}

/* ---- mpsc: 2 producers, 1 consumer ---------------------------------------------- */

typedef struct mp_arg {
  lm_mpsc* q;
  uint64_t id, n;
  bool runs;
  atomic_bool* go;
} mp_arg;

static void* mp_producer(void* arg) {
  mp_arg* a = arg;
  while (!atomic_load_explicit(a->go, memory_order_acquire)) sched_yield();
  void* items[RUN];
  uint32_t misses = 0;
  for (uint64_t s = 1; s <= a->n;) {
    if (a->runs) {
      uint32_t k = a->n - s + 1 < RUN ? (uint32_t)(a->n - s + 1) : RUN;
      for (uint32_t i = 0; i < k; i++)
        items[i] = (void*)(uintptr_t)((a->id << 40) | (s + i));
      if (lm_mpsc_push_all(a->q, items, k)) {
        s += k;
      } else {
        backoff(&misses);
      }
    } else if (lm_mpsc_push(a->q, (void*)(uintptr_t)((a->id << 40) | s))) {
      s++;
    } else {
      backoff(&misses);
    }
  }
  return NULL;
}

static double run_mpsc(uint64_t total, bool runs) {
  lm_mpsc* q;
  if (lm_mpsc_create(4096, false, &q) != LAMINAR_OK) return -1;
  lm_mpsc_set_multi(q);
  atomic_bool go = false;
  mp_arg a[2];
  pthread_t th[2];
  for (int i = 0; i < 2; i++) {
    a[i] = (mp_arg){q, (uint64_t)i + 1, total / 2, runs, &go};
    pthread_create(&th[i], NULL, mp_producer, &a[i]);
  }
  uint64_t last[3] = {0, 0, 0}, got = 0;
  bool ok = true;
  uint32_t misses = 0;
  double t0 = now_s();
  atomic_store_explicit(&go, true, memory_order_release);
  while (got < 2 * (total / 2)) {
    void* x;
    if (!lm_mpsc_pop(q, &x)) {
      backoff(&misses);
      continue;
    }
    uint64_t v = (uint64_t)(uintptr_t)x, p = v >> 40, s = v & ((1ull << 40) - 1);
    if (p < 1 || p > 2 || s != last[p] + 1) ok = false;
    last[p] = s;
    got++;
  }
  double secs = now_s() - t0;
  for (int i = 0; i < 2; i++) pthread_join(th[i], NULL);
  lm_mpsc_destroy(q);
  if (!ok) {
    fprintf(stderr, "mpsc: order check failed\n");
    return -1;
  }
  return (double)got / secs;
}

/* ---- broadcast: 1 producer, 3 SPSC rings ---------------------------------------- */

typedef struct bc_arg {
  lm_ring* ring;
  uint64_t n;
  atomic_bool* go;
  double secs;
  bool ok;
} bc_arg;

static void* bc_consumer(void* arg) {
  bc_arg* a = arg;
  while (!atomic_load_explicit(a->go, memory_order_acquire)) sched_yield();
  double t0 = now_s();
  void* items[BATCH];
  uint64_t next = 1;
  uint32_t misses = 0;
  a->ok = true;
  while (next <= a->n) {
    uint32_t k = lm_ring_pop_n(a->ring, items, BATCH);
    if (k == 0) {
      backoff(&misses);
      continue;
    }
    for (uint32_t i = 0; i < k; i++) {
      if ((uint64_t)(uintptr_t)items[i] != next++) a->ok = false;
    }
  }
  a->secs = now_s() - t0;
  return NULL;
}

static double run_broadcast(uint64_t total) {
  lm_ring* rings[FAN];
  bc_arg a[FAN];
  pthread_t th[FAN];
  atomic_bool go = false;
  for (int i = 0; i < FAN; i++) {
    if (lm_ring_create(4096, &rings[i]) != LAMINAR_OK) return -1;
    a[i] = (bc_arg){rings[i], total, &go, 0, false};
    pthread_create(&th[i], NULL, bc_consumer, &a[i]);
  }
  atomic_store_explicit(&go, true, memory_order_release);
  void* items[BATCH];
  uint32_t misses = 0;
  for (uint64_t s = 1; s <= total;) {
    uint32_t k = total - s + 1 < BATCH ? (uint32_t)(total - s + 1) : BATCH;
    for (uint32_t i = 0; i < k; i++) items[i] = (void*)(uintptr_t)(s + i);
    // Every subscriber gets the whole run (the reactor's fan-out); a full ring
    // is retried for the rest of the run only.
    for (int r = 0; r < FAN; r++) {
      uint32_t done = 0;
      while (done < k) {
        uint32_t m = lm_ring_push_n(rings[r], items + done, k - done);
        if (m == 0) backoff(&misses);
        done += m;
      }
    }
    s += k;
  }
  double slowest = 0;
  bool ok = true;
  for (int i = 0; i < FAN; i++) {
    pthread_join(th[i], NULL);
    if (a[i].secs > slowest) slowest = a[i].secs;
    ok = ok && a[i].ok;
    lm_ring_destroy(rings[i]);
  }
  if (!ok) {
    fprintf(stderr, "broadcast: order check failed\n");
    return -1;
  }
  return (double)total / slowest;  // items/s received by each subscriber (the slowest)
}

static int cmp(const void* x, const void* y) {
  double a = *(const double*)x, b = *(const double*)y;
  return (a > b) - (a < b);
}

static int report(const char* what, double (*fn)(uint64_t, bool), uint64_t n, bool flag) {
  double r[RUNS];
  for (int i = 0; i < RUNS; i++) {
    r[i] = fn(n, flag);
    if (r[i] < 0) return 1;
    printf("  %-24s run %d: %.1f M items/s\n", what, i + 1, r[i] / 1e6);
  }
  qsort(r, RUNS, sizeof *r, cmp);
  printf("RESULT %s median %.1f M items/s\n", what, r[RUNS / 2] / 1e6);
  return 0;
}

static double broadcast_fn(uint64_t n, bool flag) {
  (void)flag;
  return run_broadcast(n);
}

int main(int argc, char** argv) {
  uint64_t n = argc > 1 ? (uint64_t)atof(argv[1]) : 50000000ull;
  if (n < 1000) n = 1000;
  int rc = 0;
  rc |= report("mpsc_2p_single", run_mpsc, n, false);
  rc |= report("mpsc_2p_runs32", run_mpsc, n, true);
  rc |= report("broadcast_3_each", broadcast_fn, n / 2, false);
  return rc;
}
