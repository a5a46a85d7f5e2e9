/*
 * bench_views.c -- the materialized view's state (state/rowset.h) under load,
 * through laminar.h with the inline driver: W1's trades (the bench_vwap data:
 * 100 symbols, volume 1..1000) pushed in 8192-row batches into
 *   distinct: CREATE MATERIALIZED VIEW v AS SELECT symbol, volume FROM trades
 *             (about 100,000 distinct rows: mostly weights going up)
 *   rows:     CREATE MATERIALIZED VIEW v AS SELECT symbol, price, volume, ts FROM
 *             trades (every row new: inserts, the table growing)
 *   changes:  a view over GROUP BY symbol, volume % 100 EMIT CHANGES (each
 *             change a retraction, a removal and an insert)
 * Each workload runs --reps times (default 3) on a fresh database; a run is
 * timed from the first push to the last run_until_idle; the view's row count
 * (SELECT * FROM v) is the same in every run. Prints per workload
 *   RESULT <name> median <s> s  ns/event <x>  min <s> max <s>
 *   THREADCPU <name> median <s> s ...   (the CPU time of the engine's thread)
 * (bench/interleave.sh reads the medians; LINES="RESULT THREADCPU").
 *
 *   bench_views [N rows, default 2000000] [--reps R] [--only distinct|rows|changes]
 *
 * Links the static library to build its batches without copies.
 */
#define _POSIX_C_SOURCE 200809L

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench_push.h"
#include "laminar.h"
#include "util/types.h"

#define BATCH 8192

