/*
 * test_durable.c -- durability through laminar.h (issue 6): settings and their
 * conflicts, the persisted catalog, checkpoints and WAL replay across a
 * restart, the exactly-once file sink, offsets, identical and conflicting DDL
 * after recovery, damaged checkpoints, and a process killed with SIGKILL
 * between (and during) checkpoints. Every comparison is with one uninterrupted
 * run over the same input.
 */
/* lm_ctest: TIMEOUT 180 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE  // fork, mkdtemp under -std=c17
#endif

#include <dirent.h>
#include <fcntl.h>
#include <time.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "arrow_build.h"
#include "lm_test.h"
#include "lm_test_fs.h"

static const char* DDL =
    "CREATE SOURCE trades (symbol VARCHAR NOT NULL, price DOUBLE, volume BIGINT, ts BIGINT,\n"
    "  WATERMARK FOR ts AS ts - INTERVAL '100' MILLISECOND);\n"
    "CREATE STREAM vwap AS SELECT symbol, window_start, SUM(price * volume) / SUM(volume) AS vwap,\n"
    "  COUNT(*) AS n FROM trades GROUP BY symbol, tumble(ts, INTERVAL '1' SECOND);\n";

#define NBATCH 40
#define ROWS 50

/* Batch b of the deterministic input: 4 symbols, time moving forward with a
 * little disorder inside the watermark delay. */
static int push_batch(laminar_source* src, int64_t b, laminar_error* err) {
  trade_row rows[ROWS];
  static const char* syms[] = {"AAPL", "MSFT", "M\xc3\xbcnchen", "X"};
  for (int i = 0; i < ROWS; i++) {
    int64_t k = b * ROWS + i;
    rows[i] = (trade_row){syms[k % 4], 10.0 + (double)(k % 13) * 0.5, false, 1 + k % 7, false,
                          1000 + k * 20 - (k % 3) * 30};
  }
  struct ArrowArray array;
  struct ArrowSchema schema;
  if (build_trades(rows, ROWS, b % 2 == 1, &array, &schema) != 0) return -1;
  laminar_code rc = laminar_source_push(src, &array, &schema, err);
  if (array.release != NULL) array.release(&array);
  schema.release(&schema);
  return (int)rc;
}

static laminar_code open_db(const char* dir, const char* wal_mode, laminar_db** db,
                            laminar_error* err) {
  laminar_config* c;
  if (laminar_config_create(&c) != LAMINAR_OK) return LAMINAR_ERR_NOMEM;
  laminar_code rc = laminar_config_set(c, "data_dir", dir, err);
  if (rc == LAMINAR_OK) rc = laminar_config_set(c, "checkpoint_interval", "1 hour", err);
  if (rc == LAMINAR_OK) rc = laminar_config_set(c, "wal_mode", wal_mode, err);
  if (rc == LAMINAR_OK) rc = laminar_open(c, db, err);
  laminar_config_destroy(c);
  return rc;
}

static void sink_sql(const char* dir, char* out, size_t n) {
  snprintf(out, n,
           "CREATE SINK out FROM vwap INTO FILE (path = '%s/out', format = 'jsonl')", dir);
}

/* The committed sink output: its part files concatenated in epoch order,
 * then its lines sorted (rows of one epoch keep their order; epoch
 * boundaries depend on timing, RELIABILITY "equal output"). */
