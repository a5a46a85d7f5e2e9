/*
 * bench_latency.c -- end-to-end latency of the streaming runtime (issue 5):
 * push of a 1-row batch -> the subscriber has it, at a steady event rate,
 * through laminar.h (CREATE SOURCE ... WITH (wait_strategy = ...), a
 * pass-through stream, laminar_subscribe_with(wait_strategy = ...)).
 *
 * Method. Event i is scheduled at t0 + i / rate. One application thread
 * builds event i's 1-row Arrow batch ahead of time, waits (busy) for its
 * scheduled time, pushes it, then waits (with the subscription's strategy)
 * until the batch comes out of laminar_subscription_next; the reactor runs
 * on its own thread between the two. Latency = receive time - scheduled time,
 * so an event pushed late because the previous one was slow counts its delay
 * (no coordinated omission). Every event's latency is kept and sorted (the
 * exact distribution, no sampling). A warm-up of 10,000
 * events is not recorded.
 *
 * Usage: bench_latency [--rate N (default 100000)] [--seconds S (default 3)]
 *                      [--strategy floor|spin|park|spin_yield(n)|all (default all)]
 *                      [--runs R (default 3)]
 *        bench_latency --inline   (the same work in one thread, per stage)
 * --strategy floor (also part of "all") runs the same schedule without the
 * engine: the application thread hands event i to a second thread through one
 * atomic word and spins until that thread echoes it back (both spin). It is
 * this machine's floor for a 2-thread hand-off, as limit_vwap is for
 * throughput: the engine's spin figures are reported beside it.
 * Prints per run p50/p99/p99.9/max, then "RESULT latency <strategy> ..." with
 * the median of each figure over the runs. Target (issue 5): p99 < 5 us with spin.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE  // clock_gettime
#endif

#include "laminar.h"
#include "nanoarrow/nanoarrow.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include <time.h>

enum { WARMUP = 10000, MAX_RUNS = 9 };

static int64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* Every event's latency (ns), sorted at the end: the exact distribution. */
typedef struct hist {
  int64_t* v;
  uint64_t n, cap;
} hist;

static int hist_add(hist* h, int64_t ns) {
  if (h->n == h->cap) {
    uint64_t cap = h->cap ? h->cap * 2 : 1u << 20;
    int64_t* grown = realloc(h->v, cap * sizeof *grown);
    if (grown == NULL) return 1;
    h->v = grown;
    h->cap = cap;
  }
  h->v[h->n++] = ns;
  return 0;
}

static int cmp_i64(const void* a, const void* b) {
  int64_t x = *(const int64_t*)a, y = *(const int64_t*)b;
  return (x > y) - (x < y);
}

/* Nearest-rank quantile of the sorted samples. */
static int64_t hist_quantile(const hist* h, double q) {
  uint64_t k = (uint64_t)(q * (double)h->n);
  return h->v[k >= h->n ? h->n - 1 : k];
}

static int one_row(const struct ArrowSchema* schema, int64_t seq,
                   struct ArrowArray* out) {
  struct ArrowError e;
  if (ArrowArrayInitFromSchema(out, schema, &e) != NANOARROW_OK) return 1;
  if (ArrowArrayStartAppending(out) != NANOARROW_OK ||
      ArrowArrayAppendInt(out->children[0], seq) != NANOARROW_OK ||
      ArrowArrayFinishElement(out) != NANOARROW_OK ||
      ArrowArrayFinishBuildingDefault(out, &e) != NANOARROW_OK) {
    out->release(out);
    return 1;
  }
  return 0;
}

typedef struct figures {
  double p50, p99, p999, max, achieved_rate;
} figures;

/* One way of carrying event i from the application thread to the receiver
 * and back: `prepare` runs before the event's due time (untimed), `trip`
 * from the due time until the event is back. */
typedef struct carrier {
  int (*prepare)(void* ctx, int64_t i);
  int (*trip)(void* ctx, int64_t i);
  void* ctx;
} carrier;

/* The schedule and the histogram, shared by the engine and the floor. */
static int measure(const char* label, const carrier* c, double rate, double seconds,
                   figures* out) {
  hist h = {0};
  int64_t events = WARMUP + (int64_t)(rate * seconds);
  double period = 1e9 / rate;
  int64_t t0 = now_ns() + 1000000;
  int rc = 0;
  for (int64_t i = 0; i < events && rc == 0; i++) {
    if (c->prepare != NULL && c->prepare(c->ctx, i) != 0) {
      rc = 1;
      break;
    }
    int64_t due = t0 + (int64_t)((double)i * period);
    while (now_ns() < due) {
    }
    if (c->trip(c->ctx, i) != 0) {
      rc = 1;
      break;
    }
    int64_t done = now_ns();
    if (i >= WARMUP && hist_add(&h, done - due) != 0) rc = 1;
  }
  double wall = (double)(now_ns() - t0) / 1e9;
  if (rc != 0 || h.n == 0) {
    free(h.v);
    return 1;
  }
  qsort(h.v, h.n, sizeof *h.v, cmp_i64);
  out->p50 = (double)hist_quantile(&h, 0.50) / 1000.0;
  out->p99 = (double)hist_quantile(&h, 0.99) / 1000.0;
  out->p999 = (double)hist_quantile(&h, 0.999) / 1000.0;
  out->max = (double)h.v[h.n - 1] / 1000.0;
  out->achieved_rate = (double)events / wall;
  printf(
      "  %-16s events=%llu rate=%.0f/s  p50=%.2f us  p99=%.2f us  p99.9=%.2f us  "
      "max=%.1f us\n",
      label, (unsigned long long)h.n, out->achieved_rate, out->p50, out->p99, out->p999,
      out->max);
  free(h.v);
  return 0;
}

