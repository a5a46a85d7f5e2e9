/*
 * bench_vwap.c -- end-to-end benchmark of the reference workloads W1 and W2 through the
 * public API (laminar.h) only, to be read next to shared/bench/limit_vwap.c.
 *
 *   W1: CREATE STREAM w1 AS SELECT window_start, symbol, SUM(price*volume)/SUM(volume)
 *       AS vwap, COUNT(*) AS trades, MAX(price), MIN(price) FROM trades
 *       GROUP BY symbol, tumble(ts, INTERVAL '1' SECOND) EMIT ON WINDOW CLOSE
 *   W2: CREATE STREAM w2 AS SELECT symbol, price*volume AS notional FROM trades
 *       WHERE volume > 500
 *
 * Data: the limit_vwap.c spec (event i: z = splitmix64_mix((i+1)*0x9E3779B97F4A7C15),
 * symbol 'S%03d' % (z%100), volume 1+(z>>8)%1000, price 100+((z>>24)%100000)/1000.0,
 * ts 1700000000000+i), generated once (not timed) into plain columns; each push hands the
 * core a struct array (symbol utf8, price double, volume int64, ts int64) of --batch rows
 * (default 8192) whose buffers point into those columns, zero-copy, with our own release
 * callbacks. A reference pass over the same data (not timed) gives the expected result
 * rows and checksums; any mismatch fails the run. Checked every rep and mode: the result
 * rows, sum(trades) = N, sum(vwap) and sum(notional) to 1e-9 relative, zero late rows,
 * and every pushed batch released by the core after laminar_close.
 *
 * Modes, each timed end to end (first push -> last result in the consumer's hands),
 * median of --reps runs (default 3), a fresh database per run:
 *   inline:   per batch push + laminar_run_until_idle + drain the subscription
 *             (laminar_subscription_next timeout 0); at the end watermark INT64_MAX,
 *             run, drain.
 *   threaded: laminar_start; a consumer thread blocks in laminar_subscription_next while
 *             the main thread pushes as fast as it can; watermark INT64_MAX; stop.
 *   paced:    as threaded, but batches are pushed on a schedule at --pace (default 0.5)
 *             times the measured threaded rate; one run, reported for latency only.
 * Latency (threaded and paced): the producer stamps each push; the consumer stamps each
 * result batch on arrival. W2 yields one result batch per input batch, in order, so
 * result k belongs to push k (checked: the counts must match). For W1 a result batch
 * holds windows closed by the watermark of one push: the window [ws, ws+1000) closes on
 * the event with ts = ws+1000, i.e. input row ws+1000-ts0, so the latency of a result
 * batch is measured from the push of the batch holding that row (or from the final
 * watermark call for the windows it closes). Printed as p50/p99/p99.9 in microseconds.
 *
 * Durability overhead: --durable ckpt|async|sync runs every database with checkpoints
 * every --checkpoint-ms (default 10000) and that WAL mode, in a fresh directory under
 * --data-dir (default /tmp). --file-sink (durable runs) adds a JSONL file sink on the
 * stream's output, in a directory beside the database's, removed after the run.
 *
 * Thread-per-core: --cores LIST (e.g. 1,2 or 1,2,4) runs every mode once per core count
 * (config `cores`; W1 is a keyed stream, so it runs as that many partitions, W2 stays
 * on reactor 0) and prints, for each count after the first, the threaded rate's ratio
 * to the first count's: "SCALING W1 threaded cores=2/1 ...". The harness takes any
 * count; this 2-core machine can only show up to 2. --prequeue makes the threaded
 * mode queue every batch before laminar_start and time start -> last result, so no
 * producer thread competes with the reactors for the cores (no latency then).
 * --udf: the price goes through a C user-defined function fx (x * 1.0, DETERMINISTIC
 * and THREAD_SAFE) in W1's SUM and MAX and in W2's product: the per-event cost of a
 * C scalar function (compare with a run without it).
 * --udaf: W1's SUM(price * volume) is a C user-defined aggregate pvsum(price,
 * volume) (state: a double sum and a count, THREAD_SAFE): the per-event cost of
 * an aggregate's update callback against the built-in SUM.
 * --pin: every database gets `core_affinity = true` (reactor i on CPU i), and the
 * application's threads (the producer, the consumer, and the threads the database
 * starts besides its reactors, which inherit the mask) run on the CPUs the
 * reactors leave free, if any: a reactor then owns its core.
 *
 * Usage: bench_vwap [N] [--reps R] [--batch B] [--only w1|w2] [--mode
 * all|inline|threaded] [--cores LIST]
 *                   [--pace F] [--w1b-rows-per-s X] [--w2b-rows-per-s Y]
 * (--mode inline runs only the inline driver: handy under a profiler; --pace 0 skips the
 * paced run.)
 * X and Y are limit_vwap's W1b / W2b rates from the same run, in rows/s (e.g. 2.5e8);
 * with them each RESULT line carries the ratio. Exit status 0 only if every check held.
 */
#define _POSIX_C_SOURCE 200809L

#ifndef _GNU_SOURCE
#define _GNU_SOURCE  // sched_setaffinity, CPU_SET (--pin)
#endif
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <time.h>

#include "laminar.h"

enum { NSYM = 100, MAX_REPS = 15, NCOLS = 4 };
static const int64_t TS0 = 1700000000000LL;
static const int64_t WINDOW_MS = 1000;

static const char* SOURCE_SQL =
    "CREATE SOURCE trades (symbol VARCHAR NOT NULL, price DOUBLE NOT NULL, "
    "volume BIGINT NOT NULL, ts BIGINT NOT NULL, WATERMARK FOR ts AS ts);";
static const char* W1_SQL =
    "CREATE STREAM w1 AS SELECT window_start, symbol, SUM(price * volume) / SUM(volume) "
    "AS vwap, COUNT(*) AS trades, MAX(price) AS max_price, MIN(price) AS min_price "
    "FROM trades GROUP BY symbol, tumble(ts, INTERVAL '1' SECOND) EMIT ON WINDOW CLOSE;";
static const char* W2_SQL =
    "CREATE STREAM w2 AS SELECT symbol, price * volume AS notional FROM trades "
    "WHERE volume > 500;";
/* --udf: the same queries with the price through a C user-defined function
 * fx(DOUBLE) -> DOUBLE that multiplies by 1.0 (so the checksums hold): the
 * cost of a C scalar function per event. */
static const char* W1_UDF_SQL =
    "CREATE STREAM w1 AS SELECT window_start, symbol, SUM(fx(price) * volume) / "
    "SUM(volume) AS vwap, COUNT(*) AS trades, MAX(fx(price)) AS max_price, "
    "MIN(price) AS min_price FROM trades GROUP BY symbol, tumble(ts, INTERVAL '1' "
    "SECOND) "
    "EMIT ON WINDOW CLOSE;";
static const char* W2_UDF_SQL =
    "CREATE STREAM w2 AS SELECT symbol, fx(price) * volume AS notional FROM trades "
    "WHERE volume > 500;";

