/*
 * test_store_powerloss.c -- the WAL under simulated power loss (RELIABILITY
 * "power loss"): kill -9 keeps the page cache, a power cut does not. The WAL
 * reports each flush it completes (lm_wal_options.observe); a random workload
 * of sync and async commits over small segments is stopped at a random
 * moment, and every file is rewound to what a power cut could leave: bytes up
 * to the file's last flush kept, the unflushed rest of each file zeroed page by
 * page at random (some pages reached the disk, some did not, one may be
 * garbage), files whose creation no directory flush covered removed. Reopened,
 * the log must hold every record whose sync commit returned OK, as a valid
 * prefix. 40 seeded runs per I/O path (io_uring, pwrite), each with direct
 * I/O (O_DIRECT where the file system takes it) and buffered; then the test of the test: a WAL that
 * skips its flushes (LM_WAL_FAULT_PRETEND) must be caught losing records.
 */
/* lm_ctest: TIMEOUT 120 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE  // mkdtemp under -std=c17
#endif

#include "store/wal.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lm_test.h"
#include "lm_test_fs.h"

#define MAX_FILES 256

typedef struct file_state {
  char path[512];
  uint64_t durable_size; /* bytes covered by the file's last flush */
  bool created_durable;  /* a directory flush happened after it was first seen */
  bool seen;
} file_state;

typedef struct tracker {
  file_state files[MAX_FILES];
  int n;
} tracker;

static file_state* track(tracker* t, const char* path) {
  for (int i = 0; i < t->n; i++)
    if (strcmp(t->files[i].path, path) == 0) return &t->files[i];
  if (t->n == MAX_FILES) return NULL;
  file_state* f = &t->files[t->n++];
  memset(f, 0, sizeof *f);
  snprintf(f->path, sizeof f->path, "%s", path);
  f->seen = true;
  return f;
}

static void on_event(void* arg, lm_wal_event ev, const char* path, uint64_t size) {
  tracker* t = arg;
  if (ev == LM_WAL_EVENT_FILE_SYNCED) {
    file_state* f = track(t, path);
    if (f != NULL && size > f->durable_size) f->durable_size = size;
  } else {
    for (int i = 0; i < t->n; i++) t->files[i].created_durable = true;
  }
}

typedef struct pretend_plan {
  int syncs;
  int honest; /* this many flushes happen; later ones are skipped */
} pretend_plan;

static int pretend_hook(void* arg, lm_wal_fault_op op) {
  pretend_plan* p = arg;
  if (op != LM_WAL_FAULT_SYNC) return 0;
  return ++p->syncs > p->honest ? LM_WAL_FAULT_PRETEND : 0;
}

static uint64_t rnd_state;
static uint64_t rnd(void) {
  rnd_state ^= rnd_state << 13;
  rnd_state ^= rnd_state >> 7;
  rnd_state ^= rnd_state << 17;
  return rnd_state;
}

static uint32_t payload(uint64_t seq, uint8_t* buf) {
  uint32_t len = (uint32_t)((seq * 53u) % 700u);
  for (uint32_t k = 0; k < len; k++) buf[k] = (uint8_t)(seq * 11u + k * 3u);
  return len;
}

/* Whole file content (caller frees), *n its length. */
static uint8_t* slurp(const char* path, size_t* n) {
  int fd = open(path, O_RDONLY);
  if (fd < 0) return NULL;
  struct stat st;
  fstat(fd, &st);
  uint8_t* p = malloc((size_t)st.st_size + 1);
  ssize_t r = pread(fd, p, (size_t)st.st_size, 0);
  close(fd);
  *n = r > 0 ? (size_t)r : 0;
  return p;
}

typedef struct snapshot {
  char path[512];
  uint8_t* data;
  size_t len;
} snapshot;


typedef struct verify_state {
  uint64_t next;
  int bad;
} verify_state;

static laminar_code verify(void* arg, const lm_wal_record* r, laminar_error* err) {
  (void)err;
  verify_state* v = arg;
  uint8_t buf[1024];
  uint32_t len = payload(r->seq, buf);
  if (r->seq != v->next || r->len != len || memcmp(r->payload, buf, len) != 0) v->bad++;
  v->next = r->seq + 1;
  return LAMINAR_OK;
}

