/*
 * test_durable_damage.c -- damage behind (and after) the checkpoint (issue 20
 * items 3 and 4, RELIABILITY "damage behind the checkpoint").
 *
 * The durable pipeline of lm_test_durable.h (sync WAL; with or without its
 * file sinks, plus a running total view) takes batches 0..24 with
 * checkpoints after batches 9 and 19 (epochs 1 and 2: offsets 10 and 20),
 * and its directory is copied as a crash leaves it. One file is damaged -- {flip a bit, overwrite 16 bytes,
 * truncate, delete} x {the WAL segment: a record the newest checkpoint
 * covers (5) or one after it (23); the checkpoint files: the newest or the
 * older one} -- and the database reopened. The producer resumes from
 * laminar_source_offset() as documented (batch offset - 1 on), pushes the rest
 * up to batch 39, and the committed output (sinks' part files) and the view
 * must equal an uninterrupted run's: recovered exactly, the resume offset
 * right, no epoch published twice (also with two reactors). A refusal is accepted only when its
 * message names the damaged file. Damage the checkpoint covers must be
 * reported by laminar_durability_report().
 */
/* lm_ctest: TIMEOUT 300 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE  // mkdtemp, scandir under -std=c17 (the shared test headers)
#endif

#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/util.h"

#include "lm_test.h"
#include "lm_test_durable.h"
#include "views_util.h"

#define CLOSED_AT 25 /* batches pushed before the damage */
#define TOTAL_SQL                                                           \
  "CREATE MATERIALIZED VIEW tot AS SELECT COUNT(*) AS n, SUM(volume) AS v " \
  "FROM trades EMIT CHANGES"

typedef enum kind { FLIP, OVERWRITE16, TRUNCATE, DELETE } kind;
static const char* const KIND_NAMES[] = {"flip", "overwrite16", "truncate", "delete"};

typedef enum target {
  WAL_COVERED,
  WAL_AFTER,
  CKPT_NEWEST,
  CKPT_OLDER,
  CKPT_NEWEST_AND_POS
} target;
static const char* const TARGET_NAMES[] = {
    "wal record 5 (covered)", "wal record 23 (after)", "checkpoint 2 (newest)",
    "checkpoint 1 (older)", "checkpoint 2 and its positions"};

static int g_cores = 1; /* reactors of every open (the replay's partitions) */

static int open_it(const char* dir, bool sinks, laminar_db** db, laminar_source** src,
                   laminar_error* err) {
  laminar_code rc = open_db_cores(dir, "sync", g_cores, db, err);
  if (rc == LAMINAR_OK) rc = laminar_execute(*db, DDL, err);
  if (rc == LAMINAR_OK) rc = laminar_execute(*db, TOTAL_SQL, err);
  if (rc == LAMINAR_OK && sinks) {
    char sql[2048];
    sink_sql(dir, sql, sizeof sql);
    rc = laminar_execute(*db, sql, err);
  }
  if (rc == LAMINAR_OK) rc = laminar_source_open(*db, "trades", src, err);
  return (int)rc;
}

/* The sinks' committed output (when there are sinks) and the view, after the
 * last checkpoint; closes db. */
static char* result_of(const char* dir, bool sinks, laminar_db* db, laminar_source* src) {
  laminar_error err;
  char view[512];
  if (finish(db, src) != 0 ||
      query_text(db, "SELECT * FROM tot", view, sizeof view, &err) != LAMINAR_OK)
    return NULL;
  laminar_source_close(src);
  laminar_close(db);
  char* out = sinks ? sink_output(dir) : strdup("");
  size_t n = strlen(out) + strlen(view) + 16;
  char* all = malloc(n);
  snprintf(all, n, "%s--- tot\n%s\n", out, view);
  free(out);
  return all;
}

static char* reference(bool sinks) {
  char dir[64];
  if (lm_test_mkdtemp(dir, sizeof dir, "lm_dmg_ref_") != 0) return NULL;
  laminar_db* db;
  laminar_source* src;
  laminar_error err;
  char* out = NULL;
  if (open_it(dir, sinks, &db, &src, &err) == 0 && feed(db, src, 0, NBATCH, 10) == 0)
    out = result_of(dir, sinks, db, src);
  remove_db(dir);
  return out;
}

