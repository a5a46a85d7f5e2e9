/*
 * test_store_wal.c -- white-box tests of the WAL (src/store/wal.h) and CRC-32C:
 * round trips, segment rolling and truncation, recovery from seven kinds of
 * damage (default cut and strict refusal), a clean zero-filled end,
 * injected EIO/ENOSPC on write and flush, and group commit from several threads. Every WAL case
 * runs four times: through io_uring (skipped where the build or kernel has none)
 * and through pwrite, each with direct I/O allowed (taken by pwrite where the
 * file system of TMPDIR has O_DIRECT, checked) and off.
 */
/* lm_ctest: TIMEOUT 120 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE  // mkdtemp, ftruncate under -std=c17
#endif

#include "store/crc32c.h"
#include "store/wal.h"
#include "util/util.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lm_test.h"
#include "lm_test_fs.h"

/* ---- helpers ------------------------------------------------------------------ */

typedef struct tmpdir {
  char path[256];
} tmpdir;

static int tmpdir_make(tmpdir* t) {
  return lm_test_mkdtemp_disk(t->path, sizeof t->path, "lm_wal_");
}
static void tmpdir_remove(tmpdir* t) { lm_test_rmdir(t->path); }

/* Sorted segment file paths of a directory (at most 64). */
static int segments(const char* dir, char out[][512], int max) {
  DIR* d = opendir(dir);
  int n = 0;
  struct dirent* e;
  while (d != NULL && (e = readdir(d)) != NULL) {
    size_t len = strlen(e->d_name);
    if (len < 5 || strcmp(e->d_name + len - 4, ".wal") != 0 || n == max) continue;
    snprintf(out[n++], 512, "%s/%s", dir, e->d_name);
  }
  if (d != NULL) closedir(d);
  for (int i = 1; i < n; i++)
    for (int j = i; j > 0 && strcmp(out[j - 1], out[j]) > 0; j--) {
      char tmp[512];
      memcpy(tmp, out[j], 512);
      memcpy(out[j], out[j - 1], 512);
      memcpy(out[j - 1], tmp, 512);
    }
  return n;
}

/* Payload of record i: a deterministic length (0..300) and bytes. */
static uint32_t payload(uint64_t i, uint8_t* buf) {
  uint32_t len = (uint32_t)((i * 37u) % 301u);
  for (uint32_t k = 0; k < len; k++) buf[k] = (uint8_t)(i * 7u + k);
  return len;
}

static laminar_code append_n(lm_wal* wal, uint64_t first, uint64_t n, bool sync) {
  uint8_t buf[512];
  laminar_error err;
  for (uint64_t i = first; i < first + n; i++) {
    uint32_t len = payload(i, buf);
    lm_wal_ticket t;
    laminar_code rc = lm_wal_append(wal, (uint16_t)(i % 5), i / 10, buf, len, &t, &err);
    if (rc == LAMINAR_OK && t.seq != i) rc = LAMINAR_ERR_INTERNAL;
    if (rc == LAMINAR_OK) rc = lm_wal_commit(wal, t, sync, &err);
    if (rc != LAMINAR_OK) {
      fprintf(stderr, "append %llu: %s\n", (unsigned long long)i, err.message);
      return rc;
    }
  }
  return LAMINAR_OK;
}

typedef struct verify {
  uint64_t next;
  uint64_t count;
  int bad;
} verify;

static laminar_code verify_rec(void* arg, const lm_wal_record* r, laminar_error* err) {
  (void)err;
  verify* v = arg;
  uint8_t buf[512];
  uint32_t len = payload(r->seq, buf);
  if (r->seq != v->next || r->len != len || memcmp(r->payload, buf, len) != 0 ||
      r->type != r->seq % 5 || r->epoch != r->seq / 10)
    v->bad++;
  v->next = r->seq + 1;
  v->count++;
  return LAMINAR_OK;
}

/* Replay from `from` and check records from..last are all there and right. */
static int check_replay(lm_wal* wal, uint64_t from, uint64_t last) {
  verify v = {.next = from};
  laminar_error err;
  CHECK_CODE(lm_wal_replay(wal, from, verify_rec, &v, &err), LAMINAR_OK, &err);
  EXPECT(v.bad == 0);
  EXPECT(v.count == last + 1 - from);
  EXPECT(v.next == last + 1);
  return v.bad == 0 && v.count == last + 1 - from ? 0 : 1;
}

/* The direct-I/O setting of the running case (set by its wrapper below). */
static lm_wal_direct g_direct;

/* Segment sizes are given for buffered writes; under direct I/O (pwrite only)
 * every commit takes at least one 4 KiB block, so they are scaled to hold
 * about as many commits. */
static lm_wal_options opts(const tmpdir* t, lm_wal_io io, uint64_t segment_bytes) {
  bool direct = g_direct == LM_WAL_DIRECT_AUTO && io == LM_WAL_IO_PWRITE;
  uint64_t bytes = direct ? segment_bytes * 16 : segment_bytes;
  return (lm_wal_options){
      .dir = t->path, .segment_bytes = bytes, .io = io, .direct = g_direct};
}

/* Whether files in dir can be opened with O_DIRECT (not on tmpfs). */
static bool dir_takes_direct(const char* dir) {
  char path[512];
  snprintf(path, sizeof path, "%s/probe", dir);
  int fd = open(path, O_RDWR | O_CREAT | O_DIRECT, 0644);
  if (fd >= 0) close(fd);
  unlink(path);
  return fd >= 0;
}

/* Where the records of a segment file end: *end after the last record of any
 * kind (the clean end), *last_end after the last one that is not padding. */
