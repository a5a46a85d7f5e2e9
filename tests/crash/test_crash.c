/*
 * test_crash.c -- kill -9 at random moments (issue 6, RELIABILITY "crash").
 *
 * A child process runs the durable pipeline of lm_test_durable.h — a 1-second
 * tumbling VWAP, a stream cascaded from it, a materialized view over that, a
 * hopping window, session windows and an EMIT CHANGES running aggregate, a
 * JSONL or CSV file sink on each, sync
 * WAL, a checkpoint every 7 batches — over a deterministic input, resuming at
 * its source's offset after every restart. The parent kills it with SIGKILL
 * after a random delay (seeded; LAMINAR_TEST_SEED replays), restarts it, and
 * repeats until a run completes; that episode's committed sink output must
 * equal an uninterrupted run's: no duplicate, no gap, no partial epoch.
 * Episodes repeat until at least 100 kills. The summary line counts kills by
 * the phase the child was in (its own marker in shared memory: open and
 * recovery, push with its WAL append and flush, the inline run, checkpoint
 * with its sink commits, the final watermark). Each run draws its reactor
 * count, 1 or 2 (thread-per-core: partitioned state is checkpointed per
 * partition and split by key hash again when a restart has another count),
 * so the kills fall on both and restarts go 1 -> 2 and 2 -> 1 too.
 *
 * Between two checkpoints (before batch RECREATE_AT) the child drops a stream
 * and creates it again under the same name with another query, and a sink on
 * it (issue 20: incarnations): the dropped stream's checkpointed state and
 * the records it saw are never applied to the new one, whichever side of the
 * DROP and CREATE a kill falls on. (The first has no sink: what it staged
 * after its last checkpoint is discarded by the DROP, so its committed output
 * would depend on where the kills fell.)
 *
 * A second source, quotes (the same batches), a window over the UNION
 * ALL of trades and quotes with a sink on it, and an ASOF join of trades
 * with the quote strictly before each (LEFT, on symbol) with a sink on it: each source resumes at its own
 * offset, the union's checkpoints hold each input's watermark, and its
 * replay runs one source after the other. The window groups by symbol,
 * which both branches pass through, so on 2 reactors it runs as partitions
 * (rt/part.c), checkpointed per partition and re-split on a restart with the
 * other core count; so does the join, each input routed by its symbol, its
 * waiting trades and kept quotes frozen copy-on-write at each checkpoint.
 * Two more joins of trades with quotes on symbol, each with its sink: a FULL
 * interval join (quotes from 40 ms before to 20 ms after each trade) and a
 * LEFT window join of the two sides' 250 ms windows hopping by 125 ms with a
 * residual (q.volume < t.volume): each row is held across its two windows. Both hold each side's rows until the other side's
 * watermark lets them go, so kills fall on checkpoints of held rows on both
 * sides, quotes' own late rows are dropped by the join, and both run as one
 * partition per reactor (routed by symbol), re-split on a restart.
 *
 * Before each kill the parent tries to open the child's directory itself: while
 * the child holds it (between its open and its close) that must fail with
 * LAMINAR_ERR_LOCKED naming the child's pid (one owner per data directory).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE  // fork, mmap, usleep under -std=c17
#endif

#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "lm_test_durable.h"
#include "lm_test_metrics.h"

/* ---- kill -9 ------------------------------------------------------------------------------- */

/* What the child is doing, as seen from the API, shared with the parent. */
enum { PH_OPEN, PH_PUSH, PH_RUN, PH_CHECKPOINT, PH_RECREATE, PH_FINISH, PH_COUNT };
static const char* PHASES[PH_COUNT] = {"open/recover", "push",     "run",
                                       "checkpoint",   "recreate", "finish"};

/* ---- a stream and its sink dropped and created again between checkpoints ---------------- */

