/*
 * test_durable_barrier.c -- in-band checkpoint barriers (rt.h lm_barrier,
 * docs/DURABILITY.md): a checkpoint is a barrier taken in order in every
 * source queue, each reactor freezing its partitions when it reaches it and
 * reactor 0's merge the streams it feeds. Cases:
 *   two_sources_threaded: producers push from threads on two sources with
 *     cores = 2 while checkpoints are taken; the data directory is copied
 *     after each of several checkpoints, and a restart from every copy (plus
 *     its WAL, then the rest of the input) equals an uninterrupted one-core
 *     run: no loss, no duplicate.
 *   held_reactor: a test hook holds reactor 1 at the barrier; reactor 0 goes
 *     on posting and running rounds past it (its row count grows, the
 *     checkpoint has not completed), and the merge keeps the partitions'
 *     output past the barrier in the round slots until reactor 1 reaches it:
 *     the streams reading the keyed stream (two inputs: its partitions) are
 *     aligned. A restart from that checkpoint equals the uninterrupted run.
 *   two_sources_paused: the same with checkpoints that pause the graph
 *     (the old way, kept as the benchmarks' baseline).
 *   aligned_in_flight: a barrier taken while rounds before it are still in
 *     flight (reactor 1 held in a data round under a backlog): the streams
 *     the merge feeds must be aligned at the merge; a restart from that
 *     checkpoint equals the uninterrupted run.
 *   idle: a checkpoint with no data flowing completes (threaded and inline,
 *     one and two cores), also with data queued behind a stopped runtime.
 * Runs under TSan too (scripts/test.sh step 3).
 */
/* lm_ctest: TIMEOUT 300 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE  // usleep
#endif

#include <fcntl.h>
#include <ftw.h>
#include <pthread.h>
#include <stdatomic.h>
#include <sys/stat.h>
#include <unistd.h>

#include "db/durable.h"
#include "db/internal.h"
#include "state/state.h"
#include "store/ckpt.h"
#include "lm_test_durable.h"
#include "lm_test_metrics.h"

/* ---- directories ----------------------------------------------------------------- */

/* The WAL position of the first source in dir's newest checkpoint (the
 * barrier's position in its queue; -1 on failure). */
static int64_t checkpoint_position(const char* dir) {
  char path[600];
  snprintf(path, sizeof path, "%s/checkpoints", dir);
  bool found;
  uint64_t epoch;
  uint8_t* data;
  size_t len;
  if (lm_ckpt_load_latest(path, &found, &epoch, &data, &len, NULL, NULL) != LAMINAR_OK ||
      !found)
    return -1;
  lm_state_reader r;
  lm_state_reader_init(&r, data, len);
  (void)lm_state_get_u32(&r); /* magic, version, epoch, sources, the first's name */
  (void)lm_state_get_u32(&r);
  (void)lm_state_get_i64(&r);
  (void)lm_state_get_u32(&r);
  (void)lm_state_get_bytes(&r);
  int64_t seq = lm_state_get_i64(&r);
  bool ok = !r.failed;
  lm_free(data);
  return ok ? seq : -1;
}

/* ---- two sources, producers on threads ---------------------------------------------- */

/* Two sources with the same columns; per source a keyed window stream, and on
 * trades a cascade (a filter, then a materialized view over it: state
 * aligned at the merge), on quotes an unkeyed window (one partition reading a
 * partitioned source: aligned at the merge too). */
