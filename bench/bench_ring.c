/*
 * bench_ring.c -- throughput of the SPSC ring (src/chan/ring.h) between two
 * threads: single lm_ring_push/lm_ring_pop and batched lm_ring_push_n/
 * lm_ring_pop_n (64 per call). Reports the median of 3 runs as items/s and
 * ns/item. Target (DESIGN ring 0): >= 50M items/s.
 *
 * Usage: bench_ring [items (default 1e8)] [--no-pin] [--capacity N (default 4096)]
 * Threads are pinned to CPUs 0 (producer) and 1 (consumer) unless --no-pin or
 * fewer than 2 CPUs. Both ends busy-poll (a pause hint, then sched_yield after
 * a long miss streak) so the number measures the ring, not a wait strategy.
 * The consumer checks every value is the next in sequence.
 *
 * Build: gcc -O3 -march=native -std=c17 -Iinclude -Isrc bench/bench_ring.c
 *          src/chan/ring.c src/util/util.c -lpthread -o /tmp/bench_ring
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE  // pthread_setaffinity_np, CPU_SET
#endif

#include "chan/ring.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

enum { BATCH = 64, RUNS = 3, YIELD_AFTER = 1024 };

typedef struct bench_run {
  lm_ring* ring;
  uint64_t items;
  bool batch;
  bool pin;
  atomic_int ready;  // threads at the start line
  atomic_bool go;    // main: release when the clock starts; threads: acquire
  bool order_ok;     // written by the consumer, read by main after join
} bench_run;

static inline void cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  __asm__ __volatile__("yield");
#endif
}

/* Back off after a failed push/pop: pause, and yield the core after a streak so
 * an unpinned run on a busy machine still makes progress. */
static inline void backoff(uint32_t* misses) {
  if (++*misses % YIELD_AFTER == 0) {
    sched_yield();
  } else {
    cpu_relax();
  }
}

static void pin_to(int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  if (pthread_setaffinity_np(pthread_self(), sizeof set, &set) != 0) {
    fprintf(stderr, "bench_ring: could not pin to CPU %d; running unpinned\n", cpu);
  }
}

static void start_line(bench_run* b, int cpu) {
  if (b->pin) pin_to(cpu);
  atomic_fetch_add_explicit(&b->ready, 1, memory_order_acq_rel);
  while (!atomic_load_explicit(&b->go, memory_order_acquire)) cpu_relax();
}

static void* producer(void* p) {
  bench_run* b = p;
  start_line(b, 0);
  uint32_t misses = 0;
  uint64_t items = b->items;
  if (!b->batch) {
    for (uint64_t i = 1; i <= items; i++) {
      while (!lm_ring_push(b->ring, (void*)(uintptr_t)i)) backoff(&misses);
    }
    return NULL;
  }
  void* buf[BATCH];
  uint64_t next = 1;
  while (next <= items) {
    uint64_t left = items - next + 1;
    uint32_t want = left < BATCH ? (uint32_t)left : BATCH;
    for (uint32_t k = 0; k < want; k++) buf[k] = (void*)(uintptr_t)(next + k);
    uint32_t done = 0;
    while (done < want) {
      uint32_t n = lm_ring_push_n(b->ring, buf + done, want - done);
      if (n == 0) backoff(&misses);
      done += n;
    }
    next += want;
  }
  return NULL;
}

