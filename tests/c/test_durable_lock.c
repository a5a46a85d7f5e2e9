/*
 * test_durable_lock.c -- one owner per data directory, and read-only opens
 * (issue 20, item 1; RELIABILITY "one owner").
 *
 * A durable open holds its data directory until laminar_close: a second open
 * in the same process or in another one fails with LAMINAR_ERR_LOCKED (LDB-5003)
 * naming the directory and the holder's pid; closing, or the holder dying
 * (kill -9), releases it. Two processes racing to push sync rows into one
 * directory lose no acknowledged row. Read-only opens share the directory with
 * each other (never with a writer), see the checkpoint and the WAL after it,
 * refuse every write with LAMINAR_ERR_READ_ONLY (LDB-5004), and change nothing
 * on disk -- not even a damaged WAL tail, which they report.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE  // fork, nftw under -std=c17
#endif

#include <ftw.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "lm_test.h"
#include "lm_test_fs.h"
#include "views_util.h"

#define SETTINGS_DDL                                                               \
  "CREATE SOURCE t (k VARCHAR, v BIGINT);\n"                                       \
  "CREATE MATERIALIZED VIEW tot AS SELECT COUNT(*) AS n, SUM(v) AS s FROM t EMIT " \
  "CHANGES"

/* A config for dir: durable (sync WAL) or read_only. NULL on failure. */
static laminar_config* config_for(const char* dir, bool read_only) {
  laminar_config* c;
  laminar_error err;
  if (laminar_config_create(&c) != LAMINAR_OK) return NULL;
  if (laminar_config_set(c, "data_dir", dir, &err) != LAMINAR_OK ||
      laminar_config_set(c, "checkpoint_interval", "1 hour", &err) != LAMINAR_OK ||
      laminar_config_set(c, "wal_mode", "sync", &err) != LAMINAR_OK ||
      (read_only && laminar_config_set(c, "read_only", "true", &err) != LAMINAR_OK)) {
    fprintf(stderr, "config: %s\n", err.message);
    laminar_config_destroy(c);
    return NULL;
  }
  return c;
}

static laminar_code open_dir(const char* dir, bool read_only, laminar_db** db,
                             laminar_error* err) {
  *db = NULL;
  laminar_config* c = config_for(dir, read_only);
  if (c == NULL) return LAMINAR_ERR_NOMEM;
  laminar_code rc = laminar_open(c, db, err);
  laminar_config_destroy(c);
  return rc;
}

/* Every entry under dir with its size, mtime and (files) content checksum:
 * equal snapshots mean nothing was created, changed or removed. */
static char* snap_buf;
static size_t snap_len, snap_cap;

static int snap_entry(const char* path, const struct stat* st, int flag,
                      struct FTW* ftw) {
  (void)flag, (void)ftw;
  uint64_t sum = 1469598103934665603ull; /* FNV-1a of the contents */
  if (S_ISREG(st->st_mode)) {
    FILE* f = fopen(path, "rb");
    int c;
    while (f != NULL && (c = fgetc(f)) != EOF)
      sum = (sum ^ (uint64_t)c) * 1099511628211ull;
    if (f != NULL) fclose(f);
  }
  char line[4200];
  int n = snprintf(line, sizeof line, "%s %lld %lld.%09ld %llx\n", path,
                   (long long)st->st_size, (long long)st->st_mtim.tv_sec,
                   st->st_mtim.tv_nsec, (unsigned long long)sum);
  while (snap_len + (size_t)n + 1 > snap_cap) {
    snap_cap = snap_cap ? snap_cap * 2 : 4096;
    snap_buf = realloc(snap_buf, snap_cap);
  }
  memcpy(snap_buf + snap_len, line, (size_t)n + 1);
  snap_len += (size_t)n;
  return 0;
}

static char* snapshot(const char* dir) {
  snap_buf = NULL;
  snap_len = snap_cap = 0;
  (void)nftw(dir, snap_entry, 16, FTW_PHYS);
  return snap_buf != NULL ? snap_buf : calloc(1, 1);
}

/* Push `n` one-row batches (k, v = from..from+n-1); the count acknowledged. */
static int64_t push_rows(laminar_source* src, int64_t from, int64_t n) {
  laminar_error err;
  int64_t acked = 0;
  for (int64_t i = 0; i < n; i++) {
    kv_row row = {"k", from + i, 0, 0};
    if (push_kv(src, &row, 1, 0, &err) == 0) acked++;
  }
  return acked;
}