static int data_end(const char* path, uint64_t* end, uint64_t* last_end) {
  int fd = open(path, O_RDONLY);
  CHECK(fd >= 0);
  uint64_t off = 32;
  *last_end = off;
  for (;;) {
    uint8_t h[32], zero[32] = {0};
    if (pread(fd, h, 32, (off_t)off) != 32 || memcmp(h, zero, 32) == 0) break;
    uint32_t len = (uint32_t)h[0] | (uint32_t)h[1] << 8 | (uint32_t)h[2] << 16 |
                   (uint32_t)h[3] << 24;
    off += 32 + ((len + 7u) & ~7u);
    if ((h[24] | h[25] << 8) != LM_WAL_TYPE_PAD) *last_end = off;
  }
  close(fd);
  *end = off;
  return 0;
}

/* io_uring cases skip when the build or the kernel cannot give a ring. */
static int skip_io(lm_wal_io io, const tmpdir* t) {
  if (io != LM_WAL_IO_URING) return 0;
  lm_wal_options o = opts(t, io, 0);
  lm_wal* wal;
  laminar_error err;
  if (lm_wal_open(&o, &wal, NULL, &err) != LAMINAR_OK) {
    fprintf(stderr, "skip io_uring: %s\n", err.message);
    return 1;
  }
  lm_wal_close(wal, NULL);
  return 0;
}

/* A case's fresh directory: 0, or LM_TEST_SKIP (nothing left behind) when
 * the I/O path cannot run here, or 1 when no directory could be made. */
static int case_dir(lm_wal_io io, tmpdir* t) {
  if (tmpdir_make(t) != 0) {
    fprintf(stderr, "cannot make a temporary directory\n");
    return 1;
  }
  if (skip_io(io, t)) {
    tmpdir_remove(t);
    return LM_TEST_SKIP;
  }
  return 0;
}

/* ---- CRC-32C ----------------------------------------------------------------- */

static int test_crc32c(void) {
  CHECK(lm_crc32c(0, "123456789", 9) == 0xE3069283u);
  CHECK(lm_crc32c_portable(0, "123456789", 9) == 0xE3069283u);
  CHECK(lm_crc32c(0, "", 0) == 0);
  uint8_t buf[4099];
  uint64_t s = lm_test_seed() | 1;
  for (size_t i = 0; i < sizeof buf; i++) {
    s ^= s << 13, s ^= s >> 7, s ^= s << 17;
    buf[i] = (uint8_t)s;
  }
  for (size_t n = 0; n < sizeof buf; n += 97) {
    uint32_t whole = lm_crc32c(0, buf + 1, n); /* unaligned start */
    EXPECT(whole == lm_crc32c_portable(0, buf + 1, n));
    size_t cut = n / 3;
    EXPECT(whole == lm_crc32c(lm_crc32c(0, buf + 1, cut), buf + 1 + cut, n - cut));
  }
  fprintf(stderr, "crc32c hardware: %d\n", lm_crc32c_hardware());
  return 0;
}

/* The three interleaved chains (buffers of 768 bytes and more, blocks of 256
 * and 4096) against the table: random lengths up to 100k, every start offset
 * mod 8, a random starting register, and each length around the block
 * boundaries. */
static int test_crc32c_streams(void) {
  enum { MAX = 100000 + 16 };
  uint8_t* buf = malloc(MAX);
  CHECK(buf != NULL);
  uint64_t s = lm_test_seed() | 1;
  for (size_t i = 0; i < MAX; i++) {
    s ^= s << 13, s ^= s >> 7, s ^= s << 17;
    buf[i] = (uint8_t)s;
  }
  int bad = 0;
  static const size_t edges[] = {767,   768,   769,   1535,  1536,           12287,
                                 12288, 12289, 13056, 24576, 24576 + 768 + 7};
  for (int k = 0; k < 400 + (int)(sizeof edges / sizeof edges[0]); k++) {
    s ^= s << 13, s ^= s >> 7, s ^= s << 17;
    size_t n = k < 400 ? (size_t)(s % 100001) : edges[k - 400];
    size_t at = (size_t)(s >> 40) % 8;
    uint32_t init = (uint32_t)(s >> 20);
    uint32_t want = lm_crc32c_portable(init, buf + at, n);
    if (lm_crc32c(init, buf + at, n) != want) {
      if (bad++ < 5) fprintf(stderr, "crc32c differs: length %zu at +%zu\n", n, at);
    }
  }
  free(buf);
  fprintf(stderr, "crc32c hardware: %d, %d lengths differ\n", lm_crc32c_hardware(), bad);
  EXPECT(bad == 0);
  return bad != 0;
}

/* ---- round trip, rolling, truncation ------------------------------------------ */

