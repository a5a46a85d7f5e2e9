/*
 * kafka.c -- the Kafka sink over librdkafka (see kafka.h).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE  // fdatasync, O_CLOEXEC under -std=c17
#endif

#include "sink/kafka.h"

#include "sink/file.h"
#include "util/util.h"

#ifdef LAMINAR_HAVE_KAFKA

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <librdkafka/rdkafka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "store/fs.h"

#define UID_FILE "sink.id"

typedef struct kafka_sink {
  lm_sink base;
  lm_file_sink* stage; /* the epochs' rows, staged (file.h) */
  char* name;
  char* topic;
  char* stage_dir;
  char* txn_id;
  char* marker_group; /* "<transactional.id>.<uid>" */
  bool exactly_once;
  bool upsert; /* format 'upsert-json' (kafka.h) */
  int64_t timeout_ms;
  rd_kafka_conf_t* conf;  /* the producer's settings, duplicated per producer */
  rd_kafka_conf_t* cconf; /* the marker consumer's (the user's properties too) */
  rd_kafka_t* rk;         /* NULL until connected (again after a failure) */
  rd_kafka_topic_t* rkt;  /* the topic's handle of rk */
  int64_t marker;         /* highest epoch published (read after connecting) */
  char last_error[sizeof(((laminar_error*)0)->message)];
  /* at_least_once: the first failed delivery since the last flush. */
  rd_kafka_resp_err_t delivery_err;
} kafka_sink;

static laminar_code broker_fail(kafka_sink* k, laminar_error* err, const char* what,
                                const char* reason) {
  laminar_code rc = lm_error_set(err, LAMINAR_ERR_CONNECTOR,
                                 "sink '%s': Kafka %s (topic '%s') failed: %s", k->name,
                                 what, k->topic, reason);
  if (err != NULL) snprintf(k->last_error, sizeof k->last_error, "%s", err->message);
  return rc;
}

/* A failed transactional call: its error is consumed. */
static laminar_code txn_fail(kafka_sink* k, laminar_error* err, const char* what,
                             rd_kafka_error_t* e) {
  laminar_code rc = broker_fail(k, err, what, rd_kafka_error_string(e));
  rd_kafka_error_destroy(e);
  return rc;
}

static void on_delivery(rd_kafka_t* rk, const rd_kafka_message_t* m, void* opaque) {
  (void)rk;
  kafka_sink* k = opaque;
  if (m->err != RD_KAFKA_RESP_ERR_NO_ERROR &&
      k->delivery_err == RD_KAFKA_RESP_ERR_NO_ERROR)
    k->delivery_err = m->err;
}

/* ---- connecting ---------------------------------------------------------------------- */

static void disconnect(kafka_sink* k) {
  if (k->rkt != NULL) rd_kafka_topic_destroy(k->rkt);
  if (k->rk != NULL) rd_kafka_destroy(k->rk);
  k->rkt = NULL;
  k->rk = NULL;
}

/* The marker: the offset committed for the marker group on partition 0 of
 * the topic (-1: none). */
static laminar_code read_marker(kafka_sink* k, int64_t* out, laminar_error* err) {
  char errstr[512];
  rd_kafka_conf_t* conf = rd_kafka_conf_dup(k->cconf);
  if (rd_kafka_conf_set(conf, "group.id", k->marker_group, errstr, sizeof errstr) !=
          RD_KAFKA_CONF_OK ||
      rd_kafka_conf_set(conf, "isolation.level", "read_committed", errstr,
                        sizeof errstr) != RD_KAFKA_CONF_OK ||
      rd_kafka_conf_set(conf, "enable.auto.commit", "false", errstr, sizeof errstr) !=
          RD_KAFKA_CONF_OK) {
    rd_kafka_conf_destroy(conf);
    return broker_fail(k, err, "marker consumer", errstr);
  }
  rd_kafka_t* c = rd_kafka_new(RD_KAFKA_CONSUMER, conf, errstr, sizeof errstr);
  if (c == NULL) {
    rd_kafka_conf_destroy(conf);
    return broker_fail(k, err, "marker consumer", errstr);
  }
  rd_kafka_topic_partition_list_t* parts = rd_kafka_topic_partition_list_new(1);
  rd_kafka_topic_partition_list_add(parts, k->topic, 0);
  rd_kafka_resp_err_t e = rd_kafka_committed(c, parts, (int)k->timeout_ms);
  if (e == RD_KAFKA_RESP_ERR_NO_ERROR) e = parts->elems[0].err;
  int64_t off = parts->elems[0].offset;
  rd_kafka_topic_partition_list_destroy(parts);
  rd_kafka_destroy(c);
  if (e != RD_KAFKA_RESP_ERR_NO_ERROR)
    return broker_fail(k, err, "reading the committed marker", rd_kafka_err2str(e));
  *out = off >= 0 ? off : -1;
  return LAMINAR_OK;
}

