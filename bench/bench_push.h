/*
 * bench_push.h -- what the C benchmarks that link the static library share:
 * exit on a failed call, and push columns into a source as one Arrow batch
 * built from them (lm_arrow_build: strings copied once, no row loop).
 */
#ifndef LM_BENCH_PUSH_H
#define LM_BENCH_PUSH_H

#include <stdio.h>
#include <stdlib.h>

#include "arrow/arrow.h"
#include "laminar.h"
#include "util/types.h"

/* Exit (status 1) naming `what` and the error when rc is not LAMINAR_OK. */
static inline void bench_check(laminar_code rc, const laminar_error* err,
                               const char* what) {
  if (rc == LAMINAR_OK) return;
  fprintf(stderr, "bench: %s: %s\n", what, err ? err->message : "");
  exit(1);
}

/* Push n rows of cols (one per field of schema) into src. */
static inline void bench_push_cols(laminar_source* src, const lm_schema* schema,
                                   const lm_vec* cols, int64_t n) {
  lm_batch* batch;
  bench_check(lm_arrow_build(schema, cols, n, &batch), NULL, "build");
  struct ArrowArray array;
  struct ArrowSchema sch;
  bench_check(lm_batch_export(batch, &array), NULL, "export");
  lm_batch_unref(batch);
  bench_check(lm_arrow_schema_export(schema, &sch), NULL, "schema");
  laminar_error err;
  bench_check(laminar_source_push(src, &array, &sch, &err), &err, "push");
  sch.release(&sch);
}

#endif /* LM_BENCH_PUSH_H */
