/*
 * durable.c -- settings, per-source WALs, checkpoints and recovery (see
 * durable.h).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE  // clock_gettime, pthread_cond_timedwait under -std=c17
#endif

#include "db/durable.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <inttypes.h>
#include <unistd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>

#include "arrow/codec.h"
#include "db/internal.h"
#include "sink/sink.h"
#include "state/keywm.h"
#include "state/state.h"
#include "store/ckpt.h"
#include "store/crc32c.h"
#include "store/fs.h"
#include "store/idlelog.h"
#include "util/util.h"

#define WAL_BATCH 1     /* WAL record types: a batch in codec.h's first form (still */
#define WAL_WATERMARK 2 /* read; written for batches the compact form does not take), */
#define WAL_BATCH_COMPACT 3    /* a watermark, a batch in the compact form (issue 6) */
#define CKPT_MAGIC 0x4b434d4cu /* "LMCK" */
/* 1: one state per stream; 2: per stream its partition count and each
 * partition's state; 3: each source and stream then ends with its incarnation
 * and fingerprint (read: all three). */
#define CKPT_VERSION 5u /* 4: each input's watermark of a stream; 5: sources' keys */
/* catalog.sql's first line (the file before it had none: still read). */
#define CATALOG_MAGIC "-- laminardb catalog 2"
#define CATALOG_NAME "catalog.sql"
/* A source's WAL directory names the incarnation it belongs to here. */
#define WAL_OWNER ".incarnation"

/* An object's identity as the stored catalog records it (at open). */
typedef struct stored_ident {
  char* name;
  uint64_t incarnation;
  uint64_t start;
  uint64_t* starts; /* a stream over several inputs: each one's (nstarts) */
  int32_t nstarts;
} stored_ident;

/* Each source's position (last WAL record taken) at a checkpoint. */
typedef struct src_pos {
  char* name;
  uint64_t seq;
  uint64_t incarnation; /* 0: not recorded (checkpoint format < 3): any */
} src_pos;

typedef struct pos_list {
  src_pos* v;
  int32_t n;
} pos_list;

static void pos_list_free(pos_list* l) {
  for (int32_t i = 0; i < l->n; i++) lm_free(l->v[i].name);
  lm_free(l->v);
  *l = (pos_list){0};
}

/* The position in l of the source `name` of that incarnation, or 0 (a
 * dropped source's position is not the new one's). */
static uint64_t pos_find(const pos_list* l, const char* name, uint64_t incarnation) {
  for (int32_t i = 0; i < l->n; i++)
    if (strcmp(l->v[i].name, name) == 0 &&
        (l->v[i].incarnation == 0 || l->v[i].incarnation == incarnation))
      return l->v[i].seq;
  return 0;
}

struct lm_durable {
  laminar_db* db;
  char* dir;
  char* dir_real;  /* dir, canonical (file sinks must stay out of it) */
  char* sink_root; /* sink_root, canonical (NULL: not set) */
  char* ckpt_dir;
  char* wal_dir;
  lm_durable_config conf;
  uint64_t epoch;      /* last completed checkpoint (0: none) */
  uint64_t attempted;  /* last checkpoint number handed out */
  bool recovering;     /* running the catalog at open */
  bool legacy_catalog; /* it had no header (an earlier build's): identities are new */
  bool
      catalog_missing; /* a new directory: catalog.sql is written before any checkpoint */
  stored_ident* idents; /* the stored catalog's identities, while it runs */
  int32_t nidents;
  lm_config_sink* config_sinks; /* the config's connector sinks (borrowed by open) */
  int32_t nconfig_sinks;
  /* background thread: async WAL flushes and interval checkpoints */
  pthread_t thread;
  bool thread_started;
  pthread_mutex_t mu;
  pthread_cond_t cv;
  bool stop;               /* under mu */
  int64_t last_stall_ns;   /* the last checkpoint's longest pause of one reactor */
  int64_t last_barrier_ns; /* its request to the barrier's completion */
  int64_t last_write_ns;   /* its frozen state's encoding, after the barrier */
  bool pause; /* benchmarks: checkpoints pause the graph (as before barriers) */
  void (*write_hook)(void*); /* tests: runs after the stall, before the encoding */
  void* write_hook_arg;
  char report[2048]; /* what recovery cut, failed background checkpoints (under mu) */
  /* Where each source stood at the restored checkpoint (recovery: its WAL
   * may skip damage up to there), and at the newest checkpoint whose
   * positions survive when that is newer (a fallback: the replay up to
   * there publishes nothing, its epochs are out already). */
  pos_list restored;
  pos_list replay_quiet;
  /* The previous checkpoint's positions: WAL records after them are kept,
   * so that a damaged newest checkpoint can fall back to it. */
  pos_list prev;
  lm_idlelog idle; /* idle.log (idle_logged below) */
};

static char* read_text(const char* path, bool* missing, size_t* out_len);

/* Add a line to the durability report (laminar_durability_report). */
static void report(lm_durable* d, const char* fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void report(lm_durable* d, const char* fmt, ...) {
  pthread_mutex_lock(&d->mu);
  size_t len = strlen(d->report);
  if (len + 2 < sizeof d->report) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(d->report + len, sizeof d->report - len - 1, fmt, ap);
    va_end(ap);
    len = strlen(d->report);
    d->report[len] = '\n';
    d->report[len + 1] = '\0';
  }
  pthread_mutex_unlock(&d->mu);
}

void lm_durable_report(lm_durable* d, char* buf, size_t cap) {
  if (cap == 0) return;
  pthread_mutex_lock(&d->mu);
  snprintf(buf, cap, "%s", d->report);
  pthread_mutex_unlock(&d->mu);
}

/* ---- settings ------------------------------------------------------------------- */

void lm_durable_config_init(lm_durable_config* c) {
  *c = (lm_durable_config){.checkpoint_interval_ms = -1,
                           .wal_mode = LM_WAL_NONE,
                           .keep = 3,
                           .io = LM_WAL_IO_AUTO,
                           .strict = false,
                           .flush_ms = 10};
}

bool lm_durable_parse_wal_mode(const char* v, lm_wal_mode* out) {
  if (lm_streq_nocase(v, "none"))
    *out = LM_WAL_NONE;
  else if (lm_streq_nocase(v, "async"))
    *out = LM_WAL_ASYNC;
  else if (lm_streq_nocase(v, "sync"))
    *out = LM_WAL_SYNC;
  else
    return false;
  return true;
}

/* ---- paths ------------------------------------------------------------------------- */

static char* join(const char* a, const char* b) {
  size_t n = strlen(a) + strlen(b) + 2;
  char* p = lm_malloc(n);
  if (p != NULL) snprintf(p, n, "%s/%s", a, b);
  return p;
}

static laminar_code make_dir(const char* path, laminar_error* err) {
  if (mkdir(path, 0755) != 0 && errno != EEXIST)
    return lm_error_set(err, LAMINAR_ERR_IO, "cannot create '%s': %s", path,
                        strerror(errno));
  return LAMINAR_OK;
}

/* The canonical form of directory setting `key` (it must exist) into *out. */
static laminar_code resolve_dir(const char* path, const char* key, laminar_code code,
                                char** out, laminar_error* err) {
  char buf[4096];
  struct stat st;
  int e = lm_fs_resolve(path, buf, sizeof buf);
  if (e == 0 && stat(buf, &st) != 0) e = errno;
  if (e == 0 && !S_ISDIR(st.st_mode)) e = ENOTDIR;
  if (e != 0)
    return lm_error_set(err, code, "config '%s': '%s' is not a directory: %s", key, path,
                        strerror(e));
  *out = lm_strdup(buf);
  return *out != NULL ? LAMINAR_OK
                      : lm_error_set(err, LAMINAR_ERR_NOMEM, "out of memory");
}

bool lm_durable_read_only(const lm_durable* d) { return d != NULL && d->conf.read_only; }

laminar_code lm_durable_refuse_write(const lm_durable* d, const char* what,
                                     laminar_error* err) {
  return lm_error_set(err, LAMINAR_ERR_READ_ONLY,
                      "the database in '%s' is open read-only: it %s (open it without "
                      "read_only to write)",
                      d->dir, what);
}

laminar_code lm_durable_check_sink_path(const lm_durable* d, const char* sink,
                                        const char* path, laminar_error* err) {
  char real[4096];
  int e = lm_fs_resolve(path, real, sizeof real);
  if (e != 0)
    return lm_error_set(err, LAMINAR_ERR_CONFIG_VALUE,
                        "sink '%s': path '%s' does not resolve: %s", sink, path,
                        strerror(e));
  return lm_durable_check_sink_real(d, sink, path, real, err);
}

laminar_code lm_durable_check_sink_real(const lm_durable* d, const char* sink,
                                        const char* path, const char* real,
                                        laminar_error* err) {
  if (lm_fs_within(real, d->dir_real))
    return lm_error_set(
        err, LAMINAR_ERR_CONFIG_VALUE,
        "sink '%s': path '%s' (%s) is inside the data directory '%s': a file "
        "sink writes outside it",
        sink, path, real, d->dir);
  if (d->sink_root != NULL && !lm_fs_within(real, d->sink_root))
    return lm_error_set(err, LAMINAR_ERR_CONFIG_VALUE,
                        "sink '%s': path '%s' (%s) is outside sink_root '%s'", sink, path,
                        real, d->sink_root);
  return LAMINAR_OK;
}

uint64_t lm_durable_next_epoch(const lm_durable* d) { return d->attempted + 1; }

bool lm_durable_recovering(const lm_durable* d) { return d->recovering; }

int64_t lm_durable_last_stall_ns(const lm_durable* d) { return d->last_stall_ns; }

int64_t lm_durable_last_write_ns(const lm_durable* d) { return d->last_write_ns; }

int64_t lm_durable_last_barrier_ns(const lm_durable* d) { return d->last_barrier_ns; }

void lm_durable_set_pause(lm_durable* d, bool pause) { d->pause = pause; }

void lm_durable_set_write_hook(lm_durable* d, void (*fn)(void* arg), void* arg) {
  d->write_hook = fn;
  d->write_hook_arg = arg;
}

uint64_t lm_durable_last_epoch(const lm_durable* d) { return d->epoch; }

const char* lm_durable_dir(const lm_durable* d) { return d->dir_real; }

/* ---- the catalog file -------------------------------------------------------------- */

static bool append_text(char** buf, size_t* len, size_t* cap, const char* s) {
  size_t n = strlen(s);
  if (*len + n + 1 > *cap) {
    size_t c = *cap ? *cap * 2 : 1024;
    while (c < *len + n + 1) c *= 2;
    char* g = lm_realloc(*buf, c);
    if (g == NULL) return false;
    *buf = g;
    *cap = c;
  }
  memcpy(*buf + *len, s, n + 1);
  *len += n;
  return true;
}

/* An object's comment line before its statement: "-- object <incarnation,
 * 16 hex> <start> <name>"; a stream over several inputs has one start per
 * input (its root source's position), comma-separated: "<s0>,<s1>,...". */
static bool append_ident(char** buf, size_t* len, size_t* cap, const char* name,
                         uint64_t inc, const uint64_t* starts, int32_t nstarts) {
  char line[96];
  snprintf(line, sizeof line, "-- object %016" PRIx64 " ", inc);
  bool ok = append_text(buf, len, cap, line);
  for (int32_t b = 0; b < nstarts && ok; b++) {
    snprintf(line, sizeof line, "%s%" PRIu64, b > 0 ? "," : "", starts[b]);
    ok = append_text(buf, len, cap, line);
  }
  return ok && append_text(buf, len, cap, " ") && append_text(buf, len, cap, name) &&
         append_text(buf, len, cap, "\n");
}

static bool append_stmt(char** buf, size_t* len, size_t* cap, const char* sql) {
  return append_text(buf, len, cap, sql) && append_text(buf, len, cap, ";\n");
}

laminar_code lm_durable_catalog_changed(laminar_db* db, laminar_error* err) {
  /* While the stored catalog runs at open, the file already says it all:
   * rewriting it statement by statement would leave a prefix on a crash. */
  if (db->dur == NULL || db->dur->recovering) return LAMINAR_OK;
  /* The header's room first (filled in last): magic, length and CRC. */
  char head[96];
  int hlen = snprintf(head, sizeof head, CATALOG_MAGIC " bytes=%020zu crc32c=%08x\n",
                      (size_t)0, 0u);
  char* text = NULL;
  size_t len = 0, cap = 0;
  bool ok = append_text(&text, &len, &cap, head);
  lm_graph* g = &db->graph;
  for (int32_t i = 0; i < g->nsources && ok; i++) {
    const lm_source_def* s = g->sources[i];
    ok = append_ident(&text, &len, &cap, s->name, s->incarnation, &(uint64_t){0}, 1) &&
         append_stmt(&text, &len, &cap, s->sql);
  }
  for (int32_t i = 0; i < g->nstreams && ok; i++) {
    /* A late output has no statement (its stream's makes it), an identity of its own. */
    const lm_stream_def* s = g->streams[i];
    ok = (s->in_start != NULL ? append_ident(&text, &len, &cap, s->name, s->incarnation,
                                             s->in_start, s->nin)
                              : append_ident(&text, &len, &cap, s->name, s->incarnation,
                                             &s->start_seq, 1)) &&
         (s->sql == NULL || append_stmt(&text, &len, &cap, s->sql));
  }
  for (int32_t i = 0; i < db->nsinks && ok; i++) {
    const lm_sink_def* k = db->sinks[i];
    if (k->sql == NULL) continue; /* a connector's: code, not in the catalog */
    ok = (k->in_start != NULL ? append_ident(&text, &len, &cap, k->name, k->incarnation,
                                             k->in_start, k->nin)
                              : append_ident(&text, &len, &cap, k->name, k->incarnation,
                                             &k->start_seq, 1)) &&
         append_stmt(&text, &len, &cap, k->sql);
  }
  laminar_code rc;
  if (!ok) {
    rc = lm_error_set(err, LAMINAR_ERR_NOMEM, "out of memory");
  } else {
    size_t body = len - (size_t)hlen;
    snprintf(head, sizeof head, CATALOG_MAGIC " bytes=%020zu crc32c=%08x\n", body,
             (unsigned)lm_crc32c(0, text + hlen, body));
    memcpy(text, head, (size_t)hlen);
    rc = lm_store_write_atomic(db->dur->dir, CATALOG_NAME, text, len, err);
    if (rc == LAMINAR_OK) db->dur->catalog_missing = false;
  }
  lm_free(text);
  return rc;
}

/* ---- identity: incarnations and fingerprints ---------------------------------------- */

static uint64_t new_incarnation(const void* salt) {
  uint64_t v = 0;
  if (getrandom(&v, sizeof v, 0) != (ssize_t)sizeof v) {
    struct timespec t;
    clock_gettime(CLOCK_REALTIME, &t);
    v = ((uint64_t)t.tv_sec * 1000000007u) ^ (uint64_t)t.tv_nsec ^
        ((uint64_t)getpid() << 40) ^ (uint64_t)(uintptr_t)salt;
  }
  return v != 0 ? v : 1;
}

