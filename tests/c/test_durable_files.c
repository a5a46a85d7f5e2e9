/*
 * test_durable_files.c -- what a durable database writes, and where (issue 20,
 * item 9).
 *
 * Temporary and staging files (catalog.sql.tmp, a checkpoint's .tmp, a file
 * sink's .part-<epoch>.*.pending) are created afresh with O_EXCL | O_NOFOLLOW
 * after removing what was there: a symlink planted under such a name is
 * replaced, and its target stays untouched. A file sink may not write inside
 * the data directory (its WAL, checkpoints, catalog), however the path is
 * spelled ('..', symlinks): LDB-6002 naming the path. With sink_root set, file
 * sinks must resolve under it.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE  // symlink under -std=c17
#endif

#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lm_test.h"
#include "lm_test_fs.h"
#include "views_util.h"

static const char* DDL =
    "CREATE SOURCE t (k VARCHAR, v BIGINT);\n"
    "CREATE STREAM s AS SELECT k, v FROM t;";

/* A durable database in dir (sync WAL), with sink_root when not NULL. */
static laminar_code open_in(const char* dir, const char* sink_root, laminar_db** db,
                            laminar_error* err) {
  laminar_config* c;
  *db = NULL;
  if (laminar_config_create(&c) != LAMINAR_OK) return LAMINAR_ERR_NOMEM;
  laminar_code rc = laminar_config_set(c, "data_dir", dir, err);
  if (rc == LAMINAR_OK) rc = laminar_config_set(c, "checkpoint_interval", "1 hour", err);
  if (rc == LAMINAR_OK) rc = laminar_config_set(c, "wal_mode", "sync", err);
  if (rc == LAMINAR_OK && sink_root != NULL)
    rc = laminar_config_set(c, "sink_root", sink_root, err);
  if (rc == LAMINAR_OK) rc = laminar_open(c, db, err);
  laminar_config_destroy(c);
  return rc;
}

/* A scratch root holding "db" (the data directory) and "precious", a file
 * that planted links point at. */
static int make_root(char* root, size_t cap, char* dir, size_t dcap) {
  CHECK(lm_test_mkdtemp(root, cap, "lm_files_") == 0);
  snprintf(dir, dcap, "%s/db", root);
  char p[160];
  snprintf(p, sizeof p, "%s/precious", root);
  FILE* f = fopen(p, "w");
  CHECK(f != NULL && fputs("precious\n", f) >= 0);
  fclose(f);
  return 0;
}

static int precious_intact(const char* root) {
  char p[160], text[64] = {0};
  snprintf(p, sizeof p, "%s/precious", root);
  FILE* f = fopen(p, "r");
  CHECK(f != NULL);
  size_t n = fread(text, 1, sizeof text - 1, f);
  fclose(f);
  text[n] = '\0';
  if (strcmp(text, "precious\n") != 0) fprintf(stderr, "precious now holds: %s\n", text);
  return strcmp(text, "precious\n") == 0;
}

/* Plant `link` -> root/precious. */
static int plant(const char* root, const char* link) {
  char target[160];
  snprintf(target, sizeof target, "%s/precious", root);
  CHECK(symlink(target, link) == 0);
  return 0;
}

static bool regular(const char* path) {
  struct stat st;
  return lstat(path, &st) == 0 && S_ISREG(st.st_mode);
}

/* CREATE SINK o FROM s writing jsonl files into directory `path`. */
static int create_sink(laminar_db* db, const char* path) {
  char sql[512];
  laminar_error err;
  snprintf(sql, sizeof sql,
           "CREATE SINK o FROM s INTO FILE (path = '%s', format = 'jsonl')", path);
  CHECK_CODE(laminar_execute(db, sql, &err), LAMINAR_OK, &err);
  return 0;
}

/* Push rows a and b into t, run them through, checkpoint (the sink commits
 * epoch 1) and close the database. */
static int push_commit_close(laminar_db* db) {
  laminar_error err;
  laminar_source* src;
  CHECK_CODE(laminar_source_open(db, "t", &src, &err), LAMINAR_OK, &err);
  kv_row rows[2] = {{"a", 1, 0, 0}, {"b", 2, 0, 0}};
  CHECK(push_kv(src, rows, 2, 0, &err) == 0);
  laminar_source_close(src);
  CHECK_CODE(laminar_run_until_idle(db, &err), LAMINAR_OK, &err);
  CHECK_CODE(laminar_checkpoint(db, &err), LAMINAR_OK, &err);
  CHECK_CODE(laminar_close(db), LAMINAR_OK, NULL);
  return 0;
}

/* Links planted at catalog.sql.tmp, at the next checkpoint's temporary and at
 * a sink's staging file are replaced; the file they point at is untouched and
 * every real file is written where it belongs. */