static const char* DDL2 =
    "CREATE SOURCE trades (symbol VARCHAR NOT NULL, price DOUBLE, volume BIGINT, ts "
    "BIGINT,\n"
    "  WATERMARK FOR ts AS ts - INTERVAL '100' MILLISECOND);\n"
    "CREATE SOURCE quotes (symbol VARCHAR NOT NULL, price DOUBLE, volume BIGINT, ts "
    "BIGINT,\n"
    "  WATERMARK FOR ts AS ts - INTERVAL '50' MILLISECOND);\n"
    "CREATE STREAM vwap AS SELECT symbol, window_start, SUM(price * volume) / "
    "SUM(volume) AS vwap,\n"
    "  COUNT(*) AS n FROM trades GROUP BY symbol, tumble(ts, INTERVAL '1' SECOND);\n"
    "CREATE STREAM busy AS SELECT symbol, window_start, vwap, n FROM vwap WHERE n >= "
    "12;\n"
    "CREATE MATERIALIZED VIEW busiest AS SELECT symbol, window_start, n FROM busy WHERE "
    "n >= 13;\n"
    "CREATE STREAM spread AS SELECT symbol, window_start, MIN(price) AS lo, MAX(price) "
    "AS hi,\n"
    "  COUNT(*) AS n FROM quotes GROUP BY symbol, tumble(ts, INTERVAL '500' "
    "MILLISECOND);\n"
    "CREATE STREAM volume AS SELECT window_start, SUM(volume) AS v, COUNT(*) AS n\n"
    "  FROM quotes GROUP BY tumble(ts, INTERVAL '2' SECOND);\n";

static const char* const SINKS2[] = {"vwap", "busy", "busiest", "spread", "volume"};
#define NSINKS2 5
#define NB2 200 /* batches per source (two_sources_threaded) */

static int setup2(laminar_db* db, const char* dir, bool fresh) {
  laminar_error err;
  if (!fresh) return 0; /* the catalog comes back at open */
  CHECK_CODE(laminar_execute(db, DDL2, &err), LAMINAR_OK, &err);
  for (int i = 0; i < NSINKS2; i++) {
    char sql[600], sinks[128];
    snprintf(sql, sizeof sql,
             "CREATE SINK %s_out FROM %s INTO FILE (path = '%s/%s', format = 'jsonl')",
             SINKS2[i], SINKS2[i], sinks_dir(dir, sinks, sizeof sinks), SINKS2[i]);
    CHECK_CODE(laminar_execute(db, sql, &err), LAMINAR_OK, &err);
  }
  return 0;
}

static char* output2(const char* dir) { return sinks_output(dir, SINKS2, NSINKS2); }

/* Push batches [from[i], nb) on source i, the final watermarks, run inline,
 * checkpoint, close; the committed output (NULL on failure). */
static char* finish2(laminar_db* db, laminar_source** src, const int64_t* from,
                     int64_t nb, const char* dir) {
  laminar_error err;
  char* out = NULL;
  bool ok = true;
  for (int s = 0; s < 2 && ok; s++) {
    for (int64_t b = from[s]; b < nb && ok; b++)
      ok = push_batch(src[s], b, &err) == LAMINAR_OK;
    ok = ok && laminar_source_watermark(src[s], INT64_MAX, &err) == LAMINAR_OK;
  }
  ok = ok && laminar_run_until_idle(db, &err) == LAMINAR_OK &&
       laminar_checkpoint(db, &err) == LAMINAR_OK;
  if (!ok) fprintf(stderr, "finish2: %s\n", err.message);
  for (int s = 0; s < 2; s++) laminar_source_close(src[s]);
  if (laminar_close(db) != LAMINAR_OK) ok = false;
  if (ok) out = output2(dir);
  return out;
}

static laminar_code open2(const char* dir, int cores, laminar_db** db,
                          laminar_source** src, bool fresh, laminar_error* err) {
  LM_TRY(open_db_cores(dir, "async", cores, db, err));
  if (setup2(*db, dir, fresh) != 0 ||
      laminar_source_open(*db, "trades", &src[0], err) != LAMINAR_OK ||
      laminar_source_open(*db, "quotes", &src[1], err) != LAMINAR_OK) {
    laminar_close(*db);
    return LAMINAR_ERR_INTERNAL;
  }
  return LAMINAR_OK;
}

/* The uninterrupted run of nb batches per source: one core, inline. */
static char* reference2(int64_t nb) {
  char dir[64];
  if (lm_test_mkdtemp(dir, sizeof dir, "lm_bar_ref_") != 0) return NULL;
  laminar_db* db;
  laminar_source* src[2];
  laminar_error err;
  char* out = NULL;
  if (open2(dir, 1, &db, src, true, &err) == LAMINAR_OK) {
    const int64_t from[2] = {0, 0};
    out = finish2(db, src, from, nb, dir);
  }
  remove_db(dir);
  return out;
}

