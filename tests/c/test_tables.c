/*
 * test_tables.c -- tables through laminar.h: CREATE TABLE with a primary key,
 * INSERT (upsert), DELETE by key, SELECT, a view and a stream over a table's
 * changelog, laminar_table_upsert / laminar_table_delete, DROP TABLE, a table
 * fed by its query (CREATE TABLE ... AS), and the errors of each with their
 * codes and positions.
 */
#include "lm_test.h"
#include "views_util.h"

#include "nanoarrow/nanoarrow.h"

/* Render every batch the subscription has now, rows joined by ';'. */
static int drain_text(laminar_subscription* sub, char* out, size_t cap) {
  laminar_error err;
  for (;;) {
    result_view rv;
    memset(&rv, 0, sizeof rv);
    laminar_code rc = laminar_subscription_next(sub, 0, &rv.array, &rv.schema, &err);
    if (rc != LAMINAR_OK || rv.array.release == NULL) {
      if (rv.schema.release != NULL) rv.schema.release(&rv.schema);
      return 0; /* nothing more now */
    }
    if (result_view_init(&rv) != 0) return 1;
    for (int64_t r = 0; r < rv.array.length; r++) {
      if (out[0] != '\0') strncat(out, ";", cap - strlen(out) - 1);
      render_row(&rv.schema, &rv.view, r, out, cap);
    }
    ArrowArrayViewReset(&rv.view);
    rv.array.release(&rv.array);
    rv.schema.release(&rv.schema);
  }
}

static int test_sql_upsert_and_delete(void) {
  laminar_db* db;
  laminar_error err;
  CHECK(open_sql_db(
            &db,
            "CREATE TABLE t (k BIGINT, tag VARCHAR, v DOUBLE, PRIMARY KEY (k, tag));"
            "CREATE MATERIALIZED VIEW per_tag AS SELECT tag, COUNT(*) AS n, "
            "SUM(v) AS s FROM t GROUP BY tag EMIT CHANGES") == 0);
  CHECK_CODE(laminar_execute(db,
                             "INSERT INTO t VALUES (1, 'a', 1.5), (2, 'a', 2), "
                             "(1, 'b', NULL);"
                             "INSERT INTO t VALUES (1, 'a', 4.5);"  // replaces (1, 'a')
                             "DELETE FROM t WHERE tag = 'b' AND k = 1;"
                             "DELETE FROM t WHERE k = 7 AND tag = 'a'",  // no such row
                             &err),
             LAMINAR_OK, &err);
  CHECK_CODE(laminar_run_until_idle(db, &err), LAMINAR_OK, &err);
  CHECK_TEXT(db, "SELECT k, tag, v FROM t ORDER BY k, tag", "1,a,4.5;2,a,2");
  CHECK_TEXT(db, "SELECT tag, n, s FROM per_tag ORDER BY tag", "a,2,6.5");
  CHECK_TEXT(db, "SHOW TABLES",
             "t,k BIGINT NOT NULL, tag VARCHAR NOT NULL, v DOUBLE,k, tag");
  CHECK_TEXT(db, "DESCRIBE t", "k,BIGINT,NO;tag,VARCHAR,NO;v,DOUBLE,YES");
  /* The table's parts are no sources or views of their own. */
  CHECK_TEXT(db, "SHOW SOURCES", "");
  EXPECT(fails_at(db, false, "DROP TABLE t", LAMINAR_ERR_SQL_DEPENDENCY, 1, 12));
  EXPECT(fails_at(db, false, "DROP MATERIALIZED VIEW t", LAMINAR_ERR_SQL_UNKNOWN_OBJECT,
                  1, 24));
  CHECK_CODE(laminar_execute(db, "DROP MATERIALIZED VIEW per_tag; DROP TABLE t", &err),
             LAMINAR_OK, &err);
  CHECK_TEXT(db, "SHOW TABLES", "");
  CHECK_TEXT(db, "SHOW VIEWS", "");
  laminar_close(db);
  return 0;
}

/* A struct batch of (k BIGINT, v VARCHAR) rows; v NULL where vs[i] is NULL.
 * With only_keys the batch has the k column alone. */