/* Offset of record `seq` in WAL segment image p (n bytes), or -1. */
static long record_offset(const uint8_t* p, size_t n, uint64_t seq) {
  size_t off = 32;
  while (off + 32 <= n) {
    uint32_t len;
    uint64_t s;
    memcpy(&len, p + off, 4);
    memcpy(&s, p + off + 8, 8);
    if (len == 0 && s == 0 && p[off + 24] == 0) return -1; /* the zero tail */
    if (s == seq && !(p[off + 24] == 0xff && p[off + 25] == 0xff)) return (long)off;
    off += 32 + ((len + 7u) & ~7u);
  }
  return -1;
}

static uint8_t* read_all(const char* path, size_t* n) {
  FILE* f = fopen(path, "rb");
  if (f == NULL) return NULL;
  fseek(f, 0, SEEK_END);
  long len = ftell(f);
  fseek(f, 0, SEEK_SET);
  uint8_t* p = malloc((size_t)len + 1);
  *n = fread(p, 1, (size_t)len, f);
  fclose(f);
  return p;
}

static int write_all(const char* path, const uint8_t* p, size_t n) {
  FILE* f = fopen(path, "wb");
  if (f == NULL) return -1;
  size_t w = fwrite(p, 1, n, f);
  fclose(f);
  return w == n ? 0 : -1;
}

/* Damage `path` at byte `at` (of an n-byte file) in the way `k`. */
static int damage_file(const char* path, kind k, size_t at) {
  if (k == DELETE) return unlink(path);
  size_t n;
  uint8_t* p = read_all(path, &n);
  if (p == NULL || at + 16 > n) {
    free(p);
    return -1;
  }
  if (k == FLIP) p[at] ^= 0x10;
  if (k == OVERWRITE16) memset(p + at, 0xa5, 16);
  if (k == TRUNCATE) n = at;
  int rc = write_all(path, p, n);
  free(p);
  return rc;
}

static int damage(const char* dir, target t, kind k, char* file, size_t cap) {
  if (t == WAL_COVERED || t == WAL_AFTER) {
    snprintf(file, cap, "%s/wal/trades/00000000000000000001.wal", dir);
    size_t n;
    uint8_t* p = read_all(file, &n);
    CHECK(p != NULL);
    long off = record_offset(p, n, t == WAL_COVERED ? 5 : 23);
    free(p);
    CHECK(off > 0);
    /* Inside the record: its payload for a flip, its header for the rest. */
    return damage_file(file, k, (size_t)off + (k == FLIP ? 48 : 8));
  }
  uint64_t epoch = t == CKPT_OLDER ? 1 : 2;
  snprintf(file, cap, "%s/checkpoints/ckpt-%020llu.bin", dir, (unsigned long long)epoch);
  if (t == CKPT_NEWEST_AND_POS) {
    char pos[600];
    snprintf(pos, sizeof pos, "%s/checkpoints/pos-%020llu.bin", dir,
             (unsigned long long)epoch);
    CHECK(damage_file(pos, k, 40) == 0);
  }
  return damage_file(file, k, k == FLIP ? 100 : 40);
}

/* A fresh directory in dir (char[64]) holding batches 0..CLOSED_AT-1 as a
 * crash leaves it (a close would checkpoint): 0 on success. */
static int crashed_dir(char* dir, bool sinks) {
  CHECK(lm_test_mkdtemp(dir, 64, "lm_dmg_") == 0);
  laminar_db* db;
  laminar_source* src;
  laminar_error err;
  CHECK_CODE(open_it(dir, sinks, &db, &src, &err), LAMINAR_OK, &err);
  CHECK(feed(db, src, 0, CLOSED_AT, 10) == 0);
  char copy[80];
  snprintf(copy, sizeof copy, "%s_c", dir);
  CHECK(copy_db(dir, copy) == 0);
  laminar_source_close(src);
  CHECK_CODE(laminar_close(db), LAMINAR_OK, NULL);
  CHECK(restore_db(copy, dir) == 0);
  return 0;
}

