/*
 * bench_windows.c -- the W1 benchmark (shared/bench/limit_vwap.c) with the other
 * window kinds and emit modes, end to end through laminar.h, single partition:
 *
 *   hop      W1 over hop(ts, INTERVAL '1' SECOND, INTERVAL '100' MILLISECOND)
 *            (size 10x the hop: every row is in 10 windows), EMIT ON WINDOW CLOSE
 *   session  W1 over session(ts, INTERVAL '5' SECOND) on bursty per-symbol data:
 *            the 100 symbols take turns in groups of 10, each group trading for
 *            20 s (20,000 events), so each symbol has a 20 s burst every 200 s and
 *            its sessions close after 5 s of silence
 *   changes  W1 (tumble 1 s) with EMIT CHANGES: a -1/+1 delta pair per symbol
 *            touched by each pushed batch
 *   session_changes  the session variant with EMIT CHANGES: a -1/+1 pair per
 *            session touched by each pushed batch
 *   running  GROUP BY symbol without a window, EMIT CHANGES (a running VWAP)
 *   approx_percentile  W1 (tumble 1 s) with approx_percentile(price, 0.99) too
 *   median   W1 (tumble 1 s) with the exact median(price) too
 *
 * Data: limit_vwap's spec (event i: z = splitmix64_mix((i+1)*0x9E3779B97F4A7C15),
 * symbol 'S%03d' % (z%100) -- for session the bursty symbol above --, volume
 * 1+(z>>8)%1000, price 100+((z>>24)%100000)/1000.0, ts 1700000000000+i), pushed
 * as Arrow struct batches of --batch rows (default 8192; buffers built before the
 * clock starts). Driver: inline (push, laminar_run_until_idle, drain the
 * subscription), final watermark INT64_MAX; median of --reps runs, a fresh
 * database each. Each run's output is checked: the trades column summed (times
 * _weight for the changelogs) must be 10N for hop and N otherwise, and session
 * must emit as many sessions as a reference pass over the data counts (for
 * session_changes: rows summed by _weight).
 *
 * Usage: bench_windows [N] [--reps R] [--batch B]
 *                      [--only hop|session|changes|running|session_changes|
 *                              approx_percentile|median]
 *                      [--w1b-rows-per-s X]
 * With X (limit_vwap's W1b from the same run, rows/s) each RESULT line carries
 * ratio_to_W1b. Exit status 0 only if every check held.
 */
#define _POSIX_C_SOURCE 200809L

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "laminar.h"

enum { MAX_REPS = 15 };
static const int64_t T0 = 1700000000000LL;
static const int64_t GAP_MS = 5000;

static const char* SOURCE =
    "CREATE SOURCE trades (symbol VARCHAR NOT NULL, price DOUBLE NOT NULL, "
    "volume BIGINT NOT NULL, ts BIGINT NOT NULL, WATERMARK FOR ts AS ts);";
#define VWAP_ITEMS                                                                \
  "SUM(price * volume) / SUM(volume) AS vwap, COUNT(*) AS trades, MAX(price) AS " \
  "max_price, MIN(price) AS min_price FROM trades "

typedef struct variant {
  const char* name;
  const char* sql;
  bool bursty;    /* session data */
  bool changelog; /* output has _weight */
  int64_t copies; /* windows per row */
} variant;

static const variant VARIANTS[] = {
    {"hop",
     "CREATE STREAM w AS SELECT window_start, symbol, " VWAP_ITEMS
     "GROUP BY symbol, hop(ts, INTERVAL '1' SECOND, INTERVAL '100' MILLISECOND);",
     false, false, 10},
    {"session",
     "CREATE STREAM w AS SELECT window_start, window_end, symbol, " VWAP_ITEMS
     "GROUP BY symbol, session(ts, INTERVAL '5' SECOND);",
     true, false, 1},
    {"changes",
     "CREATE STREAM w AS SELECT window_start, symbol, " VWAP_ITEMS
     "GROUP BY symbol, tumble(ts, INTERVAL '1' SECOND) EMIT CHANGES;",
     false, true, 1},
    {"running",
     "CREATE STREAM w AS SELECT symbol, " VWAP_ITEMS "GROUP BY symbol EMIT CHANGES;",
     false, true, 1},
    {"session_changes",
     "CREATE STREAM w AS SELECT window_start, window_end, symbol, " VWAP_ITEMS
     "GROUP BY symbol, session(ts, INTERVAL '5' SECOND) EMIT CHANGES;",
     true, true, 1},
    {"approx_percentile",
     "CREATE STREAM w AS SELECT window_start, symbol, approx_percentile(price, 0.99) AS "
     "p99, " VWAP_ITEMS "GROUP BY symbol, tumble(ts, INTERVAL '1' SECOND);",
     false, false, 1},
    {"median",
     "CREATE STREAM w AS SELECT window_start, symbol, median(price) AS p50, " VWAP_ITEMS
     "GROUP BY symbol, tumble(ts, INTERVAL '1' SECOND);",
     false, false, 1},
};

