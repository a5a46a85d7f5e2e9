/*
 * bench_asof.c -- W3: the ASOF join of trades with quotes, end to end through laminar.h.
 *
 * Data: exactly the feed of ../shared/bench/limit_asof.c's header (10^7 events by
 * default, 1,000 symbols 'S000'..'S999' as utf8, about 75% quotes, ts strictly rising
 * by 1 ms), cut into blocks of 8,192 consecutive events; each block becomes one quotes
 * batch and one trades batch (struct arrays with our own release callbacks; building
 * them is not timed). Timed: pushing the quotes batch then the trades batch,
 * laminar_run_until_idle (inline driver) and taking the output from a subscription;
 * then the final watermarks and the rest of the output. A fresh database per rep.
 *
 *   CREATE SOURCE trades (symbol VARCHAR, ts BIGINT, price DOUBLE, volume BIGINT,
 *                         WATERMARK FOR ts);
 *   CREATE SOURCE quotes (symbol VARCHAR, ts BIGINT, bid DOUBLE, ask DOUBLE,
 *                         WATERMARK FOR ts);
 *   CREATE STREAM w3 AS SELECT t.symbol, t.ts, t.price, t.volume, q.bid, q.ask
 *     FROM trades t ASOF JOIN quotes q MATCH_CONDITION(t.ts >= q.ts) ON t.symbol = q.symbol;
 *
 * Prints events/s, ns/event, p50/p99 of a block's time (push to output taken), the
 * process CPU time of the timed part (what a loaded machine does not stretch), the
 * check line of limit_asof (result rows, sum(bid)) and, with --w3b-rows-per-s, the
 * ratio to limit_asof's W3b of the same run.
 *
 * With --interval MS, W3i instead: the same data through the interval join of each
 * trade with the quotes of its symbol within +-MS ms (issue 21's interval target):
 *
 *   CREATE STREAM w3 AS SELECT t.symbol, t.ts, t.price, t.volume, q.bid, q.ask
 *     FROM trades t JOIN quotes q ON t.symbol = q.symbol
 *     AND q.ts BETWEEN t.ts - INTERVAL 'MS' MILLISECOND AND t.ts + INTERVAL 'MS' MILLISECOND;
 *
 * (its check line: the pairs and their sum(bid), bench_asof.py --interval's DuckDB
 * answer).
 *
 *   bench_asof [N] [--reps R] [--w3b-rows-per-s X] [--interval MS]
 */
#define _POSIX_C_SOURCE 200809L
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench_util.h"
#include "laminar.h"

#define NSYM 1000
#define TS0 1700000000000LL
#define BLOCK 8192

/* ---- one side's batch: struct<symbol utf8, ts int64, a double, b (double|int64)> ---- */

#define NCOLS 4

typedef struct batch {
  struct ArrowArray root;
  struct ArrowArray child[NCOLS];
  struct ArrowArray* child_ptr[NCOLS];
  const void* bufs[NCOLS][3];
  int32_t* off;
  char* data;
  int64_t* ts;
  double* a;
  void* b; /* double (quotes: ask) or int64 (trades: volume) */
} batch;

static void batch_release(struct ArrowArray* a) {
  batch* b = a->private_data;
  free(b->off);
  free(b->data);
  free(b->ts);
  free(b->a);
  free(b->b);
  for (int c = 0; c < NCOLS; c++) b->child[c].release = NULL;
  a->release = NULL;
  free(b);
}

static batch* batch_new(int64_t cap) {
  batch* b = bench_xmalloc(sizeof *b);
  memset(b, 0, sizeof *b);
  b->off = bench_xmalloc(sizeof(int32_t) * (size_t)(cap + 1));
  b->data = bench_xmalloc((size_t)cap * 4 + 1);
  b->ts = bench_xmalloc(sizeof(int64_t) * (size_t)cap);
  b->a = bench_xmalloc(sizeof(double) * (size_t)cap);
  b->b = bench_xmalloc(8 * (size_t)cap);
  b->off[0] = 0;
  return b;
}

/* Finish n rows into b->root (ownership: the root's release frees everything). */
static void batch_finish(batch* b, int64_t n) {
  const void* cols[NCOLS][3] = {{NULL, b->off, b->data},
                                {NULL, b->ts, NULL},
                                {NULL, b->a, NULL},
                                {NULL, b->b, NULL}};
  for (int c = 0; c < NCOLS; c++) {
    memcpy(b->bufs[c], cols[c], sizeof cols[c]);
    b->child[c] = (struct ArrowArray){.length = n,
                                      .n_buffers = c == 0 ? 3 : 2,
                                      .buffers = b->bufs[c],
                                      .release = bench_child_release};
    b->child_ptr[c] = &b->child[c];
  }
  b->root = (struct ArrowArray){.length = n,
                                .n_buffers = 1,
                                .n_children = NCOLS,
                                .buffers = b->bufs[0],
                                .children = b->child_ptr,
                                .release = batch_release,
                                .private_data = b};
}