static int build_kv(const int64_t* ks, const char* const* vs, int64_t n, bool only_keys,
                    struct ArrowArray* array, struct ArrowSchema* schema) {
  int ncols = only_keys ? 1 : 2;
  ArrowSchemaInit(schema);
  if (ArrowSchemaSetTypeStruct(schema, ncols) != NANOARROW_OK) return 1;
  if (ArrowSchemaSetType(schema->children[0], NANOARROW_TYPE_INT64) != NANOARROW_OK ||
      ArrowSchemaSetName(schema->children[0], "k") != NANOARROW_OK)
    return 1;
  if (!only_keys &&
      (ArrowSchemaSetType(schema->children[1], NANOARROW_TYPE_STRING) != NANOARROW_OK ||
       ArrowSchemaSetName(schema->children[1], "v") != NANOARROW_OK))
    return 1;
  struct ArrowError error;
  if (ArrowArrayInitFromSchema(array, schema, &error) != NANOARROW_OK) return 1;
  if (ArrowArrayStartAppending(array) != NANOARROW_OK) return 1;
  for (int64_t r = 0; r < n; r++) {
    if (ArrowArrayAppendInt(array->children[0], ks[r]) != NANOARROW_OK) return 1;
    if (!only_keys) {
      int rc = vs[r] == NULL
                   ? ArrowArrayAppendNull(array->children[1], 1)
                   : ArrowArrayAppendString(array->children[1], ArrowCharView(vs[r]));
      if (rc != NANOARROW_OK) return 1;
    }
    if (ArrowArrayFinishElement(array) != NANOARROW_OK) return 1;
  }
  return ArrowArrayFinishBuildingDefault(array, &error) == NANOARROW_OK ? 0 : 1;
}

static int test_c_api(void) {
  laminar_db* db;
  laminar_error err;
  CHECK(open_sql_db(&db, "CREATE TABLE t (k BIGINT PRIMARY KEY, v VARCHAR)") == 0);
  laminar_subscription* sub;
  CHECK_CODE(laminar_execute(db, "CREATE STREAM ch AS SELECT k, v FROM t", &err),
             LAMINAR_OK, &err);
  CHECK_CODE(laminar_subscribe(db, "ch", &sub, &err), LAMINAR_OK, &err);
  struct ArrowArray array;
  struct ArrowSchema schema;
  const int64_t ks[] = {1, 2, 1};
  const char* vs[] = {"x", NULL, "y"};
  CHECK(build_kv(ks, vs, 3, false, &array, &schema) == 0);
  CHECK_CODE(laminar_table_upsert(db, "t", &array, &schema, &err), LAMINAR_OK, &err);
  EXPECT(array.release == NULL); /* consumed */
  schema.release(&schema);
  const int64_t del[] = {2, 5};
  CHECK(build_kv(del, NULL, 2, true, &array, &schema) == 0);
  CHECK_CODE(laminar_table_delete(db, "t", &array, &schema, &err), LAMINAR_OK, &err);
  schema.release(&schema);
  /* Keys that are not the whole key, rows without a key: refused, the array
   * still the caller's. */
  CHECK(build_kv(ks, vs, 1, false, &array, &schema) == 0);
  EXPECT(laminar_table_delete(db, "t", &array, &schema, &err) ==
         LAMINAR_ERR_SCHEMA_MISMATCH);
  EXPECT(array.release != NULL);
  EXPECT(laminar_table_upsert(db, "nope", &array, &schema, &err) ==
         LAMINAR_ERR_SQL_UNKNOWN_OBJECT);
  array.release(&array);
  schema.release(&schema);
  CHECK_CODE(laminar_run_until_idle(db, &err), LAMINAR_OK, &err);
  CHECK_TEXT(db, "SELECT k, v FROM t ORDER BY k", "1,y");
  /* The stream reads the table's changelog: (1,x)+, (2,NULL)+, (1,x)-, (1,y)+,
   * (2,NULL)-. */
  char got[1024] = "";
  CHECK(drain_text(sub, got, sizeof got) == 0);
  EXPECT(strcmp(got, "1,x,1;2,NULL,1;1,x,-1;1,y,1;2,NULL,-1") == 0);
  if (strcmp(got, "1,x,1;2,NULL,1;1,x,-1;1,y,1;2,NULL,-1") != 0)
    fprintf(stderr, "changelog: %s\n", got);
  /* An open producer handle owns the table's writes. */
  laminar_source* src;
  CHECK_CODE(laminar_source_open(db, "t", &src, &err), LAMINAR_OK, &err);
  EXPECT(laminar_execute(db, "INSERT INTO t VALUES (3, 'z')", &err) == LAMINAR_ERR_STATE);
  laminar_source_close(src);
  CHECK_CODE(laminar_execute(db, "INSERT INTO t VALUES (3, 'z')", &err), LAMINAR_OK,
             &err);
  laminar_subscription_close(sub);
  laminar_close(db);
  return 0;
}

/* CREATE TABLE ... AS: the query's rows upsert the table; every write
 * through the API is refused (LDB-9003) and leaves the array the caller's. */