/* Check the topic exists (the broker may create it): a clear error rather
 * than messages timing out. */
static laminar_code check_topic(kafka_sink* k, laminar_error* err) {
  k->rkt = rd_kafka_topic_new(k->rk, k->topic, NULL);
  if (k->rkt == NULL)
    return broker_fail(k, err, "topic", rd_kafka_err2str(rd_kafka_last_error()));
  rd_kafka_topic_t* t = k->rkt;
  const struct rd_kafka_metadata* md = NULL;
  rd_kafka_resp_err_t e = rd_kafka_metadata(k->rk, 0, t, &md, (int)k->timeout_ms);
  /* A topic being created answers LEADER_NOT_AVAILABLE first: ask again. */
  for (int tries = 0;
       e == RD_KAFKA_RESP_ERR_NO_ERROR && md->topic_cnt == 1 &&
       md->topics[0].err == RD_KAFKA_RESP_ERR_LEADER_NOT_AVAILABLE && tries < 50;
       tries++) {
    rd_kafka_metadata_destroy(md);
    md = NULL;
    struct timespec ts = {0, 100 * 1000 * 1000};
    nanosleep(&ts, NULL);
    e = rd_kafka_metadata(k->rk, 0, t, &md, (int)k->timeout_ms);
  }
  if (e == RD_KAFKA_RESP_ERR_NO_ERROR && md->topic_cnt == 1) e = md->topics[0].err;
  if (md != NULL) rd_kafka_metadata_destroy(md);
  if (e == RD_KAFKA_RESP_ERR_NO_ERROR) return LAMINAR_OK;
  if (e == RD_KAFKA_RESP_ERR__TRANSPORT || e == RD_KAFKA_RESP_ERR__TIMED_OUT) {
    char why[300];
    snprintf(why, sizeof why, "no broker answered within %" PRId64 " ms (%s)",
             k->timeout_ms, rd_kafka_err2str(e));
    return broker_fail(k, err, "connect", why);
  }
  return broker_fail(k, err, "topic metadata", rd_kafka_err2str(e));
}

/* A producer, its transactions initialized (a dead process's producer of the
 * same transactional.id fenced, its open transaction aborted), the marker
 * read. */
static laminar_code connect_broker(kafka_sink* k, laminar_error* err) {
  if (k->rk != NULL) return LAMINAR_OK;
  char errstr[512];
  rd_kafka_conf_t* conf = rd_kafka_conf_dup(k->conf);
  k->rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, errstr, sizeof errstr);
  if (k->rk == NULL) {
    rd_kafka_conf_destroy(conf);
    return broker_fail(k, err, "producer", errstr);
  }
  laminar_code rc = check_topic(k, err);
  if (rc == LAMINAR_OK && k->exactly_once) {
    rd_kafka_error_t* e = rd_kafka_init_transactions(k->rk, (int)k->timeout_ms);
    if (e != NULL) rc = txn_fail(k, err, "init_transactions", e);
    if (rc == LAMINAR_OK) rc = read_marker(k, &k->marker, err);
  }
  if (rc != LAMINAR_OK) disconnect(k);
  return rc;
}

/* ---- publishing a committed epoch ------------------------------------------------ */

static void part_file(const kafka_sink* k, uint64_t epoch, char* out, size_t n) {
  snprintf(out, n, "%s/part-%020" PRIu64 ".records", k->stage_dir, epoch);
}

static uint32_t le32(const unsigned char* p) {
  return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
         (uint32_t)p[3] << 24;
}

