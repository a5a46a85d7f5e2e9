/*
 * quickstart.c -- the C quick start of README.md as a complete program, built by
 * the test suite against the *installed* library (find_package(laminar) and
 * pkg-config) and run; exit 0 only if the results are right.
 *
 * It declares a source and a 1-second VWAP stream, pushes one Arrow batch built
 * by hand with the C Data Interface structs (three trades), closes every window
 * with a final watermark, runs the engine until idle and checks the two result
 * rows:  AAPL window 1000: vwap (10*100 + 20*300) / 400 = 17.5, n 2
 *        MSFT window 1000: vwap 5.0, n 1
 *
 *   cc quickstart.c $(pkg-config --cflags --libs laminar) -o quickstart
 */
#include <laminar.h>

#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

/* ---- a tiny producer: static buffers, release callbacks only mark ---------- */

static void release_column(struct ArrowArray* a) { a->release = NULL; }

static void release_batch(struct ArrowArray* a) {
  for (int64_t i = 0; i < a->n_children; i++) {
    struct ArrowArray* c = a->children[i];
    if (c->release != NULL) c->release(c);
  }
  a->release = NULL;
}

static void release_field(struct ArrowSchema* s) { s->release = NULL; }

static int fail(const char* what, const laminar_error* err) {
  fprintf(stderr, "quickstart: %s: %s\n", what, err != NULL ? err->message : "");
  return 1;
}

/* ---- reading the result batch ---------------------------------------------- */

/* Index of the child called `name` in struct schema `s`, or -1. */
static int64_t field_index(const struct ArrowSchema* s, const char* name) {
  for (int64_t i = 0; i < s->n_children; i++) {
    if (s->children[i]->name != NULL && strcmp(s->children[i]->name, name) == 0) return i;
  }
  return -1;
}

/* Row `row` of a utf8 ("u") or large utf8 ("U") column, as pointer + length. */
static int get_string(const struct ArrowSchema* s, const struct ArrowArray* a,
                      int64_t row, const char** out, int64_t* len) {
  int64_t i = a->offset + row;
  const char* data = (const char*)a->buffers[2];
  if (strcmp(s->format, "u") == 0) {
    const int32_t* off = (const int32_t*)a->buffers[1];
    *out = data + off[i];
    *len = off[i + 1] - off[i];
  } else if (strcmp(s->format, "U") == 0) {
    const int64_t* off = (const int64_t*)a->buffers[1];
    *out = data + off[i];
    *len = off[i + 1] - off[i];
  } else {
    return 0;
  }
  return 1;
}

static int near(double a, double b) { return a - b < 1e-9 && b - a < 1e-9; }

static int is_null(const struct ArrowArray* a, int64_t row) {
  const uint8_t* validity = (const uint8_t*)a->buffers[0];
  if (a->null_count == 0 || validity == NULL) return 0;
  int64_t i = a->offset + row;
  return ((validity[i / 8] >> (i % 8)) & 1) == 0;
}