static int test_query_fed(void) {
  laminar_db* db;
  laminar_error err;
  CHECK(open_sql_db(&db,
                    "CREATE SOURCE s (k BIGINT, v VARCHAR);"
                    "CREATE TABLE f PRIMARY KEY (k) AS SELECT k, v FROM s") == 0);
  laminar_source* src;
  CHECK_CODE(laminar_source_open(db, "s", &src, &err), LAMINAR_OK, &err);
  struct ArrowArray array;
  struct ArrowSchema schema;
  const int64_t ks[] = {1, 2, 1};
  const char* vs[] = {"x", NULL, "y"};
  CHECK(build_kv(ks, vs, 3, false, &array, &schema) == 0);
  CHECK_CODE(laminar_source_push(src, &array, &schema, &err), LAMINAR_OK, &err);
  schema.release(&schema); /* borrowed by the push */
  CHECK_CODE(laminar_run_until_idle(db, &err), LAMINAR_OK, &err);
  CHECK_TEXT(db, "SELECT k, v FROM f ORDER BY k", "1,y;2,NULL");
  CHECK_TEXT(db, "SHOW TABLES", "f,k BIGINT NOT NULL, v VARCHAR,k");
  CHECK(build_kv(ks, vs, 1, false, &array, &schema) == 0);
  EXPECT(laminar_table_upsert(db, "f", &array, &schema, &err) == LAMINAR_ERR_STATE);
  EXPECT(array.release != NULL);
  array.release(&array);
  schema.release(&schema);
  CHECK(build_kv(ks, NULL, 1, true, &array, &schema) == 0);
  EXPECT(laminar_table_delete(db, "f", &array, &schema, &err) == LAMINAR_ERR_STATE);
  EXPECT(array.release != NULL);
  array.release(&array);
  schema.release(&schema);
  laminar_source* fed;
  EXPECT(laminar_source_open(db, "f", &fed, &err) == LAMINAR_ERR_STATE);
  EXPECT(fed == NULL);
  EXPECT(fails_at(db, false, "INSERT INTO f VALUES (3, 'z')", LAMINAR_ERR_STATE, 1, 13));
  CHECK_TEXT(db, "SELECT k, v FROM f ORDER BY k", "1,y;2,NULL");
  laminar_source_close(src);
  CHECK_CODE(laminar_execute(db, "DROP TABLE f; DROP SOURCE s", &err), LAMINAR_OK, &err);
  /* Over a changelog (a table's): keyed by v, which several rows share. A
   * retraction deletes v's row only while it is the row held; a NULL key is
   * not applied, and counted. */
  CHECK_CODE(
      laminar_execute(db,
                      "CREATE TABLE t (k BIGINT PRIMARY KEY, v VARCHAR);"
                      "CREATE TABLE by_v PRIMARY KEY (v) AS SELECT v, k FROM t;"
                      "INSERT INTO t VALUES (1, 'x'), (2, 'x'), (3, 'y'), (4, NULL)",
                      &err),
      LAMINAR_OK, &err);
  CHECK_CODE(laminar_run_until_idle(db, &err), LAMINAR_OK, &err);
  CHECK_TEXT(db, "SELECT v, k FROM by_v ORDER BY v", "x,2;y,3");
  EXPECT(stream_metric(db, "by_v", "retract_errors") == 1);
  CHECK_CODE(
      laminar_execute(db, "DELETE FROM t WHERE k = 1; DELETE FROM t WHERE k = 3", &err),
      LAMINAR_OK, &err);
  CHECK_CODE(laminar_run_until_idle(db, &err), LAMINAR_OK, &err);
  CHECK_TEXT(db, "SELECT v, k FROM by_v ORDER BY v", "x,2"); /* (x,1) was not held */
  CHECK_CODE(laminar_execute(db, "DELETE FROM t WHERE k = 2", &err), LAMINAR_OK, &err);
  CHECK_CODE(laminar_run_until_idle(db, &err), LAMINAR_OK, &err);
  CHECK_TEXT(db, "SELECT v, k FROM by_v ORDER BY v", "");
  laminar_close(db);
  return 0;
}

