/*
 * wal.c -- segment files, record framing, group commit, io_uring or pwrite,
 * recovery scan (see wal.h for the contract and the on-disk format).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE  // O_CLOEXEC, fdatasync, dirfd under -std=c17
#endif

#include "store/wal.h"

#include <assert.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#ifdef LAMINAR_HAVE_URING
#include <liburing.h>
#endif

#include "store/crc32c.h"
#include "store/fs.h"
#include "util/util.h"

#define SEG_MAGIC "LMWALSG1"
#define SEG_VERSION 1u
#define SEG_HEADER 32u
#define REC_HEADER 32u
#define DEFAULT_SEGMENT_BYTES (16ull << 20)
#define NAME_DIGITS 20
/* Direct I/O writes whole blocks of this size at multiples of it, from memory
 * aligned to it (4 KiB covers 512-byte and 4 KiB logical sectors). */
#define DIO_BLOCK 4096u
/* Room kept free after the appended records for the padding record. */
#define PAD_SLACK (DIO_BLOCK + REC_HEADER)

/* A record appended with lm_wal_append_later: only its sequence number is
 * taken when it is appended. Its place is `off`, the buffer's length then
 * (records appended in full after it come after it); the writer that takes
 * the buffer measures, fills and frames it there. */
typedef struct later_rec {
  size_t off;
  uint64_t seq, epoch;
  uint32_t max_len; /* what the appender promised */
  uint32_t len;     /* measured by the writer */
  uint16_t type;
  const lm_wal_later_ops* ops;
  void* arg;
} later_rec;

/* The records VOIDs of the log name (lm_wal_void), sorted: gathered when
 * the log is opened, read by its replay. */
typedef struct void_set {
  uint64_t* seqs;
  size_t n, cap;
} void_set;

typedef struct later_list {
  later_rec* items;
  size_t n, cap;
} later_list;

struct lm_wal {
  char* dir;
  int dir_fd;
  uint64_t segment_bytes;
  lm_wal_fault_fn fault;
  void* fault_arg;
  lm_wal_observe_fn observe;
  void* observe_arg;
  char seg_path[4096]; /* the active segment's path */
  bool use_uring;
  bool direct_ok; /* options allow O_DIRECT */
  bool direct;    /* the active segment's fd has O_DIRECT */
  uint8_t* blk;   /* one aligned block for segment headers */
#ifdef LAMINAR_HAVE_URING
  struct io_uring ring;
#endif

  pthread_mutex_t mu;
  pthread_cond_t cv;

  /* Appended and not yet taken by a writer (under mu). */
  uint8_t* buf;
  size_t len, cap;
  later_list later; /* records to be filled by the writer that takes buf */
  uint64_t buf_last_seq;
  uint64_t next_seq;
  uint32_t gen;        /* bumped by every failed write or flush */
  uint64_t* keep_upto; /* keep_upto[g]: last record of generation g that survived */
  uint32_t nkeep;

  /* The file side (changed only by the leader, flushing = true). */
  bool flushing;
  uint8_t* wbuf; /* the leader's batch (swapped with buf) */
  size_t wcap;
  later_list wlater; /* its later records (swapped with later) */
  uint8_t* obuf;     /* the leader's batch with its later records filled in */
  size_t ocap;
  uint64_t written_seq;
  uint64_t synced_seq;
  int fd;               /* active segment */
  uint64_t file_size;   /* bytes written to the active segment */
  uint64_t synced_size; /* bytes of it on stable storage */
  bool must_roll;       /* a flush failed: continue in a fresh segment */
  bool strict;
  uint64_t covered; /* lm_wal_options.covered */
  void_set voids;   /* filled at open (recover), read by replays */
};

/* ---- buffers --------------------------------------------------------------- */

/* Buffers from this size on are aligned to, and asked to be backed by, huge
 * pages: a direct write from physically contiguous memory goes to the device
 * in a few large segments instead of one per 4 KiB page. */
#define HUGE_PAGE ((size_t)2 << 20)

/* Make *b (DIO_BLOCK-aligned, *len bytes used) hold at least `need` bytes. */
static bool buf_reserve(uint8_t** b, size_t* cap, size_t len, size_t need) {
  if (need <= *cap) return true;
  size_t c = *cap ? *cap : 1u << 16;
  while (c < need) c *= 2;
  uint8_t* nb = lm_malloc_aligned(c >= HUGE_PAGE ? HUGE_PAGE : DIO_BLOCK, c);
  if (nb == NULL) return false;
  if (c >= HUGE_PAGE) (void)madvise(nb, c, MADV_HUGEPAGE); /* a hint: may be refused */
  if (len > 0) memcpy(nb, *b, len);
  lm_free(*b);
  *b = nb;
  *cap = c;
  return true;
}

/* ---- little-endian encoding ----------------------------------------------- */

static uint64_t pad8(uint64_t n) { return (n + 7u) & ~(uint64_t)7u; }

/* Record header: len u32 | crc u32 | seq u64 | epoch u64 | type u16 | flags u16 |
 * reserved u32. The CRC covers bytes 8..32 and the payload. */
static uint32_t record_crc(const uint8_t* hdr, const void* payload, uint32_t len) {
  return lm_crc32c(lm_crc32c(0, hdr + 8, REC_HEADER - 8), payload, len);
}

/* Frame a record whose payload (len bytes) is already at h + REC_HEADER: the
 * header, the zero padding to 8 bytes, the CRC. Returns the record's size. */
static uint64_t frame_record(uint8_t* h, uint32_t len, uint64_t seq, uint64_t epoch,
                             uint16_t type) {
  uint64_t total = REC_HEADER + pad8(len);
  lm_le_put32(h, len);
  lm_le_put64(h + 8, seq);
  lm_le_put64(h + 16, epoch);
  h[24] = (uint8_t)type;
  h[25] = (uint8_t)(type >> 8);
  memset(h + 26, 0, 6);
  memset(h + REC_HEADER + len, 0, (size_t)(total - REC_HEADER - len));
  lm_le_put32(h + 4, record_crc(h, h + REC_HEADER, len));
  return total;
}

/* Fill p[n ..) up to the next DIO_BLOCK boundary with one padding record
 * (zero payload); p has PAD_SLACK bytes of room after n, n is a multiple of 8.
 * Returns the bytes added (0 when n is on a boundary). */
static size_t pad_to_block(uint8_t* p, size_t n) {
  size_t add = (DIO_BLOCK - n % DIO_BLOCK) % DIO_BLOCK;
  if (add == 0) return 0;
  if (add < REC_HEADER) add += DIO_BLOCK;
  uint32_t len = (uint32_t)(add - REC_HEADER);
  memset(p + n + REC_HEADER, 0, len);
  frame_record(p + n, len, 0, 0, (uint16_t)LM_WAL_TYPE_PAD);
  return add;
}

/* Let go of later records that will never be written (discarded, closed). */
static void drop_later(later_list* l) {
  for (size_t i = 0; i < l->n; i++) l->items[i].ops->release(l->items[i].arg);
  l->n = 0;
}

/* The leader's batch b (n bytes) with its later records l measured, filled
 * and framed in their places, into wal->obuf; every record's argument is let
 * go. Returns the batch's new size, or 0 with *oom when out of memory here or
 * in a measure (then nothing was let go). */