#define RECREATE_AT 10 /* before this batch: checkpoints follow batches 6 and 13 */
static const char* EXTRA_V1 =
    "CREATE STREAM extra AS SELECT symbol, COUNT(*) AS n, SUM(volume) AS v FROM trades\n"
    "  GROUP BY symbol EMIT CHANGES";
static const char* EXTRA_V2 =
    "CREATE STREAM extra AS SELECT symbol, window_start, COUNT(*) AS n FROM trades\n"
    "  GROUP BY symbol, tumble(ts, INTERVAL '2' SECOND)";
static const char* const EXTRA_DIRS[] = {"extra", "merged", "quoted", "near", "paired"};
#define NEXTRA (sizeof EXTRA_DIRS / sizeof EXTRA_DIRS[0])

/* The second source and the union, with its sink (at every open). */
static const char* UNION_DDL =
    "CREATE SOURCE quotes (symbol VARCHAR NOT NULL, price DOUBLE, volume BIGINT, ts "
    "BIGINT,\n"
    "  WATERMARK FOR ts AS ts - INTERVAL '30' MILLISECOND);\n"
    "CREATE STREAM merged AS SELECT symbol, window_start, COUNT(*) AS n, SUM(v) AS v\n"
    "  FROM (SELECT symbol, volume AS v, ts FROM trades UNION ALL\n"
    "        SELECT symbol, volume * 10, ts FROM quotes WHERE volume > 3)\n"
    "  GROUP BY symbol, tumble(ts, INTERVAL '1' SECOND);\n"
    "CREATE SINK merged_out FROM merged INTO FILE (path = '%s/merged', format = "
    "'jsonl');\n"
    "CREATE STREAM quoted AS SELECT t.symbol, t.ts, t.volume, q.price AS qp, q.ts AS "
    "qts\n"
    "  FROM trades t LEFT ASOF JOIN quotes q MATCH_CONDITION(t.ts > q.ts)\n"
    "  ON t.symbol = q.symbol;\n"
    "CREATE SINK quoted_out FROM quoted INTO FILE (path = '%s/quoted', format = "
    "'jsonl');\n"
    "CREATE STREAM near AS SELECT t.symbol, t.ts, t.volume, q.ts AS qts, q.volume AS qv\n"
    "  FROM trades t FULL JOIN quotes q ON t.symbol = q.symbol\n"
    "  AND q.ts BETWEEN t.ts - INTERVAL '40' MILLISECOND AND t.ts + INTERVAL '20' "
    "MILLISECOND;\n"
    "CREATE SINK near_out FROM near INTO FILE (path = '%s/near', format = 'jsonl');\n"
    "CREATE STREAM paired AS SELECT t.symbol, t.window_start, t.ts, q.ts AS qts\n"
    "  FROM hop(trades, ts, INTERVAL '250' MILLISECOND, INTERVAL '125' MILLISECOND) t\n"
    "  LEFT JOIN hop(quotes, ts, INTERVAL '250' MILLISECOND, INTERVAL '125' MILLISECOND) "
    "q\n"
    "  ON t.window_start = q.window_start AND t.symbol = q.symbol AND q.volume < "
    "t.volume;\n"
    "CREATE SINK paired_out FROM paired INTO FILE (path = '%s/paired', format = 'jsonl')";

/* The extra stream as it is before batch `next`: the first definition
 * before RECREATE_AT, the second, with its sink, from there (dropping the
 * first when it is still there: a restart may find either, or neither). */
static int extra_ddl(laminar_db* db, const char* dir, int64_t next) {
  laminar_error err;
  bool v2 = next >= RECREATE_AT;
  laminar_code rc = laminar_execute(db, v2 ? EXTRA_V2 : EXTRA_V1, &err);
  if (rc == LAMINAR_ERR_SQL_DUPLICATE_OBJECT && v2) {
    CHECK_CODE(laminar_execute(db, "DROP STREAM extra", &err), LAMINAR_OK, &err);
    rc = laminar_execute(db, EXTRA_V2, &err);
  }
  CHECK_CODE(rc, LAMINAR_OK, &err);
  if (!v2) return 0;
  char sink[512], sinks[128];
  snprintf(
      sink, sizeof sink,
      "CREATE SINK extra_out FROM extra INTO FILE (path = '%s/%s', format = 'jsonl')",
      sinks_dir(dir, sinks, sizeof sinks), EXTRA_DIRS[0]);
  CHECK_CODE(laminar_execute(db, sink, &err), LAMINAR_OK, &err);
  return 0;
}

