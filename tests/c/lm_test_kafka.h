/*
 * lm_test_kafka.h -- test setup and read-back against a real Kafka broker
 * (tests/kafka/broker.sh) through librdkafka: make a topic, produce
 * messages to chosen partitions, read a topic back as a consumer with
 * isolation.level = read_committed. Only with LAMINAR_HAVE_KAFKA; the broker
 * is named by LAMINAR_KAFKA_BOOTSTRAP (lm_test_kafka_bootstrap()).
 */
#ifndef LM_TEST_KAFKA_H
#define LM_TEST_KAFKA_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* The running broker's host:port, or NULL when none is given. */
static inline const char* lm_test_kafka_bootstrap(void) {
  const char* b = getenv("LAMINAR_KAFKA_BOOTSTRAP");
  return b != NULL && b[0] != '\0' ? b : NULL;
}

#ifdef LAMINAR_HAVE_KAFKA
#include <librdkafka/rdkafka.h>

static inline rd_kafka_t* lm_test_kafka_client(const char* bootstrap,
                                               rd_kafka_type_t type,
                                               const char* const* kv) {
  char errstr[512];
  rd_kafka_conf_t* conf = rd_kafka_conf_new();
  if (rd_kafka_conf_set(conf, "bootstrap.servers", bootstrap, errstr, sizeof errstr) !=
      RD_KAFKA_CONF_OK) {
    rd_kafka_conf_destroy(conf);
    return NULL;
  }
  for (; kv != NULL && kv[0] != NULL; kv += 2) {
    if (rd_kafka_conf_set(conf, kv[0], kv[1], errstr, sizeof errstr) !=
        RD_KAFKA_CONF_OK) {
      fprintf(stderr, "kafka property %s: %s\n", kv[0], errstr);
      rd_kafka_conf_destroy(conf);
      return NULL;
    }
  }
  rd_kafka_t* rk = rd_kafka_new(type, conf, errstr, sizeof errstr);
  if (rk == NULL) {
    fprintf(stderr, "kafka client: %s\n", errstr);
    rd_kafka_conf_destroy(conf);
  }
  return rk;
}

/* Wait for the one admin result on q; its event (NULL on a timeout). */
static inline rd_kafka_event_t* lm_test_kafka_admin_wait(rd_kafka_queue_t* q) {
  return rd_kafka_queue_poll(q, 30000);
}

/* Make topic `name` with `partitions` partitions (admin API): 0, or -1. */
static inline int lm_test_kafka_create_topic(const char* bootstrap, const char* name,
                                             int partitions) {
  char errstr[512];
  rd_kafka_t* rk = lm_test_kafka_client(bootstrap, RD_KAFKA_PRODUCER, NULL);
  if (rk == NULL) return -1;
  rd_kafka_NewTopic_t* nt =
      rd_kafka_NewTopic_new(name, partitions, 1, errstr, sizeof errstr);
  rd_kafka_queue_t* q = rd_kafka_queue_new(rk);
  rd_kafka_CreateTopics(rk, &nt, 1, NULL, q);
  rd_kafka_event_t* ev = lm_test_kafka_admin_wait(q);
  int rc = -1;
  const rd_kafka_CreateTopics_result_t* res =
      ev != NULL ? rd_kafka_event_CreateTopics_result(ev) : NULL;
  if (res != NULL) {
    size_t n;
    const rd_kafka_topic_result_t** tr = rd_kafka_CreateTopics_result_topics(res, &n);
    rc = n == 1 && rd_kafka_topic_result_error(tr[0]) == RD_KAFKA_RESP_ERR_NO_ERROR ? 0
                                                                                    : -1;
    if (rc != 0 && n == 1)
      fprintf(stderr, "create topic %s: %s\n", name,
              rd_kafka_topic_result_error_string(tr[0]));
  }
  if (ev != NULL) rd_kafka_event_destroy(ev);
  rd_kafka_queue_destroy(q);
  rd_kafka_NewTopic_destroy(nt);
  /* The broker answers the creation before its metadata knows the topic: a
   * sink declared at once would find it unknown. Wait until it is (10 s). */
  rd_kafka_topic_t* t = rc == 0 ? rd_kafka_topic_new(rk, name, NULL) : NULL;
  for (int tries = 0; t != NULL && tries < 100; tries++) {
    const struct rd_kafka_metadata* md = NULL;
    rd_kafka_resp_err_t e = rd_kafka_metadata(rk, 0, t, &md, 5000);
    bool known = e == RD_KAFKA_RESP_ERR_NO_ERROR && md->topic_cnt == 1 &&
                 md->topics[0].err == RD_KAFKA_RESP_ERR_NO_ERROR;
    if (md != NULL) rd_kafka_metadata_destroy(md);
    if (known) break;
    struct timespec ts = {0, 100 * 1000 * 1000};
    nanosleep(&ts, NULL);
  }
  if (t != NULL) rd_kafka_topic_destroy(t);
  rd_kafka_destroy(rk);
  return rc;
}