/* --udaf: W1 with the VWAP numerator as a C user-defined aggregate. */
static const char* W1_UDAF_SQL =
    "CREATE STREAM w1 AS SELECT window_start, symbol, pvsum(price, volume) / "
    "SUM(volume) AS vwap, COUNT(*) AS trades, MAX(price) AS max_price, "
    "MIN(price) AS min_price FROM trades GROUP BY symbol, tumble(ts, INTERVAL '1' "
    "SECOND) "
    "EMIT ON WINDOW CLOSE;";

/* ------------------------------------------------------------------------------------
 * Small helpers
 * ------------------------------------------------------------------------------------ */

static int64_t now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (int64_t)t.tv_sec * 1000000000LL + t.tv_nsec;
}

static void sleep_until_ns(int64_t when) {
  struct timespec t = {.tv_sec = (time_t)(when / 1000000000LL),
                       .tv_nsec = (long)(when % 1000000000LL)};
  while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &t, NULL) == EINTR) {
  }
}

static void* xcalloc(size_t n, size_t size) {
  void* p = calloc(n ? n : 1, size ? size : 1);
  if (p == NULL) {
    fprintf(stderr, "bench_vwap: out of memory (%zu x %zu bytes)\n", n, size);
    exit(2);
  }
  return p;
}

/* Print a failed call's detail and exit: a benchmark that cannot run has no figure. */
static void check_rc(laminar_code rc, const laminar_error* err, const char* what) {
  if (rc == LAMINAR_OK) return;
  fprintf(stderr, "bench_vwap: %s failed: %s (%s)\n", what, err ? err->message : "",
          laminar_errstr(rc));
  exit(1);
}

static uint64_t mix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

static int cmp_i64(const void* a, const void* b) {
  int64_t x = *(const int64_t*)a, y = *(const int64_t*)b;
  return (x > y) - (x < y);
}

static int cmp_double(const void* a, const void* b) {
  double x = *(const double*)a, y = *(const double*)b;
  return (x > y) - (x < y);
}

static double median_of(double* v, int n) {
  qsort(v, (size_t)n, sizeof *v, cmp_double);
  return v[n / 2];
}

/* q-quantile (0 < q <= 1) of a sorted array, nearest rank. */
static int64_t quantile(const int64_t* sorted, size_t n, double q) {
  if (n == 0) return 0;
  size_t rank = (size_t)ceil(q * (double)n);
  if (rank < 1) rank = 1;
  if (rank > n) rank = n;
  return sorted[rank - 1];
}

/* ------------------------------------------------------------------------------------
 * The data set and its reference results
 * ------------------------------------------------------------------------------------ */

typedef struct dataset {
  int64_t n;
  int64_t batch_rows;
  int64_t nbatches;
  char* symbols;  // 4 bytes per row, no separators
  double* price;
  int64_t* volume;
  int64_t* ts;
  int32_t* offsets;  // batch_rows+1 entries 0,4,8,..: identical for every batch
  /* Reference results (computed here, not by the engine). */
  int64_t w1_rows;
  double w1_vwap_sum;
  int64_t w2_rows;
  double w2_notional_sum;
  /* Batches handed to the core and not yet released; written by release callbacks on
   * any thread (relaxed is enough: read after laminar_close, which joins the reactor). */
  atomic_llong live_batches;
} dataset;

static void dataset_generate(dataset* d, int64_t n, int64_t batch_rows) {
  d->n = n;
  d->batch_rows = batch_rows;
  d->nbatches = (n + batch_rows - 1) / batch_rows;
  d->symbols = xcalloc((size_t)n, 4);
  d->price = xcalloc((size_t)n, sizeof *d->price);
  d->volume = xcalloc((size_t)n, sizeof *d->volume);
  d->ts = xcalloc((size_t)n, sizeof *d->ts);
  d->offsets = xcalloc((size_t)batch_rows + 1, sizeof *d->offsets);
  for (int64_t k = 0; k <= batch_rows; k++) d->offsets[k] = (int32_t)(4 * k);
  atomic_init(&d->live_batches, 0);

  /* Reference W1: per-window per-symbol accumulators, flushed when the window changes
   * (ts increases strictly, so this is exactly the watermark = max ts rule). */
  double pv[NSYM];
  int64_t vsum[NSYM], cnt[NSYM];
  memset(pv, 0, sizeof pv);
  memset(vsum, 0, sizeof vsum);
  memset(cnt, 0, sizeof cnt);
  int64_t cur_window = INT64_MIN;
  d->w1_rows = 0;
  d->w1_vwap_sum = 0;
  d->w2_rows = 0;
  d->w2_notional_sum = 0;
  for (int64_t i = 0; i < n; i++) {
    uint64_t z = mix64((uint64_t)(i + 1) * 0x9E3779B97F4A7C15ULL);
    int s = (int)(z % 100);
    int64_t v = 1 + (int64_t)((z >> 8) % 1000);
    double p = 100.0 + (double)((z >> 24) % 100000) / 1000.0;
    int64_t t = TS0 + i;
    char* sym = d->symbols + 4 * i;
    sym[0] = 'S';
    sym[1] = (char)('0' + s / 100);
    sym[2] = (char)('0' + s / 10 % 10);
    sym[3] = (char)('0' + s % 10);
    d->price[i] = p;
    d->volume[i] = v;
    d->ts[i] = t;

    int64_t w = t / WINDOW_MS;
    if (w != cur_window) {
      for (int k = 0; k < NSYM; k++) {
        if (cnt[k] > 0) {
          d->w1_rows++;
          d->w1_vwap_sum += pv[k] / (double)vsum[k];
        }
        pv[k] = 0;
        vsum[k] = 0;
        cnt[k] = 0;
      }
      cur_window = w;
    }
    pv[s] += p * (double)v;
    vsum[s] += v;
    cnt[s]++;
    if (v > 500) {
      d->w2_rows++;
      d->w2_notional_sum += p * (double)v;
    }
  }
  for (int k = 0; k < NSYM; k++) {
    if (cnt[k] > 0) {
      d->w1_rows++;
      d->w1_vwap_sum += pv[k] / (double)vsum[k];
    }
  }
}

static void dataset_free(dataset* d) {
  free(d->symbols);
  free(d->price);
  free(d->volume);
  free(d->ts);
  free(d->offsets);
}

/* ------------------------------------------------------------------------------------
 * Input batches: Arrow struct arrays over the dataset's columns
 *
 * One heap block per batch holds the four children and the buffer pointer tables. The
 * consumer may move the parent or single children out (spec: "moving child arrays"), so
 * the block is reference counted: one reference for the parent and one per child; each
 * release drops its own, and the parent's release first releases children still live.
 * Release callbacks may run on any thread (the reactor), hence the atomic count.
 * ------------------------------------------------------------------------------------ */

typedef struct batch_block {
  atomic_int refs;
  dataset* owner;
  struct ArrowArray child[NCOLS];
  struct ArrowArray* child_ptr[NCOLS];
  const void* parent_buffers[1];
  const void* child_buffers[NCOLS][3];
} batch_block;

static void block_unref(batch_block* b) {
  if (atomic_fetch_sub_explicit(&b->refs, 1, memory_order_acq_rel) == 1) {
    atomic_fetch_sub_explicit(&b->owner->live_batches, 1, memory_order_relaxed);
    free(b);
  }
}

