/*
 * bench_lookup.c -- the lookup join of W1's events with a 10^6-row table, end to end
 * through laminar.h, inline (issue 21 "Speed": >= 0.4x W1b).
 *
 * Data: W1's events (docs/BENCHMARKS.md: event i has z = splitmix64_mix((i+1) *
 * 0x9E3779B97F4A7C15), symbol 'S%03d' % (z % 100), volume 1 + (z >> 8) % 1000, price
 * 100 + ((z >> 24) % 100000) / 1000, ts 1700000000000 + i) in batches of 8,192 rows
 * (struct arrays with our own release callbacks, built untimed), and the table
 *
 *   CREATE TABLE ref (k BIGINT PRIMARY KEY, tier VARCHAR, w DOUBLE);
 *
 * of T rows (default 10^6; k = 0 .. T-1, tier ('gold', 'silver', 'bronze')[k % 3],
 * w = 1 + (k % 7) / 100), as bench/bench_lookup.py's, loaded with laminar_table_upsert
 * in 65,536-row batches before the timed part. The stream
 *
 *   CREATE STREAM j AS SELECT t.symbol, t.price * r.w AS adj, r.tier
 *     FROM trades t JOIN ref r ON r.k = t.ts % T;
 *
 * finds a row for every event. Timed: per batch laminar_source_push,
 * laminar_run_until_idle and taking the output from a subscription; a fresh database per
 * rep. Checked every rep (exit 1 otherwise): N rows out, sum(adj) equal to the sum of
 * price_i * w(k_i) computed here to 1e-9 relative, and the count of 'gold' rows.
 *
 * Prints rows/s, ns/row, the process CPU time of the timed part and, with
 * --w1b-rows-per-s, the ratio to limit_vwap's W1b of the same run (bench/run.sh).
 *
 *   bench_lookup [N] [--reps R] [--table-rows T] [--w1b-rows-per-s X]
 */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench_util.h"
#include "laminar.h"

#define TS0 1700000000000LL
#define BLOCK 8192
#define MAXCOLS 4

static void die(const char* what, const laminar_error* err) {
  fprintf(stderr, "bench_lookup: %s failed: %s\n", what, err->message);
  exit(1);
}

/* ---- a struct batch of fixed-width and utf8 columns, our own release ---------------- */

typedef struct batch {
  struct ArrowArray root;
  struct ArrowArray child[MAXCOLS];
  struct ArrowArray* child_ptr[MAXCOLS];
  const void* bufs[MAXCOLS][3];
  void* mem[MAXCOLS][2]; /* per column: values (or offsets) and string bytes */
  int ncols;
} batch;

static void batch_release(struct ArrowArray* a) {
  batch* b = a->private_data;
  for (int c = 0; c < b->ncols; c++) {
    free(b->mem[c][0]);
    free(b->mem[c][1]);
    b->child[c].release = NULL;
  }
  a->release = NULL;
  free(b);
}

/* A batch of n rows whose column c is utf8 when formats[c] is "u" (offsets and
 * room for 8 bytes a row), else 8 bytes a value. */
static batch* batch_new(const char* const* formats, int ncols, int64_t n) {
  batch* b = bench_xmalloc(sizeof *b);
  memset(b, 0, sizeof *b);
  b->ncols = ncols;
  for (int c = 0; c < ncols; c++) {
    bool str = formats[c][0] == 'u';
    b->mem[c][0] = bench_xmalloc((size_t)(n + 1) * (str ? 4 : 8));
    b->mem[c][1] = str ? bench_xmalloc((size_t)n * 8 + 1) : NULL;
    if (str) ((int32_t*)b->mem[c][0])[0] = 0;
  }
  return b;
}

static void batch_finish(batch* b, int64_t n) {
  for (int c = 0; c < b->ncols; c++) {
    bool str = b->mem[c][1] != NULL;
    b->bufs[c][0] = NULL;
    b->bufs[c][1] = b->mem[c][0];
    b->bufs[c][2] = b->mem[c][1];
    b->child[c] = (struct ArrowArray){.length = n,
                                      .n_buffers = str ? 3 : 2,
                                      .buffers = b->bufs[c],
                                      .release = bench_child_release};
    b->child_ptr[c] = &b->child[c];
  }
  b->root = (struct ArrowArray){.length = n,
                                .n_buffers = 1,
                                .n_children = b->ncols,
                                .buffers = b->bufs[0],
                                .children = b->child_ptr,
                                .release = batch_release,
                                .private_data = b};
}

/* Append s to utf8 column c as row r. */
static void put_str(batch* b, int c, int64_t r, const char* s) {
  int32_t* off = b->mem[c][0];
  size_t len = strlen(s);
  memcpy((char*)b->mem[c][1] + off[r], s, len);
  off[r + 1] = off[r] + (int32_t)len;
}