static size_t fill_later(lm_wal* wal, const uint8_t* b, size_t n, later_list* l,
                         bool* oom) {
  *oom = false;
  size_t total = n;
  for (size_t i = 0; i < l->n; i++) {
    later_rec* r = &l->items[i];
    r->len = r->ops->measure(r->arg, &r->type);
    if (r->len == LM_WAL_MEASURE_FAILED) {
      *oom = true;
      return 0;
    }
    assert(r->len <= r->max_len && r->type != LM_WAL_TYPE_PAD);
    total += REC_HEADER + pad8(r->len);
  }
  if (!buf_reserve(&wal->obuf, &wal->ocap, 0, total + PAD_SLACK)) {
    *oom = true;
    return 0;
  }
  size_t at = 0, from = 0;
  for (size_t i = 0; i <= l->n; i++) {
    /* The records appended in full before later record i (or the end). */
    size_t upto = i < l->n ? l->items[i].off : n;
    if (upto > from) memcpy(wal->obuf + at, b + from, upto - from);
    at += upto - from;
    from = upto;
    if (i == l->n) break;
    later_rec* r = &l->items[i];
    uint8_t* h = wal->obuf + at;
    if (r->len > 0) r->ops->fill(r->arg, h + REC_HEADER);
    at += frame_record(h, r->len, r->seq, r->epoch, r->type);
    r->ops->release(r->arg);
  }
  l->n = 0;
  return at;
}

static void segment_header(uint8_t* h, uint64_t first_seq) {
  memset(h, 0, SEG_HEADER);
  memcpy(h, SEG_MAGIC, 8);
  lm_le_put64(h + 8, first_seq);
  lm_le_put32(h + 16, SEG_VERSION);
  lm_le_put32(h + 24, lm_crc32c(0, h, 24));
}

static void segment_path(const lm_wal* wal, uint64_t first_seq, char* out, size_t n) {
  snprintf(out, n, "%s/%0*" PRIu64 ".wal", wal->dir, NAME_DIGITS, first_seq);
}

/* The file name part of a segment path made by segment_path(). */
static const char* base_name(const lm_wal* wal, const char* path) {
  return path + strlen(wal->dir) + 1;
}

/* ---- file operations ------------------------------------------------------ */

static laminar_code io_error(laminar_error* err, const char* what, const char* dir,
                             int e) {
  return lm_error_set(err, LAMINAR_ERR_IO, "WAL '%s': %s failed: %s", dir, what,
                      strerror(e));
}

/* A segment could not be created: LAMINAR_ERR_IO naming its file. One
 * already there is never truncated (segment_create uses O_EXCL): a file this
 * log did not write holds the name. */
static laminar_code segment_error(const lm_wal* wal, laminar_error* err,
                                  uint64_t first_seq, int e) {
  char path[4096];
  segment_path(wal, first_seq, path, sizeof path);
  if (e == EEXIST)
    return lm_error_set(
        err, LAMINAR_ERR_IO,
        "WAL '%s': segment %s already exists; it was not overwritten (this log "
        "did not write it: move it away)",
        wal->dir, path);
  return lm_error_set(err, LAMINAR_ERR_IO, "WAL '%s': create segment %s failed: %s",
                      wal->dir, path, strerror(e));
}

static int inject(lm_wal* wal, lm_wal_fault_op op) {
  int e = lm_fault_io(); /* test builds: the thread's I/O countdown */
  if (e != 0) return e;
  return wal->fault != NULL ? wal->fault(wal->fault_arg, op) : 0;
}

static void observe(lm_wal* wal, lm_wal_event ev, const char* path, uint64_t size) {
  if (wal->observe != NULL) wal->observe(wal->observe_arg, ev, path, size);
}

static int dir_sync(lm_wal* wal) {
  int e = lm_fault_io();
  if (e != 0) return e;
  if (fsync(wal->dir_fd) != 0) return errno;
  observe(wal, LM_WAL_EVENT_DIR_SYNCED, wal->dir, 0);
  return 0;
}


#ifdef LAMINAR_HAVE_URING
/* One write (and, linked behind it, one fdatasync) through the ring. Returns 0
 * or an errno; a short write is finished with further submissions. */
static int uring_write(lm_wal* wal, int fd, const uint8_t* p, size_t n, uint64_t off,
                       bool sync) {
  while (n > 0 || sync) {
    int want = 0;
    if (n > 0) {
      struct io_uring_sqe* sqe = io_uring_get_sqe(&wal->ring);
      if (sqe == NULL) return EBUSY;
      io_uring_prep_write(sqe, fd, p, (unsigned)(n > (1u << 30) ? (1u << 30) : n), off);
      if (sync) sqe->flags |= IOSQE_IO_LINK;
      sqe->user_data = 1;
      want++;
    }
    if (sync) {
      struct io_uring_sqe* sqe = io_uring_get_sqe(&wal->ring);
      if (sqe == NULL) return EBUSY;
      io_uring_prep_fsync(sqe, fd, IORING_FSYNC_DATASYNC);
      sqe->user_data = 2;
      want++;
    }
    int rc = io_uring_submit_and_wait(&wal->ring, (unsigned)want);
    if (rc < 0) return -rc;
    int wrote = -1, synced = -1;
    for (int i = 0; i < want; i++) {
      struct io_uring_cqe* cqe;
      rc = io_uring_wait_cqe(&wal->ring, &cqe);
      if (rc < 0) return -rc;
      if (cqe->user_data == 1)
        wrote = cqe->res;
      else
        synced = cqe->res;
      io_uring_cqe_seen(&wal->ring, cqe);
    }
    if (n > 0) {
      if (wrote < 0) return -wrote;
      p += wrote;
      n -= (size_t)wrote;
      off += (uint64_t)wrote;
      if (n > 0) continue; /* short write: the linked flush was cancelled */
    }
    if (sync) {
      if (synced < 0 && synced != -ECANCELED) return -synced;
      if (synced == 0) return 0;
    }
    if (!sync) return 0;
  }
  return 0;
}
#endif

/* Write n bytes at off of the active segment, then fdatasync when asked. */
static int file_write(lm_wal* wal, const uint8_t* p, size_t n, uint64_t off, bool sync) {
  int e = inject(wal, LM_WAL_FAULT_WRITE);
  if (e != 0) { /* a device failing midway (in whole blocks under O_DIRECT) */
    (void)lm_fs_pwrite_all(wal->fd, p,
                           wal->direct ? n / 2 & ~(size_t)(DIO_BLOCK - 1) : n / 2, off);
    return e;
  }
  if (sync && (e = inject(wal, LM_WAL_FAULT_SYNC)) != 0) {
    if (e == LM_WAL_FAULT_PRETEND) return lm_fs_pwrite_all(wal->fd, p, n, off);
    (void)lm_fs_pwrite_all(wal->fd, p, n, off);
    return e;
  }
#ifdef LAMINAR_HAVE_URING
  if (wal->use_uring)
    e = uring_write(wal, wal->fd, p, n, off, sync);
  else
#endif
  {
    e = lm_fs_pwrite_all(wal->fd, p, n, off);
    if (e == 0 && sync && fdatasync(wal->fd) != 0) e = errno;
  }
  if (e == 0 && sync) observe(wal, LM_WAL_EVENT_FILE_SYNCED, wal->seg_path, off + n);
  return e;
}

static int file_sync(lm_wal* wal) {
  int e = inject(wal, LM_WAL_FAULT_SYNC);
  if (e == LM_WAL_FAULT_PRETEND) return 0;
  if (e != 0) return e;
  if (fdatasync(wal->fd) != 0) return errno;
  observe(wal, LM_WAL_EVENT_FILE_SYNCED, wal->seg_path, wal->file_size);
  return 0;
}

/* Open a segment file for writing, with O_DIRECT when the options allow it,
 * the file system takes it and `aligned` (appends will start on a block
 * boundary). *direct tells which. -1 and errno on failure. */
