/*
 * test_crash_kafka.c -- the crash test's Kafka mode (issue 24, RELIABILITY
 * "crash"): kill -9 at random moments of a pipeline whose input comes from a
 * Kafka topic and whose output goes to Kafka topics through exactly-once
 * sinks, against a real broker (LAMINAR_KAFKA_BOOTSTRAP; skipped without).
 *
 * The input topic (2 partitions, each in event-time order within the
 * watermark delay, a far-future sentinel last in each) is written once. A
 * child process opens a durable database (sync WAL) whose catalog holds a
 * Kafka source on it (per-partition watermarks), a 1-second tumbling window
 * per symbol and a pass-through stream with the messages' partition and
 * offset, each into its own output topic through an exactly-once Kafka sink,
 * and two materialized views counting what arrived. It checkpoints every
 * CHECKPOINT_MS until every input row and every window went through, then a
 * last checkpoint publishes the rest. The parent kills it with SIGKILL after
 * a random delay (seeded; LAMINAR_TEST_SEED replays) and restarts it, until a
 * run completes; then both output topics, read with isolation.level =
 * read_committed, must equal an uninterrupted run's: no duplicate, no gap.
 * Episodes (a fresh database, fresh output topics and transactional ids)
 * repeat until at least LAMINAR_CRASH_KAFKA_KILLS kills (default 50).
 *
 * Each run resumes from what the last left: the source at its checkpointed
 * offsets (the offsets log and the WAL, docs/KAFKA.md "Exactly once in"), the
 * sinks by fencing the dead process's transaction and publishing the staged
 * epochs its checkpoints cover.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE  // fork, mmap, usleep under -std=c17
#endif

#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "lm_test.h"
#include "lm_test_fs.h"
#include "lm_test_kafka.h"
#include "nanoarrow/nanoarrow.h"

#define NPART 2
#define PER_PART 1500 /* messages per partition, the sentinel included */
#define CHECKPOINT_MS 60

/* What the child is doing, shared with the parent. */
enum { PH_OPEN, PH_RUN, PH_CHECKPOINT, PH_FINISH, PH_COUNT };
static const char* PHASES[PH_COUNT] = {"open/recover", "run", "checkpoint", "finish"};

static const char* PIPELINE =
    "CREATE SOURCE trades (symbol VARCHAR NOT NULL, price DOUBLE, volume BIGINT, ts "
    "BIGINT,\n"
    "  _partition INT, _offset BIGINT,\n"
    "  WATERMARK FOR ts AS ts - INTERVAL '100' MILLISECOND)\n"
    "  WITH (connector = 'kafka', 'bootstrap.servers' = '%s', topic = '%s',\n"
    "        group_id = '%s');\n"
    "CREATE STREAM bars AS SELECT symbol, window_start, COUNT(*) AS n, SUM(volume) AS "
    "v,\n"
    "  MAX(price) AS hi FROM trades GROUP BY symbol, tumble(ts, INTERVAL '1' SECOND);\n"
    "CREATE STREAM seen AS SELECT symbol, price, volume, ts, _partition, _offset FROM "
    "trades;\n"
    "CREATE MATERIALIZED VIEW seen_n AS SELECT COUNT(*) AS n FROM seen EMIT CHANGES;\n"
    "CREATE MATERIALIZED VIEW bars_n AS SELECT COUNT(*) AS n FROM bars EMIT CHANGES;\n"
    "CREATE SINK bars_out FROM bars WITH (connector = 'kafka', 'bootstrap.servers' = "
    "'%s',\n"
    "  topic = '%s-bars', key = 'symbol', transactional_id = '%s-bars');\n"
    "CREATE SINK seen_out FROM seen WITH (connector = 'kafka', 'bootstrap.servers' = "
    "'%s',\n"
    "  topic = '%s-seen', key = 'symbol', transactional_id = '%s-seen')";

/* ---- the input ------------------------------------------------------------------- */

static const char* SYMS[] = {"AAPL", "MSFT", "M\xc3\xbcnchen", "X"};

/* Message i of partition p: event time forward with disorder inside the
 * watermark delay; the last one a sentinel far ahead (it closes every
 * window before it; its own never closes). */