/* ---- the data --------------------------------------------------------------------- */

static const char* const TIERS[3] = {"gold", "silver", "bronze"};
static double w_of(int64_t k) { return 1.0 + (double)(k % 7) / 100.0; }

static const char* const TRADE_NAMES[4] = {"symbol", "price", "volume", "ts"};
static const char* const TRADE_FORMATS[4] = {"u", "g", "l", "l"};
static const char* const REF_NAMES[3] = {"k", "tier", "w"};
static const char* const REF_FORMATS[3] = {"l", "u", "g"};

/* Events [lo, hi) as a trades batch. */
static batch* make_trades(int64_t lo, int64_t hi) {
  batch* b = batch_new(TRADE_FORMATS, 4, hi - lo);
  for (int64_t i = lo; i < hi; i++) {
    int64_t r = i - lo;
    uint64_t z = bench_mix64((uint64_t)(i + 1) * 0x9E3779B97F4A7C15ULL);
    char sym[8];
    snprintf(sym, sizeof sym, "S%03d", (int)(z % 100));
    put_str(b, 0, r, sym);
    ((double*)b->mem[1][0])[r] = 100.0 + (double)((z >> 24) % 100000) / 1000.0;
    ((int64_t*)b->mem[2][0])[r] = 1 + (int64_t)((z >> 8) % 1000);
    ((int64_t*)b->mem[3][0])[r] = TS0 + i;
  }
  batch_finish(b, hi - lo);
  return b;
}

/* Table rows [lo, hi). */
static batch* make_ref(int64_t lo, int64_t hi) {
  batch* b = batch_new(REF_FORMATS, 3, hi - lo);
  for (int64_t k = lo; k < hi; k++) {
    int64_t r = k - lo;
    ((int64_t*)b->mem[0][0])[r] = k;
    put_str(b, 1, r, TIERS[k % 3]);
    ((double*)b->mem[2][0])[r] = w_of(k);
  }
  batch_finish(b, hi - lo);
  return b;
}

/* ---- the output ------------------------------------------------------------------- */

typedef struct result {
  int64_t rows;
  int64_t gold;
  double sum_adj;
} result;

static int64_t child_named(const struct ArrowSchema* s, const char* name) {
  for (int64_t c = 0; c < s->n_children; c++)
    if (strcmp(s->children[c]->name, name) == 0) return c;
  fprintf(stderr, "bench_lookup: no output column %s\n", name);
  exit(1);
}

static void drain(laminar_subscription* sub, result* r) {
  for (;;) {
    struct ArrowArray a;
    struct ArrowSchema s;
    laminar_error err;
    if (laminar_subscription_next(sub, 0, &a, &s, &err) != LAMINAR_OK) die("next", &err);
    if (a.release == NULL) return;
    const struct ArrowArray* adj = a.children[child_named(&s, "adj")];
    const struct ArrowArray* tier = a.children[child_named(&s, "tier")];
    const double* v = (const double*)adj->buffers[1] + adj->offset;
    const int32_t* off = (const int32_t*)tier->buffers[1] + tier->offset;
    const char* bytes = tier->buffers[2];
    for (int64_t k = 0; k < a.length; k++) {
      r->sum_adj += v[k];
      r->gold += off[k + 1] - off[k] == 4 && memcmp(bytes + off[k], "gold", 4) == 0;
    }
    r->rows += a.length;
    a.release(&a);
    s.release(&s);
  }
}