static int open_segment(const lm_wal* wal, const char* path, int flags, bool aligned,
                        bool* direct) {
  *direct = false;
  if (wal->direct_ok && aligned) {
    int fd = open(path, flags | O_DIRECT | O_CLOEXEC, 0644);
    if (fd >= 0) {
      *direct = true;
      return fd;
    }
    if (errno != EINVAL) return -1;
  }
  return open(path, flags | O_CLOEXEC, 0644);
}

/* Create segment `first_seq` (header written and flushed, directory flushed)
 * and make it the active one. Under O_DIRECT the header fills its first block
 * with a padding record; a file system that accepts the flag at open but not
 * the write gets the buffered form. */
static int segment_create(lm_wal* wal, uint64_t first_seq) {
  char path[4096];
  segment_path(wal, first_seq, path, sizeof path);
  bool direct;
  /* The active segment itself when a failure discarded every record it had
   * (the log goes on at its first number again): this log's own file, none
   * of its records kept. */
  if (wal->fd >= 0 && strcmp(path, wal->seg_path) == 0 && unlink(path) != 0 &&
      errno != ENOENT)
    return errno;
  /* O_EXCL: any other file already under the name is never truncated
   * (segment_error). */
  int fd = open_segment(wal, path, O_RDWR | O_CREAT | O_EXCL, true, &direct);
  if (fd < 0) return errno;
  int old = wal->fd;
  bool old_direct = wal->direct;
  char old_path[sizeof wal->seg_path];
  memcpy(old_path, wal->seg_path, sizeof old_path);
  wal->fd = fd;
  wal->direct = direct;
  snprintf(wal->seg_path, sizeof wal->seg_path, "%s", path);
  uint8_t* h = wal->blk;
  segment_header(h, first_seq);
  size_t hsize = SEG_HEADER + (direct ? pad_to_block(h, SEG_HEADER) : 0);
  /* Reserve the segment's space now, so a full disk shows here (a clean
   * failure) rather than halfway through a record. */
  int e = fallocate(fd, 0, 0, (off_t)wal->segment_bytes) != 0 ? errno : 0;
  if (e == EOPNOTSUPP || e == ENOSYS) e = 0;
  if (e == 0) e = inject(wal, LM_WAL_FAULT_ALLOCATE);
  if (e == 0) e = file_write(wal, h, hsize, 0, true);
  if (e == EINVAL && direct && fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_DIRECT) == 0) {
    wal->direct = false;
    hsize = SEG_HEADER;
    e = file_write(wal, h, hsize, 0, true);
  }
  if (e == 0) e = dir_sync(wal);
  if (e != 0) {
    close(fd);
    unlink(path);
    wal->fd = old;
    wal->direct = old_direct;
    memcpy(wal->seg_path, old_path, sizeof old_path);
    return e;
  }
  if (old >= 0) close(old);
  wal->file_size = wal->synced_size = hsize;
  wal->must_roll = false;
  return 0;
}

/* ---- the scan shared by open and replay ------------------------------------ */

typedef struct scan_result {
  uint64_t good;     /* bytes of the segment that hold valid data */
  uint64_t next_seq; /* expected after the last valid record */
  uint64_t records;
  bool bad;           /* stopped before the end */
  uint64_t zero_tail; /* zero bytes after the last record (clean end) */
  char why[96];
  /* Covered records skipped over damage (lm_wal_options.covered). */
  bool skipped;                   /* damage was skipped (appends go to a fresh segment) */
  uint64_t skip_first, skip_last; /* records lost to it (0: none) */
  char skip_why[128];             /* the first skip: offset and what was wrong */
} scan_result;

static bool all_zero(const uint8_t* p, uint64_t n) {
  uint64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    uint64_t w;
    memcpy(&w, p + i, 8);
    if (w != 0) return false;
  }
  for (; i < n; i++)
    if (p[i] != 0) return false;
  return true;
}

/* The damage at `off` (the next record expected: `expect`) lies among
 * records a checkpoint covers: the offset of the next whole record (its
 * frame and CRC check out) numbered expect..covered + 1 -- so every record
 * missing before it is covered --, or 0 when there is none in the image.
 * Records start at multiples of 8; a candidate is checked only when its
 * sequence number is in that range, so garbage costs a comparison. */
static uint64_t resync(const uint8_t* img, uint64_t size, uint64_t off, uint64_t expect,
                       uint64_t covered, uint64_t* out_seq) {
  for (uint64_t y = (off + 8) & ~(uint64_t)7; y + REC_HEADER <= size; y += 8) {
    const uint8_t* h = img + y;
    uint64_t seq = lm_le_get64(h + 8);
    if (seq < expect || seq > covered + 1) continue;
    uint32_t len = lm_le_get32(h);
    if (len > LM_WAL_MAX_RECORD || REC_HEADER + pad8(len) > size - y) continue;
    if ((uint16_t)(h[24] | h[25] << 8) == LM_WAL_TYPE_PAD) continue;
    if (lm_le_get32(h + 4) != record_crc(h, h + REC_HEADER, len)) continue;
    *out_seq = seq;
    return y;
  }
  return 0;
}

/* Note damage skipped in the segment, losing covered records
 * first..last (first 0: none, garbage between whole records). */
static void note_skip(scan_result* res, uint64_t first, uint64_t last, const char* why) {
  if (!res->skipped)
    snprintf(res->skip_why, sizeof res->skip_why, "%.96s%s", why,
             strstr(why, "offset") != NULL ? "" : " (header)");
  res->skipped = true;
  if (first == 0) return;
  if (res->skip_first == 0) res->skip_first = first;
  if (last > res->skip_last) res->skip_last = last;
}

/* Walk the records of one segment image from its header on; for each valid
 * record with seq >= from_seq call fn (NULL: none). Damage among records up
 * to `covered` is skipped when a whole record follows (resync); otherwise
 * the scan stops there (res->bad). */
