/*
 * options.h -- the one table of options (key, scope, type, default, doc) read
 * by laminar_config_set(), every CREATE ... WITH (...) and the subscription
 * options; laminar_option_get() hands it to users and the docs check.
 *
 * A surface looks a key up in its scope and parses the value with the row's
 * type: an unknown key is LAMINAR_ERR_CONFIG_KEY, an ill-typed value
 * LAMINAR_ERR_CONFIG_VALUE, both naming the key and the scope (and the SQL
 * position for WITH). The surface then applies the typed value by the row's id.
 */
#ifndef LM_DB_OPTIONS_H
#define LM_DB_OPTIONS_H

#include "chan/wait.h"
#include "laminar.h"
#include "sql/ast.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* What an option sets; one id may have rows in several scopes. */
typedef enum lm_option_id {
  LM_OPT_BUFFER_SIZE,
  LM_OPT_MAX_QUEUE_BYTES,
  LM_OPT_MAX_STATE_BYTES,
  LM_OPT_STATE_TTL,
  LM_OPT_BACKPRESSURE,
  LM_OPT_WAIT_STRATEGY,
  LM_OPT_SLOW_SUBSCRIBER,
  LM_OPT_CORES,
  LM_OPT_CORE_AFFINITY,
  LM_OPT_DATA_DIR,
  LM_OPT_READ_ONLY,
  LM_OPT_SINK_ROOT,
  LM_OPT_CHECKPOINT_INTERVAL,
  LM_OPT_CHECKPOINT_KEEP,
  LM_OPT_WAL_MODE,
  LM_OPT_WAL_FLUSH_INTERVAL,
  LM_OPT_WAL_IO,
  LM_OPT_WAL_DIRECT_IO,
  LM_OPT_WAL_RECOVERY,
  LM_OPT_VAR,
  LM_OPT_WATERMARK,
  LM_OPT_ALLOWED_LATENESS,
  LM_OPT_LATE_OUTPUT,
  LM_OPT_PATH,
  LM_OPT_FORMAT,
  LM_OPT_CONNECTOR,
  LM_OPT_BOOTSTRAP_SERVERS,
  LM_OPT_TOPIC,
  LM_OPT_KEY,
  LM_OPT_DELIVERY,
  LM_OPT_TRANSACTIONAL_ID,
  LM_OPT_TIMEOUT,
  LM_OPT_KAFKA, /* kafka.NAME: passed to the Kafka client as NAME */
  LM_OPT_STARTUP,
  LM_OPT_GROUP_ID,
  LM_OPT_EVENT_TIME,
  LM_OPT_IDLE_TIMEOUT,
  LM_OPT_ALIGNMENT_GROUP,
  LM_OPT_MAX_DRIFT,
  LM_OPT_WATERMARK_KEY,
  LM_OPT_PARTITION_DISCOVERY,
  LM_OPT_TOPIC_PATTERN,
  LM_OPT_BAD_RECORDS,
  LM_OPT_AVRO_SCHEMA,
  LM_OPT_AVRO_CONFLUENT_WIRE
} lm_option_id;

/* A parsed value; which member holds it follows the row's type. */
typedef struct lm_option_value {
  int64_t i;        /* counts, bytes, milliseconds, 0/1 for booleans, the index of
                     * an enum choice (in the row's choice list) */
  lm_wait wait;     /* wait strategies */
  const char* text; /* text values (borrowed from the input, not NUL-terminated
                     * for SQL literals: see len) */
  size_t len;
  bool is_bool; /* late_output: TRUE / FALSE rather than a name */
} lm_option_value;

typedef struct lm_option lm_option; /* one row of the table (options.c) */

lm_option_id lm_option_row_id(const lm_option* row);

/* Look `key` up in `scope` (one LAMINAR_SCOPE_*) and parse `value` (text, as
 * laminar_config_set takes it). On success *out_row and *out are set.
 * Returns: LAMINAR_OK; LAMINAR_ERR_CONFIG_KEY; LAMINAR_ERR_CONFIG_VALUE. */
laminar_code lm_option_parse_text(laminar_option_scope scope, const char* key,
                                  const char* value, const lm_option** out_row,
                                  lm_option_value* out, laminar_error* err);

/* The same for one `key = literal` of a WITH (...) clause of `object`; errors
 * carry the value's line:column and the object. */
laminar_code lm_option_parse_sql(laminar_option_scope scope, const char* object,
                                 const lm_ast_option* o, const lm_option** out_row,
                                 lm_option_value* out, laminar_error* err);

/* Check every option of a WITH (...) clause against `scope` (key known, value
 * well-typed), for surfaces that apply the values elsewhere (the binder). */
laminar_code lm_option_check_sql(laminar_option_scope scope, const char* object,
                                 const lm_ast_option* options, size_t n,
                                 laminar_error* err);

#endif /* LM_DB_OPTIONS_H */
