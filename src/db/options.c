/*
 * options.c -- the option table and its parser (options.h). Every option a
 * user can set is one row here; docs/SQL.md and docs/C-API.md carry the table
 * generated from laminar_option_get() (scripts/options_doc.py), checked by
 * tests/python/test_options.py.
 */
#include "db/options.h"

#include "db/durable.h"
#include "rt/rt.h"
#include "util/util.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef enum opt_type {
  T_BOOL,        /* true | false (also on/off, 1/0) */
  T_SLOTS,       /* a power of two in [2, 2^24] */
  T_COUNT,       /* a whole number in [min, max] */
  T_BYTES,       /* a byte count: 268435456, '256MB', '1 GiB' */
  T_DURATION,    /* '10 seconds', '500 ms' (choices "none": 'none' allowed, -1) */
  T_INTERVAL,    /* an INTERVAL (or whole milliseconds) >= 0 */
  T_ENUM,        /* one of `choices` ("a | b | c"); value: its index */
  T_WAIT,        /* park | spin | spin_yield(n) */
  T_TEXT,        /* a string (min 1: not empty) */
  T_NAME_OR_BOOL /* a name, or TRUE / FALSE */
} opt_type;

#define DB LAMINAR_SCOPE_DB
#define SRC LAMINAR_SCOPE_SOURCE
#define STREAM LAMINAR_SCOPE_STREAM
#define SUB LAMINAR_SCOPE_SUBSCRIPTION
#define SINK LAMINAR_SCOPE_SINK

struct lm_option {
  const char* key;
  int32_t scopes;
  lm_option_id id;
  opt_type type;
  const char* choices;   /* T_ENUM: "a | b"; T_DURATION: "none" when allowed */
  int64_t min, max;      /* T_COUNT bounds; T_TEXT: min 1 = not empty, max = longest */
  const char* type_text; /* what the docs and errors say the value is */
  const char* def;       /* the default, as text ("" for none) */
  const char* doc;
};

