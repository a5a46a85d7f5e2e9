/*
 * test_op_window.c -- white-box tests of the operator chain a CREATE STREAM
 * compiles to: snapshot/restore of the window aggregate mid-stream gives the
 * same output as an uninterrupted run, and a corrupt snapshot is refused;
 * the same through copy-on-write checkpoints (freeze, rows into the frozen
 * state, write), for every window kind and by blocks of groups.
 */
#include "lm_test.h"
#include "op/internal.h"
#include "op/op.h"
#include "plan/planner.h"
#include "sql/binder.h"
#include "sql/sql.h"
#include "state/state.h"

#include <math.h>
#include <string.h>

static const lm_schema* lookup(void* arg, const char* name, bool* is_source) {
  *is_source = true;
  return strcmp(name, "t") == 0 ? (const lm_schema*)arg : NULL;
}

typedef struct collected {
  char text[1 << 20];
  size_t len;
} collected;

/* Sink: render every row as text so two runs compare with strcmp. */
static laminar_code collect(void* arg, const lm_chunk* chunk) {
  collected* c = arg;
  for (int64_t r = 0; r < chunk->nrows; r++) {
    for (int32_t col = 0; col < chunk->ncols; col++) {
      const lm_vec* v = &chunk->cols[col];
      char cell[64];
      if (v->nulls && v->nulls[r]) {
        snprintf(cell, sizeof cell, "NULL");
      } else if (v->type == LM_TYPE_STRING) {
        lm_str s = ((const lm_str*)v->data)[r];
        snprintf(cell, sizeof cell, "%.*s", (int)s.len, s.ptr);
      } else if (v->type == LM_TYPE_DOUBLE) {
        snprintf(cell, sizeof cell, "%.6f", ((const double*)v->data)[r]);
      } else {
        snprintf(cell, sizeof cell, "%lld", (long long)((const int64_t*)v->data)[r]);
      }
      int n = snprintf(c->text + c->len, sizeof c->text - c->len, "%s%s", col ? "," : "",
                       cell);
      if (n > 0) c->len += (size_t)n;
    }
    if (c->len < sizeof c->text - 1) c->text[c->len++] = '\n';
  }
  c->text[c->len] = '\0';
  return LAMINAR_OK;
}

static int cmp_line(const void* a, const void* b) {
  return strcmp(*(char* const*)a, *(char* const*)b);
}

/* Sort the collected rows (lines) in place. */
static void sort_lines(collected* c) {
  static char* lines[1 << 16];
  static char copy[sizeof c->text];
  size_t n = 0;
  memcpy(copy, c->text, c->len + 1);
  for (char* p = copy; *p != '\0' && n < sizeof lines / sizeof *lines;) {
    lines[n++] = p;
    char* nl = strchr(p, '\n');
    if (nl == NULL) break;
    *nl = '\0';
    p = nl + 1;
  }
  qsort(lines, n, sizeof *lines, cmp_line);
  size_t len = 0;
  for (size_t i = 0; i < n; i++) {
    size_t l = strlen(lines[i]);
    memcpy(c->text + len, lines[i], l);
    len += l;
    c->text[len++] = '\n';
  }
  c->text[len] = '\0';
  c->len = len;
}

/* The query under test (each case sets it). */
static const char* g_sql;

static const char TUMBLE_SQL[] =
    "CREATE STREAM s AS SELECT k, window_start, SUM(v) AS sv, COUNT(*) AS "
    "c, MIN(name) AS mn, AVG(x) AS ax FROM t GROUP BY k, "
    "tumble(ts, INTERVAL '10' MILLISECOND)";
static const char HOP_SQL[] =
    "CREATE STREAM s AS SELECT k, window_start, window_end, SUM(v) AS sv, COUNT(*) AS "
    "c, MAX(name) AS mx, AVG(x) AS ax, COUNT(DISTINCT name) AS dn, FIRST(v) AS fv, "
    "LAST_VALUE(name) AS ln FROM t GROUP BY k, "
    "hop(ts, INTERVAL '25' MILLISECOND, INTERVAL '10' MILLISECOND)";

/* Ten panes per window, numeric results only: windows come from shared
 * suffix/prefix merges and one watermark's windows go out as one chunk. */
static const char HOP_PANES_SQL[] =
    "CREATE STREAM s AS SELECT k, window_start, window_end, SUM(v) AS sv, COUNT(*) AS c, "
    "MIN(x) AS mnx, MAX(x) AS mxx, SUM(x) AS sx FROM t GROUP BY k, "
    "hop(ts, INTERVAL '30' MILLISECOND, INTERVAL '3' MILLISECOND)";

