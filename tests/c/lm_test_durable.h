/*
 * lm_test_durable.h -- the durable pipeline the durability and crash tests
 * share: a windowed VWAP stream, a stream cascaded from it, a file sink on
 * each, a deterministic input of NBATCH batches, and the committed output of
 * the sinks read back (lines sorted: epoch boundaries depend on timing,
 * RELIABILITY "equal output").
 */
#ifndef LM_TEST_DURABLE_H
#define LM_TEST_DURABLE_H

#include <dirent.h>
#include <sys/stat.h>

#include "arrow_build.h"
#include "lm_test.h"
#include "lm_test_fs.h"

static const char* DDL =
    "CREATE SOURCE trades (symbol VARCHAR NOT NULL, price DOUBLE, volume BIGINT, ts "
    "BIGINT,\n"
    "  WATERMARK FOR ts AS ts - INTERVAL '100' MILLISECOND);\n"
    "CREATE STREAM vwap AS SELECT symbol, window_start, SUM(price * volume) / "
    "SUM(volume) AS vwap,\n"
    "  COUNT(*) AS n FROM trades GROUP BY symbol, tumble(ts, INTERVAL '1' SECOND);\n"
    "CREATE STREAM busy AS SELECT symbol, window_start, vwap, n FROM vwap WHERE n >= "
    "12;\n"
    "CREATE MATERIALIZED VIEW busiest AS SELECT symbol, window_start, n FROM busy WHERE "
    "n >= 13;\n"
    "CREATE STREAM hopping AS SELECT symbol, window_start, COUNT(*) AS n, MAX(price) AS "
    "hi\n"
    "  FROM trades GROUP BY symbol, hop(ts, INTERVAL '2' SECOND, INTERVAL '500' "
    "MILLISECOND);\n"
    "CREATE STREAM bursts AS SELECT symbol, window_start, window_end, COUNT(*) AS n,\n"
    "  FIRST_VALUE(price) AS first_price FROM trades GROUP BY symbol, session(ts, "
    "INTERVAL '70' MILLISECOND);\n"
    "CREATE STREAM running AS SELECT symbol, COUNT(*) AS n, SUM(volume) AS v,\n"
    "  COUNT(DISTINCT volume) AS dv FROM trades GROUP BY symbol EMIT CHANGES;\n"
    "CREATE STREAM fills AS SELECT symbol, window_start, COUNT(*) AS n FROM trades\n"
    "  GROUP BY symbol, tumble(ts, INTERVAL '500' MILLISECOND) WITH (late_output = "
    "true);\n";

#define NBATCH 40
#define ROWS 50

/* Batch b of the deterministic input, as an Arrow array (returns 0, or -1):
 * 4 symbols, time moving forward with a little disorder inside the watermark
 * delay; the last row of every fifth batch is 2.5 s behind, late for every
 * window (fills_late receives it). */
static inline int trades_batch(int64_t b, struct ArrowArray* array,
                               struct ArrowSchema* schema) {
  trade_row rows[ROWS];
  static const char* syms[] = {"AAPL", "MSFT", "M\xc3\xbcnchen", "X"};
  for (int i = 0; i < ROWS; i++) {
    int64_t k = b * ROWS + i;
    rows[i] = (trade_row){syms[k % 4], 10.0 + (double)(k % 13) * 0.5, false, 1 + k % 7,
                          false,       1000 + k * 20 - (k % 3) * 30};
  }
  if (b % 5 == 2) rows[ROWS - 1].ts -= 2500;
  return build_trades(rows, ROWS, b % 2 == 1, array, schema) != 0 ? -1 : 0;
}

static inline int push_batch(laminar_source* src, int64_t b, laminar_error* err) {
  struct ArrowArray array;
  struct ArrowSchema schema;
  if (trades_batch(b, &array, &schema) != 0) return -1;
  laminar_code rc = laminar_source_push(src, &array, &schema, err);
  if (array.release != NULL) array.release(&array);
  schema.release(&schema);
  return (int)rc;
}

/* Two sources' input (test_durable_union.c, test_join_asof.c): batch i of
 * source `which` (0: a, 1: b): a is trades_batch's input; b the
 * same symbols 1.5 s ahead in time, other volumes, its own disorder, and in
 * every odd batch a last row 1.7 s behind, its window closed by b's watermark, not by the
 * stream's (a's, behind) -- a restore that lost b's own watermark would take it. */
