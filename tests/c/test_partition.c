/*
 * test_partition.c -- laminar_stream_partitioning through laminar.h: the root
 * source, its event-time column and delay, and the hash key of windowed
 * streams (plain GROUP BY columns, traced through projections and upstream
 * windows; expressions add nothing), `single` and `any`; errors.
 */
#include "lm_test.h"
#include "views_util.h"

/* Render laminar_stream_partitioning(db, name) as "role,name,value;...". */
static laminar_code partitioning_text(laminar_db* db, const char* name, char* out,
                                      size_t cap, laminar_error* err) {
  out[0] = '\0';
  struct ArrowArrayStream st;
  laminar_code rc = laminar_stream_partitioning(db, name, &st, err);
  if (rc != LAMINAR_OK) return rc;
  result_view rv;
  if (one_batch_view(&st, &rv) != 0) rc = LAMINAR_ERR_INTERNAL;
  for (int64_t r = 0; rc == LAMINAR_OK && r < rv.array.length; r++) {
    if (out[0] != '\0') strncat(out, ";", cap - strlen(out) - 1);
    render_row(&rv.schema, &rv.view, r, out, cap);
  }
  one_batch_free(&st, &rv);
  return rc;
}

#define CHECK_PART(db, name, want)                                                     \
  do {                                                                                 \
    char got_[1024];                                                                   \
    laminar_error perr_;                                                               \
    CHECK_CODE(partitioning_text((db), (name), got_, sizeof got_, &perr_), LAMINAR_OK, \
               &perr_);                                                                \
    if (strcmp(got_, (want)) != 0) {                                                   \
      fprintf(stderr, "%s:%d: %s\n  got  '%s'\n  want '%s'\n", __FILE__, __LINE__,     \
              (name), got_, (want));                                                   \
      return 1;                                                                        \
    }                                                                                  \
  } while (0)

/* An in-memory database with `sql` run in it. */
static int open_with(const char* sql, laminar_db** db) {
  laminar_error err;
  CHECK_CODE(laminar_open(NULL, db, &err), LAMINAR_OK, &err);
  CHECK_CODE(laminar_execute(*db, sql, &err), LAMINAR_OK, &err);
  return 0;
}

static int test_keys_and_event_time(void) {
  laminar_db* db;
  CHECK(
      open_with(
          "CREATE SOURCE trades (symbol VARCHAR, venue VARCHAR, price DOUBLE, "
          "volume BIGINT, ts BIGINT, WATERMARK FOR ts AS ts - INTERVAL '250' "
          "MILLISECOND);"
          "CREATE STREAM vwap AS SELECT symbol, SUM(price * volume) / SUM(volume) AS v "
          "FROM trades GROUP BY symbol, tumble(ts, INTERVAL '1' SECOND);"
          "CREATE STREAM two AS SELECT venue, symbol, window_end, COUNT(*) AS n FROM "
          "trades "
          "GROUP BY venue, symbol, tumble(ts, INTERVAL '1' SECOND);"
          "CREATE STREAM expr AS SELECT upper(symbol) AS s, COUNT(*) AS n FROM trades "
          "GROUP BY upper(symbol), tumble(ts, INTERVAL '1' SECOND);"
          "CREATE STREAM total AS SELECT COUNT(*) AS n FROM trades "
          "GROUP BY tumble(ts, INTERVAL '1' SECOND);"
          "CREATE STREAM big AS SELECT symbol AS sym, venue, price * volume AS notional, "
          "ts FROM trades WHERE volume > 10;"
          "CREATE STREAM over_big AS SELECT sym, SUM(notional) AS n FROM big "
          "GROUP BY sym, tumble(ts, INTERVAL '1' SECOND);"
          "CREATE STREAM over_two AS SELECT venue, SUM(n) AS n FROM two "
          "GROUP BY venue, tumble(window_end, INTERVAL '5' SECOND);",
          &db) == 0);
  CHECK_PART(db, "vwap",
             "source,trades,;event_time,ts,250;key,symbol,;partitioning,key,");
  CHECK_PART(db, "two",
             "source,trades,;event_time,ts,250;key,symbol,;key,venue,;partitioning,key,");
  CHECK_PART(db, "expr", "source,trades,;event_time,ts,250;partitioning,single,");
  CHECK_PART(db, "total", "source,trades,;event_time,ts,250;partitioning,single,");
  CHECK_PART(db, "big", "source,trades,;event_time,ts,250;partitioning,any,");
  /* through a projection that renames symbol */
  CHECK_PART(db, "over_big",
             "source,trades,;event_time,ts,250;key,symbol,;partitioning,key,");
  /* through an upstream window: the keys both group by */
  CHECK_PART(db, "over_two",
             "source,trades,;event_time,ts,250;key,venue,;partitioning,key,");
  laminar_close(db);
  return 0;
}