static const char CHANGES_SQL[] =
    "CREATE STREAM s AS SELECT k, window_start, SUM(v) AS sv, COUNT(*) AS "
    "c, MIN(name) AS mn, AVG(x) AS ax FROM t GROUP BY k, "
    "hop(ts, INTERVAL '20' MILLISECOND, INTERVAL '10' MILLISECOND) EMIT CHANGES";
static const char RUNNING_SQL[] =
    "CREATE STREAM s AS SELECT k % 3 AS k3, SUM(v) AS sv, COUNT(*) AS c, MAX(x) AS mx "
    "FROM t GROUP BY k % 3 EMIT CHANGES";

static const char SESSION_SQL[] =
    "CREATE STREAM s AS SELECT k, window_start, window_end, SUM(v) AS sv, COUNT(*) AS c, "
    "MIN(name) AS mn, MAX(x) AS mx, AVG(x) AS ax, COUNT(DISTINCT v % 4) AS dv, "
    "FIRST_VALUE(name) AS fn, LAST(x) AS lx FROM t WHERE ts % 20 < 8 GROUP BY k, "
    "session(ts, INTERVAL '3' MILLISECOND)";

/* Session EMIT CHANGES: gap 6 over times with disorder 2, watermark max - 5,
 * so out-of-order rows grow and bridge open sessions across batches. */
static const char SESSION_CHANGES_SQL[] =
    "CREATE STREAM s AS SELECT k, window_start, window_end, SUM(v) AS sv, COUNT(*) AS c, "
    "MIN(name) AS mn, MAX(x) AS mx, COUNT(DISTINCT v % 4) AS dv, FIRST_VALUE(name) AS "
    "fn, "
    "LAST(x) AS lx FROM t WHERE ts % 20 < 12 GROUP BY k, session(ts, INTERVAL '2' "
    "MILLISECOND) "
    "EMIT CHANGES";

static int build_chain(lm_arena* arena, const lm_schema* input, lm_plan* plan,
                       lm_op** chain, collected* sink) {
  lm_stmt** stmts;
  size_t n;
  laminar_error err;
  CHECK_CODE(lm_sql_parse(arena, g_sql, &stmts, &n, &err), LAMINAR_OK, &err);
  CHECK(n == 1);
  CHECK_CODE(lm_bind_stream(stmts[0], lookup, (void*)input, NULL, plan, &err), LAMINAR_OK,
             &err);
  CHECK_CODE(lm_plan_build_chain(plan, chain), LAMINAR_OK, &err);
  lm_op* tail = *chain;
  while (tail->next) tail = tail->next;
  tail->sink = collect;
  tail->sink_arg = sink;
  return 0;
}

#define ROWS 64

typedef struct input_batch {
  int64_t k[ROWS], v[ROWS], ts[ROWS];
  double x[ROWS];
  lm_str name[ROWS];
  uint8_t xnull[ROWS];
  lm_vec cols[5];
} input_batch;

static const char* NAMES[] = {"delta", "alpha", "charlie", "bravo"};

static void make_batch(input_batch* b, int batch_no) {
  for (int r = 0; r < ROWS; r++) {
    int i = batch_no * ROWS + r;
    b->k[r] = i % 5;
    b->v[r] = i * 3 - 50;
    b->ts[r] = i / 4 + (i % 3); /* mild disorder */
    b->x[r] = i * 0.5;
    b->xnull[r] = (i % 7) == 0;
    b->name[r] = (lm_str){NAMES[i % 4], (int64_t)strlen(NAMES[i % 4])};
  }
  b->cols[0] = (lm_vec){LM_TYPE_INT64, ROWS, NULL, b->k};
  b->cols[1] = (lm_vec){LM_TYPE_INT64, ROWS, NULL, b->v};
  b->cols[2] = (lm_vec){LM_TYPE_INT64, ROWS, NULL, b->ts};
  b->cols[3] = (lm_vec){LM_TYPE_DOUBLE, ROWS, b->xnull, b->x};
  b->cols[4] = (lm_vec){LM_TYPE_STRING, ROWS, NULL, b->name};
}

static int feed(lm_op* chain, int from, int to) {
  for (int b = from; b < to; b++) {
    input_batch in;
    make_batch(&in, b);
    lm_chunk chunk = {ROWS, 5, in.cols, NULL};
    CHECK(lm_op_chain_chunk(chain, &chunk) == LAMINAR_OK);
    /* watermark: max ts of this batch minus 5 */
    int64_t mx = 0;
    for (int r = 0; r < ROWS; r++) mx = in.ts[r] > mx ? in.ts[r] : mx;
    CHECK(lm_op_chain_watermark(chain, mx - 5) == LAMINAR_OK);
  }
  return 0;
}