static int test_errors(void) {
  laminar_db* db;
  CHECK(open_sql_db(
            &db,
            "CREATE TABLE t (k BIGINT, j INT, v DOUBLE NOT NULL, PRIMARY KEY (k, j));"
            "CREATE SOURCE s (k BIGINT)") == 0);
  /* DELETE that does not fix the whole key: LDB-1020 where it goes wrong. */
  EXPECT(fails_at(db, false, "DELETE FROM t", LAMINAR_ERR_SQL_TABLE_KEY, 1, 1));
  EXPECT(
      fails_at(db, false, "DELETE FROM t WHERE k = 1", LAMINAR_ERR_SQL_TABLE_KEY, 1, 21));
  EXPECT(fails_at(db, false, "DELETE FROM t\n WHERE k = 1 AND v = 2",
                  LAMINAR_ERR_SQL_TABLE_KEY, 2, 18));
  EXPECT(fails_at(db, false, "DELETE FROM t WHERE k = 1 AND j > 2",
                  LAMINAR_ERR_SQL_TABLE_KEY, 1, 31));
  EXPECT(fails_at(db, false, "DELETE FROM t WHERE k = 1 AND k = 2",
                  LAMINAR_ERR_SQL_TABLE_KEY, 1, 31));
  EXPECT(fails_at(db, false, "DELETE FROM t WHERE k = 1 OR j = 2",
                  LAMINAR_ERR_SQL_TABLE_KEY, 1, 21));
  EXPECT(fails_at(db, false, "DELETE FROM t WHERE nope = 1 AND j = 2",
                  LAMINAR_ERR_SQL_UNKNOWN_COLUMN, 1, 21));
  /* Type mismatch and NULL in a key or NOT NULL column. */
  EXPECT(fails_at(db, false, "INSERT INTO t VALUES (1, 'x', 2.0)",
                  LAMINAR_ERR_TYPE_MISMATCH, 1, 26));
  EXPECT(fails_at(db, false, "INSERT INTO t VALUES (1, 2, 3.0),\n (1, 2, NULL)",
                  LAMINAR_ERR_NULL_VIOLATION, 2, 9));
  EXPECT(fails_at(db, false, "DELETE FROM t WHERE k = 'a' AND j = 1",
                  LAMINAR_ERR_TYPE_MISMATCH, 1, 25));
  EXPECT(fails_at(db, false, "INSERT INTO t VALUES (1, 2)", LAMINAR_ERR_SCHEMA_MISMATCH,
                  1, 23));
  EXPECT(fails_at(db, false, "INSERT INTO t VALUES (1, 2, 3), (4)",
                  LAMINAR_ERR_SQL_SYNTAX, 1, 34));
  /* Writes go to tables only. */
  EXPECT(fails_at(db, false, "INSERT INTO s VALUES (1)", LAMINAR_ERR_SQL_UNKNOWN_OBJECT,
                  1, 13));
  EXPECT(fails_at(db, false, "DELETE FROM nope WHERE k = 1",
                  LAMINAR_ERR_SQL_UNKNOWN_OBJECT, 1, 13));
  /* CREATE TABLE: the key names a column; _weight is reserved; one key. */
  EXPECT(fails_at(db, false, "CREATE TABLE u (a BIGINT, PRIMARY KEY (b))",
                  LAMINAR_ERR_SQL_UNKNOWN_COLUMN, 1, 40));
  EXPECT(fails_at(db, false, "CREATE TABLE u (a BIGINT, _weight BIGINT, PRIMARY KEY (a))",
                  LAMINAR_ERR_SCHEMA_INVALID, 1, 27));
  EXPECT(fails_at(db, false, "CREATE TABLE u (a BIGINT)", LAMINAR_ERR_SQL_SYNTAX, 1, 16));
  EXPECT(fails_at(db, false, "CREATE TABLE u (a BIGINT PRIMARY KEY, PRIMARY KEY (a))",
                  LAMINAR_ERR_SQL_SYNTAX, 1, 39));
  EXPECT(fails_at(db, false, "CREATE TABLE t (a BIGINT PRIMARY KEY)",
                  LAMINAR_ERR_SQL_DUPLICATE_OBJECT, 1, 14));
  laminar_close(db);
  return 0;
}

/* Lookup joins: each stream row meets the table as it is when the row is
 * processed; INNER drops rows without a match, LEFT pads them; a NULL key
 * matches nothing; a composite key takes every column. */