/* Grow topic `name` to `partitions` partitions (admin API): 0, or -1. */
static inline int lm_test_kafka_add_partitions(const char* bootstrap, const char* name,
                                               int partitions) {
  char errstr[512];
  rd_kafka_t* rk = lm_test_kafka_client(bootstrap, RD_KAFKA_PRODUCER, NULL);
  if (rk == NULL) return -1;
  rd_kafka_NewPartitions_t* np =
      rd_kafka_NewPartitions_new(name, (size_t)partitions, errstr, sizeof errstr);
  rd_kafka_queue_t* q = rd_kafka_queue_new(rk);
  rd_kafka_CreatePartitions(rk, &np, 1, NULL, q);
  rd_kafka_event_t* ev = lm_test_kafka_admin_wait(q);
  int rc = -1;
  const rd_kafka_CreatePartitions_result_t* res =
      ev != NULL ? rd_kafka_event_CreatePartitions_result(ev) : NULL;
  if (res != NULL) {
    size_t n;
    const rd_kafka_topic_result_t** tr = rd_kafka_CreatePartitions_result_topics(res, &n);
    rc = n == 1 && rd_kafka_topic_result_error(tr[0]) == RD_KAFKA_RESP_ERR_NO_ERROR ? 0
                                                                                    : -1;
  }
  if (ev != NULL) rd_kafka_event_destroy(ev);
  rd_kafka_queue_destroy(q);
  rd_kafka_NewPartitions_destroy(np);
  rd_kafka_destroy(rk);
  return rc;
}

/* Produce n messages: values[i] (keys[i], NULL keys allowed; keys NULL: none)
 * to partition parts[i], all acknowledged before it returns: 0, or -1. */
static inline int lm_test_kafka_produce(const char* bootstrap, const char* topic,
                                        const int32_t* parts, const char* const* keys,
                                        const char* const* values, size_t n) {
  static const char* const kv[] = {"linger.ms", "5", "enable.idempotence", "true", NULL};
  rd_kafka_t* rk = lm_test_kafka_client(bootstrap, RD_KAFKA_PRODUCER, kv);
  if (rk == NULL) return -1;
  int rc = 0;
  for (size_t i = 0; i < n && rc == 0; i++) {
    void* key = keys != NULL ? (void*)keys[i] : NULL;
    void* value = (void*)values[i];
    size_t klen = key != NULL ? strlen(key) : 0;
    size_t vlen = value != NULL ? strlen(value) : 0;
    for (;;) {
      rd_kafka_resp_err_t e = rd_kafka_producev(
          rk, RD_KAFKA_V_TOPIC(topic), RD_KAFKA_V_PARTITION(parts[i]),
          RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY), RD_KAFKA_V_VALUE(value, vlen),
          RD_KAFKA_V_KEY(key, klen), RD_KAFKA_V_END);
      if (e == RD_KAFKA_RESP_ERR__QUEUE_FULL) {
        rd_kafka_poll(rk, 50);
        continue;
      }
      if (e != RD_KAFKA_RESP_ERR_NO_ERROR) {
        fprintf(stderr, "produce to %s: %s\n", topic, rd_kafka_err2str(e));
        rc = -1;
      }
      break;
    }
  }
  if (rd_kafka_flush(rk, 60000) != RD_KAFKA_RESP_ERR_NO_ERROR) rc = -1;
  rd_kafka_destroy(rk);
  return rc;
}

static inline int lm_test_kafka_cmp_lines(const void* a, const void* b) {
  return strcmp(*(char* const*)a, *(char* const*)b);
}