uint64_t lm_durable_fingerprint(uint64_t input, const char* text) {
  uint64_t h = 0xcbf29ce484222325u ^ input; /* FNV-1a, seeded by the input's */
  for (const unsigned char* p = (const unsigned char*)text; *p; p++)
    h = (h ^ *p) * 0x100000001b3u;
  return h;
}

static const stored_ident* find_ident(const lm_durable* d, const char* name) {
  for (int32_t i = 0; i < d->nidents; i++)
    if (lm_streq_nocase(d->idents[i].name, name)) return &d->idents[i];
  return NULL;
}

void lm_durable_identify(lm_durable* d, const char* name, uint64_t* incarnation,
                         uint64_t* start) {
  if (d == NULL) return;
  const stored_ident* id = d->recovering ? find_ident(d, name) : NULL;
  if (id != NULL) {
    *incarnation = id->incarnation;
    if (start != NULL) *start = id->start;
  } else {
    *incarnation = new_incarnation(incarnation);
  }
}

void lm_durable_identify_inputs(lm_durable* d, const char* name, uint64_t* starts,
                                int32_t n) {
  const stored_ident* id = d != NULL && d->recovering ? find_ident(d, name) : NULL;
  if (id != NULL && id->nstarts == n)
    memcpy(starts, id->starts, sizeof *starts * (size_t)n);
  if (id != NULL && id->nstarts == 0 && n == 1) starts[0] = id->start;
}

static void free_idents(lm_durable* d) {
  for (int32_t i = 0; i < d->nidents; i++) {
    lm_free(d->idents[i].name);
    lm_free(d->idents[i].starts);
  }
  lm_free(d->idents);
  d->idents = NULL;
  d->nidents = 0;
}

/* Parse the identities of a checked catalog body ("-- object" lines). */
static laminar_code parse_idents(lm_durable* d, const char* body, laminar_error* err) {
  static const char tag[] = "-- object ";
  for (const char* p = body; *p;) {
    const char* eol = strchr(p, '\n');
    size_t n = eol != NULL ? (size_t)(eol - p) : strlen(p);
    if (n > sizeof tag - 1 && strncmp(p, tag, sizeof tag - 1) == 0) {
      char line[512];
      snprintf(line, sizeof line, "%.*s", (int)(n < sizeof line ? n : sizeof line - 1),
               p);
      uint64_t inc, start;
      int name_at = 0, starts_at = 0;
      const char* fields = line + sizeof tag - 1;
      bool bad =
          sscanf(fields, "%16" SCNx64 " %n", &inc, &starts_at) != 1 || starts_at == 0;
      /* One start, or one per input: "<s0>,<s1>,..." */
      int32_t nstarts = 1;
      for (const char* c = fields + starts_at; !bad && *c != '\0' && *c != ' '; c++)
        nstarts += *c == ',';
      uint64_t* starts = bad ? NULL : lm_calloc((size_t)nstarts, sizeof *starts);
      if (!bad && starts == NULL)
        return lm_error_set(err, LAMINAR_ERR_NOMEM, "out of memory");
      const char* c = fields + starts_at;
      for (int32_t b = 0; !bad && b < nstarts; b++) {
        int used = 0;
        bad = sscanf(c, "%" SCNu64 "%n", &starts[b], &used) != 1 || used == 0 ||
              c[used] != (b + 1 < nstarts ? ',' : ' ');
        c += used + 1;
      }
      if (!bad) {
        name_at = (int)(c - fields);
        bad = fields[name_at] == '\0';
      }
      if (bad) {
        lm_free(starts);
        return lm_error_set(err, LAMINAR_ERR_RECOVERY,
                            "%s/" CATALOG_NAME ": bad object line '%s'", d->dir, line);
      }
      start = starts[0];
      stored_ident* grown =
          lm_realloc(d->idents, sizeof *grown * (size_t)(d->nidents + 1));
      if (grown == NULL) {
        lm_free(starts);
        return lm_error_set(err, LAMINAR_ERR_NOMEM, "out of memory");
      }
      d->idents = grown;
      stored_ident* id = &d->idents[d->nidents];
      *id = (stored_ident){.incarnation = inc, .start = start};
      if (nstarts > 1) {
        id->starts = starts;
        id->nstarts = nstarts;
      } else {
        lm_free(starts);
      }
      d->nidents++; /* freed with the others from here on */
      id->name = lm_strdup(fields + name_at);
      if (id->name == NULL) return lm_error_set(err, LAMINAR_ERR_NOMEM, "out of memory");
    }
    p += n + (eol != NULL ? 1 : 0);
  }
  return LAMINAR_OK;
}

/* ---- the WAL of a source ------------------------------------------------------------ */

/* The background thread sleeps until a checkpoint is due, or a flush while
 * it saw an async WAL: what changes either wakes it to sleep anew. */
static void wake_background(lm_durable* d) {
  pthread_mutex_lock(&d->mu);
  pthread_cond_signal(&d->cv);
  pthread_mutex_unlock(&d->mu);
}

/* Remove a WAL directory and what is in it (missing: nothing to do). */
static laminar_code wipe_dir(const char* dir, const char* what, laminar_error* err) {
  DIR* dh = opendir(dir);
  if (dh == NULL && errno == ENOENT) return LAMINAR_OK;
  struct dirent* e;
  char path[4096];
  while (dh != NULL && (e = readdir(dh)) != NULL) {
    if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
    if (snprintf(path, sizeof path, "%s/%s", dir, e->d_name) < (int)sizeof path)
      unlink(path);
  }
  if (dh != NULL) closedir(dh);
  if (rmdir(dir) != 0 && errno != ENOENT)
    return lm_error_set(err, LAMINAR_ERR_IO, "cannot remove the WAL of %s (%s): %s", what,
                        dir, strerror(errno));
  return LAMINAR_OK;
}

/* The incarnation a WAL directory belongs to: 0 and *found false when it
 * names none (an earlier build's log, or none yet); LDB-5002 when the file
 * cannot be read as one. */
static laminar_code read_owner(const char* dir, const char* source, uint64_t* out,
                               bool* found, laminar_error* err) {
  *out = 0;
  char* path = join(dir, WAL_OWNER);
  if (path == NULL) return lm_error_set(err, LAMINAR_ERR_NOMEM, "out of memory");
  bool missing;
  char* text = read_text(path, &missing, NULL);
  *found = text != NULL;
  laminar_code rc = LAMINAR_OK;
  char* end = NULL;
  if (text == NULL && !missing) {
    rc = lm_error_set(err, LAMINAR_ERR_IO, "source '%s': cannot read %s: %s", source,
                      path, strerror(errno));
  } else if (text != NULL) {
    errno = 0;
    *out = strtoull(text, &end, 16);
    if (errno != 0 || end != text + 16 || strcmp(end, "\n") != 0 || *out == 0)
      rc = lm_error_set(
          err, LAMINAR_ERR_RECOVERY,
          "source '%s': %s is damaged (remove it to keep the log as the source's)",
          source, path);
  }
  lm_free(text);
  lm_free(path);
  return rc;
}
/* Report the damage or absence among covered records that opening or
 * replaying a source's log (in dir) skipped, if any: `resume` is the
 * source's next offset (read-only: where its log ends). */
static void report_wal_skip(lm_durable* d, const char* name, const char* dir,
                            const lm_wal_report* rep, uint64_t covered, uint64_t resume) {
  if (rep->skip_reason[0] == '\0') return;
  char range[64] = "";
  if (rep->skip_first > 0)
    snprintf(range, sizeof range, " (records %" PRIu64 "..%" PRIu64 ")", rep->skip_first,
             rep->skip_last);
  report(d,
         "source '%s': WAL damage%s skipped in %s/%s: the checkpoint covers the records "
         "up to %" PRIu64 ", nothing it needs is lost; input resumes at offset %" PRIu64,
         name, range, dir, rep->skip_reason, covered, resume);
}


laminar_code lm_durable_source_created(laminar_db* db, lm_source_def* def,
                                       const char* wal_mode_option, laminar_error* err) {
  lm_durable* d = db->dur;
  if (d == NULL) return LAMINAR_OK;
  lm_durable_identify(d, def->name, &def->incarnation, NULL);
  lm_wal_mode mode = d->conf.wal_mode;
  if (wal_mode_option != NULL && !lm_durable_parse_wal_mode(wal_mode_option, &mode))
    return lm_error_set(err, LAMINAR_ERR_CONFIG_VALUE,
                        "source '%s': wal_mode must be none, async or sync, got '%s'",
                        def->name, wal_mode_option);
  /* A log never exists without the catalog it belongs to (a missing catalog
   * beside a WAL is damage, refused at open): a new directory's first. */
  if (d->catalog_missing && !d->recovering && !d->conf.read_only)
    LM_TRY(lm_durable_catalog_changed(db, err));
  char* dir = join(d->wal_dir, def->name);
  if (dir == NULL) return lm_error_set(err, LAMINAR_ERR_NOMEM, "out of memory");
  laminar_code rc = LAMINAR_OK;
  bool owned = false;
  if (!d->recovering &&
      !d->conf.read_only) { /* read-only: only the stored catalog runs */
    /* A new incarnation: a log left under the name (a DROP that crashed
     * before removing it) is another source's, never this one's. */
    char what[300];
    snprintf(what, sizeof what, "a dropped source '%s'", def->name);
    rc = wipe_dir(dir, what, err);
  } else {
    uint64_t owner;
    rc = read_owner(dir, def->name, &owner, &owned, err);
    if (rc == LAMINAR_OK && owned && find_ident(d, def->name) == NULL) {
      def->incarnation = owner; /* no identity in the catalog: the log's */
    } else if (rc == LAMINAR_OK && owned && owner != def->incarnation) {
      rc = lm_error_set(
          err, LAMINAR_ERR_RECOVERY,
          "source '%s': its WAL (%s) belongs to incarnation %016" PRIx64
          " of the name, the catalog's source is %016" PRIx64
          ": refusing to replay another source's log (remove the directory to "
          "start the source empty)",
          def->name, dir, owner, def->incarnation);
    }
  }
  /* Read-only: the log is read where it lies (replay_readonly), not opened. */
  if (rc != LAMINAR_OK || mode == LM_WAL_NONE || d->conf.read_only) {
    lm_free(dir);
    return rc;
  }
  /* At recovery the restored checkpoint covers the records up to its
   * position: damage or absence among them costs nothing (wal.h). */
  uint64_t covered =
      d->recovering ? pos_find(&d->restored, def->name, def->incarnation) : 0;
  lm_wal_options o = {.dir = dir,
                      .io = d->conf.io,
                      .direct = d->conf.direct,
                      .strict = d->conf.strict,
                      .covered = covered};
  lm_wal_report rep;
  rc = make_dir(dir, err);
  if (rc == LAMINAR_OK && !owned) {
    /* Before any record: a log in this directory is this incarnation's. */
    char text[24];
    snprintf(text, sizeof text, "%016" PRIx64 "\n", def->incarnation);
    rc = lm_store_write_atomic(dir, WAL_OWNER, text, strlen(text), err);
  }
  if (rc == LAMINAR_OK) rc = lm_wal_open(&o, &def->wal, &rep, err);
  if (rc == LAMINAR_OK)
    report_wal_skip(d, def->name, dir, &rep, covered, lm_wal_next_seq(def->wal));
  if (rc == LAMINAR_OK && rep.cut) {
    /* Recovered to the last good record; the cut is reported, never replayed. */
    report(d,
           "source '%s': WAL cut at the last good record (%" PRIu64
           " records kept, %" PRIu64
           " bytes removed): %s/%s; input resumes at offset %" PRIu64,
           def->name, rep.records, rep.bytes_cut, dir, rep.reason,
           lm_wal_next_seq(def->wal));
  }
  lm_free(dir);
  def->wal_sync = mode == LM_WAL_SYNC;
  if (rc == LAMINAR_OK && mode == LM_WAL_ASYNC) wake_background(d);
  return rc;
}

laminar_code lm_durable_source_dropped(laminar_db* db, lm_source_def* def,
                                       laminar_error* err) {
  lm_durable* d = db->dur;
  if (d == NULL || def->wal == NULL) return LAMINAR_OK;
  char* dir = join(d->wal_dir, def->name);
  if (dir == NULL) return lm_error_set(err, LAMINAR_ERR_NOMEM, "out of memory");
  char what[300];
  snprintf(what, sizeof what, "source '%s'", def->name);
  laminar_code rc = wipe_dir(dir, what, err);
  lm_free(dir);
  return rc;
}

void lm_durable_lower_interval(lm_durable* d, int64_t ms) {
  pthread_mutex_lock(&d->mu);
  if (ms > 0 && ms < d->conf.checkpoint_interval_ms) d->conf.checkpoint_interval_ms = ms;
  pthread_cond_signal(&d->cv);
  pthread_mutex_unlock(&d->mu);
}

static void fill_watermark(void* arg, uint8_t* dst) { memcpy(dst, arg, 8); }

/* A source's batch as a log record, in the form chosen for it: compact when
 * the analysis takes it (and, when the plain form's size is known, it is no
 * larger), else codec.h's first form. Both ways of logging use it: made at the
 * push (lm_wal_append_fill) or by the log's writer (lm_wal_append_later),
 * which views the kept, immutable array again (arrow.h lm_arrow_kept). */
typedef struct batch_record {
  lm_batch* batch;
  lm_arrow_kept* kept; /* made later: the pushed array, viewed again by the writer */
  size_t plain;        /* bytes of the batch in the first form; 0: not measured */
  lm_batch_plan plan;
  bool compact;
} batch_record;

/* Choose the form: the record's type and payload length. */
static uint32_t record_measure(void* arg, uint16_t* type) {
  batch_record* br = arg;
  if (br->batch == NULL && lm_arrow_kept_view(br->kept, &br->batch, NULL) != LAMINAR_OK)
    return LM_WAL_MEASURE_FAILED;
  br->compact = lm_batch_plan_compact(br->batch, &br->plan);
  if (br->compact && br->plain > 0 && br->plan.size > br->plain) {
    lm_batch_plan_free(&br->plan);
    br->compact = false;
  }
  if (!br->compact && br->plain == 0) br->plain = lm_batch_encoded_size(br->batch);
  *type = br->compact ? WAL_BATCH_COMPACT : WAL_BATCH;
  return (uint32_t)(br->compact ? br->plan.size : br->plain);
}

static void record_fill(void* arg, uint8_t* dst) {
  batch_record* br = arg;
  if (br->compact) {
    lm_batch_encode_compact(&br->plan, dst);
  } else {
    lm_batch_encode_to(br->batch, dst);
  }
}

static void record_free_plan(batch_record* br) {
  if (br->compact) lm_batch_plan_free(&br->plan);
}

/* A record made later owns its batch_record, the kept array and the
 * writer's view of it. */
static void later_release(void* arg) {
  batch_record* br = arg;
  record_free_plan(br);
  lm_batch_unref(br->batch);
  lm_arrow_kept_free(br->kept);
  lm_free(br);
}

static const lm_wal_later_ops later_ops = {record_measure, record_fill, later_release};