/* The view's "n,s" after an inline run. */
static int view_text(laminar_db* db, char* out, size_t cap) {
  laminar_error err;
  CHECK_CODE(laminar_run_until_idle(db, &err), LAMINAR_OK, &err);
  CHECK_CODE(query_text(db, "SELECT n, s FROM tot", out, cap, &err), LAMINAR_OK, &err);
  return 0;
}

/* A new directory holding the catalog (source t, view tot), closed. */
static int make_db(char* dir, size_t cap) {
  CHECK(lm_test_mkdtemp(dir, cap, "lm_lock_") == 0);
  laminar_db* db;
  laminar_error err;
  CHECK_CODE(open_dir(dir, false, &db, &err), LAMINAR_OK, &err);
  CHECK_CODE(laminar_execute(db, SETTINGS_DDL, &err), LAMINAR_OK, &err);
  CHECK_CODE(laminar_close(db), LAMINAR_OK, NULL);
  return 0;
}

/* As a writer: push rows 1..checkpointed, checkpoint (when any), then rows
 * up to checkpointed + logged (in the WAL only), and close. */
static int fill_db(const char* dir, int64_t checkpointed, int64_t logged) {
  laminar_db* db;
  laminar_source* src;
  laminar_error err;
  CHECK_CODE(open_dir(dir, false, &db, &err), LAMINAR_OK, &err);
  CHECK_CODE(laminar_source_open(db, "t", &src, &err), LAMINAR_OK, &err);
  CHECK(push_rows(src, 1, checkpointed) == checkpointed);
  if (checkpointed > 0) {
    CHECK_CODE(laminar_run_until_idle(db, &err), LAMINAR_OK, &err);
    CHECK_CODE(laminar_checkpoint(db, &err), LAMINAR_OK, &err);
  }
  CHECK(push_rows(src, 1 + checkpointed, logged) == logged);
  laminar_source_close(src);
  CHECK_CODE(laminar_close(db), LAMINAR_OK, NULL);
  return 0;
}

/* A second open in this process -- writer or read-only -- is refused with
 * LDB-5003 naming the directory and this process's pid; a closed database
 * releases the directory. */
static int test_second_open_same_process(void) {
  char dir[64], pid[32];
  CHECK(make_db(dir, sizeof dir) == 0);
  snprintf(pid, sizeof pid, "pid %ld", (long)getpid());
  laminar_db *a, *b;
  laminar_error err;
  CHECK_CODE(open_dir(dir, false, &a, &err), LAMINAR_OK, &err);
  CHECK_CODE(open_dir(dir, false, &b, &err), LAMINAR_ERR_LOCKED, &err);
  CHECK(b == NULL);
  EXPECT(strncmp(err.message, "LDB-5003: ", 10) == 0);
  EXPECT(strstr(err.message, dir) != NULL);
  EXPECT(strstr(err.message, pid) != NULL);
  CHECK_CODE(open_dir(dir, true, &b, &err), LAMINAR_ERR_LOCKED, &err);
  EXPECT(strstr(err.message, pid) != NULL);
  EXPECT(strcmp(laminar_errstr(LAMINAR_ERR_LOCKED),
                "the data directory is in use by another database") == 0);
  /* The first one works on, unharmed by the refused opens. */
  laminar_source* src;
  CHECK_CODE(laminar_source_open(a, "t", &src, &err), LAMINAR_OK, &err);
  CHECK(push_rows(src, 1, 3) == 3);
  laminar_source_close(src);
  CHECK_CODE(laminar_close(a), LAMINAR_OK, NULL);
  /* Closed: the directory is free again, and nothing was lost. */
  CHECK_CODE(open_dir(dir, false, &b, &err), LAMINAR_OK, &err);
  char text[128];
  CHECK(view_text(b, text, sizeof text) == 0);
  EXPECT(strcmp(text, "3,6") == 0);
  CHECK_CODE(laminar_close(b), LAMINAR_OK, NULL);
  lm_test_rmtree(dir);
  return 0;
}

typedef struct racer_report {
  int open_rc;
  int64_t acked;
  char message[400];
} racer_report;