static int test_no_watermark_and_errors(void) {
  laminar_db* db;
  laminar_error err;
  CHECK_CODE(laminar_open(NULL, &db, &err), LAMINAR_OK, &err);
  CHECK_CODE(laminar_execute(db,
                             "CREATE SOURCE t (k VARCHAR, v BIGINT, ts BIGINT);"
                             "CREATE STREAM s AS SELECT k, v FROM t WHERE v > 1;",
                             &err),
             LAMINAR_OK, &err);
  CHECK_PART(db, "s", "source,t,;partitioning,any,");
  struct ArrowArrayStream st;
  CHECK_CODE(laminar_stream_partitioning(db, "nope", &st, &err),
             LAMINAR_ERR_SQL_UNKNOWN_OBJECT, &err);
  EXPECT(strcmp(err.object, "nope") == 0 && strncmp(err.message, "LDB-1002", 8) == 0);
  CHECK_CODE(laminar_stream_partitioning(db, "t", &st, &err),
             LAMINAR_ERR_SQL_UNKNOWN_OBJECT, &err);
  CHECK_CODE(laminar_stream_partitioning(db, NULL, &st, &err), LAMINAR_ERR_MISUSE, &err);
  CHECK_CODE(laminar_stream_partitioning(NULL, "s", &st, &err), LAMINAR_ERR_MISUSE, &err);
  laminar_close(db);
  return 0;
}

/* A union of sources at the root: one group of rows per input, the i-th key
 * of each at the same union column; a key one input computes or casts is
 * none; a union reading a stream is refused. */
static int test_union(void) {
  laminar_db* db;
  laminar_error err;
  CHECK(open_with(
            "CREATE SOURCE a (sym VARCHAR, venue VARCHAR, v BIGINT, ts BIGINT,\n"
            "  WATERMARK FOR ts AS ts - INTERVAL '100' MILLISECOND);\n"
            "CREATE SOURCE b (ts BIGINT, place VARCHAR, s VARCHAR, n INT,\n"
            "  WATERMARK FOR ts);\n"
            "CREATE STREAM w AS SELECT k, venue, COUNT(*) AS c FROM (SELECT sym AS k,\n"
            "  venue, v, ts FROM a UNION ALL SELECT s, place, n, ts FROM b)\n"
            "  GROUP BY k, venue, tumble(ts, INTERVAL '1' SECOND);\n"
            "CREATE STREAM lower_k AS SELECT k, COUNT(*) AS c FROM (SELECT sym AS k, ts\n"
            "  FROM a UNION ALL SELECT lower(s), ts FROM b) GROUP BY k,\n"
            "  tumble(ts, INTERVAL '1' SECOND);\n"
            "CREATE STREAM u AS SELECT sym, ts FROM a UNION ALL SELECT s, ts FROM b;\n"
            "CREATE STREAM over_u AS SELECT sym, COUNT(*) AS c FROM u\n"
            "  GROUP BY sym, tumble(ts, INTERVAL '1' SECOND);\n"
            "CREATE STREAM bad AS SELECT sym, ts FROM u UNION ALL SELECT s, ts FROM b;",
            &db) == 0);
  CHECK_PART(db, "w",
             "source,a,;event_time,ts,100;key,sym,;key,venue,;"
             "source,b,;event_time,ts,0;key,s,;key,place,;partitioning,key,");
  CHECK_PART(db, "lower_k",
             "source,a,;event_time,ts,100;source,b,;event_time,ts,0;"
             "partitioning,single,");
  CHECK_PART(db, "u",
             "source,a,;event_time,ts,100;source,b,;event_time,ts,0;"
             "partitioning,any,");
  CHECK_PART(db, "over_u",
             "source,a,;event_time,ts,100;key,sym,;source,b,;event_time,ts,0;key,s,;"
             "partitioning,key,");
  struct ArrowArrayStream st;
  CHECK_CODE(laminar_stream_partitioning(db, "bad", &st, &err),
             LAMINAR_ERR_SQL_UNSUPPORTED, &err);
  EXPECT(strstr(err.message, "UNION ALL") != NULL);
  laminar_close(db);
  return 0;
}

static const lm_test_case cases[] = {
    {"keys_and_event_time", test_keys_and_event_time},
    {"no_watermark_and_errors", test_no_watermark_and_errors},
    {"union", test_union},
    {NULL, NULL}};

int main(int argc, char** argv) { return lm_test_main(argc, argv, cases); }