static const lm_option table[] = {
    /* ---- the database (laminar_config_set) ---- */
    {"buffer_size", DB, LM_OPT_BUFFER_SIZE, T_SLOTS, NULL, 2, 1 << 24,
     "a power of two, 2 to 16777216", "65536",
     "slots in each source and subscriber queue"},
    {"max_queue_bytes", DB, LM_OPT_MAX_QUEUE_BYTES, T_BYTES, NULL, 0, 0,
     "a byte count ('256MB'; 0: none)", "256MB",
     "bytes of the batches queued in each source and subscriber queue"},
    {"max_state_bytes", DB, LM_OPT_MAX_STATE_BYTES, T_BYTES, NULL, 0, 0,
     "a byte count ('1GB'; 0: none)", "0",
     "bound on the keyed state of all streams together"},
    {"backpressure", DB, LM_OPT_BACKPRESSURE, T_ENUM, "block | drop_oldest | reject", 0,
     0, "block | drop_oldest | reject", "block",
     "what a push does when its source's queue is full"},
    {"wait_strategy", DB, LM_OPT_WAIT_STRATEGY, T_WAIT, NULL, 0, 0,
     "park | spin | spin_yield(n)", "park",
     "how producers, the reactor and subscribers wait on a full or empty queue"},
    {"slow_subscriber", DB, LM_OPT_SLOW_SUBSCRIBER, T_ENUM, "block | drop", 0, 0,
     "block | drop", "block",
     "a full subscriber queue holds the reactor (block) or loses the batch (drop)"},
    {"cores", DB, LM_OPT_CORES, T_COUNT, NULL, 1, LM_RT_MAX_CORES,
     "a whole number, 1 to 64", "1",
     "reactors: keyed streams run as this many key-hash partitions"},
    {"core_affinity", DB, LM_OPT_CORE_AFFINITY, T_BOOL, NULL, 0, 0, "a boolean", "false",
     "pin reactor i to CPU i"},
    {"data_dir", DB, LM_OPT_DATA_DIR, T_TEXT, NULL, 0, 0, "a directory", "",
     "directory of durable state, created if missing"},
    {"read_only", DB, LM_OPT_READ_ONLY, T_BOOL, NULL, 0, 0, "a boolean", "false",
     "open data_dir for queries only; nothing there is written"},
    {"sink_root", DB, LM_OPT_SINK_ROOT, T_TEXT, NULL, 1, 0, "a directory (must exist)",
     "", "file sinks may only write under this directory"},
    {"checkpoint_interval", DB, LM_OPT_CHECKPOINT_INTERVAL, T_DURATION, "none", 1, 0,
     "a duration ('10 seconds') or none", "none",
     "checkpoint period; turns on durability (needs data_dir)"},
    {"checkpoint_keep", DB, LM_OPT_CHECKPOINT_KEEP, T_COUNT, NULL, 1, 1000,
     "a whole number, 1 to 1000", "3", "checkpoints kept on disk"},
    {"wal_mode", DB, LM_OPT_WAL_MODE, T_ENUM, "none | async | sync", 0, 0,
     "none | async | sync", "none",
     "each source logs its pushes (needs checkpoint_interval)"},
    {"wal_flush_interval", DB, LM_OPT_WAL_FLUSH_INTERVAL, T_DURATION, NULL, 1, 0,
     "a duration ('10 ms')", "10 ms", "async WAL: longest delay before a flush"},
    {"wal_io", DB, LM_OPT_WAL_IO, T_ENUM, "auto | io_uring | pwrite", 0, 0,
     "auto | io_uring | pwrite", "auto",
     "how the WAL writes (auto: io_uring when available)"},
    {"wal_direct_io", DB, LM_OPT_WAL_DIRECT_IO, T_ENUM, "auto | off", 0, 0, "auto | off",
     "auto", "O_DIRECT for WAL segments where the file system takes it"},
    {"wal_recovery", DB, LM_OPT_WAL_RECOVERY, T_ENUM, "cut | strict", 0, 0,
     "cut | strict", "cut",
     "WAL damage before the tail: cut and report, or refuse to open"},
    {"var.NAME", DB, LM_OPT_VAR, T_TEXT, NULL, 0, 0, "text", "",
     "the value of ${NAME} in SQL text (pasted verbatim)"},
    /* ---- CREATE SOURCE ... WITH (...) and subscriptions ---- */
    {"buffer_size", SRC | SUB, LM_OPT_BUFFER_SIZE, T_SLOTS, NULL, 2, 1 << 24,
     "a power of two, 2 to 16777216", "config buffer_size", "slots in its queue"},
    {"max_queue_bytes", SRC | SUB, LM_OPT_MAX_QUEUE_BYTES, T_BYTES, NULL, 0, 0,
     "a byte count ('64MB'; 0: none)", "config max_queue_bytes",
     "bytes of the batches in its queue"},
    {"backpressure", SRC, LM_OPT_BACKPRESSURE, T_ENUM, "block | drop_oldest | reject", 0,
     0, "block | drop_oldest | reject", "config backpressure",
     "what a push does on a full queue"},
    {"wait_strategy", SRC | SUB, LM_OPT_WAIT_STRATEGY, T_WAIT, NULL, 0, 0,
     "park | spin | spin_yield(n)", "config wait_strategy",
     "how its blocked producers (source) or its reader (subscription) wait"},
    {"slow_subscriber", SUB, LM_OPT_SLOW_SUBSCRIBER, T_ENUM, "block | drop", 0, 0,
     "block | drop", "config slow_subscriber", "what a full queue does to new batches"},
    {"watermark", SRC, LM_OPT_WATERMARK, T_TEXT, NULL, 1, 127, "a column name", "",
     "the watermark column: as WATERMARK FOR col"},
    {"watermark_key", SRC, LM_OPT_WATERMARK_KEY, T_TEXT, NULL, 1, 127, "a column name",
     "",
     "per-key watermarks: each value of this column has its own watermark, and "
     "windows grouped by it close per key"},
    {"allowed_lateness", SRC, LM_OPT_ALLOWED_LATENESS, T_INTERVAL, NULL, 0, 0,
     "an INTERVAL (or milliseconds) >= 0", "0",
     "default allowed lateness of the windowed streams reading it"},
    {"wal_mode", SRC, LM_OPT_WAL_MODE, T_ENUM, "none | async | sync", 0, 0,
     "none | async | sync", "config wal_mode", "its WAL (needs durability)"},
    {"checkpoint_interval", SRC, LM_OPT_CHECKPOINT_INTERVAL, T_DURATION, "none", 1, 0,
     "a duration ('10 seconds')", "config checkpoint_interval",
     "lowers the database's checkpoint period (needs durability)"},
    {"idle_timeout", SRC, LM_OPT_IDLE_TIMEOUT, T_DURATION, "none", 1, 0,
     "a duration ('5 s') or none", "none",
     "no data for this long makes it idle: it holds back no union's watermark (of a "
     "Kafka source, also a partition's: docs/KAFKA.md; with watermark_key, a key this "
     "far behind the source's largest event time)"},
    {"alignment_group", SRC, LM_OPT_ALIGNMENT_GROUP, T_TEXT, NULL, 1, 127, "a name", "",
     "watermark alignment: sources of one group are held within max_drift"},
    {"max_drift", SRC, LM_OPT_MAX_DRIFT, T_INTERVAL, NULL, 0, 0,
     "an INTERVAL (or milliseconds) >= 0", "",
     "alignment_group: how far its watermark may run ahead of the group's slowest"},
    /* ---- CREATE STREAM / MATERIALIZED VIEW ... WITH (...) ---- */
    {"allowed_lateness", STREAM, LM_OPT_ALLOWED_LATENESS, T_INTERVAL, NULL, 0, 0,
     "an INTERVAL (or milliseconds) >= 0", "the source's allowed_lateness",
     "windows close that long after their end (needs a window)"},
    {"late_output", STREAM, LM_OPT_LATE_OUTPUT, T_NAME_OR_BOOL, NULL, 1, 127,
     "a stream name or a boolean", "false",
     "late rows go to this stream (TRUE: the stream's name + '_late'); of a window or "
     "of a JOIN of two streams"},
    {"max_state_bytes", STREAM, LM_OPT_MAX_STATE_BYTES, T_BYTES, NULL, 0, 0,
     "a byte count ('512MB'; 0: none)", "0", "bound on this stream's keyed state"},
    {"state_ttl", STREAM, LM_OPT_STATE_TTL, T_INTERVAL, NULL, 0, 0,
     "an INTERVAL (or milliseconds) >= 0; 0: none", "0",
     "a key (a group of a GROUP BY without a window) not updated for this long in "
     "event time is forgotten once the watermark passes, its row retracted; a JOIN "
     "without a time bound drops each side's rows this far behind the other's "
     "watermark (approximate)"},
    /* ---- CREATE SINK ... INTO FILE (...) ---- */
    {"path", SINK, LM_OPT_PATH, T_TEXT, NULL, 1, 4095, "a directory", "",
     "where the sink writes its files (required)"},
    {"format", SINK, LM_OPT_FORMAT, T_ENUM,
     "jsonl | csv | json | upsert-json | raw | avro", 0, 0,
     "jsonl | csv | json | upsert-json | raw | avro", "jsonl",
     "file format; of a Kafka sink, each message's (json: one object, jsonl alike; "
     "upsert-json: a keyed changelog's last row per key, or a tombstone; raw: one "
     "column's bytes; avro: an Avro record of the columns)"},
    /* ---- CREATE SOURCE / SINK ... WITH (connector = 'kafka', ...) (docs/KAFKA.md) ---- */
    {"format", SRC, LM_OPT_FORMAT, T_ENUM, "json | csv | upsert-json | raw | avro", 0, 0,
     "json | csv | upsert-json | raw | avro", "json",
     "a Kafka source's message format (csv: fields in column order; upsert-json: "
     "keyed values and tombstones into a changelog source; raw: the payload into "
     "the one VARCHAR column besides the metadata columns)"},
    {"avro.schema", SRC, LM_OPT_AVRO_SCHEMA, T_TEXT, NULL, 1, 0,
     "an Avro record schema (JSON)", "",
     "format 'avro': the writer's schema of the records (none: one made from the "
     "source's columns); columns are matched to its fields by name"},
    {"avro.confluent_wire", SRC, LM_OPT_AVRO_CONFLUENT_WIRE, T_BOOL, NULL, 0, 0,
     "a boolean", "false",
     "format 'avro': each message starts with Confluent's 5 bytes (a zero magic byte, "
     "a 4-byte schema id, not looked up: the schema is avro.schema or the columns')"},
    {"bad_records", SRC, LM_OPT_BAD_RECORDS, T_TEXT, NULL, 1, 127,
     "fail | skip | a source name", "skip",
     "a Kafka record that does not decode or fit: skipped (counted), the consumer "
     "stopped (fail), or a row of that source (a dead-letter output: docs/KAFKA.md)"},
    {"connector", SINK | SRC, LM_OPT_CONNECTOR, T_ENUM, "kafka", 0, 0, "kafka", "",
     "the external system the sink writes to or the source reads from"},
    {"bootstrap.servers", SINK | SRC, LM_OPT_BOOTSTRAP_SERVERS, T_TEXT, NULL, 1, 0,
     "host:port[,host:port...]", "", "Kafka brokers to connect to (required)"},
    {"topic", SINK | SRC, LM_OPT_TOPIC, T_TEXT, NULL, 1, 249, "a topic name", "",
     "the Kafka topic written or read (required)"},
    {"key", SINK, LM_OPT_KEY, T_TEXT, NULL, 1, 0, "column names, comma-separated", "",
     "the message key: these columns, in the message format (none: no key)"},
    {"delivery", SINK, LM_OPT_DELIVERY, T_ENUM, "exactly_once | at_least_once", 0, 0,
     "exactly_once | at_least_once", "exactly_once",
     "exactly_once: one Kafka transaction per checkpoint epoch"},
    {"transactional_id", SINK, LM_OPT_TRANSACTIONAL_ID, T_TEXT, NULL, 1, 200, "text",
     "laminardb.<sink name>",
     "the producer's transactional.id: stable, one per sink and cluster"},
    {"topic_pattern", SRC, LM_OPT_TOPIC_PATTERN, T_TEXT, NULL, 1, 0,
     "a POSIX extended regular expression", "",
     "instead of topic: every topic it matches (unanchored; found again every "
     "partition_discovery_interval); the _topic column names each row's"},
    {"startup", SRC, LM_OPT_STARTUP, T_TEXT, NULL, 1, 40,
     "earliest | latest | group | timestamp:<ms>", "earliest",
     "where a Kafka source starts when no checkpoint says"},
    {"group_id", SRC, LM_OPT_GROUP_ID, T_TEXT, NULL, 1, 200, "text",
     "laminardb.<source name>",
     "the Kafka consumer group: its offsets are committed after each durable "
     "checkpoint (startup 'group' reads them)"},
    {"event_time", SRC, LM_OPT_EVENT_TIME, T_TEXT, NULL, 1, 127,
     "a column name or kafka_timestamp", "",
     "per-partition watermarks from this column (or the message timestamp)"},
    {"timeout", SINK | SRC, LM_OPT_TIMEOUT, T_DURATION, NULL, 1, 0,
     "a duration ('30 seconds')", "30 seconds",
     "longest wait for the broker in one step (connect, commit)"},
    {"partition_discovery_interval", SRC, LM_OPT_PARTITION_DISCOVERY, T_DURATION, "none",
     1, 0, "a duration ('5 seconds') or none", "5 seconds",
     "how often a Kafka source looks for partitions added to its topic (none: never)"},
    {"kafka.NAME", SINK | SRC, LM_OPT_KAFKA, T_TEXT, NULL, 0, 0, "text", "",
     "passed to the Kafka client (librdkafka) as its property NAME"},
};

