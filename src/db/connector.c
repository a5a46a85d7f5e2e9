/*
 * connector.c -- CREATE SINK name FROM stream WITH (connector = 'kafka', ...):
 * the options read through the one option table (options.c, scope sink), the
 * sink opened (sink/kafka.h) behind a queue and a thread of its own, and
 * attached like a file sink: it publishes at checkpoints, so it needs a
 * durable database. docs/KAFKA.md.
 *
 * Control thread, under db->lock (internal.h).
 */
#include "db/internal.h"

#include "db/durable.h"
#include "db/options.h"
#include "connect/kafka_source.h"
#include "sink/kafka.h"
#include "util/util.h"

#include <errno.h>
#include <stdlib.h>
#include <unistd.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#define MAX_CONF 64

/* An error of object `stmt` (kind: "sink" or "source") at line:column. */
static laminar_code fail_obj(laminar_error* err, laminar_code code, const char* kind,
                             const lm_stmt* stmt, int32_t line, int32_t column,
                             const char* msg) {
  lm_error_set(err, code, "%s '%s': %s at line %d, column %d", kind, stmt->name, msg,
               (int)line, (int)column);
  lm_error_at(err, line, column);
  lm_error_object(err, stmt->name, NULL);
  return code;
}

static laminar_code fail_stmt(laminar_error* err, laminar_code code, const lm_stmt* stmt,
                              int32_t line, int32_t column, const char* msg) {
  return fail_obj(err, code, "sink", stmt, line, column, msg);
}

static laminar_code fail_source(laminar_error* err, laminar_code code,
                                const lm_stmt* stmt, int32_t line, int32_t column,
                                const char* msg) {
  return fail_obj(err, code, "source", stmt, line, column, msg);
}

/* A NUL-terminated copy of an option's text (kept in `texts` to free). */
static char* text_copy(const lm_option_value* v, char** texts, int32_t* ntexts) {
  char* t = lm_malloc(v->len + 1);
  if (t == NULL) return NULL;
  memcpy(t, v->text, v->len);
  t[v->len] = '\0';
  texts[(*ntexts)++] = t;
  return t;
}

bool lm_db_sink_has_connector(const lm_stmt* stmt) {
  for (size_t i = 0; i < stmt->noptions; i++)
    if (lm_streq_nocase(stmt->options[i].key, "connector")) return true;
  return false;
}

/* The key's column list "a, b" -> indices in `schema`. */
static laminar_code key_columns(const lm_stmt* stmt, const lm_ast_option* o,
                                const char* list, const lm_schema* schema, int32_t* out,
                                int32_t* n, laminar_error* err) {
  *n = 0;
  const char* p = list;
  while (*p != '\0') {
    while (*p == ' ' || *p == ',') p++;
    size_t len = strcspn(p, " ,");
    if (len == 0) break;
    int32_t found = -1;
    for (int32_t c = 0; c < schema->ncols && found < 0; c++)
      if (strlen(schema->fields[c].name) == len &&
          lm_strneq_nocase(p, len, schema->fields[c].name))
        found = c;
    if (found < 0 || *n == schema->ncols) {
      char msg[300];
      snprintf(msg, sizeof msg, "key column '%.*s' is not a column of stream '%s'",
               (int)(len < 128 ? len : 128), p, stmt->sink_from);
      fail_stmt(err, LAMINAR_ERR_SQL_UNKNOWN_COLUMN, stmt, o->value->line,
                o->value->column, msg);
      return LAMINAR_ERR_SQL_UNKNOWN_COLUMN;
    }
    out[(*n)++] = found;
    p += len;
  }
  return LAMINAR_OK;
}

/* "<data_dir>/<sub>/kafka-<name><suffix>" (<data_dir>/<sub> made), the
 * name's unusual characters as '_': where a connector keeps its files. */
