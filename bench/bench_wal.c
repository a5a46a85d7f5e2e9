/*
 * bench_wal.c -- the WAL on its own (src/store): T threads each log 8192-row
 * trade batches (symbol, price, volume, ts: the W1 schema) — encode the batch
 * in the WAL's compact form (src/arrow/codec.h) in place, append, commit — with wal_mode sync (every commit waits
 * for fdatasync; concurrent commits share one: group commit) and async
 * (commits wait for the write only). Prints rows/s and MB/s per mode, I/O
 * path and thread count, and how many flushes served how many commits.
 *
 *   bench_wal [batches per thread, default 200] [dir, default /tmp]
 *
 * This is the storage layer's ceiling; the end-to-end figure with the engine
 * comes once sources write to the WAL (issue 6).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE  // mkdtemp, clock_gettime under -std=c17
#endif

#include <dirent.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "arrow/codec.h"
#include "store/wal.h"
#include "util/util.h"

#define ROWS 8192

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

typedef struct shared {
  lm_wal* wal;
  lm_batch* batch;
  int batches;
  bool sync;
  int failed;
  size_t bytes;
} shared;

static void fill_compact(void* arg, uint8_t* dst) { lm_batch_encode_compact(arg, dst); }

/* As a source logs a batch (src/db/durable.c): analyse, then encode in place. */
static void* worker(void* p) {
  shared* s = p;
  size_t bytes = 0;
  for (int i = 0; i < s->batches; i++) {
    lm_batch_plan plan;
    lm_wal_ticket t;
    if (!lm_batch_plan_compact(s->batch, &plan) ||
        lm_wal_append_fill(s->wal, 3, 0, (uint32_t)plan.size, fill_compact, &plan, &t,
                           NULL) != LAMINAR_OK ||
        lm_wal_commit(s->wal, t, s->sync, NULL) != LAMINAR_OK)
      __atomic_add_fetch(&s->failed, 1, __ATOMIC_RELAXED);
    bytes = plan.size;
    lm_batch_plan_free(&plan);
  }
  __atomic_store_n(&s->bytes, bytes, __ATOMIC_RELAXED);
  return NULL;
}

typedef struct counter {
  int syncs;
} counter;

static int count_syncs(void* arg, lm_wal_fault_op op) {
  if (op == LM_WAL_FAULT_SYNC)
    __atomic_add_fetch(&((counter*)arg)->syncs, 1, __ATOMIC_RELAXED);
  return 0;
}

static void remove_tree(const char* dir) {
  DIR* d = opendir(dir);
  struct dirent* e;
  char p[4096];
  while (d != NULL && (e = readdir(d)) != NULL) {
    if (e->d_name[0] == '.') continue;
    if (snprintf(p, sizeof p, "%s/%s", dir, e->d_name) >= (int)sizeof p) continue;
    unlink(p);
  }
  if (d != NULL) closedir(d);
  rmdir(dir);
}

int main(int argc, char** argv) {
  int batches = argc > 1 ? atoi(argv[1]) : 200;
  const char* base = argc > 2 ? argv[2] : "/tmp";
  if (batches <= 0) batches = 200;

  /* One W1 batch: 8192 trades over 50 symbols. */
  lm_schema schema;
  lm_schema_init_empty(&schema);
  lm_schema_add(&schema, "symbol", LM_TYPE_STRING, true);
  lm_schema_add(&schema, "price", LM_TYPE_DOUBLE, false);
  lm_schema_add(&schema, "volume", LM_TYPE_INT64, false);
  lm_schema_add(&schema, "ts", LM_TYPE_INT64, false);
  static char names[50][8];
  lm_str* sym = malloc(ROWS * sizeof *sym);
  double* price = malloc(ROWS * sizeof *price);
  int64_t* vol = malloc(ROWS * sizeof *vol);
  int64_t* ts = malloc(ROWS * sizeof *ts);
  for (int i = 0; i < 50; i++) snprintf(names[i], sizeof names[i], "SYM%02d", i);
  for (int64_t r = 0; r < ROWS; r++) {
    sym[r] = (lm_str){names[r % 50], 5};
    price[r] = 100.0 + (double)(r % 997) * 0.01;
    vol[r] = 1 + r % 500;
    ts[r] = 1700000000000 + r;
  }
  lm_vec cols[4] = {{LM_TYPE_STRING, ROWS, NULL, sym},
                    {LM_TYPE_DOUBLE, ROWS, NULL, price},
                    {LM_TYPE_INT64, ROWS, NULL, vol},
                    {LM_TYPE_INT64, ROWS, NULL, ts}};
  lm_batch* batch;
  if (lm_arrow_build(&schema, cols, ROWS, &batch) != LAMINAR_OK) return 1;

  int status = 0;
  static const lm_wal_io ios[] = {LM_WAL_IO_URING, LM_WAL_IO_PWRITE};
  static const int threads[] = {1, 2, 4};
  printf("# bench_wal: %d batches of %d rows per thread, dir %s\n", batches, ROWS, base);
  for (int sync = 1; sync >= 0; sync--)
    for (size_t io = 0; io < 2; io++)
      for (size_t ti = 0; ti < 3; ti++) {
        char dir[4096];
        snprintf(dir, sizeof dir, "%s/lm_bench_wal_XXXXXX", base);
        if (mkdtemp(dir) == NULL) {
          perror("mkdtemp");
          return 1;
        }
        counter syncs = {0};
        lm_wal_options o = {
            .dir = dir, .io = ios[io], .fault = count_syncs, .fault_arg = &syncs};
        lm_wal* wal;
        laminar_error err;
        if (lm_wal_open(&o, &wal, NULL, &err) != LAMINAR_OK) {
          printf("# %s: %s (skipped)\n",
                 ios[io] == LM_WAL_IO_URING ? "io_uring" : "pwrite", err.message);
          remove_tree(dir);
          continue;
        }
        int nt = threads[ti];
        shared s = {.wal = wal, .batch = batch, .batches = batches, .sync = sync};
        pthread_t th[4];
        double t0 = now_s();
        for (int i = 0; i < nt; i++) pthread_create(&th[i], NULL, worker, &s);
        for (int i = 0; i < nt; i++) pthread_join(th[i], NULL);
        if (lm_wal_close(wal, NULL) != LAMINAR_OK)
          s.failed++; /* async: the final flush */
        double secs = now_s() - t0;
        double rows = (double)ROWS * batches * nt;
        int commits = batches * nt;
        printf(
            "RESULT wal_%s_%s_t%d %.2f M rows/s %.1f MB/s %.1f B/row %d commits %d "
            "flushes%s\n",
            sync ? "sync" : "async", ios[io] == LM_WAL_IO_URING ? "uring" : "pwrite", nt,
            rows / secs / 1e6, (double)s.bytes * commits / secs / 1e6,
            (double)s.bytes / ROWS, commits, syncs.syncs, s.failed ? " FAILED" : "");
        if (s.failed) status = 1;
        remove_tree(dir);
      }
  lm_batch_unref(batch);
  lm_schema_free(&schema);
  free(sym);
  free(price);
  free(vol);
  free(ts);
  return status;
}