/* The whole file (*data, *len; NULL and 0 when it does not exist). */
static laminar_code read_file(kafka_sink* k, const char* path, char** data, size_t* len,
                              laminar_error* err) {
  *data = NULL;
  *len = 0;
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT) return LAMINAR_OK;
    return lm_error_set(err, LAMINAR_ERR_IO, "sink '%s': open '%s' failed: %s", k->name,
                        path, strerror(errno));
  }
  struct stat st;
  laminar_code rc = LAMINAR_OK;
  if (fstat(fd, &st) != 0) {
    rc = lm_error_set(err, LAMINAR_ERR_IO, "sink '%s': stat '%s' failed: %s", k->name,
                      path, strerror(errno));
  } else {
    *data = lm_malloc((size_t)st.st_size + 1);
    if (*data == NULL) rc = lm_error_set(err, LAMINAR_ERR_NOMEM, "out of memory");
    size_t got = 0;
    while (rc == LAMINAR_OK && got < (size_t)st.st_size) {
      ssize_t r = read(fd, *data + got, (size_t)st.st_size - got);
      if (r <= 0) {
        rc = lm_error_set(err, LAMINAR_ERR_IO, "sink '%s': read '%s' failed: %s", k->name,
                          path, r == 0 ? "short file" : strerror(errno));
        break;
      }
      got += (size_t)r;
    }
    *len = got;
  }
  close(fd);
  if (rc != LAMINAR_OK) {
    lm_free(*data);
    *data = NULL;
  }
  return rc;
}

/* One staged record: its key and value (JSON or CSV text). */
typedef struct staged {
  const char* key;
  const char* value;
  uint32_t kl, vl;
  int64_t weight; /* upsert: the row's _weight */
  size_t at;      /* its position in the file (the epoch's order) */
} staged;

/* The record at *at of data[0..len) into *r, *at past it: false when the
 * file is damaged there. */
static bool next_record(const char* data, size_t len, size_t* at, staged* r) {
  const unsigned char* p = (const unsigned char*)data;
  size_t a = *at;
  uint32_t kl = 0, vl = 0;
  if (!(len - a >= 4 && (kl = le32(p + a)) <= len - a - 4 && len - a - 4 - kl >= 4 &&
        (vl = le32(p + a + 4 + kl)) <= len - a - 8 - kl))
    return false;
  *r = (staged){
      .key = data + a + 4, .kl = kl, .value = data + a + 8 + kl, .vl = vl, .at = a};
  *at = a + 8 + (size_t)kl + vl;
  return true;
}

static laminar_code damaged(kafka_sink* k, const char* path, size_t at,
                            laminar_error* err) {
  return lm_error_set(err, LAMINAR_ERR_RECOVERY,
                      "sink '%s': staged file '%s' is damaged at byte %zu", k->name, path,
                      at);
}

/* Produce one message (value NULL: a tombstone). */
static laminar_code produce_one(kafka_sink* k, const char* key, uint32_t kl,
                                const char* value, uint32_t vl, laminar_error* err) {
  for (;;) {
    /* rd_kafka_produce (not producev: its macros are not -pedantic clean). */
    int r =
        rd_kafka_produce(k->rkt, RD_KAFKA_PARTITION_UA, RD_KAFKA_MSG_F_COPY, (void*)value,
                         value != NULL ? vl : 0, kl > 0 ? key : NULL, kl, NULL);
    rd_kafka_resp_err_t e = r == 0 ? RD_KAFKA_RESP_ERR_NO_ERROR : rd_kafka_last_error();
    if (e == RD_KAFKA_RESP_ERR_NO_ERROR) break;
    if (e != RD_KAFKA_RESP_ERR__QUEUE_FULL)
      return broker_fail(k, err, "produce", rd_kafka_err2str(e));
    rd_kafka_poll(k->rk, 10);
  }
  rd_kafka_poll(k->rk, 0);
  return LAMINAR_OK;
}

/* An upsert record's value without its last member, "_weight" (the
 * stream's last column, so the JSON object's last member: a '"' inside a
 * string is escaped, so the last `"_weight":` is the member), and the
 * weight. The value is cut in place: *vl shortened, the closing brace
 * written by the caller. false when the value has no such member. */