static void child_release(struct ArrowArray* a) {
  batch_block* b = a->private_data;
  a->release = NULL;
  block_unref(b);
}

static void parent_release(struct ArrowArray* a) {
  batch_block* b = a->private_data;
  for (int c = 0; c < NCOLS; c++) {
    struct ArrowArray* ch = a->children[c];
    if (ch->release != NULL) ch->release(ch);
  }
  a->release = NULL;
  block_unref(b);
}

/* Fill *out with batch `index` of the dataset (rows [index*batch_rows, ...)). */
static void make_batch(dataset* d, int64_t index, struct ArrowArray* out) {
  int64_t start = index * d->batch_rows;
  int64_t len = d->n - start < d->batch_rows ? d->n - start : d->batch_rows;
  batch_block* b = xcalloc(1, sizeof *b);
  atomic_init(&b->refs, 1 + NCOLS);
  b->owner = d;
  const void* data[NCOLS] = {d->symbols + 4 * start, d->price + start, d->volume + start,
                             d->ts + start};
  for (int c = 0; c < NCOLS; c++) {
    struct ArrowArray* ch = &b->child[c];
    ch->length = len;
    ch->null_count = 0;
    ch->offset = 0;
    ch->n_children = 0;
    ch->children = NULL;
    ch->dictionary = NULL;
    ch->buffers = b->child_buffers[c];
    b->child_buffers[c][0] = NULL;  // no validity bitmap: no nulls
    if (c == 0) {
      ch->n_buffers = 3;
      b->child_buffers[c][1] = d->offsets;
      b->child_buffers[c][2] = data[c];
    } else {
      ch->n_buffers = 2;
      b->child_buffers[c][1] = data[c];
    }
    ch->release = child_release;
    ch->private_data = b;
    b->child_ptr[c] = ch;
  }
  b->parent_buffers[0] = NULL;
  *out = (struct ArrowArray){.length = len,
                             .null_count = 0,
                             .offset = 0,
                             .n_buffers = 1,
                             .n_children = NCOLS,
                             .buffers = b->parent_buffers,
                             .children = b->child_ptr,
                             .dictionary = NULL,
                             .release = parent_release,
                             .private_data = b};
  atomic_fetch_add_explicit(&d->live_batches, 1, memory_order_relaxed);
}

/* The input schema: struct<symbol: utf8, price: double, volume: int64, ts: int64>, all
 * non-nullable. Lives in main's frame for the whole run; lent to every push. */
typedef struct input_schema {
  struct ArrowSchema root;
  struct ArrowSchema child[NCOLS];
  struct ArrowSchema* child_ptr[NCOLS];
} input_schema;

static void schema_release(struct ArrowSchema* s) {
  for (int64_t c = 0; c < s->n_children; c++) s->children[c]->release = NULL;
  s->release = NULL;
}

static void schema_release_child(struct ArrowSchema* s) { s->release = NULL; }

static void input_schema_init(input_schema* s) {
  static const char* const names[NCOLS] = {"symbol", "price", "volume", "ts"};
  static const char* const formats[NCOLS] = {"u", "g", "l", "l"};
  for (int c = 0; c < NCOLS; c++) {
    s->child[c] = (struct ArrowSchema){
        .format = formats[c], .name = names[c], .release = schema_release_child};
    s->child_ptr[c] = &s->child[c];
  }
  s->root = (struct ArrowSchema){.format = "+s",
                                 .name = "",
                                 .n_children = NCOLS,
                                 .children = s->child_ptr,
                                 .release = schema_release};
}

/* ------------------------------------------------------------------------------------
 * Result consumption: count rows, sum a checksum column, note the last closed window
 * ------------------------------------------------------------------------------------ */

typedef enum workload { W1 = 1, W2 = 2 } workload;

typedef struct result_sink {
  workload w;
  bool resolved;           // column indexes known (from the first batch's schema)
  int64_t col_ws;          // W1: window_start
  int64_t ws_mul, ws_div;  // window_start unit -> ms
  int64_t col_trades;      // W1: trades
  int64_t col_value;       // W1: vwap; W2: notional
  int64_t rows;
  int64_t batches;
  int64_t trades_sum;
  double value_sum;
} result_sink;

static int64_t find_child(const struct ArrowSchema* s, const char* name,
                          const char* fmt) {
  for (int64_t c = 0; c < s->n_children; c++) {
    if (strcmp(s->children[c]->name, name) == 0) {
      if (fmt != NULL && strcmp(s->children[c]->format, fmt) != 0) {
        fprintf(stderr, "bench_vwap: result column '%s' has format '%s', expected '%s'\n",
                name, s->children[c]->format, fmt);
        exit(1);
      }
      return c;
    }
  }
  fprintf(stderr, "bench_vwap: result has no column '%s'\n", name);
  exit(1);
}

static void sink_resolve(result_sink* k, const struct ArrowSchema* s) {
  if (k->w == W1) {
    k->col_ws = find_child(s, "window_start", NULL);
    const char* f = s->children[k->col_ws]->format;
    k->ws_mul = 1;
    k->ws_div = 1;
    if (strcmp(f, "l") == 0 || strncmp(f, "tsm:", 4) == 0) {
    } else if (strncmp(f, "tss:", 4) == 0) {
      k->ws_mul = 1000;
    } else if (strncmp(f, "tsu:", 4) == 0) {
      k->ws_div = 1000;
    } else if (strncmp(f, "tsn:", 4) == 0) {
      k->ws_div = 1000000;
    } else {
      fprintf(stderr, "bench_vwap: window_start has unexpected format '%s'\n", f);
      exit(1);
    }
    k->col_trades = find_child(s, "trades", "l");
    k->col_value = find_child(s, "vwap", "g");
  } else {
    k->col_value = find_child(s, "notional", "g");
  }
  k->resolved = true;
}

static bool is_valid(const struct ArrowArray* col, int64_t i) {
  if (col->null_count == 0 || col->buffers[0] == NULL) return true;
  const uint8_t* bits = col->buffers[0];
  return (bits[i >> 3] >> (i & 7)) & 1;
}

/* Account one result batch; returns the largest window_start in it in ms (W1), or
 * INT64_MIN (W2 or an empty batch). Does not release the batch. */
static int64_t sink_take(result_sink* k, const struct ArrowArray* out) {
  int64_t n = out->length;
  int64_t max_ws = INT64_MIN;
  k->rows += n;
  k->batches++;
  const struct ArrowArray* val = out->children[k->col_value];
  const double* vd = (const double*)val->buffers[1];
  int64_t vo = out->offset + val->offset;
  double vsum = 0;
  for (int64_t i = 0; i < n; i++) {
    if (is_valid(val, vo + i)) vsum += vd[vo + i];
  }
  k->value_sum += vsum;
  if (k->w == W1) {
    const struct ArrowArray* tr = out->children[k->col_trades];
    const int64_t* td = (const int64_t*)tr->buffers[1];
    int64_t to = out->offset + tr->offset;
    const struct ArrowArray* ws = out->children[k->col_ws];
    const int64_t* wd = (const int64_t*)ws->buffers[1];
    int64_t wo = out->offset + ws->offset;
    for (int64_t i = 0; i < n; i++) {
      if (is_valid(tr, to + i)) k->trades_sum += td[to + i];
      if (is_valid(ws, wo + i) && wd[wo + i] > max_ws) max_ws = wd[wo + i];
    }
    if (max_ws != INT64_MIN) max_ws = max_ws * k->ws_mul / k->ws_div;
  }
  return max_ws;
}

