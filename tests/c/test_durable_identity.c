/*
 * test_durable_identity.c -- durable object identity (issue 20, items 2 and 5).
 *
 * A name dropped and created again is another object: its predecessor's
 * checkpointed position and state, and its WAL, are never applied to it (with
 * or without a checkpoint between DROP and CREATE, and when the DROP left its
 * log behind). catalog.sql carries its length and CRC-32C: every flipped
 * byte, every truncation, a deleted and an emptied catalog either open with
 * exactly the objects and rows of the undamaged one or are refused with
 * LDB-5002 naming catalog.sql; a checkpointed state under another plan
 * fingerprint (the catalog altered with a CRC to match) is refused naming the
 * stream and the checkpoint file.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE  // mkdtemp under -std=c17
#endif

#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lm_test.h"
#include "lm_test_fs.h"
#include "store/crc32c.h"
#include "views_util.h"

/* Remove a directory tree (the WAL's, a database's). */
static void remove_tree(const char* dir) {
  char cmd[256];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  if (system(cmd) != 0) fprintf(stderr, "cannot remove %s\n", dir);
}

static laminar_code open_dir(const char* dir, laminar_db** db, laminar_error* err) {
  laminar_config* c;
  if (laminar_config_create(&c) != LAMINAR_OK) return LAMINAR_ERR_NOMEM;
  laminar_code rc = laminar_config_set(c, "data_dir", dir, err);
  if (rc == LAMINAR_OK) rc = laminar_config_set(c, "checkpoint_interval", "1 hour", err);
  if (rc == LAMINAR_OK) rc = laminar_config_set(c, "wal_mode", "sync", err);
  if (rc == LAMINAR_OK) rc = laminar_open(c, db, err);
  laminar_config_destroy(c);
  return rc;
}

/* Push rows k = keys[i % 2], v = base + i, one push each (acknowledged after
 * fdatasync), then run the graph. */
static int push_n(laminar_db* db, int n, int64_t base) {
  laminar_source* src;
  laminar_error err;
  CHECK_CODE(laminar_source_open(db, "t", &src, &err), LAMINAR_OK, &err);
  for (int i = 0; i < n; i++) {
    kv_row r = {.k = i % 2 ? "b" : "a", .v = base + i};
    CHECK(push_kv(src, &r, 1, 0, &err) == 0);
  }
  laminar_source_close(src);
  CHECK_CODE(laminar_run_until_idle(db, &err), LAMINAR_OK, &err);
  return 0;
}

static int64_t offset_of(laminar_db* db) {
  laminar_source* src;
  laminar_error err;
  int64_t off = -1;
  if (laminar_source_open(db, "t", &src, &err) != LAMINAR_OK) return -1;
  if (laminar_source_offset(src, &off, &err) != LAMINAR_OK) off = -1;
  laminar_source_close(src);
  return off;
}

static int file_bytes(const char* path, unsigned char* buf, size_t cap, size_t* len) {
  FILE* f = fopen(path, "rb");
  if (f == NULL) return -1;
  *len = fread(buf, 1, cap, f);
  fclose(f);
  return *len < cap ? 0 : -1;
}

static int write_bytes(const char* path, const void* buf, size_t len) {
  FILE* f = fopen(path, "wb");
  if (f == NULL) return -1;
  size_t put = fwrite(buf, 1, len, f);
  return fclose(f) == 0 && put == len ? 0 : -1;
}

/* A new durable database in a new directory, running ddl, with `rows`
 * rows pushed. */
static int new_db(char* dir, size_t cap, const char* ddl, int rows, laminar_db** db) {
  CHECK(lm_test_mkdtemp(dir, cap, "lm_ident_") == 0);
  laminar_error err;
  CHECK_CODE(open_dir(dir, db, &err), LAMINAR_OK, &err);
  CHECK_CODE(laminar_execute(*db, ddl, &err), LAMINAR_OK, &err);
  return push_n(*db, rows, 0);
}

/* ---- DROP + CREATE ------------------------------------------------------------------------ */

#define VIEW_OLD                                                                         \
  "CREATE MATERIALIZED VIEW mv AS SELECT k, COUNT(*) AS n, SUM(v) AS s FROM t GROUP BY " \
  "k "                                                                                   \
  "EMIT CHANGES"
#define VIEW_NEW                                                                       \
  "CREATE MATERIALIZED VIEW mv AS SELECT k, MIN(v) AS lo, COUNT(*) AS n FROM t GROUP " \
  "BY k "                                                                              \
  "EMIT CHANGES"

/* Source t and view mv (VIEW_OLD); 5 rows, a checkpoint, 3 rows after it;
 * `drop`, a checkpoint when `between`, `create`; 10 acknowledged rows. The
 * view then holds `want` (the 10 rows' only), and after a restart the same,
 * with the source's offset at `offset`. */