static void make_schema(lm_schema* s) {
  lm_schema_init_empty(s);
  lm_schema_add(s, "k", LM_TYPE_INT64, false);
  lm_schema_add(s, "v", LM_TYPE_INT64, false);
  lm_schema_add(s, "ts", LM_TYPE_INT64, false);
  lm_schema_add(s, "x", LM_TYPE_DOUBLE, false);
  lm_schema_add(s, "name", LM_TYPE_STRING, false);
}

/* The uninterrupted run: all 20 batches, then every window closed. */
static int run_whole(lm_arena* arena, const lm_schema* input, lm_plan* plan,
                     lm_op** chain, collected* sink) {
  CHECK(build_chain(arena, input, plan, chain, sink) == 0);
  CHECK(feed(*chain, 0, 20) == 0);
  CHECK(lm_op_chain_watermark(*chain, INT64_MAX) == LAMINAR_OK);
  return 0;
}

/* A chain restored from the state in w (taken after batch 9), fed the rest. */
static int restore_and_finish(lm_arena* arena, const lm_schema* input, lm_plan* plan,
                              lm_op** chain, collected* sink, const lm_state_writer* w) {
  CHECK(build_chain(arena, input, plan, chain, sink) == 0);
  lm_state_reader r;
  lm_state_reader_init(&r, w->data, w->len);
  laminar_error err;
  CHECK_CODE(lm_op_chain_restore(*chain, &r, &err), LAMINAR_OK, &err);
  CHECK(feed(*chain, 9, 20) == 0);
  CHECK(lm_op_chain_watermark(*chain, INT64_MAX) == LAMINAR_OK);
  return 0;
}

static int snapshot_restore_equals_uninterrupted(const char* sql) {
  g_sql = sql;
  lm_schema input;
  make_schema(&input);
  lm_arena* arena;
  CHECK(lm_arena_create(&arena) == LAMINAR_OK);
  static collected whole, split;
  memset(&whole, 0, sizeof whole);
  memset(&split, 0, sizeof split);
  lm_plan p1, p2, p3;
  lm_op *c1, *c2, *c3;
  CHECK(run_whole(arena, &input, &p1, &c1, &whole) == 0);

  CHECK(build_chain(arena, &input, &p2, &c2, &split) == 0);
  CHECK(feed(c2, 0, 9) == 0);
  CHECK(lm_op_window_state_rows(c2) > 0); /* open windows (groups) to carry over */
  lm_state_writer w;
  lm_state_writer_init(&w);
  CHECK(lm_op_chain_snapshot(c2, &w) == LAMINAR_OK);
  lm_op_chain_destroy(c2); /* the "crash" */
  lm_plan_free(&p2);

  CHECK(restore_and_finish(arena, &input, &p3, &c3, &split, &w) == 0);
  lm_state_reader r;
  laminar_error err;
  EXPECT(whole.len > 100);
  /* As row multisets (RELIABILITY.md, "Equal output"): a restored hopping
   * window that slides lists its keys in another order. */
  sort_lines(&whole);
  sort_lines(&split);
  EXPECT(strcmp(whole.text, split.text) == 0);

  /* Every truncation of the snapshot is refused with a code, never a crash. */
  for (size_t cut = 0; cut < w.len; cut += 1 + w.len / 97) {
    lm_plan p4;
    lm_op* c4;
    static collected sink4;
    sink4.len = 0;
    CHECK(build_chain(arena, &input, &p4, &c4, &sink4) == 0);
    lm_state_reader_init(&r, w.data, cut);
    EXPECT(lm_op_chain_restore(c4, &r, &err) == LAMINAR_ERR_IO);
    EXPECT(lm_op_window_state_rows(c4) == 0);
    lm_op_chain_destroy(c4);
    lm_plan_free(&p4);
  }
  lm_state_writer_free(&w);
  lm_op_chain_destroy(c1);
  lm_op_chain_destroy(c3);
  lm_plan_free(&p1);
  lm_plan_free(&p3);
  lm_arena_destroy(arena);
  lm_schema_free(&input);
  return 0;
}

static int test_snapshot_restore_equals_uninterrupted(void) {
  return snapshot_restore_equals_uninterrupted(TUMBLE_SQL);
}