#define NROWS ((int32_t)(sizeof table / sizeof table[0]))

lm_option_id lm_option_row_id(const lm_option* row) { return row->id; }

static const char* scope_name(laminar_option_scope scope) {
  switch (scope) {
    case LAMINAR_SCOPE_DB: return "config";
    case LAMINAR_SCOPE_SOURCE: return "source";
    case LAMINAR_SCOPE_STREAM: return "stream";
    case LAMINAR_SCOPE_SUBSCRIPTION: return "subscription";
    case LAMINAR_SCOPE_SINK: return "sink";
  }
  return "unknown";
}

static bool key_matches(const lm_option* row, const char* key) {
  if (row->id == LM_OPT_VAR) return strlen(key) > 4 && lm_strneq_nocase(key, 4, "var.");
  if (row->id == LM_OPT_KAFKA)
    return strlen(key) > 6 && lm_strneq_nocase(key, 6, "kafka.");
  return lm_streq_nocase(row->key, key);
}

static const lm_option* find(laminar_option_scope scope, const char* key) {
  for (int32_t i = 0; i < NROWS; i++)
    if ((table[i].scopes & (int32_t)scope) != 0 && key_matches(&table[i], key))
      return &table[i];
  return NULL;
}

static laminar_code unknown_key(laminar_option_scope scope, const char* key,
                                const char* where, laminar_error* err) {
  char known[512];
  size_t n = 0;
  known[0] = '\0';
  for (int32_t i = 0; i < NROWS && n < sizeof known; i++) {
    if ((table[i].scopes & (int32_t)scope) == 0) continue;
    n += (size_t)snprintf(known + n, sizeof known - n, "%s%s", n ? ", " : "",
                          table[i].key);
  }
  return lm_error_set(err, LAMINAR_ERR_CONFIG_KEY, "unknown %s option '%s'%s (known: %s)",
                      scope_name(scope), key, where, known);
}