static laminar_code scan_segment(const uint8_t* img, uint64_t size, uint64_t name_seq,
                                 uint64_t from_seq, uint64_t covered, lm_wal_replay_fn fn,
                                 void* arg, scan_result* res, laminar_error* err) {
  memset(res, 0, sizeof *res);
  res->next_seq = name_seq;
  uint64_t off = SEG_HEADER;
  if (size < SEG_HEADER || memcmp(img, SEG_MAGIC, 8) != 0 ||
      lm_le_get32(img + 24) != lm_crc32c(0, img, 24) ||
      lm_le_get64(img + 8) != name_seq || lm_le_get32(img + 16) != SEG_VERSION) {
    const char* what =
        size < SEG_HEADER ? "segment header torn" : "segment header invalid";
    uint64_t seq,
        at = name_seq <= covered ? resync(img, size, 0, name_seq, covered, &seq) : 0;
    if (at == 0) {
      res->bad = true;
      snprintf(res->why, sizeof res->why, "%s", what);
      return LAMINAR_OK;
    }
    if (seq > name_seq)
      note_skip(res, name_seq, seq - 1, what);
    else
      note_skip(res, 0, 0, what); /* the header alone: no record lost */
    res->next_seq = seq;
    off = at;
  }
  while (off < size) {
    const uint8_t* h = img + off;
    uint32_t len = size - off >= REC_HEADER ? lm_le_get32(h) : 0;
    uint64_t seq = size - off >= REC_HEADER ? lm_le_get64(h + 8) : 0;
    uint64_t total = REC_HEADER + pad8(len);
    char why[96] = "";
    if (size - off < REC_HEADER) {
      snprintf(why, sizeof why, "torn record header at offset %" PRIu64, off);
    } else if (all_zero(h, REC_HEADER)) {
      /* Clean end of the log (preallocated or never written space) — unless
       * data follows, which means a record was zeroed in place. */
      if (all_zero(h, size - off)) {
        res->zero_tail = size - off;
        break;
      }
      snprintf(why, sizeof why, "zeroed record at offset %" PRIu64 " before more data",
               off);
    } else if (len > LM_WAL_MAX_RECORD || total > size - off) {
      snprintf(why, sizeof why, "torn record at offset %" PRIu64 " (length %u)", off,
               len);
    } else if (lm_le_get32(h + 4) != record_crc(h, h + REC_HEADER, len)) {
      snprintf(why, sizeof why, "CRC mismatch at offset %" PRIu64, off);
    } else if ((uint16_t)(h[24] | h[25] << 8) == LM_WAL_TYPE_PAD) {
      off += total; /* padding to a block boundary (direct I/O) */
      continue;
    } else if (seq != res->next_seq) {
      snprintf(why, sizeof why,
               "record %" PRIu64 " at offset %" PRIu64 " where %" PRIu64 " was expected",
               seq, off, res->next_seq);
    }
    if (why[0] != '\0') {
      uint64_t found = 0,
               at = res->next_seq <= covered
                        ? resync(img, size, off, res->next_seq, covered, &found)
                        : 0;
      if (at == 0) {
        res->bad = true;
        snprintf(res->why, sizeof res->why, "%s", why);
        break;
      }
      if (found > res->next_seq)
        note_skip(res, res->next_seq, found - 1, why);
      else
        note_skip(res, 0, 0, why); /* garbage between whole records */
      res->next_seq = found;
      off = at;
      continue;
    }
    if (fn != NULL && seq >= from_seq) {
      lm_wal_record rec = {.seq = seq,
                           .epoch = lm_le_get64(h + 16),
                           .type = (uint16_t)(h[24] | h[25] << 8),
                           .len = len,
                           .payload = h + REC_HEADER};
      LM_TRY(fn(arg, &rec, err));
    }
    res->records++;
    res->next_seq++;
    off += total;
  }
  res->good = res->bad || res->zero_tail > 0 ? off : size;
  return LAMINAR_OK;
}

/* Map segment file `path` read-only and scan it (scan_segment); *out_size is
 * its size. Mapped, not read: a preallocated segment is mostly zero pages. */
static laminar_code scan_file(const char* path, uint64_t name_seq, uint64_t from_seq,
                              uint64_t covered, lm_wal_replay_fn fn, void* arg,
                              uint64_t* out_size, scan_result* res, laminar_error* err) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  struct stat st;
  if (fd < 0 || fstat(fd, &st) != 0) {
    int e = errno;
    if (fd >= 0) close(fd);
    return lm_error_set(err, LAMINAR_ERR_IO, "WAL %s: open failed: %s", path,
                        strerror(e));
  }
  uint64_t size = (uint64_t)st.st_size;
  *out_size = size;
  static const uint8_t empty[1] = {0};
  const uint8_t* img = empty;
  if (size > 0) {
    void* m = mmap(NULL, (size_t)size, PROT_READ, MAP_PRIVATE, fd, 0);
    if (m == MAP_FAILED) {
      int e = errno;
      close(fd);
      return lm_error_set(err, LAMINAR_ERR_IO, "WAL %s: mmap failed: %s", path,
                          strerror(e));
    }
    img = m;
  }
  close(fd);
  laminar_code rc =
      scan_segment(img, size, name_seq, from_seq, covered, fn, arg, res, err);
  if (size > 0) munmap((void*)img, (size_t)size);
  return rc;
}

static int cmp_u64(const void* a, const void* b) {
  uint64_t x = *(const uint64_t*)a, y = *(const uint64_t*)b;
  return x < y ? -1 : x > y;
}

/* The segments of the directory, sorted by first sequence number. */
static laminar_code list_segments(lm_wal* wal, uint64_t** out, size_t* out_n,
                                  laminar_error* err) {
  *out = NULL;
  *out_n = 0;
  DIR* d = opendir(wal->dir);
  if (d == NULL) return io_error(err, "opendir", wal->dir, errno);
  uint64_t* v = NULL;
  size_t n = 0, cap = 0;
  struct dirent* e;
  while ((e = readdir(d)) != NULL) {
    const char* s = e->d_name;
    if (strlen(s) != NAME_DIGITS + 4 || strcmp(s + NAME_DIGITS, ".wal") != 0) continue;
    uint64_t seq = 0;
    bool digits = true;
    for (int i = 0; i < NAME_DIGITS && digits; i++) {
      digits = s[i] >= '0' && s[i] <= '9';
      seq = seq * 10 + (uint64_t)(s[i] - '0');
    }
    if (!digits) continue;
    if (n == cap) {
      cap = cap ? cap * 2 : 16;
      uint64_t* nv = lm_realloc(v, cap * sizeof *v);
      if (nv == NULL) {
        lm_free(v);
        closedir(d);
        return lm_error_set(err, LAMINAR_ERR_NOMEM, "WAL '%s': out of memory", wal->dir);
      }
      v = nv;
    }
    v[n++] = seq;
  }
  closedir(d);
  if (n > 1) qsort(v, n, sizeof *v, cmp_u64);
  *out = v;
  *out_n = n;
  return LAMINAR_OK;
}

/* ---- VOIDs ------------------------------------------------------------------
 * A VOID record names an earlier record the engine refused after it was
 * logged (lm_wal_void). Opening a log gathers them (one walk validates every
 * record anyway); a replay marks the records they name, and the VOIDs,
 * voided. */

/* Whether `seq` is in the set (binary search). */
static bool void_has(const void_set* v, uint64_t seq) {
  size_t lo = 0, hi = v->n;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (v->seqs[mid] == seq) return true;
    if (v->seqs[mid] < seq)
      lo = mid + 1;
    else
      hi = mid;
  }
  return false;
}

/* lm_wal_replay_fn gathering into the void_set `arg` the records each VOID
 * names (in log order, so mostly appended at the end). */
static laminar_code gather_void(void* arg, const lm_wal_record* rec, laminar_error* err) {
  void_set* v = arg;
  if (rec->type != LM_WAL_TYPE_VOID || rec->len != 8) return LAMINAR_OK;
  uint64_t seq = lm_le_get64(rec->payload);
  if (seq == 0 || seq >= rec->seq || void_has(v, seq)) return LAMINAR_OK;
  if (v->n == v->cap) {
    size_t c = v->cap ? v->cap * 2 : 16;
    uint64_t* g = lm_realloc(v->seqs, c * sizeof *g);
    if (g == NULL) return lm_error_set(err, LAMINAR_ERR_NOMEM, "WAL: out of memory");
    v->seqs = g;
    v->cap = c;
  }
  size_t at = v->n;
  while (at > 0 && v->seqs[at - 1] > seq) at--;
  memmove(v->seqs + at + 1, v->seqs + at, (v->n - at) * sizeof *v->seqs);
  v->seqs[at] = seq;
  v->n++;
  return LAMINAR_OK;
}

/* A replay's callback behind the marking of voided records (mark_void). */
typedef struct void_marker {
  const void_set* voids;
  lm_wal_replay_fn fn;
  void* arg;
} void_marker;

static laminar_code mark_void(void* arg, const lm_wal_record* rec, laminar_error* err) {
  const void_marker* m = arg;
  lm_wal_record r = *rec;
  r.voided = r.type == LM_WAL_TYPE_VOID || void_has(m->voids, r.seq);
  return m->fn(m->arg, &r, err);
}

/* ---- open / close ------------------------------------------------------------ */