/* Events [lo, hi) of the feed into a quotes and a trades batch. */
static void make_block(int64_t lo, int64_t hi, batch** out_q, batch** out_t) {
  batch* q = batch_new(hi - lo);
  batch* t = batch_new(hi - lo);
  int64_t nq = 0, nt = 0;
  for (int64_t i = lo; i < hi; i++) {
    uint64_t z = bench_mix64((uint64_t)(i + 1) * 0xD1B54A32D192ED03ULL);
    int s = (int)((z >> 2) % NSYM);
    double px = 100.0 + (double)((z >> 24) % 100000) / 1000.0;
    bool quote = z % 4 != 0;
    batch* b = quote ? q : t;
    int64_t r = quote ? nq++ : nt++;
    char* d = b->data + 4 * r;
    d[0] = 'S';
    d[1] = (char)('0' + s / 100);
    d[2] = (char)('0' + s / 10 % 10);
    d[3] = (char)('0' + s % 10);
    b->off[r + 1] = (int32_t)(4 * (r + 1));
    b->ts[r] = TS0 + i;
    b->a[r] = px;
    if (quote) {
      ((double*)b->b)[r] = px + (double)(1 + (z >> 44) % 10) / 100.0;
    } else {
      ((int64_t*)b->b)[r] = 1 + (int64_t)((z >> 8) % 1000);
    }
  }
  batch_finish(q, nq);
  batch_finish(t, nt);
  *out_q = q;
  *out_t = t;
}

static void die(const char* what, const laminar_error* err) {
  fprintf(stderr, "bench_asof: %s failed: %s\n", what, err->message);
  exit(1);
}

/* Output: rows and sum(bid) (column "bid"). */
typedef struct result {
  int64_t rows;
  double sum_bid;
} result;

static void drain(laminar_subscription* sub, result* r) {
  for (;;) {
    struct ArrowArray a;
    struct ArrowSchema s;
    laminar_error err;
    if (laminar_subscription_next(sub, 0, &a, &s, &err) != LAMINAR_OK) die("next", &err);
    if (a.release == NULL) return;
    int64_t bid = -1;
    for (int64_t c = 0; c < s.n_children; c++) {
      if (strcmp(s.children[c]->name, "bid") == 0) bid = c;
    }
    const struct ArrowArray* col = a.children[bid];
    const double* v = (const double*)col->buffers[1] + col->offset;
    for (int64_t k = 0; k < a.length; k++) r->sum_bid += v[k];
    r->rows += a.length;
    a.release(&a);
    s.release(&s);
  }
}

/* interval_ms >= 0: W3i, the interval join within +-interval_ms (else the ASOF join). */
static double run_once(int64_t n, int64_t interval_ms, result* res, double* block_s,
                       int64_t* nblocks, double* out_cpu) {
  laminar_db* db;
  laminar_error err;
  if (laminar_open(NULL, &db, &err) != LAMINAR_OK) die("open", &err);
  char sql[1024], join[256];
  if (interval_ms >= 0) {
    snprintf(join, sizeof join,
             "JOIN quotes q ON t.symbol = q.symbol AND q.ts BETWEEN t.ts - INTERVAL "
             "'%lld' MILLISECOND AND t.ts + INTERVAL '%lld' MILLISECOND",
             (long long)interval_ms, (long long)interval_ms);
  } else {
    snprintf(join, sizeof join,
             "ASOF JOIN quotes q MATCH_CONDITION(t.ts >= q.ts) ON t.symbol = q.symbol");
  }
  snprintf(sql, sizeof sql,
           "CREATE SOURCE trades (symbol VARCHAR, ts BIGINT, price DOUBLE, volume BIGINT,"
           "  WATERMARK FOR ts);"
           "CREATE SOURCE quotes (symbol VARCHAR, ts BIGINT, bid DOUBLE, ask DOUBLE,"
           "  WATERMARK FOR ts);"
           "CREATE STREAM w3 AS SELECT t.symbol, t.ts, t.price, t.volume, q.bid, q.ask"
           "  FROM trades t %s",
           join);
  if (laminar_execute(db, sql, &err) != LAMINAR_OK) die("execute", &err);
  laminar_subscription* sub;
  laminar_source *tq, *qq;
  if (laminar_subscribe(db, "w3", &sub, &err) != LAMINAR_OK ||
      laminar_source_open(db, "trades", &tq, &err) != LAMINAR_OK ||
      laminar_source_open(db, "quotes", &qq, &err) != LAMINAR_OK)
    die("open handles", &err);
  static const char* const qn[NCOLS] = {"symbol", "ts", "bid", "ask"};
  static const char* const qf[NCOLS] = {"u", "l", "g", "g"};
  static const char* const tn[NCOLS] = {"symbol", "ts", "price", "volume"};
  static const char* const tf[NCOLS] = {"u", "l", "g", "l"};
  bench_schema qs, ts;
  bench_schema_init(&qs, qn, qf, NCOLS);
  bench_schema_init(&ts, tn, tf, NCOLS);
  memset(res, 0, sizeof *res);
  double total = 0, cpu = 0;
  *nblocks = 0;
  for (int64_t lo = 0; lo < n; lo += BLOCK) {
    int64_t hi = lo + BLOCK < n ? lo + BLOCK : n;
    batch *q, *t;
    make_block(lo, hi, &q, &t); /* not timed */
    double t0 = bench_now_s(), c0 = bench_cpu_s();
    if (laminar_source_push(qq, &q->root, &qs.root, &err) != LAMINAR_OK)
      die("push", &err);
    if (laminar_source_push(tq, &t->root, &ts.root, &err) != LAMINAR_OK)
      die("push", &err);
    if (laminar_run_until_idle(db, &err) != LAMINAR_OK) die("run", &err);
    drain(sub, res);
    double dt = bench_now_s() - t0;
    cpu += bench_cpu_s() - c0;
    block_s[(*nblocks)++] = dt;
    total += dt;
  }
  double t0 = bench_now_s(), c0 = bench_cpu_s();
  if (laminar_source_watermark(qq, INT64_MAX, &err) != LAMINAR_OK ||
      laminar_source_watermark(tq, INT64_MAX, &err) != LAMINAR_OK ||
      laminar_run_until_idle(db, &err) != LAMINAR_OK)
    die("finish", &err);
  drain(sub, res);
  total += bench_now_s() - t0;
  cpu += bench_cpu_s() - c0;
  *out_cpu = cpu;
  laminar_source_close(tq);
  laminar_source_close(qq);
  laminar_subscription_close(sub);
  laminar_close(db);
  return total;
}

