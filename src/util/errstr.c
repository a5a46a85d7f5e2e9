/*
 * errstr.c -- laminar_errstr: the static text of each LDB code.
 *
 * In util/ (the bottom of the include order, docs/ARCHITECTURE.md §1) so
 * that every module may name a code in a message without calling up into
 * db/. The codes themselves are declared once, in laminar.h.
 */
#include "util/util.h"

const char* laminar_errstr(laminar_code code) {
  switch (code) {
    case LAMINAR_OK: return "not an error";
    case LAMINAR_ERR_SQL_SYNTAX: return "SQL syntax error";
    case LAMINAR_ERR_SQL_UNKNOWN_OBJECT: return "unknown source or stream";
    case LAMINAR_ERR_SQL_UNKNOWN_COLUMN: return "unknown column";
    case LAMINAR_ERR_SQL_DUPLICATE_OBJECT: return "object already exists";
    case LAMINAR_ERR_SQL_UNSUPPORTED: return "SQL not supported";
    case LAMINAR_ERR_SQL_GROUPING: return "invalid grouping or aggregate use";
    case LAMINAR_ERR_SQL_DEPENDENCY: return "object is in use";
    case LAMINAR_ERR_SQL_LIMIT: return "SQL statement too large or too deep";
    case LAMINAR_ERR_SQL_JOIN_CONDITION: return "join condition not supported";
    case LAMINAR_ERR_SQL_UNBOUNDED_JOIN: return "join without a time bound";
    case LAMINAR_ERR_SQL_TABLE_KEY: return "the statement does not fix the primary key";
    case LAMINAR_ERR_SQL_LOOKUP_KEY: return "the join does not fix the table's key";
    case LAMINAR_ERR_SQL_NOT_MATERIALIZED: return "not a materialized view";
    case LAMINAR_ERR_SQL_UNDEFINED_VARIABLE: return "undefined variable";
    case LAMINAR_ERR_SQL_UNKNOWN_FUNCTION: return "unknown function";
    case LAMINAR_ERR_SQL_FUNCTION_ARGS: return "invalid function arguments";
    case LAMINAR_ERR_TYPE_MISMATCH: return "type mismatch";
    case LAMINAR_ERR_UNKNOWN_TYPE: return "unknown type";
    case LAMINAR_ERR_SCHEMA_INVALID: return "invalid schema";
    case LAMINAR_ERR_ARROW_INVALID: return "invalid Arrow array";
    case LAMINAR_ERR_ARROW_RELEASED: return "Arrow structure already released";
    case LAMINAR_ERR_SCHEMA_MISMATCH: return "batch columns do not match the source";
    case LAMINAR_ERR_COLUMN_TYPE: return "column has the wrong type";
    case LAMINAR_ERR_NULL_VIOLATION: return "NULL in a NOT NULL column";
    case LAMINAR_ERR_QUEUE_FULL: return "source queue full";
    case LAMINAR_ERR_SOURCE_CLOSED: return "source closed";
    case LAMINAR_ERR_MEMORY_LIMIT: return "memory limit (max_state_bytes) reached";
    case LAMINAR_ERR_PUSH_TIMEOUT:
      return "no room in the source queue within the timeout";
    case LAMINAR_ERR_FUNCTION_FAILED: return "a user-defined function failed";
    case LAMINAR_ERR_FUNCTION_RESULT:
      return "a user-defined function returned an invalid result";
    case LAMINAR_ERR_SUBSCRIPTION_CLOSED: return "subscription closed";
    case LAMINAR_ERR_IO: return "I/O error";
    case LAMINAR_ERR_RECOVERY: return "stored state does not recover";
    case LAMINAR_ERR_LOCKED: return "the data directory is in use by another database";
    case LAMINAR_ERR_READ_ONLY: return "the database is open read-only";
    case LAMINAR_ERR_CONNECTOR: return "a connector's external system failed";
    case LAMINAR_ERR_CONFIG_KEY: return "unknown configuration key";
    case LAMINAR_ERR_CONFIG_VALUE: return "invalid configuration value";
    case LAMINAR_ERR_CONFIG_CONFLICT: return "conflicting configuration";
    case LAMINAR_ERR_NOMEM: return "out of memory";
    case LAMINAR_ERR_MISUSE: return "API misuse";
    case LAMINAR_ERR_STATE: return "not allowed in the current state";
    case LAMINAR_ERR_INTERNAL: return "internal error";
  }
  return "unknown error code";
}