/* Hopping windows overlap: several windows of one row are open at the snapshot. */
/* ---- row selections (lm_chunk.sel) --------------------------------------------- */

/* Computed keys and arguments (evaluated over the selected rows and placed
 * by row number), a CASE that gives NULLs, WHERE on top of the selection. */
static const char COMPUTED_SQL[] =
    "CREATE STREAM s AS SELECT k % 2 AS k2, name, window_start, SUM(x * 2) AS s2, "
    "MAX(CASE WHEN v > 0 THEN name END) AS mx, COUNT(x) AS cx, FIRST(v + 1) AS fv "
    "FROM t WHERE v % 3 <> 0 GROUP BY k % 2, name, tumble(ts, INTERVAL '10' MILLISECOND)";
/* Each row in two windows (pairs out of row order), computed arguments. */
static const char COMPUTED_HOP_SQL[] =
    "CREATE STREAM s AS SELECT k, window_start, SUM(v * 2) AS s2, MIN(x - 1) AS mn, "
    "COUNT(*) AS c FROM t GROUP BY k, hop(ts, INTERVAL '20' MILLISECOND, "
    "INTERVAL '10' MILLISECOND) EMIT CHANGES";
/* A map chain (no window): filter and projection over the selection. */
static const char MAP_SQL[] =
    "CREATE STREAM s AS SELECT k, v * 2 AS v2, name, x + 1 AS x1 FROM t WHERE x > 3";

/* The rows sel[0..m) of `in` copied into `out` (its own arrays). */
static void gather_batch(const input_batch* in, const uint32_t* sel, int64_t m,
                         input_batch* out) {
  for (int64_t i = 0; i < m; i++) {
    uint32_t r = sel[i];
    out->k[i] = in->k[r];
    out->v[i] = in->v[r];
    out->ts[i] = in->ts[r];
    out->x[i] = in->x[r];
    out->xnull[i] = in->xnull[r];
    out->name[i] = in->name[r];
  }
  for (int c = 0; c < 5; c++) {
    out->cols[c] = in->cols[c];
    out->cols[c].len = m;
  }
  out->cols[0].data = out->k;
  out->cols[1].data = out->v;
  out->cols[2].data = out->ts;
  out->cols[3].data = out->x;
  out->cols[3].nulls = out->xnull;
  out->cols[4].data = out->name;
}

/* Feed 20 batches to `sel_chain` as whole batches with a random selection
 * (sometimes every row, one row or none) and their selected rows, gathered,
 * to `dense_chain`; the same watermarks to both. With `routed` (GROUP BY k),
 * the chain with the selection gets what the router hands it: the key
 * hashes and the computed aggregate arguments of `plan` over the whole
 * batch, by row (some left to the operator). */
static int feed_selected(lm_op* sel_chain, lm_op* dense_chain, const lm_plan* plan,
                         uint64_t* rng, bool routed) {
  lm_eval_ctx* ctx;
  CHECK(lm_eval_ctx_create(&ctx) == LAMINAR_OK);
  lm_vec args[16];
  CHECK(plan->window.naggs <= 16);
  for (int b = 0; b < 20; b++) {
    input_batch in, dense;
    make_batch(&in, b);
    uint32_t sel[ROWS];
    int64_t m = 0;
    uint64_t shape = lm_test_rand(rng) % 8;
    for (uint32_t r = 0; r < ROWS; r++) { /* all rows, one, none or about 2 in 3 */
      bool take = shape == 0   ? true
                  : shape == 1 ? r == 17
                  : shape == 2 ? false
                               : lm_test_rand(rng) % 3 != 0;
      if (take) sel[m++] = r;
    }
    gather_batch(&in, sel, m, &dense);
    uint64_t h[ROWS];
    if (routed) {
      lm_op_hash_keys(in.cols, 1, NULL, ROWS, h);
      lm_op_window_set_key_hashes(sel_chain, h);
      lm_eval_ctx_reset(ctx);
      for (int32_t a = 0; a < plan->window.naggs; a++) {
        const lm_expr* e = plan->window.aggs[a].arg;
        args[a] = (lm_vec){0};
        if (e != NULL && lm_test_rand(rng) % 4 != 0) {
          CHECK(lm_expr_eval(ctx, e, in.cols, NULL, ROWS, &args[a]) == LAMINAR_OK);
        }
      }
      lm_op_window_set_args(sel_chain, args);
    }
    lm_chunk with_sel = {m, 5, in.cols, sel};
    lm_chunk gathered = {m, 5, dense.cols, NULL};
    CHECK(lm_op_chain_chunk(sel_chain, &with_sel) == LAMINAR_OK);
    CHECK(lm_op_chain_chunk(dense_chain, &gathered) == LAMINAR_OK);
    int64_t mx = 0;
    for (int r = 0; r < ROWS; r++) mx = in.ts[r] > mx ? in.ts[r] : mx;
    CHECK(lm_op_chain_watermark(sel_chain, mx - 5) == LAMINAR_OK);
    CHECK(lm_op_chain_watermark(dense_chain, mx - 5) == LAMINAR_OK);
  }
  CHECK(lm_op_chain_watermark(sel_chain, INT64_MAX) == LAMINAR_OK);
  CHECK(lm_op_chain_watermark(dense_chain, INT64_MAX) == LAMINAR_OK);
  lm_eval_ctx_destroy(ctx);
  return 0;
}