static int roundtrip(lm_wal_io io) {
  tmpdir t;
  int made = case_dir(io, &t);
  if (made != 0) return made;
  int rc = 1;
  laminar_error err;
  lm_wal_report rep;
  lm_wal* wal;
  lm_wal_options o = opts(&t, io, 4096); /* small segments: many rolls */
  CHECK_CODE(lm_wal_open(&o, &wal, &rep, &err), LAMINAR_OK, &err);
  EXPECT(strcmp(lm_wal_io_name(wal), io == LM_WAL_IO_URING ? "io_uring" : "pwrite") == 0);
  /* Direct I/O with pwrite only (a killed process's io_uring O_DIRECT writes
   * can land after a restart: see wal.c). */
  EXPECT(lm_wal_is_direct(wal) == (g_direct == LM_WAL_DIRECT_AUTO &&
                                   io == LM_WAL_IO_PWRITE && dir_takes_direct(t.path)));
  EXPECT(rep.records == 0 && !rep.cut && lm_wal_next_seq(wal) == 1);
  CHECK_CODE(append_n(wal, 1, 300, false), LAMINAR_OK, NULL);
  CHECK_CODE(append_n(wal, 301, 200, true), LAMINAR_OK, NULL);
  if (check_replay(wal, 1, 500) || check_replay(wal, 377, 500)) goto out;
  CHECK_CODE(lm_wal_close(wal, &err), LAMINAR_OK, &err);

  char segs[64][512];
  int nseg = segments(t.path, segs, 64);
  EXPECT(nseg > 5);

  CHECK_CODE(lm_wal_open(&o, &wal, &rep, &err), LAMINAR_OK, &err);
  EXPECT(rep.records == 500 && rep.first_seq == 1 && rep.last_seq == 500 && !rep.cut);
  EXPECT(rep.segments == (uint64_t)nseg);
  EXPECT(lm_wal_next_seq(wal) == 501);
  if (check_replay(wal, 1, 500)) goto out_close;
  /* A checkpoint covering 1..400: the segments before it go, the rest replays. */
  CHECK_CODE(lm_wal_truncate_before(wal, 401, &err), LAMINAR_OK, &err);
  int left = segments(t.path, segs, 64);
  EXPECT(left < nseg && left >= 1);
  if (check_replay(wal, 401, 500)) goto out_close;
  /* Everything covered: the active segment stays and numbering continues. */
  CHECK_CODE(append_n(wal, 501, 10, true), LAMINAR_OK, NULL);
  CHECK_CODE(lm_wal_truncate_before(wal, 511, &err), LAMINAR_OK, &err);
  EXPECT(segments(t.path, segs, 64) == 1);
  CHECK_CODE(lm_wal_close(wal, &err), LAMINAR_OK, &err);
  CHECK_CODE(lm_wal_open(&o, &wal, &rep, &err), LAMINAR_OK, &err);
  EXPECT(lm_wal_next_seq(wal) == 511 && !rep.cut);
  CHECK_CODE(append_n(wal, 511, 5, true), LAMINAR_OK, NULL);
  rc = check_replay(wal, 511, 515);
out_close:
  lm_wal_close(wal, NULL);
out:
  tmpdir_remove(&t);
  return rc;
}

/* ---- recovery from damage -------------------------------------------------------- */

typedef enum damage {
  TORN_TAIL,       /* the newest record lost its last bytes */
  FLIPPED_BYTE,    /* one bit of a record in a middle segment */
  OVERWRITE16,     /* 16 bytes of garbage over a record in a middle segment */
  ZERO_TAIL,       /* zeros after the last record: the clean end, no cut */
  ZEROED_RECORD,   /* a record header zeroed in place, data after it */
  MISSING_SEGMENT, /* a middle segment file removed */
  FOREIGN_SEGMENT, /* a copy of a segment under a later segment's name */
} damage;

/* Write 200 records in small segments, damage the files, reopen: the log must
 * end at the last good record before the damage, say why, and take appends.
 * With `strict`, damage before the newest segment refuses the open and
 * changes nothing. */