/* Every sink's committed output, the extra one's too. */
static char* all_output(const char* dir) {
  char* base = sink_output(dir);
  char* extra = sinks_output(dir, EXTRA_DIRS, NEXTRA);
  size_t n = strlen(base), m = strlen(extra);
  char* out = malloc(n + m + 1);
  memcpy(out, base, n);
  memcpy(out + n, extra, m + 1);
  free(base);
  free(extra);
  return out;
}

static void remove_all(const char* dir) { remove_db(dir); /* the extra sink's too */ }

/* From where trades and quotes stand (their offsets: the next message's
 * number) to the end: batch b to trades then to quotes, a run, a checkpoint
 * after every 7th; the extra stream as it is before each batch; the final
 * watermarks and checkpoint. 0, or the step that failed (> 4). */
static int run_rest(laminar_db* db, const char* dir, laminar_source* src,
                    laminar_source* quotes, volatile int* phase) {
  laminar_error err;
  int64_t off, off_q;
  if (laminar_source_offset(src, &off, &err) != LAMINAR_OK ||
      laminar_source_offset(quotes, &off_q, &err) != LAMINAR_OK)
    return 11;
  if (extra_ddl(db, dir, off - 1) != 0) return 9;
  for (int64_t b = (off < off_q ? off : off_q) - 1; b < NBATCH; b++) {
    if (b == RECREATE_AT && b >= off - 1) {
      *phase = PH_RECREATE;
      if (extra_ddl(db, dir, b) != 0) return 10;
    }
    *phase = PH_PUSH;
    if (b >= off - 1 && push_batch(src, b, &err) != LAMINAR_OK) return 5;
    if (b >= off_q - 1 && push_batch(quotes, b, &err) != LAMINAR_OK) return 5;
    *phase = PH_RUN;
    if (laminar_run_until_idle(db, &err) != LAMINAR_OK) return 6;
    if ((b + 1) % 7 == 0) {
      *phase = PH_CHECKPOINT;
      if (laminar_checkpoint(db, &err) != LAMINAR_OK) return 7;
    }
  }
  *phase = PH_FINISH;
  if (laminar_source_watermark(quotes, INT64_MAX, &err) != LAMINAR_OK ||
      finish(db, src) != 0)
    return 8;
  return 0;
}

/* The pipeline, the union and its sources in dir; 0 on success. */
static int open_all(const char* dir, int cores, laminar_db** db, laminar_source** src,
                    laminar_source** quotes) {
  laminar_error err;
  char sql[4096], sinks[128];
  sink_sql(dir, sql, sizeof sql);
  if (open_db_cores(dir, "sync", cores, db, &err) != LAMINAR_OK) {
    fprintf(stderr, "open: %s\n", err.message);
    return 3;
  }
  if (laminar_execute(*db, DDL, &err) != LAMINAR_OK ||
      laminar_execute(*db, sql, &err) != LAMINAR_OK)
    return 4;
  sinks_dir(dir, sinks, sizeof sinks);
  snprintf(sql, sizeof sql, UNION_DDL, sinks, sinks, sinks, sinks);
  if (laminar_execute(*db, sql, &err) != LAMINAR_OK ||
      laminar_source_open(*db, "trades", src, &err) != LAMINAR_OK ||
      laminar_source_open(*db, "quotes", quotes, &err) != LAMINAR_OK) {
    fprintf(stderr, "open: %s\n", err.message);
    return 4;
  }
  /* The join runs as one partition per reactor (each input by its symbol). */
  if (lm_test_metric(*db, "stream", "quoted", "partitions") != cores) return 12;
  /* So do the interval and the window join (by symbol). */
  if (lm_test_metric(*db, "stream", "near", "partitions") != cores ||
      lm_test_metric(*db, "stream", "paired", "partitions") != cores)
    return 13;
  return 0;
}