static int drop_create_restart(bool between, const char* drop, const char* create,
                               const char* want, int64_t offset) {
  char dir[64];
  laminar_db* db;
  laminar_error err;
  CHECK(new_db(dir, sizeof dir, "CREATE SOURCE t (k VARCHAR, v BIGINT); " VIEW_OLD, 5,
               &db) == 0);
  CHECK_CODE(laminar_checkpoint(db, &err), LAMINAR_OK, &err);
  CHECK(push_n(db, 3, 100) == 0); /* after the checkpoint: in the WAL only */
  CHECK_CODE(laminar_execute(db, drop, &err), LAMINAR_OK, &err);
  if (between) CHECK_CODE(laminar_checkpoint(db, &err), LAMINAR_OK, &err);
  CHECK_CODE(laminar_execute(db, create, &err), LAMINAR_OK, &err);
  CHECK(push_n(db, 10, 1000) == 0);
  char live[512], got[512];
  CHECK_CODE(query_text(db, "SELECT * FROM mv ORDER BY k", live, sizeof live, &err),
             LAMINAR_OK, &err);
  EXPECT(strcmp(live, want) == 0);
  CHECK_CODE(laminar_close(db), LAMINAR_OK, NULL);
  CHECK_CODE(open_dir(dir, &db, &err), LAMINAR_OK, &err);
  CHECK_CODE(query_text(db, "SELECT * FROM mv ORDER BY k", got, sizeof got, &err),
             LAMINAR_OK, &err);
  printf("'%s' then '%s' (checkpoint between: %d): live %s, restarted %s, offset %lld\n",
         drop, create, between, live, got, (long long)offset_of(db));
  EXPECT(strcmp(got, want) == 0);
  EXPECT(offset_of(db) == offset);
  laminar_close(db);
  remove_tree(dir);
  return lm_test_expect_failed_;
}

/* The reproducer: the view and the source dropped and created again
 * (the source by another statement), without and with a checkpoint between:
 * after the restart the 10 new rows are there, none of the old ones, and the
 * offset goes on from 10 (was: the old checkpoint's offset skipped 8 of them). */
static int test_recreated_source(void) {
  for (int between = 0; between < 2; between++)
    CHECK(drop_create_restart(between, "DROP MATERIALIZED VIEW mv; DROP SOURCE t",
                              "CREATE SOURCE t (k VARCHAR NOT NULL, v BIGINT); " VIEW_OLD,
                              "a,5,5020;b,5,5025", 11) == 0);
  return 0;
}

/* A view dropped and created with another query (other aggregate states):
 * the old state is not loaded into it (was: LDB-5002 at the open, or its rows
 * back), and the replay does not feed it the rows before its CREATE. */
static int test_recreated_view(void) {
  for (int between = 0; between < 2; between++)
    CHECK(drop_create_restart(between, "DROP MATERIALIZED VIEW mv", VIEW_NEW,
                              "a,1000,5;b,1001,5", 19) == 0);
  return 0;
}

/* Copy every file of directory `from` into `to` (created). */
static int copy_dir(const char* from, const char* to) {
  char cmd[512];
  snprintf(cmd, sizeof cmd, "cp -a '%s' '%s'", from, to);
  return system(cmd) == 0 ? 0 : -1;
}

/* A DROP SOURCE that crashed after writing the catalog, before removing the
 * log, leaves the dropped source's WAL: the next open removes it (reported),
 * and a source created under the name never replays it. The same log put
 * back under a re-created source is refused naming it. */
