/*
 * bench_checkpoint.c -- what a checkpoint costs the running graph (issue 6):
 * open windows hold N groups (a string key and four aggregates); a checkpoint
 * is taken and timed as a whole and for its stall, the time the graph stays
 * stopped while operator state is copied into memory (the rest — writing,
 * flushing, renaming, publishing — runs with the graph going again). A full
 * copy, not incremental or copy-on-write: the stall grows with the state.
 *
 *   bench_checkpoint [max groups, default 4000000]
 *
 * Links the static library to read the stall (src/db/durable.h).
 */
#define _POSIX_C_SOURCE 200809L

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "arrow/arrow.h"
#include "db/internal.h"
#include "util/util.h"

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static void check(laminar_code rc, const laminar_error* err, const char* what) {
  if (rc == LAMINAR_OK) return;
  fprintf(stderr, "bench_checkpoint: %s: %s\n", what, err ? err->message : "");
  exit(1);
}

/* Push rows [first, first + n) with distinct keys "key-<i>". */
static void push_keys(laminar_source* src, const lm_schema* schema, int64_t first, int64_t n) {
  char* text = malloc((size_t)n * 16);
  lm_str* keys = malloc((size_t)n * sizeof *keys);
  double* v = malloc((size_t)n * sizeof *v);
  int64_t* ts = malloc((size_t)n * sizeof *ts);
  for (int64_t i = 0; i < n; i++) {
    int len = snprintf(text + 16 * i, 16, "key-%lld", (long long)(first + i));
    keys[i] = (lm_str){text + 16 * i, len};
    v[i] = (double)(i % 1000);
    ts[i] = 1000;
  }
  lm_vec cols[3] = {{LM_TYPE_STRING, n, NULL, keys}, {LM_TYPE_DOUBLE, n, NULL, v},
                    {LM_TYPE_INT64, n, NULL, ts}};
  lm_batch* batch;
  check(lm_arrow_build(schema, cols, n, &batch), NULL, "build");
  struct ArrowArray array;
  struct ArrowSchema sch;
  check(lm_batch_export(batch, &array), NULL, "export");
  lm_batch_unref(batch);
  check(lm_arrow_schema_export(schema, &sch), NULL, "schema");
  laminar_error err;
  check(laminar_source_push(src, &array, &sch, &err), &err, "push");
  sch.release(&sch);
  free(text);
  free(keys);
  free(v);
  free(ts);
}

int main(int argc, char** argv) {
  int64_t max = argc > 1 ? (int64_t)strtod(argv[1], NULL) : 4000000;
  lm_schema schema;
  lm_schema_init_empty(&schema);
  lm_schema_add(&schema, "k", LM_TYPE_STRING, false);
  lm_schema_add(&schema, "v", LM_TYPE_DOUBLE, false);
  lm_schema_add(&schema, "ts", LM_TYPE_INT64, false);
  for (int64_t groups = 100000; groups <= max; groups *= 4) {
    char dir[] = "/tmp/lm_bench_ckpt_XXXXXX";
    if (mkdtemp(dir) == NULL) return 1;
    laminar_config* c;
    laminar_error err;
    laminar_db* db;
    laminar_source* src;
    check(laminar_config_create(&c), NULL, "config");
    check(laminar_config_set(c, "data_dir", dir, &err), &err, "data_dir");
    check(laminar_config_set(c, "checkpoint_interval", "1 hour", &err), &err, "interval");
    check(laminar_open(c, &db, &err), &err, "open");
    laminar_config_destroy(c);
    check(laminar_execute(db,
                          "CREATE SOURCE t (k VARCHAR, v DOUBLE, ts BIGINT, WATERMARK FOR ts AS ts);"
                          "CREATE STREAM s AS SELECT k, COUNT(*) AS n, SUM(v) AS total, MIN(v) AS lo,"
                          " MAX(v) AS hi FROM t GROUP BY k, tumble(ts, INTERVAL '1' DAY)",
                          &err),
          &err, "DDL");
    check(laminar_source_open(db, "t", &src, &err), &err, "source");
    for (int64_t at = 0; at < groups; at += 65536) {
      push_keys(src, &schema, at, groups - at < 65536 ? groups - at : 65536);
      check(laminar_run_until_idle(db, &err), &err, "run");
    }
    double t0 = now_s();
    check(laminar_checkpoint(db, &err), &err, "checkpoint");
    double total = now_s() - t0;
    double stall = (double)lm_durable_last_stall_ns(db->dur) * 1e-9;
    printf("RESULT checkpoint groups=%lld total=%.3f s stall=%.3f s (%.0f ns/group in the stall)\n",
           (long long)groups, total, stall, stall * 1e9 / (double)groups);
    fflush(stdout);
    laminar_source_close(src);
    laminar_close(db);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", dir);
  }
  lm_schema_free(&schema);
  return 0;
}
