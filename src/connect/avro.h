/*
 * avro.h -- Avro binary records (no container, no registry) through Avro C,
 * for the Kafka connectors' format = 'avro' (docs/KAFKA.md): a codec for a
 * record of chosen columns, its schema made from the columns or given as the
 * writer's schema JSON. The source decodes each message with it, the sink
 * encodes each row.
 *
 * Columns and Avro types: BIGINT long, INT/SMALLINT/TINYINT int, DOUBLE
 * double, BOOLEAN boolean, VARCHAR string, TIMESTAMP long (timestamp-micros),
 * DATE int (date); a schema made from columns makes each the union ["null",
 * T], NOT NULL or not (a source's and a sink's over the same columns then
 * agree; the source refuses a NULL in a NOT NULL column). Decoding also
 * takes float (as DOUBLE) and bytes that are UTF-8 (as VARCHAR); a column the
 * writer's schema lacks is NULL.
 *
 * A codec is used by one thread at a time (its buffers are reused).
 */
#ifndef LM_CONNECT_AVRO_H
#define LM_CONNECT_AVRO_H

#include "util/types.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct lm_avro lm_avro;

typedef enum lm_avro_kind {
  LM_AVRO_NULL = 0,
  LM_AVRO_INT = 1,    /* i (d too) */
  LM_AVRO_DOUBLE = 2, /* d */
  LM_AVRO_STR = 3,    /* s[0..len) */
  LM_AVRO_BOOL = 4    /* i: 0 or 1 */
} lm_avro_kind;

typedef struct lm_avro_cell {
  lm_avro_kind kind;
  int64_t i;
  double d;
  const char* s;
  size_t len;
} lm_avro_cell;

/* Whether this build has Avro C. */
bool lm_avro_available(void);

/* A codec for records of the columns idx[0..n) of `schema`, with the writer's
 * schema `json` (a record; NULL: one named `name` made from those columns).
 * NULL, with the reason in why[cap], when Avro C refuses the schema, a column
 * has a type Avro does not carry here (DECIMAL), the given schema is no
 * record, out of memory, or the build has no Avro C. */
lm_avro* lm_avro_new(const char* name, const lm_schema* schema, const int32_t* idx,
                     int32_t n, const char* json, char* why, size_t cap);

/* Free the codec. NULL is a no-op. */
void lm_avro_free(lm_avro* a);

/* Decode the record p[0..len) into out[0..n) (one cell per column, in idx
 * order; a string points into the codec, valid until its next call). False
 * with *why when it does not decode, has bytes after the record, or holds a
 * value of no column type (a nested record, array, map). */
bool lm_avro_decode(lm_avro* a, const void* p, size_t len, lm_avro_cell* out,
                    const char** why);

/* Encode cells[0..n) (in idx order) as one record: *out[0..*len) owned by the
 * codec until its next call. False with *why (NULL in a column the schema
 * does not let be null, out of memory). */
bool lm_avro_encode(lm_avro* a, const lm_avro_cell* cells, const char** out, size_t* len,
                    const char** why);

#endif /* LM_CONNECT_AVRO_H */