/* One run: returns 0 when every acknowledged record survived, 2 when some
 * were lost, 1 on a harness failure. */
static int one_run(lm_wal_io io, lm_wal_direct direct, uint64_t seed,
                   pretend_plan* pretend, uint64_t* out_lost) {
  rnd_state = seed * 2654435761u + 1;
  char dir[64];
  CHECK(lm_test_mkdtemp_disk(dir, sizeof dir, "lm_pl_") == 0);
  tracker tr = {0};
  /* Direct I/O writes at least a 4 KiB block per commit: larger segments. */
  uint64_t seg = (4096 + rnd() % 8192) *
                 (direct == LM_WAL_DIRECT_OFF || io == LM_WAL_IO_URING ? 1 : 16);
  lm_wal_options o = {.dir = dir,
                      .segment_bytes = seg,
                      .io = io,
                      .direct = direct,
                      .observe = on_event,
                      .observe_arg = &tr};
  if (pretend != NULL) {
    o.fault = pretend_hook;
    o.fault_arg = pretend;
  }
  laminar_error err;
  lm_wal* wal;
  if (lm_wal_open(&o, &wal, NULL, &err) != LAMINAR_OK) {
    lm_test_rmdir(dir);
    return io == LM_WAL_IO_URING ? LM_TEST_SKIP : 1;
  }
  /* The workload, stopped after a random number of commits. */
  uint64_t acked = 0;
  int ops = 20 + (int)(rnd() % 200);
  uint8_t buf[1024];
  for (int i = 0; i < ops; i++) {
    uint64_t seq = lm_wal_next_seq(wal);
    uint32_t len = payload(seq, buf);
    lm_wal_ticket t;
    CHECK_CODE(lm_wal_append(wal, 1, 0, buf, len, &t, &err), LAMINAR_OK, &err);
    bool sync = rnd() % 3 == 0;
    if (rnd() % 4 != 0) { /* sometimes leave it appended only */
      CHECK_CODE(lm_wal_commit(wal, t, sync, &err), LAMINAR_OK, &err);
      if (sync) acked = t.seq;
    }
  }
  /* The power cut: what each file holds now, and what of it is durable. */
  snapshot snaps[MAX_FILES];
  int nsnap = 0;
  DIR* d = opendir(dir);
  struct dirent* e;
  while (d != NULL && (e = readdir(d)) != NULL && nsnap < MAX_FILES) {
    if (e->d_name[0] == '.') continue;
    snapshot* s = &snaps[nsnap++];
    snprintf(s->path, sizeof s->path, "%s/%s", dir, e->d_name);
    s->data = slurp(s->path, &s->len);
  }
  if (d != NULL) closedir(d);
  tracker at_cut = tr;
  lm_wal_close(wal, NULL); /* whatever it writes now happens after the cut */

  /* Rewind. Files the WAL made after the cut go; so do files no directory
   * flush covered. The rest: durable prefix kept, unflushed pages random. */
  d = opendir(dir);
  char p[600];
  while (d != NULL && (e = readdir(d)) != NULL) {
    if (e->d_name[0] == '.') continue;
    snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
    bool known = false;
    for (int i = 0; i < nsnap; i++) known |= strcmp(snaps[i].path, p) == 0;
    if (!known) unlink(p);
  }
  if (d != NULL) closedir(d);
  for (int i = 0; i < nsnap; i++) {
    snapshot* s = &snaps[i];
    file_state* f = NULL;
    for (int k = 0; k < at_cut.n; k++)
      if (strcmp(at_cut.files[k].path, s->path) == 0) f = &at_cut.files[k];
    if (f == NULL || !f->created_durable) {
      unlink(s->path);
      free(s->data);
      continue;
    }
    uint64_t keep = f->durable_size < s->len ? f->durable_size : s->len;
    bool garbage_done = false;
    for (uint64_t page = keep & ~(uint64_t)4095; page < s->len; page += 4096) {
      uint64_t from = page < keep ? keep : page;
      uint64_t to = page + 4096 < s->len ? page + 4096 : s->len;
      uint64_t r = rnd() % 8;
      if (r < 4) continue;           /* this page reached the disk */
      if (r == 7 && !garbage_done) { /* a torn, scrambled page */
        for (uint64_t b = from; b < to; b++) s->data[b] = (uint8_t)rnd();
        garbage_done = true;
      } else {
        memset(s->data + from, 0, to - from); /* it did not */
      }
    }
    int fd = open(s->path, O_WRONLY | O_TRUNC);
    CHECK(fd >= 0);
    CHECK(write(fd, s->data, s->len) == (ssize_t)s->len);
    close(fd);
    free(s->data);
  }

  /* Recovery. */
  lm_wal_report rep;
  o.fault = NULL;
  o.observe = NULL;
  CHECK_CODE(lm_wal_open(&o, &wal, &rep, &err), LAMINAR_OK, &err);
  verify_state v = {.next = 1};
  CHECK_CODE(lm_wal_replay(wal, 1, verify, &v, &err), LAMINAR_OK, &err);
  lm_wal_close(wal, NULL);
  lm_test_rmdir(dir);
  CHECK(v.bad == 0); /* a prefix, every record intact */
  CHECK(v.next - 1 == rep.last_seq);
  *out_lost = rep.last_seq < acked ? acked - rep.last_seq : 0;
  return *out_lost > 0 ? 2 : 0;
}

