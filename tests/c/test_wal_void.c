/*
 * test_wal_void.c -- a batch refused for memory is never applied twice
 * (issue 20, docs/DURABILITY.md "VOID records"). With a sync WAL a batch is
 * logged before it is processed; when its processing fails for memory it is
 * not applied and the producer pushes it again. The refused record must then
 * not be replayed: a clean reopen, a kill-style reopen (the data directory
 * copied while the database is open, nothing closed) and a read-only open
 * each hold every row once. Each allocation of the batch's processing is
 * failed in turn. Needs LAMINAR_FAULT_INJECTION.
 */
/* lm_ctest: TIMEOUT 900 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE  // mkdtemp, nftw under -std=c17 (lm_test_fs.h)
#endif
#include "lm_test.h"
#include "lm_test_fs.h"
#include "views_util.h"
#include "util/util.h"

#include <inttypes.h>
#include <stdlib.h>

#ifndef LAMINAR_FAULT_INJECTION
int main(void) {
  fprintf(stderr, "skip: built without LAMINAR_FAULT_INJECTION\n");
  return LM_TEST_SKIP;
}
#else

static const char* DDL =
    "CREATE SOURCE t (k VARCHAR, v BIGINT);"
    "CREATE MATERIALIZED VIEW mv AS SELECT k, COUNT(*) AS n, SUM(v) AS s, MAX(k) AS mk "
    "FROM t GROUP BY k";

static laminar_code open_dir(const char* dir, bool read_only, laminar_db** out,
                             laminar_error* err) {
  laminar_config* cfg = NULL;
  *out = NULL;
  laminar_code rc = laminar_config_create(&cfg);
  if (rc == LAMINAR_OK) rc = laminar_config_set(cfg, "data_dir", dir, err);
  if (rc == LAMINAR_OK)
    rc = laminar_config_set(cfg, "checkpoint_interval", "1 hour", err);
  if (rc == LAMINAR_OK) rc = laminar_config_set(cfg, "wal_mode", "sync", err);
  if (rc == LAMINAR_OK && read_only)
    rc = laminar_config_set(cfg, "read_only", "true", err);
  if (rc == LAMINAR_OK) rc = laminar_open(cfg, out, err);
  laminar_config_destroy(cfg);
  return rc;
}

/* Batch `which` (0 A, 1 B, 2 C): n rows k = "key<first + i % mod>", v = a
 * value unique to the row, so a row counted twice changes SUM(v). */
static int push_batch(laminar_source* src, int which, laminar_error* err) {
  static const int64_t first[] = {0, 300, 50}, n[] = {600, 700, 200},
                       mod[] = {600, 500, 0};
  kv_row* rows = calloc((size_t)n[which], sizeof *rows);
  char* names = calloc((size_t)n[which], 24);
  if (rows == NULL || names == NULL) return 1;
  for (int64_t i = 0; i < n[which]; i++) {
    int64_t key = first[which] + (mod[which] > 0 ? i % mod[which] : i);
    snprintf(names + i * 24, 24, "key%" PRId64, key);
    rows[i] = (kv_row){names + i * 24, which * 100000 + i, 0, 1};
  }
  int rc = push_kv(src, rows, n[which], false, err);
  free(rows);
  free(names);
  return rc;
}

/* The view as "groups,SUM(n),SUM(s)" (ad-hoc SELECTs take no aggregates). */
static int view_totals(laminar_db* db, char* out, size_t cap) {
  laminar_error err;
  size_t big = 1u << 20;
  char* text = malloc(big);
  CHECK(text != NULL);
  laminar_code rc = query_text(db, "SELECT n, s FROM mv", text, big, &err);
  if (rc != LAMINAR_OK) printf("query: %s\n", err.message);
  int64_t groups = 0, n = 0, sum = 0;
  for (char* p = text; rc == LAMINAR_OK && *p != '\0';) {
    long long a, b;
    if (sscanf(p, "%lld,%lld", &a, &b) != 2) break;
    groups++;
    n += a;
    sum += b;
    char* next = strchr(p, ';');
    if (next == NULL) break;
    p = next + 1;
  }
  free(text);
  CHECK(rc == LAMINAR_OK);
  snprintf(out, cap, "groups=%" PRId64 " n=%" PRId64 " s=%" PRId64, groups, n, sum);
  return 0;
}

/* Reopen `dir` (read-only or not) and compare its view with `want`. */
static int reopened_equals(const char* dir, bool read_only, const char* what,
                           const char* want) {
  laminar_db* db;
  laminar_error err;
  CHECK_CODE(open_dir(dir, read_only, &db, &err), LAMINAR_OK, &err);
  char got[128];
  CHECK(view_totals(db, got, sizeof got) == 0);
  if (strcmp(got, want) != 0) {
    char rep[4096];
    (void)laminar_durability_report(db, rep, sizeof rep, NULL);
    printf("%s: %s, want %s\nreport: %s\n", what, got, want, rep);
    CHECK(laminar_close(db) == LAMINAR_OK);
    return 1;
  }
  CHECK(laminar_close(db) == LAMINAR_OK);
  return 0;
}

/* Remove the checkpoint files (ckpt-*.bin) of data directory `dir`: the
 * next open falls back to the WAL from its first record. */