static laminar_code too_big(const lm_source_def* def, size_t size, laminar_error* err) {
  return lm_error_set(
      err, LAMINAR_ERR_IO,
      "source '%s': a batch of %zu bytes exceeds the WAL's record limit; push "
      "smaller batches",
      def->name, size);
}

laminar_code lm_durable_log(lm_source_def* def, lm_msg* msg, lm_arrow_kept* kept,
                            laminar_error* err) {
  if (kept != NULL) {
    /* Async: bounded by the plain form's size (the compact one is chosen only
     * when no larger). */
    size_t max = lm_batch_encoded_size(msg->batch);
    if (max > LM_WAL_MAX_RECORD) {
      lm_arrow_kept_free(kept);
      return too_big(def, max, err);
    }
    batch_record* br = lm_calloc(1, sizeof *br);
    if (br == NULL) {
      lm_arrow_kept_free(kept);
      return lm_error_set(err, LAMINAR_ERR_NOMEM, "out of memory");
    }
    /* Shared before the writer can see the record. */
    lm_arrow_kept_share(kept, msg->batch);
    br->kept = kept;
    br->plain = max;
    lm_wal_ticket t;
    laminar_code rc =
        lm_wal_append_later(def->wal, 0, (uint32_t)max, &later_ops, br, &t, err);
    if (rc != LAMINAR_OK) {
      /* Not logged: the caller gets its array back as it was. */
      lm_arrow_kept_unshare(kept, msg->batch);
      later_release(br);
      return rc;
    }
    msg->seq = t.seq;
    return LAMINAR_OK;
  }
  /* Encoded straight into the log's buffer: no intermediate copy. The compact
   * form's analysis runs here, before the log's lock; only the fill is under it. */
  uint16_t type = WAL_WATERMARK;
  size_t size = 8;
  lm_wal_fill_fn fill = fill_watermark;
  void* arg = &msg->watermark_ms;
  batch_record br = {.batch = msg->batch};
  if (msg->batch != NULL) {
    (void)record_measure(&br, &type);
    size = br.compact ? br.plan.size : br.plain; /* unnarrowed, for the limit check */
    fill = record_fill;
    arg = &br;
  }
  laminar_code rc = LAMINAR_OK;
  lm_wal_ticket t;
  if (size > LM_WAL_MAX_RECORD)
    rc = too_big(def, size, err);
  else
    rc = lm_wal_append_fill(def->wal, type, 0, (uint32_t)size, fill, arg, &t, err);
  record_free_plan(&br);
  if (rc == LAMINAR_OK && def->wal_sync) rc = lm_wal_commit(def->wal, t, true, err);
  if (rc == LAMINAR_OK) msg->seq = t.seq;
  return rc;
}

/* ---- checkpoints ----------------------------------------------------------------------- */

static int64_t now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

static void put_name(lm_state_writer* w, const char* name) {
  lm_state_put_bytes(w, name, strlen(name));
}

/* A checkpoint's graph state between the stall and the write: the header and
 * sources already encoded (small), each stream's watermark and frozen chain. */
typedef struct frozen_stream {
  const char* name; /* the stream's (db->lock held: not dropped meanwhile) */
  uint64_t incarnation, fingerprint;
  int64_t watermark;
  int32_t nin; /* its inputs' watermarks (several inputs; 0: one) */
  int64_t* in_wm;
  int32_t nparts; /* its partitions (cores > 1, rt/part.c), each frozen as it is */
  lm_op_frozen** chains;
} frozen_stream;

typedef struct frozen_graph {
  int32_t n;
  frozen_stream* streams;
} frozen_graph;

/* Let go of what a checkpoint froze (after a failure; the write does it too). */
static void frozen_graph_free(frozen_graph* f) {
  for (int32_t i = 0; i < f->n; i++) {
    frozen_stream* s = &f->streams[i];
    for (int32_t p = 0; p < s->nparts; p++) lm_op_chain_write_frozen(s->chains[p], NULL);
    lm_free(s->chains);
    lm_free(s->in_wm);
  }
  lm_free(f->streams);
  *f = (frozen_graph){0};
}

/* A checkpoint's barrier (rt.h lm_barrier): what each step records and
 * freezes, filled by the threads that reach the barrier, read by the
 * checkpoint's thread once it completed (lm_rt_barrier's handshake). */
typedef struct ckpt_barrier {
  laminar_db* db;
  uint64_t epoch;
  lm_state_writer* w;   /* header and sources (INJECT) */
  uint64_t* covered;    /* each source's WAL position at the barrier */
  frozen_graph* frozen; /* streams[i] for g->streams[i] */
  bool* at_merge;       /* per stream: aligned at MERGED, else at INJECT */
  atomic_int rc;        /* first failure of any step */
  laminar_error err;    /* written by that failure only */
} ckpt_barrier;

static void ckpt_fail(ckpt_barrier* c, laminar_code rc, const laminar_error* e,
                      const char* stream) {
  int ok = LAMINAR_OK;
  if (!atomic_compare_exchange_strong_explicit(&c->rc, &ok, (int)rc, memory_order_relaxed,
                                               memory_order_relaxed))
    return;
  if (stream != NULL) {
    lm_error_set(&c->err, rc, "stream '%s': snapshot failed", stream);
  } else if (e != NULL) {
    c->err = *e;
  } else {
    lm_error_set(&c->err, rc, "out of memory serializing a checkpoint");
  }
}

static bool ckpt_ok(ckpt_barrier* c) {
  return atomic_load_explicit(&c->rc, memory_order_relaxed) == LAMINAR_OK;
}

/* INJECT: the header and every source's position (WAL sequence, watermark,
 * largest event time) where the barrier stands in its queue. */
static void put_sources(ckpt_barrier* c) {
  lm_graph* g = &c->db->graph;
  lm_state_writer* w = c->w;
  lm_state_put_u32(w, CKPT_MAGIC);
  lm_state_put_u32(w, CKPT_VERSION);
  lm_state_put_i64(w, (int64_t)c->epoch);
  lm_state_put_u32(w, (uint32_t)g->nsources);
  for (int32_t i = 0; i < g->nsources; i++) {
    const lm_source_def* s = g->sources[i];
    put_name(w, s->name);
    lm_state_put_i64(w, (int64_t)s->processed_seq);
    lm_state_put_i64(w, s->watermark_ms);
    lm_state_put_i64(w, s->max_ts_ms);
    lm_state_put_i64(w, (int64_t)s->incarnation); /* format 3 */
    lm_state_put_i64(w, (int64_t)s->fingerprint);
    /* format 5: the source's reactor state, one blob: its idleness (u8),
     * then its per-key watermarks' key table (none: nothing more). */
    lm_state_writer kw;
    lm_state_writer_init(&kw);
    lm_state_put_u8(&kw, s->idle ? 1 : 0);
    if (s->keys != NULL) lm_keywm_put(s->keys, &kw);
    if (lm_state_writer_status(&kw) != LAMINAR_OK) w->failed = true;
    lm_state_put_bytes(w, kw.data, kw.len);
    lm_state_writer_free(&kw);
    c->covered[i] = s->processed_seq;
  }
  if (lm_state_writer_status(w) != LAMINAR_OK)
    ckpt_fail(c, LAMINAR_ERR_NOMEM, NULL, NULL);
}

/* One step of the barrier, on the thread that reached it: freeze the state
 * aligned there (copy-on-write windows: time independent of how many groups
 * they hold; one state per partition, each as it is), note the streams'
 * watermarks, and close the open epoch of the sinks on those streams (no
 * I/O: files are flushed after the barrier completes). */
static void ckpt_step(void* arg, lm_barrier_step step, int32_t part) {
  ckpt_barrier* c = arg;
  laminar_db* db = c->db;
  lm_graph* g = &db->graph;
  if (step == LM_BARRIER_INJECT) put_sources(c);
  bool merged = step == LM_BARRIER_MERGED;
  for (int32_t i = 0; i < g->nstreams; i++) {
    const lm_stream_def* s = g->streams[i];
    frozen_stream* f = &c->frozen->streams[i];
    laminar_code rc = LAMINAR_OK;
    if (step == LM_BARRIER_PART) {
      if (s->nparts > 1) rc = lm_op_chain_freeze(s->parts[part].chain, &f->chains[part]);
    } else if (c->at_merge[i] == merged) {
      f->watermark = s->watermark_ms;
      for (int32_t b = 0; b < f->nin; b++) f->in_wm[b] = s->in_wm[b];
      if (s->nparts <= 1) rc = lm_op_chain_freeze(s->chain, &f->chains[0]);
    }
    if (rc != LAMINAR_OK) ckpt_fail(c, rc, NULL, s->name);
  }
  if (step == LM_BARRIER_PART) return;
  for (int32_t i = 0; i < db->nsinks && ckpt_ok(c); i++) {
    const lm_stream_def* on = db->sinks[i]->stream;
    bool here = false;
    for (int32_t k = 0; k < g->nstreams; k++) {
      if (g->streams[k] == on) here = c->at_merge[k] == merged;
    }
    if (!here) continue;
    laminar_error e;
    lm_sink* k = db->sinks[i]->sink;
    laminar_code rc;
    if (k->vt->mark_epoch != NULL) {
      /* Behind the rows queued so far, on the sink's thread; a failure is
       * reported by its sync, before anything is published. */
      rc = k->vt->mark_epoch(k, c->epoch + 1);
      if (rc != LAMINAR_OK)
        lm_error_set(&e, rc, "sink '%s': out of memory", db->sinks[i]->name);
    } else {
      rc = k->vt->pre_commit(k, &e);
      if (rc == LAMINAR_OK) rc = k->vt->begin(k, c->epoch + 1, &e);
    }
    if (rc != LAMINAR_OK) ckpt_fail(c, rc, &e, NULL);
  }
}

/* Before the barrier (db->lock held: the graph is not edited until the
 * checkpoint ends): room for every stream's frozen partitions. */
static laminar_code frozen_graph_init(const lm_graph* g, frozen_graph* out,
                                      laminar_error* err) {
  *out = (frozen_graph){0};
  out->streams = lm_calloc((size_t)g->nstreams + 1, sizeof *out->streams);
  if (out->streams == NULL)
    return lm_error_set(err, LAMINAR_ERR_NOMEM, "out of memory serializing a checkpoint");
  for (int32_t i = 0; i < g->nstreams; i++) {
    const lm_stream_def* s = g->streams[i];
    frozen_stream* f = &out->streams[out->n];
    int32_t nparts = s->nparts > 1 ? s->nparts : 1;
    f->chains = lm_calloc((size_t)nparts, sizeof *f->chains);
    if (f->chains == NULL)
      return lm_error_set(err, LAMINAR_ERR_NOMEM,
                          "out of memory serializing a checkpoint");
    f->name = s->name; /* the watermark: at the stream's barrier step (the reactor's) */
    f->incarnation = s->incarnation;
    f->fingerprint = s->fingerprint;
    f->nparts = nparts;
    out->n++;
    if (s->nin > 0 && (f->in_wm = lm_calloc((size_t)s->nin, sizeof *f->in_wm)) == NULL)
      return lm_error_set(err, LAMINAR_ERR_NOMEM,
                          "out of memory serializing a checkpoint");
    f->nin = s->nin;
  }
  return LAMINAR_OK;
}

/* After the barrier, with the graph running: each stream's name, watermark,
 * partition count and each partition's state (length-prefixed) after the
 * sources; frees f. */
static laminar_code write_graph(frozen_graph* f, lm_state_writer* w, laminar_error* err) {
  lm_state_put_u32(w, (uint32_t)f->n);
  laminar_code rc = LAMINAR_OK;
  const char* failed = NULL;
  for (int32_t i = 0; i < f->n && rc == LAMINAR_OK; i++) {
    frozen_stream* s = &f->streams[i];
    put_name(w, s->name);
    lm_state_put_i64(w, s->watermark);
    lm_state_put_u32(w, (uint32_t)s->nparts);
    for (int32_t p = 0; p < s->nparts && rc == LAMINAR_OK; p++) {
      size_t at = w->len; /* a u32 length, filled in once the state is written */
      lm_state_put_u32(w, 0);
      rc = lm_op_chain_write_frozen(s->chains[p], w);
      s->chains[p] = NULL; /* let go of, written or not */
      if (rc == LAMINAR_OK && w->len - at - 4 > UINT32_MAX) rc = LAMINAR_ERR_NOMEM;
      if (rc == LAMINAR_OK) {
        uint32_t len = (uint32_t)(w->len - at - 4);
        memcpy(w->data + at, &len, 4);
      } else {
        failed = s->name;
      }
    }
    lm_state_put_i64(w, (int64_t)s->incarnation); /* format 3: after the states */
    lm_state_put_i64(w, (int64_t)s->fingerprint);
    lm_state_put_u32(w, (uint32_t)s->nin); /* format 4: each input's watermark */
    for (int32_t b = 0; b < s->nin; b++) lm_state_put_i64(w, s->in_wm[b]);
  }
  frozen_graph_free(f); /* what a failure left unwritten */
  if (failed != NULL)
    return lm_error_set(err, rc, "stream '%s': snapshot failed", failed);
  return lm_state_writer_status(w) == LAMINAR_OK
             ? LAMINAR_OK
             : lm_error_set(err, LAMINAR_ERR_NOMEM,
                            "out of memory serializing a checkpoint");
}

/* Flush every source's WAL up to what it holds, so that the offsets a
 * checkpoint records are never ahead of the log (async mode). */
static laminar_code flush_wals(laminar_db* db, laminar_error* err) {
  lm_graph* g = &db->graph;
  for (int32_t i = 0; i < g->nsources; i++) {
    lm_wal* wal = g->sources[i]->wal;
    if (wal == NULL) continue;
    lm_wal_ticket t = lm_wal_ticket_last(wal);
    if (t.seq > 0) LM_TRY(lm_wal_commit(wal, t, true, err));
  }
  return LAMINAR_OK;
}