static int64_t now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (int64_t)t.tv_sec * 1000000000LL + t.tv_nsec;
}

static void* xmalloc(size_t n) {
  void* p = malloc(n ? n : 1);
  if (p == NULL) {
    fprintf(stderr, "bench_windows: out of memory (%zu bytes)\n", n);
    exit(2);
  }
  return p;
}

static void check_rc(laminar_code rc, const laminar_error* err, const char* what) {
  if (rc == LAMINAR_OK) return;
  fprintf(stderr, "bench_windows: %s failed: %s (%s)\n", what, err ? err->message : "",
          laminar_errstr(rc));
  exit(1);
}

static uint64_t mix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

/* Symbol of event i: uniform over 100, or (bursty) one of the 10 of its 20 s turn. */
static int symbol_of(int64_t i, uint64_t z, bool bursty) {
  if (!bursty) return (int)(z % 100);
  return (int)(z % 10) + 10 * (int)((i / 20000) % 10);
}

/* ---- input batches: one malloc'd block per column, released by the core ---------- */

/* Every buffer of one batch, freed when the parent and every child were released
 * (the core may move a child out and release it later, on any thread). */
typedef struct batch_mem {
  atomic_int refs; /* the parent + 4 children */
  struct ArrowArray child[4];
  struct ArrowArray* child_ptr[4];
  const void* bufs[4][3];
  const void* parent_bufs[1];
  int32_t* offsets;
  char* chars;
  double* price;
  int64_t* volume;
  int64_t* ts;
} batch_mem;

static void mem_unref(batch_mem* m) {
  if (atomic_fetch_sub_explicit(&m->refs, 1, memory_order_acq_rel) != 1) return;
  free(m->offsets);
  free(m->chars);
  free(m->price);
  free(m->volume);
  free(m->ts);
  free(m);
}

static void child_release(struct ArrowArray* a) {
  a->release = NULL;
  mem_unref(a->private_data);
}

static void batch_release(struct ArrowArray* a) {
  batch_mem* m = a->private_data;
  for (int c = 0; c < 4; c++) {
    struct ArrowArray* ch = a->children[c];
    if (ch->release != NULL) ch->release(ch);
  }
  a->release = NULL;
  mem_unref(m);
}

/* Rows [start, start + len) of the data set as a struct array. */
static void build_batch(int64_t start, int64_t len, bool bursty, struct ArrowArray* out) {
  batch_mem* m = xmalloc(sizeof *m);
  memset(m, 0, sizeof *m);
  atomic_init(&m->refs, 5);
  m->offsets = xmalloc(sizeof(int32_t) * (size_t)(len + 1));
  m->chars = xmalloc((size_t)(4 * len));
  m->price = xmalloc(sizeof(double) * (size_t)len);
  m->volume = xmalloc(sizeof(int64_t) * (size_t)len);
  m->ts = xmalloc(sizeof(int64_t) * (size_t)len);
  for (int64_t k = 0; k < len; k++) {
    int64_t i = start + k;
    uint64_t z = mix64((uint64_t)(i + 1) * 0x9E3779B97F4A7C15ULL);
    int s = symbol_of(i, z, bursty);
    char* sym = m->chars + 4 * k;
    sym[0] = 'S';
    sym[1] = (char)('0' + s / 100);
    sym[2] = (char)('0' + s / 10 % 10);
    sym[3] = (char)('0' + s % 10);
    m->offsets[k] = (int32_t)(4 * k);
    m->volume[k] = 1 + (int64_t)((z >> 8) % 1000);
    m->price[k] = 100.0 + (double)((z >> 24) % 100000) / 1000.0;
    m->ts[k] = T0 + i;
  }
  m->offsets[len] = (int32_t)(4 * len);
  const void* data[4] = {m->chars, m->price, m->volume, m->ts};
  for (int c = 0; c < 4; c++) {
    m->bufs[c][0] = NULL;
    m->bufs[c][1] = c == 0 ? (const void*)m->offsets : data[c];
    m->bufs[c][2] = c == 0 ? data[0] : NULL;
    m->child[c] = (struct ArrowArray){.length = len,
                                      .n_buffers = c == 0 ? 3 : 2,
                                      .buffers = m->bufs[c],
                                      .release = child_release,
                                      .private_data = m};
    m->child_ptr[c] = &m->child[c];
  }
  *out = (struct ArrowArray){.length = len,
                             .n_buffers = 1,
                             .n_children = 4,
                             .buffers = m->parent_bufs,
                             .children = m->child_ptr,
                             .release = batch_release,
                             .private_data = m};
}

