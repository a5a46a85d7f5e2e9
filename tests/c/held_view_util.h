/*
 * held_view_util.h -- the changelog-view tests of aggregates (test_stats_aggs,
 * test_quantile_aggs): a (k VARCHAR, v BIGINT, _weight BIGINT) source fed
 * random inserts and retractions of the rows each key holds, a materialized
 * view `m` over it checked against the rows held after every batch, and the
 * view's exact bits across a checkpoint and a restart.
 */
#ifndef LM_TEST_HELD_VIEW_UTIL_H
#define LM_TEST_HELD_VIEW_UTIL_H

#include "lm_test.h"
#include "lm_test_durable.h"
#include "views_util.h"

#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#define NKEYS 5
#define MAXHELD 4096

static const char* const KEYS[NKEYS] = {"a", "b", "c", "d", "e"};

/* The rows a key holds (weight 1 each; nul for a NULL v). */
typedef struct held {
  int64_t v[MAXHELD];
  int nul[MAXHELD];
  int n;
} held;

/* Compares view m with the rows held: 0 when it agrees. */
typedef int (*held_check_fn)(laminar_db* db, const held* h);

/* The key index of k (one of KEYS), -1 if none. */
static inline int held_key(struct ArrowStringView k) {
  for (int i = 0; i < NKEYS; i++) {
    if ((size_t)k.size_bytes == strlen(KEYS[i]) &&
        memcmp(k.data, KEYS[i], (size_t)k.size_bytes) == 0)
      return i;
  }
  return -1;
}

/* One random batch: inserts (one in 20 NULL; values lo + [0, range)) and
 * retractions of held rows, applied to h and pushed. */
static inline int held_random_batch(laminar_source* src, held* h, uint64_t* rng,
                                    int64_t lo, int64_t range) {
  kv_row rows[64];
  int n = 1 + (int)(lm_test_rand(rng) % 64);
  for (int i = 0; i < n; i++) {
    int k = (int)(lm_test_rand(rng) % NKEYS);
    held* hk = &h[k];
    bool retract = hk->n > 0 && lm_test_rand(rng) % 10 < 4;
    if (retract || hk->n == MAXHELD) {
      int j = (int)(lm_test_rand(rng) % (uint64_t)hk->n);
      rows[i] = (kv_row){KEYS[k], hk->v[j], hk->nul[j], -1};
      hk->v[j] = hk->v[hk->n - 1];
      hk->nul[j] = hk->nul[hk->n - 1];
      hk->n--;
    } else {
      int64_t v = lo + (int64_t)(lm_test_rand(rng) % (uint64_t)range);
      int nul = lm_test_rand(rng) % 20 == 0;
      rows[i] = (kv_row){KEYS[k], v, nul, 1};
      hk->v[hk->n] = v;
      hk->nul[hk->n] = nul;
      hk->n++;
    }
  }
  laminar_error err;
  return push_kv(src, rows, n, 1, &err);
}

/* A fresh in-memory database running source_sql and view_sql, fed `nbatches`
 * random batches (values lo + [0, range)), checked after each. 0 on success. */
static inline int held_run(const char* source_sql, const char* view_sql, uint64_t* rng,
                           int64_t lo, int64_t range, int nbatches, held_check_fn check) {
  static held h[NKEYS];
  memset(h, 0, sizeof h);
  laminar_db* db;
  laminar_error err;
  CHECK_CODE(laminar_open(NULL, &db, &err), LAMINAR_OK, &err);
  CHECK_CODE(laminar_execute(db, source_sql, &err), LAMINAR_OK, &err);
  CHECK_CODE(laminar_execute(db, view_sql, &err), LAMINAR_OK, &err);
  laminar_source* src;
  CHECK_CODE(laminar_source_open(db, "t", &src, &err), LAMINAR_OK, &err);
  int rc = 0;
  for (int b = 0; b < nbatches && rc == 0; b++) {
    rc = held_random_batch(src, h, rng, lo, range);
    if (rc == 0) rc = laminar_run_until_idle(db, &err) != LAMINAR_OK;
    if (rc == 0) rc = check(db, h);
    if (rc != 0) fprintf(stderr, "batch %d (values from %lld)\n", b, (long long)lo);
  }
  laminar_source_close(src);
  laminar_close(db);
  return rc;
}