int main(int argc, char** argv) {
  int64_t n = 10000000;
  int reps = 3;
  double w3b = 0;
  int64_t interval_ms = -1;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--reps") == 0 && i + 1 < argc) {
      reps = atoi(argv[++i]);
    } else if (strcmp(argv[i], "--interval") == 0 && i + 1 < argc) {
      interval_ms = strtoll(argv[++i], NULL, 10);
    } else if (strcmp(argv[i], "--w3b-rows-per-s") == 0 && i + 1 < argc) {
      w3b = strtod(argv[++i], NULL);
    } else {
      n = strtoll(argv[i], NULL, 10);
    }
  }
  if (reps < 1) reps = 1;
  if (reps > 16) reps = 16;
  int64_t maxblocks = n / BLOCK + 2;
  double* blocks = bench_xmalloc(sizeof(double) * (size_t)maxblocks);
  /* The workload's name in the output lines (bench/run.sh and report.py read them). */
  const char* w = interval_ms >= 0 ? "W3i" : "W3";
  const char* what = interval_ms >= 0 ? "interval" : "asof";
  double secs[16], cpus[16];
  result res;
  double p50 = 0, p99 = 0;
  for (int r = 0; r < reps; r++) {
    int64_t nb;
    secs[r] = run_once(n, interval_ms, &res, blocks, &nb, &cpus[r]);
    if (r == 0) {
      printf("%s check: result rows=%lld sum(bid)=%.6f\n", w, (long long)res.rows,
             res.sum_bid);
      qsort(blocks, (size_t)nb, sizeof *blocks, bench_cmpd);
      p50 = blocks[nb / 2];
      p99 = blocks[nb * 99 / 100];
    }
  }
  double s[16];
  memcpy(s, secs, sizeof(double) * (size_t)reps);
  qsort(s, (size_t)reps, sizeof *s, bench_cmpd);
  double med = s[reps / 2];
  double rate = (double)n / med;
  printf(
      "RESULT %s %s inline N=%lld reps=%d median %.4f s  %.2f M rows/s  %.1f ns/event  "
      "block(%d events) p50 %.0f us p99 %.0f us",
      w, what, (long long)n, reps, med, rate / 1e6, med / (double)n * 1e9, BLOCK,
      p50 * 1e6, p99 * 1e6);
  if (w3b > 0) printf("  ratio_to_W3b=%.3f", rate / w3b);
  printf("\n");
  qsort(cpus, (size_t)reps, sizeof *cpus, bench_cmpd);
  printf("CPU %s %s inline median %.4f s cpu  %.2f M rows/s of cpu time\n", w, what,
         cpus[reps / 2], (double)n / cpus[reps / 2] / 1e6);
  printf("REPS %s inline s:", w);
  for (int r = 0; r < reps; r++) printf(" %.4f", secs[r]);
  printf("\n");
  free(blocks);
  return 0;
}