/* One case: 0 when recovered exactly (or refused naming the file). */
static int one_case(bool sinks, target t, kind k, const char* want) {
  char dir[64], file[600];
  CHECK(crashed_dir(dir, sinks) == 0);
  laminar_db* db;
  laminar_source* src;
  laminar_error err;
  CHECK(damage(dir, t, k, file, sizeof file) == 0);
  int failed = 0;
  laminar_code rc = open_it(dir, sinks, &db, &src, &err);
  if (rc != LAMINAR_OK) {
    /* A refusal must say which file. */
    const char* base = strrchr(file, '/') + 1;
    if (strstr(err.message, base) == NULL) {
      fprintf(stderr, "refused without naming %s: LDB-%d %s\n", base, (int)rc,
              err.message);
      failed = 1;
    }
    fprintf(stderr, "  %-5s %-32s %-11s: refused: %s\n", sinks ? "sinks" : "view",
            TARGET_NAMES[t], KIND_NAMES[k], err.message);
    remove_db(dir);
    return failed;
  }
  char report[2048];
  CHECK_CODE(laminar_durability_report(db, report, sizeof report, &err), LAMINAR_OK,
             &err);
  int64_t offset;
  CHECK_CODE(laminar_source_offset(src, &offset, &err), LAMINAR_OK, &err);
  /* The covered record or the newest checkpoint damaged: reported. */
  if ((t == WAL_COVERED || t == CKPT_NEWEST) && report[0] == '\0') {
    fprintf(stderr, "damage not reported\n");
    failed = 1;
  }
  int64_t want_offset = t == WAL_AFTER                 ? 23
                        : k == TRUNCATE || k == DELETE ? 21
                                                       : CLOSED_AT + 1;
  if (t == CKPT_NEWEST || t == CKPT_OLDER || t == CKPT_NEWEST_AND_POS)
    want_offset = CLOSED_AT + 1;
  if (offset != want_offset) {
    fprintf(stderr, "resume offset %lld, want %lld\n", (long long)offset,
            (long long)want_offset);
    failed = 1;
  }
  /* The producer resumes from the offset, as documented. */
  CHECK(offset >= 1 && offset <= CLOSED_AT + 1);
  CHECK(feed(db, src, offset - 1, NBATCH, 10) == 0);
  char* got = result_of(dir, sinks, db, src);
  CHECK(got != NULL);
  if (strcmp(got, want) != 0) {
    fprintf(stderr,
            "output differs from the uninterrupted run's\n--- got\n%s--- want\n%s", got,
            want);
    failed = 1;
  }
  fprintf(stderr, "  %-5s %-32s %-11s: offset %lld, %s%s", sinks ? "sinks" : "view",
          TARGET_NAMES[t], KIND_NAMES[k], (long long)offset, failed ? "FAILED" : "exact",
          report[0] != '\0' ? ", reported: " : "\n");
  if (report[0] != '\0') fprintf(stderr, "%s", report);
  free(got);
  remove_db(dir);
  return failed;
}

static int sweep(bool sinks) {
  char* want = reference(sinks);
  CHECK(want != NULL);
  int failed = 0, cases = 0;
  for (int t = WAL_COVERED; t <= CKPT_NEWEST_AND_POS; t++) {
    for (int k = FLIP; k <= DELETE; k++) {
      if (t == WAL_AFTER && k == DELETE)
        continue; /* one segment: the same file as covered */
      failed += one_case(sinks, (target)t, (kind)k, want);
      cases++;
    }
  }
  free(want);
  fprintf(stderr, "damage %s, cores=%d: cases=%d failed=%d\n",
          sinks ? "with file sinks" : "view only", g_cores, cases, failed);
  return failed != 0;
}

/* The newest checkpoint lost and the WAL cut (record 15) before its
 * positions (20): with sinks, whose epoch 2 is published, refused naming the
 * checkpoint and the WAL; without, recovered from checkpoint 1 and the
 * records before the cut, the producer resuming at 15. */