/* Take one batch from `sub` (waiting up to timeout_ms); returns true with *out filled if
 * one came. Resolves the sink's columns from the first batch's schema. */
static bool next_batch(laminar_subscription* sub, result_sink* k, int64_t timeout_ms,
                       struct ArrowArray* out) {
  laminar_error err;
  struct ArrowSchema schema;
  laminar_code rc =
      laminar_subscription_next(sub, timeout_ms, out, k->resolved ? NULL : &schema, &err);
  check_rc(rc, &err, "laminar_subscription_next");
  if (out->release == NULL) return false;
  if (!k->resolved) {
    sink_resolve(k, &schema);
    schema.release(&schema);
  }
  return true;
}

/* Check one run's results against the reference; prints what differs. */
static bool sink_verify(const result_sink* k, const dataset* d, const char* label) {
  bool ok = true;
  if (k->w == W1) {
    double rel = fabs(k->value_sum - d->w1_vwap_sum) / fabs(d->w1_vwap_sum);
    if (k->rows != d->w1_rows || k->trades_sum != d->n || !(rel < 1e-9)) {
      fprintf(
          stderr,
          "CHECK FAILED %s: rows=%lld (expected %lld) sum(trades)=%lld (expected %lld) "
          "sum(vwap)=%.6f (expected %.6f)\n",
          label, (long long)k->rows, (long long)d->w1_rows, (long long)k->trades_sum,
          (long long)d->n, k->value_sum, d->w1_vwap_sum);
      ok = false;
    }
  } else {
    double rel = fabs(k->value_sum - d->w2_notional_sum) / fabs(d->w2_notional_sum);
    if (k->rows != d->w2_rows || !(rel < 1e-9)) {
      fprintf(stderr,
              "CHECK FAILED %s: rows=%lld (expected %lld) sum(notional)=%.3f "
              "(expected %.3f)\n",
              label, (long long)k->rows, (long long)d->w2_rows, k->value_sum,
              d->w2_notional_sum);
      ok = false;
    }
  }
  return ok;
}

/* ------------------------------------------------------------------------------------
 * One run: open a database, declare the workload, push everything, collect the results
 * ------------------------------------------------------------------------------------ */

typedef struct run_ctx {
  laminar_db* db;
  laminar_source* src;
  laminar_subscription* sub;
} run_ctx;

/* --durable: off (default) | ckpt (checkpoints, no WAL) | async | sync WAL with
 * checkpoints every --checkpoint-ms; the database lives in a fresh directory
 * under --data-dir (default /tmp), removed after the run. */
static const char* g_durable = "off";
static const char* g_checkpoint_ms = "10000";
static const char* g_data_dir = "/tmp";
static int g_cores = 1;    /* config `cores` of every database opened (--cores) */
static bool g_pin = false; /* --pin: reactors pinned, the rest on the CPUs left */
/* --prequeue: the threaded mode pushes every batch (and the final watermark)
 * before laminar_start into a queue that holds them all, then times start ->
 * last result: the reactors alone, no producer thread competing for a core. */
static bool g_prequeue = false;
static bool g_file_sink =
    false; /* --file-sink: CREATE SINK ... INTO FILE on the output */
static int64_t g_queue_size = 0; /* buffer_size for --prequeue (a power of two) */
static char g_run_dir[4096];
/* --set key=value (repeatable): more config for durable runs, e.g. wal_io=pwrite
 * or wal_direct_io=off. */
static const char* g_sets[8];
static int g_nsets;
static bool g_udf = false;  /* --udf: W1_UDF_SQL / W2_UDF_SQL */
static bool g_udaf = false; /* --udaf: W1_UDAF_SQL */

/* fx's result: one malloc'd block (struct, buffer pointers, values), freed by
 * its release. */
typedef struct fx_out {
  const void* buffers[2];
  double values[];
} fx_out;

static void fx_release(struct ArrowArray* a) {
  free(a->private_data);
  a->release = NULL;
}

static void fx_schema_release(struct ArrowSchema* s) { s->release = NULL; }

/* A DOUBLE array of n rows into out / out_schema, its values for the caller
 * to write; NULL (and the message in error) when out of memory. */
static double* double_result(int64_t n, struct ArrowArray* out,
                             struct ArrowSchema* out_schema, char* error, size_t cap) {
  fx_out* o = malloc(sizeof *o + sizeof(double) * (size_t)(n + 1));
  if (o == NULL) {
    snprintf(error, cap, "out of memory");
    return NULL;
  }
  o->buffers[0] = NULL;
  o->buffers[1] = o->values;
  *out = (struct ArrowArray){.length = n,
                             .n_buffers = 2,
                             .buffers = o->buffers,
                             .release = fx_release,
                             .private_data = o};
  *out_schema = (struct ArrowSchema){.format = "g",
                                     .name = "",
                                     .flags = ARROW_FLAG_NULLABLE,
                                     .release = fx_schema_release};
  return o->values;
}

static int fx_fn(void* user, const struct ArrowArray* args,
                 const struct ArrowSchema* args_schema, struct ArrowArray* out,
                 struct ArrowSchema* out_schema, char* error, size_t cap) {
  (void)user;
  (void)args_schema;
  const struct ArrowArray* x = args->children[0];
  const double* in = (const double*)x->buffers[1] + x->offset;
  double* values = double_result(x->length, out, out_schema, error, cap);
  if (values == NULL) return 1;
  for (int64_t i = 0; i < x->length; i++) values[i] = in[i] * 1.0;
  return 0;
}

/* pvsum(price DOUBLE, volume BIGINT) -> DOUBLE: the sum of price * volume. */
typedef struct pvsum_state {
  double sum;
  int64_t n;
} pvsum_state;

static int pvsum_update(void* user, void* states, const uint32_t* groups,
                        const struct ArrowArray* args, const struct ArrowSchema* schema,
                        char* error, size_t cap) {
  (void)user;
  (void)schema;
  (void)error;
  (void)cap;
  const struct ArrowArray* p = args->children[0];
  const struct ArrowArray* v = args->children[1];
  const double* price = (const double*)p->buffers[1] + p->offset;
  const int64_t* volume = (const int64_t*)v->buffers[1] + v->offset;
  pvsum_state* st = states;
  for (int64_t i = 0; i < args->length; i++) {
    st[groups[i]].sum += price[i] * (double)volume[i];
    st[groups[i]].n++;
  }
  return 0;
}

static int pvsum_merge(void* user, void* state, const void* other, char* error,
                       size_t cap) {
  (void)user;
  (void)error;
  (void)cap;
  pvsum_state* a = state;
  const pvsum_state* b = other;
  a->sum += b->sum;
  a->n += b->n;
  return 0;
}