/* The input schema, static: struct<symbol utf8, price double, volume int64, ts int64>. */
static void noop_schema_release(struct ArrowSchema* s) { s->release = NULL; }

static struct ArrowSchema g_fields[4];
static struct ArrowSchema* g_field_ptr[4];
static struct ArrowSchema g_root;

static void schema_init(void) {
  static const char* names[4] = {"symbol", "price", "volume", "ts"};
  static const char* formats[4] = {"u", "g", "l", "l"};
  for (int c = 0; c < 4; c++) {
    g_fields[c] = (struct ArrowSchema){
        .format = formats[c], .name = names[c], .release = noop_schema_release};
    g_field_ptr[c] = &g_fields[c];
  }
  g_root = (struct ArrowSchema){.format = "+s",
                                .name = "",
                                .n_children = 4,
                                .children = g_field_ptr,
                                .release = noop_schema_release};
}

/* ---- one run -------------------------------------------------------------------- */

typedef struct outcome {
  int64_t trades; /* sum of trades (times _weight) */
  int64_t rows;   /* result rows (+1 rows for changelogs) */
  int64_t net;    /* result rows summed by _weight (changelogs: the final rows) */
} outcome;

static int column_of(const struct ArrowSchema* s, const char* name) {
  for (int64_t c = 0; c < s->n_children; c++) {
    if (strcmp(s->children[c]->name, name) == 0) return (int)c;
  }
  fprintf(stderr, "bench_windows: no column %s in the output\n", name);
  exit(1);
}

static void drain(laminar_subscription* sub, const variant* v, outcome* o, int* ctrades,
                  int* cweight) {
  for (;;) {
    laminar_error err;
    struct ArrowArray out;
    struct ArrowSchema schema;
    bool resolve = *ctrades < 0;
    check_rc(laminar_subscription_next(sub, 0, &out, resolve ? &schema : NULL, &err),
             &err, "laminar_subscription_next");
    if (out.release == NULL) return;
    if (resolve) {
      *ctrades = column_of(&schema, "trades");
      *cweight = v->changelog ? column_of(&schema, "_weight") : -1;
      schema.release(&schema);
    }
    const struct ArrowArray* t = out.children[*ctrades];
    const int64_t* trades = (const int64_t*)t->buffers[1] + t->offset;
    const int64_t* weight = NULL;
    if (*cweight >= 0) {
      const struct ArrowArray* w = out.children[*cweight];
      weight = (const int64_t*)w->buffers[1] + w->offset;
    }
    for (int64_t r = 0; r < out.length; r++) {
      int64_t wt = weight ? weight[r] : 1;
      o->trades += wt * trades[r];
      o->rows += wt > 0;
      o->net += wt;
    }
    out.release(&out);
  }
}

static double run_once(const variant* v, int64_t n, int64_t batch_rows, outcome* o) {
  laminar_error err;
  laminar_db* db;
  laminar_source* src;
  laminar_subscription* sub;
  check_rc(laminar_open(NULL, &db, &err), &err, "laminar_open");
  check_rc(laminar_execute(db, SOURCE, &err), &err, "CREATE SOURCE");
  check_rc(laminar_execute(db, v->sql, &err), &err, "CREATE STREAM");
  check_rc(laminar_source_open(db, "trades", &src, &err), &err, "laminar_source_open");
  check_rc(laminar_subscribe(db, "w", &sub, &err), &err, "laminar_subscribe");
  int64_t nb = (n + batch_rows - 1) / batch_rows;
  struct ArrowArray* batches = xmalloc(sizeof *batches * (size_t)nb);
  for (int64_t b = 0; b < nb; b++) {
    int64_t start = b * batch_rows;
    build_batch(start, n - start < batch_rows ? n - start : batch_rows, v->bursty,
                &batches[b]);
  }
  int ctrades = -1, cweight = -1;
  *o = (outcome){0, 0, 0};
  int64_t t0 = now_ns();
  for (int64_t b = 0; b < nb; b++) {
    check_rc(laminar_source_push(src, &batches[b], &g_root, &err), &err,
             "laminar_source_push");
    check_rc(laminar_run_until_idle(db, &err), &err, "laminar_run_until_idle");
    drain(sub, v, o, &ctrades, &cweight);
  }
  check_rc(laminar_source_watermark(src, INT64_MAX, &err), &err,
           "laminar_source_watermark");
  check_rc(laminar_run_until_idle(db, &err), &err, "laminar_run_until_idle");
  drain(sub, v, o, &ctrades, &cweight);
  int64_t t1 = now_ns();
  int64_t late = 0;
  check_rc(laminar_stream_late_rows(db, "w", &late, &err), &err,
           "laminar_stream_late_rows");
  if (late != 0) {
    fprintf(stderr, "CHECK FAILED %s: %lld late rows\n", v->name, (long long)late);
    o->trades = -1;
  }
  laminar_subscription_close(sub);
  laminar_source_close(src);
  check_rc(laminar_close(db), NULL, "laminar_close");
  free(batches);
  return (double)(t1 - t0) * 1e-9;
}