static bool split_weight(const char* v, uint32_t* vl, int64_t* weight) {
  static const char member[] = "\"_weight\":";
  const size_t m = sizeof member - 1;
  if (*vl < m + 2 || v[*vl - 1] != '}') return false;
  for (size_t i = *vl - m - 1; i > 0; i--) {
    if (memcmp(v + i, member, m) != 0) continue;
    if (v[i - 1] != ',' && v[i - 1] != '{') return false;
    char num[24];
    size_t n = *vl - 1 - (i + m);
    if (n == 0 || n >= sizeof num) return false;
    memcpy(num, v + i + m, n);
    num[n] = '\0';
    char* end;
    *weight = strtoll(num, &end, 10);
    if (*end != '\0') return false;
    *vl = (uint32_t)(v[i - 1] == ',' ? i - 1 : i); /* "{...,"  ->  "{..." */
    return true;
  }
  return false;
}

static int cmp_bytes(const char* x, uint32_t xl, const char* y, uint32_t yl) {
  int c = memcmp(x, y, xl < yl ? xl : yl);
  return c != 0 ? c : xl < yl ? -1 : xl > yl;
}

/* By key, then value, then position. */
static int cmp_staged_key(const void* a, const void* b) {
  const staged* x = a;
  const staged* y = b;
  int c = cmp_bytes(x->key, x->kl, y->key, y->kl);
  if (c == 0) c = cmp_bytes(x->value, x->vl, y->value, y->vl);
  return c != 0 ? c : x->at < y->at ? -1 : x->at > y->at;
}

static int cmp_staged_at(const void* a, const void* b) {
  const staged* x = a;
  const staged* y = b;
  return x->at < y->at ? -1 : x->at > y->at;
}

/* upsert-json: per key, the last +1 row's value, or a tombstone when the key
 * only lost rows in this epoch; in the order of those rows. */
static laminar_code produce_upserts(kafka_sink* k, const char* path, const char* data,
                                    size_t len, laminar_error* err) {
  size_t n = 0, cap = 64, at = 0;
  staged* recs = lm_malloc(cap * sizeof *recs);
  if (recs == NULL) return lm_error_set(err, LAMINAR_ERR_NOMEM, "out of memory");
  laminar_code rc = LAMINAR_OK;
  while (at < len && rc == LAMINAR_OK) {
    if (n == cap) {
      staged* grown = lm_realloc(recs, (cap *= 2) * sizeof *recs);
      if (grown == NULL) {
        rc = lm_error_set(err, LAMINAR_ERR_NOMEM, "out of memory");
        break;
      }
      recs = grown;
    }
    size_t before = at;
    if (!next_record(data, len, &at, &recs[n]) ||
        !split_weight(recs[n].value, &recs[n].vl, &recs[n].weight))
      rc = damaged(k, path, before, err);
    else
      n++;
  }
  /* Per key, what it holds after the epoch: each of its rows (values) held
   * before the epoch if the epoch's first change of it is a retraction, plus
   * the epoch's weights of it. The row held that was inserted last is the
   * key's message; none held: a tombstone. One record per key is kept, at
   * the position of the key's last change. */
  if (rc == LAMINAR_OK && n > 0) qsort(recs, n, sizeof *recs, cmp_staged_key);
  size_t kept = 0;
  for (size_t i = 0; i < n;) {
    size_t j = i, last = i;
    const staged* pick = NULL;
    while (j < n && cmp_bytes(recs[j].key, recs[j].kl, recs[i].key, recs[i].kl) == 0) {
      size_t v = j, inserted = SIZE_MAX;
      int64_t held = recs[j].weight < 0 ? 1 : 0;
      for (; v < n && cmp_bytes(recs[v].key, recs[v].kl, recs[i].key, recs[i].kl) == 0 &&
             cmp_bytes(recs[v].value, recs[v].vl, recs[j].value, recs[j].vl) == 0;
           v++) {
        held += recs[v].weight;
        if (recs[v].weight > 0) inserted = v;
        if (recs[v].at > recs[last].at) last = v;
      }
      if (held > 0 && inserted != SIZE_MAX &&
          (pick == NULL || recs[inserted].at > pick->at))
        pick = &recs[inserted];
      j = v;
    }
    staged out = pick != NULL ? *pick : recs[last];
    out.at = recs[last].at;
    if (pick == NULL) out.value = NULL; /* a tombstone */
    recs[kept++] = out;
    i = j;
  }
  if (kept > 0) qsort(recs, kept, sizeof *recs, cmp_staged_at);
  char* buf = NULL;
  size_t buf_cap = 0;
  for (size_t i = 0; i < kept && rc == LAMINAR_OK; i++) {
    const staged* r = &recs[i];
    if (r->value != NULL && (size_t)r->vl + 1 > buf_cap) {
      char* grown = lm_realloc(buf, buf_cap = (size_t)r->vl + 64);
      if (grown == NULL) {
        rc = lm_error_set(err, LAMINAR_ERR_NOMEM, "out of memory");
        break;
      }
      buf = grown;
    }
    if (r->value != NULL) {
      memcpy(buf, r->value, r->vl);
      buf[r->vl] = '}';
    }
    rc = produce_one(k, r->key, r->kl, r->value != NULL ? buf : NULL, r->vl + 1, err);
  }
  lm_free(buf);
  lm_free(recs);
  return rc;
}