/* The uninterrupted run's committed output. */
static char* reference_all(void) {
  char dir[64];
  if (lm_test_mkdtemp(dir, sizeof dir, "lm_kill_ref_") != 0) return NULL;
  laminar_db* db = NULL;
  laminar_source* src = NULL;
  laminar_source* quotes = NULL;
  char* out = NULL;
  int phase;
  if (open_all(dir, 1, &db, &src, &quotes) == 0 &&
      run_rest(db, dir, src, quotes, &phase) == 0)
    out = all_output(dir);
  laminar_source_close(src);
  laminar_source_close(quotes);
  laminar_close(db);
  remove_all(dir);
  return out;
}

static void child_run(const char* dir, int cores, volatile int* phase) {
  laminar_db* db;
  laminar_source* src;
  laminar_source* quotes;
  *phase = PH_OPEN;
  int rc = open_all(dir, cores, &db, &src, &quotes);
  if (rc == 0) rc = run_rest(db, dir, src, quotes, phase);
  if (rc != 0) _exit(rc);
  laminar_source_close(src);
  laminar_source_close(quotes);
  laminar_close(db);
  _exit(0);
}

/* A second opener while the child runs (past its open): 1 when refused with
 * LDB-5003 naming the child, 0 when it could not tell (the child closing),
 * -1 when it got the directory while the child held it. */
static int second_opener(const char* dir, pid_t child, volatile int* phase) {
  int before = *phase;
  laminar_db* db = NULL;
  laminar_error err;
  laminar_code rc = open_db(dir, "sync", &db, &err);
  int after = *phase;
  if (rc == LAMINAR_OK) {
    laminar_close(db); /* the child closed meanwhile, or there are two owners */
    if (before >= PH_PUSH && after < PH_FINISH) {
      fprintf(stderr, "second opener got %s while the child (phase %s) held it\n", dir,
              PHASES[after]);
      return -1;
    }
    return 0;
  }
  char pid[32];
  snprintf(pid, sizeof pid, "pid %ld", (long)child);
  if (rc == LAMINAR_ERR_LOCKED && strstr(err.message, dir) != NULL &&
      strstr(err.message, pid) != NULL)
    return 1;
  if (rc == LAMINAR_ERR_LOCKED) return 0; /* the pid file not written yet, or left */
  fprintf(stderr, "second opener: %s\n", err.message);
  return -1;
}

static int64_t mono_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

/* Children feed the input (sync WAL, a checkpoint every 7 batches) and are
 * killed with SIGKILL at random moments, each restart recovering from what
 * the last one left; an episode ends when a child completes, and its
 * committed output must equal the uninterrupted run's. Episodes repeat until
 * 100 kills. */