static void message(int p, int i, char* out, size_t cap, char* key, size_t kcap) {
  int64_t k = (int64_t)i * NPART + p;
  const char* sym = i == PER_PART - 1 ? "END" : SYMS[k % 4];
  int64_t ts = i == PER_PART - 1 ? INT64_C(1000000000)
                                 : 1000 + (int64_t)i * 7 + p * 3 - (i % 4) * 15;
  snprintf(out, cap, "{\"symbol\":\"%s\",\"price\":%.1f,\"volume\":%d,\"ts\":%lld}", sym,
           10.0 + (double)(k % 13) * 0.5, 1 + (int)(k % 7), (long long)ts);
  snprintf(key, kcap, "%s", sym);
}

/* Windows the input closes: distinct (symbol, 1-second window), sentinels
 * left out. */
static int64_t expected_windows(void) {
  bool seen[4][64] = {{false}};
  int64_t n = 0;
  for (int p = 0; p < NPART; p++)
    for (int i = 0; i < PER_PART - 1; i++) {
      int64_t k = (int64_t)i * NPART + p;
      int64_t ts = 1000 + (int64_t)i * 7 + p * 3 - (i % 4) * 15;
      int64_t w = ts / 1000;
      if (w >= 0 && w < 64 && !seen[k % 4][w]) seen[k % 4][w] = true, n++;
    }
  return n;
}

/* ---- the child --------------------------------------------------------------------- */

/* The first BIGINT of `sql`'s first row (-1: none, or a failure). */
static int64_t query_int(laminar_db* db, const char* sql) {
  struct ArrowArrayStream st;
  laminar_error err;
  if (laminar_query(db, sql, &st, &err) != LAMINAR_OK) return -1;
  struct ArrowSchema schema;
  struct ArrowArray array;
  int64_t v = -1;
  if (st.get_schema(&st, &schema) == 0) {
    if (st.get_next(&st, &array) == 0 && array.release != NULL) {
      struct ArrowArrayView view;
      struct ArrowError aerr;
      if (ArrowArrayViewInitFromSchema(&view, &schema, &aerr) == NANOARROW_OK &&
          ArrowArrayViewSetArray(&view, &array, &aerr) == NANOARROW_OK &&
          array.length > 0)
        v = ArrowArrayViewGetIntUnsafe(view.children[0], 0);
      ArrowArrayViewReset(&view);
      array.release(&array);
    }
    schema.release(&schema);
  }
  st.release(&st);
  return v;
}

static laminar_code open_durable(const char* dir, laminar_db** db, laminar_error* err) {
  laminar_config* c;
  if (laminar_config_create(&c) != LAMINAR_OK) return LAMINAR_ERR_NOMEM;
  laminar_code rc = laminar_config_set(c, "data_dir", dir, err);
  if (rc == LAMINAR_OK) rc = laminar_config_set(c, "checkpoint_interval", "1 hour", err);
  if (rc == LAMINAR_OK) rc = laminar_config_set(c, "wal_mode", "sync", err);
  if (rc == LAMINAR_OK) rc = laminar_open(c, db, err);
  laminar_config_destroy(c);
  return rc;
}

typedef struct episode {
  const char* bootstrap;
  const char* input;
  char dir[128];
  char tag[64]; /* output topics "<tag>-bars", "<tag>-seen"; transactional ids */
} episode;

/* A run: open (the first also declares the pipeline), start, checkpoint
 * until every row and window went through, a last checkpoint, close. Exits
 * with 0, or the step that failed. */
static void child_run(const episode* e, bool declare, volatile int* phase) {
  laminar_db* db;
  laminar_error err;
  *phase = PH_OPEN;
  if (open_durable(e->dir, &db, &err) != LAMINAR_OK) {
    fprintf(stderr, "open: %s\n", err.message);
    _exit(3);
  }
  if (declare) {
    char sql[4096];
    snprintf(sql, sizeof sql, PIPELINE, e->bootstrap, e->input, e->tag, e->bootstrap,
             e->tag, e->tag, e->bootstrap, e->tag, e->tag);
    if (laminar_execute(db, sql, &err) != LAMINAR_OK) {
      fprintf(stderr, "declare: %s\n", err.message);
      _exit(4);
    }
  }
  if (laminar_start(db, &err) != LAMINAR_OK) _exit(5);
  const int64_t rows = (int64_t)NPART * PER_PART, windows = expected_windows();
  for (int i = 0;; i++) {
    *phase = PH_RUN;
    usleep(CHECKPOINT_MS * 1000);
    int64_t seen = query_int(db, "SELECT n FROM seen_n");
    int64_t bars = query_int(db, "SELECT n FROM bars_n");
    bool done = seen == rows && bars == windows;
    *phase = done ? PH_FINISH : PH_CHECKPOINT;
    if (laminar_checkpoint(db, &err) != LAMINAR_OK) {
      fprintf(stderr, "checkpoint: %s\n", err.message);
      _exit(6);
    }
    if (done) break;
    if (i > 300) { /* 20 s without the whole input */
      fprintf(stderr, "stuck: %lld of %lld rows, %lld of %lld windows\n", (long long)seen,
              (long long)rows, (long long)bars, (long long)windows);
      _exit(7);
    }
  }
  if (laminar_close_v2(db, &err) != LAMINAR_OK) _exit(8);
  _exit(0);
}