static int test_leftover_wal_of_a_dropped_source(void) {
  char dir[64], saved[96], wal[96];
  laminar_db* db;
  laminar_error err;
  CHECK(new_db(dir, sizeof dir, "CREATE SOURCE t (k VARCHAR, v BIGINT); " VIEW_OLD, 5,
               &db) == 0);
  snprintf(saved, sizeof saved, "%s_wal", dir);
  snprintf(wal, sizeof wal, "%s/wal/t", dir);
  CHECK_CODE(laminar_close(db), LAMINAR_OK, NULL);
  CHECK(copy_dir(wal, saved) == 0);
  CHECK_CODE(open_dir(dir, &db, &err), LAMINAR_OK, &err);
  CHECK_CODE(laminar_execute(db, "DROP MATERIALIZED VIEW mv; DROP SOURCE t", &err),
             LAMINAR_OK, &err);
  CHECK_CODE(laminar_close(db), LAMINAR_OK, NULL);
  CHECK(copy_dir(saved, wal) == 0); /* as if the DROP had crashed before removing it */
  CHECK_CODE(open_dir(dir, &db, &err), LAMINAR_OK, &err);
  char rep[1024];
  CHECK_CODE(laminar_durability_report(db, rep, sizeof rep, &err), LAMINAR_OK, &err);
  EXPECT(strstr(rep, "source 't': WAL of a dropped source removed") != NULL);
  CHECK_CODE(
      laminar_execute(db, "CREATE SOURCE t (k VARCHAR, v BIGINT); " VIEW_OLD, &err),
      LAMINAR_OK, &err);
  CHECK(push_n(db, 2, 10) == 0);
  CHECK_CODE(laminar_close(db), LAMINAR_OK, NULL);
  CHECK_CODE(open_dir(dir, &db, &err), LAMINAR_OK, &err);
  char got[256];
  CHECK_CODE(query_text(db, "SELECT * FROM mv ORDER BY k", got, sizeof got, &err),
             LAMINAR_OK, &err);
  EXPECT(strcmp(got, "a,1,10;b,1,11") == 0);
  CHECK_CODE(laminar_close(db), LAMINAR_OK, NULL);
  /* The dropped source's log under the new source's name: never replayed. */
  remove_tree(wal);
  CHECK(copy_dir(saved, wal) == 0);
  CHECK_CODE(open_dir(dir, &db, &err), LAMINAR_ERR_RECOVERY, &err);
  printf("refused: %s\n", err.message);
  EXPECT(strstr(err.message, "source 't'") != NULL &&
         strstr(err.message, "wal/t") != NULL);
  remove_tree(saved);
  remove_tree(dir);
  return lm_test_expect_failed_;
}

/* ---- catalog.sql damage ------------------------------------------------------------------- */

static const char* SWEEP_DDL =
    "CREATE SOURCE t (k VARCHAR, v BIGINT);\n"
    "CREATE MATERIALIZED VIEW mv AS SELECT k, COUNT(*) AS n, SUM(v) AS s FROM t WHERE v "
    "> 2 "
    "GROUP BY k EMIT CHANGES;\n"
    "CREATE STREAM st AS SELECT k, v * 3 AS v3 FROM t WHERE v < 1000;\n"
    "CREATE MATERIALIZED VIEW mv3 AS SELECT k, MAX(v3) AS hi FROM st GROUP BY k EMIT "
    "CHANGES;\n";

/* What a database shows: its sources, streams, views and the views' rows. */
static int snapshot(laminar_db* db, char* out, size_t cap) {
  laminar_error err;
  char part[1024];
  out[0] = '\0';
  static const char* const q[] = {
      "SHOW SOURCES", "SHOW STREAMS", "SHOW MATERIALIZED VIEWS",
      "SELECT * FROM mv ORDER BY k", "SELECT * FROM mv3 ORDER BY k"};
  for (size_t i = 0; i < sizeof q / sizeof q[0]; i++) {
    CHECK_CODE(query_text(db, q[i], part, sizeof part, &err), LAMINAR_OK, &err);
    strncat(out, part, cap - strlen(out) - 1);
    strncat(out, "|", cap - strlen(out) - 1);
  }
  return 0;
}

/* One damaged catalog: opens with exactly `want`, or LDB-5002 naming
 * catalog.sql. 0, or 1 (a wrong open). *refused counts refusals. */
static int try_open(const char* dir, const char* want, const char* what, long at,
                    int* refused) {
  laminar_db* db = NULL;
  laminar_error err;
  laminar_code rc = open_dir(dir, &db, &err);
  if (rc != LAMINAR_OK) {
    if (rc != LAMINAR_ERR_RECOVERY || strstr(err.message, "catalog.sql") == NULL) {
      fprintf(stderr, "%s at %ld: code %d: %s\n", what, at, (int)rc, err.message);
      return 1;
    }
    (*refused)++;
    return 0;
  }
  char got[4096];
  int bad = snapshot(db, got, sizeof got) != 0 || strcmp(got, want) != 0;
  if (bad)
    fprintf(stderr, "%s at %ld opened as\n  %s\nwant\n  %s\n", what, at, got, want);
  laminar_close(db);
  return bad;
}

/* Every byte flipped (one bit, cycling through the 8), every truncation, the
 * file deleted and emptied, and a missing catalog in a new directory. */