typedef struct producer {
  laminar_source* src;
  int64_t pause_us;
  int failed;
  _Atomic int done;
} producer;

static void* produce(void* arg) {
  producer* p = arg;
  laminar_error err;
  for (int64_t b = 0; b < NB2; b++) {
    if (push_batch(p->src, b, &err) != LAMINAR_OK) {
      fprintf(stderr, "push: %s\n", err.message);
      p->failed++;
    }
    usleep((useconds_t)p->pause_us);
  }
  atomic_store(&p->done, 1);
  return NULL;
}

#define NCOPIES 4

/* pause: checkpoints pause the graph instead (lm_durable_set_pause, the
 * baseline bench_checkpoint compares with), which must give the same. */
static int two_sources(bool pause) {
  char* want = reference2(NB2);
  CHECK(want != NULL && strlen(want) > 2000);
  char dir[64];
  CHECK(lm_test_mkdtemp(dir, sizeof dir, "lm_bar_") == 0);
  laminar_db* db;
  laminar_source* src[2];
  laminar_error err;
  CHECK_CODE(open2(dir, 2, &db, src, true, &err), LAMINAR_OK, &err);
  lm_durable_set_pause(db->dur, pause);
  CHECK_CODE(laminar_start(db, &err), LAMINAR_OK, &err);
  producer prod[2] = {{.src = src[0], .pause_us = 2000},
                      {.src = src[1], .pause_us = 3000}};
  pthread_t t[2];
  for (int i = 0; i < 2; i++) CHECK(pthread_create(&t[i], NULL, produce, &prod[i]) == 0);
  /* Checkpoints while both push; after some of them, a copy of the directory
   * (nothing but the WAL appends changes it between checkpoints). */
  char copies[NCOPIES][96];
  int ncopies = 0, taken = 0;
  for (int k = 0;
       !atomic_load(&prod[0].done) || !atomic_load(&prod[1].done) || ncopies < NCOPIES;
       k++) {
    usleep(1000);
    CHECK_CODE(laminar_checkpoint(db, &err), LAMINAR_OK, &err);
    taken++;
    if (k % 5 == 1 && ncopies < NCOPIES) {
      snprintf(copies[ncopies], sizeof copies[ncopies], "%s_copy%d", dir, ncopies);
      CHECK(copy_db(dir, copies[ncopies]) == 0);
      ncopies++;
    }
  }
  for (int i = 0; i < 2; i++) pthread_join(t[i], NULL);
  CHECK(prod[0].failed == 0 && prod[1].failed == 0);
  CHECK_CODE(laminar_stop(db, &err), LAMINAR_OK, &err);
  const int64_t all[2] = {NB2, NB2};
  char* got = finish2(db, src, all, NB2, dir);
  CHECK(got != NULL);
  int rc = strcmp(got, want) == 0 ? 0 : 1;
  if (rc) fprintf(stderr, "uninterrupted: --- got\n%s--- want\n%s", got, want);
  free(got);
  /* A restart from each copy: its checkpoint, its WAL, then the rest of the
   * input from each source's offset, on 2 cores (every other one on 1). */
  for (int c = 0; c < ncopies && rc == 0; c++) {
    int cores = c % 2 == 0 ? 2 : 1;
    CHECK(restore_db(copies[c], dir) ==
          0); /* in place: the catalog names its sinks' paths */
    CHECK_CODE(open2(dir, cores, &db, src, false, &err), LAMINAR_OK, &err);
    int64_t from[2];
    for (int s = 0; s < 2; s++) {
      int64_t off;
      CHECK_CODE(laminar_source_offset(src[s], &off, &err), LAMINAR_OK, &err);
      CHECK(off >= 1 && off <= NB2 + 1);
      from[s] = off - 1; /* only batches were pushed: message i is batch i - 1 */
    }
    printf("two_sources_threaded: copy %d restarts on %d cores at batches %lld, %lld\n",
           c, cores, (long long)from[0], (long long)from[1]);
    got = finish2(db, src, from, NB2, dir);
    CHECK(got != NULL);
    if (strcmp(got, want) != 0) {
      fprintf(stderr, "copy %d: --- got\n%s--- want\n%s", c, got, want);
      rc = 1;
    }
    free(got);
  }
  for (int c = 0; c < ncopies; c++) remove_db(copies[c]);
  remove_db(dir);
  free(want);
  printf("two_sources_threaded%s: checkpoints=%d restarts=%d match=%s\n",
         pause ? " (pause)" : "", taken, ncopies, rc == 0 ? "yes" : "no");
  CHECK(ncopies == NCOPIES);
  return rc;
}