static int lost_checkpoint_and_log(bool sinks, const char* want) {
  char dir[64], file[600];
  CHECK(crashed_dir(dir, sinks) == 0);
  laminar_db* db;
  laminar_source* src;
  laminar_error err;
  CHECK(damage(dir, CKPT_NEWEST, DELETE, file, sizeof file) == 0);
  snprintf(file, sizeof file, "%s/wal/trades/00000000000000000001.wal", dir);
  size_t n;
  uint8_t* p = read_all(file, &n);
  CHECK(p != NULL);
  long off = record_offset(p, n, 15);
  free(p);
  CHECK(off > 0 && damage_file(file, TRUNCATE, (size_t)off + 8) == 0);
  laminar_code rc = open_it(dir, sinks, &db, &src, &err);
  int failed = 0;
  if (sinks) {
    CHECK_CODE(rc, LAMINAR_ERR_RECOVERY, &err);
    fprintf(stderr, "  refused: %s\n", err.message);
    EXPECT(strstr(err.message, "ckpt-00000000000000000002.bin") != NULL);
    EXPECT(strstr(err.message, "wal/trades") != NULL);
  } else {
    CHECK_CODE(rc, LAMINAR_OK, &err);
    int64_t offset;
    CHECK_CODE(laminar_source_offset(src, &offset, &err), LAMINAR_OK, &err);
    EXPECT(offset == 15);
    CHECK(feed(db, src, offset - 1, NBATCH, 10) == 0);
    char* got = result_of(dir, sinks, db, src);
    CHECK(got != NULL);
    failed = strcmp(got, want) != 0;
    if (failed) fprintf(stderr, "--- got\n%s--- want\n%s", got, want);
    free(got);
  }
  remove_db(dir);
  return failed;
}

static int test_lost_checkpoint_and_log(void) {
  char* want = reference(false);
  CHECK(want != NULL);
  int rc = lost_checkpoint_and_log(true, want) | lost_checkpoint_and_log(false, want);
  free(want);
  return rc;
}

/* ---- a stream and a sink created between the checkpoints --------------------------- */

#define CREATED_AT 15 /* between checkpoints 1 (after batch 9) and 2 (after 19) */
static const char* const EXTRA_DIRS[] = {"extra"};

static int create_extra(laminar_db* db, const char* dir) {
  char sql[1024], sinks[128];
  snprintf(
      sql, sizeof sql,
      "CREATE STREAM extra AS SELECT symbol, window_start, COUNT(*) AS n FROM trades\n"
      "  GROUP BY symbol, tumble(ts, INTERVAL '2' SECOND);\n"
      "CREATE SINK extra_out FROM extra INTO FILE (path = '%s/%s', format = 'jsonl')",
      sinks_dir(dir, sinks, sizeof sinks), EXTRA_DIRS[0]);
  laminar_error err;
  CHECK_CODE(laminar_execute(db, sql, &err), LAMINAR_OK, &err);
  return 0;
}

/* Every sink's committed output, extra's after the others; closes db. */
static char* created_output(const char* dir, laminar_db* db, laminar_source* src) {
  if (finish(db, src) != 0) return NULL;
  laminar_source_close(src);
  laminar_close(db);
  char* base = sink_output(dir);
  char* extra = sinks_output(dir, EXTRA_DIRS, 1);
  size_t n = strlen(base) + strlen(extra) + 1;
  char* all = malloc(n);
  snprintf(all, n, "%s%s", base, extra);
  free(base);
  free(extra);
  return all;
}

/* Checkpoint 2 lost (its positions file kept, as a crash between the two
 * leaves them) after a stream and its sink were created between checkpoints
 * 1 and 2: the replay from checkpoint 1 up to checkpoint 2's positions
 * publishes nothing -- its epochs are published -- also once the new stream
 * and sink join it at their start, and the new sink goes on after it. */