/* ---- through the engine ---------------------------------------------------- */

typedef struct engine_ctx {
  laminar_source* src;
  laminar_subscription* sub;
  struct ArrowSchema schema;
  struct ArrowArray arr; /* event i's batch, built by prepare */
} engine_ctx;

static int engine_prepare(void* p, int64_t i) {
  engine_ctx* e = p;
  return one_row(&e->schema, i, &e->arr);
}

static int engine_trip(void* p, int64_t i) {
  (void)i;
  engine_ctx* e = p;
  laminar_error err;
  if (laminar_source_push(e->src, &e->arr, &e->schema, &err) != LAMINAR_OK) {
    fprintf(stderr, "push: %s\n", err.message);
    e->arr.release(&e->arr);
    return 1;
  }
  struct ArrowArray got;
  if (laminar_subscription_next(e->sub, -1, &got, NULL, &err) != LAMINAR_OK ||
      got.release == NULL) {
    fprintf(stderr, "next: %s\n", err.message);
    return 1;
  }
  got.release(&got);
  return 0;
}

static int run_engine(const char* strategy, double rate, double seconds, figures* out) {
  laminar_db* db;
  laminar_error err;
  if (laminar_open(NULL, &db, &err) != LAMINAR_OK) return 1;
  char sql[256], opts[96];
  snprintf(sql, sizeof sql,
           "CREATE SOURCE t (seq BIGINT NOT NULL) WITH (wait_strategy = '%s', "
           "buffer_size = 1024); CREATE STREAM s AS SELECT seq FROM t",
           strategy);
  snprintf(opts, sizeof opts, "wait_strategy = '%s', buffer_size = 1024", strategy);
  engine_ctx e = {0};
  if (laminar_execute(db, sql, &err) != LAMINAR_OK ||
      laminar_source_open(db, "t", &e.src, &err) != LAMINAR_OK ||
      laminar_subscribe_with(db, "s", opts, &e.sub, &err) != LAMINAR_OK ||
      laminar_start(db, &err) != LAMINAR_OK) {
    fprintf(stderr, "setup: %s\n", err.message);
    laminar_close(db);
    return 1;
  }
  ArrowSchemaInit(&e.schema);
  ArrowSchemaSetTypeStruct(&e.schema, 1);
  ArrowSchemaSetType(e.schema.children[0], NANOARROW_TYPE_INT64);
  ArrowSchemaSetName(e.schema.children[0], "seq");
  carrier c = {engine_prepare, engine_trip, &e};
  int rc = measure(strategy, &c, rate, seconds, out);
  e.schema.release(&e.schema);
  laminar_close(db);
  return rc;
}

/* ---- the floor: one atomic word each way, both threads spinning ------------- */

typedef struct floor_ctx {
  _Alignas(64) _Atomic int64_t req; /* event number + 1; -1 stops the echo thread */
  _Alignas(64) _Atomic int64_t ack; /* the echoed event number + 1 */
} floor_ctx;

static void* floor_echo(void* p) {
  floor_ctx* f = p;
  int64_t seen = 0;
  for (;;) {
    int64_t r = atomic_load_explicit(&f->req, memory_order_acquire);
    if (r == -1) return NULL;
    if (r != seen) {
      seen = r;
      atomic_store_explicit(&f->ack, r, memory_order_release);
    }
  }
}

static int floor_trip(void* p, int64_t i) {
  floor_ctx* f = p;
  atomic_store_explicit(&f->req, i + 1, memory_order_release);
  while (atomic_load_explicit(&f->ack, memory_order_acquire) != i + 1) {
  }
  return 0;
}

static int run_floor(double rate, double seconds, figures* out) {
  static floor_ctx f; /* static: aligned storage without aligned_alloc */
  atomic_store(&f.req, 0);
  atomic_store(&f.ack, 0);
  pthread_t t;
  if (pthread_create(&t, NULL, floor_echo, &f) != 0) return 1;
  carrier c = {NULL, floor_trip, &f};
  int rc = measure("floor", &c, rate, seconds, out);
  atomic_store_explicit(&f.req, -1, memory_order_release);
  pthread_join(t, NULL);
  return rc;
}

static int run_once(const char* strategy, double rate, double seconds, figures* out) {
  if (strcmp(strategy, "floor") == 0) return run_floor(rate, seconds, out);
  return run_engine(strategy, rate, seconds, out);
}