static int test_two_sources_threaded(void) { return two_sources(false); }
static int test_two_sources_paused(void) { return two_sources(true); }

/* ---- a reactor held back at the barrier ------------------------------------------------- */

typedef struct hold {
  _Atomic int armed; /* hold reactor 1 at its next round of this kind */
  bool at_barrier;   /* the kind: a barrier round, else a data round */
  _Atomic int held;  /* it is there */
  _Atomic int release;
  /* aligned_in_flight: then hold it again at its next data round until
   * reactor 0 has taken a barrier (rt->barriers_taken > taken) */
  lm_rt* rt;
  uint64_t taken;
  _Atomic int again;
} hold;

static void hold_hook(void* arg, int32_t part, bool barrier) {
  hold* h = arg;
  if (part != 1 || barrier != h->at_barrier || !atomic_load(&h->armed)) return;
  if (!atomic_exchange(&h->armed, 0)) return;
  atomic_store(&h->held, 1);
  while (!atomic_load(&h->release)) usleep(200);
}

static void hold_twice(void* arg, int32_t part, bool barrier) {
  hold* h = arg;
  if (part == 1 && !barrier && atomic_load(&h->release) &&
      atomic_exchange(&h->again, 0)) {
    while (atomic_load_explicit(&h->rt->barriers_taken, memory_order_relaxed) == h->taken)
      usleep(200);
    return;
  }
  hold_hook(arg, part, barrier);
}

typedef struct ckpt_call {
  laminar_db* db;
  _Atomic int done;
  laminar_code rc;
} ckpt_call;

static void* checkpoint_thread(void* arg) {
  ckpt_call* c = arg;
  laminar_error err;
  c->rc = laminar_checkpoint(c->db, &err);
  if (c->rc != LAMINAR_OK) fprintf(stderr, "checkpoint: %s\n", err.message);
  atomic_store(&c->done, 1);
  return NULL;
}

/* Wait up to 10 s for *flag. */
static bool wait_flag(_Atomic int* flag) {
  for (int i = 0; i < 50000 && !atomic_load(flag); i++) usleep(200);
  return atomic_load(flag) != 0;
}