static int recover_from(lm_wal_io io, damage what, bool strict) {
  tmpdir t;
  int made = case_dir(io, &t);
  if (made != 0) return made;
  laminar_error err;
  lm_wal_report rep;
  lm_wal* wal;
  lm_wal_options o = opts(&t, io, 2048);
  o.strict = strict;
  CHECK_CODE(lm_wal_open(&o, &wal, &rep, &err), LAMINAR_OK, &err);
  CHECK_CODE(append_n(wal, 1, 200, true), LAMINAR_OK, NULL);
  CHECK_CODE(lm_wal_close(wal, &err), LAMINAR_OK, &err);

  char segs[64][512];
  int nseg = segments(t.path, segs, 64);
  CHECK(nseg >= 6);
  bool tail = what == TORN_TAIL || what == ZERO_TAIL || what == FOREIGN_SEGMENT;
  int victim = tail ? nseg - 1 : nseg / 2;
  uint64_t victim_first = strtoull(strrchr(segs[victim], '/') + 1, NULL, 10);
  uint64_t end, last_end; /* of the newest segment */
  CHECK(data_end(segs[victim], &end, &last_end) == 0);
  uint64_t expect_last = victim_first - 1;
  bool expect_cut = true;
  const char* want = NULL;
  int fd = open(segs[victim], O_RDWR);
  CHECK(fd >= 0);
  static const uint8_t garbage[16] = {0xA5, 1, 2,  3,  4,  5,  6,  7,
                                      8,    9, 10, 11, 12, 13, 14, 15};
  uint8_t zeros[4096] = {0};
  switch (what) {
    case TORN_TAIL:
      CHECK(ftruncate(fd, (off_t)last_end - 5) == 0); /* into record 200, not padding */
      expect_last = 199;
      want = "torn record";
      break;
    case FLIPPED_BYTE: { /* in the sequence number of the segment's first record (or pad) */
      uint8_t b;
      CHECK(pread(fd, &b, 1, 32 + 9) == 1);
      b ^= 0x10;
      CHECK(pwrite(fd, &b, 1, 32 + 9) == 1);
      want = "CRC mismatch";
      break;
    }
    case OVERWRITE16:
      CHECK(pwrite(fd, garbage, sizeof garbage, 32 + 4) == (ssize_t)sizeof garbage);
      want = "CRC mismatch";
      break;
    case ZERO_TAIL:
      CHECK(pwrite(fd, zeros, sizeof zeros, (off_t)end) == (ssize_t)sizeof zeros);
      expect_last = 200;
      expect_cut = false;
      break;
    case ZEROED_RECORD:
      CHECK(pwrite(fd, zeros, 32, 32) == 32);
      want = "zeroed record";
      break;
    case MISSING_SEGMENT:
      CHECK(unlink(segs[victim]) == 0);
      want = "missing segment";
      break;
    case FOREIGN_SEGMENT: { /* segment 0's bytes named as if they came after 200 */
      char name[600];
      snprintf(name, sizeof name, "%s/%020d.wal", t.path, 201);
      int src = open(segs[0], O_RDONLY);
      int dst = open(name, O_WRONLY | O_CREAT, 0644);
      CHECK(src >= 0 && dst >= 0);
      ssize_t n = read(src, zeros, sizeof zeros);
      CHECK(n > 0 && write(dst, zeros, (size_t)n) == n);
      close(src);
      close(dst);
      expect_last = 200;
      want = "segment header invalid";
      break;
    }
  }
  close(fd);

  if (strict && !tail) {
    /* Refused, and nothing on disk was touched. */
    char before[64][512];
    int nbefore = segments(t.path, before, 64);
    CHECK_CODE(lm_wal_open(&o, &wal, &rep, &err), LAMINAR_ERR_IO, &err);
    CHECK(strstr(err.message, "damaged before its tail") != NULL);
    CHECK(strstr(err.message, want) != NULL);
    CHECK(segments(t.path, segs, 64) == nbefore);
    tmpdir_remove(&t);
    return 0;
  }
  CHECK_CODE(lm_wal_open(&o, &wal, &rep, &err), LAMINAR_OK, &err);
  int rc = 0;
  EXPECT(rep.cut == expect_cut);
  EXPECT(rep.last_seq == expect_last);
  EXPECT(rep.records == expect_last);
  EXPECT((rep.bytes_cut > 0) == expect_cut);
  if (want != NULL && strstr(rep.reason, want) == NULL) {
    fprintf(stderr, "reason '%s' lacks '%s'\n", rep.reason, want);
    rc = 1;
  }
  if (!tail) EXPECT(rep.segments_dropped > 0);
  EXPECT(lm_wal_next_seq(wal) == expect_last + 1);
  rc |= check_replay(wal, 1, expect_last);
  /* The log goes on after the cut and survives another reopen intact. */
  if (append_n(wal, expect_last + 1, 30, true) != LAMINAR_OK) rc = 1;
  lm_wal_close(wal, NULL);
  CHECK_CODE(lm_wal_open(&o, &wal, &rep, &err), LAMINAR_OK, &err);
  EXPECT(!rep.cut && rep.last_seq == expect_last + 30);
  rc |= check_replay(wal, 1, expect_last + 30);
  lm_wal_close(wal, NULL);
  tmpdir_remove(&t);
  return rc;
}

/* Every damage, cut (default) and strict. */
static int all_damage(lm_wal_io io) {
  static const char* names[] = {"torn_tail",      "flipped_byte",  "overwrite16",
                                "zero_tail",      "zeroed_record", "missing_segment",
                                "foreign_segment"};
  int failed = 0;
  for (int strict = 0; strict <= 1; strict++)
    for (int d = TORN_TAIL; d <= FOREIGN_SEGMENT; d++) {
      int rc = recover_from(io, (damage)d, strict);
      if (rc == LM_TEST_SKIP) return rc;
      if (rc != 0) {
        fprintf(stderr, "damage %s%s failed\n", names[d], strict ? " (strict)" : "");
        failed = 1;
      }
    }
  return failed;
}

/* ---- injected write and flush failures -------------------------------------------- */

typedef struct fault_plan {
  int write_calls, sync_calls, alloc_calls;
  int fail_write_at, fail_sync_at, fail_alloc_at; /* 1-based call to fail; 0 = never */
  int err;
} fault_plan;

static int fault_hook(void* arg, lm_wal_fault_op op) {
  fault_plan* f = arg;
  if (op == LM_WAL_FAULT_WRITE) return ++f->write_calls == f->fail_write_at ? f->err : 0;
  if (op == LM_WAL_FAULT_ALLOCATE)
    return ++f->alloc_calls == f->fail_alloc_at ? f->err : 0;
  return ++f->sync_calls == f->fail_sync_at ? f->err : 0;
}

/* A failed write (EIO/ENOSPC) fails that commit only: what was committed
 * before stays, the log takes appends again, and a reopen shows exactly the
 * committed records with no gap. */
