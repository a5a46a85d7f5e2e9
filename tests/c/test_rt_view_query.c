/*
 * test_rt_view_query.c -- ad-hoc SELECT over a materialized view while the
 * reactor runs and a producer thread pushes: every result is a consistent
 * snapshot (the state between two whole batches, never half of one). Runs
 * under TSan in the test command (scripts/test.sh: test_rt_*).
 *
 * The producer moves all K keys of a changelog source from version i-1 to i
 * in each batch (K retractions, K insertions). A consistent snapshot holds
 * exactly K rows, all of one version; versions never go back between queries.
 */
/* lm_ctest: LABELS unit concurrency TIMEOUT 120 */
#include "lm_test.h"
#include "views_util.h"

#include <pthread.h>

#define KEYS 8
#define BATCHES 1500

static const char* key_names[KEYS] = {"k0", "k1", "k2", "k3", "k4", "k5", "k6", "k7"};

typedef struct producer {
  laminar_source* src;
  int failed;
} producer;

static void* produce(void* arg) {
  producer* p = arg;
  laminar_error err;
  for (int64_t i = 1; i <= BATCHES && !p->failed; i++) {
    kv_row rows[2 * KEYS];
    for (int k = 0; k < KEYS; k++) {
      rows[2 * k] = (kv_row){key_names[k], i - 1, 0, -1};
      rows[2 * k + 1] = (kv_row){key_names[k], i, 0, 1};
    }
    if (push_kv(p->src, rows, 2 * KEYS, 1, &err) != 0) {
      fprintf(stderr, "push %lld failed: %s\n", (long long)i, err.message);
      p->failed = 1;
    }
  }
  return NULL;
}

/* Parse "k0,V;k1,V;..." and check it is one version for all KEYS keys. */
static int64_t version_of(const char* text) {
  int64_t version = -1;
  int rows = 0;
  const char* p = text;
  while (*p != '\0') {
    char key[8];
    long long v;
    int used;
    if (sscanf(p, "%7[^,],%lld%n", key, &v, &used) != 2) return -2;
    if (strcmp(key, key_names[rows % KEYS]) != 0) return -3;
    if (version >= 0 && v != version) return -4;
    version = v;
    rows++;
    p += used;
    if (*p == ';') p++;
  }
  return rows == KEYS ? version : -5;
}

static int test_select_sees_whole_batches(void) {
  laminar_db* db;
  laminar_error err;
  laminar_config* cfg;
  CHECK_CODE(laminar_config_create(&cfg), LAMINAR_OK, NULL);
  CHECK_CODE(laminar_config_set(cfg, "buffer_size", "64", &err), LAMINAR_OK, &err);
  CHECK_CODE(laminar_open(cfg, &db, &err), LAMINAR_OK, &err);
  laminar_config_destroy(cfg);
  CHECK_CODE(laminar_execute(db,
                             "CREATE SOURCE cl (k VARCHAR, v BIGINT, _weight BIGINT);"
                             "CREATE MATERIALIZED VIEW mv AS SELECT k, v FROM cl",
                             &err),
             LAMINAR_OK, &err);
  producer p = {NULL, 0};
  CHECK_CODE(laminar_source_open(db, "cl", &p.src, &err), LAMINAR_OK, &err);
  kv_row first[KEYS];
  for (int k = 0; k < KEYS; k++) first[k] = (kv_row){key_names[k], 0, 0, 1};
  CHECK(push_kv(p.src, first, KEYS, 1, &err) == 0);
  CHECK_CODE(laminar_run_until_idle(db, &err), LAMINAR_OK, &err);
  CHECK_CODE(laminar_start(db, &err), LAMINAR_OK, &err);
  pthread_t thread;
  CHECK(pthread_create(&thread, NULL, produce, &p) == 0);
  int64_t last = 0, queries = 0, changes = 0;
  static char text[8192];
  while (last < BATCHES && !p.failed) {
    laminar_code rc =
        query_text(db, "SELECT k, v FROM mv ORDER BY k", text, sizeof text, &err);
    if (rc != LAMINAR_OK) {
      fprintf(stderr, "query failed: %s\n", err.message);
      break;
    }
    int64_t v = version_of(text);
    if (v < last) {
      fprintf(stderr, "inconsistent or stale snapshot after version %lld: '%s'\n",
              (long long)last, text);
      break;
    }
    changes += v > last;
    last = v;
    queries++;
  }
  pthread_join(thread, NULL);
  CHECK_CODE(laminar_stop(db, &err), LAMINAR_OK, &err);
  CHECK(!p.failed);
  CHECK(last == BATCHES);
  CHECK_CODE(query_text(db, "SELECT k, v FROM mv ORDER BY k", text, sizeof text, &err),
             LAMINAR_OK, &err);
  EXPECT(version_of(text) == BATCHES);
  EXPECT(stream_metric(db, "mv", "retract_errors") == 0);
  fprintf(stderr, "queries=%lld distinct versions seen=%lld\n", (long long)queries,
          (long long)changes);
  laminar_source_close(p.src);
  laminar_close(db);
  return 0;
}

static const lm_test_case cases[] = {
    {"select_sees_whole_batches", test_select_sees_whole_batches}, {NULL, NULL}};

int main(int argc, char** argv) { return lm_test_main(argc, argv, cases); }