static laminar_code bad_value(laminar_option_scope scope, const lm_option* row,
                              const char* got, const char* where, laminar_error* err) {
  return lm_error_set(err, LAMINAR_ERR_CONFIG_VALUE,
                      "%s option '%s'%s: expected %s, got %s", scope_name(scope),
                      row->key, where, row->type_text, got);
}

/* The index of `text` among "a | b | c", or -1. */
static int64_t choice_index(const char* choices, const char* text) {
  int64_t index = 0;
  const char* s = choices;
  while (*s != '\0') {
    size_t len = strcspn(s, " |");
    if (len > 0 && lm_strneq_nocase(s, len, text)) return index;
    s += len;
    if (len > 0) index++;
    while (*s == ' ' || *s == '|') s++;
  }
  return -1;
}

static bool parse_whole(const char* text, int64_t* out) {
  char* end;
  errno = 0;
  long long v = strtoll(text, &end, 10);
  if (errno != 0 || end == text || *end != '\0') return false;
  *out = (int64_t)v;
  return true;
}

/* Parse `text` as the row's type into *out; false when it is not one. */
static bool parse_value(const lm_option* row, const char* text, lm_option_value* out) {
  *out = (lm_option_value){.text = text, .len = strlen(text)};
  switch (row->type) {
    case T_BOOL:
      if (lm_streq_nocase(text, "true") || lm_streq_nocase(text, "on") ||
          strcmp(text, "1") == 0)
        out->i = 1;
      else if (lm_streq_nocase(text, "false") || lm_streq_nocase(text, "off") ||
               strcmp(text, "0") == 0)
        out->i = 0;
      else
        return false;
      return true;
    case T_SLOTS:
      return text[0] != '-' && parse_whole(text, &out->i) && out->i >= row->min &&
             out->i <= row->max && (out->i & (out->i - 1)) == 0;
    case T_COUNT:
      return parse_whole(text, &out->i) && out->i >= row->min && out->i <= row->max;
    case T_BYTES: return lm_parse_bytes(text, &out->i);
    case T_DURATION:
      if (!lm_interval_parse_ms(text, &out->i)) return false;
      return out->i >= row->min || (out->i == -1 && row->choices != NULL);
    case T_INTERVAL: return parse_whole(text, &out->i) && out->i >= 0;
    case T_ENUM: out->i = choice_index(row->choices, text); return out->i >= 0;
    case T_WAIT: out->wait = lm_wait_default(); return lm_wait_parse(text, &out->wait);
    case T_TEXT:
      return (int64_t)out->len >= row->min &&
             (row->max == 0 || (int64_t)out->len <= row->max);
    case T_NAME_OR_BOOL:
      if (lm_streq_nocase(text, "true") || lm_streq_nocase(text, "false")) {
        out->is_bool = true;
        out->i = lm_streq_nocase(text, "true");
        return true;
      }
      return out->len >= 1 && (int64_t)out->len <= row->max;
  }
  return false;
}