static int test_held_reactor(void) {
  char* want = reference_output(); /* lm_test_durable.h: one core, inline */
  CHECK(want != NULL);
  char dir[64], copy[96];
  CHECK(lm_test_mkdtemp(dir, sizeof dir, "lm_bar_hold_") == 0);
  snprintf(copy, sizeof copy, "%s_copy", dir);
  laminar_db* db;
  laminar_source* src;
  laminar_error err;
  char sql[2048];
  sink_sql(dir, sql, sizeof sql);
  CHECK_CODE(open_db_cores(dir, "sync", 2, &db, &err), LAMINAR_OK, &err);
  CHECK_CODE(laminar_execute(db, DDL, &err), LAMINAR_OK, &err);
  CHECK_CODE(laminar_execute(db, sql, &err), LAMINAR_OK, &err);
  CHECK_CODE(laminar_source_open(db, "trades", &src, &err), LAMINAR_OK, &err);
  hold h = {.at_barrier = true};
  lm_rt_set_round_hook(&db->rt, hold_hook, &h);
  CHECK_CODE(laminar_start(db, &err), LAMINAR_OK, &err);
  for (int64_t b = 0; b < 15; b++) CHECK_CODE(push_batch(src, b, &err), LAMINAR_OK, &err);
  atomic_store(&h.armed, 1);
  ckpt_call c = {.db = db};
  pthread_t t;
  CHECK(pthread_create(&t, NULL, checkpoint_thread, &c) == 0);
  CHECK(wait_flag(&h.held));
  /* Reactor 1 is at the barrier. Rows pushed now are past it: reactor 0
   * takes them and runs its partition of them without waiting. */
  lm_reactor* r0 = &db->rt.reactors[0];
  int64_t rows0 = atomic_load_explicit(&r0->rows, memory_order_relaxed);
  uint64_t posted0 = atomic_load_explicit(&db->rt.round_seq, memory_order_relaxed);
  /* The first two one batch at a time, each waited for until reactor 0 has
   * posted a round of it: pushed at once, the batches may all land in one
   * round (reactor 0 takes what is queued), and two rounds past the barrier
   * are what shows it posting on without reactor 1. */
  for (int64_t b = 15; b < 25; b++) {
    uint64_t before = atomic_load_explicit(&db->rt.round_seq, memory_order_relaxed);
    CHECK_CODE(push_batch(src, b, &err), LAMINAR_OK, &err);
    for (int i = 0; b < 17 && i < 50000; i++) {
      if (atomic_load_explicit(&db->rt.round_seq, memory_order_relaxed) > before) break;
      usleep(200);
    }
  }
  bool moved = false;
  for (int i = 0; i < 50000 && !moved; i++) {
    /* (up to LM_RT_ROUNDS_INFLIGHT - 1 rounds past the barrier: then the
     * in-flight bound, not the barrier, makes it wait) */
    moved = atomic_load_explicit(&r0->rows, memory_order_relaxed) > rows0 &&
            atomic_load_explicit(&db->rt.round_seq, memory_order_relaxed) > posted0 + 1;
    if (!moved) usleep(200);
  }
  uint64_t posted1 = atomic_load_explicit(&db->rt.round_seq, memory_order_relaxed);
  int done_while_held = atomic_load(&c.done);
  printf(
      "held_reactor: reactor 0 rows %lld -> %lld, rounds posted %llu -> %llu while "
      "reactor 1 "
      "was held\n",
      (long long)rows0, (long long)atomic_load_explicit(&r0->rows, memory_order_relaxed),
      (unsigned long long)posted0, (unsigned long long)posted1);
  atomic_store(&h.release, 1);
  pthread_join(t, NULL);
  EXPECT(moved);                /* reactor 0 processed rows past the barrier */
  EXPECT(posted1 > posted0);    /* in rounds posted after it */
  EXPECT(done_while_held == 0); /* the checkpoint waited for reactor 1 */
  CHECK_CODE(c.rc, LAMINAR_OK, NULL);
  /* That checkpoint, as a crash right after it would leave the directory. */
  CHECK(copy_db(dir, copy) == 0);
  for (int64_t b = 25; b < NBATCH; b++)
    CHECK_CODE(push_batch(src, b, &err), LAMINAR_OK, &err);
  CHECK_CODE(laminar_stop(db, &err), LAMINAR_OK, &err);
  int rc = finish_and_compare(db, src, dir, want);
  /* Restart from the copy: the checkpoint holds no row past the barrier in
   * any stream (the cascade and the view over the keyed stream included). */
  CHECK(restore_db(copy, dir) == 0); /* in place: the catalog names its sinks' paths */
  CHECK_CODE(open_db_cores(dir, "sync", 2, &db, &err), LAMINAR_OK, &err);
  CHECK_CODE(laminar_source_open(db, "trades", &src, &err), LAMINAR_OK, &err);
  int64_t off;
  CHECK_CODE(laminar_source_offset(src, &off, &err), LAMINAR_OK, &err);
  CHECK(off >= 16 && off <= 26);
  CHECK(feed(db, src, off - 1, NBATCH, 0) == 0);
  if (finish_and_compare(db, src, dir, want) != 0) rc = 1;
  remove_db(dir);
  free(want);
  return rc;
}

