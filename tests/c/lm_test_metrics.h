/*
 * lm_test_metrics.h -- read one counter of laminar_metrics() in a C test; the
 * process's CPU share while a database idles.
 */
#ifndef LM_TEST_METRICS_H
#define LM_TEST_METRICS_H

#include "laminar.h"
#include "nanoarrow/nanoarrow.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

/* CPU seconds this process used so far (user + system). */
static inline double lm_test_cpu_seconds(void) {
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 +
         (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
}

/* Sleep 1 s and return the share of one CPU the process used meanwhile
 * (printed with `what`): an idle database should stay near 0. */
static inline double lm_test_idle_cpu_share(const char* what) {
  struct timespec t0, t1, one = {1, 0};
  double c0 = lm_test_cpu_seconds();
  clock_gettime(CLOCK_MONOTONIC, &t0);
  nanosleep(&one, NULL);
  double used = lm_test_cpu_seconds() - c0;
  clock_gettime(CLOCK_MONOTONIC, &t1);
  double wall = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
  printf("%s idle: %.4f s CPU over %.3f s (%.2f%%)\n", what, used, wall,
         100.0 * used / wall);
  return used / wall;
}

/* The value of (kind, name, metric) in laminar_metrics' rows, or -1. */
static inline int64_t lm_test_metric(laminar_db* db, const char* kind, const char* name,
                                     const char* what) {
  struct ArrowArrayStream st;
  laminar_error err;
  if (laminar_metrics(db, &st, &err) != LAMINAR_OK) return -1;
  struct ArrowSchema schema;
  struct ArrowArray array;
  int64_t found = -1;
  if (st.get_schema(&st, &schema) == 0) {
    while (found < 0 && st.get_next(&st, &array) == 0 && array.release != NULL) {
      struct ArrowArrayView view;
      struct ArrowError aerr;
      if (ArrowArrayViewInitFromSchema(&view, &schema, &aerr) == NANOARROW_OK &&
          ArrowArrayViewSetArray(&view, &array, &aerr) == NANOARROW_OK) {
        for (int64_t r = 0; r < array.length; r++) {
          struct ArrowStringView k = ArrowArrayViewGetStringUnsafe(view.children[0], r);
          struct ArrowStringView n = ArrowArrayViewGetStringUnsafe(view.children[1], r);
          struct ArrowStringView m = ArrowArrayViewGetStringUnsafe(view.children[2], r);
          if ((size_t)k.size_bytes == strlen(kind) &&
              memcmp(k.data, kind, strlen(kind)) == 0 &&
              (size_t)n.size_bytes == strlen(name) &&
              memcmp(n.data, name, strlen(name)) == 0 &&
              (size_t)m.size_bytes == strlen(what) &&
              memcmp(m.data, what, strlen(what)) == 0)
            found = ArrowArrayViewGetIntUnsafe(view.children[3], r);
        }
      }
      ArrowArrayViewReset(&view);
      array.release(&array);
    }
    schema.release(&schema);
  }
  st.release(&st);
  return found;
}

#endif /* LM_TEST_METRICS_H */