static char* sink_output(const char* dir) {
  char path[512];
  snprintf(path, sizeof path, "%s/out", dir);
  struct dirent** list;
  int n = scandir(path, &list, NULL, alphasort);
  size_t cap = 1 << 16, len = 0;
  char* all = calloc(1, cap);
  for (int i = 0; i < n; i++) {
    if (strncmp(list[i]->d_name, "part-", 5) == 0) {
      char p[800];
      snprintf(p, sizeof p, "%s/%s", path, list[i]->d_name);
      FILE* f = fopen(p, "rb");
      size_t got;
      char buf[4096];
      while (f != NULL && (got = fread(buf, 1, sizeof buf, f)) > 0) {
        while (len + got + 1 > cap) {
          cap *= 2;
          all = realloc(all, cap);
        }
        memcpy(all + len, buf, got);
        len += got;
      }
      if (f != NULL) fclose(f);
    }
    free(list[i]);
  }
  if (n > 0) free(list);
  all[len] = '\0';
  /* sort lines */
  size_t nl = 0;
  for (size_t i = 0; i < len; i++) nl += all[i] == '\n';
  char** lines = calloc(nl + 1, sizeof *lines);
  size_t k = 0;
  for (char* p = all; *p != '\0';) {
    char* e = strchr(p, '\n');
    *e = '\0';
    lines[k++] = p;
    p = e + 1;
  }
  for (size_t i = 1; i < k; i++)
    for (size_t j = i; j > 0 && strcmp(lines[j - 1], lines[j]) > 0; j--) {
      char* t = lines[j];
      lines[j] = lines[j - 1];
      lines[j - 1] = t;
    }
  char* out = calloc(1, len + 2);
  size_t o = 0;
  for (size_t i = 0; i < k; i++) {
    size_t l = strlen(lines[i]);
    memcpy(out + o, lines[i], l);
    o += l;
    out[o++] = '\n';
  }
  free(lines);
  free(all);
  return out;
}

/* Push batches [from, to), run inline, checkpoint every `every` batches. */
static int feed(laminar_db* db, laminar_source* src, int64_t from, int64_t to, int every) {
  laminar_error err;
  for (int64_t b = from; b < to; b++) {
    CHECK_CODE(push_batch(src, b, &err), LAMINAR_OK, &err);
    CHECK_CODE(laminar_run_until_idle(db, &err), LAMINAR_OK, &err);
    if (every > 0 && (b + 1) % every == 0)
      CHECK_CODE(laminar_checkpoint(db, &err), LAMINAR_OK, &err);
  }
  return 0;
}

static int finish(laminar_db* db, laminar_source* src) {
  laminar_error err;
  CHECK_CODE(laminar_source_watermark(src, INT64_MAX, &err), LAMINAR_OK, &err);
  CHECK_CODE(laminar_run_until_idle(db, &err), LAMINAR_OK, &err);
  CHECK_CODE(laminar_checkpoint(db, &err), LAMINAR_OK, &err);
  return 0;
}

/* The uninterrupted run's committed output. */
static char* reference_output(void) {
  char dir[64];
  if (lm_test_mkdtemp(dir, sizeof dir, "lm_dur_ref_") != 0) return NULL;
  laminar_db* db;
  laminar_source* src;
  laminar_error err;
  char sql[600];
  sink_sql(dir, sql, sizeof sql);
  char* out = NULL;
  if (open_db(dir, "sync", &db, &err) == LAMINAR_OK) {
    if (laminar_execute(db, DDL, &err) == LAMINAR_OK && laminar_execute(db, sql, &err) == LAMINAR_OK &&
        laminar_source_open(db, "trades", &src, &err) == LAMINAR_OK) {
      if (feed(db, src, 0, NBATCH, 7) == 0 && finish(db, src) == 0) out = sink_output(dir);
      laminar_source_close(src);
    }
    laminar_close(db);
  }
  char p[600];
  snprintf(p, sizeof p, "%s/out", dir);
  lm_test_rmdir(p);
  snprintf(p, sizeof p, "%s/checkpoints", dir);
  lm_test_rmdir(p);
  snprintf(p, sizeof p, "%s/wal/trades", dir);
  lm_test_rmdir(p);
  snprintf(p, sizeof p, "%s/wal", dir);
  lm_test_rmdir(p);
  lm_test_rmdir(dir);
  return out;
}

static void remove_db(const char* dir) {
  const char* subs[] = {"out", "checkpoints", "wal/trades", "wal"};
  char p[600];
  for (size_t i = 0; i < sizeof subs / sizeof subs[0]; i++) {
    snprintf(p, sizeof p, "%s/%s", dir, subs[i]);
    lm_test_rmdir(p);
  }
  lm_test_rmdir(dir);
}

/* ---- settings ------------------------------------------------------------------------ */