static int test_lookup_join(void) {
  laminar_db* db;
  laminar_error err;
  CHECK(open_sql_db(&db,
                    "CREATE TABLE px (sym VARCHAR, venue BIGINT, px DOUBLE,"
                    "  PRIMARY KEY (sym, venue));"
                    "CREATE SOURCE s (k VARCHAR, v BIGINT);"
                    "CREATE STREAM inner_j AS SELECT k, v, px FROM s JOIN px p"
                    "  ON p.venue = s.v AND s.k = p.sym;"
                    "CREATE STREAM left_j AS SELECT k, v, p.sym FROM s"
                    "  LEFT OUTER JOIN px p ON s.k = p.sym AND s.v = p.venue;"
                    "CREATE MATERIALIZED VIEW seen AS SELECT k, v, px FROM inner_j") ==
        0);
  laminar_subscription* left;
  CHECK_CODE(laminar_subscribe(db, "left_j", &left, &err), LAMINAR_OK, &err);
  laminar_source* src;
  CHECK_CODE(laminar_source_open(db, "s", &src, &err), LAMINAR_OK, &err);
  CHECK_CODE(
      laminar_execute(db, "INSERT INTO px VALUES ('a', 1, 10), ('a', 2, 20)", &err),
      LAMINAR_OK, &err);
  CHECK_CODE(laminar_run_until_idle(db, &err), LAMINAR_OK, &err);
  kv_row rows1[] = {{"a", 1, 0, 1}, {"a", 3, 0, 1}, {NULL, 1, 0, 1}};
  CHECK(push_kv(src, rows1, 3, 0, &err) == 0);
  CHECK_CODE(laminar_run_until_idle(db, &err), LAMINAR_OK, &err);
  /* The table changes: later rows see the new price, earlier output stays. */
  CHECK_CODE(laminar_execute(db,
                             "INSERT INTO px VALUES ('a', 1, 11), ('a', 3, 30);"
                             "DELETE FROM px WHERE sym = 'a' AND venue = 2",
                             &err),
             LAMINAR_OK, &err);
  CHECK_CODE(laminar_run_until_idle(db, &err), LAMINAR_OK, &err);
  kv_row rows2[] = {{"a", 1, 0, 1}, {"a", 2, 0, 1}, {"a", 3, 0, 1}};
  CHECK(push_kv(src, rows2, 3, 0, &err) == 0);
  CHECK_CODE(laminar_run_until_idle(db, &err), LAMINAR_OK, &err);
  CHECK_TEXT(db, "SELECT k, v, px FROM seen ORDER BY v, px", "a,1,10;a,1,11;a,3,30");
  char got[1024] = "";
  CHECK(drain_text(left, got, sizeof got) == 0);
  const char* want = "a,1,a;a,3,NULL;NULL,1,NULL;a,1,a;a,2,NULL;a,3,a";
  if (strcmp(got, want) != 0) fprintf(stderr, "left join: %s\n  want %s\n", got, want);
  EXPECT(strcmp(got, want) == 0);
  /* A joined table is not dropped from under its stream. */
  EXPECT(fails_at(db, false, "DROP TABLE px", LAMINAR_ERR_SQL_DEPENDENCY, 1, 12));
  laminar_subscription_close(left);
  laminar_source_close(src);
  laminar_close(db);
  return 0;
}

/* A join that fails: its text after "CREATE STREAM e AS SELECT a FROM s\n",
 * the code and the column on line 2. */
typedef struct join_error {
  const char* join;
  laminar_code code;
  int column;
} join_error;

static void join_errors(laminar_db* db, const join_error* cases, size_t n) {
  for (size_t i = 0; i < n; i++) {
    char sql[512];
    snprintf(sql, sizeof sql, "CREATE STREAM e AS SELECT a FROM s\n%s", cases[i].join);
    EXPECT(fails_at(db, false, sql, cases[i].code, 2, cases[i].column));
  }
}

static int test_lookup_errors(void) {
  laminar_db* db;
  CHECK(open_sql_db(&db,
                    "CREATE TABLE t (k BIGINT, j VARCHAR, v DOUBLE, PRIMARY KEY (k, j));"
                    "CREATE SOURCE s (a BIGINT, b VARCHAR, c DOUBLE, ts BIGINT)") == 0);
  static const join_error cases[] = {
      /* ON that does not fix the whole key: LDB-1021 at the ON (a key
       * missing) or at the condition (not `s.x = t.key`). */
      {"JOIN t ON s.a = t.k", LAMINAR_ERR_SQL_LOOKUP_KEY, 11},
      {"JOIN t ON s.a = t.k AND s.c = t.v", LAMINAR_ERR_SQL_LOOKUP_KEY, 25},
      {"JOIN t ON s.a = t.k AND t.j > s.b", LAMINAR_ERR_SQL_LOOKUP_KEY, 25},
      {"JOIN t ON s.a = t.k AND t.j = 'x'", LAMINAR_ERR_SQL_LOOKUP_KEY, 25},
      {"JOIN t ON s.a = t.k AND s.b = t.j AND s.a = t.k", LAMINAR_ERR_SQL_LOOKUP_KEY, 39},
      /* A key of another type. */
      {"JOIN t ON s.b = t.k AND s.b = t.j", LAMINAR_ERR_TYPE_MISMATCH, 11},
      /* A join of two streams is an interval join: without a time bound it is
       * refused. */
      {"JOIN s u ON s.a = u.a", LAMINAR_ERR_SQL_UNBOUNDED_JOIN, 1},
      {"LEFT JOIN nope ON s.a = nope.k", LAMINAR_ERR_SQL_UNKNOWN_OBJECT, 11},
      /* A temporal join of a table without event time: LDB-1009 at AS OF's
       * expression. */
      {"JOIN t FOR SYSTEM_TIME AS OF s.ts ON s.a = t.k AND s.b = t.j",
       LAMINAR_ERR_SQL_JOIN_CONDITION, 30},
  };
  join_errors(db, cases, sizeof cases / sizeof cases[0]);
  laminar_close(db);
  return 0;
}