static int fault_case(lm_wal_io io, bool on_sync, int e) {
  tmpdir t;
  int made = case_dir(io, &t);
  if (made != 0) return made;
  fault_plan plan = {.err = e};
  lm_wal_options o = opts(&t, io, 0);
  o.fault = fault_hook;
  o.fault_arg = &plan;
  laminar_error err;
  lm_wal* wal;
  CHECK_CODE(lm_wal_open(&o, &wal, NULL, &err), LAMINAR_OK, &err);
  CHECK_CODE(append_n(wal, 1, 20, true), LAMINAR_OK, NULL);
  if (on_sync)
    plan.fail_sync_at = plan.sync_calls + 1;
  else
    plan.fail_write_at = plan.write_calls + 1;

  uint8_t buf[512];
  uint32_t len = payload(21, buf);
  lm_wal_ticket a, b;
  CHECK_CODE(lm_wal_append(wal, 21 % 5, 2, buf, len, &a, &err), LAMINAR_OK, &err);
  len = payload(22, buf);
  CHECK_CODE(lm_wal_append(wal, 22 % 5, 2, buf, len, &b, &err), LAMINAR_OK, &err);
  CHECK_CODE(lm_wal_commit(wal, a, true, &err), LAMINAR_ERR_IO, &err);
  int rc = 0;
  if (strstr(err.message, strerror(e)) == NULL) {
    fprintf(stderr, "message '%s' lacks '%s'\n", err.message, strerror(e));
    rc = 1;
  }
  /* Both were in the failed batch: b is reported lost, not silently kept. */
  CHECK_CODE(lm_wal_commit(wal, b, true, &err), LAMINAR_ERR_IO, &err);
  EXPECT(strstr(err.message, "discarded") != NULL);
  EXPECT(lm_wal_next_seq(wal) == 21);
  char segs[8][512];
  int nseg = segments(t.path, segs, 8);
  /* The device works again: the same records go in under the same numbers,
   * in a fresh segment (the failed commit asked for a flush). */
  CHECK_CODE(append_n(wal, 21, 10, true), LAMINAR_OK, NULL);
  EXPECT(segments(t.path, segs, 8) == nseg + 1);
  rc |= check_replay(wal, 1, 30);
  CHECK_CODE(lm_wal_close(wal, &err), LAMINAR_OK, &err);
  lm_wal_report rep;
  o.fault = NULL;
  CHECK_CODE(lm_wal_open(&o, &wal, &rep, &err), LAMINAR_OK, &err);
  EXPECT(!rep.cut && rep.records == 30);
  rc |= check_replay(wal, 1, 30);
  lm_wal_close(wal, NULL);
  tmpdir_remove(&t);
  return rc;
}

/* A full disk when a new segment is reserved fails that commit cleanly; the
 * log goes on in the old segment and rolls once space is back. */
static int alloc_enospc(lm_wal_io io) {
  tmpdir t;
  int made = case_dir(io, &t);
  if (made != 0) return made;
  fault_plan plan = {.err = ENOSPC, .fail_alloc_at = 2}; /* 1: the first segment */
  lm_wal_options o = opts(&t, io, 1024);
  o.fault = fault_hook;
  o.fault_arg = &plan;
  laminar_error err;
  lm_wal* wal;
  CHECK_CODE(lm_wal_open(&o, &wal, NULL, &err), LAMINAR_OK, &err);
  uint64_t seq = 1;
  laminar_code rc = LAMINAR_OK;
  while (plan.alloc_calls < 2 && rc == LAMINAR_OK) {
    rc = append_n(wal, seq, 1, true);
    if (rc == LAMINAR_OK) seq++;
  }
  CHECK(rc == LAMINAR_ERR_IO && plan.alloc_calls == 2);
  CHECK(lm_wal_next_seq(wal) == seq);
  CHECK_CODE(append_n(wal, seq, 20, true), LAMINAR_OK, NULL);
  int ok = check_replay(wal, 1, seq + 19);
  lm_wal_close(wal, NULL);
  lm_wal_report rep;
  o.fault = NULL;
  CHECK_CODE(lm_wal_open(&o, &wal, &rep, &err), LAMINAR_OK, &err);
  EXPECT(!rep.cut && rep.last_seq == seq + 19);
  lm_wal_close(wal, NULL);
  tmpdir_remove(&t);
  return ok;
}

/* ---- group commit --------------------------------------------------------------- */

#define GC_THREADS 4
#define GC_PER_THREAD 300

typedef struct gc_arg {
  lm_wal* wal;
  int id;
  int failed;
} gc_arg;

static void* gc_thread(void* p) {
  gc_arg* a = p;
  for (uint32_t i = 0; i < GC_PER_THREAD; i++) {
    uint32_t payload_v[2] = {(uint32_t)a->id, i};
    lm_wal_ticket t;
    if (lm_wal_append(a->wal, 1, 0, payload_v, sizeof payload_v, &t, NULL) !=
            LAMINAR_OK ||
        lm_wal_commit(a->wal, t, true, NULL) != LAMINAR_OK)
      a->failed++;
  }
  return NULL;
}

typedef struct gc_check {
  uint32_t next[GC_THREADS];
  int bad;
  uint64_t count;
} gc_check;

static laminar_code gc_verify(void* arg, const lm_wal_record* r, laminar_error* err) {
  (void)err;
  gc_check* c = arg;
  uint32_t v[2];
  if (r->len != sizeof v) {
    c->bad++;
    return LAMINAR_OK;
  }
  memcpy(v, r->payload, sizeof v);
  if (v[0] >= GC_THREADS || v[1] != c->next[v[0]])
    c->bad++;
  else
    c->next[v[0]]++;
  c->count++;
  return LAMINAR_OK;
}