static void wal_free(lm_wal* wal) {
  if (wal->fd >= 0) close(wal->fd);
  if (wal->dir_fd >= 0) close(wal->dir_fd);
#ifdef LAMINAR_HAVE_URING
  if (wal->use_uring) io_uring_queue_exit(&wal->ring);
#endif
  pthread_mutex_destroy(&wal->mu);
  pthread_cond_destroy(&wal->cv);
  drop_later(&wal->later);
  drop_later(&wal->wlater);
  lm_free(wal->later.items);
  lm_free(wal->wlater.items);
  lm_free(wal->buf);
  lm_free(wal->wbuf);
  lm_free(wal->obuf);
  lm_free(wal->blk);
  lm_free(wal->keep_upto);
  lm_free(wal->voids.seqs);
  lm_free(wal->dir);
  lm_free(wal);
}

/* Whether files in the log's directory can be opened with O_DIRECT. */
static bool dir_takes_direct(const lm_wal* wal) {
  static const char probe[] = ".direct-probe";
  int fd = openat(wal->dir_fd, probe, O_RDWR | O_CREAT | O_DIRECT | O_CLOEXEC, 0644);
  if (fd < 0) return false;
  close(fd);
  (void)unlinkat(wal->dir_fd, probe, 0);
  return true;
}

/* Direct I/O goes with pwrite only: a process killed with io_uring writes in
 * flight is reaped before its O_DIRECT writes reach the file (they land up to
 * hundreds of ms later; a buffered write or a blocking pwrite does not outlive
 * the process), so a restarted process could read the log, append, and then
 * see a dead predecessor's write land over it — the crash test caught this.
 * AUTO therefore picks pwrite with O_DIRECT where the file system takes it
 * (no kernel copy: the fastest measured) and io_uring, buffered, elsewhere. */
static laminar_code setup_io(lm_wal* wal, lm_wal_io io, lm_wal_direct direct,
                             laminar_error* err) {
  wal->use_uring = false;
  wal->direct_ok = false;
  if (io != LM_WAL_IO_URING && direct != LM_WAL_DIRECT_OFF && dir_takes_direct(wal)) {
    wal->direct_ok = true;
    return LAMINAR_OK;
  }
  if (io == LM_WAL_IO_PWRITE) return LAMINAR_OK;
#ifdef LAMINAR_HAVE_URING
  int rc = io_uring_queue_init(8, &wal->ring, 0);
  if (rc == 0) {
    wal->use_uring = true;
    return LAMINAR_OK;
  }
  if (io == LM_WAL_IO_URING) return io_error(err, "io_uring setup", wal->dir, -rc);
#else
  if (io == LM_WAL_IO_URING)
    return lm_error_set(err, LAMINAR_ERR_IO,
                        "WAL '%s': io_uring requested but this build has no liburing",
                        wal->dir);
#endif
  return LAMINAR_OK;
}

/* Remove segments[from..n) (after a cut: nothing there can be replayed). */
static laminar_code drop_segments(lm_wal* wal, const uint64_t* segs, size_t from,
                                  size_t n, lm_wal_report* rep, laminar_error* err) {
  char path[4096];
  for (size_t i = from; i < n; i++) {
    segment_path(wal, segs[i], path, sizeof path);
    struct stat st;
    if (stat(path, &st) == 0) rep->bytes_cut += (uint64_t)st.st_size;
    if (unlink(path) != 0) return io_error(err, "unlink", path, errno);
    rep->segments_dropped++;
  }
  return LAMINAR_OK;
}

static laminar_code strict_refusal(const lm_wal* wal, lm_wal_report* rep,
                                   laminar_error* err) {
  rep->cut = false;
  return lm_error_set(
      err, LAMINAR_ERR_IO,
      "WAL '%s' is damaged before its tail (%s); nothing was changed: open it "
      "without strict recovery to cut the log there",
      wal->dir, rep->reason);
}

/* Note covered records first..last (first 0: none lost) skipped in `file`. */
static void report_skip(lm_wal_report* rep, const char* file, uint64_t first,
                        uint64_t last, const char* why) {
  if (rep->skip_reason[0] == '\0')
    snprintf(rep->skip_reason, sizeof rep->skip_reason, "%.32s: %.150s", file, why);
  if (first == 0) return;
  if (rep->skip_first == 0 || first < rep->skip_first) rep->skip_first = first;
  if (last > rep->skip_last) rep->skip_last = last;
}

/* Where a walk over a log's segments ended (walk_log). */
typedef struct walk_result {
  size_t kept;     /* segments [0, kept) hold the log; the rest are cut off */
  uint64_t expect; /* the record after the last good one */
  bool roll;       /* the last kept segment holds skipped damage: append elsewhere */
  bool bad;        /* the last kept segment ends in damage, at `good` */
  uint64_t good;   /* the last kept segment's good bytes */
} walk_result;

/* Walk the segments segs[0..nseg) of `wal`'s directory in order, the one
 * validation a read-write open (recover) and a read-only replay share:
 * damage or absence among records up to `covered` is skipped (rep's skip
 * fields); the first other problem ends the walk (rep->reason), refused
 * under `strict` unless it is in the newest segment. fn (NULL: none) gets
 * every good record >= from_seq on the way. Counts kept records in rep. */
static laminar_code walk_log(const lm_wal* wal, const uint64_t* segs, size_t nseg,
                             uint64_t covered, bool strict, uint64_t from_seq,
                             lm_wal_replay_fn fn, void* arg, lm_wal_report* rep,
                             walk_result* w, laminar_error* err) {
  memset(w, 0, sizeof *w);
  laminar_code rc = LAMINAR_OK;
  /* Records before the first segment were deleted by a checkpoint: the log
   * starts there when nothing is covered (the caller knows no checkpoint),
   * or when the checkpoint covers them; a first segment after the covered
   * records plus one is a gap (cut, below). */
  uint64_t expect = covered + 1;
  if (nseg > 0 && (covered == 0 || segs[0] <= covered + 1)) expect = segs[0];
  if (nseg == 0 && covered > 0)
    report_skip(
        rep, "(no segment)", 0, 0,
        "the log has no segment; records after the checkpoint's, if any, are lost");
  size_t kept = 0;
  char path[4096];
  for (; kept < nseg; kept++) {
    segment_path(wal, segs[kept], path, sizeof path);
    if (segs[kept] != expect) {
      if (segs[kept] > expect && segs[kept] - 1 <= covered) {
        char why[96];
        snprintf(why, sizeof why,
                 "missing segment: records %" PRIu64 "..%" PRIu64 " absent", expect,
                 segs[kept] - 1);
        report_skip(rep, base_name(wal, path), expect, segs[kept] - 1, why);
        expect = segs[kept];
      } else {
        snprintf(rep->reason, sizeof rep->reason,
                 "missing segment: records %" PRIu64 "..%" PRIu64 " absent before %.32s",
                 expect, segs[kept] - 1, base_name(wal, path));
        if (strict) rc = strict_refusal(wal, rep, err);
        break;
      }
    }
    uint64_t size = 0;
    scan_result sr;
    rc = scan_file(path, segs[kept], from_seq, covered, fn, arg, &size, &sr, err);
    if (rc != LAMINAR_OK) break;
    if (sr.skipped)
      report_skip(rep, base_name(wal, path), sr.skip_first, sr.skip_last, sr.skip_why);
    if (sr.bad && kept + 1 < nseg && sr.next_seq <= covered &&
        segs[kept + 1] >= sr.next_seq && segs[kept + 1] - 1 <= covered) {
      /* The rest of this segment is covered and the next one goes on:
       * skipped, left in place for the next checkpoint to delete. */
      char why[150];
      snprintf(why, sizeof why, "%.96s; records %" PRIu64 "..%" PRIu64 " skipped", sr.why,
               sr.next_seq, segs[kept + 1] - 1);
      report_skip(rep, base_name(wal, path), sr.next_seq, segs[kept + 1] - 1, why);
      rep->records += sr.records;
      if (sr.records > 0 && rep->first_seq == 0) rep->first_seq = expect;
      if (sr.records > 0) rep->last_seq = sr.next_seq - 1;
      expect = segs[kept + 1];
      w->good = sr.good;
      w->roll = true; /* never appended to past its damage */
      w->bad = false;
      continue;
    }
    if (sr.bad) {
      snprintf(rep->reason, sizeof rep->reason, "%.32s: %.96s", base_name(wal, path),
               sr.why);
      /* Damage in the newest segment is a torn tail; anywhere else it cuts
       * off records that were whole, which strict mode refuses to do. */
      if (strict && kept + 1 < nseg) {
        rc = strict_refusal(wal, rep, err);
        break;
      }
    }
    if (sr.bad && sr.good < SEG_HEADER) break; /* header unusable: nothing in it */
    rep->records += sr.records;
    if (sr.records > 0) {
      if (rep->first_seq == 0) rep->first_seq = expect;
      rep->last_seq = sr.next_seq - 1;
    }
    expect = sr.next_seq;
    w->good = sr.good;
    w->roll = sr.skipped;
    w->bad = sr.bad;
    if (sr.bad) {
      rep->bytes_cut += size - sr.good;
      kept++;
      break;
    }
  }
  if (rc == LAMINAR_OK && expect <= covered) {
    /* The log ends before the checkpoint's offset (its newest records are
     * damaged or gone, all covered): numbering goes on after the offset, in
     * a fresh segment, so the producer's offsets stay those it was given. */
    char why[96];
    snprintf(why, sizeof why,
             "records %" PRIu64 "..%" PRIu64 " absent at the end of the log", expect,
             covered);
    report_skip(rep, "(end)", expect, covered, why);
    expect = covered + 1;
    w->roll = true;
  }
  w->kept = kept;
  w->expect = expect;
  return rc;
}

