/*
 * w1_golden.c -- the C side of the Java binding's W1 cross-check (W1Test.java): runs W1
 * (1-second tumbling VWAP, bench/bench_vwap.c's SQL) through laminar.h over the
 * generated trades of shared/bench/README.md and writes the result rows, sorted, one
 * per line, to the file named by argv[1]:
 *
 *   window_start,symbol,vwap,trades,max_price,min_price
 *
 * with each DOUBLE as the 16 hex digits of its IEEE bits, so the Java, C and Python
 * runs compare exactly. Rows: argv[2] (default 200000), pushed in batches of 8192;
 * then watermark INT64_MAX and laminar_run_until_idle. w1_golden.py does the same
 * through the Python binding. Exit status 0 on success.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arrow_build.h"
#include "laminar.h"

static const char* SQL =
    "CREATE SOURCE trades (symbol VARCHAR NOT NULL, price DOUBLE NOT NULL, "
    "volume BIGINT NOT NULL, ts BIGINT NOT NULL, WATERMARK FOR ts AS ts);"
    "CREATE STREAM w1 AS SELECT window_start, symbol, SUM(price * volume) / SUM(volume) "
    "AS vwap, COUNT(*) AS trades, MAX(price) AS max_price, MIN(price) AS min_price "
    "FROM trades GROUP BY symbol, tumble(ts, INTERVAL '1' SECOND) EMIT ON WINDOW CLOSE;";

enum { BATCH = 8192, LINE = 128 };

static uint64_t mix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

static void check(laminar_code rc, const laminar_error* err, const char* what) {
  if (rc == LAMINAR_OK) return;
  fprintf(stderr, "w1_golden: %s: %s\n", what, err != NULL ? err->message : "");
  exit(1);
}

static uint64_t bits_of(double d) {
  uint64_t u;
  memcpy(&u, &d, sizeof u);
  return u;
}

static int cmp_line(const void* a, const void* b) {
  return strcmp((const char*)a, (const char*)b);
}

/* Append the rows of every batch queued on `sub` to lines[*n..]. */
static void drain(laminar_subscription* sub, char (**lines)[LINE], size_t* n,
                  size_t* cap) {
  for (;;) {
    result_view rv;
    memset(&rv, 0, sizeof rv);
    laminar_error err;
    check(laminar_subscription_next(sub, 0, &rv.array, &rv.schema, &err), &err, "next");
    if (rv.array.release == NULL) return;
    if (result_view_init(&rv) != 0) {
      fprintf(stderr, "w1_golden: invalid result batch\n");
      exit(1);
    }
    int64_t c[6];
    const char* names[6] = {"window_start", "symbol",    "vwap",
                            "trades",       "max_price", "min_price"};
    for (int i = 0; i < 6; i++) {
      c[i] = result_col_index(&rv, names[i]);
      if (c[i] < 0) {
        fprintf(stderr, "w1_golden: no column %s\n", names[i]);
        exit(1);
      }
    }
    struct ArrowArrayView** col = rv.view.children;
    for (int64_t r = 0; r < rv.array.length; r++) {
      if (*n == *cap) {
        *cap = *cap ? 2 * *cap : 4096;
        *lines = realloc(*lines, *cap * LINE);
        if (*lines == NULL) exit(2);
      }
      struct ArrowStringView sym = ArrowArrayViewGetStringUnsafe(col[c[1]], r);
      snprintf((*lines)[*n], LINE,
               "%" PRId64 ",%.*s,%016" PRIx64 ",%" PRId64 ",%016" PRIx64 ",%016" PRIx64,
               ArrowArrayViewGetIntUnsafe(col[c[0]], r), (int)sym.size_bytes, sym.data,
               bits_of(ArrowArrayViewGetDoubleUnsafe(col[c[2]], r)),
               ArrowArrayViewGetIntUnsafe(col[c[3]], r),
               bits_of(ArrowArrayViewGetDoubleUnsafe(col[c[4]], r)),
               bits_of(ArrowArrayViewGetDoubleUnsafe(col[c[5]], r)));
      (*n)++;
    }
    result_view_free(&rv);
  }
}

int main(int argc, char** argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: w1_golden OUT.csv [ROWS]\n");
    return 2;
  }
  int64_t rows = argc > 2 ? strtoll(argv[2], NULL, 10) : 200000;
  laminar_db* db;
  laminar_error err;
  check(laminar_open(NULL, &db, &err), &err, "open");
  check(laminar_execute(db, SQL, &err), &err, "execute");
  laminar_source* src;
  check(laminar_source_open(db, "trades", &src, &err), &err, "source");
  laminar_subscription* sub;
  check(laminar_subscribe(db, "w1", &sub, &err), &err, "subscribe");

  char(*lines)[LINE] = NULL;
  size_t n = 0, cap = 0;
  static trade_row batch[BATCH];
  static char symbols[BATCH][5];
  for (int64_t start = 0; start < rows; start += BATCH) {
    int64_t len = rows - start < BATCH ? rows - start : BATCH;
    for (int64_t k = 0; k < len; k++) {
      int64_t i = start + k;
      uint64_t z = mix64((uint64_t)(i + 1) * 0x9E3779B97F4A7C15ULL);
      snprintf(symbols[k], sizeof symbols[k], "S%03d", (int)(z % 100));
      batch[k] = (trade_row){.symbol = symbols[k],
                             .price = 100.0 + (double)((z >> 24) % 100000) / 1000.0,
                             .volume = 1 + (int64_t)((z >> 8) % 1000),
                             .ts = 1700000000000LL + i};
    }
    struct ArrowArray array;
    struct ArrowSchema schema;
    if (build_trades(batch, len, false, &array, &schema) != 0) {
      fprintf(stderr, "w1_golden: building a batch failed\n");
      return 1;
    }
    check(laminar_source_push(src, &array, &schema, &err), &err, "push");
    schema.release(&schema);
    check(laminar_run_until_idle(db, &err), &err, "run");
    drain(sub, &lines, &n, &cap);
  }
  check(laminar_source_watermark(src, INT64_MAX, &err), &err, "watermark");
  check(laminar_run_until_idle(db, &err), &err, "run");
  drain(sub, &lines, &n, &cap);
  laminar_subscription_close(sub);
  laminar_source_close(src);
  check(laminar_close(db), NULL, "close");

  qsort(lines, n, LINE, cmp_line);
  FILE* f = fopen(argv[1], "w");
  if (f == NULL) {
    perror(argv[1]);
    return 1;
  }
  for (size_t i = 0; i < n; i++) fprintf(f, "%s\n", lines[i]);
  free(lines);
  return fclose(f) == 0 ? 0 : 1;
}