/* FOR SYSTEM_TIME AS OF: each order joins the version of its key valid at
 * its time (a delete ends a version), emitted once the table's watermark is
 * past it; a DELETE of a table with event time gives its time. */
static int test_temporal_join(void) {
  laminar_db* db;
  laminar_error err;
  CHECK(open_sql_db(&db,
                    "CREATE SOURCE s (k VARCHAR, v BIGINT, WATERMARK FOR v AS v);"
                    "CREATE TABLE r (k VARCHAR, x BIGINT, ts BIGINT, WATERMARK FOR ts AS "
                    "ts, PRIMARY KEY (k));"
                    "CREATE STREAM j AS SELECT s.k, s.v, r.x, r.ts FROM s LEFT JOIN r "
                    "FOR SYSTEM_TIME AS OF s.v ON s.k = r.k") == 0);
  laminar_source* src;
  laminar_subscription* sub;
  CHECK_CODE(laminar_source_open(db, "s", &src, &err), LAMINAR_OK, &err);
  CHECK_CODE(laminar_subscribe(db, "j", &sub, &err), LAMINAR_OK, &err);
  CHECK_CODE(laminar_execute(db, "INSERT INTO r VALUES ('a', 1, 10), ('b', 2, 10)", &err),
             LAMINAR_OK, &err);
  kv_row first[] = {{"a", 5, 0, 0}, {"a", 12, 0, 0}, {"b", 15, 0, 0}};
  CHECK(push_kv(src, first, 3, 0, &err) == 0);
  CHECK_CODE(laminar_run_until_idle(db, &err), LAMINAR_OK, &err);
  char got[1024] = "";
  CHECK(drain_text(sub, got, sizeof got) == 0);
  /* Only 5 is final: the table's watermark (10) is not past 12 and 15. */
  EXPECT_TEXT(got, "a,5,NULL,NULL");
  got[0] = '\0';
  /* A DELETE of a table with event time says when. */
  EXPECT(fails_at(db, false, "DELETE FROM r WHERE k = 'b'", LAMINAR_ERR_SQL_TABLE_KEY, 1,
                  21));
  CHECK_CODE(laminar_execute(db,
                             "DELETE FROM r WHERE k = 'b' AND ts = 14;"
                             "INSERT INTO r VALUES ('a', 3, 20);"
                             "INSERT INTO r VALUES ('c', 0, 100)",
                             &err),
             LAMINAR_OK, &err);
  kv_row second[] = {{"a", 25, 0, 0}, {"b", 30, 0, 0}, {"c", 100, 0, 0}};
  CHECK(push_kv(src, second, 3, 0, &err) == 0);
  CHECK_CODE(laminar_run_until_idle(db, &err), LAMINAR_OK, &err);
  CHECK(drain_text(sub, got, sizeof got) == 0);
  EXPECT_TEXT(got, "a,12,1,10;b,15,NULL,NULL;a,25,3,20;b,30,NULL,NULL");
  /* The table's current content is as a table without event time keeps it. */
  CHECK_TEXT(db, "SELECT k, x, ts FROM r ORDER BY k", "a,3,20;c,0,100");
  /* A joined table is not dropped from under its stream. */
  EXPECT(fails_at(db, false, "DROP TABLE r", LAMINAR_ERR_SQL_DEPENDENCY, 1, 12));
  laminar_subscription_close(sub);
  laminar_source_close(src);
  laminar_close(db);
  return 0;
}