static int pvsum_finalize(void* user, const void* states, int64_t n,
                          struct ArrowArray* out, struct ArrowSchema* out_schema,
                          char* error, size_t cap) {
  (void)user;
  const pvsum_state* st = states;
  double* values = double_result(n, out, out_schema, error, cap);
  if (values == NULL) return 1;
  for (int64_t i = 0; i < n; i++) values[i] = st[i].sum; /* every group has rows */
  return 0;
}

static void remove_tree(const char* dir) {
  char cmd[4200];
  if (snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir) < (int)sizeof cmd && system(cmd) != 0)
    fprintf(stderr, "bench_vwap: could not remove %s\n", dir);
}

/* --pin: this thread (and what it starts from now on) on CPUs g_cores.. if the
 * reactors leave any, else on every CPU. */
static void pin_app_threads(void) {
  long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
  cpu_set_t set;
  CPU_ZERO(&set);
  for (long c = g_cores < ncpu ? g_cores : 0; c < ncpu && c < CPU_SETSIZE; c++)
    CPU_SET(c, &set);
  if (sched_setaffinity(0, sizeof set, &set) != 0)
    perror("bench_vwap: sched_setaffinity");
}

static void run_open(run_ctx* r, workload w) {
  laminar_error err;
  laminar_config* cfg = NULL;
  if (g_pin) pin_app_threads();
  if (g_cores > 1 || g_prequeue || g_pin) {
    char text[32];
    check_rc(laminar_config_create(&cfg), NULL, "laminar_config_create");
    snprintf(text, sizeof text, "%d", g_cores);
    check_rc(laminar_config_set(cfg, "cores", text, &err), &err, "cores");
    if (g_pin)
      check_rc(laminar_config_set(cfg, "core_affinity", "true", &err), &err, "affinity");
    if (g_prequeue) {
      snprintf(text, sizeof text, "%lld", (long long)g_queue_size);
      check_rc(laminar_config_set(cfg, "buffer_size", text, &err), &err, "buffer_size");
    }
  }
  if (strcmp(g_durable, "off") != 0) {
    snprintf(g_run_dir, sizeof g_run_dir, "%s/lm_bench_XXXXXX", g_data_dir);
    if (mkdtemp(g_run_dir) == NULL) {
      perror("mkdtemp");
      exit(1);
    }
    char interval[64];
    snprintf(interval, sizeof interval, "%s ms", g_checkpoint_ms);
    if (cfg == NULL) check_rc(laminar_config_create(&cfg), NULL, "laminar_config_create");
    check_rc(laminar_config_set(cfg, "data_dir", g_run_dir, &err), &err, "data_dir");
    check_rc(laminar_config_set(cfg, "checkpoint_interval", interval, &err), &err,
             "checkpoint_interval");
    check_rc(
        laminar_config_set(cfg, "wal_mode",
                           strcmp(g_durable, "ckpt") == 0 ? "none" : g_durable, &err),
        &err, "wal_mode");
    for (int i = 0; i < g_nsets; i++) {
      char kv[256];
      snprintf(kv, sizeof kv, "%s", g_sets[i]);
      char* eq = strchr(kv, '=');
      if (eq == NULL) {
        fprintf(stderr, "bench_vwap: --set wants KEY=VALUE, got '%s'\n", g_sets[i]);
        exit(2);
      }
      *eq = '\0';
      check_rc(laminar_config_set(cfg, kv, eq + 1, &err), &err, kv);
    }
  }
  check_rc(laminar_open(cfg, &r->db, &err), &err, "laminar_open");
  laminar_config_destroy(cfg);
  check_rc(laminar_execute(r->db, SOURCE_SQL, &err), &err, "CREATE SOURCE");
  if (g_udf) {
    const char* dbl[] = {"g"};
    check_rc(laminar_function_register(
                 r->db, "fx", dbl, 1, "g", fx_fn, NULL, NULL,
                 LAMINAR_FUNCTION_DETERMINISTIC | LAMINAR_FUNCTION_THREAD_SAFE, &err),
             &err, "laminar_function_register");
  }
  if (g_udaf) {
    const char* gl[] = {"g", "l"};
    check_rc(laminar_aggregate_register(r->db, "pvsum", gl, 2, "g", sizeof(pvsum_state),
                                        NULL, pvsum_update, NULL, pvsum_merge,
                                        pvsum_finalize, NULL, NULL, NULL, NULL, NULL,
                                        LAMINAR_FUNCTION_THREAD_SAFE, &err),
             &err, "laminar_aggregate_register");
  }
  const char* sql = w == W1 ? (g_udaf  ? W1_UDAF_SQL
                               : g_udf ? W1_UDF_SQL
                                       : W1_SQL)
                            : (g_udf ? W2_UDF_SQL : W2_SQL);
  check_rc(laminar_execute(r->db, sql, &err), &err, "CREATE STREAM");
  if (g_file_sink && strcmp(g_durable, "off") != 0) {
    char sql[4400];
    snprintf(sql, sizeof sql, "CREATE SINK out_file FROM %s INTO FILE (path = '%s_sink')",
             w == W1 ? "w1" : "w2", g_run_dir);
    check_rc(laminar_execute(r->db, sql, &err), &err, "CREATE SINK");
  }
  check_rc(laminar_source_open(r->db, "trades", &r->src, &err), &err,
           "laminar_source_open");
  check_rc(laminar_subscribe(r->db, w == W1 ? "w1" : "w2", &r->sub, &err), &err,
           "laminar_subscribe");
}

/* Close everything; checks the stream dropped no late rows and the core released every
 * input batch. */
static bool run_close(run_ctx* r, workload w, dataset* d, const char* label) {
  laminar_error err;
  int64_t late = 0;
  check_rc(laminar_stream_late_rows(r->db, w == W1 ? "w1" : "w2", &late, &err), &err,
           "laminar_stream_late_rows");
  laminar_subscription_close(r->sub);
  laminar_source_close(r->src);
  check_rc(laminar_close(r->db), NULL, "laminar_close");
  if (strcmp(g_durable, "off") != 0) {
    remove_tree(g_run_dir);
    char sink_dir[4200];
    snprintf(sink_dir, sizeof sink_dir, "%s_sink", g_run_dir);
    if (g_file_sink) remove_tree(sink_dir);
  }
  bool ok = true;
  if (late != 0) {
    fprintf(stderr, "CHECK FAILED %s: %lld late rows\n", label, (long long)late);
    ok = false;
  }
  long long live = atomic_load_explicit(&d->live_batches, memory_order_relaxed);
  if (live != 0) {
    fprintf(stderr, "CHECK FAILED %s: %lld input batches never released\n", label, live);
    ok = false;
  }
  return ok;
}

/* Push one batch, retrying while the source queue is full. `inline_db` (inline mode)
 * is driven and `sub` drained between retries so the queue can empty. */
static void push_batch(run_ctx* r, struct ArrowArray* a, const struct ArrowSchema* s,
                       bool inline_mode, result_sink* k) {
  for (;;) {
    laminar_error err;
    laminar_code rc = laminar_source_push(r->src, a, s, &err);
    if (rc == LAMINAR_OK) return;
    if (rc != LAMINAR_ERR_QUEUE_FULL) check_rc(rc, &err, "laminar_source_push");
    if (inline_mode) {
      check_rc(laminar_run_until_idle(r->db, &err), &err, "laminar_run_until_idle");
      struct ArrowArray out;
      while (next_batch(r->sub, k, 0, &out)) {
        sink_take(k, &out);
        out.release(&out);
      }
    } else {
      sched_yield();
    }
  }
}