/* Validate the segments in order; cut at the first problem a checkpoint
 * does not cover (see wal.h). Leaves the last kept segment open as the
 * active one. */
static laminar_code recover(lm_wal* wal, lm_wal_report* rep, laminar_error* err) {
  uint64_t* segs;
  size_t nseg;
  LM_TRY(list_segments(wal, &segs, &nseg, err));
  walk_result w;
  laminar_code rc = walk_log(wal, segs, nseg, wal->covered, wal->strict, 0, gather_void,
                             &wal->voids, rep, &w, err);
  if (rc == LAMINAR_OK && w.kept > 0) {
    char path[4096];
    segment_path(wal, segs[w.kept - 1], path, sizeof path);
    /* Direct writes go on only from a block boundary (a clean end of a
     * direct segment); anything else continues buffered. */
    wal->fd =
        open_segment(wal, path, O_RDWR, w.good % DIO_BLOCK == 0 && !w.bad, &wal->direct);
    if (wal->fd < 0) {
      rc = io_error(err, "open", path, errno);
    } else {
      snprintf(wal->seg_path, sizeof wal->seg_path, "%s", path);
      wal->file_size = wal->synced_size = w.good;
      if (w.bad && (ftruncate(wal->fd, (off_t)w.good) != 0 || fdatasync(wal->fd) != 0))
        rc = io_error(err, "truncate", path, errno);
    }
  }
  if (rc != LAMINAR_OK) {
    lm_free(segs);
    return rc;
  }
  rc = drop_segments(wal, segs, w.kept, nseg, rep, err);
  rep->cut = rep->bytes_cut > 0 || rep->segments_dropped > 0;
  if (rc == LAMINAR_OK && rep->cut) {
    int e = dir_sync(wal);
    if (e != 0) rc = io_error(err, "fsync", wal->dir, e);
  }
  bool roll = w.roll;
  if (rc == LAMINAR_OK && wal->fd < 0) {
    /* No usable segment: start one where the numbering left off, so offsets a
     * checkpoint recorded stay meaningful. */
    int e = segment_create(wal, w.expect);
    if (e != 0) rc = segment_error(wal, err, w.expect, e);
    roll = false;
  }
  wal->must_roll = roll;
  rep->segments = w.kept > 0 ? w.kept : 1;
  wal->next_seq = w.expect;
  wal->written_seq = wal->synced_seq = w.expect - 1;
  lm_free(segs);
  return rc;
}