static int test_catalog_damage_sweep(void) {
  char dir[64], cat[96];
  laminar_db* db;
  laminar_error err;
  CHECK(new_db(dir, sizeof dir, SWEEP_DDL, 8, &db) == 0);
  snprintf(cat, sizeof cat, "%s/catalog.sql", dir);
  CHECK_CODE(laminar_checkpoint(db, &err), LAMINAR_OK, &err);
  CHECK(push_n(db, 4, 20) == 0);
  char want[4096];
  CHECK(snapshot(db, want, sizeof want) == 0);
  CHECK_CODE(laminar_close(db), LAMINAR_OK, NULL);
  static unsigned char orig[8192], buf[8192];
  size_t len;
  CHECK(file_bytes(cat, orig, sizeof orig, &len) == 0);
  int bad = 0, refused = 0, opened = 0;
  for (size_t i = 0; i < len; i++) {
    memcpy(buf, orig, len);
    buf[i] ^= (unsigned char)(1u << (i % 8));
    CHECK(write_bytes(cat, buf, len) == 0);
    int before = refused;
    bad += try_open(dir, want, "flip", (long)i, &refused);
    opened += refused == before;
  }
  for (size_t cut = 0; cut < len; cut++) {
    CHECK(write_bytes(cat, orig, cut) == 0);
    int before = refused;
    bad += try_open(dir, want, "truncate", (long)cut, &refused);
    opened += refused == before;
  }
  CHECK(unlink(cat) == 0);
  bad += try_open(dir, want, "deleted", 0, &refused);
  CHECK(write_bytes(cat, orig, len) == 0); /* whole again: opens as it was */
  int before = refused;
  bad += try_open(dir, want, "repaired", 0, &refused);
  EXPECT(refused == before);
  printf(
      "catalog_damage_sweep: %zu bytes, %zu flips and %zu truncations, deleted: "
      "refused=%d "
      "opened_right=%d wrong=%d\n",
      len, len, len, refused, opened, bad);
  EXPECT(bad == 0);
  remove_tree(dir);
  /* A new directory has no catalog: it opens empty. */
  CHECK(lm_test_mkdtemp(dir, sizeof dir, "lm_ident_") == 0);
  CHECK_CODE(open_dir(dir, &db, &err), LAMINAR_OK, &err);
  char shown[256];
  CHECK_CODE(query_text(db, "SHOW SOURCES", shown, sizeof shown, &err), LAMINAR_OK, &err);
  EXPECT(shown[0] == '\0');
  laminar_close(db);
  remove_tree(dir);
  return lm_test_expect_failed_;
}

/* A filter constant changed in catalog.sql and its header fixed to match:
 * the checkpointed state of the view is not loaded into the other plan. */
static int test_changed_plan_refused(void) {
  char dir[64], cat[96];
  laminar_db* db;
  laminar_error err;
  CHECK(new_db(dir, sizeof dir,
               "CREATE SOURCE t (k VARCHAR, v BIGINT);"
               "CREATE MATERIALIZED VIEW mv AS SELECT k, COUNT(*) AS n FROM t "
               "WHERE v > 3 GROUP BY k EMIT CHANGES",
               8, &db) == 0);
  snprintf(cat, sizeof cat, "%s/catalog.sql", dir);
  CHECK_CODE(laminar_checkpoint(db, &err), LAMINAR_OK, &err);
  CHECK_CODE(laminar_close(db), LAMINAR_OK, NULL);
  static char text[8192];
  size_t len;
  CHECK(file_bytes(cat, (unsigned char*)text, sizeof text - 1, &len) == 0);
  text[len] = '\0';
  char* filter = strstr(text, "v > 3");
  CHECK(filter != NULL);
  filter[4] = '5';
  char* body = strchr(text, '\n') + 1;
  size_t blen = len - (size_t)(body - text);
  char head[128];
  int hlen =
      snprintf(head, sizeof head, "-- laminardb catalog 2 bytes=%020zu crc32c=%08x\n",
               blen, (unsigned)lm_crc32c(0, body, blen));
  CHECK(hlen == body - text);
  memcpy(text, head, (size_t)hlen);
  CHECK(write_bytes(cat, text, len) == 0);
  CHECK_CODE(open_dir(dir, &db, &err), LAMINAR_ERR_RECOVERY, &err);
  printf("refused: %s\n", err.message);
  EXPECT(strstr(err.message, "materialized view 'mv'") != NULL);
  EXPECT(strstr(err.message, "checkpoints/ckpt-00000000000000000001.bin") != NULL);
  remove_tree(dir);
  return lm_test_expect_failed_;
}

int main(int argc, char** argv) {
  static const lm_test_case cases[] = {
      {"recreated_source", test_recreated_source},
      {"recreated_view", test_recreated_view},
      {"leftover_wal_of_a_dropped_source", test_leftover_wal_of_a_dropped_source},
      {"catalog_damage_sweep", test_catalog_damage_sweep},
      {"changed_plan_refused", test_changed_plan_refused},
      {NULL, NULL}};
  return lm_test_main(argc, argv, cases);
}
