/*
 * bench_util.h -- what the end-to-end C benchmarks that use laminar.h alone share
 * (bench_asof.c, bench_lookup.c): wall and process CPU clocks, the data generators'
 * mixer, an allocation that exits when out of memory, and the comparison of doubles
 * for qsort (medians, percentiles); the struct schema of a pushed batch and the release
 * callback of the children of a batch whose root's release frees them.
 */
#ifndef LM_BENCH_UTIL_H
#define LM_BENCH_UTIL_H

#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <stdlib.h>
#include <time.h>

#include "laminar.h"

/* Monotonic wall time, seconds. */
static inline double bench_now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* CPU time of this process (a loaded machine stretches wall time, not this). */
static inline double bench_cpu_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* splitmix64's finalizer: the mixer of every workload's data (docs/BENCHMARKS.md). */
static inline uint64_t bench_mix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

/* malloc that exits (status 1) when out of memory; n == 0 allocates 1 byte. */
static inline void* bench_xmalloc(size_t n) {
  void* p = malloc(n ? n : 1);
  if (p == NULL) {
    fprintf(stderr, "bench: out of memory\n");
    exit(1);
  }
  return p;
}

/* qsort's comparison of two doubles, ascending. */
static inline int bench_cmpd(const void* x, const void* y) {
  double a = *(const double*)x, b = *(const double*)y;
  return (a > b) - (a < b);
}

/* The release of a child of a batch whose root frees everything. */
static inline void bench_child_release(struct ArrowArray* a) { a->release = NULL; }

#define BENCH_MAXCOLS 8

/* A struct schema of up to BENCH_MAXCOLS named children (static strings), on the
 * stack: borrowed by laminar_source_push and laminar_table_upsert, never freed. */
typedef struct bench_schema {
  struct ArrowSchema root;
  struct ArrowSchema child[BENCH_MAXCOLS];
  struct ArrowSchema* child_ptr[BENCH_MAXCOLS];
} bench_schema;

static inline void bench_schema_release(struct ArrowSchema* s) { s->release = NULL; }

/* ncols (<= BENCH_MAXCOLS) children names[c] of Arrow format formats[c]. */
static inline void bench_schema_init(bench_schema* s, const char* const* names,
                                     const char* const* formats, int ncols) {
  for (int c = 0; c < ncols; c++) {
    s->child[c] = (struct ArrowSchema){
        .format = formats[c], .name = names[c], .release = bench_schema_release};
    s->child_ptr[c] = &s->child[c];
  }
  s->root = (struct ArrowSchema){.format = "+s",
                                 .name = "",
                                 .n_children = ncols,
                                 .children = s->child_ptr,
                                 .release = bench_schema_release};
}

#endif /* LM_BENCH_UTIL_H */