static int group_commit(lm_wal_io io) {
  tmpdir t;
  int made = case_dir(io, &t);
  if (made != 0) return made;
  fault_plan counter = {0}; /* counts flushes, fails nothing */
  lm_wal_options o = opts(&t, io, 1u << 14);
  o.fault = fault_hook;
  o.fault_arg = &counter;
  laminar_error err;
  lm_wal* wal;
  CHECK_CODE(lm_wal_open(&o, &wal, NULL, &err), LAMINAR_OK, &err);
  pthread_t th[GC_THREADS];
  gc_arg args[GC_THREADS];
  for (int i = 0; i < GC_THREADS; i++) {
    args[i] = (gc_arg){.wal = wal, .id = i};
    CHECK(pthread_create(&th[i], NULL, gc_thread, &args[i]) == 0);
  }
  int failed = 0;
  for (int i = 0; i < GC_THREADS; i++) {
    pthread_join(th[i], NULL);
    failed += args[i].failed;
  }
  EXPECT(failed == 0);
  int commits = GC_THREADS * GC_PER_THREAD;
  fprintf(stderr, "group commit: %d commits, %d flushes\n", commits, counter.sync_calls);
  EXPECT(counter.sync_calls <= commits + 64); /* roll flushes included */
  CHECK_CODE(lm_wal_close(wal, &err), LAMINAR_OK, &err);
  o.fault = NULL;
  lm_wal_report rep;
  CHECK_CODE(lm_wal_open(&o, &wal, &rep, &err), LAMINAR_OK, &err);
  gc_check c;
  memset(&c, 0, sizeof c);
  CHECK_CODE(lm_wal_replay(wal, 1, gc_verify, &c, &err), LAMINAR_OK, &err);
  EXPECT(!rep.cut && c.bad == 0 && c.count == (uint64_t)commits);
  for (int i = 0; i < GC_THREADS; i++) EXPECT(c.next[i] == GC_PER_THREAD);
  lm_wal_close(wal, NULL);
  tmpdir_remove(&t);
  return c.bad == 0 && c.count == (uint64_t)commits ? 0 : 1;
}

/* ---- bad arguments ---------------------------------------------------------------- */

static int test_bad_open(void) {
  laminar_error err;
  lm_wal* wal = (lm_wal*)1;
  lm_wal_options o = {.dir = "/nonexistent-parent/x/wal"};
  CHECK_CODE(lm_wal_open(&o, &wal, NULL, &err), LAMINAR_ERR_IO, &err);
  CHECK(wal == NULL);
  CHECK(strstr(err.message, "/nonexistent-parent/x/wal") != NULL);
  o.dir = "";
  CHECK_CODE(lm_wal_open(&o, &wal, NULL, &err), LAMINAR_ERR_CONFIG_VALUE, &err);
  CHECK_CODE(lm_wal_close(NULL, &err), LAMINAR_OK, &err);
  return 0;
}

#define BOTH(name, call)                           \
  static int test_##name##_uring(void) {           \
    g_direct = LM_WAL_DIRECT_AUTO;                 \
    return call(LM_WAL_IO_URING);                  \
  }                                                \
  static int test_##name##_pwrite(void) {          \
    g_direct = LM_WAL_DIRECT_AUTO;                 \
    return call(LM_WAL_IO_PWRITE);                 \
  }                                                \
  static int test_##name##_uring_buffered(void) {  \
    g_direct = LM_WAL_DIRECT_OFF;                  \
    return call(LM_WAL_IO_URING);                  \
  }                                                \
  static int test_##name##_pwrite_buffered(void) { \
    g_direct = LM_WAL_DIRECT_OFF;                  \
    return call(LM_WAL_IO_PWRITE);                 \
  }

/* A record appended for later: its number, and what the writer did with it. */
typedef struct later_arg {
  uint64_t i;
  int measured, filled, released;
  bool fail; /* its measure runs out of memory */
} later_arg;

static uint32_t later_measure(void* arg, uint16_t* type) {
  later_arg* a = arg;
  uint8_t scratch[512];
  a->measured++;
  if (a->fail) return LM_WAL_MEASURE_FAILED;
  *type = (uint16_t)(a->i % 5);
  return payload(a->i, scratch);
}

static void later_fill(void* arg, uint8_t* dst) {
  later_arg* a = arg;
  a->filled++;
  payload(a->i, dst);
}

static void later_release(void* arg) { ((later_arg*)arg)->released++; }

static const lm_wal_later_ops later_ops = {later_measure, later_fill, later_release};

/* Records i in [first, last]: made later (odd i) and appended in full (even
 * i), each argument in a[i]; *t: the last ticket. */
static laminar_code append_mixed(lm_wal* wal, later_arg* a, uint64_t first, uint64_t last,
                                 lm_wal_ticket* t, laminar_error* err) {
  uint8_t buf[512];
  for (uint64_t i = first; i <= last; i++) {
    a[i] = (later_arg){.i = i};
    uint32_t len = payload(i, buf);
    laminar_code rc =
        i % 2 ? lm_wal_append_later(wal, i / 10, 512, &later_ops, &a[i], t, err)
              : lm_wal_append(wal, (uint16_t)(i % 5), i / 10, buf, len, t, err);
    if (rc != LAMINAR_OK) return rc;
    if (t->seq != i) return LAMINAR_ERR_INTERNAL;
  }
  return LAMINAR_OK;
}

/* Later records are made by the commit that takes them, in sequence with the
 * others (replay checks every record's number, type, epoch and bytes), each
 * measured, filled and let go exactly once; a failed write (or measure) lets
 * go of the ones it discarded, made or not; a close writes what it holds and
 * lets go of it, also when that last write fails. */