/* ---- a barrier taken with rounds in flight ------------------------------------------------ */

#define NB_BACKLOG 800

/* Reactor 1 is held in a data round while a backlog waits in the trades
 * queue, so reactor 0 fills every round slot and waits; the checkpoint is
 * asked then. Reactor 1 runs that one round and is held again at the next
 * until reactor 0 has taken the barrier, so rounds before the barrier are
 * still in flight when it is taken: their output is merged after it, so the
 * streams the merge feeds (the cascade, the view, the unkeyed window, the
 * sinks) must be aligned at the merge, not where the barrier was taken. A
 * restart from that checkpoint equals the uninterrupted run. */
static int test_aligned_in_flight(void) {
  char* want = reference2(NB_BACKLOG);
  CHECK(want != NULL);
  char dir[64], copy[96];
  CHECK(lm_test_mkdtemp(dir, sizeof dir, "lm_bar_fl_") == 0);
  snprintf(copy, sizeof copy, "%s_copy", dir);
  laminar_db* db;
  laminar_source* src[2];
  laminar_error err;
  CHECK_CODE(open2(dir, 2, &db, src, true, &err), LAMINAR_OK, &err);
  hold h = {.at_barrier = false, .rt = &db->rt};
  atomic_store(&h.armed, 1);
  atomic_store(&h.again, 1);
  lm_rt_set_round_hook(&db->rt, hold_twice, &h);
  /* The backlog first: reactor 0 starts with full rounds. */
  for (int64_t b = 0; b < NB_BACKLOG; b++)
    CHECK_CODE(push_batch(src[0], b, &err), LAMINAR_OK, &err);
  CHECK_CODE(laminar_start(db, &err), LAMINAR_OK, &err);
  CHECK(wait_flag(&h.held));
  lm_rt* rt = &db->rt;
  bool full = false; /* reactor 0 has every round slot in flight */
  for (int i = 0; i < 50000 && !full; i++) {
    full = atomic_load_explicit(&rt->round_seq, memory_order_relaxed) >=
           atomic_load_explicit(&rt->reactors[1].done, memory_order_relaxed) +
               LM_RT_ROUNDS_INFLIGHT;
    if (!full) usleep(200);
  }
  CHECK(full);
  ckpt_call c = {.db = db};
  pthread_t t;
  uint64_t taken = atomic_load_explicit(&rt->barriers_taken, memory_order_relaxed);
  h.taken = taken; /* read by reactor 1 only after `release` below */
  CHECK(pthread_create(&t, NULL, checkpoint_thread, &c) == 0);
  /* Asked for (pending, or taken by reactor 0, which then waits for a slot). */
  while (atomic_load_explicit(&rt->barrier_req, memory_order_acquire) == NULL &&
         atomic_load_explicit(&rt->barriers_taken, memory_order_relaxed) == taken)
    usleep(100);
  atomic_store(&h.release, 1);
  pthread_join(t, NULL);
  CHECK_CODE(c.rc, LAMINAR_OK, NULL);
  CHECK(copy_db(dir, copy) == 0);
  int64_t at = checkpoint_position(copy);
  printf("aligned_in_flight: the barrier stands after batch %lld of the %d queued\n",
         (long long)at, NB_BACKLOG);
  CHECK(at > 0 && at < NB_BACKLOG); /* taken amid the backlog, rounds in flight */
  CHECK_CODE(laminar_stop(db, &err), LAMINAR_OK, &err);
  const int64_t from[2] = {NB_BACKLOG, 0};
  char* got = finish2(db, src, from, NB_BACKLOG, dir);
  CHECK(got != NULL);
  int rc = strcmp(got, want) == 0 ? 0 : 1;
  if (rc) fprintf(stderr, "uninterrupted: --- got\n%s--- want\n%s", got, want);
  free(got);
  CHECK(restore_db(copy, dir) == 0); /* in place: the catalog names its sinks' paths */
  CHECK_CODE(open2(dir, 2, &db, src, false, &err), LAMINAR_OK, &err);
  int64_t off[2];
  for (int s = 0; s < 2; s++)
    CHECK_CODE(laminar_source_offset(src[s], &off[s], &err), LAMINAR_OK, &err);
  const int64_t resume[2] = {off[0] - 1, off[1] - 1};
  got = finish2(db, src, resume, NB_BACKLOG, dir);
  CHECK(got != NULL);
  if (strcmp(got, want) != 0) {
    fprintf(stderr, "restart: --- got\n%s--- want\n%s", got, want);
    rc = 1;
  }
  free(got);
  remove_db(dir);
  free(want);
  return rc;
}