laminar_code lm_option_parse_text(laminar_option_scope scope, const char* key,
                                  const char* value, const lm_option** out_row,
                                  lm_option_value* out, laminar_error* err) {
  const lm_option* row = find(scope, key);
  if (row == NULL) return unknown_key(scope, key, "", err);
  if (!parse_value(row, value, out)) {
    char got[160];
    snprintf(got, sizeof got, "'%s'", value);
    return bad_value(scope, row, got, "", err);
  }
  *out_row = row;
  return LAMINAR_OK;
}

/* Which literal kinds a type takes in SQL: strings always (parsed as text,
 * except by INTERVAL options); the rest as listed. */
static bool literal_fits(const lm_option* row, const lm_ast_expr* v) {
  if (v->kind != LM_AST_LITERAL) return false;
  switch (v->lit) {
    case LM_LIT_STRING: return row->type != T_INTERVAL;
    case LM_LIT_INT:
      return row->type == T_BOOL || row->type == T_SLOTS || row->type == T_COUNT ||
             row->type == T_BYTES || row->type == T_INTERVAL || row->type == T_DURATION;
    case LM_LIT_BOOL: return row->type == T_BOOL || row->type == T_NAME_OR_BOOL;
    case LM_LIT_INTERVAL: return row->type == T_INTERVAL || row->type == T_DURATION;
    default: return false;
  }
}