static int later_case(lm_wal_io io) {
  tmpdir t;
  int made = case_dir(io, &t);
  if (made != 0) return made;
  fault_plan plan = {.err = EIO};
  lm_wal_options o = opts(&t, io, 0);
  o.fault = fault_hook;
  o.fault_arg = &plan;
  laminar_error err;
  lm_wal* wal;
  later_arg a[64];
  lm_wal_ticket last;
  CHECK_CODE(lm_wal_open(&o, &wal, NULL, &err), LAMINAR_OK, &err);
  CHECK_CODE(append_mixed(wal, a, 1, 20, &last, &err), LAMINAR_OK, &err);
  for (uint64_t i = 1; i <= 20; i += 2) EXPECT(a[i].measured == 0 && a[i].released == 0);
  CHECK_CODE(lm_wal_commit(wal, last, true, &err), LAMINAR_OK, &err);
  for (uint64_t i = 1; i <= 20; i += 2)
    EXPECT(a[i].measured == 1 && a[i].filled == 1 && a[i].released == 1);
  int rc = check_replay(wal, 1, 20);

  /* A failed write: 21..30 discarded, each later one let go once; the same
   * numbers go in again after, and records appended later still work. */
  CHECK_CODE(append_mixed(wal, a, 21, 30, &last, &err), LAMINAR_OK, &err);
  plan.fail_write_at = plan.write_calls + 1;
  CHECK_CODE(lm_wal_commit(wal, last, true, &err), LAMINAR_ERR_IO, &err);
  for (uint64_t i = 21; i <= 30; i += 2) EXPECT(a[i].released == 1 && a[i].filled <= 1);
  EXPECT(lm_wal_next_seq(wal) == 21);
  CHECK_CODE(append_mixed(wal, a, 21, 30, &last, &err), LAMINAR_OK, &err);
  CHECK_CODE(lm_wal_commit(wal, last, true, &err), LAMINAR_OK, &err);
  for (uint64_t i = 21; i <= 30; i += 2) EXPECT(a[i].filled == 1 && a[i].released == 1);
  rc |= check_replay(wal, 1, 30);

  /* A measure that cannot (out of memory) fails the write like a failed
   * write: 31..36 discarded, each later one let go once, none filled after
   * it; then the same numbers again. */
  CHECK_CODE(append_mixed(wal, a, 31, 36, &last, &err), LAMINAR_OK, &err);
  a[33].fail = true;
  CHECK_CODE(lm_wal_commit(wal, last, true, &err), LAMINAR_ERR_IO, &err);
  EXPECT(strstr(err.message, strerror(ENOMEM)) != NULL);
  for (uint64_t i = 31; i <= 36; i += 2) EXPECT(a[i].released == 1 && a[i].filled == 0);
  EXPECT(lm_wal_next_seq(wal) == 31);
  rc |= check_replay(wal, 1, 30);

  /* A close writes what it holds... */
  CHECK_CODE(append_mixed(wal, a, 31, 36, &last, &err), LAMINAR_OK, &err);
  CHECK_CODE(lm_wal_close(wal, &err), LAMINAR_OK, &err);
  for (uint64_t i = 31; i <= 36; i += 2) EXPECT(a[i].filled == 1 && a[i].released == 1);
  CHECK_CODE(lm_wal_open(&o, &wal, NULL, &err), LAMINAR_OK, &err);
  rc |= check_replay(wal, 1, 36);
  /* ...and lets go of it when that write fails. */
  CHECK_CODE(append_mixed(wal, a, 37, 46, &last, &err), LAMINAR_OK, &err);
  plan.fail_write_at = plan.write_calls + 1;
  CHECK_CODE(lm_wal_close(wal, &err), LAMINAR_ERR_IO, &err);
  for (uint64_t i = 37; i <= 46; i += 2) EXPECT(a[i].released == 1);
  lm_wal_report rep;
  o.fault = NULL;
  CHECK_CODE(lm_wal_open(&o, &wal, &rep, &err), LAMINAR_OK, &err);
  EXPECT(rep.records == 36);
  rc |= check_replay(wal, 1, 36);
  lm_wal_close(wal, NULL);
  tmpdir_remove(&t);
  return rc;
}

#ifdef LAMINAR_FAULT_INJECTION
/* Every allocation of a commit that makes later records failing in turn: the
 * commit fails or succeeds, each later record is let go exactly once either
 * way, and the log works on after (what it kept replays, in order). */
static int later_oom_case(lm_wal_io io) {
  int rc = 0;
  for (int64_t nth = 1; nth <= 4; nth++) {
    tmpdir t;
    int made = case_dir(io, &t);
    if (made != 0) return made;
    lm_wal_options o = opts(&t, io, 0);
    laminar_error err;
    lm_wal* wal;
    later_arg a[16];
    lm_wal_ticket last;
    CHECK_CODE(lm_wal_open(&o, &wal, NULL, &err), LAMINAR_OK, &err);
    CHECK_CODE(append_mixed(wal, a, 1, 5, &last, &err), LAMINAR_OK, &err);
    lm_fault_alloc_set(nth, false);
    laminar_code crc = lm_wal_commit(wal, last, true, &err);
    lm_fault_alloc_set(0, false);
    EXPECT(crc == LAMINAR_OK || crc == LAMINAR_ERR_IO || crc == LAMINAR_ERR_NOMEM);
    for (uint64_t i = 1; i <= 5; i += 2)
      EXPECT(a[i].released == (crc == LAMINAR_ERR_NOMEM ? 0 : 1));
    if (crc == LAMINAR_ERR_NOMEM) { /* before it took anything: they are still to write */
      CHECK_CODE(lm_wal_commit(wal, last, true, &err), LAMINAR_OK, &err);
      for (uint64_t i = 1; i <= 5; i += 2) EXPECT(a[i].filled == 1 && a[i].released == 1);
    }
    uint64_t kept = lm_wal_next_seq(wal) - 1; /* 5, or 0 after a failed write */
    EXPECT(kept == 5 || (crc == LAMINAR_ERR_IO && kept == 0));
    CHECK_CODE(append_mixed(wal, a, kept + 1, kept + 5, &last, &err), LAMINAR_OK, &err);
    CHECK_CODE(lm_wal_commit(wal, last, true, &err), LAMINAR_OK, &err);
    rc |= check_replay(wal, 1, kept + 5);
    CHECK_CODE(lm_wal_close(wal, &err), LAMINAR_OK, &err);
    tmpdir_remove(&t);
  }
  return rc;
}
#else
static int later_oom_case(lm_wal_io io) {
  (void)io;
  return lm_test_skip(
      "built without LAMINAR_FAULT_INJECTION (scripts/test.sh step 2 has it)");
}
#endif