/* A racing child: wait for the start, open, push 300 sync rows, close. */
static void racer(const char* dir, int go_fd, int out_fd, int64_t from) {
  char c;
  racer_report r = {0};
  if (read(go_fd, &c, 1) != 1) _exit(2);
  laminar_db* db;
  laminar_error err;
  r.open_rc = (int)open_dir(dir, false, &db, &err);
  if (r.open_rc != LAMINAR_OK) {
    snprintf(r.message, sizeof r.message, "%.399s", err.message);
  } else {
    laminar_source* src;
    if (laminar_source_open(db, "t", &src, &err) != LAMINAR_OK) _exit(3);
    r.acked = push_rows(src, from, 300);
    laminar_source_close(src);
    if (laminar_close(db) != LAMINAR_OK) _exit(4);
  }
  if (write(out_fd, &r, sizeof r) != (ssize_t)sizeof r) _exit(5);
  _exit(0);
}

/* Two processes race to open one directory and push 300 sync rows each:
 * every acknowledged row is there after a reopen. Whoever loses the race
 * gets LDB-5003 with the winner's pid (both may win, one after the other, if
 * the first finished before the second started: then all 600 are there). */
static int test_two_processes_race(void) {
  char dir[64];
  CHECK(make_db(dir, sizeof dir) == 0);
  int go[2], out[2];
  CHECK(pipe(go) == 0 && pipe(out) == 0);
  pid_t pids[2];
  for (int i = 0; i < 2; i++) {
    pids[i] = fork();
    CHECK(pids[i] >= 0);
    if (pids[i] == 0) racer(dir, go[0], out[1], 1 + 1000 * i);
  }
  CHECK(write(go[1], "gg", 2) == 2);
  racer_report r[2];
  int opened = 0, refused = 0;
  int64_t acked = 0;
  for (int i = 0; i < 2; i++) {
    CHECK(read(out[0], &r[i], sizeof r[i]) == (ssize_t)sizeof r[i]);
    if (r[i].open_rc == LAMINAR_OK) {
      opened++;
      acked += r[i].acked;
    } else {
      refused++;
      EXPECT(r[i].open_rc == LAMINAR_ERR_LOCKED);
      EXPECT(strstr(r[i].message, dir) != NULL);
      /* The holder is the other child. */
      char want[2][32];
      for (int k = 0; k < 2; k++)
        snprintf(want[k], sizeof want[k], "pid %ld", (long)pids[k]);
      EXPECT(strstr(r[i].message, want[0]) != NULL ||
             strstr(r[i].message, want[1]) != NULL);
      printf("refused: %s\n", r[i].message);
    }
  }
  for (int i = 0; i < 2; i++) {
    int status;
    CHECK(waitpid(pids[i], &status, 0) == pids[i]);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  }
  close(go[0]), close(go[1]), close(out[0]), close(out[1]);
  CHECK(opened >= 1);
  laminar_db* db;
  laminar_error err;
  CHECK_CODE(open_dir(dir, false, &db, &err), LAMINAR_OK, &err);
  char text[128], want[128];
  CHECK(view_text(db, text, sizeof text) == 0);
  int64_t n = strtoll(text, NULL, 10);
  printf("race: opened=%d refused=%d acked=%lld recovered=%lld lost=%lld\n", opened,
         refused, (long long)acked, (long long)n, (long long)(acked - n));
  snprintf(want, sizeof want, "%lld,", (long long)acked);
  EXPECT(acked >= 300 && strncmp(text, want, strlen(want)) == 0);
  CHECK_CODE(laminar_close(db), LAMINAR_OK, NULL);
  lm_test_rmtree(dir);
  return 0;
}

/* A child holding the directory is killed with SIGKILL: the kernel drops its
 * lock, and the next open recovers what it acknowledged. Before, opens are
 * refused naming the child's pid. */