static int test_lost_checkpoint_after_create(void) {
  char ref[64], dir[64], file[600];
  laminar_db* db;
  laminar_source* src;
  laminar_error err;
  CHECK(lm_test_mkdtemp(ref, sizeof ref, "lm_dmg_cref_") == 0);
  CHECK_CODE(open_it(ref, true, &db, &src, &err), LAMINAR_OK, &err);
  CHECK(feed(db, src, 0, CREATED_AT, 10) == 0 && create_extra(db, ref) == 0 &&
        feed(db, src, CREATED_AT, NBATCH, 10) == 0);
  char* want = created_output(ref, db, src);
  remove_db(ref);
  CHECK(want != NULL);

  CHECK(lm_test_mkdtemp(dir, sizeof dir, "lm_dmg_c_") == 0);
  CHECK_CODE(open_it(dir, true, &db, &src, &err), LAMINAR_OK, &err);
  CHECK(feed(db, src, 0, CREATED_AT, 10) == 0 && create_extra(db, dir) == 0 &&
        feed(db, src, CREATED_AT, CLOSED_AT, 10) == 0);
  char copy[80];
  snprintf(copy, sizeof copy, "%s_c", dir);
  CHECK(copy_db(dir, copy) == 0); /* as a crash leaves it */
  laminar_source_close(src);
  CHECK_CODE(laminar_close(db), LAMINAR_OK, NULL);
  CHECK(restore_db(copy, dir) == 0);
  CHECK(damage(dir, CKPT_NEWEST, DELETE, file, sizeof file) == 0);

  CHECK_CODE(open_it(dir, true, &db, &src, &err), LAMINAR_OK, &err);
  CHECK(create_extra(db, dir) == 0); /* the same statements again: already there */
  int64_t offset;
  CHECK_CODE(laminar_source_offset(src, &offset, &err), LAMINAR_OK, &err);
  EXPECT(offset == CLOSED_AT + 1);
  CHECK(feed(db, src, offset - 1, NBATCH, 10) == 0);
  char* got = created_output(dir, db, src);
  CHECK(got != NULL);
  int failed = strcmp(got, want) != 0;
  if (failed) fprintf(stderr, "--- got\n%s--- want\n%s", got, want);
  free(got);
  free(want);
  remove_db(dir);
  return failed;
}

/* ---- a full disk during the replay ------------------------------------------------- */

#ifdef LAMINAR_FAULT_INJECTION
#define WIDE_BATCHES 60
#define WIDE_SQL                                                           \
  "CREATE STREAM every AS SELECT symbol, price, volume, ts FROM trades;\n" \
  "CREATE SINK every_out FROM every INTO FILE (path = '%s/every', format = 'jsonl')"

static int open_wide(const char* dir, laminar_db** db, laminar_source** src,
                     laminar_error* err) {
  char sql[1024], sinks[128];
  snprintf(sql, sizeof sql, WIDE_SQL, sinks_dir(dir, sinks, sizeof sinks));
  laminar_code rc = open_db(dir, "sync", db, err);
  if (rc == LAMINAR_OK) rc = laminar_execute(*db, DDL, err);
  if (rc == LAMINAR_OK) rc = laminar_execute(*db, sql, err);
  if (rc == LAMINAR_OK) rc = laminar_source_open(*db, "trades", src, err);
  return (int)rc;
}

/* Each of the 50-row batches 10..WIDE_BATCHES-1 eight times over: the
 * replay after checkpoint 1 passes ~1.5 MB of rows to the sink of `every`,
 * past its 1 MiB write buffer, so the replay writes the staging file. */
static int feed_wide(laminar_db* db, laminar_source* src, int64_t from) {
  laminar_error err;
  for (int64_t b = from; b < WIDE_BATCHES; b++) {
    for (int r = 0; r < 8; r++) CHECK_CODE(push_batch(src, b, &err), LAMINAR_OK, &err);
    CHECK_CODE(laminar_run_until_idle(db, &err), LAMINAR_OK, &err);
    if (b == 9) CHECK_CODE(laminar_checkpoint(db, &err), LAMINAR_OK, &err);
  }
  return 0;
}