static inline int push_two_sources(laminar_source* src, int which, int64_t i) {
  struct ArrowArray array;
  struct ArrowSchema schema;
  if (which == 0) {
    CHECK(trades_batch(i, &array, &schema) == 0);
  } else {
    trade_row rows[ROWS];
    static const char* syms[] = {"AAPL", "MSFT", "X"};
    for (int r = 0; r < ROWS; r++) {
      int64_t k = i * ROWS + r;
      rows[r] = (trade_row){syms[k % 3], 5.0 + (double)(k % 5),       false, k % 4,
                            false,       2500 + k * 20 - (k % 4) * 10};
    }
    if (i % 2 == 1) rows[ROWS - 1].ts -= 1700;
    CHECK(build_trades(rows, ROWS, false, &array, &schema) == 0);
  }
  laminar_error err;
  laminar_code rc = laminar_source_push(src, &array, &schema, &err);
  if (array.release != NULL) array.release(&array);
  schema.release(&schema);
  CHECK_CODE(rc, LAMINAR_OK, &err);
  return 0;
}

/* A config for a durable database in dir with `cores` reactors (NULL on failure). */
static inline laminar_config* durable_config_cores(const char* dir, const char* interval,
                                                   const char* wal_mode, int cores) {
  laminar_config* c;
  if (laminar_config_create(&c) != LAMINAR_OK) return NULL;
  laminar_error err;
  char n[16];
  snprintf(n, sizeof n, "%d", cores);
  if (laminar_config_set(c, "data_dir", dir, &err) != LAMINAR_OK ||
      laminar_config_set(c, "checkpoint_interval", interval, &err) != LAMINAR_OK ||
      laminar_config_set(c, "wal_mode", wal_mode, &err) != LAMINAR_OK ||
      laminar_config_set(c, "cores", n, &err) != LAMINAR_OK) {
    fprintf(stderr, "durable_config: %s\n", err.message);
    laminar_config_destroy(c);
    return NULL;
  }
  return c;
}

static inline laminar_config* durable_config(const char* dir, const char* interval,
                                             const char* wal_mode) {
  return durable_config_cores(dir, interval, wal_mode, 1);
}

static inline laminar_code open_db_cores(const char* dir, const char* wal_mode, int cores,
                                         laminar_db** db, laminar_error* err) {
  laminar_config* c = durable_config_cores(dir, "1 hour", wal_mode, cores);
  if (c == NULL) return LAMINAR_ERR_NOMEM;
  laminar_code rc = laminar_open(c, db, err);
  laminar_config_destroy(c);
  return rc;
}

static inline laminar_code open_db(const char* dir, const char* wal_mode, laminar_db** db,
                                   laminar_error* err) {
  return open_db_cores(dir, wal_mode, 1, db, err);
}

/* File sinks live beside the data directory (one in it is refused):
 * <dir>-sinks/<name>. Writes "<dir>-sinks" to out and creates it. */
static inline const char* sinks_dir(const char* dir, char* out, size_t n) {
  snprintf(out, n, "%s-sinks", dir);
  (void)mkdir(out, 0755);
  return out;
}

static inline void sink_sql(const char* dir, char* out, size_t n) {
  char sinks[128];
  dir = sinks_dir(dir, sinks, sizeof sinks);
  snprintf(
      out, n,
      "CREATE SINK out FROM vwap INTO FILE (path = '%s/out', format = 'jsonl');\n"
      "CREATE SINK busy_out FROM busy INTO FILE (path = '%s/busy', format = 'csv');\n"
      "CREATE SINK busiest_out FROM busiest INTO FILE (path = '%s/busiest', format = "
      "'jsonl');\n"
      "CREATE SINK hopping_out FROM hopping INTO FILE (path = '%s/hopping', format = "
      "'jsonl');\n"
      "CREATE SINK bursts_out FROM bursts INTO FILE (path = '%s/bursts', format = "
      "'csv');\n"
      "CREATE SINK running_out FROM running INTO FILE (path = '%s/running', format = "
      "'jsonl');\n"
      "CREATE SINK late_out FROM fills_late INTO FILE (path = '%s/late', format = "
      "'jsonl')",
      dir, dir, dir, dir, dir, dir, dir);
}