static int selection_equals_gathered(const char* sql, uint64_t* rng, bool routed) {
  g_sql = sql;
  lm_schema input;
  make_schema(&input);
  lm_arena* arena;
  CHECK(lm_arena_create(&arena) == LAMINAR_OK);
  static collected with_sel, gathered;
  memset(&with_sel, 0, sizeof with_sel);
  memset(&gathered, 0, sizeof gathered);
  lm_plan p1, p2;
  lm_op *c1, *c2;
  CHECK(build_chain(arena, &input, &p1, &c1, &with_sel) == 0);
  CHECK(build_chain(arena, &input, &p2, &c2, &gathered) == 0);
  CHECK(feed_selected(c1, c2, &p1, rng, routed) == 0);
  EXPECT(gathered.len > 50);
  /* The same rows in the same order: row for row the same output. */
  EXPECT(strcmp(with_sel.text, gathered.text) == 0);
  EXPECT(c1->rows_in == c2->rows_in);
  EXPECT(lm_op_window_late_rows(c1) == lm_op_window_late_rows(c2));
  lm_op_chain_destroy(c1);
  lm_op_chain_destroy(c2);
  lm_plan_free(&p1);
  lm_plan_free(&p2);
  lm_arena_destroy(arena);
  lm_schema_free(&input);
  return 0;
}

/* Thread-per-core hands each partition's chain the whole batch with its rows
 * as a selection (rt/part.c): every operator kind a chain may start with
 * gives, over a selection, exactly what it gives over those rows gathered. */
static int test_selection_equals_gathered(void) {
  static const struct {
    const char* sql;
    bool routed; /* GROUP BY k: what the router hands a partition applies */
  } all[] = {{TUMBLE_SQL, true},          {HOP_SQL, true},
             {HOP_PANES_SQL, true},       {CHANGES_SQL, true},
             {RUNNING_SQL, false},        {SESSION_SQL, true},
             {SESSION_CHANGES_SQL, true}, {COMPUTED_SQL, false},
             {COMPUTED_HOP_SQL, true},    {MAP_SQL, false}};
  uint64_t rng = lm_test_seed();
  for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) {
    for (int routed = 0; routed < (all[i].routed ? 2 : 1); routed++) {
      if (selection_equals_gathered(all[i].sql, &rng, routed) != 0 ||
          lm_test_expect_failed_) {
        fprintf(stderr, "selection_equals_gathered failed for: %s\n", all[i].sql);
        return 1;
      }
    }
  }
  return 0;
}

static int test_hop_snapshot_restore_equals_uninterrupted(void) {
  return snapshot_restore_equals_uninterrupted(HOP_SQL);
}

/* Shared pane merges are not in the snapshot: the restored op rebuilds them. */
static int test_hop_panes_snapshot_restore_equals_uninterrupted(void) {
  return snapshot_restore_equals_uninterrupted(HOP_PANES_SQL);
}

/* EMIT CHANGES: after the restore, the first delta of a group retracts the row
 * emitted before the snapshot (live flags and row counts are in the state). */
static int test_changes_snapshot_restore_equals_uninterrupted(void) {
  return snapshot_restore_equals_uninterrupted(CHANGES_SQL);
}

static int test_running_snapshot_restore_equals_uninterrupted(void) {
  return snapshot_restore_equals_uninterrupted(RUNNING_SQL);
}

/* Sessions: open ones (bounds, key, state) and the interned keys carry over. */
static int test_session_snapshot_restore_equals_uninterrupted(void) {
  return snapshot_restore_equals_uninterrupted(SESSION_SQL);
}

/* Session EMIT CHANGES: every open session's row was emitted, so after the
 * restore the first change of a session retracts the row emitted before. */