/* Every I/O step of an open that replays the log fails in turn with ENOSPC:
 * the open returns LAMINAR_ERR_IO naming the file and the operation, and
 * once the device works the same open recovers exactly (the committed
 * output equals an unfaulted restart's, run 0). */
static int test_full_disk_during_replay(void) {
  char dir[64], copy[80];
  CHECK(lm_test_mkdtemp(dir, sizeof dir, "lm_dmg_fd_") == 0);
  snprintf(copy, sizeof copy, "%s_c", dir);
  laminar_db* db;
  laminar_source* src;
  laminar_error err;
  CHECK_CODE(open_wide(dir, &db, &src, &err), LAMINAR_OK, &err);
  CHECK(feed_wide(db, src, 0) == 0);
  CHECK(copy_db(dir, copy) == 0); /* as a crash leaves it */
  laminar_source_close(src);
  CHECK_CODE(laminar_close(db), LAMINAR_OK, NULL);
  char* want = NULL; /* run 0: the restart without a fault */
  int64_t failures = 0;
  for (int64_t nth = 0;; nth++) {
    char scratch[80];
    snprintf(scratch, sizeof scratch, "%s_f", dir);
    CHECK(copy_db(copy, scratch) == 0);
    /* The sink's path names the original directory: run in its place. */
    CHECK(restore_db(scratch, dir) == 0);
    lm_fault_io_set(nth, ENOSPC);
    laminar_code rc = open_wide(dir, &db, &src, &err);
    bool hit = lm_fault_io_remaining() == 0;
    lm_fault_io_set(0, 0);
    if (rc != LAMINAR_OK) {
      failures++;
      fprintf(stderr, "  io step %lld: %s\n", (long long)nth, err.message);
      CHECK(rc == LAMINAR_ERR_IO);
      EXPECT(strstr(err.message, strerror(ENOSPC)) != NULL);
      EXPECT(strstr(err.message, dir) != NULL); /* a file or directory of it, by path */
      EXPECT(strstr(err.message, "failed") != NULL);
      CHECK_CODE(open_wide(dir, &db, &src, &err), LAMINAR_OK,
                 &err); /* the device works */
    } else {
      CHECK(db != NULL);
    }
    CHECK(finish(db, src) == 0);
    laminar_source_close(src);
    CHECK_CODE(laminar_close(db), LAMINAR_OK, NULL);
    char* got = sink_dir_output(dir, "every");
    if (want == NULL) {
      CHECK(strlen(got) > (1u << 20));
      want = got;
      continue;
    }
    int same = strcmp(got, want) == 0;
    free(got);
    if (!same) fprintf(stderr, "io step %lld: the output differs\n", (long long)nth);
    CHECK(same);
    if (!hit && rc == LAMINAR_OK) break;
  }
  fprintf(stderr, "full disk during the replay: failures=%lld, each named its file\n",
          (long long)failures);
  CHECK(failures > 0);
  free(want);
  remove_db(dir);
  remove_db(copy);
  return 0;
}
#else
static int test_full_disk_during_replay(void) {
  return lm_test_skip(
      "built without LAMINAR_FAULT_INJECTION (scripts/test.sh step 2 has it)");
}
#endif

static int test_damage_with_file_sinks(void) { return sweep(true); }
static int test_damage_view_only(void) { return sweep(false); }
/* Two reactors: the replay runs each record through the partitions. */
static int test_damage_with_file_sinks_2_cores(void) {
  g_cores = 2;
  int rc = sweep(true);
  g_cores = 1;
  return rc;
}

static const lm_test_case cases[] = {
    {"damage_with_file_sinks", test_damage_with_file_sinks},
    {"damage_view_only", test_damage_view_only},
    {"damage_with_file_sinks_2_cores", test_damage_with_file_sinks_2_cores},
    {"lost_checkpoint_and_log", test_lost_checkpoint_and_log},
    {"lost_checkpoint_after_create", test_lost_checkpoint_after_create},
    {"full_disk_during_replay", test_full_disk_during_replay},
    {NULL, NULL},
};

int main(int argc, char** argv) { return lm_test_main(argc, argv, cases); }