/* ---- no data flowing -------------------------------------------------------------------- */

static int idle_case(int cores, bool threaded, bool queued) {
  char dir[64];
  CHECK(lm_test_mkdtemp(dir, sizeof dir, "lm_bar_idle_") == 0);
  laminar_db* db;
  laminar_source* src;
  laminar_error err;
  CHECK_CODE(open_db_cores(dir, "sync", cores, &db, &err), LAMINAR_OK, &err);
  CHECK_CODE(laminar_execute(db, DDL, &err), LAMINAR_OK, &err);
  CHECK_CODE(laminar_source_open(db, "trades", &src, &err), LAMINAR_OK, &err);
  if (threaded) CHECK_CODE(laminar_start(db, &err), LAMINAR_OK, &err);
  for (int k = 1; k <= 3; k++) {
    CHECK_CODE(laminar_checkpoint(db, &err), LAMINAR_OK, &err);
    CHECK(lm_durable_last_epoch(db->dur) == (uint64_t)k);
  }
  EXPECT(lm_test_metric(db, "database", "", "last_checkpoint") == 3);
  EXPECT(lm_test_metric(db, "database", "", "last_checkpoint_barrier_ns") > 0);
  if (queued) { /* input queued, nobody driving: the barrier is ahead of it */
    if (threaded) CHECK_CODE(laminar_stop(db, &err), LAMINAR_OK, &err);
    for (int64_t b = 0; b < 3; b++)
      CHECK_CODE(push_batch(src, b, &err), LAMINAR_OK, &err);
    CHECK_CODE(laminar_checkpoint(db, &err), LAMINAR_OK, &err);
    CHECK(lm_durable_last_epoch(db->dur) == 4);
  }
  if (threaded && !queued) CHECK_CODE(laminar_stop(db, &err), LAMINAR_OK, &err);
  laminar_source_close(src);
  CHECK_CODE(laminar_close(db), LAMINAR_OK, NULL);
  if (queued) { /* the queued batches were logged, not checkpointed: replayed */
    CHECK_CODE(open_db_cores(dir, "sync", cores, &db, &err), LAMINAR_OK, &err);
    CHECK_CODE(laminar_source_open(db, "trades", &src, &err), LAMINAR_OK, &err);
    int64_t off;
    CHECK_CODE(laminar_source_offset(src, &off, &err), LAMINAR_OK, &err);
    CHECK(off == 4);
    laminar_source_close(src);
    CHECK_CODE(laminar_close(db), LAMINAR_OK, NULL);
  }
  remove_db(dir);
  return 0;
}

static int test_idle(void) {
  for (int cores = 1; cores <= 2; cores++) {
    for (int threaded = 0; threaded <= 1; threaded++) {
      for (int queued = 0; queued <= 1; queued++) {
        if (idle_case(cores, threaded, queued) != 0) {
          fprintf(stderr, "idle: cores=%d threaded=%d queued=%d\n", cores, threaded,
                  queued);
          return 1;
        }
      }
    }
  }
  return 0;
}

static const lm_test_case cases[] = {
    {"two_sources_threaded", test_two_sources_threaded},
    {"two_sources_paused", test_two_sources_paused},
    {"held_reactor", test_held_reactor},
    {"aligned_in_flight", test_aligned_in_flight},
    {"idle", test_idle},
    {NULL, NULL},
};

int main(int argc, char** argv) { return lm_test_main(argc, argv, cases); }