static int test_planted_links_not_followed(void) {
  char root[64], dir[96], p[256], sinks[128];
  CHECK(make_root(root, sizeof root, dir, sizeof dir) == 0);
  CHECK(mkdir(dir, 0755) == 0);
  snprintf(p, sizeof p, "%s/catalog.sql.tmp", dir);
  CHECK(plant(root, p) == 0);
  laminar_db* db;
  laminar_error err;
  CHECK_CODE(open_in(dir, NULL, &db, &err), LAMINAR_OK, &err);
  CHECK_CODE(laminar_execute(db, DDL, &err), LAMINAR_OK, &err); /* writes catalog.sql */
  EXPECT(precious_intact(root));
  snprintf(p, sizeof p, "%s/catalog.sql", dir);
  EXPECT(regular(p));
  /* The first checkpoint's temporary, and epoch 1's staging file. */
  snprintf(p, sizeof p, "%s/checkpoints/ckpt-00000000000000000001.bin.tmp", dir);
  CHECK(plant(root, p) == 0);
  snprintf(sinks, sizeof sinks, "%s/out", root);
  CHECK(mkdir(sinks, 0755) == 0);
  snprintf(p, sizeof p, "%s/.part-00000000000000000001.jsonl.pending", sinks);
  CHECK(plant(root, p) == 0);
  CHECK(create_sink(db, sinks) == 0);
  CHECK(push_commit_close(db) == 0);
  EXPECT(precious_intact(root));
  snprintf(p, sizeof p, "%s/checkpoints/ckpt-00000000000000000001.bin", dir);
  EXPECT(regular(p));
  snprintf(p, sizeof p, "%s/part-00000000000000000001.jsonl", sinks);
  EXPECT(regular(p));
  FILE* f = fopen(p, "r");
  char text[256] = {0};
  if (f != NULL) {
    size_t n = fread(text, 1, sizeof text - 1, f);
    text[n] = '\0';
    fclose(f);
  }
  EXPECT(strcmp(text, "{\"k\":\"a\",\"v\":1}\n{\"k\":\"b\",\"v\":2}\n") == 0);
  lm_test_rmtree(root);
  return 0;
}

/* CREATE SINK ... INTO FILE with `path`: the code, and the path in the message. */
static int refused(laminar_db* db, const char* path, const char* why) {
  char sql[512];
  laminar_error err;
  snprintf(sql, sizeof sql, "CREATE SINK o FROM s INTO FILE (path = '%s')", path);
  CHECK_CODE(laminar_execute(db, sql, &err), LAMINAR_ERR_CONFIG_VALUE, &err);
  EXPECT(strncmp(err.message, "LDB-6002: ", 10) == 0);
  EXPECT(strstr(err.message, path) != NULL && strstr(err.message, why) != NULL);
  EXPECT(strcmp(err.object, "o") == 0);
  return 0;
}

/* A file sink inside the data directory -- its WAL, the directory itself,
 * a new directory in it, reached through '..' or through a symlink -- is
 * refused, and nothing is created there. */
static int test_sink_inside_data_dir_refused(void) {
  char root[64], dir[96], p[256];
  CHECK(make_root(root, sizeof root, dir, sizeof dir) == 0);
  laminar_db* db;
  laminar_error err;
  CHECK_CODE(open_in(dir, NULL, &db, &err), LAMINAR_OK, &err);
  CHECK_CODE(laminar_execute(db, DDL, &err), LAMINAR_OK, &err);
  const char* why = "inside the data directory";
  snprintf(p, sizeof p, "%s/wal/t", dir);
  CHECK(refused(db, p, why) == 0);
  CHECK(refused(db, dir, why) == 0);
  snprintf(p, sizeof p, "%s/out", dir);
  CHECK(refused(db, p, why) == 0);
  struct stat st;
  EXPECT(stat(p, &st) != 0); /* not created */
  snprintf(p, sizeof p, "%s/../db/checkpoints", dir);
  CHECK(refused(db, p, why) == 0);
  char link[160];
  snprintf(link, sizeof link, "%s/ln", root);
  CHECK(symlink(dir, link) == 0);
  snprintf(p, sizeof p, "%s/x", link);
  CHECK(refused(db, p, why) == 0);
  /* Beside it is fine. */
  snprintf(p, sizeof p, "%s/out", root);
  char sql[512];
  snprintf(sql, sizeof sql, "CREATE SINK o FROM s INTO FILE (path = '%s')", p);
  CHECK_CODE(laminar_execute(db, sql, &err), LAMINAR_OK, &err);
  CHECK_CODE(laminar_close(db), LAMINAR_OK, NULL);
  lm_test_rmtree(root);
  return 0;
}