/* Every message of `topic` a read_committed consumer sees (to each
 * partition's end), one line "key<TAB>value" each ("-" for a missing key,
 * "<null>" for a tombstone), lines sorted. Caller frees; NULL on failure. *n:
 * the number of messages. */
static inline char* lm_test_kafka_read_committed(const char* bootstrap, const char* topic,
                                                 size_t* n) {
  static const char* const kv[] = {"group.id",
                                   "lm-test-reader",
                                   "isolation.level",
                                   "read_committed",
                                   "enable.partition.eof",
                                   "true",
                                   "enable.auto.commit",
                                   "false",
                                   NULL};
  rd_kafka_t* rk = lm_test_kafka_client(bootstrap, RD_KAFKA_CONSUMER, kv);
  if (rk == NULL) return NULL;
  const struct rd_kafka_metadata* md = NULL;
  rd_kafka_topic_t* t = rd_kafka_topic_new(rk, topic, NULL);
  if (rd_kafka_metadata(rk, 0, t, &md, 30000) != RD_KAFKA_RESP_ERR_NO_ERROR ||
      md->topic_cnt != 1 || md->topics[0].err != RD_KAFKA_RESP_ERR_NO_ERROR) {
    if (md != NULL) rd_kafka_metadata_destroy(md);
    rd_kafka_topic_destroy(t);
    rd_kafka_destroy(rk);
    return NULL;
  }
  int nparts = md->topics[0].partition_cnt;
  rd_kafka_topic_partition_list_t* l = rd_kafka_topic_partition_list_new(nparts);
  for (int i = 0; i < nparts; i++)
    rd_kafka_topic_partition_list_add(l, topic, md->topics[0].partitions[i].id)->offset =
        RD_KAFKA_OFFSET_BEGINNING;
  rd_kafka_metadata_destroy(md);
  rd_kafka_topic_destroy(t);
  rd_kafka_assign(rk, l);
  rd_kafka_topic_partition_list_destroy(l);
  size_t cap = 1024, count = 0;
  char** lines = malloc(cap * sizeof *lines);
  int eofs = 0, idle = 0;
  bool ok = true;
  while (eofs < nparts && idle < 300) { /* 30 s without a message: give up */
    rd_kafka_message_t* m = rd_kafka_consumer_poll(rk, 100);
    if (m == NULL) {
      idle++;
      continue;
    }
    idle = 0;
    if (m->err == RD_KAFKA_RESP_ERR__PARTITION_EOF) {
      eofs++;
    } else if (m->err != RD_KAFKA_RESP_ERR_NO_ERROR) {
      fprintf(stderr, "reading %s: %s\n", topic, rd_kafka_message_errstr(m));
      ok = false;
      eofs = nparts;
    } else {
      size_t klen = m->key != NULL ? m->key_len : 1;
      size_t vlen = m->payload != NULL ? m->len : 6;
      char* line = malloc(klen + vlen + 2);
      memcpy(line, m->key != NULL ? (const char*)m->key : "-", klen);
      line[klen] = '\t';
      memcpy(line + klen + 1, m->payload != NULL ? (const char*)m->payload : "<null>",
             vlen);
      line[klen + 1 + vlen] = '\0';
      if (count == cap) lines = realloc(lines, (cap *= 2) * sizeof *lines);
      lines[count++] = line;
    }
    rd_kafka_message_destroy(m);
  }
  rd_kafka_consumer_close(rk);
  rd_kafka_destroy(rk);
  ok = ok && eofs >= nparts;
  qsort(lines, count, sizeof *lines, lm_test_kafka_cmp_lines);
  size_t len = 1;
  for (size_t i = 0; i < count; i++) len += strlen(lines[i]) + 1;
  char* out = ok ? malloc(len) : NULL;
  size_t at = 0;
  for (size_t i = 0; i < count; i++) {
    size_t l = strlen(lines[i]);
    if (out != NULL) {
      memcpy(out + at, lines[i], l);
      out[at + l] = '\n';
      at += l + 1;
    }
    free(lines[i]);
  }
  if (out != NULL) out[at] = '\0';
  free(lines);
  *n = count;
  return out;
}
#endif /* LAMINAR_HAVE_KAFKA */

#endif /* LM_TEST_KAFKA_H */