/* Render view m's rows exactly ("%a" doubles), sorted by k (the query orders). */
static inline int held_view_bits(laminar_db* db, char* out, size_t cap) {
  laminar_error err;
  struct ArrowArrayStream st;
  CHECK_CODE(laminar_query(db, "SELECT * FROM m ORDER BY k", &st, &err), LAMINAR_OK,
             &err);
  result_view rv;
  memset(&rv, 0, sizeof rv);
  out[0] = '\0';
  CHECK(st.get_schema(&st, &rv.schema) == 0);
  for (;;) {
    CHECK(st.get_next(&st, &rv.array) == 0);
    if (rv.array.release == NULL) break;
    CHECK(result_view_init(&rv) == 0);
    for (int64_t r = 0; r < rv.array.length; r++) {
      for (int64_t c = 1; c < rv.schema.n_children; c++) {
        struct ArrowArrayView* col = rv.view.children[c];
        size_t len = strlen(out);
        if (ArrowArrayViewIsNull(col, r)) {
          snprintf(out + len, cap - len, "N,");
        } else if (strcmp(rv.schema.children[c]->format, "g") == 0) {
          snprintf(out + len, cap - len, "%a,", ArrowArrayViewGetDoubleUnsafe(col, r));
        } else {
          snprintf(out + len, cap - len, "%lld,",
                   (long long)ArrowArrayViewGetIntUnsafe(col, r));
        }
      }
      strncat(out, ";", cap - strlen(out) - 1);
    }
    ArrowArrayViewReset(&rv.view);
    rv.array.release(&rv.array);
  }
  rv.schema.release(&rv.schema);
  st.release(&st);
  return 0;
}

/* 20 random batches into a durable database, a checkpoint and a close; the
 * reopened view has the same bits, and after 20 more batches still agrees
 * with the rows held. 0 on success. */
static inline int held_restart(const char* source_sql, const char* view_sql,
                               uint64_t* rng, int64_t lo, int64_t range,
                               held_check_fn check) {
  static held h[NKEYS];
  memset(h, 0, sizeof h);
  char dir[256];
  CHECK(lm_test_mkdtemp(dir, sizeof dir, "lm_held_") == 0);
  static char before[16384], after[16384];
  laminar_db* db;
  laminar_source* src;
  laminar_error err;
  CHECK_CODE(open_db(dir, "sync", &db, &err), LAMINAR_OK, &err);
  CHECK_CODE(laminar_execute(db, source_sql, &err), LAMINAR_OK, &err);
  CHECK_CODE(laminar_execute(db, view_sql, &err), LAMINAR_OK, &err);
  CHECK_CODE(laminar_source_open(db, "t", &src, &err), LAMINAR_OK, &err);
  int rc = 0;
  for (int b = 0; b < 20 && rc == 0; b++) rc = held_random_batch(src, h, rng, lo, range);
  if (rc == 0) rc = laminar_run_until_idle(db, &err) != LAMINAR_OK;
  if (rc == 0) rc = laminar_checkpoint(db, &err) != LAMINAR_OK;
  if (rc == 0) rc = held_view_bits(db, before, sizeof before);
  laminar_source_close(src);
  laminar_close(db);
  CHECK(rc == 0);
  CHECK_CODE(open_db(dir, "sync", &db, &err), LAMINAR_OK, &err);
  rc = held_view_bits(db, after, sizeof after);
  EXPECT(rc == 0 && strcmp(before, after) == 0);
  if (strcmp(before, after) != 0)
    fprintf(stderr, "before %s\nafter  %s\n", before, after);
  CHECK_CODE(laminar_source_open(db, "t", &src, &err), LAMINAR_OK, &err);
  for (int b = 0; b < 20 && rc == 0; b++) rc = held_random_batch(src, h, rng, lo, range);
  if (rc == 0) rc = laminar_run_until_idle(db, &err) != LAMINAR_OK;
  if (rc == 0) rc = check(db, h);
  laminar_source_close(src);
  laminar_close(db);
  lm_test_rmtree(dir);
  CHECK(rc == 0);
  return 0;
}

#endif /* LM_TEST_HELD_VIEW_UTIL_H */