static inline int cmp_lines(const void* a, const void* b) {
  return strcmp(*(char* const*)a, *(char* const*)b);
}

/* The committed sink output: its part files concatenated in epoch order,
 * then its lines sorted (rows of one epoch keep their order; epoch
 * boundaries depend on timing, RELIABILITY "equal output"). */
static inline char* sink_dir_output(const char* dir, const char* sub) {
  char path[512];
  snprintf(path, sizeof path, "%s-sinks/%s", dir, sub);
  struct dirent** list;
  int n = scandir(path, &list, NULL, alphasort);
  size_t cap = 1 << 16, len = 0;
  char* all = calloc(1, cap);
  for (int i = 0; i < n; i++) {
    if (strncmp(list[i]->d_name, "part-", 5) == 0) {
      char p[800];
      snprintf(p, sizeof p, "%s/%s", path, list[i]->d_name);
      FILE* f = fopen(p, "rb");
      size_t nlen = strlen(list[i]->d_name);
      if (f != NULL && nlen > 4 && strcmp(list[i]->d_name + nlen - 4, ".csv") == 0) {
        int c; /* each CSV part file starts with its header line: skip it */
        while ((c = fgetc(f)) != EOF && c != '\n') {
        }
      }
      size_t got;
      char buf[4096];
      while (f != NULL && (got = fread(buf, 1, sizeof buf, f)) > 0) {
        while (len + got + 1 > cap) {
          cap *= 2;
          all = realloc(all, cap);
        }
        memcpy(all + len, buf, got);
        len += got;
      }
      if (f != NULL) fclose(f);
    }
    free(list[i]);
  }
  if (n > 0) free(list);
  all[len] = '\0';
  /* sort lines */
  size_t nl = 0;
  for (size_t i = 0; i < len; i++) nl += all[i] == '\n';
  char** lines = calloc(nl + 1, sizeof *lines);
  size_t k = 0;
  for (char* p = all; *p != '\0';) {
    char* e = strchr(p, '\n');
    *e = '\0';
    lines[k++] = p;
    p = e + 1;
  }
  qsort(lines, k, sizeof *lines, cmp_lines);
  char* out = calloc(1, len + 2);
  size_t o = 0;
  for (size_t i = 0; i < k; i++) {
    size_t l = strlen(lines[i]);
    memcpy(out + o, lines[i], l);
    o += l;
    out[o++] = '\n';
  }
  free(lines);
  free(all);
  return out;
}

/* The file sinks of sink_sql(), in the order sink_output() joins them. */
static const char* const SINK_DIRS[] = {"out",    "busy",    "busiest", "hopping",
                                        "bursts", "running", "late"};

/* The committed output of the sinks in <dir>-sinks/<names[i]>, each after a
 * "--- name" separator. */
static inline char* sinks_output(const char* dir, const char* const* names, size_t n) {
  size_t len = 0, cap = 1 << 12;
  char* all = malloc(cap);
  all[0] = '\0';
  for (size_t i = 0; i < n; i++) {
    char* part = sink_dir_output(dir, names[i]);
    size_t lp = strlen(part), lh = strlen(names[i]) + 5;
    while (len + lh + lp + 1 > cap) {
      cap *= 2;
      all = realloc(all, cap);
    }
    len += (size_t)snprintf(all + len, cap - len, "--- %s\n", names[i]);
    memcpy(all + len, part, lp + 1);
    len += lp;
    free(part);
  }
  return all;
}

/* Every sink's committed output (sink_sql()'s sinks). */
static inline char* sink_output(const char* dir) {
  return sinks_output(dir, SINK_DIRS, sizeof SINK_DIRS / sizeof SINK_DIRS[0]);
}

/* Push batches [from, to), run inline, checkpoint every `every` batches. */
static inline int feed(laminar_db* db, laminar_source* src, int64_t from, int64_t to,
                       int every) {
  laminar_error err;
  for (int64_t b = from; b < to; b++) {
    CHECK_CODE(push_batch(src, b, &err), LAMINAR_OK, &err);
    CHECK_CODE(laminar_run_until_idle(db, &err), LAMINAR_OK, &err);
    if (every > 0 && (b + 1) % every == 0)
      CHECK_CODE(laminar_checkpoint(db, &err), LAMINAR_OK, &err);
  }
  return 0;
}