int main(void) {
  laminar_error err;
  memset(&err, 0, sizeof err);
  printf("LaminarDB %s (header %s)\n", laminar_version(), LAMINAR_VERSION);
  if (laminar_version_number() != LAMINAR_VERSION_NUMBER) {
    return fail("header and library versions differ", NULL);
  }

  laminar_db* db = NULL;
  if (laminar_open(NULL, &db, &err) != LAMINAR_OK) return fail("open", &err);
  const char* sql =
      "CREATE SOURCE trades (symbol VARCHAR NOT NULL, price DOUBLE, volume BIGINT, "
      "  ts BIGINT, WATERMARK FOR ts AS ts - INTERVAL '100' MILLISECOND);"
      "CREATE STREAM vwap AS"
      "  SELECT symbol, window_start, SUM(price * volume) / SUM(volume) AS vwap,"
      "         COUNT(*) AS n"
      "  FROM trades GROUP BY symbol, tumble(ts, INTERVAL '1' SECOND)"
      "  EMIT ON WINDOW CLOSE;";
  if (laminar_execute(db, sql, &err) != LAMINAR_OK) return fail("execute", &err);

  laminar_source* src = NULL;
  laminar_subscription* sub = NULL;
  if (laminar_source_open(db, "trades", &src, &err) != LAMINAR_OK) {
    return fail("source_open", &err);
  }
  if (laminar_subscribe(db, "vwap", &sub, &err) != LAMINAR_OK)
    return fail("subscribe", &err);

  /* One batch, three trades, as a struct array of four columns. */
  static const int32_t sym_offsets[] = {0, 4, 8, 12};
  static const char sym_chars[] = "AAPLAAPLMSFT";
  static const double prices[] = {10.0, 20.0, 5.0};
  static const int64_t volumes[] = {100, 300, 10};
  static const int64_t times[] = {1000, 1500, 1200};
  const void* sym_buffers[] = {NULL, sym_offsets, sym_chars};
  const void* price_buffers[] = {NULL, prices};
  const void* volume_buffers[] = {NULL, volumes};
  const void* ts_buffers[] = {NULL, times};
  const void* batch_buffers[] = {NULL};
  struct ArrowArray columns[4] = {
      {3, 0, 0, 3, 0, sym_buffers, NULL, NULL, release_column, NULL},
      {3, 0, 0, 2, 0, price_buffers, NULL, NULL, release_column, NULL},
      {3, 0, 0, 2, 0, volume_buffers, NULL, NULL, release_column, NULL},
      {3, 0, 0, 2, 0, ts_buffers, NULL, NULL, release_column, NULL},
  };
  struct ArrowArray* column_ptrs[] = {&columns[0], &columns[1], &columns[2], &columns[3]};
  struct ArrowArray batch = {
      3, 0, 0, 1, 4, batch_buffers, column_ptrs, NULL, release_batch, NULL};

  struct ArrowSchema fields[4] = {
      {"u", "symbol", NULL, 0, 0, NULL, NULL, release_field, NULL},
      {"g", "price", NULL, ARROW_FLAG_NULLABLE, 0, NULL, NULL, release_field, NULL},
      {"l", "volume", NULL, ARROW_FLAG_NULLABLE, 0, NULL, NULL, release_field, NULL},
      {"l", "ts", NULL, ARROW_FLAG_NULLABLE, 0, NULL, NULL, release_field, NULL},
  };
  struct ArrowSchema* field_ptrs[] = {&fields[0], &fields[1], &fields[2], &fields[3]};
  struct ArrowSchema schema = {"+s",       "",   NULL,          0,   4,
                               field_ptrs, NULL, release_field, NULL};

  /* On success the batch is moved into the engine (batch.release becomes NULL);
   * the engine calls its release callback once it no longer needs the buffers. */
  if (laminar_source_push(src, &batch, &schema, &err) != LAMINAR_OK) {
    return fail("push", &err);
  }
  if (batch.release != NULL) return fail("push did not move the batch", NULL);
  if (laminar_source_watermark(src, INT64_MAX, &err) != LAMINAR_OK) {
    return fail("watermark", &err);
  }
  if (laminar_run_until_idle(db, &err) != LAMINAR_OK) return fail("run_until_idle", &err);

  /* Read every queued result batch. */
  int64_t rows = 0;
  int seen_aapl = 0, seen_msft = 0, bad = 0;
  for (;;) {
    struct ArrowArray out;
    struct ArrowSchema out_schema;
    memset(&out, 0, sizeof out);
    memset(&out_schema, 0, sizeof out_schema);
    if (laminar_subscription_next(sub, 0, &out, &out_schema, &err) != LAMINAR_OK) {
      return fail("subscription_next", &err);
    }
    if (out.release == NULL) break; /* nothing more queued */

    int64_t i_sym = field_index(&out_schema, "symbol");
    int64_t i_ws = field_index(&out_schema, "window_start");
    int64_t i_vwap = field_index(&out_schema, "vwap");
    int64_t i_n = field_index(&out_schema, "n");
    if (i_sym < 0 || i_ws < 0 || i_vwap < 0 || i_n < 0 ||
        strcmp(out_schema.children[i_ws]->format, "l") != 0 ||
        strcmp(out_schema.children[i_vwap]->format, "g") != 0 ||
        strcmp(out_schema.children[i_n]->format, "l") != 0) {
      fprintf(stderr, "quickstart: unexpected result schema\n");
      bad = 1;
    } else {
      const struct ArrowArray* ws = out.children[i_ws];
      const struct ArrowArray* vw = out.children[i_vwap];
      const struct ArrowArray* n = out.children[i_n];
      for (int64_t r = 0; r < out.length; r++) {
        const char* sym;
        int64_t len;
        int64_t row = out.offset + r;
        if (!get_string(out_schema.children[i_sym], out.children[i_sym], row, &sym,
                        &len) ||
            is_null(ws, row) || is_null(vw, row) || is_null(n, row)) {
          bad = 1;
          continue;
        }
        int64_t w = ((const int64_t*)ws->buffers[1])[ws->offset + row];
        double v = ((const double*)vw->buffers[1])[vw->offset + row];
        int64_t cnt = ((const int64_t*)n->buffers[1])[n->offset + row];
        printf("%.*s window_start=%" PRId64 " vwap=%.4f n=%" PRId64 "\n", (int)len, sym,
               w, v, cnt);
        if (len == 4 && memcmp(sym, "AAPL", 4) == 0 && w == 1000 && near(v, 17.5) &&
            cnt == 2) {
          seen_aapl++;
        } else if (len == 4 && memcmp(sym, "MSFT", 4) == 0 && w == 1000 && near(v, 5.0) &&
                   cnt == 1) {
          seen_msft++;
        } else {
          bad = 1;
        }
      }
      rows += out.length;
    }
    out.release(&out);
    if (out_schema.release != NULL) out_schema.release(&out_schema);
  }

  laminar_subscription_close(sub);
  laminar_source_close(src);
  if (laminar_close(db) != LAMINAR_OK) return fail("close", NULL);
  if (bad || rows != 2 || seen_aapl != 1 || seen_msft != 1) {
    fprintf(stderr, "quickstart: wrong results (%" PRId64 " rows)\n", rows);
    return 1;
  }
  printf("quickstart: OK\n");
  return 0;
}