static void push_final_watermark(run_ctx* r) {
  for (;;) {
    laminar_error err;
    laminar_code rc = laminar_source_watermark(r->src, INT64_MAX, &err);
    if (rc == LAMINAR_OK) return;
    if (rc != LAMINAR_ERR_QUEUE_FULL) check_rc(rc, &err, "laminar_source_watermark");
    sched_yield();
  }
}

/* CPU time of the calling thread (inline mode: the engine's thread). */
static int64_t thread_cpu_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* Inline mode: returns the elapsed seconds, *cpu_secs the CPU time the
 * calling thread (which also runs the engine) spent in them (unlike the
 * elapsed time, it leaves out what the hypervisor and other processes take);
 * *sink holds the results. */
static double run_inline(dataset* d, workload w, const input_schema* s, result_sink* k,
                         bool* ok, double* cpu_secs) {
  run_ctx r;
  run_open(&r, w);
  struct ArrowArray* batches = xcalloc((size_t)d->nbatches, sizeof *batches);
  for (int64_t b = 0; b < d->nbatches; b++) make_batch(d, b, &batches[b]);

  laminar_error err;
  struct ArrowArray out;
  int64_t t0 = now_ns(), c0 = thread_cpu_ns();
  for (int64_t b = 0; b < d->nbatches; b++) {
    push_batch(&r, &batches[b], &s->root, true, k);
    check_rc(laminar_run_until_idle(r.db, &err), &err, "laminar_run_until_idle");
    while (next_batch(r.sub, k, 0, &out)) {
      sink_take(k, &out);
      out.release(&out);
    }
  }
  push_final_watermark(&r);
  check_rc(laminar_run_until_idle(r.db, &err), &err, "laminar_run_until_idle");
  while (next_batch(r.sub, k, 0, &out)) {
    sink_take(k, &out);
    out.release(&out);
  }
  int64_t t1 = now_ns();
  *cpu_secs = (double)(thread_cpu_ns() - c0) * 1e-9;

  free(batches);  // all moved into the core
  *ok = run_close(&r, w, d, w == W1 ? "W1 inline" : "W2 inline") && *ok;
  return (double)(t1 - t0) * 1e-9;
}

/* Threaded mode state shared by the producer (main) and the consumer thread. */
typedef struct threaded_run {
  run_ctx r;
  dataset* d;
  result_sink sink;
  atomic_bool stopped;  // main: release after laminar_stop returned; consumer: acquire
  int64_t* push_ns;     // [nbatches+1]: push b; the last entry is the final watermark
  int64_t* arrive_ns;   // [cap]: arrival of result batch k
  int64_t* closer;      // [cap]: input index whose push produced result batch k (W1)
  int64_t cap;
  int64_t narrived;
  int64_t last_arrival_ns;
} threaded_run;

static void* consumer_main(void* arg) {
  threaded_run* t = arg;
  struct ArrowArray out;
  for (;;) {
    /* Block for a batch; the 20 ms timeout only bounds how late we notice the end. */
    bool stopped = atomic_load_explicit(&t->stopped, memory_order_acquire);
    if (!next_batch(t->r.sub, &t->sink, stopped ? 0 : 20, &out)) {
      if (stopped) break;  // stop delivered everything before `stopped` was set
      continue;
    }
    int64_t at = now_ns();
    int64_t max_ws = sink_take(&t->sink, &out);
    out.release(&out);
    if (t->narrived == t->cap) {
      t->cap *= 2;
      t->arrive_ns = realloc(t->arrive_ns, (size_t)t->cap * sizeof *t->arrive_ns);
      t->closer = realloc(t->closer, (size_t)t->cap * sizeof *t->closer);
      if (t->arrive_ns == NULL || t->closer == NULL) {
        fprintf(stderr, "bench_vwap: out of memory\n");
        exit(2);
      }
    }
    int64_t closer = -1;
    if (max_ws != INT64_MIN) {
      int64_t row = max_ws + WINDOW_MS - TS0;  // the row whose ts closed the window
      closer = row >= 0 && row < t->d->n ? row / t->d->batch_rows : t->d->nbatches;
    }
    t->arrive_ns[t->narrived] = at;
    t->closer[t->narrived] = closer;
    t->narrived++;
    t->last_arrival_ns = at;
  }
  return NULL;
}

/* Latency samples of one threaded run, in ns, appended to *lat (grown as needed).
 * Returns false if results cannot be matched to pushes (then nothing is appended). */
static bool collect_latency(const threaded_run* t, workload w, int64_t** lat,
                            int64_t* nlat, int64_t* cap) {
  int64_t need = *nlat + t->narrived;
  if (need > *cap) {
    *cap = need * 2;
    *lat = realloc(*lat, (size_t)*cap * sizeof **lat);
    if (*lat == NULL) exit(2);
  }
  if (w == W2) {
    if (t->narrived != t->d->nbatches) return false;
    for (int64_t k = 0; k < t->narrived; k++)
      (*lat)[(*nlat)++] = t->arrive_ns[k] - t->push_ns[k];
  } else {
    for (int64_t k = 0; k < t->narrived; k++) {
      if (t->closer[k] < 0) return false;
    }
    for (int64_t k = 0; k < t->narrived; k++) {
      (*lat)[(*nlat)++] = t->arrive_ns[k] - t->push_ns[t->closer[k]];
    }
  }
  return true;
}

/* Threaded mode; pace_rows_per_s > 0 pushes on a schedule. Returns elapsed seconds from
 * the first push to the arrival of the last result batch. Appends latency samples. */
