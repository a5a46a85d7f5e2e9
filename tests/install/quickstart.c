/* quickstart.c -- the C quick start of README.md, built against the *installed*
 * library (find_package(laminar) and pkg-config) by the test suite.
 *
 * It declares a source and a 1-second VWAP stream, pushes one Arrow batch built
 * by hand with the C Data Interface structs, closes the windows with a final
 * watermark, and prints the results. */
#include <laminar.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A tiny producer: four columns of static buffers; release marks the structs. */
static void release_child(struct ArrowArray* a) { a->release = NULL; }
static void release_batch(struct ArrowArray* a) {
  for (int64_t i = 0; i < a->n_children; i++) {
    if (a->children[i]->release) a->children[i]->release(a->children[i]);
  }
  a->release = NULL;
}
static void release_schema_child(struct ArrowSchema* s) { s->release = NULL; }

int main(void) {
  laminar_db* db;
  laminar_error err;
  if (laminar_open(NULL, &db, &err) != LAMINAR_OK) return 1;
  const char* sql =
      "CREATE SOURCE trades (symbol VARCHAR NOT NULL, price DOUBLE, volume BIGINT, ts BIGINT,"
      "  WATERMARK FOR ts AS ts - INTERVAL '100' MILLISECOND);"
      "CREATE STREAM vwap AS SELECT symbol, window_start,"
      "  SUM(price * volume) / SUM(volume) AS vwap, COUNT(*) AS n"
      "  FROM trades GROUP BY symbol, tumble(ts, INTERVAL '1' SECOND) EMIT ON WINDOW CLOSE;";
  if (laminar_execute(db, sql, &err) != LAMINAR_OK) {
    fprintf(stderr, "%s\n", err.message);
    return 1;
  }
  laminar_source* src;
  laminar_subscription* sub;
  if (laminar_source_open(db, "trades", &src, &err) != LAMINAR_OK ||
      laminar_subscribe(db, "vwap", &sub, &err) != LAMINAR_OK) {
    fprintf(stderr, "%s\n", err.message);
    return 1;
  }

  /* Three trades: AAPL 10.0 x 100 @1000, AAPL 20.0 x 300 @1500, MSFT 5.0 x 10 @1200. */
  static const int32_t offsets[] = {0, 4, 8, 12};
  static const char chars[] = "AAPLAAPLMSFT";
  static const double prices[] = {10.0, 20.0, 5.0};
  static const int64_t volumes[] = {100, 300, 10};
  static const int64_t times[] = {1000, 1500, 1200};
  const void* sym_buffers[] = {NULL, offsets, chars};
  const void* price_buffers[] = {NULL, prices};
  const void* vol_buffers[] = {NULL, volumes};
  const void* ts_buffers[] = {NULL, times};
  struct ArrowArray cols[4] = {
      {3, 0, 0, 3, 0, sym_buffers, NULL, NULL, release_child, NULL},
      {3, 0, 0, 2, 0, price_buffers, NULL, NULL, release_child, NULL},
      {3, 0, 0, 2, 0, vol_buffers, NULL, NULL, release_child, NULL},
      {3, 0, 0, 2, 0, ts_buffers, NULL, NULL, release_child, NULL}};
  struct ArrowArray* col_ptrs[] = {&cols[0], &cols[1], &cols[2], &cols[3]};
  const void* struct_buffers[] = {NULL};
  struct ArrowArray batch = {3, 0, 0, 1, 4, struct_buffers, col_ptrs, NULL, release_batch, NULL};

  struct ArrowSchema fields[4] = {
      {"u", "symbol", NULL, 0, 0, NULL, NULL, release_schema_child, NULL},
      {"g", "price", NULL, ARROW_FLAG_NULLABLE, 0, NULL, NULL, release_schema_child, NULL},
      {"l", "volume", NULL, ARROW_FLAG_NULLABLE, 0, NULL, NULL, release_schema_child, NULL},
      {"l", "ts", NULL, ARROW_FLAG_NULLABLE, 0, NULL, NULL, release_schema_child, NULL}};
  struct ArrowSchema* field_ptrs[] = {&fields[0], &fields[1], &fields[2], &fields[3]};
  struct ArrowSchema schema = {"+s", "", NULL, 0, 4, field_ptrs, NULL, release_schema_child, NULL};

  /* Ownership of `batch` moves into the engine on success. */
  if (laminar_source_push(src, &batch, &schema, &err) != LAMINAR_OK ||
      laminar_source_watermark(src, INT64_MAX, &err) != LAMINAR_OK ||
      laminar_run_until_idle(db, &err) != LAMINAR_OK) {
    fprintf(stderr, "%s\n", err.message);
    return 1;
  }

  int64_t rows = 0;
  double aapl_vwap = 0;
  for (;;) {
    struct ArrowArray out;
    struct ArrowSchema out_schema;
    if (laminar_subscription_next(sub, 0, &out, &out_schema, &err) != LAMINAR_OK) return 1;
    if (out.release == NULL) break; /* nothing more queued */
    /* children: symbol (utf8), window_start (int64), vwap (double), n (int64) */
    const int32_t* so = out.children[0]->buffers[1];
    const char* sc = out.children[0]->buffers[2];
    const double* v = out.children[2]->buffers[1];
    for (int64_t r = 0; r < out.length; r++) {
      printf("%.*s vwap=%.4f\n", (int)(so[r + 1] - so[r]), sc + so[r], v[r]);
      if (memcmp(sc + so[r], "AAPL", 4) == 0) aapl_vwap = v[r];
    }
    rows += out.length;
    out.release(&out);
    out_schema.release(&out_schema);
  }
  laminar_subscription_close(sub);
  laminar_source_close(src);
  laminar_close(db);
  /* (10*100 + 20*300) / 400 = 17.5 */
  return rows == 2 && aapl_vwap == 17.5 ? 0 : 1;
}