static int test_killed_holder_releases(void) {
  char dir[64], pid[32];
  CHECK(make_db(dir, sizeof dir) == 0);
  int ready[2];
  CHECK(pipe(ready) == 0);
  pid_t child = fork();
  CHECK(child >= 0);
  if (child == 0) {
    laminar_db* db;
    laminar_source* src;
    laminar_error err;
    if (open_dir(dir, false, &db, &err) != LAMINAR_OK) _exit(2);
    if (laminar_source_open(db, "t", &src, &err) != LAMINAR_OK) _exit(3);
    if (push_rows(src, 1, 10) != 10) _exit(4);
    if (write(ready[1], "r", 1) != 1) _exit(5);
    for (;;) pause(); /* holds the database until killed */
  }
  char c;
  CHECK(read(ready[0], &c, 1) == 1);
  snprintf(pid, sizeof pid, "pid %ld", (long)child);
  laminar_db* db;
  laminar_error err;
  /* Expecting checks only until the child is killed: it must not outlive a failure. */
  EXPECT(open_dir(dir, false, &db, &err) == LAMINAR_ERR_LOCKED);
  EXPECT(strstr(err.message, pid) != NULL && strstr(err.message, dir) != NULL);
  if (db != NULL) laminar_close(db);
  EXPECT(open_dir(dir, true, &db, &err) == LAMINAR_ERR_LOCKED);
  EXPECT(strstr(err.message, pid) != NULL);
  if (db != NULL) laminar_close(db);
  CHECK(kill(child, SIGKILL) == 0);
  int status;
  CHECK(waitpid(child, &status, 0) == child && WIFSIGNALED(status));
  CHECK_CODE(open_dir(dir, false, &db, &err), LAMINAR_OK, &err);
  char text[128];
  CHECK(view_text(db, text, sizeof text) == 0);
  EXPECT(strcmp(text, "10,55") == 0);
  CHECK_CODE(laminar_close(db), LAMINAR_OK, NULL);
  close(ready[0]), close(ready[1]);
  lm_test_rmtree(dir);
  return 0;
}

static int read_only_refuses_writes(laminar_db* db) {
  laminar_error err;
  laminar_source* src = NULL;
  CHECK_CODE(laminar_source_open(db, "t", &src, &err), LAMINAR_ERR_READ_ONLY, &err);
  EXPECT(src == NULL && strncmp(err.message, "LDB-5004: ", 10) == 0);
  CHECK_CODE(laminar_execute(db, "CREATE SOURCE u (v BIGINT)", &err),
             LAMINAR_ERR_READ_ONLY, &err);
  EXPECT(strcmp(err.object, "u") == 0);
  CHECK_CODE(laminar_execute(db, "DROP MATERIALIZED VIEW tot", &err),
             LAMINAR_ERR_READ_ONLY, &err);
  CHECK_CODE(laminar_checkpoint(db, &err), LAMINAR_ERR_READ_ONLY, &err);
  laminar_sink_callbacks cb = {0};
  CHECK_CODE(laminar_sink_register(db, "k", "tot", &cb, &err), LAMINAR_ERR_READ_ONLY,
             &err);
  /* Re-running the stored DDL is a no-op, as on any reopen. */
  CHECK_CODE(laminar_execute(db, SETTINGS_DDL, &err), LAMINAR_OK, &err);
  return 0;
}

/* Read-only opens share the directory, see the checkpoint plus the WAL after
 * it, refuse writes, and change nothing on disk; a writer is refused while
 * they hold it and works once they are closed. */
static int test_read_only_shares(void) {
  char dir[64];
  CHECK(make_db(dir, sizeof dir) == 0);
  CHECK(fill_db(dir, 6, 4) == 0); /* 7..10 only in the WAL */
  laminar_db* w;
  laminar_error err;
  char* before = snapshot(dir);

  laminar_db *r1, *r2;
  CHECK_CODE(open_dir(dir, true, &r1, &err), LAMINAR_OK, &err);
  CHECK_CODE(open_dir(dir, true, &r2, &err), LAMINAR_OK, &err);
  char text[128];
  CHECK(view_text(r1, text, sizeof text) == 0);
  EXPECT(strcmp(text, "10,55") == 0);
  CHECK(view_text(r2, text, sizeof text) == 0);
  EXPECT(strcmp(text, "10,55") == 0);
  CHECK_CODE(query_text(r1, "SHOW SOURCES", text, sizeof text, &err), LAMINAR_OK, &err);
  CHECK_CODE(open_dir(dir, false, &w, &err), LAMINAR_ERR_LOCKED, &err);
  EXPECT(strstr(err.message, "read-only") != NULL);
  CHECK(read_only_refuses_writes(r1) == 0);
  CHECK_CODE(laminar_start(r2, &err), LAMINAR_OK, &err);
  CHECK_CODE(laminar_close(r1), LAMINAR_OK, NULL);
  CHECK_CODE(open_dir(dir, false, &w, &err), LAMINAR_ERR_LOCKED,
             &err); /* r2 still there */
  CHECK_CODE(laminar_close(r2), LAMINAR_OK, NULL);
  char* after = snapshot(dir);
  EXPECT(strcmp(before, after) == 0);
  if (strcmp(before, after) != 0) fprintf(stderr, "before:\n%safter:\n%s", before, after);
  free(before);
  free(after);

  CHECK_CODE(open_dir(dir, false, &w, &err), LAMINAR_OK, &err);
  CHECK(view_text(w, text, sizeof text) == 0);
  EXPECT(strcmp(text, "10,55") == 0);
  CHECK_CODE(laminar_close(w), LAMINAR_OK, NULL);
  lm_test_rmtree(dir);
  return 0;
}