static laminar_code connector_path(laminar_db* db, const char* kind, const char* name,
                                   const char* sub, const char* suffix, char* out,
                                   size_t cap, laminar_error* err) {
  int n = snprintf(out, cap, "%s/%s", lm_durable_dir(db->dur), sub);
  if (n < 0 || (size_t)n >= cap)
    return lm_error_set(err, LAMINAR_ERR_IO, "%s '%s': data_dir path too long", kind,
                        name);
  if (mkdir(out, 0755) != 0 && errno != EEXIST)
    return lm_error_set(err, LAMINAR_ERR_IO, "%s '%s': mkdir '%s' failed: %s", kind, name,
                        out, strerror(errno));
  size_t at = (size_t)n;
  n = snprintf(out + at, cap - at, "/kafka-%s%s", name, suffix);
  if (n < 0 || (size_t)n >= cap - at)
    return lm_error_set(err, LAMINAR_ERR_IO, "%s '%s': data_dir path too long", kind,
                        name);
  for (char* c = out + at + 7; c < out + at + 7 + strlen(name); c++) {
    bool ok = (*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') ||
              (*c >= '0' && *c <= '9') || *c == '_' || *c == '-';
    if (!ok) *c = '_';
  }
  return LAMINAR_OK;
}

laminar_code lm_db_create_connector_sink(laminar_db* db, const char* sql,
                                         const lm_stmt* stmt, lm_stream_def* stream,
                                         laminar_error* err) {
  lm_kafka_sink_config c = {
      .name = stmt->name, .exactly_once = true, .timeout_ms = 30000};
  const char* conf_keys[MAX_CONF];
  const char* conf_values[MAX_CONF];
  char* texts[MAX_CONF + 8];
  int32_t ntexts = 0;
  int32_t* key = lm_calloc((size_t)stream->out_schema.ncols + 1, sizeof *key);
  char txn[256];
  char dir[4096];
  laminar_code rc =
      key != NULL ? LAMINAR_OK : lm_error_set(err, LAMINAR_ERR_NOMEM, "out of memory");
  bool has_connector = false;
  for (size_t i = 0; i < stmt->noptions && rc == LAMINAR_OK; i++) {
    const lm_ast_option* o = &stmt->options[i];
    const lm_option* row;
    lm_option_value v;
    rc = lm_option_parse_sql(LAMINAR_SCOPE_SINK, stmt->name, o, &row, &v, err);
    if (rc != LAMINAR_OK) break;
    lm_option_id id = lm_option_row_id(row);
    if (ntexts >= MAX_CONF + 6) {
      rc = fail_stmt(err, LAMINAR_ERR_CONFIG_VALUE, stmt, o->value->line,
                     o->value->column, "too many options");
      break;
    }
    char* t = NULL;
    if (v.text != NULL) {
      t = text_copy(&v, texts, &ntexts);
      if (t == NULL) {
        rc = lm_error_set(err, LAMINAR_ERR_NOMEM, "out of memory");
        break;
      }
    }
    switch (id) {
      case LM_OPT_CONNECTOR: has_connector = true; break;
      case LM_OPT_BOOTSTRAP_SERVERS: c.brokers = t; break;
      case LM_OPT_TOPIC: c.topic = t; break;
      case LM_OPT_FORMAT: /* "jsonl | csv | json | upsert-json | raw | avro" */
        c.csv = v.i == 1;
        c.upsert = v.i == 3;
        c.raw = v.i == 4;
        c.avro = v.i == 5;
        break;
      case LM_OPT_KEY:
        rc = key_columns(stmt, o, t, &stream->out_schema, key, &c.nkey, err);
        break;
      case LM_OPT_DELIVERY: c.exactly_once = v.i == 0; break;
      case LM_OPT_TRANSACTIONAL_ID: c.transactional_id = t; break;
      case LM_OPT_TIMEOUT: c.timeout_ms = v.i; break;
      case LM_OPT_KAFKA:
        if (c.nconf == MAX_CONF) {
          rc = fail_stmt(err, LAMINAR_ERR_CONFIG_VALUE, stmt, o->value->line,
                         o->value->column, "more than 64 kafka.* properties");
          break;
        }
        conf_keys[c.nconf] = o->key + 6; /* after "kafka." */
        conf_values[c.nconf++] = t;
        break;
      default: {
        char msg[200];
        snprintf(msg, sizeof msg, "option '%s' is a file sink's, not a Kafka sink's",
                 o->key);
        rc = fail_stmt(err, LAMINAR_ERR_CONFIG_CONFLICT, stmt, o->value->line,
                       o->value->column, msg);
      }
    }
  }
  const char* missing = NULL;
  if (rc == LAMINAR_OK) {
    if (!has_connector)
      missing = "connector";
    else if (c.brokers == NULL)
      missing = "'bootstrap.servers'";
    else if (c.topic == NULL)
      missing = "topic";
  }
  if (missing != NULL) {
    char msg[200];
    snprintf(msg, sizeof msg, "a Kafka sink needs %s = '...'", missing);
    rc = fail_stmt(err, LAMINAR_ERR_CONFIG_VALUE, stmt, stmt->line, stmt->column, msg);
  }
  /* upsert-json: keyed, over a changelog (its last column _weight). */
  int32_t ncols = stream->out_schema.ncols;
  if (rc == LAMINAR_OK && c.upsert &&
      (ncols == 0 || strcmp(stream->out_schema.fields[ncols - 1].name, "_weight") != 0))
    rc = fail_stmt(err, LAMINAR_ERR_CONFIG_VALUE, stmt, stmt->line, stmt->column,
                   "format 'upsert-json' needs a changelog (EMIT CHANGES, a materialized "
                   "view: a _weight column)");
  if (rc == LAMINAR_OK && c.upsert && c.nkey == 0)
    rc = fail_stmt(err, LAMINAR_ERR_CONFIG_VALUE, stmt, stmt->line, stmt->column,
                   "format 'upsert-json' needs key = '<columns>'");
  /* raw: the value is the one column not in the key (at most one). */
  if (rc == LAMINAR_OK && c.raw && (c.nkey > 1 || ncols - c.nkey != 1))
    rc = fail_stmt(err, LAMINAR_ERR_CONFIG_VALUE, stmt, stmt->line, stmt->column,
                   "format 'raw' writes one column as the value (and at most one as "
                   "the key): the stream must have exactly one column besides the key");
  if (rc == LAMINAR_OK && !lm_kafka_available()) {
    lm_sink* none;
    rc = lm_kafka_sink_open(&c, &stream->out_schema, &none, err);
    lm_error_object(err, stmt->name, NULL);
  }
  if (rc == LAMINAR_OK && db->dur == NULL)
    rc = fail_stmt(err, LAMINAR_ERR_CONFIG_CONFLICT, stmt, stmt->line, stmt->column,
                   "a Kafka sink publishes its output at checkpoints: open the "
                   "database with data_dir and checkpoint_interval");
  lm_sink_def* k = NULL;
  if (rc == LAMINAR_OK) {
    k = lm_calloc(1, sizeof *k);
    if (k != NULL) {
      k->stream = stream;
      k->name = lm_strdup(stmt->name);
      k->sql = lm_db_stmt_text(sql, stmt);
    }
    if (k == NULL || k->name == NULL || k->sql == NULL)
      rc = lm_error_set(err, LAMINAR_ERR_NOMEM, "out of memory");
  }
  if (rc == LAMINAR_OK && lm_durable_read_only(db->dur)) {
    rc = lm_discard_sink_create(&k->sink, err); /* the catalog names it, no more */
  } else if (rc == LAMINAR_OK) {
    if (c.transactional_id == NULL) {
      snprintf(txn, sizeof txn, "laminardb.%s", stmt->name);
      c.transactional_id = txn;
    }
    c.key_cols = key;
    c.conf_keys = conf_keys;
    c.conf_values = conf_values;
    c.fresh = !lm_durable_recovering(db->dur);
    rc = connector_path(db, "sink", stmt->name, "sinks", "", dir, sizeof dir, err);
    c.stage_dir = dir;
    lm_sink* inner = NULL;
    if (rc == LAMINAR_OK) rc = lm_kafka_sink_open(&c, &stream->out_schema, &inner, err);
    /* Its staging and publishing run on a sink thread (sink/queue.c). */
    if (rc == LAMINAR_OK) rc = lm_sink_queue_open(inner, db->buffer_size, &k->sink, err);
    if (rc != LAMINAR_OK) lm_error_object(err, stmt->name, NULL);
  }
  if (rc == LAMINAR_OK) rc = lm_db_attach_sink(db, k, err);
  if (rc != LAMINAR_OK && k != NULL) lm_db_sink_free(k);
  for (int32_t i = 0; i < ntexts; i++) lm_free(texts[i]);
  lm_free(key);
  LM_TRY(rc);
  return lm_durable_catalog_changed(db, err);
}

/* ---- CREATE SOURCE ... WITH (connector = 'kafka', ...) ------------------------------ */

/* The dead-letter source `name` of bad_records = '<name>' (option o): one
 * declared before, not this source nor a Kafka one, whose columns are some of
 * those the consumer fills (docs/KAFKA.md "Bad records"). */
static laminar_code dead_letter_check(laminar_db* db, const lm_stmt* stmt,
                                      const lm_ast_option* o, const char* name,
                                      laminar_error* err) {
  static const struct {
    const char* name;
    lm_type type, alt; /* its types */
    bool nullable;     /* the consumer may fill it with NULL */
  } cols[] = {{"_topic", LM_TYPE_STRING, LM_TYPE_STRING, false},
              {"_partition", LM_TYPE_INT32, LM_TYPE_INT64, false},
              {"_offset", LM_TYPE_INT64, LM_TYPE_INT64, false},
              {"_timestamp", LM_TYPE_INT64, LM_TYPE_TIMESTAMP, false},
              {"_key", LM_TYPE_STRING, LM_TYPE_STRING, true},
              {"payload", LM_TYPE_STRING, LM_TYPE_STRING, true},
              {"reason", LM_TYPE_STRING, LM_TYPE_STRING, false}};
  char msg[512];
  const lm_source_def* dl = lm_db_find_source(db, name);
  bool kafka = false;
  for (int32_t i = 0; dl != NULL && i < db->nconsumers; i++)
    kafka |= lm_streq_nocase(lm_kafka_source_name(db->consumers[i]), name);
  if (dl == NULL || lm_streq_nocase(name, stmt->name) || kafka) {
    snprintf(msg, sizeof msg,
             "bad_records '%.128s' names %s: declare the dead-letter source first, "
             "e.g. CREATE SOURCE %.128s (_partition INT, _offset BIGINT, payload "
             "VARCHAR, reason VARCHAR)",
             name,
             dl == NULL ? "no source"
             : kafka    ? "a Kafka source (a dead-letter source takes no connector)"
                        : "the source itself",
             name);
    return fail_source(
        err, dl == NULL ? LAMINAR_ERR_SQL_UNKNOWN_OBJECT : LAMINAR_ERR_CONFIG_VALUE, stmt,
        o->value->line, o->value->column, msg);
  }
  for (int32_t c = 0; c < dl->schema.ncols; c++) {
    const lm_field* f = &dl->schema.fields[c];
    size_t k = 0;
    while (k < sizeof cols / sizeof cols[0] && !lm_streq_nocase(f->name, cols[k].name))
      k++;
    bool fits = k < sizeof cols / sizeof cols[0] &&
                (f->type == cols[k].type || f->type == cols[k].alt) &&
                !(f->not_null && cols[k].nullable);
    if (fits) continue;
    snprintf(msg, sizeof msg,
             "dead-letter source '%.128s': column '%.128s' is %s; its columns are some "
             "of _topic VARCHAR, _partition INT, _offset BIGINT, _timestamp BIGINT, _key "
             "VARCHAR, payload VARCHAR, reason VARCHAR (_key and payload nullable)",
             name, f->name,
             k < sizeof cols / sizeof cols[0] ? "of another type or NOT NULL"
                                              : "none the consumer fills");
    return fail_source(err, LAMINAR_ERR_CONFIG_VALUE, stmt, o->value->line,
                       o->value->column, msg);
  }
  return LAMINAR_OK;
}


laminar_code lm_db_source_connector(laminar_db* db, const lm_stmt* stmt,
                                    lm_source_def* def, laminar_error* err) {
  const lm_schema* schema = &def->schema;
  /* Per-partition watermarks over the WATERMARK FOR column by default. */
  lm_kafka_source_config c = {.name = stmt->name,
                              .event_time = def->wm_col,
                              .wm_delay_ms = def->wm_delay_ms,
                              .idle_timeout_ms = -1,
                              .timeout_ms = 30000,
                              .discovery_ms = 5000};
  const char* conf_keys[MAX_CONF];
  const char* conf_values[MAX_CONF];
  char* texts[MAX_CONF + 8];
  int32_t ntexts = 0;
  char log[4096];
  laminar_code rc = LAMINAR_OK;
  for (size_t i = 0; i < stmt->noptions && rc == LAMINAR_OK; i++) {
    const lm_ast_option* o = &stmt->options[i];
    const lm_option* row;
    lm_option_value v;
    rc = lm_option_parse_sql(LAMINAR_SCOPE_SOURCE, stmt->name, o, &row, &v, err);
    if (rc != LAMINAR_OK) break;
    if (ntexts >= MAX_CONF + 6) {
      rc = fail_source(err, LAMINAR_ERR_CONFIG_VALUE, stmt, o->value->line,
                       o->value->column, "too many options");
      break;
    }
    char* t = NULL;
    if (v.text != NULL && (t = text_copy(&v, texts, &ntexts)) == NULL) {
      rc = lm_error_set(err, LAMINAR_ERR_NOMEM, "out of memory");
      break;
    }
    char msg[300];
    switch (lm_option_row_id(row)) {
      case LM_OPT_BOOTSTRAP_SERVERS: c.brokers = t; break;
      case LM_OPT_TOPIC: c.topic = t; break;
      case LM_OPT_FORMAT: /* "json | csv | upsert-json | raw | avro" */
        c.csv = v.i == 1;
        c.upsert = v.i == 2;
        c.raw = v.i == 3;
        c.avro = v.i == 4;
        break;
      case LM_OPT_AVRO_SCHEMA: c.avro_schema = t; break;
      case LM_OPT_AVRO_CONFLUENT_WIRE: c.avro_confluent = v.i == 1; break;
      case LM_OPT_BAD_RECORDS:
        if (lm_streq_nocase(t, "fail")) {
          c.bad_fail = true;
        } else if (!lm_streq_nocase(t, "skip")) {
          rc = dead_letter_check(db, stmt, o, t, err);
          c.dead_letter = t;
          if (rc == LAMINAR_OK) c.dead_letter_schema = &lm_db_find_source(db, t)->schema;
        }
        break;
      case LM_OPT_GROUP_ID: c.group_id = t; break;
      case LM_OPT_TIMEOUT: c.timeout_ms = v.i; break;
      case LM_OPT_IDLE_TIMEOUT: c.idle_timeout_ms = v.i > 0 ? v.i : -1; break;
      case LM_OPT_PARTITION_DISCOVERY: c.discovery_ms = v.i > 0 ? v.i : -1; break;
      case LM_OPT_TOPIC_PATTERN: c.topic_pattern = t; break;
      case LM_OPT_STARTUP: {
        char* end = NULL;
        if (lm_streq_nocase(t, "earliest")) {
          c.startup = LM_KAFKA_EARLIEST;
        } else if (lm_streq_nocase(t, "latest")) {
          c.startup = LM_KAFKA_LATEST;
        } else if (lm_streq_nocase(t, "group")) {
          c.startup = LM_KAFKA_GROUP;
        } else if (lm_strneq_nocase(t, 10, "timestamp:") && t[10] != '\0' &&
                   (c.startup_ms = strtoll(t + 10, &end, 10)) >= 0 && *end == '\0') {
          c.startup = LM_KAFKA_TIMESTAMP;
        } else {
          snprintf(msg, sizeof msg,
                   "startup '%.100s': expected earliest, latest, group or timestamp:<ms>",
                   t);
          rc = fail_source(err, LAMINAR_ERR_CONFIG_VALUE, stmt, o->value->line,
                           o->value->column, msg);
        }
        break;
      }
      case LM_OPT_EVENT_TIME:
        if (lm_streq_nocase(t, "kafka_timestamp")) {
          c.event_time = -2;
          break;
        }
        c.event_time = lm_schema_find(schema, t);
        if (c.event_time < 0 ||
            (schema->fields[c.event_time].type != LM_TYPE_INT64 &&
             schema->fields[c.event_time].type != LM_TYPE_TIMESTAMP)) {
          snprintf(msg, sizeof msg,
                   "event_time '%.100s' is no BIGINT or TIMESTAMP column of the source",
                   t);
          rc = fail_source(err, LAMINAR_ERR_SQL_UNKNOWN_COLUMN, stmt, o->value->line,
                           o->value->column, msg);
        }
        break;
      case LM_OPT_WATERMARK_KEY:
        /* Its watermark is the Kafka partitions' least (sent by the consumer). */
        rc = fail_source(err, LAMINAR_ERR_CONFIG_CONFLICT, stmt, o->value->line,
                         o->value->column,
                         "watermark_key cannot go with connector 'kafka': a Kafka "
                         "source's watermarks are per partition");
        break;
      case LM_OPT_KAFKA:
        if (c.nconf == MAX_CONF) {
          rc = fail_source(err, LAMINAR_ERR_CONFIG_VALUE, stmt, o->value->line,
                           o->value->column, "more than 64 kafka.* properties");
          break;
        }
        conf_keys[c.nconf] = o->key + 6; /* after "kafka." */
        conf_values[c.nconf++] = t;
        break;
      default: break; /* the source's own (catalog.c) */
    }
  }
  const char* missing = NULL;
  if (rc == LAMINAR_OK) {
    if (c.brokers == NULL)
      missing = "'bootstrap.servers'";
    else if ((c.topic == NULL) == (c.topic_pattern == NULL))
      missing = "either topic or topic_pattern";
  }
  if (missing != NULL) {
    char msg[200];
    snprintf(msg, sizeof msg, "a Kafka source needs %s = '...'", missing);
    rc = fail_source(err, LAMINAR_ERR_CONFIG_VALUE, stmt, stmt->line, stmt->column, msg);
  }
  c.conf_keys = conf_keys;
  c.conf_values = conf_values;
  if (rc == LAMINAR_OK && db->dur != NULL && !lm_durable_read_only(db->dur)) {
    rc = connector_path(db, "source", stmt->name, "sources", ".offsets", log, sizeof log,
                        err);
    /* A source created now starts afresh: an older one's log goes. */
    if (rc == LAMINAR_OK && !lm_durable_recovering(db->dur)) unlink(log);
    c.offsets_log = log;
  }
  /* Room first: once started, the consumer cannot be joined under db->lock. */
  if (rc == LAMINAR_OK) {
    struct lm_kafka_source** grown =
        lm_realloc(db->consumers, sizeof *grown * (size_t)(db->nconsumers + 1));
    if (grown == NULL)
      rc = lm_error_set(err, LAMINAR_ERR_NOMEM, "out of memory");
    else
      db->consumers = grown;
  }
  struct lm_kafka_source* k = NULL;
  if (rc == LAMINAR_OK && lm_durable_read_only(db->dur)) {
    /* read_only: the catalog names it, nothing is consumed */
  } else if (rc == LAMINAR_OK) {
    rc = lm_kafka_source_start(db, &c, schema, &k, err);
    if (rc != LAMINAR_OK) lm_error_object(err, stmt->name, NULL);
  }
  if (k != NULL) db->consumers[db->nconsumers++] = k;
  /* Its watermark is the partitions' least, sent by the consumer. */
  if (rc == LAMINAR_OK && c.event_time != -1) def->wm_external = true;
  for (int32_t i = 0; i < ntexts; i++) lm_free(texts[i]);
  return rc;
}

void lm_db_source_connector_stop(laminar_db* db, const char* source) {
  for (int32_t i = 0; i < db->nconsumers; i++) {
    struct lm_kafka_source* k = db->consumers[i];
    if (!lm_kafka_source_signaled(k) && strcmp(lm_kafka_source_name(k), source) == 0)
      lm_kafka_source_signal(k); /* joined at close: it may wait for db->lock */
  }
}

const char* lm_db_dead_letter_user(laminar_db* db, const char* name) {
  for (int32_t i = 0; i < db->nconsumers; i++) {
    struct lm_kafka_source* k = db->consumers[i];
    const char* dl = lm_kafka_source_dead_letter(k);
    if (!lm_kafka_source_signaled(k) && dl != NULL && lm_streq_nocase(dl, name))
      return lm_kafka_source_name(k);
  }
  return NULL;
}

void lm_db_source_connector_checkpointed(laminar_db* db, const char* source,
                                         int64_t covered) {
  for (int32_t i = 0; i < db->nconsumers; i++) {
    struct lm_kafka_source* k = db->consumers[i];
    if (!lm_kafka_source_signaled(k) && strcmp(lm_kafka_source_name(k), source) == 0)
      lm_kafka_source_checkpointed(k, covered);
  }
}

void lm_db_connectors_stop(laminar_db* db) {
  /* Taken out of the list under the lock (a checkpoint thread reads it,
   * lm_db_source_connector_checkpointed), stopped outside it: a consumer
   * thread may wait for the lock before it sees the stop. */
  pthread_mutex_lock(&db->lock);
  struct lm_kafka_source** consumers = db->consumers;
  int32_t n = db->nconsumers;
  db->consumers = NULL;
  db->nconsumers = 0;
  pthread_mutex_unlock(&db->lock);
  for (int32_t i = 0; i < n; i++) lm_kafka_source_stop(consumers[i]);
  lm_free(consumers);
}
