/*
 * bench_wide_push.c -- the cost of pushing a one-row batch into a wide source,
 * by column count: laminar_source_push of a struct array of N int64 columns
 * (N = 1000, 4000, 16000), columns in the source's order and reversed (name
 * matching cannot go by position). Reports the median of the pushes' times
 * and the time per column; a push linear in the column count keeps the time
 * per column flat as N grows (a quadratic one multiplies it by N's ratio: 16x
 * from 1000 to 16000 columns).
 *
 * Usage: bench_wide_push [pushes per figure (default 21)]
 * Output: one line per (N, order): "WIDE n=<N> <order> <ms> ms/push <ns> ns/col
 * cpu <ms> ms/push <ns> ns/col", wall-clock then the pushing thread's CPU time
 * (steadier on a loaded machine).
 * Each push carries a freshly built batch (building is not timed); the
 * runtime drains the queue between pushes (not timed).
 */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L  // clock_gettime
#endif

#include "laminar.h"
#include "nanoarrow/nanoarrow.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now_s(clockid_t clock) {
  struct timespec ts;
  clock_gettime(clock, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int cmp_double(const void* a, const void* b) {
  double x = *(const double*)a, y = *(const double*)b;
  return (x > y) - (x < y);
}

/* A one-row batch of n int64 columns c0..c(n-1), in order or reversed. */
static int build(int n, int reversed, struct ArrowArray* array,
                 struct ArrowSchema* schema) {
  ArrowSchemaInit(schema);
  if (ArrowSchemaSetTypeStruct(schema, n) != NANOARROW_OK) return 1;
  char name[32];
  for (int i = 0; i < n; i++) {
    int col = reversed ? n - 1 - i : i;
    snprintf(name, sizeof name, "c%d", col);
    if (ArrowSchemaSetType(schema->children[i], NANOARROW_TYPE_INT64) != NANOARROW_OK ||
        ArrowSchemaSetName(schema->children[i], name) != NANOARROW_OK) {
      return 1;
    }
  }
  if (ArrowArrayInitFromSchema(array, schema, NULL) != NANOARROW_OK ||
      ArrowArrayStartAppending(array) != NANOARROW_OK) {
    return 1;
  }
  for (int i = 0; i < n; i++) {
    if (ArrowArrayAppendInt(array->children[i], i) != NANOARROW_OK) return 1;
  }
  if (ArrowArrayFinishElement(array) != NANOARROW_OK) return 1;
  return ArrowArrayFinishBuildingDefault(array, NULL) != NANOARROW_OK;
}

static int run(int n, int reversed, int pushes) {
  laminar_db* db;
  laminar_error err;
  if (laminar_open(NULL, &db, &err) != LAMINAR_OK) return 1;
  size_t cap = (size_t)n * 24 + 64;
  char* sql = malloc(cap);
  if (sql == NULL) return 1;
  size_t len = (size_t)snprintf(sql, cap, "CREATE SOURCE w (");
  for (int i = 0; i < n; i++) {
    len += (size_t)snprintf(sql + len, cap - len, "%sc%d BIGINT", i > 0 ? ", " : "", i);
  }
  snprintf(sql + len, cap - len, ")");
  laminar_source* src;
  if (laminar_execute(db, sql, &err) != LAMINAR_OK ||
      laminar_source_open(db, "w", &src, &err) != LAMINAR_OK) {
    fprintf(stderr, "bench_wide_push: %s\n", err.message);
    return 1;
  }
  free(sql);
  double* times = malloc(sizeof(double) * (size_t)pushes);
  double* cpu = malloc(sizeof(double) * (size_t)pushes);
  if (times == NULL || cpu == NULL) return 1;
  for (int p = 0; p < pushes; p++) {
    struct ArrowArray array;
    struct ArrowSchema schema;
    if (build(n, reversed, &array, &schema) != 0) return 1;
    double t0 = now_s(CLOCK_MONOTONIC), c0 = now_s(CLOCK_THREAD_CPUTIME_ID);
    laminar_code rc = laminar_source_push(src, &array, &schema, &err);
    times[p] = now_s(CLOCK_MONOTONIC) - t0;
    cpu[p] = now_s(CLOCK_THREAD_CPUTIME_ID) - c0;
    if (rc != LAMINAR_OK) {
      fprintf(stderr, "bench_wide_push: %s\n", err.message);
      return 1;
    }
    schema.release(&schema);
    if (laminar_run_until_idle(db, &err) != LAMINAR_OK) return 1;
  }
  qsort(times, (size_t)pushes, sizeof(double), cmp_double);
  qsort(cpu, (size_t)pushes, sizeof(double), cmp_double);
  double median = times[pushes / 2], median_cpu = cpu[pushes / 2];
  printf("WIDE n=%d %-8s %8.3f ms/push %8.1f ns/col  cpu %8.3f ms/push %8.1f ns/col\n", n,
         reversed ? "reversed" : "ordered", median * 1e3, median * 1e9 / n,
         median_cpu * 1e3, median_cpu * 1e9 / n);
  free(times);
  free(cpu);
  laminar_source_close(src);
  return laminar_close(db) != LAMINAR_OK;
}

int main(int argc, char** argv) {
  int pushes = argc > 1 ? atoi(argv[1]) : 21;
  if (pushes < 1) pushes = 1;
  const int widths[] = {1000, 4000, 16000};
  for (size_t w = 0; w < sizeof widths / sizeof widths[0]; w++) {
    for (int reversed = 0; reversed <= 1; reversed++) {
      if (run(widths[w], reversed, pushes) != 0) return 1;
    }
  }
  return 0;
}
