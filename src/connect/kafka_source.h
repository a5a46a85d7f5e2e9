/*
 * kafka_source.h -- a Kafka topic feeding a source (docs/KAFKA.md): a consumer
 * thread that decodes messages (JSON objects or CSV lines) into Arrow batches
 * of the source's schema and pushes them through the source's public push
 * path (laminar_source_push), as any producer would.
 *
 * Exactly once in, through the source's offset (laminar_source_offset): before
 * each batch is pushed, the consumer appends to an offsets log in the data
 * directory the push's offset and every partition's next Kafka offset after
 * the batch (fdatasync'ed; compacted at each durable checkpoint and at a
 * restart). After a restart the source's offset says which
 * pushes the recovered state holds (the WAL's, or the checkpoint's without
 * one), so the consumer resumes each partition where the last of those left
 * it: nothing consumed is lost or applied twice. Without durability it starts
 * at `startup` each time.
 *
 * Watermarks: with event_time = '<column>' (or 'kafka_timestamp'), each
 * partition's watermark is the largest event time it delivered; after each
 * batch the source gets the minimum over the partitions (explicit watermark
 * messages), partitions idle (at their end for idle_timeout) excepted.
 *
 * After each durable checkpoint the consumer group's offsets are committed:
 * every partition's next offset after the last push the checkpoint covers
 * (for monitoring tools; recovery never reads them).
 *
 * Partitions added to the topic while it runs are found by a metadata
 * refresh every discovery_ms and read from their earliest offset; each
 * holds the watermark back from its first record on.
 *
 * Metadata columns: source columns named _partition, _offset, _timestamp
 * (the message's, epoch ms), _key, _topic and _headers (a JSON object of the
 * message's headers) are filled from the message.
 * A message that does not decode (not JSON, a wrong type, a field count) is
 * counted, the reason of the last one kept, and skipped, delivered to the
 * dead-letter source, or (bad_fail) it stops the consumer.
 */
#ifndef LM_CONNECT_KAFKA_SOURCE_H
#define LM_CONNECT_KAFKA_SOURCE_H

#include "laminar.h"
#include "util/types.h"

#include <stdbool.h>
#include <stdint.h>

typedef struct lm_kafka_source lm_kafka_source;

typedef enum lm_kafka_startup {
  LM_KAFKA_EARLIEST = 0,
  LM_KAFKA_LATEST = 1,
  LM_KAFKA_GROUP = 2,
  LM_KAFKA_TIMESTAMP = 3
} lm_kafka_startup;

typedef struct lm_kafka_source_config {
  const char* name; /* the source */
  const char* brokers;
  const char* topic;
  const char* topic_pattern; /* instead of topic: every topic matching this POSIX
                                extended regular expression (unanchored) */
  const char* group_id;      /* NULL: "laminardb.<source>" */
  bool csv;
  bool avro;               /* Avro binary records (connect/avro.h) */
  const char* avro_schema; /* the writer's schema JSON (NULL: from the columns) */
  bool avro_confluent;     /* each record after Confluent's 5-byte prefix (a
                              zero magic byte, a schema id not looked up) */
  bool raw;                /* the payload as it is: the one column besides the metadata
                  columns, VARCHAR (a payload that is no UTF-8 is a bad record) */
  bool upsert; /* upsert-json: keyed JSON values, a null value a tombstone; the
                  source is a changelog (its last column _weight BIGINT): a
                  key's new value retracts its old row (-1) and inserts (+1), a
                  tombstone retracts it */
  lm_kafka_startup startup;
  int64_t startup_ms;      /* LM_KAFKA_TIMESTAMP */
  int32_t event_time;      /* column index, -1: none, -2: the message timestamp */
  int64_t wm_delay_ms;     /* the watermark trails the event time by this much */
  int64_t idle_timeout_ms; /* a partition at its end this long stops holding the
                              watermark (-1: never) */
  const char* offsets_log; /* NULL: not durable */
  const char* const* conf_keys;
  const char* const* conf_values;
  int32_t nconf;
  int64_t timeout_ms;
  int64_t discovery_ms; /* partitions added to the topic are looked for this
                           often (<= 0: never) */
  /* Bad records (bad_records = 'fail' | 'skip' | '<source>'): with bad_fail
   * the first stops the consumer (kafka_failed); with a dead-letter source,
   * each is a row of that source (its columns: some of _topic, _partition,
   * _offset, _timestamp, _key, payload and reason; checked by the caller). */
  bool bad_fail;
  const char* dead_letter;
  const lm_schema* dead_letter_schema;
} lm_kafka_source_config;

/* Check the configuration against the broker (the topic's partitions) and
 * start the consumer thread on `db`'s source c->name of `schema` (copied).
 * Errors: LAMINAR_ERR_CONNECTOR, LAMINAR_ERR_CONFIG_VALUE (a property the
 * client refuses), LAMINAR_ERR_SQL_UNSUPPORTED (built without Kafka),
 * LAMINAR_ERR_NOMEM. Control thread, under db->lock: the thread takes it to
 * open its producer handle, so it starts feeding once the caller is done. */
laminar_code lm_kafka_source_start(laminar_db* db, const lm_kafka_source_config* c,
                                   const lm_schema* schema, lm_kafka_source** out,
                                   laminar_error* err);

/* Ask the thread to stop (it closes its producer handle and ends); no wait:
 * a caller holding db->lock may call it. */
void lm_kafka_source_signal(lm_kafka_source* s);

/* Stop the thread, wait for it and free. NULL is a no-op. Not under db->lock
 * (the thread may wait for it). */
void lm_kafka_source_stop(lm_kafka_source* s);

/* Whether lm_kafka_source_signal was called. */
bool lm_kafka_source_signaled(lm_kafka_source* s);

/* A durable checkpoint holds the source's records up to `covered` (its
 * sequence numbers, laminar_source_offset's): the thread commits the Kafka
 * offsets the last of those pushes left to the consumer group, for
 * monitoring (recovery reads the checkpoint, not the group). Any thread;
 * no wait. */
void lm_kafka_source_checkpointed(lm_kafka_source* s, int64_t covered);

/* The source it feeds. */
const char* lm_kafka_source_name(const lm_kafka_source* s);

/* Its dead-letter source (bad_records = '<source>'), or NULL. */
const char* lm_kafka_source_dead_letter(const lm_kafka_source* s);

/* Messages skipped as bad; the reason of the last, or why the thread
 * stopped ("" when neither); *failed: whether it stopped on an error. */
int64_t lm_kafka_source_bad(lm_kafka_source* s, char* reason, size_t cap, bool* failed);

#endif /* LM_CONNECT_KAFKA_SOURCE_H */