static void* consumer(void* p) {
  bench_run* b = p;
  start_line(b, 1);
  uint32_t misses = 0;
  uint64_t expect = 1, items = b->items;
  bool ok = true;
  if (!b->batch) {
    while (expect <= items) {
      void* got;
      if (!lm_ring_pop(b->ring, &got)) {
        backoff(&misses);
        continue;
      }
      ok &= (uintptr_t)got == expect;
      expect++;
    }
  } else {
    void* buf[BATCH];
    while (expect <= items) {
      uint32_t n = lm_ring_pop_n(b->ring, buf, BATCH);
      if (n == 0) backoff(&misses);
      for (uint32_t k = 0; k < n; k++) {
        ok &= (uintptr_t)buf[k] == expect;
        expect++;
      }
    }
  }
  b->order_ok = ok;
  return NULL;
}

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* One run; returns seconds, or a negative value on failure. */
static double run_once(uint32_t capacity, uint64_t items, bool batch, bool pin) {
  bench_run b = {.items = items, .batch = batch, .pin = pin};
  atomic_init(&b.ready, 0);
  atomic_init(&b.go, false);
  if (lm_ring_create(capacity, &b.ring) != LAMINAR_OK) {
    fprintf(stderr, "bench_ring: lm_ring_create(%u) failed\n", capacity);
    return -1;
  }
  pthread_t pt, ct;
  if (pthread_create(&ct, NULL, consumer, &b) != 0) {
    lm_ring_destroy(b.ring);
    return -1;
  }
  if (pthread_create(&pt, NULL, producer, &b) != 0) {
    b.items = 0;  // the consumer reads it only after go: it finishes at once
    atomic_store_explicit(&b.go, true, memory_order_release);
    pthread_join(ct, NULL);
    lm_ring_destroy(b.ring);
    return -1;
  }
  while (atomic_load_explicit(&b.ready, memory_order_acquire) < 2) cpu_relax();
  double t0 = now_s();
  atomic_store_explicit(&b.go, true, memory_order_release);
  pthread_join(pt, NULL);
  pthread_join(ct, NULL);
  double t = now_s() - t0;
  lm_ring_destroy(b.ring);
  if (!b.order_ok) {
    fprintf(stderr, "bench_ring: consumer saw items out of order\n");
    return -1;
  }
  return t;
}

static int cmp_double(const void* a, const void* b) {
  double x = *(const double*)a, y = *(const double*)b;
  return (x > y) - (x < y);
}

static int bench_mode(const char* name, uint32_t capacity, uint64_t items, bool batch,
                      bool pin) {
  double secs[RUNS];
  for (int i = 0; i < RUNS; i++) {
    secs[i] = run_once(capacity, items, batch, pin);
    if (secs[i] < 0) return 1;
  }
  double sorted[RUNS];
  memcpy(sorted, secs, sizeof secs);
  qsort(sorted, RUNS, sizeof sorted[0], cmp_double);
  double med = sorted[RUNS / 2];
  printf("%-16s median %8.1f M items/s  %6.2f ns/item   (runs:", name,
         (double)items / med / 1e6, med * 1e9 / (double)items);
  for (int i = 0; i < RUNS; i++) printf(" %.1f", (double)items / secs[i] / 1e6);
  printf(" M/s)\n");
  return 0;
}

int main(int argc, char** argv) {
  uint64_t items = 100000000;
  uint32_t capacity = 4096;
  bool pin = true;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--no-pin") == 0) {
      pin = false;
    } else if (strcmp(argv[i], "--capacity") == 0 && i + 1 < argc) {
      capacity = (uint32_t)strtoul(argv[++i], NULL, 10);
    } else {
      char* end;
      double v = strtod(argv[i], &end);  // accepts 1e8
      if (*end != '\0' || v < 1) {
        fprintf(stderr, "usage: %s [items] [--no-pin] [--capacity N]\n", argv[0]);
        return 2;
      }
      items = (uint64_t)v;
    }
  }
  long cpus = sysconf(_SC_NPROCESSORS_ONLN);
  if (cpus < 2) pin = false;
  printf("bench_ring: %llu items, capacity %u, %s, %ld CPUs online\n",
         (unsigned long long)items, capacity,
         pin ? "producer on CPU 0, consumer on CPU 1" : "unpinned", cpus);
  if (bench_mode("single push/pop", capacity, items, false, pin) != 0) return 1;
  if (bench_mode("batch 64", capacity, items, true, pin) != 0) return 1;
  return 0;
}