/* Produce every record of data[0..len): key record, value record, ... */
static laminar_code produce_records(kafka_sink* k, const char* path, const char* data,
                                    size_t len, laminar_error* err) {
  if (k->upsert) return produce_upserts(k, path, data, len, err);
  size_t at = 0;
  while (at < len) {
    staged r;
    size_t before = at;
    if (!next_record(data, len, &at, &r)) return damaged(k, path, before, err);
    LM_TRY(produce_one(k, r.key, r.kl, r.value, r.vl, err));
  }
  return LAMINAR_OK;
}

/* One transaction: the epoch's records and the marker `epoch`. */
static laminar_code publish_txn(kafka_sink* k, uint64_t epoch, const char* path,
                                const char* data, size_t len, laminar_error* err) {
  rd_kafka_error_t* e = rd_kafka_begin_transaction(k->rk);
  if (e != NULL) return txn_fail(k, err, "begin_transaction", e);
  laminar_code rc = produce_records(k, path, data, len, err);
  if (rc == LAMINAR_OK) {
    rd_kafka_topic_partition_list_t* offs = rd_kafka_topic_partition_list_new(1);
    rd_kafka_topic_partition_list_add(offs, k->topic, 0)->offset = (int64_t)epoch;
    rd_kafka_consumer_group_metadata_t* g =
        rd_kafka_consumer_group_metadata_new(k->marker_group);
    e = rd_kafka_send_offsets_to_transaction(k->rk, offs, g, (int)k->timeout_ms);
    rd_kafka_consumer_group_metadata_destroy(g);
    rd_kafka_topic_partition_list_destroy(offs);
    if (e == NULL) e = rd_kafka_commit_transaction(k->rk, (int)k->timeout_ms);
    if (e != NULL) rc = txn_fail(k, err, "commit_transaction", e);
  }
  if (rc != LAMINAR_OK) {
    rd_kafka_error_t* a = rd_kafka_abort_transaction(k->rk, (int)k->timeout_ms);
    if (a != NULL) rd_kafka_error_destroy(a);
    /* Whatever state the producer is in, the next attempt starts anew
     * (init_transactions aborts what is left). */
    disconnect(k);
    return rc;
  }
  k->marker = (int64_t)epoch;
  return LAMINAR_OK;
}

static laminar_code publish_plain(kafka_sink* k, const char* path, const char* data,
                                  size_t len, laminar_error* err) {
  k->delivery_err = RD_KAFKA_RESP_ERR_NO_ERROR;
  LM_TRY(produce_records(k, path, data, len, err));
  rd_kafka_resp_err_t e = rd_kafka_flush(k->rk, (int)k->timeout_ms);
  if (e == RD_KAFKA_RESP_ERR_NO_ERROR) e = k->delivery_err;
  if (e != RD_KAFKA_RESP_ERR_NO_ERROR) {
    disconnect(k);
    return broker_fail(k, err, "delivery", rd_kafka_err2str(e));
  }
  return LAMINAR_OK;
}

/* Publish part file `epoch` (committed locally) unless the marker says it
 * was, then remove it. */