/* ---- records of megabytes ------------------------------------------------------ */

/* Big records, some appended in full and some made later, committed at once:
 * the log's buffers grow past the size from which they are huge-page backed
 * (wal.c), the write is megabytes long, and every byte replays. */
#define BIG_LEN ((uint32_t)700000)
#define BIG_N 12

static uint8_t big_byte(uint64_t seq, uint32_t k) {
  return (uint8_t)(seq * 131u + k * 7u + (k >> 9));
}

static uint32_t big_measure(void* arg, uint16_t* type) {
  (void)arg;
  *type = 2;
  return BIG_LEN;
}

static void big_fill(void* arg, uint8_t* dst) {
  uint64_t seq = *(const uint64_t*)arg;
  for (uint32_t k = 0; k < BIG_LEN; k++) dst[k] = big_byte(seq, k);
}

static void big_release(void* arg) { (void)arg; }

static const lm_wal_later_ops big_ops = {big_measure, big_fill, big_release};

typedef struct big_check {
  uint64_t count;
  int bad;
} big_check;

static laminar_code big_verify(void* arg, const lm_wal_record* r, laminar_error* err) {
  (void)err;
  big_check* c = arg;
  const uint8_t* p = r->payload;
  bool ok = r->seq == c->count + 1 && r->len == BIG_LEN && r->type == 2;
  for (uint32_t k = 0; ok && k < BIG_LEN; k++) ok = p[k] == big_byte(r->seq, k);
  if (!ok) c->bad++;
  c->count++;
  return LAMINAR_OK;
}

static int large_case(lm_wal_io io) {
  tmpdir t;
  int made = case_dir(io, &t);
  if (made != 0) return made;
  laminar_error err;
  lm_wal* wal;
  lm_wal_options o = opts(&t, io, 0);
  CHECK_CODE(lm_wal_open(&o, &wal, NULL, &err), LAMINAR_OK, &err);
  uint8_t* rec = malloc(BIG_LEN);
  CHECK(rec != NULL);
  uint64_t seqs[BIG_N + 1];
  lm_wal_ticket last = {0};
  for (uint64_t i = 1; i <= BIG_N; i++) {
    seqs[i] = i;
    laminar_code rc;
    if (i % 3 == 0) {
      rc = lm_wal_append_later(wal, 0, BIG_LEN, &big_ops, &seqs[i], &last, &err);
    } else {
      for (uint32_t k = 0; k < BIG_LEN; k++) rec[k] = big_byte(i, k);
      rc = lm_wal_append(wal, 2, 0, rec, BIG_LEN, &last, &err);
    }
    if (rc != LAMINAR_OK) free(rec);
    CHECK_CODE(rc, LAMINAR_OK, &err);
  }
  free(rec);
  CHECK_CODE(lm_wal_commit(wal, last, true, &err), LAMINAR_OK, &err);
  CHECK_CODE(lm_wal_close(wal, &err), LAMINAR_OK, &err);
  lm_wal_report rep;
  CHECK_CODE(lm_wal_open(&o, &wal, &rep, &err), LAMINAR_OK, &err);
  EXPECT(rep.records == BIG_N && !rep.cut);
  big_check c = {0};
  CHECK_CODE(lm_wal_replay(wal, 1, big_verify, &c, &err), LAMINAR_OK, &err);
  EXPECT(c.count == BIG_N && c.bad == 0);
  lm_wal_close(wal, NULL);
  tmpdir_remove(&t);
  return c.count == BIG_N && c.bad == 0 ? 0 : 1;
}

static int write_eio(lm_wal_io io) { return fault_case(io, false, EIO); }
static int write_enospc(lm_wal_io io) { return fault_case(io, false, ENOSPC); }
static int sync_eio(lm_wal_io io) { return fault_case(io, true, EIO); }

BOTH(roundtrip, roundtrip)
BOTH(damage, all_damage)
BOTH(write_eio, write_eio)
BOTH(write_enospc, write_enospc)
BOTH(sync_eio, sync_eio)
BOTH(group_commit, group_commit)
BOTH(alloc_enospc, alloc_enospc)
BOTH(later, later_case)
BOTH(later_oom, later_oom_case)
BOTH(large, large_case)

#define CASES(name)                                                               \
  {#name "_uring", test_##name##_uring}, {#name "_pwrite", test_##name##_pwrite}, \
      {#name "_uring_buffered", test_##name##_uring_buffered}, {                  \
#name "_pwrite_buffered", test_##name##_pwrite_buffered                       \
  }

static const lm_test_case cases[] = {
    {"crc32c", test_crc32c},
    {"crc32c_streams", test_crc32c_streams},
    {"bad_open", test_bad_open},
    CASES(roundtrip),
    CASES(damage),
    CASES(write_eio),
    CASES(write_enospc),
    CASES(sync_eio),
    CASES(group_commit),
    CASES(alloc_enospc),
    CASES(later),
    CASES(later_oom),
    CASES(large),
    {NULL, NULL},
};

int main(int argc, char** argv) { return lm_test_main(argc, argv, cases); }