laminar_code lm_durable_checkpoint(laminar_db* db, laminar_error* err) {
  lm_durable* d = db->dur;
  if (d == NULL)
    return lm_error_set(err, LAMINAR_ERR_STATE,
                        "checkpoints are off: set data_dir and checkpoint_interval");
  if (d->conf.read_only) return lm_durable_refuse_write(d, "takes no checkpoint", err);
  /* A checkpoint never exists without the catalog it belongs to (a missing
   * catalog beside checkpoints is damage, refused at open). */
  if (d->catalog_missing) LM_TRY(lm_durable_catalog_changed(db, err));
  uint64_t epoch = ++d->attempted; /* numbers are never reused, even after a failure */
  lm_graph* g = &db->graph;
  uint64_t* covered = lm_calloc((size_t)g->nsources + 1, sizeof *covered);
  if (covered == NULL) return lm_error_set(err, LAMINAR_ERR_NOMEM, "out of memory");
  bool* at_merge = lm_calloc((size_t)g->nstreams + 1, sizeof *at_merge);
  lm_state_writer w;
  lm_state_writer_init(&w);
  /* Flush the logs before the barrier too, so the one after it (which makes
   * sure no recorded offset is ahead of its log) has only the last records. */
  laminar_code rc = at_merge != NULL
                        ? flush_wals(db, err)
                        : lm_error_set(err, LAMINAR_ERR_NOMEM, "out of memory");
  frozen_graph frozen = {0};
  if (rc == LAMINAR_OK) rc = frozen_graph_init(g, &frozen, err);
  if (rc != LAMINAR_OK) {
    frozen_graph_free(&frozen);
    lm_state_writer_free(&w);
    lm_free(at_merge);
    lm_free(covered);
    return rc;
  }
  /* The barrier (rt.h lm_barrier): taken in order in every source queue,
   * each reactor freezing its own partitions when it reaches it, the merge
   * the streams it feeds; no reactor stops for another. Freezing is the
   * whole pause of each (windows copy-on-write, the rest copied), and the
   * sinks' open epochs are closed for writes there and the next begun. No
   * I/O waits in it: files are flushed after the barrier completes. */
  lm_rt_barrier_points(&db->rt, at_merge);
  ckpt_barrier c = {.db = db,
                    .epoch = epoch,
                    .w = &w,
                    .covered = covered,
                    .frozen = &frozen,
                    .at_merge = at_merge};
  atomic_init(&c.rc, LAMINAR_OK);
  lm_barrier b = {.step = ckpt_step, .arg = &c};
  int64_t t0 = now_ns();
  if (d->pause) { /* the graph stopped at one message boundary: every step at once */
    lm_rt_pause(&db->rt);
    ckpt_step(&c, LM_BARRIER_INJECT, 0);
    for (int32_t p = 0; p < db->rt.ncores; p++) ckpt_step(&c, LM_BARRIER_PART, p);
    ckpt_step(&c, LM_BARRIER_MERGED, 0);
    lm_rt_resume(&db->rt);
    atomic_init(&b.stall_ns, now_ns() - t0);
  } else {
    lm_rt_barrier(&db->rt, &b);
  }
  d->last_barrier_ns = now_ns() - t0;
  d->last_stall_ns = (int64_t)atomic_load_explicit(&b.stall_ns, memory_order_relaxed);
  lm_free(at_merge);
  rc = (laminar_code)atomic_load_explicit(&c.rc, memory_order_relaxed);
  if (rc != LAMINAR_OK && err != NULL) *err = c.err;
  /* Ring 1 from here, the graph running. The frozen state is written first
   * (its windows are copied by the reactor if it changes them meanwhile). */
  if (rc == LAMINAR_OK && d->write_hook != NULL) d->write_hook(d->write_hook_arg);
  size_t positions_len = w.len; /* the header and the sources' positions (put_sources) */
  int64_t t1 = now_ns();
  if (rc == LAMINAR_OK) {
    rc = write_graph(&frozen, &w, err);
  } else {
    frozen_graph_free(&frozen);
  }
  d->last_write_ns = now_ns() - t1;
  /* The logs next: the offsets recorded (covered) must never be
   * ahead of what the WALs hold on disk (every processed record was appended
   * before it was queued, so flushing all appended records covers them).
   * Then the sinks' sealed epochs, the checkpoint file, and the publishing. */
  if (rc == LAMINAR_OK) rc = flush_wals(db, err);
  for (int32_t i = 0; i < db->nsinks && rc == LAMINAR_OK; i++) {
    lm_sink* k = db->sinks[i]->sink;
    if (k->vt->sync != NULL) rc = k->vt->sync(k, err);
  }
  /* The positions first: should this checkpoint be lost later, recovery
   * falls back to the previous one and replays up to them (recover). */
  if (rc == LAMINAR_OK)
    rc = lm_ckpt_write_positions(d->ckpt_dir, epoch, w.data, positions_len, err);
  if (rc == LAMINAR_OK) rc = lm_ckpt_write(d->ckpt_dir, epoch, w.data, w.len, err);
  lm_state_writer_free(&w);
  if (rc == LAMINAR_OK) {
    /* Durable: publish every epoch it covers (an earlier failed checkpoint
     * left its epoch staged; this one covers it too). */
    for (int32_t i = 0; i < db->nsinks && rc == LAMINAR_OK; i++)
      for (uint64_t e = d->epoch + 1; e <= epoch && rc == LAMINAR_OK; e++)
        rc = db->sinks[i]->sink->vt->commit(db->sinks[i]->sink, e, err);
    uint64_t prev_epoch = d->epoch;
    if (rc == LAMINAR_OK) d->epoch = epoch;
    /* The logs keep what the previous checkpoint does not cover: a fallback
     * to it (this one damaged later) replays from there. idle.log likewise:
     * a restore of it reads the records after it (idle_cuts). */
    pos_list now = {.v = lm_calloc((size_t)g->nsources + 1, sizeof(src_pos))};
    for (int32_t i = 0; i < g->nsources && rc == LAMINAR_OK; i++) {
      lm_source_def* s = g->sources[i];
      uint64_t prev = pos_find(&d->prev, s->name, s->incarnation);
      if (prev > covered[i]) prev = covered[i];
      if (s->wal != NULL && prev > 0) rc = lm_wal_truncate_before(s->wal, prev + 1, err);
      lm_db_source_connector_checkpointed(db, s->name, (int64_t)covered[i]);
      char* name = now.v != NULL ? lm_strdup(s->name) : NULL;
      if (name != NULL) now.v[now.n++] = (src_pos){name, covered[i], s->incarnation};
    }
    /* Out of memory here only makes the logs keep more at the next one. */
    pos_list_free(&d->prev);
    d->prev = now;
    if (rc == LAMINAR_OK) rc = lm_ckpt_gc(d->ckpt_dir, d->conf.keep, err);
    if (rc == LAMINAR_OK) rc = lm_idlelog_prune(&d->idle, prev_epoch, err);
  }
  lm_free(covered);
  return rc;
}

/* ---- recovery ------------------------------------------------------------------------------ */

/* Restore stream s from the states of the nsaved partitions it was saved
 * with. As many partitions as now: one to one. Otherwise (a checkpoint taken
 * with another `cores`) each partition gathers, from every saved state, the
 * groups whose key hash routes to it now (lm_op_part_filter): the same state
 * as if the rows had been routed so from the start. */
static laminar_code restore_stream(lm_stream_def* s, int64_t wm, const lm_str* states,
                                   int32_t nsaved, laminar_error* err) {
  int32_t nparts = s->nparts > 1 ? s->nparts : 1;
  for (int32_t p = 0; p < nparts; p++) {
    lm_op* chain = lm_stream_part_chain(s, p);
    for (int32_t k = 0; k < nsaved; k++) {
      if (nsaved == nparts && k != p) continue;
      lm_state_reader cr;
      lm_state_reader_init(&cr, states[k].ptr, (size_t)states[k].len);
      lm_op_part_filter f = {.nparts = nparts,
                             .part = p,
                             .merge = k > 0 && nsaved != nparts,
                             .late = nsaved == nparts || p == 0};
      LM_TRY(nsaved == nparts ? lm_op_chain_restore(chain, &cr, err)
                              : lm_op_chain_restore_part(chain, &cr, &f, err));
    }
  }
  s->watermark_ms = wm;
  for (int32_t p = 0; s->nparts > 1 && p < s->nparts; p++) s->parts[p].watermark_ms = wm;
  atomic_store_explicit(&s->late_rows, lm_stream_late_rows(s), memory_order_relaxed);
  return LAMINAR_OK;
}

/* The sources' positions at the head of a checkpoint's payload or of its
 * positions file (the same bytes: put_sources). *out empty when none. */
static laminar_code parse_positions(const uint8_t* data, size_t len, const char* file,
                                    pos_list* out, laminar_error* err) {
  *out = (pos_list){0};
  lm_state_reader r;
  lm_state_reader_init(&r, data, len);
  uint32_t magic = lm_state_get_u32(&r), version = lm_state_get_u32(&r);
  (void)lm_state_get_i64(&r);
  uint32_t n = lm_state_get_u32(&r);
  if (r.failed || magic != CKPT_MAGIC || version < 1 || version > CKPT_VERSION ||
      n > (uint32_t)(len / 8))
    return lm_error_set(err, LAMINAR_ERR_RECOVERY, "%s: unknown format", file);
  out->v = lm_calloc((size_t)n + 1, sizeof *out->v);
  if (out->v == NULL) return lm_error_set(err, LAMINAR_ERR_NOMEM, "out of memory");
  for (uint32_t i = 0; i < n && !r.failed; i++) {
    lm_str nm = lm_state_get_bytes(&r);
    int64_t seq = lm_state_get_i64(&r);
    (void)lm_state_get_i64(&r);
    (void)lm_state_get_i64(&r);
    uint64_t inc = version >= 3 ? (uint64_t)lm_state_get_i64(&r) : 0; /* see restore */
    if (version >= 3) (void)lm_state_get_i64(&r);
    if (version >= 5) (void)lm_state_get_bytes(&r);
    if (r.failed) break;
    char* name = lm_malloc((size_t)nm.len + 1);
    if (name == NULL) {
      pos_list_free(out);
      return lm_error_set(err, LAMINAR_ERR_NOMEM, "out of memory");
    }
    memcpy(name, nm.ptr, (size_t)nm.len);
    name[nm.len] = '\0';
    out->v[out->n++] = (src_pos){name, (uint64_t)seq, inc};
  }
  if (r.failed) {
    pos_list_free(out);
    return lm_error_set(err, LAMINAR_ERR_RECOVERY, "%s: truncated content", file);
  }
  return LAMINAR_OK;
}

/* Whether a checkpoint's record of an object applies to the object now under
 * its name: not when it is of another incarnation (dropped and created again
 * since: its state is not this one's); LDB-5002 when it is of this
 * incarnation with another definition (the catalog was altered). Files before
 * version 3 name objects only: they apply by name. */
static laminar_code same_object(const char* kind, const char* name, uint32_t version,
                                uint64_t inc, uint64_t fp, uint64_t have_inc,
                                uint64_t have_fp, const char* file, bool* applies,
                                laminar_error* err) {
  *applies = version < 3 || inc == have_inc;
  if (!*applies || version < 3 || fp == have_fp) return LAMINAR_OK;
  return lm_error_set(
      err, LAMINAR_ERR_RECOVERY,
      "%s '%s': checkpoint %s holds its state under another definition (plan "
      "fingerprint %016" PRIx64 ", the catalog's %016" PRIx64
      "): catalog.sql was changed, refusing to load the state into another plan",
      kind, name, file, fp, have_fp);
}

/* Restore the graph from checkpoint bytes (the graph is not running); file
 * names the checkpoint in errors. */
/* A source's reactor state from its checkpointed blob: its idleness (noted
 * in idle_next, 1 idle: applied to its readers once every state is restored,
 * restore_idleness) and its per-key watermark table (none: nothing more). */
static laminar_code restore_source_keys(lm_source_def* s, lm_str blob, const char* file,
                                        laminar_error* err) {
  if (s->keys != NULL) {
    lm_keywm_free(s->keys);
    lm_free(s->keys);
    s->keys = NULL;
  }
  if (blob.len == 0) return LAMINAR_OK;
  s->idle_next = blob.ptr[0] == 1 ? 1 : 0;
  blob.ptr++;
  blob.len--;
  if (blob.len == 0 || s->wm_key_col < 0) return LAMINAR_OK;
  s->keys = lm_calloc(1, sizeof *s->keys);
  if (s->keys == NULL ||
      lm_keywm_init(s->keys, s->schema.fields[s->wm_key_col].type) != LAMINAR_OK) {
    lm_free(s->keys);
    s->keys = NULL;
    return lm_error_set(err, LAMINAR_ERR_NOMEM, "out of memory");
  }
  lm_state_reader r;
  lm_state_reader_init(&r, blob.ptr, (size_t)blob.len);
  laminar_code rc = lm_keywm_get(s->keys, &r);
  if (rc == LAMINAR_OK && (r.failed || r.pos != r.len))
    rc = lm_error_set(err, LAMINAR_ERR_RECOVERY,
                      "checkpoint %s: source '%s': its watermark keys do not read", file,
                      s->name);
  else if (rc != LAMINAR_OK)
    rc = lm_error_set(err, rc, "out of memory");
  return rc;
}

static laminar_code restore(laminar_db* db, const uint8_t* data, size_t len,
                            const char* file, laminar_error* err) {
  lm_state_reader r;
  lm_state_reader_init(&r, data, len);
  uint32_t magic = lm_state_get_u32(&r), version = lm_state_get_u32(&r);
  if (magic != CKPT_MAGIC || version < 1 || version > CKPT_VERSION)
    return lm_error_set(err, LAMINAR_ERR_RECOVERY, "checkpoint %s: unknown format", file);
  (void)lm_state_get_i64(&r); /* epoch: the file's name says it too */
  char name[256];
  uint32_t n = lm_state_get_u32(&r);
  for (uint32_t i = 0; i < n && !r.failed; i++) {
    lm_str nm = lm_state_get_bytes(&r);
    snprintf(name, sizeof name, "%.*s", (int)nm.len, nm.ptr ? nm.ptr : "");
    lm_source_def* s = lm_db_find_source(db, name);
    int64_t seq = lm_state_get_i64(&r), wm = lm_state_get_i64(&r),
            mx = lm_state_get_i64(&r);
    uint64_t inc = version >= 3 ? (uint64_t)lm_state_get_i64(&r) : 0;
    uint64_t fp = version >= 3 ? (uint64_t)lm_state_get_i64(&r) : 0;
    lm_str keys = version >= 5 ? lm_state_get_bytes(&r) : (lm_str){NULL, 0};
    if (s == NULL || r.failed)
      continue; /* dropped after the checkpoint: the catalog is newer */
    bool applies;
    LM_TRY(same_object("source", name, version, inc, fp, s->incarnation, s->fingerprint,
                       file, &applies, err));
    if (!applies) continue; /* a dropped source's position: the new one starts at 0 */
    s->processed_seq = (uint64_t)seq;
    s->unlogged_seq = (uint64_t)seq; /* wal_mode none: its offsets go on from here */
    s->watermark_ms = wm;
    s->max_ts_ms = mx;
    LM_TRY(restore_source_keys(s, keys, file, err));
  }
  n = lm_state_get_u32(&r);
  for (uint32_t i = 0; i < n && !r.failed; i++) {
    lm_str nm = lm_state_get_bytes(&r);
    snprintf(name, sizeof name, "%.*s", (int)nm.len, nm.ptr ? nm.ptr : "");
    lm_stream_def* s = lm_db_find_stream(db, name);
    int64_t wm = lm_state_get_i64(&r);
    uint32_t nsaved = version >= 2 ? lm_state_get_u32(&r) : 1;
    if (r.failed || nsaved == 0 || nsaved > LM_RT_MAX_CORES) {
      r.failed = true;
      break;
    }
    lm_str states[LM_RT_MAX_CORES];
    for (uint32_t p = 0; p < nsaved; p++) states[p] = lm_state_get_bytes(&r);
    uint64_t inc = version >= 3 ? (uint64_t)lm_state_get_i64(&r) : 0;
    uint64_t fp = version >= 3 ? (uint64_t)lm_state_get_i64(&r) : 0;
    uint32_t nin = version >= 4 ? lm_state_get_u32(&r) : 0;
    if (r.failed || nin > (uint32_t)(len / 8)) {
      r.failed = true;
      break;
    }
    const uint8_t* in_wm = r.failed ? NULL : data + r.pos;
    for (uint32_t b = 0; b < nin; b++) (void)lm_state_get_i64(&r);
    if (r.failed) break;
    if (s == NULL) continue; /* dropped after the checkpoint */
    bool applies;
    LM_TRY(same_object(lm_db_is_view(s) ? "materialized view" : "stream", name, version,
                       inc, fp, s->incarnation, s->fingerprint, file, &applies, err));
    if (!applies) continue; /* a dropped stream's state: the new one starts empty */
    laminar_code rc = restore_stream(s, wm, states, (int32_t)nsaved, err);
    for (int32_t b = 0; rc == LAMINAR_OK && b < s->nin; b++) {
      /* The stream's own watermark, the least of these, is restored above. */
      int64_t v = wm;
      if ((uint32_t)s->nin == nin) memcpy(&v, in_wm + 8 * (size_t)b, 8);
      s->in_wm[b] = v;
    }
    if (rc == LAMINAR_OK) lm_stream_def_sync_inputs(s); /* and its partitions' */
    if (rc != LAMINAR_OK) {
      char msg[sizeof err->message]; /* lm_error_set clears err->message first */
      snprintf(msg, sizeof msg, "%s", err ? err->message : "state does not restore");
      return lm_error_set(err, LAMINAR_ERR_RECOVERY, "stream '%s' (checkpoint %s): %s",
                          name, file, msg);
    }
  }
  if (r.failed)
    return lm_error_set(err, LAMINAR_ERR_RECOVERY, "checkpoint %s: truncated content",
                        file);
  return LAMINAR_OK;
}