static int test_temporal_errors(void) {
  laminar_db* db;
  CHECK(
      open_sql_db(&db,
                  "CREATE TABLE r (k BIGINT, j VARCHAR, ts BIGINT, WATERMARK FOR ts AS "
                  "ts, PRIMARY KEY (k, j));"
                  "CREATE TABLE rt (k BIGINT, j VARCHAR, ts TIMESTAMP, WATERMARK FOR ts "
                  "AS ts, PRIMARY KEY (k, j));"
                  "CREATE SOURCE s (a BIGINT, b VARCHAR, c DOUBLE, ts BIGINT);"
                  "CREATE SOURCE s2 (a BIGINT)") == 0);
  static const join_error cases[] = {
      /* ON not covering the key: LDB-1021 at the ON (a key column missing) or
       * at the condition that is not `s.x = r.key`. */
      {"JOIN r FOR SYSTEM_TIME AS OF s.ts ON s.a = r.k", LAMINAR_ERR_SQL_LOOKUP_KEY, 38},
      {"JOIN r FOR SYSTEM_TIME AS OF s.ts ON s.a = r.k AND s.b = r.ts",
       LAMINAR_ERR_SQL_LOOKUP_KEY, 52},
      /* AS OF: a time column of the stream, of the table's time type. */
      {"JOIN r FOR SYSTEM_TIME AS OF s.c ON s.a = r.k AND s.b = r.j",
       LAMINAR_ERR_SQL_JOIN_CONDITION, 30},
      {"JOIN r FOR SYSTEM_TIME AS OF r.ts ON s.a = r.k AND s.b = r.j",
       LAMINAR_ERR_SQL_JOIN_CONDITION, 30},
      {"JOIN rt FOR SYSTEM_TIME AS OF s.ts ON s.a = rt.k AND s.b = rt.j",
       LAMINAR_ERR_TYPE_MISMATCH, 31},
      /* Only a table has versions; only INNER and LEFT. */
      {"JOIN s2 FOR SYSTEM_TIME AS OF s.ts ON s.a = s2.a", LAMINAR_ERR_SQL_UNSUPPORTED,
       6},
      {"RIGHT JOIN r FOR SYSTEM_TIME AS OF s.ts ON s.a = r.k AND s.b = r.j",
       LAMINAR_ERR_SQL_UNSUPPORTED, 1},
  };
  join_errors(db, cases, sizeof cases / sizeof cases[0]);
  laminar_close(db);
  return 0;
}

/* A struct batch of (id BIGINT, a BIGINT) stream rows; a NULL where a_null[i]. */
static int build_probe(const int64_t* ids, const int64_t* as, const bool* a_null,
                       int64_t n, struct ArrowArray* array, struct ArrowSchema* schema) {
  ArrowSchemaInit(schema);
  if (ArrowSchemaSetTypeStruct(schema, 2) != NANOARROW_OK) return 1;
  const char* names[2] = {"id", "a"};
  for (int c = 0; c < 2; c++) {
    if (ArrowSchemaSetType(schema->children[c], NANOARROW_TYPE_INT64) != NANOARROW_OK ||
        ArrowSchemaSetName(schema->children[c], names[c]) != NANOARROW_OK)
      return 1;
  }
  struct ArrowError error;
  if (ArrowArrayInitFromSchema(array, schema, &error) != NANOARROW_OK) return 1;
  if (ArrowArrayStartAppending(array) != NANOARROW_OK) return 1;
  for (int64_t r = 0; r < n; r++) {
    if (ArrowArrayAppendInt(array->children[0], ids[r]) != NANOARROW_OK) return 1;
    int rc = a_null[r] ? ArrowArrayAppendNull(array->children[1], 1)
                       : ArrowArrayAppendInt(array->children[1], as[r]);
    if (rc != NANOARROW_OK || ArrowArrayFinishElement(array) != NANOARROW_OK) return 1;
  }
  return ArrowArrayFinishBuildingDefault(array, &error) == NANOARROW_OK ? 0 : 1;
}

/* The key space of test_lookup_probe: dense keys 0 .. 3999, then sparse ones. */
#define PROBE_DENSE 4000
#define PROBE_SPARSE 2000
static int64_t probe_key(int64_t i) {
  return i < PROBE_DENSE ? i : 1000000007LL * (i - PROBE_DENSE + 1);
}

/* A lookup join on a table keyed by one BIGINT, against a model of the table:
 * rounds of upserts (values and NULLs) and deletes, each followed by stream
 * rows whose keys the table has, had, never had, or NULL. The table's keys
 * are dense at first, sparse ones join later, and enough rows are written
 * that the join's view of the table is rebuilt several times (issue 21's
 * probe image: rows written since it was built are read from the table). */