static int test_session_changes_snapshot_restore_equals_uninterrupted(void) {
  return snapshot_restore_equals_uninterrupted(SESSION_CHANGES_SQL);
}

/* Copy-on-write checkpoints (lm_op_chain_freeze): the chain goes on after the
 * freeze, so rows land in frozen windows (copied first) and frozen windows
 * close (let go) before the frozen state is written. Both the chain that went
 * on and one restored from the frozen state give the uninterrupted output.
 * Sessions too: their whole state is held, and copied before the first
 * change after the freeze. */
static int frozen_equals_uninterrupted(const char* sql) {
  g_sql = sql;
  lm_schema input;
  make_schema(&input);
  lm_arena* arena;
  CHECK(lm_arena_create(&arena) == LAMINAR_OK);
  static collected whole, went_on, restored;
  memset(&whole, 0, sizeof whole);
  memset(&went_on, 0, sizeof went_on);
  lm_plan p1, p2, p3;
  lm_op *c1, *c2, *c3;
  CHECK(run_whole(arena, &input, &p1, &c1, &whole) == 0);

  CHECK(build_chain(arena, &input, &p2, &c2, &went_on) == 0);
  CHECK(feed(c2, 0, 9) == 0);
  lm_op_frozen* f;
  CHECK(lm_op_chain_freeze(c2, &f) == LAMINAR_OK);
  restored = went_on; /* the output up to the freeze */
  CHECK(feed(c2, 9, 13) == 0);
  lm_state_writer w;
  lm_state_writer_init(&w);
  CHECK(lm_op_chain_write_frozen(f, &w) == LAMINAR_OK);
  CHECK(feed(c2, 13, 20) == 0);
  CHECK(lm_op_chain_watermark(c2, INT64_MAX) == LAMINAR_OK);
  int64_t groups;
  EXPECT(lm_op_window_thaws(c2, &groups) > 0 && groups > 0);

  CHECK(restore_and_finish(arena, &input, &p3, &c3, &restored, &w) == 0);
  EXPECT(whole.len > 100);
  /* As row multisets: a restored sliding hop window lists its keys in
   * another order (as in snapshot_restore_equals_uninterrupted). */
  sort_lines(&whole);
  sort_lines(&went_on);
  sort_lines(&restored);
  EXPECT(strcmp(whole.text, went_on.text) == 0);
  EXPECT(strcmp(whole.text, restored.text) == 0);
  lm_state_writer_free(&w);
  lm_op_chain_destroy(c1);
  lm_op_chain_destroy(c2);
  lm_op_chain_destroy(c3);
  lm_plan_free(&p1);
  lm_plan_free(&p2);
  lm_plan_free(&p3);
  lm_arena_destroy(arena);
  lm_schema_free(&input);
  return 0;
}

static int test_frozen_equals_uninterrupted(void) {
  const char* all[] = {TUMBLE_SQL,  HOP_SQL,     HOP_PANES_SQL,      CHANGES_SQL,
                       RUNNING_SQL, SESSION_SQL, SESSION_CHANGES_SQL};
  for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) {
    if (frozen_equals_uninterrupted(all[i]) != 0 || lm_test_expect_failed_) {
      fprintf(stderr, "frozen_equals_uninterrupted failed for: %s\n", all[i]);
      return 1;
    }
  }
  return 0;
}

/* ---- first-touch copies by blocks of groups ------------------------------------- */

/* One window of ~15k groups (string and integer keys, flat aggregates): a
 * frozen one is copied by blocks of 4096 groups, the blocks a chunk's rows
 * meet first. Output is compared as a multiset digest (too many rows for
 * the text sink). */
static const char BLOCKS_SQL[] =
    "CREATE STREAM s AS SELECT k, name, window_start, SUM(v) AS sv, COUNT(*) AS c, "
    "MIN(x) AS mn, MAX(x) AS mx, AVG(x) AS ax, FIRST(v) AS fv FROM t GROUP BY k, name, "
    "tumble(ts, INTERVAL '200' MILLISECOND)";

#define BIG_ROWS 1024
#define BIG_BATCHES 70

typedef struct digest {
  int64_t rows;
  uint64_t sum, sq; /* sums of each row's hash and of its square: order-free */
} digest;