static int test_settings(void) {
  laminar_config* c;
  laminar_error err;
  laminar_db* db = NULL;
  CHECK(laminar_config_create(&c) == LAMINAR_OK);
  CHECK_CODE(laminar_config_set(c, "wal_mode", "sometimes", &err), LAMINAR_ERR_CONFIG_VALUE, &err);
  CHECK_CODE(laminar_config_set(c, "checkpoint_interval", "soon", &err), LAMINAR_ERR_CONFIG_VALUE,
             &err);
  CHECK_CODE(laminar_config_set(c, "checkpoint_keep", "0", &err), LAMINAR_ERR_CONFIG_VALUE, &err);
  CHECK_CODE(laminar_config_set(c, "wal_io", "carrier-pigeon", &err), LAMINAR_ERR_CONFIG_VALUE,
             &err);
  CHECK_CODE(laminar_config_set(c, "wal_mode", "sync", &err), LAMINAR_OK, &err);
  CHECK_CODE(laminar_open(c, &db, &err), LAMINAR_ERR_CONFIG_CONFLICT, &err);
  CHECK(db == NULL && strstr(err.message, "checkpoint_interval") != NULL);
  CHECK_CODE(laminar_config_set(c, "checkpoint_interval", "250 ms", &err), LAMINAR_OK, &err);
  CHECK_CODE(laminar_open(c, &db, &err), LAMINAR_ERR_CONFIG_CONFLICT, &err);
  CHECK(strstr(err.message, "data_dir") != NULL);
  laminar_config_destroy(c);
  /* Durability off: checkpoints are refused, file sinks too. */
  CHECK_CODE(laminar_open(NULL, &db, &err), LAMINAR_OK, &err);
  CHECK_CODE(laminar_checkpoint(db, &err), LAMINAR_ERR_STATE, &err);
  CHECK_CODE(laminar_execute(db, DDL, &err), LAMINAR_OK, &err);
  CHECK_CODE(laminar_execute(db, "CREATE SINK s FROM vwap INTO FILE (path = '/tmp/x')", &err),
             LAMINAR_ERR_CONFIG_CONFLICT, &err);
  CHECK(err.line == 1);
  CHECK_CODE(laminar_execute(db, "CREATE SOURCE t (a BIGINT) WITH (wal_mode = 'sync')", &err),
             LAMINAR_ERR_CONFIG_CONFLICT, &err);
  laminar_source* src;
  int64_t off = -1;
  CHECK_CODE(laminar_source_open(db, "trades", &src, &err), LAMINAR_OK, &err);
  CHECK_CODE(laminar_source_offset(src, &off, &err), LAMINAR_OK, &err);
  CHECK(off == 0);
  laminar_source_close(src);
  laminar_close(db);
  return 0;
}

/* ---- restart ---------------------------------------------------------------------------- */

/* Half the input, a checkpoint, more input without a checkpoint, close;
 * reopen (no DDL: the catalog comes back), resume at the offset, finish. The
 * committed output equals the uninterrupted run's. */