static double run_threaded(dataset* d, workload w, const input_schema* s,
                           double pace_rows_per_s, result_sink* k, bool* ok, bool* lat_ok,
                           int64_t** lat, int64_t* nlat, int64_t* lat_cap) {
  threaded_run* t = xcalloc(1, sizeof *t);
  t->d = d;
  t->sink = *k;
  atomic_init(&t->stopped, false);
  t->push_ns = xcalloc((size_t)d->nbatches + 1, sizeof *t->push_ns);
  t->cap = d->nbatches + 16;
  t->arrive_ns = xcalloc((size_t)t->cap, sizeof *t->arrive_ns);
  t->closer = xcalloc((size_t)t->cap, sizeof *t->closer);
  run_open(&t->r, w);
  struct ArrowArray* batches = xcalloc((size_t)d->nbatches, sizeof *batches);
  for (int64_t b = 0; b < d->nbatches; b++) make_batch(d, b, &batches[b]);

  laminar_error err;
  if (g_prequeue) { /* everything queued before the reactors start */
    for (int64_t b = 0; b < d->nbatches; b++)
      push_batch(&t->r, &batches[b], &s->root, false, k);
    push_final_watermark(&t->r);
  }
  int64_t t0 = now_ns();
  check_rc(laminar_start(t->r.db, &err), &err, "laminar_start");
  pthread_t consumer;
  if (pthread_create(&consumer, NULL, consumer_main, t) != 0) {
    fprintf(stderr, "bench_vwap: pthread_create failed\n");
    exit(1);
  }
  double interval_ns =
      pace_rows_per_s > 0 ? (double)d->batch_rows / pace_rows_per_s * 1e9 : 0;
  if (!g_prequeue) {
    t0 = now_ns();
    for (int64_t b = 0; b < d->nbatches; b++) {
      if (interval_ns > 0) sleep_until_ns(t0 + (int64_t)((double)b * interval_ns));
      t->push_ns[b] = now_ns();
      push_batch(&t->r, &batches[b], &s->root, false, k);
    }
    t->push_ns[d->nbatches] = now_ns();
    push_final_watermark(&t->r);
  }
  check_rc(laminar_stop(t->r.db, &err), &err, "laminar_stop");
  int64_t stopped_ns = now_ns();
  atomic_store_explicit(&t->stopped, true, memory_order_release);
  pthread_join(consumer, NULL);
  if (t->narrived == 0) t->last_arrival_ns = stopped_ns;  // no result at all: until stop

  *k = t->sink;
  free(batches);
  const char* label = w == W1 ? "W1 threaded" : "W2 threaded";
  *ok = run_close(&t->r, w, d, label) && *ok;
  if (g_prequeue) {
    *lat_ok = false; /* nothing was pushed while it ran */
  } else {
    *lat_ok = collect_latency(t, w, lat, nlat, lat_cap) && *lat_ok;
  }
  double secs = (double)(t->last_arrival_ns - t0) * 1e-9;
  free(t->push_ns);
  free(t->arrive_ns);
  free(t->closer);
  free(t);
  return secs;
}

/* ------------------------------------------------------------------------------------
 * Driver
 * ------------------------------------------------------------------------------------ */

typedef struct options {
  int64_t n;
  int reps;
  int64_t batch_rows;
  bool run_w1, run_w2;
  bool run_inline, run_threaded;
  double pace;      // fraction of the threaded rate for the paced latency run; 0: skip
  double w1b, w2b;  // limit_vwap rows/s, 0 when not given
  int cores[8];     // --cores: reactor counts to run, in order
  int ncores;
} options;

static void usage(void) {
  fprintf(
      stderr,
      "usage: bench_vwap [N] [--reps R] [--batch B] [--only w1|w2]\n"
      "                  [--mode all|inline|threaded] [--pace F]\n"
      "                  [--w1b-rows-per-s X] [--w2b-rows-per-s Y]\n"
      "                  [--durable off|ckpt|async|sync] [--checkpoint-ms MS]\n"
      "                  [--set KEY=VALUE ...  (durable runs: e.g. wal_direct_io=off)]\n"
      "                  [--data-dir DIR] [--cores LIST] [--prequeue] [--pin] "
      "[--file-sink] [--udf] [--udaf]\n");
  exit(2);
}

static options parse_args(int argc, char** argv) {
  options o = {.n = 10000000,
               .reps = 3,
               .batch_rows = 8192,
               .run_w1 = true,
               .run_w2 = true,
               .run_inline = true,
               .run_threaded = true,
               .pace = 0.5,
               .w1b = 0,
               .w2b = 0,
               .cores = {1},
               .ncores = 1};
  for (int i = 1; i < argc; i++) {
    const char* a = argv[i];
    const char* v = i + 1 < argc ? argv[i + 1] : NULL;
    if (strcmp(a, "--reps") == 0 && v) {
      o.reps = atoi(v), i++;
    } else if (strcmp(a, "--batch") == 0 && v) {
      o.batch_rows = strtoll(v, NULL, 10), i++;
    } else if (strcmp(a, "--only") == 0 && v) {
      o.run_w1 = strcmp(v, "w1") == 0;
      o.run_w2 = strcmp(v, "w2") == 0;
      i++;
    } else if (strcmp(a, "--mode") == 0 && v) {
      o.run_inline = strcmp(v, "all") == 0 || strcmp(v, "inline") == 0;
      o.run_threaded = strcmp(v, "all") == 0 || strcmp(v, "threaded") == 0;
      i++;
    } else if (strcmp(a, "--pace") == 0 && v) {
      o.pace = strtod(v, NULL), i++;
    } else if (strcmp(a, "--durable") == 0 && v) {
      g_durable = v, i++;
      if (strcmp(v, "off") != 0 && strcmp(v, "ckpt") != 0 && strcmp(v, "async") != 0 &&
          strcmp(v, "sync") != 0)
        usage();
    } else if (strcmp(a, "--set") == 0 && v && g_nsets < 8) {
      g_sets[g_nsets++] = v, i++;
    } else if (strcmp(a, "--checkpoint-ms") == 0 && v) {
      g_checkpoint_ms = v, i++;
    } else if (strcmp(a, "--data-dir") == 0 && v) {
      g_data_dir = v, i++;
    } else if (strcmp(a, "--prequeue") == 0) {
      g_prequeue = true;
    } else if (strcmp(a, "--file-sink") == 0) {
      g_file_sink = true;
    } else if (strcmp(a, "--pin") == 0) {
      g_pin = true;
    } else if (strcmp(a, "--udf") == 0) {
      g_udf = true;
    } else if (strcmp(a, "--udaf") == 0) {
      g_udaf = true;
    } else if (strcmp(a, "--cores") == 0 && v) {
      o.ncores = 0;
      for (const char* c = v; *c != '\0' && o.ncores < 8;) {
        char* end;
        long k = strtol(c, &end, 10);
        if (end == c || k < 1 || k > 64) usage();
        o.cores[o.ncores++] = (int)k;
        c = *end == ',' ? end + 1 : end;
        if (*end != ',' && *end != '\0') usage();
      }
      i++;
    } else if (strcmp(a, "--w1b-rows-per-s") == 0 && v) {
      o.w1b = strtod(v, NULL), i++;
    } else if (strcmp(a, "--w2b-rows-per-s") == 0 && v) {
      o.w2b = strtod(v, NULL), i++;
    } else if (a[0] >= '0' && a[0] <= '9') {
      o.n = (int64_t)strtod(a, NULL);  // accepts 1e7 as well as 10000000
    } else {
      usage();
    }
  }
  if (o.n < 1 || o.reps < 1 || o.reps > MAX_REPS || o.batch_rows < 1 ||
      o.batch_rows > 1 << 24 || (!o.run_w1 && !o.run_w2) ||
      (!o.run_inline && !o.run_threaded) || o.pace < 0 || o.pace > 1) {
    usage();
  }
  return o;
}

/* The 1/5/15-minute load average, for the record of how busy the machine was. */
static const char* loadavg_text(void) {
  static char buf[64];
  FILE* f = fopen("/proc/loadavg", "r");
  buf[0] = '\0';
  if (f != NULL) {
    if (fgets(buf, sizeof buf, f) == NULL) buf[0] = '\0';
    fclose(f);
  }
  size_t n = strlen(buf);
  if (n > 0 && buf[n - 1] == '\n') buf[n - 1] = '\0';
  return buf;
}