/* A damaged WAL tail: a read-only open replays up to it and reports it, and
 * leaves it as it is (a writer's open cuts it later). */
static int test_read_only_reports_damage(void) {
  char dir[64];
  CHECK(make_db(dir, sizeof dir) == 0);
  CHECK(fill_db(dir, 0, 5) == 0);
  laminar_db* db;
  laminar_error err;
  /* Flip a payload byte of record 5. */
  char seg[160];
  snprintf(seg, sizeof seg, "%s/wal/t/00000000000000000001.wal", dir);
  long at = lm_test_wal_record_at(seg, 5);
  CHECK(at > 0);
  at += 32;
  FILE* f = fopen(seg, "r+b");
  CHECK(f != NULL);
  CHECK(fseek(f, at, SEEK_SET) == 0);
  int c = fgetc(f);
  CHECK(fseek(f, at, SEEK_SET) == 0 && fputc(c ^ 0x10, f) != EOF);
  fclose(f);
  char* before = snapshot(dir);
  CHECK_CODE(open_dir(dir, true, &db, &err), LAMINAR_OK, &err);
  char text[128], rep[2048];
  CHECK(view_text(db, text, sizeof text) == 0);
  EXPECT(strcmp(text, "4,10") == 0); /* the damaged fifth record is not replayed */
  if (strcmp(text, "4,10") != 0) fprintf(stderr, "view: %s\n", text);
  CHECK_CODE(laminar_durability_report(db, rep, sizeof rep, &err), LAMINAR_OK, &err);
  EXPECT(strstr(rep, "source 't'") != NULL && strstr(rep, "nothing cut") != NULL);
  CHECK_CODE(laminar_close(db), LAMINAR_OK, NULL);
  char* after = snapshot(dir);
  EXPECT(strcmp(before, after) == 0);
  free(before);
  free(after);
  lm_test_rmtree(dir);
  return 0;
}

/* Cut segment `seg` in the middle of record `seq` (a torn record). */
static int tear_at(const char* seg, uint64_t seq) {
  long at = lm_test_wal_record_at(seg, seq);
  CHECK(at > 0);
  CHECK(truncate(seg, at + 12) == 0);
  return 0;
}

/* Damage among the records the checkpoint covers is skipped by a read-only
 * open exactly as by a read-write one -- a missing run of covered records
 * between two segments, a covered segment tail torn before the next
 * segment -- and reported: the records after the checkpoint in the later
 * segment are replayed, never silently lost. */