static int restart_case(const char* wal_mode) {
  char* want = reference_output();
  CHECK(want != NULL && strlen(want) > 100);
  char dir[64];
  CHECK(lm_test_mkdtemp(dir, sizeof dir, "lm_dur_") == 0);
  laminar_db* db;
  laminar_source* src;
  laminar_error err;
  char sql[600];
  sink_sql(dir, sql, sizeof sql);
  CHECK_CODE(open_db(dir, wal_mode, &db, &err), LAMINAR_OK, &err);
  CHECK_CODE(laminar_execute(db, DDL, &err), LAMINAR_OK, &err);
  CHECK_CODE(laminar_execute(db, sql, &err), LAMINAR_OK, &err);
  CHECK_CODE(laminar_source_open(db, "trades", &src, &err), LAMINAR_OK, &err);
  int64_t off;
  CHECK_CODE(laminar_source_offset(src, &off, &err), LAMINAR_OK, &err);
  CHECK(off == 1);
  CHECK(feed(db, src, 0, 15, 0) == 0);
  CHECK_CODE(laminar_checkpoint(db, &err), LAMINAR_OK, &err);
  CHECK(feed(db, src, 15, 22, 0) == 0); /* after the checkpoint: only in the WAL */
  laminar_source_close(src);
  CHECK_CODE(laminar_close(db), LAMINAR_OK, NULL);

  CHECK_CODE(open_db(dir, wal_mode, &db, &err), LAMINAR_OK, &err);
  /* The same DDL again is harmless; another definition under a used name is not. */
  CHECK_CODE(laminar_execute(db, DDL, &err), LAMINAR_OK, &err);
  CHECK_CODE(laminar_execute(db, sql, &err), LAMINAR_OK, &err);
  CHECK_CODE(laminar_execute(db, "CREATE SOURCE trades (a BIGINT)", &err),
             LAMINAR_ERR_SQL_DUPLICATE_OBJECT, &err);
  CHECK_CODE(laminar_source_open(db, "trades", &src, &err), LAMINAR_OK, &err);
  CHECK_CODE(laminar_source_offset(src, &off, &err), LAMINAR_OK, &err);
  CHECK(off == 23); /* 22 batches were accepted */
  CHECK(feed(db, src, off - 1, NBATCH, 9) == 0);
  CHECK(finish(db, src) == 0);
  laminar_source_close(src);
  CHECK_CODE(laminar_close(db), LAMINAR_OK, NULL);
  char* got = sink_output(dir);
  int rc = strcmp(got, want) == 0 ? 0 : 1;
  if (rc) fprintf(stderr, "--- got\n%s--- want\n%s", got, want);
  free(got);
  free(want);
  remove_db(dir);
  return rc;
}

static int test_restart_sync(void) { return restart_case("sync"); }
static int test_restart_async(void) { return restart_case("async"); }

/* ---- damaged state ------------------------------------------------------------------------ */

static int test_damaged_checkpoint_and_catalog(void) {
  char dir[64];
  CHECK(lm_test_mkdtemp(dir, sizeof dir, "lm_dur_") == 0);
  laminar_db* db;
  laminar_source* src;
  laminar_error err;
  CHECK_CODE(open_db(dir, "sync", &db, &err), LAMINAR_OK, &err);
  CHECK_CODE(laminar_execute(db, DDL, &err), LAMINAR_OK, &err);
  CHECK_CODE(laminar_source_open(db, "trades", &src, &err), LAMINAR_OK, &err);
  CHECK(feed(db, src, 0, 10, 5) == 0); /* checkpoints 1 and 2 */
  laminar_source_close(src);
  laminar_close(db);
  /* Checkpoint 2 damaged: recovery uses 1 and replays the WAL after it
   * (its segments were kept: checkpoint 2's truncation covers only what 2
   * covered, and the WAL still holds 6..10). */
  char p[600];
  snprintf(p, sizeof p, "%s/checkpoints/ckpt-%020d.bin", dir, 2);
  int fd = open(p, O_RDWR);
  CHECK(fd >= 0);
  CHECK(pwrite(fd, "\xff\xff\xff\xff", 4, 40) == 4);
  close(fd);
  CHECK_CODE(open_db(dir, "sync", &db, &err), LAMINAR_OK, &err);
  CHECK_CODE(laminar_source_open(db, "trades", &src, &err), LAMINAR_OK, &err);
  int64_t off;
  CHECK_CODE(laminar_source_offset(src, &off, &err), LAMINAR_OK, &err);
  CHECK(off == 11);
  laminar_source_close(src);
  laminar_close(db);
  /* A catalog that does not run: recovery refuses with LDB-5002. */
  snprintf(p, sizeof p, "%s/catalog.sql", dir);
  FILE* f = fopen(p, "w");
  CHECK(f != NULL);
  fputs("CREATE STREAM broken AS SELECT nope FROM nowhere;\n", f);
  fclose(f);
  db = NULL;
  CHECK_CODE(open_db(dir, "sync", &db, &err), LAMINAR_ERR_RECOVERY, &err);
  CHECK(db == NULL && strstr(err.message, "catalog.sql") != NULL);
  remove_db(dir);
  return 0;
}

/* ---- kill -9 ------------------------------------------------------------------------------- */

/* What the child is doing, as seen from the API, shared with the parent. */
enum { PH_OPEN, PH_PUSH, PH_RUN, PH_CHECKPOINT, PH_FINISH, PH_COUNT };
static const char* PHASES[PH_COUNT] = {"open/recover", "push", "run", "checkpoint", "finish"};