/* Sessions in the data: per symbol, a new one after a silence of GAP_MS or more. */
static int64_t reference_sessions(int64_t n) {
  int64_t last[100], sessions = 0;
  for (int s = 0; s < 100; s++) last[s] = INT64_MIN;
  for (int64_t i = 0; i < n; i++) {
    uint64_t z = mix64((uint64_t)(i + 1) * 0x9E3779B97F4A7C15ULL);
    int s = symbol_of(i, z, true);
    if (last[s] == INT64_MIN || i - last[s] >= GAP_MS) sessions++;
    last[s] = i;
  }
  return sessions;
}

static int cmp_double(const void* a, const void* b) {
  double x = *(const double*)a, y = *(const double*)b;
  return (x > y) - (x < y);
}

int main(int argc, char** argv) {
  int64_t n = 10000000, batch_rows = 8192;
  int reps = 3;
  double w1b = 0;
  const char* only = NULL;
  for (int i = 1; i < argc; i++) {
    const char* a = argv[i];
    const char* val = i + 1 < argc ? argv[i + 1] : NULL;
    if (strcmp(a, "--reps") == 0 && val) {
      reps = atoi(val), i++;
    } else if (strcmp(a, "--batch") == 0 && val) {
      batch_rows = strtoll(val, NULL, 10), i++;
    } else if (strcmp(a, "--w1b-rows-per-s") == 0 && val) {
      w1b = strtod(val, NULL), i++;
    } else if (strcmp(a, "--only") == 0 && val) {
      only = val, i++;
    } else if (a[0] >= '0' && a[0] <= '9') {
      n = (int64_t)strtod(a, NULL);
    } else {
      fprintf(
          stderr,
          "usage: bench_windows [N] [--reps R] [--batch B] "
          "[--only hop|session|changes|running|session_changes|approx_percentile|median] "
          "[--w1b-rows-per-s X]\n");
      return 2;
    }
  }
  if (n < 1 || reps < 1 || reps > MAX_REPS || batch_rows < 1 || batch_rows > 1 << 24) {
    fprintf(stderr, "bench_windows: bad arguments\n");
    return 2;
  }
  schema_init();
  int64_t sessions = reference_sessions(n);
  printf(
      "bench_windows: LaminarDB %s, N=%lld, batches of %lld rows, reps=%d; "
      "reference sessions=%lld\n",
      laminar_version(), (long long)n, (long long)batch_rows, reps, (long long)sessions);
  bool ok = true;
  for (size_t k = 0; k < sizeof VARIANTS / sizeof VARIANTS[0]; k++) {
    const variant* v = &VARIANTS[k];
    if (only != NULL && strcmp(only, v->name) != 0) continue;
    double secs[MAX_REPS];
    outcome o = {0, 0, 0};
    for (int r = 0; r < reps; r++) {
      secs[r] = run_once(v, n, batch_rows, &o);
      bool good = o.trades == v->copies * n;
      if (strcmp(v->name, "session") == 0) good = good && o.rows == sessions;
      if (strcmp(v->name, "session_changes") == 0) good = good && o.net == sessions;
      if (!good) {
        fprintf(stderr,
                "CHECK FAILED %s rep %d: trades sum %lld (want %lld), rows %lld\n",
                v->name, r, (long long)o.trades, (long long)(v->copies * n),
                (long long)o.rows);
        ok = false;
      }
    }
    qsort(secs, (size_t)reps, sizeof secs[0], cmp_double);
    double med = secs[reps / 2], rate = (double)n / med;
    printf(
        "RESULT %-8s inline N=%lld reps=%d median %.4f s  %8.2f M rows/s  %7.1f ns/event "
        " "
        "rows=%lld",
        v->name, (long long)n, reps, med, rate / 1e6, med * 1e9 / (double)n,
        (long long)o.rows);
    if (w1b > 0) printf("  ratio_to_W1b=%.3f", rate / w1b);
    printf("\n");
    fflush(stdout);
  }
  printf("CHECKS %s\n", ok ? "OK" : "FAILED");
  return ok ? 0 : 1;
}
