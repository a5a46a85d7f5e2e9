/*
 * test_durable.c -- durability through laminar.h (issue 6): settings and their
 * conflicts, the persisted catalog, checkpoints and WAL replay across a
 * restart, the exactly-once file sink, offsets, identical and conflicting DDL
 * after recovery and damaged checkpoints. Every comparison is with one
 * uninterrupted run over the same input (tests/crash kills the process).
 */
/* lm_ctest: TIMEOUT 180 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE  // fork, mkdtemp under -std=c17
#endif

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "lm_test.h"
#include "lm_test_durable.h"
#include "lm_test_metrics.h"
#include "arrow/codec.h"
#include "state/state.h"
#include "store/ckpt.h"
#include "store/wal.h"
#include "util/util.h"

/* ---- settings ------------------------------------------------------------------------ */

static int test_settings(void) {
  laminar_config* c;
  laminar_error err;
  laminar_db* db = NULL;
  CHECK(laminar_config_create(&c) == LAMINAR_OK);
  CHECK_CODE(laminar_config_set(c, "wal_mode", "sometimes", &err),
             LAMINAR_ERR_CONFIG_VALUE, &err);
  CHECK_CODE(laminar_config_set(c, "checkpoint_interval", "soon", &err),
             LAMINAR_ERR_CONFIG_VALUE, &err);
  CHECK_CODE(laminar_config_set(c, "checkpoint_keep", "0", &err),
             LAMINAR_ERR_CONFIG_VALUE, &err);
  CHECK_CODE(laminar_config_set(c, "wal_io", "carrier-pigeon", &err),
             LAMINAR_ERR_CONFIG_VALUE, &err);
  CHECK_CODE(laminar_config_set(c, "wal_direct_io", "sometimes", &err),
             LAMINAR_ERR_CONFIG_VALUE, &err);
  CHECK(strstr(err.message, "wal_direct_io") != NULL);
  CHECK_CODE(laminar_config_set(c, "wal_direct_io", "off", &err), LAMINAR_OK, &err);
  CHECK_CODE(laminar_config_set(c, "wal_mode", "sync", &err), LAMINAR_OK, &err);
  CHECK_CODE(laminar_open(c, &db, &err), LAMINAR_ERR_CONFIG_CONFLICT, &err);
  CHECK(db == NULL && strstr(err.message, "checkpoint_interval") != NULL);
  CHECK_CODE(laminar_config_set(c, "checkpoint_interval", "250 ms", &err), LAMINAR_OK,
             &err);
  CHECK_CODE(laminar_open(c, &db, &err), LAMINAR_ERR_CONFIG_CONFLICT, &err);
  CHECK(strstr(err.message, "data_dir") != NULL);
  laminar_config_destroy(c);
  /* Durability off: checkpoints are refused, file sinks too. */
  CHECK_CODE(laminar_open(NULL, &db, &err), LAMINAR_OK, &err);
  CHECK_CODE(laminar_checkpoint(db, &err), LAMINAR_ERR_STATE, &err);
  CHECK_CODE(laminar_execute(db, DDL, &err), LAMINAR_OK, &err);
  CHECK_CODE(
      laminar_execute(db, "CREATE SINK s FROM vwap INTO FILE (path = '/tmp/x')", &err),
      LAMINAR_ERR_CONFIG_CONFLICT, &err);
  CHECK(err.line == 1);
  CHECK_CODE(
      laminar_execute(db, "CREATE SOURCE t (a BIGINT) WITH (wal_mode = 'sync')", &err),
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

/* Rewrite the newest checkpoint of dir in format 1, as written before
 * checkpoints held one state per partition: no partition count, one state per
 * stream (every stream must have one partition), and no identities (format 3
 * added each object's incarnation and fingerprint), no input watermarks
 * (format 4: none here, the pipeline's streams have one input each), no
 * reactor state of sources (format 5: here active, without per-key
 * watermarks). */
static int downgrade_checkpoint(const char* dir) {
  char cdir[600];
  snprintf(cdir, sizeof cdir, "%s/checkpoints", dir);
  bool found;
  uint64_t epoch;
  uint8_t* data;
  size_t len;
  laminar_error err;
  CHECK_CODE(lm_ckpt_load_latest(cdir, &found, &epoch, &data, &len, NULL, &err),
             LAMINAR_OK, &err);
  CHECK(found);
  lm_state_reader r;
  lm_state_reader_init(&r, data, len);
  lm_state_writer w;
  lm_state_writer_init(&w);
  lm_state_put_u32(&w, lm_state_get_u32(&r)); /* magic */
  EXPECT(lm_state_get_u32(&r) == 5);
  lm_state_put_u32(&w, 1);
  lm_state_put_i64(&w, lm_state_get_i64(&r)); /* epoch */
  uint32_t n = lm_state_get_u32(&r);
  lm_state_put_u32(&w, n);
  for (uint32_t i = 0; i < n;
       i++) { /* sources: name, offset, watermark, max ts[, identity] */
    lm_str name = lm_state_get_bytes(&r);
    lm_state_put_bytes(&w, name.ptr, (size_t)name.len);
    for (int k = 0; k < 3; k++) lm_state_put_i64(&w, lm_state_get_i64(&r));
    for (int k = 0; k < 2; k++) (void)lm_state_get_i64(&r); /* incarnation, fingerprint */
    EXPECT(lm_state_get_bytes(&r).len == 1); /* active (u8), no per-key watermarks */
  }
  n = lm_state_get_u32(&r);
  lm_state_put_u32(&w, n);
  for (uint32_t i = 0; i < n;
       i++) { /* streams: name, watermark, [partitions,] state[, identity] */
    lm_str name = lm_state_get_bytes(&r);
    lm_state_put_bytes(&w, name.ptr, (size_t)name.len);
    lm_state_put_i64(&w, lm_state_get_i64(&r));
    EXPECT(lm_state_get_u32(&r) == 1);
    lm_str state = lm_state_get_bytes(&r);
    lm_state_put_bytes(&w, state.ptr, (size_t)state.len);
    for (int k = 0; k < 2; k++) (void)lm_state_get_i64(&r); /* incarnation, fingerprint */
    EXPECT(lm_state_get_u32(&r) == 0);                      /* input watermarks */
  }
  EXPECT(!r.failed && r.pos == r.len && lm_state_writer_status(&w) == LAMINAR_OK);
  CHECK_CODE(lm_ckpt_write(cdir, epoch, w.data, w.len, &err), LAMINAR_OK, &err);
  lm_state_writer_free(&w);
  lm_free(data);
  return 0;
}

/* The WAL records of source 'trades' in dir, copied. */
typedef struct wal_copy {
  int n;
  uint16_t type[64];
  uint64_t seq[64];
  lm_state_writer payload[64];
} wal_copy;

static laminar_code copy_record(void* arg, const lm_wal_record* rec, laminar_error* err) {
  wal_copy* c = arg;
  if (c->n == 64)
    return lm_error_set(err, LAMINAR_ERR_INTERNAL, "more records than expected");
  c->type[c->n] = rec->type;
  c->seq[c->n] = rec->seq;
  lm_state_writer_init(&c->payload[c->n]);
  lm_state_put_raw(&c->payload[c->n], rec->payload, rec->len);
  c->n++;
  return LAMINAR_OK;
}

/* Rewrite the WAL of source 'trades' in dir as builds before the compact
 * record wrote it: every batch as record type 1 in codec.c's first form; or,
 * with `trailing`, each compact record with one byte more after its batch.
 * Returns the number of batches rewritten, -1 on failure. */
static int rewrite_wal(const char* dir, bool trailing) {
  char wdir[600];
  snprintf(wdir, sizeof wdir, "%s/wal/trades", dir);
  wal_copy* c = calloc(1, sizeof *c);
  lm_wal* wal;
  laminar_error err;
  lm_wal_options o = {.dir = wdir};
  CHECK_CODE(lm_wal_open(&o, &wal, NULL, &err), LAMINAR_OK, &err);
  CHECK_CODE(lm_wal_replay(wal, 0, copy_record, c, &err), LAMINAR_OK, &err);
  CHECK_CODE(lm_wal_close(wal, &err), LAMINAR_OK, &err);
  lm_test_rmdir(wdir);
  CHECK(c->n > 0 && c->seq[0] == 1); /* all there: the new log numbers from 1 again */
  lm_schema schema;
  lm_schema_init_empty(&schema);
  lm_schema_add(&schema, "symbol", LM_TYPE_STRING, true);
  lm_schema_add(&schema, "price", LM_TYPE_DOUBLE, false);
  lm_schema_add(&schema, "volume", LM_TYPE_INT64, false);
  lm_schema_add(&schema, "ts", LM_TYPE_INT64, false);
  CHECK_CODE(lm_wal_open(&o, &wal, NULL, &err), LAMINAR_OK, &err);
  int rewritten = 0;
  for (int i = 0; i < c->n; i++) {
    lm_state_writer* p = &c->payload[i];
    lm_wal_ticket t;
    CHECK(c->seq[i] == (uint64_t)i + 1);
    if (c->type[i] == 3 && trailing) {
      lm_state_put_u8(p, 0);
      CHECK_CODE(lm_wal_append(wal, 3, 0, p->data, (uint32_t)p->len, &t, &err),
                 LAMINAR_OK, &err);
      rewritten++;
    } else if (c->type[i] == 3) {
      lm_state_reader r;
      lm_state_reader_init(&r, p->data, p->len);
      lm_batch* b;
      CHECK_CODE(lm_batch_decode_compact(&schema, &r, &b, &err), LAMINAR_OK, &err);
      lm_state_writer old;
      lm_state_writer_init(&old);
      lm_batch_encode(b, &old);
      lm_batch_unref(b);
      CHECK_CODE(lm_wal_append(wal, 1, 0, old.data, (uint32_t)old.len, &t, &err),
                 LAMINAR_OK, &err);
      lm_state_writer_free(&old);
      rewritten++;
    } else {
      CHECK_CODE(lm_wal_append(wal, c->type[i], 0, p->data, (uint32_t)p->len, &t, &err),
                 LAMINAR_OK, &err);
    }
    lm_state_writer_free(p);
  }
  CHECK_CODE(lm_wal_close(wal, &err), LAMINAR_OK, &err);
  lm_schema_free(&schema);
  free(c);
  return rewritten;
}

/* Half the input, a checkpoint, more input without a checkpoint, close;
 * reopen (no DDL: the catalog comes back), resume at the offset, finish. The
 * committed output equals the uninterrupted one-core run's. The first run has
 * `cores` reactors, the reopened one `cores_after` (keyed state split by key
 * hash again when they differ); `v1`: its checkpoint is rewritten in format 1
 * before the reopen (a data directory of an earlier version); `old_wal`: its
 * WAL is rewritten with the batch records of builds before the compact form. */
static int restart_case_wal(const char* wal_mode, int cores, int cores_after, bool v1,
                            bool old_wal) {
  char* want = reference_output();
  CHECK(want != NULL && strlen(want) > 100);
  /* The late side output has rows: 8 of the input's (one per fifth batch). */
  const char* late = strstr(want, "--- late\n");
  CHECK(late != NULL);
  int nlate = 0;
  for (const char* p = late; (p = strstr(p, "\"ts\":")) != NULL; p++) nlate++;
  EXPECT(nlate == NBATCH / 5);
  char dir[64];
  CHECK(lm_test_mkdtemp(dir, sizeof dir, "lm_dur_") == 0);
  laminar_db* db;
  laminar_source* src;
  laminar_error err;
  char sql[2048];
  sink_sql(dir, sql, sizeof sql);
  CHECK_CODE(open_db_cores(dir, wal_mode, cores, &db, &err), LAMINAR_OK, &err);
  CHECK_CODE(laminar_execute(db, DDL, &err), LAMINAR_OK, &err);
  CHECK_CODE(laminar_execute(db, sql, &err), LAMINAR_OK, &err);
  CHECK_CODE(laminar_source_open(db, "trades", &src, &err), LAMINAR_OK, &err);
  int64_t off;
  CHECK_CODE(laminar_source_offset(src, &off, &err), LAMINAR_OK, &err);
  CHECK(off == 1);
  EXPECT(lm_test_metric(db, "stream", "vwap", "partitions") == cores);
  CHECK(feed(db, src, 0, 15, 0) == 0);
  CHECK_CODE(laminar_checkpoint(db, &err), LAMINAR_OK, &err);
  CHECK(feed(db, src, 15, 22, 0) == 0); /* after the checkpoint: only in the WAL */
  laminar_source_close(src);
  CHECK_CODE(laminar_close(db), LAMINAR_OK, NULL);
  if (v1) CHECK(downgrade_checkpoint(dir) == 0);
  if (old_wal) CHECK(rewrite_wal(dir, false) == 22); /* every batch was logged compact */

  CHECK_CODE(open_db_cores(dir, wal_mode, cores_after, &db, &err), LAMINAR_OK, &err);
  /* The same DDL again is harmless; another definition under a used name is not. */
  CHECK_CODE(laminar_execute(db, DDL, &err), LAMINAR_OK, &err);
  CHECK_CODE(laminar_execute(db, sql, &err), LAMINAR_OK, &err);
  CHECK_CODE(laminar_execute(db, "CREATE SOURCE trades (a BIGINT)", &err),
             LAMINAR_ERR_SQL_DUPLICATE_OBJECT, &err);
  CHECK_CODE(laminar_source_open(db, "trades", &src, &err), LAMINAR_OK, &err);
  CHECK_CODE(laminar_source_offset(src, &off, &err), LAMINAR_OK, &err);
  CHECK(off == 23); /* 22 batches were accepted */
  EXPECT(lm_test_metric(db, "stream", "vwap", "partitions") == cores_after);
  /* The WAL after the checkpoint (7 batches) went through every partition. */
  for (int r = 0; r < cores_after; r++) {
    char name[16];
    snprintf(name, sizeof name, "%d", r);
    EXPECT(cores_after == 1 || lm_test_metric(db, "reactor", name, "rows") > 0);
  }
  CHECK(feed(db, src, off - 1, NBATCH, 9) == 0);
  int rc = finish_and_compare(db, src, dir, want);
  free(want);
  remove_db(dir);
  return rc;
}

static int restart_case(const char* wal_mode, int cores, int cores_after, bool v1) {
  return restart_case_wal(wal_mode, cores, cores_after, v1, false);
}

static int test_restart_sync(void) { return restart_case("sync", 1, 1, false); }
static int test_restart_async(void) { return restart_case("async", 1, 1, false); }
#ifdef LAMINAR_FAULT_INJECTION
/* Async WAL, runtime not started (the log's writer makes the records from
 * the arrays kept for it): each push with one of its first allocations
 * failing (a different one each batch) either succeeds or fails with
 * LAMINAR_ERR_NOMEM and leaves the caller's array as it was, neither
 * logged nor queued; pushed again, it goes in once. After a close (the last
 * batches only in the WAL) and a reopen, the committed output equals the
 * uninterrupted run's: nothing lost, nothing doubled. */
static int test_async_push_out_of_memory(void) {
  char* want = reference_output();
  CHECK(want != NULL);
  char dir[64];
  CHECK(lm_test_mkdtemp(dir, sizeof dir, "lm_dur_oom_") == 0);
  laminar_db* db;
  laminar_source* src;
  laminar_error err;
  CHECK(open_pipeline(dir, "async", &db, &src) == 0);
  int failed = 0;
  for (int64_t b = 0; b < NBATCH; b++) {
    struct ArrowArray array;
    struct ArrowSchema schema;
    CHECK(trades_batch(b, &array, &schema) == 0);
    struct ArrowArray before = array;
    lm_fault_alloc_set(1 + b % 10, false);
    laminar_code rc = laminar_source_push(src, &array, &schema, &err);
    lm_fault_alloc_set(0, false);
    if (rc != LAMINAR_OK) {
      CHECK_CODE(rc, LAMINAR_ERR_NOMEM, &err);
      CHECK(memcmp(&array, &before, sizeof array) == 0); /* untouched */
      failed++;
      CHECK_CODE(laminar_source_push(src, &array, &schema, &err), LAMINAR_OK, &err);
    }
    CHECK(array.release == NULL);
    schema.release(&schema);
    CHECK_CODE(laminar_run_until_idle(db, &err), LAMINAR_OK, &err);
    if (b == NBATCH / 2) CHECK_CODE(laminar_checkpoint(db, &err), LAMINAR_OK, &err);
  }
  fprintf(stderr, "async push out of memory: %d of %d pushes failed\n", failed, NBATCH);
  EXPECT(failed >= NBATCH / 4);
  laminar_source_close(src);
  CHECK_CODE(laminar_close(db), LAMINAR_OK, NULL);

  CHECK(open_pipeline(dir, "async", &db, &src) == 0);
  int64_t off;
  CHECK_CODE(laminar_source_offset(src, &off, &err), LAMINAR_OK, &err);
  EXPECT(off == NBATCH + 1);
  int rc = finish_and_compare(db, src, dir, want);
  free(want);
  remove_db(dir);
  return rc;
}
#else
static int test_async_push_out_of_memory(void) {
  return lm_test_skip(
      "built without LAMINAR_FAULT_INJECTION (scripts/test.sh step 2 has it)");
}
#endif

static int test_restart_cores2_sync(void) { return restart_case("sync", 2, 2, false); }
static int test_restart_cores2_async(void) { return restart_case("async", 2, 2, false); }
static int test_restart_cores_1_to_2(void) { return restart_case("sync", 1, 2, false); }
static int test_restart_cores_2_to_1(void) { return restart_case("async", 2, 1, false); }
static int test_restart_cores_2_to_3(void) { return restart_case("sync", 2, 3, false); }
static int test_restart_format1_checkpoint(void) {
  return restart_case("sync", 1, 2, true);
}
static int test_restart_old_wal_records(void) {
  return restart_case_wal("sync", 1, 1, false, true);
}

/* A compact batch record with bytes after its batch (CRC intact) is not
 * replayed as if whole: the open fails naming the record. */
static int test_compact_record_trailing_bytes(void) {
  char dir[64];
  CHECK(lm_test_mkdtemp(dir, sizeof dir, "lm_dur_") == 0);
  laminar_db* db;
  laminar_source* src;
  laminar_error err;
  CHECK_CODE(open_db(dir, "sync", &db, &err), LAMINAR_OK, &err);
  CHECK_CODE(laminar_execute(db, DDL, &err), LAMINAR_OK, &err);
  CHECK_CODE(laminar_source_open(db, "trades", &src, &err), LAMINAR_OK, &err);
  for (int64_t b = 0; b < 3; b++) CHECK(push_batch(src, b, &err) == LAMINAR_OK);
  laminar_source_close(src);
  CHECK_CODE(laminar_close(db), LAMINAR_OK, NULL);
  CHECK(rewrite_wal(dir, true) == 3);
  CHECK_CODE(open_db(dir, "sync", &db, &err), LAMINAR_ERR_RECOVERY, &err);
  fprintf(stderr, "refused: %s\n", err.message);
  EXPECT(strstr(err.message, "1 bytes after the logged batch") != NULL);
  EXPECT(strstr(err.message, "WAL record 1") != NULL);
  remove_db(dir);
  return 0;
}

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
  char rep[1024];
  CHECK_CODE(laminar_durability_report(db, rep, sizeof rep, &err), LAMINAR_OK, &err);
  CHECK(strstr(rep, "1 damaged checkpoint(s) skipped: epoch 2: CRC mismatch") != NULL);
  laminar_source_close(src);
  laminar_close(db);
  /* A damaged last record of the WAL. */
  snprintf(p, sizeof p, "%s/wal/trades", dir);
  struct dirent** segs;
  int nseg = scandir(p, &segs, NULL, alphasort);
  CHECK(nseg > 2);
  char seg[1024];
  snprintf(seg, sizeof seg, "%.600s/%.255s", p, segs[nseg - 1]->d_name);
  for (int i = 0; i < nseg; i++) free(segs[i]);
  free(segs);
  /* Scribble over the last record's payload: the newest segment's first
   * record starts at 32; overwriting bytes 40.. breaks its CRC. */
  fd = open(seg, O_RDWR);
  CHECK(fd >= 0);
  CHECK(pwrite(fd, "garbage!", 8, 100) == 8);
  close(fd);
  /* The close's checkpoint covers that record: skipped and reported, the
   * offset stays after the checkpoint's (issue 20). */
  CHECK_CODE(open_db(dir, "sync", &db, &err), LAMINAR_OK, &err);
  CHECK_CODE(laminar_durability_report(db, rep, sizeof rep, &err), LAMINAR_OK, &err);
  CHECK(strstr(rep, "source 'trades': WAL damage") != NULL);
  CHECK(strstr(rep, "CRC mismatch") != NULL);
  CHECK_CODE(laminar_source_open(db, "trades", &src, &err), LAMINAR_OK, &err);
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

/* ---- non-blocking pushes ---------------------------------------------------------------- */

/* try_push refuses a full queue at once and ingests (and logs) nothing;
 * free_slots follows the queue; a refused watermark is not logged either. */
static int test_try_push_and_free_slots(void) {
  char dir[64];
  CHECK(lm_test_mkdtemp(dir, sizeof dir, "lm_dur_") == 0);
  laminar_error err;
  laminar_config* c = durable_config(dir, "1 hour", "sync");
  CHECK(c != NULL);
  CHECK_CODE(laminar_config_set(c, "buffer_size", "2", &err), LAMINAR_OK, &err);
  laminar_db* db;
  CHECK_CODE(laminar_open(c, &db, &err), LAMINAR_OK, &err);
  laminar_config_destroy(c);
  CHECK_CODE(laminar_execute(db, DDL, &err), LAMINAR_OK, &err);
  laminar_source* src;
  CHECK_CODE(laminar_source_open(db, "trades", &src, &err), LAMINAR_OK, &err);
  int64_t free_slots = -1, off = -1;
  CHECK_CODE(laminar_source_free_slots(src, &free_slots, &err), LAMINAR_OK, &err);
  CHECK(free_slots == 2);
  trade_row rows[3] = {{"A", 1.0, false, 1, false, 1000},
                       {"B", 2.0, false, 2, false, 1100},
                       {"A", 3.0, false, 3, false, 1200}};
  for (int i = 0; i < 3; i++) {
    struct ArrowArray array;
    struct ArrowSchema schema;
    CHECK(build_trades(rows + i, 1, false, &array, &schema) == 0);
    laminar_code rc = laminar_source_try_push(src, &array, &schema, &err);
    if (i < 2) {
      CHECK_CODE(rc, LAMINAR_OK, &err);
      CHECK(array.release == NULL);
    } else {
      CHECK_CODE(rc, LAMINAR_ERR_QUEUE_FULL, &err);
      CHECK(array.release != NULL); /* still the caller's */
      array.release(&array);
    }
    schema.release(&schema);
  }
  CHECK_CODE(laminar_source_free_slots(src, &free_slots, &err), LAMINAR_OK, &err);
  CHECK(free_slots == 0);
  CHECK_CODE(laminar_source_watermark(src, 5000, &err), LAMINAR_ERR_QUEUE_FULL, &err);
  CHECK_CODE(laminar_source_offset(src, &off, &err), LAMINAR_OK, &err);
  CHECK(off == 3); /* the two accepted pushes only: nothing refused was logged */
  CHECK_CODE(laminar_run_until_idle(db, &err), LAMINAR_OK, &err);
  CHECK_CODE(laminar_source_free_slots(src, &free_slots, &err), LAMINAR_OK, &err);
  CHECK(free_slots == 2);
  laminar_source_close(src);
  CHECK_CODE(laminar_close(db), LAMINAR_OK, NULL);
  remove_db(dir);
  return 0;
}

/* ---- metrics -------------------------------------------------------------------------------- */

static int test_metrics(void) {
  char dir[64];
  CHECK(lm_test_mkdtemp(dir, sizeof dir, "lm_dur_") == 0);
  laminar_db* db;
  laminar_source* src;
  laminar_subscription* sub;
  laminar_error err;
  CHECK_CODE(open_db(dir, "sync", &db, &err), LAMINAR_OK, &err);
  CHECK_CODE(laminar_execute(db, DDL, &err), LAMINAR_OK, &err);
  CHECK_CODE(laminar_source_open(db, "trades", &src, &err), LAMINAR_OK, &err);
  CHECK_CODE(laminar_subscribe(db, "vwap", &sub, &err), LAMINAR_OK, &err);
  CHECK(lm_test_metric(db, "source", "trades", "pushed_batches") == 0);
  CHECK(feed(db, src, 0, 10, 5) == 0);
  struct ArrowArray out;
  CHECK_CODE(laminar_subscription_next(sub, 0, &out, NULL, &err), LAMINAR_OK, &err);
  CHECK(out.release != NULL);
  out.release(&out);
  EXPECT(lm_test_metric(db, "source", "trades", "pushed_batches") == 10);
  EXPECT(lm_test_metric(db, "source", "trades", "pushed_rows") == 10 * ROWS);
  EXPECT(lm_test_metric(db, "source", "trades", "wal_next_offset") == 11);
  EXPECT(lm_test_metric(db, "source", "trades", "processed_offset") == 10);
  EXPECT(lm_test_metric(db, "source", "trades", "queue_depth") == 0);
  EXPECT(lm_test_metric(db, "stream", "vwap", "rows_in") == 10 * ROWS);
  EXPECT(lm_test_metric(db, "stream", "vwap", "rows_out") > 0);
  EXPECT(lm_test_metric(db, "stream", "vwap", "state_groups") > 0);
  EXPECT(lm_test_metric(db, "stream", "vwap", "subscribers") == 1);
  EXPECT(lm_test_metric(db, "stream", "busy", "rows_in") ==
         lm_test_metric(db, "stream", "vwap", "rows_out"));
  EXPECT(lm_test_metric(db, "subscription", "vwap", "delivered_batches") == 1);
  EXPECT(lm_test_metric(db, "database", "", "last_checkpoint") == 2);
  EXPECT(lm_test_metric(db, "database", "", "last_checkpoint_stall_ns") > 0);
  laminar_subscription_close(sub);
  laminar_source_close(src);
  CHECK_CODE(laminar_close(db), LAMINAR_OK, NULL);
  remove_db(dir);
  return 0;
}

/* ---- connector sinks (laminar_sink_callbacks) ----------------------------------------- */

typedef struct recorder {
  char log[4096];
  size_t len;
  int64_t rows;
  int released;
} recorder;

static void note(recorder* r, const char* step, uint64_t v) {
  int n = snprintf(r->log + r->len, sizeof r->log - r->len, "%s %llu;", step,
                   (unsigned long long)v);
  if (n > 0 && r->len + (size_t)n < sizeof r->log) r->len += (size_t)n;
}
static int rec_begin(void* u, uint64_t e) {
  note(u, "begin", e);
  return 0;
}
static int rec_pre(void* u, uint64_t e) {
  note(u, "pre", e);
  return 0;
}
static int rec_commit(void* u, uint64_t e) {
  note(u, "commit", e);
  return 0;
}
static int rec_rollback(void* u, uint64_t e) {
  note(u, "rollback", e);
  return 0;
}
static int rec_recover(void* u, uint64_t e) {
  note(u, "recover", e);
  return 0;
}
static void rec_release(void* u) { ((recorder*)u)->released++; }
static int rec_write(void* u, struct ArrowArray* a, struct ArrowSchema* s) {
  ((recorder*)u)->rows += a->length;
  a->release(a);
  s->release(s);
  return 0;
}

static laminar_sink_callbacks rec_callbacks(recorder* r) {
  return (laminar_sink_callbacks){.user = r,
                                  .begin_epoch = rec_begin,
                                  .write = rec_write,
                                  .pre_commit = rec_pre,
                                  .commit = rec_commit,
                                  .rollback = rec_rollback,
                                  .recover = rec_recover,
                                  .release = rec_release};
}

static int test_connector_sink(void) {
  char dir[64];
  CHECK(lm_test_mkdtemp(dir, sizeof dir, "lm_dur_") == 0);
  recorder r = {0};
  laminar_sink_callbacks cb = rec_callbacks(&r);
  laminar_db* db;
  laminar_source* src;
  laminar_error err;
  CHECK_CODE(open_db(dir, "sync", &db, &err), LAMINAR_OK, &err);
  CHECK_CODE(laminar_execute(db, DDL, &err), LAMINAR_OK, &err);
  CHECK_CODE(laminar_sink_register(db, "rec", "nope", &cb, &err),
             LAMINAR_ERR_SQL_UNKNOWN_OBJECT, &err);
  CHECK_CODE(laminar_sink_register(db, "rec", "vwap", &cb, &err), LAMINAR_OK, &err);
  CHECK_CODE(laminar_sink_register(db, "rec", "vwap", &cb, &err),
             LAMINAR_ERR_SQL_DUPLICATE_OBJECT, &err);
  CHECK_CODE(laminar_sink_register(db, "trades", "vwap", &cb, &err),
             LAMINAR_ERR_SQL_DUPLICATE_OBJECT, &err); /* one namespace for every object */
  char sql[2048];
  snprintf(sql, sizeof sql, "CREATE SINK rec FROM vwap INTO FILE (path = '%s/x')", dir);
  CHECK_CODE(laminar_execute(db, sql, &err), LAMINAR_ERR_SQL_DUPLICATE_OBJECT, &err);
  CHECK_CODE(laminar_source_open(db, "trades", &src, &err), LAMINAR_OK, &err);
  CHECK(feed(db, src, 0, 10, 5) == 0);
  laminar_source_close(src);
  CHECK_CODE(laminar_close(db), LAMINAR_OK, NULL);
  EXPECT(strcmp(r.log,
                "recover 0;begin 1;pre 1;begin 2;commit 1;pre 2;begin 3;commit 2;"
                "rollback 3;") == 0);
  EXPECT(r.rows > 0 && r.released == 1);
  /* Reopened with the sink in the config: attached before the WAL replay. */
  recorder r2 = {0};
  laminar_sink_callbacks cb2 = rec_callbacks(&r2);
  laminar_config* c = durable_config(dir, "1 hour", "sync");
  CHECK(c != NULL);
  CHECK_CODE(laminar_config_add_sink(c, "rec", "vwap", &cb2, &err), LAMINAR_OK, &err);
  CHECK_CODE(laminar_open(c, &db, &err), LAMINAR_OK, &err);
  laminar_db* db2 = NULL;
  CHECK_CODE(laminar_open(c, &db2, &err), LAMINAR_ERR_LOCKED,
             &err); /* dir has its owner */
  char dir2[64];    /* elsewhere: the config's sink is taken */
  CHECK(lm_test_mkdtemp(dir2, sizeof dir2, "lm_dur_") == 0);
  CHECK_CODE(laminar_config_set(c, "data_dir", dir2, &err), LAMINAR_OK, &err);
  CHECK_CODE(laminar_open(c, &db2, &err), LAMINAR_ERR_STATE, &err);
  remove_db(dir2);
  laminar_config_destroy(c);
  EXPECT(strncmp(r2.log, "recover 2;begin 3;", 18) == 0);
  CHECK_CODE(laminar_execute(db, "DROP SINK rec", &err), LAMINAR_OK, &err);
  EXPECT(r2.released == 1);
  CHECK_CODE(laminar_close(db), LAMINAR_OK, NULL);
  /* A config never used releases its sinks. */
  recorder r3 = {0};
  laminar_sink_callbacks cb3 = rec_callbacks(&r3);
  CHECK(laminar_config_create(&c) == LAMINAR_OK);
  CHECK_CODE(laminar_config_add_sink(c, "x", "vwap", &cb3, &err), LAMINAR_OK, &err);
  laminar_config_destroy(c);
  EXPECT(r3.released == 1);
  remove_db(dir);
  return 0;
}

/* ---- the reactor with interval checkpoints --------------------------------------------- */

/* Pushes from this thread while the reactor processes, the async WAL flushes
 * and checkpoints are taken every 20 ms by the background thread (this case
 * also runs under TSan): the committed output reaches the reference. With 2
 * cores the checkpoint's pause is the aligned barrier of both reactors. */
static int threaded_interval_case(int cores) {
  char* want = reference_output();
  CHECK(want != NULL);
  char dir[64];
  CHECK(lm_test_mkdtemp(dir, sizeof dir, "lm_dur_") == 0);
  laminar_error err;
  laminar_config* c = durable_config_cores(dir, "20 ms", "async", cores);
  CHECK(c != NULL);
  laminar_db* db;
  CHECK_CODE(laminar_open(c, &db, &err), LAMINAR_OK, &err);
  laminar_config_destroy(c);
  char sql[2048];
  sink_sql(dir, sql, sizeof sql);
  CHECK_CODE(laminar_execute(db, DDL, &err), LAMINAR_OK, &err);
  CHECK_CODE(laminar_execute(db, sql, &err), LAMINAR_OK, &err);
  laminar_source* src;
  CHECK_CODE(laminar_source_open(db, "trades", &src, &err), LAMINAR_OK, &err);
  CHECK_CODE(laminar_start(db, &err), LAMINAR_OK, &err);
  for (int64_t b = 0; b < NBATCH; b++) {
    CHECK_CODE(push_batch(src, b, &err), LAMINAR_OK, &err);
    if (b % 10 == 0) usleep(5000); /* let a few checkpoints fall mid-stream */
  }
  CHECK_CODE(laminar_source_watermark(src, INT64_MAX, &err), LAMINAR_OK, &err);
  char* got = NULL;
  for (int tries = 0; tries < 1000; tries++) { /* up to ~20 s under sanitizers */
    free(got);
    got = sink_output(dir);
    if (strcmp(got, want) == 0) break;
    usleep(20000);
  }
  CHECK_CODE(laminar_stop(db, &err), LAMINAR_OK, &err);
  laminar_source_close(src);
  CHECK_CODE(laminar_close(db), LAMINAR_OK, NULL);
  int rc = strcmp(got, want) == 0 ? 0 : 1;
  if (rc) fprintf(stderr, "--- got\n%s--- want\n%s", got, want);
  free(got);
  free(want);
  remove_db(dir);
  return rc;
}

static int test_threaded_interval_checkpoints(void) { return threaded_interval_case(1); }
static int test_threaded_interval_checkpoints_cores2(void) {
  return threaded_interval_case(2);
}

/* An async WAL is written and flushed within its flush interval (10 ms) with
 * no checkpoint, close or further push: a process killed 300 ms after its
 * one push recovers it. Both ways a source gets an async WAL: the database's
 * wal_mode, and (per_source) its own WITH (wal_mode = 'async') in a database
 * without one, whose background thread had no WAL to flush and sleeps until
 * the next checkpoint (an hour here) unless the new source wakes it. */
static int async_killed_case(bool per_source) {
  char dir[64];
  CHECK(lm_test_mkdtemp(dir, sizeof dir, "lm_dur_") == 0);
  const char* mode = per_source ? "none" : "async";
  pid_t pid = fork();
  CHECK(pid >= 0);
  if (pid == 0) {
    laminar_db* db;
    laminar_source* src;
    laminar_error err;
    if (open_db(dir, mode, &db, &err) != LAMINAR_OK) _exit(2);
    usleep(50 * 1000); /* the background thread has looked for async WALs: none */
    char ddl[192];
    snprintf(
        ddl, sizeof ddl,
        "CREATE SOURCE trades (symbol VARCHAR NOT NULL, price DOUBLE, volume BIGINT, "
        "ts BIGINT)%s",
        per_source ? " WITH (wal_mode = 'async')" : "");
    if (laminar_execute(db, ddl, &err) != LAMINAR_OK) _exit(3);
    if (laminar_source_open(db, "trades", &src, &err) != LAMINAR_OK) _exit(4);
    if (push_batch(src, 0, &err) != LAMINAR_OK) _exit(5);
    usleep(300 * 1000);
    kill(getpid(), SIGKILL);
    _exit(6);
  }
  int status;
  CHECK(waitpid(pid, &status, 0) == pid);
  CHECK(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
  laminar_db* db;
  laminar_source* src;
  laminar_error err;
  CHECK_CODE(open_db(dir, mode, &db, &err), LAMINAR_OK, &err);
  CHECK_CODE(laminar_source_open(db, "trades", &src, &err), LAMINAR_OK, &err);
  int64_t off;
  CHECK_CODE(laminar_source_offset(src, &off, &err), LAMINAR_OK, &err);
  EXPECT(off == 2); /* the batch came back from the WAL */
  laminar_source_close(src);
  laminar_close(db);
  remove_db(dir);
  return 0;
}

/* Intervals as long as the settings take (~31,700 years) run: the background
 * thread's deadlines saturate instead of overflowing (UBSan build). */
static int test_longest_intervals(void) {
  char dir[64];
  CHECK(lm_test_mkdtemp(dir, sizeof dir, "lm_dur_") == 0);
  laminar_config* c = durable_config(dir, "1000000000000000 ms", "async");
  CHECK(c != NULL);
  laminar_error err;
  CHECK_CODE(laminar_config_set(c, "wal_flush_interval", "1000000000000000 ms", &err),
             LAMINAR_OK, &err);
  laminar_db* db;
  laminar_code rc = laminar_open(c, &db, &err);
  laminar_config_destroy(c);
  CHECK_CODE(rc, LAMINAR_OK, &err);
  CHECK_CODE(laminar_execute(db, DDL, &err), LAMINAR_OK, &err);
  laminar_source* src;
  CHECK_CODE(laminar_source_open(db, "trades", &src, &err), LAMINAR_OK, &err);
  CHECK(feed(db, src, 0, 3, 0) == 0);
  usleep(30 * 1000); /* the background thread has gone round */
  laminar_source_close(src);
  CHECK_CODE(laminar_close(db), LAMINAR_OK, NULL);
  remove_db(dir);
  return 0;
}

static int test_async_flushed_without_close(void) { return async_killed_case(false); }
static int test_async_source_in_database_without(void) { return async_killed_case(true); }

static const lm_test_case cases[] = {
    {"metrics", test_metrics},
    {"try_push_and_free_slots", test_try_push_and_free_slots},
    {"connector_sink", test_connector_sink},
    {"threaded_interval_checkpoints", test_threaded_interval_checkpoints},
    {"threaded_interval_checkpoints_cores2", test_threaded_interval_checkpoints_cores2},
    {"settings", test_settings},
    {"restart_sync", test_restart_sync},
    {"restart_async", test_restart_async},
    {"async_push_out_of_memory", test_async_push_out_of_memory},
    {"async_flushed_without_close", test_async_flushed_without_close},
    {"longest_intervals", test_longest_intervals},
    {"async_source_in_database_without", test_async_source_in_database_without},
    {"restart_cores2_sync", test_restart_cores2_sync},
    {"restart_cores2_async", test_restart_cores2_async},
    {"restart_cores_1_to_2", test_restart_cores_1_to_2},
    {"restart_cores_2_to_1", test_restart_cores_2_to_1},
    {"restart_cores_2_to_3", test_restart_cores_2_to_3},
    {"restart_format1_checkpoint", test_restart_format1_checkpoint},
    {"restart_old_wal_records", test_restart_old_wal_records},
    {"compact_record_trailing_bytes", test_compact_record_trailing_bytes},
    {"damaged_checkpoint_and_catalog", test_damaged_checkpoint_and_catalog},
    {NULL, NULL},
};

int main(int argc, char** argv) { return lm_test_main(argc, argv, cases); }