static int lose_checkpoints(const char* dir) {
  char path[400];
  snprintf(path, sizeof path, "%s/checkpoints", dir);
  DIR* d = opendir(path);
  CHECK(d != NULL);
  struct dirent* e;
  int removed = 0;
  while ((e = readdir(d)) != NULL) {
    if (strncmp(e->d_name, "ckpt-", 5) != 0) continue;
    char f[700];
    snprintf(f, sizeof f, "%s/%s", path, e->d_name);
    if (unlink(f) == 0) removed++;
  }
  closedir(d);
  CHECK(removed > 0);
  return 0;
}

/* A after a checkpoint (variant 1) or not (0), then B with its nth
 * allocation failing (0: none) and pushed again after a failure, then C.
 * Variant 2: a checkpoint between the failure and the retry (it covers the
 * refused record), then lost before the reopens, so they replay the whole
 * log. The live view, a kill-style copy of the directory, a clean reopen
 * and a read-only open must all hold each row once: *out the live totals. */
static int run(int64_t nth, int variant, char* out, size_t cap, bool* out_failed) {
  char dir[256], copy[300];
  CHECK(lm_test_mkdtemp(dir, sizeof dir, "ldb-void-") == 0);
  snprintf(copy, sizeof copy, "%s-kill", dir);
  laminar_db* db;
  laminar_error err;
  CHECK_CODE(open_dir(dir, false, &db, &err), LAMINAR_OK, &err);
  CHECK_CODE(laminar_execute(db, DDL, &err), LAMINAR_OK, &err);
  laminar_source* src;
  CHECK_CODE(laminar_source_open(db, "t", &src, &err), LAMINAR_OK, &err);
  CHECK(push_batch(src, 0, &err) == 0);
  CHECK_CODE(laminar_run_until_idle(db, &err), LAMINAR_OK, &err);
  if (variant == 1) CHECK_CODE(laminar_checkpoint(db, &err), LAMINAR_OK, &err);
  CHECK(push_batch(src, 1, &err) == 0); /* acknowledged: on disk */
  lm_fault_alloc_set(nth, false);
  laminar_code rc = laminar_run_until_idle(db, &err);
  *out_failed = lm_fault_alloc_failures() > 0;
  lm_fault_alloc_set(0, false);
  if (variant == 2 && rc == LAMINAR_OK) /* as the faulted runs do */
    CHECK_CODE(laminar_checkpoint(db, &err), LAMINAR_OK, &err);
  if (rc != LAMINAR_OK) {
    if (rc != LAMINAR_ERR_NOMEM) printf("allocation %" PRId64 ": %s\n", nth, err.message);
    CHECK(rc == LAMINAR_ERR_NOMEM);
    if (variant == 2) CHECK_CODE(laminar_checkpoint(db, &err), LAMINAR_OK, &err);
    CHECK(push_batch(src, 1, &err) == 0); /* the producer's retry */
    CHECK_CODE(laminar_run_until_idle(db, &err), LAMINAR_OK, &err);
  }
  CHECK(push_batch(src, 2, &err) == 0);
  CHECK_CODE(laminar_run_until_idle(db, &err), LAMINAR_OK, &err);
  CHECK(view_totals(db, out, cap) == 0);
  CHECK(lm_test_copy_tree(dir, copy) == 0); /* as a kill -9 leaves it */
  laminar_source_close(src);
  CHECK(laminar_close(db) == LAMINAR_OK);
  if (variant == 2) CHECK(lose_checkpoints(dir) == 0 && lose_checkpoints(copy) == 0);
  int bad = reopened_equals(dir, false, "clean reopen", out);
  bad |= reopened_equals(copy, false, "kill-style reopen", out);
  bad |= reopened_equals(dir, true, "read-only open", out);
  /* A second restart replays the same log again: still once. */
  bad |= reopened_equals(dir, false, "second reopen", out);
  lm_test_rmtree(dir);
  lm_test_rmtree(copy);
  if (bad) printf("variant %d, allocation %" PRId64 " failing\n", variant, nth);
  CHECK(!bad);
  return 0;
}

/* Each allocation of B's processing failed in turn, n = 1, 2, ... until B
 * goes through unfaulted: every run equals the unfaulted one. */
static int fault_each(int variant) {
  char want[128], got[128];
  bool failed;
  CHECK(run(0, variant, want, sizeof want, &failed) == 0);
  printf("variant %d unfaulted: %s\n", variant, want);
  int64_t faults = 0;
  for (int64_t nth = 1; nth < 100000; nth++) {
    CHECK(run(nth, variant, got, sizeof got, &failed) == 0);
    if (!failed) break;
    faults++;
    if (strcmp(got, want) != 0) {
      printf("allocation %" PRId64 " failing: live %s\n", nth, got);
      CHECK(0);
    }
  }
  printf("void: variant %d, %" PRId64 " allocations failed in turn, each row once\n",
         variant, faults);
  CHECK(faults > 3);
  return 0;
}

static int test_retry_replayed_once(void) { return fault_each(0); }
static int test_retry_after_checkpoint(void) { return fault_each(1); }
static int test_lost_checkpoint_between(void) { return fault_each(2); }

static const lm_test_case cases[] = {
    {"retry_replayed_once", test_retry_replayed_once},
    {"retry_after_checkpoint", test_retry_after_checkpoint},
    {"lost_checkpoint_between", test_lost_checkpoint_between},
    {NULL, NULL}};

int main(int argc, char** argv) { return lm_test_main(argc, argv, cases); }
#endif