/* --inline: the work of one event without threads -- push, the operators
 * (laminar_run_until_idle), laminar_subscription_next -- as mean ns per stage:
 * the floor of the threaded latency when every thread has a core. */
static int run_inline(int64_t events) {
  laminar_db* db;
  laminar_error err;
  laminar_source* src;
  laminar_subscription* sub;
  if (laminar_open(NULL, &db, &err) != LAMINAR_OK) return 1;
  if (laminar_execute(db,
                      "CREATE SOURCE t (seq BIGINT NOT NULL); "
                      "CREATE STREAM s AS SELECT seq FROM t",
                      &err) != LAMINAR_OK ||
      laminar_source_open(db, "t", &src, &err) != LAMINAR_OK ||
      laminar_subscribe(db, "s", &sub, &err) != LAMINAR_OK) {
    laminar_close(db);
    return 1;
  }
  struct ArrowSchema schema;
  ArrowSchemaInit(&schema);
  ArrowSchemaSetTypeStruct(&schema, 1);
  ArrowSchemaSetType(schema.children[0], NANOARROW_TYPE_INT64);
  ArrowSchemaSetName(schema.children[0], "seq");
  int64_t t_build = 0, t_push = 0, t_run = 0, t_next = 0;
  int rc = 0;
  for (int64_t i = 0; i < events && rc == 0; i++) {
    int64_t a = now_ns();
    struct ArrowArray arr, got;
    if (one_row(&schema, i, &arr) != 0) rc = 1;
    int64_t b = now_ns();
    if (rc == 0 && laminar_source_push(src, &arr, &schema, &err) != LAMINAR_OK) rc = 1;
    int64_t c = now_ns();
    if (rc == 0 && laminar_run_until_idle(db, &err) != LAMINAR_OK) rc = 1;
    int64_t d = now_ns();
    if (rc == 0 && (laminar_subscription_next(sub, 0, &got, NULL, &err) != LAMINAR_OK ||
                    got.release == NULL)) {
      rc = 1;
    }
    int64_t e = now_ns();
    if (rc == 0) got.release(&got);
    t_build += b - a;
    t_push += c - b;
    t_run += d - c;
    t_next += e - d;
  }
  schema.release(&schema);
  laminar_close(db);
  if (rc != 0) return rc;
  double n = (double)events;
  printf(
      "RESULT latency inline per event: build %.0f ns, push %.0f ns, operators %.0f ns, "
      "next %.0f ns; push..next %.0f ns\n",
      (double)t_build / n, (double)t_push / n, (double)t_run / n, (double)t_next / n,
      (double)(t_push + t_run + t_next) / n);
  return 0;
}

static int cmp_double(const void* a, const void* b) {
  double x = *(const double*)a, y = *(const double*)b;
  return (x > y) - (x < y);
}

static double median(double* v, int n) {
  qsort(v, (size_t)n, sizeof *v, cmp_double);
  return v[n / 2];
}

int main(int argc, char** argv) {
  double rate = 100000, seconds = 3;
  int runs = 3;
  const char* which = "all";
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--rate") == 0 && i + 1 < argc) {
      rate = atof(argv[++i]);
    } else if (strcmp(argv[i], "--seconds") == 0 && i + 1 < argc) {
      seconds = atof(argv[++i]);
    } else if (strcmp(argv[i], "--strategy") == 0 && i + 1 < argc) {
      which = argv[++i];
    } else if (strcmp(argv[i], "--runs") == 0 && i + 1 < argc) {
      runs = atoi(argv[++i]);
    } else if (strcmp(argv[i], "--inline") == 0) {
      return run_inline(200000);
    } else {
      fprintf(
          stderr,
          "usage: bench_latency [--rate N] [--seconds S] [--strategy S|all] [--runs R] | "
          "--inline\n");
      return 2;
    }
  }
  if (runs < 1 || runs > MAX_RUNS || rate <= 0 || seconds <= 0) return 2;
  const char* all[] = {"floor", "spin", "park"};
  const char* one[] = {which};
  bool every = strcmp(which, "all") == 0;
  const char** list = every ? all : one;
  int nlist = every ? 3 : 1;
  for (int k = 0; k < nlist; k++) {
    double p50[MAX_RUNS], p99[MAX_RUNS], p999[MAX_RUNS], mx[MAX_RUNS];
    for (int r = 0; r < runs; r++) {
      figures f;
      if (run_once(list[k], rate, seconds, &f) != 0) return 1;
      p50[r] = f.p50;
      p99[r] = f.p99;
      p999[r] = f.p999;
      mx[r] = f.max;
    }
    printf(
        "RESULT latency %s rate=%.0f/s median of %d: p50=%.2f us p99=%.2f us "
        "p99.9=%.2f us max=%.1f us\n",
        list[k], rate, runs, median(p50, runs), median(p99, runs), median(p999, runs),
        median(mx, runs));
  }
  return 0;
}