static inline int finish(laminar_db* db, laminar_source* src) {
  laminar_error err;
  CHECK_CODE(laminar_source_watermark(src, INT64_MAX, &err), LAMINAR_OK, &err);
  CHECK_CODE(laminar_run_until_idle(db, &err), LAMINAR_OK, &err);
  CHECK_CODE(laminar_checkpoint(db, &err), LAMINAR_OK, &err);
  return 0;
}

/* Finish (final watermark, last checkpoint), close, and compare the
 * committed sink output under dir with `want` (the diff on stderr).
 * Returns 0 when equal. */
static inline int finish_and_compare(laminar_db* db, laminar_source* src, const char* dir,
                                     const char* want) {
  CHECK(finish(db, src) == 0);
  laminar_source_close(src);
  CHECK_CODE(laminar_close(db), LAMINAR_OK, NULL);
  char* got = sink_output(dir);
  int rc = got != NULL && strcmp(got, want) == 0 ? 0 : 1;
  if (rc) fprintf(stderr, "--- got\n%s--- want\n%s", got ? got : "(none)\n", want);
  free(got);
  return rc;
}

/* Remove the data directory dir and its sinks (<dir>-sinks). */
static inline void remove_db(const char* dir) {
  char p[600];
  snprintf(p, sizeof p, "%s-sinks", dir);
  lm_test_rmtree(p);
  lm_test_rmtree(dir);
}

/* Copy data directory dir and its sinks (<dir>-sinks) to copy: the copy of
 * an open database is the directory as a crash would leave it. */
static inline int copy_db(const char* dir, const char* copy) {
  char a[600], b[600];
  snprintf(a, sizeof a, "%s-sinks", dir);
  snprintf(b, sizeof b, "%s-sinks", copy);
  struct stat st;
  if (lm_test_copy_tree(dir, copy) != 0) return -1;
  return stat(a, &st) != 0 || lm_test_copy_tree(a, b) == 0 ? 0 : -1;
}

/* Put the copy back in place of dir (both, and their sinks): in place, as
 * the catalog names its sinks' paths. */
static inline int restore_db(const char* copy, const char* dir) {
  char a[600], b[600];
  snprintf(a, sizeof a, "%s-sinks", copy);
  snprintf(b, sizeof b, "%s-sinks", dir);
  remove_db(dir);
  struct stat st;
  if (rename(copy, dir) != 0) return -1;
  return stat(a, &st) != 0 || rename(a, b) == 0 ? 0 : -1;
}

/* A durable database in dir with wal_mode, the pipeline's DDL and sinks
 * (again: harmless on a reopen), and its source open. 0 on success. */
static inline int open_pipeline(const char* dir, const char* wal_mode, laminar_db** db,
                                laminar_source** src) {
  laminar_error err;
  char sql[2048];
  sink_sql(dir, sql, sizeof sql);
  CHECK_CODE(open_db(dir, wal_mode, db, &err), LAMINAR_OK, &err);
  CHECK_CODE(laminar_execute(*db, DDL, &err), LAMINAR_OK, &err);
  CHECK_CODE(laminar_execute(*db, sql, &err), LAMINAR_OK, &err);
  CHECK_CODE(laminar_source_open(*db, "trades", src, &err), LAMINAR_OK, &err);
  return 0;
}

/* The uninterrupted run's committed output. */
static inline char* reference_output(void) {
  char dir[64];
  if (lm_test_mkdtemp(dir, sizeof dir, "lm_dur_ref_") != 0) return NULL;
  laminar_db* db = NULL;
  laminar_source* src = NULL;
  char* out = NULL;
  if (open_pipeline(dir, "sync", &db, &src) == 0 && feed(db, src, 0, NBATCH, 7) == 0 &&
      finish(db, src) == 0)
    out = sink_output(dir);
  laminar_source_close(src);
  laminar_close(db);
  remove_db(dir);
  return out;
}


#endif /* LM_TEST_DURABLE_H */