static void print_result(const char* name, const char* mode, const options* o,
                         double secs, const result_sink* k, double limit) {
  double rate = (double)o->n / secs;
  printf(
      "RESULT %s %-8s N=%lld reps=%d median %.4f s  %8.2f M rows/s  %7.1f ns/event  "
      "rows=%lld batches=%lld",
      name, mode, (long long)o->n, o->reps, secs, rate / 1e6, secs * 1e9 / (double)o->n,
      (long long)k->rows, (long long)k->batches);
  if (limit > 0) printf("  ratio_to_%sb=%.3f", name, rate / limit);
  printf("\n");
}

/* Each rep's time in the order run (before median_of sorts them): the first
 * rep of a process also pays its one-time costs (the heap's first touch). */
static void print_reps(const char* name, const char* mode, const double* secs, int reps) {
  printf("REPS %s %-8s s:", name, mode);
  for (int r = 0; r < reps; r++) printf(" %.4f", secs[r]);
  printf("\n");
}

static void print_latency(const char* name, const char* mode, int64_t* lat, int64_t n,
                          bool matched, const char* why) {
  if (!matched) {
    printf("LATENCY %s %-8s not reported: %s\n", name, mode, why);
    return;
  }
  qsort(lat, (size_t)n, sizeof *lat, cmp_i64);
  printf(
      "LATENCY %s %-8s push->result us: p50=%.1f p99=%.1f p99.9=%.1f max=%.1f (%lld "
      "samples)\n",
      name, mode, (double)quantile(lat, (size_t)n, 0.5) / 1e3,
      (double)quantile(lat, (size_t)n, 0.99) / 1e3,
      (double)quantile(lat, (size_t)n, 0.999) / 1e3, (double)lat[n - 1] / 1e3,
      (long long)n);
}

static bool bench_workload(dataset* d, workload w, const input_schema* s,
                           const options* o, double* out_threaded_secs) {
  const char* name = w == W1 ? "W1" : "W2";
  double limit = w == W1 ? o->w1b : o->w2b;
  bool ok = true;
  const char* mismatch = w == W2 ? "result batches do not pair one-to-one with pushes"
                                 : "a result batch carried no window_start";

  /* (a) inline */
  double secs[MAX_REPS];
  result_sink last = {0};
  if (o->run_inline) {
    double cpu[MAX_REPS];
    for (int rep = 0; rep < o->reps; rep++) {
      result_sink k = {.w = w};
      secs[rep] = run_inline(d, w, s, &k, &ok, &cpu[rep]);
      char label[32];
      snprintf(label, sizeof label, "%s inline rep %d", name, rep);
      ok = sink_verify(&k, d, label) && ok;
      last = k;
    }
    print_reps(name, "inline", secs, o->reps);
    print_result(name, "inline", o, median_of(secs, o->reps), &last, limit);
    double c = median_of(cpu, o->reps);
    printf(
        "THREADCPU %s inline   N=%lld reps=%d median %.4f s  %7.1f ns/event "
        "(the engine's thread)\n",
        name, (long long)o->n, o->reps, c, c * 1e9 / (double)o->n);
  }
  if (!o->run_threaded) return ok;

  /* (b) threaded, as fast as the producer can push */
  int64_t* lat = NULL;
  int64_t nlat = 0, lat_cap = 0;
  bool lat_ok = true;
  for (int rep = 0; rep < o->reps; rep++) {
    result_sink k = {.w = w};
    secs[rep] = run_threaded(d, w, s, 0, &k, &ok, &lat_ok, &lat, &nlat, &lat_cap);
    char label[32];
    snprintf(label, sizeof label, "%s threaded rep %d", name, rep);
    ok = sink_verify(&k, d, label) && ok;
    last = k;
  }
  print_reps(name, "threaded", secs, o->reps);
  double threaded_secs = median_of(secs, o->reps);
  *out_threaded_secs = threaded_secs;
  char tmode[32];
  if (g_prequeue) {
    snprintf(tmode, sizeof tmode, "queued/c%d", g_cores);
  } else if (g_cores > 1) {
    snprintf(tmode, sizeof tmode, "thr/c%d", g_cores);
  } else {
    snprintf(tmode, sizeof tmode, "threaded");
  }
  print_result(name, tmode, o, threaded_secs, &last, limit);
  print_latency(name, "threaded", lat, nlat, lat_ok, mismatch);

  /* (c) paced at a fraction of the threaded rate: latency without a standing queue */
  if (o->pace > 0) {
    double pace_rate = o->pace * (double)o->n / threaded_secs;
    result_sink k = {.w = w};
    nlat = 0;
    lat_ok = true;
    run_threaded(d, w, s, pace_rate, &k, &ok, &lat_ok, &lat, &nlat, &lat_cap);
    ok = sink_verify(&k, d, w == W1 ? "W1 paced" : "W2 paced") && ok;
    char mode[32];
    snprintf(mode, sizeof mode, "paced@%.0f%%", o->pace * 100);
    printf("PACED %s pushed at %.2f M rows/s (%.0f%% of threaded)\n", name,
           pace_rate / 1e6, o->pace * 100);
    print_latency(name, mode, lat, nlat, lat_ok, mismatch);
  }
  free(lat);
  return ok;
}

int main(int argc, char** argv) {
  options o = parse_args(argc, argv);
  dataset d;
  int64_t g0 = now_ns();
  dataset_generate(&d, o.n, o.batch_rows);
  for (g_queue_size = 2; g_queue_size < d.nbatches + 2; g_queue_size *= 2) {
  }
  printf(
      "bench_vwap: LaminarDB %s, N=%lld in %lld batches of %lld rows, reps=%d "
      "(generated in %.2f s, not timed)\n",
      laminar_version(), (long long)o.n, (long long)d.nbatches, (long long)o.batch_rows,
      o.reps, (double)(now_ns() - g0) * 1e-9);
  printf(
      "reference: W1 rows=%lld sum(trades)=%lld sum(vwap)=%.6f; W2 rows=%lld "
      "sum(notional)=%.3f\n",
      (long long)d.w1_rows, (long long)o.n, d.w1_vwap_sum, (long long)d.w2_rows,
      d.w2_notional_sum);
  fflush(stdout);

  input_schema schema;
  input_schema_init(&schema);
  bool ok = true;
  for (int w = 0; w < 2; w++) {
    if (!(w == 0 ? o.run_w1 : o.run_w2)) continue;
    double first = 0;
    for (int c = 0; c < o.ncores; c++) {
      g_cores = o.cores[c];
      if (o.ncores > 1) printf("== cores=%d (load %s)\n", g_cores, loadavg_text());
      double secs = 0;
      ok = bench_workload(&d, w == 0 ? W1 : W2, &schema, &o, &secs) && ok;
      if (c == 0) first = secs;
      if (c > 0 && secs > 0 && first > 0) {
        printf("SCALING %s %s cores=%d/%d  %.2f M rows/s vs %.2f M rows/s  ratio %.3f\n",
               w == 0 ? "W1" : "W2", g_prequeue ? "queued" : "threaded", g_cores,
               o.cores[0], (double)o.n / secs / 1e6, (double)o.n / first / 1e6,
               first / secs);
      }
      fflush(stdout);
    }
  }
  schema.root.release(&schema.root);
  dataset_free(&d);
  printf("CHECKS %s\n", ok ? "OK" : "FAILED");
  return ok ? 0 : 1;
}