laminar_code lm_wal_open(const lm_wal_options* opt, lm_wal** out, lm_wal_report* report,
                         laminar_error* err) {
  *out = NULL;
  lm_wal_report scratch;
  lm_wal_report* rep = report != NULL ? report : &scratch;
  memset(rep, 0, sizeof *rep);
  if (opt == NULL || opt->dir == NULL || opt->dir[0] == '\0')
    return lm_error_set(err, LAMINAR_ERR_CONFIG_VALUE, "WAL: no directory given");
  if (mkdir(opt->dir, 0755) != 0 && errno != EEXIST)
    return io_error(err, "mkdir", opt->dir, errno);
  lm_wal* wal = lm_calloc(1, sizeof *wal);
  if (wal == NULL) return lm_error_set(err, LAMINAR_ERR_NOMEM, "WAL: out of memory");
  wal->fd = -1;
  wal->dir_fd = -1;
  pthread_mutex_init(&wal->mu, NULL);
  pthread_cond_init(&wal->cv, NULL);
  wal->dir = lm_strdup(opt->dir);
  wal->segment_bytes = opt->segment_bytes ? opt->segment_bytes : DEFAULT_SEGMENT_BYTES;
  wal->fault = opt->fault;
  wal->fault_arg = opt->fault_arg;
  wal->observe = opt->observe;
  wal->observe_arg = opt->observe_arg;
  wal->strict = opt->strict;
  wal->covered = opt->covered;
  wal->blk = lm_malloc_aligned(DIO_BLOCK, DIO_BLOCK);
  laminar_code rc = LAMINAR_OK;
  if (wal->dir == NULL || wal->blk == NULL)
    rc = lm_error_set(err, LAMINAR_ERR_NOMEM, "WAL: out of memory");
  if (rc == LAMINAR_OK) {
    wal->dir_fd = open(opt->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (wal->dir_fd < 0) rc = io_error(err, "open", opt->dir, errno);
  }
  if (rc == LAMINAR_OK) rc = setup_io(wal, opt->io, opt->direct, err);
  if (rc == LAMINAR_OK) rc = recover(wal, rep, err);
  if (rc != LAMINAR_OK) {
    wal_free(wal);
    return rc;
  }
  *out = wal;
  return LAMINAR_OK;
}

laminar_code lm_wal_close(lm_wal* wal, laminar_error* err) {
  if (wal == NULL) return LAMINAR_OK;
  laminar_code rc = LAMINAR_OK;
  pthread_mutex_lock(&wal->mu);
  uint64_t last = wal->next_seq - 1;
  uint32_t gen = wal->gen;
  pthread_mutex_unlock(&wal->mu);
  if (last > 0)
    rc = lm_wal_commit(wal, (lm_wal_ticket){.seq = last, .gen = gen}, true, err);
  wal_free(wal);
  return rc;
}

const char* lm_wal_io_name(const lm_wal* wal) {
  return wal->use_uring ? "io_uring" : "pwrite";
}

bool lm_wal_is_direct(lm_wal* wal) {
  pthread_mutex_lock(&wal->mu);
  bool d = wal->direct;
  pthread_mutex_unlock(&wal->mu);
  return d;
}

uint64_t lm_wal_next_seq(lm_wal* wal) {
  pthread_mutex_lock(&wal->mu);
  uint64_t v = wal->next_seq;
  pthread_mutex_unlock(&wal->mu);
  return v;
}

lm_wal_ticket lm_wal_ticket_last(lm_wal* wal) {
  pthread_mutex_lock(&wal->mu);
  lm_wal_ticket t = {.seq = wal->next_seq - 1, .gen = wal->gen};
  pthread_mutex_unlock(&wal->mu);
  return t;
}

/* ---- append and commit --------------------------------------------------------- */

/* lm_wal_append_fill of any type (reserved ones too). */
static laminar_code append_fill(lm_wal* wal, uint16_t type, uint64_t epoch, uint32_t len,
                                lm_wal_fill_fn fill, void* arg, lm_wal_ticket* out,
                                laminar_error* err) {
  uint64_t total = REC_HEADER + pad8(len);
  pthread_mutex_lock(&wal->mu);
  if (!buf_reserve(&wal->buf, &wal->cap, wal->len, wal->len + total + PAD_SLACK)) {
    pthread_mutex_unlock(&wal->mu);
    return lm_error_set(err, LAMINAR_ERR_NOMEM, "WAL '%s': out of memory", wal->dir);
  }
  uint8_t* h = wal->buf + wal->len;
  uint64_t seq = wal->next_seq++;
  if (len > 0) fill(arg, h + REC_HEADER);
  frame_record(h, len, seq, epoch, type);
  wal->len += total;
  wal->buf_last_seq = seq;
  *out = (lm_wal_ticket){.seq = seq, .gen = wal->gen};
  pthread_mutex_unlock(&wal->mu);
  return LAMINAR_OK;
}

laminar_code lm_wal_append_fill(lm_wal* wal, uint16_t type, uint64_t epoch, uint32_t len,
                                lm_wal_fill_fn fill, void* arg, lm_wal_ticket* out,
                                laminar_error* err) {
  if (len > LM_WAL_MAX_RECORD)
    return lm_error_set(err, LAMINAR_ERR_IO,
                        "WAL '%s': record of %u bytes exceeds the limit", wal->dir, len);
  if (type == LM_WAL_TYPE_PAD || type == LM_WAL_TYPE_VOID)
    return lm_error_set(err, LAMINAR_ERR_MISUSE, "WAL '%s': record type %u is reserved",
                        wal->dir, (unsigned)type);
  return append_fill(wal, type, epoch, len, fill, arg, out, err);
}

laminar_code lm_wal_append_later(lm_wal* wal, uint64_t epoch, uint32_t max_len,
                                 const lm_wal_later_ops* ops, void* arg,
                                 lm_wal_ticket* out, laminar_error* err) {
  if (max_len > LM_WAL_MAX_RECORD)
    return lm_error_set(err, LAMINAR_ERR_IO,
                        "WAL '%s': record of %u bytes exceeds the limit", wal->dir,
                        max_len);
  pthread_mutex_lock(&wal->mu);
  later_list* l = &wal->later;
  if (l->n == l->cap) {
    size_t c = l->cap ? l->cap * 2 : 64;
    later_rec* items = lm_realloc(l->items, c * sizeof *items);
    if (items == NULL) {
      pthread_mutex_unlock(&wal->mu);
      return lm_error_set(err, LAMINAR_ERR_NOMEM, "WAL '%s': out of memory", wal->dir);
    }
    l->items = items;
    l->cap = c;
  }
  uint64_t seq = wal->next_seq++;
  l->items[l->n++] = (later_rec){.off = wal->len,
                                 .seq = seq,
                                 .epoch = epoch,
                                 .max_len = max_len,
                                 .ops = ops,
                                 .arg = arg};
  wal->buf_last_seq = seq;
  *out = (lm_wal_ticket){.seq = seq, .gen = wal->gen};
  pthread_mutex_unlock(&wal->mu);
  return LAMINAR_OK;
}

typedef struct copy_arg {
  const void* p;
  uint32_t n;
} copy_arg;

static void copy_fill(void* arg, uint8_t* dst) {
  const copy_arg* c = arg;
  memcpy(dst, c->p, c->n);
}

laminar_code lm_wal_append(lm_wal* wal, uint16_t type, uint64_t epoch,
                           const void* payload, uint32_t len, lm_wal_ticket* out,
                           laminar_error* err) {
  copy_arg c = {payload, len};
  return lm_wal_append_fill(wal, type, epoch, len, copy_fill, &c, out, err);
}

static void fill_seq(void* arg, uint8_t* dst) { lm_le_put64(dst, *(const uint64_t*)arg); }

laminar_code lm_wal_void(lm_wal* wal, uint64_t seq, bool sync, laminar_error* err) {
  lm_wal_ticket t;
  LM_TRY(append_fill(wal, LM_WAL_TYPE_VOID, 0, 8, fill_seq, &seq, &t, err));
  return sync ? lm_wal_commit(wal, t, true, err) : LAMINAR_OK;
}

/* The ticket's record was discarded by a failure after it was appended. */
static bool ticket_lost(const lm_wal* wal, lm_wal_ticket t) {
  return t.gen != wal->gen && t.seq > wal->keep_upto[t.gen];
}

/* Leader: write the taken batch, rolling to a new segment first when the
 * active one is full (the old one is flushed before: *rolled tells). Sets
 * *before to the active segment's size the batch is written at. Called
 * without the mutex; returns 0 or an errno. */
static int write_batch(lm_wal* wal, uint8_t* p, size_t n, uint64_t first_seq, bool sync,
                       bool* rolled, uint64_t* before, size_t* wrote) {
  *rolled = false;
  *wrote = 0;
  if (n > 0 && (wal->file_size >= wal->segment_bytes || wal->must_roll)) {
    int e = wal->synced_size < wal->file_size ? file_sync(wal) : 0;
    if (e != 0) {
      *before = wal->file_size;
      return e;
    }
    wal->synced_size = wal->file_size;
    *rolled = true;
    if ((e = segment_create(wal, first_seq)) != 0) {
      *before = wal->file_size;
      return e;
    }
  }
  *before = wal->file_size;
  if (n == 0) return sync && wal->synced_size < wal->file_size ? file_sync(wal) : 0;
  /* Under O_DIRECT the batch ends on a block boundary (room was kept). */
  if (wal->direct) n += pad_to_block(p, n);
  *wrote = n;
  return file_write(wal, p, n, wal->file_size, sync);
}

laminar_code lm_wal_commit(lm_wal* wal, lm_wal_ticket t, bool sync, laminar_error* err) {
  pthread_mutex_lock(&wal->mu);
  for (;;) {
    if (ticket_lost(wal, t)) {
      pthread_mutex_unlock(&wal->mu);
      return lm_error_set(err, LAMINAR_ERR_IO,
                          "WAL '%s': record %" PRIu64 " was discarded by a failed write",
                          wal->dir, t.seq);
    }
    if (t.seq <= (sync ? wal->synced_seq : wal->written_seq)) break;
    if (wal->flushing) {
      pthread_cond_wait(&wal->cv, &wal->mu);
      continue;
    }
    /* Lead: take everything appended so far. Reserve the failure record
     * first, so a failed write can always be accounted for. */
    if (wal->nkeep <= wal->gen) {
      uint64_t* nk = lm_realloc(wal->keep_upto, ((size_t)wal->gen + 1) * sizeof *nk);
      if (nk == NULL) {
        pthread_mutex_unlock(&wal->mu);
        return lm_error_set(err, LAMINAR_ERR_NOMEM, "WAL '%s': out of memory", wal->dir);
      }
      wal->keep_upto = nk;
      wal->nkeep = wal->gen + 1;
    }
    wal->flushing = true;
    uint8_t* batch = wal->buf;
    size_t n = wal->len, batch_cap = wal->cap;
    uint64_t last = n > 0 || wal->later.n > 0 ? wal->buf_last_seq : wal->written_seq;
    uint64_t first = wal->written_seq + 1;
    wal->buf = wal->wbuf;
    wal->cap = wal->wcap;
    wal->len = 0;
    wal->wbuf = batch;
    wal->wcap = batch_cap;
    later_list fills = wal->later; /* the leader's now; wlater is empty */
    wal->later = wal->wlater;
    wal->wlater = fills;
    pthread_mutex_unlock(&wal->mu);

    /* Later records: measured, filled and framed where they belong, here,
     * off the appending threads. No room for that fails the batch like a
     * failed write (nothing of it reached the file). */
    int e = 0;
    if (wal->wlater.n > 0) {
      bool oom;
      size_t filled = fill_later(wal, batch, n, &wal->wlater, &oom);
      if (oom) {
        drop_later(&wal->wlater);
        e = ENOMEM;
      }
      batch = wal->obuf;
      n = filled;
    }
    bool rolled = false;
    uint64_t before = wal->file_size;
    size_t wrote = 0;
    if (e == 0) e = write_batch(wal, batch, n, first, sync, &rolled, &before, &wrote);

    pthread_mutex_lock(&wal->mu);
    wal->flushing = false;
    if (rolled) wal->synced_seq = wal->written_seq; /* the old segment was flushed */
    if (e == 0) {
      wal->file_size = before + wrote;
      wal->written_seq = last;
      if (sync) {
        wal->synced_seq = last;
        wal->synced_size = wal->file_size;
      }
    } else {
      /* Cut back to what is known safe: after a failed write, what was there
       * before it; after a failed flush, what the last good flush covered
       * (the unflushed bytes may or may not be on the device). Records taken
       * or appended since are discarded; their commits fail. */
      /* A sync commit's failure may be the flush's: treated as one. */
      bool flush_failed = sync;
      uint64_t keep_size = flush_failed ? wal->synced_size : before;
      uint64_t keep_seq = flush_failed ? wal->synced_seq : wal->written_seq;
      (void)!ftruncate(wal->fd, (off_t)keep_size);
      /* After a failed fdatasync nothing written since the last good one can
       * be trusted to reach the device, and a later fdatasync of the same
       * file would not prove it did (PostgreSQL's lesson): what follows goes
       * to a fresh segment. */
      if (flush_failed) wal->must_roll = true;
      wal->keep_upto[wal->gen++] = keep_seq; /* room reserved before the write */
      laminar_code rc =
          e == EEXIST ? segment_error(wal, err, first, e) /* at a roll */
                      : io_error(err, sync ? "write+fdatasync" : "write", wal->dir, e);
      wal->file_size = keep_size;
      wal->written_seq = keep_seq;
      wal->len = 0;
      drop_later(&wal->later); /* appended meanwhile: discarded with the rest */
      wal->next_seq = keep_seq + 1;
      pthread_cond_broadcast(&wal->cv);
      pthread_mutex_unlock(&wal->mu);
      return rc;
    }
    pthread_cond_broadcast(&wal->cv);
  }
  pthread_mutex_unlock(&wal->mu);
  return LAMINAR_OK;
}

/* ---- replay and truncation ------------------------------------------------------- */

laminar_code lm_wal_replay(lm_wal* wal, uint64_t from_seq, lm_wal_replay_fn fn, void* arg,
                           laminar_error* err) {
  return lm_wal_replay_upto(wal, from_seq, UINT64_MAX, fn, arg, err);
}

laminar_code lm_wal_replay_upto(lm_wal* wal, uint64_t from_seq, uint64_t to_seq,
                                lm_wal_replay_fn fn, void* arg, laminar_error* err) {
  uint64_t* segs;
  size_t nseg;
  LM_TRY(list_segments(wal, &segs, &nseg, err));
  laminar_code rc = LAMINAR_OK;
  char path[4096];
  void_marker m = {&wal->voids, fn, arg};
  for (size_t i = 0; i < nseg && rc == LAMINAR_OK; i++) {
    if (i + 1 < nseg && segs[i + 1] <= from_seq) continue; /* all below from_seq */
    if (i > 0 && segs[i] > to_seq) break;                  /* all above to_seq */
    segment_path(wal, segs[i], path, sizeof path);
    uint64_t size;
    scan_result sr;
    rc = scan_file(path, segs[i], from_seq, wal->covered, mark_void, &m, &size, &sr, err);
    /* Open cut what is bad, except damage among covered records before
     * another segment (skipped there too). */
    bool skipped = sr.next_seq <= wal->covered && i + 1 < nseg;
    if (rc == LAMINAR_OK && sr.bad && !skipped)
      rc = lm_error_set(err, LAMINAR_ERR_IO, "WAL %s: replay stopped: %s", path, sr.why);
  }
  lm_free(segs);
  return rc;
}

laminar_code lm_wal_replay_readonly(const char* dir, uint64_t from_seq, uint64_t covered,
                                    lm_wal_replay_fn fn, void* arg, lm_wal_report* rep,
                                    laminar_error* err) {
  memset(rep, 0, sizeof *rep);
  struct stat st;
  if (stat(dir, &st) != 0 && errno == ENOENT) return LAMINAR_OK;
  lm_wal view = {.dir = (char*)dir, .fd = -1, .dir_fd = -1}; /* names only */
  uint64_t* segs;
  size_t nseg;
  LM_TRY(list_segments(&view, &segs, &nseg, err));
  /* Two walks over the same files: the VOIDs first (they follow the records
   * they name), then the records. */
  walk_result w;
  lm_wal_report scratch;
  memset(&scratch, 0, sizeof scratch);
  void_set voids = {0};
  laminar_code rc = walk_log(&view, segs, nseg, covered, false, 0, gather_void, &voids,
                             &scratch, &w, err);
  void_marker m = {&voids, fn, arg};
  if (rc == LAMINAR_OK)
    rc = walk_log(&view, segs, nseg, covered, false, from_seq, mark_void, &m, rep, &w,
                  err);
  lm_free(voids.seqs);
  rep->segments = w.kept;
  char path[4096];
  for (size_t k = w.kept; k < nseg && rc == LAMINAR_OK;
       k++) { /* what a cut would remove */
    segment_path(&view, segs[k], path, sizeof path);
    if (stat(path, &st) == 0) rep->bytes_cut += (uint64_t)st.st_size;
    rep->segments_dropped++;
  }
  rep->cut = rc == LAMINAR_OK && rep->reason[0] != '\0';
  lm_free(segs);
  return rc;
}

laminar_code lm_wal_truncate_before(lm_wal* wal, uint64_t seq, laminar_error* err) {
  uint64_t* segs;
  size_t nseg;
  LM_TRY(list_segments(wal, &segs, &nseg, err));
  laminar_code rc = LAMINAR_OK;
  bool removed = false;
  char path[4096];
  /* Segment i holds [segs[i], segs[i+1]); the last one is active. */
  for (size_t i = 0; i + 1 < nseg && segs[i + 1] <= seq; i++) {
    segment_path(wal, segs[i], path, sizeof path);
    if (unlink(path) != 0) {
      rc = io_error(err, "unlink", path, errno);
      break;
    }
    removed = true;
  }
  if (rc == LAMINAR_OK && removed) {
    int e = dir_sync(wal);
    if (e != 0) rc = io_error(err, "fsync", wal->dir, e);
  }
  lm_free(segs);
  return rc;
}