static laminar_code digest_rows(void* arg, const lm_chunk* chunk) {
  digest* d = arg;
  for (int64_t r = 0; r < chunk->nrows; r++) {
    uint64_t h = 1469598103934665603ull;
    for (int32_t col = 0; col < chunk->ncols; col++) {
      const lm_vec* v = &chunk->cols[col];
      uint64_t x = 0;
      if (v->nulls && v->nulls[r]) {
        x = 0x9e3779b97f4a7c15ull;
      } else if (v->type == LM_TYPE_STRING) {
        lm_str str = ((const lm_str*)v->data)[r];
        for (int64_t i = 0; i < str.len; i++)
          x = (x ^ (uint8_t)str.ptr[i]) * 1099511628211ull;
      } else {
        memcpy(&x, (const char*)v->data + r * lm_type_width(v->type),
               (size_t)lm_type_width(v->type));
      }
      h = (h ^ x) * 1099511628211ull;
      h ^= h >> 29;
    }
    d->rows++;
    d->sum += h;
    d->sq += h * h;
  }
  return LAMINAR_OK;
}

/* Batch b: every tenth batch (b % 10 == 1) three rows with keys of the batch
 * before, others BIG_ROWS rows over 20,000 keys; time b * 5 ms, so a 200 ms
 * window holds 40 batches. */
static int feed_big(lm_op* chain, int from, int to) {
  static int64_t k[BIG_ROWS], v[BIG_ROWS], ts[BIG_ROWS];
  static double x[BIG_ROWS];
  static lm_str name[BIG_ROWS];
  for (int b = from; b < to; b++) {
    int64_t n = b % 10 == 1 ? 3 : BIG_ROWS;
    for (int64_t r = 0; r < n; r++) {
      /* A short batch's rows take keys the batch before had. */
      uint64_t i = n < BIG_ROWS ? (uint64_t)(b - 1) * BIG_ROWS + (uint64_t)r * 300
                                : (uint64_t)b * BIG_ROWS + (uint64_t)r;
      k[r] = (int64_t)((i * 2654435761u) % 20000);
      v[r] = (int64_t)(i % 1000) - 300;
      ts[r] = b * 5;
      x[r] = (double)(i % 77) * 0.25;
      name[r] = (lm_str){NAMES[k[r] % 4], (int64_t)strlen(NAMES[k[r] % 4])};
    }
    lm_vec cols[5] = {{LM_TYPE_INT64, n, NULL, k},
                      {LM_TYPE_INT64, n, NULL, v},
                      {LM_TYPE_INT64, n, NULL, ts},
                      {LM_TYPE_DOUBLE, n, NULL, x},
                      {LM_TYPE_STRING, n, NULL, name}};
    lm_chunk chunk = {n, 5, cols, NULL};
    CHECK(lm_op_chain_chunk(chain, &chunk) == LAMINAR_OK);
    CHECK(lm_op_chain_watermark(chain, b * 5 - 5) == LAMINAR_OK);
  }
  return 0;
}

static int build_big(lm_arena* arena, const lm_schema* input, lm_plan* plan,
                     lm_op** chain, digest* d) {
  static collected unused;
  g_sql = BLOCKS_SQL;
  CHECK(build_chain(arena, input, plan, chain, &unused) == 0);
  lm_op* tail = *chain;
  while (tail->next) tail = tail->next;
  tail->sink = digest_rows;
  tail->sink_arg = d;
  return 0;
}

/* Restore state w into a new chain, feed batches [from, BIG_BATCHES), close
 * every window: `d` must then equal the uninterrupted run's digest. */
static int big_restore_finish(lm_arena* arena, const lm_schema* input,
                              const lm_state_writer* w, int from, digest d,
                              const digest* want) {
  lm_plan plan;
  lm_op* chain;
  CHECK(build_big(arena, input, &plan, &chain, &d) == 0);
  lm_state_reader r;
  lm_state_reader_init(&r, w->data, w->len);
  laminar_error err;
  CHECK_CODE(lm_op_chain_restore(chain, &r, &err), LAMINAR_OK, &err);
  CHECK(feed_big(chain, from, BIG_BATCHES) == 0);
  CHECK(lm_op_chain_watermark(chain, INT64_MAX) == LAMINAR_OK);
  EXPECT(d.rows == want->rows && d.sum == want->sum && d.sq == want->sq);
  lm_op_chain_destroy(chain);
  lm_plan_free(&plan);
  return 0;
}

/* A frozen window taking three rows is copied only in the blocks they (and
 * the copy-ahead) meet; the checkpoint written meanwhile, a snapshot of the
 * partial copy (read through its original), and a checkpoint that freezes
 * the partial copy (copied whole at the next change, read through while
 * encoded) all restore to the uninterrupted output, as does the chain that
 * went on (its partial window completing as full batches arrive, and at
 * its close). */