static int test_lookup_probe(void) {
  uint64_t seed = lm_test_seed();
  uint64_t rng = seed * 0x9E3779B97F4A7C15ULL + 1;
  laminar_db* db;
  laminar_error err;
  CHECK(open_sql_db(&db,
                    "CREATE TABLE t (k BIGINT PRIMARY KEY, v VARCHAR);"
                    "CREATE SOURCE s (id BIGINT, a BIGINT);"
                    "CREATE STREAM j AS SELECT s.id, t.k, t.v FROM s LEFT JOIN t"
                    "  ON t.k = s.a") == 0);
  laminar_subscription* sub;
  CHECK_CODE(laminar_subscribe(db, "j", &sub, &err), LAMINAR_OK, &err);
  enum { NKEYS = PROBE_DENSE + PROBE_SPARSE, MAXW = 2500, NPROBE = 300 };
  /* The model: per key index, 0 no row, 1 a NULL value, 2 the value v<k>_<ver>. */
  uint8_t* state = calloc(NKEYS, 1);
  int32_t* ver = calloc(NKEYS, sizeof(int32_t));
  int64_t* ks = malloc(sizeof(int64_t) * MAXW);
  char(*texts)[32] = malloc(32 * (size_t)MAXW);
  const char** vs = malloc(sizeof(char*) * MAXW);
  size_t cap = 64 * (size_t)NPROBE;
  char* got = malloc(cap);
  char* want = malloc(cap);
  CHECK(state != NULL && ver != NULL && ks != NULL && texts != NULL && vs != NULL &&
        got != NULL && want != NULL);
  int64_t next_id = 0;
  int rc = 0;
  for (int round = 0; round < 40 && rc == 0; round++) {
    /* Keys written this round: dense only for the first ten rounds. */
    int64_t span = round < 10 ? PROBE_DENSE : NKEYS;
    int64_t nw = round == 0 ? MAXW : (int64_t)(lm_test_rand(&rng) % 400) + 1;
    bool del = round > 0 && lm_test_rand(&rng) % 3 == 0;
    for (int64_t i = 0; i < nw; i++) {
      int64_t ki = (int64_t)(lm_test_rand(&rng) % (uint64_t)span);
      ks[i] = probe_key(ki);
      if (del) {
        state[ki] = 0;
        continue;
      }
      bool null_v = lm_test_rand(&rng) % 10 == 0;
      ver[ki] = round;
      state[ki] = null_v ? 1 : 2;
      snprintf(texts[i], sizeof texts[i], "v%lld_%d", (long long)ks[i], round);
      vs[i] = null_v ? NULL : texts[i];
    }
    struct ArrowArray array;
    struct ArrowSchema schema;
    CHECK(build_kv(ks, vs, nw, del, &array, &schema) == 0);
    laminar_code code = del ? laminar_table_delete(db, "t", &array, &schema, &err)
                            : laminar_table_upsert(db, "t", &array, &schema, &err);
    schema.release(&schema);
    CHECK_CODE(code, LAMINAR_OK, &err);
    CHECK_CODE(laminar_run_until_idle(db, &err), LAMINAR_OK, &err);
    /* Stream rows: any key of the space, one never written, or NULL. */
    int64_t ids[NPROBE], as[NPROBE];
    bool a_null[NPROBE];
    want[0] = '\0';
    for (int64_t i = 0; i < NPROBE; i++) {
      uint64_t pick = lm_test_rand(&rng) % 20;
      int64_t ki = (int64_t)(lm_test_rand(&rng) % NKEYS);
      ids[i] = ++next_id;
      a_null[i] = pick == 0;
      as[i] = pick == 1 ? -7 - (int64_t)i : probe_key(ki); /* -7..: never a key */
      size_t len = strlen(want);
      if (a_null[i] || pick == 1 || state[ki] == 0) {
        snprintf(want + len, cap - len, "%lld,NULL,NULL;", (long long)ids[i]);
      } else if (state[ki] == 1) {
        snprintf(want + len, cap - len, "%lld,%lld,NULL;", (long long)ids[i],
                 (long long)as[i]);
      } else {
        snprintf(want + len, cap - len, "%lld,%lld,v%lld_%d;", (long long)ids[i],
                 (long long)as[i], (long long)as[i], ver[ki]);
      }
    }
    laminar_source* src;
    CHECK_CODE(laminar_source_open(db, "s", &src, &err), LAMINAR_OK, &err);
    CHECK(build_probe(ids, as, a_null, NPROBE, &array, &schema) == 0);
    code = laminar_source_push(src, &array, &schema, &err);
    schema.release(&schema);
    laminar_source_close(src);
    CHECK_CODE(code, LAMINAR_OK, &err);
    CHECK_CODE(laminar_run_until_idle(db, &err), LAMINAR_OK, &err);
    got[0] = '\0';
    CHECK(take_text(sub, got, cap) == 0);
    if (strcmp(got, want) != 0) {
      fprintf(stderr, "round %d (seed %llu):\n  got  %.400s\n  want %.400s\n", round,
              (unsigned long long)seed, got, want);
      rc = 1;
    }
  }
  EXPECT(rc == 0);
  free(state);
  free(ver);
  free(ks);
  free(texts);
  free(vs);
  free(got);
  free(want);
  laminar_subscription_close(sub);
  laminar_close(db);
  return 0;
}

static const lm_test_case cases[] = {
    {"temporal_join", test_temporal_join},
    {"temporal_errors", test_temporal_errors},
    {"lookup_join", test_lookup_join},
    {"lookup_probe", test_lookup_probe},
    {"lookup_errors", test_lookup_errors},
    {"sql_upsert_and_delete", test_sql_upsert_and_delete},
    {"c_api", test_c_api},
    {"query_fed", test_query_fed},
    {"errors", test_errors},
    {NULL, NULL}};

int main(int argc, char** argv) { return lm_test_main(argc, argv, cases); }