/* Run the child to its end (no kill): its exit code. */
static int run_whole(const episode* e, bool declare, volatile int* phase) {
  pid_t pid = fork();
  if (pid < 0) return -1;
  if (pid == 0) child_run(e, declare, phase);
  int status;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/* Both output topics, read committed. */
static char* output(const episode* e, size_t* seen_n, size_t* bars_n) {
  char topic[128];
  snprintf(topic, sizeof topic, "%s-bars", e->tag);
  char* bars = lm_test_kafka_read_committed(e->bootstrap, topic, bars_n);
  snprintf(topic, sizeof topic, "%s-seen", e->tag);
  char* seen = lm_test_kafka_read_committed(e->bootstrap, topic, seen_n);
  char* out = NULL;
  if (bars != NULL && seen != NULL) {
    size_t a = strlen(bars), b = strlen(seen);
    out = malloc(a + b + 16);
    snprintf(out, a + b + 16, "--- bars\n%s--- seen\n%s", bars, seen);
  }
  free(bars);
  free(seen);
  return out;
}

static int new_episode(episode* e, const char* bootstrap, const char* input,
                       const char* what) {
  e->bootstrap = bootstrap;
  e->input = input;
  if (lm_test_mkdtemp(e->dir, sizeof e->dir, "lm_kkill_") != 0) return -1;
  snprintf(e->tag, sizeof e->tag, "crash-%s-%s", what, strrchr(e->dir, '_') + 1);
  char topic[128];
  snprintf(topic, sizeof topic, "%s-bars", e->tag);
  if (lm_test_kafka_create_topic(bootstrap, topic, 2) != 0) return -1;
  snprintf(topic, sizeof topic, "%s-seen", e->tag);
  return lm_test_kafka_create_topic(bootstrap, topic, 2);
}

static int64_t mono_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

static int write_input(const char* bootstrap, const char* topic) {
  if (lm_test_kafka_create_topic(bootstrap, topic, NPART) != 0) return -1;
  size_t n = (size_t)NPART * PER_PART;
  char** values = calloc(n, sizeof *values);
  char** keys = calloc(n, sizeof *keys);
  int32_t* parts = calloc(n, sizeof *parts);
  size_t at = 0;
  for (int i = 0; i < PER_PART; i++)
    for (int p = 0; p < NPART; p++, at++) {
      values[at] = malloc(160);
      keys[at] = malloc(32);
      message(p, i, values[at], 160, keys[at], 32);
      parts[at] = p;
    }
  int rc = lm_test_kafka_produce(bootstrap, topic, parts, (const char* const*)keys,
                                 (const char* const*)values, n);
  for (size_t i = 0; i < n; i++) free(values[i]), free(keys[i]);
  free(values);
  free(keys);
  free(parts);
  return rc;
}

static int test_kafka_sigkill_loop(void) {
  const char* bootstrap = lm_test_kafka_bootstrap();
#ifndef LAMINAR_HAVE_KAFKA
  (void)bootstrap;
  return lm_test_skip("built without librdkafka (test_kafka checks the refusal)");
#else
  if (bootstrap == NULL) {
    return lm_test_skip(
        "no broker: LAMINAR_KAFKA_BOOTSTRAP is unset (scripts/test.sh starts one)");
  }
  int min_kills = 50;
  const char* k = getenv("LAMINAR_CRASH_KAFKA_KILLS");
  if (k != NULL && atoi(k) > 0) min_kills = atoi(k);
  uint64_t seed = lm_test_seed(), r = seed | 1;
  printf("seed=%llu\n", (unsigned long long)seed);
  char input[64];
  snprintf(input, sizeof input, "crash-in-%llu-%d", (unsigned long long)seed,
           (int)getpid());
  CHECK(write_input(bootstrap, input) == 0);
  volatile int* phase =
      mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  CHECK(phase != MAP_FAILED);

  /* The uninterrupted run. */
  episode ref;
  CHECK(new_episode(&ref, bootstrap, input, "ref") == 0);
  int64_t t0 = mono_ns();
  CHECK(run_whole(&ref, true, phase) == 0);
  int64_t full_ns = mono_ns() - t0;
  fprintf(stderr, "crash-kafka: an uninterrupted run takes %.2f s\n",
          (double)full_ns / 1e9);
  size_t want_seen, want_bars;
  char* want = output(&ref, &want_seen, &want_bars);
  CHECK(want != NULL);
  lm_test_rmtree(ref.dir);
  /* It holds every row once and every window. */
  CHECK(want_seen == (size_t)NPART * PER_PART);
  CHECK(want_bars == (size_t)expected_windows());

  int kills = 0, episodes = 0, runs = 0, mismatches = 0, hist[PH_COUNT] = {0};
  while (kills < min_kills) {
    episode e;
    CHECK(new_episode(&e, bootstrap, input, "ep") == 0);
    episodes++;
    bool declared = false;
    for (int streak = 0;; streak++) {
      runs++;
      *phase = PH_OPEN;
      pid_t pid = fork();
      CHECK(pid >= 0);
      if (pid == 0) child_run(&e, !declared, phase);
      declared = true; /* restarts find the pipeline in the stored catalog */
      int status;
      /* Kill at a random moment of an uninterrupted run's span (the first run
       * only once its CREATE returned); after 12 kills in a row the run may
       * finish, so every episode ends. */
      if (streak < 12) {
        r ^= r << 13, r ^= r >> 7, r ^= r << 17;
        useconds_t wait = (useconds_t)((r % (uint64_t)full_ns) / 1000);
        usleep(wait);
        while (streak == 0 && *phase == PH_OPEN && waitpid(pid, &status, WNOHANG) == 0)
          usleep(1000); /* the first run: past its open and CREATE */
        if (waitpid(pid, &status, WNOHANG) == 0) {
          int ph = *phase;
          kill(pid, SIGKILL);
          waitpid(pid, &status, 0);
          if (WIFSIGNALED(status)) {
            kills++;
            if (ph >= 0 && ph < PH_COUNT) hist[ph]++;
            continue;
          }
        }
      } else {
        waitpid(pid, &status, 0);
      }
      CHECK(WIFEXITED(status));
      if (WEXITSTATUS(status) != 0) {
        fprintf(stderr, "child exited %d\n", WEXITSTATUS(status));
        return 1;
      }
      break;
    }
    size_t got_seen, got_bars;
    char* got = output(&e, &got_seen, &got_bars);
    CHECK(got != NULL);
    if (strcmp(got, want) != 0) {
      mismatches++;
      fprintf(stderr,
              "episode %d (%s): output differs: seen %zu rows (want %zu), bars %zu (want "
              "%zu)\n",
              episodes, e.tag, got_seen, want_seen, got_bars, want_bars);
    }
    free(got);
    lm_test_rmtree(e.dir);
    if (mismatches) break;
  }
  fprintf(stderr,
          "crash-kafka: kills=%d episodes=%d runs=%d mismatched_episodes=%d match=%s "
          "seed=%llu\n",
          kills, episodes, runs, mismatches, mismatches ? "no" : "yes",
          (unsigned long long)seed);
  fprintf(stderr, "crash-kafka: kills by phase:");
  for (int i = 0; i < PH_COUNT; i++) fprintf(stderr, " %s=%d", PHASES[i], hist[i]);
  fprintf(stderr, "\n");
  munmap((void*)phase, 4096);
  free(want);
  return mismatches == 0 ? 0 : 1;
#endif
}

static const lm_test_case cases[] = {{"kafka_sigkill_loop", test_kafka_sigkill_loop},
                                     {NULL, NULL}};

int main(int argc, char** argv) { return lm_test_main(argc, argv, cases); }