static int test_read_only_skips_covered_damage(void) {
  char dir[64];
  CHECK(make_db(dir, sizeof dir) == 0);
  CHECK(fill_db(dir, 10, 0) == 0); /* checkpoint at 10, segment 1 */
  char seg1[160], seg11[160];
  snprintf(seg1, sizeof seg1, "%s/wal/t/00000000000000000001.wal", dir);
  snprintf(seg11, sizeof seg11, "%s/wal/t/00000000000000000011.wal", dir);
  CHECK(tear_at(seg1, 8) == 0);
  /* A writer cuts segment 1 after record 7, goes on at 11 in a new segment. */
  laminar_db* db;
  laminar_source* src;
  laminar_error err;
  CHECK_CODE(open_dir(dir, false, &db, &err), LAMINAR_OK, &err);
  CHECK_CODE(laminar_source_open(db, "t", &src, &err), LAMINAR_OK, &err);
  int64_t offset = 0;
  CHECK_CODE(laminar_source_offset(src, &offset, &err), LAMINAR_OK, &err);
  CHECK(offset == 11);
  CHECK(push_rows(src, 11, 5) == 5);
  laminar_source_close(src);
  CHECK_CODE(laminar_close(db), LAMINAR_OK, NULL);
  struct stat st;
  CHECK(stat(seg1, &st) == 0 && stat(seg11, &st) == 0); /* records 8..10 absent between */
  char text[128], rep[4096];
  for (int round = 0; round < 2; round++) {
    if (round == 1)
      CHECK(tear_at(seg1, 4) == 0); /* covered tail 4..10 before segment 11 */
    char* before = snapshot(dir);
    CHECK_CODE(open_dir(dir, true, &db, &err), LAMINAR_OK, &err);
    CHECK(view_text(db, text, sizeof text) == 0);
    EXPECT(strcmp(text, "15,120") ==
           0); /* 1..10 from the checkpoint, 11..15 from the log */
    if (strcmp(text, "15,120") != 0) fprintf(stderr, "round %d: view %s\n", round, text);
    CHECK_CODE(laminar_durability_report(db, rep, sizeof rep, &err), LAMINAR_OK, &err);
    EXPECT(strstr(rep, "skipped") != NULL && strstr(rep, "source 't'") != NULL);
    EXPECT(strstr(rep, "nothing cut") == NULL);
    if (strstr(rep, "skipped") == NULL)
      fprintf(stderr, "round %d: report %s\n", round, rep);
    CHECK_CODE(laminar_close(db), LAMINAR_OK, NULL);
    char* after = snapshot(dir);
    EXPECT(strcmp(before, after) == 0); /* read-only: nothing changed */
    free(before);
    free(after);
  }
  /* A writer sees the same. */
  CHECK_CODE(open_dir(dir, false, &db, &err), LAMINAR_OK, &err);
  CHECK(view_text(db, text, sizeof text) == 0);
  EXPECT(strcmp(text, "15,120") == 0);
  CHECK_CODE(laminar_close(db), LAMINAR_OK, NULL);
  lm_test_rmtree(dir);
  return 0;
}

/* read_only needs an existing data_dir (it creates none) and takes no
 * connector sinks from the config. */
static int test_read_only_settings(void) {
  laminar_config* c;
  laminar_db* db;
  laminar_error err;
  CHECK_CODE(laminar_config_create(&c), LAMINAR_OK, NULL);
  CHECK_CODE(laminar_config_set(c, "read_only", "maybe", &err), LAMINAR_ERR_CONFIG_VALUE,
             &err);
  CHECK_CODE(laminar_config_set(c, "read_only", "true", &err), LAMINAR_OK, &err);
  CHECK_CODE(laminar_open(c, &db, &err), LAMINAR_ERR_CONFIG_CONFLICT, &err);
  EXPECT(strstr(err.message, "read_only") != NULL);
  char dir[64], missing[96];
  CHECK(lm_test_mkdtemp(dir, sizeof dir, "lm_lock_") == 0);
  snprintf(missing, sizeof missing, "%s/none", dir);
  CHECK_CODE(laminar_config_set(c, "data_dir", missing, &err), LAMINAR_OK, &err);
  CHECK_CODE(laminar_open(c, &db, &err), LAMINAR_ERR_IO, &err);
  EXPECT(strstr(err.message, missing) != NULL);
  struct stat st;
  EXPECT(stat(missing, &st) != 0); /* not created */
  /* An empty directory opens as an empty database, and stays empty. */
  CHECK_CODE(laminar_config_set(c, "data_dir", dir, &err), LAMINAR_OK, &err);
  CHECK_CODE(laminar_open(c, &db, &err), LAMINAR_OK, &err);
  CHECK_CODE(laminar_close(db), LAMINAR_OK, NULL);
  EXPECT(rmdir(dir) == 0);
  laminar_config_destroy(c);
  return 0;
}

static const lm_test_case cases[] = {
    {"second_open_same_process", test_second_open_same_process},
    {"two_processes_race", test_two_processes_race},
    {"killed_holder_releases", test_killed_holder_releases},
    {"read_only_shares", test_read_only_shares},
    {"read_only_reports_damage", test_read_only_reports_damage},
    {"read_only_settings", test_read_only_settings},
    {"read_only_skips_covered_damage", test_read_only_skips_covered_damage},
    {NULL, NULL}};

int main(int argc, char** argv) { return lm_test_main(argc, argv, cases); }