/* Replay gates: a stream or sink created after the checkpoint saw, live,
 * only the records of its root source after its start (the source's position
 * at its CREATE). During the replay it is held out of its input's readers (a
 * sink out of its stream's sinks) until the records pass its start; then it
 * starts at its input's watermark, as CREATE started it. A stream over
 * several inputs has a gate per root source: held out of the readers of the
 * inputs from that source until its records pass that source's start, the
 * input's watermark set then (its windows close once every input's passed:
 * the stream's watermark is the least, and lateness is judged per input, so
 * replaying one source after another gives what the live interleaving did). */
typedef struct replay_gate {
  lm_source_def* root;
  lm_stream_def* stream; /* the stream held, or the stream sink is on */
  struct lm_sink* sink;  /* the sink held (NULL: the stream is) */
  uint64_t start;
  bool open;
} replay_gate;

typedef struct replay_gates {
  laminar_db* db;
  replay_gate* gates;
  int32_t n;
  /* The whole lists, as before the replay: per source its readers, per
   * stream its readers and its sinks. */
  lm_stream_def*** src_readers;
  lm_stream_def*** readers;
  struct lm_sink*** sinks;
} replay_gates;

/* Whether sink k, or stream s on the reader list of an input whose root
 * source is `root`, is held. */
static bool held(const replay_gates* G, const lm_stream_def* s, const struct lm_sink* k,
                 const lm_source_def* root) {
  for (int32_t i = 0; i < G->n; i++) {
    const replay_gate* x = &G->gates[i];
    if (x->open) continue;
    if (k != NULL ? x->sink == k
                  : x->sink == NULL && x->stream == s && (s->nin == 0 || x->root == root))
      return true;
  }
  return false;
}

/* dst: the NULL-terminated whole list without what is held (streams reading
 * an input whose root source is `root`, or sinks); in place, never longer.
 * Returns the count. */
static int32_t filter_held(const replay_gates* G, void** dst, void* const* whole,
                           bool sinks, const lm_source_def* root) {
  int32_t n = 0;
  for (int32_t j = 0; whole != NULL && whole[j] != NULL; j++)
    if (!held(G, sinks ? NULL : whole[j], sinks ? whole[j] : NULL, root))
      dst[n++] = whole[j];
  return n;
}

/* Each list from its whole copy without what is held. */
static void gates_apply(replay_gates* G) {
  lm_graph* g = &G->db->graph;
  for (int32_t i = 0; i < g->nsources; i++) {
    lm_source_def* src = g->sources[i];
    src->nreaders =
        filter_held(G, (void**)src->readers, (void* const*)G->src_readers[i], false, src);
  }
  for (int32_t i = 0; i < g->nstreams; i++) {
    lm_stream_def* s = g->streams[i];
    const lm_source_def* root = lm_db_root_source(G->db, s);
    s->nreaders =
        filter_held(G, (void**)s->readers, (void* const*)G->readers[i], false, root);
    s->nsinks = filter_held(G, (void**)s->sinks, (void* const*)G->sinks[i], true, NULL);
  }
}

/* A NULL-terminated copy of n pointers (NULL for none). */
static void* copy_list(void* const* p, int32_t n, bool* nomem) {
  if (n == 0) return NULL;
  void** c = lm_calloc((size_t)n + 1, sizeof *c);
  if (c == NULL) {
    *nomem = true;
    return NULL;
  }
  memcpy(c, p, sizeof *c * (size_t)n);
  return c;
}

/* Open every gate of `root` whose start is before `seq` (UINT64_MAX: all
 * gates), in graph order (upstream first): each starts at its input's
 * watermark now. */
static void gates_open(replay_gates* G, const lm_source_def* root, uint64_t seq) {
  bool changed = false;
  for (int32_t i = 0; i < G->n; i++) {
    replay_gate* x = &G->gates[i];
    if (x->open || (root != NULL && x->root != root) || x->start >= seq) continue;
    x->open = changed = true;
    if (x->sink != NULL) continue;
    lm_stream_def* s = x->stream;
    if (s->nin > 0) {
      /* The inputs from this root start at their watermark now; the stream
       * at the least of its inputs'. */
      int64_t least = INT64_MAX;
      for (int32_t b = 0; b < s->nin; b++) {
        if (lm_db_branch_root(G->db, s, b) == x->root) {
          const lm_stream_def* in =
              s->plan.branches[b].input_is_source
                  ? NULL
                  : lm_db_find_stream(G->db, s->plan.branches[b].input);
          s->in_wm[b] = in != NULL ? in->watermark_ms : x->root->watermark_ms;
        }
        if (s->in_wm[b] < least) least = s->in_wm[b];
      }
      lm_stream_def_sync_inputs(s); /* its partitions' too */
      if (least > s->watermark_ms) lm_stream_def_start_at(s, least);
      if (s->late != NULL) s->late->watermark_ms = s->watermark_ms;
      continue;
    }
    const lm_stream_def* up =
        s->plan.input_is_source ? NULL : lm_db_find_stream(G->db, s->plan.input);
    lm_stream_def_start_at(s, up != NULL ? up->watermark_ms : x->root->watermark_ms);
    if (s->late != NULL) s->late->watermark_ms = s->watermark_ms;
  }
  if (changed) gates_apply(G);
}

/* Open the gate of sink k (every source passed its CREATE positions). */
static void gates_open_sink(replay_gates* G, const struct lm_sink* k) {
  bool changed = false;
  for (int32_t i = 0; i < G->n; i++) {
    if (G->gates[i].open || G->gates[i].sink != k) continue;
    G->gates[i].open = changed = true;
  }
  if (changed) gates_apply(G);
}

static void gates_free(replay_gates* G) {
  if (G->gates == NULL) return;
  gates_open(G, NULL, UINT64_MAX); /* the whole lists back */
  lm_graph* g = &G->db->graph;
  for (int32_t i = 0; G->src_readers != NULL && i < g->nsources; i++)
    lm_free(G->src_readers[i]);
  for (int32_t i = 0; G->readers != NULL && G->sinks != NULL && i < g->nstreams; i++) {
    lm_free(G->readers[i]);
    lm_free(G->sinks[i]);
  }
  lm_free(G->src_readers);
  lm_free(G->readers);
  lm_free(G->sinks);
  lm_free(G->gates);
  *G = (replay_gates){0};
}

/* Whether sink k is on its stream's sink list (a connector's may not be yet). */
static bool sink_on_stream(const lm_sink_def* k) {
  for (int32_t j = 0; j < k->stream->nsinks; j++)
    if (k->stream->sinks[j] == k->sink) return true;
  return false;
}

/* Hold every stream and sink created after the restored position of its root
 * source (nothing held: G->gates stays NULL). */
static laminar_code gates_init(laminar_db* db, replay_gates* G, laminar_error* err) {
  *G = (replay_gates){.db = db};
  lm_graph* g = &db->graph;
  int32_t most = db->nsinks;
  for (int32_t i = 0; i < g->nstreams; i++)
    most += g->streams[i]->nin > 1 ? g->streams[i]->nin : 1;
  replay_gate* gates = lm_calloc((size_t)most + 1, sizeof *gates);
  if (gates == NULL) return lm_error_set(err, LAMINAR_ERR_NOMEM, "out of memory");
  int32_t n = 0;
  for (int32_t i = 0; i < g->nstreams; i++) {
    lm_stream_def* s = g->streams[i];
    if (s->late_of != NULL) continue;
    for (int32_t b = 0; s->in_start != NULL && b < s->nin; b++) {
      /* Per root source (two inputs from one source: one gate). */
      lm_source_def* root = lm_db_branch_root(db, s, b);
      bool seen = false;
      for (int32_t k = 0; k < b; k++) seen |= lm_db_branch_root(db, s, k) == root;
      if (seen || root == NULL || s->in_start[b] <= root->processed_seq) continue;
      gates[n++] = (replay_gate){.root = root, .stream = s, .start = s->in_start[b]};
    }
    lm_source_def* root = lm_db_root_source(db, s);
    if (s->in_start != NULL || root == NULL || s->start_seq <= root->processed_seq)
      continue;
    gates[n++] = (replay_gate){.root = root, .stream = s, .start = s->start_seq};
  }
  for (int32_t i = 0; i < db->nsinks; i++) {
    lm_sink_def* k = db->sinks[i];
    lm_source_def* root = lm_db_root_source(db, k->stream);
    uint64_t start = k->start_seq;
    /* On a union: held by an input whose root's start the checkpoint does
     * not cover (the replay's pass up to its starts opens it, sink_cuts). */
    for (int32_t b = 0; b < k->nin && b < k->stream->nin; b++) {
      lm_source_def* r = lm_db_branch_root(db, k->stream, b);
      root = r;
      start = k->in_start[b];
      if (r != NULL && k->in_start[b] > r->processed_seq) break;
    }
    if (!sink_on_stream(k) || root == NULL || start <= root->processed_seq) continue;
    gates[n++] =
        (replay_gate){.root = root, .stream = k->stream, .sink = k->sink, .start = start};
  }
  if (n == 0) {
    lm_free(gates);
    return LAMINAR_OK;
  }
  bool nomem = false;
  G->gates = gates;
  G->n = n;
  G->src_readers = lm_calloc((size_t)g->nsources + 1, sizeof *G->src_readers);
  G->readers = lm_calloc((size_t)g->nstreams + 1, sizeof *G->readers);
  G->sinks = lm_calloc((size_t)g->nstreams + 1, sizeof *G->sinks);
  nomem = G->src_readers == NULL || G->readers == NULL || G->sinks == NULL;
  for (int32_t i = 0; !nomem && i < g->nsources; i++)
    G->src_readers[i] =
        copy_list((void* const*)g->sources[i]->readers, g->sources[i]->nreaders, &nomem);
  for (int32_t i = 0; !nomem && i < g->nstreams; i++) {
    G->readers[i] =
        copy_list((void* const*)g->streams[i]->readers, g->streams[i]->nreaders, &nomem);
    G->sinks[i] =
        copy_list((void* const*)g->streams[i]->sinks, g->streams[i]->nsinks, &nomem);
  }
  if (nomem) {
    for (int32_t i = 0; i < G->n; i++) G->gates[i].open = true; /* nothing held */
    gates_free(G);
    return lm_error_set(err, LAMINAR_ERR_NOMEM, "out of memory");
  }
  gates_apply(G);
  return LAMINAR_OK;
}

typedef struct replay_ctx {
  lm_rt* rt;
  laminar_db* db;
  lm_source_def* src;
  replay_gates* gates;
  uint64_t replayed;
  uint64_t quiet_upto; /* records up to here feed no sink (their epochs are published) */
  uint64_t stop_after; /* records after this one are left for a later pass */
  bool quiet;          /* the sinks are detached (set_quiet) */
  int32_t* saved;      /* meanwhile, each stream's sink count */
} replay_ctx;

/* Detach (quiet) or reattach every stream's sinks: while detached the
 * replayed rows belong to epochs the sinks have published (a fallback to an
 * older checkpoint). Recovery runs alone: nothing else sees the graph. */
static void set_quiet(replay_ctx* c, bool quiet) {
  if (c->quiet == quiet) return;
  lm_graph* g = &c->db->graph;
  for (int32_t i = 0; i < g->nstreams; i++) {
    if (quiet) {
      c->saved[i] = g->streams[i]->nsinks;
      g->streams[i]->nsinks = 0;
    } else {
      g->streams[i]->nsinks = c->saved[i];
    }
  }
  c->quiet = quiet;
}