/* What a literal the row does not take is, for the message. */
static const char* literal_kind(const lm_ast_expr* v) {
  if (v->kind != LM_AST_LITERAL) return "a variable";
  switch (v->lit) {
    case LM_LIT_NULL: return "NULL";
    case LM_LIT_BOOL: return v->b ? "TRUE" : "FALSE";
    case LM_LIT_INT: return "a whole number";
    case LM_LIT_DOUBLE: return "a number with a fraction";
    case LM_LIT_STRING: return "a string";
    case LM_LIT_INTERVAL: return "an INTERVAL";
  }
  return "another kind of value";
}

laminar_code lm_option_parse_sql(laminar_option_scope scope, const char* object,
                                 const lm_ast_option* o, const lm_option** out_row,
                                 lm_option_value* out, laminar_error* err) {
  const lm_ast_expr* v = o->value;
  char where[192];
  snprintf(where, sizeof where, " of '%s' at line %d, column %d", object, (int)v->line,
           (int)v->column);
  const lm_option* row = find(scope, o->key);
  laminar_code rc = LAMINAR_OK;
  if (row == NULL) {
    rc = unknown_key(scope, o->key, where, err);
  } else if (!literal_fits(row, v)) {
    rc = bad_value(scope, row, literal_kind(v), where, err);
  } else if (v->lit == LM_LIT_STRING &&
             (row->type == T_TEXT || row->type == T_NAME_OR_BOOL)) {
    /* Text is used as written (not NUL-terminated): check its length only. */
    *out = (lm_option_value){.text = v->s, .len = v->slen};
    bool ok = (int64_t)v->slen >= (row->min > 0 ? row->min : 0) &&
              (row->max == 0 || (int64_t)v->slen <= row->max) &&
              memchr(v->s, '\0', v->slen) == NULL;
    if (!ok) {
      char got[64];
      snprintf(got, sizeof got, v->slen == 0 ? "''" : "a string of %zu bytes", v->slen);
      rc = bad_value(scope, row, got, where, err);
    }
  } else if (v->lit == LM_LIT_INTERVAL ||
             (v->lit == LM_LIT_INT && row->type == T_INTERVAL)) {
    *out = (lm_option_value){.i = v->i};
    bool ok = row->type == T_INTERVAL ? v->i >= 0 : v->i >= row->min;
    if (!ok) {
      char got[64];
      snprintf(got, sizeof got, "%" PRId64 " ms", v->i);
      rc = bad_value(scope, row, got, where, err);
    }
  } else {
    char text[160];
    if (v->lit == LM_LIT_STRING) {
      size_t n = v->slen < sizeof text - 1 ? v->slen : sizeof text - 1;
      memcpy(text, v->s, n);
      text[n] = '\0';
    } else if (v->lit == LM_LIT_BOOL) {
      snprintf(text, sizeof text, "%s", v->b ? "true" : "false");
    } else {
      snprintf(text, sizeof text, "%" PRId64, v->i);
    }
    bool ok =
        (v->lit != LM_LIT_STRING || v->slen < sizeof text) && parse_value(row, text, out);
    if (!ok) {
      char got[192];
      snprintf(got, sizeof got, "'%s'", text);
      rc = bad_value(scope, row, got, where, err);
    }
    out->text = NULL; /* `text` is this frame's */
    out->len = 0;
  }
  if (rc != LAMINAR_OK) {
    lm_error_at(err, v->line, v->column);
    lm_error_object(err, object, NULL);
    return rc;
  }
  *out_row = row;
  return LAMINAR_OK;
}

laminar_code lm_option_check_sql(laminar_option_scope scope, const char* object,
                                 const lm_ast_option* options, size_t n,
                                 laminar_error* err) {
  for (size_t i = 0; i < n; i++) {
    const lm_option* row;
    lm_option_value value;
    LM_TRY(lm_option_parse_sql(scope, object, &options[i], &row, &value, err));
  }
  return LAMINAR_OK;
}

/* ---- laminar.h -------------------------------------------------------------------- */

int32_t laminar_option_count(void) { return NROWS; }

laminar_code laminar_option_get(int32_t index, const char** out_key, int32_t* out_scopes,
                                const char** out_type, const char** out_default,
                                const char** out_doc) {
  if (index < 0 || index >= NROWS) return LAMINAR_ERR_MISUSE;
  const lm_option* row = &table[index];
  if (out_key != NULL) *out_key = row->key;
  if (out_scopes != NULL) *out_scopes = row->scopes;
  if (out_type != NULL) *out_type = row->type_text;
  if (out_default != NULL) *out_default = row->def;
  if (out_doc != NULL) *out_doc = row->doc;
  return LAMINAR_OK;
}