static void child_run(const char* dir, volatile int* phase) {
  laminar_db* db;
  laminar_source* src;
  laminar_error err;
  char sql[600];
  sink_sql(dir, sql, sizeof sql);
  *phase = PH_OPEN;
  if (open_db(dir, "sync", &db, &err) != LAMINAR_OK) {
    fprintf(stderr, "child: open: %s\n", err.message);
    _exit(3);
  }
  if (laminar_execute(db, DDL, &err) != LAMINAR_OK || laminar_execute(db, sql, &err) != LAMINAR_OK ||
      laminar_source_open(db, "trades", &src, &err) != LAMINAR_OK)
    _exit(4);
  int64_t off;
  laminar_source_offset(src, &off, &err);
  for (int64_t b = off - 1; b < NBATCH; b++) {
    *phase = PH_PUSH;
    if (push_batch(src, b, &err) != LAMINAR_OK) _exit(5);
    *phase = PH_RUN;
    if (laminar_run_until_idle(db, &err) != LAMINAR_OK) _exit(6);
    if ((b + 1) % 7 == 0) {
      *phase = PH_CHECKPOINT;
      if (laminar_checkpoint(db, &err) != LAMINAR_OK) _exit(7);
    }
  }
  *phase = PH_FINISH;
  if (finish(db, src) != 0) _exit(8);
  laminar_source_close(src);
  laminar_close(db);
  _exit(0);
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
  char* want = reference_output();
  CHECK(want != NULL);
  volatile int* phase = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  CHECK(phase != MAP_FAILED);
  uint64_t seed = lm_test_seed(), r = seed | 1;
  int kills = 0, episodes = 0, runs = 0, mismatches = 0;
  int hist[PH_COUNT] = {0};
  int64_t full_ns = 0;
  while (kills < 100) {
    char dir[64];
    CHECK(lm_test_mkdtemp(dir, sizeof dir, "lm_kill_") == 0);
    episodes++;
    int streak = 0; /* kills in a row in this episode */
    for (;;) {
      runs++;
      int64_t t0 = mono_ns();
      pid_t pid = fork();
      CHECK(pid >= 0);
      if (pid == 0) child_run(dir, phase);
      int status;
      /* Kill at a random moment of a run's span; after 8 kills in a row the
       * run may finish, so every episode ends. */
      if (full_ns > 0 && streak < 8) {
        r ^= r << 13, r ^= r >> 7, r ^= r << 17;
        usleep((useconds_t)((r % (uint64_t)full_ns) / 1000));
        if (waitpid(pid, &status, WNOHANG) == 0) {
          int ph = *phase;
          kill(pid, SIGKILL);
          waitpid(pid, &status, 0);
          if (WIFSIGNALED(status)) {
            kills++;
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
    char* got = sink_output(dir);
    if (strcmp(got, want) != 0) {
      mismatches++;
      fprintf(stderr, "episode %d: output differs\n--- got\n%s--- want\n%s", episodes, got, want);
    }
    free(got);
    remove_db(dir);
    if (mismatches) break;
  }
  fprintf(stderr, "crash: kills=%d episodes=%d runs=%d mismatched_episodes=%d match=%s seed=%llu\n",
          kills, episodes, runs, mismatches, mismatches ? "no" : "yes",
          (unsigned long long)seed);
  fprintf(stderr, "crash: kills by phase:");
  for (int i = 0; i < PH_COUNT; i++) fprintf(stderr, " %s=%d", PHASES[i], hist[i]);
  fprintf(stderr, "\n");
  munmap((void*)phase, 4096);
  free(want);
  return mismatches == 0 ? 0 : 1;
}

static const lm_test_case cases[] = {
    {"settings", test_settings},
    {"restart_sync", test_restart_sync},
    {"restart_async", test_restart_async},
    {"damaged_checkpoint_and_catalog", test_damaged_checkpoint_and_catalog},
    {"sigkill_loop", test_sigkill_loop},
    {NULL, NULL},
};

int main(int argc, char** argv) { return lm_test_main(argc, argv, cases); }
