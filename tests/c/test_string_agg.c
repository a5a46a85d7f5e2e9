/*
 * test_string_agg.c -- STRING_AGG through laminar.h: a materialized view of
 * string_agg per key over a changelog source (random inserts and
 * retractions of rows held, NULLs, repeated values) holds, after every
 * batch, each key's non-NULL values held joined by the separator (compared
 * as a multiset: a retraction removes the latest equal copy, which leaves
 * the same multiset) and NULL for a key whose values are all NULL; the view
 * survives a checkpoint and a restart with the same bits.
 */
#include "lm_test_fs.h" /* first: _GNU_SOURCE */

#include "held_view_util.h"
#include "lm_test.h"
#include "lm_test_durable.h"
#include "views_util.h"

#include <stdlib.h>

static const char* SOURCE_SQL = "CREATE SOURCE t (k VARCHAR, v BIGINT, _weight BIGINT);";
static const char* VIEW_SQL =
    "CREATE MATERIALIZED VIEW m AS SELECT k, string_agg(CAST(v AS VARCHAR), '; ') AS l,"
    " COUNT(*) AS n FROM t GROUP BY k";

static int cmp_i64(const void* a, const void* b) {
  int64_t x = *(const int64_t*)a, y = *(const int64_t*)b;
  return (x > y) - (x < y);
}

/* The values of `s` (decimal numbers joined by "; ") into out; their count. */
static int64_t parse_values(struct ArrowStringView s, int64_t* out, int64_t cap) {
  static char text[MAXHELD * 24];
  if (s.size_bytes >= (int64_t)sizeof text) return -1;
  memcpy(text, s.data, (size_t)s.size_bytes); /* (the next row's bytes follow) */
  text[s.size_bytes] = '\0';
  int64_t n = 0;
  const char* p = text;
  const char* end = text + s.size_bytes;
  while (p < end && n < cap) {
    char* stop;
    out[n++] = strtoll(p, &stop, 10);
    p = stop;
    if (p < end) p += 2; /* "; " */
  }
  return n;
}

/* Compare view m (one row per key holding a row) with the rows held. */
static int check_view(laminar_db* db, const held* h) {
  laminar_error err;
  struct ArrowArrayStream st;
  CHECK_CODE(laminar_query(db, "SELECT * FROM m", &st, &err), LAMINAR_OK, &err);
  result_view rv;
  memset(&rv, 0, sizeof rv);
  CHECK(st.get_schema(&st, &rv.schema) == 0);
  int seen[NKEYS] = {0}, bad = 0;
  static int64_t want[MAXHELD], got[MAXHELD];
  for (;;) {
    CHECK(st.get_next(&st, &rv.array) == 0);
    if (rv.array.release == NULL) break;
    CHECK(result_view_init(&rv) == 0);
    for (int64_t r = 0; r < rv.array.length; r++) {
      int k = held_key(ArrowArrayViewGetStringUnsafe(rv.view.children[0], r));
      EXPECT(k >= 0 && !seen[k]);
      if (k < 0 || seen[k]) continue;
      seen[k] = 1;
      int64_t n = 0;
      for (int i = 0; i < h[k].n; i++) {
        if (!h[k].nul[i]) want[n++] = h[k].v[i];
      }
      qsort(want, (size_t)n, sizeof want[0], cmp_i64);
      struct ArrowArrayView* col = rv.view.children[1];
      int got_null = ArrowArrayViewIsNull(col, r);
      int64_t m = got_null ? 0
                           : parse_values(ArrowArrayViewGetStringUnsafe(col, r), got,
                                          MAXHELD);
      qsort(got, (size_t)m, sizeof got[0], cmp_i64);
      int ok = got_null == (n == 0) && m == n &&
               memcmp(got, want, sizeof got[0] * (size_t)n) == 0 &&
               ArrowArrayViewGetIntUnsafe(rv.view.children[2], r) == h[k].n;
      if (!ok && bad++ < 5) {
        fprintf(stderr, "key %s: %lld values (%s), want %lld of %d rows\n", KEYS[k],
                (long long)m, got_null ? "NULL" : "not NULL", (long long)n, h[k].n);
      }
    }
    ArrowArrayViewReset(&rv.view);
    rv.array.release(&rv.array);
  }
  rv.schema.release(&rv.schema);
  st.release(&st);
  for (int k = 0; k < NKEYS; k++) {
    if (seen[k] != (h[k].n > 0) && bad++ < 5)
      fprintf(stderr, "key %s: row %s, %d rows held\n", KEYS[k],
              seen[k] ? "present" : "missing", h[k].n);
  }
  return bad == 0 ? 0 : 1;
}

static int test_retractions_keep_the_values(void) {
  uint64_t rng = lm_test_seed();
  /* values in [-20, 20] (many repeats), then in [-1e6, 1e6] (few) */
  CHECK(held_run(SOURCE_SQL, VIEW_SQL, &rng, -20, 41, 60, check_view) == 0);
  CHECK(held_run(SOURCE_SQL, VIEW_SQL, &rng, -1000000, 2000001, 60, check_view) == 0);
  return 0;
}

static int test_restart_keeps_the_values(void) {
  uint64_t rng = lm_test_seed() ^ 0x5eed;
  CHECK(held_restart(SOURCE_SQL, VIEW_SQL, &rng, -50, 101, check_view) == 0);
  return 0;
}

int main(int argc, char** argv) {
  static const lm_test_case cases[] = {
      {"retractions_keep_the_values", test_retractions_keep_the_values},
      {"restart_keeps_the_values", test_restart_keeps_the_values},
      {NULL, NULL},
  };
  return lm_test_main(argc, argv, cases);
}