static int runs(lm_wal_io io, lm_wal_direct direct) {
  uint64_t seed = lm_test_seed();
  int n = 40;
  for (int i = 0; i < n; i++) {
    uint64_t lost = 0;
    int rc = one_run(io, direct, seed + (uint64_t)i, NULL, &lost);
    if (rc == LM_TEST_SKIP) return rc;
    if (rc != 0) {
      fprintf(stderr, "run %d (seed %llu): %llu acknowledged records lost\n", i,
              (unsigned long long)(seed + (uint64_t)i), (unsigned long long)lost);
      return 1;
    }
  }
  fprintf(stderr, "powerloss %s%s: runs=%d lost=0\n",
          io == LM_WAL_IO_URING ? "io_uring" : "pwrite",
          direct == LM_WAL_DIRECT_OFF ? " buffered" : "", n);
  return 0;
}

/* The test of the test: with flushes skipped (after the first few, so the
 * segments exist) the simulation must show acknowledged records lost. */
static int test_skipped_flush_is_caught(void) {
  uint64_t seed = lm_test_seed();
  int caught = 0;
  for (int i = 0; i < 10; i++) {
    pretend_plan plan = {.honest = 2};
    uint64_t lost = 0;
    int rc = one_run(LM_WAL_IO_PWRITE, LM_WAL_DIRECT_AUTO, seed + 1000 + (uint64_t)i,
                     &plan, &lost);
    CHECK(rc == 0 || rc == 2);
    caught += rc == 2;
  }
  fprintf(stderr, "skipped flushes caught in %d of 10 runs\n", caught);
  CHECK(caught >= 5);
  return 0;
}

static int test_powerloss_uring(void) {
  return runs(LM_WAL_IO_URING, LM_WAL_DIRECT_AUTO);
}
static int test_powerloss_pwrite(void) {
  return runs(LM_WAL_IO_PWRITE, LM_WAL_DIRECT_AUTO);
}
static int test_powerloss_uring_buffered(void) {
  return runs(LM_WAL_IO_URING, LM_WAL_DIRECT_OFF);
}
static int test_powerloss_pwrite_buffered(void) {
  return runs(LM_WAL_IO_PWRITE, LM_WAL_DIRECT_OFF);
}

static const lm_test_case cases[] = {
    {"powerloss_uring", test_powerloss_uring},
    {"powerloss_pwrite", test_powerloss_pwrite},
    {"powerloss_uring_buffered", test_powerloss_uring_buffered},
    {"powerloss_pwrite_buffered", test_powerloss_pwrite_buffered},
    {"skipped_flush_is_caught", test_skipped_flush_is_caught},
    {NULL, NULL},
};

int main(int argc, char** argv) { return lm_test_main(argc, argv, cases); }