static double clock_s(clockid_t id) {
  struct timespec t;
  clock_gettime(id, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}


static uint64_t mix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

typedef struct data {
  lm_schema schema;
  char sym[100][8];
  int64_t n;
  lm_str* syms;
  double* price;
  int64_t* volume;
  int64_t* ts;
} data;

/* The bench_vwap rows (generated once, not timed). */
static void data_init(data* d, int64_t n) {
  lm_schema_init_empty(&d->schema);
  lm_schema_add(&d->schema, "symbol", LM_TYPE_STRING, false);
  lm_schema_add(&d->schema, "price", LM_TYPE_DOUBLE, false);
  lm_schema_add(&d->schema, "volume", LM_TYPE_INT64, false);
  lm_schema_add(&d->schema, "ts", LM_TYPE_INT64, false);
  for (int i = 0; i < 100; i++) snprintf(d->sym[i], sizeof d->sym[i], "S%03d", i);
  d->n = n;
  d->syms = malloc(sizeof(lm_str) * (size_t)n);
  d->price = malloc(sizeof(double) * (size_t)n);
  d->volume = malloc(sizeof(int64_t) * (size_t)n);
  d->ts = malloc(sizeof(int64_t) * (size_t)n);
  if (!d->syms || !d->price || !d->volume || !d->ts)
    bench_check(LAMINAR_ERR_NOMEM, NULL, "data");
  for (int64_t i = 0; i < n; i++) {
    uint64_t z = mix64((uint64_t)(i + 1) * 0x9E3779B97F4A7C15ULL);
    d->syms[i] = (lm_str){d->sym[z % 100], 4};
    d->volume[i] = 1 + (int64_t)((z >> 8) % 1000);
    d->price[i] = 100 + (double)((z >> 24) % 100000) / 1000.0;
    d->ts[i] = 1700000000000LL + i;
  }
}

static void push_rows(laminar_source* src, data* d, int64_t first, int64_t n) {
  lm_vec cols[4] = {{LM_TYPE_STRING, n, NULL, d->syms + first},
                    {LM_TYPE_DOUBLE, n, NULL, d->price + first},
                    {LM_TYPE_INT64, n, NULL, d->volume + first},
                    {LM_TYPE_INT64, n, NULL, d->ts + first}};
  bench_push_cols(src, &d->schema, cols, n);
}

static const char* SOURCE =
    "CREATE SOURCE trades (symbol VARCHAR NOT NULL, price DOUBLE NOT NULL, volume BIGINT "
    "NOT NULL, ts BIGINT NOT NULL, WATERMARK FOR ts);\n";

typedef struct workload {
  const char* name;
  const char* sql;
} workload;

static const workload WORKLOADS[] = {
    {"distinct", "CREATE MATERIALIZED VIEW v AS SELECT symbol, volume FROM trades;"},
    {"rows",
     "CREATE MATERIALIZED VIEW v AS SELECT symbol, price, volume, ts FROM trades;"},
    {"changes",
     "CREATE STREAM c AS SELECT symbol, volume % 100 AS b, COUNT(*) AS n, SUM(price) AS "
     "p "
     "FROM trades GROUP BY symbol, volume % 100 EMIT CHANGES;\n"
     "CREATE MATERIALIZED VIEW v AS SELECT * FROM c;"},
};

/* One run: seconds from the first push to the last run; *cpu the calling
 * thread's CPU seconds meanwhile (the inline driver runs the graph there);
 * *rows the view's. */
static double run_once(data* d, const workload* wl, double* cpu, int64_t* rows) {
  laminar_error err;
  laminar_db* db;
  bench_check(laminar_open(NULL, &db, &err), &err, "open");
  char sql[1024];
  snprintf(sql, sizeof sql, "%s%s", SOURCE, wl->sql);
  bench_check(laminar_execute(db, sql, &err), &err, "execute");
  laminar_source* src;
  bench_check(laminar_source_open(db, "trades", &src, &err), &err, "source");
  double t0 = clock_s(CLOCK_MONOTONIC), c0 = clock_s(CLOCK_THREAD_CPUTIME_ID);
  for (int64_t at = 0; at < d->n; at += BATCH) {
    push_rows(src, d, at, d->n - at < BATCH ? d->n - at : BATCH);
    bench_check(laminar_run_until_idle(db, &err), &err, "run");
  }
  double t = clock_s(CLOCK_MONOTONIC) - t0;
  *cpu = clock_s(CLOCK_THREAD_CPUTIME_ID) - c0;
  struct ArrowArrayStream stream;
  bench_check(laminar_query(db, "SELECT * FROM v", &stream, &err), &err, "query");
  struct ArrowArray qa;
  *rows = 0;
  while (stream.get_next(&stream, &qa) == 0 && qa.release != NULL) {
    *rows += qa.length;
    qa.release(&qa);
  }
  stream.release(&stream);
  laminar_source_close(src);
  laminar_close(db);
  return t;
}

static int cmp_double(const void* a, const void* b) {
  double x = *(const double*)a, y = *(const double*)b;
  return (x > y) - (x < y);
}

int main(int argc, char** argv) {
  int64_t n = 2000000;
  int reps = 3;
  const char* only = NULL;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--reps") == 0 && i + 1 < argc) {
      reps = atoi(argv[++i]);
    } else if (strcmp(argv[i], "--only") == 0 && i + 1 < argc) {
      only = argv[++i];
    } else {
      n = (int64_t)atof(argv[i]);
    }
  }
  if (n <= 0 || reps <= 0 || reps > 100) {
    fprintf(stderr, "usage: bench_views [N] [--reps R] [--only distinct|rows|changes]\n");
    return 2;
  }
  data d;
  data_init(&d, n);
  int status = 0;
  for (size_t w = 0; w < sizeof WORKLOADS / sizeof WORKLOADS[0]; w++) {
    const workload* wl = &WORKLOADS[w];
    if (only != NULL && strcmp(only, wl->name) != 0) continue;
    double t[100], cpu[100];
    int64_t rows = 0, first_rows = -1;
    for (int r = 0; r < reps; r++) {
      t[r] = run_once(&d, wl, &cpu[r], &rows);
      if (first_rows < 0) first_rows = rows;
      if (rows <= 0 || rows != first_rows) {
        fprintf(stderr, "bench_views: %s: view rows %lld, first run %lld\n", wl->name,
                (long long)rows, (long long)first_rows);
        status = 1;
      }
    }
    qsort(t, (size_t)reps, sizeof t[0], cmp_double);
    qsort(cpu, (size_t)reps, sizeof cpu[0], cmp_double);
    double med = t[reps / 2], cmed = cpu[reps / 2];
    printf("RESULT %s median %.4f s  ns/event %.1f  min %.4f max %.4f  rows %lld\n",
           wl->name, med, med * 1e9 / (double)n, t[0], t[reps - 1], (long long)rows);
    printf("THREADCPU %s median %.4f s  ns/event %.1f  min %.4f max %.4f\n", wl->name,
           cmed, cmed * 1e9 / (double)n, cpu[0], cpu[reps - 1]);
    fflush(stdout);
  }
  lm_schema_free(&d.schema);
  free(d.syms);
  free(d.price);
  free(d.volume);
  free(d.ts);
  return status;
}
