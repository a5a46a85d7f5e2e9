/*
 * kafka.h -- the Kafka sink (docs/KAFKA.md): a stream's rows as messages of a
 * Kafka topic, published once per checkpoint epoch, exactly once.
 *
 * Protocol (sink.h's two phases, over a file sink used as a staging area):
 *   write / begin / pre_commit / sync   the rows of each epoch are staged as
 *        framed key and value records (file.h LM_SINK_RECORDS_*) in a
 *        directory of the data directory, made durable by sync before the
 *        checkpoint that covers the epoch is written;
 *   commit(e)  (the checkpoint is durable) the staged epoch becomes a part
 *        file (rename), then is published in ONE Kafka transaction of the
 *        sink's stable transactional.id together with a marker -- the offset
 *        e committed for the sink's marker group "<transactional.id>.<uid>"
 *        on partition 0 of the topic -- and removed;
 *   recover(c)  init_transactions fences a dead process's producer and
 *        aborts its open transaction; staged epochs <= c become part files,
 *        later ones are dropped; every part file above the marker is
 *        published (it was committed locally, its transaction was aborted or
 *        never begun), those at or below it removed.
 * A reader with isolation.level=read_committed sees each epoch's rows once:
 * the marker and the rows commit together, so an epoch is published again
 * only if its transaction did not commit. The uid (a file in the staging
 * directory, new for each created sink) keeps an old sink's marker of the
 * same transactional.id from hiding a new sink's epochs.
 * delivery = at_least_once: the same staging, published without a
 * transaction or marker (an epoch whose publishing a crash interrupted is
 * published again).
 *
 * Errors of the broker (unreachable, unknown topic, fenced, refused) are
 * LAMINAR_ERR_CONNECTOR naming the sink, the topic and librdkafka's reason;
 * a build without librdkafka refuses the sink with LAMINAR_ERR_SQL_UNSUPPORTED.
 */
#ifndef LM_SINK_KAFKA_H
#define LM_SINK_KAFKA_H

#include "laminar.h"
#include "sink/sink.h"
#include "util/types.h"

#include <stdbool.h>
#include <stdint.h>

typedef struct lm_kafka_sink_config {
  const char* name;    /* the sink (messages) */
  const char* brokers; /* bootstrap.servers */
  const char* topic;
  bool csv;          /* messages as CSV fields (else a JSON object) */
  bool avro;         /* an Avro record of the columns (connect/avro.h; the key:
                        a record of the key columns) */
  bool raw;          /* the value: the one column not in the key, as it is (a
                        string's bytes, another value's text); the key: the
                        key column alike */
  bool upsert;       /* upsert-json: of a changelog (the schema's last column
                        _weight) and keyed; per epoch and key, the last +1 row's
                        value, or a tombstone when the key only lost rows */
  bool exactly_once; /* transactions (else at least once) */
  const char* transactional_id;
  const char* stage_dir;   /* staging directory (created; its parent must exist) */
  bool fresh;              /* created now, not re-created at open: stale staging
                            is removed and a new uid chosen */
  const int32_t* key_cols; /* the key's columns */
  int32_t nkey;
  const char* const* conf_keys; /* librdkafka properties (kafka.NAME, without "kafka.") */
  const char* const* conf_values;
  int32_t nconf;
  int64_t timeout_ms; /* longest wait for the broker in one step */
} lm_kafka_sink_config;

/* Whether this build has the Kafka client (librdkafka). */
bool lm_kafka_available(void);

/* Open a Kafka sink for rows of `schema` (copied). A fresh sink connects now
 * (the topic's metadata, init_transactions), so a broker that cannot be
 * reached fails the CREATE; a re-created one connects in recover(). It takes
 * every protocol step of sink.h (not queued: put it behind
 * lm_sink_queue_open). Errors: LAMINAR_ERR_CONNECTOR, LAMINAR_ERR_IO,
 * LAMINAR_ERR_CONFIG_VALUE (a property librdkafka refuses),
 * LAMINAR_ERR_SQL_UNSUPPORTED (built without Kafka), LAMINAR_ERR_NOMEM. */
laminar_code lm_kafka_sink_open(const lm_kafka_sink_config* c, const lm_schema* schema,
                                lm_sink** out, laminar_error* err);

#endif /* LM_SINK_KAFKA_H */