static double run_once(int64_t n, int64_t table_rows, result* res, double* out_cpu) {
  laminar_db* db;
  laminar_error err;
  if (laminar_open(NULL, &db, &err) != LAMINAR_OK) die("open", &err);
  char sql[1024];
  snprintf(sql, sizeof sql,
           "CREATE SOURCE trades (symbol VARCHAR NOT NULL, price DOUBLE NOT NULL,"
           "  volume BIGINT NOT NULL, ts BIGINT NOT NULL, WATERMARK FOR ts AS ts);"
           "CREATE TABLE ref (k BIGINT PRIMARY KEY, tier VARCHAR, w DOUBLE);"
           "CREATE STREAM j AS SELECT t.symbol, t.price * r.w AS adj, r.tier"
           "  FROM trades t JOIN ref r ON r.k = t.ts %% %lld;",
           (long long)table_rows);
  if (laminar_execute(db, sql, &err) != LAMINAR_OK) die("execute", &err);
  bench_schema rs, tsch;
  bench_schema_init(&rs, REF_NAMES, REF_FORMATS, 3);
  bench_schema_init(&tsch, TRADE_NAMES, TRADE_FORMATS, 4);
  for (int64_t lo = 0; lo < table_rows; lo += 65536) { /* not timed */
    int64_t hi = lo + 65536 < table_rows ? lo + 65536 : table_rows;
    batch* b = make_ref(lo, hi);
    if (laminar_table_upsert(db, "ref", &b->root, &rs.root, &err) != LAMINAR_OK)
      die("upsert", &err);
  }
  if (laminar_run_until_idle(db, &err) != LAMINAR_OK) die("load", &err);
  laminar_subscription* sub;
  laminar_source* src;
  if (laminar_subscribe(db, "j", &sub, &err) != LAMINAR_OK ||
      laminar_source_open(db, "trades", &src, &err) != LAMINAR_OK)
    die("open handles", &err);
  memset(res, 0, sizeof *res);
  double total = 0, cpu = 0;
  for (int64_t lo = 0; lo < n; lo += BLOCK) {
    int64_t hi = lo + BLOCK < n ? lo + BLOCK : n;
    batch* b = make_trades(lo, hi); /* not timed */
    double t0 = bench_now_s(), c0 = bench_cpu_s();
    if (laminar_source_push(src, &b->root, &tsch.root, &err) != LAMINAR_OK)
      die("push", &err);
    if (laminar_run_until_idle(db, &err) != LAMINAR_OK) die("run", &err);
    drain(sub, res);
    total += bench_now_s() - t0;
    cpu += bench_cpu_s() - c0;
  }
  *out_cpu = cpu;
  laminar_source_close(src);
  laminar_subscription_close(sub);
  laminar_close(db);
  return total;
}

int main(int argc, char** argv) {
  int64_t n = 10000000, table_rows = 1000000;
  int reps = 3;
  double w1b = 0;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--reps") == 0 && i + 1 < argc) {
      reps = atoi(argv[++i]);
    } else if (strcmp(argv[i], "--table-rows") == 0 && i + 1 < argc) {
      table_rows = (int64_t)strtod(argv[++i], NULL);
    } else if (strcmp(argv[i], "--w1b-rows-per-s") == 0 && i + 1 < argc) {
      w1b = strtod(argv[++i], NULL);
    } else {
      n = (int64_t)strtod(argv[i], NULL);
    }
  }
  if (reps < 1) reps = 1;
  if (reps > 16) reps = 16;
  if (table_rows < 1) table_rows = 1;
  /* The reference: every event matches row k = ts % T. */
  result want = {n, 0, 0.0};
  for (int64_t i = 0; i < n; i++) {
    uint64_t z = bench_mix64((uint64_t)(i + 1) * 0x9E3779B97F4A7C15ULL);
    int64_t k = (TS0 + i) % table_rows;
    want.sum_adj += (100.0 + (double)((z >> 24) % 100000) / 1000.0) * w_of(k);
    want.gold += k % 3 == 0;
  }
  double secs[16], cpus[16];
  bool ok = true;
  for (int r = 0; r < reps; r++) {
    result res;
    secs[r] = run_once(n, table_rows, &res, &cpus[r]);
    double rel = fabs(res.sum_adj - want.sum_adj) / fabs(want.sum_adj ? want.sum_adj : 1);
    if (res.rows != want.rows || res.gold != want.gold || !(rel < 1e-9)) {
      fprintf(stderr,
              "CHECK FAILED lookup rep %d: rows=%lld (expected %lld) gold=%lld (expected "
              "%lld) sum(adj)=%.6f (expected %.6f)\n",
              r, (long long)res.rows, (long long)want.rows, (long long)res.gold,
              (long long)want.gold, res.sum_adj, want.sum_adj);
      ok = false;
    }
    if (r == 0)
      printf("lookup check: rows=%lld gold=%lld sum(adj)=%.6f\n", (long long)res.rows,
             (long long)res.gold, res.sum_adj);
  }
  double s[16];
  memcpy(s, secs, sizeof(double) * (size_t)reps);
  qsort(s, (size_t)reps, sizeof *s, bench_cmpd);
  double med = s[reps / 2];
  double rate = (double)n / med;
  printf(
      "RESULT lookup inline N=%lld table_rows=%lld reps=%d median %.4f s  %.2f M rows/s"
      "  %.1f ns/row",
      (long long)n, (long long)table_rows, reps, med, rate / 1e6, med / (double)n * 1e9);
  if (w1b > 0) printf("  ratio_to_W1b=%.3f", rate / w1b);
  printf("%s\n", ok ? "" : "  WRONG");
  qsort(cpus, (size_t)reps, sizeof *cpus, bench_cmpd);
  printf("CPU lookup inline median %.4f s cpu  %.2f M rows/s of cpu time\n",
         cpus[reps / 2], (double)n / cpus[reps / 2] / 1e6);
  printf("REPS lookup inline s:");
  for (int r = 0; r < reps; r++) printf(" %.4f", secs[r]);
  printf("\n");
  return ok ? 0 : 1;
}