static laminar_code publish(kafka_sink* k, uint64_t epoch, laminar_error* err) {
  char path[4200];
  part_file(k, epoch, path, sizeof path);
  LM_TRY(connect_broker(k, err));
  if (!k->exactly_once || (int64_t)epoch > k->marker) {
    char* data;
    size_t len;
    LM_TRY(read_file(k, path, &data, &len, err));
    if (data == NULL) return LAMINAR_OK; /* an epoch without rows, or published */
    laminar_code rc = k->exactly_once ? publish_txn(k, epoch, path, data, len, err)
                                      : publish_plain(k, path, data, len, err);
    lm_free(data);
    LM_TRY(rc);
  }
  if (unlink(path) != 0 && errno != ENOENT)
    return lm_error_set(err, LAMINAR_ERR_IO, "sink '%s': unlink '%s' failed: %s", k->name,
                        path, strerror(errno));
  return LAMINAR_OK;
}

/* Epoch of "part-<20 digits>.records", or 0. */
static uint64_t part_epoch(const char* name) {
  if (strncmp(name, "part-", 5) != 0 || strlen(name) != 5 + 20 + 8 ||
      strcmp(name + 25, ".records") != 0)
    return 0;
  uint64_t e = 0;
  for (int i = 5; i < 25; i++) {
    if (name[i] < '0' || name[i] > '9') return 0;
    e = e * 10 + (uint64_t)(name[i] - '0');
  }
  return e;
}

static int cmp_u64(const void* a, const void* b) {
  uint64_t x = *(const uint64_t*)a, y = *(const uint64_t*)b;
  return x < y ? -1 : x > y;
}

/* Publish every part file, oldest first. */
static laminar_code publish_all(kafka_sink* k, laminar_error* err) {
  DIR* d = opendir(k->stage_dir);
  if (d == NULL)
    return lm_error_set(err, LAMINAR_ERR_IO, "sink '%s': opendir '%s' failed: %s",
                        k->name, k->stage_dir, strerror(errno));
  uint64_t* epochs = NULL;
  size_t n = 0, cap = 0;
  bool nomem = false;
  struct dirent* e;
  while ((e = readdir(d)) != NULL) {
    uint64_t epoch = part_epoch(e->d_name);
    if (epoch == 0) continue;
    if (n == cap) {
      cap = cap ? cap * 2 : 16;
      uint64_t* grown = lm_realloc(epochs, cap * sizeof *grown);
      if (grown == NULL) {
        nomem = true;
        break;
      }
      epochs = grown;
    }
    epochs[n++] = epoch;
  }
  closedir(d);
  laminar_code rc =
      nomem ? lm_error_set(err, LAMINAR_ERR_NOMEM, "out of memory") : LAMINAR_OK;
  if (n > 0) qsort(epochs, n, sizeof *epochs, cmp_u64);
  for (size_t i = 0; i < n && rc == LAMINAR_OK; i++) rc = publish(k, epochs[i], err);
  lm_free(epochs);
  return rc;
}

/* ---- the protocol (sink.h) ---------------------------------------------------------- */

static laminar_code kz_write(lm_sink* b, const lm_vec* cols, int64_t n,
                             laminar_error* err) {
  return lm_file_sink_write(((kafka_sink*)b)->stage, cols, n, err);
}
static laminar_code kz_begin(lm_sink* b, uint64_t epoch, laminar_error* err) {
  return lm_file_sink_begin(((kafka_sink*)b)->stage, epoch, err);
}
static laminar_code kz_pre_commit(lm_sink* b, laminar_error* err) {
  return lm_file_sink_seal(((kafka_sink*)b)->stage, err);
}
static laminar_code kz_sync(lm_sink* b, laminar_error* err) {
  return lm_file_sink_sync(((kafka_sink*)b)->stage, err);
}
static laminar_code kz_commit(lm_sink* b, uint64_t epoch, laminar_error* err) {
  kafka_sink* k = (kafka_sink*)b;
  LM_TRY(lm_file_sink_commit(k->stage, epoch, err));
  return publish(k, epoch, err);
}
static laminar_code kz_recover(lm_sink* b, uint64_t checkpointed, laminar_error* err) {
  kafka_sink* k = (kafka_sink*)b;
  LM_TRY(lm_file_sink_recover(k->stage, checkpointed, err));
  return publish_all(k, err);
}
static const char* kz_last_error(lm_sink* b) {
  kafka_sink* k = (kafka_sink*)b;
  const char* staged =
      lm_file_sink_base(k->stage)->vt->last_error(lm_file_sink_base(k->stage));
  return staged != NULL && staged[0] != '\0' ? staged : k->last_error;
}

