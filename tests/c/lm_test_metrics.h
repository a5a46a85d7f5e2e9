/*
 * lm_test_metrics.h -- read one counter of laminar_metrics() in a C test.
 */
#ifndef LM_TEST_METRICS_H
#define LM_TEST_METRICS_H

#include "laminar.h"
#include "nanoarrow/nanoarrow.h"

#include <stdint.h>
#include <string.h>

/* The value of (kind, name, metric) in laminar_metrics' rows, or -1. */
static inline int64_t lm_test_metric(laminar_db* db, const char* kind, const char* name, const char* what) {
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
          if ((size_t)k.size_bytes == strlen(kind) && memcmp(k.data, kind, strlen(kind)) == 0 &&
              (size_t)n.size_bytes == strlen(name) && memcmp(n.data, name, strlen(name)) == 0 &&
              (size_t)m.size_bytes == strlen(what) && memcmp(m.data, what, strlen(what)) == 0)
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