static int test_sigkill_loop(void) {
  char* want = reference_all();
  CHECK(want != NULL);
  for (size_t i = 0; i < sizeof SINK_DIRS / sizeof SINK_DIRS[0] + NEXTRA; i++) {
    char head[64]; /* every sink has rows to lose: a section is never empty */
    const size_t nbase = sizeof SINK_DIRS / sizeof SINK_DIRS[0];
    snprintf(head, sizeof head, "--- %s\n",
             i < nbase ? SINK_DIRS[i] : EXTRA_DIRS[i - nbase]);
    const char* at = strstr(want, head);
    CHECK(at != NULL && at[strlen(head)] != '\0' &&
          strncmp(at + strlen(head), "---", 3) != 0);
  }
  volatile int* phase =
      mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  CHECK(phase != MAP_FAILED);
  uint64_t seed = lm_test_seed(), r = seed | 1;
  int kills = 0, episodes = 0, runs = 0, mismatches = 0;
  int hist[PH_COUNT] = {0}, kills_cores[3] = {0}, switches = 0;
  int refused = 0, two_owners = 0; /* second openers */
  int64_t full_ns = 0;
  while (kills < 100) {
    char dir[64];
    CHECK(lm_test_mkdtemp(dir, sizeof dir, "lm_kill_") == 0);
    episodes++;
    int streak = 0; /* kills in a row in this episode */
    int last_cores = 0;
    for (;;) {
      runs++;
      r ^= r << 13, r ^= r >> 7, r ^= r << 17;
      int cores = 1 + (int)((r >> 32) % 2);
      switches += last_cores != 0 && cores != last_cores;
      last_cores = cores;
      int64_t t0 = mono_ns();
      *phase = PH_OPEN; /* not the last child's: the second opener reads it */
      pid_t pid = fork();
      CHECK(pid >= 0);
      if (pid == 0) child_run(dir, cores, phase);
      int status;
      /* Kill at a random moment of a run's span; after 8 kills in a row the
       * run may finish, so every episode ends. */
      if (full_ns > 0 && streak < 8) {
        r ^= r << 13, r ^= r >> 7, r ^= r << 17;
        usleep((useconds_t)((r % (uint64_t)full_ns) / 1000));
        if (waitpid(pid, &status, WNOHANG) == 0) {
          /* Only once the child holds the directory: taking it first would
           * make the child's open fail. */
          int second = *phase >= PH_PUSH ? second_opener(dir, pid, phase) : 0;
          refused += second == 1;
          two_owners += second < 0;
          int ph = *phase;
          kill(pid, SIGKILL);
          waitpid(pid, &status, 0);
          if (WIFSIGNALED(status)) {
            kills++;
            kills_cores[cores]++;
            streak++;
            if (ph >= 0 && ph < PH_COUNT) hist[ph]++;
            continue;
          }
        }
      } else {
        waitpid(pid, &status, 0);
        int64_t took = mono_ns() - t0; /* an uninterrupted run sets the scale */
        if (took > full_ns) full_ns = took;
      }
      CHECK(WIFEXITED(status));
      if (WEXITSTATUS(status) != 0) {
        fprintf(stderr, "child exited %d\n", WEXITSTATUS(status));
        return 1;
      }
      break;
    }
    char* got = all_output(dir);
    if (strcmp(got, want) != 0) {
      mismatches++;
      fprintf(stderr, "episode %d: output differs\n--- got\n%s--- want\n%s", episodes,
              got, want);
    }
    free(got);
    remove_all(dir);
    if (mismatches) break;
  }
  fprintf(
      stderr,
      "crash: kills=%d episodes=%d runs=%d mismatched_episodes=%d match=%s seed=%llu\n",
      kills, episodes, runs, mismatches, mismatches ? "no" : "yes",
      (unsigned long long)seed);
  fprintf(stderr, "crash: kills by phase:");
  for (int i = 0; i < PH_COUNT; i++) fprintf(stderr, " %s=%d", PHASES[i], hist[i]);
  fprintf(stderr,
          "\ncrash: kills by cores: 1=%d 2=%d; restarts with another core count: %d\n",
          kills_cores[1], kills_cores[2], switches);
  fprintf(stderr, "crash: second openers refused=%d two_owners=%d\n", refused,
          two_owners);
  EXPECT(kills_cores[1] > 0 && kills_cores[2] > 0 && switches > 0);
  EXPECT(refused > 0 && two_owners == 0);
  munmap((void*)phase, 4096);
  free(want);
  return mismatches == 0 ? 0 : 1;
}

static const lm_test_case cases[] = {{"sigkill_loop", test_sigkill_loop}, {NULL, NULL}};

int main(int argc, char** argv) { return lm_test_main(argc, argv, cases); }