/* sink_root confines file sinks: '..' and symlinks out of it are refused, a
 * missing sink_root fails the open, and a stored sink outside a sink_root set
 * later fails the reopen (the catalog does not run). */
static int test_sink_root_confines(void) {
  char root[64], dir[96], sroot[128], p[256];
  CHECK(make_root(root, sizeof root, dir, sizeof dir) == 0);
  snprintf(sroot, sizeof sroot, "%s/sinks", root);
  laminar_db* db;
  laminar_error err;
  CHECK_CODE(open_in(dir, sroot, &db, &err), LAMINAR_ERR_CONFIG_VALUE,
             &err); /* missing */
  EXPECT(strstr(err.message, "sink_root") != NULL && strstr(err.message, sroot) != NULL);
  CHECK(mkdir(sroot, 0755) == 0);
  CHECK_CODE(open_in(dir, sroot, &db, &err), LAMINAR_OK, &err);
  CHECK_CODE(laminar_execute(db, DDL, &err), LAMINAR_OK, &err);
  const char* why = "outside sink_root";
  snprintf(p, sizeof p, "%s/../escape", sroot);
  CHECK(refused(db, p, why) == 0);
  snprintf(p, sizeof p, "%s/../../x", sroot);
  CHECK(refused(db, p, why) == 0);
  char link[160];
  snprintf(link, sizeof link, "%s/ln", sroot);
  CHECK(symlink(root, link) == 0); /* leads out of the root */
  snprintf(p, sizeof p, "%s/x", link);
  CHECK(refused(db, p, why) == 0);
  char sql[512];
  snprintf(sql, sizeof sql, "CREATE SINK o FROM s INTO FILE (path = '%s/a/../out')",
           sroot);
  CHECK_CODE(laminar_execute(db, sql, &err), LAMINAR_ERR_CONFIG_VALUE, &err); /* no a/ */
  EXPECT(strstr(err.message, "does not resolve") != NULL);
  snprintf(sql, sizeof sql, "CREATE SINK o FROM s INTO FILE (path = '%s/out')", sroot);
  CHECK_CODE(laminar_execute(db, sql, &err), LAMINAR_OK, &err);
  CHECK_CODE(laminar_close(db), LAMINAR_OK, NULL);
  /* Reopened with another sink_root, the stored sink is outside it. */
  char other[128];
  snprintf(other, sizeof other, "%s/other", root);
  CHECK(mkdir(other, 0755) == 0);
  CHECK_CODE(open_in(dir, other, &db, &err), LAMINAR_ERR_RECOVERY, &err);
  EXPECT(strstr(err.message, "outside sink_root") != NULL);
  CHECK_CODE(open_in(dir, sroot, &db, &err), LAMINAR_OK, &err);
  CHECK_CODE(laminar_close(db), LAMINAR_OK, NULL);
  laminar_config* c;
  CHECK_CODE(laminar_config_create(&c), LAMINAR_OK, NULL);
  CHECK_CODE(laminar_config_set(c, "sink_root", "", &err), LAMINAR_ERR_CONFIG_VALUE,
             &err);
  laminar_config_destroy(c);
  lm_test_rmtree(root);
  return 0;
}

/* A WAL segment is created with O_EXCL, never truncated: a file found under
 * the name of the segment a roll creates (here after a writer cut a torn
 * covered record: appends go to a fresh segment 11) fails the push with
 * LDB-5001 naming it, and stays as it was; once it is moved away the push
 * goes through and nothing acknowledged is lost. */