static void kafka_sink_free(kafka_sink* k) {
  if (k == NULL) return;
  if (k->rk != NULL) {
    if (!k->exactly_once) rd_kafka_flush(k->rk, (int)k->timeout_ms);
    disconnect(k);
  }
  if (k->conf != NULL) rd_kafka_conf_destroy(k->conf);
  if (k->cconf != NULL) rd_kafka_conf_destroy(k->cconf);
  if (k->stage != NULL) lm_file_sink_close(k->stage);
  lm_free(k->name);
  lm_free(k->topic);
  lm_free(k->stage_dir);
  lm_free(k->txn_id);
  lm_free(k->marker_group);
  lm_free(k);
}
static void kz_close(lm_sink* b) { kafka_sink_free((kafka_sink*)b); }

static const lm_sink_vt KAFKA_VT = {.write = kz_write,
                                    .begin = kz_begin,
                                    .pre_commit = kz_pre_commit,
                                    .sync = kz_sync,
                                    .commit = kz_commit,
                                    .recover = kz_recover,
                                    .close = kz_close,
                                    .last_error = kz_last_error};

/* ---- opening -------------------------------------------------------------------------- */

/* The sink's uid: read from the staging directory, or (fresh) a new one
 * written there durably; stale staged and part files of a fresh sink go. */
static laminar_code sink_uid(kafka_sink* k, bool fresh, char* out, size_t cap,
                             laminar_error* err) {
  char path[4200];
  snprintf(path, sizeof path, "%s/" UID_FILE, k->stage_dir);
  if (!fresh) {
    char* data;
    size_t len;
    LM_TRY(read_file(k, path, &data, &len, err));
    if (data != NULL && len > 0 && len < cap) {
      memcpy(out, data, len);
      out[len] = '\0';
      lm_free(data);
      return LAMINAR_OK;
    }
    lm_free(data);
    /* No uid yet (a crash before CREATE finished): a new one, as fresh. */
  }
  DIR* d = opendir(k->stage_dir);
  struct dirent* e;
  while (d != NULL && (e = readdir(d)) != NULL) {
    if (e->d_name[0] == '.' && (e->d_name[1] == '\0' || strcmp(e->d_name, "..") == 0))
      continue;
    char stale[4400];
    snprintf(stale, sizeof stale, "%s/%s", k->stage_dir, e->d_name);
    unlink(stale);
  }
  if (d != NULL) closedir(d);
  uint64_t r = 0;
  int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
  if (fd < 0 || read(fd, &r, sizeof r) != (ssize_t)sizeof r)
    r = (uint64_t)time(NULL) ^ (uint64_t)(uintptr_t)k;
  if (fd >= 0) close(fd);
  snprintf(out, cap, "%016" PRIx64, r);
  fd = lm_fs_create_excl(path);
  int werr = fd < 0 ? errno : 0;
  if (werr == 0) werr = lm_fs_write_all(fd, out, strlen(out));
  if (werr == 0 && fdatasync(fd) != 0) werr = errno;
  if (fd >= 0) close(fd);
  if (werr == 0) werr = lm_fs_fsync_dir(k->stage_dir);
  if (werr != 0)
    return lm_error_set(err, LAMINAR_ERR_IO, "sink '%s': writing '%s' failed: %s",
                        k->name, path, strerror(werr));
  return LAMINAR_OK;
}

static laminar_code set_conf(kafka_sink* k, rd_kafka_conf_t* conf, const char* key,
                             const char* value, laminar_error* err) {
  char errstr[512];
  if (rd_kafka_conf_set(conf, key, value, errstr, sizeof errstr) == RD_KAFKA_CONF_OK)
    return LAMINAR_OK;
  return lm_error_set(err, LAMINAR_ERR_CONFIG_VALUE, "sink '%s': Kafka property '%s': %s",
                      k->name, key, errstr);
}

bool lm_kafka_available(void) { return true; }