static laminar_code replay_record(void* arg, const lm_wal_record* rec,
                                  laminar_error* err) {
  replay_ctx* c = arg;
  lm_source_def* src = c->src;
  if (rec->seq <= src->processed_seq || rec->seq > c->stop_after) return LAMINAR_OK;
  if (rec->voided) {
    /* Refused live (a VOID names it), or a VOID: taken, never applied. */
    src->processed_seq = rec->seq;
    return LAMINAR_OK;
  }
  if (c->gates->gates != NULL) {
    /* Opening a gate sets the sink lists anew from the whole ones: with the
     * sinks attached, or it would attach them in the middle of a quiet run
     * (publishing its epochs again) and set_quiet(false) would put back
     * lists saved before the gate opened. */
    bool quiet = c->quiet;
    set_quiet(c, false);
    gates_open(c->gates, src, rec->seq);
    set_quiet(c, quiet);
  }
  lm_msg* msg = lm_calloc(1, sizeof *msg);
  if (msg == NULL) return lm_error_set(err, LAMINAR_ERR_NOMEM, "out of memory");
  msg->seq = rec->seq;
  msg->watermark_ms = INT64_MIN;
  lm_state_reader r;
  lm_state_reader_init(&r, rec->payload, rec->len);
  laminar_code rc = LAMINAR_OK;
  if (rec->type == WAL_BATCH_COMPACT) {
    rc = lm_batch_decode_compact(&src->schema, &r, &msg->batch, err);
    if (rc == LAMINAR_OK && r.pos != r.len) {
      lm_batch_unref(msg->batch);
      msg->batch = NULL;
      rc = lm_error_set(err, LAMINAR_ERR_IO, "%zu bytes after the logged batch",
                        r.len - r.pos);
    }
  } else if (rec->type == WAL_BATCH) {
    rc = lm_batch_decode(&src->schema, &r, &msg->batch, err);
  } else if (rec->type == WAL_WATERMARK) {
    msg->watermark_ms = lm_state_get_i64(&r);
    if (r.failed)
      rc = lm_error_set(err, LAMINAR_ERR_RECOVERY, "WAL: truncated watermark record");
  } else {
    rc =
        lm_error_set(err, LAMINAR_ERR_RECOVERY, "WAL: unknown record type %u", rec->type);
  }
  if (rc != LAMINAR_OK) {
    lm_free(msg);
    char why[sizeof err->message]; /* lm_error_set clears err->message first */
    snprintf(why, sizeof why, "%s", err ? err->message : "undecodable");
    return lm_error_set(err, LAMINAR_ERR_RECOVERY,
                        "source '%s': WAL record %" PRIu64 ": %s", src->name, rec->seq,
                        why);
  }
  c->replayed++;
  set_quiet(c, rec->seq <= c->quiet_upto);
  rc = lm_rt_process_now(c->rt, src, msg); /* consumes msg */
  if (rc == LAMINAR_ERR_MEMORY_LIMIT || lm_expr_udf_failed(rc)) {
    /* The live run refused this batch at its stream's max_state_bytes, or a
     * user-defined function failed on it, and left the state as it was
     * (issue 20, 23): so does the replay, which then goes on as the live run
     * did. The failure's text is dropped. */
    lm_rt_processing_error(c->rt->graph, rc, "", NULL);
    return LAMINAR_OK;
  }
  if (rc != LAMINAR_OK) {
    /* The graph reports no detail (ring 0): a sink's own error says which
     * file and what failed. */
    const char* why = laminar_errstr(rc);
    for (int32_t i = 0; i < c->db->nsinks; i++) {
      lm_sink* k = c->db->sinks[i]->sink;
      const char* e = k->vt->last_error != NULL ? k->vt->last_error(k) : NULL;
      if (e != NULL && e[0] != '\0') why = e;
    }
    if (strncmp(why, "LDB-", 4) == 0 && strlen(why) > 10 && why[8] == ':') why += 10;
    return lm_error_set(err, rc,
                        "source '%s': replaying WAL record %" PRIu64 " failed: %s",
                        src->name, rec->seq, why);
  }
  return LAMINAR_OK;
}

static char* read_text(const char* path, bool* missing, size_t* out_len) {
  *missing = false;
  if (out_len != NULL) *out_len = 0;
  FILE* f = fopen(path, "rb");
  if (f == NULL) {
    *missing = errno == ENOENT;
    return NULL;
  }
  char* buf = NULL;
  size_t len = 0, cap = 0;
  char chunk[4096];
  size_t n;
  while ((n = fread(chunk, 1, sizeof chunk, f)) > 0) {
    if (len + n + 1 > cap) {
      cap = (len + n + 1) * 2;
      char* g = lm_realloc(buf, cap);
      if (g == NULL) {
        lm_free(buf);
        fclose(f);
        return NULL;
      }
      buf = g;
    }
    memcpy(buf + len, chunk, n);
    len += n;
  }
  fclose(f);
  if (buf == NULL)
    buf = lm_calloc(1, 1);
  else
    buf[len] = '\0';
  if (out_len != NULL) *out_len = len;
  return buf;
}

/* Attach a connector sink: recover(epoch of the restored checkpoint), then
 * begin the next epoch. On failure nothing is attached (cb not released). */
static laminar_code attach_callback_sink(laminar_db* db, const char* name,
                                         const char* stream,
                                         const laminar_sink_callbacks* cb,
                                         laminar_error* err) {
  lm_stream_def* st = lm_db_find_stream(db, stream);
  if (st == NULL) {
    laminar_code rc = lm_error_set(err, LAMINAR_ERR_SQL_UNKNOWN_OBJECT,
                                   "sink '%s': no stream named '%s'", name, stream);
    lm_error_object(err, stream, NULL);
    return rc;
  }
  if (lm_db_name_taken(db, name)) {
    laminar_code rc = lm_error_set(err, LAMINAR_ERR_SQL_DUPLICATE_OBJECT,
                                   "an object named '%s' already exists", name);
    lm_error_object(err, name, NULL);
    return rc;
  }
  laminar_sink_callbacks quiet = *cb;
  quiet.release = NULL; /* the caller keeps ownership until attached */
  lm_sink_def* k = lm_calloc(1, sizeof *k);
  if (k == NULL) return lm_error_set(err, LAMINAR_ERR_NOMEM, "out of memory");
  k->stream = st;
  k->name = lm_strdup(name);
  laminar_code rc =
      k->name == NULL
          ? lm_error_set(err, LAMINAR_ERR_NOMEM, "out of memory")
          : lm_callback_sink_create(name, &st->out_schema, &quiet, &k->sink, err);
  /* Its callbacks run on a sink thread (sink/queue.c), never on the reactor. */
  if (rc == LAMINAR_OK) {
    lm_sink* inner = k->sink;
    k->sink = NULL; /* the queue's now, closed by it on failure */
    rc = lm_sink_queue_open(inner, db->buffer_size, &k->sink, err);
  }
  if (rc == LAMINAR_OK) rc = k->sink->vt->recover(k->sink, db->dur->epoch, err);
  bool was = db->dur->recovering;
  db->dur->recovering = false; /* begin now */
  if (rc == LAMINAR_OK) rc = lm_db_attach_sink(db, k, err);
  db->dur->recovering = was;
  if (rc != LAMINAR_OK) {
    lm_db_sink_free(k);
    return rc;
  }
  lm_callback_sink_own(k->sink, cb->release); /* attached: release with the sink */
  return LAMINAR_OK;
}

laminar_code lm_durable_register_sink(laminar_db* db, const char* name,
                                      const char* stream,
                                      const laminar_sink_callbacks* cb,
                                      laminar_error* err) {
  if (db->dur == NULL)
    return lm_error_set(
        err, LAMINAR_ERR_CONFIG_CONFLICT,
        "sink '%s': a sink publishes at checkpoints: open the database with "
        "data_dir and checkpoint_interval",
        name);
  if (db->dur->conf.read_only) {
    laminar_code rc = lm_durable_refuse_write(db->dur, "attaches no sink", err);
    lm_error_object(err, name, NULL);
    return rc;
  }
  return attach_callback_sink(db, name, stream, cb, err);
}

static laminar_code attach_config_sinks(laminar_db* db, lm_durable* d,
                                        laminar_error* err) {
  for (int32_t i = 0; i < d->nconfig_sinks; i++) {
    lm_config_sink* c = &d->config_sinks[i];
    if (atomic_exchange(&c->attached, true))
      return lm_error_set(
          err, LAMINAR_ERR_STATE,
          "sink '%s': this config's sinks were attached by another database", c->name);
    laminar_code rc = attach_callback_sink(db, c->name, c->stream, &c->cb, err);
    if (rc != LAMINAR_OK) {
      atomic_store(&c->attached, false); /* not taken: the config still owns it */
      return rc;
    }
  }
  return LAMINAR_OK;
}

/* Whether the directory holds durable data: a checkpoint file, or a WAL
 * directory. */
static bool has_data(const lm_durable* d) {
  bool any = false;
  const char* dirs[2] = {d->ckpt_dir, d->wal_dir};
  for (int k = 0; k < 2 && !any; k++) {
    DIR* dh = opendir(dirs[k]);
    struct dirent* e;
    while (dh != NULL && !any && (e = readdir(dh)) != NULL)
      any = k == 0 ? strncmp(e->d_name, "ckpt-", 5) == 0 : e->d_name[0] != '.';
    if (dh != NULL) closedir(dh);
  }
  return any;
}

/* Read catalog.sql: *sql the statements to run (NULL: none, a new
 * directory). A file with the header must match its length and CRC-32C; one
 * without (an earlier build's) is taken as it is. Missing or empty while
 * checkpoints or WAL exist: LDB-5002, never an empty database. */
static laminar_code read_catalog(lm_durable* d, char** sql, laminar_error* err) {
  *sql = NULL;
  char* path = join(d->dir, CATALOG_NAME);
  if (path == NULL) return lm_error_set(err, LAMINAR_ERR_NOMEM, "out of memory");
  bool missing;
  size_t len;
  char* text = read_text(path, &missing, &len);
  laminar_code rc = LAMINAR_OK;
  if (text == NULL && !missing) {
    rc = lm_error_set(err, LAMINAR_ERR_IO, "cannot read %s: %s", path, strerror(errno));
  } else if ((text == NULL || len == 0) && has_data(d)) {
    rc = lm_error_set(
        err, LAMINAR_ERR_RECOVERY,
        "%s is %s while checkpoints or WAL exist in %s: the database's catalog is "
        "lost (restore the file, or remove checkpoints/ and wal/ to start empty)",
        path, text == NULL ? "missing" : "empty", d->dir);
  } else if (text == NULL || len == 0) {
    d->catalog_missing =
        true; /* a new directory: written by the first DDL or checkpoint */
  } else if (len < 2 || memcmp(text, "--", 2) != 0) {
    d->legacy_catalog = true; /* an earlier build's: no header, no identities */
    *sql = text;
    text = NULL;
  } else {
    /* "-- laminardb catalog 2 bytes=<20 digits> crc32c=<8 hex>\n" */
    size_t mlen = strlen(CATALOG_MAGIC);
    const char* eol = memchr(text, '\n', len);
    size_t hlen = eol != NULL ? (size_t)(eol - text) + 1 : 0;
    char* end = NULL;
    unsigned long long bytes = 0;
    unsigned long crc = 0;
    bool ok = hlen == mlen + 44 && memcmp(text, CATALOG_MAGIC, mlen) == 0 &&
              memcmp(text + mlen, " bytes=", 7) == 0 &&
              memcmp(text + mlen + 27, " crc32c=", 8) == 0;
    if (ok) {
      bytes = strtoull(text + mlen + 7, &end, 10);
      ok = end == text + mlen + 27;
    }
    if (ok) {
      crc = strtoul(text + mlen + 35, &end, 16);
      ok = end == text + mlen + 43;
    }
    if (!ok) {
      rc = lm_error_set(err, LAMINAR_ERR_RECOVERY,
                        "%s: damaged header (the first line is not '" CATALOG_MAGIC
                        " bytes=<n> crc32c=<x>')",
                        path);
    } else if (bytes != len - hlen || crc != lm_crc32c(0, text + hlen, len - hlen)) {
      rc = lm_error_set(
          err, LAMINAR_ERR_RECOVERY,
          "%s is damaged: %s (the header says %llu bytes, CRC-32C %08lx; the file "
          "has %zu bytes, CRC-32C %08x)",
          path, bytes != len - hlen ? "wrong length" : "CRC mismatch", bytes, crc,
          len - hlen, (unsigned)lm_crc32c(0, text + hlen, len - hlen));
    } else if (memchr(text, '\0', len) != NULL) {
      rc = lm_error_set(err, LAMINAR_ERR_RECOVERY, "%s: a NUL byte in the text", path);
    } else {
      rc = parse_idents(d, text + hlen, err);
      if (rc == LAMINAR_OK) {
        *sql = text;
        text = NULL;
      }
    }
  }
  lm_free(text);
  lm_free(path);
  return rc;
}

/* Remove the WAL directories no source of the catalog owns: logs of dropped
 * sources (a DROP removes its log after the catalog without it is on disk; a
 * crash in between leaves it). */
static laminar_code drop_orphan_wals(laminar_db* db, lm_durable* d, laminar_error* err) {
  DIR* dh = opendir(d->wal_dir);
  if (dh == NULL) return LAMINAR_OK;
  char names[64][256];
  int32_t n = 0;
  struct dirent* e;
  while ((e = readdir(dh)) != NULL && n < 64) {
    if (e->d_name[0] == '.') continue;
    const lm_source_def* s = lm_db_find_source(db, e->d_name);
    if (s != NULL && s->wal != NULL && strcmp(s->name, e->d_name) == 0) continue;
    snprintf(names[n++], sizeof names[0], "%s", e->d_name);
  }
  closedir(dh);
  for (int32_t i = 0; i < n; i++) {
    char* dir = join(d->wal_dir, names[i]);
    if (dir == NULL) return lm_error_set(err, LAMINAR_ERR_NOMEM, "out of memory");
    char what[300];
    snprintf(what, sizeof what, "dropped source '%s'", names[i]);
    laminar_code rc = wipe_dir(dir, what, err);
    lm_free(dir);
    LM_TRY(rc);
    report(d, "source '%s': WAL of a dropped source removed", names[i]);
  }
  return LAMINAR_OK;
}

/* A read-only open replays a source's log where it lies, up to any damage,
 * which is reported and left as it is (lm_wal_replay_readonly). */
static laminar_code replay_readonly(lm_durable* d, replay_ctx* c, laminar_error* err) {
  char* dir = join(d->wal_dir, c->src->name);
  if (dir == NULL) return lm_error_set(err, LAMINAR_ERR_NOMEM, "out of memory");
  lm_wal_report rep;
  const uint64_t covered = c->src->processed_seq; /* the restored checkpoint's */
  laminar_code rc =
      lm_wal_replay_readonly(dir, covered + 1, covered, replay_record, c, &rep, err);
  if (rc == LAMINAR_OK)
    report_wal_skip(d, c->src->name, dir, &rep, covered,
                    (rep.last_seq > covered ? rep.last_seq : covered) + 1);
  lm_free(dir);
  if (rc == LAMINAR_OK && rep.cut)
    report(d,
           "source '%s': WAL damaged after record %" PRIu64 " (%" PRIu64
           " bytes after it unread; read-only: nothing cut): %s",
           c->src->name, rep.last_seq, rep.bytes_cut, rep.reason);
  return rc;
}

/* A point of the live run where the replay stops every source first (one
 * pass over the sources): upto[i] is the last record of source i (graph
 * order) the pass takes, 0 for none. `sink`: the sink on a union created
 * there, held during the pass and attached after it; NULL for the quiet
 * positions (below). */
typedef struct replay_cut {
  uint64_t* upto;
  const lm_sink_def* sink;
  /* An idleness change logged live (idle.log): applied to idle_src once
   * every source is replayed up to upto; idle -1: none. */
  lm_source_def* idle_src;
  int8_t idle;
} replay_cut;

/* Whether cut x stands before cut y in the live run: some source both name
 * is further in y. (Cuts are positions of one run, so they never cross.) */
static bool cut_before(const replay_cut* x, const replay_cut* y, int32_t nsources) {
  for (int32_t i = 0; i < nsources; i++)
    if (x->upto[i] != 0 && y->upto[i] != 0 && x->upto[i] != y->upto[i])
      return x->upto[i] < y->upto[i];
  return false;
}

/* The cuts of the replay, in the order of the live run: the quiet positions
 * (`quiet`), and each sink on a union created after the restored
 * checkpoint, at its inputs' root positions of its CREATE. Live, such a sink
 * got the union's output from the records after those positions, every
 * source's; a replay of one source after another would hand it windows
 * that closed before it existed, or withhold ones closed after, depending on
 * which source's record closes them. Replaying every source to the sink's
 * positions first (sink held), then on (sink attached), closes exactly the
 * windows the live run closed before the CREATE in the first pass: a
 * window closes once every input's watermark passed it, and each input's
 * watermark and accepted rows depend on that input's records only. */