static int test_frozen_copied_by_blocks(void) {
  lm_schema input;
  make_schema(&input);
  lm_arena* arena;
  CHECK(lm_arena_create(&arena) == LAMINAR_OK);
  digest whole = {0}, went_on = {0};
  lm_plan p1, p2;
  lm_op *c1, *c2;
  CHECK(build_big(arena, &input, &p1, &c1, &whole) == 0);
  CHECK(feed_big(c1, 0, BIG_BATCHES) == 0);
  CHECK(lm_op_chain_watermark(c1, INT64_MAX) == LAMINAR_OK);
  CHECK(whole.rows > 20000);

  CHECK(build_big(arena, &input, &p2, &c2, &went_on) == 0);
  CHECK(feed_big(c2, 0, 31) == 0);
  int64_t held = lm_op_window_state_rows(c2), groups;
  CHECK(held > 2 * 4096); /* more than two blocks: copied by blocks */
  digest at30 = went_on;
  lm_op_frozen* f1;
  CHECK(lm_op_chain_freeze(c2, &f1) == LAMINAR_OK);
  CHECK(feed_big(c2, 31, 32) == 0); /* three rows into the frozen window */
  EXPECT(lm_op_window_thaws(c2, &groups) == 1);
  EXPECT(groups > 0 && groups < held); /* some blocks, not the window */
  lm_state_writer w1, w2, w3;
  lm_state_writer_init(&w1);
  lm_state_writer_init(&w2);
  lm_state_writer_init(&w3);
  CHECK(lm_op_chain_write_frozen(f1, &w1) == LAMINAR_OK);
  CHECK(lm_op_chain_snapshot(c2, &w3) == LAMINAR_OK); /* of the partial copy */
  digest at31 = went_on;
  lm_op_frozen* f2;
  CHECK(lm_op_chain_freeze(c2, &f2) == LAMINAR_OK); /* freezes the partial copy */
  CHECK(feed_big(c2, 32, 33) == 0);
  EXPECT(lm_op_window_thaws(c2, &groups) == 2 &&
         groups >= held); /* copied whole through */
  CHECK(lm_op_chain_write_frozen(f2, &w2) == LAMINAR_OK);
  CHECK(feed_big(c2, 33, BIG_BATCHES) == 0);
  CHECK(lm_op_chain_watermark(c2, INT64_MAX) == LAMINAR_OK);
  EXPECT(went_on.rows == whole.rows && went_on.sum == whole.sum &&
         went_on.sq == whole.sq);

  CHECK(big_restore_finish(arena, &input, &w1, 31, at30, &whole) == 0);
  CHECK(big_restore_finish(arena, &input, &w2, 32, at31, &whole) == 0);
  CHECK(big_restore_finish(arena, &input, &w3, 32, at31, &whole) == 0);
  lm_state_writer_free(&w1);
  lm_state_writer_free(&w2);
  lm_state_writer_free(&w3);
  lm_op_chain_destroy(c1);
  lm_op_chain_destroy(c2);
  lm_plan_free(&p1);
  lm_plan_free(&p2);
  lm_arena_destroy(arena);
  lm_schema_free(&input);
  return 0;
}

int main(int argc, char** argv) {
  static const lm_test_case cases[] = {
      {"snapshot_restore_equals_uninterrupted",
       test_snapshot_restore_equals_uninterrupted},
      {"selection_equals_gathered", test_selection_equals_gathered},
      {"hop_snapshot_restore_equals_uninterrupted",
       test_hop_snapshot_restore_equals_uninterrupted},
      {"hop_panes_snapshot_restore_equals_uninterrupted",
       test_hop_panes_snapshot_restore_equals_uninterrupted},
      {"changes_snapshot_restore_equals_uninterrupted",
       test_changes_snapshot_restore_equals_uninterrupted},
      {"running_snapshot_restore_equals_uninterrupted",
       test_running_snapshot_restore_equals_uninterrupted},
      {"session_snapshot_restore_equals_uninterrupted",
       test_session_snapshot_restore_equals_uninterrupted},
      {"session_changes_snapshot_restore_equals_uninterrupted",
       test_session_changes_snapshot_restore_equals_uninterrupted},
      {"frozen_equals_uninterrupted", test_frozen_equals_uninterrupted},
      {"frozen_copied_by_blocks", test_frozen_copied_by_blocks},
      {NULL, NULL},
  };
  return lm_test_main(argc, argv, cases);
}