laminar_code lm_kafka_sink_open(const lm_kafka_sink_config* c, const lm_schema* schema,
                                lm_sink** out, laminar_error* err) {
  *out = NULL;
  kafka_sink* k = lm_calloc(1, sizeof *k);
  if (k == NULL) return lm_error_set(err, LAMINAR_ERR_NOMEM, "out of memory");
  k->base.vt = &KAFKA_VT;
  k->exactly_once = c->exactly_once;
  k->upsert = c->upsert;
  k->timeout_ms = c->timeout_ms > 0 ? c->timeout_ms : 30000;
  k->marker = -1;
  k->name = lm_strdup(c->name);
  k->topic = lm_strdup(c->topic);
  k->stage_dir = lm_strdup(c->stage_dir);
  k->txn_id = lm_strdup(c->transactional_id);
  k->conf = rd_kafka_conf_new();
  k->cconf = rd_kafka_conf_new();
  laminar_code rc = LAMINAR_OK;
  if (k->name == NULL || k->topic == NULL || k->stage_dir == NULL || k->txn_id == NULL ||
      k->conf == NULL || k->cconf == NULL)
    rc = lm_error_set(err, LAMINAR_ERR_NOMEM, "out of memory");
  char ms[32];
  snprintf(ms, sizeof ms, "%" PRId64, k->timeout_ms);
  for (int pass = 0; pass < 2 && rc == LAMINAR_OK; pass++) {
    rd_kafka_conf_t* conf = pass == 0 ? k->conf : k->cconf;
    rc = set_conf(k, conf, "bootstrap.servers", c->brokers, err);
    /* Errors reach the caller as LDB codes; the client's own log only says
     * what is wrong (kafka.log_level raises it). */
    if (rc == LAMINAR_OK) rc = set_conf(k, conf, "log_level", "3", err);
    if (rc == LAMINAR_OK)
      rc = set_conf(k, conf, "socket.connection.setup.timeout.ms", ms, err);
    for (int32_t i = 0; rc == LAMINAR_OK && i < c->nconf; i++)
      rc = set_conf(k, conf, c->conf_keys[i], c->conf_values[i], err);
  }
  if (rc == LAMINAR_OK && k->exactly_once)
    rc = set_conf(k, k->conf, "transactional.id", k->txn_id, err);
  else if (rc == LAMINAR_OK)
    rc = set_conf(k, k->conf, "enable.idempotence", "true", err);
  if (rc == LAMINAR_OK) {
    rd_kafka_conf_set_opaque(k->conf, k);
    rd_kafka_conf_set_dr_msg_cb(k->conf, on_delivery);
  }
  if (rc == LAMINAR_OK && mkdir(c->stage_dir, 0755) != 0 && errno != EEXIST)
    rc = lm_error_set(err, LAMINAR_ERR_IO, "sink '%s': mkdir '%s' failed: %s", c->name,
                      c->stage_dir, strerror(errno));
  char uid[64];
  if (rc == LAMINAR_OK) rc = sink_uid(k, c->fresh, uid, sizeof uid, err);
  if (rc == LAMINAR_OK) {
    size_t n = strlen(k->txn_id) + strlen(uid) + 2;
    k->marker_group = lm_malloc(n);
    if (k->marker_group == NULL)
      rc = lm_error_set(err, LAMINAR_ERR_NOMEM, "out of memory");
    else
      snprintf(k->marker_group, n, "%s.%s", k->txn_id, uid);
  }
  if (rc == LAMINAR_OK)
    rc = lm_file_sink_open(c->stage_dir,
                           c->avro  ? LM_SINK_RECORDS_AVRO
                           : c->raw ? LM_SINK_RECORDS_RAW
                           : c->csv ? LM_SINK_RECORDS_CSV
                                    : LM_SINK_RECORDS_JSON,
                           schema, &k->stage, err);
  if (rc == LAMINAR_OK) rc = lm_file_sink_set_key(k->stage, c->key_cols, c->nkey, err);
  if (rc == LAMINAR_OK && c->fresh) rc = connect_broker(k, err);
  if (rc != LAMINAR_OK) {
    kafka_sink_free(k);
    return rc;
  }
  *out = &k->base;
  return LAMINAR_OK;
}

#else /* !LAMINAR_HAVE_KAFKA */

bool lm_kafka_available(void) { return false; }

laminar_code lm_kafka_sink_open(const lm_kafka_sink_config* c, const lm_schema* schema,
                                lm_sink** out, laminar_error* err) {
  (void)schema;
  *out = NULL;
  return lm_error_set(err, LAMINAR_ERR_SQL_UNSUPPORTED,
                      "sink '%s': connector 'kafka': LaminarDB was built without Kafka "
                      "(librdkafka); rebuild with librdkafka-dev installed",
                      c->name);
}

#endif