static laminar_code replay_cuts(laminar_db* db, lm_durable* d, bool quiet,
                                replay_cut** out, int32_t* nout, laminar_error* err) {
  lm_graph* g = &db->graph;
  *out = NULL;
  *nout = 0;
  replay_cut* cuts = lm_calloc((size_t)db->nsinks + 1, sizeof *cuts);
  if (cuts == NULL) return lm_error_set(err, LAMINAR_ERR_NOMEM, "out of memory");
  int32_t n = 0;
  laminar_code rc = LAMINAR_OK;
  for (int32_t k = -1; k < db->nsinks && rc == LAMINAR_OK; k++) {
    const lm_sink_def* sink = k >= 0 ? db->sinks[k] : NULL;
    if (sink == NULL && !quiet) continue;
    if (sink != NULL) {
      bool after = false;
      for (int32_t b = 0; b < sink->nin && b < sink->stream->nin; b++) {
        const lm_source_def* r = lm_db_branch_root(db, sink->stream, b);
        after |= r != NULL && sink->in_start[b] > r->processed_seq;
      }
      if (!after || !sink_on_stream(sink)) continue;
    }
    uint64_t* upto = lm_calloc((size_t)g->nsources + 1, sizeof *upto);
    if (upto == NULL) {
      rc = lm_error_set(err, LAMINAR_ERR_NOMEM, "out of memory");
      break;
    }
    for (int32_t i = 0; i < g->nsources; i++) {
      const lm_source_def* src = g->sources[i];
      if (sink == NULL) upto[i] = pos_find(&d->replay_quiet, src->name, src->incarnation);
      for (int32_t b = 0; sink != NULL && b < sink->nin && b < sink->stream->nin; b++) {
        if (lm_db_branch_root(db, sink->stream, b) == src && sink->in_start[b] > upto[i])
          upto[i] = sink->in_start[b];
      }
    }
    /* In live order (sinks are in creation order; the quiet positions go
     * where they stand among them). */
    int32_t at = n;
    while (at > 0 &&
           cut_before(&(replay_cut){upto, sink, NULL, -1}, &cuts[at - 1], g->nsources)) {
      cuts[at] = cuts[at - 1];
      at--;
    }
    cuts[at] = (replay_cut){upto, sink, NULL, -1};
    n++;
  }
  if (rc != LAMINAR_OK) {
    for (int32_t i = 0; i < n; i++) lm_free(cuts[i].upto);
    lm_free(cuts);
    return rc;
  }
  *out = cuts;
  *nout = n;
  return LAMINAR_OK;
}

/* ---- idleness, logged where it took effect ------------------------------------
 * idle.log in data_dir (store/idlelog.h): one record per idleness change the
 * reactor applied (rt.h idle_hook): the last completed checkpoint then, the
 * source and the change, and every source's position (processed_seq) at
 * that moment. Fsynced when the source's wal_mode is sync (as its WAL
 * records), else it survives a kill -9 by the page cache, like the async
 * WAL; a torn tail is cut at open; each checkpoint prunes what no
 * restorable checkpoint needs. WAL replay applies each change after every
 * source is replayed up to its positions (replay_all's cuts), so a restart
 * judges rows as the live run did. */

/* Append one record: `kind` (0 active, 1 idle: an idleness change of src;
 * 2: a lookup-join order point, no change) and every source's position. */
static void log_point(lm_durable* d, const lm_source_def* src, uint8_t kind) {
  lm_graph* g = &d->db->graph;
  lm_state_writer w;
  lm_state_writer_init(&w);
  lm_state_put_i64(&w, (int64_t)__atomic_load_n(&d->epoch, __ATOMIC_RELAXED));
  put_name(&w, src->name);
  lm_state_put_i64(&w, (int64_t)src->incarnation);
  lm_state_put_u8(&w, kind);
  lm_state_put_u32(&w, (uint32_t)g->nsources);
  for (int32_t i = 0; i < g->nsources; i++) {
    const lm_source_def* s = g->sources[i];
    put_name(&w, s->name);
    lm_state_put_i64(&w, (int64_t)s->incarnation);
    lm_state_put_i64(&w, (int64_t)s->processed_seq);
  }
  /* Not written (no memory, an I/O error): a restart replays the rows after
   * the last checkpoint without this point, as before idle.log existed.
   * Reported nowhere: the reactor takes no lock a checkpoint may hold (the
   * log's own lock is held for its file operations only). */
  if (lm_state_writer_status(&w) == LAMINAR_OK)
    (void)lm_idlelog_append(&d->idle, w.data, w.len, src->wal_sync);
  lm_state_writer_free(&w);
}

static void idle_logged(void* arg, const lm_source_def* src, bool idle) {
  log_point(arg, src, idle ? 1 : 0);
}

/* rt.h order_hook: src takes over from the other side of a lookup join. The
 * replay stops every source here first, so between two points only one side
 * of the join moves, whatever the order the sources are replayed in. */
static void order_logged(void* arg, const lm_source_def* src) { log_point(arg, src, 2); }

/* rt.h void_hook: the batch of record `seq` of src was refused for memory
 * (not applied; its producer may push it again), so a replay must not apply
 * it: a VOID naming it goes into the source's log, synced when the source's
 * wal_mode is sync, before the refusal reaches the producer. Not written (no
 * memory, an I/O error): the message fails with LDB-5001 instead, which
 * tells the producer the batch is not known to be refused. */
static laminar_code void_logged(void* arg, const lm_source_def* src, uint64_t seq) {
  LM_UNUSED(arg);
  if (src->wal == NULL) return LAMINAR_OK;
  laminar_code rc = lm_wal_void(src->wal, seq, src->wal_sync, NULL);
  return rc == LAMINAR_OK ? rc : LAMINAR_ERR_IO;
}

/* What idle_cuts reads the log with. */
typedef struct idle_reading {
  laminar_db* db;
  uint64_t epoch;
  replay_cut** cuts;
  int32_t* ncuts;
  laminar_error* err;
} idle_reading;

/* One record of idle.log: a cut when it is after the restored checkpoint. */
static laminar_code idle_record(void* arg, const uint8_t* p, size_t n) {
  idle_reading* c = arg;
  lm_graph* g = &c->db->graph;
  lm_state_reader r;
  lm_state_reader_init(&r, p, n);
  uint64_t ep = (uint64_t)lm_state_get_i64(&r);
  lm_str nm = lm_state_get_bytes(&r);
  uint64_t inc = (uint64_t)lm_state_get_i64(&r);
  int8_t idle = (int8_t)lm_state_get_u8(&r);
  uint32_t nsrc = lm_state_get_u32(&r);
  if (r.failed || ep + 1 < c->epoch) return LAMINAR_OK;
  lm_source_def* src = NULL;
  for (int32_t i = 0; i < g->nsources; i++) {
    lm_source_def* s = g->sources[i];
    if (s->incarnation == inc && strlen(s->name) == (size_t)nm.len &&
        memcmp(s->name, nm.ptr, (size_t)nm.len) == 0)
      src = s;
  }
  uint64_t* upto = lm_calloc((size_t)g->nsources + 1, sizeof *upto);
  replay_cut* grown = lm_realloc(*c->cuts, sizeof **c->cuts * (size_t)(*c->ncuts + 1));
  if (grown != NULL) *c->cuts = grown;
  if (upto == NULL || grown == NULL) {
    lm_free(upto);
    return lm_error_set(c->err, LAMINAR_ERR_NOMEM, "out of memory");
  }
  for (uint32_t k = 0; k < nsrc && !r.failed; k++) {
    lm_str sn = lm_state_get_bytes(&r);
    uint64_t si = (uint64_t)lm_state_get_i64(&r);
    uint64_t seq = (uint64_t)lm_state_get_i64(&r);
    for (int32_t i = 0; i < g->nsources; i++) {
      const lm_source_def* s = g->sources[i];
      if (s->incarnation == si && strlen(s->name) == (size_t)sn.len &&
          memcmp(s->name, sn.ptr, (size_t)sn.len) == 0)
        upto[i] = seq;
    }
  }
  if (src == NULL || r.failed) { /* dropped since, or unreadable: nothing to do */
    lm_free(upto);
    return LAMINAR_OK;
  }
  replay_cut cut = {upto, NULL, src, idle == 2 ? -1 : idle}; /* 2: an order point */
  int32_t k = *c->ncuts;
  while (k > 0 && cut_before(&cut, &(*c->cuts)[k - 1], g->nsources)) {
    (*c->cuts)[k] = (*c->cuts)[k - 1];
    k--;
  }
  (*c->cuts)[k] = cut;
  (*c->ncuts)++;
  return LAMINAR_OK;
}

/* Add the logged idleness changes after checkpoint `epoch` to cuts (in live
 * order). A record whose checkpoint is one before `epoch` may come before
 * or after that checkpoint's barrier: applied either way (before it, the
 * later changes restore what the checkpoint holds). A torn tail is cut off
 * the file (reported), so the changes logged from now on follow the last
 * good record. */
static laminar_code idle_cuts(laminar_db* db, lm_durable* d, uint64_t epoch,
                              replay_cut** cuts, int32_t* ncuts, laminar_error* err) {
  idle_reading c = {db, epoch, cuts, ncuts, err};
  int64_t cut = 0;
  LM_TRY(lm_idlelog_read(&d->idle, true, &cut, idle_record, &c, err));
  if (cut > 0)
    report(d, "%s: a torn tail of %" PRId64 " bytes cut at the last good record",
           d->idle.path, cut);
  return LAMINAR_OK;
}

/* Replay every source's WAL after the restored positions. Records up to
 * d->replay_quiet's positions (a fallback past a lost checkpoint,
 * `quiet_epoch`) feed no sink: their epochs may be published. With a
 * stream over several inputs that takes passes (replay_cuts): every source
 * up to its quiet position, then every source's rest -- one source replayed
 * whole before the next would close, quietly, windows whose rows the
 * published epochs did not hold (the other inputs were not that far yet);
 * likewise every source up to the positions where a sink on a union was
 * created, then on. */
static laminar_code replay_all(laminar_db* db, lm_durable* d, uint64_t quiet_epoch,
                               uint64_t restored_epoch, laminar_error* err) {
  lm_graph* g = &db->graph;
  bool branched = false;
  for (int32_t i = 0; i < g->nstreams; i++) branched |= g->streams[i]->nin > 1;
  /* Before the gates take held sinks off their streams' lists. */
  replay_cut* cuts = NULL;
  int32_t ncuts = 0;
  laminar_code rc = LAMINAR_OK;
  if (!d->conf.read_only) {
    LM_TRY(replay_cuts(db, d, quiet_epoch != 0 && branched, &cuts, &ncuts, err));
    rc = idle_cuts(db, d, restored_epoch, &cuts, &ncuts, err);
  }
  replay_gates G = {0};
  if (rc == LAMINAR_OK) rc = gates_init(db, &G, err);
  int32_t* saved =
      rc == LAMINAR_OK ? lm_calloc((size_t)g->nstreams + 1, sizeof *saved) : NULL;
  if (rc == LAMINAR_OK && saved == NULL)
    rc = lm_error_set(err, LAMINAR_ERR_NOMEM, "out of memory");
  for (int32_t pass = 0; pass < (ncuts + 1) * g->nsources && rc == LAMINAR_OK; pass++) {
    int32_t i = pass % g->nsources;
    const replay_cut* cut = pass / g->nsources < ncuts ? &cuts[pass / g->nsources] : NULL;
    /* Every source is where the previous cut stood: its idleness change now. */
    const replay_cut* prev = i == 0 && pass > 0 ? &cuts[pass / g->nsources - 1] : NULL;
    if (prev != NULL && prev->idle >= 0) {
      /* The change is what the live run's round made of the messages before
       * it: what the replayed ones ask (idle_next, lm_rt_msg_advance) is
       * spent, or the first live round would apply it again (a source idle
       * since then made active). */
      prev->idle_src->idle_next = 0;
      rc = lm_rt_apply_idleness(&db->rt, prev->idle_src, prev->idle == 1);
      if (rc != LAMINAR_OK) break;
    }
    lm_source_def* s = g->sources[i];
    replay_ctx c = {.rt = &db->rt,
                    .db = db,
                    .src = s,
                    .gates = &G,
                    .saved = saved,
                    .quiet_upto = pos_find(&d->replay_quiet, s->name, s->incarnation)};
    c.stop_after = cut != NULL ? cut->upto[i] : UINT64_MAX;
    if (d->conf.read_only) { /* file sinks discard there: no quiet needed */
      rc = replay_readonly(d, &c, err);
      continue;
    }
    if (s->wal == NULL) continue;
    if (c.stop_after > s->processed_seq)
      rc = lm_wal_replay_upto(s->wal, s->processed_seq + 1, c.stop_after, replay_record,
                              &c, err);
    set_quiet(&c, false);
    if (rc == LAMINAR_OK && cut != NULL && cut->sink != NULL && i == g->nsources - 1)
      gates_open_sink(&G, cut->sink->sink); /* every source at its CREATE: attached */
    if (rc == LAMINAR_OK && cut == NULL && c.quiet_upto > s->processed_seq &&
        db->nsinks > 0) {
      /* With sinks the log must reach the positions whose epochs may be
       * published, or the state would lack rows the sinks hold (without,
       * the producer resumes from the offset: nothing is published). */
      char what[300];
      snprintf(what, sizeof what,
               "source '%s': the WAL (%.200s/%s) ends at record %" PRIu64, s->name,
               d->wal_dir, s->name, s->processed_seq);
      rc = lm_error_set(
          err, LAMINAR_ERR_RECOVERY,
          "%s, before record %" PRIu64 " where checkpoint %" PRIu64
          " (%.200s/ckpt-%020" PRIu64
          ".bin, damaged or missing) stood; its "
          "epochs may be published by the sinks, so the state cannot be rebuilt "
          "without those records",
          what, c.quiet_upto, quiet_epoch, d->ckpt_dir, quiet_epoch);
    }
  }
  for (int32_t k = 0; k < ncuts; k++) lm_free(cuts[k].upto);
  lm_free(cuts);
  lm_free(saved);
  if (G.db != NULL)
    gates_free(&G); /* what the log did not reach starts now, at its input's watermark */
  return rc;
}

/* Prefix err's message (a failure of a recovery step) with `what`. */
static laminar_code recovery_context(laminar_error* err, laminar_code rc,
                                     const char* what) {
  char msg[sizeof err->message];
  snprintf(msg, sizeof msg, "%s", err != NULL ? err->message : "");
  return lm_error_set(err, rc, "%s: %s", what, msg);
}

/* The newest whole checkpoint (read, not restored: the sources' WALs,
 * opened as the catalog runs, need its positions -- damage below them is
 * skipped, not cut) into *data, and its positions into d->restored; a
 * newer checkpoint whose positions survive (it is damaged or missing: its
 * positions file is written before it) into d->replay_quiet and *quiet_epoch
 * (0: none). Its epochs may be published: the replay up to its positions
 * rebuilds its state and publishes nothing, and the sinks go on after it. */