static int test_segment_never_overwritten(void) {
  char root[64], dir[96], seg1[160], seg11[160];
  CHECK(make_root(root, sizeof root, dir, sizeof dir) == 0);
  laminar_db* db;
  laminar_source* src;
  laminar_error err;
  CHECK_CODE(open_in(dir, NULL, &db, &err), LAMINAR_OK, &err);
  CHECK_CODE(laminar_execute(db, DDL, &err), LAMINAR_OK, &err);
  CHECK_CODE(laminar_execute(db,
                             "CREATE MATERIALIZED VIEW tot AS SELECT COUNT(*) AS n, "
                             "SUM(v) AS s FROM t EMIT CHANGES",
                             &err),
             LAMINAR_OK, &err);
  CHECK_CODE(laminar_source_open(db, "t", &src, &err), LAMINAR_OK, &err);
  for (int64_t v = 1; v <= 10; v++) {
    kv_row row = {"k", v, 0, 0};
    CHECK(push_kv(src, &row, 1, 0, &err) == 0);
  }
  CHECK_CODE(laminar_run_until_idle(db, &err), LAMINAR_OK, &err);
  CHECK_CODE(laminar_checkpoint(db, &err), LAMINAR_OK, &err);
  laminar_source_close(src);
  CHECK_CODE(laminar_close(db), LAMINAR_OK, NULL);
  snprintf(seg1, sizeof seg1, "%s/wal/t/00000000000000000001.wal", dir);
  snprintf(seg11, sizeof seg11, "%s/wal/t/00000000000000000011.wal", dir);
  long at = lm_test_wal_record_at(seg1, 8);
  CHECK(at > 0 && truncate(seg1, at + 12) == 0); /* record 8 torn: covered */
  CHECK_CODE(open_in(dir, NULL, &db, &err), LAMINAR_OK, &err);
  CHECK_CODE(laminar_source_open(db, "t", &src, &err), LAMINAR_OK, &err);
  FILE* f = fopen(seg11, "wx");
  CHECK(f != NULL && fputs("not this log's\n", f) >= 0);
  fclose(f);
  kv_row row = {"k", 11, 0, 0};
  EXPECT(push_kv(src, &row, 1, 0, &err) != 0);
  EXPECT(strncmp(err.message, "LDB-5001", 8) == 0 && strstr(err.message, seg11) != NULL);
  fprintf(stderr, "refused: %s\n", err.message);
  char text[64] = {0};
  f = fopen(seg11, "r");
  CHECK(f != NULL);
  size_t n = fread(text, 1, sizeof text - 1, f);
  fclose(f);
  text[n] = '\0';
  EXPECT(strcmp(text, "not this log's\n") == 0);
  CHECK(unlink(seg11) == 0);
  CHECK(push_kv(src, &row, 1, 0, &err) == 0);
  laminar_source_close(src);
  CHECK_CODE(laminar_close(db), LAMINAR_OK, NULL);
  CHECK_CODE(open_in(dir, NULL, &db, &err), LAMINAR_OK, &err);
  CHECK_CODE(laminar_run_until_idle(db, &err), LAMINAR_OK, &err);
  char view[64];
  CHECK_CODE(query_text(db, "SELECT n, s FROM tot", view, sizeof view, &err), LAMINAR_OK,
             &err);
  EXPECT(strcmp(view, "11,66") == 0);
  if (strcmp(view, "11,66") != 0) fprintf(stderr, "view: %s\n", view);
  CHECK_CODE(laminar_close(db), LAMINAR_OK, NULL);
  lm_test_rmtree(root);
  return 0;
}

/* Whether dir holds an entry whose name starts with `prefix`. */
static bool holds_prefix(const char* dir, const char* prefix) {
  DIR* d = opendir(dir);
  bool found = false;
  struct dirent* e;
  while (d != NULL && !found && (e = readdir(d)) != NULL)
    found = strncmp(e->d_name, prefix, strlen(prefix)) == 0;
  if (d != NULL) closedir(d);
  return found;
}

/* A file sink writes through the directory it opened and checked, never
 * through its path again: the directory swapped for a symlink into the data
 * directory after CREATE SINK leads nowhere -- the epoch's part file lands
 * in the directory that was checked (now renamed), nothing in the data
 * directory; and a reopen refuses the path, which now leads inside. */
static int test_sink_swapped_for_symlink(void) {
  char root[64], dir[96], out[128], moved[128], p[256];
  CHECK(make_root(root, sizeof root, dir, sizeof dir) == 0);
  laminar_db* db;
  laminar_error err;
  CHECK_CODE(open_in(dir, NULL, &db, &err), LAMINAR_OK, &err);
  CHECK_CODE(laminar_execute(db, DDL, &err), LAMINAR_OK, &err);
  snprintf(out, sizeof out, "%s/out", root);
  snprintf(moved, sizeof moved, "%s/out.moved", root);
  CHECK(create_sink(db, out) == 0);
  CHECK(rename(out, moved) == 0);
  CHECK(symlink(dir, out) == 0);
  CHECK(push_commit_close(db) == 0);
  EXPECT(!holds_prefix(dir, "part-") && !holds_prefix(dir, ".part-"));
  snprintf(p, sizeof p, "%s/part-00000000000000000001.jsonl", moved);
  EXPECT(regular(p));
  CHECK_CODE(open_in(dir, NULL, &db, &err), LAMINAR_ERR_RECOVERY, &err);
  EXPECT(strstr(err.message, "inside the data directory") != NULL);
  lm_test_rmtree(root);
  return 0;
}

static const lm_test_case cases[] = {
    {"planted_links_not_followed", test_planted_links_not_followed},
    {"sink_inside_data_dir_refused", test_sink_inside_data_dir_refused},
    {"sink_root_confines", test_sink_root_confines},
    {"segment_never_overwritten", test_segment_never_overwritten},
    {"sink_swapped_for_symlink", test_sink_swapped_for_symlink},
    {NULL, NULL}};

int main(int argc, char** argv) { return lm_test_main(argc, argv, cases); }