static laminar_code load_checkpoints(lm_durable* d, bool* found, uint64_t* epoch,
                                     uint8_t** data, size_t* len, uint64_t* quiet_epoch,
                                     lm_ckpt_report* crep, laminar_error* err) {
  *quiet_epoch = 0;
  LM_TRY(lm_ckpt_load_latest(d->ckpt_dir, found, epoch, data, len, crep, err));
  char file[300];
  snprintf(file, sizeof file, "%.240s/ckpt-%020" PRIu64 ".bin", d->ckpt_dir, *epoch);
  laminar_code rc =
      *found ? parse_positions(*data, *len, file, &d->restored, err) : LAMINAR_OK;
  uint8_t* pdata = NULL;
  size_t plen = 0;
  bool pfound = false;
  if (rc == LAMINAR_OK)
    rc = lm_ckpt_load_positions(d->ckpt_dir, *epoch, &pfound, quiet_epoch, &pdata, &plen,
                                err);
  if (rc == LAMINAR_OK && pfound) {
    snprintf(file, sizeof file, "%.240s/pos-%020" PRIu64 ".bin", d->ckpt_dir,
             *quiet_epoch);
    rc = parse_positions(pdata, plen, file, &d->replay_quiet, err);
  }
  lm_free(pdata);
  if (rc != LAMINAR_OK) {
    lm_free(*data);
    *data = NULL;
    return rc;
  }
  if (crep->skipped > 0 && pfound)
    report(d,
           "%d damaged checkpoint(s) skipped: %s; restored checkpoint %" PRIu64
           ", then the WAL replayed up to checkpoint %" PRIu64
           "'s positions without "
           "publishing its epochs again",
           crep->skipped, crep->reason, *epoch, *quiet_epoch);
  else if (crep->skipped > 0)
    report(d, "%d damaged checkpoint(s) skipped: %s; restored checkpoint %" PRIu64,
           crep->skipped, crep->reason, *epoch);
  else if (pfound)
    report(d,
           "checkpoint %" PRIu64 " (%.240s/ckpt-%020" PRIu64
           ".bin) is missing: restored "
           "checkpoint %" PRIu64
           ", then the WAL replayed up to its positions without "
           "publishing its epochs again",
           *quiet_epoch, d->ckpt_dir, *quiet_epoch, *epoch);
  return LAMINAR_OK;
}

static laminar_code recover(laminar_db* db, lm_durable* d, laminar_error* err) {
  bool found = false;
  uint64_t epoch = 0, quiet_epoch = 0;
  uint8_t* data = NULL;
  size_t len = 0;
  lm_ckpt_report crep;
  struct stat st;
  /* Read-only and never checkpointed: the directory is not made either. */
  if (!d->conf.read_only || stat(d->ckpt_dir, &st) == 0 || errno != ENOENT)
    LM_TRY(load_checkpoints(d, &found, &epoch, &data, &len, &quiet_epoch, &crep, err));
  char* sql;
  laminar_code rc = read_catalog(d, &sql, err);
  if (rc == LAMINAR_OK && sql != NULL) {
    d->recovering = true;
    rc = lm_db_execute_locked(db, sql, NULL, err);
    d->recovering = false;
    lm_free(sql);
    free_idents(d);
    if (rc != LAMINAR_OK) {
      char msg[sizeof err->message];
      snprintf(msg, sizeof msg, "%s", err ? err->message : "");
      rc = lm_error_set(err, LAMINAR_ERR_RECOVERY, "%s/" CATALOG_NAME " does not run: %s",
                        d->dir, msg);
    }
  }
  free_idents(d);
  /* Read-only: every log is unowned (no source opened its WAL); nothing is removed. */
  if (rc == LAMINAR_OK && !d->conf.read_only) rc = drop_orphan_wals(db, d, err);
  if (rc == LAMINAR_OK && found) {
    char file[64];
    snprintf(file, sizeof file, "checkpoints/ckpt-%020" PRIu64 ".bin", epoch);
    rc = restore(db, data, len, file, err);
  }
  lm_free(data);
  LM_TRY(rc);
  /* The WAL keeps what the restored checkpoint does not cover. */
  pos_list_free(&d->prev);
  d->prev = d->restored;
  d->restored = (pos_list){0};
  uint64_t resume = quiet_epoch > 0 ? quiet_epoch : epoch;
  d->epoch = d->attempted = resume;
  /* Sinks: staged epochs up to the checkpoint (or the fallback's newer
   * positions) are published, later dropped; the replay below writes the
   * next epoch again. */
  for (int32_t i = 0; i < db->nsinks; i++) {
    lm_sink* k = db->sinks[i]->sink;
    rc = k->vt->recover(k, resume, err);
    if (rc == LAMINAR_OK) rc = k->vt->begin(k, resume + 1, err);
    if (rc == LAMINAR_ERR_STATE) {
      /* The sink published epochs after the restored checkpoint, whose own
       * checkpoint and positions are both lost: where its rows end in the
       * WAL is unknown, and replaying would publish them again. */
      char what[600];
      snprintf(
          what, sizeof what,
          "sink '%s' cannot go on from checkpoint %" PRIu64 ": checkpoint %" PRIu64
          " (%.200s/ckpt-%020" PRIu64 ".bin) and its positions file (pos-%020" PRIu64
          ".bin) are damaged or missing, and the sink has published epochs after %" PRIu64
          " (replaying the WAL would publish their rows again)",
          db->sinks[i]->name, epoch, epoch + 1, d->ckpt_dir, epoch + 1, epoch + 1, epoch);
      return recovery_context(err, LAMINAR_ERR_RECOVERY, what);
    }
    if (rc != LAMINAR_OK) {
      char what[200];
      snprintf(what, sizeof what, "sink '%s': recovery from checkpoint %" PRIu64,
               db->sinks[i]->name, epoch);
      return recovery_context(err, rc, what);
    }
  }
  /* Connector sinks named in the config join here, before the replay. */
  LM_TRY(attach_config_sinks(db, d, err));
  /* The sources idle at the checkpoint are idle for their readers again. */
  lm_graph* g = &db->graph;
  for (int32_t i = 0; i < g->nsources; i++) {
    lm_source_def* s = g->sources[i];
    if (s->idle_next != 1) continue;
    s->idle_next = 0;
    LM_TRY(lm_rt_apply_idleness(&db->rt, s, true));
  }
  rc = replay_all(db, d, quiet_epoch, found ? epoch : 0, err);
  pos_list_free(&d->replay_quiet);
  LM_TRY(rc);
  /* An earlier build's catalog: written now with the header and every
   * object's identity (the next checkpoint records them). */
  if (d->legacy_catalog && !d->conf.read_only)
    LM_TRY(lm_durable_catalog_changed(db, err));
  d->legacy_catalog = false;
  return LAMINAR_OK;
}

/* ---- the background thread ---------------------------------------------------------------- */

/* Milliseconds of config (at most 1e15, lm_interval_parse_ms) as
 * nanoseconds, saturating at ~31 years so that sums with now_ns() stay in
 * range. */
static int64_t config_ns(int64_t ms) {
  const int64_t cap_ms = INT64_C(1000000000000);
  return (ms < cap_ms ? ms : cap_ms) * 1000000;
}

static void* background(void* arg) {
  lm_durable* d = arg;
  laminar_db* db = d->db;
  pthread_mutex_lock(&d->mu);
  int64_t last_ckpt = now_ns();
  bool any_async = true; /* an async WAL was there last round (at first: maybe) */
  while (!d->stop) {
    /* Sleep until the next checkpoint is due, or one flush interval while an
     * async WAL needs flushing. Without one there is nothing to do between
     * checkpoints, and an embedded database should not wake its process 100
     * times a second for nothing. A new async source, or a source that lowers
     * the interval, wakes this thread to sleep anew. */
    int64_t interval_ns =
        config_ns(d->conf.checkpoint_interval_ms); /* a source may lower it */
    int64_t flush_ns = config_ns(d->conf.flush_ms);
    int64_t wait_ns = last_ckpt + interval_ns - now_ns();
    if (any_async && flush_ns < wait_ns) wait_ns = flush_ns;
    if (wait_ns > 0) {
      struct timespec until;
      clock_gettime(CLOCK_REALTIME, &until);
      int64_t ns = until.tv_nsec + wait_ns;
      until.tv_sec += ns / 1000000000;
      until.tv_nsec = ns % 1000000000;
      pthread_cond_timedwait(&d->cv, &d->mu, &until);
    }
    if (d->stop) break;
    pthread_mutex_unlock(&d->mu);
    /* Async WALs: flush what was appended (bounded delay: one tick). The
     * catalog lock is held only to take references to the sources, not
     * across the I/O, so inline runs and DDL do not wait for a flush. */
    lm_source_def* async_srcs[64];
    int32_t nasync = 0;
    pthread_mutex_lock(&db->lock);
    lm_graph* g = &db->graph;
    for (int32_t i = 0; i < g->nsources && nasync < 64; i++) {
      lm_source_def* src = g->sources[i];
      if (src->wal == NULL || src->wal_sync) continue;
      atomic_fetch_add_explicit(&src->refs, 1, memory_order_relaxed);
      async_srcs[nasync++] = src;
    }
    pthread_mutex_unlock(&db->lock);
    any_async = nasync > 0;
    for (int32_t i = 0; i < nasync; i++) {
      lm_wal_ticket t = lm_wal_ticket_last(async_srcs[i]->wal);
      if (t.seq > 0)
        (void)lm_wal_commit(async_srcs[i]->wal, t, true, NULL); /* resurfaces on push */
      lm_source_def_unref(async_srcs[i]);
    }
    if (now_ns() - last_ckpt >= interval_ns) {
      laminar_error e;
      pthread_mutex_lock(&db->lock);
      if (lm_durable_checkpoint(db, &e) != LAMINAR_OK)
        report(d, "interval checkpoint failed: %s", e.message);
      pthread_mutex_unlock(&db->lock);
      last_ckpt = now_ns();
    }
    pthread_mutex_lock(&d->mu);
  }
  pthread_mutex_unlock(&d->mu);
  return NULL;
}

/* ---- open / close ------------------------------------------------------------------------- */

static void durable_free(lm_durable* d) {
  if (d->db != NULL && d->db->rt.idle_hook_arg == d) d->db->rt.idle_hook = NULL;
  if (d->db != NULL && d->db->rt.void_hook_arg == d) d->db->rt.void_hook = NULL;
  pos_list_free(&d->restored);
  pos_list_free(&d->replay_quiet);
  pos_list_free(&d->prev);
  lm_idlelog_close(&d->idle);
  pthread_mutex_destroy(&d->mu);
  pthread_cond_destroy(&d->cv);
  lm_free(d->dir);
  lm_free(d->dir_real);
  lm_free(d->sink_root);
  lm_free(d->ckpt_dir);
  lm_free(d->wal_dir);
  lm_free(d);
}

laminar_code lm_durable_open(laminar_db* db, const char* data_dir,
                             const lm_durable_config* c, lm_config_sink* sinks,
                             int32_t nsinks, lm_durable** out, laminar_error* err) {
  *out = NULL;
  bool on =
      c->checkpoint_interval_ms > 0 || c->read_only; /* read-only: recover, no more */
  if (!on && nsinks > 0)
    return lm_error_set(err, LAMINAR_ERR_CONFIG_CONFLICT,
                        "sink '%s': a sink publishes at checkpoints: set data_dir and "
                        "checkpoint_interval",
                        sinks[0].name);
  if (!on) {
    if (c->wal_mode != LM_WAL_NONE)
      return lm_error_set(
          err, LAMINAR_ERR_CONFIG_CONFLICT,
          "config 'wal_mode' = %s needs checkpoints: set checkpoint_interval "
          "(the WAL is replayed from the last checkpoint)",
          c->wal_mode == LM_WAL_SYNC ? "sync" : "async");
    return LAMINAR_OK;
  }
  if (data_dir == NULL)
    return lm_error_set(
        err, LAMINAR_ERR_CONFIG_CONFLICT,
        "config 'checkpoint_interval' needs 'data_dir': checkpoints are files");
  lm_durable* d = lm_calloc(1, sizeof *d);
  if (d == NULL) return lm_error_set(err, LAMINAR_ERR_NOMEM, "out of memory");
  pthread_mutex_init(&d->mu, NULL);
  pthread_cond_init(&d->cv, NULL);
  d->db = db;
  d->conf = *c;
  d->conf.sink_root = NULL; /* the config's: resolved into d->sink_root */
  d->config_sinks = sinks;
  d->nconfig_sinks = nsinks;
  d->dir = lm_strdup(data_dir);
  d->ckpt_dir = join(data_dir, "checkpoints");
  d->wal_dir = join(data_dir, "wal");
  laminar_code rc = LAMINAR_OK;
  if (d->dir == NULL || d->ckpt_dir == NULL || d->wal_dir == NULL ||
      lm_idlelog_init(&d->idle, data_dir) != LAMINAR_OK)
    rc = lm_error_set(err, LAMINAR_ERR_NOMEM, "out of memory");
  if (rc == LAMINAR_OK)
    rc = resolve_dir(data_dir, "data_dir", LAMINAR_ERR_IO, &d->dir_real, err);
  if (rc == LAMINAR_OK && c->sink_root != NULL)
    rc = resolve_dir(c->sink_root, "sink_root", LAMINAR_ERR_CONFIG_VALUE, &d->sink_root,
                     err);
  if (rc == LAMINAR_OK && !c->read_only) rc = make_dir(d->ckpt_dir, err);
  if (rc == LAMINAR_OK && !c->read_only) rc = make_dir(d->wal_dir, err);
  if (rc != LAMINAR_OK) {
    durable_free(d);
    return rc;
  }
  /* From here DDL sees db->dur (sources get WALs, the catalog is persisted). */
  db->dur = d;
  rc = recover(db, d, err);
  /* Idleness changes from now on are logged where they take effect. */
  if (rc == LAMINAR_OK && !c->read_only) {
    db->rt.idle_hook = idle_logged;
    db->rt.idle_hook_arg = d;
    db->rt.order_hook = order_logged;
    db->rt.order_hook_arg = d;
    db->rt.void_hook = void_logged;
    db->rt.void_hook_arg = d;
  }
  /* The config's sinks are attached by now; the config may go after open. */
  d->config_sinks = NULL;
  d->nconfig_sinks = 0;
  /* Read-only: no checkpoints and no WAL to flush, so no thread. */
  if (rc == LAMINAR_OK && !c->read_only) {
    if (pthread_create(&d->thread, NULL, background, d) != 0)
      rc = lm_error_set(err, LAMINAR_ERR_INTERNAL, "cannot start the checkpoint thread");
    else
      d->thread_started = true;
  }
  if (rc != LAMINAR_OK) {
    db->rt.idle_hook = NULL;
    db->rt.void_hook = NULL;
    db->dur = NULL;
    durable_free(d);
    return rc;
  }
  *out = d;
  return LAMINAR_OK;
}

void lm_durable_close(lm_durable* d) {
  if (d == NULL) return;
  if (d->thread_started) {
    pthread_mutex_lock(&d->mu);
    d->stop = true;
    pthread_cond_signal(&d->cv);
    pthread_mutex_unlock(&d->mu);
    pthread_join(d->thread, NULL);
  }
  durable_free(d);
}
